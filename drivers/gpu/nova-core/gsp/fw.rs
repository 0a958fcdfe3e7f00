// SPDX-License-Identifier: GPL-2.0

//! The GSP shared-memory layout and message format (r570, MSGQ protocol version 0).
//!
//! One definition for the driver and the virtual GSP alike. Sizes and offsets are pinned
//! with `assert_layout!` to the r570_144 bindings Linux 7.3's nova-core carries (tx and
//! rx headers, queue element, RPC header); the definitions and names are ours. [`Msgq`]
//! and [`GspMem`] follow upstream's `gsp/cmdq.rs`, not a binding.
//!
//! ```text
//! GspMem (0x81000 bytes, coherent)
//!   0x00000  PTE page: 512 little-endian u64, entry i = bus address of page i, 0 from 0x81
//!   0x01000  cpuq: Msgq  (CPU -> GSP commands)
//!   0x41000  gspq: Msgq  (GSP -> CPU messages)
//!
//! Msgq (0x40000 bytes)
//!   0x00000  MsgqTxHeader (writer's: version, size, msgSize, msgCount, writePtr@0x10, ...)
//!   0x00020  MsgqRxHeader (readPtr of the *other* queue's reader)
//!   0x01000  63 slots of 4096 bytes
//! ```
//!
//! The CPU advances `cpuq.tx.writePtr` and `cpuq.rx.readPtr` (its read pointer into
//! `gspq`); the GSP advances `gspq.tx.writePtr` and `gspq.rx.readPtr` (its read pointer
//! into `cpuq`).
//!
//! - `layout` (re-exported): wire layouts, function numbers, protocol constants;
//! - [`element`]: building, sealing and checking an element, the checksum, and the rule
//!   both receivers delimit messages by;
//! - [`ring`]: the ring arithmetic both agents share;
//! - `boot` (re-exported): the PTE page and the boot arguments naming the queues.

mod boot;
pub mod element;
mod layout;
pub mod ring;

pub(crate) use self::boot::gsp_mem_pte;
pub(crate) use self::layout::{
    assert_layout,
    MsgqTxHeader, //
};
pub use self::{
    boot::{
        GspArgumentsCached,
        MessageQueueInitArguments, //
    },
    layout::{
        slot_offset,
        GspMem,
        GspMsgElement,
        GspRpcHeader,
        MsgFunction,
        Msgq,
        CPUQ_OFFSET,
        ELEMENT_HEADER_SIZE,
        GSPQ_OFFSET,
        GSP_MEM_PAGES,
        GSP_MSG_QUEUE_ELEMENT_SIZE_MAX,
        GSP_PAGE_SIZE,
        GSP_PTE_COUNT,
        MAX_ELEMENT_PAGES,
        MAX_ELEMENT_PAYLOAD,
        MAX_RPC_PAYLOAD,
        MSGQ_NUM_PAGES,
        MSGQ_READ_PTR_OFFSET,
        MSGQ_WRITE_PTR_OFFSET,
        NV_ERR_INVALID_ARGUMENT,
        NV_ERR_NOT_SUPPORTED,
        NV_OK,
        PTES_OFFSET,
        RING_BYTES,
        RPC_HEADER_SIZE, //
    },
};
