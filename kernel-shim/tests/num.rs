// SPDX-License-Identifier: GPL-2.0

//! `kernel::num::Bounded`: its constructors, the widths it converts from and into, its
//! comparisons, operators and formatting.

use std::format;

use kernel::num::{
    Bounded,
    TryIntoBounded, //
};

#[test]
fn new_holds_the_constant() {
    assert_eq!(Bounded::<u8, 4>::new::<15>().get(), 15);
    assert_eq!(Bounded::<u64, 64>::new::<{ u64::MAX }>().get(), u64::MAX);
    assert_eq!(Bounded::<i32, 5>::new::<-16>().get(), -16);
    assert_eq!(Bounded::<i8, 1>::new::<-1>().get(), -1);
}

#[test]
fn new_is_const() {
    const V: Bounded<u16, 9> = Bounded::<u16, 9>::new::<0x1ff>();
    const RAW: u16 = V.get();
    assert_eq!(RAW, 0x1ff);
}

#[test]
fn try_new_takes_the_unsigned_range_and_nothing_above() {
    assert_eq!(Bounded::<u32, 10>::try_new(0).map(Bounded::get), Some(0));
    assert_eq!(
        Bounded::<u32, 10>::try_new(1023).map(Bounded::get),
        Some(1023)
    );
    assert_eq!(Bounded::<u32, 10>::try_new(1024), None);
    assert_eq!(Bounded::<u32, 10>::try_new(u32::MAX), None);
}

#[test]
fn try_new_takes_the_signed_range_and_nothing_beyond() {
    assert_eq!(Bounded::<i16, 4>::try_new(-8).map(Bounded::get), Some(-8));
    assert_eq!(Bounded::<i16, 4>::try_new(7).map(Bounded::get), Some(7));
    assert_eq!(Bounded::<i16, 4>::try_new(-9), None);
    assert_eq!(Bounded::<i16, 4>::try_new(8), None);
}

#[test]
fn try_new_at_the_full_width_takes_every_value() {
    assert!(Bounded::<u8, 8>::try_new(u8::MAX).is_some());
    assert!(Bounded::<i64, 64>::try_new(i64::MIN).is_some());
    assert!(Bounded::<i64, 64>::try_new(i64::MAX).is_some());
    assert!(Bounded::<usize, { usize::BITS }>::try_new(usize::MAX).is_some());
}

#[test]
fn from_expr_takes_a_value_that_fits() {
    let word = 0xdead_beef_u32;
    assert_eq!(Bounded::<u32, 4>::from_expr(word & 0xf).get(), 0xf);
    assert_eq!(Bounded::<u32, 16>::from_expr(word >> 16).get(), 0xdead);
}

#[test]
#[should_panic(expected = "wider than its bits")]
fn from_expr_panics_on_a_value_that_does_not_fit() {
    let word = std::hint::black_box(0x10_u32);
    let _ = Bounded::<u32, 4>::from_expr(word);
}

#[test]
fn extend_keeps_the_value_in_more_bits() {
    let v = Bounded::<u16, 3>::new::<5>();
    let w: Bounded<u16, 16> = v.extend();
    assert_eq!(w.get(), 5);
    assert_eq!(Bounded::<i8, 2>::new::<-2>().extend::<8>().get(), -2);
}

#[test]
fn try_shrink_refuses_a_value_wider_than_the_new_bits() {
    let v = Bounded::<u32, 20>::new::<0x3ff>();
    assert_eq!(v.try_shrink::<10>().map(Bounded::get), Some(0x3ff));
    assert_eq!(v.try_shrink::<9>(), None);
    assert_eq!(
        Bounded::<i32, 8>::new::<-5>()
            .try_shrink::<4>()
            .map(Bounded::get),
        Some(-5)
    );
    assert_eq!(Bounded::<i32, 8>::new::<-9>().try_shrink::<4>(), None);
}

#[test]
fn cast_changes_the_backing_type_and_keeps_the_value() {
    let v: Bounded<u8, 8> = Bounded::<u64, 8>::new::<0xff>().cast();
    assert_eq!(v.get(), 0xff);
    let w: Bounded<i64, 8> = Bounded::<i16, 8>::new::<-128>().cast();
    assert_eq!(w.get(), -128);
    let x: Bounded<u128, 32> = Bounded::<u32, 32>::new::<{ u32::MAX }>().cast();
    assert_eq!(x.get(), u128::from(u32::MAX));
}

#[test]
fn shifts_move_the_value_and_the_width() {
    let v = Bounded::<u32, 16>::new::<0xab00>();
    let right: Bounded<u32, 8> = v.shr::<8, 8>();
    assert_eq!(right.get(), 0xab);
    let left: Bounded<u32, 24> = right.shl::<16, 24>();
    assert_eq!(left.get(), 0xab_0000);
    assert_eq!(Bounded::<i32, 8>::new::<-128>().shr::<4, 4>().get(), -8);
}

#[test]
fn shr_exact_refuses_to_lose_a_set_bit() {
    let v = Bounded::<u16, 16>::new::<0xab00>();
    assert_eq!(v.shr_exact::<8, 8>().map(Bounded::get), Some(0xab));
    assert_eq!(v.shr_exact::<9, 8>(), None);
}

#[test]
fn deref_reads_the_value() {
    let v = Bounded::<u32, 12>::new::<0x800>();
    assert_eq!(*v, 0x800);
    assert_eq!(v.count_ones(), 1);
}

#[test]
fn default_is_zero() {
    assert_eq!(Bounded::<u16, 3>::default().get(), 0);
    assert_eq!(Bounded::<i8, 1>::default().get(), 0);
}

#[test]
fn compares_with_a_bounded_of_another_width() {
    let small = Bounded::<u32, 4>::new::<9>();
    let large = Bounded::<u32, 20>::new::<9>();
    assert!(small == large);
    assert!(small < Bounded::<u32, 8>::new::<10>());
    assert!(large > Bounded::<u32, 2>::new::<3>());
    assert_eq!(
        small.cmp(&Bounded::<u32, 4>::new::<3>()),
        core::cmp::Ordering::Greater
    );
}

#[test]
fn compares_with_the_backing_type() {
    let v = Bounded::<i32, 6>::new::<-20>();
    assert!(v == -20);
    assert!(v != 20);
    assert!(v < -19);
    assert!(v >= -32);
}

#[test]
fn operators_give_the_backing_type() {
    let a = Bounded::<u32, 8>::new::<200>();
    let b = Bounded::<u32, 4>::new::<7>();
    let sum: u32 = a + b;
    assert_eq!(sum, 207);
    assert_eq!(a - b, 193);
    assert_eq!(a * b, 1400);
    assert_eq!(a / b, 28);
    assert_eq!(a % b, 4);
    assert_eq!(a & b, 0);
    assert_eq!(a | b, 207);
    assert_eq!(a ^ 0xff, 55);
    assert_eq!(a + 100, 300);
    assert_eq!(!b, !7u32);
    assert_eq!(-Bounded::<i8, 4>::new::<-8>(), 8);
}

/// Checks that `$prim` converts into `Bounded<$backing, N>` for each `N`, keeping its
/// largest value.
macro_rules! assert_from_primitive {
    ($prim:ty => $backing:ty: $($n:literal)*) => {$(
        assert_eq!(
            Bounded::<$backing, $n>::from(<$prim>::MAX).get(),
            <$backing>::from(<$prim>::MAX),
            ::core::concat!(::core::stringify!($prim), " into ", $n, " bits"),
        );
    )*};
}

#[test]
fn a_primitive_converts_into_every_width_with_room_for_it() {
    assert_from_primitive!(u8 => u8: 8);
    assert_from_primitive!(u8 => u64: 8 9 15 16 17 31 32 33 63 64);
    assert_from_primitive!(u16 => u16: 16);
    assert_from_primitive!(u16 => u64: 16 17 31 32 33 63 64);
    assert_from_primitive!(u32 => u32: 32);
    assert_from_primitive!(u32 => u64: 32 33 63 64);
    assert_from_primitive!(u64 => u64: 64);
    assert_from_primitive!(i8 => i16: 8 9 16);
    assert_from_primitive!(i32 => i64: 32 64);
    assert_eq!(Bounded::<i8, 8>::from(i8::MIN).get(), i8::MIN);
    assert_eq!(
        Bounded::<usize, { usize::BITS }>::from(usize::MAX).get(),
        usize::MAX
    );
}

/// Checks that the largest value of `Bounded<$backing, N>` converts into `$prim` for each
/// `N`.
macro_rules! assert_into_primitive {
    ($backing:ty => $prim:ty: $($n:literal)*) => {$(
        let max = <$backing>::MAX >> (<$backing>::BITS - $n);
        assert_eq!(
            u128::try_from(<$prim>::from(Bounded::<$backing, $n>::try_new(max).unwrap())).ok(),
            u128::try_from(max).ok(),
            ::core::concat!($n, " bits into ", ::core::stringify!($prim)),
        );
    )*};
}

#[test]
fn every_width_converts_into_a_primitive_that_holds_it() {
    assert_into_primitive!(u64 => u8: 1 7 8);
    assert_into_primitive!(u64 => u16: 1 8 9 15 16);
    assert_into_primitive!(u64 => u32: 1 16 17 31 32);
    assert_into_primitive!(u64 => u64: 1 32 33 63 64);
    assert_into_primitive!(u8 => u64: 1 8);
    assert_into_primitive!(u64 => usize: 1 32);
    assert_eq!(i8::from(Bounded::<i32, 8>::new::<-128>()), -128);
    assert_eq!(i16::from(Bounded::<i64, 9>::new::<-256>()), -256);
}

#[test]
fn bool_converts_into_any_unsigned_width() {
    assert_eq!(Bounded::<u8, 1>::from(true).get(), 1);
    assert_eq!(Bounded::<u32, 7>::from(true).get(), 1);
    assert_eq!(Bounded::<u64, 64>::from(false).get(), 0);
}

#[test]
fn one_unsigned_bit_converts_into_bool() {
    assert!(Bounded::<u32, 1>::new::<1>().into_bool());
    assert!(!Bounded::<u32, 1>::new::<0>().into_bool());
    assert!(bool::from(Bounded::<u8, 1>::from(true)));
}

#[test]
fn try_into_bounded_takes_any_integer_whose_value_fits() {
    let v: Option<Bounded<u8, 6>> = 63u128.try_into_bounded();
    assert_eq!(v.map(Bounded::get), Some(63));
    let v: Option<Bounded<u8, 6>> = 64u16.try_into_bounded();
    assert_eq!(v, None);
    let v: Option<Bounded<i32, 4>> = (-8i64).try_into_bounded();
    assert_eq!(v.map(Bounded::get), Some(-8));
    let v: Option<Bounded<u32, 31>> = (-1i8).try_into_bounded();
    assert_eq!(v, None);
}

#[test]
fn formats_as_its_value() {
    let v = Bounded::<u32, 12>::new::<0xabc>();
    assert_eq!(format!("{v}"), "2748");
    assert_eq!(format!("{v:#x}"), "0xabc");
    assert_eq!(format!("{v:X}"), "ABC");
    assert_eq!(format!("{v:o}"), "5274");
    assert_eq!(format!("{:b}", Bounded::<u8, 3>::new::<5>()), "101");
    assert_eq!(format!("{:e}", Bounded::<u16, 12>::new::<1500>()), "1.5e3");
    assert_eq!(format!("{v:?}"), "Bounded(2748)");
}
