// SPDX-License-Identifier: GPL-2.0

//! The virtual GSP's own RPCs, which r570 firmware does not have: the test bench's
//! protocol, shared by the virtual GSP (`vgsp`), which serves them, and the suites and
//! benchmarks, which send them.
//!
//! Their function numbers are here ([`VGSP_CE_COPY`], [`VGSP_ECHO`], [`VGSP_SINK`], from
//! `0x0f01`, a range r570 leaves unused), as [`MsgFunction`]s, the driver's function
//! number, which lists r570's alone; so are their structures, and the payloads of the
//! events the virtual GSP sends about its copy engine ([`MmuFault`], [`CopyEvent`]):
//! r570 functions, whose r570 payloads describe channels and GPU faults the virtual GPU
//! does not have.

use kernel::prelude::*;
use nova_core::gsp::{
    cmdq::{
        CommandToGsp,
        MessageFromGsp,
        NoReply, //
    },
    fw::{
        MsgFunction,
        MAX_ELEMENT_PAYLOAD, //
    },
};
use static_assertions::const_assert_eq;
// The derives: see `nova_core::gsp::fw`.
use zerocopy_derive::{
    FromBytes,
    Immutable,
    IntoBytes,
    KnownLayout, //
};

/// `VGSP_CE_COPY`: a copy by the virtual GSP's copy engine, signalled on an `mbarrier`
/// ([`CeCopy`]). Numbered clear of r570's functions.
pub const VGSP_CE_COPY: MsgFunction = MsgFunction(0x0f01);
/// `VGSP_ECHO`: a payload of any size that the virtual GSP sends back ([`Echo`]).
pub const VGSP_ECHO: MsgFunction = MsgFunction(0x0f02);
/// `VGSP_SINK`: like [`VGSP_ECHO`], but answered with an empty reply ([`Sink`]): the
/// benchmark's one-way traffic.
pub const VGSP_SINK: MsgFunction = MsgFunction(0x0f03);

/// Returns the number of elements the driver sends an RPC of `payload_len` bytes as: a
/// head of at most [`MAX_ELEMENT_PAYLOAD`] bytes, then continuation records of as many.
pub const fn element_count_for_rpc(payload_len: usize) -> usize {
    if payload_len <= MAX_ELEMENT_PAYLOAD {
        1
    } else {
        payload_len.div_ceil(MAX_ELEMENT_PAYLOAD)
    }
}

/// An RPC of function `FUNCTION` whose payload is the bytes given, sent as the driver
/// sends any command (`Cmdq::post`): what no typed command can be, malformed and replayed
/// traffic for the suites, the benchmark and the fuzzers. Nothing awaits its reply.
pub struct Raw<'a, const FUNCTION: u32>(pub &'a [u8]);

impl<const FUNCTION: u32> CommandToGsp for Raw<'_, FUNCTION> {
    const FUNCTION: MsgFunction = MsgFunction(FUNCTION);
    type Command = ();
    type Reply = NoReply;

    fn init(&self) {}

    fn variable_payload(&self) -> &[u8] {
        self.0
    }
}

/// The fixed part of [`VGSP_ECHO`] and [`VGSP_SINK`]: the length of the bytes that
/// follow, which is how the GSP knows where a split one ends.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct EchoHeader {
    /// The number of bytes after this header.
    pub length: u32,
    /// Zero; keeps the bytes 8-byte aligned in the element.
    pub reserved: u32,
}

const_assert_eq!(core::mem::size_of::<EchoHeader>(), 0x8);
const_assert_eq!(core::mem::offset_of!(EchoHeader, reserved), 0x4);

impl EchoHeader {
    /// The header of `len` bytes.
    ///
    /// # Errors
    ///
    /// - `EMSGSIZE` if `len` does not fit in 32 bits.
    fn of(len: usize) -> Result<Self> {
        Ok(Self {
            length: u32::try_from(len).map_err(|_| EMSGSIZE)?,
            reserved: 0,
        })
    }
}

/// `VGSP_ECHO`: bytes of any length that the virtual GSP sends back: for tests and
/// benchmarks. The reply's payload is the bytes alone ([`EchoReply`]).
pub struct Echo<'a>(pub &'a [u8]);

impl CommandToGsp for Echo<'_> {
    const FUNCTION: MsgFunction = VGSP_ECHO;
    type Command = EchoHeader;
    type Reply = EchoReply;

    fn init(&self) -> EchoHeader {
        // A longer payload is refused by the send before anything reaches the ring
        // (`MAX_RPC_PAYLOAD` is far below 4 GiB); 0 never passes for it.
        EchoHeader::of(self.0.len()).unwrap_or_default()
    }

    fn variable_payload(&self) -> &[u8] {
        self.0
    }

    /// The bytes alone come back.
    fn reply_len(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

/// The reply to an [`Echo`]: the bytes the virtual GSP sent back.
pub struct EchoReply(pub KVec<u8>);

impl MessageFromGsp for EchoReply {
    const FUNCTION: MsgFunction = VGSP_ECHO;
    type Message = ();

    /// # Errors
    ///
    /// - `ENOMEM` if the bytes cannot be kept.
    fn read(_: &(), rest: &[u8]) -> Result<Self> {
        let mut bytes = KVec::new();
        bytes.extend_from_slice(rest, GFP_KERNEL)?;
        Ok(Self(bytes))
    }
}

/// `VGSP_SINK`: bytes of any length that the virtual GSP consumes and answers with an
/// empty reply ([`SinkReply`]): the benchmark's one-way traffic.
pub struct Sink<'a>(pub &'a [u8]);

impl CommandToGsp for Sink<'_> {
    const FUNCTION: MsgFunction = VGSP_SINK;
    type Command = EchoHeader;
    type Reply = SinkReply;

    fn init(&self) -> EchoHeader {
        // As for `Echo`.
        EchoHeader::of(self.0.len()).unwrap_or_default()
    }

    fn variable_payload(&self) -> &[u8] {
        self.0
    }
}

/// The virtual GSP's answer to a [`Sink`]: an empty payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SinkReply;

impl MessageFromGsp for SinkReply {
    const FUNCTION: MsgFunction = VGSP_SINK;
    type Message = ();

    fn read(_: &(), _: &[u8]) -> Result<Self> {
        Ok(Self)
    }
}

/// The parameters of the virtual GSP's digest control's reply: how many parameter bytes
/// the control carried and their FNV-1a 64-bit hash ([`params_digest`]), a reply of 16
/// bytes whatever the size of the control, so that a driver whose receive path cannot
/// take a reply split into continuation records can still check a large control arrived
/// byte for byte. Not an r570 structure: the virtual GSP's own.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ParamsDigest {
    /// The number of parameter bytes.
    pub length: u32,
    /// Zero.
    pub reserved: u32,
    /// The FNV-1a 64-bit hash of the parameter bytes.
    pub fnv1a64: u64,
}

const_assert_eq!(core::mem::size_of::<ParamsDigest>(), 0x10);
const_assert_eq!(core::mem::offset_of!(ParamsDigest, reserved), 0x4);
const_assert_eq!(core::mem::offset_of!(ParamsDigest, fnv1a64), 0x8);

/// Returns the [`ParamsDigest`] of `params`.
///
/// # Errors
///
/// - `EMSGSIZE` if `params` is 4 GiB or more.
pub fn params_digest(params: &[u8]) -> Result<ParamsDigest> {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0100_0000_01b3;
    let fnv1a64 = params.iter().fold(OFFSET_BASIS, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(PRIME)
    });
    Ok(ParamsDigest {
        length: u32::try_from(params.len()).map_err(|_| EMSGSIZE)?,
        reserved: 0,
        fnv1a64,
    })
}

/// `VGSP_CE_COPY`: asks the (virtual) GSP's copy engine to copy `len` bytes from bus
/// address `src` to bus address `dst` in chunks of `chunk` bytes, reporting each chunk
/// with `complete_tx` on the `mbarrier` whose word is at bus address `barrier`. The GSP
/// acknowledges with an empty reply before the first byte lands.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct CeCopy {
    /// Where the bytes come from.
    pub src: u64,
    /// Where they go.
    pub dst: u64,
    /// The barrier word (8-byte aligned).
    pub barrier: u64,
    /// How many bytes.
    pub len: u32,
    /// Bytes per `complete_tx`.
    pub chunk: u32,
}

const_assert_eq!(core::mem::size_of::<CeCopy>(), 32);

impl CommandToGsp for CeCopy {
    const FUNCTION: MsgFunction = VGSP_CE_COPY;
    type Command = Self;
    type Reply = CeCopyAck;

    fn init(&self) -> Self {
        *self
    }
}

/// The GSP's acknowledgement of a [`CeCopy`], sent before the first byte lands: an empty
/// payload; a copy refused is answered with a non-zero `rpc_result`, which the read of the
/// reply refuses (`EINVAL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CeCopyAck;

impl MessageFromGsp for CeCopyAck {
    const FUNCTION: MsgFunction = VGSP_CE_COPY;
    type Message = ();

    fn read(_: &(), _: &[u8]) -> Result<Self> {
        Ok(Self)
    }
}

/// The payload of the virtual GSP's `MMU_FAULT_QUEUED`: the bus address a DMA of its
/// copy engine could not translate. Not r570's fault buffer entry, which describes a
/// GPU MMU fault the virtual GPU cannot have.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct MmuFault {
    /// The address.
    pub bus: u64,
}

/// The payload of the virtual GSP's `RC_TRIGGERED` (robust-channel recovery) and
/// `POST_EVENT` (a notification): the RPC sequence number of the copy-engine request
/// they are about. Not r570's structures, which name channels the virtual GPU does not
/// have.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct CopyEvent {
    /// The request's `rpc.sequence`.
    pub sequence: u32,
    /// Reserved, 0.
    pub pad: u32,
}

const_assert_eq!(core::mem::size_of::<MmuFault>(), 0x8);
const_assert_eq!(core::mem::size_of::<CopyEvent>(), 0x8);
const_assert_eq!(core::mem::offset_of!(CopyEvent, pad), 0x4);
