// SPDX-License-Identifier: GPL-2.0

//! An ivshmem server, the counterpart of QEMU's `contrib/ivshmem-server` (which Debian
//! does not ship).
//!
//! The server owns the shared memory and one eventfd per peer and vector, and hands
//! them out over a UNIX stream socket (the protocol is in [`crate::client`]): a new
//! peer gets the shared memory, every other peer's eventfds and its own; the others get
//! the new peer's eventfds; when a peer goes, the others get its id without a
//! descriptor. A peer that sends anything is dropped, as QEMU's server does: the
//! protocol has nothing for a peer to say.
//!
//! Peer ids count up from 0 (wrapping in the 16 bits of QEMU's doorbell register),
//! skipping ids in use; a departed peer's id is not reused until the count wraps.
//!
//! A new peer is announced to the others only once its own setup messages are sent
//! and it has not hung up meanwhile: a client that is gone by then (typically a second
//! server checking whether this one is alive, see below) is dropped unannounced and
//! does not use up an id. A client that stays a little longer does show up to the
//! others as a peer that joined and left.
//!
//! Files:
//!
//! - The socket: if its path exists and a server answers there, the new server refuses
//!   to start; if it is a socket nobody listens on (a killed server's leftover), it is
//!   removed and taken over.
//! - The shared memory: with a name (`-M`), `/dev/shm/NAME`. The server holds an
//!   exclusive `flock` on it while it runs. An existing file that is locked belongs to a
//!   live server: the new one refuses to start. An unlocked one is a leftover: it is
//!   unlinked (never truncated, so a process still mapping it keeps its memory) and a
//!   fresh file is created exclusively. With a directory (`-m`), an unnamed file there,
//!   as QEMU's server does.
//!
//! Both files are removed when the server stops ([`Server::close`] or drop), provided
//! they are still the ones it created.

use std::{
    collections::BTreeMap,
    ffi::{
        CString,
        OsStr,
        OsString, //
    },
    fmt,
    fs, //
    io::{
        self,
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
            ffi::OsStrExt,
            fs::{
                MetadataExt,
                OpenOptionsExt, //
            },
            net::{
                UnixListener,
                UnixStream, //
            },
        },
    },
    path::{
        Path,
        PathBuf, //
    },
    time::{
        Duration,
        Instant, //
    },
};

use crate::client::{
    context,
    os_error,
    poll,
    wait_ready,
    PROTOCOL_VERSION,
    SHM_MESSAGE, //
};

/// The most vectors a server hands out per peer (as QEMU's server).
pub const MAX_VECTORS: u16 = 64;

/// The socket path without `-S` (QEMU's default).
pub const DEFAULT_SOCKET_PATH: &str = "/tmp/ivshmem_socket";

/// The shared-memory name without `-M`/`-m` (QEMU's default).
pub const DEFAULT_SHM_NAME: &str = "ivshmem";

/// The shared-memory size without `-l` (QEMU's default): 4 MiB.
pub const DEFAULT_SHM_SIZE: u64 = 4 << 20;

/// Where `shm_open` names live.
pub const SHM_DIR: &str = "/dev/shm";

/// How long a send to a peer may wait for room in its socket before the peer is
/// dropped as not reading.
const SEND_PATIENCE: Duration = Duration::from_secs(1);

/// The command-line usage of `ivshmem-server`.
pub const USAGE: &str = "\
Usage: ivshmem-server [-F] [-v] [-S SOCKET_PATH] [-M SHM_NAME | -m SHM_DIR] [-l SIZE] [-n VECTORS]

  -S SOCKET_PATH  the UNIX socket to listen on (default /tmp/ivshmem_socket)
  -M SHM_NAME     the shared memory, created as /dev/shm/SHM_NAME (default ivshmem)
  -m SHM_DIR      the shared memory, an unnamed file created in SHM_DIR
  -l SIZE         its size in bytes, a power of two; suffixes K, M, G, T (default 4M)
  -n VECTORS      eventfds per peer, 1 to 64 (default 1)
  -F              run in the foreground (always; accepted for compatibility)
  -v              log peers joining and leaving to standard error
  -h              this help

Stops on SIGTERM, SIGINT or SIGHUP, removing the socket and the shared memory.
";

/// Where the shared memory lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShmBacking {
    /// `/dev/shm/NAME`, via `shm_open`.
    Named(String),
    /// An unnamed (created and unlinked) file in this directory.
    Directory(PathBuf),
}

impl fmt::Display for ShmBacking {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShmBacking::Named(name) => write!(f, "{SHM_DIR}/{name}"),
            ShmBacking::Directory(dir) => write!(f, "an unnamed file in {}", dir.display()),
        }
    }
}

/// What the server is to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The UNIX socket to listen on.
    pub socket_path: PathBuf,
    /// The shared memory.
    pub shm: ShmBacking,
    /// The shared-memory size in bytes, a power of two.
    pub size: u64,
    /// Eventfds per peer.
    pub vectors: u16,
    /// Log joins and leaves to standard error.
    pub verbose: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            socket_path: PathBuf::from(DEFAULT_SOCKET_PATH),
            shm: ShmBacking::Named(DEFAULT_SHM_NAME.into()),
            size: DEFAULT_SHM_SIZE,
            vectors: 1,
            verbose: false,
        }
    }
}

impl Config {
    /// Checks the values a command line cannot already have checked.
    ///
    /// # Errors
    ///
    /// `InvalidInput` with the reason if the size is not a power of two (or too large),
    /// the vector count is not in `1..=MAX_VECTORS`, or the shared-memory name is not a
    /// plain file name.
    pub fn validate(&self) -> io::Result<()> {
        check_size(self.size).map_err(invalid_input)?;
        check_vectors(self.vectors).map_err(invalid_input)?;
        if let ShmBacking::Named(name) = &self.shm {
            check_shm_name(name).map_err(invalid_input)?;
        }
        Ok(())
    }
}

/// An `InvalidInput` error with `msg`.
fn invalid_input(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Serve.
    Run(Config),
    /// Print [`USAGE`].
    Help,
}

/// Parses `ivshmem-server`'s arguments (without the program name), `getopt` style:
/// `-S PATH` or `-SPATH`, flags combinable (`-vF`).
///
/// # Errors
///
/// A message naming the offending argument.
pub fn parse_args(args: impl IntoIterator<Item = OsString>) -> Result<Command, String> {
    let mut config = Config::default();
    let mut shm_given = None;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let bytes = arg.as_bytes();
        if bytes == b"--help" {
            return Ok(Command::Help);
        }
        if bytes.len() < 2 || bytes[0] != b'-' || bytes[1] == b'-' {
            return Err(format!("unexpected argument {:?}", arg));
        }
        let mut rest = &bytes[1..];
        while let Some((&flag, tail)) = rest.split_first() {
            rest = tail;
            match flag {
                b'F' => {}
                b'v' => config.verbose = true,
                b'h' => return Ok(Command::Help),
                b'S' | b'M' | b'm' | b'l' | b'n' => {
                    let value = if rest.is_empty() {
                        args.next()
                            .ok_or_else(|| format!("option -{} needs a value", flag as char))?
                    } else {
                        OsStr::from_bytes(rest).to_owned()
                    };
                    rest = &[];
                    match flag {
                        b'S' => config.socket_path = PathBuf::from(value),
                        b'M' | b'm' => {
                            let flag = flag as char;
                            if let Some(prev) = shm_given.replace(flag) {
                                return Err(format!(
                                    "-{prev} and -{flag} both give the shared memory; use one"
                                ));
                            }
                            config.shm = if flag == 'M' {
                                let name = value
                                    .into_string()
                                    .map_err(|v| format!("-M {v:?}: not UTF-8"))?;
                                let name = name.strip_prefix('/').unwrap_or(&name).to_owned();
                                check_shm_name(&name)?;
                                ShmBacking::Named(name)
                            } else {
                                ShmBacking::Directory(PathBuf::from(value))
                            };
                        }
                        b'l' => {
                            let text = value.to_string_lossy();
                            config.size =
                                parse_size(&text).map_err(|e| format!("-l {text}: {e}"))?;
                            check_size(config.size).map_err(|e| format!("-l {text}: {e}"))?;
                        }
                        _ => {
                            let text = value.to_string_lossy();
                            config.vectors = text
                                .parse()
                                .map_err(|_| format!("-n {text}: not a number of vectors"))?;
                            check_vectors(config.vectors).map_err(|e| format!("-n {text}: {e}"))?;
                        }
                    }
                }
                other => {
                    return Err(format!("unknown option -{}", other.escape_ascii()));
                }
            }
        }
    }
    Ok(Command::Run(config))
}

/// Parses a size: a decimal number with an optional suffix `K`, `M`, `G` or `T` (binary
/// multiples, either case) or `B`.
///
/// # Errors
///
/// A message if the text is not such a size or the size overflows 64 bits.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, suffix) = text.split_at(split);
    if digits.is_empty() {
        return Err("not a size (expected e.g. 4096, 64K, 1M)".into());
    }
    let shift = match suffix {
        "" | "B" | "b" => 0,
        "K" | "k" => 10,
        "M" | "m" => 20,
        "G" | "g" => 30,
        "T" | "t" => 40,
        _ => return Err(format!("unknown size suffix {suffix:?} (use K, M, G or T)")),
    };
    let number: u64 = digits.parse().map_err(|_| "size too large".to_owned())?;
    number
        .checked_mul(1 << shift)
        .ok_or_else(|| "size too large".into())
}

/// Checks a shared-memory size: a power of two (QEMU maps it as a PCI BAR) that fits
/// `off_t`.
fn check_size(size: u64) -> Result<(), String> {
    if size == 0 {
        return Err("the shared-memory size must not be zero".into());
    }
    if !size.is_power_of_two() {
        return Err(format!(
            "the shared-memory size {size} is not a power of two (QEMU's ivshmem BAR needs one)"
        ));
    }
    if i64::try_from(size).is_err() {
        return Err(format!("the shared-memory size {size} is too large"));
    }
    Ok(())
}

/// Checks a vector count.
fn check_vectors(vectors: u16) -> Result<(), String> {
    if vectors == 0 || vectors > MAX_VECTORS {
        return Err(format!(
            "the number of vectors must be between 1 and {MAX_VECTORS}, not {vectors}"
        ));
    }
    Ok(())
}

/// Checks a `shm_open` name (without its optional leading `/`).
fn check_shm_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\0']) {
        return Err(format!(
            "invalid shared-memory name {name:?}: it must be a plain file name"
        ));
    }
    if name.len() > 255 {
        return Err(format!("shared-memory name {name:?} is too long"));
    }
    Ok(())
}

/// Writes one line to standard error, `ivshmem-server: ` in front; a closed standard
/// error is not worth dying for.
fn log(args: fmt::Arguments<'_>) {
    let _ = writeln!(io::stderr().lock(), "ivshmem-server: {args}");
}

/// Whether `err` means the peer has simply gone away.
fn is_disconnect(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
    )
}

/// Sends one message: `value` little-endian, with `fd` attached if given.
///
/// Waits at most a second for room in a full socket.
///
/// # Errors
///
/// - The error of `sendmsg` or `poll` (`EPIPE` if the peer has gone: no `SIGPIPE`).
/// - `TimedOut` if the socket stays full (the peer does not read).
/// - `WriteZero` on a short send.
pub fn send_message(
    socket: BorrowedFd<'_>,
    value: i64,
    fd: Option<BorrowedFd<'_>>,
) -> io::Result<()> {
    let bytes = value.to_le_bytes();
    // `u64` elements align the control buffer for `cmsghdr`.
    let mut control = [0u64; 4];
    // SAFETY: `CMSG_SPACE`/`CMSG_LEN` only compute sizes.
    let (space, len) = unsafe {
        (
            libc::CMSG_SPACE(mem::size_of::<RawFd>() as u32) as usize,
            libc::CMSG_LEN(mem::size_of::<RawFd>() as u32) as usize,
        )
    };
    let deadline = Instant::now() + SEND_PATIENCE;
    loop {
        let mut iov = libc::iovec {
            iov_base: bytes.as_ptr().cast_mut().cast(),
            iov_len: bytes.len(),
        };
        // SAFETY: `msghdr` is plain data; all-zero is a valid (empty) value.
        let mut msg: libc::msghdr = unsafe { mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        if let Some(fd) = fd {
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = space;
            // SAFETY: `msg_control` is `control`, aligned and at least `space` bytes
            // (one header and one descriptor), so the first header is inside it.
            unsafe {
                let cmsg = libc::CMSG_FIRSTHDR(&msg);
                (*cmsg).cmsg_level = libc::SOL_SOCKET;
                (*cmsg).cmsg_type = libc::SCM_RIGHTS;
                (*cmsg).cmsg_len = len as _;
                libc::CMSG_DATA(cmsg)
                    .cast::<RawFd>()
                    .write_unaligned(fd.as_raw_fd());
            }
        }
        // SAFETY: `msg` describes `bytes` (only read) and `control`, both live.
        let n = unsafe {
            libc::sendmsg(
                socket.as_raw_fd(),
                &msg,
                libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
            )
        };
        if n == bytes.len() as isize {
            return Ok(());
        }
        if n >= 0 {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!("short send of {n} of {} bytes", bytes.len()),
            ));
        }
        let err = io::Error::last_os_error();
        match err.kind() {
            io::ErrorKind::Interrupted => {}
            io::ErrorKind::WouldBlock => {
                let remaining = deadline.saturating_duration_since(Instant::now());
                if remaining.is_zero() {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the peer's socket stays full: it does not read its messages",
                    ));
                }
                wait_ready(socket.as_fd(), libc::POLLOUT, remaining)?;
            }
            _ => return Err(context(err, "sendmsg")),
        }
    }
}

/// Signals read from a `signalfd` instead of interrupting the process.
#[derive(Debug)]
pub struct SignalFd {
    fd: OwnedFd,
}

impl SignalFd {
    /// Blocks `signals` in the calling thread and returns a (non-blocking) `signalfd`
    /// that reads them.
    ///
    /// Call it before starting threads, which inherit the mask; `std::process` clears
    /// the mask in children.
    ///
    /// # Errors
    ///
    /// The error of `sigaddset`, `pthread_sigmask` or `signalfd`.
    pub fn new(signals: &[libc::c_int]) -> io::Result<SignalFd> {
        // SAFETY: `sigset_t` is plain data; `sigemptyset` initialises it.
        let mut set: libc::sigset_t = unsafe { mem::zeroed() };
        // SAFETY: `set` is writable.
        unsafe { libc::sigemptyset(&mut set) };
        for &signal in signals {
            // SAFETY: `set` is an initialised `sigset_t`.
            if unsafe { libc::sigaddset(&mut set, signal) } != 0 {
                return Err(os_error(format_args!("sigaddset({signal})")));
            }
        }
        // SAFETY: `set` is initialised; the old mask is not asked for.
        let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
        if rc != 0 {
            return Err(context(io::Error::from_raw_os_error(rc), "pthread_sigmask"));
        }
        // SAFETY: `set` is initialised; -1 asks for a new descriptor.
        let fd = unsafe { libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC) };
        if fd < 0 {
            return Err(os_error("signalfd"));
        }
        // SAFETY: `signalfd` returned a fresh descriptor that nothing else owns.
        Ok(SignalFd {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Reads one pending signal, without blocking; `None` if none is pending.
    ///
    /// # Errors
    ///
    /// The error of `read`.
    pub fn read(&self) -> io::Result<Option<libc::c_int>> {
        // SAFETY: `signalfd_siginfo` is plain data; all-zero is a valid value.
        let mut info: libc::signalfd_siginfo = unsafe { mem::zeroed() };
        loop {
            // SAFETY: `info` is writable for its size; `fd` is our signalfd.
            let n = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    (&mut info as *mut libc::signalfd_siginfo).cast(),
                    mem::size_of_val(&info),
                )
            };
            if n == mem::size_of_val(&info) as isize {
                // CAST: signal numbers are small.
                return Ok(Some(info.ssi_signo as libc::c_int));
            }
            let err = io::Error::last_os_error();
            match err.kind() {
                io::ErrorKind::Interrupted if n < 0 => {}
                io::ErrorKind::WouldBlock if n < 0 => return Ok(None),
                _ if n < 0 => return Err(context(err, "read from the signalfd")),
                _ => {
                    return Err(io::Error::other(format!(
                        "short read of {n} bytes from the signalfd"
                    )))
                }
            }
        }
    }
}

impl AsFd for SignalFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// The name of signal `signal`, for messages.
pub fn signal_name(signal: libc::c_int) -> String {
    match signal {
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGINT => "SIGINT".into(),
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGKILL => "SIGKILL".into(),
        libc::SIGCHLD => "SIGCHLD".into(),
        other => format!("signal {other}"),
    }
}

/// The device and inode of `path` itself (not following a symlink), if it exists.
fn file_identity(path: &Path) -> io::Result<Option<(u64, u64)>> {
    match fs::symlink_metadata(path) {
        Ok(meta) => Ok(Some((meta.dev(), meta.ino()))),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(context(err, format_args!("cannot stat {}", path.display()))),
    }
}

/// The device and inode of the file behind `fd`.
fn fd_identity(fd: BorrowedFd<'_>, what: &str) -> io::Result<(u64, u64)> {
    // SAFETY: `stat` is plain data; all-zero is a valid value.
    let mut stat: libc::stat = unsafe { mem::zeroed() };
    // SAFETY: `fd` is live; `stat` is writable.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut stat) } != 0 {
        return Err(os_error(format_args!("cannot fstat {what}")));
    }
    Ok((stat.st_dev, stat.st_ino))
}

/// The listening socket's file, removed on drop if it is still ours.
#[derive(Debug)]
struct SocketFile {
    path: PathBuf,
    identity: Option<(u64, u64)>,
}

impl SocketFile {
    /// Makes `path` free for a new socket: refuses if a server answers there, removes a
    /// socket nobody listens on.
    fn prepare(path: &Path) -> io::Result<()> {
        let meta = match fs::symlink_metadata(path) {
            Ok(meta) => meta,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(err) => return Err(context(err, format_args!("cannot stat {}", path.display()))),
        };
        if !std::os::unix::fs::FileTypeExt::is_socket(&meta.file_type()) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "{} exists and is not a socket; refusing to replace it",
                    path.display()
                ),
            ));
        }
        match UnixStream::connect(path) {
            Ok(_) => Err(another_server(path)),
            Err(err) if err.kind() == io::ErrorKind::ConnectionRefused => {
                log(format_args!(
                    "removing stale socket {} (nobody listens on it)",
                    path.display()
                ));
                match fs::remove_file(path) {
                    Ok(()) => Ok(()),
                    Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
                    Err(err) => Err(context(
                        err,
                        format_args!("cannot remove the stale socket {}", path.display()),
                    )),
                }
            }
            Err(err) => Err(context(
                err,
                format_args!("cannot tell whether a server listens on {}", path.display()),
            )),
        }
    }

    /// Removes the file if it is still the socket we bound.
    fn remove(&mut self) -> io::Result<()> {
        let Some(ours) = self.identity.take() else {
            return Ok(());
        };
        if file_identity(&self.path)? != Some(ours) {
            return Ok(());
        }
        fs::remove_file(&self.path)
            .map_err(|err| context(err, format_args!("cannot remove {}", self.path.display())))
    }
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// The error for a socket path a server already answers on.
fn another_server(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::AddrInUse,
        format!(
            "another server is already listening on {}; refusing to start a second one there",
            path.display()
        ),
    )
}

/// A named shared-memory file's bookkeeping.
#[derive(Debug)]
struct ShmName {
    name: CString,
    path: PathBuf,
    /// The descriptor holding the `flock`: never handed out, so the lock lives exactly as
    /// long as this server.
    _lock: OwnedFd,
    identity: Option<(u64, u64)>,
}

/// The shared memory.
#[derive(Debug)]
struct ShmFile {
    /// The descriptor handed to peers.
    fd: OwnedFd,
    name: Option<ShmName>,
}

/// `shm_open(name, flags, 0600)`.
fn shm_open(name: &CString, flags: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: `name` is a NUL-terminated string.
    let fd = unsafe { libc::shm_open(name.as_ptr(), flags, 0o600) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `shm_open` returned a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Takes an exclusive `flock` on `fd` without waiting; `Ok(false)` if another holds it.
fn try_lock(fd: BorrowedFd<'_>, what: &str) -> io::Result<bool> {
    loop {
        // SAFETY: `fd` is live.
        if unsafe { libc::flock(fd.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(true);
        }
        let err = io::Error::last_os_error();
        match err.kind() {
            io::ErrorKind::Interrupted => {}
            io::ErrorKind::WouldBlock => return Ok(false),
            _ => return Err(context(err, format_args!("cannot flock {what}"))),
        }
    }
}

impl ShmFile {
    /// Creates the shared memory of `size` bytes.
    fn create(backing: &ShmBacking, size: u64) -> io::Result<ShmFile> {
        let file = match backing {
            ShmBacking::Named(name) => Self::create_named(name)?,
            ShmBacking::Directory(dir) => ShmFile {
                fd: Self::create_unnamed(dir)?,
                name: None,
            },
        };
        // CAST: `Config::validate` checked that the size fits `off_t`.
        // SAFETY: `fd` is live.
        if unsafe { libc::ftruncate(file.fd.as_raw_fd(), size as libc::off_t) } != 0 {
            return Err(os_error(format_args!(
                "cannot size the shared memory {backing} to {size} bytes"
            )));
        }
        Ok(file)
    }

    /// Creates `/dev/shm/NAME` exclusively, taking over an unlocked leftover.
    fn create_named(name: &str) -> io::Result<ShmFile> {
        let path = Path::new(SHM_DIR).join(name);
        let shown = path.display();
        let cname = CString::new(name)
            .map_err(|_| invalid_input(format!("invalid shared-memory name {name:?}")))?;
        let mut lock = None;
        for _ in 0..3 {
            match shm_open(&cname, libc::O_RDWR | libc::O_CREAT | libc::O_EXCL) {
                Ok(fd) => {
                    if !try_lock(fd.as_fd(), &shown.to_string())? {
                        return Err(shm_in_use(&path));
                    }
                    lock = Some(fd);
                    break;
                }
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
                Err(err) => {
                    return Err(context(
                        err,
                        format_args!("cannot create the shared memory {shown}"),
                    ))
                }
            }
            let existing = match shm_open(&cname, libc::O_RDWR) {
                Ok(fd) => fd,
                Err(err) if err.kind() == io::ErrorKind::NotFound => continue,
                Err(err) => {
                    return Err(context(
                        err,
                        format_args!("cannot open the existing shared memory {shown}"),
                    ))
                }
            };
            if !try_lock(existing.as_fd(), &shown.to_string())? {
                return Err(shm_in_use(&path));
            }
            log(format_args!(
                "removing stale shared memory {shown} (no server holds it)"
            ));
            // SAFETY: `cname` is a NUL-terminated string.
            if unsafe { libc::shm_unlink(cname.as_ptr()) } != 0 {
                let err = io::Error::last_os_error();
                if err.kind() != io::ErrorKind::NotFound {
                    return Err(context(
                        err,
                        format_args!("cannot remove the stale shared memory {shown}"),
                    ));
                }
            }
        }
        let lock = lock.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("cannot create the shared memory {shown}: it keeps reappearing"),
            )
        })?;
        let identity = fd_identity(lock.as_fd(), &shown.to_string())?;
        let fd = shm_open(&cname, libc::O_RDWR)
            .map_err(|err| context(err, format_args!("cannot reopen {shown}")))?;
        if fd_identity(fd.as_fd(), &shown.to_string())? != identity {
            return Err(io::Error::other(format!(
                "{shown} was replaced while the server created it"
            )));
        }
        Ok(ShmFile {
            fd,
            name: Some(ShmName {
                name: cname,
                path,
                _lock: lock,
                identity: Some(identity),
            }),
        })
    }

    /// Creates a file in `dir` and unlinks it at once.
    fn create_unnamed(dir: &Path) -> io::Result<OwnedFd> {
        let pid = std::process::id();
        for n in 0..100u32 {
            let path = dir.join(format!("ivshmem.{pid}.{n}"));
            match fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
            {
                Ok(file) => {
                    fs::remove_file(&path).map_err(|err| {
                        context(err, format_args!("cannot unlink {}", path.display()))
                    })?;
                    return Ok(file.into());
                }
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
                Err(err) => {
                    return Err(context(
                        err,
                        format_args!("cannot create the shared memory {}", path.display()),
                    ))
                }
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!(
                "cannot create the shared memory in {}: every name is taken",
                dir.display()
            ),
        ))
    }

    /// Unlinks the name if it still refers to our file.
    fn remove(&mut self) -> io::Result<()> {
        let Some(name) = &mut self.name else {
            return Ok(());
        };
        let Some(ours) = name.identity.take() else {
            return Ok(());
        };
        if file_identity(&name.path)? != Some(ours) {
            return Ok(());
        }
        // SAFETY: `name.name` is a NUL-terminated string.
        if unsafe { libc::shm_unlink(name.name.as_ptr()) } != 0 {
            return Err(os_error(format_args!(
                "cannot remove the shared memory {}",
                name.path.display()
            )));
        }
        Ok(())
    }
}

impl Drop for ShmFile {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// The error for a shared-memory file a live server holds.
fn shm_in_use(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::AddrInUse,
        format!(
            "the shared memory {} is in use by another ivshmem server",
            path.display()
        ),
    )
}

/// A connected peer.
#[derive(Debug)]
struct ServerPeer {
    socket: UnixStream,
    eventfds: Vec<OwnedFd>,
}

/// A running ivshmem server.
#[derive(Debug)]
pub struct Server {
    config: Config,
    listener: UnixListener,
    peers: BTreeMap<u16, ServerPeer>,
    next_id: u16,
    // Declared after the peers and the listener: dropped after them.
    socket: SocketFile,
    shm: ShmFile,
}

impl Server {
    /// Creates the shared memory and starts listening.
    ///
    /// # Errors
    ///
    /// - `InvalidInput` for an invalid `config` ([`Config::validate`]).
    /// - `AddrInUse` if a server already listens on the socket path, or another server
    ///   holds the shared memory (the message names the path).
    /// - `AlreadyExists` if the socket path exists and is not a socket.
    /// - The error of any failing system call, with what failed.
    pub fn new(config: Config) -> io::Result<Server> {
        config.validate()?;
        SocketFile::prepare(&config.socket_path)?;
        let shm = ShmFile::create(&config.shm, config.size)?;
        let listener = UnixListener::bind(&config.socket_path).map_err(|err| {
            if err.kind() == io::ErrorKind::AddrInUse {
                another_server(&config.socket_path)
            } else {
                context(
                    err,
                    format_args!("cannot listen on {}", config.socket_path.display()),
                )
            }
        })?;
        let identity = file_identity(&config.socket_path).inspect_err(|_| {
            let _ = fs::remove_file(&config.socket_path);
        })?;
        let socket = SocketFile {
            path: config.socket_path.clone(),
            identity,
        };
        listener.set_nonblocking(true).map_err(|err| {
            context(
                err,
                format_args!("cannot make {} non-blocking", config.socket_path.display()),
            )
        })?;
        Ok(Server {
            config,
            listener,
            peers: BTreeMap::new(),
            next_id: 0,
            socket,
            shm,
        })
    }

    /// What the server serves, for its "listening" line.
    pub fn description(&self) -> String {
        format!(
            "listening on {} (shared memory {}, {} bytes, {} vector{})",
            self.config.socket_path.display(),
            self.config.shm,
            self.config.size,
            self.config.vectors,
            if self.config.vectors == 1 { "" } else { "s" }
        )
    }

    /// The configuration served.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The ids of the connected peers, sorted.
    pub fn peers(&self) -> Vec<u16> {
        self.peers.keys().copied().collect()
    }

    /// Serves until `stop` becomes readable (e.g. a [`SignalFd`]).
    ///
    /// Errors with single peers are logged and cost only that peer.
    ///
    /// # Errors
    ///
    /// The error of `poll` (other than `EINTR`).
    pub fn run(&mut self, stop: BorrowedFd<'_>) -> io::Result<()> {
        loop {
            let ids = self.peers();
            let mut fds = Vec::with_capacity(2 + ids.len());
            for fd in [stop.as_raw_fd(), self.listener.as_raw_fd()] {
                fds.push(libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                });
            }
            fds.extend(self.peers.values().map(|peer| libc::pollfd {
                fd: peer.socket.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            }));
            match poll(&mut fds, None) {
                Ok(_) => {}
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(err),
            }
            if fds[0].revents != 0 {
                return Ok(());
            }
            for (&id, pfd) in ids.iter().zip(&fds[2..]) {
                if pfd.revents != 0 {
                    self.drop_talking_peer(id);
                }
            }
            if fds[1].revents != 0 {
                self.accept();
            }
        }
    }

    /// Drops a peer whose socket became readable: it hung up or sent something.
    fn drop_talking_peer(&mut self, id: u16) {
        let Some(peer) = self.peers.get(&id) else {
            return;
        };
        let mut byte = 0u8;
        // SAFETY: `byte` is one writable byte; the socket is live.
        let n = unsafe {
            libc::recv(
                peer.socket.as_raw_fd(),
                (&mut byte as *mut u8).cast(),
                1,
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        if n > 0 {
            log(format_args!(
                "peer {id} sent data, which the protocol does not allow; dropping it"
            ));
        } else if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::WouldBlock {
                // A spurious wakeup; nothing to do.
                return;
            }
            if !is_disconnect(&err) {
                log(format_args!(
                    "connection of peer {id} failed: {err}; dropping it"
                ));
            }
        }
        self.remove_peers(vec![id]);
    }

    /// Accepts one connection, if any.
    fn accept(&mut self) {
        match self.listener.accept() {
            Ok((stream, _)) => self.add_peer(stream),
            Err(err)
                if matches!(
                    err.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::Interrupted
                        | io::ErrorKind::ConnectionAborted
                ) => {}
            Err(err) => {
                log(format_args!(
                    "cannot accept a connection on {}: {err}",
                    self.config.socket_path.display()
                ));
                // E.g. out of descriptors: the connection stays queued and `poll` would
                // report it again at once; back off instead of spinning.
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }

    /// The next free id from `next_id` on, wrapping.
    fn free_id(&self) -> Option<u16> {
        let mut id = self.next_id;
        for _ in 0..=u32::from(u16::MAX) {
            if !self.peers.contains_key(&id) {
                return Some(id);
            }
            id = id.wrapping_add(1);
        }
        None
    }

    /// Sets up a new peer and announces it to the others.
    fn add_peer(&mut self, stream: UnixStream) {
        if let Err(err) = stream.set_nonblocking(true) {
            log(format_args!(
                "cannot make a new connection non-blocking: {err}; refusing it"
            ));
            return;
        }
        let Some(id) = self.free_id() else {
            log(format_args!(
                "no free peer id ({} peers connected); refusing a connection",
                self.peers.len()
            ));
            return;
        };
        let mut eventfds = Vec::with_capacity(usize::from(self.config.vectors));
        for vector in 0..self.config.vectors {
            // SAFETY: Creates a new descriptor; no pointers involved.
            let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
            if fd < 0 {
                log(format_args!(
                    "cannot create eventfd {vector} for peer {id}: {}; refusing the connection",
                    io::Error::last_os_error()
                ));
                return;
            }
            // SAFETY: `eventfd` returned a fresh descriptor that nothing else owns.
            eventfds.push(unsafe { OwnedFd::from_raw_fd(fd) });
        }

        if let Err(err) = self.send_setup(stream.as_fd(), id, &eventfds) {
            if is_disconnect(&err) {
                self.vlog(format_args!("peer {id} hung up during setup"));
            } else {
                log(format_args!(
                    "cannot send the initial messages to peer {id}: {err}; dropping it"
                ));
            }
            return;
        }
        // A client that has already hung up (e.g. a second server checking whether
        // this one is alive) need not be announced at all.
        let mut pfd = [libc::pollfd {
            fd: stream.as_raw_fd(),
            events: libc::POLLRDHUP,
            revents: 0,
        }];
        if matches!(poll(&mut pfd, Some(Duration::ZERO)), Ok(n) if n > 0)
            && pfd[0].revents & (libc::POLLHUP | libc::POLLRDHUP | libc::POLLERR) != 0
        {
            self.vlog(format_args!("peer {id} hung up during setup"));
            return;
        }

        let mut failed = Vec::new();
        for (&other_id, other) in &self.peers {
            for fd in &eventfds {
                if let Err(err) = send_message(other.socket.as_fd(), id.into(), Some(fd.as_fd())) {
                    self.report_send_failure(other_id, &err);
                    failed.push(other_id);
                    break;
                }
            }
        }
        self.peers.insert(
            id,
            ServerPeer {
                socket: stream,
                eventfds,
            },
        );
        self.next_id = id.wrapping_add(1);
        self.vlog(format_args!(
            "peer {id} joined ({} connected)",
            self.peers.len()
        ));
        self.remove_peers(failed);
    }

    /// Sends a new peer its initial messages: the version, its id, the shared memory,
    /// every other peer's eventfds and its own.
    fn send_setup(&self, socket: BorrowedFd<'_>, id: u16, eventfds: &[OwnedFd]) -> io::Result<()> {
        send_message(socket, PROTOCOL_VERSION, None)?;
        send_message(socket, id.into(), None)?;
        send_message(socket, SHM_MESSAGE, Some(self.shm.fd.as_fd()))?;
        for (&other_id, other) in &self.peers {
            for fd in &other.eventfds {
                send_message(socket, other_id.into(), Some(fd.as_fd()))?;
            }
        }
        for fd in eventfds {
            send_message(socket, id.into(), Some(fd.as_fd()))?;
        }
        Ok(())
    }

    /// Logs a failed send to peer `id`, which is about to be dropped.
    fn report_send_failure(&self, id: u16, err: &io::Error) {
        if is_disconnect(err) {
            self.vlog(format_args!("peer {id} has gone"));
        } else {
            log(format_args!("cannot send to peer {id}: {err}; dropping it"));
        }
    }

    /// Removes the peers in `worklist` and announces their departure to the rest,
    /// removing in turn those the announcement fails for.
    fn remove_peers(&mut self, mut worklist: Vec<u16>) {
        while let Some(id) = worklist.pop() {
            if self.peers.remove(&id).is_none() {
                continue;
            }
            self.vlog(format_args!(
                "peer {id} left ({} connected)",
                self.peers.len()
            ));
            for (&other_id, other) in &self.peers {
                if let Err(err) = send_message(other.socket.as_fd(), id.into(), None) {
                    self.report_send_failure(other_id, &err);
                    if !worklist.contains(&other_id) {
                        worklist.push(other_id);
                    }
                }
            }
        }
    }

    /// Logs if verbose.
    fn vlog(&self, args: fmt::Arguments<'_>) {
        if self.config.verbose {
            log(args);
        }
    }

    /// Disconnects every peer and removes the socket and the shared-memory files.
    ///
    /// Dropping the server does the same, silently.
    ///
    /// # Errors
    ///
    /// The first error removing a file (both are attempted).
    pub fn close(mut self) -> io::Result<()> {
        self.peers.clear();
        let socket = self.socket.remove();
        let shm = self.shm.remove();
        socket.and(shm)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Command, String> {
        parse_args(args.iter().map(OsString::from))
    }

    #[test]
    fn parses_sizes_with_binary_suffixes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("1M"), Ok(1 << 20));
        assert_eq!(parse_size("2g"), Ok(2 << 30));
        assert_eq!(parse_size("1T"), Ok(1 << 40));
        assert!(parse_size("").is_err());
        assert!(parse_size("M").is_err());
        assert!(parse_size("1X").is_err());
        assert!(parse_size("1MB").is_err());
        assert!(parse_size("99999999999999999999").is_err());
        assert!(parse_size("99999999999T").is_err());
    }

    #[test]
    fn rejects_sizes_that_are_not_powers_of_two() {
        assert!(check_size(1 << 20).is_ok());
        assert!(check_size(3 << 20).unwrap_err().contains("power of two"));
        assert!(check_size(0).is_err());
        assert!(check_size(1 << 63).is_err());
    }

    #[test]
    fn parses_qemu_style_options() {
        let Ok(Command::Run(config)) =
            parse(&["-F", "-v", "-S", "/tmp/s", "-M", "/name", "-l", "1M", "-n2"])
        else {
            panic!("did not parse");
        };
        assert_eq!(
            config,
            Config {
                socket_path: "/tmp/s".into(),
                shm: ShmBacking::Named("name".into()),
                size: 1 << 20,
                vectors: 2,
                verbose: true,
            }
        );
        assert_eq!(parse(&[]), Ok(Command::Run(Config::default())));
        assert_eq!(parse(&["-vh"]), Ok(Command::Help));
        let Ok(Command::Run(config)) = parse(&["-vF", "-m/dev/hugepages"]) else {
            panic!("did not parse");
        };
        assert!(config.verbose);
        assert_eq!(config.shm, ShmBacking::Directory("/dev/hugepages".into()));
    }

    #[test]
    fn rejects_bad_options() {
        assert!(parse(&["-S"]).unwrap_err().contains("needs a value"));
        assert!(parse(&["-x"]).unwrap_err().contains("unknown option -x"));
        assert!(parse(&["stray"])
            .unwrap_err()
            .contains("unexpected argument"));
        assert!(parse(&["-n", "0"])
            .unwrap_err()
            .contains("between 1 and 64"));
        assert!(parse(&["-n", "65"]).is_err());
        assert!(parse(&["-M", "a/b"])
            .unwrap_err()
            .contains("plain file name"));
        assert!(parse(&["-M", "a", "-m", "/tmp"])
            .unwrap_err()
            .contains("use one"));
        assert!(parse(&["-l", "3M"]).unwrap_err().contains("power of two"));
    }
}
