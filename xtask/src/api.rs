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
//! 1. The tree's `rust/`, built for x86_64 in `<cache>/build-7.3-x86_64` (`$VGSP_CACHE`,
//!    default `~/.cache/vgsp`), the build directory `cargo xtask kernel-7.3` builds its
//!    x86_64 image in ([`kbuild::Tree`]): from the kernel tier's scratch tree (the
//!    pristine tree's files as hard links, plus the project's hooks; its `rust/` is the
//!    pristine one's), configured with `tinyconfig`, `tests/kernel/7.3-x86_64.config` (the
//!    project's options included) and `olddefconfig`, then `make rust/` with Debian's
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
    path::{
        Path,
        PathBuf, //
    },
    process::Command,
    time::Instant,
};

use serde_json::Value;

use crate::{
    kbuild::{
        self,
        Arch,
        Tree,
        RUSTC, //
    },
    linux,
    util::{
        self,
        process::Progress, //
    }, //
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
/// rustc's error codes for a crate it cannot load: the setup is broken, not the driver.
const CRATE_LOAD_ERRORS: &[&str] = &[
    "E0460", "E0461", "E0462", "E0463", "E0464", "E0514", "E0519", "E0523",
];
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
    let cache = util::cache()?;
    kbuild::ensure_build_tools(&[Arch::X86_64], false)?;
    let _lock = kbuild::lock(&cache, progress)?;
    let bindgen = kbuild::ensure_bindgen(&cache, progress)?;
    let scratch = kbuild::scratch_tree(&pristine, &repo, progress)?;
    let tree = Tree::new(Arch::X86_64, &scratch, &cache, bindgen, progress);
    let started = Instant::now();
    tree.ensure_configured(&kbuild::fragment(&repo, tree.arch, true)?)?;
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
        kbuild::kernel_version(&tree.src)?,
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
}
