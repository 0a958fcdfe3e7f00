// SPDX-License-Identifier: GPL-2.0

//! `mbarrier-trace FILE`: runs `mbarrier` operations, one per line, on one barrier and
//! prints one line per operation, for conformance checking against other models.
//!
//! Input: `init N`, `inval`, `arrive [N]`, `arrive_nocomplete [N]`, `arrive_drop [N]`
//! (N defaults to 1), `expect_tx N`, `arrive_expect_tx N`, `complete_tx N`,
//! `test_wait T`, `try_wait T` (T: a phase number an arrival returned),
//! `try_wait_parity P`; `#` starts a comment, blank lines are skipped.
//!
//! Output: `<op> -> phase=<P> parity=<0|1> pending=<n> expected=<n> tx=<n>
//! result=<token:<phase>|true|false|ok>`, or `<op> -> error=<RULE>` (state unchanged; the
//! rule names are `mbarrier::Rule::name`). `<op>` is the line without its
//! comment, with single spaces. The barrier's word has two phase bits; the full phase
//! number is counted here, and a wait on a phase that is neither the current nor the
//! previous one is refused with `WAIT_PHASE_RANGE` by that count.
//!
//! Exit status: 0 when every line was read, whatever the operations gave; 2 with a
//! message naming the line when a line cannot be parsed or the file cannot be read.

use std::{
    io::Write,
    process::ExitCode, //
};

use kernel::sync::atomic::Atomic;
use mbarrier::{
    Mbarrier,
    Op,
    Outcome,
    Rule,
    Token, //
};

/// One parsed line.
struct Line {
    /// The line without its comment, with single spaces.
    text: String,
    /// The operation the line names.
    op: Op,
    /// For `test_wait` and `try_wait`, the full phase number the line names (the token
    /// of `op` keeps it only modulo 4).
    phase: Option<u64>,
}

/// A number argument: values beyond `u32` are kept as `u32::MAX`, which every range
/// check refuses, so that the barrier reports the rule rather than the parser.
fn number(word: &str) -> Result<u64, String> {
    word.parse::<u64>()
        .map_err(|_| format!("'{word}' is not a non-negative integer"))
}

fn small(word: &str) -> Result<u32, String> {
    Ok(u32::try_from(number(word)?).unwrap_or(u32::MAX))
}

fn parse(line: &str) -> Result<Option<Line>, String> {
    let text = line.split('#').next().unwrap_or("");
    let words: Vec<&str> = text.split_whitespace().collect();
    let Some((&name, args)) = words.split_first() else {
        return Ok(None);
    };
    let one = |default: Option<u32>| -> Result<u32, String> {
        match (args, default) {
            ([], Some(d)) => Ok(d),
            ([n], _) => small(n),
            _ => Err(format!(
                "'{name}' takes {} argument",
                if default.is_some() {
                    "at most one"
                } else {
                    "one"
                }
            )),
        }
    };
    let mut phase = None;
    let op = match name {
        "init" => Op::Init(one(None)?),
        "inval" if args.is_empty() => Op::Inval,
        "inval" => return Err("'inval' takes no argument".into()),
        "arrive" => Op::Arrive(one(Some(1))?),
        "arrive_nocomplete" => Op::ArriveNoComplete(one(Some(1))?),
        "arrive_drop" => Op::ArriveDrop(one(Some(1))?),
        "expect_tx" => Op::ExpectTx(one(None)?),
        "arrive_expect_tx" => Op::ArriveExpectTx(one(None)?),
        "complete_tx" => Op::CompleteTx(one(None)?),
        "test_wait" | "try_wait" | "try_wait_parity" => {
            let [n] = args else {
                return Err(format!("'{name}' takes one argument"));
            };
            if name == "try_wait_parity" {
                Op::TryWaitParity(u8::try_from(small(n)?).unwrap_or(u8::MAX))
            } else {
                let p = number(n)?;
                phase = Some(p);
                let token = Token::from_phase(p);
                if name == "test_wait" {
                    Op::TestWait(token)
                } else {
                    Op::TryWait(token)
                }
            }
        }
        other => return Err(format!("unknown operation '{other}'")),
    };
    Ok(Some(Line {
        text: words.join(" "),
        op,
        phase,
    }))
}

/// The barrier and the full phase count the word keeps only modulo 4.
struct Runner {
    word: Box<Atomic<u64>>,
    phase: u64,
}

impl Runner {
    fn barrier(&self) -> Mbarrier<'_> {
        Mbarrier::new(&self.word)
    }

    /// Runs the line's operation; returns its `result=` field.
    fn run(&mut self, line: &Line) -> Result<String, Rule> {
        let before = self.phase;
        let b = self.barrier();
        if let Some(phase) = line.phase {
            // The barrier's own check comes first; then the phase by the full count.
            b.snapshot()
                .initialised
                .then_some(())
                .ok_or(Rule::Uninitialized)?;
            if phase != before && before.checked_sub(1) != Some(phase) {
                return Err(Rule::WaitPhaseRange);
            }
        }
        let out = b.apply(line.op)?;
        let s = b.snapshot();
        self.phase = match line.op {
            Op::Init(_) | Op::Inval => 0,
            // CAST: the low two bits of the count.
            _ => before + u64::from(s.phase_mod4.wrapping_sub(before as u8) & 3),
        };
        Ok(match out {
            // CAST: the low two bits of the count.
            Outcome::Token(t) => format!(
                "token:{}",
                before - u64::from((before as u8).wrapping_sub(t.phase_mod4()) & 3)
            ),
            Outcome::Wait(w) => w.to_string(),
            Outcome::Done => "ok".into(),
        })
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, file] = &args[..] else {
        eprintln!("usage: mbarrier-trace FILE");
        return ExitCode::from(2);
    };
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("mbarrier-trace: cannot read {file}: {e}");
            return ExitCode::from(2);
        }
    };
    let mut runner = Runner {
        word: Box::new(Atomic::new(0)),
        phase: 0,
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for (n, line) in text.lines().enumerate() {
        let line = match parse(line) {
            Ok(Some(parsed)) => parsed,
            Ok(None) => continue,
            Err(e) => {
                let _ = out.flush();
                eprintln!("mbarrier-trace: {file}:{}: {e}", n + 1);
                return ExitCode::from(2);
            }
        };
        let report = match runner.run(&line) {
            Err(rule) => format!("{} -> error={}", line.text, rule.name()),
            Ok(result) => {
                let s = runner.barrier().snapshot();
                format!(
                    "{} -> phase={} parity={} pending={} expected={} tx={} result={result}",
                    line.text, runner.phase, s.parity, s.pending, s.expected, s.tx
                )
            }
        };
        if writeln!(out, "{report}").is_err() {
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}
