// SPDX-License-Identifier: GPL-2.0

//! KUnit-style test suites.
//!
//! A suite is written once as a module marked `#[kunit_tests(suite_name)]` whose cases
//! are `#[test]` functions returning `()` or [`Result`]. The attribute keeps each case a
//! normal `cargo test` test and declares the suite with `kernel::__kunit_suite!`: a
//! `KUNIT_SUITE` static described by the types below, which the host's runner
//! (`kernel::host::kunit`, which also defines the macro) executes and reports as KTAP
//! version 1.
//!
//! The shim's alone: a kernel build uses Linux 7.3's own `#[kunit_tests]`, which registers
//! each suite with KUnit itself and uses none of these types.

use crate::error::Result;

/// One test case: a name and the function that runs it.
#[derive(Clone, Copy)]
pub struct Case {
    /// The name KTAP reports.
    pub name: &'static str,
    /// Runs the case; an `Err` or a failed assertion fails it.
    pub run: fn() -> Result,
}

/// A suite: a named list of cases.
#[derive(Clone, Copy)]
pub struct Suite {
    /// The name KTAP reports.
    pub name: &'static str,
    /// The cases, in order.
    pub cases: &'static [Case],
}

/// What a test case function may return.
pub trait IntoOutcome {
    /// Converts the return value into a pass (`Ok`) or a failure (`Err`).
    fn into_outcome(self) -> Result;
}

impl IntoOutcome for () {
    fn into_outcome(self) -> Result {
        Ok(())
    }
}

impl IntoOutcome for Result {
    fn into_outcome(self) -> Result {
        self
    }
}

/// Declares the `KUNIT_SUITE` static of a `#[kunit_tests]` module, for
/// `__kunit_suite!`.
#[doc(hidden)]
#[macro_export]
macro_rules! __kunit_suite_static {
    ($suite:ident, [$($case:ident),* $(,)?]) => {
        /// The KUnit suite of this module.
        pub static KUNIT_SUITE: $crate::kunit::Suite = $crate::kunit::Suite {
            name: ::core::stringify!($suite),
            cases: &[$(
                $crate::kunit::Case {
                    name: ::core::stringify!($case),
                    run: || $crate::kunit::IntoOutcome::into_outcome($case()),
                },
            )*],
        };
    };
}
