// SPDX-License-Identifier: GPL-2.0

//! Running programs, and what the commands print about them: progress lines, the end of
//! an output or a log.

use std::{
    fs::{
        self,
        File, //
    },
    path::Path,
    process::{
        Command,
        Stdio, //
    },
    thread,
    time::{
        Duration,
        Instant, //
    },
};

/// How often a long build step says what it is doing.
const PROGRESS_EVERY: Duration = Duration::from_secs(30);

/// Progress lines of one command, with the time since it started.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Progress {
    command: &'static str,
    start: Instant,
}

impl Progress {
    /// Starts the clock of `command`.
    pub(crate) fn new(command: &'static str) -> Self {
        Self {
            command,
            start: Instant::now(),
        }
    }

    /// Prints a progress line on standard error.
    pub(crate) fn say(&self, what: &str) {
        eprintln!(
            "xtask: {} [{:4} s] {what}",
            self.command,
            self.start.elapsed().as_secs()
        );
    }
}

/// Returns the number of make jobs: the number of CPUs.
pub(crate) fn jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Runs `cmd`, failing with what it was and what it printed.
pub(crate) fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "{cmd:?} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ))
}

/// Returns the last `n` lines of `text`.
pub(crate) fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Returns the last `n` lines of `log`.
pub(crate) fn tail(log: &Path, n: usize) -> String {
    last_lines(&fs::read_to_string(log).unwrap_or_default(), n)
}

/// Returns the last build step a kernel build log names (a line such as
/// `  RUSTC L rust/kernel.o`), without its indentation.
fn last_step(log: &str) -> &str {
    log.lines()
        .rev()
        .find(|l| {
            l.strip_prefix("  ")
                .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_uppercase()))
        })
        .map_or("", str::trim)
}

/// Runs `cmd` with its output in `log` (truncated first), saying every 30 s what it is
/// doing.
///
/// # Errors
///
/// - The command cannot start, or fails (the error names `what` and the log).
pub(crate) fn run_logged(
    cmd: &mut Command,
    log: &Path,
    what: &str,
    progress: Progress,
) -> Result<(), String> {
    let file = File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = file
        .try_clone()
        .map_err(|e| format!("{}: {e}", log.display()))?;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    let started = Instant::now();
    let mut next = PROGRESS_EVERY;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => return Err(format!("waiting for {what}: {e}")),
        }
        if started.elapsed() >= next {
            next += PROGRESS_EVERY;
            let text = fs::read_to_string(log).unwrap_or_default();
            progress.say(&format!(
                "  {what}, {} s: {}",
                started.elapsed().as_secs(),
                last_step(&text)
            ));
        }
        thread::sleep(Duration::from_millis(200));
    };
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status}); log: {}", log.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_lines_of_a_text() {
        assert_eq!(last_lines("a\nb\nc\n", 2), "b\nc");
        assert_eq!(last_lines("a\n", 5), "a");
        assert_eq!(last_lines("", 5), "");
    }

    #[test]
    fn names_the_last_build_step_of_a_log() {
        let log = "make[1]: Entering directory\n  RUSTC L rust/core.o\n  BINDGEN rust/bindings\nnote: x\n";
        assert_eq!(last_step(log), "BINDGEN rust/bindings");
        assert_eq!(last_step("nothing\n"), "");
    }
}
