// SPDX-License-Identifier: GPL-2.0

//! The device's side of coherent memory: a bounds-checked window onto it.
//!
//! The driver reaches its `Coherent` allocations through 7.3's `kernel::dma` API. A
//! simulated device shares the CPU's address space, so its side of the same memory is
//! the CPU mapping too; [`DmaView`] gives it that mapping with every access checked
//! against the allocation's bounds, and made so that the other agent's concurrent
//! accesses are allowed (volatile words, C `memcpy` for byte ranges, atomics for words
//! the protocol updates atomically).

use core::{
    marker::PhantomData,
    ptr::NonNull, //
};

use kernel::{
    bindings,
    dma::Coherent,
    prelude::*,
    ptr::KnownSize,
    sync::atomic::Atomic, //
};

/// A device's window onto coherent memory, with bounds-checked accesses.
///
/// The twin of the host shim's `kernel::dma::DmaView` (`kernel-shim/src/dma.rs`), by
/// necessity: the virtual GSP is written once against this API, and this crate is built
/// inside the kernel tree against 7.3's own `kernel` crate, where the shim does not
/// exist, while the shim is that `kernel` crate on the host. The two have the same
/// methods, bounds rules and errors; they differ only in the primitives under them:
/// byte ranges are copied here with the kernel's C `memcpy` (`bindings::memcpy`), there
/// with `core::ptr::copy_nonoverlapping`, and words go through 7.3's
/// `Atomic::from_ptr` here, the shim's atomics there.
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

// SAFETY: A `DmaView` is an address range shared with another agent; every access through
// it is a volatile word, an atomic or a C `memcpy`, whose ordering the protocol's barriers
// provide, so no access is tied to a thread.
unsafe impl Send for DmaView<'_> {}

// SAFETY: As for `Send`.
unsafe impl Sync for DmaView<'_> {}

impl<'a> DmaView<'a> {
    /// Creates a view of `len` bytes at `base`.
    ///
    /// # Safety
    ///
    /// `base` must be 8-byte aligned and valid for reads and writes of `len` bytes for
    /// `'a`; the memory may be shared with other agents.
    pub unsafe fn from_raw_parts(base: *mut u8, len: usize) -> Self {
        // INVARIANT: Guaranteed by the caller.
        Self {
            // SAFETY: The caller guarantees `base` is a valid, hence non-null, pointer.
            base: unsafe { NonNull::new_unchecked(base) },
            len,
            _p: PhantomData,
        }
    }

    /// Returns the length of the view in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Returns whether the view is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Returns the view of the `len` bytes at `offset` of this one.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if `offset` is not 8-byte aligned or the range is outside the view.
    pub fn subview(&self, offset: usize, len: usize) -> Result<DmaView<'a>> {
        let base = self.range(offset, len, 8)?;
        // INVARIANT: Inside this view (checked by `range`), so valid for `'a`; 8-byte
        // aligned, as this view's base and `offset` are.
        Ok(Self {
            base,
            len,
            _p: PhantomData,
        })
    }

    /// Returns the address of the `len` bytes at `offset`, if they are inside the view and
    /// `offset` is a multiple of `align`.
    ///
    /// # Errors
    ///
    /// - `EINVAL` otherwise.
    fn range(&self, offset: usize, len: usize, align: usize) -> Result<NonNull<u8>> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len && offset.is_multiple_of(align) => {
                // SAFETY: `offset + len <= self.len`, so `offset` is inside the view (or one
                // past its end), which is one allocation by the type invariant.
                Ok(unsafe { self.base.add(offset) })
            }
            _ => Err(EINVAL),
        }
    }

    /// Reads the little-endian `u32` at `offset` with a volatile load.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if the word is unaligned or outside the view.
    pub fn read32(&self, offset: usize) -> Result<u32> {
        let p = self.range(offset, 4, 4)?.cast::<u32>();
        // SAFETY: `p` is aligned and inside the view (checked above), valid for reads by the
        // type invariant. A volatile load may race with the other agent's accesses (the
        // LKMM allows it); any bits are a valid `u32`.
        Ok(u32::from_le(unsafe { p.read_volatile() }))
    }

    /// Writes `value` as a little-endian `u32` at `offset` with a volatile store.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if the word is unaligned or outside the view.
    pub fn write32(&self, offset: usize, value: u32) -> Result {
        let p = self.range(offset, 4, 4)?.cast::<u32>();
        // SAFETY: As for `read32`, and the view is valid for writes.
        unsafe { p.write_volatile(value.to_le()) };
        Ok(())
    }

    /// Copies `dst.len()` bytes at `offset` out of the view.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if the range leaves the view.
    pub fn read_bytes(&self, offset: usize, dst: &mut [u8]) -> Result {
        let p = self.range(offset, dst.len(), 1)?;
        // SAFETY: `p` is valid for reads of `dst.len()` bytes (checked above) and `dst` for
        // writes; `dst` is a borrow of its own, so they do not overlap. The C `memcpy` (as
        // 7.3's `SysMem` uses) may race with the other agent's writes, which can only change
        // the bytes read, which callers validate.
        unsafe {
            bindings::memcpy(
                dst.as_mut_ptr().cast(),
                p.as_ptr().cast_const().cast(),
                dst.len(),
            )
        };
        Ok(())
    }

    /// Copies `src` into the view at `offset`.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if the range leaves the view.
    pub fn write_bytes(&self, offset: usize, src: &[u8]) -> Result {
        let p = self.range(offset, src.len(), 1)?;
        // SAFETY: `p` is valid for writes of `src.len()` bytes (checked above) and `src` for
        // reads; `src` is a borrow of its own, so they do not overlap.
        unsafe { bindings::memcpy(p.as_ptr().cast(), src.as_ptr().cast(), src.len()) };
        Ok(())
    }

    /// Returns the 64-bit atomic word at `offset`, for state that the agents sharing the
    /// memory update only with atomic operations (an `mbarrier`).
    ///
    /// # Errors
    ///
    /// - `EINVAL` if the word is unaligned or outside the view.
    pub fn atomic_u64(&self, offset: usize) -> Result<&'a Atomic<u64>> {
        let p = self.range(offset, 8, 8)?.cast::<u64>();
        // SAFETY: `p` is 8-byte aligned and inside the view (checked above), valid for reads
        // and writes for `'a` by the type invariant, and any 8 bytes are a valid `u64`; the
        // sharing protocol accesses this word only atomically, so nothing races with the
        // returned atomic.
        Ok(unsafe { Atomic::from_ptr(p.as_ptr()) })
    }
}

/// Returns the device's view of `mem`, for a simulated device that shares the CPU's
/// address space.
pub fn device_view<T: KnownSize + ?Sized>(mem: &Coherent<T>) -> DmaView<'_> {
    // SAFETY: `mem` is a live coherent allocation of `mem.size()` bytes, mapped at
    // `mem.as_mut_ptr()` and page aligned (as `dma_alloc_attrs` returns it), which stays
    // allocated and in place while `mem` is borrowed. The driver shares it with the device
    // by design: the view's accesses are the device's.
    unsafe { DmaView::from_raw_parts(mem.as_mut_ptr().cast::<u8>(), mem.size()) }
}
