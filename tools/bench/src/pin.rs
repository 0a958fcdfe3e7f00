// SPDX-License-Identifier: GPL-2.0

//! Threads pinned to a CPU: the driver's and the GSP's.

use std::{
    sync::atomic::{
        AtomicBool,
        Ordering, //
    },
    thread::ScopedJoinHandle,
};

/// The CPU of the driver-side agent.
pub const DRIVER_CPU: usize = 0;
/// The CPU of the GSP-side agent.
pub const GSP_CPU: usize = 1;

/// Set once a thread could not be pinned where it was asked to be.
static PIN_FAILED: AtomicBool = AtomicBool::new(false);

/// Pins the calling thread to `cpu`; returns whether it could.
pub fn pin_current_thread(cpu: usize) -> bool {
    // SAFETY: `cpu_set_t` is a plain bit array, for which all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { core::mem::zeroed() };
    if cpu >= 8 * core::mem::size_of::<libc::cpu_set_t>() {
        return false;
    }
    // SAFETY: `cpu` is inside the set (checked above) and `set` is a live `cpu_set_t`.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a live `cpu_set_t` of the size passed; pid 0 is the calling thread.
    let ok =
        unsafe { libc::sched_setaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), &set) } == 0;
    if !ok {
        // ORDERING: `Relaxed`: a flag read after the threads are joined, which orders it.
        PIN_FAILED.store(true, Ordering::Relaxed);
    }
    ok
}

/// Returns whether every thread so far was pinned where it was asked to be.
pub fn all_pinned() -> bool {
    // ORDERING: `Relaxed`: the threads that set it have been joined.
    !PIN_FAILED.load(Ordering::Relaxed)
}

/// Returns whether both agents' CPUs can be pinned to, trying on a thread of its own.
pub fn probe() -> bool {
    std::thread::scope(|s| {
        join(s.spawn(|| pin_current_thread(DRIVER_CPU) && pin_current_thread(GSP_CPU)))
    })
}

/// Runs `driver` on a thread pinned to [`DRIVER_CPU`] and `gsp` on one pinned to
/// [`GSP_CPU`], and returns both results once both have returned. A thread that cannot
/// be pinned runs unpinned (and [`all_pinned`] says so). A panic on either thread is raised
/// again on the caller's.
pub fn run_pinned<D, G, RD, RG>(driver: D, gsp: G) -> (RD, RG)
where
    D: FnOnce() -> RD + Send,
    G: FnOnce() -> RG + Send,
    RD: Send,
    RG: Send,
{
    std::thread::scope(|s| {
        let g = spawn(s, "bench-gsp", || {
            pin_current_thread(GSP_CPU);
            gsp()
        });
        let d = spawn(s, "bench-driver", || {
            pin_current_thread(DRIVER_CPU);
            driver()
        });
        let rd = join(d);
        (rd, join(g))
    })
}

/// Runs `thread(0)`, ..., `thread(n - 1)`, each on a thread of its own named `name` and
/// pinned to `cpu`, while `main` runs on the calling thread; returns what `main` returned
/// and what each thread returned, in order, once all have returned. A thread that cannot
/// be pinned runs unpinned (and [`all_pinned`] says so). A panic on any thread is raised
/// again on the caller's.
pub(crate) fn run_beside<R, T>(
    cpu: usize,
    name: &str,
    n: usize,
    thread: impl Fn(usize) -> T + Sync,
    main: impl FnOnce() -> R,
) -> (R, Vec<T>)
where
    T: Send,
{
    std::thread::scope(|s| {
        let thread = &thread;
        let threads: Vec<_> = (0..n)
            .map(|i| {
                spawn(s, name, move || {
                    pin_current_thread(cpu);
                    thread(i)
                })
            })
            .collect();
        let r = main();
        (r, threads.into_iter().map(join).collect())
    })
}

/// Spawns `f` on a thread named `name` (what `perf report --sort comm` shows).
fn spawn<'scope, T: Send + 'scope>(
    s: &'scope std::thread::Scope<'scope, '_>,
    name: &str,
    f: impl FnOnce() -> T + Send + 'scope,
) -> ScopedJoinHandle<'scope, T> {
    // PANIC: spawning fails only when the system is out of threads or memory, where a
    // benchmark has nothing better to do.
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn_scoped(s, f)
        .expect("spawn a benchmark thread")
}

/// Runs `f` on a thread pinned to `cpu` and returns its result.
pub fn run_on<R: Send>(cpu: usize, f: impl FnOnce() -> R + Send) -> R {
    std::thread::scope(|s| {
        join(spawn(s, "bench-single", || {
            pin_current_thread(cpu);
            f()
        }))
    })
}

/// Joins `thread`, raising its panic again on the caller's thread.
fn join<T>(thread: ScopedJoinHandle<'_, T>) -> T {
    match thread.join() {
        Ok(v) => v,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}
