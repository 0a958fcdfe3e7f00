// SPDX-License-Identifier: GPL-2.0

//! The barrier instructions of the architecture, exactly the kernel's (see
//! `sync::barrier`'s table).
//!
//! Every instruction is emitted by an `asm!` block without `nomem`, so it is a compiler
//! barrier as well.

use super::Flavour;

/// The instructions of one barrier flavour. `pub` in a private module: sealed.
pub trait Barrier {
    /// The flavour.
    const FLAVOUR: Flavour;

    /// The flavour's index in `sync::barrier::FLAVOURS` and the `stats` arrays.
    const INDEX: usize = match Self::FLAVOUR {
        Flavour::Full => 0,
        Flavour::Read => 1,
        Flavour::Write => 2,
    };

    /// The instruction [`Barrier::dma`] emits; empty for a compiler barrier.
    const DMA_INSTRUCTION: &'static str;

    /// Emits `dma_mb`'s instruction.
    fn dma();

    /// Emits `smp_mb`'s instruction.
    fn smp();

    /// Emits `mb`'s instruction.
    fn mb();
}

/// The instructions of `Full`.
pub enum Full {}

/// The instructions of `Read`.
pub enum Read {}

/// The instructions of `Write`.
pub enum Write {}

/// Emits one barrier instruction (or none) per call as an `asm!` block that is also a
/// compiler barrier.
macro_rules! define_barriers {
    ($($flavour:ident: dma $dma:literal, smp $smp:literal, mb $mb:literal;)*) => {$(
        impl Barrier for $flavour {
            const FLAVOUR: Flavour = Flavour::$flavour;
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
    )*};
}

#[cfg(target_arch = "aarch64")]
define_barriers! {
    Full: dma "dmb osh", smp "dmb ish", mb "dsb sy";
    Read: dma "dmb oshld", smp "dmb ishld", mb "dsb ld";
    Write: dma "dmb oshst", smp "dmb ishst", mb "dsb st";
}

// x86-64 is TSO: only store->load needs an instruction; the others are compiler barriers
// (an empty `asm!` block without `nomem`).
#[cfg(target_arch = "x86_64")]
define_barriers! {
    Full: dma "mfence", smp "lock add dword ptr [rsp - 4], 0", mb "mfence";
    Read: dma "", smp "", mb "lfence";
    Write: dma "", smp "", mb "sfence";
}

#[cfg(not(any(target_arch = "aarch64", target_arch = "x86_64")))]
compile_error!("kernel::sync::barrier: no barrier instructions for this architecture");
