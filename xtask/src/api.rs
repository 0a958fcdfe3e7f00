// SPDX-License-Identifier: GPL-2.0

//! How far nova-core is from compiling against the pristine Linux 7.3 `kernel` crate, and
//! the Linux 7.3 build directories it shares with the kernel tier.
//!
//! `cargo xtask api-7.3 [--tree DIR]` compiles the driver crate's metadata
//! (`drivers/gpu/nova-core/nova_core.rs`, `--emit=metadata`) against the `rust/` crates of
//! a pristine Linux 7.3 tree (default: the one `cargo xtask linux-7.3` keeps in the cache)
//! instead of the project's `kernel` shim, and reports every error:
//!
//! ```text
//! api-7.3 error: drivers/gpu/nova-core/gsp/cmdq.rs:123: cannot find function `…`
//! api 7.3: nova-core against Linux 7.3.4: 8 errors
//! ```
//!
//! Errors in the driver are findings: the command succeeds whenever the measurement ran.
//! It fails (non-zero, with the reason) when the measurement cannot run: a missing tool,
//! a failed tree build, or a crate of the tree rustc cannot load.
//!
//! The steps, each one done once and then reused:
//!
//! 1. The tree's `rust/`, built for x86_64 in `<cache>/build-7.3-x86_64` (`$VGSP_CACHE`,
//!    default `~/.cache/vgsp`), the build directory `cargo xtask kernel-7.3` builds its
//!    x86_64 image in ([`Tree`]): from the kernel tier's scratch tree (the pristine tree's
//!    files as hard links, plus the project's hooks; its `rust/` is the pristine one's),
//!    configured with `tinyconfig`, `tests/kernel/7.3-x86_64.config` (the project's
//!    options included) and `olddefconfig`, then `make rust/` with Debian's
//!    `/usr/bin/rustc`, the `bindgen` built into the cache, and the libclang of
//!    `clang-22` (7.3's bindgen needs libclang 17 or newer). The configuration is made
//!    again only when the fragment's content changed, and the build directory afresh
//!    when the pristine tree did. The logs are `<build>/configure.log` and
//!    `<build>/build-rust.log`.
//! 2. The crates.io crates the driver uses, built for that tree by
//!    `tests/kernel/extern-crates.sh` into `<build>/vgsp-crates`; rebuilt when the script
//!    or the tree's `rust/libcore.rmeta` changed (by content). Only `bitfield_struct` and
//!    `static_assertions` are built: 7.3 has its own `zerocopy` and `zerocopy_derive` in
//!    `rust/` (so the in-kernel build, whose `Kbuild` takes every crate of
//!    `consumer-flags`, does not see two crates of one name either).
//! 3. The driver compiled from the build directory with `RUSTC_BOOTSTRAP=1`. The codegen
//!    and target flags are derived from the tree's own `rust/.kernel.o.cmd` (the command
//!    that built the `kernel` crate), dropping its lint flags and what is specific to the
//!    `kernel` crate (its externs, name, type, outputs, search paths and source), as
//!    `tests/kernel/extern-crates.sh` does; so they follow the tree's configuration. To
//!    them come what Kbuild gives a module: the tree's crates as externs,
//!    `-Zcrate-attr=no_std`, `OBJTREE` and `RUST_MODFILE`.
//! 4. rustc's JSON diagnostics, one line per error, with the location in the driver (a
//!    span inside a macro of the tree is followed out to its call site). The full rendered
//!    diagnostics, warnings included, are kept in `<build>/api-7.3/diagnostics-<crate>.txt`,
//!    after the rustc command that gave them. The driver uses no crate of the project's
//!    own: what the test bench adds to it (`nova_testbench`, `mbarrier`) uses it, not the
//!    other way round.

use std::{
    fs,
    fs::OpenOptions,
    io::Write,
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
    kernel::{
        self,
        Progress,
        Scratch,
        EXTERN_CRATES,
        LIBCLANG,
        RUSTC,
        RUSTDOC, //
    },
    linux, //
};

/// The driver crate's root.
const CRATE_ROOT: &str = "drivers/gpu/nova-core/nova_core.rs";
/// The crates of the tree's `rust/` the driver may use.
const TREE_CRATES: &[&str] = &[
    "ffi",
    "pin_init",
    "build_error",
    "macros",
    "bindings",
    "uapi",
    "kernel",
    "zerocopy",
    "zerocopy_derive",
];
/// The crates taken from `tests/kernel/extern-crates.sh`'s build.
const CRATES_IO: &[&str] = &["bitfield_struct", "static_assertions"];
/// The crates.io crates `tests/kernel/extern-crates.sh` builds for a 7.3 tree (its
/// `EXTERN_CRATES_DEPS`): [`CRATES_IO`], not `zerocopy` and `zerocopy-derive`. 7.3 builds
/// its own in `rust/` and gives every Rust object `--extern zerocopy --extern
/// zerocopy_derive` (`scripts/Makefile.build`); a second pair in `consumer-flags` makes
/// rustc fail with "found crates (`zerocopy` and `zerocopy`) with colliding StableCrateId
/// values".
const CRATES_IO_DEPS: &str = "bitfield-struct = \"0.13\"\nstatic_assertions = \"1.1\"";
/// rustc's error codes for a crate it cannot load: the setup is broken, not the driver.
const CRATE_LOAD_ERRORS: &[&str] = &[
    "E0460", "E0461", "E0462", "E0463", "E0464", "E0514", "E0519", "E0523",
];
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

/// Returns the number of make jobs: the number of CPUs.
pub(crate) fn jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
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
/// ([`kernel::project_options`]) unless `project`.
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
        without_options(&text, &kernel::project_options(repo)?)
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

/// Returns the last `n` lines of `log`.
pub(crate) fn tail(log: &Path, n: usize) -> String {
    kernel::last_lines(&fs::read_to_string(log).unwrap_or_default(), n)
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
    progress: Progress,
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
        let mut cmd = crate::tools::known("make");
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
        if self.build.exists() && !kernel::stamp_matches(&tree_stamp, &self.identity) {
            // make goes by modification times: objects of another tree could pass as built.
            self.say(&format!(
                "{} was not built from this tree: starting it afresh",
                self.build.display()
            ));
            fs::remove_dir_all(&self.build)
                .map_err(|e| format!("{}: {e}", self.build.display()))?;
        }
        fs::create_dir_all(&self.build).map_err(|e| format!("{}: {e}", self.build.display()))?;
        kernel::write_stamp(&tree_stamp, &self.identity)?;

        let config_stamp = self.build.join(CONFIG_STAMP);
        let inputs = kernel::sha256_hex(format!("{}\n{fragment}", self.arch.name()).as_bytes());
        if self.build.join(".config").is_file() && kernel::stamp_matches(&config_stamp, &inputs) {
            return Ok(());
        }
        let _ = fs::remove_file(&config_stamp);
        self.configure(fragment)?;
        kernel::write_stamp(&config_stamp, &inputs)
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
        kernel::run_logged(
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
        let inputs = kernel::crates_stamp(
            &read(&repo.join(EXTERN_CRATES))?,
            CRATES_IO_DEPS,
            &read(&self.build.join("rust/libcore.rmeta"))?,
        );
        let stamp = out.join(CRATES_STAMP);
        if out.join("consumer-flags").is_file() && kernel::stamp_matches(&stamp, &inputs) {
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
        kernel::run_logged(
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
        kernel::write_stamp(&stamp, &inputs)
    }

    /// Returns the `--extern` flags of [`CRATES_IO`] and the directory of their
    /// dependencies, from the crates [`Tree::crates_io`] built.
    fn crates_io_externs(&self) -> Result<(Vec<String>, PathBuf), String> {
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

/// Splits a shell command line into its words, up to the first unquoted `;`.
fn shell_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ';' => break,
            c if c.is_whitespace() => {
                words.extend(word.take());
            }
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => return Err("unterminated ' in a command".into()),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => w.extend(chars.next()),
                        Some(c) => w.push(c),
                        None => return Err("unterminated \" in a command".into()),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).extend(chars.next()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

/// Returns whether `word` is an environment assignment (`NAME=value`).
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// The `kernel` crate's flags that take their value as the next word and are left out.
const DROPPED_WITH_VALUE: &[&str] = &[
    "--extern",
    "--crate-type",
    "--crate-name",
    "--cfg",
    "--out-dir",
    "-o",
    "-L",
    "-W",
    "-D",
    "-A",
    "-F",
    "--warn",
    "--deny",
    "--allow",
    "--forbid",
    "--force-warn",
    "--cap-lints",
];

/// Returns whether a word of the `kernel` crate's command is left out: a lint flag, or
/// one specific to building the `kernel` crate (its source, outputs, name, externs and
/// search paths, and the flags the driver's command gives itself).
fn dropped(word: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "-W",
        "-D",
        "-A",
        "-F",
        "--warn=",
        "--deny=",
        "--allow=",
        "--forbid=",
        "--force-warn=",
        "--cap-lints=",
        "--emit",
        "--extern=",
        "--crate-type=",
        "--crate-name=",
        "--cfg=",
        "--out-dir",
        "--sysroot",
        "--error-format",
        "-L",
        "-o",
        "-Zunstable-options",
        "-Zcrate-attr",
        "-Zallow-features",
    ];
    word.ends_with(".rs") || PREFIXES.iter().any(|p| word.starts_with(p))
}

/// Returns the codegen and target flags of the tree's `kernel` crate, from
/// `rust/.kernel.o.cmd`.
fn kernel_flags(build: &Path) -> Result<Vec<String>, String> {
    let path = build.join("rust/.kernel.o.cmd");
    let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let command = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("savedcmd_")?
                .split_once(":=")
                .map(|(_, c)| c)
        })
        .ok_or_else(|| format!("{} has no savedcmd_ line", path.display()))?;
    let (rustc, flags) = codegen_flags(command).map_err(|e| format!("{}: {e}", path.display()))?;
    if rustc != RUSTC {
        return Err(format!(
            "{} built the kernel crate with {rustc}, not {RUSTC}: delete {} to rebuild it",
            path.display(),
            build.display()
        ));
    }
    Ok(flags)
}

/// Splits the command that built the `kernel` crate into its rustc and the flags kept
/// for the driver: all but the lint flags and those specific to the `kernel` crate.
fn codegen_flags(command: &str) -> Result<(String, Vec<String>), String> {
    let words = shell_words(command)?;
    let mut words = words.into_iter().skip_while(|w| is_assignment(w));
    let rustc = words.next().ok_or("empty command")?;
    let mut flags = Vec::new();
    while let Some(word) = words.next() {
        if DROPPED_WITH_VALUE.contains(&word.as_str()) {
            words.next();
        } else if !dropped(&word) {
            flags.push(word);
        }
    }
    if !flags.iter().any(|f| f.starts_with("--target=")) {
        return Err("the command names no --target=".into());
    }
    Ok((rustc, flags))
}

/// One error rustc reported.
struct Finding {
    location: String,
    message: String,
}

/// Returns where a diagnostic points: its primary span, followed out of macros of other
/// crates to the first file under one of `roots`, shown relative to that root after the
/// root's label; `base` is what the compiler's file names are relative to.
pub(crate) fn location(diag: &Value, roots: &[(&Path, &str)], base: &Path) -> String {
    let spans = diag["spans"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let Some(mut span) = spans
        .iter()
        .find(|s| s["is_primary"].as_bool() == Some(true))
        .or(spans.first())
    else {
        return "-".into();
    };
    let file = |span: &Value| base.join(span["file_name"].as_str().unwrap_or("?"));
    let rooted = |path: &Path| {
        roots
            .iter()
            .find_map(|(root, label)| Some((path.strip_prefix(root).ok()?.to_path_buf(), *label)))
    };
    while rooted(&file(span)).is_none() {
        match &span["expansion"]["span"] {
            next @ Value::Object(_) => span = next,
            _ => break,
        }
    }
    let path = file(span);
    let line = span["line_start"].as_u64().unwrap_or(0);
    match rooted(&path) {
        Some((rel, label)) => format!("{label}{}:{line}", rel.display()),
        None => format!("{}:{line}", path.display()),
    }
}

/// Compiles the driver's metadata against the tree; returns rustc's errors.
fn measure(
    repo: &Path,
    tree: &Tree,
    externs: &[String],
    deps: &Path,
) -> Result<Vec<Finding>, String> {
    let out = tree.build.join("api-7.3");
    fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    measure_crate(repo, tree, externs, deps, "nova_core", CRATE_ROOT)
}

/// Compiles the metadata of crate `name`, whose root is `root` in the repository, against
/// the tree; returns rustc's errors.
fn measure_crate(
    repo: &Path,
    tree: &Tree,
    externs: &[String],
    deps: &Path,
    name: &str,
    root: &str,
) -> Result<Vec<Finding>, String> {
    let out = tree.build.join("api-7.3");
    let mut cmd = Command::new(RUSTC);
    cmd.current_dir(&tree.build)
        .env("RUSTC_BOOTSTRAP", "1")
        .env("OBJTREE", &tree.build)
        .env("RUST_MODFILE", root.trim_end_matches(".rs"))
        .args(kernel_flags(&tree.build)?)
        .args(["-Astable_features", "-Aunused_features"]);
    for name in TREE_CRATES {
        cmd.args(["--extern", name]);
    }
    cmd.args(externs)
        .arg("-L")
        .arg(format!("dependency={}", deps.display()))
        .arg("-L./rust")
        .arg(format!(
            "--emit=metadata={}",
            out.join(format!("lib{name}.rmeta")).display()
        ))
        .args(["--crate-type", "rlib", "--crate-name", name])
        .arg(repo.join(root))
        .args([
            "--sysroot=/dev/null",
            "-Zunstable-options",
            "-Zcrate-attr=no_std",
            "--error-format=json",
        ]);
    tree.progress.say(&format!(
        "compiling {root}'s metadata against {}",
        tree.src.display()
    ));
    let output = cmd
        .output()
        .map_err(|e| format!("cannot run {RUSTC}: {e}"))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let mut rendered = format!("$ {cmd:?}\n\n");
    let mut findings = Vec::new();
    let mut broken = Vec::new();
    for line in stderr.lines() {
        let Ok(diag) = serde_json::from_str::<Value>(line) else {
            broken.push(line.to_string());
            continue;
        };
        let text = diag["rendered"].as_str().unwrap_or_default();
        rendered += text;
        let level = diag["level"].as_str().unwrap_or_default();
        let message = diag["message"].as_str().unwrap_or_default();
        if !level.starts_with("error") || message.starts_with("aborting due to") {
            continue;
        }
        let code = diag["code"]["code"].as_str().unwrap_or_default();
        let spanless = diag["spans"].as_array().is_none_or(Vec::is_empty);
        if level != "error" || spanless || CRATE_LOAD_ERRORS.contains(&code) {
            broken.push(text.to_string());
            continue;
        }
        findings.push(Finding {
            location: location(&diag, &[(repo, "")], &tree.build),
            message: message.replace('\n', " "),
        });
    }
    let kept = out.join(format!("diagnostics-{name}.txt"));
    fs::write(&kept, &rendered).map_err(|e| format!("{}: {e}", kept.display()))?;
    if !broken.is_empty() || (findings.is_empty() && !output.status.success()) {
        return Err(format!(
            "rustc could not measure the driver ({}):\n{}\ncommand: {cmd:?}",
            output.status,
            broken.join("\n")
        ));
    }
    Ok(findings)
}

/// `cargo xtask api-7.3 [--tree DIR]`.
///
/// # Errors
///
/// - The measurement cannot run: a missing tool, a failed build, a crate rustc cannot
///   load.
pub(crate) fn api_7_3(args: &[String]) -> Result<bool, String> {
    let pristine = match args {
        [] => linux::linux_7_3()?,
        [flag, dir] if flag == "--tree" => {
            let dir = PathBuf::from(dir);
            if !linux::is_linux_7_3(&dir) {
                return Err(format!(
                    "{} is not a Linux 7.3 tree with drivers/gpu/nova-core",
                    dir.display()
                ));
            }
            dir
        }
        _ => return Err("usage: cargo xtask api-7.3 [--tree DIR]".into()),
    };
    let progress = Progress::new("api-7.3");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("no repository root")?
        .to_path_buf();
    let cache = linux::cache()?;
    kernel::ensure_build_tools(&[Arch::X86_64], false)?;
    let _lock = kernel::lock(&cache, progress)?;
    let bindgen = kernel::ensure_bindgen(&cache, progress)?;
    let scratch = kernel::scratch_tree(&pristine, &repo, progress)?;
    let tree = Tree::new(Arch::X86_64, &scratch, &cache, bindgen, progress);
    let started = Instant::now();
    tree.ensure_configured(&fragment(&repo, tree.arch, true)?)?;
    tree.build_rust()?;
    tree.crates_io(&repo)?;
    let (externs, deps) = tree.crates_io_externs()?;
    let findings = measure(&repo, &tree, &externs, &deps)?;
    for f in &findings {
        println!("api-7.3 error: {}: {}", f.location, f.message);
    }
    progress.say(&format!(
        "{:.0} s; full diagnostics in {}",
        started.elapsed().as_secs_f64(),
        tree.build
            .join("api-7.3/diagnostics-nova_core.txt")
            .display()
    ));
    println!(
        "api 7.3: nova-core against Linux {}: {} errors",
        kernel_version(&tree.src)?,
        findings.len()
    );
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_quoted_words_up_to_the_first_semicolon() {
        let words = shell_words(r#"a 'b c' "d \"e\"" f\ g; h"#).unwrap();
        assert_eq!(words, ["a", "b c", "d \"e\"", "f g"]);
    }

    #[test]
    fn rejects_an_unterminated_quote() {
        assert!(shell_words("a 'b").is_err());
    }

    #[test]
    fn keeps_codegen_flags_and_drops_lints_and_kernel_crate_flags() {
        let command = " OBJTREE=/o RUST_MODFILE=x /usr/bin/rustc --edition=2021 \
            -Zbinary_dep_depinfo=y -Dunsafe_op_in_unsafe_fn -Wclippy::all -A unused \
            --cap-lints=warn -Cpanic=abort --target=./scripts/target.json \
            @./include/generated/rustc_cfg --extern ffi --extern=bindings --cfg x \
            --emit=dep-info=rust/.kernel.o.d --emit=obj=rust/kernel.o --crate-type rlib \
            -L./rust --crate-name kernel rust/kernel/lib.rs --sysroot=/dev/null \
            -Zunstable-options -o out ; objtool rust/kernel.o";
        let (rustc, flags) = codegen_flags(command).unwrap();
        assert_eq!(rustc, "/usr/bin/rustc");
        assert_eq!(
            flags,
            [
                "--edition=2021",
                "-Zbinary_dep_depinfo=y",
                "-Cpanic=abort",
                "--target=./scripts/target.json",
                "@./include/generated/rustc_cfg",
            ]
        );
    }

    #[test]
    fn rejects_a_command_without_a_target() {
        assert!(codegen_flags("/usr/bin/rustc -Cpanic=abort").is_err());
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
    fn follows_a_macro_span_out_to_the_call_site_in_the_repository() {
        let diag: Value = serde_json::from_str(
            r#"{"spans":[{"is_primary":true,"file_name":"/tree/rust/kernel/lib.rs",
                "line_start":9,"expansion":{"span":{"is_primary":true,
                "file_name":"/repo/drivers/a.rs","line_start":42,"expansion":null}}}]}"#,
        )
        .unwrap();
        assert_eq!(
            location(&diag, &[(Path::new("/repo"), "")], Path::new("/build")),
            "drivers/a.rs:42"
        );
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
