// SPDX-License-Identifier: GPL-2.0

//! The `bench` check (ours): upstream's queue and ours side by side in the same run, on
//! the same bench and the same virtual GSP, with the same RM-control echoes: the round
//! trip of an 8-byte echo with the GSP busy (it spins when idle) and asleep (it sleeps on
//! the doorbell, and each command comes after a pause, so that the doorbell wakes it),
//! and the throughput of 4 KiB and one-element echoes, GSP busy.
//!
//! Each round trip is timed on its own with the monotonic clock and the median printed;
//! a throughput is the parameter bytes sent over the time to send them all and receive
//! every reply. The driver and the GSP threads are not pinned to CPUs (`tests/bench`
//! pins them, for its finer figures): the two drivers share whatever the machine does.

use std::{
    format,
    println,
    string::String,
    time::{Duration, Instant},
    vec::Vec, //
};

use kernel::prelude::*;
use nova_core::gsp::{cmdq::Cmdq as OurCmdq, commands::RmControl};
use vgsp::VGSP_CTRL_CMD_ECHO;

use crate::{
    bench::{
        serving,
        upstream_queue,
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
        &kernel::vdev::SimBar<{ crate::driver::BAR0_SIZE }>,
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

impl Driver
    for (
        &OurCmdq,
        &kernel::vdev::SimBar<{ crate::driver::BAR0_SIZE }>,
    )
{
    fn echo(&mut self, params: &[u8]) -> bool {
        let control = RmControl {
            h_client: 0,
            h_object: 0,
            cmd: VGSP_CTRL_CMD_ECHO,
            params,
        };
        self.0
            .send_command(self.1.io(), control)
            .is_ok_and(|reply| reply.params[..] == *params)
    }
}

/// The figures of one driver.
struct Figures {
    busy_rt: Duration,
    asleep_rt: Duration,
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
            for _ in 0..ASLEEP_ROUND_TRIPS {
                let gap = Instant::now();
                while gap.elapsed() < ASLEEP_GAP {
                    core::hint::spin_loop();
                }
                let t = Instant::now();
                figures.failed += usize::from(!driver.echo(&small));
                times.push(t.elapsed());
            }
            figures.asleep_rt = median(times);
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
        asleep_rt: Duration::ZERO,
        throughput: [0.0; 2],
        failed: 0,
    };
    let mut ours = Figures { ..theirs };
    for mode in [Serve::Busy, Serve::Asleep] {
        let (_, stats) = serving(mode, 0, upstream_queue, |cmdq, bar| {
            measure(&mut (&**cmdq, bar), mode, &mut theirs)
        })?;
        stats?;
        let (_, stats) = serving(
            mode,
            0,
            |dev| {
                let cmdq = KBox::pin_init(OurCmdq::new(dev), GFP_KERNEL)?;
                let address = cmdq.gsp_mem().dma_address();
                Ok((cmdq, address))
            },
            |cmdq, bar| measure(&mut (&**cmdq, bar), mode, &mut ours),
        )?;
        stats?;
    }
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
            us(theirs.asleep_rt),
            us(ours.asleep_rt),
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
