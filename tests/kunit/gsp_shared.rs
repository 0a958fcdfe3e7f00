// SPDX-License-Identifier: GPL-2.0

//! One queue shared by many callers: each reply reaches the caller of its command, every
//! event reaches its handler once and in order, a caller that is slow to collect its
//! reply holds up no one, and callers that fill both rings without waiting take the
//! replies off themselves.

use core::sync::atomic::{
    AtomicU32,
    AtomicU64,
    AtomicU8,
    Ordering, //
};

use kernel::prelude::*;
use nova_core::gsp::{
    cmdq::{
        BenchSeam,
        Cmdq,
        EventHandler,
        GspMessage, //
    },
    fw::{
        self,
        MsgFunction, //
    },
};
use nova_testbench::{
    rpc::Echo,
    ReceiveAny, //
};

use crate::{
    fixture::{
        SimBar0,
        REPLY, //
    },
    gsp_thread::{
        run_callers,
        with_queue_thread, //
    },
};

/// The most log lines a [`LineTally`] tells apart.
pub const MAX_LINES: usize = 1024;

/// The largest RPC of a stress run.
pub const MAX_LEN: usize = 200 << 10;

/// A handler of the virtual GSP's periodic log lines (`vgsp: N commands handled`, after
/// every `log_every`th command), counting each line by its number: a line lost, seen
/// twice or out of order shows.
pub struct LineTally {
    log_every: AtomicU64,
    seen: [AtomicU8; MAX_LINES],
    /// The number of the last line seen.
    last: AtomicU64,
    /// Lines seen after a later one.
    out_of_order: AtomicU32,
    /// Lines that are no periodic line of this run.
    strays: AtomicU32,
}

impl LineTally {
    /// A tally that has seen nothing.
    pub const fn new() -> Self {
        Self {
            log_every: AtomicU64::new(0),
            seen: [const { AtomicU8::new(0) }; MAX_LINES],
            last: AtomicU64::new(0),
            out_of_order: AtomicU32::new(0),
            strays: AtomicU32::new(0),
        }
    }

    /// Starts counting the lines of a GSP that logs after every `log_every`th command.
    fn start(&self, log_every: u64) {
        // ORDERING: Relaxed: the tally is set before the callers' threads start, which
        // orders it before every handler call.
        self.log_every.store(log_every, Ordering::Relaxed);
    }

    /// The number of distinct lines seen among the first `lines`, and of lines seen more
    /// than once (every extra sighting counted).
    fn count(&self, lines: u64) -> (u64, u64) {
        let (mut distinct, mut extra) = (0, 0);
        for (i, slot) in (0u64..).zip(self.seen.iter()) {
            // ORDERING: Relaxed: read once every caller and receive has returned.
            let n = u64::from(slot.load(Ordering::Relaxed));
            distinct += u64::from(n > 0 && i < lines);
            extra += n.saturating_sub(1);
        }
        (distinct, extra)
    }
}

impl Default for LineTally {
    fn default() -> Self {
        Self::new()
    }
}

impl EventHandler for LineTally {
    fn handle(&self, msg: &GspMessage) {
        // ORDERING: Relaxed throughout: the receive lock the handler runs under orders
        // its calls, and the counts are read after every thread has returned.
        let every = self.log_every.load(Ordering::Relaxed);
        let number = core::str::from_utf8(&msg.payload)
            .ok()
            .and_then(|t| t.strip_prefix("vgsp: "))
            .and_then(|t| t.split(' ').next())
            .and_then(|n| n.parse::<u64>().ok())
            .filter(|&n| every != 0 && n != 0 && n % every == 0)
            .map(|n| n / every);
        let Some(slot) = number
            .and_then(|n| usize::try_from(n - 1).ok())
            .and_then(|i| self.seen.get(i))
        else {
            self.strays.fetch_add(1, Ordering::Relaxed);
            return;
        };
        slot.fetch_add(1, Ordering::Relaxed);
        let number = number.unwrap_or(0);
        if self.last.swap(number, Ordering::Relaxed) > number {
            self.out_of_order.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The length of caller `caller`'s `k`th RPC: 1 B to [`MAX_LEN`], spread over the orders
/// of magnitude, with an element's worth, one byte more, and the largest now and then.
pub fn rpc_len(caller: usize, k: usize) -> usize {
    let mut x = (caller as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (k as u64 + 1);
    x ^= x >> 29;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 32;
    match x % 16 {
        0 => fw::MAX_ELEMENT_PAYLOAD - 8,
        1 => fw::MAX_ELEMENT_PAYLOAD + 1,
        2 => MAX_LEN,
        _ => {
            // CAST: at most 2^17.
            let span = 1usize << (1 + (x >> 8) % 17);
            (1 + ((x >> 16) as usize) % span).min(MAX_LEN)
        }
    }
}

/// Fills `buf` with the bytes of caller `caller`'s `k`th RPC.
fn fill(buf: &mut [u8], caller: usize, k: usize) {
    let mut x = ((caller as u64) << 32 | k as u64).wrapping_mul(0x2545_f491_4f6c_dd1d) | 1;
    for chunk in buf.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
}

/// What a stress run found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stress {
    /// Callers, each on a thread of its own.
    pub threads: usize,
    /// RPCs sent, by all callers.
    pub rpcs: u64,
    /// Log lines the GSP sent.
    pub events: u64,
    /// RPCs that got no reply and lines that reached no handler.
    pub lost: u64,
    /// Replies that were not their command's echo, or went to a caller that had not sent
    /// it, or to no caller.
    pub misdelivered: u64,
    /// Lines handled more than once.
    pub duplicated: u64,
    /// Lines handled after a later one.
    pub out_of_order: u64,
}

/// What the callers of a stress run share.
struct Shared {
    lost: AtomicU64,
    misdelivered: AtomicU64,
}

/// Sends caller `caller`'s `rpcs` echoes and checks every reply byte for byte.
fn call(cmdq: &Cmdq, bar: &SimBar0<'_>, shared: &Shared, caller: usize, rpcs: usize) {
    let mut buf = KVec::new();
    if buf.resize(MAX_LEN, 0u8, GFP_KERNEL).is_err() {
        shared.lost.fetch_add(rpcs as u64, Ordering::Relaxed);
        return;
    }
    for k in 0..rpcs {
        let payload = &mut buf[..rpc_len(caller, k)];
        fill(payload, caller, k);
        // ORDERING: Relaxed counters, read after every caller returned.
        match cmdq.submit(bar, &Echo(payload)).and_then(|p| p.wait(REPLY)) {
            Ok(reply) if reply.0[..] == payload[..] => {}
            Ok(_) => {
                shared.misdelivered.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                pr_err!(
                    "caller {caller}: RPC {k} of {} bytes: {e:?}\n",
                    payload.len()
                );
                shared.lost.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Runs `threads` callers of `rpcs` echoes each (1 B to 200 KiB, [`rpc_len`]) on one
/// queue, against a virtual GSP on its own thread that logs a line after every
/// `log_every`th command, every line handed to `tally`; prints the summary line and
/// returns what was found.
///
/// # Errors
///
/// - `EINVAL` if `tally` cannot tell the run's lines apart.
/// - Any error of setting up the queue, the GSP or the threads.
pub fn stress(
    threads: usize,
    rpcs: usize,
    log_every: u64,
    tally: &'static LineTally,
) -> Result<Stress> {
    let total = (threads * rpcs) as u64;
    let lines = total / log_every.max(1);
    if log_every == 0 || lines > MAX_LINES as u64 {
        return Err(EINVAL);
    }
    tally.start(log_every);
    let shared = Shared {
        lost: AtomicU64::new(0),
        misdelivered: AtomicU64::new(0),
    };
    let (found, stats) = with_queue_thread(
        |fw| {
            fw.set_log_every(log_every);
            Ok(())
        },
        |cmdq, bar| -> Result<(u64, u64)> {
            cmdq.on_event(MsgFunction::UCODE_LIBOS_PRINT, tally)?;
            run_callers(threads, &|caller| call(cmdq, bar, &shared, caller, rpcs))?;
            // The last line may trail the last reply: a receive hands it over.
            for _ in 0..100 {
                if tally.count(lines).0 >= lines {
                    break;
                }
                if cmdq
                    .receive_any(kernel::time::Delta::from_millis(10))
                    .is_ok()
                {
                    shared.misdelivered.fetch_add(1, Ordering::Relaxed);
                }
            }
            // A reply that went anywhere but to its caller's wait.
            let delivery = cmdq.delivery();
            Ok((
                delivery.unclaimed + delivery.dropped + delivery.late,
                delivery.replies,
            ))
        },
    )?;
    let (misrouted, replies) = found?;
    let stats = stats?;
    let (distinct, duplicated) = tally.count(lines);
    let report = Stress {
        threads,
        rpcs: total,
        events: stats.events,
        lost: shared.lost.load(Ordering::Relaxed) + lines.saturating_sub(distinct),
        misdelivered: shared.misdelivered.load(Ordering::Relaxed)
            + misrouted
            + total.saturating_sub(replies)
            + u64::from(tally.strays.load(Ordering::Relaxed)),
        duplicated,
        out_of_order: u64::from(tally.out_of_order.load(Ordering::Relaxed)),
    };
    pr_info!(
        "shared queue: {} threads, {} RPCs, {} events: {} lost, {} misdelivered, {} duplicated\n",
        report.threads,
        report.rpcs,
        report.events,
        report.lost,
        report.misdelivered,
        report.duplicated
    );
    if stats.commands != total || stats.events != lines {
        pr_err!(
            "the GSP handled {} commands and sent {} lines; {} and {} were expected\n",
            stats.commands,
            stats.events,
            total,
            lines
        );
        return Err(EIO);
    }
    Ok(report)
}

/// The cases of the `nova_core_gsp_shared` suite.
#[kunit_tests(nova_core_gsp_shared)]
pub mod tests {
    use core::sync::atomic::{
        AtomicBool,
        AtomicU64,
        Ordering, //
    };

    use kernel::{
        prelude::*,
        time::{
            delay::fsleep,
            Delta, //
        },
    };
    use nova_core::gsp::{
        cmdq::{
            BenchSeam,
            PendingReply,
            ReplyMatch, //
        },
        fw, //
    };
    use nova_testbench::{
        rpc::{
            Echo,
            EchoReply, //
        },
        ReceiveAny,
    };

    use super::{
        stress,
        LineTally,
        Stress, //
    };
    use crate::{
        fixture::{
            check,
            Pair,
            LONG,
            REPLY,
            SHORT, //
        },
        gsp_thread::{
            run_callers,
            with_queue_thread, //
        },
    };

    /// The callers of the stress case.
    const THREADS: usize = 8;
    /// The RPCs of each.
    const RPCS: usize = 256;
    /// A log line after every this many commands.
    const LOG_EVERY: u64 = 32;

    #[test]
    fn eight_callers_get_their_own_replies_and_every_event_once() -> Result {
        static TALLY: LineTally = LineTally::new();
        let found = stress(THREADS, RPCS, LOG_EVERY, &TALLY)?;
        let lines = (THREADS * RPCS) as u64 / LOG_EVERY;
        check!(
            found
                == Stress {
                    threads: THREADS,
                    rpcs: (THREADS * RPCS) as u64,
                    events: lines,
                    lost: 0,
                    misdelivered: 0,
                    duplicated: 0,
                    out_of_order: 0,
                }
        )
    }

    #[test]
    fn replies_in_order_are_matched_by_order_when_the_gsp_copies_no_sequence() -> Result {
        const CALLERS: usize = 4;
        const EACH: usize = 64;
        let bad = AtomicU64::new(0);
        let (ran, stats) = with_queue_thread(
            |fw| {
                fw.set_sequence_in_replies(false);
                Ok(())
            },
            |cmdq, bar| {
                cmdq.set_reply_match(ReplyMatch::InOrder);
                run_callers(CALLERS, &|caller| {
                    for k in 0..EACH {
                        // CAST: small numbers, a distinct payload per command.
                        let payload = [caller as u8, k as u8, 0x5a];
                        let ok = cmdq
                            .submit(bar, &Echo(&payload))
                            .and_then(|p| p.wait(REPLY))
                            .is_ok_and(|reply| reply.0[..] == payload[..]);
                        // ORDERING: Relaxed counter, read after every caller returned.
                        bad.fetch_add(u64::from(!ok), Ordering::Relaxed);
                    }
                })
            },
        )?;
        ran?;
        check!(stats?.replies == (CALLERS * EACH) as u64)?;
        check!(bad.load(Ordering::Relaxed) == 0)
    }

    #[test]
    fn a_caller_slow_to_collect_its_reply_holds_up_no_one() -> Result {
        const OTHERS: usize = 100;
        let others_done = AtomicBool::new(false);
        let others_ok = AtomicU64::new(0);
        let slow = AtomicU64::new(0);
        let (ran, stats) = with_queue_thread(
            |_| Ok(()),
            |cmdq, bar| {
                run_callers(2, &|caller| match caller {
                    // The slow caller: sends, then collects its reply only once the other
                    // caller is done, which it could not be were it waiting on this one.
                    // It waits up to 10 s: the other's 100 echoes take milliseconds, but
                    // under TCG on a busy machine far longer.
                    0 => {
                        let Ok(pending) = cmdq.submit(bar, &Echo(b"slow")) else {
                            return;
                        };
                        for _ in 0..10_000 {
                            // ORDERING: `Acquire` pairs with the `Release` store below.
                            if others_done.load(Ordering::Acquire) {
                                break;
                            }
                            fsleep(Delta::from_millis(1));
                        }
                        // ORDERING: as above.
                        let after = others_done.load(Ordering::Acquire);
                        let ok = pending.wait(LONG).is_ok_and(|r| r.0[..] == b"slow"[..]);
                        // ORDERING: Relaxed, read after both callers returned.
                        slow.store(u64::from(after) + u64::from(ok), Ordering::Relaxed);
                    }
                    _ => {
                        for k in 0..OTHERS {
                            // CAST: a distinct payload per command.
                            let payload = [k as u8; 16];
                            if cmdq
                                .submit(bar, &Echo(&payload))
                                .and_then(|p| p.wait(REPLY))
                                .is_ok_and(|r| r.0[..] == payload[..])
                            {
                                // ORDERING: Relaxed, read after both callers returned.
                                others_ok.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        // ORDERING: `Release` pairs with the slow caller's `Acquire`.
                        others_done.store(true, Ordering::Release);
                    }
                })
            },
        )?;
        ran?;
        stats?;
        check!(others_ok.load(Ordering::Relaxed) == OTHERS as u64)?;
        // Both: the others finished first, and the slow reply was kept for its caller.
        check!(slow.load(Ordering::Relaxed) == 2)
    }

    #[test]
    fn callers_that_fill_both_rings_without_waiting_take_the_replies_off_themselves() -> Result {
        // Each echo fills 16 slots each way: a few fill `cpuq`, a few more `gspq`, and
        // the GSP then waits for room to answer while every caller is still sending.
        const CALLERS: usize = 2;
        const EACH: usize = 12;
        let len = fw::MAX_ELEMENT_PAYLOAD - 8;
        let bad = AtomicU64::new(0);
        let (ran, stats) = with_queue_thread(
            |_| Ok(()),
            |cmdq, bar| {
                run_callers(CALLERS, &|caller| {
                    // CAST: a caller's number is below `CALLERS`.
                    let Ok(payload) = Pair::pattern(len, caller as u32) else {
                        bad.fetch_add(EACH as u64, Ordering::Relaxed);
                        return;
                    };
                    let mut pending: KVec<PendingReply<'_, EchoReply>> = KVec::new();
                    for _ in 0..EACH {
                        let sent = cmdq.submit(bar, &Echo(&payload));
                        if !sent.is_ok_and(|p| pending.push(p, GFP_KERNEL).is_ok()) {
                            // ORDERING: Relaxed counter, read after every caller returned.
                            bad.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    for p in pending {
                        if !p.wait(LONG).is_ok_and(|r| r.0[..] == payload[..]) {
                            bad.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            },
        )?;
        ran?;
        check!(stats?.replies == (CALLERS * EACH) as u64)?;
        check!(bad.load(Ordering::Relaxed) == 0)
    }

    #[test]
    fn a_reply_to_a_posted_command_waits_for_its_caller() -> Result {
        let (found, stats) = with_queue_thread(
            |_| Ok(()),
            |cmdq, bar| -> Result<bool> {
                let posted = cmdq.post(bar, &Echo(b"posted"))?;
                // Its reply comes first, to a wait for another: kept, not dropped.
                let awaited = cmdq.submit(bar, &Echo(b"awaited"))?.wait(REPLY)?;
                let later = cmdq.receive_any(LONG)?;
                Ok(awaited.0[..] == b"awaited"[..]
                    && later.sequence == posted
                    && later.payload[..] == b"posted"[..]
                    && cmdq.delivery().unclaimed == 1)
            },
        )?;
        stats?;
        check!(found == Ok(true))
    }

    #[test]
    fn a_reply_whose_caller_stopped_waiting_is_dropped_when_it_comes() -> Result {
        let mut pair = Pair::new()?;
        // The GSP does not run: the wait ends, and the reply is abandoned.
        let gone = pair.cmdq.submit(pair.bar.bar(), &Echo(b"too late"))?;
        check!(gone.wait(SHORT).err() == Some(ETIMEDOUT))?;
        pair.gsp.run_until_idle()?;
        let next = pair.cmdq.submit(pair.bar.bar(), &Echo(b"in time"))?;
        pair.gsp.run_until_idle()?;
        let reply = next.wait(LONG)?;
        check!(reply.0[..] == b"in time"[..])?;
        let delivery = pair.cmdq.delivery();
        check!(delivery.late == 1)?;
        check!(delivery.replies == 1)
    }
}
