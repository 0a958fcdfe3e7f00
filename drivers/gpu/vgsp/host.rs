// SPDX-License-Identifier: GPL-2.0

//! Running the virtual GSP on a host thread, woken by the simulated BAR0 doorbell.

use std::{
    sync::atomic::{
        AtomicBool,
        Ordering, //
    },
    time::Duration,
};

use kernel::{
    host::SimBar,
    prelude::*,
    time::{
        delay::fsleep,
        Delta, //
    },
};
use nova_core::gsp::regs::BAR0_SIZE;

use crate::{
    Progress,
    Vgsp, //
};

/// How long an idle GSP sleeps before it looks at `stop` again.
const IDLE_WAIT: Duration = Duration::from_millis(20);

/// Runs `gsp` until `stop` is set: works while there is work, sleeps on the doorbell
/// when idle (no busy spin), and polls briefly while `gspq` is full.
///
/// # Errors
///
/// Any error of [`Vgsp::step`].
pub fn run(gsp: &mut Vgsp<'_>, bar: &SimBar<BAR0_SIZE>, stop: &AtomicBool) -> Result {
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
