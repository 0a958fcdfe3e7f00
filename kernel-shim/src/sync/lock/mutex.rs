// SPDX-License-Identifier: GPL-2.0

//! The sleeping lock: Linux 7.3's `kernel::sync::lock::mutex`.
//!
//! 7.3's [`Mutex`] is the C `struct mutex`. This one is the backend of the build (see
//! [`crate::sync`]): with `std` (the host, and loom under the model) a lock word kept by a
//! `std` (or loom) mutex, whose waiters sleep on a condition variable; freestanding, an
//! atomic word to spin on.

use core::{
    ffi::CStr,
    pin::Pin, //
};

use super::Backend;
use crate::sync::LockClassKey;

/// Makes the initialiser of a [`Mutex`] holding the value (or initialiser) given, named
/// by the string literal given or else by the file and line, in a lock class of its own
/// (one per place in the source).
///
/// ```
/// use kernel::{
///     prelude::*,
///     sync::{
///         new_mutex,
///         Mutex, //
///     },
/// };
///
/// let hits: Pin<KBox<Mutex<u32>>> = KBox::pin_init(new_mutex!(0u32), GFP_KERNEL)?;
/// *hits.lock() += 1;
/// assert_eq!(*hits.lock(), 1);
///
/// let named = KBox::pin_init(new_mutex!(KVec::<u8>::new(), "tx queue"), GFP_KERNEL)?;
/// named.lock().push(7, GFP_KERNEL)?;
/// assert_eq!(named.lock().len(), 1);
/// # Ok::<(), Error>(())
/// ```
#[macro_export]
macro_rules! new_mutex {
    ($inner:expr $(, $name:literal)? $(,)?) => {
        $crate::sync::Mutex::new(
            $inner,
            $crate::optional_name!($($name)?),
            $crate::static_lock_class!(),
        )
    };
}
pub use new_mutex;

/// A lock whose waiters sleep: while one thread holds it, the others that ask for it wait
/// until it is released, and then one of them gets it.
///
/// It must be pinned: make it with [`new_mutex!`] (or [`Mutex::new`](super::Lock::new)),
/// in a struct with `#[pin_data]` and `pin_init!`, in a box with `KBox::pin_init`, or on
/// the stack with `stack_pin_init!`. Since it may sleep, it is not for atomic context.
///
/// # Examples
///
/// A struct whose counters are behind a mutex, changed through a shared reference:
///
/// ```
/// use kernel::{
///     prelude::*,
///     sync::{
///         new_mutex,
///         Mutex, //
///     },
/// };
///
/// struct Stats {
///     sent: u64,
///     failed: u64,
/// }
///
/// #[pin_data]
/// struct Channel {
///     id: u16,
///     #[pin]
///     stats: Mutex<Stats>,
/// }
///
/// fn record(channel: &Channel, ok: bool) {
///     let mut stats = channel.stats.lock();
///     stats.sent += 1;
///     if !ok {
///         stats.failed += 1;
///     }
/// }
///
/// let channel = KBox::pin_init(
///     pin_init!(Channel {
///         id: 3,
///         stats <- new_mutex!(Stats { sent: 0, failed: 0 }),
///     }),
///     GFP_KERNEL,
/// )?;
/// record(&channel, true);
/// record(&channel, false);
/// let stats = channel.stats.lock();
/// assert_eq!((channel.id, stats.sent, stats.failed), (3, 2, 1));
/// assert!(channel.stats.try_lock().is_none());
/// # Ok::<(), Error>(())
/// ```
pub type Mutex<T> = super::Lock<T, MutexBackend>;

/// The [`Guard`](super::Guard) of a [`Mutex`]: the mutex is held until it is dropped.
pub type MutexGuard<'a, T> = super::Guard<'a, T, MutexBackend>;

/// The backend of [`Mutex`]: 7.3's wraps the C `struct mutex`; this one is the build's
/// (see the [module docs](self)).
pub struct MutexBackend;

/// The state of a [`Mutex`]: 7.3's is the C `struct mutex`. What it holds depends on the
/// build (see the [module docs](self)).
pub struct MutexState(imp::State);

// SAFETY:
// - `imp::State::lock` and `try_lock` return holding the lock only when no one else holds
//   it, and only `unlock` releases it (each backend below says how).
// - `relock` is the provided one, which calls `lock`.
// - `MutexState` and `()` are `Send` and `Sync` (every `imp::State` is made of `std`'s,
//   loom's or `core`'s synchronisation types).
unsafe impl Backend for MutexBackend {
    type State = MutexState;
    type GuardState = ();

    #[inline]
    unsafe fn init(ptr: *mut MutexState, _name: &'static CStr, _key: Pin<&'static LockClassKey>) {
        // SAFETY: The caller guarantees that `ptr` is valid for writes.
        unsafe { ptr.write(MutexState(imp::State::new())) };
    }

    #[inline]
    unsafe fn lock(ptr: *mut MutexState) {
        // SAFETY: The caller guarantees that `ptr` points to an initialised state; the state
        // is only ever reached through shared references.
        unsafe { &(*ptr).0 }.lock();
    }

    #[inline]
    unsafe fn try_lock(ptr: *mut MutexState) -> Option<()> {
        // SAFETY: The caller guarantees that `ptr` points to an initialised state; the state
        // is only ever reached through shared references.
        unsafe { &(*ptr).0 }.try_lock().then_some(())
    }

    #[inline]
    unsafe fn unlock(ptr: *mut MutexState, _guard_state: &()) {
        // SAFETY: The caller holds the lock, so the state is initialised; it is only ever
        // reached through shared references.
        unsafe { &(*ptr).0 }.unlock();
    }

    /// Checks, in debug builds outside the model, that someone holds the lock (not that
    /// the caller does: the backends do not record the holder).
    #[inline]
    unsafe fn assert_is_held(ptr: *mut MutexState) {
        // SAFETY: The caller guarantees that `ptr` points to an initialised state; the state
        // is only ever reached through shared references.
        let state = unsafe { &(*ptr).0 };
        #[cfg(not(loom))]
        debug_assert!(state.is_locked(), "a mutex guard without the mutex held");
        // Under the model, reading the lock word would be one more loom mutex acquisition
        // in every lock, for loom to explore.
        #[cfg(loom)]
        let _ = state;
    }
}

/// The sleeping lock of host builds, as the kernel's mutex: taken with one
/// compare-and-swap when it is free and released with one when nobody waits; a waiter
/// spins a little, then sleeps (`parking_lot`'s raw mutex).
#[cfg(all(feature = "host", not(loom)))]
mod imp {
    use parking_lot::lock_api::RawMutex as _;

    pub(super) struct State(parking_lot::RawMutex);

    impl State {
        pub(super) fn new() -> Self {
            Self(parking_lot::RawMutex::INIT)
        }

        pub(super) fn lock(&self) {
            self.0.lock();
        }

        pub(super) fn try_lock(&self) -> bool {
            self.0.try_lock()
        }

        pub(super) fn unlock(&self) {
            // SAFETY: `Lock` calls this only from the guard of a `lock` or a successful
            // `try_lock` of this state, so the lock is held in this context.
            unsafe { self.0.unlock() };
        }

        pub(super) fn is_locked(&self) -> bool {
            self.0.is_locked()
        }
    }
}

/// The sleeping lock of the model: a lock word in loom's mutex, and a condition variable
/// its waiters sleep on, every acquire and release recorded for the contract checker.
///
/// The inner mutex is held only for a few instructions at a time, never while the caller
/// holds the lock; the lock is held from when [`State::lock`] sets the word's `locked` to
/// when [`State::unlock`] clears it.
#[cfg(loom)]
mod imp {
    use crate::sync::std_sync::{
        Condvar,
        Mutex,
        MutexGuard,
        PoisonError, //
    };

    /// The lock word.
    struct Word {
        /// Whether someone holds the lock.
        locked: bool,
        /// How many threads sleep on [`State::released`], waiting for the lock.
        sleepers: usize,
        /// How many times the lock was released: each acquire and release is recorded for
        /// the DMA contract checker with this count.
        releases: u64,
    }

    pub(super) struct State {
        word: Mutex<Word>,
        /// Signalled when the lock is released while someone sleeps for it.
        released: Condvar,
    }

    impl State {
        pub(super) fn new() -> Self {
            Self {
                word: Mutex::new(Word {
                    locked: false,
                    sleepers: 0,
                    releases: 0,
                }),
                released: Condvar::new(),
            }
        }

        fn word(&self) -> MutexGuard<'_, Word> {
            // No code panics while it holds the word, so a poisoned word is a consistent one.
            self.word.lock().unwrap_or_else(PoisonError::into_inner)
        }

        pub(super) fn lock(&self) {
            let mut word = self.word();
            // `while`: another thread may take the lock between the release that woke this
            // one and this one's turn at the word, and a condition variable may wake for
            // nothing.
            while word.locked {
                word.sleepers += 1;
                word = self
                    .released
                    .wait(word)
                    .unwrap_or_else(PoisonError::into_inner);
                word.sleepers -= 1;
            }
            word.locked = true;
            crate::backend::model::lock_taken(core::ptr::from_ref(self).addr(), word.releases);
        }

        pub(super) fn try_lock(&self) -> bool {
            let mut word = self.word();
            let taken = !core::mem::replace(&mut word.locked, true);
            if taken {
                crate::backend::model::lock_taken(core::ptr::from_ref(self).addr(), word.releases);
            }
            taken
        }

        pub(super) fn unlock(&self) {
            let mut word = self.word();
            word.releases += 1;
            crate::backend::model::lock_released(core::ptr::from_ref(self).addr(), word.releases);
            word.locked = false;
            let sleepers = word.sleepers;
            drop(word);
            // A sleeper counted here is in `wait` or on its way there with the word held,
            // so it cannot miss the signal. With no sleeper, no signal: no system call on an
            // uncontended unlock.
            if sleepers > 0 {
                self.released.notify_one();
            }
        }
    }
}

/// The spin lock of freestanding builds: one atomic word, 1 when held.
///
/// There is no scheduler to sleep in: a waiter spins, reading the word until it is 0 before
/// trying to take it again, so that the waiting does not keep the cache line written.
#[cfg(not(any(feature = "host", loom)))]
mod imp {
    use crate::sync::atomic::{
        Acquire,
        Atomic,
        Relaxed,
        Release, //
    };

    pub(super) struct State {
        locked: Atomic<u32>,
    }

    impl State {
        pub(super) const fn new() -> Self {
            Self {
                locked: Atomic::new(0),
            }
        }

        pub(super) fn lock(&self) {
            while !self.try_lock() {
                // ORDERING: Relaxed: only a hint of when to try again; the `try_lock` that
                // takes the lock is the acquire.
                while self.locked.load(Relaxed) != 0 {
                    core::hint::spin_loop();
                }
            }
        }

        pub(super) fn try_lock(&self) -> bool {
            // ORDERING: LOAD->LOAD, LOAD->STORE (acquire). Orders taking the lock before the
            // holder's accesses to the data. Pairs with the release in `unlock` of the
            // previous holder, whose accesses to the data it orders before freeing the lock.
            // A failed attempt orders nothing, and needs not.
            self.locked.cmpxchg(0, 1, Acquire).is_ok()
        }

        pub(super) fn unlock(&self) {
            // ORDERING: LOAD->STORE, STORE->STORE (release). Orders the holder's accesses to
            // the data before freeing the lock. Pairs with the acquire in `try_lock` of the
            // next holder.
            self.locked.store(0, Release);
        }

        pub(super) fn is_locked(&self) -> bool {
            // ORDERING: Relaxed: a debug check of the word alone.
            self.locked.load(Relaxed) != 0
        }
    }
}

#[cfg(all(test, feature = "host", not(loom)))]
mod tests {
    use std::{
        sync::mpsc,
        thread,
        time::Duration, //
    };

    use crate::{
        prelude::*,
        sync::Mutex, //
    };

    #[test]
    fn two_threads_each_add_ten_thousand_exactly() {
        let count: Pin<KBox<Mutex<u64>>> =
            KBox::pin_init(new_mutex!(0u64), GFP_KERNEL).expect("allocation");
        thread::scope(|scope| {
            for _ in 0..2 {
                scope.spawn(|| {
                    for _ in 0..10_000 {
                        *count.lock() += 1;
                    }
                });
            }
        });
        assert_eq!(*count.lock(), 20_000);
    }

    #[test]
    fn try_lock_fails_while_held_and_succeeds_once_released() {
        let m = KBox::pin_init(new_mutex!(5u8, "m"), GFP_KERNEL).expect("allocation");
        let guard = m.lock();
        assert!(m.try_lock().is_none());
        drop(guard);
        let guard = m.try_lock().expect("the mutex is free");
        assert_eq!(*guard, 5);
    }

    #[test]
    fn a_waiter_sleeps_until_the_holder_releases() {
        let m = KBox::pin_init(new_mutex!(0u32), GFP_KERNEL).expect("allocation");
        let (asked, asking) = mpsc::channel();
        thread::scope(|scope| {
            let mut guard = m.lock();
            scope.spawn(|| {
                asked.send(()).expect("the test waits");
                // Blocks until the holder has written 1 and released.
                let seen = *m.lock();
                assert_eq!(seen, 1);
            });
            asking.recv().expect("the waiter asks");
            thread::sleep(Duration::from_millis(20));
            *guard = 1;
        });
    }

    #[test]
    fn guard_lock_ref_is_the_mutex() {
        let m = KBox::pin_init(new_mutex!(()), GFP_KERNEL).expect("allocation");
        let guard = m.lock();
        assert!(core::ptr::eq(guard.lock_ref(), &*m));
    }
}

/// The model's exploration of the lock (`RUSTFLAGS="--cfg loom" cargo test -p kernel-shim
/// --lib`).
#[cfg(all(test, loom))]
mod loom_tests {
    use loom::{
        sync::Arc,
        thread, //
    };

    use crate::prelude::*;

    #[test]
    fn two_threads_each_add_twice_exactly() {
        loom::model(|| {
            let count = Arc::new(KBox::pin_init(new_mutex!(0u32), GFP_KERNEL).expect("allocation"));
            let other = {
                let count = Arc::clone(&count);
                thread::spawn(move || {
                    for _ in 0..2 {
                        *count.lock() += 1;
                    }
                })
            };
            for _ in 0..2 {
                *count.lock() += 1;
            }
            other.join().expect("the other thread");
            assert_eq!(*count.lock(), 4);
        });
    }
}
