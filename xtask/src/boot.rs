// SPDX-License-Identifier: GPL-2.0

//! `cargo xtask upstream [--tree DIR] [--patch FILE|--series]... boot [--arch arm64]`: the
//! tree's nova-core, built into the tree's own kernel, boots an emulated GH100
//! (`drivers/gpu/vgsp/gh100`) under QEMU 11, the GSP being ours.
//!
//! The GPU reaches QEMU over vfio-user (`vfio-user-pci`), on both architectures: arm64
//! is why (GH100's home is Grace, and the barriers this project is about can only go
//! wrong on a weakly ordered CPU; QEMU's multi-process proxy device exists only where
//! QEMU has KVM support, not in `qemu-system-aarch64`), and one transport serves x86_64
//! as well: the proxy device it used before is experimental (`x-`), carries no
//! interrupt under TCG and blocks migration, and the same QEMU 11 comes from the same
//! private root for both ([`qemu`]). Measured on 2026-12-06 with QEMU 11.1.3: 7.3.4's
//! boot over vfio-user, 1.8 s from QEMU's start to its end on x86_64, 0.8–1.1 s on arm64.
//!
//! 1. The device's tools are built: `vgsp-gh100` (the device and QEMU's runner),
//!    `vgsp-gh100-firmware` (the firmware files, our own content) and `vgsp-gh100-init`
//!    (the guest's `/init`, static).
//! 2. The firmware files go to `<cache>/gh100-firmware`, which the kernel's configuration
//!    names (`CONFIG_EXTRA_FIRMWARE_DIR`): they are built into the kernel, which has no
//!    root file system. The configuration is the one `upstream kernel` builds with
//!    ([`boot_fragment`]), so the two share a build directory and only nova-core is
//!    rebuilt from one tree or patch set to the next.
//! 3. The initramfs is `/init`, `/dev/console` and `/dev/kmsg`; the init unbinds
//!    nova-core's devices (the GSP's unload), logging through the kernel's log so its lines
//!    come whole among the driver's, and restarts the machine, which ends QEMU
//!    (`-no-reboot`).
//! 4. The verdict reads the guest's console and the device's transcript ([`verdict`]):
//!    one `boot:` line per stage, quoting the driver's own lines; anything wrong prints
//!    the console lines around it and the whole transcript.
//! 5. A boot that shows no progress for [`stall::QUIET`] (no register access, doorbell or
//!    console line) is a hang, stopped then ([`stall`]); one that overruns its cap (180 s,
//!    60 s against a hostile GSP) too. A traced boot (a plugin slows the guest many times)
//!    has the cap alone.

pub(crate) mod pool;
mod stall;

use std::{
    ffi::{
        OsStr,
        OsString, //
    },
    fmt, fs,
    io::Read,
    path::{
        Path,
        PathBuf, //
    },
    process::{
        Child,
        Command,
        Stdio, //
    },
    thread,
    time::{
        Duration,
        Instant, //
    },
};

use crate::{
    kbuild::Arch,
    qemu,
    util::{
        aarch64,
        process::{
            last_lines,
            Progress, //
        },
    }, //
};

/// How long a boot may take, in seconds, before the runner kills QEMU.
const BOOT_TIMEOUT: u64 = 180;
/// How long a boot against a hostile GSP may take, in seconds, whatever its progress: a
/// normal boot takes seconds, the driver's longest wait is 30 s (the GSP's lockdown
/// release, polled), so a boot still running after a minute is a hang. A quiet hang is
/// stopped long before ([`stall`]).
const FAULT_BOOT_TIMEOUT: u64 = 60;
/// How often the runner looks at a boot's progress.
const WATCH_EVERY: Duration = Duration::from_millis(100);
/// How long the device runner may take to end after it was asked to stop.
const STOP_GRACE: Duration = Duration::from_secs(10);
/// The guest's RAM, in MiB.
const GUEST_MIB: &str = "512";

/// The built tools of `drivers/gpu/vgsp/gh100`.
pub(crate) struct Tools {
    device: PathBuf,
    firmware: PathBuf,
    init: PathBuf,
}

/// Builds the device's tools (release, for this machine) and the guest's init (static,
/// for `arch`).
///
/// # Errors
///
/// A build that fails, with cargo's last lines.
pub(crate) fn tools(repo: &Path, arch: Arch, progress: Progress) -> Result<Tools, String> {
    progress.say("building the emulated GH100 (drivers/gpu/vgsp/gh100)");
    let target = repo.join("target");
    let build = |args: &[&str], target_dir: &Path| -> Result<(), String> {
        let out = Command::new(env!("CARGO"))
            .args(args)
            .current_dir(repo)
            .env("CARGO_TARGET_DIR", target_dir)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run cargo: {e}"))?;
        match out.status.success() {
            true => Ok(()),
            false => Err(format!(
                "cargo {} failed:\n{}",
                args.join(" "),
                last_lines(&String::from_utf8_lossy(&out.stderr), 20)
            )),
        }
    };
    build(
        &[
            "build",
            "--release",
            "-p",
            "vgsp-gh100",
            "--bin",
            "vgsp-gh100",
            "--bin",
            "vgsp-gh100-firmware",
        ],
        &target,
    )?;
    let init = match arch {
        Arch::X86_64 => {
            // Its own target directory: the static flag would otherwise rebuild the others.
            let init_target = target.join("gh100-init");
            build(
                &[
                    "rustc",
                    "--release",
                    "-p",
                    "vgsp-gh100-init",
                    "--",
                    "-C",
                    "target-feature=+crt-static",
                ],
                &init_target,
            )?;
            init_target.join("release/vgsp-gh100-init")
        }
        Arch::Arm64 => {
            progress.say("building the guest's init for arm64");
            aarch64::build(
                repo,
                "gh100-init-arm64",
                &repo.join("drivers/gpu/vgsp/gh100/init"),
                "vgsp-gh100-init",
                &[],
                &[(
                    "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUSTFLAGS",
                    "-C target-feature=+crt-static".into(),
                )],
            )?
        }
    };
    Ok(Tools {
        device: target.join("release/vgsp-gh100"),
        firmware: target.join("release/vgsp-gh100-firmware"),
        init,
    })
}

impl Tools {
    /// The guest's init.
    pub(crate) fn init(&self) -> &Path {
        &self.init
    }
}

/// Writes the firmware files under `dir` with the tool; returns their paths relative to
/// it, in request order.
///
/// # Errors
///
/// The tool fails.
pub(crate) fn firmware(tools: &Tools, dir: &Path) -> Result<Vec<String>, String> {
    let out = Command::new(&tools.firmware)
        .arg(dir)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", tools.firmware.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} failed: {}",
            tools.firmware.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect())
}

/// The options the boot adds to the configuration of `upstream kernel`'s build: an
/// initramfs and an ELF init, sysfs to unbind the driver, timestamps, and the firmware
/// built in from `dir`. On arm64, DWARF too: the ordering trace maps the kernel's pcs to
/// source lines, and one configuration serves the boot and its trace.
pub(crate) fn boot_fragment(arch: Arch, dir: &Path, files: &[String]) -> String {
    let debug = match arch {
        Arch::X86_64 => "",
        Arch::Arm64 => "CONFIG_DEBUG_KERNEL=y\nCONFIG_DEBUG_INFO_DWARF5=y\n",
    };
    format!(
        "# The emulated GH100's boot (cargo xtask upstream boot).\n\
         CONFIG_BLK_DEV_INITRD=y\nCONFIG_BINFMT_ELF=y\nCONFIG_SYSFS=y\nCONFIG_PRINTK_TIME=y\n\
         CONFIG_EXTRA_FIRMWARE=\"{}\"\nCONFIG_EXTRA_FIRMWARE_DIR=\"{}\"\n{debug}",
        files.join(" "),
        dir.display()
    )
}

/// Appends one entry of a `newc` cpio archive.
fn cpio_entry(out: &mut Vec<u8>, ino: u32, name: &str, mode: u32, rdev: (u32, u32), data: &[u8]) {
    let fields = [
        ino,
        mode,
        0,
        0,
        1,
        0,
        // CAST: an init binary is far below 4 GiB.
        data.len() as u32,
        0,
        0,
        rdev.0,
        rdev.1,
        // CAST: a short name.
        name.len() as u32 + 1,
        0,
    ];
    out.extend_from_slice(b"070701");
    for f in fields {
        out.extend_from_slice(format!("{f:08x}").as_bytes());
    }
    out.extend_from_slice(name.as_bytes());
    out.push(0);
    while !out.len().is_multiple_of(4) {
        out.push(0);
    }
    out.extend_from_slice(data);
    while !out.len().is_multiple_of(4) {
        out.push(0);
    }
}

/// Returns the initramfs: `/dev/console`, `/dev/kmsg` (where the init logs) and `/init`,
/// as a `newc` cpio archive.
pub(crate) fn initramfs(init: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    cpio_entry(&mut out, 1, "dev", 0o040_755, (0, 0), &[]);
    cpio_entry(&mut out, 2, "dev/console", 0o020_600, (5, 1), &[]);
    cpio_entry(&mut out, 3, "dev/kmsg", 0o020_600, (1, 11), &[]);
    cpio_entry(&mut out, 4, "init", 0o100_755, (0, 0), init);
    cpio_entry(&mut out, 0, "TRAILER!!!", 0, (0, 0), &[]);
    out
}

/// What one boot produced.
pub(crate) struct Run {
    /// The guest's console.
    pub(crate) console: String,
    /// The device's transcript (`gh100: …` lines).
    pub(crate) transcript: String,
    /// How long the boot took.
    pub(crate) seconds: f64,
    /// Why the runner failed, if it did (not a hang).
    pub(crate) runner: Option<String>,
    /// Why the boot was stopped as a hang, if it was.
    pub(crate) hang: Option<Hang>,
}

/// Why a boot was stopped as a hang.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hang {
    /// No progress for this long ([`stall`]).
    Quiet(Duration),
    /// Still running at its cap, in seconds.
    Overran(u64),
}

impl fmt::Display for Hang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Hang::Quiet(quiet) => write!(
                f,
                "no progress for {} s (no register access, doorbell or console line)",
                quiet.as_secs()
            ),
            Hang::Overran(cap) => write!(f, "no end within {cap} s"),
        }
    }
}

/// The machine a boot runs: the guest's architecture, its kernel and initramfs, and what
/// else QEMU is given (a plugin).
pub(crate) struct Guest<'a> {
    /// The guest's architecture.
    pub(crate) arch: Arch,
    /// The kernel's image.
    pub(crate) image: &'a Path,
    /// The initramfs ([`initramfs`]).
    pub(crate) initrd: &'a Path,
    /// More arguments for QEMU.
    pub(crate) qemu_args: Vec<OsString>,
}

/// Returns QEMU's command line for `guest`, from the program on: QEMU 11 from the cache's
/// private root ([`qemu`]), whose `vfio-user-pci` device carries the GPU on both
/// architectures; x86_64 a `pc` machine with one vCPU, arm64 a `virt` machine with 2, as
/// a Grace has many.
fn qemu_command(guest: &Guest) -> Result<Vec<OsString>, String> {
    let qemu = qemu::system(match guest.arch {
        Arch::X86_64 => "x86_64",
        Arch::Arm64 => "aarch64",
    })?;
    let mut line: Vec<OsString> = vec![qemu.get_program().to_owned()];
    line.extend(qemu.get_args().map(OsStr::to_owned));
    let (machine, append): (&[&str], &str) = match guest.arch {
        Arch::X86_64 => (
            &["-machine", "pc,accel=tcg", "-smp", "1"],
            "console=ttyS0 panic=-1 kunit.enable=0 printk.devkmsg=on",
        ),
        Arch::Arm64 => (
            &["-machine", "virt,accel=tcg", "-cpu", "max", "-smp", "2"],
            // nokaslr: the kernel's text where System.map says, for the trace;
            // arm64.nomops: `memcpy` as loads and stores a plugin sees, not MOPS
            // instructions `-cpu max` has and Grace's Neoverse V2 does not.
            "console=ttyAMA0 panic=-1 kunit.enable=0 printk.devkmsg=on nokaslr arm64.nomops",
        ),
    };
    line.extend(machine.iter().map(OsString::from));
    line.extend(
        ["-nographic", "-no-reboot", "-nic", "none", "-kernel"]
            .iter()
            .map(OsString::from),
    );
    line.push(guest.image.into());
    line.push("-initrd".into());
    line.push(guest.initrd.into());
    // KUnit's suites are the kernel tier's business: not run here.
    line.push("-append".into());
    line.push(append.into());
    line.extend(guest.qemu_args.iter().cloned());
    Ok(line)
}

/// Boots `guest` against the emulated GH100; the logs go to `dir`. The boot is watched
/// ([`stall`]) unless a plugin traces it, and stopped as a hang when it stalls.
///
/// # Errors
///
/// The runner or QEMU cannot be started, or the runner does not end when stopped.
pub(crate) fn run(
    tools: &Tools,
    guest: &Guest,
    dir: &Path,
    fault: Option<&str>,
) -> Result<Run, String> {
    let console_log = dir.join("boot.log");
    let activity = dir.join("activity");
    let _ = fs::remove_file(&activity);
    let qemu = qemu_command(guest)?;
    let started = Instant::now();
    let mut device = Command::new(&tools.device);
    device
        .arg("--log")
        .arg(&console_log)
        .arg("--activity")
        .arg(&activity);
    if let Some(fault) = fault {
        device.args(["--gsp-fault", fault]);
    }
    let cap = match fault {
        Some(_) => FAULT_BOOT_TIMEOUT,
        None => BOOT_TIMEOUT,
    };
    let mut child = device
        .args(["--timeout", &cap.to_string(), "--memory", GUEST_MIB, "--"])
        .args(&qemu)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", tools.device.display()))?;
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    // A traced boot runs many times slower: its quiet stretches are no hang.
    let mut watch = guest
        .qemu_args
        .is_empty()
        .then(|| stall::Watch::new(stall::QUIET));
    let (status, stalled) = wait_watched(&mut child, watch.as_mut(), &console_log, &activity)?;
    let seconds = started.elapsed().as_secs_f64();
    // For the next run's order ([`pool::longest_first`]) and the hang rule's margin: how
    // long the boot took, how quiet it got ([`stall`]).
    let mut watched = format!("seconds: {seconds:.1}\n");
    if let Some(watch) = &watch {
        let quiet = watch.longest().as_secs_f64();
        watched += &format!("longest quiet stretch: {quiet:.1} s\n");
    }
    fs::write(dir.join(WATCH_LOG), watched).map_err(|e| format!("{}: {e}", dir.display()))?;
    let transcript = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    fs::write(dir.join("transcript.log"), &transcript)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let console = fs::read_to_string(&console_log).unwrap_or_default();
    let (runner, hang) = match (stalled, status.code()) {
        (Some(quiet), Some(124)) => (None, Some(Hang::Quiet(quiet))),
        (None, Some(124)) => (None, Some(Hang::Overran(cap))),
        (_, Some(0)) => (None, None),
        _ => (
            Some(format!(
                "the device's runner failed ({status}): {}",
                stderr.trim()
            )),
            None,
        ),
    };
    Ok(Run {
        console,
        transcript,
        seconds,
        runner,
        hang,
    })
}

/// What [`run`] writes beside a boot's logs: its time and longest quiet stretch.
const WATCH_LOG: &str = "watch.log";

/// Returns how long the last boot whose logs are in `dir` took, if one did.
pub(crate) fn last_seconds(dir: &Path) -> Option<f64> {
    let text = fs::read_to_string(dir.join(WATCH_LOG)).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("seconds: "))?
        .parse()
        .ok()
}

/// Reads all of `pipe` on a thread of its own; the handle returns it.
fn drain(pipe: Option<impl Read + Send + 'static>) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut text = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut text);
        }
        String::from_utf8_lossy(&text).into_owned()
    })
}

/// Returns a boot's progress so far: the device's count of register accesses
/// (`vgsp_gh100::activity`'s file; 0 until written) and the console's length.
fn signs(console: &Path, activity: &Path) -> stall::Signs {
    let accesses = fs::read_to_string(activity)
        .ok()
        .and_then(|t| t.strip_suffix('\n')?.parse().ok())
        .unwrap_or(0);
    let console = fs::metadata(console).map_or(0, |m| m.len());
    stall::Signs { accesses, console }
}

/// Waits for the device runner `child` to end; with a `watch`, stops it (`SIGTERM`, which
/// it takes as a stop) when the boot stalls. Returns its status, and how long the boot
/// had been quiet when it was stopped.
fn wait_watched(
    child: &mut Child,
    mut watch: Option<&mut stall::Watch>,
    console: &Path,
    activity: &Path,
) -> Result<(std::process::ExitStatus, Option<Duration>), String> {
    let started = Instant::now();
    let mut stalled: Option<(Duration, Instant)> = None;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok((status, stalled.map(|(quiet, _)| quiet))),
            Ok(None) => {}
            Err(e) => return Err(format!("waiting for the device's runner: {e}")),
        }
        match (&stalled, watch.as_deref_mut()) {
            (Some((_, asked)), _) if asked.elapsed() > STOP_GRACE => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "the device's runner did not stop within {} s of SIGTERM",
                    STOP_GRACE.as_secs()
                ));
            }
            (None, Some(watch)) => {
                if let Some(quiet) = watch.observe(started.elapsed(), signs(console, activity)) {
                    stop(child);
                    stalled = Some((quiet, Instant::now()));
                }
            }
            _ => {}
        }
        thread::sleep(WATCH_EVERY);
    }
}

/// Sends `SIGTERM` to `child`, which the device runner takes as a stop.
fn stop(child: &Child) {
    // CAST: a running child's pid is a positive `pid_t`.
    let pid = child.id() as libc::pid_t;
    // SAFETY: a plain syscall; `pid` is our unwaited child, so it names that process.
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
}

/// Returns the names of the GSP's faults, from the device.
///
/// # Errors
///
/// The device cannot be run.
pub(crate) fn faults(tools: &Tools) -> Result<Vec<String>, String> {
    let out = Command::new(&tools.device)
        .arg("--list-faults")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", tools.device.display()))?;
    let names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split('\t').next())
        .map(str::to_string)
        .collect();
    if !out.status.success() || names.is_empty() {
        return Err(format!(
            "{} --list-faults listed no fault ({})",
            tools.device.display(),
            out.status
        ));
    }
    Ok(names)
}

/// The errno names a probe's failure is reported with.
const ERRNOS: &[(i32, &str)] = &[
    (2, "ENOENT"),
    (5, "EIO"),
    (11, "EAGAIN"),
    (12, "ENOMEM"),
    (16, "EBUSY"),
    (19, "ENODEV"),
    (22, "EINVAL"),
    (34, "ERANGE"),
    (61, "ENODATA"),
    (62, "ETIME"),
    (71, "EPROTO"),
    (74, "EBADMSG"),
    (75, "EOVERFLOW"),
    (90, "EMSGSIZE"),
    (95, "EOPNOTSUPP"),
    (110, "ETIMEDOUT"),
    (524, "ENOTSUPP"),
];

/// Returns what the driver did in a boot against a hostile GSP, in a line: an Oops, a
/// hang, a failed probe (its errno and the driver's last error line before it), or a
/// probe that took what it was given.
pub(crate) fn behaviour(run: &Run) -> String {
    let console: Vec<&str> = run.console.lines().map(message).collect();
    if let Some(line) = console.iter().find(|l| BAD.iter().any(|b| l.contains(b))) {
        return format!("Oops: {line}");
    }
    if let Some(hang) = &run.hang {
        let last = console
            .iter()
            .rev()
            .find(|l| l.starts_with("nova-core "))
            .unwrap_or(&"no line of nova-core's");
        return format!("hang: {hang}; last driver line: {last}");
    }
    let failed = console
        .iter()
        .position(|l| l.contains("probe with driver nova-core failed with error"));
    if let Some(i) = failed {
        let errno = console[i]
            .rsplit(' ')
            .next()
            .and_then(|n| n.parse::<i32>().ok())
            .unwrap_or(0);
        let name = ERRNOS
            .iter()
            .find(|(n, _)| *n == -errno)
            .map_or("?", |(_, name)| name);
        // The driver's lines after its chipset line: what it said about the failure.
        let from = console[..i]
            .iter()
            .position(|l| l.contains("NVIDIA (Chipset:"))
            .map_or(0, |c| c + 1);
        let said: Vec<&str> = console[from..i]
            .iter()
            .filter_map(|l| l.strip_prefix("nova-core "))
            .map(|l| l.split_once(": ").map_or(l, |(_, m)| m))
            .collect();
        let said = match said.is_empty() {
            true => "nothing".to_string(),
            false => said.join(" | "),
        };
        return format!("probe failed with {name} ({errno}); the driver said: {said}");
    }
    if let Some(name) = console
        .iter()
        .find(|l| l.starts_with("nova-core ") && l.contains("GPU name:"))
    {
        return format!("accepted: the probe succeeded ({name})");
    }
    "unknown".to_string()
}

/// A stage of the boot and the line that shows it.
struct Stage {
    name: &'static str,
    shown_by: Option<String>,
}

/// Returns the console's message without its timestamp.
fn message(line: &str) -> &str {
    let line = line.trim_end_matches('\r');
    match line.strip_prefix('[').and_then(|l| l.split_once("] ")) {
        Some((_, rest)) => rest,
        None => line,
    }
}

/// The console lines that fail a boot wherever they appear.
const BAD: &[&str] = &[
    "Oops",
    "BUG:",
    "WARNING:",
    "Kernel panic",
    "general protection fault",
    "Unable to handle kernel",
    "kernel BUG",
    "Call Trace:",
];

/// Returns whether a console line is one of nova-core's error lines.
fn is_driver_error(line: &str) -> bool {
    (line.starts_with("nova-core ") || line.starts_with("NovaCore"))
        && (line.contains("failed") || line.contains("error") || line.contains("timeout"))
}

/// The verdict of a boot: one `boot:` line per stage, and the problems.
pub(crate) struct Verdict {
    /// The `boot:` lines.
    pub(crate) lines: Vec<String>,
    /// What went wrong, with context; empty when the boot is good.
    pub(crate) problems: Vec<String>,
}

/// Reads the boot: the stages in order, each shown by the driver's or the GSP's line.
pub(crate) fn verdict(run: &Run) -> Verdict {
    let console: Vec<&str> = run.console.lines().map(message).collect();
    let transcript: Vec<&str> = run
        .transcript
        .lines()
        .filter_map(|l| l.strip_prefix("gh100: "))
        .collect();
    let find = |lines: &[&str], pred: &dyn Fn(&str) -> bool| {
        lines.iter().find(|l| pred(l)).map(|l| l.to_string())
    };
    let gsp_line = |what: &str| {
        let what = what.to_string();
        move |l: &str| {
            l.starts_with(&format!("gsp: {what} "))
                && (l.ends_with(": served") || l.ends_with(" sent"))
        }
    };
    let stages = [
        Stage {
            name: "probe",
            shown_by: find(&console, &|l| l.contains("[10de:2330]")),
        },
        Stage {
            name: "chipset",
            shown_by: find(&console, &|l| {
                l.starts_with("nova-core ") && l.contains("NVIDIA (Chipset:")
            }),
        },
        Stage {
            name: "chain of trust",
            shown_by: find(&transcript, &|l| l.starts_with("fsp: COT accepted")),
        },
        Stage {
            name: "boot arguments",
            shown_by: find(&transcript, &|l| l.starts_with("fmc: boot parameters")),
        },
        Stage {
            name: "GSP_SET_SYSTEM_INFO",
            shown_by: find(&transcript, &gsp_line("GSP_SET_SYSTEM_INFO")),
        },
        Stage {
            name: "SET_REGISTRY",
            shown_by: find(&transcript, &gsp_line("SET_REGISTRY")),
        },
        Stage {
            name: "GSP_INIT_DONE",
            shown_by: find(&transcript, &gsp_line("GSP_INIT_DONE")),
        },
        Stage {
            name: "GET_GSP_STATIC_INFO",
            shown_by: find(&transcript, &gsp_line("GET_GSP_STATIC_INFO")),
        },
        Stage {
            name: "GPU name",
            shown_by: find(&console, &|l| {
                l.starts_with("nova-core ") && l.contains("GPU name:")
            }),
        },
        Stage {
            name: "unbind",
            shown_by: find(&console, &|l| l.starts_with("vgsp-gh100-init: unbound")),
        },
        Stage {
            name: "UNLOADING_GUEST_DRIVER",
            shown_by: find(&transcript, &gsp_line("UNLOADING_GUEST_DRIVER")),
        },
        Stage {
            name: "unload",
            shown_by: find(&console, &|l| {
                l.starts_with("nova-core ") && l.contains("unloaded")
            }),
        },
        Stage {
            name: "core halted",
            shown_by: find(&transcript, &|l| l == "gsp: unloading: core halted"),
        },
    ];
    let mut lines = Vec::new();
    // What the emulated GPU lacked comes first, it is why the rest went wrong: a register
    // it does not have, a firmware file it does not provide, an RPC its GSP does not know.
    let mut problems: Vec<String> = transcript
        .iter()
        .filter(|l| l.contains("not emulated"))
        .map(|l| format!("the driver used a register the GPU does not emulate: {l}"))
        .collect();
    // A file or an RPC the driver could do without is no problem when the boot went
    // through; they are added after the stages, when one was not reached.
    let mut lacked: Vec<String> = console
        .iter()
        .filter_map(|l| {
            let (_, rest) = l.split_once("firmware: failed to load ")?;
            let file = rest.split_whitespace().next()?;
            Some(format!(
                "the driver asked for the firmware file {file}, which the emulated GH100 does \
                 not provide: {l}"
            ))
        })
        .collect();
    lacked.extend(
        transcript
            .iter()
            .filter(|l| l.starts_with("gsp: ") && l.contains(": not supported"))
            .map(|l| format!("the driver sent an RPC the GSP does not know: {l}")),
    );
    for stage in &stages {
        match &stage.shown_by {
            Some(line) => lines.push(format!("boot: {}: {line}", stage.name)),
            None => lines.push(format!("boot: {}: not reached", stage.name)),
        }
    }
    if let Some(missing) = stages.iter().find(|s| s.shown_by.is_none()) {
        problems.append(&mut lacked);
        problems.push(format!("the boot never reached {}", missing.name));
    }
    let raw: Vec<&str> = run.console.lines().collect();
    for (i, line) in console.iter().enumerate() {
        let bad = BAD.iter().any(|b| line.contains(b)) || is_driver_error(line);
        if bad {
            let from = i.saturating_sub(5);
            let to = (i + 6).min(raw.len());
            problems.push(format!(
                "the console says: {line}\n{}",
                raw[from..to]
                    .iter()
                    .map(|l| format!("    | {l}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            ));
            break;
        }
    }
    if let Some(why) = &run.runner {
        problems.push(why.clone());
    }
    if let Some(hang) = &run.hang {
        problems.push(format!("the boot hung: {hang}"));
    }
    Verdict { lines, problems }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads a `newc` archive's entries: name, mode, file size, device number.
    fn entries(mut cpio: &[u8]) -> Vec<(String, u32, usize, (u32, u32))> {
        let mut out = Vec::new();
        while !cpio.is_empty() {
            assert_eq!(&cpio[..6], b"070701");
            let field = |i: usize| {
                u32::from_str_radix(
                    std::str::from_utf8(&cpio[6 + 8 * i..14 + 8 * i]).unwrap(),
                    16,
                )
                .unwrap()
            };
            let (mode, size, namesize) = (field(1), field(6) as usize, field(11) as usize);
            let rdev = (field(9), field(10));
            let name = String::from_utf8(cpio[110..110 + namesize - 1].to_vec()).unwrap();
            let data = (110 + namesize).next_multiple_of(4);
            cpio = &cpio[(data + size).next_multiple_of(4)..];
            out.push((name, mode, size, rdev));
        }
        out
    }

    #[test]
    fn the_initramfs_holds_the_console_the_log_and_the_init_then_its_trailer() {
        let got = entries(&initramfs(b"\x7fELF!"));
        let want = [
            ("dev", 0o040_755, 0, (0, 0)),
            ("dev/console", 0o020_600, 0, (5, 1)),
            ("dev/kmsg", 0o020_600, 0, (1, 11)),
            ("init", 0o100_755, 5, (0, 0)),
            ("TRAILER!!!", 0, 0, (0, 0)),
        ];
        let want: Vec<_> = want
            .iter()
            .map(|(n, m, s, d)| (n.to_string(), *m, *s, *d))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_console_timestamp_is_not_part_of_the_message() {
        assert_eq!(
            message("[    1.234567] nova-core 0000:00:04.0: x"),
            "nova-core 0000:00:04.0: x"
        );
    }

    #[test]
    fn a_register_not_emulated_fails_the_boot_by_its_offset() {
        let run = Run {
            console: String::new(),
            transcript: "gh100: register 0x123450 read: not emulated, returned 0\n".into(),
            seconds: 1.0,
            runner: None,
            hang: None,
        };
        let v = verdict(&run);
        assert!(v.problems[0].contains("0x123450"), "{:?}", v.problems);
    }

    #[test]
    fn a_failed_probe_is_reported_with_its_errno_and_the_driver_s_lines() {
        let run = Run {
            console: "[ 1.0] nova-core 0000:00:03.0: NVIDIA (Chipset: GH100)\n\
                      [ 2.0] nova-core 0000:00:03.0: failed to unload GSP: Error(5)\n\
                      [ 2.1] nova-core 0000:00:03.0: probe with driver nova-core failed with error -5\n"
                .into(),
            transcript: String::new(),
            seconds: 1.0,
            runner: None,
            hang: None,
        };
        assert_eq!(
            behaviour(&run),
            "probe failed with EIO (-5); the driver said: failed to unload GSP: Error(5)"
        );
    }

    #[test]
    fn a_firmware_file_not_provided_fails_the_boot_by_its_name() {
        let run = Run {
            console: "[ 1.0] nova-core 0000:00:04.0: firmware: failed to load \
                      nvidia/gh100/gsp/fmc-570.144.bin (-2)\n"
                .into(),
            transcript: String::new(),
            seconds: 1.0,
            runner: None,
            hang: None,
        };
        let v = verdict(&run);
        assert!(
            v.problems[0].starts_with(
                "the driver asked for the firmware file nvidia/gh100/gsp/fmc-570.144.bin,"
            ),
            "{:?}",
            v.problems
        );
    }

    #[test]
    fn an_rpc_the_gsp_does_not_know_fails_the_boot_by_its_name() {
        let run = Run {
            console: String::new(),
            transcript: "gh100: gsp: GSP_RM_CONTROL (sequence 7): not supported, answered \
                         NV_ERR_NOT_SUPPORTED\n"
                .into(),
            seconds: 1.0,
            runner: None,
            hang: None,
        };
        let v = verdict(&run);
        assert!(
            v.problems[0].contains("GSP_RM_CONTROL (sequence 7)"),
            "{:?}",
            v.problems
        );
    }

    #[test]
    fn a_quiet_hang_is_reported_with_its_stretch_and_the_driver_s_last_line() {
        let run = Run {
            console: "[ 1.0] nova-core 0000:00:03.0: NVIDIA (Chipset: GH100)\n\
                      [ 1.1] nova-core 0000:00:03.0: GSP message GspInitDone has unprocessed data\n\
                      [ 1.5] clocksource: Switched to clocksource tsc\n"
                .into(),
            transcript: String::new(),
            seconds: 12.0,
            runner: None,
            hang: Some(Hang::Quiet(Duration::from_secs(10))),
        };
        assert_eq!(
            behaviour(&run),
            "hang: no progress for 10 s (no register access, doorbell or console line); last \
             driver line: nova-core 0000:00:03.0: GSP message GspInitDone has unprocessed data"
        );
        let v = verdict(&run);
        assert_eq!(
            v.problems.last().map(String::as_str),
            Some("the boot hung: no progress for 10 s (no register access, doorbell or console line)")
        );
    }

    #[test]
    fn a_boot_past_its_cap_is_a_hang_of_the_cap() {
        let run = Run {
            console: String::new(),
            transcript: String::new(),
            seconds: 60.0,
            runner: None,
            hang: Some(Hang::Overran(60)),
        };
        assert_eq!(
            behaviour(&run),
            "hang: no end within 60 s; last driver line: no line of nova-core's"
        );
    }

    #[test]
    fn the_last_boot_s_time_is_read_back_and_its_absence_is_none() {
        let dir = std::env::temp_dir().join(format!("xtask-watch-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        assert_eq!(last_seconds(&dir), None);
        fs::write(
            dir.join(WATCH_LOG),
            "seconds: 7.5\nlongest quiet stretch: 5.0 s\n",
        )
        .unwrap();
        assert_eq!(last_seconds(&dir), Some(7.5));
        fs::write(dir.join(WATCH_LOG), "seconds: x\n").unwrap();
        assert_eq!(last_seconds(&dir), None);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_boot_without_the_chipset_line_names_that_stage() {
        let run = Run {
            console: "[ 0.1] pci 0000:00:04.0: [10de:2330] type 00\n".into(),
            transcript: String::new(),
            seconds: 1.0,
            runner: None,
            hang: None,
        };
        let v = verdict(&run);
        assert_eq!(v.problems[0], "the boot never reached chipset");
    }
}
