// SPDX-License-Identifier: GPL-2.0

//! Time: [`Delta`], [`Instant`] and [`delay::fsleep`].

use core::ops::Sub;

/// A span of time in nanoseconds, as upstream's `kernel::time::Delta`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Delta {
    nanos: i64,
}

impl Delta {
    /// The zero span.
    pub const ZERO: Self = Self { nanos: 0 };

    /// Creates a span of `nanos` nanoseconds.
    pub const fn from_nanos(nanos: i64) -> Self {
        Self { nanos }
    }

    /// Creates a span of `micros` microseconds, saturating.
    pub const fn from_micros(micros: i64) -> Self {
        Self::from_nanos(micros.saturating_mul(1_000))
    }

    /// Creates a span of `millis` milliseconds, saturating.
    pub const fn from_millis(millis: i64) -> Self {
        Self::from_nanos(millis.saturating_mul(1_000_000))
    }

    /// Creates a span of `secs` seconds, saturating.
    pub const fn from_secs(secs: i64) -> Self {
        Self::from_nanos(secs.saturating_mul(1_000_000_000))
    }

    /// Returns whether the span is zero.
    pub const fn is_zero(self) -> bool {
        self.nanos == 0
    }

    /// Returns whether the span is negative.
    pub const fn is_negative(self) -> bool {
        self.nanos < 0
    }

    /// Returns the span in nanoseconds.
    pub const fn as_nanos(self) -> i64 {
        self.nanos
    }

    /// Returns the span in microseconds, rounded up.
    pub const fn as_micros_ceil(self) -> i64 {
        self.nanos.saturating_add(999) / 1_000
    }

    /// Returns the span in milliseconds, rounded down.
    pub const fn as_millis(self) -> i64 {
        self.nanos / 1_000_000
    }
}

/// A point on the monotonic clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Instant {
    nanos: u64,
}

impl Instant {
    /// Reads the monotonic clock.
    pub fn now() -> Self {
        Self {
            nanos: crate::env::ktime_get_ns(),
        }
    }

    /// Returns the time passed since `self`.
    pub fn elapsed(&self) -> Delta {
        Self::now() - *self
    }
}

impl Sub for Instant {
    type Output = Delta;

    fn sub(self, earlier: Self) -> Delta {
        // CAST: a monotonic clock difference fits in `i64` nanoseconds (292 years).
        Delta::from_nanos(self.nanos.wrapping_sub(earlier.nanos) as i64)
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
        crate::env::fsleep_ns(delta.as_nanos() as u64);
    }
}
