// SPDX-License-Identifier: GPL-2.0

//! Litmus tests of the contract checker against the known answers for Linux's
//! barriers (Documentation/memory-barriers.txt, tools/memory-model/litmus-tests).

use vgsp_model::contract::{
    allowed,
    consistent,
    find_violation,
    Event,
    Execution,
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

fn acquire(agent: u8, lock: u64, releases: u64) -> Event {
    Event {
        agent,
        op: Op::Acquire {
            loc: lock,
            value: releases,
        },
        data: false,
        what: format!("P{agent} lock {lock} after {releases} releases"),
    }
}

fn release(agent: u8, lock: u64, releases: u64) -> Event {
    Event {
        agent,
        op: Op::Release {
            loc: lock,
            value: releases,
        },
        data: false,
        what: format!("P{agent} unlock {lock}, release {releases}"),
    }
}

const L: u64 = 2;

/// Slot reuse across a lock hand-over: the GSP (P2) reads slot x (data) and frees it by
/// storing y; driver thread P0 reads y == 1 and releases the lock; thread P1 takes the
/// lock (`taken`: after `taken` releases) and reuses x on what P0 learnt, without loading
/// y itself.
fn reuse_across_lock(taken: u64) -> Vec<Event> {
    let mut read = ld(2, X, 0);
    read.data = true;
    vec![
        read,
        mb(2, Flavour::Full),
        st(2, Y, 1),
        ld(0, Y, 1),
        release(0, L, 1),
        acquire(1, L, taken),
        st(1, X, 1),
    ]
}

#[test]
fn a_lock_hands_over_what_its_holder_saw() {
    // The release orders P0's load before it, the acquire P1's store after it: the GSP
    // cannot read the reused slot's new bytes.
    assert_eq!(find_violation(&reuse_across_lock(1)).unwrap(), None);
}

#[test]
fn a_thread_that_took_the_lock_before_the_hand_over_knows_nothing() {
    // P1 took the lock as it was before P0's release: nothing orders its store after
    // P0's load, and the GSP may read it.
    let v = find_violation(&reuse_across_lock(0))
        .unwrap()
        .expect("the slot may be overwritten while read");
    assert!(v.could_read.contains("P1 store"), "{v}");
}

#[test]
fn an_unlock_and_a_lock_on_one_thread_order_nothing_towards_the_gsp() {
    // P0 writes slot x, releases and takes a lock, then publishes x by storing y; the GSP
    // (P2) reads y == 1, then x with a `Read` barrier between. A CPU's lock is no
    // `dma_wmb`: the GSP may still read the old x.
    let mut read = ld(2, X, 1);
    read.data = true;
    let v = vec![
        st(0, X, 1),
        release(0, L, 1),
        acquire(0, L, 1),
        st(0, Y, 1),
        ld(2, Y, 1),
        mb(2, Flavour::Read),
        read,
    ];
    let found = find_violation(&v).unwrap().expect("stale read possible");
    assert_eq!(found.could_read, "the initial value");
}

#[test]
fn a_lock_hand_over_is_message_passing_between_threads() {
    // P0 stores x then unlocks; P1 locks after that unlock and reads x: it cannot read
    // the initial value.
    let v = vec![st(0, X, 1), release(0, L, 1), acquire(1, L, 1), ld(1, X, 0)];
    assert!(!allowed(&v));
    // Taking the lock before the unlock (the initial count) orders nothing.
    let v = vec![st(0, X, 1), release(0, L, 1), acquire(1, L, 0), ld(1, X, 0)];
    assert!(allowed(&v));
}

#[test]
fn a_lock_hands_over_what_was_published_to_its_holder() {
    // The GSP (P2) writes slot x and publishes it by storing y behind `dma_wmb`; P0 loads
    // y == 1 and releases the lock; P1 takes it and reads x (data) without loading y:
    // it cannot read the slot's old bytes.
    let mut read = ld(1, X, 1);
    read.data = true;
    let v = vec![
        st(2, X, 1),
        mb(2, Flavour::Write),
        st(2, Y, 1),
        ld(0, Y, 1),
        release(0, L, 1),
        acquire(1, L, 1),
        read,
    ];
    assert_eq!(find_violation(&v).unwrap(), None);
}

// Same-location ordering, as LKMM and Arm have it: a load before a later access of its
// location, a store before a later store of it; a store before a later load of it is not
// ordered (the load may be forwarded from the store buffer), but coherence still holds.

#[test]
fn a_store_read_back_by_its_own_agent_orders_nothing_after_it() {
    // SB with a read-back (LKMM: Sometimes): P0 stores x, reads it back, `Read` barrier,
    // reads y == 0; P1 stores y, `Full` barrier, reads x == 0.
    let v = vec![
        st(0, X, 1),
        ld(0, X, 1),
        mb(0, Flavour::Read),
        ld(0, Y, 0),
        st(1, Y, 1),
        mb(1, Flavour::Full),
        ld(1, X, 0),
    ];
    assert!(allowed(&v));
}

#[test]
fn a_load_orders_a_later_store_of_its_location() {
    // P0 reads x == 1, `Read` barrier, reads z == 0, then stores z = 2; P1 reads z == 2,
    // `Full` barrier, stores x = 1 (LKMM: Never). The load of z is ordered before the
    // store of z (fr within one agent), closing the cycle.
    const Z: u64 = 3;
    let v = vec![
        ld(0, X, 1),
        mb(0, Flavour::Read),
        ld(0, Z, 0),
        st(0, Z, 2),
        ld(1, Z, 2),
        mb(1, Flavour::Full),
        st(1, X, 1),
    ];
    assert!(!allowed(&v));
}

#[test]
fn a_load_never_reads_older_than_its_own_agents_store() {
    // CoWR: P0 stores x = 1 then reads x == 0 (the initial value).
    assert!(!allowed(&[st(0, X, 1), ld(0, X, 0)]));
}

#[test]
fn a_load_orders_a_later_store_of_its_location_against_coherence() {
    // CoRW: P0 reads x == 2 (P1's store), then stores x = 1, which is coherence-before
    // P1's: forbidden.
    let events = vec![ld(0, X, 2), st(0, X, 1), st(1, X, 2)];
    let exec = |co: Vec<usize>| Execution {
        rf: [(0, Some(2))].into_iter().collect(),
        co: [(X, co)].into_iter().collect(),
    };
    assert!(!consistent(&events, &exec(vec![1, 2])));
    assert!(consistent(&events, &exec(vec![2, 1])));
}

#[test]
fn two_stores_of_one_location_keep_their_order() {
    // CoWW: P0 stores x = 1 then x = 2; coherence cannot put the second first.
    let events = vec![st(0, X, 1), st(0, X, 2)];
    let exec = |co: Vec<usize>| Execution {
        rf: Default::default(),
        co: [(X, co)].into_iter().collect(),
    };
    assert!(!consistent(&events, &exec(vec![1, 0])));
    assert!(consistent(&events, &exec(vec![0, 1])));
}
