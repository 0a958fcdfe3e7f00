// SPDX-License-Identifier: GPL-2.0

//! The environment the shim runs in: the clock, sleeping and the log.
//!
//! With the `host` feature these come from [`crate::host`]. Without it the crate is
//! `no_std` and freestanding, and the embedding provides the functions below by name,
//! the way the kernel provides `ktime_get`, `fsleep` and `_printk` to its `kernel` crate.

#[cfg(loom)]
pub(crate) use crate::model::env::*;

#[cfg(all(feature = "host", not(loom)))]
pub(crate) use crate::host::env::*;

#[cfg(not(any(feature = "host", loom)))]
mod freestanding {
    extern "Rust" {
        fn kernel_shim_ktime_get_ns() -> u64;
        fn kernel_shim_fsleep_ns(ns: u64);
        fn kernel_shim_printk(level: &str, args: core::fmt::Arguments<'_>);
    }

    pub(crate) fn ktime_get_ns() -> u64 {
        // SAFETY: The embedding defines `kernel_shim_ktime_get_ns` with this signature; it has
        // no preconditions.
        unsafe { kernel_shim_ktime_get_ns() }
    }

    pub(crate) fn fsleep_ns(ns: u64) {
        // SAFETY: The embedding defines `kernel_shim_fsleep_ns` with this signature; it has no
        // preconditions.
        unsafe { kernel_shim_fsleep_ns(ns) }
    }

    pub(crate) fn printk(level: &str, args: core::fmt::Arguments<'_>) {
        // SAFETY: The embedding defines `kernel_shim_printk` with this signature; it has no
        // preconditions.
        unsafe { kernel_shim_printk(level, args) }
    }
}

#[cfg(not(any(feature = "host", loom)))]
pub(crate) use freestanding::*;
