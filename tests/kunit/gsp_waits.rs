// SPDX-License-Identifier: GPL-2.0

//! Waits that skip messages end within the caller's timeout: a GSP that keeps sending
//! log lines and never answers cannot hold the bring-up's waits or a copy's wait, and a
//! wait whose time runs out on a message it skips says so.

use core::sync::atomic::Ordering;

use kernel::{
    prelude::*,
    time::{
        delay::fsleep,
        Delta, //
    },
};
use nova_core::gsp::Gsp;
use vgsp::Progress;

use crate::{
    fixture::SimBar0,
    gsp_thread::with_firmware, //
};

/// How often the chatty GSP sends a log line.
pub const LOG_EVERY: Delta = Delta::from_millis(10);
/// How many lines it sends at most: 100 of them take 1 s, ten times the waits' timeout,
/// so a wait that restarts its timeout after each line (the bug these cases pin) fails
/// its bound instead of hanging the suite.
pub const LOG_LINES: u32 = 100;

/// Runs `f` with a freshly initialised driver beside a virtual GSP on its own thread
/// that sends a `UCODE_LIBOS_PRINT` line every [`LOG_EVERY`], at most [`LOG_LINES`]
/// of them, and never consumes a command. Returns what `f` returned and the number of
/// lines the GSP sent, or its error.
///
/// `f` must not assert (see `gsp_thread::with_gsp_thread`).
///
/// # Errors
///
/// - `ENOMEM` if the shared memory or the BAR cannot be had.
pub fn with_chatty_gsp<R>(f: impl FnOnce(&Gsp, &SimBar0<'_>) -> R) -> Result<(R, Result<u32>)> {
    with_firmware(
        |fw, _, stop| {
            let mut sent = 0;
            // ORDERING: `Acquire` pairs with the `Release` store in `with_firmware`; it only
            // hands over the stop request, the rings are ordered by their own barriers.
            while !stop.load(Ordering::Acquire) && sent < LOG_LINES {
                fsleep(LOG_EVERY);
                fw.log(b"vgsp: still booting")?;
                sent += 1;
                // Only the queued line is sent: `step` consumes a command only when
                // nothing is pending, and this loop stops stepping before that.
                while !fw.outbox_empty() && fw.step()? == Progress::Worked {}
            }
            Ok(sent)
        },
        |gsp, bar, _| f(gsp, bar),
    )
}

/// The cases of the `nova_core_gsp_waits` suite.
#[kunit_tests(nova_core_gsp_waits)]
pub mod tests {
    use core::sync::atomic::{
        AtomicBool,
        Ordering, //
    };
    use kernel::{
        prelude::*,
        time::{
            Delta,
            Instant,
            Monotonic, //
        },
    };

    use kernel::time::delay::fsleep;
    use nova_core::gsp::{
        cmdq::{
            BenchSeam,
            Budget,
            Skip,
            NAP, //
        },
        fault::Fault,
        fw::MsgFunction,
        Gsp, //
    };
    use nova_testbench::ce::CopyArena;
    use vgsp::Progress;

    use super::{
        with_chatty_gsp,
        with_firmware, //
    };
    use crate::fixture::check;

    /// Waits within `timeout` through the driver's one receive as its bring-up waits for
    /// `GSP_INIT_DONE`: passing over the events it does not wait for (none has a handler
    /// here but the log's); returns the wait's error.
    fn wait_as_the_bring_up(gsp: &Gsp, timeout: Delta) -> Option<Error> {
        gsp.cmdq()
            .receive(&mut Budget::new(timeout), |msg| {
                let function = msg.function();
                let awaited = function == MsgFunction::GSP_INIT_DONE
                    || function == MsgFunction::GSP_RUN_CPU_SEQUENCER;
                match function.is_event() && !awaited {
                    true => Skip::PassOver,
                    false => Skip::Take,
                }
            })
            .err()
    }

    /// The caller's timeout in these cases.
    const TIMEOUT: Delta = Delta::from_millis(100);
    /// What a loaded machine may add to a wait beyond its timeout and the one nap the
    /// wait may be in when its time runs out: the scheduler putting the waiting thread
    /// (or, under TCG, its vCPU) back on a CPU, which on two busy cores takes tens of
    /// milliseconds. A regression (the timeout restarted after each line) takes the
    /// GSP's 1 s of logging instead, well past this.
    const SCHEDULING_SLACK: Delta = Delta::from_millis(400);

    /// Checks that a wait that took `took` ended within [`TIMEOUT`] and one nap, and
    /// that the GSP logged meanwhile (`lines` received by the driver).
    fn check_ended_in_time(took: Delta, lines: u64) -> Result {
        let bound = TIMEOUT.as_nanos() + NAP.as_nanos() + SCHEDULING_SLACK.as_nanos();
        if took.as_nanos() < TIMEOUT.as_nanos() || took.as_nanos() > bound {
            pr_err!(
                "the wait took {} us; the timeout is {} us, the bound {} us\n",
                took.as_nanos() / 1000,
                TIMEOUT.as_nanos() / 1000,
                bound / 1000
            );
        }
        // A check prints its condition alone: the figures are printed above.
        check!(took.as_nanos() >= TIMEOUT.as_nanos())?;
        check!(took.as_nanos() <= bound)?;
        // A line every 10 ms during a 100 ms wait: up to ten, but a loaded machine may
        // run the GSP's thread late; one is enough for the wait to have met a chatty GSP.
        // None: the case did not test what it names.
        check!(lines >= 1)
    }

    #[test]
    fn a_gsp_that_keeps_logging_cannot_hold_a_wait_past_its_timeout() -> Result {
        let ((result, took, lines), sent) = with_chatty_gsp(|gsp, _| {
            let start = Instant::<Monotonic>::now();
            let result = wait_as_the_bring_up(gsp, TIMEOUT);
            (result, start.elapsed(), gsp.log_lines())
        })?;
        sent?;
        assert_eq!(result, Some(ETIMEDOUT));
        check_ended_in_time(took, lines)
    }

    #[test]
    fn a_gsp_that_keeps_logging_cannot_hold_a_copy_past_its_timeout() -> Result {
        let dev = vdev::device()?;
        let arena = CopyArena::new(dev, 4096)?;
        let ((result, took, skipped, lines), sent) = with_chatty_gsp(|gsp, bar| {
            let copy = match arena.start_copy(gsp.cmdq(), bar, 0, 2048, 1024, 1024) {
                Ok(copy) => copy,
                Err(e) => return (Some(e), Delta::ZERO, false, 0),
            };
            let start = Instant::<Monotonic>::now();
            let result = arena.finish_copy(copy, TIMEOUT).err();
            let took = start.elapsed();
            let skipped = gsp.cmdq().last_fault() == Some(Fault::NothingPublished)
                || gsp.cmdq().last_fault() == Some(Fault::OnlyOthersArrived);
            (result, took, skipped, gsp.log_lines())
        })?;
        sent?;
        assert_eq!(result, Some(ETIMEDOUT));
        // Else the copy's wait ended for another reason.
        assert!(skipped);
        // The copy's wait handed the lines to the log's handler meanwhile.
        check_ended_in_time(took, lines)
    }

    #[test]
    fn a_wait_whose_time_runs_out_on_a_skipped_message_names_it() -> Result {
        let posted = AtomicBool::new(false);
        let (got, ran) = with_firmware(
            |fw, _, stop| {
                // An event the bring-up neither waits for nor has a handler for: its
                // waits pass it over.
                fw.post_event(MsgFunction::RC_TRIGGERED, &[0; 8])?;
                while !fw.outbox_empty() && fw.step()? == Progress::Worked {}
                // ORDERING: `Release` pairs with the `Acquire` load below; it only says
                // the event is out, the ring is ordered by its own barriers.
                posted.store(true, Ordering::Release);
                // ORDERING: as in `with_chatty_gsp`.
                while !stop.load(Ordering::Acquire) {
                    fsleep(Delta::from_millis(1));
                }
                Ok(())
            },
            |gsp, _, _| {
                // ORDERING: `Acquire` pairs with the `Release` store above.
                while !posted.load(Ordering::Acquire) {
                    fsleep(Delta::from_millis(1));
                }
                // No time: the wait looks once, finds the event and skips it.
                let result = wait_as_the_bring_up(gsp, Delta::ZERO);
                (result, gsp.cmdq().last_fault())
            },
        )?;
        ran?;
        assert_eq!(got, (Some(ETIMEDOUT), Some(Fault::OnlySkippedArrived)));
        Ok(())
    }
}
