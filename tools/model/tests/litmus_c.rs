// SPDX-License-Identifier: GPL-2.0

//! The C litmus reader (`vgsp_model::litmus`): tests written here in LKMM's format,
//! decided by the contract checker.

use vgsp_model::litmus::{
    Test,
    Verdict, //
};

fn decide(text: &str) -> (Verdict, usize, usize) {
    let o = Test::parse(text).unwrap().decide().unwrap();
    (o.verdict, o.positive, o.negative)
}

/// The shape of the issue that made same-location ordering exact: a store read back by
/// its own CPU orders nothing after it (LKMM, herd7: Sometimes).
const READ_BACK: &str = r#"C read-back
(* Result: Sometimes *)
{}
P0(int *x, int *y)
{
	int r1;
	int r2;

	WRITE_ONCE(*x, 1);
	r1 = READ_ONCE(*x);
	smp_rmb();
	r2 = READ_ONCE(*y);
}

P1(int *x, int *y)
{
	int r4;

	WRITE_ONCE(*y, 1);
	smp_mb();
	r4 = READ_ONCE(*x);
}

exists (0:r1=1 /\ 0:r2=0 /\ 1:r4=0)
"#;

#[test]
fn a_store_read_back_orders_nothing() {
    assert_eq!(decide(READ_BACK).0, Verdict::Sometimes);
}

#[test]
fn the_result_line_is_read() {
    assert_eq!(
        Test::parse(READ_BACK).unwrap().result,
        Some(Verdict::Sometimes)
    );
}

#[test]
fn a_read_then_write_of_one_location_still_orders() {
    // LKMM, herd7: Never.
    let text = r#"C read-then-write
{}
P0(int *x, int *z)
{
	int r1;
	int r2;

	r1 = READ_ONCE(*x);
	smp_rmb();
	r2 = READ_ONCE(*z);
	WRITE_ONCE(*z, 2);
}

P1(int *x, int *z)
{
	int r3;

	r3 = READ_ONCE(*z);
	smp_mb();
	WRITE_ONCE(*x, 1);
}

exists (0:r1=1 /\ 0:r2=0 /\ 1:r3=2)
"#;
    assert_eq!(decide(text).0, Verdict::Never);
}

#[test]
fn observation_counts_distinct_final_states() {
    // MP without barriers: four outcomes of (r0, r1), one of them the clause's.
    let text = r#"C MP
{}
P0(int *x, int *y) { WRITE_ONCE(*x, 1); WRITE_ONCE(*y, 1); }
P1(int *x, int *y) { int r0; int r1; r0 = READ_ONCE(*y); r1 = READ_ONCE(*x); }
exists (1:r0=1 /\ 1:r1=0)
"#;
    let o = Test::parse(text).unwrap().decide().unwrap();
    assert_eq!(o.to_string(), "Observation MP Sometimes 1 3");
}

#[test]
fn release_and_acquire_pass_a_message() {
    let text = r#"C MP+rel+acq
{}
P0(int *x, int *y) { WRITE_ONCE(*x, 1); smp_store_release(y, 1); }
P1(int *x, int *y) { int r0; int r1; r0 = smp_load_acquire(y); r1 = READ_ONCE(*x); }
exists (1:r0=1 /\ 1:r1=0)
"#;
    assert_eq!(decide(text), (Verdict::Never, 0, 3));
}

#[test]
fn a_lock_serialises_its_critical_sections() {
    let text = r#"C lock-counter
{}
P0(int *x, spinlock_t *l) { int r0; spin_lock(l); r0 = READ_ONCE(*x); WRITE_ONCE(*x, r0 + 1); spin_unlock(l); }
P1(int *x, spinlock_t *l) { int r0; spin_lock(l); r0 = READ_ONCE(*x); WRITE_ONCE(*x, r0 + 1); spin_unlock(l); }
exists (x=1)
"#;
    assert_eq!(decide(text).0, Verdict::Never);
    // Without the lock, an increment is lost.
    let racy = text
        .replace("spin_lock(l); ", "")
        .replace(" spin_unlock(l);", "");
    assert_eq!(decide(&racy).0, Verdict::Sometimes);
}

#[test]
fn a_control_dependency_is_not_honoured() {
    // LB with a control dependency on P0 (LKMM: Never; the contract honours none).
    let text = r#"C LB+ctrl
{}
P0(int *x, int *y) { int r0; r0 = READ_ONCE(*x); if (r0) WRITE_ONCE(*y, 1); }
P1(int *x, int *y) { int r0; r0 = READ_ONCE(*y); smp_mb(); WRITE_ONCE(*x, 1); }
exists (0:r0=1 /\ 1:r0=1)
"#;
    assert_eq!(decide(text).0, Verdict::Sometimes);
}

#[test]
fn constructs_outside_the_subset_are_refused_by_name() {
    let xchg = r#"C X
{}
P0(int *x) { int r0; r0 = xchg(x, 1); }
exists (0:r0=0)
"#;
    let why = Test::parse(xchg).unwrap_err().0;
    assert!(why.contains("xchg"), "{why}");
    let atomic = "C A\n{}\nP0(atomic_t *v) { atomic_inc(v); }\nexists (v=1)\n";
    let why = Test::parse(atomic).unwrap_err().0;
    assert!(why.contains("atomic_t"), "{why}");
    let negated = "C N\n{}\nP0(int *x) { WRITE_ONCE(*x, 1); }\n~exists (x=1)\n";
    let why = Test::parse(negated).unwrap_err().0;
    assert!(why.contains('~'), "{why}");
}
