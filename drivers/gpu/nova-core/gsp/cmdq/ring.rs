// SPDX-License-Identifier: GPL-2.0

//! The ring accessors: the CPU's view of the shared memory, its pointer loads and stores
//! and their barriers. A change of the queue's ordering touches this file and its
//! partner on the GSP's side (`drivers/gpu/vgsp/gsp/msgq.rs` and `outbox.rs`).

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
        Io, //
    },
    prelude::*,
    sync::barrier::{
        dma_mb,
        Full,
        Read,
        Write, //
    },
};

use crate::gsp::fw::{
    self,
    element::Checksum,
    ring::{
        for_each_ring_piece,
        ring_ptr,
        ReadCursor,
        WriteCursor, //
    },
    GspMem,
    MsgqTxHeader, //
};

/// The CPU's view of [`GspMem`]: the coherent allocation and the pointer accessors.
///
/// The accessors of the `cpuq` side take the [`WriteCursor`] kept under the queue's `tx`
/// lock, those of the `gspq` side the [`ReadCursor`] kept under its `rx` lock: each half
/// is used by one thread at a time, and the other half meanwhile by another.
pub(crate) struct DmaGspMem {
    pub(super) mem: Coherent<GspMem>,
}

impl DmaGspMem {
    /// Allocates and initialises the shared memory: the PTE page mapping it, both tx
    /// headers, and every pointer at 0.
    pub(super) fn new(dev: &Device<Bound>) -> Result<Self> {
        Self::init(CoherentBox::<GspMem>::zeroed(dev, GFP_KERNEL)?.into())
    }

    /// Initialises `mem`, whatever it held: the PTE page mapping it, both tx headers, and
    /// every pointer at 0. The ring slots are left as they are.
    pub(super) fn init(mem: Coherent<GspMem>) -> Result<Self> {
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
    pub(super) fn gsp_read_ptr(&self) -> Result<u32> {
        let ptr = io_read!(self.mem, .gspq.rx.read_ptr);
        // ORDERING: LOAD->STORE (and LOAD->LOAD). Orders this load of the GSP's read pointer
        // before our stores into the `cpuq` slots it frees: we must not overwrite a slot the
        // GSP may still be reading. `Read` would order only later loads, so this is `Full`.
        // Pairs with the GSP's `dma_mb(Full)` before it stores its read pointer.
        dma_mb(Full);
        Ok(ring_ptr(ptr)?)
    }

    /// Returns the GSP's write pointer into `gspq`, with acquire semantics for the loads
    /// that follow.
    ///
    /// # Errors
    ///
    /// - `EIO` if the GSP published a pointer outside the ring.
    pub(super) fn gsp_write_ptr(&self) -> Result<u32> {
        let ptr = io_read!(self.mem, .gspq.tx.write_ptr);
        // ORDERING: [gsp-wptr-acquire]
        // LOAD->LOAD. Orders this load of the GSP's write pointer before our loads
        // of the `gspq` slots it publishes. The driver never stores to `gspq` slots, and its
        // one store that follows (the read pointer) is ordered by the `Full` in
        // `advance_cpu_read_ptr`, so `Read` suffices. Pairs with the GSP's `dma_mb(Write)`
        // before it stores its write pointer.
        dma_mb(Read);
        Ok(ring_ptr(ptr)?)
    }

    /// Publishes `elem_count` slots written at `ring`'s write pointer, with release
    /// semantics.
    pub(super) fn advance_cpu_write_ptr(&self, ring: &mut WriteCursor, elem_count: u32) {
        let wptr = ring.next_write(elem_count);
        // ORDERING: [cpu-wptr-release]
        // STORE->STORE. Orders our stores of the element (header and payload in
        // the `cpuq` slots) before the store of the write pointer that publishes them. The
        // only earlier load, of the GSP's read pointer, is already ordered by the `Full` in
        // `gsp_read_ptr`, so `Write` suffices. Pairs with the GSP's `dma_mb(Read)` after it
        // loads our write pointer.
        dma_mb(Write);
        io_write!(self.mem, .cpuq.tx.write_ptr, wptr);
        // INVARIANT: `wptr` is what was just stored.
        ring.wrote(elem_count);
    }

    /// Frees `elem_count` consumed slots at `ring`'s read pointer, with release semantics.
    pub(super) fn advance_cpu_read_ptr(&self, ring: &mut ReadCursor, elem_count: u32) {
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
    /// wrapping past the ring end; with `sum`, adds them to it as it goes
    /// ([`Checksum::copy_update_at`]: each block summed just before it is copied, so the
    /// bytes are read from memory once).
    ///
    /// The caller owns the slots: it checked with [`Self::gsp_read_ptr`] that they are
    /// free, and `pos + bytes.len()` stays within them.
    #[inline]
    pub(super) fn write_element_bytes(
        &self,
        ring: &WriteCursor,
        pos: usize,
        bytes: &[u8],
        mut sum: Option<&mut Checksum>,
    ) -> Result {
        let start = ring.write_offset(pos);
        for_each_ring_piece(start, bytes.len(), |ring_off, range| {
            let copy = |at: usize, block: &[u8]| {
                let off = ring_off + at;
                // The slots written were acquired by `gsp_read_ptr` as free (the caller's
                // duty); the GSP does not read them until the write pointer publishes them.
                io_project!(self.mem, .cpuq.msgq.data[try: off..off + block.len()])
                    .copy_from_slice(block);
                Ok(())
            };
            match sum.as_deref_mut() {
                Some(sum) => sum.copy_update_at(pos + range.start, &bytes[range], copy),
                None => copy(0, &bytes[range]),
            }
        })
    }

    /// Copies `dst.len()` bytes starting at byte `pos` of the element at `ring`'s read
    /// pointer out of the ring, wrapping past the ring end.
    #[inline]
    pub(super) fn read_element_bytes(
        &self,
        ring: &ReadCursor,
        pos: usize,
        dst: &mut [u8],
    ) -> Result {
        let start = ring.read_offset(pos);
        let len = dst.len();
        for_each_ring_piece(start, len, |ring_off, range| {
            // The slots read were published by the GSP (acquired by `gsp_write_ptr`) and are
            // not handed back before `advance_cpu_read_ptr`. A misbehaving GSP may still
            // change them; every use is of this copy, checked.
            io_project!(self.mem, .gspq.msgq.data[try: ring_off..ring_off + range.len()])
                .copy_to_slice(&mut dst[range]);
            Ok(())
        })
    }
}
