// SPDX-License-Identifier: GPL-2.0

//! The queue on one thread, the driver and the virtual GSP in turns, for instruction
//! counts under callgrind: no second thread, no spinning, no clock, so the counts are
//! the same whatever else the machine does.
//!
//! `valgrind --tool=callgrind target/release/examples/turns LEN COUNT [echo]` sends COUNT
//! commands of LEN payload bytes (at most one ring's worth, 252 KiB less the headers),
//! after [`vgsp_bench::instructions::WARMUP`] uncounted ones: `VGSP_SINK`, which the GSP
//! consumes and answers with an empty reply, or with `echo` a `VGSP_ECHO` answered with
//! the same payload; the driver receives each reply before it sends the next command.
//! `callgrind_annotate` then gives the instructions of each function; divide by COUNT for
//! a command. The benchmark itself counts each side's (`vgsp_bench::instructions`).

use std::process::ExitCode;

use vgsp_bench::instructions;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parsed = match args.as_slice() {
        [len, count, rest @ ..] if rest.is_empty() || rest == ["echo"] => len
            .parse()
            .ok()
            .zip(count.parse().ok())
            .map(|(l, c)| (l, c, !rest.is_empty())),
        _ => None,
    };
    let Some((len, count, echo)) = parsed else {
        eprintln!("usage: turns LEN COUNT [echo]");
        return ExitCode::from(2);
    };
    match instructions::turns(len, count, echo) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("turns: {e:?}");
            ExitCode::FAILURE
        }
    }
}
