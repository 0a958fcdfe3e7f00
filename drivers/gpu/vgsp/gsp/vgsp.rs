// SPDX-License-Identifier: GPL-2.0

//! A virtual GSP: the firmware side of the GSP message queues.
//!
//! It consumes commands from `cpuq`, validates them, answers each one on `gspq`
//! (splitting large replies into continuation records), emits unasked events (the boot
//! log, a CPU sequence to run if one was set with [`Vgsp::set_cpu_sequence`],
//! `GSP_INIT_DONE`, a periodic log line), and answers a malformed command with an error
//! reply instead of failing.
//!
//! It is written against the device's view of the shared memory ([`DmaView`]) and the
//! `kernel` crate's barriers only, so the same code runs on a host thread, on a kernel thread,
//! or in a process behind an emulated PCI device.
//! [`Vgsp::step`] never blocks: the environment decides how to wait.
//!
//! The modules follow the GSP's concerns: `msgq` its pointer accessors and their
//! barriers, with the raw element reads and writes; `commands` receiving, reassembling
//! and acting on commands; `outbox` the replies and events it queues and sends; `ce`
//! its copy engine.
//!
//! # Ordering
//!
//! The GSP keeps its own accessors and barriers (`msgq`), each the partner of one in the
//! driver; the table of both sides is `nova_core::gsp::cmdq`'s ("Ordering").

// Kbuild makes every crate `no_std` (`-Zcrate-attr=no_std`); cargo builds need it said.
#![cfg_attr(not(CONFIG_RUST), no_std)]

mod ce;
mod commands;
mod msgq;
mod outbox;

use kernel::prelude::*;
use nova_core::gsp::{
    commands::{
        ConfigMirror,
        GspSetSystemInfo,
        PciFunction, //
    },
    fw::{
        self,
        ring::{
            ReadCursor,
            WriteCursor, //
        },
    },
    sequencer::{
        RunCpuSequencerHeader,
        SeqCmd,
        SequencerDone,
        FALCON_CPUCTL,
        FALCON_ENGINE, //
    },
};
use nova_core::num::FromSafeCast;
use vdev::DmaView;
use zerocopy::FromBytes;

pub use crate::commands::{
    command_payload_len,
    VGSP_CTRL_CMD_DIGEST,
    VGSP_CTRL_CMD_ECHO, //
};

use crate::{
    ce::{
        CopyJob,
        DmaWindow, //
    },
    commands::Assembly,
    outbox::Outgoing, //
};

/// The name the virtual GPU reports.
pub const GPU_NAME: &str = "NVIDIA vGSP virtual GPU";
/// The short name the virtual GPU reports.
pub const GPU_SHORT_NAME: &str = "vGSP";

// Both names fit their 64-byte fields with their NUL.
const _: () = assert!(GPU_NAME.len() < 64 && GPU_SHORT_NAME.len() < 64);
/// The frame buffer size the virtual GPU reports, all of it one usable region.
pub const FB_LENGTH: u64 = 256 << 20;

/// The PCI function of the virtual GPU, as a driver's probe would find it: made-up bus
/// addresses, NVIDIA's vendor id, a Blackwell device id (so the Hopper/Blackwell
/// configuration mirror). The GSP reports its subsystem ids back as the VBIOS's in the
/// static configuration.
pub const PCI_FUNCTION: PciFunction = PciFunction {
    bar0: 0xfd00_0000,
    bar1: 0xe000_0000,
    bar3: 0xf000_0000,
    bus_dev_fn: 0x0100,
    vendor_id: 0x10de,
    device_id: 0x2b85,
    subsystem_vendor_id: 0x10de,
    subsystem_id: 0x2b85,
    revision_id: 0xa1,
    config_mirror: ConfigMirror::GH100,
};

/// The GSP falcon's first mailbox register in BAR0 (`NV_PGSP_FALCON_MAILBOX0`).
pub const FALCON_MAILBOX0: u32 = 0x0011_0040;
/// The second (`NV_PGSP_FALCON_MAILBOX1`).
pub const FALCON_MAILBOX1: u32 = 0x0011_0044;

/// The CPU sequence the virtual GSP asks for at bring-up when the bench sets it
/// ([`Vgsp::set_cpu_sequence`]), in the shape of the firmware's: reset the core, hand
/// it its boot arguments through the mailboxes, check and save one, and start it.
pub const BOOT_SEQUENCE: &[SeqCmd] = &[
    SeqCmd::CoreReset,
    SeqCmd::RegWrite {
        addr: FALCON_MAILBOX0,
        val: 0x1,
    },
    SeqCmd::RegModify {
        addr: FALCON_MAILBOX1,
        mask: 0xff00,
        val: 0x1200,
    },
    SeqCmd::RegPoll {
        addr: FALCON_MAILBOX0,
        mask: 0x1,
        val: 0x1,
        timeout_us: 1000,
        error: fw::NV_ERR_INVALID_ARGUMENT,
    },
    SeqCmd::RegStore {
        addr: FALCON_MAILBOX0,
        index: 0,
    },
    SeqCmd::DelayUs(10),
    SeqCmd::CoreStart,
];

// The core operations of the sequence act on these registers (`nova_core::gsp::sequencer`).
const _: () = assert!(FALCON_CPUCTL < nova_core::gsp::regs::BAR0_SIZE);
const _: () = assert!(FALCON_ENGINE < nova_core::gsp::regs::BAR0_SIZE);

/// Why the GSP refuses to start from its boot arguments ([`Vgsp::locate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StartRefused {
    /// The errno.
    pub errno: Error,
    /// The inconsistency, in a few words.
    pub reason: &'static str,
}

/// What one [`Vgsp::step`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// An element was consumed or sent.
    Worked,
    /// Nothing to do until the driver sends a command.
    Idle,
    /// A message is waiting for the driver to free `gspq` slots.
    Blocked,
}

/// Counters of what the GSP has done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Commands handled (continuation records reassembled into one).
    pub commands: u64,
    /// Elements consumed.
    pub elements_in: u64,
    /// Continuation records consumed (counted in `elements_in` too).
    pub continuations_in: u64,
    /// Continuation records sent.
    pub continuations_out: u64,
    /// Replies queued.
    pub replies: u64,
    /// Unasked events queued.
    pub events: u64,
    /// Malformed commands answered with an error reply.
    pub malformed: u64,
    /// Stray continuation records (valid, while no command was open) skipped, as the
    /// driver's receive skips one ([`nova_core::gsp::fw::element::Delimiter`]).
    pub stray: u64,
    /// Copy-engine copies finished.
    pub copies: u64,
    /// Copy-engine copies abandoned because their barrier refused a `complete_tx`.
    pub copy_faults: u64,
    /// CPU sequences sent to the driver.
    pub sequences: u64,
    /// The driver's answer to the last of them, once it came.
    pub sequence_done: Option<SequencerDone>,
    /// Journal entries dropped: the journal was full ([`Vgsp::take_journal`] not called
    /// often enough) or an entry could not be had.
    pub journal_dropped: u64,
}

/// What the GSP did with one command, or an event it sent, as its journal records it ([`Vgsp::set_journal`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Acted on (answered, if the command has an answer).
    Served,
    /// A function the GSP does not serve: answered `NV_ERR_NOT_SUPPORTED`.
    NotSupported,
    /// Malformed: answered `NV_ERR_INVALID_ARGUMENT`, for the reason given.
    Refused(&'static str),
    /// Not a command: an event the GSP queued unasked (its `function`; sequence 0).
    Sent,
}

/// One command, or one event sent, in the GSP's journal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Handled {
    /// Its `rpc.function`.
    pub function: u32,
    /// Its `rpc.sequence`.
    pub sequence: u32,
    /// What the GSP did with it.
    pub outcome: Outcome,
}

/// A message the GSP kept back instead of sending it ([`Vgsp::withhold`]).
pub struct Withheld {
    /// Its `rpc.function`.
    pub function: u32,
    /// Its `rpc.sequence`.
    pub sequence: u32,
    /// Its `rpc_result`.
    pub rpc_result: u32,
    /// Its payload.
    pub payload: KVec<u8>,
}

/// The most entries the journal keeps between two [`Vgsp::take_journal`]s; later ones
/// are counted in [`Stats::journal_dropped`] only.
const JOURNAL_MAX: usize = 256;

/// The size `rx_buf` starts at and never goes below: one element.
const RX_BUF_MIN: usize = fw::GSP_MSG_QUEUE_ELEMENT_SIZE_MAX;

/// The virtual GSP.
///
/// # Invariants
///
/// `tx`'s write pointer is what the GSP last stored in `gspq.tx.writePtr`, and what it
/// knows free it learnt from [`Vgsp::cpu_read_ptr`]; `rx`'s read pointer is what it last
/// stored in `gspq.rx.readPtr` (its read pointer into `cpuq`), and what it knows
/// published it learnt from [`Vgsp::cpu_write_ptr`].
pub struct Vgsp<'a> {
    mem: DmaView<'a>,
    /// Its place on `gspq`, the ring it fills.
    tx: WriteCursor,
    /// Its place on `cpuq`, the ring it drains.
    rx: ReadCursor,
    tx_seq: u32,
    rx_seq: Option<u32>,
    outbox: KVec<Outgoing>,
    outbox_head: usize,
    /// Where commands are copied out of `cpuq` and reassembled, and the copy engine's
    /// bounce buffer: never shorter than [`RX_BUF_MIN`], it only grows, up to the
    /// largest command seen, so that a command needs no allocation.
    rx_buf: KVec<u8>,
    /// The payload of a reply already sent, kept for the next echo's reply instead of a new
    /// allocation (at most one element's worth).
    spare: KVec<u8>,
    assembly: Option<Assembly>,
    system_info: Option<GspSetSystemInfo>,
    registry_entries: Option<u32>,
    log_every: u64,
    /// Whether replies carry their command's `rpc.sequence` (else 0).
    sequence_in_replies: bool,
    windows: KVec<DmaWindow<'a>>,
    copy: Option<CopyJob<'a>>,
    /// The CPU sequence to ask for at bring-up: its header and command words.
    cpu_sequence: Option<(RunCpuSequencerHeader, KVec<u32>)>,
    /// Every command handled since the last [`Vgsp::take_journal`], when kept.
    journal: Option<KVec<Handled>>,
    /// The function whose next message is to be kept back, and the message once it is.
    withhold: Option<u32>,
    withheld: Option<Withheld>,
    /// What the GSP has done so far.
    pub stats: Stats,
}

impl<'a> Vgsp<'a> {
    /// Creates the GSP over the shared memory `mem` (a whole `GspMem`), as after reset:
    /// its pointers at 0.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if `mem` is smaller than a `GspMem`.
    /// - `ENOMEM` if the receive buffer cannot be had.
    pub fn new(mem: DmaView<'a>) -> Result<Self> {
        if mem.len() < core::mem::size_of::<fw::GspMem>() {
            return Err(EINVAL);
        }
        let mut rx_buf = KVec::new();
        rx_buf.resize(RX_BUF_MIN, 0, GFP_KERNEL)?;
        Ok(Self {
            mem,
            tx: WriteCursor::default(),
            rx: ReadCursor::default(),
            tx_seq: 0,
            rx_seq: None,
            outbox: KVec::new(),
            outbox_head: 0,
            rx_buf,
            spare: KVec::new(),
            assembly: None,
            system_info: None,
            registry_entries: None,
            log_every: 0,
            sequence_in_replies: true,
            windows: KVec::new(),
            copy: None,
            cpu_sequence: None,
            journal: None,
            withhold: None,
            withheld: None,
            stats: Stats::default(),
        })
    }

    /// Creates the GSP as the firmware starts: from its boot arguments alone (r570's
    /// `GSP_ARGUMENTS_CACHED`, read through `args`), finding the shared memory in
    /// `window`, the device's view of the bus addresses from `window_bus` on, and
    /// checking it through its PTE page.
    ///
    /// The queues must sit at r570's offsets: the rings are addressed as a [`fw::GspMem`]
    /// (as nova-core lays them out), so other offsets are refused rather than followed.
    ///
    /// # Errors
    ///
    /// A [`StartRefused`] naming the inconsistency: `EINVAL` for arguments that contradict
    /// themselves or the PTE page, `ERANGE` for memory outside `window`.
    pub fn locate(
        window: DmaView<'a>,
        window_bus: u64,
        args: DmaView<'_>,
    ) -> core::result::Result<Self, StartRefused> {
        let refuse = |errno, reason| StartRefused { errno, reason };
        let mut raw = [0u8; core::mem::size_of::<fw::GspArgumentsCached>()];
        args.read_bytes(0, &mut raw)
            .map_err(|_| refuse(EINVAL, "boot arguments shorter than GSP_ARGUMENTS_CACHED"))?;
        let mq = fw::GspArgumentsCached::read_from_bytes(&raw[..])
            .map_err(|_| refuse(EINVAL, "boot arguments unreadable"))?
            .message_queue_init_arguments;
        let page = u64::from_safe_cast(fw::GSP_PAGE_SIZE);
        let shared = mq.shared_mem_phys_addr;
        if shared % page != 0 {
            return Err(refuse(EINVAL, "shared memory not page-aligned"));
        }
        let size = core::mem::size_of::<fw::GspMem>();
        let off = shared
            .checked_sub(window_bus)
            .and_then(|o| usize::try_from(o).ok())
            .filter(|o| o.checked_add(size).is_some_and(|end| end <= window.len()))
            .ok_or(refuse(ERANGE, "shared memory outside the region"))?;
        let count = usize::from_safe_cast(mq.page_table_entry_count);
        if count < fw::GSP_MEM_PAGES {
            return Err(refuse(EINVAL, "PTE count too small for the queues"));
        }
        if count > fw::GSP_PTE_COUNT {
            return Err(refuse(EINVAL, "PTE count beyond the PTE page"));
        }
        let mapped = u64::from_safe_cast(count * fw::GSP_PAGE_SIZE);
        let queue = u64::from_safe_cast(core::mem::size_of::<fw::Msgq>());
        for q in [mq.cmd_queue_offset, mq.stat_queue_offset] {
            if q % page != 0 {
                return Err(refuse(EINVAL, "queue offset not page-aligned"));
            }
            if q.checked_add(queue).is_none_or(|end| end > mapped) || q < page {
                return Err(refuse(ERANGE, "queue offsets outside the region"));
            }
        }
        if mq.cmd_queue_offset != u64::from_safe_cast(fw::CPUQ_OFFSET)
            || mq.stat_queue_offset != u64::from_safe_cast(fw::GSPQ_OFFSET)
        {
            return Err(refuse(EINVAL, "queue offsets not r570's layout"));
        }
        for i in 0..count {
            let mut pte = [0u8; 8];
            window
                .read_bytes(off + fw::PTES_OFFSET + 8 * i, &mut pte)
                .map_err(|_| refuse(ERANGE, "PTE page outside the region"))?;
            if u64::from_le_bytes(pte) != shared + u64::from_safe_cast(i * fw::GSP_PAGE_SIZE) {
                return Err(refuse(EINVAL, "PTEs not contiguous"));
            }
        }
        let mem = window
            .subview(off, size)
            .map_err(|_| refuse(ERANGE, "shared memory outside the region"))?;
        Self::new(mem).map_err(|e| refuse(e, "the GSP cannot be had"))
    }

    /// Makes the GSP send a `UCODE_LIBOS_PRINT` line unasked after every `n` commands
    /// (0: never).
    pub fn set_log_every(&mut self, n: u64) {
        self.log_every = n;
    }

    /// Makes the GSP put `rpc.sequence` 0 in its replies instead of their command's (with
    /// `false`), as a firmware that does not copy it would: the driver must then match
    /// replies by order (`nova_core::gsp::cmdq::ReplyMatch::InOrder`). It answers in
    /// order either way.
    pub fn set_sequence_in_replies(&mut self, on: bool) {
        self.sequence_in_replies = on;
    }

    /// Makes the GSP ask the driver, at bring-up (once the registry has come, before
    /// `GSP_INIT_DONE`), to run `cmds` as a CPU sequence (`GSP_RUN_CPU_SEQUENCER`). The
    /// driver's answer lands in [`Stats::sequence_done`].
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if the command words cannot be had.
    pub fn set_cpu_sequence(&mut self, cmds: &[SeqCmd]) -> Result {
        let mut words = KVec::new();
        for cmd in cmds {
            cmd.encode(&mut words)?;
        }
        let header = RunCpuSequencerHeader {
            buffer_size_dwords: u32::try_from(words.len()).map_err(|_| EINVAL)?,
            cmd_index: u32::try_from(cmds.len()).map_err(|_| EINVAL)?,
            reg_save_area: [0; nova_core::gsp::sequencer::REG_SAVE_AREA],
        };
        self.set_cpu_sequence_raw(header, words);
        Ok(())
    }

    /// As [`Vgsp::set_cpu_sequence`], with the header and words as given, however wrong
    /// (for tests of the driver's refusals).
    pub fn set_cpu_sequence_raw(&mut self, header: RunCpuSequencerHeader, words: KVec<u32>) {
        self.cpu_sequence = Some((header, words));
    }

    /// Makes the GSP keep a journal of the commands it handles (with `true`): each one's
    /// function, sequence and [`Outcome`], for a transcript of what the driver sent.
    pub fn set_journal(&mut self, on: bool) {
        self.journal = on.then(KVec::new);
    }

    /// Returns the journal's entries since the last call, and empties it (nothing without
    /// [`Vgsp::set_journal`]).
    pub fn take_journal(&mut self) -> KVec<Handled> {
        match &mut self.journal {
            Some(journal) => core::mem::take(journal),
            None => KVec::new(),
        }
    }

    /// Makes the GSP keep back the next message of `function` it queues, a reply or an
    /// event, instead of sending it: a test sends it as it likes (late, corrupted, split,
    /// never) from [`Vgsp::take_withheld`], with [`Vgsp::encode_element`] and
    /// [`Vgsp::post_raw`].
    pub fn withhold(&mut self, function: u32) {
        self.withhold = Some(function);
    }

    /// Returns the message kept back, once the GSP has queued it.
    pub fn take_withheld(&mut self) -> Option<Withheld> {
        self.withheld.take()
    }

    /// Records a command or event in the journal, if one is kept; an entry that does not
    /// fit (the journal full, or no memory for it) is counted in
    /// [`Stats::journal_dropped`] instead. The journal is a diagnostic: it never fails the
    /// GSP's work.
    pub(crate) fn note(&mut self, function: u32, sequence: u32, outcome: Outcome) {
        let Some(journal) = &mut self.journal else {
            return;
        };
        let entry = Handled {
            function,
            sequence,
            outcome,
        };
        if journal.len() >= JOURNAL_MAX || journal.push(entry, GFP_KERNEL).is_err() {
            self.stats.journal_dropped += 1;
        }
    }

    /// Returns the system information the driver sent, if any.
    pub fn system_info(&self) -> Option<&GspSetSystemInfo> {
        self.system_info.as_ref()
    }

    /// Returns the number of registry entries the driver sent, if it sent them.
    pub fn registry_entries(&self) -> Option<u32> {
        self.registry_entries
    }

    /// Returns whether every queued message has been sent.
    pub fn outbox_empty(&self) -> bool {
        self.outbox_head == self.outbox.len()
    }

    /// Returns the GSP's write and read pointers.
    pub fn gsp_ptrs(&self) -> (u32, u32) {
        (self.tx.write_ptr(), self.rx.read_ptr())
    }

    /// Returns the sequence number of the next element the GSP sends on `gspq`: a test
    /// that posts elements of its own ([`Vgsp::post_raw`]) numbers them from it.
    pub fn tx_seq(&self) -> u32 {
        self.tx_seq
    }

    // The work loop.

    /// Does one unit of work: sends one element of a pending message, or consumes one
    /// command element. Never blocks.
    ///
    /// # Errors
    ///
    /// - `EIO` if the driver published a pointer outside a ring. The GSP stays usable.
    pub fn step(&mut self) -> Result<Progress> {
        if self.outbox_head < self.outbox.len() {
            return self.send_pending();
        }
        if self.outbox_head > 0 {
            self.clear_outbox();
        }
        if self.copy.is_some() {
            self.copy_chunk()?;
            return Ok(Progress::Worked);
        }
        // The driver's write pointer is loaded only when every command seen is consumed.
        if self.rx.known_published() == 0 {
            let wptr = self.cpu_write_ptr()?;
            // INVARIANT: `cpu_write_ptr` just loaded `wptr`; nothing was known published, so
            // the driver cannot have moved it backwards.
            if self.rx.saw_write_ptr(wptr)? == 0 {
                return Ok(Progress::Idle);
            }
        }
        self.consume_element(self.rx.known_published())?;
        Ok(Progress::Worked)
    }

    /// Runs [`Vgsp::step`] until it reports [`Progress::Idle`] or [`Progress::Blocked`].
    ///
    /// # Errors
    ///
    /// As [`Vgsp::step`].
    pub fn run_until_idle(&mut self) -> Result<Progress> {
        loop {
            match self.step()? {
                Progress::Worked => continue,
                other => return Ok(other),
            }
        }
    }
}
