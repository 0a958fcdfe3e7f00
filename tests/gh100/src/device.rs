// SPDX-License-Identifier: GPL-2.0

//! What a PCI function model offers a transport, in three small traits: its config space
//! ([`ConfigSpace`]), its BARs ([`Bar`]) and the guest's RAM it reaches by DMA
//! ([`GuestRam`]), gathered by [`PciFunction`]. The transport of today is QEMU's proxy
//! device ([`crate::proxy`]); QEMU's `vfio-user-pci` would carry the same model.
//!
//! [`MappedRam`] is the guest's RAM as fd regions mapped into this process, which both
//! transports hand over the same way.

use std::{
    io,
    os::fd::{
        AsRawFd,
        OwnedFd, //
    },
    sync::{
        Arc,
        RwLock, //
    },
};

use kernel::dma::DmaView;

/// A PCI function's configuration space.
pub trait ConfigSpace {
    /// Reads `len` bytes (1, 2 or 4) at `addr`.
    fn read(&mut self, addr: u32, len: u32) -> u32;
    /// Writes the low `len` bytes of `val` at `addr`, as far as the header lets them.
    fn write(&mut self, addr: u32, val: u32, len: u32);
    /// Returns the BAR that decodes the guest address `addr`, and the offset in it.
    fn bar_of(&self, addr: u64) -> Option<(usize, u64)>;
}

/// A memory BAR's registers.
pub trait Bar {
    /// Reads `size` bytes (1 to 8) at `offset`.
    fn read(&mut self, offset: u64, size: u32) -> u64;
    /// Writes the low `size` bytes of `val` at `offset`.
    fn write(&mut self, offset: u64, size: u32, val: u64);
}

/// One region of the guest's RAM, as a transport hands it over: `size` bytes at the
/// guest-physical address `gpa`, found at `offset` in `fd`.
#[derive(Debug)]
pub struct Region {
    /// The guest-physical address of the region's first byte.
    pub gpa: u64,
    /// Its size in bytes.
    pub size: u64,
    /// Where it starts in `fd`.
    pub offset: u64,
    /// The file holding it.
    pub fd: OwnedFd,
}

/// The guest's RAM, as the device reaches it by DMA.
pub trait GuestRam {
    /// Takes the guest's RAM regions, replacing what was known.
    ///
    /// # Errors
    ///
    /// A region that cannot be mapped.
    fn sync(&self, regions: Vec<Region>) -> io::Result<()>;
    /// Returns the device's view of the `len` bytes at the bus address `bus`, if they lie
    /// in one region of RAM.
    fn view(&self, bus: u64, len: usize) -> Option<DmaView<'static>>;
    /// Returns the region of RAM holding `bus`: its view and its first bus address.
    fn region_of(&self, bus: u64) -> Option<(DmaView<'static>, u64)>;
}

/// A PCI function, as a transport serves it.
pub trait PciFunction {
    /// Its configuration space.
    fn config(&mut self) -> &mut dyn ConfigSpace;
    /// Its BAR `index` (one that [`ConfigSpace::bar_of`] returned).
    fn bar(&mut self, index: usize) -> &mut dyn Bar;
    /// Takes the guest's RAM regions.
    ///
    /// # Errors
    ///
    /// As [`GuestRam::sync`].
    fn sync_ram(&mut self, regions: Vec<Region>) -> io::Result<()>;
    /// Resets the function.
    fn reset(&mut self);
}

/// One mapped region.
#[derive(Clone, Copy)]
struct Mapping {
    gpa: u64,
    view: DmaView<'static>,
}

/// The guest's RAM mapped into this process, shared between the threads of the device.
///
/// # Invariants
///
/// Every mapping's view is valid for the life of the process: regions are mapped shared
/// and never unmapped, even when a later [`GuestRam::sync`] replaces them (a thread may
/// still hold a view of the old one; QEMU sends the regions again only when the guest's
/// memory map changes, a handful of times per boot).
#[derive(Clone, Default)]
pub struct MappedRam {
    maps: Arc<RwLock<Vec<Mapping>>>,
}

impl MappedRam {
    /// Creates an empty RAM, until the transport sends its regions.
    pub fn new() -> Self {
        Self::default()
    }

    fn find(&self, bus: u64, len: usize) -> Option<(Mapping, usize)> {
        let maps = self.maps.read().ok()?;
        maps.iter().find_map(|m| {
            let off = usize::try_from(bus.checked_sub(m.gpa)?).ok()?;
            (off.checked_add(len)? <= m.view.len()).then_some((*m, off))
        })
    }
}

impl GuestRam for MappedRam {
    fn sync(&self, regions: Vec<Region>) -> io::Result<()> {
        let mut maps = Vec::new();
        for region in regions {
            let len = usize::try_from(region.size)
                .map_err(|_| io::Error::other("a RAM region larger than the address space"))?;
            if len == 0 {
                continue;
            }
            let offset = libc::off_t::try_from(region.offset)
                .map_err(|_| io::Error::other("a RAM region beyond its file"))?;
            // SAFETY: a fresh shared mapping of `fd` chosen by the kernel; it aliases
            // nothing of this process.
            let base = unsafe {
                libc::mmap(
                    core::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    region.fd.as_raw_fd(),
                    offset,
                )
            };
            if base == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            // INVARIANT: the mapping is never unmapped (the fd may close: the mapping
            // keeps the file).
            // SAFETY: `base` is page-aligned and valid for `len` bytes for the life of
            // the process; the guest shares it, and every access through a `DmaView` is
            // a volatile word or a byte copy.
            let view = unsafe { DmaView::from_raw_parts(base.cast(), len) };
            maps.push(Mapping {
                gpa: region.gpa,
                view,
            });
        }
        *self
            .maps
            .write()
            .map_err(|_| io::Error::other("the RAM's lock is poisoned"))? = maps;
        Ok(())
    }

    fn view(&self, bus: u64, len: usize) -> Option<DmaView<'static>> {
        let (m, off) = self.find(bus, len)?;
        m.view.subview(off, len).ok()
    }

    fn region_of(&self, bus: u64) -> Option<(DmaView<'static>, u64)> {
        let (m, _) = self.find(bus, 1)?;
        Some((m.view, m.gpa))
    }
}
