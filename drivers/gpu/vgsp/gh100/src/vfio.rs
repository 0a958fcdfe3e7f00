// SPDX-License-Identifier: GPL-2.0

//! The transport: vfio-user, the protocol of QEMU ≥ 10.1's `-device vfio-user-pci` (on
//! every target), served with rust-vmm's `vfio_user` crate.
//!
//! This process listens on a Unix socket in a private directory ([`Listener`]); QEMU
//! connects when it realizes the device and speaks vfio's ioctls as messages: the device's
//! info and each region's, region reads and writes (BARs are regions 0 to 5, config space
//! region 7), the guest's RAM as DMA maps with fds, interrupts as eventfds, and reset. The
//! crate's [`Server`] frames the messages; the backend here turns them into the model's
//! traits ([`PciFunction`]).
//!
//! QEMU's `vfio-user-pci` is kernel vfio's `vfio-pci` with a socket under it
//! (`hw/vfio-user/`, `hw/vfio/pci.c`), so QEMU, not the device, does part of the config
//! space:
//!
//! - The BAR registers are QEMU's: a BAR's size is its region's size, and only its type
//!   bits (I/O or memory, 64-bit, prefetchable) come from the device's register. The regions
//!   are therefore described by sizing the model's own BARs (all ones written, read back,
//!   restored): the two cannot disagree.
//! - The expansion ROM is region 6 (size 0 here: none), the multi-function bit and the
//!   MSI and MSI-X capabilities are QEMU's too. A config space of 256 bytes makes the
//!   function conventional PCI (QEMU adds no Express capability).
//! - Interrupts are described as kernel vfio-pci describes them, from the config space:
//!   INTx when the header has an interrupt pin, MSI and MSI-X from their capabilities, the
//!   error interrupt for PCI Express functions only, the device-request interrupt always.
//!   The eventfds QEMU sets are kept and never signalled (nova-core 7.3 polls). Without an
//!   error interrupt QEMU warns "Could not enable error recovery for the device".
//!
//! The device reaches only the guest RAM it can map: each DMA map must come with an fd
//! (`memory-backend-memfd,share=on`), may not overlap another, and the model gets the whole
//! list at every change ([`PciFunction::sync_ram`]). An unmap removes the maps inside its
//! range (or all, with vfio's `UNMAP_ALL`).
//!
//! Every request the device cannot take is refused by name: the reply carries the error
//! flag, the transcript a `gh100: vfio-user: refused …` line, and [`Listener::serve`] fails
//! at the end with the count and the first. Nothing QEMU sends ends this process.
//!
//! # What the crate (0.1.7) lacks, and the guards
//!
//! - A backend's error is answered with the error flag but errno 0 (only the crate's own
//!   "invalid input" becomes `EINVAL`), so QEMU reports such a failure as "Success": hence
//!   the transcript line and the failure of [`Listener::serve`] above.
//! - Its own refusals (an unknown command, a region or interrupt index beyond those
//!   described, boolean interrupt data) only go to the `log` facade: a logger installed
//!   here turns its errors and warnings into transcript lines, counted as refusals.
//! - It panics on a malformed version message (a size below the fixed part underflows;
//!   capability data without its NUL is unwrapped). [`Listener::serve`] catches the panic
//!   and returns it as an error: the connection ends, the process does not.
//! - It reads each message's fixed part whatever the header's size says, and refuses some
//!   before reading their payload (an unknown command, a write to an unknown region): the
//!   stream is then out of step, the payload read as the next header. Only a framing layer
//!   of our own in front of the crate could guard this; QEMU does not send such messages.
//! - It allocates a region access's count (up to 4 GiB) before the backend can refuse it,
//!   and does not check that a header arrived whole.
//! - Its `DmaUnmapFlags` names bits 1 and 2 where vfio's unmap flags are bits 0 (dirty
//!   bitmap) and 1 (all, which QEMU sends): the raw bits are read as vfio's.
//! - `Server::run` takes one connection and blocks in `accept`: a [`Waker`] ends a wait for
//!   a QEMU that ended before connecting.
//! - Its `Client` (used by the tests) ignores error replies and reads an error answering a
//!   region read as the start of a longer reply: the tests send malformed requests by hand.

use std::{
    ffi::OsString,
    fs::File,
    io,
    mem::size_of,
    os::{
        fd::OwnedFd,
        unix::{
            ffi::OsStringExt,
            net::{
                UnixListener,
                UnixStream, //
            },
        },
    },
    panic::{
        self,
        AssertUnwindSafe, //
    },
    path::{
        Path,
        PathBuf, //
    },
};

use vfio_bindings::bindings::vfio::{
    vfio_region_info,
    VFIO_DMA_MAP_FLAG_READ,
    VFIO_DMA_MAP_FLAG_WRITE,
    VFIO_DMA_UNMAP_FLAG_ALL,
    VFIO_IRQ_INFO_AUTOMASKED,
    VFIO_IRQ_INFO_EVENTFD,
    VFIO_IRQ_INFO_MASKABLE,
    VFIO_IRQ_INFO_NORESIZE,
    VFIO_IRQ_SET_ACTION_MASK,
    VFIO_IRQ_SET_ACTION_TRIGGER,
    VFIO_IRQ_SET_ACTION_TYPE_MASK,
    VFIO_IRQ_SET_ACTION_UNMASK,
    VFIO_IRQ_SET_DATA_EVENTFD,
    VFIO_IRQ_SET_DATA_NONE,
    VFIO_IRQ_SET_DATA_TYPE_MASK,
    VFIO_PCI_NUM_IRQS,
    VFIO_PCI_NUM_REGIONS,
    VFIO_REGION_INFO_FLAG_READ,
    VFIO_REGION_INFO_FLAG_WRITE, //
};
use vfio_user::{
    DmaMapFlags,
    DmaUnmapFlags,
    IrqInfo,
    Server,
    ServerBackend,
    ServerRegion, //
};

use crate::device::{
    ConfigSpace,
    PciFunction,
    Region, //
};

/// The socket's name in the private directory.
const SOCKET_NAME: &str = "gh100.sock";
/// The config-space offset of the first BAR register.
const BAR_REGISTER_0: u32 = 0x10;
/// The number of BARs of a type-0 header.
const BARS: usize = 6;
/// A BAR register's I/O space bit.
const BAR_IO: u32 = 0x1;
/// A memory BAR's type field (bits 2:1): 64-bit when 2.
const BAR_MEMORY_TYPE: u32 = 0x6;
/// The type field of a 64-bit memory BAR.
const BAR_MEMORY_64: u32 = 0x4;
/// The address bits of an I/O BAR.
const BAR_IO_ADDRESS: u32 = !0x3;
/// The address bits of a memory BAR.
const BAR_MEMORY_ADDRESS: u32 = !0xf;
/// The status register and its capability-list bit.
const STATUS: u32 = 0x06;
const STATUS_CAPABILITY_LIST: u32 = 0x10;
/// The capability pointer.
const CAPABILITY_POINTER: u32 = 0x34;
/// The interrupt pin register.
const INTERRUPT_PIN: u32 = 0x3d;
/// Capability ids: MSI, PCI Express, MSI-X.
const CAP_MSI: u32 = 0x05;
const CAP_EXPRESS: u32 = 0x10;
const CAP_MSIX: u32 = 0x11;
/// The most capabilities a 256-byte list can hold: bounds a walk of a looping list.
const CAPABILITIES_MAX: usize = 48;
/// vfio's DMA map flags: readable and writable by the device.
const DMA_READ_WRITE: u32 = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE;

/// vfio-pci's region indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RegionIndex {
    /// BARs 0 to 5.
    Bar(usize),
    /// The expansion ROM.
    Rom,
    /// The config space.
    Config,
    /// Legacy VGA ranges.
    Vga,
}

impl RegionIndex {
    /// Returns the region with the wire index `index`, if vfio-pci has one.
    fn from_index(index: u32) -> Option<Self> {
        match index {
            // CAST: 0 to 5.
            0..=5 => Some(Self::Bar(index as usize)),
            6 => Some(Self::Rom),
            7 => Some(Self::Config),
            8 => Some(Self::Vga),
            _ => None,
        }
    }

    /// Returns the widest access the model takes in one piece: 4 bytes of config space
    /// ([`ConfigSpace::read`]), 8 of a BAR ([`crate::device::Bar::read`]).
    fn widest(self) -> usize {
        match self {
            Self::Config => 4,
            _ => 8,
        }
    }

    /// Returns the region's name, for logs.
    fn name(self) -> String {
        match self {
            Self::Bar(n) => format!("BAR{n}"),
            Self::Rom => "the expansion ROM".into(),
            Self::Config => "config space".into(),
            Self::Vga => "the VGA ranges".into(),
        }
    }
}

/// vfio-pci's interrupt indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
enum Irq {
    Intx = 0,
    Msi = 1,
    Msix = 2,
    Err = 3,
    Req = 4,
}

// CAST: 5.
static_assertions::const_assert_eq!(Irq::ALL.len(), VFIO_PCI_NUM_IRQS as usize);

impl Irq {
    const ALL: [Self; 5] = [Self::Intx, Self::Msi, Self::Msix, Self::Err, Self::Req];

    /// Returns the interrupt with the wire index `index`, if vfio-pci has one.
    fn from_index(index: u32) -> Option<Self> {
        Self::ALL.into_iter().find(|irq| irq.index() == index)
    }

    /// Returns its wire index.
    const fn index(self) -> u32 {
        self as u32
    }

    /// Returns its place in per-interrupt arrays.
    const fn slot(self) -> usize {
        // CAST: 0 to 4.
        self as usize
    }

    /// Returns the interrupt's name, for logs.
    fn name(self) -> &'static str {
        match self {
            Self::Intx => "INTx",
            Self::Msi => "MSI",
            Self::Msix => "MSI-X",
            Self::Err => "the error interrupt",
            Self::Req => "the device-request interrupt",
        }
    }

    /// Returns the flags kernel vfio-pci gives the interrupt.
    fn flags(self) -> u32 {
        match self {
            Self::Intx => VFIO_IRQ_INFO_EVENTFD | VFIO_IRQ_INFO_MASKABLE | VFIO_IRQ_INFO_AUTOMASKED,
            _ => VFIO_IRQ_INFO_EVENTFD | VFIO_IRQ_INFO_NORESIZE,
        }
    }
}

/// What the device's info and region info describe: the config space's size, the BARs'
/// sizes and the interrupts' vector counts, all read from the model's config space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    config: u32,
    bars: [u64; BARS],
    irqs: [u32; 5],
}

impl Layout {
    /// Reads the layout of the function whose config space is `config`. The BARs are sized
    /// as a BIOS does: all ones written, read back, the original value restored.
    ///
    /// # Errors
    ///
    /// `InvalidData` when the config space is neither 256 nor 4096 bytes.
    pub(crate) fn of(config: &mut dyn ConfigSpace) -> io::Result<Self> {
        let size = config.size();
        if size != 256 && size != 4096 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a config space of {size} bytes (256 or 4096 expected)"),
            ));
        }
        let mut bars = [0u64; BARS];
        let mut bar = 0;
        while bar < BARS {
            // CAST: a BAR number below 6.
            let reg = BAR_REGISTER_0 + 4 * bar as u32;
            let original = config.read(reg, 4);
            let sized = size_register(config, reg);
            // The size is the lowest address bit that stuck; none stuck: no BAR.
            if original & BAR_IO != 0 {
                // I/O space is 64 KiB: the upper half may read as zeroes.
                let mask = sized & BAR_IO_ADDRESS;
                bars[bar] = match mask {
                    0 => 0,
                    _ => u64::from((!mask).wrapping_add(1) & 0xffff),
                };
                bar += 1;
            } else if original & BAR_MEMORY_TYPE == BAR_MEMORY_64 && bar + 1 < BARS {
                let high = size_register(config, reg + 4);
                let mask = u64::from(high) << 32 | u64::from(sized & BAR_MEMORY_ADDRESS);
                bars[bar] = match mask {
                    0 => 0,
                    _ => (!mask).wrapping_add(1),
                };
                // The next register is this BAR's upper half: no region of its own.
                bar += 2;
            } else {
                let mask = sized & BAR_MEMORY_ADDRESS;
                bars[bar] = match mask {
                    0 => 0,
                    _ => u64::from((!mask).wrapping_add(1)),
                };
                bar += 1;
            }
        }
        Ok(Self {
            config: size,
            bars,
            irqs: irq_counts(config),
        })
    }

    /// Returns the size of the region `index`.
    fn region_size(&self, index: RegionIndex) -> u64 {
        match index {
            RegionIndex::Bar(n) => self.bars[n],
            RegionIndex::Config => u64::from(self.config),
            RegionIndex::Rom | RegionIndex::Vga => 0,
        }
    }

    /// The regions as the crate's server describes them: readable and writable when they
    /// have bytes, never mapped (each access is a message, which the model sees).
    fn regions(&self) -> Vec<ServerRegion> {
        (0..VFIO_PCI_NUM_REGIONS)
            .map(|index| {
                let size = RegionIndex::from_index(index).map_or(0, |r| self.region_size(r));
                let flags = match size {
                    0 => 0,
                    _ => VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE,
                };
                ServerRegion {
                    region_info: vfio_region_info {
                        // CAST: the 32-byte structure.
                        argsz: size_of::<vfio_region_info>() as u32,
                        flags,
                        index,
                        cap_offset: 0,
                        size,
                        offset: 0,
                    },
                    sparse_areas: Vec::new(),
                    mmap_fd: None,
                }
            })
            .collect()
    }

    /// The interrupts as the crate's server describes them.
    fn irq_infos(&self) -> Vec<IrqInfo> {
        Irq::ALL
            .into_iter()
            .map(|irq| IrqInfo {
                index: irq.index(),
                flags: irq.flags(),
                count: self.irqs[irq.slot()],
            })
            .collect()
    }
}

/// Writes all ones to the config register `reg`, reads it back and restores it.
fn size_register(config: &mut dyn ConfigSpace, reg: u32) -> u32 {
    let original = config.read(reg, 4);
    config.write(reg, u32::MAX, 4);
    let sized = config.read(reg, 4);
    config.write(reg, original, 4);
    sized
}

/// Returns the vector count of each interrupt, as kernel vfio-pci counts them.
fn irq_counts(config: &mut dyn ConfigSpace) -> [u32; 5] {
    let mut counts = [0u32; 5];
    counts[Irq::Intx.slot()] = u32::from(config.read(INTERRUPT_PIN, 1) != 0);
    counts[Irq::Req.slot()] = 1;
    if config.read(STATUS, 2) & STATUS_CAPABILITY_LIST == 0 {
        return counts;
    }
    let mut at = config.read(CAPABILITY_POINTER, 1) & !0x3;
    for _ in 0..CAPABILITIES_MAX {
        if at < 0x40 {
            break;
        }
        let (id, flags) = (config.read(at, 1), config.read(at + 2, 2));
        match id {
            // Multiple Message Capable (bits 3:1): log2 of the vectors.
            CAP_MSI => counts[Irq::Msi.slot()] = 1 << ((flags >> 1) & 0x7).min(5),
            // Table Size (bits 10:0): the vectors less one.
            CAP_MSIX => counts[Irq::Msix.slot()] = (flags & 0x7ff) + 1,
            CAP_EXPRESS => counts[Irq::Err.slot()] = 1,
            _ => {}
        }
        at = config.read(at + 1, 1) & !0x3;
    }
    counts
}

/// Splits an access of `len` bytes at `offset` into naturally aligned pieces of at most
/// `max` bytes (a power of two): each piece's offset, and its width.
fn pieces(offset: u64, len: usize, max: usize) -> impl Iterator<Item = (u64, usize)> {
    // CAST: a length of at most 4 GiB.
    let (mut at, end) = (offset, offset.saturating_add(len as u64));
    core::iter::from_fn(move || {
        // CAST: what is left of an access of `len` bytes fits a `usize`.
        let left = end.checked_sub(at).filter(|&l| l > 0)? as usize;
        let mut width = max;
        // CAST: widths of at most 8.
        while width > 1 && (at % width as u64 != 0 || width > left) {
            width /= 2;
        }
        let piece = (at, width);
        at += width as u64;
        Some(piece)
    })
}

/// One DMA map: `size` bytes of the guest's bus addresses from `address`, found at
/// `offset` in `fd`.
#[derive(Debug)]
struct DmaMap {
    address: u64,
    size: u64,
    offset: u64,
    /// The file holding it; none for memory QEMU cannot share (the BIOS's ROMs), which
    /// the protocol leaves to `DMA_READ`/`DMA_WRITE` messages and this device never
    /// reaches.
    fd: Option<OwnedFd>,
}

impl DmaMap {
    /// The first bus address past the map (the map was refused if it wraps).
    fn end(&self) -> u64 {
        self.address.saturating_add(self.size)
    }
}

/// What QEMU set for one interrupt: the trigger eventfd of each vector, and whether it is
/// masked. Kept, never signalled.
#[derive(Debug, Default)]
struct IrqState {
    triggers: Vec<Option<File>>,
    masked: bool,
}

/// The crate's backend: QEMU's requests, checked and turned into the model's traits.
struct Backend<'a> {
    function: &'a mut dyn PciFunction,
    layout: Layout,
    /// The DMA maps, by address.
    maps: Vec<DmaMap>,
    irqs: [IrqState; 5],
}

impl<'a> Backend<'a> {
    fn new(function: &'a mut dyn PciFunction, layout: Layout) -> Self {
        Self {
            function,
            layout,
            maps: Vec::new(),
            irqs: Default::default(),
        }
    }

    /// Refuses a request: says why ([`refusals::note`]) and returns it as the error the
    /// crate answers.
    fn refuse<T>(&mut self, why: String) -> io::Result<T> {
        refusals::note(why.clone());
        Err(io::Error::new(io::ErrorKind::InvalidInput, why))
    }

    /// Checks an access of `len` bytes at `offset` of region `region`: returns the region.
    fn check_access(
        &mut self,
        what: &str,
        region: u32,
        offset: u64,
        len: usize,
    ) -> io::Result<RegionIndex> {
        let Some(index) = RegionIndex::from_index(region) else {
            return self.refuse(format!(
                "a {what} of region {region}, which vfio-pci does not have"
            ));
        };
        let size = self.layout.region_size(index);
        let name = index.name();
        if size == 0 {
            return self.refuse(format!(
                "a {what} of {name} (region {region}), which this device does not have"
            ));
        }
        if len == 0 {
            return self.refuse(format!("an empty {what} of {name} at {offset:#x}"));
        }
        // CAST: a count of at most 4 GiB.
        if offset.checked_add(len as u64).is_none_or(|end| end > size) {
            return self.refuse(format!(
                "a {what} of {len} bytes at {offset:#x} of {name}, beyond its {size:#x} bytes"
            ));
        }
        Ok(index)
    }

    /// Hands the DMA maps to the model, as regions of RAM with fds of their own.
    fn sync(&mut self) -> io::Result<()> {
        let regions = self
            .maps
            .iter()
            .filter_map(|m| Some((m, m.fd.as_ref()?)))
            .map(|(m, fd)| {
                Ok(Region {
                    gpa: m.address,
                    size: m.size,
                    offset: m.offset,
                    fd: fd.try_clone()?,
                })
            })
            .collect::<io::Result<Vec<_>>>()?;
        self.function.sync_ram(regions)
    }
}

impl ServerBackend for Backend<'_> {
    fn region_read(&mut self, region: u32, offset: u64, data: &mut [u8]) -> io::Result<()> {
        let index = self.check_access("read", region, offset, data.len())?;
        let mut at = 0;
        for (offset, width) in pieces(offset, data.len(), index.widest()) {
            let value = match index {
                RegionIndex::Config => {
                    // CAST (both): an offset below 4096, a width of at most 4.
                    u64::from(self.function.config().read(offset as u32, width as u32))
                }
                // CAST: a width of at most 8.
                RegionIndex::Bar(n) => self.function.bar(n).read(offset, width as u32),
                RegionIndex::Rom | RegionIndex::Vga => 0,
            };
            data[at..at + width].copy_from_slice(&value.to_le_bytes()[..width]);
            at += width;
        }
        Ok(())
    }

    fn region_write(&mut self, region: u32, offset: u64, data: &[u8]) -> io::Result<()> {
        let index = self.check_access("write", region, offset, data.len())?;
        let mut at = 0;
        for (offset, width) in pieces(offset, data.len(), index.widest()) {
            let mut bytes = [0u8; 8];
            bytes[..width].copy_from_slice(&data[at..at + width]);
            let value = u64::from_le_bytes(bytes);
            match index {
                // CAST (all): an offset below 4096, a piece of at most 4 bytes.
                RegionIndex::Config => {
                    self.function
                        .config()
                        .write(offset as u32, value as u32, width as u32)
                }
                // CAST: a width of at most 8.
                RegionIndex::Bar(n) => self.function.bar(n).write(offset, width as u32, value),
                RegionIndex::Rom | RegionIndex::Vga => {}
            }
            at += width;
        }
        Ok(())
    }

    fn dma_map(
        &mut self,
        flags: DmaMapFlags,
        offset: u64,
        address: u64,
        size: u64,
        fd: Option<File>,
    ) -> io::Result<()> {
        let what = format!("a DMA map of {size:#x} bytes at {address:#x}");
        let flags = flags.bits();
        // Read-only memory (a ROM) is kept, as memory the device never writes nor maps.
        let fd = match flags {
            DMA_READ_WRITE => fd,
            VFIO_DMA_MAP_FLAG_READ => None,
            _ => {
                return self.refuse(format!(
                    "{what} with flags {flags:#x}: neither read-only (0x1) nor read-write (0x3)"
                ))
            }
        };
        if size == 0 {
            return self.refuse(format!("{what}: an empty map"));
        }
        let Some(end) = address.checked_add(size) else {
            return self.refuse(format!("{what}: past the end of the address space"));
        };
        if offset.checked_add(size).is_none() {
            return self.refuse(format!(
                "{what}: past the end of any file (offset {offset:#x})"
            ));
        }
        if let Some(other) = self
            .maps
            .iter()
            .find(|m| address < m.end() && m.address < end)
        {
            let (at, len) = (other.address, other.size);
            return self.refuse(format!(
                "{what}: overlaps the map of {len:#x} bytes at {at:#x}"
            ));
        }
        let at = self.maps.partition_point(|m| m.address < address);
        self.maps.insert(
            at,
            DmaMap {
                address,
                size,
                offset,
                fd: fd.map(OwnedFd::from),
            },
        );
        if let Err(e) = self.sync() {
            self.maps.remove(at);
            return self.refuse(format!("{what}: {e}"));
        }
        Ok(())
    }

    fn dma_unmap(&mut self, flags: DmaUnmapFlags, address: u64, size: u64) -> io::Result<()> {
        let what = format!("a DMA unmap of {size:#x} bytes at {address:#x}");
        // The crate's flag names are not vfio's: the raw bits are.
        let flags = flags.bits();
        if flags == VFIO_DMA_UNMAP_FLAG_ALL {
            self.maps.clear();
        } else if flags != 0 {
            return self.refuse(format!(
                "{what} with flags {flags:#x} (only vfio's UNMAP_ALL, 0x2, is served)"
            ));
        } else {
            let Some(end) = address.checked_add(size) else {
                return self.refuse(format!("{what}: past the end of the address space"));
            };
            let inside = |m: &DmaMap| address <= m.address && m.end() <= end;
            if let Some(cut) = self
                .maps
                .iter()
                .find(|m| address < m.end() && m.address < end && !inside(m))
            {
                let (at, len) = (cut.address, cut.size);
                return self.refuse(format!("{what}: cuts the map of {len:#x} bytes at {at:#x}"));
            }
            let before = self.maps.len();
            self.maps.retain(|m| !inside(m));
            if self.maps.len() == before {
                return self.refuse(format!("{what}: no map lies there"));
            }
        }
        if let Err(e) = self.sync() {
            return self.refuse(format!("{what}: {e}"));
        }
        Ok(())
    }

    fn reset(&mut self) -> io::Result<()> {
        self.function.reset();
        Ok(())
    }

    fn set_irqs(
        &mut self,
        index: u32,
        flags: u32,
        start: u32,
        count: u32,
        fds: Vec<File>,
    ) -> io::Result<()> {
        let Some(irq) = Irq::from_index(index) else {
            return self.refuse(format!(
                "interrupts set for index {index}, which vfio-pci does not have"
            ));
        };
        let name = irq.name();
        let vectors = self.layout.irqs[irq.slot()];
        let (data, action) = (
            flags & VFIO_IRQ_SET_DATA_TYPE_MASK,
            flags & VFIO_IRQ_SET_ACTION_TYPE_MASK,
        );
        if flags & !(VFIO_IRQ_SET_DATA_TYPE_MASK | VFIO_IRQ_SET_ACTION_TYPE_MASK) != 0 {
            return self.refuse(format!("{name} set with unknown flags {flags:#x}"));
        }
        // Disabling every vector: the one request allowed whatever the count.
        if data == VFIO_IRQ_SET_DATA_NONE && action == VFIO_IRQ_SET_ACTION_TRIGGER && count == 0 {
            self.irqs[irq.slot()] = IrqState::default();
            return Ok(());
        }
        if start.checked_add(count).is_none_or(|end| end > vectors) {
            return self.refuse(format!(
                "{name} vectors {start}..+{count} set: it has {vectors}"
            ));
        }
        // CAST (both): at most `vectors`, a few thousand.
        let (start, count) = (start as usize, count as usize);
        match (data, action) {
            (VFIO_IRQ_SET_DATA_EVENTFD, VFIO_IRQ_SET_ACTION_TRIGGER) => {
                if !fds.is_empty() && fds.len() != count {
                    let n = fds.len();
                    return self.refuse(format!("{name}: {n} eventfds for {count} vectors"));
                }
                let state = &mut self.irqs[irq.slot()];
                // CAST: at most `vectors`.
                state.triggers.resize_with(vectors as usize, || None);
                let mut fds = fds.into_iter();
                for vector in &mut state.triggers[start..start + count] {
                    // No fds: the vectors' eventfds are removed (QEMU's -1).
                    *vector = fds.next();
                }
                Ok(())
            }
            (VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_DATA_EVENTFD, VFIO_IRQ_SET_ACTION_MASK)
            | (VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_DATA_EVENTFD, VFIO_IRQ_SET_ACTION_UNMASK)
                if irq == Irq::Intx =>
            {
                self.irqs[irq.slot()].masked = action == VFIO_IRQ_SET_ACTION_MASK;
                Ok(())
            }
            _ => self.refuse(format!(
                "{name} set with flags {flags:#x} (eventfd triggers, and INTx masking, are served)"
            )),
        }
    }
}

/// The requests refused while a thread serves, in order: the backend's, and the crate's own
/// (its errors and warnings, which it gives only to the `log` facade). Each one is also a
/// `gh100: vfio-user: …` line of the transcript.
mod refusals {
    use std::{
        cell::RefCell,
        sync::Once, //
    };

    use log::{
        Level,
        LevelFilter,
        Log,
        Metadata,
        Record, //
    };

    use crate::gh100::say;

    thread_local! {
        /// The refusals on this thread, while it serves.
        static CAUGHT: RefCell<Option<Vec<String>>> = const { RefCell::new(None) };
    }

    /// Says `why` in the transcript, and keeps it if the thread serves.
    pub(super) fn note(why: String) {
        say(format_args!("vfio-user: refused: {why}"));
        CAUGHT.with(|c| {
            if let Some(caught) = c.borrow_mut().as_mut() {
                caught.push(why);
            }
        });
    }

    struct Forward;

    impl Log for Forward {
        fn enabled(&self, metadata: &Metadata<'_>) -> bool {
            metadata.target().starts_with("vfio_user") && metadata.level() <= Level::Warn
        }

        fn log(&self, record: &Record<'_>) {
            if !self.enabled(record.metadata()) {
                return;
            }
            let line = record.args().to_string();
            // The backend's refusals: already said and kept.
            if line.contains("Error from backend") {
                return;
            }
            note(format!("by the vfio_user crate: {}", name_command(&line)));
        }

        fn flush(&self) {}
    }

    static FORWARD: Forward = Forward;

    /// Names the command in the crate's "Error handling command: N: …", which numbers it.
    fn name_command(line: &str) -> String {
        const PREFIX: &str = "Error handling command: ";
        let named = line.strip_prefix(PREFIX).and_then(|rest| {
            let (number, why) = rest.split_once(':')?;
            let command = vfio_user::Command::n(number.parse().ok()?)?;
            Some(format!("{PREFIX}{number} ({command:?}):{why}"))
        });
        named.unwrap_or_else(|| line.to_string())
    }

    /// Installs the logger, unless the process has one already (then the crate's
    /// complaints are not seen).
    pub(super) fn install() {
        static ONCE: Once = Once::new();
        ONCE.call_once(|| {
            if log::set_logger(&FORWARD).is_ok() {
                log::set_max_level(LevelFilter::Warn);
            }
        });
    }

    /// Runs `f`, returning what it returned and the refusals meanwhile.
    pub(super) fn catching<R>(f: impl FnOnce() -> R) -> (R, Vec<String>) {
        CAUGHT.with(|c| *c.borrow_mut() = Some(Vec::new()));
        let ran = f();
        let caught = CAUGHT.with(|c| c.borrow_mut().take()).unwrap_or_default();
        (ran, caught)
    }
}

/// A private directory holding the socket; both go when it is dropped.
struct PrivateDir {
    dir: PathBuf,
    socket: PathBuf,
}

impl PrivateDir {
    /// Makes a new directory only this user can enter, under the temporary directory.
    fn new() -> io::Result<Self> {
        let mut template = std::env::temp_dir()
            .join("vgsp-gh100-XXXXXX")
            .into_os_string()
            .into_vec();
        template.push(0);
        // SAFETY: `template` is a live, NUL-terminated path ending in six `X`s, which
        // `mkdtemp` replaces in place; it creates the directory with mode 0700.
        let made = unsafe { libc::mkdtemp(template.as_mut_ptr().cast()) };
        if made.is_null() {
            return Err(io::Error::last_os_error());
        }
        template.pop();
        let dir = PathBuf::from(OsString::from_vec(template));
        let socket = dir.join(SOCKET_NAME);
        Ok(Self { dir, socket })
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.socket);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The device's end of the vfio-user transport: a socket QEMU connects to.
pub struct Listener {
    dir: PrivateDir,
    listener: UnixListener,
}

/// Ends a [`Listener::serve`] still waiting for QEMU to connect, once QEMU has ended
/// without connecting (it failed before realizing the device).
#[derive(Clone, Debug)]
pub struct Waker {
    socket: PathBuf,
}

impl Waker {
    /// Connects to the socket and hangs up, which the server takes as a connection closed.
    /// Harmless once QEMU has connected, or the serving has ended.
    pub fn wake(&self) {
        let _ = UnixStream::connect(&self.socket);
    }
}

/// Returns `s` as a JSON string.
fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            // CAST: a control character's code point.
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl Listener {
    /// Listens on a new socket in a new private directory under the temporary directory.
    ///
    /// # Errors
    ///
    /// The directory cannot be made, or the socket bound (a path too long for a Unix
    /// socket, for one).
    pub fn bind() -> io::Result<Self> {
        let dir = PrivateDir::new()?;
        let listener = UnixListener::bind(&dir.socket)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.socket.display())))?;
        Ok(Self { dir, listener })
    }

    /// Returns the socket's path.
    pub fn path(&self) -> &Path {
        &self.dir.socket
    }

    /// Returns QEMU's `-device` argument for the socket, in QEMU's JSON form (the socket
    /// address is a structure, which the `key=value` form cannot say).
    pub fn device_arg(&self) -> String {
        let path = json_string(&self.dir.socket.to_string_lossy());
        format!(
            r#"{{"driver":"vfio-user-pci","id":"gh100","socket":{{"path":{path},"type":"unix"}}}}"#
        )
    }

    /// Returns what ends a wait for a QEMU that will not connect.
    pub fn waker(&self) -> Waker {
        Waker {
            socket: self.dir.socket.clone(),
        }
    }

    /// Serves `function` to the one QEMU that connects, until it closes the connection.
    /// The socket and its directory are removed on return.
    ///
    /// # Errors
    ///
    /// - `InvalidData` if the function's config space is neither 256 nor 4096 bytes.
    /// - `InvalidInput` naming the count and the first of QEMU's requests refused, once
    ///   QEMU has closed the connection (each is in the transcript).
    /// - An error naming the crate's panic, when it panicked on a malformed message.
    /// - The crate's errors: the socket's, a message cut short.
    pub fn serve(self, function: &mut dyn PciFunction) -> io::Result<()> {
        let Self { dir, listener } = self;
        let layout = Layout::of(function.config())?;
        let server = Server::from_owned_fd(
            OwnedFd::from(listener),
            true,
            layout.irq_infos(),
            layout.regions(),
        );
        refusals::install();
        let mut backend = Backend::new(function, layout);
        let (ran, refused) = refusals::catching(|| {
            panic::catch_unwind(AssertUnwindSafe(|| server.run(&mut backend)))
        });
        drop(server);
        drop(dir);
        match ran {
            Err(panic) => {
                let why = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                Err(io::Error::other(format!(
                    "the vfio_user crate panicked on a message from QEMU: {why}"
                )))
            }
            Ok(Err(e)) => Err(io::Error::other(format!("vfio-user: {e}"))),
            Ok(Ok(())) => match refused.first() {
                Some(first) => Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "{} of QEMU's vfio-user requests refused; the first: {first}",
                        refused.len()
                    ),
                )),
                None => Ok(()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use std::{
        io::{
            Read as _,
            Write as _, //
        },
        os::{
            fd::{
                AsRawFd,
                FromRawFd, //
            },
            unix::fs::FileExt,
        },
        thread::{
            self,
            JoinHandle, //
        },
    };

    use vfio_user::Client;

    use super::*;
    use crate::{
        device::{
            Bar,
            GuestRam,
            MappedRam, //
        },
        gh100::Gh100,
        pci::{
            self,
            Header, //
        },
        regs, //
    };

    /// The wire numbers of the commands the tests send by hand.
    const VERSION: u16 = 1;
    const DMA_MAP: u16 = 2;
    const REGION_READ: u16 = 9;
    /// A reply's flags: a reply (bit 0), an error (bit 5).
    const REPLY: u32 = 0x1;
    const ERROR: u32 = 0x20;

    /// A GH100 whose RAM the test sees too.
    struct Watched {
        gpu: Gh100,
        ram: MappedRam,
    }

    impl PciFunction for Watched {
        fn config(&mut self) -> &mut dyn ConfigSpace {
            self.gpu.config()
        }

        fn bar(&mut self, index: usize) -> &mut dyn Bar {
            self.gpu.bar(index)
        }

        fn sync_ram(&mut self, regions: Vec<Region>) -> io::Result<()> {
            self.ram.sync(regions)
        }

        fn reset(&mut self) {
            self.gpu.reset();
        }
    }

    /// Serves a GH100 on a thread; returns the socket, the guest RAM as the GH100 sees
    /// it, and the serving thread.
    fn serving() -> (PathBuf, MappedRam, JoinHandle<io::Result<()>>) {
        let listener = Listener::bind().unwrap();
        let path = listener.path().to_path_buf();
        let ram = MappedRam::new();
        let seen = ram.clone();
        let served = thread::spawn(move || {
            let mut function = Watched {
                gpu: Gh100::new(),
                ram,
            };
            listener.serve(&mut function)
        });
        (path, seen, served)
    }

    /// A memfd of `size` bytes.
    fn memfd(size: u64) -> File {
        // SAFETY: a plain syscall on a NUL-terminated name.
        let fd = unsafe { libc::memfd_create(c"gh100-vfio-test".as_ptr(), 0) };
        assert!(fd >= 0);
        // SAFETY: `memfd_create` returned a new fd, ours alone.
        let file = unsafe { File::from_raw_fd(fd) };
        file.set_len(size).unwrap();
        file
    }

    /// Sends a request by hand: the header (id 7, `command`, the size, no flags) and `body`.
    fn send(sock: &mut UnixStream, command: u16, body: &[u8]) {
        let mut msg = Vec::new();
        msg.extend_from_slice(&7u16.to_le_bytes());
        msg.extend_from_slice(&command.to_le_bytes());
        msg.extend_from_slice(&(16 + body.len() as u32).to_le_bytes());
        msg.extend_from_slice(&[0; 8]);
        msg.extend_from_slice(body);
        sock.write_all(&msg).unwrap();
    }

    /// Receives a reply: its flags, its error, and what follows the header.
    fn receive(sock: &mut UnixStream) -> (u32, u32, Vec<u8>) {
        let mut header = [0u8; 16];
        sock.read_exact(&mut header).unwrap();
        let word = |at: usize| u32::from_le_bytes(header[at..at + 4].try_into().unwrap());
        let mut rest = vec![0u8; word(4) as usize - 16];
        sock.read_exact(&mut rest).unwrap();
        (word(8), word(12), rest)
    }

    /// A region access's fixed part: offset, region, count.
    fn access(region: u32, offset: u64, count: u32) -> Vec<u8> {
        let mut body = offset.to_le_bytes().to_vec();
        body.extend_from_slice(&region.to_le_bytes());
        body.extend_from_slice(&count.to_le_bytes());
        body
    }

    /// A DMA map's fixed part: argsz, flags, offset, address, size.
    fn dma_map(flags: u32, address: u64, size: u64) -> Vec<u8> {
        let mut body = 32u32.to_le_bytes().to_vec();
        body.extend_from_slice(&flags.to_le_bytes());
        for v in [0, address, size] {
            body.extend_from_slice(&v.to_le_bytes());
        }
        body
    }

    /// Reads `N` bytes of `region` at `offset` through `client`.
    fn read<const N: usize>(client: &mut Client, region: u32, offset: u64) -> [u8; N] {
        let mut data = [0u8; N];
        client.region_read(region, offset, &mut data).unwrap();
        data
    }

    #[test]
    fn negotiates_the_protocol_version() {
        let (path, _, served) = serving();
        let client = Client::new(&path).unwrap();
        client.shutdown().unwrap();
        served.join().unwrap().unwrap();
    }

    #[test]
    fn describes_config_space_and_bar0_only() {
        let (path, _, served) = serving();
        let client = Client::new(&path).unwrap();
        let sizes: Vec<u64> = (0..VFIO_PCI_NUM_REGIONS)
            .map(|i| client.region(i).unwrap().size)
            .collect();
        assert_eq!(sizes, [16 << 20, 0, 0, 0, 0, 0, 0, 256, 0]);
        drop(client);
        served.join().unwrap().unwrap();
    }

    #[test]
    fn reads_the_vendor_and_device_ids_from_config_space() {
        let (path, _, served) = serving();
        let mut client = Client::new(&path).unwrap();
        let ids = u32::from_le_bytes(read(&mut client, 7, 0));
        assert_eq!(ids, 0x2330_10de);
        drop(client);
        served.join().unwrap().unwrap();
    }

    #[test]
    fn reads_nv_pmc_boot_0_from_bar0() {
        let (path, _, served) = serving();
        let mut client = Client::new(&path).unwrap();
        let offset = regs::NV_PMC_BOOT_0.offset.into();
        let boot_0 = u32::from_le_bytes(read(&mut client, 0, offset));
        assert_eq!(boot_0, 0x1800_00a1);
        drop(client);
        served.join().unwrap().unwrap();
    }

    #[test]
    fn bar0_sizes_to_its_region_size() {
        let (path, _, served) = serving();
        let mut client = Client::new(&path).unwrap();
        client.region_write(7, 0x10, &[0xff; 4]).unwrap();
        let sized = u32::from_le_bytes(read(&mut client, 7, 0x10));
        let region = client.region(0).unwrap().size;
        assert_eq!((!sized).wrapping_add(1), pci::BAR0_SIZE);
        assert_eq!(u64::from(pci::BAR0_SIZE), region);
        drop(client);
        served.join().unwrap().unwrap();
    }

    #[test]
    fn the_model_sees_guest_ram_mapped_with_a_memfd() {
        let (path, ram, served) = serving();
        let mut client = Client::new(&path).unwrap();
        let guest = memfd(0x4000);
        guest
            .write_all_at(&0x5a5a_1234u32.to_le_bytes(), 0x1000)
            .unwrap();
        client
            .dma_map(0, 0x4000_0000, 0x4000, guest.as_raw_fd())
            .unwrap();
        let seen = ram.view(0x4000_1000, 4).unwrap().read32(0).unwrap();
        assert_eq!(seen, 0x5a5a_1234);
        drop(client);
        served.join().unwrap().unwrap();
    }

    #[test]
    fn an_unmap_takes_the_range_from_the_model() {
        let (path, ram, served) = serving();
        let mut client = Client::new(&path).unwrap();
        let (low, high) = (memfd(0x1000), memfd(0x1000));
        client.dma_map(0, 0x1000, 0x1000, low.as_raw_fd()).unwrap();
        client.dma_map(0, 0x8000, 0x1000, high.as_raw_fd()).unwrap();
        client.dma_unmap(0x8000, 0x1000).unwrap();
        assert!(ram.view(0x1000, 4).is_some());
        assert!(ram.view(0x8000, 4).is_none());
        drop(client);
        served.join().unwrap().unwrap();
    }

    #[test]
    fn refuses_an_access_beyond_its_region_and_serves_on() {
        let (path, _, served) = serving();
        let mut qemu = UnixStream::connect(&path).unwrap();
        send(&mut qemu, REGION_READ, &access(0, (16 << 20) - 2, 4));
        let (flags, _, _) = receive(&mut qemu);
        assert_eq!(flags, REPLY | ERROR);
        send(&mut qemu, REGION_READ, &access(7, 0, 4));
        let (flags, _, data) = receive(&mut qemu);
        assert_eq!((flags, &data[16..]), (REPLY, &[0xde, 0x10, 0x30, 0x23][..]));
        drop(qemu);
        let err = served.join().unwrap().unwrap_err();
        assert!(
            err.to_string().contains("beyond its 0x1000000 bytes"),
            "{err}"
        );
    }

    #[test]
    fn refuses_an_unknown_region_index() {
        let (path, _, served) = serving();
        let mut qemu = UnixStream::connect(&path).unwrap();
        send(&mut qemu, REGION_READ, &access(9, 0, 4));
        let (flags, error, _) = receive(&mut qemu);
        assert_eq!((flags, error), (REPLY | ERROR, libc::EINVAL as u32));
        drop(qemu);
        let err = served.join().unwrap().unwrap_err();
        assert!(err.to_string().contains("by the vfio_user crate"), "{err}");
    }

    #[test]
    fn refuses_a_region_this_device_does_not_have() {
        let (path, _, served) = serving();
        let mut qemu = UnixStream::connect(&path).unwrap();
        send(&mut qemu, REGION_READ, &access(2, 0, 4));
        let (flags, _, _) = receive(&mut qemu);
        assert_eq!(flags, REPLY | ERROR);
        drop(qemu);
        let err = served.join().unwrap().unwrap_err();
        assert!(
            err.to_string()
                .contains("BAR2 (region 2), which this device does not have"),
            "{err}"
        );
    }

    #[test]
    fn keeps_a_dma_map_without_an_fd_out_of_the_model_s_ram() {
        let (path, ram, served) = serving();
        let mut qemu = UnixStream::connect(&path).unwrap();
        // What QEMU sends for the BIOS's ROMs on a pc machine: memory it cannot share.
        send(
            &mut qemu,
            DMA_MAP,
            &dma_map(DMA_READ_WRITE, 0xc_0000, 0x2_0000),
        );
        let (flags, _, _) = receive(&mut qemu);
        assert_eq!((flags, ram.view(0xc_0000, 4).is_none()), (REPLY, true));
        drop(qemu);
        served.join().unwrap().unwrap();
    }

    #[test]
    fn refuses_an_overlapping_dma_map() {
        let (path, ram, served) = serving();
        let mut client = Client::new(&path).unwrap();
        let (first, second) = (memfd(0x2000), memfd(0x2000));
        client
            .dma_map(0, 0x1000, 0x2000, first.as_raw_fd())
            .unwrap();
        client
            .dma_map(0, 0x2000, 0x2000, second.as_raw_fd())
            .unwrap();
        assert!(ram.view(0x3000, 4).is_none());
        drop(client);
        let err = served.join().unwrap().unwrap_err();
        assert!(
            err.to_string()
                .contains("overlaps the map of 0x2000 bytes at 0x1000"),
            "{err}"
        );
    }

    #[test]
    fn refuses_an_unmap_that_cuts_a_map() {
        // The crate's client reads an error answering an unmap as the start of a longer
        // reply: the backend is driven directly.
        let mut gpu = Gh100::new();
        let layout = Layout::of(gpu.config()).unwrap();
        let mut backend = Backend::new(&mut gpu, layout);
        let rw = DmaMapFlags::READ_WRITE;
        backend
            .dma_map(rw, 0, 0x1000, 0x2000, Some(memfd(0x2000)))
            .unwrap();
        let err = backend
            .dma_unmap(DmaUnmapFlags::empty(), 0x2000, 0x1000)
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("cuts the map of 0x2000 bytes at 0x1000"),
            "{err}"
        );
        assert_eq!(backend.maps.len(), 1);
    }

    #[test]
    fn a_panic_of_the_crate_on_a_malformed_version_is_an_error() {
        let (path, _, served) = serving();
        let mut qemu = UnixStream::connect(&path).unwrap();
        // Version 0.1, then capabilities without their NUL.
        let mut body = vec![0, 0, 1, 0];
        body.extend_from_slice(b"{}");
        send(&mut qemu, VERSION, &body);
        let err = served.join().unwrap().unwrap_err();
        assert!(
            err.to_string().contains("vfio_user crate panicked"),
            "{err}"
        );
    }

    #[test]
    fn keeps_the_eventfd_qemu_sets_for_device_requests() {
        let mut gpu = Gh100::new();
        let layout = Layout::of(gpu.config()).unwrap();
        let mut backend = Backend::new(&mut gpu, layout);
        let flags = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
        backend
            .set_irqs(Irq::Req.index(), flags, 0, 1, vec![memfd(8)])
            .unwrap();
        assert!(backend.irqs[Irq::Req.slot()].triggers[0].is_some());
    }

    #[test]
    fn describes_no_intx_for_a_header_without_an_interrupt_pin() {
        let layout = Layout::of(&mut Header::new()).unwrap();
        let counts: Vec<u32> = layout.irq_infos().iter().map(|i| i.count).collect();
        assert_eq!(counts, [0, 0, 0, 0, 1]);
    }

    #[test]
    fn sizing_leaves_the_bar_registers_as_they_were() {
        let mut header = Header::new();
        header.write(0x10, 0xfd00_0000, 4);
        let layout = Layout::of(&mut header).unwrap();
        assert_eq!(layout.bars, [16 << 20, 0, 0, 0, 0, 0]);
        assert_eq!(header.read(0x10, 4), 0xfd00_0000);
    }

    #[test]
    fn splits_an_access_into_aligned_pieces() {
        let got: Vec<(u64, usize)> = pieces(0x2, 12, 8).collect();
        assert_eq!(got, [(0x2, 2), (0x4, 4), (0x8, 4), (0xc, 2)]);
    }

    #[test]
    fn a_waker_ends_a_wait_for_qemu() {
        let listener = Listener::bind().unwrap();
        let waker = listener.waker();
        let served = thread::spawn(move || listener.serve(&mut Gh100::new()));
        waker.wake();
        served.join().unwrap().unwrap();
    }

    #[test]
    fn names_the_socket_in_qemu_json() {
        let listener = Listener::bind().unwrap();
        let path = listener.path().display().to_string();
        assert_eq!(
            listener.device_arg(),
            format!(
                r#"{{"driver":"vfio-user-pci","id":"gh100","socket":{{"path":"{path}","type":"unix"}}}}"#
            )
        );
    }
}
