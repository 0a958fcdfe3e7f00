// SPDX-License-Identifier: GPL-2.0

//! The lock-free `mbarrier` word against a plain reference model of the PTX rules, over
//! random operation sequences.

use kernel::sync::atomic::Atomic;
use mbarrier::{
    Mbarrier,
    Rule,
    Token,
    MAX_COUNT,
    MAX_TX, //
};
use proptest::prelude::*;

/// The PTX rules as plain arithmetic on unbounded integers; the phase is counted in
/// full.
#[derive(Clone, Debug, Default)]
struct Reference {
    live: bool,
    phase: u64,
    pending: i64,
    expected: i64,
    tx: i64,
    observed: bool,
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Init(u32),
    Inval,
    Arrive(u32),
    ArriveNoComplete(u32),
    ArriveDrop(u32),
    ExpectTx(u32),
    ArriveExpectTx(u32),
    CompleteTx(u32),
    /// A wait on the phase this many phases back from the current one.
    TestWait(u8),
    WaitParity(u8),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Out {
    Ok,
    Token(u8),
    Wait(bool),
    Err(Rule),
}

impl Reference {
    fn complete_if_due(&mut self) {
        if self.pending == 0 && self.tx == 0 {
            self.phase += 1;
            self.pending = self.expected;
            self.observed = false;
        }
    }

    fn arrival(&mut self, count: u32, bytes: u32, no_complete: bool, drop: bool) -> Out {
        let (count, bytes) = (i64::from(count), i64::from(bytes));
        if !self.live {
            return Out::Err(Rule::Uninitialized);
        }
        if count == 0 || count > i64::from(MAX_COUNT) {
            return Out::Err(Rule::CountRange);
        }
        if bytes > i64::from(MAX_COUNT) || self.tx + bytes > i64::from(MAX_TX) {
            return Out::Err(Rule::TxRange);
        }
        if !self.observed {
            return Out::Err(Rule::ArriveBeforeWait);
        }
        if count > self.pending {
            return Out::Err(Rule::PendingUnderflow);
        }
        if drop && count >= self.expected {
            return Out::Err(Rule::ExpectedUnderflow);
        }
        if no_complete && self.pending - count == 0 && self.tx + bytes == 0 {
            return Out::Err(Rule::NoCompleteWouldComplete);
        }
        let token = (self.phase % 4) as u8;
        self.tx += bytes;
        if drop {
            self.expected -= count;
        }
        self.pending -= count;
        self.complete_if_due();
        Out::Token(token)
    }

    fn apply(&mut self, op: Op) -> Out {
        match op {
            Op::Init(n) => {
                if self.live {
                    return Out::Err(Rule::ReinitLive);
                }
                if n == 0 || n > MAX_COUNT {
                    return Out::Err(Rule::CountRange);
                }
                *self = Self {
                    live: true,
                    pending: n.into(),
                    expected: n.into(),
                    observed: true,
                    ..Self::default()
                };
                Out::Ok
            }
            Op::Inval if !self.live => Out::Err(Rule::Uninitialized),
            Op::Inval => {
                *self = Self::default();
                Out::Ok
            }
            Op::Arrive(n) => self.arrival(n, 0, false, false),
            Op::ArriveNoComplete(n) => self.arrival(n, 0, true, false),
            Op::ArriveDrop(n) => self.arrival(n, 0, false, true),
            Op::ArriveExpectTx(b) => self.arrival(1, b, false, false),
            Op::ExpectTx(_) | Op::CompleteTx(_) | Op::TestWait(_) | Op::WaitParity(_)
                if !self.live =>
            {
                Out::Err(Rule::Uninitialized)
            }
            Op::ExpectTx(b) => {
                if b > MAX_COUNT || self.tx + i64::from(b) > i64::from(MAX_TX) {
                    return Out::Err(Rule::TxRange);
                }
                self.tx += i64::from(b);
                Out::Ok
            }
            Op::CompleteTx(b) => {
                if b > MAX_COUNT || self.tx - i64::from(b) < -i64::from(MAX_TX) {
                    return Out::Err(Rule::TxRange);
                }
                self.tx -= i64::from(b);
                self.complete_if_due();
                Out::Ok
            }
            Op::TestWait(back) => match back {
                0 => Out::Wait(false),
                1 => {
                    self.observed = true;
                    Out::Wait(true)
                }
                _ => Out::Err(Rule::WaitPhaseRange),
            },
            Op::WaitParity(p) if p > 1 => Out::Err(Rule::WaitPhaseRange),
            Op::WaitParity(p) => {
                let done = (self.phase & 1) as u8 != p;
                self.observed |= done;
                Out::Wait(done)
            }
        }
    }
}

fn apply(b: &Mbarrier<'_>, r: &Reference, op: Op) -> Out {
    let token = |t: Result<Token, Rule>| t.map_or_else(Out::Err, |t| Out::Token(t.phase_mod4()));
    let unit = |u: Result<(), Rule>| u.map_or_else(Out::Err, |()| Out::Ok);
    let wait = |w: Result<bool, Rule>| w.map_or_else(Out::Err, Out::Wait);
    match op {
        Op::Init(n) => unit(b.init(n)),
        Op::Inval => unit(b.inval()),
        Op::Arrive(n) => token(b.arrive(n)),
        Op::ArriveNoComplete(n) => token(b.arrive_nocomplete(n)),
        Op::ArriveDrop(n) => token(b.arrive_drop(n)),
        Op::ExpectTx(n) => unit(b.expect_tx(n)),
        Op::ArriveExpectTx(n) => token(b.arrive_expect_tx(n)),
        Op::CompleteTx(n) => unit(b.complete_tx(n)),
        Op::TestWait(back) => {
            wait(b.test_wait(Token::from_phase(r.phase.wrapping_sub(back.into()))))
        }
        Op::WaitParity(p) => wait(b.try_wait_parity(p)),
    }
}

fn count() -> impl Strategy<Value = u32> {
    prop_oneof![0u32..4, Just(MAX_COUNT), Just(MAX_COUNT + 1)]
}

fn bytes() -> impl Strategy<Value = u32> {
    prop_oneof![
        0u32..300,
        Just(MAX_COUNT),
        Just(MAX_COUNT + 1),
        Just(1 << 19)
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => count().prop_map(Op::Init),
        1 => Just(Op::Inval),
        6 => count().prop_map(Op::Arrive),
        2 => count().prop_map(Op::ArriveNoComplete),
        2 => count().prop_map(Op::ArriveDrop),
        2 => bytes().prop_map(Op::ExpectTx),
        4 => bytes().prop_map(Op::ArriveExpectTx),
        4 => bytes().prop_map(Op::CompleteTx),
        4 => (0u8..3).prop_map(Op::TestWait),
        4 => (0u8..3).prop_map(Op::WaitParity),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn word_matches_the_reference(ops in proptest::collection::vec(op(), 1..80)) {
        let word = Atomic::new(0u64);
        let b = Mbarrier::new(&word);
        let mut r = Reference::default();
        for (i, op) in ops.iter().enumerate() {
            let got = apply(&b, &r, *op);
            let want = r.apply(*op);
            prop_assert_eq!(got, want, "op {} {:?}", i, op);
            let s = b.snapshot();
            prop_assert_eq!(s.initialised, r.live);
            if r.live {
                prop_assert_eq!(u64::from(s.phase_mod4), r.phase % 4);
                prop_assert_eq!(i64::from(s.pending), r.pending);
                prop_assert_eq!(i64::from(s.expected), r.expected);
                prop_assert_eq!(i64::from(s.tx), r.tx);
                prop_assert_eq!(s.observed, r.observed);
            }
        }
    }
}
