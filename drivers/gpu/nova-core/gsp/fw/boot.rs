// SPDX-License-Identifier: GPL-2.0

//! What the GSP is told at boot about its queues: the PTE page mapping the shared memory,
//! and the boot arguments naming it. Re-exported by `gsp::fw`.
//!
//! # The PTE page
//!
//! Entry `i` holds the bus address of page `i` of `GspMem`, for its [`GSP_MEM_PAGES`]
//! (0x81) pages, the `pageTableEntryCount` the firmware is given.
//!
//! Differs from upstream 7.3 on purpose: upstream fills all 512 entries with
//! `base + (i << 12)`, naming memory past the allocation; we write 0 past entry 0x80
//! ([`gsp_mem_pte`]). The entries the firmware uses are the same.

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

/// Returns PTE `index` for a `GspMem` at bus address `base`: its page's bus address, or 0
/// past the last page (see "The PTE page"). One entry at a time: the page is too large
/// for a kernel stack.
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
    /// The bus address of the shared memory (`sharedMemPhysAddr`).
    pub shared_mem_phys_addr: u64,
    /// How many entries of the PTE page map the shared memory (`pageTableEntryCount`).
    pub page_table_entry_count: u32,
    /// Padding, 0.
    pub pad: u32,
    /// The byte offset of `cpuq` (`cmdQueueOffset`).
    pub cmd_queue_offset: u64,
    /// The byte offset of `gspq` (`statQueueOffset`).
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

/// r570's `GSP_ARGUMENTS_CACHED`: the boot arguments left in memory for the GSP.
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

// SAFETY: zerocopy's `FromBytes` derive above proves every bit pattern of
// `GspArgumentsCached` valid.
unsafe impl kernel::transmute::FromBytes for GspArgumentsCached {}
// SAFETY: zerocopy's `IntoBytes` derive above proves it has no padding.
unsafe impl kernel::transmute::AsBytes for GspArgumentsCached {}

impl GspArgumentsCached {
    /// The arguments of a cold boot with the queues of the `GspMem` at `shared_mem`.
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
