// SPDX-License-Identifier: GPL-2.0

//! Named integer conversions, in place of bare `as`.
//!
//! An `as` silently drops bits if a type is later narrowed; each helper here builds only
//! where it keeps every value:
//!
//! - `<from>_as_<into>(value)`: a `const fn` per widening (`u32_as_usize`).
//! - [`FromSafeCast`]: the same outside `const`, for pairs whose losslessness depends on
//!   the pointer width (`u32` to `usize`, `usize` to `u64`).
//! - `<from>_into_<into>::<N>()`: a `const fn` per narrowing of a constant
//!   (`usize_into_u32`); the build fails if `N` does not fit.
//!
//! All types are unsigned. A subset of Linux 7.3's `num.rs`, same names; an intended
//! truncation stays an `as` with a `// CAST:` comment. Differs from 7.3's on purpose:
//!
//! - [`FromSafeCast`] is `pub`, as the virtual GSP uses it; `IntoSafeCast` is left out.
//! - The pointer width comes from `target_pointer_width`, not `CONFIG_64BIT`, which host
//!   builds lack (the same on x86_64 and arm64).

/// Defines a `const fn` `<from>_as_<into>` per listed widening.
macro_rules! impl_safe_as {
    ($($(#[$attr:meta])* $name:ident: $from:ty => $into:ty;)*) => {
        $(
            $(#[$attr])*
            const _: () = assert!(
                core::mem::size_of::<$into>() >= core::mem::size_of::<$from>()
            );

            #[doc = concat!(
                "Converts a [`", stringify!($from), "`] into a [`", stringify!($into),
                "`], keeping every value."
            )]
            ///
            /// For `const` contexts; elsewhere use [`FromSafeCast`].
            $(#[$attr])*
            #[inline(always)]
            pub(crate) const fn $name(value: $from) -> $into {
                // CAST: the target is at least as wide as the source (asserted above) and
                // both are unsigned, so every value is kept.
                value as $into
            }
        )*
    };
}

impl_safe_as! {
    u16_as_u32: u16 => u32;
    u32_as_usize: u32 => usize;
    #[cfg(any(target_pointer_width = "32", target_pointer_width = "64"))]
    usize_as_u64: usize => u64;
}

/// Defines a `const fn` `<from>_into_<into>` per listed narrowing of a constant.
macro_rules! impl_const_into {
    ($($name:ident: $from:ty => $into:ty;)*) => {
        $(
            const _: () = assert!(<$from>::BITS >= <$into>::BITS);

            #[doc = concat!(
                "Converts the [`", stringify!($from), "`] constant `N` into a [`",
                stringify!($into), "`]."
            )]
            ///
            /// The build fails if `N` does not fit.
            pub(crate) const fn $name<const N: $from>() -> $into {
                // CAST: the source is at least as wide as the target (asserted above), so
                // the target's maximum is kept.
                const { assert!(N <= <$into>::MAX as $from) };
                // CAST: `N` is at most the target's maximum (asserted above).
                N as $into
            }
        )*
    };
}

impl_const_into! {
    usize_into_u32: usize => u32;
}

/// Conversion into `Self` from a `T` that keeps every value on this build's target.
///
/// `core` has no [`From`] where losslessness depends on the pointer width (`u32` to
/// `usize`, `usize` to `u64`); this is implemented only on widths where it holds. In
/// `const` contexts, use the `<from>_as_<into>` functions.
///
/// # Examples
///
/// ```
/// use nova_core::num::FromSafeCast;
///
/// assert_eq!(usize::from_safe_cast(u32::MAX), 0xffff_ffff_usize);
/// assert_eq!(u64::from_safe_cast(usize::MAX), u64::MAX);
/// ```
///
/// A conversion that can lose bits has no implementation:
///
/// ```compile_fail
/// use nova_core::num::FromSafeCast;
///
/// let _ = u32::from_safe_cast(0_u64);
/// ```
pub trait FromSafeCast<T> {
    /// Returns `value` as a `Self`; every value of `T` is kept.
    fn from_safe_cast(value: T) -> Self;
}

#[cfg(any(target_pointer_width = "32", target_pointer_width = "64"))]
impl FromSafeCast<usize> for u64 {
    fn from_safe_cast(value: usize) -> Self {
        usize_as_u64(value)
    }
}

impl FromSafeCast<u32> for usize {
    fn from_safe_cast(value: u32) -> Self {
        u32_as_usize(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Evaluated by the compiler: a failing conversion would fail the build, not a test.
    const _: u32 = usize_into_u32::<{ u32_as_usize(u32::MAX) }>();
    const _: usize = u32_as_usize(u32::MAX);

    #[test]
    fn u16_as_u32_keeps_max() {
        assert_eq!(u16_as_u32(u16::MAX), 0xffff);
    }

    #[test]
    fn u32_as_usize_keeps_max() {
        assert_eq!(u32_as_usize(u32::MAX), 0xffff_ffff);
    }

    #[test]
    fn usize_as_u64_keeps_max() {
        assert_eq!(usize_as_u64(usize::MAX), u64::MAX);
    }

    #[test]
    fn usize_into_u32_keeps_max() {
        assert_eq!(usize_into_u32::<0xffff_ffff>(), u32::MAX);
    }

    #[test]
    fn usize_into_u32_keeps_zero() {
        assert_eq!(usize_into_u32::<0>(), 0);
    }

    #[test]
    fn from_safe_cast_keeps_max() {
        assert_eq!(usize::from_safe_cast(u32::MAX), 0xffff_ffff);
        assert_eq!(u64::from_safe_cast(usize::MAX), u64::MAX);
    }
}
