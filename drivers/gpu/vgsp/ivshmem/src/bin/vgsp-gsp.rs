// SPDX-License-Identifier: GPL-2.0

//! `vgsp-gsp --socket PATH --ram FILE --ram-base ADDR [--log-every N]`: the host GSP
//! process behind QEMU's `ivshmem-doorbell` device.
//!
//! It joins the ivshmem server at PATH as a peer and maps the shared memory (the device's
//! BAR2, the attach mailbox of `nova_testbench::ivshmem`), and maps FILE, the guest's RAM
//! (`MAP_SHARED`), whose first byte is at bus address ADDR (`0x…` or decimal). It attaches
//! through the mailbox; when the driver acknowledges, it reads the bus address of the
//! driver's boot arguments (r570's `GSP_ARGUMENTS_CACHED`) from the mailbox
//! (`DRIVER_GSP_ARGS`), reads them from the RAM, and locates the queues from them alone
//! ([`vgsp::Vgsp::locate`]: the whole `GspMem` page-aligned inside the RAM, checked
//! through its PTE page). It then runs the same virtual GSP as every other tier over
//! exactly that range: woken by its eventfd when the driver rings the doorbell, it
//! interrupts the driver's vector after it posts a message. Arguments it refuses are
//! logged with the reason, and it waits for the next acknowledgement without touching the
//! RAM. `--log-every N` makes it send a log line unasked after every N
//! commands.
//!
//! Its log lines go to standard output, prefixed `vgsp-gsp: `. It exits 0 when the server
//! goes away or a newer GSP attaches to the mailbox, and 1 with a message when it cannot
//! start.

use std::{
    fs::OpenOptions,
    os::fd::AsFd,
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
use nova_core::gsp::fw::{
    GspArgumentsCached,
    GSP_PAGE_SIZE, //
};
use nova_testbench::ivshmem::{
    DriverAttach,
    GspAttach,
    DRIVER_ATTACH_OFFSET,
    DRIVER_GSP_ARGS_OFFSET,
    GSP_ATTACH_OFFSET,
    SHM_SIZE, //
};
use vgsp::{
    Progress,
    Vgsp, //
};
use vgsp_ivshmem::client::{
    Peer,
    PeerEvent,
    SharedMemory, //
};

/// How long the GSP sleeps when it has nothing to do and nobody rings.
const IDLE_WAIT: Duration = Duration::from_millis(200);
/// How long it sleeps while a message waits for the driver to free `gspq` slots: the
/// driver frees them without ringing.
const BLOCKED_WAIT: Duration = Duration::from_micros(200);

/// The usage line.
const USAGE: &str = "usage: vgsp-gsp --socket PATH --ram FILE --ram-base ADDR [--log-every N]";

#[derive(Debug)]
struct Options {
    socket: PathBuf,
    ram: PathBuf,
    ram_base: u64,
    log_every: u64,
}

/// Parses an address: `0x` and hexadecimal digits, or decimal digits.
fn parse_address(text: &str) -> Option<u64> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(&hex.replace('_', ""), 16).ok(),
        None => text.parse().ok(),
    }
}

fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
    let mut socket = None;
    let mut ram = None;
    let mut ram_base = None;
    let mut log_every = 0;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--socket" => socket = Some(PathBuf::from(value()?)),
            "--ram" => ram = Some(PathBuf::from(value()?)),
            "--ram-base" => {
                let text = value()?;
                ram_base = Some(parse_address(&text).ok_or(format!(
                    "--ram-base {text:?}: not an address (0x… or decimal)"
                ))?);
            }
            "--log-every" => {
                log_every = value()?
                    .parse()
                    .map_err(|_| "--log-every takes a number of commands")?;
            }
            _ => return Err(format!("unknown argument '{arg}'\n{USAGE}")),
        }
    }
    let missing = |what| format!("missing {what}\n{USAGE}");
    Ok(Options {
        socket: socket.ok_or_else(|| missing("--socket"))?,
        ram: ram.ok_or_else(|| missing("--ram"))?,
        ram_base: ram_base.ok_or_else(|| missing("--ram-base"))?,
        log_every,
    })
}

/// The guest's RAM as the GSP reaches it: by bus address.
#[derive(Clone, Copy)]
struct Ram<'a> {
    view: DmaView<'a>,
    base: u64,
}

impl<'a> Ram<'a> {
    /// The view of the boot arguments at bus address `bus`.
    ///
    /// # Errors
    ///
    /// Why the address is refused: below the RAM, or arguments there would run past its
    /// end.
    fn args(&self, bus: u64) -> Result<DmaView<'a>, String> {
        let size = core::mem::size_of::<GspArgumentsCached>();
        let offset = bus.checked_sub(self.base).ok_or_else(|| {
            format!(
                "below the RAM, which starts at bus address {:#x}",
                self.base
            )
        })?;
        usize::try_from(offset)
            .ok()
            .and_then(|offset| self.view.subview(offset, size).ok())
            .ok_or_else(|| {
                format!(
                    "runs past the end of the RAM ({:#x} bytes from bus address {:#x})",
                    self.view.len(),
                    self.base
                )
            })
    }
}

/// Everything the process holds: its peer, the mailbox words, the RAM and the session.
struct GspProcess<'a> {
    peer: Peer,
    gsp_word: &'a Atomic<u64>,
    driver_word: &'a Atomic<u64>,
    args_word: &'a Atomic<u64>,
    ram: Ram<'a>,
    generation: u32,
    log_every: u64,
    /// The driver's acknowledgement last acted on, served or refused.
    ack: Option<DriverAttach>,
    /// The virtual GSP on the queues of that acknowledgement, if they were accepted.
    gsp: Option<Vgsp<'a>>,
}

impl<'a> GspProcess<'a> {
    /// Attaches to the mailbox in `shm`: stores our attach word, one generation above the
    /// last GSP's, and rings the driver if one was there.
    fn attach(peer: Peer, shm: DmaView<'a>, ram: Ram<'a>, log_every: u64) -> Result<Self, String> {
        let word = |off| {
            shm.atomic_u64(off)
                .map_err(|e| format!("mailbox word at {off:#x}: {e:?}"))
        };
        let gsp_word = word(GSP_ATTACH_OFFSET)?;
        let driver_word = word(DRIVER_ATTACH_OFFSET)?;
        let args_word = word(DRIVER_GSP_ARGS_OFFSET)?;

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
        // before this store that replaces it. Pairs with the driver's `readq` of the word in
        // `IvshmemGsp::gsp_attach`, which it orders before the queues' initialisation; we
        // learn where the queues are only from its acknowledgement (`driver_ack`).
        gsp_word.store(attach.into_bits(), Release);
        println!(
            "vgsp-gsp: peer {} attached, generation {generation}",
            peer.id()
        );

        let this = Self {
            peer,
            gsp_word,
            driver_word,
            args_word,
            ram,
            generation,
            log_every,
            ack: None,
            gsp: None,
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
        // before our loads of `DRIVER_GSP_ARGS`, of the arguments and of the queues they
        // name. Pairs with
        // the driver's `writeq` of the word in `IvshmemGsp::attach`, whose barrier orders the
        // queues' and the arguments' initialisation and its store of `DRIVER_GSP_ARGS`
        // before it.
        DriverAttach::from_bits(self.driver_word.load(Acquire))
    }

    /// Starts over on fresh queues when the driver acknowledged our generation with a
    /// new session, if their address is good. Returns `false` when a newer GSP has
    /// attached: this one must go.
    fn follow_driver(&mut self) -> bool {
        let current = GspAttach::from_bits(self.gsp_word.load(Relaxed));
        if current.generation() != self.generation {
            println!(
                "vgsp-gsp: generation {} attached after us; leaving",
                current.generation()
            );
            return false;
        }
        let ack = self.driver_ack();
        if ack.generation() != self.generation || self.ack == Some(ack) {
            return true;
        }
        // A new session: the old queues are no longer ours, whatever the new ones are.
        self.ack = Some(ack);
        self.gsp = None;
        // ORDERING: LOAD->LOAD. Relaxed: ordered after the acquire load of the
        // acknowledgement in `driver_ack` above, which pairs with the driver's `writeq` of
        // it; the driver stored this word before that `writeq`. (A driver that attached
        // again since gives the next session's address here; we start over once more when we
        // see that session's acknowledgement.)
        let bus = self.args_word.load(Relaxed);
        let who = format!("driver peer {} session {}", ack.peer(), ack.session());
        let refused = match self.ram.args(bus) {
            Ok(args) => match Vgsp::locate(self.ram.view, self.ram.base, args) {
                Ok(mut gsp) => {
                    gsp.set_log_every(self.log_every);
                    // The first word of the arguments: where the queues are.
                    let mut shared = [0u8; 8];
                    let _ = args.read_bytes(0, &mut shared);
                    let shared = u64::from_le_bytes(shared);
                    println!("vgsp-gsp: {who}: queues at bus address {shared:#x} initialised");
                    self.gsp = Some(gsp);
                    return true;
                }
                Err(refused) => refused.reason.to_string(),
            },
            Err(why) => why,
        };
        println!(
            "vgsp-gsp: {who}: refusing the boot arguments at bus address {bus:#x}: {refused}; waiting for the next attach"
        );
        true
    }

    /// Works until idle; interrupts the driver if a message was posted. Returns how long
    /// to wait for the next doorbell.
    fn work(&mut self) -> Duration {
        let (Some(gsp), Some(ack)) = (self.gsp.as_mut(), self.ack) else {
            return IDLE_WAIT;
        };
        let posted_before = gsp.gsp_ptrs().0;
        let progress = gsp.run_until_idle();
        if gsp.gsp_ptrs().0 != posted_before {
            if let Err(e) = self.peer.notify(ack.peer(), 0) {
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

    fn run(&mut self) {
        loop {
            if !self.follow_driver() {
                return;
            }
            let wait = self.work();
            match self.peer.wait_event(Some(wait)) {
                Ok(PeerEvent::Joined(id)) => println!("vgsp-gsp: peer {id} joined"),
                Ok(PeerEvent::Left(id)) => println!("vgsp-gsp: peer {id} left"),
                Ok(PeerEvent::Doorbell { .. } | PeerEvent::Timeout) => {}
                Err(e) => {
                    println!("vgsp-gsp: server gone ({e}); exiting");
                    return;
                }
            }
        }
    }
}

/// Maps the guest's RAM in `path`, shared with QEMU.
fn map_ram(path: &PathBuf) -> Result<SharedMemory, String> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| format!("cannot open the guest RAM {}: {e}", path.display()))?;
    SharedMemory::map(file.as_fd())
        .map_err(|e| format!("cannot map the guest RAM {}: {e}", path.display()))
}

fn main() -> ExitCode {
    let result = parse_args(std::env::args().skip(1)).and_then(|opts| {
        // CAST: a page size fits 64 bits.
        if !opts.ram_base.is_multiple_of(GSP_PAGE_SIZE as u64) {
            return Err(format!(
                "--ram-base {:#x} is not page-aligned",
                opts.ram_base
            ));
        }
        let ram = map_ram(&opts.ram)?;
        let peer = Peer::connect(&opts.socket, 1)
            .map_err(|e| format!("cannot join the server at {}: {e}", opts.socket.display()))?;
        let shm = peer
            .map_shared_memory()
            .map_err(|e| format!("cannot map the shared memory: {e}"))?;
        if shm.len() < SHM_SIZE {
            return Err(format!(
                "the shared memory is {} bytes; the mailbox needs {SHM_SIZE}",
                shm.len()
            ));
        }
        // SAFETY: `shm` maps `shm.len()` bytes, page-aligned, shared with the device, and
        // stays mapped until the end of this closure, which outlives every use of the view.
        let mailbox = unsafe { DmaView::from_raw_parts(shm.as_ptr(), shm.len()) };
        // SAFETY: `ram` maps `ram.len()` bytes of the guest's RAM, page-aligned, shared with
        // QEMU (and so the guest's driver), and stays mapped until the end of this closure,
        // which outlives every use of the view.
        let view = unsafe { DmaView::from_raw_parts(ram.as_ptr(), ram.len()) };
        println!(
            "vgsp-gsp: guest RAM {}: {:#x} bytes at bus address {:#x}",
            opts.ram.display(),
            ram.len(),
            opts.ram_base
        );
        let ram = Ram {
            view,
            base: opts.ram_base,
        };
        GspProcess::attach(peer, mailbox, ram, opts.log_every)?.run();
        Ok(())
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vgsp-gsp: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Result<Options, String> {
        parse_args(list.iter().map(|s| s.to_string()))
    }

    #[test]
    fn parses_hex_and_decimal_ram_bases() {
        let opts = args(&["--socket", "s", "--ram", "r", "--ram-base", "0x4000_0000"]).unwrap();
        assert_eq!(opts.ram_base, 0x4000_0000);
        let opts = args(&["--socket", "s", "--ram", "r", "--ram-base", "4096"]).unwrap();
        assert_eq!(opts.ram_base, 4096);
    }

    #[test]
    fn requires_the_ram_and_its_base() {
        assert!(args(&["--socket", "s", "--ram-base", "0"])
            .unwrap_err()
            .contains("missing --ram"));
        assert!(args(&["--socket", "s", "--ram", "r"])
            .unwrap_err()
            .contains("missing --ram-base"));
        assert!(args(&["--socket", "s", "--ram", "r", "--ram-base", "0xg"])
            .unwrap_err()
            .contains("not an address"));
    }
}
