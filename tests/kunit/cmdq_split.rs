// SPDX-License-Identifier: GPL-2.0

//! An independent witness of split messages: elements written byte by byte from r570's
//! rule, not by the virtual GSP's encoder nor with the driver's layout types; every
//! receive of the driver reassembling them, the driver's send writing exactly them, and
//! the virtual GSP taking them as a command. The framing both sides share (`fw`'s header
//! validation and checksum) is so checked against bytes neither side made.
//!
//! The rule, as r570 firmware sends a message whose payload does not fit one element
//! (65 536 bytes less the 80 of the element and RPC headers): a full head of 16 slots,
//! then `CONTINUATION_RECORD` (71) elements with the same `rpc.sequence`, each element's
//! `rpc.length` the RPC header (32 bytes) plus its own chunk. A command is framed the
//! same, its `rpc_result` and `rpc_result_private` all ones until the GSP answers (as
//! nouveau sends them). `vgsp-tool replay-gspq` is checked on the same bytes by the host's
//! `replay` test.

use kernel::prelude::*;

/// The payload one element carries at most: 16 slots of 4 KiB less the 48-byte queue
/// element header and the 32-byte RPC header.
pub const R570_CHUNK: usize = 16 * 4096 - 48 - 32;

/// `NV_VGPU_MSG_FUNCTION_CONTINUATION_RECORD`.
pub const R570_CONTINUATION: u32 = 71;

/// Writes `value` little-endian at byte `at` of `el`.
fn put(el: &mut [u8], at: usize, value: u32) {
    el[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

/// One element as r570 lays it out: the queue element header (authentication tag and
/// AAD zero, `checkSum` at 0x20, `seqNum` at 0x24, `elemCount` at 0x28), the RPC header
/// at 0x30 (`header_version` 0x03000000, `signature` "VRPC", `length`, `function`,
/// `rpc_result` and `rpc_result_private` `NV_OK`, `sequence`, `spare`), then `chunk`.
/// `rpc.length` is `32 + announced`; the checksum is the XOR of the element's
/// little-endian 64-bit words (the last one zero-padded), its halves XORed together.
///
/// # Errors
///
/// - `ENOMEM` if the buffer cannot be had.
pub fn r570_element(
    seq_num: u32,
    function: u32,
    sequence: u32,
    chunk: &[u8],
    announced: usize,
) -> Result<KVec<u8>> {
    element(seq_num, function, sequence, chunk, announced, R570_NV_OK)
}

/// `NV_OK`: the `rpc_result` and `rpc_result_private` of a message of the GSP.
const R570_NV_OK: u32 = 0;

/// The `rpc_result` and `rpc_result_private` of a command, which the GSP has not yet
/// answered: all ones, as nouveau's `r535_gsp_rpc_get` fills them in.
const R570_UNANSWERED: u32 = 0xffff_ffff;

/// [`r570_element`] with `rpc_result` and `rpc_result_private` `result`.
fn element(
    seq_num: u32,
    function: u32,
    sequence: u32,
    chunk: &[u8],
    announced: usize,
    result: u32,
) -> Result<KVec<u8>> {
    let len = 80 + chunk.len();
    let mut el = KVec::new();
    el.resize(len.next_multiple_of(8), 0u8, GFP_KERNEL)?;
    put(&mut el, 0x24, seq_num);
    put(
        &mut el,
        0x28,
        u32::try_from(len.div_ceil(4096)).map_err(|_| EINVAL)?,
    );
    put(&mut el, 0x30, 0x0300_0000);
    put(&mut el, 0x34, u32::from_le_bytes(*b"VRPC"));
    put(
        &mut el,
        0x38,
        u32::try_from(32 + announced).map_err(|_| EINVAL)?,
    );
    put(&mut el, 0x3c, function);
    put(&mut el, 0x40, result);
    put(&mut el, 0x44, result);
    put(&mut el, 0x48, sequence);
    el[80..len].copy_from_slice(chunk);
    let sum = el.chunks_exact(8).fold(0u64, |sum, word| {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        sum ^ u64::from_le_bytes(w)
    });
    // CAST: the two halves of the sum, each 32 bits.
    put(&mut el, 0x20, ((sum >> 32) ^ (sum & 0xffff_ffff)) as u32);
    el.truncate(len);
    Ok(el)
}

/// The elements r570 sends for a message of `function` and RPC sequence `sequence`
/// carrying `payload`, numbered from `seq_num`, each with its slot count.
///
/// # Errors
///
/// - `ENOMEM` if the buffers cannot be had.
pub fn r570_message(
    seq_num: u32,
    function: u32,
    sequence: u32,
    payload: &[u8],
) -> Result<KVec<(KVec<u8>, u32)>> {
    elements(seq_num, function, sequence, payload, R570_NV_OK)
}

/// [`r570_message`] for a command the driver sends: its `rpc_result` and
/// `rpc_result_private` all ones.
///
/// # Errors
///
/// - `ENOMEM` if the buffers cannot be had.
pub fn r570_command(
    seq_num: u32,
    function: u32,
    sequence: u32,
    payload: &[u8],
) -> Result<KVec<(KVec<u8>, u32)>> {
    elements(seq_num, function, sequence, payload, R570_UNANSWERED)
}

/// The elements of a message whose `rpc_result` and `rpc_result_private` are `result`.
fn elements(
    seq_num: u32,
    function: u32,
    sequence: u32,
    payload: &[u8],
    result: u32,
) -> Result<KVec<(KVec<u8>, u32)>> {
    let mut elements = KVec::new();
    for (i, chunk) in payload.chunks(R570_CHUNK).enumerate() {
        let function = match i {
            0 => function,
            _ => R570_CONTINUATION,
        };
        let seq = seq_num.wrapping_add(u32::try_from(i).map_err(|_| EINVAL)?);
        let el = element(seq, function, sequence, chunk, chunk.len(), result)?;
        let slots = u32::try_from(el.len().div_ceil(4096)).map_err(|_| EINVAL)?;
        elements.push((el, slots), GFP_KERNEL)?;
    }
    Ok(elements)
}

/// The cases of the `nova_core_gsp_cmdq_split` suite.
#[kunit_tests(nova_core_gsp_cmdq_split)]
pub mod tests {
    use kernel::{
        prelude::*,
        time::{
            Delta,
            Instant,
            Monotonic, //
        },
    };
    use nova_core::gsp::{
        cmdq::{
            BenchSeam,
            RECORD_TIMEOUT, //
        },
        commands::{
            RmControl,
            RmControlHeader, //
        },
        fault::Fault,
        fw::{
            self,
            MsgFunction,
            CPUQ_OFFSET,
            MSGQ_WRITE_PTR_OFFSET, //
        },
    };
    use nova_testbench::{
        rpc::{
            Echo,
            EchoHeader,
            EchoReply,
            Raw,
            VGSP_ECHO,
            VGSP_SINK, //
        },
        ReceiveAny,
    };
    use vgsp::Vgsp;
    use zerocopy::IntoBytes;

    use super::{
        r570_command,
        r570_element,
        r570_message,
        R570_CHUNK, //
    };
    use crate::fixture::{
        check,
        Pair,
        LONG, //
    };

    /// Publishes the r570 elements of `payload` (function `function`, RPC sequence
    /// `sequence`) on `gspq`, numbered from the GSP's next element; returns the slots.
    fn post_message(
        gsp: &mut Vgsp<'_>,
        function: u32,
        sequence: u32,
        payload: &[u8],
    ) -> Result<u32> {
        let mut slots = 0;
        for (el, n) in r570_message(gsp.tx_seq(), function, sequence, payload)?.iter() {
            gsp.post_raw(el, *n)?;
            slots += n;
        }
        Ok(slots)
    }

    #[test]
    fn untyped_receive_reassembles_head_and_records() -> Result {
        let mut pair = Pair::new()?;
        let payload = Pair::pattern(2 * R570_CHUNK + 1000, 7)?;
        let slots = post_message(&mut pair.gsp, MsgFunction::NOP.into(), 12, &payload)?;
        check!(slots == 16 + 16 + 1)?;
        let msg = pair.cmdq.receive_any(LONG)?;
        check!(msg.function() == MsgFunction::NOP)?;
        check!((msg.sequence, msg.elem_count) == (12, slots))?;
        check!(msg.payload[..] == payload[..])?;
        check!(pair.cmdq.cpu_ptrs().1 == slots)
    }

    /// Awaits the reply to an echo of `len` bytes, which the witness sends as r570 would
    /// (the GSP does not run), and checks it reaches the caller whole.
    fn echo_reply_is_whole(len: usize) -> Result {
        let mut pair = Pair::new()?;
        let bytes = Pair::pattern(len, 8)?;
        let pending = pair.cmdq.submit(pair.bar.bar(), &Echo(&bytes))?;
        post_message(&mut pair.gsp, VGSP_ECHO.into(), pending.sequence(), &bytes)?;
        let reply = pending.wait(LONG)?;
        check!(reply.0[..] == bytes[..])
    }

    #[test]
    fn typed_reply_of_an_echo_is_whole() -> Result {
        echo_reply_is_whole(R570_CHUNK + 5000)
    }

    #[test]
    fn typed_reply_ending_on_a_full_element_is_whole_at_once() -> Result {
        // Nothing follows the second full element: only the length expected ends it.
        echo_reply_is_whole(2 * R570_CHUNK)
    }

    #[test]
    fn typed_reply_of_an_rm_control_is_whole() -> Result {
        let mut pair = Pair::new()?;
        let params = Pair::pattern(3 * R570_CHUNK, 5)?;
        let control = RmControl {
            h_client: 1,
            h_object: 2,
            cmd: 3,
            params: &params,
        };
        let pending = pair.cmdq.submit(pair.bar.bar(), &control)?;
        let header = RmControlHeader {
            h_client: 1,
            h_object: 2,
            cmd: 3,
            status: 0,
            params_size: u32::try_from(params.len())?,
            flags: 0,
        };
        let mut payload = KVec::new();
        payload.extend_from_slice(header.as_bytes(), GFP_KERNEL)?;
        payload.extend_from_slice(&params, GFP_KERNEL)?;
        post_message(
            &mut pair.gsp,
            MsgFunction::GSP_RM_CONTROL.into(),
            pending.sequence(),
            &payload,
        )?;
        let reply = pending.wait(LONG)?;
        check!(reply.status == 0)?;
        check!(reply.params[..] == params[..])
    }

    #[test]
    fn full_last_element_with_nothing_after_is_whole_after_the_grace_at_zero_timeout() -> Result {
        let mut pair = Pair::new()?;
        // One element exactly full, nobody expecting a length, nothing published after.
        let payload = Pair::pattern(R570_CHUNK, 11)?;
        let slots = post_message(&mut pair.gsp, MsgFunction::NOP.into(), 4, &payload)?;
        check!(slots == 16)?;
        // A zero timeout too waits the grace for a record, then delivers the message.
        let start = Instant::<Monotonic>::now();
        let msg = pair.cmdq.receive_any(Delta::ZERO)?;
        check!(start.elapsed().as_nanos() >= RECORD_TIMEOUT.as_nanos())?;
        check!((msg.function(), msg.sequence) == (MsgFunction::NOP, 4))?;
        check!(msg.elem_count == 16)?;
        check!(msg.payload[..] == payload[..])?;
        check!(pair.cmdq.cpu_ptrs().1 == 16)
    }

    #[test]
    fn head_announcing_the_whole_length_is_refused() -> Result {
        let mut pair = Pair::new()?;
        let payload = Pair::pattern(R570_CHUNK + 100, 4)?;
        let seq = pair.gsp.tx_seq();
        let head = r570_element(
            seq,
            MsgFunction::NOP.into(),
            3,
            &payload[..R570_CHUNK],
            payload.len(),
        )?;
        pair.gsp.post_raw(&head, 16)?;
        check!(pair.cmdq.receive_any(LONG).err() == Some(EIO))?;
        check!(pair.cmdq.last_fault() == Some(Fault::LengthBeyondElement))?;
        check!(pair.cmdq.cpu_ptrs().1 == 16)
    }

    #[test]
    fn the_driver_writes_a_split_rpc_as_r570_does() -> Result {
        let pair = Pair::new()?;
        let payload = Pair::pattern(2 * R570_CHUNK + 1000, 9)?;
        let function = VGSP_SINK;
        let sequence = pair
            .cmdq
            .post(pair.bar.bar(), &Raw::<{ VGSP_SINK.0 }>(&payload))?;
        let view = pair.view();
        let mut slot = 0;
        for (want, n) in r570_command(0, function.into(), sequence, &payload)?.iter() {
            let mut got = KVec::new();
            got.resize(want.len(), 0u8, GFP_KERNEL)?;
            view.read_bytes(CPUQ_OFFSET + fw::slot_offset(slot), &mut got)?;
            check!(got[..] == want[..])?;
            slot += n;
        }
        check!(pair.cmdq.cpu_ptrs().0 == slot)
    }

    #[test]
    fn the_gsp_takes_a_split_command_written_as_r570_does() -> Result {
        let mut pair = Pair::new()?;
        let bytes = Pair::pattern(2 * R570_CHUNK + 1000, 6)?;
        let header = EchoHeader {
            length: u32::try_from(bytes.len())?,
            reserved: 0,
        };
        let mut payload = KVec::new();
        payload.extend_from_slice(header.as_bytes(), GFP_KERNEL)?;
        payload.extend_from_slice(&bytes, GFP_KERNEL)?;
        // Where the driver would have written them, published as the driver would.
        let view = pair.view();
        let mut slot = 0;
        for (el, n) in r570_command(0, VGSP_ECHO.into(), 5, &payload)?.iter() {
            view.write_bytes(CPUQ_OFFSET + fw::slot_offset(slot), el)?;
            slot += n;
        }
        view.write32(CPUQ_OFFSET + MSGQ_WRITE_PTR_OFFSET, slot)?;
        pair.gsp_run()?;
        let reply = pair.cmdq.receive_any(LONG)?;
        check!(reply.function() == VGSP_ECHO)?;
        check!(reply.sequence == 5)?;
        let echo: EchoReply = pair.cmdq.read_msg(&reply)?;
        check!(echo.0[..] == bytes[..])
    }
}
