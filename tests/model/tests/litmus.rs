// SPDX-License-Identifier: GPL-2.0

//! Litmus tests of the contract checker against the known answers for Linux's
//! barriers (Documentation/memory-barriers.txt, tools/memory-model/litmus-tests).

use vgsp_model::contract::{
    allowed,
    find_violation,
    Event,
    Flavour,
    Op, //
};

fn ld(agent: u8, loc: u64, value: u64) -> Event {
    Event {
        agent,
        op: Op::Load { loc, value },
        data: false,
        what: format!("P{agent} load {loc}={value}"),
    }
}

fn st(agent: u8, loc: u64, value: u64) -> Event {
    Event {
        agent,
        op: Op::Store { loc, value },
        data: false,
        what: format!("P{agent} store {loc}={value}"),
    }
}

fn mb(agent: u8, f: Flavour) -> Event {
    Event {
        agent,
        op: Op::Fence(f),
        data: false,
        what: format!("P{agent} {f:?}"),
    }
}

const X: u64 = 0;
const Y: u64 = 1;

/// MP: P0 writes data x then flag y; P1 reads y == 1 then x == 0 (stale).
fn mp(b0: Option<Flavour>, b1: Option<Flavour>) -> Vec<Event> {
    let mut v = vec![st(0, X, 1)];
    v.extend(b0.map(|f| mb(0, f)));
    v.push(st(0, Y, 1));
    v.push(ld(1, Y, 1));
    v.extend(b1.map(|f| mb(1, f)));
    v.push(ld(1, X, 0));
    v
}

#[test]
fn message_passing_without_barriers_is_allowed() {
    assert!(allowed(&mp(None, None)));
}

#[test]
fn message_passing_with_write_and_read_barriers_is_forbidden() {
    assert!(!allowed(&mp(Some(Flavour::Write), Some(Flavour::Read))));
    assert!(!allowed(&mp(Some(Flavour::Full), Some(Flavour::Full))));
}

#[test]
fn message_passing_with_one_side_only_is_allowed() {
    assert!(allowed(&mp(Some(Flavour::Write), None)));
    assert!(allowed(&mp(None, Some(Flavour::Read))));
    // The wrong flavours: a read barrier on the writer, a write barrier on the reader.
    assert!(allowed(&mp(Some(Flavour::Read), Some(Flavour::Write))));
}

/// LB: P0 reads x == 1 then writes y; P1 reads y == 1 then writes x.
fn lb(b: Option<Flavour>) -> Vec<Event> {
    let mut v = vec![ld(0, X, 1)];
    v.extend(b.map(|f| mb(0, f)));
    v.push(st(0, Y, 1));
    v.push(ld(1, Y, 1));
    v.extend(b.map(|f| mb(1, f)));
    v.push(st(1, X, 1));
    v
}

#[test]
fn load_buffering_is_allowed_without_full_barriers() {
    assert!(allowed(&lb(None)));
    // `dma_rmb` orders loads against loads only, `dma_wmb` stores against stores.
    assert!(allowed(&lb(Some(Flavour::Read))));
    assert!(allowed(&lb(Some(Flavour::Write))));
}

#[test]
fn load_buffering_with_full_barriers_is_forbidden() {
    assert!(!allowed(&lb(Some(Flavour::Full))));
}

/// SB: P0 writes x then reads y == 0; P1 writes y then reads x == 0.
fn sb(b: Option<Flavour>) -> Vec<Event> {
    let mut v = vec![st(0, X, 1)];
    v.extend(b.map(|f| mb(0, f)));
    v.push(ld(0, Y, 0));
    v.push(st(1, Y, 1));
    v.extend(b.map(|f| mb(1, f)));
    v.push(ld(1, X, 0));
    v
}

#[test]
fn store_buffering_is_allowed_without_full_barriers() {
    assert!(allowed(&sb(None)));
    assert!(allowed(&sb(Some(Flavour::Read))));
    assert!(allowed(&sb(Some(Flavour::Write))));
}

#[test]
fn store_buffering_with_full_barriers_is_forbidden() {
    assert!(!allowed(&sb(Some(Flavour::Full))));
}

#[test]
fn coherence_forbids_reading_a_store_overwritten_before_in_program_order() {
    // CoRR: P0 writes x=1 then x=2; P1 reads x == 2 then x == 1.
    let v = vec![st(0, X, 1), st(0, X, 2), ld(1, X, 2), ld(1, X, 1)];
    assert!(!allowed(&v));
}

#[test]
fn violation_search_finds_stale_data_only_without_barriers() {
    let mut unprotected = mp(None, None);
    // The recorded execution read the fresh data; mark it as a data load.
    unprotected[3] = ld(1, X, 1);
    unprotected[3].data = true;
    let v = find_violation(&unprotected)
        .unwrap()
        .expect("stale read possible");
    assert_eq!(v.could_read, "the initial value");

    let mut protected = mp(Some(Flavour::Write), Some(Flavour::Read));
    protected[5] = ld(1, X, 1);
    protected[5].data = true;
    assert_eq!(find_violation(&protected).unwrap(), None);
}

#[test]
fn violation_search_finds_slot_reuse_without_full_barrier() {
    // P1 reads slot x (data) and frees it by storing y; P0 reads y == 1, then reuses x.
    let build = |b1: Flavour, b0: Flavour| {
        let mut read = ld(1, X, 0);
        read.data = true;
        vec![
            read,
            mb(1, b1),
            st(1, Y, 1),
            ld(0, Y, 1),
            mb(0, b0),
            st(0, X, 1),
        ]
    };
    assert_eq!(
        find_violation(&build(Flavour::Full, Flavour::Full)).unwrap(),
        None
    );
    assert!(find_violation(&build(Flavour::Full, Flavour::Read))
        .unwrap()
        .is_some());
    assert!(find_violation(&build(Flavour::Write, Flavour::Full))
        .unwrap()
        .is_some());
}
