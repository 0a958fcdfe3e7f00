// SPDX-License-Identifier: GPL-2.0

//! A peer of an ivshmem server: the role QEMU's `ivshmem-doorbell` device plays.
//!
//! The server speaks first and only: little-endian `i64` messages on a UNIX stream
//! socket, some carrying one file descriptor (`SCM_RIGHTS`):
//!
//! 1. [`PROTOCOL_VERSION`], no descriptor.
//! 2. The peer's own id, no descriptor.
//! 3. [`SHM_MESSAGE`] with the shared-memory descriptor.
//! 4. For every other peer, its id once per vector, each with that peer's eventfd for
//!    the vector.
//! 5. The peer's own id once per vector, each with its own eventfd.
//!
//! Later, an id with a descriptor is a new peer's eventfd (one message per vector), an id
//! without one a departed peer. A peer rings another's doorbell by writing the `u64`
//! value 1 to that peer's eventfd for the vector, and is rung when one of its own
//! eventfds becomes readable.
//!
//! [`Peer`] connects, keeps the table of peers and their eventfds, and turns doorbells
//! and server messages into [`PeerEvent`]s.

use std::{
    collections::{
        BTreeMap,
        VecDeque, //
    },
    fmt,
    io,
    mem, //
    os::{
        fd::{
            AsFd,
            AsRawFd,
            BorrowedFd,
            FromRawFd,
            OwnedFd,
            RawFd, //
        },
        unix::net::UnixStream,
    },
    path::Path,
    ptr::{
        self,
        NonNull, //
    },
    time::{
        Duration,
        Instant, //
    },
};

/// The protocol version, the server's first message.
pub const PROTOCOL_VERSION: i64 = 0;

/// The value of the message that carries the shared-memory descriptor.
pub const SHM_MESSAGE: i64 = -1;

/// The largest peer id: QEMU's doorbell register holds the id in 16 bits.
pub const MAX_PEER_ID: u16 = u16::MAX;

/// How long [`Peer::connect`] waits for the server's initial messages.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The size of one message on the wire.
const MESSAGE_LEN: usize = mem::size_of::<i64>();

/// How many descriptors one `recvmsg` makes room for. The protocol attaches at most one;
/// the room for more lets a misbehaving server be told apart from a truncation.
const MAX_RECEIVED_FDS: usize = 4;

/// The control-buffer room for [`MAX_RECEIVED_FDS`] descriptors.
// SAFETY: `CMSG_SPACE` only computes a size.
// CAST: a few descriptors' worth of bytes fits any integer.
const CONTROL_SPACE: usize =
    unsafe { libc::CMSG_SPACE((MAX_RECEIVED_FDS * mem::size_of::<RawFd>()) as u32) } as usize;

/// The control buffer in `u64`s (which align it for `cmsghdr`).
const CONTROL_WORDS: usize = CONTROL_SPACE.div_ceil(mem::size_of::<u64>());

/// Returns `err` with `what` in front of its message, keeping its kind.
pub(crate) fn context(err: io::Error, what: impl fmt::Display) -> io::Error {
    io::Error::new(err.kind(), format!("{what}: {err}"))
}

/// The last OS error with `what` in front of its message.
pub(crate) fn os_error(what: impl fmt::Display) -> io::Error {
    context(io::Error::last_os_error(), what)
}

/// A protocol violation by the server.
fn invalid(what: impl fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// The error for a server that hung up.
fn server_closed() -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, "server closed the connection")
}

/// One message from the server.
#[derive(Debug)]
pub struct Message {
    /// The value: the protocol version, a peer id or [`SHM_MESSAGE`].
    pub value: i64,
    /// The descriptor that came with it, if any.
    pub fd: Option<OwnedFd>,
}

/// What one attempt to read a message produced.
#[derive(Debug)]
pub enum Received {
    /// A whole message.
    Message(Message),
    /// Nothing more is available now; a partial message stays buffered.
    WouldBlock,
    /// The server closed the connection (between messages).
    Eof,
}

/// Reassembles messages from a non-blocking stream: a message may arrive in pieces, and
/// its descriptor with the first of them.
#[derive(Debug, Default)]
pub struct MessageReader {
    buf: [u8; MESSAGE_LEN],
    have: usize,
    fd: Option<OwnedFd>,
}

impl MessageReader {
    /// Reads from `socket` without blocking until a message is complete, nothing more is
    /// available, or the stream ends.
    ///
    /// # Errors
    ///
    /// - The error of `recvmsg`, other than `EAGAIN` and `EINTR`.
    /// - `InvalidData` if a message carries more than one descriptor or descriptors were
    ///   truncated.
    /// - `UnexpectedEof` if the stream ends in the middle of a message.
    pub fn read(&mut self, socket: BorrowedFd<'_>) -> io::Result<Received> {
        loop {
            let (n, fds) = match recv_with_fds(socket, &mut self.buf[self.have..]) {
                Ok(got) => got,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                    return Ok(Received::WouldBlock)
                }
                Err(err) => return Err(err),
            };
            if n == 0 {
                if self.have == 0 {
                    return Ok(Received::Eof);
                }
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "server closed the connection in the middle of a message ({} of {MESSAGE_LEN} bytes)",
                        self.have
                    ),
                ));
            }
            let count = fds.len() + usize::from(self.fd.is_some());
            if count > 1 {
                return Err(invalid(format!(
                    "server sent a message with {count} file descriptors, expected at most one"
                )));
            }
            if let Some(fd) = fds.into_iter().next() {
                self.fd = Some(fd);
            }
            self.have += n;
            if self.have == MESSAGE_LEN {
                self.have = 0;
                return Ok(Received::Message(Message {
                    value: i64::from_le_bytes(self.buf),
                    fd: self.fd.take(),
                }));
            }
        }
    }
}

/// One non-blocking `recvmsg` into `buf`, with the descriptors that came along.
fn recv_with_fds(socket: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    // `u64` elements align the control buffer for `cmsghdr`.
    let mut control = [0u64; CONTROL_WORDS];

    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: `msghdr` is plain data; all-zero is a valid (empty) value.
    let mut msg: libc::msghdr = unsafe { mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = CONTROL_SPACE;

    // SAFETY: `msg` points at `iov` (describing `buf`) and `control`, all live and
    // writable for the call; the kernel writes at most their lengths.
    let n = unsafe {
        libc::recvmsg(
            socket.as_raw_fd(),
            &mut msg,
            libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC,
        )
    };
    if n < 0 {
        return Err(os_error("recvmsg from the ivshmem server"));
    }

    let mut fds = Vec::new();
    // SAFETY: `msg` was filled by `recvmsg`; `CMSG_FIRSTHDR`/`CMSG_NXTHDR` stay within
    // `msg_controllen` bytes of `control`.
    let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(&msg) };
    while !cmsg.is_null() {
        // SAFETY: `cmsg` is non-null and points at a header inside `control`.
        let header = unsafe { &*cmsg };
        if header.cmsg_level == libc::SOL_SOCKET && header.cmsg_type == libc::SCM_RIGHTS {
            // SAFETY: `CMSG_LEN(0)` only computes a size.
            let data_len =
                (header.cmsg_len as usize).saturating_sub(unsafe { libc::CMSG_LEN(0) } as usize);
            for i in 0..data_len / mem::size_of::<RawFd>() {
                // SAFETY: the data of an `SCM_RIGHTS` header holds `data_len` bytes of
                // descriptors, possibly unaligned; `i` stays below their count.
                let raw = unsafe {
                    libc::CMSG_DATA(cmsg)
                        .cast::<RawFd>()
                        .add(i)
                        .read_unaligned()
                };
                // SAFETY: the kernel installed `raw` in our table for us; nothing else
                // owns it.
                fds.push(unsafe { OwnedFd::from_raw_fd(raw) });
            }
        }
        // SAFETY: as for `CMSG_FIRSTHDR`; `cmsg` is a header of `msg`.
        cmsg = unsafe { libc::CMSG_NXTHDR(&msg, cmsg) };
    }
    if msg.msg_flags & libc::MSG_CTRUNC != 0 {
        return Err(invalid(
            "server sent more file descriptors than a message may carry (truncated)",
        ));
    }
    // CAST: `n` is non-negative here.
    Ok((n as usize, fds))
}

/// Waits up to `timeout` for `fd` to be ready for `events`; a signal ends the wait early,
/// as if it were ready (the caller tries again).
///
/// # Errors
///
/// - The error of `poll`.
pub(crate) fn wait_ready(fd: BorrowedFd<'_>, events: i16, timeout: Duration) -> io::Result<()> {
    let mut fds = [libc::pollfd {
        fd: fd.as_raw_fd(),
        events,
        revents: 0,
    }];
    match poll(&mut fds, Some(timeout)) {
        Err(err) if err.kind() != io::ErrorKind::Interrupted => Err(err),
        _ => Ok(()),
    }
}

/// Polls `fds` for `events`; returns how many have events.
///
/// `timeout` `None` waits forever; it is rounded up to whole milliseconds.
pub(crate) fn poll(fds: &mut [libc::pollfd], timeout: Option<Duration>) -> io::Result<usize> {
    let ms = match timeout {
        None => -1,
        Some(t) => {
            let ms = t.as_nanos().div_ceil(1_000_000);
            i32::try_from(ms).unwrap_or(i32::MAX)
        }
    };
    // SAFETY: `fds` is a live, writable slice of `fds.len()` `pollfd`s.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    if n < 0 {
        return Err(os_error("poll"));
    }
    // CAST: non-negative here.
    Ok(n as usize)
}

/// Something that happened to a [`Peer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerEvent {
    /// One of our doorbells rang: `count` is the eventfd's counter, the number of
    /// notifications since it was last read.
    Doorbell {
        /// The vector rung.
        vector: u16,
        /// The notifications folded into this event.
        count: u64,
    },
    /// A new peer with this id connected to the server; its eventfds for all our
    /// vectors have arrived.
    Joined(u16),
    /// The peer with this id disconnected.
    Left(u16),
    /// The timeout of [`Peer::wait_event`] passed.
    Timeout,
}

/// A client of an ivshmem server.
///
/// # Invariants
///
/// `own.len() == vectors`.
#[derive(Debug)]
pub struct Peer {
    socket: UnixStream,
    reader: MessageReader,
    id: u16,
    vectors: u16,
    shm: OwnedFd,
    own: Vec<OwnedFd>,
    peers: BTreeMap<u16, Vec<OwnedFd>>,
    pending: VecDeque<PeerEvent>,
    closed: bool,
}

/// The peer id in `value`, if it is one.
fn peer_id(value: i64) -> Option<u16> {
    u16::try_from(value).ok()
}

impl Peer {
    /// Connects to the server at `path` and reads its initial messages up to and
    /// including our own `vectors` eventfds.
    ///
    /// Peers that are already connected are in [`Peer::peers`]; they produce no
    /// [`PeerEvent::Joined`]. If the server has more vectors than `vectors`, the eventfds
    /// of ours beyond them are closed as they arrive, as QEMU's device does.
    ///
    /// # Errors
    ///
    /// - The error of `connect` (e.g. `NotFound`, `ConnectionRefused`) with the path.
    /// - `InvalidInput` if `vectors` is 0.
    /// - `InvalidData` if the protocol version is not 0, the id or shared-memory message
    ///   is malformed or missing its descriptor, or another message is malformed.
    /// - `UnexpectedEof` if the server closes the connection first.
    /// - `TimedOut` if the initial messages do not arrive within [`CONNECT_TIMEOUT`]
    ///   (e.g. the server has fewer vectors than `vectors`).
    pub fn connect(path: &Path, vectors: u16) -> io::Result<Peer> {
        if vectors == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a peer needs at least one vector",
            ));
        }
        let socket = UnixStream::connect(path).map_err(|err| {
            context(
                err,
                format_args!("cannot connect to the ivshmem server at {}", path.display()),
            )
        })?;
        let deadline = Instant::now() + CONNECT_TIMEOUT;
        let mut reader = MessageReader::default();
        let mut next = |what: &str| next_message(&socket, &mut reader, deadline, what);

        let version = next("the protocol version")?;
        if version.value != PROTOCOL_VERSION || version.fd.is_some() {
            return Err(invalid(format!(
                "server speaks ivshmem protocol version {}{}, expected {PROTOCOL_VERSION}",
                version.value,
                with_fd(&version)
            )));
        }
        let id_msg = next("our peer id")?;
        let id = match (peer_id(id_msg.value), &id_msg.fd) {
            (Some(id), None) => id,
            _ => {
                return Err(invalid(format!(
                    "server sent an invalid peer id message: {}{}",
                    id_msg.value,
                    with_fd(&id_msg)
                )))
            }
        };
        let shm_msg = next("the shared-memory descriptor")?;
        let shm = match shm_msg {
            Message {
                value: SHM_MESSAGE,
                fd: Some(fd),
            } => fd,
            other => {
                return Err(invalid(format!(
                    "expected the shared-memory message ({SHM_MESSAGE} with a file descriptor), got {}{}",
                    other.value,
                    with_fd(&other)
                )))
            }
        };

        let mut peer = Peer {
            socket,
            reader: MessageReader::default(),
            id,
            vectors,
            shm,
            own: Vec::new(),
            peers: BTreeMap::new(),
            pending: VecDeque::new(),
            closed: false,
        };
        while peer.own.len() < usize::from(vectors) {
            let what = format!(
                "our eventfds ({} of {vectors} received; does the server have fewer vectors?)",
                peer.own.len()
            );
            let msg = next_message(&peer.socket, &mut reader, deadline, &what)?;
            peer.handle_message(msg, false)?;
        }
        peer.reader = reader;
        // INVARIANT: the loop ran until `own` held `vectors` eventfds, and
        // `handle_message` adds no more.
        Ok(peer)
    }

    /// Our peer id, the one the server gave us.
    pub fn id(&self) -> u16 {
        self.id
    }

    /// How many vectors (own eventfds) we have.
    pub fn vectors(&self) -> u16 {
        self.vectors
    }

    /// The other peers currently known, sorted by id.
    pub fn peers(&self) -> Vec<u16> {
        self.peers.keys().copied().collect()
    }

    /// How many eventfds (vectors) of `peer` we know; `None` for an unknown peer.
    pub fn peer_vectors(&self, peer: u16) -> Option<usize> {
        if peer == self.id {
            return Some(self.own.len());
        }
        self.peers.get(&peer).map(Vec::len)
    }

    /// Maps the whole shared memory, shared with the other peers.
    ///
    /// # Errors
    ///
    /// - The error of `fstat` or `mmap`.
    /// - `InvalidData` if the shared memory is empty or larger than the address space.
    pub fn map_shared_memory(&self) -> io::Result<SharedMemory> {
        SharedMemory::map(self.shm.as_fd())
    }

    /// The shared-memory descriptor the server sent.
    pub fn shared_memory_fd(&self) -> BorrowedFd<'_> {
        self.shm.as_fd()
    }

    /// Rings `peer`'s doorbell for `vector`: writes 1 to its eventfd. Our own id rings
    /// our own doorbell.
    ///
    /// # Errors
    ///
    /// - `NotFound` if `peer` is not connected or we know no eventfd of it for `vector`.
    /// - The error of `write`.
    pub fn notify(&self, peer: u16, vector: u16) -> io::Result<()> {
        let fds = if peer == self.id {
            &self.own
        } else {
            self.peers.get(&peer).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("peer {peer} is not connected to the ivshmem server"),
                )
            })?
        };
        let fd = fds.get(usize::from(vector)).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "peer {peer} has no vector {vector} (it has {} vectors)",
                    fds.len()
                ),
            )
        })?;
        let one = 1u64.to_ne_bytes();
        loop {
            // SAFETY: `one` is 8 readable bytes; `fd` is a live eventfd.
            let n = unsafe { libc::write(fd.as_raw_fd(), one.as_ptr().cast(), one.len()) };
            if n == one.len() as isize {
                return Ok(());
            }
            let err = io::Error::last_os_error();
            match err.kind() {
                io::ErrorKind::Interrupted if n < 0 => continue,
                // The counter is saturated: the doorbell is already pending.
                io::ErrorKind::WouldBlock if n < 0 => return Ok(()),
                _ if n < 0 => {
                    return Err(context(
                        err,
                        format_args!("cannot ring the doorbell of peer {peer} vector {vector}"),
                    ))
                }
                _ => {
                    return Err(io::Error::other(format!(
                        "short write of {n} bytes to the eventfd of peer {peer} vector {vector}"
                    )))
                }
            }
        }
    }

    /// Waits for the next event: one of our doorbells (its eventfd is read, clearing
    /// it), a peer joining or leaving, or `timeout` passing (`None` waits forever).
    ///
    /// Events that become ready together are returned one per call, in order: doorbells
    /// first, then server messages in the order sent.
    ///
    /// # Errors
    ///
    /// - `UnexpectedEof` ("server closed the connection") once the server has hung up
    ///   and every event before that has been returned; again on every later call.
    /// - `InvalidData` for a malformed server message (it is consumed; later calls
    ///   continue with the next one).
    /// - The error of `poll`, `read` or `recvmsg`.
    pub fn wait_event(&mut self, timeout: Option<Duration>) -> io::Result<PeerEvent> {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Ok(event);
            }
            if self.closed {
                return Err(server_closed());
            }
            let remaining = match (timeout, deadline) {
                (None, _) => None,
                (Some(_), Some(deadline)) => {
                    Some(deadline.saturating_duration_since(Instant::now()))
                }
                // The deadline overflowed: as good as forever.
                (Some(_), None) => None,
            };

            let mut fds = Vec::with_capacity(1 + self.own.len());
            fds.push(libc::pollfd {
                fd: self.socket.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
            fds.extend(self.own.iter().map(|fd| libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            }));
            match poll(&mut fds, remaining) {
                Ok(0) => {
                    if remaining.is_some() {
                        return Ok(PeerEvent::Timeout);
                    }
                    continue;
                }
                Ok(_) => {}
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(err),
            }

            for (vector, pfd) in fds[1..].iter().enumerate() {
                if pfd.revents == 0 {
                    continue;
                }
                if let Some(count) = read_eventfd(self.own[vector].as_fd())? {
                    // CAST: `vector` < `self.vectors`, a `u16`.
                    self.pending.push_back(PeerEvent::Doorbell {
                        vector: vector as u16,
                        count,
                    });
                }
            }
            if fds[0].revents != 0 {
                self.drain_socket()?;
            }
        }
    }

    /// Reads every message available on the socket and handles it.
    fn drain_socket(&mut self) -> io::Result<()> {
        loop {
            match self.reader.read(self.socket.as_fd())? {
                Received::Message(msg) => self.handle_message(msg, true)?,
                Received::WouldBlock => return Ok(()),
                Received::Eof => {
                    self.closed = true;
                    return Ok(());
                }
            }
        }
    }

    /// Applies one message after the shared-memory one to the peer table, queueing
    /// [`PeerEvent`]s if `announce`.
    fn handle_message(&mut self, msg: Message, announce: bool) -> io::Result<()> {
        let Some(id) = peer_id(msg.value) else {
            return Err(invalid(format!(
                "server sent an invalid message: {}{}",
                msg.value,
                with_fd(&msg)
            )));
        };
        match msg.fd {
            Some(fd) if id == self.id => {
                // Beyond our vectors, QEMU's device refuses it too; closing it is all
                // that is left.
                if self.own.len() < usize::from(self.vectors) {
                    self.own.push(fd);
                }
            }
            Some(fd) => {
                let vectors = self.peers.entry(id).or_default();
                vectors.push(fd);
                // Announced once it can be rung on each of our vectors.
                if vectors.len() == usize::from(self.vectors) && announce {
                    self.pending.push_back(PeerEvent::Joined(id));
                }
            }
            None if id == self.id => {
                return Err(invalid(format!(
                    "server announced our own id {id} as departed"
                )));
            }
            None => {
                if self.peers.remove(&id).is_some() && announce {
                    self.pending.push_back(PeerEvent::Left(id));
                }
            }
        }
        Ok(())
    }
}

/// `" with a file descriptor"` if `msg` has one, for error messages.
fn with_fd(msg: &Message) -> &'static str {
    if msg.fd.is_some() {
        " with a file descriptor"
    } else {
        " without a file descriptor"
    }
}

/// Reads the next whole message, waiting at most until `deadline`.
fn next_message(
    socket: &UnixStream,
    reader: &mut MessageReader,
    deadline: Instant,
    what: &str,
) -> io::Result<Message> {
    loop {
        match reader.read(socket.as_fd()) {
            Ok(Received::Message(msg)) => return Ok(msg),
            Ok(Received::WouldBlock) => {}
            Ok(Received::Eof) => {
                return Err(context(server_closed(), format_args!("waiting for {what}")))
            }
            Err(err) => return Err(context(err, format_args!("waiting for {what}"))),
        }
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the ivshmem server sent nothing for {} s while we were waiting for {what}",
                    CONNECT_TIMEOUT.as_secs()
                ),
            ));
        }
        wait_ready(socket.as_fd(), libc::POLLIN, remaining)?;
    }
}

/// Reads an eventfd's counter, clearing it; `None` if it was zero (non-blocking).
///
/// # Errors
///
/// The error of `read`, other than `EAGAIN` and `EINTR`.
pub fn read_eventfd(fd: BorrowedFd<'_>) -> io::Result<Option<u64>> {
    let mut fds = [libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }];
    // A blocking eventfd would block `read` on a zero counter; check first. Only the
    // owner reads its eventfds, so readiness cannot go away in between.
    if poll(&mut fds, Some(Duration::ZERO))? == 0 {
        return Ok(None);
    }
    let mut value = [0u8; 8];
    loop {
        // SAFETY: `value` is 8 writable bytes; `fd` is a live descriptor.
        let n = unsafe { libc::read(fd.as_raw_fd(), value.as_mut_ptr().cast(), value.len()) };
        if n == value.len() as isize {
            return Ok(Some(u64::from_ne_bytes(value)));
        }
        let err = io::Error::last_os_error();
        match err.kind() {
            io::ErrorKind::Interrupted if n < 0 => continue,
            io::ErrorKind::WouldBlock if n < 0 => return Ok(None),
            _ if n < 0 => return Err(context(err, "cannot read our eventfd")),
            _ => {
                return Err(io::Error::other(format!(
                    "short read of {n} bytes from our eventfd"
                )))
            }
        }
    }
}

/// A mapping of the whole shared memory.
///
/// Other processes write it at any time: it is only handed out as a raw pointer, and
/// accesses through it must be volatile or atomic as the protocol on top requires.
///
/// # Invariants
///
/// `ptr` is the start of a live `MAP_SHARED` mapping of `len` (> 0) bytes, readable and
/// writable, owned by this value.
#[derive(Debug)]
pub struct SharedMemory {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: The mapping belongs to the process, not to a thread; this type only hands out
// the raw pointer, through which every access is the user's own (unsafe) business, and
// unmaps once on drop.
unsafe impl Send for SharedMemory {}

// SAFETY: `&SharedMemory` only reads `ptr` and `len`, which never change.
unsafe impl Sync for SharedMemory {}

impl SharedMemory {
    /// Maps the whole file behind `fd`, read-write and shared.
    ///
    /// # Errors
    ///
    /// - The error of `fstat` or `mmap`.
    /// - `InvalidData` if the file is empty or larger than the address space.
    pub fn map(fd: BorrowedFd<'_>) -> io::Result<SharedMemory> {
        // SAFETY: `stat` is plain data; all-zero is a valid value.
        let mut stat: libc::stat = unsafe { mem::zeroed() };
        // SAFETY: `fd` is live; `stat` is writable.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut stat) } != 0 {
            return Err(os_error("cannot fstat the shared memory"));
        }
        let len = usize::try_from(stat.st_size)
            .map_err(|_| invalid(format!("shared memory size {} is invalid", stat.st_size)))?;
        if len == 0 {
            return Err(invalid("the shared memory is empty"));
        }
        // SAFETY: A fresh mapping chosen by the kernel (`addr` null), of a live
        // descriptor; it overlaps nothing of ours.
        let ptr = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(os_error(format_args!(
                "cannot map the shared memory ({len} bytes)"
            )));
        }
        let ptr = NonNull::new(ptr.cast::<u8>())
            .ok_or_else(|| io::Error::other("mmap returned a null mapping"))?;
        // INVARIANT: `mmap` succeeded for `len` > 0 bytes, read-write, shared.
        Ok(SharedMemory { ptr, len })
    }

    /// The start of the mapping.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The size of the mapping in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always `false`: an empty shared memory is refused by [`SharedMemory::map`].
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for SharedMemory {
    fn drop(&mut self) {
        // SAFETY: By the type invariant, `ptr`/`len` are our mapping, unmapped only here.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}
