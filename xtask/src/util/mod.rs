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
    env, fs,
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
    let home = home().map_err(|_| "neither VGSP_CACHE nor HOME is set")?;
    Ok(home.join(".cache/vgsp"))
}

/// Returns the home directory of the user running this.
///
/// # Errors
///
/// - `HOME` is not set.
pub(crate) fn home() -> Result<PathBuf, String> {
    env::var_os("HOME")
        .map(PathBuf::from)
        .ok_or_else(|| "HOME is not set".into())
}

/// Copies the directory `from` to `to`, recursively (files and directories only), leaving
/// out the directories named in `skip`.
///
/// # Errors
///
/// - A directory cannot be read or made, or a file copied: the error names it.
pub(crate) fn copy_dir(from: &Path, to: &Path, skip: &[&str]) -> Result<(), String> {
    fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    for entry in fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))? {
        let entry = entry.map_err(|e| format!("{}: {e}", from.display()))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if src.is_dir() {
            if !skip.iter().any(|s| entry.file_name() == *s) {
                copy_dir(&src, &dst, skip)?;
            }
        } else {
            fs::copy(&src, &dst).map_err(|e| format!("{}: {e}", src.display()))?;
        }
    }
    Ok(())
}

/// Returns the `.rs` files below `dir`, sorted by path (a directory's before the file
/// of its name).
///
/// # Errors
///
/// - A directory cannot be read: the error names it.
pub(crate) fn rust_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        if path.is_dir() {
            files.extend(rust_files(&path)?);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// The repository's root.
pub(crate) fn repo() -> Result<PathBuf, String> {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| "xtask is not inside the repository".into())
}
