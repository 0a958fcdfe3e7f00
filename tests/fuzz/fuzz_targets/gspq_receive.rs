// SPDX-License-Identifier: GPL-2.0

//! The driver's receive path over arbitrary `gspq` contents and pointer values.
//!
//! Input: byte 0 is the driver's read pointer (modulo 63), bytes 1..5 the GSP's write
//! pointer (any `u32`), the rest the ring bytes from the read pointer's slot on.

#![no_main]

use kernel::{
    host,
    prelude::*,
    time::Delta, //
};
use libfuzzer_sys::fuzz_target;
use nova_core::gsp::{
    cmdq::{
        BenchSeam,
        Budget,
        Cmdq,
        Skip, //
    },
    fw::{
        ring::for_each_ring_piece,
        slot_offset,
        GSPQ_OFFSET,
        GSP_PAGE_SIZE,
        MAX_RPC_PAYLOAD,
        MSGQ_NUM_PAGES,
        MSGQ_WRITE_PTR_OFFSET,
        RING_BYTES, //
    },
};

thread_local! {
    /// One queue for every run (allocating 0x81000 bytes a run would dominate), and how
    /// many ring bytes from which offset the last run wrote.
    static QUEUE: std::cell::RefCell<(Pin<KBox<Cmdq>>, usize, usize)> = std::cell::RefCell::new((
        KBox::pin_init(Cmdq::new(host::device()), GFP_KERNEL).unwrap(),
        0,
        0,
    ));
}

fuzz_target!(|data: &[u8]| {
    QUEUE.with_borrow_mut(|(cmdq, start, len)| run(cmdq, start, len, data));
});

fn run(cmdq: &Cmdq, last_start: &mut usize, last_len: &mut usize, data: &[u8]) {
    let [rptr, w0, w1, w2, w3, ring @ ..] = data else {
        return;
    };
    let rptr = u32::from(*rptr) % MSGQ_NUM_PAGES;
    let view = cmdq.gsp_mem().device_view();
    // Back to a zeroed ring, so that every run sees only its own input.
    let zeroes = vec![0u8; *last_len];
    for_each_ring_piece(*last_start, *last_len, |off, r| {
        view.write_bytes(GSPQ_OFFSET + slot_offset(0) + off, &zeroes[r])
    })
    .unwrap();
    *last_start = rptr as usize * GSP_PAGE_SIZE;
    let ring = &ring[..ring.len().min(RING_BYTES)];
    *last_len = ring.len();
    for_each_ring_piece(*last_start, ring.len(), |off, r| {
        view.write_bytes(GSPQ_OFFSET + slot_offset(0) + off, &ring[r])
    })
    .unwrap();
    view.write32(
        GSPQ_OFFSET + MSGQ_WRITE_PTR_OFFSET,
        u32::from_le_bytes([*w0, *w1, *w2, *w3]),
    )
    .unwrap();
    cmdq.resume_reading_at(rptr).unwrap();
    for _ in 0..8 {
        let before = cmdq.cpu_ptrs().1;
        match cmdq.receive(&mut Budget::new(Delta::ZERO), |_| Skip::Take) {
            Ok(msg) => {
                assert!(msg.payload.len() <= MAX_RPC_PAYLOAD);
                assert!(msg.elem_count >= 1);
            }
            Err(_) => assert!(cmdq.last_fault().is_some()),
        }
        let after = cmdq.cpu_ptrs().1;
        assert!(after < MSGQ_NUM_PAGES);
        if after == before {
            break;
        }
    }
}
