// SPDX-License-Identifier: GPL-2.0

//! `ivshmem-server`: the server QEMU's `ivshmem-doorbell` device connects to.
//!
//! Mirrors QEMU's `contrib/ivshmem-server` (see [`vgsp_ivshmem::server::USAGE`]), always
//! in the foreground. Prints one line to standard output once it listens; errors and,
//! with `-v`, peers joining and leaving go to standard error. Stops on SIGTERM, SIGINT
//! or SIGHUP, removing its socket and shared-memory files, and exits 0; exits 1 on an
//! error (2 on a usage error) after removing what it created.

use std::{
    io::{
        self,
        Write, //
    },
    os::fd::AsFd,
    process::ExitCode, //
};

use vgsp_ivshmem::server::{
    self,
    Command,
    Server,
    SignalFd, //
};

/// Writes `ivshmem-server: MSG` to standard error.
fn error(msg: impl std::fmt::Display) {
    let _ = writeln!(io::stderr().lock(), "ivshmem-server: {msg}");
}

fn main() -> ExitCode {
    let config = match server::parse_args(std::env::args_os().skip(1)) {
        Ok(Command::Run(config)) => config,
        Ok(Command::Help) => {
            let _ = io::stdout().lock().write_all(server::USAGE.as_bytes());
            return ExitCode::SUCCESS;
        }
        Err(msg) => {
            error(format_args!("{msg} (see ivshmem-server -h)"));
            return ExitCode::from(2);
        }
    };
    let verbose = config.verbose;

    // Before anything is created: a signal from now on only makes the loop stop.
    let signals = match SignalFd::new(&[libc::SIGTERM, libc::SIGINT, libc::SIGHUP]) {
        Ok(signals) => signals,
        Err(err) => {
            error(format_args!("cannot set up signal handling: {err}"));
            return ExitCode::FAILURE;
        }
    };
    let mut server = match Server::new(config) {
        Ok(server) => server,
        Err(err) => {
            error(err);
            return ExitCode::FAILURE;
        }
    };

    let mut stdout = io::stdout().lock();
    if let Err(err) =
        writeln!(stdout, "ivshmem-server: {}", server.description()).and_then(|()| stdout.flush())
    {
        error(format_args!("cannot write to standard output: {err}"));
    }
    drop(stdout);

    let mut status = ExitCode::SUCCESS;
    match server.run(signals.as_fd()) {
        Ok(()) => {
            if verbose {
                match signals.read() {
                    Ok(Some(signal)) => error(format_args!(
                        "{}: shutting down",
                        server::signal_name(signal)
                    )),
                    Ok(None) => error("shutting down"),
                    Err(err) => error(err),
                }
            }
        }
        Err(err) => {
            error(err);
            status = ExitCode::FAILURE;
        }
    }
    if let Err(err) = server.close() {
        error(err);
        status = ExitCode::FAILURE;
    }
    status
}
