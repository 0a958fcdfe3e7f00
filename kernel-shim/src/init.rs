// SPDX-License-Identifier: GPL-2.0

//! In-place initialisation: the `pin-init` crate's initialisers, and this crate's
//! additions to them, under Linux 7.3's paths.
//!
//! A value that must not move once it exists (a [`Mutex`](crate::sync::Mutex), a
//! [`CondVar`](crate::sync::CondVar), a struct holding one) is not returned by its
//! constructor: the constructor returns an initialiser, an `impl PinInit<T, E>`, and
//! whoever owns the memory runs it there. [`InPlaceInit`] runs one in a new [`Box`]:
//! `KBox::pin_init(new_mutex!(0), GFP_KERNEL)?` is a `Pin<KBox<Mutex<i32>>>`.
//!
//! # What comes from where
//!
//! As in 7.3, the initialiser machinery is the Rust-for-Linux `pin-init` crate's, and
//! [`prelude`](crate::prelude) re-exports its `#[pin_data]`, `#[pinned_drop]`,
//! [`PinInit`], [`Init`], [`InPlaceWrite`] and the trait [`Zeroable`].
//! This module adds 7.3's own: [`InPlaceInit`], and the macros
//! [`try_pin_init!`](crate::try_pin_init) and [`try_init!`](crate::try_init), which take the
//! error type after `?` like `pin-init`'s but default it to [`Error`] when none is given.
//! The prelude's [`pin_init!`](crate::prelude::pin_init) and [`init!`](crate::prelude::init)
//! are ours too, for 7.3's syntax, which 0.0.10's lacks: all four take the type by any path
//! (`init!(bindings::Foo { .. })`) over `pin-init`'s own expansion, and the prelude's
//! `#[derive(Zeroable)]` (the `macros` crate's) also takes tuple structs and unions.
//!
//! In a kernel the crate is `pin_init`, which Kbuild hands to every crate. Here it is
//! crates.io's `pinned-init` 0.0.10 (the same project's code, without its `alloc`
//! feature, which needs nightly), and two things follow:
//!
//! - The attribute and derive macros (`#[pin_data]`, `#[pinned_drop]`,
//!   `#[derive(Zeroable)]`) expand to paths through `::pinned_init`, so a crate that uses
//!   them must depend on it itself:
//!
//!   ```toml
//!   [dependencies]
//!   pinned-init = { workspace = true }
//!   # outside this workspace: { version = "0.0.10", default-features = false }
//!   ```
//!
//!   The declarative macros (`pin_init!`, `try_pin_init!`, `init!`, `try_init!`) need no
//!   such dependency: they reach the crate through this one.
//! - Code that names the crate itself, for what the prelude does not carry
//!   (`stack_pin_init!`, `pin_init_from_closure`, `init_zeroed`, ...), spells it
//!   `pinned_init::` here where a kernel spells it `pin_init::`.
//!
//! # Examples
//!
//! A struct with a lock in it, built in place in a box:
//!
//! ```
//! use kernel::{
//!     prelude::*,
//!     sync::{
//!         new_mutex,
//!         Mutex, //
//!     },
//! };
//!
//! #[pin_data]
//! struct Counters {
//!     id: u32,
//!     #[pin]
//!     sent: Mutex<u64>,
//! }
//!
//! impl Counters {
//!     fn new(id: u32) -> impl PinInit<Self> {
//!         pin_init!(Self {
//!             id,
//!             sent <- new_mutex!(0, "Counters::sent"),
//!         })
//!     }
//! }
//!
//! let counters = KBox::pin_init(Counters::new(7), GFP_KERNEL)?;
//! *counters.sent.lock() += 3;
//! assert_eq!((counters.id, *counters.sent.lock()), (7, 3));
//! # Ok::<(), Error>(())
//! ```
//!
//! [`Zeroable`] on a type of one's own, and its `zeroed()`:
//!
//! ```
//! use kernel::prelude::*;
//!
//! /// A value whose all-zero bytes mean "nothing yet".
//! #[derive(Debug, PartialEq)]
//! struct Tally {
//!     sent: u64,
//!     lost: u32,
//! }
//!
//! // SAFETY: All-zero bytes are a valid `u64` and a valid `u32`, and `Tally` holds
//! // nothing else.
//! unsafe impl Zeroable for Tally {}
//!
//! assert_eq!(Tally::zeroed(), Tally { sent: 0, lost: 0 });
//! assert_eq!(u16::zeroed(), 0);
//! ```
//!
//! A pinned value on the stack, through the crate itself (`pin_init::stack_pin_init!` in a
//! kernel):
//!
//! ```
//! use kernel::{
//!     prelude::*,
//!     sync::new_mutex, //
//! };
//!
//! pinned_init::stack_pin_init!(let hits = new_mutex!(0u32));
//! *hits.lock() += 1;
//! assert_eq!(*hits.lock(), 1);
//! ```
//!
//! [`Box`]: crate::alloc::Box

use core::{
    convert::Infallible,
    mem::MaybeUninit,
    pin::Pin, //
};

use pinned_init::{
    init_from_closure,
    pin_init_from_closure,
    InPlaceWrite,
    Init,
    PinInit, //
};

use crate::{
    alloc::{
        AllocError,
        Allocator,
        Box,
        Flags, //
    },
    error::{
        self,
        Error, //
    },
};

/// The `pin-init` crate, for this crate's macros (and the attribute macros' expansions
/// reach it as `::pinned_init`, see the [module docs](self)).
#[doc(hidden)]
pub use pinned_init as __pin_init;

/// `pin-init`'s trait, under the name [`register!`](crate::io::register) implements it by.
///
/// 7.3's `kernel::init` has no `Zeroable`: name it through the prelude, as 7.3's code does.
#[doc(hidden)]
pub use pinned_init::Zeroable;

/// A smart pointer that can be made around a value initialised in place, in new memory of
/// its own.
///
/// Implemented for every [`Box`] (`KBox`, `VBox`, `KVBox`); 7.3 also implements it for
/// `Arc`, which this crate does not have.
pub trait InPlaceInit<T>: Sized {
    /// What a pinned `Self` is: `Pin<Self>` for a pointer that does not pin by itself.
    type PinnedSelf;

    /// Allocates memory for a `T`, runs `init` there, and returns the pinned pointer to it:
    /// the value will not move again until it is dropped.
    ///
    /// # Errors
    ///
    /// - The error of `init`; the memory is freed and nothing is dropped.
    /// - [`AllocError`], converted into `E`, if the memory cannot be had.
    fn try_pin_init<E>(init: impl PinInit<T, E>, flags: Flags) -> Result<Self::PinnedSelf, E>
    where
        E: From<AllocError>;

    /// [`InPlaceInit::try_pin_init`], with the error converted into an [`Error`] (an
    /// allocation failure is `ENOMEM`).
    ///
    /// # Errors
    ///
    /// - The error of `init`, converted into an [`Error`].
    /// - `ENOMEM` if the memory cannot be had.
    #[inline]
    fn pin_init<E>(init: impl PinInit<T, E>, flags: Flags) -> error::Result<Self::PinnedSelf>
    where
        Error: From<E>,
    {
        // SAFETY: The closure hands its slot to `init` as it got it (valid for writes, and
        // pinned for as long as the value will live there: `pin_init_from_closure`'s
        // guarantees to its closure are those `__pinned_init` asks for), and returns what
        // `init` returned with only the error converted: the slot holds a pinned, valid
        // `T` exactly when it returns `Ok`, and is left to be freed otherwise.
        let init = unsafe {
            pin_init_from_closure(move |slot: *mut T| init.__pinned_init(slot).map_err(Error::from))
        };
        Self::try_pin_init(init, flags)
    }

    /// Allocates memory for a `T`, runs `init` there, and returns the pointer to it.
    ///
    /// # Errors
    ///
    /// - The error of `init`; the memory is freed and nothing is dropped.
    /// - [`AllocError`], converted into `E`, if the memory cannot be had.
    fn try_init<E>(init: impl Init<T, E>, flags: Flags) -> Result<Self, E>
    where
        E: From<AllocError>;

    /// [`InPlaceInit::try_init`], with the error converted into an [`Error`] (an allocation
    /// failure is `ENOMEM`).
    ///
    /// # Errors
    ///
    /// - The error of `init`, converted into an [`Error`].
    /// - `ENOMEM` if the memory cannot be had.
    #[inline]
    fn init<E>(init: impl Init<T, E>, flags: Flags) -> error::Result<Self>
    where
        Error: From<E>,
    {
        // SAFETY: The closure hands its slot to `init` as it got it (valid for writes, as
        // `__init` asks), and returns what `init` returned with only the error converted:
        // the slot holds a valid `T` exactly when it returns `Ok`, and is left to be freed
        // otherwise.
        let init = unsafe {
            init_from_closure(move |slot: *mut T| init.__init(slot).map_err(Error::from))
        };
        Self::try_init(init, flags)
    }
}

impl<T, A: Allocator + 'static> InPlaceInit<T> for Box<T, A> {
    type PinnedSelf = Pin<Self>;

    #[inline]
    fn try_pin_init<E>(init: impl PinInit<T, E>, flags: Flags) -> Result<Pin<Self>, E>
    where
        E: From<AllocError>,
    {
        Box::<T, A>::new_uninit(flags)?.write_pin_init(init)
    }

    #[inline]
    fn try_init<E>(init: impl Init<T, E>, flags: Flags) -> Result<Self, E>
    where
        E: From<AllocError>,
    {
        Box::<T, A>::new_uninit(flags)?.write_init(init)
    }
}

/// Runs an initialiser in the box's memory, which is taken to hold no value yet.
impl<T, A: Allocator + 'static> InPlaceWrite<T> for Box<MaybeUninit<T>, A> {
    type Initialized = Box<T, A>;

    #[inline]
    fn write_init<E>(mut self, init: impl Init<T, E>) -> Result<Box<T, A>, E> {
        let slot = (*self).as_mut_ptr();
        // SAFETY: `slot` is the box's memory, valid for writes of a `T`. If `init` fails it
        // leaves no value there, and the box, dropped on the way out, frees the memory as
        // a `MaybeUninit<T>`, dropping nothing.
        unsafe { init.__init(slot)? };
        // SAFETY: `init` succeeded: the memory holds a valid `T`.
        Ok(unsafe { self.assume_init() })
    }

    #[inline]
    fn write_pin_init<E>(mut self, init: impl PinInit<T, E>) -> Result<Pin<Box<T, A>>, E> {
        let slot = (*self).as_mut_ptr();
        // SAFETY: `slot` is the box's memory, valid for writes of a `T`, and it will not
        // move: on success the box is pinned below, and nothing before that moves the value
        // out. If `init` fails it leaves no value there, and the box, dropped on the way
        // out, frees the memory as a `MaybeUninit<T>`, dropping nothing.
        unsafe { init.__pinned_init(slot)? };
        // SAFETY: `init` succeeded: the memory holds a valid `T`.
        Ok(unsafe { self.assume_init() }.into())
    }
}

/// An initialiser that cannot fail converts its error into any: 7.3's `Error` has this
/// conversion (in its `error.rs`), which `KBox::pin_init(new_mutex!(0), GFP_KERNEL)` needs.
impl From<Infallible> for Error {
    fn from(never: Infallible) -> Self {
        match never {}
    }
}

/// Makes an initialiser of a struct in place, pinned, that may fail: `pin-init`'s
/// `try_pin_init!`, whose error type, written after the closing brace as `? Type`, is
/// [`Error`] when left out.
///
/// The fields are written as in a struct literal, with `field <- initialiser` for one made
/// by an initialiser (a `#[pin]` field by a pin-initialiser); `?` and `return Err(...)` in
/// the field expressions stop the initialisation with that error. The struct must be
/// declared with `#[pin_data]`.
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
/// #[pin_data]
/// struct Slot {
///     #[pin]
///     owner: Mutex<Option<u32>>,
///     size: usize,
/// }
///
/// fn slot(size: usize) -> impl PinInit<Slot, Error> {
///     try_pin_init!(Slot {
///         owner <- new_mutex!(None),
///         size: if size.is_power_of_two() { size } else { return Err(EINVAL) },
///     })
/// }
///
/// let s = KBox::pin_init(slot(64), GFP_KERNEL)?;
/// assert_eq!((s.size, *s.owner.lock()), (64, None));
/// assert_eq!(KBox::pin_init(slot(48), GFP_KERNEL).err(), Some(EINVAL));
/// # Ok::<(), Error>(())
/// ```
#[macro_export]
macro_rules! try_pin_init {
    ($(&$this:ident in)? $t:path { $($fields:tt)* }) => {
        $crate::__init_path!(pin: $(&$this in)? $t { $($fields)* } ? $crate::error::Error)
    };
    ($(&$this:ident in)? $t:path { $($fields:tt)* }? $err:ty) => {
        $crate::__init_path!(pin: $(&$this in)? $t { $($fields)* } ? $err)
    };
}

/// Makes an initialiser of a struct in place, not pinned, that may fail: `pin-init`'s
/// `try_init!`, whose error type, written after the closing brace as `? Type`, is
/// [`Error`] when left out.
///
/// The syntax is [`try_pin_init!`](crate::try_pin_init)'s; the struct needs no `#[pin_data]`,
/// and the value may be moved afterwards.
///
/// ```
/// use kernel::prelude::*;
///
/// struct Window {
///     base: u64,
///     len: u64,
/// }
///
/// fn window(base: u64, len: u64) -> impl Init<Window, Error> {
///     try_init!(Window {
///         base,
///         len: if base.checked_add(len).is_some() { len } else { return Err(EOVERFLOW) },
///     })
/// }
///
/// let w = KBox::init(window(0x1000, 0x200), GFP_KERNEL)?;
/// assert_eq!((w.base, w.len), (0x1000, 0x200));
/// assert_eq!(KBox::init(window(u64::MAX, 2), GFP_KERNEL).err(), Some(EOVERFLOW));
/// # Ok::<(), Error>(())
/// ```
#[macro_export]
macro_rules! try_init {
    ($(&$this:ident in)? $t:path { $($fields:tt)* }) => {
        $crate::__init_path!(init: $(&$this in)? $t { $($fields)* } ? $crate::error::Error)
    };
    ($(&$this:ident in)? $t:path { $($fields:tt)* }? $err:ty) => {
        $crate::__init_path!(init: $(&$this in)? $t { $($fields)* } ? $err)
    };
}

/// Makes an initialiser of a struct in place, pinned, that cannot fail unless an error
/// type is written after the closing brace as `? Type`: the prelude's `pin_init!`, with
/// 7.3's syntax (`pin-init`'s, plus a type named by any path and the optional error).
///
/// ```
/// use kernel::prelude::*;
///
/// mod regs {
///     use kernel::prelude::*;
///
///     #[pin_data]
///     pub struct Pair {
///         pub a: u32,
///         pub b: u32,
///     }
/// }
///
/// let p = KBox::pin_init(pin_init!(regs::Pair { a: 1, b: 2 }), GFP_KERNEL)?;
/// assert_eq!((p.a, p.b), (1, 2));
/// # Ok::<(), Error>(())
/// ```
#[doc(hidden)]
#[macro_export]
macro_rules! __pin_init {
    ($(&$this:ident in)? $t:path { $($fields:tt)* }) => {
        $crate::__init_path!(pin: $(&$this in)? $t { $($fields)* } ? ::core::convert::Infallible)
    };
    ($(&$this:ident in)? $t:path { $($fields:tt)* }? $err:ty) => {
        $crate::__init_path!(pin: $(&$this in)? $t { $($fields)* } ? $err)
    };
}

/// Makes an initialiser of a struct in place, not pinned, that cannot fail unless an
/// error type is written after the closing brace as `? Type`: the prelude's `init!`, with
/// 7.3's syntax (`pin-init`'s, plus a type named by any path and the optional error).
///
/// ```
/// use kernel::prelude::*;
///
/// mod bindings {
///     #[derive(Debug, PartialEq)]
///     pub struct Window {
///         pub base: u64,
///         pub len: u64,
///     }
///     // SAFETY: two integers, for which zero is a value.
///     unsafe impl kernel::prelude::Zeroable for Window {}
/// }
///
/// let w = KBox::init(init!(bindings::Window { base: 0x1000, len: 0x200 }), GFP_KERNEL)?;
/// assert_eq!((w.base, w.len), (0x1000, 0x200));
/// let z = KBox::init(init!(bindings::Window { len: 1, ..Zeroable::init_zeroed() }), GFP_KERNEL)?;
/// assert_eq!(*z, bindings::Window { base: 0, len: 1 });
/// # Ok::<(), Error>(())
/// ```
#[doc(hidden)]
#[macro_export]
macro_rules! __init {
    ($(&$this:ident in)? $t:path { $($fields:tt)* }) => {
        $crate::__init_path!(init: $(&$this in)? $t { $($fields)* } ? ::core::convert::Infallible)
    };
    ($(&$this:ident in)? $t:path { $($fields:tt)* }? $err:ty) => {
        $crate::__init_path!(init: $(&$this in)? $t { $($fields)* } ? $err)
    };
}

/// The four initialiser macros' common expansion: `pin-init`'s own, which takes the type
/// as a path (its public macros take an identifier and generics only).
#[doc(hidden)]
#[macro_export]
macro_rules! __init_path {
    (pin: $(&$this:ident in)? $t:path { $($fields:tt)* } ? $err:ty) => {{
        // `pin-init` binds each field's value to a local of the field's name: a C
        // struct's `camelCase` fields are not a style fault of the caller's.
        #[allow(non_snake_case)]
        let init = $crate::init::__pin_init::__init_internal!(
            @this($($this)?),
            @typ($t),
            @fields($($fields)*),
            @error($err),
            @data(PinData, use_data),
            @has_data(HasPinData, __pin_data),
            @construct_closure(pin_init_from_closure),
            @munch_fields($($fields)*),
        );
        init
    }};
    (init: $(&$this:ident in)? $t:path { $($fields:tt)* } ? $err:ty) => {{
        // As above.
        #[allow(non_snake_case)]
        let init = $crate::init::__pin_init::__init_internal!(
            @this($($this)?),
            @typ($t),
            @fields($($fields)*),
            @error($err),
            @data(InitData, /*no use_data*/),
            @has_data(HasInitData, __init_data),
            @construct_closure(init_from_closure),
            @munch_fields($($fields)*),
        );
        init
    }};
}
