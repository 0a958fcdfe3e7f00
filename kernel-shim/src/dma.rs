// SPDX-License-Identifier: GPL-2.0

//! Coherent DMA memory, as upstream's `kernel::dma`.
//!
//! [`CoherentAllocation`] is the CPU's side of memory shared with a device. Fields are
//! read and written with volatile accesses through [`dma_read!`] and [`dma_write!`];
//! bulk data moves with [`CoherentAllocation::read_raw`] and
//! [`CoherentAllocation::write_raw`], whose callers state that the protocol gives them
//! the bytes they touch.
//!
//! [`DmaView`] is the *device's* side of the same memory: the view a bus master (here,
//! the virtual GSP firmware) has of it. Every access through it is bounds-checked, since
//! the offsets it uses may come from the other agent.
//!
//! A test bench can attach a [`DmaReadObserver`] to an allocation
//! ([`CoherentAllocation::set_read_observer`]), told of every
//! [`CoherentAllocation::read_raw`] just before it copies: a simulated device that changes
//! the memory between two of the driver's reads, as a hostile one could. This is ours,
//! not upstream's API; no driver code uses it.

use core::{
    marker::PhantomData,
    ptr::NonNull, //
};

use crate::{
    alloc::Flags,
    device::Device,
    error::{
        code::{
            EINVAL,
            ENOMEM,
            EOVERFLOW, //
        },
        Result, //
    },
    sync::atomic::Atomic,
    transmute::{
        AsBytes,
        FromBytes, //
    },
};

/// A bus address as the device sees it.
pub type DmaAddress = u64;

/// Something told of the CPU's bulk reads of a [`CoherentAllocation`], as a device that
/// watches the bus would be: a test bench's hostile device, which changes the memory
/// between two of the driver's reads.
///
/// Ours, not upstream's API: for test benches only
/// ([`CoherentAllocation::set_read_observer`]).
pub trait DmaReadObserver: Send + Sync {
    /// Called by [`CoherentAllocation::read_raw`] just before it copies the `len` bytes
    /// starting `offset` bytes into the allocation; what the observer writes to the
    /// memory (through a [`DmaView`]) is what the copy reads.
    fn before_read(&self, offset: usize, len: usize);
}

/// An allocation of `count` values of `T` in memory coherent with a device.
///
/// # Invariants
///
/// `cpu_addr` points to `count` device-shared values of `T`, aligned for `T`, valid for
/// `size` bytes for the life of the value. If `owned`, they are page-aligned, zeroed at
/// allocation, and allocated by `env::alloc_coherent`, which this value frees; otherwise
/// they are memory the device exposes ([`CoherentAllocation::from_device_memory`]).
/// `read_observer`, if set, points to a live observer for the life of the value.
pub struct CoherentAllocation<T: AsBytes + FromBytes> {
    cpu_addr: NonNull<T>,
    count: usize,
    size: usize,
    dma_handle: DmaAddress,
    owned: bool,
    read_observer: Option<NonNull<dyn DmaReadObserver>>,
    _p: PhantomData<T>,
}

// SAFETY: The allocation is plain memory owned by the value; the accessors are volatile or
// require the caller to uphold the sharing protocol. The read observer, if any, is
// `Send + Sync` and outlives the value (the contract of `set_read_observer`).
unsafe impl<T: AsBytes + FromBytes + Send> Send for CoherentAllocation<T> {}
// SAFETY: As above.
unsafe impl<T: AsBytes + FromBytes + Sync> Sync for CoherentAllocation<T> {}

impl<T: AsBytes + FromBytes> CoherentAllocation<T> {
    /// Allocates zeroed coherent memory for `count` values of `T`.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if `count` is zero, `T` is zero-sized or aligned beyond a page.
    /// - `EOVERFLOW` if the size overflows.
    /// - `ENOMEM` if the memory cannot be had.
    pub fn alloc_coherent(_dev: &Device, count: usize, _gfp_flags: Flags) -> Result<Self> {
        if count == 0 || core::mem::size_of::<T>() == 0 {
            return Err(EINVAL);
        }
        let size = core::mem::size_of::<T>()
            .checked_mul(count)
            .filter(|&size| size <= isize::MAX as usize - crate::env::PAGE_SIZE)
            .ok_or(EOVERFLOW)?;
        if core::mem::align_of::<T>() > crate::env::PAGE_SIZE {
            return Err(EINVAL);
        }
        let ptr = crate::env::alloc_coherent(size).ok_or(ENOMEM)?;
        #[cfg(loom)]
        crate::model::register(ptr.as_ptr() as usize, size);
        // INVARIANT: freshly allocated by `alloc_coherent`: `size` bytes, zeroed and
        // page-aligned (so aligned for `T`, checked above), and `T: FromBytes` makes zero a
        // valid value; no observer.
        Ok(Self {
            cpu_addr: ptr.cast::<T>(),
            count,
            size,
            // CAST: addresses fit in 64 bits on every supported architecture.
            dma_handle: ptr.as_ptr() as usize as DmaAddress,
            owned: true,
            read_observer: None,
            _p: PhantomData,
        })
    }

    /// Wraps `count` values of `T` in memory that a device exposes to the CPU, which the
    /// device sees at bus address `dma_handle`: the shared-memory BAR of an emulated
    /// device, mapped write-back, whose memory is RAM on the other side. The memory is
    /// not cleared, and not freed on drop.
    ///
    /// Upstream maps such a BAR with `pci::Bar`; this shim gives it the coherent-memory
    /// accessors instead, because the protocol on it is the one of coherent memory.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if `count` is zero, `T` is zero-sized, or `cpu_addr` is not aligned
    ///   for `T`.
    /// - `EOVERFLOW` if the size overflows.
    ///
    /// # Safety
    ///
    /// `cpu_addr` must be valid for reads and writes of `count` values of `T` for the
    /// life of the returned value, and shared only with the device and through this
    /// value.
    pub unsafe fn from_device_memory(
        cpu_addr: NonNull<u8>,
        count: usize,
        dma_handle: DmaAddress,
    ) -> Result<Self> {
        if count == 0 || core::mem::size_of::<T>() == 0 || !cpu_addr.cast::<T>().is_aligned() {
            return Err(EINVAL);
        }
        let size = core::mem::size_of::<T>()
            .checked_mul(count)
            .filter(|&size| size <= isize::MAX as usize)
            .ok_or(EOVERFLOW)?;
        // INVARIANT: aligned (checked above) and valid for `size` bytes (guaranteed by the
        // caller); not owned; no observer.
        Ok(Self {
            cpu_addr: cpu_addr.cast::<T>(),
            count,
            size,
            dma_handle,
            owned: false,
            read_observer: None,
            _p: PhantomData,
        })
    }

    /// Makes [`Self::read_raw`] call `observer` just before every copy, replacing any
    /// observer set before.
    ///
    /// Ours, not upstream's API: for test benches that play a device changing the memory
    /// between two of the driver's reads. Without an observer a read costs one test of an
    /// `Option` more.
    ///
    /// # Safety
    ///
    /// `observer` must stay valid, at the same address, for as long as `self` exists.
    pub unsafe fn set_read_observer(&mut self, observer: &(dyn DmaReadObserver + 'static)) {
        // INVARIANT: the caller keeps `observer` alive and in place as long as `self`.
        self.read_observer = Some(NonNull::from(observer));
    }

    /// Returns the number of values of `T` in the allocation.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Returns the size of the allocation in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Returns the address the device uses for the start of the allocation.
    ///
    /// There is no IOMMU: for allocated memory the bus address is the CPU address.
    pub fn dma_handle(&self) -> DmaAddress {
        self.dma_handle
    }

    /// Returns the CPU address of the start of the allocation.
    pub fn start_ptr(&self) -> *const T {
        self.cpu_addr.as_ptr()
    }

    /// Returns the CPU address of the start of the allocation, for writing.
    pub fn start_ptr_mut(&mut self) -> *mut T {
        self.cpu_addr.as_ptr()
    }

    /// Returns a pointer to the value at `offset`, for the field projections of
    /// [`dma_read!`] and [`dma_write!`].
    ///
    /// # Errors
    ///
    /// - `EINVAL` if `offset` is not below [`Self::count`].
    #[doc(hidden)]
    pub fn item_from_index(&self, offset: usize) -> Result<*mut T> {
        if offset >= self.count {
            return Err(EINVAL);
        }
        // SAFETY: `offset < count`, so the result stays inside the allocation.
        Ok(unsafe { self.cpu_addr.as_ptr().add(offset) })
    }

    /// Reads a field with a volatile load.
    ///
    /// # Safety
    ///
    /// `field` must point to a properly aligned field inside this allocation.
    #[doc(hidden)]
    #[track_caller]
    pub unsafe fn field_read<F: FromBytes>(&self, field: *const F) -> F {
        #[cfg(loom)]
        if core::mem::size_of::<F>() == 4 {
            // SAFETY: `field` is a valid aligned 4-byte field (the caller's contract), and
            // `F: FromBytes` is valid for the bits of the `u32` read back.
            return unsafe {
                core::mem::transmute_copy(&crate::model::load_word(field.cast::<u32>()))
            };
        }
        // SAFETY: The caller guarantees `field` is valid and aligned; `F: FromBytes` makes
        // any value the device left there valid.
        unsafe { core::ptr::read_volatile(field) }
    }

    /// Writes a field with a volatile store.
    ///
    /// # Safety
    ///
    /// `field` must point to a properly aligned field inside this allocation.
    #[doc(hidden)]
    #[track_caller]
    pub unsafe fn field_write<F: AsBytes>(&self, field: *mut F, val: F) {
        #[cfg(loom)]
        if core::mem::size_of::<F>() == 4 {
            // SAFETY: `field` is a valid aligned 4-byte field (the caller's contract), and
            // `F: AsBytes` has no padding, so its bits are a `u32`.
            return unsafe {
                crate::model::store_word(field.cast::<u32>(), core::mem::transmute_copy(&val))
            };
        }
        // SAFETY: The caller guarantees `field` is valid and aligned.
        unsafe { core::ptr::write_volatile(field, val) }
    }

    fn byte_range(&self, offset: usize, len: usize) -> Result<*mut u8> {
        match offset.checked_add(len) {
            // SAFETY: `offset + len <= size`, so the result stays inside the allocation.
            Some(end) if end <= self.size() => {
                Ok(unsafe { self.cpu_addr.as_ptr().cast::<u8>().add(offset) })
            }
            _ => Err(EOVERFLOW),
        }
    }

    /// Copies `dst.len()` bytes starting `offset` bytes into the allocation out to `dst`.
    ///
    /// The read observer, if one is set ([`Self::set_read_observer`]), is called just
    /// before the copy, once the range is checked.
    ///
    /// # Errors
    ///
    /// - `EOVERFLOW` if the range leaves the allocation.
    ///
    /// # Safety
    ///
    /// The sharing protocol must keep the device from writing these bytes during the
    /// copy (the caller has acquired them), or the caller must not rely on their values
    /// beyond checking them.
    #[track_caller]
    pub unsafe fn read_raw(&self, offset: usize, dst: &mut [u8]) -> Result {
        let src = self.byte_range(offset, dst.len())?;
        if let Some(observer) = self.read_observer {
            // SAFETY: By the contract of `set_read_observer` the observer outlives `self`,
            // and `DmaReadObserver: Sync` makes a shared reference to it usable from any
            // thread.
            unsafe { observer.as_ref() }.before_read(offset, dst.len());
        }
        // SAFETY: `src` is valid for `dst.len()` bytes (checked above) and cannot overlap
        // `dst`, which the caller borrowed from elsewhere.
        unsafe { copy_in(src, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    /// Copies `src` into the allocation starting `offset` bytes in.
    ///
    /// # Errors
    ///
    /// - `EOVERFLOW` if the range leaves the allocation.
    ///
    /// # Safety
    ///
    /// The sharing protocol must give these bytes to the CPU for writing: the device
    /// neither reads nor writes them until the caller publishes them.
    #[track_caller]
    pub unsafe fn write_raw(&self, offset: usize, src: &[u8]) -> Result {
        let dst = self.byte_range(offset, src.len())?;
        // SAFETY: `dst` is valid for `src.len()` bytes (checked above) and cannot overlap
        // `src`, which the caller borrowed from elsewhere.
        unsafe { copy_out(src.as_ptr(), dst, src.len()) };
        Ok(())
    }

    /// Returns the 64-bit atomic word `offset` bytes into the allocation, for state that
    /// the CPU and the device update with atomic operations (an `mbarrier`).
    ///
    /// # Errors
    ///
    /// - `EINVAL` if the word is unaligned or outside the allocation.
    /// - `EOPNOTSUPP` under the model backend, which does not model atomics in shared
    ///   memory (its scenarios give a barrier its own word).
    pub fn atomic_u64(&self, offset: usize) -> Result<&Atomic<u64>> {
        self.device_view().atomic_u64(offset)
    }

    /// Returns the device's view of this allocation, for a simulated device that shares
    /// the CPU's address space.
    pub fn device_view(&self) -> DmaView<'_> {
        // SAFETY: The allocation is valid for `size()` bytes for as long as `self` is
        // borrowed.
        unsafe { DmaView::from_raw_parts(self.cpu_addr.as_ptr().cast(), self.size()) }
    }
}

impl<T: AsBytes + FromBytes> Drop for CoherentAllocation<T> {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        #[cfg(loom)]
        crate::model::unregister(self.cpu_addr.as_ptr() as usize);
        // SAFETY: By the type invariant the memory is `self.size` bytes from
        // `alloc_coherent`, and nothing uses it after this.
        unsafe { crate::env::free_coherent(self.cpu_addr.cast::<u8>(), self.size) };
    }
}

/// A device's window onto coherent memory, with bounds-checked accesses.
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
    pub fn read32(&self, offset: usize) -> Result<u32> {
        let p = self.range(offset, 4, 4)?;
        // SAFETY: `p` is aligned and inside the view (checked above).
        Ok(u32::from_le(unsafe { load_u32(p.cast::<u32>()) }))
    }

    /// Writes `value` as a little-endian `u32` at `offset` with a volatile store.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if the word is unaligned or outside the view.
    #[track_caller]
    pub fn write32(&self, offset: usize, value: u32) -> Result {
        let p = self.range(offset, 4, 4)?;
        // SAFETY: `p` is aligned and inside the view (checked above).
        unsafe { store_u32(p.cast::<u32>(), value.to_le()) };
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
        unsafe { copy_in(p, dst.as_mut_ptr(), dst.len()) };
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
        unsafe { copy_out(src.as_ptr(), p, src.len()) };
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
        #[cfg(loom)]
        {
            let _ = p;
            Err(crate::error::code::EOPNOTSUPP)
        }
        #[cfg(not(loom))]
        // SAFETY: `p` is 8-byte aligned and inside the view (checked above), valid for
        // reads and writes for `'a` by the type invariant, and any 8 bytes are a valid
        // `u64`; the sharing protocol accesses this word only atomically, so nothing races
        // with the returned atomic.
        Ok(unsafe { Atomic::from_ptr(p.cast::<u64>()) })
    }
}

/// Copies `len` bytes out of shared memory at `src`.
///
/// # Safety
///
/// Both ranges must be valid for `len` bytes and must not overlap.
#[track_caller]
#[inline(always)]
unsafe fn copy_in(src: *const u8, dst: *mut u8, len: usize) {
    #[cfg(loom)]
    // SAFETY: The caller's contract.
    unsafe {
        crate::model::load_bytes(src, dst, len)
    }
    #[cfg(not(loom))]
    // SAFETY: The caller's contract.
    unsafe {
        core::ptr::copy_nonoverlapping(src, dst, len)
    }
}

/// Copies `len` bytes into shared memory at `dst`.
///
/// # Safety
///
/// Both ranges must be valid for `len` bytes and must not overlap.
#[track_caller]
#[inline(always)]
unsafe fn copy_out(src: *const u8, dst: *mut u8, len: usize) {
    #[cfg(loom)]
    // SAFETY: The caller's contract.
    unsafe {
        crate::model::store_bytes(src, dst, len)
    }
    #[cfg(not(loom))]
    // SAFETY: The caller's contract.
    unsafe {
        core::ptr::copy_nonoverlapping(src, dst, len)
    }
}

/// Loads a shared 32-bit word.
///
/// # Safety
///
/// `p` must be valid and aligned for a 32-bit read.
#[track_caller]
#[inline(always)]
unsafe fn load_u32(p: *const u32) -> u32 {
    #[cfg(loom)]
    // SAFETY: The caller's contract.
    unsafe {
        crate::model::load_word(p)
    }
    #[cfg(not(loom))]
    // SAFETY: The caller's contract.
    unsafe {
        core::ptr::read_volatile(p)
    }
}

/// Stores a shared 32-bit word.
///
/// # Safety
///
/// `p` must be valid and aligned for a 32-bit write.
#[track_caller]
#[inline(always)]
unsafe fn store_u32(p: *mut u32, value: u32) {
    #[cfg(loom)]
    // SAFETY: The caller's contract.
    unsafe {
        crate::model::store_word(p, value)
    }
    #[cfg(not(loom))]
    // SAFETY: The caller's contract.
    unsafe {
        core::ptr::write_volatile(p, value)
    }
}

/// Reads a field of a [`CoherentAllocation`] with a volatile load.
///
/// `dma_read!(alloc[index].field.subfield)` evaluates to `Result<FieldType>`, `EINVAL`
/// when `index` is out of bounds.
#[macro_export]
macro_rules! dma_read {
    ($dma:expr, $idx: expr, $($field:tt)*) => {{
        (|| -> $crate::error::Result<_> {
            let item = $crate::dma::CoherentAllocation::item_from_index(&$dma, $idx)?;
            // SAFETY: `item_from_index` checked that `item` points inside the allocation,
            // and the projection names a field of it, hence aligned and in bounds.
            unsafe {
                let ptr_field = ::core::ptr::addr_of!((*item) $($field)*);
                ::core::result::Result::Ok(
                    $crate::dma::CoherentAllocation::field_read(&$dma, ptr_field)
                )
            }
        })()
    }};
    ($dma:ident [ $idx:expr ] $($field:tt)* ) => {
        $crate::dma_read!($dma, $idx, $($field)*)
    };
    ($($dma:ident).* [ $idx:expr ] $($field:tt)* ) => {
        $crate::dma_read!($($dma).*, $idx, $($field)*)
    };
}

/// Writes a field of a [`CoherentAllocation`] with a volatile store.
///
/// `dma_write!(alloc[index].field = value)` evaluates to `Result`, `EINVAL` when `index`
/// is out of bounds.
#[macro_export]
macro_rules! dma_write {
    ($dma:ident [ $idx:expr ] $($field:tt)*) => {{
        $crate::dma_write!($dma, $idx, $($field)*)
    }};
    ($($dma:ident).* [ $idx:expr ] $($field:tt)* ) => {{
        $crate::dma_write!($($dma).*, $idx, $($field)*)
    }};
    ($dma:expr, $idx: expr, = $val:expr) => {
        (|| -> $crate::error::Result {
            let item = $crate::dma::CoherentAllocation::item_from_index(&$dma, $idx)?;
            // SAFETY: `item_from_index` checked that `item` points inside the allocation.
            unsafe { $crate::dma::CoherentAllocation::field_write(&$dma, item, $val) };
            ::core::result::Result::Ok(())
        })()
    };
    ($dma:expr, $idx: expr, $(.$field:ident)* = $val:expr) => {
        (|| -> $crate::error::Result {
            let item = $crate::dma::CoherentAllocation::item_from_index(&$dma, $idx)?;
            // SAFETY: `item_from_index` checked that `item` points inside the allocation,
            // and the projection names a field of it, hence aligned and in bounds.
            unsafe {
                let ptr_field = ::core::ptr::addr_of_mut!((*item) $(.$field)*);
                $crate::dma::CoherentAllocation::field_write(&$dma, ptr_field, $val)
            }
            ::core::result::Result::Ok(())
        })()
    };
}
