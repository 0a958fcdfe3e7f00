// SPDX-License-Identifier: GPL-2.0

//! Coherent DMA memory, as Linux 7.3's `kernel::dma`.
//!
//! [`Coherent<T>`] is the CPU's side of memory shared with a device: a `T` (or, for
//! `Coherent<[T]>`, a slice) that the device reaches at [`Coherent::dma_address`]. It is
//! an I/O view's base ([`IoBase`]): `io_project!(mem, .field)` narrows it to a
//! [`CoherentView`], `io_read!`/`io_write!` read and write a field with one volatile access,
//! and a byte view's `copy_to_slice`/`copy_from_slice` move bulk data. [`CoherentBox<T>`]
//! is the stage before the device sees the memory: the CPU fills it through `&mut T`, then
//! turns it into a `Coherent<T>`.
//!
//! # Ours, not 7.3's
//!
//! - The memory comes from the environment's allocator, zeroed and page-aligned, and its
//!   bus address is its CPU address: the device is simulated and there is no IOMMU. Both crates'
//!   constructors take a `&Device<Bound>`; 7.3's call `dma_alloc_attrs` and take
//!   attributes, ours take none.
//! - In host builds, a device made with `Device::with_dma_pool` (test bench) has its
//!   memory carved from its `host::DmaPool` instead: memory the test shares with another
//!   process, zeroed and page-aligned, whose bus address is the pool's bus base plus the
//!   offset in it. Dropping such an allocation leaks it within the pool.
//! - [`DmaView::atomic_u64`]: a 64-bit atomic in shared memory, an `mbarrier` word (the
//!   driver's side takes its word with 7.3's `Atomic::from_ptr`).
//! - [`DmaView`], [`Coherent::device_view`]: the *device's* side of the same memory, the
//!   view a bus master (here, the virtual GSP firmware) has of it; every access through it
//!   is bounds-checked, since the offsets it uses may come from the other agent. A real
//!   device is not Rust code, so 7.3 has no such view.
//! - [`DmaReadObserver`], [`Coherent::set_read_observer`]: a test bench attaches an observer
//!   told of every byte copy out of the allocation just before it happens: a simulated
//!   device that changes the memory between two of the driver's reads, as a hostile one
//!   could. No driver code uses it.
//! - Under the model backend (`--cfg loom`) every 32-bit `read_val`/`write_val` is a
//!   recorded access of a loom atomic and every byte copy a recorded access of the pages it
//!   touches; accesses of other widths are plain volatile ones, which the model does not see.

use core::{
    marker::PhantomData,
    ops::{
        Deref,
        DerefMut, //
    },
    ptr::NonNull, //
};

use crate::{
    alloc::Flags,
    backend::{
        self,
        mem, //
    },
    device::{
        Bound,
        Device, //
    },
    error::{
        code::{
            EINVAL,
            ENOMEM,
            EOPNOTSUPP,
            EOVERFLOW, //
        },
        Result, //
    },
    io::{
        IoBackend,
        IoBase,
        IoCapable,
        IoCopyable, //
    },
    ptr::KnownSize,
    sync::atomic::Atomic,
    transmute::{
        AsBytes,
        FromBytes, //
    },
};

pub use crate::backend::DmaAddress;

/// Something told of the CPU's byte copies out of a [`Coherent`], as a device that
/// watches the bus would be: a test bench's hostile device, which changes the memory
/// between two of the driver's reads.
///
/// Ours, not 7.3's: for test benches only ([`Coherent::set_read_observer`]).
pub trait DmaReadObserver: Send + Sync {
    /// Called just before a copy of the `len` bytes starting `offset` bytes into the
    /// allocation; what the observer writes to the memory (through a [`DmaView`]) is what
    /// the copy reads.
    fn before_read(&self, offset: usize, len: usize);
}

/// Memory coherent with a device, holding a `T`.
///
/// # Invariants
///
/// `cpu_addr` points to a `T` of `size()` bytes, aligned for it, valid for reads and writes
/// for the life of the value, and shared only with the device. If `owned`, it is
/// page-aligned, was zeroed at allocation and comes from `backend::alloc_coherent`, which
/// this value frees; otherwise, in host builds, it is a page-aligned block zeroed at
/// allocation from the device's `host::DmaPool`, which stays the pool's. `read_observer`, if set,
/// points to a live observer for the life of the value.
pub struct Coherent<T: KnownSize + ?Sized> {
    cpu_addr: NonNull<T>,
    dma_addr: DmaAddress,
    owned: bool,
    read_observer: Option<NonNull<dyn DmaReadObserver>>,
}

// SAFETY: The memory is owned by the value (or lent by its device's pool for its life); every
// access is volatile, a recorded model access, or an `unsafe` one whose caller upholds the
// sharing protocol. The read observer, if any, is `Send + Sync` and outlives the value.
unsafe impl<T: KnownSize + Send + ?Sized> Send for Coherent<T> {}
// SAFETY: As above.
unsafe impl<T: KnownSize + Sync + ?Sized> Sync for Coherent<T> {}

/// A fresh allocation of zeroed, page-aligned coherent memory.
struct Allocation {
    /// The CPU's address of it.
    cpu_addr: NonNull<u8>,
    /// The device's address of it.
    dma_addr: DmaAddress,
    /// Whether it comes from `backend::alloc_coherent` (to be freed there), rather than
    /// from the device's pool.
    owned: bool,
}

/// Allocates `size` zeroed bytes of coherent memory for `dev`: from its pool if it has one
/// (host builds), else from the environment's allocator.
fn alloc_zeroed(dev: &Device<Bound>, size: usize, align: usize) -> Result<Allocation> {
    if size == 0 || align > backend::PAGE_SIZE {
        return Err(EINVAL);
    }
    // PANIC: `PAGE_SIZE` is far below `isize::MAX`.
    if size > isize::MAX as usize - backend::PAGE_SIZE {
        return Err(EOVERFLOW);
    }
    if let Some(pool) = dev.coherent_pool() {
        let (cpu_addr, dma_addr) = pool.alloc_zeroed(size)?;
        mem::region(cpu_addr.as_ptr().addr(), size);
        return Ok(Allocation {
            cpu_addr,
            dma_addr,
            owned: false,
        });
    }
    let ptr = backend::alloc_coherent(size).ok_or(ENOMEM)?;
    mem::region(ptr.as_ptr().addr(), size);
    Ok(Allocation {
        cpu_addr: ptr,
        // CAST: addresses fit in 64 bits on every supported architecture.
        dma_addr: ptr.as_ptr().addr() as DmaAddress,
        owned: true,
    })
}

impl<T: KnownSize + ?Sized> Coherent<T> {
    /// The coherent memory of `alloc`, freshly allocated, as the `T` at `cpu_addr` (its
    /// start).
    fn allocated(cpu_addr: NonNull<T>, alloc: Allocation) -> Self {
        // INVARIANT: the callers pass memory from `alloc_zeroed` of the `T`'s size,
        // page-aligned (so aligned for `T`, which `alloc_zeroed` checked), zeroed, and
        // `T: FromBytes` (every constructor's bound) makes zero a valid `T`; `owned` as
        // `alloc_zeroed` says; no observer.
        Self {
            cpu_addr,
            dma_addr: alloc.dma_addr,
            owned: alloc.owned,
            read_observer: None,
        }
    }

    /// The size of the memory in bytes.
    #[inline]
    pub fn size(&self) -> usize {
        T::size(self.cpu_addr.as_ptr())
    }

    /// The CPU's pointer to the memory.
    #[inline]
    pub fn as_ptr(&self) -> *const T {
        self.cpu_addr.as_ptr()
    }

    /// The CPU's pointer to the memory, for writing.
    #[inline]
    pub fn as_mut_ptr(&self) -> *mut T {
        self.cpu_addr.as_ptr()
    }

    /// The address the device uses for the start of the memory.
    #[inline]
    pub fn dma_address(&self) -> DmaAddress {
        self.dma_addr
    }

    /// The memory as a reference.
    ///
    /// # Safety
    ///
    /// While the reference lives, neither the device nor the CPU may write the memory.
    #[inline]
    pub unsafe fn as_ref(&self) -> &T {
        // SAFETY: valid and aligned by the type invariant; no writer, by the caller.
        unsafe { &*self.as_ptr() }
    }

    /// The memory as a mutable reference.
    ///
    /// # Safety
    ///
    /// While the reference lives, neither the device nor the CPU may otherwise access the
    /// memory.
    #[expect(
        clippy::mut_from_ref,
        reason = "7.3's signature; the caller gives exclusivity"
    )]
    #[inline]
    pub unsafe fn as_mut(&self) -> &mut T {
        // SAFETY: valid and aligned by the type invariant; exclusive, by the caller.
        unsafe { &mut *self.as_mut_ptr() }
    }

    /// Makes every byte copy out of the memory call `observer` just before it copies,
    /// replacing any observer set before.
    ///
    /// Ours, not 7.3's: for test benches that play a device changing the memory between two
    /// of the driver's reads. Without an observer a copy costs one test of an `Option` more.
    ///
    /// # Safety
    ///
    /// `observer` must stay valid, at the same address, for as long as `self` exists.
    pub unsafe fn set_read_observer(&mut self, observer: &(dyn DmaReadObserver + 'static)) {
        // INVARIANT: the caller keeps `observer` alive and in place as long as `self`.
        self.read_observer = Some(NonNull::from(observer));
    }

    /// The device's view of this memory, for a simulated device that shares the CPU's
    /// address space.
    ///
    /// Ours, not 7.3's.
    pub fn device_view(&self) -> DmaView<'_> {
        // SAFETY: the memory is valid for `size()` bytes while `self` is borrowed, and
        // page-aligned (every allocation is), so 8-byte aligned as `DmaView` wants.
        unsafe { DmaView::from_raw_parts(self.cpu_addr.as_ptr().cast(), self.size()) }
    }
}

impl<T: AsBytes + FromBytes> Coherent<T> {
    /// Allocates coherent memory for a `T`, zeroed.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if `T` is zero-sized or aligned beyond a page.
    /// - `ENOMEM` if the memory cannot be had (for a device with a pool: if the pool has not
    ///   that much left).
    pub fn zeroed(dev: &Device<Bound>, _gfp_flags: Flags) -> Result<Self> {
        let alloc = alloc_zeroed(dev, size_of::<T>(), align_of::<T>())?;
        Ok(Self::allocated(alloc.cpu_addr.cast(), alloc))
    }

    /// Allocates coherent memory for `len` values of `T`, zeroed.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if `len` is zero, `T` is zero-sized or aligned beyond a page.
    /// - `EOVERFLOW` if the size overflows.
    /// - `ENOMEM` if the memory cannot be had (for a device with a pool: if the pool has not
    ///   that much left).
    pub fn zeroed_slice(
        dev: &Device<Bound>,
        len: usize,
        _gfp_flags: Flags,
    ) -> Result<Coherent<[T]>> {
        let size = size_of::<T>().checked_mul(len).ok_or(EOVERFLOW)?;
        let alloc = alloc_zeroed(dev, size, align_of::<T>())?;
        Ok(Coherent::allocated(
            NonNull::slice_from_raw_parts(alloc.cpu_addr.cast::<T>(), len),
            alloc,
        ))
    }
}

impl<T> Coherent<[T]> {
    /// The number of values in the memory.
    #[inline]
    pub fn len(&self) -> usize {
        self.cpu_addr.len()
    }

    /// Whether the memory holds no value (never, for allocated memory).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T: KnownSize + ?Sized> Drop for Coherent<T> {
    fn drop(&mut self) {
        // A pool's block stays the pool's, which never hands it out again (it leaks within
        // the pool).
        if !self.owned {
            return;
        }
        let size = self.size();
        mem::region_end(self.cpu_addr.as_ptr().cast::<u8>().addr());
        // SAFETY: by the type invariant the memory is `size` bytes from `alloc_coherent`,
        // and nothing uses it after this.
        unsafe { backend::free_coherent(self.cpu_addr.cast::<u8>(), size) };
    }
}

/// Coherent memory that only the CPU has seen yet, filled through `&mut T` before it is
/// turned into a [`Coherent`] and handed to the device.
pub struct CoherentBox<T: KnownSize + ?Sized>(Coherent<T>);

impl<T: AsBytes + FromBytes> CoherentBox<T> {
    /// Allocates a zeroed `T` (see [`Coherent::zeroed`]).
    ///
    /// # Errors
    ///
    /// As [`Coherent::zeroed`].
    pub fn zeroed(dev: &Device<Bound>, gfp_flags: Flags) -> Result<Self> {
        Ok(Self(Coherent::zeroed(dev, gfp_flags)?))
    }
}

impl<T: AsBytes + FromBytes> CoherentBox<[T]> {
    /// Allocates `len` zeroed values of `T` (see [`Coherent::zeroed_slice`]).
    ///
    /// # Errors
    ///
    /// As [`Coherent::zeroed_slice`].
    pub fn zeroed_slice(dev: &Device<Bound>, len: usize, gfp_flags: Flags) -> Result<Self> {
        Ok(Self(Coherent::<T>::zeroed_slice(dev, len, gfp_flags)?))
    }
}

impl<T: KnownSize + ?Sized> Deref for CoherentBox<T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: the device has not been given the memory yet (the type's purpose), so
        // nothing else accesses it.
        unsafe { self.0.as_ref() }
    }
}

impl<T: AsBytes + FromBytes + KnownSize + ?Sized> DerefMut for CoherentBox<T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes the access exclusive.
        unsafe { self.0.as_mut() }
    }
}

impl<T: AsBytes + FromBytes + KnownSize + ?Sized> From<CoherentBox<T>> for Coherent<T> {
    fn from(value: CoherentBox<T>) -> Self {
        value.0
    }
}

/// A view of part of a [`Coherent`]: what `io_project!` makes of it.
///
/// # Invariants
///
/// `ptr` lies inside the allocation that starts at `alloc`, valid for `'a`, and aligned for
/// `T`; `dma_addr` is the bus address of `ptr`; `observer` is the allocation's.
pub struct CoherentView<'a, T: ?Sized> {
    ptr: *mut T,
    dma_addr: DmaAddress,
    alloc: *const u8,
    observer: Option<NonNull<dyn DmaReadObserver>>,
    _p: PhantomData<&'a ()>,
}

impl<T: ?Sized> Clone for CoherentView<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: ?Sized> Copy for CoherentView<'_, T> {}

impl<'a, T: ?Sized> CoherentView<'a, T> {
    /// The bus address of the viewed part.
    #[inline]
    pub fn dma_address(self) -> DmaAddress {
        self.dma_addr
    }

    /// The viewed part as a reference.
    ///
    /// # Safety
    ///
    /// While the reference lives, neither the device nor the CPU may write the memory.
    #[inline]
    pub unsafe fn as_ref(self) -> &'a T {
        // SAFETY: valid and aligned by the type invariant; no writer, by the caller.
        unsafe { &*self.ptr }
    }

    /// The viewed part as a mutable reference.
    ///
    /// # Safety
    ///
    /// While the reference lives, neither the device nor the CPU may otherwise access the
    /// memory.
    #[inline]
    pub unsafe fn as_mut(self) -> &'a mut T {
        // SAFETY: valid and aligned by the type invariant; exclusive, by the caller.
        unsafe { &mut *self.ptr }
    }
}

impl<'a, T: ?Sized + KnownSize> IoBase<'a> for CoherentView<'a, T> {
    type Backend = CoherentIoBackend;
    type Target = T;

    #[inline]
    fn as_view(self) -> Self {
        self
    }
}

impl<'a, T: ?Sized + KnownSize> IoBase<'a> for &'a Coherent<T> {
    type Backend = CoherentIoBackend;
    type Target = T;

    #[inline]
    fn as_view(self) -> CoherentView<'a, T> {
        // INVARIANT: the whole allocation, valid while `self` is borrowed.
        CoherentView {
            ptr: self.cpu_addr.as_ptr(),
            dma_addr: self.dma_addr,
            alloc: self.cpu_addr.as_ptr().cast::<u8>(),
            observer: self.read_observer,
            _p: PhantomData,
        }
    }
}

/// The backend of [`CoherentView`].
pub struct CoherentIoBackend;

impl IoBackend for CoherentIoBackend {
    type View<'a, T: ?Sized + KnownSize> = CoherentView<'a, T>;

    #[inline]
    fn as_ptr<'a, T: ?Sized + KnownSize>(view: CoherentView<'a, T>) -> *mut T {
        view.ptr
    }

    #[inline]
    unsafe fn project_view<'a, T: ?Sized + KnownSize, U: ?Sized + KnownSize>(
        view: Self::View<'a, T>,
        ptr: *mut U,
    ) -> Self::View<'a, U> {
        let offset = ptr.cast::<u8>().addr() - view.ptr.cast::<u8>().addr();
        // INVARIANT: a projection lies inside the view (the caller's contract), so inside
        // the allocation; its bus address moves with it.
        CoherentView {
            ptr,
            // CAST: an offset inside an allocation fits in a bus address.
            dma_addr: view.dma_addr + offset as DmaAddress,
            alloc: view.alloc,
            observer: view.observer,
            _p: PhantomData,
        }
    }
}

macro_rules! coherent_widths {
    ($($t:ty),*) => {$(
        impl IoCapable<$t> for CoherentIoBackend {
            #[track_caller]
            #[inline]
            fn io_read(view: CoherentView<'_, $t>) -> $t {
                // SAFETY: by the type invariant the view is valid and aligned.
                unsafe { load(view.ptr) }
            }

            #[track_caller]
            #[inline]
            fn io_write(view: CoherentView<'_, $t>, value: $t) {
                // SAFETY: as above.
                unsafe { store(view.ptr, value) }
            }
        }
    )*};
}

coherent_widths!(u8, u16, u32, u64);

impl IoCopyable for CoherentIoBackend {
    #[track_caller]
    #[inline]
    unsafe fn copy_from_io(view: CoherentView<'_, [u8]>, buffer: *mut u8) {
        if let Some(observer) = view.observer {
            let offset = view.ptr.cast::<u8>().addr() - view.alloc.addr();
            // SAFETY: by the contract of `set_read_observer` the observer outlives the
            // allocation, and `DmaReadObserver: Sync` makes a shared reference to it usable
            // from any thread.
            unsafe { observer.as_ref() }.before_read(offset, view.ptr.len());
        }
        // SAFETY: the view is valid for its length (the type invariant); the buffer is the
        // caller's contract.
        unsafe { mem::copy_in(view.ptr.cast(), buffer, view.ptr.len()) }
    }

    #[track_caller]
    #[inline]
    unsafe fn copy_to_io(view: CoherentView<'_, [u8]>, buffer: *const u8) {
        // SAFETY: as above.
        unsafe { mem::copy_out(buffer, view.ptr.cast(), view.ptr.len()) }
    }
}

/// A value of one access width in coherent memory.
trait Word: Copy {
    /// Loads it with one volatile access (a recorded model access for 32 bits).
    ///
    /// # Safety
    ///
    /// `p` must be valid and aligned.
    unsafe fn load(p: *const Self) -> Self;

    /// Stores it with one volatile access (a recorded model access for 32 bits).
    ///
    /// # Safety
    ///
    /// `p` must be valid and aligned.
    unsafe fn store(p: *mut Self, value: Self);
}

macro_rules! plain_word {
    ($($t:ty),*) => {$(
        impl Word for $t {
            #[track_caller]
            #[inline(always)]
            unsafe fn load(p: *const Self) -> Self {
                // SAFETY: the caller's contract.
                let value = unsafe { p.read_volatile() };
                mem::loaded(p.addr(), value.into());
                value
            }

            #[track_caller]
            #[inline(always)]
            unsafe fn store(p: *mut Self, value: Self) {
                // SAFETY: the caller's contract.
                unsafe { p.write_volatile(value) }
            }
        }
    )*};
}

plain_word!(u8, u16, u64);

impl Word for u32 {
    #[track_caller]
    #[inline(always)]
    unsafe fn load(p: *const Self) -> Self {
        // SAFETY: the caller's contract.
        unsafe { mem::load_u32(p) }
    }

    #[track_caller]
    #[inline(always)]
    unsafe fn store(p: *mut Self, value: Self) {
        // SAFETY: the caller's contract.
        unsafe { mem::store_u32(p, value) }
    }
}

/// # Safety
///
/// As [`Word::load`].
#[track_caller]
#[inline(always)]
unsafe fn load<T: Word>(p: *const T) -> T {
    // SAFETY: the caller's contract.
    unsafe { T::load(p) }
}

/// # Safety
///
/// As [`Word::store`].
#[track_caller]
#[inline(always)]
unsafe fn store<T: Word>(p: *mut T, value: T) {
    // SAFETY: the caller's contract.
    unsafe { T::store(p, value) }
}

/// A device's window onto coherent memory, with bounds-checked accesses.
///
/// Its twin in a kernel tree is `vdev::DmaView` (`drivers/gpu/vgsp/vdev/linux-7.3/dma.rs`),
/// built against 7.3's own `kernel` crate, where this shim does not exist: the same
/// methods, bounds rules and errors over the kernel's primitives (see there).
///
/// # Invariants
///
/// `base` is valid for reads and writes of `len` bytes for `'a`, and 8-byte aligned.
#[derive(Clone, Copy)]
pub struct DmaView<'a> {
    base: NonNull<u8>,
    len: usize,
    _p: PhantomData<&'a [u8]>,
}

// SAFETY: A `DmaView` is an address range shared with another agent; all accesses through
// it are volatile words or byte copies whose ordering the protocol's barriers provide.
unsafe impl Send for DmaView<'_> {}
// SAFETY: As above.
unsafe impl Sync for DmaView<'_> {}

impl<'a> DmaView<'a> {
    /// Creates a view of `len` bytes at `base`.
    ///
    /// # Safety
    ///
    /// `base` must be 8-byte aligned and valid for reads and writes of `len` bytes for
    /// `'a`; the memory may be shared with other agents.
    pub unsafe fn from_raw_parts(base: *mut u8, len: usize) -> Self {
        // INVARIANT: guaranteed by the caller.
        Self {
            // SAFETY: The caller guarantees `base` is a valid, hence non-null, pointer.
            base: unsafe { NonNull::new_unchecked(base) },
            len,
            _p: PhantomData,
        }
    }

    /// Returns the length of the view in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Returns the view of the `len` bytes at `offset` of this one.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if `offset` is not 8-byte aligned or the range is outside the view.
    pub fn subview(&self, offset: usize, len: usize) -> Result<DmaView<'a>> {
        let base = self.range(offset, len, 8)?;
        // INVARIANT: inside this view (checked by `range`), so valid for `'a`, and
        // 8-byte aligned.
        Ok(Self {
            // SAFETY: `range` returned a pointer inside the view, so not null.
            base: unsafe { NonNull::new_unchecked(base) },
            len,
            _p: PhantomData,
        })
    }

    /// Returns whether the view is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn range(&self, offset: usize, len: usize, align: usize) -> Result<*mut u8> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len && offset.is_multiple_of(align) => {
                // SAFETY: `offset + len <= self.len`, inside the view by the invariant.
                Ok(unsafe { self.base.as_ptr().add(offset) })
            }
            _ => Err(EINVAL),
        }
    }

    /// Reads the little-endian `u32` at `offset` with a volatile load.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if the word is unaligned or outside the view.
    #[track_caller]
    #[inline]
    pub fn read32(&self, offset: usize) -> Result<u32> {
        let p = self.range(offset, 4, 4)?;
        // SAFETY: `p` is aligned and inside the view (checked above).
        Ok(u32::from_le(unsafe { mem::load_u32(p.cast::<u32>()) }))
    }

    /// Writes `value` as a little-endian `u32` at `offset` with a volatile store.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if the word is unaligned or outside the view.
    #[track_caller]
    #[inline]
    pub fn write32(&self, offset: usize, value: u32) -> Result {
        let p = self.range(offset, 4, 4)?;
        // SAFETY: `p` is aligned and inside the view (checked above).
        unsafe { mem::store_u32(p.cast::<u32>(), value.to_le()) };
        Ok(())
    }

    /// Copies `dst.len()` bytes at `offset` out of the view.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if the range leaves the view.
    #[track_caller]
    pub fn read_bytes(&self, offset: usize, dst: &mut [u8]) -> Result {
        let p = self.range(offset, dst.len(), 1)?;
        // SAFETY: `p` is valid for `dst.len()` bytes (checked above); `dst` is a distinct
        // borrow. Concurrent writes by the other agent can only change the values read,
        // which callers validate.
        unsafe { mem::copy_in(p, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    /// Copies `src` into the view at `offset`.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if the range leaves the view.
    #[track_caller]
    pub fn write_bytes(&self, offset: usize, src: &[u8]) -> Result {
        let p = self.range(offset, src.len(), 1)?;
        // SAFETY: `p` is valid for `src.len()` bytes (checked above); `src` is a distinct
        // borrow.
        unsafe { mem::copy_out(src.as_ptr(), p, src.len()) };
        Ok(())
    }
}

impl<'a> DmaView<'a> {
    /// Returns the 64-bit atomic word at `offset`, for state that the agents sharing the
    /// memory update only with atomic operations (an `mbarrier`).
    ///
    /// # Errors
    ///
    /// - `EINVAL` if the word is unaligned or outside the view.
    /// - `EOPNOTSUPP` under the model backend, which does not model atomics in shared
    ///   memory (its scenarios give a barrier its own word).
    pub fn atomic_u64(&self, offset: usize) -> Result<&'a Atomic<u64>> {
        let p = self.range(offset, 8, 8)?;
        if !mem::ATOMICS_IN_MEMORY {
            return Err(EOPNOTSUPP);
        }
        // SAFETY: `p` is 8-byte aligned and inside the view (checked above), valid for
        // reads and writes for `'a` by the type invariant, and any 8 bytes are a valid
        // `u64`; the sharing protocol accesses this word only atomically, so nothing races
        // with the returned atomic.
        Ok(unsafe { Atomic::from_ptr(p.cast::<u64>()) })
    }
}
