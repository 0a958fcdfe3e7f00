// SPDX-License-Identifier: GPL-2.0

//! Simulated devices, for tests that put a device model beside the driver: the in-kernel
//! flavour of the shim's test bench, with the host's interface.
//!
//! - [`device()`]: the device the suites bind their queues to.
//! - [`SimBar`]: a BAR backed by `vmalloc` memory whose doorbell registers wake whoever
//!   waits on them (a mutex-protected counter and a condition variable).
//! - [`run_beside`]: runs a device model on a kernel thread, bound to the second CPU when
//!   there is one, while the driver runs on the caller's thread.

use core::{
    cell::UnsafeCell,
    ffi::c_void,
    sync::atomic::{
        AtomicBool,
        AtomicPtr,
        Ordering, //
    },
};

use crate::{
    alloc::{
        flags::GFP_KERNEL,
        KBox,
        KVec,
        VVec, //
    },
    bindings,
    device::{
        Bound,
        Device, //
    },
    error::{
        code::EINVAL,
        from_err_ptr,
        Result, //
    },
    ffi::c_int,
    init::InPlaceInit,
    io::{
        Mmio,
        MmioRaw,
        MmioWriteObserver,
        Region, //
    },
    prelude::*,
    sync::{
        CondVar,
        Mutex, //
    },
    time::{
        msecs_to_jiffies,
        Delta,
        Instant,
        Monotonic, //
    },
};

/// Returns the device the suites bind their queues to: a root device called `vgsp`
/// (`/sys/devices/vgsp`), registered on first use and kept for the life of the kernel.
///
/// # Errors
///
/// - Any error of `root_device_register`.
pub fn device() -> Result<&'static Device<Bound>> {
    static ROOT: AtomicPtr<bindings::device> = AtomicPtr::new(core::ptr::null_mut());
    // ORDERING: `Acquire` pairs with the `Release` of the `compare_exchange` below: a
    // device seen here is fully registered.
    let mut dev = ROOT.load(Ordering::Acquire);
    if dev.is_null() {
        // SAFETY: The name is NUL-terminated; a null owner means built-in code.
        let new = from_err_ptr(unsafe {
            bindings::__root_device_register(c"vgsp".as_ptr().cast(), core::ptr::null_mut())
        })?;
        // ORDERING: `Release` publishes the registered device to the `Acquire` loads.
        dev = match ROOT.compare_exchange(dev, new, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => new,
            Err(first) => {
                // SAFETY: `new` was registered above and nothing else has seen it.
                unsafe { bindings::root_device_unregister(new) };
                first
            }
        };
    }
    // SAFETY: `dev` is a registered device that is never unregistered, so it stays valid
    // with a non-zero reference count for the life of the kernel; it has no driver to be
    // unbound from, so it stays in the state a bound device promises for as long.
    Ok(unsafe { Device::as_bound(Device::as_ref(dev)) })
}

#[pin_data]
struct Doorbells {
    offsets: KVec<usize>,
    #[pin]
    rings: Mutex<u64>,
    #[pin]
    rung: CondVar,
}

impl MmioWriteObserver for Doorbells {
    fn written(&self, offset: usize, _value: u32) {
        if self.offsets.contains(&offset) {
            let mut rings = self.rings.lock();
            *rings += 1;
            self.rung.notify_all();
        }
    }
}

/// A simulated BAR: `SIZE` bytes of registers in memory, some of which are doorbells.
///
/// A write to a doorbell offset increments a counter and wakes every thread in
/// [`SimBar::wait_doorbell`].
///
/// # Invariants
///
/// `mmio` views `_regs` and observes through `bells`; both live in allocations owned
/// by the `SimBar`, which do not move when it does. Its `'static` is private: the view
/// handed out ([`SimBar::io`]) lives only as long as the borrow of the `SimBar`.
pub struct SimBar<const SIZE: usize> {
    mmio: Mmio<'static, Region<SIZE>>,
    _regs: VVec<u32>,
    bells: Pin<KBox<Doorbells>>,
}

impl<const SIZE: usize> SimBar<SIZE> {
    /// Creates a BAR whose registers at `doorbells` wake [`SimBar::wait_doorbell`].
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if the memory cannot be had.
    pub fn new(doorbells: &[usize]) -> Result<Self> {
        let regs = VVec::from_elem(0u32, SIZE / 4, GFP_KERNEL)?;
        let mut offsets = KVec::with_capacity(doorbells.len(), GFP_KERNEL)?;
        offsets.extend_from_slice(doorbells, GFP_KERNEL)?;
        let bells = KBox::pin_init(
            pin_init!(Doorbells {
                offsets,
                rings <- crate::new_mutex!(0),
                rung <- crate::new_condvar!(),
            }),
            GFP_KERNEL,
        )?;
        let region = Region::<SIZE>::ptr_try_from_raw_parts_mut(regs.as_ptr().cast_mut().cast(), SIZE)?;
        // SAFETY: `regs` is a live allocation of `SIZE` bytes, 4-byte aligned, and `bells` a
        // live observer; both are owned by the `SimBar` with the view and stay where they
        // are.
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
        *self.bells.rings.lock()
    }

    /// Waits until the doorbell count differs from `seen` or `timeout` passes, and
    /// returns the count.
    pub fn wait_doorbell(&self, seen: u64, timeout: Delta) -> u64 {
        let start = Instant::<Monotonic>::now();
        let mut rings = self.bells.rings.lock();
        while *rings == seen {
            let left = timeout.as_millis() - start.elapsed().as_millis();
            if left <= 0 {
                break;
            }
            let jiffies = msecs_to_jiffies(u32::try_from(left).unwrap_or(u32::MAX));
            // A signal or a timeout ends the wait as a doorbell does: the caller looks at
            // the count either way.
            let _ = self.bells.rung.wait_interruptible_timeout(&mut rings, jiffies);
        }
        *rings
    }

    /// Wakes every waiter without a register write (used to stop a device thread).
    pub fn kick(&self) {
        let mut rings = self.bells.rings.lock();
        *rings += 1;
        self.bells.rung.notify_all();
    }
}

/// What [`run_beside`] shares with its device thread.
struct Shared<D> {
    /// The device model; taken by the thread.
    device: UnsafeCell<Option<D>>,
    /// What it returned; written by the thread, read after `kthread_stop`.
    result: UnsafeCell<Result>,
    /// Set by the thread once it has started.
    started: AtomicBool,
}

/// The device thread: runs the model, then waits for `kthread_stop`.
///
/// # Safety
///
/// `data` must point to a `Shared<D>` that outlives the thread, whose `device` and
/// `result` nobody else touches until `kthread_stop` has returned.
unsafe extern "C" fn device_thread<D: FnOnce() -> Result + Send>(data: *mut c_void) -> c_int {
    // SAFETY: The caller's contract: `data` is a live `Shared<D>`.
    let shared = unsafe { &*data.cast::<Shared<D>>() };
    // ORDERING: `Release` pairs with the `Acquire` load in `run_beside`; it only says the
    // thread runs (a `kthread_stop` before that would skip the model).
    shared.started.store(true, Ordering::Release);
    // SAFETY: Only this thread touches `device` and `result` until it has been stopped.
    unsafe {
        if let Some(device) = (*shared.device.get()).take() {
            *shared.result.get() = device();
        }
    }
    // SAFETY: Called on a kthread.
    while !unsafe { bindings::kthread_should_stop() } {
        // SAFETY: Sleeping is allowed on a kthread.
        unsafe { bindings::schedule_timeout_interruptible(1) };
    }
    0
}

/// Runs `device` on a kernel thread (bound to CPU 1 when it is online) while `driver`
/// runs on the calling thread, and returns both results once both have returned.
///
/// `driver` must make `device` return (a stop flag and [`SimBar::kick`]): this waits for
/// it with `kthread_stop`.
pub fn run_beside<D, F, R>(device: D, driver: F) -> (Result, R)
where
    D: FnOnce() -> Result + Send,
    F: FnOnce() -> R,
{
    let shared = Shared {
        device: UnsafeCell::new(Some(device)),
        result: UnsafeCell::new(Err(EINVAL)),
        started: AtomicBool::new(false),
    };
    let data = core::ptr::from_ref(&shared).cast_mut().cast::<c_void>();
    // SAFETY: Reading the online CPU count (`num_online_cpus`) has no preconditions.
    let online = unsafe { core::ptr::read_volatile(&raw const bindings::__num_online_cpus) };
    // SAFETY: `device_thread::<D>` gets `shared`, which lives until after `kthread_stop`
    // below; the name is a NUL-terminated format taking the CPU number.
    let task = unsafe {
        if online.counter > 1 {
            bindings::kthread_create_on_cpu(Some(device_thread::<D>), data, 1, c"vgsp/%u".as_ptr().cast())
        } else {
            bindings::kthread_create_on_node(
                Some(device_thread::<D>),
                data,
                bindings::NUMA_NO_NODE,
                c"vgsp".as_ptr().cast(),
            )
        }
    };
    let task = match from_err_ptr(task) {
        Ok(task) => task,
        Err(e) => return (Err(e), driver()),
    };
    // SAFETY: `task` is a new, valid kthread.
    unsafe { bindings::wake_up_process(task) };
    // ORDERING: pairs with the `Release` store in `device_thread`.
    while !shared.started.load(Ordering::Acquire) {
        // SAFETY: The caller runs in process context, where sleeping is allowed.
        unsafe { bindings::schedule_timeout_uninterruptible(1) };
    }
    let r = driver();
    // SAFETY: `task` is a kthread that exits only when told to; this waits for it.
    unsafe { bindings::kthread_stop(task) };
    (shared.result.into_inner(), r)
}
