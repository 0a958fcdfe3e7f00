// SPDX-License-Identifier: GPL-2.0

//! Printing: `pr_info!` and friends.
//!
//! Lines go to the environment's log (standard error on the host, `printk` in the
//! kernel). On the host `pr_debug!` prints only when `VGSP_DEBUG` is set.

#[doc(hidden)]
pub fn call_printk(level: &str, args: core::fmt::Arguments<'_>) {
    crate::env::printk(level, args);
}

/// Prints an error-level message.
#[macro_export]
macro_rules! pr_err {
    ($($arg:tt)*) => { $crate::print::call_printk("err", format_args!($($arg)*)) };
}

/// Prints a warning-level message.
#[macro_export]
macro_rules! pr_warn {
    ($($arg:tt)*) => { $crate::print::call_printk("warn", format_args!($($arg)*)) };
}

/// Prints an info-level message.
#[macro_export]
macro_rules! pr_info {
    ($($arg:tt)*) => { $crate::print::call_printk("info", format_args!($($arg)*)) };
}

/// Prints a debug-level message.
#[macro_export]
macro_rules! pr_debug {
    ($($arg:tt)*) => { $crate::print::call_printk("debug", format_args!($($arg)*)) };
}
