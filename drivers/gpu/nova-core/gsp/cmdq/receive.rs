// SPDX-License-Identifier: GPL-2.0

//! The receive: taking elements off `gspq`, checking them on their copy and
//! reassembling split messages (see "Split RPCs" and "Errors on receive" in the
//! [`super`] documentation).

use kernel::prelude::*;
use zerocopy::IntoBytes;

use super::{
    ring::DmaGspMem,
    wait::{
        poll_queue,
        Budget, //
    },
    GspMessage,
    MsgqSignal, //
};
use crate::gsp::{
    fault::Fault,
    fw::{
        self,
        GspMsgElement,
        MsgFunction,
        ReadCursor,
        ELEMENT_HEADER_SIZE,
        MAX_ELEMENT_PAGES,
        MAX_ELEMENT_PAYLOAD,
        MAX_RPC_PAYLOAD,
        MSGQ_NUM_PAGES, //
    },
};

/// Why a receive from the ring gave no message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RxError {
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

/// The receiving half of the queue, under [`Cmdq`](super::Cmdq)'s `rx` lock, held by the receiver.
///
/// # Invariants
///
/// `ring`'s read pointer is what the driver last stored in `cpuq.rx.readPtr`; what it
/// knows published it learnt from [`DmaGspMem::gsp_write_ptr`].
pub(super) struct CmdqRx {
    pub(super) ring: ReadCursor,
    /// The sequence number of the last element received.
    rx_seq: Option<u32>,
    /// A split message whose continuation records are still to come.
    partial: Option<Partial>,
    /// What the next receive returns before it looks at the ring: the message that
    /// interrupted a split one, whose refusal was returned first.
    ready: Option<Result<GspMessage, RxError>>,
    /// What tells the driver that the GSP posted a message, if anything does.
    pub(super) signal: Option<&'static dyn MsgqSignal>,
    /// The buffer of a message already read, given back ([`Cmdq::recycle`]): the next
    /// message is received into it, without an allocation while it is large enough.
    ///
    /// [`Cmdq::recycle`]: super::Cmdq::recycle
    pub(super) spare: KVec<u8>,
}

impl CmdqRx {
    /// Returns the receiving half of a queue whose pointers are both 0, nothing known yet.
    pub(super) fn new() -> Self {
        Self {
            ring: ReadCursor::new(),
            rx_seq: None,
            partial: None,
            ready: None,
            signal: None,
            spare: KVec::new(),
        }
    }

    /// Moves the read pointer to `read_ptr`, within the ring, and forgets what was known
    /// of the GSP's progress and of the messages in flight.
    pub(super) fn resume_at(&mut self, mem: &DmaGspMem, read_ptr: u32) {
        let delta = (read_ptr + MSGQ_NUM_PAGES - self.ring.read_ptr()) % MSGQ_NUM_PAGES;
        mem.advance_cpu_read_ptr(&mut self.ring, delta);
        self.ring.forget_published();
        self.rx_seq = None;
        self.partial = None;
        self.ready = None;
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
            // Forward jumps are allowed: slots dropped undelimited had numbers too. The
            // GSP's side (`vgsp::commands`) demands the next number exactly, as r570's
            // receive does: the driver never drops a slot it published, and the element
            // copy and its checks are otherwise the same on both sides (`fw::validate_header`,
            // `fw::verify_checksum`).
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
    pub(super) fn receive_message(
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
        let mut payload = core::mem::take(&mut self.spare);
        payload.clear();
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
