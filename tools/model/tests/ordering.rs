// SPDX-License-Identifier: GPL-2.0

//! The ordering proof: every scenario under loom and the DMA contract checker, and the
//! seed's pre-fix barrier placement as a regression that must fail, with the race or
//! the contract violation each of its two defects causes (which load, racing or reading
//! stale data from which store).
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
    try_run,
    Failure,
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
    // The contract checker saw at least one trace: loom alone did not decide the scenario.
    assert!(
        (1..=r.executions).contains(&r.traces_checked),
        "{}",
        summary(sc, &r)
    );
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

#[test]
fn scenario_two_callers_and_an_event() {
    check("two_callers_and_an_event");
}

// The driver's source, where the seed's barriers are, and their markers.
use ordering_marker::{
    CPU_WPTR_RELEASE,
    GSP_WPTR_ACQUIRE,
    SEED_FILE as CMDQ, //
};
/// The virtual GSP's ring accessors and element bytes, where it reads `cpuq`.
const VGSP_MSGQ: &str = "drivers/gpu/vgsp/gsp/msgq.rs";
/// The virtual GSP's outbox, where it writes `gspq`.
const VGSP_OUTBOX: &str = "drivers/gpu/vgsp/gsp/outbox.rs";

/// Returns the text of `file`, [`CMDQ`], [`VGSP_MSGQ`] or [`VGSP_OUTBOX`], as this test
/// was built with.
fn source(file: &str) -> &'static str {
    match file {
        CMDQ => include_str!("../../../drivers/gpu/nova-core/gsp/cmdq/ring.rs"),
        VGSP_MSGQ => include_str!("../../../drivers/gpu/vgsp/gsp/msgq.rs"),
        VGSP_OUTBOX => include_str!("../../../drivers/gpu/vgsp/gsp/outbox.rs"),
        _ => panic!("no source for {file}"),
    }
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

/// Returns the line of the barrier of `file` marked `// ORDERING: [name]`.
fn marked_barrier(file: &str, name: &str) -> u32 {
    match ordering_marker::marked_barrier(source(file), name) {
        Ok(i) => i as u32 + 1,
        Err(e) => panic!("{file}: {e}"),
    }
}

/// Returns the line of the shared access that follows the barrier at line `barrier` of
/// `file` within four lines: a release barrier's pointer store.
fn access_after(file: &str, barrier: u32) -> u32 {
    let is_access = |l: &str| {
        let code = l.trim_start();
        !code.starts_with("//")
            && ["io_read!(", "io_write!(", ".read32(", ".write32("]
                .iter()
                .any(|a| code.contains(a))
    };
    source(file)
        .lines()
        .enumerate()
        .skip(barrier as usize)
        .take(4)
        .find(|(_, l)| is_access(l))
        .map(|(i, _)| i as u32 + 1)
        .unwrap_or_else(|| panic!("{file}:{barrier}: no shared access follows the barrier"))
}

/// Returns the lines of the function declared by `decl` (`"fn name("`) in `file`: from
/// its declaration to the line before the next function's.
fn lines_of_fn(file: &str, decl: &str) -> core::ops::Range<u32> {
    let src = source(file);
    let start = line_of(src, decl, 0);
    let end = src
        .lines()
        .enumerate()
        .skip(start as usize)
        .find(|(_, l)| {
            let l = l.trim_start();
            [
                "fn ",
                "pub fn ",
                "pub(crate) fn ",
                "unsafe fn ",
                "pub unsafe fn ",
            ]
            .iter()
            .any(|p| l.starts_with(p))
        })
        .map_or(src.lines().count() as u32 + 1, |(i, _)| i as u32 + 1);
    start..end
}

/// Asserts that `failure` is loom's race of a load by one agent in the function `load`
/// of `load_file` with a store by the other in the function `store` of `store_file`.
fn assert_race(
    failure: &Failure,
    (load_file, load): (&str, &str),
    (store_file, store): (&str, &str),
) {
    let Failure::Race { message, .. } = failure else {
        panic!("expected a loom race, got {failure}");
    };
    assert_eq!(
        message, "Causality violation: Concurrent read and write accesses.",
        "{failure}"
    );
    for (role, file, decl) in [("read", load_file, load), ("write", store_file, store)] {
        let at = failure
            .race_access(role)
            .unwrap_or_else(|| panic!("no {role} location in {failure}"));
        let lines = lines_of_fn(file, decl);
        assert!(
            at.file == file && lines.contains(&at.line),
            "the {role} of the race is at {}:{}, not in `{decl}` ({file}:{lines:?}): {failure}",
            at.file,
            at.line
        );
    }
}

/// The seed's write-side defect: the barrier before the driver's write-pointer store
/// ([`CPU_WPTR_RELEASE`]) placed *after* the store, so it orders nothing before it.
fn write_barrier_after_the_store() -> Mutation {
    let barrier = marked_barrier(CMDQ, CPU_WPTR_RELEASE);
    Mutation {
        barrier: site(CMDQ, barrier),
        op: MutationOp::MoveAfter(Flavour::Full, site(CMDQ, access_after(CMDQ, barrier))),
    }
}

/// The seed's read-side defect: no barrier after the load of the GSP's write pointer
/// ([`GSP_WPTR_ACQUIRE`]).
fn no_read_barrier_after_the_pointer_load() -> Mutation {
    Mutation {
        barrier: site(CMDQ, marked_barrier(CMDQ, GSP_WPTR_ACQUIRE)),
        op: MutationOp::Delete,
    }
}

/// Returns the site of line `line` of `file`.
fn site(file: &str, line: u32) -> Site {
    Site {
        file: file.into(),
        line,
    }
}

/// Runs `one_command_and_reply` with `mutations`, then without, and returns why the
/// mutated run failed.
fn fails_with(mutations: Vec<Mutation>) -> Failure {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let sc = scenario("one_command_and_reply");
    model::set_mutations(Some(mutations));
    let result = try_run(sc);
    model::set_mutations(None);
    // The unmutated code passes the same scenario: the failure is the mutation's.
    run(sc);
    match result {
        Ok(r) => panic!("the mutated barriers passed the model: {}", summary(sc, &r)),
        Err(failure) => {
            eprintln!("mutated run failed as expected: {failure}");
            failure
        }
    }
}

/// The seed's pre-fix shape, both defects at once, fails the model on the read side:
/// the driver copies the reply out of `gspq` (`read_element_bytes`) while the GSP may
/// still be writing it (`send_pending`): with no `dma_mb(Read)` after the load of the
/// GSP's write pointer, nothing orders the element loads after that pointer load
/// (LOAD->LOAD), so the GSP's `dma_mb(Write)` before its pointer store has no partner.
#[test]
fn seed_prefix_barrier_placement_fails_the_model() {
    let failure = fails_with(vec![
        write_barrier_after_the_store(),
        no_read_barrier_after_the_pointer_load(),
    ]);
    assert_race(
        &failure,
        (CMDQ, "fn read_element_bytes("),
        (VGSP_OUTBOX, "fn send_pending("),
    );
}

/// The read-side defect alone fails the model the same way: it is what the seed's
/// failure above is about.
#[test]
fn seed_missing_read_barrier_alone_fails_the_model() {
    let failure = fails_with(vec![no_read_barrier_after_the_pointer_load()]);
    assert_race(
        &failure,
        (CMDQ, "fn read_element_bytes("),
        (VGSP_OUTBOX, "fn send_pending("),
    );
}

/// The write-side defect alone fails the model on the other ring, where loom (whose C11
/// fences are stronger than Linux's barriers) sees no race but the DMA contract checker
/// does: the GSP's copy of the command out of `cpuq` (`read_cpuq`) may read the slot as
/// it was before the driver wrote it (`write_element_bytes`). A barrier after the
/// pointer store orders none of the element stores before it (STORE->STORE), so the
/// GSP's `dma_mb(Read)` after its pointer load has no partner.
#[test]
fn seed_write_barrier_after_the_store_alone_fails_the_model() {
    let failure = fails_with(vec![write_barrier_after_the_store()]);
    let Failure::Contract(v) = &failure else {
        panic!("expected a DMA contract violation, got {failure}");
    };
    assert_event(&v.load, "gsp load of page", (VGSP_MSGQ, "fn read_cpuq("));
    assert_event(
        &v.actual,
        "driver store of page",
        (CMDQ, "fn write_element_bytes("),
    );
    // An older version of the page: the pointer was seen before the data it publishes.
    assert_eq!(v.could_read, "the initial value");
}

/// Asserts that `what`, an event as the model describes it (`"gsp load of page 0x2
/// version 2 at FILE:LINE"`), starts with `kind` and was made in the function `decl` of
/// `file`.
fn assert_event(what: &str, kind: &str, (file, decl): (&str, &str)) {
    assert!(what.starts_with(kind), "{what:?} is not a {kind}");
    let (_, at) = what
        .rsplit_once(" at ")
        .unwrap_or_else(|| panic!("no location in {what:?}"));
    let (at_file, line) = at.rsplit_once(':').unwrap();
    let lines = lines_of_fn(file, decl);
    assert!(
        at_file == file && lines.contains(&line.parse().unwrap()),
        "{what:?} is not in `{decl}` ({file}:{lines:?})"
    );
}
