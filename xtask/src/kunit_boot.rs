//! nova-core's own KUnit suites, run in the tree's kernel (`cargo xtask check-patches`).
//!
//! The kernel the GH100 boot builds has KUnit built in (the tier's fragment) and nova-core
//! with it, so its suites (`nova_core_*`, the patches' included) are in the image. A boot
//! with no GPU and no initramfs runs them from `kernel_init` and then panics for want of a
//! root file system, which ends the boot (`panic=-1`, `-no-reboot`); the console holds
//! their KTAP.

use std::{
    fs,
    path::Path,
    process::Stdio,
    thread,
    time::{
        Duration,
        Instant, //
    },
};

use crate::qemu;

/// The longest a boot that only runs the suites may take: seconds under TCG, minutes if the
/// host is busy.
const TIMEOUT: Duration = Duration::from_secs(300);

/// What the suites of one boot did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Suite {
    /// The suite's name.
    pub(crate) name: String,
    /// Its cases that passed.
    pub(crate) passed: usize,
    /// Its cases that failed (skipped ones are neither).
    pub(crate) failed: Vec<String>,
}

/// Boots `image` (x86_64) under QEMU 11 with only nova-core's suites enabled and returns
/// them; the console goes to `log`.
///
/// # Errors
///
/// QEMU cannot be started, the boot does not end within [`TIMEOUT`], or its console
/// holds no nova-core suite.
pub(crate) fn run(image: &Path, log: &Path) -> Result<Vec<Suite>, String> {
    let out = fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = out
        .try_clone()
        .map_err(|e| format!("{}: {e}", log.display()))?;
    let mut qemu = qemu::system("x86_64")?;
    let mut child = qemu
        .args(["-machine", "pc,accel=tcg", "-smp", "1", "-m", "512"])
        .args(["-nographic", "-no-reboot", "-nic", "none", "-kernel"])
        .arg(image)
        .arg("-append")
        .arg("console=ttyS0 panic=-1 kunit.enable=1 kunit.filter_glob=nova_core*")
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot run QEMU 11: {e}"))?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() > TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "the KUnit boot did not end within {} s (console: {})",
                    TIMEOUT.as_secs(),
                    log.display()
                ));
            }
            Ok(None) => thread::sleep(Duration::from_millis(200)),
            Err(e) => return Err(format!("waiting for QEMU: {e}")),
        }
    }
    let console = fs::read(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let suites = parse(&String::from_utf8_lossy(&console));
    if suites.is_empty() {
        return Err(format!(
            "no nova-core KUnit suite in the console ({}): is CONFIG_KUNIT=y?",
            log.display()
        ));
    }
    Ok(suites)
}

/// Reads nova-core's suites from a console's KTAP: a suite's cases are the results indented
/// under its `# Subtest:` line, its own result the line that closes it.
pub(crate) fn parse(console: &str) -> Vec<Suite> {
    let mut suites = Vec::new();
    let mut current: Option<Suite> = None;
    for line in console.lines() {
        // Without the `[    1.234567] ` of `CONFIG_PRINTK_TIME`.
        let line = match line.trim_start().strip_prefix('[') {
            Some(rest) => rest.split_once("] ").map_or(rest, |(_, text)| text),
            None => line,
        };
        let indented = line.starts_with("    ");
        let text = line.trim();
        if let Some(name) = text.strip_prefix("# Subtest: ") {
            if indented && name.starts_with("nova_core") {
                current = Some(Suite {
                    name: name.to_string(),
                    passed: 0,
                    failed: Vec::new(),
                });
            }
            continue;
        }
        let Some(suite) = current.as_mut() else {
            continue;
        };
        let (ok, rest) = match (text.strip_prefix("not ok "), text.strip_prefix("ok ")) {
            (Some(rest), _) => (false, rest),
            (None, Some(rest)) => (true, rest),
            _ => continue,
        };
        let name = rest
            .split_once(' ')
            .map_or("", |(_, name)| name)
            .split(" # ")
            .next()
            .unwrap_or("")
            .trim();
        if name == suite.name {
            suites.extend(current.take());
        } else if rest.contains("# SKIP") {
            continue;
        } else if ok {
            suite.passed += 1;
        } else {
            suite.failed.push(name.to_string());
        }
    }
    suites
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONSOLE: &str = "[    0.500000] KTAP version 1\n\
        [    0.500001] 1..2\n\
        [    0.500002]     KTAP version 1\n\
        [    0.500003]     # Subtest: nova_core_gsp_fw\n\
        [    0.500004]     1..2\n\
        [    0.500005]     ok 1 validate_accepts_an_element_as_sent\n\
        [    0.500006]     not ok 2 validate_refuses_a_bad_signature\n\
        [    0.500007] not ok 1 nova_core_gsp_fw\n\
        [    0.500008]     KTAP version 1\n\
        [    0.500009]     # Subtest: nova_core_gsp_cmdq\n\
        [    0.500010]     1..2\n\
        [    0.500011]     ok 1 receive_within_skips_other_messages\n\
        [    0.500012]     ok 2 skipped_case # SKIP not here\n\
        [    0.500013] ok 2 nova_core_gsp_cmdq\n";

    #[test]
    fn a_suite_counts_its_passed_and_failed_cases() {
        let suites = parse(CONSOLE);

        assert_eq!(
            suites[0],
            Suite {
                name: "nova_core_gsp_fw".into(),
                passed: 1,
                failed: vec!["validate_refuses_a_bad_signature".into()],
            }
        );
    }

    #[test]
    fn a_skipped_case_neither_passes_nor_fails() {
        let suites = parse(CONSOLE);

        assert_eq!((suites[1].passed, suites[1].failed.len()), (1, 0));
    }

    #[test]
    fn a_console_without_ktap_has_no_suite() {
        assert!(parse("[    0.1] Linux version 7.3.4\nKernel panic\n").is_empty());
    }
}
