// SPDX-License-Identifier: GPL-2.0

//! Every errno of the command queue, and that the next valid message still arrives.

use kernel::prelude::*;

/// The cases of the `nova_core_gsp_cmdq_errors` suite.
#[kunit_tests(nova_core_gsp_cmdq_errors)]
pub mod tests {
    use kernel::{
        prelude::*,
        time::{
            delay::fsleep,
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
        commands::GspInitDone,
        fault::{
            Fault,
            Origin, //
        },
        fw::{
            self,
            GspMsgElement,
            MsgFunction,
            GSPQ_OFFSET,
            MAX_ELEMENT_PAYLOAD,
            MAX_RPC_PAYLOAD,
            MSGQ_READ_PTR_OFFSET,
            MSGQ_WRITE_PTR_OFFSET,
            //
        },
    };
    use nova_testbench::{
        rpc::{
            Echo,
            Raw,
            VGSP_ECHO, //
        },
        ReceiveAny,
    };
    use zerocopy::{
        FromBytes,
        IntoBytes, //
    };

    use vdev::run_beside;
    use vgsp::Vgsp;

    use crate::fixture::{
        check,
        Pair,
        LONG,
        SHORT, //
    };

    /// Returns a valid one-slot `UCODE_LIBOS_PRINT` element saying `text`.
    pub(crate) fn log_element(pair: &Pair, text: &[u8]) -> Result<KVec<u8>> {
        pair.gsp
            .encode_element(MsgFunction::UCODE_LIBOS_PRINT.into(), 0, text)
    }

    /// Edits the header of an encoded element and recomputes its checksum over the
    /// header and `payload_len` bytes.
    fn edit(el: &mut [u8], payload_len: usize, f: impl FnOnce(&mut GspMsgElement)) {
        let (mut h, _) = GspMsgElement::read_from_prefix(el).unwrap();
        f(&mut h);
        h.seal(&el[80..80 + payload_len]);
        el[..80].copy_from_slice(h.as_bytes());
    }

    /// Posts a valid log line and checks the driver receives exactly it.
    pub(crate) fn next_valid_arrives(pair: &mut Pair) -> Result {
        let good = log_element(pair, b"still alive")?;
        pair.gsp.post_raw(&good, 1)?;
        let msg = pair.cmdq.receive_any(LONG)?;
        check!(msg.function() == MsgFunction::UCODE_LIBOS_PRINT)?;
        check!(msg.payload[..] == b"still alive"[..])?;
        Ok(())
    }

    /// Receives within `timeout` and checks the receive fails with `fault`'s errno and
    /// names `fault`.
    fn expect_refused(pair: &mut Pair, timeout: Delta, fault: Fault) -> Result {
        check!(pair.cmdq.receive_any(timeout).err() == Some(Error::from(fault)))?;
        check!(pair.cmdq.last_fault() == Some(fault))?;
        Ok(())
    }

    /// Posts the full head of an RPC of `function` and RPC sequence `sequence`, as
    /// firmware sends one whose payload does not fit an element (its `rpc.length` its own
    /// chunk); returns the head's payload.
    fn post_head(gsp: &mut Vgsp<'_>, function: u32, sequence: u32) -> Result<KVec<u8>> {
        let chunk = Pair::pattern(MAX_ELEMENT_PAYLOAD, 9)?;
        let head = gsp.encode_element(function, sequence, &chunk)?;
        gsp.post_raw(&head, 16)?;
        Ok(chunk)
    }

    /// Posts the full head of a `NOP` of RPC sequence 5 ([`post_head`]).
    fn post_split_head(pair: &mut Pair) -> Result<KVec<u8>> {
        post_head(&mut pair.gsp, MsgFunction::NOP.into(), 5)
    }

    /// Posts a continuation record of RPC sequence `sequence` carrying `chunk`.
    fn post_continuation(gsp: &mut Vgsp<'_>, sequence: u32, chunk: &[u8]) -> Result {
        let el = gsp.encode_element(MsgFunction::CONTINUATION_RECORD.into(), sequence, chunk)?;
        gsp.post_raw(&el, fw::element::elem_count_for(chunk.len()))
    }

    /// Posts `el` in `slots` slots, expects `fault` with every published slot consumed,
    /// then a valid message.
    fn expect_rejected(pair: &mut Pair, el: &[u8], slots: u32, fault: Fault) -> Result {
        pair.gsp.post_raw(el, slots)?;
        expect_refused(pair, LONG, fault)?;
        let (_, rptr) = pair.cmdq.cpu_ptrs();
        check!(rptr == pair.gsp.gsp_ptrs().0)?;
        next_valid_arrives(pair)
    }

    #[test]
    fn bad_checksum_is_eio() -> Result {
        let mut pair = Pair::new()?;
        let mut el = log_element(&pair, b"corrupt me")?;
        el[85] ^= 0x40;
        expect_rejected(&mut pair, &el, 1, Fault::BadChecksum)
    }

    #[test]
    fn wrong_signature_is_eio() -> Result {
        let mut pair = Pair::new()?;
        let mut el = log_element(&pair, b"x")?;
        edit(&mut el, 1, |h| {
            h.rpc.signature = u32::from_le_bytes(*b"NOPE")
        });
        expect_rejected(&mut pair, &el, 1, Fault::BadSignature)
    }

    #[test]
    fn unsupported_header_version_is_eio() -> Result {
        let mut pair = Pair::new()?;
        let mut el = log_element(&pair, b"x")?;
        edit(&mut el, 1, |h| h.rpc.header_version = 0x0200_0000);
        expect_rejected(&mut pair, &el, 1, Fault::UnsupportedHeaderVersion)
    }

    #[test]
    fn zero_element_count_is_eio() -> Result {
        let mut pair = Pair::new()?;
        let mut el = log_element(&pair, b"x")?;
        edit(&mut el, 1, |h| h.elem_count = 0);
        expect_rejected(&mut pair, &el, 1, Fault::ElementCountZero)
    }

    #[test]
    fn element_count_above_sixteen_is_eio() -> Result {
        let mut pair = Pair::new()?;
        let mut el = log_element(&pair, b"x")?;
        edit(&mut el, 1, |h| h.elem_count = 17);
        expect_rejected(&mut pair, &el, 20, Fault::ElementCountAbove16)
    }

    #[test]
    fn element_count_beyond_published_slots_is_eio() -> Result {
        let mut pair = Pair::new()?;
        let mut el = log_element(&pair, b"x")?;
        edit(&mut el, 1, |h| h.elem_count = 3);
        expect_rejected(&mut pair, &el, 2, Fault::ElementCountBeyondPublished)
    }

    #[test]
    fn rpc_length_below_header_is_eio() -> Result {
        let mut pair = Pair::new()?;
        let mut el = log_element(&pair, b"x")?;
        edit(&mut el, 1, |h| h.rpc.length = 31);
        expect_rejected(&mut pair, &el, 1, Fault::LengthBelowHeader)
    }

    #[test]
    fn rpc_length_inconsistent_with_element_count_is_eio() -> Result {
        let mut pair = Pair::new()?;
        let mut el = log_element(&pair, b"short payload")?;
        edit(&mut el, 13, |h| h.rpc.length = 32 + 5000);
        expect_rejected(&mut pair, &el, 1, Fault::LengthInconsistent)
    }

    #[test]
    fn write_pointer_outside_ring_is_eio_and_consumes_nothing() -> Result {
        let mut pair = Pair::new()?;
        pair.view()
            .write32(GSPQ_OFFSET + MSGQ_WRITE_PTR_OFFSET, 63)?;
        expect_refused(&mut pair, SHORT, Fault::PointerOutsideRing)?;
        assert_eq!(pair.cmdq.cpu_ptrs(), (0, 0));
        pair.view()
            .write32(GSPQ_OFFSET + MSGQ_WRITE_PTR_OFFSET, 0)?;
        next_valid_arrives(&mut pair)
    }

    #[test]
    fn read_pointer_outside_ring_fails_send_with_eio() -> Result {
        let pair = Pair::new()?;
        pair.view()
            .write32(GSPQ_OFFSET + MSGQ_READ_PTR_OFFSET, 99)?;
        let r = pair
            .cmdq
            .post(pair.bar.bar(), &Raw::<{ MsgFunction::NOP.0 }>(b"x"));
        assert_eq!(r, Err(EIO));
        assert_eq!(pair.cmdq.cpu_ptrs(), (0, 0));
        Ok(())
    }

    #[test]
    fn unknown_function_is_not_the_message_asked_for_and_consumed() -> Result {
        let mut pair = Pair::new()?;
        let el = pair.gsp.encode_element(0x0bad, 0, b"?")?;
        pair.gsp.post_raw(&el, 1)?;
        // Received, then read: not the message asked for, as another function is.
        let msg = pair.cmdq.receive_any(LONG)?;
        assert_eq!(pair.cmdq.read_msg::<GspInitDone>(&msg).err(), Some(ERANGE));
        // The receive itself succeeded: the typed check refused the function.
        assert_eq!(pair.cmdq.last_fault(), Some(Fault::UnknownFunction));
        next_valid_arrives(&mut pair)
    }

    #[test]
    fn unknown_function_is_skipped_by_a_wait_that_then_gets_its_reply() -> Result {
        let mut pair = Pair::new()?;
        let pending = pair.cmdq.submit(pair.bar.bar(), &Echo(b"ping"))?;
        // Numbered as the reply awaited, ahead of it: it answers no command of ours.
        let el = pair.gsp.encode_element(0x0bad, pending.sequence(), b"?")?;
        pair.gsp.post_raw(&el, 1)?;
        pair.gsp.run_until_idle()?;
        let reply = pending.wait(LONG)?;
        check!(reply.0[..] == b"ping"[..])?;
        check!(pair.cmdq.cpu_ptrs().1 == 2)?;
        // Consumed and skipped, no error: nobody waited for it.
        check!(pair.cmdq.delivery().dropped == 1)?;
        check!(pair.cmdq.last_fault().is_none())?;
        next_valid_arrives(&mut pair)
    }

    #[test]
    fn other_function_is_erange_and_consumed() -> Result {
        let mut pair = Pair::new()?;
        let el = log_element(&pair, b"not the one")?;
        pair.gsp.post_raw(&el, 1)?;
        let msg = pair.cmdq.receive_any(LONG)?;
        assert_eq!(pair.cmdq.read_msg::<GspInitDone>(&msg).err(), Some(ERANGE));
        // The receive itself succeeded: the typed check refused the function.
        assert_eq!(pair.cmdq.last_fault(), Some(Fault::OtherFunction));
        next_valid_arrives(&mut pair)
    }

    #[test]
    fn nonzero_rpc_result_is_einval() -> Result {
        let mut pair = Pair::new()?;
        let mut el = pair
            .gsp
            .encode_element(MsgFunction::GSP_INIT_DONE.into(), 0, &[0; 4])?;
        edit(&mut el, 4, |h| h.rpc.rpc_result = 0x1f);
        pair.gsp.post_raw(&el, 1)?;
        let msg = pair.cmdq.receive_any(LONG)?;
        assert_eq!(pair.cmdq.read_msg::<GspInitDone>(&msg).err(), Some(EINVAL));
        // The receive itself succeeded: the typed check refused the result.
        assert_eq!(pair.cmdq.last_fault(), Some(Fault::ReplyReportsError));
        next_valid_arrives(&mut pair)
    }

    #[test]
    fn short_payload_of_typed_message_is_eio() -> Result {
        let mut pair = Pair::new()?;
        let el = pair
            .gsp
            .encode_element(MsgFunction::GSP_INIT_DONE.into(), 0, &[0; 2])?;
        pair.gsp.post_raw(&el, 1)?;
        let msg = pair.cmdq.receive_any(LONG)?;
        assert_eq!(pair.cmdq.read_msg::<GspInitDone>(&msg).err(), Some(EIO));
        // Shorter than the type's fixed part: its read refuses it. (A reply shorter than
        // its command expects is refused by the receive already:
        // `reply_shorter_than_its_command_expects_is_eio_to_its_caller`.)
        assert_eq!(pair.cmdq.last_fault(), Some(Fault::ReplyUndecodable));
        next_valid_arrives(&mut pair)
    }

    #[test]
    fn long_payload_of_typed_message_is_eio_from_its_decoder() -> Result {
        let mut pair = Pair::new()?;
        let el = pair
            .gsp
            .encode_element(MsgFunction::GSP_INIT_DONE.into(), 0, &[0; 8])?;
        pair.gsp.post_raw(&el, 1)?;
        let msg = pair.cmdq.receive_any(LONG)?;
        assert_eq!(pair.cmdq.read_msg::<GspInitDone>(&msg).err(), Some(EIO));
        // The receive itself succeeded: the `EIO` is the decoder's.
        assert_eq!(pair.cmdq.last_fault(), Some(Fault::ReplyUndecodable));
        next_valid_arrives(&mut pair)
    }

    #[test]
    fn oversized_command_is_emsgsize() -> Result {
        let pair = Pair::new()?;
        // Beyond what `kmalloc` gives in a kernel: `vmalloc` memory there.
        let mut big = KVVec::new();
        big.resize(MAX_RPC_PAYLOAD + 1, 0u8, GFP_KERNEL)?;
        let r = pair
            .cmdq
            .post(pair.bar.bar(), &Raw::<{ MsgFunction::NOP.0 }>(&big));
        assert_eq!(r, Err(EMSGSIZE));
        assert_eq!(pair.cmdq.cpu_ptrs(), (0, 0));
        Ok(())
    }

    #[test]
    fn stray_continuation_record_is_skipped() -> Result {
        let mut pair = Pair::new()?;
        let el = pair
            .gsp
            .encode_element(MsgFunction::CONTINUATION_RECORD.into(), 0, b"orphan")?;
        pair.gsp.post_raw(&el, 1)?;
        // Skipped as a message for others: the wait gets the next message, no error.
        next_valid_arrives(&mut pair)?;
        check!(pair.cmdq.cpu_ptrs() == (0, 2))?;
        check!(pair.cmdq.last_fault().is_none())
    }

    /// Checks that the next message received is the log line `text`.
    fn log_line_arrives(pair: &mut Pair, text: &[u8]) -> Result {
        let msg = pair.cmdq.receive_any(LONG)?;
        check!(msg.function() == MsgFunction::UCODE_LIBOS_PRINT)?;
        check!(msg.payload[..] == *text)
    }

    /// Posts the log line `text` after a full head whose message nobody expects a length
    /// of, and checks that the line ends that message, received whole as its head alone
    /// with the line left on the ring, and is then received as itself.
    fn head_ended_by(pair: &mut Pair, head: &[u8], text: &[u8]) -> Result {
        let line = log_element(pair, text)?;
        pair.gsp.post_raw(&line, 1)?;
        let msg = pair.cmdq.receive_any(LONG)?;
        check!(msg.function() == MsgFunction::NOP)?;
        check!((msg.sequence, msg.elem_count) == (5, 16))?;
        check!(msg.payload[..] == *head)?;
        check!(pair.cmdq.cpu_ptrs() == (0, 16))?;
        log_line_arrives(pair, text)?;
        check!(pair.cmdq.cpu_ptrs() == (0, 17))
    }

    #[test]
    fn full_head_followed_by_another_message_is_whole() -> Result {
        let mut pair = Pair::new()?;
        let head = post_split_head(&mut pair)?;
        head_ended_by(&mut pair, &head, b"next")?;
        next_valid_arrives(&mut pair)
    }

    /// Checks that the next message received within `timeout` is the full head `head`
    /// of [`post_split_head`] alone, whole.
    fn head_alone_arrives(pair: &mut Pair, timeout: Delta, head: &[u8]) -> Result {
        let msg = pair.cmdq.receive_any(timeout)?;
        check!(msg.function() == MsgFunction::NOP)?;
        check!((msg.sequence, msg.elem_count) == (5, 16))?;
        check!(msg.payload[..] == *head)?;
        check!(pair.cmdq.cpu_ptrs() == (0, 16))
    }

    #[test]
    fn full_element_with_nothing_after_is_whole_after_the_grace() -> Result {
        let mut pair = Pair::new()?;
        let head = post_split_head(&mut pair)?;
        // No timeout for a complete message: the grace ends it, not the caller's
        // deadline, which is much later.
        let start = Instant::<Monotonic>::now();
        head_alone_arrives(&mut pair, LONG, &head)?;
        let took = start.elapsed().as_nanos();
        check!(took >= RECORD_TIMEOUT.as_nanos() && took < LONG.as_nanos())?;
        check!(pair.cmdq.last_fault().is_none())?;
        next_valid_arrives(&mut pair)
    }

    #[test]
    fn record_within_the_grace_continues_a_receive_with_zero_timeout() -> Result {
        let mut pair = Pair::new()?;
        let head = post_split_head(&mut pair)?;
        let tail = Pair::pattern(100, 10)?;
        // The record comes after the caller's deadline, a zero timeout, but within the
        // grace: it continues the message.
        let Pair { gsp, cmdq, .. } = &mut pair;
        let (posted, msg) = run_beside(
            || {
                fsleep(Delta::from_millis(10));
                post_continuation(gsp, 5, &tail)
            },
            || cmdq.receive_any(Delta::ZERO),
        );
        posted?;
        let msg = msg?;
        check!((msg.sequence, msg.elem_count) == (5, 17))?;
        check!(msg.payload[..MAX_ELEMENT_PAYLOAD] == head[..])?;
        check!(msg.payload[MAX_ELEMENT_PAYLOAD..] == tail[..])?;
        next_valid_arrives(&mut pair)
    }

    #[test]
    fn continuation_after_the_grace_is_a_stray_record() -> Result {
        let mut pair = Pair::new()?;
        let head = post_split_head(&mut pair)?;
        head_alone_arrives(&mut pair, SHORT, &head)?;
        // Too late for its message, which was whole: skipped.
        let tail = Pair::pattern(100, 10)?;
        post_continuation(&mut pair.gsp, 5, &tail)?;
        next_valid_arrives(&mut pair)?;
        check!(pair.cmdq.cpu_ptrs() == (0, 18))
    }

    #[test]
    fn reply_shorter_than_its_command_expects_is_eio_to_its_caller() -> Result {
        let mut pair = Pair::new()?;
        // The echo's reply is as long as its bytes; the GSP does not run, and a forged
        // reply of one full element and a short record comes instead.
        let bytes = Pair::pattern(MAX_ELEMENT_PAYLOAD + 100, 3)?;
        let pending = pair.cmdq.submit(pair.bar.bar(), &Echo(&bytes))?;
        post_head(&mut pair.gsp, VGSP_ECHO.into(), pending.sequence())?;
        post_continuation(&mut pair.gsp, pending.sequence(), &bytes[..50])?;
        check!(pending.wait(LONG).err() == Some(EIO))?;
        check!(pair.cmdq.last_fault() == Some(Fault::MessageShorterThanExpected))?;
        check!(pair.cmdq.cpu_ptrs().1 == 17)?;
        next_valid_arrives(&mut pair)
    }

    #[test]
    fn reply_of_exactly_two_full_elements_needs_no_third() -> Result {
        let mut pair = Pair::new()?;
        // With the length known, a reply ending on a full element is whole at once; with
        // none, it would wait for the element after it.
        let bytes = Pair::pattern(2 * MAX_ELEMENT_PAYLOAD, 4)?;
        let pending = pair.cmdq.submit(pair.bar.bar(), &Echo(&bytes))?;
        let (head, tail) = bytes.split_at(MAX_ELEMENT_PAYLOAD);
        let el = pair
            .gsp
            .encode_element(VGSP_ECHO.into(), pending.sequence(), head)?;
        pair.gsp.post_raw(&el, 16)?;
        post_continuation(&mut pair.gsp, pending.sequence(), tail)?;
        let reply = pending.wait(LONG)?;
        check!(reply.0[..] == bytes[..])?;
        check!(pair.cmdq.cpu_ptrs().1 == 32)?;
        next_valid_arrives(&mut pair)
    }

    #[test]
    fn write_pointer_moving_backwards_is_eio_and_consumes_nothing() -> Result {
        let mut pair = Pair::new()?;
        for text in [&b"one"[..], b"two", b"three"] {
            let el = log_element(&pair, text)?;
            pair.gsp.post_raw(&el, 1)?;
        }
        assert!(pair.cmdq.receive_any(LONG)?.payload[..] == b"one"[..]);
        // Two slots were published and not yet consumed; the GSP takes one back.
        pair.view()
            .write32(GSPQ_OFFSET + MSGQ_WRITE_PTR_OFFSET, 2)?;
        expect_refused(&mut pair, SHORT, Fault::WritePointerBackwards)?;
        assert_eq!(pair.cmdq.cpu_ptrs(), (0, 1));
        pair.view()
            .write32(GSPQ_OFFSET + MSGQ_WRITE_PTR_OFFSET, 3)?;
        assert!(pair.cmdq.receive_any(LONG)?.payload[..] == b"two"[..]);
        assert!(pair.cmdq.receive_any(LONG)?.payload[..] == b"three"[..]);
        next_valid_arrives(&mut pair)
    }

    #[test]
    fn rpc_length_above_the_element_is_eio() -> Result {
        let mut pair = Pair::new()?;
        let mut el = log_element(&pair, b"x")?;
        edit(&mut el, 1, |h| {
            h.rpc.length = 32 + MAX_ELEMENT_PAYLOAD as u32 + 1
        });
        expect_rejected(&mut pair, &el, 1, Fault::LengthBeyondElement)
    }

    #[test]
    fn head_announcing_its_whole_rpc_is_eio() -> Result {
        let mut pair = Pair::new()?;
        // The convention no firmware follows: a full head whose `rpc.length` is the whole
        // RPC's.
        let chunk = Pair::pattern(MAX_ELEMENT_PAYLOAD, 9)?;
        let mut head = pair
            .gsp
            .encode_element(MsgFunction::NOP.into(), 5, &chunk)?;
        edit(&mut head, MAX_ELEMENT_PAYLOAD, |h| {
            h.rpc.length = 32 + MAX_ELEMENT_PAYLOAD as u32 + 100
        });
        pair.gsp.post_raw(&head, 16)?;
        expect_refused(&mut pair, LONG, Fault::LengthBeyondElement)?;
        check!(pair.cmdq.cpu_ptrs() == (0, 16))?;
        // Its continuation record then has no head: skipped.
        post_continuation(&mut pair.gsp, 5, &chunk[..100])?;
        next_valid_arrives(&mut pair)?;
        check!(pair.cmdq.cpu_ptrs() == (0, 18))
    }

    #[test]
    fn continuation_records_beyond_the_largest_rpc_are_eio() -> Result {
        let mut pair = Pair::new()?;
        let chunk = Pair::pattern(MAX_ELEMENT_PAYLOAD, 2)?;
        // The head and full records, as many as take the message past the largest RPC:
        // more than the ring holds, so the GSP posts them beside the receive, each as
        // room frees up, back to back as firmware does.
        let records = MAX_RPC_PAYLOAD / MAX_ELEMENT_PAYLOAD;
        let Pair { gsp, cmdq, .. } = &mut pair;
        let (posted, err) = run_beside(
            || {
                post_head(gsp, MsgFunction::NOP.into(), 5)?;
                for _ in 0..records {
                    // Gives up within about `LONG` if the receive stops taking them.
                    let mut naps = 0;
                    while !gsp.has_room(16)? {
                        if naps == LONG.as_micros_ceil() / 10 {
                            return Err(ETIMEDOUT);
                        }
                        fsleep(Delta::from_micros(10));
                        naps += 1;
                    }
                    post_continuation(gsp, 5, &chunk)?;
                }
                Ok(())
            },
            || cmdq.receive_any(LONG).err(),
        );
        posted?;
        check!(err == Some(EIO))?;
        check!(pair.cmdq.last_fault() == Some(Fault::ContinuationsBeyondLargestRpc))?;
        check!((records + 1) * MAX_ELEMENT_PAYLOAD > MAX_RPC_PAYLOAD)?;
        check!(records * MAX_ELEMENT_PAYLOAD <= MAX_RPC_PAYLOAD)?;
        next_valid_arrives(&mut pair)
    }

    #[test]
    fn sequence_number_going_back_is_eio_and_consumed() -> Result {
        let mut pair = Pair::new()?;
        let first = log_element(&pair, b"first")?;
        pair.gsp.post_raw(&first, 1)?;
        pair.cmdq.receive_any(LONG)?;
        // The GSP sends an element numbered like the one before.
        let mut again = log_element(&pair, b"replayed")?;
        edit(&mut again, 8, |h| h.seq_num = 0);
        pair.gsp.post_raw(&again, 1)?;
        expect_refused(&mut pair, LONG, Fault::SequenceWentBack)?;
        assert_eq!(pair.cmdq.cpu_ptrs(), (0, 2));
        next_valid_arrives(&mut pair)
    }

    #[test]
    fn records_numbered_after_the_previous_one_continue_the_message() -> Result {
        let mut pair = Pair::new()?;
        let head = post_split_head(&mut pair)?;
        // As RM numbers them: each record an RPC of its own, after the one before.
        let chunk = Pair::pattern(MAX_ELEMENT_PAYLOAD, 11)?;
        post_continuation(&mut pair.gsp, 6, &chunk)?;
        post_continuation(&mut pair.gsp, 7, &head[..10])?;
        let msg = pair.cmdq.receive_any(LONG)?;
        check!((msg.sequence, msg.elem_count) == (5, 33))?;
        check!(msg.payload.len() == 2 * MAX_ELEMENT_PAYLOAD + 10)?;
        check!(msg.payload[MAX_ELEMENT_PAYLOAD..2 * MAX_ELEMENT_PAYLOAD] == chunk[..])?;
        check!(pair.cmdq.cpu_ptrs() == (0, 33))?;
        next_valid_arrives(&mut pair)
    }

    #[test]
    fn continuation_of_another_sequence_ends_the_message_and_is_skipped() -> Result {
        let mut pair = Pair::new()?;
        let head = post_split_head(&mut pair)?;
        // Numbered as neither the head (5) nor the record after it (6).
        post_continuation(&mut pair.gsp, 9, &head[..10])?;
        // The record ends the head's message and stays on the ring.
        head_alone_arrives(&mut pair, LONG, &head)?;
        // Then it has no message to continue: skipped.
        next_valid_arrives(&mut pair)?;
        check!(pair.cmdq.cpu_ptrs() == (0, 18))?;
        check!(pair.cmdq.last_fault().is_none())
    }

    #[test]
    fn continuation_after_the_message_ends_is_skipped() -> Result {
        let mut pair = Pair::new()?;
        let head = post_split_head(&mut pair)?;
        // The record of 10 bytes is not full: the message ends with it.
        post_continuation(&mut pair.gsp, 5, &head[..10])?;
        post_continuation(&mut pair.gsp, 5, &head[..10])?;
        let msg = pair.cmdq.receive_any(LONG)?;
        check!(msg.payload.len() == MAX_ELEMENT_PAYLOAD + 10)?;
        check!(pair.cmdq.cpu_ptrs() == (0, 17))?;
        next_valid_arrives(&mut pair)?;
        check!(pair.cmdq.cpu_ptrs() == (0, 19))
    }

    #[test]
    fn element_wrapping_the_ring_end_past_the_published_slots_is_eio() -> Result {
        let mut pair = Pair::new()?;
        for _ in 0..60 {
            let el = log_element(&pair, b"fill")?;
            pair.gsp.post_raw(&el, 1)?;
            pair.cmdq.receive_any(LONG)?;
        }
        // At slot 60 an element claims five slots (60, 61, 62, 0, 1); three are published.
        let mut el = log_element(&pair, b"x")?;
        edit(&mut el, 1, |h| h.elem_count = 5);
        pair.gsp.post_raw(&el, 3)?;
        expect_refused(&mut pair, LONG, Fault::ElementCountBeyondPublished)?;
        // Every published slot was dropped: the read pointer wrapped to 0.
        assert_eq!(pair.cmdq.cpu_ptrs(), (0, 0));
        next_valid_arrives(&mut pair)
    }

    #[test]
    fn gsp_that_stops_mid_run_times_out_and_the_queue_works_after() -> Result {
        let mut pair = Pair::new()?;
        let seq = pair.cmdq.post(pair.bar.bar(), &Echo(b"are you there"))?;
        // The GSP does not run.
        expect_refused(&mut pair, SHORT, Fault::NothingPublished)?;
        // It comes back: the late reply arrives, then the queue goes on.
        pair.gsp_run()?;
        let reply = pair.cmdq.receive_any(LONG)?;
        assert_eq!(
            (reply.sequence, &reply.payload[..]),
            (seq, &b"are you there"[..])
        );
        let seq = pair.cmdq.post(pair.bar.bar(), &Echo(b"again"))?;
        pair.gsp_run()?;
        assert_eq!(pair.cmdq.receive_any(LONG)?.sequence, seq);
        Ok(())
    }

    /// Makes a valid encoded element malformed, in place.
    type Corrupt = fn(&mut [u8]);

    #[test]
    fn every_refusal_names_its_reason() -> Result {
        // Each malformed one-byte log line, the slots it is posted in, and its reason.
        let classes: [(Corrupt, u32, Fault); 9] = [
            (|el| el[80] ^= 0x40, 1, Fault::BadChecksum),
            (
                |el| edit(el, 1, |h| h.rpc.signature = 0),
                1,
                Fault::BadSignature,
            ),
            (
                |el| edit(el, 1, |h| h.rpc.header_version = 0x0200_0000),
                1,
                Fault::UnsupportedHeaderVersion,
            ),
            (
                |el| edit(el, 1, |h| h.elem_count = 0),
                1,
                Fault::ElementCountZero,
            ),
            (
                |el| edit(el, 1, |h| h.elem_count = 17),
                20,
                Fault::ElementCountAbove16,
            ),
            (
                |el| edit(el, 1, |h| h.elem_count = 3),
                2,
                Fault::ElementCountBeyondPublished,
            ),
            (
                |el| edit(el, 1, |h| h.rpc.length = 31),
                1,
                Fault::LengthBelowHeader,
            ),
            (
                |el| {
                    edit(el, 1, |h| {
                        h.rpc.length = 32 + MAX_ELEMENT_PAYLOAD as u32 + 1
                    })
                },
                1,
                Fault::LengthBeyondElement,
            ),
            (
                |el| edit(el, 1, |h| h.rpc.length = 32 + 5000),
                1,
                Fault::LengthInconsistent,
            ),
        ];
        let mut pair = Pair::new()?;
        // Back to back, with no valid message between: each reason is its own refusal's.
        for (corrupt, slots, reason) in classes {
            let mut el = log_element(&pair, b"x")?;
            corrupt(&mut el);
            pair.gsp.post_raw(&el, slots)?;
            expect_refused(&mut pair, LONG, reason)?;
        }
        next_valid_arrives(&mut pair)
    }

    #[test]
    fn a_received_message_clears_the_last_fault() -> Result {
        let mut pair = Pair::new()?;
        let mut el = log_element(&pair, b"corrupt me")?;
        el[85] ^= 0x40;
        pair.gsp.post_raw(&el, 1)?;
        expect_refused(&mut pair, LONG, Fault::BadChecksum)?;
        next_valid_arrives(&mut pair)?;
        assert_eq!(pair.cmdq.last_fault(), None);
        Ok(())
    }

    /// Where a fault is shown.
    enum Case {
        /// A case of this suite.
        Here(fn() -> Result),
        /// A case of the suite named.
        Suite(&'static str),
        /// None: the driver's own fault ([`Origin::Driver`]), for the reason given.
        NotTheGsps(&'static str),
    }

    /// Returns the case that shows `fault`: a match without a wildcard, so that a fault
    /// added to the list does not build until it is given one.
    fn case_of(fault: Fault) -> Case {
        match fault {
            Fault::NothingPublished => {
                Case::Here(gsp_that_stops_mid_run_times_out_and_the_queue_works_after)
            }
            Fault::OnlyOthersArrived => Case::Suite("nova_core_gsp_waits"),
            Fault::OnlySkippedArrived => Case::Suite("nova_core_gsp_waits"),
            Fault::NothingDelivered => Case::NotTheGsps("another wait of the driver's"),
            Fault::PointerOutsideRing => {
                Case::Here(write_pointer_outside_ring_is_eio_and_consumes_nothing)
            }
            Fault::WritePointerBackwards => {
                Case::Here(write_pointer_moving_backwards_is_eio_and_consumes_nothing)
            }
            Fault::ElementCountZero => Case::Here(zero_element_count_is_eio),
            Fault::ElementCountAbove16 => Case::Here(element_count_above_sixteen_is_eio),
            Fault::ElementCountBeyondPublished => {
                Case::Here(element_count_beyond_published_slots_is_eio)
            }
            Fault::ElementOutsideSharedMemory => Case::NotTheGsps("the driver's mapping"),
            Fault::ElementShorterThanSlots | Fault::ElementShorterThanHeader => {
                Case::NotTheGsps("a caller's buffer")
            }
            Fault::ElementCountChanged => Case::NotTheGsps("a caller's two copies"),
            Fault::BadSignature => Case::Here(wrong_signature_is_eio),
            Fault::UnsupportedHeaderVersion => Case::Here(unsupported_header_version_is_eio),
            Fault::LengthBelowHeader => Case::Here(rpc_length_below_header_is_eio),
            Fault::LengthBeyondElement => Case::Here(rpc_length_above_the_element_is_eio),
            Fault::LengthInconsistent => {
                Case::Here(rpc_length_inconsistent_with_element_count_is_eio)
            }
            Fault::BadChecksum => Case::Here(bad_checksum_is_eio),
            Fault::SequenceWentBack => Case::Here(sequence_number_going_back_is_eio_and_consumed),
            Fault::ContinuationWithoutHead => Case::Here(stray_continuation_record_is_skipped),
            Fault::ContinuationOfAnotherRpc => {
                Case::Here(continuation_of_another_sequence_ends_the_message_and_is_skipped)
            }
            Fault::ContinuationsBeyondLargestRpc => {
                Case::Here(continuation_records_beyond_the_largest_rpc_are_eio)
            }
            Fault::NoMemory => {
                Case::NotTheGsps("an allocation that fails (`nova_core_gsp_cmdq_nomem`)")
            }
            Fault::MessageShorterThanExpected => {
                Case::Here(reply_shorter_than_its_command_expects_is_eio_to_its_caller)
            }
            Fault::UnknownFunction => {
                Case::Here(unknown_function_is_not_the_message_asked_for_and_consumed)
            }
            Fault::OtherFunction => Case::Here(other_function_is_erange_and_consumed),
            Fault::ReplyReportsError => Case::Here(nonzero_rpc_result_is_einval),
            Fault::ReplyUndecodable => {
                Case::Here(long_payload_of_typed_message_is_eio_from_its_decoder)
            }
        }
    }

    #[test]
    fn every_fault_the_gsp_can_cause_has_a_case() -> Result {
        for &fault in Fault::ALL {
            // The cases of this suite run again here, each on its own fresh pair.
            let shown = match case_of(fault) {
                Case::Here(case) => {
                    case()?;
                    true
                }
                Case::Suite(suite) => {
                    pr_info!("{:?}: shown by {}\n", fault, suite);
                    true
                }
                Case::NotTheGsps(why) => {
                    pr_info!("{:?}: not the GSP's: {}\n", fault, why);
                    false
                }
            };
            if shown != (fault.origin() == Origin::Gsp) {
                pr_err!("{:?}: a case, or its origin, is wrong\n", fault);
            }
            check!(shown == (fault.origin() == Origin::Gsp))?;
        }
        Ok(())
    }
}
