// SPDX-License-Identifier: GPL-2.0

//! `cargo run --release`: boots nova-core against the virtual GSP and runs the KUnit
//! suites.
//!
//! The transcript of the bring-up goes to standard error, the KUnit suites as KTAP
//! version 1 to standard output (so `kunit.py parse` can read it). Exits non-zero if
//! the bring-up or any case fails.
//!
//! Options:
//! - `--ktap-only`: the KUnit suites without the bring-up;
//! - `--list-suites`: prints the names of the suites it runs, one a line, and runs
//!   nothing; with `--kernel` also the names of the suites only a kernel runs (every
//!   suite a kernel boot reports). The test scripts take the suites they check from
//!   here, not from the sources.

use std::process::ExitCode;

use kernel::{
    host,
    prelude::*,
    time::Delta, //
};
use nova_core::gsp::{
    cmdq::CommandToGsp as _,
    commands::UnloadingGuestDriver,
    fw::{
        self,
        MsgFunction, //
    },
};
use nova_testbench::{
    rpc::{
        element_count_for_rpc,
        Echo, //
    },
    ReceiveAny,
};

/// The prefix of this program's log lines.
const __LOG_PREFIX: &[u8] = b"vgsp_host\0";

/// Boots the GSP and exchanges a few commands, printing each.
fn bring_up() -> Result {
    let (result, stats) = vgsp_host::with_gsp_thread(0, |gsp, bar, sim| -> Result {
        let info = gsp.boot(bar, &vgsp::PCI_FUNCTION)?;
        pr_info!(
            "gsp: static info: VBIOS subsystem {:04x}:{:04x}, short name \"{}\"\n",
            info.vbios_sub_vendor,
            info.vbios_sub_device,
            info.gpu_short_name()
        );

        for len in [8usize, 4096, 200 * 1024] {
            let payload: std::vec::Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
            let seq = gsp.cmdq().post(bar, &Echo(&payload))?;
            let reply = gsp.cmdq().receive_any(Delta::from_secs(5))?;
            let ok = reply.sequence == seq && reply.payload[..] == payload[..];
            pr_info!(
                "gsp: -> VGSP_ECHO sequence={} len={} elements={}; <- seq={} len={} slots={} result={} {}\n",
                seq,
                len,
                element_count_for_rpc(Echo(&payload).size()),
                reply.seq_num,
                reply.payload.len(),
                reply.elem_count,
                reply.rpc_result,
                if ok { "match" } else { "MISMATCH" }
            );
            if !ok {
                return Err(EIO);
            }
        }

        gsp.cmdq().post(bar, &UnloadingGuestDriver::default())?;
        let reply = gsp.cmdq().receive_any(Delta::from_secs(5))?;
        if reply.function() != MsgFunction::UNLOADING_GUEST_DRIVER || reply.rpc_result != fw::NV_OK
        {
            return Err(EIO);
        }
        pr_info!(
            "gsp: <- UNLOADING_GUEST_DRIVER acknowledged; {} doorbell writes\n",
            sim.doorbell_count()
        );
        Ok(())
    })?;
    let stats = stats?;
    pr_info!(
        "vgsp: {} commands, {} elements in, {} replies, {} events, {} malformed\n",
        stats.commands,
        stats.elements_in,
        stats.replies,
        stats.events,
        stats.malformed
    );
    result
}

/// What the command line asks for.
#[derive(Debug, Default, PartialEq, Eq)]
struct Options {
    /// `--ktap-only`: skip the bring-up.
    ktap_only: bool,
    /// `--list-suites`: print the suites' names and run nothing.
    list_suites: bool,
    /// `--kernel`: with `--list-suites`, the kernel-only suites too.
    kernel: bool,
}

/// The usage line, for a command line this program does not understand.
const USAGE: &str = "usage: vgsp-host [--ktap-only | --list-suites [--kernel]]";

/// Parses the arguments (without the program name).
///
/// # Errors
///
/// - The argument, if it is not one of the options above.
/// - `--kernel`, if it comes without `--list-suites`.
fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
    let mut options = Options::default();
    for arg in args {
        match arg.as_str() {
            "--ktap-only" => options.ktap_only = true,
            "--list-suites" => options.list_suites = true,
            "--kernel" => options.kernel = true,
            _ => return Err(arg),
        }
    }
    if options.kernel && !options.list_suites {
        return Err(String::from("--kernel"));
    }
    Ok(options)
}

/// The names `--list-suites` prints: the suites this program runs, in the order it runs
/// them; with `kernel`, the suites a kernel runs: those but the host-only ones, then the
/// ones only a kernel runs.
fn suite_names(kernel: bool) -> impl Iterator<Item = &'static str> {
    let kernel_only = if kernel {
        vgsp_kunit::KERNEL_ONLY_SUITES
    } else {
        &[]
    };
    let everywhere = vgsp_kunit::SUITES
        .iter()
        .map(|suite| suite.name)
        .filter(move |name| !kernel || !vgsp_kunit::HOST_ONLY_SUITES.contains(name));
    // Not `.chain()`: the prelude's `Init` has a `chain` too, as in 7.3.
    Iterator::chain(everywhere, kernel_only.iter().copied())
}

fn main() -> ExitCode {
    let options = match parse_args(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(arg) => {
            eprintln!("vgsp-host: unexpected argument '{arg}'\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if options.list_suites {
        for name in suite_names(options.kernel) {
            println!("{name}");
        }
        return ExitCode::SUCCESS;
    }
    let mut failed = false;
    if !options.ktap_only {
        if let Err(e) = bring_up() {
            pr_err!("bring-up failed: {e:?}\n");
            failed = true;
        }
    }
    let stdout = std::io::stdout();
    match host::kunit::run(vgsp_kunit::SUITES, &mut stdout.lock()) {
        Ok(totals) => {
            eprintln!("kunit: {} passed, {} failed", totals.passed, totals.failed);
            failed |= totals.failed != 0;
        }
        Err(e) => {
            eprintln!("kunit: cannot write KTAP: {e}");
            failed = true;
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod suite_list;
