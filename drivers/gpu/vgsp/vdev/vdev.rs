// SPDX-License-Identifier: GPL-2.0

//! The test bench: what a simulated device needs that no `kernel` crate has.
//!
//! Not an upstream API. The driver (`nova-core`) is written against Linux 7.3's `kernel`
//! crate alone; the virtual GSP and the suites also need a device's side of coherent
//! memory and a device model running beside the driver. Those live here, in a crate of
//! their own, because a kernel tree's `rust/` stays as upstream ships it:
//!
//! - in host builds (this file), [`DmaView`] is the host shim's own (`kernel::dma::DmaView`,
//!   which the model backend also sees) and the bench is `host.rs`, written on the shim's
//!   public API;
//! - inside a Linux 7.3 tree, `drivers/gpu/vgsp/vdev/linux-7.3/` is the same crate written on
//!   7.3's `kernel` crate (a faux device, a simulated BAR as an `Io` backend of its own,
//!   device models on a kernel thread).
//!
//! The items:
//!
//! - [`DmaView`] and [`device_view`]: a device's bounds-checked window onto coherent
//!   memory, the virtual GSP's only way to the rings;
//! - with the `bench` feature, `device()`, `SimBar` (a BAR backed by memory whose
//!   doorbell registers wake a waiter), `BarIo` (its register view) and `run_beside` (a
//!   device model on a thread of its own).

// Kbuild makes every crate `no_std` (`-Zcrate-attr=no_std`); cargo builds need it said.
#![cfg_attr(not(CONFIG_RUST), no_std)]

#[cfg(feature = "bench")]
extern crate std;

#[cfg(feature = "bench")]
mod host;

#[cfg(feature = "bench")]
pub use host::{
    device,
    run_beside,
    SimBar, //
};
pub use kernel::dma::DmaView;

use kernel::{
    dma::Coherent,
    ptr::KnownSize, //
};

/// The register view of a [`SimBar`] of `SIZE` bytes, as [`SimBar::io`] hands it out.
///
/// On the host it is the shim's `Mmio`, which tells the bar of every write; inside a
/// kernel it is the bench's own `Io` backend, as 7.3's `Mmio` tells no one.
#[cfg(feature = "bench")]
pub type BarIo<'a, const SIZE: usize> = kernel::io::Mmio<'a, kernel::io::Region<SIZE>>;

/// Returns the device's view of `mem`, for a simulated device that shares the CPU's
/// address space.
pub fn device_view<T: KnownSize + ?Sized>(mem: &Coherent<T>) -> DmaView<'_> {
    mem.device_view()
}
