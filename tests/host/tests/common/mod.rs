// SPDX-License-Identifier: GPL-2.0

//! What the tests that run the project's binaries share.

use std::process::Command;

/// Returns a command that runs the binary at `path`: through `VGSP_TEST_RUNNER` when it
/// is set (a cross build's binaries run under `qemu-aarch64`, and a test running under
/// it cannot execute them directly), else directly.
pub fn binary(path: &str) -> Command {
    match std::env::var("VGSP_TEST_RUNNER") {
        Ok(runner) if !runner.trim().is_empty() => {
            let mut words = runner.split_whitespace();
            // PANIC: not empty, checked above.
            let mut cmd = Command::new(words.next().unwrap());
            cmd.args(words).arg(path);
            cmd
        }
        _ => Command::new(path),
    }
}
