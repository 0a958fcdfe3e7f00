// SPDX-License-Identifier: GPL-2.0

//! Formatting, as Linux 7.3's `kernel::fmt`: `core::fmt`'s types, and a [`Display`] of the
//! kernel's own.
//!
//! `fmt!` (what the `pr_*!` and `dev_*!` macros format with) puts each argument behind
//! [`Adapter`]: `{}` then asks for this module's [`Display`], not `core::fmt::Display`,
//! and the other traits are `core`'s, forwarded. So a type the driver prints with `{}`
//! implements [`Display`] here as in a kernel, and one that implements only
//! `core::fmt::Display` is refused here as there.

pub use core::fmt::{
    Arguments,
    Debug,
    Error,
    Formatter,
    Result,
    Write, //
};

/// Wraps each argument of `fmt!`, which routes `{}` to [`Display`].
#[doc(hidden)]
pub struct Adapter<T>(pub T);

/// Forwards `core`'s formatting traits through [`Adapter`].
macro_rules! forward_through_adapter {
    ($($name:ident),* $(,)?) => {
        $(
            impl<T: core::fmt::$name> core::fmt::$name for Adapter<T> {
                fn fmt(&self, f: &mut Formatter<'_>) -> Result {
                    core::fmt::$name::fmt(&self.0, f)
                }
            }
        )*
    };
}

forward_through_adapter!(Debug, LowerHex, UpperHex, Octal, Binary, LowerExp, UpperExp);

/// What `{}` asks for: the kernel's own copy of `core::fmt::Display`, which the kernel
/// implements for foreign types too.
pub trait Display {
    /// As `core::fmt::Display::fmt`.
    fn fmt(&self, f: &mut Formatter<'_>) -> Result;
}

impl<T: ?Sized + Display> Display for &T {
    fn fmt(&self, f: &mut Formatter<'_>) -> Result {
        Display::fmt(*self, f)
    }
}

impl<T: ?Sized + Display> core::fmt::Display for Adapter<&T> {
    fn fmt(&self, f: &mut Formatter<'_>) -> Result {
        Display::fmt(self.0, f)
    }
}

/// Implements [`Display`] for types whose `core::fmt::Display` is what the kernel prints.
macro_rules! display_as_core {
    ($($ty:ty),* $(,)?) => {
        $(
            impl Display for $ty {
                fn fmt(&self, f: &mut Formatter<'_>) -> Result {
                    core::fmt::Display::fmt(self, f)
                }
            }
        )*
    };
}

// Linux 7.3's list.
display_as_core!(
    bool,
    char,
    Arguments<'_>,
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    str,
);
