// SPDX-License-Identifier: GPL-2.0

//! The freestanding environment (no `host` feature, no model): the crate is `no_std` and
//! the embedding provides the functions below by name, the way the kernel provides
//! `ktime_get`, `fsleep` and `_printk` to its `kernel` crate.

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
