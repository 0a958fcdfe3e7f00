// SPDX-License-Identifier: GPL-2.0

//! Time: [`Delta`], [`Instant`] on a [`ClockSource`], and [`delay::fsleep`].

use core::{
    marker::PhantomData,
    ops::{
        Add,
        AddAssign,
        Div,
        Mul,
        MulAssign,
        Sub,
        SubAssign, //
    },
};

/// The unit a [`Delta`] counts in, and the integer it is kept in: [`Nsec`] or [`Jiffy`],
/// as upstream's `kernel::time::TimeUnit` (sealed: no other unit exists).
pub trait TimeUnit: private::Sealed {
    /// The integer a span of this unit is kept in.
    type Repr: Copy + Clone + PartialEq + PartialOrd + Eq + Ord + core::fmt::Debug;
}

mod private {
    pub trait Sealed {}

    impl Sealed for super::Nsec {}
    impl Sealed for super::Jiffy {}
}

/// Nanoseconds, in an `i64`: the unit of a plain [`Delta`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Nsec {}

impl TimeUnit for Nsec {
    type Repr = i64;
}

/// Jiffies, in an `isize`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Jiffy {}

impl TimeUnit for Jiffy {
    type Repr = isize;
}

/// A span of time, of either sign, counted in unit `U` (nanoseconds unless named), as
/// upstream's `kernel::time::Delta<U>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Delta<U: TimeUnit = Nsec> {
    value: U::Repr,
}

impl Delta<Jiffy> {
    /// Creates a span of `jiffies` jiffies.
    pub const fn from_jiffies(jiffies: isize) -> Self {
        Self { value: jiffies }
    }

    /// Returns the span in jiffies.
    pub const fn as_jiffies(self) -> isize {
        self.value
    }
}

/// The kernel's unit of scheduler time (7.3's `Jiffies`): a jiffy is 1 ms here (`HZ` is
/// 1000), as [`crate::sync::CondVar`]'s timed waits count it.
pub type Jiffies = crate::ffi::c_ulong;

/// Milliseconds (7.3's `Msecs`).
pub type Msecs = crate::ffi::c_uint;

/// Converts milliseconds to jiffies, rounding up (7.3's `msecs_to_jiffies`; with `HZ` at
/// 1000, the same number).
#[inline]
pub fn msecs_to_jiffies(msecs: Msecs) -> Jiffies {
    // CAST: a `c_uint` always fits a `c_ulong`.
    msecs as Jiffies
}

/// The nanoseconds in a microsecond, a millisecond and a second.
const NSEC_PER_USEC: i64 = 1_000;
const NSEC_PER_MSEC: i64 = 1_000_000;
const NSEC_PER_SEC: i64 = 1_000_000_000;

impl Delta {
    /// The zero span.
    pub const ZERO: Self = Self { value: 0 };

    /// Creates a span of `nanos` nanoseconds.
    pub const fn from_nanos(nanos: i64) -> Self {
        Self { value: nanos }
    }

    /// Creates a span of `micros` microseconds, saturating.
    pub const fn from_micros(micros: i64) -> Self {
        Self::from_nanos(micros.saturating_mul(NSEC_PER_USEC))
    }

    /// Creates a span of `millis` milliseconds, saturating.
    pub const fn from_millis(millis: i64) -> Self {
        Self::from_nanos(millis.saturating_mul(NSEC_PER_MSEC))
    }

    /// Creates a span of `secs` seconds, saturating.
    pub const fn from_secs(secs: i64) -> Self {
        Self::from_nanos(secs.saturating_mul(NSEC_PER_SEC))
    }

    /// Returns whether the span is zero.
    pub const fn is_zero(self) -> bool {
        self.value == 0
    }

    /// Returns whether the span is negative.
    pub const fn is_negative(self) -> bool {
        self.value < 0
    }

    /// Returns the span in nanoseconds.
    pub const fn as_nanos(self) -> i64 {
        self.value
    }

    /// Returns the span in whole units of `per` nanoseconds, rounded up (towards zero for
    /// a negative span, which truncation already rounds up), without overflowing near
    /// `i64::MAX`.
    const fn ceil_div(self, per: i64) -> i64 {
        match self.value {
            n if n > 0 => (n - 1) / per + 1,
            n => n / per,
        }
    }

    /// Returns the span in microseconds, rounded up.
    pub const fn as_micros_ceil(self) -> i64 {
        self.ceil_div(NSEC_PER_USEC)
    }

    /// Returns the span in milliseconds, rounded towards zero.
    pub const fn as_millis(self) -> i64 {
        self.value / NSEC_PER_MSEC
    }

    /// Returns the span in milliseconds, rounded up.
    pub const fn as_millis_ceil(self) -> i64 {
        self.ceil_div(NSEC_PER_MSEC)
    }

    /// Returns what is left of the span, in nanoseconds, after taking out every whole
    /// `divisor` nanoseconds (the remainder has the span's sign).
    ///
    /// # Panics
    ///
    /// If `divisor` is zero.
    pub fn rem_nanos(self, divisor: i32) -> Self {
        Self::from_nanos(self.value % i64::from(divisor))
    }
}

impl Add for Delta {
    type Output = Self;

    fn add(self, rhs: Self) -> Self {
        Self::from_nanos(self.value + rhs.value)
    }
}

impl AddAssign for Delta {
    fn add_assign(&mut self, rhs: Self) {
        *self = *self + rhs;
    }
}

impl Sub for Delta {
    type Output = Self;

    fn sub(self, rhs: Self) -> Self {
        Self::from_nanos(self.value - rhs.value)
    }
}

impl SubAssign for Delta {
    fn sub_assign(&mut self, rhs: Self) {
        *self = *self - rhs;
    }
}

impl Mul<i64> for Delta {
    type Output = Self;

    fn mul(self, rhs: i64) -> Self {
        Self::from_nanos(self.value * rhs)
    }
}

impl MulAssign<i64> for Delta {
    fn mul_assign(&mut self, rhs: i64) {
        *self = *self * rhs;
    }
}

impl Div for Delta {
    /// How many times `rhs` fits in `self`, rounded towards zero.
    type Output = i64;

    fn div(self, rhs: Self) -> i64 {
        self.value / rhs.value
    }
}

/// A clock that [`Instant`]s are read from, as upstream's `kernel::time::ClockSource`.
///
/// The shim has one: [`Monotonic`], the clock of the environment (the host's monotonic
/// clock, the embedding's for a freestanding build, or virtual time under loom).
///
/// # Safety
///
/// `ktime_get` must return nanoseconds in `0..=i64::MAX` that never go backwards.
pub unsafe trait ClockSource {
    /// The clock's id as the kernel's C code numbers its clocks (`clockid_t`).
    const ID: i32;

    /// Reads the clock, in nanoseconds.
    fn ktime_get() -> i64;
}

/// The monotonic clock (`CLOCK_MONOTONIC`): time since some point in the past, never
/// set back.
pub struct Monotonic;

// SAFETY: The environment's clock is monotonic and counts nanoseconds from a point in
// the past; a 64-bit count of them stays below `i64::MAX` for 292 years.
unsafe impl ClockSource for Monotonic {
    const ID: i32 = 1;

    fn ktime_get() -> i64 {
        // CAST: below `i64::MAX` for 292 years of uptime (see the `SAFETY` above).
        crate::backend::env::ktime_get_ns() as i64
    }
}

/// A point in time on clock `C`, as upstream's `kernel::time::Instant<C>`.
///
/// # Invariants
///
/// `inner` is in `0..=i64::MAX`: a reading of `C`, or one moved by a [`Delta`] that
/// kept it there.
#[repr(transparent)]
#[derive(PartialEq, PartialOrd, Eq, Ord)]
pub struct Instant<C: ClockSource> {
    inner: i64,
    _c: PhantomData<C>,
}

impl<C: ClockSource> Clone for Instant<C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C: ClockSource> Copy for Instant<C> {}

impl<C: ClockSource> core::fmt::Debug for Instant<C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Instant({} ns)", self.inner)
    }
}

impl<C: ClockSource> Instant<C> {
    /// Reads clock `C`.
    pub fn now() -> Self {
        // INVARIANT: `ClockSource::ktime_get` returns a value in `0..=i64::MAX`.
        Self {
            inner: C::ktime_get(),
            _c: PhantomData,
        }
    }

    /// Returns the time passed since `self`.
    pub fn elapsed(&self) -> Delta {
        Self::now() - *self
    }
}

impl<C: ClockSource> Sub for Instant<C> {
    type Output = Delta;

    fn sub(self, earlier: Self) -> Delta {
        // Both are in `0..=i64::MAX` (the invariant), so the difference cannot overflow.
        Delta::from_nanos(self.inner - earlier.inner)
    }
}

impl<C: ClockSource> Add<Delta> for Instant<C> {
    type Output = Self;

    /// # Panics
    ///
    /// If the sum leaves `0..=i64::MAX` (with overflow checks, as upstream).
    fn add(self, delta: Delta) -> Self {
        let inner = self.inner + delta.as_nanos();
        // INVARIANT: checked, as upstream does with overflow checks on.
        debug_assert!(inner >= 0);
        Self {
            inner,
            _c: PhantomData,
        }
    }
}

impl<C: ClockSource> Sub<Delta> for Instant<C> {
    type Output = Self;

    /// # Panics
    ///
    /// If the difference leaves `0..=i64::MAX` (with overflow checks, as upstream).
    fn sub(self, delta: Delta) -> Self {
        let inner = self.inner - delta.as_nanos();
        // INVARIANT: checked, as upstream does with overflow checks on.
        debug_assert!(inner >= 0);
        Self {
            inner,
            _c: PhantomData,
        }
    }
}

/// Delays and sleeping.
pub mod delay {
    use super::Delta;

    /// Sleeps for at least `delta`, choosing between busy-waiting and sleeping by its
    /// length as the kernel's `fsleep` does (spins below 10 µs).
    pub fn fsleep(delta: Delta) {
        if delta.is_negative() || delta.is_zero() {
            return;
        }
        // CAST: checked non-negative above.
        crate::backend::env::fsleep_ns(delta.as_nanos() as u64);
    }
}
