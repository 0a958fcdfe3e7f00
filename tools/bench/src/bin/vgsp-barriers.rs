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
//! Per command and side it prints the `dma_mb` calls by flavour, the barrier instructions
//! executed by flavour (`dma_mb`'s and `readl`/`writel`'s together), and the full
//! barriers. The last line, `summary ...`, is for scripts (`tools/bench/barriers.sh`
//! compares the variants).
//!
//! Build it per variant in the variant's copy of the source (`cargo xtask variant-tree`),
//! with `--features barrier-stats`: the stats feature costs an atomic increment per
//! barrier.

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
use nova_core::gsp::fw::{
    MsgFunction,
    MAX_ELEMENT_PAYLOAD, //
};
use nova_testbench::{
    rpc::Raw,
    ReceiveAny, //
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
        io: sum(a.io, b.io),
    }
}

/// Adds the barriers since `*mark` to `side` and moves the mark.
fn charge(side: &mut DmaMbCounts, mark: &mut DmaMbCounts) {
    let now = stats::snapshot();
    *side = add(side, &now.since(mark));
    *mark = now;
}

/// Sends one `NOP` of `payload` (which the GSP echoes) and receives its reply, in turns
/// with the GSP; charges each side's barriers.
fn one_command(pair: &mut Pair, payload: &[u8], sides: &mut Sides) -> Result {
    let mut mark = stats::snapshot();
    pair.cmdq
        .post(pair.bar.bar(), &Raw::<{ MsgFunction::NOP.0 }>(payload))?;
    charge(&mut sides.driver, &mut mark);
    pair.gsp_run()?;
    charge(&mut sides.gsp, &mut mark);
    let reply = pair.cmdq.receive_any(Delta::ZERO)?;
    charge(&mut sides.driver, &mut mark);
    if reply.function() != MsgFunction::NOP || reply.payload[..] != *payload {
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

/// Returns the full barriers of `c`: the `Full` instructions.
fn full_barriers(c: &DmaMbCounts) -> u64 {
    c.instructions()[0]
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
    head.push_str(&format!(" {:>12} {:>13}", "(of which io)", "full barriers"));
    println!("{head}");
    let both = add(&sides.driver, &sides.gsp);
    let rows = [
        ("driver", &sides.driver),
        ("GSP", &sides.gsp),
        ("both", &both),
    ];
    for (name, c) in rows {
        let mut line = format!("{name:<7}");
        for n in c.asked {
            line.push_str(&format!(" {:>13}", per(n, count)));
        }
        for n in c.instructions() {
            line.push_str(&format!(" {:>16}", per(n, count)));
        }
        let io: Vec<String> = c.io.iter().map(|&n| per(n, count)).collect();
        line.push_str(&format!(
            " {:>12} {:>13}",
            io.join("/"),
            per(full_barriers(c), count)
        ));
        println!("{line}");
    }
    println!(
        "(`dma_mb(F)`: calls by flavour; `F: insn`: barrier instructions executed, `dma_mb` \
         and `readl`/`writel` together; `(of which io)`: those of `readl`/`writel`, \
         Full/Read/Write; full barriers: the Full instructions)"
    );
    println!(
        "summary variant={VARIANT} arch={arch} commands={count} driver_full={} gsp_full={} \
         total_full={} driver_instructions={} gsp_instructions={}",
        per(full_barriers(&sides.driver), count),
        per(full_barriers(&sides.gsp), count),
        per(full_barriers(&both), count),
        per(sides.driver.instructions().iter().sum::<u64>(), count),
        per(sides.gsp.instructions().iter().sum(), count),
    );
    ExitCode::SUCCESS
}
