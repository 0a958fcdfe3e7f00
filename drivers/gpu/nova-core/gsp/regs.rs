// SPDX-License-Identifier: GPL-2.0

//! GSP registers in BAR0.

use bitfield_struct::bitfield;
use kernel::io::{
    Io,
    Mmio,
    Region, //
};

/// The size of BAR0 the driver maps.
pub const BAR0_SIZE: usize = 0x100_0000;

/// BAR0 of the GPU.
///
/// Upstream's is a `&pci::Bar<BAR0_SIZE>`; this driver has no PCI device of its own (the
/// test bench's BAR is memory), so it takes the MMIO view both give.
pub type Bar0<'a> = Mmio<'a, Region<BAR0_SIZE>>;

/// What interrupts the GSP to make it look at the command queue.
///
/// On a GPU it is a write of [`NV_PGSP_QUEUE_HEAD`] in BAR0; behind an emulated device it
/// is that device's doorbell register (`crate::ivshmem::PeerDoorbell`).
pub trait Doorbell {
    /// Rings the doorbell. The write is ordered after the caller's earlier writes to
    /// coherent memory (`writel` semantics).
    fn ring(&self);
}

impl Doorbell for Bar0<'_> {
    fn ring(&self) {
        NV_PGSP_QUEUE_HEAD::new().with_address(0).write(self);
    }
}

/// `NV_PGSP_QUEUE_HEAD(0)`: writing it interrupts the GSP, telling it to look at the
/// command queue (the doorbell).
#[bitfield(u32)]
#[expect(non_camel_case_types, reason = "register names follow the hardware's")]
pub struct NV_PGSP_QUEUE_HEAD {
    /// The queue head address; the GSP ignores it for the command queue, the driver
    /// writes 0.
    pub address: u32,
}

impl NV_PGSP_QUEUE_HEAD {
    /// The register's offset in BAR0.
    pub const OFFSET: usize = 0x110c00;

    /// Writes the register. The write is ordered after the caller's earlier writes to
    /// coherent memory ([`Io::write32`] is `writel`).
    pub fn write(self, bar: &Bar0<'_>) {
        bar.write32(self.into_bits(), Self::OFFSET);
    }

    /// Reads the register.
    pub fn read(bar: &Bar0<'_>) -> Self {
        Self::from_bits(bar.read32(Self::OFFSET))
    }
}

/// `NV_PGSP_QUEUE_TAIL(0)`.
pub const NV_PGSP_QUEUE_TAIL_OFFSET: usize = 0x110c04;
/// `NV_PGSP_MSGQ_HEAD(0)`.
pub const NV_PGSP_MSGQ_HEAD_OFFSET: usize = 0x110c80;
/// `NV_PGSP_MSGQ_TAIL(0)`.
pub const NV_PGSP_MSGQ_TAIL_OFFSET: usize = 0x110c84;

static_assertions::const_assert!(NV_PGSP_QUEUE_HEAD::OFFSET + 4 <= BAR0_SIZE);
