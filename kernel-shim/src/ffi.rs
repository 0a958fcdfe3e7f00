// SPDX-License-Identifier: GPL-2.0

//! The C types, as Linux 7.3's `ffi` crate (which its `kernel` re-exports as
//! `kernel::ffi`): the kernel's own mapping, the same on every architecture it builds for.
//! `c_char` is `u8` (the kernel builds with `-funsigned-char`), and `c_long`/`c_ulong` are
//! `isize`/`usize` (`long` is pointer-sized in the kernel).
//!
//! ```
//! use kernel::ffi::{
//!     c_char,
//!     c_uint, //
//! };
//!
//! let name: [c_char; 3] = *b"gsp";
//! let count: c_uint = 3;
//! assert_eq!(name.len(), count as usize);
//! ```

macro_rules! alias {
    ($($(#[$attr:meta])* $name:ident = $ty:ty;)*) => {$(
        $(#[$attr])*
        #[allow(non_camel_case_types)]
        pub type $name = $ty;

        // The same size as the platform's C type.
        const _: () = ::core::assert!(
            ::core::mem::size_of::<$name>() == ::core::mem::size_of::<::core::ffi::$name>()
        );
    )*};
}

alias! {
    /// C `char`: unsigned in the kernel.
    c_char = u8;
    /// C `signed char`.
    c_schar = i8;
    /// C `unsigned char`.
    c_uchar = u8;
    /// C `short`.
    c_short = i16;
    /// C `unsigned short`.
    c_ushort = u16;
    /// C `int`.
    c_int = i32;
    /// C `unsigned int`.
    c_uint = u32;
    /// C `long`: pointer-sized in the kernel.
    c_long = isize;
    /// C `unsigned long`: pointer-sized in the kernel.
    c_ulong = usize;
    /// C `long long`.
    c_longlong = i64;
    /// C `unsigned long long`.
    c_ulonglong = u64;
}

pub use core::ffi::{
    c_void,
    CStr, //
};
