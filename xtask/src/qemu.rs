// SPDX-License-Identifier: GPL-2.0

//! QEMU 11 from Debian's sid, in a private root in the cache (REFERENCE §11).
//!
//! The emulated GPU's arm64 guests need QEMU ≥ 10.1 (`vfio-user-pci`); bookworm has 7.2.
//! sid's `qemu-system-arm` and `qemu-system-x86` need a newer glibc than the system's, so
//! they run from a root of their own, started through that root's loader. Nothing of the
//! system changes: its apt sources, its packages and its libc stay as they are.
//!
//! The fetch, once per binary package:
//! 1. A private apt configuration under `<cache>/apt-qemu` (`deb` of sid from the
//!    mirror the system's own sources name, Debian's keyring; an empty package
//!    status, so apt takes nothing as installed and resolves every dependency).
//! 2. `apt-get install --simulate --no-install-recommends` names the packages and
//!    versions; `apt-get download` fetches the ones not yet in `<cache>/qemu-11/debs`.
//! 3. `dpkg-deb -x` of each into a fresh `<cache>/qemu-11/root.new`, plus one link:
//!    QEMU finds its modules and firmware relative to its executable, which under the
//!    loader is the loader itself, and looks first in `qemu-bundle` beside it. That link
//!    points back at the root, so QEMU loads only the root's modules and never the
//!    system's own QEMU's (those abort `-device help` with "Only modules from the same
//!    build can be loaded").
//! 4. The probe: `-version` says `QEMU emulator version 11.` and the source's version,
//!    and `-device help` lists `vfio-user-pci`.
//! 5. The stamps `.vgsp-<package>` (the source version and every package unpacked), then
//!    the new root replaces `<cache>/qemu-11/root`. An interrupted fetch leaves no stamp,
//!    and is done again.
//!
//! A root holds every binary package fetched so far, at one set of versions: fetching the
//! second resolves both together.
//!
//! No header of QEMU's comes from here: the registries serve QEMU 11.1's binary packages
//! but not their source, so the project declares the plugin API it uses itself
//! (`tools/trace/plugin/qemu-11/qemu-plugin.h`).
//!
//! `cargo xtask qemu [aarch64|x86_64]` makes sure of the root and prints
//! the version, the root and the command line that starts QEMU.

use std::{
    env, fs,
    os::unix::fs::symlink,
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

use crate::util::{
    self,
    debian,
    process::{
        last_lines,
        run, //
    },
    tools, //
};

/// The suite the packages come from.
const SUITE: &str = "sid";
/// The major version the private root is for.
const MAJOR: &str = "11";
/// The root's loader, relative to the root (amd64's ABI path).
const LOADER: &str = "usr/lib64/ld-linux-x86-64.so.2";
/// The root's library directories, relative to the root; those that exist are searched.
const LIBRARY_DIRS: &[&str] = &["usr/lib/x86_64-linux-gnu", "lib/x86_64-linux-gnu"];
/// QEMU's firmware and data, relative to the root.
const DATA_DIR: &str = "usr/share/qemu";
/// The name QEMU looks for beside its executable for a relocated install.
const BUNDLE: &str = "qemu-bundle";
/// The stamp of one binary package is this followed by the package's name.
const STAMP_PREFIX: &str = ".vgsp-";
/// The device the probe looks for: the reason for QEMU 11.
const VFIO_USER: &str = "vfio-user-pci";
/// The source package of QEMU.
const SOURCE: &str = "qemu";
/// The architecture used when none is named.
const DEFAULT_ARCH: &str = "aarch64";

/// One QEMU system emulator of sid.
#[derive(Debug)]
struct Target {
    /// The guest architecture, as QEMU names it (`qemu-system-<arch>`).
    arch: &'static str,
    /// The Debian binary package that has it.
    package: &'static str,
    /// A machine of the architecture, for `-device help`.
    machine: &'static str,
}

/// The emulators this module fetches.
const TARGETS: &[Target] = &[
    Target {
        arch: "aarch64",
        package: "qemu-system-arm",
        machine: "virt",
    },
    Target {
        arch: "x86_64",
        package: "qemu-system-x86",
        machine: "q35",
    },
];

impl Target {
    /// Returns the target of `arch`.
    fn of_arch(arch: &str) -> Result<&'static Self, String> {
        TARGETS.iter().find(|t| t.arch == arch).ok_or_else(|| {
            format!(
                "no QEMU {MAJOR} for `{arch}`: name one of {}",
                TARGETS
                    .iter()
                    .map(|t| t.arch)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    }

    /// Returns the target of the binary package `package`.
    fn of_package(package: &str) -> Option<&'static Self> {
        TARGETS.iter().find(|t| t.package == package)
    }

    /// Returns the emulator's path relative to the root.
    fn program(&self) -> String {
        format!("usr/bin/qemu-system-{}", self.arch)
    }

    /// Returns the path of the target's stamp in `root`.
    fn stamp(&self, root: &Path) -> PathBuf {
        root.join(format!("{STAMP_PREFIX}{}", self.package))
    }
}

/// One package as apt resolved it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Package {
    /// The name, as apt prints it.
    name: String,
    /// The Debian version.
    version: String,
}

impl Package {
    /// Returns the argument that names this version to `apt-get download`.
    fn pinned(&self) -> String {
        format!("{}={}", self.name, self.version)
    }

    /// Returns how the name of its `.deb` starts (`libc6_2.43-7_`; an epoch's colon is
    /// `%3a` there).
    fn deb_prefix(&self) -> String {
        let name = self.name.split(':').next().unwrap_or(&self.name);
        format!("{name}_{}_", self.version.replace(':', "%3a"))
    }
}

/// Reads the packages `apt-get install --simulate` would unpack, from its `Inst` lines
/// (`Inst libc6 (2.43-7 Debian:unstable [amd64])`).
fn parse_simulation(text: &str) -> Vec<Package> {
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("Inst ")?;
            let (name, rest) = rest.split_once(' ')?;
            let version = rest.split_once('(')?.1.split_whitespace().next()?;
            Some(Package {
                name: name.into(),
                version: version.into(),
            })
        })
        .collect()
}

/// One file `apt-get --print-uris` names.
#[derive(Debug, PartialEq, Eq)]
struct Uri {
    /// The file's name once downloaded.
    file: String,
    /// Its size in bytes.
    size: u64,
}

/// Reads the files `apt-get --print-uris download` would fetch
/// (`'http://…/x_1%3a2_amd64.deb' x_1%3a2_amd64.deb 12345 SHA256:…`).
fn parse_uris(text: &str) -> Vec<Uri> {
    text.lines()
        .filter_map(|l| {
            let mut words = l.strip_prefix('\'')?.split_whitespace().skip(1);
            let file = words.next()?;
            let size = words.next()?.parse().ok()?;
            Some(Uri {
                file: file.into(),
                size,
            })
        })
        .collect()
}

/// Returns a Debian version without its epoch and Debian revision, as the source's
/// tarball names it (`1:11.1.3+ds-1` is `11.1.3+ds`).
fn tarball_version(version: &str) -> &str {
    let version = version.split_once(':').map_or(version, |(_, v)| v);
    version.rsplit_once('-').map_or(version, |(v, _)| v)
}

/// Returns the upstream part of a Debian version: no epoch, no Debian revision, no
/// repack suffix (`1:11.1.3+ds-1` is `11.1.3`).
fn upstream_version(version: &str) -> &str {
    let version = tarball_version(version);
    version.split(['+', '~']).next().unwrap_or(version)
}

/// Returns the source version of a binary package from its `Source` and `Version` fields
/// (`dpkg-deb -f DEB Source Version`): the one in parentheses after the source's name
/// when the binary's differs (a binNMU), else the binary's own.
fn source_version(fields: &str) -> Option<(String, String)> {
    let field = |name: &str| {
        fields
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    };
    let version = field("Version")?;
    let source = field("Source")?;
    Some(match source.split_once(" (") {
        Some((name, v)) => (name.into(), v.trim_end_matches(')').into()),
        None => (source.into(), version.into()),
    })
}

/// What a binary package's stamp records: the version of QEMU's source it comes from,
/// and every package unpacked into the root with it.
#[derive(Debug, PartialEq, Eq)]
struct Stamp {
    /// The source package's version (`1:11.1.3+ds-1`).
    source: String,
    /// The packages, as unpacked.
    packages: Vec<Package>,
}

impl Stamp {
    /// Returns the stamp's text: `source VERSION`, then `package NAME VERSION` lines.
    fn render(&self) -> String {
        let mut text = format!("source {SOURCE} {}\n", self.source);
        for p in &self.packages {
            text.push_str(&format!("package {} {}\n", p.name, p.version));
        }
        text
    }

    /// Reads a stamp; `None` unless it names the source and at least one package.
    fn parse(text: &str) -> Option<Self> {
        let mut source = None;
        let mut packages = Vec::new();
        for line in text.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["source", SOURCE, v] => source = Some(v.to_string()),
                ["package", name, version] => packages.push(Package {
                    name: name.to_string(),
                    version: version.to_string(),
                }),
                _ => return None,
            }
        }
        match packages.is_empty() {
            true => None,
            false => Some(Self {
                source: source?,
                packages,
            }),
        }
    }

    /// Returns whether the stamp records `package` among the unpacked packages.
    fn has(&self, package: &str) -> bool {
        self.packages.iter().any(|p| p.name == package)
    }
}

/// Returns `<cache>/qemu-11`.
fn qemu_dir() -> Result<PathBuf, String> {
    Ok(util::cache()?.join(format!("qemu-{MAJOR}")))
}

/// Returns the stamp of `target` in `root` if it is there, whole, and names the package.
fn read_stamp(root: &Path, target: &Target) -> Option<Stamp> {
    let stamp = Stamp::parse(&fs::read_to_string(target.stamp(root)).ok()?)?;
    stamp.has(target.package).then_some(stamp)
}

/// Returns whether `target` is ready in `root`: its stamp, its program and the loader.
fn is_ready(root: &Path, target: &Target) -> bool {
    read_stamp(root, target).is_some()
        && root.join(target.program()).is_file()
        && root.join(LOADER).is_file()
}

/// Returns the architecture of sid's binary package `package`, if this module fetches it.
pub(crate) fn arch_of(package: &str) -> Option<&'static str> {
    Target::of_package(package).map(|t| t.arch)
}

/// Returns the program of sid's binary package `package` in the private root, if it is
/// there (no fetch). It runs only through [`system`].
pub(crate) fn installed(package: &str) -> Option<PathBuf> {
    let target = Target::of_package(package)?;
    let root = qemu_dir().ok()?.join("root");
    is_ready(&root, target).then(|| root.join(target.program()))
}

/// The private apt configuration: sid's binaries and sources.
struct Apt {
    /// The options that make apt use it.
    opts: Vec<String>,
    /// Its directory.
    dir: PathBuf,
    /// The mirror.
    mirror: String,
}

impl Apt {
    /// Makes the configuration under `<cache>/apt-qemu`.
    fn new() -> Result<Self, String> {
        let dir = util::cache()?.join("apt-qemu");
        let mirror = debian::debian_mirror()?;
        let keyring = debian::KEYRING;
        let list = format!("deb [signed-by={keyring}] {mirror} {SUITE} main\n");
        let mut opts = debian::private_apt(&dir, &list, &["preferences.d"])?;
        // Nothing installed: every dependency is resolved, whatever the system has.
        let status = dir.join("status");
        fs::write(&status, "").map_err(|e| format!("{}: {e}", status.display()))?;
        opts.extend([
            format!("-o=Dir::State::status={}", status.display()),
            format!(
                "-o=Dir::Etc::preferences={}",
                dir.join("preferences").display()
            ),
            format!(
                "-o=Dir::Etc::preferencesparts={}",
                dir.join("preferences.d").display()
            ),
        ]);
        Ok(Self { opts, dir, mirror })
    }

    /// Returns `apt-get` with the configuration's options.
    fn get(&self) -> Result<Command, String> {
        let mut cmd = tools::command("apt-get")?;
        cmd.args(&self.opts).stdin(Stdio::null());
        Ok(cmd)
    }

    /// Runs `cmd`; returns its standard output, or an error with what it printed and
    /// `hint`.
    fn output(cmd: &mut Command, hint: &str) -> Result<String, String> {
        let out = cmd
            .output()
            .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() {
            return Ok(stdout);
        }
        Err(format!(
            "{cmd:?} failed ({}):\n{}\n{hint}",
            out.status,
            last_lines(&String::from_utf8_lossy(&out.stderr), 20)
        ))
    }

    /// `apt-get update`; returns its warnings (a source it could not reach prints one and
    /// still succeeds), for a later error to show.
    fn update(&self) -> Result<String, String> {
        let out = self
            .get()?
            .args(["-q", "update"])
            .output()
            .map_err(|e| format!("cannot run apt-get update: {e}"))?;
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let expired = stderr.contains("is expired") || stderr.contains("not valid yet");
        let fix = match expired {
            true => {
                "sid's Release file is outside its validity (a snapshot mirror?): allow that \
                 in the machine's apt settings (`Acquire::Check-Valid-Until \"false\";` in \
                 /etc/apt/apt.conf.d), as such mirrors need."
            }
            false => "Check that the machine reaches the mirror.",
        };
        if !out.status.success() || expired {
            return Err(format!(
                "apt-get update of {} {SUITE} through {} failed ({}):\n{}\n{fix}",
                self.mirror,
                self.dir.display(),
                out.status,
                last_lines(&stderr, 20)
            ));
        }
        Ok(stderr)
    }

    /// Returns every package `packages` need, themselves included, at sid's versions.
    fn resolve(&self, packages: &[&str], warnings: &str) -> Result<Vec<Package>, String> {
        let hint = format!(
            "sid's index under {} lacks a package or cannot satisfy a dependency. Check \
             that {} serves sid (apt-get update said: {})",
            self.dir.join("lists").display(),
            self.mirror,
            match warnings.trim() {
                "" => "nothing",
                w => w,
            }
        );
        let text = Self::output(
            self.get()?
                .args(["--simulate", "--no-install-recommends", "install"])
                .args(packages),
            &hint,
        )?;
        let resolved = parse_simulation(&text);
        match packages
            .iter()
            .find(|p| !resolved.iter().any(|r| r.name == **p))
        {
            Some(p) => Err(format!("apt resolved no {p} in sid: {hint}")),
            None => Ok(resolved),
        }
    }

    /// Downloads the `.deb` of each package into `debs`, skipping those already there
    /// whole; returns the files, in the order of `packages`.
    fn download(&self, packages: &[Package], debs: &Path) -> Result<Vec<PathBuf>, String> {
        let pinned: Vec<String> = packages.iter().map(Package::pinned).collect();
        let hint = format!(
            "Check that the machine reaches {} and that it serves sid's packages.",
            self.mirror
        );
        let uris = parse_uris(&Self::output(
            self.get()?
                .args(["-qq", "--print-uris", "download"])
                .args(&pinned),
            &hint,
        )?);
        // apt names the files in an order of its own.
        let uris: Vec<&Uri> = packages
            .iter()
            .map(|p| {
                uris.iter()
                    .find(|u| u.file.starts_with(&p.deb_prefix()))
                    .ok_or_else(|| format!("apt-get --print-uris named no .deb of {}", p.pinned()))
            })
            .collect::<Result<_, _>>()?;
        let there = |u: &Uri| fs::metadata(debs.join(&u.file)).is_ok_and(|m| m.len() == u.size);
        let missing: Vec<usize> = (0..uris.len()).filter(|&i| !there(uris[i])).collect();
        let bytes: u64 = missing.iter().map(|&i| uris[i].size).sum();
        let total: u64 = uris.iter().map(|u| u.size).sum();
        eprintln!(
            "xtask: fetching {} of {} packages from {} {SUITE} ({:.1} MB of {:.1} MB) into {}",
            missing.len(),
            uris.len(),
            self.mirror,
            megabytes(bytes),
            megabytes(total),
            debs.display()
        );
        if !missing.is_empty() {
            fs::create_dir_all(debs).map_err(|e| format!("{}: {e}", debs.display()))?;
            Self::output(
                self.get()?
                    .args(["-qq", "download"])
                    .args(missing.iter().map(|&i| &pinned[i]))
                    .current_dir(debs),
                &hint,
            )?;
        }
        let files: Vec<PathBuf> = uris.iter().map(|u| debs.join(&u.file)).collect();
        if let Some(u) = uris.iter().find(|u| !there(u)) {
            return Err(format!(
                "apt-get download left no whole {} in {}: run again",
                u.file,
                debs.display()
            ));
        }
        // Other versions of these packages are not needed any more (another emulator's
        // own packages stay).
        let ours = |p: &Path| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.split_once('_'))
                .is_some_and(|(name, _)| packages.iter().any(|q| q.name == name))
        };
        if let Ok(entries) = fs::read_dir(debs) {
            for p in entries.flatten().map(|e| e.path()) {
                if p.extension().is_some_and(|e| e == "deb") && ours(&p) && !files.contains(&p) {
                    let _ = fs::remove_file(&p);
                }
            }
        }
        Ok(files)
    }
}

/// Returns `bytes` in MB.
fn megabytes(bytes: u64) -> f64 {
    // CAST: a file's size in bytes is far below 2^52; the result is for a message.
    bytes as f64 / 1e6
}

/// Returns the directory `path` is in.
fn parent(path: &Path) -> Result<&Path, String> {
    path.parent()
        .ok_or_else(|| format!("{} has no directory", path.display()))
}

/// Links `qemu-bundle` beside the root's real loader back to the root, so that QEMU
/// (whose executable is the loader) finds its modules and data in the root only.
fn link_bundle(root: &Path) -> Result<(), String> {
    let loader = root.join(LOADER);
    let real = fs::canonicalize(&loader).map_err(|e| {
        format!(
            "the root's loader {} is missing ({e}): sid's libc6 did not provide it",
            loader.display()
        )
    })?;
    let root = fs::canonicalize(root).map_err(|e| format!("{}: {e}", root.display()))?;
    let dir = parent(&real)?;
    let depth = dir
        .strip_prefix(&root)
        .map_err(|_| {
            format!(
                "the root's loader {} leads out of the root, to {}",
                loader.display(),
                real.display()
            )
        })?
        .components()
        .count();
    let back: PathBuf = std::iter::repeat_n("..", depth).collect();
    let link = dir.join(BUNDLE);
    let _ = fs::remove_file(&link);
    symlink(&back, &link).map_err(|e| format!("{}: {e}", link.display()))
}

/// Returns the command that starts `target`'s emulator from `root`: the root's loader
/// with the root's libraries, and `-L` the root's firmware.
fn command_in(root: &Path, target: &Target) -> Result<Command, String> {
    let loader = root.join(LOADER);
    if !loader.is_file() {
        return Err(format!(
            "the root's loader {} is missing: remove {} and run `cargo xtask qemu {}` again",
            loader.display(),
            root.display(),
            target.arch
        ));
    }
    let dirs: Vec<PathBuf> = LIBRARY_DIRS
        .iter()
        .map(|d| root.join(d))
        .filter(|d| d.is_dir())
        .collect();
    let libraries = env::join_paths(&dirs).map_err(|e| format!("{}: {e}", root.display()))?;
    let mut cmd = Command::new(loader);
    cmd.arg("--library-path")
        .arg(libraries)
        .arg(root.join(target.program()))
        .arg("-L")
        .arg(root.join(DATA_DIR));
    Ok(cmd)
}

/// Runs `cmd` with `args`; returns what it printed on both streams, or an error naming
/// what failed.
fn probe_output(mut cmd: Command, args: &[&str]) -> Result<String, String> {
    let out = cmd
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    match out.status.success() {
        true => Ok(text),
        false => Err(format!(
            "{cmd:?} failed ({}):\n{}",
            out.status,
            last_lines(&text, 20)
        )),
    }
}

/// Returns the version QEMU reports in its `-version` line.
fn reported_version(text: &str) -> Option<&str> {
    text.lines()
        .find_map(|l| l.strip_prefix("QEMU emulator version "))?
        .split_whitespace()
        .next()
}

/// Checks that `target`'s emulator in `root` starts, is QEMU 11 of the source version
/// `source`, and has `vfio-user-pci`; returns its `-version` line.
fn probe(root: &Path, target: &Target, source: &str) -> Result<String, String> {
    let fix = format!(
        "The root lacks a file QEMU needs (named above): remove {} to fetch it afresh; if \
         that does not help, sid's dependencies of {} miss the package that has the file.",
        root.display(),
        target.package
    );
    let said = probe_output(command_in(root, target)?, &["-version"])
        .map_err(|e| format!("QEMU {MAJOR} from {SUITE} does not start: {e}\n{fix}"))?;
    let want = upstream_version(source);
    match reported_version(&said) {
        Some(v) if v == want && v.starts_with(&format!("{MAJOR}.")) => {}
        got => {
            return Err(format!(
                "qemu-system-{} from {SUITE} says it is version {} where its package is \
                 {source} (QEMU {MAJOR}.x wanted): remove {} and run again",
                target.arch,
                got.unwrap_or("(none)"),
                root.display()
            ))
        }
    }
    let devices = probe_output(
        command_in(root, target)?,
        &["-machine", target.machine, "-device", "help"],
    )
    .map_err(|e| format!("QEMU {MAJOR} cannot list its devices: {e}\n{fix}"))?;
    if !devices.contains(&format!("name \"{VFIO_USER}\"")) {
        return Err(format!(
            "qemu-system-{} {want} from {SUITE} has no {VFIO_USER} device (its `-machine {} \
             -device help` does not list it): QEMU ≥ 10.1 built with vfio-user is needed",
            target.arch, target.machine
        ));
    }
    Ok(said.lines().next().unwrap_or_default().to_string())
}

/// Fetches `wanted` (and what they need) from sid into a fresh root, probes them, and
/// puts the root in place of `root` (see the module documentation).
fn fetch(root: &Path, wanted: &[&'static Target]) -> Result<(), String> {
    if env::consts::ARCH != "x86_64" {
        return Err(format!(
            "the private QEMU {MAJOR} root runs through amd64's loader: this host is {}; \
             install QEMU {MAJOR} from the system's own packages instead",
            env::consts::ARCH
        ));
    }
    let start = Instant::now();
    let home = parent(root)?;
    let packages: Vec<&str> = wanted.iter().map(|t| t.package).collect();
    eprintln!(
        "xtask: resolving {} and their dependencies in Debian {SUITE} (once)",
        packages.join(", ")
    );
    let apt = Apt::new()?;
    let warnings = apt.update()?;
    let resolved = apt.resolve(&packages, &warnings)?;
    let debs = apt.download(&resolved, &home.join("debs"))?;

    // The version of QEMU's source, from the first emulator's package.
    let first = wanted
        .first()
        .ok_or("no QEMU package to fetch (a programming error)")?;
    let deb = resolved
        .iter()
        .zip(&debs)
        .find_map(|(p, deb)| (p.name == first.package).then_some(deb))
        .ok_or_else(|| format!("apt resolved no {}", first.package))?;
    let fields = Apt::output(
        tools::command("dpkg-deb")?
            .arg("-f")
            .arg(deb)
            .args(["Source", "Version"]),
        &format!("{} is damaged: remove it and run again", deb.display()),
    )?;
    let source = match source_version(&fields) {
        Some((name, version)) if name == SOURCE => version,
        _ => {
            return Err(format!(
                "{} does not come from the source package {SOURCE}:\n{fields}",
                deb.display()
            ))
        }
    };

    let staging = home.join("root.new");
    let _ = fs::remove_dir_all(&staging);
    fs::create_dir_all(&staging).map_err(|e| format!("{}: {e}", staging.display()))?;
    for deb in &debs {
        if let Err(e) = run(tools::command("dpkg-deb")?.arg("-x").arg(deb).arg(&staging)) {
            let _ = fs::remove_file(deb);
            return Err(format!(
                "cannot unpack {} into {}: {e}\nIt was removed: run again to fetch it anew \
                 (check the space left in {}).",
                deb.display(),
                staging.display(),
                home.display()
            ));
        }
    }
    link_bundle(&staging)?;
    for t in wanted {
        let said = probe(&staging, t, &source)?;
        eprintln!("xtask: qemu-system-{}: {said}; has {VFIO_USER}", t.arch);
    }
    let stamp = Stamp {
        source,
        packages: resolved,
    };
    for t in wanted {
        let path = t.stamp(&staging);
        fs::write(&path, stamp.render()).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    // The old root moves aside before the new one takes its name, and goes only then: a
    // QEMU running from it finds every file it loads later at the same path.
    let old = root.with_extension("old");
    let _ = fs::remove_dir_all(&old);
    if root.exists() {
        fs::rename(root, &old).map_err(|e| format!("{}: {e}", root.display()))?;
    }
    fs::rename(&staging, root).map_err(|e| format!("{}: {e}", root.display()))?;
    let _ = fs::remove_dir_all(&old);
    eprintln!(
        "xtask: QEMU {MAJOR} from {SUITE}: {} packages unpacked into {} ({:.0} s)",
        stamp.packages.len(),
        root.display(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Returns the private root with `arch`'s QEMU 11 in it, fetching it from sid first if it
/// is not there (see the module documentation).
///
/// # Errors
///
/// - `arch` is neither `aarch64` nor `x86_64`, or the host is not x86_64.
/// - The mirror cannot be reached, sid lacks a package, a download or an unpacking fails:
///   the message names what and the fix.
/// - The fetched QEMU does not start, is not 11.x, or has no `vfio-user-pci`.
pub(crate) fn root(arch: &str) -> Result<PathBuf, String> {
    let target = Target::of_arch(arch)?;
    let root = qemu_dir()?.join("root");
    if is_ready(&root, target) {
        return Ok(root);
    }
    // One fetch at a time: a fetch replaces the whole root, which another command may be
    // about to fetch too.
    let lock_path = qemu_dir()?.join("fetch.lock");
    fs::create_dir_all(qemu_dir()?).map_err(|e| format!("{}: {e}", lock_path.display()))?;
    let lock = fs::File::create(&lock_path).map_err(|e| format!("{}: {e}", lock_path.display()))?;
    lock.lock()
        .map_err(|e| format!("{}: {e}", lock_path.display()))?;
    if is_ready(&root, target) {
        return Ok(root);
    }
    // Together with those fetched before, so the root holds one set of versions.
    let mut wanted = vec![target];
    wanted.extend(
        TARGETS
            .iter()
            .filter(|t| t.arch != arch && is_ready(&root, t)),
    );
    fetch(&root, &wanted)?;
    Ok(root)
}

/// Makes sure sid's binary package `package` is in the private root; returns its program
/// (which runs only through [`system`]).
///
/// # Errors
///
/// - This module does not fetch `package`.
/// - As [`root`].
pub(crate) fn ensure_package(package: &str) -> Result<PathBuf, String> {
    let target = Target::of_package(package)
        .ok_or_else(|| format!("xtask fetches no {package} from {SUITE}"))?;
    Ok(root(target.arch)?.join(target.program()))
}

/// Returns a [`Command`] that starts QEMU 11's `qemu-system-<arch>` from the private root
/// (fetched first if needed): `ROOT/usr/lib64/ld-linux-x86-64.so.2 --library-path
/// ROOT/usr/lib/x86_64-linux-gnu ROOT/usr/bin/qemu-system-<arch> -L ROOT/usr/share/qemu`;
/// the caller adds QEMU's arguments.
///
/// # Errors
///
/// As [`root`].
pub(crate) fn system(arch: &str) -> Result<Command, String> {
    let target = Target::of_arch(arch)?;
    command_in(&root(arch)?, target)
}

/// Returns the `-version` line of `arch`'s QEMU 11 (`QEMU emulator version 11.1.3
/// (Debian 1:11.1.3+ds-1)`), fetching it first if needed.
///
/// # Errors
///
/// As [`root`]; or the emulator does not start.
pub(crate) fn version(arch: &str) -> Result<String, String> {
    let said = probe_output(system(arch)?, &["-version"])?;
    Ok(said.lines().next().unwrap_or_default().to_string())
}

/// `cargo xtask qemu [aarch64|x86_64]`: makes sure of the private root
/// and prints the version, the root and the command that starts QEMU.
pub(crate) fn qemu_command(args: &[String]) -> Result<bool, String> {
    let usage = "usage: cargo xtask qemu [aarch64|x86_64]";
    let arch = match args {
        [] => None,
        [a] if !a.starts_with('-') => Some(a.as_str()),
        _ => return Err(usage.into()),
    };
    let target =
        Target::of_arch(arch.unwrap_or(DEFAULT_ARCH)).map_err(|e| format!("{e}\n{usage}"))?;
    if installed(target.package).is_some() {
        eprintln!(
            "xtask: QEMU {MAJOR}'s {} is in the private root already: nothing to fetch",
            target.package
        );
    }
    let root = root(target.arch)?;
    println!("{}", version(target.arch)?);
    println!("root: {}", root.display());
    println!("run: {:?}", system(target.arch)?);
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_simulation_names_each_package_and_version() {
        let text = "Reading package lists...\n\
                    Inst libgcc-s1 (16.2.0-4 Debian:unstable [amd64]) []\n\
                    Inst qemu-system-arm (1:11.1.3+ds-1 Debian:unstable [amd64])\n\
                    Conf qemu-system-arm (1:11.1.3+ds-1 Debian:unstable [amd64])\n";
        let names: Vec<String> = parse_simulation(text).iter().map(Package::pinned).collect();
        assert_eq!(
            names,
            ["libgcc-s1=16.2.0-4", "qemu-system-arm=1:11.1.3+ds-1"]
        );
    }

    #[test]
    fn print_uris_gives_each_file_and_size() {
        let text = "'http://deb.debian.org/debian/pool/main/q/qemu/qemu-system-arm_11.1.3%2bds-1_amd64.deb' \
                    qemu-system-arm_1%3a11.1.3+ds-1_amd64.deb 10528220 SHA256:70855b3f\n";
        assert_eq!(
            parse_uris(text),
            [Uri {
                file: "qemu-system-arm_1%3a11.1.3+ds-1_amd64.deb".into(),
                size: 10528220,
            }]
        );
    }

    #[test]
    fn a_deb_s_name_spells_the_epoch_as_apt_does() {
        let p = Package {
            name: "qemu-system-arm".into(),
            version: "1:11.1.3+ds-1".into(),
        };
        assert_eq!(p.deb_prefix(), "qemu-system-arm_1%3a11.1.3+ds-1_");
    }

    #[test]
    fn the_upstream_version_drops_epoch_revision_and_repack() {
        assert_eq!(upstream_version("1:11.1.3+ds-1"), "11.1.3");
        assert_eq!(upstream_version("11.1.3"), "11.1.3");
    }

    #[test]
    fn a_binnmu_takes_the_source_version_from_the_source_field() {
        let fields = "Source: qemu (1:11.1.3+ds-1)\nVersion: 1:11.1.3+ds-1+b1\n";
        assert_eq!(
            source_version(fields),
            Some(("qemu".into(), "1:11.1.3+ds-1".into()))
        );
    }

    #[test]
    fn a_package_of_its_source_s_own_version_gives_that_version() {
        let fields = "Source: qemu\nVersion: 1:11.1.3+ds-1\n";
        assert_eq!(
            source_version(fields),
            Some(("qemu".into(), "1:11.1.3+ds-1".into()))
        );
    }

    #[test]
    fn a_stamp_reads_back_what_it_records() {
        let stamp = Stamp {
            source: "1:11.1.3+ds-1".into(),
            packages: parse_simulation("Inst libc6 (2.43-7 Debian:unstable [amd64])\n"),
        };
        assert_eq!(Stamp::parse(&stamp.render()), Some(stamp));
    }

    #[test]
    fn a_stamp_cut_short_is_not_one() {
        assert_eq!(Stamp::parse(""), None);
        assert_eq!(Stamp::parse("source qemu 1:11.1.3+ds-1\n"), None);
        assert_eq!(
            Stamp::parse("source qemu 1:11.1.3+ds-1\npackage libc6\n"),
            None
        );
    }

    #[test]
    fn qemu_s_version_line_gives_its_version() {
        let said = "QEMU emulator version 11.1.3 (Debian 1:11.1.3+ds-1)\nCopyright (c) …\n";
        assert_eq!(reported_version(said), Some("11.1.3"));
    }
}
