// SPDX-License-Identifier: GPL-2.0

//! Devices, with Linux 7.3's device contexts.
//!
//! A `&Device<Ctx>` promises the state `Ctx` names: [`Bound`] (bound to its driver, what
//! DMA allocations take) or [`Normal`] (no promise). A `&Device<Bound>` derefs to a
//! `&Device`.
//!
//! A device is reference counted, as 7.3's: [`ARef<Device>`](crate::sync::aref::ARef)
//! holds a count, and any `&Device<Ctx>` converts into one (`dev.into()`). The host's
//! devices are owned values, so a count cannot keep one alive: dropping a device while a
//! count of it is held aborts (see [`Device`]'s invariants).
//!
//! ```
//! use kernel::{
//!     device::{
//!         Bound,
//!         Device, //
//!     },
//!     sync::aref::ARef,
//! };
//!
//! static DEV: Device<Bound> = Device::new("gpu0");
//! let dev: ARef<Device> = (&DEV).into();
//! let again = dev.clone();
//! assert_eq!(again.name(), "gpu0");
//! ```
//!
//! In host builds a device may also carry a DMA pool (`Device::with_dma_pool`; ours, test
//! bench): its coherent allocations are then carved from memory another process shares,
//! at the bus addresses the pool gives them.

use core::{
    marker::PhantomData,
    ptr::NonNull,
    sync::atomic::{
        AtomicUsize,
        Ordering, //
    },
};

use crate::{
    backend::DevicePool,
    sync::aref::{
        ARef,
        AlwaysRefCounted, //
    },
};

mod private {
    pub trait Sealed {}
}

/// The state of a [`Device`] a reference to it promises.
pub trait DeviceContext: private::Sealed {}

/// A device in no particular state.
pub struct Normal;

/// A device bound to its driver.
pub struct Bound;

impl private::Sealed for Normal {}
impl private::Sealed for Bound {}
impl DeviceContext for Normal {}
impl DeviceContext for Bound {}

/// A device.
///
/// On the host this stands for the simulated GPU, and carries only its name: there is no
/// `struct device` to wrap.
///
/// # Invariants
///
/// - A `Device<Bound>` is bound for as long as it exists: the host's devices are made
///   bound ([`Device::new`], `Device::with_dma_pool`) and never unbound.
/// - `refs` counts the [`ARef`]s of the device; a device is not dropped while it is
///   non-zero (its `Drop` aborts instead), so every `ARef` points to a live device.
// `repr(C)`: the same layout whatever `Ctx`, a zero-sized marker after the fields.
#[repr(C)]
pub struct Device<Ctx: DeviceContext = Normal> {
    name: &'static str,
    refs: AtomicUsize,
    /// The pool coherent allocations come from: only the host's devices have one.
    dma_pool: Option<&'static DevicePool>,
    _ctx: PhantomData<Ctx>,
}

impl Device<Bound> {
    /// Creates the description of a device called `name`, bound from the start.
    ///
    /// Ours: 7.3's devices come from the driver core.
    pub const fn new(name: &'static str) -> Self {
        // INVARIANT: the host's devices are never unbound.
        Self {
            name,
            refs: AtomicUsize::new(0),
            dma_pool: None,
            _ctx: PhantomData,
        }
    }

    /// Creates a device called `name`, bound from the start, whose coherent allocations
    /// (`Coherent::zeroed`, `Coherent::zeroed_slice`, `CoherentBox::zeroed`, ...) are carved
    /// from `pool`, at the pool's bus addresses.
    ///
    /// Ours, test bench (host only): a device process that shares the pool's memory (the
    /// guest RAM QEMU shares with the GSP process) reaches the driver's allocations by bus
    /// address, as a real device reaches `dma_alloc_coherent`'s.
    #[cfg(all(feature = "host", not(loom)))]
    pub const fn with_dma_pool(name: &'static str, pool: &'static DevicePool) -> Self {
        // INVARIANT: the host's devices are never unbound.
        Self {
            name,
            refs: AtomicUsize::new(0),
            dma_pool: Some(pool),
            _ctx: PhantomData,
        }
    }
}

impl<Ctx: DeviceContext> Device<Ctx> {
    /// Returns the name of the device.
    ///
    /// 7.3's gives a `&CStr`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Returns the pool the device's coherent memory comes from, if it has one.
    ///
    /// Ours, test bench (host only).
    #[cfg(all(feature = "host", not(loom)))]
    pub fn dma_pool(&self) -> Option<&'static DevicePool> {
        self.dma_pool
    }

    /// Returns the pool the device's coherent memory comes from, in every build: `None`
    /// where devices have none.
    pub(crate) fn coherent_pool(&self) -> Option<&'static DevicePool> {
        self.dma_pool
    }
}

impl core::ops::Deref for Device<Bound> {
    type Target = Device;

    fn deref(&self) -> &Device {
        // SAFETY: `Device<Ctx>` is `repr(C)` over the same fields whatever `Ctx` (a
        // zero-sized marker, placed last), so the two types have one layout.
        unsafe { &*core::ptr::from_ref(self).cast::<Device>() }
    }
}

impl<Ctx: DeviceContext> core::fmt::Debug for Device<Ctx> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let mut f = f.debug_struct("Device");
        f.field("name", &self.name);
        f.field("dma_pool", &self.dma_pool);
        f.finish()
    }
}

// SAFETY: a device is not dropped while `refs` is non-zero (type invariant, enforced by
// `Drop`), and `inc_ref`/`dec_ref` count up and down: an object stays valid from each
// `inc_ref` until its `dec_ref`.
unsafe impl AlwaysRefCounted for Device {
    fn inc_ref(&self) {
        self.refs.fetch_add(1, Ordering::Relaxed);
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: the caller gives back a count, so the device is still alive.
        let dev = unsafe { obj.as_ref() };
        // ORDERING: `Release`, paired with the `Acquire` load in `Drop`: the holder's uses
        // of the device come before the drop that sees the count at zero.
        dev.refs.fetch_sub(1, Ordering::Release);
    }
}

/// A bound device converts into a count of the device, as in 7.3 (its
/// `impl_device_context_into_aref!`); `&Device` itself converts by `ARef`'s `From<&T>`.
impl From<&Device<Bound>> for ARef<Device> {
    fn from(dev: &Device<Bound>) -> Self {
        (&**dev).into()
    }
}

impl<Ctx: DeviceContext> Drop for Device<Ctx> {
    fn drop(&mut self) {
        // ORDERING: `Acquire`, paired with `dec_ref`'s `Release`.
        if self.refs.load(Ordering::Acquire) != 0 {
            // An `ARef` would dangle: 7.3's device would live on until its last count;
            // an owned host device cannot.
            #[cfg(any(feature = "host", loom))]
            std::process::abort();
            #[cfg(not(any(feature = "host", loom)))]
            panic!("device {} dropped while an ARef to it is held", self.name);
        }
    }
}
