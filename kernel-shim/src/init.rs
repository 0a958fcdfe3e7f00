// SPDX-License-Identifier: GPL-2.0

//! [`Zeroable`]: the types whose all-zero bytes are a value, and that value.
//!
//! Linux 7.3 takes the trait from its `pin_init` crate, through `kernel::prelude`, where
//! this crate's prelude has it too: code that names it `Zeroable` after
//! `use kernel::prelude::*` (or calls `zeroed()` of a type that implements it) builds
//! against both. Only the trait and its `zeroed()` are here; `pin_init`'s initialisers,
//! its `init_zeroed()` and its free `zeroed()` are not.
//!
//! The shim's alone: a kernel build names 7.3's own trait through 7.3's prelude.
//!
//! ```
//! use kernel::prelude::*;
//!
//! /// A value whose all-zero bytes mean "nothing yet".
//! #[derive(Debug, PartialEq)]
//! struct Counters {
//!     sent: u64,
//!     lost: u32,
//! }
//!
//! // SAFETY: All-zero bytes are a valid `u64` and a valid `u32`, and `Counters` holds
//! // nothing else.
//! unsafe impl Zeroable for Counters {}
//!
//! assert_eq!(Counters::zeroed(), Counters { sent: 0, lost: 0 });
//! assert_eq!(u16::zeroed(), 0);
//! ```

/// A type for which a value whose every byte is zero is valid: [`Zeroable::zeroed`]
/// makes it.
///
/// # Safety
///
/// The implementor guarantees that `core::mem::zeroed::<Self>()` is a valid value of
/// `Self` (no uninhabited type, no reference, no `NonNull`, no enum without a variant of
/// all-zero bytes, ...).
pub unsafe trait Zeroable {
    /// Returns the value whose every byte is zero.
    #[inline(always)]
    fn zeroed() -> Self
    where
        Self: Sized,
    {
        // SAFETY: All-zero bytes are a valid `Self` (the trait's safety requirement).
        unsafe { core::mem::zeroed() }
    }
}

/// Declares the types listed [`Zeroable`].
macro_rules! zeroable {
    ($($({$($generics:tt)*})? $t:ty),* $(,)?) => {
        $(
            // SAFETY: Each is listed after the reason all-zero bytes are one of its values.
            unsafe impl$(<$($generics)*>)? Zeroable for $t {}
        )*
    };
}

zeroable! {
    // Zero is a value of every primitive integer, `false` a `bool`, `'\0'` a `char`.
    u8, u16, u32, u64, u128, usize,
    i8, i16, i32, i64, i128, isize,
    bool, char,
    // Every element is zeroable.
    {T: Zeroable, const N: usize} [T; N],
    // Nothing to zero.
    (),
}
