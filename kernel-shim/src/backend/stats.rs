// SPDX-License-Identifier: GPL-2.0

//! Counts of executed DMA barriers (feature `dma-mb-stats`, for the benchmark only).
//!
//! The counters are global relaxed atomics, shared by every thread: a caller that wants
//! one agent's barriers runs the agents in turns and takes a [`snapshot`] around each
//! turn ([`DmaMbCounts::since`]).

use core::sync::atomic::{
    AtomicU64,
    Ordering::Relaxed, //
};

static DMA_MB: [AtomicU64; 3] = [const { AtomicU64::new(0) }; 3];
static IO: [AtomicU64; 3] = [const { AtomicU64::new(0) }; 3];

/// Counts one [`dma_mb`](crate::sync::barrier::dma_mb) of the flavour with index
/// `flavour`.
#[inline(always)]
pub(crate) fn count_driver(flavour: usize) {
    DMA_MB[flavour].fetch_add(1, Relaxed);
}

/// Counts one barrier of `readl`/`writel` of the flavour with index `flavour`.
#[inline(always)]
pub(crate) fn count_io(flavour: usize) {
    IO[flavour].fetch_add(1, Relaxed);
}

/// Executed DMA barriers, each array indexed as [`FLAVOURS`](crate::sync::barrier::FLAVOURS).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DmaMbCounts {
    /// [`dma_mb`](crate::sync::barrier::dma_mb) calls, by flavour: the barrier instructions they emitted.
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
