// SPDX-License-Identifier: GPL-2.0

//! Where the messages taken off `gspq` wait for the callers they are for.
//!
//! Whichever wait takes a message off the ring (see "Sharing" in [`super`]) hands it
//! over here, under [`super::Cmdq`]'s `replies` lock, then wakes the waiters:
//!
//! - a reply to a command whose caller awaits it ([`Replies::expect`]) is kept for that
//!   caller, found by [`ReplyMatch`], and so is the refusal of a message known to be that
//!   reply ([`Replies::hand_over_rejection`]);
//! - any other message, and the refusal of a malformed element, is queued for the waits
//!   that take whatever comes next ([`super::Cmdq::receive_any`] and the typed receives),
//!   oldest first: a message while fewer than 64 are queued (the reply to a command sent
//!   with [`super::Cmdq::post`] is received later by its caller), an event without a
//!   handler, a message of a function the driver does not know or a refusal only while
//!   such a wait runs;
//! - else it is dropped and counted ([`Delivery`]; an event without a handler in
//!   [`super::Cmdq::events`]); the caller of [`Replies::hand_over`] logs it.
//!
//! A caller that stops waiting (its timeout) leaves its command marked abandoned, so that
//! a late reply is known for what it is and dropped, rather than handed to a wait that
//! takes any message.
//!
//! The receive asks here, as each message's head comes, how long its reader expects it
//! to be ([`Replies::expected_len`]): the length noted for a reply when its command was
//! sent ([`Replies::note_len`]), or the one a typed wait expects of its function
//! ([`Replies::expect_typed`]). See "Split RPCs" in [`super`].

use kernel::prelude::*;

use crate::gsp::{
    cmdq::GspMessage,
    events::is_event_function,
    fault::Fault,
    fw::MsgFunction, //
};

/// The most messages kept for the waits that take any message; beyond it they are
/// dropped. Such a wait takes them one at a time, and the skipping waits drain them.
const UNCLAIMED_MAX: usize = 64;

/// The most abandoned commands remembered; beyond it the oldest is forgotten (its reply,
/// if it ever comes, is then a message nobody awaits).
const ABANDONED_MAX: usize = 64;

/// The wait queues of the waits for replies: the reply to command `sequence` is waited
/// for on queue `sequence % REPLY_QUEUES`, so that handing a reply over wakes its caller
/// and few others. The waits that take any message have a queue of their own, the last.
pub(crate) const REPLY_QUEUES: usize = 8;

/// The number of wait queues: [`REPLY_QUEUES`], then the one of the waits that take any
/// message.
pub(crate) const WAIT_QUEUES: usize = REPLY_QUEUES + 1;

/// What a wait waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Want {
    /// The reply to the command of this `rpc.sequence`.
    Reply(u32),
    /// The next message (or refusal) no one awaits.
    Any,
    /// Nothing: a receive that takes what is published off the ring for the others.
    Nothing,
}

impl Want {
    /// The wait queue a wait for this sleeps on.
    pub(crate) fn queue(self) -> usize {
        match self {
            // CAST: `u32` to `usize` is lossless on the 64-bit targets the driver builds for.
            Self::Reply(sequence) => sequence as usize % REPLY_QUEUES,
            Self::Any | Self::Nothing => REPLY_QUEUES,
        }
    }
}

/// Whether a message of `function`, a number of the wire, may answer a command of the
/// driver's: not an event's, and one the driver knows (the GSP answers a command with its
/// own function).
fn may_answer(function: u32) -> bool {
    !is_event_function(function) && MsgFunction::try_from(function).is_ok()
}

/// How a reply is matched with the command it answers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReplyMatch {
    /// By `rpc.sequence`, which the GSP copies from the command into its reply (the
    /// virtual GSP does): exact, in whatever order the replies come.
    #[default]
    Sequence,
    /// By order: a reply goes to the oldest awaited command of its function, whatever its
    /// `rpc.sequence`. Exact for a GSP that answers commands one at a time, in the order it
    /// consumed them (as GSP firmware does), provided every command that gets a reply is
    /// sent with its reply awaited ([`super::Cmdq::send_command`],
    /// [`super::Cmdq::submit`]), never with [`super::Cmdq::post`].
    InOrder,
}

/// The most reply lengths noted ([`Replies::note_len`]); beyond it the oldest is forgotten
/// (its reply, if it ever comes, is then reassembled as a message no one expects).
const LENGTHS_MAX: usize = 64;

/// A command whose reply a caller awaits.
struct Awaited {
    /// Its `rpc.sequence`.
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
pub(crate) enum Handed {
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
pub struct Delivery {
    /// Replies kept for the callers awaiting them.
    pub replies: u64,
    /// Messages and refusals queued for the waits that take any message.
    pub unclaimed: u64,
    /// Replies that came after their caller stopped waiting.
    pub late: u64,
    /// Messages and refusals nobody waited for (events without a handler excepted, which
    /// [`super::Cmdq::events`] counts).
    pub dropped: u64,
}

/// The replies awaited and the messages no one awaits, with what the waits share.
///
/// # Invariants
///
/// `awaited` is in the order the commands were sent (each is added under the send lock
/// before its command is published); at most one entry has a given `sequence`.
pub(crate) struct Replies {
    /// Whether a wait is taking messages off the ring (it holds `Cmdq::rx` meanwhile).
    pub(crate) receiving: bool,
    /// The waits asleep on each wait queue ([`Want::queue`]).
    pub(crate) sleepers: [u32; WAIT_QUEUES],
    /// The waits that take any message, running now.
    pub(crate) listeners: usize,
    /// Why the last receive failed, or `None` if it succeeded.
    pub(crate) last_fault: Option<Fault>,
    /// How replies are matched.
    pub(crate) matching: ReplyMatch,
    /// What was handed over so far.
    pub(crate) counts: Delivery,
    awaited: KVec<Awaited>,
    unclaimed: KVec<Result<GspMessage>>,
    /// The payload lengths of replies still to come, where their command said
    /// ([`Replies::note_len`]): `(rpc.sequence, function, length)`, oldest first.
    lengths: KVec<(u32, u32, usize)>,
    /// The lengths the typed waits that take any message expect of their function
    /// ([`Replies::expect_typed`]): `(function, length)`.
    typed: KVec<(u32, usize)>,
}

impl Replies {
    /// Nothing awaited, nothing kept, nobody receiving; room for the most messages kept
    /// ([`UNCLAIMED_MAX`]) and reply lengths noted ([`LENGTHS_MAX`]) is allocated now, so
    /// that handing a message over never allocates and never drops one for want of memory.
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if that room cannot be had.
    pub(crate) fn new() -> Result<Self> {
        // INVARIANT: both lists are empty.
        Ok(Self {
            receiving: false,
            sleepers: [0; WAIT_QUEUES],
            listeners: 0,
            last_fault: None,
            matching: ReplyMatch::Sequence,
            counts: Delivery {
                replies: 0,
                unclaimed: 0,
                late: 0,
                dropped: 0,
            },
            awaited: KVec::new(),
            unclaimed: KVec::with_capacity(UNCLAIMED_MAX, GFP_KERNEL)?,
            lengths: KVec::with_capacity(LENGTHS_MAX, GFP_KERNEL)?,
            typed: KVec::new(),
        })
    }

    /// Notes that the reply, of `function`, to the command `sequence` about to be sent has
    /// `len` payload bytes: a split reply is whole at that length, and refused shorter.
    /// The oldest note is forgotten beyond [`LENGTHS_MAX`], and so is a note that cannot
    /// be kept: the reply is then reassembled as the GSP's elements delimit it.
    pub(crate) fn note_len(&mut self, sequence: u32, function: u32, len: usize) {
        self.lengths.retain(|&mut (s, _, _)| s != sequence);
        if self.lengths.len() >= LENGTHS_MAX {
            let _ = self.lengths.remove(0);
        }
        let _ = self.lengths.push((sequence, function, len), GFP_KERNEL);
    }

    /// Notes that a typed wait that takes any message expects messages of `function` to
    /// have `len` payload bytes, until [`Replies::unexpect_typed`].
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if the note cannot be kept.
    pub(crate) fn expect_typed(&mut self, function: u32, len: usize) -> Result {
        self.typed.push((function, len), GFP_KERNEL)?;
        Ok(())
    }

    /// Drops one note of [`Replies::expect_typed`].
    pub(crate) fn unexpect_typed(&mut self, function: u32, len: usize) {
        if let Some(i) = self.typed.iter().position(|&t| t == (function, len)) {
            let _ = self.typed.remove(i);
        }
    }

    /// The index in `lengths` of the length noted for the reply of `function` and
    /// `rpc.sequence`, matched as [`ReplyMatch`] says. An event answers no command, nor
    /// does a message of an unknown function.
    fn noted_len(&self, function: u32, sequence: u32) -> Option<usize> {
        if !may_answer(function) {
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

    /// The payload length expected of the message of `function` and `rpc.sequence`
    /// whose head is being received, if any reader expects one: the length noted for the
    /// reply it is, else the one a typed wait expects of its function. The note stays
    /// until the head is consumed ([`Replies::used_len`]).
    pub(crate) fn expected_len(&self, function: u32, sequence: u32) -> Option<usize> {
        if let Some(i) = self.noted_len(function, sequence) {
            return self.lengths.get(i).map(|&(_, _, len)| len);
        }
        self.typed
            .iter()
            .find(|&&(f, _)| f == function)
            .map(|&(_, len)| len)
    }

    /// Forgets the length noted for the reply of `function` and `rpc.sequence`, whose head
    /// was consumed.
    pub(crate) fn used_len(&mut self, function: u32, sequence: u32) {
        if let Some(i) = self.noted_len(function, sequence) {
            let _ = self.lengths.remove(i);
        }
    }

    /// Notes that a caller awaits the reply, of `function`, to the command `sequence`
    /// about to be sent.
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if the note cannot be kept.
    /// - `EBUSY` if a reply to `sequence` is awaited already (the sequence wrapped past a
    ///   command that never got its reply).
    pub(crate) fn expect(&mut self, sequence: u32, function: u32) -> Result {
        if self.awaited.iter().any(|a| a.sequence == sequence) {
            return Err(EBUSY);
        }
        // INVARIANT: added under the send lock, before the command is published, so in
        // the order of sending; its sequence is not awaited yet.
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

    /// Notes that the caller of command `sequence` no longer waits: a reply already
    /// handed over is dropped, one still to come will be.
    pub(crate) fn abandon(&mut self, sequence: u32) {
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

    /// The first wait queue on which a wait sleeps, if any: one of them takes over the
    /// ring when nobody receives.
    pub(crate) fn a_sleeping_queue(&self) -> Option<usize> {
        self.sleepers.iter().position(|&n| n > 0)
    }

    /// Forgets the command `sequence`, which was never published: no reply will come.
    pub(crate) fn forget(&mut self, sequence: u32) {
        self.awaited.retain(|a| a.sequence != sequence);
    }

    /// Whether what `want` names was handed over.
    pub(crate) fn has(&self, want: Want) -> bool {
        match want {
            Want::Reply(sequence) => self.has_reply(sequence),
            Want::Any => self.has_unclaimed(),
            Want::Nothing => false,
        }
    }

    /// Takes what `want` names, if it was handed over.
    pub(crate) fn take(&mut self, want: Want) -> Option<Result<GspMessage>> {
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

    /// Hands over `msg`, just taken off the ring; `event` says whether it is an event
    /// (events answer no command, so they are never taken for a reply: they carry
    /// `rpc.sequence` 0, which a command has too). A message of a function the driver does
    /// not know answers none of its commands either ([`may_answer`]).
    pub(crate) fn hand_over(&mut self, msg: GspMessage, event: bool) -> Handed {
        let (function, sequence) = (msg.function, msg.sequence);
        let reply = !event && may_answer(function);
        let item = match reply {
            false => Ok(msg),
            true => match self.hand_to_caller(function, sequence, Ok(msg)) {
                Ok(handed) => return handed,
                Err(back) => back,
            },
        };
        // A message that may be a reply is kept even while no wait takes any: it may be the
        // reply to a command sent with `post`, whose caller receives it later. An event
        // without a handler, or a message of an unknown function, is kept only for a wait
        // that runs.
        if self.queue_unclaimed(item, reply) {
            return Handed::Unclaimed;
        }
        if !event {
            self.counts.dropped += 1;
        }
        Handed::Dropped
    }

    /// Hands `reply`, a message of `function` answering command `sequence` or its
    /// refusal, to the caller awaiting it as [`ReplyMatch`] says: [`Handed::Reply`], or
    /// [`Handed::Late`] if that caller stopped waiting (the reply is dropped). Gives
    /// `reply` back if nobody awaits it.
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

    /// Hands over the refusal `err` of a message of `function` and `rpc.sequence` just
    /// taken off the ring: to the caller awaiting it as its reply, if one does, else as
    /// [`Replies::hand_over_refusal`] does ([`Handed::Unclaimed`] or [`Handed::Dropped`]).
    pub(crate) fn hand_over_rejection(
        &mut self,
        err: Error,
        function: u32,
        sequence: u32,
    ) -> Handed {
        if may_answer(function) {
            if let Ok(handed) = self.hand_to_caller(function, sequence, Err(err)) {
                return handed;
            }
        }
        match self.hand_over_refusal(err) {
            true => Handed::Unclaimed,
            false => Handed::Dropped,
        }
    }

    /// Hands over the refusal `err` of an element just taken off the ring: queued for
    /// the waits that take any message if one runs (returns `true`), else counted as
    /// dropped.
    pub(crate) fn hand_over_refusal(&mut self, err: Error) -> bool {
        if self.queue_unclaimed(Err(err), false) {
            return true;
        }
        self.counts.dropped += 1;
        false
    }

    /// Queues `item` for the waits that take any message, if one runs (or `kept`, for a
    /// later one) and there is room.
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
