// SPDX-License-Identifier: GPL-2.0

//! The `ivshmem-server` binary and the [`Peer`] client against each other, and each
//! against a raw reading of the protocol.

use std::{
    io::{
        BufRead,
        BufReader,
        Read,
        Write, //
    },
    mem,
    os::{
        fd::{
            AsFd,
            AsRawFd,
            BorrowedFd,
            FromRawFd,
            OwnedFd,
            RawFd, //
        },
        unix::{
            net::{
                UnixListener,
                UnixStream, //
            },
            process::ExitStatusExt,
        },
    },
    path::{
        Path,
        PathBuf, //
    },
    process::{
        Child,
        Command,
        ExitStatus,
        Stdio, //
    },
    sync::{
        atomic::{
            AtomicU32,
            Ordering, //
        },
        mpsc, Arc, Mutex,
    },
    thread,
    time::{
        Duration,
        Instant, //
    },
};

use vgsp_ivshmem::{
    client::{
        Peer,
        PeerEvent, //
    },
    server::send_message,
};

const SERVER: &str = env!("CARGO_BIN_EXE_ivshmem-server");
const WAIT: Option<Duration> = Some(Duration::from_secs(5));

/// A fresh directory, removed on drop.
struct TempDir(PathBuf);

static UNIQUE: AtomicU32 = AtomicU32::new(0);

fn unique(tag: &str) -> String {
    format!(
        "vgsp-test-{}-{}-{tag}",
        std::process::id(),
        UNIQUE.fetch_add(1, Ordering::Relaxed)
    )
}

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(unique(tag));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A server process, killed on drop.
struct Server {
    child: Child,
    socket: PathBuf,
    shm: PathBuf,
    stderr: Arc<Mutex<String>>,
}

/// Collects a child's standard error in the background; the thread ends with the
/// stream.
fn collect(mut from: impl Read + Send + 'static) -> (Arc<Mutex<String>>, thread::JoinHandle<()>) {
    let text = Arc::new(Mutex::new(String::new()));
    let sink = text.clone();
    let thread = thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    (text, thread)
}

impl Server {
    /// Starts a server on `DIR/sock` with shared memory `name` and `extra` arguments,
    /// waiting for its "listening" line.
    fn start(dir: &Path, name: &str, extra: &[&str]) -> Server {
        Self::try_start(&dir.join("sock"), name, extra)
            .unwrap_or_else(|(status, err)| panic!("server failed to start: {status:?}\n{err}"))
    }

    fn try_start(
        socket: &Path,
        name: &str,
        extra: &[&str],
    ) -> Result<Server, (Option<ExitStatus>, String)> {
        let mut child = Command::new(SERVER)
            .arg("-S")
            .arg(socket)
            .args(["-M", name, "-v"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (stderr, collector) = collect(child.stderr.take().unwrap());
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line);
            }
        });
        let server = Server {
            child,
            socket: socket.to_path_buf(),
            shm: Path::new("/dev/shm").join(name),
            stderr,
        };
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(line) if line.starts_with("ivshmem-server: listening on") => Ok(server),
            other => {
                let mut server = server;
                let status = wait_timeout(&mut server.child, Duration::from_secs(5));
                if status.is_some() {
                    let _ = collector.join();
                }
                let err = format!("{other:?} {}", server.stderr());
                Err((status, err))
            }
        }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits (at most 5 s) for `text` on the server's standard error, which a thread
    /// collects.
    fn wait_stderr(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !self.stderr().contains(text) {
            assert!(
                Instant::now() < deadline,
                "no {text:?} in:\n{}",
                self.stderr()
            );
            thread::sleep(Duration::from_millis(10));
        }
    }

    fn signal(&self, signal: libc::c_int) {
        // SAFETY: Sends a signal to our child; no memory involved.
        assert_eq!(unsafe { libc::kill(self.child.id() as i32, signal) }, 0);
    }

    /// Sends `signal` and waits for the exit.
    fn stop(&mut self, signal: libc::c_int) -> ExitStatus {
        self.signal(signal);
        wait_timeout(&mut self.child, Duration::from_secs(10)).expect("server did not exit")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.shm);
    }
}

fn wait_timeout(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// Runs the server to its end (it is expected to fail at once).
fn run_failing(args: &[&std::ffi::OsStr]) -> (ExitStatus, String) {
    let mut child = Command::new(SERVER)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (stderr, collector) = collect(child.stderr.take().unwrap());
    let status = wait_timeout(&mut child, Duration::from_secs(10)).unwrap_or_else(|| {
        let _ = child.kill();
        panic!("the server did not exit");
    });
    collector.join().unwrap();
    let text = stderr.lock().unwrap().clone();
    (status, text)
}

/// Waits for the next event, failing after a few seconds.
fn next_event(peer: &mut Peer) -> PeerEvent {
    peer.wait_event(WAIT).unwrap()
}

#[test]
fn peers_see_each_other_with_distinct_ids() {
    let dir = TempDir::new("see");
    let name = unique("see");
    let server = Server::start(&dir.0, &name, &[]);
    let mut a = Peer::connect(&server.socket, 1).unwrap();
    assert!(a.peers().is_empty());
    let b = Peer::connect(&server.socket, 1).unwrap();
    assert_ne!(a.id(), b.id());
    assert_eq!(b.peers(), vec![a.id()]);
    assert_eq!(next_event(&mut a), PeerEvent::Joined(b.id()));
    assert_eq!(a.peers(), vec![b.id()]);
    assert_eq!(a.peer_vectors(b.id()), Some(1));
}

#[test]
fn notify_rings_the_other_peers_doorbell() {
    let dir = TempDir::new("notify");
    let name = unique("notify");
    let server = Server::start(&dir.0, &name, &["-n", "2"]);
    let mut a = Peer::connect(&server.socket, 2).unwrap();
    let mut b = Peer::connect(&server.socket, 2).unwrap();
    assert_eq!(next_event(&mut a), PeerEvent::Joined(b.id()));

    a.notify(b.id(), 1).unwrap();
    assert_eq!(
        next_event(&mut b),
        PeerEvent::Doorbell {
            vector: 1,
            count: 1
        }
    );
    // Two rings before a wait fold into one event with count 2.
    a.notify(b.id(), 0).unwrap();
    a.notify(b.id(), 0).unwrap();
    assert_eq!(
        next_event(&mut b),
        PeerEvent::Doorbell {
            vector: 0,
            count: 2
        }
    );
    // Reading cleared it.
    assert_eq!(
        b.wait_event(Some(Duration::from_millis(100))).unwrap(),
        PeerEvent::Timeout
    );
    // And the other way round.
    b.notify(a.id(), 0).unwrap();
    assert_eq!(
        next_event(&mut a),
        PeerEvent::Doorbell {
            vector: 0,
            count: 1
        }
    );
    // Our own id rings our own doorbell, as QEMU allows.
    a.notify(a.id(), 1).unwrap();
    assert_eq!(
        next_event(&mut a),
        PeerEvent::Doorbell {
            vector: 1,
            count: 1
        }
    );
}

#[test]
fn notify_rejects_unknown_peers_and_vectors() {
    let dir = TempDir::new("unknown");
    let name = unique("unknown");
    let server = Server::start(&dir.0, &name, &[]);
    let a = Peer::connect(&server.socket, 1).unwrap();
    let b = Peer::connect(&server.socket, 1).unwrap();
    let err = a.notify(999, 0).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    assert!(err.to_string().contains("peer 999"), "{err}");
    let err = b.notify(a.id(), 1).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    assert!(err.to_string().contains("no vector 1"), "{err}");
}

#[test]
fn wait_event_times_out() {
    let dir = TempDir::new("timeout");
    let name = unique("timeout");
    let server = Server::start(&dir.0, &name, &[]);
    let mut a = Peer::connect(&server.socket, 1).unwrap();
    let start = Instant::now();
    assert_eq!(
        a.wait_event(Some(Duration::from_millis(200))).unwrap(),
        PeerEvent::Timeout
    );
    assert!(start.elapsed() >= Duration::from_millis(200));
    assert_eq!(
        a.wait_event(Some(Duration::ZERO)).unwrap(),
        PeerEvent::Timeout
    );
}

#[test]
fn events_ready_together_are_all_returned() {
    let dir = TempDir::new("together");
    let name = unique("together");
    let server = Server::start(&dir.0, &name, &["-n", "2"]);
    let mut a = Peer::connect(&server.socket, 2).unwrap();
    let mut b = Peer::connect(&server.socket, 2).unwrap();
    b.notify(a.id(), 0).unwrap();
    b.notify(a.id(), 1).unwrap();
    let c = Peer::connect(&server.socket, 2).unwrap();
    let c_id = c.id();
    // The server tells the peers in id order: once `b` has heard of `c` joining (and
    // then leaving), `a` has been told too, and nothing has been read on `a` yet.
    assert_eq!(next_event(&mut b), PeerEvent::Joined(c_id));
    drop(c);
    assert_eq!(next_event(&mut b), PeerEvent::Left(c_id));
    let mut events = Vec::new();
    loop {
        match a.wait_event(Some(Duration::from_millis(300))).unwrap() {
            PeerEvent::Timeout => break,
            event => events.push(event),
        }
    }
    assert_eq!(
        events,
        vec![
            PeerEvent::Doorbell {
                vector: 0,
                count: 1
            },
            PeerEvent::Doorbell {
                vector: 1,
                count: 1
            },
            PeerEvent::Joined(b.id()),
            PeerEvent::Joined(c_id),
            PeerEvent::Left(c_id),
        ]
    );
    assert_eq!(a.peers(), vec![b.id()]);
}

#[test]
fn shared_memory_is_the_same_memory() {
    let dir = TempDir::new("shm");
    let name = unique("shm");
    let server = Server::start(&dir.0, &name, &["-l", "1M"]);
    let a = Peer::connect(&server.socket, 1).unwrap();
    let b = Peer::connect(&server.socket, 1).unwrap();
    let ma = a.map_shared_memory().unwrap();
    let mb = b.map_shared_memory().unwrap();
    assert_eq!(ma.len(), 1 << 20);
    assert_eq!(mb.len(), 1 << 20);
    assert_ne!(ma.as_ptr(), mb.as_ptr());
    for i in [0usize, 4095, 4096, (1 << 20) - 1] {
        // SAFETY: `i` is inside both mappings; nobody else touches them.
        unsafe {
            ma.as_ptr().add(i).write_volatile((i % 251) as u8 + 1);
            assert_eq!(mb.as_ptr().add(i).read_volatile(), (i % 251) as u8 + 1);
        }
    }
    // The file is the same too.
    assert_eq!(std::fs::metadata(&server.shm).unwrap().len(), 1 << 20);
}

#[test]
fn departure_is_announced() {
    let dir = TempDir::new("depart");
    let name = unique("depart");
    let server = Server::start(&dir.0, &name, &[]);
    let mut a = Peer::connect(&server.socket, 1).unwrap();
    let b = Peer::connect(&server.socket, 1).unwrap();
    let b_id = b.id();
    assert_eq!(next_event(&mut a), PeerEvent::Joined(b_id));
    drop(b);
    assert_eq!(next_event(&mut a), PeerEvent::Left(b_id));
    assert!(a.peers().is_empty());
    let err = a.notify(b_id, 0).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
}

#[test]
fn ids_count_up_without_reuse() {
    let dir = TempDir::new("ids");
    let name = unique("ids");
    let server = Server::start(&dir.0, &name, &[]);
    let a = Peer::connect(&server.socket, 1).unwrap();
    let mut b = Peer::connect(&server.socket, 1).unwrap();
    assert_eq!((a.id(), b.id()), (0, 1));
    drop(a);
    // Once the server has seen it go (another test's fork may hold a copy of the
    // socket for a moment).
    assert_eq!(next_event(&mut b), PeerEvent::Left(0));
    let c = Peer::connect(&server.socket, 1).unwrap();
    assert_eq!(c.id(), 2);
    assert_eq!(c.peers(), vec![1]);
}

#[test]
fn second_server_on_the_same_socket_is_refused() {
    let dir = TempDir::new("second");
    let name = unique("second");
    let server = Server::start(&dir.0, &name, &[]);
    let mut a = Peer::connect(&server.socket, 1).unwrap();

    let other = unique("second-other");
    let (status, stderr) = run_failing(&[
        "-S".as_ref(),
        server.socket.as_os_str(),
        "-M".as_ref(),
        other.as_ref(),
    ]);
    assert!(!status.success());
    assert!(
        stderr.contains(&format!(
            "another server is already listening on {}",
            server.socket.display()
        )),
        "{stderr}"
    );
    assert!(!Path::new("/dev/shm").join(&other).exists());

    // The first still works; its socket file is untouched.
    assert!(server.socket.exists());
    let b = Peer::connect(&server.socket, 1).unwrap();
    b.notify(a.id(), 0).unwrap();
    // The second server's probe may show up as a peer that came and went.
    loop {
        match next_event(&mut a) {
            PeerEvent::Doorbell {
                vector: 0,
                count: 1,
            } => break,
            PeerEvent::Joined(id) | PeerEvent::Left(id) if id != b.id() => {}
            PeerEvent::Joined(id) if id == b.id() => {}
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[test]
fn shared_memory_held_by_a_server_is_refused() {
    let dir = TempDir::new("shmheld");
    let name = unique("shmheld");
    let server = Server::start(&dir.0, &name, &[]);
    let socket2 = dir.0.join("sock2");
    let (status, stderr) = run_failing(&[
        "-S".as_ref(),
        socket2.as_os_str(),
        "-M".as_ref(),
        name.as_ref(),
    ]);
    assert!(!status.success());
    assert!(
        stderr.contains(&format!(
            "the shared memory /dev/shm/{name} is in use by another ivshmem server"
        )),
        "{stderr}"
    );
    assert!(!socket2.exists());
    assert!(server.shm.exists());
    Peer::connect(&server.socket, 1).unwrap();
}

#[test]
fn stale_socket_and_shared_memory_are_taken_over() {
    let dir = TempDir::new("stale");
    let name = unique("stale");
    let mut first = Server::start(&dir.0, &name, &[]);
    let old = Peer::connect(&first.socket, 1).unwrap();
    let old_map = old.map_shared_memory().unwrap();
    // SAFETY: Inside the mapping; nobody else writes it.
    unsafe { old_map.as_ptr().write_volatile(0xa5) };
    drop(old);
    let status = first.stop(libc::SIGKILL);
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    // A killed server leaves both files.
    assert!(first.socket.exists());
    assert!(first.shm.exists());

    let second = Server::start(&dir.0, &name, &[]);
    second.wait_stderr("removing stale socket");
    second.wait_stderr("removing stale shared memory");
    let mut a = Peer::connect(&second.socket, 1).unwrap();
    let b = Peer::connect(&second.socket, 1).unwrap();
    assert_eq!(next_event(&mut a), PeerEvent::Joined(b.id()));
    // Fresh memory: the old mapping keeps the old file, the new peers see zeros.
    let map = a.map_shared_memory().unwrap();
    // SAFETY: Inside the mappings.
    unsafe {
        assert_eq!(map.as_ptr().read_volatile(), 0);
        assert_eq!(old_map.as_ptr().read_volatile(), 0xa5);
    }
}

#[test]
fn termination_signals_remove_socket_and_shared_memory() {
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        let dir = TempDir::new("term");
        let name = unique("term");
        let mut server = Server::start(&dir.0, &name, &[]);
        let mut a = Peer::connect(&server.socket, 1).unwrap();
        assert!(server.socket.exists() && server.shm.exists());
        let status = server.stop(signal);
        assert!(status.success(), "signal {signal}: {status:?}");
        assert!(!server.socket.exists(), "signal {signal}: socket left");
        assert!(!server.shm.exists(), "signal {signal}: shared memory left");
        let err = a.wait_event(WAIT).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof);
        assert_eq!(err.to_string(), "server closed the connection");
        // And stays so.
        assert_eq!(
            a.wait_event(WAIT).unwrap_err().kind(),
            std::io::ErrorKind::UnexpectedEof
        );
    }
}

#[test]
fn non_power_of_two_size_is_refused() {
    let dir = TempDir::new("pow2");
    let name = unique("pow2");
    let socket = dir.0.join("sock");
    for size in ["3M", "1000", "0"] {
        let (status, stderr) = run_failing(&[
            "-S".as_ref(),
            socket.as_os_str(),
            "-M".as_ref(),
            name.as_ref(),
            "-l".as_ref(),
            size.as_ref(),
        ]);
        assert!(!status.success());
        assert!(
            stderr.contains("power of two") || stderr.contains("must not be zero"),
            "{size}: {stderr}"
        );
        assert!(!socket.exists());
        assert!(!Path::new("/dev/shm").join(&name).exists());
    }
}

#[test]
fn socket_path_that_is_not_a_socket_is_refused() {
    let dir = TempDir::new("notsock");
    let name = unique("notsock");
    let socket = dir.0.join("sock");
    std::fs::write(&socket, "precious").unwrap();
    let (status, stderr) = run_failing(&[
        "-S".as_ref(),
        socket.as_os_str(),
        "-M".as_ref(),
        name.as_ref(),
    ]);
    assert!(!status.success());
    assert!(stderr.contains("is not a socket"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&socket).unwrap(), "precious");
}

/// Reads one raw message: the value and the descriptors that came with it.
fn raw_recv(socket: &UnixStream) -> (i64, Vec<OwnedFd>) {
    let mut buf = [0u8; 8];
    let mut have = 0;
    let mut fds = Vec::new();
    socket
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    while have < 8 {
        let mut control = [0u64; 8];
        let mut iov = libc::iovec {
            iov_base: buf[have..].as_mut_ptr().cast(),
            iov_len: 8 - have,
        };
        // SAFETY: Plain data.
        let mut msg: libc::msghdr = unsafe { mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = mem::size_of_val(&control);
        // SAFETY: `msg` describes live buffers.
        let n = unsafe { libc::recvmsg(socket.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
        assert!(n > 0, "recvmsg: {n} {}", std::io::Error::last_os_error());
        have += n as usize;
        // SAFETY: `msg` was filled by `recvmsg`.
        let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(&msg) };
        while !cmsg.is_null() {
            // SAFETY: Inside `control`.
            let header = unsafe { &*cmsg };
            assert_eq!(
                (header.cmsg_level, header.cmsg_type),
                (libc::SOL_SOCKET, libc::SCM_RIGHTS)
            );
            // SAFETY: Size arithmetic.
            let count = (header.cmsg_len as usize - unsafe { libc::CMSG_LEN(0) } as usize)
                / mem::size_of::<RawFd>();
            for i in 0..count {
                // SAFETY: Inside the header's data; the kernel gave us the descriptor.
                unsafe {
                    let raw = libc::CMSG_DATA(cmsg)
                        .cast::<RawFd>()
                        .add(i)
                        .read_unaligned();
                    fds.push(OwnedFd::from_raw_fd(raw));
                }
            }
            // SAFETY: As above.
            cmsg = unsafe { libc::CMSG_NXTHDR(&msg, cmsg) };
        }
    }
    (i64::from_le_bytes(buf), fds)
}

/// Reads one message expecting `value` and `fds` descriptors.
fn expect_raw(socket: &UnixStream, value: i64, fds: usize) -> Option<OwnedFd> {
    let (got, mut got_fds) = raw_recv(socket);
    assert_eq!((got, got_fds.len()), (value, fds), "message");
    got_fds.pop()
}

fn eventfd_write(fd: BorrowedFd<'_>, value: u64) {
    let bytes = value.to_ne_bytes();
    // SAFETY: 8 readable bytes.
    assert_eq!(
        unsafe { libc::write(fd.as_raw_fd(), bytes.as_ptr().cast(), 8) },
        8
    );
}

/// Reads an eventfd (the server makes them non-blocking): `None` if zero.
fn eventfd_read(fd: BorrowedFd<'_>) -> Option<u64> {
    let mut bytes = [0u8; 8];
    // SAFETY: 8 writable bytes.
    let n = unsafe { libc::read(fd.as_raw_fd(), bytes.as_mut_ptr().cast(), 8) };
    (n == 8).then(|| u64::from_ne_bytes(bytes))
}

fn file_size(fd: BorrowedFd<'_>) -> i64 {
    // SAFETY: Plain data; `fd` is live.
    unsafe {
        let mut stat: libc::stat = mem::zeroed();
        assert_eq!(libc::fstat(fd.as_raw_fd(), &mut stat), 0);
        stat.st_size
    }
}

#[test]
fn initial_messages_follow_the_protocol() {
    let dir = TempDir::new("raw");
    let name = unique("raw");
    let server = Server::start(&dir.0, &name, &["-n", "2", "-l", "64K"]);

    let first = UnixStream::connect(&server.socket).unwrap();
    expect_raw(&first, 0, 0);
    expect_raw(&first, 0, 0);
    let shm = expect_raw(&first, -1, 1).unwrap();
    assert_eq!(file_size(shm.as_fd()), 64 << 10);
    let first_own: Vec<OwnedFd> = (0..2).map(|_| expect_raw(&first, 0, 1).unwrap()).collect();

    let second = UnixStream::connect(&server.socket).unwrap();
    expect_raw(&second, 0, 0);
    expect_raw(&second, 1, 0);
    expect_raw(&second, -1, 1);
    let second_knows_first: Vec<OwnedFd> =
        (0..2).map(|_| expect_raw(&second, 0, 1).unwrap()).collect();
    let second_own: Vec<OwnedFd> = (0..2).map(|_| expect_raw(&second, 1, 1).unwrap()).collect();
    let first_knows_second: Vec<OwnedFd> =
        (0..2).map(|_| expect_raw(&first, 1, 1).unwrap()).collect();

    // The descriptors are the same eventfds, vector by vector.
    for v in 0..2 {
        eventfd_write(first_knows_second[v].as_fd(), 10 + v as u64);
        assert_eq!(eventfd_read(second_own[v].as_fd()), Some(10 + v as u64));
        assert_eq!(eventfd_read(second_own[1 - v].as_fd()), None);
        eventfd_write(second_knows_first[v].as_fd(), 20 + v as u64);
        assert_eq!(eventfd_read(first_own[v].as_fd()), Some(20 + v as u64));
    }

    // A departure is the id once, without a descriptor.
    drop(second);
    expect_raw(&first, 1, 0);
    first
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut byte = [0u8; 1];
    let err = (&first).read(&mut byte).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::WouldBlock, "{err}");
}

#[test]
fn peer_that_sends_data_is_dropped() {
    let dir = TempDir::new("talk");
    let name = unique("talk");
    let server = Server::start(&dir.0, &name, &[]);
    let mut a = Peer::connect(&server.socket, 1).unwrap();
    let mut chatty = UnixStream::connect(&server.socket).unwrap();
    for (value, fds) in [(0, 0), (1, 0), (-1, 1), (0, 1), (1, 1)] {
        expect_raw(&chatty, value, fds);
    }
    assert_eq!(next_event(&mut a), PeerEvent::Joined(1));
    chatty.write_all(b"hello").unwrap();
    assert_eq!(next_event(&mut a), PeerEvent::Left(1));
    let mut rest = Vec::new();
    chatty
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    // The server closed its end (a reset: it left our data unread).
    match chatty.read_to_end(&mut rest) {
        Ok(n) => assert_eq!(n, 0),
        Err(err) => assert_eq!(err.kind(), std::io::ErrorKind::ConnectionReset),
    }
    server.wait_stderr("peer 1 sent data");
    // The server lives on.
    let b = Peer::connect(&server.socket, 1).unwrap();
    assert_eq!(b.id(), 2);
}

/// Runs a fake server that sends `script` (value, with the shared-memory descriptor)
/// to one client, then closes or lingers, and connects a [`Peer`] to it.
fn connect_to_fake(script: &[(i64, bool)], linger: bool) -> std::io::Error {
    let dir = TempDir::new("fake");
    let socket = dir.0.join("sock");
    let listener = UnixListener::bind(&socket).unwrap();
    let script = script.to_vec();
    let memfd = {
        let file = std::fs::File::create(dir.0.join("mem")).unwrap();
        file.set_len(4096).unwrap();
        OwnedFd::from(file)
    };
    let server = thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        for (value, fd) in script {
            send_message(stream.as_fd(), value, fd.then(|| memfd.as_fd())).unwrap();
        }
        if linger {
            thread::sleep(Duration::from_secs(12));
        }
    });
    let err = Peer::connect(&socket, 1).unwrap_err();
    drop(server);
    err
}

#[test]
fn client_rejects_a_wrong_protocol_version() {
    let err = connect_to_fake(&[(1, false), (0, false)], false);
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    assert!(err.to_string().contains("protocol version 1"), "{err}");
}

#[test]
fn client_rejects_a_shared_memory_message_without_descriptor() {
    let err = connect_to_fake(&[(0, false), (0, false), (-1, false)], false);
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    assert!(err.to_string().contains("shared-memory message"), "{err}");
}

#[test]
fn client_rejects_an_id_out_of_range() {
    let err = connect_to_fake(&[(0, false), (70000, false)], false);
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    assert!(err.to_string().contains("invalid peer id"), "{err}");
}

#[test]
fn client_reports_a_server_that_hangs_up() {
    let err = connect_to_fake(&[(0, false), (0, false)], false);
    assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof);
    assert!(
        err.to_string().contains("server closed the connection"),
        "{err}"
    );
}

#[test]
fn client_gives_up_on_a_silent_server() {
    let start = Instant::now();
    let err = connect_to_fake(&[(0, false), (0, false), (-1, true)], true);
    assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
    assert!(err.to_string().contains("our eventfds"), "{err}");
    assert!(start.elapsed() < Duration::from_secs(12));
}

/// QEMU under `qtest`: commands on its standard input, answers on its output.
struct Qtest {
    child: Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
}

impl Qtest {
    /// Sends one command; returns the answer's value (after `OK`), if any.
    fn cmd(&mut self, cmd: &str) -> Option<u64> {
        writeln!(self.stdin, "{cmd}").unwrap();
        self.stdin.flush().unwrap();
        loop {
            let mut line = String::new();
            assert_ne!(
                self.stdout.read_line(&mut line).unwrap(),
                0,
                "QEMU quit at {cmd:?}"
            );
            let mut words = line.split_whitespace();
            match words.next() {
                Some("OK") => {
                    return words
                        .next()
                        .map(|v| u64::from_str_radix(v.trim_start_matches("0x"), 16).unwrap())
                }
                Some("FAIL" | "ERR") => panic!("{cmd}: {line}"),
                _ => {}
            }
        }
    }

    /// Writes PCI configuration space of bus 0 `devfn` at `offset`.
    fn config_write(&mut self, devfn: u32, offset: u32, value: u32) {
        self.cmd(&format!(
            "outl 0xcf8 {:#x}",
            0x8000_0000 | devfn << 8 | offset
        ));
        self.cmd(&format!("outl 0xcfc {value:#x}"));
    }

    fn config_read(&mut self, devfn: u32, offset: u32) -> u32 {
        self.cmd(&format!(
            "outl 0xcf8 {:#x}",
            0x8000_0000 | devfn << 8 | offset
        ));
        self.cmd("inl 0xcfc").unwrap() as u32
    }
}

impl Drop for Qtest {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn qemu_ivshmem_doorbell_works_with_the_server() {
    // Not skipped when QEMU is missing: a skip would pass on exactly the machine that
    // lacks the install step. `tests/run.sh` ensures it (`cargo xtask tools ensure`).
    let qemu = Command::new("qemu-system-x86_64")
        .arg("--version")
        .output()
        .expect("qemu-system-x86_64 not found: install Debian's qemu-system-x86");
    assert!(qemu.status.success());
    let dir = TempDir::new("qemu");
    let name = unique("qemu");
    let server = Server::start(&dir.0, &name, &["-l", "1M"]);
    let mut a = Peer::connect(&server.socket, 1).unwrap();

    let mut child = Command::new("qemu-system-x86_64")
        .args(["-M", "q35", "-display", "none", "-nodefaults", "-S"])
        .args(["-qtest", "stdio", "-chardev"])
        .arg(format!(
            "socket,path={},id=vgsp-ivshmem",
            server.socket.display()
        ))
        .args(["-device", "ivshmem-doorbell,chardev=vgsp-ivshmem,vectors=1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let mut qtest = Qtest {
        child,
        stdin,
        stdout,
    };

    // QEMU is a peer like any other.
    let qemu_id = match next_event(&mut a) {
        PeerEvent::Joined(id) => id,
        other => panic!("expected QEMU to join, got {other:?}"),
    };
    assert_ne!(qemu_id, a.id());

    // Find the device (1af4:1110) and map BAR0 (registers) and BAR2 (the memory).
    let devfn = (0..32u32)
        .map(|dev| dev << 3)
        .find(|&devfn| qtest.config_read(devfn, 0) == 0x1110_1af4)
        .expect("no ivshmem device");
    const BAR0: u64 = 0xfe00_0000;
    const BAR2: u64 = 0xe000_0000;
    qtest.config_write(devfn, 0x10, BAR0 as u32);
    qtest.config_write(devfn, 0x18, BAR2 as u32);
    qtest.config_write(devfn, 0x1c, 0);
    // Memory space on.
    qtest.config_write(devfn, 0x04, 0x2);

    // IVPosition is the id the server gave QEMU.
    assert_eq!(
        qtest.cmd(&format!("readl {:#x}", BAR0 + 8)),
        Some(qemu_id.into())
    );

    // BAR2 is our shared memory, both ways.
    let map = a.map_shared_memory().unwrap();
    qtest.cmd(&format!("writel {:#x} 0x12345678", BAR2 + 0x1000));
    // SAFETY: Inside the mapping.
    let word = unsafe { map.as_ptr().add(0x1000).cast::<u32>().read_volatile() };
    assert_eq!(word, 0x1234_5678);
    // SAFETY: Inside the mapping.
    unsafe {
        map.as_ptr()
            .add(0xf_fff0)
            .cast::<u32>()
            .write_volatile(0xcafe_f00d)
    };
    assert_eq!(
        qtest.cmd(&format!("readl {:#x}", BAR2 + 0xf_fff0)),
        Some(0xcafe_f00d)
    );

    // The doorbell register rings our eventfd: peer id in bits 31..16, vector below.
    qtest.cmd(&format!(
        "writel {:#x} {:#x}",
        BAR0 + 0xc,
        u32::from(a.id()) << 16
    ));
    assert_eq!(
        next_event(&mut a),
        PeerEvent::Doorbell {
            vector: 0,
            count: 1
        }
    );
    // And it knows QEMU's eventfd.
    a.notify(qemu_id, 0).unwrap();

    // QEMU's end is a departure.
    drop(qtest);
    assert_eq!(next_event(&mut a), PeerEvent::Left(qemu_id));
}
