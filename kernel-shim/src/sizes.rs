// SPDX-License-Identifier: GPL-2.0

//! Common sizes, as Linux 7.3's `kernel::sizes` (C: `include/linux/sizes.h`): the
//! `usize` constants `SZ_1K` to `SZ_2G`, and the same as associated constants of [`u32`],
//! [`u64`] and [`usize`] through [`SizeConstants`], for device address spaces whose width
//! is not the CPU's.
//!
//! ```
//! use kernel::sizes::{
//!     SizeConstants,
//!     SZ_1M,
//!     SZ_4K, //
//! };
//!
//! assert_eq!(SZ_1M / SZ_4K, 256);
//! let heap: u64 = 14 * u64::SZ_1M;
//! assert_eq!(heap, 0xe0_0000);
//! assert_eq!(u32::SZ_2G, 0x8000_0000);
//! ```

macro_rules! define_sizes {
    ($($name:ident = $shift:literal,)*) => {
        $(
            #[doc = ::core::concat!("`1 << ", ::core::stringify!($shift), "`.")]
            pub const $name: usize = 1 << $shift;
        )*

        /// The sizes as associated constants of an integer type (7.3's: of [`u32`],
        /// [`u64`] and [`usize`]), for `u64::SZ_1G` where a device address is a `u64`.
        pub trait SizeConstants {
            $(
                #[doc = ::core::concat!("`1 << ", ::core::stringify!($shift), "`.")]
                const $name: Self;
            )*
        }

        define_sizes!(@impl u32; $($name,)*);
        define_sizes!(@impl u64; $($name,)*);
        define_sizes!(@impl usize; $($name,)*);
    };
    (@impl $ty:ty; $($name:ident,)*) => {
        impl SizeConstants for $ty {
            $(
                const $name: Self = {
                    // Every size fits the three types; a new one that does not fails the
                    // build here.
                    ::core::assert!(($name as u128) <= (<$ty>::MAX as u128));
                    // CAST: checked to fit just above.
                    $name as $ty
                };
            )*
        }
    };
}

define_sizes! {
    SZ_1K = 10,
    SZ_2K = 11,
    SZ_4K = 12,
    SZ_8K = 13,
    SZ_16K = 14,
    SZ_32K = 15,
    SZ_64K = 16,
    SZ_128K = 17,
    SZ_256K = 18,
    SZ_512K = 19,
    SZ_1M = 20,
    SZ_2M = 21,
    SZ_4M = 22,
    SZ_8M = 23,
    SZ_16M = 24,
    SZ_32M = 25,
    SZ_64M = 26,
    SZ_128M = 27,
    SZ_256M = 28,
    SZ_512M = 29,
    SZ_1G = 30,
    SZ_2G = 31,
}
