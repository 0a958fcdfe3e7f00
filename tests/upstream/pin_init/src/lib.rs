// SPDX-License-Identifier: GPL-2.0

//! The crate name `pin_init` over crates.io's `pinned-init` 0.0.10, which is the same
//! project's code under its older name: everything of it is re-exported, and the functions
//! Linux 7.3's `pin_init` has and 0.0.10 lacks are added here, with 7.3's signatures and
//! semantics.
//!
//! The attribute and derive macros still expand to `::pinned_init::` paths, so a crate
//! using them depends on `pinned-init` as well.

#![no_std]

pub use pinned_init::*;

/// Returns an initializer that first runs `make_init` and then the pinned initializer it
/// returns; an `Err` from `make_init` fails the initializer with the slot untouched.
///
/// As 7.3's `pin_init::pin_init_scope`.
#[inline]
pub fn pin_init_scope<T, E, F, I>(make_init: F) -> impl PinInit<T, E>
where
    F: FnOnce() -> Result<I, E>,
    I: PinInit<T, E>,
{
    let run = move |slot: *mut T| -> Result<(), E> {
        let init = make_init()?;
        // SAFETY: `slot` is what the caller of the outer initializer gave, valid for a `T`
        // and pinned (the contract of `PinInit::__pinned_init`, passed through unchanged);
        // on `Err` the inner initializer has left it uninitialised, as the outer one must.
        unsafe { init.__pinned_init(slot) }
    };
    // SAFETY: `run` initialises `slot` fully when it returns `Ok` (the inner initializer's
    // contract) and leaves it uninitialised on `Err` (either `make_init` failed before
    // touching it, or the inner initializer did so itself); it never moves out of `slot`.
    unsafe { pin_init_from_closure(run) }
}

/// Returns an initializer that first runs `make_init` and then the initializer it returns;
/// an `Err` from `make_init` fails the initializer with the slot untouched.
///
/// As 7.3's `pin_init::init_scope`.
#[inline]
pub fn init_scope<T, E, F, I>(make_init: F) -> impl Init<T, E>
where
    F: FnOnce() -> Result<I, E>,
    I: Init<T, E>,
{
    let run = move |slot: *mut T| -> Result<(), E> {
        let init = make_init()?;
        // SAFETY: `slot` is valid for a `T` (the contract of `Init::__init`, passed through);
        // on `Err` the inner initializer has left it uninitialised.
        unsafe { init.__init(slot) }
    };
    // SAFETY: as in `pin_init_scope`; the inner initializer is an `Init`, so `slot` need
    // not stay pinned.
    unsafe { init_from_closure(run) }
}

/// Initialises `slot` with the infallible initializer `init`.
///
/// As 7.3's `pin_init::raw_init`.
///
/// # Safety
///
/// - `slot` is valid for writes of a `T` and holds no value that needs dropping.
/// - `slot` does not move until the value is dropped (it is pinned), unless `init` is an
///   [`Init`].
#[inline(always)]
pub unsafe fn raw_init<T>(slot: *mut T, init: impl PinInit<T>) {
    // SAFETY: the caller's promises are `__pinned_init`'s requirements.
    match unsafe { init.__pinned_init(slot) } {
        Ok(()) => {}
        Err(never) => match never {},
    }
}

/// Initialises `slot` with the fallible initializer `init`.
///
/// As 7.3's `pin_init::raw_try_init`.
///
/// # Safety
///
/// - `slot` is valid for writes of a `T` and holds no value that needs dropping.
/// - On `Err` the caller does not read `slot` (it may only deallocate it).
/// - `slot` does not move until the value is dropped (it is pinned), unless `init` is an
///   [`Init`].
#[inline(always)]
pub unsafe fn raw_try_init<T, E>(slot: *mut T, init: impl PinInit<T, E>) -> Result<(), E> {
    // SAFETY: the caller's promises are `__pinned_init`'s requirements.
    unsafe { init.__pinned_init(slot) }
}
