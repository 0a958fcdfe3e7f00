// SPDX-License-Identifier: GPL-2.0

//! `cargo xtask fresh-machine [--full | -- RUN_ARGS...]`: the test command on a machine
//! that has nothing the project installed, to find a missing install step before CI does.
//!
//! A machine that ran the project before hides a step that forgot to install its tool: the
//! tool is there from an earlier run. This command makes a Debian root of the system's
//! own suite with `debootstrap --variant=minbase` (once, cached as
//! `<cache>/fresh/base`), plus only a C compiler and git (what a machine of this kind
//! comes with beside Rust), copies it afresh for every run, and runs in it, from a fresh
//! clone of the repository's `HEAD`:
//!
//! 1. `cargo xtask tools ensure --all --probe`: every tool of the table installed from
//!    nothing and started once;
//! 2. `tests/run.sh RUN_ARGS` (default `--host-only`; `-- --no-kernel`, or `--full` for
//!    every step, at the cost of a cold cache: the kernel trees are fetched and built anew).
//!
//! The root is entered in a mount namespace of its own (`unshare(CLONE_NEWNS)`), with
//! `/proc`, `/sys` and `/dev` of the host, the rustup toolchains bind-mounted read-only
//! (`RUSTUP_HOME`; cargo's home is the root's own, empty, so nothing installed with
//! `cargo install` is inherited), and the machine's network setting: its DNS
//! configuration, its package sources and apt settings, the certificate authorities it
//! trusts and the environment variables that name them or a proxy. Nothing of the host's packages, caches or `~/.cargo/bin` is
//! visible. The run's root stays at
//! `<cache>/fresh/run` until the next run, for a look after a failure.
//!
//! Root only (debootstrap, mounts, chroot). The verdict is `tests/run.sh`'s own last line.

use std::{
    env,
    ffi::CString,
    fs,
    os::unix::{
        ffi::OsStrExt,
        fs::symlink,
        process::CommandExt, //
    },
    path::{
        Path,
        PathBuf, //
    },
    process::Stdio,
    time::Instant,
};

use crate::util::{
    self,
    debian,
    process::run,
    tools, //
};

/// The packages the root gets beyond `minbase`: what a machine of this kind has besides
/// Rust and that the project takes for granted (a C compiler for cargo's linking, git for
/// the clone), and the certificates apt and cargo need.
const BASE_PACKAGES: &str = "ca-certificates,gcc,libc6-dev,git";
/// Where the clone lives inside the root.
const CHECKOUT: &str = "/work/project";
/// The root's own shell (minbase has it), run after the `chroot`: the host's table of
/// tools does not apply to it.
const ROOT_SHELL: &str = "/bin/sh";
/// Where the host's rustup home is mounted inside the root.
const RUSTUP_HOME: &str = "/opt/rustup";

/// One mount made in the namespace before `chroot`.
struct Mount {
    /// What is mounted: a path, or the file system's name for `proc`.
    source: CString,
    /// Where, inside the root.
    target: CString,
    /// The file system's type; `None` for a recursive bind mount of `source`.
    fstype: Option<CString>,
    /// Whether the bind mount is made read-only.
    read_only: bool,
}

/// Returns `p` as a C string, for the system calls.
fn cstring(p: &Path) -> Result<CString, String> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| format!("{}: a NUL in the path", p.display()))
}

/// Makes the base root once: `debootstrap --variant=minbase` of the system's suite.
fn base_root(cache: &Path) -> Result<PathBuf, String> {
    let base = cache.join("fresh/base");
    if base.join("usr/bin/gcc").exists() && base.join("usr/bin/git").exists() {
        return Ok(base);
    }
    let (suite, mirror) = (debian::system_suite()?, debian::debian_mirror()?);
    let tmp = cache.join("fresh/base.tmp");
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    eprintln!("xtask: fresh-machine: debootstrap --variant=minbase {suite} (once, minutes)");
    run(tools::command("debootstrap")?
        .args(["--variant=minbase", &format!("--include={BASE_PACKAGES}")])
        .arg(&suite)
        .arg(&tmp)
        .arg(&mirror))?;
    fs::rename(&tmp, &base).map_err(|e| format!("{}: {e}", base.display()))?;
    Ok(base)
}

/// Makes the run's root: a copy of the base, the clone, cargo's empty home with rustup's
/// proxies, the DNS configuration.
fn run_root(cache: &Path, base: &Path, repo: &Path) -> Result<PathBuf, String> {
    let root = cache.join("fresh/run");
    if root.exists() {
        fs::remove_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    }
    run(tools::command("cp")?.arg("-a").arg(base).arg(&root))?;
    let inside = |p: &str| root.join(p.trim_start_matches('/'));
    let checkout = inside(CHECKOUT);
    fs::create_dir_all(checkout.parent().unwrap_or(&root))
        .map_err(|e| format!("{}: {e}", checkout.display()))?;
    run(tools::command("git")?
        .args(["clone", "-q"])
        .arg(repo)
        .arg(&checkout))?;
    // rustup's proxies are rustup itself under the tools' names.
    let host_bin = util::home()?.join(".cargo/bin");
    let bin = inside("/root/.cargo/bin");
    fs::create_dir_all(&bin).map_err(|e| format!("{}: {e}", bin.display()))?;
    fs::copy(host_bin.join("rustup"), bin.join("rustup"))
        .map_err(|e| format!("{}: {e}", host_bin.join("rustup").display()))?;
    for entry in fs::read_dir(&host_bin).map_err(|e| format!("{}: {e}", host_bin.display()))? {
        let entry = entry.map_err(|e| format!("{}: {e}", host_bin.display()))?;
        if fs::read_link(entry.path()).is_ok_and(|t| t == Path::new("rustup")) {
            symlink("rustup", bin.join(entry.file_name()))
                .map_err(|e| format!("{}: {e}", bin.display()))?;
        }
    }
    fs::create_dir_all(inside(RUSTUP_HOME)).map_err(|e| format!("{}: {e}", root.display()))?;
    let resolv = fs::read("/etc/resolv.conf").unwrap_or_default();
    fs::write(inside("/etc/resolv.conf"), resolv)
        .map_err(|e| format!("{}: {e}", root.display()))?;
    // The machine's own trust: the certificate authorities it adds to Debian's (the
    // registries may be reached through a proxy that presents its own), kept by the root's
    // `update-ca-certificates` as they are on the host.
    let local = Path::new("/usr/local/share/ca-certificates");
    if let Ok(entries) = fs::read_dir(local) {
        let to = inside("/usr/local/share/ca-certificates");
        fs::create_dir_all(&to).map_err(|e| format!("{}: {e}", to.display()))?;
        for e in entries.flatten() {
            fs::copy(e.path(), to.join(e.file_name()))
                .map_err(|err| format!("{}: {err}", e.path().display()))?;
        }
    }
    // The machine's package sources: bookworm's security suite, say, carries packages
    // (LLVM 22) that debootstrap's single line does not.
    let sources = inside("/etc/apt/sources.list.d");
    fs::create_dir_all(&sources).map_err(|e| format!("{}: {e}", sources.display()))?;
    let list = "/etc/apt/sources.list";
    let _ = fs::remove_file(inside(list));
    if let Ok(text) = fs::read(list) {
        fs::write(inside(list), text).map_err(|e| format!("{}: {e}", root.display()))?;
    }
    for e in fs::read_dir("/etc/apt/sources.list.d")
        .map_err(|e| format!("/etc/apt/sources.list.d: {e}"))?
        .flatten()
    {
        let name = e.file_name();
        let enabled = [".list", ".sources"]
            .iter()
            .any(|x| name.to_string_lossy().ends_with(x));
        if enabled {
            fs::copy(e.path(), sources.join(&name))
                .map_err(|err| format!("{}: {err}", e.path().display()))?;
        }
    }
    // And its apt settings: a mirror that is a snapshot has Release files whose validity
    // the machine's configuration stops apt from checking.
    let conf = inside("/etc/apt/apt.conf.d");
    fs::create_dir_all(&conf).map_err(|e| format!("{}: {e}", conf.display()))?;
    if let Ok(entries) = fs::read_dir("/etc/apt/apt.conf.d") {
        for e in entries.flatten().filter(|e| e.path().is_file()) {
            fs::copy(e.path(), conf.join(e.file_name()))
                .map_err(|err| format!("{}: {err}", e.path().display()))?;
        }
    }
    let bundle = "/etc/ssl/certs/ca-certificates.crt";
    if let Ok(certs) = fs::read(bundle) {
        fs::write(inside(bundle), certs).map_err(|e| format!("{}: {e}", root.display()))?;
    }
    Ok(root)
}

/// Returns whether the host's environment variable `name` is the machine's, not the
/// project's or this session's: where its certificates are, its proxies, rustup's policy.
fn passed_through(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper.contains("CERT")
        || upper.ends_with("CA_BUNDLE")
        || upper.ends_with("CAINFO")
        || upper.ends_with("_PROXY")
        || upper == "RUSTUP_AUTO_INSTALL"
}

/// Runs `script` with `sh -c` inside `root`, in a mount namespace of its own.
fn run_inside(root: &Path, script: &str) -> Result<bool, String> {
    let rustup_home = env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .map_or_else(|| util::home().map(|h| h.join(".rustup")), Ok)?;
    let at = |p: &str| cstring(&root.join(p.trim_start_matches('/')));
    let mounts = vec![
        Mount {
            source: CString::from(c"proc"),
            target: at("/proc")?,
            fstype: Some(CString::from(c"proc")),
            read_only: false,
        },
        Mount {
            source: CString::from(c"/sys"),
            target: at("/sys")?,
            fstype: None,
            read_only: false,
        },
        Mount {
            source: CString::from(c"/dev"),
            target: at("/dev")?,
            fstype: None,
            read_only: false,
        },
        Mount {
            source: cstring(&rustup_home)?,
            target: at(RUSTUP_HOME)?,
            fstype: None,
            read_only: true,
        },
    ];
    let root_c = cstring(root)?;
    let mut cmd = std::process::Command::new(ROOT_SHELL);
    cmd.args(["-c", script])
        .env_clear()
        .env("HOME", "/root")
        .env(
            "PATH",
            "/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        )
        .env("RUSTUP_HOME", RUSTUP_HOME)
        .env("CARGO_HOME", "/root/.cargo")
        .env("CI", "true")
        .env("LANG", "C.UTF-8")
        .envs(env::vars().filter(|(k, _)| passed_through(k)))
        .stdin(Stdio::null());
    // SAFETY: the closure runs in the child between `fork` and `exec`. It allocates
    // nothing (every string was made above) and calls only system calls, which are
    // async-signal-safe: `unshare`, `mount`, `chroot`, `chdir`.
    unsafe {
        cmd.pre_exec(move || {
            let fail = || Err(std::io::Error::last_os_error());
            if libc::unshare(libc::CLONE_NEWNS) != 0 {
                return fail();
            }
            // Nothing mounted here reaches the host's namespace.
            let none = std::ptr::null();
            if libc::mount(
                none,
                c"/".as_ptr(),
                none,
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) != 0
            {
                return fail();
            }
            for m in &mounts {
                let (fstype, flags) = match &m.fstype {
                    Some(t) => (t.as_ptr(), 0),
                    None => (none, libc::MS_BIND | libc::MS_REC),
                };
                if libc::mount(
                    m.source.as_ptr(),
                    m.target.as_ptr(),
                    fstype,
                    flags,
                    std::ptr::null(),
                ) != 0
                {
                    return fail();
                }
                if m.read_only
                    && libc::mount(
                        none,
                        m.target.as_ptr(),
                        none,
                        libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY,
                        std::ptr::null(),
                    ) != 0
                {
                    return fail();
                }
            }
            if libc::chroot(root_c.as_ptr()) != 0 || libc::chdir(c"/".as_ptr()) != 0 {
                return fail();
            }
            Ok(())
        });
    }
    let status = cmd
        .status()
        .map_err(|e| format!("cannot enter {}: {e}", root.display()))?;
    Ok(status.success())
}

/// `cargo xtask fresh-machine [--keep] [-- RUN_ARGS...]`.
pub(crate) fn fresh_machine(args: &[String]) -> Result<bool, String> {
    let (ours, run_args) = match args.iter().position(|a| a == "--") {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (args, &[][..]),
    };
    let full = match ours {
        [] => false,
        [a] if a == "--full" => true,
        _ => return Err("usage: cargo xtask fresh-machine [--full | -- RUN_ARGS...]".into()),
    };
    if !tools::is_root() {
        return Err("fresh-machine makes a Debian root and mounts in it: run it as root".into());
    }
    let run_args: Vec<String> = match (full, run_args.is_empty()) {
        (true, true) => Vec::new(),
        (true, false) => return Err("--full runs tests/run.sh without options".into()),
        (false, true) => vec!["--host-only".into()],
        (false, false) => run_args.to_vec(),
    };
    for a in &run_args {
        if !a.starts_with("--") || a.contains(|c: char| !c.is_ascii_alphanumeric() && c != '-') {
            return Err(format!("{a}: tests/run.sh takes options only"));
        }
    }
    let repo = util::repo()?;
    let cache = util::cache()?;
    let started = Instant::now();
    let base = base_root(&cache)?;
    let root = run_root(&cache, &base, &repo)?;
    eprintln!(
        "xtask: fresh-machine: {} ready in {} s; running the tools' probe, then tests/run.sh {}",
        root.display(),
        started.elapsed().as_secs(),
        run_args.join(" ")
    );
    let script = format!(
        "set -e; cd {CHECKOUT}; cargo xtask tools ensure --all --probe; tests/run.sh {}",
        run_args.join(" ")
    );
    let ok = run_inside(&root, &script)?;
    println!(
        "fresh-machine: {} in {} s (root {})",
        if ok { "passed" } else { "FAILED" },
        started.elapsed().as_secs(),
        root.display()
    );
    Ok(ok)
}
