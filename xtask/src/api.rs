// SPDX-License-Identifier: GPL-2.0

//! How far nova-core is from compiling against the pristine Linux 7.3 `kernel` crate.
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
//! 1. The tree's `rust/`, configured and built for x86_64 in `<cache>/build-7.3-x86_64`
//!    (`$VGSP_CACHE`, default `~/.cache/vgsp`): `tinyconfig`, merged with
//!    `tests/kernel/x86_64.config` minus its `VGSP` options, `olddefconfig`, then
//!    `make rust/` with Debian's `/usr/bin/rustc`, the `bindgen` that `tests/kernel.sh`
//!    builds into the cache, and the libclang of `clang-22` (7.3's bindgen needs libclang
//!    17 or newer). Reused while `.config` and `rust/libkernel.rmeta` exist and neither the
//!    tree nor the fragment changed. Everything the builds print goes to
//!    `<build>/api-7.3.log`.
//! 2. The crates.io crates the driver uses, built for that tree by
//!    `tests/kernel/extern-crates.sh` into `<build>/vgsp-crates`; rebuilt when the tree's
//!    `rust/libcore.rmeta` is newer than their `consumer-flags`. Only `bitfield_struct` and
//!    `static_assertions` are taken from there: 7.3 has its own `zerocopy` and
//!    `zerocopy_derive` in `rust/`.
//! 3. The driver compiled from the build directory with `RUSTC_BOOTSTRAP=1`. The codegen
//!    and target flags are derived from the tree's own `rust/.kernel.o.cmd` (the command
//!    that built the `kernel` crate), dropping its lint flags and what is specific to the
//!    `kernel` crate (its externs, name, type, outputs, search paths and source), as
//!    `tests/kernel/extern-crates.sh` does; so they follow the tree's configuration. To
//!    them come what Kbuild gives a module: the tree's crates as externs,
//!    `-Zcrate-attr=no_std`, `OBJTREE` and `RUST_MODFILE`.
//! 4. rustc's JSON diagnostics, one line per error, with the location in the driver (a
//!    span inside a macro of the tree is followed out to its call site). The full rendered
//!    diagnostics, warnings included, are kept in `<build>/api-7.3/diagnostics.txt`,
//!    after the rustc command that gave them.

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

use crate::linux;

/// Debian's Rust toolchain, the one the tree must build with.
const RUSTC: &str = "/usr/bin/rustc";
const RUSTDOC: &str = "/usr/bin/rustdoc";
/// The libclang 7.3's bindgen needs (17 or newer), from bookworm's `clang-22` packages.
const LIBCLANG: &str = "/usr/lib/llvm-22/lib";
/// The build directory, under the cache.
const BUILD_DIR: &str = "build-7.3-x86_64";
/// The kernel tier's configuration fragment; its `VGSP` lines are left out.
const FRAGMENT: &str = "tests/kernel/x86_64.config";
/// The script that builds the crates.io crates for a kernel build directory.
const EXTERN_CRATES: &str = "tests/kernel/extern-crates.sh";
/// The driver crate's root.
const CRATE_ROOT: &str = "drivers/gpu/nova-core/nova_core.rs";
/// `RUST_MODFILE`, as Kbuild would set it for the driver's object.
const MODFILE: &str = "drivers/gpu/nova-core/nova_core";
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
/// rustc's error codes for a crate it cannot load: the setup is broken, not the driver.
const CRATE_LOAD_ERRORS: &[&str] = &[
    "E0460", "E0461", "E0462", "E0463", "E0464", "E0514", "E0519", "E0523",
];
/// The lines printed from the end of a log when a build step fails.
const LOG_TAIL: usize = 30;

/// Prints a progress line.
fn progress(what: &str) {
    eprintln!("xtask: api-7.3: {what}");
}

/// Returns the release a tree's `Makefile` names, as `KERNELVERSION` spells it.
fn kernel_version(tree: &Path) -> Result<String, String> {
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

/// Returns the configuration fragment: the kernel tier's, without its `VGSP` lines.
fn fragment(repo: &Path) -> Result<String, String> {
    let path = repo.join(FRAGMENT);
    let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(text
        .lines()
        .filter(|l| !l.contains("VGSP"))
        .map(|l| format!("{l}\n"))
        .collect())
}

/// Returns the last `n` lines of `log`.
fn tail(log: &Path, n: usize) -> String {
    let text = fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
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

/// Returns whether `a` was modified after `b`; `false` if either is missing.
fn newer(a: &Path, b: &Path) -> bool {
    let mtime = |p: &Path| fs::metadata(p).and_then(|m| m.modified()).ok();
    match (mtime(a), mtime(b)) {
        (Some(a), Some(b)) => a > b,
        _ => false,
    }
}

/// The tree, its build directory and the tools that build it.
struct Tree {
    src: PathBuf,
    build: PathBuf,
    bindgen: PathBuf,
    log: PathBuf,
}

impl Tree {
    /// Returns `make` for the tree, as the kernel tier calls it.
    fn make(&self) -> Command {
        let mut cmd = Command::new("make");
        cmd.arg("-C")
            .arg(&self.src)
            .arg(format!("O={}", self.build.display()))
            .arg("ARCH=x86_64")
            .arg(format!("RUSTC={RUSTC}"))
            .arg(format!("RUSTDOC={RUSTDOC}"))
            .arg(format!("HOSTRUSTC={RUSTC}"))
            .arg(format!("BINDGEN={}", self.bindgen.display()))
            // Also for the configuration: Kconfig asks `scripts/rust_is_available.sh`,
            // which checks bindgen's libclang.
            .env("LIBCLANG_PATH", LIBCLANG);
        cmd
    }

    /// Configures the build directory: tinyconfig, the fragment, olddefconfig.
    fn configure(&self, fragment: &str) -> Result<(), String> {
        progress(&format!(
            "configuring {}: tinyconfig + {FRAGMENT} without its VGSP options",
            self.build.display()
        ));
        logged(self.make().arg("tinyconfig"), &self.log, "make tinyconfig")?;
        let path = self.build.join("api-7.3.config");
        fs::write(&path, fragment).map_err(|e| format!("{}: {e}", path.display()))?;
        logged(
            Command::new(self.src.join("scripts/kconfig/merge_config.sh"))
                .args(["-m", ".config"])
                .arg(&path)
                .current_dir(&self.build),
            &self.log,
            "merge_config.sh",
        )?;
        logged(
            self.make().arg("olddefconfig"),
            &self.log,
            "make olddefconfig",
        )?;
        let config = self.build.join(".config");
        let text = fs::read_to_string(&config).map_err(|e| format!("{}: {e}", config.display()))?;
        if !text.lines().any(|l| l == "CONFIG_RUST=y") {
            let mut why = self.make();
            why.arg("rustavailable");
            let said = why
                .output()
                .map(|o| {
                    String::from_utf8_lossy(&o.stdout).into_owned()
                        + &String::from_utf8_lossy(&o.stderr)
                })
                .unwrap_or_default();
            return Err(format!(
                "CONFIG_RUST=y did not stick in {}: the tree finds no usable Rust toolchain; \
                 `make rustavailable` (with the same make variables and LIBCLANG_PATH={LIBCLANG}) \
                 says why:\n{said}",
                config.display()
            ));
        }
        Ok(())
    }

    /// Makes sure the tree's `rust/` is configured and built.
    fn ensure_built(&self, repo: &Path) -> Result<(), String> {
        let fragment = fragment(repo)?;
        let stamp = self.build.join("api-7.3.tree");
        let recorded = fs::read_to_string(&stamp).ok();
        let tree = self.src.display().to_string();
        if recorded.as_deref().is_some_and(|r| r != tree) {
            // make goes by modification times: objects of another tree could pass as built.
            progress(&format!(
                "{} was built from another tree: starting it afresh",
                self.build.display()
            ));
            fs::remove_dir_all(&self.build)
                .map_err(|e| format!("{}: {e}", self.build.display()))?;
        }
        let same_fragment =
            fs::read_to_string(self.build.join("api-7.3.config")).is_ok_and(|f| f == fragment);
        if recorded.as_deref() == Some(tree.as_str())
            && same_fragment
            && self.build.join(".config").is_file()
            && self.build.join("rust/libkernel.rmeta").is_file()
        {
            progress(&format!(
                "reusing the built rust/ of {}",
                self.build.display()
            ));
            return Ok(());
        }
        fs::create_dir_all(&self.build).map_err(|e| format!("{}: {e}", self.build.display()))?;
        fs::write(&self.log, "").map_err(|e| format!("{}: {e}", self.log.display()))?;
        fs::write(&stamp, &tree).map_err(|e| format!("{}: {e}", stamp.display()))?;
        let t = Instant::now();
        self.configure(&fragment)?;
        let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
        progress(&format!(
            "building the tree's rust/ (-j{jobs}; cold: minutes); log: {}",
            self.log.display()
        ));
        logged(
            self.make().arg(format!("-j{jobs}")).arg("rust/"),
            &self.log,
            "make rust/",
        )?;
        progress(&format!(
            "built rust/ in {:.0} s",
            t.elapsed().as_secs_f64()
        ));
        Ok(())
    }

    /// Makes sure the crates.io crates are built for the tree; returns the `--extern`
    /// flags of [`CRATES_IO`] and the directory of their dependencies.
    fn crates_io(&self, repo: &Path) -> Result<(Vec<String>, PathBuf), String> {
        let out = self.build.join("vgsp-crates");
        let flags = out.join("consumer-flags");
        if newer(&flags, &self.build.join("rust/libcore.rmeta")) {
            progress(&format!(
                "reusing the crates.io crates of {}",
                out.display()
            ));
        } else {
            progress(&format!(
                "building the crates.io crates for the tree ({EXTERN_CRATES}, about a minute)"
            ));
            logged(
                Command::new(repo.join(EXTERN_CRATES))
                    .arg(&self.build)
                    .arg(&out)
                    .current_dir(repo),
                &self.log,
                EXTERN_CRATES,
            )?;
        }
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

/// Returns where a diagnostic points, relative to the repository when in it: its
/// primary span, followed out of macros of other crates to the call site in the driver.
fn location(diag: &Value, repo: &Path, build: &Path) -> String {
    let spans = diag["spans"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let Some(mut span) = spans
        .iter()
        .find(|s| s["is_primary"].as_bool() == Some(true))
        .or(spans.first())
    else {
        return "-".into();
    };
    let file = |span: &Value| build.join(span["file_name"].as_str().unwrap_or("?"));
    while !file(span).starts_with(repo) {
        match &span["expansion"]["span"] {
            next @ Value::Object(_) => span = next,
            _ => break,
        }
    }
    let path = file(span);
    let shown = path.strip_prefix(repo).unwrap_or(&path);
    format!(
        "{}:{}",
        shown.display(),
        span["line_start"].as_u64().unwrap_or(0)
    )
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
    let mut cmd = Command::new(RUSTC);
    cmd.current_dir(&tree.build)
        .env("RUSTC_BOOTSTRAP", "1")
        .env("OBJTREE", &tree.build)
        .env("RUST_MODFILE", MODFILE)
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
            out.join("libnova_core.rmeta").display()
        ))
        .args(["--crate-type", "rlib", "--crate-name", "nova_core"])
        .arg(repo.join(CRATE_ROOT))
        .args([
            "--sysroot=/dev/null",
            "-Zunstable-options",
            "-Zcrate-attr=no_std",
            "--error-format=json",
        ]);
    progress(&format!(
        "compiling {CRATE_ROOT}'s metadata against {}",
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
            location: location(&diag, repo, &tree.build),
            message: message.replace('\n', " "),
        });
    }
    let kept = out.join("diagnostics.txt");
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
pub(crate) fn api_7_3(args: &[String]) -> Result<bool, String> {
    let src = match args {
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
    let src = fs::canonicalize(&src).map_err(|e| format!("{}: {e}", src.display()))?;
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("no repository root")?
        .to_path_buf();
    let cache = linux::cache()?;
    let bindgen = cache.join("bindgen/bin/bindgen");
    if !bindgen.is_file() {
        return Err(format!(
            "no {}: tests/kernel.sh builds it (cargo install bindgen-cli --locked --root {})",
            bindgen.display(),
            cache.join("bindgen").display()
        ));
    }
    if !Path::new(LIBCLANG).is_dir() {
        return Err(format!(
            "no {LIBCLANG}: Linux 7.3's bindgen needs libclang 17 or newer; \
             `apt-get install clang-22 libclang1-22` provides it"
        ));
    }
    for tool in [RUSTC, RUSTDOC] {
        if !Path::new(tool).is_file() {
            return Err(format!("no {tool}: the tree builds with Debian's rustc"));
        }
    }
    let build = cache.join(BUILD_DIR);
    let tree = Tree {
        log: build.join("api-7.3.log"),
        src,
        build,
        bindgen,
    };
    let started = Instant::now();
    tree.ensure_built(&repo)?;
    let (externs, deps) = tree.crates_io(&repo)?;
    let findings = measure(&repo, &tree, &externs, &deps)?;
    for f in &findings {
        println!("api-7.3 error: {}: {}", f.location, f.message);
    }
    progress(&format!(
        "{:.0} s; full diagnostics in {}",
        started.elapsed().as_secs_f64(),
        tree.build.join("api-7.3/diagnostics.txt").display()
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
            location(&diag, Path::new("/repo"), Path::new("/build")),
            "drivers/a.rs:42"
        );
    }
}
