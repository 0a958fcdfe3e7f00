// SPDX-License-Identifier: GPL-2.0

//! The `echo` check `cargo xtask upstream` runs on the tree's queue (ours): bring-up with
//! upstream's own commands, then RM controls of 1 B to 200 KiB through upstream's
//! `Cmdq::send_command`, every reply checked byte for byte.
//!
//! The vehicle is r570's `GSP_RM_CONTROL`: upstream's `MsgFunction` knows only real
//! functions, and an RM control's header carries its parameters' size, so the firmware
//! (here the virtual GSP) knows where a command split into continuation records ends. The
//! virtual GSP answers two controls of the project's: `VGSP_CTRL_CMD_DIGEST` with the
//! length and hash of the parameters it received (a one-element reply whatever the
//! command's size), and `VGSP_CTRL_CMD_ECHO` with the parameters themselves.

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
use nova_testbench::rpc::params_digest;
use zerocopy::IntoBytes as _;

use vgsp::{
    VGSP_CTRL_CMD_DIGEST,
    VGSP_CTRL_CMD_ECHO, //
};

use crate::{
    bench::with_gsp,
    gpu::Chipset,
    gsp::{
        cmdq::{
            CommandToGsp,
            MessageFromGsp, //
        },
        commands::{
            wait_gsp_init_done,
            GetGspStaticInfo,
            SetRegistry,
            SetSystemInfo, //
        },
        fw::MsgFunction,
    },
    sbuffer::SBufferIter,
    vgpu::VgpuState,
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

/// An RM control of the virtual GSP's: `params` sent, to come back as they are
/// ([`VGSP_CTRL_CMD_ECHO`]) or as their digest ([`VGSP_CTRL_CMD_DIGEST`]).
pub(crate) struct RmEcho<'a> {
    pub(crate) cmd: u32,
    pub(crate) params: &'a [u8],
}

impl<'a> RmEcho<'a> {
    /// The echo control of `params` ([`VGSP_CTRL_CMD_ECHO`]).
    pub(crate) const fn echo(params: &'a [u8]) -> Self {
        Self {
            cmd: VGSP_CTRL_CMD_ECHO,
            params,
        }
    }
}

impl CommandToGsp for RmEcho<'_> {
    const FUNCTION: MsgFunction = MsgFunction::GspRmControl;
    type Command = Header;
    type Reply = RmEchoReply;
    type InitError = Infallible;

    fn init(&self) -> impl Init<Header, Infallible> {
        Header(RmControlHeader {
            cmd: self.cmd,
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
    pub(crate) status: u32,
    pub(crate) announced: u32,
    pub(crate) params: KVec<u8>,
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
    /// Checks made: one digest per size, and one echo per size whose reply fits one
    /// element.
    pub sent: usize,
    /// Checks whose reply came back byte for byte.
    pub matched: usize,
    /// One line per check that did not, and per reply split into continuation records
    /// that did not reach the caller whole (a finding, not an echo failure).
    pub findings: Vec<std::string::String>,
}

/// Returns a payload of `len` bytes, a pattern that differs for each `seed`.
fn pattern(len: usize, seed: usize) -> Vec<u8> {
    // CAST: the pattern keeps the low byte on purpose.
    (0..len).map(|i| (i * 31 + seed * 7 + 1) as u8).collect()
}

/// Sends `cmd` with `params` through upstream's `send_command`; returns "ok" if the reply
/// is `NV_OK` with `want`, byte for byte, or what was wrong.
fn check(
    cmdq: &crate::gsp::cmdq::Cmdq,
    bar: crate::driver::Bar0<'_>,
    cmd: u32,
    params: &[u8],
    want: &[u8],
) -> std::string::String {
    match cmdq.send_command(bar, RmEcho { cmd, params }) {
        Ok(reply) if reply.status == NV_OK && reply.params[..] == *want => "ok".into(),
        Ok(reply) if reply.params.len() < want.len() => std::format!(
            "the reply reached the caller with {} of its {} bytes (announced {})",
            reply.params.len(),
            want.len(),
            reply.announced
        ),
        Ok(reply) => std::format!(
            "the reply differs (status {:#x}, {} bytes, first at byte {:?})",
            reply.status,
            reply.params.len(),
            reply.params.iter().zip(want).position(|(a, b)| a != b)
        ),
        Err(e) => std::format!("send_command returned {e:?}"),
    }
}

/// The PCI function the bring-up's `SetSystemInfo` describes: the virtual GPU's.
fn pci_function() -> kernel::pci::Device<kernel::device::Bound> {
    let f = vgsp::PCI_FUNCTION;
    let mut resources = [(0, 0); kernel::pci::CONFIG_RESOURCES];
    for (bar, start) in [(0, f.bar0), (1, f.bar1), (3, f.bar3)] {
        resources[bar] = (start, 0x100_0000);
    }
    let [bus, devfn] = f.bus_dev_fn.to_be_bytes();
    kernel::pci::Device::new(
        kernel::device::Device::new("upstream-gpu"),
        kernel::pci::Config {
            vendor_id: f.vendor_id,
            device_id: f.device_id,
            subsystem_vendor_id: f.subsystem_vendor_id,
            subsystem_device_id: f.subsystem_id,
            revision_id: f.revision_id,
            bus,
            devfn,
            resources,
        },
    )
}

/// Brings the GSP up with upstream's own commands (`gsp/commands.rs`), as its boot does:
/// `SetSystemInfo` and `SetRegistry`, the wait for `GSP_INIT_DONE`, then
/// `GetGspStaticInfo`, whose reply must name the virtual GPU. Returns "ok" or what failed.
fn bring_up(cmdq: &crate::gsp::cmdq::Cmdq, bar: crate::driver::Bar0<'_>) -> std::string::String {
    let pdev = pci_function();
    let steps = || -> core::result::Result<(), std::string::String> {
        let err = |what: &'static str| move |e: Error| std::format!("{what}: {e:?}");
        cmdq.send_command_no_wait(bar, SetSystemInfo::new(&pdev, Chipset::GB202))
            .map_err(err("SetSystemInfo"))?;
        let registry = SetRegistry::new(VgpuState::Disabled).map_err(err("SetRegistry::new"))?;
        cmdq.send_command_no_wait(bar, registry)
            .map_err(err("SetRegistry"))?;
        wait_gsp_init_done(cmdq).map_err(err("GSP_INIT_DONE"))?;
        let info = cmdq
            .send_command(bar, GetGspStaticInfo)
            .map_err(err("GetGspStaticInfo"))?;
        match info.gpu_name() {
            Ok(name) if name == vgsp::GPU_NAME => Ok(()),
            other => Err(std::format!("the static information names {other:?}")),
        }
    };
    steps().err().unwrap_or_else(|| "ok".into())
}

/// The payload sizes of [`ordering_workload`]'s echo controls, in turn: replies of one
/// slot and of several, all within one element (the tree's receive path need not
/// reassemble anything).
const ORDERING_SIZES: &[usize] = &[1, 100, 4096, 8000, 7];

/// How many echo controls [`ordering_workload`] sends: enough that both rings wrap more
/// than twice, so every slot is reused.
const ORDERING_COMMANDS: usize = 120;

/// The workload `cargo xtask upstream ordering` traces: bring-up with upstream's own
/// commands, then [`ORDERING_COMMANDS`] echo controls through upstream's
/// `Cmdq::send_command`, the GSP on a thread of its own. Returns how many replies matched
/// out of how many commands, the bring-up included.
///
/// # Errors
///
/// - `ENOMEM` if the bench cannot be had; the GSP's own error.
pub fn ordering_workload() -> Result<(usize, usize)> {
    let ((matched, sent), stats) = with_gsp(0, |cmdq, bar| {
        let booted = bring_up(cmdq, bar.io());
        if booted != "ok" {
            println!("ordering: bring-up: {booted}");
            return (0, 1);
        }
        let mut matched = 1;
        for n in 0..ORDERING_COMMANDS {
            let params = pattern(ORDERING_SIZES[n % ORDERING_SIZES.len()], n);
            let echoed = check(cmdq, bar.io(), VGSP_CTRL_CMD_ECHO, &params, &params);
            if echoed == "ok" {
                matched += 1;
            } else {
                println!("ordering: echo {n}: {echoed}");
            }
        }
        (matched, ORDERING_COMMANDS + 1)
    })?;
    stats?;
    Ok((matched, sent))
}

/// Sends each of [`ECHO_SIZES`] through upstream's `Cmdq::send_command` against the
/// virtual GSP and checks every reply byte for byte, printing one line per size:
///
/// - as a digest control: the reply (16 bytes, one element) carries the length and hash of
///   what the GSP received, so a command of any size is checked whole;
/// - as an echo control: the reply carries the bytes themselves. A reply above one element
///   is split into continuation records, which 7.3's receive path does not reassemble:
///   such a reply that does not reach the caller whole is a finding about the tree's
///   receive path, not an echo failure.
///
/// # Errors
///
/// - `ENOMEM` if the bench cannot be had; the GSP's own error.
pub fn echo() -> Result<EchoOutcome> {
    let mut outcome = EchoOutcome {
        sent: 0,
        matched: 0,
        findings: Vec::new(),
    };
    // Bring-up, then every command, and every reply of one element, on one queue.
    let (checked, stats) = with_gsp(0, |cmdq, bar| -> Result {
        let booted = bring_up(cmdq, bar.io());
        println!("echo: bring-up: {booted}");
        outcome.sent += 1;
        outcome.matched += usize::from(booted == "ok");
        if booted != "ok" {
            outcome
                .findings
                .push(std::format!("echo: bring-up: {booted}"));
            return Ok(());
        }
        for (seed, &len) in ECHO_SIZES.iter().enumerate() {
            let params = pattern(len, seed);
            let digest = params_digest(&params)?;
            let sent = check(
                cmdq,
                bar.io(),
                VGSP_CTRL_CMD_DIGEST,
                &params,
                digest.as_bytes(),
            );
            println!("echo: {len:>7} B command: {sent} (its digest)");
            outcome.sent += 1;
            outcome.matched += usize::from(sent == "ok");
            if sent != "ok" {
                let finding = std::format!("echo: the {len} B command: {sent}");
                outcome.findings.push(finding);
            }
            if len <= ONE_ELEMENT {
                let echoed = check(cmdq, bar.io(), VGSP_CTRL_CMD_ECHO, &params, &params);
                println!("echo: {len:>7} B reply: {echoed}");
                outcome.sent += 1;
                outcome.matched += usize::from(echoed == "ok");
                if echoed != "ok" {
                    let finding = std::format!("echo: the {len} B reply: {echoed}");
                    outcome.findings.push(finding);
                }
            }
        }
        Ok(())
    })?;
    checked?;
    let stats = stats?;
    println!(
        "echo: the GSP handled {} commands in {} elements ({} continuation records in, {} out)",
        stats.commands, stats.elements_in, stats.continuations_in, stats.continuations_out
    );
    // Each reply split into continuation records on a queue of its own: a tree that
    // cannot take one may leave its queue unusable.
    for (seed, &len) in ECHO_SIZES
        .iter()
        .enumerate()
        .filter(|(_, &l)| l > ONE_ELEMENT)
    {
        let params = pattern(len, seed);
        let (echoed, stats) = with_gsp(0, |cmdq, bar| {
            check(cmdq, bar.io(), VGSP_CTRL_CMD_ECHO, &params, &params)
        })?;
        stats?;
        println!("echo: {len:>7} B reply, split into continuation records: {echoed}");
        if echoed != "ok" {
            outcome.findings.push(std::format!(
                "echo: the {len} B reply, split into continuation records (the tree's receive path): {echoed}"
            ));
        }
    }
    Ok(outcome)
}
