// SPDX-License-Identifier: GPL-2.0

//! What the GSP is told at boot about its queues: the PTE page that maps the shared
//! memory for it, and the boot arguments that name that memory and the queues in it.
//! Re-exported by `gsp::fw`, where upstream has its own.
//!
//! # The PTE page
//!
//! The first page maps the region for the GSP: entry `i` holds the bus address of page
//! `i` of `GspMem`, for its [`GSP_MEM_PAGES`] (0x81) pages. That is also the number of
//! entries upstream's message-queue init arguments hand the firmware
//! (`pageTableEntryCount` = `size_of::<GspMem>() >> GSP_PAGE_SHIFT`): the entries past
//! it are not part of the mapping the firmware is given.
//!
//! Upstream 7.3 fills all 512 entries with `base + (i << 12)`, so its entries 0x81 to
//! 0x1ff hold addresses past the end of the allocation. This crate deliberately writes 0
//! there ([`gsp_mem_pte`]): the 0x81 entries the firmware is given are the same, and no
//! entry names memory outside the region.

use zerocopy_derive::{
    FromBytes,
    Immutable,
    IntoBytes,
    KnownLayout, //
};

use super::layout::{
    assert_layout,
    CPUQ_OFFSET,
    GSPQ_OFFSET,
    GSP_MEM_PAGES,
    GSP_PAGE_SHIFT, //
};
use crate::num::{
    usize_as_u64,
    usize_into_u32,
    FromSafeCast, //
};

/// Returns entry `index` of the PTE page of a `GspMem` at bus address `base`: the bus
/// address of its page `index`, or 0 past its last page. (One entry at a time: the whole
/// page is 4 KiB, too much for a kernel stack.)
///
/// Upstream writes `base + (index << 12)` for every index, past the last page too; the
/// firmware is given only the first [`GSP_MEM_PAGES`] entries, which are the same here
/// (see "The PTE page" in the module documentation).
pub(crate) fn gsp_mem_pte(base: u64, index: usize) -> u64 {
    match index < GSP_MEM_PAGES {
        true => base + (u64::from_safe_cast(index) << GSP_PAGE_SHIFT),
        false => 0,
    }
}

/// r570's `MESSAGE_QUEUE_INIT_ARGUMENTS`: where the GSP finds its message queues.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct MessageQueueInitArguments {
    /// The bus address of the shared memory, whose first page is the PTE page
    /// (`sharedMemPhysAddr`).
    pub shared_mem_phys_addr: u64,
    /// How many entries of the PTE page map the shared memory (`pageTableEntryCount`).
    pub page_table_entry_count: u32,
    /// Padding, 0.
    pub pad: u32,
    /// The byte offset of the command queue (`cpuq`) in the shared memory
    /// (`cmdQueueOffset`).
    pub cmd_queue_offset: u64,
    /// The byte offset of the status queue (`gspq`) (`statQueueOffset`).
    pub stat_queue_offset: u64,
}

assert_layout!(MessageQueueInitArguments, size 0x20, {
    shared_mem_phys_addr: 0x0,
    page_table_entry_count: 0x8,
    pad: 0xc,
    cmd_queue_offset: 0x10,
    stat_queue_offset: 0x18,
});

/// r570's `GSP_SR_INIT_ARGUMENTS`: suspend/resume state at boot (all 0 on a cold boot).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub(crate) struct SrInitArguments {
    /// `oldLevel`.
    pub(crate) old_level: u32,
    /// `flags`.
    pub(crate) flags: u32,
    /// `bInPMTransition`.
    pub(crate) in_pm_transition: u8,
    /// Padding, 0.
    pub(crate) pad: [u8; 3],
}

/// r570's `GSP_ARGUMENTS_CACHED`: the boot arguments the driver leaves in memory for the
/// GSP, among them where its message queues are.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct GspArgumentsCached {
    /// `messageQueueInitArguments`.
    pub message_queue_init_arguments: MessageQueueInitArguments,
    /// `srInitArguments`.
    pub(crate) sr_init_arguments: SrInitArguments,
    /// `gpuInstance`.
    pub gpu_instance: u32,
    /// `bDmemStack`: 1, as upstream sets it.
    pub dmem_stack: u8,
    /// Padding, 0.
    pub pad: [u8; 7],
    /// `profilerArgs.pa`.
    pub profiler_pa: u64,
    /// `profilerArgs.size`.
    pub profiler_size: u64,
}

assert_layout!(GspArgumentsCached, size 0x48, {
    message_queue_init_arguments: 0x0,
    sr_init_arguments: 0x20,
    gpu_instance: 0x2c,
    dmem_stack: 0x30,
    profiler_pa: 0x38,
    profiler_size: 0x40,
});

// SAFETY: `GspArgumentsCached` is integers only; zerocopy's `FromBytes` derive (checked
// by the compiler above) proves every bit pattern valid.
unsafe impl kernel::transmute::FromBytes for GspArgumentsCached {}
// SAFETY: zerocopy's `IntoBytes` derive above proves it has no padding.
unsafe impl kernel::transmute::AsBytes for GspArgumentsCached {}

impl GspArgumentsCached {
    /// The arguments of a cold boot whose queues are those of the `GspMem` at bus
    /// address `shared_mem` (r570's layout).
    pub fn new(shared_mem: u64) -> Self {
        Self {
            message_queue_init_arguments: MessageQueueInitArguments {
                shared_mem_phys_addr: shared_mem,
                page_table_entry_count: usize_into_u32::<GSP_MEM_PAGES>(),
                pad: 0,
                cmd_queue_offset: usize_as_u64(CPUQ_OFFSET),
                stat_queue_offset: usize_as_u64(GSPQ_OFFSET),
            },
            dmem_stack: 1,
            ..Self::default()
        }
    }
}
