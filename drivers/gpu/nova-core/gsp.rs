// SPDX-License-Identifier: GPL-2.0

//! The GPU System Processor: its command queue and its bring-up.

pub mod cmdq;
pub mod commands;
pub mod fault;
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
        EventHandler,
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
        GspMem,
        MsgFunction,
        NV_OK, //
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
pub(crate) const BOOT_TIMEOUT: Delta = Delta::from_secs(5);

/// The registry keys handed to the GSP at boot: upstream's, without vGPU's
/// `RMSetSriovMode`.
pub(crate) const BOOT_REGISTRY: &[(&str, u32)] = &[
    ("RMSecBusResetEnable", 1),
    ("RMForcePcieConfigSave", 1),
    ("RMDevidCheckIgnore", 1),
];

/// Prints the GSP's log events (`UCODE_LIBOS_PRINT`, `OS_ERROR_LOG`) as they come;
/// registered by [`Gsp::new`], counted by [`Gsp::log_lines`].
struct GspLog;

impl EventHandler for GspLog {
    fn handle(&self, msg: &GspMessage) {
        let text = core::str::from_utf8(&msg.payload).unwrap_or("<binary>");
        pr_info!(
            "gsp: <- {} seq={}: {}\n",
            msg.function().name(),
            msg.seq_num,
            text.trim_end()
        );
    }
}

/// The one [`GspLog`]: it keeps no state, so every GSP's queue can use it.
static GSP_LOG: GspLog = GspLog;

/// The events of the GSP's log, which [`GSP_LOG`] handles.
const LOG_FUNCTIONS: [MsgFunction; 2] = [MsgFunction::UCODE_LIBOS_PRINT, MsgFunction::OS_ERROR_LOG];

/// The GSP, shared by reference by the driver's threads.
#[pin_data]
pub struct Gsp {
    /// The command queue.
    #[pin]
    cmdq: Cmdq,
    /// The boot arguments naming the GSP's queues (r570's `GSP_ARGUMENTS_CACHED`), read by
    /// the firmware and by `vgsp::Vgsp::locate`.
    args: Coherent<GspArgumentsCached>,
}

impl Gsp {
    /// Allocates and initialises the queues and their boot arguments, and registers the
    /// log handler.
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if the memory cannot be had.
    pub fn new(dev: &Device<Bound>) -> impl PinInit<Self, Error> + '_ {
        // Allocate both now; the initialiser places them.
        let mem = CoherentBox::<GspMem>::zeroed(dev, GFP_KERNEL).map(Coherent::from);
        let args = mem.as_ref().map_err(|e| *e).and_then(|mem| {
            let mut args = CoherentBox::<GspArgumentsCached>::zeroed(dev, GFP_KERNEL)?;
            *args = GspArgumentsCached::new(mem.dma_address());
            Ok(Coherent::from(args))
        });
        try_pin_init!(Self {
            cmdq <- Cmdq::new_in(dev, mem?),
            args: args?,
        }? Error)
        .pin_chain(|gsp| {
            for function in LOG_FUNCTIONS {
                gsp.cmdq.on_event(function, &GSP_LOG)?;
            }
            Ok(())
        })
    }

    /// Returns the command queue, for a test bench
    /// ([`BenchSeam`](crate::gsp::cmdq::BenchSeam)).
    pub fn cmdq(&self) -> &Cmdq {
        &self.cmdq
    }

    /// Returns the boot arguments naming the GSP's queues.
    pub fn args(&self) -> &Coherent<GspArgumentsCached> {
        &self.args
    }

    /// Returns the number of lines of the GSP's log received so far.
    pub fn log_lines(&self) -> u64 {
        LOG_FUNCTIONS
            .into_iter()
            .map(|f| self.cmdq.events_dispatched(f))
            .sum()
    }

    /// Sends `command` and waits up to [`Cmdq::RECEIVE_TIMEOUT`] for its reply
    /// (upstream's `send_command`).
    ///
    /// # Errors
    ///
    /// As [`Cmdq::submit`] and [`PendingReply::wait`](crate::gsp::cmdq::PendingReply::wait).
    pub(crate) fn send_command<M>(&self, bar: &impl Doorbell, command: M) -> Result<M::Reply>
    where
        M: CommandToGsp,
        M::Reply: MessageFromGsp,
    {
        let pending = self.cmdq.submit(bar, &command)?;
        Self::log_sent(&command, pending.sequence());
        pending.wait(Cmdq::RECEIVE_TIMEOUT)
    }

    /// Sends `command`, which the GSP does not answer (upstream's `send_command_no_wait`).
    ///
    /// # Errors
    ///
    /// As [`Cmdq::post`].
    pub(crate) fn send_command_no_wait<M>(&self, bar: &impl Doorbell, command: M) -> Result
    where
        M: CommandToGsp<Reply = NoReply>,
    {
        let seq = self.cmdq.post(bar, &command)?;
        Self::log_sent(&command, seq);
        Ok(())
    }

    /// Logs `command`, sent as RPC `seq`.
    fn log_sent<M: CommandToGsp>(command: &M, seq: u32) {
        pr_info!(
            "gsp: -> {} ({}) sequence={} len={}\n",
            M::FUNCTION.name(),
            u32::from(M::FUNCTION),
            seq,
            command.size()
        );
    }

    /// Returns and logs the next message no one awaits within `budget`, skipping events
    /// the bring-up does not wait for and unknown functions.
    ///
    /// # Errors
    ///
    /// - `ETIMEDOUT` if no other message arrives within `budget`.
    /// - Any other error of [`Cmdq::receive`].
    fn next_message(&self, budget: &mut Budget) -> Result<GspMessage> {
        let msg = self.cmdq.receive(budget, |msg| {
            // Other events (which have no handler) are counted, unknown functions logged.
            let function = msg.function();
            let awaited = matches!(
                function,
                MsgFunction::GSP_INIT_DONE | MsgFunction::GSP_RUN_CPU_SEQUENCER
            );
            if !self.cmdq.knows(function) || (function.is_event() && !awaited) {
                Skip::PassOver
            } else {
                Skip::Take
            }
        })?;
        pr_info!(
            "gsp: <- {} ({}) seq={} sequence={} len={} elems={} result={}\n",
            msg.function().name(),
            msg.function,
            msg.seq_num,
            msg.sequence,
            msg.payload.len(),
            msg.elem_count,
            msg.rpc_result
        );
        Ok(msg)
    }

    /// Runs `msg`'s CPU sequence against `bar` and answers the GSP ([`sequencer`]). A
    /// refused sequence is answered and logged, not a bring-up failure: the GSP decides.
    ///
    /// # Errors
    ///
    /// - Any error of [`Cmdq::read_msg`] (a message shorter than its header).
    /// - Any error of sending the answer.
    pub(crate) fn run_cpu_sequencer<B: Doorbell + Bar0Registers>(
        &self,
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

    /// Runs the bring-up: system information ([`GspSetSystemInfo::new`]) and registry,
    /// `GSP_INIT_DONE` (running CPU sequences meanwhile), then the static configuration.
    ///
    /// # Errors
    ///
    /// - `ETIMEDOUT` if the GSP does not answer within `BOOT_TIMEOUT` (5 s).
    /// - `EIO` if `GSP_INIT_DONE` reports a failure, or any receive error.
    pub fn boot<B: Doorbell + Bar0Registers>(
        &self,
        bar: &B,
        pci: &PciFunction,
    ) -> Result<GspStaticConfigInfo> {
        self.send_command_no_wait(bar, GspSetSystemInfo::new(pci))?;
        self.send_command_no_wait(bar, SetRegistry::new(BOOT_REGISTRY)?)?;
        let mut budget = Budget::new(BOOT_TIMEOUT);
        let done: GspInitDone = loop {
            let msg = self.next_message(&mut budget)?;
            if msg.function() == MsgFunction::GSP_RUN_CPU_SEQUENCER {
                self.run_cpu_sequencer(bar, &msg)?;
                continue;
            }
            break self.cmdq.read_msg(&msg)?;
        };
        if done.status != NV_OK {
            return Err(EIO);
        }
        let info = self.send_command(bar, GetGspStaticInfo)?;
        pr_info!(
            "gsp: GPU \"{}\", {} MiB of frame buffer in {} usable region(s)\n",
            info.gpu_name(),
            info.fb_length >> 20,
            info.usable_fb_regions().count()
        );
        Ok(info)
    }
}
