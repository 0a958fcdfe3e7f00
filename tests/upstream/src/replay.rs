// SPDX-License-Identifier: GPL-2.0

//! `vgsp-upstream replay IMAGE [--rptr N]`: the tree's receive over a recorded `gspq`
//! region, printing exactly the lines `vgsp-tool replay-gspq` prints for ours, so that one
//! corpus of images judges both receives the same way.
//!
//! The image is the `gspq` region of `GspMem` (0x40000 bytes); receiving starts at the
//! driver's read pointer N (0 by default) and goes on while the read pointer is not the
//! GSP's write pointer and each receive makes progress. One line per receive:
//!
//! - `ok seq=<seqNum> function=<u32> len=<payload bytes> elems=<slots consumed>`: the
//!   tree's receive accepted the element. Its receive only takes a message of a type it
//!   names, so every element is received as the harness's reply type: one of another
//!   function, which it then refuses with `ERANGE` after validating and consuming it,
//!   counts as accepted too, as `vgsp-tool` takes whatever comes. The fields are read
//!   from the element's header in the image.
//! - `err <ERRNO> <reason>`: refused. The tree gives an errno and no reason: the reason
//!   is `(the tree names none)`.
//!
//! then `end rptr=<n>`, the tree's read pointer as it left it in the shared memory.

use std::{
    format,
    string::String,
    vec::Vec, //
};

use kernel::{
    prelude::*,
    time::Delta, //
};
use nova_core::gsp::fw::{
    slot_offset,
    GspMsgElement,
    CPUQ_OFFSET,
    GSPQ_OFFSET,
    MSGQ_NUM_PAGES,
    MSGQ_READ_PTR_OFFSET,
    MSGQ_WRITE_PTR_OFFSET,
    RPC_HEADER_SIZE, //
};
use zerocopy::FromBytes;

use crate::{
    bench::{
        pool_offset,
        pooled_device,
        queue_address, //
    },
    checks::RmEchoReply,
    gsp::cmdq::Cmdq,
};

/// The size of a `gspq` region.
pub const GSPQ_BYTES: usize = 0x40000;

/// Runs the tree's receive over `image` from read pointer `rptr`; returns the lines.
///
/// # Errors
///
/// A message if the image is not a `gspq` region or the bench cannot be set up.
pub fn replay(image: &[u8], rptr: u32) -> Result<Vec<String>, String> {
    if image.len() != GSPQ_BYTES {
        return Err(format!(
            "the image is {} bytes; a gspq region is exactly {GSPQ_BYTES} (0x40000)",
            image.len()
        ));
    }
    if rptr >= MSGQ_NUM_PAGES {
        return Err(format!("--rptr takes a slot number below {MSGQ_NUM_PAGES}"));
    }
    let bench = |e: Error| format!("the bench: {e:?}");
    let (dev, window) = pooled_device().map_err(bench)?;
    let cmdq = KBox::pin_init(Cmdq::new(dev), GFP_KERNEL).map_err(bench)?;
    let offset = pool_offset(queue_address(&cmdq).map_err(bench)?).map_err(bench)?;
    let mem = window
        .subview(offset, window.len().saturating_sub(offset))
        .map_err(bench)?;
    mem.write_bytes(GSPQ_OFFSET, image).map_err(bench)?;
    // The tree keeps its read pointer in the shared memory only.
    mem.write32(CPUQ_OFFSET + MSGQ_READ_PTR_OFFSET, rptr)
        .map_err(bench)?;
    let read_ptr = || {
        mem.read32(CPUQ_OFFSET + MSGQ_READ_PTR_OFFSET)
            .map_err(bench)
    };
    let gsp_wptr = mem
        .read32(GSPQ_OFFSET + MSGQ_WRITE_PTR_OFFSET)
        .map_err(bench)?;
    let mut lines = Vec::new();
    while read_ptr()? != gsp_wptr {
        let before = read_ptr()?;
        // The header of the element at the read pointer, as the image has it (a pointer
        // the tree left outside the ring reads no header: zeroes).
        let mut raw = [0u8; core::mem::size_of::<GspMsgElement>()];
        if before < MSGQ_NUM_PAGES {
            // CAST: below 63, a slot index.
            let at = GSPQ_OFFSET + slot_offset(before);
            mem.read_bytes(at, &mut raw).map_err(bench)?;
        }
        let header = GspMsgElement::read_from_bytes(&raw[..]).unwrap_or_default();
        let result = cmdq.receive_msg::<RmEchoReply>(Delta::ZERO);
        let after = read_ptr()?;
        match result {
            Ok(_) | Err(ERANGE) => lines.push(format!(
                "ok seq={} function={} len={} elems={}",
                header.seq_num,
                header.rpc.function,
                // CAST: a `u32` length.
                (header.rpc.length as usize).saturating_sub(RPC_HEADER_SIZE),
                (after + MSGQ_NUM_PAGES - before % MSGQ_NUM_PAGES) % MSGQ_NUM_PAGES
            )),
            Err(e) => {
                lines.push(format!("err {e:?} (the tree names none)"));
                if after == before {
                    break;
                }
            }
        }
        if after == before {
            break;
        }
    }
    lines.push(format!("end rptr={}", read_ptr()?));
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use std::vec;

    use nova_core::gsp::fw::ELEMENT_HEADER_SIZE;
    use zerocopy::IntoBytes;

    use super::*;

    /// A `gspq` image holding `messages` (function, payload), one element each, from slot
    /// 0, with the GSP's write pointer after them.
    fn image(messages: &[(u32, &[u8])]) -> Vec<u8> {
        let mut region = vec![0u8; GSPQ_BYTES];
        let mut slot = 0;
        for (seq, (function, payload)) in messages.iter().enumerate() {
            // CAST: a handful of messages.
            let mut header = GspMsgElement::new(seq as u32, *function, 0, payload.len());
            header.rpc.rpc_result = 0;
            header.seal(payload);
            let at = slot_offset(slot);
            region[at..at + ELEMENT_HEADER_SIZE].copy_from_slice(header.as_bytes());
            region[at + ELEMENT_HEADER_SIZE..][..payload.len()].copy_from_slice(payload);
            slot += header.elem_count;
        }
        region[MSGQ_WRITE_PTR_OFFSET..MSGQ_WRITE_PTR_OFFSET + 4]
            .copy_from_slice(&slot.to_le_bytes());
        region
    }

    /// `UCODE_LIBOS_PRINT`.
    const LOG: u32 = 0x100c;

    #[test]
    fn replays_two_log_lines_as_ours_does() {
        let lines = replay(&image(&[(LOG, b"first"), (LOG, b"second")]), 0).unwrap();
        assert_eq!(
            lines,
            [
                "ok seq=0 function=4108 len=5 elems=1",
                "ok seq=1 function=4108 len=6 elems=1",
                "end rptr=2"
            ]
        );
    }

    #[test]
    fn a_damaged_element_is_an_err_line() {
        let mut region = image(&[(LOG, b"first")]);
        // A payload byte changed: the checksum no longer holds.
        region[slot_offset(0) + ELEMENT_HEADER_SIZE] ^= 0xff;
        let lines = replay(&region, 0).unwrap();
        assert_eq!(lines[0], "err EIO (the tree names none)");
        assert_eq!(lines.last().map(String::as_str), Some("end rptr=0"));
    }

    #[test]
    fn refuses_an_image_of_another_size() {
        assert!(replay(&[0u8; 16], 0).unwrap_err().contains("0x40000"));
    }
}
