// SPDX-License-Identifier: GPL-2.0

//! The GSP command queue: the CPU's side of the two message rings in [`GspMem`].
//!
//! The CPU writes commands to `cpuq`, publishes them by advancing `cpuq.tx.writePtr` and
//! rings the doorbell; it reads the GSP's messages from `gspq` and frees their slots by
//! advancing `cpuq.rx.readPtr`.
//!
//! Files, each importing only from those below it:
//!
//! - this file: the message traits, [`Cmdq`], [`PendingReply`], [`BenchSeam`];
//! - `cmdq/delivery.rs`: which wait receives, and where each message goes;
//! - `cmdq/send.rs`: writing an RPC's elements to `cpuq`;
//! - `cmdq/receive.rs`: taking, checking and reassembling elements off `gspq`;
//! - `cmdq/ring.rs`: the ring accessors (`DmaGspMem`) and their barriers, the only driver
//!   file an ordering change touches (the GSP's: `vgsp/gsp/msgq.rs`, `outbox.rs`);
//! - `cmdq/wait.rs`: the wait policy.
//!
//! # Ordering
//!
//! Loads of the other side's pointer are acquires and stores of ours releases, with the
//! barrier inside the accessor; each flavour is the weakest that orders the accesses
//! around that pointer:
//!
//! | accessor | barrier | orders | partner in the GSP (`vgsp`) |
//! |---|---|---|---|
//! | `DmaGspMem::gsp_read_ptr` | `dma_mb(Full)` after | its load before our slot stores | `Vgsp::advance_gsp_read_ptr`: `dma_mb(Full)` before the store |
//! | `DmaGspMem::advance_cpu_write_ptr` | `dma_mb(Write)` before | our slot stores before the pointer store | `Vgsp::cpu_write_ptr`: `dma_mb(Read)` after the load |
//! | `DmaGspMem::gsp_write_ptr` | `dma_mb(Read)` after | its load before our slot loads | `Vgsp::advance_gsp_write_ptr`: `dma_mb(Write)` before the store |
//! | `DmaGspMem::advance_cpu_read_ptr` | `dma_mb(Full)` before | our slot loads before the pointer store | `Vgsp::cpu_read_ptr`: `dma_mb(Full)` after the load |
//!
//! This is the project's one barrier table; the GSP's side mirrors each row. The doorbell
//! is written with `writel` semantics ([`kernel::io::Io::write_reg`]), ordered after the
//! write-pointer store.
//!
//! What one caller learnt of the GSP's pointers, the next reuses without a reload; it is
//! kept under the ring's lock, whose release and acquire carry the observed GSP store to
//! the next holder (LKMM), so the pairs above hold whichever thread accesses the slot.
//! Sharing adds no barrier; `tools/model` checks the hand-over.
//!
//! Barrier variants (all `Full`, the seed's placement) exist only as mutated source
//! copies for the benchmark (`cargo xtask variant-tree`), never as a build of this crate.
//!
//! # Sharing
//!
//! A [`Cmdq`] is shared by reference by every driver thread, as upstream's is. Unlike
//! upstream's, which holds one lock across a command and its reply, several commands may
//! be in flight at once, and each reply reaches its command's caller.
//!
//! | lock | guards | held |
//! |---|---|---|
//! | `tx` ([`Mutex`]) | the `cpuq` write pointer, what is known free, the element and RPC sequence numbers | while one RPC's elements are written, including the waits for ring space |
//! | `rx` ([`Mutex`]) | the `gspq` read pointer, what is known published, the element sequence check, a half-reassembled message, the [`MsgqSignal`] | by the wait taking messages off the ring (the *receiver*), while it does |
//! | `events` (`Mutex`) | the event handlers and their counts | while a handler is looked up or registered, never across a call to it |
//! | `replies` (`Mutex`), with the wait queues `queues` (a `CondVar` each) | the awaited replies and the messages handed over for them, the messages no one awaits, who receives and who sleeps where, the last fault | briefly, never across a ring access or a call out; a wait sleeps with it released |
//!
//! Lock order: `tx`, then `rx`, then `events` or `replies` (never both).
//!
//! Whoever waits receives. A wait that does not find what it wants under `replies`, with
//! nobody receiving, becomes the receiver: under `rx` it hands each message over (an
//! event to its handler, a reply to its caller per [`ReplyMatch`], anything else to the
//! waits that take any message) until it has what it wants or times out. Other waits
//! sleep on their queue (one of eight by `rpc.sequence`, or the any-message queue). A
//! wait that stops receiving, or ends with nobody receiving, wakes one sleeper to take
//! over. So each timeout is the caller's own, and a slow caller holds up nobody.
//!
//! A send that finds the ring full while nobody receives takes the GSP's messages itself
//! (`rx` under `tx`): the GSP may need room on `gspq` to answer before it frees `cpuq`.
//! This is the only way a send waits on anything but the GSP.
//!
//! Nothing sleeps holding `events` or `replies`. An event handler runs under `rx` on the
//! receiver's thread, which may hold `tx`, so it must not use the queue; a message that
//! needs an answer is taken by a wait instead (as bring-up takes `GSP_RUN_CPU_SEQUENCER`).
//!
//! Replies are matched by `rpc.sequence`, which the virtual GSP copies from the command;
//! upstream and nouveau take the next reply of the awaited function. For firmware that
//! does not copy it, [`ReplyMatch::InOrder`] matches by order per function, exact while
//! every answered command is awaited.
//!
//! # Sending
//!
//! [`Cmdq::submit`] returns a [`PendingReply`]; [`Cmdq::post`] awaits no reply
//! ([`NoReply`], or one the caller takes with [`Cmdq::receive`]). Upstream's
//! `send_command` and `send_command_no_wait`, split at the reply so several commands may
//! be in flight; both go through `send_parts` (elements under `tx`, doorbell after each).
//!
//! # Receiving
//!
//! [`PendingReply::wait`] takes a command's reply; [`Cmdq::receive`] the next message no
//! one awaits; [`Cmdq::read_msg`] reads either as its type. Upstream's `receive_msg` is
//! [`Cmdq::receive`] then [`Cmdq::read_msg`].
//!
//! # Waiting
//!
//! A send does not look while the space it last saw free suffices. Otherwise a wait looks
//! once before reading the clock, spins for `SPIN_BUDGET` (100 us), then looks every
//! `NAP` (50 us), or sleeps on a [`MsgqSignal`] (the GSP's interrupt) if set.
//!
//! # Trust
//!
//! Everything the GSP writes is hostile. Pointers outside the ring are refused; an
//! element is copied out once and checked and used only as that copy (no double fetch).
//! Our own pointers are never read back from shared memory.
//!
//! # Split RPCs
//!
//! An RPC larger than one element ([`MAX_ELEMENT_PAYLOAD`]) goes as a full *head*, then
//! `CONTINUATION_RECORD`s with the same `rpc.sequence`. Every element's `rpc.length`, the
//! head's too, covers the RPC header and its own chunk, as r570, upstream and nouveau
//! do; the whole length is only in the RPC's own fields (a registry table's size, an RM
//! control's `paramsSize`).
//!
//! The receive follows nouveau's `r535_gsp_msgq_recv()`: an element whose `rpc.length`
//! spans more than one element is refused, and the length the reader expects
//! ([`CommandToGsp::reply_len`], [`MessageFromGsp::LENGTH`]) ends a split message; a
//! shorter one is refused (nouveau's `rpc len %d < %d`). Where we differ on purpose:
//!
//! - Messages nobody asked for (events, replies of unknown length) are delimited by
//!   [`Delimiter`], the rule the virtual GSP uses too, with a [`RECORD_TIMEOUT`] grace
//!   after a full element. A send making room holds `tx`, so it skips the grace and
//!   leaves the message open for the next wait.
//! - Every element's sequence and function are checked. A valid continuation record that
//!   continues no message is a stray: consumed, logged, no error for the waiter.
//! - A reply with a non-zero `rpc_result` is taken as it is, however short.
//! - A message is reassembled in one `KVec`, so [`MAX_RPC_PAYLOAD`] is `kmalloc`'s
//!   largest allocation (4 MiB on x86_64 and arm64); one of unknown length grows by
//!   doubling, capped at exactly that.
//!
//! # Memory
//!
//! No message is lost for want of memory. Copying and checking an element needs no
//! allocation (a one-element spare and the hand-over room are allocated with the queue),
//! and a message's memory is reserved before the element carrying it is consumed. Failing
//! that, the receive returns `ENOMEM` and consumes nothing, so a retry resumes there
//! ([`Fault::NoMemory`], [`PendingReply::wait_retryable`]).
//!
//! # Errors on receive
//!
//! Every refusal leaves the queue usable, and [`BenchSeam::last_fault`] says what was
//! wrong. No GSP content makes the driver panic or access memory outside `GspMem`. A wait
//! ends within its timeout, but for the message it is receiving then: at most
//! [`RECORD_TIMEOUT`] after a full element, longer only while that message's records keep
//! coming, each within [`RECORD_TIMEOUT`], up to the largest RPC.
//!
//! A message of an unknown function (neither r570's nor one the driver sent) is never a
//! reply: waits skip and log it, as RM's `_kgspProcessRpcEvent()` does; a typed read
//! refuses it ([`Fault::UnknownFunction`]).
//!
//! A refused element goes where its message would have gone (its caller, else the waits
//! that take any message, else logged and counted); a refused continuation record takes
//! its message with it. Faults that consume nothing (the ring's, `ENOMEM`) go to the
//! receiver.
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

/// The [`CommandToGsp::Reply`] of a command the GSP does not answer; sent with
/// [`Cmdq::post`].
pub struct NoReply;

/// A command to the GSP: a fixed part ([`CommandToGsp::Command`]), a variable-length
/// payload, and the message that answers it ([`CommandToGsp::Reply`]).
///
/// Differs from upstream on purpose: [`CommandToGsp::init`] returns the fixed part by
/// value, not an in-place `Init` (the largest is 0x678 bytes, and the checksum is over
/// the bytes as written either way), and the variable payload is given as bytes
/// ([`CommandToGsp::variable_payload`]), not written through an `SBufferIter`, as every
/// payload here exists as bytes already. Hence no `InitError`.
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

    /// Returns the reply's payload length where the command decides it (an RM control's
    /// parameters); `None` by default. Ours: see "Split RPCs" in the module documentation.
    fn reply_len(&self) -> Option<usize> {
        None
    }
}

/// A message from the GSP: a fixed part ([`MessageFromGsp::Message`]), then bytes of any
/// length.
///
/// Differs from upstream on purpose: [`MessageFromGsp::read`] gets the rest as one slice,
/// not an `SBufferIter` over the ring, as the message is a reassembled copy (see the
/// module's "Trust"); its errors are the driver's `Error`, not an `InitError`.
pub trait MessageFromGsp: Sized {
    /// The function.
    const FUNCTION: MsgFunction;
    /// The fixed part, first in the payload (`()` if there is none).
    type Message: FromBytes;
    /// The payload length of every message of this type, if fixed; `None` by default.
    ///
    /// Ours, as [`CommandToGsp::reply_len`].
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
    /// Not the one: consumed, counted if an event, logged if of an unknown function.
    PassOver,
}

/// The GSP command queue (see "Sharing" in the module documentation for its locks).
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
    /// Where received messages go: event handlers, awaited replies, waits.
    #[pin]
    delivery: Delivery,
}

impl Cmdq {
    /// How long `Gsp::send_command` waits for the reply, as upstream's `send_command`.
    pub(crate) const RECEIVE_TIMEOUT: Delta = Delta::from_secs(5);

    /// Allocates `dev`'s shared memory and initialises both queues, for a test bench
    /// (the driver's queue is `Gsp::new`'s).
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if the memory cannot be had.
    pub fn new(dev: &Device<Bound>) -> impl PinInit<Self, Error> + '_ {
        Self::with_memory(dev, DmaGspMem::new(dev))
    }

    /// Initialises both queues in `mem`, whatever it held (the memory the GSP's boot
    /// arguments name, or a test bench's).
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
        // Allocated once here, so no message is later dropped for want of memory.
        let rx = CmdqRx::new();
        // INVARIANT: `DmaGspMem` stored both our pointers as 0; nothing is known yet.
        try_pin_init!(Self {
            gsp_mem: gsp_mem?,
            tx <- new_mutex!(CmdqTx::new()),
            rx <- new_mutex!(rx?),
            delivery <- Delivery::new(dev),
        }? Error)
    }

    /// Registers `handler` for the GSP's events of `function`, called in arrival order.
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

    /// Sends `command` and returns the [`PendingReply`] that awaits its reply.
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

    /// Sends `command` without awaiting a reply (upstream's `send_command_no_wait`), and
    /// returns its RPC sequence number. A caller may match the reply itself with
    /// [`Cmdq::receive`]; it is reassembled to [`CommandToGsp::reply_len`] if given.
    ///
    /// # Errors
    ///
    /// As [`Cmdq::submit`], but for `EBUSY` and `ENOMEM`.
    pub fn post<M: CommandToGsp>(&self, bar: &impl Doorbell, command: &M) -> Result<u32> {
        self.send_typed(bar, command, None, command.reply_len())
    }

    /// Sends `command` within [`SEND_TIMEOUT`], awaiting a reply of function `reply` and
    /// noting its length `reply_len` if given; returns the RPC sequence number.
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

    /// Sends the RPC whose payload is `parts` concatenated, as a head and continuation
    /// records of at most [`MAX_ELEMENT_PAYLOAD`] bytes (see "Split RPCs"). `reply` and
    /// `reply_len` are noted before the head is published.
    ///
    /// `tx` is held for the whole RPC, so its elements are contiguous on the ring.
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
        // With the ring full and no wait receiving, take the GSP's messages.
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

    /// Returns the first message no one awaits that `skip` says to [`Skip::Take`], within
    /// `budget` however many are passed over ([`Skip::PassOver`]).
    ///
    /// Ours: upstream receives typed messages only, one element each.
    ///
    /// # Errors
    ///
    /// - `ETIMEDOUT` if the budget runs out, even while skipped messages keep arriving.
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
            // Skipped messages do not extend the wait (this also starts the clock).
            if budget.left().is_zero() {
                return Err(self.delivery.fault(Fault::OnlySkippedArrived));
            }
        })
    }

    /// Waits within `budget` for what `want` names, as receiver or asleep on its queue
    /// (see "Sharing").
    ///
    /// # Errors
    ///
    /// As the delivery's wait.
    fn wait_delivered(&self, want: Want, budget: &mut Budget) -> Result<GspMessage> {
        self.delivery.wait(want, budget, |want, budget| {
            self.receive_until(want, budget)
        })
    }

    /// Takes messages off the ring and hands them over until what `want` names is there.
    /// The caller set `receiving`.
    ///
    /// # Errors
    ///
    /// The ring's faults; [`Fault::NothingPublished`] or [`Fault::OnlyOthersArrived`] on timeout.
    fn receive_until(&self, want: Want, budget: &mut Budget) -> Result<(), Fault> {
        let mut rx = self.rx.lock();
        let mut others = false;
        // A send making room holds `tx`: it leaves an open message to the next wait.
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
                    // No error for the waiter.
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
            // Others' messages do not extend the wait (this also starts the clock).
            if budget.left().is_zero() {
                return Err(Fault::OnlyOthersArrived);
            }
        }
    }

    /// Gives `msg`'s buffer back for the next receive; kept only if no receive is in
    /// progress and it is at most one element's payload, else freed.
    ///
    /// Ours: upstream's messages borrow the ring.
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

    /// Reads `msg` as an `M`, recording a refusal as [`BenchSeam::last_fault`].
    ///
    /// # Errors
    ///
    /// - `ERANGE` if the message is of another function than `M`'s (logged if unknown).
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
        // Keep the reader's errno, which says more than the fault's.
        read_payload(&msg.payload).inspect_err(|&e| {
            self.delivery.fault(match e {
                ENOMEM => Fault::NoMemory,
                _ => Fault::ReplyUndecodable,
            });
        })
    }
}

/// Reads `payload` as an `M`: its fixed part, then [`MessageFromGsp::read`] of the rest.
///
/// # Errors
///
/// - `EIO` if `payload` is shorter than the fixed part.
/// - Any error of [`MessageFromGsp::read`].
fn read_payload<M: MessageFromGsp>(payload: &[u8]) -> Result<M> {
    let (fixed, rest) = M::Message::read_from_prefix(payload).map_err(|_| EIO)?;
    M::read(&fixed, rest)
}

/// A command whose reply is awaited ([`Cmdq::submit`]). Dropping it, or a failed
/// [`PendingReply::wait`], abandons the reply; [`PendingReply::wait_retryable`] keeps it.
pub struct PendingReply<'a, R> {
    cmdq: &'a Cmdq,
    sequence: u32,
    /// The reply whose read found no memory, read again by the next
    /// [`PendingReply::wait_retryable`].
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
    /// - `ERESTARTSYS` if a signal ended the wait.
    /// - The ring's errors while this wait receives; `ENOMEM` if an element found no
    ///   memory (it stays on the ring).
    /// - Any error of [`Cmdq::read_msg`].
    pub fn wait(mut self, timeout: Delta) -> Result<R> {
        let read = self.wait_retryable(timeout);
        // No retry here: give back a parked reply's buffer.
        if let Some(msg) = self.parked.take() {
            self.cmdq.recycle(msg);
        }
        read
    }

    /// As [`PendingReply::wait`], but after `ENOMEM` or `ETIMEDOUT` the reply stays
    /// awaited (on the ring, or kept here) and the caller may wait again.
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
                // Off the ring and nowhere else: keep it for the retry.
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

/// What a test bench observes and sets of a queue, which the driver never does; all else
/// goes through the driver's entry points (a `Gsp`'s queue through `Gsp::cmdq`).
pub trait BenchSeam {
    /// Returns the counts of the events handed to handlers and of those with none.
    fn events(&self) -> EventCounts;

    /// Returns the counts of what the receivers handed over to the waits.
    fn delivery(&self) -> DeliveryCounts;

    /// Returns why the last receive failed, or `None` if it succeeded.
    fn last_fault(&self) -> Option<Fault>;

    /// Returns the driver's write and read pointers, after any send and receive.
    fn cpu_ptrs(&self) -> (u32, u32);

    /// Returns the shared memory.
    fn gsp_mem(&self) -> &Coherent<GspMem>;

    /// Makes receives sleep on `signal` instead of polling.
    fn set_signal(&self, signal: &'static dyn MsgqSignal);

    /// Sets how replies are matched ([`ReplyMatch::Sequence`] by default).
    fn set_reply_match(&self, matching: ReplyMatch);

    /// Resumes receiving at `read_ptr` (after a reload, or to replay a recorded queue),
    /// forgetting the GSP's progress. Waits for a receive in progress.
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
