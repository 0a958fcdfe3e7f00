// SPDX-License-Identifier: GPL-2.0

//! The GSP's side of the message queues: its accessors of the shared pointers, each with
//! its barrier (the table is `nova_core::gsp::cmdq`'s "Ordering"), the room left in
//! `gspq`, the reads of `cpuq` elements, and the fault injection that posts raw `gspq`
//! elements.

use kernel::{
    prelude::*,
    sync::barrier::{
        dma_mb,
        Full,
        Read,
        Write, //
    },
};
use nova_core::gsp::fw::{
    self,
    ring::{
        for_each_ring_piece,
        ring_ptr,
        ReadCursor, //
    },
    GspMsgElement,
    CPUQ_OFFSET,
    ELEMENT_HEADER_SIZE,
    GSPQ_OFFSET,
    GSP_PAGE_SIZE,
    MAX_ELEMENT_PAYLOAD,
    MSGQ_READ_PTR_OFFSET,
    MSGQ_WRITE_PTR_OFFSET, //
};
use nova_core::num::FromSafeCast;
use vdev::DmaView;
use zerocopy::IntoBytes;

use crate::Vgsp;

impl Vgsp<'_> {
    // Accessors of the shared pointers.

    /// Returns the driver's write pointer into `cpuq`, with acquire semantics for the
    /// loads that follow.
    ///
    /// # Errors
    ///
    /// - `EIO` if the driver published a pointer outside the ring.
    pub fn cpu_write_ptr(&self) -> Result<u32> {
        let ptr = self.mem.read32(CPUQ_OFFSET + MSGQ_WRITE_PTR_OFFSET)?;
        // ORDERING: LOAD->LOAD. Orders this load of the driver's write pointer before our
        // loads of the `cpuq` slots it publishes. The GSP never stores to `cpuq` slots and
        // its later read-pointer store has its own `Full`, so `Read` suffices. Pairs with
        // the driver's `dma_mb(Write)` in `advance_cpu_write_ptr`.
        dma_mb(Read);
        Ok(ring_ptr(ptr)?)
    }

    /// Returns the driver's read pointer into `gspq`, with acquire semantics.
    ///
    /// # Errors
    ///
    /// - `EIO` if the driver published a pointer outside the ring.
    pub fn cpu_read_ptr(&self) -> Result<u32> {
        let ptr = self.mem.read32(CPUQ_OFFSET + MSGQ_READ_PTR_OFFSET)?;
        // ORDERING: LOAD->STORE. Orders this load of the driver's read pointer before our
        // stores into the `gspq` slots it frees, which the driver may still be reading
        // otherwise. `Read` would not order the stores, so this is `Full`. Pairs with the
        // driver's `dma_mb(Full)` in `advance_cpu_read_ptr`.
        dma_mb(Full);
        Ok(ring_ptr(ptr)?)
    }

    /// Frees `n` consumed `cpuq` slots, with release semantics.
    pub(crate) fn advance_gsp_read_ptr(&mut self, n: u32) -> Result {
        let rptr = self.rx.next_read(n);
        // ORDERING: LOAD->STORE. Orders our loads of the consumed `cpuq` slots before the
        // store of the read pointer that lets the driver overwrite them. `Write` would not
        // order the loads, so this is `Full`. Pairs with the driver's `dma_mb(Full)` in
        // `gsp_read_ptr`.
        dma_mb(Full);
        self.mem.write32(GSPQ_OFFSET + MSGQ_READ_PTR_OFFSET, rptr)?;
        // INVARIANT: `rptr` is what was just stored.
        self.rx.consumed(n);
        Ok(())
    }

    /// Publishes `n` `gspq` slots written at the write pointer, with release semantics.
    pub(crate) fn advance_gsp_write_ptr(&mut self, n: u32) -> Result {
        let wptr = self.tx.next_write(n);
        // ORDERING: STORE->STORE. Orders our stores of the element into `gspq` slots before
        // the store of the write pointer that publishes them. The earlier load of the
        // driver's read pointer is ordered by the `Full` in `cpu_read_ptr`, so `Write`
        // suffices. Pairs with the driver's `dma_mb(Read)` in `gsp_write_ptr`.
        dma_mb(Write);
        self.mem
            .write32(GSPQ_OFFSET + MSGQ_WRITE_PTR_OFFSET, wptr)?;
        // INVARIANT: `wptr` is what was just stored.
        self.tx.wrote(n);
        Ok(())
    }

    // The element bytes, and room for them.

    /// Returns whether `slots` `gspq` slots from the write pointer are free.
    ///
    /// Loads the driver's read pointer only when the slots known free do not suffice: a
    /// slot the driver had consumed when the GSP last looked stays free until the GSP
    /// writes it, and the `Full` barrier of that look already orders it before every
    /// store the GSP makes after it.
    ///
    /// # Errors
    ///
    /// - `EIO` if the driver's read pointer is outside the ring.
    pub(crate) fn has_free(&mut self, slots: u32) -> Result<bool> {
        if self.tx.known_free() < slots {
            let rptr = self.cpu_read_ptr()?;
            // INVARIANT: `cpu_read_ptr` just loaded `rptr`.
            self.tx.saw_read_ptr(rptr);
        }
        Ok(self.tx.known_free() >= slots)
    }

    /// Copies `dst.len()` bytes starting at byte `pos` of the `cpuq` element at our read
    /// pointer.
    pub(crate) fn read_cmd_bytes(&self, pos: usize, dst: &mut [u8]) -> Result {
        read_cpuq(self.mem, &self.rx, pos, dst)
    }

    // Fault injection, for tests of the driver's receive path.

    /// Returns a well-formed element (header and payload, checksum set) as the GSP would
    /// send it, with the next element sequence number, for a test to corrupt.
    ///
    /// `function` is a raw number, so that a test can also send one no driver knows.
    ///
    /// # Errors
    ///
    /// - `EMSGSIZE` if `payload` does not fit one element.
    /// - `ENOMEM` if the buffer cannot be had.
    pub fn encode_element(&self, function: u32, sequence: u32, payload: &[u8]) -> Result<KVec<u8>> {
        if payload.len() > MAX_ELEMENT_PAYLOAD {
            return Err(EMSGSIZE);
        }
        let mut header = GspMsgElement::new(self.tx_seq, function, sequence, payload.len());
        header.rpc.rpc_result = fw::NV_OK;
        header.rpc.rpc_result_private = fw::NV_OK;
        header.seal(payload);
        let mut out = KVec::with_capacity(ELEMENT_HEADER_SIZE + payload.len(), GFP_KERNEL)?;
        out.extend_from_slice(header.as_bytes(), GFP_KERNEL)?;
        out.extend_from_slice(payload, GFP_KERNEL)?;
        Ok(out)
    }

    /// Writes `bytes` at the GSP's write pointer and advances it by `slots`, whatever the
    /// bytes say: lets a test publish malformed elements.
    ///
    /// # Errors
    ///
    /// - `ENOSPC` if `bytes` does not fit in `slots`, or `gspq` lacks `slots` free slots.
    pub fn post_raw(&mut self, bytes: &[u8], slots: u32) -> Result {
        if bytes.len() > usize::from_safe_cast(slots) * GSP_PAGE_SIZE || !self.has_free(slots)? {
            return Err(ENOSPC);
        }
        let mem = self.mem;
        for_each_ring_piece(self.tx.write_offset(0), bytes.len(), |off, r| {
            mem.write_bytes(GSPQ_OFFSET + fw::slot_offset(0) + off, &bytes[r])
        })?;
        self.advance_gsp_write_ptr(slots)?;
        self.tx_seq = self.tx_seq.wrapping_add(1);
        Ok(())
    }

    /// Returns whether `slots` `gspq` slots are free for [`Vgsp::post_raw`]: a test that
    /// posts several elements checks first that they all fit.
    ///
    /// # Errors
    ///
    /// - `EIO` if the driver's read pointer is outside the ring.
    pub fn has_room(&mut self, slots: u32) -> Result<bool> {
        self.has_free(slots)
    }

    /// Stores `ptr` as the GSP's write pointer, whatever it is: lets a test publish a
    /// pointer outside the ring. The GSP's own idea of its pointer does not change.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if the pointer's word is outside the shared memory (it never is).
    pub fn publish_raw_write_ptr(&mut self, ptr: u32) -> Result {
        // ORDERING: none. A pointer outside the ring publishes no slot for the driver to
        // read, so no store of ours needs to be ordered before it; the elements posted
        // before were published, in order, by `advance_gsp_write_ptr`.
        self.mem.write32(GSPQ_OFFSET + MSGQ_WRITE_PTR_OFFSET, ptr)
    }
}

/// Copies `dst.len()` bytes starting at byte `pos` of the `cpuq` element at `ring`'s read
/// pointer out of `mem`, wrapping past the ring end.
pub(crate) fn read_cpuq(mem: DmaView<'_>, ring: &ReadCursor, pos: usize, dst: &mut [u8]) -> Result {
    let start = ring.read_offset(pos);
    for_each_ring_piece(start, dst.len(), |off, range| {
        mem.read_bytes(CPUQ_OFFSET + fw::slot_offset(0) + off, &mut dst[range])
    })
}
