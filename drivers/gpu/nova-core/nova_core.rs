// SPDX-License-Identifier: GPL-2.0

//! nova-core: the GSP command queue of NVIDIA GPUs.
//!
//! This crate holds the part of nova-core that talks to the GPU System Processor (GSP)
//! through the shared-memory message queues: the queue layout ([`gsp::fw`]), the queue
//! itself ([`gsp::cmdq`]), the doorbell register ([`gsp::regs`]) and the typed RPCs
//! ([`gsp::commands`]). [`ivshmem`] is the GSP behind an emulated PCI device. The GPU's
//! phase barrier, which the GSP's copy engine signals, is a crate of its own
//! (`mbarrier`).

// Kbuild makes every crate `no_std` (`-Zcrate-attr=no_std`); cargo builds need it said.
#![cfg_attr(not(CONFIG_RUST), no_std)]

pub mod gsp;
// The GSP behind QEMU's ivshmem-doorbell device: in a kernel, only with the test bench's
// PCI driver for it (CONFIG_VGSP_IVSHMEM); on the host, always (its host test).
#[cfg(any(not(CONFIG_RUST), CONFIG_VGSP_IVSHMEM))]
pub mod ivshmem;
// `pub` for its traits, which the virtual GSP uses; its `const fn`s are `pub(crate)`.
pub mod num;

/// Whether this build's barriers are all `Full`: the benchmark-only feature `all-full`,
/// which makes the `kernel` shim emit the `Full` instruction for every `dma_mb`. The
/// benchmark checks at build time that the shim agrees (a shim feature enabled through
/// another crate would not show here).
pub const BARRIER_ALL_FULL: bool = cfg!(feature = "all-full");

/// The barriers this build of the queue runs with, named for the benchmark's reports:
/// `acq-rel`, the design, in every build but the benchmark's variant builds; `all-full` or
/// `seed` for the benchmark-only features of [`gsp::cmdq`] (its "Barrier variants").
pub const BARRIER_VARIANT: &str = match (cfg!(feature = "seed-barriers"), BARRIER_ALL_FULL) {
    (false, false) => "acq-rel",
    (false, true) => "all-full",
    (true, false) => "seed",
    (true, true) => "seed+all-full",
};

/// The prefix of this crate's log lines, as `module!` defines it for a kernel module.
const __LOG_PREFIX: &[u8] = b"nova_core\0";
