// SPDX-License-Identifier: GPL-2.0

//! The Linux-7.3-shaped `ptr`, `io` and `dma` modules of the shim: pointer projections and
//! alignments, coherent memory and its views, MMIO views of a simulated BAR and of typed
//! registers.

use core::mem::{
    offset_of,
    MaybeUninit, //
};
use std::{
    sync::{
        Mutex,
        OnceLock, //
    },
    vec::Vec, //
};

use kernel::{
    device::{
        Bound,
        Device, //
    },
    dma::{
        Coherent,
        CoherentBox,
        DmaReadObserver,
        DmaView, //
    },
    io::{
        io_project,
        io_read,
        io_write,
        Io,
        Mmio,
        MmioRaw,
        MmioWriteObserver,
        Region, //
    },
    prelude::*,
    ptr::{
        project,
        Alignable,
        Alignment, //
    },
    transmute::{
        AsBytes,
        FromBytes, //
    },
};
use vdev::SimBar;

/// The nested part of [`Frame`]: 16 bytes, no padding.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Inner {
    lo: u32,
    hi: u32,
    wide: u64,
}

/// A wire layout with a nested struct and an array: 40 bytes, no padding.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Frame {
    head: u64,
    inner: Inner,
    arr: [u32; 4],
}

const _: () = assert!(size_of::<Inner>() == 4 + 4 + 8);
const _: () = assert!(size_of::<Frame>() == 8 + size_of::<Inner>() + 4 * 4);

// SAFETY: `Inner` is `repr(C)` of integers only, so every bit pattern is a valid value.
unsafe impl FromBytes for Inner {}
// SAFETY: `Inner` is `repr(C)` of integers laid out back to back (its size is the sum of
// its fields', asserted above), so it has no padding and no interior mutability.
unsafe impl AsBytes for Inner {}
// SAFETY: `Frame` is `repr(C)` of integers, an `Inner` and an integer array, all of which
// accept every bit pattern.
unsafe impl FromBytes for Frame {}
// SAFETY: `Frame`'s size is the sum of its fields' (asserted above), so it has no padding;
// none of its fields has padding or interior mutability.
unsafe impl AsBytes for Frame {}

/// Registers of a typed MMIO view: 16 bytes.
#[repr(C)]
#[derive(Default)]
struct Regs {
    ctrl: u32,
    doorbell: u32,
    scratch: [u32; 2],
}

/// Records every 32-bit MMIO write as `(offset, value)`.
#[derive(Default)]
struct WriteLog(Mutex<Vec<(usize, u32)>>);

impl WriteLog {
    fn take(&self) -> Vec<(usize, u32)> {
        core::mem::take(&mut *self.0.lock().unwrap())
    }
}

impl MmioWriteObserver for WriteLog {
    fn written(&self, offset: usize, value: u32) {
        self.0.lock().unwrap().push((offset, value));
    }
}

/// Records every byte copy out of coherent memory as `(offset, len)`.
#[derive(Default)]
struct ReadLog(Mutex<Vec<(usize, usize)>>);

impl ReadLog {
    fn take(&self) -> Vec<(usize, usize)> {
        core::mem::take(&mut *self.0.lock().unwrap())
    }
}

impl DmaReadObserver for ReadLog {
    fn before_read(&self, offset: usize, len: usize) {
        self.0.lock().unwrap().push((offset, len));
    }
}

/// A hostile device: fills every range the CPU is about to copy out with `0xa5`.
#[derive(Default)]
struct Scribbler(OnceLock<DmaView<'static>>);

impl DmaReadObserver for Scribbler {
    fn before_read(&self, offset: usize, len: usize) {
        if let Some(view) = self.0.get() {
            // PANIC: the copies report ranges inside the allocation, which `view` covers.
            view.write_bytes(offset, &std::vec![0xa5; len]).unwrap();
        }
    }
}

/// The simulated device the allocations are made for.
fn dev() -> &'static Device<Bound> {
    vdev::device().expect("the host always has its simulated device")
}

/// `offset` as a bus-address difference.
const fn bus(offset: usize) -> u64 {
    // CAST: the offsets used here are within a 40-byte struct.
    offset as u64
}

/// The MMIO view of `regs`, whose 32-bit writes `log` observes.
fn mmio_of<'a>(regs: &'a mut Regs, log: &'a WriteLog) -> Mmio<'a, Regs> {
    // SAFETY: `log` is borrowed for `'a`, as long as the returned view and every view made
    // from it, and does not move while borrowed.
    let raw = unsafe { MmioRaw::from_ptr(&raw mut *regs).with_observer(log) };
    // SAFETY: `regs` is borrowed mutably for `'a`, so it is valid for volatile accesses and
    // nothing else accesses it while the view lives.
    unsafe { Mmio::from_raw(raw) }
}

// `ptr::project!`.

#[test]
fn project_field_offsets_match_the_repr_c_layout() {
    let storage = MaybeUninit::<Frame>::uninit();
    let base = storage.as_ptr();
    let at = |p: *const u8| p.addr() - base.addr();
    assert_eq!(at(project!(base, .head).cast()), offset_of!(Frame, head));
    assert_eq!(at(project!(base, .inner).cast()), offset_of!(Frame, inner));
    assert_eq!(
        at(project!(base, .inner.wide).cast()),
        offset_of!(Frame, inner.wide)
    );
    assert_eq!(at(project!(base, .arr).cast()), offset_of!(Frame, arr));
}

#[test]
fn project_element_then_field_adds_both_offsets() -> Result {
    let storage = MaybeUninit::<[Frame; 3]>::uninit();
    let base = storage.as_ptr();
    let p = project!(base, [try: 2].arr[panic: 1]);
    assert_eq!(
        p.addr() - base.addr(),
        2 * size_of::<Frame>() + offset_of!(Frame, arr) + size_of::<u32>()
    );
    Ok(())
}

#[test]
fn project_try_index_out_of_bounds_is_erange() {
    let storage = MaybeUninit::<[u32; 4]>::uninit();
    let base = storage.as_ptr();
    let project_at = |i: usize| -> Result<*const u32> { Ok(project!(base, [try: i])) };
    assert_eq!(project_at(4), Err(ERANGE));
}

#[test]
#[should_panic(expected = "index projection out of bounds")]
fn project_panic_index_out_of_bounds_panics() {
    let storage = MaybeUninit::<[u32; 4]>::uninit();
    let base = storage.as_ptr();
    let _ = project!(base, [panic: 4]);
}

#[test]
fn project_build_index_in_bounds_points_at_the_element() {
    let storage = MaybeUninit::<[u64; 4]>::uninit();
    let base = storage.as_ptr();
    let p = project!(base, [build: 3]);
    assert_eq!(p.addr() - base.addr(), 3 * size_of::<u64>());
}

#[test]
fn project_range_gives_a_slice_of_the_range_length() -> Result {
    let storage = MaybeUninit::<[u32; 8]>::uninit();
    let base = storage.as_ptr();
    let p: *const [u32] = project!(base, [try: 2..5]);
    assert_eq!(p.len(), 3);
    assert_eq!(p.cast::<u32>().addr() - base.addr(), 2 * size_of::<u32>());
    Ok(())
}

/// `project!(base, [try: start..end])` of an 8-element array.
fn project_range(start: usize, end: usize) -> Result<*const [u32]> {
    let storage = MaybeUninit::<[u32; 8]>::uninit();
    let base = storage.as_ptr();
    Ok(project!(base, [try: start..end]))
}

#[test]
fn project_reversed_range_is_erange() {
    assert_eq!(project_range(5, 2), Err(ERANGE));
}

#[test]
fn project_range_past_the_end_is_erange() {
    assert_eq!(project_range(6, 9), Err(ERANGE));
}

#[test]
fn project_range_up_to_the_end_is_the_tail() -> Result {
    assert_eq!(project_range(6, 8)?.len(), 2);
    Ok(())
}

// `ptr::Alignment` and `Alignable`.

#[test]
fn alignment_new_gives_its_value_mask_and_log2() {
    let align = Alignment::new::<8>();
    assert_eq!(align.as_usize(), 8);
    assert_eq!(align.mask(), 7);
    assert_eq!(align.log2(), 3);
}

#[test]
fn alignment_new_checked_refuses_non_powers_of_two() {
    assert_eq!(Alignment::new_checked(3), None);
    assert_eq!(Alignment::new_checked(0), None);
    assert_eq!(Alignment::new_checked(16), Some(Alignment::new::<16>()));
}

#[test]
fn align_up_rounds_to_the_next_multiple() {
    let align = Alignment::new::<8>();
    assert_eq!(13u32.align_up(align), Some(16));
    assert_eq!(16u32.align_up(align), Some(16));
}

#[test]
fn align_down_rounds_to_the_previous_multiple() {
    let align = Alignment::new::<8>();
    assert_eq!(13u64.align_down(align), 8);
    assert_eq!(16u64.align_down(align), 16);
}

#[test]
fn align_up_overflow_is_none() {
    assert_eq!(u8::MAX.align_up(Alignment::new::<4>()), None);
    assert_eq!(usize::MAX.align_up(Alignment::new::<2>()), None);
}

#[test]
fn align_up_to_an_alignment_beyond_the_type_is_none() {
    assert_eq!(1u8.align_up(Alignment::new::<512>()), None);
}

// `dma::Coherent`.

#[test]
fn coherent_zeroed_memory_is_zero() -> Result {
    let mem = Coherent::<Frame>::zeroed(dev(), GFP_KERNEL)?;
    // SAFETY: the memory was never handed to a device and nothing writes it while the
    // reference lives.
    let value = unsafe { *mem.as_ref() };
    assert_eq!(value, Frame::default());
    Ok(())
}

#[test]
fn coherent_size_is_the_size_of_its_type() -> Result {
    let mem = Coherent::<Frame>::zeroed(dev(), GFP_KERNEL)?;
    assert_eq!(mem.size(), size_of::<Frame>());
    Ok(())
}

#[test]
fn coherent_dma_address_is_the_cpu_address_on_the_host() -> Result {
    let mem = Coherent::<Frame>::zeroed(dev(), GFP_KERNEL)?;
    assert_eq!(mem.dma_address(), bus(mem.as_ptr().addr()));
    Ok(())
}

#[test]
fn coherent_zeroed_of_a_zero_sized_type_is_einval() {
    assert_eq!(
        Coherent::<()>::zeroed(dev(), GFP_KERNEL).err(),
        Some(EINVAL)
    );
}

#[test]
fn coherent_zeroed_slice_of_zero_elements_is_einval() {
    assert_eq!(
        Coherent::<u32>::zeroed_slice(dev(), 0, GFP_KERNEL).err(),
        Some(EINVAL)
    );
}

#[test]
fn coherent_zeroed_slice_holds_len_elements() -> Result {
    let mem = Coherent::<u32>::zeroed_slice(dev(), 5, GFP_KERNEL)?;
    assert_eq!(mem.len(), 5);
    assert_eq!(Io::len(&mem), 5);
    assert_eq!(mem.size(), 5 * size_of::<u32>());
    Ok(())
}

// `io_project!`, `io_read!`, `io_write!` on coherent memory.

#[test]
fn io_write_then_io_read_round_trips_a_nested_field() -> Result {
    let mem = Coherent::<Frame>::zeroed(dev(), GFP_KERNEL)?;
    io_write!(&mem, .inner.wide, 0x1122_3344_5566_7788);
    assert_eq!(io_read!(&mem, .inner.wide), 0x1122_3344_5566_7788);
    Ok(())
}

#[test]
fn io_write_of_a_field_changes_no_other_field() -> Result {
    let mem = Coherent::<Frame>::zeroed(dev(), GFP_KERNEL)?;
    io_write!(&mem, .inner.hi, u32::MAX);
    // SAFETY: nothing writes the memory while the reference lives.
    let value = unsafe { *mem.as_ref() };
    let expected = Frame {
        inner: Inner {
            hi: u32::MAX,
            ..Inner::default()
        },
        ..Frame::default()
    };
    assert_eq!(value, expected);
    Ok(())
}

#[test]
fn io_project_dma_address_adds_the_field_offset() -> Result {
    let mem = Coherent::<Frame>::zeroed(dev(), GFP_KERNEL)?;
    let view = io_project!(&mem, .inner.wide);
    assert_eq!(
        view.dma_address(),
        mem.dma_address() + bus(offset_of!(Frame, inner.wide))
    );
    Ok(())
}

#[test]
fn io_project_try_index_out_of_bounds_returns_erange() -> Result {
    let mem = Coherent::<Frame>::zeroed(dev(), GFP_KERNEL)?;
    let read_at = |i: usize| -> Result<u32> { Ok(io_read!(&mem, .arr[try: i])) };
    assert_eq!(read_at(4), Err(ERANGE));
    Ok(())
}

#[test]
fn io_write_through_an_index_lands_at_the_elements_offset() -> Result {
    let mem = Coherent::<Frame>::zeroed(dev(), GFP_KERNEL)?;
    io_write!(&mem, .arr[try: 3], 0xdead_beef);
    let offset = offset_of!(Frame, arr) + 3 * size_of::<u32>();
    assert_eq!(mem.device_view().read32(offset), Ok(0xdead_beef));
    Ok(())
}

#[test]
fn io_project_of_a_slice_past_its_len_returns_erange() -> Result {
    let mem = Coherent::<u32>::zeroed_slice(dev(), 5, GFP_KERNEL)?;
    let read_at = |i: usize| -> Result<u32> { Ok(io_read!(&mem, [try: i])) };
    assert_eq!(read_at(5), Err(ERANGE));
    Ok(())
}

#[test]
fn copy_write_stores_every_field() -> Result {
    let mem = Coherent::<Frame>::zeroed(dev(), GFP_KERNEL)?;
    let inner = Inner {
        lo: 1,
        hi: 2,
        wide: 3 << 40,
    };
    io_project!(&mem, .inner).copy_write(inner);
    assert_eq!(io_read!(&mem, .inner.lo), 1);
    assert_eq!(io_read!(&mem, .inner.hi), 2);
    assert_eq!(io_read!(&mem, .inner.wide), 3 << 40);
    Ok(())
}

#[test]
fn copy_read_returns_every_field() -> Result {
    let mem = Coherent::<Frame>::zeroed(dev(), GFP_KERNEL)?;
    io_write!(&mem, .head, 7);
    io_write!(&mem, .inner.lo, 8);
    io_write!(&mem, .arr[try: 0], 9);
    let expected = Frame {
        head: 7,
        inner: Inner {
            lo: 8,
            ..Inner::default()
        },
        arr: [9, 0, 0, 0],
    };
    assert_eq!((&mem).copy_read(), expected);
    Ok(())
}

#[test]
fn byte_view_copy_from_slice_then_copy_to_slice_round_trips() -> Result {
    let mem = Coherent::<u8>::zeroed_slice(dev(), 16, GFP_KERNEL)?;
    let data: [u8; 16] = core::array::from_fn(|i| 0x10 + i as u8);
    (&mem).copy_from_slice(&data);
    let mut out = [0u8; 16];
    (&mem).copy_to_slice(&mut out);
    assert_eq!(out, data);
    Ok(())
}

#[test]
fn copy_from_slice_into_a_range_view_writes_only_that_range() -> Result {
    let mem = Coherent::<u8>::zeroed_slice(dev(), 8, GFP_KERNEL)?;
    io_project!(&mem, [try: 2..5]).copy_from_slice(&[1, 2, 3]);
    let mut out = [0xffu8; 8];
    (&mem).copy_to_slice(&mut out);
    assert_eq!(out, [0, 0, 1, 2, 3, 0, 0, 0]);
    Ok(())
}

#[test]
#[should_panic(expected = "copy into I/O memory of another size")]
fn copy_from_slice_of_another_length_panics() {
    let mem = Coherent::<u8>::zeroed_slice(dev(), 8, GFP_KERNEL).expect("8 bytes");
    (&mem).copy_from_slice(&[0; 7]);
}

#[test]
#[should_panic(expected = "copy out of I/O memory of another size")]
fn copy_to_slice_of_another_length_panics() {
    let mem = Coherent::<u8>::zeroed_slice(dev(), 8, GFP_KERNEL).expect("8 bytes");
    (&mem).copy_to_slice(&mut [0; 9]);
}

// `dma::CoherentBox`.

#[test]
fn coherent_box_writes_are_seen_through_the_coherent_it_becomes() -> Result {
    let mut boxed = CoherentBox::<Frame>::zeroed(dev(), GFP_KERNEL)?;
    boxed.inner.hi = 0xabcd;
    boxed.arr[2] = 0x1234;
    let mem: Coherent<Frame> = boxed.into();
    assert_eq!(io_read!(&mem, .inner.hi), 0xabcd);
    assert_eq!(io_read!(&mem, .arr[try: 2]), 0x1234);
    Ok(())
}

// `dma::DmaReadObserver`.

#[test]
fn read_observer_sees_copy_to_slice_offset_and_len() -> Result {
    let log = ReadLog::default();
    let mut mem = Coherent::<u8>::zeroed_slice(dev(), 32, GFP_KERNEL)?;
    // SAFETY: `log` is declared before `mem`, so it is dropped after it, and it does not
    // move meanwhile.
    unsafe { mem.set_read_observer(&log) };
    let mut buf = [0u8; 12];
    io_project!(&mem, [try: 8..20]).copy_to_slice(&mut buf);
    assert_eq!(log.take(), [(8, 12)]);
    Ok(())
}

#[test]
fn read_observer_sees_copy_read_of_a_field_at_its_offset() -> Result {
    let log = ReadLog::default();
    let mut mem = Coherent::<Frame>::zeroed(dev(), GFP_KERNEL)?;
    // SAFETY: as in `read_observer_sees_copy_to_slice_offset_and_len`.
    unsafe { mem.set_read_observer(&log) };
    let _ = io_project!(&mem, .inner).copy_read();
    assert_eq!(log.take(), [(offset_of!(Frame, inner), size_of::<Inner>())]);
    Ok(())
}

#[test]
fn read_observer_is_not_called_by_a_word_read() -> Result {
    let log = ReadLog::default();
    let mut mem = Coherent::<Frame>::zeroed(dev(), GFP_KERNEL)?;
    // SAFETY: as in `read_observer_sees_copy_to_slice_offset_and_len`.
    unsafe { mem.set_read_observer(&log) };
    let _ = io_read!(&mem, .inner.lo);
    assert_eq!(log.take(), []);
    Ok(())
}

#[test]
fn read_observer_writes_are_what_the_copy_reads() -> Result {
    let scribbler = Scribbler::default();
    let mut mem = Coherent::<u8>::zeroed_slice(dev(), 16, GFP_KERNEL)?;
    // SAFETY: the allocation is page-aligned and valid for `mem.size()` bytes while `mem`
    // lives; only `mem`'s own copies call the observer, so the view is used no longer.
    let view = unsafe { DmaView::from_raw_parts(mem.as_mut_ptr().cast(), mem.size()) };
    assert!(scribbler.0.set(view).is_ok());
    // SAFETY: `scribbler` is declared before `mem`, so it is dropped after it, and it does
    // not move meanwhile.
    unsafe { mem.set_read_observer(&scribbler) };
    let mut buf = [0u8; 4];
    io_project!(&mem, [try: 4..8]).copy_to_slice(&mut buf);
    assert_eq!(buf, [0xa5; 4]);
    Ok(())
}

// `io::Mmio` on a simulated BAR.

/// Offset of the simulated BAR's doorbell.
const DOORBELL: usize = 0x40;

#[test]
fn mmio_write32_to_a_doorbell_rings_it() -> Result {
    let bar = SimBar::<0x100>::new(&[DOORBELL])?;
    bar.io().write32(1, DOORBELL);
    assert_eq!(bar.doorbell_count(), 1);
    Ok(())
}

#[test]
fn relaxed_mmio_write32_to_a_doorbell_rings_it() -> Result {
    let bar = SimBar::<0x100>::new(&[DOORBELL])?;
    bar.io().relaxed().write32(1, DOORBELL);
    assert_eq!(bar.doorbell_count(), 1);
    Ok(())
}

#[test]
fn mmio_write8_to_a_doorbell_does_not_ring_it() -> Result {
    let bar = SimBar::<0x100>::new(&[DOORBELL])?;
    bar.io().write8(1, DOORBELL);
    assert_eq!(bar.doorbell_count(), 0);
    Ok(())
}

#[test]
fn mmio_try_read32_unaligned_is_einval() -> Result {
    let bar = SimBar::<0x100>::new(&[])?;
    assert_eq!(bar.io().try_read32(2), Err(EINVAL));
    Ok(())
}

#[test]
fn mmio_try_read32_outside_the_region_is_einval() -> Result {
    let bar = SimBar::<0x100>::new(&[])?;
    // Both offsets are 4-byte aligned: only the bounds refuse them.
    assert_eq!(bar.io().try_read32(0x100), Err(EINVAL));
    assert_eq!(bar.io().try_read32(usize::MAX - 3), Err(EINVAL));
    Ok(())
}

#[test]
#[should_panic(expected = "outside the region")]
fn mmio_read32_beyond_size_panics() {
    let bar = SimBar::<0x100>::new(&[]).expect("a 256-byte BAR");
    let _ = bar.io().read32(0x100);
}

#[test]
fn mmio_try_update_reads_modifies_and_writes_back() -> Result {
    let bar = SimBar::<0x100>::new(&[])?;
    bar.io().write32(0xf0, 0x10);
    bar.io().try_update(0x10_usize, |v: u32| v | 0x0f)?;
    assert_eq!(bar.io().read32(0x10), 0xff);
    Ok(())
}

#[test]
fn mmio_try_update_outside_the_region_is_einval_without_calling_f() -> Result {
    let bar = SimBar::<0x100>::new(&[])?;
    let mut called = false;
    let r = bar.io().try_update(0x100_usize, |v: u32| {
        called = true;
        v
    });
    assert_eq!(r, Err(EINVAL));
    assert!(!called);
    Ok(())
}

/// The 16-byte MMIO region at byte `start` of `words`.
fn region_of(words: &mut [u64; 3], start: usize) -> Result<Mmio<'_, Region<16>>> {
    let base = words.as_mut_ptr().cast::<u8>().wrapping_add(start);
    let region = Region::<16>::ptr_try_from_raw_parts_mut(base, 16)?;
    // SAFETY: `start` is at most 8 here, so the region lies inside `words`, which is
    // borrowed mutably for the view's life: valid for volatile accesses, and nothing else
    // accesses it meanwhile.
    Ok(unsafe { Mmio::from_raw(MmioRaw::from_ptr(region)) })
}

// A `Region` is only known to be 4-byte aligned: its 64-bit accesses are the checked ones
// (`read64`/`write64` do not build, as in 7.3; `compile_fail.rs` pins that).
#[test]
fn mmio_try_write64_then_try_read64_round_trips() -> Result {
    let mut words = [0u64; 3];
    let mmio = region_of(&mut words, 0)?;
    mmio.try_write64(0x1122_3344_5566_7788, 8)?;
    assert_eq!(mmio.try_read64(8)?, 0x1122_3344_5566_7788);
    Ok(())
}

#[test]
fn mmio_try_read64_at_a_misaligned_address_is_einval() {
    let mut words = [0u64; 3];
    // 4 bytes into an 8-byte aligned buffer: 4-byte aligned, as a region must be, but
    // not 8-byte aligned.
    let mmio = region_of(&mut words, 4).expect("a 4-byte aligned region");
    assert_eq!(mmio.try_read64(0), Err(EINVAL));
}

// `io::Mmio` on typed registers.

#[test]
fn io_write_through_a_projected_mmio_view_is_observed_at_the_field_offset() {
    let log = WriteLog::default();
    let mut regs = Regs::default();
    let mmio = mmio_of(&mut regs, &log);
    io_write!(mmio, .doorbell, 7);
    assert_eq!(log.take(), [(offset_of!(Regs, doorbell), 7)]);
}

#[test]
fn io_read_through_a_projected_mmio_view_reads_the_field() {
    let log = WriteLog::default();
    let mut regs = Regs {
        scratch: [0, 0x5555],
        ..Regs::default()
    };
    let mmio = mmio_of(&mut regs, &log);
    assert_eq!(io_read!(mmio, .scratch[panic: 1]), 0x5555);
}

#[test]
fn relaxed_io_write_through_a_projected_view_stores_the_field() {
    let log = WriteLog::default();
    let mut regs = Regs::default();
    let mmio = mmio_of(&mut regs, &log);
    io_write!(mmio.relaxed(), .ctrl, 0x8000_0001);
    assert_eq!(regs.ctrl, 0x8000_0001);
}

#[test]
fn mmio_try_cast_views_the_start_of_the_view() -> Result {
    let log = WriteLog::default();
    let mut regs = Regs::default();
    let mmio = mmio_of(&mut regs, &log);
    io_project!(mmio, .scratch)
        .try_cast::<u32>()?
        .write_val(0x77);
    assert_eq!(log.take(), [(offset_of!(Regs, scratch), 0x77)]);
    Ok(())
}

#[test]
fn mmio_try_cast_to_a_larger_type_is_einval() {
    let log = WriteLog::default();
    let mut regs = Regs::default();
    let mmio = mmio_of(&mut regs, &log);
    assert!(matches!(
        io_project!(mmio, .scratch).try_cast::<[u32; 3]>(),
        Err(e) if e == EINVAL
    ));
}
