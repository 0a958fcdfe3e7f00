// SPDX-License-Identifier: GPL-2.0

//! `vdev`: the test bench in a kernel, written on Linux 7.3's `kernel` crate.
//!
//! Not an upstream API: this crate is ours. It gives the virtual GSP and the KUnit suites
//! what a simulated device needs and no `kernel` crate offers: a device to allocate
//! coherent memory for, the device's side of that memory, a BAR whose doorbells wake a
//! device model, and a thread to run the model on beside the driver.
//!
//! # Why a crate of its own
//!
//! The tree's `rust/` stays as Linux 7.3 ships it: nothing of ours goes into its `kernel`
//! crate. So the bench is a crate of its own, which our Kbuild compiles against 7.3's
//! unmodified `kernel` crate, using only its public API:
//!
//! - The simulated BAR is an I/O backend of its own ([`SimBackend`], views [`SimIo`]):
//!   7.3 makes `kernel::io::{IoBackend, IoCapable, IoBase}` public traits, so the
//!   driver's `Io` calls (`read`, `write`, `write_reg` with `register!` values,
//!   `try_read32`, ...) work on [`SimBar::io`] as on a real BAR, and the backend itself
//!   counts the doorbell writes. 7.3's `Mmio` has no hook for that.
//! - The device is a faux device ([`device()`]), given a DMA mask here because the faux
//!   bus sets none.
//!
//! Host builds use the crate of the same name in `drivers/gpu/vgsp/vdev/`, the same items
//! written on the host shim; the interface is the same.
//!
//! # The items
//!
//! - [`device()`]: the device the suites allocate DMA memory for.
//! - [`SimBar`]: a BAR backed by memory; writes to its doorbell offsets wake waiters.
//!   [`BarIo`] is its register view.
//! - [`run_beside`]: runs a device model on a kernel thread while the driver runs on the
//!   caller's.
//! - [`DmaView`] and [`device_view`]: a device's bounds-checked window onto coherent
//!   memory, the virtual GSP's only way to the rings.
//! - `ivshmem` (with `CONFIG_VGSP_IVSHMEM`): QEMU's ivshmem-doorbell PCI device, behind
//!   which the virtual GSP runs as a host process: its registers, its mailbox, the device to
//!   allocate the queues for, and its interrupts.
//!
//! # Initcall
//!
//! With `CONFIG_VGSP_IVSHMEM` the crate has a `module!`, for the PCI driver's registration.
//! The crate is built into vmlinux, never a loadable module, so `module!` makes that an
//! initcall (`device_initcall`) whose state is never dropped, and gives the crate the
//! `__LOG_PREFIX` `vgsp_vdev`.

// Kbuild makes every crate `no_std` (`-Zcrate-attr=no_std`).

mod bar;
mod dma;
#[cfg(CONFIG_VGSP_IVSHMEM)]
pub mod ivshmem;
mod thread;

#[cfg(CONFIG_VGSP_IVSHMEM)]
kernel::prelude::module! {
    type: ivshmem::DriverModule,
    name: "vgsp_vdev",
    authors: ["The vgsp project"],
    description: "The virtual GSP's test bench: the ivshmem-doorbell PCI driver",
    license: "GPL",
}

pub use bar::{
    BarIo,
    SimBackend,
    SimBar,
    SimIo, //
};
pub use dma::{
    device_view,
    DmaView, //
};
pub use thread::run_beside;

use kernel::{
    bindings,
    device::{
        Bound,
        Device, //
    },
    dma::DmaMask,
    error::to_result,
    faux,
    prelude::*,
    sync::{
        atomic::{
            Acquire,
            Atomic,
            Release, //
        },
        SetOnce, //
    },
    time::{
        delay::fsleep,
        Delta, //
    },
};

/// The name of the bench's faux device: `/sys/devices/faux/vgsp`.
const DEVICE_NAME: &CStr = c"vgsp";

/// The faux device, registered by the first [`device()`] that succeeds and never dropped
/// (a `static` is not), so the device stays registered and bound for the life of the
/// kernel.
static REGISTRATION: SetOnce<faux::Registration> = SetOnce::new();

/// Whether a [`device()`] call is registering the device: `1` while one is, `0` otherwise.
/// It keeps two first callers from both registering one (the second registration of the
/// name would fail).
static REGISTERING: Atomic<u32> = Atomic::new(0);

/// Returns the device the suites allocate DMA memory for: a faux device called `vgsp`,
/// registered on first use, set up for coherent DMA, and kept for the life of the kernel.
///
/// The faux bus sets up no DMA for its devices, so this does what a bus would:
///
/// - a 64-bit coherent DMA mask: `dma_alloc_attrs` warns about a device without one, and
///   then fails, as the direct allocator admits no page above the mask (zero). This device
///   stands for no hardware, so any address will do;
/// - the DMA-coherent flag: on architectures where DMA need not be coherent (arm64), a
///   device without it gets its coherent memory remapped uncached. The simulated device is
///   a CPU thread, coherent with the CPU caches by construction, and the memory it shares
///   with the driver carries atomics (`DmaView::atomic_u64`), which uncached memory need not
///   support. Architectures whose DMA is always coherent (x86) ignore the flag.
///
/// # Errors
///
/// - `ENODEV` if the faux device cannot be created (`faux_device_create` says no more).
/// - `EIO` if the DMA mask is refused.
pub fn device() -> Result<&'static Device<Bound>> {
    loop {
        // ORDERING: `SetOnce::as_ref` loads with `Acquire`, pairing with the `Release` store
        // with which `SetOnce::populate` publishes the registration: a registration seen here
        // has its DMA set up.
        if let Some(registration) = REGISTRATION.as_ref() {
            let dev: &faux::Device<Bound> = registration.as_ref();
            return Ok(dev.as_ref());
        }
        // ORDERING: `Acquire` pairs with the `Release` store below by a caller whose
        // registration failed: that caller's device, if it made one, has been torn down
        // before this caller registers the same name.
        if REGISTERING.cmpxchg(0, 1, Acquire).is_ok() {
            match register() {
                // A `false` would mean another caller populated it, which `REGISTERING`
                // rules out; either way the next turn of the loop returns what is there.
                Ok(registration) => {
                    let _ = REGISTRATION.populate(registration);
                }
                Err(e) => {
                    // ORDERING: `Release` pairs with the `Acquire` of the `cmpxchg` above,
                    // in the next caller to try.
                    REGISTERING.store(0, Release);
                    return Err(e);
                }
            }
        } else {
            // Another caller is registering the device; a faux device probes
            // synchronously, so this does not last.
            fsleep(Delta::from_millis(1));
        }
    }
}

/// Registers the faux device and sets it up for coherent DMA (see [`device()`]).
///
/// # Errors
///
/// As [`device()`].
fn register() -> Result<faux::Registration> {
    let registration = faux::Registration::new(DEVICE_NAME, None)?;
    let dev: &faux::Device<Bound> = registration.as_ref();
    let dev: &Device<Bound> = dev.as_ref();
    // `Device` is a transparent wrapper of `Opaque<bindings::device>`, itself a transparent
    // wrapper of the C `struct device`, so the pointer to one is a pointer to the other
    // (7.3's `Device::as_raw` is not public). `faux::Device` does not implement
    // `dma::Device`, whose methods want a device in its probe (`Core`) context.
    let raw = core::ptr::from_ref(dev).cast::<bindings::device>().cast_mut();
    // CAST: A flag's number, an index into `flags` (a handful of bits), fits any `c_ulong`.
    let coherent = bindings::struct_device_flags_DEV_FLAG_DMA_COHERENT as c_ulong;
    // SAFETY: `raw` is a registered `struct device`, valid while `registration` is, and
    // `flags` its bitmap of device flags, which `set_bit` updates atomically, as the driver
    // core's own accessors (`dev_set_dma_coherent`) do.
    unsafe { bindings::set_bit(coherent, (&raw mut (*raw).flags).cast()) };
    // SAFETY: `raw` is valid, as above. Nothing allocates or maps DMA memory for it
    // concurrently: the device is not handed out before this returns.
    to_result(unsafe { bindings::dma_set_coherent_mask(raw, DmaMask::new::<64>().value()) })?;
    Ok(registration)
}
