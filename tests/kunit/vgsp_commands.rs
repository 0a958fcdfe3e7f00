// SPDX-License-Identifier: GPL-2.0

//! The typed commands and the virtual GSP's answers: bring-up, static info, errors; both
//! sides reading the r570 layouts at r570's offsets.

use kernel::prelude::*;

/// The cases of the `vgsp_commands` suite.
#[kunit_tests(vgsp_commands)]
pub mod tests {
    use kernel::prelude::*;
    use nova_core::gsp::{
        cmdq::MessageFromGsp,
        commands::{
            GetGspStaticInfo,
            GspInitDone,
            GspSetSystemInfo,
            GspStaticConfigInfo,
            RegistryEntryType,
            RmControl,
            RmControlHeader,
            RmControlReply,
            SetRegistry,
            UnloadingGuestDriver, //
        },
        fault::Fault,
        fw::{
            self,
            element::{
                elem_count_for,
                validate_header,
                verify_checksum, //
            },
            GspMsgElement,
            MsgFunction,
            CPUQ_OFFSET,
            ELEMENT_HEADER_SIZE,
            GSP_PAGE_SIZE,
            MSGQ_WRITE_PTR_OFFSET, //
        },
    };
    use nova_testbench::{
        rpc::{
            params_digest,
            EchoHeader,
            ParamsDigest,
            Raw,
            VGSP_ECHO, //
        },
        ReceiveAny,
    };
    use zerocopy::IntoBytes;

    use crate::{
        cmdq_split::{
            r570_command,
            R570_CHUNK, //
        },
        fixture::{
            check,
            wire_payload,
            Pair,
            LONG, //
        },
    };

    /// Returns `len` zero bytes.
    fn zeroes(len: usize) -> Result<KVec<u8>> {
        let mut v = KVec::new();
        v.resize(len, 0, GFP_KERNEL)?;
        Ok(v)
    }

    /// Receives `payload` as a message of `function` from the GSP, as the driver receives
    /// one, and reads it as an `M`.
    fn receive_as<M: MessageFromGsp>(function: MsgFunction, payload: &[u8]) -> Result<M> {
        let mut pair = Pair::new()?;
        let el = pair.gsp.encode_element(function.into(), 0, payload)?;
        pair.gsp.post_raw(&el, elem_count_for(payload.len()))?;
        let msg = pair.cmdq.receive_any(LONG)?;
        pair.cmdq.read_msg(&msg)
    }

    /// The registry keys of the driver's bring-up (upstream's).
    const BOOT_REGISTRY: &[(&str, u32)] = &[
        ("RMSecBusResetEnable", 1),
        ("RMForcePcieConfigSave", 1),
        ("RMDevidCheckIgnore", 1),
    ];

    /// Stores `value` little-endian at `offset` of `bytes`.
    fn put(bytes: &mut [u8], offset: usize, value: &[u8]) {
        bytes[offset..offset + value.len()].copy_from_slice(value);
    }

    /// Sends `table` as `SET_REGISTRY` and returns the result of the GSP's answer: the
    /// `rpc_result` of an error reply, `NV_OK` if `GSP_INIT_DONE` came instead.
    fn registry_result(table: &[u8]) -> Result<u32> {
        let mut pair = Pair::new()?;
        pair.cmdq.post(
            pair.bar.bar(),
            &Raw::<{ MsgFunction::SET_REGISTRY.0 }>(table),
        )?;
        pair.gsp_run()?;
        loop {
            let msg = pair.cmdq.receive_any(LONG)?;
            match msg.function() {
                MsgFunction::UCODE_LIBOS_PRINT => continue,
                MsgFunction::GSP_INIT_DONE => return Ok(fw::NV_OK),
                _ => return Ok(msg.rpc_result),
            }
        }
    }

    /// A one-entry registry table: key `"K"`, then 4 value bytes `"v\0\0\0"`; the entry
    /// of `kind` with `data` and `length` as given.
    fn one_entry_table(kind: u8, data: u32, length: u32) -> [u8; 30] {
        let mut t = [0u8; 30];
        put(&mut t, 0, &30u32.to_le_bytes());
        put(&mut t, 4, &1u32.to_le_bytes());
        put(&mut t, 8, &24u32.to_le_bytes());
        t[12] = kind;
        put(&mut t, 16, &data.to_le_bytes());
        put(&mut t, 20, &length.to_le_bytes());
        put(&mut t, 24, b"K\0v\0\0\0");
        t
    }

    #[test]
    fn bring_up_sequence_completes() -> Result {
        let mut pair = Pair::new()?;
        let info = GspSetSystemInfo::new(&vgsp::PCI_FUNCTION);
        pair.cmdq.post(pair.bar.bar(), &info)?;
        pair.cmdq
            .post(pair.bar.bar(), &SetRegistry::new(BOOT_REGISTRY)?)?;
        pair.gsp_run()?;
        assert_eq!(pair.gsp.system_info(), Some(&info));
        assert_eq!(pair.gsp.registry_entries(), Some(3));
        let mut lines = 0;
        loop {
            let msg = pair.cmdq.receive_any(LONG)?;
            if msg.function() == MsgFunction::UCODE_LIBOS_PRINT {
                lines += 1;
                continue;
            }
            assert_eq!(msg.function(), MsgFunction::GSP_INIT_DONE);
            break;
        }
        assert_eq!(lines, 3);
        pair.cmdq.post(pair.bar.bar(), &GetGspStaticInfo)?;
        pair.gsp_run()?;
        let msg = pair.cmdq.receive_any(LONG)?;
        let static_info: GspStaticConfigInfo = pair.cmdq.read_msg(&msg)?;
        assert_eq!(static_info.gpu_name(), vgsp::GPU_NAME);
        assert_eq!(static_info.fb_length, vgsp::FB_LENGTH);
        let mut usable = static_info.usable_fb_regions();
        assert_eq!(usable.next(), Some(0..vgsp::FB_LENGTH));
        assert_eq!(usable.next(), None);
        let pci = vgsp::PCI_FUNCTION;
        assert_eq!(
            (static_info.vbios_sub_vendor, static_info.vbios_sub_device),
            (
                u32::from(pci.subsystem_vendor_id),
                u32::from(pci.subsystem_id)
            )
        );
        Ok(())
    }

    #[test]
    fn the_gsp_journal_names_each_command_s_outcome() -> Result {
        let mut pair = Pair::new()?;
        pair.gsp.set_journal(true);
        pair.cmdq.post(pair.bar.bar(), &GetGspStaticInfo)?;
        pair.cmdq.post(
            pair.bar.bar(),
            &Raw::<{ MsgFunction::SET_REGISTRY.0 }>(&[0u8; 4]),
        )?;
        pair.gsp_run()?;
        let journal = pair.gsp.take_journal();
        assert_eq!(journal.len(), 2);
        assert_eq!(
            (journal[0].function, journal[0].outcome),
            (
                MsgFunction::GET_GSP_STATIC_INFO.into(),
                vgsp::Outcome::Served
            )
        );
        assert_eq!(
            (journal[1].function, journal[1].outcome),
            (
                MsgFunction::SET_REGISTRY.into(),
                vgsp::Outcome::Refused("command length refused")
            )
        );
        assert!(pair.gsp.take_journal().is_empty());
        Ok(())
    }

    #[test]
    fn a_withheld_reply_is_handed_over_not_sent() -> Result {
        let mut pair = Pair::new()?;
        pair.gsp.withhold(MsgFunction::GET_GSP_STATIC_INFO.into());
        pair.cmdq.post(pair.bar.bar(), &GetGspStaticInfo)?;
        pair.gsp_run()?;
        let withheld = pair.gsp.take_withheld().ok_or(EINVAL)?;
        assert_eq!(
            withheld.function,
            u32::from(MsgFunction::GET_GSP_STATIC_INFO)
        );
        assert_eq!(
            withheld.payload.len(),
            core::mem::size_of::<GspStaticConfigInfo>()
        );
        // Nothing reached `gspq`.
        assert_eq!(pair.gsp.gsp_ptrs().0, 0);
        Ok(())
    }

    #[test]
    fn gsp_reads_system_info_at_r570_offsets() -> Result {
        let mut pair = Pair::new()?;
        let mut raw = zeroes(0x3a0)?;
        put(&mut raw, 0x00, &0xfd00_0000u64.to_le_bytes());
        put(&mut raw, 0x18, &0x1234_5678u64.to_le_bytes());
        put(&mut raw, 0x20, &0x0100u64.to_le_bytes());
        put(&mut raw, 0x48, &0x7fff_ffff_f000u64.to_le_bytes());
        put(&mut raw, 0x50, &0x9_2000u32.to_le_bytes());
        put(&mut raw, 0x58, &0x2b85_10deu32.to_le_bytes());
        put(&mut raw, 0x60, &0xa1u32.to_le_bytes());
        raw[0x380] = 1;
        pair.cmdq.post(
            pair.bar.bar(),
            &Raw::<{ MsgFunction::GSP_SET_SYSTEM_INFO.0 }>(&raw),
        )?;
        pair.gsp_run()?;
        let info = pair.gsp.system_info().ok_or(EIO)?;
        assert_eq!(info.gpu_phys_addr, 0xfd00_0000);
        assert_eq!(info.gpu_phys_io_addr, 0x1234_5678);
        assert_eq!(info.nv_domain_bus_device_func, 0x0100);
        assert_eq!(info.max_user_va, 0x7fff_ffff_f000);
        assert_eq!(info.pci_config_mirror_base, 0x9_2000);
        assert_eq!(info.pci_device_id, 0x2b85_10de);
        assert_eq!(info.pci_revision_id, 0xa1);
        assert_eq!(info.is_primary, 1);
        assert_eq!(pair.gsp.stats.malformed, 0);
        Ok(())
    }

    #[test]
    fn gsp_refuses_system_info_of_the_wrong_size() -> Result {
        let mut pair = Pair::new()?;
        // The size of the eight-word structure this driver used to send.
        let raw = zeroes(64)?;
        let seq = pair.cmdq.post(
            pair.bar.bar(),
            &Raw::<{ MsgFunction::GSP_SET_SYSTEM_INFO.0 }>(&raw),
        )?;
        pair.gsp_run()?;
        let reply = pair.cmdq.receive_any(LONG)?;
        assert_eq!(
            (reply.function(), reply.sequence),
            (MsgFunction::GSP_SET_SYSTEM_INFO, seq)
        );
        assert_eq!(reply.rpc_result, fw::NV_ERR_INVALID_ARGUMENT);
        assert_eq!(pair.gsp.system_info(), None);
        Ok(())
    }

    #[test]
    fn driver_decodes_static_info_at_r570_offsets() -> Result {
        let mut raw = zeroes(0x678)?;
        put(&mut raw, 0x158, &1u32.to_le_bytes());
        // Region 0: base 0x1000, limit 0x1fff, compressible and isochronous.
        put(&mut raw, 0x160, &0x1000u64.to_le_bytes());
        put(&mut raw, 0x168, &0x1fffu64.to_le_bytes());
        raw[0x160 + 0x1c] = 1;
        raw[0x160 + 0x1d] = 1;
        put(&mut raw, 0x4c8, &(3u64 << 30).to_le_bytes());
        put(&mut raw, 0x4ec, b"NVIDIA Test GPU\0");
        put(&mut raw, 0x618, &0x1234u32.to_le_bytes());
        let info: GspStaticConfigInfo = receive_as(MsgFunction::GET_GSP_STATIC_INFO, &raw)?;
        assert_eq!(info.gpu_name(), "NVIDIA Test GPU");
        assert_eq!(info.fb_length, 3 << 30);
        assert_eq!(info.vbios_sub_device, 0x1234);
        let mut usable = info.usable_fb_regions();
        assert_eq!(usable.next(), Some(0x1000..0x2000));
        assert_eq!(usable.next(), None);
        Ok(())
    }

    #[test]
    fn driver_refuses_static_info_of_the_wrong_size() -> Result {
        // The size of the made-up structure this driver used to expect.
        let raw = zeroes(88)?;
        assert_eq!(
            receive_as::<GspStaticConfigInfo>(MsgFunction::GET_GSP_STATIC_INFO, &raw).err(),
            Some(EIO)
        );
        Ok(())
    }

    #[test]
    fn gsp_answers_static_info_in_the_size_of_the_request() -> Result {
        let mut pair = Pair::new()?;
        let seq = pair.cmdq.post(pair.bar.bar(), &GetGspStaticInfo)?;
        pair.gsp_run()?;
        let reply = pair.cmdq.receive_any(LONG)?;
        assert_eq!(
            (reply.function(), reply.sequence),
            (MsgFunction::GET_GSP_STATIC_INFO, seq)
        );
        assert_eq!(reply.payload.len(), 0x678);
        let name = &reply.payload[0x4ec..0x4ec + vgsp::GPU_NAME.len() + 1];
        assert_eq!(&name[..vgsp::GPU_NAME.len()], vgsp::GPU_NAME.as_bytes());
        assert_eq!(name[vgsp::GPU_NAME.len()], 0);
        Ok(())
    }

    #[test]
    fn registry_table_is_packed_as_r570() -> Result {
        let reg = SetRegistry::new(&[("A", 5), ("BC", 6)])?;
        let p = wire_payload(&reg)?;
        // Header 8, two entries of 16, then "A\0BC\0".
        assert_eq!(p.len(), 8 + 32 + 5);
        assert_eq!(&p[0..4], &(45u32).to_le_bytes());
        assert_eq!(&p[4..8], &2u32.to_le_bytes());
        assert_eq!(&p[8..12], &40u32.to_le_bytes());
        assert_eq!(p[12], 1);
        assert_eq!(&p[16..20], &5u32.to_le_bytes());
        assert_eq!(&p[24..28], &42u32.to_le_bytes());
        assert_eq!(&p[40..], b"A\0BC\0");
        assert_eq!(SetRegistry::new(&[("bad\0key", 1)]).err(), Some(EINVAL));
        Ok(())
    }

    #[test]
    fn registry_numbers_have_length_zero_as_upstream() -> Result {
        let reg = SetRegistry::new(&[("A", 5), ("BC", 6)])?;
        let p = wire_payload(&reg)?;
        assert_eq!(p[12], RegistryEntryType::Dword as u8);
        assert_eq!(&p[20..24], &0u32.to_le_bytes());
        assert_eq!(p[28], RegistryEntryType::Dword as u8);
        assert_eq!(&p[36..40], &0u32.to_le_bytes());
        Ok(())
    }

    #[test]
    fn gsp_accepts_a_number_of_length_zero_or_four() -> Result {
        assert_eq!(registry_result(&one_entry_table(1, 7, 0))?, fw::NV_OK);
        assert_eq!(registry_result(&one_entry_table(1, 7, 4))?, fw::NV_OK);
        Ok(())
    }

    #[test]
    fn gsp_refuses_a_number_of_another_length() -> Result {
        assert_eq!(
            registry_result(&one_entry_table(1, 7, 8))?,
            fw::NV_ERR_INVALID_ARGUMENT
        );
        Ok(())
    }

    #[test]
    fn gsp_accepts_a_string_inside_the_table() -> Result {
        // "v\0" at offset 26.
        assert_eq!(registry_result(&one_entry_table(3, 26, 2))?, fw::NV_OK);
        Ok(())
    }

    #[test]
    fn gsp_refuses_a_value_past_the_table() -> Result {
        assert_eq!(
            registry_result(&one_entry_table(2, 26, 5))?,
            fw::NV_ERR_INVALID_ARGUMENT
        );
        Ok(())
    }

    #[test]
    fn gsp_refuses_an_entry_of_unknown_type() -> Result {
        assert_eq!(
            registry_result(&one_entry_table(4, 7, 0))?,
            fw::NV_ERR_INVALID_ARGUMENT
        );
        Ok(())
    }

    /// Writes a one-slot command of `function`, a raw number, straight into the first
    /// slot of `cpuq` and publishes it: what a driver that knows other functions than
    /// this one would send, written past it so that it does not learn the function.
    fn post_raw_command(pair: &Pair, function: u32, sequence: u32, payload: &[u8]) -> Result {
        let mut h = GspMsgElement::new(0, function, sequence, payload.len());
        h.seal(payload);
        let mut element = KVec::new();
        element.extend_from_slice(h.as_bytes(), GFP_KERNEL)?;
        element.extend_from_slice(payload, GFP_KERNEL)?;
        element.resize(GSP_PAGE_SIZE, 0, GFP_KERNEL)?;
        let view = pair.view();
        view.write_bytes(CPUQ_OFFSET + fw::slot_offset(0), &element)?;
        view.write32(CPUQ_OFFSET + MSGQ_WRITE_PTR_OFFSET, 1)?;
        Ok(())
    }

    /// Writes a command element of `function` whose `rpc.length` announces `announced`
    /// payload bytes, carrying `payload`, at the start of `cpuq` and publishes its slots.
    fn post_raw_head(
        pair: &Pair,
        function: MsgFunction,
        payload: &[u8],
        announced: usize,
    ) -> Result {
        let mut h = GspMsgElement::new(0, function.into(), 9, payload.len());
        // CAST: the tests announce at most a few elements, far below `u32::MAX`.
        h.rpc.length = (fw::RPC_HEADER_SIZE + announced) as u32;
        h.seal(payload);
        let mut element = KVec::new();
        element.extend_from_slice(h.as_bytes(), GFP_KERNEL)?;
        element.extend_from_slice(payload, GFP_KERNEL)?;
        let view = pair.view();
        view.write_bytes(CPUQ_OFFSET + fw::slot_offset(0), &element)?;
        view.write32(CPUQ_OFFSET + MSGQ_WRITE_PTR_OFFSET, h.elem_count)?;
        Ok(())
    }

    /// An echo's payload: its header announcing `length` bytes, then `bytes`.
    fn echo_payload(length: u32, bytes: &[u8]) -> Result<KVec<u8>> {
        let mut payload = KVec::new();
        payload.extend_from_slice(
            EchoHeader {
                length,
                reserved: 0,
            }
            .as_bytes(),
            GFP_KERNEL,
        )?;
        payload.extend_from_slice(bytes, GFP_KERNEL)?;
        Ok(payload)
    }

    /// Runs the GSP and returns the `rpc_result` of its answer to the echo just posted.
    fn echo_answer(pair: &mut Pair) -> Result<u32> {
        pair.gsp_run()?;
        let reply = pair.cmdq.receive_any(LONG)?;
        check!(reply.function() == VGSP_ECHO)?;
        Ok(reply.rpc_result)
    }

    /// Writes the r570 elements of the commands `(function, sequence, payload)` one after
    /// the other at the start of `cpuq`, numbered from 0, and publishes them.
    fn post_r570_commands(pair: &Pair, commands: &[(u32, u32, &[u8])]) -> Result {
        let view = pair.view();
        let mut slot = 0;
        let mut seq_num = 0;
        for &(function, sequence, payload) in commands {
            for (el, n) in r570_command(seq_num, function, sequence, payload)?.iter() {
                view.write_bytes(CPUQ_OFFSET + fw::slot_offset(slot), el)?;
                slot += n;
                seq_num += 1;
            }
        }
        view.write32(CPUQ_OFFSET + MSGQ_WRITE_PTR_OFFSET, slot)
    }

    #[test]
    fn gsp_skips_a_stray_continuation_record() -> Result {
        let mut pair = Pair::new()?;
        let cont = MsgFunction::CONTINUATION_RECORD.into();
        post_r570_commands(
            &pair,
            &[(cont, 7, b"stray"), (MsgFunction::NOP.into(), 8, b"hi")],
        )?;
        pair.gsp_run()?;
        // Skipped as the driver skips one: no error reply, and the next command served.
        let reply = pair.cmdq.receive_any(LONG)?;
        check!((reply.function(), reply.sequence) == (MsgFunction::NOP, 8))?;
        check!((reply.rpc_result, &reply.payload[..]) == (fw::NV_OK, &b"hi"[..]))?;
        check!((pair.gsp.stats.stray, pair.gsp.stats.malformed) == (1, 0))
    }

    #[test]
    fn gsp_refuses_a_split_command_another_ends_and_takes_that_one_next() -> Result {
        let mut pair = Pair::new()?;
        // A full head announcing two elements' worth, then another command at once.
        let bytes = Pair::pattern(R570_CHUNK, 3)?;
        let head = echo_payload(u32::try_from(2 * R570_CHUNK)?, &bytes)?;
        post_r570_commands(
            &pair,
            &[
                (VGSP_ECHO.into(), 5, &head[..R570_CHUNK]),
                (MsgFunction::NOP.into(), 6, b"hi"),
            ],
        )?;
        pair.gsp_run()?;
        let refused = pair.cmdq.receive_any(LONG)?;
        check!((refused.function(), refused.sequence) == (VGSP_ECHO, 5))?;
        check!(refused.rpc_result == fw::NV_ERR_INVALID_ARGUMENT)?;
        let served = pair.cmdq.receive_any(LONG)?;
        check!((served.function(), served.sequence) == (MsgFunction::NOP, 6))?;
        check!((served.rpc_result, &served.payload[..]) == (fw::NV_OK, &b"hi"[..]))?;
        check!(pair.gsp.stats.malformed == 1)
    }

    #[test]
    fn gsp_answers_an_echo_whose_header_gives_its_length() -> Result {
        let mut pair = Pair::new()?;
        let payload = echo_payload(4, b"abcd")?;
        post_raw_head(&pair, VGSP_ECHO, &payload, payload.len())?;
        assert_eq!(echo_answer(&mut pair)?, fw::NV_OK);
        assert_eq!(pair.gsp.stats.malformed, 0);
        Ok(())
    }

    #[test]
    fn gsp_refuses_a_command_head_announcing_more_than_its_own_chunk() -> Result {
        let mut pair = Pair::new()?;
        // A full head whose `rpc.length` counts the whole command, as this driver used to
        // send it: the firmware expects the head's own chunk there.
        let bytes = Pair::pattern(fw::MAX_ELEMENT_PAYLOAD - 8, 5)?;
        let payload = echo_payload(fw::MAX_ELEMENT_PAYLOAD as u32, &bytes)?;
        post_raw_head(&pair, VGSP_ECHO, &payload, payload.len() + 8)?;
        assert_eq!(echo_answer(&mut pair)?, fw::NV_ERR_INVALID_ARGUMENT);
        assert_eq!(pair.gsp.stats.malformed, 1);
        Ok(())
    }

    #[test]
    fn gsp_refuses_an_echo_shorter_than_its_header_says() -> Result {
        let mut pair = Pair::new()?;
        // Not a full element, so no continuation record can bring the rest.
        let payload = echo_payload(10, b"abcd")?;
        post_raw_head(&pair, VGSP_ECHO, &payload, payload.len())?;
        assert_eq!(echo_answer(&mut pair)?, fw::NV_ERR_INVALID_ARGUMENT);
        Ok(())
    }

    #[test]
    fn gsp_refuses_an_echo_longer_than_its_header_says() -> Result {
        let mut pair = Pair::new()?;
        let payload = echo_payload(2, b"abcd")?;
        post_raw_head(&pair, VGSP_ECHO, &payload, payload.len())?;
        assert_eq!(echo_answer(&mut pair)?, fw::NV_ERR_INVALID_ARGUMENT);
        Ok(())
    }

    #[test]
    fn gsp_refuses_an_echo_without_its_header() -> Result {
        let mut pair = Pair::new()?;
        post_raw_head(&pair, VGSP_ECHO, b"abc", 3)?;
        assert_eq!(echo_answer(&mut pair)?, fw::NV_ERR_INVALID_ARGUMENT);
        Ok(())
    }

    #[test]
    fn unknown_command_gets_not_supported_reply() -> Result {
        let mut pair = Pair::new()?;
        post_raw_command(&pair, 0x0777, 5, b"?")?;
        pair.gsp_run()?;
        let reply = pair.cmdq.receive_any(LONG)?;
        assert_eq!((reply.function, reply.sequence), (0x0777, 5));
        assert_eq!(MsgFunction::try_from(reply.function), Err(EINVAL));
        assert_eq!(reply.rpc_result, fw::NV_ERR_NOT_SUPPORTED);
        Ok(())
    }

    /// An RM control of `cmd` on made-up handles, with `params`.
    fn rm_control(cmd: u32, params: &[u8]) -> RmControl<'_> {
        RmControl {
            h_client: 0xc1d0_0001,
            h_object: 0x5c00_0002,
            cmd,
            params,
        }
    }

    #[test]
    fn rm_control_echo_returns_its_params_with_nv_ok() -> Result {
        let mut pair = Pair::new()?;
        let params = Pair::pattern(100, 3)?;
        let control = rm_control(vgsp::VGSP_CTRL_CMD_ECHO, &params);
        let sent = wire_payload(&control)?;
        let seq = pair.cmdq.post(pair.bar.bar(), &control)?;
        pair.gsp_run()?;
        let msg = pair.cmdq.receive_any(LONG)?;
        assert_eq!(
            (msg.function(), msg.sequence, msg.rpc_result),
            (MsgFunction::GSP_RM_CONTROL, seq, fw::NV_OK)
        );
        // The header comes back as sent, its status `NV_OK` as it was, then the params.
        assert!(msg.payload[..] == sent[..]);
        let reply = pair.cmdq.read_msg::<RmControlReply>(&msg)?;
        assert_eq!(reply.status, fw::NV_OK);
        assert!(reply.params[..] == params[..]);
        assert_eq!(pair.gsp.stats.commands, 1);
        assert_eq!(pair.gsp.stats.replies, 1);
        assert_eq!(pair.gsp.stats.malformed, 0);
        Ok(())
    }

    #[test]
    fn rm_control_digest_answers_the_length_and_hash_of_its_params() -> Result {
        let mut pair = Pair::new()?;
        let params = Pair::pattern(3000, 9)?;
        let control = rm_control(vgsp::VGSP_CTRL_CMD_DIGEST, &params);
        // Sent as bytes: its reply is not as long as its params, as an r570 control's is
        // (`RmControl::reply_len`), but 16 bytes whatever they are.
        let sent = wire_payload(&control)?;
        pair.cmdq.post(
            pair.bar.bar(),
            &Raw::<{ MsgFunction::GSP_RM_CONTROL.0 }>(&sent),
        )?;
        pair.gsp_run()?;
        let msg = pair.cmdq.receive_any(LONG)?;
        let reply = pair.cmdq.read_msg::<RmControlReply>(&msg)?;
        assert_eq!(reply.status, fw::NV_OK);
        // FNV-1a 64 of the pattern, as the driver computes it; and of a known string, so
        // that the hash is FNV-1a's and not merely the two sides agreeing.
        let want = params_digest(&params)?;
        assert!(reply.params[..] == *want.as_bytes());
        assert_eq!(
            params_digest(b"a")?,
            ParamsDigest {
                length: 1,
                reserved: 0,
                fnv1a64: 0xaf63_dc4c_8601_ec8c,
            }
        );
        Ok(())
    }

    #[test]
    fn unknown_rm_control_gets_not_supported_in_its_status() -> Result {
        let mut pair = Pair::new()?;
        // No control of the virtual GSP's has index 0xff.
        let control = rm_control(vgsp::VGSP_CTRL_CMD_ECHO | 0xff, b"abc");
        let sent = wire_payload(&control)?;
        let seq = pair.cmdq.post(pair.bar.bar(), &control)?;
        pair.gsp_run()?;
        let msg = pair.cmdq.receive_any(LONG)?;
        // The RPC itself succeeded: the control's failure is in the header.
        assert_eq!(
            (msg.function(), msg.sequence, msg.rpc_result),
            (MsgFunction::GSP_RM_CONTROL, seq, fw::NV_OK)
        );
        let status = core::mem::offset_of!(RmControlHeader, status);
        assert!(msg.payload[..status] == sent[..status]);
        assert!(msg.payload[status + 4..] == sent[status + 4..]);
        let reply = pair.cmdq.read_msg::<RmControlReply>(&msg)?;
        assert_eq!(reply.status, fw::NV_ERR_NOT_SUPPORTED);
        assert!(reply.params[..] == b"abc"[..]);
        assert_eq!(pair.gsp.stats.replies, 1);
        assert_eq!(pair.gsp.stats.malformed, 0);
        Ok(())
    }

    #[test]
    fn gsp_refuses_an_rm_control_shorter_than_its_params_size() -> Result {
        let mut pair = Pair::new()?;
        let header = RmControlHeader {
            cmd: vgsp::VGSP_CTRL_CMD_ECHO,
            params_size: 16,
            ..RmControlHeader::default()
        };
        let mut payload = KVec::new();
        payload.extend_from_slice(header.as_bytes(), GFP_KERNEL)?;
        payload.extend_from_slice(b"abcd", GFP_KERNEL)?;
        // One element, not a full one: no continuation record can bring the rest.
        let seq = pair.cmdq.post(
            pair.bar.bar(),
            &Raw::<{ MsgFunction::GSP_RM_CONTROL.0 }>(&payload),
        )?;
        pair.gsp_run()?;
        let msg = pair.cmdq.receive_any(LONG)?;
        assert_eq!(
            (msg.function(), msg.sequence, msg.rpc_result),
            (
                MsgFunction::GSP_RM_CONTROL,
                seq,
                fw::NV_ERR_INVALID_ARGUMENT
            )
        );
        assert!(msg.payload.is_empty());
        assert_eq!(pair.gsp.stats.malformed, 1);
        assert_eq!(
            pair.cmdq.read_msg::<RmControlReply>(&msg).err(),
            Some(EINVAL)
        );
        Ok(())
    }

    #[test]
    fn driver_refuses_an_rm_control_reply_not_of_its_params_size() -> Result {
        let header = RmControlHeader {
            params_size: 4,
            ..RmControlHeader::default()
        };
        let mut raw = KVec::new();
        raw.extend_from_slice(header.as_bytes(), GFP_KERNEL)?;
        raw.extend_from_slice(b"abcde", GFP_KERNEL)?;
        let end = core::mem::size_of::<RmControlHeader>() + 4;
        let control = MsgFunction::GSP_RM_CONTROL;
        assert_eq!(
            receive_as::<RmControlReply>(control, &raw[..end - 1]).err(),
            Some(EIO)
        );
        assert_eq!(receive_as::<RmControlReply>(control, &raw).err(), Some(EIO));
        let reply: RmControlReply = receive_as(control, &raw[..end])?;
        assert!(reply.params[..] == b"abcd"[..]);
        Ok(())
    }

    #[test]
    fn unload_gets_empty_reply() -> Result {
        let mut pair = Pair::new()?;
        let seq = pair
            .cmdq
            .post(pair.bar.bar(), &UnloadingGuestDriver::default())?;
        pair.gsp_run()?;
        let reply = pair.cmdq.receive_any(LONG)?;
        assert_eq!(
            (reply.function(), reply.sequence, reply.rpc_result),
            (MsgFunction::UNLOADING_GUEST_DRIVER, seq, fw::NV_OK)
        );
        assert!(reply.payload.is_empty());
        Ok(())
    }

    #[test]
    fn malformed_command_gets_error_reply_not_a_crash() -> Result {
        let mut pair = Pair::new()?;
        // A buggy driver: a one-slot command written straight into `cpuq`, right but for
        // one bit of its checksum.
        let payload = *b"ping";
        let mut h = GspMsgElement::new(0, MsgFunction::NOP.into(), 77, payload.len());
        h.seal(&payload);
        let mut element = KVec::new();
        element.extend_from_slice(h.as_bytes(), GFP_KERNEL)?;
        element.extend_from_slice(&payload, GFP_KERNEL)?;
        element.resize(GSP_PAGE_SIZE, 0, GFP_KERNEL)?;
        // Checked as both receivers check an element's copy: with the checksum as sealed,
        // it passes every check; the flipped bit is its only fault.
        let checked = |element: &[u8]| -> core::result::Result<usize, Fault> {
            let (header, len) = validate_header(element, 1)?;
            verify_checksum(
                &header,
                &element[ELEMENT_HEADER_SIZE..ELEMENT_HEADER_SIZE + len],
            )?;
            Ok(len)
        };
        assert_eq!(checked(&element), Ok(payload.len()));
        element[core::mem::offset_of!(GspMsgElement, check_sum)] ^= 1;
        assert_eq!(checked(&element), Err(Fault::BadChecksum));
        let view = pair.view();
        view.write_bytes(CPUQ_OFFSET + fw::slot_offset(0), &element)?;
        view.write32(CPUQ_OFFSET + MSGQ_WRITE_PTR_OFFSET, 1)?;
        assert_eq!(pair.gsp_run()?, vgsp::Progress::Idle);
        assert_eq!(pair.gsp.stats.malformed, 1);
        let reply = pair.cmdq.receive_any(LONG)?;
        assert_eq!((reply.function(), reply.sequence), (MsgFunction::NOP, 77));
        assert_eq!(reply.rpc_result, fw::NV_ERR_INVALID_ARGUMENT);
        Ok(())
    }

    #[test]
    fn malformed_registry_gets_error_reply() -> Result {
        let mut pair = Pair::new()?;
        pair.cmdq.post(
            pair.bar.bar(),
            &Raw::<{ MsgFunction::SET_REGISTRY.0 }>(&[1, 2, 3]),
        )?;
        pair.gsp_run()?;
        let reply = pair.cmdq.receive_any(LONG)?;
        assert_eq!(reply.rpc_result, fw::NV_ERR_INVALID_ARGUMENT);
        assert_eq!(pair.gsp.registry_entries(), None);
        Ok(())
    }

    #[test]
    fn init_done_decodes() -> Result {
        let done: GspInitDone = receive_as(MsgFunction::GSP_INIT_DONE, &[0, 0, 0, 0])?;
        assert_eq!(done.status, 0);
        Ok(())
    }
}
