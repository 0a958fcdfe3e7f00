// SPDX-License-Identifier: GPL-2.0

//! A hostile GSP: named ways for the emulated GPU's GSP to misbehave on the driver's
//! first RPC that waits for an answer (`GET_GSP_STATIC_INFO`), or on the event the driver
//! waits for at boot (`GSP_INIT_DONE`), so a boot shows what the real driver does with
//! each.
//!
//! The GSP keeps the message back ([`vgsp::Vgsp::withhold`]) and the fault sends it as
//! the class says: late, never, with an error result, split as r570 firmware splits,
//! with one header field wrong (each of the element's malformed classes the receive must
//! refuse), behind a flood of events, or after a write pointer outside the ring.

use std::time::{
    Duration,
    Instant, //
};

use nova_core::gsp::fw::{
    self,
    GspMsgElement,
    MsgFunction, //
};
use vgsp::{
    Vgsp,
    Withheld, //
};
use zerocopy::{
    FromBytes,
    IntoBytes, //
};

/// A way to misbehave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    /// Its name, for `--gsp-fault`.
    pub name: &'static str,
    /// What the GSP does, in a line.
    pub what: &'static str,
    kind: Kind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    NeverSent,
    Late,
    ErrorResult,
    Split,
    Function(u32),
    Short,
    Header(Edit),
    PointerOutOfRange,
    EventFlood,
    Chatty,
    InitDoneNever,
}

/// One field of the element made wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Edit {
    Checksum,
    Signature,
    HeaderVersion,
    ElemCountZero,
    ElemCountBeyond,
    LengthBeyondElement,
    LengthBelowHeader,
    SequenceJump,
}

/// How late a late reply comes: past the 5 s a caller of nova-core 7.3 waits.
pub const LATE: Duration = Duration::from_secs(7);
/// How many log lines the flood sends before the reply.
pub const FLOOD: usize = 2000;
/// How often the chatty GSP sends a log line, the reply never.
pub const CHATTER: Duration = Duration::from_millis(500);
/// The hostile write pointer: a slot number past the ring's last (the ring's slots are
/// numbered 0 to `MSGQ_NUM_PAGES - 1`).
pub const OUT_OF_RANGE: u32 = fw::MSGQ_NUM_PAGES + 1;
/// `GSP_RM_CONTROL`'s number, a reply's function the driver does not wait for.
const RM_CONTROL: u32 = MsgFunction::GSP_RM_CONTROL.0;

macro_rules! faults {
    ($($name:literal => $kind:expr, $what:literal;)*) => {
        /// Every fault, in the table's order.
        pub const ALL: &[Fault] = &[$(Fault { name: $name, what: $what, kind: $kind }),*];
    };
}

faults! {
    "reply-never-sent" => Kind::NeverSent, "the GET_GSP_STATIC_INFO reply is never sent";
    "reply-late" => Kind::Late, "the reply comes 7 s late";
    "reply-error-result" => Kind::ErrorResult, "the reply's rpc_result is NV_ERR_INVALID_ARGUMENT";
    "reply-split" => Kind::Split, "the reply, padded past one element, split as r570 splits (full head, continuation record)";
    "reply-unknown-function" => Kind::Function(0xbad), "the reply's function is 0xbad, no function at all";
    "reply-other-function" => Kind::Function(RM_CONTROL), "the reply's function is GSP_RM_CONTROL";
    "reply-short" => Kind::Short, "the reply's payload is half the structure";
    "bad-checksum" => Kind::Header(Edit::Checksum), "the reply's checksum is wrong";
    "bad-signature" => Kind::Header(Edit::Signature), "the reply's RPC signature is not VRPC";
    "bad-header-version" => Kind::Header(Edit::HeaderVersion), "the reply's RPC header version is 2.0";
    "elem-count-zero" => Kind::Header(Edit::ElemCountZero), "the reply's elemCount is 0";
    "elem-count-beyond" => Kind::Header(Edit::ElemCountBeyond), "the reply's elemCount is 2 beyond the slots published";
    "length-beyond-element" => Kind::Header(Edit::LengthBeyondElement), "the reply's rpc.length runs past its element";
    "length-below-header" => Kind::Header(Edit::LengthBelowHeader), "the reply's rpc.length is below the RPC header";
    "sequence-jump" => Kind::Header(Edit::SequenceJump), "the reply's element sequence number skips 5";
    "pointer-out-of-range" => Kind::PointerOutOfRange, "the GSP's write pointer is published past the ring's end instead of the reply";
    "event-flood" => Kind::EventFlood, "2000 log events before the reply";
    "chatty" => Kind::Chatty, "a log event every 0.5 s, the reply never: a caller that restarts its timeout at each waits forever";
    "init-done-never" => Kind::InitDoneNever, "GSP_INIT_DONE is never sent";
}

impl Fault {
    /// Returns the fault named `name`.
    ///
    /// # Errors
    ///
    /// A message listing the names, if none is `name`.
    pub fn named(name: &str) -> Result<Fault, String> {
        ALL.iter().copied().find(|f| f.name == name).ok_or_else(|| {
            let names: Vec<&str> = ALL.iter().map(|f| f.name).collect();
            format!("no GSP fault {name}: one of {}", names.join(", "))
        })
    }

    /// The function whose message the fault takes over.
    pub fn target(&self) -> MsgFunction {
        match self.kind {
            Kind::InitDoneNever => MsgFunction::GSP_INIT_DONE,
            _ => MsgFunction::GET_GSP_STATIC_INFO,
        }
    }
}

/// A fault being played, from the message kept back to its delivery.
pub struct Play {
    fault: Fault,
    /// The message, and when to send it.
    due: Option<(Instant, Withheld)>,
    /// Whether the flood (of [`Kind::EventFlood`]) is queued.
    flooded: bool,
    /// When the chatty GSP last spoke.
    chatted: Option<Instant>,
    done: bool,
}

/// Builds one element: header sealed over `chunk`, then the chunk.
fn element(seq: u32, function: u32, sequence: u32, rpc_result: u32, chunk: &[u8]) -> Vec<u8> {
    let mut header = GspMsgElement::new(seq, function, sequence, chunk.len());
    header.rpc.rpc_result = rpc_result;
    header.seal(chunk);
    let mut out = header.as_bytes().to_vec();
    out.extend_from_slice(chunk);
    out
}

/// The number of slots `bytes` take.
fn slots(bytes: &[u8]) -> u32 {
    // CAST: an element is at most 16 pages.
    bytes.len().div_ceil(fw::GSP_PAGE_SIZE) as u32
}

impl Edit {
    /// The byte offset of the field this edit changes, in the element.
    fn offset(self) -> usize {
        let rpc = core::mem::offset_of!(GspMsgElement, rpc);
        match self {
            Edit::Checksum => core::mem::offset_of!(GspMsgElement, check_sum),
            Edit::SequenceJump => core::mem::offset_of!(GspMsgElement, seq_num),
            Edit::ElemCountZero | Edit::ElemCountBeyond => {
                core::mem::offset_of!(GspMsgElement, elem_count)
            }
            Edit::Signature => rpc + core::mem::offset_of!(fw::GspRpcHeader, signature),
            Edit::HeaderVersion => rpc + core::mem::offset_of!(fw::GspRpcHeader, header_version),
            Edit::LengthBeyondElement | Edit::LengthBelowHeader => {
                rpc + core::mem::offset_of!(fw::GspRpcHeader, length)
            }
        }
    }

    /// The field's name, for the transcript.
    fn field(self) -> &'static str {
        match self {
            Edit::Checksum => "checkSum",
            Edit::SequenceJump => "seqNum",
            Edit::ElemCountZero | Edit::ElemCountBeyond => "elemCount",
            Edit::Signature => "signature",
            Edit::HeaderVersion => "header_version",
            Edit::LengthBeyondElement | Edit::LengthBelowHeader => "length",
        }
    }

    /// The wrong value, for an element `el` of `n` slots sent as number `seq`.
    fn value(self, el: &[u8], n: u32, seq: u32) -> u32 {
        match self {
            Edit::Checksum => !get(el, self.offset()),
            Edit::Signature => u32::from_le_bytes(*b"BAD!"),
            Edit::HeaderVersion => 0x2000_0000,
            Edit::ElemCountZero => 0,
            Edit::ElemCountBeyond => n + 2,
            // One byte past the element's last slot.
            // CAST: an element is at most 64 KiB.
            Edit::LengthBeyondElement => {
                (n as usize * fw::GSP_PAGE_SIZE + 1 - fw::ELEMENT_HEADER_SIZE + fw::RPC_HEADER_SIZE)
                    as u32
            }
            // CAST: the RPC header is 32 bytes.
            Edit::LengthBelowHeader => fw::RPC_HEADER_SIZE as u32 - 1,
            Edit::SequenceJump => seq.wrapping_add(5),
        }
    }
}

fn put(el: &mut [u8], at: usize, value: u32) {
    el[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

fn get(el: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([el[at], el[at + 1], el[at + 2], el[at + 3]])
}

/// Re-seals `el` after an edit: the checksum over the edited header and its payload.
fn reseal(el: &mut [u8]) {
    let (head, payload) = el.split_at_mut(fw::ELEMENT_HEADER_SIZE);
    let Ok(mut header) = GspMsgElement::read_from_bytes(head) else {
        return;
    };
    header.seal(payload);
    head.copy_from_slice(header.as_bytes());
}

impl Play {
    /// Starts playing `fault` on `gsp`: the target message will be kept back.
    pub fn start(fault: Fault, gsp: &mut Vgsp<'_>) -> Self {
        gsp.withhold(fault.target().into());
        Self {
            fault,
            due: None,
            flooded: false,
            chatted: None,
            done: false,
        }
    }

    /// Returns the elements the fault sends in place of `w`, the first numbered `seq`,
    /// and the transcript's line about them.
    fn elements(&self, w: &Withheld, seq: u32) -> (Vec<Vec<u8>>, String) {
        let name = self.fault.name;
        let whole = |result| element(seq, w.function, w.sequence, result, &w.payload);
        match self.fault.kind {
            Kind::NeverSent | Kind::InitDoneNever | Kind::Chatty => (
                Vec::new(),
                format!(
                    "fault {name}: {} kept back, never sent",
                    function_name(w.function)
                ),
            ),
            // The pointer is published apart, by `poll`.
            Kind::PointerOutOfRange => (
                Vec::new(),
                format!(
                    "fault {name}: write pointer {OUT_OF_RANGE} published, the reply kept back"
                ),
            ),
            Kind::Late | Kind::EventFlood => (
                vec![whole(w.rpc_result)],
                format!("fault {name}: reply sent"),
            ),
            Kind::ErrorResult => (
                vec![whole(fw::NV_ERR_INVALID_ARGUMENT)],
                format!("fault {name}: reply sent with rpc_result NV_ERR_INVALID_ARGUMENT"),
            ),
            Kind::Split => {
                let mut payload = w.payload.to_vec();
                payload.resize(payload.len().max(fw::MAX_ELEMENT_PAYLOAD + 4096), 0);
                let (head, rest) = payload.split_at(fw::MAX_ELEMENT_PAYLOAD);
                let continuation: u32 = MsgFunction::CONTINUATION_RECORD.into();
                let mut els = vec![element(seq, w.function, w.sequence, w.rpc_result, head)];
                for (i, chunk) in rest.chunks(fw::MAX_ELEMENT_PAYLOAD).enumerate() {
                    // CAST: a reply has a handful of continuation records.
                    let n = seq.wrapping_add(1 + i as u32);
                    els.push(element(n, continuation, w.sequence, w.rpc_result, chunk));
                }
                let line = format!(
                    "fault {name}: reply of {} B split in {} elements, as r570 splits",
                    payload.len(),
                    els.len()
                );
                (els, line)
            }
            Kind::Function(function) => (
                vec![element(seq, function, w.sequence, w.rpc_result, &w.payload)],
                format!("fault {name}: reply sent as {}", function_name(function)),
            ),
            Kind::Short => {
                let half = &w.payload[..w.payload.len() / 2];
                (
                    vec![element(seq, w.function, w.sequence, w.rpc_result, half)],
                    format!(
                        "fault {name}: reply sent with {} of {} B",
                        half.len(),
                        w.payload.len()
                    ),
                )
            }
            Kind::Header(edit) => {
                let mut el = whole(w.rpc_result);
                let value = edit.value(&el, slots(&el), seq);
                put(&mut el, edit.offset(), value);
                // A wrong checksum stays wrong; any other edit is sealed, so that it is
                // the one thing wrong with the element.
                if edit != Edit::Checksum {
                    reseal(&mut el);
                }
                let line = format!(
                    "fault {name}: reply sent with {} = {value:#x}",
                    edit.field()
                );
                (vec![el], line)
            }
        }
    }

    /// Plays on: once the message is kept back, sends it as the fault says, when it is
    /// due and the ring has room for all of it (else on a later call: nothing is lost).
    /// Returns a line for the transcript when something was done.
    ///
    /// # Errors
    ///
    /// A message naming what the GSP could not do.
    pub fn poll(&mut self, gsp: &mut Vgsp<'_>) -> Result<Option<String>, String> {
        let name = self.fault.name;
        if self.done {
            return Ok(None);
        }
        if self.due.is_none() {
            let Some(w) = gsp.take_withheld() else {
                return Ok(None);
            };
            let wait = match self.fault.kind {
                Kind::Late => LATE,
                _ => Duration::ZERO,
            };
            self.due = Some((Instant::now() + wait, w));
        }
        if self.fault.kind == Kind::EventFlood && !self.flooded {
            self.flooded = true;
            for i in 0..FLOOD {
                gsp.log(format!("vgsp: flood line {i}").as_bytes())
                    .map_err(|e| format!("{name}: queueing the flood: {e:?}"))?;
            }
            return Ok(Some(format!(
                "fault {name}: {FLOOD} log events queued before the reply"
            )));
        }
        if self.fault.kind == Kind::Chatty {
            let first = self.chatted.is_none();
            if self.chatted.is_none_or(|at| at.elapsed() >= CHATTER) {
                self.chatted = Some(Instant::now());
                gsp.log(b"vgsp: still busy")
                    .map_err(|e| format!("{name}: queueing a line: {e:?}"))?;
            }
            return Ok(first.then(|| {
                format!("fault {name}: the reply kept back, a log line every {CHATTER:?}")
            }));
        }
        let Some((when, w)) = &self.due else {
            return Ok(None);
        };
        if Instant::now() < *when || !gsp.outbox_empty() {
            return Ok(None);
        }
        let (elements, line) = self.elements(w, gsp.tx_seq());
        let total = elements.iter().map(|el| slots(el)).sum::<u32>();
        let room = gsp
            .has_room(total)
            .map_err(|e| format!("{name}: the driver's read pointer: {e:?}"))?;
        if !room {
            return Ok(None);
        }
        for el in &elements {
            gsp.post_raw(el, slots(el))
                .map_err(|e| format!("{name}: posting an element: {e:?}"))?;
        }
        if self.fault.kind == Kind::PointerOutOfRange {
            gsp.publish_raw_write_ptr(OUT_OF_RANGE)
                .map_err(|e| format!("{name}: {e:?}"))?;
        }
        self.due = None;
        self.done = true;
        Ok(Some(line))
    }
}

/// Returns a function number's r570 name, or the number: for the transcript.
pub fn function_name(function: u32) -> String {
    match MsgFunction::try_from(function) {
        Ok(f) => f.name().to_string(),
        Err(_) => format!("function {function:#x}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        for (i, a) in ALL.iter().enumerate() {
            assert!(ALL[i + 1..].iter().all(|b| b.name != a.name), "{}", a.name);
        }
    }

    #[test]
    fn an_unknown_name_lists_the_known_ones() {
        let err = Fault::named("nope").unwrap_err();
        assert!(err.contains("reply-never-sent"), "{err}");
    }

    #[test]
    fn a_resealed_element_passes_the_checksum() {
        let mut el = element(3, 65, 1, 0, b"abcd");
        put(&mut el, Edit::SequenceJump.offset(), 9);
        reseal(&mut el);
        let (head, payload) = el.split_at(fw::ELEMENT_HEADER_SIZE);
        let header = GspMsgElement::read_from_bytes(head).unwrap();
        assert_eq!(header.seq_num, 9);
        assert!(fw::element::verify_checksum(&header, payload).is_ok());
    }

    #[test]
    fn the_checksum_fault_is_the_only_field_changed_and_stays_wrong() {
        let w = Withheld {
            function: 65,
            sequence: 1,
            rpc_result: 0,
            payload: kernel::alloc::KVec::new(),
        };
        let play = Play {
            fault: Fault::named("bad-checksum").unwrap(),
            due: None,
            flooded: false,
            chatted: None,
            done: false,
        };
        let (els, _) = play.elements(&w, 3);
        let good = element(3, 65, 1, 0, &[]);
        let (head, payload) = els[0].split_at(fw::ELEMENT_HEADER_SIZE);
        let header = GspMsgElement::read_from_bytes(head).unwrap();
        assert!(fw::element::verify_checksum(&header, payload).is_err());
        let at = Edit::Checksum.offset();
        assert_eq!(
            (&els[0][..at], &els[0][at + 4..]),
            (&good[..at], &good[at + 4..])
        );
    }

    #[test]
    fn a_split_reply_is_a_full_head_then_continuation_records() {
        let mut payload = kernel::alloc::KVec::new();
        payload
            .extend_from_slice(&[7u8; 100], kernel::alloc::flags::GFP_KERNEL)
            .unwrap();
        let w = Withheld {
            function: 65,
            sequence: 1,
            rpc_result: 0,
            payload,
        };
        let play = Play {
            fault: Fault::named("reply-split").unwrap(),
            due: None,
            flooded: false,
            chatted: None,
            done: false,
        };
        let (els, _) = play.elements(&w, 3);
        assert_eq!(els.len(), 2);
        assert_eq!(els[0].len(), fw::GSP_MSG_QUEUE_ELEMENT_SIZE_MAX);
        let cont = GspMsgElement::read_from_bytes(&els[1][..fw::ELEMENT_HEADER_SIZE]).unwrap();
        assert_eq!((cont.rpc.function, cont.seq_num), (71, 4));
    }
}
