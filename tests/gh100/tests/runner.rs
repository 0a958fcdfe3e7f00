// SPDX-License-Identifier: GPL-2.0

//! The runner `vgsp-gh100` with a stand-in for QEMU: a shell that closes the device's end
//! of the link and ends later, as QEMU does on its way out.

use std::{
    env,
    fs,
    process::Command, //
};

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

/// Runs the runner with `script` as the "QEMU": `sh -c SCRIPT sh ARGS...`, the runner's
/// QEMU arguments (the last names the link's fd) in `$@`. Returns the exit code and
/// standard error.
fn run_with(script: &str, name: &str) -> (Option<i32>, String) {
    let log = env::temp_dir().join(format!(
        "vgsp-gh100-runner-{name}-{}.log",
        std::process::id()
    ));
    let out = binary(env!("CARGO_BIN_EXE_vgsp-gh100"))
        .arg("--log")
        .arg(&log)
        .args(["--timeout", "20", "--", "/bin/sh", "-c", script, "sh"])
        .output()
        .unwrap();
    let _ = fs::remove_file(&log);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Closes the fd the proxy device's argument names, then sleeps a second.
const CLOSE_THEN_SLEEP: &str = r#"for a; do case $a in *,fd=*) n=${a##*,fd=};; esac; done
eval "exec $n>&-"; sleep 1"#;

#[test]
fn qemu_closing_the_link_before_it_ends_is_a_clean_end() {
    let (code, err) = run_with(CLOSE_THEN_SLEEP, "close-then-end");
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn qemu_that_closes_the_link_and_never_ends_is_an_error_naming_it() {
    let script = CLOSE_THEN_SLEEP.replace("sleep 1", "sleep 30");
    let (code, err) = run_with(&script, "close-then-hang");
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("closed the device's link but did not end"),
        "{err}"
    );
}
