// SPDX-License-Identifier: GPL-2.0

//! The `mbarrier`: every rule and every error, table-driven; the commit tracker; a
//! two-barrier producer/consumer pipeline over many phases on two threads.

use kernel::prelude::*;

/// The cases of the `nova_core_mbarrier` suite.
#[kunit_tests(nova_core_mbarrier)]
pub mod tests {
    use kernel::{
        prelude::*,
        sync::atomic::{
            Atomic,
            Relaxed, //
        }, //
    };
    use mbarrier::{
        AsyncTracker,
        Mbarrier,
        Op::{
            self,
            *, //
        },
        Outcome,
        Rule,
        Token,
        MAX_COUNT,
        MAX_TX, //
    };
    use vdev::run_beside;

    /// What an operation of a table row must give.
    type Want = Result<Outcome, Rule>;

    /// A row: operations with their outcomes, then the state: `(phase mod 4, pending,
    /// expected, tx)`.
    struct Row {
        name: &'static str,
        ops: &'static [(Op, Want)],
        end: (u8, u32, u32, i32),
    }

    /// The token of phase `n`: the rows name the phases by number.
    const fn phase(n: u64) -> Token {
        Token::from_phase(n)
    }

    /// Done, with nothing to return.
    const K: Want = Ok(Outcome::Done);

    /// An arrival in phase `n`.
    const fn t(n: u64) -> Want {
        Ok(Outcome::Token(phase(n)))
    }

    /// A wait that found its phase completed (`true`) or not.
    const fn w(completed: bool) -> Want {
        Ok(Outcome::Wait(completed))
    }

    /// Refused for breaking `rule`.
    const fn e(rule: Rule) -> Want {
        Err(rule)
    }

    const M: u32 = MAX_COUNT;

    static ROWS: &[Row] = &[
        Row {
            name: "init",
            ops: &[(Init(3), K)],
            end: (0, 3, 3, 0),
        },
        Row {
            name: "arrivals complete the phase and restore pending",
            ops: &[(Init(2), K), (Arrive(1), t(0)), (Arrive(1), t(0))],
            end: (1, 2, 2, 0),
        },
        Row {
            name: "arrive with a count",
            ops: &[(Init(4), K), (Arrive(3), t(0)), (Arrive(1), t(0))],
            end: (1, 4, 4, 0),
        },
        Row {
            name: "tx-count holds the phase until the bytes land",
            ops: &[
                (Init(1), K),
                (ArriveExpectTx(64), t(0)),
                (TestWait(phase(0)), w(false)),
                (CompleteTx(32), K),
                (TestWait(phase(0)), w(false)),
                (CompleteTx(32), K),
                (TestWait(phase(0)), w(true)),
            ],
            end: (1, 1, 1, 0),
        },
        Row {
            name: "bytes may land before they are expected",
            ops: &[
                (Init(1), K),
                (CompleteTx(16), K),
                (ArriveExpectTx(16), t(0)),
            ],
            end: (1, 1, 1, 0),
        },
        Row {
            name: "tx-count goes negative",
            ops: &[(Init(1), K), (CompleteTx(16), K)],
            end: (0, 1, 1, -16),
        },
        Row {
            name: "expect_tx never completes a phase",
            ops: &[
                (Init(1), K),
                (CompleteTx(8), K),
                (ExpectTx(8), K),
                (TestWait(phase(0)), w(false)),
            ],
            end: (0, 1, 1, 0),
        },
        Row {
            name: "noComplete arrives but may not complete",
            ops: &[
                (Init(2), K),
                (ArriveNoComplete(1), t(0)),
                (ArriveNoComplete(1), e(Rule::NoCompleteWouldComplete)),
                (Arrive(1), t(0)),
            ],
            end: (1, 2, 2, 0),
        },
        Row {
            name: "arrive_drop lowers the expected count",
            ops: &[(Init(3), K), (ArriveDrop(1), t(0)), (Arrive(2), t(0))],
            end: (1, 2, 2, 0),
        },
        Row {
            name: "arrive_drop of every participant",
            ops: &[(Init(1), K), (ArriveDrop(1), e(Rule::ExpectedUnderflow))],
            end: (0, 1, 1, 0),
        },
        Row {
            name: "operations on an uninitialised barrier",
            ops: &[
                (Arrive(1), e(Rule::Uninitialized)),
                (ExpectTx(1), e(Rule::Uninitialized)),
                (CompleteTx(1), e(Rule::Uninitialized)),
                (TestWait(phase(0)), e(Rule::Uninitialized)),
                (TryWaitParity(0), e(Rule::Uninitialized)),
                (Inval, e(Rule::Uninitialized)),
            ],
            end: (0, 0, 0, 0),
        },
        Row {
            name: "operations on an invalidated barrier, then init again",
            ops: &[
                (Init(1), K),
                (Inval, K),
                (Arrive(1), e(Rule::Uninitialized)),
                (Init(2), K),
            ],
            end: (0, 2, 2, 0),
        },
        Row {
            name: "init of a live barrier",
            ops: &[(Init(1), K), (Init(1), e(Rule::ReinitLive))],
            end: (0, 1, 1, 0),
        },
        Row {
            name: "counts out of range",
            ops: &[
                (Init(0), e(Rule::CountRange)),
                (Init(M + 1), e(Rule::CountRange)),
                (Init(M), K),
                (Arrive(0), e(Rule::CountRange)),
                (Arrive(M + 1), e(Rule::CountRange)),
                (Arrive(M), t(0)),
            ],
            end: (1, M, M, 0),
        },
        Row {
            name: "an arrival beyond the pending count",
            ops: &[
                (Init(2), K),
                (Arrive(3), e(Rule::PendingUnderflow)),
                (Arrive(2), t(0)),
            ],
            end: (1, 2, 2, 0),
        },
        Row {
            name: "arrivals after pending reached zero while bytes are outstanding",
            ops: &[
                (Init(1), K),
                (ArriveExpectTx(4), t(0)),
                (Arrive(1), e(Rule::PendingUnderflow)),
            ],
            end: (0, 0, 1, 4),
        },
        Row {
            name: "tx-count out of range either way",
            ops: &[
                (Init(1), K),
                (ExpectTx(M), K),
                (ExpectTx(1), e(Rule::TxRange)),
                (CompleteTx(M + 1), e(Rule::TxRange)),
                (CompleteTx(M), K),
                (CompleteTx(M), K),
                (CompleteTx(1), e(Rule::TxRange)),
            ],
            end: (0, 1, 1, -MAX_TX),
        },
        Row {
            name: "waits only on the current or the previous phase",
            ops: &[
                (Init(1), K),
                (Arrive(1), t(0)),
                (TestWait(phase(1)), w(false)),
                (TestWait(phase(0)), w(true)),
                (Arrive(1), t(1)),
                (TestWait(phase(1)), w(true)),
                (TestWait(phase(0)), e(Rule::WaitPhaseRange)),
                (TestWait(phase(3)), e(Rule::WaitPhaseRange)),
            ],
            end: (2, 1, 1, 0),
        },
        Row {
            name: "an arrival into the next phase before any wait",
            ops: &[
                (Init(1), K),
                (Arrive(1), t(0)),
                (Arrive(1), e(Rule::ArriveBeforeWait)),
                (TryWaitParity(0), w(true)),
                (Arrive(1), t(1)),
            ],
            end: (2, 1, 1, 0),
        },
        Row {
            name: "parity waits",
            ops: &[
                (Init(1), K),
                (TryWaitParity(2), e(Rule::WaitPhaseRange)),
                (TryWaitParity(1), w(true)),
                (ArriveExpectTx(8), t(0)),
                (TryWaitParity(0), w(false)),
                (CompleteTx(8), K),
                (TryWaitParity(0), w(true)),
                (TryWaitParity(1), w(false)),
            ],
            end: (1, 1, 1, 0),
        },
    ];

    #[test]
    fn every_rule_as_specified() {
        for row in ROWS {
            let word = Atomic::new(0u64);
            let b = Mbarrier::new(&word);
            for (i, &(op, want)) in row.ops.iter().enumerate() {
                let before = word.load(Relaxed);
                let got = b.apply(op);
                // The row and the step ride along, for the host's report of a failure.
                assert_eq!((row.name, i, got), (row.name, i, want));
                if want.is_err() {
                    // A refused operation leaves the word as it was.
                    assert_eq!((row.name, i, word.load(Relaxed)), (row.name, i, before));
                }
            }
            let s = b.snapshot();
            assert_eq!(
                (row.name, (s.phase_mod4, s.pending, s.expected, s.tx)),
                (row.name, row.end)
            );
            assert_eq!(s.parity, s.phase_mod4 & 1);
        }
    }

    #[test]
    fn rule_names_are_stable() {
        let names = [
            (Rule::Uninitialized, "UNINITIALIZED"),
            (Rule::ReinitLive, "REINIT_LIVE"),
            (Rule::CountRange, "COUNT_RANGE"),
            (Rule::TxRange, "TX_RANGE"),
            (Rule::PendingUnderflow, "PENDING_UNDERFLOW"),
            (Rule::ExpectedUnderflow, "EXPECTED_UNDERFLOW"),
            (Rule::NoCompleteWouldComplete, "NOCOMPLETE_WOULD_COMPLETE"),
            (Rule::WaitPhaseRange, "WAIT_PHASE_RANGE"),
            (Rule::ArriveBeforeWait, "ARRIVE_BEFORE_WAIT"),
        ];
        for (rule, name) in names {
            assert_eq!(rule.name(), name);
        }
        assert_eq!(Error::from(Rule::TxRange), EINVAL);
    }

    #[test]
    fn commit_arrives_after_every_earlier_operation() -> Result {
        let word = Atomic::new(0u64);
        let b = Mbarrier::new(&word);
        b.init(1)?;
        let mut tracker = AsyncTracker::new();
        let ops = [tracker.issue()?, tracker.issue()?, tracker.issue()?];
        tracker.commit(Mbarrier::new(&word))?;
        let late = tracker.issue()?;
        let [a, c, d] = ops;
        assert_eq!(tracker.complete(c)?, 0);
        assert_eq!(tracker.complete(a)?, 0);
        assert!(!b.test_wait_parity(0)?);
        // The operation issued after the commit does not hold it back.
        assert_eq!(tracker.complete(d)?, 1);
        assert!(b.test_wait_parity(0)?);
        assert_eq!(tracker.in_flight(), 1);
        assert_eq!(tracker.complete(late)?, 0);
        // Nothing in flight: the commit arrives at once.
        tracker.commit(Mbarrier::new(&word))?;
        assert_eq!(b.snapshot().phase_mod4, 2);
        Ok(())
    }

    /// Phases the pipeline runs through.
    const PHASES: u64 = 2000;

    #[test]
    fn producer_consumer_pipeline_over_many_phases() -> Result {
        // TileLang's shape: `full` says a slot holds data, `empty` that it was consumed;
        // in round `k` the producer waits on `empty` with parity `k & 1 ^ 1` and the
        // consumer on `full` with parity `k & 1`.
        let (full_word, empty_word) = (Atomic::new(0u64), Atomic::new(0u64));
        let (full, empty) = (Mbarrier::new(&full_word), Mbarrier::new(&empty_word));
        full.init(1)?;
        empty.init(1)?;
        let slot = [Atomic::new(0u64), Atomic::new(0u64)];
        let wait = |b: &Mbarrier<'_>, parity: u8| -> Result {
            while !b.try_wait_parity(parity)? {
                kernel::time::delay::fsleep(kernel::time::Delta::from_micros(20));
            }
            Ok(())
        };
        let (produced, consumed) = run_beside(
            || {
                for k in 0..PHASES {
                    // CAST: a parity.
                    wait(&empty, (k & 1) as u8 ^ 1)?;
                    // ORDERING: `Relaxed`: the barrier orders the slot (release arrive,
                    // acquire wait); a missing order shows as a stale value below.
                    slot[0].store(k, Relaxed);
                    slot[1].store(!k, Relaxed);
                    full.arrive(1)?;
                }
                Ok(())
            },
            || -> Result<u64> {
                let mut bad = 0;
                for k in 0..PHASES {
                    // CAST: a parity.
                    wait(&full, (k & 1) as u8)?;
                    // ORDERING: as above.
                    let (a, b) = (slot[0].load(Relaxed), slot[1].load(Relaxed));
                    bad += u64::from(a != k || b != !k);
                    empty.arrive(1)?;
                }
                Ok(bad)
            },
        );
        produced?;
        assert_eq!(consumed?, 0);
        // CAST: 2000 phases, modulo 4.
        let phase = (PHASES % 4) as u8;
        assert_eq!(full.snapshot().phase_mod4, phase);
        assert_eq!(empty.snapshot().phase_mod4, phase);
        Ok(())
    }
}
