// SPDX-License-Identifier: GPL-2.0

//! Linux 7.3, the tree the project follows, and the other releases: fetching them the
//! Debian way.
//!
//! `cargo xtask linux-7.3` makes sure a pristine Linux 7.3 tree is unpacked in the cache
//! (`$VGSP_CACHE`, default `~/.cache/vgsp`, as `linux-7.3/`) and prints its path. The
//! source comes from Debian's `linux-source-7.3` package of trixie-backports, fetched
//! with a private apt configuration under the cache (the system's apt sources are never
//! changed), from the mirror the system's own sources name. `VGSP_LINUX_7_3=<tree>`
//! points everything at a tree unpacked by hand instead.
//!
//! `cargo xtask linux RELEASE` does the same for any release Debian serves.

use std::{
    env, fs,
    path::{
        Path,
        PathBuf, //
    },
};

use crate::util::{
    self,
    debian::{
        debian_mirror,
        private_apt,
        KEYRING, //
    },
    process::run,
    tools, //
};

/// The suites of Debian's archive searched for a kernel's source, beside the system's own:
/// backports of the next stable release, unstable, experimental.
const SUITES: &[&str] = &["trixie-backports", "sid", "experimental"];
/// The release the project follows.
const FOLLOWED: &str = "7.3";

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
    let out = tools::command("apt-cache")?
        .args(opts)
        .args(["madison", package])
        .output()
        .map_err(|e| format!("apt-cache madison {package}: {e}"))?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split('|').nth(1).map(|v| v.trim().to_string()))
        .collect())
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
        run(tools::command("apt-get")?
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
        run(tools::command("apt-get")?
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
    run(tools::command("dpkg-deb")?
        .arg("-x")
        .arg(&deb)
        .arg(staging.join("deb")))?;
    let tarball = staging
        .join("deb/usr/src")
        .join(format!("{package}.tar.xz"));
    tools::ensure(&["xz"])?;
    run(tools::command("tar")?
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
    let cache = util::cache()?;
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
pub(crate) fn linux_7_3() -> Result<PathBuf, String> {
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
pub(crate) fn linux_7_3_command(args: &[String]) -> Result<bool, String> {
    if !args.is_empty() {
        return Err("usage: cargo xtask linux-7.3".into());
    }
    println!("{}", linux_7_3()?.display());
    Ok(true)
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
