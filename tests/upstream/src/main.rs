// SPDX-License-Identifier: GPL-2.0

//! `vgsp-upstream --name NAME [WHAT...]`: runs the checks on the tree's queue this binary
//! was built from (`cargo xtask upstream` builds and runs it), one section each, a
//! `finding:` line per finding, the summary line last.
//!
//! `vgsp-upstream replay IMAGE [--rptr N]`: the tree's receive over a `gspq` image, the
//! lines `vgsp-tool replay-gspq` prints for ours ([`vgsp_upstream::replay`]).
//!
//! `vgsp-upstream --list`: the checks' names, one a line (for `cargo xtask upstream` to
//! refuse a wrong name before a kernel's build).
//!
//! Exit status: 0 when every check ran and the echo matched; 1 when the echo (or the
//! ordering workload's) failed, or `nomem` found a message lost or duplicated;
//! 2 when a check could not run or `WHAT` names none this harness has.

use std::process::ExitCode;

use vgsp_upstream::{
    checks,
    hostile,
    nomem,
    perf,
    replay, //
};

/// The checks, in the order they run when none is named.
const CHECKS: &[&str] = &["echo", "hostile", "bench"];

/// What runs only when named: `ordering`, the workload `cargo xtask upstream ordering`
/// traces under `qemu-aarch64` (a binary built with the shim's `trace` feature), and
/// `nomem`, the allocation-failure walk through the tree's receive path.
const NAMED_ONLY: &[&str] = &["ordering", "nomem"];

/// `replay IMAGE [--rptr N]`.
fn replay_command(args: &[String]) -> ExitCode {
    let usage = "usage: vgsp-upstream replay IMAGE [--rptr N]";
    let (image, rptr) = match args {
        [image] => (image, Some(0)),
        [image, flag, n] if flag == "--rptr" => (image, n.parse::<u32>().ok()),
        _ => (&String::new(), None),
    };
    let Some(rptr) = rptr.filter(|_| !image.is_empty()) else {
        eprintln!("vgsp-upstream: {usage}");
        return ExitCode::from(2);
    };
    let lines = std::fs::read(image)
        .map_err(|e| format!("cannot read {image}: {e}"))
        .and_then(|bytes| replay::replay(&bytes, rptr));
    match lines {
        Ok(lines) => {
            for line in lines {
                println!("{line}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("vgsp-upstream: replay: {e}");
            ExitCode::from(2)
        }
    }
}

fn main() -> ExitCode {
    let all: Vec<String> = std::env::args().skip(1).collect();
    if let Some(("replay", rest)) = all.split_first().map(|(c, r)| (c.as_str(), r)) {
        return replay_command(rest);
    }
    if all.iter().any(|a| a == "--list") {
        for check in CHECKS.iter().chain(NAMED_ONLY) {
            println!("{check}");
        }
        return ExitCode::SUCCESS;
    }
    let mut args = all.into_iter();
    let mut name = String::from("upstream");
    let mut what = Vec::new();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--name" => name = args.next().unwrap_or_default(),
            check if CHECKS.contains(&check) || NAMED_ONLY.contains(&check) => what.push(arg),
            other => {
                eprintln!(
                    "vgsp-upstream: no check {other:?}; this harness has: {}, {}",
                    CHECKS.join(", "),
                    NAMED_ONLY.join(", ")
                );
                return ExitCode::from(2);
            }
        }
    }
    if what.is_empty() {
        what = CHECKS.iter().map(|c| c.to_string()).collect();
    }
    let mut summary = Vec::new();
    let mut echo_failed = false;
    for check in &what {
        println!("== {check}");
        match check.as_str() {
            "ordering" => match checks::ordering_workload() {
                Ok((matched, sent)) => {
                    echo_failed |= matched != sent;
                    summary.push(format!(
                        "ordering workload {matched} of {sent} replies matched"
                    ));
                }
                Err(e) => {
                    eprintln!("vgsp-upstream: the ordering workload could not run: {e:?}");
                    return ExitCode::from(2);
                }
            },
            "bench" => match perf::bench() {
                Ok(findings) => {
                    for finding in &findings {
                        println!("finding: {finding}");
                    }
                }
                Err(e) => {
                    eprintln!("vgsp-upstream: bench could not run: {e:?}");
                    return ExitCode::from(2);
                }
            },
            "nomem" => match nomem::nomem() {
                Ok(outcome) => {
                    for finding in &outcome.findings {
                        println!("finding: {finding}");
                    }
                    echo_failed |= outcome.lost + outcome.duplicated + outcome.broken > 0;
                    summary.push(outcome.summary);
                }
                Err(e) => {
                    eprintln!("vgsp-upstream: nomem could not run: {e:?}");
                    return ExitCode::from(2);
                }
            },
            "hostile" => match hostile::hostile() {
                Ok(outcome) => {
                    for finding in &outcome.findings {
                        println!("finding: {finding}");
                    }
                    summary.push(format!(
                        "hostile {} of {} classes mishandled",
                        outcome.mishandled, outcome.classes
                    ));
                }
                Err(e) => {
                    eprintln!("vgsp-upstream: hostile could not run: {e:?}");
                    return ExitCode::from(2);
                }
            },
            _ => match checks::echo() {
                Ok(outcome) => {
                    for finding in &outcome.findings {
                        println!("finding: {finding}");
                    }
                    echo_failed = outcome.matched != outcome.sent;
                    summary.push(format!("echo {}", if echo_failed { "FAIL" } else { "ok" }));
                }
                Err(e) => {
                    eprintln!("vgsp-upstream: echo could not run: {e:?}");
                    return ExitCode::from(2);
                }
            },
        }
    }
    if summary.is_empty() {
        // `bench` alone: figures, no verdict.
        summary.push(what.join(", "));
    }
    println!("{name}: {}", summary.join(", "));
    if echo_failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
