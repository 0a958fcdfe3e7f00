// SPDX-License-Identifier: GPL-2.0

//! The machine upstream's queue runs on (ours): a host device whose coherent memory is a
//! pool at bus addresses unlike its CPU addresses, a simulated BAR0 whose doorbell wakes
//! the GSP, and the virtual GSP on a thread of its own.
//!
//! The GSP finds the queues as the firmware does, from the bus address upstream's own
//! `GspArgumentsCached` hands it, and reaches them only through the pool's window, so
//! nothing of upstream's allocation is shared with it other than by that address.

use core::{
    pin::Pin,
    sync::atomic::{
        AtomicBool,
        Ordering, //
    },
};

use std::boxed::Box;

use kernel::{
    device::{
        Bound,
        Device, //
    },
    dma::DmaView,
    host::DmaPool,
    io::register::Register,
    prelude::*,
    time::{
        delay::fsleep,
        Delta, //
    },
    transmute::AsBytes,
};
use nova_core::gsp::{
    cmdq::MsgqSignal,
    regs::NV_PGSP_QUEUE_HEAD, //
};
use vdev::{
    run_beside,
    SimBar, //
};
use vgsp::{
    Progress,
    Stats,
    Vgsp, //
};

use crate::{
    driver::BAR0_SIZE,
    gsp::{cmdq::Cmdq, fw::GspArgumentsCached, GSP_PAGE_SIZE},
};

/// The bus address of the pool's first page: unlike any CPU address.
const BUS_BASE: u64 = 0x8000_0000;

/// Pages of the pool: `GspMem` (129 pages) and room to spare.
const POOL_PAGES: usize = 160;

/// How long an idle GSP sleeps on the doorbell before it looks at its stop flag again.
const IDLE_WAIT: Delta = Delta::from_millis(20);

#[repr(C, align(4096))]
struct Pages([u8; POOL_PAGES * GSP_PAGE_SIZE]);

/// A device whose coherent memory is a fresh pool, and the pool's window as the device
/// sees it. Both leaked: a pooled device needs a `'static` pool, and upstream's queue
/// keeps a count of its device.
pub(crate) fn pooled_device() -> Result<(&'static Device<Bound>, DmaView<'static>)> {
    let mem = Box::leak(Box::new(Pages([0; POOL_PAGES * GSP_PAGE_SIZE])));
    let (base, len) = (mem.0.as_mut_ptr(), mem.0.len());
    // SAFETY: `mem` is leaked, so valid for reads and writes of `len` bytes for ever; it
    // is reached only through the pool's allocations and the device's window below.
    let pool = unsafe { DmaPool::new(base, len, BUS_BASE) }?;
    let pool: &'static DmaPool = Box::leak(Box::new(pool));
    let dev = Box::leak(Box::new(Device::with_dma_pool("upstream", pool)));
    // SAFETY: as above; the device's accesses are bounds-checked views of the same bytes.
    let window = unsafe { DmaView::from_raw_parts(base, len) };
    Ok((dev, window))
}

/// Returns the bus address of the queues `cmdq` tells the GSP of: the first field of
/// upstream's `GspArgumentsCached` (`messageQueueInitArguments.sharedMemPhysAddr`).
pub(crate) fn queue_address(cmdq: &Cmdq) -> Result<u64> {
    let args = KBox::init(GspArgumentsCached::new(cmdq), GFP_KERNEL)?;
    let bytes = args.as_bytes().get(..8).ok_or(EINVAL)?;
    Ok(u64::from_le_bytes(bytes.try_into().map_err(|_| EINVAL)?))
}

/// Returns the offset in the pool of bus address `bus`.
///
/// # Errors
///
/// - `EINVAL` if `bus` is below the pool.
pub(crate) fn pool_offset(bus: u64) -> Result<usize> {
    bus.checked_sub(BUS_BASE)
        .and_then(|off| usize::try_from(off).ok())
        .ok_or(EINVAL)
}

/// How the GSP thread waits when it has nothing to do.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Serve {
    /// It sleeps on the doorbell, as the firmware waits for its interrupt.
    Asleep,
    /// It looks again at once: a GSP that is busy anyway.
    Busy,
}

/// The GSP's interrupt to the driver, as a GPU raises the GSP's message-queue interrupt:
/// raised after every step in which the GSP did something (it may have posted a message),
/// so a driver may sleep on it ([`MsgqSignal`]) instead of polling. Upstream 7.3's queue
/// polls and does not use it; ours does when given it ([`Cmdq::set_signal`]).
///
/// A raise costs the GSP an atomic increment, and a wake-up only when the driver sleeps
/// on it (a [`SimBar`] with no register, rung by [`SimBar::kick`]).
///
/// [`Cmdq::set_signal`]: nova_core::gsp::cmdq::BenchSeam::set_signal
pub(crate) struct GspIrq(SimBar<4>);

impl GspIrq {
    /// Makes an interrupt line.
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if its state cannot be allocated.
    pub(crate) fn new() -> Result<Self> {
        Ok(Self(SimBar::new(&[])?))
    }

    /// Raises the interrupt.
    fn raise(&self) {
        // ORDERING: the count's increment is a `SeqCst` read-modify-write, after the GSP's
        // write-pointer store of the step that raises it (itself ordered after the
        // message by the GSP's `dma_mb(Write)`). Pairs with the acquire load of the count
        // in the driver's wait, before it loads the write pointer.
        self.0.kick();
    }
}

impl MsgqSignal for GspIrq {
    fn count(&self) -> u64 {
        self.0.doorbell_count()
    }

    fn wait(&self, seen: u64, timeout: Delta) {
        self.0.wait_doorbell(seen, timeout);
    }
}

/// Which CPUs the driver and the GSP thread run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    /// Wherever the scheduler puts them.
    Unpinned,
    /// Both on CPU 0: the GSP runs when the driver leaves it the CPU.
    SameCpu,
    /// The driver on CPU 0, the GSP on CPU 1, as a GSP is a processor of its own.
    TwoCpus,
}

impl Placement {
    /// The CPU of the driver and of the GSP, if pinned.
    fn cpus(self) -> Option<(usize, usize)> {
        match self {
            Self::Unpinned => None,
            Self::SameCpu => Some((0, 0)),
            Self::TwoCpus => Some((0, 1)),
        }
    }
}

/// Pins the calling thread to `cpu`; returns the CPUs it could run on before, or `None`
/// if it cannot be pinned (fewer CPUs): it then runs where it did.
fn pin(cpu: usize) -> Option<libc::cpu_set_t> {
    // SAFETY: `cpu_set_t` is plain data, valid all zero.
    let mut old: libc::cpu_set_t = unsafe { core::mem::zeroed() };
    let size = core::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `old` is a `cpu_set_t` of `size` bytes; 0 is the calling thread.
    if unsafe { libc::sched_getaffinity(0, size, &mut old) } != 0 {
        return None;
    }
    // SAFETY: `cpu_set_t` is plain data, valid all zero.
    let mut set: libc::cpu_set_t = unsafe { core::mem::zeroed() };
    // `CPU_SET` writes bit `cpu` of the set: it must be one of its `CPU_SETSIZE` bits.
    if cpu >= usize::try_from(libc::CPU_SETSIZE).unwrap_or(0) {
        return None;
    }
    // SAFETY: `set` is a valid `cpu_set_t` and `cpu` within it (checked above).
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a `cpu_set_t` of `size` bytes; 0 is the calling thread.
    (unsafe { libc::sched_setaffinity(0, size, &set) } == 0).then_some(old)
}

/// Lets the calling thread run on the CPUs of `old` again.
fn unpin(old: &libc::cpu_set_t) {
    // SAFETY: `old` is a `cpu_set_t` of that size; 0 is the calling thread.
    unsafe { libc::sched_setaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), old) };
}

/// Serves `gsp` until `stop` is set: works while there is work, raising `irq` after each
/// step that did something, and when idle sleeps on the doorbell or spins, as `mode` says.
fn serve(
    gsp: &mut Vgsp<'_>,
    bar: &SimBar<BAR0_SIZE>,
    stop: &AtomicBool,
    mode: Serve,
    irq: Option<&GspIrq>,
) -> Result {
    // ORDERING: `Acquire` pairs with the `Release` store in `serving`; it hands over the
    // stop request only, the rings are ordered by their own barriers.
    while !stop.load(Ordering::Acquire) {
        let seen = bar.doorbell_count();
        match (gsp.step()?, mode) {
            (Progress::Worked, _) => {
                if let Some(irq) = irq {
                    irq.raise();
                }
            }
            (Progress::Blocked, _) => fsleep(Delta::from_micros(1)),
            (Progress::Idle, Serve::Asleep) => {
                bar.wait_doorbell(seen, IDLE_WAIT);
            }
            (Progress::Idle, Serve::Busy) => core::hint::spin_loop(),
        }
    }
    Ok(())
}

/// Runs `f` with the queue `queue` made on a fresh device (and the bus address of the
/// `GspMem` it tells the GSP of), the virtual GSP serving that memory on a thread of its
/// own as `mode` says. Returns what `f` returned and the GSP's counters, or its error.
///
/// # Errors
///
/// - `ENOMEM` if the memory cannot be had; any error of `queue`.
/// - `EINVAL` if the queue address is outside the pool.
pub(crate) fn serving<Q, R>(
    mode: Serve,
    log_every: u64,
    queue: impl FnOnce(&'static Device<Bound>) -> Result<(Q, u64)>,
    f: impl FnOnce(&mut Q, &SimBar<BAR0_SIZE>) -> R,
) -> Result<(R, Result<Stats>)> {
    serving_on(mode, Placement::Unpinned, None, log_every, queue, f)
}

/// [`serving`] with the driver and the GSP placed as `placement` says, and the GSP raising
/// `irq` after each step that did something.
///
/// # Errors
///
/// As [`serving`].
pub(crate) fn serving_on<Q, R>(
    mode: Serve,
    placement: Placement,
    irq: Option<&GspIrq>,
    log_every: u64,
    queue: impl FnOnce(&'static Device<Bound>) -> Result<(Q, u64)>,
    f: impl FnOnce(&mut Q, &SimBar<BAR0_SIZE>) -> R,
) -> Result<(R, Result<Stats>)> {
    let (dev, window) = pooled_device()?;
    let (mut q, address) = queue(dev)?;
    let offset = pool_offset(address)?;
    let gsp_mem = window.subview(offset, window.len().saturating_sub(offset))?;
    let bar = SimBar::<BAR0_SIZE>::new(&[NV_PGSP_QUEUE_HEAD::OFFSET])?;
    let stop = AtomicBool::new(false);
    let mut stats = Stats::default();
    let (served, r) = run_beside(
        || {
            // The GSP's thread ends with the run: no need to unpin it.
            if let Some((_, cpu)) = placement.cpus() {
                pin(cpu);
            }
            let mut gsp = Vgsp::new(gsp_mem)?;
            gsp.set_log_every(log_every);
            let served = serve(&mut gsp, &bar, &stop, mode, irq);
            stats = gsp.stats;
            served
        },
        || {
            let old = placement.cpus().and_then(|(cpu, _)| pin(cpu));
            let r = f(&mut q, &bar);
            if let Some(old) = &old {
                unpin(old);
            }
            // ORDERING: `Release` pairs with the `Acquire` load in `serve`.
            stop.store(true, Ordering::Release);
            bar.kick();
            r
        },
    );
    Ok((r, served.map(|()| stats)))
}

/// Makes upstream's `Cmdq` on `dev`, for [`serving`].
///
/// # Errors
///
/// - `ENOMEM` if the memory cannot be had.
pub(crate) fn upstream_queue(dev: &'static Device<Bound>) -> Result<(Pin<KBox<Cmdq>>, u64)> {
    let cmdq = KBox::pin_init(Cmdq::new(dev), GFP_KERNEL)?;
    let address = queue_address(&cmdq)?;
    Ok((cmdq, address))
}

/// Runs `f` with upstream's `Cmdq` on a fresh device and the virtual GSP serving it on a
/// thread of its own, asleep when idle, found by the queue address upstream gives it.
///
/// # Errors
///
/// As [`serving`].
pub(crate) fn with_gsp<R>(
    log_every: u64,
    f: impl FnOnce(&Cmdq, &SimBar<BAR0_SIZE>) -> R,
) -> Result<(R, Result<Stats>)> {
    serving(Serve::Asleep, log_every, upstream_queue, |cmdq, bar| {
        f(cmdq, bar)
    })
}

/// Returns upstream's `Cmdq` on a fresh device, the virtual GSP over the queues it tells
/// the GSP of, and the device's view of that `GspMem`, for a caller that runs the GSP
/// turn by turn (posting raw elements between receives) instead of serving on a thread.
///
/// The queue is leaked, so that a receive can run on a thread of its own and be
/// abandoned if it never returns.
///
/// # Errors
///
/// - `ENOMEM` if the memory cannot be had.
/// - `EINVAL` if upstream's queue address is outside the pool.
pub(crate) fn gsp_in_turns() -> Result<(&'static Cmdq, Vgsp<'static>, DmaView<'static>)> {
    let (dev, window) = pooled_device()?;
    let cmdq = KBox::pin_init(Cmdq::new(dev), GFP_KERNEL)?;
    let offset = pool_offset(queue_address(&cmdq)?)?;
    let gsp_mem = window.subview(offset, window.len().saturating_sub(offset))?;
    let cmdq: &'static Cmdq = Box::leak(Box::new(cmdq));
    Ok((cmdq, Vgsp::new(gsp_mem)?, gsp_mem))
}
