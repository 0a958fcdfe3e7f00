// SPDX-License-Identifier: GPL-2.0

//! The driver's device code (`nova_core::ivshmem`) against the real ivshmem server and
//! host GSP process, with this test in the role QEMU and the guest play together: it
//! joins the server as a peer, maps the shared memory as BAR2, and simulates BAR0, whose
//! doorbell register rings the GSP's eventfd exactly as QEMU's device does; its own
//! eventfd stands for the MSI-X vector. The kernel tier runs the same code on a real
//! PCI device under QEMU (the `nova_core_ivshmem` suite).

use std::{
    cell::RefCell,
    path::{
        Path,
        PathBuf, //
    },
    process::{
        Child,
        Command,
        Stdio, //
    },
    ptr::NonNull,
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
    error::code::ETIMEDOUT,
    io::{
        Io,
        IoRaw,
        MmioWriteObserver, //
    },
    time::Delta,
};
use nova_core::{
    gsp::{
        cmdq::MsgqSignal,
        commands::{
            Echo,
            GspSetSystemInfo, //
        },
        fw::{
            self,
            function, //
        },
    },
    ivshmem::{
        IvshmemGsp,
        IVSHMEM_DOORBELL,
        IVSHMEM_IV_POSITION,
        REGS_SIZE,
        SHM_SIZE, //
    },
};
use vgsp_ivshmem::client::{
    Peer,
    PeerEvent,
    SharedMemory, //
};

const ATTACH_TIMEOUT: Delta = Delta::from_secs(10);
const REPLY_TIMEOUT: Delta = Delta::from_secs(5);

/// The MSI-X vector: a count raised by the thread that reads our eventfd.
#[derive(Default)]
struct Irq {
    count: AtomicU64,
    lock: Mutex<()>,
    cond: Condvar,
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
            let bell = IVSHMEM_DOORBELL::from_bits(value);
            // A departed peer's doorbell rings no one, as in QEMU.
            let _ = self.0.lock().unwrap().notify(bell.peer(), bell.vector());
        }
    }
}

/// The server, the GSP process, and the guest's side of the device. Fields drop in
/// order: BAR0 before what its observer and memory are.
struct Rig {
    bar0: IoRaw<REGS_SIZE>,
    _regs: Box<[u32; REGS_SIZE / 4]>,
    _doorbell: Box<QemuDoorbell>,
    shm: SharedMemory,
    irq: &'static Irq,
    stop: Arc<AtomicBool>,
    irq_thread: Option<thread::JoinHandle<()>>,
    gsp: RefCell<Option<Child>>,
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
            .args(["-l", "1M", "-n", "1"])
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
        // SAFETY: `regs` is a heap array of `REGS_SIZE` bytes, 4-byte aligned, that stays
        // in place in the `Rig` after `bar0`, which drops first; so does `doorbell`.
        let bar0 = unsafe {
            IoRaw::<REGS_SIZE>::new(regs.as_ptr() as usize, REGS_SIZE)
                .unwrap()
                .with_observer(&*doorbell)
        };

        // The MSI-X vector: our eventfd, read by a thread of its own.
        let irq: &'static Irq = Box::leak(Box::default());
        let stop = Arc::new(AtomicBool::new(false));
        let irq_thread = {
            let stop = stop.clone();
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
            _regs: regs,
            _doorbell: doorbell,
            shm,
            irq,
            stop,
            irq_thread: Some(irq_thread),
            gsp: RefCell::new(None),
            server,
            server_status: None,
            shm_name,
            dir,
        }
    }

    fn socket(&self) -> PathBuf {
        self.dir.join("ivshmem.sock")
    }

    /// Starts a GSP process.
    fn start_gsp(&self) {
        assert!(self.gsp.borrow().is_none());
        let child = Command::new(env!("CARGO_BIN_EXE_vgsp-gsp"))
            .arg("--socket")
            .arg(self.socket())
            .args(["--log-every", "100"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        *self.gsp.borrow_mut() = Some(child);
    }

    /// Kills the GSP process with SIGKILL, as a crash would.
    fn kill_gsp(&self) {
        let mut child = self.gsp.take().unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// The driver's side of the device.
    fn device(&self) -> IvshmemGsp<'_> {
        // SAFETY: `shm` maps `SHM_SIZE` bytes for as long as `self`, and the test touches
        // it only through the returned value.
        unsafe {
            IvshmemGsp::new(
                Io::from_raw(&self.bar0),
                NonNull::new(self.shm.as_ptr()).unwrap(),
                self.shm.len(),
                Some(self.irq),
            )
            .unwrap()
        }
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
    let info = gsp.boot(&bell, &GspSetSystemInfo::default()).unwrap();
    assert_eq!(info.gpu_name(), vgsp::GPU_NAME);
    assert!(gsp.log_lines > 0);
    generation
}

/// Sends `count` echoes of 1 B to 16 KiB (every 97th split into continuation records)
/// and checks every reply; returns the unasked log lines seen in between.
fn echoes(iv: &mut IvshmemGsp<'_>, count: usize) -> usize {
    let (gsp, bell) = iv.gsp().unwrap();
    let pattern: Vec<u8> = (0..4 * fw::MAX_ELEMENT_PAYLOAD)
        .map(|i| (i * 7 + i / 251) as u8)
        .collect();
    let mut len = 1;
    let mut events = 0;
    for sent in 0..count {
        len = (len * 7 + 13) % (16 << 10) + 1;
        if sent % 97 == 0 {
            len = 2 * fw::MAX_ELEMENT_PAYLOAD + 1;
        }
        let payload = &pattern[sent % 1000..sent % 1000 + len];
        let seq = gsp.cmdq.send_command(&bell, &Echo(payload)).unwrap();
        let reply = loop {
            let msg = gsp.cmdq.receive_msg(REPLY_TIMEOUT).unwrap();
            if msg.function != function::UCODE_LIBOS_PRINT {
                break msg;
            }
            events += 1;
        };
        assert_eq!(reply.function, function::NOP);
        assert_eq!(reply.sequence, seq);
        assert!(
            reply.payload[..] == *payload,
            "echo {sent} of {len} bytes differs"
        );
    }
    events
}

#[test]
fn the_driver_drives_the_gsp_process_through_the_device() {
    let rig = Rig::new("drive");
    rig.start_gsp();
    let mut iv = rig.device();
    assert_eq!(attach_and_boot(&mut iv, None), 1);
    // 1 000 echoes after the three bring-up commands: a log line after every 100th.
    assert_eq!(echoes(&mut iv, 1000), 10);

    // A head and one continuation record each way.
    let (gsp, bell) = iv.gsp().unwrap();
    let payload: Vec<u8> = (0..=fw::MAX_ELEMENT_PAYLOAD).map(|i| i as u8).collect();
    gsp.cmdq.send_command(&bell, &Echo(&payload)).unwrap();
    let reply = gsp.cmdq.receive_msg(REPLY_TIMEOUT).unwrap();
    assert_eq!(reply.elem_count, fw::MAX_ELEMENT_PAGES + 1);
    assert!(reply.payload[..] == payload[..]);

    // Attaching again (a new session) starts the GSP over on fresh queues.
    assert_eq!(attach_and_boot(&mut iv, None), 1);
    assert_eq!(echoes(&mut iv, 50), 0);
    // The GSP interrupted us for its messages. (Not a count per reply: the last rings
    // may still be on their way, and a busy GSP may post several messages per ring.)
    assert!(rig.irq.count() > 0);
}

#[test]
fn a_killed_gsp_times_out_and_a_new_one_takes_over() {
    let rig = Rig::new("kill");
    rig.start_gsp();
    let mut iv = rig.device();
    let first = attach_and_boot(&mut iv, None);
    echoes(&mut iv, 10);
    drop(iv);

    rig.kill_gsp();
    let mut iv = rig.device();
    // The queues are still the old GSP's: use them as the driver would.
    iv.attach(None, ATTACH_TIMEOUT).unwrap();
    let (gsp, bell) = iv.gsp().unwrap();
    let start = StdInstant::now();
    gsp.cmdq.send_command(&bell, &Echo(b"anyone?")).unwrap();
    let err = gsp.cmdq.receive_msg(Delta::from_millis(500)).unwrap_err();
    assert_eq!(err, ETIMEDOUT);
    assert_eq!(gsp.cmdq.last_fault(), Some("nothing published in time"));
    assert!(start.elapsed() < Duration::from_secs(2));

    rig.start_gsp();
    let second = attach_and_boot(&mut iv, Some(first));
    assert_eq!(second, first + 1);
    // The new GSP counts from its own start: a log line at its 100th command.
    assert_eq!(echoes(&mut iv, 100), 1);
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
