// SPDX-License-Identifier: GPL-2.0

//! The kernel tier on Linux 7.3: the project built into a pristine Linux 7.3 tree and
//! booted under QEMU.
//!
//! `cargo xtask kernel-7.3 [--without-project] [x86_64|arm64]...` (default: both
//! architectures, the x86_64 one first):
//!
//! 1. The tree. The pristine tree is [`linux::linux_7_3`]'s (the cache's `linux-7.3/`,
//!    or `VGSP_LINUX_7_3=<tree>`); it stays untouched, as `cargo xtask api-7.3` and
//!    `cargo xtask check-patches` need it. The tier builds a scratch tree made of hard
//!    links to it, `<cache>/linux-7.3-tier` ([`kbuild::scratch_tree`]), to which it adds
//!    only the link `drivers/vgsp` to the repository and the project's hook lines in
//!    `drivers/Makefile` and `drivers/Kconfig` (both written as new files, never through
//!    the links). The scratch tree is made afresh whenever it differs from the pristine
//!    one in any other way, and its `rust/` must be the pristine's, file for file.
//! 2. Per architecture, the build directory `<cache>/build-7.3-<arch>`, shared with
//!    `cargo xtask api-7.3` ([`kbuild::Tree`]): configured once from tinyconfig and
//!    `tests/kernel/7.3-<arch>.config` (again whenever the fragment's content changes),
//!    then `make rust/`, the crates.io crates of `tests/kernel/extern-crates.sh` (when
//!    the script or the tree's `rust/libcore.rmeta` changed, by content; only those 7.3
//!    does not have in `rust/`), and the image.
//!    Any compiler warning or error in the build logs fails the tier (objtool's
//!    excepted). The project's objects are removed whenever the project's sources
//!    differ, by content, from the ones of the last good build (make goes by
//!    modification times, which a fresh clone or another checkout makes meaningless).
//! 3. The boot, through the project's runner (`target/release/vgsp-qemu`, built first):
//!    it starts the ivshmem server and the host GSP process and gives the guest an
//!    ivshmem-doorbell device; QEMU has two CPUs, 512 MiB and a 300 s timeout.
//! 4. The verdict: the tree's `tools/testing/kunit/kunit.py parse` must accept the boot
//!    log; every suite it reports must pass, and every suite of [`required_suites`] must
//!    be among them; no `BUG`, `WARNING`, `Oops` or call trace; no kernel panic before
//!    the end of the tests (the one for the missing root file system ends every boot).
//!
//! `--without-project` drops the project's options (every option the repository's
//! `Kconfig` declares, [`kbuild::project_options`]) from the fragment for the run (so the build directory is configured anew, without them, and
//! again with them on the next run without the flag): it builds and boots the kernel's
//! own suites only, which tells a problem of Linux 7.3 on these architectures from one of
//! the project's.
//!
//! The kernel's own doctests (`CONFIG_RUST_KERNEL_DOCTESTS`) are off in the fragments:
//! `rust_doctest_kernel_task_rs_1` oopses in this configuration (bindgen's `task_struct`
//! is misaligned from `stats` on; the fragments say why). The fragments enable 7.3's
//! Rust KUnit suites instead ([`KERNEL_SUITES`]).
//!
//! Output: progress on standard error; per architecture its build and boot times and the
//! suites and cases that passed; the last line is
//!
//! ```text
//! kernel tier 7.3 (x86_64, arm64): ok, N suites, M cases
//! ```
//!
//! (the suites and cases summed over the architectures). The logs stay in the build
//! directory: `configure.log`, `build-rust.log`, `extern-crates.log`, `build.log`,
//! `boot.log` (QEMU's console), `runner.log`, `kunit.txt` and `kunit.json`.
//!
//! Missing Debian packages are installed with `apt-get install -y` when running as root
//! (as in CI); otherwise the error names the `apt-get` command. `bindgen` is built once
//! into `<cache>/bindgen` with `cargo install bindgen-cli --locked`.

use std::{
    env,
    fs::{
        self,
        File, //
    },
    path::{
        Path,
        PathBuf, //
    },
    process::{
        Command,
        Stdio, //
    },
    time::{
        Duration,
        Instant, //
    },
};

use serde_json::Value;

use crate::{
    kbuild::{
        self,
        Arch,
        Tree,
        LINK, //
    },
    linux,
    util::{
        self,
        process::{
            jobs,
            last_lines,
            run_logged,
            tail,
            Progress, //
        },
        stamp::{
            hash_sources,
            stamp_matches,
            write_stamp, //
        },
        tools, //
    }, //
};

/// The project's sources Kbuild reads: a change in them invalidates the project's objects.
const PROJECT_SOURCES: &[&str] = &["Kbuild", "Kconfig", "drivers", "tests/kunit", "kernel-shim"];
/// The record of the project's sources of the last good build, in the build directory.
const SOURCES_STAMP: &str = "vgsp-sources.sha256";
/// Linux 7.3's own Rust KUnit suites, as the fragments configure them: the two that
/// need no option, then those of `CONFIG_RUST_KUNIT_TESTS`.
pub(crate) const KERNEL_SUITES: &[&str] = &[
    "rust_kernel_fmt",
    "rust_spinlock_irq_condvar",
    "rust_allocator",
    "rust_kvec",
    "rust_kernel_bitmap",
    "rust_kernel_kunit",
    "rust_kernel_str",
    "rust_atomics",
    "rust_kernel_bitfield",
];
/// The boot's time limit, in seconds (the runner's `--timeout`).
const BOOT_TIMEOUT: &str = "300";

/// One suite of a boot, as `kunit.py parse --json` reports it.
#[derive(Debug, Default, PartialEq, Eq)]
struct Suite {
    name: String,
    passed: u64,
    failed: u64,
    crashed: u64,
    skipped: u64,
    errors: u64,
}

impl Suite {
    /// Whether the suite passed: some case passed, none failed or crashed, and kunit.py
    /// found no error in it.
    fn ok(&self) -> bool {
        self.passed > 0 && self.failed == 0 && self.crashed == 0 && self.errors == 0
    }

    /// Says how the suite went, for a failure.
    fn describe(&self) -> String {
        format!(
            "{}: {} passed, {} failed, {} crashed, {} skipped, {} parse errors",
            self.name, self.passed, self.failed, self.crashed, self.skipped, self.errors
        )
    }
}

/// Returns the counts of a `kunit.py --json` group (its `misc` object).
fn counts(name: &str, group: &Value) -> Suite {
    let n = |key: &str| group["misc"][key].as_u64().unwrap_or(0);
    Suite {
        name: name.to_string(),
        passed: n("passed"),
        failed: n("failed"),
        crashed: n("crashed"),
        skipped: n("skipped"),
        errors: n("errors"),
    }
}

/// Returns the suites of a `kunit.py parse --json` report and the counts of the whole
/// run: the top group's sub-groups are the suites with cases, its test cases the suites
/// that reported none (one case each, by their status).
///
/// # Errors
///
/// - The report is not shaped as kunit.py writes it.
fn suites_from_json(report: &Value) -> Result<(Vec<Suite>, Suite), String> {
    let groups = report["sub_groups"]
        .as_array()
        .ok_or("the kunit.py report has no sub_groups")?;
    let mut suites: Vec<Suite> = groups
        .iter()
        .map(|g| counts(g["name"].as_str().unwrap_or("?"), g))
        .collect();
    for case in report["test_cases"]
        .as_array()
        .map_or(&[][..], Vec::as_slice)
    {
        let mut suite = Suite {
            name: case["name"].as_str().unwrap_or("?").to_string(),
            ..Suite::default()
        };
        match case["status"].as_str() {
            Some("PASS") => suite.passed = 1,
            Some("SKIP") => suite.skipped = 1,
            Some("ERROR") => suite.crashed = 1,
            _ => suite.failed = 1,
        }
        suites.push(suite);
    }
    Ok((suites, counts("all", report)))
}

/// Returns the suites a Linux 7.3 boot must report (besides: every suite it reports must
/// pass): the kernel's own Rust suites the fragments enable, and with the project every
/// suite `vgsp-host --list-suites --kernel` lists.
fn required_suites(project: Option<&[String]>) -> Vec<String> {
    let mut required: Vec<String> = KERNEL_SUITES.iter().map(|s| s.to_string()).collect();
    required.extend(project.unwrap_or_default().iter().cloned());
    required
}

/// What a boot's suites came to: how many, and how many cases passed and were skipped.
#[derive(Debug, PartialEq, Eq)]
struct Verdict {
    suites: usize,
    cases: u64,
    skipped: u64,
}

/// Checks the suites of a boot: at least one; every one passed; every one of `required`
/// among them; no error in the run as a whole.
///
/// # Errors
///
/// - What failed: the suites that did not pass, or those missing.
fn check_suites(suites: &[Suite], all: &Suite, required: &[String]) -> Result<Verdict, String> {
    if suites.is_empty() {
        return Err("the boot reported no KUnit suite".into());
    }
    let failed: Vec<String> = suites
        .iter()
        .filter(|s| !s.ok())
        .map(Suite::describe)
        .collect();
    if !failed.is_empty() {
        return Err(format!("suites that did not pass: {}", failed.join("; ")));
    }
    let missing: Vec<&str> = required
        .iter()
        .filter(|r| !suites.iter().any(|s| &s.name == *r))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "suites missing from the boot: {}",
            missing.join(", ")
        ));
    }
    if all.failed + all.crashed + all.errors > 0 {
        return Err(format!("the run as a whole: {}", all.describe()));
    }
    Ok(Verdict {
        suites: suites.len(),
        cases: suites.iter().map(|s| s.passed).sum(),
        skipped: suites.iter().map(|s| s.skipped).sum(),
    })
}

/// Returns a console line without its printk timestamp (`[    1.234567] `), if any.
fn console_message(line: &str) -> &str {
    let line = line.trim_end();
    line.strip_prefix('[')
        .and_then(|rest| rest.split_once(']'))
        .filter(|(time, _)| {
            !time.trim().is_empty()
                && time
                    .chars()
                    .all(|c| c == ' ' || c == '.' || c.is_ascii_digit())
        })
        .map_or(line, |(_, rest)| rest.strip_prefix(' ').unwrap_or(rest))
}

/// The starts of the console lines that report a kernel bug.
const BUG_LINES: &[&str] = &[
    "BUG",
    "WARNING",
    "Oops",
    "Call Trace",
    "Call trace",
    "Internal error",
    "Unable to handle kernel",
    "general protection fault",
    "kernel BUG",
];
/// The panic messages of a boot that ran out of things to do (no root file system).
const END_PANICS: &[&str] = &["VFS: Unable to mount root fs", "No working init found"];

/// Returns the problems of a boot's console log: its lines reporting a kernel bug, and a
/// kernel panic that is not the missing root file system's after the last test (the
/// top-level KTAP plan `1..N` followed by its N results).
fn boot_problems(log: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let mut plan = None;
    let mut results = 0;
    for line in log.lines().map(console_message) {
        if BUG_LINES.iter().any(|b| line.starts_with(b)) {
            problems.push(format!("the kernel reported: {line}"));
        }
        if let Some(n) = line
            .strip_prefix("1..")
            .and_then(|n| n.parse::<usize>().ok())
        {
            plan = plan.or(Some(n));
        } else if plan.is_some() && (line.starts_with("ok ") || line.starts_with("not ok ")) {
            results += 1;
        }
        if let Some(at) = line.find("Kernel panic") {
            let ended = plan.is_some_and(|n| results >= n);
            if !ended || !END_PANICS.iter().any(|p| line.contains(p)) {
                problems.push(format!(
                    "kernel panic {}: {}",
                    if ended {
                        "after the tests"
                    } else {
                        "before the end of the tests"
                    },
                    &line[at..]
                ));
            }
            break;
        }
    }
    problems
}

/// The options of `cargo xtask kernel-7.3`.
#[derive(Debug, PartialEq, Eq)]
struct Options {
    arches: Vec<Arch>,
    project: bool,
}

/// The usage of `cargo xtask kernel-7.3`.
const USAGE: &str = "usage: cargo xtask kernel-7.3 [--without-project] [x86_64|arm64]...";

/// Parses the arguments of `cargo xtask kernel-7.3`.
///
/// # Errors
///
/// - An unknown argument (with the usage).
fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        arches: Vec::new(),
        project: true,
    };
    for arg in args {
        match arg.as_str() {
            "--without-project" => options.project = false,
            name => {
                let arch = Arch::parse(name)
                    .ok_or_else(|| format!("unknown argument {name:?}\n{USAGE}"))?;
                if !options.arches.contains(&arch) {
                    options.arches.push(arch);
                }
            }
        }
    }
    if options.arches.is_empty() {
        options.arches = Arch::ALL.to_vec();
    }
    Ok(options)
}

/// What the tier needs for every architecture.
struct Tier {
    repo: PathBuf,
    cache: PathBuf,
    scratch: kbuild::Scratch,
    bindgen: PathBuf,
    runner: PathBuf,
    /// With the project: its suites, from `vgsp-host --list-suites --kernel`.
    project: Option<Vec<String>>,
    progress: Progress,
}

/// What one architecture's run came to.
struct ArchRun {
    build: Duration,
    boot: Duration,
    verdict: Verdict,
}

impl Tier {
    /// Builds, boots and checks one architecture.
    fn run(&self, arch: Arch) -> Result<ArchRun, String> {
        let say = |what: &str| self.progress.say(&format!("{}: {what}", arch.name()));
        let tree = Tree::new(
            arch,
            &self.scratch,
            &self.cache,
            self.bindgen.clone(),
            self.progress,
        );
        let fragment = kbuild::fragment(&self.repo, arch, self.project.is_some())?;
        let started = Instant::now();
        let mut steps = Vec::new();
        let mut step = |name: &str, since: &mut Instant| {
            steps.push(format!("{name} {} s", since.elapsed().as_secs()));
            *since = Instant::now();
        };
        let mut since = started;
        tree.ensure_configured(&fragment)?;
        step("configure", &mut since);
        tree.build_rust()?;
        step("rust/", &mut since);
        let sources = match &self.project {
            None => None,
            Some(_) => {
                tree.crates_io(&self.repo)?;
                step("crates.io crates", &mut since);
                let sources = hash_sources(&self.repo, PROJECT_SOURCES)?;
                let stamp = tree.build.join(SOURCES_STAMP);
                if !stamp_matches(&stamp, &sources) {
                    let objects = tree.build.join(LINK);
                    if objects.exists() {
                        say("the project's sources changed: removing its objects");
                        fs::remove_dir_all(&objects)
                            .map_err(|e| format!("{}: {e}", objects.display()))?;
                    }
                    let _ = fs::remove_file(&stamp);
                }
                Some((stamp, sources))
            }
        };
        let (target, image) = arch.image();
        let log = tree.build.join("build.log");
        say(&format!(
            "building {target} (cold: minutes); log: {}",
            log.display()
        ));
        let built = run_logged(
            tree.make().arg(format!("-j{}", jobs())).arg(target),
            &log,
            &format!("{} {target}", arch.name()),
            self.progress,
        );
        let logs = [tree.build.join("build-rust.log"), log];
        let diagnostics = kbuild::build_diagnostics(&logs)?;
        if let Err(e) = built {
            let tail = tail(&logs[1], 20);
            return Err(format!(
                "{e}\n{}",
                diagnostics.unwrap_or(format!("the end of the log:\n{tail}"))
            ));
        }
        if let Some(report) = diagnostics {
            return Err(format!("the build printed warnings or errors: {report}"));
        }
        if let Some((stamp, sources)) = &sources {
            write_stamp(stamp, sources)?;
        }
        step(target, &mut since);
        let build = started.elapsed();
        say(&format!(
            "built in {} s ({})",
            build.as_secs(),
            steps.join(", ")
        ));

        let (boot, text) = self.boot(arch, &tree, image)?;
        let verdict = self.verdict(arch, &tree, &text)?;
        Ok(ArchRun {
            build,
            boot,
            verdict,
        })
    }

    /// Boots the tree's `image` under the runner; returns the boot's duration and
    /// console log.
    fn boot(&self, arch: Arch, tree: &Tree, image: &str) -> Result<(Duration, String), String> {
        let (boot_log, runner_log) = (tree.build.join("boot.log"), tree.build.join("runner.log"));
        let image = tree.build.join(image);
        let (qemu, machine, console): (&str, &[&str], &str) = match arch {
            Arch::X86_64 => ("qemu-system-x86_64", &[], "ttyS0"),
            Arch::Arm64 => (
                "qemu-system-aarch64",
                &["-M", "virt", "-cpu", "cortex-a72", "-nic", "none"],
                "ttyAMA0",
            ),
        };
        self.progress.say(&format!(
            "{}: booting under {qemu} -smp 2, with the ivshmem server and the GSP process",
            arch.name()
        ));
        let out =
            File::create(&runner_log).map_err(|e| format!("{}: {e}", runner_log.display()))?;
        let err = out
            .try_clone()
            .map_err(|e| format!("{}: {e}", runner_log.display()))?;
        let started = Instant::now();
        let status = Command::new(&self.runner)
            .arg("--log")
            .arg(&boot_log)
            .args(["--timeout", BOOT_TIMEOUT])
            .args(["--gsp-arg", "--log-every", "--gsp-arg", "100", "--"])
            .arg(tools::path(qemu)?)
            .args(machine)
            .arg("-kernel")
            .arg(&image)
            .args([
                "-nographic",
                "-no-reboot",
                "-m",
                "512",
                "-smp",
                "2",
                "-append",
            ])
            .arg(format!("console={console} panic=-1"))
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .status()
            .map_err(|e| format!("cannot run {}: {e}", self.runner.display()))?;
        let boot = started.elapsed();
        if !status.success() {
            let why = if status.code() == Some(124) {
                format!("the boot did not end within {BOOT_TIMEOUT} s")
            } else {
                format!("the runner failed ({status})")
            };
            return Err(format!(
                "{why} (logs: {}, {}):\n{}\n{}",
                runner_log.display(),
                boot_log.display(),
                tail(&runner_log, 10),
                tail(&boot_log, 20)
            ));
        }
        let runner_text = fs::read_to_string(&runner_log).unwrap_or_default();
        let gsps = runner_text
            .lines()
            .filter(|l| l.starts_with("[gsp] vgsp-gsp: peer ") && l.contains(" attached"))
            .count();
        self.progress.say(&format!(
            "{}: boot finished in {} s ({gsps} GSP processes attached)",
            arch.name(),
            boot.as_secs()
        ));
        let text = fs::read(&boot_log).map_err(|e| format!("{}: {e}", boot_log.display()))?;
        Ok((boot, String::from_utf8_lossy(&text).into_owned()))
    }

    /// Reads the boot's verdict: kunit.py's, the required suites, and the console's
    /// bugs and panics.
    fn verdict(&self, arch: Arch, tree: &Tree, console: &str) -> Result<Verdict, String> {
        let boot_log = tree.build.join("boot.log");
        if !console.contains("KTAP version 1") {
            return Err(format!(
                "no KTAP in the boot log ({}):\n{}",
                boot_log.display(),
                tail(&boot_log, 20)
            ));
        }
        let (json, text) = (tree.build.join("kunit.json"), tree.build.join("kunit.txt"));
        let _ = fs::remove_file(&json);
        let kunit_py = tree.src.join("tools/testing/kunit/kunit.py");
        let out = tools::command("python3")?
            .arg(&kunit_py)
            .arg("parse")
            .arg(format!("--json={}", json.display()))
            .arg(&boot_log)
            // The scratch tree stays the pristine one: no __pycache__ in it.
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .output()
            .map_err(|e| format!("cannot run python3 {}: {e}", kunit_py.display()))?;
        let said = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        fs::write(&text, &said).map_err(|e| format!("{}: {e}", text.display()))?;
        let report = fs::read_to_string(&json)
            .ok()
            .and_then(|j| serde_json::from_str::<Value>(&j).ok());
        let Some(report) = report else {
            return Err(format!(
                "kunit.py parse wrote no report ({}; its output: {}):\n{}",
                out.status,
                text.display(),
                last_lines(&said, 20)
            ));
        };
        let (suites, all) = suites_from_json(&report)?;
        for s in &suites {
            println!(
                "  {} {}: {} passed{}",
                arch.name(),
                s.name,
                s.passed,
                if s.skipped > 0 {
                    format!(", {} skipped", s.skipped)
                } else {
                    String::new()
                }
            );
        }
        let required = required_suites(self.project.as_deref());
        let mut problems = Vec::new();
        if !out.status.success() {
            problems.push(format!("kunit.py parse reports failures ({})", out.status));
        }
        let verdict = match check_suites(&suites, &all, &required) {
            Ok(verdict) => Some(verdict),
            Err(e) => {
                problems.push(e);
                None
            }
        };
        problems.extend(boot_problems(console));
        match verdict {
            Some(verdict) if problems.is_empty() => Ok(verdict),
            _ => {
                // kunit.py's account of what went wrong: all but the cases that passed.
                let failures: String = said
                    .lines()
                    .filter(|l| !l.contains("[PASSED]"))
                    .map(|l| format!("{l}\n"))
                    .collect();
                Err(format!(
                    "{} (logs: {}, {})\n{}",
                    problems.join("; "),
                    boot_log.display(),
                    text.display(),
                    last_lines(&failures, 40)
                ))
            }
        }
    }
}

/// Builds the runner, the ivshmem server, the host GSP process and `vgsp-host`; returns
/// the runner.
///
/// Without the project in the guest (`stale_ok`) nothing talks to the GSP process, and
/// a failed build (the host crates in the middle of a change) falls back to the runner
/// built earlier, saying so.
///
/// # Errors
///
/// - cargo fails (and `stale_ok` is false, or there is no runner built earlier).
fn build_runner(repo: &Path, stale_ok: bool, progress: Progress) -> Result<PathBuf, String> {
    let runner = repo.join("target/release/vgsp-qemu");
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(repo)
        .args([
            "build",
            "--release",
            "-q",
            "-p",
            "vgsp-ivshmem",
            "-p",
            "vgsp-host",
            "--bins",
        ])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if out.status.success() {
        return Ok(runner);
    }
    let said = String::from_utf8_lossy(&out.stderr);
    let first: Vec<&str> = said
        .lines()
        .filter(|l| l.starts_with("error"))
        .take(5)
        .collect();
    let error = format!(
        "cargo build --release -q -p vgsp-ivshmem -p vgsp-host --bins failed ({}): {}",
        out.status,
        first.join("; ")
    );
    let built = [
        &runner,
        &repo.join("target/release/ivshmem-server"),
        &repo.join("target/release/vgsp-gsp"),
    ]
    .iter()
    .all(|p| p.is_file());
    if !stale_ok || !built {
        return Err(format!("{error}\n{said}"));
    }
    progress.say(&format!(
        "NOTE: {error}; without the project nothing in the guest talks to the GSP \
         process, so the runner built earlier ({}) boots the kernel",
        runner.display()
    ));
    Ok(runner)
}

/// Returns the project's suites, as `vgsp-host --list-suites --kernel` lists them.
///
/// # Errors
///
/// - `vgsp-host` cannot run, fails, or lists no suite.
fn project_suites(repo: &Path) -> Result<Vec<String>, String> {
    let host = repo.join("target/release/vgsp-host");
    let out = Command::new(&host)
        .args(["--list-suites", "--kernel"])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", host.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} --list-suites --kernel failed ({})",
            host.display(),
            out.status
        ));
    }
    let suites: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect();
    if suites.is_empty() {
        return Err(format!(
            "{} --list-suites --kernel lists no suite",
            host.display()
        ));
    }
    Ok(suites)
}

/// `cargo xtask kernel-7.3 [--without-project] [x86_64|arm64]...`.
///
/// # Errors
///
/// - What failed, and where its log is.
pub(crate) fn kernel_7_3(args: &[String]) -> Result<bool, String> {
    let options = parse_args(args)?;
    let progress = Progress::new("kernel-7.3");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("no repository root")?
        .to_path_buf();
    let cache = util::cache()?;
    kbuild::ensure_build_tools(&options.arches, true)?;
    let pristine = linux::linux_7_3()?;
    let _lock = kbuild::lock(&cache, progress)?;
    let bindgen = kbuild::ensure_bindgen(&cache, progress)?;
    let scratch = kbuild::scratch_tree(&pristine, &repo, progress)?;
    progress.say("building the ivshmem server, the host GSP process, the runner and vgsp-host");
    let runner = build_runner(&repo, !options.project, progress)?;
    let project = if options.project {
        Some(project_suites(&repo)?)
    } else {
        progress.say(&format!(
            "--without-project: {} left out for this run",
            kbuild::project_options(&repo)?.join(", ")
        ));
        None
    };
    let tier = Tier {
        repo,
        cache,
        scratch,
        bindgen,
        runner,
        project,
        progress,
    };
    let (mut suites, mut cases) = (0, 0);
    for &arch in &options.arches {
        let run = tier
            .run(arch)
            .map_err(|e| format!("kernel tier 7.3 ({}): {e}", arch.name()))?;
        println!(
            "kernel tier 7.3 {}: built in {} s, booted in {} s, {} suites, {} cases passed{}",
            arch.name(),
            run.build.as_secs(),
            run.boot.as_secs(),
            run.verdict.suites,
            run.verdict.cases,
            if run.verdict.skipped > 0 {
                format!(" ({} skipped)", run.verdict.skipped)
            } else {
                String::new()
            }
        );
        suites += run.verdict.suites;
        cases += run.verdict.cases;
    }
    let names: Vec<&str> = options.arches.iter().map(|a| a.name()).collect();
    println!(
        "kernel tier 7.3 ({}): ok, {suites} suites, {cases} cases{}",
        names.join(", "),
        if tier.project.is_none() {
            " (without the project)"
        } else {
            ""
        }
    );
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn parses_arches_and_the_project_flag() {
        let all = parse_args(&[]).unwrap();
        assert_eq!(all.arches, [Arch::X86_64, Arch::Arm64]);
        assert!(all.project);
        let one = parse_args(&strings(&["arm64", "--without-project", "arm64"])).unwrap();
        assert_eq!(one.arches, [Arch::Arm64]);
        assert!(!one.project);
        assert!(parse_args(&strings(&["riscv"])).is_err());
    }

    fn suite(name: &str, passed: u64) -> Suite {
        Suite {
            name: name.into(),
            passed,
            ..Suite::default()
        }
    }

    #[test]
    fn reads_suites_from_kunit_py_json() {
        let report: Value = serde_json::from_str(
            r#"{"name":"KUnit Test Group","misc":{"tests":4,"passed":3,"failed":1,
                "crashed":0,"skipped":0,"errors":0},
              "sub_groups":[
                {"name":"rust_atomics","sub_groups":[],"test_cases":[],
                 "misc":{"tests":2,"passed":2,"failed":0,"crashed":0,"skipped":0,"errors":0}},
                {"name":"cmdq_rings","sub_groups":[],"test_cases":[],
                 "misc":{"tests":1,"passed":0,"failed":1,"crashed":0,"skipped":0,"errors":0}}],
              "test_cases":[{"name":"lonely","status":"PASS"}]}"#,
        )
        .unwrap();
        let (suites, all) = suites_from_json(&report).unwrap();
        assert_eq!(
            suites,
            [
                suite("rust_atomics", 2),
                Suite {
                    failed: 1,
                    ..suite("cmdq_rings", 0)
                },
                suite("lonely", 1),
            ]
        );
        assert_eq!((all.passed, all.failed), (3, 1));
        assert!(suites_from_json(&serde_json::json!({})).is_err());
    }

    #[test]
    fn requires_the_kernel_suites_and_every_project_one() {
        assert_eq!(required_suites(None), KERNEL_SUITES);
        let listed = strings(&["cmdq_rings", "nova_core_ivshmem"]);
        let required = required_suites(Some(&listed));
        assert!(required.contains(&"cmdq_rings".to_string()));
        assert!(required.contains(&"nova_core_ivshmem".to_string()));
        assert!(required.contains(&"rust_atomics".to_string()));
    }

    #[test]
    fn every_reported_suite_must_pass_and_every_required_one_be_there() {
        let all = Suite::default();
        let suites = [
            suite("a", 3),
            Suite {
                skipped: 1,
                ..suite("b", 1)
            },
        ];
        assert_eq!(
            check_suites(&suites, &all, &strings(&["a"])),
            Ok(Verdict {
                suites: 2,
                cases: 4,
                skipped: 1
            })
        );
        let missing = check_suites(&suites, &all, &strings(&["a", "c"])).unwrap_err();
        assert!(
            missing.contains("missing") && missing.contains('c'),
            "{missing}"
        );
        let failed = [
            suite("a", 3),
            Suite {
                crashed: 1,
                ..suite("b", 1)
            },
        ];
        assert!(check_suites(&failed, &all, &[])
            .unwrap_err()
            .contains("b: 1 passed"));
        // Only skipped: not a pass.
        assert!(check_suites(
            &[Suite {
                skipped: 2,
                ..suite("s", 0)
            }],
            &all,
            &[]
        )
        .is_err());
        assert!(check_suites(&[], &all, &[]).is_err());
        let parse_error = Suite {
            errors: 1,
            ..Suite::default()
        };
        assert!(check_suites(&suites, &parse_error, &[]).is_err());
    }

    #[test]
    fn strips_printk_timestamps_only() {
        assert_eq!(console_message("[    1.234567] BUG: x\r"), "BUG: x");
        assert_eq!(console_message("[ivshmem] text"), "[ivshmem] text");
        assert_eq!(console_message("    ok 1 case"), "    ok 1 case");
    }

    const TESTS: &str = "KTAP version 1\n1..2\n    KTAP version 1\n    # Subtest: a\n    \
                         1..1\n    ok 1 case\nok 1 a\nok 2 b\n";

    #[test]
    fn the_end_panic_after_the_tests_is_no_problem() {
        let log = format!(
            "{TESTS}VFS: Cannot open root device\nKernel panic - not syncing: VFS: Unable \
             to mount root fs on unknown-block(0,0)\n"
        );
        assert!(boot_problems(&log).is_empty(), "{:?}", boot_problems(&log));
        let log = format!("{TESTS}Kernel panic - not syncing: No working init found.\n");
        assert!(boot_problems(&log).is_empty());
    }

    #[test]
    fn a_panic_before_the_end_of_the_tests_is_a_problem() {
        let log = "KTAP version 1\n1..2\nok 1 a\nKernel panic - not syncing: VFS: Unable to \
                   mount root fs\n";
        assert_eq!(boot_problems(log).len(), 1);
        let log = format!("{TESTS}Kernel panic - not syncing: Fatal exception\n");
        assert!(boot_problems(&log)[0].contains("Fatal exception"));
    }

    #[test]
    fn bugs_warnings_oopses_and_call_traces_are_problems() {
        for line in [
            "BUG: kernel NULL pointer dereference, address: 0000000000000000",
            "[    2.000000] WARNING: CPU: 1 PID: 1 at lib/foo.c:12 foo+0x1/0x2",
            "Oops: general protection fault, probably for non-canonical address",
            "Call Trace:",
            "Unable to handle kernel paging request at virtual address 0000000002bd",
            "Internal error: Oops: 0000000096000004 [#1] SMP",
            "Call trace:",
        ] {
            let log = format!("{TESTS}{line}\n");
            assert_eq!(boot_problems(&log).len(), 1, "{line}");
        }
        assert!(
            boot_problems(&format!("{TESTS}    # a: WARNING in a test's own log\n")).is_empty()
        );
    }
}
