// SPDX-License-Identifier: GPL-2.0

//! The test bench's side of nova-core: what the suites, the benchmark and the virtual GSP
//! need of a driver that a driver for a GPU does not.
//!
//! - [`rpc`]: the virtual GSP's own RPCs (echo, sink, the digest of a control's
//!   parameters, the copy engine's request), which r570 firmware does not have, and the
//!   raw RPCs of malformed and replayed traffic.
//! - [`ReceiveAny`]: the receive of whatever comes next, through the driver's one receive.
//! - [`ce`]: copies by the virtual GSP's copy engine, signalled on an `mbarrier`.
//! - [`ivshmem`]: the GSP behind QEMU's `ivshmem-doorbell` PCI device, a process on the
//!   host.
//!
//! # Why the ivshmem binding is here
//!
//! A GPU's driver binds the GPU's PCI function (upstream's `driver.rs`) and finds its GSP
//! behind BAR0. The ivshmem device is not a GPU: it is how the test bench reaches a GSP
//! that is a host process, and only the test bench's suites bind it (through the test
//! bench's PCI driver in `vdev`, which hands the device out). So it is not the driver's
//! bus binding but the bench's, built on the driver's public API ([`nova_core::gsp::Gsp`],
//! [`nova_core::gsp::regs::Doorbell`]), as a bus binding of a GPU would be.

// Kbuild makes every crate `no_std` (`-Zcrate-attr=no_std`); cargo builds need it said.
#![cfg_attr(not(CONFIG_RUST), no_std)]

use kernel::{
    prelude::*,
    time::Delta, //
};
use nova_core::gsp::cmdq::{
    Budget,
    Cmdq,
    GspMessage,
    Skip, //
};

pub mod ce;
// The GSP behind QEMU's ivshmem-doorbell device: in a kernel, only with the test bench's
// PCI driver for it (CONFIG_VGSP_IVSHMEM); on the host, always (its host test).
#[cfg(any(not(CONFIG_RUST), CONFIG_VGSP_IVSHMEM))]
pub mod ivshmem;
pub mod rpc;

/// The prefix of this crate's log lines, as `module!` defines it for a kernel module.
const __LOG_PREFIX: &[u8] = b"nova_testbench\0";

/// The receive the suites and the benchmark use beside the driver's own waits: the next
/// message no one awaits, whatever it is, through the driver's one receive
/// ([`Cmdq::receive`]) passing nothing over.
pub trait ReceiveAny {
    /// Receives the next message no one awaits, whatever its function, reassembling
    /// continuation records; waits up to `timeout` in all.
    ///
    /// # Errors
    ///
    /// As [`Cmdq::receive`].
    fn receive_any(&self, timeout: Delta) -> Result<GspMessage>;
}

impl ReceiveAny for Cmdq {
    fn receive_any(&self, timeout: Delta) -> Result<GspMessage> {
        self.receive(&mut Budget::new(timeout), |_| Skip::Take)
    }
}
