// SPDX-License-Identifier: GPL-2.0

//! The model backend (`--cfg loom`): the shim under the loom model checker, every
//! shared-memory event recorded for the Linux DMA contract checker. Its test interface
//! is `kernel::model` (see there).
//!
//! 32-bit words of a coherent region are loom atomics, accessed relaxed; bulk bytes are
//! tracked per 4 KiB page with a loom `UnsafeCell`; DMA barriers are loom fences; time is
//! a virtual clock. Every event goes to the trace with its agent and source location.

use std::{
    cell::Cell,
    collections::HashMap,
    format,
    panic::Location,
    string::String,
    sync::{
        Arc,
        Mutex,
        MutexGuard, //
    },
    vec::Vec,
};

use loom::sync::atomic::{
    fence,
    AtomicU64,
    Ordering, //
};

use super::{
    arch::Barrier,
    mutation::{
        env_mutations,
        Mutation,
        MutationOp, //
    },
    Flavour, //
};

/// Who performed an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Agent {
    /// The CPU (nova-core): the driver's main thread.
    Driver,
    /// The GSP firmware (vgsp).
    Gsp,
    /// Another thread of the driver sharing the queue, by number (from 1).
    Caller(u8),
}

/// A modelled location, relative to the start of its coherent region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Loc {
    /// The 32-bit word at this byte offset.
    Word(usize),
    /// The 4 KiB page with this index (bulk data).
    Page(usize),
    /// The word of one of the driver's locks ([`crate::sync::Mutex`]), by the address of
    /// its state: a lock taken is a load of it, a lock released a store.
    Lock(usize),
}

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A load that returned `value` (a word's value tagged with the number of the store
    /// that wrote it in the high half, or a page's version).
    Load {
        /// Where.
        loc: Loc,
        /// What it returned.
        value: u64,
    },
    /// A store of `value` (a word's value, or the page's new version).
    Store {
        /// Where.
        loc: Loc,
        /// What it stored.
        value: u64,
    },
    /// A barrier.
    Fence(Flavour),
    /// A lock taken (an acquire): the lock's word, read as the previous holder left it.
    Acquire {
        /// The lock's word ([`Loc::Lock`]).
        loc: Loc,
        /// How many times it had been released.
        value: u64,
    },
    /// A lock released (a release): the lock's word, written.
    Release {
        /// The lock's word ([`Loc::Lock`]).
        loc: Loc,
        /// How many times it has been released, this time included.
        value: u64,
    },
}

/// One event of the trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Event {
    /// Who.
    pub agent: Agent,
    /// What.
    pub kind: Kind,
    /// The source line of the access or barrier.
    pub site: &'static Location<'static>,
}

struct State {
    trace: Vec<Event>,
    forced: Option<Vec<Mutation>>,
    active: Option<Arc<Vec<Mutation>>>,
    regions: Vec<Arc<Region>>,
    clock_ns: u64,
}

static STATE: Mutex<State> = Mutex::new(State {
    trace: Vec::new(),
    forced: None,
    active: None,
    regions: Vec::new(),
    clock_ns: 0,
});

fn state() -> MutexGuard<'static, State> {
    // A panicking loom thread (a detected race) poisons nothing we cannot reuse.
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

// Loom runs its threads as coroutines on one OS thread: the label must be a loom
// thread-local.
loom::thread_local! {
    static AGENT: Cell<Agent> = Cell::new(Agent::Driver);
}

/// Labels the events of the calling thread as `agent`'s.
pub fn set_agent(agent: Agent) {
    AGENT.with(|a| a.set(agent));
}

/// Returns the agent of the calling thread.
pub fn agent() -> Agent {
    AGENT.with(|a| a.get())
}

/// Starts a new execution: clears the trace and the clock. Call at the start of every
/// loom iteration.
pub fn reset() {
    let active = Arc::new(match state().forced.clone() {
        Some(m) => m,
        None => env_mutations(),
    });
    let mut s = state();
    if std::env::var_os("VGSP_TRACE").is_some() {
        std::eprintln!("trace: reset, {} regions live", s.regions.len());
    }
    s.trace.clear();
    s.clock_ns = 0;
    s.active = Some(active);
    drop(s);
    set_agent(Agent::Driver);
}

/// Takes the trace of the current execution.
pub fn take_trace() -> Vec<Event> {
    core::mem::take(&mut state().trace)
}

/// Replaces the barrier mutations in force from the next [`reset`] on (`None`: those of
/// `VGSP_MUTANT`).
pub fn set_mutations(mutations: Option<Vec<Mutation>>) {
    state().forced = mutations;
}

/// Returns the mutations in force in this execution.
fn mutations() -> Arc<Vec<Mutation>> {
    let mut s = state();
    if s.active.is_none() {
        let forced = s.forced.clone();
        drop(s);
        let active = Arc::new(forced.unwrap_or_else(env_mutations));
        s = state();
        s.active = Some(active);
    }
    s.active.clone().unwrap_or_default()
}

fn record(kind: Kind, site: &'static Location<'static>) {
    let agent = agent();
    let event = Event { agent, kind, site };
    if std::env::var_os("VGSP_TRACE").is_some() {
        std::eprintln!("trace: {}", describe(&event));
    }
    state().trace.push(event);
}

fn do_fence(f: Flavour, site: &'static Location<'static>) {
    record(Kind::Fence(f), site);
    fence(match f {
        Flavour::Full => Ordering::SeqCst,
        Flavour::Read => Ordering::Acquire,
        Flavour::Write => Ordering::Release,
    });
}

/// Executes the barrier `f` written at the caller's location, as mutated.
#[track_caller]
pub fn barrier(f: Flavour) {
    let site = Location::caller();
    let mutations = mutations();
    let mutation = mutations.iter().find(|m| m.barrier.is(site));
    match mutation.map(|m| &m.op) {
        None => do_fence(f, site),
        Some(MutationOp::Delete | MutationOp::MoveBefore(..) | MutationOp::MoveAfter(..)) => {}
        Some(MutationOp::Weaken(g)) => do_fence(*g, site),
    }
}

/// The driver's DMA barrier `B`: a fence, recorded and mutable by the caller's source
/// location.
#[track_caller]
pub(crate) fn dma_mb<B: Barrier>() {
    barrier(B::FLAVOUR)
}

/// The DMA barrier `B` of `readl`/`writel`: as [`dma_mb`], recorded at the caller's
/// source location.
#[track_caller]
pub(crate) fn io_dma_mb<B: Barrier>() {
    barrier(B::FLAVOUR)
}

/// Runs the barriers moved to just before (`after == false`) or after the access at
/// `site`.
fn moved_barriers(site: &'static Location<'static>, after: bool) {
    for m in mutations().iter() {
        match m.op {
            MutationOp::MoveBefore(f, ref at) if !after && at.is(site) => do_fence(f, site),
            MutationOp::MoveAfter(f, ref at) if after && at.is(site) => do_fence(f, site),
            _ => {}
        }
    }
}

/// Whether an atomic may live in coherent memory (`Atomic::from_ptr`): no, the model
/// does not model atomics in shared memory (its scenarios give a barrier word its own).
pub(crate) const ATOMICS_IN_MEMORY: bool = false;

/// A load of coherent memory other than a 32-bit word: not modelled.
#[inline(always)]
pub(crate) fn loaded(_addr: usize, _value: u64) {}

/// Loom's access tracker of one page. It guards no Rust data (the bytes live in the
/// region), only loom's record of who accessed the page when.
struct PageCell(loom::cell::UnsafeCell<()>);

// SAFETY: The cell holds `()`; sharing it only shares loom's bookkeeping, which loom
// synchronises itself. It exists to be shared: that is how races are detected.
unsafe impl Sync for PageCell {}
// SAFETY: As above.
unsafe impl Send for PageCell {}

/// A coherent region under the model.
struct Region {
    base: usize,
    len: usize,
    /// Per word: the loom atomic, holding `store count << 32 | value` so that every
    /// store is told apart in the trace, and the number of stores so far.
    words: Mutex<HashMap<usize, (Arc<AtomicU64>, u64)>>,
    pages: Mutex<HashMap<usize, (Arc<PageCell>, u64)>>,
}

/// Registers the coherent allocation of `len` bytes at `base` as a modelled region.
pub(crate) fn region(base: usize, len: usize) {
    state().regions.push(Arc::new(Region {
        base,
        len,
        words: Mutex::new(HashMap::new()),
        pages: Mutex::new(HashMap::new()),
    }));
}

/// Forgets the region at `base`, freed.
pub(crate) fn region_end(base: usize) {
    state().regions.retain(|r| r.base != base);
}

fn find(addr: usize) -> Option<(Arc<Region>, usize)> {
    state()
        .regions
        .iter()
        .find(|r| addr >= r.base && addr < r.base + r.len)
        .map(|r| (r.clone(), addr - r.base))
}

/// Returns the atomic of a word, and the tag of a new store to it if `store`.
fn word(region: &Region, off: usize, ptr: *const u32, store: bool) -> (Arc<AtomicU64>, u64) {
    let mut words = region.words.lock().unwrap_or_else(|e| e.into_inner());
    let entry = words.entry(off).or_insert_with(|| {
        // SAFETY: `ptr` is a valid aligned word of the region (the caller's contract).
        let value = unsafe { core::ptr::read_volatile(ptr) };
        (Arc::new(AtomicU64::new(value.into())), 0)
    });
    if store {
        entry.1 += 1;
    }
    (entry.0.clone(), entry.1 << 32)
}

/// Creates the loom atomics of the words at `offsets` of the region containing `base`,
/// with their current values.
///
/// A loom object created by one thread and then used by another without
/// synchronisation is a race in loom's eyes; words that both agents use (the ring
/// pointers) must therefore be created before the second thread starts.
///
/// # Safety
///
/// `base + offset` must be a valid aligned word of a registered region for every offset.
pub unsafe fn prepare_words(base: *const u8, offsets: &[usize]) {
    for &off in offsets {
        // SAFETY: The caller's contract.
        let ptr = unsafe { base.add(off) }.cast::<u32>();
        if let Some((region, off)) = find(ptr as usize) {
            word(&region, off, ptr, false);
        }
    }
}

/// Loads the word at `ptr` (relaxed), recording it.
///
/// # Safety
///
/// `ptr` must be valid and aligned for a 32-bit read.
#[track_caller]
pub(crate) unsafe fn load_u32(ptr: *const u32) -> u32 {
    let site = Location::caller();
    let Some((region, off)) = find(ptr as usize) else {
        // SAFETY: The caller's contract.
        return unsafe { core::ptr::read_volatile(ptr) };
    };
    moved_barriers(site, false);
    let tagged = word(&region, off, ptr, false).0.load(Ordering::Relaxed);
    record(
        Kind::Load {
            loc: Loc::Word(off),
            value: tagged,
        },
        site,
    );
    moved_barriers(site, true);
    // CAST: the low half is the word's value.
    tagged as u32
}

/// Stores `value` to the word at `ptr` (relaxed), recording it.
///
/// # Safety
///
/// `ptr` must be valid and aligned for a 32-bit write.
#[track_caller]
pub(crate) unsafe fn store_u32(ptr: *mut u32, value: u32) {
    let site = Location::caller();
    // SAFETY: The caller's contract; the memory copy keeps plain readers in step.
    unsafe { core::ptr::write_volatile(ptr, value) };
    let Some((region, off)) = find(ptr as usize) else {
        return;
    };
    moved_barriers(site, false);
    let (atomic, tag) = word(&region, off, ptr, true);
    let tagged = tag | u64::from(value);
    atomic.store(tagged, Ordering::Relaxed);
    record(
        Kind::Store {
            loc: Loc::Word(off),
            value: tagged,
        },
        site,
    );
    moved_barriers(site, true);
}

/// Returns the loom cell of a page and its version, first counting a new store if
/// `store`.
fn page_cell(region: &Region, page: usize, store: bool) -> (Arc<PageCell>, u64) {
    let mut pages = region.pages.lock().unwrap_or_else(|e| e.into_inner());
    let entry = pages
        .entry(page)
        .or_insert_with(|| (Arc::new(PageCell(loom::cell::UnsafeCell::new(()))), 0));
    if store {
        entry.1 += 1;
    }
    (entry.0.clone(), entry.1)
}

fn pages_of(off: usize, len: usize) -> core::ops::Range<usize> {
    let first = off / 4096;
    let last = (off + len.max(1) - 1) / 4096;
    first..last + 1
}

/// Copies `len` bytes from `src` to `dst`, the `src` side being modelled memory.
///
/// # Safety
///
/// Both ranges must be valid for `len` bytes and not overlap.
#[track_caller]
pub(crate) unsafe fn copy_in(src: *const u8, dst: *mut u8, len: usize) {
    let site = Location::caller();
    if let Some((region, off)) = find(src as usize) {
        for page in pages_of(off, len) {
            let (cell, version) = page_cell(&region, page, false);
            // Loom checks that this read is ordered after the page's last write.
            cell.0.with(|_| ());
            record(
                Kind::Load {
                    loc: Loc::Page(page),
                    value: version,
                },
                site,
            );
        }
    }
    // SAFETY: The caller's contract.
    unsafe { core::ptr::copy_nonoverlapping(src, dst, len) };
}

/// Copies `len` bytes from `src` to `dst`, the `dst` side being modelled memory.
///
/// # Safety
///
/// Both ranges must be valid for `len` bytes and not overlap.
#[track_caller]
pub(crate) unsafe fn copy_out(src: *const u8, dst: *mut u8, len: usize) {
    let site = Location::caller();
    if let Some((region, off)) = find(dst as usize) {
        for page in pages_of(off, len) {
            let (cell, version) = page_cell(&region, page, true);
            // Loom checks that this write is ordered after every earlier access.
            cell.0.with_mut(|_| ());
            record(
                Kind::Store {
                    loc: Loc::Page(page),
                    value: version,
                },
                site,
            );
        }
    }
    // SAFETY: The caller's contract.
    unsafe { core::ptr::copy_nonoverlapping(src, dst, len) };
}

/// The environment functions under the model: a virtual clock.
pub(crate) mod env {
    /// Returns the virtual time.
    pub(crate) fn ktime_get_ns() -> u64 {
        super::state().clock_ns
    }

    /// Advances the virtual clock and lets the other loom thread run.
    pub(crate) fn fsleep_ns(ns: u64) {
        {
            let mut s = super::state();
            s.clock_ns = s.clock_ns.saturating_add(ns);
        }
        loom::thread::yield_now();
    }

    pub(crate) fn printk(level: &str, args: core::fmt::Arguments<'_>) {
        if std::env::var_os("VGSP_DEBUG").is_some() {
            std::eprintln!("[{level}] {args}");
        }
    }
}

/// Records that the lock whose state is at `lock` was taken, after `releases` releases:
/// an acquire of its word, by the calling thread's agent. The lock backend calls it with
/// the lock held.
#[track_caller]
pub(crate) fn lock_taken(lock: usize, releases: u64) {
    record(
        Kind::Acquire {
            loc: Loc::Lock(lock),
            value: releases,
        },
        Location::caller(),
    );
}

/// Records that the lock whose state is at `lock` is released for the `releases`th time:
/// a release of its word. The lock backend calls it before it lets the lock go.
#[track_caller]
pub(crate) fn lock_released(lock: usize, releases: u64) {
    record(
        Kind::Release {
            loc: Loc::Lock(lock),
            value: releases,
        },
        Location::caller(),
    );
}

/// Describes an event for reports: `driver store Word(0x1010)=3 at file:line`.
pub fn describe(e: &Event) -> String {
    let who = match e.agent {
        Agent::Driver => String::from("driver"),
        Agent::Gsp => String::from("gsp"),
        Agent::Caller(n) => format!("caller {n}"),
    };
    let show = |loc: Loc, value: u64| match loc {
        Loc::Word(off) => format!(
            "word {off:#x} = {} (store #{})",
            value & 0xffff_ffff,
            value >> 32
        ),
        Loc::Page(p) => format!("page {p:#x} version {value}"),
        Loc::Lock(l) => format!("lock {l:#x} after {value} releases"),
    };
    let what = match e.kind {
        Kind::Load { loc, value } => format!("load of {}", show(loc, value)),
        Kind::Store { loc, value } => format!("store of {}", show(loc, value)),
        Kind::Fence(f) => format!("barrier {f:?}"),
        Kind::Acquire { loc, value } => format!("acquire of {}", show(loc, value)),
        Kind::Release { loc, value } => format!("release of {}", show(loc, value)),
    };
    format!("{who} {what} at {}:{}", e.site.file(), e.site.line())
}
