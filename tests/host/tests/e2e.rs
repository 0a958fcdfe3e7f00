// SPDX-License-Identifier: GPL-2.0

//! End to end: the driver and the virtual GSP on two threads exchange 100 000 echo
//! commands of 1 byte to 200 KiB, wrapping the rings thousands of times; every reply is
//! checked byte for byte, in order, and every unasked event is accounted for.
//!
//! `VGSP_E2E_COMMANDS` overrides the count.

use kernel::time::Delta;
use nova_core::gsp::{
    cmdq::CommandToGsp as _,
    fw::{
        self,
        MSGQ_NUM_PAGES, //
    },
};
use nova_testbench::{
    rpc::{
        element_count_for_rpc,
        Echo,
        VGSP_ECHO, //
    },
    ReceiveAny,
};

const MAX_LEN: usize = 200 * 1024;
const LOG_EVERY: u64 = 1000;

/// xorshift64*: a deterministic stream for sizes and payloads.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A size from 1 to `MAX_LEN`, spread evenly over the orders of magnitude, with the
    /// element boundaries hit on purpose now and then.
    fn size(&mut self) -> usize {
        let r = self.next();
        match r % 16 {
            0 => fw::MAX_ELEMENT_PAYLOAD,
            1 => fw::MAX_ELEMENT_PAYLOAD + 1,
            2 => MAX_LEN,
            _ => {
                let bits = 1 + (r >> 8) % 17; // 2^1 .. 2^17
                let len = 1 + (self.next() % (1u64 << bits)) as usize;
                len.min(MAX_LEN)
            }
        }
    }

    fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let w = self.next().to_le_bytes();
            chunk.copy_from_slice(&w[..chunk.len()]);
        }
    }
}

#[test]
fn hundred_thousand_mixed_commands_round_trip_in_order() {
    let count: u64 = std::env::var("VGSP_E2E_COMMANDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);

    let (result, stats) = vgsp_host::with_gsp_thread(LOG_EVERY, |gsp, bar, sim| {
        let mut rng = Rng(0x5eed_cafe_f00d_0001);
        let mut payload = std::vec![0u8; MAX_LEN];
        let mut slots = 0u64;
        let mut bytes = 0u64;
        let mut elements_sent = 0u64;
        let mut sizes = [0u64; 3];
        for i in 0..count {
            let len = rng.size();
            rng.fill(&mut payload[..len]);
            let seq = gsp.cmdq().post(bar, &Echo(&payload[..len])).expect("send");
            assert_eq!(seq as u64, i, "RPC sequence numbers are consecutive");
            // The command carries the echo's 8-byte header too.
            elements_sent += element_count_for_rpc(Echo(&payload[..len]).size()) as u64;
            sizes[element_count_for_rpc(len).min(3) - 1] += 1;
            // The GSP's log lines go to the log's handler on the way.
            let msg = gsp
                .cmdq()
                .receive_any(Delta::from_secs(5))
                .expect("receive");
            slots += msg.elem_count as u64;
            assert_eq!(msg.function(), VGSP_ECHO);
            assert_eq!(msg.rpc_result, 0);
            assert_eq!(msg.sequence, seq, "reply to command {i} out of order");
            assert_eq!(msg.payload.len(), len, "reply {i} length");
            assert!(msg.payload[..] == payload[..len], "reply {i} differs");
            bytes += len as u64;
        }
        // The last log line may trail the last reply: a receive hands it to the handler.
        for _ in 0..100 {
            if gsp.log_lines() >= count / LOG_EVERY {
                break;
            }
            let trailing = gsp.cmdq().receive_any(Delta::from_millis(10));
            assert!(
                trailing.is_err(),
                "no message but the log's after the last reply"
            );
        }
        let events = gsp.log_lines();
        assert_eq!(
            sim.doorbell_count(),
            elements_sent,
            "one doorbell per element"
        );
        std::eprintln!(
            "e2e: {count} commands ({} single, {} split in 2, {} in 3+), {} MiB echoed, \
             {} slots received = {} ring wraps, {events} events",
            sizes[0],
            sizes[1],
            sizes[2],
            bytes >> 20,
            slots,
            slots / MSGQ_NUM_PAGES as u64
        );
        (events, slots)
    })
    .expect("set up");
    let (events, slots) = result;
    let stats = stats.expect("GSP thread");
    assert_eq!(stats.commands, count);
    assert_eq!(stats.replies, count);
    assert_eq!(stats.events, events);
    assert_eq!(stats.malformed, 0);
    assert_eq!(events, count / LOG_EVERY);
    if count >= 100_000 {
        assert!(
            slots / MSGQ_NUM_PAGES as u64 >= 2000,
            "the rings wrapped thousands of times"
        );
    }
}
