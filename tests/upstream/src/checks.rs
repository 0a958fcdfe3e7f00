// SPDX-License-Identifier: GPL-2.0

//! The checks `cargo xtask upstream` runs on the tree's queue (ours).
//!
//! - [`echo`]: echoes of 1 B to 200 KiB through upstream's `Cmdq::send_command`, every
//!   reply checked byte for byte.
//!
//! The vehicle is r570's `GSP_RM_CONTROL`: upstream's `MsgFunction` knows only real
//! functions, and an RM control's header carries its parameters' size, so the firmware
//! (here the virtual GSP) knows where a command split into continuation records ends.
//! The virtual GSP answers the project's echo control (`VGSP_CTRL_CMD_ECHO`) with the
//! parameters sent.

use core::convert::Infallible;

use std::{
    println,
    vec::Vec, //
};

use kernel::{
    prelude::*,
    transmute::{
        AsBytes,
        FromBytes, //
    },
};
use nova_core::gsp::{
    commands::RmControlHeader,
    fw::MAX_ELEMENT_PAYLOAD, //
};
use vgsp::VGSP_CTRL_CMD_ECHO;

use crate::{
    bench::with_gsp,
    gsp::{
        cmdq::{
            CommandToGsp,
            MessageFromGsp, //
        },
        fw::MsgFunction,
    },
    sbuffer::SBufferIter,
};

/// The payload sizes of [`echo`]: the edges of one element, split commands and replies,
/// and the largest.
pub const ECHO_SIZES: &[usize] = &[
    1,
    7,
    100,
    4096,
    ONE_ELEMENT,
    ONE_ELEMENT + 1,
    100 * 1024,
    200 * 1024,
];

/// The most parameters an RM control carries in one element, either way: the element's
/// payload less the control's header.
pub(crate) const ONE_ELEMENT: usize = MAX_ELEMENT_PAYLOAD - core::mem::size_of::<RmControlHeader>();

/// `NV_OK`.
const NV_OK: u32 = 0;

/// The RM control header as upstream's queue wants a command's fixed part: the project's
/// one definition of the wire layout, with the `kernel::transmute` traits upstream's
/// `CommandToGsp::Command` and `MessageFromGsp::Message` require.
#[repr(transparent)]
#[derive(Clone, Copy)]
pub(crate) struct Header(RmControlHeader);

// SAFETY: `RmControlHeader` is `repr(C)` integers without padding (its `IntoBytes`).
unsafe impl AsBytes for Header {}
// SAFETY: every bit pattern is a valid `RmControlHeader` (its `FromBytes`).
unsafe impl FromBytes for Header {}

/// An echo control: `params` sent, to come back.
pub(crate) struct RmEcho<'a> {
    pub(crate) params: &'a [u8],
}

impl CommandToGsp for RmEcho<'_> {
    const FUNCTION: MsgFunction = MsgFunction::GspRmControl;
    type Command = Header;
    type Reply = RmEchoReply;
    type InitError = Infallible;

    fn init(&self) -> impl Init<Header, Infallible> {
        Header(RmControlHeader {
            cmd: VGSP_CTRL_CMD_ECHO,
            // CAST: `ECHO_SIZES` are far below 4 GiB.
            params_size: self.params.len() as u32,
            ..Default::default()
        })
    }

    fn variable_payload_len(&self) -> usize {
        self.params.len()
    }

    fn init_variable_payload(
        &self,
        dst: &mut SBufferIter<core::array::IntoIter<&mut [u8], 2>>,
    ) -> Result {
        dst.write_all(self.params)
    }
}

/// The GSP's answer to an [`RmEcho`]: its status, the size it announced and the bytes
/// that reached the caller.
pub(crate) struct RmEchoReply {
    status: u32,
    announced: u32,
    params: KVec<u8>,
}

impl MessageFromGsp for RmEchoReply {
    const FUNCTION: MsgFunction = MsgFunction::GspRmControl;
    type InitError = Error;
    type Message = Header;

    fn read(
        msg: &Header,
        sbuffer: &mut SBufferIter<core::array::IntoIter<&[u8], 2>>,
    ) -> Result<Self> {
        Ok(Self {
            status: msg.0.status,
            announced: msg.0.params_size,
            params: sbuffer.flush_into_kvec(GFP_KERNEL)?,
        })
    }
}

impl RmEchoReply {
    /// Returns whether the reply is `NV_OK` with `params`, byte for byte.
    pub(crate) fn params_match(&self, params: &[u8]) -> bool {
        self.status == NV_OK && self.params[..] == *params
    }
}

/// What [`echo`] found.
pub struct EchoOutcome {
    /// Echoes sent.
    pub sent: usize,
    /// Echoes whose reply came back byte for byte.
    pub matched: usize,
    /// One line per echo that did not.
    pub findings: Vec<std::string::String>,
}

/// Returns a payload of `len` bytes, a pattern that differs for each `seed`.
fn pattern(len: usize, seed: usize) -> Vec<u8> {
    // CAST: the pattern keeps the low byte on purpose.
    (0..len).map(|i| (i * 31 + seed * 7 + 1) as u8).collect()
}

/// Echoes each of [`ECHO_SIZES`] through upstream's `Cmdq::send_command` against the
/// virtual GSP, checking every reply byte for byte, and prints one line per size.
///
/// # Errors
///
/// - `ENOMEM` if the bench cannot be had; the GSP's own error.
pub fn echo() -> Result<EchoOutcome> {
    let (outcome, stats) = with_gsp(0, |cmdq, bar| {
        let mut outcome = EchoOutcome {
            sent: 0,
            matched: 0,
            findings: Vec::new(),
        };
        for (seed, &len) in ECHO_SIZES.iter().enumerate() {
            let params = pattern(len, seed);
            outcome.sent += 1;
            let verdict = match cmdq.send_command(bar.io(), RmEcho { params: &params }) {
                Ok(reply) if reply.status == NV_OK && reply.params[..] == params[..] => {
                    outcome.matched += 1;
                    "ok".into()
                }
                Ok(reply) if reply.params.len() < params.len() => std::format!(
                    "the reply reached the caller with {} of its {} bytes (announced {})",
                    reply.params.len(),
                    params.len(),
                    reply.announced
                ),
                Ok(reply) => std::format!(
                    "the reply differs (status {:#x}, {} bytes, first at byte {:?})",
                    reply.status,
                    reply.params.len(),
                    reply.params.iter().zip(&params).position(|(a, b)| a != b)
                ),
                Err(e) => std::format!("send_command returned {e:?}"),
            };
            println!("echo: {len:>7} B: {verdict}");
            if verdict != "ok" {
                outcome
                    .findings
                    .push(std::format!("echo of {len} B: {verdict}"));
            }
        }
        outcome
    })?;
    let stats = stats?;
    println!(
        "echo: the GSP handled {} commands in {} elements ({} continuation records in, {} out)",
        stats.commands, stats.elements_in, stats.continuations_in, stats.continuations_out
    );
    Ok(outcome)
}
