// SPDX-License-Identifier: GPL-2.0

//! What the GSP's first firmware (the FMC) does once the FSP has started it: follow the
//! boot parameters the driver left in system memory to the message queues.
//!
//! The chain, every step checked and refused by name ([`Refused`]):
//!
//! 1. the chain-of-trust message's boot-parameters address → `GSP_FMC_BOOT_PARAMS`
//!    ([`FmcBootParams`]): the GSP-RM descriptor (the WPR metadata) in coherent system
//!    memory, the libos arguments in non-coherent system memory;
//! 2. `gspRmParams.bootArgsOffset` → the libos page, an array of
//!    `LibosMemoryRegionInitArgument` ([`LibosRegion`]), each region named by its
//!    `id8` (the name's bytes in reverse);
//! 3. its `RMARGS` region → `GSP_ARGUMENTS_CACHED`;
//! 4. its message-queue arguments → the PTE page and the queues, which
//!    [`vgsp::Vgsp::locate`] checks as it does for every other tier.

use core::fmt;

use nova_core::gsp::fw::GspArgumentsCached;
use static_assertions::const_assert_eq;
use zerocopy::FromBytes as _;
use zerocopy_derive::{
    FromBytes,
    Immutable,
    IntoBytes,
    KnownLayout, //
};

use crate::device::GuestRam;

/// `GSP_DMA_TARGET_COHERENT_SYSTEM`.
pub const TARGET_COHERENT_SYSTEM: u32 = 1;
/// `GSP_DMA_TARGET_NONCOHERENT_SYSTEM`.
pub const TARGET_NONCOHERENT_SYSTEM: u32 = 2;
/// `LIBOS_MEMORY_REGION_CONTIGUOUS`.
pub const REGION_CONTIGUOUS: u8 = 1;
/// `LIBOS_MEMORY_REGION_LOC_SYSMEM`.
pub const REGION_LOC_SYSMEM: u8 = 1;
/// The libos page: one GSP page of region descriptors.
pub const LIBOS_PAGE: usize = 4096;

/// r570's `GSP_FMC_BOOT_PARAMS`, flattened: the FMC's init parameters, the GSP-RM
/// boot parameters (`GSP_ACR_BOOT_GSP_RM_PARAMS`), the RM parameters (`GSP_RM_PARAMS`)
/// and the SPDM parameters (`GSP_SPDM_PARAMS`), with their C padding.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct FmcBootParams {
    /// `initParams.regkeys`.
    pub regkeys: u32,
    _pad0: u32,
    /// `bootGspRmParams.target`: where the descriptor is.
    pub rm_target: u32,
    /// `bootGspRmParams.gspRmDescSize`: the WPR metadata's size.
    pub rm_desc_size: u32,
    /// `bootGspRmParams.gspRmDescOffset`: the WPR metadata's address.
    pub rm_desc_offset: u64,
    /// `bootGspRmParams.wprCarveoutOffset`.
    pub wpr_carveout_offset: u64,
    /// `bootGspRmParams.wprCarveoutSize`.
    pub wpr_carveout_size: u32,
    /// `bootGspRmParams.bIsGspRmBoot`.
    pub is_gsp_rm_boot: u8,
    _pad1: [u8; 3],
    /// `gspRmParams.target`: where the libos arguments are.
    pub libos_target: u32,
    _pad2: u32,
    /// `gspRmParams.bootArgsOffset`: the libos page's address.
    pub boot_args_offset: u64,
    /// `gspSpdmParams.target`.
    pub spdm_target: u32,
    _pad3: u32,
    /// `gspSpdmParams.payloadBufferOffset`.
    pub spdm_payload_offset: u64,
    /// `gspSpdmParams.payloadBufferSize`.
    pub spdm_payload_size: u32,
    _pad4: u32,
}

const_assert_eq!(core::mem::size_of::<FmcBootParams>(), 80);
const_assert_eq!(core::mem::offset_of!(FmcBootParams, rm_desc_offset), 16);
const_assert_eq!(core::mem::offset_of!(FmcBootParams, libos_target), 40);
const_assert_eq!(core::mem::offset_of!(FmcBootParams, boot_args_offset), 48);

/// r570's `LibosMemoryRegionInitArgument`: one region the GSP's OS maps.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct LibosRegion {
    /// The region's name, up to 8 bytes, last byte first.
    pub id8: u64,
    /// Its bus address.
    pub pa: u64,
    /// Its size in bytes.
    pub size: u64,
    /// `LIBOS_MEMORY_REGION_*`: contiguous or radix-3.
    pub kind: u8,
    /// `LIBOS_MEMORY_REGION_LOC_*`: system memory or frame buffer.
    pub loc: u8,
    _pad: [u8; 6],
}

const_assert_eq!(core::mem::size_of::<LibosRegion>(), 32);

/// Returns a region name's `id8`: its bytes in reverse, the last in the lowest byte.
pub const fn id8(name: &str) -> u64 {
    let bytes = name.as_bytes();
    let mut id = 0u64;
    let mut i = 0;
    while i < bytes.len() && i < 8 {
        id = (id << 8) | bytes[i] as u64;
        i += 1;
    }
    id
}

/// Why the FMC did not reach the queues: the step's refusal and the address it was at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    /// The inconsistency, in a few words.
    pub reason: &'static str,
    /// What was found, where the check says more.
    pub detail: Option<String>,
    /// The bus address being followed.
    pub at: u64,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at {:#x})", self.reason, self.at)?;
        match &self.detail {
            Some(detail) => write!(f, ": {detail}"),
            None => Ok(()),
        }
    }
}

/// What the FMC found: the boot parameters, the libos regions named, and the GSP over
/// the queues.
pub struct Found {
    /// The boot parameters.
    pub params: FmcBootParams,
    /// The names of the libos regions, in order.
    pub regions: Vec<String>,
    /// Where `GSP_ARGUMENTS_CACHED` is.
    pub rmargs: u64,
    /// Where the queues' shared memory is.
    pub shared: u64,
    /// The GSP, over the queues.
    pub gsp: vgsp::Vgsp<'static>,
}

fn read<T: zerocopy::FromBytes>(
    ram: &dyn GuestRam,
    bus: u64,
    what: &'static str,
) -> Result<T, Refused> {
    let refuse = |reason| Refused {
        reason,
        detail: None,
        at: bus,
    };
    let view = ram.region_of(bus).ok_or(refuse(what))?;
    let (region, base) = view;
    let off = usize::try_from(bus - base).map_err(|_| refuse(what))?;
    let mut bytes = vec![0u8; core::mem::size_of::<T>()];
    region
        .read_bytes(off, &mut bytes)
        .map_err(|_| refuse(what))?;
    T::read_from_bytes(&bytes).map_err(|_| refuse(what))
}

/// Returns the name an `id8` packs.
fn name_of(id8: u64) -> String {
    id8.to_be_bytes()
        .iter()
        .filter(|&&b| b != 0)
        .map(|&b| if b.is_ascii_graphic() { b as char } else { '?' })
        .collect()
}

/// Follows the chain from the boot parameters at `boot_params` to the queues.
///
/// `check_desc` checks the GSP-RM descriptor (the WPR metadata's bytes) against the
/// firmware the device loaded.
///
/// # Errors
///
/// The first step that does not hold, named.
pub fn locate(
    ram: &dyn GuestRam,
    boot_params: u64,
    desc_size: usize,
    check_desc: &dyn Fn(&[u8]) -> Result<(), String>,
) -> Result<Found, Refused> {
    let params: FmcBootParams = read(ram, boot_params, "boot parameters outside RAM")?;
    let at = |reason, at| Refused {
        reason,
        detail: None,
        at,
    };
    if params.is_gsp_rm_boot != 1 {
        return Err(at("boot parameters not a GSP-RM boot", boot_params));
    }
    if params.rm_target != TARGET_COHERENT_SYSTEM {
        return Err(at(
            "GSP-RM descriptor not in coherent system memory",
            boot_params,
        ));
    }
    if usize::try_from(params.rm_desc_size) != Ok(desc_size) {
        return Err(at(
            "GSP-RM descriptor size not the WPR metadata's",
            boot_params,
        ));
    }
    let desc = ram
        .view(params.rm_desc_offset, desc_size)
        .ok_or(at("GSP-RM descriptor outside RAM", params.rm_desc_offset))?;
    let mut bytes = vec![0u8; desc_size];
    desc.read_bytes(0, &mut bytes)
        .map_err(|_| at("GSP-RM descriptor outside RAM", params.rm_desc_offset))?;
    if let Err(why) = check_desc(&bytes) {
        return Err(Refused {
            reason: "GSP-RM descriptor not the firmware's",
            detail: Some(why),
            at: params.rm_desc_offset,
        });
    }
    if params.libos_target != TARGET_NONCOHERENT_SYSTEM {
        return Err(at("libos arguments not in system memory", boot_params));
    }
    let libos = params.boot_args_offset;
    if !libos.is_multiple_of(LIBOS_PAGE as u64) {
        return Err(at("libos page not page-aligned", libos));
    }
    let page: [LibosRegion; LIBOS_PAGE / 32] = read(ram, libos, "libos page outside RAM")?;
    let mut regions = Vec::new();
    let mut rmargs = None;
    for region in page.iter().take_while(|r| r.id8 != 0) {
        regions.push(name_of(region.id8));
        if region.id8 == id8("RMARGS") {
            rmargs = Some(*region);
        }
    }
    let rmargs = rmargs.ok_or(at("no RMARGS region in the libos page", libos))?;
    if rmargs.kind != REGION_CONTIGUOUS || rmargs.loc != REGION_LOC_SYSMEM {
        return Err(at("RMARGS not contiguous system memory", libos));
    }
    let size = core::mem::size_of::<GspArgumentsCached>();
    if rmargs.size < size as u64 {
        return Err(at("RMARGS smaller than GSP_ARGUMENTS_CACHED", rmargs.pa));
    }
    let args = ram
        .view(rmargs.pa, size)
        .ok_or(at("RMARGS outside RAM", rmargs.pa))?;
    let mut raw = vec![0u8; size];
    args.read_bytes(0, &mut raw)
        .map_err(|_| at("RMARGS outside RAM", rmargs.pa))?;
    let cached = GspArgumentsCached::read_from_bytes(&raw)
        .map_err(|_| at("RMARGS unreadable", rmargs.pa))?;
    let shared = cached.message_queue_init_arguments.shared_mem_phys_addr;
    let (window, window_bus) = ram
        .region_of(shared)
        .ok_or(at("message queues outside RAM", shared))?;
    let gsp = vgsp::Vgsp::locate(window, window_bus, args).map_err(|e| at(e.reason, shared))?;
    Ok(Found {
        params,
        regions,
        rmargs: rmargs.pa,
        shared,
        gsp,
    })
}

#[cfg(test)]
mod tests {
    use std::os::fd::{
        FromRawFd,
        OwnedFd, //
    };

    use nova_core::gsp::fw;
    use zerocopy::IntoBytes;

    use super::*;
    use crate::device::{
        MappedRam,
        Region, //
    };

    /// Where the test's RAM starts on the bus, and its size.
    const BASE: u64 = 0x10_0000;
    const SIZE: usize = 1 << 20;
    /// Where the driver's structures sit in it.
    const PARAMS: u64 = BASE;
    const DESC: u64 = BASE + 0x1000;
    const LIBOS: u64 = BASE + 0x2000;
    const RMARGS: u64 = BASE + 0x3000;
    const SHARED: u64 = BASE + 0x4_0000;

    /// A RAM laid out as nova-core lays out a GH100 boot: boot parameters, descriptor,
    /// libos page (with `regions`), RMARGS, and the queues' PTE page.
    fn ram(regions: &[&str]) -> MappedRam {
        // SAFETY: a plain syscall on a NUL-terminated name.
        let fd = unsafe { libc::memfd_create(c"gh100-test".as_ptr(), 0) };
        assert!(fd >= 0);
        // SAFETY: `memfd_create` returned a new fd, ours alone.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: sizing the file we own.
        assert_eq!(
            unsafe { libc::ftruncate(std::os::fd::AsRawFd::as_raw_fd(&fd), SIZE as i64) },
            0
        );
        let ram = MappedRam::new();
        ram.sync(vec![Region {
            gpa: BASE,
            size: SIZE as u64,
            offset: 0,
            fd,
        }])
        .unwrap();
        let put = |bus: u64, bytes: &[u8]| {
            ram.view(bus, bytes.len())
                .unwrap()
                .write_bytes(0, bytes)
                .unwrap();
        };
        let params = FmcBootParams {
            is_gsp_rm_boot: 1,
            rm_target: TARGET_COHERENT_SYSTEM,
            rm_desc_size: 256,
            rm_desc_offset: DESC,
            libos_target: TARGET_NONCOHERENT_SYSTEM,
            boot_args_offset: LIBOS,
            ..FmcBootParams::default()
        };
        put(PARAMS, params.as_bytes());
        for (i, name) in regions.iter().enumerate() {
            let region = LibosRegion {
                id8: id8(name),
                pa: RMARGS,
                size: 4096,
                kind: REGION_CONTIGUOUS,
                loc: REGION_LOC_SYSMEM,
                ..LibosRegion::default()
            };
            put(LIBOS + 32 * i as u64, region.as_bytes());
        }
        put(RMARGS, fw::GspArgumentsCached::new(SHARED).as_bytes());
        for i in 0..fw::GSP_MEM_PAGES {
            let pte = SHARED + (i * fw::GSP_PAGE_SIZE) as u64;
            put(
                SHARED + (fw::PTES_OFFSET + 8 * i) as u64,
                &pte.to_le_bytes(),
            );
        }
        ram
    }

    fn any_desc(_: &[u8]) -> Result<(), String> {
        Ok(())
    }

    #[test]
    fn reaches_the_queues_through_the_boot_arguments() {
        let ram = ram(&["LOGINIT", "RMARGS"]);
        let found = locate(&ram, PARAMS, 256, &any_desc)
            .map_err(|e| e.to_string())
            .unwrap();
        assert_eq!(found.regions, ["LOGINIT", "RMARGS"]);
        assert_eq!((found.rmargs, found.shared), (RMARGS, SHARED));
    }

    #[test]
    fn refuses_a_libos_page_without_rmargs() {
        let ram = ram(&["LOGINIT", "LOGRM"]);
        let refused = locate(&ram, PARAMS, 256, &any_desc).err().unwrap();
        assert_eq!(
            (refused.reason, refused.at),
            ("no RMARGS region in the libos page", LIBOS)
        );
    }

    #[test]
    fn refuses_boot_parameters_outside_ram() {
        let ram = ram(&["RMARGS"]);
        let refused = locate(&ram, BASE + SIZE as u64, 256, &any_desc)
            .err()
            .unwrap();
        assert_eq!(refused.reason, "boot parameters outside RAM");
    }

    #[test]
    fn refuses_a_descriptor_the_firmware_did_not_make() {
        let ram = ram(&["RMARGS"]);
        let check = |_: &[u8]| Err("magic 0x0".to_string());
        let refused = locate(&ram, PARAMS, 256, &check).err().unwrap();
        assert_eq!(refused.reason, "GSP-RM descriptor not the firmware's");
        assert_eq!(refused.detail.as_deref(), Some("magic 0x0"));
    }

    #[test]
    fn refuses_a_descriptor_size_that_is_not_the_metadata_s() {
        let ram = ram(&["RMARGS"]);
        let refused = locate(&ram, PARAMS, 128, &any_desc).err().unwrap();
        assert_eq!(
            refused.reason,
            "GSP-RM descriptor size not the WPR metadata's"
        );
    }

    #[test]
    fn id8_packs_the_name_last_byte_first() {
        assert_eq!(id8("RMARGS").to_le_bytes(), *b"SGRAMR\0\0");
        assert_eq!(name_of(id8("LOGINIT")), "LOGINIT");
    }
}
