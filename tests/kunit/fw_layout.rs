// SPDX-License-Identifier: GPL-2.0

//! The shared-memory layout, header initialisation and checksum; the r570 layouts of
//! the structures the driver and the GSP exchange, read back as bytes at r570's offsets
//! (those of the r570_144 bindings of Linux 7.3).

use kernel::prelude::*;

/// The cases of the `nova_core_gsp_fw` suite.
#[kunit_tests(nova_core_gsp_fw)]
pub mod tests {
    use core::mem::{
        offset_of,
        size_of, //
    };

    use kernel::prelude::*;
    use nova_core::gsp::{
        cmdq::{
            BenchSeam,
            CommandToGsp,
            NoReply, //
        },
        commands::{
            ConfigMirror,
            GetGspStaticInfo,
            GspSetSystemInfo,
            GspStaticConfigInfo,
            PackedRegistryEntry,
            PackedRegistryTable,
            PciFunction,
            RmControl,
            RmControlHeader,
            UnloadingGuestDriver, //
        },
        fault::Fault,
        fw::{
            element::*,
            ring::*,
            *, //
        },
    };
    use nova_testbench::rpc::{
        element_count_for_rpc,
        VGSP_CE_COPY,
        VGSP_ECHO,
        VGSP_SINK, //
    };
    use vgsp::command_payload_len;
    use zerocopy::{
        FromBytes,
        IntoBytes, //
    };

    /// Returns the little-endian `u32` at `offset` of `bytes`.
    fn le32(bytes: &[u8], offset: usize) -> u32 {
        let mut word = [0; 4];
        word.copy_from_slice(&bytes[offset..offset + 4]);
        u32::from_le_bytes(word)
    }

    /// Returns the little-endian `u64` at `offset` of `bytes`.
    fn le64(bytes: &[u8], offset: usize) -> u64 {
        u64::from(le32(bytes, offset + 4)) << 32 | u64::from(le32(bytes, offset))
    }

    /// A PCI function whose every value differs from the others.
    const PCI: PciFunction = PciFunction {
        bar0: 0x1111_0000_0000,
        bar1: 0x2222_0000_0000,
        bar3: 0x3333_0000_0000,
        bus_dev_fn: 0x4142,
        vendor_id: 0x10de,
        device_id: 0x2684,
        subsystem_vendor_id: 0x1458,
        subsystem_id: 0x40bf,
        revision_id: 0xa1,
        // Turing's, Ampere's and Ada's.
        config_mirror: ConfigMirror {
            base: 0x8_8000,
            size: 0x1000,
        },
    };

    use crate::fixture::{
        check,
        Pair, //
    };

    #[test]
    fn gsp_mem_layout_matches_r570() {
        assert_eq!(size_of::<GspMem>(), 0x81000);
        assert_eq!(PTES_OFFSET, 0);
        assert_eq!(CPUQ_OFFSET, 0x1000);
        assert_eq!(GSPQ_OFFSET, 0x41000);
        assert_eq!(size_of::<Msgq>(), 0x40000);
        assert_eq!(slot_offset(0), 0x1000);
        assert_eq!(RING_BYTES, 63 * 0x1000);
        assert_eq!(MSGQ_WRITE_PTR_OFFSET, 0x10);
        assert_eq!(MSGQ_READ_PTR_OFFSET, 0x20);
        assert_eq!(slot_offset(62), 0x1000 + 62 * 0x1000);
    }

    #[test]
    fn element_header_layout_matches_r570() {
        assert_eq!(size_of::<GspMsgElement>(), 80);
        assert_eq!(offset_of!(GspMsgElement, aad_buffer), 0x10);
        assert_eq!(offset_of!(GspMsgElement, check_sum), 0x20);
        assert_eq!(offset_of!(GspMsgElement, seq_num), 0x24);
        assert_eq!(offset_of!(GspMsgElement, elem_count), 0x28);
        assert_eq!(offset_of!(GspMsgElement, rpc), 0x30);
        assert_eq!(size_of::<GspRpcHeader>(), 32);
        assert_eq!(RPC_HEADER_SIZE, 32);
        assert_eq!(ELEMENT_HEADER_SIZE, 80);
    }

    #[test]
    fn msg_functions_carry_r570_numbers() {
        let numbers = [
            (MsgFunction::NOP, 0),
            (MsgFunction::UNLOADING_GUEST_DRIVER, 47),
            (MsgFunction::GET_GSP_STATIC_INFO, 65),
            (MsgFunction::CONTINUATION_RECORD, 71),
            (MsgFunction::GSP_SET_SYSTEM_INFO, 72),
            (MsgFunction::SET_REGISTRY, 73),
            (MsgFunction::GSP_RM_CONTROL, 76),
            (MsgFunction::GSP_INIT_DONE, 0x1001),
            (MsgFunction::GSP_RUN_CPU_SEQUENCER, 0x1002),
            (MsgFunction::POST_EVENT, 0x1003),
            (MsgFunction::RC_TRIGGERED, 0x1004),
            (MsgFunction::MMU_FAULT_QUEUED, 0x1005),
            (MsgFunction::OS_ERROR_LOG, 0x1006),
            (MsgFunction::UCODE_LIBOS_PRINT, 0x100c),
            (MsgFunction::PERF_BRIDGELESS_INFO_UPDATE, 0x100f),
            (MsgFunction::GSP_LOCKDOWN_NOTICE, 0x101c),
            (MsgFunction::GSP_POST_NOCAT_RECORD, 0x1020),
        ];
        for (function, number) in numbers {
            assert_eq!(u32::from(function), number);
            assert_eq!(MsgFunction::try_from(number), Ok(function));
            assert_eq!(function.is_event(), number >= 0x1000);
        }
        assert_eq!(MsgFunction::UCODE_LIBOS_PRINT.name(), "UCODE_LIBOS_PRINT");
        assert_eq!(MsgFunction::GSP_RM_CONTROL.name(), "GSP_RM_CONTROL");
    }

    #[test]
    fn the_benchs_functions_are_numbered_clear_of_r570s() {
        for (function, number) in [
            (VGSP_CE_COPY, 0x0f01),
            (VGSP_ECHO, 0x0f02),
            (VGSP_SINK, 0x0f03),
        ] {
            assert_eq!(u32::from(function), number);
            // None of r570's: the driver does not list them, nor are they events.
            assert_eq!(MsgFunction::try_from(number), Err(EINVAL));
            assert!(!function.is_event());
            assert_eq!(function.name(), "UNKNOWN");
        }
    }

    #[test]
    fn unknown_function_number_is_einval() {
        for number in [1, 0x0777, 0x0bad, 0x1000, 0x1007, u32::MAX] {
            assert_eq!(MsgFunction::try_from(number), Err(EINVAL));
        }
    }

    /// A header of `function` and RPC sequence `sequence` carrying `chunk_len` bytes.
    fn header(function: MsgFunction, sequence: u32, chunk_len: usize) -> GspMsgElement {
        GspMsgElement::new(0, function.into(), sequence, chunk_len)
    }

    #[test]
    fn a_record_numbered_as_the_first_or_after_the_last_continues_a_message() {
        let record = |sequence| header(MsgFunction::CONTINUATION_RECORD, sequence, 10);
        let head = header(MsgFunction::NOP, 7, MAX_ELEMENT_PAYLOAD);
        let mut delimiter = Delimiter::head(&head, MAX_ELEMENT_PAYLOAD, None);
        // After the head: numbered as it, or as the one after it.
        assert_eq!(delimiter.next(&record(7)), Next::Append);
        assert_eq!(delimiter.next(&record(8)), Next::Append);
        assert_eq!(delimiter.next(&record(9)), Next::Ends);
        assert_eq!(delimiter.next(&record(6)), Next::Ends);
        // After a record numbered 8: as the first, or 9; not 8 again.
        delimiter.append(
            &header(MsgFunction::CONTINUATION_RECORD, 8, MAX_ELEMENT_PAYLOAD),
            MAX_ELEMENT_PAYLOAD,
        );
        assert_eq!(delimiter.next(&record(7)), Next::Append);
        assert_eq!(delimiter.next(&record(9)), Next::Append);
        assert_eq!(delimiter.next(&record(8)), Next::Ends);
        // Another function ends it, whatever its number.
        assert_eq!(delimiter.next(&header(MsgFunction::NOP, 9, 10)), Next::Ends);
    }

    #[test]
    fn rpc_header_fields_sit_at_r570_offsets() {
        let h = GspMsgElement::new(5, MsgFunction::SET_REGISTRY.into(), 9, 100);
        let rpc = h.rpc.as_bytes();
        assert_eq!(le32(rpc, 0x0), 0x0300_0000);
        // "VRPC", little-endian.
        assert_eq!(le32(rpc, 0x4), 0x4350_5256);
        assert_eq!(le32(rpc, 0x8), 32 + 100);
        assert_eq!(le32(rpc, 0xc), u32::from(MsgFunction::SET_REGISTRY));
        // Pending: all ones.
        assert_eq!(le32(rpc, 0x10), 0xffff_ffff);
        assert_eq!(le32(rpc, 0x14), 0xffff_ffff);
        assert_eq!(le32(rpc, 0x18), 9);
        assert_eq!(le32(rpc, 0x1c), 0);
        let element = h.as_bytes();
        assert_eq!(le32(element, 0x24), 5);
        assert_eq!(le32(element, 0x28), 1);
    }

    #[test]
    fn tx_header_fields_sit_at_r570_offsets() -> Result {
        let pair = Pair::new()?;
        let view = pair.view();
        for queue in [CPUQ_OFFSET, GSPQ_OFFSET] {
            let mut words = [0u32; 8];
            for (i, word) in words.iter_mut().enumerate() {
                *word = view.read32(queue + i * 4)?;
            }
            // version, size, msgSize, msgCount, writePtr, flags, rxHdrOff, entryOff.
            assert_eq!(words, [0, 0x40000, 0x1000, 63, 0, 1, 0x20, 0x1000]);
            // The rx header: the read pointer alone, right after the tx header.
            assert_eq!(view.read32(queue + MSGQ_READ_PTR_OFFSET)?, 0);
        }
        Ok(())
    }

    #[test]
    fn system_info_layout_matches_r570() {
        assert_eq!(size_of::<GspSetSystemInfo>(), 0x3a0);
        assert_eq!(offset_of!(GspSetSystemInfo, gpu_phys_io_addr), 0x18);
        assert_eq!(
            offset_of!(GspSetSystemInfo, nv_domain_bus_device_func),
            0x20
        );
        assert_eq!(offset_of!(GspSetSystemInfo, max_user_va), 0x48);
        assert_eq!(offset_of!(GspSetSystemInfo, pci_config_mirror_base), 0x50);
        assert_eq!(offset_of!(GspSetSystemInfo, pci_device_id), 0x58);
        assert_eq!(offset_of!(GspSetSystemInfo, is_primary), 0x380);
        assert_eq!(offset_of!(GspSetSystemInfo, host_page_size), 0x398);
    }

    #[test]
    fn system_info_is_filled_from_pci_as_upstream() {
        let info = GspSetSystemInfo::new(&PCI);
        let bytes = info.as_bytes();
        assert_eq!(le64(bytes, 0x00), PCI.bar0);
        assert_eq!(le64(bytes, 0x08), PCI.bar1);
        assert_eq!(le64(bytes, 0x10), PCI.bar3);
        assert_eq!(le64(bytes, 0x20), 0x4142);
        assert_eq!(le64(bytes, 0x48), (1 << 47) - 4096);
        assert_eq!(le32(bytes, 0x50), 0x8_8000);
        assert_eq!(le32(bytes, 0x54), 0x1000);
        assert_eq!(le32(bytes, 0x58), 0x2684_10de);
        assert_eq!(le32(bytes, 0x5c), 0x40bf_1458);
        assert_eq!(le32(bytes, 0x60), 0xa1);
        // Everything else is zero, the I/O BAR at 0x18 among it.
        let filled = [0x00..0x18, 0x20..0x28, 0x48..0x64];
        for (i, &b) in bytes.iter().enumerate() {
            if !filled.iter().any(|r| r.contains(&i)) {
                assert_eq!((i, b), (i, 0));
            }
        }
    }

    #[test]
    fn static_info_layout_matches_r570() {
        assert_eq!(size_of::<GspStaticConfigInfo>(), 0x678);
        assert_eq!(offset_of!(GspStaticConfigInfo, fb_regions), 0x158);
        assert_eq!(offset_of!(GspStaticConfigInfo, fb_length), 0x4c8);
        assert_eq!(offset_of!(GspStaticConfigInfo, name), 0x4ec);
        assert_eq!(offset_of!(GspStaticConfigInfo, short_name), 0x52c);
        assert_eq!(offset_of!(GspStaticConfigInfo, vbios_sub_vendor), 0x614);
        assert_eq!(offset_of!(GspStaticConfigInfo, vbios_sub_device), 0x618);
        assert_eq!(offset_of!(GspStaticConfigInfo, fw_wpr_layout_offset), 0x668);
    }

    #[test]
    fn static_info_command_is_a_zeroed_structure_of_its_size() {
        let payload = crate::fixture::wire_payload(&GetGspStaticInfo).unwrap();
        assert_eq!(payload.len(), 0x678);
        assert!(payload.iter().all(|&b| b == 0));
    }

    #[test]
    fn registry_layout_matches_r570() {
        assert_eq!(size_of::<PackedRegistryTable>(), 8);
        assert_eq!(offset_of!(PackedRegistryTable, num_entries), 4);
        assert_eq!(size_of::<PackedRegistryEntry>(), 16);
        assert_eq!(offset_of!(PackedRegistryEntry, type_), 4);
        assert_eq!(offset_of!(PackedRegistryEntry, data), 8);
        assert_eq!(offset_of!(PackedRegistryEntry, length), 12);
    }

    #[test]
    fn unload_layout_matches_r570() {
        let unload = UnloadingGuestDriver {
            suspend: 1,
            gc6_entering: 2,
            pad: [0; 2],
            new_level: 3,
        };
        assert_eq!(unload.as_bytes(), [1, 2, 0, 0, 3, 0, 0, 0]);
    }

    #[test]
    fn rm_control_layout_matches_r570() -> Result {
        assert_eq!(size_of::<RmControlHeader>(), 0x18);
        let params = [0xeeu8; 5];
        let control = RmControl {
            h_client: 0xc1d0_0001,
            h_object: 0x5c00_0002,
            cmd: 0x2080_0123,
            params: &params,
        };
        let payload = crate::fixture::wire_payload(&control)?;
        // hClient, hObject, cmd, status, paramsSize, flags, then the parameters.
        let words: [u32; 6] = core::array::from_fn(|i| le32(&payload, i * 4));
        assert_eq!(words, [0xc1d0_0001, 0x5c00_0002, 0x2080_0123, NV_OK, 5, 0]);
        assert!(payload[0x18..] == params[..]);
        Ok(())
    }

    #[test]
    fn rm_control_payload_len_is_header_plus_params_size() -> Result {
        let params_size = 200 << 10;
        let head = RmControlHeader {
            cmd: 0x0f00_0001,
            params_size,
            ..RmControlHeader::default()
        };
        // A head carries its header and the first chunk of the parameters.
        let mut bytes = KVec::new();
        bytes.extend_from_slice(head.as_bytes(), GFP_KERNEL)?;
        bytes.resize(MAX_ELEMENT_PAYLOAD, 0x5a, GFP_KERNEL)?;
        let function = u32::from(MsgFunction::GSP_RM_CONTROL);
        assert_eq!(
            command_payload_len(function, &bytes),
            Ok(Some(0x18 + (200 << 10)))
        );
        assert_eq!(
            command_payload_len(function, &bytes[..0x18]),
            Ok(Some(0x18 + (200 << 10)))
        );
        assert_eq!(command_payload_len(function, &bytes[..0x17]), Err(EIO));
        Ok(())
    }

    #[test]
    fn tx_headers_initialised_as_upstream() -> Result {
        let pair = Pair::new()?;
        let view = pair.view();
        for queue in [CPUQ_OFFSET, GSPQ_OFFSET] {
            let word = |off: usize| view.read32(queue + off);
            assert_eq!(word(0x0)?, 0);
            assert_eq!(word(0x4)?, 0x40000);
            assert_eq!(word(0x8)?, 4096);
            assert_eq!(word(0xc)?, 63);
            assert_eq!(word(MSGQ_WRITE_PTR_OFFSET)?, 0);
            assert_eq!(word(0x14)?, 1);
            assert_eq!(word(0x18)?, 0x20);
            assert_eq!(word(0x1c)?, 0x1000);
            assert_eq!(word(MSGQ_READ_PTR_OFFSET)?, 0);
        }
        Ok(())
    }

    #[test]
    fn pte_page_maps_the_region_itself() -> Result {
        let pair = Pair::new()?;
        let mem = pair.cmdq.gsp_mem();
        // Entry by entry: the whole page would take 4 KiB of a kernel stack.
        let view = vdev::device_view(mem);
        let pte = |i: usize| -> Result<u64> {
            let lo = view.read32(PTES_OFFSET + i * 8)?;
            let hi = view.read32(PTES_OFFSET + i * 8 + 4)?;
            Ok(u64::from(hi) << 32 | u64::from(lo))
        };
        let base = mem.dma_address();
        for i in 0..0x81 {
            assert_eq!(pte(i)?, base + (i as u64) * 4096);
        }
        assert_eq!(pte(0x81)?, 0);
        Ok(())
    }

    #[test]
    fn pte_page_points_nowhere_past_the_region() -> Result {
        let pair = Pair::new()?;
        let view = vdev::device_view(pair.cmdq.gsp_mem());
        assert_eq!(GSP_MEM_PAGES, 0x81);
        // Upstream's entries 0x81.. point past the allocation; ours are zero.
        for i in GSP_MEM_PAGES..GSP_PTE_COUNT {
            let lo = view.read32(PTES_OFFSET + i * 8)?;
            let hi = view.read32(PTES_OFFSET + i * 8 + 4)?;
            assert_eq!((i, lo, hi), (i, 0, 0));
        }
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
    fn ring_cursor_keeps_one_slot_empty() {
        let mut ring = WriteCursor::default();
        // The other agent's read pointer at our write pointer: all but one slot free.
        assert_eq!(ring.saw_read_ptr(0), MSGQ_NUM_PAGES - 1);
        ring.wrote(MSGQ_NUM_PAGES - 1);
        assert_eq!(ring.write_ptr(), MSGQ_NUM_PAGES - 1);
        assert_eq!(ring.known_free(), 0);
        assert_eq!(ring.saw_read_ptr(0), 0);
    }

    #[test]
    fn ring_cursor_wraps_its_pointers_past_the_ring_end() {
        let mut ring = WriteCursor::default();
        ring.saw_read_ptr(0);
        ring.wrote(60);
        assert_eq!(ring.next_write(5), 2);
        ring.saw_read_ptr(10);
        ring.wrote(5);
        assert_eq!(ring.write_ptr(), 2);
        assert_eq!(ring.write_offset(8), 2 * GSP_PAGE_SIZE + 8);
        // Slots 2..=8 are free: up to the one before the other's read pointer.
        assert_eq!(ring.saw_read_ptr(10), 7);
    }

    #[test]
    fn ring_cursor_counts_published_slots_across_the_ring_end() {
        let mut ring = ReadCursor::default();
        assert_eq!(ring.saw_write_ptr(61), Ok(61));
        ring.consumed(61);
        assert_eq!(ring.read_ptr(), 61);
        assert_eq!(ring.saw_write_ptr(3), Ok(5));
        assert_eq!(ring.read_offset(1), 61 * GSP_PAGE_SIZE + 1);
    }

    #[test]
    fn ring_cursor_refuses_a_write_pointer_moving_backwards() {
        let mut ring = ReadCursor::default();
        assert_eq!(ring.saw_write_ptr(5), Ok(5));
        assert_eq!(ring.saw_write_ptr(4), Err(Fault::WritePointerBackwards));
        // What was known stays known.
        assert_eq!(ring.known_published(), 5);
        ring.forget_published();
        assert_eq!(ring.saw_write_ptr(4), Ok(4));
    }

    #[test]
    fn ring_pointers_outside_the_ring_are_refused() {
        assert_eq!(ring_ptr(MSGQ_NUM_PAGES - 1), Ok(MSGQ_NUM_PAGES - 1));
        assert_eq!(ring_ptr(MSGQ_NUM_PAGES), Err(Fault::PointerOutsideRing));
    }

    /// A command whose first `N` payload bytes are its fixed part and the rest its variable
    /// payload: the driver seals its element from the two pieces, the second starting
    /// anywhere in a word.
    struct Split<'a, const N: usize>(&'a [u8]);

    impl<const N: usize> CommandToGsp for Split<'_, N> {
        const FUNCTION: MsgFunction = MsgFunction::NOP;
        type Command = [u8; N];
        type Reply = NoReply;

        fn init(&self) -> [u8; N] {
            core::array::from_fn(|i| self.0[i])
        }

        fn variable_payload(&self) -> &[u8] {
            &self.0[N..]
        }
    }

    /// Posts `bytes` as a [`Split`] at `N` and checks the element the driver wrote: it sums
    /// to zero, its checksum that of the payload sealed as one chunk.
    fn sealed_from_pieces<const N: usize>(bytes: &[u8]) -> Result {
        let pair = Pair::new()?;
        let sequence = pair.cmdq.post(pair.bar.bar(), &Split::<N>(bytes))?;
        let mut element = KVec::new();
        element.resize(ELEMENT_HEADER_SIZE + bytes.len(), 0u8, GFP_KERNEL)?;
        pair.view()
            .read_bytes(CPUQ_OFFSET + slot_offset(0), &mut element)?;
        check!(checksum(&element) == 0)?;
        let (written, _) = GspMsgElement::read_from_prefix(&element).map_err(|_| EIO)?;
        let mut one = GspMsgElement::new(0, MsgFunction::NOP.into(), sequence, bytes.len());
        one.seal(bytes);
        check!(written.check_sum == one.check_sum)
    }

    /// Checks [`sealed_from_pieces`] at each split given.
    macro_rules! splits {
        ($bytes:expr, $($n:literal)*) => {
            $(sealed_from_pieces::<$n>($bytes)?;)*
        };
    }

    #[test]
    fn sealing_in_pieces_at_any_offset_seals_as_one_chunk() -> Result {
        // CAST: keeps the low byte on purpose.
        let bytes: [u8; 29] = core::array::from_fn(|i| (i as u8).wrapping_mul(37) ^ 0x5a);
        splits!(&bytes, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29);
        Ok(())
    }

    #[test]
    fn element_with_its_checksum_sums_to_zero() -> Result {
        let payload = [0xa5u8; 100];
        let mut header = GspMsgElement::new(7, MsgFunction::NOP.into(), 3, payload.len());
        header.seal(&payload);
        let whole = |h: &GspMsgElement| -> Result<u32> {
            let mut all = KVec::new();
            all.extend_from_slice(h.as_bytes(), GFP_KERNEL)?;
            all.extend_from_slice(&payload, GFP_KERNEL)?;
            Ok(checksum(&all))
        };
        assert_eq!(whole(&header)?, 0);
        assert_eq!(verify_checksum(&header, &payload), Ok(()));
        header.rpc.function ^= 1;
        assert!(whole(&header)? != 0);
        assert_eq!(verify_checksum(&header, &payload), Err(Fault::BadChecksum));
        Ok(())
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
        let h = GspMsgElement::new(5, MsgFunction::SET_REGISTRY.into(), 9, 100);
        assert_eq!(h.seq_num, 5);
        assert_eq!(h.elem_count, 1);
        // The element's own chunk, a split RPC's head included.
        assert_eq!(h.rpc.length, 32 + 100);
        assert_eq!(h.rpc.function, 73);
        assert_eq!(h.rpc.sequence, 9);
        assert_eq!(h.rpc.rpc_result, 0xffff_ffff);
        assert_eq!(h.rpc.rpc_result_private, 0xffff_ffff);
        assert_eq!(h.auth_tag_buffer, [0; 16]);
        assert_eq!(h.rpc_payload_len(), Some(100));
    }
}
