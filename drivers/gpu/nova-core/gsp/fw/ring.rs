// SPDX-License-Identifier: GPL-2.0

//! The ring arithmetic both agents share: where each agent is on the ring it fills
//! ([`WriteCursor`]) and on the ring it drains ([`ReadCursor`]), the check of a pointer
//! loaded from the other agent ([`ring_ptr`]), and where an element's bytes lie when it
//! wraps past the ring end ([`for_each_ring_piece`]). The loads and stores of the
//! pointers, with their barriers, are each agent's own (the driver's in `gsp::cmdq`, the
//! virtual GSP's in its `msgq`).

use kernel::prelude::*;

use super::layout::{
    GSP_PAGE_SIZE,
    MSGQ_NUM_PAGES,
    RING_BYTES, //
};
use crate::{
    gsp::fault::Fault,
    num::u32_as_usize, //
};

/// Calls `f(ring_offset, buffer_range)` for the one or two pieces that `len` bytes at ring
/// byte `start` occupy: an element that runs past the last slot continues at slot 0.
///
/// Inlined, with the bytes that do not wrap on a path of their own: where `len` is known
/// (a header), `f` then copies a length the compiler knows, without a call of `memcpy`.
///
/// # Errors
///
/// The first error `f` returns.
#[inline]
pub fn for_each_ring_piece(
    start: usize,
    len: usize,
    mut f: impl FnMut(usize, core::ops::Range<usize>) -> Result,
) -> Result {
    let start = start % RING_BYTES;
    let first = RING_BYTES - start;
    if len <= first {
        return f(start, 0..len);
    }
    f(start, 0..first)?;
    f(0, first..len)
}

/// Checks a ring pointer loaded from the other agent.
///
/// # Errors
///
/// - [`Fault::PointerOutsideRing`] if it is outside the ring.
pub fn ring_ptr(ptr: u32) -> core::result::Result<u32, Fault> {
    match ptr < MSGQ_NUM_PAGES {
        true => Ok(ptr),
        false => Err(Fault::PointerOutsideRing),
    }
}

/// An agent's place on the ring it fills: the slot it writes next, and what it last
/// learnt of the other agent's reading.
///
/// # Invariants
///
/// `write` is below [`MSGQ_NUM_PAGES`]; `known_free` slots from `write` were free when the
/// agent last loaded the other agent's read pointer ([`WriteCursor::saw_read_ptr`]), less
/// those it has written since.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteCursor {
    write: u32,
    known_free: u32,
}

impl WriteCursor {
    /// The slot this agent writes next.
    pub const fn write_ptr(&self) -> u32 {
        self.write
    }

    /// Slots from the write pointer known to be free.
    pub const fn known_free(&self) -> u32 {
        self.known_free
    }

    /// The write pointer once `n` more slots are published: the value to store.
    pub const fn next_write(&self, n: u32) -> u32 {
        (self.write + n) % MSGQ_NUM_PAGES
    }

    /// Records that the write pointer was stored as [`WriteCursor::next_write`]`(n)`.
    pub fn wrote(&mut self, n: u32) {
        // INVARIANT: `next_write` is below the ring size; the slots published are no
        // longer free.
        self.write = self.next_write(n);
        self.known_free = self.known_free.saturating_sub(n);
    }

    /// Records the other agent's read pointer, just loaded with acquire semantics, and
    /// returns the slots from the write pointer that are free. One slot always stays
    /// empty, so a full ring is told from an empty one.
    pub fn saw_read_ptr(&mut self, other_read: u32) -> u32 {
        // INVARIANT: the slots from `write` up to the one before `other_read` are free.
        self.known_free = (other_read + MSGQ_NUM_PAGES - self.write - 1) % MSGQ_NUM_PAGES;
        self.known_free
    }

    /// The byte offset in the ring of byte `pos` of the element at the write pointer;
    /// [`for_each_ring_piece`] wraps it.
    pub const fn write_offset(&self, pos: usize) -> usize {
        u32_as_usize(self.write) * GSP_PAGE_SIZE + pos
    }
}

/// An agent's place on the ring it drains: the slot it reads next, and what it last
/// learnt of the other agent's writing.
///
/// # Invariants
///
/// `read` is below [`MSGQ_NUM_PAGES`]; `known_published` slots from `read` were published
/// when the agent last loaded the other agent's write pointer
/// ([`ReadCursor::saw_write_ptr`]), less those it has consumed since.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadCursor {
    read: u32,
    known_published: u32,
}

impl ReadCursor {
    /// The slot this agent reads next.
    pub const fn read_ptr(&self) -> u32 {
        self.read
    }

    /// Slots from the read pointer known to be published.
    pub const fn known_published(&self) -> u32 {
        self.known_published
    }

    /// The read pointer once `n` more slots are consumed: the value to store.
    pub const fn next_read(&self, n: u32) -> u32 {
        (self.read + n) % MSGQ_NUM_PAGES
    }

    /// Returns the slots from the read pointer to `ptr`, a pointer within the ring: those
    /// to consume to read at `ptr` next.
    pub(crate) const fn slots_to(&self, ptr: u32) -> u32 {
        (ptr + MSGQ_NUM_PAGES - self.read) % MSGQ_NUM_PAGES
    }

    /// Records that the read pointer was stored as [`ReadCursor::next_read`]`(n)`.
    pub fn consumed(&mut self, n: u32) {
        // INVARIANT: `next_read` is below the ring size; the slots consumed are no longer
        // published.
        self.read = self.next_read(n);
        self.known_published = self.known_published.saturating_sub(n);
    }

    /// Records the other agent's write pointer, just loaded with acquire semantics, and
    /// returns the slots from the read pointer that are published.
    ///
    /// # Errors
    ///
    /// - [`Fault::WritePointerBackwards`] if fewer slots are published than were known to
    ///   be: the other agent moved its write pointer backwards. What was known stays known.
    pub fn saw_write_ptr(&mut self, other_write: u32) -> core::result::Result<u32, Fault> {
        let published = self.slots_to(other_write);
        if published < self.known_published {
            return Err(Fault::WritePointerBackwards);
        }
        // INVARIANT: the slots from `read` up to `other_write` are published.
        self.known_published = published;
        Ok(published)
    }

    /// Forgets what is known of the writer's progress (after a restart, or to replay a
    /// recording).
    pub fn forget_published(&mut self) {
        // INVARIANT: nothing is known any more.
        self.known_published = 0;
    }

    /// The byte offset in the ring of byte `pos` of the element at the read pointer.
    pub const fn read_offset(&self, pos: usize) -> usize {
        u32_as_usize(self.read) * GSP_PAGE_SIZE + pos
    }
}
