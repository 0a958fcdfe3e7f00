// SPDX-License-Identifier: GPL-2.0

//! Printing: `pr_info!` and friends, and the device's `dev_info!` and friends.
//!
//! Lines go to the environment's log (standard error on the host, `printk` in the
//! kernel), with the level's name, at the eight levels of the kernel: `emerg`, `alert`,
//! `crit`, `err`, `warn`, `notice`, `info` and `debug`. On the host, `debug` lines are
//! printed only when `VGSP_DEBUG` is set (7.3 prints `pr_debug!` through dynamic debug,
//! and `dev_dbg!` in debug builds only).
//!
//! # `pr_*!`
//!
//! A line is prefixed with the name of the calling crate, as the kernel prefixes it with
//! the module's: like the kernel's macros, these need a `__LOG_PREFIX: &[u8]` constant
//! (the name, NUL-terminated) at the root of the crate that calls them.
//!
//! # `dev_*!`
//!
//! `dev_err!(dev, "...", args...)` and the others take as `dev` anything that is
//! `AsRef<Device<Ctx>>`: a `&Device`, a `&Device<Bound>`, a bus device that converts to
//! one. The line is prefixed with the device, as C's `dev_printk` does: there it is
//! `"<driver> <device>: "` (`nova-core 0000:01:00.0: ...`); here a device has a name and no
//! driver, so it is `"<name>: "`. They need no `__LOG_PREFIX`.
//!
//! ```
//! use kernel::{
//!     device::{
//!         Bound,
//!         Device, //
//!     },
//!     prelude::*,
//! };
//!
//! fn report(dev: &Device<Bound>, seq: u32) {
//!     dev_info!(dev, "booted, sequence {}\n", seq);
//!     dev_dbg!(dev, "sequence {seq:#x}\n");
//!     warn_plain(dev);
//! }
//!
//! fn warn_plain(dev: &Device) {
//!     dev_warn!(dev, "nothing to report\n");
//!     dev_err!(dev, "{} of {} failed\n", 0, 3);
//! }
//!
//! static DEV: Device<Bound> = Device::new("vgsp-doc");
//! report(&DEV, 7);
//! dev_notice!(&DEV, "done\n");
//! ```

use core::fmt;

use crate::device::{
    Device,
    DeviceContext, //
};

/// A log line's text: its prefix, `": "`, and the message.
struct Prefixed<'a> {
    prefix: &'a str,
    args: fmt::Arguments<'a>,
}

impl fmt::Display for Prefixed<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.prefix, self.args)
    }
}

#[doc(hidden)]
pub fn call_printk(level: &str, module_name: &[u8], args: fmt::Arguments<'_>) {
    let name = module_name.strip_suffix(b"\0").unwrap_or(module_name);
    let prefix = core::str::from_utf8(name).unwrap_or("?");
    crate::backend::env::printk(level, format_args!("{}", Prefixed { prefix, args }));
}

/// What the `dev_*!` macros print with (declared here, beside them; 7.3 declares them in
/// `device.rs`). Each prints `args` at its level, prefixed with the device's name.
impl<Ctx: DeviceContext> Device<Ctx> {
    fn printk(&self, level: &str, args: fmt::Arguments<'_>) {
        crate::backend::env::printk(
            level,
            format_args!(
                "{}",
                Prefixed {
                    prefix: self.name(),
                    args
                }
            ),
        );
    }

    /// Prints an emergency-level message (the system is unusable); see
    /// [`dev_emerg!`](crate::dev_emerg).
    pub fn pr_emerg(&self, args: fmt::Arguments<'_>) {
        self.printk("emerg", args);
    }

    /// Prints an alert-level message (action is needed at once); see
    /// [`dev_alert!`](crate::dev_alert).
    pub fn pr_alert(&self, args: fmt::Arguments<'_>) {
        self.printk("alert", args);
    }

    /// Prints a critical-level message; see [`dev_crit!`](crate::dev_crit).
    pub fn pr_crit(&self, args: fmt::Arguments<'_>) {
        self.printk("crit", args);
    }

    /// Prints an error-level message; see [`dev_err!`](crate::dev_err).
    pub fn pr_err(&self, args: fmt::Arguments<'_>) {
        self.printk("err", args);
    }

    /// Prints a warning-level message; see [`dev_warn!`](crate::dev_warn).
    pub fn pr_warn(&self, args: fmt::Arguments<'_>) {
        self.printk("warn", args);
    }

    /// Prints a notice-level message (normal but significant); see
    /// [`dev_notice!`](crate::dev_notice).
    pub fn pr_notice(&self, args: fmt::Arguments<'_>) {
        self.printk("notice", args);
    }

    /// Prints an info-level message; see [`dev_info!`](crate::dev_info).
    pub fn pr_info(&self, args: fmt::Arguments<'_>) {
        self.printk("info", args);
    }

    /// Prints a debug-level message; see [`dev_dbg!`](crate::dev_dbg). On the host, only when
    /// `VGSP_DEBUG` is set (7.3's prints in debug builds only).
    pub fn pr_dbg(&self, args: fmt::Arguments<'_>) {
        self.printk("debug", args);
    }
}

/// A device is a reference to itself, so that the `dev_*!` macros take a `&Device<Ctx>` as
/// they take a bus device that converts to one (declared here, beside them; 7.3 declares it
/// in `device.rs`).
impl<Ctx: DeviceContext> AsRef<Device<Ctx>> for Device<Ctx> {
    #[inline]
    fn as_ref(&self) -> &Device<Ctx> {
        self
    }
}

/// Prints an emergency-level message (the system is unusable).
#[macro_export]
#[expect(
    clippy::crate_in_macro_def,
    reason = "`__LOG_PREFIX` is the caller's, as in the kernel's macros"
)]
macro_rules! pr_emerg {
    ($($arg:tt)*) => { $crate::print::call_printk("emerg", crate::__LOG_PREFIX, $crate::macros::fmt!($($arg)*)) };
}

/// Prints an alert-level message (action is needed at once).
#[macro_export]
#[expect(
    clippy::crate_in_macro_def,
    reason = "`__LOG_PREFIX` is the caller's, as in the kernel's macros"
)]
macro_rules! pr_alert {
    ($($arg:tt)*) => { $crate::print::call_printk("alert", crate::__LOG_PREFIX, $crate::macros::fmt!($($arg)*)) };
}

/// Prints a critical-level message.
#[macro_export]
#[expect(
    clippy::crate_in_macro_def,
    reason = "`__LOG_PREFIX` is the caller's, as in the kernel's macros"
)]
macro_rules! pr_crit {
    ($($arg:tt)*) => { $crate::print::call_printk("crit", crate::__LOG_PREFIX, $crate::macros::fmt!($($arg)*)) };
}

/// Prints an error-level message.
#[macro_export]
#[expect(
    clippy::crate_in_macro_def,
    reason = "`__LOG_PREFIX` is the caller's, as in the kernel's macros"
)]
macro_rules! pr_err {
    ($($arg:tt)*) => { $crate::print::call_printk("err", crate::__LOG_PREFIX, $crate::macros::fmt!($($arg)*)) };
}

/// Prints a warning-level message.
#[macro_export]
#[expect(
    clippy::crate_in_macro_def,
    reason = "`__LOG_PREFIX` is the caller's, as in the kernel's macros"
)]
macro_rules! pr_warn {
    ($($arg:tt)*) => { $crate::print::call_printk("warn", crate::__LOG_PREFIX, $crate::macros::fmt!($($arg)*)) };
}

/// Prints a notice-level message (normal but significant).
#[macro_export]
#[expect(
    clippy::crate_in_macro_def,
    reason = "`__LOG_PREFIX` is the caller's, as in the kernel's macros"
)]
macro_rules! pr_notice {
    ($($arg:tt)*) => { $crate::print::call_printk("notice", crate::__LOG_PREFIX, $crate::macros::fmt!($($arg)*)) };
}

/// Prints an info-level message.
#[macro_export]
#[expect(
    clippy::crate_in_macro_def,
    reason = "`__LOG_PREFIX` is the caller's, as in the kernel's macros"
)]
macro_rules! pr_info {
    ($($arg:tt)*) => { $crate::print::call_printk("info", crate::__LOG_PREFIX, $crate::macros::fmt!($($arg)*)) };
}

/// Prints a debug-level message.
#[macro_export]
#[expect(
    clippy::crate_in_macro_def,
    reason = "`__LOG_PREFIX` is the caller's, as in the kernel's macros"
)]
macro_rules! pr_debug {
    ($($arg:tt)*) => { $crate::print::call_printk("debug", crate::__LOG_PREFIX, $crate::macros::fmt!($($arg)*)) };
}

/// Prints through the device's `pr_*` method `$method`: what the `dev_*!` macros expand to.
#[doc(hidden)]
#[macro_export]
macro_rules! dev_printk {
    ($method:ident, $dev:expr, $($f:tt)*) => {
        $crate::device::Device::$method($dev.as_ref(), $crate::macros::fmt!($($f)*))
    };
}

/// Prints an emergency-level message (the system is unusable), prefixed with the device:
/// `dev_emerg!(dev, "format", args...)`, `dev` being `AsRef<Device<Ctx>>`.
#[macro_export]
macro_rules! dev_emerg {
    ($($f:tt)*) => { $crate::dev_printk!(pr_emerg, $($f)*) };
}

/// Prints an alert-level message (action is needed at once), prefixed with the device:
/// `dev_alert!(dev, "format", args...)`, `dev` being `AsRef<Device<Ctx>>`.
#[macro_export]
macro_rules! dev_alert {
    ($($f:tt)*) => { $crate::dev_printk!(pr_alert, $($f)*) };
}

/// Prints a critical-level message, prefixed with the device:
/// `dev_crit!(dev, "format", args...)`, `dev` being `AsRef<Device<Ctx>>`.
#[macro_export]
macro_rules! dev_crit {
    ($($f:tt)*) => { $crate::dev_printk!(pr_crit, $($f)*) };
}

/// Prints an error-level message, prefixed with the device:
/// `dev_err!(dev, "format", args...)`, `dev` being `AsRef<Device<Ctx>>`.
#[macro_export]
macro_rules! dev_err {
    ($($f:tt)*) => { $crate::dev_printk!(pr_err, $($f)*) };
}

/// Prints a warning-level message, prefixed with the device:
/// `dev_warn!(dev, "format", args...)`, `dev` being `AsRef<Device<Ctx>>`.
#[macro_export]
macro_rules! dev_warn {
    ($($f:tt)*) => { $crate::dev_printk!(pr_warn, $($f)*) };
}

/// Prints a notice-level message (normal but significant), prefixed with the device:
/// `dev_notice!(dev, "format", args...)`, `dev` being `AsRef<Device<Ctx>>`.
#[macro_export]
macro_rules! dev_notice {
    ($($f:tt)*) => { $crate::dev_printk!(pr_notice, $($f)*) };
}

/// Prints an info-level message, prefixed with the device:
/// `dev_info!(dev, "format", args...)`, `dev` being `AsRef<Device<Ctx>>`.
#[macro_export]
macro_rules! dev_info {
    ($($f:tt)*) => { $crate::dev_printk!(pr_info, $($f)*) };
}

/// Prints a debug-level message, prefixed with the device:
/// `dev_dbg!(dev, "format", args...)`, `dev` being `AsRef<Device<Ctx>>`. On the host, only
/// when `VGSP_DEBUG` is set (7.3's prints in debug builds only, without dynamic debug).
#[macro_export]
macro_rules! dev_dbg {
    ($($f:tt)*) => { $crate::dev_printk!(pr_dbg, $($f)*) };
}

#[cfg(all(test, feature = "host", not(loom)))]
mod tests {
    use std::format;

    use super::Prefixed;

    #[test]
    fn prefixes_the_line_with_its_name() {
        let line = format!(
            "{}",
            Prefixed {
                prefix: "vgsp-host",
                args: format_args!("ring {} of {}\n", 2, 3),
            }
        );
        assert_eq!(line, "vgsp-host: ring 2 of 3\n");
    }
}
