// SPDX-License-Identifier: GPL-2.0

//! `cargo run --release -p vgsp-bench [-- --quick] [...]`: runs the performance
//! benchmark (see the crate documentation of `vgsp_bench` for every figure), prints the
//! table and the ratios to standard output and writes the JSON file, by default
//! `target/vgsp-bench.json` in the workspace. Progress goes to standard error.
//!
//! - `--quick`: 3 repetitions of 50 ms a figure (about 10 s) instead of 11 of 250 ms.
//! - `--smoke`: one repetition of a few iterations (tests: the figures mean nothing).
//! - `--reps N`: N repetitions instead of the mode's.
//! - `--only KEY,...`: only these figures (keys as in the JSON file), for profiling one.
//! - `--json PATH`: where to write the JSON file.
//!
//! Exit status 0 whatever the figures (goals are printed, not enforced); 1 if a
//! measurement failed; 2 for a bad argument.

use std::{
    path::PathBuf,
    process::ExitCode, //
};

use vgsp_bench::{
    Config,
    Mode, //
};

/// Where the JSON file goes unless `--json` says otherwise: the workspace's `target/`.
const DEFAULT_JSON: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/vgsp-bench.json");

fn usage() -> String {
    "usage: vgsp-bench [--quick | --smoke] [--reps N] [--only KEY,...] [--json PATH]".into()
}

/// Returns the configuration and the JSON path that `args` ask for.
fn parse(args: &[String]) -> Result<(Config, PathBuf), String> {
    let mut mode = Mode::Full;
    let mut reps = None;
    let mut json = PathBuf::from(DEFAULT_JSON);
    let mut cfg_only = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => mode = Mode::Quick,
            "--smoke" => mode = Mode::Smoke,
            "--reps" => {
                let n = args.next().ok_or_else(usage)?;
                reps = Some(
                    n.parse::<usize>()
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or(format!("--reps takes a positive count, not '{n}'"))?,
                );
            }
            "--json" => json = PathBuf::from(args.next().ok_or_else(usage)?),
            "--only" => {
                let keys = args.next().ok_or_else(usage)?;
                let mut only = Vec::new();
                for key in keys.split(',') {
                    let spec = vgsp_bench::figure(key).ok_or(format!(
                        "--only: no figure '{key}' (see the keys in the JSON file)"
                    ))?;
                    only.push(spec.key);
                }
                cfg_only = Some(only);
            }
            "-h" | "--help" => return Err(usage()),
            other => return Err(format!("unknown argument '{other}'\n{}", usage())),
        }
    }
    let mut cfg = Config::new(mode);
    if let Some(reps) = reps {
        cfg.reps = reps;
    }
    cfg.only = cfg_only;
    Ok((cfg, json))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (cfg, json) = match parse(&args) {
        Ok(parsed) => parsed,
        Err(msg) => {
            eprintln!("{msg}");
            return ExitCode::from(2);
        }
    };
    let report = match vgsp_bench::run(cfg, &mut |line| eprintln!("vgsp-bench: {line}")) {
        Ok(report) => report,
        Err(e) => {
            eprintln!("vgsp-bench: a measurement failed: {e:?}");
            return ExitCode::FAILURE;
        }
    };
    print!("{}", report.table());
    if let Some(dir) = json.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("vgsp-bench: cannot create {}: {e}", dir.display());
            return ExitCode::FAILURE;
        }
    }
    match std::fs::write(&json, report.json()) {
        Ok(()) => {
            let shown = std::fs::canonicalize(&json).unwrap_or(json);
            println!("JSON: {}", shown.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("vgsp-bench: cannot write {}: {e}", json.display());
            ExitCode::FAILURE
        }
    }
}
