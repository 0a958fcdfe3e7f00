// SPDX-License-Identifier: GPL-2.0

//! `vgsp-upstream replay IMAGE [--rptr N]`: the tree's receive over a recorded `gspq`
//! region, printing the lines `vgsp-tool replay-gspq` prints for ours, so that one corpus
//! of images judges both receives the same way and the two outputs can be diffed.
//!
//! The image is the `gspq` region of `GspMem` (0x40000 bytes); receiving starts at the
//! driver's read pointer N (0 by default) and goes on while the read pointer is not the
//! GSP's write pointer and each receive makes progress.
//!
//! Each receive takes the message as a [`Captured`] of the function the element at the read
//! pointer carries: the tree's receive only hands over a message of the function its type
//! names (`M::FUNCTION`), and `Captured::read` keeps every payload byte it is given. What the
//! line says of the message is what the tree handed over, compared with what the image holds
//! for it: the element at the read pointer and the continuation records that follow it (same
//! RPC sequence number, within what the GSP published). One line per receive:
//!
//! - `ok seq=<seqNum> function=<u32> len=<payload bytes> elems=<slots consumed>`: the tree
//!   handed over the message whole, `len` bytes of payload, as the image holds it. This is
//!   the line `vgsp-tool` prints for a message ours receives (ours reassembles split
//!   messages), so a message both receive whole reads the same in both outputs. `seq` is the
//!   `seqNum` of the element at the read pointer, `function` the function of the type the
//!   tree handed the message over as.
//! - The same, followed by ` cut of <N>`: the tree handed over only the first `len` of the
//!   `N` payload bytes the image holds for the message (a split message taken for its head,
//!   say).
//! - The same, followed by ` unlike the image's <N>`: the tree handed over bytes that are not
//!   the start of the image's `N` (more than the image holds, or other bytes).
//! - `err <ERRNO> (the tree names none) rptr=<n>`: the receive refused the message, `ERANGE`
//!   included (a message of another function than the one received as), and left its read
//!   pointer at `n`. The tree gives an errno and no reason, where `vgsp-tool` gives ours.
//!
//! then `end rptr=<n>`, the tree's read pointer as it left it in the shared memory.

use core::marker::PhantomData;

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
    MsgFunction as OurFunction,
    CPUQ_OFFSET,
    ELEMENT_HEADER_SIZE,
    GSPQ_OFFSET,
    GSP_PAGE_SIZE,
    MAX_ELEMENT_PAGES,
    MSGQ_NUM_PAGES,
    MSGQ_READ_PTR_OFFSET,
    MSGQ_WRITE_PTR_OFFSET,
    RING_BYTES, //
};
use zerocopy::FromBytes;

use crate::{
    bench::{
        pool_offset,
        pooled_device,
        queue_address, //
    },
    gsp::{
        cmdq::{
            Cmdq,
            MessageFromGsp, //
        },
        fw::MsgFunction,
    },
    sbuffer::SBufferIter,
};

/// The size of a `gspq` region.
pub const GSPQ_BYTES: usize = 0x40000;

/// The function a [`Captured`] is received as.
trait Function {
    /// The tree's function of the messages received as `Captured<Self>`.
    const FUNCTION: MsgFunction;
}

/// A message of function `F::FUNCTION` as the tree's receive hands it over: every payload
/// byte it gives [`MessageFromGsp::read`].
struct Captured<F> {
    /// The fixed part, then the rest of the payload, as `read` was given them.
    payload: KVec<u8>,
    _function: PhantomData<F>,
}

impl<F: Function> MessageFromGsp for Captured<F> {
    const FUNCTION: MsgFunction = F::FUNCTION;
    type InitError = Error;
    /// No fixed part: a payload of any length, an empty one included, reaches `read` whole,
    /// so that what the tree hands over is never cut by this type.
    type Message = [u8; 0];

    fn read(
        msg: &[u8; 0],
        sbuffer: &mut SBufferIter<core::array::IntoIter<&[u8], 2>>,
    ) -> Result<Self> {
        let mut payload = KVec::new();
        payload.extend_from_slice(&msg[..], GFP_KERNEL)?;
        payload.extend_from_slice(&sbuffer.flush_into_kvec(GFP_KERNEL)?, GFP_KERNEL)?;
        Ok(Self {
            payload,
            _function: PhantomData,
        })
    }
}

/// Declares [`receive_captured`] over every function of the tree's `MsgFunction`: the match
/// is exhaustive, so a tree whose enum differs does not build rather than receive a function
/// as another.
macro_rules! receive_as_each {
    ($($variant:ident),* $(,)?) => {
        /// Receives the message at the read pointer as a [`Captured`] of `function`; returns
        /// the function it was handed over as and its payload.
        ///
        /// `None`, a function the tree does not know, receives as a `NOP`: the tree refuses
        /// such a message before it compares functions.
        ///
        /// # Errors
        ///
        /// What the tree's `Cmdq::receive_msg` returns, `ERANGE` for a message of another
        /// function included.
        fn receive_captured(
            cmdq: &Cmdq,
            function: Option<MsgFunction>,
        ) -> Result<(MsgFunction, KVec<u8>)> {
            match function.unwrap_or(MsgFunction::Nop) {
                $(MsgFunction::$variant => {
                    struct Of;
                    impl Function for Of {
                        const FUNCTION: MsgFunction = MsgFunction::$variant;
                    }
                    cmdq.receive_msg::<Captured<Of>>(Delta::ZERO)
                        .map(|m| (Of::FUNCTION, m.payload))
                })*
            }
        }
    };
}

receive_as_each!(
    AllocChannelDma,
    AllocCtxDma,
    AllocDevice,
    AllocMemory,
    AllocObject,
    AllocRoot,
    BindCtxDma,
    ContinuationRecord,
    Free,
    GetGspStaticInfo,
    GetStaticInfo,
    GspInitPostObjGpu,
    GspRmControl,
    GspSetSystemInfo,
    Log,
    MapMemory,
    Nop,
    SetGuestSystemInfo,
    SetRegistry,
    UnloadingGuestDriver,
    GspInitDone,
    GspLockdownNotice,
    GspPostNoCat,
    GspRunCpuSequencer,
    MmuFaultQueued,
    OsErrorLog,
    PostEvent,
    RcTriggered,
    UcodeLibOsPrint,
);

/// Returns the GSP's write pointer in `image`, a `gspq` region.
fn write_ptr(image: &[u8]) -> u32 {
    let at = MSGQ_WRITE_PTR_OFFSET;
    image
        .get(at..at + 4)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}

/// Returns the header of the element at `slot` in `image`, a `gspq` region; `None` for a
/// slot outside the ring.
fn element_at(image: &[u8], slot: u32) -> Option<GspMsgElement> {
    if slot >= MSGQ_NUM_PAGES {
        return None;
    }
    let at = slot_offset(slot);
    GspMsgElement::read_from_bytes(image.get(at..at + ELEMENT_HEADER_SIZE)?).ok()
}

/// Returns the payload the element at `slot` of `image` announces, read as far as the
/// element's slots go (an `rpc.length` past them does not take the next element's bytes),
/// continuing at slot 0 past the end of the ring.
fn payload_at(image: &[u8], slot: u32, header: &GspMsgElement) -> Vec<u8> {
    // CAST: at most `MAX_ELEMENT_PAGES` (16), a `usize`.
    let slots = header.elem_count.min(MAX_ELEMENT_PAGES) as usize;
    let room = (slots * GSP_PAGE_SIZE).saturating_sub(ELEMENT_HEADER_SIZE);
    let len = header.rpc_payload_len().unwrap_or(0).min(room);
    let Some(ring) = image.get(slot_offset(0)..slot_offset(0) + RING_BYTES) else {
        return Vec::new();
    };
    let start = slot_offset(slot) - slot_offset(0) + ELEMENT_HEADER_SIZE;
    ring.iter().cycle().skip(start).take(len).copied().collect()
}

/// What `image` holds for the message whose first element is at `slot`: that element's
/// `seqNum`, and its payload followed by those of the continuation records after it (same
/// RPC sequence number), among the elements the GSP published.
fn image_message(image: &[u8], slot: u32) -> Option<(u32, Vec<u8>)> {
    let head = element_at(image, slot)?;
    let published = (write_ptr(image) % MSGQ_NUM_PAGES + MSGQ_NUM_PAGES - slot) % MSGQ_NUM_PAGES;
    let mut payload = payload_at(image, slot, &head);
    let mut used = head.elem_count.max(1);
    while used < published {
        let at = (slot + used) % MSGQ_NUM_PAGES;
        let Some(record) = element_at(image, at) else {
            break;
        };
        if record.rpc.function != u32::from(OurFunction::CONTINUATION_RECORD)
            || record.rpc.sequence != head.rpc.sequence
        {
            break;
        }
        payload.extend_from_slice(&payload_at(image, at, &record));
        used += record.elem_count.max(1);
    }
    Some((head.seq_num, payload))
}

/// Returns the line of one receive: the read pointer `before` and `after` it, and what it
/// returned (the function and payload handed over, or the errno), judged against what
/// `image` holds for the message at `before`.
fn line(image: &[u8], before: u32, after: u32, received: Result<(u32, &[u8])>) -> String {
    let (function, payload) = match received {
        Ok(message) => message,
        Err(e) => return format!("err {e:?} (the tree names none) rptr={after}"),
    };
    let (seq, held) = image_message(image, before).unwrap_or_default();
    let elems =
        (after % MSGQ_NUM_PAGES + MSGQ_NUM_PAGES - before % MSGQ_NUM_PAGES) % MSGQ_NUM_PAGES;
    let mut line = format!(
        "ok seq={seq} function={function} len={} elems={elems}",
        payload.len()
    );
    if payload != held {
        match held.starts_with(payload) {
            true => line += &format!(" cut of {}", held.len()),
            false => line += &format!(" unlike the image's {}", held.len()),
        }
    }
    line
}

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
    let gsp_wptr = write_ptr(image);
    let mut lines = Vec::new();
    while read_ptr()? != gsp_wptr {
        let before = read_ptr()?;
        // The function of the element at the read pointer, as the image has it: the type to
        // receive the message as.
        let function = element_at(image, before)
            .and_then(|header| MsgFunction::try_from(header.rpc.function).ok());
        let received = receive_captured(&cmdq, function);
        let after = read_ptr()?;
        let received = received
            .as_ref()
            .map(|(function, payload)| (u32::from(*function), &payload[..]))
            .map_err(|e| *e);
        lines.push(line(image, before, after, received));
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

    use nova_core::gsp::fw::MAX_ELEMENT_PAYLOAD;
    use zerocopy::IntoBytes;

    use super::*;

    /// A `gspq` image holding `messages` (function, payload) from slot 0, with the GSP's
    /// write pointer after them. A payload larger than one element is split as r570
    /// firmware splits it: a full head, then continuation records, each element's
    /// `rpc.length` its own chunk.
    fn image(messages: &[(u32, &[u8])]) -> Vec<u8> {
        let mut region = vec![0u8; GSPQ_BYTES];
        let (mut slot, mut seq) = (0, 0);
        for (sequence, (function, payload)) in messages.iter().enumerate() {
            for (i, chunk) in payload.chunks(MAX_ELEMENT_PAYLOAD).enumerate() {
                let function = match i {
                    0 => *function,
                    _ => OurFunction::CONTINUATION_RECORD.into(),
                };
                // CAST: a handful of messages.
                let mut header = GspMsgElement::new(seq, function, sequence as u32, chunk.len());
                header.rpc.rpc_result = 0;
                header.seal(chunk);
                let at = slot_offset(slot);
                region[at..at + ELEMENT_HEADER_SIZE].copy_from_slice(header.as_bytes());
                region[at + ELEMENT_HEADER_SIZE..][..chunk.len()].copy_from_slice(chunk);
                slot += header.elem_count;
                seq += 1;
            }
        }
        region[MSGQ_WRITE_PTR_OFFSET..MSGQ_WRITE_PTR_OFFSET + 4]
            .copy_from_slice(&slot.to_le_bytes());
        region
    }

    /// `UCODE_LIBOS_PRINT`.
    const LOG: u32 = 0x100c;

    /// `GSP_RM_CONTROL`, a function both trees know.
    const RM_CONTROL: u32 = 76;

    /// A payload of 3 000 bytes more than one element carries: a head of 16 slots and one
    /// continuation record of one slot.
    fn split_payload() -> Vec<u8> {
        // CAST: a byte of the index, a pattern.
        (0..MAX_ELEMENT_PAYLOAD + 3000)
            .map(|i| (i * 7) as u8)
            .collect()
    }

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
    fn a_damaged_element_is_an_err_line_with_the_read_pointer() {
        let mut region = image(&[(LOG, b"first")]);
        // A payload byte changed: the checksum no longer holds.
        region[slot_offset(0) + ELEMENT_HEADER_SIZE] ^= 0xff;
        let lines = replay(&region, 0).unwrap();
        // Pristine 7.3 leaves the element on the ring, the series consumes it.
        let end = lines.last().unwrap().strip_prefix("end rptr=").unwrap();
        assert_eq!(
            lines,
            [
                format!("err EIO (the tree names none) rptr={end}"),
                format!("end rptr={end}")
            ]
        );
    }

    #[test]
    fn a_split_message_handed_over_whole_is_one_line_with_its_length() {
        let payload = split_payload();
        let region = image(&[(RM_CONTROL, &payload)]);
        assert_eq!(
            line(&region, 0, 17, Ok((RM_CONTROL, &payload))),
            format!("ok seq=0 function=76 len={} elems=17", payload.len())
        );
    }

    #[test]
    fn a_split_message_handed_over_as_its_head_is_cut() {
        let payload = split_payload();
        let region = image(&[(RM_CONTROL, &payload)]);
        assert_eq!(
            line(
                &region,
                0,
                16,
                Ok((RM_CONTROL, &payload[..MAX_ELEMENT_PAYLOAD]))
            ),
            format!(
                "ok seq=0 function=76 len={MAX_ELEMENT_PAYLOAD} elems=16 cut of {}",
                payload.len()
            )
        );
    }

    #[test]
    fn bytes_the_image_does_not_hold_are_unlike_it() {
        let region = image(&[(LOG, b"first")]);
        assert_eq!(
            line(&region, 0, 1, Ok((LOG, b"first and more"))),
            "ok seq=0 function=4108 len=14 elems=1 unlike the image's 5"
        );
    }

    #[test]
    fn erange_is_an_err_line_not_ok() {
        let region = image(&[(LOG, b"first")]);
        assert_eq!(
            line(&region, 0, 1, Err(ERANGE)),
            "err ERANGE (the tree names none) rptr=1"
        );
    }

    /// Whatever the tree does with a split message, its line says what it handed over: the
    /// whole message over all its slots, or its head alone, cut.
    #[test]
    fn the_tree_s_receive_of_a_split_message_is_judged_by_what_it_hands_over() {
        let payload = split_payload();
        let lines = replay(&image(&[(RM_CONTROL, &payload)]), 0).unwrap();
        let whole = format!("ok seq=0 function=76 len={} elems=17", payload.len());
        let head = format!(
            "ok seq=0 function=76 len={MAX_ELEMENT_PAYLOAD} elems=16 cut of {}",
            payload.len()
        );
        assert!(lines[0] == whole || lines[0] == head, "{lines:?}");
    }

    #[test]
    fn refuses_an_image_of_another_size() {
        assert!(replay(&[0u8; 16], 0).unwrap_err().contains("0x40000"));
    }
}
