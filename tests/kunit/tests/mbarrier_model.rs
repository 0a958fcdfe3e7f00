// SPDX-License-Identifier: GPL-2.0

//! The lock-free `mbarrier` word against a plain reference model of the PTX rules, over
//! random operation sequences.

use kernel::sync::atomic::Atomic;
use mbarrier::{
    Mbarrier,
    Op,
    Outcome,
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

impl Reference {
    fn complete_if_due(&mut self) {
        if self.pending == 0 && self.tx == 0 {
            self.phase += 1;
            self.pending = self.expected;
            self.observed = false;
        }
    }

    fn arrival(
        &mut self,
        count: u32,
        bytes: u32,
        no_complete: bool,
        drop: bool,
    ) -> Result<Outcome, Rule> {
        let (count, bytes) = (i64::from(count), i64::from(bytes));
        if !self.live {
            return Err(Rule::Uninitialized);
        }
        if count == 0 || count > i64::from(MAX_COUNT) {
            return Err(Rule::CountRange);
        }
        if bytes > i64::from(MAX_COUNT) || self.tx + bytes > i64::from(MAX_TX) {
            return Err(Rule::TxRange);
        }
        if !self.observed {
            return Err(Rule::ArriveBeforeWait);
        }
        if count > self.pending {
            return Err(Rule::PendingUnderflow);
        }
        if drop && count >= self.expected {
            return Err(Rule::ExpectedUnderflow);
        }
        if no_complete && self.pending - count == 0 && self.tx + bytes == 0 {
            return Err(Rule::NoCompleteWouldComplete);
        }
        let token = Token::from_phase(self.phase);
        self.tx += bytes;
        if drop {
            self.expected -= count;
        }
        self.pending -= count;
        self.complete_if_due();
        Ok(Outcome::Token(token))
    }

    fn apply(&mut self, op: Op) -> Result<Outcome, Rule> {
        match op {
            Op::Init(n) => {
                if self.live {
                    return Err(Rule::ReinitLive);
                }
                if n == 0 || n > MAX_COUNT {
                    return Err(Rule::CountRange);
                }
                *self = Self {
                    live: true,
                    pending: n.into(),
                    expected: n.into(),
                    observed: true,
                    ..Self::default()
                };
                Ok(Outcome::Done)
            }
            Op::Inval if !self.live => Err(Rule::Uninitialized),
            Op::Inval => {
                *self = Self::default();
                Ok(Outcome::Done)
            }
            Op::Arrive(n) => self.arrival(n, 0, false, false),
            Op::ArriveNoComplete(n) => self.arrival(n, 0, true, false),
            Op::ArriveDrop(n) => self.arrival(n, 0, false, true),
            Op::ArriveExpectTx(b) => self.arrival(1, b, false, false),
            _ if !self.live => Err(Rule::Uninitialized),
            Op::ExpectTx(b) => {
                if b > MAX_COUNT || self.tx + i64::from(b) > i64::from(MAX_TX) {
                    return Err(Rule::TxRange);
                }
                self.tx += i64::from(b);
                Ok(Outcome::Done)
            }
            Op::CompleteTx(b) => {
                if b > MAX_COUNT || self.tx - i64::from(b) < -i64::from(MAX_TX) {
                    return Err(Rule::TxRange);
                }
                self.tx -= i64::from(b);
                self.complete_if_due();
                Ok(Outcome::Done)
            }
            // A token names its phase modulo 4: this many phases back from the current.
            Op::TestWait(t) | Op::TryWait(t) => {
                match self.phase.wrapping_sub(t.phase_mod4().into()) % 4 {
                    0 => Ok(Outcome::Wait(false)),
                    1 => {
                        self.observed = true;
                        Ok(Outcome::Wait(true))
                    }
                    _ => Err(Rule::WaitPhaseRange),
                }
            }
            Op::TestWaitParity(p) | Op::TryWaitParity(p) if p > 1 => Err(Rule::WaitPhaseRange),
            Op::TestWaitParity(p) | Op::TryWaitParity(p) => {
                let done = (self.phase & 1) as u8 != p;
                self.observed |= done;
                Ok(Outcome::Wait(done))
            }
        }
    }
}

/// The generated sequences give a wait as how many phases back from the current one it
/// waits on, in its token; this names that phase's own token, for the current `phase`.
fn resolve(op: Op, phase: u64) -> Op {
    match op {
        Op::TestWait(back) => Op::TestWait(Token::from_phase(
            phase.wrapping_sub(back.phase_mod4().into()),
        )),
        op => op,
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
        4 => (0u8..3).prop_map(|back| Op::TestWait(Token::from_phase(back.into()))),
        4 => (0u8..3).prop_map(Op::TryWaitParity),
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
            let op = resolve(*op, r.phase);
            let got = b.apply(op);
            let want = r.apply(op);
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
