// SPDX-License-Identifier: GPL-2.0

//! What the measurements share: page-aligned buffers, padded cache lines, test
//! patterns, and the clock of one repetition.

use std::{
    alloc::{
        alloc_zeroed,
        dealloc,
        handle_alloc_error,
        Layout, //
    },
    ptr::NonNull,
    time::{
        Duration,
        Instant, //
    },
};

use crate::Config;

/// The alignment of every buffer: a page, as the slots of the GSP rings.
const PAGE: usize = 4096;

/// A value alone in its cache line (128 bytes: two lines, for the adjacent-line
/// prefetcher).
#[repr(align(128))]
pub(crate) struct Padded<T>(pub T);

/// Page-aligned, zeroed heap bytes owned by one thread at a time.
///
/// # Invariants
///
/// `ptr` is an allocation of `len` bytes (at least 1) with the layout of [`Self::layout`],
/// owned by the value.
pub(crate) struct PageBuf {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: A `PageBuf` owns its bytes exclusively, like a `Box<[u8]>`; moving it to another
// thread moves that ownership.
unsafe impl Send for PageBuf {}

impl PageBuf {
    /// Allocates `len` zeroed bytes, page aligned.
    pub(crate) fn new(len: usize) -> Self {
        let layout = Self::layout(len);
        // SAFETY: `layout` has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(ptr) else {
            handle_alloc_error(layout)
        };
        // INVARIANT: `ptr` was just allocated with `Self::layout(len)`.
        Self { ptr, len }
    }

    /// Allocates `len` bytes filled with the pattern of `seed`.
    pub(crate) fn with_pattern(len: usize, seed: u64) -> Self {
        let mut buf = Self::new(len);
        fill_pattern(buf.as_mut_slice(), seed);
        buf
    }

    fn layout(len: usize) -> Layout {
        // PANIC: `PAGE` is a power of two and no buffer here comes near `isize::MAX`.
        Layout::from_size_align(len.max(1), PAGE).expect("buffer layout")
    }

    /// Returns the bytes.
    pub(crate) fn as_slice(&self) -> &[u8] {
        // SAFETY: By the type invariant `ptr` is valid for `len` bytes, initialised (zeroed
        // at allocation); `&self` excludes writers for the borrow's life.
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// Returns the bytes, mutably.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: As `as_slice`; `&mut self` makes the borrow exclusive.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for PageBuf {
    fn drop(&mut self) {
        // SAFETY: By the type invariant `ptr` was allocated with this layout, and it is not
        // used after this.
        unsafe { dealloc(self.ptr.as_ptr(), Self::layout(self.len)) };
    }
}

/// Page-aligned bytes that two threads share, reachable only through a raw pointer:
/// who may touch which bytes when is the business of the protocol that uses it.
pub(crate) struct SharedBuf(PageBuf);

// SAFETY: `SharedBuf` hands out no references to its bytes, only a raw pointer; every
// access through it is an `unsafe` copy whose exclusivity the caller's protocol provides.
unsafe impl Sync for SharedBuf {}

impl SharedBuf {
    /// Allocates `len` zeroed bytes, page aligned.
    pub(crate) fn new(len: usize) -> Self {
        Self(PageBuf::new(len))
    }

    /// Returns a pointer to byte `offset` (which callers keep within the buffer).
    pub(crate) fn at(&self, offset: usize) -> *mut u8 {
        self.0.ptr.as_ptr().wrapping_add(offset)
    }
}

/// Fills `buf` with an xorshift stream of `seed`, so that payloads are not all zeroes.
pub(crate) fn fill_pattern(buf: &mut [u8], seed: u64) {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for chunk in buf.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
}

/// Returns `d` in nanoseconds.
pub(crate) fn nanos(d: Duration) -> f64 {
    // CAST: exact below 2^53 ns (104 days).
    d.as_nanos() as f64
}

/// The clock of one repetition: it runs at least `min_iters` iterations and at least
/// `sample_time`.
pub(crate) struct Span {
    start: Instant,
    min_iters: usize,
    sample_time: Duration,
}

impl Span {
    /// Starts the clock.
    pub(crate) fn start(cfg: &Config) -> Self {
        Self {
            start: Instant::now(),
            min_iters: cfg.min_iters,
            sample_time: cfg.sample_time,
        }
    }

    /// Returns whether a repetition that has done `iters` iterations by `now` is over.
    pub(crate) fn over_at(&self, iters: usize, now: Instant) -> bool {
        iters >= self.min_iters && now.duration_since(self.start) >= self.sample_time
    }

    /// Returns whether a repetition that has done `iters` iterations is over.
    pub(crate) fn over(&self, iters: usize) -> bool {
        iters >= self.min_iters && self.start.elapsed() >= self.sample_time
    }

    /// Returns how much of `sample_time` is left (zero once it has run out).
    pub(crate) fn left(&self) -> Duration {
        self.sample_time.saturating_sub(self.start.elapsed())
    }

    /// Returns the rate of `bytes` moved since the start, in units of `unit` bytes a
    /// second.
    pub(crate) fn rate(&self, bytes: usize, unit: f64) -> f64 {
        // CAST: byte counts stay far below 2^53.
        bytes as f64 / self.start.elapsed().as_secs_f64() / unit
    }
}
