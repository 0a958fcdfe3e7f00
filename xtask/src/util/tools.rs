// SPDX-License-Identifier: GPL-2.0

//! Every program and file the project's commands need, and where each comes from.
//!
//! [`TOOLS`] is the one table: a program (looked up in `PATH`) or a file (an absolute
//! path), and the Debian package, rustup component or crate that provides it, or a program
//! xtask fetches from Debian's sid into the project's private root (QEMU 11, `cargo xtask
//! qemu`). Every command spawns an external program through [`command`] or [`path`],
//! which make sure it is there first: a missing one is installed when running as root
//! (`apt-get install`, `rustup component add`, `cargo install --locked`), else the error
//! names the package and the command that installs it. A private-root program is fetched
//! into the cache as any user, the system untouched, and started through the root's
//! loader, by the `qemu` module above this one (`cargo xtask tools` reaches it there). So
//! no step depends on an earlier step having installed what it runs. `tests/run.sh` asks
//! for its own programs the same way (`cargo xtask tools ensure TOOL...`), and a test
//! checks that every program the xtask sources and the test command run is in the table.

use std::{
    collections::BTreeSet,
    env,
    path::{
        Path,
        PathBuf, //
    },
    process::{
        Command,
        Stdio, //
    },
    sync::Mutex,
};

use super::process::last_lines;

/// Where a tool comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Source {
    /// A Debian package of the system's own suite.
    Debian(&'static str),
    /// A component of rustup's default toolchain.
    Rustup(&'static str),
    /// A crate installed with `cargo install --locked` into cargo's own `bin`.
    Crate(&'static str),
    /// A binary package of Debian's sid, fetched with what it needs into the project's
    /// private root in the cache by xtask (`cargo xtask qemu`), and started through that
    /// root's loader; not through [`command`], which refuses it.
    Sid(&'static str),
}

/// One program or file, and what provides it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tool {
    /// A program's name, looked up in `PATH`, or a file's absolute path; for a
    /// [`Source::Sid`] program, the project's own name for it (it is not in `PATH`).
    pub(crate) name: &'static str,
    /// What provides it.
    pub(crate) source: Source,
    /// The arguments that show a program starts (`--probe`); empty for a file.
    pub(crate) probe: &'static [&'static str],
}

const fn deb(name: &'static str, package: &'static str) -> Tool {
    Tool {
        name,
        source: Source::Debian(package),
        probe: &["--version"],
    }
}

const fn sid(name: &'static str, package: &'static str) -> Tool {
    Tool {
        name,
        source: Source::Sid(package),
        probe: &["-version"],
    }
}

const fn file(name: &'static str, package: &'static str) -> Tool {
    Tool {
        name,
        source: Source::Debian(package),
        probe: &[],
    }
}

/// The table. Programs first, then files; the comments say who runs them.
pub(crate) const TOOLS: &[Tool] = &[
    // Debian's own tools: the private apt configurations, the packages' contents.
    deb("apt-get", "apt"),
    deb("apt-cache", "apt"),
    deb("dpkg-query", "dpkg"),
    deb("dpkg-deb", "dpkg"),
    deb("cp", "coreutils"),
    deb("chroot", "coreutils"),
    deb("tar", "tar"),
    deb("xz", "xz-utils"),
    deb("git", "git"),
    // The kernel's build: make, the C compiler, its generators, the tree's scripts.
    deb("make", "make"),
    deb("gcc", "gcc"),
    deb("bc", "bc"),
    deb("flex", "flex"),
    deb("bison", "bison"),
    deb("cpio", "cpio"),
    deb("perl", "perl"),
    deb("python3", "python3"),
    // The second rustc, with the std source: -Zbuild-std, aarch64, the kernel's Rust.
    deb("/usr/bin/rustc", "rustc-web"),
    deb("/usr/bin/rustdoc", "rustc-web"),
    deb("/usr/bin/cargo", "cargo-web"),
    // Its linker for aarch64 (Debian's `rust-lld` links to it) and LLVM 22: the arm64
    // kernel (`LLVM=-22`), the disassembler of the compiled-code checks, bindgen's
    // libclang (7.3 needs 17 or newer; bookworm's default is 14).
    deb("ld.lld-22", "lld-22"),
    deb("llvm-objdump-22", "llvm-22"),
    deb("clang-22", "clang-22"),
    // aarch64 user space: the cross linker and libc, and qemu-user to run it.
    deb("aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu"),
    deb("qemu-aarch64", "qemu-user"),
    // The machines the kernels boot on.
    deb("qemu-system-x86_64", "qemu-system-x86"),
    deb("qemu-system-aarch64", "qemu-system-arm"),
    // QEMU 11 from sid in the private root (`cargo xtask qemu`): `vfio-user-pci` for the
    // emulated GPU's guests, arm64 above all (REFERENCE §11).
    sid("qemu-11-system-aarch64", "qemu-system-arm"),
    sid("qemu-11-system-x86_64", "qemu-system-x86"),
    // The benchmark's instruction counts (`vgsp-bench`, which asks for it through
    // `cargo xtask tools ensure valgrind`).
    deb("valgrind", "valgrind"),
    // The fresh-machine check (`cargo xtask fresh-machine`).
    deb("debootstrap", "debootstrap"),
    deb("unshare", "util-linux"),
    deb("mount", "mount"),
    // rustup's toolchain, its components and cargo's subcommands.
    Tool {
        name: "cargo",
        source: Source::Rustup("cargo"),
        probe: &["--version"],
    },
    Tool {
        name: "rustfmt",
        source: Source::Rustup("rustfmt"),
        probe: &["--version"],
    },
    Tool {
        name: "cargo-clippy",
        source: Source::Rustup("clippy"),
        probe: &["--version"],
    },
    Tool {
        name: "cargo-fuzz",
        source: Source::Crate("cargo-fuzz"),
        probe: &["fuzz", "--version"],
    },
    // The fuzz targets' libFuzzer (libfuzzer-sys builds its C++ sources with `c++`).
    deb("c++", "g++"),
    // Files: headers and libraries the builds read.
    file("/usr/lib/rustlib/src/rust/library/core", "rust-web-src"),
    file(
        "/usr/aarch64-linux-gnu/include/stdio.h",
        "libc6-dev-arm64-cross",
    ),
    file("/usr/lib/llvm-22/lib/libclang-22.so.1", "libclang1-22"),
    file("/usr/include/libelf.h", "libelf-dev"),
    file("/usr/include/openssl/ssl.h", "libssl-dev"),
];

/// Returns the table's entry for `name`.
pub(crate) fn entry(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == name)
}

/// Returns where `name` is: the file itself for a path, else the first match in `PATH`;
/// `None` for a private-root program, which is not in `PATH`. A rustup component's
/// program is there only when it runs: rustup installs a proxy for every component,
/// installed or not.
pub(crate) fn locate(name: &str) -> Option<PathBuf> {
    if entry(name).is_some_and(|t| matches!(t.source, Source::Sid(_))) {
        return None;
    }
    if name.starts_with('/') {
        return Path::new(name).exists().then(|| PathBuf::from(name));
    }
    let path = env::var_os("PATH")?;
    let found = env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())?;
    match entry(name) {
        Some(
            t @ Tool {
                source: Source::Rustup(_),
                ..
            },
        ) => Command::new(&found)
            .args(t.probe)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
            .then_some(found),
        _ => Some(found),
    }
}

/// Whether this process runs as root.
pub(crate) fn is_root() -> bool {
    // SAFETY: `getuid` has no preconditions and cannot fail.
    unsafe { libc::getuid() == 0 }
}

/// Whether `apt-get update` ran in this process already.
static APT_UPDATED: Mutex<bool> = Mutex::new(false);

/// Runs one installing command, its output shown only when it fails.
fn install(cmd: &mut Command) -> Result<(), String> {
    let out = cmd
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    match out.status.success() {
        true => Ok(()),
        false => Err(format!(
            "{cmd:?} failed ({}):\n{}",
            out.status,
            last_lines(&String::from_utf8_lossy(&out.stderr), 20)
        )),
    }
}

/// Installs Debian packages (as root): `apt-get update` once, then all at once, or one
/// by one when apt cannot resolve them together.
fn apt_install(packages: &[&str]) -> Result<(), String> {
    let mut updated = APT_UPDATED.lock().unwrap_or_else(|e| e.into_inner());
    if !*updated {
        install(Command::new("apt-get").args(["update", "-qq"]))?;
        *updated = true;
    }
    if install(
        Command::new("apt-get")
            .args(["install", "-y", "-qq"])
            .args(packages),
    )
    .is_ok()
    {
        return Ok(());
    }
    for p in packages {
        install(Command::new("apt-get").args(["install", "-y", "-qq", p]))?;
    }
    Ok(())
}

/// Returns the command that installs `sources`, for a message.
fn install_hint(sources: &[Source]) -> String {
    let mut debs = Vec::new();
    let mut rest = Vec::new();
    for s in sources {
        match s {
            Source::Debian(p) => debs.push(*p),
            Source::Rustup(c) => rest.push(format!("rustup component add {c}")),
            Source::Crate(c) => rest.push(format!("cargo install --locked {c}")),
            // Refused by `ensure` before anything is missing.
            Source::Sid(_) => {}
        }
    }
    if !debs.is_empty() {
        rest.insert(0, format!("sudo apt-get install -y {}", debs.join(" ")));
    }
    rest.join("; ")
}

/// Makes sure every tool of `names` is there: as root, installs what provides the
/// missing ones; else fails naming them.
///
/// # Errors
///
/// - A name is not in [`TOOLS`], or is a private-root program (a programming error,
///   named: the `tools` command and the `qemu` module fetch those).
/// - A tool is missing and this is not root: the message names the packages and the
///   command that installs them.
/// - An install fails, or leaves the tool missing.
pub(crate) fn ensure(names: &[&str]) -> Result<(), String> {
    let mut missing = Vec::new();
    for name in names {
        let tool = entry(name).ok_or_else(|| format!("{name} is not in xtask's table of tools"))?;
        if let Source::Sid(package) = tool.source {
            return Err(format!(
                "{name} is sid's {package} in xtask's private root: `cargo xtask tools ensure \
                 {name}` fetches it, and the qemu module starts it"
            ));
        }
        if locate(name).is_none() {
            missing.push(tool);
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let sources: Vec<Source> = missing
        .iter()
        .map(|t| t.source)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let names: Vec<&str> = missing.iter().map(|t| t.name).collect();
    if !is_root() {
        return Err(format!(
            "missing {}; install with: {}",
            names.join(", "),
            install_hint(&sources)
        ));
    }
    eprintln!(
        "xtask: installing {} (for {})",
        sources
            .iter()
            .map(|s| match s {
                Source::Debian(p) | Source::Rustup(p) | Source::Crate(p) | Source::Sid(p) => *p,
            })
            .collect::<Vec<_>>()
            .join(" "),
        names.join(", ")
    );
    let debs: Vec<&str> = sources
        .iter()
        .filter_map(|s| match s {
            Source::Debian(p) => Some(*p),
            _ => None,
        })
        .collect();
    if !debs.is_empty() {
        apt_install(&debs)?;
    }
    for s in &sources {
        match s {
            Source::Rustup(c) => install(Command::new("rustup").args(["component", "add", c]))?,
            Source::Crate(c) => install(
                Command::new(env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
                    .args(["install", "-q", "--locked", c]),
            )?,
            Source::Debian(_) | Source::Sid(_) => {}
        }
    }
    match missing.iter().find(|t| locate(t.name).is_none()) {
        Some(t) => Err(format!(
            "{} is still missing after installing {}",
            t.name,
            install_hint(&[t.source])
        )),
        None => Ok(()),
    }
}

/// Returns the path of the program or file `name`, made sure of first ([`ensure`]).
///
/// # Errors
///
/// As [`ensure`].
pub(crate) fn path(name: &str) -> Result<PathBuf, String> {
    ensure(&[name])?;
    locate(name).ok_or_else(|| format!("{name} is missing"))
}

/// Returns a [`Command`] for the program `name`, made sure of first ([`ensure`]).
///
/// # Errors
///
/// As [`ensure`].
pub(crate) fn command(name: &str) -> Result<Command, String> {
    Ok(Command::new(path(name)?))
}

/// Returns a [`Command`] for the program `name`, which the caller's setup has made sure
/// of already ([`ensure`] of a list holding it), without looking again: for a function
/// that returns a `Command` to be filled in, such as a build's `make`.
///
/// # Panics
///
/// In debug builds, when `name` is not in [`TOOLS`] or is a private-root program, which
/// starts only through its root's loader (a programming error).
pub(crate) fn known(name: &str) -> Command {
    debug_assert!(
        entry(name).is_some_and(|t| !matches!(t.source, Source::Sid(_))),
        "{name} is not in TOOLS, or starts only through its root's loader"
    );
    Command::new(locate(name).unwrap_or_else(|| PathBuf::from(name)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// The sources of xtask, this file's own left out: it spawns the installers.
    fn sources() -> Vec<(PathBuf, String)> {
        fn walk(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
            for p in fs::read_dir(dir).unwrap().flatten().map(|e| e.path()) {
                if p.is_dir() {
                    walk(&p, out);
                } else if p.extension().is_some_and(|e| e == "rs") && !p.ends_with(file!()) {
                    let text = fs::read_to_string(&p).unwrap();
                    out.push((p, text));
                }
            }
        }
        let mut out = Vec::new();
        walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut out);
        out.sort();
        out
    }

    /// The string literals that follow `call` in `text`.
    fn literal_args<'a>(text: &'a str, call: &str) -> Vec<&'a str> {
        text.match_indices(call)
            .filter_map(|(i, _)| {
                let rest = text[i + call.len()..].strip_prefix('"')?;
                rest.split_once('"').map(|(lit, _)| lit)
            })
            .collect()
    }

    #[test]
    fn no_xtask_source_spawns_a_program_by_name_but_through_the_table() {
        for (path, text) in sources() {
            let named = literal_args(&text, "Command::new(");
            assert!(
                named.is_empty(),
                "{} spawns {named:?} with Command::new: use tools::command, so it is ensured",
                path.display()
            );
        }
    }

    #[test]
    fn every_program_xtask_asks_for_is_in_the_table() {
        let mut asked = Vec::new();
        let sources = sources();
        for (_, text) in &sources {
            for call in ["tools::command(", "tools::path(", "tools::known("] {
                asked.extend(literal_args(text, call));
            }
            // `tools::ensure(&["a", "b"])` and the constant lists handed to it.
            for (i, _) in text.match_indices("tools::ensure(&[") {
                let list = &text[i + "tools::ensure(&[".len()..];
                let list = &list[..list.find(']').unwrap()];
                asked.extend(
                    list.split(',')
                        .filter_map(|w| w.trim().strip_prefix('"')?.strip_suffix('"')),
                );
            }
        }
        // The scan sees the calls: fresh.rs asks for debootstrap this way.
        assert!(asked.contains(&"debootstrap"), "the scan found {asked:?}");
        for name in asked.iter().filter(|n| !n.contains('{')) {
            assert!(
                entry(name).is_some(),
                "{name} is asked for but not in TOOLS"
            );
        }
    }

    #[test]
    fn every_program_the_test_command_ensures_is_in_the_table() {
        let run = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/run.sh");
        let text = fs::read_to_string(run).unwrap();
        let lists: Vec<&str> = text
            .lines()
            .filter_map(|l| l.trim().strip_prefix("RUN_TOOLS"))
            .collect();
        assert!(!lists.is_empty(), "tests/run.sh declares no RUN_TOOLS");
        for list in lists {
            let words = list
                .split_once('(')
                .map_or("", |(_, w)| w)
                .trim_end_matches(')');
            for w in words.split_whitespace() {
                assert!(entry(w).is_some(), "tests/run.sh ensures {w}, not in TOOLS");
            }
        }
    }

    #[test]
    fn every_entry_is_named_once() {
        let names: BTreeSet<&str> = TOOLS.iter().map(|t| t.name).collect();
        assert_eq!(names.len(), TOOLS.len());
    }

    #[test]
    fn a_missing_tool_s_hint_names_its_package_and_the_install_command() {
        let hint = install_hint(&[
            Source::Debian("qemu-system-x86"),
            Source::Crate("cargo-fuzz"),
        ]);
        assert_eq!(
            hint,
            "sudo apt-get install -y qemu-system-x86; cargo install --locked cargo-fuzz"
        );
    }

    #[test]
    fn an_unknown_tool_is_an_error_naming_it() {
        let e = ensure(&["no-such-tool-anywhere"]).unwrap_err();
        assert!(e.contains("no-such-tool-anywhere"), "{e}");
    }

    #[test]
    fn a_private_root_program_is_left_to_the_tools_command() {
        let e = ensure(&["qemu-11-system-x86_64"]).unwrap_err();
        assert!(
            e.contains("cargo xtask tools ensure qemu-11-system-x86_64"),
            "{e}"
        );
        assert_eq!(locate("qemu-11-system-x86_64"), None);
    }
}
