// SPDX-License-Identifier: GPL-2.0

//! Instructions per command, each side's, counted by callgrind: figures that do not
//! depend on the machine's weather.
//!
//! [`measure`] runs the benchmark's binary again under `valgrind --tool=callgrind` in its hidden
//! mode `--turns LEN COUNT echo|sink` ([`turns`]): the driver and the virtual GSP in
//! turns on one thread, as [`crate::queue::turns`], with no clock, no second thread and no
//! spinning. Each turn calls three functions that nothing else calls,
//! `measured_driver_send`, `measured_gsp` and `measured_driver_receive`; callgrind
//! collects only inside the side's functions (`--collect-atstart=no --toggle-collect=`,
//! one run a side), and the count over `COUNT` is the side's instructions per command.
//! The warm-up turns before ([`WARMUP`]: twice round both rings) call the same work
//! without the measured functions, so allocations made once are not counted.
//!
//! - `echo8`: an 8-byte `VGSP_ECHO` and its reply (the round trip of `echo8_rt_*`).
//! - `cmd4k`: a 4 KiB `VGSP_SINK` and its empty reply (the command of `cmd_4k_mbps`).
//!
//! The driver's side is its send (`Cmdq::post`) and its receive of the reply
//! (`receive_any`, then `Cmdq::recycle`); the GSP's side is `Vgsp::run_until_idle`.

use std::{
    path::Path,
    process::Command, //
};

use kernel::{
    prelude::*,
    time::Delta, //
};
use nova_core::gsp::fw;
use nova_testbench::{
    rpc::{
        Echo,
        Sink,
        VGSP_ECHO,
        VGSP_SINK, //
    },
    ReceiveAny,
};
use vgsp_kunit::fixture::Pair;

use crate::Goal;

/// The goal for an 8-byte echo round trip, both sides (issue 41).
pub const ECHO_GOAL: f64 = 2000.0;

/// Commands counted a figure.
pub const COUNT: usize = 10_000;

/// Turns before the counted ones: twice round both rings, every slot touched.
// CAST: the ring's slot count is small.
pub const WARMUP: usize = 2 * fw::MSGQ_NUM_PAGES as usize;

/// What is counted: one workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Workload {
    /// The key in the JSON file.
    pub key: &'static str,
    /// The label in the table.
    pub label: &'static str,
    /// The payload bytes of a command.
    pub len: usize,
    /// An echo, else a sink command.
    pub echo: bool,
}

/// Every workload counted.
pub const WORKLOADS: &[Workload] = &[
    Workload {
        key: "instr_echo8",
        label: "instructions, echo 8 B round trip",
        len: 8,
        echo: true,
    },
    Workload {
        key: "instr_cmd4k",
        label: "instructions, 4 KiB command and its empty reply",
        len: 4096,
        echo: false,
    },
];

/// A side of the queue whose instructions are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The driver: its send and its receive of the reply.
    Driver,
    /// The virtual GSP: taking the command and answering it.
    Gsp,
}

impl Side {
    /// Returns callgrind's `--toggle-collect` patterns of the side's functions.
    fn patterns(self) -> &'static [&'static str] {
        match self {
            Self::Driver => &[
                "*instructions::measured_driver_send",
                "*instructions::measured_driver_receive",
            ],
            Self::Gsp => &["*instructions::measured_gsp"],
        }
    }
}

/// The instructions of one workload, per command.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Counted {
    /// The workload.
    pub workload: &'static Workload,
    /// The driver's instructions.
    pub driver: f64,
    /// The GSP's instructions.
    pub gsp: f64,
}

impl Counted {
    /// Returns both sides' instructions.
    pub fn total(&self) -> f64 {
        self.driver + self.gsp
    }

    /// Returns the goal for both sides' count: at most [`ECHO_GOAL`] for the echo, none
    /// for the sink command.
    pub fn goal(&self) -> Option<Goal> {
        self.workload.echo.then_some(Goal::AtMost(ECHO_GOAL))
    }

    /// Returns whether the goal is met, if there is one.
    pub fn met(&self) -> Option<bool> {
        self.goal().map(|g| g.met(self.total()))
    }
}

/// The driver's send of one command.
#[inline(never)]
fn driver_send(pair: &mut Pair, payload: &[u8], echo: bool) -> Result {
    match echo {
        true => pair.cmdq.post(pair.bar.bar(), &Echo(payload))?,
        false => pair.cmdq.post(pair.bar.bar(), &Sink(payload))?,
    };
    Ok(())
}

/// The GSP's work on one command.
#[inline(never)]
fn gsp(pair: &mut Pair) -> Result {
    pair.gsp_run().map(drop)
}

/// The driver's receive of the reply, checked, and its buffer given back.
///
/// # Errors
///
/// - `EIO` if the reply is not the one the command asks for.
#[inline(never)]
fn driver_receive(pair: &mut Pair, len: usize, echo: bool) -> Result {
    let reply = pair.cmdq.receive_any(Delta::ZERO)?;
    let (function, reply_len) = match echo {
        true => (VGSP_ECHO, len),
        false => (VGSP_SINK, 0),
    };
    if reply.function() != function || reply.payload.len() != reply_len {
        return Err(EIO);
    }
    pair.cmdq.recycle(reply);
    Ok(())
}

/// `driver_send`, counted.
#[inline(never)]
fn measured_driver_send(pair: &mut Pair, payload: &[u8], echo: bool) -> Result {
    driver_send(pair, payload, echo)
}

/// `gsp`, counted.
#[inline(never)]
fn measured_gsp(pair: &mut Pair) -> Result {
    gsp(pair)
}

/// `driver_receive`, counted.
#[inline(never)]
fn measured_driver_receive(pair: &mut Pair, len: usize, echo: bool) -> Result {
    driver_receive(pair, len, echo)
}

/// Runs [`WARMUP`] turns, then `count` counted ones, of a command of `len` payload
/// bytes: an echo if `echo`, else a sink command. The hidden mode `--turns` of the
/// binary, which [`measure`] runs under callgrind; `examples/turns.rs` too.
///
/// # Errors
///
/// - `EIO` if a reply is not the one its command asks for.
/// - Any error of the driver or the GSP.
pub fn turns(len: usize, count: usize, echo: bool) -> Result {
    let mut pair = Pair::new()?;
    let payload = Pair::pattern(len, 7)?;
    for _ in 0..WARMUP {
        driver_send(&mut pair, &payload, echo)?;
        gsp(&mut pair)?;
        driver_receive(&mut pair, len, echo)?;
    }
    for _ in 0..count {
        measured_driver_send(&mut pair, &payload, echo)?;
        measured_gsp(&mut pair)?;
        measured_driver_receive(&mut pair, len, echo)?;
    }
    Ok(())
}

/// Returns the arguments of the hidden mode `--turns` for `workload`, `count` commands.
pub fn turns_args(workload: &Workload, count: usize) -> Vec<String> {
    vec![
        "--turns".into(),
        workload.len.to_string(),
        count.to_string(),
        if workload.echo { "echo" } else { "sink" }.into(),
    ]
}

/// Parses the arguments after `--turns`: `LEN COUNT echo|sink`.
pub fn parse_turns(args: &[String]) -> Option<(usize, usize, bool)> {
    match args {
        [len, count, kind] => Some((
            len.parse().ok()?,
            count.parse().ok()?,
            match kind.as_str() {
                "echo" => true,
                "sink" => false,
                _ => return None,
            },
        )),
        _ => None,
    }
}

/// Returns the events callgrind collected, from its output file's `totals:` line (or
/// `summary:`, which older versions write).
pub fn callgrind_total(out: &str) -> Option<u64> {
    let first = |prefix: &str| {
        out.lines()
            .filter_map(|line| line.strip_prefix(prefix))
            .find_map(|rest| rest.split_whitespace().next()?.parse().ok())
    };
    first("totals:").or_else(|| first("summary:"))
}

/// Returns whether `valgrind` runs.
fn valgrind_runs() -> bool {
    Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success())
}

/// Makes sure `valgrind` runs: if it does not, asks the workspace's tool table to install
/// it (`cargo xtask tools ensure valgrind`, which installs Debian's package as root and
/// otherwise names the command that does).
///
/// # Errors
///
/// - What to install, if it still does not run.
fn ensure_valgrind() -> Result<(), String> {
    if valgrind_runs() {
        return Ok(());
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let ensured = Command::new(cargo)
        .args(["xtask", "tools", "ensure", "valgrind"])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output();
    if valgrind_runs() {
        return Ok(());
    }
    let why = match ensured {
        Ok(out) => String::from_utf8_lossy(&out.stderr).trim().to_string(),
        Err(e) => format!("`cargo xtask tools ensure valgrind` did not start: {e}"),
    };
    Err(format!(
        "instruction counts need valgrind's callgrind, which is not installed ({why}); \
         install Debian's package `valgrind`, or leave the counts out with \
         `--no-instructions`"
    ))
}

/// Counts the instructions of `side` per command of `workload`, running `exe` (this
/// binary) under callgrind.
///
/// # Errors
///
/// - The command and what went wrong, if callgrind fails or writes no count.
fn count_side(exe: &Path, workload: &Workload, side: Side) -> Result<f64, String> {
    let out_file = std::env::temp_dir().join(format!(
        "vgsp-bench-callgrind-{}-{}-{side:?}.out",
        std::process::id(),
        workload.key
    ));
    let mut cmd = Command::new("valgrind");
    cmd.arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out_file.display()))
        .arg("--collect-atstart=no");
    for pattern in side.patterns() {
        cmd.arg(format!("--toggle-collect={pattern}"));
    }
    cmd.arg(exe).args(turns_args(workload, COUNT));
    let shown = format!("{cmd:?}");
    let out = cmd
        .output()
        .map_err(|e| format!("{shown}: cannot run: {e}"))?;
    let text = std::fs::read_to_string(&out_file);
    let _ = std::fs::remove_file(&out_file);
    if !out.status.success() {
        return Err(format!(
            "{shown}: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let total = text
        .ok()
        .as_deref()
        .and_then(callgrind_total)
        .ok_or(format!("{shown}: no `totals:` line in callgrind's output"))?;
    // CAST: instruction counts are far below 2^53; `COUNT` is small.
    Ok(total as f64 / COUNT as f64)
}

/// Counts the instructions of every workload, each side's, per command, running `exe`
/// (the benchmark's binary, which has the mode `--turns`) under callgrind.
///
/// # Errors
///
/// - What to install if valgrind is missing, or what failed.
pub fn measure(exe: &Path, progress: &mut dyn FnMut(&str)) -> Result<Vec<Counted>, String> {
    ensure_valgrind()?;
    WORKLOADS
        .iter()
        .map(|workload| {
            progress(&format!("callgrind: {}", workload.label));
            Ok(Counted {
                workload,
                driver: count_side(exe, workload, Side::Driver)?,
                gsp: count_side(exe, workload, Side::Gsp)?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_totals_line() {
        let out = "events: Ir\nsummary: 12\nfn=(1) x\n1 5\ntotals: 34567\n";
        assert_eq!(callgrind_total(out), Some(34567));
    }

    #[test]
    fn turns_arguments_round_trip() {
        for w in WORKLOADS {
            let args = turns_args(w, 5);
            assert_eq!(parse_turns(&args[1..]), Some((w.len, 5, w.echo)));
        }
    }

    #[test]
    fn turns_run_both_workloads() {
        for w in WORKLOADS {
            turns(w.len, 3, w.echo).expect("turns");
        }
    }
}
