// SPDX-License-Identifier: GPL-2.0

//! The sending half of the queue: writing an RPC's elements to `cpuq`, each once there is
//! room for it, and ringing the doorbell after each (see "Sending" in the `cmdq`
//! documentation).

use kernel::{
    prelude::*,
    time::Delta, //
};
use zerocopy::IntoBytes;

use super::{
    ring::DmaGspMem,
    wait::{
        poll_queue,
        Budget, //
    },
};
use crate::gsp::{
    fw::{
        element::Checksum,
        ring::WriteCursor,
        GspMsgElement,
        MsgFunction,
        ELEMENT_HEADER_SIZE, //
    },
    regs::Doorbell,
};

/// The sending half of the queue, under the queue's `tx` lock.
///
/// # Invariants
///
/// `ring`'s write pointer is what the driver last stored in `cpuq.tx.writePtr`; what it
/// knows free it learnt from [`DmaGspMem::gsp_read_ptr`].
pub(super) struct CmdqTx {
    pub(super) ring: WriteCursor,
    /// Sequence number of the next element sent.
    seq: u32,
    /// Sequence number of the next RPC sent.
    pub(super) rpc_seq: u32,
}

impl CmdqTx {
    /// Returns the sending half of a queue whose pointers are both 0, nothing known yet.
    pub(super) fn new() -> Self {
        Self {
            ring: WriteCursor::default(),
            seq: 0,
            rpc_seq: 0,
        }
    }

    /// Waits for room, writes one element of `function`, numbered `sequence` and carrying
    /// bytes `range` of `parts` (taken one after the other), publishes it and rings the
    /// doorbell. While the ring has no room, `make_room` is called between looks.
    ///
    /// # Errors
    ///
    /// As [`CmdqTx::wait_free`].
    #[expect(clippy::too_many_arguments, reason = "one RPC's element and its place")]
    pub(super) fn send_element(
        &mut self,
        mem: &DmaGspMem,
        bar: &impl Doorbell,
        function: MsgFunction,
        sequence: u32,
        parts: [&[u8]; 2],
        range: core::ops::Range<usize>,
        timeout: Delta,
        make_room: &dyn Fn(),
    ) -> Result {
        let chunk_len = range.len();
        let mut header = GspMsgElement::new(self.seq, function.into(), sequence, chunk_len);
        let elem_count = header.elem_count;
        self.wait_free(mem, elem_count, timeout, make_room)?;

        // The pieces of `parts` this element carries, and where each starts in it.
        let first = parts[0].len();
        let pieces = [
            (0, &parts[0][range.start.min(first)..range.end.min(first)]),
            (
                first.saturating_sub(range.start),
                &parts[1][range.start.saturating_sub(first)..range.end.saturating_sub(first)],
            ),
        ];
        // The payload first, summed as it is copied; then the header, sealed with that sum.
        let mut payload = Checksum::default();
        for (at, piece) in pieces {
            if !piece.is_empty() {
                mem.write_element_bytes(
                    &self.ring,
                    ELEMENT_HEADER_SIZE + at,
                    piece,
                    Some(&mut payload),
                )?;
            }
        }
        header.seal_summed(payload);
        mem.write_element_bytes(&self.ring, 0, header.as_bytes(), None)?;
        mem.advance_cpu_write_ptr(&mut self.ring, elem_count);
        self.seq = self.seq.wrapping_add(1);

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
    /// While the slots are not free, calls `make_room` (which takes the messages the GSP
    /// posted off `gspq` if no wait is receiving): the GSP may be waiting for room there
    /// before it consumes more of `cpuq`.
    ///
    /// # Errors
    ///
    /// - `ETIMEDOUT` if the slots do not become free in time.
    /// - `EIO` if the GSP's read pointer is outside the ring.
    fn wait_free(
        &mut self,
        mem: &DmaGspMem,
        elem_count: u32,
        timeout: Delta,
        make_room: &dyn Fn(),
    ) -> Result {
        if self.ring.known_free() >= elem_count {
            return Ok(());
        }
        let ring = self.ring;
        let free_after = |rptr| {
            let mut after = ring;
            after.saw_read_ptr(rptr)
        };
        let rptr = poll_queue(
            || {
                let rptr = mem.gsp_read_ptr()?;
                if free_after(rptr) < elem_count {
                    make_room();
                }
                Ok(rptr)
            },
            |&rptr| free_after(rptr) >= elem_count,
            &mut Budget::new(timeout),
        )?;
        // INVARIANT: `gsp_read_ptr` just loaded `rptr`.
        self.ring.saw_read_ptr(rptr);
        Ok(())
    }
}
