// SPDX-License-Identifier: GPL-2.0

//! The RPCs the driver exchanges with the GSP.
//!
//! Fixed-size payloads are `repr(C)` structures viewed as bytes with zerocopy; variable
//! ones (the registry, the log) are encoded explicitly. The structures carry the fields
//! of the r570 ones that this driver uses, in their r570 order.

use kernel::prelude::*;
use static_assertions::const_assert_eq;
use zerocopy::{
    FromBytes,
    FromZeros,
    Immutable,
    IntoBytes,
    KnownLayout, //
};

use crate::gsp::{
    cmdq::{
        CommandToGsp,
        MessageFromGsp, //
    },
    fw::function, //
};

/// `GSP_SET_SYSTEM_INFO`: tells the GSP where the GPU and its PCI config live
/// (`GspSystemInfo`, the leading fields).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct GspSetSystemInfo {
    /// BAR0 bus address.
    pub gpu_phys_addr: u64,
    /// BAR1 (framebuffer) bus address.
    pub gpu_phys_fb_addr: u64,
    /// BAR2/3 (instance memory) bus address.
    pub gpu_phys_inst_addr: u64,
    /// MMIO aperture of the PCI config mirror.
    pub pci_config_mirror_base: u64,
    /// Size of the PCI config mirror.
    pub pci_config_mirror_size: u64,
    /// PCI domain, bus, device and function.
    pub nv_domain_bus_device_func: u64,
    /// The highest bus address the GPU may use.
    pub sim_access_buf_phys_addr: u64,
    /// Maximum user VA bits.
    pub max_user_va: u64,
}

const_assert_eq!(core::mem::size_of::<GspSetSystemInfo>(), 64);

impl CommandToGsp for GspSetSystemInfo {
    const FUNCTION: u32 = function::GSP_SET_SYSTEM_INFO;

    fn payload(&self) -> &[u8] {
        self.as_bytes()
    }
}

/// The type of a registry value (`REGISTRY_TABLE_ENTRY_TYPE_*`).
pub const REGISTRY_TABLE_ENTRY_TYPE_DWORD: u8 = 1;

/// A packed registry entry (`PACKED_REGISTRY_ENTRY`).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct PackedRegistryEntry {
    /// Offset of the NUL-terminated key from the start of the table.
    pub name_offset: u32,
    /// [`REGISTRY_TABLE_ENTRY_TYPE_DWORD`].
    pub type_: u8,
    /// Padding, zero.
    pub pad: [u8; 3],
    /// The value.
    pub data: u32,
    /// The value's length in bytes.
    pub length: u32,
}

const_assert_eq!(core::mem::size_of::<PackedRegistryEntry>(), 16);

/// The header of a packed registry table (`PACKED_REGISTRY_TABLE`).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct PackedRegistryTable {
    /// The size of the whole table, strings included.
    pub size: u32,
    /// The number of entries that follow.
    pub num_entries: u32,
}

/// `SET_REGISTRY`: registry keys for the GSP, encoded as a `PACKED_REGISTRY_TABLE`.
pub struct SetRegistry {
    encoded: KVec<u8>,
}

impl SetRegistry {
    /// Encodes `entries` (key, dword value).
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if the table cannot be allocated.
    /// - `EINVAL` if a key contains NUL or the table exceeds 4 GiB.
    pub fn new(entries: &[(&str, u32)]) -> Result<Self> {
        let head = core::mem::size_of::<PackedRegistryTable>()
            + entries.len() * core::mem::size_of::<PackedRegistryEntry>();
        let strings: usize = entries.iter().map(|(k, _)| k.len() + 1).sum();
        let size = u32::try_from(head + strings).map_err(|_| EINVAL)?;
        let mut encoded = KVec::with_capacity(head + strings, GFP_KERNEL)?;
        let table = PackedRegistryTable {
            size,
            // CAST: bounded by `size`, which fits in `u32`.
            num_entries: entries.len() as u32,
        };
        encoded.extend_from_slice(table.as_bytes(), GFP_KERNEL)?;
        let mut name_offset = head;
        for (key, value) in entries {
            if key.as_bytes().contains(&0) {
                return Err(EINVAL);
            }
            let entry = PackedRegistryEntry {
                // CAST: below `size`, which fits in `u32`.
                name_offset: name_offset as u32,
                type_: REGISTRY_TABLE_ENTRY_TYPE_DWORD,
                pad: [0; 3],
                data: *value,
                length: 4,
            };
            encoded.extend_from_slice(entry.as_bytes(), GFP_KERNEL)?;
            name_offset += key.len() + 1;
        }
        for (key, _) in entries {
            encoded.extend_from_slice(key.as_bytes(), GFP_KERNEL)?;
            encoded.push(0, GFP_KERNEL)?;
        }
        Ok(Self { encoded })
    }
}

impl CommandToGsp for SetRegistry {
    const FUNCTION: u32 = function::SET_REGISTRY;

    fn payload(&self) -> &[u8] {
        &self.encoded
    }
}

/// `GET_GSP_STATIC_INFO`: the GPU's static configuration (`GspStaticConfigInfo`, the
/// fields this driver uses). The command carries a zeroed structure that the reply fills.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct GspStaticConfigInfo {
    /// The marketing name, NUL-terminated.
    pub gpu_name_string: [u8; 64],
    /// The GPU's PCI device id (`pciDeviceId` << 16 | vendor).
    pub pci_device_id: u32,
    /// The number of frame buffer regions that follow.
    pub fb_region_count: u32,
    /// The usable frame buffer size in bytes.
    pub fb_length: u64,
    /// Size of BAR1.
    pub bar1_size: u64,
}

const_assert_eq!(core::mem::size_of::<GspStaticConfigInfo>(), 88);

impl GspStaticConfigInfo {
    /// Returns the GPU name, up to its NUL.
    pub fn gpu_name(&self) -> &str {
        let len = self
            .gpu_name_string
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(self.gpu_name_string.len());
        core::str::from_utf8(&self.gpu_name_string[..len]).unwrap_or("<invalid>")
    }
}

/// The command asking for [`GspStaticConfigInfo`].
pub struct GetGspStaticInfo(GspStaticConfigInfo);

impl GetGspStaticInfo {
    /// Creates the command, with the zeroed structure the GSP fills.
    pub fn new() -> Self {
        Self(GspStaticConfigInfo::new_zeroed())
    }
}

impl Default for GetGspStaticInfo {
    fn default() -> Self {
        Self::new()
    }
}

impl CommandToGsp for GetGspStaticInfo {
    const FUNCTION: u32 = function::GET_GSP_STATIC_INFO;

    fn payload(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl MessageFromGsp for GspStaticConfigInfo {
    const FUNCTION: u32 = function::GET_GSP_STATIC_INFO;

    fn decode(payload: &[u8]) -> Result<Self> {
        Self::read_from_bytes(payload).map_err(|_| EIO)
    }
}

/// `GSP_INIT_DONE`: the GSP finished booting (sent unasked).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct GspInitDone {
    /// `NV_OK` on success.
    pub status: u32,
}

impl MessageFromGsp for GspInitDone {
    const FUNCTION: u32 = function::GSP_INIT_DONE;

    fn decode(payload: &[u8]) -> Result<Self> {
        Self::read_from_bytes(payload).map_err(|_| EIO)
    }
}

/// `UCODE_LIBOS_PRINT`: a line of the GSP's log (sent unasked).
pub struct LibosPrint {
    /// The line, as sent.
    pub line: KVec<u8>,
}

impl MessageFromGsp for LibosPrint {
    const FUNCTION: u32 = function::UCODE_LIBOS_PRINT;

    fn decode(payload: &[u8]) -> Result<Self> {
        let mut line = KVec::new();
        line.extend_from_slice(payload, GFP_KERNEL)?;
        Ok(Self { line })
    }
}

/// `NOP` with a payload, which the virtual GSP echoes back: for tests and benchmarks.
pub struct Echo<'a>(pub &'a [u8]);

impl CommandToGsp for Echo<'_> {
    const FUNCTION: u32 = function::NOP;

    fn payload(&self) -> &[u8] {
        self.0
    }
}

/// `UNLOADING_GUEST_DRIVER`: the driver is going away.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct UnloadingGuestDriver {
    /// Whether the GPU goes into suspend.
    pub suspend: u8,
    /// Whether this is a GC6 entry.
    pub gc6_entering: u8,
    /// Padding.
    pub pad: [u8; 2],
    /// The power state.
    pub new_level: u32,
}

impl CommandToGsp for UnloadingGuestDriver {
    const FUNCTION: u32 = function::UNLOADING_GUEST_DRIVER;

    fn payload(&self) -> &[u8] {
        self.as_bytes()
    }
}

/// `VGSP_CE_COPY`: asks the (virtual) GSP's copy engine to copy `len` bytes from bus
/// address `src` to bus address `dst` in chunks of `chunk` bytes, reporting each chunk
/// with `complete_tx` on the `mbarrier` whose word is at bus address `barrier`. The GSP
/// acknowledges with an empty reply before the first byte lands.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct CeCopy {
    /// Where the bytes come from.
    pub src: u64,
    /// Where they go.
    pub dst: u64,
    /// The barrier word (8-byte aligned).
    pub barrier: u64,
    /// How many bytes.
    pub len: u32,
    /// Bytes per `complete_tx`.
    pub chunk: u32,
}

const_assert_eq!(core::mem::size_of::<CeCopy>(), 32);

impl CommandToGsp for CeCopy {
    const FUNCTION: u32 = function::VGSP_CE_COPY;

    fn payload(&self) -> &[u8] {
        self.as_bytes()
    }
}
