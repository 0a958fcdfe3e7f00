// SPDX-License-Identifier: GPL-2.0

//! Two agents: the virtual GSP posts valid messages, then a second thread scribbles the
//! input over `gspq` (slots and pointers) while the driver receives.
//!
//! Input: the first byte says how many log lines the GSP posts first; then triples of a
//! 16-bit little-endian offset into `gspq` and a byte to write there.

#![no_main]

use std::sync::{
    atomic::{
        AtomicBool,
        Ordering, //
    },
    Arc,
    Condvar,
    Mutex,
    OnceLock, //
};

use kernel::{
    dma::DmaView,
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
        GSPQ_OFFSET,
        MAX_RPC_PAYLOAD,
        MSGQ_NUM_PAGES, //
    },
};
use vgsp::Vgsp;

/// A run's edits, for the scribbling thread.
struct Job {
    view: DmaView<'static>,
    edits: Vec<u8>,
}

/// The scribbling thread, kept for every run (spawning one a run would dominate).
struct Scribbler {
    job: Mutex<Option<Job>>,
    posted: Condvar,
    /// Set by the driver when it is done receiving.
    stop: AtomicBool,
    /// Set by the scribbler when it is done with the job.
    idle: Mutex<bool>,
    finished: Condvar,
}

fn scribbler() -> &'static Arc<Scribbler> {
    static S: OnceLock<Arc<Scribbler>> = OnceLock::new();
    S.get_or_init(|| {
        let s = Arc::new(Scribbler {
            job: Mutex::new(None),
            posted: Condvar::new(),
            stop: AtomicBool::new(false),
            idle: Mutex::new(true),
            finished: Condvar::new(),
        });
        let worker = s.clone();
        std::thread::spawn(move || loop {
            let job = {
                let mut job = worker.job.lock().unwrap();
                loop {
                    if let Some(j) = job.take() {
                        break j;
                    }
                    job = worker.posted.wait(job).unwrap();
                }
            };
            for t in job.edits.chunks_exact(3) {
                if worker.stop.load(Ordering::Relaxed) {
                    break;
                }
                let off = usize::from(u16::from_le_bytes([t[0], t[1]])) % 0x40000;
                let _ = job.view.write_bytes(GSPQ_OFFSET + off, &t[2..3]);
            }
            *worker.idle.lock().unwrap() = true;
            worker.finished.notify_all();
        });
        s
    })
}

thread_local! {
    /// One queue for every run; its `gspq` is zeroed and its reading restarted before each.
    static QUEUE: Pin<KBox<Cmdq>> =
        KBox::pin_init(Cmdq::new(host::device()), GFP_KERNEL).unwrap();
}

fuzz_target!(|data: &[u8]| {
    QUEUE.with(|cmdq| run(cmdq, data));
});

fn run(cmdq: &Cmdq, data: &[u8]) {
    let [lines, edits @ ..] = data else {
        return;
    };
    cmdq.gsp_mem()
        .device_view()
        .write_bytes(GSPQ_OFFSET, &vec![0u8; 0x40000])
        .unwrap();
    cmdq.resume_reading_at(0).unwrap();
    let mem = cmdq.gsp_mem();
    // SAFETY: The allocation is `size()` bytes, page aligned, and lives in a thread-local
    // for the whole process; the scribbler is idle again before this run returns.
    let view = unsafe { DmaView::from_raw_parts(mem.as_mut_ptr().cast(), mem.size()) };
    let Ok(mut gsp) = Vgsp::new(view) else {
        return;
    };
    for i in 0..*lines % 40 {
        let _ = gsp.log(&[b'a' + i % 26; 100][..usize::from(i) * 2 + 1]);
    }
    let _ = gsp.run_until_idle();

    let s = scribbler();
    s.stop.store(false, Ordering::Relaxed);
    *s.idle.lock().unwrap() = false;
    *s.job.lock().unwrap() = Some(Job {
        view,
        edits: edits.to_vec(),
    });
    s.posted.notify_one();
    for _ in 0..64 {
        let before = cmdq.cpu_ptrs().1;
        match cmdq.receive(&mut Budget::new(Delta::from_micros(20)), |_| Skip::Take) {
            Ok(msg) => assert!(msg.payload.len() <= MAX_RPC_PAYLOAD),
            Err(_) => assert!(cmdq.last_fault().is_some()),
        }
        let after = cmdq.cpu_ptrs().1;
        assert!(after < MSGQ_NUM_PAGES);
        if after == before {
            break;
        }
    }
    s.stop.store(true, Ordering::Relaxed);
    let mut idle = s.idle.lock().unwrap();
    while !*idle {
        idle = s.finished.wait(idle).unwrap();
    }
}
