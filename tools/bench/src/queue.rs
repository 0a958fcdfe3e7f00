// SPDX-License-Identifier: GPL-2.0

//! The queue: nova-core's [`Cmdq`] on the driver's CPU and the virtual GSP ([`Vgsp`]) on
//! the GSP's, sharing one `GspMem` and a simulated BAR0. See the crate documentation for
//! what each figure is.

use std::{
    hint::spin_loop,
    sync::{
        atomic::{
            AtomicBool,
            AtomicUsize,
            Ordering::{
                Acquire,
                Relaxed,
                Release, //
            }, //
        },
        Barrier,
    },
    thread::sleep,
    time::{
        Duration,
        Instant, //
    },
};

use kernel::{
    io::register::Register,
    prelude::*,
    sync::{
        new_mutex,
        Mutex, //
    },
    time::Delta, //
};
use nova_core::gsp::{
    cmdq::{
        BenchSeam,
        Cmdq,
        MsgqSignal, //
    },
    fw::{
        self,
        MsgFunction,
        MAX_ELEMENT_PAYLOAD,
        RING_BYTES, //
    },
    regs::{
        Bar0,
        BAR0_SIZE,
        NV_PGSP_QUEUE_HEAD, //
    },
};
use nova_testbench::{
    rpc::{
        element_count_for_rpc,
        Echo,
        EchoReply,
        Sink,
        VGSP_ECHO,
        VGSP_SINK, //
    },
    ReceiveAny,
};
use vdev::SimBar;
use vgsp::{
    Progress,
    Vgsp, //
};
use vgsp_kunit::{
    fixture::{
        gsp_view,
        Pair, //
    },
    gsp_thread::serve, //
};

use crate::{
    pin::{
        run_beside,
        run_on,
        run_pinned,
        DRIVER_CPU, //
    },
    stats,
    util::{
        fill_pattern,
        nanos,
        Span, //
    },
    Config, Sample,
};

/// The function of the one-way throughput's commands: `VGSP_SINK` ([`Sink`]), which the
/// virtual GSP consumes whole, whatever its length, and answers with an empty reply.
pub const SINK_FUNCTION: MsgFunction = VGSP_SINK;
/// The payload of the round-trip echo.
const ECHO_PAYLOAD: [u8; 8] = *b"vgsp-rt!";
/// How long the driver waits for a reply it expects.
const REPLY_TIMEOUT: Delta = Delta::from_secs(2);
/// How long a caller waits for the reply to its command: as the driver's own sends wait
/// (upstream's `send_command`).
const CALL_TIMEOUT: Delta = Delta::from_secs(5);
/// 10^6: MB/s.
const MEGA: f64 = 1e6;
/// The payload of the RPC throughput's echoes: about the parameters of a typical RM
/// control; with the 80-byte element header and the 8-byte echo header, one slot each way.
pub const RPC_PAYLOAD: usize = 256;
/// The longest the coordinator of the RPC throughput sleeps at a time once the sample
/// time is over, while the callers have not yet done `min_iters` RPCs between them.
const RPC_COORDINATOR_NAP: Duration = Duration::from_micros(100);

/// How the GSP thread waits for work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GspMode {
    /// [`Vgsp::step`] in a loop, `spin_loop` when idle: never sleeps.
    Busy,
    /// As the host and KUnit tiers run it ([`serve`]): sleeps on the doorbell when idle.
    Asleep,
}

/// Which simulated BAR0 the driver rings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bell {
    /// `NV_PGSP_QUEUE_HEAD` is a doorbell: every write takes the device's lock and wakes
    /// its waiters, as in the host tier.
    Observed,
    /// No register is a doorbell: a write is a store (the KUnit fixture's `TestBar`).
    Quiet,
}

/// How the driver waits for a reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DriverWait {
    /// As the driver does by default: it looks at the queue back to back (a clock read
    /// between looks) for 100 µs, then every 50 µs.
    Poll,
    /// Back to back: the queue is given [`SPIN`] as its signal, whose wait returns at
    /// once, so the driver looks again as soon as it has looked.
    Spin,
}

/// What an echo round trip runs against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EchoSetup {
    /// How the GSP waits for commands.
    pub gsp: GspMode,
    /// Which BAR the driver rings.
    pub bell: Bell,
    /// How the driver waits for the reply.
    pub wait: DriverWait,
}

impl EchoSetup {
    /// The GSP busy-polling, the observed doorbell, the driver as it is.
    pub const BUSY: Self = Self {
        gsp: GspMode::Busy,
        bell: Bell::Observed,
        wait: DriverWait::Poll,
    };
}

/// A [`MsgqSignal`] that never sleeps: its count never moves and its wait returns at
/// once, so that a receive looks at the queue back to back.
pub struct SpinSignal;

impl MsgqSignal for SpinSignal {
    fn count(&self) -> u64 {
        0
    }

    fn wait(&self, _seen: u64, _timeout: Delta) {
        spin_loop();
    }
}

/// The signal of [`DriverWait::Spin`].
pub static SPIN: SpinSignal = SpinSignal;

/// The simulated BAR0s, made once a run (16 MiB each).
pub struct Bars {
    observed: SimBar<BAR0_SIZE>,
    quiet: SimBar<BAR0_SIZE>,
}

impl Bars {
    /// Allocates both BARs.
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if the memory cannot be had.
    pub fn new() -> Result<Self> {
        Ok(Self {
            observed: SimBar::new(&[NV_PGSP_QUEUE_HEAD::OFFSET])?,
            quiet: SimBar::new(&[])?,
        })
    }

    /// Returns the BAR of `bell`.
    pub fn get(&self, bell: Bell) -> &SimBar<BAR0_SIZE> {
        match bell {
            Bell::Observed => &self.observed,
            Bell::Quiet => &self.quiet,
        }
    }
}

/// Runs [`Vgsp::step`] until `stop` is set, spinning when there is nothing to do.
///
/// # Errors
///
/// Any error of [`Vgsp::step`].
pub fn serve_busy(gsp: &mut Vgsp<'_>, stop: &AtomicBool) -> Result {
    // ORDERING: `Acquire` pairs with the `Release` store in `with_pair`; it only hands over
    // the stop request, the rings are ordered by their own barriers.
    while !stop.load(Acquire) {
        if gsp.step()? != Progress::Worked {
            spin_loop();
        }
    }
    Ok(())
}

/// Runs `driver` with a fresh queue on the driver's CPU while a fresh virtual GSP serves
/// it on the GSP's CPU in `mode`, the doorbell in `bar`; returns what `driver` returned.
///
/// # Errors
///
/// - `ENOMEM` if the shared memory cannot be had.
/// - Any error of `driver`, or of the GSP.
fn with_pair<R: Send>(
    bar: &SimBar<BAR0_SIZE>,
    mode: GspMode,
    driver: impl FnOnce(&Cmdq, &Bar0<'_>) -> Result<R> + Send,
) -> Result<R> {
    let cmdq = KBox::pin_init(Cmdq::new(vdev::device()?), GFP_KERNEL)?;
    // SAFETY: The view is used only by the GSP thread, which `run_pinned` joins before
    // `cmdq`, which owns the memory, is dropped at the end of this function.
    let view = unsafe { gsp_view(&cmdq) };
    let stop = AtomicBool::new(false);
    let (driven, served) = run_pinned(
        || {
            let r = driver(&cmdq, bar.io());
            // ORDERING: `Release` pairs with the `Acquire` loads in `serve_busy` and `serve`;
            // the kick wakes the GSP if it sleeps on the doorbell.
            stop.store(true, Release);
            bar.kick();
            r
        },
        || {
            let mut gsp = Vgsp::new(view)?;
            match mode {
                GspMode::Busy => serve_busy(&mut gsp, &stop),
                GspMode::Asleep => serve(&mut gsp, bar, &stop),
            }
        },
    );
    served?;
    driven
}

/// Sends [`ECHO_PAYLOAD`] and checks the reply.
///
/// # Errors
///
/// - `EIO` if the reply is not the echo of this command.
/// - Any error of the send or the receive.
fn echo(cmdq: &Cmdq, bar: &Bar0<'_>) -> Result {
    let seq = cmdq.post(bar, &Echo(&ECHO_PAYLOAD))?;
    let reply = cmdq.receive_any(REPLY_TIMEOUT)?;
    if reply.function() != VGSP_ECHO
        || reply.sequence != seq
        || reply.rpc_result != fw::NV_OK
        || reply.payload[..] != ECHO_PAYLOAD[..]
    {
        return Err(EIO);
    }
    // As a driver done with a message: its buffer serves the next receive.
    cmdq.recycle(reply);
    Ok(())
}

/// Spins for `d`.
fn spin_for(d: Duration) {
    let end = Instant::now() + d;
    while Instant::now() < end {
        spin_loop();
    }
}

/// Measures the round trip of an 8-byte echo in `setup`, the doorbell in `bar`: median
/// and p99 in nanoseconds.
///
/// # Errors
///
/// Any error of the driver or the GSP.
pub fn echo_round_trip(cfg: &Config, bar: &SimBar<BAR0_SIZE>, setup: EchoSetup) -> Result<Sample> {
    let gap = (setup.gsp == GspMode::Asleep).then_some(cfg.asleep_gap);
    let mut ns = with_pair(bar, setup.gsp, |cmdq, bar| {
        if setup.wait == DriverWait::Spin {
            cmdq.set_signal(&SPIN);
        }
        // Twice round both rings: every slot touched, the caches and the GSP warm.
        for _ in 0..2 * fw::MSGQ_NUM_PAGES {
            echo(cmdq, bar)?;
        }
        let span = Span::start(cfg);
        let mut ns = Vec::new();
        while !span.over(ns.len()) {
            if let Some(gap) = gap {
                spin_for(gap);
            }
            let t0 = Instant::now();
            echo(cmdq, bar)?;
            ns.push(nanos(t0.elapsed()));
        }
        Ok(ns)
    })?;
    Ok(Sample::latencies(&mut ns))
}

/// Returns the elements and the slots an RPC of `len` payload bytes is sent as.
pub fn rpc_shape(len: usize) -> (usize, u32) {
    let elements = element_count_for_rpc(len);
    let mut slots = 0;
    let mut left = len;
    for _ in 0..elements {
        let chunk = left.min(MAX_ELEMENT_PAYLOAD);
        slots += fw::element::elem_count_for(chunk);
        left -= chunk;
    }
    (elements, slots)
}

/// Receives one reply to a [`SINK_FUNCTION`] command, waiting up to `timeout`; returns
/// whether one came.
///
/// # Errors
///
/// - `EIO` if the message is not a successful reply to such a command.
/// - Any error of the receive other than `ETIMEDOUT`.
fn sink_reply(cmdq: &Cmdq, timeout: Delta) -> Result<bool> {
    match cmdq.receive_any(timeout) {
        Ok(msg) if msg.function() == SINK_FUNCTION && msg.rpc_result == fw::NV_OK => Ok(true),
        Ok(_) => Err(EIO),
        Err(e) if e == ETIMEDOUT => Ok(false),
        Err(e) => Err(e),
    }
}

/// Measures one-way throughput of [`SINK_FUNCTION`] commands of `len` payload bytes,
/// the GSP busy-polling: MB/s of payload.
///
/// # Errors
///
/// Any error of the driver or the GSP, or a reply that never comes.
pub fn command_stream(cfg: &Config, bar: &SimBar<BAR0_SIZE>, len: usize) -> Result<Sample> {
    let rate = with_pair(bar, GspMode::Busy, |cmdq, bar| {
        let mut payload = std::vec![0u8; len];
        fill_pattern(&mut payload, 4);
        let send_and_drain = |cmdq: &Cmdq, sent: &mut usize, received: &mut usize| {
            cmdq.post(bar, &Sink(&payload))?;
            *sent += 1;
            while sink_reply(cmdq, Delta::ZERO)? {
                *received += 1;
            }
            Ok::<(), Error>(())
        };
        let drain_all = |cmdq: &Cmdq, sent: usize, received: &mut usize| {
            while *received < sent {
                if !sink_reply(cmdq, REPLY_TIMEOUT)? {
                    return Err(ETIMEDOUT);
                }
                *received += 1;
            }
            Ok(())
        };

        // Twice round the ring: every slot touched, the caches and the GSP warm.
        let (mut sent, mut received) = (0, 0);
        while sent * len < 2 * RING_BYTES || sent < 2 {
            send_and_drain(cmdq, &mut sent, &mut received)?;
        }
        drain_all(cmdq, sent, &mut received)?;

        let span = Span::start(cfg);
        let (mut sent, mut received) = (0, 0);
        while !span.over(sent) {
            send_and_drain(cmdq, &mut sent, &mut received)?;
        }
        drain_all(cmdq, sent, &mut received)?;
        Ok(span.rate(sent * len, MEGA))
    })?;
    Ok(Sample::rate(rate))
}

/// How many RPCs may be in flight at once in the RPC throughput.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InFlight {
    /// Our design: every caller sends and waits when it likes, each reply reaching its
    /// caller.
    Many,
    /// Upstream's design: one lock of the benchmark's held across each RPC, its send and
    /// its reply.
    One,
}

/// Sends `payload` as an [`Echo`] and waits for its reply ([`Cmdq::submit`], then
/// [`PendingReply::wait`](nova_core::gsp::cmdq::PendingReply::wait)),
/// holding `one_lock` across both if given, and checks that the reply is `payload`.
///
/// # Errors
///
/// - `EIO` if the reply is not `payload`.
/// - Any error of [`Cmdq::submit`] or
///   [`PendingReply::wait`](nova_core::gsp::cmdq::PendingReply::wait).
fn echo_rpc(cmdq: &Cmdq, bar: &Bar0<'_>, payload: &[u8], one_lock: Option<&Mutex<()>>) -> Result {
    let _held = one_lock.map(|lock| lock.lock());
    let EchoReply(echoed) = cmdq.submit(bar, &Echo(payload))?.wait(CALL_TIMEOUT)?;
    if echoed[..] != payload[..] {
        return Err(EIO);
    }
    Ok(())
}

/// Measures the throughput of `callers` threads pinned to the driver's CPU, each sending
/// [`RPC_PAYLOAD`]-byte echoes with [`Cmdq::submit`], its reply awaited, in a loop through
/// one queue, `in_flight` saying whether one lock is held across every RPC; the GSP
/// busy-polls, the doorbell in `bar`. RPCs completed by all the callers a second.
///
/// # Errors
///
/// - `ENOMEM` if the shared memory or the lock cannot be had.
/// - `EIO` if a reply is not the payload of its command.
/// - Any other error of a caller's RPC, or of the GSP.
pub fn rpc_throughput(
    cfg: &Config,
    bar: &SimBar<BAR0_SIZE>,
    callers: usize,
    in_flight: InFlight,
) -> Result<Sample> {
    let rate = with_pair(bar, GspMode::Busy, |cmdq, bar| {
        let one_lock = match in_flight {
            InFlight::Many => None,
            InFlight::One => Some(KBox::pin_init(
                new_mutex!((), "vgsp-bench one RPC in flight"),
                GFP_KERNEL,
            )?),
        };
        let one_lock = one_lock.as_deref();
        // A payload of its own for every caller: a reply handed to another caller is
        // caught.
        let payloads: Vec<Vec<u8>> = (0..callers)
            .map(|i| {
                let mut payload = std::vec![0u8; RPC_PAYLOAD];
                // CAST: a handful of callers.
                fill_pattern(&mut payload, 16 + i as u64);
                payload
            })
            .collect();
        // Twice round both rings: every slot touched, the caches and the GSP warm.
        for _ in 0..2 * fw::MSGQ_NUM_PAGES {
            echo_rpc(cmdq, bar, &payloads[0], one_lock)?;
        }

        let (ready, go) = (Barrier::new(callers + 1), Barrier::new(callers + 1));
        let (done, stop) = (AtomicUsize::new(0), AtomicBool::new(false));
        let caller = |i: usize| {
            let payload = &payloads[i];
            ready.wait();
            go.wait();
            let mut rpcs = 0;
            // ORDERING: `Acquire` pairs with the `Release` stores below and in the
            // coordinator; it only hands over the stop request.
            while !stop.load(Acquire) {
                if let Err(e) = echo_rpc(cmdq, bar, payload, one_lock) {
                    // ORDERING: `Release`, as above: the other callers and the
                    // coordinator stop.
                    stop.store(true, Release);
                    return Err(e);
                }
                rpcs += 1;
                // ORDERING: `Relaxed`: a count the coordinator only compares with
                // `min_iters`; the total is what the callers return, joined.
                done.fetch_add(1, Relaxed);
            }
            Ok::<usize, Error>(rpcs)
        };
        let (span, rpcs) = run_beside(DRIVER_CPU, "bench-caller", callers, caller, || {
            // Every caller is pinned and waiting: the clock starts before any of them
            // does.
            ready.wait();
            let span = Span::start(cfg);
            go.wait();
            // ORDERING: `Acquire`, as in the callers; `Relaxed` for the count, as there.
            while !stop.load(Acquire) && !span.over(done.load(Relaxed)) {
                sleep(span.left().max(RPC_COORDINATOR_NAP));
            }
            // ORDERING: `Release`, as in the callers.
            stop.store(true, Release);
            span
        });
        // Every caller has returned: the last RPCs in flight are in the count and in the
        // time.
        let mut total = 0;
        for n in rpcs {
            total += n?;
        }
        // `rate` of RPCs in units of one: RPCs a second.
        Ok(span.rate(total, 1.0))
    })?;
    Ok(Sample::rate(rate))
}

/// Whose work a [`turns`] figure times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Turn {
    /// Both sides: a command sent, served and its reply received.
    Both,
    /// The driver's part: the send and the receive of the reply.
    Driver,
    /// The GSP's part: taking the command and answering it.
    Gsp,
}

/// The turns [`turns`] times as one for [`Turn::Both`], whose figure is the mean turn of
/// each batch: a single turn of the echo lasts only a few clock reads.
const TURN_BATCH: usize = 64;

/// One turn of [`turns`]: sends `payload` ([`Echo`] if `echo`, else [`Sink`]), lets the
/// GSP serve it and receives the reply; returns the clock at the three points between.
///
/// # Errors
///
/// - `EIO` if the reply is not the one its command asks for.
/// - Any error of the driver or the GSP.
fn turn(pair: &mut Pair, payload: &[u8], echo: bool) -> Result<[Instant; 3]> {
    let (function, reply_len) = match echo {
        true => (VGSP_ECHO, payload.len()),
        false => (SINK_FUNCTION, 0),
    };
    let sent = match echo {
        true => pair.cmdq.post(pair.bar.bar(), &Echo(payload)),
        false => pair.cmdq.post(pair.bar.bar(), &Sink(payload)),
    };
    sent?;
    let posted = Instant::now();
    pair.gsp_run()?;
    let served = Instant::now();
    let reply = pair.cmdq.receive_any(Delta::ZERO)?;
    let received = Instant::now();
    if reply.function() != function || reply.payload.len() != reply_len {
        return Err(EIO);
    }
    pair.cmdq.recycle(reply);
    Ok([posted, served, received])
}

/// Measures the work of one command of `len` payload bytes, an [`Echo`] if `echo`, else
/// a [`Sink`], with the driver and the GSP taking turns on the driver's CPU: no second
/// thread, so no cache line crosses cores and nothing waits. `side` says whose work is
/// timed: nanoseconds a command, median and p99 ([`Turn::Both`]: of batches of 64
/// commands; the others of single commands), less what the clock reads inside the time
/// measured cost (the median of a read's own time).
///
/// # Errors
///
/// Any error of the driver or the GSP.
pub fn turns(cfg: &Config, len: usize, echo: bool, side: Turn) -> Result<Sample> {
    run_on(DRIVER_CPU, || {
        let mut pair = Pair::new()?;
        let mut payload = std::vec![0u8; len];
        fill_pattern(&mut payload, 5);
        // Twice round both rings: every slot touched, the caches warm.
        for _ in 0..2 * fw::MSGQ_NUM_PAGES {
            turn(&mut pair, &payload, echo)?;
        }
        let span = Span::start(cfg);
        let (mut ns, mut clock) = (Vec::new(), Vec::new());
        while !span.over(ns.len()) {
            let t0 = Instant::now();
            if side == Turn::Both {
                for _ in 0..TURN_BATCH {
                    turn(&mut pair, &payload, echo)?;
                }
                let end = Instant::now();
                clock.push(nanos(Instant::now().duration_since(end)));
                // CAST: a batch is far below 2^53 ns; `TURN_BATCH` is small.
                ns.push(nanos(end - t0) / TURN_BATCH as f64);
                continue;
            }
            let [posted, served, received] = turn(&mut pair, &payload, echo)?;
            let idle = Instant::now();
            clock.push(nanos(idle.duration_since(received)));
            ns.push(match side {
                Turn::Driver => nanos(posted - t0) + nanos(received - served),
                _ => nanos(served - posted),
            });
        }
        // Each part timed holds one clock read (the driver's two halves, two; a whole
        // turn the three of `turn`).
        let reads = match side {
            Turn::Both => 3.0,
            Turn::Driver => 2.0,
            Turn::Gsp => 1.0,
        };
        let clock = if clock.is_empty() {
            0.0
        } else {
            stats::median(clock.iter().copied())
        };
        for v in &mut ns {
            *v = (*v - reads * clock).max(0.0);
        }
        Ok(Sample::latencies(&mut ns))
    })
}
