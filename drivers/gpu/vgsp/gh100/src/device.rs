// SPDX-License-Identifier: GPL-2.0

//! What a PCI function model offers a transport, in three small traits: its config space
//! ([`ConfigSpace`]), its BARs ([`Bar`]) and the guest's RAM it reaches by DMA
//! ([`GuestRam`]), gathered by [`PciFunction`]. The transport, QEMU's `vfio-user-pci`
//! ([`crate::vfio`]), knows the model only through them.
//!
//! [`MappedRam`] is the guest's RAM as fd regions mapped into this process, as the
//! transport hands them over.

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
    /// Its size in bytes: 256 for a conventional function, 4096 with PCI Express's extended
    /// space.
    fn size(&self) -> u32;
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
    /// in one region of RAM and `bus` is 8-byte aligned (as every DMA allocation is).
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

/// One mapped region: where the guest sees it, and what of which file it maps.
#[derive(Clone, Copy)]
struct Mapping {
    gpa: u64,
    view: DmaView<'static>,
    /// The file's device and inode, and the offset mapped.
    file: (u64, u64, u64),
}

/// The guest's RAM mapped into this process, shared between the threads of the device.
///
/// # Invariants
///
/// Every mapping's view is valid for the life of the process: regions are mapped shared
/// and never unmapped, even when a later [`GuestRam::sync`] replaces them (a thread may
/// still hold a view of the old one). QEMU sends the regions again at every change of the
/// guest's memory map (some 35 times in a boot), nearly always the same ones: a region
/// already mapped (the same file, offset and size) is not mapped again, so the mappings
/// are bounded by the distinct regions ever sent.
#[derive(Clone, Default)]
pub struct MappedRam {
    /// The regions in use.
    maps: Arc<RwLock<Vec<Mapping>>>,
    /// Every mapping ever made, to be reused.
    made: Arc<RwLock<Vec<Mapping>>>,
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
            // A mapping past the file's end would fault on access (SIGBUS): refused.
            // SAFETY: `stat` is plain data, for which all zeroes is a valid value.
            let mut st: libc::stat = unsafe { core::mem::zeroed() };
            // SAFETY: `fd` is open; `st` is a live `stat` to fill in.
            if unsafe { libc::fstat(region.fd.as_raw_fd(), &mut st) } != 0 {
                return Err(io::Error::last_os_error());
            }
            let end = region.offset.checked_add(region.size);
            if end.is_none_or(|end| end > u64::try_from(st.st_size).unwrap_or(0)) {
                return Err(io::Error::other(format!(
                    "a RAM region ({:#x} bytes at {:#x} of its file) beyond the file's end ({:#x})",
                    region.size, region.offset, st.st_size
                )));
            }
            let file = (st.st_dev, st.st_ino, region.offset);
            let made = self
                .made
                .read()
                .map_err(|_| io::Error::other("the RAM's lock is poisoned"))?
                .iter()
                .find(|m| m.file == file && m.view.len() == len)
                .copied();
            if let Some(m) = made {
                maps.push(Mapping {
                    gpa: region.gpa,
                    ..m
                });
                continue;
            }
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
            let mapping = Mapping {
                gpa: region.gpa,
                view,
                file,
            };
            self.made
                .write()
                .map_err(|_| io::Error::other("the RAM's lock is poisoned"))?
                .push(mapping);
            maps.push(mapping);
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

#[cfg(test)]
mod tests {
    use std::os::fd::FromRawFd;

    use super::*;

    fn memfd(size: i64) -> OwnedFd {
        // SAFETY: a plain syscall on a NUL-terminated name.
        let fd = unsafe { libc::memfd_create(c"gh100-ram-test".as_ptr(), 0) };
        assert!(fd >= 0);
        // SAFETY: `memfd_create` returned a new fd, ours alone.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: sizing the file we own.
        assert_eq!(unsafe { libc::ftruncate(fd.as_raw_fd(), size) }, 0);
        fd
    }

    #[test]
    fn finds_bytes_by_their_bus_address() {
        let ram = MappedRam::new();
        let fd = memfd(8192);
        ram.sync(vec![Region {
            gpa: 0x10_0000,
            size: 8192,
            offset: 0,
            fd,
        }])
        .unwrap();
        ram.view(0x10_1000, 8)
            .unwrap()
            .write32(0, 0x5a5a_5a5a)
            .unwrap();
        let (region, base) = ram.region_of(0x10_1004).unwrap();
        assert_eq!(
            (base, region.read32(0x1000).unwrap()),
            (0x10_0000, 0x5a5a_5a5a)
        );
        assert!(ram.view(0x10_1ffc, 8).is_none());
    }

    #[test]
    fn maps_a_region_sent_again_once() {
        let ram = MappedRam::new();
        let fd = memfd(4096);
        let again = fd.try_clone().unwrap();
        ram.sync(vec![Region {
            gpa: 0,
            size: 4096,
            offset: 0,
            fd,
        }])
        .unwrap();
        ram.sync(vec![Region {
            gpa: 0x1000,
            size: 4096,
            offset: 0,
            fd: again,
        }])
        .unwrap();
        assert_eq!(ram.made.read().unwrap().len(), 1);
        assert_eq!(ram.region_of(0x1000).map(|(_, base)| base), Some(0x1000));
    }

    #[test]
    fn refuses_a_region_beyond_its_file() {
        let ram = MappedRam::new();
        let fd = memfd(4096);
        let err = ram
            .sync(vec![Region {
                gpa: 0,
                size: 8192,
                offset: 0,
                fd,
            }])
            .unwrap_err();
        assert!(err.to_string().contains("beyond the file's end"), "{err}");
    }
}
