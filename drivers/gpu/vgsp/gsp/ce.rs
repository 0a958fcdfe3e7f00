// SPDX-License-Identifier: GPL-2.0

//! The GSP's copy engine: the DMA windows the environment maps for it, and the
//! `VGSP_CE_COPY` transfers it lands there in chunks, each reported on an `mbarrier`.

use kernel::prelude::*;
use mbarrier::Mbarrier;
use nova_core::{
    gsp::fw::MsgFunction,
    num::FromSafeCast, //
};
use nova_testbench::rpc::{
    CeCopy,
    CopyEvent, //
};
use vdev::DmaView;
use zerocopy::{
    FromBytes,
    IntoBytes, //
};

use crate::{
    Vgsp,
    RX_BUF_MIN, //
};

/// The most DMA windows the copy engine can reach.
const MAX_DMA_WINDOWS: usize = 4;

/// Memory the environment lets the GSP reach by bus address (its IOMMU mappings).
#[derive(Clone, Copy)]
pub(crate) struct DmaWindow<'a> {
    bus: u64,
    view: DmaView<'a>,
}

/// A copy-engine transfer in progress.
pub(crate) struct CopyJob<'a> {
    src: (DmaView<'a>, usize),
    dst: (DmaView<'a>, usize),
    barrier: Mbarrier<'a>,
    len: usize,
    done: usize,
    chunk: usize,
    /// The request's `rpc.sequence`, which the events about the copy name.
    sequence: u32,
}

/// Why a copy request is refused.
pub(crate) enum Refusal {
    /// An address of it is not in a mapped window: a DMA fault, which the GSP reports
    /// as `MMU_FAULT_QUEUED` too.
    Fault(u64),
    /// It is malformed, or a copy is in progress.
    Invalid,
}

impl<'a> Vgsp<'a> {
    /// Lets the copy engine reach `view` at bus address `bus` (an IOMMU mapping).
    ///
    /// # Errors
    ///
    /// - `ENOSPC` if `MAX_DMA_WINDOWS` windows are mapped already.
    /// - `EINVAL` if the window wraps the bus address space.
    /// - `ENOMEM` if memory cannot be had.
    pub fn map_dma(&mut self, bus: u64, view: DmaView<'a>) -> Result {
        if self.windows.len() >= MAX_DMA_WINDOWS {
            return Err(ENOSPC);
        }
        bus.checked_add(u64::from_safe_cast(view.len()))
            .ok_or(EINVAL)?;
        self.windows.push(DmaWindow { bus, view }, GFP_KERNEL)?;
        Ok(())
    }

    /// Returns the mapped view holding `len` bytes at bus address `bus`, and the offset
    /// in it.
    fn translate(&self, bus: u64, len: usize) -> Option<(DmaView<'a>, usize)> {
        self.windows.iter().find_map(|w| {
            let off = usize::try_from(bus.checked_sub(w.bus)?).ok()?;
            (off.checked_add(len)? <= w.view.len()).then_some((w.view, off))
        })
    }

    /// Validates a copy request: every range inside a mapped window, the barrier word
    /// aligned, the sizes within the barrier's and the bounce buffer's limits.
    pub(crate) fn accept_copy(
        &self,
        payload: &[u8],
        sequence: u32,
    ) -> Result<CopyJob<'a>, Refusal> {
        if self.copy.is_some() {
            return Err(Refusal::Invalid);
        }
        let req = CeCopy::read_from_bytes(payload).map_err(|_| Refusal::Invalid)?;
        let len = usize::try_from(req.len).map_err(|_| Refusal::Invalid)?;
        let chunk = usize::try_from(req.chunk).map_err(|_| Refusal::Invalid)?;
        if req.len == 0 || req.len > mbarrier::MAX_COUNT || chunk == 0 || chunk > RX_BUF_MIN {
            return Err(Refusal::Invalid);
        }
        let translate = |bus: u64, len| self.translate(bus, len).ok_or(Refusal::Fault(bus));
        let (view, off) = translate(req.barrier, 8)?;
        let barrier = Mbarrier::new(view.atomic_u64(off).map_err(|_| Refusal::Invalid)?);
        Ok(CopyJob {
            src: translate(req.src, len)?,
            dst: translate(req.dst, len)?,
            barrier,
            len,
            done: 0,
            chunk,
            sequence,
        })
    }

    /// Lands the next chunk of the copy in progress and reports it on its barrier.
    pub(crate) fn copy_chunk(&mut self) -> Result {
        let Some(job) = self.copy.as_mut() else {
            return Ok(());
        };
        let n = job.chunk.min(job.len - job.done);
        let buf = &mut self.rx_buf[..n];
        job.src.0.read_bytes(job.src.1 + job.done, buf)?;
        job.dst.0.write_bytes(job.dst.1 + job.done, buf)?;
        job.done += n;
        // CAST: `n <= len <= mbarrier::MAX_COUNT`, checked in `accept_copy`.
        let reported = job.barrier.complete_tx(n as u32);
        let finished = job.done == job.len;
        let about = CopyEvent {
            sequence: job.sequence,
            pad: 0,
        };
        match reported {
            Ok(()) if !finished => return Ok(()),
            Ok(()) => {
                self.stats.copies += 1;
                // The notification of a finished engine job.
                self.post_event(MsgFunction::POST_EVENT, about.as_bytes())?;
            }
            Err(rule) => {
                self.stats.copy_faults += 1;
                // The engine's channel is torn down: robust-channel recovery.
                self.post_event(MsgFunction::RC_TRIGGERED, about.as_bytes())?;
                let mut line = KVec::new();
                line.extend_from_slice(
                    b"vgsp: copy engine: barrier refused complete_tx: ",
                    GFP_KERNEL,
                )?;
                line.extend_from_slice(rule.name().as_bytes(), GFP_KERNEL)?;
                self.event(MsgFunction::UCODE_LIBOS_PRINT, line)?;
            }
        }
        self.copy = None;
        Ok(())
    }
}
