// SPDX-License-Identifier: GPL-2.0

//! Linux 7.3, the tree the project follows: fetching it the Debian way, and checking the
//! patches of `upstream/` against it.
//!
//! `cargo xtask linux-7.3` makes sure a pristine Linux 7.3 tree is unpacked in the cache
//! (`$VGSP_CACHE`, default `~/.cache/vgsp`, as `linux-7.3/`) and prints its path. The
//! source comes from Debian's `linux-source-7.3` package of trixie-backports, fetched
//! with a private apt configuration under the cache (the system's apt sources are never
//! changed), from the mirror the system's own sources name. `VGSP_LINUX_7_3=<tree>`
//! points everything at a tree unpacked by hand instead.
//!
//! `cargo xtask check-patches [--tree DIR] [--no-build]`: the series in `upstream/` (its
//! cover letter `0000-cover-letter.patch`, then the patches in order). Every patch must
//! apply to the tree after the patches before it (`git apply`), pass the
//! tree's `scripts/checkpatch.pl --strict` with no error, warning or check, leave
//! nova-core clean under the tree's `rustfmt` configuration, and (without `--no-build`)
//! leave the tree building nova-core with `CONFIG_NOVA_CORE=y` without a warning: every
//! prefix of the series is bisectable. The cover letter must count the patches in its
//! subject and name among its recipients everyone the tree's `scripts/get_maintainer.pl`
//! names for the series. The last line is `upstream patches: N clean of N, the cover
//! letter right`.

use std::{
    env, fs,
    path::{
        Path,
        PathBuf, //
    },
    process::Command,
};

/// The suites of Debian's archive searched for a kernel's source, beside the system's own:
/// backports of the next stable release, unstable, experimental.
const SUITES: &[&str] = &["trixie-backports", "sid", "experimental"];
/// The release the project follows.
const FOLLOWED: &str = "7.3";
/// The keyring the private configuration trusts (Debian's, as the system's sources do).
pub(crate) const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

/// Returns the cache directory: `$VGSP_CACHE`, default `~/.cache/vgsp`.
///
/// # Errors
///
/// - Neither `VGSP_CACHE` nor `HOME` is set.
pub(crate) fn cache() -> Result<PathBuf, String> {
    if let Some(dir) = env::var_os("VGSP_CACHE") {
        return Ok(PathBuf::from(dir));
    }
    let home = env::var_os("HOME").ok_or("neither VGSP_CACHE nor HOME is set")?;
    Ok(Path::new(&home).join(".cache/vgsp"))
}

/// Returns whether `tree` is a Linux source tree of `major.minor` with nova-core's queue.
pub(crate) fn is_linux(tree: &Path, major: &str, minor: &str) -> bool {
    let Ok(makefile) = fs::read_to_string(tree.join("Makefile")) else {
        return false;
    };
    let has = |line: &str| makefile.lines().any(|l| l.trim() == line);
    has(&format!("VERSION = {major}"))
        && has(&format!("PATCHLEVEL = {minor}"))
        && tree.join("drivers/gpu/nova-core/gsp/cmdq.rs").is_file()
}

/// Returns whether `tree` is a Linux 7.3 source tree with nova-core.
pub(crate) fn is_linux_7_3(tree: &Path) -> bool {
    is_linux(tree, "7", "3")
}

/// A kernel release as a user names it (`7.3`, `7.2`, `7.2.13`, `7.3~rc7`): its Debian
/// package and how a version of it is chosen.
#[derive(Debug, PartialEq, Eq)]
struct Release {
    /// `major`, `minor`.
    series: (String, String),
    /// What was asked for.
    asked: String,
}

impl Release {
    /// Reads a release name.
    ///
    /// # Errors
    ///
    /// - The name is not `MAJOR.MINOR` followed by nothing, `.SUBLEVEL` or `~rcN`.
    fn parse(name: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "`{name}` is no kernel release: name one as Debian versions it, such as 7.3, \
                 7.2, 7.2.13 or 7.3~rc7"
            )
        };
        let (major, rest) = name.split_once('.').ok_or_else(bad)?;
        let end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (minor, tail) = rest.split_at(end);
        let tail_ok = tail.is_empty()
            || tail
                .strip_prefix('.')
                .or_else(|| tail.strip_prefix("~rc"))
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(major) || !digits(minor) || !tail_ok {
            return Err(bad());
        }
        Ok(Self {
            series: (major.into(), minor.into()),
            asked: name.into(),
        })
    }

    /// Returns Debian's package of the release's source.
    fn package(&self) -> String {
        format!("linux-source-{}.{}", self.series.0, self.series.1)
    }

    /// Returns whether the Debian version `version` (`7.2.13-1`, `7.3~rc7-1~exp1`) is this
    /// release: for `MAJOR.MINOR` any version that is no release candidate, else the
    /// version that starts with the name and goes on with no other digit.
    fn matches(&self, version: &str) -> bool {
        let series = format!("{}.{}", self.series.0, self.series.1);
        if self.asked == series {
            return !version.contains("~rc");
        }
        version
            .strip_prefix(&self.asked)
            .is_some_and(|rest| !rest.starts_with(|c: char| c.is_ascii_digit()))
    }
}

/// Returns the versions of `package` the private configuration `opts` knows, newest
/// first (`apt-cache madison`'s order).
fn versions(opts: &[String], package: &str) -> Result<Vec<String>, String> {
    let out = crate::tools::command("apt-cache")?
        .args(opts)
        .args(["madison", package])
        .output()
        .map_err(|e| format!("apt-cache madison {package}: {e}"))?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split('|').nth(1).map(|v| v.trim().to_string()))
        .collect())
}

/// Runs `cmd`, failing with what it was and what it printed.
pub(crate) fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "{cmd:?} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ))
}

/// Returns the system's Debian suite (`bookworm`), from `/etc/os-release`.
///
/// # Errors
///
/// - The file cannot be read, or names no `VERSION_CODENAME`.
pub(crate) fn system_suite() -> Result<String, String> {
    let text =
        fs::read_to_string("/etc/os-release").map_err(|e| format!("/etc/os-release: {e}"))?;
    text.lines()
        .find_map(|l| l.strip_prefix("VERSION_CODENAME="))
        .map(|s| s.trim_matches('"').to_string())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| "/etc/os-release names no VERSION_CODENAME".into())
}

/// Returns the Debian mirror the system's apt sources use.
pub(crate) fn debian_mirror() -> Result<String, String> {
    let mut texts = Vec::new();
    for dir in ["/etc/apt/sources.list.d", "/etc/apt"] {
        let Ok(entries) = fs::read_dir(dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name.ends_with(".sources") || name.ends_with(".list") {
                texts.push(fs::read_to_string(&p).unwrap_or_default());
            }
        }
    }
    // deb822 (`URIs: …`) or one-line (`deb [opts] URI suite …`) entries whose URI is a
    // Debian archive, not its security one.
    for text in &texts {
        for line in text.lines() {
            let line = line.trim();
            let uris = if let Some(rest) = line.strip_prefix("URIs:") {
                rest.split_whitespace().collect::<Vec<_>>()
            } else if let Some(rest) = line.strip_prefix("deb ") {
                rest.split_whitespace()
                    .filter(|w| !w.starts_with('['))
                    .take(1)
                    .collect()
            } else {
                continue;
            };
            if let Some(uri) = uris
                .into_iter()
                .find(|u| u.ends_with("/debian") || u.ends_with("/debian/"))
            {
                return Ok(uri.trim_end_matches('/').to_string());
            }
        }
    }
    Err("no Debian mirror in /etc/apt/sources.list.d or /etc/apt/sources.list".into())
}

/// Makes a private apt configuration in `apt` whose only sources are `sources` (lines
/// of a `sources.list`), with directories `extra` under it too; returns the options
/// that make `apt-get` use it (the system's own sources and state are never touched).
pub(crate) fn private_apt(
    apt: &Path,
    sources: &str,
    extra: &[&str],
) -> Result<Vec<String>, String> {
    for d in ["lists/partial", "cache/archives/partial"]
        .iter()
        .chain(extra)
    {
        fs::create_dir_all(apt.join(d)).map_err(|e| format!("{}: {e}", apt.display()))?;
    }
    let list = apt.join("sources.list");
    fs::write(&list, sources).map_err(|e| format!("{}: {e}", list.display()))?;
    Ok(vec![
        format!("-o=Dir::Etc::sourcelist={}", list.display()),
        "-o=Dir::Etc::sourceparts=/nonexistent".to_string(),
        format!("-o=Dir::State::Lists={}", apt.join("lists").display()),
        format!("-o=Dir::Cache={}", apt.join("cache").display()),
        "-o=APT::Sandbox::User=root".to_string(),
    ])
}

/// Fetches `release`'s source from Debian and unpacks it into `dest`.
fn fetch(cache: &Path, release: &Release, dest: &Path) -> Result<(), String> {
    let apt = cache.join("apt-linux");
    let mirror = debian_mirror()?;
    let list: String = SUITES
        .iter()
        .map(|suite| format!("deb [signed-by={KEYRING}] {mirror} {suite} main\n"))
        .collect();
    let opts = private_apt(&apt, &list, &["debs"])?;
    let package = release.package();
    let debs = apt.join("debs");
    // `linux-source-7.2_7.2.13-1_all.deb`: the version is the second field.
    let deb = |debs: &Path| -> Option<PathBuf> {
        fs::read_dir(debs)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.strip_suffix(".deb"))
                    .and_then(|n| n.strip_prefix(&format!("{package}_")))
                    .and_then(|n| n.split('_').next())
                    .is_some_and(|v| release.matches(&v.replace("%3a", ":")))
            })
    };
    if deb(&debs).is_none() {
        eprintln!(
            "xtask: looking for {} in {mirror} {}",
            release.asked,
            SUITES.join(", ")
        );
        run(crate::tools::command("apt-get")?
            .args(&opts)
            .args(["-qq", "update"]))?;
        let known = versions(&opts, &package)?;
        let version =
            known
                .iter()
                .find(|v| release.matches(v))
                .ok_or_else(|| match known.is_empty() {
                    true => format!("Debian has no {package} in {}", SUITES.join(", ")),
                    false => format!(
                        "Debian's {package} has no version {} (it has {})",
                        release.asked,
                        known.join(", ")
                    ),
                })?;
        eprintln!("xtask: fetching {package} {version} (about 170 MB, once)");
        run(crate::tools::command("apt-get")?
            .args(&opts)
            .args(["-qq", "download", &format!("{package}={version}")])
            .current_dir(&debs))?;
    }
    let deb = deb(&debs).ok_or_else(|| format!("apt-get download left no {package} .deb"))?;
    eprintln!("xtask: unpacking {} (once)", deb.display());
    let staging = dest.with_file_name(format!(
        "{}.tmp",
        dest.file_name()
            .map_or("linux".into(), |n| n.to_string_lossy())
    ));
    let _ = fs::remove_dir_all(&staging);
    fs::create_dir_all(&staging).map_err(|e| format!("{}: {e}", staging.display()))?;
    run(crate::tools::command("dpkg-deb")?
        .arg("-x")
        .arg(&deb)
        .arg(staging.join("deb")))?;
    let tarball = staging
        .join("deb/usr/src")
        .join(format!("{package}.tar.xz"));
    crate::tools::ensure(&["xz"])?;
    run(crate::tools::command("tar")?
        .arg("-xJf")
        .arg(&tarball)
        .arg("-C")
        .arg(&staging)
        .arg("--strip-components=1"))?;
    let _ = fs::remove_dir_all(staging.join("deb"));
    let (major, minor) = &release.series;
    if !is_linux(&staging, major, minor) {
        return Err(format!(
            "{} did not unpack to a Linux {major}.{minor} tree with nova-core",
            deb.display()
        ));
    }
    fs::rename(&staging, dest).map_err(|e| format!("{}: {e}", dest.display()))
}

/// Returns the tree of the kernel release `name` (`7.3`, `7.2`, `7.3~rc7`, ...), fetching
/// Debian's source package of it into the cache (`<cache>/linux-<name>`) if it is not
/// there. The path is canonical.
///
/// # Errors
///
/// - The name is no release, or Debian does not have it (the error says which versions
///   it has).
/// - The fetch or the unpacking fails.
pub(crate) fn linux_tree(name: &str) -> Result<PathBuf, String> {
    let release = Release::parse(name)?;
    let cache = cache()?;
    let tree = cache.join(format!("linux-{name}"));
    let (major, minor) = &release.series;
    // Canonical: the tree is linked from, and a cached tree may be a symbolic link.
    let canonical =
        |tree: &Path| fs::canonicalize(tree).map_err(|e| format!("{}: {e}", tree.display()));
    if is_linux(&tree, major, minor) {
        return canonical(&tree);
    }
    fetch(&cache, &release, &tree).map_err(|e| {
        format!(
            "{e}\ncannot get Linux {name}: tried Debian's {} from {} through a private apt \
             configuration under {}. Unpack a tree yourself and name its directory instead.",
            release.package(),
            SUITES.join(", "),
            cache.join("apt-linux").display()
        )
    })?;
    canonical(&tree)
}

/// `cargo xtask linux RELEASE`: prints the tree's path.
pub(crate) fn linux_command(args: &[String]) -> Result<bool, String> {
    let [name] = args else {
        return Err("usage: cargo xtask linux RELEASE (7.3, 7.2, 7.3~rc7, ...)".into());
    };
    println!("{}", linux_tree(name)?.display());
    Ok(true)
}

/// Returns the tree `--tree` names: a directory, or a release Debian serves
/// ([`linux_tree`]).
///
/// # Errors
///
/// - Neither a directory nor a release Debian has.
pub(crate) fn tree_argument(arg: &Path) -> Result<PathBuf, String> {
    if arg.is_dir() {
        return fs::canonicalize(arg).map_err(|e| format!("--tree {}: {e}", arg.display()));
    }
    let name = arg.to_string_lossy();
    match Release::parse(&name) {
        Ok(_) => linux_tree(&name),
        Err(e) => Err(format!("--tree {name}: no such directory, and {e}")),
    }
}

/// Returns the Linux 7.3 tree, fetching it into the cache if it is not there; the path
/// is canonical.
///
/// # Errors
///
/// What was tried and failed, and how to point the tools at a tree unpacked by hand.
pub fn linux_7_3() -> Result<PathBuf, String> {
    if let Some(tree) = env::var_os("VGSP_LINUX_7_3") {
        let tree = PathBuf::from(tree);
        return if is_linux_7_3(&tree) {
            fs::canonicalize(&tree).map_err(|e| format!("{}: {e}", tree.display()))
        } else {
            Err(format!(
                "VGSP_LINUX_7_3={} is not a Linux 7.3 tree with drivers/gpu/nova-core",
                tree.display()
            ))
        };
    }
    linux_tree(FOLLOWED)
}

/// `cargo xtask linux-7.3`: prints the tree's path.
pub fn linux_7_3_command(args: &[String]) -> Result<bool, String> {
    if !args.is_empty() {
        return Err("usage: cargo xtask linux-7.3".into());
    }
    println!("{}", linux_7_3()?.display());
    Ok(true)
}

/// Runs the tree's `checkpatch.pl --strict` on `patch`; returns its summary line when it
/// is not clean.
fn checkpatch(tree: &Path, patch: &Path) -> Result<Option<String>, String> {
    let out = crate::tools::command("perl")?
        .arg(tree.join("scripts/checkpatch.pl"))
        .args(["--strict", "--no-tree", "--color=never"])
        // A release's tree has no history, so no commit id a `Fixes:` names is known to it.
        .args(["--ignore", "UNKNOWN_COMMIT_ID"])
        .arg(patch)
        .current_dir(tree)
        .output()
        .map_err(|e| format!("cannot run checkpatch.pl: {e}"))?;
    let report = String::from_utf8_lossy(&out.stdout);
    let total = report
        .lines()
        .find(|l| l.starts_with("total: "))
        .unwrap_or("total: (no summary)");
    Ok(
        match total.starts_with("total: 0 errors, 0 warnings, 0 checks") {
            true => None,
            false => Some(format!("{total}\n{report}")),
        },
    )
}

/// Checks the cover letter against the series: its subject counts the patches, and every
/// address the tree's `get_maintainer.pl` gives for the series is among its recipients.
/// Returns what is wrong, if anything.
fn check_cover_letter(
    tree: &Path,
    cover: &Path,
    patches: &[PathBuf],
) -> Result<Vec<String>, String> {
    let text = fs::read_to_string(cover).map_err(|e| format!("{}: {e}", cover.display()))?;
    let mut wrong = Vec::new();
    // As `git format-patch` numbers them: zero-padded to the width of the count.
    let count = patches.len();
    let number = format!("{:0width$}/{count}]", 0, width = count.to_string().len());
    let subject = text
        .lines()
        .find_map(|l| l.strip_prefix("Subject: [PATCH "))
        .unwrap_or_default();
    // `[PATCH 0/N]`, or `[PATCH vK 0/N]` for a version after the first.
    let version = subject
        .split_once(' ')
        .and_then(|(v, rest)| Some((v.strip_prefix('v')?.parse::<u32>().ok()?, rest)));
    match version {
        Some((_, rest)) if rest.starts_with(&number) => {}
        None if subject.starts_with(&number) => {}
        _ => wrong.push(format!(
            "its subject does not start with `[PATCH {number}` or `[PATCH vN {number}`"
        )),
    }
    // A new version says what changed, and what it is based on.
    if let Some((v, _)) = version {
        for needed in [format!("Changes in v{v}:"), String::from("base-commit: ")] {
            if !text.contains(&needed) {
                wrong.push(format!("a v{v} without `{needed}`"));
            }
        }
    }
    let out = crate::tools::command("perl")?
        .arg(tree.join("scripts/get_maintainer.pl"))
        .args(["--no-git", "--no-git-fallback", "--no-rolestats"])
        .args(patches)
        .current_dir(tree)
        .output()
        .map_err(|e| format!("cannot run get_maintainer.pl: {e}"))?;
    let headers: String = text.split("\n\n").next().unwrap_or_default().to_string();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let address = line
            .rsplit_once('<')
            .map_or(line, |(_, a)| a.trim_end_matches('>'));
        if !address.is_empty() && !headers.contains(address) {
            wrong.push(format!(
                "get_maintainer.pl names {line}, not among its To:/Cc:"
            ));
        }
    }
    Ok(wrong)
}

/// Boots `image` with nova-core's KUnit suites and requires every case of them to pass;
/// returns what passed, as a few words.
///
/// # Errors
///
/// The boot fails, or a case fails (named).
fn kunit_cases(repo: &Path, image: &Path) -> Result<String, String> {
    let dir = repo.join("target/upstream/kunit");
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let suites = crate::kunit_boot::run(image, &dir.join("boot.log"))?;
    let failed: Vec<String> = suites
        .iter()
        .flat_map(|s| s.failed.iter().map(move |c| format!("{}.{c}", s.name)))
        .collect();
    if !failed.is_empty() {
        return Err(format!(
            "KUnit cases fail in the tree's kernel: {} (console: {})",
            failed.join(", "),
            dir.join("boot.log").display()
        ));
    }
    let cases: usize = suites.iter().map(|s| s.passed).sum();
    let names: Vec<&str> = suites.iter().map(|s| s.name.as_str()).collect();
    let cases = match cases {
        1 => String::from("1 case"),
        n => format!("{n} cases"),
    };
    Ok(format!(
        "KUnit in its kernel: {cases} of {} passed",
        names.join(", ")
    ))
}

/// `cargo xtask check-patches [--tree DIR] [--no-build]`.
pub fn check_patches(args: &[String]) -> Result<bool, String> {
    let usage = "usage: cargo xtask check-patches [--tree DIR] [--no-build]";
    let (mut tree, mut build) = (None, true);
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--tree" => tree = Some(PathBuf::from(args.next().ok_or(usage)?)),
            "--no-build" => build = false,
            _ => return Err(usage.into()),
        }
    }
    let tree = match tree {
        Some(tree) => tree_argument(&tree)?,
        None => linux_7_3()?,
    };
    if !tree.join("scripts/checkpatch.pl").is_file() {
        return Err(format!("{} has no scripts/checkpatch.pl", tree.display()));
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("xtask is not inside the repository")?
        .to_path_buf();
    let dir = repo.join("upstream");
    let patches = crate::upstream::series(&dir)?;
    let mut cover_wrong = Vec::new();
    // Where each series ends in `patches`: its cases must pass in the kernel built there.
    let mut ends = Vec::new();
    for name in crate::upstream::SERIES {
        let series = crate::upstream::series_in(&dir.join(name))?;
        let cover = dir.join(name).join(crate::upstream::COVER_LETTER);
        let wrong = match cover.is_file() {
            false => vec![format!("there is no {}", cover.display())],
            true => check_cover_letter(&tree, &cover, &series)?,
        };
        for w in &wrong {
            println!("upstream series {name}: the cover letter: {w}");
        }
        cover_wrong.extend(wrong);
        ends.push(ends.last().copied().unwrap_or(0) + series.len());
    }
    let mut clean = 0;
    for (k, patch) in patches.iter().enumerate() {
        let patch = fs::canonicalize(patch).map_err(|e| format!("{}: {e}", patch.display()))?;
        let name = patch
            .strip_prefix(&dir)
            .unwrap_or(&patch)
            .display()
            .to_string();
        // In order: on the tree with the patches before it (the first on the tree itself).
        let prefix = &patches[..=k];
        let scratch = crate::upstream::patched_tree(&repo, &tree, prefix);
        let style = checkpatch(&tree, &patch)?;
        let mut said = Vec::new();
        if let Some(report) = &style {
            said.push(format!("checkpatch --strict: {report}"));
        }
        let mut kunit = None;
        match &scratch {
            Err(e) => said.push(format!("does not apply after the patches before it: {e}")),
            Ok(scratch) => {
                let crate_root = scratch.join("drivers/gpu/nova-core/nova_core.rs");
                let fmt = crate::tools::command("rustfmt")?
                    .args(["--check", "--edition", "2021", "--config-path"])
                    .arg(tree.join(".rustfmt.toml"))
                    .arg(&crate_root)
                    .output()
                    .map_err(|e| format!("cannot run rustfmt: {e}"))?;
                if !fmt.status.success() {
                    said.push(format!(
                        "the tree's rustfmt: {}",
                        crate::kernel::last_lines(&String::from_utf8_lossy(&fmt.stdout), 20)
                    ));
                }
                if build && said.is_empty() {
                    let label = format!("upstream with the series up to patch {}", k + 1);
                    // A series' last patch: its kernel's image boots its KUnit suites.
                    let last = ends.contains(&(k + 1));
                    match crate::upstream::build_in_kernel(
                        &tree,
                        scratch,
                        &label,
                        last,
                        crate::api::Arch::X86_64,
                    ) {
                        Err(e) => said.push(format!("the tree with it does not build clean: {e}")),
                        Ok(built) => {
                            if let Some(image) = built.image() {
                                match kunit_cases(&repo, image) {
                                    Ok(text) => kunit = Some(text),
                                    Err(e) => said.push(e),
                                }
                            }
                        }
                    }
                }
            }
        }
        if said.is_empty() {
            clean += 1;
            let built = if build {
                ", builds in the tree without a warning"
            } else {
                ""
            };
            let kunit = kunit.map(|k| format!("; {k}")).unwrap_or_default();
            println!(
                "upstream patch {name}: applies in order, checkpatch --strict and rustfmt clean{built}{kunit}"
            );
        } else {
            for s in said {
                println!("upstream patch {name}: {s}");
            }
        }
    }
    let letter = match cover_wrong.is_empty() {
        true => "the cover letter right",
        false => "the cover letter wrong",
    };
    println!(
        "upstream patches: {clean} clean of {}, {letter}",
        patches.len()
    );
    Ok(clean == patches.len() && cover_wrong.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_release_names_its_debian_package() {
        assert_eq!(Release::parse("7.2").unwrap().package(), "linux-source-7.2");
        assert_eq!(
            Release::parse("7.3~rc7").unwrap().package(),
            "linux-source-7.3"
        );
        assert_eq!(
            Release::parse("7.2.13").unwrap().package(),
            "linux-source-7.2"
        );
    }

    #[test]
    fn a_name_that_is_no_release_is_refused() {
        for bad in ["7", "x.3", "7.3-rc7", "7.3~rc", "7.3.", "../7.3", "7.3/x"] {
            assert!(Release::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_series_chooses_a_version_that_is_no_release_candidate() {
        let r = Release::parse("7.3").unwrap();
        assert!(r.matches("7.3.4-1~bpo13+1"));
        assert!(!r.matches("7.3~rc7-1~exp1"));
    }

    #[test]
    fn a_full_name_chooses_its_own_version_only() {
        let rc = Release::parse("7.3~rc7").unwrap();
        assert!(rc.matches("7.3~rc7-1~exp1"));
        assert!(!rc.matches("7.3.4-1~bpo13+1"));
        let point = Release::parse("7.2.1").unwrap();
        assert!(point.matches("7.2.1-1"));
        assert!(!point.matches("7.2.13-1"));
    }
}
