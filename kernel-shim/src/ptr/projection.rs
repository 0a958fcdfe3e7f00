// SPDX-License-Identifier: GPL-2.0

//! The machinery of [`project!`](crate::ptr::project): field and index projections of raw
//! pointers, which never dereference the pointer they start from.

use core::ops::{
    Deref,
    Range,
    RangeFrom,
    RangeFull,
    RangeTo, //
};

use crate::error::{
    code::ERANGE,
    Error, //
};

/// An index projection that left its array or slice (`[try: index]`); converts to
/// `ERANGE`.
#[derive(Debug)]
pub struct OutOfBound;

impl From<OutOfBound> for Error {
    #[inline(always)]
    fn from(_: OutOfBound) -> Self {
        ERANGE
    }
}

/// An index (`usize` or a range) that projects a pointer to `T` without dereferencing it.
///
/// # Safety
///
/// Every pointer an implementation returns is derived from the pointer it was given and
/// lies, with its whole size, inside the `KnownSize::size` bytes that pointer covers.
#[doc(hidden)]
pub unsafe trait ProjectIndex<T: ?Sized>: Sized {
    /// What the projection points to.
    type Output: ?Sized;

    /// The projected pointer, or `None` if the index is out of bounds.
    fn get(self, base: *mut T) -> Option<*mut Self::Output>;

    /// The projected pointer.
    ///
    /// # Panics
    ///
    /// If the index is out of bounds.
    #[track_caller]
    #[inline(always)]
    fn index(self, base: *mut T) -> *mut Self::Output {
        match self.get(base) {
            Some(p) => p,
            // PANIC: the `panic:` flavour's documented behaviour.
            None => panic!("index projection out of bounds"),
        }
    }

    /// The projected pointer, for the `build:` flavour.
    ///
    /// Linux fails the build when the index cannot be proven in bounds; this crate has no
    /// `build_error`, so an out-of-bounds index panics when the projection runs.
    #[track_caller]
    #[inline(always)]
    fn build_index(self, base: *mut T) -> *mut Self::Output {
        self.index(base)
    }
}

// SAFETY: `p.add(self)` is inside the slice when `self < p.len()`.
unsafe impl<T> ProjectIndex<[T]> for usize {
    type Output = T;

    #[inline(always)]
    fn get(self, base: *mut [T]) -> Option<*mut T> {
        if self >= base.len() {
            return None;
        }
        Some(base.cast::<T>().wrapping_add(self))
    }
}

// SAFETY: the sub-slice starts at `start` and ends at `end <= len`.
unsafe impl<T> ProjectIndex<[T]> for Range<usize> {
    type Output = [T];

    #[inline(always)]
    fn get(self, base: *mut [T]) -> Option<*mut [T]> {
        if self.start > self.end || self.end > base.len() {
            return None;
        }
        Some(core::ptr::slice_from_raw_parts_mut(
            base.cast::<T>().wrapping_add(self.start),
            self.end - self.start,
        ))
    }
}

// SAFETY: forwarded to `Range`.
unsafe impl<T> ProjectIndex<[T]> for RangeTo<usize> {
    type Output = [T];

    #[inline(always)]
    fn get(self, base: *mut [T]) -> Option<*mut [T]> {
        (0..self.end).get(base)
    }
}

// SAFETY: forwarded to `Range`.
unsafe impl<T> ProjectIndex<[T]> for RangeFrom<usize> {
    type Output = [T];

    #[inline(always)]
    fn get(self, base: *mut [T]) -> Option<*mut [T]> {
        (self.start..base.len()).get(base)
    }
}

// SAFETY: the whole slice.
unsafe impl<T> ProjectIndex<[T]> for RangeFull {
    type Output = [T];

    #[inline(always)]
    fn get(self, base: *mut [T]) -> Option<*mut [T]> {
        Some(base)
    }
}

// SAFETY: an array is laid out as the slice of its `N` elements, and the slice's
// implementation keeps its promise.
unsafe impl<T, I, const N: usize> ProjectIndex<[T; N]> for I
where
    I: ProjectIndex<[T]>,
{
    type Output = <I as ProjectIndex<[T]>>::Output;

    #[inline(always)]
    fn get(self, base: *mut [T; N]) -> Option<*mut Self::Output> {
        self.get(core::ptr::slice_from_raw_parts_mut(base.cast::<T>(), N))
    }
}

/// Field projection that refuses types with a `Deref`: `(*p).field` on such a type could
/// silently go through `deref()`, reading memory the projection must not touch.
///
/// Both implementations apply to a type with `Deref`, so the compiler cannot choose `DEREF`
/// and the projection does not build; for any other type only `DEREF = false` applies.
///
/// # Safety
///
/// `proj` returns what `f` returns, and `f` must return a pointer to a field of `*base`.
#[doc(hidden)]
pub unsafe trait ProjectField<const DEREF: bool> {
    /// Applies the field projection `f` to `base`.
    ///
    /// # Safety
    ///
    /// `f` must return a pointer to a field of `*base`, derived from `base`.
    unsafe fn proj<F: ?Sized>(base: *mut Self, f: impl FnOnce(*mut Self) -> *mut F) -> *mut F;
}

// SAFETY: `proj` returns `f(base)`.
unsafe impl<T> ProjectField<false> for T {
    #[inline(always)]
    unsafe fn proj<F: ?Sized>(base: *mut Self, f: impl FnOnce(*mut Self) -> *mut F) -> *mut F {
        f(base)
    }
}

// SAFETY: never chosen by inference (see the trait's documentation); `proj` returns
// `f(base)` all the same.
unsafe impl<T: Deref> ProjectField<true> for T {
    #[inline(always)]
    unsafe fn proj<F: ?Sized>(base: *mut Self, f: impl FnOnce(*mut Self) -> *mut F) -> *mut F {
        f(base)
    }
}

/// Projects a raw pointer to one of its fields or elements, without dereferencing it.
///
/// `project!(ptr, .a.b[try: i].c)` gives `*const` (`project!(mut ptr, ...)` gives
/// `*mut`). Fields are `.name` (or `.0` of a tuple struct); indices of arrays and slices
/// are `[try: i]` (returns `Err(OutOfBound)`, which `?` turns into `ERANGE`, from the
/// enclosing function), `[panic: i]` (panics when out of bounds) or `[build: i]` (Linux
/// fails the build when it cannot prove the index in bounds; here it panics). An index is
/// a `usize` or a range. Fields of packed structs and types with `Deref` are refused.
///
/// ```
/// use kernel::ptr::project;
/// #[repr(C)]
/// struct Slot { head: u32, body: [u8; 8] }
/// # fn f() -> kernel::error::Result {
/// let slots: *const [Slot; 4] = core::ptr::dangling();
/// let body: *const u8 = project!(slots, [try: 2].body[panic: 7]);
/// assert_eq!(body as usize - slots as usize, 2 * 12 + 4 + 7);
/// assert!((|| -> kernel::error::Result<*const Slot> { Ok(project!(slots, [try: 4])) })().is_err());
/// # Ok(()) }
/// # f().unwrap();
/// ```
#[macro_export]
#[doc(hidden)]
macro_rules! project_pointer {
    (@step $p:ident,) => {};
    (@step $p:ident, .$field:tt $($rest:tt)*) => {
        // SAFETY: the closure returns a pointer to a field of `*p`, derived from `p`, and
        // dereferences nothing (`&raw mut` of a place does not read it).
        let $p = unsafe {
            $crate::ptr::projection::ProjectField::proj($p, |p| {
                // Refuses a field of a packed struct: a reference to it does not build,
                // and a device cannot be handed an unaligned field.
                if false {
                    let _ = &(*p).$field;
                }
                &raw mut (*p).$field
            })
        };
        $crate::project_pointer!(@step $p, $($rest)*)
    };
    (@step $p:ident, [try: $index:expr] $($rest:tt)*) => {
        let $p = $crate::ptr::projection::ProjectIndex::get($index, $p)
            .ok_or($crate::ptr::projection::OutOfBound)?;
        $crate::project_pointer!(@step $p, $($rest)*)
    };
    (@step $p:ident, [panic: $index:expr] $($rest:tt)*) => {
        let $p = $crate::ptr::projection::ProjectIndex::index($index, $p);
        $crate::project_pointer!(@step $p, $($rest)*)
    };
    (@step $p:ident, [build: $index:expr] $($rest:tt)*) => {
        let $p = $crate::ptr::projection::ProjectIndex::build_index($index, $p);
        $crate::project_pointer!(@step $p, $($rest)*)
    };
    (mut $base:expr, $($proj:tt)*) => {{
        let p: *mut _ = $base;
        $crate::project_pointer!(@step p, $($proj)*);
        p
    }};
    ($base:expr, $($proj:tt)*) => {{
        let p = <*const _>::cast_mut($base);
        $crate::project_pointer!(@step p, $($proj)*);
        p.cast_const()
    }};
}
