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
const KERNEL_ONLY_ATTR: &str = "#![cfg(CONFIG_RUST)]";

/// The suites declared in `tests/kunit/*.rs` by `#[kunit_tests(name)]`, as (name,
/// kernel-only) pairs: kernel-only if the file carries [`KERNEL_ONLY_ATTR`].
fn declared_suites() -> Vec<(String, bool)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kunit");
    let mut suites = Vec::new();
    let entries = fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_none_or(|ext| ext != "rs") {
            continue;
        }
        let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let kernel_only = text.lines().any(|line| line.trim() == KERNEL_ONLY_ATTR);
        for line in text.lines() {
            let Some(rest) = line.trim().strip_prefix("#[kunit_tests(") else {
                continue;
            };
            let name = rest
                .strip_suffix(")]")
                .unwrap_or_else(|| panic!("{}: cannot read '{line}'", path.display()));
            suites.push((String::from(name.trim()), kernel_only));
        }
    }
    suites
}

/// The names of `declared` whose kernel-only flag is `kernel_only`.
fn names(declared: &[(String, bool)], kernel_only: bool) -> BTreeSet<&str> {
    declared
        .iter()
        .filter(|(_, k)| *k == kernel_only)
        .map(|(name, _)| name.as_str())
        .collect()
}

#[test]
fn kernel_only_list_matches_cfg_config_rust_files() {
    let declared = declared_suites();
    let listed: BTreeSet<&str> = vgsp_kunit::KERNEL_ONLY_SUITES.iter().copied().collect();
    assert_eq!(
        listed.len(),
        vgsp_kunit::KERNEL_ONLY_SUITES.len(),
        "a name listed twice"
    );
    assert_eq!(listed, names(&declared, true));
}

#[test]
fn host_list_is_every_suite_outside_cfg_config_rust_files() {
    let declared = declared_suites();
    let listed: BTreeSet<&str> = suite_names(false).collect();
    assert_eq!(
        listed.len(),
        suite_names(false).count(),
        "a suite listed twice"
    );
    assert_eq!(listed, names(&declared, false));
}

#[test]
fn kernel_list_is_host_list_then_kernel_only_suites() {
    let host: Vec<&str> = suite_names(false).collect();
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
