// SPDX-License-Identifier: GPL-2.0

//! `vgsp-barriers [COUNT [LEN]]`: the DMA barriers one small command executes, per side,
//! counted (the shim's `dma-mb-stats`; this binary needs the feature `barrier-stats`).
//!
//! The driver and the virtual GSP run in turns on one thread, as in `examples/turns.rs`:
//! COUNT (default 1000) `Echo` commands of LEN (default 8) bytes, each sent, served by
//! the GSP until it is idle, and its reply received. The counters are read around each
//! side's turn, so the driver's barriers (sending, ringing the doorbell, receiving the
//! reply) and the GSP's (finding the command, consuming it, replying, finding nothing
//! more) are told apart; with no second thread, no spinning and no clock the counts are
//! the same on every run and every machine. One command, warmed up, is not counted.
//!
//! Per command and side it prints the `dma_mb` calls by the flavour asked for, the barrier
//! instructions executed by flavour (what `dma_mb` emitted, `readl`/`writel` included),
//! and the full barriers: the `Full` instructions plus, in the seed variant, the
//! `fence(SeqCst)` after each write-pointer store, which is not a `dma_mb` and so is not
//! counted but known (one per element the driver publishes). The last line,
//! `summary ...`, is for scripts (`tests/bench/barriers.sh` compares the variants).
//!
//! Build it per variant (`--features barrier-stats,all-full`, ...), in a target directory
//! of its own: the stats feature costs an atomic increment per barrier.

use std::process::ExitCode;

use kernel::{
    prelude::*,
    sync::barrier::{
        stats::{
            self,
            DmaMbCounts, //
        },
        DMA_INSTRUCTIONS,
        FLAVOURS, //
    },
    time::Delta,
};
use nova_core::gsp::{
    cmdq::SEND_TIMEOUT,
    fw::{
        MsgFunction,
        MAX_ELEMENT_PAYLOAD, //
    },
};
use vgsp_bench::VARIANT;
use vgsp_kunit::fixture::Pair;

/// The barriers of each side, summed over the counted commands.
#[derive(Default)]
struct Sides {
    driver: DmaMbCounts,
    gsp: DmaMbCounts,
}

/// Returns `a + b`, field by field.
fn add(a: &DmaMbCounts, b: &DmaMbCounts) -> DmaMbCounts {
    let sum = |x: [u64; 3], y: [u64; 3]| core::array::from_fn(|i| x[i] + y[i]);
    DmaMbCounts {
        asked: sum(a.asked, b.asked),
        emitted: sum(a.emitted, b.emitted),
        io: sum(a.io, b.io),
    }
}

/// Adds the barriers since `*mark` to `side` and moves the mark.
fn charge(side: &mut DmaMbCounts, mark: &mut DmaMbCounts) {
    let now = stats::snapshot();
    *side = add(side, &now.since(mark));
    *mark = now;
}

/// Sends one `Echo` of `payload` and receives its reply, in turns with the GSP; charges
/// each side's barriers.
fn one_command(pair: &mut Pair, payload: &[u8], sides: &mut Sides) -> Result {
    let mut mark = stats::snapshot();
    pair.cmdq
        .send_rpc(pair.bar.bar(), MsgFunction::Nop, payload, SEND_TIMEOUT)?;
    charge(&mut sides.driver, &mut mark);
    pair.gsp_run()?;
    charge(&mut sides.gsp, &mut mark);
    let reply = pair.cmdq.receive_any(Delta::ZERO)?;
    charge(&mut sides.driver, &mut mark);
    if reply.function() != Ok(MsgFunction::Nop) || reply.payload[..] != *payload {
        return Err(EIO);
    }
    Ok(())
}

/// Returns the name of the instruction `dma_mb` of flavour `i` emits here.
fn instruction(i: usize) -> &'static str {
    match DMA_INSTRUCTIONS[i] {
        "" => "compiler",
        insn => insn,
    }
}

/// Returns `n / count` with two decimals.
fn per(n: u64, count: usize) -> String {
    // CAST: counts far below 2^53.
    format!("{:.2}", n as f64 / count as f64)
}

/// Returns the full barriers of `c`: the `Full` instructions, plus `fences` `fence(SeqCst)`.
fn full_barriers(c: &DmaMbCounts, fences: u64) -> u64 {
    c.instructions()[0] + fences
}

fn run(count: usize, len: usize) -> Result<Sides> {
    let mut pair = Pair::new()?;
    let payload = Pair::pattern(len, 7)?;
    one_command(&mut pair, &payload, &mut Sides::default())?;
    let mut sides = Sides::default();
    for _ in 0..count {
        one_command(&mut pair, &payload, &mut sides)?;
    }
    Ok(sides)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parse = |i: usize, default: usize| args.get(i).map_or(Some(default), |a| a.parse().ok());
    let (Some(count), Some(len)) = (parse(0, 1000), parse(1, 8)) else {
        eprintln!("usage: vgsp-barriers [COUNT [LEN]]");
        return ExitCode::from(2);
    };
    if count == 0 || args.len() > 2 || len > MAX_ELEMENT_PAYLOAD {
        eprintln!(
            "usage: vgsp-barriers [COUNT [LEN]]: COUNT above 0, LEN at most {MAX_ELEMENT_PAYLOAD} \
             (one element)"
        );
        return ExitCode::from(2);
    }
    let sides = match run(count, len) {
        Ok(sides) => sides,
        Err(e) => {
            eprintln!("vgsp-barriers: {e:?}");
            return ExitCode::FAILURE;
        }
    };

    // The seed's `fence(SeqCst)` follows every write-pointer store: one per element the
    // driver publishes, one element a command here.
    let seed_fences = if VARIANT.starts_with("seed") {
        // CAST: `usize` fits `u64`.
        count as u64
    } else {
        0
    };
    let arch = std::env::consts::ARCH;
    println!(
        "vgsp-barriers: variant {VARIANT}, {arch}; {count} Echo commands of {len} B, the \
         driver and the GSP in turns on one thread; per command:"
    );
    let mut head = format!("{:<7}", "side");
    for f in FLAVOURS {
        head.push_str(&format!(" {:>13}", format!("dma_mb({f})")));
    }
    for (i, f) in FLAVOURS.iter().enumerate() {
        head.push_str(&format!(" {:>16}", format!("{f}: {}", instruction(i))));
    }
    head.push_str(&format!(
        " {:>12} {:>13} {:>13}",
        "(of which io)", "fence(SeqCst)", "full barriers"
    ));
    println!("{head}");
    let both = add(&sides.driver, &sides.gsp);
    let rows = [
        ("driver", &sides.driver, seed_fences),
        ("GSP", &sides.gsp, 0),
        ("both", &both, seed_fences),
    ];
    for (name, c, fences) in rows {
        let mut line = format!("{name:<7}");
        for n in c.asked {
            line.push_str(&format!(" {:>13}", per(n, count)));
        }
        for n in c.instructions() {
            line.push_str(&format!(" {:>16}", per(n, count)));
        }
        let io: Vec<String> = c.io.iter().map(|&n| per(n, count)).collect();
        line.push_str(&format!(
            " {:>12} {:>13} {:>13}",
            io.join("/"),
            per(fences, count),
            per(full_barriers(c, fences), count)
        ));
        println!("{line}");
    }
    println!(
        "(`dma_mb(F)`: calls by the flavour asked for; `F: insn`: barrier instructions \
         executed, `dma_mb` and `readl`/`writel` together; `(of which io)`: those of \
         `readl`/`writel`, Full/Read/Write; `fence(SeqCst)`: the seed variant's, known, \
         not counted; full barriers: the Full instructions and those fences)"
    );
    println!(
        "summary variant={VARIANT} arch={arch} commands={count} driver_full={} gsp_full={} \
         total_full={} driver_instructions={} gsp_instructions={}",
        per(full_barriers(&sides.driver, seed_fences), count),
        per(full_barriers(&sides.gsp, 0), count),
        per(full_barriers(&both, seed_fences), count),
        per(
            sides.driver.instructions().iter().sum::<u64>() + seed_fences,
            count
        ),
        per(sides.gsp.instructions().iter().sum(), count),
    );
    ExitCode::SUCCESS
}
