// SPDX-License-Identifier: GPL-2.0

//! The host backend: what the kernel provides, built on `std`.
//!
//! - [`env`]: the monotonic clock, `fsleep` (spinning below 10 µs, sleeping above, as the
//!   kernel's) and the log.
//! - [`SimBar`]: a simulated BAR0 whose doorbell registers wake whoever waits on them,
//!   the way a write to `NV_PGSP_QUEUE_HEAD` interrupts the GSP.
//! - [`kunit`]: the KTAP runner for the suites.
//! - [`device`]: the simulated device the driver binds to.

use std::{
    boxed::Box,
    sync::{
        atomic::AtomicU32,
        Arc,
        Condvar,
        Mutex, //
    },
    time::Duration,
    vec::Vec,
};

use crate::{
    device::Device,
    io::{
        Io,
        IoRaw,
        MmioWriteObserver, //
    },
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
pub fn device() -> &'static Device {
    static DEV: Device = Device::new("vgsp-host");
    &DEV
}

struct Doorbells {
    offsets: Vec<usize>,
    rings: Mutex<u64>,
    rung: Condvar,
}

impl MmioWriteObserver for Doorbells {
    fn written(&self, offset: usize, _value: u32) {
        if self.offsets.contains(&offset) {
            // PANIC: a poisoned lock means another thread already panicked.
            let mut rings = self.rings.lock().unwrap();
            *rings += 1;
            self.rung.notify_all();
        }
    }
}

/// A simulated BAR: `SIZE` bytes of registers in host memory, some of which are
/// doorbells.
///
/// A write to a doorbell offset increments a counter and wakes every thread in
/// [`SimBar::wait_doorbell`]. Memory is allocated zeroed and lazily by the host, so a
/// 16 MiB BAR0 costs only the pages touched.
pub struct SimBar<const SIZE: usize> {
    /// The register memory `raw` points into; owned here so it outlives `raw`.
    _regs: Box<[AtomicU32]>,
    doorbells: Arc<Doorbells>,
    raw: IoRaw<SIZE>,
}

impl<const SIZE: usize> SimBar<SIZE> {
    /// Creates a BAR whose registers at `doorbells` wake [`SimBar::wait_doorbell`].
    pub fn new(doorbells: &[usize]) -> Arc<Self> {
        let regs: Box<[AtomicU32]> = (0..SIZE / 4).map(|_| AtomicU32::new(0)).collect();
        let bells = Arc::new(Doorbells {
            offsets: doorbells.to_vec(),
            rings: Mutex::new(0),
            rung: Condvar::new(),
        });
        // SAFETY: `regs` is a live allocation of `SIZE` bytes, 4-byte aligned, that lives
        // as long as the `SimBar`, which owns both it and `raw`.
        let raw = unsafe { IoRaw::new(regs.as_ptr() as usize, SIZE) }
            // PANIC: the allocation is `SIZE` bytes and `AtomicU32`-aligned by construction.
            .expect("SimBar layout")
            .with_observer(bells.clone());
        Arc::new(Self {
            _regs: regs,
            doorbells: bells,
            raw,
        })
    }

    /// Returns the MMIO region the driver accesses.
    pub fn io(&self) -> &Io<SIZE> {
        Io::from_raw(&self.raw)
    }

    /// Returns how many times a doorbell has been written.
    pub fn doorbell_count(&self) -> u64 {
        // PANIC: a poisoned lock means another thread already panicked.
        *self.doorbells.rings.lock().unwrap()
    }

    /// Waits until the doorbell count differs from `seen` or `timeout` passes, and
    /// returns the count.
    pub fn wait_doorbell(&self, seen: u64, timeout: Duration) -> u64 {
        // PANIC: a poisoned lock means another thread already panicked.
        let guard = self.doorbells.rings.lock().unwrap();
        let (guard, _) = self
            .doorbells
            .rung
            .wait_timeout_while(guard, timeout, |rings| *rings == seen)
            .unwrap();
        *guard
    }

    /// Wakes every waiter without a register write (used to stop a device thread).
    pub fn kick(&self) {
        // PANIC: a poisoned lock means another thread already panicked.
        let mut rings = self.doorbells.rings.lock().unwrap();
        *rings += 1;
        self.doorbells.rung.notify_all();
    }
}
