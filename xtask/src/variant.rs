// SPDX-License-Identifier: GPL-2.0

//! The benchmark's barrier variants, as copies of the source.
//!
//! `cargo xtask variant-tree NAME DIR` writes a copy of the workspace's sources to `DIR`
//! with the barriers of variant `NAME` in place of the design's, for `vgsp-bench
//! --variants` and `tools/bench/barriers.sh` to build there. The variants are made from
//! the same ordering points and mutations as `cargo xtask ordering-mutants` makes its
//! mutants, applied to the text instead of at run time, so no build of the driver carries
//! a variant of its own:
//!
//! - `acq-rel`: the design, unchanged.
//! - `all-full`: every `dma_mb(Read)` and `dma_mb(Write)` of the driver and the virtual
//!   GSP made `dma_mb(Full)`.
//! - `seed`: the seed's pre-fix shape, the mutant the ordering proof kills last: the
//!   write-pointer barrier moved after the pointer store (and made `Full`), no barrier
//!   after loading the GSP's write pointer.
//!
//! The copy holds the workspace's manifest and lock file and its source directories,
//! without any `target` directory, and a `.vgsp-variant-tree` file: an existing `DIR` is
//! replaced only if it has that file (or nothing), and never if it holds the repository.
//! The benchmark binary of a variant is told its name at build time
//! (`VGSP_BENCH_VARIANT`).

use std::{
    collections::BTreeMap,
    fs,
    path::Path, //
};

use crate::{
    mutants::{
        all_mutants,
        Point, //
    },
    util, //
};

/// The variants, the design first.
pub(crate) const VARIANTS: &[&str] = &["acq-rel", "all-full", "seed"];

/// What the copy holds of the workspace: files, then directories copied whole.
const FILES: &[&str] = &["Cargo.toml", "Cargo.lock"];
const DIRS: &[&str] = &[
    ".cargo",
    "drivers",
    "kernel-shim",
    "tests",
    "tools",
    "xtask",
];

/// One edit of one source line (1-based).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Edit {
    /// The barrier on this line is removed.
    Delete(usize),
    /// The barrier on this line becomes `Full`.
    Full(usize),
    /// A `Full` barrier is inserted after this line (a shared access).
    FullAfter(usize),
}

/// The spelling of a `Full` barrier that needs no import.
const FULL: &str = "kernel::sync::barrier::dma_mb(kernel::sync::barrier::Full);";

/// The edits of variant `name`, by file.
///
/// # Errors
///
/// If `name` is no variant, or the ordering points do not have the seed's shape.
fn edits(root: &Path, name: &str) -> Result<BTreeMap<String, Vec<Edit>>, String> {
    let (points, mutants) = all_mutants(root)?;
    let mut by_file: BTreeMap<String, Vec<Edit>> = BTreeMap::new();
    match name {
        "acq-rel" => {}
        "all-full" => {
            for Point {
                file,
                line,
                flavour,
                ..
            } in &points
            {
                if *flavour != "Full" {
                    by_file
                        .entry(file.clone())
                        .or_default()
                        .push(Edit::Full(*line));
                }
            }
        }
        "seed" => {
            let seed = mutants
                .iter()
                .find(|m| m.kind == "seed")
                .ok_or("no seed mutant")?;
            for item in seed.spec.split(',') {
                let (file, edits) = parse(item)?;
                by_file.entry(file.to_string()).or_default().extend(edits);
            }
        }
        other => {
            return Err(format!(
                "no variant {other}: the variants are {}",
                VARIANTS.join(", ")
            ))
        }
    }
    Ok(by_file)
}

/// Parses one mutation of the seed's spec (`FILE:LINE:delete` or
/// `FILE:LINE:after-full:FILE:LINE`, the access in the barrier's own file).
fn parse(item: &str) -> Result<(&str, Vec<Edit>), String> {
    let bad = || format!("cannot apply the mutation {item} to the source");
    let mut parts = item.split(':');
    let file = parts.next().ok_or_else(bad)?;
    let line: usize = parts.next().and_then(|l| l.parse().ok()).ok_or_else(bad)?;
    match (parts.next(), parts.next(), parts.next()) {
        (Some("delete"), None, None) => Ok((file, vec![Edit::Delete(line)])),
        (Some("after-full"), Some(f), Some(at)) if f == file => {
            let at = at.parse().map_err(|_| bad())?;
            Ok((file, vec![Edit::Delete(line), Edit::FullAfter(at)]))
        }
        _ => Err(bad()),
    }
}

/// Applies `edits` to `text`, the file `file`.
fn apply(file: &str, text: &str, edits: &[Edit]) -> Result<String, String> {
    let lines: Vec<&str> = text.lines().collect();
    let barrier = |n: usize| -> Result<&str, String> {
        lines
            .get(n.wrapping_sub(1))
            .copied()
            .filter(|l| l.trim_start().starts_with("dma_mb("))
            .ok_or_else(|| format!("{file}:{n} is not a barrier"))
    };
    let mut out = String::with_capacity(text.len() + 128);
    for (i, line) in lines.iter().enumerate() {
        let n = i + 1;
        if edits.contains(&Edit::Delete(n)) {
            barrier(n)?;
            continue;
        }
        if edits.contains(&Edit::Full(n)) {
            let b = barrier(n)?;
            let indent = &b[..b.len() - b.trim_start().len()];
            out.push_str(&format!("{indent}{FULL}\n"));
            continue;
        }
        out.push_str(line);
        out.push('\n');
        if edits.contains(&Edit::FullAfter(n)) {
            if !line.trim_end().ends_with(';') {
                return Err(format!("{file}:{n} is not one statement"));
            }
            let indent = &line[..line.len() - line.trim_start().len()];
            out.push_str(&format!("{indent}{FULL}\n"));
        }
    }
    Ok(out)
}

/// The file that marks a directory as a variant tree, which a later `variant-tree` may
/// replace.
const MARK: &str = ".vgsp-variant-tree";

/// Removes `dir` if it is an earlier variant tree; an empty or absent one is fine.
///
/// # Errors
///
/// - `dir` holds the repository, or is a directory with files and no [`MARK`]: nothing is
///   removed, and the error says why.
fn clear(dir: &Path, repo: &Path) -> Result<(), String> {
    let mut entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(_) if !dir.is_dir() && dir.exists() => {
            return Err(format!("{} exists and is not a directory", dir.display()))
        }
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    };
    let (full, repo) = (fs::canonicalize(dir), fs::canonicalize(repo));
    if let (Ok(full), Ok(repo)) = (full, repo) {
        if repo.starts_with(&full) {
            return Err(format!(
                "{} holds the repository: name a directory of its own",
                dir.display()
            ));
        }
    }
    if entries.next().is_none() {
        return Ok(());
    }
    if !dir.join(MARK).is_file() {
        return Err(format!(
            "{} has files and is not a variant tree (no {MARK}): name a new or empty directory, \
             or remove it if an older xtask made it",
            dir.display()
        ));
    }
    fs::remove_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
}

/// `cargo xtask variant-tree NAME DIR`.
///
/// # Errors
///
/// A wrong command line, a variant that cannot be made, or a copy that fails.
pub(crate) fn variant_tree(args: &[String]) -> Result<bool, String> {
    let root = &util::repo()?;
    let [name, dir] = args else {
        return Err(format!(
            "usage: cargo xtask variant-tree {} DIR",
            VARIANTS.join("|")
        ));
    };
    let edits = edits(root, name)?;
    let dir = Path::new(dir);
    clear(dir, root)?;
    fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // First: a copy cut short is still a variant tree, which the next run replaces.
    fs::write(dir.join(MARK), name).map_err(|e| format!("{}: {e}", dir.display()))?;
    for f in FILES {
        fs::copy(root.join(f), dir.join(f)).map_err(|e| format!("{f}: {e}"))?;
    }
    for d in DIRS {
        util::copy_dir(&root.join(d), &dir.join(d), &["target"])?;
    }
    for (file, edits) in &edits {
        let text = fs::read_to_string(root.join(file)).map_err(|e| format!("{file}: {e}"))?;
        fs::write(dir.join(file), apply(file, &text, edits)?)
            .map_err(|e| format!("{file}: {e}"))?;
    }
    let changed: usize = edits.values().map(Vec::len).sum();
    println!(
        "variant {name}: {changed} edits in {} files, at {}",
        edits.len(),
        dir.display()
    );
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Returns a new empty directory for one test.
    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-variant-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_directory_with_files_and_no_mark_is_left_alone() {
        let dir = scratch("unmarked");
        fs::write(dir.join("precious"), "x").unwrap();
        let e = clear(&dir, Path::new("/nonexistent-repo")).unwrap_err();
        assert!(e.contains("not a variant tree"), "{e}");
        assert!(dir.join("precious").is_file());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_directory_holding_the_repository_is_refused() {
        let dir = scratch("holds-repo");
        let repo = dir.join("repo");
        fs::create_dir_all(&repo).unwrap();
        fs::write(dir.join(MARK), "seed").unwrap();
        let e = clear(&dir, &repo).unwrap_err();
        assert!(e.contains("holds the repository"), "{e}");
        assert!(repo.is_dir());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_absent_or_empty_directory_is_fine() {
        let dir = scratch("empty");
        clear(&dir, Path::new("/nonexistent-repo")).unwrap();
        assert!(dir.is_dir());
        fs::remove_dir_all(&dir).unwrap();
        clear(&dir, Path::new("/nonexistent-repo")).unwrap();
    }

    #[test]
    fn a_file_in_its_place_is_refused() {
        let dir = scratch("file");
        let file = dir.join("plain");
        fs::write(&file, "x").unwrap();
        let e = clear(&file, Path::new("/nonexistent-repo")).unwrap_err();
        assert!(e.contains("not a directory"), "{e}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_earlier_variant_tree_is_replaced() {
        let dir = scratch("marked");
        fs::write(dir.join(MARK), "seed").unwrap();
        clear(&dir, Path::new("/nonexistent-repo")).unwrap();
        assert!(!dir.exists());
    }

    const TEXT: &str =
        "fn f() {\n    let p = load();\n    dma_mb(Write);\n    io_write!(m, .p, v);\n}\n";

    #[test]
    fn a_seed_move_deletes_the_barrier_and_puts_a_full_one_after_the_store() {
        let (file, edits) = parse("a.rs:3:after-full:a.rs:4").unwrap();
        assert_eq!(file, "a.rs");
        let out = apply(file, TEXT, &edits).unwrap();
        assert_eq!(
            out,
            format!("fn f() {{\n    let p = load();\n    io_write!(m, .p, v);\n    {FULL}\n}}\n")
        );
    }

    #[test]
    fn all_full_replaces_the_flavour_in_place() {
        let out = apply("a.rs", TEXT, &[Edit::Full(3)]).unwrap();
        assert!(out.contains(&format!("    {FULL}\n    io_write!")));
        assert!(!out.contains("Write)"));
    }

    #[test]
    fn an_edit_of_a_line_that_is_no_barrier_is_refused() {
        assert!(apply("a.rs", TEXT, &[Edit::Delete(2)]).is_err());
    }
}
