// SPDX-License-Identifier: GPL-2.0

//! The driver's device code (`nova_testbench::ivshmem`) against the real ivshmem server and
//! host GSP process, with this test in the role QEMU and the guest play together: it
//! joins the server as a peer, maps the shared memory as BAR2 (the mailbox), and
//! simulates BAR0, whose doorbell register rings the GSP's eventfd exactly as QEMU's
//! device does; its own eventfd stands for the MSI-X vector. The guest's RAM is a file
//! that the test maps and hands to the GSP process (`--ram`), as `vgsp-qemu` does; the
//! driver's device is a pooled one (`kernel::host::DmaPool`) whose coherent allocations
//! are carved from that mapping at bus addresses from [`RAM_BASE`] on, aarch64 `virt`'s
//! RAM base and not the mapping's address, so the GSP process finds the queues only by
//! their bus address. The kernel tier runs the same code on a real PCI device under QEMU
//! (the `nova_core_ivshmem` suite).

use std::{
    cell::RefCell,
    io::{
        BufRead,
        BufReader, //
    },
    os::fd::AsFd,
    path::{
        Path,
        PathBuf, //
    },
    process::{
        Child,
        Command,
        Stdio, //
    },
    sync::{
        atomic::{
            AtomicBool,
            AtomicU64,
            Ordering, //
        },
        Arc,
        Condvar,
        Mutex, //
    },
    thread,
    time::{
        Duration,
        Instant as StdInstant, //
    },
};

use kernel::{
    device::{
        Bound,
        Device, //
    },
    error::code::ETIMEDOUT,
    host::DmaPool,
    io::{
        register::Register,
        Io,
        Mmio,
        MmioRaw,
        MmioWriteObserver,
        Region, //
    },
    time::Delta,
};
use nova_core::{
    gsp::cmdq::CommandToGsp as _,
    gsp::{
        cmdq::{
            BenchSeam,
            MsgqSignal, //
        },
        fault::Fault,
        fw::{
            self,
            GspArgumentsCached,
            GspMem,
            GSP_PAGE_SIZE, //
        },
    },
};
use nova_testbench::{
    ivshmem::{
        DriverAttach,
        GspAttach,
        IvshmemGsp,
        IvshmemMailbox,
        DRIVER_ATTACH_OFFSET,
        DRIVER_GSP_ARGS_OFFSET,
        GSP_ATTACH_OFFSET,
        IVSHMEM_DOORBELL,
        IVSHMEM_IV_POSITION,
        REGS_SIZE,
        SHM_SIZE, //
    },
    rpc::{
        element_count_for_rpc,
        Echo,
        VGSP_ECHO, //
    },
    ReceiveAny,
};
use vgsp_ivshmem::client::{
    Peer,
    PeerEvent,
    SharedMemory, //
};

const ATTACH_TIMEOUT: Delta = Delta::from_secs(10);
const REPLY_TIMEOUT: Delta = Delta::from_secs(5);
/// The lines of the virtual GSP's boot log, sent before `GSP_INIT_DONE`.
const BOOT_LOG_LINES: u64 = 3;
/// The commands of bring-up: system info, registry, static info.
const BRING_UP_COMMANDS: usize = 3;
/// The `--log-every` the GSP process is started with.
const LOG_EVERY: usize = 100;
/// The bus (guest-physical) address of the guest RAM's first byte: aarch64 `virt`'s, and
/// not the address of the test's mapping of it.
const RAM_BASE: u64 = 0x4000_0000;
/// Where the tests that play a driver leave its boot arguments: the RAM's first page,
/// which no allocation of the driver's takes in those tests.
const ARGS_AT: u64 = RAM_BASE;
/// The size of the guest RAM: room for every `GspMem` a rig allocates, as a pooled
/// allocation leaks within the pool.
const RAM_SIZE: usize = 16 << 20;
/// A page, as a bus-address step.
// CAST: a page size fits 64 bits.
const PAGE: u64 = GSP_PAGE_SIZE as u64;

/// The MSI-X vector: a count raised by the thread that reads our eventfd.
#[derive(Default)]
struct Irq {
    count: AtomicU64,
    lock: Mutex<()>,
    cond: Condvar,
}

impl Irq {
    /// Waits until no interrupt has come for `quiet` (the last rings of earlier messages
    /// may still be on their way); returns the count.
    fn settle(&self, quiet: Delta) -> u64 {
        loop {
            let seen = self.count();
            self.wait(seen, quiet);
            if self.count() == seen {
                return seen;
            }
        }
    }
}

impl MsgqSignal for Irq {
    fn count(&self) -> u64 {
        self.count.load(Ordering::Acquire)
    }

    fn wait(&self, seen: u64, timeout: Delta) {
        let deadline = StdInstant::now() + Duration::from_nanos(timeout.as_nanos().max(0) as u64);
        let mut guard = self.lock.lock().unwrap();
        while self.count() == seen {
            let left = deadline.saturating_duration_since(StdInstant::now());
            if left.is_zero() {
                return;
            }
            guard = self.cond.wait_timeout(guard, left).unwrap().0;
        }
    }
}

/// BAR0's doorbell register as QEMU implements it: a write rings the eventfd of the peer
/// and vector it names.
struct QemuDoorbell(Arc<Mutex<Peer>>);

impl MmioWriteObserver for QemuDoorbell {
    fn written(&self, offset: usize, value: u32) {
        if offset == IVSHMEM_DOORBELL::OFFSET {
            let bell = IVSHMEM_DOORBELL::from_raw(value);
            // A departed peer's doorbell rings no one, as in QEMU.
            let _ = self
                .0
                .lock()
                .unwrap()
                .notify(u16::from(bell.peer()), u16::from(bell.vector()));
        }
    }
}

/// The server, the GSP process, and the guest's side of the device. Fields drop in
/// order: the BARs before what their observer and memory are.
struct Rig {
    bar0: Mmio<'static, Region<REGS_SIZE>>,
    bar2: IvshmemMailbox<'static>,
    _regs: Box<[u32; REGS_SIZE / 4]>,
    _doorbell: Box<QemuDoorbell>,
    _shm: SharedMemory,
    /// The guest's device: its coherent memory is carved from `ram`.
    dev: &'static Device<Bound>,
    ram: SharedMemory,
    ram_path: PathBuf,
    peer: Arc<Mutex<Peer>>,
    irq: &'static Irq,
    stop: Arc<AtomicBool>,
    irq_thread: Option<thread::JoinHandle<()>>,
    gsp: RefCell<Option<Child>>,
    /// What the GSP processes printed, line by line.
    gsp_log: Arc<Mutex<String>>,
    server: Child,
    server_status: Option<std::process::ExitStatus>,
    shm_name: String,
    dir: PathBuf,
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let start = StdInstant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "timed out: {what}"
        );
        thread::sleep(Duration::from_millis(10));
    }
}

impl Rig {
    /// Starts a server in a directory of its own and joins it as the guest's device.
    fn new(name: &str) -> Rig {
        let dir = std::env::temp_dir().join(format!("vgsp-gsp-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let socket = dir.join("ivshmem.sock");
        let shm_name = format!("vgsp-gsp-test-{}-{name}", std::process::id());
        let server = Command::new(env!("CARGO_BIN_EXE_ivshmem-server"))
            .arg("-S")
            .arg(&socket)
            .arg("-M")
            .arg(&shm_name)
            .args(["-l", &SHM_SIZE.to_string(), "-n", "1"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        wait_for("the server's socket", || {
            std::os::unix::net::UnixStream::connect(&socket).is_ok()
        });

        let peer = Peer::connect(&socket, 1).unwrap();
        let shm = peer.map_shared_memory().unwrap();
        assert_eq!(shm.len(), SHM_SIZE);
        let mut regs = Box::new([0u32; REGS_SIZE / 4]);
        regs[IVSHMEM_IV_POSITION::OFFSET / 4] = u32::from(peer.id());
        let peer = Arc::new(Mutex::new(peer));
        let doorbell = Box::new(QemuDoorbell(peer.clone()));
        let region =
            Region::<REGS_SIZE>::ptr_try_from_raw_parts_mut(regs.as_mut_ptr().cast(), REGS_SIZE)
                .unwrap();
        // SAFETY: `regs` is a heap array of `REGS_SIZE` bytes, 4-byte aligned, that stays
        // in place in the `Rig` after `bar0`, which drops first; so does `doorbell`. The
        // view's `'static` never leaves the `Rig` (`device` shortens it).
        let bar0 = unsafe { Mmio::from_raw(MmioRaw::from_ptr(region).with_observer(&*doorbell)) };
        let region =
            Region::<SHM_SIZE>::ptr_try_from_raw_parts_mut(shm.as_ptr(), shm.len()).unwrap();
        // SAFETY: `shm` maps the server's `SHM_SIZE` bytes, page-aligned, and stays mapped in
        // the `Rig` after `bar2`, which drops first; the view's `'static` never leaves the
        // `Rig` (`device` shortens it). The GSP process shares the memory, as it shares the
        // BAR under QEMU.
        let bar2 = unsafe { Mmio::from_raw(MmioRaw::from_ptr(region)) };

        // The guest's RAM: a file the GSP process maps too.
        let ram_path = dir.join("guest-ram");
        let file = std::fs::File::create_new(&ram_path).unwrap();
        file.set_len(RAM_SIZE as u64).unwrap();
        let ram = SharedMemory::map(file.as_fd()).unwrap();
        // SAFETY: `ram` maps `RAM_SIZE` bytes, page-aligned, for as long as the `Rig`; the
        // pool is used only through `dev`, which the `Rig` lends out for no longer than it
        // lives (`device`), and nothing else of the test's writes the mapping while the
        // driver's allocations live (the GSP process shares it, as under QEMU).
        let pool = unsafe { DmaPool::new(ram.as_ptr(), ram.len(), RAM_BASE) }.unwrap();
        // Leaked, as the queues of every attach are (the device keeps a count for each: a
        // host device dropped while counted aborts).
        let dev: &'static Device<Bound> = Box::leak(Box::new(Device::<Bound>::with_dma_pool(
            "vgsp-ivshmem-test",
            Box::leak(Box::new(pool)),
        )));

        // The MSI-X vector: our eventfd, read by a thread of its own.
        let irq: &'static Irq = Box::leak(Box::default());
        let stop = Arc::new(AtomicBool::new(false));
        let irq_thread = {
            let stop = stop.clone();
            let peer = peer.clone();
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let event = peer
                        .lock()
                        .unwrap()
                        .wait_event(Some(Duration::from_millis(1)));
                    match event {
                        Ok(PeerEvent::Doorbell { count, .. }) => {
                            let _guard = irq.lock.lock().unwrap();
                            irq.count.fetch_add(count, Ordering::Release);
                            irq.cond.notify_all();
                        }
                        Ok(_) => thread::yield_now(),
                        Err(_) => return,
                    }
                }
            })
        };
        Rig {
            bar0,
            bar2,
            _regs: regs,
            _doorbell: doorbell,
            _shm: shm,
            dev,
            ram,
            ram_path,
            peer,
            irq,
            stop,
            irq_thread: Some(irq_thread),
            gsp: RefCell::new(None),
            gsp_log: Arc::default(),
            server,
            server_status: None,
            shm_name,
            dir,
        }
    }

    fn socket(&self) -> PathBuf {
        self.dir.join("ivshmem.sock")
    }

    /// Starts a GSP process on the guest's RAM; its output goes to `gsp_log`.
    fn start_gsp(&self) {
        assert!(self.gsp.borrow().is_none());
        let mut child = Command::new(env!("CARGO_BIN_EXE_vgsp-gsp"))
            .arg("--socket")
            .arg(self.socket())
            .arg("--ram")
            .arg(&self.ram_path)
            .args(["--ram-base", &format!("{RAM_BASE:#x}")])
            .args(["--log-every", &LOG_EVERY.to_string()])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let log = self.gsp_log.clone();
        // Ends when the process does.
        thread::spawn(move || {
            for line in out.lines() {
                let Ok(line) = line else { return };
                let mut log = log.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        *self.gsp.borrow_mut() = Some(child);
    }

    /// Waits (at most 10 s) until the GSP processes have printed a line containing `text`.
    fn wait_for_gsp_line(&self, text: &str) {
        let start = StdInstant::now();
        while !self.gsp_log.lock().unwrap().contains(text) {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the GSP process did not print {text:?}; it printed:\n{}",
                self.gsp_log.lock().unwrap()
            );
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits for a GSP to attach to the mailbox; returns its word.
    fn wait_for_gsp_attach(&self) -> GspAttach {
        let mut attach = GspAttach::new();
        wait_for("a GSP's attach", || {
            attach = GspAttach::from_bits(
                self.bar2
                    .try_read64(GSP_ATTACH_OFFSET)
                    .expect("mailbox word"),
            );
            attach.is_attached()
        });
        attach
    }

    /// Plays a driver that acknowledges the GSP's attach with boot arguments naming queues
    /// at bus address `queues`: writes the arguments at [`ARGS_AT`] in the RAM, stores
    /// their address, then a new session's acknowledgement, and rings the GSP.
    fn acknowledge_with_queues_at(&self, queues: u64) {
        let args = GspArgumentsCached::new(queues);
        let bytes = kernel::transmute::AsBytes::as_bytes(&args);
        // SAFETY: `ram` maps `ram.len()` writable bytes, and the arguments fit at the start
        // of its first page, where no allocation of the driver's lives in these tests.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ram.as_ptr(), bytes.len()) };
        self.acknowledge_with_args_at(ARGS_AT);
    }

    /// Plays a driver that acknowledges the GSP's attach with its boot arguments at bus
    /// address `bus`: stores the address, then a new session's acknowledgement, and rings
    /// the GSP.
    fn acknowledge_with_args_at(&self, bus: u64) {
        let attach = self.wait_for_gsp_attach();
        let last = DriverAttach::from_bits(
            self.bar2
                .try_read64(DRIVER_ATTACH_OFFSET)
                .expect("mailbox word"),
        );
        let ack = DriverAttach::new()
            .with_generation(attach.generation())
            .with_session(last.session().wrapping_add(1))
            .with_peer(self.peer.lock().unwrap().id());
        self.bar2
            .try_write64(bus, DRIVER_GSP_ARGS_OFFSET)
            .expect("mailbox word");
        self.bar2
            .try_write64(ack.into_bits(), DRIVER_ATTACH_OFFSET)
            .expect("mailbox word");
        // The GSP writes its attach to the mailbox as soon as it is connected, which can be
        // before the server's word that it joined reaches our peer (read by the interrupt
        // thread): until then its id is unknown here.
        let known_by = StdInstant::now() + Duration::from_secs(5);
        loop {
            match self.peer.lock().unwrap().notify(attach.peer(), 0) {
                Err(e)
                    if e.kind() == std::io::ErrorKind::NotFound && StdInstant::now() < known_by => {
                }
                result => break result.unwrap(),
            }
            thread::sleep(Duration::from_millis(1));
        }
    }

    /// Fills the whole guest RAM with `byte`.
    fn fill_ram(&self, byte: u8) {
        // SAFETY: `ram` maps `ram.len()` writable bytes; no allocation of the driver's lives
        // in it and no GSP process has been given an address in it yet.
        unsafe { std::ptr::write_bytes(self.ram.as_ptr(), byte, self.ram.len()) };
    }

    /// Returns whether every byte of the guest RAM after its first page (where the tests'
    /// boot arguments are) is `byte`.
    fn ram_is_all(&self, byte: u8) -> bool {
        let mut copy = vec![0u8; self.ram.len()];
        // SAFETY: `ram` maps `ram.len()` readable bytes; `copy` is as long and distinct.
        unsafe { std::ptr::copy_nonoverlapping(self.ram.as_ptr(), copy.as_mut_ptr(), copy.len()) };
        copy[GSP_PAGE_SIZE..].iter().all(|&b| b == byte)
    }

    /// Kills the GSP process with SIGKILL, as a crash would.
    fn kill_gsp(&self) {
        let mut child = self.gsp.take().unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// The driver's side of the device.
    fn device(&self) -> IvshmemGsp<'_> {
        IvshmemGsp::new(&self.bar0, &self.bar2, self.dev, Some(self.irq))
    }

    /// Stops the server with SIGTERM, once; returns its exit status.
    fn terminate_server(&mut self) -> std::process::ExitStatus {
        if let Some(status) = self.server_status {
            return status;
        }
        // SAFETY: `kill` has no memory-safety preconditions; the child is not reaped yet,
        // so its pid is still its own.
        unsafe { libc::kill(self.server.id() as libc::pid_t, libc::SIGTERM) };
        let status = self.server.wait().unwrap();
        self.server_status = Some(status);
        status
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.irq_thread.take() {
            let _ = t.join();
        }
        if let Some(mut gsp) = self.gsp.take() {
            let _ = gsp.kill();
            let _ = gsp.wait();
        }
        let _ = self.terminate_server();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Attaches to a GSP other than generation `after` and boots it.
fn attach_and_boot(iv: &mut IvshmemGsp<'_>, after: Option<u32>) -> u32 {
    let generation = iv.attach(after, ATTACH_TIMEOUT).unwrap();
    let (gsp, bell) = iv.gsp().unwrap();
    let info = gsp.boot(&bell, &vgsp::PCI_FUNCTION).unwrap();
    assert_eq!(info.gpu_name(), vgsp::GPU_NAME);
    // A GSP that started over on the fresh queues: its whole boot log, once.
    assert_eq!(gsp.log_lines(), BOOT_LOG_LINES);
    generation
}

/// Returns the slots an RPC of `len` payload bytes occupies on a ring, by the layout of
/// `fw`: elements of `MAX_ELEMENT_PAYLOAD` bytes, the last one holding the rest.
fn slots_for(len: usize) -> u32 {
    let full = element_count_for_rpc(len) - 1;
    let last = len - full * fw::MAX_ELEMENT_PAYLOAD;
    full as u32 * fw::element::elem_count_for(fw::MAX_ELEMENT_PAYLOAD)
        + fw::element::elem_count_for(last)
}

/// Returns how far a ring pointer moved from `before` to `after`, in slots.
fn moved(before: u32, after: u32) -> u32 {
    (after + fw::MSGQ_NUM_PAGES - before) % fw::MSGQ_NUM_PAGES
}

/// Sends `count` echoes of 1 B to 16 KiB (every 97th split into continuation records)
/// and checks every reply, and that the command and the reply each took the slots their
/// length needs; returns the unasked log lines the GSP's log handler got in between.
fn echoes(iv: &mut IvshmemGsp<'_>, count: usize) -> u64 {
    let (gsp, bell) = iv.gsp().unwrap();
    let pattern: Vec<u8> = (0..4 * fw::MAX_ELEMENT_PAYLOAD)
        .map(|i| (i * 7 + i / 251) as u8)
        .collect();
    let mut len = 1;
    let lines = gsp.log_lines();
    for sent in 0..count {
        len = (len * 7 + 13) % (16 << 10) + 1;
        if sent % 97 == 0 {
            len = 2 * fw::MAX_ELEMENT_PAYLOAD + 1;
        }
        let payload = &pattern[sent % 1000..sent % 1000 + len];
        let (wptr, _) = gsp.cmdq().cpu_ptrs();
        let seq = gsp.cmdq().post(&bell, &Echo(payload)).unwrap();
        // The command took the slots its length needs; they all fit, as the ring is empty
        // before each echo.
        assert_eq!(
            moved(wptr, gsp.cmdq().cpu_ptrs().0),
            slots_for(Echo(payload).size()),
            "echo {sent} of {len} bytes"
        );
        let reply = gsp.cmdq().receive_any(REPLY_TIMEOUT).unwrap();
        assert_eq!(reply.function(), VGSP_ECHO);
        assert_eq!(reply.sequence, seq);
        assert!(
            reply.payload[..] == *payload,
            "echo {sent} of {len} bytes differs"
        );
        assert_eq!(
            reply.elem_count,
            slots_for(len),
            "echo {sent} of {len} bytes"
        );
    }
    gsp.log_lines() - lines
}

#[test]
fn the_driver_boots_the_gsp_process_and_echoes_through_the_device() {
    let rig = Rig::new("drive");
    rig.start_gsp();
    let mut iv = rig.device();
    // The first GSP to attach to this memory.
    assert_eq!(attach_and_boot(&mut iv, None), 1);
    // 1 000 echoes after the three bring-up commands: a log line after every 100th.
    assert_eq!(
        echoes(&mut iv, 1000),
        (BRING_UP_COMMANDS + 1000) as u64 / LOG_EVERY as u64
    );
}

#[test]
fn a_continuation_pair_goes_each_way() {
    let rig = Rig::new("pair");
    rig.start_gsp();
    let mut iv = rig.device();
    attach_and_boot(&mut iv, None);
    let (gsp, bell) = iv.gsp().unwrap();
    // One byte more than an element holds: a full head and a one-slot continuation.
    let payload: Vec<u8> = (0..=fw::MAX_ELEMENT_PAYLOAD).map(|i| i as u8).collect();
    let pair = fw::MAX_ELEMENT_PAGES + 1;
    let (wptr, rptr) = gsp.cmdq().cpu_ptrs();
    let seq = gsp.cmdq().post(&bell, &Echo(&payload)).unwrap();
    assert_eq!(moved(wptr, gsp.cmdq().cpu_ptrs().0), pair);
    let reply = gsp.cmdq().receive_any(REPLY_TIMEOUT).unwrap();
    assert_eq!(
        (reply.function(), reply.sequence, reply.rpc_result),
        (VGSP_ECHO, seq, fw::NV_OK)
    );
    assert_eq!(reply.elem_count, pair);
    assert_eq!(moved(rptr, gsp.cmdq().cpu_ptrs().1), pair);
    assert!(reply.payload[..] == payload[..]);
}

#[test]
fn attaching_again_starts_the_gsp_over_on_fresh_queues() {
    // Short of a log line in one session, past it if the GSP went on counting.
    const ECHOES: usize = LOG_EVERY - BRING_UP_COMMANDS - 10;
    let rig = Rig::new("again");
    rig.start_gsp();
    let mut iv = rig.device();
    assert_eq!(attach_and_boot(&mut iv, None), 1);
    assert_eq!(echoes(&mut iv, ECHOES), 0);

    // A new session with the same GSP process: the generation stays; the boot (its log
    // checked in `attach_and_boot`) runs on queues whose pointers start at 0 again: one
    // slot for each bring-up command, and for each message (the log, `GSP_INIT_DONE`,
    // the static information).
    assert_eq!(attach_and_boot(&mut iv, None), 1);
    let (wptr, rptr) = iv.gsp().unwrap().0.cmdq().cpu_ptrs();
    assert_eq!(
        (wptr as usize, u64::from(rptr)),
        (BRING_UP_COMMANDS, BOOT_LOG_LINES + 2)
    );
    // The GSP's command count started over too: still no log line.
    assert_eq!(echoes(&mut iv, ECHOES), 0);
}

#[test]
fn the_gsp_interrupts_once_per_reply() {
    const ROUND_TRIPS: u64 = 50;
    let rig = Rig::new("irq");
    rig.start_gsp();
    let mut iv = rig.device();
    attach_and_boot(&mut iv, None);
    let (gsp, bell) = iv.gsp().unwrap();
    let quiet = Delta::from_millis(100);
    let start = rig.irq.settle(quiet);
    for i in 0..ROUND_TRIPS {
        let seen = rig.irq.count();
        let seq = gsp.cmdq().post(&bell, &Echo(b"ring me")).unwrap();
        rig.irq.wait(seen, REPLY_TIMEOUT);
        assert_eq!(rig.irq.count(), seen + 1, "round trip {i}");
        // The GSP rings after its write-pointer store: the reply is there already, for a
        // receive that looks once and does not wait.
        let reply = gsp.cmdq().receive_any(Delta::ZERO).unwrap();
        assert_eq!((reply.function(), reply.sequence), (VGSP_ECHO, seq));
    }
    // No ring more than one per reply came late.
    assert_eq!(rig.irq.settle(quiet) - start, ROUND_TRIPS);
}

#[test]
fn a_killed_gsp_times_out_and_a_new_one_takes_over() {
    let rig = Rig::new("kill");
    rig.start_gsp();
    let mut iv = rig.device();
    let first = attach_and_boot(&mut iv, None);
    assert_eq!(first, 1);
    assert_eq!(echoes(&mut iv, 10), 0);
    drop(iv);

    rig.kill_gsp();
    let mut iv = rig.device();
    // The queues are still the old GSP's: use them as the driver would.
    iv.attach(None, ATTACH_TIMEOUT).unwrap();
    let (gsp, bell) = iv.gsp().unwrap();
    let start = StdInstant::now();
    gsp.cmdq().post(&bell, &Echo(b"anyone?")).unwrap();
    let err = gsp.cmdq().receive_any(Delta::from_millis(500)).unwrap_err();
    assert_eq!(err, ETIMEDOUT);
    assert_eq!(gsp.cmdq().last_fault(), Some(Fault::NothingPublished));
    assert!(start.elapsed() < Duration::from_secs(2));

    rig.start_gsp();
    let second = attach_and_boot(&mut iv, Some(first));
    assert_eq!(second, first + 1);
    // The new GSP counts from its own start: a log line at its 100th command.
    assert_eq!(
        echoes(&mut iv, 100),
        (BRING_UP_COMMANDS + 100) as u64 / LOG_EVERY as u64
    );
}

#[test]
fn the_gsp_process_leaves_with_the_server() {
    let mut rig = Rig::new("leave");
    rig.start_gsp();
    let mut iv = rig.device();
    attach_and_boot(&mut iv, None);
    drop(iv);
    assert!(rig.terminate_server().success());
    let mut gsp = rig.gsp.take().unwrap();
    let start = StdInstant::now();
    let status = loop {
        if let Some(status) = gsp.try_wait().unwrap() {
            break status;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the GSP process stayed"
        );
        thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success());
    // The server removed its socket; its shared memory went with it.
    assert!(!rig.socket().exists());
    assert!(!Path::new("/dev/shm").join(&rig.shm_name).exists());
}

#[test]
fn the_gsp_process_finds_the_queues_at_their_bus_address_in_the_ram() {
    let rig = Rig::new("bus");
    rig.start_gsp();
    let mut iv = rig.device();
    attach_and_boot(&mut iv, None);
    let gsp = iv.gsp().unwrap().0;
    let args = gsp.args().dma_address();
    let mem = gsp.cmdq().gsp_mem();
    let bus = mem.dma_address();
    // In the RAM by bus address, and there in the test's mapping of it.
    assert!(
        (RAM_BASE..RAM_BASE + RAM_SIZE as u64).contains(&bus),
        "{bus:#x}"
    );
    // CAST: the offset is inside the 16 MiB RAM.
    let cpu = rig.ram.as_ptr().wrapping_add((bus - RAM_BASE) as usize);
    assert_eq!(mem.as_ptr().cast::<u8>(), cpu.cast_const());
    assert_ne!(bus, cpu.addr() as u64);
    // The boot arguments' address told through the mailbox; the queues found from them
    // by the GSP process, which booted on them.
    assert_eq!(rig.bar2.try_read64(DRIVER_GSP_ARGS_OFFSET).unwrap(), args);
    rig.wait_for_gsp_line(&format!("queues at bus address {bus:#x} initialised"));
}

#[test]
fn a_gsp_mem_outside_the_ram_is_refused_and_the_ram_left_alone() {
    let rig = Rig::new("outside");
    rig.fill_ram(0x5a);
    rig.start_gsp();
    let end = RAM_BASE + RAM_SIZE as u64;
    let size = core::mem::size_of::<GspMem>() as u64;
    for bus in [
        RAM_BASE - PAGE,
        end,
        // Starts inside, ends outside.
        end - size + PAGE,
        // Past the end of the bus: no wrap-around into the RAM.
        u64::MAX - PAGE + 1,
    ] {
        rig.acknowledge_with_queues_at(bus);
        rig.wait_for_gsp_line(&format!(
            "refusing the boot arguments at bus address {ARGS_AT:#x}: shared memory outside the region"
        ));
    }
    // Arguments outside the RAM themselves.
    for (bus, why) in [
        (RAM_BASE - PAGE, "below the RAM"),
        (end - 8, "runs past the end of the RAM"),
    ] {
        rig.acknowledge_with_args_at(bus);
        rig.wait_for_gsp_line(&format!(
            "refusing the boot arguments at bus address {bus:#x}: {why}"
        ));
    }
    assert!(!rig.gsp_log.lock().unwrap().contains("initialised"));
    assert!(rig.ram_is_all(0x5a));
    // It waits for the next attach; it has not gone.
    assert!(rig
        .gsp
        .borrow_mut()
        .as_mut()
        .unwrap()
        .try_wait()
        .unwrap()
        .is_none());
}

#[test]
fn a_gsp_mem_off_a_page_boundary_is_refused() {
    let rig = Rig::new("unaligned");
    rig.start_gsp();
    rig.acknowledge_with_queues_at(RAM_BASE + PAGE + 8);
    rig.wait_for_gsp_line(&format!(
        "refusing the boot arguments at bus address {ARGS_AT:#x}: shared memory not page-aligned"
    ));
}

#[test]
fn after_a_refusal_the_gsp_takes_the_next_attach() {
    let rig = Rig::new("refused");
    rig.start_gsp();
    rig.acknowledge_with_queues_at(RAM_BASE + RAM_SIZE as u64);
    rig.wait_for_gsp_line(&format!(
        "refusing the boot arguments at bus address {ARGS_AT:#x}"
    ));
    let mut iv = rig.device();
    assert_eq!(attach_and_boot(&mut iv, None), 1);
    assert_eq!(echoes(&mut iv, 10), 0);
}
