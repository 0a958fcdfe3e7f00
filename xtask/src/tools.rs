// SPDX-License-Identifier: GPL-2.0

//! `cargo xtask tools list` prints the table of tools ([`tools::TOOLS`], where each comes
//! from); `cargo xtask tools ensure [--all] [--probe] [TOOL...]` makes sure the named
//! tools (or all of them) are there, and with `--probe` runs each program once
//! (`--version`, or what its entry names) to show it starts. The private root's programs
//! (QEMU 11 from sid) are fetched and started through [`qemu`], the others through
//! [`tools`].

use std::{
    path::PathBuf,
    process::{
        Command,
        Stdio, //
    },
};

use crate::{
    qemu,
    util::tools::{
        self,
        Source,
        Tool,
        TOOLS, //
    }, //
};

/// Returns where `name` is: a private-root program in its root ([`qemu::installed`]),
/// else as [`tools::locate`].
fn locate(name: &str) -> Option<PathBuf> {
    match tools::entry(name) {
        Some(Tool {
            source: Source::Sid(package),
            ..
        }) => qemu::installed(package),
        _ => tools::locate(name),
    }
}

/// Makes sure every tool of `names` is there: fetches the missing private-root ones into
/// the cache, then the others as [`tools::ensure`].
///
/// # Errors
///
/// - A name is not in [`TOOLS`].
/// - A private-root fetch fails (as [`qemu::root`]).
/// - As [`tools::ensure`].
fn ensure(names: &[&str]) -> Result<(), String> {
    let mut rest = Vec::new();
    let mut sid = Vec::new();
    for name in names {
        let tool =
            tools::entry(name).ok_or_else(|| format!("{name} is not in xtask's table of tools"))?;
        match tool.source {
            Source::Sid(package) => sid.push((*name, package)),
            _ => rest.push(*name),
        }
    }
    // Into the cache, as any user: nothing of the system changes.
    for (name, package) in sid {
        if locate(name).is_none() {
            qemu::ensure_package(package)?;
        }
    }
    tools::ensure(&rest)
}

/// Returns a [`Command`] for the program `name`: a private-root program's starts it
/// through its root's loader ([`qemu::system`]), the others are as [`tools::command`].
fn command(name: &str) -> Result<Command, String> {
    if let Some(Tool {
        source: Source::Sid(package),
        ..
    }) = tools::entry(name)
    {
        let arch =
            qemu::arch_of(package).ok_or_else(|| format!("xtask fetches no {package} from sid"))?;
        return qemu::system(arch);
    }
    tools::command(name)
}

/// `cargo xtask tools list | ensure [--all] [--probe] [TOOL...]`.
pub(crate) fn tools_command(args: &[String]) -> Result<bool, String> {
    let usage = "usage: cargo xtask tools list | ensure [--all] [--probe] [TOOL...]";
    match args.first().map(String::as_str) {
        Some("list") if args.len() == 1 => {
            for t in TOOLS {
                let from = match t.source {
                    Source::Debian(p) => format!("Debian {p}"),
                    Source::Rustup(c) => format!("rustup component {c}"),
                    Source::Crate(c) => format!("crate {c}"),
                    Source::Sid(p) => format!("Debian sid {p}, in xtask's private root"),
                };
                println!("{}\t{from}", t.name);
            }
            Ok(true)
        }
        Some("ensure") => {
            let (mut all, mut probe, mut names) = (false, false, Vec::new());
            for a in &args[1..] {
                match a.as_str() {
                    "--all" => all = true,
                    "--probe" => probe = true,
                    flag if flag.starts_with("--") => return Err(usage.into()),
                    name => names.push(name),
                }
            }
            if all {
                names = TOOLS.iter().map(|t| t.name).collect();
            }
            ensure(&names)?;
            if !probe {
                return Ok(true);
            }
            let mut ok = true;
            for name in names {
                let tool = tools::entry(name).ok_or_else(|| format!("{name}: not in the table"))?;
                let at = locate(name).ok_or_else(|| format!("{name} is missing"))?;
                if tool.probe.is_empty() {
                    println!("tool {name}: present");
                    continue;
                }
                let mut cmd = match tool.source {
                    Source::Sid(_) => command(name)?,
                    _ => Command::new(&at),
                };
                let out = cmd
                    .args(tool.probe)
                    .stdin(Stdio::null())
                    .output()
                    .map_err(|e| format!("cannot run {}: {e}", at.display()))?;
                let said = String::from_utf8_lossy(&out.stdout);
                let first = said.lines().next().unwrap_or("").trim().to_string();
                match out.status.success() {
                    true => println!("tool {name}: {first}"),
                    false => {
                        ok = false;
                        println!("tool {name}: FAILED ({}) {first}", out.status)
                    }
                }
            }
            Ok(ok)
        }
        _ => Err(usage.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_private_root_program_is_one_qemu_fetches() {
        for t in TOOLS {
            if let Source::Sid(package) = t.source {
                let arch = qemu::arch_of(package).unwrap_or_else(|| panic!("{package}"));
                assert!(t.name.ends_with(arch), "{} is not {arch}'s", t.name);
            }
        }
    }
}
