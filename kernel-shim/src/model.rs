// SPDX-License-Identifier: GPL-2.0

//! The model's test interface (`--cfg loom`): the shim under the loom model checker,
//! recording every shared-memory event for the Linux DMA contract checker.
//!
//! With `RUSTFLAGS="--cfg loom"` the *unchanged* driver and virtual GSP run on loom
//! threads, and everything they share goes through the model backend:
//!
//! - 32-bit words of a coherent region (the ring pointers, read and written with
//!   `io_read!`/`io_write!` or [`crate::dma::DmaView::read32`]/`write32`) are loom
//!   atomics, accessed relaxed, created on first use with the value in memory.
//! - Bulk bytes (ring slots: headers and payloads) are tracked per 4 KiB page with a
//!   loom `UnsafeCell`, so loom reports any two accesses of a page by the two agents
//!   that are not ordered by synchronisation. Each store of a page bumps its version.
//! - `dma_mb(Full)`, `dma_mb(Read)`, `dma_mb(Write)` become loom fences: `SeqCst`,
//!   `Acquire`, `Release`. (C11 fences are stronger than Linux's `dma_rmb`/`dma_wmb`;
//!   the contract checker covers the difference.)
//! - Time is virtual: `fsleep` advances the clock and yields to the other loom
//!   thread, so polling loops are finite and explorable.
//! - A [`ModelBar`]'s doorbell writes increment a loom atomic the GSP thread waits on.
//!
//! Every load, store and barrier is appended to a trace with the agent that did it
//! ([`set_agent`]: the driver, the GSP, or another caller of the driver's) and the source
//! location of the access or barrier (`#[track_caller]` through the accessors), which
//! [`take_trace`] hands to the checker. So is every acquire and release of one of the
//! driver's locks ([`crate::sync::Mutex`]), as an access of the lock's own word: what one
//! caller of a shared queue learnt reaches the next through them.
//!
//! # Mutations
//!
//! The barriers can be mutated at run time, by source location, for mutation testing:
//! deleted, weakened, or moved before/after a neighbouring shared access. Mutations
//! come from [`set_mutations`] or from the `VGSP_MUTANT` environment variable, in the
//! syntax of [`Mutation::parse`], which the trace build (feature `trace`) shares.
//!
//! Ours, not 7.3's: the items are the backend's (`backend::model`), re-exported here,
//! with [`ModelBar`], a test bench written on the public `io` API.

use std::{
    sync::Arc,
    vec::Vec, //
};

use loom::sync::atomic::{
    AtomicU64,
    Ordering, //
};

pub use crate::backend::{
    model::{
        agent,
        barrier,
        describe,
        prepare_words,
        reset,
        set_agent,
        set_mutations,
        take_trace,
        Agent,
        Event,
        Kind,
        Loc, //
    },
    mutation::{
        Mutation,
        MutationOp,
        Site, //
    },
    Flavour, //
};
use crate::io::{
    Mmio,
    MmioRaw,
    MmioWriteObserver,
    Region, //
};

struct Bells {
    offsets: Vec<usize>,
    rings: AtomicU64,
}

impl MmioWriteObserver for Bells {
    fn written(&self, offset: usize, _value: u32) {
        if self.offsets.contains(&offset) {
            // A doorbell write reaches the device after the memory writes before it
            // (`writel`): a release, paired with the acquire in `doorbell_count`.
            self.rings.fetch_add(1, Ordering::Release);
        }
    }
}

/// A BAR whose doorbell writes are a loom-visible event.
pub struct ModelBar<const SIZE: usize> {
    _regs: Vec<u32>,
    bells: Arc<Bells>,
    mmio: Mmio<'static, Region<SIZE>>,
}

impl<const SIZE: usize> ModelBar<SIZE> {
    /// Creates a BAR whose registers at `doorbells` count writes.
    pub fn new(doorbells: &[usize]) -> Self {
        let regs = std::vec![0u32; SIZE / 4];
        let bells = Arc::new(Bells {
            offsets: doorbells.to_vec(),
            rings: AtomicU64::new(0),
        });
        let mut regs = regs;
        let region = Region::<SIZE>::ptr_try_from_raw_parts_mut(regs.as_mut_ptr().cast(), SIZE)
            .unwrap_or_else(|_| unreachable!("ModelBar layout"));
        // SAFETY: `regs` is `SIZE` bytes, aligned, and `bells` a live observer; both live as
        // long as the view (all owned by the `ModelBar`; the buffers of a `Vec` and an `Arc`
        // do not move with it), whose `'static` never leaves it (`io` shortens it).
        let mmio = unsafe { Mmio::from_raw(MmioRaw::from_ptr(region).with_observer(&*bells)) };
        Self {
            _regs: regs,
            bells,
            mmio,
        }
    }

    /// Returns the MMIO region.
    pub fn io(&self) -> &Mmio<'_, Region<SIZE>> {
        &self.mmio
    }

    /// Returns the number of doorbell writes so far. Acquire: a device that takes the
    /// interrupt sees the memory writes that preceded the doorbell write, as `writel`
    /// guarantees. (The GSP's own accessors do not rely on it: they acquire the write
    /// pointer themselves.)
    pub fn doorbell_count(&self) -> u64 {
        self.bells.rings.load(Ordering::Acquire)
    }
}
