// SPDX-License-Identifier: GPL-2.0

//! The backends: what the API modules run on, chosen here, once, by the build.
//!
//! The API modules hold Linux 7.3's shapes and call into this layer; nothing here imports
//! an API module that imports it (only the leaf `error`). Two selections:
//!
//! | build | [`mem`]: DMA barriers and shared-memory accesses | [`env`]: clock, sleep, log |
//! |---|---|---|
//! | `--cfg loom` | [`model`]: loom fences and atomics, recorded | [`model`]'s virtual clock |
//! | feature `trace` | [`trace`]: the instructions, marked for the QEMU plugin | [`host`] |
//! | feature `host` | [`plain`]: the instructions | [`host`] |
//! | neither | [`plain`] | [`freestanding`]: the embedding's functions |
//!
//! Beside them: [`arch`] (the barrier instructions), `stats` (feature `dma-mb-stats`),
//! [`mutation`] (barrier mutations, for the model and the trace build), and, with the
//! `host` feature, [`failslab`] and [`dma_pool`] (test bench).

pub(crate) mod arch;
#[cfg(feature = "host")]
pub(crate) mod dma_pool;
#[cfg(feature = "host")]
pub mod failslab;
#[cfg(not(any(feature = "host", loom)))]
pub(crate) mod freestanding;
#[cfg(all(feature = "host", not(loom)))]
pub(crate) mod host;
#[cfg(loom)]
pub(crate) mod model;
#[cfg(any(loom, feature = "trace"))]
pub(crate) mod mutation;
#[cfg(not(any(loom, feature = "trace")))]
pub(crate) mod plain;
#[cfg(feature = "dma-mb-stats")]
pub mod stats;
#[cfg(all(feature = "trace", not(loom)))]
pub mod trace;

#[cfg(loom)]
pub(crate) use model::{
    self as mem,
    env, //
};

#[cfg(all(feature = "trace", not(loom)))]
pub(crate) use trace as mem;

#[cfg(not(any(loom, feature = "trace")))]
pub(crate) use plain as mem;

#[cfg(all(feature = "host", not(loom)))]
pub(crate) use host as env;

#[cfg(not(any(feature = "host", loom)))]
pub(crate) use freestanding as env;

/// Without `dma-mb-stats` nothing is counted.
#[cfg(not(any(feature = "dma-mb-stats", loom)))]
pub(crate) mod stats {
    #[inline(always)]
    pub(crate) fn count_driver(_flavour: usize) {}

    #[inline(always)]
    pub(crate) fn count_io(_flavour: usize) {}
}

/// The pool a device's coherent memory may come from: the host's [`dma_pool::DmaPool`].
#[cfg(all(feature = "host", not(loom)))]
pub(crate) use dma_pool::DmaPool as DevicePool;

/// The pool a device's coherent memory may come from: none in this build.
#[cfg(not(all(feature = "host", not(loom))))]
#[derive(Debug)]
pub(crate) enum DevicePool {}

#[cfg(not(all(feature = "host", not(loom))))]
impl DevicePool {
    pub(crate) fn alloc_zeroed(
        &self,
        _size: usize,
    ) -> crate::error::Result<(core::ptr::NonNull<u8>, DmaAddress)> {
        match *self {}
    }
}

/// Whether the allocation about to be made is to fail: one a test armed on this thread
/// with `host::failslab::fail_nth` on the host, none otherwise.
#[cfg(feature = "host")]
pub(crate) use failslab::should_fail as alloc_fails;

/// Whether the allocation about to be made is to fail: never, without the host's
/// `failslab`.
#[cfg(not(feature = "host"))]
#[inline]
pub(crate) fn alloc_fails() -> bool {
    false
}

/// A barrier flavour, as the backends tell them apart: `sync::barrier`'s `Full`, `Read`
/// and `Write`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Flavour {
    /// Orders everything.
    Full,
    /// Orders loads against loads.
    Read,
    /// Orders stores against stores.
    Write,
}

/// A bus address as the device sees it.
pub type DmaAddress = u64;

/// The page size: the alignment of every coherent allocation, as the kernel's.
pub(crate) const PAGE_SIZE: usize = 4096;

/// Allocates `size` zeroed, page-aligned bytes for `dma::Coherent`, or returns `None`.
/// Outside a kernel every backend has a global allocator.
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
