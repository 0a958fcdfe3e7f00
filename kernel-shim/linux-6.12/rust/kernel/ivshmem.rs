// SPDX-License-Identifier: GPL-2.0

//! QEMU's `ivshmem-doorbell` PCI device (1af4:1110), as probed by the C glue in
//! `rust/helpers/vgsp_ivshmem.c`.
//!
//! Linux 6.12 has no `kernel::pci`, so the glue registers the PCI driver, maps the BARs
//! and takes the MSI-X vector; this module is the small API over the one device it
//! drives: [`device()`], its registers ([`Device::bar0`]), its shared memory
//! ([`Device::shared_memory`]) and its interrupts ([`Device::wait_interrupt`]).
//!
//! ```
//! use kernel::{
//!     ivshmem,
//!     time::Delta, //
//! };
//!
//! // Only a machine with the device has one to look at.
//! if let Ok(dev) = ivshmem::device() {
//!     let (_mem, len) = dev.shared_memory();
//!     assert!(len > 0);
//!     let seen = dev.interrupts();
//!     assert!(dev.wait_interrupt(seen, Delta::ZERO) >= seen);
//! }
//! ```

use core::{
    ptr::NonNull,
    sync::atomic::{
        AtomicPtr,
        Ordering, //
    },
};

use crate::{
    alloc::{
        flags::GFP_KERNEL,
        KBox, //
    },
    bindings,
    error::{
        code::{
            EINVAL,
            ENODEV, //
        },
        Result,
    },
    io::{
        Mmio,
        MmioRaw,
        Region, //
    },
    time::Delta,
};

/// The size of BAR0, the device's registers.
const REGS_SIZE: usize = 256;

// The glue maps at least the registers this module describes.
const _: () = assert!(bindings::VGSP_IVSHMEM_REGS_LEN as usize == REGS_SIZE);

/// The ivshmem-doorbell device probed by the PCI glue.
///
/// # Invariants
///
/// - `raw` is the device the glue published; the glue keeps it, and its mappings, for
///   the life of the kernel once it has been handed out: the driver cannot be unbound
///   (no sysfs bind attributes), and removing the PCI device itself is unsupported (the
///   glue warns if it happens).
/// - `bar0` describes the glue's mapping of BAR0, of at least [`REGS_SIZE`] bytes.
/// - `shm` and `shm_len` describe the glue's write-back mapping of BAR2.
pub struct Device {
    raw: NonNull<bindings::vgsp_ivshmem>,
    bar0: Mmio<'static, Region<REGS_SIZE>>,
    shm: NonNull<u8>,
    shm_len: usize,
}

// SAFETY: `Device` only reads immutable addresses, and the C functions it calls may run
// on any thread: the count is an atomic and the wait queue has its own lock.
unsafe impl Send for Device {}

// SAFETY: As for `Send`: every method takes `&self` and is safe to call concurrently.
unsafe impl Sync for Device {}

/// Returns the probed device.
///
/// The first successful call builds the [`Device`]; later calls return the same one.
///
/// # Errors
///
/// - `ENODEV` if none was probed.
/// - `ENOMEM` if the first call cannot allocate the [`Device`].
/// - `EINVAL` if the glue's mappings are unusable: BAR0 not 4-byte aligned or BAR2
///   null (neither happens: both are page-aligned mappings).
pub fn device() -> Result<&'static Device> {
    static DEVICE: AtomicPtr<Device> = AtomicPtr::new(core::ptr::null_mut());
    // ORDERING: `Acquire` pairs with the `Release` of the `compare_exchange` below: a
    // `Device` seen here is fully initialised.
    let dev = DEVICE.load(Ordering::Acquire);
    if !dev.is_null() {
        // SAFETY: A non-null `DEVICE` was leaked from a `KBox` below and is never freed.
        return Ok(unsafe { &*dev });
    }

    // SAFETY: `vgsp_ivshmem_device` has no preconditions; it returns null without a
    // device.
    let raw = NonNull::new(unsafe { bindings::vgsp_ivshmem_device() }).ok_or(ENODEV)?;
    // SAFETY: `raw` is the published device, valid for the life of the kernel.
    let regs = unsafe { bindings::vgsp_ivshmem_regs(raw.as_ptr()) };
    // SAFETY: As above.
    let shm = NonNull::new(unsafe { bindings::vgsp_ivshmem_shm(raw.as_ptr()) }.cast::<u8>())
        .ok_or(EINVAL)?;
    // SAFETY: As above.
    let shm_len = unsafe { bindings::vgsp_ivshmem_shm_len(raw.as_ptr()) };
    // SAFETY: The glue maps at least `VGSP_IVSHMEM_REGS_LEN` bytes of BAR0 at `regs` and
    // keeps the mapping for the life of the kernel once the device is handed out.
    let bar0 = unsafe {
        Mmio::from_raw(MmioRaw::from_ptr(Region::<REGS_SIZE>::ptr_try_from_raw_parts_mut(
            regs.cast(),
            REGS_SIZE,
        )?))
    };
    // INVARIANT: every field comes from the published device, as required.
    let new = KBox::into_raw(KBox::new(
        Device {
            raw,
            bar0,
            shm,
            shm_len,
        },
        GFP_KERNEL,
    )?);
    // ORDERING: `Release` publishes the initialised `Device` to the `Acquire` loads.
    match DEVICE.compare_exchange(
        core::ptr::null_mut(),
        new,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        // SAFETY: `new` is now `DEVICE`, leaked and never freed.
        Ok(_) => Ok(unsafe { &*new }),
        Err(first) => {
            // SAFETY: `new` came from `KBox::into_raw` above and nobody else has seen it.
            drop(unsafe { KBox::from_raw(new) });
            // SAFETY: `first` is a non-null `DEVICE`, leaked and never freed.
            Ok(unsafe { &*first })
        }
    }
}

impl Device {
    /// BAR0: the ivshmem registers (256 bytes).
    pub fn bar0(&self) -> &Mmio<'_, Region<REGS_SIZE>> {
        &self.bar0
    }

    /// BAR2 mapped write-back: its CPU address and length in bytes.
    pub fn shared_memory(&self) -> (NonNull<u8>, usize) {
        (self.shm, self.shm_len)
    }

    /// Whether an MSI-X vector signals the driver (else the driver polls).
    pub fn has_msix(&self) -> bool {
        // SAFETY: By the type invariant, `raw` is valid for the life of the kernel.
        unsafe { bindings::vgsp_ivshmem_has_msix(self.raw.as_ptr()) }
    }

    /// Interrupts received on the vector so far (acquire).
    pub fn interrupts(&self) -> u64 {
        // ORDERING: the glue reads the count with acquire: the caller's later reads of the
        // shared memory come after it. Pairs with the release increment in the interrupt
        // handler, which runs after the peer wrote the memory and sent the interrupt.
        // SAFETY: By the type invariant, `raw` is valid for the life of the kernel.
        unsafe { bindings::vgsp_ivshmem_irq_count(self.raw.as_ptr()) }
    }

    /// Sleeps until the interrupt count differs from `seen` or `timeout` passes; returns
    /// the count.
    ///
    /// A negative `timeout` is zero: the count is read without sleeping. The sleep is
    /// killable: a task being killed returns early, as on a timeout.
    pub fn wait_interrupt(&self, seen: u64, timeout: Delta) -> u64 {
        let ns = u64::try_from(timeout.as_nanos()).unwrap_or(0);
        // ORDERING: the returned count is read with acquire, as in `interrupts`.
        // SAFETY: By the type invariant, `raw` is valid for the life of the kernel; the
        // callers run in process context, where sleeping is allowed.
        unsafe { bindings::vgsp_ivshmem_wait_irq(self.raw.as_ptr(), seen, ns) }
    }
}
