// SPDX-License-Identifier: GPL-2.0

//! The host tier: the driver on the calling thread, the virtual GSP on its own thread
//! behind a simulated BAR0 whose doorbell wakes it.

use std::sync::atomic::{
    AtomicBool,
    Ordering, //
};

use kernel::{
    host::{
        self,
        SimBar, //
    },
    prelude::*,
};
use nova_core::gsp::{
    regs::{
        Bar0,
        BAR0_SIZE,
        NV_PGSP_QUEUE_HEAD, //
    },
    Gsp,
};
use vgsp::{
    Stats,
    Vgsp, //
};

/// Runs `f` with a freshly initialised driver and a virtual GSP serving it on another
/// thread (sending a log line every `log_every` commands, 0 for never). Returns what `f`
/// returned and the GSP's counters, or its error.
///
/// # Errors
///
/// - `ENOMEM` if the shared memory cannot be had.
pub fn with_gsp_thread<R: Send>(
    log_every: u64,
    f: impl FnOnce(&mut Gsp, &Bar0, &SimBar<BAR0_SIZE>) -> R,
) -> Result<(R, Result<Stats>)> {
    let bar = SimBar::<BAR0_SIZE>::new(&[NV_PGSP_QUEUE_HEAD::OFFSET]);
    let mut gsp = Gsp::new(host::device())?;
    // SAFETY: The view is used only by the GSP thread, which the scope below joins before
    // `gsp` (which owns the memory) is dropped.
    let view = unsafe { vgsp_kunit::fixture::gsp_view(&gsp.cmdq) };
    let stop = AtomicBool::new(false);
    let out = std::thread::scope(|s| {
        let gsp_thread = s.spawn(|| -> Result<Stats> {
            let mut fw = Vgsp::new(view)?;
            fw.set_log_every(log_every);
            vgsp::host::run(&mut fw, &bar, &stop)?;
            Ok(fw.stats)
        });
        let r = f(&mut gsp, bar.io(), &bar);
        stop.store(true, Ordering::Release);
        bar.kick();
        // PANIC: the GSP thread does not panic; if it did, propagating is right.
        (r, gsp_thread.join().expect("GSP thread panicked"))
    });
    Ok(out)
}
