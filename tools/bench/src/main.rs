// SPDX-License-Identifier: GPL-2.0

//! `cargo run --release -p vgsp-bench [-- --quick] [...]`: runs the performance
//! benchmark (see the crate documentation of `vgsp_bench` for every figure), prints the
//! table and the ratios to standard output and writes the JSON file, by default
//! `target/vgsp-bench.json` in the workspace. Progress goes to standard error.
//!
//! - `--quick`: 3 repetitions of 50 ms a figure instead of 11 of 250 ms (the README has
//!   the time it takes).
//! - `--smoke`: one repetition of a few iterations (tests: the figures mean nothing).
//! - `--reps N`: N repetitions instead of the mode's.
//! - `--only KEY,...`: only these figures (keys as in the JSON file), for profiling one.
//! - `--json PATH`: where to write the JSON file.
//! - `--variants`: also measures the driver's other barrier variants (every barrier
//!   `Full`, and the seed's pre-fix barriers) and prints this build's queue figures over
//!   theirs, acq-rel / all-Full among them: first builds this binary (cargo, release) in
//!   each variant's copy of the source, made by `cargo xtask variant-tree` under
//!   `target/bench-variants`, then runs each variant's binary for each repetition of each
//!   queue figure but the RPC throughputs (`rpc_*_per_s`), right after this build's
//!   ([`vgsp_bench::variants`]). Only from a build of the design (not of a variant's
//!   copy).
//! - `--measure-one KEY`: one repetition of one figure, printed as one line for
//!   `--variants` (no table, no JSON file).
//! - `--runs N`: the whole run N times (the variants built once). Each run before the
//!   last prints one line, `run K of N:` and its ratios that have a goal; the last prints
//!   the whole table and, after its ratios, each ratio's median and range over the N runs,
//!   on which the goals are judged. The JSON file is the last run's, with the N values of
//!   every ratio (`runs`).
//! - `--no-instructions`: leaves out the instructions per command, which are otherwise
//!   counted first, under callgrind ([`vgsp_bench::instructions`], which installs
//!   valgrind through `cargo xtask tools` if it is missing), and printed after the
//!   ratios. `--smoke` and `--only` leave them out too.
//! - `--turns LEN COUNT echo|sink`: the hidden mode callgrind runs
//!   ([`vgsp_bench::instructions::turns`]).
//!
//! Exit status 0 whatever the figures (goals are printed, not enforced); 1 if counting
//! the instructions, building a variant, a measurement (this build's or a variant's) or
//! writing the JSON file failed; 2 for a bad argument, and for `--help` (the usage goes
//! to standard error).

use std::{
    path::PathBuf,
    process::ExitCode, //
};

use vgsp_bench::{
    instructions,
    variants,
    Config,
    FigureSpec,
    Mode,
    DESIGN_VARIANT,
    VARIANT, //
};

/// Where the JSON file goes unless `--json` says otherwise: the workspace's `target/`.
const DEFAULT_JSON: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/vgsp-bench.json");

fn usage() -> String {
    "usage: vgsp-bench [--quick | --smoke] [--reps N] [--runs N] [--only KEY,...] \
     [--json PATH] [--no-instructions] [--variants | --measure-one KEY]"
        .into()
}

/// What a run is asked to do besides its configuration.
struct Args {
    cfg: Config,
    json: PathBuf,
    variants: bool,
    measure_one: Option<&'static FigureSpec>,
    /// Runs of the whole benchmark.
    runs: usize,
    /// Whether to count instructions under callgrind.
    instructions: bool,
}

/// Returns the positive count after `flag`.
fn count_arg(flag: &str, arg: Option<&String>) -> Result<usize, String> {
    let n = arg.ok_or_else(usage)?;
    n.parse::<usize>()
        .ok()
        .filter(|&n| n > 0)
        .ok_or(format!("{flag} takes a positive count, not '{n}'"))
}

/// Returns what `args` ask for.
fn parse(args: &[String]) -> Result<Args, String> {
    let mut mode = Mode::Full;
    let mut reps = None;
    let mut json = PathBuf::from(DEFAULT_JSON);
    let mut cfg_only = None;
    let mut variants = false;
    let mut measure_one = None;
    let mut runs = 1;
    let mut instructions = true;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => mode = Mode::Quick,
            "--smoke" => mode = Mode::Smoke,
            "--reps" => reps = Some(count_arg("--reps", args.next())?),
            "--runs" => runs = count_arg("--runs", args.next())?,
            "--no-instructions" => instructions = false,
            "--json" => json = PathBuf::from(args.next().ok_or_else(usage)?),
            "--variants" => variants = true,
            "--measure-one" => {
                let key = args.next().ok_or_else(usage)?;
                measure_one = Some(
                    vgsp_bench::figure(key).ok_or(format!("--measure-one: no figure '{key}'"))?,
                );
            }
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
    if variants && VARIANT != DESIGN_VARIANT {
        return Err(format!(
            "--variants: this is a build of the {VARIANT} variant; run it from a build \
             of the design, not of a variant's copy of the source"
        ));
    }
    if variants && measure_one.is_some() {
        return Err(format!(
            "--variants and --measure-one exclude each other\n{}",
            usage()
        ));
    }
    let mut cfg = Config::new(mode);
    if let Some(reps) = reps {
        cfg.reps = reps;
    }
    let instructions = instructions && cfg_only.is_none() && mode != Mode::Smoke;
    cfg.only = cfg_only;
    Ok(Args {
        cfg,
        json,
        variants,
        measure_one,
        runs,
        instructions,
    })
}

/// `--measure-one`: measures one repetition of `spec` and prints it as one line.
///
/// # Errors
///
/// The error of the set-up or of the measurement, as a line for standard error.
fn measure_one(cfg: Config, spec: &FigureSpec) -> Result<(), String> {
    let sample = vgsp_bench::Bench::new(cfg)
        .and_then(|bench| bench.measure(spec))
        .map_err(|e| format!("measuring {} failed: {e:?}", spec.key))?;
    println!("{}", variants::sample_line(VARIANT, spec, &sample));
    Ok(())
}

/// `--turns`: the driver and the GSP in turns, for callgrind.
fn turns(args: &[String]) -> ExitCode {
    let Some((len, count, echo)) = instructions::parse_turns(args) else {
        eprintln!("usage: vgsp-bench --turns LEN COUNT echo|sink");
        return ExitCode::from(2);
    };
    match instructions::turns(len, count, echo) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vgsp-bench: turns: {e:?}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the benchmark as `args` ask: counts the instructions, builds the variants, runs
/// `args.runs` times, prints the table and writes the JSON file.
///
/// # Errors
///
/// What failed, as a line for standard error: the instructions count, a variant's build, a
/// measurement, or the JSON file's directory or write.
fn run(args: Args) -> Result<(), String> {
    let Args {
        cfg,
        json,
        variants,
        runs,
        instructions: count_instructions,
        ..
    } = args;
    let mut progress = |line: &str| eprintln!("vgsp-bench: {line}");
    let counted = if count_instructions {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?;
        instructions::measure(&exe, &mut progress)?
    } else {
        Vec::new()
    };
    let variants = if variants {
        if cfg!(debug_assertions) {
            progress("--variants: this is a debug build; use `cargo run --release`");
        }
        variants::build(&mut progress)?
    } else {
        Vec::new()
    };
    let mut earlier: Vec<vgsp_bench::Report> = Vec::new();
    let report = loop {
        if runs > 1 {
            progress(&format!("run {}/{runs}", earlier.len() + 1));
        }
        let report = vgsp_bench::run_with_variants(cfg.clone(), &variants, &mut progress)
            .map_err(|e| format!("a measurement failed: {e:?}"))?;
        if earlier.len() + 1 == runs {
            break report.with_runs(&earlier).with_instructions(counted);
        }
        println!(
            "run {} of {runs}: {}",
            earlier.len() + 1,
            report.ratios_line()
        );
        earlier.push(report);
    };
    print!("{}", report.table());
    if let Some(dir) = json.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    std::fs::write(&json, report.json())
        .map_err(|e| format!("cannot write {}: {e}", json.display()))?;
    let shown = std::fs::canonicalize(&json).unwrap_or(json);
    println!("JSON: {}", shown.display());
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(rest) = args.strip_prefix(&["--turns".to_owned()]) {
        return turns(rest);
    }
    let args = match parse(&args) {
        Ok(parsed) => parsed,
        Err(msg) => {
            eprintln!("{msg}");
            return ExitCode::from(2);
        }
    };
    let done = match args.measure_one {
        Some(spec) => measure_one(args.cfg, spec),
        None => run(args),
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vgsp-bench: {e}");
            ExitCode::FAILURE
        }
    }
}
