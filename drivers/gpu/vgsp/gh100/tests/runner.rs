// SPDX-License-Identifier: GPL-2.0

//! The runner `vgsp-gh100` with a stand-in for QEMU: a shell that finds the vfio-user
//! socket its `-device` argument names and ends, at once or once the test has connected
//! to the socket for it, negotiated and hung up, as QEMU does on its way out.

use std::{
    env, fs,
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

use vfio_user::Client;

/// The stand-in's part common to all: `$p` is the socket the vfio-user device's JSON
/// argument names (the runner's arguments are in `$@`).
const FIND_SOCKET: &str = r#"for a; do case $a in *'"vfio-user-pci"'*) p=$(printf %s "$a" | sed 's/.*"path":"\([^"]*\)".*/\1/');; esac; done
"#;

/// Then hands the socket's path to the test in `$STAND_IN/socket`, waits for
/// `$STAND_IN/closed` (the test has connected, negotiated and hung up), and ends after
/// `$1` seconds.
const HAND_OVER_THEN_END: &str = r#"printf %s "$p" >"$STAND_IN/socket.part" && mv "$STAND_IN/socket.part" "$STAND_IN/socket"
until test -e "$STAND_IN/closed"; do sleep 0.1; done
exec sleep "$1""#;

/// How long the test waits for the stand-in to name the socket.
const HAND_OVER_TIMEOUT: Duration = Duration::from_secs(20);

/// Returns a command that runs the binary at `path`: through `VGSP_TEST_RUNNER` when it
/// is set (a cross build's binaries run under `qemu-aarch64`), else directly.
fn binary(path: &str) -> Command {
    let runner = env::var("VGSP_TEST_RUNNER").unwrap_or_default();
    let mut words = runner.split_whitespace();
    match words.next() {
        Some(first) => {
            let mut cmd = Command::new(first);
            cmd.args(words).arg(path);
            cmd
        }
        None => Command::new(path),
    }
}

/// A fresh directory of the test's own, for the runner's log and the stand-in's files.
fn scratch(name: &str) -> PathBuf {
    let dir = env::temp_dir().join(format!("vgsp-gh100-runner-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir(&dir).unwrap();
    dir
}

/// Starts the runner with `script` as the "QEMU": `sh -c SCRIPT sh ARG ...`, the runner's
/// QEMU arguments after `arg` in `$@`, and `dir` in `$STAND_IN`.
fn start(dir: &Path, script: &str, arg: &str) -> Child {
    binary(env!("CARGO_BIN_EXE_vgsp-gh100"))
        .arg("--log")
        .arg(dir.join("qemu.log"))
        .args(["--timeout", "120", "--", "/bin/sh", "-c", script, "sh", arg])
        .env("STAND_IN", dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for the runner to end; returns its exit code and standard error, and removes
/// `dir`.
fn finish(runner: Child, dir: &Path) -> (Option<i32>, String) {
    let out = runner.wait_with_output().unwrap();
    let _ = fs::remove_dir_all(dir);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs the runner with a stand-in that ends `secs` seconds after the device's link
/// closed: the test, for the stand-in, connects to the socket it names, negotiates
/// vfio-user's version (and reads the regions), and hangs up.
fn run_closing_first(secs: &str, name: &str) -> (Option<i32>, String) {
    let dir = scratch(name);
    let mut runner = start(&dir, &format!("{FIND_SOCKET}{HAND_OVER_THEN_END}"), secs);
    let socket = dir.join("socket");
    let started = Instant::now();
    while !socket.exists() {
        if started.elapsed() > HAND_OVER_TIMEOUT || runner.try_wait().unwrap().is_some() {
            let _ = runner.kill();
            let (code, err) = finish(runner, &dir);
            panic!("the stand-in named no socket; the runner's exit {code:?}: {err}");
        }
        thread::sleep(Duration::from_millis(20));
    }
    let path = PathBuf::from(fs::read_to_string(&socket).unwrap());
    let client = Client::new(&path).unwrap();
    client.shutdown().unwrap();
    fs::write(dir.join("closed"), "").unwrap();
    finish(runner, &dir)
}

#[test]
fn qemu_closing_the_link_before_it_ends_is_a_clean_end() {
    let (code, err) = run_closing_first("1", "close-then-end");
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn qemu_that_closes_the_link_and_never_ends_is_an_error_naming_it() {
    let (code, err) = run_closing_first("30", "close-then-hang");
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("closed the device's link but did not end"),
        "{err}"
    );
}

/// Fails unless the socket exists; then ends without connecting to it.
const CHECK_SOCKET_THEN_END: &str = r#"test -S "$p""#;

#[test]
fn qemu_that_ends_without_connecting_is_a_clean_end() {
    let dir = scratch("no-connect");
    let runner = start(&dir, &format!("{FIND_SOCKET}{CHECK_SOCKET_THEN_END}"), "");
    let (code, err) = finish(runner, &dir);
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn sigterm_with_an_activity_file_stops_qemu_and_counts_no_access_without_a_driver() {
    let dir = scratch("sigterm");
    let activity = dir.join("activity");
    let mut runner = binary(env!("CARGO_BIN_EXE_vgsp-gh100"))
        .arg("--log")
        .arg(dir.join("qemu.log"))
        .arg("--activity")
        .arg(&activity)
        .args(["--timeout", "60", "--", "/bin/sh", "-c", "exec sleep 100"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    // The runner publishes the count from its first look on: its handler is in place.
    while !activity.exists() {
        assert!(
            started.elapsed() < HAND_OVER_TIMEOUT && runner.try_wait().unwrap().is_none(),
            "the runner wrote no activity file"
        );
        thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(fs::read_to_string(&activity).unwrap(), "0\n");
    // CAST: a running child's pid is a positive `pid_t`.
    let pid = runner.id() as libc::pid_t;
    // SAFETY: a plain syscall; `pid` is our unwaited child.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let (code, err) = finish(runner, &dir);
    assert_eq!(code, Some(124), "{err}");
    assert!(err.contains("stopped (SIGTERM)"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the stand-in was not killed"
    );
}
