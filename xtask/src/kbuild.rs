// SPDX-License-Identifier: GPL-2.0

//! The Linux 7.3 builds `cargo xtask api-7.3`, `kernel-7.3` and `upstream` share: the
//! architectures ([`Arch`]), the scratch trees of hard links to a pristine tree
//! ([`scratch_tree`], [`linked_tree`]), the build directories ([`Tree`]), their tools and
//! the lock that keeps two commands from using them at once ([`lock`]).

use std::{
    collections::BTreeSet,
    env,
    fs::{
        self,
        File,
        OpenOptions, //
    },
    io::{
        self,
        Write, //
    },
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
    time::Instant,
};

use sha2::{
    Digest,
    Sha256, //
};

use crate::util::{
    self,
    process::{
        jobs,
        run_logged,
        tail,
        Progress, //
    },
    stamp::{
        sha256_hex,
        stamp_matches,
        write_stamp, //
    },
    tools, //
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
pub(crate) const LINK: &str = "drivers/vgsp";
/// The scratch tree's files that carry the project's hooks.
const MAKEFILE: &str = "drivers/Makefile";
const KCONFIG: &str = "drivers/Kconfig";
/// The hook lines.
const MAKEFILE_HOOK: &str = "obj-$(CONFIG_NOVA_CORE_VGSP)\t+= vgsp/";
const KCONFIG_HOOK: &str = "source \"drivers/vgsp/Kconfig\"";
/// The project's Kconfig file, which declares its options.
const PROJECT_KCONFIG: &str = "Kconfig";
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
/// How many diagnostic lines (with their context) a failure prints.
const REPORT_LINES: usize = 60;
/// The context printed after each diagnostic line.
const CONTEXT_LINES: usize = 8;

/// The crates taken from `tests/kernel/extern-crates.sh`'s build.
const CRATES_IO: &[&str] = &["bitfield_struct", "static_assertions"];
/// The crates.io crates `tests/kernel/extern-crates.sh` builds for a 7.3 tree (its
/// `EXTERN_CRATES_DEPS`): [`CRATES_IO`], not `zerocopy` and `zerocopy-derive`. 7.3 builds
/// its own in `rust/` and gives every Rust object `--extern zerocopy --extern
/// zerocopy_derive` (`scripts/Makefile.build`); a second pair in `consumer-flags` makes
/// rustc fail with "found crates (`zerocopy` and `zerocopy`) with colliding StableCrateId
/// values".
const CRATES_IO_DEPS: &str = "bitfield-struct = \"0.13\"\nstatic_assertions = \"1.1\"";
/// The lines printed from the end of a log when a build step fails.
const LOG_TAIL: usize = 30;
/// The record, in a build directory, of the tree it was built from
/// ([`Scratch::identity`]).
const TREE_STAMP: &str = "vgsp-tree";
/// The record of the configuration's inputs (the architecture and the fragment).
const CONFIG_STAMP: &str = "vgsp-config.sha256";
/// The fragment as merged, kept beside `.config`.
const MERGED_FRAGMENT: &str = "vgsp-7.3.config";
/// The record of the crates.io crates' inputs, in their directory.
const CRATES_STAMP: &str = "inputs.sha256";

/// An architecture of the Linux 7.3 builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arch {
    X86_64,
    Arm64,
}

impl Arch {
    /// Every architecture, in the order the tier builds them.
    pub(crate) const ALL: [Arch; 2] = [Arch::X86_64, Arch::Arm64];

    /// Returns the architecture of a name as the kernel spells it (`x86_64`, `arm64`).
    pub(crate) fn parse(name: &str) -> Option<Arch> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }

    /// Returns the kernel's name of the architecture.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Arm64 => "arm64",
        }
    }

    /// Returns the make variables that choose the architecture and its C toolchain:
    /// gcc for x86_64; for arm64, LLVM 22 (7.3 needs LLVM 17 or newer, and bookworm's
    /// default clang is 14).
    fn make_vars(self) -> &'static [&'static str] {
        match self {
            Arch::X86_64 => &["ARCH=x86_64"],
            Arch::Arm64 => &["ARCH=arm64", "LLVM=-22"],
        }
    }

    /// Returns the image's make target and where the build directory holds it.
    pub(crate) fn image(self) -> (&'static str, &'static str) {
        match self {
            Arch::X86_64 => ("bzImage", "arch/x86/boot/bzImage"),
            Arch::Arm64 => ("Image", "arch/arm64/boot/Image"),
        }
    }

    /// Returns the configuration fragment, relative to the repository.
    fn fragment(self) -> String {
        format!("tests/kernel/7.3-{}.config", self.name())
    }
}

/// Returns the release a tree's `Makefile` names, as `KERNELVERSION` spells it.
pub(crate) fn kernel_version(tree: &Path) -> Result<String, String> {
    let path = tree.join("Makefile");
    let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    release(&text).ok_or_else(|| format!("{} names no VERSION", path.display()))
}

/// Returns the release of a `Makefile`'s text: `VERSION.PATCHLEVEL.SUBLEVEL` (each part
/// only if the one before is set), then `EXTRAVERSION`.
fn release(makefile: &str) -> Option<String> {
    let field = |name: &str| {
        makefile
            .lines()
            .find_map(|l| {
                let (key, value) = l.split_once('=')?;
                (key.trim() == name).then(|| value.trim().to_string())
            })
            .unwrap_or_default()
    };
    let mut release = field("VERSION");
    if release.is_empty() {
        return None;
    }
    let (patchlevel, sublevel) = (field("PATCHLEVEL"), field("SUBLEVEL"));
    if !patchlevel.is_empty() {
        release += &format!(".{patchlevel}");
        if !sublevel.is_empty() {
            release += &format!(".{sublevel}");
        }
    }
    Some(release + &field("EXTRAVERSION"))
}

/// Returns the option a fragment line sets or unsets (`CONFIG_X=y`, `# CONFIG_X is not
/// set`), if it is such a line.
fn fragment_option(line: &str) -> Option<&str> {
    let line = line.trim();
    if let Some(rest) = line.strip_prefix("# ") {
        return rest
            .strip_suffix(" is not set")
            .filter(|o| o.starts_with("CONFIG_"));
    }
    line.split_once('=')
        .map(|(option, _)| option)
        .filter(|o| o.starts_with("CONFIG_"))
}

/// Returns `text` without the lines that set or unset one of `options`.
fn without_options(text: &str, options: &[String]) -> String {
    text.lines()
        .filter(|l| fragment_option(l).is_none_or(|o| !options.iter().any(|p| p == o)))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Returns the configuration fragment of `arch`, without the project's options
/// ([`project_options`]) unless `project`.
///
/// # Errors
///
/// - The fragment or the project's `Kconfig` cannot be read.
pub(crate) fn fragment(repo: &Path, arch: Arch, project: bool) -> Result<String, String> {
    let path = repo.join(arch.fragment());
    let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(if project {
        text
    } else {
        without_options(&text, &project_options(repo)?)
    })
}

/// Returns the options of `fragment` that did not end up as it asks in `config`: an
/// `=y` that is not `=y`, or a `# … is not set` that is set.
fn unstuck(fragment: &str, config: &str) -> Vec<String> {
    let mut wrong = Vec::new();
    for line in fragment.lines() {
        let Some(option) = fragment_option(line) else {
            continue;
        };
        let wanted_y = line.trim() == format!("{option}=y");
        let set = config
            .lines()
            .find_map(|l| l.strip_prefix(option)?.strip_prefix('='));
        match (wanted_y, set) {
            (true, Some("y")) => {}
            (true, _) => wrong.push(format!("{option}=y")),
            (false, Some(value)) if line.trim().starts_with('#') => {
                wrong.push(format!("{option} (wanted not set, is {value})"))
            }
            _ => {}
        }
    }
    wrong
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

/// Returns the tools ([`tools::TOOLS`]) building (and with `boot`, booting) for
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
/// there ([`tools::ensure`]): as root, installs the missing ones.
///
/// # Errors
///
/// - A tool is missing and this is not root (the error names the packages).
/// - An install fails.
pub(crate) fn ensure_build_tools(arches: &[Arch], boot: bool) -> Result<(), String> {
    tools::ensure(&build_tools(arches, boot))
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
        tools::command("cp")?
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
    let path = util::cache()?.join(SCRATCH_DIR);
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

/// Runs `cmd` with its output appended to `log`; on failure prints the log's last lines
/// and fails naming `what`.
fn logged(cmd: &mut Command, log: &Path, what: &str) -> Result<(), String> {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| format!("{}: {e}", log.display()))?;
    writeln!(file, "\n$ {cmd:?}").map_err(|e| format!("{}: {e}", log.display()))?;
    let err = file
        .try_clone()
        .map_err(|e| format!("{}: {e}", log.display()))?;
    let status = cmd
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        .status()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if status.success() {
        return Ok(());
    }
    eprintln!("{}", tail(log, LOG_TAIL));
    Err(format!("{what} failed ({status}); log: {}", log.display()))
}

/// A Linux 7.3 build directory of one architecture, `<cache>/build-7.3-<arch>`, shared by
/// `cargo xtask api-7.3` (which needs its `rust/`) and `cargo xtask kernel-7.3` (which
/// builds the image): built from the kernel tier's scratch tree, with one configuration,
/// tinyconfig + `tests/kernel/7.3-<arch>.config`.
pub(crate) struct Tree {
    /// The architecture.
    pub(crate) arch: Arch,
    /// The source tree (`make -C`): the tier's scratch tree.
    pub(crate) src: PathBuf,
    /// The build directory (`O=`).
    pub(crate) build: PathBuf,
    /// The `bindgen` the tree runs.
    bindgen: PathBuf,
    /// What the scratch tree was made from.
    identity: String,
    /// The command's progress lines.
    pub(crate) progress: Progress,
}

impl Tree {
    /// Returns the build directory of `arch` in `cache`, for the scratch tree.
    pub(crate) fn new(
        arch: Arch,
        scratch: &Scratch,
        cache: &Path,
        bindgen: PathBuf,
        progress: Progress,
    ) -> Self {
        Self {
            arch,
            src: scratch.path.clone(),
            build: cache.join(format!("build-7.3-{}", arch.name())),
            bindgen,
            identity: scratch.identity.clone(),
            progress,
        }
    }

    /// Builds in `build` instead of the tier's build directory.
    pub(crate) fn in_build(mut self, build: PathBuf) -> Self {
        self.build = build;
        self
    }

    /// Returns `make` for the tree, as the kernel tier calls it.
    pub(crate) fn make(&self) -> Command {
        let mut cmd = tools::known("make");
        cmd.arg("-C")
            .arg(&self.src)
            .arg(format!("O={}", self.build.display()))
            .args(self.arch.make_vars())
            // rustup's rustc comes first in PATH; the tree must use Debian's, for the
            // target crates and the host proc macros alike.
            .arg(format!("RUSTC={RUSTC}"))
            .arg(format!("RUSTDOC={RUSTDOC}"))
            .arg(format!("HOSTRUSTC={RUSTC}"))
            .arg(format!("BINDGEN={}", self.bindgen.display()))
            // Also for the configuration: Kconfig asks `scripts/rust_is_available.sh`,
            // which checks bindgen's libclang.
            .env("LIBCLANG_PATH", LIBCLANG);
        cmd
    }

    /// Prints a progress line about this build.
    fn say(&self, what: &str) {
        self.progress.say(&format!("{}: {what}", self.arch.name()));
    }

    /// Makes sure the build directory is the scratch tree's (starting it afresh if it was
    /// another tree's) and configured with `fragment` (configuring it again when the
    /// architecture or the fragment's content changed).
    ///
    /// # Errors
    ///
    /// - The directory cannot be made or written, or a configuration step fails.
    /// - An option of the fragment did not stick.
    pub(crate) fn ensure_configured(&self, fragment: &str) -> Result<(), String> {
        let tree_stamp = self.build.join(TREE_STAMP);
        if self.build.exists() && !stamp_matches(&tree_stamp, &self.identity) {
            // make goes by modification times: objects of another tree could pass as built.
            self.say(&format!(
                "{} was not built from this tree: starting it afresh",
                self.build.display()
            ));
            fs::remove_dir_all(&self.build)
                .map_err(|e| format!("{}: {e}", self.build.display()))?;
        }
        fs::create_dir_all(&self.build).map_err(|e| format!("{}: {e}", self.build.display()))?;
        write_stamp(&tree_stamp, &self.identity)?;

        let config_stamp = self.build.join(CONFIG_STAMP);
        let inputs = sha256_hex(format!("{}\n{fragment}", self.arch.name()).as_bytes());
        if self.build.join(".config").is_file() && stamp_matches(&config_stamp, &inputs) {
            return Ok(());
        }
        let _ = fs::remove_file(&config_stamp);
        self.configure(fragment)?;
        write_stamp(&config_stamp, &inputs)
    }

    /// Configures the build directory: tinyconfig, the fragment, olddefconfig; then
    /// checks that every option of the fragment stuck.
    fn configure(&self, fragment: &str) -> Result<(), String> {
        let log = self.build.join("configure.log");
        self.say(&format!(
            "configuring: tinyconfig + {}; log: {}",
            self.arch.fragment(),
            log.display()
        ));
        fs::write(&log, "").map_err(|e| format!("{}: {e}", log.display()))?;
        logged(self.make().arg("tinyconfig"), &log, "make tinyconfig")?;
        let path = self.build.join(MERGED_FRAGMENT);
        fs::write(&path, fragment).map_err(|e| format!("{}: {e}", path.display()))?;
        logged(
            Command::new(self.src.join("scripts/kconfig/merge_config.sh"))
                .args(["-m", ".config"])
                .arg(&path)
                .current_dir(&self.build),
            &log,
            "merge_config.sh",
        )?;
        logged(self.make().arg("olddefconfig"), &log, "make olddefconfig")?;
        let config = self.build.join(".config");
        let text = fs::read_to_string(&config).map_err(|e| format!("{}: {e}", config.display()))?;
        let wrong = unstuck(fragment, &text);
        if wrong.is_empty() {
            return Ok(());
        }
        let said = self
            .make()
            .arg("rustavailable")
            .output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout).into_owned()
                    + &String::from_utf8_lossy(&o.stderr)
            })
            .unwrap_or_default();
        Err(format!(
            "options of {} did not stick in {}: {}. A missing dependency (see the options' \
             `depends on`), or no usable Rust toolchain for the tree: `make rustavailable` \
             (with the same make variables and LIBCLANG_PATH={LIBCLANG}) says:\n{said}",
            self.arch.fragment(),
            config.display(),
            wrong.join(", ")
        ))
    }

    /// Builds the tree's `rust/`; its log is `<build>/build-rust.log`.
    ///
    /// # Errors
    ///
    /// - make fails.
    pub(crate) fn build_rust(&self) -> Result<(), String> {
        let log = self.build.join("build-rust.log");
        self.say(&format!(
            "building the tree's rust/ (-j{}; cold: minutes); log: {}",
            jobs(),
            log.display()
        ));
        let t = Instant::now();
        run_logged(
            self.make().arg(format!("-j{}", jobs())).arg("rust/"),
            &log,
            &format!("{} rust/", self.arch.name()),
            self.progress,
        )
        .map_err(|e| format!("{e}\n{}", tail(&log, LOG_TAIL)))?;
        self.say(&format!("rust/ done in {} s", t.elapsed().as_secs()));
        Ok(())
    }

    /// Makes sure the crates.io crates ([`CRATES_IO_DEPS`]) are built for the tree, in
    /// `<build>/vgsp-crates`: built again when the script, the list or the tree's
    /// `rust/libcore.rmeta` changed, by content.
    ///
    /// # Errors
    ///
    /// - An input cannot be read, or the script fails.
    pub(crate) fn crates_io(&self, repo: &Path) -> Result<(), String> {
        let out = self.build.join("vgsp-crates");
        let read = |p: &Path| fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
        let inputs = crates_stamp(
            &read(&repo.join(EXTERN_CRATES))?,
            CRATES_IO_DEPS,
            &read(&self.build.join("rust/libcore.rmeta"))?,
        );
        let stamp = out.join(CRATES_STAMP);
        if out.join("consumer-flags").is_file() && stamp_matches(&stamp, &inputs) {
            return Ok(());
        }
        let log = self.build.join("extern-crates.log");
        self.say(&format!(
            "building the crates.io crates for the tree ({EXTERN_CRATES}, about a minute); \
             log: {}",
            log.display()
        ));
        // Afresh: no crate of an earlier list stays beside the new ones.
        match fs::remove_dir_all(&out) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(format!("{}: {e}", out.display()))
            }
            _ => {}
        }
        run_logged(
            Command::new(repo.join(EXTERN_CRATES))
                .arg(&self.build)
                .arg(&out)
                .env("EXTERN_CRATES_DEPS", CRATES_IO_DEPS)
                .current_dir(repo),
            &log,
            EXTERN_CRATES,
            self.progress,
        )
        .map_err(|e| format!("{e}\n{}", tail(&log, LOG_TAIL)))?;
        write_stamp(&stamp, &inputs)
    }

    /// Returns the `--extern` flags of [`CRATES_IO`] and the directory of their
    /// dependencies, from the crates [`Tree::crates_io`] built.
    pub(crate) fn crates_io_externs(&self) -> Result<(Vec<String>, PathBuf), String> {
        let out = self.build.join("vgsp-crates");
        let flags = out.join("consumer-flags");
        let text = fs::read_to_string(&flags).map_err(|e| format!("{}: {e}", flags.display()))?;
        let words: Vec<&str> = text.split_whitespace().collect();
        let mut externs = Vec::new();
        for name in CRATES_IO {
            let path = words
                .windows(2)
                .find_map(|w| {
                    (w[0] == "--extern")
                        .then(|| w[1].strip_prefix(&format!("{name}=")))
                        .flatten()
                })
                .ok_or_else(|| format!("{} has no --extern {name}=…", flags.display()))?;
            externs.push("--extern".to_string());
            externs.push(format!("{name}={path}"));
        }
        Ok((externs, out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            assert!(tools::entry(t).is_some(), "{t}");
        }
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
            let out = tools::command("cp")
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

    #[test]
    fn spells_the_release_as_kernelversion_does() {
        let makefile = "# SPDX\nVERSION = 7\nPATCHLEVEL = 3\nSUBLEVEL = 4\nEXTRAVERSION = -rc1\n";
        assert_eq!(release(makefile).as_deref(), Some("7.3.4-rc1"));
        let makefile = "VERSION = 7\nPATCHLEVEL = 3\nSUBLEVEL =\nEXTRAVERSION =\n";
        assert_eq!(release(makefile).as_deref(), Some("7.3"));
        assert_eq!(release("NAME = x\n"), None);
    }

    #[test]
    fn drops_only_the_given_options_from_a_fragment() {
        let fragment = "# The project.\nCONFIG_RUST=y\nCONFIG_NOVA_CORE_VGSP=y\nCONFIG_VGSP=y\n\
                        # CONFIG_VGSP_KUNIT_TEST is not set\nCONFIG_VGSPX=y\n";
        let options = [
            "CONFIG_NOVA_CORE_VGSP",
            "CONFIG_VGSP",
            "CONFIG_VGSP_KUNIT_TEST",
        ]
        .map(String::from);
        assert_eq!(
            without_options(fragment, &options),
            "# The project.\nCONFIG_RUST=y\nCONFIG_VGSPX=y\n"
        );
    }

    #[test]
    fn names_the_options_that_did_not_stick() {
        let fragment =
            "# A comment.\nCONFIG_RUST=y\nCONFIG_KUNIT=y\n# CONFIG_MODVERSIONS is not set\n\
                        # CONFIG_DEBUG_INFO_BTF is not set\n";
        let config = "CONFIG_RUST_IS_AVAILABLE=y\n# CONFIG_RUST is not set\nCONFIG_KUNIT=y\n\
                      CONFIG_MODVERSIONS=y\n";
        assert_eq!(
            unstuck(fragment, config),
            ["CONFIG_RUST=y", "CONFIG_MODVERSIONS (wanted not set, is y)"]
        );
        let config = "CONFIG_RUST=y\nCONFIG_KUNIT=y\n";
        assert!(unstuck(fragment, config).is_empty());
    }

    #[test]
    fn names_architectures_as_the_kernel_does() {
        assert_eq!(Arch::parse("arm64"), Some(Arch::Arm64));
        assert_eq!(Arch::parse("aarch64"), None);
        assert_eq!(Arch::X86_64.fragment(), "tests/kernel/7.3-x86_64.config");
        assert_eq!(Arch::Arm64.image().1, "arch/arm64/boot/Image");
    }
}
