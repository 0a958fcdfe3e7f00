// SPDX-License-Identifier: GPL-2.0

//! Debian's archive as the system sees it, and private apt configurations that fetch
//! from it without touching the system's own sources or state.

use std::{
    fs,
    path::Path, //
};

/// The keyring private configurations trust (Debian's, as the system's sources do).
pub(crate) const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

/// Returns the system's Debian suite (`bookworm`), from `/etc/os-release`.
///
/// # Errors
///
/// - The file cannot be read, or names no `VERSION_CODENAME`.
pub(crate) fn system_suite() -> Result<String, String> {
    let text =
        fs::read_to_string("/etc/os-release").map_err(|e| format!("/etc/os-release: {e}"))?;
    text.lines()
        .find_map(|l| l.strip_prefix("VERSION_CODENAME="))
        .map(|s| s.trim_matches('"').to_string())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| "/etc/os-release names no VERSION_CODENAME".into())
}

/// Returns the Debian mirror the system's apt sources use.
pub(crate) fn debian_mirror() -> Result<String, String> {
    let mut texts = Vec::new();
    for dir in ["/etc/apt/sources.list.d", "/etc/apt"] {
        let Ok(entries) = fs::read_dir(dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name.ends_with(".sources") || name.ends_with(".list") {
                texts.push(fs::read_to_string(&p).unwrap_or_default());
            }
        }
    }
    // deb822 (`URIs: …`) or one-line (`deb [opts] URI suite …`) entries whose URI is a
    // Debian archive, not its security one.
    for text in &texts {
        for line in text.lines() {
            let line = line.trim();
            let uris = if let Some(rest) = line.strip_prefix("URIs:") {
                rest.split_whitespace().collect::<Vec<_>>()
            } else if let Some(rest) = line.strip_prefix("deb ") {
                rest.split_whitespace()
                    .filter(|w| !w.starts_with('['))
                    .take(1)
                    .collect()
            } else {
                continue;
            };
            if let Some(uri) = uris
                .into_iter()
                .find(|u| u.ends_with("/debian") || u.ends_with("/debian/"))
            {
                return Ok(uri.trim_end_matches('/').to_string());
            }
        }
    }
    Err("no Debian mirror in /etc/apt/sources.list.d or /etc/apt/sources.list".into())
}

/// Makes a private apt configuration in `apt` whose only sources are `sources` (lines
/// of a `sources.list`), with directories `extra` under it too; returns the options
/// that make `apt-get` use it (the system's own sources and state are never touched).
pub(crate) fn private_apt(
    apt: &Path,
    sources: &str,
    extra: &[&str],
) -> Result<Vec<String>, String> {
    for d in ["lists/partial", "cache/archives/partial"]
        .iter()
        .chain(extra)
    {
        fs::create_dir_all(apt.join(d)).map_err(|e| format!("{}: {e}", apt.display()))?;
    }
    let list = apt.join("sources.list");
    fs::write(&list, sources).map_err(|e| format!("{}: {e}", list.display()))?;
    Ok(vec![
        format!("-o=Dir::Etc::sourcelist={}", list.display()),
        "-o=Dir::Etc::sourceparts=/nonexistent".to_string(),
        format!("-o=Dir::State::Lists={}", apt.join("lists").display()),
        format!("-o=Dir::Cache={}", apt.join("cache").display()),
        "-o=APT::Sandbox::User=root".to_string(),
    ])
}
