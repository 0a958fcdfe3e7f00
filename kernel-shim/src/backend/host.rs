// SPDX-License-Identifier: GPL-2.0

//! The host environment (feature `host`, outside the model), built on `std`: the monotonic
//! clock, `fsleep` (spinning below 10 µs, sleeping above, as the kernel's) and the log.

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
