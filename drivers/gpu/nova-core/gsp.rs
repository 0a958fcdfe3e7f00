// SPDX-License-Identifier: GPL-2.0

//! The GPU System Processor: its command queue and its bring-up.

pub mod ce;
pub mod cmdq;
pub mod commands;
pub mod fw;
pub mod regs;

use kernel::{
    device::{
        Bound,
        Device, //
    },
    prelude::*,
    time::Delta, //
};

use crate::gsp::{
    cmdq::{
        Budget,
        Cmdq,
        CommandToGsp,
        GspMessage,
        MessageFromGsp,
        NoReply, //
    },
    commands::{
        GetGspStaticInfo,
        GspInitDone,
        GspSetSystemInfo,
        GspStaticConfigInfo,
        PciFunction,
        SetRegistry, //
    },
    fw::MsgFunction,
    regs::Doorbell,
};

/// How long the bring-up waits for each answer of the GSP.
pub const BOOT_TIMEOUT: Delta = Delta::from_secs(5);

/// The registry keys the driver hands the GSP at boot: upstream's (which adds
/// `RMSetSriovMode` only when vGPU is enabled, which this driver does not do).
pub const BOOT_REGISTRY: &[(&str, u32)] = &[
    ("RMSecBusResetEnable", 1),
    ("RMForcePcieConfigSave", 1),
    ("RMDevidCheckIgnore", 1),
];

/// The GSP as the driver sees it.
pub struct Gsp {
    /// The command queue.
    pub cmdq: Cmdq,
    /// Lines of the GSP's log received so far.
    pub log_lines: usize,
}

impl Gsp {
    /// Allocates the shared memory and initialises the queues.
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if the memory cannot be had.
    pub fn new(dev: &Device<Bound>) -> Result<Self> {
        Ok(Self {
            cmdq: Cmdq::new(dev)?,
            log_lines: 0,
        })
    }

    /// Sends `command` and waits for its reply, printing the log events that arrive
    /// meanwhile; the whole wait ends within [`Cmdq::RECEIVE_TIMEOUT`].
    ///
    /// # Errors
    ///
    /// As [`Cmdq::post`] and [`Gsp::wait_for`].
    pub fn send_command<M>(&mut self, bar: &impl Doorbell, command: M) -> Result<M::Reply>
    where
        M: CommandToGsp,
        M::Reply: MessageFromGsp,
    {
        self.post(bar, &command)?;
        self.wait_for(Cmdq::RECEIVE_TIMEOUT)
    }

    /// Sends `command`, which the GSP does not answer.
    ///
    /// # Errors
    ///
    /// As [`Cmdq::post`].
    pub fn send_command_no_wait<M>(&mut self, bar: &impl Doorbell, command: M) -> Result
    where
        M: CommandToGsp<Reply = NoReply>,
    {
        self.post(bar, &command).map(|_| ())
    }

    /// Posts `command` and logs it.
    fn post<M: CommandToGsp>(&mut self, bar: &impl Doorbell, command: &M) -> Result<u32> {
        let seq = self.cmdq.post(bar, command)?;
        pr_info!(
            "gsp: -> {} ({}) sequence={} len={}\n",
            M::FUNCTION.name(),
            u32::from(M::FUNCTION),
            seq,
            command.size()
        );
        Ok(seq)
    }

    /// Receives messages until one that is not a log event arrives, and decodes it as `M`.
    /// Log events that arrive meanwhile are printed; the whole wait ends within
    /// `timeout`, however many of them arrive.
    ///
    /// # Errors
    ///
    /// - `ETIMEDOUT` if no other message arrives within `timeout`.
    /// - Any other error of [`Cmdq::receive_msg`].
    pub fn wait_for<M: MessageFromGsp>(&mut self, timeout: Delta) -> Result<M> {
        let log_lines = &mut self.log_lines;
        let msg = self
            .cmdq
            .receive_any_skipping(&mut Budget::new(timeout), |msg| {
                handle_event(log_lines, msg)
            })?;
        pr_info!(
            "gsp: <- {} ({}) seq={} sequence={} len={} elems={} result={}\n",
            msg.function().map_or("UNKNOWN", MsgFunction::name),
            msg.function,
            msg.seq_num,
            msg.sequence,
            msg.payload.len(),
            msg.elem_count,
            msg.rpc_result
        );
        self.cmdq.read_msg(&msg)
    }

    /// Runs the bring-up sequence: system information (filled from `pci` by
    /// [`GspSetSystemInfo::new`]) and registry to the GSP, wait for `GSP_INIT_DONE`, then
    /// query the static configuration.
    ///
    /// # Errors
    ///
    /// - `ETIMEDOUT` if the GSP does not answer within [`BOOT_TIMEOUT`].
    /// - `EIO` if `GSP_INIT_DONE` reports a failure, or any receive error.
    pub fn boot(&mut self, bar: &impl Doorbell, pci: &PciFunction) -> Result<GspStaticConfigInfo> {
        self.send_command_no_wait(bar, GspSetSystemInfo::new(pci))?;
        self.send_command_no_wait(bar, SetRegistry::new(BOOT_REGISTRY)?)?;
        let done: GspInitDone = self.wait_for(BOOT_TIMEOUT)?;
        if done.status != crate::gsp::fw::NV_OK {
            return Err(EIO);
        }
        let info = self.send_command(bar, GetGspStaticInfo::new())?;
        pr_info!(
            "gsp: GPU \"{}\", {} MiB of frame buffer in {} usable region(s)\n",
            info.gpu_name(),
            info.fb_length >> 20,
            info.usable_fb_regions().count()
        );
        Ok(info)
    }
}

/// Handles `msg` if it is an unasked log event, counting it in `log_lines`; returns
/// whether it was one.
fn handle_event(log_lines: &mut usize, msg: &GspMessage) -> bool {
    match msg.function() {
        Ok(function @ (MsgFunction::UcodeLibosPrint | MsgFunction::OsErrorLog)) => {
            *log_lines += 1;
            let text = core::str::from_utf8(&msg.payload).unwrap_or("<binary>");
            pr_info!(
                "gsp: <- {} seq={}: {}\n",
                function.name(),
                msg.seq_num,
                text.trim_end()
            );
            true
        }
        _ => false,
    }
}
