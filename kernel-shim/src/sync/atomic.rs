// SPDX-License-Identifier: GPL-2.0

//! Atomic variables with orderings named by marker types, at the path and with the
//! method names, argument order and ordering bounds of upstream's `kernel::sync::atomic`
//! (Linux 7.3): [`Atomic<T>`] for the integer types the project shares between agents.
//!
//! An operation takes its ordering as a value of one of the four types of [`ordering`]:
//! [`Relaxed`], [`Acquire`], [`Release`] or [`Full`]. Which of them an operation accepts
//! is part of its signature: a load takes [`Acquire`] or [`Relaxed`], a store
//! [`Release`] or [`Relaxed`], a read-modify-write any of the four. A wrong ordering is
//! therefore a compile-time error, never a run-time panic.
//!
//! # Backends
//!
//! Upstream calls the C `atomic_*()` helpers; this implementation uses the compiler's
//! atomics, and under `--cfg loom` loom's, so that the model checker sees every access
//! to a shared word. Each ordering type is mapped onto one ordering of the C11 model:
//!
//! | ours | C11 (`core` / loom) |
//! |---|---|
//! | [`Relaxed`] | `Relaxed` |
//! | [`Acquire`] | `Acquire` |
//! | [`Release`] | `Release` |
//! | [`Full`] | `SeqCst` |
//!
//! [`Full`] is the kernel's fully ordered read-modify-write (the C `atomic_xchg()`,
//! `atomic_cmpxchg()`, `atomic_fetch_add()` without a suffix), which behaves as if a full
//! barrier preceded and followed it. `SeqCst` is its model here: it is both an acquire
//! and a release, all `SeqCst` operations fall in one total order, and on x86-64 and
//! arm64 it compiles to the instructions the kernel itself uses for a fully ordered RMW
//! (`lock`-prefixed, and `casal`/`ldaxr`–`stlxr`). In the C11 abstract machine it is
//! weaker than a barrier on either side for *other* relaxed accesses; code that needs
//! that says so with an explicit [`crate::sync::barrier::smp_mb`].
//!
//! A failed [`Atomic::cmpxchg`] orders nothing: its load is [`Relaxed`], whatever the
//! ordering asked for.
//!
//! Under loom an atomic is a loom object, not plain memory, so the methods that hand out
//! its address or a plain reference to its value ([`Atomic::as_ptr`],
//! [`Atomic::get_mut`]) exist only outside the model, [`Atomic::from_ptr`], which would
//! treat plain memory as one, panics there, and [`Atomic::new`] is not `const` there.
//! `from_ptr` is kept under the model so that code calling it builds there too; the
//! model's scenarios never reach such a call.
//!
//! # Examples
//!
//! ```
//! use kernel::sync::atomic::{
//!     Acquire,
//!     Atomic,
//!     Full,
//!     Relaxed,
//!     Release, //
//! };
//!
//! let seq = Atomic::new(7u64);
//! seq.store(8, Release);
//! assert_eq!(seq.load(Acquire), 8);
//! assert_eq!(seq.cmpxchg(8, 9, Full), Ok(8));
//! assert_eq!(seq.cmpxchg(8, 10, Relaxed), Err(9));
//! assert_eq!(seq.fetch_add(1, Relaxed), 9);
//! assert_eq!(seq.xchg(0, Acquire), 10);
//! ```
//!
//! The shim's alone: a kernel build uses Linux 7.3's own `kernel::sync::atomic`.

#[cfg(not(loom))]
use core::cell::UnsafeCell;
use core::sync::atomic::Ordering as MemOrder;

/// The ordering marker types and the traits that sort them, as upstream's
/// `kernel::sync::atomic::ordering`.
///
/// The semantics are the Linux kernel memory model's
/// (`tools/memory-model/Documentation/explanation.txt`):
///
/// - [`Relaxed`]: atomicity only; no order against other accesses beyond what address,
///   data and control dependencies give.
/// - [`Acquire`]: the load (of a load or a read-modify-write) is ordered before every
///   later access of the same agent.
/// - [`Release`]: every earlier access of the same agent is ordered before the store
///   (of a store or a read-modify-write).
/// - [`Full`]: a read-modify-write ordered against every earlier and every later access,
///   as if `smp_mb()` stood on both sides of it. It is also the [`Full`] flavour of the
///   memory barriers ([`crate::sync::barrier`]), which name this very type.
pub mod ordering {
    /// The relaxed ordering: atomicity, no order (see the [module docs](self)).
    #[derive(Clone, Copy, Debug)]
    pub struct Relaxed;

    /// The acquire ordering: the load comes before everything after it (see the
    /// [module docs](self)).
    #[derive(Clone, Copy, Debug)]
    pub struct Acquire;

    /// The release ordering: everything before it comes before the store (see the
    /// [module docs](self)).
    #[derive(Clone, Copy, Debug)]
    pub struct Release;

    /// The fully ordered ordering of a read-modify-write, and the full barrier flavour of
    /// [`crate::sync::barrier`] (see the [module docs](self)).
    #[derive(Clone, Copy, Debug)]
    pub struct Full;

    /// Which of the four orderings a marker type stands for.
    #[doc(hidden)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum OrderingType {
        /// [`Relaxed`].
        Relaxed,
        /// [`Acquire`].
        Acquire,
        /// [`Release`].
        Release,
        /// [`Full`].
        Full,
    }

    mod sealed {
        /// Keeps the ordering traits to the four marker types of this module.
        pub trait Sealed {}
    }

    /// Any of the four orderings: the bound of the read-modify-write operations.
    pub trait Ordering: sealed::Sealed {
        /// The ordering this type stands for.
        const TYPE: OrderingType;
    }

    /// [`Acquire`] or [`Relaxed`]: the bound of a load.
    pub trait AcquireOrRelaxed: Ordering {}

    /// [`Release`] or [`Relaxed`]: the bound of a store.
    pub trait ReleaseOrRelaxed: Ordering {}

    /// Makes each marker type an [`Ordering`] standing for the variant of its name, and
    /// gives it the narrower bounds listed after it.
    macro_rules! orderings {
        ($($marker:ident: $($narrower:ident),*;)*) => {$(
            impl sealed::Sealed for $marker {}
            impl Ordering for $marker {
                const TYPE: OrderingType = OrderingType::$marker;
            }
            $(impl $narrower for $marker {})*
        )*};
    }

    orderings! {
        Relaxed: AcquireOrRelaxed, ReleaseOrRelaxed;
        Acquire: AcquireOrRelaxed;
        Release: ReleaseOrRelaxed;
        Full: ;
    }
}

pub use ordering::{
    Acquire,
    Full,
    Relaxed,
    Release, //
};

/// Returns the C11 ordering that models the marker type `O` (the table of the module
/// documentation).
#[inline(always)]
const fn mem_order<O: ordering::Ordering>() -> MemOrder {
    match O::TYPE {
        ordering::OrderingType::Relaxed => MemOrder::Relaxed,
        ordering::OrderingType::Acquire => MemOrder::Acquire,
        ordering::OrderingType::Release => MemOrder::Release,
        ordering::OrderingType::Full => MemOrder::SeqCst,
    }
}

mod sealed {
    /// Keeps [`super::AtomicImpl`] to the primitive integers implemented here.
    pub trait Sealed {}
}

/// Where an [`Atomic`] keeps its value: the bare integer, reached through `core`'s atomic
/// of the same width.
#[cfg(not(loom))]
type Cell<R> = UnsafeCell<R>;

/// Where an [`Atomic`] keeps its value under the model: a loom atomic.
#[cfg(loom)]
type Cell<R> = <R as AtomicImpl>::Loom;

/// A primitive integer on which the machine performs atomic operations, and which
/// therefore can be the representation ([`AtomicType::Repr`]) of an atomic type.
///
/// Sealed: `i32`, `i64` and `isize`. The hidden methods are the backend: they perform
/// one operation on the value in the [`Atomic`]'s cell with a C11 ordering.
pub trait AtomicImpl: Sized + Copy + sealed::Sealed {
    /// The operand of [`Atomic::add`], [`Atomic::fetch_add`] and [`Atomic::fetch_sub`].
    type Delta;

    /// The loom atomic that stands for a value of this type under the model.
    #[doc(hidden)]
    #[cfg(loom)]
    type Loom: Send + Sync;

    /// Makes a cell holding `v` (under the model, a new loom atomic).
    #[doc(hidden)]
    #[cfg(loom)]
    fn cell(v: Self) -> Cell<Self>;

    /// Loads the value.
    #[doc(hidden)]
    fn cell_load(c: &Cell<Self>, o: MemOrder) -> Self;

    /// Stores `v`.
    #[doc(hidden)]
    fn cell_store(c: &Cell<Self>, v: Self, o: MemOrder);

    /// Stores `v`; returns the value it replaced.
    #[doc(hidden)]
    fn cell_swap(c: &Cell<Self>, v: Self, o: MemOrder) -> Self;

    /// Stores `new` if the value is `old`; returns the value seen, `Ok` if it was `old`.
    /// `o` orders a success; a failure is relaxed.
    #[doc(hidden)]
    fn cell_cmpxchg(c: &Cell<Self>, old: Self, new: Self, o: MemOrder) -> Result<Self, Self>;

    /// Adds `d`, wrapping; returns the value before.
    #[doc(hidden)]
    fn cell_fetch_add(c: &Cell<Self>, d: Self::Delta, o: MemOrder) -> Self;

    /// Subtracts `d`, wrapping; returns the value before.
    #[doc(hidden)]
    fn cell_fetch_sub(c: &Cell<Self>, d: Self::Delta, o: MemOrder) -> Self;
}

/// Implements [`AtomicImpl`] for the integer `$int` with `core`'s atomic `$atomic` (and
/// loom's of the same name under the model); `$backend` is the module of the helper that
/// finds that atomic for a cell.
macro_rules! atomic_impl {
    ($int:ty, $atomic:ident, $backend:ident) => {
        impl sealed::Sealed for $int {}

        mod $backend {
            use super::Cell;

            // `from_ptr` below needs the integer's alignment to be the atomic's.
            #[cfg(not(loom))]
            const _: () = assert!(
                core::mem::align_of::<$int>()
                    == core::mem::align_of::<core::sync::atomic::$atomic>()
            );

            /// Returns the atomic that operates on the cell `c`.
            #[cfg(not(loom))]
            #[inline(always)]
            pub(super) fn of(c: &Cell<$int>) -> &core::sync::atomic::$atomic {
                // SAFETY:
                // - `c.get()` is valid for reads and writes for as long as `c` is borrowed,
                //   and aligned for the atomic (the integer's alignment is the atomic's,
                //   asserted above).
                // - Every access to an `Atomic`'s cell is atomic and of the cell's width,
                //   except through `Atomic::get_mut`, whose borrow is the only one, and
                //   through the pointers of `Atomic::as_ptr` and `Atomic::from_ptr`, whose
                //   users must not race with atomic accesses (their contracts).
                unsafe { core::sync::atomic::$atomic::from_ptr(c.get()) }
            }

            /// Returns the loom atomic of the cell `c`: the cell itself.
            #[cfg(loom)]
            #[inline(always)]
            pub(super) fn of(c: &Cell<$int>) -> &loom::sync::atomic::$atomic {
                c
            }
        }

        // ORDERING: each operation is ordered as its caller asks (`o`, from `mem_order`);
        // the load of a failed compare-and-exchange is relaxed, as upstream's.
        impl AtomicImpl for $int {
            type Delta = $int;

            #[cfg(loom)]
            type Loom = loom::sync::atomic::$atomic;

            #[cfg(loom)]
            fn cell(v: Self) -> Cell<Self> {
                loom::sync::atomic::$atomic::new(v)
            }

            #[inline(always)]
            fn cell_load(c: &Cell<Self>, o: MemOrder) -> Self {
                $backend::of(c).load(o)
            }

            #[inline(always)]
            fn cell_store(c: &Cell<Self>, v: Self, o: MemOrder) {
                $backend::of(c).store(v, o)
            }

            #[inline(always)]
            fn cell_swap(c: &Cell<Self>, v: Self, o: MemOrder) -> Self {
                $backend::of(c).swap(v, o)
            }

            #[inline(always)]
            fn cell_cmpxchg(
                c: &Cell<Self>,
                old: Self,
                new: Self,
                o: MemOrder,
            ) -> Result<Self, Self> {
                $backend::of(c).compare_exchange(old, new, o, MemOrder::Relaxed)
            }

            #[inline(always)]
            fn cell_fetch_add(c: &Cell<Self>, d: Self::Delta, o: MemOrder) -> Self {
                $backend::of(c).fetch_add(d, o)
            }

            #[inline(always)]
            fn cell_fetch_sub(c: &Cell<Self>, d: Self::Delta, o: MemOrder) -> Self {
                $backend::of(c).fetch_sub(d, o)
            }
        }
    };
}

atomic_impl!(i32, AtomicI32, backend_i32);
atomic_impl!(i64, AtomicI64, backend_i64);
atomic_impl!(isize, AtomicIsize, backend_isize);

/// A type whose values an [`Atomic`] can hold: one the machine can operate on atomically
/// as its representation [`AtomicType::Repr`].
///
/// # Safety
///
/// - `Self` has the size and the alignment of `Self::Repr`.
/// - The bits of every value of `Self` are a valid `Self::Repr`, and read back as a
///   `Self` they are the same value again. (Not every `Self::Repr` need be a valid
///   `Self`: an [`Atomic<Self>`] only ever holds the bits of valid values.)
/// - A `Self` may be moved to another thread (it is [`Send`], or as good as one for
///   moving its value: a pointer, say, whose dereferencing is unsafe anyway).
pub unsafe trait AtomicType: Sized + Copy {
    /// The integer the machine operates on in place of a `Self`.
    type Repr: AtomicImpl;
}

/// A type whose [`Atomic`] supports wrapping addition and subtraction of an `Rhs`.
///
/// # Safety
///
/// Adding (or subtracting), with wrap-around, the delta [`AtomicAdd::rhs_into_delta`]
/// makes of any `Rhs` to the representation of any valid `Self` gives the representation
/// of a valid `Self`.
pub unsafe trait AtomicAdd<Rhs = Self>: AtomicType {
    /// Returns the delta to add to the representation for adding `rhs`.
    fn rhs_into_delta(rhs: Rhs) -> <Self::Repr as AtomicImpl>::Delta;
}

/// Implements [`AtomicType`] and [`AtomicAdd`] for an integer type `$t` with the
/// representation `$repr` of the same width.
macro_rules! atomic_integer {
    ($($t:ty => $repr:ty),* $(,)?) => {$(
        // SAFETY: `$t` and `$repr` are integers of the same width, hence of the same size
        // and alignment, and every bit pattern is a value of both; integers are `Send`.
        unsafe impl AtomicType for $t {
            type Repr = $repr;
        }

        // SAFETY: Every representation is a valid `$t`.
        unsafe impl AtomicAdd for $t {
            #[inline(always)]
            fn rhs_into_delta(rhs: $t) -> $repr {
                // The same bits: wrapping arithmetic on them is the same whether they are
                // read as a `$t` or as a `$repr`.
                <$repr>::from_ne_bytes(rhs.to_ne_bytes())
            }
        }
    )*};
}

atomic_integer!(
    i32 => i32,
    u32 => i32,
    i64 => i64,
    u64 => i64,
    isize => isize,
    usize => isize,
);

/// Returns the representation of `v`.
#[inline(always)]
const fn repr_of<T: AtomicType>(v: T) -> T::Repr {
    // SAFETY: `T` has the size of `T::Repr`, and the bits of any `T` read as a `T::Repr`
    // are a valid `T::Repr` (the contract of `AtomicType`).
    unsafe { core::mem::transmute_copy(&v) }
}

/// Returns the value of which `r` is the representation.
///
/// # Safety
///
/// `r` must be the representation of a valid `T`.
#[inline(always)]
const unsafe fn value_of<T: AtomicType>(r: T::Repr) -> T {
    // SAFETY: `T` has the size of `T::Repr`, and `r` holds a valid `T` (the caller's
    // contract).
    unsafe { core::mem::transmute_copy(&r) }
}

/// A `T` that any number of agents may read and update at once, each access atomic and
/// ordered as its ordering argument says ([`ordering`]).
///
/// Laid out as a `T` (size and alignment; the cell keeps the compiler from assuming
/// anything of its contents), so a word of memory shared with another agent can be
/// treated as one ([`Atomic::from_ptr`]). Under `--cfg loom` it is a loom atomic instead
/// (see the [module documentation](self)).
///
/// # Invariants
///
/// The cell holds the representation of a valid `T`.
#[repr(transparent)]
pub struct Atomic<T: AtomicType>(Cell<T::Repr>);

// SAFETY: Moving an `Atomic<T>` moves a `T`, which `AtomicType` allows.
unsafe impl<T: AtomicType> Send for Atomic<T> {}

// SAFETY: A shared `Atomic<T>` is only ever accessed atomically (`get_mut` needs `&mut`),
// and the `T`s it hands out may move between threads (`AtomicType`).
unsafe impl<T: AtomicType> Sync for Atomic<T> {}

#[cfg(not(loom))]
impl<T: AtomicType> Atomic<T> {
    /// Returns an atomic holding `v`.
    #[inline(always)]
    pub const fn new(v: T) -> Self {
        // INVARIANT: The cell holds the representation of `v`.
        Self(UnsafeCell::new(repr_of(v)))
    }

    /// Returns the `T` at `ptr` as an atomic: an atomic view of a plain `T`, such as a
    /// word of memory shared with a device or a field of a C structure, for which a C
    /// caller uses `READ_ONCE()`, `smp_load_acquire()`, `atomic64_cmpxchg()`, … .
    ///
    /// Under `--cfg loom` it panics: a loom atomic is not a `T` in memory (see the
    /// model's `from_ptr`).
    ///
    /// # Safety
    ///
    /// - `ptr` is aligned for `T` and valid for reads and writes for `'a`, and holds a
    ///   valid `T` for `'a`.
    /// - For `'a`, no other access to `*ptr` races with the atomic accesses made through
    ///   the returned reference, as the Linux kernel memory model defines a data race
    ///   (other atomic accesses never do).
    #[inline(always)]
    pub unsafe fn from_ptr<'a>(ptr: *mut T) -> &'a Self {
        // SAFETY: `Atomic<T>` is a transparent `UnsafeCell<T::Repr>`, laid out as a `T`
        // (`AtomicType`); `ptr` is aligned and valid for `'a`, and holds a valid `T`, so
        // the invariant holds; nothing races with its accesses (the caller's contract).
        unsafe { &*ptr.cast::<Self>() }
    }

    /// Returns the address of the value, aligned for `T`.
    ///
    /// Not under `--cfg loom`. Accesses through it must not race with the atomic ones
    /// (Linux kernel memory model), and a store through it must store a valid `T`.
    #[inline(always)]
    pub const fn as_ptr(&self) -> *mut T {
        // `T` is laid out as `T::Repr` (`AtomicType`), and the cell's pointer is aligned.
        self.0.get().cast()
    }

    /// Returns the value for plain access: `&mut self` rules out any concurrent one.
    ///
    /// Not under `--cfg loom`.
    #[inline(always)]
    pub fn get_mut(&mut self) -> &mut T {
        // SAFETY: The cell's pointer is valid and aligned for a `T` (laid out as `T::Repr`)
        // and holds a valid `T` (the invariant); the exclusive borrow of `self` makes it
        // the only access for the returned lifetime. A `T` written through it stays the
        // representation of a valid `T`.
        unsafe { &mut *self.0.get().cast::<T>() }
    }
}

#[cfg(loom)]
impl<T: AtomicType> Atomic<T> {
    /// Returns an atomic holding `v`: a new loom atomic (not `const` under the model).
    pub fn new(v: T) -> Self {
        // INVARIANT: The cell holds the representation of `v`.
        Self(T::Repr::cell(repr_of(v)))
    }

    /// Outside the model, returns the `T` at `ptr` as an atomic; under it, panics.
    ///
    /// The model's atomics are loom objects, not a `T` in memory, so there is no atomic to
    /// return: this exists so that the code calling it (the copy engine's barrier word in
    /// coherent memory) builds under `--cfg loom`, and no model scenario runs it.
    ///
    /// # Safety
    ///
    /// As outside the model: `ptr` is aligned for `T`, valid for reads and writes and
    /// holds a valid `T` for `'a`, and no access to `*ptr` races with the atomic ones
    /// made through the result.
    ///
    /// # Panics
    ///
    /// Always.
    #[track_caller]
    pub unsafe fn from_ptr<'a>(ptr: *mut T) -> &'a Self {
        let _ = ptr;
        // PANIC: a scenario that needs a shared word gives it a loom atomic of its own.
        panic!("Atomic::from_ptr: no atomic in plain memory under the loom model")
    }
}

impl<T: AtomicType> Atomic<T> {
    /// Returns the value: C's `atomic_read()` ([`Relaxed`]) or `atomic_read_acquire()`
    /// ([`Acquire`]).
    #[inline(always)]
    pub fn load<Ordering: ordering::AcquireOrRelaxed>(&self, _: Ordering) -> T {
        let r = T::Repr::cell_load(&self.0, mem_order::<Ordering>());
        // SAFETY: `r` was read from the cell, which holds a valid `T` (the invariant).
        unsafe { value_of(r) }
    }

    /// Replaces the value with `v`: C's `atomic_set()` ([`Relaxed`]) or
    /// `atomic_set_release()` ([`Release`]).
    #[inline(always)]
    pub fn store<Ordering: ordering::ReleaseOrRelaxed>(&self, v: T, _: Ordering) {
        // INVARIANT: The representation of a valid `T` replaces the cell's.
        T::Repr::cell_store(&self.0, repr_of(v), mem_order::<Ordering>())
    }

    /// Replaces the value with `v` and returns the value it replaced, in one atomic step:
    /// C's `atomic_xchg*()`.
    #[inline(always)]
    pub fn xchg<Ordering: ordering::Ordering>(&self, v: T, _: Ordering) -> T {
        // INVARIANT: The representation of a valid `T` replaces the cell's.
        let r = T::Repr::cell_swap(&self.0, repr_of(v), mem_order::<Ordering>());
        // SAFETY: `r` was read from the cell, which held a valid `T` (the invariant).
        unsafe { value_of(r) }
    }

    /// Replaces the value with `new` if it is `old` (compared bit for bit), in one atomic
    /// step: C's `atomic_cmpxchg*()`.
    ///
    /// Returns `Ok(old)` when it replaced the value, else `Err` with the value it found.
    /// Only a success is ordered as asked; the load of a failure is [`Relaxed`]. A failure
    /// means the value was not `old`: it never fails spuriously.
    #[inline(always)]
    pub fn cmpxchg<Ordering: ordering::Ordering>(
        &self,
        old: T,
        new: T,
        _: Ordering,
    ) -> Result<T, T> {
        // INVARIANT: On success the representation of a valid `T` replaces the cell's; on
        // failure the cell is unchanged.
        let seen =
            T::Repr::cell_cmpxchg(&self.0, repr_of(old), repr_of(new), mem_order::<Ordering>());
        match seen {
            // SAFETY: `r` was read from the cell, which held a valid `T` (the invariant).
            Ok(r) => Ok(unsafe { value_of(r) }),
            // SAFETY: As above.
            Err(r) => Err(unsafe { value_of(r) }),
        }
    }

    /// Adds `v`, wrapping, and returns nothing: C's `atomic_add()`, which is relaxed.
    #[inline(always)]
    pub fn add<Rhs>(&self, v: Rhs, _: ordering::Relaxed)
    where
        T: AtomicAdd<Rhs>,
    {
        // INVARIANT: The sum is the representation of a valid `T` (`AtomicAdd`).
        T::Repr::cell_fetch_add(&self.0, T::rhs_into_delta(v), MemOrder::Relaxed);
    }

    /// Adds `v`, wrapping, and returns the value before, in one atomic step: C's
    /// `atomic_fetch_add*()`.
    #[inline(always)]
    pub fn fetch_add<Rhs, Ordering: ordering::Ordering>(&self, v: Rhs, _: Ordering) -> T
    where
        T: AtomicAdd<Rhs>,
    {
        // INVARIANT: The sum is the representation of a valid `T` (`AtomicAdd`).
        let r = T::Repr::cell_fetch_add(&self.0, T::rhs_into_delta(v), mem_order::<Ordering>());
        // SAFETY: `r` was read from the cell, which held a valid `T` (the invariant).
        unsafe { value_of(r) }
    }

    /// Subtracts `v`, wrapping, and returns the value before, in one atomic step: C's
    /// `atomic_fetch_sub*()`.
    #[inline(always)]
    pub fn fetch_sub<Rhs, Ordering: ordering::Ordering>(&self, v: Rhs, _: Ordering) -> T
    where
        T: AtomicAdd<Rhs>,
    {
        // INVARIANT: The difference is the representation of a valid `T` (`AtomicAdd`).
        let r = T::Repr::cell_fetch_sub(&self.0, T::rhs_into_delta(v), mem_order::<Ordering>());
        // SAFETY: `r` was read from the cell, which held a valid `T` (the invariant).
        unsafe { value_of(r) }
    }
}

impl<T: AtomicType + core::fmt::Debug> core::fmt::Debug for Atomic<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.load(Relaxed).fmt(f)
    }
}
