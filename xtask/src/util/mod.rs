// SPDX-License-Identifier: GPL-2.0

//! Helpers the commands share. Nothing here imports a command module: every module of
//! xtask may use these, and these use only each other (`tools` uses `process`, `aarch64`
//! uses `tools`).

pub(crate) mod aarch64;
pub(crate) mod debian;
pub(crate) mod process;
pub(crate) mod stamp;
pub(crate) mod tools;

use std::{
    env,
    path::{
        Path,
        PathBuf, //
    },
};

/// Returns the cache directory: `$VGSP_CACHE`, default `~/.cache/vgsp`.
///
/// # Errors
///
/// - Neither `VGSP_CACHE` nor `HOME` is set.
pub(crate) fn cache() -> Result<PathBuf, String> {
    if let Some(dir) = env::var_os("VGSP_CACHE") {
        return Ok(PathBuf::from(dir));
    }
    let home = env::var_os("HOME").ok_or("neither VGSP_CACHE nor HOME is set")?;
    Ok(Path::new(&home).join(".cache/vgsp"))
}

/// The repository's root.
pub(crate) fn repo() -> Result<PathBuf, String> {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| "xtask is not inside the repository".into())
}
