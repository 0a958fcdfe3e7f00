// SPDX-License-Identifier: GPL-2.0

//! Memory-mapped I/O and other memory accessed with I/O semantics, as Linux 7.3's
//! `kernel::io`.
//!
//! An I/O *view* is a `Copy` handle to a typed region: [`Mmio`] (device registers,
//! accessed like C's `readl`/`writel`), [`RelaxedMmio`] (the same without ordering, like
//! `readl_relaxed`/`writel_relaxed`), and, in [`crate::dma`], a `CoherentView` of coherent
//! memory. Each view names an [`IoBackend`] that knows how to access it ([`IoCapable`] for
//! the widths it supports, [`IoCopyable`] for byte copies) and implements [`IoBase`], which
//! gives it every method of [`Io`]: `read32(offset)`/`write32(value, offset)` (offsets
//! checked against the region's build-time size), their `try_` forms (checked at run time,
//! `EINVAL`), `read_val`/`write_val` of a whole projected value, `copy_from_slice`/
//! `copy_to_slice` of bytes. [`io_project!`] narrows a view to a field or element,
//! [`io_read!`] and [`io_write!`] read and write through one.
//!
//! [`Mmio::write32`](Io::write32) is ordered after every earlier write to normal memory,
//! like `writel`: a driver can publish data in coherent memory and then ring a doorbell
//! without a barrier of its own.
//!
//! # Ours, not 7.3's
//!
//! A region backed by memory instead of a device (a simulated BAR, the test bench's
//! `vdev::SimBar`) carries an [`MmioWriteObserver`] ([`MmioRaw::with_observer`]): the
//! simulated device, told of every 32-bit register write the way real hardware sees it on
//! the bus. Where 7.3 fails the build for an offset it cannot prove inside the region
//! (`read32`, `write32`, ...), this crate, which has no `build_assert!`, panics when the
//! access runs. `copy_read` and `copy_write` take this crate's `transmute` traits where 7.3
//! takes zerocopy's. 7.3's `SysMem` and `IoSysMap` are not here; [`register!`] is a subset
//! of 7.3's (fixed-offset registers only, see [`mod@register`]).

pub mod poll;
pub mod register;

pub use crate::register;

use core::{
    marker::PhantomData,
    mem::MaybeUninit,
    ptr::NonNull, //
};

use register::LocatedRegister;

use crate::{
    error::{
        code::EINVAL,
        Result, //
    },
    ptr::{
        Alignment,
        KnownSize, //
    },
    sync::barrier::{
        io_dma_mb,
        Read,
        Write, //
    },
    transmute::{
        AsBytes,
        FromBytes, //
    },
};

/// A size of a resource (a BAR), as the kernel's `resource_size_t`.
pub type ResourceSize = u64;

/// Something that observes writes to an MMIO region, as the device behind it would.
///
/// Ours, not 7.3's: a simulated device (see the module documentation).
pub trait MmioWriteObserver: Send + Sync {
    /// Called after `value` was stored, with a 32-bit write, at `offset` in the region.
    fn written(&self, offset: usize, value: u32);
}

/// A region of I/O memory of at least `SIZE` bytes, whose real size the pointer carries.
///
/// Only ever behind a pointer: `*mut Region<SIZE>` is a base address and a size.
#[repr(C, align(4))]
pub struct Region<const SIZE: usize = 0> {
    inner: [u8],
}

impl<const SIZE: usize> Region<SIZE> {
    /// The region of `size` bytes at `base`, unchecked.
    #[inline]
    pub fn ptr_from_raw_parts_mut(base: *mut u8, size: usize) -> *mut Self {
        core::ptr::slice_from_raw_parts_mut(base, size) as *mut Self
    }

    /// The region of `size` bytes at `base`.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if `size` is below `SIZE` or not a multiple of 4, or `base` is not
    ///   4-byte aligned.
    #[inline]
    pub fn ptr_try_from_raw_parts_mut(base: *mut u8, size: usize) -> Result<*mut Self> {
        if size < SIZE || !size.is_multiple_of(4) || !base.addr().is_multiple_of(4) {
            return Err(EINVAL);
        }
        Ok(Self::ptr_from_raw_parts_mut(base, size))
    }
}

impl<const SIZE: usize> KnownSize for Region<SIZE> {
    const MIN_SIZE: usize = SIZE;
    const MIN_ALIGN: Alignment = Alignment::new::<4>();

    #[inline(always)]
    fn size(p: *const Self) -> usize {
        (p as *const [u8]).len()
    }
}

/// The raw address (and, for a [`Region`], size) of I/O memory, before it is known to be
/// mapped.
///
/// # Invariants
///
/// `observer`, if set, points to a live observer for the life of the value and of every
/// view made from it.
pub struct MmioRaw<T: ?Sized> {
    ptr: *mut T,
    observer: Option<NonNull<dyn MmioWriteObserver>>,
}

impl<T: ?Sized> Clone for MmioRaw<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: ?Sized> Copy for MmioRaw<T> {}

// SAFETY: an address, and an observer that is `Send + Sync`.
unsafe impl<T: ?Sized> Send for MmioRaw<T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized> Sync for MmioRaw<T> {}

impl<T> MmioRaw<T> {
    /// The I/O memory of one `T` at `addr`.
    #[inline]
    pub fn new(addr: usize) -> Self {
        Self {
            ptr: core::ptr::without_provenance_mut(addr),
            observer: None,
        }
    }
}

impl<const SIZE: usize> MmioRaw<Region<SIZE>> {
    /// The region of `size` bytes at `addr`.
    ///
    /// # Errors
    ///
    /// - `EINVAL` as [`Region::ptr_try_from_raw_parts_mut`].
    #[inline]
    pub fn new_region(addr: usize, size: usize) -> Result<Self> {
        Ok(Self {
            ptr: Region::ptr_try_from_raw_parts_mut(core::ptr::without_provenance_mut(addr), size)?,
            observer: None,
        })
    }
}

impl<T: ?Sized + KnownSize> MmioRaw<T> {
    /// The start address.
    #[inline]
    pub fn addr(&self) -> usize {
        self.ptr.addr()
    }

    /// The size in bytes.
    #[inline]
    pub fn size(&self) -> usize {
        KnownSize::size(self.ptr)
    }
}

impl<T: ?Sized> MmioRaw<T> {
    /// The same memory, seen through a pointer with provenance: a region backed by memory
    /// (a simulated BAR) must keep its allocation's provenance for its accesses to be
    /// defined.
    ///
    /// Ours, not 7.3's.
    #[inline]
    pub fn from_ptr(ptr: *mut T) -> Self {
        Self {
            ptr,
            observer: None,
        }
    }

    /// Attaches the simulated device that observes writes to the region.
    ///
    /// Ours, not 7.3's.
    ///
    /// # Safety
    ///
    /// `observer` must stay valid, at the same address, for as long as the returned value
    /// and every view made from it exist.
    pub unsafe fn with_observer(mut self, observer: &(dyn MmioWriteObserver + 'static)) -> Self {
        // INVARIANT: the caller keeps `observer` alive and in place as long as `self`.
        self.observer = Some(NonNull::from(observer));
        self
    }
}

/// How a kind of I/O memory is accessed: its view type and how a view is narrowed.
pub trait IoBackend {
    /// The view of a `T` in this kind of memory.
    type View<'a, T: ?Sized + KnownSize>: IoBase<'a, Backend = Self, Target = T>;

    /// The address of the view, for projections only: it must not be dereferenced.
    fn as_ptr<'a, T: ?Sized + KnownSize>(view: Self::View<'a, T>) -> *mut T;

    /// The view of the part of `view` that `ptr` points to.
    ///
    /// # Safety
    ///
    /// `ptr` must be a projection of `Self::as_ptr(view)`, lying wholly inside it.
    unsafe fn project_view<'a, T: ?Sized + KnownSize, U: ?Sized + KnownSize>(
        view: Self::View<'a, T>,
        ptr: *mut U,
    ) -> Self::View<'a, U>;
}

/// A backend that reads and writes values of type `T` as single accesses.
pub trait IoCapable<T>: IoBackend {
    /// Reads the `T` at `view`.
    fn io_read<'a>(view: Self::View<'a, T>) -> T;

    /// Writes `value` at `view`.
    fn io_write<'a>(view: Self::View<'a, T>, value: T);
}

/// A backend that copies bytes in and out.
pub trait IoCopyable: IoBackend {
    /// Copies the bytes of `view` to `buffer`.
    ///
    /// # Safety
    ///
    /// `buffer` must be valid for writes of the view's size and must not overlap it.
    unsafe fn copy_from_io(view: Self::View<'_, [u8]>, buffer: *mut u8);

    /// Copies `buffer` into `view`.
    ///
    /// # Safety
    ///
    /// `buffer` must be valid for reads of the view's size and must not overlap it.
    unsafe fn copy_to_io(view: Self::View<'_, [u8]>, buffer: *const u8);

    /// Copies the `T` at `view` out, byte by byte.
    #[inline]
    fn copy_read<T: FromBytes>(view: Self::View<'_, T>) -> T {
        let mut value = MaybeUninit::<T>::uninit();
        let ptr = Self::as_ptr(view);
        // SAFETY: the bytes of a `T` are a projection of the view of that `T`.
        let bytes = unsafe {
            Self::project_view(
                view,
                core::ptr::slice_from_raw_parts_mut(ptr.cast::<u8>(), size_of::<T>()),
            )
        };
        // SAFETY: `value` is a local of `size_of::<T>()` bytes.
        unsafe { Self::copy_from_io(bytes, value.as_mut_ptr().cast()) };
        // SAFETY: every byte was written above, and `T: FromBytes` makes any bytes a `T`.
        unsafe { value.assume_init() }
    }

    /// Copies `value` into the `T` at `view`, byte by byte.
    #[inline]
    fn copy_write<T: AsBytes>(view: Self::View<'_, T>, value: T) {
        let ptr = Self::as_ptr(view);
        // SAFETY: as in `copy_read`.
        let bytes = unsafe {
            Self::project_view(
                view,
                core::ptr::slice_from_raw_parts_mut(ptr.cast::<u8>(), size_of::<T>()),
            )
        };
        // SAFETY: `value` is a local of `size_of::<T>()` bytes, initialised (`T: AsBytes`
        // has no padding).
        unsafe { Self::copy_to_io(bytes, (&raw const value).cast()) };
    }
}

/// Where a value of type `T` lives in an I/O region of type `Base`: an offset, and the
/// type the access is made with.
pub trait IoLoc<Base: ?Sized, T> {
    /// The type of the access (the register's width).
    type IoType: Into<T> + From<T>;

    /// The byte offset in the region.
    fn offset(self) -> usize;
}

macro_rules! region_offsets {
    ($($t:ty),*) => {$(
        impl<const SIZE: usize> IoLoc<Region<SIZE>, $t> for usize {
            type IoType = $t;

            #[inline(always)]
            fn offset(self) -> usize {
                self
            }
        }
    )*};
}

region_offsets!(u8, u16, u32, u64);

/// Something that is, or gives, an I/O view.
pub trait IoBase<'a>: Copy {
    /// How the view is accessed.
    type Backend: IoBackend;

    /// What the view covers.
    type Target: ?Sized + KnownSize;

    /// The view.
    fn as_view(self) -> <Self::Backend as IoBackend>::View<'a, Self::Target>;
}

fn offset_fits<U>(addr: usize, offset: usize, size: usize) -> bool {
    matches!(offset.checked_add(size_of::<U>()), Some(end) if end <= size)
        && addr.wrapping_add(offset).is_multiple_of(align_of::<U>())
}

/// The view of the `U` at `offset`, checked at run time.
#[inline]
fn view_at<'a, IO: Io<'a>, U>(
    io: IO,
    offset: usize,
) -> Result<<IO::Backend as IoBackend>::View<'a, U>> {
    let view = io.as_view();
    let base = IO::Backend::as_ptr(view);
    if !offset_fits::<U>(base.addr(), offset, KnownSize::size(base)) {
        return Err(EINVAL);
    }
    // SAFETY: the `U` at `offset` lies inside the view and is aligned (checked above).
    Ok(unsafe { IO::Backend::project_view(view, base.cast::<U>().wrapping_byte_add(offset)) })
}

/// The view of the `U` at `offset`, checked against the region's build-time size.
///
/// As 7.3's, it does not build for a `U` aligned beyond what the region's type promises
/// (`KnownSize::MIN_ALIGN`): a 64-bit access to a `Region`, only known to be 4-byte
/// aligned, takes the checked `try_` form.
///
/// # Panics
///
/// If the `U` at `offset` does not fit in the type's least size (Linux fails the build),
/// or is misaligned.
#[track_caller]
#[inline(always)]
fn view_at_fixed<'a, IO: Io<'a>, U>(
    io: IO,
    offset: usize,
) -> <IO::Backend as IoBackend>::View<'a, U> {
    const { assert!(align_of::<U>() <= IO::Target::MIN_ALIGN.as_usize()) };
    let view = io.as_view();
    let base = IO::Backend::as_ptr(view);
    // PANIC: register offsets are driver constants; a bad one is a driver bug, which 7.3
    // catches at build time.
    assert!(
        offset_fits::<U>(base.addr(), offset, IO::Target::MIN_SIZE),
        "I/O access at {offset:#x} outside the region's {:#x} bytes",
        IO::Target::MIN_SIZE
    );
    // SAFETY: the `U` at `offset` lies inside the region's least size and is aligned
    // (both checked above).
    unsafe { IO::Backend::project_view(view, base.cast::<U>().wrapping_byte_add(offset)) }
}

/// The fixed-width accessors of [`Io`] (`try_read32`, `write32`, ...), one set per width,
/// each a shorthand for [`Io::try_read`], [`Io::try_write`], [`Io::read`] or [`Io::write`] at a
/// byte offset.
macro_rules! width_accessors {
    ($($t:ty: $try_read:ident, $try_write:ident, $read:ident, $write:ident;)*) => {$(
        #[doc = concat!("Reads the `", stringify!($t), "` at `offset`.")]
        ///
        /// # Errors
        ///
        /// - `EINVAL` if it lies outside the view or is unaligned.
        #[inline(always)]
        fn $try_read(self, offset: usize) -> Result<$t>
        where
            usize: IoLoc<Self::Target, $t, IoType = $t>,
            Self::Backend: IoCapable<$t>,
        {
            self.try_read(offset)
        }

        #[doc = concat!("Writes `value` as the `", stringify!($t), "` at `offset`.")]
        ///
        /// # Errors
        ///
        /// - `EINVAL` if it lies outside the view or is unaligned.
        #[inline(always)]
        fn $try_write(self, value: $t, offset: usize) -> Result
        where
            usize: IoLoc<Self::Target, $t, IoType = $t>,
            Self::Backend: IoCapable<$t>,
        {
            self.try_write(offset, value)
        }

        #[doc = concat!("Reads the `", stringify!($t), "` at the constant `offset`.")]
        ///
        /// # Panics
        ///
        /// As [`Io::read`].
        #[track_caller]
        #[inline(always)]
        fn $read(self, offset: usize) -> $t
        where
            usize: IoLoc<Self::Target, $t, IoType = $t>,
            Self::Backend: IoCapable<$t>,
        {
            self.read(offset)
        }

        #[doc = concat!("Writes `value` as the `", stringify!($t), "` at the constant `offset`.")]
        ///
        /// # Panics
        ///
        /// As [`Io::write`].
        #[track_caller]
        #[inline(always)]
        fn $write(self, value: $t, offset: usize)
        where
            usize: IoLoc<Self::Target, $t, IoType = $t>,
            Self::Backend: IoCapable<$t>,
        {
            self.write(offset, value)
        }
    )*};
}

/// The accessors of every I/O view ([`IoBase`]); the widths each backend supports come
/// from its [`IoCapable`] implementations.
pub trait Io<'a>: IoBase<'a> {
    /// The size of the view in bytes.
    #[inline]
    fn size(self) -> usize {
        KnownSize::size(Self::Backend::as_ptr(self.as_view()))
    }

    /// The number of elements of a slice view.
    #[inline]
    fn len<T>(self) -> usize
    where
        Self: Io<'a, Target = [T]>,
    {
        Self::Backend::as_ptr(self.as_view()).len()
    }

    /// Whether a slice view has no element.
    #[inline]
    fn is_empty<T>(self) -> bool
    where
        Self: Io<'a, Target = [T]>,
    {
        self.len() == 0
    }

    /// The view of a `U` at the start of this one.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if a `U` does not fit or is misaligned there.
    #[inline]
    fn try_cast<U>(self) -> Result<<Self::Backend as IoBackend>::View<'a, U>>
    where
        Self::Target: FromBytes + AsBytes,
        U: FromBytes + AsBytes,
    {
        view_at::<Self, U>(self, 0)
    }

    /// Reads the whole value of the view with one access.
    #[inline]
    fn read_val(self) -> Self::Target
    where
        Self::Backend: IoCapable<Self::Target>,
        Self::Target: Sized,
    {
        Self::Backend::io_read(self.as_view())
    }

    /// Writes the whole value of the view with one access.
    #[inline]
    fn write_val(self, value: Self::Target)
    where
        Self::Backend: IoCapable<Self::Target>,
        Self::Target: Sized,
    {
        Self::Backend::io_write(self.as_view(), value)
    }

    /// Copies the value of the view out, byte by byte.
    #[inline]
    fn copy_read(self) -> Self::Target
    where
        Self::Backend: IoCopyable,
        Self::Target: Sized + FromBytes,
    {
        Self::Backend::copy_read(self.as_view())
    }

    /// Copies `value` into the view, byte by byte.
    #[inline]
    fn copy_write(self, value: Self::Target)
    where
        Self::Backend: IoCopyable,
        Self::Target: Sized + AsBytes,
    {
        Self::Backend::copy_write(self.as_view(), value)
    }

    /// Copies `data` into a byte view.
    ///
    /// # Panics
    ///
    /// If `data` is not as long as the view.
    #[track_caller]
    #[inline]
    fn copy_from_slice(self, data: &[u8])
    where
        Self::Backend: IoCopyable,
        Self: Io<'a, Target = [u8]>,
    {
        // PANIC: 7.3's contract: the caller sizes the view and the buffer alike.
        assert_eq!(
            self.len(),
            data.len(),
            "copy into I/O memory of another size"
        );
        // SAFETY: `data` is valid for reads of the view's size and, a distinct borrow,
        // cannot overlap I/O memory the view covers.
        unsafe { Self::Backend::copy_to_io(self.as_view(), data.as_ptr()) }
    }

    /// Copies a byte view out to `data`.
    ///
    /// # Panics
    ///
    /// If `data` is not as long as the view.
    #[track_caller]
    #[inline]
    fn copy_to_slice(self, data: &mut [u8])
    where
        Self::Backend: IoCopyable,
        Self: Io<'a, Target = [u8]>,
    {
        // PANIC: as in `copy_from_slice`.
        assert_eq!(
            self.len(),
            data.len(),
            "copy out of I/O memory of another size"
        );
        // SAFETY: `data` is valid for writes of the view's size and cannot overlap it.
        unsafe { Self::Backend::copy_from_io(self.as_view(), data.as_mut_ptr()) }
    }

    width_accessors! {
        u8: try_read8, try_write8, read8, write8;
        u16: try_read16, try_write16, read16, write16;
        u32: try_read32, try_write32, read32, write32;
        u64: try_read64, try_write64, read64, write64;
    }

    /// Reads the value at `location`.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if it lies outside the view or is unaligned.
    #[inline(always)]
    fn try_read<T, L>(self, location: L) -> Result<T>
    where
        L: IoLoc<Self::Target, T>,
        Self::Backend: IoCapable<L::IoType>,
    {
        let view = view_at::<Self, L::IoType>(self, location.offset())?;
        Ok(Self::Backend::io_read(view).into())
    }

    /// Writes `value` at `location`.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if it lies outside the view or is unaligned.
    #[inline(always)]
    fn try_write<T, L>(self, location: L, value: T) -> Result
    where
        L: IoLoc<Self::Target, T>,
        Self::Backend: IoCapable<L::IoType>,
    {
        let view = view_at::<Self, L::IoType>(self, location.offset())?;
        Self::Backend::io_write(view, value.into());
        Ok(())
    }

    /// Writes the register value `value` where its type says it lives (the value of a
    /// [`register!`] type).
    ///
    /// # Errors
    ///
    /// - `EINVAL` if the register lies outside the view or is unaligned.
    #[inline(always)]
    fn try_write_reg<T, L, V>(self, value: V) -> Result
    where
        L: IoLoc<Self::Target, T>,
        V: LocatedRegister<Self::Target, Location = L, Value = T>,
        Self::Backend: IoCapable<L::IoType>,
    {
        let (location, value) = value.into_io_op();
        self.try_write(location, value)
    }

    /// Reads the value at `location`, hands it to `f` and writes back what `f` returns.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if it lies outside the view or is unaligned.
    #[inline(always)]
    fn try_update<T, L, F>(self, location: L, f: F) -> Result
    where
        L: IoLoc<Self::Target, T>,
        Self::Backend: IoCapable<L::IoType>,
        F: FnOnce(T) -> T,
    {
        let view = view_at::<Self, L::IoType>(self, location.offset())?;
        let value = f(Self::Backend::io_read(view).into());
        Self::Backend::io_write(view, value.into());
        Ok(())
    }

    /// Reads the value at the constant `location`.
    ///
    /// # Panics
    ///
    /// If `location` does not fit the region's build-time size (Linux fails the build).
    #[track_caller]
    #[inline(always)]
    fn read<T, L>(self, location: L) -> T
    where
        L: IoLoc<Self::Target, T>,
        Self::Backend: IoCapable<L::IoType>,
    {
        Self::Backend::io_read(view_at_fixed::<Self, L::IoType>(self, location.offset())).into()
    }

    /// Writes `value` at the constant `location`.
    ///
    /// # Panics
    ///
    /// As [`Io::read`].
    #[track_caller]
    #[inline(always)]
    fn write<T, L>(self, location: L, value: T)
    where
        L: IoLoc<Self::Target, T>,
        Self::Backend: IoCapable<L::IoType>,
    {
        let view = view_at_fixed::<Self, L::IoType>(self, location.offset());
        Self::Backend::io_write(view, value.into());
    }

    /// Writes the register value `value` where its type says it lives (the value of a
    /// [`register!`] type): `io.write_reg(REG::zeroed().with_const_field::<1>())`.
    ///
    /// # Panics
    ///
    /// As [`Io::read`].
    #[track_caller]
    #[inline(always)]
    fn write_reg<T, L, V>(self, value: V)
    where
        L: IoLoc<Self::Target, T>,
        V: LocatedRegister<Self::Target, Location = L, Value = T>,
        Self::Backend: IoCapable<L::IoType>,
    {
        let (location, value) = value.into_io_op();
        self.write(location, value)
    }

    /// Reads the value at the constant `location`, hands it to `f` and writes back what `f`
    /// returns.
    ///
    /// # Panics
    ///
    /// As [`Io::read`].
    #[track_caller]
    #[inline(always)]
    fn update<T, L, F>(self, location: L, f: F)
    where
        L: IoLoc<Self::Target, T>,
        Self::Backend: IoCapable<L::IoType>,
        F: FnOnce(T) -> T,
    {
        let view = view_at_fixed::<Self, L::IoType>(self, location.offset());
        let value = f(Self::Backend::io_read(view).into());
        Self::Backend::io_write(view, value.into());
    }
}

// One implementation for every view, so no view can change what the accessors mean.
impl<'a, T: IoBase<'a>> Io<'a> for T {}

/// A view of memory-mapped device registers, accessed like `readl`/`writel`.
///
/// # Invariants
///
/// `ptr` is a mapping of device memory (or, with an observer, of memory standing for it)
/// valid for volatile accesses for `'a`; `base` is the address of the region `ptr` was
/// projected from, and `observer`, if set, lives for `'a`.
pub struct Mmio<'a, T: ?Sized> {
    ptr: *mut T,
    base: usize,
    observer: Option<NonNull<dyn MmioWriteObserver>>,
    _p: PhantomData<&'a ()>,
}

impl<T: ?Sized> Clone for Mmio<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: ?Sized> Copy for Mmio<'_, T> {}

// SAFETY: a view of device memory, which any CPU may access; the observer is
// `Send + Sync`.
unsafe impl<T: ?Sized + Sync> Send for Mmio<'_, T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Sync> Sync for Mmio<'_, T> {}

impl<'a, T: ?Sized> Mmio<'a, T> {
    /// The view of the I/O memory `raw` describes.
    ///
    /// # Safety
    ///
    /// `raw` must be mapped I/O memory (or memory standing for it), valid for volatile
    /// accesses for `'a`.
    #[inline]
    pub unsafe fn from_raw(raw: MmioRaw<T>) -> Self {
        // INVARIANT: the caller's contract; `raw`'s observer lives as long as `raw`'s users.
        Self {
            ptr: raw.ptr,
            base: raw.ptr.cast::<u8>().addr(),
            observer: raw.observer,
            _p: PhantomData,
        }
    }

    /// The same view with unordered accessors (`readl_relaxed`/`writel_relaxed`).
    #[inline]
    pub fn relaxed(self) -> RelaxedMmio<'a, T> {
        RelaxedMmio(self)
    }

    #[inline(always)]
    fn observe(self, value: u32) {
        if let Some(observer) = self.observer {
            // SAFETY: by the type invariant the observer lives for `'a`, and
            // `MmioWriteObserver: Sync` makes a shared reference to it usable anywhere.
            unsafe { observer.as_ref() }.written(self.ptr.cast::<u8>().addr() - self.base, value);
        }
    }
}

impl<'a, T: ?Sized + KnownSize> IoBase<'a> for Mmio<'a, T> {
    type Backend = MmioBackend;
    type Target = T;

    #[inline]
    fn as_view(self) -> Mmio<'a, T> {
        self
    }
}

/// The backend of [`Mmio`].
pub struct MmioBackend;

impl IoBackend for MmioBackend {
    type View<'a, T: ?Sized + KnownSize> = Mmio<'a, T>;

    #[inline]
    fn as_ptr<'a, T: ?Sized + KnownSize>(view: Mmio<'a, T>) -> *mut T {
        view.ptr
    }

    #[inline]
    unsafe fn project_view<'a, T: ?Sized + KnownSize, U: ?Sized + KnownSize>(
        view: Self::View<'a, T>,
        ptr: *mut U,
    ) -> Self::View<'a, U> {
        // INVARIANT: a projection of a valid view is valid (the caller's contract); the base
        // and the observer are the region's.
        Mmio {
            ptr,
            base: view.base,
            observer: view.observer,
            _p: PhantomData,
        }
    }
}

/// A view of device registers without ordering against memory (`readl_relaxed`).
pub struct RelaxedMmio<'a, T: ?Sized>(Mmio<'a, T>);

impl<T: ?Sized> Clone for RelaxedMmio<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: ?Sized> Copy for RelaxedMmio<'_, T> {}

impl<'a, T: ?Sized + KnownSize> IoBase<'a> for RelaxedMmio<'a, T> {
    type Backend = RelaxedMmioBackend;
    type Target = T;

    #[inline]
    fn as_view(self) -> RelaxedMmio<'a, T> {
        self
    }
}

/// The backend of [`RelaxedMmio`].
pub struct RelaxedMmioBackend;

impl IoBackend for RelaxedMmioBackend {
    type View<'a, T: ?Sized + KnownSize> = RelaxedMmio<'a, T>;

    #[inline]
    fn as_ptr<'a, T: ?Sized + KnownSize>(view: RelaxedMmio<'a, T>) -> *mut T {
        view.0.ptr
    }

    #[inline]
    unsafe fn project_view<'a, T: ?Sized + KnownSize, U: ?Sized + KnownSize>(
        view: Self::View<'a, T>,
        ptr: *mut U,
    ) -> Self::View<'a, U> {
        // SAFETY: the caller's contract, passed on.
        RelaxedMmio(unsafe { MmioBackend::project_view(view.0, ptr) })
    }
}

/// A register width: its value, for the simulated device that observes writes.
trait Width: Copy {
    fn observed(self) -> Option<u32>;
}

impl Width for u8 {
    fn observed(self) -> Option<u32> {
        None
    }
}

impl Width for u16 {
    fn observed(self) -> Option<u32> {
        None
    }
}

impl Width for u32 {
    fn observed(self) -> Option<u32> {
        Some(self)
    }
}

impl Width for u64 {
    fn observed(self) -> Option<u32> {
        None
    }
}

/// A volatile read of a register.
///
/// # Safety
///
/// `p` must be valid and aligned for a volatile read of `T`.
#[inline(always)]
unsafe fn reg_read<T: Width>(p: *mut T) -> T {
    // SAFETY: the caller's contract.
    unsafe { p.read_volatile() }
}

/// A volatile write of a register, then the observer's notification.
#[inline(always)]
fn reg_write<T: Width>(view: Mmio<'_, T>, value: T) {
    // SAFETY: by `Mmio`'s invariant, `view.ptr` is valid for volatile accesses; a view of a
    // `T` is aligned for it (`view_at` and `view_at_fixed` check, projections keep it).
    unsafe { view.ptr.write_volatile(value) };
    if let Some(value) = value.observed() {
        view.observe(value);
    }
}

macro_rules! mmio_widths {
    ($($t:ty),*) => {$(
        impl IoCapable<$t> for MmioBackend {
            #[inline]
            fn io_read(view: Mmio<'_, $t>) -> $t {
                // SAFETY: see `reg_write`.
                let value = unsafe { reg_read(view.ptr) };
                // ORDERING: LOAD->LOAD. Orders this register read before the caller's later
                // reads of coherent memory, as `readl`'s `__iormb` does. Pairs with the
                // device's writes of that memory before it updates the register.
                io_dma_mb(Read);
                value
            }

            #[inline]
            fn io_write(view: Mmio<'_, $t>, value: $t) {
                // ORDERING: STORE->STORE. Orders the caller's earlier stores to coherent
                // memory before this register write, as `writel`'s `__iowmb` does. Pairs
                // with the device reading that memory after it sees the register write.
                io_dma_mb(Write);
                reg_write(view, value);
            }
        }

        impl IoCapable<$t> for RelaxedMmioBackend {
            #[inline]
            fn io_read(view: RelaxedMmio<'_, $t>) -> $t {
                // SAFETY: see `reg_write`.
                unsafe { reg_read(view.0.ptr) }
            }

            #[inline]
            fn io_write(view: RelaxedMmio<'_, $t>, value: $t) {
                reg_write(view.0, value);
            }
        }
    )*};
}

mmio_widths!(u8, u16, u32, u64);

/// Byte copies of device memory, volatile byte by byte.
///
/// # Safety
///
/// `src` and `dst` must be valid for `len` bytes and must not overlap.
unsafe fn copy_volatile(src: *const u8, dst: *mut u8, len: usize) {
    for i in 0..len {
        // SAFETY: the caller's contract; `i < len`.
        unsafe { dst.add(i).write_volatile(src.add(i).read_volatile()) };
    }
}

impl IoCopyable for MmioBackend {
    #[inline]
    unsafe fn copy_from_io(view: Mmio<'_, [u8]>, buffer: *mut u8) {
        // SAFETY: the view is valid for its length (the type invariant); the buffer is the
        // caller's contract.
        unsafe { copy_volatile(view.ptr.cast(), buffer, view.ptr.len()) }
    }

    #[inline]
    unsafe fn copy_to_io(view: Mmio<'_, [u8]>, buffer: *const u8) {
        // SAFETY: as above.
        unsafe { copy_volatile(buffer, view.ptr.cast(), view.ptr.len()) }
    }
}

/// Turns `IoBackend`'s associated functions into methods that [`io_project!`] can call.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct ProjectHelper<T>(pub T);

impl<'a, T> ProjectHelper<T>
where
    T: Io<'a, Backend: IoBackend<View<'a, T::Target> = T>>,
{
    #[doc(hidden)]
    #[inline(always)]
    pub fn as_ptr(self) -> *mut T::Target {
        T::Backend::as_ptr(self.0)
    }

    /// # Safety
    ///
    /// As [`IoBackend::project_view`].
    #[doc(hidden)]
    #[inline(always)]
    pub unsafe fn project_view<U: ?Sized + KnownSize>(
        self,
        ptr: *mut U,
    ) -> <T::Backend as IoBackend>::View<'a, U> {
        // SAFETY: the caller's contract.
        unsafe { T::Backend::project_view::<T::Target, U>(self.0, ptr) }
    }
}

/// Narrows an I/O view to a field or element: `io_project!(io, .a.b[try: i])`, with the
/// projections of [`kernel::ptr::project!`](crate::ptr::project). `io` is any [`IoBase`]
/// (a view, or a `&Coherent<T>`); `[try: i]` returns `ERANGE` from the enclosing function
/// when `i` is out of bounds.
#[macro_export]
#[doc(hidden)]
macro_rules! io_project {
    ($io:expr, $($proj:tt)*) => {{
        #[allow(unused_imports)]
        use $crate::io::IoBase as _;
        let view = $crate::io::ProjectHelper($io.as_view());
        let ptr = $crate::ptr::project!(mut view.as_ptr(), $($proj)*);
        #[allow(unused_unsafe)]
        // SAFETY: `ptr` is a projection of the view's pointer.
        unsafe {
            view.project_view(ptr)
        }
    }};
}
#[doc(inline)]
pub use crate::io_project;

/// Reads through a projection of an I/O view with one access: `io_read!(io, .a.b)`.
#[macro_export]
#[doc(hidden)]
macro_rules! io_read {
    ($io:expr, $($proj:tt)*) => {
        $crate::io::Io::read_val($crate::io_project!($io, $($proj)*))
    };
}
#[doc(inline)]
pub use crate::io_read;

/// Writes through a projection of an I/O view with one access: `io_write!(io, .a.b, v)`.
#[macro_export]
#[doc(hidden)]
macro_rules! io_write {
    (@split [$io:expr] [$($proj:tt)*] [, $value:expr]) => {
        $crate::io::Io::write_val($crate::io_project!($io, $($proj)*), $value)
    };
    (@split [$io:expr] [$($proj:tt)*] [.$field:tt $($rest:tt)*]) => {
        $crate::io_write!(@split [$io] [$($proj)* .$field] [$($rest)*])
    };
    (@split [$io:expr] [$($proj:tt)*] [[$how:ident: $index:expr] $($rest:tt)*]) => {
        $crate::io_write!(@split [$io] [$($proj)* [$how: $index]] [$($rest)*])
    };
    ($io:expr, $($rest:tt)*) => {
        $crate::io_write!(@split [$io] [] [$($rest)*])
    };
}
#[doc(inline)]
pub use crate::io_write;
