// SPDX-License-Identifier: GPL-2.0

//! The virtual GSP's copy engine: bytes landed in chunks, each reported on an
//! `mbarrier` in the driver's memory; the driver waits on the parity, then checks them.

use kernel::prelude::*;

/// The cases of the `vgsp_copy_engine` suite.
#[kunit_tests(vgsp_copy_engine)]
pub mod tests {
    use kernel::prelude::*;
    use nova_core::gsp::cmdq::BenchSeam;
    use nova_core::gsp::fw;
    use nova_testbench::ce::CopyArena;

    use crate::{
        fixture::{
            device_view,
            Pair,
            LONG,
            SHORT, //
        },
        gsp_thread::with_gsp_thread_and,
    };

    /// Data bytes in the arena: two halves, source and destination.
    const HALF: usize = 64 << 10;

    fn arena_with_pattern(seed: u32) -> Result<(CopyArena, KVec<u8>)> {
        let mut arena = CopyArena::new(vdev::device()?, 2 * HALF)?;
        let data = Pair::pattern(HALF, seed)?;
        arena.write(0, &data)?;
        Ok((arena, data))
    }

    #[test]
    fn copy_lands_in_chunks_and_completes_the_phase_once() -> Result {
        let (arena, data) = arena_with_pattern(1)?;
        let mut pair = Pair::new()?;
        // SAFETY: `pair`, and the GSP in it, is dropped before `arena`.
        pair.gsp.map_dma(arena.mem().dma_address(), unsafe {
            device_view(arena.mem())
        })?;
        let len = 10_000u32;
        let copy = arena.start_copy(&pair.cmdq, pair.bar.bar(), 0, HALF, len, 1000)?;
        let b = arena.barrier()?;
        assert_eq!((b.snapshot().pending, b.snapshot().tx), (0, 10_000));
        // The command, then the acknowledgement, then one chunk per step, then the
        // `POST_EVENT` that reports the finished copy.
        let mut steps = 0;
        while pair.gsp.step()? == vgsp::Progress::Worked {
            steps += 1;
            let s = b.snapshot();
            if s.phase_mod4 == 0 {
                assert!(s.tx > 0 && s.tx < 10_000 || steps <= 2);
            }
        }
        assert_eq!(steps, 2 + 10 + 1);
        arena.finish_copy(copy, LONG)?;
        let s = b.snapshot();
        assert_eq!((s.phase_mod4, s.pending, s.expected, s.tx), (1, 1, 1, 0));
        assert_eq!(pair.gsp.stats.copies, 1);
        let mut out = KVec::new();
        out.resize(len as usize, 0u8, GFP_KERNEL)?;
        arena.read(HALF, &mut out)?;
        assert!(out[..] == data[..len as usize]);
        // The byte after the copy is untouched.
        let mut next = [0u8; 1];
        arena.read(HALF + len as usize, &mut next)?;
        assert_eq!(next[0], 0);
        // A second copy: the next phase.
        let copy = arena.start_copy(&pair.cmdq, pair.bar.bar(), 100, HALF + 100, 4096, 4096)?;
        pair.gsp.run_until_idle()?;
        arena.finish_copy(copy, LONG)?;
        assert_eq!(arena.barrier()?.snapshot().phase_mod4, 2);
        Ok(())
    }

    #[test]
    fn copy_outside_the_mapped_window_is_refused() -> Result {
        let mut pair = Pair::new()?;
        let (arena, _) = arena_with_pattern(2)?;
        // Nothing mapped: the GSP cannot reach the arena.
        let copy = arena.start_copy(&pair.cmdq, pair.bar.bar(), 0, HALF, 64, 64)?;
        pair.gsp.run_until_idle()?;
        assert_eq!(arena.finish_copy(copy, SHORT), Err(EIO));
        assert_eq!(pair.gsp.stats.malformed, 1);
        // The fault was reported first, as `MMU_FAULT_QUEUED` and a line of the error log
        // (`OS_ERROR_LOG`), which nobody handles here.
        assert_eq!(pair.cmdq.events().unhandled, 2);
        // The barrier was disarmed and takes the next copy.
        let s = arena.barrier()?.snapshot();
        assert_eq!((s.phase_mod4, s.pending, s.tx), (0, 1, 0));
        Ok(())
    }

    #[test]
    fn driver_refuses_bad_requests() -> Result {
        let pair = Pair::new()?;
        let (arena, _) = arena_with_pattern(3)?;
        let bar = pair.bar.bar();
        // CAST: the arena's data size.
        let past = (2 * HALF) as u32;
        for (src, dst, len, chunk) in [
            (0, HALF, 0, 64),
            (0, HALF, 64, 0),
            (0, HALF, 64, (fw::GSP_MSG_QUEUE_ELEMENT_SIZE_MAX + 1) as u32),
            (HALF + 1, 0, HALF as u32, 64),
            (0, 1, past, 64),
        ] {
            assert!(arena
                .start_copy(&pair.cmdq, bar, src, dst, len, chunk)
                .is_err());
        }
        assert_eq!(pair.cmdq.cpu_ptrs(), (0, 0));
        Ok(())
    }

    #[test]
    fn copies_through_a_gsp_thread() -> Result {
        let (arena, data) = arena_with_pattern(4)?;
        let bus = arena.mem().dma_address();
        // SAFETY: Only the GSP thread uses the view, and `with_gsp_thread_and` joins it
        // before returning, while `arena` lives on.
        let view = unsafe { device_view(arena.mem()) };
        let (results, stats) = with_gsp_thread_and(
            0,
            |gsp| gsp.map_dma(bus, view),
            |gsp, bar, _| -> Result<u32> {
                let mut bad = 0;
                for (i, len) in [1u32, 4096, 4097, 65_000].into_iter().enumerate() {
                    let src = i * 7;
                    let dst = HALF + i * 13;
                    arena.copy(gsp.cmdq(), bar, src, dst, len, 1500, LONG)?;
                    let mut out = KVec::new();
                    out.resize(len as usize, 0u8, GFP_KERNEL)?;
                    arena.read(dst, &mut out)?;
                    bad += u32::from(out[..] != data[src..src + len as usize]);
                }
                Ok(bad)
            },
        )?;
        assert_eq!(results?, 0);
        assert_eq!(stats?.copies, 4);
        Ok(())
    }
}
