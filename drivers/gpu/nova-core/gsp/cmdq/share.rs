// SPDX-License-Identifier: GPL-2.0

//! Sharing the queue between callers: which wait receives, and the hand-over of what it
//! receives to whoever it is for (see "Sharing" in the [`super`] documentation).

use kernel::{
    prelude::*,
    sync::CondVarTimeoutResult,
    time::{
        msecs_to_jiffies,
        Delta, //
    },
};

use super::{
    receive::{
        Expected,
        Open,
        RxError, //
    },
    replies::{
        Handed,
        Replies,
        Want, //
    },
    wait::Budget,
    Cmdq,
    GspMessage, //
};
use crate::gsp::{
    events::is_event,
    fault::Fault,
    fw::MsgFunction, //
};

/// The lengths the readers expect, as the receive asks for them: with `rx` held, as the
/// lock order allows.
impl Expected for Cmdq {
    fn len(&self, function: u32, sequence: u32) -> Option<usize> {
        self.replies.lock().expected_len(function, sequence)
    }

    fn used(&self, function: u32, sequence: u32) {
        self.replies.lock().used_len(function, sequence);
    }
}

impl Cmdq {
    /// Takes one message already published off the ring, without waiting, if no wait is
    /// receiving, and hands it over. For a send that waits for ring space, with `tx` held
    /// (the lock order allows `rx` after it).
    pub(super) fn receive_published(&self) {
        {
            let mut replies = self.replies.lock();
            if replies.receiving {
                return;
            }
            replies.receiving = true;
        }
        let received = self.receive_until(Want::Nothing, &mut Budget::new(Delta::ZERO));
        let mut replies = self.replies.lock();
        replies.receiving = false;
        match received {
            Err(fault) if fault.errno() != ETIMEDOUT => replies.last_fault = Some(fault),
            _ => {}
        }
        // A wait asleep because this send was receiving may take over.
        self.pass_on(&replies);
    }

    /// Wakes the waits on queue `queue`, if any sleeps there. `replies` is held, so none
    /// can be between its look and its sleep.
    pub(super) fn wake(&self, replies: &Replies, queue: usize) {
        if replies.sleepers[queue] > 0 {
            self.queues[queue].notify_all();
        }
    }

    /// Wakes the waits on the queue of whoever was `handed` something, if any. `replies`
    /// is held.
    pub(super) fn wake_for(&self, replies: &Replies, handed: Handed) {
        match handed {
            Handed::Reply(sequence) => self.wake(replies, Want::Reply(sequence).queue()),
            Handed::Unclaimed => self.wake(replies, Want::Any.queue()),
            Handed::Late | Handed::Dropped => {}
        }
    }

    /// If nobody receives, wakes one wait asleep on a queue, so that it takes over the
    /// ring: called whenever a wait stops receiving or ends. One suffices: the wait woken
    /// either finds what it waits for, and passes on in turn as it ends, or receives.
    /// `replies` is held.
    pub(super) fn pass_on(&self, replies: &Replies) {
        if !replies.receiving {
            if let Some(queue) = replies.a_sleeping_queue() {
                self.queues[queue].notify_one();
            }
        }
    }

    /// Waits within `budget` until what `want` names is handed over, and takes it:
    /// receiving while no other wait does, else asleep on its wait queue (see "Sharing").
    ///
    /// # Errors
    ///
    /// - `ETIMEDOUT` if `budget` runs out first.
    /// - `ERESTARTSYS` if a signal ended the sleep.
    /// - The ring's errors while this wait receives, and for [`Want::Any`] an element's
    ///   refusal.
    pub(super) fn wait_delivered(&self, want: Want, budget: &mut Budget) -> Result<GspMessage> {
        let queue = want.queue();
        let mut replies = self.replies.lock();
        let got = loop {
            if let Some(got) = replies.take(want) {
                if got.is_ok() {
                    replies.last_fault = None;
                }
                break got;
            }
            if replies.receiving {
                let left = budget.left();
                if left.is_zero() {
                    replies.last_fault = Some(Fault::NothingDelivered);
                    break Err(ETIMEDOUT);
                }
                let ms = u32::try_from(left.as_millis_ceil()).unwrap_or(u32::MAX);
                replies.sleepers[queue] += 1;
                let woken = self.queues[queue]
                    .wait_interruptible_timeout(&mut replies, msecs_to_jiffies(ms));
                replies.sleepers[queue] -= 1;
                if let CondVarTimeoutResult::Signal { .. } = woken {
                    break Err(ERESTARTSYS);
                }
                continue;
            }
            // Receive, even with no time left: the ring gets one look.
            replies.receiving = true;
            drop(replies);
            let received = self.receive_until(want, budget);
            replies = self.replies.lock();
            replies.receiving = false;
            if let Err(fault) = received {
                replies.last_fault = Some(fault);
                break Err(fault.errno());
            }
        };
        // Whatever the outcome, a wait asleep may have to take over the ring.
        self.pass_on(&replies);
        got
    }

    /// Takes messages off the ring within `budget` and hands each over until what `want`
    /// names is there. The caller set `receiving`.
    ///
    /// # Errors
    ///
    /// The ring's faults: [`Fault::NothingPublished`] or [`Fault::OnlyOthersArrived`] if
    /// `budget` runs out first.
    pub(super) fn receive_until(&self, want: Want, budget: &mut Budget) -> Result<(), Fault> {
        let mut rx = self.rx.lock();
        let mut others = false;
        // A send taking what is published holds the send lock: it leaves a message still
        // open to the next wait, which waits the grace for its next element.
        let open = match want {
            Want::Nothing => Open::Keep,
            Want::Reply(_) | Want::Any => Open::Grace,
        };
        loop {
            let ready = match rx.receive_message(&self.gsp_mem, budget, self, open) {
                Ok(msg) => self.hand_over(msg, want),
                Err(RxError::Refused(fault)) => self.refuse(fault, want),
                Err(RxError::Rejected(fault, function, sequence)) => {
                    self.reject(fault, function, sequence, want)
                }
                Err(RxError::Skipped(fault)) => {
                    // Skipped as a message for others: no error for the waiter.
                    dev_warn!(self.dev, "gsp: element skipped: {}\n", fault.reason());
                    false
                }
                Err(RxError::Ring(fault)) => {
                    return Err(match (fault, others) {
                        (Fault::NothingPublished, true) => Fault::OnlyOthersArrived,
                        _ => fault,
                    });
                }
            };
            if ready {
                return Ok(());
            }
            others = true;
            // A message for others does not extend the wait; this also starts the clock
            // if every look so far found a message.
            if budget.left().is_zero() {
                return Err(Fault::OnlyOthersArrived);
            }
        }
    }

    /// Hands `msg`, just taken off the ring by the receiver, to whoever it is for (see
    /// [`replies`]); returns whether what `want` names is now there.
    pub(super) fn hand_over(&self, msg: GspMessage, want: Want) -> bool {
        let event = is_event(&msg);
        if event {
            let handler = self.events.lock().take_for(msg.function);
            if let Some(handler) = handler {
                // With `rx` held: handlers run in arrival order, one at a time.
                handler.handle(&msg);
                return false;
            }
        }
        let (function, sequence) = (msg.function, msg.sequence);
        let mut replies = self.replies.lock();
        let handed = replies.hand_over(msg, event);
        let ready = replies.has(want);
        self.wake_for(&replies, handed);
        drop(replies);
        let known = MsgFunction::try_from(function);
        let name = || known.map_or("UNKNOWN", MsgFunction::name);
        match handed {
            Handed::Reply(_) | Handed::Unclaimed => {}
            Handed::Dropped if known.is_err() => self.skip_unknown(function, sequence),
            Handed::Late => dev_warn!(
                self.dev,
                "gsp: {} ({}) for sequence {} dropped: its caller stopped waiting\n",
                name(),
                function,
                sequence
            ),
            Handed::Dropped if event => self.pass_over(function),
            Handed::Dropped => dev_warn!(
                self.dev,
                "gsp: {} ({}) sequence {} dropped: nobody waits for it\n",
                name(),
                function,
                sequence
            ),
        }
        ready
    }

    /// Hands the refusal of an element, for `fault`, to the waits that take any message;
    /// returns whether what `want` names is now there.
    pub(super) fn refuse(&self, fault: Fault, want: Want) -> bool {
        let mut replies = self.replies.lock();
        replies.last_fault = Some(fault);
        let queued = replies.hand_over_refusal(fault.errno());
        let ready = replies.has(want);
        if queued {
            self.wake(&replies, Want::Any.queue());
        }
        drop(replies);
        if !queued {
            dev_warn!(self.dev, "gsp: element refused: {}\n", fault.reason());
        }
        ready
    }

    /// Hands the refusal of a message of `function` and `rpc.sequence`, for `fault`, to
    /// the caller awaiting it as its reply, or else to the waits that take any message;
    /// returns whether what `want` names is now there.
    pub(super) fn reject(&self, fault: Fault, function: u32, sequence: u32, want: Want) -> bool {
        let mut replies = self.replies.lock();
        replies.last_fault = Some(fault);
        let handed = replies.hand_over_rejection(fault.errno(), function, sequence);
        let ready = replies.has(want);
        self.wake_for(&replies, handed);
        drop(replies);
        if matches!(handed, Handed::Late | Handed::Dropped) {
            dev_warn!(
                self.dev,
                "gsp: message {} sequence {} refused: {}\n",
                function,
                sequence,
                fault.reason()
            );
        }
        ready
    }

    /// Logs a message of `function`, a number the driver does not know, that a wait skips
    /// (it answers none of the driver's commands), as RM's `_kgspProcessRpcEvent()` logs
    /// and ignores a message it does not expect.
    pub(super) fn skip_unknown(&self, function: u32, sequence: u32) {
        dev_warn!(
            self.dev,
            "gsp: message of unknown function {} (sequence {}) skipped\n",
            function,
            sequence
        );
    }

    /// Counts and logs an event of `function` that had no handler and that no wait took.
    pub(super) fn pass_over(&self, function: u32) {
        self.events.lock().pass_over();
        dev_dbg!(
            self.dev,
            "gsp: event {} ({}) has no handler\n",
            MsgFunction::try_from(function).map_or("UNKNOWN", MsgFunction::name),
            function
        );
    }

    /// Runs `f` as a wait that takes any message: messages no one awaits are kept for it
    /// meanwhile (events without a handler among them).
    pub(super) fn listening<R>(&self, f: impl FnOnce() -> R) -> R {
        self.replies.lock().listeners += 1;
        let r = f();
        self.replies.lock().listeners -= 1;
        r
    }
}
