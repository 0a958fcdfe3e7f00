// SPDX-License-Identifier: GPL-2.0

//! Fallible allocation: [`KBox`] and [`KVec`] with GFP flags, as upstream.
//!
//! The storage comes from the global allocator of the environment (the host's on the
//! host, `kmalloc` in the kernel); every allocation is fallible and reports
//! [`AllocError`] instead of aborting.

use alloc_crate::{
    boxed::Box,
    vec::Vec, //
};
use core::ops::{
    Deref,
    DerefMut, //
};

/// Allocation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocError;

/// Flags for an allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flags(u32);

/// The allocation flags upstream defines.
pub mod flags {
    use super::Flags;

    /// Normal allocation that may sleep.
    pub const GFP_KERNEL: Flags = Flags(0);
    /// Allocation that must not sleep.
    pub const GFP_ATOMIC: Flags = Flags(1);
    /// Return zeroed memory.
    pub const __GFP_ZERO: Flags = Flags(2);
}

/// A vector whose growth is fallible.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct KVec<T>(Vec<T>);

impl<T> KVec<T> {
    /// Creates an empty vector without allocating.
    pub const fn new() -> Self {
        Self(Vec::new())
    }

    /// Creates an empty vector with room for `capacity` elements.
    ///
    /// # Errors
    ///
    /// - [`AllocError`] if the memory cannot be had.
    pub fn with_capacity(capacity: usize, flags: Flags) -> Result<Self, AllocError> {
        let mut v = Self::new();
        v.reserve(capacity, flags)?;
        Ok(v)
    }

    /// Makes room for `additional` more elements.
    ///
    /// # Errors
    ///
    /// - [`AllocError`] if the memory cannot be had.
    pub fn reserve(&mut self, additional: usize, _flags: Flags) -> Result<(), AllocError> {
        self.0.try_reserve(additional).map_err(|_| AllocError)
    }

    /// Appends `value`.
    ///
    /// # Errors
    ///
    /// - [`AllocError`] if the memory cannot be had.
    pub fn push(&mut self, value: T, flags: Flags) -> Result<(), AllocError> {
        self.reserve(1, flags)?;
        self.0.push(value);
        Ok(())
    }

    /// Shortens the vector to `len` elements.
    pub fn truncate(&mut self, len: usize) {
        self.0.truncate(len);
    }

    /// Removes every element.
    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// Returns the number of elements that fit without reallocating.
    pub fn capacity(&self) -> usize {
        self.0.capacity()
    }
}

impl<T: Clone> KVec<T> {
    /// Appends a copy of every element of `other`.
    ///
    /// # Errors
    ///
    /// - [`AllocError`] if the memory cannot be had.
    pub fn extend_from_slice(&mut self, other: &[T], flags: Flags) -> Result<(), AllocError> {
        self.reserve(other.len(), flags)?;
        self.0.extend_from_slice(other);
        Ok(())
    }

    /// Resizes to `len` elements, filling new ones with `value`.
    ///
    /// # Errors
    ///
    /// - [`AllocError`] if the memory cannot be had.
    pub fn resize(&mut self, len: usize, value: T, flags: Flags) -> Result<(), AllocError> {
        self.reserve(len.saturating_sub(self.0.len()), flags)?;
        self.0.resize(len, value);
        Ok(())
    }
}

impl<T> Deref for KVec<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        &self.0
    }
}

impl<T> DerefMut for KVec<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.0
    }
}

/// A box whose allocation is fallible.
pub type KBox<T> = Box<T>;

/// A vector that may live in `vmalloc` memory when large, as upstream's `KVVec`: the host
/// has one allocator, so it is a [`KVec`].
pub type KVVec<T> = KVec<T>;

impl core::ops::BitOr for Flags {
    type Output = Self;

    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

impl From<AllocError> for crate::error::Error {
    fn from(_: AllocError) -> Self {
        crate::error::code::ENOMEM
    }
}
