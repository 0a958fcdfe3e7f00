// SPDX-License-Identifier: GPL-2.0

//! Delivery: which wait takes messages off `gspq`, and where each goes (see "Sharing" in
//! the `cmdq` documentation).
//!
//! The receiver hands each message over here, under `events` or `replies`, and wakes the
//! waits it is for:
//!
//! - an event to its [`EventHandler`], in arrival order;
//! - a reply, or the refusal of a message known to be one, to its caller
//!   ([`Replies::expect`], [`ReplyMatch`]);
//! - anything else, and a malformed element's refusal, to the waits that take any
//!   message, oldest first: a possible reply while fewer than [`UNCLAIMED_MAX`] are queued
//!   (for a later `Cmdq::post` caller), the rest only while such a wait runs;
//! - else it is dropped, counted ([`DeliveryCounts`], [`EventCounts`]) and logged; so is
//!   a reply whose caller stopped waiting.
//!
//! The receive asks here for each message's expected length ([`Replies::expected_len`]).
//! The driver knows r570's functions and those it sent ([`Replies::note_sent`]).
//!
//! # Events
//!
//! An event is a message the GSP sends unasked (r570's `NV_VGPU_MSG_EVENT_*`). Its
//! handler is called by the receiver under the receive lock, so none is lost or seen
//! twice and calls do not overlap; the receiver may be mid-send, so a handler must not
//! use the queue. An event without a handler that no wait takes is counted
//! ([`EventCounts::unhandled`]) and logged at debug level.
//!
//! Handlers are `&'static`, like a kernel notifier block, and `Sync`, keeping their state
//! behind interior mutability. Not a boxed closure: the shim's `KBox` cannot become a
//! `KBox<dyn Trait>` on a stable compiler.

use kernel::{
    device::{
        Bound,
        Device, //
    },
    prelude::*,
    sync::{
        aref::ARef,
        new_condvar,
        new_mutex,
        CondVar,
        CondVarTimeoutResult,
        Mutex, //
    },
    time::{
        msecs_to_jiffies,
        Delta, //
    },
};

use super::{
    receive::{
        Expected,
        GspMessage, //
    },
    wait::Budget,
};
use crate::gsp::{
    fault::Fault,
    fw::MsgFunction, //
};

/// What the driver does with one event function.
pub trait EventHandler: Sync {
    /// Handles `msg`, an event of the function this handler was registered for.
    fn handle(&self, msg: &GspMessage);
}

/// What the events came to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventCounts {
    /// Events handed to a handler.
    pub dispatched: u64,
    /// Events without a handler that no wait took.
    pub unhandled: u64,
}

/// A registered handler and the events it was handed.
struct Registered {
    function: u32,
    handler: &'static dyn EventHandler,
    dispatched: u64,
}

/// The registered handlers and what they were given.
#[derive(Default)]
struct Events {
    handlers: KVec<Registered>,
    unhandled: u64,
}

impl Events {
    /// Registers `handler` for the events of `function`.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if `function` is not an event.
    /// - `EBUSY` if a handler is registered for it already.
    /// - `ENOMEM` if the table cannot grow.
    fn register(&mut self, function: MsgFunction, handler: &'static dyn EventHandler) -> Result {
        if !function.is_event() {
            return Err(EINVAL);
        }
        let function = u32::from(function);
        if self.handlers.iter().any(|r| r.function == function) {
            return Err(EBUSY);
        }
        self.handlers.push(
            Registered {
                function,
                handler,
                dispatched: 0,
            },
            GFP_KERNEL,
        )?;
        Ok(())
    }

    /// Returns the handler of `function`, if any, counting the event handed to it.
    fn take_for(&mut self, function: u32) -> Option<&'static dyn EventHandler> {
        let registered = self.handlers.iter_mut().find(|r| r.function == function)?;
        registered.dispatched += 1;
        Some(registered.handler)
    }

    fn counts(&self) -> EventCounts {
        EventCounts {
            dispatched: self.handlers.iter().map(|r| r.dispatched).sum(),
            unhandled: self.unhandled,
        }
    }

    /// Returns the number of events of `function` handed to its handler.
    fn dispatched_of(&self, function: MsgFunction) -> u64 {
        let function = u32::from(function);
        self.handlers
            .iter()
            .find(|r| r.function == function)
            .map_or(0, |r| r.dispatched)
    }
}

/// Whether `function`, a number of the wire, is an event's.
fn is_event(function: u32) -> bool {
    MsgFunction(function).is_event()
}

/// The most functions outside r570's remembered as sent ([`Replies::note_sent`]).
const SENT_MAX: usize = 16;

/// The most messages kept for the waits that take any message.
const UNCLAIMED_MAX: usize = 64;

/// The most abandoned commands remembered; an older one's reply is unawaited.
const ABANDONED_MAX: usize = 64;

/// The wait queues for replies: command `sequence`'s caller sleeps on queue
/// `sequence % REPLY_QUEUES`, so a reply wakes few others.
const REPLY_QUEUES: usize = 8;

/// The number of wait queues: [`REPLY_QUEUES`], then the any-message queue.
const WAIT_QUEUES: usize = REPLY_QUEUES + 1;

/// What a wait waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Want {
    /// The reply to the command of this `rpc.sequence`.
    Reply(u32),
    /// The next message (or refusal) no one awaits.
    Any,
    /// Nothing: a send making room takes messages off the ring for others.
    Nothing,
}

impl Want {
    /// The wait queue a wait for this sleeps on.
    fn queue(self) -> usize {
        match self {
            // CAST: `u32` to `usize` is lossless on the 64-bit targets the driver builds for.
            Self::Reply(sequence) => sequence as usize % REPLY_QUEUES,
            Self::Any | Self::Nothing => REPLY_QUEUES,
        }
    }
}

/// How a reply is matched with the command it answers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReplyMatch {
    /// By `rpc.sequence`, which the GSP copies into its reply (the virtual GSP does).
    #[default]
    Sequence,
    /// By order: to the oldest awaited command of its function. Exact for a GSP that
    /// answers in order (as firmware does) if every answered command is sent with
    /// `Cmdq::submit`; a dropped reply shifts later ones onto the wrong callers.
    InOrder,
}

/// The most reply lengths noted ([`Replies::note_len`]); beyond it the oldest is forgotten.
const LENGTHS_MAX: usize = 64;

/// A command whose reply a caller awaits.
struct Awaited {
    sequence: u32,
    /// The function of its reply.
    function: u32,
    /// The reply, or its refusal, once handed over.
    reply: Option<Result<GspMessage>>,
    /// The caller stopped waiting: the reply is dropped when it comes.
    abandoned: bool,
}

/// What became of a message handed over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Handed {
    /// Kept for the caller that awaits the reply to the command of this `rpc.sequence`.
    Reply(u32),
    /// Queued for a wait that takes any message.
    Unclaimed,
    /// A reply its caller stopped waiting for: dropped.
    Late,
    /// Nobody waits for it: dropped.
    Dropped,
}

/// Counts of what the waits were handed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeliveryCounts {
    /// Replies kept for the callers awaiting them.
    pub replies: u64,
    /// Messages and refusals queued for the waits that take any message.
    pub unclaimed: u64,
    /// Replies that came after their caller stopped waiting.
    pub late: u64,
    /// Messages and refusals nobody waited for, but events without a handler.
    pub dropped: u64,
}

/// The replies awaited and the messages no one awaits, with what the waits share.
///
/// # Invariants
///
/// - `awaited` is in sending order.
/// - At most one entry of `awaited` has a given `sequence`.
struct Replies {
    /// Whether a wait is taking messages off the ring (it holds `Cmdq::rx` meanwhile).
    receiving: bool,
    /// The waits asleep on each wait queue ([`Want::queue`]).
    sleepers: [u32; WAIT_QUEUES],
    /// The waits that take any message, running now.
    listeners: usize,
    /// Why the last receive failed, or `None` if it succeeded.
    last_fault: Option<Fault>,
    matching: ReplyMatch,
    /// What was handed over so far.
    counts: DeliveryCounts,
    awaited: KVec<Awaited>,
    unclaimed: KVec<Result<GspMessage>>,
    /// Noted reply lengths, `(rpc.sequence, function, length)`, oldest first.
    lengths: KVec<(u32, u32, usize)>,
    /// The functions outside r570's sent or awaited ([`Replies::note_sent`]), oldest first.
    sent: [u32; SENT_MAX],
    /// How many of `sent` are noted.
    sent_len: usize,
}

impl Replies {
    /// Allocates room for [`UNCLAIMED_MAX`] messages and [`LENGTHS_MAX`] lengths.
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if that room cannot be had.
    fn new() -> Result<Self> {
        // INVARIANT: both lists are empty.
        Ok(Self {
            receiving: false,
            sleepers: [0; WAIT_QUEUES],
            listeners: 0,
            last_fault: None,
            matching: ReplyMatch::Sequence,
            counts: DeliveryCounts {
                replies: 0,
                unclaimed: 0,
                late: 0,
                dropped: 0,
            },
            awaited: KVec::new(),
            unclaimed: KVec::with_capacity(UNCLAIMED_MAX, GFP_KERNEL)?,
            lengths: KVec::with_capacity(LENGTHS_MAX, GFP_KERNEL)?,
            sent: [0; SENT_MAX],
            sent_len: 0,
        })
    }

    /// Notes that the reply (of `function`) to command `sequence` has `len` payload bytes.
    /// A note past [`LENGTHS_MAX`], or that cannot be kept, is forgotten: the reply is
    /// then delimited by its elements.
    fn note_len(&mut self, sequence: u32, function: u32, len: usize) {
        self.lengths.retain(|&mut (s, _, _)| s != sequence);
        if self.lengths.len() >= LENGTHS_MAX {
            let _ = self.lengths.remove(0);
        }
        let _ = self.lengths.push((sequence, function, len), GFP_KERNEL);
    }

    /// Notes that `function` is sent or awaited, so known (the last [`SENT_MAX`]).
    fn note_sent(&mut self, function: MsgFunction) {
        let number = u32::from(function);
        if function.is_r570() || self.sent[..self.sent_len].contains(&number) {
            return;
        }
        if self.sent_len == SENT_MAX {
            self.sent.rotate_left(1);
            self.sent_len -= 1;
        }
        self.sent[self.sent_len] = number;
        self.sent_len += 1;
    }

    /// Whether the driver knows wire `function`: r570's, or [`Replies::note_sent`]'s.
    fn knows(&self, function: u32) -> bool {
        MsgFunction(function).is_r570() || self.sent[..self.sent_len].contains(&function)
    }

    /// Whether a message of wire `function` may answer a command: known, not an event.
    fn may_answer(&self, function: u32) -> bool {
        !is_event(function) && self.knows(function)
    }

    /// The index in `lengths` of the note for `function` and `sequence`, per [`ReplyMatch`].
    fn noted_len(&self, function: u32, sequence: u32) -> Option<usize> {
        if !self.may_answer(function) {
            return None;
        }
        match self.matching {
            ReplyMatch::Sequence => self
                .lengths
                .iter()
                .position(|&(s, f, _)| s == sequence && f == function),
            ReplyMatch::InOrder => self.lengths.iter().position(|&(_, f, _)| f == function),
        }
    }

    /// The noted length of the message of `function` and `sequence`, kept until
    /// [`Replies::used_len`].
    fn expected_len(&self, function: u32, sequence: u32) -> Option<usize> {
        let i = self.noted_len(function, sequence)?;
        self.lengths.get(i).map(|&(_, _, len)| len)
    }

    /// Forgets the note for `function` and `rpc.sequence`, whose head was consumed.
    fn used_len(&mut self, function: u32, sequence: u32) {
        if let Some(i) = self.noted_len(function, sequence) {
            let _ = self.lengths.remove(i);
        }
    }

    /// Notes that a caller awaits the reply (of `function`) to command `sequence`.
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if the note cannot be kept.
    /// - `EBUSY` if a reply to `sequence` is awaited already (the sequence wrapped past a
    ///   command that never got its reply).
    fn expect(&mut self, sequence: u32, function: u32) -> Result {
        if self.awaited.iter().any(|a| a.sequence == sequence) {
            return Err(EBUSY);
        }
        // INVARIANT: added under the send lock before publishing, so in sending order;
        // `sequence` is not awaited yet (checked above).
        self.awaited.push(
            Awaited {
                sequence,
                function,
                reply: None,
                abandoned: false,
            },
            GFP_KERNEL,
        )?;
        Ok(())
    }

    /// Notes that command `sequence`'s caller no longer waits; its reply is dropped.
    fn abandon(&mut self, sequence: u32) {
        let Some(i) = self.awaited.iter().position(|a| a.sequence == sequence) else {
            return;
        };
        if self.awaited[i].reply.is_some() {
            self.counts.late += 1;
            let _ = self.awaited.remove(i);
            return;
        }
        self.awaited[i].abandoned = true;
        let abandoned = self.awaited.iter().filter(|a| a.abandoned).count();
        if abandoned > ABANDONED_MAX {
            if let Some(oldest) = self.awaited.iter().position(|a| a.abandoned) {
                let _ = self.awaited.remove(oldest);
            }
        }
    }

    /// The first wait queue with a sleeper, if any.
    fn a_sleeping_queue(&self) -> Option<usize> {
        self.sleepers.iter().position(|&n| n > 0)
    }

    /// Forgets the command `sequence`, which was never published: no reply will come.
    fn forget(&mut self, sequence: u32) {
        self.awaited.retain(|a| a.sequence != sequence);
    }

    /// Whether what `want` names was handed over.
    fn has(&self, want: Want) -> bool {
        match want {
            Want::Reply(sequence) => self.has_reply(sequence),
            Want::Any => self.has_unclaimed(),
            Want::Nothing => false,
        }
    }

    /// Takes what `want` names, if it was handed over.
    fn take(&mut self, want: Want) -> Option<Result<GspMessage>> {
        match want {
            Want::Reply(sequence) => self.take_reply(sequence),
            Want::Any => self.take_unclaimed(),
            Want::Nothing => None,
        }
    }

    /// Takes the reply to command `sequence`, or its refusal, if it was handed over.
    fn take_reply(&mut self, sequence: u32) -> Option<Result<GspMessage>> {
        let i = self
            .awaited
            .iter()
            .position(|a| a.sequence == sequence && a.reply.is_some())?;
        self.awaited.remove(i).ok().and_then(|a| a.reply)
    }

    /// Whether the reply to command `sequence` was handed over.
    fn has_reply(&self, sequence: u32) -> bool {
        self.awaited
            .iter()
            .any(|a| a.sequence == sequence && a.reply.is_some())
    }

    /// Takes the oldest message (or refusal) queued for the waits that take any message.
    fn take_unclaimed(&mut self) -> Option<Result<GspMessage>> {
        self.unclaimed.remove(0).ok()
    }

    /// Whether a message (or refusal) is queued for the waits that take any message.
    fn has_unclaimed(&self) -> bool {
        !self.unclaimed.is_empty()
    }

    /// Hands over `msg`, just taken off the ring. An `event` is never a reply (its
    /// `rpc.sequence` 0 may be a command's), nor is an unknown function's message.
    fn hand_over(&mut self, msg: GspMessage, event: bool) -> Handed {
        let (function, sequence) = (msg.function, msg.sequence);
        let reply = !event && self.may_answer(function);
        let item = match reply {
            false => Ok(msg),
            true => match self.hand_to_caller(function, sequence, Ok(msg)) {
                Ok(handed) => return handed,
                Err(back) => back,
            },
        };
        // A possible reply is kept for a later `post` caller; anything else only for a
        // running wait.
        if self.queue_unclaimed(item, reply) {
            return Handed::Unclaimed;
        }
        if !event {
            self.counts.dropped += 1;
        }
        Handed::Dropped
    }

    /// Hands `reply` (or its refusal) to its caller per [`ReplyMatch`]: [`Handed::Reply`],
    /// or [`Handed::Late`] (dropped) if it stopped waiting. Gives it back if unawaited.
    fn hand_to_caller(
        &mut self,
        function: u32,
        sequence: u32,
        reply: Result<GspMessage>,
    ) -> core::result::Result<Handed, Result<GspMessage>> {
        let found = match self.matching {
            ReplyMatch::Sequence => self
                .awaited
                .iter()
                .position(|a| a.sequence == sequence && a.reply.is_none()),
            ReplyMatch::InOrder => self
                .awaited
                .iter()
                .position(|a| a.function == function && a.reply.is_none()),
        };
        let Some(i) = found else {
            return Err(reply);
        };
        if self.awaited[i].abandoned {
            self.counts.late += 1;
            let _ = self.awaited.remove(i);
            return Ok(Handed::Late);
        }
        self.counts.replies += 1;
        self.awaited[i].reply = Some(reply);
        Ok(Handed::Reply(self.awaited[i].sequence))
    }

    /// Hands over the refusal `err` of a message of `function` and `rpc.sequence`: to its
    /// caller if awaited, else as [`Replies::hand_over_refusal`].
    fn hand_over_rejection(&mut self, err: Error, function: u32, sequence: u32) -> Handed {
        if self.may_answer(function) {
            if let Ok(handed) = self.hand_to_caller(function, sequence, Err(err)) {
                return handed;
            }
        }
        match self.hand_over_refusal(err) {
            true => Handed::Unclaimed,
            false => Handed::Dropped,
        }
    }

    /// Hands over an element's refusal `err`: queued for a running wait, else dropped.
    fn hand_over_refusal(&mut self, err: Error) -> bool {
        if self.queue_unclaimed(Err(err), false) {
            return true;
        }
        self.counts.dropped += 1;
        false
    }

    /// Queues `item` for the waits that take any message, if one runs or `kept`.
    fn queue_unclaimed(&mut self, item: Result<GspMessage>, kept: bool) -> bool {
        if (self.listeners == 0 && !kept) || self.unclaimed.len() >= UNCLAIMED_MAX {
            return false;
        }
        if self.unclaimed.push(item, GFP_KERNEL).is_err() {
            return false;
        }
        self.counts.unclaimed += 1;
        true
    }
}

/// Where messages taken off `gspq` go: event handlers, replies, and the wait queues.
#[pin_data]
pub(super) struct Delivery {
    /// The device, for its log.
    dev: ARef<Device>,
    /// The event handlers.
    #[pin]
    events: Mutex<Events>,
    /// What the waits share: the replies awaited and the messages handed over.
    #[pin]
    replies: Mutex<Replies>,
    /// The wait queues ([`Want::queue`]).
    queues: KVec<Pin<KBox<CondVar>>>,
}

impl Delivery {
    /// Allocates all that handing over needs, so no message is dropped for want of memory.
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if the memory cannot be had.
    pub(super) fn new(dev: &Device<Bound>) -> impl PinInit<Self, Error> + '_ {
        let queues = (|| {
            let mut queues = KVec::with_capacity(WAIT_QUEUES, GFP_KERNEL)?;
            for _ in 0..WAIT_QUEUES {
                queues.push(KBox::pin_init(new_condvar!(), GFP_KERNEL)?, GFP_KERNEL)?;
            }
            Ok::<_, Error>(queues)
        })();
        let replies = Replies::new();
        try_pin_init!(Self {
            dev: dev.into(),
            events <- new_mutex!(Events::default()),
            replies <- new_mutex!(replies?),
            queues: queues?,
        }? Error)
    }

    /// Registers `handler` for the GSP's events of `function`.
    ///
    /// # Errors
    ///
    /// As [`Events::register`].
    pub(super) fn register(
        &self,
        function: MsgFunction,
        handler: &'static dyn EventHandler,
    ) -> Result {
        self.events.lock().register(function, handler)
    }

    /// Returns the counts of the events handed to handlers and of those with none.
    pub(super) fn event_counts(&self) -> EventCounts {
        self.events.lock().counts()
    }

    /// Returns the number of events of `function` handed to its handler.
    pub(super) fn dispatched(&self, function: MsgFunction) -> u64 {
        self.events.lock().dispatched_of(function)
    }

    /// Returns the counts of what the receivers handed over to the waits.
    pub(super) fn counts(&self) -> DeliveryCounts {
        self.replies.lock().counts
    }

    /// Returns why the last receive failed, or `None` if it succeeded.
    pub(super) fn last_fault(&self) -> Option<Fault> {
        self.replies.lock().last_fault
    }

    /// Records `fault` as the fault of the receive in progress and returns its errno.
    pub(super) fn fault(&self, fault: Fault) -> Error {
        self.replies.lock().last_fault = Some(fault);
        fault.errno()
    }

    pub(super) fn set_matching(&self, matching: ReplyMatch) {
        self.replies.lock().matching = matching;
    }

    /// Whether the driver knows `function`: r570's, or one it sent a command of.
    pub(super) fn knows(&self, function: MsgFunction) -> bool {
        self.replies.lock().knows(function.into())
    }

    /// Notes, before its head is published, what command `sequence` of `function` is
    /// answered with: an awaited `reply` and its length `reply_len`, if given.
    ///
    /// # Errors
    ///
    /// As [`Replies::expect`].
    pub(super) fn sending(
        &self,
        sequence: u32,
        function: MsgFunction,
        reply: Option<u32>,
        reply_len: Option<(u32, usize)>,
    ) -> Result {
        if reply.is_none() && reply_len.is_none() && function.is_r570() {
            return Ok(());
        }
        let mut replies = self.replies.lock();
        if let Some(reply) = reply {
            replies.expect(sequence, reply)?;
            replies.note_sent(MsgFunction(reply));
        }
        if let Some((function, len)) = reply_len {
            replies.note_len(sequence, function, len);
        }
        replies.note_sent(function);
        Ok(())
    }

    /// Notes that awaited command `sequence` failed to send; if `published`, a reply is late.
    pub(super) fn unsent(&self, sequence: u32, published: bool) {
        let mut replies = self.replies.lock();
        match published {
            true => replies.abandon(sequence),
            false => replies.forget(sequence),
        }
    }

    /// Notes that the caller of command `sequence` no longer waits.
    pub(super) fn abandon(&self, sequence: u32) {
        self.replies.lock().abandon(sequence);
    }

    /// Takes published messages off the ring, if no wait receives, for a send with `tx` held.
    pub(super) fn take_published(
        &self,
        receive: impl FnOnce(Want, &mut Budget) -> core::result::Result<(), Fault>,
    ) {
        {
            let mut replies = self.replies.lock();
            if replies.receiving {
                return;
            }
            replies.receiving = true;
        }
        let received = receive(Want::Nothing, &mut Budget::new(Delta::ZERO));
        let mut replies = self.replies.lock();
        replies.receiving = false;
        match received {
            Err(fault) if fault.errno() != ETIMEDOUT => replies.last_fault = Some(fault),
            _ => {}
        }
        // A wait asleep because this send was receiving may take over.
        self.pass_on(&replies);
    }

    /// Wakes queue `queue`'s sleepers. `replies` is held, so none is between look and sleep.
    fn wake(&self, replies: &Replies, queue: usize) {
        if replies.sleepers[queue] > 0 {
            self.queues[queue].notify_all();
        }
    }

    /// Wakes whoever was `handed` something. `replies` is held.
    fn wake_for(&self, replies: &Replies, handed: Handed) {
        match handed {
            Handed::Reply(sequence) => self.wake(replies, Want::Reply(sequence).queue()),
            Handed::Unclaimed => self.wake(replies, Want::Any.queue()),
            Handed::Late | Handed::Dropped => {}
        }
    }

    /// If nobody receives, wakes one sleeper to take over (it receives or passes on as it
    /// ends). `replies` is held.
    fn pass_on(&self, replies: &Replies) {
        if !replies.receiving {
            if let Some(queue) = replies.a_sleeping_queue() {
                self.queues[queue].notify_one();
            }
        }
    }

    /// Waits within `budget` for what `want` names, receiving with `receive` while no
    /// other wait does, else asleep on its queue (see "Sharing").
    ///
    /// # Errors
    ///
    /// - `ETIMEDOUT` if `budget` runs out first.
    /// - `ERESTARTSYS` if a signal ended the sleep.
    /// - The ring's errors while receiving; for [`Want::Any`], an element's refusal.
    pub(super) fn wait(
        &self,
        want: Want,
        budget: &mut Budget,
        mut receive: impl FnMut(Want, &mut Budget) -> core::result::Result<(), Fault>,
    ) -> Result<GspMessage> {
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
            let received = receive(want, budget);
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

    /// Hands `msg` to whoever it is for; returns whether `want` is now there.
    pub(super) fn hand_over(&self, msg: GspMessage, want: Want) -> bool {
        let event = is_event(msg.function);
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
        let known = replies.knows(function);
        let handed = replies.hand_over(msg, event);
        let ready = replies.has(want);
        self.wake_for(&replies, handed);
        drop(replies);
        let name = MsgFunction(function).name();
        match handed {
            Handed::Reply(_) | Handed::Unclaimed => {}
            Handed::Dropped if !known => self.skip_unknown(function, sequence),
            Handed::Late => dev_warn!(
                self.dev,
                "gsp: {} ({}) for sequence {} dropped: its caller stopped waiting\n",
                name,
                function,
                sequence
            ),
            Handed::Dropped if event => self.pass_over(function),
            Handed::Dropped => dev_warn!(
                self.dev,
                "gsp: {} ({}) sequence {} dropped: nobody waits for it\n",
                name,
                function,
                sequence
            ),
        }
        ready
    }

    /// Hands an element's refusal for `fault` over; returns whether `want` is now there.
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

    /// Hands a message's refusal for `fault` to its caller, else to the waits that take
    /// any message; returns whether `want` is now there.
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

    /// Logs a stray element skipped for `fault`; no error for the waiter.
    pub(super) fn skip(&self, fault: Fault) {
        dev_warn!(self.dev, "gsp: element skipped: {}\n", fault.reason());
    }

    /// Logs a skipped message of unknown `function`, as RM's `_kgspProcessRpcEvent()` does.
    pub(super) fn skip_unknown(&self, function: u32, sequence: u32) {
        dev_warn!(
            self.dev,
            "gsp: message of unknown function {} (sequence {}) skipped\n",
            function,
            sequence
        );
    }

    /// Counts and logs an event of `function` that had no handler and that no wait took.
    fn pass_over(&self, function: u32) {
        self.events.lock().unhandled += 1;
        dev_dbg!(
            self.dev,
            "gsp: event {} ({}) has no handler\n",
            MsgFunction(function).name(),
            function
        );
    }

    /// Notes `msg`, passed over: logged if of an unknown function, counted if an event.
    pub(super) fn passed_over(&self, msg: &GspMessage) {
        if !self.replies.lock().knows(msg.function) {
            self.skip_unknown(msg.function, msg.sequence);
        } else if is_event(msg.function) {
            self.pass_over(msg.function);
        }
    }

    /// Runs `f` as a wait that takes any message, keeping unawaited messages meanwhile.
    pub(super) fn listening<R>(&self, f: impl FnOnce() -> R) -> R {
        self.replies.lock().listeners += 1;
        let r = f();
        self.replies.lock().listeners -= 1;
        r
    }
}

/// The lengths the readers expect, asked with `rx` held (in lock order).
impl Expected for Delivery {
    fn len(&self, function: u32, sequence: u32) -> Option<usize> {
        self.replies.lock().expected_len(function, sequence)
    }

    fn used(&self, function: u32, sequence: u32) {
        self.replies.lock().used_len(function, sequence);
    }
}
