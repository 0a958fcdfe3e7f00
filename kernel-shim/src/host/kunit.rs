// SPDX-License-Identifier: GPL-2.0

//! The host's KUnit executor: runs suites and prints KTAP version 1.
//!
//! The output has the shape the kernel's KUnit prints (4-space indented subtests, a
//! `# Subtest:` line per suite, a diagnostic line per failure) so that
//! `tools/testing/kunit/kunit.py parse` reads it.

use std::{cell::RefCell, format, io::Write, panic, string::String, vec::Vec};

use crate::kunit::Suite;

std::thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// The totals of one run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Cases that passed.
    pub passed: usize,
    /// Cases that failed.
    pub failed: usize,
}

/// Runs one case, catching a failed assertion; returns the diagnostic on failure.
fn run_case(run: fn() -> crate::error::Result) -> Option<String> {
    match panic::catch_unwind(run) {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(format!("returned {e:?}")),
        Err(_) => Some(
            LAST_PANIC
                .with(|p| p.borrow_mut().take())
                .unwrap_or_else(|| String::from("panicked")),
        ),
    }
}

/// Runs `suites` in order and writes their results to `out` as KTAP version 1.
///
/// # Errors
///
/// Any error writing to `out`.
pub fn run(suites: &[&Suite], out: &mut dyn Write) -> std::io::Result<Totals> {
    let previous = panic::take_hook();
    panic::set_hook(std::boxed::Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| String::from(*s))
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let at = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let text = format!("ASSERTION FAILED at {at}: {msg}");
        LAST_PANIC.with(|p| *p.borrow_mut() = Some(text));
    }));

    let mut totals = Totals::default();
    let result = (|| {
        writeln!(out, "KTAP version 1")?;
        writeln!(out, "1..{}", suites.len())?;
        for (i, suite) in suites.iter().enumerate() {
            writeln!(out, "    KTAP version 1")?;
            writeln!(out, "    # Subtest: {}", suite.name)?;
            writeln!(out, "    1..{}", suite.cases.len())?;
            let mut suite_ok = true;
            for (j, case) in suite.cases.iter().enumerate() {
                match run_case(case.run) {
                    None => {
                        totals.passed += 1;
                        writeln!(out, "    ok {} {}", j + 1, case.name)?;
                    }
                    Some(diag) => {
                        totals.failed += 1;
                        suite_ok = false;
                        let lines: Vec<&str> = diag.lines().collect();
                        for line in lines {
                            writeln!(out, "    # {}: {}", case.name, line)?;
                        }
                        writeln!(out, "    not ok {} {}", j + 1, case.name)?;
                    }
                }
                out.flush()?;
            }
            let verdict = if suite_ok { "ok" } else { "not ok" };
            writeln!(out, "{verdict} {} {}", i + 1, suite.name)?;
        }
        out.flush()
    })();

    panic::set_hook(previous);
    result.map(|()| totals)
}

/// Declares the suite of a `#[kunit_tests]` module: the `KUNIT_SUITE` static the host's
/// KTAP runner ([`crate::host::kunit::run`]) executes.
#[doc(hidden)]
#[macro_export]
macro_rules! __kunit_suite {
    ($suite:ident, [$($case:ident),* $(,)?]) => {
        $crate::__kunit_suite_static!($suite, [$($case),*]);
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
