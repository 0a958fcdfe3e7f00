// SPDX-License-Identifier: GPL-2.0

//! The GSP shared-memory layout and message format (r570, MSGQ protocol version 0).
//!
//! One definition, used by the driver's command queue and by the virtual GSP alike, so
//! the two sides cannot drift apart. Every size and field offset is pinned below with
//! `assert_layout!` to the values of the r570_144 bindings that Linux 7.3's nova-core
//! carries (`drivers/gpu/nova-core/gsp/fw/r570_144/bindings.rs`: the tx and rx headers,
//! the queue element and the RPC header), worked out with `repr(C)` rules; the
//! definitions and names are this crate's. The layout of [`Msgq`] and [`GspMem`] is
//! upstream's (`gsp/cmdq.rs` of 7.3), not a binding.
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
//! # The PTE page
//!
//! The first page maps the region for the GSP: entry `i` holds the bus address of page
//! `i` of [`GspMem`], for its [`GSP_MEM_PAGES`] (0x81) pages. That is also the number of
//! entries upstream's message-queue init arguments hand the firmware
//! (`pageTableEntryCount` = `size_of::<GspMem>() >> GSP_PAGE_SHIFT`): the entries past
//! it are not part of the mapping the firmware is given.
//!
//! Upstream 7.3 fills all 512 entries with `base + (i << 12)`, so its entries 0x81 to
//! 0x1ff hold addresses past the end of the allocation. This crate deliberately writes 0
//! there ([`gsp_mem_pte`]): the 0x81 entries the firmware is given are the same, and no
//! entry names memory outside the region.
//!
//! # Elements and continuation records
//!
//! An element is a [`GspMsgElement`] header (80 bytes, with the RPC header at 0x30)
//! followed by the payload, occupying `elemCount` consecutive slots (at most 16, wrapping
//! past the ring end as needed). `checkSum` makes the XOR-fold of the whole element zero.
//!
//! An RPC whose element would exceed [`GSP_MSG_QUEUE_ELEMENT_SIZE_MAX`] is split: the
//! *head* element is full (16 slots) and carries the first [`MAX_ELEMENT_PAYLOAD`]
//! payload bytes; each following element has the function
//! [`MsgFunction::ContinuationRecord`] and the next chunk as its payload, and is numbered
//! (`rpc.sequence`) as the head where this driver and the virtual GSP send it, or as the
//! record before it plus one where RM does. Every element's `rpc.length` is the RPC
//! header and its own chunk, the head's too, so nothing on the wire says where a split
//! message ends: [`Delimiter`] is the rule both receivers delimit messages by.

use bitfield_struct::bitfield;
use kernel::prelude::*;
use static_assertions::{
    const_assert,
    const_assert_eq, //
};
use zerocopy::{
    FromBytes,
    IntoBytes, //
};
// The derives come from `zerocopy_derive` itself, as Linux 7.3's in-tree zerocopy re-exports
// none of them (its `derive` feature is off).
use zerocopy_derive::{
    FromBytes,
    Immutable,
    IntoBytes,
    KnownLayout, //
};

use crate::{
    gsp::fault::Fault,
    num::{
        u32_as_usize,
        usize_as_u64,
        usize_into_u32,
        FromSafeCast, //
    },
};

/// Pins, at compile time, the size of a wire structure and the offset of each named
/// field:
///
/// ```text
/// assert_layout!(MsgqRxHeader, size 0x4, { read_ptr: 0x0 });
/// ```
macro_rules! assert_layout {
    ($ty:ty, size $size:expr, { $($field:ident: $offset:expr),* $(,)? }) => {
        static_assertions::const_assert_eq!(core::mem::size_of::<$ty>(), $size);
        $(static_assertions::const_assert_eq!(core::mem::offset_of!($ty, $field), $offset);)*
    };
}
pub(crate) use assert_layout;

/// The shift of a GSP page.
pub const GSP_PAGE_SHIFT: usize = 12;
/// The size of a GSP page, and of one ring slot.
pub const GSP_PAGE_SIZE: usize = 1 << GSP_PAGE_SHIFT;
/// The number of slots of each ring.
pub const MSGQ_NUM_PAGES: u32 = 0x3f;
/// The largest element, in bytes (16 slots).
pub const GSP_MSG_QUEUE_ELEMENT_SIZE_MAX: usize = 0x10000;
/// The largest element, in slots.
pub const MAX_ELEMENT_PAGES: u32 =
    usize_into_u32::<{ GSP_MSG_QUEUE_ELEMENT_SIZE_MAX / GSP_PAGE_SIZE }>();
/// The MSGQ protocol version written in the tx header.
pub const MSGQ_VERSION: u32 = 0;
/// The `flags` value of an initialised tx header.
pub const MSGQ_TX_FLAGS: u32 = 1;
/// The number of PTEs in the first page of [`GspMem`].
pub const GSP_PTE_COUNT: usize = GSP_PAGE_SIZE / core::mem::size_of::<u64>();
/// The number of pages of [`GspMem`], which its PTE page maps: the `pageTableEntryCount`
/// upstream puts in the message-queue init arguments.
pub const GSP_MEM_PAGES: usize = core::mem::size_of::<GspMem>() / GSP_PAGE_SIZE;

/// The element header size: the queue element header plus the RPC header.
pub const ELEMENT_HEADER_SIZE: usize = core::mem::size_of::<GspMsgElement>();
/// The RPC header size, counted in `rpc.length`.
pub const RPC_HEADER_SIZE: usize = core::mem::size_of::<GspRpcHeader>();
/// The most payload one element can carry.
pub const MAX_ELEMENT_PAYLOAD: usize = GSP_MSG_QUEUE_ELEMENT_SIZE_MAX - ELEMENT_HEADER_SIZE;
/// The largest RPC payload this implementation sends or reassembles (continuations
/// included): 4 MiB, far above what any r570 RPC carries.
pub const MAX_RPC_PAYLOAD: usize = 4 << 20;

/// The `signature` of every RPC header: `"VRPC"` read as a little-endian `u32`.
pub const RPC_SIGNATURE: u32 = u32::from_le_bytes(*b"VRPC");
/// The `rpc_result` and `rpc_result_private` of a command as sent.
pub const RPC_RESULT_PENDING: u32 = 0xffff_ffff;
/// The `rpc_result` of a successful reply (`NV_OK`).
pub const NV_OK: u32 = 0;
/// `NV_ERR_INVALID_ARGUMENT`: a reply's result for a malformed command.
pub const NV_ERR_INVALID_ARGUMENT: u32 = 0x1f;
/// `NV_ERR_NOT_SUPPORTED`: a reply's result for an unknown function.
pub const NV_ERR_NOT_SUPPORTED: u32 = 0x56;

/// Declares [`MsgFunction`] from one table, so that the variants, their numbers, their
/// names and the conversion from the wire cannot disagree: each entry is the variant's
/// docs, `Variant = number`, and the name for logs.
macro_rules! msg_functions {
    ($($(#[$doc:meta])* $variant:ident = $value:literal => $name:literal,)*) => {
        /// An RPC function number: the `function` of a [`GspRpcHeader`].
        ///
        /// The numbers are r570's (`NV_VGPU_MSG_FUNCTION_*` for commands and
        /// `NV_VGPU_MSG_EVENT_*` for events), but for the `Vgsp*` functions (`0x0f01`..), the
        /// virtual GSP's own. Public because the virtual GSP and the tests, other
        /// crates, speak the same protocol.
        ///
        /// The wire keeps the raw `u32`: a received number may be none of these, which
        /// [`MsgFunction::try_from`] refuses with `EINVAL`.
        #[repr(u32)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum MsgFunction {
            $($(#[$doc])* $variant = $value,)*
        }

        impl MsgFunction {
            /// Returns the function's r570 name, for logs (`"UCODE_LIBOS_PRINT"`).
            pub const fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)*
                }
            }
        }

        impl TryFrom<u32> for MsgFunction {
            type Error = Error;

            /// Returns the function numbered `value`.
            ///
            /// # Errors
            ///
            /// - `EINVAL` if `value` is no function this crate knows.
            fn try_from(value: u32) -> Result<Self> {
                match value {
                    $($value => Ok(Self::$variant),)*
                    _ => Err(EINVAL),
                }
            }
        }
    };
}

msg_functions! {
    /// `NOP`. The virtual GSP answers a one-element NOP by echoing its payload (a NOP has no
    /// length of its own, so it cannot be split: longer echoes are [`MsgFunction::VgspEcho`]).
    Nop = 0 => "NOP",
    /// `UNLOADING_GUEST_DRIVER`: the driver is going away.
    UnloadingGuestDriver = 47 => "UNLOADING_GUEST_DRIVER",
    /// `GET_GSP_STATIC_INFO`: the GPU's static configuration.
    GetGspStaticInfo = 65 => "GET_GSP_STATIC_INFO",
    /// `CONTINUATION_RECORD`: the next chunk of an RPC too large for one element.
    ContinuationRecord = 71 => "CONTINUATION_RECORD",
    /// `GSP_SET_SYSTEM_INFO`: the system information the GSP boots with.
    GspSetSystemInfo = 72 => "GSP_SET_SYSTEM_INFO",
    /// `SET_REGISTRY`: the registry keys the GSP boots with.
    SetRegistry = 73 => "SET_REGISTRY",
    /// `GSP_RM_CONTROL`: a resource-manager control call on an object of the firmware's
    /// (a [`RmControlHeader`](crate::gsp::commands::RmControlHeader) naming the client,
    /// the object and the control, then the control's parameters), answered with the same
    /// structure, the parameters filled in.
    GspRmControl = 76 => "GSP_RM_CONTROL",
    /// `VGSP_CE_COPY`: a copy by the virtual GSP's copy engine, signalled on an
    /// `mbarrier`. Not an r570 function: the virtual GSP's own, numbered clear of them.
    /// The three `Vgsp*` numbers are here because [`CommandToGsp::FUNCTION`] is this type;
    /// their structures are the test bench's (`nova_testbench::rpc`).
    ///
    /// [`CommandToGsp::FUNCTION`]: crate::gsp::cmdq::CommandToGsp::FUNCTION
    VgspCeCopy = 0x0f01 => "VGSP_CE_COPY",
    /// `VGSP_ECHO`: a payload of any size (an `EchoHeader` giving its length, then the
    /// bytes) that the virtual GSP sends back; for tests and benchmarks. The virtual GSP's
    /// own.
    VgspEcho = 0x0f02 => "VGSP_ECHO",
    /// `VGSP_SINK`: like [`MsgFunction::VgspEcho`], but answered with an empty reply: the
    /// benchmark's one-way traffic. The virtual GSP's own.
    VgspSink = 0x0f03 => "VGSP_SINK",
    /// `GSP_INIT_DONE` (event): the GSP finished booting.
    GspInitDone = 0x1001 => "GSP_INIT_DONE",
    /// `GSP_RUN_CPU_SEQUENCER` (event): a sequence of register writes for the CPU to run.
    GspRunCpuSequencer = 0x1002 => "GSP_RUN_CPU_SEQUENCER",
    /// `POST_EVENT` (event): a resource-manager event notification.
    PostEvent = 0x1003 => "POST_EVENT",
    /// `RC_TRIGGERED` (event): a channel needs robust-channel recovery.
    RcTriggered = 0x1004 => "RC_TRIGGERED",
    /// `MMU_FAULT_QUEUED` (event): an MMU fault awaits servicing.
    MmuFaultQueued = 0x1005 => "MMU_FAULT_QUEUED",
    /// `OS_ERROR_LOG` (event): an error line of the GSP's log.
    OsErrorLog = 0x1006 => "OS_ERROR_LOG",
    /// `UCODE_LIBOS_PRINT` (event): a line of the GSP's log.
    UcodeLibosPrint = 0x100c => "UCODE_LIBOS_PRINT",
    /// `PERF_BRIDGELESS_INFO_UPDATE` (event): the bridgeless multi-GPU link changed.
    PerfBridgelessInfoUpdate = 0x100f => "PERF_BRIDGELESS_INFO_UPDATE",
    /// `GSP_LOCKDOWN_NOTICE` (event): the GSP entered or left lockdown.
    GspLockdownNotice = 0x101c => "GSP_LOCKDOWN_NOTICE",
    /// `GSP_POST_NOCAT_RECORD` (event): a crash-telemetry (NOCAT) record.
    GspPostNocatRecord = 0x1020 => "GSP_POST_NOCAT_RECORD",
}

impl MsgFunction {
    /// The first event number (`NV_VGPU_MSG_EVENT_FIRST_EVENT`): functions at or above it
    /// are sent by the GSP unasked.
    const FIRST_EVENT: u32 = 0x1000;

    /// Returns whether the function is an event, which the GSP sends unasked rather
    /// than in answer to a command.
    pub const fn is_event(self) -> bool {
        // CAST: a field-less `repr(u32)` enum; `as` reads its discriminant.
        self as u32 >= Self::FIRST_EVENT
    }
}

impl From<MsgFunction> for u32 {
    fn from(function: MsgFunction) -> Self {
        // CAST: a field-less `repr(u32)` enum; `as` reads its discriminant, the number.
        function as u32
    }
}

/// The `header_version` of an RPC header.
#[bitfield(u32)]
#[derive(PartialEq, Eq)]
pub struct RpcHeaderVersion {
    #[bits(16)]
    __: u16,
    /// Minor version.
    #[bits(8)]
    pub minor: u8,
    /// Major version.
    #[bits(8)]
    pub major: u8,
}

/// The header version this implementation speaks: 3.0 (`rpc_message_header_v03_00`).
pub const RPC_HEADER_VERSION: RpcHeaderVersion = RpcHeaderVersion::new().with_major(3);

/// The writer's header of a queue (`msgqTxHeader`).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct MsgqTxHeader {
    /// Protocol version, [`MSGQ_VERSION`].
    pub version: u32,
    /// Size of the whole [`Msgq`].
    pub size: u32,
    /// Size of a slot.
    pub msg_size: u32,
    /// Number of slots.
    pub msg_count: u32,
    /// The writer's pointer: the next slot it will fill.
    pub write_ptr: u32,
    /// Flags, [`MSGQ_TX_FLAGS`].
    pub flags: u32,
    /// Offset of the rx header inside the [`Msgq`].
    pub rx_hdr_off: u32,
    /// Offset of the first slot inside the [`Msgq`].
    pub entry_off: u32,
}

impl MsgqTxHeader {
    /// Returns the header as the driver initialises it, with the write pointer at 0.
    pub const fn new() -> Self {
        Self {
            version: MSGQ_VERSION,
            size: usize_into_u32::<{ core::mem::size_of::<Msgq>() }>(),
            msg_size: usize_into_u32::<{ GSP_PAGE_SIZE }>(),
            msg_count: MSGQ_NUM_PAGES,
            write_ptr: 0,
            flags: MSGQ_TX_FLAGS,
            rx_hdr_off: usize_into_u32::<{ core::mem::offset_of!(Msgq, rx) }>(),
            entry_off: usize_into_u32::<{ core::mem::offset_of!(Msgq, msgq) }>(),
        }
    }
}

/// The reader's header of a queue (`msgqRxHeader`).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct MsgqRxHeader {
    /// The reader's pointer: the next slot it will consume.
    pub read_ptr: u32,
}

/// The slots of a queue.
#[repr(C, align(4096))]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct MsgqData {
    /// The slots.
    ///
    /// One byte array rather than an array of pages: an element of several slots is
    /// contiguous, and the ring's pieces are projected from it as byte ranges.
    pub data: [u8; RING_BYTES],
}

/// Bytes between the rx header and the first slot.
const MSGQ_HEADER_PAD: usize =
    GSP_PAGE_SIZE - core::mem::size_of::<MsgqTxHeader>() - core::mem::size_of::<MsgqRxHeader>();

/// One queue: headers and slots.
#[repr(C)]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct Msgq {
    /// The writer's header.
    pub tx: MsgqTxHeader,
    /// The reader's header.
    pub rx: MsgqRxHeader,
    _pad: [u8; MSGQ_HEADER_PAD],
    /// The slots.
    pub msgq: MsgqData,
}

/// The memory shared with the GSP: the self-mapping PTE page and the two queues.
#[repr(C)]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct GspMem {
    /// Bus addresses of the pages of this structure.
    pub ptes: [u64; GSP_PTE_COUNT],
    /// CPU -> GSP.
    pub cpuq: Msgq,
    /// GSP -> CPU.
    pub gspq: Msgq,
}

// SAFETY: `GspMem` is integers and byte arrays only; zerocopy's `FromBytes` derive
// (checked by the compiler above) proves every bit pattern valid.
unsafe impl kernel::transmute::FromBytes for GspMem {}
// SAFETY: zerocopy's `IntoBytes` derive above proves `GspMem` has no padding.
unsafe impl kernel::transmute::AsBytes for GspMem {}

// SAFETY: `MsgqTxHeader` is eight `u32`s: every bit pattern is valid (zerocopy's
// `FromBytes` derive above checks it).
unsafe impl kernel::transmute::FromBytes for MsgqTxHeader {}
// SAFETY: zerocopy's `IntoBytes` derive above proves it has no padding.
unsafe impl kernel::transmute::AsBytes for MsgqTxHeader {}

/// Byte offset of `cpuq` in [`GspMem`] (`cmdQueueOffset` of the GSP init arguments).
pub const CPUQ_OFFSET: usize = core::mem::offset_of!(GspMem, cpuq);
/// Byte offset of `gspq` in [`GspMem`] (`statQueueOffset`).
pub const GSPQ_OFFSET: usize = core::mem::offset_of!(GspMem, gspq);
/// Byte offset of the tx header's `write_ptr` inside a [`Msgq`].
pub const MSGQ_WRITE_PTR_OFFSET: usize =
    core::mem::offset_of!(Msgq, tx) + core::mem::offset_of!(MsgqTxHeader, write_ptr);
/// Byte offset of the rx header's `read_ptr` inside a [`Msgq`].
pub const MSGQ_READ_PTR_OFFSET: usize =
    core::mem::offset_of!(Msgq, rx) + core::mem::offset_of!(MsgqRxHeader, read_ptr);
/// Byte offset of the first slot inside a [`Msgq`].
pub const MSGQ_DATA_OFFSET: usize = core::mem::offset_of!(Msgq, msgq);

/// Returns the byte offset of slot `slot` inside a [`Msgq`].
pub const fn slot_offset(slot: u32) -> usize {
    MSGQ_DATA_OFFSET + u32_as_usize(slot) * GSP_PAGE_SIZE
}

assert_layout!(MsgqTxHeader, size 0x20, {
    version: 0x0,
    size: 0x4,
    msg_size: 0x8,
    msg_count: 0xc,
    write_ptr: 0x10,
    flags: 0x14,
    rx_hdr_off: 0x18,
    entry_off: 0x1c,
});
assert_layout!(MsgqRxHeader, size 0x4, { read_ptr: 0x0 });
assert_layout!(MsgqData, size 0x3f000, { data: 0x0 });
assert_layout!(Msgq, size 0x40000, {
    tx: 0x0,
    rx: 0x20,
    msgq: 0x1000,
});
assert_layout!(GspMem, size 0x81000, {
    ptes: 0x0,
    cpuq: 0x1000,
    gspq: 0x41000,
});
const_assert_eq!(MSGQ_DATA_OFFSET, 0x1000);
const_assert_eq!(CPUQ_OFFSET, 0x1000);
const_assert_eq!(GSPQ_OFFSET, 0x41000);
const_assert_eq!(GSP_MEM_PAGES, 0x81);
const_assert!(GSP_MEM_PAGES <= GSP_PTE_COUNT);
const_assert_eq!(MAX_ELEMENT_PAGES, 16);

/// The RPC header (`rpc_message_header_v03_00`).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct GspRpcHeader {
    /// [`RPC_HEADER_VERSION`].
    pub header_version: u32,
    /// [`RPC_SIGNATURE`].
    pub signature: u32,
    /// This header plus the payload, in bytes (the whole RPC for a split head).
    pub length: u32,
    /// The function number: a [`MsgFunction`] if it is one this crate knows.
    pub function: u32,
    /// [`RPC_RESULT_PENDING`] on send; the result (`NV_OK` = 0) in a reply.
    pub rpc_result: u32,
    /// As `rpc_result`.
    pub rpc_result_private: u32,
    /// The RPC's sequence number; a reply carries its command's.
    pub sequence: u32,
    /// Unused (`cpuRmGfid`).
    pub spare: u32,
}

/// The header of a queue element (`GSP_MSG_QUEUE_ELEMENT`) with its RPC header.
#[repr(C, align(8))]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct GspMsgElement {
    /// Zero (confidential computing only).
    pub auth_tag_buffer: [u8; 16],
    /// Zero (confidential computing only).
    pub aad_buffer: [u8; 16],
    /// Makes the XOR-fold of the element zero ([`checksum`]).
    pub check_sum: u32,
    /// The element's sequence number, +1 per element sent on the queue.
    pub seq_num: u32,
    /// Slots the element occupies.
    pub elem_count: u32,
    /// Zero.
    pub pad: u32,
    /// The RPC header.
    pub rpc: GspRpcHeader,
}

assert_layout!(GspRpcHeader, size 0x20, {
    header_version: 0x0,
    signature: 0x4,
    length: 0x8,
    function: 0xc,
    rpc_result: 0x10,
    rpc_result_private: 0x14,
    sequence: 0x18,
    spare: 0x1c,
});
assert_layout!(GspMsgElement, size 0x50, {
    auth_tag_buffer: 0x0,
    aad_buffer: 0x10,
    check_sum: 0x20,
    seq_num: 0x24,
    elem_count: 0x28,
    pad: 0x2c,
    rpc: 0x30,
});
const_assert_eq!(core::mem::align_of::<GspMsgElement>(), 8);
const_assert_eq!(ELEMENT_HEADER_SIZE % 8, 0);

impl GspMsgElement {
    /// Returns the header of an element carrying `chunk_len` payload bytes, with the
    /// checksum still zero. Its `rpc.length` covers the RPC header and this element's own
    /// chunk, as r570 firmware and the drivers send every element, a split RPC's head
    /// included (see "Split RPCs" in [`crate::gsp::cmdq`]).
    ///
    /// Callers keep `chunk_len <= MAX_ELEMENT_PAYLOAD`.
    pub fn new(seq_num: u32, function: u32, sequence: u32, chunk_len: usize) -> Self {
        Self {
            seq_num,
            elem_count: elem_count_for(chunk_len),
            rpc: GspRpcHeader {
                header_version: RPC_HEADER_VERSION.into_bits(),
                signature: RPC_SIGNATURE,
                // CAST: bounded by `MAX_ELEMENT_PAYLOAD` + 32, far below `u32::MAX`.
                length: (RPC_HEADER_SIZE + chunk_len) as u32,
                function,
                rpc_result: RPC_RESULT_PENDING,
                rpc_result_private: RPC_RESULT_PENDING,
                sequence,
                spare: 0,
            },
            ..Self::default()
        }
    }

    /// Sets `check_sum` so that the element made of this header and `chunk` XOR-folds to
    /// zero. The payload starts 8-byte aligned, so the element's sum is the header's (with
    /// a zero checksum field) XOR the payload's.
    pub fn seal(&mut self, chunk: &[u8]) {
        self.seal_pieces(&[(0, chunk)]);
    }

    /// [`GspMsgElement::seal`] for a payload given in pieces, each with the offset it
    /// starts at in the payload.
    pub fn seal_pieces(&mut self, pieces: &[(usize, &[u8])]) {
        self.check_sum = 0;
        let mut sum = Checksum::of_header(self);
        for &(at, piece) in pieces {
            sum.update_at(at, piece);
        }
        self.check_sum = sum.fold();
    }

    /// Returns the payload length `rpc.length` announces: this element's chunk.
    ///
    /// `None` if `rpc.length` is shorter than the RPC header.
    pub fn rpc_payload_len(&self) -> Option<usize> {
        usize::from_safe_cast(self.rpc.length).checked_sub(RPC_HEADER_SIZE)
    }
}

/// Validates an element of `elem_count` slots copied out of a ring into `buf`; returns its
/// header and the number of payload bytes it carries (which start at
/// [`ELEMENT_HEADER_SIZE`]).
///
/// Checks, in order: the header's `elemCount` matches, the signature and header version,
/// `rpc.length` covers the RPC header and no more than one element's payload (a split
/// RPC's head included), the payload fits the slots exactly, and the checksum.
///
/// # Errors
///
/// - A [`Fault`] naming the check, if any check fails or `buf` is shorter
///   than `elem_count` slots.
pub fn validate_element(
    buf: &[u8],
    elem_count: u32,
) -> core::result::Result<(GspMsgElement, usize), Fault> {
    let Some(buf) = buf.get(..usize::from_safe_cast(elem_count) * GSP_PAGE_SIZE) else {
        return Err(Fault::ElementShorterThanSlots);
    };
    let (header, chunk_len) = validate_header(buf, elem_count)?;
    verify_checksum(
        &header,
        &buf[ELEMENT_HEADER_SIZE..ELEMENT_HEADER_SIZE + chunk_len],
    )?;
    Ok((header, chunk_len))
}

/// Checks the header at the start of `buf`, a copy of an element of `elem_count` slots,
/// as [`validate_element`] does except for the checksum; returns the header and the
/// payload bytes the element carries. `ELEMENT_HEADER_SIZE` plus that many bytes fit
/// the `elem_count` slots, so a receiver can copy just those and then call
/// [`verify_checksum`] on them.
///
/// # Errors
///
/// - A [`Fault`] naming the check, if any check fails or `buf` is shorter
///   than a header.
pub fn validate_header(
    buf: &[u8],
    elem_count: u32,
) -> core::result::Result<(GspMsgElement, usize), Fault> {
    let bad = Err;
    let Ok((header, _)) = GspMsgElement::read_from_prefix(buf) else {
        return bad(Fault::ElementShorterThanHeader);
    };
    if header.elem_count != elem_count {
        return bad(Fault::ElementCountChanged);
    }
    if header.rpc.signature != RPC_SIGNATURE {
        return bad(Fault::BadSignature);
    }
    if RpcHeaderVersion::from_bits(header.rpc.header_version).major() != RPC_HEADER_VERSION.major()
    {
        return bad(Fault::UnsupportedHeaderVersion);
    }
    let Some(chunk_len) = header.rpc_payload_len() else {
        return bad(Fault::LengthBelowHeader);
    };
    // Every element, a split RPC's head included, announces its own chunk only: a head
    // announcing its whole RPC is refused here, as nouveau's receive refuses a head whose
    // `rpc.length` exceeds one element.
    if chunk_len > MAX_ELEMENT_PAYLOAD {
        return bad(Fault::LengthBeyondElement);
    }
    if elem_count_for(chunk_len) != elem_count {
        return bad(Fault::LengthInconsistent);
    }
    Ok((header, chunk_len))
}

/// Checks the checksum of an element made of `header` and `chunk`, the payload it
/// announces, wherever each was copied to. The payload follows the header 8-byte
/// aligned, so the element's sum is the header's XOR the payload's.
///
/// # Errors
///
/// - [`Fault::BadChecksum`] if the checksum does not fold to 0.
pub fn verify_checksum(header: &GspMsgElement, chunk: &[u8]) -> core::result::Result<(), Fault> {
    let mut sum = Checksum::of_header(header);
    sum.update(chunk);
    sum.verify()
}

/// Whether an element carrying `chunk_len` payload bytes is full: only a full element
/// may be followed by a continuation record of its message.
pub const fn is_full(chunk_len: usize) -> bool {
    chunk_len == MAX_ELEMENT_PAYLOAD
}

/// Whether `header` is a continuation record.
pub fn is_continuation(header: &GspMsgElement) -> bool {
    header.rpc.function == u32::from(MsgFunction::ContinuationRecord)
}

/// Where a message ends: the one delimiting rule of both receivers, the driver's
/// (`gsp::cmdq`) and the virtual GSP's (its command side).
///
/// - A message ends at its first element that is not full ([`is_full`]), or as soon as
///   the length its reader expects is reached ([`Delimiter::is_whole`]).
/// - After a full element, the next element continues the message if and only if it is a
///   `CONTINUATION_RECORD` whose `rpc.sequence` is the message's first element's, or the
///   previous element's (the last record's, or the head's) plus one ([`Delimiter::next`]).
///   Any other element, a record of another message included, ends the message, which is
///   whole, and stays on the ring to be received on its own.
/// - If nothing is published after a full element, the driver's receive waits for the
///   next element up to [`RECORD_TIMEOUT`] (100 ms): a fixed grace, whatever is left of
///   the caller's timeout, and with a zero timeout (a replay) too. If none comes, the
///   message is whole and is delivered: never a timeout for a complete message, never
///   dropped. (The virtual GSP knows each command's length from the command itself, and
///   keeps a command open until its records come.)
///
/// Why: nothing on the wire marks a message's end, as every element's `rpc.length` is its
/// own chunk's. RM numbers each record as an RPC of its own, after the previous one
/// (`_issueRpcLarge()` in open-gpu-kernel-modules), and a GSP that leaves the number alone
/// gives every record the first element's: either way a record continues its message, and
/// nothing else does. The GSP writes a split message's records one after the other, so a
/// record that is coming comes well within the grace. A wait tied to the caller's
/// deadline would either cut a message short when a receive runs near its deadline, or
/// hold the queue for the whole deadline (seconds) for a message that exactly fills its
/// last element.
///
/// Recovery, on both sides: an element that fails the checks (header, checksum, sequence,
/// pointer) is refused: consumed (its `elemCount` slots, or every published slot when it
/// cannot be delimited) and its error returned to the receive that met it. A valid element
/// that is not the awaited message (another function, a function the driver does not
/// know, or a continuation record that continues no message: a stray record) is consumed
/// and skipped like a message of another type, and logged; it is no error for the waiter.
///
/// [`RECORD_TIMEOUT`]: crate::gsp::cmdq::RECORD_TIMEOUT
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delimiter {
    /// The `rpc.sequence` of the message's first element.
    first: u32,
    /// The `rpc.sequence` of the message's last element so far.
    last: u32,
    /// Payload bytes received so far.
    len: usize,
    /// The payload length the reader expects, if it knows one.
    expected: Option<usize>,
    /// Whether the last element received was full.
    last_full: bool,
}

/// What the element after a message's last one does to it ([`Delimiter::next`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// A continuation record of the message: appended to it.
    Append,
    /// Any other element: the message ends before it, and it stays on the ring.
    Ends,
}

impl Delimiter {
    /// Starts a message at its head, `header`, carrying `chunk_len` payload bytes; its
    /// reader expects `expected` bytes, if it knows.
    pub fn head(header: &GspMsgElement, chunk_len: usize, expected: Option<usize>) -> Self {
        Self {
            first: header.rpc.sequence,
            last: header.rpc.sequence,
            len: chunk_len,
            expected,
            last_full: is_full(chunk_len),
        }
    }

    /// Returns whether the message is whole: its last element is not full, or the length
    /// expected is reached. Otherwise the next element decides ([`Delimiter::next`]), or
    /// the end of the wait for it.
    pub fn is_whole(&self) -> bool {
        !self.last_full || self.expected.is_some_and(|len| self.len >= len)
    }

    /// Returns what `next`, the header of the element after the message's last one,
    /// does to the message, which is not whole: a continuation record numbered as the
    /// first element or as the one after the last continues it.
    pub fn next(&self, next: &GspMsgElement) -> Next {
        let sequence = next.rpc.sequence;
        let numbered = sequence == self.first || sequence == self.last.wrapping_add(1);
        match is_continuation(next) && numbered {
            true => Next::Append,
            false => Next::Ends,
        }
    }

    /// Appends the continuation record `record`, carrying `chunk_len` payload bytes.
    pub fn append(&mut self, record: &GspMsgElement, chunk_len: usize) {
        self.last = record.rpc.sequence;
        self.len += chunk_len;
        self.last_full = is_full(chunk_len);
    }

    /// Returns the payload bytes received so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Returns whether no payload byte was received (a head without payload).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Returns whether the message, ended, is shorter than its reader expects.
    pub fn is_short(&self) -> bool {
        self.expected.is_some_and(|len| self.len < len)
    }
}

/// Bytes of one ring (63 slots).
pub const RING_BYTES: usize = u32_as_usize(MSGQ_NUM_PAGES) * GSP_PAGE_SIZE;

/// Calls `f(ring_offset, buffer_range)` for the one or two pieces that `len` bytes at ring
/// byte `start` occupy: an element that runs past the last slot continues at slot 0.
///
/// # Errors
///
/// The first error `f` returns.
pub fn for_each_ring_piece(
    start: usize,
    len: usize,
    mut f: impl FnMut(usize, core::ops::Range<usize>) -> Result,
) -> Result {
    let start = start % RING_BYTES;
    let first = len.min(RING_BYTES - start);
    f(start, 0..first)?;
    if first < len {
        f(0, first..len)?;
    }
    Ok(())
}

/// An agent's place on the ring it fills: the slot it writes next, and what it last
/// learnt of the other agent's reading.
///
/// # Invariants
///
/// `write` is below [`MSGQ_NUM_PAGES`]; `known_free` slots from `write` were free when the
/// agent last loaded the other agent's read pointer ([`WriteCursor::saw_read_ptr`]), less
/// those it has written since.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteCursor {
    write: u32,
    known_free: u32,
}

impl WriteCursor {
    /// The write pointer at slot 0, nothing known of the reader.
    pub const fn new() -> Self {
        // INVARIANT: 0 is below the ring size; nothing is known.
        Self {
            write: 0,
            known_free: 0,
        }
    }

    /// The slot this agent writes next.
    pub const fn write_ptr(&self) -> u32 {
        self.write
    }

    /// Slots from the write pointer known to be free.
    pub const fn known_free(&self) -> u32 {
        self.known_free
    }

    /// The write pointer once `n` more slots are published: the value to store.
    pub const fn next_write(&self, n: u32) -> u32 {
        (self.write + n) % MSGQ_NUM_PAGES
    }

    /// Records that the write pointer was stored as [`WriteCursor::next_write`]`(n)`.
    pub fn wrote(&mut self, n: u32) {
        // INVARIANT: `next_write` is below the ring size; the slots published are no
        // longer free.
        self.write = self.next_write(n);
        self.known_free = self.known_free.saturating_sub(n);
    }

    /// Records the other agent's read pointer, just loaded with acquire semantics, and
    /// returns the slots from the write pointer that are free. One slot always stays
    /// empty, so a full ring is told from an empty one.
    pub fn saw_read_ptr(&mut self, other_read: u32) -> u32 {
        // INVARIANT: the slots from `write` up to the one before `other_read` are free.
        self.known_free = (other_read + MSGQ_NUM_PAGES - self.write - 1) % MSGQ_NUM_PAGES;
        self.known_free
    }

    /// The byte offset in the ring of byte `pos` of the element at the write pointer;
    /// [`for_each_ring_piece`] wraps it.
    pub const fn write_offset(&self, pos: usize) -> usize {
        u32_as_usize(self.write) * GSP_PAGE_SIZE + pos
    }
}

/// An agent's place on the ring it drains: the slot it reads next, and what it last
/// learnt of the other agent's writing.
///
/// # Invariants
///
/// `read` is below [`MSGQ_NUM_PAGES`]; `known_published` slots from `read` were published
/// when the agent last loaded the other agent's write pointer
/// ([`ReadCursor::saw_write_ptr`]), less those it has consumed since.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadCursor {
    read: u32,
    known_published: u32,
}

impl ReadCursor {
    /// The read pointer at slot 0, nothing known of the writer.
    pub const fn new() -> Self {
        // INVARIANT: 0 is below the ring size; nothing is known.
        Self {
            read: 0,
            known_published: 0,
        }
    }

    /// The slot this agent reads next.
    pub const fn read_ptr(&self) -> u32 {
        self.read
    }

    /// Slots from the read pointer known to be published.
    pub const fn known_published(&self) -> u32 {
        self.known_published
    }

    /// The read pointer once `n` more slots are consumed: the value to store.
    pub const fn next_read(&self, n: u32) -> u32 {
        (self.read + n) % MSGQ_NUM_PAGES
    }

    /// Records that the read pointer was stored as [`ReadCursor::next_read`]`(n)`.
    pub fn consumed(&mut self, n: u32) {
        // INVARIANT: `next_read` is below the ring size; the slots consumed are no longer
        // published.
        self.read = self.next_read(n);
        self.known_published = self.known_published.saturating_sub(n);
    }

    /// Records the other agent's write pointer, just loaded with acquire semantics, and
    /// returns the slots from the read pointer that are published.
    ///
    /// # Errors
    ///
    /// - [`Fault::WritePointerBackwards`] if fewer slots are published than were known to
    ///   be: the other agent moved its write pointer backwards. What was known stays known.
    pub fn saw_write_ptr(&mut self, other_write: u32) -> core::result::Result<u32, Fault> {
        let published = (other_write + MSGQ_NUM_PAGES - self.read) % MSGQ_NUM_PAGES;
        if published < self.known_published {
            return Err(Fault::WritePointerBackwards);
        }
        // INVARIANT: the slots from `read` up to `other_write` are published.
        self.known_published = published;
        Ok(published)
    }

    /// Forgets what is known of the writer's progress (after a restart, or to replay a
    /// recording).
    pub fn forget_published(&mut self) {
        // INVARIANT: nothing is known any more.
        self.known_published = 0;
    }

    /// The byte offset in the ring of byte `pos` of the element at the read pointer.
    pub const fn read_offset(&self, pos: usize) -> usize {
        u32_as_usize(self.read) * GSP_PAGE_SIZE + pos
    }
}

/// One agent's place in the two rings: a [`WriteCursor`] on the ring it fills and a
/// [`ReadCursor`] on the ring it drains. The arithmetic on the pointers is shared by the
/// driver and the virtual GSP; the loads and stores of them, with their barriers, are
/// each agent's own. The driver keeps the two halves apart, each under a lock of its own
/// (`gsp::cmdq`); the virtual GSP, which has one thread, keeps them together here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RingCursor {
    tx: WriteCursor,
    rx: ReadCursor,
}

impl RingCursor {
    /// Both pointers at slot 0, nothing known of the other agent.
    pub const fn new() -> Self {
        Self {
            tx: WriteCursor::new(),
            rx: ReadCursor::new(),
        }
    }

    /// See [`WriteCursor::write_ptr`].
    pub const fn write_ptr(&self) -> u32 {
        self.tx.write_ptr()
    }

    /// See [`ReadCursor::read_ptr`].
    pub const fn read_ptr(&self) -> u32 {
        self.rx.read_ptr()
    }

    /// See [`WriteCursor::known_free`].
    pub const fn known_free(&self) -> u32 {
        self.tx.known_free()
    }

    /// See [`ReadCursor::known_published`].
    pub const fn known_published(&self) -> u32 {
        self.rx.known_published()
    }

    /// See [`WriteCursor::next_write`].
    pub const fn next_write(&self, n: u32) -> u32 {
        self.tx.next_write(n)
    }

    /// See [`ReadCursor::next_read`].
    pub const fn next_read(&self, n: u32) -> u32 {
        self.rx.next_read(n)
    }

    /// See [`WriteCursor::wrote`].
    pub fn wrote(&mut self, n: u32) {
        self.tx.wrote(n);
    }

    /// See [`ReadCursor::consumed`].
    pub fn consumed(&mut self, n: u32) {
        self.rx.consumed(n);
    }

    /// See [`WriteCursor::saw_read_ptr`].
    pub fn saw_read_ptr(&mut self, other_read: u32) -> u32 {
        self.tx.saw_read_ptr(other_read)
    }

    /// See [`ReadCursor::saw_write_ptr`].
    ///
    /// # Errors
    ///
    /// As [`ReadCursor::saw_write_ptr`].
    pub fn saw_write_ptr(&mut self, other_write: u32) -> core::result::Result<u32, Fault> {
        self.rx.saw_write_ptr(other_write)
    }

    /// See [`ReadCursor::forget_published`].
    pub fn forget_published(&mut self) {
        self.rx.forget_published();
    }

    /// See [`WriteCursor::write_offset`].
    pub const fn write_offset(&self, pos: usize) -> usize {
        self.tx.write_offset(pos)
    }

    /// See [`ReadCursor::read_offset`].
    pub const fn read_offset(&self, pos: usize) -> usize {
        self.rx.read_offset(pos)
    }
}

/// Checks a ring pointer loaded from the other agent.
///
/// # Errors
///
/// - [`Fault::PointerOutsideRing`] if it is outside the ring.
pub fn ring_ptr(ptr: u32) -> core::result::Result<u32, Fault> {
    match ptr < MSGQ_NUM_PAGES {
        true => Ok(ptr),
        false => Err(Fault::PointerOutsideRing),
    }
}

/// Returns the number of slots an element carrying `payload_len` bytes occupies.
pub const fn elem_count_for(payload_len: usize) -> u32 {
    // At most `MAX_ELEMENT_PAGES` for payloads callers pass; saturates otherwise.
    let pages = (ELEMENT_HEADER_SIZE + payload_len).div_ceil(GSP_PAGE_SIZE);
    if pages > u32_as_usize(u32::MAX) {
        u32::MAX
    } else {
        // CAST: `pages <= u32::MAX`, checked above.
        pages as u32
    }
}

/// Returns the number of elements an RPC of `payload_len` bytes is sent as.
pub const fn element_count_for_rpc(payload_len: usize) -> usize {
    if payload_len <= MAX_ELEMENT_PAYLOAD {
        1
    } else {
        payload_len.div_ceil(MAX_ELEMENT_PAYLOAD)
    }
}

/// The running XOR of little-endian 64-bit words.
///
/// Feed it the bytes of an element in order, in pieces whose lengths are multiples of 8
/// (the last may be shorter and is zero-padded), then [`Checksum::fold`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Checksum(u64);

impl Checksum {
    /// Adds `bytes`, word by word.
    pub fn update(&mut self, bytes: &[u8]) {
        // Four words at a time into four sums, which the compiler keeps in vector
        // registers: the XOR of all of them is the same as one word at a time.
        let mut blocks = bytes.chunks_exact(32);
        let mut acc = [self.0, 0, 0, 0];
        for block in &mut blocks {
            for (sum, word) in acc.iter_mut().zip(block.chunks_exact(8)) {
                *sum ^= le_word(word);
            }
        }
        let mut sum = acc[0] ^ acc[1] ^ acc[2] ^ acc[3];
        let mut words = blocks.remainder().chunks(8);
        for word in &mut words {
            sum ^= le_word(word);
        }
        self.0 = sum;
    }

    /// Adds `bytes` found `start` bytes into the element, wherever the pieces before them
    /// ended: a piece that starts inside a word contributes its sum shifted to the bytes'
    /// places in the word (a rotation, since XOR carries nothing).
    pub fn update_at(&mut self, start: usize, bytes: &[u8]) {
        let mut piece = Self::default();
        piece.update(bytes);
        // CAST: `start % 8 < 8`, so the shift is below 64.
        self.0 ^= piece.0.rotate_left(8 * (start % 8) as u32);
    }

    /// Returns the sum of `header`'s bytes, to which its payload's are then added.
    pub fn of_header(header: &GspMsgElement) -> Self {
        let mut sum = Self::default();
        sum.update(header.as_bytes());
        sum
    }

    /// Checks that a whole element summed folds to zero.
    ///
    /// # Errors
    ///
    /// - [`Fault::BadChecksum`] if it does not.
    pub(crate) fn verify(self) -> core::result::Result<(), Fault> {
        match self.fold() {
            0 => Ok(()),
            _ => Err(Fault::BadChecksum),
        }
    }

    /// Returns the 32-bit checksum: the two halves of the sum XOR-ed.
    pub fn fold(self) -> u32 {
        // CAST: both halves are masked to 32 bits.
        ((self.0 >> 32) ^ (self.0 & 0xffff_ffff)) as u32
    }
}

/// Returns the little-endian word of `bytes` (at most 8), zero-padded.
#[inline(always)]
fn le_word(bytes: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b[..bytes.len()].copy_from_slice(bytes);
    u64::from_le_bytes(b)
}

/// Returns the checksum of `bytes`.
pub fn checksum(bytes: &[u8]) -> u32 {
    let mut sum = Checksum::default();
    sum.update(bytes);
    sum.fold()
}

/// Returns entry `index` of the PTE page of a [`GspMem`] at bus address `base`: the bus
/// address of its page `index`, or 0 past its last page. (One entry at a time: the whole
/// page is 4 KiB, too much for a kernel stack.)
///
/// Upstream writes `base + (index << 12)` for every index, past the last page too; the
/// firmware is given only the first [`GSP_MEM_PAGES`] entries, which are the same here
/// (see "The PTE page" in the module documentation).
pub fn gsp_mem_pte(base: u64, index: usize) -> u64 {
    match index < GSP_MEM_PAGES {
        true => base + (u64::from_safe_cast(index) << GSP_PAGE_SHIFT),
        false => 0,
    }
}

/// Byte offset of the PTE page in [`GspMem`].
pub const PTES_OFFSET: usize = core::mem::offset_of!(GspMem, ptes);

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
pub struct SrInitArguments {
    /// `oldLevel`.
    pub old_level: u32,
    /// `flags`.
    pub flags: u32,
    /// `bInPMTransition`.
    pub in_pm_transition: u8,
    /// Padding, 0.
    pub pad: [u8; 3],
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
    pub sr_init_arguments: SrInitArguments,
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
    /// The arguments of a cold boot whose queues are those of the [`GspMem`] at bus
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
