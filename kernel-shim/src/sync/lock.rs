// SPDX-License-Identifier: GPL-2.0

//! The lock and its guard, generic over what does the locking: Linux 7.3's
//! `kernel::sync::lock`.
//!
//! [`Lock<T, B>`] keeps a `T` that only the holder of the lock reaches, through the
//! [`Guard`] that [`Lock::lock`] returns and whose drop unlocks. The [`Backend`] `B` is the
//! lock itself: [`mutex::MutexBackend`] makes a [`Lock`] the [`Mutex`](mutex::Mutex).
//! 7.3 also has spinlock and global-lock backends, which this crate does not.

pub mod mutex;

use core::{
    cell::UnsafeCell,
    convert::Infallible,
    ffi::CStr,
    marker::{
        PhantomData,
        PhantomPinned, //
    },
    pin::Pin,
};

use pinned_init::{
    pin_data,
    pin_init,
    pin_init_from_closure,
    PinInit,
    Wrapper, //
};

use super::LockClassKey;

/// What does the locking of a [`Lock`]: its state and the operations on it.
///
/// Every method takes a pointer to the state inside the lock, as 7.3's take a pointer to
/// the C lock. 7.3's [`Backend::init`] takes the name and class as C pointers; this one
/// takes them as references, there being no C side to hand them to.
///
/// # Safety
///
/// - Between a [`Backend::lock`] (or a successful [`Backend::try_lock`]) and the
///   [`Backend::unlock`] after it, no other thread or CPU may acquire the lock: the holder
///   alone reaches the data.
/// - [`Backend::relock`] acquires the lock as [`Backend::lock`] does.
/// - `State` and `GuardState` may be sent to and shared with any thread (a [`Lock`] is
///   `Send` and `Sync`, and a [`Guard`] `Sync`, whatever they are).
pub unsafe trait Backend {
    /// The state of the lock, kept inside it.
    type State;

    /// What the holder keeps from [`Backend::lock`] to [`Backend::unlock`].
    type GuardState;

    /// Initialises the state of a lock called `name`, of the class `key`.
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for writes for the duration of the call; what it points to is
    /// taken to be uninitialised and is not dropped.
    unsafe fn init(ptr: *mut Self::State, name: &'static CStr, key: Pin<&'static LockClassKey>);

    /// Acquires the lock, waiting for it as long as it takes.
    ///
    /// # Safety
    ///
    /// `ptr` must point to a state that [`Backend::init`] initialised.
    #[must_use]
    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState;

    /// Acquires the lock if it is free, or returns `None` at once.
    ///
    /// # Safety
    ///
    /// `ptr` must point to a state that [`Backend::init`] initialised.
    unsafe fn try_lock(ptr: *mut Self::State) -> Option<Self::GuardState>;

    /// Releases the lock.
    ///
    /// # Safety
    ///
    /// The caller must hold the lock, and `guard_state` must be what acquiring it returned.
    unsafe fn unlock(ptr: *mut Self::State, guard_state: &Self::GuardState);

    /// Acquires again a lock that the caller acquired and then released, updating
    /// `guard_state`.
    ///
    /// # Safety
    ///
    /// `guard_state` must come from acquiring this lock, and the lock must have been
    /// released with [`Backend::unlock`] since.
    unsafe fn relock(ptr: *mut Self::State, guard_state: &mut Self::GuardState) {
        // SAFETY: The lock was acquired before, so its state is initialised.
        *guard_state = unsafe { Self::lock(ptr) };
    }

    /// Checks that the lock is held (7.3 asks lockdep; see each backend for what it checks
    /// here).
    ///
    /// # Safety
    ///
    /// `ptr` must point to a state that [`Backend::init`] initialised.
    unsafe fn assert_is_held(ptr: *mut Self::State);
}

/// A value of type `T` that only the holder of the lock `B` reaches.
///
/// It must be pinned: [`Lock::new`] returns an initialiser (see [`crate::init`]).
#[pin_data]
pub struct Lock<T: ?Sized, B: Backend> {
    /// The lock's own state.
    #[pin]
    state: UnsafeCell<B::State>,

    /// Keeps the lock where it was made: 7.3's locks may point into themselves (a C mutex
    /// keeps a list of its waiters).
    #[pin]
    _pin: PhantomPinned,

    /// The data the lock protects.
    #[pin]
    pub(crate) data: UnsafeCell<T>,
}

// SAFETY: Moving the lock to another thread moves the data, which is allowed when `T: Send`;
// the backend's state may go to any thread (`Backend`'s safety requirements).
unsafe impl<T: ?Sized + Send, B: Backend> Send for Lock<T, B> {}

// SAFETY: A shared lock hands the data to one thread at a time (the holder), so sharing it
// needs `T: Send` and not `T: Sync`; the backend's state may be shared with any thread
// (`Backend`'s safety requirements).
unsafe impl<T: ?Sized + Send, B: Backend> Sync for Lock<T, B> {}

impl<T, B: Backend> Lock<T, B> {
    /// Returns the initialiser of a lock called `name`, of the class `key`, holding the
    /// value `t` initialises.
    pub fn new(
        t: impl PinInit<T>,
        name: &'static CStr,
        key: Pin<&'static LockClassKey>,
    ) -> impl PinInit<Self> {
        pin_init!(Self {
            data <- UnsafeCell::pin_init(t),
            _pin: PhantomPinned,
            // SAFETY: The closure initialises the whole of its slot with `B::init`, and cannot
            // fail. `B::init`'s one requirement, a pointer valid for writes, holds: the slot
            // the closure is given is valid for writes (`pin_init_from_closure`'s guarantee),
            // and so is the `B::State` inside the `UnsafeCell`, which has its layout.
            state <- unsafe {
                pin_init_from_closure(move |slot: *mut UnsafeCell<B::State>| {
                    B::init(UnsafeCell::raw_get(slot), name, key);
                    Ok::<(), Infallible>(())
                })
            },
        })
    }
}

impl<T: ?Sized, B: Backend> Lock<T, B> {
    /// Acquires the lock, waiting for it as long as it takes, and returns the guard through
    /// which the holder reaches the data; dropping the guard releases the lock.
    #[inline]
    pub fn lock(&self) -> Guard<'_, T, B> {
        // SAFETY: The lock exists, so `Lock::new`'s initialiser ran `B::init` on its state.
        let state = unsafe { B::lock(self.state.get()) };
        // SAFETY: The lock was just acquired, and `state` is what acquiring it returned.
        unsafe { Guard::new(self, state) }
    }

    /// Acquires the lock if it is free, and returns its guard; returns `None` at once if it
    /// is held.
    #[must_use = "if unused, the lock is released at once"]
    #[inline]
    pub fn try_lock(&self) -> Option<Guard<'_, T, B>> {
        // SAFETY: The lock exists, so `Lock::new`'s initialiser ran `B::init` on its state.
        let state = unsafe { B::try_lock(self.state.get()) }?;
        // SAFETY: The lock was just acquired, and `state` is what acquiring it returned.
        Some(unsafe { Guard::new(self, state) })
    }
}

/// The proof that the caller holds a [`Lock`], and its access to the data: it derefs to
/// `T` (mutably when `T: Unpin`; [`Guard::as_mut`] gives the pinned reference), and
/// releases the lock when dropped.
///
/// # Invariants
///
/// The lock `lock` is held, acquired by the thread that made the guard, and `state` is what
/// acquiring it returned.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct Guard<'a, T: ?Sized, B: Backend> {
    pub(crate) lock: &'a Lock<T, B>,
    pub(crate) state: B::GuardState,
    // Not `Send`: 7.3's mutexes are released by the thread that acquired them.
    _not_send: PhantomData<*mut ()>,
}

// SAFETY: A shared guard only lends `&T` (and the `&Lock`, which is `Sync`), so sharing it
// needs `T: Sync`; the backend's guard state may be shared with any thread (`Backend`'s
// safety requirements).
unsafe impl<T: ?Sized + Sync, B: Backend> Sync for Guard<'_, T, B> {}

impl<'a, T: ?Sized, B: Backend> Guard<'a, T, B> {
    /// Makes the guard of `lock`, held.
    ///
    /// # Safety
    ///
    /// The caller must hold `lock`, having acquired it on this thread, and `state` must be
    /// what acquiring it returned.
    #[inline]
    pub unsafe fn new(lock: &'a Lock<T, B>, state: B::GuardState) -> Self {
        // SAFETY: The lock is held, so its state was initialised.
        unsafe { B::assert_is_held(lock.state.get()) };
        // INVARIANT: The caller holds `lock`, acquired on this thread, with `state`.
        Self {
            lock,
            state,
            _not_send: PhantomData,
        }
    }

    /// Returns the lock this guard holds.
    pub fn lock_ref(&self) -> &'a Lock<T, B> {
        self.lock
    }

    /// Returns the pinned data: the data is pinned where the lock is, so a `T` that is not
    /// `Unpin` is reached mutably only through this.
    pub fn as_mut(&mut self) -> Pin<&mut T> {
        // SAFETY: The data is a pinned field of the pinned lock, so it does not move; the
        // guard holds the lock (its invariant), so this is the only reference to it for as
        // long as the guard is borrowed.
        unsafe { Pin::new_unchecked(&mut *self.lock.data.get()) }
    }

    /// Releases the lock, runs `cb`, and acquires the lock again, even when `cb` panics.
    pub(crate) fn do_unlocked<U>(&mut self, cb: impl FnOnce() -> U) -> U {
        /// Acquires the lock again when dropped.
        struct Relock<'g, 'a, T: ?Sized, B: Backend>(&'g mut Guard<'a, T, B>);

        impl<T: ?Sized, B: Backend> Drop for Relock<'_, '_, T, B> {
            fn drop(&mut self) {
                // SAFETY: The guard's `state` came from acquiring the lock, and
                // `do_unlocked` released it (below) before making this.
                unsafe { B::relock(self.0.lock.state.get(), &mut self.0.state) };
                // INVARIANT: The lock is held again, with the state acquiring it returned.
            }
        }

        // SAFETY: The guard holds the lock, with `state` from acquiring it (its invariant).
        unsafe { B::unlock(self.lock.state.get(), &self.state) };
        let _relock = Relock(self);
        cb()
    }
}

impl<T: ?Sized, B: Backend> core::ops::Deref for Guard<'_, T, B> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: The guard holds the lock (its invariant), so no one writes the data while
        // the guard is borrowed.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized + Unpin, B: Backend> core::ops::DerefMut for Guard<'_, T, B> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: The guard holds the lock (its invariant), so this is the only reference to
        // the data while the guard is borrowed; `T: Unpin`, so moving out of it is allowed.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T: ?Sized, B: Backend> Drop for Guard<'_, T, B> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: The guard holds the lock, with `state` from acquiring it (its invariant).
        unsafe { B::unlock(self.lock.state.get(), &self.state) };
    }
}
