// SPDX-License-Identifier: GPL-2.0

//! `vgsp-tool replay-gspq FILE [--rptr N]`: runs the driver's real receive path over a
//! recorded `gspq` region, so anyone can check what the driver makes of a queue.
//!
//! FILE is exactly 0x40000 bytes: the `gspq` region of `GspMem` (tx header at 0, rx
//! header at 0x20, ring slots from 0x1000). Receiving starts at driver read pointer N
//! (default 0) and takes whatever comes (no expected function), until the read pointer
//! reaches the GSP's write pointer in the file or a receive makes no progress. One line
//! per receive attempt:
//!
//! - `ok seq=<seqNum> function=<u32> len=<payload bytes> elems=<slots consumed>` (a
//!   reassembled continuation counts as one line with the total length). Each receive
//!   has a zero timeout; a message whose last element is full with nothing published
//!   after it is whole after the grace, `RECORD_TIMEOUT` (`nova_core::gsp::fw::element::Delimiter`);
//! - `err <ERRNO> <reason>`;
//!
//! then `end rptr=<n>`. Exit status 0 for any content; 2 with a message for an
//! unreadable file, a wrong size or a bad argument.
//!
//! `vgsp-tool record-gspq FILE`: writes such a region as the virtual GSP leaves it after
//! two log lines, the reply to a 100 KiB echo (a head and its continuation records, as
//! r570 firmware splits) and a third log line, none consumed: an image to replay with this
//! tool and with `cargo xtask upstream replay`, which prints the same lines for a kernel
//! tree's receive.

use std::process::ExitCode;

use kernel::{
    host,
    prelude::*,
    time::Delta, //
};
use nova_core::gsp::{
    cmdq::{
        BenchSeam,
        Cmdq, //
    },
    fw::{
        GSPQ_OFFSET,
        MSGQ_NUM_PAGES,
        MSGQ_WRITE_PTR_OFFSET, //
    },
};
use nova_testbench::{
    rpc::Echo,
    ReceiveAny, //
};
use vgsp_kunit::fixture::Pair;

/// The size of a `gspq` region.
const GSPQ_BYTES: usize = 0x40000;

fn usage() -> String {
    "usage: vgsp-tool replay-gspq FILE [--rptr N] | record-gspq FILE".into()
}

/// `record-gspq FILE`.
fn record(args: &[String]) -> Result<Vec<String>, String> {
    let [file] = args else {
        return Err(usage());
    };
    let gsp = |e: Error| format!("the virtual GSP: {e:?}");
    let mut pair = Pair::new().map_err(gsp)?;
    pair.gsp.log(b"first").map_err(gsp)?;
    pair.gsp.log(b"second").map_err(gsp)?;
    let payload = Pair::pattern(100 << 10, 9).map_err(gsp)?;
    pair.cmdq
        .post(pair.bar.bar(), &Echo(&payload))
        .map_err(gsp)?;
    pair.gsp_run().map_err(gsp)?;
    pair.gsp.log(b"third").map_err(gsp)?;
    pair.gsp_run().map_err(gsp)?;
    let mut region = vec![0u8; GSPQ_BYTES];
    pair.view()
        .read_bytes(GSPQ_OFFSET, &mut region)
        .map_err(gsp)?;
    std::fs::write(file, &region).map_err(|e| format!("cannot write {file}: {e}"))?;
    Ok(Vec::new())
}

fn replay(args: &[String]) -> Result<Vec<String>, String> {
    let (file, rptr) = match args {
        [file] => (file, 0),
        [file, flag, n] if flag == "--rptr" => (
            file,
            n.parse::<u32>()
                .ok()
                .filter(|&n| n < MSGQ_NUM_PAGES)
                .ok_or(format!(
                    "--rptr takes a slot number below {MSGQ_NUM_PAGES}, not '{n}'"
                ))?,
        ),
        _ => return Err(usage()),
    };
    let region = std::fs::read(file).map_err(|e| format!("cannot read {file}: {e}"))?;
    if region.len() != GSPQ_BYTES {
        return Err(format!(
            "{file} is {} bytes; a gspq region is exactly {GSPQ_BYTES} (0x40000)",
            region.len()
        ));
    }
    let gsp_wptr = u32::from_le_bytes(
        region[MSGQ_WRITE_PTR_OFFSET..MSGQ_WRITE_PTR_OFFSET + 4]
            .try_into()
            .unwrap_or_default(),
    );

    let cmdq = KBox::pin_init(Cmdq::new(host::device()), GFP_KERNEL)
        .map_err(|e| format!("no memory for the queue: {e:?}"))?;
    cmdq.gsp_mem()
        .device_view()
        .write_bytes(GSPQ_OFFSET, &region)
        .map_err(|e| format!("cannot load the region: {e:?}"))?;
    cmdq.resume_reading_at(rptr)
        .map_err(|e| format!("cannot start at {rptr}: {e:?}"))?;

    let mut lines = Vec::new();
    while cmdq.cpu_ptrs().1 != gsp_wptr {
        let before = cmdq.cpu_ptrs().1;
        match cmdq.receive_any(Delta::ZERO) {
            Ok(m) => lines.push(format!(
                "ok seq={} function={} len={} elems={}",
                m.seq_num,
                m.function,
                m.payload.len(),
                m.elem_count
            )),
            Err(e) => {
                lines.push(format!(
                    "err {:?} {}",
                    e,
                    cmdq.last_fault()
                        .map_or_else(|| "unknown".to_string(), |f| f.to_string())
                ));
                if cmdq.cpu_ptrs().1 == before {
                    break;
                }
            }
        }
    }
    lines.push(format!("end rptr={}", cmdq.cpu_ptrs().1));
    Ok(lines)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.split_first() {
        Some((cmd, rest)) if cmd == "replay-gspq" => replay(rest),
        Some((cmd, rest)) if cmd == "record-gspq" => record(rest),
        _ => Err(usage()),
    };
    match result {
        Ok(lines) => {
            for l in lines {
                println!("{l}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("vgsp-tool: {e}");
            ExitCode::from(2)
        }
    }
}
