// SPDX-License-Identifier: GPL-2.0

//! Preserved program order of one agent, as a graph whose paths are its chains of
//! ordering.
//!
//! An agent's events, in program order, are [`Item`]s: accesses, and ordering points.
//! An ordering point orders every earlier access it selects before every later access it
//! selects, by kind: a `Read` barrier loads before loads, a control dependency the loads
//! the control flow depended on before later stores.
//!
//! Two accesses of one location are ordered as the memory models order them: a load
//! before a later load or store of the location it read, and a store before a later store
//! of its location (Linux's memory model keeps `fr` and `co` within one CPU in its
//! preserved program order; Arm's ordered-before likewise). A store before a later load of
//! its location is *not* ordered: the load may be satisfied from the agent's own store
//! buffer before the store is visible to anyone else (LKMM leaves `rfi` out of `hb`, Arm
//! out of ordered-before). That the load cannot read an older value than its own agent's
//! store is coherence, which [`crate::contract`] checks on its own (its "uniproc" axiom);
//! it orders nothing towards other locations.
//!
//! The graph stays linear in the number of events: each access has an edge to the next
//! ordering point of each kind that selects it before, each ordering point an edge to the
//! next point of the same kind and to the accesses it selects after up to that point, and
//! each access of a location from the agent's latest load of it, and a store also from
//! the agent's latest store of it (earlier ones reach those). One access is ordered
//! before another exactly when a path leads from the first to the second; every edge goes
//! forward in program order, so the graph is a DAG in index order and the questions below
//! take one pass each.
//!
//! An acquire ([`Item::Acquire`]) is ordered before every later access of its agent, and
//! every earlier access before a release ([`Item::Release`]): the edges from the latest
//! acquire to each access, and from each access to the next release, with the releases
//! chained, keep that linear too. They order nothing else: two accesses of one agent on
//! either side of a release and an acquire are ordered only through another agent that
//! reads the release (a lock handed over), never by the pair alone.
//!
//! The kinds of ordering are the caller's: [`crate::contract`] asks for Linux's DMA
//! barriers and the driver's locks, [`crate::compiled`] for what arm64's instructions
//! order, under either verdict.

use std::{collections::HashMap, vec::Vec};

/// Which accesses one side of an ordering point selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Select {
    /// Loads (an atomic read-modify-write is both).
    Loads,
    /// Stores.
    Stores,
    /// Every access.
    All,
    /// The loads the caller marked as control sources ([`Access::control`]).
    ControlLoads,
}

impl Select {
    fn matches(self, a: &Access) -> bool {
        match self {
            Self::Loads => a.reads,
            Self::Stores => a.writes,
            Self::All => true,
            Self::ControlLoads => a.control,
        }
    }
}

/// One access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// It reads.
    pub reads: bool,
    /// It writes.
    pub writes: bool,
    /// Its location, if accesses of one location are to be ordered by coherence.
    pub loc: Option<u64>,
    /// A load whose value the control flow after it is taken to depend on.
    pub control: bool,
}

impl Access {
    /// A plain access.
    pub const fn plain(reads: bool, writes: bool, loc: Option<u64>) -> Self {
        Self {
            reads,
            writes,
            loc,
            control: false,
        }
    }
}

/// One event of an agent, in program order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item {
    /// A memory access.
    Access(Access),
    /// An access with acquire semantics (a lock taken): ordered before every later access
    /// of the agent.
    Acquire(Access),
    /// An access with release semantics (a lock released): every earlier access of the
    /// agent is ordered before it.
    Release(Access),
    /// An ordering point: orders the earlier accesses `before` selects before the later
    /// ones `after` selects.
    Order {
        /// The earlier side.
        before: Select,
        /// The later side.
        after: Select,
    },
    /// Neither (kept so that indices stay those of the caller).
    Other,
}

impl Item {
    /// The access this item is, if it is one (plain, acquire or release).
    pub fn access(&self) -> Option<Access> {
        match *self {
            Self::Access(a) | Self::Acquire(a) | Self::Release(a) => Some(a),
            Self::Order { .. } | Self::Other => None,
        }
    }
}

/// The ordering graph of one agent.
pub struct Graph {
    succ: Vec<Vec<u32>>,
}

#[derive(Default)]
struct Chain {
    last: Option<usize>,
    pending: Vec<usize>,
}

impl Graph {
    /// Builds the graph of `items`, one agent's events in program order.
    pub fn new(items: &[Item]) -> Self {
        let n = items.len();
        let mut succ: Vec<Vec<u32>> = vec![Vec::new(); n];
        let edge = |from: usize, to: usize, succ: &mut Vec<Vec<u32>>| {
            debug_assert!(from < to);
            // CAST: traces are far below 2^32 events.
            succ[from].push(to as u32);
        };
        let mut chains: HashMap<(Select, Select), Chain> = HashMap::new();
        // Per location, the agent's latest load and latest store of it.
        let mut last_at: HashMap<u64, (Option<usize>, Option<usize>)> = HashMap::new();
        // The latest acquire, ordered before every later access; the accesses since the
        // latest release, ordered before the next one (which the latest is, too).
        let mut acquired: Option<usize> = None;
        let mut released: (Option<usize>, Vec<usize>) = (None, Vec::new());
        for (i, item) in items.iter().enumerate() {
            if item.access().is_some() {
                if let Some(a) = acquired {
                    edge(a, i, &mut succ);
                }
                if let Item::Release(_) = item {
                    for p in released.1.drain(..) {
                        edge(p, i, &mut succ);
                    }
                    if let Some(r) = released.0 {
                        edge(r, i, &mut succ);
                    }
                    released.0 = Some(i);
                } else {
                    released.1.push(i);
                }
                if let Item::Acquire(_) = item {
                    acquired = Some(i);
                }
            }
            match *item {
                Item::Access(a) | Item::Acquire(a) | Item::Release(a) => {
                    for (&(before, after), chain) in chains.iter_mut() {
                        if before.matches(&a) {
                            chain.pending.push(i);
                        }
                        if let (true, Some(f)) = (after.matches(&a), chain.last) {
                            edge(f, i, &mut succ);
                        }
                    }
                    if let Some(loc) = a.loc {
                        let (load, store) = last_at.entry(loc).or_default();
                        // A load before a later access of its location; a store before a
                        // later store only (a later load may be forwarded from it).
                        let mut from = [*load, None];
                        if a.writes {
                            from[1] = *store;
                        }
                        for prev in from.into_iter().flatten() {
                            edge(prev, i, &mut succ);
                        }
                        if a.reads {
                            *load = Some(i);
                        }
                        if a.writes {
                            *store = Some(i);
                        }
                    }
                }
                Item::Order { before, after } => {
                    // A chain that is new now has pending accesses from before its first
                    // point: collect them.
                    let chain = chains.entry((before, after)).or_insert_with(|| Chain {
                        last: None,
                        pending: (0..i)
                            .filter(|&j| items[j].access().is_some_and(|a| before.matches(&a)))
                            .collect(),
                    });
                    for p in chain.pending.drain(..) {
                        edge(p, i, &mut succ);
                    }
                    if let Some(prev) = chain.last {
                        edge(prev, i, &mut succ);
                    }
                    chain.last = Some(i);
                }
                Item::Other => {}
            }
        }
        Self { succ }
    }

    /// For every event, the latest event `source` selects that is ordered before it (by
    /// a path), if any.
    pub fn latest_before(&self, source: impl Fn(usize) -> bool) -> Vec<Option<usize>> {
        let mut best: Vec<Option<usize>> = vec![None; self.succ.len()];
        for i in 0..self.succ.len() {
            let b = if source(i) { Some(i) } else { best[i] };
            if b.is_none() {
                continue;
            }
            for &j in &self.succ[i] {
                let j = j as usize;
                best[j] = best[j].max(b);
            }
        }
        best
    }

    /// For every event, the earliest event `target` selects that it is ordered before,
    /// if any.
    pub fn earliest_after(&self, target: impl Fn(usize) -> bool) -> Vec<Option<usize>> {
        let mut first: Vec<Option<usize>> = vec![None; self.succ.len()];
        for i in (0..self.succ.len()).rev() {
            let mut f: Option<usize> = None;
            for &j in &self.succ[i] {
                let j = j as usize;
                let here = if target(j) { Some(j) } else { first[j] };
                f = match (f, here) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
            first[i] = f;
        }
        first
    }

    /// The edges, for callers that combine agents (`(from, to)` in item indices).
    pub fn edges(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.succ
            .iter()
            .enumerate()
            .flat_map(|(i, s)| s.iter().map(move |&j| (i, j as usize)))
    }
}
