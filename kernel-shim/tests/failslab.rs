// SPDX-License-Identifier: GPL-2.0

//! `kernel::host::failslab`: the `n`-th allocation of the arming thread fails, once, and
//! nothing else does.

use kernel::{
    alloc::{
        flags::GFP_KERNEL,
        AllocError,
        KBox,
        KVVec,
        KVec, //
    },
    host::failslab,
};

#[test]
fn fails_the_nth_allocation_once() {
    let armed = failslab::fail_nth(2);
    let a = KBox::new(1u64, GFP_KERNEL);
    let b = KVec::<u8>::with_capacity(4, GFP_KERNEL);
    let c = KVVec::<u8>::from_elem(0, 16, GFP_KERNEL);
    let d = KBox::new(4u64, GFP_KERNEL);
    assert!(a.is_ok() && b.is_ok() && d.is_ok());
    assert_eq!(c.err(), Some(AllocError));
    assert!(armed.injected());
    assert_eq!(armed.allocations(), 4);
}

#[test]
fn a_reservation_with_room_is_not_counted() {
    let mut v = KVec::<u8>::with_capacity(64, GFP_KERNEL).unwrap();
    let armed = failslab::fail_nth(0);
    v.extend_from_slice(&[1; 64], GFP_KERNEL).unwrap();
    assert_eq!(armed.allocations(), 0);
    assert_eq!(v.push(2, GFP_KERNEL), Err(AllocError));
    // A failed growth leaves the vector as it was.
    assert_eq!(v.len(), 64);
    assert!(armed.injected());
}

#[test]
fn a_zero_sized_value_is_not_counted() {
    let armed = failslab::fail_nth(0);
    assert!(KBox::new((), GFP_KERNEL).is_ok());
    assert!(KVec::<()>::with_capacity(10, GFP_KERNEL).is_ok());
    assert_eq!(armed.allocations(), 0);
    assert!(!armed.injected());
}

#[test]
fn another_thread_is_not_failed() {
    let armed = failslab::fail_nth(0);
    let other = std::thread::spawn(|| (0..100).all(|i| KBox::new(i, GFP_KERNEL).is_ok()));
    assert!(other.join().unwrap());
    assert_eq!(armed.allocations(), 0);
    assert!(KBox::new(1u32, GFP_KERNEL).is_err());
}

#[test]
fn exempt_allocations_are_neither_counted_nor_failed() {
    let armed = failslab::fail_nth(0);
    let kept = failslab::exempt(|| KBox::new(1u32, GFP_KERNEL));
    assert!(kept.is_ok());
    assert_eq!(armed.allocations(), 0);
    assert!(KBox::new(2u32, GFP_KERNEL).is_err());
}

#[test]
fn dropping_the_guard_disarms() {
    let armed = failslab::fail_nth(1);
    assert!(KBox::new(1u32, GFP_KERNEL).is_ok());
    assert!(!armed.injected());
    drop(armed);
    assert!(KBox::new(2u32, GFP_KERNEL).is_ok());
    // Armed again, counting from 0.
    let armed = failslab::fail_nth(0);
    assert!(KBox::new(3u32, GFP_KERNEL).is_err());
    assert_eq!(armed.allocations(), 1);
}
