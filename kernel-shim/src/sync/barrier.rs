// SPDX-License-Identifier: GPL-2.0

//! Memory barriers, as upstream's `rust/kernel/sync/barrier.rs`.
//!
//! Each function takes a flavour marker: [`Full`] orders every earlier access before
//! every later one, [`Read`] orders loads against loads, [`Write`] orders stores against
//! stores (Documentation/memory-barriers.txt). The instructions are exactly the kernel's:
//!
//! | call | arm64 | x86-64 |
//! |---|---|---|
//! | `dma_mb(Full / Read / Write)` | `dmb osh` / `dmb oshld` / `dmb oshst` | `mfence` / compiler / compiler |
//! | `smp_mb(Full / Read / Write)` | `dmb ish` / `dmb ishld` / `dmb ishst` | `lock addl $0,-4(%rsp)` / compiler / compiler |
//! | `mb(Full / Read / Write)` | `dsb sy` / `dsb ld` / `dsb st` | `mfence` / `lfence` / `sfence` |
//!
//! Every instruction is emitted by an `asm!` block without `nomem`, so it is a compiler
//! barrier as well. The instructions are the backend's (`backend::arch`); under loom
//! [`dma_mb`] is a recorded fence, in the trace build a marked, mutable instruction.
//!
//! # Benchmark feature
//!
//! `dma-mb-stats`, for the benchmark (`tools/bench`) only and off by default: every
//! executed [`dma_mb`], and every barrier of `readl`/`writel`, is counted in global
//! relaxed atomics (`stats`). Without it nothing is counted and a barrier costs exactly
//! its instruction. (The benchmark's barrier variants are copies of the source with other
//! barriers, `cargo xtask variant-tree`: nothing here changes a barrier.)

use crate::backend::{
    arch::{
        self,
        Barrier, //
    },
    mem, //
};

mod private {
    pub trait Sealed {}
}

/// A barrier flavour. Sealed: the flavours are [`Full`], [`Read`] and [`Write`].
pub trait MemoryBarrier: private::Sealed {
    /// The backend's instructions of this flavour.
    #[doc(hidden)]
    type Barrier: Barrier;
}

/// The barrier flavours, as upstream's `kernel::sync::barrier::ordering`.
///
/// [`Full`] is not a type of its own: it is the atomics' fully ordered
/// [`crate::sync::atomic::ordering::Full`], so that one name serves both. As a barrier it
/// orders all earlier memory accesses before all later ones.
pub mod ordering {
    pub use crate::sync::atomic::ordering::Full;

    /// Orders earlier loads before later loads.
    #[derive(Clone, Copy, Debug)]
    pub struct Read;

    /// Orders earlier stores before later stores.
    #[derive(Clone, Copy, Debug)]
    pub struct Write;
}

pub use ordering::{
    Full,
    Read,
    Write, //
};

/// The flavours' names, in the order of the arrays of `stats::DmaMbCounts`.
pub const FLAVOURS: [&str; 3] = ["Full", "Read", "Write"];

/// The instruction [`dma_mb`] of each flavour of [`FLAVOURS`] emits on this architecture;
/// empty for a compiler barrier.
pub const DMA_INSTRUCTIONS: [&str; 3] = [
    arch::Full::DMA_INSTRUCTION,
    arch::Read::DMA_INSTRUCTION,
    arch::Write::DMA_INSTRUCTION,
];

impl private::Sealed for Full {}
impl private::Sealed for Read {}
impl private::Sealed for Write {}

impl MemoryBarrier for Full {
    type Barrier = arch::Full;
}

impl MemoryBarrier for Read {
    type Barrier = arch::Read;
}

impl MemoryBarrier for Write {
    type Barrier = arch::Write;
}

/// A DMA memory barrier: orders accesses as a bus-mastering device sees them.
///
/// With the feature `dma-mb-stats` (benchmarks only) the call is counted (`stats`).
///
/// With the feature `trace` it is applied as `VGSP_MUTANT` mutates the barrier at the
/// caller's source location (`kernel::trace`); under loom it is a fence, recorded and
/// mutable by the caller's source location (`kernel::model`).
#[cfg_attr(any(loom, feature = "trace"), track_caller)]
#[inline(always)]
pub fn dma_mb<T: MemoryBarrier>(_: T) {
    mem::dma_mb::<T::Barrier>()
}

/// The DMA barrier of `readl` and `writel` (upstream's `__iormb` and `__iowmb`, which on
/// arm64 are `dma_rmb` and `dma_wmb`): the architecture's, not the driver's; `stats`
/// counts it apart from [`dma_mb`]; under loom it is recorded at the caller's source
/// location.
#[cfg_attr(loom, track_caller)]
#[inline(always)]
pub(crate) fn io_dma_mb<T: MemoryBarrier>(_: T) {
    mem::io_dma_mb::<T::Barrier>()
}

#[cfg(feature = "dma-mb-stats")]
pub use crate::backend::stats;

/// An SMP memory barrier: orders accesses as other CPUs see them.
#[inline(always)]
pub fn smp_mb<T: MemoryBarrier>(_: T) {
    T::Barrier::smp()
}

/// A mandatory barrier: orders accesses as any observer sees them, MMIO included.
#[inline(always)]
pub fn mb<T: MemoryBarrier>(_: T) {
    T::Barrier::mb()
}
