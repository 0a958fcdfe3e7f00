// SPDX-License-Identifier: GPL-2.0

//! The suite lists against the sources: `tests/run.sh` and `tests/kernel.sh` check the
//! suites `--list-suites` names, so these tests make sure that list is every suite of
//! `tests/kunit`, and a renamed or added suite cannot drop out of the checks.

use std::{
    collections::BTreeSet,
    fs,
    path::Path,
    string::String,
    vec::Vec, //
};

use super::{
    parse_args,
    suite_names,
    Options, //
};

/// The line that makes a file of `tests/kunit` kernel-only.
const KERNEL_ONLY_ATTR: &str = "#![cfg(CONFIG_VGSP_IVSHMEM)]";
/// The line that makes a file of `tests/kunit` host-only.
const HOST_ONLY_ATTR: &str = "#![cfg(not(CONFIG_RUST))]";

/// Where a suite runs, by the attribute its file carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Runs {
    /// No attribute: on the host and in a kernel.
    Everywhere,
    /// [`KERNEL_ONLY_ATTR`].
    KernelOnly,
    /// [`HOST_ONLY_ATTR`].
    HostOnly,
}

/// The suites declared in `tests/kunit/*.rs` by `#[kunit_tests(name)]`, with where they
/// run.
fn declared_suites() -> Vec<(String, Runs)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kunit");
    let mut suites = Vec::new();
    let entries = fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_none_or(|ext| ext != "rs") {
            continue;
        }
        let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let has = |attr: &str| text.lines().any(|line| line.trim() == attr);
        let runs = match (has(KERNEL_ONLY_ATTR), has(HOST_ONLY_ATTR)) {
            (false, false) => Runs::Everywhere,
            (true, false) => Runs::KernelOnly,
            (false, true) => Runs::HostOnly,
            (true, true) => panic!("{}: both kernel-only and host-only", path.display()),
        };
        for line in text.lines() {
            let Some(rest) = line.trim().strip_prefix("#[kunit_tests(") else {
                continue;
            };
            let name = rest
                .strip_suffix(")]")
                .unwrap_or_else(|| panic!("{}: cannot read '{line}'", path.display()));
            suites.push((String::from(name.trim()), runs));
        }
    }
    suites
}

/// The names of `declared` that run as one of `runs`.
fn names<'a>(declared: &'a [(String, Runs)], runs: &[Runs]) -> BTreeSet<&'a str> {
    declared
        .iter()
        .filter(|(_, r)| runs.contains(r))
        .map(|(name, _)| name.as_str())
        .collect()
}

/// Returns `list` as a set, checking no name is in it twice.
fn set<'a>(list: impl Iterator<Item = &'a str>) -> BTreeSet<&'a str> {
    let list: Vec<&str> = list.collect();
    let set: BTreeSet<&str> = list.iter().copied().collect();
    assert_eq!(set.len(), list.len(), "a suite listed twice");
    set
}

#[test]
fn kernel_only_list_matches_the_kernel_only_files() {
    let declared = declared_suites();
    let listed = set(vgsp_kunit::KERNEL_ONLY_SUITES.iter().copied());
    assert_eq!(listed, names(&declared, &[Runs::KernelOnly]));
}

#[test]
fn host_only_list_matches_the_host_only_files() {
    let declared = declared_suites();
    let listed = set(vgsp_kunit::HOST_ONLY_SUITES.iter().copied());
    assert_eq!(listed, names(&declared, &[Runs::HostOnly]));
}

#[test]
fn host_list_is_every_suite_but_the_kernel_only_ones() {
    let declared = declared_suites();
    let listed = set(suite_names(false));
    assert_eq!(
        listed,
        names(&declared, &[Runs::Everywhere, Runs::HostOnly])
    );
}

#[test]
fn kernel_list_is_every_suite_but_the_host_only_ones() {
    let declared = declared_suites();
    let listed = set(suite_names(true));
    assert_eq!(
        listed,
        names(&declared, &[Runs::Everywhere, Runs::KernelOnly])
    );
}

#[test]
fn kernel_list_is_the_host_list_in_order_then_the_kernel_only_suites() {
    let host: Vec<&str> = suite_names(false)
        .filter(|name| !vgsp_kunit::HOST_ONLY_SUITES.contains(name))
        .collect();
    let kernel: Vec<&str> = suite_names(true).collect();
    assert_eq!(kernel[..host.len()], host[..]);
    assert_eq!(kernel[host.len()..], vgsp_kunit::KERNEL_ONLY_SUITES[..]);
}

#[test]
fn parses_list_suites_options() {
    let args = |words: &[&str]| parse_args(words.iter().map(|w| String::from(*w)));
    assert_eq!(args(&[]), Ok(Options::default()));
    assert_eq!(
        args(&["--list-suites", "--kernel"]),
        Ok(Options {
            list_suites: true,
            kernel: true,
            ..Options::default()
        })
    );
    assert_eq!(args(&["--kernel"]), Err(String::from("--kernel")));
    assert_eq!(args(&["--list"]), Err(String::from("--list")));
}
