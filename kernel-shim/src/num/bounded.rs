// SPDX-License-Identifier: GPL-2.0

//! [`Bounded`]: an integer whose value needs no more than a given number of its bits, as
//! Linux 7.3's `kernel::num::bounded`.
//!
//! # Against 7.3
//!
//! The names, signatures and conversions are 7.3's. What 7.3 proves at build time with
//! `build_assert!` (the argument of [`Bounded::from_expr`]) is checked when the call runs
//! here, where a value that does not fit panics. Every check that 7.3 makes with a
//! `const` assertion (the constant of [`Bounded::new`], the widths of
//! [`Bounded::extend`], [`Bounded::cast`], [`Bounded::shr`], [`Bounded::shl`], a width
//! of 0 or beyond the backing type) fails the build here too. [`Deref`] reads the value
//! as [`Bounded::get`] does: no hint tells the optimiser its range.

use core::{
    cmp,
    fmt,
    ops::{
        self,
        Deref, //
    }, //
};

use super::{
    Integer,
    Unsigned, //
};

/// An integer of type `T` whose value is representable in its `N` low bits: in `0` to
/// `2^N - 1` for an unsigned `T`, in `-2^(N-1)` to `2^(N-1) - 1` (two's complement) for
/// a signed one.
///
/// The type carries the width, so a value too wide for where it goes (a bit field of a
/// register, say) is refused when the code builds or, for a value known only when it
/// runs, by a fallible conversion: never cut silently.
///
/// Made from:
///
/// - a constant, checked when the code builds: [`Bounded::new`];
/// - any value, checked when the code runs: [`Bounded::try_new`], and
///   [`TryIntoBounded::try_into_bounded`] from any integer type;
/// - a primitive whose every value fits, through [`From`]: `u8` into `N >= 8` bits,
///   `u16` into `N >= 16`, `u32` into `N >= 32`, `u64` into 64 (a `usize` or `isize` as
///   the integer of its width), each into a `T` of its signedness that converts from it;
///   and `bool` into any unsigned `Bounded`;
/// - another `Bounded`: [`Bounded::extend`] to more bits, [`Bounded::try_shrink`] to
///   fewer, [`Bounded::cast`] to another backing type.
///
/// Read with [`Bounded::get`] or through [`Deref`], converted through [`From`] into a
/// primitive of its signedness wide enough for `N` bits (whatever `T` is), and, with one
/// unsigned bit, into a `bool` ([`Bounded::into_bool`]). It compares with any `Bounded`
/// and with a `T`, and the arithmetic and bit operators combine it with either, giving a
/// plain `T`.
///
/// # Invariants
///
/// - `0 < N <= T::BITS`.
/// - The value is representable in `N` bits of `T`'s signedness.
///
/// # Examples
///
/// ```
/// use kernel::num::Bounded;
///
/// // A nibble in a byte; 15 is checked against 4 bits when the code builds.
/// let nibble = Bounded::<u8, 4>::new::<15>();
/// assert_eq!(nibble.get(), 15);
/// assert!(nibble == 15u8);
///
/// // Four signed bits hold -8 to 7.
/// assert_eq!(Bounded::<i16, 4>::new::<-8>().get(), -8);
///
/// // A value known only when the code runs.
/// assert!(Bounded::<u32, 4>::try_new(16).is_none());
///
/// // A `u8` always fits 8 bits or more, whatever its value, and a 6-bit value a `u8`.
/// let wide = Bounded::<u64, 12>::from(0xabu8);
/// assert_eq!(u16::from(wide), 0xab);
/// assert_eq!(u8::from(Bounded::<u32, 6>::new::<63>()), 63);
///
/// // One unsigned bit is a `bool`.
/// assert!(Bounded::<u32, 1>::from(true).into_bool());
/// ```
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Hash)]
pub struct Bounded<T: Integer, const N: u32>(T);

impl<T: Integer, const N: u32> Bounded<T, N> {
    /// Wraps `value`, which the caller knows to fit `N` bits. Every `Bounded` is made
    /// here; a width the type cannot have fails the build.
    #[inline(always)]
    const fn wrap(value: T) -> Self {
        const {
            assert!(
                N > 0 && N <= T::BITS,
                "a `Bounded` has at least one bit, and no more than its backing type"
            )
        };
        // INVARIANT: `N` was just checked; the callers pass a value that fits `N` bits.
        Self(value)
    }

    /// Returns `value` as a `Bounded`, or `None` if it is not representable in `N` bits.
    ///
    /// ```
    /// use kernel::num::Bounded;
    ///
    /// assert_eq!(Bounded::<u16, 9>::try_new(511).map(Bounded::get), Some(511));
    /// assert_eq!(Bounded::<u16, 9>::try_new(512), None);
    /// assert_eq!(Bounded::<i8, 3>::try_new(-4).map(Bounded::get), Some(-4));
    /// assert_eq!(Bounded::<i8, 3>::try_new(4), None);
    /// ```
    #[inline(always)]
    pub fn try_new(value: T) -> Option<Self> {
        value.fits_in(N).then(|| Self::wrap(value))
    }

    /// Returns `expr` as a `Bounded`: for an expression whose range is plain from its
    /// form, such as a mask (`x & 0xf`) or a shift, where a constant cannot be used.
    /// Prefer [`Bounded::new`] for constants and [`Bounded::try_new`] for anything that
    /// may not fit.
    ///
    /// ```
    /// use kernel::num::Bounded;
    ///
    /// let word: u32 = 0x1234_5678;
    /// assert_eq!(Bounded::<u32, 8>::from_expr(word >> 24).get(), 0x12);
    /// assert_eq!(Bounded::<u32, 4>::from_expr(word & 0xf).get(), 8);
    /// ```
    ///
    /// # Panics
    ///
    /// If `expr` is not representable in `N` bits, in every build. Linux 7.3 fails the
    /// build unless the compiler proves that it is.
    #[track_caller]
    #[inline(always)]
    pub fn from_expr(expr: T) -> Self {
        // PANIC: a driver bug, as a failed build would be in 7.3.
        assert!(
            expr.fits_in(N),
            "the value of `Bounded::from_expr` is wider than its bits"
        );
        Self::wrap(expr)
    }

    /// Returns the value.
    #[inline(always)]
    pub const fn get(self) -> T {
        self.0
    }

    /// Returns the value as a `Bounded` of `M >= N` bits; an `M` below `N` fails the
    /// build.
    ///
    /// ```
    /// use kernel::num::Bounded;
    ///
    /// let v = Bounded::<u32, 5>::new::<31>();
    /// let w: Bounded<u32, 20> = v.extend();
    /// assert_eq!(w, v);
    /// ```
    #[inline(always)]
    pub const fn extend<const M: u32>(self) -> Bounded<T, M> {
        const { assert!(M >= N, "`Bounded::extend` cannot take bits away") };
        // What fits `N` bits fits `M`.
        Bounded::wrap(self.0)
    }

    /// Returns the value as a `Bounded` of `M` bits, or `None` if it is not
    /// representable in `M` bits.
    ///
    /// ```
    /// use kernel::num::Bounded;
    ///
    /// let v = Bounded::<u64, 40>::new::<0x7f>();
    /// assert_eq!(v.try_shrink::<7>().map(Bounded::get), Some(0x7f));
    /// assert_eq!(v.try_shrink::<6>(), None);
    /// ```
    #[inline(always)]
    pub fn try_shrink<const M: u32>(self) -> Option<Bounded<T, M>> {
        Bounded::try_new(self.0)
    }

    /// Returns the value as a `Bounded` of the same width backed by `U`, of `T`'s
    /// signedness; a `U` narrower than `N` bits fails the build.
    ///
    /// ```
    /// use kernel::num::Bounded;
    ///
    /// let v = Bounded::<u64, 16>::new::<0xbeef>();
    /// let narrow: Bounded<u16, 16> = v.cast();
    /// assert_eq!(narrow.get(), 0xbeef_u16);
    /// ```
    #[inline(always)]
    pub fn cast<U>(self) -> Bounded<U, N>
    where
        U: TryFrom<T> + Integer<Signedness = T::Signedness>,
    {
        // `wrap` checks `N <= U::BITS`; the value fits `N` bits of the same signedness,
        // hence `U`, so the low bits of its widened form are the value.
        Bounded::wrap(U::narrow(self.0.widen()))
    }

    /// Returns the value shifted right by `SHIFT` bits, as a `Bounded` of `RES` bits,
    /// `RES >= N - SHIFT`; a `SHIFT` of `T::BITS` or more, or a smaller `RES`, fails the
    /// build.
    ///
    /// ```
    /// use kernel::num::Bounded;
    ///
    /// let v = Bounded::<u32, 12>::new::<0xab0>();
    /// assert_eq!(v.shr::<4, 8>().get(), 0xab);
    /// ```
    #[inline(always)]
    pub fn shr<const SHIFT: u32, const RES: u32>(self) -> Bounded<T, RES> {
        const {
            assert!(
                SHIFT < T::BITS && RES + SHIFT >= N,
                "`Bounded::shr` shifts by less than its type's bits, into enough bits"
            )
        };
        // A value of `N` bits shifted right by `SHIFT` needs `N - SHIFT` bits.
        Bounded::wrap(self.0 >> SHIFT)
    }

    /// Returns the value shifted right by `SHIFT` bits, as [`Bounded::shr`] does, or
    /// `None` if that loses a set bit.
    ///
    /// ```
    /// use kernel::num::Bounded;
    ///
    /// assert_eq!(
    ///     Bounded::<u32, 12>::new::<0xab0>().shr_exact::<4, 8>().map(Bounded::get),
    ///     Some(0xab)
    /// );
    /// assert!(Bounded::<u32, 12>::new::<0xab1>().shr_exact::<4, 8>().is_none());
    /// ```
    #[inline]
    pub fn shr_exact<const SHIFT: u32, const RES: u32>(self) -> Option<Bounded<T, RES>> {
        let shifted = self.shr::<SHIFT, RES>();
        (shifted.0 << SHIFT == self.0).then_some(shifted)
    }

    /// Returns the value shifted left by `SHIFT` bits, as a `Bounded` of `RES` bits,
    /// `RES >= N + SHIFT`; a smaller `RES` fails the build.
    ///
    /// ```
    /// use kernel::num::Bounded;
    ///
    /// let v = Bounded::<u16, 4>::new::<0xc>();
    /// assert_eq!(v.shl::<8, 12>().get(), 0xc00);
    /// ```
    #[inline(always)]
    pub fn shl<const SHIFT: u32, const RES: u32>(self) -> Bounded<T, RES> {
        const {
            assert!(
                RES >= N + SHIFT,
                "`Bounded::shl` shifts into enough bits for the result"
            )
        };
        // `N + SHIFT <= RES <= T::BITS` (`wrap`), so no bit is shifted out, and the
        // result needs `N + SHIFT` bits.
        Bounded::wrap(self.0 << SHIFT)
    }
}

/// Implements [`Bounded::new`] for each backing type: a `const` parameter cannot have a
/// generic type.
macro_rules! const_new {
    ($($int:ty)*) => {$(
        impl<const N: u32> Bounded<$int, N> {
            /// Returns the constant `VALUE` as a `Bounded`; a `VALUE` that is not
            /// representable in `N` bits fails the build. The way to make a `Bounded`
            /// from a constant.
            ///
            /// ```
            /// use kernel::num::Bounded;
            ///
            #[doc = ::core::concat!(
                "assert_eq!(Bounded::<", ::core::stringify!($int), ", 3>::new::<3>().get(), 3);"
            )]
            /// ```
            #[inline(always)]
            pub const fn new<const VALUE: $int>() -> Self {
                const {
                    // The bounds of `N` bits are the type's own, shifted right by the bits
                    // not used; `wrap` reports a bad `N`, which the first two tests keep
                    // from overflowing the shift.
                    assert!(
                        N == 0
                            || N > <$int>::BITS
                            || (<$int>::MIN >> (<$int>::BITS - N) <= VALUE
                                && VALUE <= <$int>::MAX >> (<$int>::BITS - N)),
                        "the constant of `Bounded::new` is wider than its bits"
                    )
                };
                Self::wrap(VALUE)
            }
        }
    )*};
}

const_new!(u8 u16 u32 u64 usize i8 i16 i32 i64 isize);

impl<T: Integer, const N: u32> Default for Bounded<T, N> {
    /// Zero.
    #[inline(always)]
    fn default() -> Self {
        // Zero fits any number of bits.
        Self::wrap(T::narrow(0))
    }
}

impl<T: Integer, const N: u32> Deref for Bounded<T, N> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        &self.0
    }
}

/// A value of any type turned into a [`Bounded`] if it fits: from any integer, say, into
/// a `Bounded` of any width, where [`From`] takes only the types whose every value fits.
///
/// ```
/// use kernel::num::{
///     Bounded,
///     TryIntoBounded, //
/// };
///
/// let v: Option<Bounded<u8, 5>> = 31u64.try_into_bounded();
/// assert_eq!(v.map(Bounded::get), Some(31));
/// let v: Option<Bounded<u8, 5>> = 32u64.try_into_bounded();
/// assert_eq!(v, None);
/// // From another signedness, if the value is one of the target's.
/// let v: Option<Bounded<u16, 12>> = 7i32.try_into_bounded();
/// assert_eq!(v.map(Bounded::get), Some(7));
/// let v: Option<Bounded<u16, 12>> = (-1i32).try_into_bounded();
/// assert_eq!(v, None);
/// ```
pub trait TryIntoBounded<T: Integer, const N: u32> {
    /// Returns `self` as a `Bounded`, or `None` if it is not representable as a `T` in
    /// `N` bits.
    fn try_into_bounded(self) -> Option<Bounded<T, N>>;
}

impl<T, U, const N: u32> TryIntoBounded<T, N> for U
where
    T: Integer,
    U: TryInto<T>,
{
    #[inline(always)]
    fn try_into_bounded(self) -> Option<Bounded<T, N>> {
        Bounded::try_new(self.try_into().ok()?)
    }
}

impl<T, U, const N: u32, const M: u32> PartialEq<Bounded<U, M>> for Bounded<T, N>
where
    T: Integer + PartialEq<U>,
    U: Integer,
{
    #[inline(always)]
    fn eq(&self, other: &Bounded<U, M>) -> bool {
        self.0 == other.0
    }
}

impl<T: Integer, const N: u32> Eq for Bounded<T, N> {}

impl<T, U, const N: u32, const M: u32> PartialOrd<Bounded<U, M>> for Bounded<T, N>
where
    T: Integer + PartialOrd<U>,
    U: Integer,
{
    #[inline(always)]
    fn partial_cmp(&self, other: &Bounded<U, M>) -> Option<cmp::Ordering> {
        self.0.partial_cmp(&other.0)
    }
}

impl<T: Integer, const N: u32> Ord for Bounded<T, N> {
    #[inline(always)]
    fn cmp(&self, other: &Self) -> cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

impl<T: Integer, const N: u32> PartialEq<T> for Bounded<T, N> {
    #[inline(always)]
    fn eq(&self, other: &T) -> bool {
        self.0 == *other
    }
}

impl<T: Integer, const N: u32> PartialOrd<T> for Bounded<T, N> {
    #[inline(always)]
    fn partial_cmp(&self, other: &T) -> Option<cmp::Ordering> {
        self.0.partial_cmp(other)
    }
}

/// Implements each binary operator on a [`Bounded`], with a `Bounded` of the same backing
/// type (of any width) or a bare one on the right, giving a bare value.
macro_rules! binary_operators {
    ($($trait:ident :: $method:ident),* $(,)?) => {$(
        impl<T: Integer, const N: u32, const M: u32> ops::$trait<Bounded<T, M>> for Bounded<T, N> {
            type Output = T;

            #[inline(always)]
            fn $method(self, rhs: Bounded<T, M>) -> T {
                ops::$trait::$method(self.0, rhs.0)
            }
        }

        impl<T: Integer, const N: u32> ops::$trait<T> for Bounded<T, N> {
            type Output = T;

            #[inline(always)]
            fn $method(self, rhs: T) -> T {
                ops::$trait::$method(self.0, rhs)
            }
        }
    )*};
}

binary_operators! {
    Add::add,
    Sub::sub,
    Mul::mul,
    Div::div,
    Rem::rem,
    BitAnd::bitand,
    BitOr::bitor,
    BitXor::bitxor,
}

impl<T: Integer, const N: u32> ops::Not for Bounded<T, N> {
    type Output = T;

    #[inline(always)]
    fn not(self) -> T {
        !self.0
    }
}

impl<T, const N: u32> ops::Neg for Bounded<T, N>
where
    T: Integer + ops::Neg<Output = T>,
{
    type Output = T;

    #[inline(always)]
    fn neg(self) -> T {
        -self.0
    }
}

/// Formats a [`Bounded`] as its value, for each formatting trait.
macro_rules! formats {
    ($($trait:ident),* $(,)?) => {$(
        impl<T: Integer + fmt::$trait, const N: u32> fmt::$trait for Bounded<T, N> {
            #[inline]
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::$trait::fmt(&self.0, f)
            }
        }
    )*};
}

formats!(Display, Binary, Octal, LowerHex, UpperHex, LowerExp, UpperExp);

/// `Bounded<_, N>` holds every value of a primitive of `BITS` bits and its signedness:
/// `N >= BITS`. The bound of the [`From`] conversions from the primitives.
trait RoomFor<const BITS: u32> {}

/// Every value of a `Bounded<_, N>` is a value of the primitive of `BITS` bits and its
/// signedness: `N <= BITS`. The bound of the [`From`] conversions into the primitives.
trait FitsIn<const BITS: u32> {}

/// Implements [`RoomFor`] and [`FitsIn`] for every width.
///
/// Walks the widths upwards, carrying two sets of primitive widths: those whose values
/// the current width has room for, and those whose primitives it fits in. `+ B` (before
/// width `B`) adds `B` to the first set; `- B` (after width `B`) takes `B`, the smallest,
/// out of the second.
macro_rules! widths {
    ([$($room:literal)*] [$($fits:literal)*]) => {};
    ([$($room:literal)*] [$($fits:literal)*] + $bits:literal $($rest:tt)*) => {
        widths!([$($room)* $bits] [$($fits)*] $($rest)*);
    };
    ([$($room:literal)*] [$smallest:literal $($fits:literal)*] - $bits:literal $($rest:tt)*) => {
        widths!([$($room)*] [$($fits)*] $($rest)*);
    };
    ([$($room:literal)*] [$($fits:literal)*] $n:literal $($rest:tt)*) => {
        $(impl<T: Integer> RoomFor<$room> for Bounded<T, $n> {})*
        $(impl<T: Integer> FitsIn<$fits> for Bounded<T, $n> {})*
        widths!([$($room)*] [$($fits)*] $($rest)*);
    };
}

widths! {
    [] [8 16 32 64]
    1 2 3 4 5 6 7
    + 8 8 - 8
    9 10 11 12 13 14 15
    + 16 16 - 16
    17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    + 32 32 - 32
    33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48
    49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
    + 64 64 - 64
}

/// Implements [`From`] each primitive into the [`Bounded`]s of its signedness with room
/// for its every value, and from those that fit it into the primitive.
macro_rules! primitive_conversions {
    ($($int:ty)*) => {$(
        impl<T, const N: u32> From<$int> for Bounded<T, N>
        where
            T: Integer<Signedness = <$int as Integer>::Signedness> + From<$int>,
            Self: RoomFor<{ <$int>::BITS }>,
        {
            #[inline(always)]
            fn from(value: $int) -> Self {
                // `N` bits have room for any value of the type (`RoomFor`), and `T` is of
                // its signedness.
                Self::wrap(T::from(value))
            }
        }

        impl<T, const N: u32> From<Bounded<T, N>> for $int
        where
            T: Integer<Signedness = <$int as Integer>::Signedness>,
            $int: TryFrom<T>,
            Bounded<T, N>: FitsIn<{ <$int>::BITS }>,
        {
            #[inline(always)]
            fn from(value: Bounded<T, N>) -> Self {
                // The value fits `N` bits of the type's signedness, and `N` is no wider
                // than the type (`FitsIn`): the low bits of its widened form are it.
                <$int as super::sealed::Sealed>::narrow(value.0.widen())
            }
        }
    )*};
}

primitive_conversions!(u8 u16 u32 u64 usize i8 i16 i32 i64 isize);

impl<T, const N: u32> From<bool> for Bounded<T, N>
where
    T: Integer<Signedness = Unsigned> + From<bool>,
{
    /// `false` is 0 and `true` 1, which fit any unsigned `Bounded`.
    #[inline(always)]
    fn from(value: bool) -> Self {
        Self::wrap(T::from(value))
    }
}

impl<T: Integer<Signedness = Unsigned>> From<Bounded<T, 1>> for bool {
    /// 0 is `false`, 1 `true`.
    #[inline(always)]
    fn from(value: Bounded<T, 1>) -> Self {
        value.0.widen() != 0
    }
}

impl<T: Integer<Signedness = Unsigned>> Bounded<T, 1> {
    /// Returns the bit as a `bool`: `bool::from(self)`.
    ///
    /// ```
    /// use kernel::num::Bounded;
    ///
    /// assert!(Bounded::<u16, 1>::new::<1>().into_bool());
    /// assert!(!Bounded::<u16, 1>::new::<0>().into_bool());
    /// ```
    #[inline(always)]
    pub fn into_bool(self) -> bool {
        self.into()
    }
}
