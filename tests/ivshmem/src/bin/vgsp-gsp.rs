// SPDX-License-Identifier: GPL-2.0

//! `vgsp-gsp --socket PATH [--log-every N]`: the host GSP process behind QEMU's
//! `ivshmem-doorbell` device.
//!
//! It joins the ivshmem server at PATH as a peer, maps the shared memory (the device's
//! BAR2), attaches to it through the mailbox (`nova_core::ivshmem`), and runs the same
//! virtual GSP ([`vgsp::Vgsp`]) as every other tier over the `GspMem` in it: woken by
//! its eventfd when the driver rings the doorbell, it interrupts the driver's vector
//! after it posts a message. `--log-every N` makes it send a log line unasked after
//! every N commands.
//!
//! It exits 0 when the server goes away or a newer GSP attaches to the memory, and 1
//! with a message when it cannot start.

use std::{
    path::PathBuf,
    process::ExitCode,
    time::Duration, //
};

use kernel::{
    dma::DmaView,
    sync::atomic::{
        Acquire,
        Atomic,
        Relaxed,
        Release, //
    },
};
use nova_core::{
    gsp::fw::GspMem,
    ivshmem::{
        DriverAttach,
        GspAttach,
        DRIVER_ATTACH_OFFSET,
        GSP_ATTACH_OFFSET,
        GSP_MEM_OFFSET,
        SHM_SIZE, //
    },
};
use vgsp::{
    Progress,
    Vgsp, //
};
use vgsp_ivshmem::client::{
    Peer,
    PeerEvent, //
};

/// How long the GSP sleeps when it has nothing to do and nobody rings.
const IDLE_WAIT: Duration = Duration::from_millis(200);
/// How long it sleeps while a message waits for the driver to free `gspq` slots: the
/// driver frees them without ringing.
const BLOCKED_WAIT: Duration = Duration::from_micros(200);

struct Options {
    socket: PathBuf,
    log_every: u64,
}

fn parse_args() -> Result<Options, String> {
    let usage = "usage: vgsp-gsp --socket PATH [--log-every N]";
    let mut socket = None;
    let mut log_every = 0;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--socket" => socket = Some(PathBuf::from(args.next().ok_or(usage)?)),
            "--log-every" => {
                log_every = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .ok_or("--log-every takes a number of commands")?;
            }
            _ => return Err(format!("unknown argument '{arg}'\n{usage}")),
        }
    }
    Ok(Options {
        socket: socket.ok_or(usage)?,
        log_every,
    })
}

/// The GSP serving one driver session.
struct Session<'a> {
    ack: DriverAttach,
    gsp: Vgsp<'a>,
}

/// Everything the process holds: its peer, the mailbox words and the session.
struct GspProcess<'a> {
    peer: Peer,
    gsp_word: &'a Atomic<u64>,
    driver_word: &'a Atomic<u64>,
    gsp_mem: DmaView<'a>,
    generation: u32,
    log_every: u64,
    session: Option<Session<'a>>,
}

impl<'a> GspProcess<'a> {
    /// Attaches to the memory behind `shm`: stores our attach word, one generation above
    /// the last GSP's, and rings the driver if one was there.
    fn attach(peer: Peer, shm: DmaView<'a>, log_every: u64) -> Result<Self, String> {
        let word = |off| {
            shm.atomic_u64(off)
                .map_err(|e| format!("mailbox word at {off:#x}: {e:?}"))
        };
        let gsp_word = word(GSP_ATTACH_OFFSET)?;
        let driver_word = word(DRIVER_ATTACH_OFFSET)?;
        let gsp_mem = shm
            .subview(GSP_MEM_OFFSET, core::mem::size_of::<GspMem>())
            .map_err(|e| format!("GspMem: {e:?}"))?;

        // ORDERING: LOAD->STORE. Acquire: a previous GSP's word, before ours replaces it.
        // Pairs with that GSP's release store below.
        let last = GspAttach::from_bits(gsp_word.load(Acquire));
        let generation = match last.is_attached() {
            true => last.generation().wrapping_add(1).max(1),
            false => 1,
        };
        let attach = GspAttach::new()
            .with_generation(generation)
            .with_peer(peer.id())
            .with_magic(GspAttach::MAGIC);
        // ORDERING: LOAD->STORE. Release: orders the load of the previous GSP's word above
        // before this store that replaces it. Pairs with the driver's acquire load in
        // `IvshmemGsp::gsp_attach`, after which it initialises the queues; we touch them
        // only after acquiring its acknowledgement (`driver_ack`).
        gsp_word.store(attach.into_bits(), Release);
        println!(
            "vgsp-gsp: peer {} attached, generation {generation}",
            peer.id()
        );

        let this = Self {
            peer,
            gsp_word,
            driver_word,
            gsp_mem,
            generation,
            log_every,
            session: None,
        };
        let driver = this.driver_ack();
        if driver.generation() != 0 {
            // A driver was there before: tell it a GSP is back. It may be gone too.
            let _ = this.peer.notify(driver.peer(), 0);
        }
        Ok(this)
    }

    fn driver_ack(&self) -> DriverAttach {
        // ORDERING: LOAD->LOAD. Acquire: orders this load of the driver's acknowledgement
        // before our loads of the queues it initialised. Pairs with the driver's release
        // store in `IvshmemGsp::attach`.
        DriverAttach::from_bits(self.driver_word.load(Acquire))
    }

    /// Starts over on fresh queues when the driver acknowledged our generation with a
    /// new session. Returns `false` when a newer GSP has attached: this one must go.
    fn follow_driver(&mut self) -> Result<bool, String> {
        let current = GspAttach::from_bits(self.gsp_word.load(Relaxed));
        if current.generation() != self.generation {
            println!(
                "vgsp-gsp: generation {} attached after us; leaving",
                current.generation()
            );
            return Ok(false);
        }
        let ack = self.driver_ack();
        let fresh = ack.generation() == self.generation
            && self.session.as_ref().is_none_or(|s| s.ack != ack);
        if fresh {
            let mut gsp = Vgsp::new(self.gsp_mem).map_err(|e| format!("Vgsp::new: {e:?}"))?;
            gsp.set_log_every(self.log_every);
            println!(
                "vgsp-gsp: driver peer {} session {}: queues initialised",
                ack.peer(),
                ack.session()
            );
            self.session = Some(Session { ack, gsp });
        }
        Ok(true)
    }

    /// Works until idle; interrupts the driver if a message was posted. Returns how long
    /// to wait for the next doorbell.
    fn work(&mut self) -> Duration {
        let Some(session) = self.session.as_mut() else {
            return IDLE_WAIT;
        };
        let posted_before = session.gsp.gsp_ptrs().0;
        let progress = session.gsp.run_until_idle();
        if session.gsp.gsp_ptrs().0 != posted_before {
            if let Err(e) = self.peer.notify(session.ack.peer(), 0) {
                eprintln!("vgsp-gsp: cannot interrupt the driver: {e}");
            }
        }
        match progress {
            Ok(Progress::Blocked) => BLOCKED_WAIT,
            Ok(_) => IDLE_WAIT,
            Err(e) => {
                eprintln!("vgsp-gsp: the driver published a bad pointer: {e:?}");
                IDLE_WAIT
            }
        }
    }

    fn run(&mut self) -> Result<(), String> {
        loop {
            if !self.follow_driver()? {
                return Ok(());
            }
            let wait = self.work();
            match self.peer.wait_event(Some(wait)) {
                Ok(PeerEvent::Joined(id)) => println!("vgsp-gsp: peer {id} joined"),
                Ok(PeerEvent::Left(id)) => println!("vgsp-gsp: peer {id} left"),
                Ok(PeerEvent::Doorbell { .. } | PeerEvent::Timeout) => {}
                Err(e) => {
                    println!("vgsp-gsp: server gone ({e}); exiting");
                    return Ok(());
                }
            }
        }
    }
}

fn main() -> ExitCode {
    let result = parse_args().and_then(|opts| {
        let peer = Peer::connect(&opts.socket, 1)
            .map_err(|e| format!("cannot join the server at {}: {e}", opts.socket.display()))?;
        let shm = peer
            .map_shared_memory()
            .map_err(|e| format!("cannot map the shared memory: {e}"))?;
        if shm.len() < SHM_SIZE {
            return Err(format!(
                "the shared memory is {} bytes; the virtual GSP needs {SHM_SIZE}",
                shm.len()
            ));
        }
        // SAFETY: `shm` maps `shm.len()` bytes, page-aligned, shared with the device, and
        // stays mapped until the end of this closure, which outlives every use of the view.
        let view = unsafe { DmaView::from_raw_parts(shm.as_ptr(), shm.len()) };
        GspProcess::attach(peer, view, opts.log_every)?.run()
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vgsp-gsp: {e}");
            ExitCode::FAILURE
        }
    }
}
