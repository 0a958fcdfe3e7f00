// SPDX-License-Identifier: GPL-2.0

//! The virtual GSP's command parser over arbitrary `cpuq` contents and pointer values.
//!
//! Input: byte 0 is the driver's write pointer (modulo 64, so 63 is outside the ring),
//! the rest the `cpuq` ring bytes from slot 0 on. The GSP steps until it is idle, with
//! its replies consumed as it goes.

#![no_main]

use kernel::dma::DmaView;
use libfuzzer_sys::fuzz_target;
use nova_core::gsp::fw::{
    slot_offset,
    GspMem,
    CPUQ_OFFSET,
    MSGQ_NUM_PAGES,
    MSGQ_READ_PTR_OFFSET,
    MSGQ_WRITE_PTR_OFFSET,
    RING_BYTES, //
};
use vgsp::{
    Progress,
    Vgsp, //
};

thread_local! {
    /// One `GspMem` for every run, zeroed before each.
    static MEM: std::cell::RefCell<Vec<u64>> =
        std::cell::RefCell::new(vec![0u64; core::mem::size_of::<GspMem>() / 8]);
}

fuzz_target!(|data: &[u8]| {
    MEM.with_borrow_mut(|mem| run(mem, data));
});

fn run(mem: &mut [u64], data: &[u8]) {
    let [wptr, ring @ ..] = data else {
        return;
    };
    mem.fill(0);
    // SAFETY: `mem` is a live, 8-byte aligned buffer of a `GspMem`'s size that outlives
    // the view (both end with this closure).
    let view = unsafe { DmaView::from_raw_parts(mem.as_mut_ptr().cast(), mem.len() * 8) };
    let Ok(mut gsp) = Vgsp::new(view) else {
        return;
    };
    let ring = &ring[..ring.len().min(RING_BYTES)];
    view.write_bytes(CPUQ_OFFSET + slot_offset(0), ring)
        .unwrap();
    view.write32(
        CPUQ_OFFSET + MSGQ_WRITE_PTR_OFFSET,
        u32::from(*wptr) % (MSGQ_NUM_PAGES + 1),
    )
    .unwrap();
    for _ in 0..256 {
        // The driver consumes whatever the GSP sent.
        let (gsp_wptr, _) = gsp.gsp_ptrs();
        view.write32(CPUQ_OFFSET + MSGQ_READ_PTR_OFFSET, gsp_wptr)
            .unwrap();
        match gsp.step() {
            Ok(Progress::Worked) => {}
            Ok(_) | Err(_) => break,
        }
        let (w, r) = gsp.gsp_ptrs();
        assert!(w < MSGQ_NUM_PAGES && r < MSGQ_NUM_PAGES);
    }
}
