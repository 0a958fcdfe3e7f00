// SPDX-License-Identifier: GPL-2.0

//! Owned references to reference-counted objects, as Linux 7.3's `kernel::sync::aref`:
//! an [`ARef<T>`] holds one count of a `T` that is [`AlwaysRefCounted`], and gives it
//! back when dropped.
//!
//! ```
//! use core::{
//!     cell::Cell,
//!     ptr::NonNull, //
//! };
//! use kernel::sync::aref::{
//!     ARef,
//!     AlwaysRefCounted, //
//! };
//!
//! struct Counted(Cell<usize>);
//!
//! // SAFETY: the object below is a local that outlives every `ARef` made of it, and
//! // `dec_ref` only decrements.
//! unsafe impl AlwaysRefCounted for Counted {
//!     fn inc_ref(&self) {
//!         self.0.set(self.0.get() + 1);
//!     }
//!
//!     unsafe fn dec_ref(obj: NonNull<Self>) {
//!         // SAFETY: the caller gives back a count, so `obj` is still valid.
//!         let obj = unsafe { obj.as_ref() };
//!         obj.0.set(obj.0.get() - 1);
//!     }
//! }
//!
//! let obj = Counted(Cell::new(1));
//! let a = ARef::from(&obj);
//! let b = a.clone();
//! assert_eq!(obj.0.get(), 3);
//! drop((a, b));
//! assert_eq!(obj.0.get(), 1);
//! ```
//!
//! 7.3's `ARef` is also `ForeignOwnable`, which this crate does not have.

use core::{
    marker::PhantomData,
    mem::ManuallyDrop,
    ops::Deref,
    ptr::NonNull, //
};

/// Objects whose lifetime a reference count keeps: any `&Self` can take a count, and the
/// object lives until every count is given back.
///
/// # Safety
///
/// An object must stay valid from [`AlwaysRefCounted::inc_ref`] until the matching
/// [`AlwaysRefCounted::dec_ref`], whoever else referred to it.
pub unsafe trait AlwaysRefCounted {
    /// Takes a count of the object.
    fn inc_ref(&self);

    /// Gives back a count of the object, which may then be freed.
    ///
    /// # Safety
    ///
    /// The caller gives back a count it took (it must not use `obj` afterwards through
    /// that count).
    unsafe fn dec_ref(obj: NonNull<Self>);
}

/// An owned count of a reference-counted `T`: derefs to the `T`, clones by taking another
/// count, gives its count back when dropped.
///
/// # Invariants
///
/// `ptr` is valid, and this value owns one count of it.
pub struct ARef<T: AlwaysRefCounted> {
    ptr: NonNull<T>,
    _p: PhantomData<T>,
}

// SAFETY: sending an `ARef<T>` shares the `T` (so `T: Sync`) and may end up dropping it on
// the other thread (so `T: Send`), as in 7.3.
unsafe impl<T: AlwaysRefCounted + Sync + Send> Send for ARef<T> {}

// SAFETY: a `&ARef<T>` on another thread shares the `T` and can be cloned into an `ARef<T>`
// there (so `T: Sync + Send`), as in 7.3.
unsafe impl<T: AlwaysRefCounted + Sync + Send> Sync for ARef<T> {}

// The pointer moves, not the `T`.
impl<T: AlwaysRefCounted> Unpin for ARef<T> {}

impl<T: AlwaysRefCounted> ARef<T> {
    /// Takes over a count of `ptr` that the caller owns.
    ///
    /// # Safety
    ///
    /// `ptr` is valid, and the caller owns a count of it, which the new `ARef` gives back.
    pub unsafe fn from_raw(ptr: NonNull<T>) -> Self {
        // INVARIANT: the caller hands over its count of a valid object.
        Self {
            ptr,
            _p: PhantomData,
        }
    }

    /// Returns the pointer, keeping its count: the caller now owns it (see
    /// [`ARef::from_raw`]).
    pub fn into_raw(me: Self) -> NonNull<T> {
        ManuallyDrop::new(me).ptr
    }
}

impl<T: AlwaysRefCounted> Clone for ARef<T> {
    fn clone(&self) -> Self {
        self.inc_ref();
        // SAFETY: the count was just taken, and `self.ptr` is valid (type invariant).
        unsafe { Self::from_raw(self.ptr) }
    }
}

impl<T: AlwaysRefCounted> Deref for ARef<T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: the count this value owns keeps the object valid (type invariant).
        unsafe { self.ptr.as_ref() }
    }
}

impl<T: AlwaysRefCounted> From<&T> for ARef<T> {
    fn from(b: &T) -> Self {
        b.inc_ref();
        // SAFETY: the count was just taken of the object `b` refers to.
        unsafe { Self::from_raw(NonNull::from(b)) }
    }
}

impl<T: AlwaysRefCounted> Drop for ARef<T> {
    fn drop(&mut self) {
        // SAFETY: this value owns a count (type invariant) and is not used again.
        unsafe { T::dec_ref(self.ptr) };
    }
}

impl<T, U> PartialEq<ARef<U>> for ARef<T>
where
    T: AlwaysRefCounted + PartialEq<U>,
    U: AlwaysRefCounted,
{
    #[inline]
    fn eq(&self, other: &ARef<U>) -> bool {
        T::eq(&**self, &**other)
    }
}

impl<T: AlwaysRefCounted + Eq> Eq for ARef<T> {}

impl<T, U> PartialEq<&'_ U> for ARef<T>
where
    T: AlwaysRefCounted + PartialEq<U>,
{
    #[inline]
    fn eq(&self, other: &&U) -> bool {
        T::eq(&**self, other)
    }
}
