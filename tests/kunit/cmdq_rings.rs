// SPDX-License-Identifier: GPL-2.0

//! The rings: round trips, wrap-around, a full ring, continuation records.

use kernel::prelude::*;

/// The cases of the `nova_core_gsp_cmdq_rings` suite.
#[kunit_tests(nova_core_gsp_cmdq_rings)]
pub mod tests {
    use kernel::prelude::*;
    use nova_core::gsp::{
        cmdq::{
            BenchSeam,
            GspMessage, //
        },
        fw::{
            self,
            GspMsgElement,
            MsgFunction,
            CPUQ_OFFSET,
            MAX_ELEMENT_PAYLOAD,
            MSGQ_NUM_PAGES,
            RPC_HEADER_SIZE, //
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
    use zerocopy::IntoBytes;

    use crate::fixture::{
        check,
        Pair,
        LONG,
        SHORT, //
    };

    /// Sends an echo of `payload`, lets the GSP answer, and checks the reply.
    fn round_trip(pair: &mut Pair, payload: &[u8]) -> Result {
        let seq = pair.cmdq.post(pair.bar.bar(), &Echo(payload))?;
        pair.gsp_run()?;
        let reply = pair.cmdq.receive_any(LONG)?;
        check!(reply.function() == VGSP_ECHO)?;
        check!(reply.sequence == seq)?;
        check!(reply.rpc_result == 0)?;
        check!(reply.payload[..] == *payload)?;
        Ok(())
    }

    #[test]
    fn echo_round_trip_returns_payload() -> Result {
        let mut pair = Pair::new()?;
        round_trip(&mut pair, b"hello, GSP")?;
        assert_eq!(pair.gsp.stats.commands, 1);
        assert_eq!(pair.cmdq.cpu_ptrs(), (1, 1));
        assert_eq!(pair.gsp.gsp_ptrs(), (1, 1));
        Ok(())
    }

    /// Echoes `len` bytes and returns the reply as received.
    fn echoed(pair: &mut Pair, len: usize) -> Result<GspMessage> {
        let payload = Pair::pattern(len, 3)?;
        pair.cmdq.post(pair.bar.bar(), &Echo(&payload))?;
        pair.gsp_run()?;
        let reply = pair.cmdq.receive_any(LONG)?;
        check!(reply.payload[..] == payload[..])?;
        Ok(reply)
    }

    #[test]
    fn a_recycled_buffer_receives_the_next_message() -> Result {
        let mut pair = Pair::new()?;
        let first = echoed(&mut pair, 4000)?;
        pair.cmdq.recycle(first);
        // An 8-byte message alone would get an 8-byte buffer.
        let second = echoed(&mut pair, 8)?;
        check!(second.payload.capacity() >= 4000)
    }

    #[test]
    fn a_buffer_larger_than_an_element_is_not_kept() -> Result {
        let mut pair = Pair::new()?;
        let first = echoed(&mut pair, MAX_ELEMENT_PAYLOAD + 1000)?;
        pair.cmdq.recycle(first);
        let second = echoed(&mut pair, 8)?;
        check!(second.payload.capacity() < MAX_ELEMENT_PAYLOAD)
    }

    #[test]
    fn sequence_numbers_advance_per_element() -> Result {
        let mut pair = Pair::new()?;
        for i in 0..5u32 {
            let seq = pair.cmdq.post(pair.bar.bar(), &Echo(&[1, 2, 3]))?;
            assert_eq!(seq, i);
            pair.gsp_run()?;
            let reply = pair.cmdq.receive_any(LONG)?;
            assert_eq!(reply.seq_num, i);
        }
        Ok(())
    }

    #[test]
    fn wraps_element_across_ring_end() -> Result {
        let mut pair = Pair::new()?;
        // Four-slot elements: the 16th starts at slot 60 and occupies 60, 61, 62 and 0.
        let payload = Pair::pattern(4 * 4096 - 200, 1)?;
        let mut wrapped = false;
        for i in 0..40 {
            let (wptr, _) = pair.cmdq.cpu_ptrs();
            let p = Pair::pattern(payload.len() + (i % 5), i as u32)?;
            round_trip(&mut pair, &p)?;
            let (after, _) = pair.cmdq.cpu_ptrs();
            wrapped |= wptr == 60 && after == 1;
        }
        assert!(wrapped);
        Ok(())
    }

    #[test]
    fn full_ring_send_times_out_then_recovers() -> Result {
        let mut pair = Pair::new()?;
        // One slot always stays empty: 62 one-slot commands fit.
        for _ in 0..MSGQ_NUM_PAGES - 1 {
            pair.cmdq.post(pair.bar.bar(), &Echo(&[7; 8]))?;
        }
        // The send waits its whole timeout for a slot, then gives up.
        let full = pair
            .cmdq
            .post(pair.bar.bar(), &Raw::<{ MsgFunction::NOP.0 }>(&[7; 8]));
        assert_eq!(full, Err(ETIMEDOUT));
        // The GSP consumes what it can and replies until `gspq` is full too.
        pair.gsp_run()?;
        let mut replies = 0;
        loop {
            match pair.cmdq.receive_any(SHORT) {
                Ok(msg) => {
                    assert!(msg.payload[..] == [7; 8]);
                    replies += 1;
                    pair.gsp_run()?;
                }
                Err(e) => {
                    assert_eq!(e, ETIMEDOUT);
                    break;
                }
            }
        }
        assert_eq!(replies, MSGQ_NUM_PAGES - 1);
        pair.cmdq
            .post(pair.bar.bar(), &Raw::<{ MsgFunction::NOP.0 }>(&[7; 8]))?;
        Ok(())
    }

    #[test]
    fn receive_times_out_when_nothing_published() -> Result {
        let pair = Pair::new()?;
        assert_eq!(pair.cmdq.receive_any(SHORT).err(), Some(ETIMEDOUT));
        assert_eq!(pair.cmdq.cpu_ptrs(), (0, 0));
        Ok(())
    }

    #[test]
    fn continuation_records_split_and_reassemble() -> Result {
        let mut pair = Pair::new()?;
        let payload = Pair::pattern(2 * MAX_ELEMENT_PAYLOAD + 1000, 42)?;
        let seq = pair.cmdq.post(pair.bar.bar(), &Echo(&payload))?;
        // Three elements: 16 + 16 + 1 slots.
        assert_eq!(pair.cmdq.cpu_ptrs().0, 33);
        pair.gsp_run()?;
        assert_eq!(pair.gsp.stats.elements_in, 3);
        assert_eq!(pair.gsp.stats.commands, 1);
        let reply = pair.cmdq.receive_any(LONG)?;
        assert_eq!(reply.sequence, seq);
        assert_eq!(reply.elem_count, 33);
        assert_eq!(reply.payload.len(), payload.len());
        assert!(reply.payload[..] == payload[..]);
        Ok(())
    }

    #[test]
    fn split_command_heads_carry_their_own_chunk_length() -> Result {
        let pair = Pair::new()?;
        let payload = Pair::pattern(2 * MAX_ELEMENT_PAYLOAD + 1000, 42)?;
        let seq = pair.cmdq.post(pair.bar.bar(), &Echo(&payload))?;
        let view = pair.view();
        let element = |slot: u32| -> Result<GspMsgElement> {
            let mut h = GspMsgElement::default();
            view.read_bytes(CPUQ_OFFSET + fw::slot_offset(slot), h.as_mut_bytes())?;
            Ok(h)
        };
        let (head, cont, last) = (element(0)?, element(16)?, element(32)?);
        // Upstream's and nouveau's `rpc.length`: the RPC header and the element's own
        // chunk, the head's too; the echo's header gives the whole length.
        assert_eq!(
            head.rpc.length as usize,
            RPC_HEADER_SIZE + MAX_ELEMENT_PAYLOAD
        );
        assert_eq!(
            cont.rpc.length as usize,
            RPC_HEADER_SIZE + MAX_ELEMENT_PAYLOAD
        );
        assert_eq!(last.rpc.length as usize, RPC_HEADER_SIZE + 1000 + 8);
        assert_eq!(head.rpc.function, u32::from(VGSP_ECHO));
        assert_eq!(
            cont.rpc.function,
            u32::from(MsgFunction::CONTINUATION_RECORD)
        );
        assert_eq!(
            (head.rpc.sequence, cont.rpc.sequence, last.rpc.sequence),
            (seq, seq, seq)
        );
        Ok(())
    }

    #[test]
    fn exactly_one_full_element_needs_no_continuation() -> Result {
        let mut pair = Pair::new()?;
        // The echo's 8-byte header and the bytes fill the element exactly.
        let payload = Pair::pattern(MAX_ELEMENT_PAYLOAD - 8, 3)?;
        round_trip(&mut pair, &payload)?;
        assert_eq!(pair.gsp.stats.elements_in, 1);
        assert_eq!(pair.cmdq.cpu_ptrs(), (16, 16));
        Ok(())
    }

    #[test]
    fn unasked_event_arrives_between_replies() -> Result {
        let mut pair = Pair::new()?;
        pair.gsp.set_log_every(2);
        for i in 0..4u32 {
            let seq = pair.cmdq.post(pair.bar.bar(), &Echo(&i.to_le_bytes()))?;
            pair.gsp_run()?;
            let reply = pair.cmdq.receive_any(LONG)?;
            assert_eq!((reply.function(), reply.sequence), (VGSP_ECHO, seq));
            if i % 2 == 1 {
                let event = pair.cmdq.receive_any(LONG)?;
                assert_eq!(event.function(), MsgFunction::UCODE_LIBOS_PRINT);
                assert!(event.payload.starts_with(b"vgsp: "));
            }
        }
        assert_eq!(pair.cmdq.receive_any(SHORT).err(), Some(ETIMEDOUT));
        Ok(())
    }

    #[test]
    fn many_mixed_round_trips_stay_in_step() -> Result {
        let mut pair = Pair::new()?;
        for i in 0..300u32 {
            let len = [0usize, 1, 7, 8, 4016, 4017, 9000, 40_000][(i % 8) as usize];
            let p = Pair::pattern(len, i)?;
            round_trip(&mut pair, &p)?;
        }
        assert_eq!(pair.gsp.stats.commands, 300);
        assert_eq!(pair.gsp.stats.malformed, 0);
        Ok(())
    }
}
