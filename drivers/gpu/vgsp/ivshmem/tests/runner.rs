// SPDX-License-Identifier: GPL-2.0

//! The `vgsp-qemu` runner with the real `ivshmem-server`, a fake QEMU (a shell script
//! run by `/bin/sh`, through a link named `qemu-system-x86_64` so that the runner takes
//! it for QEMU, with `-m 16`) and a fake GSP process (a shell script that records its pid
//! and sleeps).
//!
//! The tests run one at a time: each starts several processes, and a script being
//! written while another test forks could not be executed (`ETXTBSY`).

use std::{
    io::Read,
    os::unix::fs::PermissionsExt,
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
        Arc,
        Mutex,
        MutexGuard, //
    },
    thread,
    time::{
        Duration,
        Instant, //
    },
};

const RUNNER: &str = env!("CARGO_BIN_EXE_vgsp-qemu");

/// Serialises the tests (see the module docs).
static SERIAL: Mutex<()> = Mutex::new(());

/// The fake GSP process: records its pid, starts a child of its own (which no
/// parent-death signal reaches: only killing the process group does), says hello on
/// both outputs, sleeps.
const FAKE_GSP: &str = r#"#!/bin/sh
sleep 1000 &
echo "$!" >> @DIR@/gsp-children.pids
echo "$$" >> @DIR@/gsp.pids
echo "fake gsp up: $*"
echo "fake gsp stderr" >&2
exec sleep 1000
"#;

/// Waits until the fake GSP has recorded `$1` pids (at most 10 s).
const WAIT_FOR_GSPS: &str = r#"
wait_gsps() {
    i=0
    while [ "$(cat @DIR@/gsp.pids 2>/dev/null | wc -l)" -lt "$1" ]; do
        sleep 0.05; i=$((i+1)); [ $i -gt 200 ] && { echo "no gsp $1"; exit 1; }
    done
}
"#;

/// A test's directory, with the fake GSP in it; `TMPDIR` for the runner is its `tmp`.
struct Fixture {
    _serial: MutexGuard<'static, ()>,
    dir: PathBuf,
}

impl Fixture {
    fn new(tag: &str) -> Fixture {
        let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let dir =
            std::env::temp_dir().join(format!("vgsp-runner-test-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("tmp")).unwrap();
        let fixture = Fixture {
            _serial: serial,
            dir,
        };
        let gsp = fixture.path("gsp.sh");
        std::fs::write(&gsp, fixture.expand(FAKE_GSP)).unwrap();
        std::fs::set_permissions(&gsp, std::fs::Permissions::from_mode(0o755)).unwrap();
        fixture
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn expand(&self, script: &str) -> String {
        script.replace("@DIR@", &self.dir.display().to_string())
    }

    /// The runner with `extra` options, running `qemu_script` as QEMU with arguments
    /// `-m 16 a b`.
    fn runner(&self, extra: &[&str], qemu_script: &str) -> Command {
        self.runner_with_gsp(&self.path("gsp.sh"), extra, qemu_script)
    }

    /// [`Fixture::runner`] with another GSP program.
    fn runner_with_gsp(&self, gsp: &Path, extra: &[&str], qemu_script: &str) -> Command {
        let qemu = self.path("qemu.sh");
        std::fs::write(&qemu, self.expand(&format!("{WAIT_FOR_GSPS}{qemu_script}"))).unwrap();
        // The shell, under the name the runner knows QEMU by.
        let shell = self.path("qemu-system-x86_64");
        if !shell.exists() {
            std::os::unix::fs::symlink("/bin/sh", &shell).unwrap();
        }
        let mut command = Command::new(RUNNER);
        command
            .arg("--log")
            .arg(self.path("log"))
            .arg("--gsp")
            .arg(gsp)
            .args(["--gsp-arg", "extra"])
            .args(extra)
            .arg("--")
            .arg(&shell)
            .arg(&qemu)
            .args(["-m", "16", "a", "b"])
            .env("TMPDIR", self.path("tmp"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        command
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.path("log")).unwrap_or_default()
    }

    fn gsp_pids(&self) -> Vec<i32> {
        self.pids("gsp.pids")
    }

    /// The GSP processes' own children.
    fn gsp_children(&self) -> Vec<i32> {
        self.pids("gsp-children.pids")
    }

    fn pids(&self, name: &str) -> Vec<i32> {
        std::fs::read_to_string(self.path(name))
            .unwrap_or_default()
            .lines()
            .map(|l| l.trim().parse().unwrap())
            .collect()
    }

    fn read_pid(&self, name: &str) -> i32 {
        std::fs::read_to_string(self.path(name))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    /// Checks that the runner (pid `runner`) left no files behind.
    fn assert_clean(&self, runner: u32) {
        let left: Vec<_> = std::fs::read_dir(self.path("tmp"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert!(left.is_empty(), "left in TMPDIR: {left:?}");
        let shm = PathBuf::from(format!("/dev/shm/vgsp-ivshmem-{runner}"));
        assert!(!shm.exists(), "{} left", shm.display());
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A started runner, its standard error collected.
struct Run {
    child: Child,
    stderr: Arc<Mutex<String>>,
    collector: Option<thread::JoinHandle<()>>,
}

impl Run {
    fn start(mut command: Command) -> Run {
        let mut child = command.spawn().unwrap();
        let mut from = child.stderr.take().unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        let collector = thread::spawn(move || {
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
        Run {
            child,
            stderr,
            collector: Some(collector),
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits (at most `timeout`) for the exit; returns the status and standard error.
    fn finish(mut self, timeout: Duration) -> (ExitStatus, String) {
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                panic!(
                    "the runner did not finish:\n{}",
                    self.stderr.lock().unwrap()
                );
            }
            thread::sleep(Duration::from_millis(20));
        };
        // The pipe ends when the runner and every child of it are gone.
        if let Some(collector) = self.collector.take() {
            collector.join().unwrap();
        }
        let stderr = self.stderr.lock().unwrap().clone();
        (status, stderr)
    }

    fn signal(&self, signal: libc::c_int) {
        // SAFETY: Sends a signal to our child; no memory involved.
        assert_eq!(unsafe { libc::kill(self.child.id() as i32, signal) }, 0);
    }
}

/// Whether `pid` is a live (not zombie) process.
fn is_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            // The state follows the parenthesised command name.
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

/// Waits (at most `timeout`) for `pid` to die.
fn wait_dead(pid: i32, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while is_alive(pid) {
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(20));
    }
    true
}

/// Waits (at most 10 s) for `cond`.
fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn logs_qemu_output_and_obeys_the_cues() {
    let fx = Fixture::new("cues");
    let run = Run::start(fx.runner(
        &["--timeout", "60"],
        r#"
echo "args: $*"
for a in "$@"; do
    case "$a" in socket,path=*) sock=${a#socket,path=}; sock=${sock%%,id=*};; esac
    case "$a" in *mem-path=*) ram=${a#*mem-path=}; ram=${ram%%,share=*};; esac
done
[ -S "$sock" ] && echo "socket present"
[ -e /dev/shm/vgsp-ivshmem-$PPID ] && echo "shm present"
[ "$(stat -c %s /dev/shm/vgsp-ivshmem-$PPID)" = 4096 ] && echo "shm of a page"
[ "$(stat -c %s "$ram")" = 16777216 ] && echo "ram of 16 MiB present"
wait_gsps 1
pid1=$(head -n1 @DIR@/gsp.pids)
echo "vgsp-ivshmem: request: kill-gsp"
i=0
while kill -0 $pid1 2>/dev/null; do sleep 0.05; i=$((i+1)); [ $i -gt 200 ] && exit 1; done
echo "gsp $pid1 gone"
echo "vgsp-ivshmem: request: kill-gsp"
echo "[    1.000000] vgsp-ivshmem: request: start-gsp"
wait_gsps 2
echo "gsp restarted"
echo "vgsp-ivshmem: request: start-gsp"
echo "to stderr" >&2
printf "no newline"
exit 3
"#,
    ));
    let runner = run.pid();
    let (status, stderr) = run.finish(Duration::from_secs(30));
    let log = fx.log();
    assert_eq!(status.code(), Some(0), "{stderr}\n--- log:\n{log}");

    let lines: Vec<&str> = log.lines().collect();
    let args = lines[0];
    let tmp = fx.path("tmp").display().to_string();
    let prefix = format!(
        "args: -m 16 a b -object memory-backend-file,id=vgsp-ram,size=16777216,mem-path={tmp}/vgsp-qemu."
    );
    assert!(args.starts_with(&prefix), "{args}");
    let ram = args
        .strip_prefix(
            "args: -m 16 a b -object memory-backend-file,id=vgsp-ram,size=16777216,mem-path=",
        )
        .and_then(|s| s.split(",share=on ").next())
        .unwrap();
    assert!(ram.ends_with("/guest-ram"), "{args}");
    let after_ram = format!(
        "{ram},share=on -machine memory-backend=vgsp-ram -chardev socket,path={}",
        Path::new(ram).with_file_name("ivshmem.sock").display()
    );
    assert!(args.contains(&after_ram), "{args}");
    assert!(
        args.ends_with(
            "/ivshmem.sock,id=vgsp-ivshmem -device ivshmem-doorbell,chardev=vgsp-ivshmem,vectors=1"
        ),
        "{args}"
    );
    let sock = args
        .split(" -chardev socket,path=")
        .nth(1)
        .and_then(|s| s.split(",id=").next())
        .unwrap();

    let pids = fx.gsp_pids();
    assert_eq!(pids.len(), 2, "{stderr}");
    assert_eq!(
        &lines[1..],
        &[
            "socket present",
            "shm present",
            "shm of a page",
            "ram of 16 MiB present",
            "vgsp-ivshmem: request: kill-gsp",
            &format!("gsp {} gone", pids[0]),
            "vgsp-ivshmem: request: kill-gsp",
            "[    1.000000] vgsp-ivshmem: request: start-gsp",
            "gsp restarted",
            "vgsp-ivshmem: request: start-gsp",
            "to stderr",
            "no newline",
        ][..],
        "{log}"
    );

    // The GSP's output goes to standard error only.
    assert!(
        stderr.contains(&format!(
            "[gsp] fake gsp up: --socket {sock} --ram {ram} --ram-base 0x0 extra"
        )),
        "{stderr}"
    );
    assert!(stderr.contains("[gsp] fake gsp stderr"), "{stderr}");
    assert!(!log.contains("fake gsp"));
    assert!(
        stderr.contains(&format!("killed pid {}", pids[0])),
        "{stderr}"
    );
    assert!(stderr.contains("none is running; ignored"), "{stderr}");
    assert!(
        stderr.contains(&format!("pid {} is running; ignored", pids[1])),
        "{stderr}"
    );
    assert!(stderr.contains("QEMU exited (exit status: 3)"), "{stderr}");

    for pid in pids {
        assert!(!is_alive(pid), "GSP {pid} still alive");
    }
    let children = fx.gsp_children();
    assert_eq!(children.len(), 2);
    for pid in children {
        assert!(
            wait_dead(pid, Duration::from_secs(2)),
            "GSP child {pid} still alive"
        );
    }
    assert!(!Path::new(sock).exists());
    assert!(!Path::new(ram).exists());
    fx.assert_clean(runner);
}

#[test]
fn timeout_kills_qemu_and_exits_124() {
    let fx = Fixture::new("timeout");
    let start = Instant::now();
    let run = Run::start(fx.runner(
        &["--timeout", "1"],
        r#"
echo $$ > @DIR@/qemu.pid
wait_gsps 1
echo "hanging"
exec sleep 1000
"#,
    ));
    let runner = run.pid();
    let (status, stderr) = run.finish(Duration::from_secs(30));
    assert_eq!(status.code(), Some(124), "{stderr}");
    assert!(start.elapsed() < Duration::from_secs(10), "{stderr}");
    assert!(stderr.contains("timed out after 1 s"), "{stderr}");
    assert!(fx.log().contains("hanging"));
    assert!(!is_alive(fx.read_pid("qemu.pid")));
    for pid in fx.gsp_pids() {
        assert!(!is_alive(pid), "GSP {pid} still alive");
    }
    for pid in fx.gsp_children() {
        assert!(
            wait_dead(pid, Duration::from_secs(2)),
            "GSP child {pid} still alive"
        );
    }
    fx.assert_clean(runner);
}

#[test]
fn sigterm_stops_everything() {
    let fx = Fixture::new("sigterm");
    let run = Run::start(fx.runner(
        &["--timeout", "60"],
        r#"
echo $$ > @DIR@/qemu.pid
wait_gsps 1
echo "hanging"
exec sleep 1000
"#,
    ));
    let runner = run.pid();
    wait_until("QEMU's output", || fx.log().contains("hanging"));
    run.signal(libc::SIGTERM);
    let (status, stderr) = run.finish(Duration::from_secs(30));
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{stderr}");
    assert!(stderr.contains("got SIGTERM"), "{stderr}");
    assert!(!is_alive(fx.read_pid("qemu.pid")));
    for pid in fx.gsp_pids() {
        assert!(!is_alive(pid), "GSP {pid} still alive");
    }
    for pid in fx.gsp_children() {
        assert!(
            wait_dead(pid, Duration::from_secs(2)),
            "GSP child {pid} still alive"
        );
    }
    fx.assert_clean(runner);
}

#[test]
fn server_death_and_its_leftovers_are_reported() {
    let fx = Fixture::new("serverdeath");
    let run = Run::start(fx.runner(
        &["--timeout", "60"],
        r#"
wait_gsps 1
for p in $(cat /proc/$PPID/task/*/children); do
    if [ "$(cat /proc/$p/comm)" = ivshmem-server ]; then kill -9 $p && echo "killed server"; fi
done
sleep 0.5
echo "done"
"#,
    ));
    let runner = run.pid();
    let (status, stderr) = run.finish(Duration::from_secs(30));
    assert!(fx.log().contains("killed server"), "{}", fx.log());
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("exited early"), "{stderr}");
    assert!(stderr.contains("leftover socket"), "{stderr}");
    assert!(stderr.contains("leftover shared memory"), "{stderr}");
    // Reported, and removed all the same.
    fx.assert_clean(runner);
}

#[test]
fn killed_runner_leaves_no_processes() {
    let fx = Fixture::new("killed");
    let run = Run::start(fx.runner(
        &["--timeout", "60"],
        r#"
echo $$ > @DIR@/qemu.pid
wait_gsps 1
echo "hanging"
exec sleep 1000
"#,
    ));
    let runner = run.pid();
    wait_until("QEMU's output", || fx.log().contains("hanging"));
    let shm = PathBuf::from(format!("/dev/shm/vgsp-ivshmem-{runner}"));
    assert!(shm.exists());
    run.signal(libc::SIGKILL);
    let (status, _) = run.finish(Duration::from_secs(30));
    assert_eq!(status.code(), None);
    let qemu = fx.read_pid("qemu.pid");
    assert!(
        wait_dead(qemu, Duration::from_secs(5)),
        "QEMU {qemu} survived"
    );
    for pid in fx.gsp_pids() {
        assert!(wait_dead(pid, Duration::from_secs(5)), "GSP {pid} survived");
    }
    // A child's own children are beyond a dead runner's reach (no parent-death signal
    // passes to them, nobody is left to kill the group).
    for pid in fx.gsp_children() {
        // SAFETY: Sends a signal; no memory involved.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    // The server got SIGTERM and removed its files; only the runner's directory is left,
    // with the guest's RAM file in it (the runner's own, which a killed runner cannot
    // remove).
    wait_until("the server's cleanup", || !shm.exists());
    for dir in std::fs::read_dir(fx.path("tmp")).unwrap() {
        let dir = dir.unwrap().path();
        wait_until("the socket's removal", || {
            !dir.join("ivshmem.sock").exists()
        });
    }
}

#[test]
fn missing_gsp_fails_and_cleans_up() {
    let fx = Fixture::new("nogsp");
    let command = fx.runner_with_gsp(
        Path::new("/nonexistent/gsp"),
        &["--timeout", "60"],
        "echo never\n",
    );
    let run = Run::start(command);
    let runner = run.pid();
    let (status, stderr) = run.finish(Duration::from_secs(30));
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot start the GSP process /nonexistent/gsp"),
        "{stderr}"
    );
    assert!(stderr.contains("stopped the ivshmem-server"), "{stderr}");
    assert_eq!(fx.log(), "");
    fx.assert_clean(runner);
}

#[test]
fn usage_errors_exit_2() {
    for args in [&["--log", "x"][..], &["--", "qemu"][..], &["--bogus"][..]] {
        let output = Command::new(RUNNER).args(args).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&output.stderr).contains("Usage: vgsp-qemu"));
    }
}

#[test]
fn qemu_command_lines_the_runner_cannot_place_the_ram_of_exit_2() {
    let fx = Fixture::new("badqemu");
    let log = fx.path("log");
    for (qemu, why) in [
        (&["/bin/sh", "-m", "16"][..], "QEMU_BINARY \"/bin/sh\""),
        (&["qemu-system-x86_64", "-m", "1G"][..], "\"-m 1G\""),
        (&["qemu-system-x86_64"][..], "no -m"),
        (&["qemu-system-aarch64", "-m", "16"][..], "machine (none)"),
    ] {
        let output = Command::new(RUNNER)
            .arg("--log")
            .arg(&log)
            .arg("--")
            .args(qemu)
            .env("TMPDIR", fx.path("tmp"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{qemu:?}: {stderr}");
        assert!(stderr.contains(why), "{qemu:?}: {stderr}");
        assert!(stderr.contains("Usage: vgsp-qemu"), "{stderr}");
    }
    // Refused before anything was made.
    assert!(!log.exists());
    assert_eq!(std::fs::read_dir(fx.path("tmp")).unwrap().count(), 0);
}
