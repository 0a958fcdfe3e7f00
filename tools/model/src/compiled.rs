// SPDX-License-Identifier: GPL-2.0

//! The ordering of compiled code: a decision procedure over a trace of a real arm64
//! binary's instructions.
//!
//! # The trace
//!
//! `tools/trace/plugin/vgsp-trace.c`, a QEMU TCG plugin, records what each thread of a
//! binary run under `qemu-aarch64` did, in program order ([`Record`]): every load and
//! store of coherent memory with its size and pc, every `dmb`/`dsb` with its option,
//! every acquire or release access elsewhere, that a conditional branch ran between two
//! of those, and the shim's marks (`kernel::trace`): where coherent memory is, and what
//! each load of a shared word through the shim returned. Upstream's queue and ours load
//! the ring pointers through the shim (`io_read!` on a `CoherentView`, the GSP's
//! `DmaView::read32`), so the pointer values the control flow depended on are exact:
//! they are the values the load instructions returned, announced before the code used
//! them. A store's value is read back by the plugin right after it; a pointer has one
//! writer, so that is exact too.
//!
//! # Classifying
//!
//! The coherent region of [`GspMem`]'s size is the shared memory. Its accesses are
//! classified by offset ([`Class`]): the four ring pointers, and the slots of `cpuq` and
//! `gspq`. The thread that publishes `cpuq` elements (stores a non-zero
//! `cpuq.tx.writePtr`) is the `cpu`, the one that publishes `gspq` elements the `gsp`.
//! Consecutive accesses of one slot of the same kind with nothing between are one event.
//!
//! # What must be ordered
//!
//! From the pointer values each agent saw and wrote, every slot access gets the pointer
//! accesses the protocol needs it ordered against:
//!
//! - a **consumer's load of a slot** after a load of the producer's write pointer that
//!   showed the slot published (load→load), and before the store of its own read pointer
//!   that frees the slot (load→store: the producer will overwrite it);
//! - a **producer's store to a slot it published before** after a load of the
//!   consumer's read pointer that showed the slot free again (load→store: the consumer
//!   may still be reading it), and before the store of its own write pointer that
//!   publishes it (store→store).
//!
//! [`check`] decides both agents; [`check_driver`] the driver's alone, under the same
//! rules, for a trace in which the GSP is not traced (nova-core in the arm64 kernel,
//! [`crate::kernel`]).
//!
//! Each pair is then decided against the agent's preserved program order
//! ([`crate::ppo`]), under two verdicts ([`Verdict`]). Each missing ordering is a
//! [`Defect`], grouped by where it is in the source. Accesses of one location are
//! ordered as the memory models have them: a load before a later access of it, a store
//! before a later store; a slot store that its agent reads back (a checksum computed
//! over the ring) orders nothing after it, as the load may be forwarded from the store
//! buffer.
//!
//! # The two verdicts
//!
//! - **contract** (portable, what Linux promises): `dmb osh` (`dma_mb(Full)`) orders
//!   every pair, `dmb oshld` (`dma_rmb`) loads before loads, `dmb oshst` (`dma_wmb`)
//!   stores before stores; `dsb` and the full-system options likewise; the
//!   inner-shareable and non-shareable options (`dmb ish`, what a CPU fence
//!   `fence(SeqCst)` compiles to) order nothing towards a device; no dependency is
//!   honoured and acquire/release accesses order nothing for a device
//!   (`smp_load_acquire` is for CPUs).
//! - **arm64** (what the emitted instructions guarantee, by the Arm ARM's ordering
//!   rules). Assumptions, stated:
//!   - The GSP observes from the outer-shareable domain, not from the CPUs'
//!     inner-shareable one. A barrier orders for the observers of the domain its option
//!     names: `dmb osh*` and the full-system options order for the GSP, `dmb ish*` and
//!     `dmb nsh*` do not. `dmb oshld` also orders loads before later stores.
//!   - Memory is mapped as Linux maps it on arm64, Normal and Inner Shareable, coherent
//!     DMA memory included. An acquire or release access (`ldar`, `stlr`, their
//!     exclusive, RCpc and atomic forms) orders only for the observers of the
//!     shareability domain of the location it accesses: the inner-shareable one, which
//!     the GSP is outside. So they order nothing here, whatever they access; the trace
//!     records them, and a mapping that made the shared memory Outer Shareable would be
//!     a different verdict.
//!   - A control dependency orders a load before later stores (a store is not made
//!     visible speculatively). Dependencies are not tracked through registers: a
//!     conditional branch that ran after a load of the other agent's pointer is taken to
//!     depend on it, because a producer decides whether there is room, and a consumer
//!     whether there is a message, by comparing that pointer. Address and data
//!     dependencies are not honoured, and neither is a control dependency on a slot's
//!     bytes.
//!
//! # Limits
//!
//! One execution is checked, not every one: a path the workload does not take is not
//! seen. `dc zva` stores (glibc's `memset` of whole blocks) are invisible to QEMU's
//! memory callbacks, so a slot zeroed that way has no store events. MMIO (the doorbell)
//! is not shared memory and orders nothing here, as in [`crate::contract`].

use std::{
    collections::BTreeMap,
    fmt,
    string::{
        String,
        ToString, //
    },
    vec::Vec,
};

use nova_core::gsp::fw::{
    slot_offset,
    GspMem,
    CPUQ_OFFSET,
    GSPQ_OFFSET,
    GSP_PAGE_SIZE,
    MSGQ_NUM_PAGES,
    MSGQ_READ_PTR_OFFSET,
    MSGQ_WRITE_PTR_OFFSET,
    RING_BYTES, //
};

use crate::ppo::{
    Access,
    Graph,
    Item,
    Select, //
};

/// The size of one [`Record`] in the trace file.
pub const RECORD_SIZE: usize = 32;

/// What one record is (the plugin's `kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A load of a registered region.
    Load,
    /// A store to a registered region.
    Store,
    /// A `dmb` or `dsb`.
    Barrier,
    /// An acquire or release access outside every region.
    OrderedOther,
    /// A conditional branch ran since the thread's previous record.
    Branch,
    /// The shim's mark: the load at `addr` returned `value`.
    Value,
    /// The shim's mark: a coherent allocation at `addr` of `value` bytes.
    Region,
    /// The shim's mark: the allocation at `addr` is freed.
    RegionEnd,
    /// The shim's mark: `addr` is where `vgsp_trace_mark` runs, which places the binary's
    /// code in memory.
    Image,
}

/// `info` bit of an access: it acquires.
pub const ACQUIRE: u16 = 1;
/// `info` bit of an access: it releases.
pub const RELEASE: u16 = 2;
/// `info` bit of an access: its acquire is RCpc (`ldapr`), not ordered after an earlier
/// release.
pub const RCPC: u16 = 4;
/// `info` bit of an [`Kind::OrderedOther`] access: it writes.
pub const WRITES: u16 = 8;
/// `info` bit of an [`Kind::OrderedOther`] access: it reads.
pub const READS: u16 = 16;

/// One record of the plugin's trace: 32 little-endian bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// The guest thread.
    pub tid: u32,
    /// What it is.
    pub kind: Kind,
    /// The access's size in bytes.
    pub size: u8,
    /// Ordering bits of an access; `type << 8 | CRm` of a barrier (type 1 `dmb`, 2 `dsb`).
    pub info: u16,
    /// The instruction's address.
    pub pc: u64,
    /// The address accessed, or as the kind says.
    pub addr: u64,
    /// A store's value read back, or as the kind says.
    pub value: u64,
}

/// Parses a trace file.
///
/// # Errors
///
/// A message naming the offset of the first bad record, or a length that is not whole
/// records.
pub fn parse(bytes: &[u8]) -> Result<Vec<Record>, String> {
    if !bytes.len().is_multiple_of(RECORD_SIZE) {
        return Err(format!(
            "the trace is {} bytes, not a whole number of {RECORD_SIZE}-byte records (was the run cut short?)",
            bytes.len()
        ));
    }
    let u64_at = |r: &[u8], o: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&r[o..o + 8]);
        u64::from_le_bytes(b)
    };
    bytes
        .chunks_exact(RECORD_SIZE)
        .enumerate()
        .map(|(i, r)| {
            let kind = match r[4] {
                1 => Kind::Load,
                2 => Kind::Store,
                3 => Kind::Barrier,
                4 => Kind::OrderedOther,
                5 => Kind::Branch,
                6 => Kind::Value,
                7 => Kind::Region,
                8 => Kind::RegionEnd,
                9 => Kind::Image,
                k => {
                    return Err(format!(
                        "record {i} (offset {}): unknown kind {k}",
                        i * RECORD_SIZE
                    ))
                }
            };
            Ok(Record {
                tid: u32::from_le_bytes([r[0], r[1], r[2], r[3]]),
                kind,
                size: r[5],
                info: u16::from_le_bytes([r[6], r[7]]),
                pc: u64_at(r, 8),
                addr: u64_at(r, 16),
                value: u64_at(r, 24),
            })
        })
        .collect()
}

/// The two queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Queue {
    /// CPU → GSP.
    Cpuq,
    /// GSP → CPU.
    Gspq,
}

impl Queue {
    fn name(self) -> &'static str {
        match self {
            Self::Cpuq => "cpuq",
            Self::Gspq => "gspq",
        }
    }
}

/// What an access of the shared memory touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// The write pointer of a queue, in its tx header (its producer's).
    WritePtr(Queue),
    /// The read pointer of a queue (its consumer's). r570 keeps the GSP's read pointer
    /// of `cpuq` in `gspq`'s rx header and the CPU's of `gspq` in `cpuq`'s.
    ReadPtr(Queue),
    /// A slot of a queue.
    Slot(Queue, u32),
    /// Anything else (the PTE page, the other header fields).
    Other,
}

impl Class {
    /// Classifies an access of `size` bytes at `offset` into the shared memory; an access
    /// that covers a pointer (an 8-byte store initialising a header, say) is of that
    /// pointer.
    pub(crate) fn of(offset: u64, size: u8) -> Self {
        // CAST: offsets inside `GspMem` fit in `usize`.
        let off = offset as usize;
        let covers = |word: usize| (off..off + usize::from(size.max(1))).contains(&word);
        for (q, base) in [(Queue::Cpuq, CPUQ_OFFSET), (Queue::Gspq, GSPQ_OFFSET)] {
            if covers(base + MSGQ_WRITE_PTR_OFFSET) {
                return Self::WritePtr(q);
            }
            // The read pointer of a queue lives in the other queue's rx header.
            if covers(base + MSGQ_READ_PTR_OFFSET) {
                let other = match q {
                    Queue::Cpuq => Queue::Gspq,
                    Queue::Gspq => Queue::Cpuq,
                };
                return Self::ReadPtr(other);
            }
            let data = base + slot_offset(0);
            let end = data + RING_BYTES;
            if (data..end).contains(&off) {
                // CAST: a slot index is below `MSGQ_NUM_PAGES`.
                return Self::Slot(q, ((off - data) / GSP_PAGE_SIZE) as u32);
            }
        }
        Self::Other
    }

    /// The offset of a pointer's word in the shared memory.
    fn word(self) -> Option<usize> {
        match self {
            Self::WritePtr(Queue::Cpuq) => Some(CPUQ_OFFSET + MSGQ_WRITE_PTR_OFFSET),
            Self::WritePtr(Queue::Gspq) => Some(GSPQ_OFFSET + MSGQ_WRITE_PTR_OFFSET),
            Self::ReadPtr(Queue::Cpuq) => Some(GSPQ_OFFSET + MSGQ_READ_PTR_OFFSET),
            Self::ReadPtr(Queue::Gspq) => Some(CPUQ_OFFSET + MSGQ_READ_PTR_OFFSET),
            _ => None,
        }
    }

    /// The pointer's value in what a store of `size` bytes at `offset` read back (the
    /// plugin keeps the first 8 bytes), if it is there. The same holds for the value a load
    /// returned, where the plugin knows it (the system-mode plugin, [`crate::kernel`]).
    pub(crate) fn stored(self, offset: u64, size: u8, value: u64) -> Option<u64> {
        // CAST: as above.
        let shift = self.word()?.checked_sub(offset as usize)?;
        (shift + 4 <= usize::from(size).min(8)).then(|| (value >> (8 * shift)) & 0xffff_ffff)
    }

    /// How the defect lines name it: its field, as r570's headers name it.
    fn name(self) -> String {
        match self {
            Self::WritePtr(q) => format!("{}.tx.writePtr", q.name()),
            // Where the field is: the other queue's rx header.
            Self::ReadPtr(Queue::Cpuq) => "gspq.rx.readPtr".to_string(),
            Self::ReadPtr(Queue::Gspq) => "cpuq.rx.readPtr".to_string(),
            Self::Slot(q, _) => format!("{} slot", q.name()),
            Self::Other => "shared memory".to_string(),
        }
    }
}

/// The verdicts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    /// Linux's DMA barrier contract.
    Contract,
    /// arm64's architecture.
    Arm64,
}

impl Verdict {
    /// Both, in the order they are reported.
    pub const ALL: [Self; 2] = [Self::Contract, Self::Arm64];

    /// The name in defect lines.
    pub fn name(self) -> &'static str {
        match self {
            Self::Contract => "contract",
            Self::Arm64 => "arm64",
        }
    }
}

/// A barrier instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Barrier {
    dsb: bool,
    crm: u8,
}

impl Barrier {
    fn from_info(info: u16) -> Self {
        Self {
            dsb: info >> 8 == 2,
            // CAST: the low nibble is CRm.
            crm: (info & 0xf) as u8,
        }
    }

    fn name(self) -> String {
        let option = match self.crm {
            0xf => "sy",
            0xe => "st",
            0xd => "ld",
            0xb => "ish",
            0xa => "ishst",
            0x9 => "ishld",
            0x7 => "nsh",
            0x6 => "nshst",
            0x5 => "nshld",
            0x3 => "osh",
            0x2 => "oshst",
            0x1 => "oshld",
            _ => "#?",
        };
        format!("{} {option}", if self.dsb { "dsb" } else { "dmb" })
    }

    /// Whether its domain reaches the GSP: outer shareable or full system.
    fn reaches_device(self) -> bool {
        matches!(self.crm, 0xf | 0xe | 0xd | 0x3 | 0x2 | 0x1)
    }

    /// What it orders under `verdict`, as the two sides of an ordering point.
    fn orders(self, verdict: Verdict) -> Option<(Select, Select)> {
        if !self.reaches_device() {
            return None;
        }
        Some(match (self.crm & 0x3, verdict) {
            // Full.
            (0x3, _) => (Select::All, Select::All),
            // Stores only.
            (0x2, _) => (Select::Stores, Select::Stores),
            // Loads: `dma_rmb` promises loads before loads, arm64 gives loads before all.
            (_, Verdict::Contract) => (Select::Loads, Select::Loads),
            (_, Verdict::Arm64) => (Select::Loads, Select::All),
        })
    }

    /// Why it does not order a pair of `earlier` and `later` accesses, for defect lines.
    fn why_not(self, verdict: Verdict) -> &'static str {
        match (self.reaches_device(), verdict) {
            (false, Verdict::Contract) => {
                return "is a CPU barrier (what fence(SeqCst) and smp_mb() compile to), which orders nothing for the GSP"
            }
            (false, Verdict::Arm64) => {
                return "orders only for the CPUs' inner-shareable domain, which the GSP is outside"
            }
            _ => {}
        }
        match (self.crm & 0x3, verdict) {
            (0x2, _) => "orders stores before stores only",
            (_, Verdict::Contract) => "is dma_rmb, which orders loads before loads only",
            _ => "orders loads before accesses only",
        }
    }
}

/// One decoded event of an agent.
#[derive(Clone, Copy, Debug)]
enum Ev {
    /// An access of the shared memory, with the pointer value it loaded or stored.
    Shared {
        class: Class,
        store: bool,
        pc: u64,
        value: Option<u64>,
    },
    Barrier(Barrier, u64),
    Branch,
    Other,
}

/// One side of the protocol, as one agent sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Agent {
    /// The driver.
    Cpu,
    /// The GSP.
    Gsp,
}

impl Agent {
    /// The name in defect lines.
    pub fn name(self) -> &'static str {
        match self {
            Self::Cpu => "cpu",
            Self::Gsp => "gsp",
        }
    }

    fn tx(self) -> Queue {
        match self {
            Self::Cpu => Queue::Cpuq,
            Self::Gsp => Queue::Gspq,
        }
    }

    fn rx(self) -> Queue {
        match self {
            Self::Cpu => Queue::Gspq,
            Self::Gsp => Queue::Cpuq,
        }
    }
}

/// A piece of a defect's text: words, or the source line of a pc.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Piece {
    /// Words.
    Text(String),
    /// The source line of this pc.
    Line(u64),
}

/// One missing ordering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Defect {
    /// Under which verdict.
    pub verdict: Verdict,
    /// Whose.
    pub agent: Agent,
    /// The earlier access: `load` or `store` and what.
    pub earlier: String,
    /// The later access.
    pub later: String,
    /// What is missing.
    pub missing: String,
    /// What else is there: the barriers that do not order the pair, with their lines.
    pub notes: Vec<Vec<Piece>>,
    /// Where: the pc whose source line the defect is reported at.
    pub at: u64,
    /// The pc of the earlier access; 0 when there is none (a slot read that no pointer
    /// load published).
    pub earlier_pc: u64,
    /// The pc of the later access.
    pub later_pc: u64,
}

impl Defect {
    /// The barrier that would order the pair, between the two accesses, under the
    /// defect's verdict: Linux's DMA barrier and the instruction arm64 compiles it to.
    pub fn remedy(&self) -> &'static str {
        let load = |access: &str| access.starts_with("load");
        match (load(&self.earlier), load(&self.later), self.verdict) {
            (true, true, _) => "dma_mb(Read) (`dmb oshld`)",
            (false, false, _) => "dma_mb(Write) (`dmb oshst`)",
            (true, false, Verdict::Contract) => "dma_mb(Full) (`dmb osh`)",
            // arm64 orders a load before later stores with `dmb oshld` already.
            (true, false, Verdict::Arm64) => "dma_mb(Read) (`dmb oshld`) or dma_mb(Full)",
            (false, true, _) => "dma_mb(Full) (`dmb osh`)",
        }
    }
}

/// What a check of a trace found.
#[derive(Debug, Default)]
pub struct Report {
    /// Every missing ordering, one per pair of accesses.
    pub defects: Vec<Defect>,
    /// Records in the trace.
    pub events: usize,
    /// Threads in the trace.
    pub threads: usize,
    /// Pairs of accesses checked per agent (the same under both verdicts).
    pub pairs: BTreeMap<Agent, usize>,
    /// Acquire and release accesses in the trace, which order nothing for the GSP.
    pub acquire_release: usize,
}

/// Whether slot `s` is in the cyclic range `[from, to)` of the ring.
fn in_range(s: u32, from: u32, to: u32) -> bool {
    let n = MSGQ_NUM_PAGES;
    (s + n - from) % n < (to + n - from) % n
}

fn ptr_value(v: u64) -> u32 {
    // CAST: a pointer is a `u32`; upstream reduces it modulo the ring as we do here.
    (v as u32) % MSGQ_NUM_PAGES
}

/// Decodes the events of one thread against the shared region at `base`.
///
/// # Errors
///
/// A pointer load without the shim's mark of its value.
fn decode(records: &[&Record], base: u64, len: u64) -> Result<Vec<Ev>, String> {
    let mut evs: Vec<Ev> = Vec::with_capacity(records.len());
    // The pointer load still waiting for its value mark.
    let mut awaiting: Option<(usize, u64)> = None;
    for r in records {
        let shared = (base..base + len).contains(&r.addr);
        match r.kind {
            Kind::Load | Kind::Store if shared => {
                let class = Class::of(r.addr - base, r.size);
                if class == Class::Other {
                    evs.push(Ev::Other);
                    continue;
                }
                if let Some((i, _)) = awaiting.take() {
                    return Err(missing_mark(&evs[i]));
                }
                let store = r.kind == Kind::Store;
                if let (
                    Class::Slot(..),
                    Some(Ev::Shared {
                        class: c, store: s, ..
                    }),
                ) = (class, evs.last())
                {
                    // One event per run of accesses of one slot.
                    if *c == class && *s == store {
                        continue;
                    }
                }
                let is_ptr = matches!(class, Class::WritePtr(_) | Class::ReadPtr(_));
                let value = if store {
                    class.stored(r.addr - base, r.size, r.value)
                } else {
                    None
                };
                evs.push(Ev::Shared {
                    class,
                    store,
                    pc: r.pc,
                    value,
                });
                if is_ptr && !store {
                    awaiting = Some((evs.len() - 1, r.addr));
                }
            }
            Kind::Value => {
                if let Some((i, addr)) = awaiting {
                    if addr == r.addr {
                        if let Ev::Shared { value, .. } = &mut evs[i] {
                            *value = Some(r.value);
                        }
                        awaiting = None;
                    }
                }
                evs.push(Ev::Other);
            }
            // An acquire or release access elsewhere orders nothing for the GSP (see the
            // module documentation); `check` counts them from the records.
            Kind::OrderedOther => evs.push(Ev::Other),
            Kind::Barrier => evs.push(Ev::Barrier(Barrier::from_info(r.info), r.pc)),
            Kind::Branch => evs.push(Ev::Branch),
            _ => evs.push(Ev::Other),
        }
    }
    if let Some((i, _)) = awaiting {
        return Err(missing_mark(&evs[i]));
    }
    Ok(evs)
}

fn missing_mark(ev: &Ev) -> String {
    let pc = match ev {
        Ev::Shared { pc, .. } => *pc,
        _ => 0,
    };
    format!(
        "the pointer load at pc {pc:#x} has no value mark: build the traced program with the kernel shim's `trace` feature, and load shared words through it"
    )
}

/// The ordering graph's items of `evs` under `verdict`, one per event.
fn items(evs: &[Ev], agent: Agent, verdict: Verdict) -> Vec<Item> {
    let arm = verdict == Verdict::Arm64;
    evs.iter()
        .map(|ev| match *ev {
            Ev::Shared { class, store, .. } => Item::Access(Access {
                reads: !store,
                writes: store,
                loc: Some(loc_of(class)),
                // The other agent's pointers are what the control flow compares.
                control: arm && !store && is_peer_ptr(agent, class),
            }),
            Ev::Barrier(b, _) => match b.orders(verdict) {
                Some((before, after)) => Item::Order { before, after },
                None => Item::Other,
            },
            Ev::Branch if arm => Item::Order {
                before: Select::ControlLoads,
                after: Select::Stores,
            },
            _ => Item::Other,
        })
        .collect()
}

fn loc_of(class: Class) -> u64 {
    match class {
        Class::WritePtr(q) => q as u64,
        Class::ReadPtr(q) => 2 + q as u64,
        Class::Slot(q, s) => 0x100 + ((q as u64) << 8) + u64::from(s),
        Class::Other => 0xffff,
    }
}

fn is_peer_ptr(agent: Agent, class: Class) -> bool {
    class == Class::WritePtr(agent.rx()) || class == Class::ReadPtr(agent.tx())
}

/// A pair the protocol needs ordered: event `earlier` before event `later`.
#[derive(Clone, Copy, Debug)]
enum Need {
    /// A consumer's slot load after the write-pointer load that published it; `None`
    /// when no load published the slot at all.
    Published(Option<usize>),
    /// A slot access before the own pointer store that hands the slot over.
    HandedOver(usize),
    /// A producer's slot store after the read-pointer load that showed the slot free.
    Freed(Option<usize>),
}

/// The own pointer store at event `i` moves the pointer from `old` to `new`: records the
/// slots it hands over (published or freed) in `at`, and that the accesses `waiting` for
/// them need ordering before it. Returns `new`.
fn hand_over(
    i: usize,
    old: u32,
    new: u32,
    at: &mut [Option<usize>],
    waiting: &mut [Vec<usize>],
    out: &mut Vec<(usize, Need)>,
) -> u32 {
    for s in (0..MSGQ_NUM_PAGES).filter(|&s| in_range(s, old, new)) {
        // CAST: a slot index is below 63.
        let s = s as usize;
        at[s] = Some(i);
        out.extend(waiting[s].drain(..).map(|a| (a, Need::HandedOver(i))));
    }
    new
}

/// Walks one agent's events with the pointer values and returns, per slot access, what
/// it needs ordered.
fn needs(evs: &[Ev], agent: Agent) -> Vec<(usize, Need)> {
    // CAST: the ring's 63 slots fit in `usize`.
    let n = MSGQ_NUM_PAGES as usize;
    let (tx, rx) = (agent.tx(), agent.rx());
    let mut own_w = 0u32;
    let mut own_r = 0u32;
    // Per slot: the own pointer store that last published (tx) or freed (rx) it.
    let mut published_at: Vec<Option<usize>> = vec![None; n];
    let mut freed_at: Vec<Option<usize>> = vec![None; n];
    // Pointer loads of the other agent's pointers: (index, value, own pointer then).
    let mut wptr_loads: Vec<(usize, u32, u32)> = Vec::new();
    let mut rptr_loads: Vec<(usize, u32, u32)> = Vec::new();
    // Slot accesses waiting for the own pointer store that hands their slot over.
    let mut waiting: Vec<Vec<usize>> = vec![Vec::new(); 2 * n];
    let mut out = Vec::new();
    for (i, ev) in evs.iter().enumerate() {
        let Ev::Shared {
            class,
            store,
            value,
            ..
        } = *ev
        else {
            continue;
        };
        match class {
            Class::WritePtr(q) if q == rx && !store => {
                if let Some(v) = value {
                    wptr_loads.push((i, ptr_value(v), own_r));
                }
            }
            Class::ReadPtr(q) if q == tx && !store => {
                if let Some(v) = value {
                    rptr_loads.push((i, ptr_value(v), own_w));
                }
            }
            // A store whose value the plugin could not read back (part of a wide store)
            // initialises the header: it hands nothing over.
            Class::WritePtr(q) if q == tx && store => {
                if let Some(v) = value {
                    own_w = hand_over(
                        i,
                        own_w,
                        ptr_value(v),
                        &mut published_at,
                        &mut waiting[..n],
                        &mut out,
                    );
                }
            }
            Class::ReadPtr(q) if q == rx && store => {
                if let Some(v) = value {
                    own_r = hand_over(
                        i,
                        own_r,
                        ptr_value(v),
                        &mut freed_at,
                        &mut waiting[n..],
                        &mut out,
                    );
                }
            }
            Class::Slot(q, s) if q == rx && !store => {
                let after = freed_at[s as usize];
                let by = wptr_loads
                    .iter()
                    .rev()
                    .take_while(|(j, ..)| after.is_none_or(|f| *j > f))
                    .find(|(_, v, r)| in_range(s, *r, *v))
                    .map(|(j, ..)| *j);
                out.push((i, Need::Published(by)));
                waiting[n + s as usize].push(i);
            }
            Class::Slot(q, s) if q == tx && store => {
                if let Some(p) = published_at[s as usize] {
                    let by = rptr_loads
                        .iter()
                        .rev()
                        .take_while(|(j, ..)| *j > p)
                        .find(|(_, v, w)| !in_range(s, *v, *w))
                        .map(|(j, ..)| *j);
                    out.push((i, Need::Freed(by)));
                }
                waiting[s as usize].push(i);
            }
            _ => {}
        }
    }
    out
}

fn access_name(ev: &Ev) -> String {
    match ev {
        Ev::Shared { class, store, .. } => {
            format!("{} {}", if *store { "store" } else { "load" }, class.name())
        }
        _ => "?".to_string(),
    }
}

fn pc_of(ev: &Ev) -> u64 {
    match ev {
        Ev::Shared { pc, .. } | Ev::Barrier(_, pc) => *pc,
        _ => 0,
    }
}

/// The barriers between events `from` and `to`, which do not order the pair under
/// `verdict` (else it would be ordered), as notes with their lines.
fn unordering_barriers(evs: &[Ev], from: usize, to: usize, verdict: Verdict) -> Vec<Vec<Piece>> {
    let mut out = Vec::new();
    let mut seen: Vec<u64> = Vec::new();
    for ev in &evs[from + 1..to] {
        if let Ev::Barrier(b, pc) = *ev {
            if seen.contains(&pc) {
                continue;
            }
            seen.push(pc);
            out.push(vec![
                Piece::Text(format!("the `{}` at ", b.name())),
                Piece::Line(pc),
                Piece::Text(format!(" {}", b.why_not(verdict))),
            ]);
        }
    }
    out
}

/// The first barrier after the pointer store at event `at`, before the agent's next
/// shared access: one placed after the store instead of before it.
fn barrier_after(evs: &[Ev], at: usize) -> Option<Vec<Piece>> {
    evs[at + 1..]
        .iter()
        .take_while(|e| !matches!(e, Ev::Shared { .. }))
        .find_map(|e| match *e {
            Ev::Barrier(b, pc) => Some(vec![
                Piece::Text(format!("the `{}` at ", b.name())),
                Piece::Line(pc),
                Piece::Text(" comes after the pointer store, not before it".into()),
            ]),
            _ => None,
        })
}

/// Checks one agent's events under both verdicts.
fn check_agent(evs: &[Ev], agent: Agent, report: &mut Report) {
    let needs = needs(evs, agent);
    *report.pairs.entry(agent).or_default() += needs.len();
    let (tx, rx) = (agent.tx(), agent.rx());
    let is = |class: Class, store: bool| move |i: usize| matches!(evs[i], Ev::Shared { class: c, store: s, .. } if c == class && s == store);
    for verdict in Verdict::ALL {
        let graph = Graph::new(&items(evs, agent, verdict));
        let after_wptr = graph.latest_before(is(Class::WritePtr(rx), false));
        let after_rptr = graph.latest_before(is(Class::ReadPtr(tx), false));
        let before_wptr = graph.earliest_after(is(Class::WritePtr(tx), true));
        let before_rptr = graph.earliest_after(is(Class::ReadPtr(rx), true));
        for &(i, need) in &needs {
            let defect = |earlier: usize, later: usize, missing: &str, notes, at: usize| Defect {
                verdict,
                agent,
                earlier: access_name(&evs[earlier]),
                later: access_name(&evs[later]),
                missing: missing.to_string(),
                notes,
                at: pc_of(&evs[at]),
                earlier_pc: pc_of(&evs[earlier]),
                later_pc: pc_of(&evs[later]),
            };
            let store = matches!(evs[i], Ev::Shared { store: true, .. });
            let found = match need {
                Need::Published(None) => Some(Defect {
                    verdict,
                    agent,
                    earlier: format!("load {}", Class::WritePtr(rx).name()),
                    later: access_name(&evs[i]),
                    missing: "no load of the write pointer published this slot: the read is outside the published elements".into(),
                    notes: Vec::new(),
                    at: pc_of(&evs[i]),
                    earlier_pc: 0,
                    later_pc: pc_of(&evs[i]),
                }),
                Need::Freed(None) => Some(Defect {
                    verdict,
                    agent,
                    earlier: format!("load {}", Class::ReadPtr(tx).name()),
                    later: access_name(&evs[i]),
                    missing: "no load of the read pointer showed this slot free: the store overwrites an element the other side may still read".into(),
                    notes: Vec::new(),
                    at: pc_of(&evs[i]),
                    earlier_pc: 0,
                    later_pc: pc_of(&evs[i]),
                }),
                Need::Published(Some(l)) => (after_wptr[i] < Some(l)).then(|| {
                    let notes = unordering_barriers(evs, l, i, verdict);
                    defect(l, i, "no load->load ordering", notes, l)
                }),
                Need::Freed(Some(l)) => (after_rptr[i] < Some(l)).then(|| {
                    let missing = match verdict {
                        Verdict::Contract => {
                            "no load->store ordering (a control dependency is not honoured)"
                        }
                        Verdict::Arm64 => "no load->store ordering, not even by a control dependency",
                    };
                    let notes = unordering_barriers(evs, l, i, verdict);
                    defect(l, i, missing, notes, l)
                }),
                Need::HandedOver(f) => {
                    let reached = if store { before_wptr[i] } else { before_rptr[i] };
                    reached.is_none_or(|r| r > f).then(|| {
                        let missing = if store {
                            "no store->store ordering"
                        } else {
                            "no load->store ordering"
                        };
                        let mut notes = unordering_barriers(evs, i, f, verdict);
                        notes.extend(barrier_after(evs, f));
                        defect(i, f, missing, notes, f)
                    })
                }
            };
            report.defects.extend(found);
        }
    }
}

/// Checks a trace of both agents: the driver's thread and the GSP's.
///
/// # Errors
///
/// A message naming what the trace lacks: the shared memory's region, one of the two
/// agents, a pointer load's value.
pub fn check(records: &[Record]) -> Result<Report, String> {
    decide(records, true)
}

/// Checks the driver's side alone: the agent that publishes `cpuq` elements, under the
/// same rules as [`check`]. For a trace in which the GSP is not traced: the emulated
/// GH100 of `cargo xtask upstream boot --arch arm64 --ordering` runs in a process of its
/// own, and its ordering is ours, decided by `cargo xtask ordering-trace`. Every record
/// of another thread is left out.
///
/// # Errors
///
/// As [`check`], but a trace without the GSP's side is none.
pub fn check_driver(records: &[Record]) -> Result<Report, String> {
    decide(records, false)
}

/// Checks the driver's agent, and the GSP's when `gsp` says so.
fn decide(records: &[Record], gsp: bool) -> Result<Report, String> {
    let size = core::mem::size_of::<GspMem>() as u64;
    let regions: Vec<u64> = records
        .iter()
        .filter(|r| r.kind == Kind::Region && r.value == size)
        .map(|r| r.addr)
        .collect();
    let base = match regions.as_slice() {
        [base] => *base,
        [] => {
            return Err(format!(
                "no coherent region of GspMem's size ({size} bytes) in the trace: was the program built with the kernel shim's `trace` feature, and did it allocate the shared memory?"
            ))
        }
        more => {
            return Err(format!(
                "{} coherent regions of GspMem's size in the trace; the checker expects one queue",
                more.len()
            ))
        }
    };
    let mut tids: Vec<u32> = records.iter().map(|r| r.tid).collect();
    tids.sort_unstable();
    tids.dedup();
    let publisher = |q: Queue| {
        records
            .iter()
            .find(|r| {
                let at = r.addr.wrapping_sub(base);
                let class = Class::of(at, r.size);
                r.kind == Kind::Store
                    && at < size
                    && class == Class::WritePtr(q)
                    && class.stored(at, r.size, r.value).is_some_and(|v| v != 0)
            })
            .map(|r| r.tid)
    };
    let cpu = publisher(Queue::Cpuq)
        .ok_or("no thread published a cpuq element: the driver sent nothing")?;
    let mut agents = vec![(Agent::Cpu, cpu)];
    if gsp {
        let gsp = publisher(Queue::Gspq)
            .ok_or("no thread published a gspq element: the GSP answered nothing")?;
        if cpu == gsp {
            return Err(format!(
                "thread {cpu} publishes both queues: the driver and the GSP must run on threads of their own"
            ));
        }
        agents.push((Agent::Gsp, gsp));
    }
    let mut report = Report {
        events: records.len(),
        threads: tids.len(),
        acquire_release: records
            .iter()
            .filter(|r| {
                r.kind == Kind::OrderedOther
                    || matches!(r.kind, Kind::Load | Kind::Store)
                        && r.info & (ACQUIRE | RELEASE) != 0
            })
            .count(),
        ..Report::default()
    };
    for (agent, tid) in agents {
        let mine: Vec<&Record> = records.iter().filter(|r| r.tid == tid).collect();
        let evs = decode(&mine, base, size)?;
        check_agent(&evs, agent, &mut report);
    }
    Ok(report)
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
