// SPDX-License-Identifier: GPL-2.0

//! The peer: rtrb carrying the same payloads between the same two pinned threads. See
//! the crate documentation for what each figure is.

use std::{
    hint::{
        black_box,
        spin_loop, //
    },
    sync::atomic::{
        AtomicBool,
        Ordering::{
            Acquire,
            Release, //
        },
    },
};

use rtrb::RingBuffer;

use crate::{
    pin::run_pinned,
    util::{
        fill_pattern,
        Span, //
    },
    Config, Sample,
};

/// The bytes of rtrb's ring: four of the largest messages, about the size of a GSP
/// ring (63 slots of 4 KiB).
pub const RTRB_CAPACITY: usize = 256 * 1024;
/// 10^6: MB/s.
const MEGA: f64 = 1e6;

/// Measures rtrb carrying messages of `len` bytes from the driver's CPU to the GSP's, in
/// MB/s.
pub fn rtrb_stream(cfg: &Config, len: usize) -> Sample {
    let (mut tx, mut rx) = RingBuffer::<u8>::new(RTRB_CAPACITY);
    let stop = AtomicBool::new(false);
    let stop = &stop;
    let (rate, ()) = run_pinned(
        move || {
            let mut src = std::vec![0u8; len];
            fill_pattern(&mut src, 5);
            let mut send = || {
                while tx.push_entire_slice(&src).is_err() {
                    spin_loop();
                }
            };
            for _ in 0..2 * RTRB_CAPACITY.div_ceil(len) {
                send();
            }
            let span = Span::start(cfg);
            let mut sent = 0;
            while !span.over(sent) {
                send();
                sent += 1;
            }
            // Everything sent has been copied out once every slot is free again.
            while tx.slots() != RTRB_CAPACITY {
                spin_loop();
            }
            let rate = span.rate(sent * len, MEGA);
            // ORDERING: `Release`: nothing to publish but the request; pairs with the
            // consumer's `Acquire` load.
            stop.store(true, Release);
            rate
        },
        move || {
            let mut dst = std::vec![0u8; len];
            loop {
                if rx.pop_entire_slice(&mut dst).is_ok() {
                    black_box(&mut dst);
                // ORDERING: `Acquire`, pairs with the producer's `Release` store.
                } else if stop.load(Acquire) {
                    return;
                } else {
                    spin_loop();
                }
            }
        },
    );
    Sample::rate(rate)
}
