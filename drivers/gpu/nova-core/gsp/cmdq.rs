// SPDX-License-Identifier: GPL-2.0

//! The GSP command queue: the CPU's side of the two message rings in [`GspMem`].
//!
//! The CPU writes commands into `cpuq` and publishes them by advancing
//! `cpuq.tx.writePtr`, then rings the doorbell; it reads the GSP's messages from `gspq`
//! and frees their slots by advancing `cpuq.rx.readPtr`.
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
//! # Barrier variants (benchmark only)
//!
//! Two Cargo features change the barriers above and nothing else, so that `tests/bench`
//! can measure this design against the alternatives. Both are off by default, no normal
//! build or test enables them, and neither is ever meant for use:
//!
//! - `all-full`: every `dma_mb` of the driver and the virtual GSP emits the `Full`
//!   instruction (the shim's `dma-mb-all-full`); no line here changes.
//! - `seed-barriers`: the seed's pre-fix placement, the known bug this design fixes:
//!   `DmaGspMem::advance_cpu_write_ptr` stores the pointer with no barrier before it and
//!   a `fence(SeqCst)` after it, and `DmaGspMem::gsp_write_ptr` has no barrier after its
//!   load. The ordering proof's seed regression shows it wrong.
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
//! ([`Cmdq::submit`]), posted ([`Cmdq::post`]) or received by type
//! ([`Cmdq::receive_msg`]). Where we differ on purpose:
//!
//! - Nouveau knows the length of every message it receives, as it receives only what a
//!   caller asked for. This queue also receives what nobody asked for (events, replies
//!   whose command did not say): such a message collects the continuation records that
//!   follow its head as they arrive, and is whole after the first element that is not
//!   full, or when the next element is not a continuation record. A message whose last
//!   element happens to be full so stays open until the next element (or a later
//!   receive) ends it: the protocol has no other end mark.
//! - Nouveau reads `expected` bytes whatever the elements say; here every element is
//!   checked (its sequence, its function) and a continuation record that comes when none
//!   may (after an element not full, or past the length expected) is refused.
//! - A reply that reports an error (`rpc_result`) is taken as it is, however short: it
//!   carries none of its type's payload.
//! - A message is reassembled in one `KVec`, so in a kernel it is bounded by `kmalloc`'s
//!   largest allocation (4 MiB on x86_64 and arm64) as well as by [`MAX_RPC_PAYLOAD`]: a
//!   message nobody expects a length of grows by doubling from its head's chunk, which
//!   stays within it for whole elements, but one of more than 64 whole elements and a
//!   part would need more and is refused with `ENOMEM`.
//!
//! # Errors on receive
//!
//! Every refusal leaves the queue usable: the next valid message is received as if
//! nothing had happened, and [`Cmdq::last_fault`] says in a few words what was wrong.
//! No GSP content makes the driver panic, read or write outside `GspMem`, or wait
//! beyond the caller's timeout. A refusal of an element (the faults that consume it) goes
//! to the waits that take any message, as the message would have, or, when the message
//! it belongs to is known ("to the message's caller"), to the caller awaiting that
//! message as its reply if one does; with none running it is logged and counted
//! ([`Cmdq::delivery`]). A continuation record refused for any reason takes the message
//! it continues with it, so its refusal goes to that message's caller. The ring's own
//! errors (the faults that consume nothing) go to the receiver.
//!
//! The faults are [`Fault`]'s variants, one per class, each with its errno
//! ([`Fault::errno`]), what the receive consumes for it ([`Fault::consumes`]) and its
//! reason ([`Fault::reason`]); [`Cmdq::last_fault`] names the last.
//!
//! Elements are copied out of the ring once and checked on the copy, so bytes the GSP
//! changes after the check (a double fetch) never reach the caller. On send: a GSP read
//! pointer outside the ring is `EIO` (nothing written), a ring that stays full
//! `ETIMEDOUT`, a payload above 4 MiB `EMSGSIZE`.

mod replies;

use core::marker::PhantomData;

#[cfg_attr(
    feature = "seed-barriers",
    expect(
        unused_imports,
        reason = "the seed variant has no `Read` or `Write` barrier"
    )
)]
use kernel::{
    device::{
        Bound,
        Device, //
    },
    dma::{
        Coherent,
        CoherentBox, //
    },
    io::{
        io_project,
        io_read,
        io_write,
        poll::read_poll_timeout,
        Io, //
    },
    prelude::*,
    sync::{
        aref::ARef,
        barrier::{
            dma_mb,
            Full,
            Read,
            Write, //
        },
        new_condvar,
        new_mutex,
        CondVar,
        CondVarTimeoutResult,
        Mutex, //
    },
    time::{
        msecs_to_jiffies,
        Delta,
        Instant,
        Monotonic, //
    },
};
use zerocopy::{
    FromBytes,
    Immutable,
    IntoBytes, //
};

pub use self::replies::{
    Delivery,
    ReplyMatch, //
};
use self::replies::{
    Handed,
    Replies,
    Want,
    WAIT_QUEUES, //
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
        GspMsgElement,
        MsgFunction,
        MsgqTxHeader,
        ReadCursor,
        WriteCursor, //
        ELEMENT_HEADER_SIZE,
        MAX_ELEMENT_PAGES,
        MAX_ELEMENT_PAYLOAD,
        MAX_RPC_PAYLOAD,
        MSGQ_NUM_PAGES,
    },
    regs::Doorbell,
};

/// How long a command waits for ring space by default.
pub const SEND_TIMEOUT: Delta = Delta::from_secs(1);
/// How long a wait looks at the queue back to back before it starts to sleep: a busy GSP
/// answers within it, and then the wait adds no latency.
const SPIN_BUDGET: Delta = Delta::from_micros(100);
/// The pause between looks while spinning (`ndelay` in a kernel, with a reschedule).
const SPIN_STEP: Delta = Delta::from_nanos(1);
/// The sleep between looks after `SPIN_BUDGET` (`usleep_range(50, 100)` in a kernel):
/// an idle wait wakes every 50 to 100 us instead of burning its CPU, and sees a message
/// at most that late.
pub const NAP: Delta = Delta::from_micros(50);

/// A wait's timeout, whose clock starts only when a look first finds the queue not
/// ready: a busy queue is served without reading the clock at all.
///
/// One budget covers a whole wait, however many messages it receives on the way: a
/// caller that skips events (log lines, say) until its reply arrives keeps passing the
/// same budget ([`Cmdq::receive_any_skipping`]), so no stream of events can hold it
/// beyond its timeout.
pub(crate) struct Budget {
    timeout: Delta,
    start: Option<Instant<Monotonic>>,
}

impl Budget {
    /// Creates a budget of `timeout`; the clock starts at the first [`Budget::left`].
    pub(crate) fn new(timeout: Delta) -> Self {
        Self {
            timeout,
            start: None,
        }
    }

    /// Returns what is left of the timeout, starting the clock at the first call.
    pub(crate) fn left(&mut self) -> Delta {
        if self.timeout.as_nanos() <= 0 {
            return Delta::ZERO;
        }
        match self.start {
            None => {
                self.start = Some(Instant::<Monotonic>::now());
                self.timeout
            }
            Some(start) => {
                Delta::from_nanos((self.timeout.as_nanos() - start.elapsed().as_nanos()).max(0))
            }
        }
    }
}

/// Calls `op` until `cond` accepts its value or `budget` runs out: once, then back to
/// back for [`SPIN_BUDGET`], then every [`NAP`].
///
/// # Errors
///
/// As [`read_poll_timeout`].
fn poll_queue<T>(
    mut op: impl FnMut() -> Result<T>,
    mut cond: impl FnMut(&T) -> bool,
    budget: &mut Budget,
) -> Result<T> {
    // One look before the clock is read: a busy queue is usually ready.
    let val = op()?;
    if cond(&val) {
        return Ok(val);
    }
    let timeout = budget.left();
    if timeout.is_zero() {
        return Err(ETIMEDOUT);
    }
    let spin = Delta::from_nanos(SPIN_BUDGET.as_nanos().min(timeout.as_nanos()));
    match read_poll_timeout(&mut op, &mut cond, SPIN_STEP, spin) {
        Err(e) if e == ETIMEDOUT && timeout.as_nanos() > spin.as_nanos() => {
            let left = Delta::from_nanos(timeout.as_nanos() - spin.as_nanos());
            read_poll_timeout(op, cond, NAP, left)
        }
        result => result,
    }
}

/// The CPU's view of [`GspMem`]: the coherent allocation and the pointer accessors.
///
/// The accessors of the `cpuq` side take the [`WriteCursor`] kept under [`Cmdq`]'s `tx`
/// lock, those of the `gspq` side the [`ReadCursor`] kept under its `rx` lock: each half
/// is used by one thread at a time, and the other half meanwhile by another.
pub struct DmaGspMem {
    mem: Coherent<GspMem>,
}

impl DmaGspMem {
    /// Allocates and initialises the shared memory: the PTE page mapping it, both tx
    /// headers, and every pointer at 0.
    fn new(dev: &Device<Bound>) -> Result<Self> {
        Self::init(CoherentBox::<GspMem>::zeroed(dev, GFP_KERNEL)?.into())
    }

    /// Initialises `mem`, whatever it held: the PTE page mapping it, both tx headers, and
    /// every pointer at 0. The ring slots are left as they are.
    fn init(mem: Coherent<GspMem>) -> Result<Self> {
        let base = mem.dma_address();
        for i in 0..fw::GSP_PTE_COUNT {
            io_write!(mem, .ptes[try: i], fw::gsp_mem_pte(base, i).to_le());
        }
        io_project!(mem, .cpuq.tx).copy_write(MsgqTxHeader::new());
        io_project!(mem, .gspq.tx).copy_write(MsgqTxHeader::new());
        io_write!(mem, .cpuq.rx.read_ptr, 0);
        io_write!(mem, .gspq.rx.read_ptr, 0);
        Ok(Self { mem })
    }

    /// Returns the GSP's read pointer into `cpuq`, with acquire semantics.
    ///
    /// # Errors
    ///
    /// - `EIO` if the GSP published a pointer outside the ring.
    fn gsp_read_ptr(&self) -> Result<u32> {
        let ptr = io_read!(self.mem, .gspq.rx.read_ptr);
        // ORDERING: LOAD->STORE (and LOAD->LOAD). Orders this load of the GSP's read pointer
        // before our stores into the `cpuq` slots it frees: we must not overwrite a slot the
        // GSP may still be reading. `Read` would order only later loads, so this is `Full`.
        // Pairs with the GSP's `dma_mb(Full)` before it stores its read pointer.
        dma_mb(Full);
        Ok(fw::ring_ptr(ptr)?)
    }

    /// Returns the GSP's write pointer into `gspq`, with acquire semantics for the loads
    /// that follow.
    ///
    /// # Errors
    ///
    /// - `EIO` if the GSP published a pointer outside the ring.
    fn gsp_write_ptr(&self) -> Result<u32> {
        let ptr = io_read!(self.mem, .gspq.tx.write_ptr);
        #[cfg(not(feature = "seed-barriers"))]
        // ORDERING: LOAD->LOAD. Orders this load of the GSP's write pointer before our loads
        // of the `gspq` slots it publishes. The driver never stores to `gspq` slots, and its
        // one store that follows (the read pointer) is ordered by the `Full` in
        // `advance_cpu_read_ptr`, so `Read` suffices. Pairs with the GSP's `dma_mb(Write)`
        // before it stores its write pointer.
        dma_mb(Read);
        Ok(fw::ring_ptr(ptr)?)
    }

    /// Publishes `elem_count` slots written at `ring`'s write pointer, with release
    /// semantics.
    fn advance_cpu_write_ptr(&self, ring: &mut WriteCursor, elem_count: u32) {
        let wptr = ring.next_write(elem_count);
        #[cfg(not(feature = "seed-barriers"))]
        // ORDERING: STORE->STORE. Orders our stores of the element (header and payload in
        // the `cpuq` slots) before the store of the write pointer that publishes them. The
        // only earlier load, of the GSP's read pointer, is already ordered by the `Full` in
        // `gsp_read_ptr`, so `Write` suffices. Pairs with the GSP's `dma_mb(Read)` after it
        // loads our write pointer.
        dma_mb(Write);
        io_write!(self.mem, .cpuq.tx.write_ptr, wptr);
        // The seed's pre-fix placement, for the benchmark only and known to be wrong: a CPU
        // fence *after* the pointer store orders nothing before it, so the GSP may see the
        // pointer before the element (the shape `tests/model`'s seed regression fails).
        #[cfg(feature = "seed-barriers")]
        core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
        // INVARIANT: `wptr` is what was just stored.
        ring.wrote(elem_count);
    }

    /// Frees `elem_count` consumed slots at `ring`'s read pointer, with release semantics.
    fn advance_cpu_read_ptr(&self, ring: &mut ReadCursor, elem_count: u32) {
        let rptr = ring.next_read(elem_count);
        // ORDERING: LOAD->STORE. Orders our loads of the consumed `gspq` slots before the
        // store of the read pointer that hands them back to the GSP, which will overwrite
        // them. `Write` would order only earlier stores, so this is `Full`. Pairs with the
        // GSP's `dma_mb(Full)` after it loads our read pointer.
        dma_mb(Full);
        io_write!(self.mem, .cpuq.rx.read_ptr, rptr);
        // INVARIANT: `rptr` is what was just stored.
        ring.consumed(elem_count);
    }

    /// Writes `bytes` at byte `pos` of the element that starts at `ring`'s write pointer,
    /// wrapping past the ring end.
    ///
    /// The caller owns the slots: it checked with [`Self::gsp_read_ptr`] that they are
    /// free, and `pos + bytes.len()` stays within them.
    fn write_element_bytes(&self, ring: &WriteCursor, pos: usize, bytes: &[u8]) -> Result {
        let start = ring.write_offset(pos);
        fw::for_each_ring_piece(start, bytes.len(), |ring_off, range| {
            // The slots written were acquired by `gsp_read_ptr` as free (the caller's duty);
            // the GSP does not read them until the write pointer publishes them.
            io_project!(self.mem, .cpuq.msgq.data[try: ring_off..ring_off + range.len()])
                .copy_from_slice(&bytes[range]);
            Ok(())
        })
    }

    /// Copies `dst.len()` bytes starting at byte `pos` of the element at `ring`'s read
    /// pointer out of the ring, wrapping past the ring end.
    fn read_element_bytes(&self, ring: &ReadCursor, pos: usize, dst: &mut [u8]) -> Result {
        let start = ring.read_offset(pos);
        let len = dst.len();
        fw::for_each_ring_piece(start, len, |ring_off, range| {
            // The slots read were published by the GSP (acquired by `gsp_write_ptr`) and are
            // not handed back before `advance_cpu_read_ptr`. A misbehaving GSP may still
            // change them; every use is of this copy, checked.
            io_project!(self.mem, .gspq.msgq.data[try: ring_off..ring_off + range.len()])
                .copy_to_slice(&mut dst[range]);
            Ok(())
        })
    }
}

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

/// Why a receive from the ring gave no message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RxError {
    /// The ring's own: nothing (more) published in time, or a write pointer the driver
    /// does not believe. Nothing was consumed; a message half assembled stays so.
    Ring(Fault),
    /// Elements were consumed and refused, or could not be kept ([`Fault::NoMemory`]).
    Refused(Fault),
    /// A message of this function and `rpc.sequence` was taken off the ring and refused:
    /// its reply's caller, if one awaits it, gets the refusal.
    Rejected(Fault, u32, u32),
}

impl From<Fault> for RxError {
    fn from(fault: Fault) -> Self {
        Self::Refused(fault)
    }
}

/// A message whose head was received and whose continuation records may still come.
struct Partial {
    /// The head's header.
    head: GspMsgElement,
    /// The payload length its reader expects, if one does ([`Replies::expected_len`]): the
    /// message is whole once it has that many bytes, and refused if it ends with fewer.
    expected: Option<usize>,
    /// Slots consumed so far.
    elem_count: u32,
    /// The payload received so far.
    payload: KVec<u8>,
    /// Whether its last element was full: only a full element may be continued.
    last_full: bool,
}

impl Partial {
    /// Whether no continuation record can follow: the last element was not full, or the
    /// length expected is reached.
    fn is_whole(&self) -> bool {
        !self.last_full || self.expected.is_some_and(|len| self.payload.len() >= len)
    }

    /// Ends the message: it, or its refusal if it is shorter than expected. A reply that
    /// reports an error (`rpc_result`) carries none of its type's payload, and is taken as
    /// it is.
    fn finish(self) -> Result<GspMessage, RxError> {
        let short = self.expected.is_some_and(|len| self.payload.len() < len);
        if short && self.head.rpc.rpc_result == fw::NV_OK {
            return Err(RxError::Rejected(
                Fault::MessageShorterThanExpected,
                self.head.rpc.function,
                self.head.rpc.sequence,
            ));
        }
        Ok(GspMessage {
            function: self.head.rpc.function,
            sequence: self.head.rpc.sequence,
            seq_num: self.head.seq_num,
            rpc_result: self.head.rpc.rpc_result,
            elem_count: self.elem_count,
            payload: self.payload,
        })
    }
}

/// The sending half of the queue, under [`Cmdq`]'s `tx` lock.
///
/// # Invariants
///
/// `ring`'s write pointer is what the driver last stored in `cpuq.tx.writePtr`; what it
/// knows free it learnt from [`DmaGspMem::gsp_read_ptr`].
struct CmdqTx {
    ring: WriteCursor,
    /// Sequence number of the next element sent.
    seq: u32,
    /// Sequence number of the next RPC sent.
    rpc_seq: u32,
}

/// The receiving half of the queue, under [`Cmdq`]'s `rx` lock, held by the receiver.
///
/// # Invariants
///
/// `ring`'s read pointer is what the driver last stored in `cpuq.rx.readPtr`; what it
/// knows published it learnt from [`DmaGspMem::gsp_write_ptr`].
struct CmdqRx {
    ring: ReadCursor,
    /// The sequence number of the last element received.
    rx_seq: Option<u32>,
    /// A split message whose continuation records are still to come.
    partial: Option<Partial>,
    /// What the next receive returns before it looks at the ring: the message that
    /// interrupted a split one, whose refusal was returned first.
    ready: Option<Result<GspMessage, RxError>>,
    /// What tells the driver that the GSP posted a message, if anything does.
    signal: Option<&'static dyn MsgqSignal>,
}

impl CmdqRx {
    /// Waits for an element within `budget` and returns the number of published slots.
    ///
    /// # Errors
    ///
    /// - `ETIMEDOUT` if nothing is published in time.
    /// - `EIO` if the GSP's write pointer is outside the ring, or moved backwards (fewer
    ///   slots published than it had published before); nothing is consumed.
    fn wait_published(&mut self, mem: &DmaGspMem, budget: &mut Budget) -> Result<u32, RxError> {
        let ring = self.ring;
        let wptr = match self.signal {
            None => poll_queue(
                || mem.gsp_write_ptr(),
                |&wptr| wptr != ring.read_ptr() || ring.known_published() > 0,
                budget,
            ),
            Some(signal) => self.wait_signalled(mem, signal, budget),
        }
        .map_err(|e| {
            RxError::Ring(if e == ETIMEDOUT {
                Fault::NothingPublished
            } else {
                Fault::PointerOutsideRing
            })
        })?;
        // INVARIANT: `gsp_write_ptr` just loaded `wptr`.
        self.ring.saw_write_ptr(wptr).map_err(RxError::Ring)
    }

    /// Waits within `budget` for the GSP's write pointer to publish something, sleeping on
    /// `signal`; returns the write pointer.
    fn wait_signalled(
        &self,
        mem: &DmaGspMem,
        signal: &dyn MsgqSignal,
        budget: &mut Budget,
    ) -> Result<u32> {
        loop {
            // ORDERING: LOAD->LOAD. The count is loaded (acquire) before the write pointer,
            // so a message published after this look raises the count past `seen`. Pairs
            // with the GSP's doorbell, rung after its write-pointer store.
            let seen = signal.count();
            let wptr = mem.gsp_write_ptr()?;
            if wptr != self.ring.read_ptr() || self.ring.known_published() > 0 {
                return Ok(wptr);
            }
            let left = budget.left();
            if left.is_zero() {
                return Err(ETIMEDOUT);
            }
            signal.wait(seen, left);
        }
    }

    /// Frees `slots` consumed slots.
    fn consume(&mut self, mem: &DmaGspMem, slots: u32) {
        mem.advance_cpu_read_ptr(&mut self.ring, slots);
    }

    /// Reads the header of the element at the read pointer (`available` slots published)
    /// and checks that it can be delimited.
    ///
    /// # Errors
    ///
    /// - `EIO` if its element count is 0, above 16 or above the published slots: every
    ///   published slot is then consumed.
    fn peek_element(&mut self, mem: &DmaGspMem, available: u32) -> Result<GspMsgElement, RxError> {
        let mut raw = GspMsgElement::default();
        mem.read_element_bytes(&self.ring, 0, raw.as_mut_bytes())
            .map_err(|_| RxError::Refused(Fault::ElementOutsideSharedMemory))?;
        let undelimited = match raw.elem_count {
            0 => Some(Fault::ElementCountZero),
            n if n > MAX_ELEMENT_PAGES => Some(Fault::ElementCountAbove16),
            n if n > available => Some(Fault::ElementCountBeyondPublished),
            _ => None,
        };
        if let Some(fault) = undelimited {
            // The element cannot be delimited: drop everything published.
            self.consume(mem, available);
            return Err(RxError::Refused(fault));
        }
        Ok(raw)
    }

    /// Validates the element at the read pointer, whose header `raw` was peeked, appends
    /// its payload to `payload` and consumes it; returns its header and the length of its
    /// chunk.
    ///
    /// The header is copied out of the ring once and every check is on that copy; the
    /// payload bytes it announces are copied once, straight into `payload`, and the
    /// checksum is verified there.
    fn receive_element(
        &mut self,
        mem: &DmaGspMem,
        raw: &GspMsgElement,
        payload: &mut KVec<u8>,
    ) -> Result<(GspMsgElement, usize), RxError> {
        let result = self.copy_and_check(mem, raw, payload);
        self.consume(mem, raw.elem_count);
        let (header, chunk_len) = result?;
        let seq = header.seq_num;
        if let Some(last) = self.rx_seq {
            // Forward jumps are allowed: slots dropped undelimited had numbers too.
            if seq.wrapping_sub(last).wrapping_sub(1) >= 1 << 31 {
                return Err(RxError::Refused(Fault::SequenceWentBack));
            }
        }
        self.rx_seq = Some(seq);
        Ok((header, chunk_len))
    }

    /// Validates `raw`, the header of the element at the read pointer, then copies just
    /// the payload bytes it announces (not the padding of the last slot) to the end of
    /// `payload` and verifies the checksum on that copy. A continuation record that would
    /// take `payload` past the largest RPC is refused before anything is allocated for it.
    fn copy_and_check(
        &self,
        mem: &DmaGspMem,
        raw: &GspMsgElement,
        payload: &mut KVec<u8>,
    ) -> Result<(GspMsgElement, usize), RxError> {
        let (header, chunk_len) = fw::validate_header(raw.as_bytes(), raw.elem_count)?;
        let start = payload.len();
        // A head or a lone element starts at 0 and fits: only continuation records reach it.
        if start + chunk_len > MAX_RPC_PAYLOAD {
            return Err(RxError::Refused(Fault::ContinuationsBeyondLargestRpc));
        }
        payload
            .resize(start + chunk_len, 0, GFP_KERNEL)
            .map_err(|_| RxError::Refused(Fault::NoMemory))?;
        mem.read_element_bytes(&self.ring, ELEMENT_HEADER_SIZE, &mut payload[start..])
            .map_err(|_| Fault::ElementOutsideSharedMemory)?;
        fw::verify_checksum(&header, &payload[start..])?;
        Ok((header, chunk_len))
    }

    /// Receives the next message off the ring, whatever it is, within `budget`,
    /// reassembling continuation records (see "Split RPCs" in the module documentation).
    /// `expected` gives the payload length a message's reader expects, from its head's
    /// function and `rpc.sequence`, where one does. A message that may still be continued
    /// when nothing more comes in time stays half assembled for the next call.
    ///
    /// # Errors
    ///
    /// A [`Fault`]'s, see "Errors on receive" in the module documentation.
    fn receive_message(
        &mut self,
        mem: &DmaGspMem,
        budget: &mut Budget,
        expected: &dyn Fn(u32, u32) -> Option<usize>,
    ) -> Result<GspMessage, RxError> {
        if let Some(ready) = self.ready.take() {
            return ready;
        }
        loop {
            let available = self.wait_published(mem, budget)?;
            let raw = match self.peek_element(mem, available) {
                Ok(raw) => raw,
                Err(e) => {
                    // Its slots are gone, and the message they may have continued.
                    self.partial = None;
                    return Err(e);
                }
            };
            if raw.rpc.function == u32::from(MsgFunction::ContinuationRecord) {
                if let Some(done) = self.continue_partial(mem, &raw)? {
                    return Ok(done);
                }
                continue;
            }
            // A head: a message still open ends here, with no more continuation records.
            let open = self.partial.take();
            let started = self.start_message(mem, &raw, expected);
            let Some(open) = open else {
                match started? {
                    Some(msg) => return Ok(msg),
                    None => continue,
                }
            };
            // The open message comes first; this one is received after it.
            match started {
                Ok(Some(msg)) => self.ready = Some(Ok(msg)),
                Ok(None) => {}
                Err(e) => self.ready = Some(Err(e)),
            }
            return open.finish();
        }
    }

    /// Receives the head element whose header `raw` was peeked: returns the message if it
    /// is whole, or keeps it as the message still open and returns `None`.
    fn start_message(
        &mut self,
        mem: &DmaGspMem,
        raw: &GspMsgElement,
        expected: &dyn Fn(u32, u32) -> Option<usize>,
    ) -> Result<Option<GspMessage>, RxError> {
        let mut payload = KVec::new();
        let (head, chunk_len) = self.receive_element(mem, raw, &mut payload)?;
        // Looked up once the head is known good, so that a bad one takes nobody's length.
        let expected = expected(head.rpc.function, head.rpc.sequence);
        if let Some(len) = expected {
            // Room for the whole message at once; past the largest RPC it is refused when
            // the continuation records reach it.
            let more = len.min(MAX_RPC_PAYLOAD).saturating_sub(payload.len());
            payload.reserve(more, GFP_KERNEL).map_err(|_| {
                RxError::Rejected(Fault::NoMemory, head.rpc.function, head.rpc.sequence)
            })?;
        }
        let partial = Partial {
            head,
            expected,
            elem_count: head.elem_count,
            payload,
            last_full: chunk_len == MAX_ELEMENT_PAYLOAD,
        };
        if !partial.is_whole() {
            self.partial = Some(partial);
            return Ok(None);
        }
        partial.finish().map(Some)
    }

    /// Receives the continuation record whose header `raw` was peeked into the message
    /// still open: returns the message once it is whole.
    fn continue_partial(
        &mut self,
        mem: &DmaGspMem,
        raw: &GspMsgElement,
    ) -> Result<Option<GspMessage>, RxError> {
        let Some(mut partial) = self.partial.take() else {
            // Checked like any element, then refused: it has nothing to continue.
            let mut scratch = KVec::new();
            self.receive_element(mem, raw, &mut scratch)?;
            return Err(RxError::Refused(Fault::ContinuationWithoutHead));
        };
        let (function, sequence) = (partial.head.rpc.function, partial.head.rpc.sequence);
        // A record refused takes its message with it, whose caller learns why.
        let (cont, chunk_len) = self
            .receive_element(mem, raw, &mut partial.payload)
            .map_err(|e| match e {
                RxError::Refused(fault) => RxError::Rejected(fault, function, sequence),
                other => other,
            })?;
        if cont.rpc.sequence != sequence {
            return Err(RxError::Rejected(
                Fault::ContinuationOfAnotherRpc,
                function,
                sequence,
            ));
        }
        partial.elem_count += cont.elem_count;
        partial.last_full = chunk_len == MAX_ELEMENT_PAYLOAD;
        if !partial.is_whole() {
            self.partial = Some(partial);
            return Ok(None);
        }
        partial.finish().map(Some)
    }
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
        // INVARIANT: `DmaGspMem` stored both our pointers as 0; nothing is known yet.
        try_pin_init!(Self {
            dev: dev.into(),
            gsp_mem: gsp_mem?,
            tx <- new_mutex!(CmdqTx {
                ring: WriteCursor::new(),
                seq: 0,
                rpc_seq: 0,
            }),
            rx <- new_mutex!(CmdqRx {
                ring: ReadCursor::new(),
                rx_seq: None,
                partial: None,
                ready: None,
                signal: None,
            }),
            events <- new_mutex!(Events::default()),
            replies <- new_mutex!(Replies::new()),
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
    pub fn events_dispatched(&self, function: MsgFunction) -> u64 {
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
        let mut rx = self.rx.lock();
        let rx = &mut *rx;
        let delta = (read_ptr + MSGQ_NUM_PAGES - rx.ring.read_ptr()) % MSGQ_NUM_PAGES;
        self.gsp_mem.advance_cpu_read_ptr(&mut rx.ring, delta);
        rx.ring.forget_published();
        rx.rx_seq = None;
        rx.partial = None;
        rx.ready = None;
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

    /// Sends `command` and waits for its reply, within [`Cmdq::RECEIVE_TIMEOUT`] in all.
    ///
    /// Other callers may send and wait meanwhile; the reply is the message matched with
    /// the command ([`ReplyMatch`]), whatever else arrives first. Events that arrive
    /// meanwhile go to their handlers ([`Cmdq::on_event`]), or are counted and logged at
    /// debug level; messages for other callers reach them. The one timeout covers the
    /// whole wait however many messages arrive (upstream's restarts with each).
    ///
    /// # Errors
    ///
    /// - `ETIMEDOUT` if the ring has no room within [`SEND_TIMEOUT`], or the reply does
    ///   not arrive within [`Cmdq::RECEIVE_TIMEOUT`].
    /// - `ERANGE` if the GSP answered with a message of another function.
    /// - Any other error of [`Cmdq::submit`] or of [`Cmdq::receive_msg`].
    pub fn send_command<M>(&self, bar: &impl Doorbell, command: M) -> Result<M::Reply>
    where
        M: CommandToGsp,
        M::Reply: MessageFromGsp,
    {
        self.submit(bar, &command)?.wait(Self::RECEIVE_TIMEOUT)
    }

    /// Sends `command`, which the GSP does not answer, without waiting for anything but
    /// ring space.
    ///
    /// # Errors
    ///
    /// As [`Cmdq::post`].
    pub fn send_command_no_wait<M>(&self, bar: &impl Doorbell, command: M) -> Result
    where
        M: CommandToGsp<Reply = NoReply>,
    {
        self.post(bar, &command).map(|_| ())
    }

    /// Sends `command` with its reply awaited, and returns the [`PendingReply`] that waits
    /// for it: a caller may have several commands in flight.
    ///
    /// Ours: upstream has only [`Cmdq::send_command`], which waits at once.
    ///
    /// # Errors
    ///
    /// As [`Cmdq::send_rpc`], and `EBUSY` if the RPC sequence number has wrapped onto a
    /// command whose reply is still awaited.
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
            _reply: PhantomData,
        })
    }

    /// Sends any command without waiting for its reply, and returns its RPC sequence
    /// number: for callers that match the reply themselves among the messages no one
    /// awaits ([`Cmdq::receive_any`]; the test bench).
    ///
    /// Ours: upstream has only the two sends above.
    ///
    /// # Errors
    ///
    /// As [`Cmdq::send_rpc`].
    ///
    /// Where the command knows the length of its reply ([`CommandToGsp::reply_len`]), the
    /// reply (of the command's own function, as r570 answers) is reassembled to it.
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
            SEND_TIMEOUT,
            reply,
            reply_len.map(|len| (function, len)),
        )
    }

    /// Sends an RPC of `function` with `payload`, split into continuation records when it
    /// exceeds one element, and rings the doorbell after each element. Returns the RPC
    /// sequence number.
    ///
    /// # Errors
    ///
    /// - `EMSGSIZE` if `payload` exceeds [`MAX_RPC_PAYLOAD`].
    /// - `ETIMEDOUT` if the ring has no room for an element within `timeout`.
    /// - `EIO` if the GSP's read pointer is outside the ring.
    pub fn send_rpc(
        &self,
        bar: &impl Doorbell,
        function: MsgFunction,
        payload: &[u8],
        timeout: Delta,
    ) -> Result<u32> {
        self.send_parts(bar, function, [payload, &[]], timeout, None, None)
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
        timeout: Delta,
        reply: Option<u32>,
        reply_len: Option<(u32, usize)>,
    ) -> Result<u32> {
        let total = parts[0].len() + parts[1].len();
        if total > MAX_RPC_PAYLOAD {
            return Err(EMSGSIZE);
        }
        let mut tx = self.tx.lock();
        let sequence = tx.rpc_seq;
        if reply.is_some() || reply_len.is_some() {
            let mut replies = self.replies.lock();
            if let Some(reply) = reply {
                replies.expect(sequence, reply)?;
            }
            if let Some((function, len)) = reply_len {
                replies.note_len(sequence, function, len);
            }
        }
        let mut start = 0;
        let sent = loop {
            let end = total.min(start + MAX_ELEMENT_PAYLOAD);
            let element_function = match start {
                0 => function,
                _ => MsgFunction::ContinuationRecord,
            };
            let element = self.send_element(
                &mut tx,
                bar,
                element_function,
                sequence,
                parts,
                start..end,
                timeout,
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
            let mut replies = self.replies.lock();
            match published {
                // Half an RPC may still be answered: a reply that comes is late.
                true => replies.abandon(sequence),
                false => replies.forget(sequence),
            }
        }
        sent
    }

    /// Waits for room, writes one element carrying bytes `range` of `parts` (taken one
    /// after the other), publishes it and rings the doorbell.
    #[expect(clippy::too_many_arguments, reason = "one RPC's element and its place")]
    fn send_element(
        &self,
        tx: &mut CmdqTx,
        bar: &impl Doorbell,
        function: MsgFunction,
        sequence: u32,
        parts: [&[u8]; 2],
        range: core::ops::Range<usize>,
        timeout: Delta,
    ) -> Result {
        let chunk_len = range.len();
        let mut header = GspMsgElement::new(tx.seq, function.into(), sequence, chunk_len);
        let elem_count = header.elem_count;
        self.wait_free(tx, elem_count, timeout)?;

        // The pieces of `parts` this element carries, and where each starts in it.
        let first = parts[0].len();
        let pieces = [
            (0, &parts[0][range.start.min(first)..range.end.min(first)]),
            (
                first.saturating_sub(range.start),
                &parts[1][range.start.saturating_sub(first)..range.end.saturating_sub(first)],
            ),
        ];
        header.seal_pieces(&pieces);

        self.gsp_mem
            .write_element_bytes(&tx.ring, 0, header.as_bytes())?;
        for (at, piece) in pieces {
            if !piece.is_empty() {
                self.gsp_mem
                    .write_element_bytes(&tx.ring, ELEMENT_HEADER_SIZE + at, piece)?;
            }
        }
        self.gsp_mem.advance_cpu_write_ptr(&mut tx.ring, elem_count);
        tx.seq = tx.seq.wrapping_add(1);

        // `ring` is `writel`: ordered after the write-pointer store above.
        bar.ring();
        Ok(())
    }

    /// Waits up to `timeout` until `elem_count` slots from the write pointer are free.
    ///
    /// Loads the GSP's read pointer only when the slots known free do not suffice: a slot
    /// the GSP had consumed when the driver last looked stays free until the driver
    /// writes it, and the `Full` barrier of that look already orders it before every
    /// store the driver makes after it. A busy queue so skips one load of a line the GSP
    /// keeps writing, and its barrier, per element.
    ///
    /// While the slots are not free, takes the messages the GSP posted off `gspq` if no
    /// wait is receiving ([`Cmdq::receive_published`]): the GSP may be waiting for room
    /// there before it consumes more of `cpuq`.
    ///
    /// # Errors
    ///
    /// - `ETIMEDOUT` if the slots do not become free in time.
    /// - `EIO` if the GSP's read pointer is outside the ring.
    fn wait_free(&self, tx: &mut CmdqTx, elem_count: u32, timeout: Delta) -> Result {
        if tx.ring.known_free() >= elem_count {
            return Ok(());
        }
        let ring = tx.ring;
        let free_after = |rptr| {
            let mut after = ring;
            after.saw_read_ptr(rptr)
        };
        let rptr = poll_queue(
            || {
                let rptr = self.gsp_mem.gsp_read_ptr()?;
                if free_after(rptr) < elem_count {
                    self.receive_published();
                }
                Ok(rptr)
            },
            |&rptr| free_after(rptr) >= elem_count,
            &mut Budget::new(timeout),
        )?;
        // INVARIANT: `gsp_read_ptr` just loaded `rptr`.
        tx.ring.saw_read_ptr(rptr);
        Ok(())
    }

    /// Takes one message already published off the ring, without waiting, if no wait is
    /// receiving, and hands it over. For a send that waits for ring space, with `tx` held
    /// (the lock order allows `rx` after it).
    fn receive_published(&self) {
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
    fn wake(&self, replies: &Replies, queue: usize) {
        if replies.sleepers[queue] > 0 {
            self.queues[queue].notify_all();
        }
    }

    /// Wakes the waits on the queue of whoever was `handed` something, if any. `replies`
    /// is held.
    fn wake_for(&self, replies: &Replies, handed: Handed) {
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
    fn pass_on(&self, replies: &Replies) {
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
    fn wait_delivered(&self, want: Want, budget: &mut Budget) -> Result<GspMessage> {
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
    fn receive_until(&self, want: Want, budget: &mut Budget) -> Result<(), Fault> {
        let mut rx = self.rx.lock();
        let mut others = false;
        // With `rx` held, as the lock order allows.
        let expected = |function, sequence| self.replies.lock().expected_len(function, sequence);
        loop {
            let ready = match rx.receive_message(&self.gsp_mem, budget, &expected) {
                Ok(msg) => self.hand_over(msg, want),
                Err(RxError::Refused(fault)) => self.refuse(fault, want),
                Err(RxError::Rejected(fault, function, sequence)) => {
                    self.reject(fault, function, sequence, want)
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
    fn hand_over(&self, msg: GspMessage, want: Want) -> bool {
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
        let name = MsgFunction::try_from(function).map_or("UNKNOWN", MsgFunction::name);
        match handed {
            Handed::Reply(_) | Handed::Unclaimed => {}
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

    /// Hands the refusal of an element, for `fault`, to the waits that take any message;
    /// returns whether what `want` names is now there.
    fn refuse(&self, fault: Fault, want: Want) -> bool {
        let mut replies = self.replies.lock();
        replies.last_fault = Some(fault);
        let queued = replies.hand_over_refusal(fault.errno());
        let ready = replies.has(want);
        if queued {
            self.wake(&replies, Want::Any.queue());
        }
        drop(replies);
        if !queued {
            dev_warn!(self.dev, "gsp: element refused: {}\n", fault);
        }
        ready
    }

    /// Hands the refusal of a message of `function` and `rpc.sequence`, for `fault`, to
    /// the caller awaiting it as its reply, or else to the waits that take any message;
    /// returns whether what `want` names is now there.
    fn reject(&self, fault: Fault, function: u32, sequence: u32, want: Want) -> bool {
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
                fault
            );
        }
        ready
    }

    /// Counts and logs an event of `function` that had no handler and that no wait took.
    fn pass_over(&self, function: u32) {
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
    fn listening<R>(&self, f: impl FnOnce() -> R) -> R {
        self.replies.lock().listeners += 1;
        let r = f();
        self.replies.lock().listeners -= 1;
        r
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
    /// without a handler, say) and says what it did with it. The whole wait ends within
    /// `budget`, however many messages are skipped. An event passed over
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
            match skip(&msg) {
                Skip::Take => return Ok(msg),
                Skip::PassOver if is_event(&msg) => self.pass_over(msg.function),
                Skip::PassOver => {}
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
    /// - `ERANGE` if the message is a known function other than `M`'s (it is consumed).
    /// - `EINVAL` if the function is unknown, or the reply carries a non-zero
    ///   `rpc_result`.
    /// - Any error of [`Cmdq::receive_any`] or [`MessageFromGsp::read`].
    pub fn receive_msg<M: MessageFromGsp>(&self, timeout: Delta) -> Result<M> {
        let function = u32::from(M::FUNCTION);
        let Some(len) = M::LENGTH else {
            return self.read_msg(&self.receive_any(timeout)?);
        };
        // A message of `M`'s function is reassembled to `M`'s length while this waits.
        self.replies.lock().expect_typed(function, len)?;
        let msg = self.receive_any(timeout);
        self.replies.lock().unexpect_typed(function, len);
        self.read_msg(&msg?)
    }

    /// Reads `msg`, a message received whole, as an `M`, recording the reason of a
    /// refusal as [`Cmdq::last_fault`].
    ///
    /// # Errors
    ///
    /// As [`Cmdq::receive_msg`], less the receive's own.
    pub fn read_msg<M: MessageFromGsp>(&self, msg: &GspMessage) -> Result<M> {
        let function = msg
            .function()
            .map_err(|_| self.fault(Fault::UnknownFunction))?;
        if function != M::FUNCTION {
            return Err(self.fault(Fault::OtherFunction));
        }
        if msg.rpc_result != fw::NV_OK {
            return Err(self.fault(Fault::ReplyReportsError));
        }
        // The reader's errno is kept: it says more than the fault's.
        read_payload(&msg.payload).inspect_err(|_| {
            self.fault(Fault::ReplyUndecodable);
        })
    }
}

/// A command sent with its reply awaited ([`Cmdq::submit`]), whose reply
/// [`PendingReply::wait`] takes. Dropped without a wait, or after a wait that timed out,
/// it abandons the reply: dropped when it comes.
pub struct PendingReply<'a, R> {
    cmdq: &'a Cmdq,
    sequence: u32,
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
        cmdq.read_msg(&msg)
    }

    /// Waits up to `timeout` for the reply, whatever it says.
    ///
    /// # Errors
    ///
    /// - `ETIMEDOUT` if the reply does not come in time.
    /// - `ERESTARTSYS` if a signal ended the wait.
    /// - The ring's errors while this wait receives.
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
