// SPDX-License-Identifier: GPL-2.0

//! nova-core: the GSP command queue of NVIDIA GPUs.
//!
//! This crate holds the part of nova-core that talks to the GPU System Processor (GSP)
//! through the shared-memory message queues: the queue layout ([`gsp::fw`]), the queue
//! itself ([`gsp::cmdq`]), the doorbell register ([`gsp::regs`]) and the typed RPCs
//! ([`gsp::commands`]). What the test bench adds (the virtual GSP's own RPCs, the copy
//! engine, the GSP behind an emulated PCI device) is the crate `nova_testbench`, and the
//! GPU's phase barrier, which the GSP's copy engine signals, the crate `mbarrier`.

// Kbuild makes every crate `no_std` (`-Zcrate-attr=no_std`); cargo builds need it said.
#![cfg_attr(not(CONFIG_RUST), no_std)]

pub mod gsp;
// `pub` for its traits, which the virtual GSP uses; its `const fn`s are `pub(crate)`.
pub mod num;

/// The prefix of this crate's log lines, as `module!` defines it for a kernel module.
const __LOG_PREFIX: &[u8] = b"nova_core\0";
