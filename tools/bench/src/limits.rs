// SPDX-License-Identifier: GPL-2.0

//! The physical limits (the cache-line ping-pong, the pointer-and-data ring round trip,
//! `memcpy`, the cross-core stream) and
//! the single-thread profile hints (the checksum). See the crate documentation for what
//! each figure is.

use std::{
    hint::{
        black_box,
        spin_loop, //
    },
    sync::atomic::{
        AtomicBool, AtomicU64,
        Ordering::{
            Acquire,
            Relaxed,
            Release, //
        },
    },
    time::Instant,
};

use nova_core::gsp::fw;

use crate::{
    pin::{
        run_on,
        run_pinned,
        DRIVER_CPU, //
    },
    util::{
        nanos,
        Padded,
        PageBuf,
        SharedBuf,
        Span, //
    },
    Config, Sample,
};

/// The slots of the cross-core stream's ring.
pub const STREAM_SLOTS: usize = 4;
/// Round trips of the ping-pong before the clock starts.
const WARM_ROUND_TRIPS: usize = 1000;
/// The value that tells the ping-pong's answering thread to stop (never a turn: turns
/// count up from 1).
const STOP: u64 = u64::MAX;
/// Bytes a single-thread loop moves between looks at the clock.
const BATCH_BYTES: usize = 256 * 1024;
/// 10^9: GB/s.
const GIGA: f64 = 1e9;
/// 10^6: MB/s.
const MEGA: f64 = 1e6;

/// Runs `round_trip` [`WARM_ROUND_TRIPS`] times, then times each run for `cfg`'s span;
/// returns the times, ns.
fn time_round_trips(cfg: &Config, mut round_trip: impl FnMut()) -> Vec<f64> {
    for _ in 0..WARM_ROUND_TRIPS {
        round_trip();
    }
    let span = Span::start(cfg);
    let mut ns = Vec::new();
    loop {
        let t0 = Instant::now();
        if span.over_at(ns.len(), t0) {
            return ns;
        }
        round_trip();
        ns.push(nanos(t0.elapsed()));
    }
}

/// Measures the cache-line ping-pong round trip between the two pinned threads: median
/// and p99 in nanoseconds.
pub fn ping_pong(cfg: &Config) -> Sample {
    let line = Padded(AtomicU64::new(0));
    let (mut ns, ()) = run_pinned(
        || {
            let mut turn = 0u64;
            let ns = time_round_trips(cfg, || {
                // ORDERING: `Release`/`Acquire` as a queue's pointers; there is no data behind
                // the counter, so they only make the figure comparable. Pairs with the other
                // thread's `Acquire` load and `Release` store.
                line.0.store(turn + 1, Release);
                while line.0.load(Acquire) != turn + 2 {
                    spin_loop();
                }
                turn += 2;
            });
            // ORDERING: `Release`, as above.
            line.0.store(STOP, Release);
            ns
        },
        || {
            let mut expect = 1u64;
            loop {
                // ORDERING: `Acquire`, as above.
                let seen = line.0.load(Acquire);
                if seen == STOP {
                    break;
                }
                if seen == expect {
                    // ORDERING: `Release`, as above.
                    line.0.store(seen + 1, Release);
                    expect += 2;
                } else {
                    spin_loop();
                }
            }
        },
    );
    Sample::latencies(&mut ns)
}

/// One direction of [`ring_round_trip`]: a cache line of payload and, in a line of its
/// own, the counter that publishes it.
struct Mailbox {
    data: Padded<[AtomicU64; LINE_WORDS]>,
    count: Padded<AtomicU64>,
}

/// The 64-bit words of a cache line.
const LINE_WORDS: usize = 8;

impl Mailbox {
    fn new() -> Self {
        Self {
            data: Padded([const { AtomicU64::new(0) }; LINE_WORDS]),
            count: Padded(AtomicU64::new(0)),
        }
    }

    /// Writes message `n` into the data line and publishes it.
    fn post(&self, n: u64) {
        for word in &self.data.0 {
            // ORDERING: `Relaxed`: the `Release` store of the counter below publishes it.
            word.store(n, Relaxed);
        }
        // ORDERING: `Release`: the data stores above happen before the other thread's data
        // loads. Pairs with the `Acquire` load in `take`.
        self.count.0.store(n, Release);
    }

    /// Waits for message `n` (or [`STOP`]) and reads the data line; returns whether it was
    /// message `n`.
    fn take(&self, n: u64) -> bool {
        loop {
            // ORDERING: `Acquire`: pairs with the `Release` store in `post`.
            match self.count.0.load(Acquire) {
                c if c == n => break,
                STOP => return false,
                _ => spin_loop(),
            }
        }
        let mut sum = 0;
        for word in &self.data.0 {
            // ORDERING: `Relaxed`: ordered after the counter by its `Acquire` load.
            sum ^= word.load(Relaxed);
        }
        black_box(sum);
        true
    }
}

/// Measures the round trip of a minimal pointer-and-data ring between the two pinned
/// threads: each way, one cache line of payload published by a counter in a line of its
/// own, the reader loading the payload only after it has seen the counter. Median and
/// p99 in nanoseconds.
pub fn ring_round_trip(cfg: &Config) -> Sample {
    let (to_gsp, to_driver) = (Mailbox::new(), Mailbox::new());
    let (mut ns, ()) = run_pinned(
        || {
            let mut n = 0u64;
            let ns = time_round_trips(cfg, || {
                n += 1;
                to_gsp.post(n);
                to_driver.take(n);
            });
            // ORDERING: `Release`: nothing to publish but the request; pairs with the
            // `Acquire` load in `take`.
            to_gsp.count.0.store(STOP, Release);
            ns
        },
        || {
            let mut n = 1u64;
            while to_gsp.take(n) {
                to_driver.post(n);
                n += 1;
            }
        },
    );
    Sample::latencies(&mut ns)
}

/// Measures `memcpy` of `len` bytes between two page-aligned buffers on the driver's
/// CPU, in GB/s.
pub fn memcpy(cfg: &Config, len: usize) -> Sample {
    run_on(DRIVER_CPU, || {
        let src = PageBuf::with_pattern(len, 1);
        let mut dst = PageBuf::new(len);
        let batch = (BATCH_BYTES / len).max(1);
        let mut copy_batch = || {
            for _ in 0..batch {
                dst.as_mut_slice()
                    .copy_from_slice(black_box(src.as_slice()));
                black_box(dst.as_mut_slice());
            }
        };
        copy_batch();
        let span = Span::start(cfg);
        let mut copies = 0;
        while !span.over(copies) {
            copy_batch();
            copies += batch;
        }
        Sample::rate(span.rate(copies * len, GIGA))
    })
}

/// Measures [`fw::element::checksum`] over `len` bytes on the driver's CPU, in GB/s.
pub fn checksum(cfg: &Config, len: usize) -> Sample {
    run_on(DRIVER_CPU, || {
        let buf = PageBuf::with_pattern(len, 2);
        let batch = (BATCH_BYTES / len).max(1);
        let sum_batch = || {
            for _ in 0..batch {
                black_box(fw::element::checksum(black_box(buf.as_slice())));
            }
        };
        sum_batch();
        let span = Span::start(cfg);
        let mut sums = 0;
        while !span.over(sums) {
            sum_batch();
            sums += batch;
        }
        Sample::rate(span.rate(sums * len, GIGA))
    })
}

/// The cross-core stream: [`STREAM_SLOTS`] slots and one counter each way.
///
/// Slot `i % STREAM_SLOTS` belongs to the producer while `i >= consumed`, to the
/// consumer while `consumed <= i < produced`.
struct StreamRing {
    slots: SharedBuf,
    slot_len: usize,
    /// Messages the producer has copied in.
    produced: Padded<AtomicU64>,
    /// Messages the consumer has copied out.
    consumed: Padded<AtomicU64>,
    /// Set by the producer once everything it sent was consumed.
    stop: Padded<AtomicBool>,
}

impl StreamRing {
    fn new(slot_len: usize) -> Self {
        Self {
            slots: SharedBuf::new(STREAM_SLOTS * slot_len),
            slot_len,
            produced: Padded(AtomicU64::new(0)),
            consumed: Padded(AtomicU64::new(0)),
            stop: Padded(AtomicBool::new(false)),
        }
    }

    /// Returns the slot of message `i`.
    fn slot(&self, i: u64) -> *mut u8 {
        // CAST: `i % STREAM_SLOTS` is below `STREAM_SLOTS`.
        self.slots
            .at((i % STREAM_SLOTS as u64) as usize * self.slot_len)
    }

    /// Copies `src` into the slot of message `*head` once it is free, and publishes it.
    fn send(&self, src: &[u8], head: &mut u64) {
        // ORDERING: `Acquire`: the consumer's copy out of the slot happens before our copy
        // into it. Pairs with the consumer's `Release` store of `consumed`.
        while *head - self.consumed.0.load(Acquire) >= STREAM_SLOTS as u64 {
            spin_loop();
        }
        // SAFETY: The slot of `*head` is the producer's: the consumer consumed its previous
        // message (checked above) and reads it again only once `produced` passes `*head`.
        // It holds `slot_len == src.len()` bytes inside `slots`, which `src` cannot overlap.
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), self.slot(*head), src.len()) };
        *head += 1;
        // ORDERING: `Release`: our copy into the slot happens before the consumer's copy
        // out of it. Pairs with the consumer's `Acquire` load of `produced`.
        self.produced.0.store(*head, Release);
    }

    /// Waits until the consumer has consumed `head` messages.
    fn drain(&self, head: u64) {
        // ORDERING: `Acquire`, as in `send`.
        while self.consumed.0.load(Acquire) != head {
            spin_loop();
        }
    }

    /// The producer: returns MB/s.
    fn produce(&self, cfg: &Config) -> f64 {
        let src = PageBuf::with_pattern(self.slot_len, 3);
        let mut head = 0;
        for _ in 0..2 * STREAM_SLOTS {
            self.send(src.as_slice(), &mut head);
        }
        self.drain(head);
        let span = Span::start(cfg);
        let mut sent = 0;
        while !span.over(sent) {
            self.send(src.as_slice(), &mut head);
            sent += 1;
        }
        self.drain(head);
        let rate = span.rate(sent * self.slot_len, MEGA);
        // ORDERING: `Release`: nothing to publish but the request; pairs with the
        // consumer's `Acquire` load.
        self.stop.0.store(true, Release);
        rate
    }

    /// The consumer: copies every message out until told to stop.
    fn consume(&self) {
        let mut dst = PageBuf::new(self.slot_len);
        let mut tail = 0;
        loop {
            // ORDERING: `Acquire`: the producer's copy into the slots happens before our copy
            // out of them. Pairs with the producer's `Release` store of `produced`.
            let head = self.produced.0.load(Acquire);
            if head == tail {
                // ORDERING: `Acquire`, pairs with the `Release` store in `produce`.
                if self.stop.0.load(Acquire) {
                    return;
                }
                spin_loop();
                continue;
            }
            while tail != head {
                let out = dst.as_mut_slice();
                // SAFETY: The slot of `tail` is the consumer's: `produced` passed it (loaded
                // above) and the producer writes it again only once `consumed` passes it. It
                // holds `slot_len == out.len()` bytes inside `slots`, which `out` cannot
                // overlap.
                unsafe {
                    core::ptr::copy_nonoverlapping(self.slot(tail), out.as_mut_ptr(), out.len())
                };
                black_box(out);
                tail += 1;
                // ORDERING: `Release`: our copy out of the slot happens before the producer's
                // next copy into it. Pairs with the producer's `Acquire` load of `consumed`.
                self.consumed.0.store(tail, Release);
            }
        }
    }
}

/// Measures the cross-core stream with slots of `slot_len` bytes, producer on the
/// driver's CPU and consumer on the GSP's, in MB/s.
pub fn stream(cfg: &Config, slot_len: usize) -> Sample {
    let ring = StreamRing::new(slot_len);
    let (rate, ()) = run_pinned(|| ring.produce(cfg), || ring.consume());
    Sample::rate(rate)
}
