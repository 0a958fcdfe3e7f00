// SPDX-License-Identifier: GPL-2.0

//! The host test bench's pooled device (`host::DmaPool`, `Device::with_dma_pool`): its
//! coherent allocations are carved from memory the test owns, at the pool's bus addresses.

use kernel::{
    device::{
        Bound,
        Device, //
    },
    dma::{
        Coherent,
        CoherentBox, //
    },
    host::DmaPool,
    io::{
        io_read,
        io_write, //
    },
    prelude::*,
};

/// The page size of the pool's blocks.
const PAGE: usize = 4096;

/// A bus base unlike any CPU address the test's memory could have.
const BUS_BASE: u64 = 0x4000_0000;

/// Page-aligned memory for a pool: what a shared mapping would be.
#[repr(C, align(4096))]
struct Pages<const N: usize>([u8; N]);

/// A pool of `PAGES` pages over fresh memory filled with `fill`; returns it and the start
/// of its memory. Both are leaked: a pooled device needs a `'static` pool.
fn pool<const N: usize>(fill: u8) -> (&'static DmaPool, *mut u8) {
    let mem = Box::leak(Box::new(Pages::<N>([fill; N])));
    let base = mem.0.as_mut_ptr();
    // SAFETY: `mem` is leaked, so valid for reads and writes of `N` bytes for the rest of the
    // test; the test reads it back only through `base`, after the allocations' writes.
    let pool = unsafe { DmaPool::new(base, N, BUS_BASE) }.unwrap();
    (Box::leak(Box::new(pool)), base)
}

/// A device whose coherent memory comes from `pool`.
fn device(pool: &'static DmaPool) -> &'static Device<Bound> {
    Box::leak(Box::new(Device::with_dma_pool("pooled", pool)))
}

#[test]
fn first_allocation_is_at_the_pool_bus_base() {
    let (pool, base) = pool::<{ 4 * PAGE }>(0);
    let mem = Coherent::<u64>::zeroed(device(pool), GFP_KERNEL).unwrap();
    assert_eq!(mem.dma_address(), BUS_BASE);
    assert_eq!(mem.as_ptr().cast::<u8>(), base.cast_const());
}

#[test]
fn allocations_take_whole_pages_one_after_another() {
    let (pool, _) = pool::<{ 4 * PAGE }>(0);
    let dev = device(pool);
    let a = Coherent::<u8>::zeroed_slice(dev, PAGE + 1, GFP_KERNEL).unwrap();
    let b = Coherent::<u32>::zeroed(dev, GFP_KERNEL).unwrap();
    assert_eq!(a.dma_address(), BUS_BASE);
    assert_eq!(b.dma_address(), BUS_BASE + 2 * PAGE as u64);
    assert_eq!(pool.used(), 3 * PAGE);
}

#[test]
fn allocations_are_zeroed_over_old_contents() {
    let (pool, _) = pool::<{ 2 * PAGE }>(0xa5);
    let mem = CoherentBox::<[u8; PAGE]>::zeroed(device(pool), GFP_KERNEL).unwrap();
    assert!(mem.iter().all(|&b| b == 0));
}

#[test]
fn writes_through_an_allocation_land_in_the_pool_memory() {
    let (pool, base) = pool::<{ 2 * PAGE }>(0);
    let dev = device(pool);
    let _first = Coherent::<u8>::zeroed(dev, GFP_KERNEL).unwrap();
    let mem = Coherent::<[u32; 4]>::zeroed(dev, GFP_KERNEL).unwrap();
    io_write!(mem, [panic: 2], 0x1234_5678);
    let offset = usize::try_from(mem.dma_address() - BUS_BASE).unwrap();
    let mut word = [0u8; 4];
    // SAFETY: `offset + 8 + 4` lies inside the pool's two leaked pages; nothing writes them
    // meanwhile.
    unsafe { core::ptr::copy_nonoverlapping(base.add(offset + 8), word.as_mut_ptr(), 4) };
    assert_eq!(u32::from_ne_bytes(word), 0x1234_5678);
    assert_eq!(io_read!(mem, [panic: 2]), 0x1234_5678);
}

#[test]
fn a_pool_without_room_left_gives_enomem() {
    let (pool, _) = pool::<{ 2 * PAGE }>(0);
    let dev = device(pool);
    let _all = Coherent::<u8>::zeroed_slice(dev, 2 * PAGE, GFP_KERNEL).unwrap();
    assert_eq!(Coherent::<u8>::zeroed(dev, GFP_KERNEL).err(), Some(ENOMEM));
}

#[test]
fn a_dropped_allocation_leaks_within_the_pool() {
    let (pool, _) = pool::<{ 4 * PAGE }>(0);
    let dev = device(pool);
    drop(Coherent::<u64>::zeroed(dev, GFP_KERNEL).unwrap());
    let next = Coherent::<u64>::zeroed(dev, GFP_KERNEL).unwrap();
    assert_eq!(next.dma_address(), BUS_BASE + PAGE as u64);
}

#[test]
fn a_pool_refuses_an_unaligned_bus_base() {
    let mem = Box::leak(Box::new(Pages::<PAGE>([0; PAGE])));
    // SAFETY: `mem` is leaked, valid for its `PAGE` bytes.
    let pool = unsafe { DmaPool::new(mem.0.as_mut_ptr(), PAGE, BUS_BASE + 8) };
    assert_eq!(pool.err(), Some(EINVAL));
}

#[test]
fn a_pool_refuses_unaligned_memory() {
    let mem = Box::leak(Box::new(Pages::<{ 2 * PAGE }>([0; 2 * PAGE])));
    // SAFETY: `mem` is leaked, valid for its two pages, of which this is the last one and
    // 8 bytes before it.
    let pool = unsafe { DmaPool::new(mem.0.as_mut_ptr().add(PAGE - 8), PAGE, BUS_BASE) };
    assert_eq!(pool.err(), Some(EINVAL));
}

#[test]
fn a_pool_refuses_bus_addresses_past_the_end_of_the_bus() {
    let mem = Box::leak(Box::new(Pages::<PAGE>([0; PAGE])));
    // SAFETY: `mem` is leaked, valid for its `PAGE` bytes.
    let pool = unsafe { DmaPool::new(mem.0.as_mut_ptr(), PAGE, u64::MAX - 0xfff) };
    assert_eq!(pool.err(), Some(EOVERFLOW));
}

#[test]
fn the_default_host_device_has_no_pool() {
    let dev = kernel::host::device();
    assert!(dev.dma_pool().is_none());
    let mem = Coherent::<u64>::zeroed(dev, GFP_KERNEL).unwrap();
    // CAST: addresses fit in 64 bits.
    assert_eq!(mem.dma_address(), mem.as_ptr().addr() as u64);
}
