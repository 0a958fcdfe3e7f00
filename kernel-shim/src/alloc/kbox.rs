// SPDX-License-Identifier: GPL-2.0

//! [`Box<T, A>`](Box): one value on the heap, allocated fallibly, and its aliases per
//! allocator.

use alloc_crate::boxed::Box as HeapBox;
use core::{
    alloc::Layout,
    marker::PhantomData,
    mem::MaybeUninit,
    ops::{
        Deref,
        DerefMut, //
    },
    pin::Pin, //
};

// 7.3's: `Display` is the kernel's, for a value that has it.
use crate::fmt;

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

/// An owned value of type `T` on the heap, in memory the type says comes from `A`.
///
/// As in Linux 7.3, making one takes [`Flags`] and returns `Result<_, AllocError>`
/// ([`Box::new`], [`Box::new_uninit`], [`Box::pin`]); none aborts. Here the storage is
/// `alloc`'s `Box`, from the global allocator whatever `A` is, and the flags are not looked
/// at: `A` only keeps [`KBox`], [`VBox`] and [`KVBox`] apart (see [`super`]).
///
/// Unlike 7.3's, a `Box<T, A>` does not coerce to a `Box<dyn Trait, A>`: 7.3 derives
/// `CoercePointee`, which stable Rust does not have yet.
///
/// # Examples
///
/// ```
/// use kernel::prelude::*;
///
/// let mut b = KBox::new(24u64, GFP_KERNEL)?;
/// *b += 1;
/// assert_eq!(*b, 25);
/// # Ok::<(), Error>(())
/// ```
#[repr(transparent)]
pub struct Box<T: ?Sized, A: Allocator>(HeapBox<T>, PhantomData<A>);

/// A [`Box`] in [`Kmalloc`] memory.
pub type KBox<T> = Box<T, Kmalloc>;

/// A [`Box`] in [`Vmalloc`] memory.
pub type VBox<T> = Box<T, Vmalloc>;

/// A [`Box`] in [`KVmalloc`] memory: `kmalloc`'s if it fits there, `vmalloc`'s if not.
pub type KVBox<T> = Box<T, KVmalloc>;

impl<T: ?Sized, A: Allocator> Box<T, A> {
    /// Takes back the box that [`Box::into_raw`] gave up.
    ///
    /// Not `const`, as 7.3's is: `alloc`'s `Box::from_raw`, under it, is not.
    ///
    /// # Safety
    ///
    /// `raw` must come from [`Box::into_raw`] of a `Box<T, A>` (the same `A`), and no other
    /// `Box` may have been made from it since: the new box owns the value and its memory.
    #[inline]
    pub unsafe fn from_raw(raw: *mut T) -> Self {
        // SAFETY: By the caller's guarantee `raw` is what `HeapBox::into_raw` gave for a
        // box whose ownership nothing else has taken back: the allocation of a `T` from
        // the global allocator with `T`'s layout (or a dangling, aligned pointer for a
        // zero-sized `T`), holding a valid `T`.
        Self(unsafe { HeapBox::from_raw(raw) }, PhantomData)
    }

    /// Gives up the box: the value is neither dropped nor freed, and the pointer returned
    /// to it is for [`Box::from_raw`] to take back.
    #[inline]
    pub fn into_raw(b: Self) -> *mut T {
        HeapBox::into_raw(b.0)
    }
}

impl<T, A: Allocator> Box<T, A> {
    /// Moves `x` to the heap.
    ///
    /// # Errors
    ///
    /// - [`AllocError`] if the memory cannot be had; `x` is dropped.
    pub fn new(x: T, flags: Flags) -> Result<Self, AllocError> {
        Ok(Self::new_uninit(flags)?.write(x))
    }

    /// Allocates room for a `T` on the heap and leaves it uninitialised; a zero-sized `T`
    /// allocates nothing.
    ///
    /// # Errors
    ///
    /// - [`AllocError`] if the memory cannot be had.
    pub fn new_uninit(_flags: Flags) -> Result<Box<MaybeUninit<T>, A>, AllocError> {
        let layout = Layout::new::<MaybeUninit<T>>();
        if layout.size() == 0 {
            // A zero-sized value takes no memory: this allocates nothing and cannot fail.
            return Ok(Box(HeapBox::new(MaybeUninit::uninit()), PhantomData));
        }
        if super::inject_failure() {
            return Err(AllocError);
        }
        // SAFETY: `layout` is not zero-sized.
        let raw = unsafe { alloc_crate::alloc::alloc(layout) }.cast::<MaybeUninit<T>>();
        if raw.is_null() {
            return Err(AllocError);
        }
        // SAFETY: `raw` is a live allocation from the global allocator with the layout of
        // `MaybeUninit<T>`, which is how `HeapBox` frees it, and owned by nothing else;
        // uninitialised memory is a valid `MaybeUninit<T>`.
        Ok(Box(unsafe { HeapBox::from_raw(raw) }, PhantomData))
    }

    /// Moves `x` to the heap and pins it there: it will not move again until it is
    /// dropped.
    ///
    /// # Errors
    ///
    /// - [`AllocError`] if the memory cannot be had; `x` is dropped.
    #[inline]
    pub fn pin(x: T, flags: Flags) -> Result<Pin<Box<T, A>>, AllocError>
    where
        A: 'static,
    {
        Ok(Self::new(x, flags)?.into())
    }
}

impl<T, A: Allocator> Box<MaybeUninit<T>, A> {
    /// Treats the value as initialised.
    ///
    /// # Safety
    ///
    /// The value must be initialised.
    pub unsafe fn assume_init(self) -> Box<T, A> {
        // SAFETY: The caller guarantees that the value is initialised.
        Box(unsafe { self.0.assume_init() }, PhantomData)
    }

    /// Initialises the value with `value`.
    pub fn write(mut self, value: T) -> Box<T, A> {
        (*self.0).write(value);
        // SAFETY: The line above initialised the value.
        unsafe { self.assume_init() }
    }
}

/// Pins the boxed value where it is on the heap, without moving or allocating.
impl<T: ?Sized, A: Allocator> From<Box<T, A>> for Pin<Box<T, A>> {
    fn from(b: Box<T, A>) -> Self {
        // SAFETY: The value lives in the heap allocation the box owns: moving the box moves
        // the pointer, not the value, and `Deref`/`DerefMut` only lend references to it.
        // Nothing moves the value out once the box is pinned; it is dropped in place and
        // freed when the box is.
        unsafe { Pin::new_unchecked(b) }
    }
}

impl<T: ?Sized, A: Allocator> Deref for Box<T, A> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: ?Sized, A: Allocator> DerefMut for Box<T, A> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

/// Prints the value, as the value prints.
impl<T: ?Sized + fmt::Debug, A: Allocator> fmt::Debug for Box<T, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

/// Prints the value, as the value prints.
impl<T: ?Sized + fmt::Display, A: Allocator> fmt::Display for Box<T, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}
