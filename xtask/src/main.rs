// SPDX-License-Identifier: GPL-2.0

//! Project tooling.
//!
//! `cargo xtask ordering-mutants [--jobs N] [--list]`: finds every ordering point (a
//! `dma_mb(..)` with its `// ORDERING:` comment) in the driver and the virtual GSP,
//! and for each one, one at a time, deletes it, weakens it (`Full` to `Read` and to
//! `Write`), and moves it across its neighbouring shared access; plus the seed's
//! pre-fix shape (the write-pointer barrier after the pointer store, and no read
//! barrier after reading the GSP's write pointer). Each mutant runs the loom scenarios
//! and the DMA contract checker (`tests/model`, built once with `--cfg loom`; the
//! mutation is applied at run time by source line, through `VGSP_MUTANT`). A mutant is
//! killed when that run fails.
//!
//! A surviving mutant fails the command unless the barrier's `// ORDERING:` comment
//! explains it with `Survives <kind>: <reason>` (kinds: `delete`, `weaken-read`,
//! `weaken-write`, `move`). The last line is `ordering mutants: K killed of N`.
//!
//! `cargo xtask ordering-trace [--mutants]`: the driver and the virtual GSP compiled for
//! aarch64, traced instruction by instruction under `qemu-aarch64` with the project's
//! plugin, and the trace decided under Linux's DMA contract and arm64's architecture;
//! with `--mutants`, every mutant above too (see [`ordering`]).
//!
//! `cargo xtask variant-tree NAME DIR`: a copy of the sources with the barriers of one of
//! the benchmark's variants, made from the same points and mutations (see [`variant`]).
//!
//! `cargo xtask litmus [--check] [FILE|DIR]...`: C litmus tests in LKMM's format decided
//! by the contract checker; with no path, Linux 7.3's own, checked against their `Result:`
//! lines (see [`litmus`]).
//!
//! `cargo xtask linux-7.3`, `cargo xtask linux RELEASE` and `cargo xtask check-patches
//! [--tree DIR]`: the Linux 7.3 tree, any release Debian serves (7.2, 7.3~rc7, ...), and
//! the patches of `upstream/` (see [`linux`]).
//!
//! `cargo xtask qemu [aarch64|x86_64]`: QEMU 11 from Debian's sid in a
//! private root in the cache, its version and the command that starts it (see [`qemu`]).
//!
//! `cargo xtask tools list|ensure`: the programs the commands run and where each comes
//! from (see [`tools`]).
//!
//! `cargo xtask fresh-machine [--full | -- RUN_ARGS...]`: the tools' probe and `tests/run.sh` in a
//! Debian root that has only what a new machine has (see [`fresh`]).
//!
//! `cargo xtask api-7.3 [--tree DIR]`: the errors of nova-core compiled against the
//! pristine Linux 7.3 `kernel` crate (see [`api`]).
//!
//! `cargo xtask kernel-7.3 [--without-project] [x86_64|arm64]...`: the kernel tier on
//! Linux 7.3, the project built into the tree and booted under QEMU (see [`kernel`]).
//!
//! `cargo xtask upstream [--tree DIR] [--patch FILE]... [--arch ARCH] [--ordering] [--gsp-fault NAME|all]... [WHAT...]`: a tree's own
//! nova-core queue, unmodified, against the virtual GSP (see [`upstream`]).

mod api;
mod boot;
mod fresh;
mod kernel;
mod kernel_trace;
mod kunit_boot;
mod linux;
mod litmus;
mod ordering;
mod qemu;
mod tools;
mod upstream;
mod variant;

use std::{
    collections::VecDeque,
    env, fs,
    path::{
        Path,
        PathBuf, //
    },
    process::{
        Command,
        ExitCode,
        Stdio, //
    },
    sync::{
        Arc,
        Mutex, //
    },
    time::Instant,
};

/// The sources whose ordering points are mutated.
const SOURCES: &[&str] = &["drivers/gpu/nova-core", "drivers/gpu/vgsp"];

/// One barrier in the source.
#[derive(Clone, Debug)]
struct Point {
    file: String,
    line: usize,
    flavour: &'static str,
    function: String,
    /// The shared access the barrier orders against: `(line, after)`; `after` when the
    /// access follows the barrier (a release), else it precedes it (an acquire).
    neighbour: Option<(usize, bool)>,
    /// The `// ORDERING:` comment block.
    comment: String,
}

/// What running the model on one mutant gave: `Ok(None)` it passed (the mutant
/// survived), `Ok(Some(why))` it failed (killed), `Err` it could not run.
type Outcome = Result<Option<String>, String>;

/// One mutant: a name and the `VGSP_MUTANT` spec.
#[derive(Clone, Debug)]
struct Mutant {
    name: String,
    spec: String,
    kind: &'static str,
    point: Option<Point>,
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

fn is_access(line: &str) -> bool {
    let code = line.trim_start();
    !code.starts_with("//")
        && (code.contains("io_read!(")
            || code.contains("io_write!(")
            || code.contains(".read32(")
            || code.contains(".write32("))
}

/// Finds the ordering points of one file.
fn points_in(root: &Path, file: &Path) -> Result<Vec<Point>, String> {
    let rel = file
        .strip_prefix(root)
        .map_err(|_| format!("{} is outside the repository", file.display()))?
        .to_string_lossy()
        .into_owned();
    let text = fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let lines: Vec<&str> = text.lines().collect();
    let mut points = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let code = l.trim_start();
        if code.starts_with("//") {
            continue;
        }
        let flavour = ["Full", "Read", "Write"]
            .into_iter()
            .find(|f| code.contains(&format!("dma_mb({f})")));
        let Some(flavour) = flavour else { continue };

        let mut comment = Vec::new();
        let mut j = i;
        while j > 0 && lines[j - 1].trim_start().starts_with("//") {
            j -= 1;
            comment.insert(0, lines[j].trim_start().trim_start_matches("//").trim());
        }
        let comment = comment.join(" ");
        if !comment.contains("ORDERING:") {
            return Err(format!(
                "{rel}:{}: barrier without an `// ORDERING:` comment",
                i + 1
            ));
        }
        let function = lines[..i]
            .iter()
            .rev()
            .find_map(|l| {
                let t = l.trim_start();
                // Any visibility: `pub`, `pub(crate)`, `pub(super)`.
                let t = match t.strip_prefix("pub") {
                    Some(rest) if rest.starts_with('(') => {
                        rest.split_once(") ").map_or(t, |(_, after)| after)
                    }
                    Some(rest) => rest.trim_start(),
                    None => t,
                };
                t.strip_prefix("fn ")
                    .map(|r| r.split('(').next().unwrap_or("").to_string())
            })
            .unwrap_or_default();
        // A release: the store follows within a few lines. An acquire: the load precedes,
        // above the comment block.
        let after = (i + 1..(i + 5).min(lines.len())).find(|&k| is_access(lines[k]));
        let before = (j.saturating_sub(6)..j)
            .rev()
            .find(|&k| is_access(lines[k]));
        let neighbour = match (after, before) {
            (Some(k), _) => Some((k + 1, true)),
            (None, Some(k)) => Some((k + 1, false)),
            _ => None,
        };
        points.push(Point {
            file: rel.clone(),
            line: i + 1,
            flavour,
            function,
            neighbour,
            comment,
        });
    }
    Ok(points)
}

fn mutants_of(p: &Point) -> Vec<Mutant> {
    let at = format!("{}:{}", p.file, p.line);
    let label = format!("{} dma_mb({}) in {}", at, p.flavour, p.function);
    let mut v = vec![Mutant {
        name: format!("delete      {label}"),
        spec: format!("{at}:delete"),
        kind: "delete",
        point: Some(p.clone()),
    }];
    if p.flavour == "Full" {
        for (k, f) in [("weaken-read", "Read"), ("weaken-write", "Write")] {
            v.push(Mutant {
                name: format!("{k:<11} {label} -> dma_mb({f})"),
                spec: format!("{at}:{k}"),
                kind: k,
                point: Some(p.clone()),
            });
        }
    }
    if let Some((line, after)) = p.neighbour {
        let dir = if after { "after" } else { "before" };
        v.push(Mutant {
            name: format!("move        {label} {dir} the access at line {line}"),
            spec: format!("{at}:{dir}-{}:{}:{line}", p.flavour.to_lowercase(), p.file),
            kind: "move",
            point: Some(p.clone()),
        });
    }
    v
}

/// The seed's pre-fix shape, from the review thread of the nova-core barrier fix.
fn seed_mutant(points: &[Point]) -> Result<Mutant, String> {
    let find = |function: &str, flavour: &str| {
        points
            .iter()
            .find(|p| {
                p.file.ends_with("gsp/cmdq/ring.rs")
                    && p.function == function
                    && p.flavour == flavour
            })
            .ok_or_else(|| format!("no dma_mb({flavour}) in cmdq/ring.rs {function}"))
    };
    let w = find("advance_cpu_write_ptr", "Write")?;
    let r = find("gsp_write_ptr", "Read")?;
    let (store, _) = w
        .neighbour
        .ok_or("no write-pointer store next to the write barrier")?;
    Ok(Mutant {
        name: "seed        pre-fix: write-pointer barrier after the store, no read barrier after the GSP write-pointer load".into(),
        spec: format!(
            "{}:{}:after-full:{}:{store},{}:{}:delete",
            w.file, w.line, w.file, r.file, r.line
        ),
        kind: "seed",
        point: None,
    })
}

/// Builds the loom scenarios once; returns the test executable.
fn build_model(root: &Path) -> Result<PathBuf, String> {
    eprintln!("building the loom model (--cfg loom, release)...");
    let out = Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(root)
        .env("RUSTFLAGS", "--cfg loom")
        .args([
            "test",
            "-p",
            "vgsp-model",
            "--release",
            "--test",
            "ordering",
            "--target-dir",
            "target/model",
            "--no-run",
            "--message-format=json",
        ])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !out.status.success() {
        return Err("building the loom model failed".into());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .filter(|l| l.contains("\"executable\":\"") && l.contains("\"name\":\"ordering\""))
        .find_map(|l| {
            let start = l.find("\"executable\":\"")? + "\"executable\":\"".len();
            let end = start + l[start..].find('"')?;
            Some(PathBuf::from(&l[start..end]))
        })
        .ok_or_else(|| "cargo reported no `ordering` test executable".into())
}

/// The loom scenarios (tests of `tests/model/tests/ordering.rs`), quickest first, so
/// that a killed mutant usually fails early.
const SCENARIOS: &[&str] = &[
    "scenario_full_gsp_ring_gsp_waits",
    "scenario_full_ring_writer_waits",
    "scenario_command_wraps_ring_end",
    "scenario_one_command_and_reply",
    "scenario_unasked_event_crosses_command",
    "scenario_continuation_record_pair",
    "scenario_two_callers_and_an_event",
];

/// Runs the scenarios with `spec`, stopping at the first failure; returns `None` if
/// they all pass, else why one failed.
fn run_model(exe: &Path, root: &Path, spec: &str) -> Result<Option<String>, String> {
    for scenario in SCENARIOS {
        if let Some(why) = run_scenario(exe, root, spec, scenario)? {
            return Ok(Some(format!("{scenario}: {why}")));
        }
    }
    Ok(None)
}

fn run_scenario(
    exe: &Path,
    root: &Path,
    spec: &str,
    scenario: &str,
) -> Result<Option<String>, String> {
    let out = Command::new(exe)
        .current_dir(root)
        .env("VGSP_MUTANT", spec)
        .env("RUST_BACKTRACE", "0")
        .args(["--exact", scenario, "--test-threads=1"])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !stdout.contains("1 passed") && out.status.success() {
        return Err(format!(
            "{scenario} did not run: is the list in xtask out of date?"
        ));
    }
    if out.status.success() {
        return Ok(None);
    }
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let why = if let Some(l) = text.lines().find(|l| l.contains("DMA contract violated")) {
        format!("contract: {}", l.trim())
    } else if let Some(l) = text.lines().find(|l| l.contains("Causality violation")) {
        format!("loom: {}", l.trim())
    } else if let Some(l) = text.lines().find(|l| l.contains("panicked at")) {
        let next = text.lines().skip_while(|x| *x != l).nth(1).unwrap_or("");
        format!("failed: {}", next.trim())
    } else {
        "failed".into()
    };
    Ok(Some(why))
}

fn justified(m: &Mutant) -> bool {
    let Some(p) = &m.point else { return false };
    p.comment.contains(&format!("Survives {}:", m.kind))
}

/// Every ordering point of [`SOURCES`] and its mutants, the seed's shape last.
fn all_mutants(root: &Path) -> Result<(Vec<Point>, Vec<Mutant>), String> {
    let mut files = Vec::new();
    for dir in SOURCES {
        rust_files(&root.join(dir), &mut files);
    }
    let mut points = Vec::new();
    for f in &files {
        points.extend(points_in(root, f)?);
    }
    if points.is_empty() {
        return Err("no ordering points found".into());
    }
    let mut mutants: Vec<Mutant> = points.iter().flat_map(mutants_of).collect();
    mutants.push(seed_mutant(&points)?);
    Ok((points, mutants))
}

/// The repository's root.
fn repo_root() -> Result<PathBuf, String> {
    Ok(PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("no repository root")?
        .to_path_buf())
}

fn ordering_mutants(args: &[String]) -> Result<bool, String> {
    let root = repo_root()?;
    let mut jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut list = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--jobs" => {
                jobs = it
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or("--jobs needs a positive number")?
            }
            "--list" => list = true,
            other => return Err(format!("unknown option {other}")),
        }
    }

    let (points, mutants) = all_mutants(&root)?;
    println!(
        "{} ordering points, {} mutants:",
        points.len(),
        mutants.len()
    );
    for p in &points {
        println!(
            "  {}:{} dma_mb({}) in {}",
            p.file, p.line, p.flavour, p.function
        );
    }
    if list {
        for m in &mutants {
            println!("  {}  [{}]", m.name, m.spec);
        }
        return Ok(true);
    }

    let exe = build_model(&root)?;
    let t = Instant::now();
    if let Some(why) = run_model(&exe, &root, "")? {
        return Err(format!("the unmutated model fails ({why}): fix that first"));
    }
    println!("unmutated: pass ({:.1} s)", t.elapsed().as_secs_f64());

    let queue = Arc::new(Mutex::new(
        mutants.iter().cloned().enumerate().collect::<VecDeque<_>>(),
    ));
    let results: Arc<Mutex<Vec<(usize, Outcome)>>> = Arc::new(Mutex::new(Vec::new()));
    std::thread::scope(|s| {
        for _ in 0..jobs {
            let (queue, results, exe, root) = (queue.clone(), results.clone(), &exe, &root);
            s.spawn(move || loop {
                let Some((i, m)) = queue.lock().unwrap().pop_front() else {
                    break;
                };
                let r = run_model(exe, root, &m.spec);
                let line = match &r {
                    Ok(Some(why)) => format!("killed    {}\n          by {why}", m.name),
                    Ok(None) if justified(&m) => format!("justified {}", m.name),
                    Ok(None) => format!("SURVIVED  {}", m.name),
                    Err(e) => format!("ERROR     {}: {e}", m.name),
                };
                println!("{line}");
                results.lock().unwrap().push((i, r));
            });
        }
    });

    let results = results.lock().unwrap();
    let killed = results
        .iter()
        .filter(|(_, r)| matches!(r, Ok(Some(_))))
        .count();
    let errors = results.iter().filter(|(_, r)| r.is_err()).count();
    let unjustified = results
        .iter()
        .filter(|(i, r)| matches!(r, Ok(None)) && !justified(&mutants[*i]))
        .count();
    println!("({:.0} s)", t.elapsed().as_secs_f64());
    println!("ordering mutants: {killed} killed of {}", mutants.len());
    Ok(errors == 0 && unjustified == 0)
}

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ordering-mutants") => ordering_mutants(&args[1..]),
        Some("ordering-trace") => ordering::ordering_trace(&args[1..]),
        Some("litmus") => litmus::litmus(&args[1..]),
        Some("linux-7.3") => linux::linux_7_3_command(&args[1..]),
        Some("linux") => linux::linux_command(&args[1..]),
        Some("check-patches") => linux::check_patches(&args[1..]),
        Some("api-7.3") => api::api_7_3(&args[1..]),
        Some("kernel-7.3") => kernel::kernel_7_3(&args[1..]),
        Some("upstream") => upstream::upstream(&args[1..]),
        Some("qemu") => qemu::qemu_command(&args[1..]),
        Some("tools") => tools::tools_command(&args[1..]),
        Some("fresh-machine") => fresh::fresh_machine(&args[1..]),
        Some("variant-tree") => repo_root().and_then(|root| variant::variant_tree(&root, &args[1..])),
        _ => Err("usage: cargo xtask ordering-mutants [--jobs N] [--list] | \
                  ordering-trace [--mutants] | variant-tree NAME DIR | litmus [--check] [FILE|DIR]... | linux-7.3 | \
                  linux RELEASE | \
                  check-patches [--tree DIR] | api-7.3 [--tree DIR] | \
                  kernel-7.3 [--without-project] [x86_64|arm64]... | \
                  upstream [--tree DIR] [--patch FILE]... [--arch ARCH] [--ordering] [--gsp-fault NAME|all]... [WHAT...] | \
                  qemu [aarch64|x86_64] | \
                  tools list | tools ensure [--all] [--probe] [TOOL...] | \
                  fresh-machine [--full | -- RUN_ARGS...]"
            .into()),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::from(2)
        }
    }
}
