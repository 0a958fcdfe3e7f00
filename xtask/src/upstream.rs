// SPDX-License-Identifier: GPL-2.0

//! `cargo xtask upstream [--tree DIR] [--patch FILE]... [WHAT...]`: a kernel tree's own
//! nova-core message queue, unmodified, against the virtual GSP.
//!
//! 1. The tree is `--tree DIR` (any tree with `drivers/gpu/nova-core`), `--tree RELEASE`
//!    (a release Debian serves, such as `7.2` or `7.3~rc7`, fetched once into the cache:
//!    [`linux::linux_tree`]), or the Linux 7.3 tree the kernel tier follows.
//! 2. With `--patch` (or `--series`: every patch of `upstream/` but its cover letter, in
//!    order), the tree's `drivers/gpu/nova-core` is copied to a scratch tree
//!    (`target/upstream/tree-PID`, this process's: commands run side by side) and each
//!    patch applied there with `git apply`, in order; a
//!    patch that does not apply is an error naming it. The tree itself is never written.
//! 3. `tests/upstream` (crate `vgsp-upstream`, outside the workspace) is built against
//!    that tree: its `build.rs` names the tree's queue files by path, so they are
//!    compiled as they are. A build that fails is reported one line per error,
//!    `upstream build: <file>:<line>: <code> <message>`, the file relative to the tree
//!    for upstream's files (the tree differs from what the adapters expect) and to the
//!    repository for ours (an adapter or the shim lacks what the tree needs).
//! 4. The harness `vgsp-upstream` runs the checks `WHAT` names (all by default) and prints
//!    one section each and `finding:` lines; `fuzz` is the cargo-fuzz target
//!    `upstream_gspq_receive` (tests/upstream/fuzz, nightly), run here for
//!    `VGSP_UPSTREAM_FUZZ_RUNS` inputs (20 000 by default). The summary line is last.
//!
//! 5. `kernel` (only when named) builds the tree's nova-core in the tree's own kernel (its
//!    `rust/`, its Kconfig), x86_64 with `CONFIG_NOVA_CORE=y` ([`build_in_kernel`]), any
//!    warning a failure; source and build are cached per tree, side by side. The
//!    in-kernel paths (`kernel`, `boot`) serve any tree; the out-of-kernel checks compile
//!    the queue against the shim, which speaks 7.3's API, and say so for a tree that
//!    needs another.
//! 6. `ordering` (only when named) builds the harness for aarch64 with the shim's trace
//!    marks, runs its `ordering` workload under `qemu-aarch64` with the project's plugin
//!    and decides the trace ([`ordering`]): one line per missing ordering at the
//!    tree's source line, and `ordering C defects (contract), A defects (arm64)` in the
//!    summary. Defects are findings about the tree, not failures.
//! 7. `boot` (only when named) builds the kernel's image too and boots it under QEMU 11
//!    against the emulated GH100 whose GSP is ours ([`boot`]): a `boot:` line per
//!    stage and `boot ok` or `boot FAIL` in the summary. `--arch arm64` builds and boots
//!    the arm64 kernel (a `virt` machine, 2 vCPUs) instead of x86_64's. With
//!    `--gsp-fault NAME` (repeatable, or `all`), one more boot per fault, the GSP
//!    misbehaving as named, and one `gsp-fault NAME: …` row of what the driver did:
//!    findings, not failures. With `--ordering` (arm64), the boot is traced and the
//!    ordering of the code the kernel compiled decided ([`kernel_trace`]).
//! 8. `replay IMAGE [--rptr N]` (alone): the tree's receive over a `gspq` image, printing
//!    the lines `vgsp-tool replay-gspq` prints for ours, each for what the tree's receive
//!    handed over (a message cut, or unlike the image, says so).
//!
//! The exit status is 0 when the command worked, findings or not; 1 when the echo check
//! or the boot failed; 2 when the command could not run (no tree, a patch that does not apply, a
//! build that fails).

use std::{
    fs,
    io::{
        BufRead,
        BufReader, //
    },
    path::{
        Path,
        PathBuf, //
    },
    process::{
        Command,
        Stdio, //
    },
    time::Instant,
};

use serde_json::Value;

use crate::{
    api,
    boot,
    kbuild::{
        self,
        kernel_version,
        Arch,
        Tree, //
    },
    kernel_trace,
    latency,
    linux,
    ordering,
    util::{
        self,
        process::{
            jobs,
            run_logged,
            tail,
            Progress, //
        },
        stamp::sha256_hex,
        tools, //
    }, //
};

/// The queue files of nova-core that the harness compiles, relative to
/// `drivers/gpu/nova-core`: what must exist in a tree for it to be measured.
const QUEUE_FILES: &[&str] = &["gsp/cmdq.rs", "gsp/fw.rs", "sbuffer.rs", "num.rs"];

/// What the command was asked to do.
struct Options {
    tree: Option<PathBuf>,
    patches: Vec<PathBuf>,
    what: Vec<String>,
    /// The GSP faults `boot` plays, one boot each (`all`: every one).
    faults: Vec<String>,
    /// Whether the patches are the whole series of `upstream/` (`--series`).
    series: bool,
    /// `replay IMAGE [--rptr N]`: the image and its options.
    replay: Option<Vec<String>>,
    /// The architecture `kernel` and `boot` build and boot (`--arch`, x86_64 by default).
    arch: Arch,
    /// Whether the arm64 boot traces nova-core's accesses and decides their ordering
    /// (`--ordering`).
    boot_ordering: bool,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut opts = Options {
        tree: None,
        patches: Vec::new(),
        what: Vec::new(),
        faults: Vec::new(),
        series: false,
        replay: None,
        arch: Arch::X86_64,
        boot_ordering: false,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--tree" => opts.tree = Some(args.next().ok_or("--tree needs a directory")?.into()),
            "--patch" => opts
                .patches
                .push(args.next().ok_or("--patch needs a file")?.into()),
            "--series" => {
                opts.series = true;
                opts.patches.extend(series(
                    &Path::new(env!("CARGO_MANIFEST_DIR")).join("../upstream"),
                )?);
            }
            "--arch" => {
                let name = args.next().ok_or("--arch needs x86_64 or arm64")?;
                opts.arch =
                    Arch::parse(name).ok_or_else(|| format!("--arch {name}: x86_64 or arm64"))?;
            }
            "--ordering" => opts.boot_ordering = true,
            "--gsp-fault" => opts.faults.push(
                args.next()
                    .ok_or("--gsp-fault needs a fault's name, or all")?
                    .clone(),
            ),
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}")),
            "replay" => {
                let image = args.next().ok_or("replay needs a gspq image")?;
                let mut replay = vec![image.clone()];
                if args.as_slice().first().is_some_and(|a| a == "--rptr") {
                    replay.push("--rptr".into());
                    args.next();
                    replay.push(args.next().ok_or("--rptr needs a slot number")?.clone());
                }
                opts.replay = Some(replay);
            }
            what => opts.what.push(what.to_string()),
        }
    }
    Ok(opts)
}

/// The name of a series' cover letter, which is no patch to apply.
pub(crate) const COVER_LETTER: &str = "0000-cover-letter.patch";

/// The series of `upstream/`, in the order they apply: the barrier fix (v4 of the thread's
/// series), then the receive path's hardening, based on it.
pub(crate) const SERIES: &[&str] = &["barriers", "receive"];

/// Returns the patches of every series in `dir` (`upstream/`), in the order they apply.
///
/// # Errors
///
/// A series' directory cannot be read, or holds no patch.
pub(crate) fn series(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut patches = Vec::new();
    for name in SERIES {
        patches.extend(series_in(&dir.join(name))?);
    }
    Ok(patches)
}

/// Returns the patches of the one series in `dir`, in order: every `NNNN-*.patch` but the
/// cover letter.
///
/// # Errors
///
/// `dir` cannot be read, or holds no patch.
pub(crate) fn series_in(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut patches: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.ends_with(".patch")
                && name.as_bytes().first().is_some_and(u8::is_ascii_digit)
                && name != COVER_LETTER
        })
        .collect();
    patches.sort();
    if patches.is_empty() {
        return Err(format!("{} holds no patch", dir.display()));
    }
    Ok(patches)
}

/// Makes the scratch tree: the tree's nova-core and `Makefile` (its version), with the
/// patches applied. Returns its root, this process's own (`tree-PID`): another command
/// running meanwhile makes its own, and the ones of processes that ended are removed.
pub(crate) fn patched_tree(
    repo: &Path,
    tree: &Path,
    patches: &[PathBuf],
) -> Result<PathBuf, String> {
    let work = repo.join("target/upstream");
    let scratch = work.join(format!("tree-{}", std::process::id()));
    let stale = fs::read_dir(&work)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            // `tree`: where every command made it before.
            name == "tree"
                || name.strip_prefix("tree-").is_some_and(|pid| {
                    pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists()
                })
        });
    for old in stale.map(|e| e.path()).chain([scratch.clone()]) {
        if old.exists() {
            fs::remove_dir_all(&old).map_err(|e| format!("{}: {e}", old.display()))?;
        }
    }
    let nova = "drivers/gpu/nova-core";
    util::copy_dir(&tree.join(nova), &scratch.join(nova), &[])?;
    fs::copy(tree.join("Makefile"), scratch.join("Makefile"))
        .map_err(|e| format!("{}: {e}", tree.join("Makefile").display()))?;
    for patch in patches {
        let patch =
            fs::canonicalize(patch).map_err(|e| format!("patch {}: {e}", patch.display()))?;
        // Only nova-core is in the scratch tree: the patch's other files (MAINTAINERS,
        // say) are not this command's business. The scratch tree lies inside the
        // repository, where git would apply the patch relative to the repository's root
        // and skip every path outside the current directory: the ceiling stops git from
        // finding the repository.
        let git_apply = |check: &[&str]| {
            tools::command("git")?
                .args(["apply", "--include", &format!("{nova}/*")])
                .args(check)
                .arg(&patch)
                .current_dir(&scratch)
                .env("GIT_CEILING_DIRECTORIES", repo.join("target/upstream"))
                .output()
                .map_err(|e| format!("git apply: {e} (is git installed?)"))
        };
        let touched = git_apply(&["--numstat"])?;
        if !touched.status.success() {
            return Err(format!(
                "patch {} cannot be read as a patch:\n{}",
                patch.display(),
                String::from_utf8_lossy(&touched.stderr).trim_end()
            ));
        }
        if String::from_utf8_lossy(&touched.stdout).trim().is_empty() {
            return Err(format!(
                "patch {} changes nothing under {nova}",
                patch.display()
            ));
        }
        let out = git_apply(&[])?;
        if !out.status.success() {
            return Err(format!(
                "patch {} does not apply to {}:\n{}",
                patch.display(),
                tree.display(),
                String::from_utf8_lossy(&out.stderr).trim_end()
            ));
        }
    }
    Ok(scratch)
}

/// Builds the harness against `tree`; returns the binary, or every error the build had.
fn build(repo: &Path, tree: &Path) -> Result<PathBuf, Vec<String>> {
    let manifest = repo.join("tests/upstream");
    let mut child = match Command::new(env!("CARGO"))
        .args([
            "build",
            "--release",
            "--message-format=json",
            "--bin",
            "vgsp-upstream",
        ])
        .current_dir(&manifest)
        .env("VGSP_UPSTREAM_TREE", tree)
        .env("CARGO_TARGET_DIR", repo.join("target/upstream"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) => return Err(vec![format!("cannot run cargo: {e}")]),
    };
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    // Cargo's own messages (a missing crate, a build script that panicked) come on
    // stderr: kept for when no diagnostic explains the failure.
    let cargo_log = std::thread::spawn(move || {
        BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .filter(|l| !l.trim_start().starts_with("Compiling"))
            .collect::<Vec<_>>()
    });
    let (mut errors, mut binary) = (Vec::new(), None);
    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        match msg["reason"].as_str() {
            Some("compiler-message") if msg["message"]["level"] == "error" => {
                let diag = &msg["message"];
                let code = diag["code"]["code"].as_str().unwrap_or("error");
                let text = diag["message"].as_str().unwrap_or("?");
                // The summary ("aborting due to N previous errors") names no place.
                if !diag["spans"].as_array().is_some_and(Vec::is_empty) {
                    errors.push(format!(
                        "{}: {code} {text}",
                        api::location(diag, &[(tree, "upstream "), (repo, "ours ")], &manifest)
                    ));
                }
            }
            Some("compiler-artifact") if msg["target"]["name"] == "vgsp-upstream" => {
                binary = msg["executable"].as_str().map(PathBuf::from);
            }
            _ => {}
        }
    }
    let ok = child.wait().is_ok_and(|s| s.success());
    let cargo_log = cargo_log.join().unwrap_or_default();
    match (ok, binary) {
        (true, Some(binary)) => Ok(binary),
        _ if !errors.is_empty() => Err(errors),
        _ => Err(cargo_log
            .into_iter()
            .rev()
            .take(20)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect()),
    }
}

/// `cargo xtask upstream [--tree DIR] [--patch FILE]... [WHAT...]`.
pub(crate) fn upstream(args: &[String]) -> Result<bool, String> {
    let started = Instant::now();
    let opts = parse(args).map_err(|e| {
        format!("{e}\nusage: cargo xtask upstream [--tree DIR] [--patch FILE|--series]... [--arch x86_64|arm64] [--ordering] [--gsp-fault NAME|all]... [WHAT...|replay IMAGE [--rptr N]]")
    })?;
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("xtask is not inside the repository")?
        .to_path_buf();
    let tree = match &opts.tree {
        Some(tree) => linux::tree_argument(tree)?,
        None => linux::linux_7_3()?,
    };
    let nova = tree.join("drivers/gpu/nova-core");
    if let Some(missing) = QUEUE_FILES.iter().find(|f| !nova.join(f).is_file()) {
        return Err(format!(
            "{} has no drivers/gpu/nova-core/{missing}: not a tree with nova-core's command queue",
            tree.display()
        ));
    }
    let version = kernel_version(&tree)?;
    let built_from = match opts.patches.is_empty() {
        true => tree.clone(),
        false => patched_tree(&repo, &tree, &opts.patches)?,
    };
    let mut name = format!("upstream {version}");
    if opts.series {
        name += " +series";
    } else {
        for patch in &opts.patches {
            let file = patch.file_name().map(|f| f.to_string_lossy().into_owned());
            name += &format!(" +{}", file.unwrap_or_default());
        }
    }
    if let Some(replay) = &opts.replay {
        if !opts.what.is_empty() {
            return Err("replay runs alone: leave the other checks out".into());
        }
        return replay_image(&repo, &tree, &built_from, &name, replay);
    }
    let fuzz = opts.what.is_empty() || opts.what.iter().any(|w| w == "fuzz");
    let kernel = opts.what.iter().any(|w| w == "kernel");
    let boot = opts.what.iter().any(|w| w == "boot");
    if !opts.faults.is_empty() && !boot {
        return Err("--gsp-fault plays a fault in a boot: add `boot` to WHAT".into());
    }
    if opts.boot_ordering && !(boot && opts.arch == Arch::Arm64) {
        return Err(
            "--ordering traces nova-core in the arm64 kernel's boot: add `boot --arch arm64`"
                .into(),
        );
    }
    if opts.arch != Arch::X86_64 && !(kernel || boot) {
        return Err("--arch chooses the kernel `kernel` and `boot` build: add one of them".into());
    }
    let ordering = opts.what.iter().any(|w| w == "ordering");
    let checks: Vec<&String> = opts
        .what
        .iter()
        .filter(|w| !OWN_WHAT.contains(&w.as_str()))
        .collect();
    if !opts.faults.is_empty() {
        // A wrong name is said before the kernel's build, not after it.
        let tools = boot::tools(&repo, opts.arch, Progress::new("upstream"))?;
        asked_faults(&boot::faults(&tools)?, &opts.faults)?;
    }
    let runs_harness = opts.what.is_empty() || !checks.is_empty();
    let mut summary = None;
    let mut boot_failed = false;
    // Where the time went, for the loop's line: (what, seconds).
    let mut took: Vec<(String, u64)> = Vec::new();
    // The harness owns its checks' names: with a kernel's build to come, it is built first,
    // so that a wrong name is said before minutes of the kernel's build, not after them.
    // A tree the shim cannot build still has its kernel built and booted first: the
    // harness's errors are said after, where its checks run.
    let mut harness = None;
    if runs_harness && (kernel || boot) {
        let lap = Instant::now();
        if let Ok(binary) = build(&repo, &built_from) {
            asked_checks(&harness_checks(&binary)?, &checks)?;
            harness = Some(binary);
        }
        took.push(("the harness's build".into(), lap.elapsed().as_secs()));
    }
    if kernel || boot {
        let lap = Instant::now();
        let built = build_in_kernel(&tree, &built_from, &name, boot, opts.arch)?;
        if built.waited.as_secs() > 0 {
            took.push(("waiting for the build lock".into(), built.waited.as_secs()));
        }
        let build = lap.elapsed().saturating_sub(built.waited);
        took.push(("the kernel's build".into(), build.as_secs()));
        if let (true, Some(image)) = (boot, &built.image) {
            let what = match opts.arch {
                Arch::X86_64 => "boot".to_string(),
                arch => format!("{} boot", arch.name()),
            };
            let lap = Instant::now();
            let ok = boot_gh100(&repo, &built, image, &name, opts.boot_ordering)?;
            took.push(("the boot".into(), lap.elapsed().as_secs()));
            boot_failed = !ok.booted;
            let mut line = format!("{name}: {what} {}", if ok.booted { "ok" } else { "FAIL" });
            if !opts.faults.is_empty() {
                let lap = Instant::now();
                let (run, accepted) = fault_table(&repo, &built, image, opts.arch, &opts.faults)?;
                took.push((
                    format!("{run} fault boots, {} side by side", boot::pool::width()?),
                    lap.elapsed().as_secs(),
                ));
                line += &format!(", gsp-fault {run} run, {accepted} accepted");
            }
            if let Some(figures) = ok.ordering {
                line += &format!(", {figures}");
            }
            summary = Some(line);
        }
    }
    if ordering {
        println!("xtask: upstream: {name}'s queue for aarch64, traced under qemu-aarch64");
        let figures = ordering::upstream_ordering(&built_from, &name)?;
        summary = Some(match summary {
            Some(line) => format!("{line}, {figures}"),
            None => format!("{name}: {figures}"),
        });
    }
    let mut echo_failed = false;
    if runs_harness {
        let binary = match harness {
            Some(binary) => binary,
            None => harness_binary(&repo, &tree, &built_from, &name, &version)?,
        };
        let out = Command::new(binary)
            .arg("--name")
            .arg(&name)
            .args(checks)
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| format!("cannot run the harness: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let mut lines: Vec<&str> = text.lines().collect();
        let last = lines.pop().map(str::to_string);
        summary = match (summary, last) {
            // `<name>: ordering ...` and `<name>: echo ...`: one line, the name once.
            (Some(ours), Some(theirs)) => Some(format!(
                "{theirs}, {}",
                ours.trim_start_matches(&format!("{name}: "))
            )),
            (ours, theirs) => theirs.or(ours),
        };
        for line in lines {
            println!("{line}");
        }
        match out.status.code() {
            Some(0) => {}
            Some(1) => echo_failed = true,
            _ => return Err(format!("the harness failed ({})", out.status)),
        }
    }
    if fuzz {
        let (execs, crashes) = fuzz_receive(&repo, &built_from)?;
        let part = format!("fuzz {execs} execs {crashes} crashes");
        summary = Some(match summary {
            Some(line) => format!("{line}, {part}"),
            None => format!("{name}: {part}"),
        });
    }
    if !took.is_empty() {
        let parts: Vec<String> = took
            .iter()
            .map(|(what, s)| format!("{what} {s} s"))
            .collect();
        println!(
            "xtask: upstream: {} s in all ({})",
            started.elapsed().as_secs(),
            parts.join(", ")
        );
    }
    if let Some(line) = summary {
        println!("{line}");
    }
    Ok(!echo_failed && !boot_failed)
}

/// Builds the harness over the queue of `built_from` (`tree`, or its patched copy); returns
/// its binary.
///
/// # Errors
///
/// The queue does not build with the project's adapters: the errors are printed, and the
/// error says which paths still serve the tree.
fn harness_binary(
    repo: &Path,
    tree: &Path,
    built_from: &Path,
    name: &str,
    version: &str,
) -> Result<PathBuf, String> {
    println!("xtask: upstream: building {name}'s nova-core queue against the shim");
    build(repo, built_from).map_err(|errors| {
        for e in &errors {
            println!("upstream build: {e}");
        }
        format!(
            "{name}: the queue does not build with the project's adapters ({} errors above). \
             {}",
            errors.len(),
            in_kernel_hint(tree, version)
        )
    })
}

/// Returns the names of the harness's checks (`vgsp-upstream --list`).
fn harness_checks(binary: &Path) -> Result<Vec<String>, String> {
    let out = Command::new(binary)
        .arg("--list")
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run the harness: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "the harness could not list its checks ({})",
            out.status
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect())
}

/// What of WHAT this command runs itself; the rest are the harness's checks.
const OWN_WHAT: &[&str] = &["fuzz", "kernel", "boot", "ordering"];

/// Refuses a check of `asked` that is not one of the harness's (`known`).
fn asked_checks(known: &[String], asked: &[&String]) -> Result<(), String> {
    let Some(wrong) = asked.iter().find(|a| !known.contains(a)) else {
        return Ok(());
    };
    let harness: Vec<&str> = known
        .iter()
        .map(String::as_str)
        .filter(|k| !OWN_WHAT.contains(k))
        .collect();
    Err(format!(
        "no check {wrong:?}: WHAT names {} or one of the harness's checks: {}",
        OWN_WHAT.join(", "),
        harness.join(", ")
    ))
}

/// Returns what to say when the out-of-kernel harness cannot build a tree's queue: which
/// paths still serve the tree.
fn in_kernel_hint(tree: &Path, release: &str) -> String {
    format!(
        "The out-of-kernel checks (echo, hostile, fuzz, bench, replay, ordering) compile the \
         tree's queue against the project's shim, which speaks Linux 7.3's kernel API; Linux \
         {release}'s queue needs another. The in-kernel paths build the tree with its own \
         kernel and serve it: cargo xtask upstream --tree {} boot [--gsp-fault all]",
        tree.display()
    )
}

/// Writes the initramfs of a boot (the guest's init) into `dir`; returns its path.
fn initramfs_in(built: &Built, dir: &Path) -> Result<PathBuf, String> {
    fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let initrd = dir.join("initramfs.cpio");
    let init = built.tools.init();
    let init = fs::read(init).map_err(|e| format!("{}: {e}", init.display()))?;
    fs::write(&initrd, boot::initramfs(&init)).map_err(|e| format!("{}: {e}", initrd.display()))?;
    Ok(initrd)
}

/// Returns the directory of a boot's logs: `target/upstream/boot` for x86_64,
/// `target/upstream/boot-arm64` for arm64.
fn boot_dir(repo: &Path, arch: Arch) -> PathBuf {
    match arch {
        Arch::X86_64 => repo.join("target/upstream/boot"),
        arch => repo.join(format!("target/upstream/boot-{}", arch.name())),
    }
}

/// Returns the faults of `known` that `asked` names (`all`: every one), each once (a fault
/// named twice boots once: each boot has one directory).
///
/// # Errors
///
/// - A name that is neither `all` nor a known fault: the names there are.
fn asked_faults(known: &[String], asked: &[String]) -> Result<Vec<String>, String> {
    let mut faults = Vec::new();
    for name in asked {
        match name.as_str() {
            "all" => faults.extend(known.iter().cloned()),
            name if known.iter().any(|k| k == name) => faults.push(name.to_string()),
            name => {
                return Err(format!(
                    "no GSP fault {name}: one of all, {}",
                    known.join(", ")
                ))
            }
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    faults.retain(|f| seen.insert(f.clone()));
    Ok(faults)
}

/// Boots the tree's kernel `image` once per GSP fault of `asked` (`all`: every one) and
/// prints one row each: what the driver did. Returns the faults run and how many of them
/// the driver accepted (its probe succeeded).
fn fault_table(
    repo: &Path,
    built: &Built,
    image: &Path,
    arch: Arch,
    asked: &[String],
) -> Result<(usize, usize), String> {
    println!("== boot --gsp-fault");
    let faults = asked_faults(&boot::faults(&built.tools)?, asked)?;
    // Each boot has its own directory, initramfs, logs and device socket: they run side
    // by side, the rows printed in the table's order.
    let width = boot::pool::width()?;
    let boot_one = |fault: &String| -> Result<boot::Run, String> {
        let dir = boot_dir(repo, arch).join(fault);
        let initrd = initramfs_in(built, &dir)?;
        let guest = boot::Guest {
            arch,
            image,
            initrd: &initrd,
            qemu_args: Vec::new(),
        };
        boot::run(&built.tools, &guest, &dir, Some(fault))
    };
    let last: Vec<Option<f64>> = faults
        .iter()
        .map(|f| boot::last_seconds(&boot_dir(repo, arch).join(f)))
        .collect();
    let start = boot::pool::longest_first(&last);
    let (mut run_count, mut accepted) = (0, 0);
    boot::pool::in_order(&faults, &start, width, boot_one, |fault, run| {
        let run = run?;
        if let Some(why) = run.runner.as_deref() {
            return Err(format!(
                "the boot with --gsp-fault {fault} could not run: {why}"
            ));
        }
        let behaviour = boot::behaviour(&run);
        accepted += usize::from(behaviour.starts_with("accepted"));
        run_count += 1;
        println!("gsp-fault {fault}: {behaviour}");
        Ok(())
    })?;
    Ok((run_count, accepted))
}

/// What a boot showed: whether the driver booted, and the ordering verdict's figures
/// when it was traced.
struct Booted {
    booted: bool,
    ordering: Option<String>,
}

/// Boots the tree's kernel `image` against the emulated GH100 and prints the verdict:
/// a `boot:` line per stage; on a failure, the problems and the GSP's transcript. With
/// `ordering` (arm64), the boot is traced and the trace decided ([`kernel_trace`]).
fn boot_gh100(
    repo: &Path,
    built: &Built,
    image: &Path,
    name: &str,
    ordering: bool,
) -> Result<Booted, String> {
    println!("== boot");
    let dir = boot_dir(repo, built.arch);
    let initrd = initramfs_in(built, &dir)?;
    let trace = match ordering {
        true => Some(kernel_trace::prepare(repo, &built.build, &dir)?),
        false => None,
    };
    let guest = boot::Guest {
        arch: built.arch,
        image,
        initrd: &initrd,
        qemu_args: trace.as_ref().map(|t| t.qemu_args()).unwrap_or_default(),
    };
    println!(
        "xtask: upstream: booting {name}'s {} kernel against the emulated GH100",
        built.arch.name()
    );
    let run = boot::run(&built.tools, &guest, &dir, None)?;
    let verdict = boot::verdict(&run);
    for line in &verdict.lines {
        println!("{line}");
    }
    println!("boot: {:.1} s from QEMU's start to its end", run.seconds);
    for line in latency::report(&run.transcript, &run.console) {
        println!("{line}");
    }
    let ordering = match &trace {
        Some(trace) if verdict.problems.is_empty() => Some(trace.decide(&run)?),
        _ => None,
    };
    if verdict.problems.is_empty() {
        return Ok(Booted {
            booted: true,
            ordering,
        });
    }
    for problem in &verdict.problems {
        println!("boot FAIL: {problem}");
    }
    println!(
        "boot: the GSP's transcript (also {}):",
        dir.join("transcript.log").display()
    );
    for line in run.transcript.lines() {
        println!("    {line}");
    }
    println!("boot: the console: {}", dir.join("boot.log").display());
    Ok(Booted {
        booted: false,
        ordering: None,
    })
}

/// Runs the receive of `tree` (the queue's source: the tree named, or its patched scratch
/// copy) over a `gspq` image (`replay IMAGE [--rptr N]`) and prints the lines `vgsp-tool
/// replay-gspq` prints for ours, nothing else on standard output: one per receive, for the
/// message the tree's receive handed over, compared with what the image holds for it
/// (`vgsp_upstream::replay`). `pristine` is the tree named, for the error when its queue
/// does not build.
fn replay_image(
    repo: &Path,
    pristine: &Path,
    tree: &Path,
    name: &str,
    args: &[String],
) -> Result<bool, String> {
    eprintln!("xtask: upstream: building {name}'s nova-core queue against the shim");
    let binary = build(repo, tree).map_err(|errors| {
        format!(
            "{name}: the queue does not build with the project's adapters:\n{}\n{}",
            errors.join("\n"),
            in_kernel_hint(pristine, &kernel_version(pristine).unwrap_or_default())
        )
    })?;
    let out = Command::new(binary)
        .arg("replay")
        .args(args)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run the harness: {e}"))?;
    print!("{}", String::from_utf8_lossy(&out.stdout));
    match out.status.success() {
        true => Ok(true),
        false => Err(format!("the replay could not run ({})", out.status)),
    }
}

/// How many inputs the fuzz check runs by default (`VGSP_UPSTREAM_FUZZ_RUNS` to change).
const FUZZ_RUNS: u64 = 20_000;

/// Runs the cargo-fuzz target `upstream_gspq_receive` (tests/upstream/fuzz) over the
/// tree's receive path for a bounded number of inputs; prints the section and returns
/// the inputs run and the crashes (a panic, or a receive that did not return: libFuzzer
/// stops at the first, with the input saved, which is printed as a finding).
fn fuzz_receive(repo: &Path, tree: &Path) -> Result<(u64, u64), String> {
    println!("== fuzz");
    tools::ensure(&["cargo-fuzz", "c++"])?;
    let have_nightly = tools::command("cargo")?
        .args(["+nightly", "fuzz", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_nightly {
        return Err("the fuzz check runs cargo-fuzz on the nightly toolchain: \
             rustup toolchain install nightly (or leave `fuzz` out of WHAT)"
            .into());
    }
    let runs =
        match std::env::var("VGSP_UPSTREAM_FUZZ_RUNS") {
            Ok(v) => v.parse::<u64>().ok().filter(|n| *n > 0).ok_or_else(|| {
                format!("VGSP_UPSTREAM_FUZZ_RUNS={v}: a number of inputs, 1 or more")
            })?,
            Err(_) => FUZZ_RUNS,
        };
    let work = repo.join("target/upstream");
    let (corpus, artifacts) = (work.join("fuzz-corpus"), work.join("fuzz-artifacts"));
    for dir in [&corpus, &artifacts] {
        fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let log = work.join("fuzz.log");
    let log_file = fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let status = tools::command("cargo")?
        .args(["+nightly", "fuzz", "run", "--fuzz-dir"])
        .arg(repo.join("tests/upstream/fuzz"))
        .arg("upstream_gspq_receive")
        .arg(&corpus)
        .arg("--")
        .arg(format!("-runs={runs}"))
        // The bench leaks its device and pool on purpose (a pooled device is 'static):
        // neither libFuzzer's leak check nor LeakSanitizer's at exit is a finding.
        .arg("-detect_leaks=0")
        .arg("-timeout=10")
        .arg("-max_len=70000")
        .arg("-print_final_stats=1")
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .current_dir(repo)
        .env("VGSP_UPSTREAM_TREE", tree)
        .env("CARGO_TARGET_DIR", work.join("fuzz-target"))
        .env("ASAN_OPTIONS", "detect_leaks=0")
        .stdout(log_file.try_clone().map_err(|e| e.to_string())?)
        .stderr(log_file)
        .status()
        .map_err(|e| format!("cannot run cargo fuzz: {e}"))?;
    let text = fs::read_to_string(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let execs = text
        .lines()
        .find_map(|l| l.strip_prefix("stat::number_of_executed_units:"))
        .and_then(|n| n.trim().parse().ok());
    let saved = text
        .lines()
        .find_map(|l| l.split_once("Test unit written to ").map(|(_, p)| p.trim()));
    match (status.success(), execs, saved) {
        (true, Some(execs), _) => {
            println!("fuzz: {execs} inputs through upstream's receive, no crash or hang");
            Ok((execs, 0))
        }
        (false, execs, Some(saved)) => {
            let why = text
                .lines()
                .find(|l| l.contains("panicked at") || l.contains("ERROR: libFuzzer"))
                .unwrap_or("a crash")
                .trim();
            println!("finding: fuzz: {why}; input saved to {saved}");
            Ok((execs.unwrap_or(0), 1))
        }
        _ => Err(format!(
            "the fuzz check did not run to the end (log: {}):\n{}",
            log.display(),
            tail(&log, 15)
        )),
    }
}

/// Builds the tree's nova-core (patched, if `built_from` is the scratch tree) in the
/// kernel itself, for `arch`, `CONFIG_NOVA_CORE=y` on the kernel tier's configuration of
/// `arch` without the project: the tree's own build of the driver, every warning of it a
/// failure.
///
/// The kernel tier's build directory is not shared: its configuration has the project's
/// options, which this kernel must not have (upstream's driver alone, as a user builds
/// it); one tree's build per architecture is kept instead.
///
/// The source is a tree of hard links to `pristine` whose `drivers/gpu/nova-core` is
/// `built_from`'s: the tree's own `rust/`, Kconfig and Makefiles, whatever its release.
/// Source and build directory are the tree's own in the cache ([`tree_cache`]), kept warm
/// between runs and beside other trees'; the build lock is taken here and held as long as
/// the [`Built`] returned.
pub(crate) fn build_in_kernel(
    pristine: &Path,
    built_from: &Path,
    name: &str,
    image: bool,
    arch: Arch,
) -> Result<Built, String> {
    println!("== kernel");
    let progress = Progress::new("upstream");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("xtask is not inside the repository")?
        .to_path_buf();
    let cache = util::cache()?;
    let asked = Instant::now();
    let lock = kbuild::lock(&cache, progress)?;
    let waited = asked.elapsed();
    let tools = boot::tools(&repo, arch, progress)?;
    // Built into the kernel: written under the lock, as the build that reads them.
    let firmware_dir = cache.join("gh100-firmware");
    let firmware_files = boot::firmware(&tools, &firmware_dir)?;
    // QEMU 11 is fetched by the boot itself ([`crate::qemu`]).
    kbuild::ensure_build_tools(&[arch], false)?;
    let bindgen = kbuild::ensure_bindgen(&cache, progress)?;
    let nova = "drivers/gpu/nova-core";
    // The source: hard links to the pristine tree, nova-core replaced by the one built;
    // source and build directory are the tree's own, kept beside other trees'.
    let dir = tree_cache(&cache, pristine)?;
    // Before the cache was keyed by the tree, every tree shared these two.
    for old in ["linux-7.3-nova-core", "build-7.3-x86_64-nova-core"] {
        let old = cache.join(old);
        if old.exists() {
            progress.say(&format!("removing {}, no longer used", old.display()));
            fs::remove_dir_all(&old).map_err(|e| format!("{}: {e}", old.display()))?;
        }
    }
    let scratch = kbuild::linked_tree(pristine, &dir.join("src"), nova, progress)?;
    let ours = scratch.path.join(nova);
    // The pristine tree is never written: not through a link either.
    let home = fs::canonicalize(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if fs::canonicalize(&ours).is_ok_and(|o| !o.starts_with(&home)) {
        return Err(format!(
            "{} leads out of {}: refusing to replace it",
            ours.display(),
            dir.display()
        ));
    }
    if ours.exists() {
        fs::remove_dir_all(&ours).map_err(|e| format!("{}: {e}", ours.display()))?;
    }
    util::copy_dir(&built_from.join(nova), &ours, &[])?;
    // The build directory belongs to the pristine tree: one patch set after another only
    // rebuilds nova-core (the copy above gave its files new modification times, so make
    // cannot take the other set's objects for built).
    let tree = Tree::new(arch, &scratch, &cache, bindgen, progress)
        .in_build(dir.join(format!("build-{}", arch.name())));
    let fragment: String = kbuild::fragment(&repo, arch, false)?
        .lines()
        .filter(|l| !l.contains("CONFIG_NOVA_CORE"))
        .map(|l| format!("{l}\n"))
        .collect();
    tree.ensure_configured(
        &(fragment
            + "CONFIG_NOVA_CORE=y\n"
            + &boot::boot_fragment(arch, &firmware_dir, &firmware_files)),
    )?;
    tree.build_rust()?;
    let log = tree.build.join("build-nova-core.log");
    progress.say(&format!(
        "building drivers/gpu/, where 7.3 builds {nova} (cold: minutes); log: {}",
        log.display()
    ));
    let built = run_logged(
        tree.make()
            .arg(format!("-j{}", jobs()))
            // 7.3 builds nova-core from drivers/gpu/Makefile.
            .arg("drivers/gpu/"),
        &log,
        "nova-core",
        progress,
    );
    let diagnostics = kbuild::build_diagnostics(std::slice::from_ref(&log))?;
    let object = tree.build.join(nova).join("nova_core.o");
    match (built, diagnostics) {
        (Ok(()), None) if !object.is_file() => Err(format!(
            "the build made no {}: CONFIG_NOVA_CORE=y did not reach the driver",
            object.display()
        )),
        (Ok(()), None) => {
            println!(
                "kernel: {name}'s nova-core builds in the tree for {} with CONFIG_NOVA_CORE=y, \
                 no warning",
                arch.name()
            );
            let image = match image {
                true => Some(build_image(&tree, progress)?),
                false => None,
            };
            Ok(Built {
                tools,
                image,
                arch,
                build: tree.build.clone(),
                waited,
                _lock: lock,
            })
        }
        (Ok(()), Some(report)) => Err(format!(
            "{name}'s nova-core builds for {} with CONFIG_NOVA_CORE=y but warns: {report}",
            arch.name()
        )),
        (Err(e), report) => Err(format!(
            "{name}'s nova-core does not build for {} with CONFIG_NOVA_CORE=y: {e}\n{}",
            arch.name(),
            report.unwrap_or_else(|| tail(&log, 20))
        )),
    }
}

/// Returns the cache directory of the kernel tree `tree` (canonical): its release and a
/// hash of its path, so that several trees keep their sources and builds side by side and
/// switching between them leaves each one warm.
///
/// # Errors
///
/// - The tree's `Makefile` names no release.
pub(crate) fn tree_cache(cache: &Path, tree: &Path) -> Result<PathBuf, String> {
    let release = kernel_version(tree)?;
    let hash = sha256_hex(tree.as_os_str().as_encoded_bytes());
    Ok(cache
        .join("trees")
        .join(format!("{release}-{}", &hash[..12])))
}

/// What [`build_in_kernel`] built: the emulated GPU's tools, the kernel's image when asked
/// for, its architecture and its build directory (`vmlinux`, `System.map`).
///
/// It holds the build lock: the image is not rebuilt (by another command) while it boots,
/// nor the boots' logs written by another's.
pub(crate) struct Built {
    tools: boot::Tools,
    image: Option<PathBuf>,
    arch: Arch,
    build: PathBuf,
    /// How long the build waited for the lock.
    waited: std::time::Duration,
    _lock: fs::File,
}

impl Built {
    /// The kernel's image, where one was built.
    pub(crate) fn image(&self) -> Option<&Path> {
        self.image.as_deref()
    }
}

/// Builds the kernel's image (`bzImage`, `Image`) in `tree`'s build directory; returns its
/// path.
fn build_image(tree: &Tree, progress: Progress) -> Result<PathBuf, String> {
    let (target, path) = tree.arch.image();
    let log = tree.build.join("build-image.log");
    progress.say(&format!(
        "building the kernel's image (cold: minutes); log: {}",
        log.display()
    ));
    run_logged(
        tree.make().arg(format!("-j{}", jobs())).arg(target),
        &log,
        target,
        progress,
    )
    .map_err(|e| format!("the kernel's image does not build: {e}\n{}", tail(&log, 20)))?;
    Ok(tree.build.join(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known() -> Vec<String> {
        ["chatty", "silent"].map(String::from).to_vec()
    }

    #[test]
    fn a_fault_named_twice_or_also_through_all_boots_once() {
        let asked = ["silent", "all", "silent"].map(String::from);
        assert_eq!(
            asked_faults(&known(), &asked).unwrap(),
            ["silent", "chatty"]
        );
    }

    #[test]
    fn an_unknown_fault_is_an_error_naming_the_known_ones() {
        let e = asked_faults(&known(), &["chaty".to_string()]).unwrap_err();
        assert_eq!(e, "no GSP fault chaty: one of all, chatty, silent");
    }

    #[test]
    fn a_check_the_harness_lacks_is_an_error_naming_its_checks() {
        let known = ["echo", "hostile", "ordering"].map(String::from);
        let (echo, ehco) = ("echo".to_string(), "ehco".to_string());
        assert_eq!(asked_checks(&known, &[&echo]), Ok(()));
        let e = asked_checks(&known, &[&echo, &ehco]).unwrap_err();
        assert!(e.starts_with("no check \"ehco\""), "{e}");
        assert!(e.ends_with("checks: echo, hostile"), "{e}");
    }
}
