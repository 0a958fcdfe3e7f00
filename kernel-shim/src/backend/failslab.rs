// SPDX-License-Identifier: GPL-2.0

//! Allocation-failure injection (ours, test bench): the host's `failslab` with the
//! kernel's per-task `fail-nth` (`Documentation/fault-injection/fault-injection.rst`).
//!
//! A test arms it on its own thread ([`fail_nth`]): the `n`-th allocation the thread makes
//! from then on, counted from 0, fails with [`AllocError`], as `failslab` makes a
//! `kmalloc` return `NULL`. What counts is every allocation of the crate's containers
//! (`KVec`, `VVec`, `KVVec` growing past their capacity; `KBox`, `VBox`, `KVBox`, a
//! `pin_init` into one): the one path they all take ([`crate::alloc`]). A `reserve` that
//! finds room already, and a zero-sized value, allocate nothing and are not counted;
//! coherent DMA memory is not slab memory and is not counted either.
//!
//! The state is the thread's own, as `fail-nth` is the task's: tests run in parallel on
//! threads of their own, and one arming fails nothing of another's. Allocations a test
//! makes for its bench (a device model it runs in turns, its data) it makes outside the
//! count with [`exempt`].
//!
//! Host only, and only through this module: the driver's code has no part in it and
//! builds the same whether a test arms it or not.
//!
//! ```
//! use kernel::{host::failslab, prelude::*};
//!
//! let armed = failslab::fail_nth(1);
//! let first = KVec::<u8>::with_capacity(16, GFP_KERNEL)?;
//! assert!(KBox::new(7u32, GFP_KERNEL).is_err());
//! assert!(armed.injected());
//! // The test's own allocations, not counted.
//! let kept = failslab::exempt(|| KBox::new(8u32, GFP_KERNEL))?;
//! assert_eq!(armed.allocations(), 2);
//! drop(armed);
//! assert!(KBox::new(7u32, GFP_KERNEL).is_ok());
//! # drop((first, kept));
//! # Ok::<(), Error>(())
//! ```
//!
//! [`AllocError`]: crate::alloc::AllocError

use core::{
    cell::Cell,
    marker::PhantomData, //
};

/// What the thread's injection is set to.
#[derive(Clone, Copy)]
struct State {
    /// The allocation that fails, counted from the arming; `None` if disarmed.
    nth: Option<u64>,
    /// Allocations counted since the arming.
    counted: u64,
    /// Whether the armed failure happened.
    injected: bool,
    /// Nesting depth of [`exempt`]: allocations are not counted while it is above 0.
    exempt: u32,
}

std::thread_local! {
    static STATE: Cell<State> = const {
        Cell::new(State {
            nth: None,
            counted: 0,
            injected: false,
            exempt: 0,
        })
    };
}

/// Counts an allocation the thread is about to make; returns whether it is to fail.
///
/// Called by [`crate::alloc`] before every allocation it makes.
pub(crate) fn should_fail() -> bool {
    STATE.with(|cell| {
        let mut state = cell.get();
        let Some(nth) = state.nth else {
            return false;
        };
        if state.exempt > 0 {
            return false;
        }
        let fail = state.counted == nth;
        state.counted += 1;
        state.injected |= fail;
        cell.set(state);
        fail
    })
}

/// Arms the thread's injection: its `n`-th allocation from now on (0 is the next one)
/// fails, once. Disarmed when the returned guard is dropped.
///
/// # Panics
///
/// If the thread's injection is armed already.
pub fn fail_nth(n: u64) -> FailNth {
    STATE.with(|cell| {
        let state = cell.get();
        assert!(state.nth.is_none(), "failslab: armed twice on one thread");
        cell.set(State {
            nth: Some(n),
            counted: 0,
            injected: false,
            exempt: state.exempt,
        });
    });
    FailNth {
        _thread: PhantomData,
    }
}

/// Runs `f` with the thread's allocations neither counted nor failed: a test's own
/// allocations between those of the code under test.
pub fn exempt<R>(f: impl FnOnce() -> R) -> R {
    /// Leaves the exemption however `f` ends.
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            STATE.with(|cell| {
                let mut state = cell.get();
                state.exempt -= 1;
                cell.set(state);
            });
        }
    }
    STATE.with(|cell| {
        let mut state = cell.get();
        state.exempt += 1;
        cell.set(state);
    });
    let _leave = Leave;
    f()
}

/// The thread's armed injection ([`fail_nth`]); dropping it disarms.
///
/// Not `Send`: the injection is the arming thread's.
pub struct FailNth {
    _thread: PhantomData<*const ()>,
}

impl FailNth {
    /// Returns whether the armed allocation was reached and failed.
    pub fn injected(&self) -> bool {
        STATE.with(|cell| cell.get().injected)
    }

    /// Returns how many allocations the thread made since the arming, the failed one
    /// included (none made under [`exempt`]).
    pub fn allocations(&self) -> u64 {
        STATE.with(|cell| cell.get().counted)
    }
}

impl Drop for FailNth {
    fn drop(&mut self) {
        STATE.with(|cell| {
            let state = cell.get();
            cell.set(State {
                nth: None,
                counted: 0,
                injected: false,
                exempt: state.exempt,
            });
        });
    }
}
