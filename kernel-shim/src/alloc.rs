// SPDX-License-Identifier: GPL-2.0

//! Fallible allocation under Linux 7.3's names: [`Vec<T, A>`](Vec) and
//! [`Box<T, A>`](Box), generic over an [`Allocator`], with their aliases per allocator
//! ([`KVec`], [`VVec`], [`KVVec`]; [`KBox`], [`VBox`], [`KVBox`]) and the GFP [`flags`].
//!
//! Every allocation is fallible: growth goes through `try_reserve` or the allocator's own
//! null return, and a failure is an [`AllocError`] (`ENOMEM` as an [`Error`]), never an
//! abort.
//!
//! # One allocator here, three in a kernel
//!
//! In a kernel, [`Kmalloc`], [`Vmalloc`] and [`KVmalloc`] are three allocators with their
//! own limits, and the allocator is a type parameter so that memory goes back to the
//! allocator it came from. This crate has one: the storage of every `Vec` and `Box` is
//! `alloc`'s, from the environment's global allocator, whichever allocator its type names,
//! and the flags are not looked at. The parameter is kept all the same, so that, as in a
//! kernel, a [`KVVec<T>`] is not a [`KVec<T>`] nor a [`KBox<T>`] a [`VBox<T>`]: code that
//! mixes them fails to build here as it would there.
//!
//! # Failure injection
//!
//! Every allocation of a `Vec` or a `Box` first asks whether it is to fail: on the host a
//! test may make a chosen one fail (`kernel::host::failslab`, the kernel's `fail-nth`); in
//! every other build none does.
//!
//! [`Error`]: crate::error::Error
//! [`Kmalloc`]: allocator::Kmalloc
//! [`Vmalloc`]: allocator::Vmalloc
//! [`KVmalloc`]: allocator::KVmalloc

pub mod allocator;
pub mod kbox;
pub mod kvec;

pub use self::{
    kbox::{
        Box,
        KBox,
        KVBox,
        VBox, //
    },
    kvec::{
        IntoIter,
        KVVec,
        KVec,
        VVec,
        Vec, //
    },
};

/// Returns whether the allocation about to be made is to fail: one a test armed on this
/// thread with [`crate::host::failslab::fail_nth`] on the host, none otherwise.
#[inline]
pub(crate) fn inject_failure() -> bool {
    crate::backend::alloc_fails()
}

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

impl core::ops::BitOr for Flags {
    type Output = Self;

    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

/// An allocator: what the `A` of [`Vec<T, A>`](Vec) and [`Box<T, A>`](Box) names.
///
/// Sealed, and implemented by [`Kmalloc`](allocator::Kmalloc),
/// [`Vmalloc`](allocator::Vmalloc) and [`KVmalloc`](allocator::KVmalloc) only. 7.3's is an
/// `unsafe trait` whose implementors allocate (`MIN_ALIGN`, `alloc`, `realloc`, `free`,
/// with a NUMA node); this crate's containers keep their storage in `alloc`'s types, so
/// here the trait only tells the allocators apart (see the [module docs](self)). A bound
/// `A: Allocator` builds under both; a call of `A::alloc` builds only in a kernel.
pub trait Allocator: private::Sealed {}

impl Allocator for allocator::Kmalloc {}
impl Allocator for allocator::Vmalloc {}
impl Allocator for allocator::KVmalloc {}

mod private {
    use super::allocator::{
        KVmalloc,
        Kmalloc,
        Vmalloc, //
    };

    /// Keeps [`super::Allocator`] to this crate's three allocators.
    pub trait Sealed {}

    impl Sealed for Kmalloc {}
    impl Sealed for Vmalloc {}
    impl Sealed for KVmalloc {}
}

impl From<AllocError> for crate::error::Error {
    fn from(_: AllocError) -> Self {
        crate::error::code::ENOMEM
    }
}
