// SPDX-License-Identifier: GPL-2.0

//! `kernel::alloc`: `Vec<T, A>` and `Box<T, A>` grow and allocate fallibly, and compare,
//! print and iterate as Linux 7.3's do.

use core::{
    mem::MaybeUninit,
    pin::Pin,
    ptr::NonNull,
    slice, //
};
use std::{
    format,
    rc::Rc, //
};

use kernel::{
    alloc::{
        flags::GFP_KERNEL,
        AllocError,
        KBox,
        KVBox,
        KVVec,
        KVec,
        VBox,
        VVec, //
    },
    error::{
        code::ENOMEM,
        Error, //
    },
};

/// A `usize::MAX`-element slice of a zero-sized type: it takes no memory.
fn max_len_unit_slice() -> &'static [()] {
    // SAFETY: `()` is zero-sized, so any length of it spans zero bytes, which a dangling,
    // aligned, non-null pointer is valid for; nothing writes through it.
    unsafe { slice::from_raw_parts(NonNull::<()>::dangling().as_ptr(), usize::MAX) }
}

#[test]
fn new_allocates_nothing() {
    let v = KVec::<u64>::new();
    assert_eq!(v.capacity(), 0);
    assert!(v.is_empty());
}

#[test]
fn with_capacity_makes_room_for_at_least_that_many() -> Result<(), AllocError> {
    let v = KVVec::<u32>::with_capacity(100, GFP_KERNEL)?;
    assert!(v.capacity() >= 100);
    assert_eq!(v.len(), 0);
    Ok(())
}

#[test]
fn push_appends_in_order() -> Result<(), AllocError> {
    let mut v = KVec::new();
    for i in 0..100u32 {
        v.push(i, GFP_KERNEL)?;
    }
    assert_eq!(v.len(), 100);
    assert!(v.iter().copied().eq(0..100));
    Ok(())
}

#[test]
fn reserve_beyond_isize_max_bytes_is_alloc_error_and_keeps_the_vector() -> Result<(), AllocError> {
    let mut v = KVec::new();
    v.push(7u8, GFP_KERNEL)?;
    let capacity = v.capacity();
    assert_eq!(v.reserve(usize::MAX, GFP_KERNEL), Err(AllocError));
    assert_eq!(v, [7]);
    assert_eq!(v.capacity(), capacity);
    Ok(())
}

#[test]
fn with_capacity_beyond_isize_max_bytes_is_alloc_error() {
    assert!(matches!(
        VVec::<u16>::with_capacity(usize::MAX / 2, GFP_KERNEL),
        Err(AllocError)
    ));
}

#[test]
fn resize_beyond_isize_max_bytes_is_alloc_error_and_keeps_the_vector() -> Result<(), AllocError> {
    let mut v = KVVec::new();
    v.resize(3, 1u8, GFP_KERNEL)?;
    assert_eq!(v.resize(usize::MAX, 0, GFP_KERNEL), Err(AllocError));
    assert_eq!(v, [1, 1, 1]);
    Ok(())
}

#[test]
fn extend_from_slice_past_usize_max_elements_is_alloc_error() -> Result<(), AllocError> {
    let mut v = KVec::new();
    v.push((), GFP_KERNEL)?;
    assert_eq!(
        v.extend_from_slice(max_len_unit_slice(), GFP_KERNEL),
        Err(AllocError)
    );
    assert_eq!(v.len(), 1);
    Ok(())
}

#[test]
fn push_onto_usize_max_elements_is_alloc_error_not_a_panic() -> Result<(), AllocError> {
    let mut v = KVec::new();
    // Zero-sized and `Copy`: the elements are counted, none is written.
    v.extend_from_slice(max_len_unit_slice(), GFP_KERNEL)?;
    assert_eq!(v.push((), GFP_KERNEL), Err(AllocError));
    assert_eq!(v.len(), usize::MAX);
    Ok(())
}

#[test]
fn resize_shrinks_or_fills_with_the_value() -> Result<(), AllocError> {
    let mut v = KVec::new();
    v.resize(4, 9u8, GFP_KERNEL)?;
    assert_eq!(v, [9, 9, 9, 9]);
    v.resize(1, 0, GFP_KERNEL)?;
    assert_eq!(v, [9]);
    Ok(())
}

#[test]
fn truncate_and_clear_keep_the_capacity() -> Result<(), AllocError> {
    let mut v = KVec::with_capacity(8, GFP_KERNEL)?;
    v.extend_from_slice(&[1u8, 2, 3], GFP_KERNEL)?;
    let capacity = v.capacity();
    v.truncate(5);
    assert_eq!(v, [1, 2, 3]);
    v.truncate(1);
    assert_eq!(v, [1]);
    v.clear();
    assert!(v.is_empty());
    assert_eq!(v.capacity(), capacity);
    Ok(())
}

#[test]
fn vectors_of_different_allocators_compare_by_elements() -> Result<(), AllocError> {
    let mut k = KVec::new();
    let mut kv = KVVec::new();
    k.extend_from_slice(&[1u8, 2], GFP_KERNEL)?;
    kv.extend_from_slice(&[1u8, 2], GFP_KERNEL)?;
    assert!(k == kv);
    kv.push(3, GFP_KERNEL)?;
    assert!(k != kv);
    Ok(())
}

#[test]
fn vector_compares_with_slices_and_arrays_both_ways() -> Result<(), AllocError> {
    let mut v = KVec::new();
    v.extend_from_slice(&[1u8, 2], GFP_KERNEL)?;
    let s: &[u8] = &[1, 2];
    // Spelled out, so that each comparison names the impl it exercises.
    assert!(<KVec<u8> as PartialEq<&[u8]>>::eq(&v, &s));
    assert!(<&[u8] as PartialEq<KVec<u8>>>::eq(&s, &v));
    assert!(<KVec<u8> as PartialEq<[u8]>>::eq(&v, s));
    assert!(<[u8] as PartialEq<KVec<u8>>>::eq(s, &v));
    assert!(<KVec<u8> as PartialEq<[u8; 2]>>::eq(&v, &[1, 2]));
    assert!(<KVec<u8> as PartialEq<&[u8; 2]>>::eq(&v, &&[1, 2]));
    assert!(v != [1, 2, 3]);
    Ok(())
}

#[test]
fn debug_prints_the_elements_as_a_slice() -> Result<(), AllocError> {
    let mut v = KVVec::new();
    v.extend_from_slice(&[1u8, 2], GFP_KERNEL)?;
    assert_eq!(format!("{v:?}"), "[1, 2]");
    Ok(())
}

#[test]
fn into_iter_moves_the_elements_out_in_order() -> Result<(), AllocError> {
    let mut v = KVec::new();
    v.extend_from_slice(&[1u8, 2, 3], GFP_KERNEL)?;
    let mut it = v.into_iter();
    assert_eq!(it.size_hint(), (3, Some(3)));
    assert_eq!(it.next(), Some(1));
    assert_eq!(it.next(), Some(2));
    assert_eq!(it.next(), Some(3));
    assert_eq!(it.next(), None);
    Ok(())
}

#[test]
fn into_iter_of_references_lends_the_elements() -> Result<(), AllocError> {
    let mut v = KVec::new();
    v.extend_from_slice(&[1u8, 2, 3], GFP_KERNEL)?;
    for x in &mut v {
        *x *= 2;
    }
    let mut sum = 0;
    for x in &v {
        sum += *x;
    }
    assert_eq!(sum, 12);
    Ok(())
}

#[test]
fn index_takes_positions_and_ranges() -> Result<(), AllocError> {
    let mut v = KVec::new();
    v.extend_from_slice(&[1u8, 2, 3], GFP_KERNEL)?;
    v[0] = 5;
    assert_eq!(v[0], 5);
    assert_eq!(&v[1..], &[2, 3]);
    Ok(())
}

#[test]
fn dropping_a_vector_drops_its_elements() -> Result<(), AllocError> {
    let value = Rc::new(());
    let mut v = KVec::new();
    v.push(Rc::clone(&value), GFP_KERNEL)?;
    v.push(Rc::clone(&value), GFP_KERNEL)?;
    assert_eq!(Rc::strong_count(&value), 3);
    drop(v);
    assert_eq!(Rc::strong_count(&value), 1);
    Ok(())
}

#[test]
fn alloc_error_is_enomem() {
    assert_eq!(Error::from(AllocError), ENOMEM);
}

#[test]
fn box_new_holds_the_value() -> Result<(), AllocError> {
    let mut b = KBox::new([1u32, 2], GFP_KERNEL)?;
    b[1] = 3;
    assert_eq!(*b, [1, 3]);
    Ok(())
}

#[test]
fn box_too_large_for_any_memory_is_alloc_error() {
    // One exbibyte: a valid type, beyond any host's memory.
    const HUGE: usize = 1 << 60;
    assert!(matches!(
        KVBox::<[u8; HUGE]>::new_uninit(GFP_KERNEL),
        Err(AllocError)
    ));
}

#[test]
fn box_of_a_zero_sized_value_allocates_nothing() -> Result<(), AllocError> {
    let b = KBox::new((), GFP_KERNEL)?;
    assert_eq!(*b, ());
    Ok(())
}

#[test]
fn each_box_alias_is_made_and_taken_as_its_own() -> Result<(), AllocError> {
    fn keep_k(b: KBox<u8>) -> u8 {
        *b
    }
    fn keep_v(b: VBox<u8>) -> u8 {
        *b
    }
    fn keep_kv(b: KVBox<u8>) -> u8 {
        *b
    }
    assert_eq!(keep_k(KBox::new(1, GFP_KERNEL)?), 1);
    assert_eq!(keep_v(VBox::new(2, GFP_KERNEL)?), 2);
    assert_eq!(keep_kv(KVBox::new(3, GFP_KERNEL)?), 3);
    Ok(())
}

#[test]
fn new_uninit_then_write_holds_the_value() -> Result<(), AllocError> {
    let b: KBox<MaybeUninit<u64>> = KBox::new_uninit(GFP_KERNEL)?;
    let b = b.write(42);
    assert_eq!(*b, 42);
    Ok(())
}

#[test]
fn into_raw_then_from_raw_gives_the_box_back() -> Result<(), AllocError> {
    let value = Rc::new(());
    let raw = KBox::into_raw(KBox::new(Rc::clone(&value), GFP_KERNEL)?);
    assert_eq!(Rc::strong_count(&value), 2);
    // SAFETY: `raw` comes from `KBox::into_raw` just above and nothing took it back.
    let b = unsafe { KBox::from_raw(raw) };
    assert!(Rc::ptr_eq(&b, &value));
    drop(b);
    assert_eq!(Rc::strong_count(&value), 1);
    Ok(())
}

#[test]
fn pin_keeps_the_value_where_it_was_allocated() -> Result<(), AllocError> {
    let pinned: Pin<KBox<u64>> = KBox::pin(5, GFP_KERNEL)?;
    let before: *const u64 = &*pinned;
    let moved = pinned;
    assert_eq!(&*moved as *const u64, before);
    assert_eq!(*moved, 5);
    Ok(())
}

#[test]
fn box_debug_and_display_print_the_value() -> Result<(), AllocError> {
    let b = KBox::new(17u8, GFP_KERNEL)?;
    // `{}` as in a kernel: through `fmt!`, for the kernel's `Display`.
    assert_eq!(kernel::macros::fmt!("{b:?} {b}").to_string(), "17 17");
    Ok(())
}
