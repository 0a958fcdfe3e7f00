// SPDX-License-Identifier: GPL-2.0

//! The trace backend (feature `trace`): marks that make a binary's shared-memory behaviour
//! visible, exactly, to the project's QEMU plugin (`tools/trace/plugin`), and the barrier
//! mutations applied at run time.
//!
//! The plugin records every access to coherent memory and every barrier instruction of an
//! aarch64 binary run under `qemu-aarch64`. Two things it cannot see by itself, the
//! shim tells it through [`vgsp_trace_mark`]:
//!
//! - **Where coherent memory is.** Each allocation is announced when it is made and when
//!   it is freed, so that the plugin records accesses to it and nothing else.
//! - **What a load returned.** The plugin's memory callback runs after the access, and
//!   QEMU 7.2's plugin API gives it no value; reading the memory back would race with the
//!   other agent's stores. Every shared word the code loads through the shim (the ring
//!   pointers: upstream's `io_read!` on a `CoherentView`, our `io_read!` and the virtual
//!   GSP's `DmaView::read32`) is announced with the value the load instruction put in its
//!   register, before the code does anything with it. So the values the control flow
//!   depended on are exact. Bulk copies (ring slots) are not announced: the checker
//!   needs only where they are, not what they held.
//!
//! A mark is a call of an exported, never-inlined function with the address of a
//! [`Mark`] the caller has filled; the function reads the mark and stores a seal into it.
//! The plugin recognises that store by the function's symbol and the seal's value, and
//! reads the mark back from the caller's stack, which no other thread writes. Without
//! the plugin a mark costs a call and four accesses to the stack.
//!
//! Mutations (`VGSP_MUTANT`, see `backend::mutation`) are applied as under the model: a
//! deleted or moved barrier runs no instruction, a weakened one its new flavour's, and a
//! moved one runs just before or after the access it was moved to. The trace then
//! shows the instructions the mutant executes.

use std::{panic::Location, sync::OnceLock, vec::Vec};

use super::{
    arch::{
        self,
        Barrier, //
    },
    mutation::{
        env_mutations,
        Mutation,
        MutationOp, //
    },
    stats,
    Flavour, //
};

/// The value [`vgsp_trace_mark`] stores in a [`Mark`]'s seal; the plugin knows it.
pub const SEAL: u64 = 0x5647_5350_5452_4b21;

/// What a [`Mark`] announces.
#[repr(u64)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkKind {
    /// A load of coherent memory: `a` its address, `b` the value it returned.
    Value = 1,
    /// A coherent allocation: `a` its address, `b` its length.
    Region = 2,
    /// The allocation at `a` is freed.
    RegionEnd = 3,
    /// `a` is the address of [`vgsp_trace_mark`] in this run, which places a
    /// position-independent binary's code against its symbols.
    Image = 4,
}

/// One announcement, as the plugin reads it: four little-endian 64-bit words.
#[repr(C)]
#[derive(Debug)]
pub struct Mark {
    kind: u64,
    a: u64,
    b: u64,
    seal: u64,
}

/// Hands `mark` to the plugin: reads it and seals it.
///
/// # Safety
///
/// `mark` must be valid for reads and writes.
#[no_mangle]
#[inline(never)]
pub unsafe extern "C" fn vgsp_trace_mark(mark: *mut Mark) {
    // The reads make the caller's stores of the mark necessary: without them the
    // compiler may see that nothing reads those fields and drop the stores.
    // SAFETY: The caller's contract.
    unsafe {
        let _ = core::ptr::addr_of!((*mark).kind).read_volatile();
        let _ = core::ptr::addr_of!((*mark).a).read_volatile();
        let _ = core::ptr::addr_of!((*mark).b).read_volatile();
        core::ptr::addr_of_mut!((*mark).seal).write_volatile(SEAL);
    }
}

fn mark(kind: MarkKind, a: u64, b: u64) {
    let mut m = Mark {
        kind: kind as u64,
        a,
        b,
        seal: 0,
    };
    // SAFETY: `m` is a valid local.
    unsafe { vgsp_trace_mark(&mut m) };
}

/// Announces a coherent allocation of `len` bytes at `base` (after, the first time, where
/// the code is).
pub(crate) fn region(base: usize, len: usize) {
    static IMAGE: OnceLock<()> = OnceLock::new();
    IMAGE.get_or_init(|| {
        let at = vgsp_trace_mark as *const () as usize;
        // CAST: addresses fit in 64 bits on every supported architecture.
        mark(MarkKind::Image, at as u64, 0);
    });
    // CAST: addresses and lengths fit in 64 bits on every supported architecture.
    mark(MarkKind::Region, base as u64, len as u64);
}

/// Announces that the allocation at `base` is freed.
pub(crate) fn region_end(base: usize) {
    // CAST: as above.
    mark(MarkKind::RegionEnd, base as u64, 0);
}

/// Announces that the load of coherent memory at `addr` returned `value`.
#[inline(always)]
pub(crate) fn loaded(addr: usize, value: u64) {
    // CAST: as above.
    mark(MarkKind::Value, addr as u64, value);
}

fn mutations() -> &'static [Mutation] {
    static MUTATIONS: OnceLock<Vec<Mutation>> = OnceLock::new();
    MUTATIONS.get_or_init(env_mutations)
}

fn emit(f: Flavour) {
    match f {
        Flavour::Full => arch::Full::dma(),
        Flavour::Read => arch::Read::dma(),
        Flavour::Write => arch::Write::dma(),
    }
}

/// Executes the DMA barrier `B` written at `site`, as mutated.
fn barrier<B: Barrier>(site: &Location<'_>) {
    match mutations()
        .iter()
        .find(|m| m.barrier.is(site))
        .map(|m| &m.op)
    {
        None => B::dma(),
        Some(MutationOp::Delete | MutationOp::MoveBefore(..) | MutationOp::MoveAfter(..)) => {}
        Some(MutationOp::Weaken(f)) => emit(*f),
    }
}

/// Runs the barriers moved to just before (`after == false`) or after the access at
/// `site`.
fn moved_barriers(site: &Location<'_>, after: bool) {
    for m in mutations() {
        match m.op {
            MutationOp::MoveBefore(f, ref at) if !after && at.is(site) => emit(f),
            MutationOp::MoveAfter(f, ref at) if after && at.is(site) => emit(f),
            _ => {}
        }
    }
}

/// Whether an atomic may live in coherent memory (`Atomic::from_ptr`): yes.
pub(crate) const ATOMICS_IN_MEMORY: bool = true;

/// The driver's DMA barrier `B`, applied as `VGSP_MUTANT` mutates the barrier at the
/// caller's source location.
#[track_caller]
#[inline(always)]
pub(crate) fn dma_mb<B: Barrier>() {
    stats::count_driver(B::INDEX);
    barrier::<B>(Location::caller());
}

/// The DMA barrier `B` of `readl`/`writel`: the architecture's, never mutated.
#[inline(always)]
pub(crate) fn io_dma_mb<B: Barrier>() {
    stats::count_io(B::INDEX);
    B::dma()
}

/// Loads a shared 32-bit word and announces the value, running the barriers moved to
/// the caller's access.
///
/// # Safety
///
/// `p` must be valid and aligned for a 32-bit read.
#[track_caller]
#[inline(always)]
pub(crate) unsafe fn load_u32(p: *const u32) -> u32 {
    moved_barriers(Location::caller(), false);
    // SAFETY: The caller's contract.
    let value = unsafe { core::ptr::read_volatile(p) };
    loaded(p.addr(), value.into());
    moved_barriers(Location::caller(), true);
    value
}

/// Stores a shared 32-bit word, running the barriers moved to the caller's access.
///
/// # Safety
///
/// `p` must be valid and aligned for a 32-bit write.
#[track_caller]
#[inline(always)]
pub(crate) unsafe fn store_u32(p: *mut u32, value: u32) {
    moved_barriers(Location::caller(), false);
    // SAFETY: The caller's contract.
    unsafe { core::ptr::write_volatile(p, value) };
    moved_barriers(Location::caller(), true);
}

/// Copies `len` bytes out of shared memory at `src` (not announced).
///
/// # Safety
///
/// Both ranges must be valid for `len` bytes and must not overlap.
#[track_caller]
#[inline(always)]
pub(crate) unsafe fn copy_in(src: *const u8, dst: *mut u8, len: usize) {
    // SAFETY: The caller's contract.
    unsafe { core::ptr::copy_nonoverlapping(src, dst, len) }
}

/// Copies `len` bytes into shared memory at `dst` (not announced).
///
/// # Safety
///
/// Both ranges must be valid for `len` bytes and must not overlap.
#[track_caller]
#[inline(always)]
pub(crate) unsafe fn copy_out(src: *const u8, dst: *mut u8, len: usize) {
    // SAFETY: The caller's contract.
    unsafe { core::ptr::copy_nonoverlapping(src, dst, len) }
}
