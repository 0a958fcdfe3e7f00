// SPDX-License-Identifier: GPL-2.0

//! The virtual GSP on a thread of its own, woken by the BAR0 doorbell, beside the
//! driver: a host thread on the host, a kernel thread on the second CPU in a kernel.

use core::sync::atomic::{
    AtomicBool,
    Ordering, //
};

use kernel::{
    io::register::Register,
    prelude::*,
    time::{
        delay::fsleep,
        Delta, //
    },
};
use nova_core::gsp::{
    cmdq::{
        BenchSeam,
        Cmdq, //
    },
    regs::{
        BAR0_SIZE,
        NV_PGSP_QUEUE_HEAD, //
    },
    Gsp,
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

use crate::fixture::{
    device_view,
    gsp_view,
    SimBar0, //
};

/// How long an idle GSP sleeps on the doorbell before it looks at its stop flag again.
const IDLE_WAIT: Delta = Delta::from_millis(20);

/// Runs `gsp` until `stop` is set: works while there is work, sleeps on the doorbell
/// when idle (no busy spin), and polls briefly while `gspq` is full.
///
/// # Errors
///
/// Any error of [`Vgsp::step`].
pub fn serve(gsp: &mut Vgsp<'_>, bar: &SimBar<BAR0_SIZE>, stop: &AtomicBool) -> Result {
    // ORDERING: `Acquire` pairs with the `Release` store in `with_gsp_thread`; it only
    // hands over the stop request, the shared rings are ordered by their own barriers.
    while !stop.load(Ordering::Acquire) {
        let seen = bar.doorbell_count();
        match gsp.step()? {
            Progress::Worked => {}
            Progress::Blocked => fsleep(Delta::from_micros(1)),
            Progress::Idle => {
                bar.wait_doorbell(seen, IDLE_WAIT);
            }
        }
    }
    Ok(())
}

/// Runs `f` with a freshly initialised driver and a virtual GSP serving it on its own
/// thread (sending a log line every `log_every` commands, 0 for never). Returns what `f`
/// returned and the GSP's counters, or its error.
///
/// `f` must not assert: in a kernel a failed KUnit assertion ends the test thread
/// without unwinding, and the GSP thread would outlive the memory it serves. Return the
/// findings and assert on them afterwards.
///
/// # Errors
///
/// - `ENOMEM` if the shared memory or the BAR cannot be had.
pub fn with_gsp_thread<R>(
    log_every: u64,
    f: impl FnOnce(&Gsp, &SimBar0<'_>, &SimBar<BAR0_SIZE>) -> R,
) -> Result<(R, Result<Stats>)> {
    with_gsp_thread_and(log_every, |_| Ok(()), f)
}

/// [`with_gsp_thread`], with `setup` applied to the GSP on its thread before it serves
/// (to map the copy engine's windows, say).
///
/// # Errors
///
/// As [`with_gsp_thread`]; an error of `setup` is the GSP's.
pub fn with_gsp_thread_and<R>(
    log_every: u64,
    setup: impl FnOnce(&mut Vgsp<'static>) -> Result + Send,
    f: impl FnOnce(&Gsp, &SimBar0<'_>, &SimBar<BAR0_SIZE>) -> R,
) -> Result<(R, Result<Stats>)> {
    with_firmware(
        |fw, bar, stop| {
            fw.set_log_every(log_every);
            setup(fw)?;
            serve(fw, bar, stop)?;
            Ok(fw.stats)
        },
        f,
    )
}

/// Runs `f` with a freshly initialised driver beside `firmware`, which drives a virtual
/// GSP on its own thread until the stop flag it is given is set (with a kick of the
/// BAR's doorbell), as [`serve`] does. Returns what both returned.
///
/// `f` must not assert (see [`with_gsp_thread`]).
///
/// # Errors
///
/// - `ENOMEM` if the shared memory or the BAR cannot be had.
pub fn with_firmware<R, S: Send>(
    firmware: impl FnOnce(&mut Vgsp<'static>, &SimBar<BAR0_SIZE>, &AtomicBool) -> Result<S> + Send,
    f: impl FnOnce(&Gsp, &SimBar0<'_>, &SimBar<BAR0_SIZE>) -> R,
) -> Result<(R, Result<S>)> {
    let bar = SimBar::<BAR0_SIZE>::new(&[NV_PGSP_QUEUE_HEAD::OFFSET])?;
    let gsp = KBox::pin_init(Gsp::new(vdev::device()?), GFP_KERNEL)?;
    // SAFETY: The views are used only by the GSP thread, which `run_beside` joins before
    // `gsp` (which owns the memory) is dropped.
    let (view, args) = unsafe { (gsp_view(gsp.cmdq()), device_view(gsp.args())) };
    let bus = gsp.cmdq().gsp_mem().dma_address();
    let stop = AtomicBool::new(false);
    let mut out = None;
    let (ran, r) = run_beside(
        || {
            // The GSP finds its queues from the boot arguments, as the firmware does.
            let mut fw = Vgsp::locate(view, bus, args).map_err(|refused| {
                pr_err!("vgsp: refuses to start: {}\n", refused.reason);
                refused.errno
            })?;
            // The bring-up runs the firmware's kind of CPU sequence on the bench's BAR.
            fw.set_cpu_sequence(vgsp::BOOT_SEQUENCE)?;
            out = Some(firmware(&mut fw, &bar, &stop));
            Ok(())
        },
        || {
            // Stops the GSP when `f` returns, and also when it panics on the host (which
            // unwinds), so a failed host assertion fails the test instead of leaving it
            // waiting for a GSP that never stops.
            let _stop = StopGsp(&stop, &bar);
            f(&gsp, bar.io(), &bar)
        },
    );
    Ok((r, ran.and_then(|()| out.unwrap_or(Err(EINVAL)))))
}

/// Runs `f` with a freshly initialised queue, bare (no bring-up, no event handler), and a
/// virtual GSP serving it on its own thread, set up by `setup` first (as
/// [`with_gsp_thread_and`]). Returns what `f` returned and the GSP's counters, or its
/// error.
///
/// `f` must not assert (see [`with_gsp_thread`]).
///
/// # Errors
///
/// - `ENOMEM` if the shared memory or the BAR cannot be had.
pub fn with_queue_thread<R>(
    setup: impl FnOnce(&mut Vgsp<'static>) -> Result + Send,
    f: impl FnOnce(&Cmdq, &SimBar0<'_>) -> R,
) -> Result<(R, Result<Stats>)> {
    let bar = SimBar::<BAR0_SIZE>::new(&[NV_PGSP_QUEUE_HEAD::OFFSET])?;
    let cmdq = KBox::pin_init(Cmdq::new(vdev::device()?), GFP_KERNEL)?;
    // SAFETY: The view is used only by the GSP thread, which `run_beside` joins before
    // `cmdq` (which owns the memory) is dropped.
    let view = unsafe { gsp_view(&cmdq) };
    let stop = AtomicBool::new(false);
    let mut stats = None;
    let (ran, r) = run_beside(
        || {
            let mut fw = Vgsp::new(view)?;
            setup(&mut fw)?;
            serve(&mut fw, &bar, &stop)?;
            stats = Some(fw.stats);
            Ok(())
        },
        || {
            let _stop = StopGsp(&stop, &bar);
            f(&cmdq, bar.io())
        },
    );
    Ok((r, ran.and_then(|()| stats.ok_or(EINVAL))))
}

/// Runs `caller(0)` to `caller(count - 1)`, each on a thread of its own (the last on the
/// calling thread), and returns once all have: callers sharing one queue.
///
/// `caller` must not assert (see [`with_gsp_thread`]); it reports through what it shares.
///
/// # Errors
///
/// The first error of creating a thread; the callers that had one still ran.
pub fn run_callers(count: usize, caller: &(dyn Fn(usize) + Sync)) -> Result {
    match count {
        0 => Ok(()),
        1 => {
            caller(0);
            Ok(())
        }
        _ => {
            let (spawned, rest) = run_beside(
                || {
                    caller(count - 1);
                    Ok(())
                },
                || run_callers(count - 1, caller),
            );
            spawned.and(rest)
        }
    }
}

/// Tells the GSP thread to stop when dropped.
struct StopGsp<'a>(&'a AtomicBool, &'a SimBar<BAR0_SIZE>);

impl Drop for StopGsp<'_> {
    fn drop(&mut self) {
        // ORDERING: `Release` pairs with the `Acquire` load in `serve` (or the firmware's
        // own loop); the kick after it wakes the GSP if it sleeps on the doorbell.
        self.0.store(true, Ordering::Release);
        self.1.kick();
    }
}
