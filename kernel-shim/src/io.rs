// SPDX-License-Identifier: GPL-2.0

//! Memory-mapped I/O, as upstream's `kernel::io`.
//!
//! [`Io`] is a region of MMIO registers of at least `SIZE` bytes. [`Io::write32`] is
//! ordered after every earlier write to normal memory, like C's `writel`: a driver can
//! publish data in coherent memory and then ring a doorbell without a barrier of its
//! own. The `_relaxed` accessors carry no barrier, like `writel_relaxed`.
//!
//! A region backed by memory instead of a device (a simulated BAR, as
//! `kernel::vdev::SimBar`) carries an [`MmioWriteObserver`]: the simulated device, told
//! of every register write the way real hardware sees it on the bus.

pub mod poll;

use core::ptr::NonNull;

use crate::{
    error::{
        code::EINVAL,
        Result, //
    },
    sync::barrier::{
        io_dma_mb,
        Read,
        Write, //
    },
};

/// Something that observes writes to an MMIO region, as the device behind it would.
pub trait MmioWriteObserver: Send + Sync {
    /// Called after `value` was stored at `offset`.
    fn written(&self, offset: usize, value: u32);
}

/// The raw address and size of an MMIO region.
///
/// # Invariants
///
/// `addr` is the start of a mapping of at least `maxsize` bytes, 4-byte aligned, valid
/// for volatile 32-bit accesses for the lifetime of the value, and `maxsize >= SIZE`.
/// `observer`, if set, points to a live observer for the lifetime of the value.
pub struct IoRaw<const SIZE: usize = 0> {
    addr: usize,
    maxsize: usize,
    observer: Option<NonNull<dyn MmioWriteObserver>>,
}

impl<const SIZE: usize> IoRaw<SIZE> {
    /// Creates the raw description of a region.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if `maxsize < SIZE` or `addr` is not 4-byte aligned.
    ///
    /// # Safety
    ///
    /// `addr` must be the start of a mapping of `maxsize` bytes that stays valid for
    /// volatile accesses for as long as the returned value (and any [`Io`] made from it)
    /// exists.
    pub unsafe fn new(addr: usize, maxsize: usize) -> Result<Self> {
        if maxsize < SIZE || !addr.is_multiple_of(4) {
            return Err(EINVAL);
        }
        // INVARIANT: checked above, and guaranteed by the caller.
        Ok(Self {
            addr,
            maxsize,
            observer: None,
        })
    }

    /// Attaches the simulated device that observes writes to the region.
    ///
    /// # Safety
    ///
    /// `observer` must stay valid, at the same address, for as long as the returned value
    /// (and any [`Io`] made from it) exists.
    pub unsafe fn with_observer(mut self, observer: &(dyn MmioWriteObserver + 'static)) -> Self {
        // INVARIANT: the caller keeps `observer` alive and in place as long as `self`.
        self.observer = Some(NonNull::from(observer));
        self
    }
}

/// An MMIO region of at least `SIZE` bytes.
///
/// # Invariants
///
/// As [`IoRaw`]'s.
#[repr(transparent)]
pub struct Io<const SIZE: usize = 0>(IoRaw<SIZE>);

impl<const SIZE: usize> Io<SIZE> {
    /// Views a raw region as an [`Io`].
    pub fn from_raw(raw: &IoRaw<SIZE>) -> &Self {
        // SAFETY: `Io` is a `repr(transparent)` wrapper around `IoRaw`.
        unsafe { &*core::ptr::from_ref(raw).cast::<Self>() }
    }

    /// Returns the size of the region in bytes.
    pub fn maxsize(&self) -> usize {
        self.0.maxsize
    }

    fn check(&self, offset: usize) -> Result<usize> {
        match offset.checked_add(4) {
            Some(end) if end <= self.0.maxsize && offset.is_multiple_of(4) => {
                Ok(self.0.addr + offset)
            }
            _ => Err(EINVAL),
        }
    }

    /// Reads the 32-bit register at `offset` without ordering.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if `offset` is unaligned or outside the region.
    pub fn try_read32_relaxed(&self, offset: usize) -> Result<u32> {
        let addr = self.check(offset)?;
        // SAFETY: By the type invariant and the check above, `addr` is an aligned address
        // inside a live mapping valid for volatile 32-bit accesses.
        Ok(unsafe { core::ptr::read_volatile(addr as *const u32) })
    }

    /// Reads the 32-bit register at `offset`; later memory reads are ordered after it
    /// (`readl`).
    ///
    /// # Errors
    ///
    /// - `EINVAL` if `offset` is unaligned or outside the region.
    pub fn try_read32(&self, offset: usize) -> Result<u32> {
        let value = self.try_read32_relaxed(offset)?;
        // ORDERING: LOAD->LOAD. Orders this register read before the caller's later reads of
        // coherent memory, as `readl`'s `__iormb` does. Pairs with the device's writes of
        // that memory before it updates the register.
        io_dma_mb(Read);
        Ok(value)
    }

    /// Writes the 32-bit register at `offset` without ordering.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if `offset` is unaligned or outside the region.
    pub fn try_write32_relaxed(&self, value: u32, offset: usize) -> Result {
        let addr = self.check(offset)?;
        // SAFETY: By the type invariant and the check above, `addr` is an aligned address
        // inside a live mapping valid for volatile 32-bit accesses.
        unsafe { core::ptr::write_volatile(addr as *mut u32, value) };
        if let Some(observer) = self.0.observer {
            // SAFETY: By the contract of `IoRaw::with_observer` the observer outlives the
            // region, and `MmioWriteObserver: Sync` makes a shared reference to it usable
            // from any thread.
            unsafe { observer.as_ref() }.written(offset, value);
        }
        Ok(())
    }

    /// Writes the 32-bit register at `offset`, ordered after all earlier writes to
    /// memory (`writel`).
    ///
    /// # Errors
    ///
    /// - `EINVAL` if `offset` is unaligned or outside the region.
    pub fn try_write32(&self, value: u32, offset: usize) -> Result {
        // ORDERING: STORE->STORE. Orders the caller's earlier stores to coherent memory
        // before this register write, as `writel`'s `__iowmb` does. Pairs with the device
        // reading that memory after it sees the register write.
        io_dma_mb(Write);
        self.try_write32_relaxed(value, offset)
    }

    /// Reads the 32-bit register at `offset` (`readl`).
    ///
    /// # Panics
    ///
    /// If `offset` is outside the region: register offsets are driver constants, and a
    /// bad one is a bug in the driver.
    #[track_caller]
    pub fn read32(&self, offset: usize) -> u32 {
        // PANIC: see the `# Panics` section; offsets never come from the device.
        self.try_read32(offset)
            .expect("MMIO read outside the region")
    }

    /// Writes the 32-bit register at `offset` (`writel`).
    ///
    /// # Panics
    ///
    /// If `offset` is outside the region, as [`Io::read32`].
    #[track_caller]
    pub fn write32(&self, value: u32, offset: usize) {
        // PANIC: see the `# Panics` section; offsets never come from the device.
        self.try_write32(value, offset)
            .expect("MMIO write outside the region")
    }

    /// Writes the 32-bit register at `offset` without ordering (`writel_relaxed`).
    ///
    /// # Panics
    ///
    /// If `offset` is outside the region, as [`Io::read32`].
    #[track_caller]
    pub fn write32_relaxed(&self, value: u32, offset: usize) {
        // PANIC: see the `# Panics` section; offsets never come from the device.
        self.try_write32_relaxed(value, offset)
            .expect("MMIO write outside the region")
    }

    /// Reads the 32-bit register at `offset` without ordering (`readl_relaxed`).
    ///
    /// # Panics
    ///
    /// If `offset` is outside the region, as [`Io::read32`].
    #[track_caller]
    pub fn read32_relaxed(&self, offset: usize) -> u32 {
        // PANIC: see the `# Panics` section; offsets never come from the device.
        self.try_read32_relaxed(offset)
            .expect("MMIO read outside the region")
    }
}

// SAFETY: An `Io` is an address of device registers plus a thread-safe observer; accesses
// are volatile and the device tolerates them from any CPU.
unsafe impl<const SIZE: usize> Send for IoRaw<SIZE> {}
// SAFETY: As above; all accesses go through `&self` volatile operations.
unsafe impl<const SIZE: usize> Sync for IoRaw<SIZE> {}
