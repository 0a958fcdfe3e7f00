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
//!    links to it, `<cache>/linux-7.3-tier` ([`scratch_tree`]), to which it adds only the
//!    link `drivers/vgsp` to the repository and the project's hook lines in
//!    `drivers/Makefile` and `drivers/Kconfig` (both written as new files, never through
//!    the links). The scratch tree is made afresh whenever it differs from the pristine
//!    one in any other way, and its `rust/` must be the pristine's, file for file.
//! 2. Per architecture, the build directory `<cache>/build-7.3-<arch>`, shared with
//!    `cargo xtask api-7.3` ([`api::Tree`]): configured once from tinyconfig and
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
//! `Kconfig` declares, [`project_options`]) from the fragment for the run (so the build directory is configured anew, without them, and
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
//! kernel tier 7.3 (x86_64, arm64): ok, 18 suites, 160 cases
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
    collections::{
        BTreeMap,
        BTreeSet, //
    },
    env,
    fs::{
        self,
        File, //
    },
    io,
    os::unix::fs::{
        symlink,
        MetadataExt, //
    },
    path::{
        Path,
        PathBuf, //
    },
    process::{
        Command,
        Stdio, //
    },
    thread,
    time::{
        Duration,
        Instant, //
    },
};

use serde_json::Value;
use sha2::{
    Digest,
    Sha256, //
};

use crate::{
    api::{
        self,
        Arch,
        Tree, //
    },
    linux, //
};

/// Debian's Rust toolchain, the one the tree must build with.
pub(crate) const RUSTC: &str = "/usr/bin/rustc";
pub(crate) const RUSTDOC: &str = "/usr/bin/rustdoc";
/// The libclang 7.3's bindgen needs (17 or newer), from bookworm's `libclang1-22`.
pub(crate) const LIBCLANG: &str = "/usr/lib/llvm-22/lib";
/// The scratch tree, under the cache.
const SCRATCH_DIR: &str = "linux-7.3-tier";
/// The lock file that keeps two commands from using the 7.3 build at once, under the
/// cache.
const LOCK_FILE: &str = "build-7.3.lock";
/// Where the scratch tree reaches the repository.
const LINK: &str = "drivers/vgsp";
/// The scratch tree's files that carry the project's hooks.
const MAKEFILE: &str = "drivers/Makefile";
const KCONFIG: &str = "drivers/Kconfig";
/// The hook lines.
const MAKEFILE_HOOK: &str = "obj-$(CONFIG_NOVA_CORE_VGSP)\t+= vgsp/";
const KCONFIG_HOOK: &str = "source \"drivers/vgsp/Kconfig\"";
/// The project's Kconfig file, which declares its options.
const PROJECT_KCONFIG: &str = "Kconfig";
/// The project's sources Kbuild reads: a change in them invalidates the project's objects.
const PROJECT_SOURCES: &[&str] = &["Kbuild", "Kconfig", "drivers", "tests/kunit", "kernel-shim"];
/// The record of the project's sources of the last good build, in the build directory.
const SOURCES_STAMP: &str = "vgsp-sources.sha256";
/// The script that builds the crates.io crates for a build directory.
pub(crate) const EXTERN_CRATES: &str = "tests/kernel/extern-crates.sh";
/// The Debian packages every 7.3 build needs.
const BUILD_TOOLS: &[&str] = &[
    "make",
    "gcc",
    "bc",
    "flex",
    "bison",
    "cpio",
    "perl",
    "python3",
    "xz",
    "/usr/bin/rustc",
    "/usr/bin/rustdoc",
    "/usr/lib/rustlib/src/rust/library/core",
    "/usr/lib/llvm-22/lib/libclang-22.so.1",
    "/usr/include/libelf.h",
    "/usr/include/openssl/ssl.h",
];
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
/// How often a long build step says what it is doing.
const PROGRESS_EVERY: Duration = Duration::from_secs(30);
/// How many diagnostic lines (with their context) a failure prints.
const REPORT_LINES: usize = 60;
/// The context printed after each diagnostic line.
const CONTEXT_LINES: usize = 8;

/// Progress lines of one command, with the time since it started.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Progress {
    command: &'static str,
    start: Instant,
}

impl Progress {
    /// Starts the clock of `command`.
    pub(crate) fn new(command: &'static str) -> Self {
        Self {
            command,
            start: Instant::now(),
        }
    }

    /// Prints a progress line on standard error.
    pub(crate) fn say(&self, what: &str) {
        eprintln!(
            "xtask: {} [{:4} s] {what}",
            self.command,
            self.start.elapsed().as_secs()
        );
    }
}

/// Returns the SHA-256 of `data`, in hexadecimal.
pub(crate) fn sha256_hex(data: &[u8]) -> String {
    format!("{:x}", Sha256::digest(data))
}

/// Returns whether the stamp file `path` holds `value`.
pub(crate) fn stamp_matches(path: &Path, value: &str) -> bool {
    fs::read_to_string(path).is_ok_and(|recorded| recorded.trim_end() == value)
}

/// Records `value` in the stamp file `path`.
///
/// # Errors
///
/// - The file cannot be written.
pub(crate) fn write_stamp(path: &Path, value: &str) -> Result<(), String> {
    fs::write(path, format!("{value}\n")).map_err(|e| format!("{}: {e}", path.display()))
}

/// Returns the options a Kconfig text declares (`config FOO` as `CONFIG_FOO`).
fn kconfig_options(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let name = l.trim_start().strip_prefix("config ")?.trim();
            (!name.is_empty()).then(|| format!("CONFIG_{name}"))
        })
        .collect()
}

/// Returns the project's options: those the repository's `Kconfig` declares.
///
/// # Errors
///
/// - The file cannot be read, or declares no option.
pub(crate) fn project_options(repo: &Path) -> Result<Vec<String>, String> {
    let path = repo.join(PROJECT_KCONFIG);
    let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let options = kconfig_options(&text);
    if options.is_empty() {
        return Err(format!("{} declares no option", path.display()));
    }
    Ok(options)
}

/// Returns the stamp of the crates.io crates' inputs: the script that builds them, the
/// list of crates it is given, and the tree's `core` they are bound to.
pub(crate) fn crates_stamp(script: &[u8], crates: &str, libcore: &[u8]) -> String {
    format!(
        "script {} crates {} libcore {}",
        sha256_hex(script),
        sha256_hex(crates.as_bytes()),
        sha256_hex(libcore)
    )
}

/// Returns the hash of the files under `paths` (relative to `root`; files or
/// directories, recursively): of every file's path, length and content, in path order,
/// and of every symbolic link's target.
///
/// # Errors
///
/// - A path is missing or cannot be read.
pub(crate) fn hash_sources(root: &Path, paths: &[&str]) -> Result<String, String> {
    let mut files = BTreeMap::new();
    let mut stack: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
    while let Some(rel) = stack.pop() {
        let path = root.join(&rel);
        let meta = fs::symlink_metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        if meta.is_dir() {
            for entry in fs::read_dir(&path).map_err(|e| format!("{}: {e}", path.display()))? {
                let entry = entry.map_err(|e| format!("{}: {e}", path.display()))?;
                stack.push(rel.join(entry.file_name()));
            }
        } else {
            files.insert(rel, meta.file_type().is_symlink());
        }
    }
    let mut hasher = Sha256::new();
    for (rel, is_link) in &files {
        let path = root.join(rel);
        let content = if *is_link {
            fs::read_link(&path).map(|t| t.into_os_string().into_encoded_bytes())
        } else {
            fs::read(&path)
        }
        .map_err(|e| format!("{}: {e}", path.display()))?;
        hasher.update(rel.as_os_str().as_encoded_bytes());
        hasher.update([0]);
        hasher.update(content.len().to_le_bytes());
        hasher.update(&content);
    }
    Ok(format!("{:x}", hasher.finalize()))
}

/// Takes the lock of the 7.3 build (the scratch tree and the build directories), waiting
/// for another command that holds it; the lock lasts as long as the returned file.
///
/// # Errors
///
/// - The lock file cannot be made or locked.
pub(crate) fn lock(cache: &Path, progress: Progress) -> Result<File, String> {
    fs::create_dir_all(cache).map_err(|e| format!("{}: {e}", cache.display()))?;
    let path = cache.join(LOCK_FILE);
    let file = File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    match file.try_lock() {
        Ok(()) => return Ok(file),
        Err(fs::TryLockError::WouldBlock) => progress.say(&format!(
            "waiting for another `cargo xtask` using the kernel builds (lock: {})",
            path.display()
        )),
        Err(fs::TryLockError::Error(e)) => return Err(format!("{}: {e}", path.display())),
    }
    file.lock()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(file)
}

/// Returns the tools ([`crate::tools::TOOLS`]) building (and with `boot`, booting) for
/// `arches` needs.
fn build_tools(arches: &[Arch], boot: bool) -> Vec<&'static str> {
    let mut wanted: Vec<&str> = BUILD_TOOLS.to_vec();
    for arch in arches {
        let extra: &[&str] = match (arch, boot) {
            (Arch::X86_64, false) => &[],
            (Arch::X86_64, true) => &["qemu-system-x86_64"],
            (Arch::Arm64, false) => &["clang-22", "ld.lld-22", "llvm-objdump-22"],
            (Arch::Arm64, true) => &[
                "clang-22",
                "ld.lld-22",
                "llvm-objdump-22",
                "qemu-system-aarch64",
            ],
        };
        for p in extra {
            if !wanted.contains(p) {
                wanted.push(p);
            }
        }
    }
    wanted
}

/// Makes sure the tools building (and with `boot`, booting) for `arches` needs are
/// there ([`crate::tools::ensure`]): as root, installs the missing ones.
///
/// # Errors
///
/// - A tool is missing and this is not root (the error names the packages).
/// - An install fails.
pub(crate) fn ensure_build_tools(arches: &[Arch], boot: bool) -> Result<(), String> {
    crate::tools::ensure(&build_tools(arches, boot))
}

/// Returns `bindgen`, building it into `<cache>/bindgen` first if it is not there.
///
/// # Errors
///
/// - `cargo install bindgen-cli` fails.
pub(crate) fn ensure_bindgen(cache: &Path, progress: Progress) -> Result<PathBuf, String> {
    let root = cache.join("bindgen");
    let bindgen = root.join("bin/bindgen");
    if bindgen.is_file() {
        return Ok(bindgen);
    }
    progress.say("building bindgen-cli (once, about 2 minutes)");
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args(["install", "-q", "bindgen-cli", "--locked", "--root"])
        .arg(&root)
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run cargo install: {e}"))?;
    if !status.success() || !bindgen.is_file() {
        return Err(format!(
            "cargo install -q bindgen-cli --locked --root {} failed ({status})",
            root.display()
        ));
    }
    Ok(bindgen)
}

/// Returns the last `n` lines of `text`.
pub(crate) fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Returns the last build step a kernel build log names (a line such as
/// `  RUSTC L rust/kernel.o`), without its indentation.
fn last_step(log: &str) -> &str {
    log.lines()
        .rev()
        .find(|l| {
            l.strip_prefix("  ")
                .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_uppercase()))
        })
        .map_or("", str::trim)
}

/// Runs `cmd` with its output in `log` (truncated first), saying every 30 s what it is
/// doing.
///
/// # Errors
///
/// - The command cannot start, or fails (the error names `what` and the log).
pub(crate) fn run_logged(
    cmd: &mut Command,
    log: &Path,
    what: &str,
    progress: Progress,
) -> Result<(), String> {
    let file = File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = file
        .try_clone()
        .map_err(|e| format!("{}: {e}", log.display()))?;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    let started = Instant::now();
    let mut next = PROGRESS_EVERY;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => return Err(format!("waiting for {what}: {e}")),
        }
        if started.elapsed() >= next {
            next += PROGRESS_EVERY;
            let text = fs::read_to_string(log).unwrap_or_default();
            progress.say(&format!(
                "  {what}, {} s: {}",
                started.elapsed().as_secs(),
                last_step(&text)
            ));
        }
        thread::sleep(Duration::from_millis(200));
    };
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status}); log: {}", log.display()))
    }
}

/// Returns whether a build log line is a compiler's (or linker's, or make's) warning or
/// error: rustc's `warning: …`/`error[E0425]: …`, or `<where>: warning: …` with no space
/// in `<where>` (`foo.c:12:5: warning: …`, `ld.lld: error: …`). objtool's are not
/// counted.
fn is_diagnostic(line: &str) -> bool {
    let line = line.trim_end();
    if line.contains("objtool") {
        return false;
    }
    ["warning", "error"].iter().any(|kind| {
        let rustc = line
            .strip_prefix(kind)
            .is_some_and(|rest| rest.starts_with(':') || rest.starts_with('['));
        let located = [format!(": {kind}: "), format!(": fatal {kind}: ")]
            .iter()
            .any(|sep| {
                line.split_once(sep.as_str())
                    .is_some_and(|(at, _)| !at.is_empty() && !at.contains(' '))
            });
        rustc || located
    })
}

/// Returns the compiler warnings and errors of `logs` with their context, at most
/// [`REPORT_LINES`] lines; `None` if there is none.
///
/// # Errors
///
/// - A log cannot be read.
pub(crate) fn build_diagnostics(logs: &[PathBuf]) -> Result<Option<String>, String> {
    let mut count = 0;
    let mut report = Vec::new();
    for log in logs {
        let text = fs::read_to_string(log).map_err(|e| format!("{}: {e}", log.display()))?;
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if !is_diagnostic(line) {
                continue;
            }
            count += 1;
            report.push(format!("{}:{}: {line}", log.display(), i + 1));
            report.extend(
                lines[i + 1..lines.len().min(i + 1 + CONTEXT_LINES)]
                    .iter()
                    .map(|l| format!("    {l}")),
            );
        }
    }
    if count == 0 {
        return Ok(None);
    }
    report.truncate(REPORT_LINES);
    Ok(Some(format!(
        "{count} compiler warnings or errors:\n{}",
        report.join("\n")
    )))
}

/// How a file of a tree is compared with the pristine one's.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Compare {
    /// The same file (a hard link), or the same length and modification time.
    Quick,
    /// The same file, or the same bytes.
    Exact,
}

/// Returns how the tree `tier` differs from `pristine` below `rel` (`""` for the whole
/// tree), the paths of `skip` left out, at most `limit` differences, and the number of
/// files and links compared. Symbolic links are compared, never followed.
///
/// # Errors
///
/// - A directory or file cannot be read.
fn tree_differences(
    pristine: &Path,
    tier: &Path,
    rel: &str,
    skip: &[&str],
    mode: Compare,
    limit: usize,
) -> Result<(Vec<String>, usize), String> {
    let names = |dir: &Path| -> Result<BTreeSet<std::ffi::OsString>, String> {
        fs::read_dir(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .map(|e| {
                e.map(|e| e.file_name())
                    .map_err(|e| format!("{}: {e}", dir.display()))
            })
            .collect()
    };
    let meta = |p: &Path| fs::symlink_metadata(p).map_err(|e| format!("{}: {e}", p.display()));
    let mut diffs = Vec::new();
    let mut compared = 0;
    let mut stack = vec![PathBuf::from(rel)];
    while let Some(dir) = stack.pop() {
        let (a, b) = (names(&pristine.join(&dir))?, names(&tier.join(&dir))?);
        for name in a.union(&b) {
            let rel = dir.join(name);
            if skip.iter().any(|s| rel == Path::new(s)) {
                continue;
            }
            if diffs.len() >= limit {
                return Ok((diffs, compared));
            }
            let shown = rel.display();
            if !b.contains(name) {
                diffs.push(format!("{shown}: missing"));
                continue;
            }
            if !a.contains(name) {
                diffs.push(format!("{shown}: not in the pristine tree"));
                continue;
            }
            let (p, t) = (pristine.join(&rel), tier.join(&rel));
            let (mp, mt) = (meta(&p)?, meta(&t)?);
            if mp.file_type() != mt.file_type() {
                diffs.push(format!("{shown}: another kind of file"));
                continue;
            }
            if mp.is_dir() {
                stack.push(rel);
                continue;
            }
            compared += 1;
            if mp.dev() == mt.dev() && mp.ino() == mt.ino() {
                continue;
            }
            let same = if mp.file_type().is_symlink() {
                fs::read_link(&p).ok() == fs::read_link(&t).ok()
            } else if mode == Compare::Quick {
                mp.len() == mt.len()
                    && mp.mtime() == mt.mtime()
                    && mp.mtime_nsec() == mt.mtime_nsec()
            } else {
                mp.len() == mt.len()
                    && fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?
                        == fs::read(&t).map_err(|e| format!("{}: {e}", t.display()))?
            };
            if !same {
                diffs.push(format!("{shown}: differs"));
            }
        }
    }
    Ok((diffs, compared))
}

/// Returns the fingerprint of a tree, the paths of `skip` left out: a hash of every
/// entry's path, kind, inode, length and modification time. A tree unpacked anew, or with
/// any file replaced, gets another.
///
/// # Errors
///
/// - A directory cannot be read.
fn fingerprint(tree: &Path, skip: &[&str]) -> Result<String, String> {
    let mut hasher = Sha256::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(dir) = stack.pop() {
        let path = tree.join(&dir);
        let mut entries: Vec<_> = fs::read_dir(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?
            .collect::<Result<_, _>>()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let rel = dir.join(entry.file_name());
            if skip.iter().any(|s| rel == Path::new(s)) {
                continue;
            }
            let meta = entry
                .metadata()
                .map_err(|e| format!("{}: {e}", tree.join(&rel).display()))?;
            hasher.update(rel.as_os_str().as_encoded_bytes());
            let kind = if meta.is_dir() {
                stack.push(rel);
                b'd'
            } else if meta.file_type().is_symlink() {
                b'l'
            } else {
                b'f'
            };
            hasher.update([0, kind]);
            hasher.update(meta.ino().to_le_bytes());
            hasher.update(meta.len().to_le_bytes());
            hasher.update(meta.mtime().to_le_bytes());
            hasher.update(meta.mtime_nsec().to_le_bytes());
        }
    }
    Ok(format!("{:x}", hasher.finalize()))
}

/// Returns the tier's `drivers/Makefile`: the pristine one with the project's line.
fn hook_makefile(pristine: &str) -> String {
    let mut text = pristine.to_string();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text + MAKEFILE_HOOK + "\n"
}

/// Returns the tier's `drivers/Kconfig`: the pristine one with the project's `source`
/// line before its last `endmenu`.
///
/// # Errors
///
/// - The text has no `endmenu` line.
fn hook_kconfig(pristine: &str) -> Result<String, String> {
    let mut lines: Vec<&str> = pristine.lines().collect();
    let end = lines
        .iter()
        .rposition(|l| l.trim_end() == "endmenu")
        .ok_or("no `endmenu` line")?;
    lines.splice(end..end, [KCONFIG_HOOK, ""]);
    Ok(lines.join("\n") + "\n")
}

/// Writes `text` to `path` as a new file (written beside it, then renamed over it), so
/// that a hard link `path` was is broken, never written through.
///
/// # Errors
///
/// - The file cannot be written or renamed.
fn write_new_file(path: &Path, text: &str) -> Result<(), String> {
    let name = path
        .file_name()
        .ok_or_else(|| format!("{}: no file name", path.display()))?;
    let tmp = path.with_file_name(format!(".{}.vgsp-new", name.to_string_lossy()));
    fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
    fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The tier's scratch tree.
pub(crate) struct Scratch {
    /// Where it is.
    pub(crate) path: PathBuf,
    /// What it was made from: the pristine tree's path and fingerprint. A build directory
    /// records it, and starts afresh when it changes.
    pub(crate) identity: String,
}

/// Makes `dest` of hard links to the files of `pristine` (`cp -al`), or of copies if
/// the two are on different file systems.
///
/// # Errors
///
/// - The copy fails.
pub(crate) fn link_tree(pristine: &Path, dest: &Path, progress: Progress) -> Result<(), String> {
    let tmp = dest.with_file_name(format!(
        "{}.tmp",
        dest.file_name()
            .map_or("tree".into(), |n| n.to_string_lossy())
    ));
    let remove = |p: &Path| match fs::remove_dir_all(p) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(format!("{}: {e}", p.display())),
        _ => Ok(()),
    };
    remove(&tmp)?;
    let cp = |flags: &str| {
        crate::tools::command("cp")?
            .arg(flags)
            .arg(pristine)
            .arg(&tmp)
            .output()
            .map_err(|e| format!("cannot run cp: {e}"))
    };
    let out = cp("-al")?;
    if !out.status.success() {
        progress.say(&format!(
            "cp -al {} failed ({}): copying instead (slower; the tree and the cache are on \
             different file systems?)",
            pristine.display(),
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .next()
                .unwrap_or("")
        ));
        remove(&tmp)?;
        let out = cp("-a")?;
        if !out.status.success() {
            return Err(format!(
                "cp -a {} {}: {}",
                pristine.display(),
                tmp.display(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    remove(dest)?;
    fs::rename(&tmp, dest).map_err(|e| format!("{}: {e}", dest.display()))
}

/// Returns a tree of hard links to `pristine` at `dest`, made or made again when it
/// differs from the pristine one outside `own` (a directory the caller fills itself, such
/// as the nova-core being built). Its identity is the pristine tree's path and its
/// fingerprint outside `own`: a build directory of another tree, or of this one before a
/// file outside `own` changed, starts afresh; a change inside `own` is make's business.
///
/// # Errors
///
/// - The tree cannot be read or linked.
pub(crate) fn linked_tree(
    pristine: &Path,
    dest: &Path,
    own: &str,
    progress: Progress,
) -> Result<Scratch, String> {
    // A link to the tree, copied as a link, would have the caller write into the tree.
    let pristine =
        &fs::canonicalize(pristine).map_err(|e| format!("{}: {e}", pristine.display()))?;
    if fs::symlink_metadata(dest).is_ok_and(|m| !m.is_dir()) {
        fs::remove_file(dest).map_err(|e| format!("{}: {e}", dest.display()))?;
    }
    let stale = if dest.join("Makefile").is_file() {
        tree_differences(pristine, dest, "", &[own], Compare::Quick, 3)?.0
    } else {
        vec!["not made yet".into()]
    };
    if !stale.is_empty() {
        if let Some(parent) = dest.parent() {
            fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        progress.say(&format!(
            "linking {} to {} (hard links): {}",
            dest.display(),
            pristine.display(),
            stale.join("; ")
        ));
        link_tree(pristine, dest, progress)?;
    }
    Ok(Scratch {
        path: dest.to_path_buf(),
        identity: format!(
            "pristine {}\nfingerprint {} (without {own})",
            pristine.display(),
            fingerprint(pristine, &[own])?
        ),
    })
}

/// Returns the tier's scratch tree for `pristine` ([`SCRATCH_DIR`] in the cache), made
/// or refreshed: hard links to the pristine tree's files, plus the link [`LINK`] to
/// `repo` and the hooks in [`MAKEFILE`] and [`KCONFIG`].
///
/// It is made afresh when it differs from the pristine tree in anything else (a file
/// missing, added or replaced on either side). Last, its `rust/` is checked to be the
/// pristine's, file for file.
///
/// # Errors
///
/// - The pristine tree is not pristine (it holds the project's hooks or link).
/// - The tree cannot be read, linked or written.
/// - The scratch tree's `rust/` differs from the pristine's.
pub(crate) fn scratch_tree(
    pristine: &Path,
    repo: &Path,
    progress: Progress,
) -> Result<Scratch, String> {
    let canon = |p: &Path| fs::canonicalize(p).map_err(|e| format!("{}: {e}", p.display()));
    let (pristine, repo) = (canon(pristine)?, canon(repo)?);
    let path = linux::cache()?.join(SCRATCH_DIR);
    if fs::symlink_metadata(pristine.join(LINK)).is_ok() {
        return Err(format!(
            "{} has {LINK}: it is not a pristine tree (remove it, or fetch the tree anew)",
            pristine.display()
        ));
    }
    let read = |p: &Path| fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    let (makefile, kconfig) = (
        read(&pristine.join(MAKEFILE))?,
        read(&pristine.join(KCONFIG))?,
    );
    if makefile.lines().any(|l| l == MAKEFILE_HOOK) || kconfig.lines().any(|l| l == KCONFIG_HOOK) {
        return Err(format!(
            "{} holds the project's hooks in {MAKEFILE} or {KCONFIG}: it is not a pristine \
             tree (fetch it anew: remove it and run `cargo xtask linux-7.3`)",
            pristine.display()
        ));
    }
    let hooked = [
        (MAKEFILE, hook_makefile(&makefile)),
        (
            KCONFIG,
            hook_kconfig(&kconfig)
                .map_err(|e| format!("{}: {e}", pristine.join(KCONFIG).display()))?,
        ),
    ];

    let skip = [LINK, MAKEFILE, KCONFIG];
    let stale = if path.join("Makefile").is_file() {
        tree_differences(&pristine, &path, "", &skip, Compare::Quick, 3)?.0
    } else {
        vec!["not made yet".into()]
    };
    if !stale.is_empty() {
        progress.say(&format!(
            "making the scratch tree {} (hard links to {}): {}",
            path.display(),
            pristine.display(),
            stale.join("; ")
        ));
        link_tree(&pristine, &path, progress)?;
    }

    for (file, text) in &hooked {
        let at = path.join(file);
        let linked = fs::symlink_metadata(&at)
            .and_then(|t| fs::metadata(pristine.join(file)).map(|p| (p, t)))
            .is_ok_and(|(p, t)| p.dev() == t.dev() && p.ino() == t.ino());
        if linked || fs::read_to_string(&at).ok().as_deref() != Some(text.as_str()) {
            write_new_file(&at, text)?;
        }
    }
    let link = path.join(LINK);
    if fs::read_link(&link).ok().as_deref() != Some(repo.as_path()) {
        match fs::symlink_metadata(&link) {
            Ok(m) if m.file_type().is_symlink() => {
                fs::remove_file(&link).map_err(|e| format!("{}: {e}", link.display()))?
            }
            Ok(_) => {
                return Err(format!(
                    "{} exists and is not the tier's link",
                    link.display()
                ))
            }
            Err(_) => {}
        }
        symlink(&repo, &link).map_err(|e| format!("{}: {e}", link.display()))?;
    }

    let (diffs, files) = tree_differences(&pristine, &path, "rust", &[], Compare::Exact, 10)?;
    if !diffs.is_empty() || files == 0 {
        return Err(format!(
            "the scratch tree's rust/ is not the pristine one's ({}): {}",
            pristine.display(),
            if diffs.is_empty() {
                "no file in it".to_string()
            } else {
                diffs.join("; ")
            }
        ));
    }
    progress.say(&format!(
        "scratch tree {}: the pristine tree plus {LINK} -> {} and the hooks; rust/ \
         identical ({files} files)",
        path.display(),
        repo.display()
    ));
    Ok(Scratch {
        identity: format!(
            "pristine {}\nfingerprint {}",
            pristine.display(),
            fingerprint(&pristine, &[])?
        ),
        path,
    })
}

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
    scratch: Scratch,
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
        let fragment = api::fragment(&self.repo, arch, self.project.is_some())?;
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
            tree.make().arg(format!("-j{}", api::jobs())).arg(target),
            &log,
            &format!("{} {target}", arch.name()),
            self.progress,
        );
        let logs = [tree.build.join("build-rust.log"), log];
        let diagnostics = build_diagnostics(&logs)?;
        if let Err(e) = built {
            let tail = api::tail(&logs[1], 20);
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
            .arg(crate::tools::path(qemu)?)
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
                api::tail(&runner_log, 10),
                api::tail(&boot_log, 20)
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
                api::tail(&boot_log, 20)
            ));
        }
        let (json, text) = (tree.build.join("kunit.json"), tree.build.join("kunit.txt"));
        let _ = fs::remove_file(&json);
        let kunit_py = tree.src.join("tools/testing/kunit/kunit.py");
        let out = crate::tools::command("python3")?
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
    let cache = linux::cache()?;
    ensure_build_tools(&options.arches, true)?;
    let pristine = linux::linux_7_3()?;
    let _lock = lock(&cache, progress)?;
    let bindgen = ensure_bindgen(&cache, progress)?;
    let scratch = scratch_tree(&pristine, &repo, progress)?;
    progress.say("building the ivshmem server, the host GSP process, the runner and vgsp-host");
    let runner = build_runner(&repo, !options.project, progress)?;
    let project = if options.project {
        Some(project_suites(&repo)?)
    } else {
        progress.say(&format!(
            "--without-project: {} left out for this run",
            project_options(&repo)?.join(", ")
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

    #[test]
    fn reads_the_options_a_kconfig_declares() {
        let kconfig = "# SPDX\nconfig NOVA_CORE_VGSP\n\tbool \"x\"\n\tdepends on RUST\n\n\
                       config VGSP\n\thelp\n\t  The config options.\nmenuconfig M\n";
        assert_eq!(
            kconfig_options(kconfig),
            ["CONFIG_NOVA_CORE_VGSP", "CONFIG_VGSP"]
        );
    }

    #[test]
    fn crates_stamp_changes_with_the_script_the_list_or_core() {
        let base = crates_stamp(b"script", "a = \"1\"", b"core");
        assert_eq!(base, crates_stamp(b"script", "a = \"1\"", b"core"));
        assert_ne!(base, crates_stamp(b"script 2", "a = \"1\"", b"core"));
        assert_ne!(base, crates_stamp(b"script", "a = \"2\"", b"core"));
        assert_ne!(base, crates_stamp(b"script", "a = \"1\"", b"core 2"));
    }

    #[test]
    fn stamps_match_what_was_written() {
        let dir = env::temp_dir().join(format!("xtask-stamp-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let stamp = dir.join("s");
        assert!(!stamp_matches(&stamp, "a"));
        write_stamp(&stamp, "a").unwrap();
        assert!(stamp_matches(&stamp, "a"));
        assert!(!stamp_matches(&stamp, "b"));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn source_hash_follows_content_and_names_not_mtimes() {
        let dir = env::temp_dir().join(format!("xtask-hash-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("d/e")).unwrap();
        fs::write(dir.join("d/e/f.rs"), "fn f() {}").unwrap();
        fs::write(dir.join("K"), "obj-y += x").unwrap();
        let first = hash_sources(&dir, &["K", "d"]).unwrap();
        // Rewritten with the same content (a new mtime): the same hash.
        fs::write(dir.join("d/e/f.rs"), "fn f() {}").unwrap();
        assert_eq!(hash_sources(&dir, &["d", "K"]).unwrap(), first);
        fs::write(dir.join("d/e/f.rs"), "fn g() {}").unwrap();
        let edited = hash_sources(&dir, &["K", "d"]).unwrap();
        assert_ne!(edited, first);
        fs::rename(dir.join("d/e/f.rs"), dir.join("d/e/g.rs")).unwrap();
        assert_ne!(hash_sources(&dir, &["K", "d"]).unwrap(), edited);
        assert!(hash_sources(&dir, &["missing"]).is_err());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn asks_for_qemu_only_to_boot_and_for_llvm_only_on_arm64() {
        let build = build_tools(&[Arch::X86_64], false);
        assert!(!build
            .iter()
            .any(|p| p.starts_with("qemu") || p.ends_with("-22")));
        let both = build_tools(&[Arch::X86_64, Arch::Arm64], true);
        for p in [
            "qemu-system-x86_64",
            "qemu-system-aarch64",
            "ld.lld-22",
            "llvm-objdump-22",
            "clang-22",
        ] {
            assert_eq!(both.iter().filter(|q| **q == p).count(), 1, "{p}");
        }
    }

    #[test]
    fn every_build_tool_is_in_the_table() {
        for t in build_tools(&Arch::ALL, true) {
            assert!(crate::tools::entry(t).is_some(), "{t}");
        }
    }

    #[test]
    fn keeps_the_last_lines_of_a_text() {
        assert_eq!(last_lines("a\nb\nc\n", 2), "b\nc");
        assert_eq!(last_lines("a\n", 5), "a");
        assert_eq!(last_lines("", 5), "");
    }

    #[test]
    fn names_the_last_build_step_of_a_log() {
        let log = "make[1]: Entering directory\n  RUSTC L rust/core.o\n  BINDGEN rust/bindings\nnote: x\n";
        assert_eq!(last_step(log), "BINDGEN rust/bindings");
        assert_eq!(last_step("nothing\n"), "");
    }

    #[test]
    fn finds_compiler_diagnostics_but_not_objtool_or_build_steps() {
        for line in [
            "warning: unused variable: `x`",
            "error[E0425]: cannot find value `y` in this scope",
            "error: aborting due to 1 previous error",
            "drivers/vgsp/a.c:12:5: warning: unused variable 'x' [-Wunused-variable]",
            "init/main.c:3:10: fatal error: foo.h: No such file or directory",
            "ld.lld: error: undefined symbol: foo",
            "Makefile:12: warning: overriding recipe for target 'x'",
        ] {
            assert!(is_diagnostic(line), "{line}");
        }
        for line in [
            "vmlinux.o: warning: objtool: foo+0x12: call without frame pointer",
            "  RUSTC L rust/kernel.o",
            "make[2]: *** [scripts/Makefile.build:221: x.o] Error 1",
            "  = note: a warning: in a note",
            "WARNING: unmet direct dependencies detected for FOO",
        ] {
            assert!(!is_diagnostic(line), "{line}");
        }
    }

    #[test]
    fn hooks_the_makefile_and_the_kconfig_menu() {
        assert_eq!(
            hook_makefile("obj-y += a/\n"),
            "obj-y += a/\nobj-$(CONFIG_NOVA_CORE_VGSP)\t+= vgsp/\n"
        );
        assert_eq!(
            hook_makefile("obj-y += a/"),
            "obj-y += a/\nobj-$(CONFIG_NOVA_CORE_VGSP)\t+= vgsp/\n"
        );
        let kconfig = "menu \"Device Drivers\"\nsource \"drivers/a/Kconfig\"\n\nendmenu\n";
        assert_eq!(
            hook_kconfig(kconfig).unwrap(),
            "menu \"Device Drivers\"\nsource \"drivers/a/Kconfig\"\n\n\
             source \"drivers/vgsp/Kconfig\"\n\nendmenu\n"
        );
        assert!(hook_kconfig("menu \"x\"\n").is_err());
    }

    /// A pristine tree and its hard-linked copy, in a temporary directory.
    struct Trees {
        dir: PathBuf,
    }

    impl Trees {
        fn new(name: &str) -> Self {
            let dir = env::temp_dir().join(format!("xtask-{name}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(dir.join("p/rust/kernel")).unwrap();
            fs::create_dir_all(dir.join("p/drivers")).unwrap();
            fs::write(dir.join("p/rust/kernel/lib.rs"), "//! kernel\n").unwrap();
            fs::write(dir.join("p/drivers/Makefile"), "obj-y += a/\n").unwrap();
            symlink("kernel/lib.rs", dir.join("p/rust/link.rs")).unwrap();
            let out = crate::tools::command("cp")
                .unwrap()
                .arg("-al")
                .arg(dir.join("p"))
                .arg(dir.join("t"))
                .status()
                .unwrap();
            assert!(out.success());
            Self { dir }
        }

        fn diffs(&self, rel: &str, skip: &[&str], mode: Compare) -> Vec<String> {
            tree_differences(
                &self.dir.join("p"),
                &self.dir.join("t"),
                rel,
                skip,
                mode,
                10,
            )
            .unwrap()
            .0
        }
    }

    impl Drop for Trees {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }

    #[test]
    fn a_linked_tree_made_where_a_link_to_the_tree_was_is_a_tree_of_its_own() {
        let trees = Trees::new("over-link");
        let (p, dest) = (trees.dir.join("p"), trees.dir.join("cache/src"));
        fs::create_dir_all(trees.dir.join("cache")).unwrap();
        fs::write(p.join("Makefile"), "VERSION = 7\n").unwrap();
        symlink(&p, &dest).unwrap();
        let made = linked_tree(&p, &dest, "drivers", Progress::new("test")).unwrap();
        assert!(fs::symlink_metadata(&made.path).unwrap().is_dir());
        fs::remove_dir_all(made.path.join("drivers")).unwrap();
        assert!(p.join("drivers/Makefile").is_file());
    }

    #[test]
    fn a_fingerprint_leaves_out_the_directory_the_caller_fills() {
        let trees = Trees::new("own");
        let p = trees.dir.join("p");
        let first = fingerprint(&p, &["drivers"]).unwrap();
        write_new_file(&p.join("drivers/Makefile"), "obj-y += b/\n").unwrap();
        assert_eq!(fingerprint(&p, &["drivers"]).unwrap(), first);
        write_new_file(&p.join("rust/kernel/lib.rs"), "//! changed\n").unwrap();
        assert_ne!(fingerprint(&p, &["drivers"]).unwrap(), first);
    }

    #[test]
    fn a_hard_linked_tree_matches_its_pristine_tree() {
        let trees = Trees::new("linked");
        assert!(trees.diffs("", &[], Compare::Quick).is_empty());
        let (diffs, files) = tree_differences(
            &trees.dir.join("p"),
            &trees.dir.join("t"),
            "rust",
            &[],
            Compare::Exact,
            10,
        )
        .unwrap();
        assert!(diffs.is_empty());
        assert_eq!(files, 2);
    }

    #[test]
    fn a_replaced_added_or_removed_file_is_a_difference_unless_skipped() {
        let trees = Trees::new("changed");
        let t = trees.dir.join("t");
        write_new_file(&t.join("drivers/Makefile"), "obj-y += b/\n").unwrap();
        // Written as a new file: the pristine one is untouched.
        assert_eq!(
            fs::read_to_string(trees.dir.join("p/drivers/Makefile")).unwrap(),
            "obj-y += a/\n"
        );
        assert_eq!(
            trees.diffs("", &[], Compare::Exact),
            ["drivers/Makefile: differs"]
        );
        assert!(trees
            .diffs("", &["drivers/Makefile"], Compare::Exact)
            .is_empty());
        symlink("/repo", t.join("drivers/vgsp")).unwrap();
        assert_eq!(
            trees.diffs("", &["drivers/Makefile"], Compare::Quick),
            ["drivers/vgsp: not in the pristine tree"]
        );
        fs::remove_file(t.join("rust/kernel/lib.rs")).unwrap();
        assert_eq!(
            trees.diffs("rust", &[], Compare::Exact),
            ["rust/kernel/lib.rs: missing"]
        );
    }

    #[test]
    fn a_copy_with_the_same_bytes_matches_exactly() {
        let trees = Trees::new("copied");
        let t = trees.dir.join("t/rust/kernel/lib.rs");
        write_new_file(&t, "//! kernel\n").unwrap();
        assert!(trees.diffs("rust", &[], Compare::Exact).is_empty());
        write_new_file(&t, "//! kernel!\n").unwrap();
        assert_eq!(
            trees.diffs("rust", &[], Compare::Exact),
            ["rust/kernel/lib.rs: differs"]
        );
    }

    #[test]
    fn a_fingerprint_changes_when_a_file_is_replaced() {
        let trees = Trees::new("fingerprint");
        let p = trees.dir.join("p");
        let first = fingerprint(&p, &[]).unwrap();
        assert_eq!(fingerprint(&p, &[]).unwrap(), first);
        write_new_file(&p.join("rust/kernel/lib.rs"), "//! kernel\n").unwrap();
        assert_ne!(fingerprint(&p, &[]).unwrap(), first);
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
