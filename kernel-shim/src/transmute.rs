// SPDX-License-Identifier: GPL-2.0

//! Viewing values as bytes and bytes as values: [`FromBytes`] and [`AsBytes`], at the
//! path and with the methods of upstream's `kernel::transmute` (Linux 7.3).
//!
//! The driver's wire structures derive zerocopy's traits; these are the kernel's own,
//! which its DMA allocations require of what they hold.

use core::mem::size_of;

/// Types for which every bit pattern of `size_of::<Self>()` bytes is a valid value
/// (padding may hold anything).
///
/// # Safety
///
/// Every bit pattern must be a valid value of `Self`.
pub unsafe trait FromBytes {
    /// Returns `bytes` as a `Self`, if they are exactly its size and aligned for it.
    fn from_bytes(bytes: &[u8]) -> Option<&Self>
    where
        Self: Sized,
    {
        let ptr = bytes.as_ptr().cast::<Self>();
        if bytes.len() != size_of::<Self>() || !ptr.is_aligned() {
            return None;
        }
        // SAFETY: `ptr` is aligned and valid for `size_of::<Self>()` bytes that live as
        // long as `bytes`; every bit pattern is a `Self` (the trait's contract).
        Some(unsafe { &*ptr })
    }

    /// [`FromBytes::from_bytes`] of the first `size_of::<Self>()` bytes, and the rest.
    fn from_bytes_prefix(bytes: &[u8]) -> Option<(&Self, &[u8])>
    where
        Self: Sized,
    {
        let (head, rest) = bytes.split_at_checked(size_of::<Self>())?;
        Some((Self::from_bytes(head)?, rest))
    }

    /// Returns `bytes` as a mutable `Self`, if they are exactly its size and aligned for
    /// it.
    fn from_bytes_mut(bytes: &mut [u8]) -> Option<&mut Self>
    where
        Self: AsBytes + Sized,
    {
        let ptr = bytes.as_mut_ptr().cast::<Self>();
        if bytes.len() != size_of::<Self>() || !ptr.is_aligned() {
            return None;
        }
        // SAFETY: As in `from_bytes`; and whatever is written through the `Self` leaves
        // initialised bytes behind, since `Self: AsBytes` has no padding.
        Some(unsafe { &mut *ptr })
    }

    /// [`FromBytes::from_bytes_mut`] of the first `size_of::<Self>()` bytes, and the
    /// rest.
    fn from_bytes_mut_prefix(bytes: &mut [u8]) -> Option<(&mut Self, &mut [u8])>
    where
        Self: AsBytes + Sized,
    {
        let (head, rest) = bytes.split_at_mut_checked(size_of::<Self>())?;
        Some((Self::from_bytes_mut(head)?, rest))
    }

    /// Returns a copy of `bytes` as a `Self`, if they are exactly its size; they need not
    /// be aligned.
    fn from_bytes_copy(bytes: &[u8]) -> Option<Self>
    where
        Self: Sized,
    {
        if bytes.len() != size_of::<Self>() {
            return None;
        }
        // SAFETY: `bytes` holds `size_of::<Self>()` readable bytes (checked above), which
        // form a valid `Self` whatever they are (the trait's contract).
        Some(unsafe { core::ptr::read_unaligned(bytes.as_ptr().cast::<Self>()) })
    }

    /// [`FromBytes::from_bytes_copy`] of the first `size_of::<Self>()` bytes, and the
    /// rest.
    fn from_bytes_copy_prefix(bytes: &[u8]) -> Option<(Self, &[u8])>
    where
        Self: Sized,
    {
        let (head, rest) = bytes.split_at_checked(size_of::<Self>())?;
        Some((Self::from_bytes_copy(head)?, rest))
    }
}

/// Types whose every byte is initialised (no padding) and which hold no interior
/// mutability, so they can be viewed as bytes.
///
/// # Safety
///
/// `Self` must have no padding and no interior mutability.
pub unsafe trait AsBytes {
    /// Returns the bytes of `self`.
    fn as_bytes(&self) -> &[u8] {
        let len = core::mem::size_of_val(self);
        // SAFETY: `self` is `len` initialised bytes (the trait's contract), borrowed for
        // as long as the slice.
        unsafe { core::slice::from_raw_parts(core::ptr::from_ref(self).cast::<u8>(), len) }
    }

    /// Returns the bytes of `self`, to write.
    fn as_bytes_mut(&mut self) -> &mut [u8]
    where
        Self: FromBytes,
    {
        let len = core::mem::size_of_val(self);
        // SAFETY: `self` is `len` initialised bytes, borrowed mutably for as long as the
        // slice, and any bytes written form a valid `Self` (`Self: FromBytes`).
        unsafe { core::slice::from_raw_parts_mut(core::ptr::from_mut(self).cast::<u8>(), len) }
    }
}

/// Implements a marker trait for each type of a list, with the list's `SAFETY` comment.
macro_rules! impl_marker {
    ($trait:ident: $($({$($generics:tt)*})? $t:ty),* $(,)?) => {
        // SAFETY: Given at each invocation.
        $(unsafe impl$(<$($generics)*>)? $trait for $t {})*
    };
}

// SAFETY: Every bit pattern is a valid integer; a zero-sized type has one value and no
// invariant; arrays and slices of such values are such values side by side.
impl_marker!(FromBytes:
    (), {T} core::marker::PhantomData<T>,
    u8, u16, u32, u64, usize, i8, i16, i32, i64, isize,
    {T: FromBytes} [T], {T: FromBytes, const N: usize} [T; N],
);

// SAFETY: None of these types has padding or interior mutability, and arrays and slices
// of such values put them side by side with no padding between them.
impl_marker!(AsBytes:
    (), {T} core::marker::PhantomData<T>,
    u8, u16, u32, u64, usize, i8, i16, i32, i64, isize, bool, char, str,
    {T: AsBytes} [T], {T: AsBytes, const N: usize} [T; N],
);
