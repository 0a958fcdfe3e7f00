// SPDX-License-Identifier: GPL-2.0

//! The GH100's PCI configuration header: what the bus, the BIOS and nova-core's match
//! see.
//!
//! A type-0 header: NVIDIA's vendor id, an H100's device id, class 3D controller (nova-core
//! matches any NVIDIA function of class VGA or 3D), and one BAR, BAR0, a 32-bit
//! non-prefetchable memory BAR of 16 MiB (what nova-core maps). The other BARs are not
//! implemented (they read 0 and size to 0), and the function has no capability and no
//! interrupt pin: nova-core 7.3 polls. The header masks BAR writes by their size, so that
//! writing all ones and reading back sizes a BAR, as any BIOS does; the vfio-user
//! transport sizes them that way to describe its regions.

use crate::device::ConfigSpace;

/// NVIDIA's PCI vendor id.
pub const VENDOR_NVIDIA: u16 = 0x10de;
/// An H100 SXM5's device id (GH100).
pub const DEVICE_H100: u16 = 0x2330;
/// Class code: display controller (0x03), 3D controller (0x02), interface 0.
pub const CLASS_3D: u32 = 0x03_02_00;
/// The revision, matching `NV_PMC_BOOT_0`'s low byte.
pub const REVISION: u8 = 0xa1;
/// BAR0's size: nova-core maps at least 16 MiB of registers.
pub const BAR0_SIZE: u32 = 16 << 20;

/// Offsets in the header.
const COMMAND: usize = 0x04;
const BAR0: usize = 0x10;
const SUBSYSTEM_VENDOR: usize = 0x2c;
/// The header's size: everything above reads 0 (no capabilities, no extended space).
const HEADER: usize = 0x40;
/// The config space's size: a conventional function's, without PCI Express's extended space.
pub const CONFIG_SIZE: u32 = 256;
/// The command register's bits the function implements: I/O space, memory space, bus
/// master, and INTx disable.
const COMMAND_WRITABLE: u16 = 0x0007 | 0x0400;
/// A 32-bit memory BAR: bits 3:0 read 0 (memory, 32-bit, not prefetchable).
const BAR_MEMORY_32: u32 = 0x0;
/// The command register's memory-space enable.
const COMMAND_MEMORY: u16 = 0x2;
/// The interrupt line register: the BIOS's scratch byte.
const INTERRUPT_LINE: usize = 0x3c;

/// The header.
pub struct Header {
    bytes: [u8; HEADER],
}

impl Default for Header {
    fn default() -> Self {
        Self::new()
    }
}

impl Header {
    /// The header after reset: BAR0 unplaced, decoding off.
    pub fn new() -> Self {
        let mut bytes = [0u8; HEADER];
        bytes[0..2].copy_from_slice(&VENDOR_NVIDIA.to_le_bytes());
        bytes[2..4].copy_from_slice(&DEVICE_H100.to_le_bytes());
        // Status: none of its bits (no capability list).
        bytes[8] = REVISION;
        bytes[9..12].copy_from_slice(&CLASS_3D.to_le_bytes()[..3]);
        // Header type 0, single function.
        bytes[0x0e] = 0;
        bytes[BAR0..BAR0 + 4].copy_from_slice(&BAR_MEMORY_32.to_le_bytes());
        bytes[SUBSYSTEM_VENDOR..SUBSYSTEM_VENDOR + 2].copy_from_slice(&VENDOR_NVIDIA.to_le_bytes());
        bytes[SUBSYSTEM_VENDOR + 2..SUBSYSTEM_VENDOR + 4].copy_from_slice(&0x16c1u16.to_le_bytes());
        Self { bytes }
    }

    fn word(&self, at: usize) -> u32 {
        u32::from_le_bytes([
            self.bytes[at],
            self.bytes[at + 1],
            self.bytes[at + 2],
            self.bytes[at + 3],
        ])
    }

    /// Returns BAR0's guest address, when memory decoding is on and the BAR is placed.
    pub fn bar0_base(&self) -> Option<u64> {
        let command = u16::from_le_bytes([self.bytes[COMMAND], self.bytes[COMMAND + 1]]);
        let base = self.word(BAR0) & !(BAR0_SIZE - 1);
        (command & COMMAND_MEMORY != 0 && base != 0).then_some(u64::from(base))
    }
}

impl ConfigSpace for Header {
    fn size(&self) -> u32 {
        CONFIG_SIZE
    }

    fn read(&mut self, addr: u32, len: u32) -> u32 {
        // CAST (both): a config-space offset and a width of at most 4 (the transport
        // splits wider accesses).
        let at = addr as usize;
        (0..len.min(4) as usize).fold(0, |v, i| {
            let byte = self.bytes.get(at + i).copied().unwrap_or(0);
            v | (u32::from(byte) << (8 * i))
        })
    }

    fn write(&mut self, addr: u32, val: u32, len: u32) {
        // CAST (both): as in `read`.
        let at = addr as usize;
        for i in 0..len.min(4) as usize {
            // CAST: one byte of the value.
            let (pos, byte) = (at + i, (val >> (8 * i)) as u8);
            match pos {
                p if (COMMAND..COMMAND + 2).contains(&p) => {
                    let mask = COMMAND_WRITABLE.to_le_bytes()[p - COMMAND];
                    self.bytes[p] = byte & mask;
                }
                p if (BAR0..BAR0 + 4).contains(&p) => {
                    // Only the address bits above the size are writable; the type bits
                    // stay.
                    let mask = (!(BAR0_SIZE - 1)).to_le_bytes()[p - BAR0];
                    self.bytes[p] = (byte & mask) | (BAR_MEMORY_32.to_le_bytes()[p - BAR0] & !mask);
                }
                INTERRUPT_LINE => self.bytes[INTERRUPT_LINE] = byte,
                // Everything else is read-only (the unimplemented BARs read 0 whatever is
                // written, which sizes them to 0).
                _ => {}
            }
        }
    }

    fn bar_of(&self, addr: u64) -> Option<(usize, u64)> {
        let base = self.bar0_base()?;
        let offset = addr.checked_sub(base)?;
        (offset < u64::from(BAR0_SIZE)).then_some((0, offset))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bar0_sizes_to_16_mib() {
        let mut h = Header::new();
        h.write(0x10, 0xffff_ffff, 4);
        assert_eq!(h.read(0x10, 4), !(BAR0_SIZE - 1));
    }

    #[test]
    fn unimplemented_bars_size_to_zero() {
        let mut h = Header::new();
        for bar in (0x14..=0x24).step_by(4) {
            h.write(bar, 0xffff_ffff, 4);
            assert_eq!(h.read(bar, 4), 0, "BAR at {bar:#x}");
        }
    }

    #[test]
    fn decodes_bar0_only_with_memory_space_on() {
        let mut h = Header::new();
        h.write(0x10, 0xfd00_0000, 4);
        assert_eq!(h.bar_of(0xfd00_0a00), None);
        h.write(0x04, 0x2, 2);
        assert_eq!(h.bar_of(0xfd00_0a00), Some((0, 0xa00)));
        assert_eq!(h.bar_of(0xfe00_0000), None);
    }

    #[test]
    fn identifies_as_an_nvidia_3d_controller() {
        let mut h = Header::new();
        assert_eq!(h.read(0, 4), 0x2330_10de);
        assert_eq!(h.read(0x08, 4) >> 8, CLASS_3D);
    }
}
