// SPDX-License-Identifier: GPL-2.0

//! The shared queue under load: 8 callers of 4 000 RPCs each (1 B to 200 KiB) on one
//! queue, the GSP logging a line after every 64th command; every reply checked byte for
//! byte at its caller, every line handled once and in order. The KUnit case of
//! `nova_core_gsp_shared` runs the same with 256 RPCs a caller, in every tier.
//!
//! `VGSP_SHARED_RPCS` overrides the RPCs of each caller.

use vgsp_kunit::gsp_shared::{
    stress,
    LineTally,
    Stress, //
};

#[test]
fn eight_callers_of_thousands_of_rpcs_lose_and_misdeliver_nothing() {
    static TALLY: LineTally = LineTally::new();
    const THREADS: usize = 8;
    const LOG_EVERY: u64 = 64;
    let rpcs: usize = std::env::var("VGSP_SHARED_RPCS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4000);
    let total = (THREADS * rpcs) as u64;
    // It prints its summary line.
    let found = stress(THREADS, rpcs, LOG_EVERY, &TALLY).expect("the stress run");
    assert_eq!(
        found,
        Stress {
            threads: THREADS,
            rpcs: total,
            events: total / LOG_EVERY,
            lost: 0,
            misdelivered: 0,
            duplicated: 0,
            out_of_order: 0,
        }
    );
}
