// SPDX-License-Identifier: GPL-2.0

//! The host backend: what the kernel provides, built on `std`.
//!
//! - [`env`]: the monotonic clock, `fsleep` (spinning below 10 µs, sleeping above, as the
//!   kernel's) and the log.
//! - [`kunit`]: the KTAP runner for the suites.
//! - [`device`]: the simulated device the driver binds to.

use crate::device::{
    Bound,
    Device, //
};

pub mod kunit;

/// The environment functions of [`crate::env`] (the model backend has its own).
#[cfg(not(loom))]
pub(crate) mod env {
    use std::{
        sync::OnceLock,
        time::{
            Duration,
            Instant, //
        },
    };

    fn epoch() -> Instant {
        static EPOCH: OnceLock<Instant> = OnceLock::new();
        *EPOCH.get_or_init(Instant::now)
    }

    pub(crate) fn ktime_get_ns() -> u64 {
        // CAST: the process does not run for 584 years.
        epoch().elapsed().as_nanos() as u64
    }

    pub(crate) fn fsleep_ns(ns: u64) {
        // The kernel's `fsleep` busy-waits (`udelay`) below 10 µs.
        if ns < 10_000 {
            let end = ktime_get_ns().saturating_add(ns);
            while ktime_get_ns() < end {
                core::hint::spin_loop();
            }
        } else {
            std::thread::sleep(Duration::from_nanos(ns));
        }
    }

    pub(crate) fn printk(level: &str, args: core::fmt::Arguments<'_>) {
        if level == "debug" && std::env::var_os("VGSP_DEBUG").is_none() {
            return;
        }
        let line = std::format!("{args}");
        std::eprintln!("[{level}] {}", line.trim_end_matches('\n'));
    }
}

/// The simulated device the driver binds to on the host.
pub fn device() -> &'static Device<Bound> {
    static DEV: Device<Bound> = Device::new("vgsp-host");
    &DEV
}
