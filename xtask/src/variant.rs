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
//! without any `target` directory. The benchmark binary of a variant is told its name
//! at build time (`VGSP_BENCH_VARIANT`).

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
    if dir.exists() {
        fs::remove_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    for f in FILES {
        fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
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
