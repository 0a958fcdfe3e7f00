// SPDX-License-Identifier: GPL-2.0

//! The host's KUnit executor: runs suites and prints KTAP version 1.
//!
//! The output has the shape the kernel's KUnit prints (4-space indented subtests, a
//! `# Subtest:` line per suite, a diagnostic line per failure, `# SKIP` after a case
//! configured out) so that `tools/testing/kunit/kunit.py parse` reads it. The suites are
//! the `KUNIT_SUITE` statics that `#[kunit_tests]` declares ([`crate::kunit`]).

use std::{cell::RefCell, format, io::Write, panic, string::String, vec::Vec};

use crate::kunit::{
    Status,
    Suite, //
};

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
    /// Cases configured out.
    pub skipped: usize,
}

/// Runs one case, catching a failed assertion (an `Err` from the case is one); returns
/// the diagnostic on failure.
fn run_case(run: fn() -> Status) -> Result<Status, String> {
    panic::catch_unwind(run).map_err(|_| {
        LAST_PANIC
            .with(|p| p.borrow_mut().take())
            .unwrap_or_else(|| String::from("panicked"))
    })
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
            // As KUnit's: failed if a case failed, else passed if a case passed, else
            // skipped.
            let mut failed = false;
            let mut passed = false;
            for (j, case) in suite.cases.iter().enumerate() {
                match run_case(case.run) {
                    Ok(Status::Success) => {
                        totals.passed += 1;
                        passed = true;
                        writeln!(out, "    ok {} {}", j + 1, case.name)?;
                    }
                    Ok(Status::Skipped) => {
                        totals.skipped += 1;
                        writeln!(out, "    ok {} {} # SKIP", j + 1, case.name)?;
                    }
                    Err(diag) => {
                        totals.failed += 1;
                        failed = true;
                        let lines: Vec<&str> = diag.lines().collect();
                        for line in lines {
                            writeln!(out, "    # {}: {}", case.name, line)?;
                        }
                        writeln!(out, "    not ok {} {}", j + 1, case.name)?;
                    }
                }
                out.flush()?;
            }
            match (failed, passed) {
                (true, _) => writeln!(out, "not ok {} {}", i + 1, suite.name)?,
                (false, true) => writeln!(out, "ok {} {}", i + 1, suite.name)?,
                (false, false) => writeln!(out, "ok {} {} # SKIP", i + 1, suite.name)?,
            }
        }
        out.flush()
    })();

    panic::set_hook(previous);
    result.map(|()| totals)
}
