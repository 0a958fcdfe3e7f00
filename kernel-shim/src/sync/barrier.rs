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

mod private {
    pub trait Sealed {}
}

/// A barrier flavour. Sealed: the flavours are [`Full`], [`Read`] and [`Write`].
pub trait MemoryBarrier: private::Sealed {
    #[doc(hidden)]
    #[cfg(loom)]
    const FLAVOUR: crate::model::Flavour;
    #[doc(hidden)]
    fn dma();
    #[doc(hidden)]
    fn smp();
    #[doc(hidden)]
    fn mb();
}

/// Orders all earlier memory accesses before all later ones.
#[derive(Clone, Copy, Debug)]
pub struct Full;

/// Orders earlier loads before later loads.
#[derive(Clone, Copy, Debug)]
pub struct Read;

/// Orders earlier stores before later stores.
#[derive(Clone, Copy, Debug)]
pub struct Write;

impl private::Sealed for Full {}
impl private::Sealed for Read {}
impl private::Sealed for Write {}

/// Emits one barrier instruction (or none) as an `asm!` block that is also a compiler
/// barrier.
macro_rules! define_barrier {
    ($flavour:ident, dma: $dma:literal, smp: $smp:literal, mb: $mb:literal) => {
        impl MemoryBarrier for $flavour {
            #[cfg(loom)]
            const FLAVOUR: crate::model::Flavour = crate::model::Flavour::$flavour;

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
define_barrier!(Full, dma: "dmb osh", smp: "dmb ish", mb: "dsb sy");
#[cfg(target_arch = "aarch64")]
define_barrier!(Read, dma: "dmb oshld", smp: "dmb ishld", mb: "dsb ld");
#[cfg(target_arch = "aarch64")]
define_barrier!(Write, dma: "dmb oshst", smp: "dmb ishst", mb: "dsb st");

// x86-64 is TSO: only store->load needs an instruction; the others are compiler barriers
// (an empty `asm!` block without `nomem`).
#[cfg(target_arch = "x86_64")]
define_barrier!(Full, dma: "mfence", smp: "lock add dword ptr [rsp - 4], 0", mb: "mfence");
#[cfg(target_arch = "x86_64")]
define_barrier!(Read, dma: "", smp: "", mb: "lfence");
#[cfg(target_arch = "x86_64")]
define_barrier!(Write, dma: "", smp: "", mb: "sfence");

#[cfg(not(any(target_arch = "aarch64", target_arch = "x86_64")))]
compile_error!("kernel::sync::barrier: no barrier instructions for this architecture");

/// A DMA memory barrier: orders accesses as a bus-mastering device sees them.
#[cfg(not(loom))]
#[inline(always)]
pub fn dma_mb<T: MemoryBarrier>(_: T) {
    T::dma()
}

/// A DMA memory barrier, under the model: a loom fence, recorded and mutable by the
/// caller's source location (`kernel::model`).
#[cfg(loom)]
#[track_caller]
pub fn dma_mb<T: MemoryBarrier>(_: T) {
    crate::model::barrier(T::FLAVOUR)
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
