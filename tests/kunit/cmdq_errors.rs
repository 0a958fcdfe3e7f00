// SPDX-License-Identifier: GPL-2.0

//! Every errno of the command queue, and that the next valid message still arrives.

use kernel::prelude::*;

/// The cases of the `nova_core_gsp_cmdq_errors` suite.
#[kunit_tests(nova_core_gsp_cmdq_errors)]
pub mod tests {
    use kernel::{
        prelude::*,
        time::Delta, //
    };
    use nova_core::gsp::{
        commands::{
            Echo,
            GspInitDone, //
        },
        fw::{
            GspMsgElement,
            MsgFunction,
            GSPQ_OFFSET,
            MAX_ELEMENT_PAYLOAD,
            MAX_RPC_PAYLOAD,
            MSGQ_READ_PTR_OFFSET,
            MSGQ_WRITE_PTR_OFFSET, //
        },
    };
    use zerocopy::{
        FromBytes,
        IntoBytes, //
    };

    use crate::fixture::{
        check,
        Pair,
        LONG,
        SHORT, //
    };

    /// Returns a valid one-slot `UCODE_LIBOS_PRINT` element saying `text`.
    pub(crate) fn log_element(pair: &Pair, text: &[u8]) -> Result<KVec<u8>> {
        pair.gsp
            .encode_element(MsgFunction::UcodeLibosPrint.into(), 0, text, text.len())
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
        check!(msg.function() == Ok(MsgFunction::UcodeLibosPrint))?;
        check!(msg.payload[..] == b"still alive"[..])?;
        Ok(())
    }

    /// Receives within `timeout` and checks the receive fails with `err` and names
    /// `reason` as its fault.
    fn expect_refused(pair: &mut Pair, timeout: Delta, err: Error, reason: &str) -> Result {
        check!(pair.cmdq.receive_any(timeout).err() == Some(err))?;
        check!(pair.cmdq.last_fault() == Some(reason))?;
        Ok(())
    }

    /// Posts the full head of an RPC (RPC sequence 5) whose payload is `rest` bytes
    /// longer than the head's 16 slots hold; returns the head's payload.
    fn post_split_head(pair: &mut Pair, rest: usize) -> Result<KVec<u8>> {
        let chunk = Pair::pattern(MAX_ELEMENT_PAYLOAD, 9)?;
        let head = pair.gsp.encode_element(
            MsgFunction::Nop.into(),
            5,
            &chunk,
            MAX_ELEMENT_PAYLOAD + rest,
        )?;
        pair.gsp.post_raw(&head, 16)?;
        Ok(chunk)
    }

    /// Posts `el` in `slots` slots, expects `EIO` for `reason` with every published slot
    /// consumed, then a valid message.
    fn expect_rejected(pair: &mut Pair, el: &[u8], slots: u32, reason: &str) -> Result {
        pair.gsp.post_raw(el, slots)?;
        expect_refused(pair, LONG, EIO, reason)?;
        let (_, rptr) = pair.cmdq.cpu_ptrs();
        check!(rptr == pair.gsp.gsp_ptrs().0)?;
        next_valid_arrives(pair)
    }

    #[test]
    fn bad_checksum_is_eio() -> Result {
        let mut pair = Pair::new()?;
        let mut el = log_element(&pair, b"corrupt me")?;
        el[85] ^= 0x40;
        expect_rejected(&mut pair, &el, 1, "bad checksum")
    }

    #[test]
    fn wrong_signature_is_eio() -> Result {
        let mut pair = Pair::new()?;
        let mut el = log_element(&pair, b"x")?;
        edit(&mut el, 1, |h| {
            h.rpc.signature = u32::from_le_bytes(*b"NOPE")
        });
        expect_rejected(&mut pair, &el, 1, "bad RPC signature")
    }

    #[test]
    fn unsupported_header_version_is_eio() -> Result {
        let mut pair = Pair::new()?;
        let mut el = log_element(&pair, b"x")?;
        edit(&mut el, 1, |h| h.rpc.header_version = 0x0200_0000);
        expect_rejected(&mut pair, &el, 1, "unsupported RPC header version")
    }

    #[test]
    fn zero_element_count_is_eio() -> Result {
        let mut pair = Pair::new()?;
        let mut el = log_element(&pair, b"x")?;
        edit(&mut el, 1, |h| h.elem_count = 0);
        expect_rejected(&mut pair, &el, 1, "element count 0")
    }

    #[test]
    fn element_count_above_sixteen_is_eio() -> Result {
        let mut pair = Pair::new()?;
        let mut el = log_element(&pair, b"x")?;
        edit(&mut el, 1, |h| h.elem_count = 17);
        expect_rejected(&mut pair, &el, 20, "element count above 16")
    }

    #[test]
    fn element_count_beyond_published_slots_is_eio() -> Result {
        let mut pair = Pair::new()?;
        let mut el = log_element(&pair, b"x")?;
        edit(&mut el, 1, |h| h.elem_count = 3);
        expect_rejected(
            &mut pair,
            &el,
            2,
            "element count beyond the published slots",
        )
    }

    #[test]
    fn rpc_length_below_header_is_eio() -> Result {
        let mut pair = Pair::new()?;
        let mut el = log_element(&pair, b"x")?;
        edit(&mut el, 1, |h| h.rpc.length = 31);
        expect_rejected(&mut pair, &el, 1, "RPC length below the RPC header")
    }

    #[test]
    fn rpc_length_inconsistent_with_element_count_is_eio() -> Result {
        let mut pair = Pair::new()?;
        let mut el = log_element(&pair, b"short payload")?;
        edit(&mut el, 13, |h| h.rpc.length = 32 + 5000);
        expect_rejected(
            &mut pair,
            &el,
            1,
            "RPC length inconsistent with the element count",
        )
    }

    #[test]
    fn write_pointer_outside_ring_is_eio_and_consumes_nothing() -> Result {
        let mut pair = Pair::new()?;
        pair.view()
            .write32(GSPQ_OFFSET + MSGQ_WRITE_PTR_OFFSET, 63)?;
        expect_refused(&mut pair, SHORT, EIO, "write pointer outside the ring")?;
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
            .send_rpc(pair.bar.bar(), MsgFunction::Nop, b"x", SHORT);
        assert_eq!(r, Err(EIO));
        assert_eq!(pair.cmdq.cpu_ptrs(), (0, 0));
        Ok(())
    }

    #[test]
    fn unknown_function_is_einval_and_consumed() -> Result {
        let mut pair = Pair::new()?;
        let el = pair.gsp.encode_element(0x0bad, 0, b"?", 1)?;
        pair.gsp.post_raw(&el, 1)?;
        assert_eq!(
            pair.cmdq.receive_msg::<GspInitDone>(LONG).err(),
            Some(EINVAL)
        );
        // The receive itself succeeded: the typed check refused the function.
        assert_eq!(pair.cmdq.last_fault(), Some("unknown function"));
        next_valid_arrives(&mut pair)
    }

    #[test]
    fn other_function_is_erange_and_consumed() -> Result {
        let mut pair = Pair::new()?;
        let el = log_element(&pair, b"not the one")?;
        pair.gsp.post_raw(&el, 1)?;
        assert_eq!(
            pair.cmdq.receive_msg::<GspInitDone>(LONG).err(),
            Some(ERANGE)
        );
        // The receive itself succeeded: the typed check refused the function.
        assert_eq!(
            pair.cmdq.last_fault(),
            Some("function not the one waited for")
        );
        next_valid_arrives(&mut pair)
    }

    #[test]
    fn nonzero_rpc_result_is_einval() -> Result {
        let mut pair = Pair::new()?;
        let mut el = pair
            .gsp
            .encode_element(MsgFunction::GspInitDone.into(), 0, &[0; 4], 4)?;
        edit(&mut el, 4, |h| h.rpc.rpc_result = 0x1f);
        pair.gsp.post_raw(&el, 1)?;
        assert_eq!(
            pair.cmdq.receive_msg::<GspInitDone>(LONG).err(),
            Some(EINVAL)
        );
        // The receive itself succeeded: the typed check refused the result.
        assert_eq!(pair.cmdq.last_fault(), Some("reply reports an error"));
        next_valid_arrives(&mut pair)
    }

    #[test]
    fn short_payload_of_typed_message_is_eio() -> Result {
        let mut pair = Pair::new()?;
        let el = pair
            .gsp
            .encode_element(MsgFunction::GspInitDone.into(), 0, &[0; 2], 2)?;
        pair.gsp.post_raw(&el, 1)?;
        assert_eq!(pair.cmdq.receive_msg::<GspInitDone>(LONG).err(), Some(EIO));
        // The receive itself succeeded: the `EIO` is the decoder's.
        assert_eq!(
            pair.cmdq.last_fault(),
            Some("reply does not decode as its type")
        );
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
            .send_rpc(pair.bar.bar(), MsgFunction::Nop, &big, SHORT);
        assert_eq!(r, Err(EMSGSIZE));
        assert_eq!(pair.cmdq.cpu_ptrs(), (0, 0));
        Ok(())
    }

    #[test]
    fn continuation_without_head_is_eio() -> Result {
        let mut pair = Pair::new()?;
        let el =
            pair.gsp
                .encode_element(MsgFunction::ContinuationRecord.into(), 0, b"orphan", 6)?;
        expect_rejected(&mut pair, &el, 1, "continuation record without a head")
    }

    /// Checks that the next message received is the log line `text`.
    fn log_line_arrives(pair: &mut Pair, text: &[u8]) -> Result {
        let msg = pair.cmdq.receive_any(LONG)?;
        check!(msg.function() == Ok(MsgFunction::UcodeLibosPrint))?;
        check!(msg.payload[..] == *text)
    }

    /// Posts the log line `text` after a split head with its continuation still to come,
    /// and checks that the head's RPC is refused and the line then received as itself,
    /// every slot consumed.
    fn head_interrupted_by(pair: &mut Pair, text: &[u8]) -> Result {
        let line = log_element(pair, text)?;
        pair.gsp.post_raw(&line, 1)?;
        expect_refused(pair, LONG, EIO, "head not followed by its continuation")?;
        check!(pair.cmdq.cpu_ptrs() == (0, 17))?;
        log_line_arrives(pair, text)
    }

    #[test]
    fn head_followed_by_other_function_is_eio() -> Result {
        let mut pair = Pair::new()?;
        post_split_head(&mut pair, 100)?;
        head_interrupted_by(&mut pair, b"intruder")?;
        next_valid_arrives(&mut pair)
    }

    #[test]
    fn head_whose_continuation_never_comes_times_out() -> Result {
        let mut pair = Pair::new()?;
        post_split_head(&mut pair, 100)?;
        expect_refused(&mut pair, SHORT, ETIMEDOUT, "nothing published in time")?;
        // The head was consumed, and kept for the next receive.
        assert_eq!(pair.cmdq.cpu_ptrs(), (0, 16));
        head_interrupted_by(&mut pair, b"instead")?;
        next_valid_arrives(&mut pair)
    }

    #[test]
    fn head_whose_continuation_comes_after_the_wait_is_received_by_the_next() -> Result {
        let mut pair = Pair::new()?;
        let head = post_split_head(&mut pair, 100)?;
        expect_refused(&mut pair, SHORT, ETIMEDOUT, "nothing published in time")?;
        let tail = Pair::pattern(100, 10)?;
        let cont = pair.gsp.encode_element(
            MsgFunction::ContinuationRecord.into(),
            5,
            &tail,
            tail.len(),
        )?;
        pair.gsp.post_raw(&cont, 1)?;
        let msg = pair.cmdq.receive_any(LONG)?;
        check!(msg.function() == Ok(MsgFunction::Nop))?;
        check!(msg.sequence == 5)?;
        check!(msg.elem_count == 17)?;
        check!(msg.payload[..head.len()] == head[..])?;
        check!(msg.payload[head.len()..] == tail[..])?;
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
        expect_refused(&mut pair, SHORT, EIO, "write pointer moved backwards")?;
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
        expect_rejected(&mut pair, &el, 1, "RPC length beyond the element")
    }

    #[test]
    fn rpc_length_above_the_largest_rpc_is_eio() -> Result {
        let mut pair = Pair::new()?;
        let mut el = log_element(&pair, b"x")?;
        edit(&mut el, 1, |h| {
            h.rpc.length = 32 + MAX_RPC_PAYLOAD as u32 + 1
        });
        expect_rejected(&mut pair, &el, 1, "RPC length above the largest RPC")
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
        expect_refused(&mut pair, LONG, EIO, "element sequence number went back")?;
        assert_eq!(pair.cmdq.cpu_ptrs(), (0, 2));
        next_valid_arrives(&mut pair)
    }

    #[test]
    fn continuation_of_another_rpc_is_eio() -> Result {
        let mut pair = Pair::new()?;
        let chunk = post_split_head(&mut pair, 10)?;
        let cont =
            pair.gsp
                .encode_element(MsgFunction::ContinuationRecord.into(), 6, &chunk[..10], 10)?;
        pair.gsp.post_raw(&cont, 1)?;
        expect_refused(&mut pair, LONG, EIO, "continuation record of another RPC")?;
        assert_eq!(pair.cmdq.cpu_ptrs(), (0, 17));
        next_valid_arrives(&mut pair)
    }

    #[test]
    fn continuation_records_longer_than_the_rpc_are_eio() -> Result {
        let mut pair = Pair::new()?;
        let chunk = post_split_head(&mut pair, 10)?;
        // Twenty bytes where ten are left to come.
        let cont =
            pair.gsp
                .encode_element(MsgFunction::ContinuationRecord.into(), 5, &chunk[..20], 20)?;
        pair.gsp.post_raw(&cont, 1)?;
        expect_refused(
            &mut pair,
            LONG,
            EIO,
            "continuation records longer than the RPC",
        )?;
        assert_eq!(pair.cmdq.cpu_ptrs(), (0, 17));
        next_valid_arrives(&mut pair)
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
        expect_refused(
            &mut pair,
            LONG,
            EIO,
            "element count beyond the published slots",
        )?;
        // Every published slot was dropped: the read pointer wrapped to 0.
        assert_eq!(pair.cmdq.cpu_ptrs(), (0, 0));
        next_valid_arrives(&mut pair)
    }

    #[test]
    fn gsp_that_stops_mid_run_times_out_and_the_queue_works_after() -> Result {
        let mut pair = Pair::new()?;
        let seq = pair.cmdq.post(pair.bar.bar(), &Echo(b"are you there"))?;
        // The GSP does not run.
        expect_refused(&mut pair, SHORT, ETIMEDOUT, "nothing published in time")?;
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
        let classes: [(Corrupt, u32, &str); 11] = [
            (|el| el[80] ^= 0x40, 1, "bad checksum"),
            (
                |el| edit(el, 1, |h| h.rpc.signature = 0),
                1,
                "bad RPC signature",
            ),
            (
                |el| edit(el, 1, |h| h.rpc.header_version = 0x0200_0000),
                1,
                "unsupported RPC header version",
            ),
            (|el| edit(el, 1, |h| h.elem_count = 0), 1, "element count 0"),
            (
                |el| edit(el, 1, |h| h.elem_count = 17),
                20,
                "element count above 16",
            ),
            (
                |el| edit(el, 1, |h| h.elem_count = 3),
                2,
                "element count beyond the published slots",
            ),
            (
                |el| edit(el, 1, |h| h.rpc.length = 31),
                1,
                "RPC length below the RPC header",
            ),
            (
                |el| {
                    edit(el, 1, |h| {
                        h.rpc.length = 32 + MAX_ELEMENT_PAYLOAD as u32 + 1
                    })
                },
                1,
                "RPC length beyond the element",
            ),
            (
                |el| edit(el, 1, |h| h.rpc.length = 32 + MAX_RPC_PAYLOAD as u32 + 1),
                1,
                "RPC length above the largest RPC",
            ),
            (
                |el| edit(el, 1, |h| h.rpc.length = 32 + 5000),
                1,
                "RPC length inconsistent with the element count",
            ),
            (
                |el| {
                    edit(el, 1, |h| {
                        h.rpc.function = u32::from(MsgFunction::ContinuationRecord)
                    })
                },
                1,
                "continuation record without a head",
            ),
        ];
        let mut pair = Pair::new()?;
        // Back to back, with no valid message between: each reason is its own refusal's.
        for (corrupt, slots, reason) in classes {
            let mut el = log_element(&pair, b"x")?;
            corrupt(&mut el);
            pair.gsp.post_raw(&el, slots)?;
            expect_refused(&mut pair, LONG, EIO, reason)?;
        }
        next_valid_arrives(&mut pair)
    }

    #[test]
    fn a_received_message_clears_the_last_fault() -> Result {
        let mut pair = Pair::new()?;
        let mut el = log_element(&pair, b"corrupt me")?;
        el[85] ^= 0x40;
        pair.gsp.post_raw(&el, 1)?;
        expect_refused(&mut pair, LONG, EIO, "bad checksum")?;
        next_valid_arrives(&mut pair)?;
        assert_eq!(pair.cmdq.last_fault(), None);
        Ok(())
    }
}
