// SPDX-License-Identifier: GPL-2.0

//! `cargo xtask litmus [--check] [FILE|DIR]...`: C litmus tests (LKMM's format) decided by
//! the contract checker (`tools/model`, `vgsp-litmus`), one herd7 `Observation` line
//! each. With no path, the Linux 7.3 tree's own tests (`tools/memory-model/litmus-tests`
//! and `Documentation/litmus-tests`, read from the cached tree at run time) are checked
//! against their `Result:` lines.

use std::process::Command;

use crate::{
    linux,
    util::repo, //
};

/// Runs the command; `Ok(false)` if a checked test disagrees with its `Result:` line.
pub(crate) fn litmus(args: &[String]) -> Result<bool, String> {
    let repo = repo()?;
    let mut pass: Vec<String> = args.to_vec();
    if !args.iter().any(|a| a != "--check") {
        let tree = linux::linux_7_3()?;
        pass = vec!["--check".into()];
        for dir in [
            "tools/memory-model/litmus-tests",
            "Documentation/litmus-tests",
        ] {
            let dir = tree.join(dir);
            if !dir.is_dir() {
                return Err(format!(
                    "{} is missing from the Linux 7.3 tree",
                    dir.display()
                ));
            }
            pass.push(dir.display().to_string());
        }
    }
    let status = Command::new(env!("CARGO"))
        .args([
            "run",
            "--release",
            "-q",
            "-p",
            "vgsp-model",
            "--bin",
            "vgsp-litmus",
            "--",
        ])
        .args(&pass)
        .current_dir(&repo)
        .status()
        .map_err(|e| format!("cargo: {e}"))?;
    match status.code() {
        Some(0) => Ok(true),
        Some(1) => Ok(false),
        _ => Err("vgsp-litmus could not run".into()),
    }
}
