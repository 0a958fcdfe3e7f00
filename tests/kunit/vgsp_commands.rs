// SPDX-License-Identifier: GPL-2.0

//! The typed commands and the virtual GSP's answers: bring-up, static info, errors.

use kernel::prelude::*;

/// The cases of the `vgsp_commands` suite.
#[kunit_tests(vgsp_commands)]
pub mod tests {
    use kernel::prelude::*;
    use nova_core::gsp::{
        commands::{
            GetGspStaticInfo,
            GspInitDone,
            GspSetSystemInfo,
            GspStaticConfigInfo,
            LibosPrint,
            SetRegistry,
            UnloadingGuestDriver, //
        },
        fw::{
            self,
            function,
            Checksum,
            GspMsgElement,
            CPUQ_OFFSET,
            GSP_PAGE_SIZE,
            MSGQ_WRITE_PTR_OFFSET, //
        },
        BOOT_REGISTRY,
    };
    use zerocopy::IntoBytes;

    use crate::fixture::{
        Pair,
        LONG, //
    };

    #[test]
    fn bring_up_sequence_completes() -> Result {
        let mut pair = Pair::new()?;
        let info = GspSetSystemInfo {
            gpu_phys_addr: 0xfd00_0000,
            ..Default::default()
        };
        pair.cmdq.send_command(pair.bar.bar(), &info)?;
        pair.cmdq
            .send_command(pair.bar.bar(), &SetRegistry::new(BOOT_REGISTRY)?)?;
        pair.gsp_run()?;
        assert_eq!(
            pair.gsp.system_info().map(|i| i.gpu_phys_addr),
            Some(0xfd00_0000)
        );
        assert_eq!(pair.gsp.registry_entries(), Some(3));
        let mut lines = 0;
        loop {
            let msg = pair.cmdq.receive_msg(LONG)?;
            if msg.function == function::UCODE_LIBOS_PRINT {
                lines += 1;
                continue;
            }
            assert_eq!(msg.function, function::GSP_INIT_DONE);
            break;
        }
        assert_eq!(lines, 3);
        pair.cmdq
            .send_command(pair.bar.bar(), &GetGspStaticInfo::new())?;
        pair.gsp_run()?;
        let static_info: GspStaticConfigInfo = pair.cmdq.wait_for_msg(LONG)?;
        assert_eq!(static_info.gpu_name(), vgsp::GPU_NAME);
        assert_eq!(static_info.fb_length, vgsp::FB_LENGTH);
        Ok(())
    }

    #[test]
    fn registry_table_is_packed_as_r570() -> Result {
        let reg = SetRegistry::new(&[("A", 5), ("BC", 6)])?;
        use nova_core::gsp::cmdq::CommandToGsp;
        let p = reg.payload();
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
    fn unknown_command_gets_not_supported_reply() -> Result {
        let mut pair = Pair::new()?;
        let seq = pair.cmdq.send_rpc(pair.bar.bar(), 0x0777, b"?", LONG)?;
        pair.gsp_run()?;
        let reply = pair.cmdq.receive_msg(LONG)?;
        assert_eq!((reply.function, reply.sequence), (0x0777, seq));
        assert_eq!(reply.rpc_result, fw::NV_ERR_NOT_SUPPORTED);
        Ok(())
    }

    #[test]
    fn unload_gets_empty_reply() -> Result {
        let mut pair = Pair::new()?;
        let seq = pair
            .cmdq
            .send_command(pair.bar.bar(), &UnloadingGuestDriver::default())?;
        pair.gsp_run()?;
        let reply = pair.cmdq.receive_msg(LONG)?;
        assert_eq!(
            (reply.function, reply.sequence, reply.rpc_result),
            (function::UNLOADING_GUEST_DRIVER, seq, fw::NV_OK)
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
        let mut h = GspMsgElement::new(0, function::NOP, 77, payload.len(), payload.len());
        let mut sum = Checksum::of_header(&h);
        sum.update(&payload);
        h.check_sum = sum.fold();
        let mut element = KVec::new();
        element.extend_from_slice(h.as_bytes(), GFP_KERNEL)?;
        element.extend_from_slice(&payload, GFP_KERNEL)?;
        element.resize(GSP_PAGE_SIZE, 0, GFP_KERNEL)?;
        // With the checksum as computed, the element passes every check; the flipped bit
        // is its only fault.
        assert_eq!(
            fw::validate_element(&element, 1).map(|(_, len)| len),
            Ok(payload.len())
        );
        element[core::mem::offset_of!(GspMsgElement, check_sum)] ^= 1;
        assert_eq!(
            fw::validate_element(&element, 1).err(),
            Some(fw::Malformed("bad checksum"))
        );
        let view = pair.view();
        view.write_bytes(CPUQ_OFFSET + fw::slot_offset(0), &element)?;
        view.write32(CPUQ_OFFSET + MSGQ_WRITE_PTR_OFFSET, 1)?;
        assert_eq!(pair.gsp_run()?, vgsp::Progress::Idle);
        assert_eq!(pair.gsp.stats.malformed, 1);
        let reply = pair.cmdq.receive_msg(LONG)?;
        assert_eq!((reply.function, reply.sequence), (function::NOP, 77));
        assert_eq!(reply.rpc_result, fw::NV_ERR_INVALID_ARGUMENT);
        Ok(())
    }

    #[test]
    fn malformed_registry_gets_error_reply() -> Result {
        let mut pair = Pair::new()?;
        pair.cmdq
            .send_rpc(pair.bar.bar(), function::SET_REGISTRY, &[1, 2, 3], LONG)?;
        pair.gsp_run()?;
        let reply = pair.cmdq.receive_msg(LONG)?;
        assert_eq!(reply.rpc_result, fw::NV_ERR_INVALID_ARGUMENT);
        assert_eq!(pair.gsp.registry_entries(), None);
        Ok(())
    }

    #[test]
    fn init_done_and_log_decode() -> Result {
        let done = <GspInitDone as nova_core::gsp::cmdq::MessageFromGsp>::decode(&[0, 0, 0, 0])?;
        assert_eq!(done.status, 0);
        let line = <LibosPrint as nova_core::gsp::cmdq::MessageFromGsp>::decode(b"hi")?;
        assert!(line.line[..] == b"hi"[..]);
        Ok(())
    }
}
