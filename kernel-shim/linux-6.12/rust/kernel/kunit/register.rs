// SPDX-License-Identifier: GPL-2.0

//! `#[kunit_tests]` suites registered with KUnit: the in-kernel flavour of the macros the
//! attribute expands to.
//!
//! `__kunit_suite!` declares the suite's `KUNIT_SUITE` (the description shared with the
//! host, [`super::Suite`]) and, from it, a `struct kunit_suite` whose cases all run
//! through one `run_case` function, with a pointer to it in the `.kunit_test_suites`
//! section where KUnit's executor finds built-in suites. The assertion macros fail the
//! running case the way `KUNIT_ASSERT_*` does: a diagnostic line, the case marked
//! failed, and the test thread ended.

use core::fmt;

use crate::{
    bindings,
    str::CStr, //
};

use super::Suite;

/// The longest suite name `struct kunit_suite` holds, NUL included.
const NAME_LEN: usize = 256;

/// Returns the `struct kunit_case` of a case called `name` (NUL-terminated).
#[doc(hidden)]
pub const fn __case(
    name: &'static str,
    run_case: unsafe extern "C" fn(*mut bindings::kunit),
) -> bindings::kunit_case {
    // SAFETY: `kunit_case` is plain C data for which all zeroes is the empty value.
    let mut case: bindings::kunit_case = unsafe { core::mem::zeroed() };
    case.name = name.as_ptr().cast();
    case.run_case = Some(run_case);
    case
}

/// Returns the all-zero `struct kunit_case` that ends a case array.
#[doc(hidden)]
pub const fn __case_end() -> bindings::kunit_case {
    // SAFETY: As above.
    unsafe { core::mem::zeroed() }
}

/// Returns the `struct kunit_suite` called `name` with the cases at `cases`.
///
/// A name longer than `struct kunit_suite` holds fails the build.
#[doc(hidden)]
pub const fn __suite(name: &str, cases: *mut bindings::kunit_case) -> bindings::kunit_suite {
    // SAFETY: `kunit_suite` is plain C data for which all zeroes is the empty value.
    let mut suite: bindings::kunit_suite = unsafe { core::mem::zeroed() };
    let bytes = name.as_bytes();
    assert!(bytes.len() < NAME_LEN, "KUnit suite name too long");
    let mut i = 0;
    while i < bytes.len() {
        // CAST: a byte of an ASCII identifier, whatever the sign of `c_char`.
        suite.name[i] = bytes[i] as _;
        i += 1;
    }
    suite.test_cases = cases;
    suite
}

/// Runs the case of `suite` that KUnit is running as `test`.
///
/// # Safety
///
/// `test` must be the live `struct kunit` KUnit passed to the case's `run_case`.
#[doc(hidden)]
pub unsafe fn __run_case(test: *mut bindings::kunit, suite: &Suite) {
    // SAFETY: KUnit sets `test->name` to the NUL-terminated name of the case it runs,
    // which it took from our `struct kunit_case`.
    let name = unsafe { CStr::from_char_ptr((*test).name) };
    let Some(case) = suite
        .cases
        .iter()
        .find(|c| c.name.as_bytes() == name.as_bytes())
    else {
        // SAFETY: `test` is live (the caller's contract).
        unsafe { fail(test, format_args!("no case {} in {}", name, suite.name)) };
        return;
    };
    if let Err(e) = (case.run)() {
        // SAFETY: `test` is live (the caller's contract).
        unsafe { fail(test, format_args!("{}: returned {:?}", case.name, e)) };
    }
}

/// Prints `msg` as a diagnostic of the running case and marks it failed.
///
/// # Safety
///
/// `test` must be the live `struct kunit` of the running case.
unsafe fn fail(test: *mut bindings::kunit, msg: fmt::Arguments<'_>) {
    super::err(format_args!("    # {msg}\n"));
    // SAFETY: `test` is live; KUnit reads `status` once the case has returned, and
    // `kunit_set_failure` is this store (`WRITE_ONCE`).
    unsafe {
        core::ptr::write_volatile(
            core::ptr::addr_of_mut!((*test).status),
            bindings::kunit_status_KUNIT_FAILURE,
        )
    };
}

/// Fails the running case for an assertion at `file:line` and ends the test thread, as
/// `KUNIT_ASSERT_*`. Outside a KUnit test this is a panic.
#[doc(hidden)]
pub fn __fail(file: &str, line: u32, msg: fmt::Arguments<'_>) -> ! {
    // SAFETY: `kunit_get_current_test` has no preconditions; it returns the test the
    // current thread runs, or null.
    let test = unsafe { bindings::kunit_get_current_test() };
    if test.is_null() {
        panic!("{file}:{line}: {msg}");
    }
    // SAFETY: `test` is the live test of this thread, and `__kunit_abort` ends this thread
    // (KUnit runs each case on a thread of its own); nothing on it runs again.
    unsafe {
        fail(test, format_args!("ASSERTION FAILED at {file}:{line}\n    {msg}"));
        bindings::__kunit_abort(test)
    }
}

/// Declares the suite of a `#[kunit_tests]` module and registers it with KUnit.
#[doc(hidden)]
#[macro_export]
macro_rules! __kunit_suite {
    ($suite:ident, [$($case:ident),* $(,)?]) => {
        $crate::__kunit_suite_static!($suite, [$($case),*]);

        const _: () = {
            unsafe extern "C" fn run_case(test: *mut $crate::bindings::kunit) {
                // SAFETY: KUnit calls `run_case` with the test it runs.
                unsafe { $crate::kunit::__run_case(test, &KUNIT_SUITE) }
            }

            static mut CASES: [$crate::bindings::kunit_case;
                [$(::core::stringify!($case)),*].len() + 1] = [
                $(
                    $crate::kunit::__case(
                        ::core::concat!(::core::stringify!($case), "\0"),
                        run_case,
                    ),
                )*
                $crate::kunit::__case_end(),
            ];

            static mut SUITE: $crate::bindings::kunit_suite = $crate::kunit::__suite(
                ::core::stringify!($suite),
                (&raw mut CASES).cast(),
            );

            // KUnit's executor runs every suite this section points to at boot.
            #[used]
            #[link_section = ".kunit_test_suites"]
            static mut ENTRY: *mut $crate::bindings::kunit_suite = &raw mut SUITE;
        };
    };
}

/// `assert!` in a `#[kunit_tests]` module: fails the case as `KUNIT_ASSERT_TRUE`.
#[doc(hidden)]
#[macro_export]
macro_rules! __kunit_assert {
    ($cond:expr $(,)?) => {
        if !$cond {
            $crate::kunit::__fail(
                ::core::file!(),
                ::core::line!(),
                ::core::format_args!("assertion failed: {}", ::core::stringify!($cond)),
            )
        }
    };
    ($cond:expr, $($arg:tt)+) => {
        if !$cond {
            $crate::kunit::__fail(::core::file!(), ::core::line!(), ::core::format_args!($($arg)+))
        }
    };
}

/// `assert_eq!` in a `#[kunit_tests]` module: fails the case as `KUNIT_ASSERT_EQ`.
#[doc(hidden)]
#[macro_export]
macro_rules! __kunit_assert_eq {
    ($left:expr, $right:expr $(,)?) => {
        $crate::__kunit_assert_eq!(@check $left, $right, ::core::format_args!("`left == right`"))
    };
    ($left:expr, $right:expr, $($arg:tt)+) => {
        $crate::__kunit_assert_eq!(@check $left, $right, ::core::format_args!($($arg)+))
    };
    (@check $left:expr, $right:expr, $what:expr) => {
        match (&$left, &$right) {
            (left, right) => {
                if !(*left == *right) {
                    $crate::kunit::__fail(
                        ::core::file!(),
                        ::core::line!(),
                        ::core::format_args!(
                            "assertion failed: {}\n    left: {:?}\n    right: {:?}",
                            $what,
                            left,
                            right
                        ),
                    )
                }
            }
        }
    };
}

/// `assert_ne!` in a `#[kunit_tests]` module: fails the case as `KUNIT_ASSERT_NE`.
#[doc(hidden)]
#[macro_export]
macro_rules! __kunit_assert_ne {
    ($left:expr, $right:expr $(,)?) => {
        $crate::__kunit_assert_ne!(@check $left, $right, ::core::format_args!("`left != right`"))
    };
    ($left:expr, $right:expr, $($arg:tt)+) => {
        $crate::__kunit_assert_ne!(@check $left, $right, ::core::format_args!($($arg)+))
    };
    (@check $left:expr, $right:expr, $what:expr) => {
        match (&$left, &$right) {
            (left, right) => {
                if *left == *right {
                    $crate::kunit::__fail(
                        ::core::file!(),
                        ::core::line!(),
                        ::core::format_args!("assertion failed: {}\n    both: {:?}", $what, left),
                    )
                }
            }
        }
    };
}
