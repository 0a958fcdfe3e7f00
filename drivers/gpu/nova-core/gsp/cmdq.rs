// SPDX-License-Identifier: GPL-2.0

//! The GSP command queue: the CPU's side of the two message rings in [`GspMem`].
//!
//! The CPU writes commands into `cpuq` and publishes them by advancing
//! `cpuq.tx.writePtr`, then rings the doorbell; it reads the GSP's messages from `gspq`
//! and frees their slots by advancing `cpuq.rx.readPtr`.
//!
//! By concern, each in a file of its own:
//!
//! - this file: the message traits, [`GspMessage`], [`Cmdq`] and its receive entry
//!   points, [`PendingReply`];
//! - `cmdq/ring.rs`: the ring accessors (`DmaGspMem`) and their barriers, the only
//!   driver file a change of the ordering touches (its partner on the GSP's side is
//!   `drivers/gpu/vgsp/msgq.rs` and `outbox.rs`);
//! - `cmdq/receive.rs`: taking elements off `gspq`, checking their copies, reassembling
//!   split messages;
//! - `cmdq/send.rs`: the send entry points and writing elements to `cpuq`;
//! - `cmdq/share.rs` and `cmdq/replies.rs`: which wait receives and the hand-over of what
//!   it receives (see "Sharing");
//! - `cmdq/wait.rs`: the wait policy, the one budget of a whole wait.
//!
//! # Ordering
//!
//! Every access to the other side's pointer goes through an accessor with acquire
//! semantics, and every update of our own pointer through one with release semantics;
//! the barrier sits inside the accessor, so no caller can misplace it. Each flavour is
//! the weakest that orders the accesses that actually surround that pointer:
//!
//! | accessor | barrier | orders | pairs with (virtual GSP) |
//! |---|---|---|---|
//! | `DmaGspMem::gsp_read_ptr` | `dma_mb(Full)` after | its load before our slot stores | `dma_mb(Full)` before its read-pointer store |
//! | `DmaGspMem::advance_cpu_write_ptr` | `dma_mb(Write)` before | our slot stores before the pointer store | `dma_mb(Read)` after its write-pointer load |
//! | `DmaGspMem::gsp_write_ptr` | `dma_mb(Read)` after | its load before our slot loads | `dma_mb(Write)` before its write-pointer store |
//! | `DmaGspMem::advance_cpu_read_ptr` | `dma_mb(Full)` before | our slot loads before the pointer store | `dma_mb(Full)` after its read-pointer load |
//!
//! The doorbell is written with `writel` semantics ([`kernel::io::Io::write32`]), which
//! orders it after the write-pointer store.
//!
//! What one caller learnt of the GSP's pointers, the next caller on the same ring uses
//! without loading them again (see "Sharing"): the slots known free or published are kept
//! under the ring's lock. The lock's release orders the load that learnt them before it,
//! and the next holder's acquire of the lock orders its accesses of the slots after it
//! (Linux's memory model: the GSP's pointer store the first caller observed is observed
//! by the next), so the pairs above still order the GSP's accesses of a slot against the
//! driver's, whichever thread makes them. No barrier was added for sharing; the model
//! checks this hand-over (`tests/model`: the two-caller scenario, and the contract
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
//! | `events` ([`Mutex`]) | the event handlers and their counts | while a handler is looked up or registered, never across a call to it |
//! | `replies` ([`Mutex`]), with the wait queues `queues` (a [`CondVar`] each) | the replies awaited and the messages handed over for them, the messages no one awaits, who is receiving and who sleeps on which queue, the last fault | only briefly, never across a ring access or a call out; a wait sleeps on its queue with it released |
//!
//! Lock order: `tx`, then `rx`, then `events` or `replies` (never both). A send that
//! finds no room takes `rx` only with `tx` held, as the order allows.
//!
//! Receiving is done by whoever waits. A wait ([`Cmdq::send_command`]'s,
//! [`PendingReply::wait`], [`Cmdq::receive_any`]) first looks under `replies` for what it
//! waits for. If it is not there and no other wait is receiving, it becomes the receiver:
//! it takes `rx` and takes messages off the ring one after the other, handing each over
//! (an event to its handler, under `rx`, so in arrival order; a reply to the caller that
//! awaits it, matched by `rpc.sequence` or, for a GSP that does not copy it into its
//! replies, by order, [`ReplyMatch`]; anything else to the waits that take any message,
//! see `replies`) and waking the waits it is for, until what it waits for has come or
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
//! posted itself ([`Cmdq::send_command`] with `tx` held): the GSP may be waiting for room
//! on `gspq` to answer, and would otherwise never free `cpuq` while every caller sends.
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
//! Five entry points, one path (`send_parts`: the elements under the `tx` lock, the
//! doorbell after each), each for what the others cannot do:
//!
//! - [`Cmdq::send_command`] and [`Cmdq::send_command_no_wait`]: upstream's two, a command
//!   and its reply, and a command the GSP does not answer.
//! - [`Cmdq::submit`]: a command whose reply is awaited later, through the
//!   [`PendingReply`] it returns: several commands in flight from one caller.
//! - [`Cmdq::post`]: a command whose reply nobody awaits by sequence; it is received as a
//!   message no one awaits ([`Cmdq::receive_any`]), for callers that match replies
//!   themselves and one-way streams.
//! - [`Cmdq::send_rpc`]: a function and bytes with no type: what no [`CommandToGsp`]
//!   can be, malformed and replayed traffic for the test bench and the fuzzer.
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
//! An RPC whose payload does not fit one element ([`fw::MAX_ELEMENT_PAYLOAD`] bytes) goes as a
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
//! ([`Cmdq::submit`]), posted ([`Cmdq::post`]) or received by type
//! ([`Cmdq::receive_msg`]). Where we differ on purpose:
//!
//! - Nouveau knows the length of every message it receives, as it receives only what a
//!   caller asked for. This queue also receives what nobody asked for (events, replies
//!   whose command did not say): such a message is delimited by [`fw::Delimiter`], the
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
//!   largest allocation (4 MiB on x86_64 and arm64), which [`fw::MAX_RPC_PAYLOAD`] is: a
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
//! nothing had happened, and [`Cmdq::last_fault`] says in a few words what was wrong.
//! No GSP content makes the driver panic, or read or write outside `GspMem`. A wait ends
//! within the caller's timeout, but for the message it is receiving when the timeout ends:
//! at most [`RECORD_TIMEOUT`] after a full element, longer only while the GSP keeps
//! publishing that message's records, each within [`RECORD_TIMEOUT`] of the one before,
//! up to the largest RPC.
//!
//! A message of a function the driver does not know is no error for a waiter: it answers
//! none of the driver's commands, so it is never taken for a reply; the waits that skip
//! messages skip it ([`Gsp::wait_for`](crate::gsp::Gsp::wait_for)), a single typed receive
//! reports it as not the message asked for (`ERANGE`, [`Fault::UnknownFunction`]), and
//! wherever it is skipped it is logged with its number, as RM's `_kgspProcessRpcEvent()`
//! logs and ignores a message it does not expect. [`Cmdq::receive_any`], which takes any
//! message, returns it as it is. A refusal of an element (the faults that consume it) goes
//! to the waits that take any message, as the message would have, or, when the message
//! it belongs to is known ("to the message's caller"), to the caller awaiting that
//! message as its reply if one does; with none running it is logged and counted
//! ([`Cmdq::delivery`]). A continuation record refused for any reason takes the message
//! it continues with it, so its refusal goes to that message's caller. The ring's own
//! errors and `ENOMEM` (the faults that consume nothing) go to the receiver.
//!
//! The faults are [`Fault`]'s variants, one per class, each with its errno
//! ([`Fault::errno`]), what the receive consumes for it ([`Fault::consumes`]) and its
//! reason ([`Fault::reason`]); [`Cmdq::last_fault`] names the last.
//!
//! Elements are copied out of the ring once and checked on the copy, so bytes the GSP
//! changes after the check (a double fetch) never reach the caller. On send: a GSP read
//! pointer outside the ring is `EIO` (nothing written), a ring that stays full
//! `ETIMEDOUT`, a payload above 4 MiB `EMSGSIZE`.

mod receive;
mod replies;
mod ring;
mod send;
mod share;
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
        aref::ARef,
        new_condvar,
        new_mutex,
        CondVar,
        Mutex, //
    },
    time::Delta,
};
use zerocopy::{
    FromBytes,
    Immutable,
    IntoBytes, //
};

use self::replies::{
    Replies,
    Want,
    WAIT_QUEUES, //
};
pub(crate) use self::ring::DmaGspMem;
pub(crate) use self::wait::Budget;
use self::{
    receive::CmdqRx,
    send::CmdqTx, //
};
pub use self::{
    replies::{
        Delivery,
        ReplyMatch, //
    },
    wait::{
        NAP,
        RECORD_TIMEOUT,
        SEND_TIMEOUT, //
    },
};
use crate::gsp::{
    events::{
        is_event,
        EventCounts,
        EventHandler,
        Events, //
    },
    fault::Fault,
    fw::{
        self,
        GspMem,
        MsgFunction,
        MSGQ_NUM_PAGES, //
    },
};

/// A message received from the GSP, continuation records reassembled.
///
/// The function is kept as the raw number of the wire, which the GSP may have set to one
/// this driver does not know; [`GspMessage::function()`] types it.
#[derive(Debug)]
pub struct GspMessage {
    /// The function number, as received.
    pub function: u32,
    /// The RPC sequence number (a reply carries its command's).
    pub sequence: u32,
    /// The element sequence number of the (head) element.
    pub seq_num: u32,
    /// `rpc_result`.
    pub rpc_result: u32,
    /// Slots consumed, continuation records included.
    pub elem_count: u32,
    /// The payload.
    pub payload: KVec<u8>,
}

impl GspMessage {
    /// Returns the message's function.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if the number received is no function this driver knows.
    pub fn function(&self) -> Result<MsgFunction> {
        MsgFunction::try_from(self.function)
    }
}

/// The [`CommandToGsp::Reply`] of a command the GSP does not answer: such a command is
/// sent with [`Cmdq::send_command_no_wait`].
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
    /// Ours, as [`CommandToGsp::reply_len`]: the receive reassembles a split message of
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

/// What tells the driver that the GSP has posted a message: an interrupt the GSP raises
/// after advancing its write pointer.
///
/// Receives then sleep until the count moves instead of polling the queue; the count is
/// read before the queue is looked at, so a message posted in between is not missed.
pub trait MsgqSignal: Sync {
    /// Returns the number of signals so far, with acquire semantics.
    fn count(&self) -> u64;

    /// Sleeps until the count differs from `seen` or `timeout` passes.
    fn wait(&self, seen: u64, timeout: Delta);
}

/// What a wait does with a message it received ([`Cmdq::receive_any_skipping`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Skip {
    /// It is the one waited for: return it.
    Take,
    /// Not the one: consumed, and counted if it is an event.
    PassOver,
}

/// The GSP command queue, shared by reference by every thread of the driver (see
/// "Sharing" in the module documentation for its locks).
#[pin_data]
pub struct Cmdq {
    /// The device, for its log.
    dev: ARef<Device>,
    /// The shared memory and the pointer accessors.
    gsp_mem: DmaGspMem,
    /// The sending half: `cpuq`.
    #[pin]
    tx: Mutex<CmdqTx>,
    /// The receiving half: `gspq`, held by the receiver.
    #[pin]
    rx: Mutex<CmdqRx>,
    /// The event handlers.
    #[pin]
    events: Mutex<Events>,
    /// What the waits share: the replies awaited and the messages handed over.
    #[pin]
    replies: Mutex<Replies>,
    /// The wait queues ([`WAIT_QUEUES`]): a wait that does not receive sleeps on the one of
    /// what it waits for ([`Want::queue`]), woken when it is handed over, or when nobody
    /// receives any more and it may take over.
    queues: KVec<Pin<KBox<CondVar>>>,
}

impl Cmdq {
    /// How long [`Cmdq::send_command`] waits for the reply, as upstream.
    pub const RECEIVE_TIMEOUT: Delta = Delta::from_secs(5);

    /// Allocates the shared memory of `dev` and initialises both queues.
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if the memory cannot be had.
    pub fn new(dev: &Device<Bound>) -> impl PinInit<Self, Error> + '_ {
        Self::with_memory(dev, DmaGspMem::new(dev))
    }

    /// Initialises both queues in `mem`, an allocation of `dev`'s the caller prepared (a
    /// test bench's, with a read observer), whatever it held before.
    ///
    /// # Errors
    ///
    /// - `EOVERFLOW` if `mem` is smaller than a [`GspMem`].
    pub fn new_in(dev: &Device<Bound>, mem: Coherent<GspMem>) -> impl PinInit<Self, Error> + '_ {
        Self::with_memory(dev, DmaGspMem::init(mem))
    }

    fn with_memory(
        dev: &Device<Bound>,
        gsp_mem: Result<DmaGspMem>,
    ) -> impl PinInit<Self, Error> + '_ {
        let queues = (|| {
            let mut queues = KVec::with_capacity(WAIT_QUEUES, GFP_KERNEL)?;
            for _ in 0..WAIT_QUEUES {
                queues.push(KBox::pin_init(new_condvar!(), GFP_KERNEL)?, GFP_KERNEL)?;
            }
            Ok::<_, Error>(queues)
        })();
        // Everything the receive needs is allocated here, once: no message is dropped for
        // want of memory later.
        let rx = CmdqRx::new();
        let replies = Replies::new();
        // INVARIANT: `DmaGspMem` stored both our pointers as 0; nothing is known yet.
        try_pin_init!(Self {
            dev: dev.into(),
            gsp_mem: gsp_mem?,
            tx <- new_mutex!(CmdqTx::new()),
            rx <- new_mutex!(rx?),
            events <- new_mutex!(Events::default()),
            replies <- new_mutex!(replies?),
            queues: queues?,
        }? Error)
    }

    /// Registers `handler` for the GSP's events of `function`: the receive that takes one
    /// off the ring hands it over, in arrival order ([`crate::gsp::events`]).
    ///
    /// # Errors
    ///
    /// As [`Events::register`].
    pub fn on_event(&self, function: MsgFunction, handler: &'static dyn EventHandler) -> Result {
        self.events.lock().register(function, handler)
    }

    /// Returns the counts of the events handed to handlers and of those with none.
    pub fn events(&self) -> EventCounts {
        self.events.lock().counts()
    }

    /// Returns the number of events of `function` handed to its handler.
    pub(crate) fn events_dispatched(&self, function: MsgFunction) -> u64 {
        self.events.lock().dispatched_of(function)
    }

    /// Returns the counts of what the receivers handed over to the waits.
    pub fn delivery(&self) -> Delivery {
        self.replies.lock().counts
    }

    /// Makes receives sleep on `signal` between looks at the queue instead of polling.
    pub fn set_signal(&self, signal: &'static dyn MsgqSignal) {
        self.rx.lock().signal = Some(signal);
    }

    /// Sets how replies are matched with their commands ([`ReplyMatch::Sequence`] unless
    /// set).
    pub fn set_reply_match(&self, matching: ReplyMatch) {
        self.replies.lock().matching = matching;
    }

    /// Returns why the last receive failed, or `None` if it succeeded.
    pub fn last_fault(&self) -> Option<Fault> {
        self.replies.lock().last_fault
    }

    /// Records `fault` as the fault of the receive in progress and returns its errno.
    fn fault(&self, fault: Fault) -> Error {
        self.replies.lock().last_fault = Some(fault);
        fault.errno()
    }

    /// Starts receiving at read pointer `read_ptr` of rings whose earlier contents the
    /// driver has already consumed (after a reload, or to replay a recorded queue),
    /// forgetting what it knew of the GSP's progress. Waits for a receive in progress.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if `read_ptr` is outside the ring.
    pub fn resume_reading_at(&self, read_ptr: u32) -> Result {
        if read_ptr >= MSGQ_NUM_PAGES {
            return Err(EINVAL);
        }
        self.rx.lock().resume_at(&self.gsp_mem, read_ptr);
        Ok(())
    }

    /// Returns the shared memory, whose bus address the GSP is given at boot.
    pub fn gsp_mem(&self) -> &Coherent<GspMem> {
        &self.gsp_mem.mem
    }

    /// Returns the driver's write and read pointers. Waits for a send and a receive in
    /// progress.
    pub fn cpu_ptrs(&self) -> (u32, u32) {
        let write = self.tx.lock().ring.write_ptr();
        let read = self.rx.lock().ring.read_ptr();
        (write, read)
    }

    /// Receives the next message no one awaits, whatever its function, reassembling
    /// continuation records. Waits up to `timeout` in all.
    ///
    /// Ours: upstream receives typed messages only ([`Cmdq::receive_msg`]).
    ///
    /// # Errors
    ///
    /// A [`Fault`]'s, see "Errors on receive" in the module documentation.
    pub fn receive_any(&self, timeout: Delta) -> Result<GspMessage> {
        self.listening(|| self.wait_delivered(Want::Any, &mut Budget::new(timeout)))
    }

    /// Receives messages within `budget` until one arrives that `skip` says to
    /// [`Skip::Take`], and returns it; `skip` sees every message before (unasked events
    /// without a handler, say) and says what it did with it. A message of a function the
    /// driver does not know is passed over without asking `skip`, and logged. The whole
    /// wait ends within `budget`, however many messages are skipped. An event passed over
    /// ([`Skip::PassOver`]) is counted as one without a handler ([`EventCounts::unhandled`]).
    ///
    /// # Errors
    ///
    /// - `ETIMEDOUT` if the budget runs out, including while messages keep arriving that
    ///   `skip` passes over.
    /// - Any other error of [`Cmdq::receive_any`].
    pub(crate) fn receive_any_skipping(
        &self,
        budget: &mut Budget,
        mut skip: impl FnMut(&GspMessage) -> Skip,
    ) -> Result<GspMessage> {
        self.listening(|| loop {
            let msg = self.wait_delivered(Want::Any, budget)?;
            if msg.function().is_err() {
                self.skip_unknown(msg.function, msg.sequence);
            } else {
                match skip(&msg) {
                    Skip::Take => return Ok(msg),
                    Skip::PassOver if is_event(&msg) => self.pass_over(msg.function),
                    Skip::PassOver => {}
                }
            }
            // A skipped message does not extend the wait; this also starts the clock if
            // every look so far found a message.
            if budget.left().is_zero() {
                return Err(self.fault(Fault::OnlySkippedArrived));
            }
        })
    }

    /// Receives the next message no one awaits as an `M`.
    ///
    /// # Errors
    ///
    /// - `ERANGE` if the message is not the one asked for: of a function other than `M`'s,
    ///   or of one the driver does not know (logged). It is consumed.
    /// - `EINVAL` if the reply carries a non-zero `rpc_result`.
    /// - Any error of [`Cmdq::receive_any`] or [`MessageFromGsp::read`].
    pub fn receive_msg<M: MessageFromGsp>(&self, timeout: Delta) -> Result<M> {
        let function = u32::from(M::FUNCTION);
        let Some(len) = M::LENGTH else {
            return self.take_msg(self.receive_any(timeout)?);
        };
        // A message of `M`'s function is reassembled to `M`'s length while this waits.
        self.replies.lock().expect_typed(function, len)?;
        let msg = self.receive_any(timeout);
        self.replies.lock().unexpect_typed(function, len);
        self.take_msg(msg?)
    }

    /// Reads `msg` as an `M` ([`Cmdq::read_msg`]), then gives its buffer back for the next
    /// receive ([`Cmdq::recycle`]).
    ///
    /// # Errors
    ///
    /// As [`Cmdq::read_msg`].
    fn take_msg<M: MessageFromGsp>(&self, msg: GspMessage) -> Result<M> {
        let read = self.read_msg(&msg);
        self.recycle(msg);
        read
    }

    /// Gives the buffer of `msg`, a message the caller is done with, back to the queue:
    /// the next message is received into it instead of a new allocation. Kept only if no
    /// receive is in progress (its lock is free) and it is at most one element's payload,
    /// so that the queue never holds on to a large one; otherwise it is freed.
    ///
    /// Ours: upstream's messages borrow the ring and are never copied.
    pub fn recycle(&self, msg: GspMessage) {
        if msg.payload.capacity() > fw::MAX_ELEMENT_PAYLOAD {
            return;
        }
        if let Some(mut rx) = self.rx.try_lock() {
            if rx.spare.capacity() < msg.payload.capacity() {
                rx.spare = msg.payload;
            }
        }
    }

    /// Reads `msg`, a message received whole, as an `M`, recording the reason of a
    /// refusal as [`Cmdq::last_fault`].
    ///
    /// # Errors
    ///
    /// As [`Cmdq::receive_msg`], less the receive's own.
    pub fn read_msg<M: MessageFromGsp>(&self, msg: &GspMessage) -> Result<M> {
        let Ok(function) = msg.function() else {
            self.skip_unknown(msg.function, msg.sequence);
            return Err(self.fault(Fault::UnknownFunction));
        };
        if function != M::FUNCTION {
            return Err(self.fault(Fault::OtherFunction));
        }
        if msg.rpc_result != fw::NV_OK {
            return Err(self.fault(Fault::ReplyReportsError));
        }
        // The reader's errno is kept: it says more than the fault's.
        read_payload(&msg.payload).inspect_err(|&e| {
            self.fault(match e {
                ENOMEM => Fault::NoMemory,
                _ => Fault::ReplyUndecodable,
            });
        })
    }
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

    /// Waits up to `timeout` for the reply and reads it as an `R`.
    ///
    /// # Errors
    ///
    /// - `ETIMEDOUT` if the reply does not come in time.
    /// - Any error of [`Cmdq::read_msg`]: `ERANGE` if the GSP answered with another
    ///   function, `EINVAL` if the reply reports an error.
    pub fn wait(self, timeout: Delta) -> Result<R> {
        let cmdq = self.cmdq;
        let msg = self.wait_message(timeout)?;
        cmdq.take_msg(msg)
    }

    /// Waits up to `timeout` for the reply and reads it as an `R`, as [`PendingReply::wait`],
    /// but a failed wait leaves the reply awaited: after `ENOMEM` (the reply, or what comes
    /// before it, stays on the ring, or the reply is kept here when its read had no memory)
    /// or `ETIMEDOUT` the caller may wait again, or drop this to abandon the reply. Once
    /// the reply is read, as an `R` or refused, nothing is left to wait for.
    ///
    /// Ours: upstream waits once, in [`Cmdq::send_command`].
    ///
    /// # Errors
    ///
    /// As [`PendingReply::wait`], and `ENOMEM` if the receive had no memory for an element.
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

    /// Waits up to `timeout` for the reply, whatever it says.
    ///
    /// # Errors
    ///
    /// - `ETIMEDOUT` if the reply does not come in time.
    /// - `ERESTARTSYS` if a signal ended the wait.
    /// - The ring's errors while this wait receives, and `ENOMEM` if the receive had no
    ///   memory for an element (it stays on the ring; the reply is abandoned with this).
    pub fn wait_message(self, timeout: Delta) -> Result<GspMessage> {
        self.wait_message_within(&mut Budget::new(timeout))
    }

    /// [`PendingReply::wait_message`], waiting only for what is left of `budget`.
    ///
    /// # Errors
    ///
    /// As [`PendingReply::wait_message`].
    pub(crate) fn wait_message_within(self, budget: &mut Budget) -> Result<GspMessage> {
        self.cmdq.wait_delivered(Want::Reply(self.sequence), budget)
    }
}

impl<R> Drop for PendingReply<'_, R> {
    fn drop(&mut self) {
        // Nothing to abandon if the reply was taken.
        self.cmdq.replies.lock().abandon(self.sequence);
    }
}

/// Reads `payload`, the bytes of a whole message, as an `M`: its fixed part, then
/// [`MessageFromGsp::read`] of the rest.
///
/// # Errors
///
/// - `EIO` if `payload` is shorter than the fixed part.
/// - Any error of [`MessageFromGsp::read`].
pub fn read_payload<M: MessageFromGsp>(payload: &[u8]) -> Result<M> {
    let (fixed, rest) = M::Message::read_from_prefix(payload).map_err(|_| EIO)?;
    M::read(&fixed, rest)
}
