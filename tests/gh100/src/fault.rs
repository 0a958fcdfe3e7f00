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
/// How far past the ring's end the hostile write pointer is.
pub const OUT_OF_RANGE: u32 = fw::MSGQ_NUM_PAGES + 1;

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
    "reply-other-function" => Kind::Function(76), "the reply's function is GSP_RM_CONTROL";
    "reply-short" => Kind::Short, "the reply's payload is half the structure";
    "bad-checksum" => Kind::Header(Edit::Checksum), "the reply's checksum is wrong";
    "bad-signature" => Kind::Header(Edit::Signature), "the reply's RPC signature is not VRPC";
    "bad-header-version" => Kind::Header(Edit::HeaderVersion), "the reply's RPC header version is 2.0";
    "elem-count-zero" => Kind::Header(Edit::ElemCountZero), "the reply's elemCount is 0";
    "elem-count-beyond" => Kind::Header(Edit::ElemCountBeyond), "the reply's elemCount is 3, one slot published";
    "length-beyond-element" => Kind::Header(Edit::LengthBeyondElement), "the reply's rpc.length runs past its element";
    "length-below-header" => Kind::Header(Edit::LengthBelowHeader), "the reply's rpc.length is below the RPC header";
    "sequence-jump" => Kind::Header(Edit::SequenceJump), "the reply's element sequence number skips 5";
    "pointer-out-of-range" => Kind::PointerOutOfRange, "the GSP's write pointer is published past the ring's end instead of the reply";
    "event-flood" => Kind::EventFlood, "2000 log events before the reply";
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
            Kind::InitDoneNever => MsgFunction::GspInitDone,
            _ => MsgFunction::GetGspStaticInfo,
        }
    }
}

/// A fault being played, from the message kept back to its delivery.
pub struct Play {
    fault: Fault,
    /// The message, and when to send it.
    due: Option<(Instant, Withheld)>,
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

/// The byte offset of a field of the element header.
fn at(field: &str) -> usize {
    let rpc = core::mem::offset_of!(GspMsgElement, rpc);
    match field {
        "check_sum" => core::mem::offset_of!(GspMsgElement, check_sum),
        "seq_num" => core::mem::offset_of!(GspMsgElement, seq_num),
        "elem_count" => core::mem::offset_of!(GspMsgElement, elem_count),
        "signature" => rpc + core::mem::offset_of!(fw::GspRpcHeader, signature),
        "header_version" => rpc + core::mem::offset_of!(fw::GspRpcHeader, header_version),
        _ => rpc + core::mem::offset_of!(fw::GspRpcHeader, length),
    }
}

fn put(el: &mut [u8], at: usize, value: u32) {
    el[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

/// Re-seals `el` after an edit: the checksum over the edited header and its payload.
fn reseal(el: &mut [u8]) {
    let (head, payload) = el.split_at_mut(core::mem::size_of::<GspMsgElement>());
    let Ok(mut header) = GspMsgElement::read_from_bytes(head) else {
        return;
    };
    header.seal(payload);
    head.copy_from_slice(header.as_bytes());
}

fn get(el: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([el[at], el[at + 1], el[at + 2], el[at + 3]])
}

impl Play {
    /// Starts playing `fault` on `gsp`: the target message will be kept back.
    pub fn start(fault: Fault, gsp: &mut Vgsp<'_>) -> Self {
        gsp.withhold(fault.target().into());
        Self {
            fault,
            due: None,
            done: false,
        }
    }

    /// Plays on: once the message is kept back, sends it as the fault says. Returns a line
    /// for the transcript when something was sent.
    ///
    /// # Errors
    ///
    /// A message naming what the GSP could not do (a ring without room).
    pub fn poll(&mut self, gsp: &mut Vgsp<'_>) -> Result<Option<String>, String> {
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
            if self.fault.kind == Kind::EventFlood {
                for i in 0..FLOOD {
                    gsp.log(format!("vgsp: flood line {i}").as_bytes())
                        .map_err(|e| format!("queueing the flood: {e:?}"))?;
                }
            }
            self.due = Some((Instant::now() + wait, w));
        }
        let ready = matches!(&self.due, Some((when, _)) if Instant::now() >= *when);
        if !ready || !gsp.outbox_empty() {
            return Ok(None);
        }
        let Some((_, w)) = self.due.take() else {
            return Ok(None);
        };
        self.done = true;
        let name = self.fault.name;
        let seq = gsp.tx_seq();
        let post = |gsp: &mut Vgsp<'_>, el: &[u8], slots: u32| {
            gsp.post_raw(el, slots)
                .map_err(|e| format!("{name}: posting the element: {e:?}"))
        };
        let line = match self.fault.kind {
            Kind::NeverSent | Kind::InitDoneNever => format!(
                "fault {name}: {} kept back, never sent",
                crate::gh100::function_name(w.function)
            ),
            Kind::Late | Kind::EventFlood => {
                let el = element(seq, w.function, w.sequence, w.rpc_result, &w.payload);
                post(gsp, &el, slots(&el))?;
                format!("fault {name}: reply sent")
            }
            Kind::ErrorResult => {
                let el = element(
                    seq,
                    w.function,
                    w.sequence,
                    fw::NV_ERR_INVALID_ARGUMENT,
                    &w.payload,
                );
                post(gsp, &el, slots(&el))?;
                format!("fault {name}: reply sent with rpc_result NV_ERR_INVALID_ARGUMENT")
            }
            Kind::Split => {
                let mut payload = w.payload.to_vec();
                payload.resize(fw::MAX_ELEMENT_PAYLOAD + 4096, 0);
                let (head, rest) = payload.split_at(fw::MAX_ELEMENT_PAYLOAD);
                let h = element(seq, w.function, w.sequence, w.rpc_result, head);
                let c = element(
                    seq.wrapping_add(1),
                    MsgFunction::ContinuationRecord.into(),
                    w.sequence,
                    w.rpc_result,
                    rest,
                );
                post(gsp, &h, slots(&h))?;
                post(gsp, &c, slots(&c))?;
                format!(
                    "fault {name}: reply split in 2 elements ({} B)",
                    payload.len()
                )
            }
            Kind::Function(function) => {
                let el = element(seq, function, w.sequence, w.rpc_result, &w.payload);
                post(gsp, &el, slots(&el))?;
                format!(
                    "fault {name}: reply sent as {}",
                    crate::gh100::function_name(function)
                )
            }
            Kind::Short => {
                let half = &w.payload[..w.payload.len() / 2];
                let el = element(seq, w.function, w.sequence, w.rpc_result, half);
                post(gsp, &el, slots(&el))?;
                format!(
                    "fault {name}: reply sent with {} of {} B",
                    half.len(),
                    w.payload.len()
                )
            }
            Kind::Header(edit) => {
                let mut el = element(seq, w.function, w.sequence, w.rpc_result, &w.payload);
                let n = slots(&el);
                let (field, value) = match edit {
                    Edit::Checksum => ("check_sum", !get(&el, at("check_sum"))),
                    Edit::Signature => ("signature", u32::from_le_bytes(*b"BAD!")),
                    Edit::HeaderVersion => ("header_version", 0x2000_0000),
                    Edit::ElemCountZero => ("elem_count", 0),
                    Edit::ElemCountBeyond => ("elem_count", n + 2),
                    Edit::LengthBeyondElement => {
                        // CAST: an element is at most 64 KiB.
                        let len = (n as usize * fw::GSP_PAGE_SIZE + 1
                            - core::mem::size_of::<GspMsgElement>()
                            + fw::RPC_HEADER_SIZE) as u32;
                        ("length", len)
                    }
                    Edit::LengthBelowHeader => ("length", fw::RPC_HEADER_SIZE as u32 - 1),
                    Edit::SequenceJump => ("seq_num", seq.wrapping_add(5)),
                };
                put(&mut el, at(field), value);
                if edit != Edit::Checksum {
                    reseal(&mut el);
                }
                post(gsp, &el, n)?;
                format!("fault {name}: reply sent with {field} = {value:#x}")
            }
            Kind::PointerOutOfRange => {
                gsp.publish_raw_write_ptr(OUT_OF_RANGE)
                    .map_err(|e| format!("{name}: {e:?}"))?;
                format!("fault {name}: write pointer {OUT_OF_RANGE} published, the reply kept back")
            }
        };
        Ok(Some(line))
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
        put(&mut el, at("seq_num"), 9);
        reseal(&mut el);
        let (head, payload) = el.split_at(core::mem::size_of::<GspMsgElement>());
        let header = GspMsgElement::read_from_bytes(head).unwrap();
        assert_eq!(header.seq_num, 9);
        assert!(fw::verify_checksum(&header, payload).is_ok());
    }

    #[test]
    fn an_edited_element_fails_the_checksum_until_resealed() {
        let mut el = element(3, 65, 1, 0, b"abcd");
        put(&mut el, at("seq_num"), 9);
        let (head, payload) = el.split_at(core::mem::size_of::<GspMsgElement>());
        let header = GspMsgElement::read_from_bytes(head).unwrap();
        assert!(fw::verify_checksum(&header, payload).is_err());
    }
}
