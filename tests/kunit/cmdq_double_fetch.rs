// SPDX-License-Identifier: GPL-2.0

//! A GSP that changes a message while the driver copies it out (a double fetch): the
//! caller gets the bytes the driver checked, or a refusal, never a mix.
//!
//! Host only: the GSP's rewrite is timed by the shim's read observer
//! (`Coherent::set_read_observer`, ours), which tells it of every copy the driver makes
//! out of the shared memory. A kernel's `Coherent` tells no one; the model tier
//! (`tools/model`) and the fuzzer cover the same race there.

#![cfg(not(CONFIG_RUST))]

use kernel::prelude::*;

/// The cases of the `nova_core_gsp_cmdq_double_fetch` suite.
#[kunit_tests(nova_core_gsp_cmdq_double_fetch)]
pub mod tests {
    use core::sync::atomic::{
        AtomicBool,
        AtomicUsize,
        Ordering, //
    };
    use kernel::{
        dma::{
            Coherent,
            CoherentBox,
            DmaReadObserver, //
        },
        prelude::*,
    };
    use nova_core::gsp::cmdq::BenchSeam;
    use nova_core::gsp::fault::Fault;
    use nova_core::gsp::fw::{
        self,
        GspMem,
        GspMsgElement,
        MsgFunction,
        GSPQ_OFFSET,
        GSP_PAGE_SIZE,
        NV_OK, //
    };
    use nova_testbench::ReceiveAny;
    use vdev::DmaView;
    use zerocopy::IntoBytes;

    use crate::{
        cmdq_errors::tests::{
            log_element,
            next_valid_arrives, //
        },
        fixture::{
            check,
            device_view,
            Pair,
            LONG, //
        },
    };

    /// A GSP that rewrites an element in `gspq` just before the driver's `at`-th copy
    /// out of the shared memory (counting from 1, once armed): a hostile device changing
    /// the ring between two of the driver's reads.
    ///
    /// Its atomics are accessed `Relaxed`: the driver calls the observer on the test's
    /// own thread; they are atomics only to make the observer `Sync`.
    struct RewriteBeforeRead {
        /// The device's view of the shared memory.
        view: DmaView<'static>,
        /// Where the element starts in the `gspq` ring, in bytes.
        ring_pos: usize,
        /// What the element becomes, header and payload.
        replacement: KVec<u8>,
        /// The copy the rewrite comes before.
        at: usize,
        /// Whether copies are counted.
        armed: AtomicBool,
        /// The copies counted.
        reads: AtomicUsize,
        /// Whether the element was rewritten.
        rewritten: AtomicBool,
    }

    impl RewriteBeforeRead {
        /// Starts counting copies.
        fn arm(&self) {
            self.armed.store(true, Ordering::Relaxed);
        }

        /// Stops counting copies; returns how many were counted.
        fn disarm(&self) -> usize {
            self.armed.store(false, Ordering::Relaxed);
            self.reads.load(Ordering::Relaxed)
        }

        /// Returns whether the element was rewritten.
        fn rewritten(&self) -> bool {
            self.rewritten.load(Ordering::Relaxed)
        }
    }

    impl DmaReadObserver for RewriteBeforeRead {
        fn before_read(&self, _offset: usize, _len: usize) {
            if !self.armed.load(Ordering::Relaxed)
                || self.reads.fetch_add(1, Ordering::Relaxed) + 1 != self.at
            {
                return;
            }
            let written = fw::ring::for_each_ring_piece(
                self.ring_pos,
                self.replacement.len(),
                |off, range| {
                    self.view.write_bytes(
                        GSPQ_OFFSET + fw::slot_offset(0) + off,
                        &self.replacement[range],
                    )
                },
            );
            self.rewritten.store(written.is_ok(), Ordering::Relaxed);
        }
    }

    /// Returns a `UCODE_LIBOS_PRINT` element numbered `seq_num` carrying `payload`, sealed
    /// as `Vgsp::encode_element` seals it.
    fn sealed_log_element(seq_num: u32, payload: &[u8]) -> Result<KVec<u8>> {
        let mut header = GspMsgElement::new(
            seq_num,
            MsgFunction::UCODE_LIBOS_PRINT.into(),
            0,
            payload.len(),
        );
        header.rpc.rpc_result = NV_OK;
        header.rpc.rpc_result_private = NV_OK;
        header.seal(payload);
        let mut el = KVec::new();
        el.extend_from_slice(header.as_bytes(), GFP_KERNEL)?;
        el.extend_from_slice(payload, GFP_KERNEL)?;
        Ok(el)
    }

    /// What a receive gave when the GSP rewrote its element before one of the copies.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Outcome {
        /// Changed before the first copy: the replacement, whole.
        Replaced,
        /// The original payload: the bytes the driver copied had not changed.
        Unchanged,
        /// Refused with `EIO` for the expected reason.
        Refused,
    }

    /// The most copies a receive of one element may make: more, and it never ends.
    const MAX_READS: usize = 16;

    /// Has the GSP post a log line carrying `original` after `fill` one-slot lines, and
    /// change it to one carrying `replacement` (sealed anew) just before the driver's
    /// first copy out of the ring, then on a fresh pair before its second, and so on
    /// until the receive makes no more copies. Checks every time that the caller gets
    /// the bytes the driver checked or a refusal for `fault`, never a mix, and that the
    /// next valid message arrives; returns what each receive gave.
    fn rewrite_before_each_read(
        fill: u32,
        original: &[u8],
        replacement: &[u8],
        fault: Fault,
    ) -> Result<KVec<Outcome>> {
        let mut outcomes = KVec::new();
        let mut at = 0;
        loop {
            at += 1;
            // Else a receive of one element keeps copying.
            check!(at <= MAX_READS)?;
            let mut mem: Coherent<GspMem> =
                CoherentBox::<GspMem>::zeroed(vdev::device()?, GFP_KERNEL)?.into();
            let gsp = RewriteBeforeRead {
                // SAFETY: Only `mem`'s byte copies call the observer, so the view is not used
                // after `mem` is dropped.
                view: unsafe { device_view(&mem) },
                // CAST: `u32` to `usize`, lossless.
                ring_pos: fill as usize * GSP_PAGE_SIZE,
                replacement: sealed_log_element(fill, replacement)?,
                at,
                armed: AtomicBool::new(false),
                reads: AtomicUsize::new(0),
                rewritten: AtomicBool::new(false),
            };
            // SAFETY: `gsp` is declared before `pair`, which owns `mem`, so it is dropped
            // after it, and it does not move.
            unsafe { mem.set_read_observer(&gsp) };
            let mut pair = Pair::new_in(mem)?;
            for _ in 0..fill {
                let el = log_element(&pair, b"fill")?;
                pair.gsp.post_raw(&el, 1)?;
                pair.cmdq.receive_any(LONG)?;
            }
            let el = sealed_log_element(fill, original)?;
            // The element is the one the GSP itself would send.
            check!(el[..] == log_element(&pair, original)?[..])?;
            pair.gsp
                .post_raw(&el, fw::element::elem_count_for(original.len()))?;

            gsp.arm();
            let result = pair.cmdq.receive_any(LONG);
            let reads = gsp.disarm();
            if reads < at {
                // No copy left to precede: the receive ran undisturbed.
                check!(!gsp.rewritten())?;
                check!(matches!(&result, Ok(msg) if msg.payload[..] == original[..]))?;
                return Ok(outcomes);
            }
            check!(gsp.rewritten())?;
            let outcome = match result {
                Ok(msg) if at == 1 => {
                    check!(msg.payload[..] == replacement[..])?;
                    Outcome::Replaced
                }
                Ok(msg) => {
                    check!(msg.payload[..] == original[..])?;
                    Outcome::Unchanged
                }
                Err(e) => {
                    check!(e == EIO)?;
                    check!(pair.cmdq.last_fault() == Some(fault))?;
                    Outcome::Refused
                }
            };
            outcomes.push(outcome, GFP_KERNEL)?;
            check!(pair.cmdq.cpu_ptrs().1 == pair.gsp.gsp_ptrs().0)?;
            next_valid_arrives(&mut pair)?;
        }
    }

    #[test]
    fn a_payload_changed_between_header_and_payload_reads_is_refused() -> Result {
        let outcomes = rewrite_before_each_read(
            0,
            b"validated bytes",
            b"SCRIBBLED bytes",
            Fault::BadChecksum,
        )?;
        // Copied before the header: the new element, valid. Before the payload: the new
        // payload does not match the checksum of the header already copied.
        assert_eq!(outcomes[..], [Outcome::Replaced, Outcome::Refused]);
        Ok(())
    }

    #[test]
    fn an_rpc_length_changed_after_the_header_read_is_ignored() -> Result {
        // The new element announces more bytes, and starts with the old payload.
        let outcomes = rewrite_before_each_read(
            0,
            b"validated bytes",
            b"validated bytes, and then some",
            Fault::BadChecksum,
        )?;
        // Before the payload copy: the driver copies only the length of the header it
        // checked, and those bytes did not change.
        assert_eq!(outcomes[..], [Outcome::Replaced, Outcome::Unchanged]);
        Ok(())
    }

    #[test]
    fn a_wrapping_payload_changed_between_its_two_reads_is_refused() -> Result {
        // At slot 62 an element of two slots: its payload runs on at slot 0, and is
        // copied in two pieces.
        let original = Pair::pattern(GSP_PAGE_SIZE, 1)?;
        let replacement = Pair::pattern(GSP_PAGE_SIZE, 2)?;
        let outcomes = rewrite_before_each_read(62, &original, &replacement, Fault::BadChecksum)?;
        assert_eq!(
            outcomes[..],
            [Outcome::Replaced, Outcome::Refused, Outcome::Refused]
        );
        Ok(())
    }
}
