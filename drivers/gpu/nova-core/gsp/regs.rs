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
/// Upstream's is a `&pci::Bar<BAR0_SIZE>`; this driver has no PCI device of its own, so
/// it names the MMIO view a mapped BAR gives. The doorbell below rings through any `Io`
/// view of a BAR0-sized region, this one or a test bench's simulated BAR.
pub type Bar0<'a> = Mmio<'a, Region<BAR0_SIZE>>;

/// What interrupts the GSP to make it look at the command queue.
///
/// On a GPU it is a write of [`NV_PGSP_QUEUE_HEAD`](struct@NV_PGSP_QUEUE_HEAD) in BAR0;
/// behind an emulated device it is that device's doorbell register
/// (`nova_testbench::ivshmem::PeerDoorbell`).
pub trait Doorbell {
    /// Rings the doorbell. The write is ordered after the caller's earlier writes to
    /// coherent memory (`writel` semantics).
    fn ring(&self);
}

impl<'a, T> Doorbell for T
where
    T: Io<'a, Target = Region<BAR0_SIZE>>,
    T::Backend: IoCapable<u32>,
{
    fn ring(&self) {
        // ORDERING: `Io::write_reg` on an `Mmio` is `writel`, whose barrier orders the
        // caller's earlier writes to coherent memory (the command, then the write pointer)
        // before this register write; the GSP's partner is the `dma_mb(Read)` after its
        // load of the write pointer. A test bench's BAR gives the same order.
        (*self).write_reg(NV_PGSP_QUEUE_HEAD::zeroed().with_address(0u32));
    }
}

/// BAR0's registers by offset: what the CPU sequencer (`super::sequencer`) reads and
/// writes for the GSP.
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
    /// `NV_PGSP_QUEUE_HEAD(0)`: writing it interrupts the GSP, telling it to look at the
    /// command queue (the doorbell).
    pub NV_PGSP_QUEUE_HEAD(u32) @ 0x00110c00 {
        /// The queue head address; the GSP ignores it for the command queue, the driver
        /// writes 0.
        31:0 address;
    }
}

static_assertions::const_assert!(NV_PGSP_QUEUE_HEAD::OFFSET + size_of::<u32>() <= BAR0_SIZE);
