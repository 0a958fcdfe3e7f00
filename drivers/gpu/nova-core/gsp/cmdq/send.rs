// SPDX-License-Identifier: GPL-2.0

//! The send: the entry points that send commands, and the writing of their elements to
//! `cpuq`.

use core::marker::PhantomData;

use kernel::{
    prelude::*,
    time::Delta, //
};
use zerocopy::IntoBytes;

use super::{
    wait::{
        poll_queue,
        Budget,
        SEND_TIMEOUT, //
    },
    Cmdq,
    CommandToGsp,
    MessageFromGsp,
    NoReply,
    PendingReply, //
};
use crate::gsp::{
    fw::{
        GspMsgElement,
        MsgFunction,
        WriteCursor,
        ELEMENT_HEADER_SIZE,
        MAX_ELEMENT_PAYLOAD,
        MAX_RPC_PAYLOAD, //
    },
    regs::Doorbell,
};

/// The sending half of the queue, under [`Cmdq`]'s `tx` lock.
///
/// # Invariants
///
/// `ring`'s write pointer is what the driver last stored in `cpuq.tx.writePtr`; what it
/// knows free it learnt from [`DmaGspMem::gsp_read_ptr`].
pub(super) struct CmdqTx {
    pub(super) ring: WriteCursor,
    /// Sequence number of the next element sent.
    pub(super) seq: u32,
    /// Sequence number of the next RPC sent.
    pub(super) rpc_seq: u32,
}

impl CmdqTx {
    /// Returns the sending half of a queue whose pointers are both 0, nothing known yet.
    pub(super) fn new() -> Self {
        Self {
            ring: WriteCursor::new(),
            seq: 0,
            rpc_seq: 0,
        }
    }
}

impl Cmdq {
    /// Sends `command` and waits for its reply, within [`Cmdq::RECEIVE_TIMEOUT`] in all.
    ///
    /// Other callers may send and wait meanwhile; the reply is the message matched with
    /// the command ([`ReplyMatch`](super::ReplyMatch)), whatever else arrives first.
    /// Events that arrive meanwhile go to their handlers ([`Cmdq::on_event`]), or are
    /// counted and logged at debug level; messages for other callers reach them. The one
    /// timeout covers the whole wait however many messages arrive (upstream's restarts with
    /// each).
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
            parked: None,
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
    pub(super) fn send_typed<M: CommandToGsp>(
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
    pub(super) fn send_parts(
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
    pub(super) fn send_element(
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
    pub(super) fn wait_free(&self, tx: &mut CmdqTx, elem_count: u32, timeout: Delta) -> Result {
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
}
