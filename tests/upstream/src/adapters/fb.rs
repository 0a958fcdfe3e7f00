// SPDX-License-Identifier: GPL-2.0

//! Adapter standing in for upstream's `fb.rs`: the framebuffer layout types
//! `GspFwWprMeta::{from_ranges, from_sizes}` in `gsp/fw.rs` read. Plain data with public
//! fields; nothing computes them from a GPU here.

use core::ops::{
    Deref,
    Range, //
};

/// A range of framebuffer addresses, with the `len()` 7.3's has (a `Range<u64>` has none).
#[derive(Debug, Clone, Default)]
pub(crate) struct FbRange(pub(crate) Range<u64>);

impl FbRange {
    /// Number of bytes in the range.
    pub(crate) fn len(&self) -> u64 {
        self.0.end.saturating_sub(self.0.start)
    }
}

impl Deref for FbRange {
    type Target = Range<u64>;

    fn deref(&self) -> &Range<u64> {
        &self.0
    }
}

/// Framebuffer regions, as `GspFwWprMeta::from_ranges` reads them.
#[derive(Debug, Default)]
pub(crate) struct FbRanges {
    pub(crate) fb: FbRange,
    pub(crate) vga_workspace: FbRange,
    pub(crate) frts: FbRange,
    pub(crate) boot: FbRange,
    pub(crate) elf: FbRange,
    pub(crate) wpr2_heap: FbRange,
    pub(crate) wpr2: FbRange,
    pub(crate) non_wpr_heap: FbRange,
    pub(crate) vf_partition_count: u8,
    pub(crate) pmu_reserved_size: u32,
}

/// Framebuffer region sizes, as `GspFwWprMeta::from_sizes` reads them.
#[derive(Debug, Default)]
pub(crate) struct FbSizes {
    pub(crate) frts_size: u64,
    pub(crate) wpr2_heap_size: u64,
    pub(crate) non_wpr_heap_size: u64,
    pub(crate) pmu_reserved_size: u32,
    pub(crate) vf_partition_count: u8,
}
