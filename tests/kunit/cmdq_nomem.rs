// SPDX-License-Identifier: GPL-2.0

//! No message lost for want of memory: with each of the driver's allocations made to fail
//! in turn, a receive that finds no memory leaves the element on the ring and returns
//! `ENOMEM`, and a retry delivers every message whole, once.
//!
//! Host only: the failures are injected by the host shim (`kernel::host::failslab`, the
//! kernel's `fail-nth` for the test's thread). In a kernel, `failslab` with a task's
//! `fail-nth` does the same from outside the test.

#![cfg(not(CONFIG_RUST))]

use kernel::prelude::*;

/// The cases of the `nova_core_gsp_cmdq_nomem` suite.
#[kunit_tests(nova_core_gsp_cmdq_nomem)]
pub mod tests {
    use core::sync::atomic::{
        AtomicU64,
        AtomicUsize,
        Ordering, //
    };

    use kernel::{
        host::failslab,
        prelude::*, //
    };
    use nova_core::gsp::{
        cmdq::{
            BenchSeam,
            EventHandler,
            GspMessage, //
        },
        fault::Fault,
        fw::{
            MsgFunction,
            MAX_ELEMENT_PAYLOAD, //
        },
    };
    use nova_testbench::{
        rpc::Echo,
        ReceiveAny, //
    };

    use crate::{
        cmdq_errors::tests::log_element,
        fixture::{
            check,
            Pair,
            LONG, //
        },
    };

    /// Returns the FNV-1a hash of a message of `function` carrying `payload`.
    fn digest(function: u32, payload: &[u8]) -> u64 {
        // CAST: a payload length fits 64 bits.
        let len = payload.len() as u64;
        [&function.to_le_bytes()[..], &len.to_le_bytes(), payload]
            .iter()
            .flat_map(|bytes| bytes.iter())
            .fold(0xcbf2_9ce4_8422_2325u64, |hash, &b| {
                (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            })
    }

    /// The most events [`Recorder`] keeps.
    const EVENTS_MAX: usize = 8;

    /// An event handler that keeps the digest of every event it is handed, in arrival
    /// order: no allocation, so it adds none to the walk.
    struct Recorder {
        count: AtomicUsize,
        digests: [AtomicU64; EVENTS_MAX],
    }

    impl Recorder {
        /// Forgets every event.
        fn reset(&self) {
            self.count.store(0, Ordering::Relaxed);
        }

        /// Returns whether the events handed were exactly `want`, in order.
        fn saw(&self, want: &[u64]) -> bool {
            let count = self.count.load(Ordering::Relaxed);
            count == want.len()
                && want
                    .iter()
                    .zip(&self.digests)
                    .all(|(&w, got)| got.load(Ordering::Relaxed) == w)
        }
    }

    impl EventHandler for Recorder {
        fn handle(&self, msg: &GspMessage) {
            let i = self.count.fetch_add(1, Ordering::Relaxed);
            if let Some(slot) = self.digests.get(i) {
                slot.store(digest(msg.function, &msg.payload), Ordering::Relaxed);
            }
        }
    }

    /// The walk's events; only its case registers it.
    static RECORDER: Recorder = Recorder {
        count: AtomicUsize::new(0),
        digests: [const { AtomicU64::new(0) }; EVENTS_MAX],
    };

    /// Calls `op` until it returns anything but `ENOMEM`, counting the `ENOMEM`s in
    /// `nomem`; at most three calls.
    fn retry<T>(nomem: &mut u32, mut op: impl FnMut() -> Result<T>) -> Result<T> {
        for _ in 0..2 {
            match op() {
                Err(ENOMEM) => *nomem += 1,
                other => return other,
            }
        }
        op()
    }

    #[test]
    fn enomem_on_one_element_leaves_it_on_the_ring() -> Result {
        let mut pair = Pair::new()?;
        let line = log_element(&pair, b"kept")?;
        pair.gsp.post_raw(&line, 1)?;
        let armed = failslab::fail_nth(0);
        check!(pair.cmdq.receive_any(LONG).err() == Some(ENOMEM))?;
        check!(armed.injected())?;
        drop(armed);
        check!(pair.cmdq.last_fault() == Some(Fault::NoMemory))?;
        // Nothing consumed: the retry gets the element.
        check!(pair.cmdq.cpu_ptrs().1 == 0)?;
        let msg = pair.cmdq.receive_any(LONG)?;
        check!(msg.function() == MsgFunction::UCODE_LIBOS_PRINT)?;
        check!(msg.payload[..] == b"kept"[..])?;
        check!(pair.cmdq.cpu_ptrs().1 == 1)
    }

    #[test]
    fn enomem_on_a_continuation_resumes_the_message() -> Result {
        let mut pair = Pair::new()?;
        let payload = Pair::pattern(MAX_ELEMENT_PAYLOAD + 300, 3)?;
        pair.gsp.post_event(MsgFunction::OS_ERROR_LOG, &payload)?;
        pair.gsp_run()?;
        // The head's buffer is the first allocation, the record's room the second.
        let armed = failslab::fail_nth(1);
        check!(pair.cmdq.receive_any(LONG).err() == Some(ENOMEM))?;
        check!(armed.injected())?;
        drop(armed);
        // The head was consumed and is kept; the record stays on the ring.
        check!(pair.cmdq.cpu_ptrs().1 == 16)?;
        let msg = pair.cmdq.receive_any(LONG)?;
        check!(msg.function() == MsgFunction::OS_ERROR_LOG)?;
        check!(msg.elem_count == 17)?;
        check!(msg.payload[..] == payload[..])?;
        check!(pair.cmdq.cpu_ptrs().1 == 17)
    }

    /// What one run of [`walk_scenario`] came to.
    struct Walked {
        /// Whether the armed allocation was reached.
        injected: bool,
        /// The `ENOMEM`s the driver's callers got, each retried.
        nomem: u32,
    }

    /// Runs the walk's scenario with allocation `n` of the driver's failing: replies of
    /// one element and a split one, events of one element, exactly full and split, and a
    /// last round trip; checks that every message arrives whole and once, every `ENOMEM`
    /// retried, and that the queue works after.
    fn walk_scenario(n: u64) -> Result<Walked> {
        let mut pair = Pair::new()?;
        RECORDER.reset();
        for function in [MsgFunction::UCODE_LIBOS_PRINT, MsgFunction::OS_ERROR_LOG] {
            pair.cmdq.on_event(function, &RECORDER)?;
        }
        let small = Pair::pattern(10, 1)?;
        let mid = Pair::pattern(3000, 2)?;
        let split = Pair::pattern(MAX_ELEMENT_PAYLOAD + 500, 3)?;
        let last = Pair::pattern(40, 4)?;
        let full_event = Pair::pattern(MAX_ELEMENT_PAYLOAD, 5)?;
        let split_event = Pair::pattern(MAX_ELEMENT_PAYLOAD + 100, 6)?;
        let log = u32::from(MsgFunction::UCODE_LIBOS_PRINT);
        let error_log = u32::from(MsgFunction::OS_ERROR_LOG);
        let events = [
            digest(log, b"first"),
            digest(error_log, &full_event),
            digest(error_log, &split_event),
            digest(log, b"last"),
        ];
        // Ahead of the replies: a line, then an event exactly one full element.
        pair.gsp.log(b"first")?;
        pair.gsp
            .post_event(MsgFunction::OS_ERROR_LOG, &full_event)?;

        let mut nomem = 0;
        let armed = failslab::fail_nth(n);
        let bar = pair.bar.bar();
        let cmdq = &pair.cmdq;
        let mut pending = KVec::new();
        for bytes in [&small, &mid, &split] {
            let p = retry(&mut nomem, || cmdq.submit(bar, &Echo(bytes)))?;
            failslab::exempt(|| pending.push((p, bytes), GFP_KERNEL))?;
        }
        failslab::exempt(|| pair.gsp.run_until_idle())?;
        for (p, bytes) in pending.iter_mut() {
            let reply = retry(&mut nomem, || p.wait_retryable(LONG))?;
            check!(reply.0[..] == bytes[..])?;
        }
        drop(pending);
        // After the replies: a split event and a line, then a last round trip.
        failslab::exempt(|| -> Result {
            pair.gsp
                .post_event(MsgFunction::OS_ERROR_LOG, &split_event)?;
            pair.gsp.log(b"last")
        })?;
        let mut p = retry(&mut nomem, || cmdq.submit(bar, &Echo(&last)))?;
        failslab::exempt(|| pair.gsp.run_until_idle())?;
        let reply = retry(&mut nomem, || p.wait_retryable(LONG))?;
        check!(reply.0[..] == last[..])?;
        drop(p);
        let injected = armed.injected();
        drop(armed);

        check!(RECORDER.saw(&events))?;
        let delivery = cmdq.delivery();
        check!((delivery.dropped, delivery.late) == (0, 0))?;
        check!(cmdq.events().unhandled == 0)?;
        // The queue works after.
        let again = Pair::pattern(MAX_ELEMENT_PAYLOAD + 7, 8)?;
        let p = cmdq.submit(bar, &Echo(&again))?;
        pair.gsp.run_until_idle()?;
        check!(p.wait(LONG)?.0[..] == again[..])?;
        Ok(Walked { injected, nomem })
    }

    #[test]
    fn every_allocation_failing_in_turn_loses_no_message() -> Result {
        let mut n = 0;
        loop {
            let walked = walk_scenario(n)?;
            // An injected failure is one `ENOMEM`, retried; none when it was not reached.
            check!(walked.nomem == u32::from(walked.injected))?;
            if !walked.injected {
                break;
            }
            n += 1;
            check!(n < 1000)?;
        }
        pr_info!(
            "nomem walk: {} allocations failed in turn, no message lost\n",
            n
        );
        check!(n >= 8)
    }
}
