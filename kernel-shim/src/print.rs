// SPDX-License-Identifier: GPL-2.0

//! Printing: `pr_info!` and friends.
//!
//! Lines go to the environment's log (standard error on the host, `printk` in the
//! kernel), prefixed with the name of the calling crate as the kernel prefixes them with
//! the module's: like the kernel's macros, these need a `__LOG_PREFIX: &[u8]` constant
//! (the name, NUL-terminated) at the root of the crate that calls them. On the host
//! `pr_debug!` prints only when `VGSP_DEBUG` is set.

#[doc(hidden)]
pub fn call_printk(level: &str, module_name: &[u8], args: core::fmt::Arguments<'_>) {
    let name = module_name.strip_suffix(b"\0").unwrap_or(module_name);
    let name = core::str::from_utf8(name).unwrap_or("?");
    crate::env::printk(level, format_args!("{name}: {args}"));
}

/// Prints an error-level message.
#[macro_export]
#[expect(
    clippy::crate_in_macro_def,
    reason = "`__LOG_PREFIX` is the caller's, as in the kernel's macros"
)]
macro_rules! pr_err {
    ($($arg:tt)*) => { $crate::print::call_printk("err", crate::__LOG_PREFIX, format_args!($($arg)*)) };
}

/// Prints a warning-level message.
#[macro_export]
#[expect(
    clippy::crate_in_macro_def,
    reason = "`__LOG_PREFIX` is the caller's, as in the kernel's macros"
)]
macro_rules! pr_warn {
    ($($arg:tt)*) => { $crate::print::call_printk("warn", crate::__LOG_PREFIX, format_args!($($arg)*)) };
}

/// Prints an info-level message.
#[macro_export]
#[expect(
    clippy::crate_in_macro_def,
    reason = "`__LOG_PREFIX` is the caller's, as in the kernel's macros"
)]
macro_rules! pr_info {
    ($($arg:tt)*) => { $crate::print::call_printk("info", crate::__LOG_PREFIX, format_args!($($arg)*)) };
}

/// Prints a debug-level message.
#[macro_export]
#[expect(
    clippy::crate_in_macro_def,
    reason = "`__LOG_PREFIX` is the caller's, as in the kernel's macros"
)]
macro_rules! pr_debug {
    ($($arg:tt)*) => { $crate::print::call_printk("debug", crate::__LOG_PREFIX, format_args!($($arg)*)) };
}
