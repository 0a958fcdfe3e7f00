// SPDX-License-Identifier: GPL-2.0

//! The hang rule of a boot against the emulated GH100: a boot hangs when nothing
//! progresses for [`QUIET`] — no register access or doorbell reaches the device (its
//! activity count, `vgsp_gh100::activity`) and no byte reaches the guest's console —
//! or when it overruns its cap (the device runner's `--timeout`, [`super`]).
//!
//! Why [`QUIET`] is 15 s: the driver's longest silent wait is Linux 7.3's
//! `Cmdq::RECEIVE_TIMEOUT`, 5 s of polling shared memory (no register, no line; the
//! faults that withhold a reply). Measured on 2026-12-06, 2 shared vCPUs loaded by other
//! builds, four boots side by side: the longest quiet stretch of a boot that ended was
//! 5.3 s on x86_64, 5.0 s on arm64 (those waits; each boot's is in its `watch.log`);
//! 15 s leaves twice as much again for a starved vCPU (a fault boot labelled a hang for
//! want of it would make the fault table differ from run to run). The GSP's own messages
//! do not count: a hostile GSP that keeps talking to a stuck driver (`chatty`) is no
//! progress.

use std::time::Duration;

/// How long a boot may show no progress before it is a hang.
pub(crate) const QUIET: Duration = Duration::from_secs(15);

/// What a boot has shown so far: the device's count of register accesses, and the
/// console's length in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Signs {
    /// The driver's register accesses, doorbells among them, as the device counted them.
    pub(crate) accesses: u64,
    /// The console's bytes.
    pub(crate) console: u64,
}

/// Watches a boot's [`Signs`] and decides when it hangs.
pub(crate) struct Watch {
    quiet: Duration,
    last: Signs,
    /// When the signs last changed, from the boot's start.
    changed: Duration,
    /// The longest quiet stretch seen.
    longest: Duration,
}

impl Watch {
    /// A watch that calls `quiet` without progress a hang.
    pub(crate) fn new(quiet: Duration) -> Self {
        Self {
            quiet,
            last: Signs::default(),
            changed: Duration::ZERO,
            longest: Duration::ZERO,
        }
    }

    /// Takes the signs seen `at` (from the boot's start, never decreasing); returns how
    /// long nothing progressed when that is a hang, `None` while the boot progresses.
    pub(crate) fn observe(&mut self, at: Duration, signs: Signs) -> Option<Duration> {
        let quiet = at.saturating_sub(self.changed);
        self.longest = self.longest.max(quiet);
        if signs != self.last {
            self.last = signs;
            self.changed = at;
            return None;
        }
        (quiet >= self.quiet).then_some(quiet)
    }

    /// Returns the longest quiet stretch seen so far (up to the last observation).
    pub(crate) fn longest(&self) -> Duration {
        self.longest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    const fn signs(accesses: u64, console: u64) -> Signs {
        Signs { accesses, console }
    }

    #[test]
    fn a_boot_that_keeps_changing_never_hangs() {
        let mut watch = Watch::new(s(10));
        for t in 0..100 {
            assert_eq!(watch.observe(s(t), signs(t, 0)), None);
        }
    }

    #[test]
    fn a_quiet_stretch_shorter_than_the_rule_is_no_hang() {
        let mut watch = Watch::new(s(10));
        assert_eq!(watch.observe(s(1), signs(5, 100)), None);
        assert_eq!(watch.observe(s(10), signs(5, 100)), None);
        assert_eq!(watch.observe(s(11), signs(6, 100)), None);
        assert_eq!(watch.observe(s(20), signs(6, 100)), None);
        assert_eq!(watch.longest(), s(10));
    }

    #[test]
    fn a_quiet_stretch_as_long_as_the_rule_is_a_hang_of_its_length() {
        let mut watch = Watch::new(s(10));
        assert_eq!(watch.observe(s(2), signs(5, 100)), None);
        assert_eq!(watch.observe(s(12), signs(5, 100)), Some(s(10)));
        assert_eq!(watch.observe(s(13), signs(5, 100)), Some(s(11)));
    }

    #[test]
    fn a_console_line_alone_is_progress() {
        let mut watch = Watch::new(s(10));
        assert_eq!(watch.observe(s(1), signs(5, 100)), None);
        assert_eq!(watch.observe(s(9), signs(5, 180)), None);
        assert_eq!(watch.observe(s(18), signs(5, 180)), None);
        assert_eq!(watch.observe(s(19), signs(5, 180)), Some(s(10)));
    }

    #[test]
    fn a_boot_silent_from_its_start_hangs_after_the_rule() {
        let mut watch = Watch::new(s(10));
        assert_eq!(watch.observe(s(9), Signs::default()), None);
        assert_eq!(watch.observe(s(10), Signs::default()), Some(s(10)));
    }
}
