// SPDX-License-Identifier: GPL-2.0

//! The GPU System Processor: its command queue and its bring-up.

pub mod ce;
pub mod cmdq;
pub mod commands;
pub mod events;
pub mod fw;
pub mod regs;
pub mod sequencer;

use kernel::{
    device::{
        Bound,
        Device, //
    },
    dma::{
        Coherent,
        CoherentBox, //
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
        NoReply,
        Skip, //
    },
    commands::{
        GetGspStaticInfo,
        GspInitDone,
        GspSetSystemInfo,
        GspStaticConfigInfo,
        PciFunction,
        SetRegistry, //
    },
    fw::{
        GspArgumentsCached,
        MsgFunction, //
    },
    regs::{
        Bar0Registers,
        Doorbell, //
    },
    sequencer::{
        RunCpuSequencer,
        SequencerDone, //
    },
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
    /// The boot arguments left for the GSP (r570's `GSP_ARGUMENTS_CACHED`): where its
    /// queues are. The firmware finds them there; so does the virtual GSP
    /// (`vgsp::Vgsp::locate`).
    pub args: Coherent<GspArgumentsCached>,
    /// Lines of the GSP's log received so far.
    pub log_lines: usize,
}

impl Gsp {
    /// Allocates the shared memory, initialises the queues, and fills the boot arguments
    /// that name them.
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if the memory cannot be had.
    pub fn new(dev: &Device<Bound>) -> Result<Self> {
        let cmdq = Cmdq::new(dev)?;
        let mut args = CoherentBox::<GspArgumentsCached>::zeroed(dev, GFP_KERNEL)?;
        *args = GspArgumentsCached::new(cmdq.gsp_mem().dma_address());
        Ok(Self {
            cmdq,
            args: args.into(),
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
        let msg = self.next_message(&mut Budget::new(timeout))?;
        self.cmdq.read_msg(&msg)
    }

    /// Receives messages within `budget` until one that is not a log event arrives, and
    /// logs it. Log events that arrive meanwhile are printed.
    ///
    /// # Errors
    ///
    /// As [`Gsp::wait_for`].
    fn next_message(&mut self, budget: &mut Budget) -> Result<GspMessage> {
        let log_lines = &mut self.log_lines;
        let msg = self.cmdq.receive_any_skipping(budget, |msg| {
            if handle_event(log_lines, msg) {
                return Skip::Handled;
            }
            // The events the bring-up waits for are returned; any other is passed over
            // (and counted: its function has no handler, or it would not be here).
            let awaited = matches!(
                msg.function(),
                Ok(MsgFunction::GspInitDone | MsgFunction::GspRunCpuSequencer)
            );
            if events::is_event(msg) && !awaited {
                Skip::PassOver
            } else {
                Skip::Take
            }
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
        Ok(msg)
    }

    /// Runs the CPU sequence of `msg` (`GSP_RUN_CPU_SEQUENCER`) against `bar` and answers
    /// the GSP with its outcome ([`sequencer`]). A refused sequence is answered too, and
    /// logged; it does not fail the bring-up, which the GSP decides.
    ///
    /// # Errors
    ///
    /// - Any error of [`Cmdq::read_msg`] (a message shorter than its header).
    /// - Any error of sending the answer.
    pub fn run_cpu_sequencer<B: Doorbell + Bar0Registers>(
        &mut self,
        bar: &B,
        msg: &GspMessage,
    ) -> Result<sequencer::SeqOutcome> {
        let seq: RunCpuSequencer = self.cmdq.read_msg(msg)?;
        let outcome = sequencer::run(bar, &seq);
        match (outcome.result, outcome.failed_at) {
            (Ok(()), _) => pr_info!("gsp: CPU sequence of {} commands run\n", outcome.executed),
            (Err(e), at) => pr_warn!(
                "gsp: CPU sequence refused at command {}: {:?}\n",
                at.unwrap_or(outcome.executed),
                e
            ),
        }
        self.send_command_no_wait(bar, SequencerDone::from(&outcome))?;
        Ok(outcome)
    }

    /// Runs the bring-up sequence: system information (filled from `pci` by
    /// [`GspSetSystemInfo::new`]) and registry to the GSP, wait for `GSP_INIT_DONE`
    /// (running the CPU sequences the GSP asks for meanwhile, against `bar`), then query
    /// the static configuration.
    ///
    /// # Errors
    ///
    /// - `ETIMEDOUT` if the GSP does not answer within [`BOOT_TIMEOUT`].
    /// - `EIO` if `GSP_INIT_DONE` reports a failure, or any receive error.
    pub fn boot<B: Doorbell + Bar0Registers>(
        &mut self,
        bar: &B,
        pci: &PciFunction,
    ) -> Result<GspStaticConfigInfo> {
        self.send_command_no_wait(bar, GspSetSystemInfo::new(pci))?;
        self.send_command_no_wait(bar, SetRegistry::new(BOOT_REGISTRY)?)?;
        let mut budget = Budget::new(BOOT_TIMEOUT);
        let done: GspInitDone = loop {
            let msg = self.next_message(&mut budget)?;
            if msg.function() == Ok(MsgFunction::GspRunCpuSequencer) {
                self.run_cpu_sequencer(bar, &msg)?;
                continue;
            }
            break self.cmdq.read_msg(&msg)?;
        };
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
