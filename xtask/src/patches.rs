// SPDX-License-Identifier: GPL-2.0

//! `cargo xtask check-patches [--tree DIR] [--no-build]`: the series in `upstream/` (its
//! cover letter `0000-cover-letter.patch`, then the patches in order), checked against
//! the Linux 7.3 tree ([`linux::linux_7_3`]) or the one `--tree` names. Every patch must
//! apply to the tree after the patches before it (`git apply`), pass the
//! tree's `scripts/checkpatch.pl --strict` with no error, warning or check, leave
//! nova-core clean under the tree's `rustfmt` configuration, and (without `--no-build`)
//! leave the tree building nova-core with `CONFIG_NOVA_CORE=y` without a warning: every
//! prefix of the series is bisectable. The cover letter must count the patches in its
//! subject and name among its recipients everyone the tree's `scripts/get_maintainer.pl`
//! names for the series. The last line is `upstream patches: N clean of N, the cover
//! letter right`.

use std::{
    fs,
    path::{
        Path,
        PathBuf, //
    },
};

use crate::{
    kbuild::Arch,
    kunit_boot,
    linux,
    upstream,
    util::{
        self,
        process::last_lines,
        tools, //
    }, //
};

/// Runs the tree's `checkpatch.pl --strict` on `patch`; returns its summary line when it
/// is not clean.
fn checkpatch(tree: &Path, patch: &Path) -> Result<Option<String>, String> {
    let out = tools::command("perl")?
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
    let out = tools::command("perl")?
        .arg(tree.join("scripts/get_maintainer.pl"))
        .args(["--no-git", "--no-git-fallback", "--no-rolestats"])
        .args(patches)
        .current_dir(tree)
        .output()
        .map_err(|e| format!("cannot run get_maintainer.pl: {e}"))?;
    if !out.status.success() {
        // With no names, no recipient would be checked: not a right letter.
        return Err(format!(
            "get_maintainer.pl failed ({}): {}",
            out.status,
            last_lines(&String::from_utf8_lossy(&out.stderr), 10)
        ));
    }
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
    let suites = kunit_boot::run(image, &dir.join("boot.log"))?;
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
pub(crate) fn check_patches(args: &[String]) -> Result<bool, String> {
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
        Some(tree) => linux::tree_argument(&tree)?,
        None => linux::linux_7_3()?,
    };
    if !tree.join("scripts/checkpatch.pl").is_file() {
        return Err(format!("{} has no scripts/checkpatch.pl", tree.display()));
    }
    let repo = util::repo()?;
    let dir = repo.join("upstream");
    let patches = upstream::series(&dir)?;
    let mut cover_wrong = Vec::new();
    // Where each series ends in `patches`: its cases must pass in the kernel built there.
    let mut ends = Vec::new();
    for name in upstream::SERIES {
        let series = upstream::series_in(&dir.join(name))?;
        let cover = dir.join(name).join(upstream::COVER_LETTER);
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
        let scratch = upstream::patched_tree(&repo, &tree, prefix);
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
                let fmt = tools::command("rustfmt")?
                    .args(["--check", "--edition", "2021", "--config-path"])
                    .arg(tree.join(".rustfmt.toml"))
                    .arg(&crate_root)
                    .output()
                    .map_err(|e| format!("cannot run rustfmt: {e}"))?;
                if !fmt.status.success() {
                    said.push(format!(
                        "the tree's rustfmt: {}{}",
                        last_lines(&String::from_utf8_lossy(&fmt.stdout), 20),
                        last_lines(&String::from_utf8_lossy(&fmt.stderr), 20)
                    ));
                }
                if build && said.is_empty() {
                    let label = format!("upstream with the series up to patch {}", k + 1);
                    // A series' last patch: its kernel's image boots its KUnit suites.
                    let last = ends.contains(&(k + 1));
                    match upstream::build_in_kernel(&tree, scratch, &label, last, Arch::X86_64) {
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
