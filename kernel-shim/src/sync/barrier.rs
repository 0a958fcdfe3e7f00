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
//! barrier as well.
//!
//! # Benchmark feature
//!
//! `dma-mb-stats`, for the benchmark (`tests/bench`) only and off by default: every
//! executed [`dma_mb`], and every barrier of `readl`/`writel`, is counted in global
//! relaxed atomics (`stats`). Without it nothing is counted and a barrier costs exactly
//! its instruction. (The benchmark's barrier variants are copies of the source with other
//! barriers, `cargo xtask variant-tree`: nothing here changes a barrier.)

mod private {
    pub trait Sealed {}
}

/// A barrier flavour. Sealed: the flavours are [`Full`], [`Read`] and [`Write`].
pub trait MemoryBarrier: private::Sealed {
    #[doc(hidden)]
    #[cfg(loom)]
    const FLAVOUR: crate::model::Flavour;
    /// The flavour's index in [`FLAVOURS`]: 0 [`Full`], 1 [`Read`], 2 [`Write`].
    #[doc(hidden)]
    const INDEX: usize;
    /// The instruction [`dma_mb`] of this flavour emits on this architecture; empty for a
    /// compiler barrier.
    #[doc(hidden)]
    const DMA_INSTRUCTION: &'static str;
    #[doc(hidden)]
    fn dma();
    #[doc(hidden)]
    fn smp();
    #[doc(hidden)]
    fn mb();
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

/// The flavours' names, in the order of [`MemoryBarrier`]'s indices (and of the arrays of
/// `stats::DmaMbCounts`).
pub const FLAVOURS: [&str; 3] = ["Full", "Read", "Write"];

/// The instruction [`dma_mb`] of each flavour of [`FLAVOURS`] emits on this architecture;
/// empty for a compiler barrier.
pub const DMA_INSTRUCTIONS: [&str; 3] = [
    Full::DMA_INSTRUCTION,
    Read::DMA_INSTRUCTION,
    Write::DMA_INSTRUCTION,
];

impl private::Sealed for Full {}
impl private::Sealed for Read {}
impl private::Sealed for Write {}

/// Emits one barrier instruction (or none) as an `asm!` block that is also a compiler
/// barrier.
macro_rules! define_barrier {
    ($flavour:ident = $index:literal, dma: $dma:literal, smp: $smp:literal, mb: $mb:literal) => {
        impl MemoryBarrier for $flavour {
            #[cfg(loom)]
            const FLAVOUR: crate::model::Flavour = crate::model::Flavour::$flavour;
            const INDEX: usize = $index;
            const DMA_INSTRUCTION: &'static str = $dma;

            #[inline(always)]
            fn dma() {
                // SAFETY: The instruction only orders memory accesses; it reads and writes no
                // memory and leaves every register intact.
                unsafe { core::arch::asm!($dma, options(nostack, preserves_flags)) }
            }

            #[inline(always)]
            fn smp() {
                // SAFETY: As above, except that the x86 `lock add` rewrites (with the same value)
                // the word below the stack pointer, as the kernel's `smp_mb` does: without
                // `nostack` the compiler keeps nothing in the red zone across the block, and
                // without `preserves_flags` it assumes the flags are clobbered.
                unsafe { core::arch::asm!($smp) }
            }

            #[inline(always)]
            fn mb() {
                // SAFETY: As above.
                unsafe { core::arch::asm!($mb, options(nostack, preserves_flags)) }
            }
        }
    };
}

#[cfg(target_arch = "aarch64")]
define_barrier!(Full = 0, dma: "dmb osh", smp: "dmb ish", mb: "dsb sy");
#[cfg(target_arch = "aarch64")]
define_barrier!(Read = 1, dma: "dmb oshld", smp: "dmb ishld", mb: "dsb ld");
#[cfg(target_arch = "aarch64")]
define_barrier!(Write = 2, dma: "dmb oshst", smp: "dmb ishst", mb: "dsb st");

// x86-64 is TSO: only store->load needs an instruction; the others are compiler barriers
// (an empty `asm!` block without `nomem`).
#[cfg(target_arch = "x86_64")]
define_barrier!(Full = 0, dma: "mfence", smp: "lock add dword ptr [rsp - 4], 0", mb: "mfence");
#[cfg(target_arch = "x86_64")]
define_barrier!(Read = 1, dma: "", smp: "", mb: "lfence");
#[cfg(target_arch = "x86_64")]
define_barrier!(Write = 2, dma: "", smp: "", mb: "sfence");

#[cfg(not(any(target_arch = "aarch64", target_arch = "x86_64")))]
compile_error!("kernel::sync::barrier: no barrier instructions for this architecture");

/// A DMA memory barrier: orders accesses as a bus-mastering device sees them.
///
/// With the feature `dma-mb-stats` (benchmarks only) the call is counted (`stats`).
///
/// With the feature `trace` it is applied as `VGSP_MUTANT` mutates the barrier at the
/// caller's source location (`kernel::trace`).
#[cfg(not(loom))]
#[cfg_attr(feature = "trace", track_caller)]
#[inline(always)]
pub fn dma_mb<T: MemoryBarrier>(_: T) {
    #[cfg(feature = "dma-mb-stats")]
    stats::count_driver(T::INDEX);
    #[cfg(feature = "trace")]
    crate::trace::barrier::<T>(core::panic::Location::caller());
    #[cfg(not(feature = "trace"))]
    T::dma()
}

/// A DMA memory barrier, under the model: a loom fence, recorded and mutable by the
/// caller's source location (`kernel::model`).
#[cfg(loom)]
#[track_caller]
pub fn dma_mb<T: MemoryBarrier>(_: T) {
    crate::model::barrier(T::FLAVOUR)
}

/// The DMA barrier of `readl` and `writel` (upstream's `__iormb` and `__iowmb`, which on
/// arm64 are `dma_rmb` and `dma_wmb`): the architecture's, not the driver's; `stats`
/// counts it apart from [`dma_mb`].
#[cfg(not(loom))]
#[inline(always)]
pub(crate) fn io_dma_mb<T: MemoryBarrier>(_: T) {
    #[cfg(feature = "dma-mb-stats")]
    stats::count_io(T::INDEX);
    T::dma()
}

/// The DMA barrier of `readl` and `writel`, under the model: as [`dma_mb`], recorded at
/// the caller's source location.
#[cfg(loom)]
#[track_caller]
pub(crate) fn io_dma_mb<T: MemoryBarrier>(_: T) {
    crate::model::barrier(T::FLAVOUR)
}

/// Counts of executed DMA barriers (feature `dma-mb-stats`, for the benchmark only).
///
/// The counters are global relaxed atomics, shared by every thread: a caller that wants
/// one agent's barriers runs the agents in turns and takes a [`stats::snapshot`] around
/// each turn ([`stats::DmaMbCounts::since`]).
#[cfg(feature = "dma-mb-stats")]
pub mod stats {
    use core::sync::atomic::{
        AtomicU64,
        Ordering::Relaxed, //
    };

    static DMA_MB: [AtomicU64; 3] = [const { AtomicU64::new(0) }; 3];
    static IO: [AtomicU64; 3] = [const { AtomicU64::new(0) }; 3];

    /// Counts one [`super::dma_mb`] of the flavour with index `flavour`.
    #[inline(always)]
    pub(super) fn count_driver(flavour: usize) {
        DMA_MB[flavour].fetch_add(1, Relaxed);
    }

    /// Counts one barrier of `readl`/`writel` of the flavour with index `flavour`.
    #[inline(always)]
    pub(super) fn count_io(flavour: usize) {
        IO[flavour].fetch_add(1, Relaxed);
    }

    /// Executed DMA barriers, each array indexed as [`super::FLAVOURS`].
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct DmaMbCounts {
        /// [`super::dma_mb`] calls, by flavour: the barrier instructions they emitted.
        pub asked: [u64; 3],
        /// The barriers of `readl`/`writel` (`Io::read32`, `Io::write32`), by flavour.
        pub io: [u64; 3],
    }

    impl DmaMbCounts {
        /// Returns the barriers executed between `earlier` and `self`.
        pub fn since(&self, earlier: &Self) -> Self {
            let sub = |a: [u64; 3], b: [u64; 3]| core::array::from_fn(|i| a[i] - b[i]);
            Self {
                asked: sub(self.asked, earlier.asked),
                io: sub(self.io, earlier.io),
            }
        }

        /// Returns the barrier instructions executed by flavour, `dma_mb` and
        /// `readl`/`writel` together.
        pub fn instructions(&self) -> [u64; 3] {
            core::array::from_fn(|i| self.asked[i] + self.io[i])
        }
    }

    /// Returns the counts so far.
    pub fn snapshot() -> DmaMbCounts {
        DmaMbCounts {
            asked: core::array::from_fn(|i| DMA_MB[i].load(Relaxed)),
            io: core::array::from_fn(|i| IO[i].load(Relaxed)),
        }
    }

    /// Sets every counter to zero.
    pub fn reset() {
        for c in DMA_MB.iter().chain(IO.iter()) {
            c.store(0, Relaxed);
        }
    }
}

/// An SMP memory barrier: orders accesses as other CPUs see them.
#[inline(always)]
pub fn smp_mb<T: MemoryBarrier>(_: T) {
    T::smp()
}

/// A mandatory barrier: orders accesses as any observer sees them, MMIO included.
#[inline(always)]
pub fn mb<T: MemoryBarrier>(_: T) {
    T::mb()
}
