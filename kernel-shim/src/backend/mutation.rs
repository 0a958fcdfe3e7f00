// SPDX-License-Identifier: GPL-2.0

//! Barrier mutations, for mutation testing of the ordering points: the model backend
//! (`--cfg loom`) and the trace build (feature `trace`) apply them at run time, by the
//! source location of each `dma_mb` and shared access (`#[track_caller]` through the
//! accessors).
//!
//! A mutation list is a comma-separated list of `FILE:LINE:OP`, with `OP` one of `delete`,
//! `weaken-read`, `weaken-write`, `before-FLAVOUR:FILE:LINE`, `after-FLAVOUR:FILE:LINE`
//! (`FLAVOUR` is `full`, `read` or `write`): the barrier at `FILE:LINE` is removed, and
//! for the last two a barrier of `FLAVOUR` runs just before/after the access at the
//! second location. `VGSP_MUTANT` holds the list of a mutation run.

use std::{
    panic::Location,
    string::{
        String,
        ToString, //
    },
    vec::Vec,
};

use super::Flavour;

/// What to do to the barrier at one source line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MutationOp {
    /// Remove it.
    Delete,
    /// Replace its flavour.
    Weaken(Flavour),
    /// Remove it and run a barrier of this flavour just before the access at `site`.
    MoveBefore(Flavour, Site),
    /// Remove it and run a barrier of this flavour just after the access at `site`.
    MoveAfter(Flavour, Site),
}

/// A source line: a file path as the compiler names it, and a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// The file.
    pub file: String,
    /// The line.
    pub line: u32,
}

impl Site {
    /// Whether `loc` is this line. The compiler names a file relative to the workspace
    /// that builds it, or absolutely for a crate outside it: a site matches a location
    /// whose path is its own or ends with `/` and its own.
    pub(crate) fn is(&self, loc: &Location<'_>) -> bool {
        let file = loc.file();
        self.line == loc.line()
            && (file == self.file
                || file
                    .strip_suffix(self.file.as_str())
                    .is_some_and(|dir| dir.ends_with('/')))
    }
}

/// A mutation of one barrier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mutation {
    /// The barrier's line.
    pub barrier: Site,
    /// What to do to it.
    pub op: MutationOp,
}

fn parse_flavour(s: &str) -> Option<Flavour> {
    match s {
        "full" => Some(Flavour::Full),
        "read" => Some(Flavour::Read),
        "write" => Some(Flavour::Write),
        _ => None,
    }
}

fn parse_site(s: &str) -> Option<Site> {
    let (file, line) = s.rsplit_once(':')?;
    Some(Site {
        file: file.to_string(),
        line: line.parse().ok()?,
    })
}

impl Mutation {
    /// Parses `FILE:LINE:OP` (see the module documentation).
    pub fn parse(spec: &str) -> Option<Self> {
        let mut parts = spec.splitn(3, ':');
        let file = parts.next()?;
        let line = parts.next()?.parse().ok()?;
        let op = parts.next()?;
        let op = match op {
            "delete" => MutationOp::Delete,
            "weaken-read" => MutationOp::Weaken(Flavour::Read),
            "weaken-write" => MutationOp::Weaken(Flavour::Write),
            _ => {
                let (how, site) = op.split_once(':')?;
                let (dir, flavour) = how.split_once('-')?;
                let flavour = parse_flavour(flavour)?;
                let site = parse_site(site)?;
                match dir {
                    "before" => MutationOp::MoveBefore(flavour, site),
                    "after" => MutationOp::MoveAfter(flavour, site),
                    _ => return None,
                }
            }
        };
        Some(Self {
            barrier: Site {
                file: file.to_string(),
                line,
            },
            op,
        })
    }
}

/// Parses `VGSP_MUTANT`.
///
/// # Panics
///
/// If `VGSP_MUTANT` cannot be parsed: a mutation run must not silently test nothing.
pub(crate) fn env_mutations() -> Vec<Mutation> {
    match std::env::var("VGSP_MUTANT") {
        Ok(spec) if !spec.is_empty() => spec
            .split(',')
            .map(|m| Mutation::parse(m).unwrap_or_else(|| panic!("bad VGSP_MUTANT entry {m:?}")))
            .collect(),
        _ => Vec::new(),
    }
}
