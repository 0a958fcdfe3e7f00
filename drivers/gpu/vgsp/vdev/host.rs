// SPDX-License-Identifier: GPL-2.0

//! The host's test bench (feature `bench`): simulated devices beside the driver, written
//! on the shim's public API. Its twin for kernels is `linux-7.3/`, on 7.3's `kernel` crate.
//!
//! - [`device()`]: the device the suites bind their queues to.
//! - [`SimBar`]: a BAR backed by memory whose doorbell registers wake whoever waits on
//!   them, the way a write to `NV_PGSP_QUEUE_HEAD` interrupts the GSP.
//! - [`run_beside`]: runs a device model on a thread of its own while the driver runs on
//!   the caller's.

use std::{
    boxed::Box,
    sync::{
        atomic::{
            AtomicU32,
            AtomicU64,
            AtomicUsize,
            Ordering, //
        },
        Condvar,
        Mutex, //
    },
    vec::Vec,
};

use kernel::{
    alloc::{
        flags::GFP_KERNEL,
        KBox, //
    },
    device::{
        Bound,
        Device, //
    },
    error::Result,
    io::{
        Mmio,
        MmioRaw,
        MmioWriteObserver,
        Region, //
    },
    time::Delta,
};

/// Returns the device the suites bind their queues to: the host's simulated GPU.
///
/// # Errors
///
/// None on the host; the kernel's `vdev::device()` registers a faux device and may fail.
pub fn device() -> Result<&'static Device<Bound>> {
    Ok(kernel::host::device())
}

/// The doorbells of a [`SimBar`].
///
/// A ring takes the lock and wakes only when a thread waits, so a doorbell costs an
/// atomic increment when nobody sleeps on it, as a register write would. Both counters
/// are `SeqCst`: a ring that sees no waiter comes before the waiter's registration in
/// that order, so the waiter then sees the ring.
struct Doorbells {
    offsets: Vec<usize>,
    rings: AtomicU64,
    waiters: AtomicUsize,
    lock: Mutex<()>,
    rung: Condvar,
}

impl Doorbells {
    fn ring(&self) {
        self.rings.fetch_add(1, Ordering::SeqCst);
        if self.waiters.load(Ordering::SeqCst) > 0 {
            // Taking the lock waits for a waiter between its check and its sleep.
            // PANIC: a poisoned lock means another thread already panicked.
            let _guard = self.lock.lock().unwrap();
            self.rung.notify_all();
        }
    }
}

impl MmioWriteObserver for Doorbells {
    fn written(&self, offset: usize, _value: u32) {
        if self.offsets.contains(&offset) {
            self.ring();
        }
    }
}

/// A simulated BAR: `SIZE` bytes of registers in memory, some of which are doorbells.
///
/// A write to a doorbell offset increments a counter and wakes every thread in
/// [`SimBar::wait_doorbell`]. The host allocates the memory zeroed and lazily, so a
/// 16 MiB BAR0 costs only the pages touched.
///
/// # Invariants
///
/// `mmio` views `_regs` and observes through `bells`; both live in heap allocations
/// owned by the `SimBar`, which do not move when it does. Its `'static` is private: the
/// view handed out ([`SimBar::io`]) lives only as long as the borrow of the `SimBar`.
pub struct SimBar<const SIZE: usize> {
    mmio: Mmio<'static, Region<SIZE>>,
    _regs: Box<[AtomicU32]>,
    bells: KBox<Doorbells>,
}

impl<const SIZE: usize> SimBar<SIZE> {
    /// Creates a BAR whose registers at `doorbells` wake [`SimBar::wait_doorbell`].
    ///
    /// # Errors
    ///
    /// - `EINVAL` if `SIZE` is not a multiple of 4.
    /// - `ENOMEM` if the doorbells' box cannot be allocated.
    pub fn new(doorbells: &[usize]) -> Result<Self> {
        let regs: Box<[AtomicU32]> = (0..SIZE / 4).map(|_| AtomicU32::new(0)).collect();
        let bells = KBox::new(
            Doorbells {
                offsets: doorbells.to_vec(),
                rings: AtomicU64::new(0),
                waiters: AtomicUsize::new(0),
                lock: Mutex::new(()),
                rung: Condvar::new(),
            },
            GFP_KERNEL,
        )?;
        let region =
            Region::<SIZE>::ptr_try_from_raw_parts_mut(regs.as_ptr().cast_mut().cast(), SIZE)?;
        // SAFETY: `regs` is a live allocation of `SIZE` bytes, 4-byte aligned, valid for
        // volatile accesses (its words are atomics), and `bells` a live observer; both are
        // owned by the `SimBar` with the view and stay where they are.
        let mmio = unsafe { Mmio::from_raw(MmioRaw::from_ptr(region).with_observer(&*bells)) };
        // INVARIANT: `mmio` was made from `regs` and `bells` just above.
        Ok(Self {
            mmio,
            _regs: regs,
            bells,
        })
    }

    /// Returns the MMIO region the driver accesses.
    pub fn io(&self) -> &Mmio<'_, Region<SIZE>> {
        &self.mmio
    }

    /// Returns how many times a doorbell has been written.
    pub fn doorbell_count(&self) -> u64 {
        self.bells.rings.load(Ordering::SeqCst)
    }

    /// Waits until the doorbell count differs from `seen` or `timeout` passes, and
    /// returns the count.
    pub fn wait_doorbell(&self, seen: u64, timeout: Delta) -> u64 {
        let timeout = core::time::Duration::from_nanos(timeout.as_nanos().max(0).unsigned_abs());
        let bells = &*self.bells;
        // PANIC: a poisoned lock means another thread already panicked.
        let guard = bells.lock.lock().unwrap();
        bells.waiters.fetch_add(1, Ordering::SeqCst);
        // PANIC: as above.
        let (guard, _) = bells
            .rung
            .wait_timeout_while(guard, timeout, |_| {
                bells.rings.load(Ordering::SeqCst) == seen
            })
            .unwrap();
        bells.waiters.fetch_sub(1, Ordering::SeqCst);
        drop(guard);
        bells.rings.load(Ordering::SeqCst)
    }

    /// Wakes every waiter without a register write (used to stop a device thread).
    pub fn kick(&self) {
        self.bells.ring();
    }
}

/// Runs `device` on a thread of its own while `driver` runs on the calling thread, and
/// returns both results once both have returned.
///
/// `driver` must make `device` return (a stop flag and [`SimBar::kick`]): this waits for
/// it. A panic on the device thread is raised again on the caller's.
pub fn run_beside<D, F, R>(device: D, driver: F) -> (Result, R)
where
    D: FnOnce() -> Result + Send,
    F: FnOnce() -> R,
{
    std::thread::scope(|s| {
        let thread = s.spawn(device);
        let r = driver();
        match thread.join() {
            Ok(d) => (d, r),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}
