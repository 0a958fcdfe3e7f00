// SPDX-License-Identifier: GPL-2.0

//! The wire layouts: shared memory, queues, element and RPC headers, function numbers and
//! protocol constants. Re-exported by `gsp::fw`.

use bitfield_struct::bitfield;
use kernel::prelude::*;
use static_assertions::{
    const_assert,
    const_assert_eq, //
};
// From `zerocopy_derive`: Linux 7.3's in-tree zerocopy re-exports no derives.
use zerocopy_derive::{
    FromBytes,
    Immutable,
    IntoBytes,
    KnownLayout, //
};

use crate::num::{
    u32_as_usize,
    usize_into_u32,
    FromSafeCast, //
};

/// Pins a wire structure's size and named field offsets at compile time:
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
pub(crate) const GSP_PAGE_SHIFT: usize = 12;
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
const MSGQ_VERSION: u32 = 0;
/// The `flags` value of an initialised tx header.
const MSGQ_TX_FLAGS: u32 = 1;
/// The number of PTEs in the first page of [`GspMem`].
pub const GSP_PTE_COUNT: usize = GSP_PAGE_SIZE / core::mem::size_of::<u64>();
/// The number of pages of [`GspMem`] its PTE page maps (upstream's `pageTableEntryCount`).
pub const GSP_MEM_PAGES: usize = core::mem::size_of::<GspMem>() / GSP_PAGE_SIZE;

/// The element header size: the queue element header plus the RPC header.
pub const ELEMENT_HEADER_SIZE: usize = core::mem::size_of::<GspMsgElement>();
/// The RPC header size, counted in `rpc.length`.
pub const RPC_HEADER_SIZE: usize = core::mem::size_of::<GspRpcHeader>();
/// The most payload one element can carry.
pub const MAX_ELEMENT_PAYLOAD: usize = GSP_MSG_QUEUE_ELEMENT_SIZE_MAX - ELEMENT_HEADER_SIZE;
/// The largest RPC payload sent or reassembled: 4 MiB, far above any r570 RPC.
pub const MAX_RPC_PAYLOAD: usize = 4 << 20;

/// The `signature` of every RPC header: `"VRPC"` read as a little-endian `u32`.
pub(crate) const RPC_SIGNATURE: u32 = u32::from_le_bytes(*b"VRPC");
/// The `rpc_result` and `rpc_result_private` of a command as sent.
pub(crate) const RPC_RESULT_PENDING: u32 = 0xffff_ffff;
/// The `rpc_result` of a successful reply (`NV_OK`).
pub const NV_OK: u32 = 0;
/// `NV_ERR_INVALID_ARGUMENT`: a reply's result for a malformed command.
pub const NV_ERR_INVALID_ARGUMENT: u32 = 0x1f;
/// `NV_ERR_NOT_SUPPORTED`: a reply's result for an unknown function.
pub const NV_ERR_NOT_SUPPORTED: u32 = 0x56;

/// An RPC function number: the `function` of a [`GspRpcHeader`].
///
/// Differs from upstream's enum so that a test bench can number its own RPCs
/// (`nova_testbench::rpc`); the constants are r570's, the only ones the driver knows
/// ([`MsgFunction::try_from`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct MsgFunction(pub u32);

/// Declares the r570 functions from one table, so numbers and log names cannot disagree.
macro_rules! msg_functions {
    ($($(#[$doc:meta])* $name:ident = $value:literal,)*) => {
        impl MsgFunction {
            $($(#[$doc])* pub const $name: Self = Self($value);)*

            /// Returns the r570 name of the function, `None` if it is none of r570's.
            const fn r570_name(self) -> Option<&'static str> {
                match self.0 {
                    $($value => Some(stringify!($name)),)*
                    _ => None,
                }
            }
        }
    };
}

msg_functions! {
    /// `NOP`. The virtual GSP answers a one-element NOP by echoing its payload.
    NOP = 0,
    /// `UNLOADING_GUEST_DRIVER`: the driver is going away.
    UNLOADING_GUEST_DRIVER = 47,
    /// `GET_GSP_STATIC_INFO`: the GPU's static configuration.
    GET_GSP_STATIC_INFO = 65,
    /// `CONTINUATION_RECORD`: the next chunk of an RPC too large for one element.
    CONTINUATION_RECORD = 71,
    /// `GSP_SET_SYSTEM_INFO`: the system information the GSP boots with.
    GSP_SET_SYSTEM_INFO = 72,
    /// `SET_REGISTRY`: the registry keys the GSP boots with.
    SET_REGISTRY = 73,
    /// `GSP_RM_CONTROL`: a resource-manager control call on a firmware object.
    GSP_RM_CONTROL = 76,
    /// `GSP_INIT_DONE` (event): the GSP finished booting.
    GSP_INIT_DONE = 0x1001,
    /// `GSP_RUN_CPU_SEQUENCER` (event): a sequence of register writes for the CPU to run.
    GSP_RUN_CPU_SEQUENCER = 0x1002,
    /// `POST_EVENT` (event): a resource-manager event notification.
    POST_EVENT = 0x1003,
    /// `RC_TRIGGERED` (event): a channel needs robust-channel recovery.
    RC_TRIGGERED = 0x1004,
    /// `MMU_FAULT_QUEUED` (event): an MMU fault awaits servicing.
    MMU_FAULT_QUEUED = 0x1005,
    /// `OS_ERROR_LOG` (event): an error line of the GSP's log.
    OS_ERROR_LOG = 0x1006,
    /// `UCODE_LIBOS_PRINT` (event): a line of the GSP's log.
    UCODE_LIBOS_PRINT = 0x100c,
    /// `PERF_BRIDGELESS_INFO_UPDATE` (event): the bridgeless multi-GPU link changed.
    PERF_BRIDGELESS_INFO_UPDATE = 0x100f,
    /// `GSP_LOCKDOWN_NOTICE` (event): the GSP entered or left lockdown.
    GSP_LOCKDOWN_NOTICE = 0x101c,
    /// `GSP_POST_NOCAT_RECORD` (event): a crash-telemetry (NOCAT) record.
    GSP_POST_NOCAT_RECORD = 0x1020,
}

impl MsgFunction {
    /// The first event number (`NV_VGPU_MSG_EVENT_FIRST_EVENT`).
    const FIRST_EVENT: u32 = 0x1000;

    /// Returns the function's r570 name for logs, or `"UNKNOWN"`.
    pub const fn name(self) -> &'static str {
        match self.r570_name() {
            Some(name) => name,
            None => "UNKNOWN",
        }
    }

    /// Returns whether the function is one of r570's.
    pub(crate) const fn is_r570(self) -> bool {
        self.r570_name().is_some()
    }

    /// Returns whether the function is an r570 event, sent unasked.
    pub const fn is_event(self) -> bool {
        self.0 >= Self::FIRST_EVENT && self.is_r570()
    }
}

impl From<MsgFunction> for u32 {
    fn from(function: MsgFunction) -> Self {
        function.0
    }
}

impl TryFrom<u32> for MsgFunction {
    type Error = Error;

    /// Returns the r570 function numbered `value`.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if `value` is none of r570's functions.
    fn try_from(value: u32) -> Result<Self> {
        match Self(value).is_r570() {
            true => Ok(Self(value)),
            false => Err(EINVAL),
        }
    }
}

impl core::fmt::Debug for MsgFunction {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.r570_name() {
            Some(name) => f.write_str(name),
            None => write!(f, "MsgFunction({:#x})", self.0),
        }
    }
}

/// The `header_version` of an RPC header.
#[bitfield(u32)]
#[derive(PartialEq, Eq)]
pub(crate) struct RpcHeaderVersion {
    #[bits(16)]
    __: u16,
    /// Minor version.
    #[bits(8)]
    pub(crate) minor: u8,
    /// Major version.
    #[bits(8)]
    pub(crate) major: u8,
}

/// The header version this implementation speaks: 3.0 (`rpc_message_header_v03_00`).
pub(crate) const RPC_HEADER_VERSION: RpcHeaderVersion = RpcHeaderVersion::new().with_major(3);

/// The writer's header of a queue (`msgqTxHeader`).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub(crate) struct MsgqTxHeader {
    /// Protocol version, [`MSGQ_VERSION`].
    pub(crate) version: u32,
    /// Size of the whole [`Msgq`].
    pub(crate) size: u32,
    /// Size of a slot.
    pub(crate) msg_size: u32,
    /// Number of slots.
    pub(crate) msg_count: u32,
    /// The writer's pointer: the next slot it will fill.
    pub(crate) write_ptr: u32,
    /// Flags, [`MSGQ_TX_FLAGS`].
    pub(crate) flags: u32,
    /// Offset of the rx header inside the [`Msgq`].
    pub(crate) rx_hdr_off: u32,
    /// Offset of the first slot inside the [`Msgq`].
    pub(crate) entry_off: u32,
}

impl MsgqTxHeader {
    /// Returns the header as the driver initialises it, with the write pointer at 0.
    pub(crate) const fn new() -> Self {
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
pub(crate) struct MsgqRxHeader {
    /// The reader's pointer: the next slot it will consume.
    pub(crate) read_ptr: u32,
}

/// Bytes of one ring (63 slots).
pub const RING_BYTES: usize = u32_as_usize(MSGQ_NUM_PAGES) * GSP_PAGE_SIZE;

/// The slots of a queue.
#[repr(C, align(4096))]
#[derive(FromBytes, IntoBytes, Immutable)]
pub(crate) struct MsgqData {
    /// The slots.
    ///
    /// One byte array, so a multi-slot element is contiguous.
    pub(crate) data: [u8; RING_BYTES],
}

/// Bytes between the rx header and the first slot.
const MSGQ_HEADER_PAD: usize =
    GSP_PAGE_SIZE - core::mem::size_of::<MsgqTxHeader>() - core::mem::size_of::<MsgqRxHeader>();

/// One queue: headers and slots.
#[repr(C)]
#[derive(FromBytes, IntoBytes, Immutable)]
pub struct Msgq {
    /// The writer's header.
    pub(crate) tx: MsgqTxHeader,
    /// The reader's header.
    pub(crate) rx: MsgqRxHeader,
    _pad: [u8; MSGQ_HEADER_PAD],
    /// The slots.
    pub(crate) msgq: MsgqData,
}

/// The memory shared with the GSP: the self-mapping PTE page and the two queues, which
/// the other side addresses by byte offset ([`CPUQ_OFFSET`], [`slot_offset`], …).
#[repr(C)]
#[derive(FromBytes, IntoBytes, Immutable)]
pub struct GspMem {
    /// Bus addresses of the pages of this structure.
    pub(crate) ptes: [u64; GSP_PTE_COUNT],
    /// CPU -> GSP.
    pub(crate) cpuq: Msgq,
    /// GSP -> CPU.
    pub(crate) gspq: Msgq,
}

// SAFETY: zerocopy's `FromBytes` derive above proves every bit pattern of `GspMem` valid.
unsafe impl kernel::transmute::FromBytes for GspMem {}
// SAFETY: zerocopy's `IntoBytes` derive above proves `GspMem` has no padding.
unsafe impl kernel::transmute::AsBytes for GspMem {}

// SAFETY: zerocopy's `FromBytes` derive above proves every bit pattern of `MsgqTxHeader`
// valid.
unsafe impl kernel::transmute::FromBytes for MsgqTxHeader {}
// SAFETY: zerocopy's `IntoBytes` derive above proves it has no padding.
unsafe impl kernel::transmute::AsBytes for MsgqTxHeader {}

/// Byte offset of the PTE page in [`GspMem`].
pub const PTES_OFFSET: usize = core::mem::offset_of!(GspMem, ptes);
/// Byte offset of `cpuq` in [`GspMem`] (`cmdQueueOffset` of the GSP init arguments).
pub const CPUQ_OFFSET: usize = core::mem::offset_of!(GspMem, cpuq);
/// Byte offset of `gspq` in [`GspMem`] (`statQueueOffset`).
pub const GSPQ_OFFSET: usize = core::mem::offset_of!(GspMem, gspq);
/// Byte offset of the tx header's `write_ptr` inside a queue.
pub const MSGQ_WRITE_PTR_OFFSET: usize =
    core::mem::offset_of!(Msgq, tx) + core::mem::offset_of!(MsgqTxHeader, write_ptr);
/// Byte offset of the rx header's `read_ptr` inside a queue.
pub const MSGQ_READ_PTR_OFFSET: usize =
    core::mem::offset_of!(Msgq, rx) + core::mem::offset_of!(MsgqRxHeader, read_ptr);
/// Byte offset of the first slot inside a queue.
const MSGQ_DATA_OFFSET: usize = core::mem::offset_of!(Msgq, msgq);

/// Returns the byte offset of slot `slot` inside a queue.
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
const_assert_eq!(MSGQ_WRITE_PTR_OFFSET, 0x10);
const_assert_eq!(MSGQ_READ_PTR_OFFSET, 0x20);
const_assert_eq!(slot_offset(62), 0x1000 + 62 * 0x1000);
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
    /// `RPC_HEADER_VERSION`, 3.0.
    pub header_version: u32,
    /// `"VRPC"`.
    pub signature: u32,
    /// This header plus this element's chunk, in bytes.
    pub length: u32,
    /// The function number: a [`MsgFunction`].
    pub function: u32,
    /// `0xffffffff` on send; the result ([`NV_OK`] = 0) in a reply.
    pub rpc_result: u32,
    /// As `rpc_result`.
    pub rpc_result_private: u32,
    /// The RPC's sequence number; a reply carries its command's.
    pub sequence: u32,
    /// Unused (`cpuRmGfid`).
    pub spare: u32,
}

/// The header of a queue element (`GSP_MSG_QUEUE_ELEMENT`) with its RPC header, built by
/// [`GspMsgElement::new`] and [`GspMsgElement::seal`].
#[repr(C, align(8))]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct GspMsgElement {
    /// Zero (confidential computing only).
    pub auth_tag_buffer: [u8; 16],
    /// Zero (confidential computing only).
    pub aad_buffer: [u8; 16],
    /// Makes the XOR-fold of the element zero.
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
    /// Returns the payload length `rpc.length` announces: this element's chunk.
    ///
    /// `None` if `rpc.length` is shorter than the RPC header.
    pub fn rpc_payload_len(&self) -> Option<usize> {
        usize::from_safe_cast(self.rpc.length).checked_sub(RPC_HEADER_SIZE)
    }
}
