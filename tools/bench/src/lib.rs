// SPDX-License-Identifier: GPL-2.0

//! The performance benchmark: nova-core's GSP command queue against the physical
//! limits of the machine and against rtrb, with the driver-side agent and the GSP-side
//! agent on two threads pinned to CPU 0 ([`pin::DRIVER_CPU`]) and CPU 1
//! ([`pin::GSP_CPU`]).
//!
//! `cargo run --release -p vgsp-bench` prints one table and the ratios and writes
//! `target/vgsp-bench.json`; `--quick` is a short run. The stages are measurement only:
//! nothing here changes the driver.
//!
//! `cargo run --release -p vgsp-bench -- --variants` does the same and also measures the
//! driver's other barrier variants in the same run, printing acq-rel / all-Full (and
//! acq-rel / seed) for every queue figure but the RPC throughputs (`rpc_*_per_s`): see
//! [Barrier variants](#barrier-variants).
//!
//! # Repetitions and medians
//!
//! The two vCPUs of the machines this runs on sometimes share a physical core (or a
//! core complex) and sometimes not, so absolute figures swing by 3× and more between runs
//! and even between repetitions: the ping-pong's min..max shows which weather a run had
//! (about 160 ns close together, about 500 ns apart on the machine this was written on).
//! Close together, cache lines move fast but two spinning threads share one core's
//! execution units, so the queue's round trip, which is mostly instructions, gets
//! slower while the ping-pong gets faster. Every figure is therefore measured
//! [`Config::reps`] times, the repetitions interleaved (repetition 1 of every figure, then
//! repetition 2 of every figure, ...; within one, the two figures of each ratio back to
//! back: [`MEASURE_ORDER`]), each repetition a fresh setup running for
//! [`Config::sample_time`] after a warm-up. The table gives the median over the
//! repetitions and the spread (the lowest and highest repetition). A ratio is the median
//! of the per-repetition ratios (both figures of one repetition were measured seconds
//! apart); the ratio of the medians is printed beside it.
//!
//! # The figures
//!
//! Physical limits ([`limits`]), no queue code involved:
//!
//! - `pingpong_rt_ns`: the cache-line ping-pong round trip. One 64-bit counter alone in
//!   its cache line; the driver thread stores an odd value (`Release`) and spins
//!   (`Acquire`) until the GSP thread, spinning on the same line, answers with the next
//!   even one. Each round trip is timed on its own with the monotonic clock, exactly as a
//!   command round trip is, so both carry the same clock overhead (and its granularity,
//!   about 10 ns on the machine this was written on); median and p99 of the round trips
//!   of a repetition.
//! - `ring_rt_ns`: the round trip of the smallest pointer-and-data ring: each way one
//!   cache line of payload (eight relaxed stores) published by a counter in a line of
//!   its own (`Release`), the reader loading the payload after it has seen the counter
//!   (`Acquire`), and answering the same way. The shape of the queue's round trip with
//!   nothing else: whether the data line costs a second transfer on top of the pointer's
//!   is what this figure over the ping-pong says.
//! - `memcpy_4k_gbps`, `memcpy_64k_gbps`: single-thread `memcpy` bandwidth (GB/s, 10^9
//!   bytes a second) between two page-aligned buffers of that size, hot in the cache, on
//!   the driver's CPU.
//! - `stream_4k_mbps`, `stream_64k_mbps`: the cross-core stream limit (MB/s, 10^6 bytes a
//!   second): a ring of [`limits::STREAM_SLOTS`] page-aligned slots of that size and one
//!   counter each way, each counter alone in its cache line. The producer (driver CPU)
//!   waits for a free slot (`Acquire` load of the consumer's counter), copies the payload
//!   into it and bumps its counter (`Release`); the consumer (GSP CPU) waits for a full
//!   slot (`Acquire`), copies it out and bumps its counter (`Release`). No header, no
//!   checksum, no validation: the bound any queue that copies in and out meets.
//!
//! The queue ([`queue`]): the real driver ([`nova_core::gsp::cmdq::Cmdq`]) and the real
//! virtual GSP ([`vgsp::Vgsp`]) sharing one `GspMem`, the driver ringing the doorbell of
//! a simulated BAR0 ([`vdev::SimBar`]) after every element, as the host and KUnit
//! tiers set them up. Each repetition starts from a fresh pair. Every figure carries the
//! driver's barrier variant ([`VARIANT`]).
//!
//! - `echo8_rt_busy_ns`: an 8-byte `Echo` sent and its reply received, the doorbell
//!   rung into a BAR whose doorbell is observed (every ring takes the simulated device's
//!   lock and wakes its waiters, as it does in the host tier), the GSP thread
//!   busy-polling ([`vgsp::Vgsp::step`] in a loop, `spin_loop` when idle). Each round
//!   trip timed on its own; median and p99 of a repetition.
//! - `echo8_rt_quiet_bell_ns`: the same with a BAR whose doorbell register is plain
//!   memory (the KUnit fixture's `TestBar`): the difference to the figure above is the
//!   simulated doorbell's cost.
//! - `echo8_rt_spin_wait_ns`: the first figure with the driver looking at the queue back
//!   to back with nothing between the looks (the driver's own wait spins for 100 µs
//!   with a clock read between looks, then naps): the queue is given a
//!   [`cmdq::MsgqSignal`](nova_core::gsp::cmdq::MsgqSignal) that never sleeps
//!   ([`queue::SPIN`]). The difference to the first figure is what the driver's polling
//!   costs.
//! - `echo8_rt_floor_ns`: both of the above: no doorbell cost, no poll interval. What is
//!   left is the queue's instructions and its cache-line transfers.
//! - `echo8_rt_asleep_ns`: the same as the first, but the GSP thread serves the way the
//!   host and KUnit tiers run it ([`vgsp_kunit::gsp_thread::serve`]: it sleeps on the
//!   doorbell whenever it is idle), and the driver spins [`Config::asleep_gap`] before
//!   each command so the GSP is asleep when the doorbell rings: wake-up included. With
//!   the two threads on two CPUs, that wake-up is an inter-processor interrupt to the
//!   GSP's idle CPU, most of the figure (40–50 us on a 2-vCPU VM); the driver polls
//!   through it and sees the reply as it lands. Upstream's queue on the same figure, and
//!   where each microsecond goes, in each placement: `cargo xtask upstream bench` and the
//!   documentation of its `perf` module (`tests/upstream/src/perf.rs`).
//! - `cmd_4k_mbps`, `cmd_16k_mbps`, `cmd_64k_mbps`, `cmd_256k_mbps`: one-way command
//!   throughput (MB/s of payload, and messages a second). The driver sends commands of
//!   that payload as fast as the ring takes them and drains the replies whenever one is
//!   waiting; the GSP busy-polls. The command is [`queue::SINK_FUNCTION`]
//!   (`VGSP_SINK`: an 8-byte header giving the length, then the bytes), which the virtual GSP consumes whole (every element
//!   copied out, checksummed, reassembled) and answers with an empty reply of one slot,
//!   so the reverse direction carries 80 bytes a command, not an echo. The clock runs
//!   from the first command to the last reply. A 64 KiB payload does not fit one element
//!   (at most 65 456 bytes): it is a head and one continuation record, 17 slots; the
//!   256 KiB command is five elements. The table names the elements and slots.
//! - `cmd_1slot_mbps`: the same with 4016-byte payloads, the most one slot holds beside
//!   the 80-byte header: a 4 KiB payload takes two slots (both sides copy only the
//!   header and the payload it announces), so this against `cmd_4k_mbps` shows what the
//!   second slot costs.
//! - `rpc_1caller_per_s`, `rpc_2callers_per_s`, `rpc_8callers_per_s`: RPC throughput (RPCs
//!   a second) of one, two and eight callers sharing one queue, as the driver's threads
//!   share it ([`queue::rpc_throughput`]). Each caller sends with
//!   [`Cmdq::submit`](nova_core::gsp::cmdq::Cmdq::submit), its reply awaited, in a loop, an
//!   [`Echo`](nova_testbench::rpc::Echo) of [`queue::RPC_PAYLOAD`] (256) bytes, about
//!   the parameters of a typical RM control (one slot each way), and checks that the reply
//!   is its payload; every caller has a payload of its own, so a reply handed to the wrong
//!   caller is caught. A failed or wrong reply fails the figure with its error; it is never
//!   counted. Several RPCs may be in flight at once, each reply reaching its caller. The
//!   GSP busy-polls, the doorbell observed. The callers are threads of their own
//!   (`bench-caller`), made anew each repetition after the rings have been warmed, and all
//!   pinned to the driver's CPU: the GSP is a processor of its own, so a caller on the GSP
//!   thread's CPU would take from it time that a real GSP never loses. On the two vCPUs this
//!   runs on, the callers therefore share one CPU: the figures show what several RPCs in
//!   flight save or cost there (hand-overs between the callers, sleeps and wake-ups), not
//!   what more driver CPUs would add; and since the virtual GSP answers within a
//!   microsecond, not what overlapping RPCs would hide of a slow firmware's latency. The
//!   clock starts once every caller is ready and stops when the last has returned; the RPCs
//!   counted are all those the callers completed, the last ones in flight included.
//! - `rpc_1caller_onelock_per_s`, `rpc_2callers_onelock_per_s`,
//!   `rpc_8callers_onelock_per_s`: the same callers and the same workload, each
//!   send and wait called with one lock of the benchmark's (a [`kernel::sync::Mutex`])
//!   held across it, send and reply: upstream's design (Linux 7.3's nova-core holds one
//!   mutex across a command and its reply), so one RPC is in flight at a time. It is our
//!   queue under that lock, not upstream's code: against the figures above it measures what
//!   letting several RPCs be in flight gains, not what our queue costs over upstream's.
//!
//! The peer ([`peer`]):
//!
//! - `rtrb_4k_mbps`, `rtrb_16k_mbps`, `rtrb_64k_mbps`: [rtrb](https://docs.rs/rtrb),
//!   the SPSC ring a Rust user would pick, as a byte ring of [`peer::RTRB_CAPACITY`]
//!   bytes carrying messages of that size between the same two pinned threads: the
//!   producer copies each message in whole (`push_entire_slice`), the consumer copies it
//!   out whole (`pop_entire_slice`). Same clocking as the queue's throughput.
//!
//! Profile hints ([`limits`], [`queue::turns`]), to explain the ratios:
//!
//! - `checksum_4k_gbps`, `checksum_64k_gbps`: [`nova_core::gsp::fw::element::checksum`] over a
//!   buffer of that size on one thread (GB/s). Every element is checksummed twice, once
//!   by the sender and once by the receiver
//!   ([`nova_core::gsp::fw::element::verify_checksum`]); the driver's send sums each
//!   2 KiB block of the payload just before it copies it into the ring, so it reads the
//!   bytes from memory once, the virtual GSP's in a pass of its own
//!   ([`nova_core::gsp::fw::GspMsgElement::seal`]).
//! - `turn_echo8_ns`, `turn_echo8_driver_ns`, `turn_echo8_gsp_ns`: the work of the 8-byte
//!   echo, the driver and the virtual GSP taking turns on the driver's CPU (the driver
//!   posts, the GSP serves until idle, the driver receives and recycles the reply), so no
//!   cache line crosses cores and nobody waits: both sides' work a round trip, then each
//!   side's part (less what the clock reads inside it cost). With the GSP busy the two
//!   sides work one after the other in a round trip, so the round trip is at least this
//!   work plus what the cache lines take to cross: `turn_echo8_over_pingpong` is the part
//!   of the round trip, in ping-pongs, that no placement of the threads can hide.
//! - `turn_cmd4k_driver_mbps`, `turn_cmd4k_gsp_mbps`: the same for the 4 KiB
//!   commands of `cmd_4k_mbps`, each side's work per command as the payload rate it would
//!   sustain alone (MB/s). The driver and the GSP run in parallel in the throughput, so
//!   the slower side's work bounds it: `turn4k_driver_over_rtrb4k` below 1 means the
//!   driver's work alone, with nothing crossing cores, is slower than rtrb's whole
//!   transfer.
//!
//! # The ratios
//!
//! [`RATIOS`]: the round trip over the ping-pong (goal at most 3, GSP busy; the r570
//! layout's floor is about 2), the 64 KiB
//! command throughput over the 64 KiB cross-core stream (goal at least 0.85), and the
//! 4 KiB command throughput over rtrb's (goal at least 1); the RPC throughput of the
//! shared queue over that of the same callers under one lock (upstream's design), for 2
//! and for 8 callers (`rpc2_over_onelock2`, `rpc8_over_onelock8`: goal at least 1, several
//! RPCs in flight never lose to one at a time) and for 1 caller (`rpc1_over_onelock1`:
//! goal about 1, between 0.9 and 1.1: a lone caller takes the one lock uncontended, tens of
//! nanoseconds of an RPC of a microsecond or more, so a larger difference is the
//! machine's weather or a harness unfair to one side); then, for information, the other
//! round trips over the ping-pong, the other throughputs over their limits, and the RPC
//! throughput of 2 and of 8 callers over that of 1 (`rpc2_over_rpc1`, `rpc8_over_rpc1`:
//! no goal, since the callers share the driver's one CPU and the GSP thread serves one
//! command at a time, so more callers can gain only what overlaps one caller's work
//! with the GSP's, and lose the hand-overs between them: the design is judged against
//! one lock, not against the number of CPUs). Goals are printed, never asserted. The
//! ratio of the acquire/release driver over the all-`Full` one is measured by
//! `--variants` only; without it the report lists it as pending ([`PENDING`]).
//!
//! # Barrier variants
//!
//! The design's barriers are measured against two variants: `all-full`, every `dma_mb` of
//! the driver and the virtual GSP `Full`, and `seed`, the seed's pre-fix placement (the
//! write-pointer barrier after the pointer store, none after loading the GSP's write
//! pointer: the known bug). Neither is a build option of the driver: `cargo xtask
//! variant-tree NAME DIR` writes a copy of the source with that variant's barriers, made
//! from the same ordering points and mutations as the ordering mutants, and this crate is
//! built there with `VGSP_BENCH_VARIANT=NAME`, which [`VARIANT`] reports in every queue
//! figure of the table and the JSON file.
//!
//! - `--variants` ([`variants`]): first makes each variant's copy of the source and builds
//!   this binary there (release, `target/bench-variants`), then runs the usual repetitions;
//!   each repetition of each queue figure is followed at once by the same repetition in
//!   each variant's binary (`--measure-one KEY`, a process a figure). The RPC throughput
//!   figures (`rpc_*_per_s`, [`FigureSpec::across_variants`]) are left out: they compare
//!   the queue's locking with upstream's, whichever the barriers, and the threads of up to
//!   eight callers sharing one CPU make them swing far more than a barrier's cost, so
//!   against all-Full they would only add verdicts decided by the scheduler (and a dozen
//!   processes a repetition). The table then gives
//!   each queue figure for acq-rel, all-full and seed with the per-repetition ratios
//!   acq-rel / all-full (goal: never slower, at most 1 for a round trip, at least 1 for a
//!   throughput) and acq-rel / seed, and the JSON file `variants` and `variant_ratios`
//!   (`acq_rel_over_all_full`, `acq_rel_over_seed`). About twice the time of a run
//!   without it, plus the two builds.
//! - `vgsp-barriers` (`src/bin/vgsp-barriers.rs`, feature `barrier-stats`: the shim's
//!   barrier counters) counts the barriers one 8-byte `Echo` executes, per side, the
//!   driver and the GSP in turns on one thread. `tools/bench/barriers.sh` builds it for
//!   the three variants and compares them; `tools/bench/barriers.sh --aarch64` does so
//!   cross-built for aarch64 under `qemu-aarch64` (instruction counts, not time), checks
//!   the `dmb` instructions of each binary with `llvm-objdump-22`, and counts the `dmb`s
//!   each really executes from a `qemu-aarch64 -singlestep -d exec` trace.
//!
//! # Profiling
//!
//! `--only KEY,...` measures only those figures. The agents' threads are named
//! `bench-driver` and `bench-gsp`, the callers of the RPC throughput `bench-caller`
//! (`perf report --sort comm,symbol`). For instruction
//! counts that do not depend on the machine's weather, `examples/turns.rs` runs the
//! driver and the GSP in turns on one thread, under callgrind.
//!
//! # Instructions
//!
//! Every run but `--smoke`, `--only` and `--no-instructions` first counts the
//! instructions per command of each side under callgrind ([`instructions`]), and prints
//! them after the ratios: an 8-byte echo round trip (goal at most
//! [`instructions::ECHO_GOAL`], both sides, counted among the goals met) and a 4 KiB
//! command with its empty reply. They are the same on every run, whatever the weather.
//!
//! # Runs
//!
//! `--runs N` repeats the whole run N times: each run before the last prints one line of
//! its ratios that have a goal ([`Report::ratios_line`]), the last its whole table with
//! each ratio's median and range over the runs after its ratios. The goals, and the
//! tally of goals met, are judged on the median of the runs.

pub mod instructions;
pub mod limits;
pub mod machine;
pub mod peer;
pub mod pin;
pub mod queue;
pub mod report;
pub mod stats;
mod util;
pub mod variants;

use std::time::Duration;

use kernel::prelude::*;

pub use report::Report;

/// The barrier variant of the driver this harness is built against, recorded with every
/// queue figure: `acq-rel` (the design), or the name the variant's build gave
/// (`VGSP_BENCH_VARIANT`, set by [`variants::build`] for a copy of the source that
/// `cargo xtask variant-tree` made).
pub const VARIANT: &str = match option_env!("VGSP_BENCH_VARIANT") {
    Some(name) => name,
    None => DESIGN_VARIANT,
};

/// The name of the design's variant, against which the others are compared.
pub const DESIGN_VARIANT: &str = "acq-rel";

/// How long a run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The default: 11 repetitions of 250 ms a figure, 2.75 s of sampling a figure.
    Full,
    /// `--quick`: 3 repetitions of 50 ms a figure, 0.15 s of sampling a figure.
    Quick,
    /// `--smoke`: one repetition of a few iterations a figure, for tests: the figures
    /// mean nothing, only that each is there.
    Smoke,
}

impl Mode {
    /// Returns the name the report gives the mode.
    pub fn name(self) -> &'static str {
        match self {
            Self::Full => "default",
            Self::Quick => "quick",
            Self::Smoke => "smoke",
        }
    }
}

/// What a run measures and for how long.
#[derive(Clone, Debug)]
pub struct Config {
    /// The mode this configuration was made from.
    pub mode: Mode,
    /// Repetitions of every figure.
    pub reps: usize,
    /// How long one repetition of one figure runs, after its warm-up.
    pub sample_time: Duration,
    /// The fewest iterations (round trips, messages, copies) of one repetition.
    pub min_iters: usize,
    /// How long the driver waits before each command of the asleep round trip, so that
    /// the GSP thread has gone to sleep on the doorbell.
    pub asleep_gap: Duration,
    /// The keys of the figures to measure, or `None` for all of them (ratios need both
    /// their figures).
    pub only: Option<Vec<&'static str>>,
}

impl Config {
    /// Returns the figures this configuration measures, in the order of [`FIGURES`].
    pub fn figures(&self) -> Vec<&'static FigureSpec> {
        FIGURES
            .iter()
            .filter(|f| self.only.as_ref().is_none_or(|keys| keys.contains(&f.key)))
            .collect()
    }

    /// Returns the configuration of `mode`.
    pub fn new(mode: Mode) -> Self {
        match mode {
            Mode::Full => Self {
                mode,
                reps: 11,
                sample_time: Duration::from_millis(250),
                min_iters: 100,
                asleep_gap: Duration::from_micros(500),
                only: None,
            },
            Mode::Quick => Self {
                mode,
                reps: 3,
                sample_time: Duration::from_millis(50),
                min_iters: 20,
                asleep_gap: Duration::from_micros(500),
                only: None,
            },
            Mode::Smoke => Self {
                mode,
                reps: 1,
                sample_time: Duration::from_micros(500),
                min_iters: 3,
                asleep_gap: Duration::from_micros(100),
                only: None,
            },
        }
    }
}

/// The part of the report a figure belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    /// The machine's limits, no queue code.
    Physical,
    /// nova-core's queue against the virtual GSP.
    Queue,
    /// The peer: rtrb.
    Peer,
    /// Single-thread measurements of queue code, to explain the ratios.
    Hint,
}

impl Section {
    /// Returns the section's name in the table and the JSON file.
    pub fn name(self) -> &'static str {
        match self {
            Self::Physical => "physical",
            Self::Queue => "queue",
            Self::Peer => "rtrb",
            Self::Hint => "hint",
        }
    }
}

/// What a figure counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Nanoseconds (a latency: median and p99).
    Ns,
    /// 10^9 bytes a second (one thread).
    GBps,
    /// 10^6 bytes of payload a second (a stream: also messages a second).
    MBps,
    /// RPCs completed a second (a throughput of commands sent and answered).
    RpcPerS,
}

impl Unit {
    /// Returns the unit's symbol.
    pub fn symbol(self) -> &'static str {
        match self {
            Self::Ns => "ns",
            Self::GBps => "GB/s",
            Self::MBps => "MB/s",
            Self::RpcPerS => "RPC/s",
        }
    }
}

/// What to run for a figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// [`limits::ping_pong`].
    PingPong,
    /// [`limits::ring_round_trip`].
    RingRoundTrip,
    /// [`limits::memcpy`] of this many bytes.
    Memcpy(usize),
    /// [`limits::stream`] with slots of this many bytes.
    Stream(usize),
    /// [`limits::checksum`] of this many bytes.
    Checksum(usize),
    /// [`queue::echo_round_trip`] in this setup.
    EchoRoundTrip(queue::EchoSetup),
    /// [`queue::command_stream`] of commands with this many payload bytes.
    Commands(usize),
    /// [`peer::rtrb_stream`] of messages of this many bytes.
    Rtrb(usize),
    /// [`queue::turns`]: the work of one command of `len` payload bytes, the driver and
    /// the GSP in turns on one thread. In MB/s of payload for a figure of that unit.
    Turns {
        /// The payload bytes of a command.
        len: usize,
        /// An echo, else a sink command.
        echo: bool,
        /// Whose work.
        side: queue::Turn,
    },
    /// [`queue::rpc_throughput`] of this many callers, this many RPCs in flight.
    Rpcs {
        /// The threads calling.
        callers: usize,
        /// Whether one lock is held across every RPC.
        in_flight: queue::InFlight,
    },
}

/// One figure of the report.
#[derive(Debug)]
pub struct FigureSpec {
    /// The key in the JSON file.
    pub key: &'static str,
    /// The section of the table.
    pub section: Section,
    /// What the table calls it.
    pub label: &'static str,
    /// What it counts.
    pub unit: Unit,
    /// How it is measured.
    pub measure: Measure,
}

impl FigureSpec {
    /// Returns the bytes of one message, for figures that stream messages.
    pub fn msg_bytes(&self) -> Option<usize> {
        match self.measure {
            Measure::Stream(n) | Measure::Commands(n) | Measure::Rtrb(n) => Some(n),
            _ => None,
        }
    }

    /// Returns whether the figure has a p99 besides its median.
    pub fn has_p99(&self) -> bool {
        matches!(
            self.measure,
            Measure::PingPong | Measure::RingRoundTrip | Measure::EchoRoundTrip(..)
        )
    }

    /// Returns the driver variant the figure measured, for figures of the queue.
    pub fn variant(&self) -> Option<&'static str> {
        matches!(
            self.measure,
            Measure::EchoRoundTrip(..) | Measure::Commands(..) | Measure::Rpcs { .. }
        )
        .then_some(VARIANT)
    }

    /// Returns whether `--variants` measures the figure in the other barrier variants too:
    /// the queue's figures but the RPC throughputs (`rpc_*_per_s`; see
    /// [Barrier variants](crate#barrier-variants)).
    pub fn across_variants(&self) -> bool {
        matches!(
            self.measure,
            Measure::EchoRoundTrip(..) | Measure::Commands(..)
        )
    }
}

const KIB: usize = 1024;
/// The largest payload of a one-slot element: 4 KiB less the element header.
const ONE_SLOT_PAYLOAD: usize =
    nova_core::gsp::fw::GSP_PAGE_SIZE - nova_core::gsp::fw::ELEMENT_HEADER_SIZE;

/// Every figure, in the order of the table.
pub const FIGURES: &[FigureSpec] = &[
    FigureSpec {
        key: "pingpong_rt_ns",
        section: Section::Physical,
        label: "cache-line ping-pong round trip",
        unit: Unit::Ns,
        measure: Measure::PingPong,
    },
    FigureSpec {
        key: "ring_rt_ns",
        section: Section::Physical,
        label: "pointer+data ring round trip (1 line each way)",
        unit: Unit::Ns,
        measure: Measure::RingRoundTrip,
    },
    FigureSpec {
        key: "memcpy_4k_gbps",
        section: Section::Physical,
        label: "memcpy 4 KiB, one thread",
        unit: Unit::GBps,
        measure: Measure::Memcpy(4 * KIB),
    },
    FigureSpec {
        key: "memcpy_64k_gbps",
        section: Section::Physical,
        label: "memcpy 64 KiB, one thread",
        unit: Unit::GBps,
        measure: Measure::Memcpy(64 * KIB),
    },
    FigureSpec {
        key: "stream_4k_mbps",
        section: Section::Physical,
        label: "cross-core stream, 4 slots of 4 KiB",
        unit: Unit::MBps,
        measure: Measure::Stream(4 * KIB),
    },
    FigureSpec {
        key: "stream_64k_mbps",
        section: Section::Physical,
        label: "cross-core stream, 4 slots of 64 KiB",
        unit: Unit::MBps,
        measure: Measure::Stream(64 * KIB),
    },
    FigureSpec {
        key: "echo8_rt_busy_ns",
        section: Section::Queue,
        label: "echo 8 B round trip, GSP busy-polling",
        unit: Unit::Ns,
        measure: Measure::EchoRoundTrip(queue::EchoSetup::BUSY),
    },
    FigureSpec {
        key: "echo8_rt_quiet_bell_ns",
        section: Section::Queue,
        label: "echo 8 B round trip, busy, unobserved bell",
        unit: Unit::Ns,
        measure: Measure::EchoRoundTrip(queue::EchoSetup {
            bell: queue::Bell::Quiet,
            ..queue::EchoSetup::BUSY
        }),
    },
    FigureSpec {
        key: "echo8_rt_spin_wait_ns",
        section: Section::Queue,
        label: "echo 8 B round trip, busy, driver spins",
        unit: Unit::Ns,
        measure: Measure::EchoRoundTrip(queue::EchoSetup {
            wait: queue::DriverWait::Spin,
            ..queue::EchoSetup::BUSY
        }),
    },
    FigureSpec {
        key: "echo8_rt_floor_ns",
        section: Section::Queue,
        label: "echo 8 B round trip, busy, unobs. bell, spins",
        unit: Unit::Ns,
        measure: Measure::EchoRoundTrip(queue::EchoSetup {
            bell: queue::Bell::Quiet,
            wait: queue::DriverWait::Spin,
            ..queue::EchoSetup::BUSY
        }),
    },
    FigureSpec {
        key: "echo8_rt_asleep_ns",
        section: Section::Queue,
        label: "echo 8 B round trip, GSP asleep",
        unit: Unit::Ns,
        measure: Measure::EchoRoundTrip(queue::EchoSetup {
            gsp: queue::GspMode::Asleep,
            ..queue::EchoSetup::BUSY
        }),
    },
    FigureSpec {
        key: "cmd_4k_mbps",
        section: Section::Queue,
        label: "one-way 4 KiB commands",
        unit: Unit::MBps,
        measure: Measure::Commands(4 * KIB),
    },
    FigureSpec {
        key: "cmd_16k_mbps",
        section: Section::Queue,
        label: "one-way 16 KiB commands",
        unit: Unit::MBps,
        measure: Measure::Commands(16 * KIB),
    },
    FigureSpec {
        key: "cmd_64k_mbps",
        section: Section::Queue,
        label: "one-way 64 KiB commands",
        unit: Unit::MBps,
        measure: Measure::Commands(64 * KIB),
    },
    FigureSpec {
        key: "cmd_256k_mbps",
        section: Section::Queue,
        label: "one-way 256 KiB command, split",
        unit: Unit::MBps,
        measure: Measure::Commands(256 * KIB),
    },
    FigureSpec {
        key: "cmd_1slot_mbps",
        section: Section::Queue,
        label: "one-way 4016 B commands (slot-sized)",
        unit: Unit::MBps,
        measure: Measure::Commands(ONE_SLOT_PAYLOAD),
    },
    FigureSpec {
        key: "rpc_1caller_per_s",
        section: Section::Queue,
        label: "echo 256 B RPCs, 1 caller",
        unit: Unit::RpcPerS,
        measure: Measure::Rpcs {
            callers: 1,
            in_flight: queue::InFlight::Many,
        },
    },
    FigureSpec {
        key: "rpc_2callers_per_s",
        section: Section::Queue,
        label: "echo 256 B RPCs, 2 callers",
        unit: Unit::RpcPerS,
        measure: Measure::Rpcs {
            callers: 2,
            in_flight: queue::InFlight::Many,
        },
    },
    FigureSpec {
        key: "rpc_8callers_per_s",
        section: Section::Queue,
        label: "echo 256 B RPCs, 8 callers",
        unit: Unit::RpcPerS,
        measure: Measure::Rpcs {
            callers: 8,
            in_flight: queue::InFlight::Many,
        },
    },
    FigureSpec {
        key: "rpc_1caller_onelock_per_s",
        section: Section::Queue,
        label: "echo 256 B RPCs, 1 caller, one lock (upstream)",
        unit: Unit::RpcPerS,
        measure: Measure::Rpcs {
            callers: 1,
            in_flight: queue::InFlight::One,
        },
    },
    FigureSpec {
        key: "rpc_2callers_onelock_per_s",
        section: Section::Queue,
        label: "echo 256 B RPCs, 2 callers, one lock (upstream)",
        unit: Unit::RpcPerS,
        measure: Measure::Rpcs {
            callers: 2,
            in_flight: queue::InFlight::One,
        },
    },
    FigureSpec {
        key: "rpc_8callers_onelock_per_s",
        section: Section::Queue,
        label: "echo 256 B RPCs, 8 callers, one lock (upstream)",
        unit: Unit::RpcPerS,
        measure: Measure::Rpcs {
            callers: 8,
            in_flight: queue::InFlight::One,
        },
    },
    FigureSpec {
        key: "rtrb_4k_mbps",
        section: Section::Peer,
        label: "rtrb, 4 KiB messages",
        unit: Unit::MBps,
        measure: Measure::Rtrb(4 * KIB),
    },
    FigureSpec {
        key: "rtrb_16k_mbps",
        section: Section::Peer,
        label: "rtrb, 16 KiB messages",
        unit: Unit::MBps,
        measure: Measure::Rtrb(16 * KIB),
    },
    FigureSpec {
        key: "rtrb_64k_mbps",
        section: Section::Peer,
        label: "rtrb, 64 KiB messages",
        unit: Unit::MBps,
        measure: Measure::Rtrb(64 * KIB),
    },
    FigureSpec {
        key: "checksum_4k_gbps",
        section: Section::Hint,
        label: "fw::checksum 4 KiB, one thread",
        unit: Unit::GBps,
        measure: Measure::Checksum(4 * KIB),
    },
    FigureSpec {
        key: "checksum_64k_gbps",
        section: Section::Hint,
        label: "fw::checksum 64 KiB, one thread",
        unit: Unit::GBps,
        measure: Measure::Checksum(64 * KIB),
    },
    FigureSpec {
        key: "turn_echo8_ns",
        section: Section::Hint,
        label: "echo 8 B, both sides' work in turns on one thread",
        unit: Unit::Ns,
        measure: Measure::Turns {
            len: 8,
            echo: true,
            side: queue::Turn::Both,
        },
    },
    FigureSpec {
        key: "turn_echo8_driver_ns",
        section: Section::Hint,
        label: "echo 8 B, the driver's work in turns",
        unit: Unit::Ns,
        measure: Measure::Turns {
            len: 8,
            echo: true,
            side: queue::Turn::Driver,
        },
    },
    FigureSpec {
        key: "turn_echo8_gsp_ns",
        section: Section::Hint,
        label: "echo 8 B, the GSP's work in turns",
        unit: Unit::Ns,
        measure: Measure::Turns {
            len: 8,
            echo: true,
            side: queue::Turn::Gsp,
        },
    },
    FigureSpec {
        key: "turn_cmd4k_driver_mbps",
        section: Section::Hint,
        label: "4 KiB commands, the driver's work in turns",
        unit: Unit::MBps,
        measure: Measure::Turns {
            len: 4 * KIB,
            echo: false,
            side: queue::Turn::Driver,
        },
    },
    FigureSpec {
        key: "turn_cmd4k_gsp_mbps",
        section: Section::Hint,
        label: "4 KiB commands, the GSP's work in turns",
        unit: Unit::MBps,
        measure: Measure::Turns {
            len: 4 * KIB,
            echo: false,
            side: queue::Turn::Gsp,
        },
    },
];

/// The order the figures of one repetition are measured in: the two figures of every
/// ratio with a goal back to back, so that a change of the machine's weather between them
/// is unlikely, and those of the other ratios as close as that allows (a figure divided
/// by three others cannot be next to all of them: `rpc_8callers_per_s` is one figure away
/// from `rpc_1caller_per_s`). A permutation of the keys of [`FIGURES`].
pub const MEASURE_ORDER: &[&str] = &[
    "pingpong_rt_ns",
    "echo8_rt_busy_ns",
    "ring_rt_ns",
    "echo8_rt_quiet_bell_ns",
    "echo8_rt_spin_wait_ns",
    "echo8_rt_floor_ns",
    "echo8_rt_asleep_ns",
    "turn_echo8_ns",
    "turn_echo8_driver_ns",
    "turn_echo8_gsp_ns",
    "stream_64k_mbps",
    "cmd_64k_mbps",
    "rtrb_64k_mbps",
    "stream_4k_mbps",
    "cmd_4k_mbps",
    "rtrb_4k_mbps",
    "turn_cmd4k_driver_mbps",
    "turn_cmd4k_gsp_mbps",
    "cmd_1slot_mbps",
    "cmd_16k_mbps",
    "rtrb_16k_mbps",
    "cmd_256k_mbps",
    "rpc_2callers_onelock_per_s",
    "rpc_2callers_per_s",
    "rpc_1caller_per_s",
    "rpc_1caller_onelock_per_s",
    "rpc_8callers_per_s",
    "rpc_8callers_onelock_per_s",
    "memcpy_4k_gbps",
    "memcpy_64k_gbps",
    "checksum_4k_gbps",
    "checksum_64k_gbps",
];

/// A performance goal for a ratio.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Goal {
    /// The ratio must not exceed this.
    AtMost(f64),
    /// The ratio must reach this.
    AtLeast(f64),
    /// The ratio must lie between these two, both included.
    Between(f64, f64),
}

impl Goal {
    /// Returns whether `ratio` meets the goal.
    pub fn met(self, ratio: f64) -> bool {
        match self {
            Self::AtMost(bound) => ratio <= bound,
            Self::AtLeast(bound) => ratio >= bound,
            Self::Between(low, high) => (low..=high).contains(&ratio),
        }
    }
}

/// A ratio of two figures of the same unit.
#[derive(Debug)]
pub struct RatioSpec {
    /// The key in the JSON file.
    pub key: &'static str,
    /// What the table calls it.
    pub label: &'static str,
    /// The key of the numerator.
    pub num: &'static str,
    /// The key of the denominator.
    pub den: &'static str,
    /// The goal, if there is one.
    pub goal: Option<Goal>,
}

/// Every ratio, goals first.
pub const RATIOS: &[RatioSpec] = &[
    RatioSpec {
        key: "rt_busy_over_pingpong",
        label: "echo round trip (GSP busy) / ping-pong",
        num: "echo8_rt_busy_ns",
        den: "pingpong_rt_ns",
        goal: Some(Goal::AtMost(3.0)),
    },
    RatioSpec {
        key: "cmd64k_over_stream64k",
        label: "64 KiB commands / cross-core stream 64 KiB",
        num: "cmd_64k_mbps",
        den: "stream_64k_mbps",
        goal: Some(Goal::AtLeast(0.85)),
    },
    RatioSpec {
        key: "cmd4k_over_rtrb4k",
        label: "4 KiB commands / rtrb 4 KiB",
        num: "cmd_4k_mbps",
        den: "rtrb_4k_mbps",
        goal: Some(Goal::AtLeast(1.0)),
    },
    RatioSpec {
        key: "rpc1_over_onelock1",
        label: "RPCs, 1 caller: shared queue / one lock",
        num: "rpc_1caller_per_s",
        den: "rpc_1caller_onelock_per_s",
        goal: Some(Goal::Between(0.9, 1.1)),
    },
    RatioSpec {
        key: "rpc2_over_onelock2",
        label: "RPCs, 2 callers: shared queue / one lock",
        num: "rpc_2callers_per_s",
        den: "rpc_2callers_onelock_per_s",
        goal: Some(Goal::AtLeast(1.0)),
    },
    RatioSpec {
        key: "rpc8_over_onelock8",
        label: "RPCs, 8 callers: shared queue / one lock",
        num: "rpc_8callers_per_s",
        den: "rpc_8callers_onelock_per_s",
        goal: Some(Goal::AtLeast(1.0)),
    },
    RatioSpec {
        key: "ring_over_pingpong",
        label: "pointer+data ring round trip / ping-pong",
        num: "ring_rt_ns",
        den: "pingpong_rt_ns",
        goal: None,
    },
    RatioSpec {
        key: "rt_busy_over_ring",
        label: "echo round trip (GSP busy) / pointer+data ring",
        num: "echo8_rt_busy_ns",
        den: "ring_rt_ns",
        goal: None,
    },
    RatioSpec {
        key: "rt_quiet_bell_over_pingpong",
        label: "echo round trip (busy, unobserved bell) / ping-pong",
        num: "echo8_rt_quiet_bell_ns",
        den: "pingpong_rt_ns",
        goal: None,
    },
    RatioSpec {
        key: "rt_spin_wait_over_pingpong",
        label: "echo round trip (busy, driver spins) / ping-pong",
        num: "echo8_rt_spin_wait_ns",
        den: "pingpong_rt_ns",
        goal: None,
    },
    RatioSpec {
        key: "rt_floor_over_pingpong",
        label: "echo round trip (unobs. bell, spins) / ping-pong",
        num: "echo8_rt_floor_ns",
        den: "pingpong_rt_ns",
        goal: None,
    },
    RatioSpec {
        key: "rt_asleep_over_pingpong",
        label: "echo round trip (GSP asleep) / ping-pong",
        num: "echo8_rt_asleep_ns",
        den: "pingpong_rt_ns",
        goal: None,
    },
    RatioSpec {
        key: "turn_echo8_over_pingpong",
        label: "echo 8 B, both sides' work in turns / ping-pong",
        num: "turn_echo8_ns",
        den: "pingpong_rt_ns",
        goal: None,
    },
    RatioSpec {
        key: "rt_busy_over_turn_echo8",
        label: "echo round trip (GSP busy) / its work in turns",
        num: "echo8_rt_busy_ns",
        den: "turn_echo8_ns",
        goal: None,
    },
    RatioSpec {
        key: "turn4k_driver_over_rtrb4k",
        label: "4 KiB commands, driver's work alone / rtrb 4 KiB",
        num: "turn_cmd4k_driver_mbps",
        den: "rtrb_4k_mbps",
        goal: None,
    },
    RatioSpec {
        key: "turn4k_gsp_over_rtrb4k",
        label: "4 KiB commands, GSP's work alone / rtrb 4 KiB",
        num: "turn_cmd4k_gsp_mbps",
        den: "rtrb_4k_mbps",
        goal: None,
    },
    RatioSpec {
        key: "cmd4k_over_stream4k",
        label: "4 KiB commands / cross-core stream 4 KiB",
        num: "cmd_4k_mbps",
        den: "stream_4k_mbps",
        goal: None,
    },
    RatioSpec {
        key: "cmd1slot_over_stream4k",
        label: "4016 B commands (1 slot) / cross-core stream 4 KiB",
        num: "cmd_1slot_mbps",
        den: "stream_4k_mbps",
        goal: None,
    },
    RatioSpec {
        key: "cmd16k_over_rtrb16k",
        label: "16 KiB commands / rtrb 16 KiB",
        num: "cmd_16k_mbps",
        den: "rtrb_16k_mbps",
        goal: None,
    },
    RatioSpec {
        key: "cmd64k_over_rtrb64k",
        label: "64 KiB commands / rtrb 64 KiB",
        num: "cmd_64k_mbps",
        den: "rtrb_64k_mbps",
        goal: None,
    },
    RatioSpec {
        key: "rtrb64k_over_stream64k",
        label: "rtrb 64 KiB / cross-core stream 64 KiB",
        num: "rtrb_64k_mbps",
        den: "stream_64k_mbps",
        goal: None,
    },
    RatioSpec {
        key: "rpc2_over_rpc1",
        label: "RPCs, shared queue: 2 callers / 1 caller",
        num: "rpc_2callers_per_s",
        den: "rpc_1caller_per_s",
        goal: None,
    },
    RatioSpec {
        key: "rpc8_over_rpc1",
        label: "RPCs, shared queue: 8 callers / 1 caller",
        num: "rpc_8callers_per_s",
        den: "rpc_1caller_per_s",
        goal: None,
    },
];

/// Ratios the goals ask for that a run without `--variants` does not measure: key, label,
/// and why. A run with `--variants` measures them ([`report::VariantRatio`]).
pub const PENDING: &[(&str, &str, &str)] = &[(
    "acq_rel_over_all_full",
    "acq-rel / all-Full (per queue figure)",
    "measured by `vgsp-bench --variants`, which builds and runs the all-Full driver",
)];

/// Returns the figure whose key is `key`.
pub fn figure(key: &str) -> Option<&'static FigureSpec> {
    FIGURES.iter().find(|f| f.key == key)
}

/// One repetition of one figure: its value and, for latencies, its p99.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// The median latency (ns), or the bandwidth (in the figure's unit).
    pub value: f64,
    /// The 99th percentile latency (ns), for latencies.
    pub p99: Option<f64>,
}

impl Sample {
    /// Returns the sample of a bandwidth.
    pub fn rate(value: f64) -> Self {
        Self { value, p99: None }
    }

    /// Returns the sample of the latencies `ns` (one per operation), which it sorts.
    pub fn latencies(ns: &mut [f64]) -> Self {
        ns.sort_by(f64::total_cmp);
        Self {
            value: stats::median_sorted(ns),
            p99: Some(stats::percentile_sorted(ns, 99.0)),
        }
    }
}

/// What the figures share during a run: the configuration and the simulated BARs.
pub struct Bench {
    /// The configuration.
    pub cfg: Config,
    bars: queue::Bars,
}

impl Bench {
    /// Sets up a run of `cfg`.
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if the simulated BARs cannot be had.
    pub fn new(cfg: Config) -> Result<Self> {
        Ok(Self {
            cfg,
            bars: queue::Bars::new()?,
        })
    }

    /// Measures one repetition of `spec`.
    ///
    /// # Errors
    ///
    /// Any error of the driver or the virtual GSP (a queue figure); the physical and peer
    /// figures cannot fail.
    pub fn measure(&self, spec: &FigureSpec) -> Result<Sample> {
        let cfg = &self.cfg;
        Ok(match spec.measure {
            Measure::PingPong => limits::ping_pong(cfg),
            Measure::RingRoundTrip => limits::ring_round_trip(cfg),
            Measure::Memcpy(n) => limits::memcpy(cfg, n),
            Measure::Stream(n) => limits::stream(cfg, n),
            Measure::Checksum(n) => limits::checksum(cfg, n),
            Measure::EchoRoundTrip(setup) => {
                queue::echo_round_trip(cfg, self.bars.get(setup.bell), setup)?
            }
            Measure::Commands(n) => {
                queue::command_stream(cfg, self.bars.get(queue::Bell::Observed), n)?
            }
            Measure::Rtrb(n) => peer::rtrb_stream(cfg, n),
            Measure::Turns { len, echo, side } => {
                let ns = queue::turns(cfg, len, echo, side)?;
                match spec.unit {
                    // CAST: a payload length is far below 2^53. Bytes a nanosecond, by
                    // 10^3: MB/s.
                    Unit::MBps => Sample::rate(len as f64 * 1e3 / ns.value.max(1.0)),
                    _ => ns,
                }
            }
            Measure::Rpcs { callers, in_flight } => queue::rpc_throughput(
                cfg,
                self.bars.get(queue::Bell::Observed),
                callers,
                in_flight,
            )?,
        })
    }
}

/// Runs every figure `cfg.reps` times, interleaved, and returns the report. Progress
/// goes to `progress`, one line a repetition.
///
/// # Errors
///
/// Any error of [`Bench::new`] or [`Bench::measure`].
pub fn run(cfg: Config, progress: &mut dyn FnMut(&str)) -> Result<Report> {
    run_with_variants(cfg, &[], progress)
}

/// Runs every figure `cfg.reps` times, interleaved, as [`run`]; each repetition of a queue
/// figure is followed at once by the same repetition in each of `variants`' binaries.
///
/// # Errors
///
/// Any error of [`Bench::new`] or [`Bench::measure`]; `EIO` if a variant's binary fails
/// (`progress` says why).
pub fn run_with_variants(
    cfg: Config,
    variants: &[variants::Variant],
    progress: &mut dyn FnMut(&str),
) -> Result<Report> {
    let machine = machine::Machine::probe();
    let bench = Bench::new(cfg)?;
    let figures = bench.cfg.figures();
    let mut samples: Vec<Vec<Sample>> = figures.iter().map(|_| Vec::new()).collect();
    // Per variant, per figure (as `figures`), the variant's samples.
    let mut variant_samples: Vec<Vec<Vec<Sample>>> = variants
        .iter()
        .map(|_| figures.iter().map(|_| Vec::new()).collect())
        .collect();
    let order: Vec<usize> = MEASURE_ORDER
        .iter()
        .filter_map(|key| figures.iter().position(|f| f.key == *key))
        .collect();
    for rep in 0..bench.cfg.reps {
        progress(&format!("repetition {}/{}", rep + 1, bench.cfg.reps));
        for &i in &order {
            samples[i].push(bench.measure(figures[i])?);
            if !figures[i].across_variants() {
                continue;
            }
            for (v, variant) in variants.iter().enumerate() {
                let sample = variant.measure(&bench.cfg, figures[i]).map_err(|why| {
                    progress(&why);
                    EIO
                })?;
                variant_samples[v][i].push(sample);
            }
        }
    }
    let measured_variants = variants
        .iter()
        .zip(variant_samples)
        .map(|(v, per_figure)| {
            let measured = figures
                .iter()
                .zip(per_figure)
                .filter(|(f, _)| f.across_variants())
                .map(|(f, s)| (*f, s))
                .collect();
            (v.name, measured)
        })
        .collect();
    let measured = figures.into_iter().zip(samples).collect();
    Ok(Report::new(machine, bench.cfg, measured).with_variants(measured_variants))
}
