// SPDX-License-Identifier: GPL-2.0

//! The `hostile` check (ours): every malformed-message class of our driver's faults
//! ("Errors on receive" in `drivers/gpu/nova-core/gsp/cmdq.rs`, the classes of
//! `tests/kunit/cmdq_errors.rs`), fed to upstream's receive path and to ours, one row
//! each, and a GSP that rewrites a message while the receive reads it (a double fetch).
//!
//! Each class runs on a fresh queue of each driver, the virtual GSP posting raw elements
//! turn by turn (`Vgsp::encode_element`, `Vgsp::post_raw`), the two GSPs in the same state,
//! so both drivers see the same bytes. Then:
//!
//! 1. a receive of a `GSP_INIT_DONE` within [`TIMEOUT`], on a thread with a watchdog (a
//!    hang is a receive that takes more than [`WATCHDOG`]) and under `catch_unwind`, the
//!    driver's read pointer (`cpuq.rx.readPtr`) read from the shared memory before and
//!    after;
//! 2. the GSP restores its own write pointer (a class may have published another), posts
//!    a valid message, and a second receive says whether the queue goes on, or the driver
//!    sees the same bad element again.
//!
//! A driver mishandles a class when it returns `Ok` for it, hands the caller bytes other
//! than a valid message carries, hangs, panics, or is stuck on the bad element.
//!
//! Split messages are sent as r570 firmware sends them: every element's `rpc.length`
//! is the RPC header and its own chunk, the head's too; a head announcing its whole RPC
//! is a malformed class of its own. Our receive here is the untyped one (the message is
//! read as a `GSP_INIT_DONE` after it is whole), so a split message ends at its first
//! element that is not full, or at the next element that is not a continuation record.

use core::{
    mem::offset_of,
    sync::atomic::{
        AtomicBool,
        Ordering, //
    },
};

use std::{
    boxed::Box,
    format,
    panic::{
        catch_unwind,
        AssertUnwindSafe, //
    },
    println,
    string::{
        String,
        ToString, //
    },
    sync::mpsc,
    thread,
    time::Duration,
    vec::Vec, //
};

use kernel::{
    dma::DmaView,
    prelude::*,
    time::Delta,
    transmute::FromBytes, //
};
use nova_core::gsp::{
    cmdq::{
        BenchSeam,
        Cmdq as OurCmdq, //
    },
    commands::GspInitDone,
    fault::{
        Consumes,
        Fault,
        Origin, //
    },
    fw::{
        slot_offset,
        GspMsgElement,
        GspRpcHeader,
        MsgFunction as OurFunction,
        CPUQ_OFFSET,
        ELEMENT_HEADER_SIZE,
        GSPQ_OFFSET,
        GSP_PAGE_SIZE,
        MAX_ELEMENT_PAYLOAD,
        MSGQ_READ_PTR_OFFSET,
        MSGQ_WRITE_PTR_OFFSET,
        RPC_HEADER_SIZE, //
    },
};
use nova_testbench::ReceiveAny;
use vgsp::Vgsp;

use crate::{
    bench::gsp_in_turns,
    gsp::{
        cmdq::{
            Cmdq,
            MessageFromGsp, //
        },
        fw::MsgFunction,
    },
    sbuffer::SBufferIter,
};

/// How long each receive may wait.
const TIMEOUT: Delta = Delta::from_millis(50);

/// How long a receive may take before it counts as a hang: a hundred times [`TIMEOUT`],
/// so that a loaded machine that runs the receive's thread late is not taken for one.
const WATCHDOG: Duration = Duration::from_secs(5);

/// The payload of a valid `GSP_INIT_DONE` as the classes send it: its `status`.
const VALID: [u8; 4] = [0x11, 0x22, 0x33, 0x44];

/// The payload of the valid message posted after each class.
const NEXT: [u8; 4] = [0x55, 0x66, 0x77, 0x88];

/// Where the driver's read pointer into `gspq` (`cpuq.rx.readPtr`) is in `GspMem`.
const CPU_READ_PTR: usize = CPUQ_OFFSET + MSGQ_READ_PTR_OFFSET;
const _: () = assert!(CPU_READ_PTR == 0x1020);

/// Where the GSP's write pointer (`gspq.tx.writePtr`) is in `GspMem`.
const GSP_WRITE_PTR: usize = GSPQ_OFFSET + MSGQ_WRITE_PTR_OFFSET;

/// Offsets of the header fields the classes corrupt.
const CHECK_SUM: usize = offset_of!(GspMsgElement, check_sum);
const SEQ_NUM: usize = offset_of!(GspMsgElement, seq_num);
const ELEM_COUNT: usize = offset_of!(GspMsgElement, elem_count);
const RPC: usize = offset_of!(GspMsgElement, rpc);
const HEADER_VERSION: usize = RPC + offset_of!(GspRpcHeader, header_version);
const SIGNATURE: usize = RPC + offset_of!(GspRpcHeader, signature);
const LENGTH: usize = RPC + offset_of!(GspRpcHeader, length);
const FUNCTION: usize = RPC + offset_of!(GspRpcHeader, function);
const RPC_RESULT: usize = RPC + offset_of!(GspRpcHeader, rpc_result);

/// `rpc.length` of an RPC header and `n` payload bytes.
const fn rpc_length(n: usize) -> u32 {
    // CAST: the lengths here are far below 4 GiB.
    (RPC_HEADER_SIZE + n) as u32
}

/// The fixed part of a `GSP_INIT_DONE`: its status.
#[repr(transparent)]
struct Status(u32);

// SAFETY: every bit pattern is a valid `u32`.
unsafe impl FromBytes for Status {}

/// A `GSP_INIT_DONE` as upstream's receive hands it to the caller: every byte of it,
/// the fixed part and what follows.
struct Done {
    bytes: KVec<u8>,
}

impl MessageFromGsp for Done {
    const FUNCTION: MsgFunction = MsgFunction::GspInitDone;
    type InitError = Error;
    type Message = Status;

    fn read(
        msg: &Status,
        sbuffer: &mut SBufferIter<core::array::IntoIter<&[u8], 2>>,
    ) -> Result<Self> {
        let mut bytes = KVec::new();
        bytes.extend_from_slice(&msg.0.to_le_bytes(), GFP_KERNEL)?;
        bytes.extend_from_slice(&sbuffer.flush_into_kvec(GFP_KERNEL)?, GFP_KERNEL)?;
        Ok(Self { bytes })
    }
}

/// What one receive did.
#[derive(Clone, PartialEq)]
enum Got {
    /// `Ok`, with the bytes the caller got.
    Msg(Vec<u8>),
    /// An error.
    Err(Error),
    /// No return within [`WATCHDOG`].
    Hang,
    /// A panic.
    Panic,
    /// Not run: an earlier receive hung or panicked.
    Dead,
}

/// A driver's receive, as the classes drive it.
trait Driver {
    /// Receives a `GSP_INIT_DONE` within [`TIMEOUT`] (with `whole`, any message: the
    /// caller wants the payload whatever it is).
    fn receive(&mut self, whole: bool) -> Got;

    /// Returns the fault the driver names for its last receive, where it names one.
    fn fault(&self) -> Option<Fault> {
        None
    }
}

/// Upstream's queue: each receive on a thread of its own, watched.
struct Upstream {
    cmdq: &'static Cmdq,
    dead: bool,
}

impl Driver for Upstream {
    fn receive(&mut self, _whole: bool) -> Got {
        if self.dead {
            return Got::Dead;
        }
        let cmdq = self.cmdq;
        let (tx, rx) = mpsc::channel();
        let spawned = thread::Builder::new()
            .name("upstream-receive".into())
            .spawn(move || {
                let got = catch_unwind(AssertUnwindSafe(|| cmdq.receive_msg::<Done>(TIMEOUT)));
                // The watchdog may have given up on this receive: then no one listens.
                let _ = tx.send(got);
            });
        if spawned.is_err() {
            return Got::Err(ENOMEM);
        }
        match rx.recv_timeout(WATCHDOG) {
            Ok(Ok(Ok(done))) => Got::Msg(done.bytes.to_vec()),
            Ok(Ok(Err(e))) => Got::Err(e),
            Ok(Err(_)) => {
                self.dead = true;
                Got::Panic
            }
            Err(_) => {
                self.dead = true;
                Got::Hang
            }
        }
    }
}

/// Our queue, on the same thread (its receives honour their timeout).
struct Ours {
    cmdq: &'static OurCmdq,
}

impl Driver for Ours {
    fn receive(&mut self, whole: bool) -> Got {
        let got = catch_unwind(AssertUnwindSafe(|| {
            let msg = self.cmdq.receive_any(TIMEOUT)?;
            if whole {
                return Ok(msg.payload.to_vec());
            }
            let done = self.cmdq.read_msg::<GspInitDone>(&msg)?;
            Ok(done.status.to_le_bytes().to_vec())
        }));
        match got {
            Ok(Ok(bytes)) => Got::Msg(bytes),
            Ok(Err(e)) => Got::Err(e),
            Err(_) => Got::Panic,
        }
    }

    fn fault(&self) -> Option<Fault> {
        self.cmdq.last_fault()
    }
}

/// The GSP side of one bench: the virtual GSP and the device's view of the `GspMem`.
struct Ring {
    gsp: Vgsp<'static>,
    mem: DmaView<'static>,
}

impl Ring {
    /// Returns the driver's read pointer as it stands in the shared memory.
    fn read_ptr(&self) -> Result<u32> {
        self.mem.read32(CPU_READ_PTR)
    }

    /// Returns a valid one-slot `GSP_INIT_DONE` carrying `payload`.
    fn done(&self, payload: &[u8]) -> Result<KVec<u8>> {
        self.element(OurFunction::GSP_INIT_DONE.into(), 0, payload)
    }

    /// Returns a valid element of `function` (RPC `sequence`) carrying `payload`.
    fn element(&self, function: u32, sequence: u32, payload: &[u8]) -> Result<KVec<u8>> {
        self.gsp.encode_element(function, sequence, payload)
    }

    /// Posts `el` in `slots` slots.
    fn post(&mut self, el: &[u8], slots: u32) -> Result {
        self.gsp.post_raw(el, slots)
    }

    /// Stores `ptr` as the GSP's write pointer, whatever it published.
    fn set_write_ptr(&self, ptr: u32) -> Result {
        self.mem.write32(GSP_WRITE_PTR, ptr)
    }

    /// Writes `bytes` at the start of `gspq` slot `slot`, without publishing them.
    fn write_slot(&self, slot: u32, bytes: &[u8]) -> Result {
        self.mem.write_bytes(slot_at(slot), bytes)
    }
}

/// Returns where `gspq` slot `slot` starts in `GspMem`.
fn slot_at(slot: u32) -> usize {
    GSPQ_OFFSET + slot_offset(slot)
}

/// Stores `value` at byte `at` of the element `el`.
fn put32(el: &mut [u8], at: usize, value: u32) -> Result {
    el.get_mut(at..at + 4)
        .ok_or(EINVAL)?
        .copy_from_slice(&value.to_le_bytes());
    Ok(())
}

/// Sets the checksum of `el` so that its header and `payload_len` payload bytes XOR-fold
/// to zero (r570's checksum, as `GspMsgElement::seal` computes it).
fn seal(el: &mut [u8], payload_len: usize) -> Result {
    put32(el, CHECK_SUM, 0)?;
    let bytes = el.get(..ELEMENT_HEADER_SIZE + payload_len).ok_or(EINVAL)?;
    let sum = bytes.iter().enumerate().fold(0u64, |acc, (i, &b)| {
        acc ^ u64::from(b).rotate_left((i % 8 * 8) as u32)
    });
    // CAST: the fold keeps both halves on purpose.
    put32(el, CHECK_SUM, (sum >> 32) as u32 ^ sum as u32)
}

/// Stores `value` at byte `at` of `el`, a header with `payload_len` payload bytes after
/// it, and reseals it.
fn edit(el: &mut [u8], payload_len: usize, at: usize, value: u32) -> Result {
    put32(el, at, value)?;
    seal(el, payload_len)
}

/// Returns a payload of `len` bytes, a pattern that differs for each `seed`.
///
/// Pseudo-random (xorshift), not periodic: a torn copy of two versions of a periodic
/// payload can XOR-fold to the same checksum, and no two seeds' payloads share a prefix
/// (`nomem` tells its echoes apart by their bytes).
pub(crate) fn pattern(len: usize, seed: usize) -> Vec<u8> {
    // CAST: the seed keeps its low bits on purpose.
    let mut x = (seed as u32).wrapping_mul(0x9e37_79b9) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            // CAST: keeps the low byte on purpose.
            x as u8
        })
        .collect()
}

/// Posts the full 16-slot head of a split `GSP_INIT_DONE` of RPC sequence 5, as
/// firmware sends one (its `rpc.length` its own chunk); returns the head's payload.
fn post_split_head(ring: &mut Ring) -> Result<Vec<u8>> {
    let mut chunk = pattern(MAX_ELEMENT_PAYLOAD, 9);
    chunk[..4].copy_from_slice(&VALID);
    let head = ring.element(OurFunction::GSP_INIT_DONE.into(), 5, &chunk)?;
    ring.post(&head, 16)?;
    Ok(chunk)
}

/// Sets a class up: posts its element(s) on `ring`, receiving through `driver` what it
/// must receive first.
type Setup = fn(&mut Ring, &mut dyn Driver) -> Result;

/// Posts a valid `GSP_INIT_DONE` and receives it: the setup of the classes that need a
/// message before theirs.
fn fill(ring: &mut Ring, driver: &mut dyn Driver) -> Result {
    let el = ring.done(&VALID)?;
    ring.post(&el, 1)?;
    match driver.receive(false) {
        Got::Msg(b) if b[..] == VALID[..] => Ok(()),
        _ => Err(EPROTO),
    }
}

/// Posts a one-slot `GSP_INIT_DONE` with the header field at `at` set to `value`, in
/// `slots` slots.
fn post_edited(ring: &mut Ring, at: usize, value: u32, slots: u32) -> Result {
    let mut el = ring.done(&VALID)?;
    edit(&mut el, VALID.len(), at, value)?;
    ring.post(&el, slots)
}

/// A malformed-message class.
struct Class {
    /// Its name, as our table words it.
    name: &'static str,
    /// The fault our receive names for it (its errno and what it consumes are the
    /// fault's).
    fault: Fault,
    /// What the receive must make of it.
    expect: Expect,
    setup: Setup,
}

/// What the receive must make of a class, under the delimiting rule and the recovery policy
/// both drivers follow (`GspMsgElement::continued_by` in the series, our `cmdq::receive`).
#[derive(Clone, Copy)]
enum Expect {
    /// Refused: an error, naming the class's fault where the driver names its faults.
    Refused,
    /// Skipped like a message nobody waits for: consumed, not handed over, and no error of
    /// its own (`ERANGE` from one receive, a timeout from a wait that skipped only it).
    Skipped,
    /// A whole message as the wire delimits it, of this many payload bytes: valid on the
    /// wire, and too long only for its reader, whose to refuse it is.
    Whole(usize),
}

/// The classes, in the order of our faults.
const CLASSES: &[Class] = &[
    Class {
        name: "write pointer outside the ring (64, slot 0 written)",
        fault: Fault::PointerOutsideRing,
        expect: Expect::Refused,
        setup: |ring, _| {
            let el = ring.done(&VALID)?;
            ring.post(&el, 1)?;
            ring.set_write_ptr(64)
        },
    },
    Class {
        name: "write pointer moved backwards (2 -> 1, read pointer 1)",
        fault: Fault::WritePointerBackwards,
        expect: Expect::Refused,
        setup: |ring, driver| {
            for _ in 0..2 {
                let el = ring.done(&VALID)?;
                ring.post(&el, 1)?;
            }
            match driver.receive(false) {
                Got::Msg(b) if b[..] == VALID[..] => ring.set_write_ptr(1),
                _ => Err(EPROTO),
            }
        },
    },
    Class {
        name: "elemCount 0",
        fault: Fault::ElementCountZero,
        expect: Expect::Refused,
        setup: |ring, _| post_edited(ring, ELEM_COUNT, 0, 1),
    },
    Class {
        name: "elemCount above 16 (17 of 20 published)",
        fault: Fault::ElementCountAbove16,
        expect: Expect::Refused,
        setup: |ring, _| post_edited(ring, ELEM_COUNT, 17, 20),
    },
    Class {
        name: "elemCount beyond the published slots (3 of 2)",
        fault: Fault::ElementCountBeyondPublished,
        expect: Expect::Refused,
        setup: |ring, _| post_edited(ring, ELEM_COUNT, 3, 2),
    },
    Class {
        name: "elemCount beyond the published slots across the ring end (5 of 3 at 60)",
        fault: Fault::ElementCountBeyondPublished,
        expect: Expect::Refused,
        setup: |ring, driver| {
            for _ in 0..60 {
                fill(ring, driver)?;
            }
            post_edited(ring, ELEM_COUNT, 5, 3)
        },
    },
    Class {
        name: "wrong signature",
        fault: Fault::BadSignature,
        expect: Expect::Refused,
        setup: |ring, _| post_edited(ring, SIGNATURE, u32::from_le_bytes(*b"NOPE"), 1),
    },
    Class {
        name: "unsupported header version",
        fault: Fault::UnsupportedHeaderVersion,
        expect: Expect::Refused,
        setup: |ring, _| post_edited(ring, HEADER_VERSION, 0x0200_0000, 1),
    },
    Class {
        name: "rpc.length below the RPC header (31)",
        fault: Fault::LengthBelowHeader,
        expect: Expect::Refused,
        setup: |ring, _| post_edited(ring, LENGTH, 31, 1),
    },
    Class {
        name: "rpc.length beyond the element (to the end of the next, published, slot)",
        fault: Fault::LengthInconsistent,
        expect: Expect::Refused,
        setup: |ring, _| {
            let length = rpc_length(GSP_PAGE_SIZE - ELEMENT_HEADER_SIZE + GSP_PAGE_SIZE);
            post_edited(ring, LENGTH, length, 1)?;
            let next = ring.done(&NEXT)?;
            ring.post(&next, 1)
        },
    },
    Class {
        name: "head announcing its whole RPC (rpc.length beyond one element)",
        fault: Fault::LengthBeyondElement,
        expect: Expect::Refused,
        setup: |ring, _| {
            let mut chunk = pattern(MAX_ELEMENT_PAYLOAD, 9);
            chunk[..4].copy_from_slice(&VALID);
            let mut head = ring.element(OurFunction::GSP_INIT_DONE.into(), 5, &chunk)?;
            let whole = rpc_length(MAX_ELEMENT_PAYLOAD + 100);
            edit(&mut head, MAX_ELEMENT_PAYLOAD, LENGTH, whole)?;
            ring.post(&head, 16)
        },
    },
    Class {
        name: "rpc.length inconsistent with elemCount (5000 B in 1 slot)",
        fault: Fault::LengthInconsistent,
        expect: Expect::Refused,
        setup: |ring, _| post_edited(ring, LENGTH, rpc_length(5000), 1),
    },
    Class {
        name: "bad checksum",
        fault: Fault::BadChecksum,
        expect: Expect::Refused,
        setup: |ring, _| {
            let mut el = ring.done(&VALID)?;
            el[ELEMENT_HEADER_SIZE] ^= 0x40;
            ring.post(&el, 1)
        },
    },
    Class {
        name: "element sequence number not after the previous one",
        fault: Fault::SequenceWentBack,
        expect: Expect::Refused,
        setup: |ring, driver| {
            fill(ring, driver)?;
            post_edited(ring, SEQ_NUM, 0, 1)
        },
    },
    Class {
        name: "continuation record without a head",
        fault: Fault::ContinuationWithoutHead,
        expect: Expect::Skipped,
        setup: |ring, _| post_edited(ring, FUNCTION, OurFunction::CONTINUATION_RECORD.into(), 1),
    },
    Class {
        name: "full head followed by another function",
        fault: Fault::ReplyUndecodable,
        expect: Expect::Whole(MAX_ELEMENT_PAYLOAD),
        setup: |ring, _| {
            post_split_head(ring)?;
            let intruder = ring.element(OurFunction::GSP_RM_CONTROL.into(), 0, &VALID)?;
            ring.post(&intruder, 1)
        },
    },
    Class {
        name: "head followed by another RPC's continuation",
        fault: Fault::ContinuationOfAnotherRpc,
        expect: Expect::Whole(MAX_ELEMENT_PAYLOAD),
        setup: |ring, _| {
            let chunk = post_split_head(ring)?;
            // Numbered as neither the head (5) nor the record after it (6, as RM numbers).
            let cont = ring.element(OurFunction::CONTINUATION_RECORD.into(), 9, &chunk[..10])?;
            ring.post(&cont, 1)
        },
    },
    Class {
        name: "continuation record after its message ended",
        fault: Fault::ReplyUndecodable,
        expect: Expect::Whole(MAX_ELEMENT_PAYLOAD + 10),
        setup: |ring, _| {
            let chunk = post_split_head(ring)?;
            for len in [10, 20] {
                let cont =
                    ring.element(OurFunction::CONTINUATION_RECORD.into(), 5, &chunk[..len])?;
                ring.post(&cont, 1)?;
            }
            Ok(())
        },
    },
    Class {
        name: "head whose continuation never comes",
        fault: Fault::NothingPublished,
        expect: Expect::Whole(MAX_ELEMENT_PAYLOAD),
        setup: |ring, _| post_split_head(ring).map(|_| ()),
    },
    Class {
        name: "function not the one waited for (GSP_RM_CONTROL)",
        fault: Fault::OtherFunction,
        expect: Expect::Refused,
        setup: |ring, _| post_edited(ring, FUNCTION, OurFunction::GSP_RM_CONTROL.into(), 1),
    },
    Class {
        name: "unknown function (0xbad)",
        fault: Fault::UnknownFunction,
        expect: Expect::Skipped,
        setup: |ring, _| post_edited(ring, FUNCTION, 0x0bad, 1),
    },
    Class {
        name: "non-zero rpc_result",
        fault: Fault::ReplyReportsError,
        expect: Expect::Refused,
        setup: |ring, _| post_edited(ring, RPC_RESULT, 0x1f, 1),
    },
    Class {
        name: "payload shorter than the message's fixed part (2 of 4 B)",
        fault: Fault::ReplyUndecodable,
        expect: Expect::Refused,
        setup: |ring, _| {
            let el = ring.done(&VALID[..2])?;
            ring.post(&el, 1)
        },
    },
];

/// A fresh bench of upstream's queue.
fn upstream_bench() -> Result<(Ring, Upstream)> {
    let (cmdq, gsp, mem) = gsp_in_turns()?;
    Ok((Ring { gsp, mem }, Upstream { cmdq, dead: false }))
}

/// A fresh bench of our queue.
fn our_bench() -> Result<(Ring, Ours)> {
    let cmdq: &'static OurCmdq = Pin::static_ref(Box::leak(Box::new(KBox::pin_init(
        OurCmdq::new(vdev::device()?),
        GFP_KERNEL,
    )?)))
    .get_ref();
    let coherent = cmdq.gsp_mem();
    // SAFETY: the queue is leaked, so its memory, `size()` bytes, page aligned, lives and
    // stays where it is for ever; the driver reaches it through the same coherent
    // allocation, as the device does through this view.
    let mem =
        unsafe { DmaView::from_raw_parts(coherent.as_mut_ptr().cast::<u8>(), coherent.size()) };
    Ok((
        Ring {
            gsp: Vgsp::new(mem)?,
            mem,
        },
        Ours { cmdq },
    ))
}

/// What a driver did with a class, and whether that is mishandling it.
struct Verdict {
    text: String,
    mishandled: bool,
}

/// Returns a few words for `got`, a receive that did not return `Ok`.
fn failure(got: &Got) -> String {
    match got {
        Got::Msg(_) => String::from("Ok"),
        Got::Err(e) => format!("{e:?}"),
        Got::Hang => format!("hung (no return within {} ms)", WATCHDOG.as_millis()),
        Got::Panic => String::from("panicked"),
        Got::Dead => String::from("not run"),
    }
}

/// Returns what the slots consumed from `before` to `after` say.
fn consumed(before: u32, after: u32) -> String {
    match (after + 63 - before) % 63 {
        0 => String::from("element left"),
        n => format!("{n} slot(s) consumed"),
    }
}

/// Runs `class` on a fresh bench of a driver and judges what the driver did.
fn run(class: &Class, ring: &mut Ring, driver: &mut dyn Driver) -> Result<Verdict> {
    (class.setup)(ring, driver)?;
    let r0 = ring.read_ptr()?;
    let first = driver.receive(false);
    let r1 = ring.read_ptr()?;
    let mut text = match &first {
        Got::Msg(b) if b[..] == VALID[..] => {
            format!("Ok, as if valid ({})", consumed(r0, r1))
        }
        Got::Msg(b) if matches!(class.expect, Expect::Whole(len) if len == b.len()) => {
            format!(
                "Ok, the whole message ({} B; {})",
                b.len(),
                consumed(r0, r1)
            )
        }
        Got::Msg(b) => format!(
            "Ok with wrong bytes ({} B, not the {} B sent; {})",
            b.len(),
            VALID.len(),
            consumed(r0, r1)
        ),
        Got::Err(_) => match driver.fault() {
            Some(fault) => format!("{} ({fault}), {}", failure(&first), consumed(r0, r1)),
            None => format!("{}, {}", failure(&first), consumed(r0, r1)),
        },
        other => return Ok(verdict_of(failure(other), true)),
    };
    let mut mishandled = match class.expect {
        // A driver that names its faults names the class's.
        Expect::Refused => {
            matches!(first, Got::Msg(_)) || driver.fault().is_some_and(|fault| fault != class.fault)
        }
        Expect::Skipped => r1 == r0 || !matches!(first, Got::Err(ERANGE) | Got::Err(ETIMEDOUT)),
        // Handed over whole, or to a reader that refused it as too long for its type.
        Expect::Whole(len) => match &first {
            Got::Msg(b) => b.len() != len || b[..4] != VALID[..],
            _ => driver.fault() != Some(Fault::ReplyUndecodable),
        },
    };
    // The GSP goes on as it should: its own write pointer, then a valid message.
    ring.set_write_ptr(ring.gsp.gsp_ptrs().0)?;
    let next = ring.done(&NEXT)?;
    ring.post(&next, 1)?;
    let second = driver.receive(false);
    let r2 = ring.read_ptr()?;
    let then = match &second {
        Got::Msg(b) if b[..] == NEXT[..] || b[..] == VALID[..] => {
            String::from("then the next message arrives")
        }
        Got::Msg(b) => {
            mishandled = true;
            format!("then Ok with wrong bytes ({} B)", b.len())
        }
        Got::Err(_) if second == first && r2 == r1 => {
            mishandled = true;
            String::from("the same again on the next receive (stuck)")
        }
        other => {
            mishandled |= !matches!(other, Got::Err(_));
            format!("then {}", failure(other))
        }
    };
    text.push_str("; ");
    text.push_str(&then);
    Ok(Verdict { text, mishandled })
}

/// A verdict of `text`.
fn verdict_of(text: String, mishandled: bool) -> Verdict {
    Verdict { text, mishandled }
}

/// Attempts of the double-fetch class.
const DOUBLE_FETCH_ATTEMPTS: usize = 200;

/// Payload bytes of the double-fetch element: most of a slot.
const DOUBLE_FETCH_LEN: usize = 4000;

/// What the double-fetch class found on one driver.
#[derive(Default)]
struct DoubleFetch {
    /// Receives that returned one of the two valid versions, whole.
    consistent: usize,
    /// Receives refused (the element changed under the check).
    refused: usize,
    /// Receives that returned bytes of neither valid version: mixed or corrupted.
    mixed: usize,
    /// Receives that hung or panicked.
    broken: usize,
}

/// The double-fetch class on a fresh bench of a driver: a valid element is published,
/// then a GSP thread rewrites it in place, in a loop, while the receive runs. Even
/// attempts cycle through the whole element: another valid version (other payload, its
/// checksum), the first with a payload byte flipped and its checksum left (invalid), the
/// first again. Odd attempts toggle a byte of the payload's last word, the checksum
/// left (invalid). A caller that gets bytes of neither valid version got
/// bytes other than the ones whose checksum was verified.
fn double_fetch(ring: &mut Ring, driver: &mut dyn Driver) -> Result<DoubleFetch> {
    let mut found = DoubleFetch::default();
    for attempt in 0..DOUBLE_FETCH_ATTEMPTS {
        let slot = ring.gsp.gsp_ptrs().0;
        let mut a = pattern(DOUBLE_FETCH_LEN, 2 * attempt);
        a[..4].copy_from_slice(&VALID);
        let mut b = pattern(DOUBLE_FETCH_LEN, 2 * attempt + 1);
        b[..4].copy_from_slice(&VALID);
        let el_a = ring.done(&a)?;
        let mut el_b = el_a.to_vec();
        el_b[ELEMENT_HEADER_SIZE..].copy_from_slice(&b);
        seal(&mut el_b, DOUBLE_FETCH_LEN)?;
        let mut el_c = el_a.to_vec();
        el_c[ELEMENT_HEADER_SIZE + DOUBLE_FETCH_LEN / 2] ^= 0x5a;
        // The payload's last word, as `a` has it and with a byte flipped (the checksum
        // left: invalid; a whole word complemented would fold to the same checksum).
        let last_at = slot_at(slot) + ELEMENT_HEADER_SIZE + DOUBLE_FETCH_LEN - 8;
        let last_a: [u8; 8] = a[DOUBLE_FETCH_LEN - 8..].try_into().map_err(|_| EINVAL)?;
        let mut last_c = last_a;
        last_c[0] ^= 0x5a;
        ring.post(&el_a, 1)?;
        let (stop, started) = (AtomicBool::new(false), AtomicBool::new(false));
        let mem = ring.mem;
        let got = thread::scope(|s| {
            let rewriter = s.spawn(|| {
                // ORDERING: `Relaxed` suffices: the flag hands over nothing but the stop.
                while !stop.load(Ordering::Relaxed) {
                    // ORDERING: `Relaxed` suffices: the flag only says the loop runs.
                    started.store(true, Ordering::Relaxed);
                    if attempt % 2 == 0 {
                        for el in [&el_b[..], &el_c[..], &el_a[..]] {
                            if mem.write_bytes(slot_at(slot), el).is_err() {
                                return;
                            }
                        }
                    } else {
                        for word in [&last_c, &last_a] {
                            if mem.write_bytes(last_at, word).is_err() {
                                return;
                            }
                        }
                    }
                }
            });
            // The receive starts once the GSP is rewriting.
            while !started.load(Ordering::Relaxed) && !rewriter.is_finished() {
                core::hint::spin_loop();
            }
            let got = driver.receive(true);
            stop.store(true, Ordering::Relaxed);
            let _ = rewriter.join();
            got
        });
        ring.write_slot(slot, &el_a)?;
        match got {
            Got::Msg(bytes) if bytes[..] == a[..] || bytes[..] == b[..] => found.consistent += 1,
            Got::Msg(_) => found.mixed += 1,
            Got::Err(_) => {
                found.refused += 1;
                // A driver that left the element behind gets it whole now.
                if ring.read_ptr()? == slot {
                    match driver.receive(true) {
                        Got::Msg(bytes) if bytes[..] == a[..] => {}
                        Got::Msg(_) => found.mixed += 1,
                        Got::Err(_) => return Err(EPROTO),
                        _ => {
                            found.broken += 1;
                            return Ok(found);
                        }
                    }
                }
            }
            _ => {
                found.broken += 1;
                return Ok(found);
            }
        }
    }
    Ok(found)
}

/// Returns the verdict of a double-fetch run.
fn double_fetch_verdict(found: &DoubleFetch) -> Verdict {
    let text = format!(
        "{} of {} whole, {} refused, {} mixed/changed bytes{}",
        found.consistent,
        DOUBLE_FETCH_ATTEMPTS,
        found.refused,
        found.mixed,
        if found.broken > 0 {
            ", then hung or panicked"
        } else {
            ""
        }
    );
    verdict_of(text, found.mixed > 0 || found.broken > 0)
}

/// What [`hostile`] found.
pub struct HostileOutcome {
    /// The classes run.
    pub classes: usize,
    /// The classes upstream mishandled.
    pub mishandled: usize,
    /// One line per class upstream mishandled, and per class ours did.
    pub findings: Vec<String>,
}

/// Returns what our table says of `fault`: its errno, its reason and what it consumes.
fn table(fault: Fault) -> String {
    let consumes = match fault.consumes() {
        Consumes::Nothing => "nothing consumed",
        Consumes::Element => "consumed",
        Consumes::Published => "published slots dropped",
        Consumes::Message => "consumed with its message",
    };
    format!("{:?}: {fault}, {consumes}", Error::from(fault))
}

/// Runs every class on upstream's queue and on ours, printing one row per class: the
/// class, what upstream did, what ours did (with what our table says). Then names the
/// faults the GSP can cause that no class shows (their own suites do).
///
/// # Errors
///
/// - `ENOMEM` if a bench cannot be had; `EPROTO` if a class cannot be set up (a valid
///   message its setup sends first is not received); any error of the GSP.
pub fn hostile() -> Result<HostileOutcome> {
    let mut outcome = HostileOutcome {
        classes: 0,
        mishandled: 0,
        findings: Vec::new(),
    };
    let mut record = |name: &str, table: &str, up: Verdict, ours: Verdict| {
        println!("hostile: {name}");
        println!(
            "hostile:     upstream: {}{}",
            up.text,
            if up.mishandled { "  [MISHANDLED]" } else { "" }
        );
        println!(
            "hostile:     ours:     {}{} (table: {table})",
            ours.text,
            if ours.mishandled {
                "  [MISHANDLED]"
            } else {
                ""
            }
        );
        outcome.classes += 1;
        if up.mishandled {
            outcome.mishandled += 1;
            outcome
                .findings
                .push(format!("hostile: {name}: upstream {}", up.text));
        }
        if ours.mishandled {
            outcome
                .findings
                .push(format!("hostile: {name}: OURS {}", ours.text));
        }
    };
    for class in CLASSES {
        let (mut ring, mut up) = upstream_bench()?;
        let up = run(class, &mut ring, &mut up)?;
        let (mut ring, mut ours) = our_bench()?;
        let ours = run(class, &mut ring, &mut ours)?;
        let rule = match class.expect {
            Expect::Refused => table(class.fault),
            Expect::Skipped => String::from("skipped like a message nobody waits for"),
            Expect::Whole(len) => format!("a whole message of {len} B, as the wire delimits it"),
        };
        record(class.name, &rule, up, ours);
    }
    let (mut ring, mut up) = upstream_bench()?;
    let up = double_fetch_verdict(&double_fetch(&mut ring, &mut up)?);
    let (mut ring, mut ours) = our_bench()?;
    let ours = double_fetch_verdict(&double_fetch(&mut ring, &mut ours)?);
    record(
        "payload rewritten while the receive runs (double fetch)",
        "the bytes checked, or EIO",
        up,
        ours,
    );
    let (shown, elsewhere): (Vec<Fault>, Vec<Fault>) = Fault::ALL
        .iter()
        .filter(|f| f.origin() == Origin::Gsp)
        .partition(|f| CLASSES.iter().any(|c| c.fault == **f));
    let elsewhere: Vec<String> = elsewhere.iter().map(ToString::to_string).collect();
    println!(
        "hostile: the classes show {} of the {} faults the GSP can cause; \
         the others, shown by our suites: {}",
        shown.len(),
        shown.len() + elsewhere.len(),
        elsewhere.join(", ")
    );
    println!(
        "hostile: {} of {} classes mishandled",
        outcome.mishandled, outcome.classes
    );
    Ok(outcome)
}
