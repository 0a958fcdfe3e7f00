// SPDX-License-Identifier: GPL-2.0

//! The plain backend of `sync::barrier` and `dma` (host and freestanding builds): each
//! barrier is its instruction ([`super::arch`]), each shared access one volatile access
//! or a copy, and nothing is recorded. With `dma-mb-stats` every barrier is counted.

use super::{
    arch::Barrier,
    stats, //
};

/// Whether an atomic may live in coherent memory (`Atomic::from_ptr`): yes.
pub(crate) const ATOMICS_IN_MEMORY: bool = true;

/// The driver's DMA barrier `B`.
#[inline(always)]
pub(crate) fn dma_mb<B: Barrier>() {
    stats::count_driver(B::INDEX);
    B::dma()
}

/// The DMA barrier `B` of `readl`/`writel`.
#[inline(always)]
pub(crate) fn io_dma_mb<B: Barrier>() {
    stats::count_io(B::INDEX);
    B::dma()
}

/// A coherent allocation of `len` bytes at `base` was made: nothing to do.
#[inline(always)]
pub(crate) fn region(_base: usize, _len: usize) {}

/// The coherent allocation at `base` is freed: nothing to do.
#[inline(always)]
pub(crate) fn region_end(_base: usize) {}

/// A load of coherent memory at `addr` returned `value`: nothing to do.
#[inline(always)]
pub(crate) fn loaded(_addr: usize, _value: u64) {}

/// Loads a shared 32-bit word.
///
/// # Safety
///
/// `p` must be valid and aligned for a 32-bit read.
#[track_caller]
#[inline(always)]
pub(crate) unsafe fn load_u32(p: *const u32) -> u32 {
    // SAFETY: The caller's contract.
    unsafe { core::ptr::read_volatile(p) }
}

/// Stores a shared 32-bit word.
///
/// # Safety
///
/// `p` must be valid and aligned for a 32-bit write.
#[track_caller]
#[inline(always)]
pub(crate) unsafe fn store_u32(p: *mut u32, value: u32) {
    // SAFETY: The caller's contract.
    unsafe { core::ptr::write_volatile(p, value) }
}

/// Copies `len` bytes out of shared memory at `src`.
///
/// # Safety
///
/// Both ranges must be valid for `len` bytes and must not overlap.
#[track_caller]
#[inline(always)]
pub(crate) unsafe fn copy_in(src: *const u8, dst: *mut u8, len: usize) {
    // SAFETY: The caller's contract.
    unsafe { core::ptr::copy_nonoverlapping(src, dst, len) }
}

/// Copies `len` bytes into shared memory at `dst`.
///
/// # Safety
///
/// Both ranges must be valid for `len` bytes and must not overlap.
#[track_caller]
#[inline(always)]
pub(crate) unsafe fn copy_out(src: *const u8, dst: *mut u8, len: usize) {
    // SAFETY: The caller's contract.
    unsafe { core::ptr::copy_nonoverlapping(src, dst, len) }
}
