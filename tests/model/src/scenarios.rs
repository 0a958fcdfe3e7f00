// SPDX-License-Identifier: GPL-2.0

//! The unchanged driver and virtual GSP as two loom threads.
//!
//! Each scenario runs under [`loom::model`]: the driver on the main thread, the GSP on
//! a second one, woken by the model BAR's doorbell. Loom explores the interleavings and
//! the weak-memory outcomes of C11 (with `dma_mb` as fences) and reports any page of a
//! ring accessed by both agents without synchronisation; every distinct execution's
//! trace then goes to the [`crate::contract`] checker, which decides the same code
//! against Linux's weaker barrier contract.
//!
//! A scenario may start with a warm-up: round trips done on the main thread before the
//! GSP thread starts, which move the ring pointers (so a later element wraps the ring end
//! or reuses a slot) without exploring anything.

use std::{
    collections::HashSet,
    hash::{
        Hash,
        Hasher, //
    },
    string::String,
    sync::{
        Arc,
        Mutex, //
    },
    vec::Vec,
};

use kernel::{
    device::Device,
    dma::DmaView,
    model::{
        self,
        Agent,
        Kind,
        Loc,
        ModelBar, //
    },
    time::Delta,
};
use nova_core::gsp::{
    cmdq::Cmdq,
    commands::Echo,
    fw::{
        function,
        CPUQ_OFFSET,
        ELEMENT_HEADER_SIZE,
        GSPQ_OFFSET,
        GSP_PAGE_SIZE,
        MAX_ELEMENT_PAYLOAD, //
        MSGQ_READ_PTR_OFFSET,
        MSGQ_WRITE_PTR_OFFSET,
    },
    regs::{
        BAR0_SIZE,
        NV_PGSP_QUEUE_HEAD, //
    },
};
use vgsp::{
    Progress,
    Vgsp, //
};

use crate::contract;

static DEVICE: Device = Device::new("vgsp-model");

/// The payload length of an echo whose element fills exactly `slots` slots.
pub const fn slots(slots: usize) -> usize {
    slots * GSP_PAGE_SIZE - ELEMENT_HEADER_SIZE
}

/// A split RPC: one full head element and a one-slot continuation record.
pub const CONTINUATION_PAIR: usize = MAX_ELEMENT_PAYLOAD + 100;

/// A full ring: one two-slot element, then 60 one-slot ones (62 slots).
const BACKLOG: [usize; 61] = {
    let mut b = [8; 61];
    b[0] = slots(2);
    b
};

/// One scenario.
#[derive(Clone, Copy, Debug)]
pub struct Scenario {
    /// Its name.
    pub name: &'static str,
    /// Echo payload lengths of the warm-up round trips (single-threaded).
    pub warmup: &'static [usize],
    /// Echo payload lengths sent while the GSP thread runs.
    pub commands: &'static [usize],
    /// Send every command before receiving any reply (else one round trip at a time).
    pub pipelined: bool,
    /// Lengths of log lines the GSP queues unasked as it starts, crossing the driver's
    /// commands.
    pub early_events: &'static [usize],
    /// Lengths of log lines the GSP posts before its thread starts, unread.
    pub gsp_backlog: &'static [usize],
    /// Lengths of echo commands the driver queues before the GSP thread starts,
    /// unanswered.
    pub backlog: &'static [usize],
    /// The GSP stops after this many commands of the concurrent part (all if `None`);
    /// the driver then expects only that many replies.
    pub gsp_budget: Option<u64>,
    /// Loom's preemption bound.
    pub preemptions: usize,
}

/// One command and its reply, one round trip at a time; the fields scenarios change
/// start from here.
const BASE: Scenario = Scenario {
    name: "one_command_and_reply",
    warmup: &[],
    commands: &[8],
    pipelined: false,
    early_events: &[],
    gsp_backlog: &[],
    backlog: &[],
    gsp_budget: None,
    preemptions: 2,
};

/// The scenarios of the ordering proof.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "one_command_and_reply",
        preemptions: 3,
        ..BASE
    },
    Scenario {
        // Three 16-slot round trips bring both rings to slot 48; the fourth element
        // (16 slots) then runs 48..=62 and wraps to slot 0, which the warm-up used.
        name: "command_wraps_ring_end",
        warmup: &[slots(16), slots(16), slots(16)],
        commands: &[slots(16)],
        ..BASE
    },
    Scenario {
        // A two-slot command and 60 one-slot ones fill `cpuq` (one slot always stays
        // empty) before the GSP starts. The next command, of two slots, must wait for
        // the GSP to consume the first one, and reuses its slot 0 while the GSP may
        // still be reading it: only the read-pointer barriers order that reuse (the GSP
        // read pointer jumps from 0 to 2, and no reply is received in between).
        name: "full_ring_writer_waits",
        commands: &[slots(2)],
        pipelined: true,
        backlog: &BACKLOG,
        gsp_budget: Some(1),
        ..BASE
    },
    Scenario {
        // The mirror image on `gspq`: a two-slot log line and 60 one-slot ones fill it
        // before the driver reads any. The GSP's next line, of two slots, waits for the
        // driver to read the first one, and reuses its slot 0.
        name: "full_gsp_ring_gsp_waits",
        commands: &[],
        pipelined: true,
        early_events: &[slots(2)],
        gsp_backlog: &BACKLOG,
        gsp_budget: Some(0),
        ..BASE
    },
    Scenario {
        // The GSP sends a log line unasked while the driver sends a command: both rings
        // are written at once, and the driver meets the event before the reply.
        name: "unasked_event_crosses_command",
        early_events: &[16],
        ..BASE
    },
    Scenario {
        name: "continuation_record_pair",
        commands: &[CONTINUATION_PAIR],
        ..BASE
    },
];

/// What a scenario run found.
#[derive(Debug, Default)]
pub struct Report {
    /// Loom executions explored.
    pub executions: usize,
    /// Distinct traces given to the contract checker.
    pub traces_checked: usize,
}

fn payload(len: usize, seed: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(31) ^ seed) as u8)
        .collect()
}

/// The GSP's view of the driver's memory, not bound by a borrow.
///
/// # Safety
///
/// The view must not be used after `cmdq` is dropped.
unsafe fn gsp_view(cmdq: &Cmdq) -> DmaView<'static> {
    let mem = cmdq.gsp_mem();
    // SAFETY: The allocation is `size()` bytes and page aligned, and does not move while
    // `cmdq` lives; the caller keeps the view no longer.
    unsafe { DmaView::from_raw_parts(mem.start_ptr().cast_mut().cast::<u8>(), mem.size()) }
}

/// Receives messages until the reply to `seq`, checking it against `expected`; returns
/// the number of events seen on the way.
fn receive_reply(cmdq: &mut Cmdq, seq: u32, expected: &[u8]) -> usize {
    let mut events = 0;
    loop {
        let msg = cmdq
            .receive_msg(Delta::from_secs(10))
            .expect("driver receive");
        if msg.function == function::UCODE_LIBOS_PRINT {
            events += 1;
            continue;
        }
        assert_eq!(msg.function, function::NOP);
        assert_eq!(msg.sequence, seq);
        assert!(msg.payload[..] == *expected, "reply payload differs");
        return events;
    }
}

/// Converts the model's trace for the contract checker.
fn contract_events(trace: &[model::Event]) -> Vec<contract::Event> {
    let loc_id = |loc: Loc| match loc {
        Loc::Word(off) => (off as u64) << 1,
        Loc::Page(p) => ((p as u64) << 1) | 1,
    };
    trace
        .iter()
        .map(|e| contract::Event {
            agent: match e.agent {
                Agent::Driver => 0,
                Agent::Gsp => 1,
            },
            op: match e.kind {
                Kind::Load { loc, value } => contract::Op::Load {
                    loc: loc_id(loc),
                    value,
                },
                Kind::Store { loc, value } => contract::Op::Store {
                    loc: loc_id(loc),
                    value,
                },
                Kind::Fence(f) => contract::Op::Fence(match f {
                    model::Flavour::Full => contract::Flavour::Full,
                    model::Flavour::Read => contract::Flavour::Read,
                    model::Flavour::Write => contract::Flavour::Write,
                }),
            },
            data: matches!(
                e.kind,
                Kind::Load {
                    loc: Loc::Page(_),
                    ..
                } | Kind::Store {
                    loc: Loc::Page(_),
                    ..
                }
            ),
            what: model::describe(e),
        })
        .collect()
}

/// Runs `sc` under loom and the contract checker.
///
/// # Panics
///
/// On any failure: a loom-detected race or assertion, a wrong reply, or a violation of
/// the DMA contract, with a description.
pub fn run(sc: &Scenario) -> Report {
    let seen: Arc<Mutex<HashSet<u64>>> = Arc::new(Mutex::new(HashSet::new()));
    let executions = Arc::new(Mutex::new(0usize));
    let sc = *sc;
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(sc.preemptions);
    builder.max_branches = 1_000_000;
    {
        let seen = seen.clone();
        let executions = executions.clone();
        builder.check(move || {
            model::reset();
            *executions.lock().unwrap() += 1;
            let bar = Arc::new(ModelBar::<BAR0_SIZE>::new(&[NV_PGSP_QUEUE_HEAD::OFFSET]));
            let mut cmdq = Cmdq::new(&DEVICE).expect("queue");
            // SAFETY: The four ring pointers are aligned words inside `GspMem`.
            unsafe {
                model::prepare_words(
                    cmdq.gsp_mem().start_ptr().cast(),
                    &[
                        CPUQ_OFFSET + MSGQ_WRITE_PTR_OFFSET,
                        CPUQ_OFFSET + MSGQ_READ_PTR_OFFSET,
                        GSPQ_OFFSET + MSGQ_WRITE_PTR_OFFSET,
                        GSPQ_OFFSET + MSGQ_READ_PTR_OFFSET,
                    ],
                )
            };
            // SAFETY: The GSP thread is joined below, before `cmdq` is dropped.
            let view = unsafe { gsp_view(&cmdq) };
            let mut gsp = Vgsp::new(view).expect("gsp");

            for (i, &len) in sc.warmup.iter().enumerate() {
                let p = payload(len, i);
                let seq = cmdq
                    .send_command(bar.io(), &Echo(&p))
                    .expect("warm-up send");
                model::set_agent(Agent::Gsp);
                gsp.run_until_idle().expect("warm-up gsp");
                model::set_agent(Agent::Driver);
                receive_reply(&mut cmdq, seq, &p);
            }
            model::set_agent(Agent::Gsp);
            for &len in sc.gsp_backlog {
                gsp.log(&payload(len, 7)).expect("gsp log");
            }
            gsp.run_until_idle().expect("gsp backlog");
            model::set_agent(Agent::Driver);
            let mut backlog = Vec::new();
            for (i, &len) in sc.backlog.iter().enumerate() {
                let p = payload(len, 1000 + i);
                let seq = cmdq
                    .send_command(bar.io(), &Echo(&p))
                    .expect("backlog send");
                backlog.push((seq, p));
            }
            let warm = gsp.stats.commands;
            let expected = warm
                + sc.gsp_budget
                    .unwrap_or((sc.backlog.len() + sc.commands.len()) as u64);

            let gsp_bar = bar.clone();
            let gsp_thread = loom::thread::spawn(move || {
                model::set_agent(Agent::Gsp);
                for &len in sc.early_events {
                    gsp.log(&payload(len, 9)).expect("gsp log");
                }
                loop {
                    let rung = gsp_bar.doorbell_count();
                    if gsp.stats.commands >= expected && gsp.outbox_empty() {
                        break;
                    }
                    match gsp.step().expect("gsp step") {
                        Progress::Worked => {}
                        Progress::Blocked => loom::thread::yield_now(),
                        Progress::Idle => {
                            while gsp_bar.doorbell_count() == rung {
                                loom::thread::yield_now();
                            }
                        }
                    }
                }
                gsp.stats
            });

            let payloads: Vec<Vec<u8>> = sc
                .commands
                .iter()
                .enumerate()
                .map(|(i, &len)| payload(len, 100 + i))
                .collect();
            let mut events = 0;
            if sc.pipelined {
                let sent: Vec<(u32, Vec<u8>)> = payloads
                    .iter()
                    .map(|p| {
                        (
                            cmdq.send_command(bar.io(), &Echo(p)).expect("send"),
                            p.clone(),
                        )
                    })
                    .collect();
                let answered = (expected - warm) as usize;
                for (seq, p) in backlog.iter().chain(&sent).take(answered) {
                    events += receive_reply(&mut cmdq, *seq, p);
                }
            } else {
                for p in &payloads {
                    let seq = cmdq.send_command(bar.io(), &Echo(p)).expect("send");
                    events += receive_reply(&mut cmdq, seq, p);
                }
            }
            if !sc.gsp_backlog.is_empty() {
                // Free exactly the slots the GSP's new lines need.
                for _ in sc.early_events {
                    let msg = cmdq.receive_msg(Delta::from_secs(10)).expect("event");
                    assert_eq!(msg.function, function::UCODE_LIBOS_PRINT);
                }
            }
            let stats = gsp_thread.join().expect("gsp thread");
            if sc.gsp_backlog.is_empty() && !sc.early_events.is_empty() {
                // The last log line may trail the last reply.
                let want = stats.events as usize;
                while events < want {
                    let msg = cmdq.receive_msg(Delta::from_secs(10)).expect("event");
                    assert_eq!(msg.function, function::UCODE_LIBOS_PRINT);
                    events += 1;
                }
            }
            assert_eq!(stats.commands, expected);
            assert_eq!(stats.malformed, 0);

            let trace = model::take_trace();
            let mut h = std::collections::hash_map::DefaultHasher::new();
            trace.hash(&mut h);
            if seen.lock().unwrap().insert(h.finish()) {
                let events = contract_events(&trace);
                match contract::find_violation(&events) {
                    Ok(None) => {}
                    Ok(Some(v)) => panic!("DMA contract violated in {}: {v}", sc.name),
                    Err(e) => panic!("contract checker: {e} ({})", sc.name),
                }
            }
            drop(cmdq);
        });
    }
    let traces_checked = seen.lock().unwrap().len();
    let executions = *executions.lock().unwrap();
    Report {
        executions,
        traces_checked,
    }
}

/// Describes a report in one line.
pub fn summary(sc: &Scenario, r: &Report) -> String {
    std::format!(
        "{}: {} loom executions, {} distinct traces checked against the DMA contract",
        sc.name,
        r.executions,
        r.traces_checked
    )
}
