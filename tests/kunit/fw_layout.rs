// SPDX-License-Identifier: GPL-2.0

//! The shared-memory layout, header initialisation and checksum.

use kernel::prelude::*;

/// The cases of the `nova_core_gsp_fw` suite.
#[kunit_tests(nova_core_gsp_fw)]
pub mod tests {
    use core::mem::{
        offset_of,
        size_of, //
    };

    use kernel::{
        dma_read,
        prelude::*, //
    };
    use nova_core::gsp::fw::*;
    use zerocopy::IntoBytes;

    use crate::fixture::Pair;

    #[test]
    fn gsp_mem_layout_matches_r570() {
        assert_eq!(size_of::<GspMem>(), 0x81000);
        assert_eq!(offset_of!(GspMem, cpuq), 0x1000);
        assert_eq!(offset_of!(GspMem, gspq), 0x41000);
        assert_eq!(size_of::<Msgq>(), 0x40000);
        assert_eq!(offset_of!(Msgq, rx), 0x20);
        assert_eq!(offset_of!(Msgq, msgq), 0x1000);
        assert_eq!(MSGQ_WRITE_PTR_OFFSET, 0x10);
        assert_eq!(MSGQ_READ_PTR_OFFSET, 0x20);
        assert_eq!(slot_offset(62), 0x1000 + 62 * 0x1000);
    }

    #[test]
    fn element_header_layout_matches_r570() {
        assert_eq!(size_of::<GspMsgElement>(), 80);
        assert_eq!(offset_of!(GspMsgElement, check_sum), 0x20);
        assert_eq!(offset_of!(GspMsgElement, seq_num), 0x24);
        assert_eq!(offset_of!(GspMsgElement, elem_count), 0x28);
        assert_eq!(offset_of!(GspMsgElement, rpc), 0x30);
        assert_eq!(size_of::<GspRpcHeader>(), 32);
        assert_eq!(RPC_SIGNATURE, 0x4350_5256);
        assert_eq!(RPC_HEADER_VERSION.into_bits(), 0x0300_0000);
    }

    #[test]
    fn tx_headers_initialised_as_upstream() -> Result {
        let pair = Pair::new()?;
        let mem = pair.cmdq.gsp_mem();
        for tx in [dma_read!(mem[0].cpuq.tx)?, dma_read!(mem[0].gspq.tx)?] {
            assert_eq!(tx.version, 0);
            assert_eq!(tx.size, 0x40000);
            assert_eq!(tx.msg_size, 4096);
            assert_eq!(tx.msg_count, 63);
            assert_eq!(tx.write_ptr, 0);
            assert_eq!(tx.flags, 1);
            assert_eq!(tx.rx_hdr_off, 0x20);
            assert_eq!(tx.entry_off, 0x1000);
        }
        assert_eq!(dma_read!(mem[0].cpuq.rx.read_ptr)?, 0);
        assert_eq!(dma_read!(mem[0].gspq.rx.read_ptr)?, 0);
        Ok(())
    }

    #[test]
    fn pte_page_maps_the_region_itself() -> Result {
        let pair = Pair::new()?;
        let mem = pair.cmdq.gsp_mem();
        // Entry by entry: the whole page would take 4 KiB of a kernel stack.
        let view = mem.device_view();
        let pte = |i: usize| -> Result<u64> {
            let lo = view.read32(PTES_OFFSET + i * 8)?;
            let hi = view.read32(PTES_OFFSET + i * 8 + 4)?;
            Ok(u64::from(hi) << 32 | u64::from(lo))
        };
        let base = mem.dma_handle();
        for i in 0..0x81 {
            assert_eq!(pte(i)?, base + (i as u64) * 4096);
        }
        assert_eq!(pte(0x81)?, 0);
        Ok(())
    }

    #[test]
    fn checksum_folds_little_endian_words() {
        assert_eq!(checksum(&[0; 64]), 0);
        // One word 0x11223344_55667788: halves XOR-ed.
        let word = 0x1122_3344_5566_7788u64.to_le_bytes();
        assert_eq!(checksum(&word), 0x1122_3344 ^ 0x5566_7788);
        // A short tail is zero-padded.
        assert_eq!(checksum(&[0xff]), 0xff);
        assert_eq!(
            checksum(&[1, 2, 3, 4, 5, 6, 7, 8, 9]),
            checksum(&[1, 2, 3, 4, 5, 6, 7, 8]) ^ 9
        );
    }

    #[test]
    fn element_with_its_checksum_sums_to_zero() {
        let payload = [0xa5u8; 100];
        let mut header = GspMsgElement::new(7, function::NOP, 3, payload.len(), payload.len());
        let mut sum = Checksum::default();
        sum.update(header.as_bytes());
        sum.update(&payload);
        header.check_sum = sum.fold();
        let mut all = Checksum::default();
        all.update(header.as_bytes());
        all.update(&payload);
        assert_eq!(all.fold(), 0);
        header.rpc.function ^= 1;
        let mut bad = Checksum::default();
        bad.update(header.as_bytes());
        bad.update(&payload);
        assert_ne!(bad.fold(), 0);
    }

    #[test]
    fn element_counts_round_up_to_pages() {
        assert_eq!(elem_count_for(0), 1);
        assert_eq!(elem_count_for(4096 - 80), 1);
        assert_eq!(elem_count_for(4096 - 79), 2);
        assert_eq!(elem_count_for(MAX_ELEMENT_PAYLOAD), 16);
        assert_eq!(element_count_for_rpc(MAX_ELEMENT_PAYLOAD), 1);
        assert_eq!(element_count_for_rpc(MAX_ELEMENT_PAYLOAD + 1), 2);
        assert_eq!(element_count_for_rpc(200 * 1024), 4);
    }

    #[test]
    fn new_header_carries_rpc_fields() {
        let h = GspMsgElement::new(5, function::SET_REGISTRY, 9, 100, 300_000);
        assert_eq!(h.seq_num, 5);
        assert_eq!(h.elem_count, 1);
        assert_eq!(h.rpc.length, 32 + 300_000);
        assert_eq!(h.rpc.function, 73);
        assert_eq!(h.rpc.sequence, 9);
        assert_eq!(h.rpc.rpc_result, 0xffff_ffff);
        assert_eq!(h.rpc.rpc_result_private, 0xffff_ffff);
        assert_eq!(h.auth_tag_buffer, [0; 16]);
        assert_eq!(h.rpc_payload_len(), Some(300_000));
    }
}
