// SPDX-License-Identifier: GPL-2.0

//! What the GSP sends: replies and unasked events, queued in the outbox and sent on
//! `gspq` one element at a time, large ones split into continuation records as r570
//! firmware splits them (see "Split RPCs" in `nova_core::gsp::cmdq`).

use kernel::prelude::*;
use nova_core::gsp::{
    commands::GspInitDone,
    fw::{
        self,
        element::elem_count_for,
        ring::for_each_ring_piece,
        GspMsgElement,
        MsgFunction,
        ELEMENT_HEADER_SIZE,
        GSPQ_OFFSET,
        MAX_ELEMENT_PAYLOAD, //
    },
};
use zerocopy::IntoBytes;

use crate::{
    Outcome,
    Progress,
    Vgsp,
    Withheld, //
};

/// A message waiting to be sent, possibly partly sent already.
pub(crate) struct Outgoing {
    function: u32,
    sequence: u32,
    rpc_result: u32,
    payload: KVec<u8>,
    /// Payload bytes already sent.
    sent: usize,
    /// Whether the head element is out.
    head_sent: bool,
}

impl Vgsp<'_> {
    /// Queues a line of the GSP's log (`UCODE_LIBOS_PRINT`), sent unasked.
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if memory cannot be had.
    pub fn log(&mut self, line: &[u8]) -> Result {
        let mut payload = KVec::new();
        payload.extend_from_slice(line, GFP_KERNEL)?;
        self.event(MsgFunction::UCODE_LIBOS_PRINT, payload)
    }

    /// Queues the unasked event `function` with `payload`. The GSP sends its own at the
    /// points the firmware would (`MMU_FAULT_QUEUED` and an `OS_ERROR_LOG` line when a
    /// copy's address does not translate, `RC_TRIGGERED` when a copy is abandoned,
    /// `POST_EVENT` when one finishes, `UCODE_LIBOS_PRINT` lines at bring-up and every so
    /// many commands); a bench may add more.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if `function` is not an event.
    /// - `ENOMEM` if memory cannot be had.
    pub fn post_event(&mut self, function: MsgFunction, payload: &[u8]) -> Result {
        if !function.is_event() {
            return Err(EINVAL);
        }
        let mut bytes = KVec::new();
        bytes.extend_from_slice(payload, GFP_KERNEL)?;
        self.event(function, bytes)
    }

    /// Queues the boot log, the CPU sequence if one is set, and `GSP_INIT_DONE`.
    pub(crate) fn boot_done(&mut self) -> Result {
        if let Some((header, words)) = &self.cpu_sequence {
            let mut payload = KVec::new();
            payload.extend_from_slice(header.as_bytes(), GFP_KERNEL)?;
            for w in words.iter() {
                payload.extend_from_slice(&w.to_le_bytes(), GFP_KERNEL)?;
            }
            self.stats.sequences += 1;
            self.event(MsgFunction::GSP_RUN_CPU_SEQUENCER, payload)?;
        }
        for text in [
            "vgsp: RM init start",
            "vgsp: message queues up",
            "vgsp: RM init done",
        ] {
            let mut line = KVec::new();
            line.extend_from_slice(text.as_bytes(), GFP_KERNEL)?;
            self.event(MsgFunction::UCODE_LIBOS_PRINT, line)?;
        }
        let mut done = KVec::new();
        done.extend_from_slice(GspInitDone { status: fw::NV_OK }.as_bytes(), GFP_KERNEL)?;
        self.event(MsgFunction::GSP_INIT_DONE, done)
    }

    /// Empties the outbox, every message in it sent, keeping the largest payload buffer of
    /// at most one element for the next reply (`spare`).
    pub(crate) fn clear_outbox(&mut self) {
        while let Some(out) = self.outbox.pop() {
            let capacity = out.payload.capacity();
            if capacity <= MAX_ELEMENT_PAYLOAD && capacity > self.spare.capacity() {
                self.spare = out.payload;
            }
        }
        self.outbox_head = 0;
    }

    pub(crate) fn reply(&mut self, function: u32, sequence: u32, payload: KVec<u8>) -> Result {
        self.stats.replies += 1;
        self.queue(function, sequence, fw::NV_OK, payload)
    }

    pub(crate) fn event(&mut self, function: MsgFunction, payload: KVec<u8>) -> Result {
        self.stats.events += 1;
        // A withheld event is not sent (yet): the journal says so when it is.
        let withheld = self.withhold == Some(function.into());
        self.queue(function.into(), 0, fw::NV_OK, payload)?;
        if !withheld {
            self.note(function.into(), 0, Outcome::Sent);
        }
        Ok(())
    }

    pub(crate) fn queue(
        &mut self,
        function: u32,
        sequence: u32,
        rpc_result: u32,
        payload: KVec<u8>,
    ) -> Result {
        let sequence = match self.sequence_in_replies {
            true => sequence,
            false => 0,
        };
        if self.withhold == Some(function) {
            self.withhold = None;
            self.withheld = Some(Withheld {
                function,
                sequence,
                rpc_result,
                payload,
            });
            return Ok(());
        }
        self.outbox.push(
            Outgoing {
                function,
                sequence,
                rpc_result,
                payload,
                sent: 0,
                head_sent: false,
            },
            GFP_KERNEL,
        )?;
        Ok(())
    }

    /// Sends the next element of the first pending message if `gspq` has room.
    pub(crate) fn send_pending(&mut self) -> Result<Progress> {
        let idx = self.outbox_head;
        let (function, chunk_len) = {
            let out = &self.outbox[idx];
            let chunk_len = (out.payload.len() - out.sent).min(MAX_ELEMENT_PAYLOAD);
            let function = if out.head_sent {
                u32::from(MsgFunction::CONTINUATION_RECORD)
            } else {
                out.function
            };
            (function, chunk_len)
        };
        if !self.has_free(elem_count_for(chunk_len))? {
            return Ok(Progress::Blocked);
        }

        let out = &self.outbox[idx];
        let chunk = &out.payload[out.sent..out.sent + chunk_len];
        // As firmware sends a split message: the head full, every element's `rpc.length`
        // its own chunk, the same `rpc.sequence` on all; the whole length is nowhere but
        // in the message's own fields, where its type has one.
        let mut header = GspMsgElement::new(self.tx_seq, function, out.sequence, chunk_len);
        header.rpc.rpc_result = out.rpc_result;
        header.rpc.rpc_result_private = out.rpc_result;

        header.seal(chunk);

        let start = self.tx.write_offset(0);
        let mem = self.mem;
        let hdr = header.as_bytes();
        for_each_ring_piece(start, hdr.len(), |off, r| {
            mem.write_bytes(GSPQ_OFFSET + fw::slot_offset(0) + off, &hdr[r])
        })?;
        for_each_ring_piece(start + ELEMENT_HEADER_SIZE, chunk.len(), |off, r| {
            mem.write_bytes(GSPQ_OFFSET + fw::slot_offset(0) + off, &chunk[r])
        })?;
        self.advance_gsp_write_ptr(header.elem_count)?;
        self.tx_seq = self.tx_seq.wrapping_add(1);
        if function == u32::from(MsgFunction::CONTINUATION_RECORD) {
            self.stats.continuations_out += 1;
        }

        let out = &mut self.outbox[idx];
        out.sent += chunk_len;
        out.head_sent = true;
        if out.sent == out.payload.len() {
            self.outbox_head += 1;
        }
        Ok(Progress::Worked)
    }
}

/// A short formatted log line without allocation.
pub(crate) struct LogLine {
    buf: [u8; 64],
    len: usize,
}

impl LogLine {
    /// The periodic line: `n` commands handled.
    pub(crate) fn commands(n: u64) -> Self {
        let mut line = Self {
            buf: [0; 64],
            len: 0,
        };
        let _ = core::fmt::write(&mut line, format_args!("vgsp: {n} commands handled"));
        line
    }

    /// The error log's line for a copy-engine DMA to `bus` that did not translate: an
    /// Xid 31 (MMU fault), in the words the virtual GPU can say.
    pub(crate) fn mmu_fault(bus: u64) -> Self {
        let mut line = Self {
            buf: [0; 64],
            len: 0,
        };
        let _ = core::fmt::write(
            &mut line,
            format_args!("NVRM: Xid 31: MMU fault at {bus:#x} (copy engine)"),
        );
        line
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl core::fmt::Write for LogLine {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let end = self.len + s.len();
        if end > self.buf.len() {
            return Err(core::fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}
