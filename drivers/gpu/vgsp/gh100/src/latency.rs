// SPDX-License-Identifier: GPL-2.0

//! Each RPC's latency as the driver experiences it, measured by the device.
//!
//! - **Start**: the doorbell, the driver's write to `NV_PGSP_QUEUE_HEAD`, timed when the
//!   write reaches the device over vfio-user (`Doorbells::ring`). The driver rings once
//!   per element it sends; the GSP pairs the doorbells with the `cpuq` elements it
//!   consumes, in order, and an RPC starts at its first element's.
//! - **The GSP's time**: from the start of the GSP's step that consumed the command to the
//!   end of the step that published the last message it answered with (its reply, or the
//!   events a command makes it send: `GSP_INIT_DONE` after `SET_REGISTRY`), read off the
//!   `gspq` element headers the GSP wrote.
//! - **End**: the driver's store of its `gspq` read pointer past that message. The pointer
//!   lives in guest RAM, which the device sees only by looking: once a reply is published
//!   the GSP's thread looks at it in a loop, yielding the CPU between looks, for `SPIN`
//!   (300 µs); then every `LOOK_EVERY` (10 µs, timer slack 1 µs), for up to `WATCH_MAX`
//!   (200 ms). The end is the first look that sees the pointer past the reply, late by at
//!   most one look: a few µs while it spins, 10 µs plus the host's wake-up after. Each look
//!   is one load of the pointer; the spin holds a host CPU for up to 300 µs per RPC.
//! - **CPU**: the run time of QEMU's vCPU threads (named `CPU n/TCG`; the runner started
//!   QEMU and knows its pid) between the doorbell and the end, summed: a perf task clock
//!   per thread (`PERF_COUNT_SW_TASK_CLOCK`), read to the ns, a running thread's current
//!   slice included. TCG halts an idle vCPU's thread (`WFI`, `HLT`), so it is the guest's
//!   busy time: the driver's polling, its sleeps' and wake-ups' cost, and whatever else
//!   the guest ran meanwhile (its console, slow under TCG). Not `schedstat`
//!   nor the process's CPU clock: the kernel updates a running thread's run time there only
//!   at ticks and switches, so a busy vCPU's lags by up to a tick.
//!
//! Each RPC is said as a `gh100: rpc:` line (`Rpc::line`); `cargo xtask upstream boot`
//! tabulates them.

use std::{
    collections::VecDeque,
    fs,
    os::fd::{
        AsRawFd,
        FromRawFd,
        OwnedFd, //
    },
    sync::{
        Arc,
        Mutex, //
    },
    time::{
        Duration,
        Instant, //
    },
};

use kernel::dma::DmaView;
use nova_core::gsp::fw::{
    element::is_continuation,
    slot_offset,
    GspMsgElement,
    CPUQ_OFFSET,
    GSPQ_OFFSET,
    MSGQ_NUM_PAGES, //
};
use vgsp::{
    Progress,
    Vgsp, //
};
use zerocopy::FromBytes;

use crate::fault::function_name;

/// How long the GSP's thread looks at the driver's read pointer without sleeping, once a
/// reply is published.
pub(crate) const SPIN: Duration = Duration::from_micros(300);
/// How often it looks after that.
pub(crate) const LOOK_EVERY: Duration = Duration::from_micros(10);
/// How long it waits for the driver to read a reply before it says the RPC unread.
pub(crate) const WATCH_MAX: Duration = Duration::from_millis(200);

/// The run time of QEMU's vCPU threads, each counted by a perf task clock.
pub(crate) struct VcpuClock {
    pid: u32,
    /// A `PERF_COUNT_SW_TASK_CLOCK` counter of each vCPU thread.
    counters: Vec<OwnedFd>,
}

/// `perf_event_attr`'s size, as given to the kernel (`PERF_ATTR_SIZE_VER5` and later
/// accept it: the fields past those set are zero).
const PERF_ATTR_SIZE: u32 = 128;
/// `PERF_TYPE_SOFTWARE`.
const PERF_TYPE_SOFTWARE: u32 = 1;
/// `PERF_COUNT_SW_TASK_CLOCK`: the task's run time in ns.
const PERF_COUNT_SW_TASK_CLOCK: u64 = 1;
/// `PERF_FLAG_FD_CLOEXEC`.
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;

/// Opens a task clock counting thread `tid`'s run time on any CPU.
fn task_clock(tid: libc::pid_t) -> Option<OwnedFd> {
    // `perf_event_attr`: `type`, `size`, `config`, then fields left zero (enabled, no
    // sampling, user and kernel time counted).
    let mut attr = [0u64; PERF_ATTR_SIZE as usize / 8];
    attr[0] = u64::from(PERF_TYPE_SOFTWARE) | u64::from(PERF_ATTR_SIZE) << 32;
    attr[1] = PERF_COUNT_SW_TASK_CLOCK;
    // SAFETY: `attr` is a `perf_event_attr` of `PERF_ATTR_SIZE` bytes that outlives the
    // call; the other arguments are plain values (any CPU, no group, close on exec).
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr.as_ptr(),
            tid,
            -1i32,
            -1i32,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    let fd = i32::try_from(fd).ok().filter(|&fd| fd >= 0)?;
    // SAFETY: the kernel just returned `fd`, open and ours alone.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Reads a task clock, in ns.
fn read_clock(counter: &OwnedFd) -> Option<u64> {
    let mut value = [0u8; 8];
    // SAFETY: `counter` is an open perf counter; `value` is 8 live bytes to fill in.
    let n = unsafe { libc::read(counter.as_raw_fd(), value.as_mut_ptr().cast(), value.len()) };
    (n == 8).then(|| u64::from_ne_bytes(value))
}

impl VcpuClock {
    /// The vCPU threads of the QEMU whose process is `pid`, found at the first sample.
    pub(crate) fn of(pid: u32) -> Self {
        Self {
            pid,
            counters: Vec::new(),
        }
    }

    /// Counts the threads of QEMU whose name is a vCPU's.
    fn find(&mut self) {
        let Ok(tasks) = fs::read_dir(format!("/proc/{}/task", self.pid)) else {
            return;
        };
        self.counters = tasks
            .flatten()
            .filter(|task| {
                fs::read_to_string(task.path().join("comm"))
                    .is_ok_and(|comm| is_vcpu_thread(comm.trim_end()))
            })
            .filter_map(|task| task.file_name().to_str()?.parse().ok())
            .filter_map(task_clock)
            .collect();
    }

    /// Returns the vCPU threads' run time so far, summed, in ns, or `None` if there is none
    /// to read.
    pub(crate) fn now(&mut self) -> Option<u64> {
        if self.counters.is_empty() {
            self.find();
        }
        let mut total = 0u64;
        for counter in &self.counters {
            total = total.checked_add(read_clock(counter)?)?;
        }
        (!self.counters.is_empty()).then_some(total)
    }
}

/// Returns whether `comm` names a QEMU vCPU thread (`CPU 0/TCG`, `CPU 1/KVM`).
fn is_vcpu_thread(comm: &str) -> bool {
    comm.starts_with("CPU ") && comm.contains('/')
}

/// A doorbell, as the device saw it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ring {
    at: Instant,
    vcpu: Option<u64>,
}

/// What the BAR and the GSP's thread share: the doorbells rung and not yet paired with a
/// command (the BAR adds, the GSP's thread takes), and the one clock of QEMU's vCPUs both
/// read (its counters count from when they were opened).
#[derive(Default)]
struct Shared {
    rung: VecDeque<Ring>,
    clock: Option<VcpuClock>,
}

/// The doorbells, and the vCPUs' clock.
#[derive(Clone, Default)]
pub(crate) struct Doorbells(Arc<Mutex<Shared>>);

impl Doorbells {
    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Measures the run time of the vCPUs of the QEMU whose process is `pid`.
    pub(crate) fn measure(&self, pid: u32) {
        self.lock().clock = Some(VcpuClock::of(pid));
    }

    /// Returns the vCPUs' run time so far, in ns, if measured.
    pub(crate) fn cpu_now(&self) -> Option<u64> {
        self.lock().clock.as_mut().and_then(VcpuClock::now)
    }

    /// Records a doorbell rung at `at`, with the vCPUs' run time read after the GSP was
    /// woken.
    pub(crate) fn ring(&self, at: Instant) {
        let mut shared = self.lock();
        let vcpu = shared.clock.as_mut().and_then(VcpuClock::now);
        shared.rung.push_back(Ring { at, vcpu });
    }

    /// Forgets the doorbells not yet paired (a reset).
    pub(crate) fn clear(&self) {
        self.lock().rung.clear();
    }

    fn take(&self) -> VecDeque<Ring> {
        core::mem::take(&mut self.lock().rung)
    }

    fn any(&self) -> bool {
        !self.lock().rung.is_empty()
    }
}

/// Returns whether a read pointer that was at `from` and is now at `now` has passed `end`:
/// `end` is no further from `from` than `now`, along the ring of `slots`.
pub(crate) fn passed(from: u32, end: u32, now: u32, slots: u32) -> bool {
    let dist = |to: u32| (to + slots - from % slots) % slots;
    dist(end % slots) <= dist(now % slots)
}

/// One RPC, from its doorbell to the driver reading its answer.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Rpc {
    /// The command's name.
    name: String,
    /// The last message it was answered with, when not its reply.
    answer: Option<String>,
    /// Doorbell to the GSP's step that took it (transport and thread wake-up).
    wake: Option<Duration>,
    /// The GSP's time: from that step to its answer's publication.
    gsp: Duration,
    /// Doorbell to the driver's read pointer past the answer.
    latency: Option<Duration>,
    /// The vCPUs' run time over the same span.
    vcpu: Option<Duration>,
}

/// Formats `d` in µs, one decimal.
fn us(d: Duration) -> String {
    format!("{:.1} us", d.as_secs_f64() * 1e6)
}

impl Rpc {
    /// The transcript's line for the RPC (without `gh100: `).
    pub(crate) fn line(&self) -> String {
        let mut name = self.name.clone();
        if let Some(answer) = &self.answer {
            name += &format!(" -> {answer}");
        }
        let opt = |d: Option<Duration>| d.map_or("?".to_string(), us);
        match self.latency {
            Some(latency) => format!(
                "rpc: {name}: latency {}, gsp {}, wake {}, cpu {}",
                us(latency),
                us(self.gsp),
                opt(self.wake),
                opt(self.vcpu)
            ),
            None if self.answer.is_none() && self.name.ends_with("(no reply)") => {
                format!("rpc: {name}: gsp {}, wake {}", us(self.gsp), opt(self.wake))
            }
            None => format!(
                "rpc: {name}: not read within {} ms, gsp {}, wake {}",
                WATCH_MAX.as_millis(),
                us(self.gsp),
                opt(self.wake)
            ),
        }
    }
}

/// The last message a command was answered with.
#[derive(Clone, Copy, Debug)]
struct Answer {
    /// Its function.
    function: u32,
    /// The end of its slots in `gspq`.
    end: u32,
    /// When it was published.
    at: Instant,
    /// The driver's read pointer when the command's first answer was published.
    from: u32,
}

/// A command taken by the GSP, until its answer is read.
struct Open {
    id: u64,
    function: u32,
    doorbell: Option<Ring>,
    /// The start of the step that consumed it.
    taken: Instant,
    /// Whether its reply (a message of its function) was published.
    replied: bool,
    /// Whether it was answered by nothing before the next command was taken.
    unanswered: bool,
    /// When the driver was seen to have read its answer, and the vCPUs' run time then.
    read: Option<(Instant, Option<u64>)>,
    answer: Option<Answer>,
}

/// The GSP's side of the measurement, on its thread.
pub(crate) struct Watch {
    /// The queues.
    mem: DmaView<'static>,
    doorbells: Doorbells,
    /// Doorbells taken from [`Doorbells`], not yet paired.
    rung: VecDeque<Ring>,
    /// `cpuq` elements consumed whose doorbell is not yet paired: the RPC each starts (none
    /// for a continuation record).
    unpaired: VecDeque<Option<u64>>,
    open: Vec<Open>,
    next_id: u64,
    /// The command the last message published answered.
    last_answered: Option<u64>,
}

impl Watch {
    /// Watches the queues at `mem` (a whole `GspMem`) and the doorbells `doorbells`.
    pub(crate) fn new(mem: DmaView<'static>, doorbells: Doorbells) -> Self {
        // Sleeps as short as asked: the looks are the measurement's granularity.
        // SAFETY: `prctl(PR_SET_TIMERSLACK)` sets this thread's timer slack, in ns; it
        // touches no memory of ours.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong) };
        Self {
            mem,
            doorbells,
            rung: VecDeque::new(),
            unpaired: VecDeque::new(),
            open: Vec::new(),
            next_id: 0,
            last_answered: None,
        }
    }

    /// Reads the element header at `slot` of the queue at `queue`.
    fn header(&self, queue: usize, slot: u32) -> Option<GspMsgElement> {
        let mut raw = [0u8; core::mem::size_of::<GspMsgElement>()];
        let at = queue + slot_offset(slot);
        self.mem.read_bytes(at, &mut raw).ok()?;
        GspMsgElement::read_from_bytes(&raw).ok()
    }

    /// Pairs the doorbells seen with the elements consumed, in order.
    fn pair(&mut self) {
        self.rung.extend(self.doorbells.take());
        while !self.unpaired.is_empty() && !self.rung.is_empty() {
            let (Some(id), Some(ring)) = (self.unpaired.pop_front(), self.rung.pop_front()) else {
                break;
            };
            if let Some(open) = self.open.iter_mut().find(|o| Some(o.id) == id) {
                open.doorbell.get_or_insert(ring);
            }
        }
    }

    /// Runs the GSP until it is idle or blocked, as [`Vgsp::run_until_idle`], noting each
    /// command it consumes and each message it publishes.
    ///
    /// # Errors
    ///
    /// As [`Vgsp::step`].
    pub(crate) fn serve(&mut self, gsp: &mut Vgsp<'_>) -> kernel::error::Result<Progress> {
        loop {
            let (wptr, rptr) = gsp.gsp_ptrs();
            let taken = Instant::now();
            let progress = gsp.step()?;
            let (new_wptr, new_rptr) = gsp.gsp_ptrs();
            if new_rptr != rptr {
                self.consumed(rptr, taken);
            }
            if new_wptr != wptr {
                self.published(gsp, wptr, new_wptr);
            }
            if progress != Progress::Worked {
                return Ok(progress);
            }
        }
    }

    /// Notes the `cpuq` element at `slot`, consumed by a step started at `taken`.
    fn consumed(&mut self, slot: u32, taken: Instant) {
        let header = self.header(CPUQ_OFFSET, slot);
        let id = match header {
            Some(h) if !is_continuation(&h) => {
                // The commands before it answered by nothing: no reply is coming.
                for open in self.open.iter_mut().filter(|o| o.answer.is_none()) {
                    open.unanswered = true;
                }
                let id = self.next_id;
                self.next_id += 1;
                self.open.push(Open {
                    id,
                    function: h.rpc.function,
                    doorbell: None,
                    taken,
                    replied: false,
                    unanswered: false,
                    read: None,
                    answer: None,
                });
                Some(id)
            }
            _ => None,
        };
        self.unpaired.push_back(id);
        self.pair();
    }

    /// Notes the `gspq` element published at `slot`, its slots ending at `end`.
    fn published(&mut self, gsp: &Vgsp<'_>, slot: u32, end: u32) {
        let Some(header) = self.header(GSPQ_OFFSET, slot) else {
            return;
        };
        let function = header.rpc.function;
        // A reply answers the oldest command of its function not yet answered; a
        // continuation record the command the last message answered; an event the last
        // command taken, until it has its reply.
        let target = if is_continuation(&header) {
            self.last_answered
        } else if let Some(o) = self
            .open
            .iter_mut()
            .find(|o| o.function == function && !o.replied)
        {
            o.replied = true;
            Some(o.id)
        } else {
            self.open
                .last()
                .filter(|o| !o.replied && !o.unanswered)
                .map(|o| o.id)
        };
        self.last_answered = target;
        let rptr = gsp.cpu_read_ptr().unwrap_or(slot);
        let Some(open) = self.open.iter_mut().find(|o| Some(o.id) == target) else {
            return;
        };
        let function = match (is_continuation(&header), open.answer) {
            (true, Some(a)) => a.function,
            _ => function,
        };
        open.answer = Some(Answer {
            function,
            end,
            at: Instant::now(),
            from: open.answer.map_or(rptr, |a| a.from),
        });
    }

    /// Returns whether a published answer waits for the driver to read it.
    pub(crate) fn watching(&self) -> bool {
        self.open
            .iter()
            .any(|o| o.answer.is_some() && o.read.is_none())
    }

    /// Returns how long the GSP's thread may sleep before its next look: `idle`, or
    /// [`LOOK_EVERY`] while an answer waits to be read.
    pub(crate) fn wait(&self, idle: Duration) -> Duration {
        match self.watching() {
            true => idle.min(LOOK_EVERY),
            false => idle,
        }
    }

    /// Looks at the driver's read pointer, in a loop for up to [`SPIN`] after an answer
    /// was published, until a doorbell rings; returns the RPCs that ended.
    pub(crate) fn look(&mut self, gsp: &Vgsp<'_>) -> Vec<Rpc> {
        let mut done = self.close(gsp, false);
        while self.watching()
            && !self.doorbells.any()
            && self
                .open
                .iter()
                .filter(|o| o.read.is_none())
                .filter_map(|o| o.answer)
                .any(|a| a.at.elapsed() < SPIN)
        {
            std::thread::yield_now();
            done.extend(self.close(gsp, false));
        }
        done
    }

    /// Ends every RPC whose answer the driver has read, or (with `all`, or after
    /// [`WATCH_MAX`]) whose answer is not read; returns them with those ended before.
    pub(crate) fn close(&mut self, gsp: &Vgsp<'_>, all: bool) -> Vec<Rpc> {
        self.pair();
        let rptr = gsp.cpu_read_ptr().ok();
        let now = Instant::now();
        let read = |a: &Answer| rptr.is_some_and(|r| passed(a.from, a.end, r, MSGQ_NUM_PAGES));
        let newly_read = self
            .open
            .iter()
            .any(|o| o.read.is_none() && o.answer.is_some_and(|a| read(&a)));
        // Sampled once a reply is seen read, not at every look.
        if newly_read {
            let vcpu = self.doorbells.cpu_now();
            for open in self.open.iter_mut().filter(|o| o.read.is_none()) {
                if open.answer.is_some_and(|a| read(&a)) {
                    open.read = Some((now, vcpu));
                }
            }
        }
        let mut done = Vec::new();
        let mut keep = Vec::new();
        for open in std::mem::take(&mut self.open) {
            match open.answer {
                // Said once its doorbell is known.
                Some(_) if open.read.is_some() && (all || open.doorbell.is_some()) => {
                    done.push(report(&open, open.read))
                }
                Some(a) if all || a.at.elapsed() > WATCH_MAX => done.push(report(&open, None)),
                // Said once its doorbell is known.
                None if all
                    || open.unanswered
                        && (open.doorbell.is_some() || open.taken.elapsed() > WATCH_MAX) =>
                {
                    done.push(report(&open, None))
                }
                _ => keep.push(open),
            }
        }
        self.open = keep;
        done
    }
}

/// Returns the RPC `open`, read by the driver at `read` (with the vCPUs' run time then),
/// or not read.
fn report(open: &Open, read: Option<(Instant, Option<u64>)>) -> Rpc {
    let name = function_name(open.function);
    let since = |t: Instant, from: Instant| t.saturating_duration_since(from);
    let ring = open.doorbell;
    let wake = ring.map(|r| since(open.taken, r.at));
    let Some(answer) = open.answer else {
        return Rpc {
            name: format!("{name} (no reply)"),
            answer: None,
            wake,
            gsp: Duration::ZERO,
            latency: None,
            vcpu: None,
        };
    };
    let (latency, vcpu) = match (read, ring) {
        // The GSP may take a command before its doorbell arrives (a look of its own, with
        // the doorbell's message still on its way over the socket): the RPC then starts at
        // the take, and the vCPUs' time, sampled at the doorbell, is not known.
        (Some((at, vcpu)), Some(ring)) => (
            Some(since(at, ring.at.min(open.taken))),
            vcpu.zip(ring.vcpu)
                .filter(|_| ring.at <= open.taken)
                .and_then(|(end, start)| end.checked_sub(start))
                .map(Duration::from_nanos),
        ),
        _ => (None, None),
    };
    Rpc {
        answer: (answer.function != open.function).then(|| function_name(answer.function)),
        name,
        wake,
        gsp: since(answer.at, open.taken),
        latency,
        vcpu,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_pointer_at_the_answer_s_end_has_passed_it() {
        assert!(passed(3, 5, 5, 63));
        assert!(!passed(3, 5, 4, 63));
        assert!(!passed(3, 5, 3, 63));
    }

    #[test]
    fn a_read_pointer_passes_an_answer_across_the_ring_s_end() {
        assert!(!passed(61, 1, 62, 63));
        assert!(!passed(61, 1, 0, 63));
        assert!(passed(61, 1, 1, 63));
        assert!(passed(61, 1, 2, 63));
    }

    #[test]
    fn only_vcpu_threads_are_counted() {
        assert!(is_vcpu_thread("CPU 0/TCG"));
        assert!(is_vcpu_thread("CPU 12/KVM"));
        assert!(!is_vcpu_thread("qemu-system-aar"));
        assert!(!is_vcpu_thread("CPU"));
    }

    #[test]
    fn a_task_clock_counts_a_running_thread_s_time() {
        // SAFETY: a plain syscall.
        let tid = unsafe { libc::gettid() };
        let Some(counter) = task_clock(tid) else {
            // No perf events here (a sandbox): the figure is then said unmeasured.
            return;
        };
        let before = read_clock(&counter).unwrap_or(u64::MAX);
        // Spins until the thread has run 2 ms by the C library's clock (not the wall's:
        // on a busy machine the thread may wait for a CPU most of a wall-clock stretch).
        let thread_ns = || {
            let mut now = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: `now` is a valid `timespec` the call writes.
            let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
            assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
            // CAST: a thread's CPU time is non-negative and far below `u64::MAX` ns.
            now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
        };
        let (start, cap) = (thread_ns(), Instant::now());
        while thread_ns() < start + 2_000_000 && cap.elapsed() < Duration::from_secs(10) {}
        let after = read_clock(&counter).unwrap_or(0);
        assert!(after >= before + 1_000_000, "{before} -> {after}");
        assert_eq!(VcpuClock::of(u32::MAX).now(), None);
    }

    /// An RPC taken at `taken`, answered 10 µs later, its doorbell at `rung`, read at `read`.
    fn open_at(taken: Instant, rung: Instant, read: Instant) -> Rpc {
        let open = Open {
            id: 0,
            function: nova_core::gsp::fw::MsgFunction::GET_GSP_STATIC_INFO.0,
            doorbell: Some(Ring {
                at: rung,
                vcpu: Some(1_000),
            }),
            taken,
            replied: true,
            unanswered: false,
            read: Some((read, Some(5_000))),
            answer: Some(Answer {
                function: nova_core::gsp::fw::MsgFunction::GET_GSP_STATIC_INFO.0,
                end: 2,
                at: taken + Duration::from_micros(10),
                from: 0,
            }),
        };
        report(&open, open.read)
    }

    #[test]
    fn an_rpc_starts_at_its_doorbell() {
        let rung = Instant::now();
        let taken = rung + Duration::from_micros(20);
        let rpc = open_at(taken, rung, taken + Duration::from_micros(100));
        assert_eq!(rpc.latency, Some(Duration::from_micros(120)));
        assert_eq!(rpc.wake, Some(Duration::from_micros(20)));
        assert_eq!(rpc.vcpu, Some(Duration::from_nanos(4_000)));
    }

    #[test]
    fn an_rpc_taken_before_its_doorbell_arrived_starts_at_the_take() {
        let taken = Instant::now();
        let read = taken + Duration::from_micros(100);
        let rpc = open_at(taken, read + Duration::from_micros(50), read);
        assert_eq!(rpc.latency, Some(Duration::from_micros(100)));
        assert_eq!(rpc.vcpu, None);
    }

    #[test]
    fn an_rpc_read_is_said_with_its_figures() {
        let rpc = Rpc {
            name: "GET_GSP_STATIC_INFO".into(),
            answer: None,
            wake: Some(Duration::from_micros(20)),
            gsp: Duration::from_nanos(3_250),
            latency: Some(Duration::from_micros(1_100)),
            vcpu: None,
        };
        assert_eq!(
            rpc.line(),
            "rpc: GET_GSP_STATIC_INFO: latency 1100.0 us, gsp 3.2 us, wake 20.0 us, cpu ?"
        );
    }
}
