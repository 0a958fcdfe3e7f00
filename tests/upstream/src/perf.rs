// SPDX-License-Identifier: GPL-2.0

//! The `bench` check (ours): upstream's queue and ours side by side in the same run, on
//! the same bench and the same virtual GSP, with the same RM-control echoes: the round
//! trip of an 8-byte echo with the GSP busy (it spins when idle) and asleep (it sleeps on
//! the doorbell, and each command comes after a pause, so that the doorbell wakes it),
//! and the throughput of 4 KiB and one-element echoes, GSP busy.
//!
//! Each round trip is timed on its own with the monotonic clock and the median printed;
//! a throughput is the parameter bytes sent over the time to send them all and receive
//! every reply. For the busy figures the driver and the GSP threads are not pinned to
//! CPUs (`tools/bench` pins them, for its finer figures).
//!
//! # The GSP-asleep round trip
//!
//! It is measured in three placements, in the same run, with the driver thread's CPU
//! time per round trip (`CLOCK_THREAD_CPUTIME_ID`) beside the latency: unpinned, both
//! threads on one CPU, and the driver and the GSP on two CPUs; for upstream's queue, ours
//! as it polls by default, and ours sleeping on the GSP's interrupt ([`GspIrq`], which the
//! GSP raises for all three). Where each microsecond goes, from `perf sched timehist -w`
//! of a run on a 2-vCPU VM:
//!
//! 1. The driver writes the command and rings the doorbell: a few hundred nanoseconds,
//!    and a futex wake of the sleeping GSP thread.
//! 2. The GSP thread is woken where the scheduler chooses. On the driver's own CPU it
//!    preempts the driver and runs at once (no inter-processor interrupt); on the other
//!    CPU, which is idle and halted, it runs only after an IPI has brought that vCPU back:
//!    40 to 50 us on this machine, the largest part of every figure that has it.
//! 3. The GSP takes the command, answers (a few microseconds) and sleeps again.
//! 4. The driver sees the reply. Upstream's `wait_for_msg` looks once and then sleeps
//!    1 ms (`read_poll_timeout(.., Delta::from_millis(1), ..)`): if the reply is there at
//!    that first look, which happens only when the GSP preempted the driver before it
//!    looked (step 2 on the same CPU), its round trip is the GSP's wake-up, 12 to 40 us;
//!    otherwise it is 1.1 ms. Ours looks back to back for up to 100 us and so sees the
//!    reply as it lands: about 10 us on one CPU (the woken GSP preempts the polling
//!    driver), about 55 us on two (the IPI). On the interrupt it sleeps at once, and pays
//!    a second wake-up, the driver's, on two CPUs.
//!
//! Unpinned, a run is one of these according to where the scheduler happens to wake the
//! GSP thread, and it tends to stay there: hence figures of upstream between 13 us and
//! 1.1 ms from one run to the next, and of ours between 10 and 70 us. Pinned, in the same
//! run, ours polling was never the slower in our runs, and its CPU time per round trip
//! not above upstream's (upstream's own is 40 to 80 us a round trip on two CPUs, though it
//! sleeps: the accounting of its 1 ms sleep and wake-up in this VM); unpinned, the two
//! queues' figures come from two different draws of the scheduler.

use std::{
    format,
    println,
    string::String,
    time::{Duration, Instant},
    vec::Vec, //
};

use kernel::{
    prelude::*,
    time::Delta, //
};
use nova_core::gsp::{
    cmdq::{
        BenchSeam,
        Cmdq as OurCmdq, //
    },
    commands::RmControl,
};
use vgsp::VGSP_CTRL_CMD_ECHO;

use crate::{
    bench::{
        serving,
        serving_on,
        upstream_queue,
        GspIrq,
        Placement,
        Serve, //
    },
    checks::{
        RmEcho,
        ONE_ELEMENT, //
    },
};

/// Round trips of each round-trip figure (the asleep ones are fewer: each waits a pause).
const BUSY_ROUND_TRIPS: usize = 2000;
const ASLEEP_ROUND_TRIPS: usize = 200;
/// The pause before each command of the asleep round trip: the GSP is asleep by then.
const ASLEEP_GAP: Duration = Duration::from_micros(500);
/// Bytes each throughput figure moves.
const THROUGHPUT_BYTES: usize = 16 << 20;

/// One driver under measurement: sends one 8-byte-or-longer echo and checks its reply.
trait Driver {
    /// Sends `params` as an echo control and returns whether they came back.
    fn echo(&mut self, params: &[u8]) -> bool;
}

impl Driver
    for (
        &crate::gsp::cmdq::Cmdq,
        &vdev::SimBar<{ crate::driver::BAR0_SIZE }>,
    )
{
    fn echo(&mut self, params: &[u8]) -> bool {
        self.0
            .send_command(
                self.1.io(),
                RmEcho {
                    cmd: VGSP_CTRL_CMD_ECHO,
                    params,
                },
            )
            .is_ok_and(|reply| reply.params_match(params))
    }
}

impl Driver for (&OurCmdq, &vdev::SimBar<{ crate::driver::BAR0_SIZE }>) {
    fn echo(&mut self, params: &[u8]) -> bool {
        let control = RmControl {
            h_client: 0,
            h_object: 0,
            cmd: VGSP_CTRL_CMD_ECHO,
            params,
        };
        // As upstream's `send_command` waits, 5 s.
        self.0
            .submit(self.1.io(), &control)
            .and_then(|reply| reply.wait(Delta::from_secs(5)))
            .is_ok_and(|reply| reply.params[..] == *params)
    }
}

/// The asleep round trip of one driver in one placement: the median latency and the
/// median CPU time of the driver's thread per round trip.
#[derive(Clone, Copy, Debug, Default)]
struct Asleep {
    latency: Duration,
    cpu: Duration,
}

/// The placements of the asleep round trip.
const PLACEMENTS: [(Placement, &str); 3] = [
    (Placement::Unpinned, "unpinned"),
    (Placement::SameCpu, "one CPU"),
    (Placement::TwoCpus, "two CPUs"),
];

/// The CPU time of the calling thread so far.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid `timespec` to write.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

/// The figures of one driver.
struct Figures {
    busy_rt: Duration,
    asleep: Asleep,
    /// Bytes per second, for each size of [`SIZES`].
    throughput: [f64; 2],
    /// Echoes whose reply did not come back whole.
    failed: usize,
}

/// The echo sizes of the throughput figures.
const SIZES: [usize; 2] = [4096, ONE_ELEMENT];

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort_unstable();
    times.get(times.len() / 2).copied().unwrap_or_default()
}

/// Runs the round trips and throughputs through `driver`.
fn measure(driver: &mut impl Driver, mode: Serve, figures: &mut Figures) {
    let small = [0x5au8; 8];
    match mode {
        Serve::Busy => {
            let mut times = Vec::with_capacity(BUSY_ROUND_TRIPS);
            for _ in 0..BUSY_ROUND_TRIPS {
                let t = Instant::now();
                figures.failed += usize::from(!driver.echo(&small));
                times.push(t.elapsed());
            }
            figures.busy_rt = median(times);
            for (i, &len) in SIZES.iter().enumerate() {
                // CAST: the pattern keeps the low byte on purpose.
                let params: Vec<u8> = (0..len).map(|b| (b * 13) as u8).collect();
                let count = THROUGHPUT_BYTES / len;
                let t = Instant::now();
                for _ in 0..count {
                    figures.failed += usize::from(!driver.echo(&params));
                }
                // CAST: byte counts far below 2^52, exact in an `f64`.
                figures.throughput[i] = (count * len) as f64 / t.elapsed().as_secs_f64();
            }
        }
        Serve::Asleep => {
            let mut times = Vec::with_capacity(ASLEEP_ROUND_TRIPS);
            let mut cpus = Vec::with_capacity(ASLEEP_ROUND_TRIPS);
            for _ in 0..ASLEEP_ROUND_TRIPS {
                let gap = Instant::now();
                while gap.elapsed() < ASLEEP_GAP {
                    core::hint::spin_loop();
                }
                let cpu = thread_cpu();
                let t = Instant::now();
                figures.failed += usize::from(!driver.echo(&small));
                times.push(t.elapsed());
                cpus.push(thread_cpu().saturating_sub(cpu));
            }
            figures.asleep = Asleep {
                latency: median(times),
                cpu: median(cpus),
            };
        }
    }
}

/// Measures upstream's queue and ours and prints the figures side by side with the
/// ratios: how many times upstream is slower (its round trip over ours, our throughput
/// over its).
///
/// # Errors
///
/// - Any error of the bench; an echo that fails is counted and printed, not an error.
pub fn bench() -> Result<Vec<String>> {
    let mut theirs = Figures {
        busy_rt: Duration::ZERO,
        asleep: Asleep::default(),
        throughput: [0.0; 2],
        failed: 0,
    };
    let mut ours = Figures { ..theirs };
    let ours_queue = |dev| {
        let cmdq = KBox::pin_init(OurCmdq::new(dev), GFP_KERNEL)?;
        let address = cmdq.gsp_mem().dma_address();
        Ok((cmdq, address))
    };
    let (_, stats) = serving(Serve::Busy, 0, upstream_queue, |cmdq, bar| {
        measure(&mut (&**cmdq, bar), Serve::Busy, &mut theirs)
    })?;
    stats?;
    let (_, stats) = serving(Serve::Busy, 0, ours_queue, |cmdq, bar| {
        measure(&mut (&**cmdq, bar), Serve::Busy, &mut ours)
    })?;
    stats?;

    // The asleep round trip in each placement, the GSP raising its interrupt for all:
    // upstream's queue, ours polling as it does by default, and ours sleeping on the
    // interrupt.
    let irq: &'static GspIrq = std::boxed::Box::leak(std::boxed::Box::new(GspIrq::new()?));
    let mut asleep = [[Asleep::default(); 3]; PLACEMENTS.len()];
    for (row, &(placement, _)) in asleep.iter_mut().zip(PLACEMENTS.iter()) {
        for (col, slot) in row.iter_mut().enumerate() {
            let mut figures = Figures { ..theirs };
            let stats = match col {
                0 => {
                    serving_on(
                        Serve::Asleep,
                        placement,
                        Some(irq),
                        0,
                        upstream_queue,
                        |cmdq, bar| measure(&mut (&**cmdq, bar), Serve::Asleep, &mut figures),
                    )?
                    .1
                }
                _ => {
                    serving_on(
                        Serve::Asleep,
                        placement,
                        Some(irq),
                        0,
                        ours_queue,
                        |cmdq, bar| {
                            if col == 2 {
                                cmdq.set_signal(irq);
                            }
                            measure(&mut (&**cmdq, bar), Serve::Asleep, &mut figures)
                        },
                    )?
                    .1
                }
            };
            stats?;
            *slot = figures.asleep;
            let who = if col == 0 { &mut theirs } else { &mut ours };
            who.failed += figures.failed;
        }
    }
    // The headline: unpinned, each queue as it comes (ours polling).
    theirs.asleep = asleep[0][0];
    ours.asleep = asleep[0][1];

    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let mib = |b: f64| b / f64::from(1u32 << 20);
    // The ratio is how many times upstream is slower: its round trip over ours, our
    // throughput over its.
    println!("bench: figure                        upstream        ours  x slower");
    let rows = [
        (
            "8 B round trip, GSP busy (us)",
            us(theirs.busy_rt),
            us(ours.busy_rt),
        ),
        (
            "8 B round trip, GSP asleep (us)",
            us(theirs.asleep.latency),
            us(ours.asleep.latency),
        ),
    ];
    for (what, t, o) in rows {
        println!("bench: {what:<32} {t:>10.1}  {o:>10.1}  {:>10.2}", t / o);
    }
    for (i, len) in SIZES.iter().enumerate() {
        let (t, o) = (mib(theirs.throughput[i]), mib(ours.throughput[i]));
        let what = format!("{len} B echoes, GSP busy (MiB/s)");
        println!("bench: {what:<32} {t:>10.1}  {o:>10.1}  {:>10.2}", o / t);
    }
    println!(
        "bench: GSP asleep, 8 B round trip: median latency / driver CPU time per round trip (us)"
    );
    println!(
        "bench: {:<10} {:>17} {:>17} {:>17}",
        "placement", "upstream", "ours, polling", "ours, interrupt"
    );
    for (row, &(_, name)) in asleep.iter().zip(PLACEMENTS.iter()) {
        let cell = |a: &Asleep| format!("{:.1} / {:.1}", us(a.latency), us(a.cpu));
        println!(
            "bench: {name:<10} {:>17} {:>17} {:>17}",
            cell(&row[0]),
            cell(&row[1]),
            cell(&row[2])
        );
    }
    let mut findings = Vec::new();
    for (who, f) in [("upstream", &theirs), ("ours", &ours)] {
        if f.failed != 0 {
            findings.push(format!(
                "bench: {} of {who}'s echoes did not come back whole",
                f.failed
            ));
        }
    }
    Ok(findings)
}
