// SPDX-License-Identifier: GPL-2.0

//! Adapter standing in for upstream's `gsp.rs` (and its `gsp/regs.rs`): the items of the
//! `gsp` module that `gsp/cmdq.rs` and `gsp/fw.rs` name besides each other. Glob
//! re-exported into the generated `gsp` module (see `build.rs`), beside upstream's `cmdq`
//! and `fw`.
//!
//! - [`GSP_PAGE_SHIFT`], [`GSP_PAGE_SIZE`]: the GSP's 4 KiB page.
//! - [`PteArray`]: the self-mapping page table at the start of the shared `GspMem`.
//! - [`regs`]: the doorbell register `NV_PGSP_QUEUE_HEAD` (`cmdq.rs`'s `super::regs`).

use kernel::{
    dma::{
        CoherentView,
        DmaAddress, //
    },
    io::io_write,
    prelude::*,
    transmute::{
        AsBytes,
        FromBytes, //
    },
};

/// Log2 of the GSP's page size.
pub(crate) const GSP_PAGE_SHIFT: usize = 12;

/// The GSP's page size, in bytes (whatever the CPU's).
pub(crate) const GSP_PAGE_SIZE: usize = 1 << GSP_PAGE_SHIFT;

/// `N` page table entries: the bus addresses of `N` consecutive GSP pages.
#[repr(C)]
pub(crate) struct PteArray<const N: usize>([u64; N]);

// SAFETY: an array of `u64`, without padding.
unsafe impl<const N: usize> AsBytes for PteArray<N> {}

// SAFETY: every bit pattern is an array of `u64`.
unsafe impl<const N: usize> FromBytes for PteArray<N> {}

impl<const N: usize> PteArray<N> {
    /// Fills `view` with the addresses of the `N` GSP pages that start at `start`.
    ///
    /// # Errors
    ///
    /// - `EOVERFLOW` if a page's address does not fit in 64 bits.
    /// - `ERANGE` never: `i` stays below `N`.
    pub(crate) fn init(view: CoherentView<'_, Self>, start: DmaAddress) -> Result {
        let mut addr = start;
        for i in 0..N {
            io_write!(view, .0[try: i], addr);
            addr = addr.checked_add(GSP_PAGE_SIZE as u64).ok_or(EOVERFLOW)?;
        }
        Ok(())
    }
}

/// The GSP registers `gsp/cmdq.rs` writes.
pub(crate) mod regs {
    pub(crate) use nova_core::gsp::regs::NV_PGSP_QUEUE_HEAD;
}
