// SPDX-License-Identifier: GPL-2.0

//! A virtual GSP: the firmware side of the GSP message queues.
//!
//! It consumes commands from `cpuq`, validates them, answers each one on `gspq`
//! (splitting large replies into continuation records), emits unasked events (the boot
//! log, `GSP_INIT_DONE`, a periodic log line), and answers a malformed command with an
//! error reply instead of failing.
//!
//! It is written against the device's view of the shared memory ([`DmaView`]) and the
//! `kernel` crate's barriers only, so the same code runs on a host thread, on a kernel thread,
//! or in a process behind an emulated PCI device.
//! [`Vgsp::step`] never blocks: the environment decides how to wait.
//!
//! # Ordering
//!
//! The GSP keeps its own accessors and barriers, each the partner of one in the driver
//! (`nova_core::gsp::cmdq`):
//!
//! | accessor | barrier | orders | pairs with (driver) |
//! |---|---|---|---|
//! | [`Vgsp::cpu_write_ptr`] | `dma_mb(Read)` after | its load before our `cpuq` slot loads | `dma_mb(Write)` in `advance_cpu_write_ptr` |
//! | [`Vgsp::advance_gsp_read_ptr`] | `dma_mb(Full)` before | our `cpuq` slot loads before the pointer store | `dma_mb(Full)` in `gsp_read_ptr` |
//! | [`Vgsp::cpu_read_ptr`] | `dma_mb(Full)` after | its load before our `gspq` slot stores | `dma_mb(Full)` in `advance_cpu_read_ptr` |
//! | [`Vgsp::advance_gsp_write_ptr`] | `dma_mb(Write)` before | our `gspq` slot stores before the pointer store | `dma_mb(Read)` in `gsp_write_ptr` |

// Kbuild makes every crate `no_std` (`-Zcrate-attr=no_std`); cargo builds need it said.
#![cfg_attr(not(CONFIG_RUST), no_std)]

use kernel::{
    dma::DmaView,
    prelude::*,
    sync::barrier::{
        dma_mb,
        Full,
        Read,
        Write, //
    },
};
use nova_core::gsp::{
    commands::{
        self,
        CeCopy,
        ConfigMirror,
        EchoHeader,
        FbRegion,
        GspInitDone,
        GspSetSystemInfo,
        GspStaticConfigInfo,
        PackedRegistryEntry,
        PackedRegistryTable,
        PciFunction,
        RegistryEntryType, //
    },
    fw::{
        self,
        GspMsgElement,
        MsgFunction,
        RingCursor, //
        CPUQ_OFFSET,
        ELEMENT_HEADER_SIZE,
        GSPQ_OFFSET,
        GSP_PAGE_SIZE,
        MAX_ELEMENT_PAGES,
        MAX_ELEMENT_PAYLOAD,
        MSGQ_READ_PTR_OFFSET,
        MSGQ_WRITE_PTR_OFFSET,
    },
};
use nova_core::mbarrier::{
    self,
    Mbarrier, //
};
use zerocopy::{
    FromBytes,
    IntoBytes, //
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
    /// Copy-engine copies finished.
    pub copies: u64,
    /// Copy-engine copies abandoned because their barrier refused a `complete_tx`.
    pub copy_faults: u64,
}

/// The size `rx_buf` starts at and never goes below: one element.
const RX_BUF_MIN: usize = fw::GSP_MSG_QUEUE_ELEMENT_SIZE_MAX;

/// The most DMA windows the copy engine can reach.
const MAX_DMA_WINDOWS: usize = 4;

/// Memory the environment lets the GSP reach by bus address (its IOMMU mappings).
#[derive(Clone, Copy)]
struct DmaWindow<'a> {
    bus: u64,
    view: DmaView<'a>,
}

/// A copy-engine transfer in progress.
struct CopyJob<'a> {
    src: (DmaView<'a>, usize),
    dst: (DmaView<'a>, usize),
    barrier: Mbarrier<'a>,
    len: usize,
    done: usize,
    chunk: usize,
}

/// A message waiting to be sent, possibly partly sent already.
struct Outgoing {
    function: u32,
    sequence: u32,
    rpc_result: u32,
    payload: KVec<u8>,
    /// Payload bytes already sent.
    sent: usize,
    /// Whether the head element is out.
    head_sent: bool,
}

/// A split command being reassembled in `rx_buf`.
struct Assembly {
    function: u32,
    sequence: u32,
    /// Payload bytes of the whole command.
    total: usize,
    /// Payload bytes received so far, at the start of `rx_buf`.
    filled: usize,
}

/// The virtual GSP.
///
/// # Invariants
///
/// `ring`'s write and read pointers are what the GSP last stored in `gspq.tx.writePtr`
/// and `cpuq.rx.readPtr`; what it knows of the driver's pointers it learnt from
/// [`Vgsp::cpu_read_ptr`] and [`Vgsp::cpu_write_ptr`].
pub struct Vgsp<'a> {
    mem: DmaView<'a>,
    ring: RingCursor,
    tx_seq: u32,
    rx_seq: Option<u32>,
    outbox: KVec<Outgoing>,
    outbox_head: usize,
    /// Where commands are copied out of `cpuq` and reassembled, and the copy engine's
    /// bounce buffer: never shorter than [`RX_BUF_MIN`], it only grows, up to the
    /// largest command seen, so that a command needs no allocation.
    rx_buf: KVec<u8>,
    assembly: Option<Assembly>,
    system_info: Option<GspSetSystemInfo>,
    registry_entries: Option<u32>,
    log_every: u64,
    windows: KVec<DmaWindow<'a>>,
    copy: Option<CopyJob<'a>>,
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
            ring: RingCursor::new(),
            tx_seq: 0,
            rx_seq: None,
            outbox: KVec::new(),
            outbox_head: 0,
            rx_buf,
            assembly: None,
            system_info: None,
            registry_entries: None,
            log_every: 0,
            windows: KVec::new(),
            copy: None,
            stats: Stats::default(),
        })
    }

    /// Lets the copy engine reach `view` at bus address `bus` (an IOMMU mapping).
    ///
    /// # Errors
    ///
    /// - `ENOSPC` if [`MAX_DMA_WINDOWS`] windows are mapped already.
    /// - `EINVAL` if the window wraps the bus address space.
    /// - `ENOMEM` if memory cannot be had.
    pub fn map_dma(&mut self, bus: u64, view: DmaView<'a>) -> Result {
        if self.windows.len() >= MAX_DMA_WINDOWS {
            return Err(ENOSPC);
        }
        // CAST: a view's length fits in 64 bits.
        bus.checked_add(view.len() as u64).ok_or(EINVAL)?;
        self.windows.push(DmaWindow { bus, view }, GFP_KERNEL)?;
        Ok(())
    }

    /// Returns the mapped view holding `len` bytes at bus address `bus`, and the offset
    /// in it.
    fn translate(&self, bus: u64, len: usize) -> Option<(DmaView<'a>, usize)> {
        self.windows.iter().find_map(|w| {
            let off = usize::try_from(bus.checked_sub(w.bus)?).ok()?;
            (off.checked_add(len)? <= w.view.len()).then_some((w.view, off))
        })
    }

    /// Makes the GSP send a `UCODE_LIBOS_PRINT` line unasked after every `n` commands
    /// (0: never).
    pub fn set_log_every(&mut self, n: u64) {
        self.log_every = n;
    }

    /// Queues a line of the GSP's log (`UCODE_LIBOS_PRINT`), sent unasked.
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if memory cannot be had.
    pub fn log(&mut self, line: &[u8]) -> Result {
        let mut payload = KVec::new();
        payload.extend_from_slice(line, GFP_KERNEL)?;
        self.event(MsgFunction::UcodeLibosPrint, payload)
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
        (self.ring.write_ptr(), self.ring.read_ptr())
    }

    // Accessors of the shared pointers.

    /// Returns the driver's write pointer into `cpuq`, with acquire semantics for the
    /// loads that follow.
    ///
    /// # Errors
    ///
    /// - `EIO` if the driver published a pointer outside the ring.
    pub fn cpu_write_ptr(&self) -> Result<u32> {
        let ptr = self.mem.read32(CPUQ_OFFSET + MSGQ_WRITE_PTR_OFFSET)?;
        // ORDERING: LOAD->LOAD. Orders this load of the driver's write pointer before our
        // loads of the `cpuq` slots it publishes. The GSP never stores to `cpuq` slots and
        // its later read-pointer store has its own `Full`, so `Read` suffices. Pairs with
        // the driver's `dma_mb(Write)` in `advance_cpu_write_ptr`.
        dma_mb(Read);
        Ok(fw::ring_ptr(ptr)?)
    }

    /// Returns the driver's read pointer into `gspq`, with acquire semantics.
    ///
    /// # Errors
    ///
    /// - `EIO` if the driver published a pointer outside the ring.
    pub fn cpu_read_ptr(&self) -> Result<u32> {
        let ptr = self.mem.read32(CPUQ_OFFSET + MSGQ_READ_PTR_OFFSET)?;
        // ORDERING: LOAD->STORE. Orders this load of the driver's read pointer before our
        // stores into the `gspq` slots it frees, which the driver may still be reading
        // otherwise. `Read` would not order the stores, so this is `Full`. Pairs with the
        // driver's `dma_mb(Full)` in `advance_cpu_read_ptr`.
        dma_mb(Full);
        Ok(fw::ring_ptr(ptr)?)
    }

    /// Frees `n` consumed `cpuq` slots, with release semantics.
    fn advance_gsp_read_ptr(&mut self, n: u32) -> Result {
        let rptr = self.ring.next_read(n);
        // ORDERING: LOAD->STORE. Orders our loads of the consumed `cpuq` slots before the
        // store of the read pointer that lets the driver overwrite them. `Write` would not
        // order the loads, so this is `Full`. Pairs with the driver's `dma_mb(Full)` in
        // `gsp_read_ptr`.
        dma_mb(Full);
        self.mem.write32(GSPQ_OFFSET + MSGQ_READ_PTR_OFFSET, rptr)?;
        // INVARIANT: `rptr` is what was just stored.
        self.ring.consumed(n);
        Ok(())
    }

    /// Publishes `n` `gspq` slots written at the write pointer, with release semantics.
    fn advance_gsp_write_ptr(&mut self, n: u32) -> Result {
        let wptr = self.ring.next_write(n);
        // ORDERING: STORE->STORE. Orders our stores of the element into `gspq` slots before
        // the store of the write pointer that publishes them. The earlier load of the
        // driver's read pointer is ordered by the `Full` in `cpu_read_ptr`, so `Write`
        // suffices. Pairs with the driver's `dma_mb(Read)` in `gsp_write_ptr`.
        dma_mb(Write);
        self.mem
            .write32(GSPQ_OFFSET + MSGQ_WRITE_PTR_OFFSET, wptr)?;
        // INVARIANT: `wptr` is what was just stored.
        self.ring.wrote(n);
        Ok(())
    }

    // The command side.

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
            self.outbox.clear();
            self.outbox_head = 0;
        }
        if self.copy.is_some() {
            self.copy_chunk()?;
            return Ok(Progress::Worked);
        }
        // The driver's write pointer is loaded only when every command seen is consumed.
        if self.ring.known_published() == 0 {
            let wptr = self.cpu_write_ptr()?;
            // INVARIANT: `cpu_write_ptr` just loaded `wptr`; nothing was known published, so
            // the driver cannot have moved it backwards.
            if self.ring.saw_write_ptr(wptr)? == 0 {
                return Ok(Progress::Idle);
            }
        }
        self.consume_element(self.ring.known_published())?;
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

    /// Consumes the command element at our read pointer and acts on it.
    fn consume_element(&mut self, available: u32) -> Result {
        let mut raw = GspMsgElement::default();
        self.read_cmd_bytes(0, raw.as_mut_bytes())?;
        let elem_count = raw.elem_count;
        if elem_count == 0 || elem_count > MAX_ELEMENT_PAGES || elem_count > available {
            // Cannot be delimited: drop what is published and complain.
            self.advance_gsp_read_ptr(available)?;
            self.assembly = None;
            return self.reject(raw.rpc.function, raw.rpc.sequence);
        }

        let checked = self.copy_and_check(&raw);
        self.advance_gsp_read_ptr(elem_count)?;
        self.stats.elements_in += 1;
        let (header, chunk_len) = match checked {
            Ok(ok) => ok,
            Err(_) => {
                self.assembly = None;
                return self.reject(raw.rpc.function, raw.rpc.sequence);
            }
        };

        if header.rpc.function == u32::from(MsgFunction::ContinuationRecord) {
            self.stats.continuations_in += 1;
            let Some(mut asm) = self.assembly.take() else {
                return self.reject(header.rpc.function, header.rpc.sequence);
            };
            if asm.sequence != header.rpc.sequence || asm.filled + chunk_len > asm.total {
                return self.reject(asm.function, asm.sequence);
            }
            // `copy_and_check` put the chunk right after what came before.
            asm.filled += chunk_len;
            if asm.filled == asm.total {
                return self.handle_received(asm.function, asm.sequence, asm.total);
            }
            self.assembly = Some(asm);
            return Ok(());
        }

        if self.assembly.take().is_some() {
            // A new command arrived while continuations were due: the split one is lost.
            self.stats.malformed += 1;
        }
        // A command's `rpc.length` covers its own chunk only, the head's too; where a split
        // command ends, the command itself says.
        if header.rpc_payload_len() != Some(chunk_len) {
            return self.reject(header.rpc.function, header.rpc.sequence);
        }
        let total =
            match commands::command_payload_len(header.rpc.function, &self.rx_buf[..chunk_len]) {
                Ok(Some(total)) if total >= chunk_len && total <= fw::MAX_RPC_PAYLOAD => total,
                Ok(None) => chunk_len,
                Ok(Some(_)) | Err(_) => {
                    return self.reject(header.rpc.function, header.rpc.sequence)
                }
            };
        // Only a full head is followed by continuation records.
        if total > chunk_len && chunk_len != fw::MAX_ELEMENT_PAYLOAD {
            return self.reject(header.rpc.function, header.rpc.sequence);
        }
        if total > chunk_len {
            if self.rx_buf.len() < total {
                self.rx_buf.resize(total, 0, GFP_KERNEL)?;
            }
            self.assembly = Some(Assembly {
                function: header.rpc.function,
                sequence: header.rpc.sequence,
                total,
                filled: chunk_len,
            });
            return Ok(());
        }
        self.handle_received(header.rpc.function, header.rpc.sequence, chunk_len)
    }

    fn read_cmd_bytes(&self, pos: usize, dst: &mut [u8]) -> Result {
        read_cpuq(self.mem, self.ring, pos, dst)
    }

    /// Validates `raw`, the header of the command element at our read pointer, copied out
    /// of `cpuq`, then copies just the payload bytes it announces into `rx_buf` and
    /// verifies the checksum there; returns the header and the payload length.
    ///
    /// A head goes to the start of `rx_buf`, which grows to hold its whole command; a
    /// continuation record right after the bytes of the command being reassembled (or,
    /// if it does not belong there, to the start: the command is lost anyway).
    fn copy_and_check(&mut self, raw: &GspMsgElement) -> Result<(GspMsgElement, usize)> {
        let (header, chunk_len) = fw::validate_header(raw.as_bytes(), raw.elem_count)?;
        let at = match &self.assembly {
            Some(asm)
                if header.rpc.function == u32::from(MsgFunction::ContinuationRecord)
                    && asm.sequence == header.rpc.sequence
                    && asm.filled + chunk_len <= asm.total =>
            {
                asm.filled
            }
            _ => 0,
        };
        // A head's whole command is reserved once it is known to be split (below, in
        // `consume_element`); the buffer only grows.
        let need = at + chunk_len;
        if self.rx_buf.len() < need {
            self.rx_buf.resize(need, 0, GFP_KERNEL)?;
        }
        let chunk = &mut self.rx_buf[at..at + chunk_len];
        read_cpuq(self.mem, self.ring, ELEMENT_HEADER_SIZE, chunk)?;
        fw::verify_checksum(&header, chunk)?;
        if let Some(expected) = self.rx_seq {
            if header.seq_num != expected {
                return Err(EIO);
            }
        }
        self.rx_seq = Some(header.seq_num.wrapping_add(1));
        Ok((header, chunk_len))
    }

    /// Acts on the whole command of `len` payload bytes at the start of `rx_buf`.
    fn handle_received(&mut self, function: u32, sequence: u32, len: usize) -> Result {
        let buf = core::mem::take(&mut self.rx_buf);
        let result = self.handle_command(function, sequence, &buf[..len]);
        self.rx_buf = buf;
        result
    }

    /// Answers a malformed command with an error reply.
    fn reject(&mut self, function: u32, sequence: u32) -> Result {
        self.stats.malformed += 1;
        self.queue(function, sequence, fw::NV_ERR_INVALID_ARGUMENT, KVec::new())
    }

    /// Acts on a whole command; a function it does not serve, known or not, gets an
    /// `NV_ERR_NOT_SUPPORTED` reply.
    fn handle_command(&mut self, function: u32, sequence: u32, payload: &[u8]) -> Result {
        self.stats.commands += 1;
        match MsgFunction::try_from(function) {
            Ok(MsgFunction::Nop) => {
                let mut echo = KVec::with_capacity(payload.len(), GFP_KERNEL)?;
                echo.extend_from_slice(payload, GFP_KERNEL)?;
                self.reply(function, sequence, echo)?;
            }
            Ok(MsgFunction::VgspEcho) => {
                // `consume_element` checked that the header's length is the payload's.
                let bytes = &payload[core::mem::size_of::<EchoHeader>()..];
                let mut echo = KVec::with_capacity(bytes.len(), GFP_KERNEL)?;
                echo.extend_from_slice(bytes, GFP_KERNEL)?;
                self.reply(function, sequence, echo)?;
            }
            Ok(MsgFunction::VgspSink) => self.reply(function, sequence, KVec::new())?,
            Ok(MsgFunction::GspSetSystemInfo) => match GspSetSystemInfo::read_from_bytes(payload) {
                Ok(info) => self.system_info = Some(info),
                Err(_) => return self.reject(function, sequence),
            },
            Ok(MsgFunction::SetRegistry) => match parse_registry(payload) {
                Some(n) => {
                    self.registry_entries = Some(n);
                    self.boot_done()?;
                }
                None => return self.reject(function, sequence),
            },
            Ok(MsgFunction::GetGspStaticInfo) => {
                let info = static_info(payload);
                let mut out = KVec::new();
                out.extend_from_slice(info.as_bytes(), GFP_KERNEL)?;
                self.reply(function, sequence, out)?;
            }
            Ok(MsgFunction::UnloadingGuestDriver) => self.reply(function, sequence, KVec::new())?,
            Ok(MsgFunction::VgspCeCopy) => match self.accept_copy(payload) {
                Some(job) => {
                    // Acknowledge first: the bytes land in the steps after the reply.
                    self.reply(function, sequence, KVec::new())?;
                    self.copy = Some(job);
                }
                None => return self.reject(function, sequence),
            },
            _ => {
                self.queue(function, sequence, fw::NV_ERR_NOT_SUPPORTED, KVec::new())?;
                self.stats.replies += 1;
            }
        }
        if self.log_every != 0 && self.stats.commands.is_multiple_of(self.log_every) {
            let mut line = KVec::new();
            let text = LogLine::commands(self.stats.commands);
            line.extend_from_slice(text.as_bytes(), GFP_KERNEL)?;
            self.event(MsgFunction::UcodeLibosPrint, line)?;
        }
        Ok(())
    }

    /// Validates a copy request: every range inside a mapped window, the barrier word
    /// aligned, the sizes within the barrier's and the bounce buffer's limits.
    fn accept_copy(&self, payload: &[u8]) -> Option<CopyJob<'a>> {
        if self.copy.is_some() {
            return None;
        }
        let req = CeCopy::read_from_bytes(payload).ok()?;
        let len = usize::try_from(req.len).ok()?;
        let chunk = usize::try_from(req.chunk).ok()?;
        if req.len == 0 || req.len > mbarrier::MAX_COUNT || chunk == 0 || chunk > RX_BUF_MIN {
            return None;
        }
        let (view, off) = self.translate(req.barrier, 8)?;
        let barrier = Mbarrier::new(view.atomic_u64(off).ok()?);
        Some(CopyJob {
            src: self.translate(req.src, len)?,
            dst: self.translate(req.dst, len)?,
            barrier,
            len,
            done: 0,
            chunk,
        })
    }

    /// Lands the next chunk of the copy in progress and reports it on its barrier.
    fn copy_chunk(&mut self) -> Result {
        let Some(job) = self.copy.as_mut() else {
            return Ok(());
        };
        let n = job.chunk.min(job.len - job.done);
        let buf = &mut self.rx_buf[..n];
        job.src.0.read_bytes(job.src.1 + job.done, buf)?;
        job.dst.0.write_bytes(job.dst.1 + job.done, buf)?;
        job.done += n;
        // CAST: `n <= len <= mbarrier::MAX_COUNT`, checked in `accept_copy`.
        let reported = job.barrier.complete_tx(n as u32);
        let finished = job.done == job.len;
        match reported {
            Ok(()) if !finished => return Ok(()),
            Ok(()) => self.stats.copies += 1,
            Err(rule) => {
                self.stats.copy_faults += 1;
                let mut line = KVec::new();
                line.extend_from_slice(
                    b"vgsp: copy engine: barrier refused complete_tx: ",
                    GFP_KERNEL,
                )?;
                line.extend_from_slice(rule.name().as_bytes(), GFP_KERNEL)?;
                self.event(MsgFunction::UcodeLibosPrint, line)?;
            }
        }
        self.copy = None;
        Ok(())
    }

    /// Queues the boot log and `GSP_INIT_DONE`.
    fn boot_done(&mut self) -> Result {
        for text in [
            "vgsp: RM init start",
            "vgsp: message queues up",
            "vgsp: RM init done",
        ] {
            let mut line = KVec::new();
            line.extend_from_slice(text.as_bytes(), GFP_KERNEL)?;
            self.event(MsgFunction::UcodeLibosPrint, line)?;
        }
        let mut done = KVec::new();
        done.extend_from_slice(GspInitDone { status: fw::NV_OK }.as_bytes(), GFP_KERNEL)?;
        self.event(MsgFunction::GspInitDone, done)
    }

    fn reply(&mut self, function: u32, sequence: u32, payload: KVec<u8>) -> Result {
        self.stats.replies += 1;
        self.queue(function, sequence, fw::NV_OK, payload)
    }

    fn event(&mut self, function: MsgFunction, payload: KVec<u8>) -> Result {
        self.stats.events += 1;
        self.queue(function.into(), 0, fw::NV_OK, payload)
    }

    fn queue(
        &mut self,
        function: u32,
        sequence: u32,
        rpc_result: u32,
        payload: KVec<u8>,
    ) -> Result {
        self.outbox.push(
            Outgoing {
                function,
                sequence,
                rpc_result,
                payload,
                sent: 0,
                head_sent: false,
            },
            GFP_KERNEL,
        )?;
        Ok(())
    }

    // Fault injection, for tests of the driver's receive path.

    /// Returns a well-formed element (header and payload, checksum set) as the GSP would
    /// send it, with the next element sequence number, for a test to corrupt.
    ///
    /// `function` is a raw number, so that a test can also send one no driver knows.
    ///
    /// # Errors
    ///
    /// - `EMSGSIZE` if `payload` does not fit one element.
    /// - `ENOMEM` if the buffer cannot be had.
    pub fn encode_element(
        &self,
        function: u32,
        sequence: u32,
        payload: &[u8],
        rpc_payload_len: usize,
    ) -> Result<KVec<u8>> {
        if payload.len() > MAX_ELEMENT_PAYLOAD {
            return Err(EMSGSIZE);
        }
        let mut header = GspMsgElement::new(
            self.tx_seq,
            function,
            sequence,
            payload.len(),
            rpc_payload_len,
        );
        header.rpc.rpc_result = fw::NV_OK;
        header.rpc.rpc_result_private = fw::NV_OK;
        header.seal(payload);
        let mut out = KVec::with_capacity(ELEMENT_HEADER_SIZE + payload.len(), GFP_KERNEL)?;
        out.extend_from_slice(header.as_bytes(), GFP_KERNEL)?;
        out.extend_from_slice(payload, GFP_KERNEL)?;
        Ok(out)
    }

    /// Writes `bytes` at the GSP's write pointer and advances it by `slots`, whatever the
    /// bytes say: lets a test publish malformed elements.
    ///
    /// # Errors
    ///
    /// - `ENOSPC` if `bytes` does not fit in `slots`, or `gspq` lacks `slots` free slots.
    pub fn post_raw(&mut self, bytes: &[u8], slots: u32) -> Result {
        if bytes.len() > slots as usize * GSP_PAGE_SIZE || !self.has_free(slots)? {
            return Err(ENOSPC);
        }
        let mem = self.mem;
        fw::for_each_ring_piece(self.ring.write_offset(0), bytes.len(), |off, r| {
            mem.write_bytes(GSPQ_OFFSET + fw::slot_offset(0) + off, &bytes[r])
        })?;
        self.advance_gsp_write_ptr(slots)?;
        self.tx_seq = self.tx_seq.wrapping_add(1);
        Ok(())
    }

    // The message side.

    /// Returns whether `slots` `gspq` slots from the write pointer are free.
    ///
    /// Loads the driver's read pointer only when the slots known free do not suffice: a
    /// slot the driver had consumed when the GSP last looked stays free until the GSP
    /// writes it, and the `Full` barrier of that look already orders it before every
    /// store the GSP makes after it.
    ///
    /// # Errors
    ///
    /// - `EIO` if the driver's read pointer is outside the ring.
    fn has_free(&mut self, slots: u32) -> Result<bool> {
        if self.ring.known_free() < slots {
            let rptr = self.cpu_read_ptr()?;
            // INVARIANT: `cpu_read_ptr` just loaded `rptr`.
            self.ring.saw_read_ptr(rptr);
        }
        Ok(self.ring.known_free() >= slots)
    }

    /// Sends the next element of the first pending message if `gspq` has room.
    fn send_pending(&mut self) -> Result<Progress> {
        let idx = self.outbox_head;
        let (function, chunk_len, total) = {
            let out = &self.outbox[idx];
            let chunk_len = (out.payload.len() - out.sent).min(MAX_ELEMENT_PAYLOAD);
            let function = if out.head_sent {
                u32::from(MsgFunction::ContinuationRecord)
            } else {
                out.function
            };
            let total = if out.head_sent {
                chunk_len
            } else {
                out.payload.len()
            };
            (function, chunk_len, total)
        };
        if !self.has_free(fw::elem_count_for(chunk_len))? {
            return Ok(Progress::Blocked);
        }

        let out = &self.outbox[idx];
        let chunk = &out.payload[out.sent..out.sent + chunk_len];
        let mut header = GspMsgElement::new(self.tx_seq, function, out.sequence, chunk_len, total);
        header.rpc.rpc_result = out.rpc_result;
        header.rpc.rpc_result_private = out.rpc_result;

        header.seal(chunk);

        let start = self.ring.write_offset(0);
        let mem = self.mem;
        let hdr = header.as_bytes();
        fw::for_each_ring_piece(start, hdr.len(), |off, r| {
            mem.write_bytes(GSPQ_OFFSET + fw::slot_offset(0) + off, &hdr[r])
        })?;
        fw::for_each_ring_piece(start + ELEMENT_HEADER_SIZE, chunk.len(), |off, r| {
            mem.write_bytes(GSPQ_OFFSET + fw::slot_offset(0) + off, &chunk[r])
        })?;
        self.advance_gsp_write_ptr(header.elem_count)?;
        self.tx_seq = self.tx_seq.wrapping_add(1);
        if function == u32::from(MsgFunction::ContinuationRecord) {
            self.stats.continuations_out += 1;
        }

        let out = &mut self.outbox[idx];
        out.sent += chunk_len;
        out.head_sent = true;
        if out.sent == out.payload.len() {
            self.outbox_head += 1;
        }
        Ok(Progress::Worked)
    }
}

/// Copies `dst.len()` bytes starting at byte `pos` of the `cpuq` element at `ring`'s read
/// pointer out of `mem`, wrapping past the ring end.
fn read_cpuq(mem: DmaView<'_>, ring: RingCursor, pos: usize, dst: &mut [u8]) -> Result {
    let start = ring.read_offset(pos);
    fw::for_each_ring_piece(start, dst.len(), |off, range| {
        mem.read_bytes(CPUQ_OFFSET + fw::slot_offset(0) + off, &mut dst[range])
    })
}

/// Returns the static configuration of the virtual GPU, filled into `request` (the
/// driver's zeroed structure) where that has the right size, into zeroes otherwise: its
/// names, [`FB_LENGTH`] of frame buffer as one usable region, and the subsystem ids of
/// [`PCI_FUNCTION`] as the VBIOS's.
fn static_info(request: &[u8]) -> GspStaticConfigInfo {
    let mut info = GspStaticConfigInfo::read_from_bytes(request).unwrap_or_default();
    info.name = [0; 64];
    // PANIC: both names are shorter than their fields (asserted beside them).
    info.name[..GPU_NAME.len()].copy_from_slice(GPU_NAME.as_bytes());
    info.name_utf16 = [0; 64];
    for (unit, byte) in info.name_utf16.iter_mut().zip(GPU_NAME.bytes()) {
        *unit = u16::from(byte);
    }
    info.short_name = [0; 64];
    info.short_name[..GPU_SHORT_NAME.len()].copy_from_slice(GPU_SHORT_NAME.as_bytes());
    info.fb_length = FB_LENGTH;
    info.fb_regions.count = 1;
    info.fb_regions.regions[0] = FbRegion {
        base: 0,
        limit: FB_LENGTH - 1,
        support_compressed: 1,
        support_iso: 1,
        ..FbRegion::default()
    };
    info.vbios_valid = 1;
    info.vbios_sub_vendor = u32::from(PCI_FUNCTION.subsystem_vendor_id);
    info.vbios_sub_device = u32::from(PCI_FUNCTION.subsystem_id);
    info
}

/// Checks a packed registry table as r570 lays it out; returns its number of entries.
///
/// The table's `size` must be the payload's length, and every entry must lie inside it
/// with a NUL-terminated key and a known type: a number with `length` 0 (as upstream
/// sends it) or 4 (as nouveau does), or a blob or string whose `length` bytes at offset
/// `data` lie inside the table (a string's last one its NUL).
fn parse_registry(payload: &[u8]) -> Option<u32> {
    let (table, rest) = PackedRegistryTable::read_from_prefix(payload).ok()?;
    if usize::try_from(table.size).ok()? != payload.len() {
        return None;
    }
    let mut entries = rest;
    for _ in 0..table.num_entries {
        let (entry, next) = PackedRegistryEntry::read_from_prefix(entries).ok()?;
        let name = payload.get(usize::try_from(entry.name_offset).ok()?..)?;
        name.iter().position(|&b| b == 0)?;
        let length = usize::try_from(entry.length).ok()?;
        match RegistryEntryType::try_from(entry.type_).ok()? {
            RegistryEntryType::Dword if length == 0 || length == 4 => {}
            RegistryEntryType::Dword => return None,
            kind => {
                let start = usize::try_from(entry.data).ok()?;
                let value = payload.get(start..start.checked_add(length)?)?;
                if kind == RegistryEntryType::String && value.last() != Some(&0) {
                    return None;
                }
            }
        }
        entries = next;
    }
    Some(table.num_entries)
}

/// A short formatted log line without allocation.
struct LogLine {
    buf: [u8; 64],
    len: usize,
}

impl LogLine {
    fn commands(n: u64) -> Self {
        let mut line = Self {
            buf: [0; 64],
            len: 0,
        };
        let _ = core::fmt::write(&mut line, format_args!("vgsp: {n} commands handled"));
        line
    }

    fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl core::fmt::Write for LogLine {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let end = self.len + s.len();
        if end > self.buf.len() {
            return Err(core::fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}
