// SPDX-License-Identifier: GPL-2.0

//! The environment of the shim's modules inside a kernel: the clock, sleeping and
//! coherent memory, from the kernel itself.
//!
//! The in-kernel flavour of the shim's `env.rs`: the shared modules (`dma`, `io`,
//! `time::delta`) call these by the same names on the host and here.

use core::ptr::NonNull;

use crate::{
    alloc::flags::{
        GFP_KERNEL,
        __GFP_ZERO, //
    },
    bindings,
    ffi::{
        c_uint,
        c_ulong, //
    },
};

/// The page size: the alignment of every coherent allocation.
pub(crate) const PAGE_SIZE: usize = crate::page::PAGE_SIZE;

/// Reads the monotonic clock (`ktime_get`) in nanoseconds.
pub(crate) fn ktime_get_ns() -> u64 {
    // SAFETY: `ktime_get` has no preconditions.
    let ns = unsafe { bindings::ktime_get() };
    // CAST: the monotonic clock starts at zero at boot and does not go negative.
    ns as u64
}

/// Sleeps or spins for `ns` nanoseconds, as C's `fsleep`: `ndelay` up to 10 µs,
/// `usleep_range` up to 20 ms, `msleep` beyond.
///
/// A spin ends with `cond_resched()`: the callers poll for another agent, which may be a
/// task waiting for this CPU, and a kernel without preemption would never switch to it.
pub(crate) fn fsleep_ns(ns: u64) {
    let us = ns.div_ceil(1_000);
    if us <= 10 {
        // CAST: at most 10 000.
        // SAFETY: `__ndelay` busy-waits and has no preconditions.
        unsafe { bindings::__ndelay(ns as c_ulong) };
        // SAFETY: The callers run in process context, where rescheduling is allowed.
        unsafe { bindings::__cond_resched() };
    } else if us <= 20_000 {
        // CAST: at most 20 000.
        let us = us as c_ulong;
        // SAFETY: Sleeping is allowed: the shim's callers run in process context.
        unsafe { bindings::usleep_range_state(us, 2 * us, bindings::TASK_UNINTERRUPTIBLE) };
    } else {
        let ms = c_uint::try_from(us.div_ceil(1_000)).unwrap_or(c_uint::MAX);
        // SAFETY: As above.
        unsafe { bindings::msleep(ms) };
    }
}

/// Allocates `size` zeroed, page-aligned, physically contiguous bytes for
/// `dma::Coherent`, or returns `None`.
///
/// There is no device behind the queues yet (the virtual GSP is a kernel thread), so the
/// memory comes from the page allocator rather than `dma_alloc_coherent`, and its bus
/// address is its kernel address.
pub(crate) fn alloc_coherent(size: usize) -> Option<NonNull<u8>> {
    // SAFETY: `alloc_pages_exact` has no preconditions; it returns null on failure.
    let ptr = unsafe {
        bindings::alloc_pages_exact_noprof(size.max(1), (GFP_KERNEL | __GFP_ZERO).as_raw())
    };
    NonNull::new(ptr.cast::<u8>())
}

/// Frees memory from [`alloc_coherent`].
///
/// # Safety
///
/// `ptr` must come from `alloc_coherent(size)` and not be used afterwards.
pub(crate) unsafe fn free_coherent(ptr: NonNull<u8>, size: usize) {
    // SAFETY: The caller guarantees `ptr` came from `alloc_pages_exact` with this size.
    unsafe { bindings::free_pages_exact(ptr.as_ptr().cast(), size.max(1)) };
}
