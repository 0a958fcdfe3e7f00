// SPDX-License-Identifier: GPL-2.0

//! `vgsp-qemu`: boots QEMU with an `ivshmem-doorbell` device whose other side is the
//! host GSP process, the guest's RAM shared with that process, and tears everything down
//! again.
//!
//! ```text
//! vgsp-qemu --log FILE [--timeout SECS] [--gsp PATH] [--gsp-arg ARG]... -- QEMU_BINARY QEMU_ARGS...
//! ```
//!
//! QEMU_BINARY is `qemu-system-x86_64` (machine `pc`, the default, or `q35`) or
//! `qemu-system-aarch64` (machine `virt`), by file name, and QEMU_ARGS must size the RAM
//! as `-m N` or `-m NM` (MiB); anything else is a usage error.
//!
//! 1. Makes a private directory `$TMPDIR/vgsp-qemu.XXXXXX` (`/tmp` without `TMPDIR`)
//!    for the socket `ivshmem.sock` and the guest's RAM `guest-ram`, a file of the `-m`
//!    size; the shared memory is `/dev/shm/vgsp-ivshmem-PID`.
//! 2. Starts `ivshmem-server` (next to this executable) on them, `SHM_SIZE` (4 KiB: the
//!    attach mailbox, `nova_testbench::ivshmem`), 1 vector, and waits at most 10 s for its
//!    "listening" line.
//! 3. Starts the GSP process (`--gsp`, by default `vgsp-gsp` next to this executable)
//!    with `--socket SOCKET --ram RAM --ram-base BASE` and every `--gsp-arg`.
//! 4. Starts QEMU with its arguments followed by
//!    `-object memory-backend-file,id=vgsp-ram,size=S,mem-path=RAM,share=on
//!    -machine memory-backend=vgsp-ram` (the guest's RAM is the file, shared with the GSP
//!    process; QEMU merges `-machine` with the caller's `-M`) and the `-chardev`/`-device`
//!    pair of the ivshmem device, standard input null. Every line of its standard output
//!    and error goes to the log FILE, and nothing else does. A line containing
//!    `vgsp-ivshmem: request: kill-gsp` kills the GSP process (SIGKILL); one containing
//!    `vgsp-ivshmem: request: start-gsp` starts a new one (same arguments).
//! 5. When QEMU exits, on the timeout (counted from QEMU's start) or on SIGINT, SIGTERM
//!    or SIGHUP: stops QEMU, the GSP process and the server (SIGTERM, SIGKILL after
//!    5 s), removes the RAM file, checks that it, the socket and the shared-memory file
//!    are gone, and removes the directory.
//!
//! # Bus addresses are guest-physical addresses
//!
//! The driver tells the GSP the *bus* address of its queues (their `dma_address()`); the
//! GSP process finds them at `bus - BASE` in the RAM file, where BASE is the
//! guest-physical address of the RAM's first byte: 0 on x86-64 (`pc` and `q35` map RAM
//! from 0, linearly up to the split below 4 GiB: the runner refuses 3.5 GiB or more on
//! `pc`, 2.75 GiB or more on `q35`, which QEMU would split), `0x4000_0000` on aarch64
//! `virt`. That bus and guest-physical addresses are one holds because the guest has no
//! IOMMU and uses dma-direct: the device's DMA address is the physical address. It breaks
//! with an IOMMU in the guest (`-device intel-iommu`, `virtio-iommu`, `virt`'s
//! `iommu=smmuv3`), with memory encryption (SEV, TDX: DMA addresses carry the shared bit,
//! and coherent memory may come from swiotlb), with a `restricted-dma-pool` or a PCI host
//! bridge whose `dma-ranges` offset bus from physical addresses, and with RAM that is not
//! one linear range (the split above, `-numa` nodes or hot-plugged memory with backends
//! of their own); the GSP process then refuses the addresses that fall outside the file,
//! or reaches the wrong memory.
//!
//! The GSP's and the server's output goes to standard error, prefixed `[gsp] ` and
//! `[ivshmem-server] `; so do the runner's notes, prefixed `vgsp-qemu: `.
//!
//! Exit status: 0 if QEMU ran to its end (whatever its own status, which is printed)
//! and everything was cleaned up; 124 on the timeout; 128 + the signal number when
//! stopped by a signal; 1 for any other failure (a process that could not start, the
//! server exiting early, leftover files), 2 for a usage error.
//!
//! Every child runs in its own process group, killed as a whole, and gets a parent-death
//! signal, so that not even a killed runner leaves processes behind (the server gets
//! SIGTERM, to remove its files).

use std::{
    ffi::{
        CString,
        OsStr,
        OsString, //
    },
    fmt,
    fs::{
        self,
        File, //
    },
    io::{
        self,
        Read,
        Write, //
    },
    mem,
    os::{
        fd::{
            AsFd,
            AsRawFd,
            OwnedFd, //
        },
        unix::{
            ffi::{
                OsStrExt,
                OsStringExt, //
            },
            process::CommandExt,
        },
    },
    path::{
        Path,
        PathBuf, //
    },
    process::{
        Child,
        Command,
        ExitCode,
        ExitStatus,
        Stdio, //
    },
    ptr,
    time::{
        Duration,
        Instant, //
    },
};

use nova_testbench::ivshmem::SHM_SIZE;
use vgsp_ivshmem::server::{
    signal_name,
    SignalFd,
    SHM_DIR, //
};

/// The command-line usage.
const USAGE: &str = "\
Usage: vgsp-qemu --log FILE [--timeout SECS] [--gsp PATH] [--gsp-arg ARG]... -- QEMU_BINARY QEMU_ARGS...

  --log FILE      write QEMU's standard output and error here, line by line
  --timeout SECS  kill QEMU after SECS seconds and exit 124 (default 300)
  --gsp PATH      the host GSP process (default: vgsp-gsp next to this program)
  --gsp-arg ARG   one more argument for it, after --socket SOCKET --ram RAM
                  --ram-base BASE (repeatable)

  QEMU_BINARY     qemu-system-x86_64 (machine pc or q35) or qemu-system-aarch64
                  (machine virt), by file name
  QEMU_ARGS       must give the RAM size as -m N or -m NM (MiB): the guest's RAM,
                  shared with the GSP process, is a file of that size
";

/// The guest's console cue to kill the GSP process.
const CUE_KILL_GSP: &str = "vgsp-ivshmem: request: kill-gsp";

/// The guest's console cue to start a GSP process.
const CUE_START_GSP: &str = "vgsp-ivshmem: request: start-gsp";

/// The QEMU timeout without `--timeout`.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// How long the server may take to listen.
const SERVER_START_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a child may take to exit after SIGTERM before it gets SIGKILL (and after
/// SIGKILL before the runner gives up on it).
const TERM_GRACE: Duration = Duration::from_secs(5);

/// The start of the server's line saying it listens.
const SERVER_READY_PREFIX: &str = "ivshmem-server: listening on";

/// The chardev id of the ivshmem socket in QEMU.
const CHARDEV_ID: &str = "vgsp-ivshmem";

/// The id of the guest RAM's memory backend in QEMU.
const RAM_BACKEND_ID: &str = "vgsp-ram";

/// The name of the guest RAM's file in the private directory.
const RAM_FILE: &str = "guest-ram";

/// A MiB, the unit of QEMU's `-m`.
const MIB: u64 = 1 << 20;

/// Where the guest's RAM is, as its machine lays it out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Guest {
    /// The RAM size in bytes, from `-m`.
    ram_size: u64,
    /// The guest-physical (and, without an IOMMU, bus) address of the RAM's first byte.
    ram_base: u64,
}

/// The guest's machine: what QEMU_BINARY and `-M` say of where its RAM is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Machine {
    /// x86-64 `pc` (i440FX): RAM from 0, linear while below 3.5 GiB.
    Pc,
    /// x86-64 `q35`: RAM from 0, linear while below 2.75 GiB.
    Q35,
    /// aarch64 `virt`: RAM from 1 GiB.
    Virt,
}

impl Machine {
    /// The machine's name, as QEMU's `-M` gives it.
    fn name(self) -> &'static str {
        match self {
            Machine::Pc => "pc",
            Machine::Q35 => "q35",
            Machine::Virt => "virt",
        }
    }

    /// The guest-physical address of the first byte of RAM.
    fn ram_base(self) -> u64 {
        match self {
            Machine::Pc | Machine::Q35 => 0,
            Machine::Virt => 0x4000_0000,
        }
    }

    /// The RAM size from which QEMU splits the RAM around the hole below 4 GiB, if any.
    fn split_at(self) -> Option<u64> {
        match self {
            Machine::Pc => Some(0xe000_0000),
            Machine::Q35 => Some(0xb000_0000),
            Machine::Virt => None,
        }
    }
}

/// The machine type the QEMU arguments give (`-M`/`-machine`, the last with a type): the
/// first comma-separated element without `=`, or `type=`'s value.
fn machine_type(qemu_args: &[OsString]) -> Option<String> {
    let mut machine = None;
    let mut args = qemu_args.iter();
    while let Some(arg) = args.next() {
        if !matches!(arg.to_str(), Some("-M" | "--M" | "-machine" | "--machine")) {
            continue;
        }
        let Some(value) = args.next() else { break };
        let value = value.to_string_lossy();
        for part in value.split(',') {
            match part.split_once('=') {
                None => machine = Some(part.to_owned()),
                Some(("type", name)) => machine = Some(name.to_owned()),
                Some(_) => {}
            }
        }
    }
    machine
}

/// Parses QEMU's `-m` value: `N` or `NM`, in MiB.
fn parse_ram_size(value: &OsStr) -> Result<u64, String> {
    let text = value.to_string_lossy();
    let digits = text.strip_suffix('M').unwrap_or(&text);
    let mib: u64 = digits
        .parse()
        .ok()
        .filter(|&n| n > 0 && digits.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| {
            format!(
                "QEMU's \"-m {text}\": the runner understands only -m N and -m NM (MiB), \
                 as it sizes the guest RAM it shares with the GSP process from it"
            )
        })?;
    mib.checked_mul(MIB)
        .ok_or_else(|| format!("QEMU's \"-m {text}\": too large"))
}

/// Where the guest's RAM is, from QEMU_BINARY and QEMU_ARGS.
///
/// # Errors
///
/// A message naming what is not understood: a binary other than `qemu-system-x86_64` or
/// `qemu-system-aarch64`, a machine other than `pc`/`q35` or `virt`, no `-m` or more than
/// one, an `-m` of another form than `N` or `NM`, or a RAM size the machine splits.
fn guest_of(qemu: &[OsString]) -> Result<Guest, String> {
    let (binary, args) = qemu.split_first().ok_or("missing QEMU_BINARY after --")?;
    let name = Path::new(binary)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let machine_name = machine_type(args);
    let machine = match (name.as_str(), machine_name.as_deref()) {
        ("qemu-system-x86_64", None) => Machine::Pc,
        ("qemu-system-x86_64", Some(m)) if m == "pc" || m.starts_with("pc-i440fx") => Machine::Pc,
        ("qemu-system-x86_64", Some(m)) if m == "q35" || m.starts_with("pc-q35") => Machine::Q35,
        ("qemu-system-aarch64", Some(m)) if m == "virt" || m.starts_with("virt-") => Machine::Virt,
        ("qemu-system-x86_64" | "qemu-system-aarch64", m) => {
            return Err(format!(
                "{name} with machine {}: the runner knows where the RAM is only on pc or q35 \
                 (qemu-system-x86_64) and virt (qemu-system-aarch64)",
                m.unwrap_or("(none)")
            ))
        }
        _ => {
            return Err(format!(
                "QEMU_BINARY {:?}: the runner knows the guest RAM's address only for \
                 qemu-system-x86_64 (0) and qemu-system-aarch64 (0x4000_0000, virt)",
                binary
            ))
        }
    };
    let mut sizes = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if matches!(arg.to_str(), Some("-m" | "--m")) {
            let value = rest.next().ok_or("QEMU's -m needs a value")?;
            sizes.push(parse_ram_size(value)?);
        }
    }
    let ram_size = match sizes[..] {
        [size] => size,
        [] => {
            return Err(
                "QEMU_ARGS give no -m: the runner sizes the guest RAM it shares with the GSP \
                 process from -m N or -m NM"
                    .into(),
            )
        }
        _ => return Err("QEMU_ARGS give -m more than once".into()),
    };
    if let Some(split) = machine.split_at().filter(|&split| ram_size >= split) {
        return Err(format!(
            "-m {} on {}: QEMU splits RAM of {} MiB or more around the hole below \
             4 GiB, and the GSP process maps the RAM as one linear range",
            ram_size / MIB,
            machine.name(),
            split / MIB
        ));
    }
    Ok(Guest {
        ram_size,
        ram_base: machine.ram_base(),
    })
}

/// A line longer than this is passed on in pieces.
const MAX_LINE: usize = 64 * 1024;

/// Writes `vgsp-qemu: MSG` to standard error.
fn note(args: fmt::Arguments<'_>) {
    let _ = writeln!(io::stderr().lock(), "vgsp-qemu: {args}");
}

/// The command line.
#[derive(Debug)]
struct Args {
    log: PathBuf,
    timeout: Duration,
    gsp: Option<PathBuf>,
    gsp_args: Vec<OsString>,
    qemu: Vec<OsString>,
    guest: Guest,
}

/// Parses the arguments (without the program name); `Ok(None)` asks for the usage.
fn parse_args(args: impl IntoIterator<Item = OsString>) -> Result<Option<Args>, String> {
    let mut log = None;
    let mut timeout = DEFAULT_TIMEOUT;
    let mut gsp = None;
    let mut gsp_args = Vec::new();
    let mut args = args.into_iter();
    loop {
        let Some(arg) = args.next() else {
            return Err("missing -- QEMU_BINARY QEMU_ARGS...".into());
        };
        let (name, inline) = match arg.as_bytes().iter().position(|&b| b == b'=') {
            Some(eq) if arg.as_bytes().starts_with(b"--") => (
                OsStr::from_bytes(&arg.as_bytes()[..eq]).to_owned(),
                Some(OsStr::from_bytes(&arg.as_bytes()[eq + 1..]).to_owned()),
            ),
            _ => (arg.clone(), None),
        };
        let name = name.to_string_lossy().into_owned();
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match name.as_str() {
            "--" => break,
            "-h" | "--help" => return Ok(None),
            "--log" => log = Some(PathBuf::from(value()?)),
            "--timeout" => {
                let text = value()?;
                let secs: u64 = text
                    .to_str()
                    .and_then(|t| t.parse().ok())
                    .filter(|&s| s > 0)
                    .ok_or_else(|| {
                        format!("--timeout {text:?}: not a positive number of seconds")
                    })?;
                timeout = Duration::from_secs(secs);
            }
            "--gsp" => gsp = Some(PathBuf::from(value()?)),
            "--gsp-arg" => gsp_args.push(value()?),
            _ => return Err(format!("unknown argument {arg:?}")),
        }
    }
    let qemu: Vec<OsString> = args.collect();
    if qemu.is_empty() {
        return Err("missing QEMU_BINARY after --".into());
    }
    let log = log.ok_or("missing --log FILE")?;
    let guest = guest_of(&qemu)?;
    Ok(Some(Args {
        log,
        timeout,
        gsp,
        gsp_args,
        qemu,
        guest,
    }))
}

/// What a child process is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Server,
    Gsp,
    Qemu,
}

impl Role {
    /// The name in notes.
    fn name(self) -> &'static str {
        match self {
            Role::Server => "ivshmem-server",
            Role::Gsp => "GSP process",
            Role::Qemu => "QEMU",
        }
    }

    /// What its parent's death sends it: the server must get to remove its files.
    fn death_signal(self) -> libc::c_int {
        match self {
            Role::Server => libc::SIGTERM,
            Role::Gsp | Role::Qemu => libc::SIGKILL,
        }
    }
}

/// A child process, leader of its own process group.
#[derive(Debug)]
struct Proc {
    role: Role,
    child: Child,
    pid: libc::pid_t,
}

impl Proc {
    /// Starts `program` with `args`, standard input null, standard output and error into
    /// one pipe whose read end is returned.
    ///
    /// Call from the main thread only: the parent-death signal fires when the *thread*
    /// that forked the child exits.
    fn spawn(role: Role, program: &OsStr, args: &[OsString]) -> io::Result<(Proc, Stream)> {
        let what = |err: io::Error| {
            context(
                err,
                format_args!(
                    "cannot start the {} {}",
                    role.name(),
                    Path::new(program).display()
                ),
            )
        };
        let (reader, writer) = io::pipe().map_err(|err| context(err, "cannot create a pipe"))?;
        let writer2 = writer
            .try_clone()
            .map_err(|err| context(err, "cannot duplicate a pipe"))?;
        // CAST: pids fit `pid_t`.
        let parent = std::process::id() as libc::pid_t;
        let death_signal = role.death_signal();
        let mut command = Command::new(program);
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(writer2)
            .process_group(0);
        // SAFETY: The closure runs in the forked child before `exec`; it only makes
        // the async-signal-safe calls `sigemptyset`, `pthread_sigmask`, `prctl` and
        // `getppid` on its own stack data, and allocates nothing (`from_raw_os_error`
        // does not).
        unsafe {
            command.pre_exec(move || {
                // The runner blocks the signals it reads from its signalfd; the mask
                // survives `exec`, and `std` does not clear it.
                let mut set: libc::sigset_t = mem::zeroed();
                libc::sigemptyset(&mut set);
                let rc = libc::pthread_sigmask(libc::SIG_SETMASK, &set, ptr::null_mut());
                if rc != 0 {
                    return Err(io::Error::from_raw_os_error(rc));
                }
                if libc::prctl(libc::PR_SET_PDEATHSIG, death_signal as libc::c_ulong) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // The runner died before the signal was armed.
                if libc::getppid() != parent {
                    return Err(io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
        let child = command.spawn().map_err(what)?;
        // Drops the parent's copies of the write end: EOF comes when the child's go.
        drop(command);
        // CAST: pids fit `pid_t`.
        let pid = child.id() as libc::pid_t;
        let fd = OwnedFd::from(reader);
        set_nonblocking(&fd)?;
        Ok((
            Proc { role, child, pid },
            Stream {
                fd,
                role,
                buf: Vec::new(),
            },
        ))
    }

    /// Sends `signal` to the process group; a group already gone is fine.
    fn signal_group(&self, signal: libc::c_int) {
        // SAFETY: Sends a signal; no memory involved.
        let _ = unsafe { libc::kill(-self.pid, signal) };
    }

    /// Waits at most `timeout` for the process to exit.
    fn wait_for(&mut self, timeout: Duration) -> io::Result<Option<ExitStatus>> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().map_err(|err| {
                context(
                    err,
                    format_args!(
                        "cannot wait for the {} (pid {})",
                        self.role.name(),
                        self.pid
                    ),
                )
            })? {
                return Ok(Some(status));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Sends `signal` to the group, waits for the process (SIGKILL after
    /// [`TERM_GRACE`]), and kills whatever is left of its group.
    fn stop(mut self, signal: libc::c_int) -> io::Result<ExitStatus> {
        self.signal_group(signal);
        let mut status = self.wait_for(TERM_GRACE)?;
        if status.is_none() && signal != libc::SIGKILL {
            note(format_args!(
                "the {} (pid {}) ignored {} for {} s; killing it",
                self.role.name(),
                self.pid,
                signal_name(signal),
                TERM_GRACE.as_secs()
            ));
            self.signal_group(libc::SIGKILL);
            status = self.wait_for(TERM_GRACE)?;
        }
        // Its children, if it left any.
        self.signal_group(libc::SIGKILL);
        status.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the {} (pid {}) does not die even of SIGKILL",
                    self.role.name(),
                    self.pid
                ),
            )
        })
    }
}

/// Returns `err` with `what` in front of its message, keeping its kind.
fn context(err: io::Error, what: impl fmt::Display) -> io::Error {
    io::Error::new(err.kind(), format!("{what}: {err}"))
}

/// Sets `O_NONBLOCK` on `fd`.
fn set_nonblocking(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: `fd` is live; `F_GETFL` takes no argument.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    // SAFETY: As above; `F_SETFL` takes the flags.
    if flags < 0
        || unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0
    {
        return Err(context(
            io::Error::last_os_error(),
            "cannot make a pipe non-blocking",
        ));
    }
    Ok(())
}

/// The output of a child, read line by line.
#[derive(Debug)]
struct Stream {
    fd: OwnedFd,
    role: Role,
    buf: Vec<u8>,
}

impl Stream {
    /// Reads what is available; returns the complete lines (without `\n`) and whether
    /// the stream ended (then the last, unterminated line is among them).
    fn read_lines(&mut self) -> io::Result<(Vec<Vec<u8>>, bool)> {
        let mut lines = Vec::new();
        let mut chunk = [0u8; 4096];
        let mut file = File::from(self.fd.try_clone()?);
        let ended = loop {
            match file.read(&mut chunk) {
                Ok(0) => break true,
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    while let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
                        let mut line: Vec<u8> = self.buf.drain(..=end).collect();
                        line.pop();
                        lines.push(line);
                    }
                    if self.buf.len() > MAX_LINE {
                        lines.push(std::mem::take(&mut self.buf));
                    }
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => break false,
                Err(err) => {
                    return Err(context(
                        err,
                        format_args!("cannot read the output of the {}", self.role.name()),
                    ))
                }
            }
        };
        if ended && !self.buf.is_empty() {
            lines.push(std::mem::take(&mut self.buf));
        }
        Ok((lines, ended))
    }
}

/// How the run ended.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    /// QEMU exited.
    Finished,
    /// The timeout passed.
    TimedOut,
    /// The runner got this signal.
    Interrupted(libc::c_int),
    /// Something could not be done.
    Failed(String),
}

/// The state of one run.
struct Runner {
    args: Args,
    signals: SignalFd,
    log: File,
    exe_dir: PathBuf,
    dir: Option<PathBuf>,
    socket: PathBuf,
    ram: PathBuf,
    shm_name: String,
    server: Option<Proc>,
    gsp: Option<Proc>,
    qemu: Option<Proc>,
    streams: Vec<Stream>,
    server_ready: bool,
    qemu_status: Option<ExitStatus>,
    interrupted: Option<libc::c_int>,
    /// Failures that do not stop the run but fail it.
    errors: Vec<String>,
}

impl Runner {
    /// Starts everything and runs QEMU to its end.
    fn run(&mut self) -> Outcome {
        if let Err(err) = self.make_dir() {
            return Outcome::Failed(err.to_string());
        }

        let server_path = self.exe_dir.join("ivshmem-server");
        let server_args: Vec<OsString> = vec![
            "-F".into(),
            "-v".into(),
            "-S".into(),
            self.socket.clone().into(),
            "-M".into(),
            self.shm_name.clone().into(),
            "-l".into(),
            SHM_SIZE.to_string().into(),
            "-n".into(),
            "1".into(),
        ];
        match Proc::spawn(Role::Server, server_path.as_os_str(), &server_args) {
            Ok((proc, stream)) => {
                self.server = Some(proc);
                self.streams.push(stream);
            }
            Err(err) => return Outcome::Failed(err.to_string()),
        }
        let deadline = Instant::now() + SERVER_START_TIMEOUT;
        while !self.server_ready {
            if let Some(outcome) = self.pump(deadline) {
                return outcome;
            }
            if self.server.is_none() {
                return Outcome::Failed("ivshmem-server exited before it listened".into());
            }
            if !self.server_ready && Instant::now() >= deadline {
                return Outcome::Failed(format!(
                    "ivshmem-server did not listen within {} s",
                    SERVER_START_TIMEOUT.as_secs()
                ));
            }
        }

        if let Err(err) = self.start_gsp() {
            return Outcome::Failed(err.to_string());
        }

        let mut qemu_args: Vec<OsString> = self.args.qemu[1..].to_vec();
        let mut chardev = OsString::from("socket,path=");
        // QEMU's option syntax doubles commas inside values.
        chardev.push(OsStr::from_bytes(&escape_commas(
            self.socket.as_os_str().as_bytes(),
        )));
        chardev.push(format!(",id={CHARDEV_ID}"));
        let mut backend = OsString::from(format!(
            "memory-backend-file,id={RAM_BACKEND_ID},size={},mem-path=",
            self.args.guest.ram_size
        ));
        backend.push(OsStr::from_bytes(&escape_commas(
            self.ram.as_os_str().as_bytes(),
        )));
        backend.push(",share=on");
        qemu_args.extend([
            "-object".into(),
            backend,
            "-machine".into(),
            format!("memory-backend={RAM_BACKEND_ID}").into(),
            "-chardev".into(),
            chardev,
            "-device".into(),
            format!("ivshmem-doorbell,chardev={CHARDEV_ID},vectors=1").into(),
        ]);
        match Proc::spawn(Role::Qemu, &self.args.qemu[0], &qemu_args) {
            Ok((proc, stream)) => {
                note(format_args!("started QEMU (pid {})", proc.pid));
                self.qemu = Some(proc);
                self.streams.push(stream);
            }
            Err(err) => return Outcome::Failed(err.to_string()),
        }

        let deadline = Instant::now() + self.args.timeout;
        loop {
            if let Some(outcome) = self.pump(deadline) {
                return outcome;
            }
            if self.qemu.is_none() {
                return Outcome::Finished;
            }
            if Instant::now() >= deadline {
                note(format_args!(
                    "timed out after {} s; killing QEMU",
                    self.args.timeout.as_secs()
                ));
                return Outcome::TimedOut;
            }
        }
    }

    /// Makes the private directory, names the files in it, and creates the guest's RAM.
    fn make_dir(&mut self) -> io::Result<()> {
        let base = std::env::var_os("TMPDIR")
            .filter(|d| !d.is_empty())
            .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
        let template = CString::new(base.join("vgsp-qemu.XXXXXX").into_os_string().into_vec())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "TMPDIR contains a NUL"))?;
        let mut template = template.into_bytes_with_nul();
        // SAFETY: `template` is a writable NUL-terminated string ending in `XXXXXX`.
        if unsafe { libc::mkdtemp(template.as_mut_ptr().cast()) }.is_null() {
            return Err(context(
                io::Error::last_os_error(),
                format_args!("cannot create a directory in {}", base.display()),
            ));
        }
        template.pop();
        let dir = PathBuf::from(OsString::from_vec(template));
        self.socket = dir.join("ivshmem.sock");
        self.ram = dir.join(RAM_FILE);
        self.dir = Some(dir);
        let ram = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&self.ram)
            .map_err(|err| {
                context(
                    err,
                    format_args!("cannot create the guest RAM {}", self.ram.display()),
                )
            })?;
        // Sparse: the pages the guest never touches take no room.
        ram.set_len(self.args.guest.ram_size).map_err(|err| {
            context(
                err,
                format_args!(
                    "cannot size the guest RAM {} to {} bytes",
                    self.ram.display(),
                    self.args.guest.ram_size
                ),
            )
        })?;
        note(format_args!(
            "guest RAM {}: {} MiB at guest-physical address {:#x}",
            self.ram.display(),
            self.args.guest.ram_size / MIB,
            self.args.guest.ram_base
        ));
        Ok(())
    }

    /// Starts a GSP process.
    fn start_gsp(&mut self) -> io::Result<()> {
        let program = self
            .args
            .gsp
            .clone()
            .unwrap_or_else(|| self.exe_dir.join("vgsp-gsp"));
        let mut args: Vec<OsString> = vec![
            "--socket".into(),
            self.socket.clone().into(),
            "--ram".into(),
            self.ram.clone().into(),
            "--ram-base".into(),
            format!("{:#x}", self.args.guest.ram_base).into(),
        ];
        args.extend(self.args.gsp_args.iter().cloned());
        let (proc, stream) = Proc::spawn(Role::Gsp, program.as_os_str(), &args)?;
        note(format_args!("started the GSP process (pid {})", proc.pid));
        self.gsp = Some(proc);
        self.streams.push(stream);
        Ok(())
    }

    /// One round of waiting, at most until `deadline`: passes on output, acts on cues,
    /// reaps children. `Some` if the run must end.
    fn pump(&mut self, deadline: Instant) -> Option<Outcome> {
        let mut fds = vec![libc::pollfd {
            fd: self.signals.as_fd().as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        fds.extend(self.streams.iter().map(|s| libc::pollfd {
            fd: s.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }));
        let timeout = deadline.saturating_duration_since(Instant::now());
        let ms = i32::try_from(timeout.as_millis().saturating_add(1)).unwrap_or(i32::MAX);
        // SAFETY: `fds` is a live, writable vector of `fds.len()` entries.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                return None;
            }
            return Some(Outcome::Failed(format!("poll: {err}")));
        }
        let ready: Vec<bool> = fds[1..].iter().map(|p| p.revents != 0).collect();
        self.read_streams(|i| ready[i]);
        if fds[0].revents != 0 {
            self.handle_signals();
        }
        self.interrupted.map(Outcome::Interrupted)
    }

    /// Reads the streams `which` selects (by index) and handles their lines.
    fn read_streams(&mut self, which: impl Fn(usize) -> bool) {
        let mut lines = Vec::new();
        let mut keep = Vec::with_capacity(self.streams.len());
        for (index, mut stream) in std::mem::take(&mut self.streams).into_iter().enumerate() {
            if !which(index) {
                keep.push(stream);
                continue;
            }
            match stream.read_lines() {
                Ok((got, ended)) => {
                    lines.extend(got.into_iter().map(|l| (stream.role, l)));
                    if !ended {
                        keep.push(stream);
                    }
                }
                Err(err) => self.errors.push(err.to_string()),
            }
        }
        self.streams = keep;
        for (role, line) in lines {
            self.handle_line(role, &line);
        }
    }

    /// Passes on one line of output.
    fn handle_line(&mut self, role: Role, line: &[u8]) {
        match role {
            Role::Qemu => {
                let mut out = Vec::with_capacity(line.len() + 1);
                out.extend_from_slice(line);
                out.push(b'\n');
                if let Err(err) = self.log.write_all(&out).and_then(|()| self.log.flush()) {
                    let msg = format!("cannot write to the log {}: {err}", self.args.log.display());
                    if !self.errors.contains(&msg) {
                        note(format_args!("{msg}"));
                        self.errors.push(msg);
                    }
                }
                let text = String::from_utf8_lossy(line);
                // Cues read after QEMU's end (while cleaning up) are moot.
                if self.qemu.is_none() {
                    return;
                }
                if text.contains(CUE_KILL_GSP) {
                    self.kill_gsp();
                } else if text.contains(CUE_START_GSP) {
                    self.restart_gsp();
                }
            }
            Role::Gsp => {
                let mut err = io::stderr().lock();
                let _ = err.write_all(b"[gsp] ");
                let _ = err.write_all(line);
                let _ = err.write_all(b"\n");
            }
            Role::Server => {
                if line.starts_with(SERVER_READY_PREFIX.as_bytes()) {
                    self.server_ready = true;
                }
                let mut err = io::stderr().lock();
                let _ = err.write_all(b"[ivshmem-server] ");
                let _ = err.write_all(line);
                let _ = err.write_all(b"\n");
            }
        }
    }

    /// The `kill-gsp` cue.
    fn kill_gsp(&mut self) {
        let Some(gsp) = self.gsp.take() else {
            note(format_args!(
                "the guest asks to kill the GSP process, but none is running; ignored"
            ));
            return;
        };
        let pid = gsp.pid;
        match gsp.stop(libc::SIGKILL) {
            Ok(status) => note(format_args!(
                "the guest asks to kill the GSP process: killed pid {pid} ({status})"
            )),
            Err(err) => {
                note(format_args!("{err}"));
                self.errors.push(err.to_string());
            }
        }
    }

    /// The `start-gsp` cue.
    fn restart_gsp(&mut self) {
        if let Some(gsp) = &self.gsp {
            note(format_args!(
                "the guest asks to start a GSP process, but pid {} is running; ignored",
                gsp.pid
            ));
            return;
        }
        note(format_args!("the guest asks to start a GSP process"));
        if let Err(err) = self.start_gsp() {
            note(format_args!("{err}"));
            self.errors.push(err.to_string());
        }
    }

    /// Reads the pending signals: reaps children on SIGCHLD, records the others.
    fn handle_signals(&mut self) {
        loop {
            match self.signals.read() {
                Ok(Some(libc::SIGCHLD)) => self.reap(),
                Ok(Some(signal)) => {
                    note(format_args!("got {}; stopping", signal_name(signal)));
                    self.interrupted.get_or_insert(signal);
                }
                Ok(None) => return,
                Err(err) => {
                    self.errors.push(err.to_string());
                    // Without signals the runner cannot tell QEMU's end; stop.
                    self.interrupted.get_or_insert(libc::SIGTERM);
                    return;
                }
            }
        }
    }

    /// Reaps the children that have exited.
    fn reap(&mut self) {
        for slot in [&mut self.server, &mut self.gsp, &mut self.qemu] {
            let Some(proc) = slot else { continue };
            match proc.child.try_wait() {
                Ok(Some(status)) => {
                    // Its group's other members, if any.
                    proc.signal_group(libc::SIGKILL);
                    let (role, pid) = (proc.role, proc.pid);
                    *slot = None;
                    match role {
                        Role::Server => {
                            let msg = format!("ivshmem-server (pid {pid}) exited early ({status})");
                            note(format_args!("{msg}"));
                            self.errors.push(msg);
                        }
                        Role::Gsp => note(format_args!(
                            "the GSP process (pid {pid}) exited ({status})"
                        )),
                        Role::Qemu => {
                            note(format_args!("QEMU exited ({status})"));
                            self.qemu_status = Some(status);
                        }
                    }
                }
                Ok(None) => {}
                Err(err) => self.errors.push(format!(
                    "cannot wait for the {} (pid {}): {err}",
                    proc.role.name(),
                    proc.pid
                )),
            }
        }
    }

    /// Stops every child, checks that nothing is left behind, and removes the
    /// directory. Returns what went wrong.
    fn cleanup(&mut self) -> Vec<String> {
        let mut problems = std::mem::take(&mut self.errors);
        for role in [Role::Qemu, Role::Gsp, Role::Server] {
            let slot = match role {
                Role::Qemu => &mut self.qemu,
                Role::Gsp => &mut self.gsp,
                Role::Server => &mut self.server,
            };
            let Some(proc) = slot.take() else { continue };
            let pid = proc.pid;
            match proc.stop(libc::SIGTERM) {
                Ok(status) => {
                    note(format_args!(
                        "stopped the {} (pid {pid}): {status}",
                        role.name()
                    ));
                    if role == Role::Qemu {
                        self.qemu_status = Some(status);
                    }
                    if role == Role::Server && !status.success() {
                        problems.push(format!(
                            "ivshmem-server failed to shut down cleanly ({status})"
                        ));
                    }
                }
                Err(err) => problems.push(err.to_string()),
            }
        }
        // What they wrote last; their write ends are closed now (barring grandchildren
        // killed above), so this does not wait.
        self.read_streams(|_| true);
        problems.append(&mut self.errors);
        self.streams.clear();

        if let Some(dir) = self.dir.take() {
            // The runner's own file: removed here, once QEMU and the GSP process are gone.
            match fs::remove_file(&self.ram) {
                Err(err) if err.kind() != io::ErrorKind::NotFound => problems.push(format!(
                    "cannot remove the guest RAM {}: {err}",
                    self.ram.display()
                )),
                _ => {}
            }
            if self.ram.exists() {
                problems.push(format!("leftover guest RAM {}", self.ram.display()));
            }
            if self.socket.exists() {
                problems.push(format!("leftover socket {}", self.socket.display()));
            }
            match fs::read_dir(&dir) {
                Ok(entries) => {
                    for entry in entries.flatten() {
                        problems.push(format!("leftover file {}", entry.path().display()));
                    }
                }
                Err(err) => problems.push(format!("cannot list {}: {err}", dir.display())),
            }
            if let Err(err) = fs::remove_dir_all(&dir) {
                problems.push(format!("cannot remove {}: {err}", dir.display()));
            } else if dir.exists() {
                problems.push(format!("{} is still there", dir.display()));
            }
        }
        let shm = Path::new(SHM_DIR).join(&self.shm_name);
        if shm.exists() {
            problems.push(format!("leftover shared memory {}", shm.display()));
            if let Err(err) = fs::remove_file(&shm) {
                problems.push(format!("cannot remove {}: {err}", shm.display()));
            }
        }
        problems
    }
}

/// `bytes` with every comma doubled.
fn escape_commas(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for &b in bytes {
        out.push(b);
        if b == b',' {
            out.push(b',');
        }
    }
    out
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args_os().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => {
            let _ = io::stdout().lock().write_all(USAGE.as_bytes());
            return ExitCode::SUCCESS;
        }
        Err(msg) => {
            note(format_args!("{msg}"));
            let _ = io::stderr().lock().write_all(USAGE.as_bytes());
            return ExitCode::from(2);
        }
    };
    // Before any child exists: from now on these signals only wake the loop.
    let signals = match SignalFd::new(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGCHLD]) {
        Ok(signals) => signals,
        Err(err) => {
            note(format_args!("cannot set up signal handling: {err}"));
            return ExitCode::FAILURE;
        }
    };
    let log = match File::create(&args.log) {
        Ok(log) => log,
        Err(err) => {
            note(format_args!(
                "cannot create the log {}: {err}",
                args.log.display()
            ));
            return ExitCode::FAILURE;
        }
    };
    let exe_dir = match std::env::current_exe() {
        Ok(exe) => exe.parent().map(Path::to_path_buf).unwrap_or_default(),
        Err(err) => {
            note(format_args!("cannot find this program's own path: {err}"));
            return ExitCode::FAILURE;
        }
    };

    let mut runner = Runner {
        args,
        signals,
        log,
        exe_dir,
        dir: None,
        socket: PathBuf::new(),
        ram: PathBuf::new(),
        shm_name: format!("vgsp-ivshmem-{}", std::process::id()),
        server: None,
        gsp: None,
        qemu: None,
        streams: Vec::new(),
        server_ready: false,
        qemu_status: None,
        interrupted: None,
        errors: Vec::new(),
    };
    let outcome = runner.run();
    if let Outcome::Failed(msg) = &outcome {
        note(format_args!("{msg}"));
    }
    let problems = runner.cleanup();
    for problem in &problems {
        note(format_args!("error: {problem}"));
    }
    if let Some(status) = runner.qemu_status {
        note(format_args!("QEMU's exit status: {status}"));
    }

    match outcome {
        Outcome::TimedOut => ExitCode::from(124),
        // CAST: signal numbers are small.
        Outcome::Interrupted(signal) => ExitCode::from((128 + signal) as u8),
        Outcome::Failed(_) => ExitCode::FAILURE,
        Outcome::Finished if problems.is_empty() => {
            note(format_args!("done; everything cleaned up"));
            ExitCode::SUCCESS
        }
        Outcome::Finished => ExitCode::FAILURE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Option<Args>, String> {
        parse_args(args.iter().map(OsString::from))
    }

    #[test]
    fn parses_the_command_line() {
        let args = parse(&[
            "--log",
            "l",
            "--timeout=7",
            "--gsp",
            "g",
            "--gsp-arg",
            "x",
            "--gsp-arg=--y",
            "--",
            "qemu-system-x86_64",
            "--log",
            "-m",
            "512",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(args.log, PathBuf::from("l"));
        assert_eq!(args.timeout, Duration::from_secs(7));
        assert_eq!(args.gsp, Some(PathBuf::from("g")));
        assert_eq!(args.gsp_args, ["x", "--y"]);
        assert_eq!(args.qemu, ["qemu-system-x86_64", "--log", "-m", "512"]);
        let args = parse(&["--log", "l", "--", "qemu-system-x86_64", "-m", "1"])
            .unwrap()
            .unwrap();
        assert_eq!(args.timeout, DEFAULT_TIMEOUT);
        assert!(parse(&["--help"]).unwrap().is_none());
    }

    #[test]
    fn rejects_bad_command_lines() {
        let q = ["qemu-system-x86_64", "-m", "1"];
        assert!(parse(&[&["--"][..], &q].concat())
            .unwrap_err()
            .contains("--log"));
        assert!(parse(&["--log", "l"]).unwrap_err().contains("missing --"));
        assert!(parse(&["--log", "l", "--"])
            .unwrap_err()
            .contains("QEMU_BINARY"));
        assert!(parse(&[&["--log", "l", "--timeout", "0", "--"][..], &q].concat()).is_err());
        assert!(parse(&[&["--log", "l", "--timeout", "x", "--"][..], &q].concat()).is_err());
        assert!(parse(&["--log"]).unwrap_err().contains("needs a value"));
    }

    fn guest(qemu: &[&str]) -> Result<Guest, String> {
        guest_of(&qemu.iter().map(OsString::from).collect::<Vec<_>>())
    }

    #[test]
    fn x86_64_ram_starts_at_0() {
        let g = guest(&["/usr/bin/qemu-system-x86_64", "-m", "512"]).unwrap();
        assert_eq!(
            g,
            Guest {
                ram_size: 512 << 20,
                ram_base: 0
            }
        );
    }

    #[test]
    fn aarch64_virt_ram_starts_at_1_gib() {
        let g = guest(&[
            "qemu-system-aarch64",
            "-M",
            "virt",
            "-cpu",
            "cortex-a72",
            "-m",
            "512M",
        ])
        .unwrap();
        assert_eq!(
            g,
            Guest {
                ram_size: 512 << 20,
                ram_base: 0x4000_0000
            }
        );
        let g = guest(&[
            "qemu-system-aarch64",
            "-machine",
            "type=virt-7.2,gic-version=3",
            "-m",
            "64",
        ])
        .unwrap();
        assert_eq!(g.ram_base, 0x4000_0000);
    }

    #[test]
    fn other_qemu_binaries_are_refused() {
        let err = guest(&["/bin/sh", "-m", "512"]).unwrap_err();
        assert!(
            err.contains("qemu-system-x86_64") && err.contains("/bin/sh"),
            "{err}"
        );
        assert!(guest(&["qemu-system-riscv64", "-m", "512"]).is_err());
    }

    #[test]
    fn machines_whose_ram_the_runner_does_not_know_are_refused() {
        let err = guest(&["qemu-system-aarch64", "-M", "raspi3b", "-m", "512"]).unwrap_err();
        assert!(err.contains("raspi3b"), "{err}");
        assert!(guest(&["qemu-system-aarch64", "-m", "512"]).is_err());
        assert!(guest(&["qemu-system-x86_64", "-M", "microvm", "-m", "512"]).is_err());
        assert!(guest(&["qemu-system-x86_64", "-M", "q35", "-m", "512"]).is_ok());
    }

    #[test]
    fn only_plain_and_mib_ram_sizes_are_understood() {
        for bad in [
            "1G",
            "512m",
            "size=512M",
            "512M,slots=2,maxmem=1G",
            "0",
            "M",
            "+5",
        ] {
            let err = guest(&["qemu-system-x86_64", "-m", bad]).unwrap_err();
            assert!(
                err.contains(&format!("\"-m {bad}\"")) && err.contains("-m NM"),
                "{err}"
            );
        }
    }

    #[test]
    fn the_ram_size_is_required_once() {
        assert!(guest(&["qemu-system-x86_64"])
            .unwrap_err()
            .contains("no -m"));
        assert!(guest(&["qemu-system-x86_64", "-m", "1", "-m", "2"])
            .unwrap_err()
            .contains("more than once"));
    }

    #[test]
    fn ram_that_qemu_splits_below_4_gib_is_refused() {
        assert!(guest(&["qemu-system-x86_64", "-m", "3583"]).is_ok());
        assert!(guest(&["qemu-system-x86_64", "-m", "3584"])
            .unwrap_err()
            .contains("linear"));
        assert!(guest(&["qemu-system-x86_64", "-M", "q35", "-m", "2816"]).is_err());
        assert!(guest(&["qemu-system-aarch64", "-M", "virt", "-m", "8192"]).is_ok());
    }

    #[test]
    fn doubles_commas_for_qemu() {
        assert_eq!(escape_commas(b"/a,b,,c"), b"/a,,b,,,,c");
    }
}
