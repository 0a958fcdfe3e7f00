// SPDX-License-Identifier: GPL-2.0

//! The host's test interface (feature `host`; ours, not 7.3's): what a host test bench
//! uses beside Linux's API.
//!
//! - [`device`]: the simulated device the driver binds to.
//! - [`kunit`]: the KTAP runner for the suites.
//! - [`failslab`]: allocation-failure injection, the kernel's `fail-nth` for a test's
//!   thread.
//! - [`DmaPool`]: coherent memory carved from a mapping shared with another process, for a
//!   device made with [`Device::with_dma_pool`].
//!
//! The host's environment (clock, sleeping, log) is its backend, not an API.

use crate::device::{
    Bound,
    Device, //
};

pub use crate::backend::{
    dma_pool::DmaPool,
    failslab, //
};

pub mod kunit;

/// The simulated device the driver binds to on the host.
pub fn device() -> &'static Device<Bound> {
    static DEV: Device<Bound> = Device::new("vgsp-host");
    &DEV
}
