// SPDX-License-Identifier: GPL-2.0

//! Synchronisation primitives.
//!
//! Beside the atomics and barriers, Linux 7.3's sleeping lock and condition variable:
//! [`Mutex`] (made by [`new_mutex!`], locked through a [`MutexGuard`]) and [`CondVar`]
//! (made by [`new_condvar!`]), under 7.3's paths, names and signatures. Both must be
//! pinned, so their constructors return initialisers (see [`crate::init`]).
//!
//! # Backends
//!
//! 7.3's wrap the C `struct mutex` and `struct wait_queue_head`. Here what is under them
//! is chosen by the build, never by the caller:
//!
//! | build | [`Mutex`] | [`CondVar`] |
//! |---|---|---|
//! | `host` feature | sleeps: a `std` mutex and condition variable keep the lock word and the sleepers | sleeps on a `std` condition variable; timed waits time out on the host's clock |
//! | `--cfg loom` | the same, on loom's mutex and condition variable, so the model checker explores who gets the lock and when sleepers wake | untimed waits sleep on loom's condition variable; a timed wait polls, each jiffy of its timeout one `fsleep` of the model's virtual clock (a yield to the other loom threads) |
//! | neither (freestanding `no_std`) | spins on an atomic word (acquire to lock, release to unlock): there is no scheduler to sleep in | spins until notified; a timed wait reads the environment's clock (`kernel_shim_ktime_get_ns`) |
//!
//! Lock names and lock classes ([`LockClassKey`], [`static_lock_class!`]) are taken as in
//! 7.3 and not used: there is no lockdep here.

pub mod aref;
pub mod atomic;
pub mod barrier;
mod condvar;
pub mod lock;

/// The `std` primitives the host and model backends of [`Mutex`] and [`CondVar`] are
/// built on: loom's under the model, so that it explores who gets them and when.
#[cfg(any(feature = "host", loom))]
mod std_sync {
    #[cfg(loom)]
    pub(crate) use loom::sync::{
        Condvar,
        Mutex,
        MutexGuard, //
    };
    pub(crate) use std::sync::PoisonError;
    #[cfg(not(loom))]
    pub(crate) use std::sync::{
        Condvar,
        Mutex,
        MutexGuard, //
    };
}

use core::marker::PhantomPinned;

use pinned_init::PinInit;

pub use condvar::{
    new_condvar,
    CondVar,
    CondVarTimeoutResult, //
};
pub use lock::mutex::{
    new_mutex,
    Mutex,
    MutexGuard, //
};

/// A lock class, for the kernel's lock validator (lockdep): the locks made at one place of
/// the source are one class.
///
/// 7.3's wraps a C `struct lock_class_key`; lockdep is not here, so this one holds nothing,
/// and the locks of this crate take one only to have 7.3's signatures.
pub struct LockClassKey {
    // 7.3's is pinned (lockdep keeps a list through it); so is this one, to keep code that
    // moves a key out of a `Pin` from building here and not there.
    _pin: PhantomPinned,
}

impl LockClassKey {
    /// Makes a lock class key to be kept in a `static`; [`static_lock_class!`] makes one so.
    ///
    /// # Safety
    ///
    /// As in 7.3: the key must be pinned in static memory before use, and never dropped.
    /// (Nothing here relies on it.)
    pub const unsafe fn new_static() -> Self {
        Self {
            _pin: PhantomPinned,
        }
    }

    /// Makes the initialiser of a lock class key in memory of the caller's, for locks made
    /// at run time whose class is not one place of the source.
    pub fn new_dynamic() -> impl PinInit<Self> {
        Self {
            _pin: PhantomPinned,
        }
    }
}

/// Declares a lock class in a `static` and evaluates to a `Pin<&'static LockClassKey>` to
/// it: every place in the source this is written at is one class.
#[macro_export]
macro_rules! static_lock_class {
    () => {{
        static CLASS: $crate::sync::LockClassKey =
            // SAFETY: The key is in a `static`, pinned below for good and never dropped.
            unsafe { $crate::sync::LockClassKey::new_static() };
        ::core::pin::Pin::static_ref(&CLASS)
    }};
}
pub use static_lock_class;

/// Evaluates to a `&'static CStr` naming a lock: the string literal given, or the file and
/// line the macro is written at.
#[doc(hidden)]
#[macro_export]
macro_rules! optional_name {
    (@c $name:expr) => {{
        const NAME: &::core::ffi::CStr =
            match ::core::ffi::CStr::from_bytes_with_nul(::core::concat!($name, "\0").as_bytes()) {
                ::core::result::Result::Ok(name) => name,
                ::core::result::Result::Err(_) => ::core::panic!("a lock name holds a NUL byte"),
            };
        NAME
    }};
    () => {
        $crate::optional_name!(@c ::core::concat!(::core::file!(), ":", ::core::line!()))
    };
    ($name:literal) => {
        $crate::optional_name!(@c $name)
    };
}
