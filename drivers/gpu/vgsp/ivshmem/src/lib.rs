// SPDX-License-Identifier: GPL-2.0

//! The pieces around QEMU's `ivshmem-doorbell` device that the virtual GSP sits behind.

pub mod client;
pub mod server;
