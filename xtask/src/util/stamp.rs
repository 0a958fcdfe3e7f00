// SPDX-License-Identifier: GPL-2.0

//! Content stamps: what a build was made from, recorded in a file, so that it is made
//! again when that changes (make goes by modification times, which a fresh clone or
//! another checkout makes meaningless).

use std::{
    collections::BTreeMap,
    fs,
    path::{
        Path,
        PathBuf, //
    },
};

use sha2::{
    Digest,
    Sha256, //
};

/// Returns the SHA-256 of `data`, in hexadecimal.
pub(crate) fn sha256_hex(data: &[u8]) -> String {
    format!("{:x}", Sha256::digest(data))
}

/// Returns whether the stamp file `path` holds `value`.
pub(crate) fn stamp_matches(path: &Path, value: &str) -> bool {
    fs::read_to_string(path).is_ok_and(|recorded| recorded.trim_end() == value)
}

/// Records `value` in the stamp file `path`.
///
/// # Errors
///
/// - The file cannot be written.
pub(crate) fn write_stamp(path: &Path, value: &str) -> Result<(), String> {
    fs::write(path, format!("{value}\n")).map_err(|e| format!("{}: {e}", path.display()))
}

/// Returns the hash of the files under `paths` (relative to `root`; files or
/// directories, recursively): of every file's path, length and content, in path order,
/// and of every symbolic link's target.
///
/// # Errors
///
/// - A path is missing or cannot be read.
pub(crate) fn hash_sources(root: &Path, paths: &[&str]) -> Result<String, String> {
    let mut files = BTreeMap::new();
    let mut stack: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
    while let Some(rel) = stack.pop() {
        let path = root.join(&rel);
        let meta = fs::symlink_metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        if meta.is_dir() {
            for entry in fs::read_dir(&path).map_err(|e| format!("{}: {e}", path.display()))? {
                let entry = entry.map_err(|e| format!("{}: {e}", path.display()))?;
                stack.push(rel.join(entry.file_name()));
            }
        } else {
            files.insert(rel, meta.file_type().is_symlink());
        }
    }
    let mut hasher = Sha256::new();
    for (rel, is_link) in &files {
        let path = root.join(rel);
        let content = if *is_link {
            fs::read_link(&path).map(|t| t.into_os_string().into_encoded_bytes())
        } else {
            fs::read(&path)
        }
        .map_err(|e| format!("{}: {e}", path.display()))?;
        hasher.update(rel.as_os_str().as_encoded_bytes());
        hasher.update([0]);
        hasher.update(content.len().to_le_bytes());
        hasher.update(&content);
    }
    Ok(format!("{:x}", hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use std::env;

    use super::*;

    #[test]
    fn stamps_match_what_was_written() {
        let dir = env::temp_dir().join(format!("xtask-stamp-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let stamp = dir.join("s");
        assert!(!stamp_matches(&stamp, "a"));
        write_stamp(&stamp, "a").unwrap();
        assert!(stamp_matches(&stamp, "a"));
        assert!(!stamp_matches(&stamp, "b"));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn source_hash_follows_content_and_names_not_mtimes() {
        let dir = env::temp_dir().join(format!("xtask-hash-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("d/e")).unwrap();
        fs::write(dir.join("d/e/f.rs"), "fn f() {}").unwrap();
        fs::write(dir.join("K"), "obj-y += x").unwrap();
        let first = hash_sources(&dir, &["K", "d"]).unwrap();
        // Rewritten with the same content (a new mtime): the same hash.
        fs::write(dir.join("d/e/f.rs"), "fn f() {}").unwrap();
        assert_eq!(hash_sources(&dir, &["d", "K"]).unwrap(), first);
        fs::write(dir.join("d/e/f.rs"), "fn g() {}").unwrap();
        let edited = hash_sources(&dir, &["K", "d"]).unwrap();
        assert_ne!(edited, first);
        fs::rename(dir.join("d/e/f.rs"), dir.join("d/e/g.rs")).unwrap();
        assert_ne!(hash_sources(&dir, &["K", "d"]).unwrap(), edited);
        assert!(hash_sources(&dir, &["missing"]).is_err());
        fs::remove_dir_all(&dir).unwrap();
    }
}
