// SPDX-License-Identifier: GPL-2.0

//! `vgsp-litmus [--check] FILE|DIR...`: decides C litmus tests (LKMM's format) with the
//! contract checker and prints herd7's line for each, `Observation NAME
//! Never|Sometimes|Always P N`; a test outside the subset is refused with the construct
//! named (`Refused NAME: ...`). A directory is read recursively for `*.litmus` files.
//!
//! With `--check`, each verdict is compared with the test's own `Result:` line: a test
//! agrees, is a deliberate difference (listed in [`DELIBERATE`] with its reason), is
//! skipped (outside the subset, or no `Result:` line), or disagrees. The counts are
//! printed last, `litmus: N run, A agree, D deliberately different, S skipped, X
//! disagree`, and the exit status is 1 if any test disagrees.
//!
//! Exit status 2: a file cannot be read.

use std::{
    env, fs,
    path::{
        Path,
        PathBuf, //
    },
    process::ExitCode,
};

use vgsp_model::litmus::Test;

/// The kernel's tests whose `Result:` the contract deliberately does not reproduce, with
/// the reason: the contract is the DMA contract, not LKMM.
const DELIBERATE: &[(&str, &str)] = &[
    (
        "LB+fencembonceonce+ctrlonceonce",
        "a control dependency: LKMM honours it, the contract honours none",
    ),
    (
        "LB+unlocklockonceonce+poacquireonce",
        "an unlock and a lock on one CPU: LKMM orders across them, the contract credits a \
         CPU's lock with nothing towards another observer by itself",
    ),
    (
        "MP+unlocklockonceonce+fencermbonceonce",
        "an unlock and a lock on one CPU: LKMM orders across them, the contract credits a \
         CPU's lock with nothing towards another observer by itself",
    ),
    (
        "Z6.0+pooncelock+pooncelock+pombonce",
        "LKMM is not multi-copy atomic; the contract is (arm64 is, and a coherent device \
         is assumed to be): a store seen by one CPU is seen by all",
    ),
    (
        "Z6.0+pooncerelease+poacquirerelease+fencembonceonce",
        "LKMM is not multi-copy atomic; the contract is (arm64 is, and a coherent device \
         is assumed to be): a store seen by one CPU is seen by all",
    ),
];

fn files(arg: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if arg.is_dir() {
        let mut entries: Vec<PathBuf> = fs::read_dir(arg)?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()?;
        entries.sort();
        for e in entries {
            if e.is_dir() || e.extension().is_some_and(|x| x == "litmus") {
                files(&e, out)?;
            }
        }
    } else {
        out.push(arg.to_path_buf());
    }
    Ok(())
}

fn main() -> ExitCode {
    let mut check = false;
    let mut paths = Vec::new();
    for a in env::args().skip(1) {
        match a.as_str() {
            "--check" => check = true,
            _ => paths.push(PathBuf::from(a)),
        }
    }
    if paths.is_empty() {
        eprintln!("usage: vgsp-litmus [--check] FILE|DIR...");
        return ExitCode::from(2);
    }
    let mut all = Vec::new();
    for p in &paths {
        if let Err(e) = files(p, &mut all) {
            eprintln!("vgsp-litmus: {}: {e}", p.display());
            return ExitCode::from(2);
        }
    }
    let (mut run, mut agree, mut deliberate, mut skipped, mut disagree) = (0, 0, 0, 0, 0);
    for file in &all {
        let text = match fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("vgsp-litmus: {}: {e}", file.display());
                return ExitCode::from(2);
            }
        };
        let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("?");
        let test = match Test::parse(&text) {
            Ok(t) => t,
            Err(why) => {
                println!("Refused {stem}: {why}");
                skipped += 1;
                continue;
            }
        };
        let seen = match test.decide() {
            Ok(o) => o,
            Err(why) => {
                println!("Refused {}: {why}", test.name);
                skipped += 1;
                continue;
            }
        };
        println!("{seen}");
        run += 1;
        if !check {
            continue;
        }
        let Some(want) = test.result else {
            println!("  skipped: no Result: line");
            skipped += 1;
            run -= 1;
            continue;
        };
        if want == seen.verdict {
            agree += 1;
        } else if let Some((_, why)) = DELIBERATE.iter().find(|(n, _)| *n == test.name) {
            println!("  deliberate difference (Result: {want}): {why}");
            deliberate += 1;
        } else {
            println!("  DISAGREES: Result: {want}");
            disagree += 1;
        }
    }
    if check {
        println!(
            "litmus: {run} run, {agree} agree, {deliberate} deliberately different, \
             {skipped} skipped, {disagree} disagree"
        );
        if disagree > 0 {
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
