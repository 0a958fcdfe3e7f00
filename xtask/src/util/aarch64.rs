// SPDX-License-Identifier: GPL-2.0

//! Programs built for aarch64 Linux with Debian's rustc and std source (`-Zbuild-std`):
//! the traced programs of the ordering checks, the GH100 guest's init.

use std::{
    env,
    ffi::OsString,
    path::{
        Path,
        PathBuf, //
    },
};

use super::tools;

/// Builds `bin` of the crate at `manifest` for aarch64 with Debian's rustc and std
/// source, in `target/<target_dir>`, with `envs` (the shim's marks, flags); returns the
/// executable.
pub(crate) fn build(
    repo: &Path,
    target_dir: &str,
    manifest: &Path,
    bin: &str,
    features: &[&str],
    envs: &[(&str, OsString)],
) -> Result<PathBuf, String> {
    let rustc = Path::new("/usr/bin/rustc");
    if !rustc.is_file() {
        return Err(
            "/usr/bin/rustc is missing: install Debian's rustc-web and rust-web-src".into(),
        );
    }
    let target_dir = repo.join("target").join(target_dir);
    let path = format!("/usr/bin:{}", env::var("PATH").unwrap_or_default());
    let mut cmd = tools::command("cargo")?;
    cmd.args([
        "build",
        "--release",
        "--target",
        "aarch64-unknown-linux-gnu",
    ])
    .args(["-Zbuild-std=std,panic_unwind", "--bin", bin])
    .arg("--target-dir")
    .arg(&target_dir)
    .current_dir(manifest)
    .env("PATH", path)
    .env("RUSTC", rustc)
    .env("RUSTDOC", "/usr/bin/rustdoc")
    .env("RUSTC_BOOTSTRAP", "1")
    .env(
        "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER",
        "aarch64-linux-gnu-gcc",
    )
    .envs(envs.iter().map(|(k, v)| (*k, v)));
    if !features.is_empty() {
        cmd.arg("--features").arg(features.join(","));
    }
    let status = cmd.status().map_err(|e| format!("cargo: {e}"))?;
    if !status.success() {
        return Err(format!(
            "{bin} does not build for aarch64 (cargo's errors above)"
        ));
    }
    Ok(target_dir
        .join("aarch64-unknown-linux-gnu/release")
        .join(bin))
}
