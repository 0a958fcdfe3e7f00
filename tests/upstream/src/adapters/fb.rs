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

/// Where the boot-argument code of `gsp/fw.rs` finds each region of the framebuffer
/// (`GspFwWprMeta::from_ranges`): the field names are the ones it reads, the order and the
/// words ours.
#[derive(Debug, Default)]
pub(crate) struct FbRanges {
    /// The whole framebuffer, from address 0.
    pub(crate) fb: FbRange,
    /// The second write-protected region, which holds the four below.
    pub(crate) wpr2: FbRange,
    /// Its heap.
    pub(crate) wpr2_heap: FbRange,
    /// The firmware runtime security region in it.
    pub(crate) frts: FbRange,
    /// The GSP bootloader's image in it.
    pub(crate) boot: FbRange,
    /// The GSP firmware's ELF image in it.
    pub(crate) elf: FbRange,
    /// The heap outside the write-protected region.
    pub(crate) non_wpr_heap: FbRange,
    /// The VGA workspace at the top of the framebuffer.
    pub(crate) vga_workspace: FbRange,
    /// The bytes kept for the PMU.
    pub(crate) pmu_reserved_size: u32,
    /// How many virtual-function partitions the framebuffer is cut into.
    pub(crate) vf_partition_count: u8,
}

/// The sizes `GspFwWprMeta::from_sizes` lays the regions out from (names as it reads
/// them).
#[derive(Debug, Default)]
pub(crate) struct FbSizes {
    /// Bytes of the second write-protected region's heap.
    pub(crate) wpr2_heap_size: u64,
    /// Bytes of the firmware runtime security region.
    pub(crate) frts_size: u64,
    /// Bytes of the heap outside the write-protected region.
    pub(crate) non_wpr_heap_size: u64,
    /// The bytes kept for the PMU.
    pub(crate) pmu_reserved_size: u32,
    /// How many virtual-function partitions.
    pub(crate) vf_partition_count: u8,
}
