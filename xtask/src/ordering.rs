// SPDX-License-Identifier: GPL-2.0

//! The ordering of compiled code, from a trace of the real arm64 binary.
//!
//! 1. The project's QEMU plugin (`tools/trace/plugin/vgsp-trace.c`) is built against the
//!    plugin header of the QEMU that runs it: `include/qemu/qemu-plugin.h` of the
//!    installed `qemu-user`'s Debian source package, fetched once through a private apt
//!    configuration (deb-src of the system's own suite; the system's apt sources are never
//!    changed) and cached as `<cache>/qemu-plugin/<version>/qemu-plugin.h`.
//!    `VGSP_QEMU_PLUGIN_H=<file>` names a header instead.
//! 2. The program is built for `aarch64-unknown-linux-gnu` with Debian's `rustc-web`
//!    (`-Zbuild-std`), optimised, with line tables and the shim's `trace` feature:
//!    `tools/trace` (our driver and GSP) or `tests/upstream` (a tree's queue and our GSP).
//! 3. It runs under `qemu-aarch64` with the plugin, which writes the trace.
//! 4. `vgsp-ordering` (`tools/model`) decides the trace under Linux's DMA contract and
//!    arm64's architecture, one line per missing ordering, then
//!    `ordering: C defects (contract), A defects (arm64), N events from T threads`.
//!
//! `cargo xtask ordering-trace` does this for our driver and GSP and fails on any defect.
//! With `--mutants`, each mutant of `cargo xtask ordering-mutants` is then run on the
//! same binary (the shim applies `VGSP_MUTANT` to the barriers it executes, by source
//! line, as the model backend does) and traced; a mutant is caught when the contract
//! verdict finds a defect. The last line is `ordering-trace mutants: K caught of N`.
//! `cargo xtask upstream ... ordering` does the same for a tree's queue
//! ([`upstream_ordering`]).

use std::{
    env, fs,
    path::{
        Path,
        PathBuf, //
    },
    process::{
        Command,
        Stdio, //
    },
    thread,
    time::{
        Duration,
        Instant, //
    },
};

use crate::{
    mutants,
    util::{
        self,
        aarch64,
        debian::{
            self,
            debian_mirror, //
        },
        process::run,
        repo,
        tools, //
    }, //
};

/// The target directory, under `target/`, of the traced aarch64 programs: the shim's
/// `trace` feature, which no other build may get.
const TRACE_TARGET: &str = "aarch64-trace";
/// How long one traced run may take before it is taken to hang.
const RUN_TIMEOUT: Duration = Duration::from_secs(600);

/// The source paths a defect's line is reported in, least preferred last: upstream's
/// accessor helpers, then the shim (see `vgsp-ordering --skip`).
const SKIP: &[&str] = &["gsp/fw.rs", "kernel-shim/"];

/// The installed `qemu-user`'s source package version (`1:7.2+dfsg-7+deb12u18`).
fn qemu_source_version() -> Result<String, String> {
    tools::ensure(&["qemu-aarch64"])?;
    let out = tools::command("dpkg-query")?
        .args(["-W", "-f=${source:Version}", "qemu-user"])
        .output()
        .map_err(|e| format!("dpkg-query: {e}"))?;
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || version.is_empty() {
        return Err("qemu-user is not installed: install it with apt-get install qemu-user".into());
    }
    Ok(version)
}

/// Returns the QEMU plugin header, fetching it once (see the module documentation).
fn plugin_header() -> Result<PathBuf, String> {
    if let Some(h) = env::var_os("VGSP_QEMU_PLUGIN_H") {
        let h = PathBuf::from(h);
        return if h.is_file() {
            Ok(h)
        } else {
            Err(format!("VGSP_QEMU_PLUGIN_H={} is not a file", h.display()))
        };
    }
    let version = qemu_source_version()?;
    let dir = util::cache()?
        .join("qemu-plugin")
        .join(version.replace(':', "_"));
    let header = dir.join("qemu-plugin.h");
    if header.is_file() {
        return Ok(header);
    }
    eprintln!(
        "xtask: fetching the source of qemu {version} for its plugin header (about 24 MB, once)"
    );
    let apt = dir.join("apt");
    let (mirror, suite) = (debian_mirror()?, debian::system_suite()?);
    let list: String = [suite.clone(), format!("{suite}-updates")]
        .iter()
        .map(|s| {
            format!(
                "deb-src [signed-by={}] {mirror} {s} main\n",
                debian::KEYRING
            )
        })
        .collect();
    let opts = debian::private_apt(&apt, &list, &["src"])?;
    run(tools::command("apt-get")?
        .args(&opts)
        .args(["-qq", "update"]))?;
    let src = apt.join("src");
    run(
        tools::command("apt-get")?
            .args(&opts)
            .args(["-qq", "--download-only", "source", &format!("qemu={version}")])
            .current_dir(&src),
    )
    .map_err(|e| {
        format!("{e}\n(no source of qemu {version} in {mirror} {suite}: set VGSP_QEMU_PLUGIN_H to a qemu-plugin.h of QEMU 7.2)")
    })?;
    let orig = fs::read_dir(&src)
        .map_err(|e| format!("{}: {e}", src.display()))?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().contains(".orig.tar"))
        .ok_or("apt-get source left no .orig.tar of qemu")?;
    let out = tools::command("tar")?
        .arg("-xf")
        .arg(&orig)
        .args(["--wildcards", "--to-stdout", "*/include/qemu/qemu-plugin.h"])
        .output()
        .map_err(|e| format!("tar: {e}"))?;
    if !out.status.success() || out.stdout.is_empty() {
        return Err(format!(
            "{} has no include/qemu/qemu-plugin.h",
            orig.display()
        ));
    }
    fs::write(&header, &out.stdout).map_err(|e| format!("{}: {e}", header.display()))?;
    // The tarball was only needed for the header.
    let _ = fs::remove_dir_all(&apt);
    Ok(header)
}

/// Builds the plugin; returns the shared object.
fn plugin(repo: &Path) -> Result<PathBuf, String> {
    let header = plugin_header()?;
    let include = header
        .parent()
        .ok_or("the plugin header has no directory")?;
    let out_dir = repo.join("target/trace");
    fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    let so = out_dir.join("libvgsp-trace.so");
    let status = tools::command("gcc")?
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC"])
        .arg("-I")
        .arg(include)
        .arg("-o")
        .arg(&so)
        .arg(repo.join("tools/trace/plugin/vgsp-trace.c"))
        .status()
        .map_err(|e| format!("gcc: {e} (install gcc)"))?;
    if !status.success() {
        return Err("the QEMU plugin does not build (gcc's errors above)".into());
    }
    Ok(so)
}

/// Runs `binary args` under `qemu-aarch64` with the plugin, writing the trace to `out`;
/// returns the program's standard output.
fn run_traced(
    plugin: &Path,
    binary: &Path,
    args: &[&str],
    mutant: Option<&str>,
    out: &Path,
) -> Result<String, String> {
    let _ = fs::remove_file(out);
    let stdout = out.with_extension("stdout");
    let stdout_file =
        fs::File::create(&stdout).map_err(|e| format!("{}: {e}", stdout.display()))?;
    let mut cmd = tools::command("qemu-aarch64")?;
    cmd.args(["-L", "/usr/aarch64-linux-gnu", "-plugin"])
        .arg(format!("{},out={}", plugin.display(), out.display()))
        .arg(binary)
        .args(args)
        .env_remove("VGSP_MUTANT")
        .stdout(stdout_file)
        .stderr(Stdio::null());
    if let Some(m) = mutant {
        cmd.env("VGSP_MUTANT", m);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("qemu-aarch64: {e} (install qemu-user)"))?;
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| format!("qemu-aarch64: {e}"))? {
            break status;
        }
        if start.elapsed() > RUN_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "{} did not finish within {} s under the plugin",
                binary.display(),
                RUN_TIMEOUT.as_secs()
            ));
        }
        thread::sleep(Duration::from_millis(50));
    };
    let text = fs::read_to_string(&stdout).unwrap_or_default();
    if !status.success() {
        return Err(format!(
            "{} failed under the plugin ({status}): {}",
            binary.display(),
            text.trim()
        ));
    }
    Ok(text)
}

/// The decision on one trace.
pub(crate) struct Decision {
    /// The defect lines.
    pub defects: Vec<String>,
    /// The summary line.
    pub summary: String,
    /// Defects under the contract.
    pub contract: usize,
}

/// Builds the checker, once per command.
fn checker(repo: &Path) -> Result<PathBuf, String> {
    let status = Command::new(env!("CARGO"))
        .args([
            "build",
            "--release",
            "-q",
            "-p",
            "vgsp-model",
            "--bin",
            "vgsp-ordering",
        ])
        .current_dir(repo)
        .status()
        .map_err(|e| format!("cargo: {e}"))?;
    if !status.success() {
        return Err("the checker vgsp-ordering does not build".into());
    }
    Ok(repo.join("target/release/vgsp-ordering"))
}

/// Decides `trace` of `binary`, reporting lines relative to `roots`.
fn decide(
    checker: &Path,
    trace: &Path,
    binary: &Path,
    roots: &[&Path],
) -> Result<Decision, String> {
    let mut cmd = Command::new(checker);
    cmd.arg("--trace").arg(trace).arg("--binary").arg(binary);
    for r in roots {
        cmd.arg("--root").arg(r);
    }
    for s in SKIP {
        cmd.args(["--skip", s]);
    }
    let out = cmd.output().map_err(|e| format!("vgsp-ordering: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "vgsp-ordering could not decide {}: {}",
            trace.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let summary = lines.pop().unwrap_or_default();
    let contract = summary
        .strip_prefix("ordering: ")
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("vgsp-ordering printed no summary: {summary:?}"))?;
    Ok(Decision {
        defects: lines,
        summary,
        contract,
    })
}

/// `cargo xtask ordering-trace [--mutants]`.
pub(crate) fn ordering_trace(args: &[String]) -> Result<bool, String> {
    let mutants = match args {
        [] => false,
        [m] if m == "--mutants" => true,
        _ => return Err("usage: cargo xtask ordering-trace [--mutants]".into()),
    };
    let repo = repo()?;
    let plugin = plugin(&repo)?;
    let binary = aarch64::build(
        &repo,
        TRACE_TARGET,
        &repo.join("tools/trace"),
        "vgsp-trace",
        &[],
        &[],
    )?;
    let checker = checker(&repo)?;
    let dir = repo.join("target/trace");
    let t = Instant::now();
    let trace = dir.join("vgsp-trace.trace");
    let ran = run_traced(&plugin, &binary, &[], None, &trace)?;
    print!("{ran}");
    let d = decide(&checker, &trace, &binary, &[&repo])?;
    for line in &d.defects {
        println!("{line}");
    }
    println!("{} ({:.1} s)", d.summary, t.elapsed().as_secs_f64());
    let clean = d.defects.is_empty();
    if !mutants {
        return Ok(clean);
    }
    if !clean {
        return Err("the unmutated driver and GSP have ordering defects: fix those first".into());
    }

    let (_, all) = mutants::all_mutants(&repo)?;
    let mut caught = 0;
    for (i, m) in all.iter().enumerate() {
        let trace = dir.join(format!("mutant-{i}.trace"));
        // A mutant whose program fails under the plugin (a reply that never came) is not
        // caught by this check: the trace is cut short.
        let line = match run_traced(&plugin, &binary, &[], Some(&m.spec), &trace)
            .and_then(|_| decide(&checker, &trace, &binary, &[&repo]))
        {
            Ok(d) if d.contract > 0 => {
                caught += 1;
                format!("caught  {}\n        by {}", m.name, d.defects[0])
            }
            Ok(d) => format!("MISSED  {}: {}", m.name, d.summary),
            Err(e) => format!("ERROR   {}: {e}", m.name),
        };
        println!("{line}");
        let _ = fs::remove_file(&trace);
    }
    println!("({:.0} s)", t.elapsed().as_secs_f64());
    println!("ordering-trace mutants: {caught} caught of {}", all.len());
    Ok(caught == all.len())
}

/// `cargo xtask upstream ... ordering`: the tree's queue (at `tree`, patched or not)
/// against our GSP, traced; prints the defects and returns the summary's figures
/// (`C defects (contract), A defects (arm64)`).
pub(crate) fn upstream_ordering(tree: &Path, name: &str) -> Result<String, String> {
    let repo = repo()?;
    let plugin = plugin(&repo)?;
    let binary = aarch64::build(
        &repo,
        TRACE_TARGET,
        &repo.join("tests/upstream"),
        "vgsp-upstream",
        &["trace"],
        &[("VGSP_UPSTREAM_TREE", tree.as_os_str().to_owned())],
    )?;
    let checker = checker(&repo)?;
    let trace = repo.join("target/trace/upstream.trace");
    let ran = run_traced(
        &plugin,
        &binary,
        &["--name", name, "ordering"],
        None,
        &trace,
    )?;
    print!("{ran}");
    let d = decide(&checker, &trace, &binary, &[tree, &repo])?;
    for line in &d.defects {
        println!("{line}");
    }
    println!("{}", d.summary);
    // `ordering: C defects (contract), A defects (arm64), N events from T threads`.
    let figures: Vec<&str> = d
        .summary
        .trim_start_matches("ordering: ")
        .split(", ")
        .take(2)
        .collect();
    Ok(format!("ordering {}", figures.join(", ")))
}
