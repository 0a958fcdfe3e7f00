// SPDX-License-Identifier: GPL-2.0

//! The host's DMA pool (ours, test bench): coherent memory carved from a mapping shared
//! with another process, for a device made with `Device::with_dma_pool`.

use core::{
    ptr::NonNull,
    sync::atomic::{
        AtomicUsize,
        Ordering, //
    },
};

use super::{
    DmaAddress,
    PAGE_SIZE, //
};
use crate::error::{
    code::{
        EINVAL,
        ENOMEM,
        EOVERFLOW, //
    },
    Result, //
};

/// Coherent memory carved from a mapping the caller shares with another process, at bus
/// addresses of the caller's choosing: the DMA memory of a device made with
/// [`Device::with_dma_pool`](crate::device::Device::with_dma_pool).
///
/// Ours, test bench (host only): a test plays a machine whose RAM another process maps
/// (QEMU's guest RAM, shared with the GSP process), so that process reaches the driver's
/// coherent allocations by bus address, as a real device reaches `dma_alloc_coherent`'s.
///
/// Allocation is a bump: each allocation takes the next whole pages, zeroed, with bus
/// address [`DmaPool::bus_base`] plus its offset in the mapping. Freeing leaks within the
/// pool: a dropped allocation's pages are not handed out again, so a pool must be sized for
/// every allocation made from it in its life.
///
/// # Invariants
///
/// - `base` is page-aligned, valid for reads and writes of `len` bytes for as long as the
///   pool or any allocation from it is used, and accessed other than through the pool's
///   allocations only by the agents the caller shares it with.
/// - `bus_base` is page-aligned and `bus_base + len` does not overflow a
///   [`DmaAddress`](crate::dma::DmaAddress).
/// - `next` is page-aligned; the bytes from `next` to `len` were never handed out.
pub struct DmaPool {
    base: NonNull<u8>,
    len: usize,
    bus_base: DmaAddress,
    next: AtomicUsize,
}

// SAFETY: The pool hands out disjoint blocks (the bump is one atomic update); the memory
// itself is shared by contract, and every access to it goes through the allocations, whose
// own types say how it is accessed.
unsafe impl Send for DmaPool {}
// SAFETY: As above: `&DmaPool` only bumps `next` atomically and reads the rest.
unsafe impl Sync for DmaPool {}

impl DmaPool {
    /// The pool of the `len` bytes at `base`, which the device sees at bus address
    /// `bus_base` onwards.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if `base` is null, `base` or `bus_base` is not page-aligned, or `len` is
    ///   below a page.
    /// - `EOVERFLOW` if `bus_base + len` overflows a bus address.
    ///
    /// # Safety
    ///
    /// `base` must be valid for reads and writes of `len` bytes for as long as the pool or
    /// any allocation from it is used, and nothing may access the memory other than through
    /// the pool's allocations, except the agents it is shared with (the device).
    pub unsafe fn new(base: *mut u8, len: usize, bus_base: DmaAddress) -> Result<Self> {
        let base = NonNull::new(base).ok_or(EINVAL)?;
        if !base.as_ptr().addr().is_multiple_of(PAGE_SIZE)
            || !bus_base.is_multiple_of(PAGE_SIZE as DmaAddress)
            || len < PAGE_SIZE
        {
            return Err(EINVAL);
        }
        let bus_len = DmaAddress::try_from(len).map_err(|_| EOVERFLOW)?;
        bus_base.checked_add(bus_len).ok_or(EOVERFLOW)?;
        // INVARIANT: checked above, and the caller's contract; nothing handed out yet.
        Ok(Self {
            base,
            len,
            bus_base,
            next: AtomicUsize::new(0),
        })
    }

    /// Returns the size of the pool's memory in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Returns whether the pool has no memory (never: [`DmaPool::new`] refuses that).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Returns the bus address of the start of the pool's memory.
    pub fn bus_base(&self) -> DmaAddress {
        self.bus_base
    }

    /// Returns how many bytes have been handed out, freed ones included.
    pub fn used(&self) -> usize {
        self.next.load(Ordering::Relaxed)
    }

    /// Takes the next `size` bytes, rounded up to whole pages, and zeroes them; returns
    /// their CPU and bus addresses.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if `size` is zero.
    /// - `ENOMEM` if the pool has not that much left.
    #[cfg_attr(
        loom,
        expect(dead_code, reason = "the model backend's devices have no pool")
    )]
    pub(crate) fn alloc_zeroed(&self, size: usize) -> Result<(NonNull<u8>, DmaAddress)> {
        if size == 0 {
            return Err(EINVAL);
        }
        let rounded = size.checked_next_multiple_of(PAGE_SIZE).ok_or(ENOMEM)?;
        let offset = self
            .next
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |next| {
                next.checked_add(rounded).filter(|&end| end <= self.len)
            })
            .map_err(|_| ENOMEM)?;
        // SAFETY: `offset + rounded <= len` (the update above), so the block lies inside the
        // mapping, which is valid for writes (type invariant); the update handed this block
        // to this call alone and it was never handed out before (`next` only grows), so no
        // one else accesses it.
        let cpu = unsafe {
            let cpu = self.base.add(offset);
            core::ptr::write_bytes(cpu.as_ptr(), 0, rounded);
            cpu
        };
        // CAST: `offset < len`, and `bus_base + len` fits a bus address (type invariant).
        Ok((cpu, self.bus_base + offset as DmaAddress))
    }
}

impl core::fmt::Debug for DmaPool {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DmaPool")
            .field("base", &self.base)
            .field("len", &self.len)
            .field("bus_base", &format_args!("{:#x}", self.bus_base))
            .field("used", &self.used())
            .finish()
    }
}
