// SPDX-License-Identifier: GPL-2.0

//! The driver's activity as the device sees it, for a runner that tells a hung driver
//! from a slow one (`cargo xtask upstream boot`, `xtask/src/boot.rs`).
//!
//! - [`Activity`] counts the driver's register accesses: every BAR read or write, the
//!   GSP's doorbell (a write of `NV_PGSP_QUEUE_HEAD`) among them. The GSP's own messages do
//!   not count: a hostile GSP that keeps talking to a stuck driver is no progress.
//! - [`Publisher`] writes the count to a file (`vgsp-gh100 --activity FILE`) when it
//!   changed: one decimal line, replaced whole by a rename, so a reader never sees half a
//!   number ([`parse`]).
//! - [`stop_requested`] is set by `SIGTERM` once [`stop_on_sigterm`] ran: the runner then
//!   ends QEMU and itself as on its timeout, its temporary files removed.
//!
//! The stall rule itself (how long without a change is a hang) is the runner's.

use std::{
    fs,
    io,
    path::{
        Path,
        PathBuf, //
    },
    sync::{
        atomic::{
            AtomicBool,
            AtomicU64,
            Ordering, //
        },
        Arc,
    }, //
};

/// A count of the driver's register accesses, shared between the device and its runner.
#[derive(Clone, Default)]
pub struct Activity(Arc<AtomicU64>);

impl Activity {
    /// Counts one register access.
    pub fn note(&self) {
        // ORDERING: a counter read for its change alone; nothing is published through it.
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// Returns the accesses counted so far.
    pub fn count(&self) -> u64 {
        // ORDERING: as in `note`.
        self.0.load(Ordering::Relaxed)
    }
}

/// Writes an [`Activity`]'s count to a file when it changed.
pub struct Publisher {
    path: PathBuf,
    scratch: PathBuf,
    last: Option<u64>,
}

impl Publisher {
    /// A publisher to `path`; its scratch file is `path` with `.new` appended.
    pub fn new(path: &Path) -> Self {
        let mut scratch = path.as_os_str().to_owned();
        scratch.push(".new");
        Self {
            path: path.to_path_buf(),
            scratch: scratch.into(),
            last: None,
        }
    }

    /// Writes `count` unless it is the count last written.
    ///
    /// # Errors
    ///
    /// The file cannot be written or renamed.
    pub fn publish(&mut self, count: u64) -> io::Result<()> {
        if self.last == Some(count) {
            return Ok(());
        }
        fs::write(&self.scratch, format!("{count}\n"))?;
        fs::rename(&self.scratch, &self.path)?;
        self.last = Some(count);
        Ok(())
    }
}

/// Reads a count [`Publisher`] wrote; `None` for anything else.
pub fn parse(text: &str) -> Option<u64> {
    text.strip_suffix('\n')?.parse().ok()
}

/// Set by `SIGTERM` once [`stop_on_sigterm`] installed its handler.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigterm(_signal: libc::c_int) {
    // ORDERING: a flag polled by the runner's loop; it orders nothing else.
    STOP.store(true, Ordering::Relaxed);
}

/// Makes `SIGTERM` set [`stop_requested`] instead of ending the process.
///
/// # Errors
///
/// The handler cannot be installed.
pub fn stop_on_sigterm() -> io::Result<()> {
    // SAFETY: `sigaction` is plain data, for which all zeroes is a valid value.
    let mut action: libc::sigaction = unsafe { core::mem::zeroed() };
    action.sa_sigaction = on_sigterm as extern "C" fn(libc::c_int) as libc::sighandler_t;
    action.sa_flags = libc::SA_RESTART;
    // SAFETY: `action` is a valid `sigaction` whose handler only stores to an atomic
    // (async-signal-safe); the old action is not asked for.
    if unsafe { libc::sigaction(libc::SIGTERM, &action, core::ptr::null_mut()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Returns whether `SIGTERM` arrived since [`stop_on_sigterm`].
pub fn stop_requested() -> bool {
    // ORDERING: as in `on_sigterm`.
    STOP.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_every_access_through_every_clone() {
        let activity = Activity::default();
        let device = activity.clone();
        device.note();
        device.note();
        assert_eq!(activity.count(), 2);
    }

    #[test]
    fn publishes_a_count_a_reader_parses_and_only_when_it_changed() {
        let dir = std::env::temp_dir().join(format!("gh100-activity-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("activity");
        let mut publisher = Publisher::new(&path);
        publisher.publish(7).unwrap();
        assert_eq!(parse(&fs::read_to_string(&path).unwrap()), Some(7));
        fs::remove_file(&path).unwrap();
        publisher.publish(7).unwrap();
        assert!(!path.exists(), "an unchanged count is not written again");
        publisher.publish(8).unwrap();
        assert_eq!(parse(&fs::read_to_string(&path).unwrap()), Some(8));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_partial_or_foreign_text_is_no_count() {
        assert_eq!(parse("12"), None);
        assert_eq!(parse(""), None);
        assert_eq!(parse("x\n"), None);
        assert_eq!(parse("12\n"), Some(12));
    }
}
