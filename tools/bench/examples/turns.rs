// SPDX-License-Identifier: GPL-2.0

//! The queue on one thread, the driver and the virtual GSP in turns, for instruction
//! counts under callgrind: no second thread, no spinning, no clock, so the counts are
//! the same whatever else the machine does.
//!
//! `valgrind --tool=callgrind target/release/examples/turns LEN COUNT [echo]` sends COUNT
//! commands of LEN payload bytes (at most one ring's worth, 252 KiB less the headers):
//! `VGSP_SINK`, which the GSP consumes and answers with an empty reply, or with `echo` a
//! `VGSP_ECHO` answered with the same payload; the driver receives each reply
//! before it sends the next command. `callgrind_annotate` then gives the instructions
//! of each function; divide by COUNT for a command.

use std::process::ExitCode;

use kernel::{
    prelude::*,
    time::Delta, //
};
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

/// Sends `count` commands of `len` bytes in turns with the GSP.
fn turns(len: usize, count: usize, echo: bool) -> Result {
    let mut pair = Pair::new()?;
    let payload = Pair::pattern(len, 7)?;
    let func = if echo { VGSP_ECHO } else { VGSP_SINK };
    for _ in 0..count {
        match echo {
            true => pair.cmdq.post(pair.bar.bar(), &Echo(&payload))?,
            false => pair.cmdq.post(pair.bar.bar(), &Sink(&payload))?,
        };
        pair.gsp_run()?;
        let reply = pair.cmdq.receive_any(Delta::ZERO)?;
        if reply.function() != func || reply.payload.len() != if echo { len } else { 0 } {
            return Err(EIO);
        }
        pair.cmdq.recycle(reply);
    }
    Ok(())
}

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
    match turns(len, count, echo) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("turns: {e:?}");
            ExitCode::FAILURE
        }
    }
}
