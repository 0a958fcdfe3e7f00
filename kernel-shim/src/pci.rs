// SPDX-License-Identifier: GPL-2.0

//! PCI devices, as Linux 7.3's `kernel::pci`, for what the driver reads of one: its ids
//! and its resources.
//!
//! 7.3's [`Device`] wraps the C `struct pci_dev` the PCI core made; the host has none, so
//! ours is made from a [`device::Device`] and the [`Config`] a test bench gives it
//! ([`Device::new`], ours). The accessors are 7.3's, with its signatures.
//!
//! ```
//! use kernel::{
//!     device::{
//!         self,
//!         Bound, //
//!     },
//!     pci,
//!     prelude::*,
//! };
//!
//! static GPU: pci::Device<Bound> = pci::Device::new(
//!     device::Device::new("gpu0"),
//!     pci::Config {
//!         vendor_id: 0x10de,
//!         device_id: 0x2684,
//!         revision_id: 0xa1,
//!         resources: [(0xf000_0000, 0x100_0000), (0xe000_0000, 0x1000_0000), (0, 0), (0, 0), (0, 0), (0, 0), (0, 0)],
//!         ..pci::Config::ZERO
//!     },
//! );
//!
//! assert_eq!(GPU.vendor_id(), pci::Vendor::NVIDIA);
//! assert_eq!(GPU.vendor_id().as_raw(), 0x10de);
//! assert_eq!(GPU.resource_start(0)?, 0xf000_0000);
//! assert_eq!(GPU.resource_len(1)?, 0x1000_0000);
//! assert_eq!(GPU.resource_start(16)?, 0); // An unassigned resource.
//! assert_eq!(GPU.resource_start(17), Err(EINVAL));
//! // A PCI device is a device: `dev_*!` and the DMA constructors take it.
//! let dev: &device::Device<Bound> = GPU.as_ref();
//! assert_eq!(dev.name(), "gpu0");
//! # Ok::<(), Error>(())
//! ```

use core::ops::Deref;

use crate::{
    device::{
        self,
        Bound,
        DeviceContext,
        Normal, //
    },
    error::{
        code::EINVAL,
        Result, //
    },
    // 7.3's: `Display` is the kernel's (`{}` in `dev_*!`).
    fmt,
    io::ResourceSize,
};

/// Number of resources of a PCI device (C's `PCI_NUM_RESOURCES` with `CONFIG_PCI_IOV`):
/// the six standard BARs, the expansion ROM, six SR-IOV BARs and four bridge windows.
pub const PCI_NUM_RESOURCES: u32 = 17;

/// Number of resources a [`Config`] describes: the six standard BARs and the expansion
/// ROM (index 6). The others read as unassigned (start and length 0).
pub const CONFIG_RESOURCES: usize = 7;

/// A PCI vendor id, as 7.3's `pci::Vendor`.
///
/// 7.3 names every vendor the C headers know; ours names only those the project uses.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub struct Vendor(u16);

impl Vendor {
    /// NVIDIA Corporation (`0x10de`).
    pub const NVIDIA: Self = Self(0x10de);

    /// Returns the raw 16-bit vendor id.
    #[inline]
    pub const fn as_raw(self) -> u16 {
        self.0
    }
}

impl fmt::Debug for Vendor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:04x}", self.0)
    }
}

impl fmt::Display for Vendor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::NVIDIA => f.write_str("NVIDIA"),
            _ => fmt::Debug::fmt(self, f),
        }
    }
}

/// What a host PCI device reports: its configuration-space ids, its bus position and its
/// resources. Ours, test bench: 7.3 reads these from the `struct pci_dev`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Vendor id.
    pub vendor_id: u16,
    /// Device id.
    pub device_id: u16,
    /// Subsystem vendor id.
    pub subsystem_vendor_id: u16,
    /// Subsystem device id.
    pub subsystem_device_id: u16,
    /// Revision id.
    pub revision_id: u8,
    /// Bus number.
    pub bus: u8,
    /// Device and function number (`devfn`).
    pub devfn: u8,
    /// `(start, length)` of the standard BARs 0 to 5 and the expansion ROM (6).
    pub resources: [(ResourceSize, ResourceSize); CONFIG_RESOURCES],
}

impl Config {
    /// All ids zero and every resource unassigned: the base of a struct update.
    pub const ZERO: Self = Self {
        vendor_id: 0,
        device_id: 0,
        subsystem_vendor_id: 0,
        subsystem_device_id: 0,
        revision_id: 0,
        bus: 0,
        devfn: 0,
        resources: [(0, 0); CONFIG_RESOURCES],
    };
}

/// A PCI device, as 7.3's `pci::Device<Ctx>`: with the device context of the
/// [`device::Device`] it is; derefs from `Device<Bound>` to `Device`, and is
/// `AsRef<device::Device<Ctx>>`.
///
/// # Invariants
///
/// `dev` and `config` never change: a host PCI device is made whole ([`Device::new`]).
// `repr(C)`: the same layout whatever `Ctx`, as `device::Device`'s.
#[repr(C)]
pub struct Device<Ctx: DeviceContext = Normal> {
    dev: device::Device<Ctx>,
    config: Config,
}

impl Device<Bound> {
    /// Makes the PCI device `dev` with configuration `config`, bound from the start as
    /// `dev` is.
    ///
    /// Ours: 7.3's PCI devices come from the PCI core.
    pub const fn new(dev: device::Device<Bound>, config: Config) -> Self {
        // INVARIANT: made whole here and never changed.
        Self { dev, config }
    }
}

impl<Ctx: DeviceContext> Device<Ctx> {
    /// Returns the vendor id.
    #[inline]
    pub fn vendor_id(&self) -> Vendor {
        Vendor(self.config.vendor_id)
    }

    /// Returns the device id.
    #[inline]
    pub fn device_id(&self) -> u16 {
        self.config.device_id
    }

    /// Returns the revision id.
    #[inline]
    pub fn revision_id(&self) -> u8 {
        self.config.revision_id
    }

    /// Returns the device's bus, device and function as one number (C's `pci_dev_id`:
    /// the bus number above `devfn`).
    #[inline]
    pub fn dev_id(&self) -> u16 {
        (u16::from(self.config.bus) << 8) | u16::from(self.config.devfn)
    }

    /// Returns the subsystem vendor id.
    #[inline]
    pub fn subsystem_vendor_id(&self) -> u16 {
        self.config.subsystem_vendor_id
    }

    /// Returns the subsystem device id.
    #[inline]
    pub fn subsystem_device_id(&self) -> u16 {
        self.config.subsystem_device_id
    }

    /// Returns the start of resource `bar` (0 if it is not assigned).
    ///
    /// # Errors
    ///
    /// - `EINVAL` if `bar` is not below [`PCI_NUM_RESOURCES`].
    pub fn resource_start(&self, bar: u32) -> Result<ResourceSize> {
        Ok(self.resource(bar)?.0)
    }

    /// Returns the length of resource `bar` (0 if it is not assigned).
    ///
    /// # Errors
    ///
    /// - `EINVAL` if `bar` is not below [`PCI_NUM_RESOURCES`].
    pub fn resource_len(&self, bar: u32) -> Result<ResourceSize> {
        Ok(self.resource(bar)?.1)
    }

    fn resource(&self, bar: u32) -> Result<(ResourceSize, ResourceSize)> {
        if bar >= PCI_NUM_RESOURCES {
            return Err(EINVAL);
        }
        Ok(usize::try_from(bar)
            .ok()
            .and_then(|i| self.config.resources.get(i).copied())
            .unwrap_or((0, 0)))
    }
}

impl Deref for Device<Bound> {
    type Target = Device;

    fn deref(&self) -> &Device {
        // SAFETY: `Device<Ctx>` is `repr(C)` over a `device::Device<Ctx>` (one layout
        // whatever `Ctx`, see its `repr(C)`) and a `Config`, so the two types have one
        // layout.
        unsafe { &*core::ptr::from_ref(self).cast::<Device>() }
    }
}

impl<Ctx: DeviceContext> AsRef<device::Device<Ctx>> for Device<Ctx> {
    fn as_ref(&self) -> &device::Device<Ctx> {
        &self.dev
    }
}

impl<Ctx: DeviceContext> fmt::Debug for Device<Ctx> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("pci::Device")
            .field("dev", &self.dev)
            .field("config", &self.config)
            .finish()
    }
}
