// SPDX-License-Identifier: GPL-2.0

//! The ordering mutants.
//!
//! `cargo xtask ordering-mutants [--jobs N] [--list]`: finds every ordering point (a
//! `dma_mb(..)` with its `// ORDERING:` comment) in the driver and the virtual GSP,
//! and for each one, one at a time, deletes it, weakens it (`Full` to `Read` and to
//! `Write`), and moves it across its neighbouring shared access; plus the seed's
//! pre-fix shape (the write-pointer barrier after the pointer store, and no read
//! barrier after reading the GSP's write pointer). Each mutant runs the loom scenarios
//! and the DMA contract checker (`tools/model`, built once with `--cfg loom`; the
//! mutation is applied at run time by source line, through `VGSP_MUTANT`). A mutant is
//! killed when that run fails.
//!
//! The seed's two barriers are found by the markers of their `// ORDERING:` comments
//! (the `ordering-marker` crate, `tools/marker`, shared with the loom scenarios), not by
//! the functions they are in.
//!
//! A surviving mutant fails the command unless the barrier's `// ORDERING:` comment
//! explains it with `Survives <kind>: <reason>` (kinds: `delete`, `weaken-read`,
//! `weaken-write`, `move`). The last line is `ordering mutants: K killed of N`.
//!
//! `cargo xtask ordering-trace` and `cargo xtask variant-tree` make their mutants and
//! variants from the same points ([`all_mutants`]).

use std::{
    collections::VecDeque,
    env, fs,
    path::{
        Path,
        PathBuf, //
    },
    process::{
        Command,
        Stdio, //
    },
    sync::{
        Arc,
        Mutex, //
    },
    time::Instant,
};

use crate::util;

/// The sources whose ordering points are mutated.
const SOURCES: &[&str] = &["drivers/gpu/nova-core", "drivers/gpu/vgsp/gsp"];

use ordering_marker::{
    marker_of,
    CPU_WPTR_RELEASE as SEED_WRITE,
    GSP_WPTR_ACQUIRE as SEED_READ,
    SEED_FILE, //
};

/// One barrier in the source.
#[derive(Clone, Debug)]
pub(crate) struct Point {
    pub(crate) file: String,
    pub(crate) line: usize,
    pub(crate) flavour: &'static str,
    function: String,
    /// The name its `// ORDERING: [NAME]` marker gives it, if any.
    marker: Option<String>,
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
pub(crate) struct Mutant {
    pub(crate) name: String,
    pub(crate) spec: String,
    pub(crate) kind: &'static str,
    point: Option<Point>,
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
    points_of(&rel, &text)
}

/// Finds the ordering points of `text`, the file `rel`.
fn points_of(rel: &str, text: &str) -> Result<Vec<Point>, String> {
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
        let marker = marker_of(&lines, i).map(String::from);
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
            file: rel.to_string(),
            line: i + 1,
            flavour,
            function,
            marker,
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

/// Returns the barrier of `file` marked `// ORDERING: [marker]`.
///
/// # Errors
///
/// - No barrier of `file` has the marker: the error names the marker and the file.
fn marked<'a>(points: &'a [Point], file: &str, marker: &str) -> Result<&'a Point, String> {
    points
        .iter()
        .find(|p| p.file == file && p.marker.as_deref() == Some(marker))
        .ok_or_else(|| {
            format!(
                "no barrier in {file} is marked `// ORDERING: [{marker}]` (the seed's barriers \
                 are found by their markers: see tools/model/README.md)"
            )
        })
}

/// Checks that no two barriers have the same marker.
fn markers_unique(points: &[Point]) -> Result<(), String> {
    for (i, p) in points.iter().enumerate() {
        let Some(m) = &p.marker else { continue };
        if let Some(q) = points[i + 1..]
            .iter()
            .find(|q| q.marker.as_ref() == Some(m))
        {
            return Err(format!(
                "two barriers are marked `[{m}]`: {}:{} and {}:{}; a marker names one",
                p.file, p.line, q.file, q.line
            ));
        }
    }
    Ok(())
}

/// The seed's pre-fix shape, from the review thread of the nova-core barrier fix: the
/// barrier marked [`SEED_WRITE`] moved after the store it orders (and made `Full`), the
/// one marked [`SEED_READ`] deleted.
fn seed_mutant(points: &[Point]) -> Result<Mutant, String> {
    let w = marked(points, SEED_FILE, SEED_WRITE)?;
    let r = marked(points, SEED_FILE, SEED_READ)?;
    let store = match w.neighbour {
        Some((line, true)) => line,
        _ => {
            return Err(format!(
                "{}:{}: no pointer store follows the barrier marked `[{SEED_WRITE}]`",
                w.file, w.line
            ))
        }
    };
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

/// The loom scenarios (tests of `tools/model/tests/ordering.rs`), quickest first, so
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
pub(crate) fn all_mutants(root: &Path) -> Result<(Vec<Point>, Vec<Mutant>), String> {
    let mut files = Vec::new();
    for dir in SOURCES {
        files.extend(util::rust_files(&root.join(dir))?);
    }
    let mut points = Vec::new();
    for f in &files {
        points.extend(points_in(root, f)?);
    }
    if points.is_empty() {
        return Err("no ordering points found".into());
    }
    markers_unique(&points)?;
    let mut mutants: Vec<Mutant> = points.iter().flat_map(mutants_of).collect();
    mutants.push(seed_mutant(&points)?);
    Ok((points, mutants))
}

/// `cargo xtask ordering-mutants [--jobs N] [--list]`.
pub(crate) fn ordering_mutants(args: &[String]) -> Result<bool, String> {
    let root = util::repo()?;
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
        // More workers than mutants would only idle.
        for _ in 0..jobs.min(mutants.len()) {
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

#[cfg(test)]
mod tests {
    use super::*;

    const RING: &str = "impl Ring {
    fn advance(&self) {
        let wptr = self.next();
        // ORDERING: [cpu-wptr-release]
        // STORE->STORE. Publishes the element.
        dma_mb(Write);
        io_write!(self.mem, .cpuq.tx.write_ptr, wptr);
    }

    fn gsp_wptr(&self) -> u32 {
        let ptr = io_read!(self.mem, .gspq.tx.write_ptr);
        // ORDERING: [gsp-wptr-acquire] LOAD->LOAD.
        dma_mb(Read);
        ptr
    }

    fn other(&self) {
        // ORDERING: [`not a marker`] LOAD->STORE.
        dma_mb(Full);
        io_write!(self.mem, .cpuq.rx.read_ptr, 0);
    }
}
";

    #[test]
    fn a_marker_follows_ordering_and_names_one_barrier() {
        let points = points_of(SEED_FILE, RING).unwrap();
        let markers: Vec<Option<&str>> = points.iter().map(|p| p.marker.as_deref()).collect();
        assert_eq!(
            markers,
            [Some("cpu-wptr-release"), Some("gsp-wptr-acquire"), None]
        );
    }

    #[test]
    fn the_seed_moves_the_marked_write_barrier_and_deletes_the_marked_read_one() {
        let points = points_of(SEED_FILE, RING).unwrap();
        let seed = seed_mutant(&points).unwrap();
        assert_eq!(
            seed.spec,
            format!("{SEED_FILE}:6:after-full:{SEED_FILE}:7,{SEED_FILE}:13:delete")
        );
    }

    #[test]
    fn a_missing_marker_is_an_error_naming_it_and_the_file() {
        let text = RING.replace("[gsp-wptr-acquire] ", "");
        let points = points_of(SEED_FILE, &text).unwrap();
        let e = seed_mutant(&points).unwrap_err();
        assert!(
            e.contains("[gsp-wptr-acquire]") && e.contains(SEED_FILE),
            "{e}"
        );
        // In another file, it is not the seed's.
        let points = points_of("drivers/gpu/vgsp/gsp/msgq.rs", RING).unwrap();
        let e = seed_mutant(&points).unwrap_err();
        assert!(
            e.contains("[cpu-wptr-release]") && e.contains(SEED_FILE),
            "{e}"
        );
    }

    #[test]
    fn a_marker_on_two_barriers_is_an_error() {
        let text = RING.replace("[gsp-wptr-acquire]", "[cpu-wptr-release]");
        let points = points_of(SEED_FILE, &text).unwrap();
        let e = markers_unique(&points).unwrap_err();
        assert!(
            e.contains("[cpu-wptr-release]") && e.contains(":6 and "),
            "{e}"
        );
    }
}
