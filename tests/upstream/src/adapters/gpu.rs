// SPDX-License-Identifier: GPL-2.0

//! Adapter standing in for upstream's `gpu.rs`: the [`Chipset`] and [`Architecture`] that
//! `gsp/fw.rs` (heap sizing, LIBOS version) and `gsp/fw/commands.rs` (the PCI config
//! mirror) ask about. A few chipsets only, one or two per architecture with 7.3's ids, in
//! 7.3's order (`fw.rs` compares with `Chipset::GA102`); no probing, no HAL objects.

use core::ops::Range;

/// GPU generation; the six 7.3 has, as `fw.rs` matches on them exhaustively.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Architecture {
    Turing,
    Ampere,
    Hopper,
    Ada,
    BlackwellGB10x,
    BlackwellGB20x,
}

/// A GPU chipset, by its boot id; ordered by it, as 7.3's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Chipset {
    TU102 = 0x162,
    GA100 = 0x170,
    GA102 = 0x172,
    GH100 = 0x180,
    AD102 = 0x192,
    GB100 = 0x1a0,
    GB202 = 0x1b2,
}

impl Chipset {
    /// The chipset's architecture.
    pub(crate) const fn arch(self) -> Architecture {
        match self {
            Self::TU102 => Architecture::Turing,
            Self::GA100 | Self::GA102 => Architecture::Ampere,
            Self::GH100 => Architecture::Hopper,
            Self::AD102 => Architecture::Ada,
            Self::GB100 => Architecture::BlackwellGB10x,
            Self::GB202 => Architecture::BlackwellGB20x,
        }
    }

    /// BAR0 range mirroring the PCI configuration space (7.3's GPU HAL: one 4 KiB page at
    /// `0x88000` up to Ada, at `0x92000` from Hopper on).
    pub(crate) fn pci_config_mirror_range(self) -> Range<u32> {
        let start: u32 = match self.arch() {
            Architecture::Turing | Architecture::Ampere | Architecture::Ada => 0x8_8000,
            Architecture::Hopper | Architecture::BlackwellGB10x | Architecture::BlackwellGB20x => {
                0x9_2000
            }
        };
        start..start + 0x1000
    }
}
