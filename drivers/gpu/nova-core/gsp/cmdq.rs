// SPDX-License-Identifier: GPL-2.0

//! The GSP command queue: the CPU's side of the two message rings in [`GspMem`].
//!
//! The CPU writes commands into `cpuq` and publishes them by advancing
//! `cpuq.tx.writePtr`, then rings the doorbell; it reads the GSP's messages from `gspq`
//! and frees their slots by advancing `cpuq.rx.readPtr`.
//!
//! By concern, each in a file of its own, each importing only from those below it:
//!
//! - this file: the message traits, [`Cmdq`] and its entry points, [`PendingReply`], and
//!   the test bench's seam ([`BenchSeam`]);
//! - `cmdq/delivery.rs`: which wait receives, and where each message it receives goes
//!   (event handlers, the callers awaiting replies, the waits that take any message; see
//!   "Sharing");
//! - `cmdq/send.rs`: writing an RPC's elements to `cpuq`;
//! - `cmdq/receive.rs`: taking elements off `gspq`, checking their copies, reassembling
//!   split messages into [`GspMessage`]s;
//! - `cmdq/ring.rs`: the ring accessors (`DmaGspMem`) and their barriers, the only
//!   driver file a change of the ordering touches (its partner on the GSP's side is
//!   `drivers/gpu/vgsp/gsp/msgq.rs` and `outbox.rs`);
//! - `cmdq/wait.rs`: the wait policy, the one budget of a whole wait.
//!
//! # Ordering
//!
//! Every access to the other side's pointer goes through an accessor with acquire
//! semantics, and every update of our own pointer through one with release semantics;
//! the barrier sits inside the accessor, so no caller can misplace it. Each flavour is
//! the weakest that orders the accesses that actually surround that pointer:
//!
//! | accessor | barrier | orders | partner in the GSP (`vgsp`) |
//! |---|---|---|---|
//! | `DmaGspMem::gsp_read_ptr` | `dma_mb(Full)` after | its load before our slot stores | `Vgsp::advance_gsp_read_ptr`: `dma_mb(Full)` before the store |
//! | `DmaGspMem::advance_cpu_write_ptr` | `dma_mb(Write)` before | our slot stores before the pointer store | `Vgsp::cpu_write_ptr`: `dma_mb(Read)` after the load |
//! | `DmaGspMem::gsp_write_ptr` | `dma_mb(Read)` after | its load before our slot loads | `Vgsp::advance_gsp_write_ptr`: `dma_mb(Write)` before the store |
//! | `DmaGspMem::advance_cpu_read_ptr` | `dma_mb(Full)` before | our slot loads before the pointer store | `Vgsp::cpu_read_ptr`: `dma_mb(Full)` after the load |
//!
//! This is the project's one barrier table; the GSP's side mirrors each row.
//!
//! The doorbell is written with `writel` semantics ([`kernel::io::Io::write_reg`]), which
//! orders it after the write-pointer store.
//!
//! What one caller learnt of the GSP's pointers, the next caller on the same ring uses
//! without loading them again (see "Sharing"): the slots known free or published are kept
//! under the ring's lock. The lock's release orders the load that learnt them before it,
//! and the next holder's acquire of the lock orders its accesses of the slots after it
//! (Linux's memory model: the GSP's pointer store the first caller observed is observed
//! by the next), so the pairs above still order the GSP's accesses of a slot against the
//! driver's, whichever thread makes them. No barrier was added for sharing; the model
//! checks this hand-over (`tools/model`: the two-caller scenario, and the contract
//! checker's lock litmus tests).
//!
//! The benchmark compares these barriers with the alternatives (every one `Full`, and
//! the seed's pre-fix placement) by building mutated copies of the source, as the
//! ordering mutants are made (`cargo xtask variant-tree`); no build of this crate has a
//! barrier variant.
//!
//! # Sharing
//!
//! A [`Cmdq`] is shared by reference by every thread of the driver, as upstream's is.
//! Unlike upstream's, which holds one lock across a command and its reply, several callers
//! may have commands in flight at once, and each reply reaches the caller of its command.
//!
//! | lock | guards | held |
//! |---|---|---|
//! | `tx` ([`Mutex`]) | the `cpuq` write pointer and what is known free, the element and RPC sequence numbers | while one RPC's elements are written, including the waits for ring space |
//! | `rx` ([`Mutex`]) | the `gspq` read pointer and what is known published, the element sequence check, a split message half reassembled, the [`MsgqSignal`] | by the one wait taking messages off the ring (the *receiver*), for as long as it does |
//! | `events` (`Mutex`) | the event handlers and their counts | while a handler is looked up or registered, never across a call to it |
//! | `replies` (`Mutex`), with the wait queues `queues` (a `CondVar` each) | the replies awaited and the messages handed over for them, the messages no one awaits, who is receiving and who sleeps on which queue, the last fault | only briefly, never across a ring access or a call out; a wait sleeps on its queue with it released |
//!
//! Lock order: `tx`, then `rx`, then `events` or `replies` (never both). A send that
//! finds no room takes `rx` only with `tx` held, as the order allows.
//!
//! Receiving is done by whoever waits. A wait ([`PendingReply::wait`], [`Cmdq::receive`])
//! first looks under `replies` for what it waits for. If it is not there and no other
//! wait is receiving, it becomes the receiver:
//! it takes `rx` and takes messages off the ring one after the other, handing each over
//! (an event to its handler, under `rx`, so in arrival order; a reply to the caller that
//! awaits it, matched by `rpc.sequence` or, for a GSP that does not copy it into its
//! replies, by order, [`ReplyMatch`]; anything else to the waits that take any message,
//! see `delivery`) and waking the waits it is for, until what it waits for has come or
//! its timeout ends; then it stops receiving. A wait that is not the receiver sleeps
//! (`wait_interruptible_timeout`) on the wait queue of what it waits for (one of eight by
//! the command's `rpc.sequence`, or the queue of the waits that take any message), until
//! woken or its own timeout ends, so a reply handed over wakes its caller and seldom
//! another. Whenever a wait stops receiving or ends while nobody receives, it wakes one
//! wait asleep on a queue, which takes over the ring (or, finding what it waits for,
//! ends and passes on in turn). So every caller's timeout is its own, and a slow caller
//! holds up nobody: the receiver hands every message over as it comes, whoever it is for.
//!
//! A send that finds the ring full while no wait receives takes the messages the GSP has
//! posted itself (with `tx` held): the GSP may be waiting for room on `gspq` to answer,
//! and would otherwise never free `cpuq` while every caller sends.
//! This is the only way a send waits on anything but the GSP, and it is bounded by the
//! ring: a send holds `tx` for one RPC, which the GSP consumes as fast as it answers.
//!
//! What may sleep: the holder of `tx` (ring space), the receiver (messages; with a
//! [`MsgqSignal`], on it), and the other waits (on their queue). Nothing sleeps holding
//! `events` or `replies`. An event handler runs with `rx` held, on the receiver's thread,
//! which may be a sending caller holding `tx`: it must not use the queue (it would wait
//! for itself); a message that must be answered is taken by a wait instead (as the
//! bring-up takes `GSP_RUN_CPU_SEQUENCER`).
//!
//! Real GSP firmware answers the commands of `cpuq` one at a time, in the order it
//! consumed them; upstream's queue and nouveau's r535 code take the next reply of the
//! function they wait for, which that order makes right with one command in flight. This
//! queue matches a reply by `rpc.sequence`, which the virtual GSP copies from the command.
//! Were firmware not to copy it, [`ReplyMatch::InOrder`] gives each reply to the oldest
//! awaited command of its function, exact as long as every command that gets a reply is
//! sent with its reply awaited. Nothing else changes: callers still have commands in
//! flight at once and nobody waits for another's reply; what is lost is the check that a
//! reply is its command's (a reply the firmware dropped would shift the replies of that
//! function onto the next callers, where by sequence it is a timeout for one caller).
//!
//! # Sending
//!
//! Two entry points, one path (`send_parts`: the elements under the `tx` lock, the
//! doorbell after each), upstream's `send_command` and `send_command_no_wait` split at
//! the reply, so that several commands may be in flight:
//!
//! - [`Cmdq::submit`]: a command whose reply is awaited, through the [`PendingReply`] it
//!   returns (the bring-up's `Gsp::send_command` waits at once).
//! - [`Cmdq::post`]: a command whose reply nobody awaits by sequence: one the GSP does not
//!   answer ([`NoReply`]), or one whose reply is received as a message no one awaits
//!   ([`Cmdq::receive`]), for callers that match replies themselves and one-way streams.
//!
//! # Receiving
//!
//! Two entry points: [`PendingReply::wait`] takes the reply to a command (and
//! [`PendingReply::wait_retryable`], which it is, keeps it awaited after a failed wait),
//! [`Cmdq::receive`] the next message no one awaits (skipping those its caller passes
//! over, within one budget); [`Cmdq::read_msg`] reads either as its type. Upstream's
//! `receive_msg` is [`Cmdq::receive`] then [`Cmdq::read_msg`].
//!
//! # Waiting
//!
//! A send needs no look at all while the ring space it last saw free suffices. Otherwise
//! a wait for a message or for ring space looks once before it reads the clock, then back
//! to back for `SPIN_BUDGET` (100 us; a busy GSP answers within it, so the wait adds no
//! latency), then every `NAP` (50 us, `usleep_range` in a kernel): an idle driver does
//! not burn its CPU, and sees a message at most one nap late. With a [`MsgqSignal`] (the GSP's
//! interrupt), receives sleep on it instead.
//!
//! # Trust
//!
//! Everything the GSP writes is treated as hostile. Pointers outside the ring are
//! rejected; an element is copied out of the ring once and every check and every use is
//! on that copy, so bytes the GSP changes afterwards cannot reach the caller. Our own
//! pointers are kept in the driver and never read back from shared memory.
//!
//! # Split RPCs
//!
//! An RPC whose payload does not fit one element ([`MAX_ELEMENT_PAYLOAD`] bytes) goes as a
//! *head*, full (16 slots), then `CONTINUATION_RECORD` elements with the same
//! `rpc.sequence`, each carrying the next chunk. In both directions every element's
//! `rpc.length` covers the RPC header and that element's own chunk, the head's too:
//! r570 firmware sends its split messages so, and upstream and nouveau send their split
//! commands so. The whole length is nowhere in the elements; only the RPC's own fields
//! say it, where its type has one (a registry table's size, an RM control's
//! `paramsSize`).
//!
//! The receive follows nouveau's (`r535_gsp_msgq_recv()`): an element whose `rpc.length`
//! announces more than one element is refused; the length the reader expects decides
//! where a split message ends, and a message shorter than it is refused (nouveau's
//! `rpc len %d < %d`). The length is known from the reply's command
//! ([`CommandToGsp::reply_len`]: an echo's or an RM control's), from its type
//! ([`MessageFromGsp::LENGTH`]: a fixed-size message), for a reply awaited
//! ([`Cmdq::submit`]), or from its command for one posted ([`Cmdq::post`]). Where we
//! differ on purpose:
//!
//! - Nouveau knows the length of every message it receives, as it receives only what a
//!   caller asked for. This queue also receives what nobody asked for (events, replies
//!   whose command did not say): such a message is delimited by [`Delimiter`], the
//!   rule the virtual GSP's receive uses too, and the one place it is stated (which
//!   records continue a message, and the [`RECORD_TIMEOUT`] grace after a full element).
//!   A send that takes what is published to make room does not wait that grace, as it
//!   holds the `tx` lock and every other sender with it: it leaves such a message open,
//!   and the next wait resumes it and waits the grace.
//! - Nouveau reads `expected` bytes whatever the elements say; here every element is
//!   checked (its sequence, its function). A valid continuation record that continues no
//!   message (after an element that ends its message, or past the length expected) is a
//!   stray record: consumed, skipped as a message for others and logged, no error for the
//!   waiter.
//! - A reply that reports an error (`rpc_result`) is taken as it is, however short: it
//!   carries none of its type's payload.
//! - A message is reassembled in one `KVec`, so in a kernel it is bounded by `kmalloc`'s
//!   largest allocation (4 MiB on x86_64 and arm64), which [`MAX_RPC_PAYLOAD`] is: a
//!   message nobody expects a length of grows by doubling from its head's chunk, and
//!   moves to an allocation of exactly the largest RPC rather than double past it.
//!
//! # Memory
//!
//! No message is lost for want of memory. Every element is copied out and checked
//! without an allocation (into the message's buffer when it has room, else into a buffer
//! of one element's payload allocated with the queue), the room for the messages handed
//! over to the waits is allocated with the queue, and the memory a message's bytes go to
//! is reserved before the element that carries them is consumed (`cmdq/receive.rs`). If
//! it cannot be had, the receive fails with `ENOMEM` and consumes nothing: the element
//! stays on the ring, a message half reassembled stays in the queue, and a retry resumes
//! there ([`Fault::NoMemory`]). A caller awaiting a reply retries with
//! [`PendingReply::wait_retryable`].
//!
//! # Errors on receive
//!
//! Every refusal leaves the queue usable: the next valid message is received as if
//! nothing had happened, and [`BenchSeam::last_fault`] says in a few words what was wrong.
//! No GSP content makes the driver panic, or read or write outside `GspMem`. A wait ends
//! within the caller's timeout, but for the message it is receiving when the timeout ends:
//! at most [`RECORD_TIMEOUT`] after a full element, longer only while the GSP keeps
//! publishing that message's records, each within [`RECORD_TIMEOUT`] of the one before,
//! up to the largest RPC.
//!
//! A message of a function the driver does not know is no error for a waiter: it answers
//! none of the driver's commands, so it is never taken for a reply; the waits that skip
//! messages skip it (the bring-up's), a typed read reports it as not the message asked
//! for (`ERANGE`, [`Fault::UnknownFunction`]), and wherever it is skipped it is logged
//! with its number, as RM's `_kgspProcessRpcEvent()` logs and ignores a message it does
//! not expect. A receive that takes any message returns it as it is. The functions the
//! driver knows are r570's and those it sent commands of (a test bench's own).
//!
//! A refusal of an element (the faults that consume it) goes to the waits that take any
//! message, as the message would have, or, when the message it belongs to is known ("to
//! the message's caller"), to the caller awaiting that message as its reply if one does;
//! with none running it is logged and counted ([`BenchSeam::delivery`]). A continuation
//! record refused for any reason takes the message it continues with it, so its refusal
//! goes to that message's caller. The ring's own errors and `ENOMEM` (the faults that
//! consume nothing) go to the receiver.
//!
//! The faults are [`Fault`]'s variants, one per class, each with its errno
//! ([`Fault::errno`]), what the receive consumes for it ([`Fault::consumes`]) and its
//! reason ([`Fault::reason`]); [`BenchSeam::last_fault`] names the last.
//!
//! Elements are copied out of the ring once and checked on the copy, so bytes the GSP
//! changes after the check (a double fetch) never reach the caller. On send: a GSP read
//! pointer outside the ring is `EIO` (nothing written), a ring that stays full
//! `ETIMEDOUT`, a payload above 4 MiB `EMSGSIZE`.
//!
//! [`Delimiter`]: crate::gsp::fw::element::Delimiter

mod delivery;
mod receive;
mod ring;
mod send;
mod wait;

use core::marker::PhantomData;

use kernel::{
    device::{
        Bound,
        Device, //
    },
    dma::Coherent,
    prelude::*,
    sync::{
        new_mutex,
        Mutex, //
    },
    time::Delta,
};
use zerocopy::{
    FromBytes,
    Immutable,
    IntoBytes, //
};

use self::{
    delivery::{
        Delivery,
        Want, //
    },
    receive::{
        CmdqRx,
        Open,
        RxError, //
    },
    ring::DmaGspMem,
    send::CmdqTx,
    wait::SEND_TIMEOUT,
};
pub use self::{
    delivery::{
        DeliveryCounts,
        EventCounts,
        EventHandler,
        ReplyMatch, //
    },
    receive::{
        GspMessage,
        MsgqSignal, //
    },
    wait::{
        Budget,
        NAP,
        RECORD_TIMEOUT, //
    },
};
use crate::gsp::{
    fault::Fault,
    fw::{
        ring::ring_ptr,
        GspMem,
        MsgFunction,
        MAX_ELEMENT_PAYLOAD,
        MAX_RPC_PAYLOAD,
        NV_OK, //
    },
    regs::Doorbell,
};

/// The [`CommandToGsp::Reply`] of a command the GSP does not answer: such a command is
/// sent with [`Cmdq::post`].
pub struct NoReply;

/// A command the driver sends to the GSP: a fixed part ([`CommandToGsp::Command`]), then a
/// variable-length payload, and the message the GSP answers it with
/// ([`CommandToGsp::Reply`]).
///
/// Upstream's shape, with two deliberate differences: [`CommandToGsp::init`] returns the
/// fixed part by value rather than a pin-init `Init` that writes it in place (the
/// largest fixed part, the static configuration, is 0x678 bytes, and the element is
/// checksummed from the bytes as written either way), and the variable payload is
/// handed over as bytes ([`CommandToGsp::variable_payload`]) rather than written through
/// an `SBufferIter` by the command (every variable payload here exists as bytes
/// already). So there is no `InitError` either: building a command cannot fail once the
/// command exists.
pub trait CommandToGsp {
    /// The function.
    const FUNCTION: MsgFunction;
    /// The fixed part, first in the payload.
    type Command: IntoBytes + Immutable;
    /// The message the GSP answers with, or [`NoReply`].
    type Reply;
    /// Returns the fixed part.
    fn init(&self) -> Self::Command;
    /// Returns the bytes that follow the fixed part; none by default.
    fn variable_payload(&self) -> &[u8] {
        &[]
    }
    /// Returns the size of the whole payload, fixed part and variable payload.
    fn size(&self) -> usize {
        core::mem::size_of::<Self::Command>() + self.variable_payload().len()
    }

    /// Returns the payload length of the reply, where this command decides it (an RM
    /// control's reply is as long as its parameters); `None` by default, when the reply's
    /// type decides it ([`MessageFromGsp::LENGTH`]) or nothing does.
    ///
    /// Ours: upstream's receive takes one element and has no use for it. A reply split
    /// into continuation records is whole at this length, and refused if shorter (see
    /// "Split RPCs" in the module documentation).
    fn reply_len(&self) -> Option<usize> {
        None
    }
}

/// A message the GSP sends to the driver: a fixed part ([`MessageFromGsp::Message`]),
/// then bytes of any length.
///
/// Upstream's shape, with one deliberate difference: [`MessageFromGsp::read`] gets the
/// bytes after the fixed part as one slice rather than an `SBufferIter` over the ring:
/// the message was copied out of the ring once, continuation records reassembled, before
/// anything of it was checked (see the module's "Trust"), so it is contiguous. Its
/// errors are the driver's `Error` (`EIO` for a malformed message) rather than an
/// `InitError` of the message's own.
pub trait MessageFromGsp: Sized {
    /// The function.
    const FUNCTION: MsgFunction;
    /// The fixed part, first in the payload (`()` if there is none).
    type Message: FromBytes;
    /// The payload length every message of this type has, if the type alone decides it
    /// (a fixed-size message); `None` by default.
    ///
    /// Ours, as [`CommandToGsp::reply_len`]: the receive reassembles a split reply of
    /// this type to this length, and refuses a shorter one.
    const LENGTH: Option<usize> = None;
    /// Builds the message from its fixed part and the bytes after it.
    ///
    /// # Errors
    ///
    /// - `EIO` if the message is malformed (for a fixed-size message: bytes after it).
    /// - `ENOMEM` if the bytes cannot be kept.
    fn read(msg: &Self::Message, rest: &[u8]) -> Result<Self>;
}

/// What a wait does with a message it received ([`Cmdq::receive`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skip {
    /// It is the one waited for: return it.
    Take,
    /// Not the one: consumed, counted if it is an event and logged if its function is
    /// one the driver does not know.
    PassOver,
}

/// The GSP command queue, shared by reference by every thread of the driver (see
/// "Sharing" in the module documentation for its locks).
#[pin_data]
pub struct Cmdq {
    /// The shared memory and the pointer accessors.
    gsp_mem: DmaGspMem,
    /// The sending half: `cpuq`.
    #[pin]
    tx: Mutex<CmdqTx>,
    /// The receiving half: `gspq`, held by the receiver.
    #[pin]
    rx: Mutex<CmdqRx>,
    /// Where what is received goes: the event handlers, the replies awaited and the
    /// messages handed over, and the waits.
    #[pin]
    delivery: Delivery,
}

impl Cmdq {
    /// How long the bring-up's `Gsp::send_command` waits for the reply, as upstream's
    /// `send_command`.
    pub(crate) const RECEIVE_TIMEOUT: Delta = Delta::from_secs(5);

    /// Allocates the shared memory of `dev` and initialises both queues: a queue of its
    /// own for a test bench (the driver's is `Gsp::new`'s, in the memory its boot
    /// arguments name).
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if the memory cannot be had.
    pub fn new(dev: &Device<Bound>) -> impl PinInit<Self, Error> + '_ {
        Self::with_memory(dev, DmaGspMem::new(dev))
    }

    /// Initialises both queues in `mem`, an allocation of `dev`'s the caller prepared (the
    /// GSP's, whose boot arguments name it; or a test bench's, with a read observer),
    /// whatever it held before.
    ///
    /// # Errors
    ///
    /// - `EOVERFLOW` if `mem` is smaller than a [`GspMem`].
    /// - `ENOMEM` if the receive's buffers cannot be had.
    pub fn new_in(dev: &Device<Bound>, mem: Coherent<GspMem>) -> impl PinInit<Self, Error> + '_ {
        Self::with_memory(dev, DmaGspMem::init(mem))
    }

    fn with_memory(
        dev: &Device<Bound>,
        gsp_mem: Result<DmaGspMem>,
    ) -> impl PinInit<Self, Error> + '_ {
        // Everything the receive needs is allocated here, once: no message is dropped for
        // want of memory later.
        let rx = CmdqRx::new();
        // INVARIANT: `DmaGspMem` stored both our pointers as 0; nothing is known yet.
        try_pin_init!(Self {
            gsp_mem: gsp_mem?,
            tx <- new_mutex!(CmdqTx::new()),
            rx <- new_mutex!(rx?),
            delivery <- Delivery::new(dev),
        }? Error)
    }

    /// Registers `handler` for the GSP's events of `function`: the receive that takes one
    /// off the ring hands it over, in arrival order.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if `function` is not an event.
    /// - `EBUSY` if a handler is registered for it already.
    /// - `ENOMEM` if the table cannot grow.
    pub fn on_event(&self, function: MsgFunction, handler: &'static dyn EventHandler) -> Result {
        self.delivery.register(function, handler)
    }

    /// Returns the number of events of `function` handed to its handler.
    pub(crate) fn events_dispatched(&self, function: MsgFunction) -> u64 {
        self.delivery.dispatched(function)
    }

    /// Returns whether the driver knows `function`: r570's, or one it sent a command of.
    pub(crate) fn knows(&self, function: MsgFunction) -> bool {
        self.delivery.knows(function)
    }

    /// Sends `command` with its reply awaited, and returns the [`PendingReply`] that waits
    /// for it: a caller may have several commands in flight.
    ///
    /// Ours: upstream's `send_command` sends and waits at once.
    ///
    /// # Errors
    ///
    /// - `EMSGSIZE` if the payload exceeds [`MAX_RPC_PAYLOAD`].
    /// - `ETIMEDOUT` if the ring has no room for an element within `SEND_TIMEOUT` (1 s).
    /// - `EIO` if the GSP's read pointer is outside the ring.
    /// - `EBUSY` if the RPC sequence number has wrapped onto a command whose reply is
    ///   still awaited.
    /// - `ENOMEM` if the reply's note cannot be kept.
    pub fn submit<M>(&self, bar: &impl Doorbell, command: &M) -> Result<PendingReply<'_, M::Reply>>
    where
        M: CommandToGsp,
        M::Reply: MessageFromGsp,
    {
        let reply = u32::from(<M::Reply as MessageFromGsp>::FUNCTION);
        let len = command.reply_len().or(<M::Reply as MessageFromGsp>::LENGTH);
        let sequence = self.send_typed(bar, command, Some(reply), len)?;
        Ok(PendingReply {
            cmdq: self,
            sequence,
            parked: None,
            _reply: PhantomData,
        })
    }

    /// Sends `command` without awaiting a reply, and returns its RPC sequence number: a
    /// command the GSP does not answer (upstream's `send_command_no_wait`), or one whose
    /// caller matches the reply itself among the messages no one awaits
    /// ([`Cmdq::receive`]). Where the command knows the length of its reply
    /// ([`CommandToGsp::reply_len`]), the reply (of the command's own function, as r570
    /// answers) is reassembled to it.
    ///
    /// # Errors
    ///
    /// As [`Cmdq::submit`], but for `EBUSY` and `ENOMEM`.
    pub fn post<M: CommandToGsp>(&self, bar: &impl Doorbell, command: &M) -> Result<u32> {
        self.send_typed(bar, command, None, command.reply_len())
    }

    /// Sends `command`, its fixed part then its variable payload, within [`SEND_TIMEOUT`],
    /// awaiting a reply of function `reply` if given, and noting `reply_len` as its
    /// payload length if given; returns the RPC sequence number.
    ///
    /// # Errors
    ///
    /// As [`Cmdq::submit`].
    fn send_typed<M: CommandToGsp>(
        &self,
        bar: &impl Doorbell,
        command: &M,
        reply: Option<u32>,
        reply_len: Option<usize>,
    ) -> Result<u32> {
        let fixed = command.init();
        // A posted command's reply is of its own function.
        let function = reply.unwrap_or(M::FUNCTION.into());
        self.send_parts(
            bar,
            M::FUNCTION,
            [fixed.as_bytes(), command.variable_payload()],
            reply,
            reply_len.map(|len| (function, len)),
        )
    }

    /// Sends an RPC whose payload is `parts` one after the other (a command's fixed part
    /// and its variable payload), split into elements of at most [`MAX_ELEMENT_PAYLOAD`]
    /// bytes: the head, then continuation records. Each element's `rpc.length` covers its
    /// own chunk, the head's too, as upstream and nouveau send them; the GSP knows the
    /// whole length from the command's own fields. With `reply`, a reply of that function
    /// is awaited, and with `reply_len` (its function and payload length) the length of
    /// the reply is noted, both before the head is published.
    ///
    /// `tx` is held for the whole RPC, so that its elements follow each other on the ring.
    ///
    /// # Errors
    ///
    /// As [`Cmdq::submit`].
    fn send_parts(
        &self,
        bar: &impl Doorbell,
        function: MsgFunction,
        parts: [&[u8]; 2],
        reply: Option<u32>,
        reply_len: Option<(u32, usize)>,
    ) -> Result<u32> {
        let total = parts[0].len() + parts[1].len();
        if total > MAX_RPC_PAYLOAD {
            return Err(EMSGSIZE);
        }
        let mut tx = self.tx.lock();
        let sequence = tx.rpc_seq;
        self.delivery
            .sending(sequence, function, reply, reply_len)?;
        // While the ring has no room, the messages the GSP posted are taken off `gspq` if
        // no wait receives (the lock order allows `rx` after `tx`).
        let make_room = || {
            self.delivery
                .take_published(|want, budget| self.receive_until(want, budget));
        };
        let mut start = 0;
        let sent = loop {
            let end = total.min(start + MAX_ELEMENT_PAYLOAD);
            let element_function = match start {
                0 => function,
                _ => MsgFunction::CONTINUATION_RECORD,
            };
            let element = tx.send_element(
                &self.gsp_mem,
                bar,
                element_function,
                sequence,
                parts,
                start..end,
                SEND_TIMEOUT,
                &make_room,
            );
            if let Err(e) = element {
                break Err(e);
            }
            start = end;
            if start == total {
                break Ok(sequence);
            }
        };
        let published = sent.is_ok() || start > 0;
        if published {
            // The head is out: the GSP has seen this sequence number.
            tx.rpc_seq = tx.rpc_seq.wrapping_add(1);
        }
        drop(tx);
        if sent.is_err() && reply.is_some() {
            // Half an RPC may still be answered: a reply that comes is late.
            self.delivery.unsent(sequence, published);
        }
        sent
    }

    /// Receives messages no one awaits within `budget` until one arrives that `skip` says
    /// to [`Skip::Take`], and returns it, reassembling continuation records; `skip` sees
    /// every message before (unasked events without a handler, messages of a function the
    /// driver does not know, say), and those it passes over are counted or logged
    /// ([`Skip::PassOver`]). The whole wait ends within `budget`, however many messages
    /// are skipped.
    ///
    /// Ours: upstream receives typed messages only, one element each.
    ///
    /// # Errors
    ///
    /// - `ETIMEDOUT` if the budget runs out, including while messages keep arriving that
    ///   `skip` passes over.
    /// - `ERESTARTSYS` if a signal ended the wait.
    /// - A [`Fault`]'s otherwise, see "Errors on receive" in the module documentation.
    pub fn receive(
        &self,
        budget: &mut Budget,
        mut skip: impl FnMut(&GspMessage) -> Skip,
    ) -> Result<GspMessage> {
        self.delivery.listening(|| loop {
            let msg = self.wait_delivered(Want::Any, budget)?;
            match skip(&msg) {
                Skip::Take => return Ok(msg),
                Skip::PassOver => self.delivery.passed_over(&msg),
            }
            // A skipped message does not extend the wait; this also starts the clock if
            // every look so far found a message.
            if budget.left().is_zero() {
                return Err(self.delivery.fault(Fault::OnlySkippedArrived));
            }
        })
    }

    /// Waits within `budget` until what `want` names is handed over, and takes it:
    /// receiving while no other wait does, else asleep on its wait queue (see "Sharing").
    ///
    /// # Errors
    ///
    /// As the delivery's wait.
    fn wait_delivered(&self, want: Want, budget: &mut Budget) -> Result<GspMessage> {
        self.delivery.wait(want, budget, |want, budget| {
            self.receive_until(want, budget)
        })
    }

    /// Takes messages off the ring within `budget` and hands each over until what `want`
    /// names is there. The caller set `receiving`.
    ///
    /// # Errors
    ///
    /// The ring's faults: [`Fault::NothingPublished`] or [`Fault::OnlyOthersArrived`] if
    /// `budget` runs out first.
    fn receive_until(&self, want: Want, budget: &mut Budget) -> Result<(), Fault> {
        let mut rx = self.rx.lock();
        let mut others = false;
        // A send taking what is published holds the send lock: it leaves a message still
        // open to the next wait, which waits the grace for its next element.
        let open = match want {
            Want::Nothing => Open::Keep,
            Want::Reply(_) | Want::Any => Open::Grace,
        };
        loop {
            let ready = match rx.receive_message(&self.gsp_mem, budget, &self.delivery, open) {
                Ok(msg) => self.delivery.hand_over(msg, want),
                Err(RxError::Refused(fault)) => self.delivery.refuse(fault, want),
                Err(RxError::Rejected(fault, function, sequence)) => {
                    self.delivery.reject(fault, function, sequence, want)
                }
                Err(RxError::Skipped(fault)) => {
                    // Skipped as a message for others: no error for the waiter.
                    self.delivery.skip(fault);
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

    /// Gives the buffer of `msg`, a message the caller is done with, back to the queue:
    /// the next message is received into it instead of a new allocation. Kept only if no
    /// receive is in progress (its lock is free) and it is at most one element's payload,
    /// so that the queue never holds on to a large one; otherwise it is freed.
    ///
    /// Ours: upstream's messages borrow the ring and are never copied.
    pub fn recycle(&self, msg: GspMessage) {
        if msg.payload.capacity() > MAX_ELEMENT_PAYLOAD {
            return;
        }
        if let Some(mut rx) = self.rx.try_lock() {
            if rx.spare.capacity() < msg.payload.capacity() {
                rx.spare = msg.payload;
            }
        }
    }

    /// Reads `msg`, a message received whole, as an `M`: its fixed part, then
    /// [`MessageFromGsp::read`] of the rest. The reason of a refusal is recorded as the
    /// last fault ([`BenchSeam::last_fault`]).
    ///
    /// # Errors
    ///
    /// - `ERANGE` if the message is not the one asked for: of a function other than `M`'s,
    ///   or of one the driver does not know (logged).
    /// - `EINVAL` if the reply carries a non-zero `rpc_result`.
    /// - `EIO` if the payload is shorter than `M`'s fixed part.
    /// - Any error of [`MessageFromGsp::read`].
    pub fn read_msg<M: MessageFromGsp>(&self, msg: &GspMessage) -> Result<M> {
        let function = msg.function();
        if function != M::FUNCTION {
            if !self.knows(function) {
                self.delivery.skip_unknown(msg.function, msg.sequence);
                return Err(self.delivery.fault(Fault::UnknownFunction));
            }
            return Err(self.delivery.fault(Fault::OtherFunction));
        }
        if msg.rpc_result != NV_OK {
            return Err(self.delivery.fault(Fault::ReplyReportsError));
        }
        // The reader's errno is kept: it says more than the fault's.
        read_payload(&msg.payload).inspect_err(|&e| {
            self.delivery.fault(match e {
                ENOMEM => Fault::NoMemory,
                _ => Fault::ReplyUndecodable,
            });
        })
    }
}

/// Reads `payload`, the bytes of a whole message, as an `M`: its fixed part, then
/// [`MessageFromGsp::read`] of the rest.
///
/// # Errors
///
/// - `EIO` if `payload` is shorter than the fixed part.
/// - Any error of [`MessageFromGsp::read`].
fn read_payload<M: MessageFromGsp>(payload: &[u8]) -> Result<M> {
    let (fixed, rest) = M::Message::read_from_prefix(payload).map_err(|_| EIO)?;
    M::read(&fixed, rest)
}

/// A command sent with its reply awaited ([`Cmdq::submit`]), whose reply
/// [`PendingReply::wait`] takes. Dropped without a wait, or after a wait that failed, it
/// abandons the reply: dropped when it comes. A caller that retries after `ENOMEM` or
/// `ETIMEDOUT` waits with [`PendingReply::wait_retryable`], which keeps it.
pub struct PendingReply<'a, R> {
    cmdq: &'a Cmdq,
    sequence: u32,
    /// The reply, taken, whose read as an `R` found no memory: the next
    /// [`PendingReply::wait_retryable`] reads it again.
    parked: Option<GspMessage>,
    _reply: PhantomData<fn() -> R>,
}

impl<'a, R: MessageFromGsp> PendingReply<'a, R> {
    /// Returns the command's RPC sequence number.
    pub fn sequence(&self) -> u32 {
        self.sequence
    }

    /// Waits up to `timeout` for the reply and reads it as an `R`; a failed wait abandons
    /// the reply.
    ///
    /// # Errors
    ///
    /// - `ETIMEDOUT` if the reply does not come in time.
    /// - `ERESTARTSYS` if a signal ended the wait.
    /// - The ring's errors while this wait receives, and `ENOMEM` if the receive had no
    ///   memory for an element (it stays on the ring).
    /// - Any error of [`Cmdq::read_msg`]: `ERANGE` if the GSP answered with another
    ///   function, `EINVAL` if the reply reports an error.
    pub fn wait(mut self, timeout: Delta) -> Result<R> {
        let read = self.wait_retryable(timeout);
        // A reply whose read found no memory is not retried here: its buffer is given back.
        if let Some(msg) = self.parked.take() {
            self.cmdq.recycle(msg);
        }
        read
    }

    /// Waits up to `timeout` for the reply and reads it as an `R`, as [`PendingReply::wait`],
    /// but a failed wait leaves the reply awaited: after `ENOMEM` (the reply, or what comes
    /// before it, stays on the ring, or the reply is kept here when its read had no memory)
    /// or `ETIMEDOUT` the caller may wait again, or drop this to abandon the reply. Once
    /// the reply is read, as an `R` or refused, nothing is left to wait for.
    ///
    /// Ours: upstream waits once, in its `send_command`.
    ///
    /// # Errors
    ///
    /// As [`PendingReply::wait`].
    pub fn wait_retryable(&mut self, timeout: Delta) -> Result<R> {
        let msg = match self.parked.take() {
            Some(msg) => msg,
            None => self
                .cmdq
                .wait_delivered(Want::Reply(self.sequence), &mut Budget::new(timeout))?,
        };
        match self.cmdq.read_msg(&msg) {
            Err(ENOMEM) => {
                // Kept for the retry: the reply is off the ring and nowhere else.
                self.parked = Some(msg);
                Err(ENOMEM)
            }
            read => {
                self.cmdq.recycle(msg);
                read
            }
        }
    }
}

impl<R> Drop for PendingReply<'_, R> {
    fn drop(&mut self) {
        // Nothing to abandon if the reply was taken.
        self.cmdq.delivery.abandon(self.sequence);
    }
}

/// The test bench's seam: what a test bench observes and sets of a queue, which the
/// driver itself never does. Everything else a bench does, it does through the driver's
/// own entry points ([`Cmdq::submit`], [`Cmdq::post`], [`Cmdq::receive`],
/// [`Cmdq::read_msg`]), and a `Gsp`'s queue is reached through `Gsp::cmdq`.
pub trait BenchSeam {
    /// Returns the counts of the events handed to handlers and of those with none.
    fn events(&self) -> EventCounts;

    /// Returns the counts of what the receivers handed over to the waits.
    fn delivery(&self) -> DeliveryCounts;

    /// Returns why the last receive failed, or `None` if it succeeded.
    fn last_fault(&self) -> Option<Fault>;

    /// Returns the driver's write and read pointers. Waits for a send and a receive in
    /// progress.
    fn cpu_ptrs(&self) -> (u32, u32);

    /// Returns the shared memory, whose bus address the GSP is given at boot.
    fn gsp_mem(&self) -> &Coherent<GspMem>;

    /// Makes receives sleep on `signal` between looks at the queue instead of polling.
    fn set_signal(&self, signal: &'static dyn MsgqSignal);

    /// Sets how replies are matched with their commands ([`ReplyMatch::Sequence`] unless
    /// set).
    fn set_reply_match(&self, matching: ReplyMatch);

    /// Starts receiving at read pointer `read_ptr` of rings whose earlier contents the
    /// driver has already consumed (after a reload, or to replay a recorded queue),
    /// forgetting what it knew of the GSP's progress. Waits for a receive in progress.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if `read_ptr` is outside the ring.
    fn resume_reading_at(&self, read_ptr: u32) -> Result;
}

impl BenchSeam for Cmdq {
    fn events(&self) -> EventCounts {
        self.delivery.event_counts()
    }

    fn delivery(&self) -> DeliveryCounts {
        self.delivery.counts()
    }

    fn last_fault(&self) -> Option<Fault> {
        self.delivery.last_fault()
    }

    fn cpu_ptrs(&self) -> (u32, u32) {
        let write = self.tx.lock().ring.write_ptr();
        let read = self.rx.lock().ring.read_ptr();
        (write, read)
    }

    fn gsp_mem(&self) -> &Coherent<GspMem> {
        &self.gsp_mem.mem
    }

    fn set_signal(&self, signal: &'static dyn MsgqSignal) {
        self.rx.lock().signal = Some(signal);
    }

    fn set_reply_match(&self, matching: ReplyMatch) {
        self.delivery.set_matching(matching);
    }

    fn resume_reading_at(&self, read_ptr: u32) -> Result {
        let read_ptr = ring_ptr(read_ptr).map_err(|_| EINVAL)?;
        self.rx.lock().resume_at(&self.gsp_mem, read_ptr);
        Ok(())
    }
}
