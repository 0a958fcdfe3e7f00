// SPDX-License-Identifier: GPL-2.0

//! The RPCs the driver exchanges with the GSP.
//!
//! Fixed-size payloads are `repr(C)` structures viewed as bytes with zerocopy; variable
//! ones (the registry, the log) are encoded explicitly.
//!
//! # Where the layouts come from
//!
//! The r570 structures ([`GspSetSystemInfo`], [`GspStaticConfigInfo`], the registry
//! table, [`UnloadingGuestDriver`]) are whole, with the sizes and offsets of the r570_144
//! bindings Linux 7.3's nova-core carries (`gsp/fw/r570_144/bindings.rs`), pinned with
//! `fw`'s `assert_layout!`; the definitions and names are ours. Nested structures the
//! driver does not read are opaque byte arrays; padding is explicit `pad*` fields, zero.
//!
//! Those bindings number `GSP_RM_CONTROL` (76) without its payload, so
//! [`RmControlHeader`] follows nouveau's `rpc_gsp_rm_control_v03_00`
//! (`nouveau/nvkm/subdev/gsp/rm/r535/nvrm/ctrl.h`, which its r570 code uses unchanged).

use kernel::prelude::*;
use static_assertions::const_assert_eq;
use zerocopy::{
    FromZeros,
    IntoBytes, //
};
// The derives: see `fw`.
use zerocopy_derive::{
    FromBytes,
    Immutable,
    IntoBytes,
    KnownLayout, //
};

use crate::gsp::{
    cmdq::{
        CommandToGsp,
        MessageFromGsp,
        NoReply, //
    },
    fw::{
        assert_layout,
        MsgFunction,
        GSP_PAGE_SIZE,
        NV_OK, //
    },
};
use crate::num::{
    u16_as_u32,
    usize_as_u64,
    FromSafeCast, //
};

/// Implements [`CommandToGsp`] for `$ty`, a fixed-size command of `$function` sent as it
/// is, answered with `$reply`.
macro_rules! command_as_is {
    ($ty:ty, $function:expr, $reply:ty) => {
        impl CommandToGsp for $ty {
            const FUNCTION: MsgFunction = $function;
            type Command = Self;
            type Reply = $reply;

            fn init(&self) -> Self {
                *self
            }
        }
    };
}

/// Declares `$name`, a reply to `$function` whose payload the driver does not read.
macro_rules! empty_reply {
    ($(#[$doc:meta])* $name:ident, $function:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name;

        impl MessageFromGsp for $name {
            const FUNCTION: MsgFunction = $function;
            type Message = ();

            fn read(_: &(), _: &[u8]) -> Result<Self> {
                Ok(Self)
            }
        }
    };
}

/// Where a GPU mirrors its PCI configuration space inside BAR0: a property of the chipset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConfigMirror {
    /// The BAR0 offset of the mirror.
    pub base: u32,
    /// Its size in bytes.
    pub size: u32,
}

impl ConfigMirror {
    /// The mirror of Hopper and Blackwell GPUs.
    pub const GH100: Self = Self {
        base: 0x9_2000,
        size: 0x1000,
    };
}

/// The GPU's PCI function, as probe knows it, for [`GspSetSystemInfo::new`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PciFunction {
    /// The bus address where BAR0 (the registers) starts.
    pub bar0: u64,
    /// The bus address where BAR1 (the frame buffer aperture) starts.
    pub bar1: u64,
    /// The bus address where BAR3 (instance memory) starts.
    pub bar3: u64,
    /// The function's requester id: bus number in bits 15:8, device and function in 7:0.
    pub bus_dev_fn: u16,
    /// The PCI vendor id.
    pub vendor_id: u16,
    /// The PCI device id.
    pub device_id: u16,
    /// The PCI subsystem vendor id.
    pub subsystem_vendor_id: u16,
    /// The PCI subsystem id.
    pub subsystem_id: u16,
    /// The PCI revision id.
    pub revision_id: u8,
    /// The chipset's mirror of the configuration space.
    pub config_mirror: ConfigMirror,
}

/// The highest user virtual address announced: 128 TiB less one page, as upstream.
pub(crate) const MAX_USER_VA: u64 = (1 << 47) - usize_as_u64(GSP_PAGE_SIZE);

/// The PCI ids of a device on the path to the GPU (r570's bus-info block).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub(crate) struct BusInfo {
    /// The device id.
    pub device_id: u16,
    /// The vendor id.
    pub vendor_id: u16,
    /// The subsystem id.
    pub subdevice_id: u16,
    /// The subsystem vendor id.
    pub subvendor_id: u16,
    /// The revision id.
    pub revision_id: u8,
    /// Padding, zero.
    pub pad: u8,
}

assert_layout!(BusInfo, size 0xa, {
    device_id: 0x0,
    vendor_id: 0x2,
    subdevice_id: 0x4,
    subvendor_id: 0x6,
    revision_id: 0x8,
});
const_assert_eq!(core::mem::align_of::<BusInfo>(), 2);

/// r570's ACPI method data block; all zero, as the driver has no ACPI data.
#[repr(C, align(4))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub(crate) struct AcpiMethodData {
    /// Non-zero if the tables below hold data.
    pub valid: u8,
    /// Padding, zero.
    pub pad: [u8; 3],
    /// The display-output (`_DOD`) method's result, opaque.
    pub dod: [u8; 0x48],
    /// The `JT` (GPU power control) method's result, opaque.
    pub jt: [u8; 0xc],
    /// The `MXM`/mux method's tables, opaque.
    pub mux: [u8; 0x244],
    /// The Optimus capabilities method's result, opaque.
    pub caps: [u8; 0x8],
}

assert_layout!(AcpiMethodData, size 0x2a4, {
    valid: 0x0,
    dod: 0x4,
    jt: 0x4c,
    mux: 0x58,
    caps: 0x29c,
});

/// r570's VF information block; zero, as the driver does not enable SR-IOV.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub(crate) struct VfInfo {
    /// The number of virtual functions.
    pub total_vfs: u32,
    /// The routing-id offset of the first one.
    pub first_vf_offset: u32,
    /// BAR0 of the first virtual function.
    pub first_vf_bar0: u64,
    /// BAR1 of the first virtual function.
    pub first_vf_bar1: u64,
    /// BAR2 of the first virtual function.
    pub first_vf_bar2: u64,
    /// Whether the VFs' BAR0 is 64-bit.
    pub bar0_is_64bit: u8,
    /// Whether the VFs' BAR1 is 64-bit.
    pub bar1_is_64bit: u8,
    /// Whether the VFs' BAR2 is 64-bit.
    pub bar2_is_64bit: u8,
    /// Padding, zero.
    pub pad: [u8; 5],
}

assert_layout!(VfInfo, size 0x28, {
    total_vfs: 0x0,
    first_vf_offset: 0x4,
    first_vf_bar0: 0x8,
    first_vf_bar1: 0x10,
    first_vf_bar2: 0x18,
    bar0_is_64bit: 0x20,
    bar1_is_64bit: 0x21,
    bar2_is_64bit: 0x22,
});

/// `GSP_SET_SYSTEM_INFO`: the GPU's PCI function and platform (r570's system information,
/// 0x3a0 bytes), filled by [`GspSetSystemInfo::new`].
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct GspSetSystemInfo {
    /// Bus address of BAR0.
    pub gpu_phys_addr: u64,
    /// Bus address of BAR1.
    pub gpu_phys_fb_addr: u64,
    /// Bus address of BAR3.
    pub gpu_phys_inst_addr: u64,
    /// Bus address of an I/O-port BAR.
    pub gpu_phys_io_addr: u64,
    /// The function's PCI location (requester id; no domain).
    pub nv_domain_bus_device_func: u64,
    /// Bus address of a simulator's access buffer.
    pub sim_access_buf_phys_addr: u64,
    /// Bus address of a shared notification surface.
    pub notify_op_shared_surface_phys_addr: u64,
    /// The PCIe atomic operations the platform supports.
    pub pcie_atomics_op_mask: u64,
    /// Memory reserved for a console, in bytes.
    pub console_mem_size: u64,
    /// The highest user virtual address (128 TiB less one page, as upstream announces).
    pub max_user_va: u64,
    /// BAR0 offset of the PCI configuration mirror.
    pub pci_config_mirror_base: u32,
    /// Size of the PCI configuration mirror.
    pub pci_config_mirror_size: u32,
    /// Device id in bits 31:16, vendor id in 15:0.
    pub pci_device_id: u32,
    /// Subsystem id in bits 31:16, subsystem vendor id in 15:0.
    pub pci_sub_device_id: u32,
    /// The PCI revision id.
    pub pci_revision_id: u32,
    /// The completer's PCIe atomics capabilities.
    pub pcie_atomics_cpl_device_cap_mask: u32,
    /// The out-of-reset architecture.
    pub oor_arch: u8,
    /// Padding, zero.
    pub pad0: [u8; 7],
    /// Properties of the CPU-side page directory.
    pub cl_pdb_properties: u64,
    /// The chipset (host bridge) kind.
    pub chipset: u32,
    /// Whether a bridge sits between the root port and the GPU.
    pub gpu_behind_bridge: u8,
    /// Whether function-level reset works.
    pub flr_supported: u8,
    /// Whether BAR0 may be 64-bit.
    pub bar0_64bit_supported: u8,
    /// Whether an MNOC interface is available.
    pub mnoc_available: u8,
    /// The chipset's L1 substate enables.
    pub chipset_l1ss_enable: u32,
    /// Whether the upstream port lacks L0s.
    pub upstream_l0s_unsupported: u8,
    /// Whether the upstream port lacks L1.
    pub upstream_l1_unsupported: u8,
    /// Whether the upstream port supports L1 by plan of record.
    pub upstream_l1_por_supported: u8,
    /// Whether that L1 support is for mobile parts only.
    pub upstream_l1_por_mobile_only: u8,
    /// Whether the system has a display mux.
    pub system_has_mux: u8,
    /// Whether `fhb_bus_info` is valid.
    pub upstream_address_valid: u8,
    /// The first host bridge above the GPU.
    pub(crate) fhb_bus_info: BusInfo,
    /// The chipset's own ids.
    pub(crate) chipset_id_info: BusInfo,
    /// Padding, zero.
    pub pad1: [u8; 2],
    /// What the platform's ACPI methods returned.
    pub(crate) acpi_method_data: AcpiMethodData,
    /// The hypervisor the system runs under.
    pub hypervisor_type: u32,
    /// Whether the GPU is passed through to a virtual machine.
    pub is_passthru: u8,
    /// Padding, zero.
    pub pad2: [u8; 7],
    /// The system timer's offset, in nanoseconds.
    pub sys_timer_offset_ns: u64,
    /// The SR-IOV virtual functions.
    pub(crate) vf_info: VfInfo,
    /// Whether the GPU is the primary (boot display) device.
    pub is_primary: u8,
    /// Whether the driver is a GRID build.
    pub is_grid_build: u8,
    /// Padding, zero.
    pub pad3: [u8; 2],
    /// The PCIe link capabilities register.
    pub pcie_link_cap: u32,
    /// The GRID build's cloud service provider.
    pub grid_build_csp: u32,
    /// Whether video memory allocations survive suspend.
    pub preserve_video_memory_allocations: u8,
    /// Whether TDR events are supported.
    pub tdr_event_supported: u8,
    /// Whether vblank stretching is supported.
    pub feature_stretch_vblank_capable: u8,
    /// Whether page arrays of dynamic granularity are enabled.
    pub enable_dynamic_granularity_page_arrays: u8,
    /// Whether clock boost is supported.
    pub clock_boost_supported: u8,
    /// Whether display interrupts go to the CPU.
    pub route_disp_intrs_to_cpu: u8,
    /// Padding, zero.
    pub pad4: [u8; 6],
    /// The CPU's page size.
    pub host_page_size: u64,
}

assert_layout!(GspSetSystemInfo, size 0x3a0, {
    gpu_phys_addr: 0x0,
    gpu_phys_fb_addr: 0x8,
    gpu_phys_inst_addr: 0x10,
    gpu_phys_io_addr: 0x18,
    nv_domain_bus_device_func: 0x20,
    sim_access_buf_phys_addr: 0x28,
    notify_op_shared_surface_phys_addr: 0x30,
    pcie_atomics_op_mask: 0x38,
    console_mem_size: 0x40,
    max_user_va: 0x48,
    pci_config_mirror_base: 0x50,
    pci_config_mirror_size: 0x54,
    pci_device_id: 0x58,
    pci_sub_device_id: 0x5c,
    pci_revision_id: 0x60,
    pcie_atomics_cpl_device_cap_mask: 0x64,
    oor_arch: 0x68,
    cl_pdb_properties: 0x70,
    chipset: 0x78,
    gpu_behind_bridge: 0x7c,
    flr_supported: 0x7d,
    bar0_64bit_supported: 0x7e,
    mnoc_available: 0x7f,
    chipset_l1ss_enable: 0x80,
    upstream_l0s_unsupported: 0x84,
    upstream_l1_unsupported: 0x85,
    upstream_l1_por_supported: 0x86,
    upstream_l1_por_mobile_only: 0x87,
    system_has_mux: 0x88,
    upstream_address_valid: 0x89,
    fhb_bus_info: 0x8a,
    chipset_id_info: 0x94,
    acpi_method_data: 0xa0,
    hypervisor_type: 0x344,
    is_passthru: 0x348,
    sys_timer_offset_ns: 0x350,
    vf_info: 0x358,
    is_primary: 0x380,
    is_grid_build: 0x381,
    pcie_link_cap: 0x384,
    grid_build_csp: 0x388,
    preserve_video_memory_allocations: 0x38c,
    tdr_event_supported: 0x38d,
    feature_stretch_vblank_capable: 0x38e,
    enable_dynamic_granularity_page_arrays: 0x38f,
    clock_boost_supported: 0x390,
    route_disp_intrs_to_cpu: 0x391,
    host_page_size: 0x398,
});
const_assert_eq!(core::mem::align_of::<GspSetSystemInfo>(), 8);

impl GspSetSystemInfo {
    /// Returns the system information for the GPU at `pci`, filled as upstream does.
    ///
    /// All else is zero, as upstream leaves it, since neither driver has the value: no
    /// platform queries (chipset, bridge, link state, mux), no ACPI calls, no SR-IOV.
    pub fn new(pci: &PciFunction) -> Self {
        Self {
            gpu_phys_addr: pci.bar0,
            gpu_phys_fb_addr: pci.bar1,
            gpu_phys_inst_addr: pci.bar3,
            nv_domain_bus_device_func: u64::from(pci.bus_dev_fn),
            max_user_va: MAX_USER_VA,
            pci_config_mirror_base: pci.config_mirror.base,
            pci_config_mirror_size: pci.config_mirror.size,
            pci_device_id: pci_id_pair(pci.device_id, pci.vendor_id),
            pci_sub_device_id: pci_id_pair(pci.subsystem_id, pci.subsystem_vendor_id),
            pci_revision_id: u32::from(pci.revision_id),
            is_primary: 0,
            preserve_video_memory_allocations: 0,
            ..Self::new_zeroed()
        }
    }
}

/// Returns `high` in bits 31:16 and `low` in bits 15:0, as r570 packs PCI id pairs.
const fn pci_id_pair(high: u16, low: u16) -> u32 {
    u16_as_u32(high) << 16 | u16_as_u32(low)
}

impl Default for GspSetSystemInfo {
    /// All zero.
    fn default() -> Self {
        Self::new_zeroed()
    }
}

command_as_is!(GspSetSystemInfo, MsgFunction::GSP_SET_SYSTEM_INFO, NoReply);

/// The type of a registry value: what an entry's `data` and `length` mean.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum RegistryEntryType {
    /// A 32-bit number, in `data` itself; `length` 0 (upstream) or 4 (nouveau).
    Dword = 1,
    /// A blob of `length` bytes at table offset `data`.
    Binary = 2,
    /// A NUL-terminated string of `length` bytes, NUL included, at table offset `data`.
    String = 3,
}

impl TryFrom<u8> for RegistryEntryType {
    type Error = Error;

    /// # Errors
    ///
    /// - `EINVAL` for a value that names no type.
    fn try_from(value: u8) -> Result<Self> {
        match value {
            1 => Ok(Self::Dword),
            2 => Ok(Self::Binary),
            3 => Ok(Self::String),
            _ => Err(EINVAL),
        }
    }
}

/// A packed registry entry, as r570 reads it from the table.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct PackedRegistryEntry {
    /// Offset of the NUL-terminated key from the start of the table.
    pub name_offset: u32,
    /// A [`RegistryEntryType`].
    pub type_: u8,
    /// Padding, zero.
    pub pad: [u8; 3],
    /// The number itself, or the table offset of a blob or string.
    pub data: u32,
    /// The length of a blob or string; 0 for a number, as upstream sends it.
    pub length: u32,
}

assert_layout!(PackedRegistryEntry, size 0x10, {
    name_offset: 0x0,
    type_: 0x4,
    data: 0x8,
    length: 0xc,
});

/// The header of a packed registry table: the entries follow it, then the strings.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct PackedRegistryTable {
    /// The size of the whole table (header, entries, strings), in bytes.
    pub size: u32,
    /// The number of entries that follow.
    pub num_entries: u32,
}

assert_layout!(PackedRegistryTable, size 0x8, {
    size: 0x0,
    num_entries: 0x4,
});

/// `SET_REGISTRY`: registry keys for the GSP, as a packed registry table.
///
/// # Invariants
///
/// `table` heads `encoded` (the entries and strings); with it, they are `table.size`
/// bytes.
pub struct SetRegistry {
    table: PackedRegistryTable,
    encoded: KVec<u8>,
}

impl SetRegistry {
    /// Encodes `entries` (key, number) as upstream: one [`RegistryEntryType::Dword`] entry
    /// of `length` 0 per key, then the NUL-terminated keys.
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
        let mut name_offset = head;
        for (key, value) in entries {
            if key.as_bytes().contains(&0) {
                return Err(EINVAL);
            }
            let entry = PackedRegistryEntry {
                // CAST: below `size`, which fits in `u32`.
                name_offset: name_offset as u32,
                type_: RegistryEntryType::Dword as u8,
                pad: [0; 3],
                data: *value,
                length: 0,
            };
            encoded.extend_from_slice(entry.as_bytes(), GFP_KERNEL)?;
            name_offset += key.len() + 1;
        }
        for (key, _) in entries {
            encoded.extend_from_slice(key.as_bytes(), GFP_KERNEL)?;
            encoded.push(0, GFP_KERNEL)?;
        }
        // INVARIANT: `size` counts the header, the entries and the strings just encoded.
        Ok(Self { table, encoded })
    }
}

impl CommandToGsp for SetRegistry {
    const FUNCTION: MsgFunction = MsgFunction::SET_REGISTRY;
    type Command = PackedRegistryTable;
    type Reply = NoReply;

    fn init(&self) -> PackedRegistryTable {
        self.table
    }

    fn variable_payload(&self) -> &[u8] {
        &self.encoded
    }
}

/// The number of frame buffer region slots in [`FbRegionInfo`].
pub(crate) const FB_REGION_SLOTS: usize = 16;

/// One region of the frame buffer, as the GSP describes it.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct FbRegion {
    /// The first byte.
    pub base: u64,
    /// The last byte (inclusive).
    pub limit: u64,
    /// Non-zero if the firmware keeps the region for itself.
    pub reserved: u64,
    /// A relative performance figure.
    pub performance: u32,
    /// Non-zero if compressed surfaces may live here.
    pub support_compressed: u8,
    /// Non-zero if isochronous (display) surfaces may live here.
    pub support_iso: u8,
    /// Non-zero if the hardware restricts access to it.
    pub protected: u8,
    /// The surface kinds that must not live here, a flag per kind.
    pub blacklist: [u8; 17],
}

assert_layout!(FbRegion, size 0x30, {
    base: 0x0,
    limit: 0x8,
    reserved: 0x10,
    performance: 0x18,
    support_compressed: 0x1c,
    support_iso: 0x1d,
    protected: 0x1e,
    blacklist: 0x1f,
});

impl FbRegion {
    /// Returns whether the driver may allocate from the region, by upstream's rule.
    pub(crate) fn is_usable(&self) -> bool {
        self.reserved == 0
            && self.protected == 0
            && self.support_compressed != 0
            && self.support_iso != 0
            && self.limit >= self.base
    }
}

/// The frame buffer's regions.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct FbRegionInfo {
    /// How many of `regions` are filled.
    pub count: u32,
    /// Padding, zero.
    pub pad: [u8; 4],
    /// The regions; the first `count` are valid.
    pub regions: [FbRegion; FB_REGION_SLOTS],
}

assert_layout!(FbRegionInfo, size 0x308, {
    count: 0x0,
    regions: 0x8,
});

/// The reply to `GET_GSP_STATIC_INFO` (r570's static configuration, 0x678 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct GspStaticConfigInfo {
    /// Graphics capability bits, opaque.
    pub gr_caps_bits: [u8; 23],
    /// Padding, zero.
    pub pad0: u8,
    /// The GPU's unique id block, opaque.
    pub gid_info: [u8; 0x10c],
    /// The board's SKU information from the VBIOS, opaque.
    pub sku_info: [u8; 0x30],
    /// Padding, zero.
    pub pad1: [u8; 4],
    /// The frame buffer's regions.
    pub fb_regions: FbRegionInfo,
    /// The SR-IOV capabilities, opaque.
    pub sriov_caps: [u8; 0x50],
    /// The highest GFID SR-IOV may use.
    pub sriov_max_gfid: u32,
    /// Engine capability bits.
    pub engine_caps: [u32; 3],
    /// Whether the poison fuse is blown.
    pub poison_fuse_enabled: u8,
    /// Padding, zero.
    pub pad2: [u8; 7],
    /// The frame buffer's size in bytes.
    pub fb_length: u64,
    /// The mask of enabled frame buffer I/O units.
    pub fbio_mask: u64,
    /// The memory bus width, in bits.
    pub fb_bus_width: u32,
    /// The kind of memory.
    pub fb_ram_type: u32,
    /// The mask of enabled frame buffer partitions.
    pub fbp_mask: u64,
    /// The L2 cache size in bytes.
    pub l2_cache_size: u32,
    /// The marketing name, NUL-terminated (read with [`Self::gpu_name`]).
    pub name: [u8; 64],
    /// The short name, NUL-terminated.
    pub short_name: [u8; 64],
    /// The marketing name in UTF-16.
    pub name_utf16: [u16; 64],
    /// SKU and power-management flags, a byte each, in r570's order: internal SKU, Quadro
    /// generic, Quadro AD, NVS, VGX, GeForce SMB, Titan, Tesla, mobile, GC6, GC8 and GCOFF
    /// RTD3 allowed, legacy GCOFF allowed, MIG supported.
    pub sku_flags: [u8; 14],
    /// The board power in GC6 RTD3.
    pub rtd3_gc6_total_board_power: u16,
    /// The PERST# delay in GC6 RTD3.
    pub rtd3_gc6_perst_delay: u16,
    /// Padding, zero.
    pub pad3: [u8; 2],
    /// The base of BAR1's page directory.
    pub bar1_pde_base: u64,
    /// The base of BAR2's page directory.
    pub bar2_pde_base: u64,
    /// Whether the VBIOS is valid.
    pub vbios_valid: u8,
    /// Padding, zero.
    pub pad4: [u8; 3],
    /// The subsystem vendor id the VBIOS reports.
    pub vbios_sub_vendor: u32,
    /// The subsystem id the VBIOS reports.
    pub vbios_sub_device: u32,
    /// Whether page retirement is supported.
    pub page_retirement_supported: u8,
    /// Whether the VA space is split between the server and client RM.
    pub split_vas_between_server_client_rm: u8,
    /// Whether the root port needs the no-snoop workaround.
    pub cl_rootport_needs_nosnoop_war: u8,
    /// Padding, zero.
    pub pad5: u8,
    /// Heads without a display: current and maximum count.
    pub displayless_max_heads: [u32; 2],
    /// Resolution without a display: head, width, height.
    pub displayless_max_resolution: [u32; 3],
    /// Padding, zero.
    pub pad6: [u8; 4],
    /// Pixels without a display.
    pub displayless_max_pixels: u64,
    /// The handle of the firmware's internal client.
    pub h_internal_client: u32,
    /// The handle of its device.
    pub h_internal_device: u32,
    /// The handle of its subdevice.
    pub h_internal_subdevice: u32,
    /// Whether the GPU runs in self-hosted mode.
    pub self_hosted_mode: u8,
    /// Whether ATS is supported.
    pub ats_supported: u8,
    /// Whether the GPU has a UEFI VBIOS.
    pub is_gpu_uefi: u8,
    /// Whether EFI initialised it.
    pub is_efi_init: u8,
    /// Two ECID manufacturing records, three words each.
    pub ecid_info: [[u32; 3]; 2],
    /// Offsets in the WPR layout: the non-WPR heap, then FRTS.
    pub fw_wpr_layout_offset: [u64; 2],
}

assert_layout!(GspStaticConfigInfo, size 0x678, {
    gr_caps_bits: 0x0,
    gid_info: 0x18,
    sku_info: 0x124,
    fb_regions: 0x158,
    sriov_caps: 0x460,
    sriov_max_gfid: 0x4b0,
    engine_caps: 0x4b4,
    poison_fuse_enabled: 0x4c0,
    fb_length: 0x4c8,
    fbio_mask: 0x4d0,
    fb_bus_width: 0x4d8,
    fb_ram_type: 0x4dc,
    fbp_mask: 0x4e0,
    l2_cache_size: 0x4e8,
    name: 0x4ec,
    short_name: 0x52c,
    name_utf16: 0x56c,
    sku_flags: 0x5ec,
    rtd3_gc6_total_board_power: 0x5fa,
    rtd3_gc6_perst_delay: 0x5fc,
    bar1_pde_base: 0x600,
    bar2_pde_base: 0x608,
    vbios_valid: 0x610,
    vbios_sub_vendor: 0x614,
    vbios_sub_device: 0x618,
    page_retirement_supported: 0x61c,
    split_vas_between_server_client_rm: 0x61d,
    cl_rootport_needs_nosnoop_war: 0x61e,
    displayless_max_heads: 0x620,
    displayless_max_resolution: 0x628,
    displayless_max_pixels: 0x638,
    h_internal_client: 0x640,
    h_internal_device: 0x644,
    h_internal_subdevice: 0x648,
    self_hosted_mode: 0x64c,
    ats_supported: 0x64d,
    is_gpu_uefi: 0x64e,
    is_efi_init: 0x64f,
    ecid_info: 0x650,
    fw_wpr_layout_offset: 0x668,
});
const_assert_eq!(core::mem::align_of::<GspStaticConfigInfo>(), 8);

/// Returns `bytes` up to its first NUL, or `"<invalid>"` if not UTF-8.
fn text_until_nul(bytes: &[u8]) -> &str {
    let len = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    core::str::from_utf8(&bytes[..len]).unwrap_or("<invalid>")
}

impl GspStaticConfigInfo {
    /// Returns the GPU name, up to its NUL, or `"<invalid>"` if it is not UTF-8.
    pub fn gpu_name(&self) -> &str {
        text_until_nul(&self.name)
    }

    /// Returns the GPU's short name, as [`Self::gpu_name`] does the name.
    pub fn gpu_short_name(&self) -> &str {
        text_until_nul(&self.short_name)
    }

    /// Returns the first `count` frame buffer regions, at most [`FB_REGION_SLOTS`].
    pub(crate) fn fb_regions(&self) -> &[FbRegion] {
        let count = usize::try_from(self.fb_regions.count).unwrap_or(usize::MAX);
        &self.fb_regions.regions[..count.min(FB_REGION_SLOTS)]
    }

    /// Returns the regions the driver may allocate from, as byte ranges.
    pub fn usable_fb_regions(&self) -> impl Iterator<Item = core::ops::Range<u64>> + '_ {
        self.fb_regions()
            .iter()
            .filter(|r| r.is_usable())
            .filter_map(|r| Some(r.base..r.limit.checked_add(1)?))
    }
}

impl Default for GspStaticConfigInfo {
    /// All zero.
    fn default() -> Self {
        Self::new_zeroed()
    }
}

/// `GET_GSP_STATIC_INFO`: a zeroed [`GspStaticConfigInfo`] the GSP fills, as upstream.
#[derive(Clone, Copy, Debug, Default)]
pub struct GetGspStaticInfo;

impl CommandToGsp for GetGspStaticInfo {
    const FUNCTION: MsgFunction = MsgFunction::GET_GSP_STATIC_INFO;
    type Command = GspStaticConfigInfo;
    type Reply = GspStaticConfigInfo;

    fn init(&self) -> GspStaticConfigInfo {
        GspStaticConfigInfo::new_zeroed()
    }
}

impl MessageFromGsp for GspStaticConfigInfo {
    const FUNCTION: MsgFunction = MsgFunction::GET_GSP_STATIC_INFO;
    type Message = Self;
    const LENGTH: Option<usize> = Some(core::mem::size_of::<Self>());

    fn read(msg: &Self, rest: &[u8]) -> Result<Self> {
        fixed_size(msg, rest)
    }
}

/// Returns `msg` if nothing follows its fixed part.
///
/// # Errors
///
/// - `EIO` if bytes follow it.
fn fixed_size<M: Copy>(msg: &M, rest: &[u8]) -> Result<M> {
    match rest {
        [] => Ok(*msg),
        _ => Err(EIO),
    }
}

/// `GSP_INIT_DONE`: the GSP finished booting (sent unasked).
///
/// Not r570's: upstream ignores this payload; the virtual GSP sends a status word.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct GspInitDone {
    /// `NV_OK` on success.
    pub status: u32,
}

impl MessageFromGsp for GspInitDone {
    const FUNCTION: MsgFunction = MsgFunction::GSP_INIT_DONE;
    type Message = Self;
    const LENGTH: Option<usize> = Some(core::mem::size_of::<Self>());

    fn read(msg: &Self, rest: &[u8]) -> Result<Self> {
        fixed_size(msg, rest)
    }
}

/// Returns a copy of `rest`, a message without a fixed part.
///
/// # Errors
///
/// - `ENOMEM` if the memory cannot be had.
fn bytes(rest: &[u8]) -> Result<KVec<u8>> {
    let mut copy = KVec::new();
    copy.extend_from_slice(rest, GFP_KERNEL)?;
    Ok(copy)
}

/// The fixed part of `GSP_RM_CONTROL` (`rpc_gsp_rm_control_v03_00`), followed by the
/// parameters; the reply has the same shape, `status` set.
///
/// `params_size` also tells the GSP where a split control ends. The trailing `params[]`
/// adds nothing to the size.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct RmControlHeader {
    /// The handle of the client the object belongs to (`hClient`).
    pub h_client: u32,
    /// The handle of the object the control is addressed to (`hObject`).
    pub h_object: u32,
    /// The control: `class << 16 | category << 8 | index`, the class being the object's.
    pub cmd: u32,
    /// [`NV_OK`] on send; in the reply, the control's result.
    pub status: u32,
    /// The number of parameter bytes after this header (`paramsSize`).
    pub params_size: u32,
    /// Flags of the call; 0, as nouveau sends it.
    pub flags: u32,
}

assert_layout!(RmControlHeader, size 0x18, {
    h_client: 0x0,
    h_object: 0x4,
    cmd: 0x8,
    status: 0xc,
    params_size: 0x10,
    flags: 0x14,
});
const_assert_eq!(core::mem::align_of::<RmControlHeader>(), 4);

/// `GSP_RM_CONTROL`: runs control `cmd` on object `h_object` of client `h_client`.
pub struct RmControl<'a> {
    /// The client's handle.
    pub h_client: u32,
    /// The object's handle.
    pub h_object: u32,
    /// The control.
    pub cmd: u32,
    /// The parameters.
    pub params: &'a [u8],
}

impl CommandToGsp for RmControl<'_> {
    const FUNCTION: MsgFunction = MsgFunction::GSP_RM_CONTROL;
    type Command = RmControlHeader;
    type Reply = RmControlReply;

    fn init(&self) -> RmControlHeader {
        RmControlHeader {
            h_client: self.h_client,
            h_object: self.h_object,
            cmd: self.cmd,
            status: NV_OK,
            // The send refuses parameters this long (`EMSGSIZE`): the 0 is never sent.
            params_size: u32::try_from(self.params.len()).unwrap_or_default(),
            flags: 0,
        }
    }

    fn variable_payload(&self) -> &[u8] {
        self.params
    }

    /// The header and the parameters, filled in, come back.
    fn reply_len(&self) -> Option<usize> {
        Some(self.size())
    }
}

/// The GSP's answer to an [`RmControl`].
///
/// A failed control's reply still has `rpc_result` `NV_OK`; the failure is in
/// [`RmControlReply::status`], for the caller to map (nouveau maps it to an errno).
pub struct RmControlReply {
    /// The control's result: `NV_OK`, or the `NV_ERR_*` it failed with.
    pub status: u32,
    /// The parameters as the GSP returned them.
    pub params: KVec<u8>,
}

impl MessageFromGsp for RmControlReply {
    const FUNCTION: MsgFunction = MsgFunction::GSP_RM_CONTROL;
    type Message = RmControlHeader;

    /// # Errors
    ///
    /// - `EIO` if the bytes after the header are not `params_size` many.
    /// - `ENOMEM` if they cannot be kept.
    fn read(msg: &RmControlHeader, rest: &[u8]) -> Result<Self> {
        if rest.len() != usize::from_safe_cast(msg.params_size) {
            return Err(EIO);
        }
        Ok(Self {
            status: msg.status,
            params: bytes(rest)?,
        })
    }
}

/// `UNLOADING_GUEST_DRIVER`: the driver is going away (r570's, version 0x1f07).
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

assert_layout!(UnloadingGuestDriver, size 0x8, {
    suspend: 0x0,
    gc6_entering: 0x1,
    new_level: 0x4,
});

command_as_is!(
    UnloadingGuestDriver,
    MsgFunction::UNLOADING_GUEST_DRIVER,
    UnloadingGuestDriverReply
);

empty_reply! {
    /// The GSP's answer to [`UnloadingGuestDriver`], read as empty.
    UnloadingGuestDriverReply, MsgFunction::UNLOADING_GUEST_DRIVER
}
