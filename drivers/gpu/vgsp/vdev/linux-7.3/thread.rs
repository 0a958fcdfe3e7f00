// SPDX-License-Identifier: GPL-2.0

//! A device model on a kernel thread of its own, beside the driver.

use core::cell::UnsafeCell;

use kernel::{
    bindings,
    error::from_err_ptr,
    prelude::*,
    sync::Completion, //
};

/// What [`run_beside`] shares with its device thread, on the caller's stack.
///
/// Until `done` is completed only the device thread touches `device` and `result`; after
/// that, only the caller.
#[pin_data]
struct Beside<D> {
    /// The device model; taken by the thread.
    device: UnsafeCell<Option<D>>,
    /// What the model returned.
    result: UnsafeCell<Result>,
    /// Completed by the thread once `result` is written, its last access to the `Beside`.
    #[pin]
    done: Completion,
}

/// The device thread: runs the model, stores its result and completes `done`.
///
/// # Safety
///
/// `data` must point to a `Beside<D>` that stays valid until its `done` is completed, and
/// whose `device` and `result` nobody else touches until then.
unsafe extern "C" fn device_thread<D: FnOnce() -> Result + Send>(data: *mut c_void) -> c_int {
    // SAFETY: The caller's contract: `data` is a live `Beside<D>`, until `done` completes.
    let beside = unsafe { &*data.cast::<Beside<D>>() };
    // SAFETY: Only this thread touches `device` until `done` completes.
    let device = unsafe { (*beside.device.get()).take() };
    if let Some(device) = device {
        let result = device();
        // SAFETY: Only this thread touches `result` until `done` completes.
        unsafe { *beside.result.get() = result };
    }
    // ORDERING: `complete_all` takes and releases the completion's lock after the writes
    // above, and `wait_for_completion` in `run_beside` takes it before it returns, so the
    // caller's read of `result` comes after them. It is this thread's last access to
    // `beside`: the C `complete_all` touches the completion only under its lock, and the
    // waiter cannot return, and free the `Beside`, before it has that lock (as for C's
    // completions on the stack).
    beside.done.complete_all();
    0
}

/// Runs `device` on a kernel thread while `driver` runs on the calling thread, and returns
/// both results once both have returned.
///
/// The thread is an unbound kernel thread called `vdev`, free to run on any CPU. `driver`
/// must make `device` return (a stop flag and [`SimBar::kick`](crate::SimBar::kick), say):
/// this waits for it, without a timeout, once `driver` has returned. If the thread cannot
/// be created, `driver` runs alone and the device's result is that error.
///
/// `driver` must return: a failed KUnit assertion, which ends the test's thread without
/// unwinding, would leave the device thread using a stack frame that is gone. Return the
/// findings and assert on them afterwards.
///
/// # Errors
///
/// The first result is `device`'s, or the error of `kthread_create_on_node` (`ENOMEM`,
/// `EINTR` with a fatal signal pending).
pub fn run_beside<D, F, R>(device: D, driver: F) -> (Result, R)
where
    D: FnOnce() -> Result + Send,
    F: FnOnce() -> R,
{
    pin_init::stack_pin_init!(let beside = pin_init!(Beside {
        device: UnsafeCell::new(Some(device)),
        result: UnsafeCell::new(Err(EINVAL)),
        done <- Completion::new(),
    }));
    // Shared from here on: the thread's accesses go through `UnsafeCell`s and the completion.
    let beside: &Beside<D> = beside.into_ref().get_ref();
    let data = core::ptr::from_ref(beside).cast_mut().cast::<c_void>();
    // SAFETY: `device_thread::<D>` gets `beside`, which stays pinned on this stack until
    // after `done` has completed (waited for below), and which nothing else touches until
    // then; the name is a NUL-terminated format with no conversion.
    let task = unsafe {
        bindings::kthread_create_on_node(
            Some(device_thread::<D>),
            data,
            bindings::NUMA_NO_NODE,
            c"vdev".as_char_ptr(),
        )
    };
    let task = match from_err_ptr(task) {
        Ok(task) => task,
        // `device` is dropped with `beside`, never run.
        Err(e) => return (Err(e), driver()),
    };
    // SAFETY: `task` is the new kernel thread, not yet woken; it exits by itself once
    // `device_thread` returns, and is not used here after this.
    unsafe { bindings::wake_up_process(task) };
    let r = driver();
    beside.done.wait_for_completion();
    // SAFETY: `done` has completed, so the thread no longer touches `result`; it is `Copy`.
    let result = unsafe { *beside.result.get() };
    (result, r)
}
