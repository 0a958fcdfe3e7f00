// SPDX-License-Identifier: GPL-2.0

//! An emulated NVIDIA GH100 whose GSP is the virtual GSP: upstream nova-core's whole
//! driver, built by its own kernel, boots against it under QEMU.
//!
//! The modules follow the hardware and its plumbing:
//!
//! - [`activity`]: the driver's register accesses counted, for a runner's hang rule;
//! - [`device`]: the traits a PCI function model offers its transport (config space, BAR,
//!   guest RAM), and the guest's RAM mapped from fds;
//! - [`vfio`]: the transport, vfio-user (QEMU ≥ 10.1's `vfio-user-pci`, every target);
//! - [`pci`]: the GH100's config header;
//! - [`regs`]: the BAR0 registers nova-core 7.3 uses on its way to the GSP, named;
//! - [`fsp`]: the FSP's EMEM, queues and messages;
//! - [`fmc`]: the boot-argument chain from the FSP's message to the queues;
//! - [`gh100`]: the GPU that ties them together, the GSP on a thread of its own;
//! - [`fault`]: a hostile GSP, misbehaving in named ways;
//! - [`latency`]: each RPC's latency as the driver experiences it, and the guest's CPU time;
//! - [`firmware`]: the GH100 firmware files nova-core requests, made by us.

pub mod activity;
pub mod device;
pub mod fault;
pub mod firmware;
pub mod fmc;
pub mod fsp;
pub mod gh100;
pub mod latency;
pub mod pci;
pub mod regs;
pub mod vfio;
