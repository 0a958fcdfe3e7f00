// SPDX-License-Identifier: GPL-2.0

//! Raw pointers: alignments, types whose size a pointer tells, and projections, as Linux
//! 7.3's `kernel::ptr`.
//!
//! [`project!`] turns a pointer to a value into a pointer to one of its fields or
//! elements without dereferencing anything, so it works on pointers into memory the CPU
//! may not touch directly (I/O memory, memory a device shares); `kernel::io::io_project!`
//! is built on it.

pub mod projection;

use core::num::NonZero;

#[doc(inline)]
pub use crate::project_pointer as project;

/// A power of two, the alignment of a type or an address.
///
/// # Invariants
///
/// The value is a power of two.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Alignment(NonZero<usize>);

impl Alignment {
    /// The alignment `ALIGN`; the build fails unless it is a power of two.
    #[inline(always)]
    pub const fn new<const ALIGN: usize>() -> Self {
        const {
            assert!(ALIGN.is_power_of_two(), "an alignment is a power of two");
        }
        // INVARIANT: checked at build time above.
        match NonZero::new(ALIGN) {
            Some(align) => Self(align),
            // PANIC: a power of two is not zero.
            None => panic!("an alignment is a power of two"),
        }
    }

    /// The alignment `align`, or `None` if it is not a power of two.
    #[inline(always)]
    pub const fn new_checked(align: usize) -> Option<Self> {
        if !align.is_power_of_two() {
            return None;
        }
        match NonZero::new(align) {
            // INVARIANT: checked above.
            Some(align) => Some(Self(align)),
            None => None,
        }
    }

    /// The alignment of `T`.
    #[inline(always)]
    pub const fn of<T>() -> Self {
        match Self::new_checked(align_of::<T>()) {
            Some(align) => align,
            // PANIC: the language makes every alignment a power of two.
            None => panic!("an alignment is a power of two"),
        }
    }

    /// The alignment in bytes.
    #[inline(always)]
    pub const fn as_usize(self) -> usize {
        self.0.get()
    }

    /// The alignment in bytes, as a `NonZero`.
    #[inline(always)]
    pub const fn as_nonzero(self) -> NonZero<usize> {
        self.0
    }

    /// The base-2 logarithm of the alignment.
    #[inline(always)]
    pub const fn log2(self) -> u32 {
        self.0.trailing_zeros()
    }

    /// The mask of the bits below the alignment: `value & !mask()` aligns down.
    #[inline(always)]
    pub const fn mask(self) -> usize {
        self.0.get() - 1
    }
}

/// Integers that can be rounded to an [`Alignment`].
pub trait Alignable: Sized {
    /// Rounds down to a multiple of `alignment`.
    fn align_down(self, alignment: Alignment) -> Self;

    /// Rounds up to a multiple of `alignment`, or `None` on overflow (or if the alignment
    /// does not fit in `Self`).
    fn align_up(self, alignment: Alignment) -> Option<Self>;
}

macro_rules! alignable {
    ($($t:ty),*) => {$(
        impl Alignable for $t {
            #[inline(always)]
            fn align_down(self, alignment: Alignment) -> Self {
                match <$t>::try_from(alignment.mask()) {
                    Ok(mask) => self & !mask,
                    // An alignment beyond the type's range rounds every value down to 0.
                    Err(_) => 0,
                }
            }

            #[inline(always)]
            fn align_up(self, alignment: Alignment) -> Option<Self> {
                let mask = <$t>::try_from(alignment.mask()).ok()?;
                Some(self.checked_add(mask)? & !mask)
            }
        }
    )*};
}

alignable!(u8, u16, u32, u64, usize);

/// `value` rounded up to `align`, in a constant context; `None` on overflow.
#[inline(always)]
pub const fn const_align_up(value: usize, align: Alignment) -> Option<usize> {
    match value.checked_add(align.mask()) {
        Some(sum) => Some(sum & !align.mask()),
        None => None,
    }
}

/// A type whose size a pointer to it tells, without reading through the pointer: a sized
/// type, or a slice (whose pointer carries the length).
pub trait KnownSize {
    /// The least size a value of the type can have, known at build time.
    const MIN_SIZE: usize;

    /// The least alignment of the type, known at build time.
    const MIN_ALIGN: Alignment;

    /// The size in bytes of the value `p` points to; `p` is not dereferenced.
    fn size(p: *const Self) -> usize;
}

impl<T> KnownSize for T {
    const MIN_SIZE: usize = size_of::<T>();
    const MIN_ALIGN: Alignment = Alignment::of::<T>();

    #[inline(always)]
    fn size(_: *const Self) -> usize {
        size_of::<T>()
    }
}

impl<T> KnownSize for [T] {
    const MIN_SIZE: usize = 0;
    const MIN_ALIGN: Alignment = Alignment::of::<T>();

    #[inline(always)]
    fn size(p: *const Self) -> usize {
        p.len() * size_of::<T>()
    }
}
