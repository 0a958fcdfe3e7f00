// SPDX-License-Identifier: GPL-2.0

//! The ordering proof: every scenario under loom and the DMA contract checker, and the
//! seed's pre-fix barrier placement as a regression that must fail.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p vgsp-model --release --test ordering`.
//! `VGSP_MUTANT` applies a barrier mutation to the `scenario_` tests (see
//! `kernel::model`); the mutation tool uses that.

#![cfg(loom)]

use std::sync::Mutex;

use kernel::model::{
    self,
    Flavour,
    Mutation,
    MutationOp,
    Site, //
};
use vgsp_model::scenarios::{
    run,
    summary,
    Scenario,
    SCENARIOS, //
};

/// The model's mutation setting is global: one scenario at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn scenario(name: &str) -> &'static Scenario {
    SCENARIOS.iter().find(|s| s.name == name).unwrap()
}

fn check(name: &str) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    model::set_mutations(None);
    let sc = scenario(name);
    let r = run(sc);
    eprintln!("{}", summary(sc, &r));
}

#[test]
fn scenario_one_command_and_reply() {
    check("one_command_and_reply");
}

#[test]
fn scenario_command_wraps_ring_end() {
    check("command_wraps_ring_end");
}

#[test]
fn scenario_full_ring_writer_waits() {
    check("full_ring_writer_waits");
}

#[test]
fn scenario_full_gsp_ring_gsp_waits() {
    check("full_gsp_ring_gsp_waits");
}

#[test]
fn scenario_unasked_event_crosses_command() {
    check("unasked_event_crosses_command");
}

#[test]
fn scenario_continuation_record_pair() {
    check("continuation_record_pair");
}

/// Finds the line of the first `needle` at or after `from` in `src`.
fn line_of(src: &str, needle: &str, from: usize) -> u32 {
    src.lines()
        .enumerate()
        .skip(from)
        .find(|(_, l)| l.contains(needle) && !l.trim_start().starts_with("//"))
        .map(|(i, _)| i as u32 + 1)
        .unwrap_or_else(|| panic!("{needle:?} not found"))
}

/// The seed's pre-fix shape: the write-pointer barrier placed *after* the pointer store,
/// and no read barrier after reading the GSP's write pointer.
fn seed_prefix_mutations() -> Vec<Mutation> {
    const FILE: &str = "drivers/gpu/nova-core/gsp/cmdq.rs";
    let src = include_str!("../../../drivers/gpu/nova-core/gsp/cmdq.rs");
    let advance = line_of(src, "fn advance_cpu_write_ptr", 0) as usize;
    let wbarrier = line_of(src, "dma_mb(Write)", advance);
    let wstore = line_of(src, "dma_write!(self.mem[0].cpuq.tx.write_ptr", advance);
    let reader = line_of(src, "fn gsp_write_ptr", 0) as usize;
    let rbarrier = line_of(src, "dma_mb(Read)", reader);
    let site = |line| Site {
        file: FILE.into(),
        line,
    };
    vec![
        Mutation {
            barrier: site(wbarrier),
            op: MutationOp::MoveAfter(Flavour::Full, site(wstore)),
        },
        Mutation {
            barrier: site(rbarrier),
            op: MutationOp::Delete,
        },
    ]
}

#[test]
fn seed_prefix_barrier_placement_fails_the_model() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let sc = scenario("one_command_and_reply");

    model::set_mutations(Some(seed_prefix_mutations()));
    let failed = std::panic::catch_unwind(|| run(sc)).is_err();
    model::set_mutations(None);
    assert!(failed, "the pre-fix barrier placement must fail the model");

    run(sc);
}
