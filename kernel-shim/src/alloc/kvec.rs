// SPDX-License-Identifier: GPL-2.0

//! [`Vec<T, A>`](Vec): a growable array whose every growth is fallible, and its aliases
//! per allocator.

use core::{
    borrow::{
        Borrow,
        BorrowMut, //
    },
    fmt,
    marker::PhantomData,
    ops::{
        Deref,
        DerefMut,
        Index,
        IndexMut, //
    },
    slice::{
        self,
        SliceIndex, //
    },
};

use super::{
    allocator::{
        KVmalloc,
        Kmalloc,
        Vmalloc, //
    },
    AllocError,
    Allocator,
    Flags, //
};

/// The error of [`Vec::remove`]: the index is out of bounds. It converts to `EINVAL`, as
/// 7.3's (`kvec::errors::RemoveError`).
pub struct RemoveError;

impl fmt::Debug for RemoveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Index out of bounds")
    }
}

impl From<RemoveError> for crate::error::Error {
    #[inline]
    fn from(_: RemoveError) -> Self {
        crate::error::code::EINVAL
    }
}

/// A contiguous growable array of `T` whose memory the type says comes from `A`.
///
/// As in Linux 7.3, every method that may allocate takes [`Flags`] and returns
/// `Result<_, AllocError>`; none aborts. Here the storage is `alloc`'s `Vec`, from the
/// global allocator whatever `A` is, and the flags are not looked at: `A` only keeps
/// [`KVec`], [`VVec`] and [`KVVec`] apart (see [`super`]).
///
/// 7.3's `Vec` has no `Clone` and no `FromIterator` (a `collect` could neither fail nor
/// take flags), and neither has this one: copy with [`Vec::extend_from_slice`].
///
/// # Examples
///
/// ```
/// use kernel::prelude::*;
///
/// let mut v = KVec::with_capacity(2, GFP_KERNEL)?;
/// v.push(1u32, GFP_KERNEL)?;
/// v.extend_from_slice(&[2, 3], GFP_KERNEL)?;
/// assert_eq!(v, [1, 2, 3]);
/// assert_eq!(v.iter().sum::<u32>(), 6);
/// # Ok::<(), Error>(())
/// ```
pub struct Vec<T, A: Allocator> {
    buf: alloc_crate::vec::Vec<T>,
    _alloc: PhantomData<A>,
}

/// A [`Vec`] in [`Kmalloc`] memory.
pub type KVec<T> = Vec<T, Kmalloc>;

/// A [`Vec`] in [`Vmalloc`] memory.
pub type VVec<T> = Vec<T, Vmalloc>;

/// A [`Vec`] in [`KVmalloc`] memory: `kmalloc`'s while it is small enough for it,
/// `vmalloc`'s beyond.
///
/// A type of its own, not a [`KVec`]: it lends itself as a slice as any `Vec` does, but
/// goes only where a `KVVec` is wanted.
///
/// ```
/// use kernel::prelude::*;
///
/// fn send(_: &[u8]) {}
/// fn keep(_: KVVec<u8>) {}
///
/// let mut big = KVVec::new();
/// big.resize(1 << 20, 0u8, GFP_KERNEL)?;
/// send(&big);
/// keep(big);
/// # Ok::<(), Error>(())
/// ```
pub type KVVec<T> = Vec<T, KVmalloc>;

impl<T, A: Allocator> Vec<T, A> {
    /// Creates an empty vector; nothing is allocated until an element is added.
    #[inline]
    pub const fn new() -> Self {
        Self {
            buf: alloc_crate::vec::Vec::new(),
            _alloc: PhantomData,
        }
    }

    /// Creates an empty vector with room for at least `capacity` elements.
    ///
    /// # Errors
    ///
    /// - [`AllocError`] if the memory cannot be had, or `capacity` elements would not fit
    ///   in `isize::MAX` bytes.
    pub fn with_capacity(capacity: usize, flags: Flags) -> Result<Self, AllocError> {
        let mut v = Self::new();
        v.reserve(capacity, flags)?;
        Ok(v)
    }

    /// Returns how many elements the vector holds.
    #[inline]
    pub const fn len(&self) -> usize {
        self.buf.len()
    }

    /// Returns whether the vector holds no element.
    #[inline]
    pub const fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Returns how many elements fit without allocating again (`usize::MAX` for a
    /// zero-sized `T`).
    #[inline]
    pub const fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Makes room for at least `additional` more elements; nothing changes if there is
    /// room already, nor on an error.
    ///
    /// # Errors
    ///
    /// - [`AllocError`] if the memory cannot be had, or the grown vector would exceed
    ///   `usize::MAX` elements or `isize::MAX` bytes.
    pub fn reserve(&mut self, additional: usize, _flags: Flags) -> Result<(), AllocError> {
        // Only a reservation that grows the storage allocates, and may be made to fail.
        if self.buf.capacity() - self.buf.len() < additional && super::inject_failure() {
            return Err(AllocError);
        }
        self.buf.try_reserve(additional).map_err(|_| AllocError)
    }

    /// Appends `v`.
    ///
    /// # Errors
    ///
    /// - [`AllocError`] if the vector is full and cannot grow (see [`Vec::reserve`]); `v`
    ///   is dropped and the vector is unchanged.
    pub fn push(&mut self, v: T, flags: Flags) -> Result<(), AllocError> {
        self.reserve(1, flags)?;
        // The reservation above leaves room for one more: this push does not allocate.
        self.buf.push(v);
        Ok(())
    }

    /// Drops the elements from index `len` on; nothing happens if there are not more than
    /// `len`. The capacity stays.
    pub fn truncate(&mut self, len: usize) {
        self.buf.truncate(len);
    }

    /// Drops every element. The capacity stays.
    #[inline]
    pub fn clear(&mut self) {
        self.buf.clear();
    }

    /// Removes the last element and returns it, or `None` if there is none.
    ///
    /// ```
    /// use kernel::prelude::*;
    ///
    /// let mut v = KVec::new();
    /// v.push(1, GFP_KERNEL)?;
    /// assert_eq!(v.pop(), Some(1));
    /// assert_eq!(v.pop(), None);
    /// # Ok::<(), Error>(())
    /// ```
    #[inline]
    pub fn pop(&mut self) -> Option<T> {
        self.buf.pop()
    }

    /// Removes the element at index `i` and returns it, moving the ones after it down.
    ///
    /// # Errors
    ///
    /// - [`RemoveError`] (`EINVAL` as an [`Error`](crate::error::Error)) if `i` is not
    ///   below the length.
    ///
    /// ```
    /// use kernel::prelude::*;
    ///
    /// let mut v = KVec::new();
    /// v.extend_from_slice(&[1, 2, 3], GFP_KERNEL)?;
    /// assert_eq!(v.remove(1)?, 2);
    /// assert_eq!(v, [1, 3]);
    /// assert!(v.remove(2).is_err());
    /// # Ok::<(), Error>(())
    /// ```
    pub fn remove(&mut self, i: usize) -> Result<T, RemoveError> {
        if i >= self.buf.len() {
            return Err(RemoveError);
        }
        Ok(self.buf.remove(i))
    }

    /// Keeps only the elements for which `f` returns `true`, in their order.
    ///
    /// ```
    /// use kernel::prelude::*;
    ///
    /// let mut v = KVec::new();
    /// v.extend_from_slice(&[1, 2, 3, 4], GFP_KERNEL)?;
    /// v.retain(|i| *i % 2 == 0);
    /// assert_eq!(v, [2, 4]);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn retain(&mut self, f: impl FnMut(&mut T) -> bool) {
        self.buf.retain_mut(f);
    }

    /// Returns the elements as a slice.
    ///
    /// ```
    /// use kernel::prelude::*;
    ///
    /// let mut v = KVec::new();
    /// v.push(1, GFP_KERNEL)?;
    /// v.push(2, GFP_KERNEL)?;
    /// assert_eq!(v.as_slice(), &[1, 2]);
    /// # Ok::<(), Error>(())
    /// ```
    #[inline]
    pub fn as_slice(&self) -> &[T] {
        self
    }

    /// Returns the elements as a mutable slice.
    ///
    /// ```
    /// use kernel::prelude::*;
    ///
    /// let mut v = KVVec::from_elem(0u8, 3, GFP_KERNEL)?;
    /// v.as_mut_slice()[1] = 7;
    /// assert_eq!(v.as_slice(), &[0, 7, 0]);
    /// # Ok::<(), Error>(())
    /// ```
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        self
    }
}

impl<T: Clone, A: Allocator> Vec<T, A> {
    /// Appends a clone of each element of `other`, in order.
    ///
    /// # Errors
    ///
    /// - [`AllocError`] if the vector cannot grow by `other.len()` (see [`Vec::reserve`]);
    ///   the vector is unchanged.
    pub fn extend_from_slice(&mut self, other: &[T], flags: Flags) -> Result<(), AllocError> {
        self.reserve(other.len(), flags)?;
        // Room is reserved for all of `other`: this does not allocate.
        self.buf.extend_from_slice(other);
        Ok(())
    }

    /// Makes the length `new_len`: drops the elements beyond it, or appends clones of
    /// `value` up to it.
    ///
    /// # Errors
    ///
    /// - [`AllocError`] if the vector cannot grow to `new_len` (see [`Vec::reserve`]); the
    ///   vector is unchanged.
    pub fn resize(&mut self, new_len: usize, value: T, flags: Flags) -> Result<(), AllocError> {
        self.reserve(new_len.saturating_sub(self.len()), flags)?;
        // Room is reserved for `new_len` elements: this does not allocate.
        self.buf.resize(new_len, value);
        Ok(())
    }

    /// Appends `n` clones of `value` (none if `n` is zero).
    ///
    /// # Errors
    ///
    /// - [`AllocError`] if the vector cannot grow by `n` (see [`Vec::reserve`]); the
    ///   vector is unchanged.
    ///
    /// ```
    /// use kernel::prelude::*;
    ///
    /// let mut v = KVec::new();
    /// v.push(1, GFP_KERNEL)?;
    /// v.extend_with(3, 5, GFP_KERNEL)?;
    /// v.extend_with(0, 9, GFP_KERNEL)?;
    /// assert_eq!(v, [1, 5, 5, 5]);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn extend_with(&mut self, n: usize, value: T, flags: Flags) -> Result<(), AllocError> {
        self.reserve(n, flags)?;
        // Room is reserved for `n` more: this does not allocate.
        self.buf.resize(self.buf.len() + n, value);
        Ok(())
    }

    /// Creates a vector of `n` clones of `value`.
    ///
    /// # Errors
    ///
    /// - [`AllocError`] if the memory for `n` elements cannot be had.
    ///
    /// ```
    /// use kernel::prelude::*;
    ///
    /// let v = KVVec::from_elem(0xa5u8, 4, GFP_KERNEL)?;
    /// assert_eq!(v, [0xa5; 4]);
    /// assert!(KVVec::<u8>::from_elem(0, 0, GFP_KERNEL)?.is_empty());
    /// # Ok::<(), Error>(())
    /// ```
    pub fn from_elem(value: T, n: usize, flags: Flags) -> Result<Self, AllocError> {
        let mut v = Self::with_capacity(n, flags)?;
        v.extend_with(n, value, flags)?;
        Ok(v)
    }
}

impl<T, A: Allocator> Default for Vec<T, A> {
    fn default() -> Self {
        Self::new()
    }
}

/// Prints the elements, as a slice prints.
impl<T: fmt::Debug, A: Allocator> fmt::Debug for Vec<T, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.buf[..], f)
    }
}

impl<T, A: Allocator> Deref for Vec<T, A> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        &self.buf
    }
}

impl<T, A: Allocator> DerefMut for Vec<T, A> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.buf
    }
}

impl<T, A: Allocator> Borrow<[T]> for Vec<T, A> {
    fn borrow(&self) -> &[T] {
        self
    }
}

impl<T, A: Allocator> BorrowMut<[T]> for Vec<T, A> {
    fn borrow_mut(&mut self) -> &mut [T] {
        self
    }
}

impl<T, I: SliceIndex<[T]>, A: Allocator> Index<I> for Vec<T, A> {
    type Output = I::Output;

    #[inline]
    fn index(&self, index: I) -> &I::Output {
        &self.buf[index]
    }
}

impl<T, I: SliceIndex<[T]>, A: Allocator> IndexMut<I> for Vec<T, A> {
    #[inline]
    fn index_mut(&mut self, index: I) -> &mut I::Output {
        &mut self.buf[index]
    }
}

/// Element-wise comparisons of a [`Vec`] with another of any allocator, with slices and
/// with arrays, both ways round where 7.3 has them.
macro_rules! eq_by_elements {
    ($(<$($param:ident $(: $bound:path)?),*> $lhs:ty, $rhs:ty;)*) => {
        $(
            impl<T: PartialEq<U>, U, $($param $(: $bound)?),*> PartialEq<$rhs> for $lhs {
                #[inline]
                fn eq(&self, other: &$rhs) -> bool {
                    self[..] == other[..]
                }
            }
        )*
    };
}

eq_by_elements! {
    <A: Allocator, B: Allocator> Vec<T, A>, Vec<U, B>;
    <A: Allocator> Vec<T, A>, [U];
    <A: Allocator> Vec<T, A>, &[U];
    <A: Allocator> Vec<T, A>, &mut [U];
    <A: Allocator> [T], Vec<U, A>;
    <A: Allocator> &[T], Vec<U, A>;
    <A: Allocator> &mut [T], Vec<U, A>;
}

impl<T: PartialEq<U>, U, A: Allocator, const N: usize> PartialEq<[U; N]> for Vec<T, A> {
    #[inline]
    fn eq(&self, other: &[U; N]) -> bool {
        self[..] == other[..]
    }
}

impl<T: PartialEq<U>, U, A: Allocator, const N: usize> PartialEq<&[U; N]> for Vec<T, A> {
    #[inline]
    fn eq(&self, other: &&[U; N]) -> bool {
        self[..] == other[..]
    }
}

impl<T: Eq, A: Allocator> Eq for Vec<T, A> {}

impl<'a, T, A: Allocator> IntoIterator for &'a Vec<T, A> {
    type Item = &'a T;
    type IntoIter = slice::Iter<'a, T>;

    fn into_iter(self) -> slice::Iter<'a, T> {
        self.iter()
    }
}

impl<'a, T, A: Allocator> IntoIterator for &'a mut Vec<T, A> {
    type Item = &'a mut T;
    type IntoIter = slice::IterMut<'a, T>;

    fn into_iter(self) -> slice::IterMut<'a, T> {
        self.iter_mut()
    }
}

impl<T, A: Allocator> IntoIterator for Vec<T, A> {
    type Item = T;
    type IntoIter = IntoIter<T, A>;

    /// Moves the elements out, first to last.
    fn into_iter(self) -> IntoIter<T, A> {
        IntoIter {
            iter: self.buf.into_iter(),
            _alloc: PhantomData,
        }
    }
}

/// The iterator [`Vec::into_iter`] gives: it moves the elements out, first to last, and
/// frees the buffer when dropped.
///
/// 7.3's also has `collect(self, flags)`, back into a `Vec` in the same buffer; this one
/// has not, until something needs it.
pub struct IntoIter<T, A: Allocator> {
    iter: alloc_crate::vec::IntoIter<T>,
    _alloc: PhantomData<A>,
}

impl<T, A: Allocator> Iterator for IntoIter<T, A> {
    type Item = T;

    #[inline]
    fn next(&mut self) -> Option<T> {
        self.iter.next()
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.iter.size_hint()
    }
}
