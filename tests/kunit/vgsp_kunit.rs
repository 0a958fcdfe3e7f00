// SPDX-License-Identifier: GPL-2.0

//! KUnit suites for nova-core's GSP command queue and the virtual GSP.
//!
//! Written once with `#[kunit_tests]`: each case is a `cargo test` test on the host, and
//! [`SUITES`] is what a KUnit executor runs and reports as KTAP; in a kernel tree each
//! suite registers itself with KUnit. Most cases drive the driver and the virtual GSP in
//! turns on one thread; the end-to-end suite runs the GSP on a thread of its own
//! ([`gsp_thread`]). They use nothing but the shim, so the same suites run inside a
//! kernel.

// Kbuild makes every crate `no_std` (`-Zcrate-attr=no_std`); cargo builds need it said.
#![cfg_attr(not(any(test, CONFIG_RUST)), no_std)]

pub mod fixture;
pub mod gsp_thread;

pub mod cmdq_double_fetch;
pub mod cmdq_errors;
pub mod cmdq_nomem;
pub mod cmdq_rings;
pub mod cmdq_split;
pub mod copy_engine;
pub mod fw_layout;
pub mod gsp_e2e;
pub mod gsp_events;
pub mod gsp_init_args;
pub mod gsp_sequencer;
pub mod gsp_shared;
pub mod gsp_waits;
#[cfg(CONFIG_VGSP_IVSHMEM)]
pub mod ivshmem_device;
pub mod mbarrier;
pub mod vgsp_commands;

#[cfg(not(CONFIG_RUST))]
use kernel::kunit::Suite;

/// The prefix of this crate's log lines, as `module!` defines it for a kernel module.
const __LOG_PREFIX: &[u8] = b"vgsp_kunit\0";

/// Every suite that runs outside a kernel, in the order they are reported
/// (`ivshmem_device` needs the PCI device of a kernel booted by its runner).
///
/// Inside a kernel each suite registers itself: Linux 7.3's `#[kunit_tests]` makes no
/// `KUNIT_SUITE` for a list to name.
#[cfg(not(CONFIG_RUST))]
pub static SUITES: &[&Suite] = &[
    &fw_layout::tests::KUNIT_SUITE,
    &cmdq_rings::tests::KUNIT_SUITE,
    &cmdq_errors::tests::KUNIT_SUITE,
    &cmdq_split::tests::KUNIT_SUITE,
    &cmdq_double_fetch::tests::KUNIT_SUITE,
    &cmdq_nomem::tests::KUNIT_SUITE,
    &vgsp_commands::tests::KUNIT_SUITE,
    &gsp_e2e::tests::KUNIT_SUITE,
    &gsp_waits::tests::KUNIT_SUITE,
    &gsp_sequencer::tests::KUNIT_SUITE,
    &gsp_events::tests::KUNIT_SUITE,
    &gsp_init_args::tests::KUNIT_SUITE,
    &gsp_shared::tests::KUNIT_SUITE,
    &mbarrier::tests::KUNIT_SUITE,
    &copy_engine::tests::KUNIT_SUITE,
];

/// The suites that run only inside a kernel, by name: each is in a
/// `#![cfg(CONFIG_VGSP_IVSHMEM)]` file, so no [`Suite`] of it exists outside one. With
/// [`SUITES`] they are every suite a kernel boot must report; `vgsp-host
/// --list-suites --kernel` prints both, and a host test checks this list against the
/// `#[kunit_tests]` attributes of those files.
pub static KERNEL_ONLY_SUITES: &[&str] = &["nova_core_ivshmem"];

/// The suites of [`SUITES`] that no kernel runs, by name: each is in a
/// `#![cfg(not(CONFIG_RUST))]` file, as it needs a facility of the host shim alone
/// ([`cmdq_double_fetch`]: the shim's read observer; [`cmdq_nomem`]: its allocation-failure
/// injection). `vgsp-host --list-suites --kernel` leaves them out.
pub static HOST_ONLY_SUITES: &[&str] = &[
    "nova_core_gsp_cmdq_double_fetch",
    "nova_core_gsp_cmdq_nomem",
];
