// SPDX-License-Identifier: GPL-2.0

//! Named integer conversions, in place of bare `as`.
//!
//! An `as` between two integer types builds whatever their widths are, so a conversion that
//! keeps every value today would quietly start dropping bits if one side were narrowed
//! later. Each helper here builds only where it keeps every value of its source:
//!
//! - `<from>_as_<into>(value)`, a `const fn` per widening (for example `u32_as_usize`):
//!   for `const` contexts, where trait methods cannot be called.
//! - [`FromSafeCast`]: the same outside `const`, for the pairs whose width depends on
//!   the target (`u32` to `usize`, `usize` to `u64`), which `core`'s [`From`] does not
//!   offer. It is implemented only for the pointer widths on which the conversion keeps
//!   every value.
//! - `<from>_into_<into>::<N>()`, a `const fn` per narrowing of a constant (for example
//!   `usize_into_u32`): the build fails if `N` does not fit the narrower type.
//!
//! Every type here is unsigned. The names and meaning are those of Linux 7.3's
//! `drivers/gpu/nova-core/num.rs`, for the subset this project uses; a conversion that
//! truncates on purpose stays an `as` with a `// CAST:` comment. Two differences from
//! 7.3's:
//!
//! - [`FromSafeCast`] is `pub` (7.3's is `pub(crate)`): the virtual GSP, another crate,
//!   uses it. The `const fn`s stay `pub(crate)`, and 7.3's `IntoSafeCast`, which nothing
//!   here uses, is left out.
//! - The pointer width is read from `target_pointer_width` rather than `CONFIG_64BIT`:
//!   host builds set no `CONFIG_*`, and both name the same width on the architectures the
//!   driver builds for (x86_64, arm64).

/// Defines one `const fn` per listed widening, named `<from>_as_<into>`; the build fails
/// if a target is narrower than its source.
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
            /// For `const` contexts; elsewhere, [`FromSafeCast`] says the same. Only defined
            /// where the target is at least as wide as the source.
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

/// Defines one `const fn` per listed narrowing of a constant, named `<from>_into_<into>`;
/// the build fails if the constant does not fit the target.
macro_rules! impl_const_into {
    ($($name:ident: $from:ty => $into:ty;)*) => {
        $(
            const _: () = assert!(<$from>::BITS >= <$into>::BITS);

            #[doc = concat!(
                "Converts the [`", stringify!($from), "`] constant `N` into a [`",
                stringify!($into), "`]."
            )]
            ///
            /// The build fails if `N` is larger than the target's maximum, so the result
            /// always equals `N`.
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
/// `core` offers no [`From`] for conversions whose lossless-ness depends on the pointer
/// width, such as `u32` to `usize` (a 16-bit `usize` would drop bits) or `usize` to `u64`
/// (a 128-bit one would). The choice left is [`TryFrom`], with an error path that cannot
/// be taken, or `as`, which truncates without a word if the widths ever change. This
/// trait is implemented for a pair only on the pointer widths where the conversion keeps
/// every value, so a use that would lose bits does not build.
///
/// In `const` contexts, use the `<from>_as_<into>` functions of this module instead.
///
/// `pub` rather than 7.3's `pub(crate)`: the virtual GSP (`vgsp`) uses it.
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
