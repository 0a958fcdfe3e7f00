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
        atomic::{
            AtomicUsize,
            Ordering::SeqCst, //
        },
        Arc,
        Mutex, //
    },
    vec::Vec,
};

use kernel::{
    device::{
        Bound,
        Device, //
    },
    dma::DmaView,
    init::InPlaceInit,
    io::register::Register,
    model::{
        self,
        Agent,
        Kind,
        Loc,
        ModelBar, //
    },
    prelude::{
        KBox,
        GFP_KERNEL, //
    },
    time::Delta,
};
use nova_core::gsp::{
    cmdq::{
        BenchSeam,
        Cmdq,
        EventHandler,
        GspMessage, //
    },
    fw::{
        MsgFunction,
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
use nova_testbench::{
    rpc::{
        Echo,
        EchoHeader,
        VGSP_ECHO, //
    },
    ReceiveAny,
};
use vgsp::{
    Progress,
    Vgsp, //
};

use crate::contract;

static DEVICE: Device<Bound> = Device::new("vgsp-model");

/// How long a caller waits for the reply to its command: as the driver's own sends wait
/// (upstream's `send_command`).
const REPLY: Delta = Delta::from_secs(5);

/// The payload length of a log line (or an echo reply) whose element fills exactly
/// `slots` slots.
pub const fn slots(slots: usize) -> usize {
    slots * GSP_PAGE_SIZE - ELEMENT_HEADER_SIZE
}

/// The length of the bytes of an echo whose command element fills exactly `slots` slots:
/// the command carries the echo's header too.
pub const fn echo(slots: usize) -> usize {
    self::slots(slots) - core::mem::size_of::<EchoHeader>()
}

/// A split RPC: one full head element and a one-slot continuation record.
pub const CONTINUATION_PAIR: usize = MAX_ELEMENT_PAYLOAD + 100;

/// A full `cpuq`: one two-slot echo, then 60 one-slot ones (62 slots).
const ECHO_BACKLOG: [usize; 61] = {
    let mut b = [8; 61];
    b[0] = echo(2);
    b
};

/// A full `gspq`: one two-slot log line, then 60 one-slot ones (62 slots).
const LOG_BACKLOG: [usize; 61] = {
    let mut b = [8; 61];
    b[0] = slots(2);
    b
};

/// Counts the log lines handed to it: the handler of a scenario with two callers.
struct LineCount(AtomicUsize);

impl EventHandler for LineCount {
    fn handle(&self, _: &GspMessage) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// The handler of the scenario with two callers; reset in each execution.
static LINES: LineCount = LineCount(AtomicUsize::new(0));

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
    /// Echo payload lengths a second caller sends on a thread of its own, each with
    /// [`Cmdq::submit`] and its wait, while the main thread sends `commands` the same way; the
    /// unasked `early_events` then go to a handler. Empty: the main thread alone sends,
    /// with [`Cmdq::post`], and receives every message itself.
    pub second_caller: &'static [usize],
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
    second_caller: &[],
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
        warmup: &[echo(16), echo(16), echo(16)],
        commands: &[echo(16)],
        ..BASE
    },
    Scenario {
        // A two-slot command and 60 one-slot ones fill `cpuq` (one slot always stays
        // empty) before the GSP starts. The next command, of two slots, must wait for
        // the GSP to consume the first one, and reuses its slot 0 while the GSP may
        // still be reading it: only the read-pointer barriers order that reuse (the GSP
        // read pointer jumps from 0 to 2, and no reply is received in between).
        name: "full_ring_writer_waits",
        commands: &[echo(2)],
        pipelined: true,
        backlog: &ECHO_BACKLOG,
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
        gsp_backlog: &LOG_BACKLOG,
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
    Scenario {
        // Two callers share the queue, each with a command in flight, while the GSP sends
        // a log line unasked: whichever caller receives hands the other its reply and the
        // line to its handler, and wakes the other, which may be asleep on the queue.
        // What one caller learnt of the GSP's pointers the other uses, handed over under
        // the queue's locks (the contract checker's litmus tests show that the hand-over
        // orders a pointer load before the next holder's slot accesses, and that a lock
        // orders nothing towards the GSP within one thread); the rings do not wrap here,
        // which would make the exploration ten times longer.
        name: "two_callers_and_an_event",
        commands: &[8],
        second_caller: &[16],
        early_events: &[16],
        preemptions: 1,
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
    unsafe { DmaView::from_raw_parts(mem.as_mut_ptr().cast::<u8>(), mem.size()) }
}

/// Receives messages until the reply to `seq`, checking it against `expected`; returns
/// the number of events seen on the way.
fn receive_reply(cmdq: &Cmdq, seq: u32, expected: &[u8]) -> usize {
    let mut events = 0;
    loop {
        let msg = cmdq
            .receive_any(Delta::from_secs(10))
            .expect("driver receive");
        if msg.function() == MsgFunction::UCODE_LIBOS_PRINT {
            events += 1;
            continue;
        }
        assert_eq!(msg.function(), VGSP_ECHO);
        assert_eq!(msg.sequence, seq);
        assert!(msg.payload[..] == *expected, "reply payload differs");
        return events;
    }
}

/// Converts the model's trace for the contract checker.
fn contract_events(trace: &[model::Event]) -> Vec<contract::Event> {
    let loc_id = |loc: Loc| match loc {
        Loc::Word(off) => (off as u64) << 2,
        Loc::Page(p) => ((p as u64) << 2) | 1,
        Loc::Lock(l) => ((l as u64) << 2) | 2,
    };
    trace
        .iter()
        .map(|e| contract::Event {
            agent: match e.agent {
                Agent::Driver => 0,
                Agent::Gsp => 1,
                Agent::Caller(n) => 1 + n,
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
                Kind::Acquire { loc, value } => contract::Op::Acquire {
                    loc: loc_id(loc),
                    value,
                },
                Kind::Release { loc, value } => contract::Op::Release {
                    loc: loc_id(loc),
                    value,
                },
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

/// One access of a loom race report: its role (`read`, `write`, `write one`, ...) and
/// the source location loom captured for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaceAccess {
    /// The role loom gives the access.
    pub role: String,
    /// The source file of the access, as `file!()` spells it.
    pub file: String,
    /// Its line.
    pub line: u32,
}

/// Why a scenario failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// Loom found two accesses of a ring page by the two agents that nothing orders
    /// (a race under C11, which loom explores): its message, and the accesses it names.
    Race {
        /// Loom's message, e.g. `Causality violation: Concurrent read and write accesses.`
        message: String,
        /// The accesses the message names, with where they were made.
        accesses: Vec<RaceAccess>,
    },
    /// The DMA contract checker found a data load that an allowed execution lets read
    /// another store.
    Contract(contract::Violation),
    /// Anything else (a wrong reply, a driver error, the checker refusing a trace), with
    /// the panic message.
    Other(String),
}

impl Failure {
    /// Returns the access of a [`Failure::Race`] with role `role`.
    pub fn race_access(&self, role: &str) -> Option<&RaceAccess> {
        match self {
            Self::Race { accesses, .. } => accesses.iter().find(|a| a.role == role),
            _ => None,
        }
    }

    /// Classifies a panic payload of [`run`]; `violation` is what the contract checker
    /// reported, if it was the checker that panicked.
    fn from_panic(
        payload: &(dyn core::any::Any + Send),
        violation: Option<contract::Violation>,
    ) -> Self {
        if let Some(v) = violation {
            return Self::Contract(v);
        }
        let text = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| String::from(*s)))
            .unwrap_or_default();
        let Some(message) = text
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with("Causality violation"))
        else {
            return Self::Other(text);
        };
        // Loom names each access `role: [thread #N @ ]file:line:column`.
        let accesses = text
            .lines()
            .filter_map(|l| {
                let (role, at) = l.trim().split_once(": ")?;
                let at = at.split_once(" @ ").map_or(at, |(_, at)| at);
                let mut parts = at.rsplitn(3, ':');
                let _column: u32 = parts.next()?.parse().ok()?;
                let line = parts.next()?.parse().ok()?;
                Some(RaceAccess {
                    role: String::from(role),
                    file: String::from(parts.next()?),
                    line,
                })
            })
            .collect();
        Self::Race {
            message: String::from(message),
            accesses,
        }
    }
}

impl core::fmt::Display for Failure {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Race { message, accesses } => {
                write!(f, "loom: {message}")?;
                for a in accesses {
                    write!(f, "; {} at {}:{}", a.role, a.file, a.line)?;
                }
                Ok(())
            }
            Self::Contract(v) => write!(f, "DMA contract violated: {v}"),
            Self::Other(text) => write!(f, "failed: {text}"),
        }
    }
}

/// Runs `sc` under loom and the contract checker, and says why it failed if it did.
///
/// Loom's report of the first execution that failed is kept, with the locations of the
/// accesses it names; a panic of `sc` is caught here (its message is still printed by
/// the panic hook).
///
/// # Errors
///
/// The [`Failure`] of the first execution that failed.
pub fn try_run(sc: &Scenario) -> Result<Report, Failure> {
    let violation = Arc::new(Mutex::new(None));
    let found = violation.clone();
    std::panic::catch_unwind(move || explore(sc, &found)).map_err(|payload| {
        let v = violation.lock().unwrap_or_else(|e| e.into_inner()).take();
        Failure::from_panic(&*payload, v)
    })
}

/// Runs `sc` under loom and the contract checker.
///
/// # Panics
///
/// On any failure: a loom-detected race or assertion, a wrong reply, or a violation of
/// the DMA contract, with a description.
pub fn run(sc: &Scenario) -> Report {
    explore(sc, &Arc::new(Mutex::new(None)))
}

/// [`run`], leaving in `violation` what the contract checker found before it panicked.
fn explore(sc: &Scenario, violation: &Arc<Mutex<Option<contract::Violation>>>) -> Report {
    let seen: Arc<Mutex<HashSet<u64>>> = Arc::new(Mutex::new(HashSet::new()));
    let executions = Arc::new(Mutex::new(0usize));
    let sc = *sc;
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(sc.preemptions);
    builder.max_branches = 1_000_000;
    // Loom then names where each access of a race it reports was made.
    builder.location = true;
    {
        let seen = seen.clone();
        let executions = executions.clone();
        let violation = violation.clone();
        builder.check(move || {
            model::reset();
            *executions.lock().unwrap() += 1;
            let bar = Arc::new(ModelBar::<BAR0_SIZE>::new(&[NV_PGSP_QUEUE_HEAD::OFFSET]));
            let cmdq = Arc::new(KBox::pin_init(Cmdq::new(&DEVICE), GFP_KERNEL).expect("queue"));
            // SAFETY: The four ring pointers are aligned words inside `GspMem`.
            unsafe {
                model::prepare_words(
                    cmdq.gsp_mem().as_ptr().cast(),
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
                let seq = cmdq.post(bar.io(), &Echo(&p)).expect("warm-up send");
                model::set_agent(Agent::Gsp);
                gsp.run_until_idle().expect("warm-up gsp");
                model::set_agent(Agent::Driver);
                receive_reply(&cmdq, seq, &p);
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
                let seq = cmdq.post(bar.io(), &Echo(&p)).expect("backlog send");
                backlog.push((seq, p));
            }
            let warm = gsp.stats.commands;
            let expected = warm
                + sc.gsp_budget.unwrap_or(
                    (sc.backlog.len() + sc.commands.len() + sc.second_caller.len()) as u64,
                );
            let shared = !sc.second_caller.is_empty();
            if shared {
                LINES.0.store(0, SeqCst);
                cmdq.on_event(MsgFunction::UCODE_LIBOS_PRINT, &LINES)
                    .expect("handler");
            }

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
            if shared {
                let other = {
                    let cmdq = cmdq.clone();
                    let bar = bar.clone();
                    loom::thread::spawn(move || {
                        model::set_agent(Agent::Caller(1));
                        for (i, &len) in sc.second_caller.iter().enumerate() {
                            let p = payload(len, 200 + i);
                            let reply = cmdq
                                .submit(bar.io(), &Echo(&p))
                                .and_then(|p| p.wait(REPLY))
                                .expect("send");
                            assert!(reply.0[..] == p[..], "a reply reached the wrong caller");
                        }
                    })
                };
                for p in &payloads {
                    let reply = cmdq
                        .submit(bar.io(), &Echo(p))
                        .and_then(|p| p.wait(REPLY))
                        .expect("send");
                    assert!(reply.0[..] == p[..], "a reply reached the wrong caller");
                }
                other.join().expect("second caller");
            } else if sc.pipelined {
                let sent: Vec<(u32, Vec<u8>)> = payloads
                    .iter()
                    .map(|p| (cmdq.post(bar.io(), &Echo(p)).expect("send"), p.clone()))
                    .collect();
                let answered = (expected - warm) as usize;
                for (seq, p) in backlog.iter().chain(&sent).take(answered) {
                    events += receive_reply(&cmdq, *seq, p);
                }
            } else {
                for p in &payloads {
                    let seq = cmdq.post(bar.io(), &Echo(p)).expect("send");
                    events += receive_reply(&cmdq, seq, p);
                }
            }
            if !sc.gsp_backlog.is_empty() {
                // Free exactly the slots the GSP's new lines need.
                for _ in sc.early_events {
                    let msg = cmdq.receive_any(Delta::from_secs(10)).expect("event");
                    assert_eq!(msg.function(), MsgFunction::UCODE_LIBOS_PRINT);
                }
            }
            let stats = gsp_thread.join().expect("gsp thread");
            if shared {
                // Every line reached the handler once: none lost, none seen twice.
                assert_eq!(LINES.0.load(SeqCst) as u64, stats.events, "events handled");
            } else if sc.gsp_backlog.is_empty() && !sc.early_events.is_empty() {
                // The last log line may trail the last reply.
                let want = stats.events as usize;
                while events < want {
                    let msg = cmdq.receive_any(Delta::from_secs(10)).expect("event");
                    assert_eq!(msg.function(), MsgFunction::UCODE_LIBOS_PRINT);
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
                    Ok(Some(v)) => {
                        let report = std::format!("DMA contract violated in {}: {v}", sc.name);
                        *violation.lock().unwrap_or_else(|e| e.into_inner()) = Some(v);
                        panic!("{report}");
                    }
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
