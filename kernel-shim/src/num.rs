// SPDX-License-Identifier: GPL-2.0

//! Integers, as Linux 7.3's `kernel::num`: the [`Integer`] trait that the primitive
//! integers implement, and [`Bounded`], an integer known to need no more than a given
//! number of bits (what [`register!`](crate::register!) types its fields as).
//!
//! 7.3's `num::casts` is not here. The shim's alone: a kernel build uses 7.3's own
//! `kernel::num`.

use core::ops;

pub mod bounded;

pub use bounded::*;

/// The [`Integer::Signedness`] of the unsigned integers.
pub enum Unsigned {}

/// The [`Integer::Signedness`] of the signed integers.
pub enum Signed {}

mod sealed {
    /// Keeps [`super::Integer`] to the primitive integers; its methods are what
    /// [`super::Bounded`] needs of each of them.
    pub trait Sealed: Copy {
        /// Returns `self` sign-extended (signed types) or zero-extended (unsigned ones)
        /// to 128 bits.
        #[doc(hidden)]
        fn widen(self) -> u128;

        /// Returns the low `Self::BITS` bits of `wide`: the inverse of
        /// [`Sealed::widen`] for every value `widen` returns.
        #[doc(hidden)]
        fn narrow(wide: u128) -> Self;

        /// Returns whether `self` is representable in `bits` bits of its signedness
        /// (two's complement for the signed types). `bits` is in `1..=Self::BITS`.
        #[doc(hidden)]
        fn fits_in(self, bits: u32) -> bool;
    }
}

/// A primitive integer: `u8` to `u128`, `usize`, `i8` to `i128`, `isize` (sealed).
///
/// It has the arithmetic, bit and shift operators of every integer, so generic code over
/// it can compute with them.
pub trait Integer:
    sealed::Sealed
    + Sized
    + Copy
    + Clone
    + PartialEq
    + Eq
    + PartialOrd
    + Ord
    + ops::Add<Output = Self>
    + ops::AddAssign
    + ops::Sub<Output = Self>
    + ops::SubAssign
    + ops::Mul<Output = Self>
    + ops::MulAssign
    + ops::Div<Output = Self>
    + ops::DivAssign
    + ops::Rem<Output = Self>
    + ops::RemAssign
    + ops::BitAnd<Output = Self>
    + ops::BitAndAssign
    + ops::BitOr<Output = Self>
    + ops::BitOrAssign
    + ops::BitXor<Output = Self>
    + ops::BitXorAssign
    + ops::Shl<u32, Output = Self>
    + ops::ShlAssign<u32>
    + ops::Shr<u32, Output = Self>
    + ops::ShrAssign<u32>
    + ops::Not<Output = Self>
{
    /// [`Signed`] or [`Unsigned`].
    type Signedness;

    /// The number of bits of the type, as its inherent `BITS`.
    const BITS: u32;
}

/// Makes each `$int` an [`Integer`] of signedness `$signedness`.
macro_rules! integers {
    ($($int:ty: $signedness:ty),* $(,)?) => {$(
        impl sealed::Sealed for $int {
            #[inline(always)]
            fn widen(self) -> u128 {
                // CAST: a signed value goes through `i128`, so it is sign-extended; an
                // unsigned one is zero-extended. Nothing is lost either way.
                self as i128 as u128
            }

            #[inline(always)]
            fn narrow(wide: u128) -> Self {
                // CAST: keeps the low bits, which is what `widen` put there.
                wide as Self
            }

            #[inline(always)]
            fn fits_in(self, bits: u32) -> bool {
                // The smallest and largest values of `bits` bits are the type's own
                // shifted right by the bits not used (an arithmetic shift for the signed
                // types, which keeps the sign).
                let unused = <$int>::BITS - bits;
                <$int>::MIN >> unused <= self && self <= <$int>::MAX >> unused
            }
        }

        impl Integer for $int {
            type Signedness = $signedness;

            const BITS: u32 = <$int>::BITS;
        }
    )*};
}

integers! {
    u8: Unsigned,
    u16: Unsigned,
    u32: Unsigned,
    u64: Unsigned,
    u128: Unsigned,
    usize: Unsigned,
    i8: Signed,
    i16: Signed,
    i32: Signed,
    i64: Signed,
    i128: Signed,
    isize: Signed,
}
