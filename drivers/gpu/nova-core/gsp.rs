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

/// The registry keys the driver hands the GSP at boot: upstream's (which adds
/// `RMSetSriovMode` only when vGPU is enabled, which this driver does not do).
pub(crate) const BOOT_REGISTRY: &[(&str, u32)] = &[
    ("RMSecBusResetEnable", 1),
    ("RMForcePcieConfigSave", 1),
    ("RMDevidCheckIgnore", 1),
];

/// The GSP's log: `UCODE_LIBOS_PRINT` and `OS_ERROR_LOG` events, printed as they come by
/// whichever wait takes them off the ring. [`Gsp::new`] registers it; the queue counts the
/// lines ([`Gsp::log_lines`]).
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

/// The GSP as the driver sees it. Shared by reference by the driver's threads, as its
/// [`Cmdq`] is.
#[pin_data]
pub struct Gsp {
    /// The command queue.
    #[pin]
    cmdq: Cmdq,
    /// The boot arguments left for the GSP (r570's `GSP_ARGUMENTS_CACHED`): where its
    /// queues are. The firmware finds them there; so does the virtual GSP
    /// (`vgsp::Vgsp::locate`).
    args: Coherent<GspArgumentsCached>,
}

impl Gsp {
    /// Allocates the shared memory, initialises the queues, fills the boot arguments that
    /// name them, and registers the handler that prints the GSP's log.
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if the memory cannot be had.
    pub fn new(dev: &Device<Bound>) -> impl PinInit<Self, Error> + '_ {
        // Both allocations are made now; the initialiser places them.
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

    /// Returns the command queue: the test bench's way to it, whose bench-facing methods
    /// are [`BenchSeam`](crate::gsp::cmdq::BenchSeam)'s. The driver's own sends and waits
    /// are [`Gsp::boot`]'s.
    pub fn cmdq(&self) -> &Cmdq {
        &self.cmdq
    }

    /// Returns the boot arguments left for the GSP, which name its queues.
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

    /// Sends `command` and waits for its reply (upstream's `send_command`); the GSP's log
    /// lines that arrive meanwhile are printed. The whole wait ends within
    /// [`Cmdq::RECEIVE_TIMEOUT`].
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

    /// Receives messages no one awaits within `budget` until one arrives that is not an
    /// event the bring-up does not wait for, and logs it. Messages of functions the driver
    /// does not know are skipped and logged; the whole wait ends within `budget`, however
    /// many messages arrive.
    ///
    /// # Errors
    ///
    /// - `ETIMEDOUT` if no other message arrives within `budget`.
    /// - Any other error of [`Cmdq::receive`].
    fn next_message(&self, budget: &mut Budget) -> Result<GspMessage> {
        let msg = self.cmdq.receive(budget, |msg| {
            // The events the bring-up waits for are returned; any other is passed over
            // (and counted: its function has no handler, or it would not be here), as is a
            // message of a function the driver does not know (and logged).
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

    /// Runs the CPU sequence of `msg` (`GSP_RUN_CPU_SEQUENCER`) against `bar` and answers
    /// the GSP with its outcome ([`sequencer`]). A refused sequence is answered too, and
    /// logged; it does not fail the bring-up, which the GSP decides.
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

    /// Runs the bring-up sequence: system information (filled from `pci` by
    /// [`GspSetSystemInfo::new`]) and registry to the GSP, wait for `GSP_INIT_DONE`
    /// (running the CPU sequences the GSP asks for meanwhile, against `bar`), then query
    /// the static configuration.
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
