// SPDX-License-Identifier: GPL-2.0

//! Devices, with Linux 7.3's device contexts.
//!
//! A `&Device<Ctx>` promises the state `Ctx` names: [`Bound`] (bound to its driver, what
//! DMA allocations take) or [`Normal`] (no promise). A `&Device<Bound>` derefs to a
//! `&Device`.
//!
//! In host builds a device may also carry a DMA pool ([`Device::with_dma_pool`]; ours, test
//! bench): its coherent allocations are then carved from memory another process shares,
//! at the bus addresses the pool gives them.

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
/// ([`Device::new`], [`Device::with_dma_pool`]) and never unbound.
// `repr(C)`: the same layout whatever `Ctx`, a zero-sized marker after the fields.
#[repr(C)]
pub struct Device<Ctx: DeviceContext = Normal> {
    name: &'static str,
    #[cfg(all(feature = "host", not(loom)))]
    dma_pool: Option<&'static crate::host::DmaPool>,
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
            #[cfg(all(feature = "host", not(loom)))]
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
    pub const fn with_dma_pool(name: &'static str, pool: &'static crate::host::DmaPool) -> Self {
        // INVARIANT: the host's devices are never unbound.
        Self {
            name,
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
    pub fn dma_pool(&self) -> Option<&'static crate::host::DmaPool> {
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
        #[cfg(all(feature = "host", not(loom)))]
        f.field("dma_pool", &self.dma_pool);
        f.finish()
    }
}
