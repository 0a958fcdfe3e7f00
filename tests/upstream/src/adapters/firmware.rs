// SPDX-License-Identifier: GPL-2.0

//! Adapter standing in for upstream's `firmware.rs` and `firmware/riscv.rs`, holding the
//! stand-in for `firmware/gsp.rs`: only what `GspFwWprMeta` in `gsp/fw.rs` reads of a
//! loaded GSP firmware (sizes, offsets and DMA addresses). Nothing is loaded or parsed.

use kernel::dma::{
    Coherent,
    DmaAddress, //
};

/// Stand-in for 7.3's `firmware::riscv::RiscvFirmware`: the GSP bootloader image.
pub(crate) struct RiscvFirmware {
    pub(crate) code_offset: u32,
    pub(crate) data_offset: u32,
    pub(crate) manifest_offset: u32,
    pub(crate) ucode: Coherent<[u8]>,
}

/// Stand-in for 7.3's `firmware/gsp.rs`.
pub(crate) mod gsp {
    use super::*;

    /// Stand-in for 7.3's `GspFirmware`: the image's size, its signatures and bootloader,
    /// and the address of its radix-3 page table (7.3: the level-0 table's DMA address).
    pub(crate) struct GspFirmware {
        pub(crate) size: usize,
        pub(crate) signatures: Coherent<[u8]>,
        pub(crate) bootloader: RiscvFirmware,
        pub(crate) radix3: DmaAddress,
    }

    impl GspFirmware {
        /// DMA address of the level-0 page table of the firmware's radix-3 mapping.
        pub(crate) fn radix3_dma_address(&self) -> DmaAddress {
            self.radix3
        }
    }
}
