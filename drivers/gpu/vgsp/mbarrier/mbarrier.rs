// SPDX-License-Identifier: GPL-2.0

//! The GPU's `mbarrier`: a phase barrier whose whole state is one 64-bit word in shared
//! memory, exactly as PTX ISA 9.0 (§9.7.13.15) defines it.
//!
//! An object of the GPU's side, not of the driver's: the GPU's threads and copy engine
//! use it, and so does whatever shares the memory with them (the virtual GSP's copy
//! engine, the test bench's copies, `nova_testbench::ce`), hence a crate of its own.
//!
//! The word holds the phase (two bits; the parity is bit 0), whether the last completed
//! phase has been observed by a successful wait, the pending and expected arrival
//! counts (20 bits each) and the signed transaction count (21 bits). Every operation is
//! one compare-and-swap on the word, so any number of agents — the driver, the GSP,
//! threads of either — may use one barrier concurrently, as on hardware.
//!
//! A phase completes when its pending arrivals and its tx-count both reach zero: the
//! phase advances and the pending count is restored from the expected count, in the
//! same atomic update. The tx-count may go negative (bytes may land before they are
//! expected).
//!
//! # Errors
//!
//! What PTX calls undefined is detected and refused with the [`Rule`] it breaks; the
//! word is then left unchanged. An operation that breaks several rules reports the
//! first in this order:
//!
//! | rule | when |
//! |---|---|
//! | `UNINITIALIZED` | any operation but `init` on a barrier never initialised or invalidated |
//! | `REINIT_LIVE` | `init` of a live barrier (without `inval` first) |
//! | `COUNT_RANGE` | an arrival count or `init` count outside 1..=2^20-1 |
//! | `TX_RANGE` | a byte count outside 0..=2^20-1, or a tx-count leaving -(2^20-1)..=2^20-1 |
//! | `WAIT_PHASE_RANGE` | a wait on a phase that is neither the current nor the previous one, or a parity other than 0 and 1 |
//! | `ARRIVE_BEFORE_WAIT` | an arrival in a phase whose predecessor no wait has yet observed |
//! | `PENDING_UNDERFLOW` | an arrival of more than the pending count |
//! | `EXPECTED_UNDERFLOW` | `arrive_drop` of the whole expected count (no participant left) |
//! | `NOCOMPLETE_WOULD_COMPLETE` | a `noComplete` arrival that would complete the phase |
//!
//! Tokens and waits see the phase modulo 4 (the word has two phase bits): a token from
//! four phases back looks current, which is the limit of "where detectable".
//!
//! # Ordering
//!
//! Arrivals and `complete_tx` are release operations, and a successful wait is an
//! acquire: what an agent wrote before its arrival (or before the bytes it reports with
//! `complete_tx`) is visible to an agent after its successful wait on that phase. Each
//! update is a read-modify-write, so updates by other agents in between continue the
//! release sequence.

// Kbuild makes every crate `no_std` (`-Zcrate-attr=no_std`); cargo builds need it said.
#![cfg_attr(not(CONFIG_RUST), no_std)]

use bitfield_struct::bitfield;
use kernel::{
    prelude::*,
    sync::atomic::{
        Acquire,
        Atomic,
        Full,
        Relaxed, //
    },
};

/// The largest arrival count, and the largest byte count of one operation.
pub const MAX_COUNT: u32 = (1 << 20) - 1;
/// The largest magnitude of the tx-count.
pub const MAX_TX: i32 = (1 << 20) - 1;
/// How many times [`Mbarrier::try_wait`] looks before it gives up (its time limit).
pub const TRY_WAIT_SPINS: u32 = 1 << 10;

/// The barrier word.
#[bitfield(u64)]
#[derive(PartialEq, Eq)]
struct State {
    /// The phase, modulo 4; bit 0 is the parity.
    #[bits(2)]
    phase: u8,
    /// The last completed phase has been observed by a successful wait (set by `init`:
    /// no phase has completed yet).
    observed: bool,
    /// Arrivals still required in the current phase.
    #[bits(20)]
    pending: u32,
    /// Arrivals each phase requires; zero means uninitialised or invalidated.
    #[bits(20)]
    expected: u32,
    /// Bytes of asynchronous transfer still outstanding; may be negative.
    #[bits(21)]
    tx: i32,
}

/// A rule of the PTX specification an operation would break.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// An operation on a barrier never initialised, or invalidated.
    Uninitialized,
    /// `init` of a live barrier.
    ReinitLive,
    /// A count outside 1..=[`MAX_COUNT`].
    CountRange,
    /// A byte count or a tx-count out of range.
    TxRange,
    /// An arrival of more than the pending count.
    PendingUnderflow,
    /// `arrive_drop` leaving no expected arrival.
    ExpectedUnderflow,
    /// A `noComplete` arrival that would complete the phase.
    NoCompleteWouldComplete,
    /// A wait on a phase neither current nor previous.
    WaitPhaseRange,
    /// An arrival before any successful wait on the completed previous phase.
    ArriveBeforeWait,
}

impl Rule {
    /// Returns the rule's stable name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Uninitialized => "UNINITIALIZED",
            Self::ReinitLive => "REINIT_LIVE",
            Self::CountRange => "COUNT_RANGE",
            Self::TxRange => "TX_RANGE",
            Self::PendingUnderflow => "PENDING_UNDERFLOW",
            Self::ExpectedUnderflow => "EXPECTED_UNDERFLOW",
            Self::NoCompleteWouldComplete => "NOCOMPLETE_WOULD_COMPLETE",
            Self::WaitPhaseRange => "WAIT_PHASE_RANGE",
            Self::ArriveBeforeWait => "ARRIVE_BEFORE_WAIT",
        }
    }
}

impl From<Rule> for Error {
    fn from(_: Rule) -> Self {
        EINVAL
    }
}

/// The phase an arrival happened in, to wait on with [`Mbarrier::test_wait`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token(u8);

impl Token {
    /// Returns the token of phase `phase` (a full phase number, reduced modulo 4).
    pub const fn from_phase(phase: u64) -> Self {
        // CAST: reduced to two bits.
        Self((phase % 4) as u8)
    }

    /// Returns the phase modulo 4.
    pub fn phase_mod4(self) -> u8 {
        self.0
    }
}

/// The state of a barrier at one instant, for reports and tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// Whether the barrier is initialised (and not invalidated).
    pub initialised: bool,
    /// The phase modulo 4.
    pub phase_mod4: u8,
    /// The parity of the phase.
    pub parity: u8,
    /// Arrivals still required in the current phase.
    pub pending: u32,
    /// Arrivals each phase requires.
    pub expected: u32,
    /// Outstanding transfer bytes (negative: bytes landed before they were expected).
    pub tx: i32,
    /// Whether the last completed phase has been observed by a wait.
    pub observed: bool,
}

/// One operation on a barrier, named for the PTX instruction it stands for, to run as
/// data (a trace, a table, a model) through [`Mbarrier::apply`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `mbarrier.init` with this count: [`Mbarrier::init`].
    Init(u32),
    /// `mbarrier.inval`: [`Mbarrier::inval`].
    Inval,
    /// `mbarrier.arrive` with this count: [`Mbarrier::arrive`].
    Arrive(u32),
    /// `mbarrier.arrive.noComplete` with this count: [`Mbarrier::arrive_nocomplete`].
    ArriveNoComplete(u32),
    /// `mbarrier.arrive_drop` with this count: [`Mbarrier::arrive_drop`].
    ArriveDrop(u32),
    /// `mbarrier.expect_tx` of this many bytes: [`Mbarrier::expect_tx`].
    ExpectTx(u32),
    /// `mbarrier.arrive.expect_tx` of this many bytes: [`Mbarrier::arrive_expect_tx`].
    ArriveExpectTx(u32),
    /// `mbarrier.complete_tx` of this many bytes: [`Mbarrier::complete_tx`].
    CompleteTx(u32),
    /// `mbarrier.test_wait` on the phase of this token: [`Mbarrier::test_wait`].
    TestWait(Token),
    /// `mbarrier.try_wait` on the phase of this token: [`Mbarrier::try_wait`].
    TryWait(Token),
    /// `mbarrier.test_wait.parity` with this parity: [`Mbarrier::test_wait_parity`].
    TestWaitParity(u8),
    /// `mbarrier.try_wait.parity` with this parity: [`Mbarrier::try_wait_parity`].
    TryWaitParity(u8),
}

/// What an [`Op`] gave when the barrier accepted it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// `init`, `inval`, `expect_tx` or `complete_tx`: done, with nothing to return.
    Done,
    /// An arrival: the token of the phase it arrived in.
    Token(Token),
    /// A wait: whether the phase had completed.
    Wait(bool),
}

/// What kind of arrival.
#[derive(Clone, Copy)]
enum Arrival {
    Normal,
    NoComplete,
    Drop,
}

/// An `mbarrier` whose word lives in memory shared with other agents.
pub struct Mbarrier<'a> {
    word: &'a Atomic<u64>,
}

impl<'a> Mbarrier<'a> {
    /// Uses the barrier whose state is `word`.
    pub fn new(word: &'a Atomic<u64>) -> Self {
        Self { word }
    }

    /// Returns the current state.
    pub fn snapshot(&self) -> Snapshot {
        // ORDERING: `Acquire`, as a wait: a report taken after a completion sees what
        // preceded the arrivals (pairs with the `Release` of `update`).
        let s = State::from_bits(self.word.load(Acquire));
        Snapshot {
            initialised: s.expected() != 0,
            phase_mod4: s.phase(),
            parity: s.phase() & 1,
            pending: s.pending(),
            expected: s.expected(),
            tx: s.tx(),
            observed: s.observed(),
        }
    }

    /// Applies `f` to the word atomically; on an error the word is left unchanged.
    fn update<R>(&self, f: impl Fn(State) -> Result<(State, R), Rule>) -> Result<R, Rule> {
        // ORDERING: the first load only seeds the loop; the compare-and-swap below
        // validates it.
        let mut old = self.word.load(Relaxed);
        loop {
            let (new, r) = f(State::from_bits(old))?;
            // ORDERING: `Full` on success, for its release and its acquire half (the
            // kernel's atomics have no acquire-release ordering of their own). Release:
            // the caller's writes before this update (the data behind an arrival, the
            // bytes behind a `complete_tx`) happen before any wait that reads this or a
            // later value; pairs with the `Acquire` in `wait_with`. Acquire: an arrival
            // that completes a phase carries the other arrivals' writes to whoever
            // observes the completion through it. A failure is relaxed: only the fresh
            // value is needed.
            match self.word.cmpxchg(old, new.into_bits(), Full) {
                Ok(_) => return Ok(r),
                Err(now) => old = now,
            }
        }
    }

    /// Initialises the barrier: phase 0, `count` expected and pending arrivals, no
    /// transfer bytes.
    ///
    /// # Errors
    ///
    /// `REINIT_LIVE`, `COUNT_RANGE`.
    pub fn init(&self, count: u32) -> Result<(), Rule> {
        self.update(|s| {
            if s.expected() != 0 {
                return Err(Rule::ReinitLive);
            }
            check_count(count)?;
            Ok((
                State::new()
                    .with_expected(count)
                    .with_pending(count)
                    .with_observed(true),
                (),
            ))
        })
    }

    /// Invalidates the barrier, so that it may be initialised again.
    ///
    /// # Errors
    ///
    /// `UNINITIALIZED`.
    pub fn inval(&self) -> Result<(), Rule> {
        self.update(|s| {
            live(s)?;
            Ok((State::new(), ()))
        })
    }

    fn arrival(&self, count: u32, tx: u32, kind: Arrival) -> Result<Token, Rule> {
        self.update(|s| {
            live(s)?;
            check_count(count)?;
            check_bytes(tx)?;
            let tx = add_tx(s.tx(), tx)?;
            if !s.observed() {
                return Err(Rule::ArriveBeforeWait);
            }
            if count > s.pending() {
                return Err(Rule::PendingUnderflow);
            }
            let token = Token(s.phase());
            let mut n = s.with_tx(tx);
            if let Arrival::Drop = kind {
                if count >= n.expected() {
                    return Err(Rule::ExpectedUnderflow);
                }
                n = n.with_expected(n.expected() - count);
            }
            n = n.with_pending(n.pending() - count);
            if completes(n) {
                if let Arrival::NoComplete = kind {
                    return Err(Rule::NoCompleteWouldComplete);
                }
                n = advance(n);
            }
            Ok((n, token))
        })
    }

    /// Arrives `count` times; returns the token of the phase arrived in.
    ///
    /// # Errors
    ///
    /// `UNINITIALIZED`, `COUNT_RANGE`, `PENDING_UNDERFLOW`, `ARRIVE_BEFORE_WAIT`.
    pub fn arrive(&self, count: u32) -> Result<Token, Rule> {
        self.arrival(count, 0, Arrival::Normal)
    }

    /// Arrives `count` times without completing the phase (`arrive.noComplete`).
    ///
    /// # Errors
    ///
    /// As [`Mbarrier::arrive`], and `NOCOMPLETE_WOULD_COMPLETE`.
    pub fn arrive_nocomplete(&self, count: u32) -> Result<Token, Rule> {
        self.arrival(count, 0, Arrival::NoComplete)
    }

    /// Expects `bytes` more bytes of transfer in the current phase, then arrives once
    /// (`arrive.expect_tx`), in one atomic update.
    ///
    /// # Errors
    ///
    /// As [`Mbarrier::arrive`], and `TX_RANGE`.
    pub fn arrive_expect_tx(&self, bytes: u32) -> Result<Token, Rule> {
        self.arrival(1, bytes, Arrival::Normal)
    }

    /// Arrives `count` times and removes `count` expected arrivals from the later phases
    /// (`arrive_drop`).
    ///
    /// # Errors
    ///
    /// As [`Mbarrier::arrive`], and `EXPECTED_UNDERFLOW`.
    pub fn arrive_drop(&self, count: u32) -> Result<Token, Rule> {
        self.arrival(count, 0, Arrival::Drop)
    }

    /// Expects `bytes` more bytes of transfer in the current phase; never completes it.
    ///
    /// # Errors
    ///
    /// `UNINITIALIZED`, `TX_RANGE`.
    pub fn expect_tx(&self, bytes: u32) -> Result<(), Rule> {
        self.update(|s| {
            live(s)?;
            check_bytes(bytes)?;
            Ok((s.with_tx(add_tx(s.tx(), bytes)?), ()))
        })
    }

    /// Reports `bytes` bytes of transfer landed, which may complete the phase.
    ///
    /// # Errors
    ///
    /// `UNINITIALIZED`, `TX_RANGE`.
    pub fn complete_tx(&self, bytes: u32) -> Result<(), Rule> {
        self.update(|s| {
            live(s)?;
            check_bytes(bytes)?;
            // CAST: `bytes <= MAX_COUNT`, checked above.
            let tx = s.tx() - bytes as i32;
            if tx < -MAX_TX {
                return Err(Rule::TxRange);
            }
            let mut n = s.with_tx(tx);
            if completes(n) {
                n = advance(n);
            }
            Ok((n, ()))
        })
    }

    /// Tests whether the phase `token` names has completed, without waiting
    /// (`test_wait`). A `true` is an acquire.
    ///
    /// # Errors
    ///
    /// `UNINITIALIZED`, `WAIT_PHASE_RANGE`.
    pub fn test_wait(&self, token: Token) -> Result<bool, Rule> {
        self.wait_with(|s| match s.phase().wrapping_sub(token.0) & 3 {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(Rule::WaitPhaseRange),
        })
    }

    /// Waits, within a time limit, for the phase `token` names to complete
    /// (`try_wait`); `false` when the limit passed first.
    ///
    /// # Errors
    ///
    /// As [`Mbarrier::test_wait`].
    pub fn try_wait(&self, token: Token) -> Result<bool, Rule> {
        Self::spin_until(|| self.test_wait(token))
    }

    /// Waits, within a time limit, for the phase of parity `parity` to have completed
    /// (`try_wait.parity`): true when the current phase's parity differs.
    ///
    /// # Errors
    ///
    /// `UNINITIALIZED`, `WAIT_PHASE_RANGE` (a parity other than 0 or 1).
    pub fn try_wait_parity(&self, parity: u8) -> Result<bool, Rule> {
        Self::spin_until(|| self.test_wait_parity(parity))
    }

    /// Calls `test` up to [`TRY_WAIT_SPINS`] times, until it says the phase completed:
    /// the time limit of the `try_wait` forms.
    fn spin_until(mut test: impl FnMut() -> Result<bool, Rule>) -> Result<bool, Rule> {
        for _ in 0..TRY_WAIT_SPINS {
            if test()? {
                return Ok(true);
            }
            core::hint::spin_loop();
        }
        Ok(false)
    }

    /// [`Mbarrier::try_wait_parity`] without waiting.
    ///
    /// # Errors
    ///
    /// As [`Mbarrier::try_wait_parity`].
    pub fn test_wait_parity(&self, parity: u8) -> Result<bool, Rule> {
        self.wait_with(|s| match parity {
            0 | 1 => Ok(s.phase() & 1 != parity),
            _ => Err(Rule::WaitPhaseRange),
        })
    }

    /// Performs `op`, by the method its variant names.
    ///
    /// # Errors
    ///
    /// The rule `op` breaks, as that method reports it; the word is then unchanged.
    pub fn apply(&self, op: Op) -> Result<Outcome, Rule> {
        let done = |()| Outcome::Done;
        match op {
            Op::Init(count) => self.init(count).map(done),
            Op::Inval => self.inval().map(done),
            Op::Arrive(count) => self.arrive(count).map(Outcome::Token),
            Op::ArriveNoComplete(count) => self.arrive_nocomplete(count).map(Outcome::Token),
            Op::ArriveDrop(count) => self.arrive_drop(count).map(Outcome::Token),
            Op::ExpectTx(bytes) => self.expect_tx(bytes).map(done),
            Op::ArriveExpectTx(bytes) => self.arrive_expect_tx(bytes).map(Outcome::Token),
            Op::CompleteTx(bytes) => self.complete_tx(bytes).map(done),
            Op::TestWait(token) => self.test_wait(token).map(Outcome::Wait),
            Op::TryWait(token) => self.try_wait(token).map(Outcome::Wait),
            Op::TestWaitParity(parity) => self.test_wait_parity(parity).map(Outcome::Wait),
            Op::TryWaitParity(parity) => self.try_wait_parity(parity).map(Outcome::Wait),
        }
    }

    /// Evaluates a wait condition on the word; on success records that the completed
    /// phase was observed.
    fn wait_with(&self, done: impl Fn(State) -> Result<bool, Rule>) -> Result<bool, Rule> {
        loop {
            // ORDERING: `Acquire` pairs with the `Release` of the arrivals and
            // `complete_tx` in `update`: a successful wait sees what they published.
            let old = self.word.load(Acquire);
            let s = State::from_bits(old);
            live(s)?;
            if !done(s)? {
                return Ok(false);
            }
            if s.observed() {
                return Ok(true);
            }
            // ORDERING: `Relaxed` suffices: the flag only lets the next phase's arrivals
            // in, and the data the wait acquires came with the load above.
            if self
                .word
                .cmpxchg(old, s.with_observed(true).into_bits(), Relaxed)
                .is_ok()
            {
                return Ok(true);
            }
        }
    }
}

fn live(s: State) -> Result<(), Rule> {
    if s.expected() == 0 {
        return Err(Rule::Uninitialized);
    }
    Ok(())
}

fn check_count(count: u32) -> Result<(), Rule> {
    if count == 0 || count > MAX_COUNT {
        return Err(Rule::CountRange);
    }
    Ok(())
}

fn check_bytes(bytes: u32) -> Result<(), Rule> {
    if bytes > MAX_COUNT {
        return Err(Rule::TxRange);
    }
    Ok(())
}

fn add_tx(tx: i32, bytes: u32) -> Result<i32, Rule> {
    // CAST: `bytes <= MAX_COUNT`, checked by the callers.
    let tx = tx + bytes as i32;
    if tx > MAX_TX {
        return Err(Rule::TxRange);
    }
    Ok(tx)
}

fn completes(s: State) -> bool {
    s.pending() == 0 && s.tx() == 0
}

fn advance(s: State) -> State {
    s.with_phase((s.phase() + 1) & 3)
        .with_pending(s.expected())
        .with_observed(false)
}

/// Performs one arrival on a barrier once every asynchronous operation issued before
/// the commit has completed (the shape of `tcgen05.commit ... mbarrier::arrive::one`).
///
/// Like the hardware's, a tracker belongs to one issuing agent: `&mut self` methods.
pub struct AsyncTracker<'a> {
    next: u64,
    outstanding: KVec<u64>,
    /// Pending commits: how many operations had been issued before each, and the word
    /// of its barrier.
    commits: KVec<(u64, &'a Atomic<u64>)>,
}

/// An asynchronous operation issued through an [`AsyncTracker`].
#[derive(Debug, PartialEq, Eq)]
pub struct AsyncOp(u64);

impl<'a> AsyncTracker<'a> {
    /// Creates a tracker with nothing in flight.
    pub fn new() -> Self {
        Self {
            next: 0,
            outstanding: KVec::new(),
            commits: KVec::new(),
        }
    }

    /// Records the issue of an asynchronous operation.
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if the record cannot be had.
    pub fn issue(&mut self) -> Result<AsyncOp> {
        let id = self.next;
        self.outstanding.push(id, GFP_KERNEL)?;
        self.next += 1;
        Ok(AsyncOp(id))
    }

    /// Arrives once on `barrier` when every operation issued so far has completed (at
    /// once if none is in flight).
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if the record cannot be had.
    /// - `EINVAL` if the arrival breaks a rule of the barrier.
    pub fn commit(&mut self, barrier: Mbarrier<'a>) -> Result {
        if self.outstanding.is_empty() {
            barrier.arrive(1)?;
            return Ok(());
        }
        self.commits.push((self.next, barrier.word), GFP_KERNEL)?;
        Ok(())
    }

    /// Records the completion of `op` and performs the arrivals of the commits it was
    /// the last one outstanding for; returns how many.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if an arrival breaks a rule of its barrier (the commits after it stay
    ///   pending).
    pub fn complete(&mut self, op: AsyncOp) -> Result<usize> {
        if let Some(i) = self.outstanding.iter().position(|&id| id == op.0) {
            remove(&mut self.outstanding, i);
        }
        let oldest = self.outstanding.iter().copied().min().unwrap_or(self.next);
        let mut arrived = 0;
        while let Some(i) = self
            .commits
            .iter()
            .position(|&(before, _)| before <= oldest)
        {
            let (_, word) = self.commits[i];
            Mbarrier::new(word).arrive(1)?;
            remove(&mut self.commits, i);
            arrived += 1;
        }
        Ok(arrived)
    }

    /// Returns the number of operations in flight.
    pub fn in_flight(&self) -> usize {
        self.outstanding.len()
    }
}

/// Removes element `i` of `v`, moving the last one into its place.
fn remove<T: Copy>(v: &mut KVec<T>, i: usize) {
    let last = v.len() - 1;
    v.swap(i, last);
    v.truncate(last);
}

impl Default for AsyncTracker<'_> {
    fn default() -> Self {
        Self::new()
    }
}
