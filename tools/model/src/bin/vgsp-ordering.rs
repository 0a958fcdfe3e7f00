// SPDX-License-Identifier: GPL-2.0

//! `vgsp-ordering --trace FILE --binary ELF [--kernel-shared ADDR] [--root DIR]...
//! [--skip PATTERN]...`: decides the trace the project's QEMU plugin recorded of `ELF`
//! ([`vgsp_model::compiled`]) and prints one line per missing ordering, then the summary:
//!
//! ```text
//! ordering defect (<contract|arm64>): <agent> <earlier access> -> <later access>: <what is missing> at <file>:<line>
//! ordering: <C> defects (contract), <A> defects (arm64), <N> events from <T> threads
//! ```
//!
//! With `--kernel-shared ADDR`, `FILE` is the system-mode plugin's trace of nova-core in
//! an arm64 kernel (`tools/trace/plugin/vgsp-ktrace.c`), `ELF` the kernel's `vmlinux`
//! (booted `nokaslr`: its pcs are the trace's) and `ADDR` the physical address of the
//! driver's shared memory: the driver's side alone is decided
//! ([`vgsp_model::kernel::driver_trace`], [`compiled::check_driver`]), each defect line
//! goes on with where its two accesses are and the barrier that would order them,
//!
//! ```text
//! ordering defect (…): … at <file>:<line>; <earlier access> at <lines>; <later access> at <lines>; a <barrier> between them orders it
//! ordering: <C> defects (contract), <A> defects (arm64), <N> events of nova-core on <V> vCPUs (<S> accesses of the shared memory, <M> vCPU changes)
//! ```
//!
//! A defect's line is the one of its pc in `ELF`'s debug information, through the inlined
//! frames: the innermost frame in a file under a `--root` (printed relative to it) whose
//! path contains no `--skip` pattern, else the innermost of those matching the earliest
//! pattern, else the innermost frame.
//! A frame whose file is a relative path (DWARF that names files relative to the
//! compilation's directory) counts as under a root already.
//! Accesses are grouped by that line: one defect per place in the source, with the number
//! of accesses it was seen for.
//!
//! Exit status: 0 when the trace was decided (defects or not), 2 when it could not be
//! (the message names why).

use std::{
    collections::{
        BTreeMap,
        BTreeSet, //
    },
    fs::File,
    io::{
        BufReader,
        Read as _,
        Write as _, //
    },
    path::{
        Path,
        PathBuf, //
    },
    process::{
        Command,
        ExitCode,
        Stdio, //
    },
};

use vgsp_model::{
    compiled::{
        self,
        Kind,
        Piece,
        Verdict, //
    },
    kernel,
};

/// The LLVM tools this uses, from Debian's `llvm-22` (any other LLVM's will do).
const NM: &[&str] = &["llvm-nm-22", "llvm-nm"];
const ADDR2LINE: &[&str] = &["llvm-addr2line-22", "llvm-addr2line"];

struct Options {
    trace: PathBuf,
    binary: PathBuf,
    roots: Vec<String>,
    skip: Vec<String>,
    /// The physical address of the shared memory, for a system-mode trace of the kernel.
    kernel_shared: Option<u64>,
}

/// Reads a number, `0x` for hexadecimal.
fn number(text: &str) -> Result<u64, String> {
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.map_err(|e| format!("{text:?} is not a number: {e}"))
}

fn parse_args() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let (mut trace, mut binary, mut roots, mut skip) = (None, None, Vec::new(), Vec::new());
    let mut kernel_shared = None;
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--trace" => trace = Some(PathBuf::from(value()?)),
            "--binary" => binary = Some(PathBuf::from(value()?)),
            "--root" => roots.push(value()?.trim_end_matches('/').to_string() + "/"),
            "--skip" => skip.push(value()?),
            "--kernel-shared" => kernel_shared = Some(number(&value()?)?),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(Options {
        trace: trace.ok_or("--trace FILE is missing")?,
        binary: binary.ok_or("--binary ELF is missing")?,
        roots,
        skip,
        kernel_shared,
    })
}

/// Runs the first of `tools` that exists.
fn tool(tools: &[&str], args: &[&str], input: Option<&str>) -> Result<String, String> {
    for t in tools {
        let child = Command::new(t)
            .args(args)
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        let Ok(mut child) = child else {
            continue;
        };
        if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
            stdin
                .write_all(input.as_bytes())
                .map_err(|e| format!("{t}: {e}"))?;
        }
        let out = child.wait_with_output().map_err(|e| format!("{t}: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "{t} {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    Err(format!(
        "none of {} found: install Debian's llvm-22",
        tools.join(", ")
    ))
}

/// Maps run-time pcs to source lines.
struct Lines {
    lines: BTreeMap<u64, String>,
}

impl Lines {
    fn new(opts: &Options, bias: u64, pcs: &[u64]) -> Result<Self, String> {
        let binary = opts
            .binary
            .to_str()
            .ok_or("the binary's path is not UTF-8")?;
        let input: String = pcs.iter().map(|pc| format!("{:#x}\n", pc - bias)).collect();
        let out = tool(ADDR2LINE, &["-a", "-f", "-i", "-e", binary], Some(&input))?;
        // Per address: the address, then (function, file:line) per inlined frame,
        // innermost first.
        let mut lines = BTreeMap::new();
        let mut current: Option<(u64, Vec<String>, usize)> = None;
        let flush = |c: Option<(u64, Vec<String>, usize)>, lines: &mut BTreeMap<u64, String>| {
            if let Some((addr, frames, _)) = c {
                lines.insert(addr + bias, choose(&frames, &opts.roots, &opts.skip));
            }
        };
        for line in out.lines() {
            if let Some(hex) = line.strip_prefix("0x") {
                flush(current.take(), &mut lines);
                let addr = u64::from_str_radix(hex, 16)
                    .map_err(|e| format!("llvm-addr2line: {line}: {e}"))?;
                current = Some((addr, Vec::new(), 0));
            } else if let Some((_, frames, n)) = &mut current {
                // A function's name, then its location, per frame; keep the locations.
                if *n % 2 == 1 {
                    frames.push(line.to_string());
                }
                *n += 1;
            }
        }
        flush(current.take(), &mut lines);
        Ok(Self { lines })
    }

    fn of(&self, pc: u64) -> String {
        self.lines
            .get(&pc)
            .cloned()
            .unwrap_or_else(|| format!("{pc:#x}"))
    }
}

/// The frame a defect is reported at (see the module documentation).
fn choose(frames: &[String], roots: &[String], skip: &[String]) -> String {
    let relative = |f: &str| -> Option<String> {
        // `file:line`, maybe with ` (discriminator N)` after it.
        let f = f.split(" (discriminator").next().unwrap_or(f);
        if !f.starts_with('/') && !f.starts_with("??") {
            return Some(f.to_string());
        }
        roots
            .iter()
            .find_map(|r| f.strip_prefix(r.as_str()).map(str::to_string))
    };
    // The rank of a frame: 0 if it matches no `--skip` pattern, else one more than the
    // index of the first it matches.
    let rank = |f: &str| {
        skip.iter()
            .position(|s| f.contains(s.as_str()))
            .map_or(0, |i| i + 1)
    };
    frames
        .iter()
        .filter_map(|f| relative(f))
        .enumerate()
        .min_by_key(|(i, f)| (rank(f), *i))
        .map(|(_, f)| f)
        .or_else(|| frames.first().cloned())
        .unwrap_or_else(|| "?".to_string())
}

/// Where `vgsp_trace_mark` is in the binary.
fn mark_symbol(opts: &Options) -> Result<u64, String> {
    let binary = opts
        .binary
        .to_str()
        .ok_or("the binary's path is not UTF-8")?;
    let out = tool(NM, &["--defined-only", binary], None)?;
    out.lines()
        .find_map(|l| {
            let mut parts = l.split_whitespace();
            let addr = parts.next()?;
            let name = parts.nth(1)?;
            (name == "vgsp_trace_mark").then(|| u64::from_str_radix(addr, 16).ok())?
        })
        .ok_or_else(|| format!("{binary} has no symbol vgsp_trace_mark: build it with the kernel shim's `trace` feature"))
}

/// What a trace was made of, for the summary line.
enum Source {
    /// A user-mode trace of two threads.
    Threads(usize),
    /// The system-mode trace of the kernel's driver.
    Kernel(kernel::DriverTrace),
}

/// Where the accesses of one kind at one place in the source are: their lines, a few.
fn places(lines: &Lines, pcs: &BTreeSet<u64>) -> String {
    /// How many lines are named before the rest is counted.
    const SHOWN: usize = 4;
    let all: BTreeSet<String> = pcs.iter().map(|pc| lines.of(*pc)).collect();
    let mut named: Vec<String> = all.iter().take(SHOWN).cloned().collect();
    if all.len() > SHOWN {
        named.push(format!("{} more", all.len() - SHOWN));
    }
    named.join(", ")
}

/// Reads the system-mode plugin's trace at `path` a chunk at a time into the driver's
/// trace, keeping only what the checker needs (the file may hold many millions of
/// records).
fn kernel_trace(path: &Path, base: u64) -> Result<kernel::DriverTrace, String> {
    /// Records read at once.
    const CHUNK: usize = 1 << 16;
    let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut reader = BufReader::new(file);
    let mut builder = kernel::DriverTraceBuilder::new(base);
    let mut buf = vec![0u8; CHUNK * compiled::RECORD_SIZE];
    let mut total = 0usize;
    loop {
        // Fill the buffer, or read to the end of the file.
        let mut filled = 0;
        while filled < buf.len() {
            match reader.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("{}: {e}", path.display())),
            }
        }
        total += filled;
        if !filled.is_multiple_of(compiled::RECORD_SIZE) {
            return Err(format!(
                "the trace is {total} bytes or more, not a whole number of {}-byte records (was the run cut short?)",
                compiled::RECORD_SIZE
            ));
        }
        for r in compiled::parse(&buf[..filled])? {
            builder.push(&r)?;
        }
        if filled < buf.len() {
            return builder.finish();
        }
    }
}

fn run(opts: &Options) -> Result<(), String> {
    let (report, bias, source) = match opts.kernel_shared {
        Some(base) => {
            let driver = kernel_trace(&opts.trace, base)?;
            let report = compiled::check_driver(&driver.records)?;
            // The kernel is booted `nokaslr`: its pcs are `vmlinux`'s.
            (report, 0, Source::Kernel(driver))
        }
        None => {
            let bytes =
                std::fs::read(&opts.trace).map_err(|e| format!("{}: {e}", opts.trace.display()))?;
            let records = compiled::parse(&bytes)?;
            let report = compiled::check(&records)?;
            let image = records.iter().find(|r| r.kind == Kind::Image).ok_or(
                "the trace has no image mark: was it recorded with the project's plugin of this version?",
            )?;
            let bias = image.addr.wrapping_sub(mark_symbol(opts)?);
            let threads = report.threads;
            (report, bias, Source::Threads(threads))
        }
    };
    let in_kernel = matches!(source, Source::Kernel(_));

    let mut pcs: Vec<u64> = Vec::new();
    for d in &report.defects {
        pcs.push(d.at);
        if in_kernel {
            pcs.extend([d.earlier_pc, d.later_pc].into_iter().filter(|&pc| pc != 0));
        }
        pcs.extend(d.notes.iter().flatten().filter_map(|p| match p {
            Piece::Line(pc) => Some(*pc),
            Piece::Text(_) => None,
        }));
    }
    pcs.sort_unstable();
    pcs.dedup();
    let lines = Lines::new(opts, bias, &pcs)?;

    // One line per place: (verdict, agent, accesses, what, where) -> how many pairs, the
    // notes of all of them, the pcs of their earlier and later accesses and the barrier
    // that would order them.
    type Place = (Verdict, compiled::Agent, String, String, String, String);
    #[derive(Default)]
    struct Seen {
        pairs: usize,
        notes: BTreeSet<String>,
        earlier: BTreeSet<u64>,
        later: BTreeSet<u64>,
        remedy: &'static str,
    }
    let mut grouped: BTreeMap<Place, Seen> = BTreeMap::new();
    for d in &report.defects {
        let place = (
            d.verdict,
            d.agent,
            d.earlier.clone(),
            d.later.clone(),
            d.missing.clone(),
            lines.of(d.at),
        );
        let entry = grouped.entry(place).or_default();
        entry.pairs += 1;
        entry
            .earlier
            .extend(Some(d.earlier_pc).filter(|&pc| pc != 0));
        entry.later.insert(d.later_pc);
        entry.remedy = d.remedy();
        for note in &d.notes {
            // A barrier without debug information is not in the code under check (the C
            // library's, say): not worth a note.
            let unknown = note
                .iter()
                .any(|p| matches!(p, Piece::Line(pc) if lines.of(*pc).starts_with("??")));
            if unknown {
                continue;
            }
            entry.notes.insert(
                note.iter()
                    .map(|p| match p {
                        Piece::Text(t) => t.clone(),
                        Piece::Line(pc) => lines.of(*pc),
                    })
                    .collect(),
            );
        }
    }
    let mut counts: BTreeMap<Verdict, usize> = BTreeMap::new();
    for ((verdict, agent, earlier, later, missing, at), seen) in &grouped {
        *counts.entry(*verdict).or_default() += 1;
        let notes: String = seen.notes.iter().map(|n| format!("; {n}")).collect();
        let pairs = if seen.pairs == 1 {
            "1 pair".to_string()
        } else {
            format!("{} pairs", seen.pairs)
        };
        let mut line = format!(
            "ordering defect ({verdict}): {} {earlier} -> {later}: {missing}{notes} ({pairs}) at {at}",
            agent.name()
        );
        if in_kernel {
            if !seen.earlier.is_empty() {
                line += &format!("; {earlier} at {}", places(&lines, &seen.earlier));
            }
            line += &format!("; {later} at {}", places(&lines, &seen.later));
            // Without an earlier access (no pointer load published the slot), no barrier
            // is the fix: the missing load is.
            if !seen.earlier.is_empty() {
                line += &format!("; a {} between them orders it", seen.remedy);
            }
        }
        println!("{line}");
    }
    let pairs: Vec<String> = report
        .pairs
        .iter()
        .map(|(a, n)| format!("{} {n}", a.name()))
        .collect();
    eprintln!(
        "ordering: pairs of accesses checked: {}; {} acquire/release accesses, which order nothing for the GSP",
        pairs.join(", "),
        report.acquire_release
    );
    let made_of = match &source {
        Source::Threads(threads) => format!("{} events from {threads} threads", report.events),
        Source::Kernel(driver) => format!(
            "{} events of nova-core on {} vCPUs ({} accesses of the shared memory, {} vCPU changes)",
            driver.recorded, driver.vcpus, driver.shared, driver.vcpu_changes
        ),
    };
    println!(
        "ordering: {} defects (contract), {} defects (arm64), {made_of}",
        counts.get(&Verdict::Contract).unwrap_or(&0),
        counts.get(&Verdict::Arm64).unwrap_or(&0),
    );
    Ok(())
}

fn main() -> ExitCode {
    let result = parse_args().and_then(|opts| run(&opts));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vgsp-ordering: {e}");
            eprintln!(
                "usage: vgsp-ordering --trace FILE --binary ELF [--kernel-shared ADDR] [--root DIR]... [--skip PATTERN]..."
            );
            ExitCode::from(2)
        }
    }
}
