// SPDX-License-Identifier: GPL-2.0

//! Which of the driver's `pub` items another crate needs.
//!
//! `cargo xtask pub-audit [--list]` copies the repository's files (those git tracks or
//! does not ignore; outside a checkout, all but `target`) into `target/pub-audit/tree`,
//! narrows every `pub` item of `drivers/gpu/nova-core` to `pub(crate)`, and compiles what
//! uses the driver. Each error a narrowed item causes puts that item back, and the
//! crates are compiled again until they build; what was put back is what other crates
//! need:
//!
//! 1. the device side: the library and binaries of every crate under `drivers/gpu/vgsp`
//!    (the virtual GSP, the test bench, the emulated GH100, ivshmem, `vdev`), compiled
//!    first and alone;
//! 2. the driver's own public signatures: a type a `pub` function names (rustc's
//!    `private_interfaces` and `private_bounds`), the `is_empty` of a `pub` `len`
//!    (clippy's `len_without_is_empty`), asked after the device side and again at the
//!    end;
//! 3. tests and tools alone: every target of the workspace, the ordering model's loom
//!    scenarios (`--cfg loom`), the three crates built apart (`tests/fuzz`,
//!    `tests/upstream` against the Linux 7.3 tree of `cargo xtask linux-7.3`,
//!    `tools/trace`);
//! 4. documentation alone: the workspace's, whose links to the driver's items rustdoc
//!    resolves (`cargo doc`, `-D rustdoc::broken_intra_doc_links`). Doctests are not run:
//!    the driver's one doctest is `compile_fail`, and no other crate's names a driver
//!    item.
//!
//! What stays narrowed no other crate uses: it should be `pub(crate)`.
//!
//! ```text
//! pub-audit: drivers/gpu/nova-core: L `pub` lines; N items another crate needs: D the device side, S the driver's signatures, T tests and tools alone
//! pub-audit: items no other crate uses: U
//! ```
//!
//! (A need no item has is left out of the first line.)
//!
//! The `pub` lines are counted as `grep -E '^\s*pub (unsafe )?(const )?(fn|struct|enum|
//! const|static|type|trait|mod|use|macro)'` counts them (module declarations, re-exports
//! and a field named `type_` included). `--list` prints each needed item and the crates
//! whose errors put it back (the first to fail on it: a crate whose dependency failed is
//! compiled in a later round). The driver's `pub use self::{…}` re-exports become globs for
//! the audit, which pass on what is `pub` and drop the rest; another form of `pub use` is
//! refused, as the audit could not narrow through it.
//!
//! Exit status 0 if every `pub` item is needed, 1 if some is not (each is named), 2 with
//! the reason if a build fails for another cause than an item's visibility.

use std::{
    collections::{
        BTreeMap,
        BTreeSet, //
    },
    fs,
    path::{
        Path,
        PathBuf, //
    },
};

use serde_json::Value;

use crate::{
    linux,
    util::{
        self,
        process::{
            last_lines,
            Progress, //
        },
        tools, //
    },
};

/// The driver crate, relative to the repository.
const DRIVER: &str = "drivers/gpu/nova-core";

/// The device side's crates are those below this directory.
const DEVICE: &str = "drivers/gpu/vgsp";

/// The crates outside the workspace that use the driver, relative to the repository.
const APART: &[&str] = &["tests/fuzz", "tests/upstream", "tools/trace"];

/// The package whose scenarios build only with `--cfg loom` (the ordering model).
const LOOM_PACKAGE: &str = "vgsp-model";

/// How a [`Build`] compiles, beyond its arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flavour {
    /// As the repository's own builds do.
    Plain,
    /// With `--cfg loom`, in a target directory of its own.
    Loom,
    /// `cargo doc`, an unresolved intra-doc link an error.
    Doc,
}

/// One `cargo` command the audit runs, in a directory.
struct Build<'a> {
    /// Where: the copy's root, or a crate built apart.
    dir: PathBuf,
    /// `check`, `clippy` or `doc` and what to build.
    args: Vec<&'a str>,
    /// How it compiles.
    flavour: Flavour,
}

impl<'a> Build<'a> {
    fn new(dir: &Path, args: Vec<&'a str>) -> Self {
        Self {
            dir: dir.to_path_buf(),
            args,
            flavour: Flavour::Plain,
        }
    }
}

/// The item keywords a narrowed line declares (`mod` and `use` are not items to narrow).
const ITEM_KEYWORDS: &[&str] = &[
    "fn", "struct", "enum", "const", "static", "type", "trait", "macro",
];

/// The keywords the issue's count takes after `pub `, as a prefix (so `pub type_` counts).
const COUNTED_KEYWORDS: &[&str] = &[
    "fn", "struct", "enum", "const", "static", "type", "trait", "mod", "use", "macro",
];

/// The driver's own lints that make an item `pub` because another `pub` item needs it.
const SIGNATURE_LINTS: &[&str] = &[
    "private_interfaces",
    "private_bounds",
    "clippy::len_without_is_empty",
];

/// Who needs an item, in the order the audit asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Need {
    /// A library or binary of the device side.
    Device,
    /// A `pub` signature of the driver itself.
    Signature,
    /// Tests and tools alone.
    Tests,
    /// Another crate's documentation alone: a link to the item.
    Docs,
}

impl Need {
    fn label(self) -> &'static str {
        match self {
            Self::Device => "the device side",
            Self::Signature => "the driver's signatures",
            Self::Tests => "tests and tools alone",
            Self::Docs => "documentation alone",
        }
    }
}

/// One line of the driver, narrowed: where it is and what it declares.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Narrowed {
    /// The file, relative to the driver's directory.
    file: PathBuf,
    /// The line, from 0.
    line: usize,
    /// The item's name.
    name: String,
}

/// The scratch copy of the repository and the driver's lines before and after narrowing.
struct Audit {
    /// The scratch copy's root.
    tree: PathBuf,
    /// Cargo's target directory for every check, the audit's own: cargo names a path
    /// crate's build by its path inside the workspace, so the copy's crates would
    /// overwrite (and be taken for) the repository's in a shared one.
    target: PathBuf,
    /// The Linux 7.3 tree `tests/upstream` compiles upstream's files from.
    linux: PathBuf,
    /// Each driver file's lines as in the repository.
    original: BTreeMap<PathBuf, Vec<String>>,
    /// Each driver file's lines as in the scratch copy.
    current: BTreeMap<PathBuf, Vec<String>>,
    /// The lines still narrowed.
    narrowed: BTreeSet<Narrowed>,
    /// The lines put back, by whom, and the crates whose errors did.
    needed: BTreeMap<Narrowed, (Need, BTreeSet<String>)>,
}

/// Returns `line` with its `pub` item narrowed to `pub(crate)`, and the item's name; `None`
/// if it declares no `pub` item (a `pub(crate)` one, a field, `pub mod`, `pub use`).
fn narrow(line: &str) -> Option<(String, String)> {
    let indent = &line[..line.len() - line.trim_start().len()];
    let rest = line.trim_start().strip_prefix("pub ")?;
    let mut words = rest.split_whitespace().peekable();
    while words
        .peek()
        .is_some_and(|w| *w == "unsafe" || *w == "const")
    {
        let w = words.next()?;
        // `pub const NAME` is an item, `pub const fn` a qualifier.
        if w == "const"
            && words
                .peek()
                .is_some_and(|n| *n != "unsafe" && !ITEM_KEYWORDS.contains(n))
        {
            return Some((format!("{indent}pub(crate) {rest}"), ident(words.next()?)));
        }
    }
    let keyword = words.next()?;
    if !ITEM_KEYWORDS.contains(&keyword) || keyword == "const" {
        return None;
    }
    Some((format!("{indent}pub(crate) {rest}"), ident(words.next()?)))
}

/// Returns the identifier at the start of `word` (`Cmdq<'a>` → `Cmdq`).
fn ident(word: &str) -> String {
    word.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$')
        .collect()
}

/// Returns whether `line` is one the issue's count takes.
fn counted(line: &str) -> bool {
    let Some(rest) = line.trim_start().strip_prefix("pub ") else {
        return false;
    };
    let rest = rest.strip_prefix("unsafe ").unwrap_or(rest);
    let rest = rest.strip_prefix("const ").unwrap_or(rest);
    COUNTED_KEYWORDS.iter().any(|k| rest.starts_with(k))
        || (line.trim_start().starts_with("pub const ") && !rest.is_empty())
}

/// Rewrites the `pub use self::{…};` statements of `text` as glob re-exports of the modules
/// they name (`pub use self::{a::*, b::*};`).
///
/// # Errors
///
/// - A `pub use` of another form, or one whose list does not close: the line.
fn glob_reexports(text: &str) -> Result<String, String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if !line.trim_start().starts_with("pub use ") {
            out.push(line.to_string());
            i += 1;
            continue;
        }
        if !line.trim_start().starts_with("pub use self::{") {
            return Err(format!(
                "line {}: only `pub use self::{{…}}` can be audited",
                i + 1
            ));
        }
        let start = i;
        let mut statement = String::new();
        while i < lines.len() && !lines[i].trim_end().ends_with(';') {
            statement += lines[i];
            statement.push('\n');
            i += 1;
        }
        let Some(last) = lines.get(i) else {
            return Err(format!("line {}: the `pub use` does not end", start + 1));
        };
        statement += last;
        i += 1;
        let indent = &line[..line.len() - line.trim_start().len()];
        let globs: Vec<String> = top_modules(&statement)
            .iter()
            .map(|m| format!("{m}::*"))
            .collect();
        out.push(format!("{indent}pub use self::{{{}}};", globs.join(", ")));
        // Empty lines where the list was: the lines after keep their numbers.
        out.extend((start + 1..i).map(|_| String::new()));
    }
    Ok(out.join("\n") + "\n")
}

/// Returns the modules named at the top of a `use self::{…}` list (`a` of `a::{X, Y}`).
fn top_modules(statement: &str) -> Vec<String> {
    let body = statement.split_once('{').map_or("", |(_, b)| b);
    let (mut depth, mut word, mut modules) = (0usize, String::new(), Vec::new());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ':' if depth == 0
                && chars.peek() == Some(&':')
                && !word.is_empty()
                && !modules.contains(&word) =>
            {
                modules.push(word.clone());
            }
            c if c.is_alphanumeric() || c == '_' => {
                word.push(c);
                continue;
            }
            _ => {}
        }
        word.clear();
    }
    modules
}

/// Returns the item a privacy error or an unresolved link names in its message, if it
/// names one: the last segment of the path quoted before `is private`, or after `cannot
/// find` or `unresolved link to`.
fn named_item(message: &str) -> Option<String> {
    const BEFORE: &[&str] = &["` is private", "` is only public within the crate"];
    const AFTER: &[&str] = &["cannot find ", "unresolved link to "];
    let before = BEFORE.iter().find_map(|marker| {
        let head = &message[..message.find(marker)?];
        Some(&head[head.rfind('`')? + 1..])
    });
    let after = || {
        AFTER.iter().find_map(|marker| {
            let tail = &message[message.find(marker)?..];
            let open = tail.find('`')? + 1;
            Some(&tail[open..open + tail[open..].find('`')?])
        })
    };
    let quoted = before.or_else(after)?;
    let name = quoted.rsplit("::").next().unwrap_or(quoted);
    (!name.is_empty()).then(|| name.to_string())
}

/// Returns every span of a diagnostic, its children's included.
fn spans(message: &Value) -> Vec<&Value> {
    let mut all: Vec<&Value> = message["spans"]
        .as_array()
        .map(|s| s.iter().collect())
        .unwrap_or_default();
    for child in message["children"].as_array().into_iter().flatten() {
        all.extend(spans(child));
    }
    all
}

impl Audit {
    /// Makes the scratch copy and narrows the driver.
    ///
    /// # Errors
    ///
    /// - A file cannot be listed, read, copied or written; a `pub use` cannot be audited.
    fn new(repo: &Path, linux: PathBuf) -> Result<Self, String> {
        let scratch = repo.join("target/pub-audit");
        let tree = scratch.join("tree");
        if tree.exists() {
            fs::remove_dir_all(&tree).map_err(|e| format!("{}: {e}", tree.display()))?;
        }
        copy_sources(repo, &tree)?;
        // rustc's and cargo's paths are canonical: so is the tree's, to compare with them.
        let tree = fs::canonicalize(&tree).map_err(|e| format!("{}: {e}", tree.display()))?;
        let mut audit = Self {
            target: scratch.join("target"),
            linux,
            original: BTreeMap::new(),
            current: BTreeMap::new(),
            narrowed: BTreeSet::new(),
            needed: BTreeMap::new(),
            tree,
        };
        audit.narrow_driver()?;
        Ok(audit)
    }

    /// Narrows every `pub` item of the driver's copy, and makes its re-exports globs.
    ///
    /// # Errors
    ///
    /// - A file cannot be read or written; a `pub use` cannot be audited.
    fn narrow_driver(&mut self) -> Result<(), String> {
        let driver = self.tree.join(DRIVER);
        for path in util::rust_files(&driver)? {
            let rel = path
                .strip_prefix(&driver)
                .map_err(|e| e.to_string())?
                .to_path_buf();
            let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let text =
                glob_reexports(&text).map_err(|e| format!("{DRIVER}/{}: {e}", rel.display()))?;
            let original: Vec<String> = text.lines().map(str::to_string).collect();
            let mut current = original.clone();
            for (line, text) in current.iter_mut().enumerate() {
                if let Some((narrowed, name)) = narrow(text) {
                    *text = narrowed;
                    self.narrowed.insert(Narrowed {
                        file: rel.clone(),
                        line,
                        name,
                    });
                }
            }
            self.original.insert(rel.clone(), original);
            self.current.insert(rel.clone(), current);
            self.write(&rel)?;
        }
        Ok(())
    }

    /// Writes the copy of the driver's file `rel`.
    fn write(&self, rel: &Path) -> Result<(), String> {
        let path = self.tree.join(DRIVER).join(rel);
        let text = self.current[rel].join("\n") + "\n";
        fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Puts `item` back as it was, needed by `crate_` for `need`.
    fn restore(&mut self, item: &Narrowed, need: Need, crate_: &str) -> Result<(), String> {
        self.narrowed.remove(item);
        let original = self.original[&item.file][item.line].clone();
        if let Some(lines) = self.current.get_mut(&item.file) {
            lines[item.line] = original;
        }
        self.needed
            .entry(item.clone())
            .or_insert_with(|| (need, BTreeSet::new()))
            .1
            .insert(crate_.to_string());
        self.write(&item.file)
    }

    /// Returns the narrowed lines a diagnostic's spans point at (`base`: what its file
    /// names are relative to), or else the ones its message names.
    fn culprits(&self, message: &Value, base: &Path) -> Vec<Narrowed> {
        let driver = self.tree.join(DRIVER);
        let mut found: Vec<Narrowed> = spans(message)
            .into_iter()
            .filter_map(|span| {
                let file = base.join(span["file_name"].as_str()?);
                let file = fs::canonicalize(file).ok()?;
                let rel = file.strip_prefix(&driver).ok()?.to_path_buf();
                let line = usize::try_from(span["line_start"].as_u64()?)
                    .ok()?
                    .checked_sub(1)?;
                self.narrowed
                    .iter()
                    .find(|n| n.file == rel && n.line == line)
                    .cloned()
            })
            .collect();
        if found.is_empty() {
            if let Some(name) = message["message"].as_str().and_then(named_item) {
                found = self
                    .narrowed
                    .iter()
                    .filter(|n| n.name == name)
                    .cloned()
                    .collect();
            }
        }
        found.sort();
        found.dedup();
        found
    }

    /// Runs `build`'s `cargo` command, and puts back
    /// for `need` what its diagnostics blame; returns how many items it put back, and the
    /// errors it could not attribute.
    ///
    /// # Errors
    ///
    /// - cargo cannot be run, or a file cannot be written.
    fn check(&mut self, build: &Build<'_>, need: Need) -> Result<(usize, Vec<String>), String> {
        let Build { dir, args, flavour } = build;
        let driver = self.tree.join(DRIVER);
        let mut cargo = tools::command("cargo")?;
        cargo
            .current_dir(dir)
            .args(args)
            .args(["--message-format=json", "--quiet"])
            .env("VGSP_UPSTREAM_TREE", &self.linux);
        cargo.env_remove("RUSTDOCFLAGS");
        match flavour {
            // Another configuration of every crate: a target directory of its own.
            Flavour::Loom => cargo.env("RUSTFLAGS", "--cfg loom").env(
                "CARGO_TARGET_DIR",
                self.target.with_file_name("target-loom"),
            ),
            Flavour::Plain | Flavour::Doc => cargo
                .env_remove("RUSTFLAGS")
                .env("CARGO_TARGET_DIR", &self.target),
        };
        if *flavour == Flavour::Doc {
            // Only what another crate's links need: the driver's own links to its
            // narrowed items are warnings (`private_intra_doc_links`), not the audit's.
            cargo.env("RUSTDOCFLAGS", "-D rustdoc::broken_intra_doc_links");
        }
        let out = cargo
            .output()
            .map_err(|e| format!("cannot run cargo in {}: {e}", dir.display()))?;
        let (mut restored, mut unexplained) = (0, Vec::new());
        let diags = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|diag| diag["reason"] == "compiler-message")
            .collect::<Vec<_>>();
        for diag in &diags {
            let message = &diag["message"];
            let manifest = PathBuf::from(diag["manifest_path"].as_str().unwrap_or_default());
            let crate_dir = manifest.parent().unwrap_or(Path::new(""));
            let own = crate_dir == driver;
            let lint = message["code"]["code"].as_str().unwrap_or_default();
            let level = message["level"].as_str().unwrap_or_default();
            // The driver's own warnings that a `pub` signature names a narrowed type, or
            // that a `pub` `len` lost its `is_empty`.
            let signature = need == Need::Signature && own && SIGNATURE_LINTS.contains(&lint);
            if level != "error" && !signature {
                continue;
            }
            let kinds = diag["target"]["kind"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let who = format!(
                "{} ({})",
                crate_dir
                    .strip_prefix(&self.tree)
                    .unwrap_or(crate_dir)
                    .display(),
                kinds
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(",")
            );
            let need = if signature { Need::Signature } else { need };
            let culprits = self.culprits(message, dir);
            if culprits.is_empty() {
                let text = message["rendered"].as_str().unwrap_or_default();
                if !text.starts_with("error: aborting") && !text.contains("could not compile") {
                    unexplained.push(format!("{who}: {text}"));
                }
                continue;
            }
            for item in culprits {
                self.restore(&item, need, &who)?;
                restored += 1;
            }
        }
        if out.status.success() {
            unexplained.clear();
        } else if restored == 0 && unexplained.is_empty() {
            // Failed with no diagnostic to read (a build script, the lock file, cargo).
            unexplained.push(format!(
                "cargo {} in {}: {}",
                args.join(" "),
                dir.display(),
                last_lines(&String::from_utf8_lossy(&out.stderr), 10)
            ));
        }
        Ok((restored, unexplained))
    }

    /// Compiles in rounds until every build succeeds, putting back for `need` what fails.
    ///
    /// # Errors
    ///
    /// - A round's errors name no narrowed item: they are printed.
    fn until_built(
        &mut self,
        builds: &[Build<'_>],
        need: Need,
        progress: &Progress,
    ) -> Result<(), String> {
        for round in 1.. {
            let (mut restored, mut unexplained) = (0, Vec::new());
            for build in builds {
                let (r, u) = self.check(build, need)?;
                restored += r;
                unexplained.extend(u);
            }
            progress.say(&format!(
                "{}: round {round}, {restored} put back",
                need.label()
            ));
            if restored == 0 {
                if unexplained.is_empty() {
                    return Ok(());
                }
                return Err(format!(
                    "the audit's builds fail for another cause than a narrowed item:\n{}",
                    unexplained
                        .into_iter()
                        .take(3)
                        .collect::<Vec<_>>()
                        .join("\n")
                ));
            }
        }
        Ok(())
    }

    /// Returns the device side's packages, from the workspace's metadata.
    ///
    /// # Errors
    ///
    /// - `cargo metadata` fails or says nothing readable.
    fn device_packages(&self) -> Result<Vec<String>, String> {
        let out = tools::command("cargo")?
            .current_dir(&self.tree)
            .args(["metadata", "--no-deps", "--format-version=1"])
            .output()
            .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
        let meta: Value = serde_json::from_slice(&out.stdout).map_err(|e| {
            format!(
                "cargo metadata: {e}: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        })?;
        let device = self.tree.join(DEVICE);
        Ok(meta["packages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| {
                p["manifest_path"]
                    .as_str()
                    .is_some_and(|m| Path::new(m).starts_with(&device))
            })
            .filter_map(|p| p["name"].as_str().map(str::to_string))
            .collect())
    }
}

/// Copies the repository's files into `tree`: those git tracks or does not ignore, or,
/// outside a git checkout, all but the `target` and `.git` directories.
///
/// # Errors
///
/// - A file cannot be listed or copied: the error names it.
fn copy_sources(repo: &Path, tree: &Path) -> Result<(), String> {
    let listed = tools::command("git")?
        .current_dir(repo)
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .output()
        .map_err(|e| format!("git ls-files: {e}"))?;
    if !listed.status.success() {
        return util::copy_dir(repo, tree, &["target", ".git"]);
    }
    for name in String::from_utf8_lossy(&listed.stdout).split('\0') {
        let from = repo.join(name);
        if name.is_empty() || !from.is_file() {
            continue;
        }
        let to = tree.join(name);
        if let Some(dir) = to.parent() {
            fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        fs::copy(&from, &to).map_err(|e| format!("{name}: {e}"))?;
    }
    Ok(())
}

/// Returns how many lines of the driver the issue's count takes.
///
/// # Errors
///
/// - A file cannot be read.
fn count_pub_lines(repo: &Path) -> Result<usize, String> {
    let mut n = 0;
    for path in util::rust_files(&repo.join(DRIVER))? {
        let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        n += text.lines().filter(|l| counted(l)).count();
    }
    Ok(n)
}

/// `cargo xtask pub-audit [--list]`.
///
/// # Errors
///
/// - A build fails for another cause than an item's visibility, or a file or tool is
///   missing: the reason.
pub(crate) fn pub_audit(args: &[String]) -> Result<bool, String> {
    let list = match args {
        [] => false,
        [flag] if flag == "--list" => true,
        _ => return Err("usage: cargo xtask pub-audit [--list]".into()),
    };
    let progress = Progress::new("pub-audit");
    let repo = util::repo()?;
    let linux = linux::linux_7_3()?;
    let mut audit = Audit::new(&repo, linux)?;
    progress.say(&format!(
        "{} `pub` items narrowed in {}",
        audit.narrowed.len(),
        audit.tree.join(DRIVER).display()
    ));
    let tree = audit.tree.clone();
    let packages = audit.device_packages()?;
    let mut device = vec!["check"];
    for p in &packages {
        device.extend(["-p", p.as_str()]);
    }
    audit.until_built(&[Build::new(&tree, device)], Need::Device, &progress)?;
    tools::ensure(&["cargo-clippy"])?;
    let clippy = [Build::new(&tree, vec!["clippy", "-p", "nova-core"])];
    audit.until_built(&clippy, Need::Signature, &progress)?;
    let mut all = vec![
        Build::new(&tree, vec!["check", "--workspace", "--all-targets"]),
        Build {
            flavour: Flavour::Loom,
            ..Build::new(&tree, vec!["check", "-p", LOOM_PACKAGE, "--all-targets"])
        },
    ];
    all.extend(
        APART
            .iter()
            .map(|d| Build::new(&tree.join(d), vec!["check", "--all-targets"])),
    );
    audit.until_built(&all, Need::Tests, &progress)?;
    let docs = Build {
        flavour: Flavour::Doc,
        ..Build::new(&tree, vec!["doc", "--workspace", "--no-deps"])
    };
    audit.until_built(&[docs], Need::Docs, &progress)?;
    // The types the tests' items name in their signatures.
    audit.until_built(&clippy, Need::Signature, &progress)?;

    let mut by_need: BTreeMap<Need, usize> = BTreeMap::new();
    for (need, _) in audit.needed.values() {
        *by_need.entry(*need).or_default() += 1;
    }
    if list {
        for (item, (need, crates)) in &audit.needed {
            let crates: Vec<&str> = crates.iter().map(String::as_str).collect();
            println!(
                "pub-audit: {DRIVER}/{}:{} {}: {} ({})",
                item.file.display(),
                item.line + 1,
                item.name,
                need.label(),
                crates.join(", ")
            );
        }
    }
    let split: Vec<String> = by_need
        .iter()
        .map(|(need, n)| format!("{n} {}", need.label()))
        .collect();
    println!(
        "pub-audit: {DRIVER}: {} `pub` lines; {} items another crate needs: {}",
        count_pub_lines(&repo)?,
        audit.needed.len(),
        split.join(", ")
    );
    for item in &audit.narrowed {
        println!(
            "pub-audit: {DRIVER}/{}:{} {}: no other crate uses it; make it pub(crate)",
            item.file.display(),
            item.line + 1,
            item.name
        );
    }
    println!(
        "pub-audit: items no other crate uses: {}",
        audit.narrowed.len()
    );
    Ok(audit.narrowed.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrows_items_and_names_them() {
        assert_eq!(
            narrow("    pub const fn errno(self) -> Error {"),
            Some((
                "    pub(crate) const fn errno(self) -> Error {".into(),
                "errno".into()
            ))
        );
        assert_eq!(
            narrow("pub const NV_OK: u32 = 0;"),
            Some(("pub(crate) const NV_OK: u32 = 0;".into(), "NV_OK".into()))
        );
        assert_eq!(
            narrow("pub struct PendingReply<'a, R> {"),
            Some((
                "pub(crate) struct PendingReply<'a, R> {".into(),
                "PendingReply".into()
            ))
        );
        assert_eq!(
            narrow("        pub struct $name;").map(|n| n.1),
            Some("$name".into())
        );
    }

    #[test]
    fn leaves_fields_modules_reexports_and_narrow_items() {
        for line in [
            "    pub type_: u8,",
            "    pub function: u32,",
            "pub mod cmdq;",
            "pub use self::{",
            "pub(crate) fn gsp_mem_pte() {",
            "    fn private() {}",
        ] {
            assert_eq!(narrow(line), None, "{line}");
        }
    }

    #[test]
    fn counts_as_the_issue_s_grep_does() {
        for line in [
            "pub mod gsp;",
            "pub use self::{",
            "    pub type_: u8,",
            "pub const fn f()",
            "pub unsafe fn g()",
        ] {
            assert!(counted(line), "{line}");
        }
        for line in [
            "pub(crate) fn f()",
            "    pub function: u32,",
            "// pub fn f()",
        ] {
            assert!(!counted(line), "{line}");
        }
    }

    #[test]
    fn makes_a_self_reexport_list_globs_of_its_modules() {
        let text = "mod a;\npub use self::{\n    a::{\n        X,\n        Y, //\n    },\n    b::Z,\n};\nfn f() {}\n";
        let out = glob_reexports(text).unwrap();
        assert_eq!(out.lines().nth(1), Some("pub use self::{a::*, b::*};"));
        // Every line after keeps its number.
        assert_eq!(out.lines().count(), text.lines().count());
        assert_eq!(out.lines().nth(8), Some("fn f() {}"));
    }

    #[test]
    fn refuses_a_reexport_it_cannot_narrow_through() {
        let e = glob_reexports("pub use crate::gsp::fw::X;\n").unwrap_err();
        assert!(e.contains("line 1"), "{e}");
    }

    #[test]
    fn finds_the_item_a_privacy_error_names() {
        assert_eq!(
            named_item("constant `MAX_ELEMENT_PAYLOAD` is private").as_deref(),
            Some("MAX_ELEMENT_PAYLOAD")
        );
        assert_eq!(
            named_item("type `fw::boot::GspArgumentsCached` is private").as_deref(),
            Some("GspArgumentsCached")
        );
        assert_eq!(
            named_item("cannot find function `checksum` in this scope").as_deref(),
            Some("checksum")
        );
        assert_eq!(named_item("`GSP_MEM_PAGES` is only public within the crate, and cannot be re-exported outside").as_deref(), Some("GSP_MEM_PAGES"));
        assert_eq!(named_item("mismatched types"), None);
        assert_eq!(
            named_item("unresolved link to `nova_core::gsp::fw::Checked`").as_deref(),
            Some("Checked")
        );
    }
}
