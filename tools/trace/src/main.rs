// SPDX-License-Identifier: GPL-2.0

//! `vgsp-trace`: the driver boots the virtual GSP, which serves it on a thread of its own,
//! and exchanges a fixed workload of echo commands, for `cargo xtask ordering-trace` to
//! trace under `qemu-aarch64` with the project's plugin.
//!
//! The workload is made to exercise every ordering point of both agents on real
//! instructions: batches of commands posted before any reply is read (so the driver
//! loads the GSP's read pointer to find room, and both agents find elements waiting),
//! elements of one, two and many slots, a command and a reply split into continuation
//! records, and enough traffic that both rings wrap more than twice (every slot is
//! reused, so each overwrite must be ordered after the other agent's reads of it).
//!
//! Exits 0 when every reply matched its command byte for byte, 1 otherwise.

use std::process::ExitCode;

use kernel::{
    prelude::*,
    time::Delta, //
};
use nova_core::gsp::{
    regs::BAR0_SIZE,
    Gsp, //
};
use nova_testbench::{
    rpc::Echo,
    ReceiveAny, //
};
use vdev::SimBar;
use vgsp_kunit::{
    fixture::SimBar0,
    gsp_thread::with_gsp_thread, //
};

/// The prefix of this program's log lines.
const __LOG_PREFIX: &[u8] = b"vgsp_trace\0";

/// Batches of echo payload lengths: each batch is posted whole, then its replies read.
const BATCHES: &[&[usize]] = &[
    &[8; 20],
    &[4096; 8],
    &[1; 30],
    &[70_000],
    &[8; 40],
    &[8000; 5],
    &[200; 50],
];

/// How long one reply may take, under emulation and tracing.
const REPLY_TIMEOUT: Delta = Delta::from_secs(30);

/// The bytes of the `n`th echo, of length `len`.
fn payload(n: usize, len: usize) -> Vec<u8> {
    // CAST: the pattern wants the low byte.
    (0..len).map(|i| (i * 13 + n * 7) as u8).collect()
}

/// Boots the GSP and runs the batches; returns the number of replies that matched.
fn workload(gsp: &Gsp, bar: &SimBar0<'_>, _: &SimBar<BAR0_SIZE>) -> Result<usize> {
    gsp.boot(bar, &vgsp::PCI_FUNCTION)?;
    let mut n = 0;
    let mut matched = 0;
    for batch in BATCHES {
        let mut sent = Vec::new();
        for &len in *batch {
            let bytes = payload(n, len);
            n += 1;
            let seq = gsp.cmdq().post(bar, &Echo(&bytes))?;
            sent.push((seq, bytes));
        }
        for (seq, bytes) in sent {
            let reply = gsp.cmdq().receive_any(REPLY_TIMEOUT)?;
            if reply.sequence == seq && reply.payload[..] == bytes[..] {
                matched += 1;
            }
        }
    }
    Ok(matched)
}

fn main() -> ExitCode {
    let expected: usize = BATCHES.iter().map(|b| b.len()).sum();
    match with_gsp_thread(0, workload) {
        Ok((Ok(matched), Ok(stats))) if matched == expected => {
            println!(
                "vgsp-trace: {matched} of {expected} echoes matched; the GSP saw {} commands in {} elements",
                stats.commands, stats.elements_in
            );
            ExitCode::SUCCESS
        }
        Ok((Ok(matched), stats)) => {
            eprintln!("vgsp-trace: {matched} of {expected} echoes matched; GSP: {stats:?}");
            ExitCode::FAILURE
        }
        Ok((Err(e), stats)) => {
            eprintln!("vgsp-trace: the driver failed: {e:?}; GSP: {stats:?}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("vgsp-trace: could not start: {e:?}");
            ExitCode::FAILURE
        }
    }
}
