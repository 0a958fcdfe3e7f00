// SPDX-License-Identifier: GPL-2.0

//! Integers made of bit fields, as Linux 7.3's `kernel::bitfield`:
//! [`bitfield!`](crate::bitfield!) declares a transparent wrapper of an integer with an
//! accessor pair for each field, each field a [`Bounded`](crate::num::Bounded) of the
//! integer and the field's width (as [`register!`](crate::register!)'s fields, which
//! 7.3 builds on the same macro).
//!
//! ```
//! use kernel::{
//!     bitfield,
//!     prelude::*, //
//! };
//!
//! bitfield! {
//!     /// A message header's version word.
//!     struct Version(u32) {
//!         /// Major version.
//!         31:24 major;
//!         23:16 minor;
//!     }
//! }
//!
//! let v = Version::zeroed().with_major(3u8).with_minor(1u8);
//! assert_eq!(u32::from(v), 0x0301_0000);
//! assert_eq!(v.major(), 3);
//! assert_eq!(Version::from_raw(0x0400_0000).major(), 4);
//! assert_eq!(v.try_with_minor(0x100u32), Err(EOVERFLOW));
//! assert_eq!(Version::MINOR_MASK, 0x00ff_0000);
//! ```
//!
//! # Syntax
//!
//! ```text
//! bitfield! {
//!     /// Documentation and other attributes (optional).
//!     VISIBILITY struct NAME(STORAGE) {
//!         /// Documentation of the field (optional).
//!         HI:LO field;
//!         ...
//!     }
//! }
//! ```
//!
//! For each field: `field()` returns its `Bounded<STORAGE, WIDTH>`; `with_field(v)` takes
//! anything that converts into that `Bounded` (so a type too wide does not build);
//! `with_const_field::<V>()`, a `const fn`, fails the build when `V` does not fit;
//! `try_with_field(v)` returns `EOVERFLOW` when `v` does not fit; and the constants
//! `FIELD_MASK`, `FIELD_SHIFT`, `FIELD_RANGE`. The type has `from_raw`/`into_raw`, `From`
//! both ways with `STORAGE`, `Clone`, `Copy`, `PartialEq`, `Eq`, `Debug` (the raw value and
//! each field, in hex) and is `Zeroable`.
//!
//! What 7.3's has and this one lacks: fields converted to a type of the caller's
//! (`HI:LO field => Type;`, `HI:LO field ?=> Type;`), which fail the build here.

/// Declares an integer made of bit fields; see the [module docs](mod@crate::bitfield).
#[macro_export]
macro_rules! bitfield {
    (
        $(#[$attr:meta])* $vis:vis struct $name:ident($storage:ty) {
            $( $(#[doc = $doc:expr])* $hi:literal : $lo:literal $field:ident ; )*
        }
    ) => {
        $crate::register!(@value [] $(#[$attr])* $vis $name($storage));

        $crate::register!(@fields $vis $name($storage) {
            $( $(#[doc = $doc])* $hi : $lo $field ; )*
        });
    };

    // Anything else: a form of 7.3's that this crate does not have, or a typo.
    ($($rest:tt)*) => {
        ::core::compile_error!(::core::concat!(
            "bitfield!: this crate knows only `struct NAME(STORAGE) { HI:LO field; ... }` ",
            "(no `=>`/`?=>` fields): ",
            ::core::stringify!($($rest)*)
        ));
    };
}
