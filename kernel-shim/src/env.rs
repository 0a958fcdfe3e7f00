// SPDX-License-Identifier: GPL-2.0

//! The environment the shim runs in: the clock, sleeping and the log.
//!
//! With the `host` feature these come from [`crate::host`]. Without it the crate is
//! `no_std` and freestanding, and the embedding provides the functions below by name,
//! the way the kernel provides `ktime_get`, `fsleep` and `_printk` to its `kernel` crate.

#[cfg(loom)]
pub(crate) use crate::model::env::*;

#[cfg(all(feature = "host", not(loom)))]
pub(crate) use crate::host::env::*;

#[cfg(not(any(feature = "host", loom)))]
mod freestanding {
    extern "Rust" {
        fn kernel_shim_ktime_get_ns() -> u64;
        fn kernel_shim_fsleep_ns(ns: u64);
        fn kernel_shim_printk(level: &str, args: core::fmt::Arguments<'_>);
    }

    pub(crate) fn ktime_get_ns() -> u64 {
        // SAFETY: The embedding defines `kernel_shim_ktime_get_ns` with this signature; it has
        // no preconditions.
        unsafe { kernel_shim_ktime_get_ns() }
    }

    pub(crate) fn fsleep_ns(ns: u64) {
        // SAFETY: The embedding defines `kernel_shim_fsleep_ns` with this signature; it has no
        // preconditions.
        unsafe { kernel_shim_fsleep_ns(ns) }
    }

    pub(crate) fn printk(level: &str, args: core::fmt::Arguments<'_>) {
        // SAFETY: The embedding defines `kernel_shim_printk` with this signature; it has no
        // preconditions.
        unsafe { kernel_shim_printk(level, args) }
    }
}

#[cfg(not(any(feature = "host", loom)))]
pub(crate) use freestanding::*;

/// The page size: the alignment of every coherent allocation, as the kernel's.
pub(crate) const PAGE_SIZE: usize = 4096;

/// Allocates `size` zeroed, page-aligned bytes for [`crate::dma::Coherent`], or
/// returns `None`. Outside a kernel every backend has a global allocator.
pub(crate) fn alloc_coherent(size: usize) -> Option<core::ptr::NonNull<u8>> {
    let layout = core::alloc::Layout::from_size_align(size.max(1), PAGE_SIZE).ok()?;
    // SAFETY: `layout` has a non-zero size.
    core::ptr::NonNull::new(unsafe { alloc_crate::alloc::alloc_zeroed(layout) })
}

/// Frees memory from [`alloc_coherent`].
///
/// # Safety
///
/// `ptr` must come from `alloc_coherent(size)` and not be used afterwards.
pub(crate) unsafe fn free_coherent(ptr: core::ptr::NonNull<u8>, size: usize) {
    // PANIC: `alloc_coherent` made the same layout from the same `size`.
    let layout = core::alloc::Layout::from_size_align(size.max(1), PAGE_SIZE)
        .unwrap_or_else(|_| unreachable!());
    // SAFETY: The caller guarantees `ptr` was allocated with this layout.
    unsafe { alloc_crate::alloc::dealloc(ptr.as_ptr(), layout) };
}
