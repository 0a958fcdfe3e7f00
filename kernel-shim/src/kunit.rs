// SPDX-License-Identifier: GPL-2.0

//! KUnit-style test suites.
//!
//! A suite is written once as a module marked `#[kunit_tests(suite_name)]` whose cases
//! are `#[test]` functions returning `()` or [`Result`]. The attribute keeps each case a
//! normal `cargo test` test and adds a `KUNIT_SUITE` static describing the suite, which
//! a runner executes and reports as KTAP version 1: [`crate::host::kunit::run`] on the
//! host, the kernel's KUnit executor in a kernel tree.

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

/// Declares the suite of a `#[kunit_tests]` module: the `KUNIT_SUITE` static the host's
/// KTAP runner ([`crate::host::kunit::run`]) executes.
#[doc(hidden)]
#[macro_export]
macro_rules! __kunit_suite {
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

/// `assert!` in a `#[kunit_tests]` module: on the host, the standard one (the runner
/// reports the panic as the case's failure).
#[doc(hidden)]
#[macro_export]
macro_rules! __kunit_assert {
    ($($arg:tt)*) => { ::core::assert!($($arg)*) };
}

/// `assert_eq!` in a `#[kunit_tests]` module: on the host, the standard one.
#[doc(hidden)]
#[macro_export]
macro_rules! __kunit_assert_eq {
    ($($arg:tt)*) => { ::core::assert_eq!($($arg)*) };
}

/// `assert_ne!` in a `#[kunit_tests]` module: on the host, the standard one.
#[doc(hidden)]
#[macro_export]
macro_rules! __kunit_assert_ne {
    ($($arg:tt)*) => { ::core::assert_ne!($($arg)*) };
}
