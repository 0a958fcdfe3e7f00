// SPDX-License-Identifier: GPL-2.0

//! `vgsp-gh100-firmware DIR`: writes the GH100 firmware files nova-core requests, made by
//! [`vgsp_gh100::firmware`], under DIR (creating directories), and prints the path of each
//! relative to DIR on its own line, in request order.
//!
//! Exits 0 on success, 1 on an I/O error (with the path and the reason on standard error), 2 on
//! a usage error.

use std::{
    io::{
        self,
        Write, //
    },
    path::PathBuf,
    process::ExitCode, //
};

use vgsp_gh100::firmware;

/// The usage line.
const USAGE: &str = "usage: vgsp-gh100-firmware DIR";

/// Writes `vgsp-gh100-firmware: MSG` to standard error.
fn error(msg: impl std::fmt::Display) {
    let _ = writeln!(io::stderr().lock(), "vgsp-gh100-firmware: {msg}");
}

fn main() -> ExitCode {
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    let dir = match args.as_slice() {
        [arg] if arg == "-h" || arg == "--help" => {
            let _ = writeln!(io::stdout().lock(), "{USAGE}");
            return ExitCode::SUCCESS;
        }
        [dir] if !dir.is_empty() => PathBuf::from(dir),
        _ => {
            error(USAGE);
            return ExitCode::from(2);
        }
    };

    let paths = match firmware::write_all(&dir) {
        Ok(paths) => paths,
        Err(err) => {
            error(format_args!("cannot write the firmware files: {err}"));
            return ExitCode::FAILURE;
        }
    };

    let mut stdout = io::stdout().lock();
    let printed = paths
        .iter()
        .try_for_each(|path| writeln!(stdout, "{path}"))
        .and_then(|()| stdout.flush());
    if let Err(err) = printed {
        error(format_args!("cannot write to standard output: {err}"));
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
