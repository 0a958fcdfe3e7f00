// SPDX-License-Identifier: GPL-2.0

//! Upstream's receive path over arbitrary `gspq` contents and pointer values (ours): what
//! the `upstream_gspq_receive` cargo-fuzz target (`tests/upstream/fuzz`) runs, as our own
//! driver's `gspq_receive` target does for ours.
//!
//! Input: byte 0 is the driver's read pointer (any `u8`: upstream reads its own pointer
//! back from the shared memory, so a GSP may have changed it), bytes 1..5 the GSP's write
//! pointer (any `u32`), the rest the ring bytes from the read pointer's slot on. Up to 8
//! receives follow, none waiting. A panic (upstream's, or a harness's failure to set the
//! input up) is the fuzzer's crash; a receive that does not return is its timeout.

use core::pin::Pin;

use std::{
    cell::RefCell,
    vec, //
};

use kernel::{
    dma::DmaView,
    prelude::*,
    time::Delta, //
};
use nova_core::gsp::fw::{
    ring::for_each_ring_piece,
    slot_offset,
    CPUQ_OFFSET,
    GSPQ_OFFSET,
    GSP_PAGE_SIZE,
    MSGQ_NUM_PAGES,
    MSGQ_READ_PTR_OFFSET,
    MSGQ_WRITE_PTR_OFFSET,
    RING_BYTES, //
};

use crate::{
    bench::{
        pooled_device,
        queue_address, //
    },
    checks::RmEchoReply,
    gsp::cmdq::Cmdq,
};

/// The queue every run uses (allocating it anew would dominate a run), the device's view
/// of its `GspMem`, and where the last run wrote ring bytes.
struct Queue {
    cmdq: Pin<KBox<Cmdq>>,
    gsp_mem: DmaView<'static>,
    last: (usize, usize),
}

impl Queue {
    fn new() -> Result<Self> {
        let (dev, window) = pooled_device()?;
        let cmdq = KBox::pin_init(Cmdq::new(dev), GFP_KERNEL)?;
        let offset = crate::bench::pool_offset(queue_address(&cmdq)?)?;
        let gsp_mem = window.subview(offset, window.len().saturating_sub(offset))?;
        Ok(Self {
            cmdq,
            gsp_mem,
            last: (0, 0),
        })
    }

    /// Writes `ring` into the GSP's ring from slot `rptr` on (wrapping), after zeroing
    /// what the last run wrote, so that every run sees only its own input.
    fn fill(&mut self, rptr: u32, ring: &[u8]) -> Result {
        let base = GSPQ_OFFSET + slot_offset(0);
        let (start, len) = self.last;
        let zeroes = vec![0u8; len];
        for_each_ring_piece(start, len, |off, r| {
            self.gsp_mem.write_bytes(base + off, &zeroes[r])
        })?;
        // CAST: below 63, a slot index.
        let start = rptr as usize * GSP_PAGE_SIZE;
        let ring = &ring[..ring.len().min(RING_BYTES)];
        for_each_ring_piece(start, ring.len(), |off, r| {
            self.gsp_mem.write_bytes(base + off, &ring[r])
        })?;
        self.last = (start, ring.len());
        Ok(())
    }
}

std::thread_local! {
    static QUEUE: RefCell<Option<Queue>> = const { RefCell::new(None) };
}

/// Runs upstream's receive over `data` (see the module documentation).
///
/// # Panics
///
/// If upstream panics; if the bench cannot be set up (no memory), as a fuzz target
/// reports it.
pub fn receive_arbitrary(data: &[u8]) {
    let [rptr, w0, w1, w2, w3, ring @ ..] = data else {
        return;
    };
    QUEUE.with_borrow_mut(|queue| {
        // PANIC: a fuzz target has no other way to report a broken bench.
        let queue = queue.get_or_insert_with(|| Queue::new().expect("the bench"));
        let slot = u32::from(*rptr) % MSGQ_NUM_PAGES;
        queue.fill(slot, ring).expect("writing the ring");
        let write_ptr = u32::from_le_bytes([*w0, *w1, *w2, *w3]);
        queue
            .gsp_mem
            .write32(GSPQ_OFFSET + MSGQ_WRITE_PTR_OFFSET, write_ptr)
            .expect("writing the GSP's write pointer");
        // Upstream's read pointer lives in the shared memory, where a GSP can reach it:
        // any value, as the input says.
        queue
            .gsp_mem
            .write32(CPUQ_OFFSET + MSGQ_READ_PTR_OFFSET, u32::from(*rptr))
            .expect("writing the driver's read pointer");
        for _ in 0..8 {
            if queue
                .cmdq
                .receive_msg::<RmEchoReply>(Delta::ZERO)
                .is_err_and(|e| e == ETIMEDOUT)
            {
                break;
            }
        }
    });
}
