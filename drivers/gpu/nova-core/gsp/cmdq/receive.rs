// SPDX-License-Identifier: GPL-2.0

//! The receive: taking elements off `gspq`, checking them on their copy and
//! reassembling split messages into [`GspMessage`]s (see "Split RPCs" and "Errors on
//! receive" in the `cmdq` documentation).
//!
//! Messages are delimited by [`Delimiter`], the rule the virtual GSP's receive uses too,
//! and each element is checked as the virtual GSP checks one ([`check_elem_count`],
//! [`validate_header`], [`verify_checksum`]).
//!
//! # Memory
//!
//! No element is lost for want of memory. Each element is copied out of the ring and
//! checked without an allocation: straight into the message's buffer when it has room
//! already (a buffer given back by `Cmdq::recycle`, or one reserved for the whole
//! message), else into a buffer of one element's payload that the queue allocates when it
//! is created. The room the message's buffer then needs (for a head, the whole message
//! where its length is expected; for a continuation record, its chunk) is reserved before
//! the element is consumed. If it cannot be had, nothing is consumed: the receive fails
//! with `ENOMEM` ([`Fault::NoMemory`]), the element stays on the ring, a message half
//! reassembled stays in the queue's state, and the next receive resumes where this one
//! stopped.

use kernel::{
    alloc::AllocError,
    prelude::*,
    time::Delta, //
};
use zerocopy::IntoBytes;

use super::{
    ring::DmaGspMem,
    wait::{
        poll_queue,
        Budget,
        RECORD_TIMEOUT, //
    },
};
use crate::gsp::{
    fault::Fault,
    fw::{
        element::{
            check_elem_count,
            is_continuation,
            validate_header,
            verify_checksum,
            Delimiter,
            Next, //
        },
        ring::ReadCursor,
        GspMsgElement,
        MsgFunction,
        ELEMENT_HEADER_SIZE,
        MAX_ELEMENT_PAYLOAD,
        MAX_RPC_PAYLOAD,
        NV_OK, //
    },
};

/// A message received from the GSP, continuation records reassembled.
///
/// The function is kept as the raw number of the wire, which may be one the driver does
/// not know; [`GspMessage::function()`] types it.
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
    /// Returns the message's function, which may be one the driver does not know.
    pub fn function(&self) -> MsgFunction {
        MsgFunction(self.function)
    }
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
pub(super) enum RxError {
    /// Nothing was consumed: the ring's own fault (nothing (more) published in time, a
    /// write pointer the driver does not believe), or no memory for the element at the
    /// read pointer ([`Fault::NoMemory`]). A message half reassembled stays so.
    Ring(Fault),
    /// Elements were consumed and refused.
    Refused(Fault),
    /// A message of this function and `rpc.sequence` was taken off the ring and refused:
    /// its reply's caller, if one awaits it, gets the refusal.
    Rejected(Fault, u32, u32),
    /// A valid element that is no message's (a stray continuation record) was consumed
    /// and skipped, for the reason given: it is logged, and no error for the waiter.
    Skipped(Fault),
}

impl From<Fault> for RxError {
    fn from(fault: Fault) -> Self {
        Self::Refused(fault)
    }
}

/// What a receive does with a message still open: its last element full, nothing
/// published after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Open {
    /// Waits up to [`RECORD_TIMEOUT`] for the next element, whatever is left of the
    /// budget; if none comes, the message is whole and delivered ([`Delimiter`]).
    Grace,
    /// Does not wait: keeps the message open for the next receive, which resumes it and
    /// waits the grace. For a send taking what is published to make room, which holds the
    /// send lock and must not hold every other sender up for a grace.
    Keep,
}

/// Makes room in `payload` for `additional` more bytes, which take it to at most
/// [`MAX_RPC_PAYLOAD`], without asking for more than that: a `KVec` doubles its capacity
/// as it grows, which past half of it would ask `kmalloc` for more than its largest
/// allocation (4 MiB on x86_64 and arm64), a failure no retry would cure. The bytes are
/// then moved to an allocation of exactly the largest RPC.
///
/// # Errors
///
/// - [`AllocError`] if the memory cannot be had; `payload` is unchanged.
fn make_room(payload: &mut KVec<u8>, additional: usize) -> Result<(), AllocError> {
    let need = payload.len() + additional;
    if need <= payload.capacity() {
        return Ok(());
    }
    if payload.capacity().saturating_mul(2) <= MAX_RPC_PAYLOAD {
        return payload.reserve(additional, GFP_KERNEL);
    }
    let mut largest = KVec::with_capacity(need.max(MAX_RPC_PAYLOAD), GFP_KERNEL)?;
    largest.extend_from_slice(payload, GFP_KERNEL)?;
    *payload = largest;
    Ok(())
}

/// Copies the payload of the element at `ring`'s read pointer, whose checked header is
/// `header`, into `copy`, and checks the copy, and the sequence number against `last`,
/// the last one received.
fn check_copy(
    mem: &DmaGspMem,
    ring: &ReadCursor,
    last: Option<u32>,
    header: &GspMsgElement,
    copy: &mut [u8],
) -> Result<(), Fault> {
    mem.read_element_bytes(ring, ELEMENT_HEADER_SIZE, copy)
        .map_err(|_| Fault::ElementOutsideSharedMemory)?;
    verify_checksum(header, copy)?;
    if let Some(last) = last {
        // Forward jumps are allowed: slots dropped undelimited had numbers too. The GSP's
        // side (`vgsp::commands`) demands the next number exactly, as r570's receive does:
        // the driver never drops a slot it published, and the element copy and its checks
        // are otherwise the same on both sides (`fw::element`).
        if header.seq_num.wrapping_sub(last).wrapping_sub(1) >= 1 << 31 {
            return Err(Fault::SequenceWentBack);
        }
    }
    Ok(())
}

/// The payload lengths the readers of messages expect (the queue's delivery answers).
pub(super) trait Expected {
    /// Returns the payload length expected of the message of `function` and
    /// `rpc.sequence`, if a reader expects one.
    fn len(&self, function: u32, sequence: u32) -> Option<usize>;

    /// Notes that the head of that message was consumed: a length noted for it alone is
    /// used up.
    fn used(&self, function: u32, sequence: u32);
}

/// Where [`CmdqRx::copy_and_check`] copied an element's payload to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Chunk {
    /// To the end of the message's buffer, which had room for it already.
    Placed,
    /// To the element buffer: the message's buffer must grow for it first.
    Staged,
}

/// A message whose head was received and whose continuation records may still come.
struct Partial {
    /// The head's header.
    head: GspMsgElement,
    /// Where the message ends.
    delimiter: Delimiter,
    /// Slots consumed so far.
    elem_count: u32,
    /// The payload received so far.
    payload: KVec<u8>,
}

impl Partial {
    /// Ends the message: it, or its refusal if it is shorter than expected. A reply that
    /// reports an error (`rpc_result`) carries none of its type's payload, and is taken as
    /// it is.
    fn finish(self) -> Result<GspMessage, RxError> {
        if self.delimiter.is_short() && self.head.rpc.rpc_result == NV_OK {
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

/// The receiving half of the queue, under the queue's `rx` lock, held by the receiver.
///
/// # Invariants
///
/// - `ring`'s read pointer is what the driver last stored in `cpuq.rx.readPtr`; what it
///   knows published it learnt from [`DmaGspMem::gsp_write_ptr`].
/// - `element` is [`MAX_ELEMENT_PAYLOAD`] bytes long.
pub(super) struct CmdqRx {
    pub(super) ring: ReadCursor,
    /// The sequence number of the last element consumed whole.
    rx_seq: Option<u32>,
    /// A message whose last element was full: the next element decides whether it goes on.
    partial: Option<Partial>,
    /// What tells the driver that the GSP posted a message, if anything does.
    pub(super) signal: Option<&'static dyn MsgqSignal>,
    /// The buffer of a message already read, given back (`Cmdq::recycle`): the next
    /// message is received into it, without an allocation while it is large enough.
    pub(super) spare: KVec<u8>,
    /// The payload of the element being received, copied out of the ring and checked
    /// here before anything is allocated for it.
    element: KVVec<u8>,
}

impl CmdqRx {
    /// Returns the receiving half of a queue whose pointers are both 0, nothing known yet.
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if the buffer of one element cannot be had.
    pub(super) fn new() -> Result<Self> {
        // INVARIANT: nothing is known; `element` is made `MAX_ELEMENT_PAYLOAD` long.
        Ok(Self {
            ring: ReadCursor::default(),
            rx_seq: None,
            partial: None,
            signal: None,
            spare: KVec::new(),
            element: KVVec::from_elem(0, MAX_ELEMENT_PAYLOAD, GFP_KERNEL)?,
        })
    }

    /// Moves the read pointer to `read_ptr`, within the ring, and forgets what was known
    /// of the GSP's progress and of the messages in flight.
    pub(super) fn resume_at(&mut self, mem: &DmaGspMem, read_ptr: u32) {
        let delta = self.ring.slots_to(read_ptr);
        mem.advance_cpu_read_ptr(&mut self.ring, delta);
        self.ring.forget_published();
        self.rx_seq = None;
        self.partial = None;
    }

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

    /// Consumes the element whose checked header is `header`: its slots are freed and its
    /// sequence number is the last one received.
    fn accept(&mut self, mem: &DmaGspMem, header: &GspMsgElement) {
        self.consume(mem, header.elem_count);
        self.rx_seq = Some(header.seq_num);
    }

    /// Copies the header of the element at the read pointer out of the ring.
    ///
    /// # Errors
    ///
    /// - `EIO` if the slot is outside the shared memory (the driver's mapping).
    fn peek_header(&self, mem: &DmaGspMem) -> Result<GspMsgElement, RxError> {
        let mut raw = GspMsgElement::default();
        mem.read_element_bytes(&self.ring, 0, raw.as_mut_bytes())
            .map_err(|_| RxError::Refused(Fault::ElementOutsideSharedMemory))?;
        Ok(raw)
    }

    /// Delimits the element at the read pointer (`available` slots published), whose
    /// header `raw` was peeked, copies its payload out of the ring and checks it ([`Chunk`]
    /// says where it went); returns its header, the length of its chunk and where it is.
    /// Allocates nothing and consumes nothing unless the element is refused.
    ///
    /// # Errors
    ///
    /// - `EIO` if its element count is 0, above 16 or above the published slots: every
    ///   published slot is then consumed.
    /// - `EIO` if a check of [`CmdqRx::copy_and_check`] fails: its slots are consumed.
    fn check_element(
        &mut self,
        mem: &DmaGspMem,
        raw: &GspMsgElement,
        available: u32,
        payload: &mut KVec<u8>,
        start: usize,
    ) -> Result<(GspMsgElement, usize, Chunk), Fault> {
        if let Err(fault) = check_elem_count(raw.elem_count, available) {
            // The element cannot be delimited: drop everything published.
            self.consume(mem, available);
            return Err(fault);
        }
        let checked = self.copy_and_check(mem, raw, payload, start);
        if checked.is_err() {
            self.consume(mem, raw.elem_count);
        }
        checked
    }

    /// Validates `raw`, the header of the element at the read pointer, then copies just
    /// the payload bytes it announces (not the padding of the last slot) out of the ring,
    /// verifies the checksum on that copy and checks the sequence number. The bytes go to
    /// `payload` at `start`, its length then `start` plus theirs, if it has room for them
    /// already, else to the element buffer: either way nothing is allocated, and
    /// `payload` is `start` bytes long if a check fails.
    ///
    /// `payload` may be longer than `start` (a buffer given back, whose old bytes are
    /// overwritten): only what lies past its length is zeroed before the copy.
    ///
    /// The header is copied out of the ring once and every check is on that copy; the
    /// payload is copied once, and only the copy is used.
    fn copy_and_check(
        &mut self,
        mem: &DmaGspMem,
        raw: &GspMsgElement,
        payload: &mut KVec<u8>,
        start: usize,
    ) -> Result<(GspMsgElement, usize, Chunk), Fault> {
        let (header, chunk_len) = validate_header(raw.as_bytes(), raw.elem_count)?;
        let need = start + chunk_len;
        payload.truncate(need);
        // Within the capacity: this does not allocate, and cannot fail.
        let placed = payload.capacity() >= need
            && (payload.len() == need || payload.resize(need, 0, GFP_KERNEL).is_ok());
        if !placed {
            payload.truncate(start);
        }
        let (chunk, copy) = match placed {
            true => (Chunk::Placed, &mut payload[start..]),
            // PANIC: `validate_header` bounds `chunk_len` by `MAX_ELEMENT_PAYLOAD`, the
            // length of `element` (type invariant).
            false => (Chunk::Staged, &mut self.element[..chunk_len]),
        };
        let checked = check_copy(mem, &self.ring, self.rx_seq, &header, copy);
        if checked.is_err() {
            payload.truncate(start);
        }
        checked.map(|()| (header, chunk_len, chunk))
    }

    /// Keeps a checked chunk, `chunk`, in `payload`, with room for `room` bytes in all:
    /// where the chunk went to the element buffer, it is appended. Before the element is
    /// consumed, so that without memory it stays on the ring.
    ///
    /// # Errors
    ///
    /// - [`AllocError`] if the room cannot be had; the chunk is not in `payload`.
    fn keep(
        &self,
        payload: &mut KVec<u8>,
        chunk: Chunk,
        chunk_len: usize,
        room: usize,
    ) -> Result<(), AllocError> {
        let kept =
            make_room(payload, room.saturating_sub(payload.len())).and_then(|()| match chunk {
                Chunk::Placed => Ok(()),
                Chunk::Staged => payload.extend_from_slice(&self.element[..chunk_len], GFP_KERNEL),
            });
        if kept.is_err() && chunk == Chunk::Placed {
            payload.truncate(payload.len() - chunk_len);
        }
        kept
    }

    /// Receives the next message off the ring, whatever it is, reassembling continuation
    /// records as [`Delimiter`] says. The first element is waited for within `budget`; the
    /// element after a full one, as `open` says, whatever is left of `budget`. `expected`
    /// gives the payload length a message's reader expects, where one does.
    ///
    /// So a receive ends at most [`RECORD_TIMEOUT`] after `budget`, unless the GSP keeps
    /// publishing the records of the message being received, each within
    /// [`RECORD_TIMEOUT`] of the one before, up to the largest RPC.
    ///
    /// # Errors
    ///
    /// A [`Fault`]'s, see "Errors on receive" in the module documentation;
    /// [`RxError::Skipped`] for a stray continuation record, which is no error.
    pub(super) fn receive_message(
        &mut self,
        mem: &DmaGspMem,
        budget: &mut Budget,
        expected: &dyn Expected,
        open: Open,
    ) -> Result<GspMessage, RxError> {
        loop {
            let waited = match (&self.partial, open) {
                // After a full element: a fixed grace, not what is left of the budget.
                (Some(_), Open::Grace) => {
                    self.wait_published(mem, &mut Budget::new(RECORD_TIMEOUT))
                }
                (Some(_), Open::Keep) => self.wait_published(mem, &mut Budget::new(Delta::ZERO)),
                (None, _) => self.wait_published(mem, budget),
            };
            let available = match waited {
                Ok(available) => available,
                Err(RxError::Ring(Fault::NothingPublished)) if open == Open::Grace => {
                    // Nothing after a full element within the grace: whole.
                    return match self.partial.take() {
                        Some(partial) => partial.finish(),
                        None => Err(RxError::Ring(Fault::NothingPublished)),
                    };
                }
                Err(e) => return Err(e),
            };
            let raw = self.peek_header(mem)?;
            if let Some(partial) = self.partial.take() {
                if partial.delimiter.next(&raw) == Next::Ends {
                    // Any other element, a record of another message included, ends it,
                    // and stays for the next receive.
                    return partial.finish();
                }
                match self.receive_continuation(mem, &raw, available, partial)? {
                    Some(msg) => return Ok(msg),
                    None => continue,
                }
            }
            if is_continuation(&raw) {
                return Err(self.skip_stray(mem, &raw, available));
            }
            if let Some(msg) = self.receive_head(mem, &raw, available, expected)? {
                return Ok(msg);
            }
        }
    }

    /// Receives the head element whose header `raw` was peeked: returns the message if it
    /// is whole, or keeps it as the message still open and returns `None`.
    fn receive_head(
        &mut self,
        mem: &DmaGspMem,
        raw: &GspMsgElement,
        available: u32,
        expected: &dyn Expected,
    ) -> Result<Option<GspMessage>, RxError> {
        let (function, sequence) = (raw.rpc.function, raw.rpc.sequence);
        // Looked up before the payload is copied out of the ring: the lock the lookup takes
        // is released before the copy, not between it and the read-pointer store that frees
        // its slots, where that release would order the copy on this path alone and hide
        // whether `advance_cpu_read_ptr`'s barrier does. Only `used`, once the head is
        // checked and consumed, takes the length: a bad head takes nobody's.
        let len = expected.len(function, sequence);
        // Not cleared: `copy_and_check` overwrites the bytes it keeps.
        let mut payload = core::mem::take(&mut self.spare);
        let (head, chunk_len, chunk) =
            match self.check_element(mem, raw, available, &mut payload, 0) {
                Ok(checked) => checked,
                Err(fault) => {
                    self.spare = payload;
                    return Err(RxError::Refused(fault));
                }
            };
        // Room for the whole message where its length is known (past the largest RPC it is
        // refused when the records reach it), else for this element.
        let room = len.map_or(chunk_len, |len| len.min(MAX_RPC_PAYLOAD).max(chunk_len));
        if self.keep(&mut payload, chunk, chunk_len, room).is_err() {
            self.spare = payload;
            return Err(RxError::Ring(Fault::NoMemory));
        }
        self.accept(mem, &head);
        expected.used(function, sequence);
        let partial = Partial {
            head,
            delimiter: Delimiter::head(&head, chunk_len, len),
            elem_count: head.elem_count,
            payload,
        };
        if partial.delimiter.is_whole() {
            return partial.finish().map(Some);
        }
        self.partial = Some(partial);
        Ok(None)
    }

    /// Receives the continuation record whose header `raw` was peeked into `partial`, the
    /// message it continues: returns the message once it is whole, else keeps it open and
    /// returns `None`.
    fn receive_continuation(
        &mut self,
        mem: &DmaGspMem,
        raw: &GspMsgElement,
        available: u32,
        mut partial: Partial,
    ) -> Result<Option<GspMessage>, RxError> {
        let (function, sequence) = (partial.head.rpc.function, partial.head.rpc.sequence);
        // A record refused takes its message with it, whose caller learns why.
        let reject = |fault| RxError::Rejected(fault, function, sequence);
        let before = partial.payload.len();
        let (cont, chunk_len, chunk) = self
            .check_element(mem, raw, available, &mut partial.payload, before)
            .map_err(reject)?;
        if before + chunk_len > MAX_RPC_PAYLOAD {
            self.accept(mem, &cont);
            return Err(reject(Fault::ContinuationsBeyondLargestRpc));
        }
        // Without memory the record stays on the ring, and the message here, for the next
        // receive to resume.
        if self
            .keep(&mut partial.payload, chunk, chunk_len, before + chunk_len)
            .is_err()
        {
            self.partial = Some(partial);
            return Err(RxError::Ring(Fault::NoMemory));
        }
        self.accept(mem, &cont);
        partial.elem_count += cont.elem_count;
        partial.delimiter.append(&cont, chunk_len);
        if partial.delimiter.is_whole() {
            return partial.finish().map(Some);
        }
        self.partial = Some(partial);
        Ok(None)
    }

    /// Takes the continuation record whose header `raw` was peeked, met while no message
    /// is open: checked as any element and refused if bad, else consumed and skipped.
    fn skip_stray(&mut self, mem: &DmaGspMem, raw: &GspMsgElement, available: u32) -> RxError {
        // No room: checked in the element buffer, without an allocation.
        match self.check_element(mem, raw, available, &mut KVec::new(), 0) {
            Ok((record, _, _)) => {
                self.accept(mem, &record);
                RxError::Skipped(Fault::ContinuationWithoutHead)
            }
            Err(fault) => RxError::Refused(fault),
        }
    }
}
