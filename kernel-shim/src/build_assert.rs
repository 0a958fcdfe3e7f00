// SPDX-License-Identifier: GPL-2.0

//! Assertions checked when the code is built, as Linux 7.3's `kernel::build_assert`:
//!
//! - [`static_assert!`]: a constant condition, checked wherever it is written (also outside
//!   any body); it cannot name generics or variables.
//! - [`const_assert!`]: a condition on constants and generics, checked when the function
//!   it is in is instantiated; a statement, so only inside a body.
//! - [`build_assert!`]: any condition; in `const` evaluation a failure stops the build.
//!
//! ```
//! use kernel::prelude::*;
//!
//! static_assert!(size_of::<u32>() == 4);
//!
//! fn words<const N: usize>() -> usize {
//!     const_assert!(N % 4 == 0, "a whole number of words");
//!     N / 4
//! }
//! assert_eq!(words::<8>(), 2);
//!
//! const fn low_byte(v: u32) -> u8 {
//!     build_assert!(v <= 0xff);
//!     v as u8
//! }
//! const B: u8 = low_byte(0x7f); // A `v` above `0xff` here fails the build.
//! assert_eq!(B, 0x7f);
//! ```
//!
//! One difference: where 7.3 proves a [`build_assert!`] outside `const` evaluation by
//! leaving a call to an undefined symbol for the linker (`rust_build_error`) unless the
//! optimiser removed it, this crate's [`build_error!`] panics when it runs. A condition the
//! optimiser would have proven true behaves the same under both; one it could not prove
//! builds here and fails there.

#[doc(inline)]
pub use crate::{
    build_assert_macro as build_assert,
    build_error,
    const_assert,
    static_assert, //
};

/// What [`build_error!`] calls: panics with `msg`.
///
/// In `const` evaluation the panic is a build error, as in 7.3; at run time it is a panic
/// here, where 7.3 leaves an undefined symbol for the linker to refuse.
#[doc(hidden)]
#[inline(never)]
#[cold]
#[track_caller]
pub const fn build_error_fn(msg: &'static str) -> ! {
    panic!("{}", msg);
}

/// Asserts a constant condition when the crate is built (C's `_Static_assert`); an
/// optional string literal is the message.
///
/// Written as an item: outside bodies too. The condition cannot name generics (use
/// [`const_assert!`]) or variables (use [`build_assert!`]).
///
/// ```
/// kernel::static_assert!(core::mem::size_of::<u64>() == 8, "64-bit words");
/// ```
#[macro_export]
#[doc(hidden)]
macro_rules! static_assert {
    ($condition:expr $(,$arg:literal)?) => {
        const _: () = ::core::assert!($condition $(,$arg)?);
    };
}

/// Asserts a condition during `const` evaluation, where it may name the generics of the
/// function it is in; checked for each instance of that function. A statement.
///
/// ```
/// fn bytes_of<T>() -> usize {
///     kernel::const_assert!(size_of::<T>() > 0, "T cannot be a ZST");
///     size_of::<T>()
/// }
/// assert_eq!(bytes_of::<u16>(), 2);
/// ```
#[macro_export]
#[doc(hidden)]
macro_rules! const_assert {
    ($condition:expr $(,$arg:literal)?) => {
        const { ::core::assert!($condition $(,$arg)?) };
    };
}

/// Fails the build if the path calling it can be taken: in `const` evaluation a panic,
/// which is a build error; at run time, here, a panic (see the [module docs](self)).
///
/// ```should_panic
/// fn checked(a: usize) -> usize {
///     a.checked_add(1).unwrap_or_else(|| kernel::build_error!("overflow"))
/// }
/// assert_eq!(checked(1), 2);
/// checked(usize::MAX); // 7.3: does not link.
/// ```
#[macro_export]
#[doc(hidden)]
macro_rules! build_error {
    () => {{
        $crate::build_assert::build_error_fn("")
    }};
    ($msg:expr) => {{
        $crate::build_assert::build_error_fn($msg)
    }};
}

/// Asserts a condition that may name variables: a failure in `const` evaluation fails the
/// build, at run time it goes to [`build_error!`] (see the [module docs](self)). An
/// optional expression is the message.
///
/// ```
/// use kernel::prelude::*;
///
/// #[inline(always)]
/// const fn lossless<const N: u32>() -> u16 {
///     build_assert!(N <= u16::MAX as u32, "N does not fit a u16");
///     N as u16
/// }
/// const V: u16 = lossless::<0x1234>();
/// assert_eq!(V, 0x1234);
/// ```
#[macro_export]
#[doc(hidden)]
macro_rules! build_assert_macro {
    ($cond:expr $(,)?) => {{
        if !$cond {
            $crate::build_assert::build_error_fn(::core::concat!(
                "assertion failed: ",
                ::core::stringify!($cond)
            ));
        }
    }};
    ($cond:expr, $msg:expr) => {{
        if !$cond {
            $crate::build_assert::build_error_fn($msg);
        }
    }};
}
