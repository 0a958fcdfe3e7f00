// SPDX-License-Identifier: GPL-2.0

//! KUnit test suites, as our `#[kunit_tests]` expands them on the host.
//!
//! A suite is written once, as a module marked `#[kunit_tests(suite_name)]` whose cases
//! are `#[test]` functions; inside a kernel the same module expands with Linux 7.3's own
//! `#[kunit_tests]`, which registers the suite with KUnit and uses nothing of this
//! module. Ours expands it item for item as 7.3's does, so that a suite builds and
//! asserts alike under both:
//!
//! - From the first case to the end of the module (a case's body, and a helper written
//!   after the first case), `assert!(condition)` and `assert_eq!(left, right)` are
//!   KUnit's: a failure fails the case running and ends it. They take no message (one
//!   does not build), a `bool` condition, and operands that compare with `==` (no
//!   `Debug` needed). Before the first case and outside the module they are `core`'s,
//!   as `assert_ne!` is everywhere: in a kernel a failure there is a kernel panic, not
//!   a failed case, so a helper function checks by returning an `Err`.
//! - A case returns `()` or any `Result`; an `Err` fails it.
//! - A case whose `#[cfg]`s are false is still listed, and reported skipped.
//!
//! What the host needs instead: the module is built whatever the configuration (7.3's
//! only under `CONFIG_KUNIT`); the suite is the module's `KUNIT_SUITE`, a [`Suite`] that
//! the host's runner (`kernel::host::kunit`) executes and reports as KTAP version 1; each
//! case's wrapper, `kunit_rust_wrapper_<case>`, is also a `cargo test` test (ignored when
//! the case is configured out); and a failure is a panic, which the runner and the
//! harness both report with the file and line of the assertion (and the operands of an
//! `assert_eq!` or the `Err` of a case, when they are `Debug`), where KUnit ends the
//! case's thread.
//!
//! # Examples
//!
//! ```
//! #[kernel::kunit_tests(example)]
//! mod tests {
//!     /// Before the first case: `core`'s `assert!`, which takes a message.
//!     pub fn checks_before(x: u32) {
//!         assert!(x == 1, "x is {x}");
//!     }
//!
//!     #[test]
//!     fn passes() {
//!         assert_eq!(1 + 1, 2);
//!     }
//!
//!     #[test]
//!     fn fails() {
//!         assert!(1 + 1 == 3);
//!     }
//! #   pub const FAILS_AT: u32 = line!() - 2;
//!
//!     #[test]
//!     fn fails_in_a_helper_before() {
//!         checks_before(2);
//!     }
//!
//!     #[test]
//!     fn fails_in_a_helper_after() {
//!         checks_after(2);
//!     }
//!
//!     #[test]
//!     fn returns_err() -> Result<u8, ()> {
//!         Err(())
//!     }
//!
//!     #[test]
//!     #[cfg(any())]
//!     fn configured_out() {
//!         assert!(false);
//!     }
//!
//!     /// After the first case: KUnit's `assert!`.
//!     fn checks_after(x: u32) {
//!         assert!(x == 1);
//!     }
//! }
//!
//! let mut ktap = Vec::new();
//! let totals = kernel::host::kunit::run(&[&tests::KUNIT_SUITE], &mut ktap)?;
//! let ktap = String::from_utf8(ktap).unwrap();
//! assert_eq!((totals.passed, totals.failed, totals.skipped), (1, 4, 1));
//! assert!(ktap.contains("    ok 1 passes\n"));
//! // KUnit's assertion in a case's body: the file and line of the assertion.
//! let at = format!("kunit.rs:{}: ", tests::FAILS_AT);
//! assert!(ktap.contains(&format!("{at}Expected 1 + 1 == 3 to be true, but is false\n")));
//! // `core`'s, in the helper before the first case.
//! assert!(ktap.contains(": x is 2\n"));
//! // KUnit's, in the helper after it.
//! assert!(ktap.contains(": Expected x == 1 to be true, but is false\n"));
//! assert!(ktap.contains("    # returns_err:     returns_err() == Err(())\n"));
//! assert!(ktap.contains("    ok 6 configured_out # SKIP\n"));
//! # Ok::<(), std::io::Error>(())
//! ```

#![expect(
    clippy::test_attr_in_doctest,
    reason = "the example's `#[test]`s are the cases of a suite, which it runs"
)]

use core::fmt::{
    self,
    Debug, //
};

/// One test case: a name and the function that runs it.
#[derive(Clone, Copy)]
pub struct Case {
    /// The name KTAP reports.
    pub name: &'static str,
    /// Runs the case: a failed assertion or an `Err` from the case panics.
    pub run: fn() -> Status,
}

/// How a case that did not fail ended, as KUnit's `kunit_status` says it (a failure is a
/// panic on the host).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// The case ran to its end.
    Success,
    /// The case is configured out (its `#[cfg]`s are false).
    Skipped,
}

/// A wrapper is also the case's `cargo test` test; it only returns if the case passed or
/// was skipped.
#[cfg(feature = "host")]
impl std::process::Termination for Status {
    fn report(self) -> std::process::ExitCode {
        std::process::ExitCode::SUCCESS
    }
}

/// A suite: a named list of cases.
#[derive(Clone, Copy)]
pub struct Suite {
    /// The name KTAP reports.
    pub name: &'static str,
    /// The cases, in order.
    pub cases: &'static [Case],
}

/// What a case may return: `()` or any `Result`, as in 7.3.
trait TestResult {
    fn is_test_result_ok(&self) -> bool;
}

impl TestResult for () {
    fn is_test_result_ok(&self) -> bool {
        true
    }
}

impl<T, E> TestResult for core::result::Result<T, E> {
    fn is_test_result_ok(&self) -> bool {
        self.is_ok()
    }
}

/// Whether a case's return value passes it, as 7.3's function of that name says.
#[doc(hidden)]
#[expect(
    private_bounds,
    reason = "only `()` and `Result` may be returned, as in 7.3"
)]
pub fn is_test_result_ok(t: impl TestResult) -> bool {
    t.is_test_result_ok()
}

/// Ends the case `name` that returned `result` (`shown`, if it is `Debug`): panics, at
/// the caller's location, if `result` is an `Err`.
#[doc(hidden)]
#[track_caller]
#[expect(
    private_bounds,
    reason = "only `()` and `Result` may be returned, as in 7.3"
)]
pub fn case_ended(result: &impl TestResult, name: &str, shown: Option<&dyn Debug>) -> Status {
    if result.is_test_result_ok() {
        return Status::Success;
    }
    match shown {
        Some(value) => panic!(
            "Expected is_test_result_ok({name}()) to be true, but is false\n    {name}() == {value:?}"
        ),
        None => panic!("Expected is_test_result_ok({name}()) to be true, but is false"),
    }
}

/// Fails the case running: `condition` is false. Panics at the caller's location.
#[doc(hidden)]
#[cold]
#[track_caller]
pub fn assertion_failed(condition: &str) -> ! {
    panic!("Expected {condition} to be true, but is false")
}

/// Fails the case running: `left == right` is false (each operand with its text, and its
/// value if it is `Debug`). Panics at the caller's location.
#[doc(hidden)]
#[cold]
#[track_caller]
pub fn assertion_eq_failed(
    left: (&str, Option<&dyn Debug>),
    right: (&str, Option<&dyn Debug>),
) -> ! {
    panic!(
        "Expected {} == {} to be true, but is false{}{}",
        left.0,
        right.0,
        Operand(left),
        Operand(right)
    )
}

/// An operand of a failed `assert_eq!`: its value on a line of its own, if it has one
/// and it is not the operand's own text (a literal), as KUnit prints one.
struct Operand<'a>((&'a str, Option<&'a dyn Debug>));

impl fmt::Display for Operand<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            (text, Some(value)) => {
                let value = alloc_crate::format!("{value:?}");
                if value == text {
                    return Ok(());
                }
                write!(f, "\n    {text} == {value}")
            }
            (_, None) => Ok(()),
        }
    }
}

/// A value that [`__kunit_show!`] shows if its type is `Debug`.
#[doc(hidden)]
pub struct Shown<'a, T>(pub &'a T);

/// [`Shown`] of a `Debug` type: its value.
#[doc(hidden)]
pub trait ShowDebug<'a> {
    /// The value.
    fn show(&self) -> Option<&'a dyn Debug>;
}

impl<'a, T: Debug> ShowDebug<'a> for Shown<'a, T> {
    fn show(&self) -> Option<&'a dyn Debug> {
        Some(self.0)
    }
}

/// [`Shown`] of any other type: nothing.
#[doc(hidden)]
pub trait ShowNothing<'a> {
    /// Nothing.
    fn show(&self) -> Option<&'a dyn Debug>;
}

impl<'a, T> ShowNothing<'a> for &Shown<'a, T> {
    fn show(&self) -> Option<&'a dyn Debug> {
        None
    }
}

/// `Some(&dyn Debug)` of `*$value` if its type is `Debug`, else `None`: nothing is
/// required of the type, as 7.3's assertions require nothing but `PartialEq`.
#[doc(hidden)]
#[macro_export]
macro_rules! __kunit_show {
    ($value:expr) => {{
        #[allow(unused_imports)]
        use $crate::kunit::{
            ShowDebug as _,
            ShowNothing as _, //
        };
        (&$crate::kunit::Shown($value)).show()
    }};
}

/// `assert!` from the first case of a `#[kunit_tests]` module on: a boolean condition
/// (not a `Not` of one) and no message, as 7.3's `kunit_assert!` takes.
#[doc(hidden)]
#[macro_export]
macro_rules! __kunit_assert {
    ($condition:expr $(,)?) => {
        'out: {
            if $condition {
                break 'out;
            }
            $crate::kunit::assertion_failed(::core::stringify!($condition));
        }
    };
}

/// `assert_eq!` from the first case of a `#[kunit_tests]` module on: two operands that
/// compare with `==` (no `Debug` needed) and no message, as 7.3's `kunit_assert_eq!`.
#[doc(hidden)]
#[macro_export]
macro_rules! __kunit_assert_eq {
    ($left:expr, $right:expr $(,)?) => {
        match (&$left, &$right) {
            (left, right) => 'out: {
                if *left == *right {
                    break 'out;
                }
                $crate::kunit::assertion_eq_failed(
                    (::core::stringify!($left), $crate::__kunit_show!(&left)),
                    (::core::stringify!($right), $crate::__kunit_show!(&right)),
                );
            }
        }
    };
}

/// The body of the wrapper of the case `$case`: runs it, and fails it if it returns an
/// `Err`.
#[doc(hidden)]
#[macro_export]
macro_rules! __kunit_case {
    ($case:ident) => {{
        let result = $case();
        $crate::kunit::case_ended(
            &result,
            ::core::stringify!($case),
            $crate::__kunit_show!(&result),
        )
    }};
}

/// Declares `KUNIT_SUITE`, the suite `$suite` of the cases `$cases` (an array of
/// [`Case`]), where 7.3's `kunit_unsafe_test_suite!` registers one with KUnit.
#[doc(hidden)]
#[macro_export]
macro_rules! __kunit_suite {
    ($suite:ident, $cases:ident) => {
        /// The KUnit suite of this module, for the host's KTAP runner.
        pub static KUNIT_SUITE: $crate::kunit::Suite = $crate::kunit::Suite {
            name: ::core::stringify!($suite),
            cases: &$cases,
        };
    };
}
