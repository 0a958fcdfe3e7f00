// SPDX-License-Identifier: GPL-2.0

//! The condition variable: Linux 7.3's `kernel::sync::CondVar`.
//!
//! A thread holding a lock waits on a [`CondVar`] for another to change what the lock
//! protects: [`CondVar::wait`] releases the lock and sleeps until [`CondVar::notify_one`]
//! or [`CondVar::notify_all`], then takes the lock again before it returns. Wake-ups may
//! come for nothing, so the waiter checks its condition again in a loop, as in 7.3.
//!
//! See [`CondVar`] for what a wait guarantees, and for time and signals here.

use core::{
    ffi::CStr,
    marker::PhantomPinned,
    pin::Pin, //
};

use pinned_init::{
    pin_data,
    pin_init,
    PinInit, //
};

use super::{
    lock::{
        Backend,
        Guard, //
    },
    LockClassKey,
};

/// The length of a jiffy, in nanoseconds: `HZ` is 1000.
const JIFFY_NS: u64 = 1_000_000;

/// The kernel's `long` (7.3's `ffi::c_long`), in which `schedule_timeout` counts jiffies.
#[expect(
    non_camel_case_types,
    reason = "the C type's name, as 7.3's `ffi` spells it"
)]
type c_long = isize;

/// The timeout of a wait that has none (the kernel's `MAX_SCHEDULE_TIMEOUT`).
const MAX_SCHEDULE_TIMEOUT: c_long = c_long::MAX;

/// Makes the initialiser of a [`CondVar`], named by the string literal given or else by the
/// file and line, in a lock class of its own (one per place in the source).
#[macro_export]
macro_rules! new_condvar {
    ($($name:literal)?) => {
        $crate::sync::CondVar::new($crate::optional_name!($($name)?), $crate::static_lock_class!())
    };
}
pub use new_condvar;

/// Where threads holding a lock wait for a change of what it protects.
///
/// [`CondVar::wait`] and its variants release the lock (the caller proves it holds it by
/// its [`Guard`]), sleep until a notification ([`CondVar::notify_one`],
/// [`CondVar::notify_all`]) or for nothing, and take the lock again before they return. A
/// notification wakes only the threads waiting when it comes: it is not kept for a later
/// waiter.
///
/// It must be pinned: make it with [`new_condvar!`], in a struct with
/// `#[pin_data]` and `pin_init!`.
///
/// # Not lost
///
/// A notification that follows the waiter's release of the lock wakes it. Each condition
/// variable counts its notifications; the waiter reads the count while it still holds the
/// lock, and then sleeps until the count is no longer the one it read. A notifier that
/// changed the data under the lock, after the waiter released it, counts its notification
/// after that read, so the waiter sees it, whether it is asleep yet or not.
///
/// # Time and signals
///
/// A timeout is in jiffies ([`crate::time::Jiffies`], 7.3's `c_ulong`: `usize`). A jiffy
/// here is 1 ms (`HZ` = 1000), on the host's clock or the freestanding environment's.
/// Under the model a timed wait is not timed: it ends only when notified, so that a
/// wake-up the code forgets is a deadlock loom reports rather than a timeout that hides
/// it. There are no signals: the interruptible waits are never interrupted, and no result
/// is [`CondVarTimeoutResult::Signal`].
///
/// # Examples
///
/// A value, its lock and the condition variable its changes are announced on:
///
/// ```
/// use kernel::{
///     prelude::*,
///     sync::{
///         new_condvar,
///         new_mutex,
///         CondVar,
///         Mutex, //
///     },
/// };
///
/// #[pin_data]
/// struct Seq {
///     #[pin]
///     value: Mutex<u32>,
///     #[pin]
///     changed: CondVar,
/// }
///
/// /// Waits until the value is at least `v`.
/// fn wait_for(s: &Seq, v: u32) {
///     let mut value = s.value.lock();
///     while *value < v {
///         s.changed.wait(&mut value);
///     }
/// }
///
/// /// Adds one to the value and wakes every waiter.
/// fn advance(s: &Seq) {
///     *s.value.lock() += 1;
///     s.changed.notify_all();
/// }
///
/// let seq = KBox::pin_init(
///     pin_init!(Seq {
///         value <- new_mutex!(0),
///         changed <- new_condvar!("Seq::changed"),
///     }),
///     GFP_KERNEL,
/// )?;
/// std::thread::scope(|scope| {
///     scope.spawn(|| (0..3).for_each(|_| advance(&seq)));
///     wait_for(&seq, 3);
/// });
/// assert_eq!(*seq.value.lock(), 3);
/// # Ok::<(), Error>(())
/// ```
#[pin_data]
pub struct CondVar {
    waiters: imp::WaitQueue,

    /// 7.3's keeps a list of its waiters in itself, and so cannot move; neither can this
    /// one, so that code moving one does not build here and not there.
    #[pin]
    _pin: PhantomPinned,
}

impl CondVar {
    /// Returns the initialiser of a condition variable called `name`, of the class `key`.
    pub fn new(name: &'static CStr, key: Pin<&'static LockClassKey>) -> impl PinInit<Self> {
        let _ = (name, key);
        pin_init!(Self {
            waiters: imp::WaitQueue::new(),
            _pin: PhantomPinned,
        })
    }

    /// Releases the lock, sleeps until notified (or for nothing) or until `timeout` jiffies
    /// have passed ([`MAX_SCHEDULE_TIMEOUT`]: no limit), and takes the lock again. Returns
    /// the whole jiffies left to the timeout if notified (so 0 if timed out, or notified in
    /// its last jiffy, as the kernel's `schedule_timeout`), and [`MAX_SCHEDULE_TIMEOUT`]
    /// for a wait without one.
    fn wait_internal<T: ?Sized, B: Backend>(
        &self,
        guard: &mut Guard<'_, T, B>,
        timeout: c_long,
    ) -> c_long {
        // Read with the lock held: see "Not lost" in the type's docs.
        let seen = self.waiters.generation();
        if timeout == MAX_SCHEDULE_TIMEOUT {
            guard.do_unlocked(|| self.waiters.wait_past(seen, None));
            return MAX_SCHEDULE_TIMEOUT;
        }
        // CAST: `timeout` is not negative: it comes from a `usize`, or is
        // `MAX_SCHEDULE_TIMEOUT`.
        let deadline = crate::backend::env::ktime_get_ns()
            .saturating_add((timeout.unsigned_abs() as u64).saturating_mul(JIFFY_NS));
        if !guard.do_unlocked(|| self.waiters.wait_past(seen, Some(deadline))) {
            return 0;
        }
        let left = deadline.saturating_sub(crate::backend::env::ktime_get_ns()) / JIFFY_NS;
        // CAST: `left` is at most `timeout`, a `c_long`.
        left as c_long
    }

    /// Releases the lock, sleeps until notified (or for nothing), and takes the lock again.
    pub fn wait<T: ?Sized, B: Backend>(&self, guard: &mut Guard<'_, T, B>) {
        self.wait_internal(guard, MAX_SCHEDULE_TIMEOUT);
    }

    /// [`CondVar::wait`], interruptible by a signal; returns whether a signal is pending.
    ///
    /// There are no signals here: it returns `false`.
    #[must_use = "the wait may have ended for a signal, which the caller must check"]
    pub fn wait_interruptible<T: ?Sized, B: Backend>(&self, guard: &mut Guard<'_, T, B>) -> bool {
        self.wait_internal(guard, MAX_SCHEDULE_TIMEOUT);
        false
    }

    /// [`CondVar::wait_interruptible`], during which the task may also be frozen (for
    /// suspend); returns whether a signal is pending.
    ///
    /// There are no signals and no freezer here: it returns `false`.
    #[must_use = "the wait may have ended for a signal, which the caller must check"]
    pub fn wait_interruptible_freezable<T: ?Sized, B: Backend>(
        &self,
        guard: &mut Guard<'_, T, B>,
    ) -> bool {
        self.wait_internal(guard, MAX_SCHEDULE_TIMEOUT);
        false
    }

    /// Releases the lock, sleeps until notified (or for nothing), until `jiffies` jiffies
    /// have passed or until a signal, and takes the lock again; says which, with the jiffies
    /// left.
    ///
    /// A jiffy is 1 ms here, and the result is never [`CondVarTimeoutResult::Signal`] (see
    /// [`CondVar`]).
    ///
    /// ```
    /// use kernel::{
    ///     prelude::*,
    ///     sync::{
    ///         new_condvar,
    ///         new_mutex,
    ///         CondVar,
    ///         CondVarTimeoutResult,
    ///         Mutex, //
    ///     },
    /// };
    ///
    /// #[pin_data]
    /// struct Flag {
    ///     #[pin]
    ///     set: Mutex<bool>,
    ///     #[pin]
    ///     changed: CondVar,
    /// }
    ///
    /// let flag = KBox::pin_init(
    ///     pin_init!(Flag {
    ///         set <- new_mutex!(false),
    ///         changed <- new_condvar!(),
    ///     }),
    ///     GFP_KERNEL,
    /// )?;
    /// // No one notifies: the wait ends at the timeout.
    /// let mut set = flag.set.lock();
    /// let res = flag.changed.wait_interruptible_timeout(&mut set, 2);
    /// assert!(matches!(res, CondVarTimeoutResult::Timeout));
    /// assert!(!*set);
    /// # Ok::<(), Error>(())
    /// ```
    #[must_use = "the wait may have timed out, which the caller must check"]
    pub fn wait_interruptible_timeout<T: ?Sized, B: Backend>(
        &self,
        guard: &mut Guard<'_, T, B>,
        jiffies: crate::time::Jiffies,
    ) -> CondVarTimeoutResult {
        let timeout = c_long::try_from(jiffies).unwrap_or(MAX_SCHEDULE_TIMEOUT);
        match self.wait_internal(guard, timeout) {
            0 => CondVarTimeoutResult::Timeout,
            // What is left is not negative, and at most `jiffies`.
            left => CondVarTimeoutResult::Woken {
                jiffies: left.unsigned_abs(),
            },
        }
    }

    /// [`CondVar::notify_one`], hinting that the caller is about to sleep (so the woken
    /// thread may run on its CPU). Here it is `notify_one`.
    #[inline]
    pub fn notify_sync(&self) {
        self.waiters.notify(false);
    }

    /// Wakes one of the threads waiting, if any. No thread waiting, no effect: the
    /// notification is not kept for a later waiter.
    #[inline]
    pub fn notify_one(&self) {
        self.waiters.notify(false);
    }

    /// Wakes every thread waiting, if any. No thread waiting, no effect: the notification
    /// is not kept for a later waiter.
    #[inline]
    pub fn notify_all(&self) {
        self.waiters.notify(true);
    }
}

/// How a [`CondVar::wait_interruptible_timeout`] ended.
pub enum CondVarTimeoutResult {
    /// The timeout passed.
    Timeout,
    /// A notification (or nothing) woke the thread before the timeout.
    Woken {
        /// The whole jiffies left to the timeout.
        jiffies: usize,
    },
    /// A signal is pending (never, here).
    Signal {
        /// The whole jiffies left to the timeout.
        jiffies: usize,
    },
}

/// The waiters of `std` builds: the count of notifications in a `std` mutex (loom's under
/// the model), and a condition variable the waiters sleep on.
#[cfg(any(feature = "host", loom))]
mod imp {
    use crate::sync::std_sync::{
        Condvar,
        Mutex,
        MutexGuard,
        PoisonError, //
    };

    struct Queue {
        /// The number of notifications so far (wrapping).
        generation: usize,
        /// How many threads sleep on [`WaitQueue::woken`].
        sleepers: usize,
    }

    pub(super) struct WaitQueue {
        queue: Mutex<Queue>,
        /// Signalled by a notification while someone sleeps.
        woken: Condvar,
    }

    impl WaitQueue {
        pub(super) fn new() -> Self {
            Self {
                queue: Mutex::new(Queue {
                    generation: 0,
                    sleepers: 0,
                }),
                woken: Condvar::new(),
            }
        }

        fn queue(&self) -> MutexGuard<'_, Queue> {
            // No code panics while it holds the queue, so a poisoned queue is a consistent
            // one.
            self.queue.lock().unwrap_or_else(PoisonError::into_inner)
        }

        pub(super) fn generation(&self) -> usize {
            self.queue().generation
        }

        /// Sleeps until the count of notifications is no longer `seen`, or until the
        /// environment's clock reaches `deadline` (in ns). Returns whether it was notified.
        pub(super) fn wait_past(&self, seen: usize, deadline: Option<u64>) -> bool {
            let mut queue = self.queue();
            loop {
                if queue.generation != seen {
                    return true;
                }
                let Some(deadline) = deadline else {
                    queue.sleepers += 1;
                    queue = self
                        .woken
                        .wait(queue)
                        .unwrap_or_else(PoisonError::into_inner);
                    queue.sleepers -= 1;
                    continue;
                };
                let now = crate::backend::env::ktime_get_ns();
                if now >= deadline {
                    return false;
                }
                queue = self.sleep_until(queue, deadline - now);
            }
        }

        /// Sleeps on the condition variable for at most `ns`.
        #[cfg(not(loom))]
        fn sleep_until<'a>(
            &self,
            mut queue: MutexGuard<'a, Queue>,
            ns: u64,
        ) -> MutexGuard<'a, Queue> {
            queue.sleepers += 1;
            let (mut queue, _) = self
                .woken
                .wait_timeout(queue, std::time::Duration::from_nanos(ns))
                .unwrap_or_else(PoisonError::into_inner);
            queue.sleepers -= 1;
            queue
        }

        /// Under the model: a timed wait sleeps on loom's condition variable as an untimed
        /// one does, its timeout not modelled (loom's cannot time out, and the model's clock
        /// moves only in `fsleep`). So code that would wait for a notification nobody sends
        /// (a lost wake-up) deadlocks, which loom reports, where a timeout would hide it.
        #[cfg(loom)]
        fn sleep_until<'a>(
            &'a self,
            mut queue: MutexGuard<'a, Queue>,
            _ns: u64,
        ) -> MutexGuard<'a, Queue> {
            queue.sleepers += 1;
            let mut queue = self
                .woken
                .wait(queue)
                .unwrap_or_else(PoisonError::into_inner);
            queue.sleepers -= 1;
            queue
        }

        pub(super) fn notify(&self, all: bool) {
            let mut queue = self.queue();
            queue.generation = queue.generation.wrapping_add(1);
            let sleepers = queue.sleepers;
            drop(queue);
            // A sleeper counted here is in `wait` or on its way there with the queue held, so
            // it cannot miss the signal; a waiter not yet asleep sees the new count first.
            match (sleepers, all) {
                (0, _) => {}
                (_, false) => self.woken.notify_one(),
                (_, true) => self.woken.notify_all(),
            }
        }
    }
}

/// The waiters of freestanding builds: the count of notifications in an atomic word, on
/// which the waiters spin (there is no scheduler to sleep in).
#[cfg(not(any(feature = "host", loom)))]
mod imp {
    use crate::sync::atomic::{
        Atomic,
        Relaxed, //
    };

    pub(super) struct WaitQueue {
        /// The number of notifications so far (wrapping).
        generation: Atomic<usize>,
    }

    impl WaitQueue {
        pub(super) const fn new() -> Self {
            Self {
                generation: Atomic::new(0),
            }
        }

        pub(super) fn generation(&self) -> usize {
            // ORDERING: Relaxed: the count orders nothing. The data is reached under the
            // lock, whose acquire and release order it; what the count needs, that a
            // notification counted after this read is seen by the reads in `wait_past`, is
            // coherence of the one word.
            self.generation.load(Relaxed)
        }

        /// Spins until the count of notifications is no longer `seen`, or until the
        /// environment's clock reaches `deadline` (in ns). Returns whether it was notified.
        pub(super) fn wait_past(&self, seen: usize, deadline: Option<u64>) -> bool {
            // ORDERING: Relaxed, as in `generation`.
            while self.generation.load(Relaxed) == seen {
                if deadline.is_some_and(|deadline| crate::backend::env::ktime_get_ns() >= deadline)
                {
                    return false;
                }
                core::hint::spin_loop();
            }
            true
        }

        pub(super) fn notify(&self, _all: bool) {
            // ORDERING: Relaxed, as in `generation`: every spinning waiter sees the new
            // count, so one notification wakes all.
            self.generation.add(1usize, Relaxed);
        }
    }
}

/// What the host's and the model's tests share: a value behind a mutex and the
/// condition variable its changes are signalled on.
#[cfg(all(test, any(feature = "host", loom)))]
mod fixture {
    use crate::{
        prelude::*,
        sync::{
            new_mutex,
            CondVar,
            Mutex, //
        },
    };

    #[pin_data]
    pub(super) struct Shared {
        #[pin]
        pub(super) value: Mutex<u32>,
        #[pin]
        pub(super) changed: CondVar,
    }

    pub(super) fn shared() -> Pin<KBox<Shared>> {
        KBox::pin_init(
            pin_init!(Shared {
                value <- new_mutex!(0),
                changed <- new_condvar!(),
            }),
            GFP_KERNEL,
        )
        .expect("allocation")
    }
}

#[cfg(all(test, feature = "host", not(loom)))]
mod tests {
    use std::{
        thread,
        time::Instant, //
    };

    use crate::sync::CondVarTimeoutResult;

    use super::fixture::shared;

    #[test]
    fn notify_one_wakes_the_waiter_with_the_lock_held_again() {
        let s = shared();
        thread::scope(|scope| {
            scope.spawn(|| {
                *s.value.lock() = 1;
                s.changed.notify_one();
            });
            let mut value = s.value.lock();
            while *value == 0 {
                s.changed.wait(&mut value);
            }
            assert_eq!(*value, 1);
            // The lock is held again: no one else gets it.
            assert!(s.value.try_lock().is_none());
        });
    }

    #[test]
    fn notify_all_wakes_every_waiter() {
        let s = shared();
        thread::scope(|scope| {
            for _ in 0..3 {
                scope.spawn(|| {
                    let mut value = s.value.lock();
                    while *value == 0 {
                        s.changed.wait(&mut value);
                    }
                });
            }
            *s.value.lock() = 1;
            s.changed.notify_all();
        });
    }

    #[test]
    fn timed_wait_without_notification_times_out() {
        let s = shared();
        let start = Instant::now();
        let mut value = s.value.lock();
        let res = s.changed.wait_interruptible_timeout(&mut value, 3);
        assert!(matches!(res, CondVarTimeoutResult::Timeout));
        assert!(start.elapsed().as_millis() >= 3);
    }

    #[test]
    fn notification_with_no_waiter_is_not_kept() {
        let s = shared();
        s.changed.notify_one();
        s.changed.notify_all();
        let mut value = s.value.lock();
        let res = s.changed.wait_interruptible_timeout(&mut value, 1);
        assert!(matches!(res, CondVarTimeoutResult::Timeout));
    }

    #[test]
    fn timed_wait_notified_is_woken_with_jiffies_left() {
        let s = shared();
        thread::scope(|scope| {
            scope.spawn(|| {
                *s.value.lock() = 1;
                s.changed.notify_one();
            });
            let mut value = s.value.lock();
            while *value == 0 {
                match s.changed.wait_interruptible_timeout(&mut value, 60_000) {
                    CondVarTimeoutResult::Woken { jiffies } => assert!(jiffies <= 60_000),
                    CondVarTimeoutResult::Timeout => panic!("60 s passed"),
                    CondVarTimeoutResult::Signal { .. } => panic!("no signals here"),
                }
            }
        });
    }

    #[test]
    fn interruptible_waits_report_no_signal() {
        let s = shared();
        thread::scope(|scope| {
            scope.spawn(|| {
                *s.value.lock() = 1;
                s.changed.notify_sync();
            });
            let mut value = s.value.lock();
            while *value == 0 {
                assert!(!s.changed.wait_interruptible(&mut value));
            }
        });
    }
}

/// The model's exploration of the condition variable (`RUSTFLAGS="--cfg loom" cargo test
/// -p kernel-shim --lib`).
#[cfg(all(test, loom))]
mod loom_tests {
    use loom::{
        sync::Arc,
        thread, //
    };

    use crate::{
        prelude::*,
        sync::CondVarTimeoutResult, //
    };

    fn shared() -> Arc<Pin<KBox<super::fixture::Shared>>> {
        Arc::new(super::fixture::shared())
    }

    #[test]
    fn wait_is_never_left_without_its_notification() {
        // A lost wake-up would leave the waiter asleep for good: loom reports a deadlock.
        loom::model(|| {
            let s = shared();
            let notifier = {
                let s = Arc::clone(&s);
                thread::spawn(move || {
                    *s.value.lock() = 1;
                    s.changed.notify_one();
                })
            };
            let mut value = s.value.lock();
            while *value == 0 {
                s.changed.wait(&mut value);
            }
            drop(value);
            notifier.join().expect("the notifier");
        });
    }

    #[test]
    fn timed_wait_ends_only_when_notified() {
        // The model does not time a wait out: a waiter that checked before the
        // notification is woken by it, whatever the timeout.
        loom::model(|| {
            let s = shared();
            let notifier = {
                let s = Arc::clone(&s);
                thread::spawn(move || {
                    *s.value.lock() = 1;
                    s.changed.notify_all();
                })
            };
            let mut value = s.value.lock();
            if *value == 0 {
                match s.changed.wait_interruptible_timeout(&mut value, 2) {
                    CondVarTimeoutResult::Woken { .. } => assert_eq!(*value, 1),
                    CondVarTimeoutResult::Timeout => panic!("the model times no wait out"),
                    CondVarTimeoutResult::Signal { .. } => panic!("no signals here"),
                }
            }
            drop(value);
            notifier.join().expect("the notifier");
        });
    }
}
