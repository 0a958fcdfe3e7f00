// SPDX-License-Identifier: GPL-2.0

//! `vgsp-gh100`: boots QEMU with an emulated GH100, this process being the device.
//!
//! ```text
//! vgsp-gh100 --log FILE [--timeout SECS] [--memory MIB] [--gsp-fault NAME] [--activity FILE] -- QEMU_BINARY QEMU_ARGS...
//! vgsp-gh100 --list-faults
//! vgsp-gh100 --list-registers
//! ```
//!
//! 1. Serves the device on a thread over vfio-user (QEMU ≥ 10.1, any target): a socket in
//!    a private temporary directory, named to QEMU as
//!    `-device {"driver":"vfio-user-pci",…,"socket":{"path":…}}`
//!    ([`vgsp_gh100::vfio::Listener`]).
//! 2. Gives the guest `--memory` MiB (512 by default) of RAM QEMU can hand over:
//!    `-m`, `-object memory-backend-memfd,…,share=on` and `-machine memory-backend=…`,
//!    after the caller's arguments (QEMU merges the two `-machine` options, the caller's
//!    `virt,…` or `pc,…` and this one).
//! 3. Every line of QEMU's standard output and error goes to the log FILE; the device's
//!    transcript (`gh100: …` lines) to standard output.
//! 4. With `--gsp-fault`, the GSP misbehaves as [`vgsp_gh100::fault`] names.
//! 5. Waits for QEMU to exit, or for the timeout (300 s by default), when it kills it.
//! 6. With `--activity FILE`, keeps the count of the driver's register accesses in FILE
//!    and takes `SIGTERM` as a stop: QEMU killed, as on the timeout
//!    ([`vgsp_gh100::activity`]; the runner that watches the count sends it).
//!
//! Exit status: 0 when QEMU ran to its end and the device followed the protocol; 124 on
//! the timeout or the stop; 1 when QEMU or the device failed (the reason on standard error); 2 for
//! a usage error.

use std::{
    fs::File,
    io,
    os::unix::process::CommandExt,
    process::{
        Command,
        ExitCode,
        Stdio, //
    },
    thread,
    time::{
        Duration,
        Instant, //
    },
};

use vgsp_gh100::{
    activity::{
        self,
        Activity,
        Publisher, //
    },
    fault::Fault,
    gh100::Gh100,
    vfio, //
};

/// How long QEMU may take to end once it has closed the device's link.
const QEMU_EXIT_GRACE: Duration = Duration::from_secs(10);

const USAGE: &str =
    "usage: vgsp-gh100 --log FILE [--timeout SECS] [--memory MIB] [--gsp-fault NAME] [--activity FILE] -- QEMU_BINARY QEMU_ARGS...";

struct Args {
    log: String,
    timeout: Duration,
    memory: u64,
    fault: Option<Fault>,
    activity: Option<String>,
    qemu: Vec<String>,
}

fn parse(args: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut args = args.into_iter();
    let (mut log, mut timeout, mut memory) = (None, Duration::from_secs(300), 512);
    let (mut fault, mut activity) = (None, None);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--log" => log = Some(value("--log")?),
            "--timeout" => {
                let secs = value("--timeout")?;
                timeout = Duration::from_secs(
                    secs.parse()
                        .map_err(|_| format!("--timeout {secs}: not a number of seconds"))?,
                );
            }
            "--memory" => {
                let mib = value("--memory")?;
                memory = mib
                    .parse()
                    .ok()
                    .filter(|&m| (64..=3072).contains(&m))
                    .ok_or(format!("--memory {mib}: not a size in MiB from 64 to 3072"))?;
            }
            "--gsp-fault" => fault = Some(Fault::named(&value("--gsp-fault")?)?),
            "--activity" => activity = Some(value("--activity")?),
            "--" => {
                let qemu: Vec<String> = args.collect();
                if qemu.is_empty() {
                    return Err("no QEMU binary after --".into());
                }
                return Ok(Args {
                    log: log.ok_or("--log is needed")?,
                    timeout,
                    memory,
                    fault,
                    activity,
                    qemu,
                });
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Err("no -- QEMU_BINARY".into())
}

fn run(args: Args) -> Result<bool, String> {
    let log = File::create(&args.log).map_err(|e| format!("{}: {e}", args.log))?;
    let listener = vfio::Listener::bind().map_err(|e| format!("vfio-user socket: {e}"))?;
    let device_arg = listener.device_arg();
    // What ends the device's wait for a QEMU that never connects.
    let waker = listener.waker();
    let (mib, fault) = (args.memory, args.fault);
    let activity = Activity::default();
    let mut publisher = args.activity.as_deref().map(|p| Publisher::new(p.as_ref()));
    if let (Some(publisher), Some(path)) = (publisher.as_mut(), args.activity.as_deref()) {
        // The handler first: a watcher may send `SIGTERM` once the file exists (the
        // runner's tests do).
        activity::stop_on_sigterm().map_err(|e| format!("SIGTERM's handler: {e}"))?;
        // Before QEMU starts: a file that cannot be written stops nothing half-begun.
        publisher
            .publish(0)
            .map_err(|e| format!("the activity file {path}: {e}"))?;
    }
    let counted = activity.clone();
    let mut qemu = Command::new(&args.qemu[0]);
    qemu.args(&args.qemu[1..])
        .args(["-m", &format!("{mib}M"), "-object"])
        .arg(format!(
            "memory-backend-memfd,id=gh100-ram,size={mib}M,share=on"
        ))
        .args(["-machine", "memory-backend=gh100-ram", "-device"])
        .arg(device_arg)
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log);
    // CAST: pids fit `pid_t`.
    let runner = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the forked child before `exec`, and only makes the raw
    // system calls `prctl` and `getppid`, which take no lock; it allocates nothing
    // (`from_raw_os_error` and `last_os_error` do not).
    unsafe {
        qemu.pre_exec(move || {
            // QEMU ends with the runner, however the runner ends (a watcher's `SIGKILL`
            // included): no QEMU is left to run on, taking a CPU from the next boot. The
            // runner's main thread, which forks it, lives as long as the runner.
            // CAST: a signal number is small and positive.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The runner ended before the signal was armed.
            if libc::getppid() != runner {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
    let mut child = qemu
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", args.qemu[0]))?;
    let qemu_pid = child.id();
    let device = thread::spawn(move || {
        let mut gpu = Gh100::with_fault(fault);
        gpu.measure_cpu(qemu_pid);
        gpu.count_activity(counted);
        let served = listener.serve(&mut gpu);
        gpu.stop();
        served
    });
    let started = Instant::now();
    let mut device = Some(device);
    // When the link closed cleanly. QEMU closes it on its way out and is reaped a moment
    // later: on a loaded machine the device sees the end first.
    let mut closed: Option<Instant> = None;
    let status = loop {
        if let Some(Err(e)) = publisher.as_mut().map(|p| p.publish(activity.count())) {
            let _ = child.kill();
            let _ = child.wait();
            let path = args.activity.as_deref().unwrap_or_default();
            return Err(format!("the activity file {path}: {e}"));
        }
        if device.as_ref().is_some_and(|d| d.is_finished()) {
            let ended = device.take().map(thread::JoinHandle::join);
            let why = match ended {
                Some(Ok(Ok(()))) => None,
                Some(Ok(Err(e))) => Some(format!("the device's link: {e}")),
                _ => Some("the device's thread panicked".to_string()),
            };
            if let Some(why) = why {
                let _ = child.kill();
                let _ = child.wait();
                return Err(why);
            }
            closed = Some(Instant::now());
        }
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if closed.is_some_and(|c| c.elapsed() > QEMU_EXIT_GRACE) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "QEMU closed the device's link but did not end within {} s",
                    QEMU_EXIT_GRACE.as_secs()
                ));
            }
            Ok(None) if started.elapsed() > args.timeout || activity::stop_requested() => {
                break None
            }
            Ok(None) => thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(format!("waiting for QEMU: {e}")),
        }
    };
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        waker.wake();
        if let Some(d) = device {
            let _ = d.join();
        }
        match activity::stop_requested() {
            true => eprintln!("vgsp-gh100: stopped (SIGTERM): QEMU killed"),
            false => eprintln!(
                "vgsp-gh100: QEMU did not end within {} s: killed",
                args.timeout.as_secs()
            ),
        }
        return Ok(false);
    };
    if let Some(d) = device {
        waker.wake();
        let served = d
            .join()
            .map_err(|_| "the device's thread panicked".to_string())?;
        if let Err(e) = served {
            return Err(format!("the device's link: {e}"));
        }
    }
    if !status.success() {
        return Err(format!("QEMU failed ({status}); its log: {}", args.log));
    }
    Ok(true)
}

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some("--list-faults") {
        for fault in vgsp_gh100::fault::ALL {
            println!("{}\t{}", fault.name, fault.what);
        }
        return ExitCode::SUCCESS;
    }
    if std::env::args().nth(1).as_deref() == Some("--list-registers") {
        for r in vgsp_gh100::regs::ALL {
            println!("{:#010x}\t{}\t{}", r.offset, r.name, r.why);
        }
        return ExitCode::SUCCESS;
    }
    let args = match parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("vgsp-gh100: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(124),
        Err(e) => {
            eprintln!("vgsp-gh100: {e}");
            ExitCode::FAILURE
        }
    }
}
