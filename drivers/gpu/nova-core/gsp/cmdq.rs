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
//! | [`DmaGspMem::gsp_read_ptr`] | `dma_mb(Full)` after | its load before our slot stores | `dma_mb(Full)` before its read-pointer store |
//! | [`DmaGspMem::advance_cpu_write_ptr`] | `dma_mb(Write)` before | our slot stores before the pointer store | `dma_mb(Read)` after its write-pointer load |
//! | [`DmaGspMem::gsp_write_ptr`] | `dma_mb(Read)` after | its load before our slot loads | `dma_mb(Write)` before its write-pointer store |
//! | [`DmaGspMem::advance_cpu_read_ptr`] | `dma_mb(Full)` before | our slot loads before the pointer store | `dma_mb(Full)` after its read-pointer load |
//!
//! The doorbell is written with `writel` semantics ([`kernel::io::Io::write32`]), which
//! orders it after the write-pointer store.
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
//!   [`DmaGspMem::advance_cpu_write_ptr`] stores the pointer with no barrier before it and
//!   a `fence(SeqCst)` after it, and [`DmaGspMem::gsp_write_ptr`] has no barrier after its
//!   load. The ordering proof's seed regression shows it wrong.
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
//! # Errors on receive
//!
//! Every refusal leaves the queue usable: the next valid message is received as if
//! nothing had happened, and [`Cmdq::last_fault`] says in a few words what was wrong.
//! No GSP content makes the driver panic, read or write outside `GspMem`, or wait
//! beyond the caller's timeout.
//!
//! | condition | errno | the element |
//! |---|---|---|
//! | nothing arrives in time (a GSP that stopped or never answers), or only messages the wait skips (events while a reply is awaited) | `ETIMEDOUT` | - |
//! | GSP write pointer outside the ring (>= 63) | `EIO` | nothing consumed |
//! | GSP write pointer moved backwards (fewer slots published than before) | `EIO` | nothing consumed |
//! | `elemCount` 0, above 16, or above the published slots (also across the ring end) | `EIO` | every published slot dropped |
//! | wrong signature or unsupported header version | `EIO` | consumed |
//! | `rpc.length` below the RPC header, beyond the element, above 4 MiB, or inconsistent with `elemCount` | `EIO` | consumed |
//! | bad checksum | `EIO` | consumed |
//! | element sequence number not after the previous one | `EIO` | consumed |
//! | continuation record without a head; head followed by something else, by another RPC's continuation, or by more bytes than announced | `EIO` | consumed |
//! | a head whose continuation never comes | `ETIMEDOUT` | head consumed |
//! | function not the one waited for ([`Cmdq::receive_msg`]) | `ERANGE` / `EINVAL` if unknown | consumed |
//! | non-zero `rpc_result` in a reply | `EINVAL` | consumed |
//!
//! Elements are copied out of the ring once and checked on the copy, so bytes the GSP
//! changes after the check (a double fetch) never reach the caller. On send: a GSP read
//! pointer outside the ring is `EIO` (nothing written), a ring that stays full
//! `ETIMEDOUT`, a payload above 4 MiB `EMSGSIZE`.

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
    sync::barrier::{
        dma_mb,
        Full,
        Read,
        Write, //
    },
    time::{
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

use crate::gsp::{
    events::{
        is_event,
        EventHandler,
        Events, //
    },
    fw::{
        self,
        GspMem,
        GspMsgElement,
        MsgFunction,
        MsgqTxHeader,
        RingCursor, //
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
/// The sleep between looks after [`SPIN_BUDGET`] (`usleep_range(50, 100)` in a kernel):
/// an idle wait wakes every 50 to 100 us instead of burning its CPU, and sees a message
/// at most that late.
pub const NAP: Delta = Delta::from_micros(50);

/// A wait's timeout, whose clock starts only when a look first finds the queue not
/// ready: a busy queue is served without reading the clock at all.
///
/// One budget covers a whole wait, however many messages it receives on the way: a
/// caller that skips events (log lines, say) until its reply arrives keeps passing the
/// same budget ([`Cmdq::receive_any_within`]), so no stream of events can hold it
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
/// # Invariants
///
/// `ring`'s write and read pointers are what the driver last stored in `cpuq.tx.writePtr`
/// and `cpuq.rx.readPtr`; what it knows of the GSP's pointers it learnt from
/// [`Self::gsp_read_ptr`] and [`Self::gsp_write_ptr`].
pub struct DmaGspMem {
    mem: Coherent<GspMem>,
    ring: RingCursor,
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
        // INVARIANT: both our pointers were just stored as 0; nothing is known yet.
        Ok(Self {
            mem,
            ring: RingCursor::new(),
        })
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

    /// Publishes `elem_count` slots written at the write pointer, with release semantics.
    fn advance_cpu_write_ptr(&mut self, elem_count: u32) -> Result {
        let wptr = self.ring.next_write(elem_count);
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
        self.ring.wrote(elem_count);
        Ok(())
    }

    /// Frees `elem_count` consumed slots at the read pointer, with release semantics.
    fn advance_cpu_read_ptr(&mut self, elem_count: u32) -> Result {
        let rptr = self.ring.next_read(elem_count);
        // ORDERING: LOAD->STORE. Orders our loads of the consumed `gspq` slots before the
        // store of the read pointer that hands them back to the GSP, which will overwrite
        // them. `Write` would order only earlier stores, so this is `Full`. Pairs with the
        // GSP's `dma_mb(Full)` after it loads our read pointer.
        dma_mb(Full);
        io_write!(self.mem, .cpuq.rx.read_ptr, rptr);
        // INVARIANT: `rptr` is what was just stored.
        self.ring.consumed(elem_count);
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
    /// # Errors
    ///
    /// - `ETIMEDOUT` if the slots do not become free in time.
    /// - `EIO` if the GSP's read pointer is outside the ring.
    fn wait_free(&mut self, elem_count: u32, timeout: Delta) -> Result {
        if self.ring.known_free() >= elem_count {
            return Ok(());
        }
        let ring = self.ring;
        let rptr = poll_queue(
            || self.gsp_read_ptr(),
            |&rptr| {
                let mut after = ring;
                after.saw_read_ptr(rptr) >= elem_count
            },
            &mut Budget::new(timeout),
        )?;
        // INVARIANT: `gsp_read_ptr` just loaded `rptr`.
        self.ring.saw_read_ptr(rptr);
        Ok(())
    }

    /// Writes `bytes` at byte `pos` of the element that starts at the write pointer,
    /// wrapping past the ring end.
    ///
    /// The caller owns the slots: it checked with [`Self::gsp_read_ptr`] that they are
    /// free, and `pos + bytes.len()` stays within them.
    fn write_element_bytes(&self, pos: usize, bytes: &[u8]) -> Result {
        let start = self.ring.write_offset(pos);
        fw::for_each_ring_piece(start, bytes.len(), |ring_off, range| {
            // The slots written were acquired by `gsp_read_ptr` as free (the caller's duty);
            // the GSP does not read them until the write pointer publishes them.
            io_project!(self.mem, .cpuq.msgq.data[try: ring_off..ring_off + range.len()])
                .copy_from_slice(&bytes[range]);
            Ok(())
        })
    }

    /// Copies `dst.len()` bytes starting at byte `pos` of the element at the read pointer
    /// out of the ring, wrapping past the ring end.
    fn read_element_bytes(&self, pos: usize, dst: &mut [u8]) -> Result {
        let start = self.ring.read_offset(pos);
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
    /// Builds the message from its fixed part and the bytes after it.
    ///
    /// # Errors
    ///
    /// - `EIO` if the message is malformed (for a fixed-size message: bytes after it).
    /// - `ENOMEM` if the bytes cannot be kept.
    fn read(msg: &Self::Message, rest: &[u8]) -> Result<Self>;
}

/// Why an element was not received.
enum Rejected {
    /// The GSP sent it malformed: `EIO`, recorded as the fault.
    Malformed(fw::Malformed),
    /// The driver could not take it (`ENOMEM`).
    Errno(Error),
}

impl From<fw::Malformed> for Rejected {
    fn from(m: fw::Malformed) -> Self {
        Self::Malformed(m)
    }
}

/// The GSP command queue.
pub struct Cmdq {
    gsp_mem: DmaGspMem,
    /// Sequence number of the next element sent.
    seq: u32,
    /// Sequence number of the next RPC sent.
    rpc_seq: u32,
    /// The sequence number of the last element received.
    rx_seq: Option<u32>,
    /// Why the last receive failed.
    last_fault: Option<&'static str>,
    /// What tells the driver that the GSP posted a message, if anything does.
    signal: Option<&'static dyn MsgqSignal>,
    /// The handlers of the GSP's events, called by every receive.
    events: Events,
}

/// What a wait does with a message it received ([`Cmdq::receive_any_skipping`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Skip {
    /// It is the one waited for: return it.
    Take,
    /// Not the one, and the wait dealt with it (a log line printed).
    Handled,
    /// Not the one: consumed, and counted if it is an event.
    PassOver,
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

impl Cmdq {
    /// How long [`Cmdq::send_command`] waits for the reply, as upstream.
    pub const RECEIVE_TIMEOUT: Delta = Delta::from_secs(5);

    /// Allocates the shared memory and initialises both queues.
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if the memory cannot be had.
    pub fn new(dev: &Device<Bound>) -> Result<Self> {
        Self::with_memory(DmaGspMem::new(dev)?)
    }

    /// Initialises both queues in `mem`, an allocation the caller prepared (a test bench's,
    /// with a read observer), whatever it held before.
    ///
    /// # Errors
    ///
    /// - `EOVERFLOW` if `mem` is smaller than a [`GspMem`].
    pub fn new_in(mem: Coherent<GspMem>) -> Result<Self> {
        Self::with_memory(DmaGspMem::init(mem)?)
    }

    fn with_memory(gsp_mem: DmaGspMem) -> Result<Self> {
        Ok(Self {
            gsp_mem,
            seq: 0,
            rpc_seq: 0,
            rx_seq: None,
            last_fault: None,
            signal: None,
            events: Events::default(),
        })
    }

    /// Registers `handler` for the GSP's events of `function`: every receive that takes
    /// one off the ring hands it over, in arrival order ([`crate::gsp::events`]).
    ///
    /// # Errors
    ///
    /// As [`Events::register`].
    pub fn on_event(
        &mut self,
        function: MsgFunction,
        handler: &'static dyn EventHandler,
    ) -> Result {
        self.events.register(function, handler)
    }

    /// Returns the event handlers and their counts.
    pub fn events(&self) -> &Events {
        &self.events
    }

    /// Makes receives sleep on `signal` between looks at the queue instead of polling.
    pub fn set_signal(&mut self, signal: &'static dyn MsgqSignal) {
        self.signal = Some(signal);
    }

    /// Returns why the last receive failed, in a few words, or `None` if it succeeded.
    pub fn last_fault(&self) -> Option<&'static str> {
        self.last_fault
    }

    /// Records `reason` as the fault of the receive in progress and returns `errno`.
    fn fault(&mut self, errno: Error, reason: &'static str) -> Error {
        self.last_fault = Some(reason);
        errno
    }

    /// Starts receiving at read pointer `read_ptr` of rings whose earlier contents the
    /// driver has already consumed (after a reload, or to replay a recorded queue),
    /// forgetting what it knew of the GSP's progress.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if `read_ptr` is outside the ring.
    pub fn resume_reading_at(&mut self, read_ptr: u32) -> Result {
        if read_ptr >= MSGQ_NUM_PAGES {
            return Err(EINVAL);
        }
        let delta = (read_ptr + MSGQ_NUM_PAGES - self.gsp_mem.ring.read_ptr()) % MSGQ_NUM_PAGES;
        self.gsp_mem.advance_cpu_read_ptr(delta)?;
        self.gsp_mem.ring.forget_published();
        self.rx_seq = None;
        Ok(())
    }

    /// Returns the shared memory, whose bus address the GSP is given at boot.
    pub fn gsp_mem(&self) -> &Coherent<GspMem> {
        &self.gsp_mem.mem
    }

    /// Returns the driver's write and read pointers.
    pub fn cpu_ptrs(&self) -> (u32, u32) {
        (self.gsp_mem.ring.write_ptr(), self.gsp_mem.ring.read_ptr())
    }

    /// Sends `command` and waits for its reply, within [`Cmdq::RECEIVE_TIMEOUT`] in all.
    ///
    /// Events arriving first go to their handlers ([`Cmdq::on_event`]); one without a
    /// handler is counted and logged at debug level. Messages of other functions are
    /// consumed, each with a warning naming it, where upstream consumes them silently;
    /// [`crate::gsp::Gsp::send_command`] hands the GSP's log events to the log instead. The one timeout covers the whole
    /// wait however many of them arrive (upstream's restarts with each).
    ///
    /// # Errors
    ///
    /// - `ETIMEDOUT` if the ring has no room within [`SEND_TIMEOUT`], or the reply does
    ///   not arrive within [`Cmdq::RECEIVE_TIMEOUT`].
    /// - Any other error of [`Cmdq::post`] or of [`Cmdq::receive_msg`] but `ERANGE`.
    pub fn send_command<M>(&mut self, bar: &impl Doorbell, command: M) -> Result<M::Reply>
    where
        M: CommandToGsp,
        M::Reply: MessageFromGsp,
    {
        self.post(bar, &command)?;
        let reply = u32::from(<M::Reply as MessageFromGsp>::FUNCTION);
        let mut budget = Budget::new(Self::RECEIVE_TIMEOUT);
        let msg = self.receive_any_skipping(&mut budget, |msg| {
            if msg.function == reply {
                return Skip::Take;
            }
            if !is_event(msg) {
                pr_warn!(
                    "gsp: {} ({}) dropped while waiting for {}\n",
                    msg.function().map_or("UNKNOWN", MsgFunction::name),
                    msg.function,
                    <M::Reply as MessageFromGsp>::FUNCTION.name()
                );
            }
            Skip::PassOver
        })?;
        self.read_msg(&msg)
    }

    /// Sends `command`, which the GSP does not answer, without waiting for anything but
    /// ring space.
    ///
    /// # Errors
    ///
    /// As [`Cmdq::post`].
    pub fn send_command_no_wait<M>(&mut self, bar: &impl Doorbell, command: M) -> Result
    where
        M: CommandToGsp<Reply = NoReply>,
    {
        self.post(bar, &command).map(|_| ())
    }

    /// Sends any command without waiting for its reply, and returns its RPC sequence
    /// number: for callers that match the reply themselves (the copy engine, whose
    /// acknowledgement may cross other messages; the test bench).
    ///
    /// Ours: upstream has only the two sends above.
    ///
    /// # Errors
    ///
    /// As [`Cmdq::send_rpc`].
    pub fn post<M: CommandToGsp>(&mut self, bar: &impl Doorbell, command: &M) -> Result<u32> {
        let fixed = command.init();
        self.send_parts(
            bar,
            M::FUNCTION,
            [fixed.as_bytes(), command.variable_payload()],
            SEND_TIMEOUT,
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
        &mut self,
        bar: &impl Doorbell,
        function: MsgFunction,
        payload: &[u8],
        timeout: Delta,
    ) -> Result<u32> {
        self.send_parts(bar, function, [payload, &[]], timeout)
    }

    /// Sends an RPC whose payload is `parts` one after the other (a command's fixed part
    /// and its variable payload), split into elements of at most [`MAX_ELEMENT_PAYLOAD`]
    /// bytes: the head, then continuation records. Each element's `rpc.length` covers its
    /// own chunk, the head's too, as upstream and nouveau send them; the GSP knows the
    /// whole length from the command's own fields.
    ///
    /// # Errors
    ///
    /// As [`Cmdq::send_rpc`].
    fn send_parts(
        &mut self,
        bar: &impl Doorbell,
        function: MsgFunction,
        parts: [&[u8]; 2],
        timeout: Delta,
    ) -> Result<u32> {
        let total = parts[0].len() + parts[1].len();
        if total > MAX_RPC_PAYLOAD {
            return Err(EMSGSIZE);
        }
        let sequence = self.rpc_seq;
        let mut start = 0;
        loop {
            let end = total.min(start + MAX_ELEMENT_PAYLOAD);
            let element_function = match start {
                0 => function,
                _ => MsgFunction::ContinuationRecord,
            };
            self.send_element(bar, element_function, sequence, parts, start..end, timeout)?;
            start = end;
            if start == total {
                break;
            }
        }
        self.rpc_seq = self.rpc_seq.wrapping_add(1);
        Ok(sequence)
    }

    /// Waits for room, writes one element carrying bytes `range` of `parts` (taken one
    /// after the other), publishes it and rings the doorbell.
    fn send_element(
        &mut self,
        bar: &impl Doorbell,
        function: MsgFunction,
        sequence: u32,
        parts: [&[u8]; 2],
        range: core::ops::Range<usize>,
        timeout: Delta,
    ) -> Result {
        let chunk_len = range.len();
        let mut header =
            GspMsgElement::new(self.seq, function.into(), sequence, chunk_len, chunk_len);
        let elem_count = header.elem_count;
        self.gsp_mem.wait_free(elem_count, timeout)?;

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

        self.gsp_mem.write_element_bytes(0, header.as_bytes())?;
        for (at, piece) in pieces {
            if !piece.is_empty() {
                self.gsp_mem
                    .write_element_bytes(ELEMENT_HEADER_SIZE + at, piece)?;
            }
        }
        self.gsp_mem.advance_cpu_write_ptr(elem_count)?;
        self.seq = self.seq.wrapping_add(1);

        // `ring` is `writel`: ordered after the write-pointer store above.
        bar.ring();
        Ok(())
    }

    /// Waits for an element within `budget` and returns the number of published slots.
    ///
    /// # Errors
    ///
    /// - `ETIMEDOUT` if nothing is published in time.
    /// - `EIO` if the GSP's write pointer is outside the ring, or moved backwards (fewer
    ///   slots published than it had published before); nothing is consumed.
    fn wait_published(&mut self, budget: &mut Budget) -> Result<u32> {
        let ring = self.gsp_mem.ring;
        let wptr = match self.signal {
            None => poll_queue(
                || self.gsp_mem.gsp_write_ptr(),
                |&wptr| wptr != ring.read_ptr() || ring.known_published() > 0,
                budget,
            ),
            Some(signal) => self.wait_signalled(signal, budget),
        }
        .map_err(|e| {
            let reason = if e == ETIMEDOUT {
                "nothing published in time"
            } else {
                "write pointer outside the ring"
            };
            self.fault(e, reason)
        })?;
        // INVARIANT: `gsp_write_ptr` just loaded `wptr`.
        match self.gsp_mem.ring.saw_write_ptr(wptr) {
            Ok(available) => Ok(available),
            Err(m) => Err(self.fault(m.into(), m.0)),
        }
    }

    /// Waits within `budget` for the GSP's write pointer to publish something, sleeping on
    /// `signal`; returns the write pointer.
    fn wait_signalled(&self, signal: &dyn MsgqSignal, budget: &mut Budget) -> Result<u32> {
        loop {
            // ORDERING: LOAD->LOAD. The count is loaded (acquire) before the write pointer,
            // so a message published after this look raises the count past `seen`. Pairs
            // with the GSP's doorbell, rung after its write-pointer store.
            let seen = signal.count();
            let wptr = self.gsp_mem.gsp_write_ptr()?;
            let ring = self.gsp_mem.ring;
            if wptr != ring.read_ptr() || ring.known_published() > 0 {
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
    fn consume(&mut self, slots: u32) -> Result {
        self.gsp_mem.advance_cpu_read_ptr(slots)
    }

    /// Validates the element at the read pointer, appends its payload to `payload` and
    /// consumes it; returns its header. `available` is the number of published slots.
    ///
    /// The header is copied out of the ring once and every check is on that copy; the
    /// payload bytes it announces are copied once, straight into `payload`, and the
    /// checksum is verified there. A head makes room for its whole RPC in `payload` at
    /// once.
    fn receive_element(&mut self, available: u32, payload: &mut KVec<u8>) -> Result<GspMsgElement> {
        let mut raw = GspMsgElement::default();
        self.gsp_mem.read_element_bytes(0, raw.as_mut_bytes())?;
        let elem_count = raw.elem_count;
        let undelimited = match elem_count {
            0 => Some("element count 0"),
            n if n > MAX_ELEMENT_PAGES => Some("element count above 16"),
            n if n > available => Some("element count beyond the published slots"),
            _ => None,
        };
        if let Some(reason) = undelimited {
            // The element cannot be delimited: drop everything published.
            self.consume(available)?;
            return Err(self.fault(EIO, reason));
        }

        let result = self.copy_and_check(&raw, payload);
        self.consume(elem_count)?;
        let header = result.map_err(|e| match e {
            Rejected::Malformed(m) => self.fault(m.into(), m.0),
            Rejected::Errno(e) => e,
        })?;
        let seq = header.seq_num;
        if let Some(last) = self.rx_seq {
            // Forward jumps are allowed: slots dropped undelimited had numbers too.
            if seq.wrapping_sub(last).wrapping_sub(1) >= 1 << 31 {
                return Err(self.fault(EIO, "element sequence number went back"));
            }
        }
        self.rx_seq = Some(seq);
        Ok(header)
    }

    /// Validates `raw`, the header of the element at the read pointer, then copies just
    /// the payload bytes it announces (not the padding of the last slot) to the end of
    /// `payload` and verifies the checksum on that copy.
    fn copy_and_check(
        &mut self,
        raw: &GspMsgElement,
        payload: &mut KVec<u8>,
    ) -> Result<GspMsgElement, Rejected> {
        let (header, chunk_len) = fw::validate_header(raw.as_bytes(), raw.elem_count)?;
        let room = match MsgFunction::try_from(header.rpc.function) {
            Ok(MsgFunction::ContinuationRecord) => chunk_len,
            // A head: its whole RPC, which `validate_header` bounds by `MAX_RPC_PAYLOAD`.
            _ => header.rpc_payload_len().unwrap_or(chunk_len),
        };
        let start = payload.len();
        payload
            .reserve(room, GFP_KERNEL)
            .and_then(|()| payload.resize(start + chunk_len, 0, GFP_KERNEL))
            .map_err(|_| Rejected::Errno(ENOMEM))?;
        self.gsp_mem
            .read_element_bytes(ELEMENT_HEADER_SIZE, &mut payload[start..])
            .map_err(|_| fw::Malformed("element outside the shared memory"))?;
        fw::verify_checksum(&header, &payload[start..])?;
        Ok(header)
    }

    /// Receives the next message, whatever its function, reassembling continuation
    /// records. Waits up to `timeout` in all.
    ///
    /// Ours: upstream receives typed messages only ([`Cmdq::receive_msg`]).
    ///
    /// # Errors
    ///
    /// See the table in the module documentation.
    pub fn receive_any(&mut self, timeout: Delta) -> Result<GspMessage> {
        self.receive_any_within(&mut Budget::new(timeout))
    }

    /// [`Cmdq::receive_any`], waiting only for what is left of `budget`, for a caller
    /// whose one wait receives several messages.
    ///
    /// # Errors
    ///
    /// As [`Cmdq::receive_any`].
    pub(crate) fn receive_any_within(&mut self, budget: &mut Budget) -> Result<GspMessage> {
        loop {
            let msg = self.receive_message(budget)?;
            if !self.events.dispatch(&msg) {
                return Ok(msg);
            }
            // An event handed to its handler does not extend the wait.
            if budget.left().is_zero() {
                return Err(self.fault(ETIMEDOUT, "only events arrived in time"));
            }
        }
    }

    /// Receives the next message off the ring, whatever it is, within `budget`.
    ///
    /// # Errors
    ///
    /// As [`Cmdq::receive_any`].
    fn receive_message(&mut self, budget: &mut Budget) -> Result<GspMessage> {
        self.last_fault = None;
        let available = self.wait_published(budget)?;
        let mut payload = KVec::new();
        let head = self.receive_element(available, &mut payload)?;
        // `validate_header` checked both.
        let total = head.rpc_payload_len().ok_or(EIO)?;
        if head.rpc.function == u32::from(MsgFunction::ContinuationRecord) {
            return Err(self.fault(EIO, "continuation record without a head"));
        }
        let mut elem_count = head.elem_count;

        while payload.len() < total {
            let available = self.wait_published(budget)?;
            let cont = self.receive_element(available, &mut payload)?;
            if cont.rpc.function != u32::from(MsgFunction::ContinuationRecord) {
                return Err(self.fault(EIO, "head not followed by its continuation"));
            }
            if cont.rpc.sequence != head.rpc.sequence {
                return Err(self.fault(EIO, "continuation record of another RPC"));
            }
            if payload.len() > total {
                return Err(self.fault(EIO, "continuation records longer than the RPC"));
            }
            elem_count += cont.elem_count;
        }

        Ok(GspMessage {
            function: head.rpc.function,
            sequence: head.rpc.sequence,
            seq_num: head.seq_num,
            rpc_result: head.rpc.rpc_result,
            elem_count,
            payload,
        })
    }

    /// Receives messages within `budget` until one arrives that `skip` says to
    /// [`Skip::Take`], and returns it; `skip` sees every message before (unasked events,
    /// say) and says what it did with it. The whole wait ends within `budget`, however
    /// many messages are skipped. An event passed over ([`Skip::PassOver`]) is counted
    /// as one without a handler ([`Events::unhandled`]).
    ///
    /// # Errors
    ///
    /// - `ETIMEDOUT` if the budget runs out, including while messages keep arriving that
    ///   `skip` passes over.
    /// - Any other error of [`Cmdq::receive_any`].
    pub(crate) fn receive_any_skipping(
        &mut self,
        budget: &mut Budget,
        mut skip: impl FnMut(&GspMessage) -> Skip,
    ) -> Result<GspMessage> {
        loop {
            let msg = self.receive_any_within(budget)?;
            match skip(&msg) {
                Skip::Take => return Ok(msg),
                Skip::Handled => {}
                Skip::PassOver if is_event(&msg) => self.events.pass_over(msg.function),
                Skip::PassOver => {}
            }
            // A skipped message does not extend the wait; this also starts the clock if
            // every look so far found a message.
            if budget.left().is_zero() {
                return Err(self.fault(ETIMEDOUT, "only skipped messages arrived in time"));
            }
        }
    }

    /// Receives the next message as an `M`.
    ///
    /// # Errors
    ///
    /// - `ERANGE` if the message is a known function other than `M`'s (it is consumed).
    /// - `EINVAL` if the function is unknown, or the reply carries a non-zero
    ///   `rpc_result`.
    /// - Any error of [`Cmdq::receive_any`] or [`MessageFromGsp::read`].
    pub fn receive_msg<M: MessageFromGsp>(&mut self, timeout: Delta) -> Result<M> {
        let msg = self.receive_any(timeout)?;
        self.read_msg(&msg)
    }

    /// Reads `msg`, a message received whole, as an `M`, recording the reason of a
    /// refusal as [`Cmdq::last_fault`].
    ///
    /// # Errors
    ///
    /// As [`Cmdq::receive_msg`], less the receive's own.
    pub fn read_msg<M: MessageFromGsp>(&mut self, msg: &GspMessage) -> Result<M> {
        let function = msg
            .function()
            .map_err(|e| self.fault(e, "unknown function"))?;
        if function != M::FUNCTION {
            return Err(self.fault(ERANGE, "function not the one waited for"));
        }
        if msg.rpc_result != fw::NV_OK {
            return Err(self.fault(EINVAL, "reply reports an error"));
        }
        read_payload(&msg.payload).map_err(|e| self.fault(e, "reply does not decode as its type"))
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
