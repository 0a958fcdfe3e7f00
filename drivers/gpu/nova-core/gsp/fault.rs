// SPDX-License-Identifier: GPL-2.0

//! The faults of the message queues: why a receive refused the ring, an element or a
//! message.
//!
//! [`Fault`] is the one list: each variant is a class with its errno, its reason for
//! logs and tests, and what the receive consumes for it. The element checks both sides
//! share (`gsp::fw::element`) return the element classes; the tests iterate
//! [`Fault::ALL`]. A new class is one variant here and the check that finds it.

use kernel::prelude::*;

/// What a receive consumes of the ring for a [`Fault`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Consumes {
    /// Nothing: the ring's own fault, or the wait's.
    Nothing,
    /// The element refused, its `elemCount` slots.
    Element,
    /// Every published slot: an element that cannot be delimited has no better end.
    Published,
    /// The element refused and the message it continues.
    Message,
}

/// What can cause a [`Fault`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The GSP: what it writes, or its silence. Each such fault has its own test case
    /// (`nova_core_gsp_cmdq_errors`, and the upstream harness's `hostile` check).
    Gsp,
    /// The driver's own state: its memory, its mapping of the rings, or another wait.
    Driver,
}

/// Defines [`Fault`] and its accessors from one list, so [`Fault::ALL`] misses none.
macro_rules! faults {
    (
        $(
            $(#[$doc:meta])*
            $name:ident => ($errno:ident, $consumes:ident, $origin:ident, $reason:literal),
        )*
    ) => {
        /// Why a receive refused the ring, an element or a message.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Fault {
            $($(#[$doc])* $name,)*
        }

        impl Fault {
            /// Every fault, in the order of the list.
            pub const ALL: &'static [Self] = &[$(Self::$name,)*];

            /// Returns the errno a receive returns for it (outside the crate:
            /// `Error::from`).
            pub(crate) const fn errno(self) -> Error {
                match self {
                    $(Self::$name => $errno,)*
                }
            }

            /// Returns what a receive consumes of the ring for it.
            pub const fn consumes(self) -> Consumes {
                match self {
                    $(Self::$name => Consumes::$consumes,)*
                }
            }

            /// Returns what can cause it.
            pub const fn origin(self) -> Origin {
                match self {
                    $(Self::$name => Origin::$origin,)*
                }
            }

            /// Returns the reason in a few words, as logs and tools print it (outside the
            /// crate: its `Display`).
            pub(crate) const fn reason(self) -> &'static str {
                match self {
                    $(Self::$name => $reason,)*
                }
            }
        }
    };
}

faults! {
    /// Nothing arrived in time (a GSP that stopped or never answers).
    NothingPublished => (ETIMEDOUT, Nothing, Gsp, "nothing published in time"),
    /// Only messages for others arrived in time (events while a reply is awaited).
    OnlyOthersArrived => (ETIMEDOUT, Nothing, Gsp, "only other messages arrived in time"),
    /// Only messages the wait skips arrived in time.
    OnlySkippedArrived => (ETIMEDOUT, Nothing, Gsp, "only skipped messages arrived in time"),
    /// Another wait was receiving and delivered nothing for this one in time.
    NothingDelivered => (ETIMEDOUT, Nothing, Driver, "nothing delivered in time"),
    /// The GSP's write pointer is outside the ring (>= 63). Both sides' pointer checks
    /// (`gsp::fw::ring::ring_ptr`) return it, for either pointer.
    PointerOutsideRing => (EIO, Nothing, Gsp, "write pointer outside the ring"),
    /// The GSP's write pointer moved backwards (fewer slots published than before).
    WritePointerBackwards => (EIO, Nothing, Gsp, "write pointer moved backwards"),
    /// The element's `elemCount` is 0.
    ElementCountZero => (EIO, Published, Gsp, "element count 0"),
    /// The element's `elemCount` is above 16.
    ElementCountAbove16 => (EIO, Published, Gsp, "element count above 16"),
    /// The element's `elemCount` is above the published slots (also across the ring end).
    ElementCountBeyondPublished =>
        (EIO, Published, Gsp, "element count beyond the published slots"),
    /// The element's slots lie outside the shared memory: a ring mapped wrongly.
    ElementOutsideSharedMemory => (EIO, Element, Driver, "element outside the shared memory"),
    /// A copy of the element is shorter than its slots: a caller's buffer too short.
    ElementShorterThanSlots => (EIO, Element, Driver, "element shorter than its slots"),
    /// A copy of the element is shorter than its header: a caller's buffer too short.
    ElementShorterThanHeader => (EIO, Element, Driver, "element shorter than its header"),
    /// The copy's `elemCount` is not the count it was delimited by.
    ElementCountChanged => (EIO, Element, Driver, "element count changed"),
    /// The RPC signature is not `VRPC`.
    BadSignature => (EIO, Element, Gsp, "bad RPC signature"),
    /// The RPC header version is not 3.x.
    UnsupportedHeaderVersion => (EIO, Element, Gsp, "unsupported RPC header version"),
    /// `rpc.length` is below the RPC header.
    LengthBelowHeader => (EIO, Element, Gsp, "RPC length below the RPC header"),
    /// `rpc.length` announces more than one element carries.
    LengthBeyondElement => (EIO, Element, Gsp, "RPC length beyond one element"),
    /// `rpc.length` is inconsistent with `elemCount`.
    LengthInconsistent => (EIO, Element, Gsp, "RPC length inconsistent with the element count"),
    /// The checksum does not fold to 0.
    BadChecksum => (EIO, Element, Gsp, "bad checksum"),
    /// The element's sequence number is not after the previous element's.
    SequenceWentBack => (EIO, Element, Gsp, "element sequence number went back"),
    /// A valid continuation record that continues no message (a stray). Not an error:
    /// consumed, skipped and logged; no wait gets its errno.
    ContinuationWithoutHead => (EIO, Element, Gsp, "continuation record without a head"),
    /// A continuation record of another message after a full element. Not an error: it
    /// ends the open message (`gsp::fw::element::Delimiter`) and is a stray
    /// ([`Fault::ContinuationWithoutHead`]).
    ContinuationOfAnotherRpc => (EIO, Element, Gsp, "continuation record of another RPC"),
    /// Continuation records past the largest RPC (4 MiB).
    ContinuationsBeyondLargestRpc =>
        (EIO, Message, Gsp, "continuation records beyond the largest RPC"),
    /// No memory for the element at the read pointer: nothing is consumed, so the receive
    /// may be retried.
    NoMemory => (ENOMEM, Nothing, Driver, "no memory for the message"),
    /// The message is shorter than its reader expects.
    MessageShorterThanExpected => (EIO, Element, Gsp, "message shorter than expected"),
    /// The message's function is unknown. Not an error for a wait, which skips and logs
    /// it; a typed read returns this errno.
    UnknownFunction => (ERANGE, Element, Gsp, "unknown function"),
    /// The message's function is not the one waited for.
    OtherFunction => (ERANGE, Element, Gsp, "function not the one waited for"),
    /// The reply reports an error (a non-zero `rpc_result`).
    ReplyReportsError => (EINVAL, Element, Gsp, "reply reports an error"),
    /// The reply does not decode as its type (the reader's errno; `EIO` here).
    ReplyUndecodable => (EIO, Element, Gsp, "reply does not decode as its type"),
}

impl From<Fault> for Error {
    fn from(fault: Fault) -> Self {
        fault.errno()
    }
}

impl core::fmt::Display for Fault {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.reason())
    }
}
