// SPDX-License-Identifier: GPL-2.0

//! The GSP finds its queues from the boot arguments the driver leaves it (r570's
//! `GSP_ARGUMENTS_CACHED`), through the PTE page, and refuses to start, with a named
//! reason, when they are inconsistent.

use kernel::{
    dma::{
        Coherent,
        CoherentBox, //
    },
    prelude::*,
};
use nova_core::gsp::{
    cmdq::BenchSeam,
    fw::GspArgumentsCached,
    Gsp, //
};
use vgsp::{
    StartRefused,
    Vgsp, //
};

use crate::fixture::{
    device_view,
    gsp_view, //
};

/// Locates the GSP of `gsp` from `args` changed by `change`, the window being the
/// shared memory itself; returns the refusal, if any.
///
/// # Errors
///
/// - `ENOMEM` if the arguments' memory cannot be had.
pub fn locate_with(
    gsp: &Gsp,
    change: impl FnOnce(&mut GspArgumentsCached),
) -> Result<core::result::Result<(), StartRefused>> {
    let mut args = CoherentBox::<GspArgumentsCached>::zeroed(vdev::device()?, GFP_KERNEL)?;
    *args = GspArgumentsCached::new(gsp.cmdq().gsp_mem().dma_address());
    change(&mut args);
    let args: Coherent<GspArgumentsCached> = args.into();
    // SAFETY: The views do not outlive this function, and `gsp` and `args` outlive it.
    let (window, args_view) = unsafe { (gsp_view(gsp.cmdq()), device_view(&args)) };
    let bus = gsp.cmdq().gsp_mem().dma_address();
    Ok(Vgsp::locate(window, bus, args_view).map(|_| ()))
}

/// The cases of the `nova_core_gsp_init_args` suite.
#[kunit_tests(nova_core_gsp_init_args)]
pub mod tests {
    use kernel::prelude::*;
    use nova_core::gsp::{
        cmdq::BenchSeam,
        fw::{
            GspArgumentsCached,
            GSP_MEM_PAGES,
            GSP_PAGE_SIZE,
            PTES_OFFSET, //
        },
        Gsp,
    };
    use vgsp::StartRefused;
    use zerocopy::IntoBytes;

    use super::locate_with;
    use crate::fixture::{
        check,
        device_view,
        gsp_view, //
    };

    /// The driver's queues and boot arguments.
    fn gsp() -> Result<Pin<KBox<Gsp>>> {
        KBox::pin_init(Gsp::new(vdev::device()?), GFP_KERNEL)
    }

    /// Checks that locating from arguments changed by `change` is refused with `errno`
    /// and `reason`.
    fn refused(change: impl FnOnce(&mut GspArgumentsCached), errno: Error, reason: &str) -> Result {
        let gsp = gsp()?;
        let got = locate_with(&gsp, change)?;
        check!(
            matches!(got, Err(StartRefused { errno: e, reason: r }) if e == errno && r == reason)
        )
    }

    /// The shared memory's offset by `pages` pages, as a bus address change.
    fn page_offset(pages: u64) -> u64 {
        // CAST: a page is 4 KiB.
        pages * GSP_PAGE_SIZE as u64
    }

    #[test]
    fn the_drivers_arguments_locate_the_queues() -> Result {
        let gsp = gsp()?;
        check!(locate_with(&gsp, |_| {})? == Ok(()))?;
        // The same arguments as those the driver left in its own memory for the GSP.
        // SAFETY: The view does not outlive `gsp`.
        let view = unsafe { device_view(gsp.args()) };
        let mut left = [0u8; core::mem::size_of::<GspArgumentsCached>()];
        view.read_bytes(0, &mut left)?;
        let want = GspArgumentsCached::new(gsp.cmdq().gsp_mem().dma_address());
        check!(left[..] == *want.as_bytes())
    }

    #[test]
    fn an_unaligned_shared_memory_is_refused() -> Result {
        refused(
            |a| a.message_queue_init_arguments.shared_mem_phys_addr += 8,
            EINVAL,
            "shared memory not page-aligned",
        )
    }

    #[test]
    fn a_shared_memory_outside_the_region_is_refused() -> Result {
        refused(
            |a| a.message_queue_init_arguments.shared_mem_phys_addr += page_offset(1),
            ERANGE,
            "shared memory outside the region",
        )
    }

    #[test]
    fn a_pte_count_too_small_is_refused() -> Result {
        refused(
            // CAST: 0x81 pages.
            |a| a.message_queue_init_arguments.page_table_entry_count = (GSP_MEM_PAGES - 1) as u32,
            EINVAL,
            "PTE count too small for the queues",
        )
    }

    #[test]
    fn a_pte_count_beyond_the_pte_page_is_refused() -> Result {
        refused(
            |a| a.message_queue_init_arguments.page_table_entry_count = 513,
            EINVAL,
            "PTE count beyond the PTE page",
        )
    }

    #[test]
    fn an_unaligned_queue_offset_is_refused() -> Result {
        refused(
            |a| a.message_queue_init_arguments.cmd_queue_offset += 4,
            EINVAL,
            "queue offset not page-aligned",
        )
    }

    #[test]
    fn a_queue_offset_outside_the_region_is_refused() -> Result {
        refused(
            // CAST: 0x81 pages.
            |a| {
                a.message_queue_init_arguments.stat_queue_offset = page_offset(GSP_MEM_PAGES as u64)
            },
            ERANGE,
            "queue offsets outside the region",
        )
    }

    #[test]
    fn queues_away_from_r570s_layout_are_refused() -> Result {
        refused(
            |a| {
                let q = &mut a.message_queue_init_arguments;
                core::mem::swap(&mut q.cmd_queue_offset, &mut q.stat_queue_offset);
            },
            EINVAL,
            "queue offsets not r570's layout",
        )
    }

    #[test]
    fn ptes_that_are_not_contiguous_are_refused() -> Result {
        let gsp = gsp()?;
        // SAFETY: The view does not outlive `gsp`.
        let view = unsafe { gsp_view(gsp.cmdq()) };
        // Entry 5 names page 6.
        let wrong = gsp.cmdq().gsp_mem().dma_address() + page_offset(6);
        view.write_bytes(PTES_OFFSET + 8 * 5, &wrong.to_le_bytes())?;
        let got = locate_with(&gsp, |_| {})?;
        check!(
            matches!(got, Err(StartRefused { errno, reason: "PTEs not contiguous" }) if errno == EINVAL)
        )
    }
}
