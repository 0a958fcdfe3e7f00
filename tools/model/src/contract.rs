// SPDX-License-Identifier: GPL-2.0

//! An axiomatic model of the Linux DMA barrier contract, in the style of herd.
//!
//! # The model
//!
//! A program is, per agent, a sequence of events in program order (po): loads and
//! stores of locations, and barriers of flavour `Full`, `Read` or `Write`. An execution
//! adds, for every load, the store it reads from (rf, or the initial value), and per
//! location a total coherence order of the stores (co). From-read is
//! `fr = rf⁻¹ ; co` (a load is before every store co-after the one it read).
//!
//! Preserved program order (ppo) of one agent: for events `a` po-before `b`,
//! - `a` and `b` access the same location and `a` is a load, or both are stores (a store
//!   before a later load of its location is not ordered: the load may be forwarded from
//!   the agent's store buffer; see [`crate::ppo`]); or
//! - a barrier between them orders them: `Full` orders every pair, `Read` orders
//!   load→load, `Write` orders store→store (Documentation/memory-barriers.txt; arm64's
//!   `dmb oshld` also orders load→store, but the contract does not promise it);
//! - `a` is a lock taken (an acquire of the lock's word), or `b` a lock released (a
//!   release of it): the driver's locks, which its threads hand each other what they
//!   learnt of the rings;
//! - nothing else: no address, data or control dependency is honoured, and there is
//!   no acquire/release annotation on ring accesses (the code's accessors are relaxed
//!   accesses next to explicit barriers).
//!
//! An agent is a thread: the driver may have several, sharing one queue. A lock's word has
//! no location for ppo, so an unlock followed by a lock on one thread orders nothing by
//! itself (Linux's memory model would order some pairs across it; this model credits
//! none); the acquire and release edges order accesses only along a chain through another
//! thread that took the lock (its `rfe`). That is how the threads' locks order what one
//! thread learnt (a pointer it loaded) before what the next thread does with it, and
//! nothing more.
//!
//! An execution is *allowed* iff `ppo ∪ rfe ∪ co ∪ fr` is acyclic, where rfe is rf
//! between different agents (a store may be seen early by its own agent, as through a
//! store buffer), and each location is coherent: `po-loc ∪ rf ∪ co ∪ fr` is acyclic
//! (LKMM's and herd's "uniproc": an agent never reads a value older than one it wrote or
//! read before, nor a store it makes later). This is multi-copy atomic, which arm64 is,
//! and which the DMA contract assumes for a coherent device.
//!
//! The device's own accesses of one location obey the same rules as a CPU's: it reads
//! its own writes (coherence), orders a load of a location before its later accesses of
//! it and a store before its later stores of it, and may satisfy a load from a store of
//! its own not yet visible to the CPUs. The virtual GSP relies on nothing more: it loads
//! the driver's pointers and stores its own, and never reads back a slot it wrote.
//!
//! # The question asked
//!
//! A trace is one execution that happened (recorded by the model backend). Its control
//! flow depends on what the *pointer* loads returned, so those keep their values. Each
//! *data* load (a page of a ring) is then asked in turn: is there an allowed execution
//! in which it reads from a different store of that page (an older version: the pointer
//! was seen before the data it publishes; or a newer one: the slot was overwritten while
//! still being read)? If so, the barriers do not protect that access.
//!
//! # Assumptions, stated
//!
//! - The device (GSP) is a coherent observer that itself obeys the same contract; DMA
//!   and the CPU see one coherent memory (no caches to flush, no IOMMU reordering).
//! - Accesses of one word are single-copy atomic; data pages are tracked as wholes (an
//!   element owns whole slots, so a page is never shared between live elements).
//! - Data loads are varied one at a time: an execution that needs two data loads to
//!   change at once to be allowed, while neither alone is, is not searched for.
//! - MMIO (the doorbell) is outside the model: the GSP does not rely on it for ordering.
//! - The driver's locks are CPU-to-CPU synchronisation, as Linux's memory model has them:
//!   a release orders every earlier access of its thread before it, an acquire every later
//!   one after it, and what a thread observed before its release reaches the next holder
//!   (the GSP's pointer store it loaded, say) for every observer, the GSP included. A
//!   lock is never taken to order one thread's accesses towards the GSP (see above).
//! - The kernel's own herd7 model does not cover DMA; this one is this project's.

use std::{
    collections::HashMap,
    fmt,
    string::String,
    vec::Vec, //
};

use crate::ppo::{
    self,
    Access,
    Item,
    Select, //
};

/// A barrier flavour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Flavour {
    /// Orders every pair.
    Full,
    /// Orders load→load.
    Read,
    /// Orders store→store.
    Write,
}

/// An event's operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// A load of `loc` that returned `value`.
    Load {
        /// The location.
        loc: u64,
        /// The value returned.
        value: u64,
    },
    /// A store of `value` to `loc`.
    Store {
        /// The location.
        loc: u64,
        /// The value stored.
        value: u64,
    },
    /// A barrier.
    Fence(Flavour),
    /// A lock taken: a load of the lock's word `loc` with acquire semantics, which returned
    /// `value`.
    Acquire {
        /// The lock's word.
        loc: u64,
        /// The value returned.
        value: u64,
    },
    /// A lock released: a store of `value` to the lock's word `loc` with release semantics.
    Release {
        /// The lock's word.
        loc: u64,
        /// The value stored.
        value: u64,
    },
    /// A load of `loc` with acquire semantics (`smp_load_acquire`), which returned `value`:
    /// ordered before every later access of its agent. Unlike [`Op::Acquire`], it is an
    /// access of a location like any other.
    LoadAcquire {
        /// The location.
        loc: u64,
        /// The value returned.
        value: u64,
    },
    /// A store of `value` to `loc` with release semantics (`smp_store_release`): every
    /// earlier access of its agent is ordered before it.
    StoreRelease {
        /// The location.
        loc: u64,
        /// The value stored.
        value: u64,
    },
}

/// One event.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Event {
    /// The agent (thread) that performed it.
    pub agent: u8,
    /// What it did.
    pub op: Op,
    /// Whether it is a data access (varied by [`find_violation`]); pointer accesses
    /// are not.
    pub data: bool,
    /// A description for reports.
    pub what: String,
}

impl Event {
    /// The location it accesses, if it is an access.
    pub fn loc(&self) -> Option<u64> {
        match self.op {
            Op::Load { loc, .. }
            | Op::Store { loc, .. }
            | Op::Acquire { loc, .. }
            | Op::Release { loc, .. }
            | Op::LoadAcquire { loc, .. }
            | Op::StoreRelease { loc, .. } => Some(loc),
            Op::Fence(_) => None,
        }
    }

    /// Whether it reads.
    pub fn is_load(&self) -> bool {
        matches!(
            self.op,
            Op::Load { .. } | Op::Acquire { .. } | Op::LoadAcquire { .. }
        )
    }

    /// Whether it writes.
    pub fn is_store(&self) -> bool {
        matches!(
            self.op,
            Op::Store { .. } | Op::Release { .. } | Op::StoreRelease { .. }
        )
    }

    /// The value a load returned or a store wrote.
    pub fn value(&self) -> Option<u64> {
        match self.op {
            Op::Load { value, .. }
            | Op::Store { value, .. }
            | Op::Acquire { value, .. }
            | Op::Release { value, .. }
            | Op::LoadAcquire { value, .. }
            | Op::StoreRelease { value, .. } => Some(value),
            Op::Fence(_) => None,
        }
    }
}

/// A way the barriers fail to protect a data access.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The data load.
    pub load: String,
    /// What it actually read from.
    pub actual: String,
    /// What it could read from in an allowed execution.
    pub could_read: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} read from {}, but an execution allowed by the DMA contract lets it read from {}",
            self.load, self.actual, self.could_read
        )
    }
}

/// The source of a load: a store's index, or the initial value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Src {
    Init,
    Store(usize),
}

/// An event as preserved program order sees it: a `Full` barrier orders every pair, a
/// `Read` one loads before loads, a `Write` one stores before stores; a lock taken is
/// ordered before every later access, and every earlier access before a lock released.
///
/// A lock's word has no location for preserved program order: two accesses of one
/// agent on either side of an unlock and a lock are not ordered by the lock alone (a
/// CPU's lock orders nothing towards the device; see the module documentation).
fn item(e: &Event) -> Item {
    match e.op {
        Op::Load { loc, .. } => Item::Access(Access::plain(true, false, Some(loc))),
        Op::Store { loc, .. } => Item::Access(Access::plain(false, true, Some(loc))),
        Op::Acquire { .. } => Item::Acquire(Access::plain(true, false, None)),
        Op::Release { .. } => Item::Release(Access::plain(false, true, None)),
        Op::LoadAcquire { loc, .. } => Item::Acquire(Access::plain(true, false, Some(loc))),
        Op::StoreRelease { loc, .. } => Item::Release(Access::plain(false, true, Some(loc))),
        Op::Fence(f) => {
            let side = match f {
                Flavour::Full => Select::All,
                Flavour::Read => Select::Loads,
                Flavour::Write => Select::Stores,
            };
            Item::Order {
                before: side,
                after: side,
            }
        }
    }
}

/// An execution graph over the events of a trace.
///
/// ppo is each agent's [`ppo::Graph`], whose paths between two accesses exist exactly
/// when a chain of ppo edges does, which is all acyclicity needs.
struct Graph<'a> {
    events: &'a [Event],
    /// Edges of ppo (through barrier nodes) and co.
    base: Vec<Vec<usize>>,
    /// Edges of po-loc (each access to its agent's next access of the location) and co:
    /// the coherence ("uniproc") axiom's fixed part.
    coherence: Vec<Vec<usize>>,
    /// Per location, the stores in coherence order.
    co: HashMap<u64, Vec<usize>>,
}

impl<'a> Graph<'a> {
    /// The graph of a trace, whose stores are in coherence order in the trace's order.
    fn new(events: &'a [Event]) -> Self {
        let mut co: HashMap<u64, Vec<usize>> = HashMap::new();
        for (i, e) in events.iter().enumerate() {
            if let (true, Some(loc)) = (e.is_store(), e.loc()) {
                co.entry(loc).or_default().push(i);
            }
        }
        Self::with_co(events, co)
    }

    /// The graph of `events` with the coherence order `co` (per location, its stores).
    fn with_co(events: &'a [Event], co: HashMap<u64, Vec<usize>>) -> Self {
        let n = events.len();
        let mut base: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut coherence: Vec<Vec<usize>> = vec![Vec::new(); n];
        for stores in co.values() {
            for w in stores.windows(2) {
                base[w[0]].push(w[1]);
                coherence[w[0]].push(w[1]);
            }
        }
        let mut last: HashMap<(u8, u64), usize> = HashMap::new();
        for (i, e) in events.iter().enumerate() {
            if let Some(loc) = e.loc() {
                if let Some(prev) = last.insert((e.agent, loc), i) {
                    coherence[prev].push(i);
                }
            }
        }

        let mut agents: Vec<u8> = events.iter().map(|e| e.agent).collect();
        agents.sort_unstable();
        agents.dedup();
        for agent in agents {
            let po: Vec<usize> = (0..n).filter(|&i| events[i].agent == agent).collect();
            let items: Vec<Item> = po.iter().map(|&i| item(&events[i])).collect();
            for (from, to) in ppo::Graph::new(&items).edges() {
                base[po[from]].push(po[to]);
            }
        }
        Self {
            events,
            base,
            coherence,
            co,
        }
    }

    /// The source the recorded value implies: the latest store of that location with
    /// that value before the load in the trace, else any store with that value (a litmus
    /// test lists its threads one after the other), else the initial value.
    fn recorded_src(&self, load: usize) -> Src {
        let (Some(loc), Some(value)) = (self.events[load].loc(), self.events[load].value()) else {
            return Src::Init;
        };
        let stores = self.co.get(&loc).map(Vec::as_slice).unwrap_or(&[]);
        let same = |s: &&usize| self.events[**s].value() == Some(value);
        stores
            .iter()
            .rev()
            .filter(|s| **s < load)
            .find(same)
            .or_else(|| stores.iter().find(same))
            .map_or(Src::Init, |&s| Src::Store(s))
    }

    /// Whether `ppo ∪ rfe ∪ co ∪ fr` is acyclic with the sources `src`, and so is
    /// `po-loc ∪ rf ∪ co ∪ fr` (coherence).
    fn allowed(&self, src: &HashMap<usize, Src>) -> bool {
        let mut adj = self.base.clone();
        let mut coherence = self.coherence.clone();
        for (&load, &s) in src {
            let Some(loc) = self.events[load].loc() else {
                continue;
            };
            let stores = self.co.get(&loc).map(Vec::as_slice).unwrap_or(&[]);
            if let Src::Store(w) = s {
                coherence[w].push(load);
                // rfe
                if self.events[w].agent != self.events[load].agent {
                    adj[w].push(load);
                }
            }
            // fr: to the first store co-after the source (co covers the rest).
            let next = match s {
                Src::Init => stores.first(),
                Src::Store(w) => stores.iter().skip_while(|&&x| x != w).nth(1),
            };
            if let Some(&next) = next {
                adj[load].push(next);
                coherence[load].push(next);
            }
        }
        !has_cycle(&coherence) && !has_cycle(&adj)
    }
}

fn has_cycle(adj: &[Vec<usize>]) -> bool {
    // Iterative DFS with colours: 0 white, 1 grey, 2 black.
    let mut colour = vec![0u8; adj.len()];
    for root in 0..adj.len() {
        if colour[root] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        colour[root] = 1;
        while let Some(&mut (v, ref mut i)) = stack.last_mut() {
            if *i < adj[v].len() {
                let w = adj[v][*i];
                *i += 1;
                match colour[w] {
                    0 => {
                        colour[w] = 1;
                        stack.push((w, 0));
                    }
                    1 => return true,
                    _ => {}
                }
            } else {
                colour[v] = 2;
                stack.pop();
            }
        }
    }
    false
}

/// Returns whether the execution in which every load read the value it recorded is
/// allowed by the contract (the litmus question).
pub fn allowed(events: &[Event]) -> bool {
    let g = Graph::new(events);
    let src = (0..events.len())
        .filter(|&i| events[i].is_load())
        .map(|i| (i, g.recorded_src(i)))
        .collect();
    g.allowed(&src)
}

/// One candidate execution of a program's events: what each load reads from, and the
/// coherence order of each location's stores.
#[derive(Clone, Debug, Default)]
pub struct Execution {
    /// For each load (its index in the events), the store it reads from, or `None` for
    /// the initial value.
    pub rf: HashMap<usize, Option<usize>>,
    /// For each location, its stores in coherence order (every store of the events to
    /// that location, once).
    pub co: HashMap<u64, Vec<usize>>,
}

/// Returns whether `exec`, an execution of `events` (whose order is each agent's program
/// order), is allowed by the contract: the litmus question for executions a caller
/// enumerates ([`crate::litmus`]), rather than the one a trace recorded.
pub fn consistent(events: &[Event], exec: &Execution) -> bool {
    let g = Graph::with_co(events, exec.co.clone());
    let src = exec
        .rf
        .iter()
        .map(|(&load, &store)| (load, store.map_or(Src::Init, Src::Store)))
        .collect();
    g.allowed(&src)
}

fn describe(events: &[Event], s: Src) -> String {
    match s {
        Src::Init => String::from("the initial value"),
        Src::Store(w) => events[w].what.clone(),
    }
}

/// Searches for a data load that an allowed execution lets read from another store
/// (see the module documentation).
///
/// # Errors
///
/// `Err(description)` if the recorded execution itself is not allowed (the trace
/// breaks the model's assumptions).
pub fn find_violation(events: &[Event]) -> Result<Option<Violation>, String> {
    let g = Graph::new(events);
    let base: HashMap<usize, Src> = (0..events.len())
        .filter(|&i| events[i].is_load())
        .map(|i| (i, g.recorded_src(i)))
        .collect();
    if !g.allowed(&base) {
        return Err(String::from(
            "the recorded execution is not allowed by the model",
        ));
    }
    for (&load, &actual) in &base {
        if !events[load].data {
            continue;
        }
        let Some(loc) = events[load].loc() else {
            continue;
        };
        let stores = g.co.get(&loc).map(Vec::as_slice).unwrap_or(&[]);
        let alternatives = core::iter::once(Src::Init).chain(stores.iter().map(|&w| Src::Store(w)));
        for alt in alternatives {
            if alt == actual {
                continue;
            }
            let mut src = base.clone();
            src.insert(load, alt);
            if g.allowed(&src) {
                return Ok(Some(Violation {
                    load: events[load].what.clone(),
                    actual: describe(events, actual),
                    could_read: describe(events, alt),
                }));
            }
        }
    }
    Ok(None)
}
