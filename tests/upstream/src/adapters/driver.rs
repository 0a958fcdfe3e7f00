// SPDX-License-Identifier: GPL-2.0

//! Adapter standing in for upstream's `driver.rs`: only [`Bar0`], the BAR0 view that
//! `gsp/cmdq.rs` rings the GSP's doorbell through.
//!
//! 7.3's is `&'a pci::Bar<'a, BAR0_SIZE>`, a mapped PCI BAR that derefs to its MMIO view.
//! The shim has no PCI BARs; a mapped BAR *is* an MMIO view of a sized region there, and
//! the host's simulated BAR (`vdev::SimBar::io`) gives exactly this type.

use kernel::io::{
    Mmio,
    Region, //
};

/// Size of BAR0 as 7.3's driver maps it (`SZ_16M`).
pub(crate) const BAR0_SIZE: usize = 16 << 20;

/// The GPU's BAR0, as `gsp/cmdq.rs` takes it (by reference, `Copy`).
pub(crate) type Bar0<'a> = &'a Mmio<'a, Region<BAR0_SIZE>>;
