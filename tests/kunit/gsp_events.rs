// SPDX-License-Identifier: GPL-2.0

//! Events: what the GSP sends unasked reaches the handler registered for its function,
//! in arrival order, from whichever wait takes it off the ring; an event without a
//! handler is counted, never mistaken for the message a wait is for.

use core::sync::atomic::{
    AtomicU32,
    AtomicUsize,
    Ordering, //
};

use kernel::prelude::*;
use nova_core::gsp::cmdq::{
    EventHandler,
    GspMessage, //
};

/// How many events a [`Recorder`] keeps.
pub const KEPT: usize = 8;

/// A handler that keeps the function and the first payload word of each event it is
/// given, in order.
pub struct Recorder {
    functions: [AtomicU32; KEPT],
    words: [AtomicU32; KEPT],
    seen: AtomicUsize,
}

impl Recorder {
    /// A recorder that has seen nothing.
    pub const fn new() -> Self {
        Self {
            functions: [const { AtomicU32::new(0) }; KEPT],
            words: [const { AtomicU32::new(0) }; KEPT],
            seen: AtomicUsize::new(0),
        }
    }

    /// The number of events seen.
    pub fn seen(&self) -> usize {
        // ORDERING: `Acquire` pairs with the `Release` increment in `handle`: the entries
        // below the count are written.
        self.seen.load(Ordering::Acquire)
    }

    /// The function and first payload word of the `i`th event seen.
    pub fn event(&self, i: usize) -> (u32, u32) {
        // ORDERING: relaxed loads of entries below `seen()`, published by its `Release`.
        (
            self.functions[i].load(Ordering::Relaxed),
            self.words[i].load(Ordering::Relaxed),
        )
    }
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

impl EventHandler for Recorder {
    fn handle(&self, msg: &GspMessage) {
        // Handlers run one at a time here (the driver receives on one thread).
        let i = self.seen.load(Ordering::Relaxed);
        if i >= KEPT {
            return;
        }
        let word = msg
            .payload
            .get(..4)
            .map_or(0, |w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        // ORDERING: relaxed stores of the entry, published by the `Release` below.
        self.functions[i].store(msg.function, Ordering::Relaxed);
        self.words[i].store(word, Ordering::Relaxed);
        // ORDERING: `Release` pairs with the `Acquire` load in `seen`.
        self.seen.store(i + 1, Ordering::Release);
    }
}

/// The cases of the `nova_core_gsp_events` suite.
#[kunit_tests(nova_core_gsp_events)]
pub mod tests {
    use kernel::prelude::*;
    use nova_core::gsp::{
        cmdq::BenchSeam,
        fw::MsgFunction, //
    };
    use nova_testbench::rpc::CopyEvent;
    use zerocopy::IntoBytes;

    use super::Recorder;
    use crate::{
        fixture::{
            check,
            Pair, //
        },
        gsp_thread::with_gsp_thread_and,
    };

    /// The payload of a test's event number `n`.
    fn about(n: u32) -> CopyEvent {
        CopyEvent {
            sequence: n,
            pad: 0,
        }
    }

    #[test]
    fn a_function_that_is_not_an_event_cannot_have_a_handler() -> Result {
        static HANDLER: Recorder = Recorder::new();
        let pair = Pair::new()?;
        check!(pair.cmdq.on_event(MsgFunction::GSP_RM_CONTROL, &HANDLER) == Err(EINVAL))
    }

    #[test]
    fn a_second_handler_for_one_function_is_refused() -> Result {
        static HANDLER: Recorder = Recorder::new();
        let pair = Pair::new()?;
        pair.cmdq.on_event(MsgFunction::RC_TRIGGERED, &HANDLER)?;
        check!(pair.cmdq.on_event(MsgFunction::RC_TRIGGERED, &HANDLER) == Err(EBUSY))
    }

    #[test]
    fn events_reach_their_handlers_in_arrival_order_during_the_bring_up() -> Result {
        static HANDLER: Recorder = Recorder::new();
        let (booted, stats) = with_gsp_thread_and(
            0,
            |fw| {
                fw.post_event(MsgFunction::RC_TRIGGERED, about(1).as_bytes())?;
                fw.post_event(MsgFunction::MMU_FAULT_QUEUED, about(2).as_bytes())?;
                fw.post_event(MsgFunction::POST_EVENT, about(3).as_bytes())
            },
            |gsp, bar, _| {
                for function in [
                    MsgFunction::POST_EVENT,
                    MsgFunction::RC_TRIGGERED,
                    MsgFunction::MMU_FAULT_QUEUED,
                ] {
                    gsp.cmdq().on_event(function, &HANDLER)?;
                }
                gsp.boot(bar, &vgsp::PCI_FUNCTION)?;
                let events = gsp.cmdq().events();
                // The GSP's log lines went to the log's own handler.
                Ok::<_, Error>((events.dispatched - gsp.log_lines(), events.unhandled))
            },
        )?;
        stats?;
        check!(booted == Ok((3, 0)))?;
        check!(HANDLER.seen() == 3)?;
        check!(HANDLER.event(0) == (u32::from(MsgFunction::RC_TRIGGERED), 1))?;
        check!(HANDLER.event(1) == (u32::from(MsgFunction::MMU_FAULT_QUEUED), 2))?;
        check!(HANDLER.event(2) == (u32::from(MsgFunction::POST_EVENT), 3))
    }

    #[test]
    fn an_event_without_a_handler_is_counted_and_passed_over() -> Result {
        let (booted, stats) = with_gsp_thread_and(
            0,
            |fw| fw.post_event(MsgFunction::RC_TRIGGERED, about(1).as_bytes()),
            |gsp, bar, _| {
                gsp.boot(bar, &vgsp::PCI_FUNCTION)?;
                Ok::<_, Error>(gsp.cmdq().events().unhandled)
            },
        )?;
        stats?;
        check!(booted == Ok(1))
    }

    #[test]
    fn the_gsp_refuses_to_post_a_function_that_is_not_an_event() -> Result {
        let mut pair = Pair::new()?;
        check!(pair.gsp.post_event(MsgFunction::GSP_RM_CONTROL, &[]) == Err(EINVAL))
    }
}
