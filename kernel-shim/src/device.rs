// SPDX-License-Identifier: GPL-2.0

//! Devices, with Linux 7.3's device contexts.
//!
//! A `&Device<Ctx>` promises the state `Ctx` names: [`Bound`] (bound to its driver, what
//! DMA allocations take) or [`Normal`] (no promise). A `&Device<Bound>` derefs to a
//! `&Device`.

use core::marker::PhantomData;

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
/// A `Device<Bound>` is bound for as long as it exists: the host's devices are made bound
/// ([`Device::new`]) and never unbound.
#[repr(transparent)]
pub struct Device<Ctx: DeviceContext = Normal> {
    name: &'static str,
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
}

impl core::ops::Deref for Device<Bound> {
    type Target = Device;

    fn deref(&self) -> &Device {
        // SAFETY: `Device<Ctx>` is `repr(transparent)` over the same fields whatever `Ctx`
        // (a zero-sized marker), so the two types have one layout.
        unsafe { &*core::ptr::from_ref(self).cast::<Device>() }
    }
}

impl<Ctx: DeviceContext> core::fmt::Debug for Device<Ctx> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Device").field("name", &self.name).finish()
    }
}
