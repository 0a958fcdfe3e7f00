// SPDX-License-Identifier: GPL-2.0

//! A simulated BAR: registers in memory, behind an I/O backend of the bench's own.
//!
//! [`SimBar`] owns the memory and the doorbell state. [`SimBar::io`] hands out a
//! [`SimIo`], a view implementing 7.3's `IoBase` (so `kernel::io::Io` too) through
//! [`SimBackend`]: volatile accesses to the memory, and, for a 32-bit write at one of the
//! BAR's doorbell offsets, a ring that wakes whoever waits in [`SimBar::wait_doorbell`].

use core::ptr::NonNull;

use kernel::{
    io::{
        IoBackend,
        IoBase,
        IoCapable,
        Region, //
    },
    new_condvar,
    new_spinlock,
    prelude::*,
    ptr::KnownSize,
    sync::{
        atomic::{
            Acquire,
            Atomic,
            Full,
            Relaxed, //
        },
        barrier::{
            smp_mb,
            Read,
            Write, //
        },
        CondVar,
        SpinLock, //
    },
    time::{
        msecs_to_jiffies,
        Delta,
        Instant,
        Monotonic, //
    },
};

/// The doorbells of a [`SimBar`], and what its waiters sleep on.
///
/// A ring is an atomic increment of `rings`; it takes `kicks` (the lock the waiters sleep
/// under) only when `waiters` says somebody may sleep, to wake them. A waiter counts
/// itself in `waiters` before it reads `rings`, and a ring increments `rings` before it
/// reads `waiters`, both with fully ordered operations, so at least one of the two sees the
/// other: either the ring sees the waiter and wakes it, or the waiter sees the ring and
/// does not sleep. The wake-up itself is not lost either: the waiter holds `kicks` from its
/// check until it is on the wait queue, and the ring takes `kicks` to wake it.
#[pin_data]
struct Doorbells {
    /// The address of the BAR's first byte, which the offsets are from.
    base: usize,
    /// The doorbell offsets.
    offsets: KVec<usize>,
    /// How many 32-bit writes the doorbells have seen.
    rings: Atomic<u64>,
    /// How many threads are in [`SimBar::wait_doorbell`].
    waiters: Atomic<usize>,
    /// The lock the waiters sleep under.
    #[pin]
    kicks: SpinLock<()>,
    /// Where the waiters sleep.
    #[pin]
    rung: CondVar,
}

impl Doorbells {
    /// Allocates the doorbell state of a BAR at `base`.
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if the memory cannot be had.
    fn new(base: usize, doorbells: &[usize]) -> Result<Pin<KBox<Self>>> {
        let mut offsets = KVec::with_capacity(doorbells.len(), GFP_KERNEL)?;
        offsets.extend_from_slice(doorbells, GFP_KERNEL)?;
        KBox::pin_init(
            pin_init!(Self {
                base,
                offsets,
                rings: Atomic::new(0),
                waiters: Atomic::new(0),
                kicks <- new_spinlock!((), "vdev::SimBar::kicks"),
                rung <- new_condvar!("vdev::SimBar::rung"),
            }),
            GFP_KERNEL,
        )
    }

    /// Tells the doorbells that a 32-bit value was written at the address `addr`.
    fn written(&self, addr: usize) {
        if self.offsets.contains(&addr.wrapping_sub(self.base)) {
            self.ring();
        }
    }

    /// Counts a ring and wakes the waiters.
    fn ring(&self) {
        // ORDERING: fully ordered, so
        // - the register write and everything the ringing thread did before it come before
        //   the increment: they are seen by a thread whose `Acquire` load of `rings`
        //   (`doorbell_count`, `wait_doorbell`) sees the new count, as a `writel` to a
        //   doorbell orders the driver's memory writes before it for the device;
        // - the increment comes before the load of `waiters` below, pairing with the fully
        //   ordered increment of `waiters` before the load of `rings` in `wait_doorbell`.
        self.rings.fetch_add(1, Full);
        // ORDERING: `Relaxed`: ordered after the increment by the fully ordered
        // `fetch_add` above. A stale non-zero only costs a needless wake-up.
        if self.waiters.load(Relaxed) > 0 {
            // Taking the lock waits for a waiter between its check of `rings` and its
            // sleep; once it sleeps, it is on the wait queue that this wakes.
            let _kicks = self.kicks.lock();
            self.rung.notify_all();
        }
    }
}

/// A view of a [`SimBar`]'s registers (or of a part of them, once projected), the
/// [`IoBackend::View`] of [`SimBackend`].
///
/// It is to a [`SimBar`] what `kernel::io::Mmio` is to a mapped BAR: the `Io` methods
/// work on it, [`SimBar::io`] hands one out, and [`BarIo`] names the whole-BAR one.
///
/// # Invariants
///
/// - `ptr.addr() .. ptr.addr() + KnownSize::size(ptr)` lies inside the memory of the
///   [`SimBar`] that `bells` belongs to, which stays valid and in place for `'a`.
/// - `ptr` is aligned for `T`.
pub struct SimIo<'a, T: ?Sized> {
    ptr: *mut T,
    bells: &'a Doorbells,
}

impl<T: ?Sized> Clone for SimIo<'_, T> {
    #[inline]
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: ?Sized> Copy for SimIo<'_, T> {}

// SAFETY: A `SimIo` is a shared reference into the BAR's memory, which every access reaches
// with volatile accesses that any thread may make, and a shared reference to the doorbell
// state, which is `Sync`.
unsafe impl<T: ?Sized + Sync> Send for SimIo<'_, T> {}

// SAFETY: As for `Send`: nothing in a `SimIo` is tied to a thread.
unsafe impl<T: ?Sized + Sync> Sync for SimIo<'_, T> {}

impl<'a, T: ?Sized> SimIo<'a, T> {
    /// Returns the view itself: the bench has no relaxed accessors.
    ///
    /// The counterpart of `Mmio::relaxed`, so code written for a mapped BAR's relaxed
    /// reads also compiles against a simulated one. Every access of a [`SimIo`] keeps the
    /// ordering of the non-relaxed accessors, which is stronger than a relaxed one.
    #[inline]
    pub fn relaxed(self) -> Self {
        self
    }
}

impl<'a, T: ?Sized + KnownSize> IoBase<'a> for SimIo<'a, T> {
    type Backend = SimBackend;
    type Target = T;

    #[inline]
    fn as_view(self) -> SimIo<'a, T> {
        self
    }
}

/// A reference to a view is a view too (as 7.3 makes `&Coherent` one), so code that passes
/// `&BarIo` around reaches the registers as the view itself does.
impl<'a, T: ?Sized + KnownSize> IoBase<'a> for &SimIo<'a, T> {
    type Backend = SimBackend;
    type Target = T;

    #[inline]
    fn as_view(self) -> SimIo<'a, T> {
        *self
    }
}

/// The I/O backend of a [`SimBar`]: its registers are ordinary memory, and a 32-bit write
/// at a doorbell offset also rings the doorbell.
///
/// Reads and writes are volatile, with the ordering of `readl` and `writel` towards the
/// device model on another CPU: a write is ordered after the writer's earlier writes, and
/// a read before the reader's later reads. A doorbell write takes a spinlock when a thread
/// may be waiting, to wake it: ring doorbells from process context (holding other locks or
/// not), not from an interrupt, hard or soft.
pub struct SimBackend;

impl IoBackend for SimBackend {
    type View<'a, T: ?Sized + KnownSize> = SimIo<'a, T>;

    #[inline]
    fn as_ptr<'a, T: ?Sized + KnownSize>(view: Self::View<'a, T>) -> *mut T {
        view.ptr
    }

    #[inline]
    unsafe fn project_view<'a, T: ?Sized + KnownSize, U: ?Sized + KnownSize>(
        view: Self::View<'a, T>,
        ptr: *mut U,
    ) -> Self::View<'a, U> {
        // INVARIANT: The caller guarantees `ptr` is a projection of `view.ptr`: inside the
        // same BAR's memory, and aligned for `U`.
        SimIo {
            ptr,
            bells: view.bells,
        }
    }
}

/// Implements [`IoCapable<$ty>`] for [`SimBackend`]; with a method of [`Doorbells`], a write
/// also tells the doorbells its address.
macro_rules! impl_sim_io_capable {
    ($ty:ty $(, $tell:ident)?) => {
        impl IoCapable<$ty> for SimBackend {
            #[inline]
            fn io_read(view: SimIo<'_, $ty>) -> $ty {
                // SAFETY: By the invariants of `SimIo`, `view.ptr` is aligned and inside the
                // BAR's memory, which is valid for `'_`. A volatile read may race with the
                // other side's volatile accesses, as a device register read does (the LKMM
                // allows it); any bits are a valid integer.
                let value = unsafe { view.ptr.read_volatile() };
                // ORDERING: orders this read before the reader's later reads, as `readl`
                // does; pairs with the `smp_mb(Write)` before the write that stored the
                // value.
                smp_mb(Read);
                value
            }

            #[inline]
            fn io_write(view: SimIo<'_, $ty>, value: $ty) {
                // ORDERING: orders the writer's earlier writes before this one, as `writel`
                // does; pairs with the `smp_mb(Read)` after the read that sees the value.
                smp_mb(Write);
                // SAFETY: As for `io_read`: `view.ptr` is aligned and inside the BAR's
                // memory, and volatile accesses may race with the other side's.
                unsafe { view.ptr.write_volatile(value) };
                $(view.bells.$tell(view.ptr.addr());)?
            }
        }
    };
}

impl_sim_io_capable!(u8);
impl_sim_io_capable!(u16);
impl_sim_io_capable!(u32, written);
#[cfg(CONFIG_64BIT)]
impl_sim_io_capable!(u64);

/// The register view of a [`SimBar`] of `SIZE` bytes, as [`SimBar::io`] hands it out.
pub type BarIo<'a, const SIZE: usize> = SimIo<'a, Region<SIZE>>;

/// A simulated BAR: `SIZE` bytes of registers in memory, some of which are doorbells.
///
/// A 32-bit write at a doorbell offset counts a ring and wakes every thread in
/// [`SimBar::wait_doorbell`]; [`SimBar::kick`] counts as one without a write. The
/// memory is `vmalloc`ed and zeroed, all of it at once (a 16 MiB BAR0 costs 16 MiB).
///
/// # Invariants
///
/// - `view` covers the `SIZE` bytes of `_regs`' buffer, a live allocation that stays
///   where it is (moving a `VVec` does not move its buffer), aligned to 4 bytes, and
///   accessed only through `view` (volatile accesses) while the `SimBar` lives; its
///   doorbell state is `bells`, pinned, whose `base` is the buffer's address. Its
///   `'static` is private: [`SimBar::io`] lends it out only for the borrow of the
///   `SimBar`, and the fields drop in order, the view before what it points to.
pub struct SimBar<const SIZE: usize> {
    view: SimIo<'static, Region<SIZE>>,
    _regs: VVec<u32>,
    bells: Pin<KBox<Doorbells>>,
}

// SAFETY: A `SimBar` owns its memory and doorbell state; nothing in it is tied to a thread.
unsafe impl<const SIZE: usize> Send for SimBar<SIZE> {}

// SAFETY: Shared use reaches the memory only through volatile accesses (`SimIo`), and the
// doorbell state only through atomics and its lock.
unsafe impl<const SIZE: usize> Sync for SimBar<SIZE> {}

impl<const SIZE: usize> SimBar<SIZE> {
    /// Creates a BAR whose 32-bit registers at the offsets `doorbells` wake
    /// [`SimBar::wait_doorbell`].
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if the memory cannot be had.
    /// - `EINVAL` if `SIZE` is not a multiple of 4.
    pub fn new(doorbells: &[usize]) -> Result<Self> {
        let mut regs = VVec::from_elem(0u32, SIZE / 4, GFP_KERNEL)?;
        let region = Region::<SIZE>::ptr_try_from_raw_parts_mut(regs.as_mut_ptr().cast(), SIZE)?;
        let region = NonNull::new(region).ok_or(EINVAL)?;
        let bells = Doorbells::new(region.as_ptr().addr(), doorbells)?;
        // SAFETY: `bells` is pinned in a box the `SimBar` owns and drops after `view` (field
        // order), so the reference stays valid for as long as `view` exists; `view` is only
        // lent out for shorter borrows (`io`).
        let bells_ref: &'static Doorbells = unsafe { &*core::ptr::from_ref(&*bells) };
        // INVARIANT: `region` covers the `SIZE` bytes of `regs`' buffer (the `Region` check
        // above rejects a `SIZE` that is not a multiple of 4), aligned as a `u32` buffer is,
        // and `bells` was made with its address.
        Ok(Self {
            view: SimIo {
                ptr: region.as_ptr(),
                bells: bells_ref,
            },
            _regs: regs,
            bells,
        })
    }

    /// Returns the view of the registers, for the driver (and the device model).
    #[inline]
    pub fn io(&self) -> &BarIo<'_, SIZE> {
        &self.view
    }

    /// Returns how many 32-bit writes the doorbell offsets have seen.
    pub fn doorbell_count(&self) -> u64 {
        // ORDERING: `Acquire` pairs with the fully ordered increment in `Doorbells::ring`:
        // what the ringing thread wrote before the ring is seen after this.
        self.bells.rings.load(Acquire)
    }

    /// Waits until the doorbell count differs from `seen` (a ring or a [`SimBar::kick`]
    /// since the caller read it) or `timeout` passes, and returns the count.
    pub fn wait_doorbell(&self, seen: u64, timeout: Delta) -> u64 {
        let bells = &*self.bells;
        let start = Instant::<Monotonic>::now();
        let mut kicks = bells.kicks.lock();
        // ORDERING: fully ordered: the registration comes before the load of `rings` below,
        // pairing with the fully ordered increment of `rings` before the load of `waiters`
        // in `Doorbells::ring`.
        bells.waiters.fetch_add(1, Full);
        loop {
            // ORDERING: `Acquire`, as in `doorbell_count`.
            if bells.rings.load(Acquire) != seen {
                break;
            }
            let left = timeout.as_nanos().saturating_sub(start.elapsed().as_nanos());
            if left <= 0 {
                break;
            }
            let millis = Delta::from_nanos(left).as_millis_ceil();
            let jiffies = msecs_to_jiffies(u32::try_from(millis).unwrap_or(u32::MAX));
            // Woken, timed out, or interrupted by a signal (kernel threads take none): the
            // loop looks at the count and the clock either way.
            let _ = bells.rung.wait_interruptible_timeout(&mut kicks, jiffies);
        }
        // ORDERING: `Relaxed`: the count only tells rings whether to wake; a ring that still
        // sees this waiter wakes nobody or somebody else.
        bells.waiters.fetch_sub(1, Relaxed);
        drop(kicks);
        self.doorbell_count()
    }

    /// Rings the doorbells without a register write, waking every thread in
    /// [`SimBar::wait_doorbell`] (used to stop a device thread). It counts as a ring, as
    /// on the host: a kick that comes before the device thread waits is not lost.
    pub fn kick(&self) {
        self.bells.ring();
    }
}
