// SPDX-License-Identifier: GPL-2.0

//! Copies by the GSP's copy engine, signalled on an [`Mbarrier`].
//!
//! The driver owns a [`CopyArena`]: coherent memory holding the barrier word at
//! [`CopyArena::BARRIER`] (its own page, so the copies never touch it) and the data
//! from [`CopyArena::DATA`]. A copy goes:
//!
//! 1. the driver arms the barrier for `len` bytes ([`Mbarrier::arrive_expect_tx`]:
//!    pending 0, tx `len`) and sends [`CeCopy`] with bus addresses;
//! 2. the GSP acknowledges, then lands the bytes a chunk at a time, reporting each
//!    chunk with [`Mbarrier::complete_tx`] (a release: the chunk's bytes are visible to
//!    whoever observes the completion);
//! 3. the phase completes when the last byte lands; the driver waits on the parity
//!    of the phase it armed ([`Mbarrier::test_wait_parity`], an acquire) and then reads
//!    the destination.

use kernel::{
    device::{
        Bound,
        Device, //
    },
    dma::{
        Coherent,
        CoherentView, //
    },
    io::{
        io_project,
        poll::read_poll_timeout,
        Io, //
    },
    prelude::*,
    sync::atomic::Atomic,
    time::{
        Delta,
        Instant,
        Monotonic, //
    },
};
use nova_core::{
    gsp::{
        cmdq::{
            Cmdq,
            PendingReply, //
        },
        fw,
        regs::Doorbell,
    },
    num::FromSafeCast, //
};

use crate::rpc::{
    CeCopy,
    CeCopyAck, //
};

use mbarrier::{
    Mbarrier,
    MAX_COUNT, //
};

/// How often the driver looks at the barrier while it waits.
const POLL_INTERVAL: Delta = Delta::from_micros(1);

/// Coherent memory for copy-engine transfers: a barrier and a data area.
pub struct CopyArena {
    mem: Coherent<[u8]>,
}

/// A copy started with [`CopyArena::start_copy`], to finish with
/// [`CopyArena::finish_copy`].
#[must_use = "a started copy must be finished, or the barrier stays armed"]
pub struct CopyInFlight<'a> {
    parity: u8,
    /// The GSP's acknowledgement, awaited.
    ack: PendingReply<'a, CeCopyAck>,
}

impl CopyInFlight<'_> {
    /// Returns the RPC sequence number of the copy's request.
    pub fn sequence(&self) -> u32 {
        self.ack.sequence()
    }
}

// The barrier's word is 8-byte aligned, and ends before the data area starts.
const _: () =
    assert!(CopyArena::BARRIER.is_multiple_of(8) && CopyArena::BARRIER + 8 <= CopyArena::DATA);

impl CopyArena {
    /// The offset of the barrier word.
    pub const BARRIER: usize = 0;
    /// The offset of the data area.
    pub const DATA: usize = 0x1000;

    /// Allocates an arena with `data_len` bytes of data and initialises its barrier for
    /// one arrival per phase.
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if the memory cannot be had.
    /// - `EINVAL` if `data_len` is zero.
    pub fn new(dev: &Device<Bound>, data_len: usize) -> Result<Self> {
        if data_len == 0 {
            return Err(EINVAL);
        }
        let mem = Coherent::<u8>::zeroed_slice(
            dev,
            Self::DATA.checked_add(data_len).ok_or(EINVAL)?,
            GFP_KERNEL,
        )?;
        let arena = Self { mem };
        arena.barrier()?.init(1)?;
        Ok(arena)
    }

    /// Returns the barrier.
    ///
    /// # Errors
    ///
    /// Never, today: the barrier's word is always there (the `Result` stays for the
    /// callers).
    ///
    /// # Panics
    ///
    /// Under the model backend (`--cfg loom`), which has no atomic in shared memory
    /// ([`Atomic::from_ptr`]); no model scenario uses the copy engine.
    pub fn barrier(&self) -> Result<Mbarrier<'_>> {
        let word = self
            .mem
            .as_mut_ptr()
            .cast::<u8>()
            .wrapping_add(Self::BARRIER)
            .cast::<u64>();
        // SAFETY:
        // - `word` is aligned for a `u64`: coherent memory starts on a page boundary, and
        //   `BARRIER` is a multiple of 8 (checked at build time, above the `impl`).
        // - It is valid for reads and writes for as long as `self` is borrowed, and holds
        //   a valid `u64` (any bits are one; the memory was zeroed when allocated): the
        //   allocation owned by `self.mem` is more than `DATA` bytes long, and the word
        //   ends before `DATA`.
        // - Nothing accesses the word but atomically: the driver only through the
        //   barriers this returns (the data accessors reach only from `DATA` on), and the
        //   GSP only through its own atomic view of the word (the copy engine's
        //   protocol).
        let word = unsafe { Atomic::<u64>::from_ptr(word) };
        Ok(Mbarrier::new(word))
    }

    /// Returns the memory, for the device's view of it.
    pub fn mem(&self) -> &Coherent<[u8]> {
        &self.mem
    }

    /// Returns the bus address of data offset `offset`.
    pub fn bus_addr(&self, offset: usize) -> u64 {
        self.mem.dma_address() + u64::from_safe_cast(Self::DATA + offset)
    }

    /// Returns the size of the data area.
    pub fn data_len(&self) -> usize {
        self.mem.size() - Self::DATA
    }

    /// Writes `bytes` at data offset `offset`.
    ///
    /// # Errors
    ///
    /// - `EOVERFLOW` if the range leaves the data area.
    pub fn write(&mut self, offset: usize, bytes: &[u8]) -> Result {
        // No copy is in flight (`finish_copy` ended the last one, and starting one borrows
        // the arena), so the device touches none of these bytes.
        self.data(offset, bytes.len())?.copy_from_slice(bytes);
        Ok(())
    }

    /// The view of the `len` data bytes at data offset `offset`.
    ///
    /// # Errors
    ///
    /// - `EOVERFLOW` if the range leaves the data area.
    fn data(&self, offset: usize, len: usize) -> Result<CoherentView<'_, [u8]>> {
        let range = || -> Result<CoherentView<'_, [u8]>> {
            let at = Self::DATA.checked_add(offset).ok_or(EOVERFLOW)?;
            Ok(io_project!(self.mem, [try: at..at.checked_add(len).ok_or(EOVERFLOW)?]))
        };
        range().map_err(|_| EOVERFLOW)
    }

    /// Reads `out.len()` bytes at data offset `offset`.
    ///
    /// # Errors
    ///
    /// - `EOVERFLOW` if the range leaves the data area.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result {
        // The caller reads after `finish_copy`, whose wait acquired the bytes the device
        // landed; otherwise it only observes them.
        self.data(offset, out.len())?.copy_to_slice(out);
        Ok(())
    }

    /// Arms the barrier for `len` bytes and asks the GSP to copy them from data offset
    /// `src` to data offset `dst`, `chunk` bytes at a time.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if `len` or `chunk` is zero or too large, a range leaves the data
    ///   area, or the barrier refuses the arrival (a copy still in flight).
    /// - Any error of [`Cmdq::submit`].
    pub fn start_copy<'a>(
        &self,
        cmdq: &'a Cmdq,
        bar: &impl Doorbell,
        src: usize,
        dst: usize,
        len: u32,
        chunk: u32,
    ) -> Result<CopyInFlight<'a>> {
        let fits = |off: usize| {
            off.checked_add(usize::from_safe_cast(len))
                .is_some_and(|end| end <= self.data_len())
        };
        if len == 0
            || len > MAX_COUNT
            || chunk == 0
            || usize::from_safe_cast(chunk) > fw::GSP_MSG_QUEUE_ELEMENT_SIZE_MAX
            || !fits(src)
            || !fits(dst)
        {
            return Err(EINVAL);
        }
        let barrier = self.barrier()?;
        let parity = barrier.snapshot().parity;
        barrier.arrive_expect_tx(len)?;
        let barrier_addr = self.mem.dma_address() + u64::from_safe_cast(Self::BARRIER);
        let ack = cmdq.submit(
            bar,
            &CeCopy {
                src: self.bus_addr(src),
                dst: self.bus_addr(dst),
                barrier: barrier_addr,
                len,
                chunk,
            },
        )?;
        Ok(CopyInFlight { parity, ack })
    }

    /// Waits for the GSP's acknowledgement and for the barrier phase of `copy` to
    /// complete; the destination bytes may be read afterwards.
    ///
    /// # Errors
    ///
    /// - `EIO` if the GSP refused the copy (its acknowledgement reports an error, which
    ///   its read refuses with `EINVAL`); the barrier is then re-initialised.
    /// - `ETIMEDOUT` if the acknowledgement and the last byte do not both come within
    ///   `timeout`, which covers the whole wait, however many other messages arrive
    ///   meanwhile (they reach their handlers or callers).
    /// - Any other error of [`PendingReply::wait`].
    pub fn finish_copy(&self, copy: CopyInFlight<'_>, timeout: Delta) -> Result {
        let barrier = self.barrier()?;
        let start = Instant::<Monotonic>::now();
        if let Err(e) = copy.ack.wait(timeout) {
            if e == EINVAL {
                // Nothing will land: disarm the barrier for the next copy.
                barrier.inval()?;
                barrier.init(1)?;
                return Err(EIO);
            }
            return Err(e);
        }
        read_poll_timeout(
            || Ok(barrier.test_wait_parity(copy.parity)?),
            |done| *done,
            POLL_INTERVAL,
            Delta::from_nanos((timeout.as_nanos() - start.elapsed().as_nanos()).max(0)),
        )?;
        Ok(())
    }

    /// Copies `len` bytes from data offset `src` to `dst` through the GSP's copy engine
    /// ([`CopyArena::start_copy`] then [`CopyArena::finish_copy`]), for a GSP that runs on
    /// its own.
    ///
    /// # Errors
    ///
    /// As the two steps.
    #[expect(clippy::too_many_arguments, reason = "one per field of the request")]
    pub fn copy(
        &self,
        cmdq: &Cmdq,
        bar: &impl Doorbell,
        src: usize,
        dst: usize,
        len: u32,
        chunk: u32,
        timeout: Delta,
    ) -> Result {
        let copy = self.start_copy(cmdq, bar, src, dst, len, chunk)?;
        self.finish_copy(copy, timeout)
    }
}
