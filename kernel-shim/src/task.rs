// SPDX-License-Identifier: GPL-2.0

//! Tasks, as far as Linux 7.3's `kernel::task` is used here: [`might_sleep`].

/// Annotates a function that may sleep, as C's `might_sleep()`.
///
/// Ours checks nothing: the host has no atomic context to sleep in. 7.3's warns (with
/// `CONFIG_DEBUG_ATOMIC_SLEEP`) when called where sleeping is not allowed.
#[track_caller]
#[inline]
pub fn might_sleep() {}
