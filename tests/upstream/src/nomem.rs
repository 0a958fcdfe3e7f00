// SPDX-License-Identifier: GPL-2.0

//! The `nomem` check (ours): the allocation-failure walk through the tree's receive path,
//! as the kernel's `failslab` with a task's `fail-nth` walks a system call.
//!
//! For `N` = 0, 1, 2, … until a run completes with no failure injected, a fresh bench
//! (upstream's `Cmdq` on a fresh device, the virtual GSP serving it on a thread of its own,
//! as [`with_gsp`] makes it) runs the [`SCENARIO`] with the `N`-th allocation of the thread
//! that sends and receives failing once ([`failslab::fail_nth`]). The GSP's thread is not
//! counted: the injection is the arming thread's. The scenario, on one queue:
//!
//! 1. `SetRegistry` (upstream's), sent without waiting, makes the GSP post, unasked, the
//!    three lines of its boot log (`UCODE_LIBOS_PRINT`), each taken with
//!    `Cmdq::receive_msg`, and `GSP_INIT_DONE`, taken by upstream's wait
//!    (`wait_gsp_init_done`: a loop of `receive_msg` in 7.3.4, `Cmdq::wait_for` in the
//!    series);
//! 2. echo controls of 1, 100 and 4096 bytes and `GetGspStaticInfo` (upstream's, with its
//!    own reader), round trips through `Cmdq::send_command`;
//! 3. an echo of 100 KiB through `send_command`, whose reply the GSP splits into
//!    continuation records, and one of 200 KiB sent without waiting, whose split reply is
//!    taken with `receive_msg`.
//!
//! A caller retries as a driver would: a `receive_msg` or a wait that returns `ENOMEM` is
//! called again (at most [`RETRIES`] times); a `send_command` that returns `ENOMEM` is
//! followed by a `receive_msg` of its reply, or, when its allocation failed before the
//! command went out, is sent again. The series' `send_command` and `wait_for` retry
//! `ENOMEM` themselves until their deadline (`receive_within`).
//!
//! Every message the GSP sends is accounted for: delivered whole (byte for byte as the
//! GSP sent it; the static information by the GPU name upstream's reader keeps), delivered
//! whole after its caller got `ENOMEM`, delivered wrong (cut, or other bytes), lost (never
//! delivered), or duplicated (delivered twice). Then, disarmed, a further round trip must
//! succeed, and a drain of the ring must find no reply left. A run's messages are compared
//! with the run in which no failure was injected (the last): what a tree does wrong
//! without any failure (7.3.4 cuts a split reply to its first element) is said once, not
//! counted as a loss.
//!
//! Each failed allocation is placed: building a command (`SetRegistry::new`), sending one
//! (`SplitState::new` splitting a command, before anything goes out), the queue's receive
//! itself (the series' reassembly), or a message's reader (`MessageFromGsp::read`: ours
//! copy the payload into a `KVec`, as upstream's `GspSequence` does; upstream's
//! `GetGspStaticInfoReply` pushes its memory regions into one).

use core::{
    cell::Cell,
    convert::Infallible,
    marker::PhantomData, //
};

use std::{
    format,
    println,
    string::String,
    vec::Vec, //
};

use kernel::{
    host::failslab,
    prelude::*,
    time::Delta, //
};
use nova_core::gsp::fw::NV_OK;
use vgsp::GPU_NAME;

use crate::{
    bench::with_gsp,
    checks::{
        RmEcho,
        RmEchoReply, //
    },
    driver::Bar0,
    gsp::{
        cmdq::{
            Cmdq,
            CommandToGsp,
            MessageFromGsp,
            NoReply, //
        },
        commands::{
            wait_gsp_init_done,
            GetGspStaticInfo,
            GetGspStaticInfoReply,
            SetRegistry, //
        },
        fw::MsgFunction,
    },
    hostile::pattern,
    sbuffer::SBufferIter,
    vgpu::VgpuState,
};

/// How long one `receive_msg` of the scenario waits for a message.
const TAKE_TIMEOUT: Delta = Delta::from_millis(500);

/// How long a receive of the drain waits: the GSP has sent everything by then.
const DRAIN_TIMEOUT: Delta = Delta::from_millis(50);

/// How many times a caller calls again after `ENOMEM`.
const RETRIES: u32 = 3;

/// How many messages of another type a `receive_msg` of the scenario may skip (`ERANGE`).
const SKIPS: u32 = 8;

/// How many messages the drain takes at most.
const DRAIN_MAX: u32 = 64;

/// The most runs of the walk: far more than the scenario's allocations.
const MAX_RUNS: u64 = 1000;

/// Parameter bytes of the further round trip after each run.
const AFTER_LEN: usize = 64;

/// The pattern seed of the further round trip: no step's.
const AFTER_SEED: usize = 1000;

std::thread_local! {
    /// Whether the command being sent has had its payload written: every allocation its
    /// send makes (`SplitState::new` splitting it) is made by then, and it goes out.
    static WRITTEN: Cell<bool> = const { Cell::new(false) };
    /// Whether the reader of a message had its allocation fail.
    static READER_FAILED: Cell<bool> = const { Cell::new(false) };
}

/// A command `C` sent as it is, its reply taken as `R`: [`Noted`] by `send_command`,
/// [`NoReply`] when sent without waiting. Notes in [`WRITTEN`] that its payload is written.
struct Watched<C, R> {
    command: C,
    _reply: PhantomData<R>,
}

impl<C, R> Watched<C, R> {
    /// `command`, watched.
    fn new(command: C) -> Self {
        Self {
            command,
            _reply: PhantomData,
        }
    }
}

impl<C: CommandToGsp, R> CommandToGsp for Watched<C, R> {
    const FUNCTION: MsgFunction = C::FUNCTION;
    type Command = C::Command;
    type Reply = R;
    type InitError = C::InitError;

    fn init(&self) -> impl Init<C::Command, C::InitError> {
        self.command.init()
    }

    fn variable_payload_len(&self) -> usize {
        self.command.variable_payload_len()
    }

    fn init_variable_payload(
        &self,
        dst: &mut SBufferIter<core::array::IntoIter<&mut [u8], 2>>,
    ) -> Result {
        WRITTEN.set(true);
        self.command.init_variable_payload(dst)
    }
}

/// A message `M` as its reader reads it; notes in [`READER_FAILED`] that the reader's
/// allocation failed.
struct Noted<M>(M);

impl<M: MessageFromGsp<InitError = Error>> MessageFromGsp for Noted<M> {
    const FUNCTION: MsgFunction = M::FUNCTION;
    type InitError = Error;
    type Message = M::Message;

    fn read(
        msg: &M::Message,
        sbuffer: &mut SBufferIter<core::array::IntoIter<&[u8], 2>>,
    ) -> Result<Self> {
        let read = M::read(msg, sbuffer);
        if let Err(ENOMEM) = read {
            READER_FAILED.set(true);
        }
        read.map(Self)
    }
}

/// A line of the GSP's log (`UCODE_LIBOS_PRINT`), as it reached the caller.
struct LogLine {
    text: KVec<u8>,
}

impl MessageFromGsp for LogLine {
    const FUNCTION: MsgFunction = MsgFunction::UcodeLibOsPrint;
    type InitError = Error;
    type Message = ();

    fn read(_msg: &(), sbuffer: &mut SBufferIter<core::array::IntoIter<&[u8], 2>>) -> Result<Self> {
        Ok(Self {
            text: sbuffer.flush_into_kvec(GFP_KERNEL)?,
        })
    }
}

/// A step of the scenario.
#[derive(Clone, Copy)]
enum Step {
    /// Upstream's `SetRegistry`, sent without waiting: the GSP answers with its boot log
    /// and `GSP_INIT_DONE`, unasked.
    Registry,
    /// A line of the GSP's boot log, taken with `receive_msg`.
    Line(&'static str),
    /// `GSP_INIT_DONE`, taken by upstream's `wait_gsp_init_done`.
    InitDone,
    /// An echo of this many parameter bytes through `send_command`.
    Echo(usize),
    /// `GetGspStaticInfo` through `send_command`.
    StaticInfo,
    /// An echo of this many bytes sent without waiting, its reply taken with
    /// `receive_msg`.
    EchoTaken(usize),
}

/// The scenario each run of the walk runs, in order.
const SCENARIO: &[Step] = &[
    Step::Registry,
    Step::Line("vgsp: RM init start"),
    Step::Line("vgsp: message queues up"),
    Step::Line("vgsp: RM init done"),
    Step::InitDone,
    Step::Echo(1),
    Step::Echo(100),
    Step::Echo(4096),
    Step::StaticInfo,
    Step::Echo(100 * 1024),
    Step::EchoTaken(200 * 1024),
];

impl Step {
    /// Returns the step's name in the report.
    fn name(self) -> String {
        match self {
            Self::Registry => String::from("SetRegistry"),
            Self::Line(text) => format!("log line {text:?}"),
            Self::InitDone => String::from("GSP_INIT_DONE"),
            Self::Echo(len) => format!("{len} B echo reply (send_command)"),
            Self::StaticInfo => String::from("GetGspStaticInfo reply"),
            Self::EchoTaken(len) => format!("{len} B echo reply (receive_msg)"),
        }
    }
}

/// A message the GSP sends in the scenario, and what became of it in one run.
struct Message {
    /// Its step.
    step: Step,
    /// What it carries: a line's text or an echo's parameters (empty for the others).
    bytes: Vec<u8>,
    /// Times it reached a caller whole.
    whole: u32,
    /// How it reached a caller otherwise.
    wrong: Vec<String>,
    /// The `ENOMEM`s its callers got.
    enomem: u32,
    /// Messages of another type its callers' receives skipped (`ERANGE`), consuming them.
    skipped: u32,
    /// What its caller got last, when it did not get the message.
    failed: Option<String>,
}

impl Message {
    /// Returns what became of the message, in a few words.
    fn fate(&self) -> String {
        match (self.whole, self.wrong.first(), &self.failed) {
            (0, None, failed) => {
                let mut why = String::new();
                if self.enomem > 0 {
                    why += &format!("ENOMEM to its caller {} time(s), then ", self.enomem);
                }
                why += failed.as_deref().unwrap_or("never received");
                if self.skipped > 0 {
                    why += &format!(
                        ", having skipped {} message(s) of another type (ERANGE)",
                        self.skipped
                    );
                }
                format!("LOST ({why})")
            }
            (0, Some(wrong), _) => format!("delivered wrong: {wrong}"),
            (1, _, _) if self.enomem > 0 => {
                format!("whole after {} ENOMEM to its caller", self.enomem)
            }
            (1, _, _) => String::from("whole"),
            (n, _, _) => format!("DUPLICATED (delivered whole {n} times)"),
        }
    }

    /// Returns whether the message never reached a caller.
    fn lost(&self) -> bool {
        self.whole == 0 && self.wrong.is_empty()
    }
}

/// Where the failed allocation of a run was.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Site {
    /// Building a command (`SetRegistry::new`).
    Command,
    /// Sending one: `SplitState::new`, before anything goes out.
    Send,
    /// The queue's receive itself.
    Queue,
    /// A message's reader (`MessageFromGsp::read`).
    Reader,
}

impl Site {
    /// Returns the site's name in the report.
    fn name(self) -> &'static str {
        match self {
            Self::Command => "building the command",
            Self::Send => "sending",
            Self::Queue => "the queue's receive",
            Self::Reader => "the reader",
        }
    }
}

/// One run of the scenario.
struct Run {
    /// Whether the armed allocation was reached (and failed).
    injected: bool,
    /// Allocations the thread made while armed.
    allocations: u64,
    /// The step of the failed allocation and where in it it was.
    at: Option<(Step, Site)>,
    /// The scenario's messages, in order.
    messages: Vec<Message>,
    /// What went wrong after the scenario: the further round trip, the drain.
    after: Vec<String>,
}

/// The scenario on one bench, sending and receiving through `cmdq`.
struct Scenario<'a> {
    /// Upstream's queue.
    cmdq: &'a Cmdq,
    /// The BAR its doorbell is rung through.
    bar: Bar0<'a>,
    /// The scenario's messages, in order, and what became of them so far.
    messages: Vec<Message>,
    /// Where the failure of the current step was, when the step could tell.
    site: Option<Site>,
}

impl Scenario<'_> {
    /// Returns the index of the message whose `bytes` are `got`, among the messages of
    /// the steps `like` accepts.
    fn find(&self, like: fn(Step) -> bool, got: &[u8]) -> Option<usize> {
        self.messages
            .iter()
            .position(|m| like(m.step) && m.bytes[..] == *got)
    }

    /// Counts message `at` as delivered whole to the caller waiting for message `own`.
    fn got(&mut self, own: usize, at: usize) {
        self.messages[at].whole += 1;
        if at != own {
            let name = self.messages[at].step.name();
            self.messages[own].failed = Some(format!("its caller got the {name} instead"));
        }
    }

    /// Receives a message of type `M` as a caller does: again after `ENOMEM` (at most
    /// [`RETRIES`] times, each noted on message `own`) and after a message of another type
    /// (`ERANGE`, at most [`SKIPS`] times). Its reader's failing allocation is [`Noted`].
    fn take<M: MessageFromGsp<InitError = Error>>(&mut self, own: usize) -> Result<M> {
        let (mut retries, mut skips) = (0, 0);
        loop {
            match self.cmdq.receive_msg::<Noted<M>>(TAKE_TIMEOUT) {
                Err(ENOMEM) if retries < RETRIES => {
                    retries += 1;
                    self.messages[own].enomem += 1;
                }
                Err(ERANGE) if skips < SKIPS => {
                    skips += 1;
                    self.messages[own].skipped += 1;
                }
                got => return got.map(|Noted(m)| m),
            }
        }
    }

    /// Sends `command` through `send_command`, [`Watched`], its reply [`Noted`].
    fn send<C, M>(&self, command: C) -> Result<M>
    where
        C: CommandToGsp<InitError = Infallible>,
        M: MessageFromGsp<InitError = Error>,
    {
        self.cmdq
            .send_command(self.bar, Watched::<C, Noted<M>>::new(command))
            .map(|Noted(m)| m)
    }

    /// Accounts for an echo reply `got` that a caller waiting for message `own` got by
    /// `how`.
    fn echo_got(&mut self, own: usize, got: Result<RmEchoReply>, how: &str) {
        let is_echo = |s| matches!(s, Step::Echo(_) | Step::EchoTaken(_));
        match got {
            Ok(reply) if reply.status == NV_OK => match self.find(is_echo, &reply.params) {
                Some(at) => self.got(own, at),
                None => {
                    let want = &self.messages[own].bytes;
                    let wrong =
                        match reply.params.len() < want.len() && want.starts_with(&reply.params) {
                            true => format!(
                                "cut to its first {} of {} bytes",
                                reply.params.len(),
                                want.len()
                            ),
                            false => format!(
                                "{} bytes unlike any echo sent, first difference at byte {:?}",
                                reply.params.len(),
                                reply.params.iter().zip(want).position(|(a, b)| a != b)
                            ),
                        };
                    self.messages[own].wrong.push(wrong);
                }
            },
            Ok(reply) => self.messages[own]
                .wrong
                .push(format!("status {:#x}", reply.status)),
            Err(e) => self.messages[own].failed = Some(format!("{how} returned {e:?}")),
        }
    }

    /// Sends `SetRegistry` without waiting, again after `ENOMEM`.
    fn registry(&mut self) -> core::result::Result<(), String> {
        for _ in 0..=RETRIES {
            let registry = match SetRegistry::new(VgpuState::Disabled) {
                Ok(registry) => registry,
                Err(ENOMEM) => {
                    self.site = Some(Site::Command);
                    continue;
                }
                Err(e) => return Err(format!("SetRegistry::new returned {e:?}")),
            };
            match self.cmdq.send_command_no_wait(self.bar, registry) {
                Ok(()) => return Ok(()),
                Err(ENOMEM) => self.site = Some(Site::Send),
                Err(e) => return Err(format!("sending SetRegistry returned {e:?}")),
            }
        }
        Err(String::from("SetRegistry: ENOMEM on every try"))
    }

    /// Takes log line `own` with `receive_msg`, unless it came already (to a caller of
    /// the line before, on its retry).
    fn line(&mut self, own: usize) {
        if self.messages[own].whole > 0 {
            return;
        }
        let is_line = |s| matches!(s, Step::Line(_));
        match self.take::<LogLine>(own) {
            Ok(line) => match self.find(is_line, &line.text) {
                Some(at) => self.got(own, at),
                None => self.messages[own].wrong.push(format!(
                    "the line {:?}",
                    String::from_utf8_lossy(&line.text)
                )),
            },
            Err(e) => self.messages[own].failed = Some(format!("receive_msg returned {e:?}")),
        }
    }

    /// Takes `GSP_INIT_DONE`, message `own`, with upstream's wait.
    fn init_done(&mut self, own: usize) {
        let mut retries = 0;
        let got = loop {
            match wait_gsp_init_done(self.cmdq) {
                Err(ENOMEM) if retries < RETRIES => {
                    retries += 1;
                    self.messages[own].enomem += 1;
                }
                got => break got,
            }
        };
        match got {
            Ok(()) => self.messages[own].whole += 1,
            Err(e) => {
                self.messages[own].failed = Some(format!("wait_gsp_init_done returned {e:?}"));
            }
        }
    }

    /// The echo round trip of message `own` through `send_command`. A `send_command` that
    /// returns `ENOMEM` is sent again if its command did not go out, and followed by a
    /// `receive_msg` of its reply if it did.
    fn echo(&mut self, own: usize) {
        let params = self.messages[own].bytes.clone();
        let (mut sends, mut how) = (0, "send_command");
        let got = loop {
            WRITTEN.set(false);
            match self.send::<_, RmEchoReply>(RmEcho::echo(&params)) {
                Err(ENOMEM) if !WRITTEN.get() && sends < RETRIES => {
                    sends += 1;
                    self.site = Some(Site::Send);
                }
                Err(ENOMEM) if WRITTEN.get() => {
                    self.messages[own].enomem += 1;
                    how = "receive_msg";
                    break self.take::<RmEchoReply>(own);
                }
                got => break got,
            }
        };
        self.echo_got(own, got, how);
    }

    /// The round trip of `GetGspStaticInfo`, message `own`, through `send_command`; its
    /// reply is whole when it names the virtual GPU.
    fn static_info(&mut self, own: usize) {
        let mut how = "send_command";
        let got = match self.send::<_, GetGspStaticInfoReply>(GetGspStaticInfo) {
            // The command is one element: its send allocates nothing.
            Err(ENOMEM) => {
                self.messages[own].enomem += 1;
                how = "receive_msg";
                self.take::<GetGspStaticInfoReply>(own)
            }
            got => got,
        };
        match got {
            Ok(info) => match info.gpu_name() {
                Ok(name) if name == GPU_NAME => self.messages[own].whole += 1,
                other => self.messages[own].wrong.push(format!("it names {other:?}")),
            },
            Err(e) => self.messages[own].failed = Some(format!("{how} returned {e:?}")),
        }
    }

    /// The echo of message `own` sent without waiting (again while its send fails for
    /// want of memory), its reply taken with `receive_msg`.
    fn echo_taken(&mut self, own: usize) {
        let params = self.messages[own].bytes.clone();
        let mut sent = Err(ENOMEM);
        for _ in 0..=RETRIES {
            WRITTEN.set(false);
            sent = self
                .cmdq
                .send_command_no_wait(self.bar, Watched::<_, NoReply>::new(RmEcho::echo(&params)));
            match sent {
                Err(ENOMEM) if !WRITTEN.get() => self.site = Some(Site::Send),
                _ => break,
            }
        }
        if let Err(e) = sent {
            self.messages[own].failed = Some(format!("send_command_no_wait returned {e:?}"));
            return;
        }
        let got = self.take::<RmEchoReply>(own);
        self.echo_got(own, got, "receive_msg");
    }

    /// After the scenario: a further round trip must bring its own reply whole, and a drain
    /// must find nothing left. Returns what did not.
    fn after(&mut self) -> Vec<String> {
        let mut wrong = Vec::new();
        let params = pattern(AFTER_LEN, AFTER_SEED);
        match self.cmdq.send_command(self.bar, RmEcho::echo(&params)) {
            Ok(reply) if reply.status == NV_OK && reply.params[..] == params[..] => {}
            Ok(reply) => {
                wrong.push(format!(
                    "the further round trip got a reply of {} bytes, not its own",
                    reply.params.len()
                ));
                self.drained(reply);
            }
            Err(e) => wrong.push(format!("the further round trip returned {e:?}")),
        }
        let mut stray = 0;
        for _ in 0..DRAIN_MAX {
            match self.cmdq.receive_msg::<RmEchoReply>(DRAIN_TIMEOUT) {
                Ok(reply) => {
                    wrong.push(format!(
                        "a reply of {} bytes left on the ring",
                        reply.params.len()
                    ));
                    self.drained(reply);
                }
                Err(ERANGE) => stray += 1,
                Err(ETIMEDOUT) => break,
                Err(e) => {
                    wrong.push(format!("the drain's receive returned {e:?}"));
                    break;
                }
            }
        }
        if stray > 0 {
            wrong.push(format!(
                "{stray} element(s) of another type left on the ring"
            ));
        }
        wrong
    }

    /// Counts `reply`, found after the scenario, to the echo it repeats, if any.
    fn drained(&mut self, reply: RmEchoReply) {
        let is_echo = |s| matches!(s, Step::Echo(_) | Step::EchoTaken(_));
        if let Some(at) = self.find(is_echo, &reply.params) {
            self.messages[at].whole += 1;
        }
    }
}

/// Runs the scenario once on a fresh bench, its thread's `n`-th allocation failing.
///
/// # Errors
///
/// - `ENOMEM` if the bench cannot be had; the GSP's own error.
fn run(n: u64) -> Result<Run> {
    let messages: Vec<Message> = SCENARIO
        .iter()
        .enumerate()
        .filter(|(_, s)| !matches!(s, Step::Registry))
        .map(|(seed, &step)| Message {
            step,
            bytes: match step {
                Step::Line(text) => text.as_bytes().to_vec(),
                Step::Echo(len) | Step::EchoTaken(len) => pattern(len, seed),
                _ => Vec::new(),
            },
            whole: 0,
            wrong: Vec::new(),
            enomem: 0,
            skipped: 0,
            failed: None,
        })
        .collect();
    let (run, stats) = with_gsp(0, |cmdq, bar| {
        let mut s = Scenario {
            cmdq,
            bar: bar.io(),
            messages,
            site: None,
        };
        let mut at = None;
        let mut after = Vec::new();
        let armed = failslab::fail_nth(n);
        let mut own = 0;
        for &step in SCENARIO {
            READER_FAILED.set(false);
            s.site = None;
            let before = armed.injected();
            match step {
                Step::Registry => {
                    if let Err(e) = s.registry() {
                        after.push(e);
                        break;
                    }
                }
                Step::Line(_) => s.line(own),
                Step::InitDone => s.init_done(own),
                Step::Echo(_) => s.echo(own),
                Step::StaticInfo => s.static_info(own),
                Step::EchoTaken(_) => s.echo_taken(own),
            }
            if !matches!(step, Step::Registry) {
                own += 1;
            }
            if armed.injected() && !before {
                let site = match (READER_FAILED.get(), s.site) {
                    (true, _) => Site::Reader,
                    (false, Some(site)) => site,
                    (false, None) => Site::Queue,
                };
                at = Some((step, site));
            }
        }
        let (injected, allocations) = (armed.injected(), armed.allocations());
        drop(armed);
        after.extend(s.after());
        Run {
            injected,
            allocations,
            at,
            messages: s.messages,
            after,
        }
    })?;
    stats?;
    Ok(run)
}

/// What [`nomem`] found.
pub struct NomemOutcome {
    /// Runs with an allocation failed: the allocations of the scenario.
    pub failed: u64,
    /// Messages lost over all runs, each one a loss the run without failure does not have.
    pub lost: usize,
    /// Messages delivered more than once over all runs.
    pub duplicated: usize,
    /// Runs after which the queue did not work as after the run without failure.
    pub broken: usize,
    /// One line per loss, duplicate and broken queue, and per message the run without
    /// failure delivers wrong.
    pub findings: Vec<String>,
    /// The summary's part: `nomem walk: N allocations failed in turn, L messages lost`.
    pub summary: String,
}

/// The allocation-failure walk: the scenario once for each of its thread's allocations,
/// that allocation failing, on a fresh bench each time; one line per run, what became of
/// the messages that fared otherwise than in the run without failure.
///
/// # Errors
///
/// - `ENOMEM` if a bench cannot be had; the GSP's own error.
/// - `E2BIG` if the scenario still allocates after [`MAX_RUNS`] runs.
pub fn nomem() -> Result<NomemOutcome> {
    let mut runs = Vec::new();
    let baseline = loop {
        let n = u64::try_from(runs.len()).map_err(|_| E2BIG)?;
        if n >= MAX_RUNS {
            return Err(E2BIG);
        }
        let run = run(n)?;
        if !run.injected {
            break run;
        }
        runs.push(run);
    };
    let mut outcome = NomemOutcome {
        failed: baseline.allocations,
        lost: 0,
        duplicated: 0,
        broken: 0,
        findings: Vec::new(),
        summary: String::new(),
    };
    println!(
        "nomem: the scenario makes {} allocations on the receiving thread; without failure:",
        baseline.allocations
    );
    for m in &baseline.messages {
        println!("nomem:     {}: {}", m.step.name(), m.fate());
        if m.fate() != "whole" {
            outcome.findings.push(format!(
                "nomem: without any failure, the {}: {}",
                m.step.name(),
                m.fate()
            ));
        }
    }
    for line in &baseline.after {
        println!("nomem:     then {line}");
    }
    let mut sites = [0u64; 4];
    for (n, run) in runs.iter().enumerate() {
        let place = match run.at {
            Some((step, site)) => {
                // CAST: a fieldless enum's discriminant, below 4.
                sites[site as usize] += 1;
                format!("{}, {}", step.name(), site.name())
            }
            None => String::from("after the scenario"),
        };
        let mut changed = Vec::new();
        for (m, base) in run.messages.iter().zip(&baseline.messages) {
            let fate = m.fate();
            if fate == base.fate() {
                continue;
            }
            if m.lost() && !base.lost() {
                outcome.lost += 1;
                outcome.findings.push(format!(
                    "nomem: N={n} ({place}): the {} {fate}",
                    m.step.name()
                ));
            } else if m.whole > 1 {
                outcome.duplicated += 1;
                outcome.findings.push(format!(
                    "nomem: N={n} ({place}): the {} {fate}",
                    m.step.name()
                ));
            }
            changed.push(format!("{} {fate}", m.step.name()));
        }
        let broken: Vec<&String> = run
            .after
            .iter()
            .filter(|line| !baseline.after.contains(line))
            .collect();
        if !broken.is_empty() {
            outcome.broken += 1;
            for line in &broken {
                outcome
                    .findings
                    .push(format!("nomem: N={n} ({place}): then {line}"));
                changed.push(format!("then {line}"));
            }
        }
        let what = match changed.is_empty() {
            true => String::from("every message as without failure"),
            false => changed.join("; "),
        };
        println!("nomem: N={n} ({place}): {what}");
    }
    // CAST: fieldless enums' discriminants, below 4.
    println!(
        "nomem: the failed allocations: {} building a command, {} sending, {} in the queue's \
         receive, {} in readers",
        sites[Site::Command as usize],
        sites[Site::Send as usize],
        sites[Site::Queue as usize],
        sites[Site::Reader as usize]
    );
    let mut summary = format!(
        "nomem walk: {} allocations failed in turn, {} messages lost",
        outcome.failed, outcome.lost
    );
    if outcome.duplicated > 0 {
        summary += &format!(", {} duplicated", outcome.duplicated);
    }
    if outcome.broken > 0 {
        summary += &format!(", the queue unlike itself after {} runs", outcome.broken);
    }
    println!("{summary}");
    outcome.summary = summary;
    Ok(outcome)
}
