// SPDX-License-Identifier: GPL-2.0

//! The `mbarrier` under loom: three agents arrive, report transfer bytes and wait on one
//! barrier concurrently; in every execution the phase completes exactly once, and the
//! waiter's successful wait makes both other agents' writes visible (loom reports a
//! data race on the cells otherwise).
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p vgsp-model --release --test mbarrier`.

#![cfg(loom)]

use kernel::sync::atomic::Atomic;
use loom::{
    cell::UnsafeCell,
    sync::Arc,
    thread, //
};
use mbarrier::Mbarrier;

struct Shared {
    word: Atomic<u64>,
    /// Written by the driver before its arrival.
    command: UnsafeCell<u32>,
    /// Landed by the copy engine before its `complete_tx`.
    bytes: UnsafeCell<u32>,
}

#[test]
fn arrive_complete_tx_and_wait_from_three_agents() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(|| {
        let shared = Arc::new(Shared {
            word: Atomic::new(0),
            command: UnsafeCell::new(0),
            bytes: UnsafeCell::new(0),
        });
        Mbarrier::new(&shared.word).init(2).unwrap();

        let driver = {
            let s = shared.clone();
            thread::spawn(move || {
                // SAFETY: Only this agent writes the cell; readers wait on the barrier.
                s.command.with_mut(|p| unsafe { *p = 7 });
                Mbarrier::new(&s.word).arrive_expect_tx(8).unwrap();
            })
        };
        let engine = {
            let s = shared.clone();
            thread::spawn(move || {
                // SAFETY: As above.
                s.bytes.with_mut(|p| unsafe { *p = 0xab });
                let b = Mbarrier::new(&s.word);
                b.complete_tx(4).unwrap();
                b.complete_tx(4).unwrap();
            })
        };

        let b = Mbarrier::new(&shared.word);
        let token = b.arrive(1).unwrap();
        while !b.test_wait(token).unwrap() {
            thread::yield_now();
        }
        // SAFETY: The successful wait acquired both writes (loom checks it).
        assert_eq!(shared.command.with(|p| unsafe { *p }), 7);
        // SAFETY: As above.
        assert_eq!(shared.bytes.with(|p| unsafe { *p }), 0xab);
        driver.join().unwrap();
        engine.join().unwrap();
        let s = b.snapshot();
        assert_eq!((s.phase_mod4, s.pending, s.expected, s.tx), (1, 2, 2, 0));
        assert!(b.test_wait_parity(0).unwrap());
    });
}
