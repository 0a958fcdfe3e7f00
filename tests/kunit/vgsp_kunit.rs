// SPDX-License-Identifier: GPL-2.0

//! KUnit suites for nova-core's GSP command queue and the virtual GSP.
//!
//! Written once with `#[kunit_tests]`: each case is a `cargo test` test on the host, and
//! [`SUITES`] is what a KUnit executor runs and reports as KTAP. The cases drive the
//! driver and the virtual GSP in turns on one thread, so they need no threads, no
//! clock beyond the shim's, and no host: the same suites run inside a kernel.

#![cfg_attr(not(test), no_std)]

pub mod fixture;

mod cmdq_errors;
mod cmdq_rings;
mod fw_layout;
mod vgsp_commands;

use kernel::kunit::Suite;

/// Every suite, in the order they are reported.
pub static SUITES: &[&Suite] = &[
    &fw_layout::tests::KUNIT_SUITE,
    &cmdq_rings::tests::KUNIT_SUITE,
    &cmdq_errors::tests::KUNIT_SUITE,
    &vgsp_commands::tests::KUNIT_SUITE,
];
