// SPDX-License-Identifier: GPL-2.0

//! The elements of the queues: building and sealing one, the checks every receiver makes
//! of one copied out of a ring, the checksum, and [`Delimiter`], the rule both receivers
//! (the driver's and the virtual GSP's) delimit messages by.
//!
//! # Elements and continuation records
//!
//! An element is a [`GspMsgElement`] header (80 bytes, with the RPC header at 0x30)
//! followed by the payload, occupying `elemCount` consecutive slots (at most 16, wrapping
//! past the ring end as needed). `checkSum` makes the XOR-fold of the whole element zero.
//!
//! An RPC whose element would exceed `GSP_MSG_QUEUE_ELEMENT_SIZE_MAX` (64 KiB) is split: the
//! *head* element is full (16 slots) and carries the first [`MAX_ELEMENT_PAYLOAD`]
//! payload bytes; each following element has the function
//! [`MsgFunction::CONTINUATION_RECORD`] and the next chunk as its payload, and is numbered
//! (`rpc.sequence`) as the head where this driver and the virtual GSP send it, or as the
//! record before it plus one where RM does. Every element's `rpc.length` is the RPC
//! header and its own chunk, the head's too, so nothing on the wire says where a split
//! message ends: [`Delimiter`] is the rule both receivers delimit messages by.

use zerocopy::{
    FromBytes,
    IntoBytes, //
};

use super::layout::{
    GspMsgElement,
    GspRpcHeader,
    MsgFunction,
    RpcHeaderVersion,
    ELEMENT_HEADER_SIZE,
    GSP_PAGE_SIZE,
    MAX_ELEMENT_PAGES,
    MAX_ELEMENT_PAYLOAD,
    RPC_HEADER_SIZE,
    RPC_HEADER_VERSION,
    RPC_RESULT_PENDING,
    RPC_SIGNATURE, //
};
use crate::{
    gsp::fault::Fault,
    num::u32_as_usize, //
};

/// Returns the number of slots an element carrying `payload_len` bytes occupies.
pub const fn elem_count_for(payload_len: usize) -> u32 {
    // At most `MAX_ELEMENT_PAGES` for payloads callers pass; saturates otherwise.
    let pages = (ELEMENT_HEADER_SIZE + payload_len).div_ceil(GSP_PAGE_SIZE);
    if pages > u32_as_usize(u32::MAX) {
        u32::MAX
    } else {
        // CAST: `pages <= u32::MAX`, checked above.
        pages as u32
    }
}

impl GspMsgElement {
    /// Returns the header of an element carrying `chunk_len` payload bytes, with the
    /// checksum still zero. Its `rpc.length` covers the RPC header and this element's own
    /// chunk, as r570 firmware and the drivers send every element, a split RPC's head
    /// included (see "Split RPCs" in `gsp::cmdq`).
    ///
    /// Callers keep `chunk_len <= MAX_ELEMENT_PAYLOAD`.
    pub fn new(seq_num: u32, function: u32, sequence: u32, chunk_len: usize) -> Self {
        Self {
            seq_num,
            elem_count: elem_count_for(chunk_len),
            rpc: GspRpcHeader {
                header_version: RPC_HEADER_VERSION.into_bits(),
                signature: RPC_SIGNATURE,
                // CAST: bounded by `MAX_ELEMENT_PAYLOAD` + 32, far below `u32::MAX`.
                length: (RPC_HEADER_SIZE + chunk_len) as u32,
                function,
                rpc_result: RPC_RESULT_PENDING,
                rpc_result_private: RPC_RESULT_PENDING,
                sequence,
                spare: 0,
            },
            ..Self::default()
        }
    }

    /// Sets `check_sum` so that the element made of this header and `chunk` XOR-folds to
    /// zero. The payload starts 8-byte aligned, so the element's sum is the header's (with
    /// a zero checksum field) XOR the payload's.
    pub fn seal(&mut self, chunk: &[u8]) {
        let mut payload = Checksum::default();
        payload.update(chunk);
        self.seal_summed(payload);
    }

    /// [`GspMsgElement::seal`] for a payload already summed, by
    /// [`Checksum::copy_update_at`] as it was copied into the ring.
    pub(crate) fn seal_summed(&mut self, payload: Checksum) {
        self.check_sum = 0;
        let mut sum = Checksum::of_header(self);
        sum.0 ^= payload.0;
        self.check_sum = sum.fold();
    }
}

/// Checks the `elemCount` of an element at a read pointer, `available` slots published:
/// the first check of both receivers, before anything of the element is copied. An
/// element that fails it cannot be delimited, and the receiver drops every published
/// slot.
///
/// # Errors
///
/// - [`Fault::ElementCountZero`], [`Fault::ElementCountAbove16`] or
///   [`Fault::ElementCountBeyondPublished`], naming the check.
pub fn check_elem_count(elem_count: u32, available: u32) -> core::result::Result<(), Fault> {
    match elem_count {
        0 => Err(Fault::ElementCountZero),
        n if n > MAX_ELEMENT_PAGES => Err(Fault::ElementCountAbove16),
        n if n > available => Err(Fault::ElementCountBeyondPublished),
        _ => Ok(()),
    }
}

/// Checks the header at the start of `buf`, a copy of an element of `elem_count` slots;
/// returns the header and the payload bytes the element carries, which start at
/// [`ELEMENT_HEADER_SIZE`]. `ELEMENT_HEADER_SIZE` plus that many bytes fit the
/// `elem_count` slots, so a receiver copies just those and then checks them with
/// [`verify_checksum`].
///
/// Checks, in order: the header's `elemCount` matches, the signature and header version,
/// `rpc.length` covers the RPC header and no more than one element's payload (a split
/// RPC's head included), and the payload fits the slots exactly.
///
/// # Errors
///
/// - A [`Fault`] naming the check, if any check fails or `buf` is shorter than a header.
pub fn validate_header(
    buf: &[u8],
    elem_count: u32,
) -> core::result::Result<(GspMsgElement, usize), Fault> {
    let bad = Err;
    let Ok((header, _)) = GspMsgElement::read_from_prefix(buf) else {
        return bad(Fault::ElementShorterThanHeader);
    };
    if header.elem_count != elem_count {
        return bad(Fault::ElementCountChanged);
    }
    if header.rpc.signature != RPC_SIGNATURE {
        return bad(Fault::BadSignature);
    }
    if RpcHeaderVersion::from_bits(header.rpc.header_version).major() != RPC_HEADER_VERSION.major()
    {
        return bad(Fault::UnsupportedHeaderVersion);
    }
    let Some(chunk_len) = header.rpc_payload_len() else {
        return bad(Fault::LengthBelowHeader);
    };
    // Every element, a split RPC's head included, announces its own chunk only: a head
    // announcing its whole RPC is refused here, as nouveau's receive refuses a head whose
    // `rpc.length` exceeds one element.
    if chunk_len > MAX_ELEMENT_PAYLOAD {
        return bad(Fault::LengthBeyondElement);
    }
    if elem_count_for(chunk_len) != elem_count {
        return bad(Fault::LengthInconsistent);
    }
    Ok((header, chunk_len))
}

/// Checks the checksum of an element made of `header` and `chunk`, the payload it
/// announces, wherever each was copied to. The payload follows the header 8-byte
/// aligned, so the element's sum is the header's XOR the payload's.
///
/// # Errors
///
/// - [`Fault::BadChecksum`] if the checksum does not fold to 0.
pub fn verify_checksum(header: &GspMsgElement, chunk: &[u8]) -> core::result::Result<(), Fault> {
    let mut sum = Checksum::of_header(header);
    sum.update(chunk);
    sum.verify()
}

/// Whether an element carrying `chunk_len` payload bytes is full: only a full element
/// may be followed by a continuation record of its message.
pub(crate) const fn is_full(chunk_len: usize) -> bool {
    chunk_len == MAX_ELEMENT_PAYLOAD
}

/// Whether `header` is a continuation record.
pub fn is_continuation(header: &GspMsgElement) -> bool {
    header.rpc.function == u32::from(MsgFunction::CONTINUATION_RECORD)
}

/// Where a message ends: the one delimiting rule of both receivers, the driver's
/// (`gsp::cmdq`) and the virtual GSP's (its command side).
///
/// - A message ends at its first element that is not full, or as soon as the length its
///   reader expects is reached ([`Delimiter::is_whole`]).
/// - After a full element, the next element continues the message if and only if it is a
///   `CONTINUATION_RECORD` whose `rpc.sequence` is the message's first element's, or the
///   previous element's (the last record's, or the head's) plus one ([`Delimiter::next`]).
///   Any other element, a record of another message included, ends the message, which is
///   whole, and stays on the ring to be received on its own.
/// - If nothing is published after a full element, the driver's receive waits for the
///   next element up to `RECORD_TIMEOUT` (100 ms): a fixed grace, whatever is left of
///   the caller's timeout, and with a zero timeout (a replay) too. If none comes, the
///   message is whole and is delivered: never a timeout for a complete message, never
///   dropped. (The virtual GSP knows each command's length from the command itself, and
///   keeps a command open until its records come.)
///
/// Why: nothing on the wire marks a message's end, as every element's `rpc.length` is its
/// own chunk's. RM numbers each record as an RPC of its own, after the previous one
/// (`_issueRpcLarge()` in open-gpu-kernel-modules), and a GSP that leaves the number alone
/// gives every record the first element's: either way a record continues its message, and
/// nothing else does. The GSP writes a split message's records one after the other, so a
/// record that is coming comes well within the grace. A wait tied to the caller's
/// deadline would either cut a message short when a receive runs near its deadline, or
/// hold the queue for the whole deadline (seconds) for a message that exactly fills its
/// last element.
///
/// Recovery, on both sides: an element that fails the checks (count, header, checksum,
/// sequence, pointer) is refused: consumed (its `elemCount` slots, or every published
/// slot when it cannot be delimited, [`check_elem_count`]) and its error returned to the
/// receive that met it. A valid element that is not the awaited message (another
/// function, a function the driver does not know, or a continuation record that continues
/// no message: a stray record) is consumed and skipped like a message of another type,
/// and logged; it is no error for the waiter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delimiter {
    /// The `rpc.sequence` of the message's first element.
    first: u32,
    /// The `rpc.sequence` of the message's last element so far.
    last: u32,
    /// Payload bytes received so far.
    len: usize,
    /// The payload length the reader expects, if it knows one.
    expected: Option<usize>,
    /// Whether the last element received was full.
    last_full: bool,
}

/// What the element after a message's last one does to it ([`Delimiter::next`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// A continuation record of the message: appended to it.
    Append,
    /// Any other element: the message ends before it, and it stays on the ring.
    Ends,
}

impl Delimiter {
    /// Starts a message at its head, `header`, carrying `chunk_len` payload bytes; its
    /// reader expects `expected` bytes, if it knows.
    pub fn head(header: &GspMsgElement, chunk_len: usize, expected: Option<usize>) -> Self {
        Self {
            first: header.rpc.sequence,
            last: header.rpc.sequence,
            len: chunk_len,
            expected,
            last_full: is_full(chunk_len),
        }
    }

    /// Returns whether the message is whole: its last element is not full, or the length
    /// expected is reached. Otherwise the next element decides ([`Delimiter::next`]), or
    /// the end of the wait for it.
    pub fn is_whole(&self) -> bool {
        !self.last_full || self.expected.is_some_and(|len| self.len >= len)
    }

    /// Returns what `next`, the header of the element after the message's last one,
    /// does to the message, which is not whole: a continuation record numbered as the
    /// first element or as the one after the last continues it.
    pub fn next(&self, next: &GspMsgElement) -> Next {
        let sequence = next.rpc.sequence;
        let numbered = sequence == self.first || sequence == self.last.wrapping_add(1);
        match is_continuation(next) && numbered {
            true => Next::Append,
            false => Next::Ends,
        }
    }

    /// Appends the continuation record `record`, carrying `chunk_len` payload bytes.
    pub fn append(&mut self, record: &GspMsgElement, chunk_len: usize) {
        self.last = record.rpc.sequence;
        self.len += chunk_len;
        self.last_full = is_full(chunk_len);
    }

    /// Returns the payload bytes received so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Returns whether no payload byte was received (a head without payload).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Returns whether the message, ended, is shorter than its reader expects.
    pub(crate) fn is_short(&self) -> bool {
        self.expected.is_some_and(|len| self.len < len)
    }
}

/// The bytes [`Checksum::copy_update_at`] sums before it copies them: small enough to stay
/// in the first-level cache between the sum and the copy, large enough that the copy's
/// call costs little beside it.
pub(crate) const SUM_BLOCK: usize = 2048;

/// The running XOR of little-endian 64-bit words.
///
/// Feed it the bytes of an element in order, in pieces whose lengths are multiples of 8
/// (the last may be shorter and is zero-padded), then [`Checksum::fold`].
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Checksum(u64);

impl Checksum {
    /// Adds `bytes`, word by word.
    #[inline]
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        // Four words at a time into four sums, which the compiler keeps in vector
        // registers: the XOR of all of them is the same as one word at a time.
        let mut blocks = bytes.chunks_exact(32);
        let mut acc = [self.0, 0, 0, 0];
        for block in &mut blocks {
            for (sum, word) in acc.iter_mut().zip(block.chunks_exact(8)) {
                *sum ^= le_word(word);
            }
        }
        let mut sum = acc[0] ^ acc[1] ^ acc[2] ^ acc[3];
        let mut words = blocks.remainder().chunks_exact(8);
        for word in &mut words {
            sum ^= le_word(word);
        }
        self.0 = sum ^ le_tail(words.remainder());
    }

    /// Adds `bytes` found `start` bytes into the element, wherever the pieces before them
    /// ended: a piece that starts inside a word contributes its sum shifted to the bytes'
    /// places in the word (a rotation, since XOR carries nothing).
    pub(crate) fn update_at(&mut self, start: usize, bytes: &[u8]) {
        let mut piece = Self::default();
        piece.update(bytes);
        self.add_at(start, piece);
    }

    /// Adds `src`, found `start` bytes into the element, while `copy(offset, block)` copies
    /// it block by block (`offset` into `src`): each block of [`SUM_BLOCK`] bytes is summed
    /// just before it is copied, so the bytes are read from memory once, and the copy
    /// finds them in the cache.
    ///
    /// # Errors
    ///
    /// The first error `copy` returns; the sum then covers the blocks copied.
    pub(crate) fn copy_update_at(
        &mut self,
        start: usize,
        src: &[u8],
        mut copy: impl FnMut(usize, &[u8]) -> kernel::error::Result,
    ) -> kernel::error::Result {
        if src.len() <= SUM_BLOCK {
            self.update_at(start, src);
            return copy(0, src);
        }
        for (i, block) in src.chunks(SUM_BLOCK).enumerate() {
            let offset = i * SUM_BLOCK;
            self.update_at(start + offset, block);
            copy(offset, block)?;
        }
        Ok(())
    }

    /// Adds `piece`, the sum of bytes found `start` bytes into the element.
    fn add_at(&mut self, start: usize, piece: Self) {
        // CAST: `start % 8 < 8`, so the shift is below 64.
        self.0 ^= piece.0.rotate_left(8 * (start % 8) as u32);
    }

    /// Returns the sum of `header`'s bytes, to which its payload's are then added.
    #[inline]
    fn of_header(header: &GspMsgElement) -> Self {
        let mut sum = Self::default();
        // Of a length the compiler knows: it unrolls the ten words.
        sum.update(header.as_bytes());
        sum
    }

    /// Checks that a whole element summed folds to zero.
    ///
    /// # Errors
    ///
    /// - [`Fault::BadChecksum`] if it does not.
    fn verify(self) -> core::result::Result<(), Fault> {
        match self.fold() {
            0 => Ok(()),
            _ => Err(Fault::BadChecksum),
        }
    }

    /// Returns the 32-bit checksum: the two halves of the sum XOR-ed.
    pub(crate) fn fold(self) -> u32 {
        // CAST: both halves are masked to 32 bits.
        ((self.0 >> 32) ^ (self.0 & 0xffff_ffff)) as u32
    }
}

/// Returns the little-endian word of `bytes`, 8 of them (0 for any other length, which
/// callers never pass).
#[inline(always)]
fn le_word(bytes: &[u8]) -> u64 {
    <[u8; 8]>::try_from(bytes).map_or(0, u64::from_le_bytes)
}

/// Returns the little-endian word of `bytes`, fewer than 8, zero-padded: a byte loop, not
/// a copy of variable length into a padded word (a call of `memcpy`).
#[inline(always)]
fn le_tail(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .rev()
        .fold(0, |word, &byte| word << 8 | u64::from(byte))
}

/// Returns the checksum of `bytes`.
pub fn checksum(bytes: &[u8]) -> u32 {
    let mut sum = Checksum::default();
    sum.update(bytes);
    sum.fold()
}

#[cfg(test)]
mod tests {
    extern crate std;

    use std::{
        vec,
        vec::Vec, //
    };

    use super::*;

    /// Returns `len` bytes of a pattern of `seed`.
    fn pattern(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| {
                // CAST: the low byte of an index-derived pattern.
                (i as u8).wrapping_mul(31).wrapping_add(seed)
            })
            .collect()
    }

    /// The sum of `bytes` found `start` bytes into an element, byte by byte: each byte
    /// XOR-ed into its place in its little-endian word.
    fn bytewise(start: usize, bytes: &[u8]) -> u64 {
        bytes.iter().enumerate().fold(0, |sum, (i, &b)| {
            sum ^ u64::from(b) << (8 * ((start + i) % 8))
        })
    }

    /// Copies `src` into a buffer with [`Checksum::copy_update_at`] at `start`, and
    /// returns the copy and the sum.
    fn copy_summed(start: usize, src: &[u8]) -> (Vec<u8>, Checksum) {
        let mut dst = vec![0xa5; src.len()];
        let mut sum = Checksum::default();
        sum.copy_update_at(start, src, |at, block| {
            dst[at..at + block.len()].copy_from_slice(block);
            Ok(())
        })
        .unwrap();
        (dst, sum)
    }

    #[test]
    fn copy_and_sum_sums_the_bytes_it_copies() {
        for len in (0..80).chain([SUM_BLOCK - 3, SUM_BLOCK + 13, 4096, 65_456]) {
            for start in 0..8 {
                let src = pattern(len, 7);
                let (dst, sum) = copy_summed(start, &src);
                assert_eq!(dst, src, "len {len}, start {start}");
                assert_eq!(sum.0, bytewise(start, &dst), "len {len}, start {start}");
            }
        }
    }

    #[test]
    fn sum_of_bytes_equals_bytewise_sum() {
        for len in (0..80).chain([4096]) {
            let bytes = pattern(len, 3);
            let mut sum = Checksum::default();
            sum.update(&bytes);
            assert_eq!(sum.0, bytewise(0, &bytes), "len {len}");
        }
    }

    #[test]
    fn element_sealed_by_the_copy_verifies_and_a_corrupted_one_does_not() {
        let payload = pattern(4000, 11);
        let mut header = GspMsgElement::new(5, 0x0f01, 9, payload.len());
        // In two pieces, the second starting inside a word, as a command's fixed part and
        // its variable payload are.
        let (head, head_sum) = copy_summed(0, &payload[..13]);
        let (tail, tail_sum) = copy_summed(13, &payload[13..]);
        let mut copy = head;
        copy.extend_from_slice(&tail);
        header.seal_summed(Checksum(head_sum.0 ^ tail_sum.0));

        let mut whole = header;
        whole.seal(&payload);
        assert_eq!(header.check_sum, whole.check_sum);
        assert_eq!(verify_checksum(&header, &copy), Ok(()));

        copy[1234] ^= 0x40;
        assert_eq!(verify_checksum(&header, &copy), Err(Fault::BadChecksum));
        copy[1234] ^= 0x40;
        header.rpc.sequence ^= 1;
        assert_eq!(verify_checksum(&header, &copy), Err(Fault::BadChecksum));
    }
}
