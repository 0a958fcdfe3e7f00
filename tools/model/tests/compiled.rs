// SPDX-License-Identifier: GPL-2.0

//! Tests of the decision procedure over traces of compiled code ([`vgsp_model::compiled`])
//! on synthetic traces, and of the preserved-program-order graph it is built on
//! ([`vgsp_model::ppo`]).
//!
//! The traces are built by hand ([`Trace`]): a minimal correct exchange of one message
//! each way, whose producer wraps the ring and reuses a slot, and then that exchange with
//! one ordering point changed per test: a barrier left out, moved, weakened, replaced by
//! a conditional branch or by acquire/release accesses. Each test asserts exactly which
//! pairs the checker reports missing, under which verdict, for which agent.

use nova_core::gsp::fw::{
    GspMem,
    CPUQ_OFFSET,
    GSPQ_OFFSET,
    MSGQ_NUM_PAGES,
    MSGQ_READ_PTR_OFFSET,
    MSGQ_WRITE_PTR_OFFSET, //
};
use vgsp_model::{
    compiled::{
        check,
        check_driver,
        parse,
        Agent,
        Class,
        Defect,
        Kind,
        Piece,
        Queue,
        Record,
        Report,
        Verdict,
        ACQUIRE,
        READS,
        RECORD_SIZE,
        RELEASE,
        WRITES, //
    },
    ppo::{
        Access,
        Graph,
        Item,
        Select, //
    },
};

/// The driver's thread.
const CPU: u32 = 1;
/// The virtual GSP's thread.
const GSP: u32 = 2;
/// Where the shared memory is.
const BASE: u64 = 0x7f00_0000_0000;

/// `dmb` (barrier type 1).
const DMB: u16 = 1 << 8;
/// `dsb` (barrier type 2).
const DSB: u16 = 2 << 8;
const SY: u16 = 0xf;
const ISH: u16 = 0xb;
const OSH: u16 = 0x3;
const OSHST: u16 = 0x2;
const OSHLD: u16 = 0x1;

/// The size of the shared memory, as the region mark announces it.
fn gsp_mem_size() -> u64 {
    core::mem::size_of::<GspMem>() as u64
}

/// The offset of a pointer's word in the shared memory, computed here independently of
/// the checker (r570's read pointers live in the other queue's rx header).
fn ptr_offset(field: Class) -> usize {
    match field {
        Class::WritePtr(Queue::Cpuq) => CPUQ_OFFSET + MSGQ_WRITE_PTR_OFFSET,
        Class::WritePtr(Queue::Gspq) => GSPQ_OFFSET + MSGQ_WRITE_PTR_OFFSET,
        Class::ReadPtr(Queue::Cpuq) => GSPQ_OFFSET + MSGQ_READ_PTR_OFFSET,
        Class::ReadPtr(Queue::Gspq) => CPUQ_OFFSET + MSGQ_READ_PTR_OFFSET,
        other => panic!("{other:?} is not a pointer"),
    }
}

fn slot_offset(queue: Queue, slot: u32) -> usize {
    let base = match queue {
        Queue::Cpuq => CPUQ_OFFSET,
        Queue::Gspq => GSPQ_OFFSET,
    };
    base + nova_core::gsp::fw::slot_offset(slot)
}

/// What stands at one ordering point of the exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fence {
    /// A barrier record of this `info`.
    Barrier(u16),
    /// Nothing.
    Nothing,
    /// A conditional branch.
    Branch,
    /// An acquire or release access elsewhere ([`Kind::OrderedOther`]) of this `info`.
    Ordered(u16),
    /// No barrier; the pointer load before the point acquires instead.
    AcquireLoad,
    /// No barrier; the pointer store after the point releases instead.
    ReleaseStore,
    /// The barrier of this `info` placed after the pointer store instead of before it.
    After(u16),
}

/// The ordering points of the exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Site {
    /// Before the cpu's first store of `cpuq.tx.writePtr`.
    CpuPublish,
    /// After the cpu's load of `gspq.tx.writePtr`.
    CpuReceive,
    /// Before the cpu's store of its read pointer of `gspq`.
    CpuFree,
    /// Before the cpu's store of `cpuq.tx.writePtr` that fills (and wraps) the ring.
    CpuFill,
    /// After the cpu's load of the gsp's read pointer of `cpuq`, before it reuses slot 0.
    CpuReuse,
    /// Before the cpu's store of `cpuq.tx.writePtr` that publishes the reused slot.
    CpuRepublish,
    /// After the gsp's load of `cpuq.tx.writePtr`.
    GspReceive,
    /// Before the gsp's store of its read pointer of `cpuq`.
    GspFree,
    /// Before the gsp's store of `gspq.tx.writePtr`.
    GspPublish,
}

/// What a correct exchange has at `site`.
fn correct(site: Site) -> Fence {
    match site {
        Site::CpuPublish | Site::CpuFill | Site::CpuRepublish | Site::GspPublish => {
            Fence::Barrier(DMB | OSHST)
        }
        Site::CpuReceive | Site::GspReceive => Fence::Barrier(DMB | OSHLD),
        Site::CpuFree | Site::CpuReuse | Site::GspFree => Fence::Barrier(DMB | OSH),
    }
}

/// A synthetic trace.
struct Trace {
    records: Vec<Record>,
    pc: u64,
}

impl Trace {
    fn new() -> Self {
        Self {
            records: Vec::new(),
            pc: 0x40_0000,
        }
    }

    /// Pushes a record at a pc of its own and returns the pc.
    fn push(&mut self, tid: u32, kind: Kind, size: u8, info: u16, addr: u64, value: u64) -> u64 {
        self.pc += 4;
        self.records.push(Record {
            tid,
            kind,
            size,
            info,
            pc: self.pc,
            addr,
            value,
        });
        self.pc
    }

    /// The mark of the shared memory.
    fn region(&mut self) -> u64 {
        self.push(CPU, Kind::Region, 0, 0, BASE, gsp_mem_size())
    }

    fn load_ptr_info(&mut self, tid: u32, field: Class, value: u32, info: u16) -> u64 {
        let addr = BASE + ptr_offset(field) as u64;
        let pc = self.push(tid, Kind::Load, 4, info, addr, 0);
        self.push(tid, Kind::Value, 4, 0, addr, value.into());
        pc
    }

    /// A load of a pointer and the shim's mark of what it loaded.
    fn load_ptr(&mut self, tid: u32, field: Class, value: u32) -> u64 {
        self.load_ptr_info(tid, field, value, 0)
    }

    /// A load of a pointer without the shim's mark.
    fn load_ptr_unmarked(&mut self, tid: u32, field: Class) -> u64 {
        let addr = BASE + ptr_offset(field) as u64;
        self.push(tid, Kind::Load, 4, 0, addr, 0)
    }

    fn store_ptr_info(&mut self, tid: u32, field: Class, value: u32, info: u16) -> u64 {
        let addr = BASE + ptr_offset(field) as u64;
        self.push(tid, Kind::Store, 4, info, addr, value.into())
    }

    fn store_ptr(&mut self, tid: u32, field: Class, value: u32) -> u64 {
        self.store_ptr_info(tid, field, value, 0)
    }

    fn load_slot(&mut self, tid: u32, queue: Queue, slot: u32) -> u64 {
        let addr = BASE + slot_offset(queue, slot) as u64;
        self.push(tid, Kind::Load, 8, 0, addr, 0)
    }

    fn store_slot(&mut self, tid: u32, queue: Queue, slot: u32) -> u64 {
        let addr = BASE + slot_offset(queue, slot) as u64;
        self.push(tid, Kind::Store, 8, 0, addr, 0x5a5a_0000 + u64::from(slot))
    }

    fn barrier(&mut self, tid: u32, info: u16) -> u64 {
        self.push(tid, Kind::Barrier, 0, info, 0, 0)
    }

    fn branch(&mut self, tid: u32) -> u64 {
        self.push(tid, Kind::Branch, 0, 0, 0, 0)
    }

    fn ordered(&mut self, tid: u32, info: u16) -> u64 {
        // Outside every region: a lock word, say.
        self.push(tid, Kind::OrderedOther, 4, info, 0x1000, 0)
    }

    /// What stands at an ordering point, if it is a record here.
    fn fence(&mut self, tid: u32, fence: Fence) {
        match fence {
            Fence::Barrier(info) => {
                self.barrier(tid, info);
            }
            Fence::Branch => {
                self.branch(tid);
            }
            Fence::Ordered(info) => {
                self.ordered(tid, info);
            }
            Fence::Nothing | Fence::AcquireLoad | Fence::ReleaseStore | Fence::After(_) => {}
        }
    }

    /// A producer's stores of `slots` of `queue`, `fence`, and the store of the write
    /// pointer `wptr` that publishes them; returns the pointer store's pc.
    fn send(
        &mut self,
        tid: u32,
        queue: Queue,
        slots: core::ops::Range<u32>,
        wptr: u32,
        fence: Fence,
    ) -> u64 {
        for s in slots {
            self.store_slot(tid, queue, s);
        }
        self.fence(tid, fence);
        let info = if fence == Fence::ReleaseStore {
            RELEASE
        } else {
            0
        };
        let pc = self.store_ptr_info(tid, Class::WritePtr(queue), wptr, info);
        if let Fence::After(info) = fence {
            self.barrier(tid, info);
        }
        pc
    }

    /// A consumer's load of the write pointer of `queue` (showing `wptr`), `published`,
    /// its load of `slot`, `free`, and the store of its read pointer `rptr`.
    fn receive(
        &mut self,
        tid: u32,
        queue: Queue,
        (wptr, slot, rptr): (u32, u32, u32),
        published: Fence,
        free: Fence,
    ) {
        let info = if published == Fence::AcquireLoad {
            ACQUIRE
        } else {
            0
        };
        self.load_ptr_info(tid, Class::WritePtr(queue), wptr, info);
        self.fence(tid, published);
        self.load_slot(tid, queue, slot);
        self.fence(tid, free);
        self.store_ptr(tid, Class::ReadPtr(queue), rptr);
    }

    /// A consumer's receipt of the first message of `queue`, in slot 0, with
    /// `at(published)` and `at(free)` at its ordering points.
    fn receive_first(
        &mut self,
        tid: u32,
        queue: Queue,
        at: &impl Fn(Site) -> Fence,
        published: Site,
        free: Site,
    ) {
        self.receive(tid, queue, (1, 0, 1), at(published), at(free));
    }
}

/// The start of the exchange with `at(site)` at each ordering point: the cpu sends a
/// message in cpuq slot 0, the gsp receives it and answers in gspq slot 0.
fn answered(at: &impl Fn(Site) -> Fence) -> Trace {
    let mut t = Trace::new();
    t.region();
    // The cpu sends.
    t.send(CPU, Queue::Cpuq, 0..1, 1, at(Site::CpuPublish));
    // The gsp receives and answers.
    t.receive_first(GSP, Queue::Cpuq, at, Site::GspReceive, Site::GspFree);
    t.send(GSP, Queue::Gspq, 0..1, 1, at(Site::GspPublish));
    t
}

/// The exchange with `at(site)` at each ordering point: [`answered`], the cpu receives
/// the answer; then the cpu fills the rest of the ring (slots 1 to the last, its write
/// pointer wraps to 0) and, having loaded the gsp's read pointer (1: slot 0 is free),
/// reuses slot 0.
fn exchange(at: impl Fn(Site) -> Fence) -> Trace {
    let last = MSGQ_NUM_PAGES;
    let mut t = answered(&at);
    // The cpu receives the answer.
    t.receive_first(CPU, Queue::Gspq, &at, Site::CpuReceive, Site::CpuFree);
    // The cpu fills the ring: the write pointer wraps.
    t.send(CPU, Queue::Cpuq, 1..last, 0, at(Site::CpuFill));
    // And reuses slot 0 once the gsp's read pointer shows it free.
    let reuse = at(Site::CpuReuse);
    let info = if reuse == Fence::AcquireLoad {
        ACQUIRE
    } else {
        0
    };
    t.load_ptr_info(CPU, Class::ReadPtr(Queue::Cpuq), 1, info);
    t.fence(CPU, reuse);
    t.send(CPU, Queue::Cpuq, 0..1, 1, at(Site::CpuRepublish));
    t
}

/// The exchange with `fence` at `site` and the correct fences elsewhere.
fn with(site: Site, fence: Fence) -> Trace {
    exchange(|s| if s == site { fence } else { correct(s) })
}

/// The pairs each agent has in the exchange: the cpu's first slot store (handed over),
/// its slot load of the answer (published, handed over), the slots it fills (handed over)
/// and the reused slot (freed, handed over); the gsp's slot load and its slot store.
const CPU_PAIRS: usize = 1 + 2 + (MSGQ_NUM_PAGES as usize - 1) + 2;
const GSP_PAIRS: usize = 2 + 1;

fn run(trace: &Trace) -> Report {
    check(&trace.records).unwrap_or_else(|e| panic!("check failed: {e}"))
}

/// The defects, as `(verdict, agent, earlier, later, missing)`.
fn summary(report: &Report) -> Vec<(Verdict, Agent, &str, &str, &str)> {
    report
        .defects
        .iter()
        .map(|d| {
            (
                d.verdict,
                d.agent,
                d.earlier.as_str(),
                d.later.as_str(),
                d.missing.as_str(),
            )
        })
        .collect()
}

fn of(report: &Report, verdict: Verdict) -> Vec<&Defect> {
    report
        .defects
        .iter()
        .filter(|d| d.verdict == verdict)
        .collect()
}

/// A defect as [`summary`] lists it.
type Summary = (Verdict, Agent, &'static str, &'static str, &'static str);

/// The same defect under every verdict, in the order of [`Verdict::ALL`].
fn both(
    agent: Agent,
    earlier: &'static str,
    later: &'static str,
    missing: &'static str,
) -> Vec<Summary> {
    Verdict::ALL
        .iter()
        .map(|&verdict| (verdict, agent, earlier, later, missing))
        .collect()
}

/// Checks the exchange with `fence` at `site` and asserts that it gives exactly the
/// defects `want`; returns the trace and the report, for what a test checks further.
fn defects_at(site: Site, fence: Fence, want: &[Summary]) -> (Trace, Report) {
    let trace = with(site, fence);
    let report = run(&trace);
    assert_eq!(summary(&report), want);
    (trace, report)
}

/// Asserts that `report` has one defect under each verdict, in the order of
/// [`Verdict::ALL`] and nothing else: between `earlier` and `later` of `agent`, its
/// `missing` saying `why`.
fn assert_both_saying(report: &Report, agent: Agent, (earlier, later): (&str, &str), why: &str) {
    let s = summary(report);
    assert_eq!(s.len(), Verdict::ALL.len(), "{s:?}");
    for (d, verdict) in s.iter().zip(Verdict::ALL) {
        assert_eq!((d.0, d.1, d.2, d.3), (verdict, agent, earlier, later));
        assert!(d.4.contains(why), "{}", d.4);
    }
}

/// Asserts that the checker refuses `trace` with an error that says `why`; returns the
/// error.
fn refused(trace: &Trace, why: &str) -> String {
    let err = check(&trace.records).unwrap_err();
    assert!(err.contains(why), "{err}");
    err
}

/// One test a case: the exchange with the ordering point `site` changed to `fence` gives
/// exactly the defects `want` (as [`summary`] lists them) and, where the case says so,
/// counts that many acquire or release accesses.
macro_rules! changed_point {
    ($(
        $(#[$meta:meta])*
        $name:ident: $site:ident, $fence:expr => $want:expr $(, acquire_release $ar:expr)?;
    )*) => {$(
        $(#[$meta])*
        #[test]
        fn $name() {
            let (_, _report) = defects_at(Site::$site, $fence, &$want);
            $(assert_eq!(_report.acquire_release, $ar);)?
        }
    )*};
}

/// A defect's notes as text, the lines by their pc.
fn notes(defect: &Defect) -> Vec<String> {
    defect
        .notes
        .iter()
        .map(|note| {
            note.iter()
                .map(|p| match p {
                    Piece::Text(t) => t.clone(),
                    Piece::Line(pc) => format!("{pc:#x}"),
                })
                .collect()
        })
        .collect()
}

fn pc_of(trace: &Trace, pred: impl Fn(&Record) -> bool) -> Vec<u64> {
    trace
        .records
        .iter()
        .filter(|r| pred(r))
        .map(|r| r.pc)
        .collect()
}

#[test]
fn correct_exchange_has_no_defect() {
    let trace = exchange(correct);
    let report = run(&trace);
    assert_eq!(report.defects, Vec::<Defect>::new());
    assert_eq!(report.pairs.get(&Agent::Cpu), Some(&CPU_PAIRS));
    assert_eq!(report.pairs.get(&Agent::Gsp), Some(&GSP_PAIRS));
    assert!(report.pairs.values().all(|&n| n > 0));
    assert_eq!(report.events, trace.records.len());
    assert_eq!(report.threads, 2);
    assert_eq!(report.acquire_release, 0);
}

#[test]
fn slot_accessed_by_several_records_is_one_event() {
    // The gsp's answer written by two stores of slot 0 (8 bytes each), read by two loads:
    // the same pairs as one access each.
    let mut t = Trace::new();
    t.region();
    t.send(CPU, Queue::Cpuq, 0..1, 1, correct(Site::CpuPublish));
    t.load_ptr(GSP, Class::WritePtr(Queue::Cpuq), 1);
    t.barrier(GSP, DMB | OSHLD);
    t.load_slot(GSP, Queue::Cpuq, 0);
    let addr = BASE + slot_offset(Queue::Cpuq, 0) as u64 + 8;
    t.push(GSP, Kind::Load, 8, 0, addr, 0);
    t.barrier(GSP, DMB | OSH);
    t.store_ptr(GSP, Class::ReadPtr(Queue::Cpuq), 1);
    t.store_slot(GSP, Queue::Gspq, 0);
    let addr = BASE + slot_offset(Queue::Gspq, 0) as u64 + 8;
    t.push(GSP, Kind::Store, 8, 0, addr, 0);
    t.barrier(GSP, DMB | OSHST);
    t.store_ptr(GSP, Class::WritePtr(Queue::Gspq), 1);
    let report = run(&t);
    assert_eq!(report.defects, Vec::<Defect>::new());
    assert_eq!(report.pairs.get(&Agent::Gsp), Some(&GSP_PAIRS));
    assert_eq!(report.pairs.get(&Agent::Cpu), Some(&1));
}

#[test]
fn missing_read_barrier_after_write_pointer_load() {
    let (trace, report) = defects_at(
        Site::CpuReceive,
        Fence::Nothing,
        &both(
            Agent::Cpu,
            "load gspq.tx.writePtr",
            "load gspq slot",
            "no load->load ordering",
        ),
    );
    // Reported at the write-pointer load, with no barrier between to blame.
    let wptr_load = pc_of(&trace, |r| {
        r.tid == CPU
            && r.kind == Kind::Load
            && r.addr == BASE + ptr_offset(Class::WritePtr(Queue::Gspq)) as u64
    });
    assert_eq!(wptr_load.len(), 1);
    for d in &report.defects {
        assert_eq!(d.at, wptr_load[0]);
        assert!(d.notes.is_empty(), "{:?}", d.notes);
    }
}

changed_point! {
    missing_read_barrier_in_the_gsp: GspReceive, Fence::Nothing => both(
        Agent::Gsp,
        "load cpuq.tx.writePtr",
        "load cpuq slot",
        "no load->load ordering",
    );

    cpu_barrier_before_the_gsp_read_pointer_store: GspFree, Fence::Barrier(DMB | ISH) => both(
        Agent::Gsp,
        "load cpuq slot",
        "store gspq.rx.readPtr",
        "no load->store ordering",
    );

    branch_instead_of_barrier_before_reuse: CpuReuse, Fence::Branch => [(
        Verdict::Contract,
        Agent::Cpu,
        "load gspq.rx.readPtr",
        "store cpuq slot",
        "no load->store ordering (a control dependency is not honoured)",
    )];

    nothing_before_reuse: CpuReuse, Fence::Nothing => [
        (
            Verdict::Contract,
            Agent::Cpu,
            "load gspq.rx.readPtr",
            "store cpuq slot",
            "no load->store ordering (a control dependency is not honoured)",
        ),
        (
            Verdict::Arm64,
            Agent::Cpu,
            "load gspq.rx.readPtr",
            "store cpuq slot",
            "no load->store ordering, not even by a control dependency",
        ),
    ];

    release_store_does_not_replace_the_write_barrier: GspPublish, Fence::ReleaseStore => both(
        Agent::Gsp,
        "store gspq slot",
        "store gspq.tx.writePtr",
        "no store->store ordering",
    ), acquire_release 1;
}

#[test]
fn write_barrier_after_the_pointer_store() {
    let (trace, report) = defects_at(
        Site::CpuPublish,
        Fence::After(DMB | OSHST),
        &both(
            Agent::Cpu,
            "store cpuq slot",
            "store cpuq.tx.writePtr",
            "no store->store ordering",
        ),
    );
    // The first write-pointer store, and the barrier right after it.
    let wptr = BASE + ptr_offset(Class::WritePtr(Queue::Cpuq)) as u64;
    let stores = pc_of(&trace, |r| {
        r.tid == CPU && r.kind == Kind::Store && r.addr == wptr
    });
    let barrier = trace
        .records
        .iter()
        .position(|r| r.tid == CPU && r.pc == stores[0])
        .map(|i| trace.records[i + 1])
        .unwrap();
    assert_eq!(barrier.kind, Kind::Barrier);
    for d in &report.defects {
        assert_eq!(d.at, stores[0]);
        assert_eq!(
            notes(d),
            [format!(
                "the `dmb oshst` at {:#x} comes after the pointer store, not before it",
                barrier.pc
            )]
        );
        assert!(notes(d)[0].contains("comes after the pointer store"));
    }
}

#[test]
fn missing_write_barrier_when_filling_the_ring() {
    // Every slot the fill publishes lacks its store->store ordering.
    let report = run(&with(Site::CpuFill, Fence::Nothing));
    let fill = MSGQ_NUM_PAGES as usize - 1;
    for verdict in Verdict::ALL {
        let d = of(&report, verdict);
        assert_eq!(d.len(), fill);
        assert!(d.iter().all(|d| d.agent == Agent::Cpu
            && d.earlier == "store cpuq slot"
            && d.later == "store cpuq.tx.writePtr"
            && d.missing == "no store->store ordering"));
    }
    assert_eq!(report.defects.len(), 2 * fill);
}

#[test]
fn cpu_barrier_before_the_read_pointer_store() {
    let (trace, report) = defects_at(
        Site::CpuFree,
        Fence::Barrier(DMB | ISH),
        &both(
            Agent::Cpu,
            "load gspq slot",
            "store cpuq.rx.readPtr",
            "no load->store ordering",
        ),
    );
    let ish = pc_of(&trace, |r| r.kind == Kind::Barrier && r.info == DMB | ISH);
    assert_eq!(ish.len(), 1);
    let contract = notes(of(&report, Verdict::Contract)[0]);
    assert_eq!(contract.len(), 1);
    assert!(contract[0].starts_with(&format!("the `dmb ish` at {:#x} is a CPU barrier", ish[0])));
    let arm64 = notes(of(&report, Verdict::Arm64)[0]);
    assert_eq!(arm64.len(), 1);
    assert!(arm64[0].contains("inner-shareable domain"), "{arm64:?}");
}

#[test]
fn read_barrier_before_the_read_pointer_store() {
    let (_, report) = defects_at(
        Site::CpuFree,
        Fence::Barrier(DMB | OSHLD),
        &[(
            Verdict::Contract,
            Agent::Cpu,
            "load gspq slot",
            "store cpuq.rx.readPtr",
            "no load->store ordering",
        )],
    );
    assert!(of(&report, Verdict::Arm64).is_empty());
    let n = notes(&report.defects[0]);
    assert_eq!(n.len(), 1);
    assert!(
        n[0].ends_with("is dma_rmb, which orders loads before loads only"),
        "{n:?}"
    );
}

#[test]
fn write_barrier_before_reuse() {
    // `dma_wmb` does not order the read-pointer load before the slot store.
    let report = run(&with(Site::CpuReuse, Fence::Barrier(DMB | OSHST)));
    let s = summary(&report);
    assert_eq!(s.len(), 2, "{s:?}");
    assert!(s
        .iter()
        .all(|d| d.1 == Agent::Cpu && d.2 == "load gspq.rx.readPtr" && d.3 == "store cpuq slot"));
    for d in &report.defects {
        let n = notes(d);
        assert_eq!(n.len(), 1);
        assert!(n[0].ends_with("orders stores before stores only"), "{n:?}");
    }
}

#[test]
fn read_barrier_before_reuse() {
    // arm64's `dmb oshld` orders loads before stores; the contract's `dma_rmb` does not.
    let report = run(&with(Site::CpuReuse, Fence::Barrier(DMB | OSHLD)));
    let s = summary(&report);
    assert_eq!(s.len(), 1, "{s:?}");
    assert_eq!(s[0].0, Verdict::Contract);
    assert_eq!(s[0].2, "load gspq.rx.readPtr");
}

#[test]
fn reuse_without_a_read_pointer_load() {
    // The cpu reuses slot 0 without loading the read pointer at all.
    let mut t = Trace::new();
    t.region();
    t.send(CPU, Queue::Cpuq, 0..1, 1, correct(Site::CpuPublish));
    t.send(
        CPU,
        Queue::Cpuq,
        1..MSGQ_NUM_PAGES,
        0,
        correct(Site::CpuFill),
    );
    t.barrier(CPU, DMB | OSH);
    t.send(CPU, Queue::Cpuq, 0..1, 1, correct(Site::CpuRepublish));
    t.send(GSP, Queue::Gspq, 0..1, 1, correct(Site::GspPublish));
    assert_both_saying(
        &run(&t),
        Agent::Cpu,
        ("load gspq.rx.readPtr", "store cpuq slot"),
        "no load of the read pointer showed this slot free",
    );
}

#[test]
fn full_barriers_everywhere() {
    for info in [DSB | SY, DMB | SY, DSB | OSH] {
        let report = run(&exchange(|_| Fence::Barrier(info)));
        assert_eq!(report.defects, Vec::<Defect>::new(), "info {info:#x}");
        assert_eq!(report.pairs.get(&Agent::Cpu), Some(&CPU_PAIRS));
    }
    assert_eq!(DSB | SY, 0x20f);
}

#[test]
fn dsb_sy_in_place_of_each_barrier() {
    for site in [
        Site::CpuPublish,
        Site::CpuReceive,
        Site::CpuFree,
        Site::CpuFill,
        Site::CpuReuse,
        Site::CpuRepublish,
        Site::GspReceive,
        Site::GspFree,
        Site::GspPublish,
    ] {
        let report = run(&with(site, Fence::Barrier(0x20f)));
        assert_eq!(report.defects, Vec::<Defect>::new(), "{site:?}");
    }
}

#[test]
fn ish_barriers_everywhere() {
    // Inner-shareable barriers order nothing for the GSP: every pair is missing, under
    // both verdicts.
    let report = run(&exchange(|_| Fence::Barrier(DMB | ISH)));
    for verdict in Verdict::ALL {
        let d = of(&report, verdict);
        let cpu = d.iter().filter(|d| d.agent == Agent::Cpu).count();
        let gsp = d.iter().filter(|d| d.agent == Agent::Gsp).count();
        assert_eq!((cpu, gsp), (CPU_PAIRS, GSP_PAIRS), "{verdict}");
    }
}

#[test]
fn slot_load_before_the_write_pointer_load() {
    // The cpu reads gspq slot 0 before loading the write pointer that publishes it.
    let mut t = answered(&correct);
    let early = t.load_slot(CPU, Queue::Gspq, 0);
    t.receive_first(CPU, Queue::Gspq, &correct, Site::CpuReceive, Site::CpuFree);
    let report = run(&t);
    assert_both_saying(
        &report,
        Agent::Cpu,
        ("load gspq.tx.writePtr", "load gspq slot"),
        "outside the published elements",
    );
    assert!(report.defects.iter().all(|d| d.at == early));
}

#[test]
fn slot_load_outside_the_published_elements() {
    // After the exchange, the cpu reads gspq slot 1, which the gsp never published.
    let mut t = exchange(correct);
    t.load_slot(CPU, Queue::Gspq, 1);
    let report = run(&t);
    let s = summary(&report);
    assert_eq!(s.len(), 2, "{s:?}");
    assert!(s
        .iter()
        .all(|d| d.2 == "load gspq.tx.writePtr" && d.4.contains("outside the published elements")));
    assert_eq!(report.pairs.get(&Agent::Cpu), Some(&(CPU_PAIRS + 1)));
}

#[test]
fn acquire_load_does_not_replace_the_read_barrier() {
    let trace = with(Site::CpuReceive, Fence::AcquireLoad);
    assert_eq!(
        trace
            .records
            .iter()
            .filter(|r| r.kind == Kind::Load && r.info == ACQUIRE)
            .count(),
        1
    );
    let report = run(&trace);
    assert_eq!(report.acquire_release, 1);
    assert_eq!(
        summary(&report),
        both(
            Agent::Cpu,
            "load gspq.tx.writePtr",
            "load gspq slot",
            "no load->load ordering",
        )
    );
}

#[test]
fn acquire_release_elsewhere_does_not_replace_a_barrier() {
    // A lock's `ldaxr`/`stlxr` (or an `swpal`) between the slot load and the read-pointer
    // store.
    let rmw = READS | WRITES | ACQUIRE | RELEASE;
    let (_, report) = defects_at(
        Site::CpuFree,
        Fence::Ordered(rmw),
        &both(
            Agent::Cpu,
            "load gspq slot",
            "store cpuq.rx.readPtr",
            "no load->store ordering",
        ),
    );
    assert_eq!(report.acquire_release, 1);
    // And before the reuse of a slot (with no branch either).
    let report = run(&with(Site::CpuReuse, Fence::Ordered(READS | ACQUIRE)));
    assert_eq!(report.acquire_release, 1);
    assert_eq!(report.defects.len(), 2);
    assert!(report
        .defects
        .iter()
        .all(|d| d.earlier == "load gspq.rx.readPtr" && d.later == "store cpuq slot"));
}

#[test]
fn acquire_release_everywhere_orders_nothing() {
    // Acquire pointer loads, release pointer stores, nothing else: as with no barriers.
    let fences = |site| match site {
        Site::CpuReceive | Site::GspReceive | Site::CpuReuse => Fence::AcquireLoad,
        Site::CpuPublish | Site::CpuFill | Site::CpuRepublish | Site::GspPublish => {
            Fence::ReleaseStore
        }
        Site::CpuFree | Site::GspFree => Fence::Nothing,
    };
    let acquire_release = run(&exchange(fences));
    let nothing = run(&exchange(|_| Fence::Nothing));
    assert!(!nothing.defects.is_empty());
    assert_eq!(summary(&acquire_release), summary(&nothing));
    assert_eq!(acquire_release.acquire_release, 3 + 4);
    assert_eq!(nothing.acquire_release, 0);
}

#[test]
fn pointer_load_without_its_value_mark() {
    let mut t = exchange(correct);
    let gspq_wptr = BASE + ptr_offset(Class::WritePtr(Queue::Gspq)) as u64;
    t.records
        .retain(|r| !(r.tid == CPU && r.kind == Kind::Value && r.addr == gspq_wptr));
    let err = refused(&t, "value mark");
    let load = pc_of(&t, |r| {
        r.tid == CPU && r.kind == Kind::Load && r.addr == gspq_wptr
    });
    assert!(err.contains(&format!("{:#x}", load[0])), "{err}");

    // At the end of the trace too.
    let mut t = exchange(correct);
    t.load_ptr_unmarked(GSP, Class::WritePtr(Queue::Cpuq));
    refused(&t, "value mark");

    // A mark of another address does not count.
    let mut t = exchange(correct);
    t.load_ptr_unmarked(GSP, Class::WritePtr(Queue::Cpuq));
    t.push(GSP, Kind::Value, 4, 0, BASE, 1);
    t.store_slot(GSP, Queue::Gspq, 1);
    refused(&t, "value mark");
}

#[test]
fn no_shared_region() {
    let mut t = exchange(correct);
    t.records.retain(|r| r.kind != Kind::Region);
    refused(&t, "no coherent region of GspMem's size");

    // A region of another size is not the shared memory.
    let mut t = exchange(correct);
    for r in &mut t.records {
        if r.kind == Kind::Region {
            r.value -= 1;
        }
    }
    refused(&t, "no coherent region");

    // Two of them are one too many.
    let mut t = exchange(correct);
    t.push(GSP, Kind::Region, 0, 0, BASE + 0x10_0000, gsp_mem_size());
    refused(&t, "2 coherent regions");
}

#[test]
fn one_thread_publishing_both_queues() {
    let mut t = exchange(correct);
    for r in &mut t.records {
        r.tid = CPU;
    }
    refused(&t, "publishes both queues");
}

#[test]
fn a_queue_nobody_publishes() {
    let mut t = exchange(correct);
    t.records.retain(|r| r.tid != GSP);
    refused(&t, "no thread published a gspq element");

    // A write pointer stored as 0 (the header's initialisation) publishes nothing.
    let mut t = Trace::new();
    t.region();
    t.store_ptr(CPU, Class::WritePtr(Queue::Cpuq), 0);
    t.send(GSP, Queue::Gspq, 0..1, 1, correct(Site::GspPublish));
    refused(&t, "no thread published a cpuq element");
}

#[test]
fn the_driver_alone_is_decided_without_the_gsp_s_records() {
    let mut t = with(Site::CpuReceive, Fence::Nothing);
    let both = run(&t);
    t.records.retain(|r| r.tid != GSP);
    let driver = check_driver(&t.records).unwrap();
    let cpu: Vec<Defect> = both
        .defects
        .into_iter()
        .filter(|d| d.agent == Agent::Cpu)
        .collect();
    assert!(!cpu.is_empty());
    assert_eq!(driver.defects, cpu);
    assert_eq!(driver.pairs.get(&Agent::Cpu), Some(&CPU_PAIRS));
    assert_eq!(driver.pairs.get(&Agent::Gsp), None);
}

#[test]
fn the_driver_alone_still_needs_the_driver_to_publish() {
    let mut t = exchange(correct);
    t.records.retain(|r| r.tid != CPU || r.kind == Kind::Region);
    let err = check_driver(&t.records).unwrap_err();
    assert!(err.contains("no thread published a cpuq element"), "{err}");
}

#[test]
fn a_defect_names_its_two_accesses_and_the_barrier_that_orders_them() {
    let (trace, report) = defects_at(
        Site::CpuReceive,
        Fence::Nothing,
        &both(
            Agent::Cpu,
            "load gspq.tx.writePtr",
            "load gspq slot",
            "no load->load ordering",
        ),
    );
    let wptr_load = pc_of(&trace, |r| {
        r.kind == Kind::Load && r.addr == BASE + ptr_offset(Class::WritePtr(Queue::Gspq)) as u64
    });
    let slot_load = pc_of(&trace, |r| {
        r.kind == Kind::Load && r.addr == BASE + slot_offset(Queue::Gspq, 0) as u64
    });
    for d in &report.defects {
        assert_eq!((d.earlier_pc, d.later_pc), (wptr_load[0], slot_load[0]));
        assert_eq!(d.remedy(), "dma_mb(Read) (`dmb oshld`)");
    }
}

/// A record as the plugin writes it.
fn encode(r: &Record, kind: u8) -> Vec<u8> {
    let mut b = Vec::with_capacity(RECORD_SIZE);
    b.extend_from_slice(&r.tid.to_le_bytes());
    b.push(kind);
    b.push(r.size);
    b.extend_from_slice(&r.info.to_le_bytes());
    b.extend_from_slice(&r.pc.to_le_bytes());
    b.extend_from_slice(&r.addr.to_le_bytes());
    b.extend_from_slice(&r.value.to_le_bytes());
    assert_eq!(b.len(), RECORD_SIZE);
    b
}

#[test]
fn parse_round_trips() {
    let kinds = [
        (1, Kind::Load),
        (2, Kind::Store),
        (3, Kind::Barrier),
        (4, Kind::OrderedOther),
        (5, Kind::Branch),
        (6, Kind::Value),
        (7, Kind::Region),
        (8, Kind::RegionEnd),
        (9, Kind::Image),
    ];
    let mut bytes = Vec::new();
    let mut records = Vec::new();
    for (i, (code, kind)) in kinds.into_iter().enumerate() {
        let i = i as u64;
        let r = Record {
            tid: 0x0102_0304 + i as u32,
            kind,
            size: 8,
            info: 0x0203 + i as u16,
            pc: 0x1122_3344_5566_7788 + i,
            addr: 0x8877_6655_4433_2211 + i,
            value: u64::MAX - i,
        };
        bytes.extend(encode(&r, code));
        records.push(r);
    }
    assert_eq!(parse(&bytes), Ok(records));

    // One record's layout, byte by byte.
    let one: [u8; RECORD_SIZE] = [
        0x2a, 0, 0, 0, // tid
        3, // kind: barrier
        0, // size
        0x0f, 0x02, // info: dsb sy
        0x10, 0x32, 0x54, 0x76, 0, 0, 0, 0, // pc
        0, 0, 0, 0, 0, 0, 0, 0, // addr
        0xff, 0, 0, 0, 0, 0, 0, 0x80, // value
    ];
    assert_eq!(
        parse(&one),
        Ok(vec![Record {
            tid: 42,
            kind: Kind::Barrier,
            size: 0,
            info: 0x20f,
            pc: 0x7654_3210,
            addr: 0,
            value: 0x8000_0000_0000_00ff,
        }])
    );
    assert_eq!(parse(&[]), Ok(Vec::new()));
}

/// A record to encode, of no interest of its own.
fn a_load() -> Record {
    Record {
        tid: 1,
        kind: Kind::Load,
        size: 4,
        info: 0,
        pc: 4,
        addr: 8,
        value: 0,
    }
}

#[test]
fn parse_rejects_partial_records() {
    let r = a_load();
    let mut bytes = encode(&r, 1);
    bytes.extend(encode(&r, 1));
    for len in [1, RECORD_SIZE - 1, RECORD_SIZE + 1, 2 * RECORD_SIZE - 1] {
        let err = parse(&bytes[..len]).unwrap_err();
        assert!(err.contains(&format!("{len} bytes")), "{err}");
    }
    bytes.push(0);
    assert!(parse(&bytes).is_err());
}

#[test]
fn parse_rejects_unknown_kinds() {
    let r = a_load();
    for kind in [0, 10, 0xff] {
        let mut bytes = encode(&r, 1);
        bytes.extend(encode(&r, kind));
        let err = parse(&bytes).unwrap_err();
        assert!(err.contains(&format!("unknown kind {kind}")), "{err}");
        assert!(err.contains("record 1"), "{err}");
        assert!(err.contains(&format!("offset {RECORD_SIZE}")), "{err}");
    }
}

#[test]
fn parsed_trace_checks_like_the_records() {
    let t = with(Site::CpuReceive, Fence::Nothing);
    let code = |k: Kind| match k {
        Kind::Load => 1,
        Kind::Store => 2,
        Kind::Barrier => 3,
        Kind::OrderedOther => 4,
        Kind::Branch => 5,
        Kind::Value => 6,
        Kind::Region => 7,
        Kind::RegionEnd => 8,
        Kind::Image => 9,
    };
    let bytes: Vec<u8> = t
        .records
        .iter()
        .flat_map(|r| encode(r, code(r.kind)))
        .collect();
    let parsed = parse(&bytes).unwrap();
    assert_eq!(parsed, t.records);
    assert_eq!(run(&t).defects, check(&parsed).unwrap().defects);
}

// The preserved-program-order graph.

fn load(loc: u64) -> Item {
    Item::Access(Access::plain(true, false, Some(loc)))
}

fn store(loc: u64) -> Item {
    Item::Access(Access::plain(false, true, Some(loc)))
}

fn order(before: Select, after: Select) -> Item {
    Item::Order { before, after }
}

/// Whether item `a` is ordered before item `b`.
fn ordered(items: &[Item], a: usize, b: usize) -> bool {
    Graph::new(items).latest_before(|i| i == a)[b] == Some(a)
}

#[test]
fn ppo_read_barriers_chain() {
    let rmb = order(Select::Loads, Select::Loads);
    // A load, a read barrier, a store it does not select, another read barrier, a load.
    let items = [load(1), rmb, store(2), rmb, load(3)];
    assert!(ordered(&items, 0, 4));
    assert!(!ordered(&items, 0, 2));
    assert!(!ordered(&items, 2, 4));
    // Two loads after the first barrier are both ordered after the first load.
    let items = [load(1), rmb, load(2), rmb, load(3), load(4)];
    assert!(ordered(&items, 0, 4));
    assert!(ordered(&items, 0, 5));
    assert!(ordered(&items, 2, 5));
    assert!(!ordered(&items, 4, 5));
}

#[test]
fn ppo_write_barrier_does_not_order_load_store() {
    let wmb = order(Select::Stores, Select::Stores);
    let items = [load(1), wmb, store(2)];
    assert!(!ordered(&items, 0, 2));
    let items = [store(1), wmb, store(2), load(3)];
    assert!(ordered(&items, 0, 2));
    assert!(!ordered(&items, 0, 3));
    // A full barrier orders both.
    let mb = order(Select::All, Select::All);
    let items = [load(1), mb, store(2), load(3)];
    assert!(ordered(&items, 0, 2));
    assert!(ordered(&items, 0, 3));
}

#[test]
fn ppo_same_location() {
    // A store before a later load of its location is not ordered (forwarding); a load
    // before a later load or store of it, and a store before a later store, are.
    assert!(!ordered(&[store(1), load(1)], 0, 1));
    assert!(ordered(&[load(1), load(1)], 0, 1));
    assert!(ordered(&[store(1), store(1)], 0, 1));
    assert!(ordered(&[load(1), load(2), store(1)], 0, 2));
    // Nor through a read-back and a `Read` barrier: the upstream checksum pass's shape.
    let rmb = order(Select::Loads, Select::Loads);
    assert!(!ordered(&[store(1), load(1), rmb, load(2)], 0, 3));
    assert!(!ordered(&[store(1), load(2)], 0, 1));
    // Coherence then a barrier: a path through both.
    let wmb = order(Select::Stores, Select::Stores);
    assert!(ordered(&[load(1), store(1), wmb, store(2)], 0, 3));
    // No location, no coherence.
    let none = Item::Access(Access::plain(false, true, None));
    assert!(!ordered(&[none, none], 0, 1));
}

#[test]
fn ppo_control_loads() {
    let ctrl = order(Select::ControlLoads, Select::Stores);
    let control = Item::Access(Access {
        reads: true,
        writes: false,
        loc: Some(1),
        control: true,
    });
    let items = [control, load(2), ctrl, store(3), load(4)];
    assert!(ordered(&items, 0, 3));
    assert!(!ordered(&items, 1, 3));
    assert!(!ordered(&items, 0, 4));
}

#[test]
fn ppo_latest_before_and_earliest_after() {
    let mb = order(Select::All, Select::All);
    //           0        1        2   3         4         5
    let items = [load(1), load(2), mb, store(3), store(4), Item::Other];
    let g = Graph::new(&items);
    let is_load = |i: usize| matches!(items[i], Item::Access(a) if a.reads);
    let is_store = |i: usize| matches!(items[i], Item::Access(a) if a.writes);
    assert_eq!(
        g.latest_before(is_load),
        [None, None, Some(1), Some(1), Some(1), None]
    );
    assert_eq!(
        g.earliest_after(is_store),
        [Some(3), Some(3), Some(3), None, None, None]
    );
    assert_eq!(g.latest_before(|_| false), [None; 6]);
    let mut edges: Vec<(usize, usize)> = g.edges().collect();
    edges.sort_unstable();
    assert_eq!(edges, [(0, 2), (1, 2), (2, 3), (2, 4)]);
}

#[test]
fn ppo_chain_started_late_collects_earlier_accesses() {
    // The first point of a kind orders every earlier access it selects.
    let rmb = order(Select::Loads, Select::Loads);
    let wmb = order(Select::Stores, Select::Stores);
    let items = [load(1), store(2), wmb, load(3), rmb, load(4), store(5)];
    assert!(ordered(&items, 0, 5));
    assert!(ordered(&items, 3, 5));
    assert!(ordered(&items, 1, 6));
    assert!(!ordered(&items, 0, 6));
}
