// SPDX-License-Identifier: GPL-2.0

//! Typed registers, as Linux 7.3's `kernel::io::register`: [`register!`](crate::register!)
//! declares, for each register, a type holding its value with accessors for its bit
//! fields, and a location of the same name that the [`Io`](super::Io) accessors take.
//! Each field is a [`Bounded`](crate::num::Bounded) of the register's integer and the
//! field's width, so a value that does not fit the field does not build, or, known only
//! when the code runs, is refused.
//!
//! ```
//! use kernel::{
//!     io::{
//!         register,
//!         Io,
//!     },
//!     num::Bounded,
//!     prelude::*,
//! };
//!
//! register! {
//!     /// The engine's control register.
//!     pub ENGINE_CTL(u32) @ 0x40 {
//!         /// The queue the engine serves.
//!         15:8 queue;
//!         /// Set to start the engine.
//!         0:0 start;
//!     }
//! }
//!
//! // `zeroed()` is `Zeroable`'s, from the prelude.
//! let value = ENGINE_CTL::zeroed().with_queue(3u8).with_start(true);
//! assert_eq!(value.into_raw(), 0x301);
//! assert_eq!(value.queue(), 3);
//! let queue: Bounded<u32, 8> = value.queue();
//! assert_eq!(u8::from(queue), 3);
//!
//! let bar = vdev::SimBar::<0x100>::new(&[]).unwrap();
//! let io = *bar.io();
//! io.write_reg(value); // The location is the type's: offset 0x40.
//! assert_eq!(io.read32(0x40), 0x301);
//! io.update(ENGINE_CTL, |r| r.with_start(false));
//! assert_eq!(io.read(ENGINE_CTL).queue(), 3);
//! assert!(!io.read(ENGINE_CTL).start().into_bool());
//! ```
//!
//! # Syntax
//!
//! ```text
//! register! {
//!     /// Documentation of the register (optional, and so are other attributes).
//!     VISIBILITY NAME(STORAGE) @ OFFSET {
//!         /// Documentation of the field (optional).
//!         HI:LO field;
//!         ...
//!     }
//!     ...more registers...
//! }
//! ```
//!
//! `STORAGE` is `u8`, `u16`, `u32` or `u64`, the width of every access; `OFFSET` a
//! literal, a multiple of that width (checked when the crate builds); `HI:LO` the
//! inclusive bit range of a field, `HI >= LO`, within the storage (checked too); a
//! single bit is `N:N`. Fields may overlap. The register's visibility is its fields'.
//!
//! # What a register gets
//!
//! The type `NAME` (`Clone`, `Copy`, `PartialEq`, `Eq`, `Default`, and a `Debug` that
//! shows the raw value and each field in hex), wrapping its `STORAGE` value:
//!
//! - `NAME::from_raw(raw)`, `value.into_raw()`, `From` both ways between `NAME` and
//!   `STORAGE`, and [`Zeroable`](crate::init::Zeroable), whose `NAME::zeroed()` is the
//!   value with every bit clear;
//! - per field of `WIDTH = HI + 1 - LO` bits:
//!   - `field()`, the field shifted down to bit 0, a `Bounded<STORAGE, WIDTH>`;
//!   - `with_field(v)`, for any `v` that converts into a `Bounded<STORAGE, WIDTH>`:
//!     a `Bounded` of that type, a `bool` for any field, and an unsigned primitive no
//!     wider than the field (`u8` for 8 bits or more, `u16` for 16, `u32` for 32, `u64`
//!     for 64, each no wider than `STORAGE`); a narrower `Bounded` goes through
//!     [`Bounded::extend`](crate::num::Bounded::extend), any other value through
//!     `try_with_field(v)`, which returns `EOVERFLOW` for a value that does not fit;
//!   - `with_const_field::<V>()`, a `const fn`, for a constant `V` of type `STORAGE`
//!     (a `V` that does not fit fails the build);
//!   - each of them returns the value with the field replaced and every other bit kept;
//!   - the constants `FIELD_MASK` (in place), `FIELD_SHIFT` and `FIELD_RANGE`
//!     (`LO..=HI`);
//! - [`Register`] and [`FixedRegister`], hence [`LocatedRegister`]: the value carries its
//!   location, so [`Io::write_reg`](super::Io::write_reg) needs nothing else;
//! - the constant `NAME`, a [`FixedRegisterLoc`]: the location for
//!   [`Io::read`](super::Io::read), [`Io::update`](super::Io::update) and their `try_`
//!   forms on any view of a [`Region`].
//!
//! A constant register value starts from `NAME::from_raw(0)`: `zeroed()`, a trait's, is
//! not `const` (7.3 has `pin_init::zeroed()` for that, which this crate does not).
//!
//! # Against 7.3
//!
//! - `Default` (all bits clear) is ours alone, and so is the hex of `Debug`: 7.3 shows
//!   each field's `Bounded` as `Debug` formats it.
//! - A location beyond the region's size panics when the access runs, where 7.3 fails the
//!   build (as for every fixed-offset access of [`Io`](super::Io) in this crate).
//!
//! Not here: relative registers (`@ Base + OFFSET`, `RegisterBase`, `WithBase`), arrays
//! (`[N, stride = S]`, `Array`, `RegisterArray`), aliases (`=> OTHER`, `=> OTHER[i]`),
//! fields converted to a type of their own (`=> Type`, `?=> Type`), and 7.3's separate
//! `kernel::bitfield!`, whose work [`register!`](crate::register!) does inside. A
//! declaration using them fails to build with a message saying so.

use core::marker::PhantomData;

use crate::io::{
    IoLoc,
    Region, //
};

/// A register type: the integer it holds and where it lives.
pub trait Register: Sized {
    /// The integer the register is, read and written with one access of its width.
    type Storage: Into<Self> + From<Self>;

    /// The register's byte offset in its region.
    const OFFSET: usize;
}

/// A register at an offset fixed in its type ([`Register::OFFSET`] is its location).
pub trait FixedRegister: Register {}

/// `()` as the location of a fixed register's value: `io.write((), value)`.
impl<const SIZE: usize, T: FixedRegister> IoLoc<Region<SIZE>, T> for () {
    type IoType = T::Storage;

    #[inline(always)]
    fn offset(self) -> usize {
        T::OFFSET
    }
}

/// A fixed register's value as its own location: its type says where it lives.
impl<const SIZE: usize, T: FixedRegister> IoLoc<Region<SIZE>, T> for T {
    type IoType = T::Storage;

    #[inline(always)]
    fn offset(self) -> usize {
        T::OFFSET
    }
}

/// The location of the fixed register `T`: what the constant that
/// [`register!`](crate::register!) declares beside the type, of the same name, stands for.
pub struct FixedRegisterLoc<T: FixedRegister>(PhantomData<T>);

impl<T: FixedRegister> FixedRegisterLoc<T> {
    /// The location of `T`.
    #[inline(always)]
    #[expect(
        clippy::new_without_default,
        reason = "a `const fn`, for the constant `register!` declares; `Default` cannot be"
    )]
    pub const fn new() -> Self {
        Self(PhantomData)
    }
}

impl<T: FixedRegister> Clone for FixedRegisterLoc<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: FixedRegister> Copy for FixedRegisterLoc<T> {}

impl<const SIZE: usize, T: FixedRegister> IoLoc<Region<SIZE>, T> for FixedRegisterLoc<T> {
    type IoType = T::Storage;

    #[inline(always)]
    fn offset(self) -> usize {
        T::OFFSET
    }
}

/// A register value that knows where it is written: what
/// [`Io::write_reg`](super::Io::write_reg) and [`Io::try_write_reg`](super::Io::try_write_reg)
/// take.
pub trait LocatedRegister<Base: ?Sized> {
    /// The register written.
    type Value: Register;

    /// Where it is written in a `Base`.
    type Location: IoLoc<Base, Self::Value>;

    /// Splits `self` into the location and the value of the write.
    fn into_io_op(self) -> (Self::Location, Self::Value);
}

impl<const SIZE: usize, T: FixedRegister> LocatedRegister<Region<SIZE>> for T {
    type Value = T;
    type Location = FixedRegisterLoc<T>;

    #[inline(always)]
    fn into_io_op(self) -> (FixedRegisterLoc<T>, T) {
        (FixedRegisterLoc::new(), self)
    }
}

/// Declares registers at fixed offsets of an I/O region, each a type with accessors for
/// its bit fields and a location of the same name. See the [module
/// documentation](mod@crate::io::register) for the syntax, what is generated, and how it
/// differs from Linux 7.3's.
///
/// ```
/// use kernel::{
///     io::register,
///     num::Bounded,
///     prelude::*,
/// };
///
/// register! {
///     /// A status register.
///     pub(crate) STATUS(u16) @ 0x10 {
///         /// The error code, 0 if none.
///         15:4 error;
///         /// Set while the engine runs.
///         0:0 busy;
///     }
/// }
///
/// let status = STATUS::from_raw(0x0121);
/// assert_eq!(status.error(), 0x12);
/// assert!(status.busy().into_bool());
/// assert_eq!(status.with_const_error::<0>().into_raw(), 0x0001);
/// // A 12-bit field takes a `u8`, a `Bounded` of 12 bits, or anything that fits.
/// assert_eq!(status.with_error(0xffu8).into_raw(), 0x0ff1);
/// assert_eq!(
///     STATUS::zeroed().with_error(Bounded::<u16, 12>::new::<0xabc>()).into_raw(),
///     0xabc0
/// );
/// assert_eq!(status.try_with_error(0x1000u16), Err(EOVERFLOW));
/// assert_eq!(status.try_with_error(0xfffu16).map(STATUS::into_raw), Ok(0xfff1));
/// ```
#[macro_export]
macro_rules! register {
    // The rules that start with `@` are the macro's own steps.

    // A register's or a bit field's value type: the integer `$storage`, wrapped, with
    // the derives every such type has and the ones listed.
    (@value [$($derive:ident),*] $(#[$attr:meta])* $vis:vis $name:ident($storage:ty)) => {
        $(#[$attr])*
        #[repr(transparent)]
        #[derive(Clone, Copy, PartialEq, Eq $(, $derive)*)]
        // `allow`, not `expect`: registers are usually named in the hardware's
        // `SCREAMING_CASE`, but need not be.
        #[allow(non_camel_case_types)]
        $vis struct $name {
            inner: $storage,
        }

        // Not every user calls every accessor.
        #[allow(dead_code)]
        impl $name {
            /// The value whose bits are `raw`.
            #[inline(always)]
            $vis const fn from_raw(raw: $storage) -> Self {
                Self { inner: raw }
            }

            /// The bits of the value.
            #[inline(always)]
            $vis const fn into_raw(self) -> $storage {
                self.inner
            }
        }

        // SAFETY: `$name` is a transparent wrapper of the integer `$storage`, whose every
        // bit pattern, zero included, is a value.
        unsafe impl $crate::init::Zeroable for $name {}

        impl ::core::convert::From<$storage> for $name {
            #[inline(always)]
            fn from(raw: $storage) -> Self {
                Self::from_raw(raw)
            }
        }

        impl ::core::convert::From<$name> for $storage {
            #[inline(always)]
            fn from(value: $name) -> Self {
                value.into_raw()
            }
        }
    };

    // One register: its value type, its fields, its location.
    (
        @fixed $(#[$attr:meta])* $vis:vis $name:ident ($storage:ty) @ $offset:literal
            { $($fields:tt)* }
    ) => {
        $crate::register!(@value [Default] $(#[$attr])* $vis $name($storage));

        impl $crate::io::register::Register for $name {
            type Storage = $storage;

            const OFFSET: usize = $offset;
        }

        impl $crate::io::register::FixedRegister for $name {}

        const _: () = ::core::assert!(
            $offset % ::core::mem::size_of::<$storage>() == 0,
            ::core::concat!(
                "register!: the offset of `",
                ::core::stringify!($name),
                "` is not a multiple of its width"
            ),
        );

        $(#[$attr])*
        $vis const $name: $crate::io::register::FixedRegisterLoc<$name> =
            $crate::io::register::FixedRegisterLoc::<$name>::new();

        $crate::register!(@fields $vis $name($storage) { $($fields)* });
    };

    // The fields' accessors and constants, and `Debug`, which shows them.
    (
        @fields $vis:vis $name:ident ($storage:ty) {
            $( $(#[doc = $doc:expr])* $hi:literal : $lo:literal $field:ident ; )*
        }
    ) => {
        $(
            const _: () = ::core::assert!(
                $lo <= $hi && $hi < <$storage>::BITS,
                ::core::concat!(
                    "register!: the bits ",
                    ::core::stringify!($hi), ":", ::core::stringify!($lo),
                    " of `",
                    ::core::stringify!($name),
                    "::",
                    ::core::stringify!($field),
                    "` are not a range inside the register"
                ),
            );
        )*

        // Not every user calls every accessor.
        #[allow(dead_code)]
        impl $name {
            $(
            $crate::macros::paste! {
                #[doc = ::core::concat!(
                    "The bits of `", ::core::stringify!($field), "` (",
                    ::core::stringify!($hi), ":", ::core::stringify!($lo), "), in place."
                )]
                $vis const [<$field:upper _MASK>]: $storage = (<$storage>::MAX
                    >> (<$storage>::BITS - 1 - $hi))
                    & (<$storage>::MAX << $lo);

                #[doc = ::core::concat!(
                    "The position of the lowest bit of `", ::core::stringify!($field), "`."
                )]
                $vis const [<$field:upper _SHIFT>]: u32 = $lo;

                #[doc = ::core::concat!(
                    "The bits of `", ::core::stringify!($field), "`, lowest to highest."
                )]
                $vis const [<$field:upper _RANGE>]: ::core::ops::RangeInclusive<u8> =
                    $lo..=$hi;

                $(#[doc = $doc])*
                #[doc = ""]
                #[doc = ::core::concat!(
                    "Returns the field (bits ",
                    ::core::stringify!($hi), ":", ::core::stringify!($lo),
                    "), shifted down to bit 0."
                )]
                #[inline(always)]
                $vis fn $field(self) -> $crate::num::Bounded<$storage, { $hi + 1 - $lo }> {
                    const MASK: $storage = $name::[<$field:upper _MASK>];
                    const SHIFT: u32 = $name::[<$field:upper _SHIFT>];
                    // The bits of the field, at bit 0, fit its width: `from_expr`'s check
                    // never fails, and the optimiser removes it.
                    $crate::num::Bounded::from_expr((self.inner & MASK) >> SHIFT)
                }

                /// Returns the value with the field set to `value`.
                #[inline(always)]
                const fn [<__with_ $field>](
                    self,
                    value: $crate::num::Bounded<$storage, { $hi + 1 - $lo }>,
                ) -> Self {
                    const MASK: $storage = $name::[<$field:upper _MASK>];
                    const SHIFT: u32 = $name::[<$field:upper _SHIFT>];
                    // `value` fits the field's width, so the shift keeps it inside `MASK`.
                    Self { inner: (self.inner & !MASK) | (value.get() << SHIFT) }
                }

                $(#[doc = $doc])*
                #[doc = ""]
                #[doc = ::core::concat!(
                    "Returns the value with the field (bits ",
                    ::core::stringify!($hi), ":", ::core::stringify!($lo),
                    ") set to `value`, every other bit kept: any value that converts into ",
                    "the field's `Bounded`."
                )]
                #[inline(always)]
                $vis fn [<with_ $field>]<T>(self, value: T) -> Self
                where
                    T: ::core::convert::Into<$crate::num::Bounded<$storage, { $hi + 1 - $lo }>>,
                {
                    self.[<__with_ $field>](value.into())
                }

                $(#[doc = $doc])*
                #[doc = ""]
                #[doc = ::core::concat!(
                    "Returns the value with the field (bits ",
                    ::core::stringify!($hi), ":", ::core::stringify!($lo),
                    ") set to the constant `VALUE`, every other bit kept; a `VALUE` that ",
                    "does not fit fails the build."
                )]
                #[inline(always)]
                $vis const fn [<with_const_ $field>]<const VALUE: $storage>(self) -> Self {
                    self.[<__with_ $field>](
                        $crate::num::Bounded::<$storage, { $hi + 1 - $lo }>::new::<VALUE>(),
                    )
                }

                $(#[doc = $doc])*
                #[doc = ""]
                #[doc = ::core::concat!(
                    "Returns the value with the field (bits ",
                    ::core::stringify!($hi), ":", ::core::stringify!($lo),
                    ") set to `value`, every other bit kept."
                )]
                #[doc = ""]
                #[doc = "# Errors"]
                #[doc = ""]
                #[doc = "- `EOVERFLOW` if `value` does not fit the field."]
                #[inline(always)]
                $vis fn [<try_with_ $field>]<T>(self, value: T) -> $crate::error::Result<Self>
                where
                    T: $crate::num::TryIntoBounded<$storage, { $hi + 1 - $lo }>,
                {
                    let value = value
                        .try_into_bounded()
                        .ok_or($crate::error::code::EOVERFLOW)?;
                    ::core::result::Result::Ok(self.[<__with_ $field>](value))
                }
            }
            )*
        }

        impl ::core::fmt::Debug for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.debug_struct(::core::stringify!($name))
                    .field("<raw>", &::core::format_args!("{:#x}", self.inner))
                    $(
                        .field(
                            ::core::stringify!($field),
                            &::core::format_args!("{:#x}", self.$field()),
                        )
                    )*
                    .finish()
            }
        }
    };

    // Any number of registers.
    (
        $(
            $(#[$attr:meta])* $vis:vis $name:ident ($storage:ty) @ $offset:literal
                { $($fields:tt)* }
        )*
    ) => {
        $(
            $crate::register!(
                @fixed $(#[$attr])* $vis $name($storage) @ $offset { $($fields)* }
            );
        )*
    };

    // Anything else: a form of 7.3's that this crate does not have, or a typo.
    ($($rest:tt)*) => {
        ::core::compile_error!(::core::concat!(
            "register!: this crate knows only ",
            "`NAME(u8|u16|u32|u64) @ OFFSET { HI:LO field; ... }` (no relative, array or ",
            "alias registers, no `=>`/`?=>` fields): ",
            ::core::stringify!($($rest)*)
        ));
    };
}
