// SPDX-License-Identifier: GPL-2.0

//! GSP registers in BAR0.

// A kernel build warns of missing docs (`-Wmissing_docs`), and Linux 7.3's `register!`
// generates an undocumented constant per field (`<FIELD>_RANGE`, `_MASK`, `_SHIFT`).
#![cfg_attr(
    CONFIG_RUST,
    expect(missing_docs, reason = "the constants 7.3's register! generates")
)]

use kernel::{
    io::{
        register,
        register::Register,
        Io,
        IoCapable,
        IoLoc,
        Mmio,
        Region, //
    },
    prelude::*, //
};

/// The size of BAR0 the driver maps.
pub const BAR0_SIZE: usize = 0x100_0000;

/// BAR0 of the GPU.
///
/// Upstream's is a `&pci::Bar<BAR0_SIZE>`; without a PCI device of our own, this is the
/// MMIO view of a mapped BAR.
pub type Bar0<'a> = Mmio<'a, Region<BAR0_SIZE>>;

/// What interrupts the GSP to make it look at the command queue.
///
/// A write of [`NV_PGSP_QUEUE_HEAD`](struct@NV_PGSP_QUEUE_HEAD) in BAR0, or an emulated
/// device's doorbell register (`nova_testbench::ivshmem::PeerDoorbell`).
pub trait Doorbell {
    /// Rings the doorbell, ordered after earlier writes to coherent memory (`writel`).
    fn ring(&self);
}

impl<'a, T> Doorbell for T
where
    T: Io<'a, Target = Region<BAR0_SIZE>>,
    T::Backend: IoCapable<u32>,
{
    fn ring(&self) {
        // ORDERING: STORE->STORE. `writel` orders the earlier coherent-memory writes (the
        // command, the write pointer) before this register write; a test bench's BAR does
        // too. Pairs with the GSP's `dma_mb(Read)` after its write-pointer load.
        (*self).write_reg(NV_PGSP_QUEUE_HEAD::zeroed().with_address(0u32));
    }
}

/// BAR0's registers by offset, for the CPU sequencer (`super::sequencer`).
pub trait Bar0Registers {
    /// Reads the 32-bit register at `offset`.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if it lies outside BAR0 or is unaligned.
    /// - `ENODEV` if the driver has no BAR0 to read.
    fn read32(&self, offset: usize) -> Result<u32>;

    /// Writes `value` to the 32-bit register at `offset`.
    ///
    /// # Errors
    ///
    /// As [`Bar0Registers::read32`].
    fn write32(&self, offset: usize, value: u32) -> Result;
}

impl<'a, T> Bar0Registers for T
where
    T: Io<'a, Target = Region<BAR0_SIZE>>,
    T::Backend: IoCapable<u32>,
    usize: IoLoc<Region<BAR0_SIZE>, u32, IoType = u32>,
{
    fn read32(&self, offset: usize) -> Result<u32> {
        (*self).try_read32(offset)
    }

    fn write32(&self, offset: usize, value: u32) -> Result {
        (*self).try_write32(value, offset)
    }
}

register! {
    /// `NV_PGSP_QUEUE_HEAD(0)`: the doorbell; writing it makes the GSP look at `cpuq`.
    pub NV_PGSP_QUEUE_HEAD(u32) @ 0x00110c00 {
        /// The queue head address; ignored for the command queue, written 0.
        31:0 address;
    }
}

static_assertions::const_assert!(NV_PGSP_QUEUE_HEAD::OFFSET + size_of::<u32>() <= BAR0_SIZE);
