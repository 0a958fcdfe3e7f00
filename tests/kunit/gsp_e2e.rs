// SPDX-License-Identifier: GPL-2.0

//! End to end: the virtual GSP on its own thread (the second CPU in a kernel), woken by
//! the doorbell; the driver boots it and pushes thousands of commands through the rings.

use kernel::prelude::*;

/// The cases of the `nova_core_gsp_e2e` suite.
#[kunit_tests(nova_core_gsp_e2e)]
pub mod tests {
    use kernel::prelude::*;
    use nova_core::gsp::{
        cmdq::GspMessage,
        commands::{
            Echo,
            GspSetSystemInfo, //
        },
        fw::{
            self,
            function, //
        },
    };

    use crate::{
        fixture::{
            Pair,
            LONG, //
        },
        gsp_thread::with_gsp_thread,
    };

    /// Echo commands the mixed-size case sends.
    const ECHOES: u32 = 3000;

    /// What the driver saw; checked after the GSP thread has been joined.
    #[derive(Default)]
    struct Findings {
        /// Replies whose function, sequence, result or payload differed from the command.
        bad_replies: u32,
        /// Elements the replies occupied.
        slots: u64,
        /// Continuation records received (elements beyond the first of a reply).
        continuations: u64,
    }

    /// Sends an echo of `payload` and checks the reply, skipping unasked events.
    fn echo(
        gsp: &mut nova_core::gsp::Gsp,
        bar: &nova_core::gsp::regs::Bar0,
        payload: &[u8],
        found: &mut Findings,
    ) -> Result {
        let seq = gsp.cmdq.send_command(bar, &Echo(payload))?;
        let reply: GspMessage = loop {
            let msg = gsp.cmdq.receive_msg(LONG)?;
            if msg.function != function::UCODE_LIBOS_PRINT {
                break msg;
            }
        };
        found.slots += u64::from(reply.elem_count);
        found.continuations += u64::from(reply.elem_count.saturating_sub(1) > 0);
        if reply.function != function::NOP
            || reply.sequence != seq
            || reply.rpc_result != 0
            || reply.payload[..] != *payload
        {
            found.bad_replies += 1;
        }
        Ok(())
    }

    #[test]
    fn boots_and_echoes_thousands_of_commands() -> Result {
        let payloads = Pair::pattern(4 * fw::MAX_ELEMENT_PAYLOAD, 7)?;
        let ((booted, sent, found, doorbells), stats) = with_gsp_thread(500, |gsp, bar, sim| {
            let mut found = Findings::default();
            let sysinfo = GspSetSystemInfo {
                gpu_phys_addr: 0xfd00_0000,
                nv_domain_bus_device_func: 0x0100,
                ..Default::default()
            };
            let booted = gsp.boot(bar, &sysinfo).map(|info| info.pci_device_id);
            let mut sent = 0u32;
            let mut len = 1usize;
            while booted.is_ok() && sent < ECHOES {
                // Sizes from 1 byte to 16 KiB, so elements of one to five slots wrap the
                // ring end, and every 97th a command split into a continuation record.
                len = (len * 7 + 13) % (16 << 10) + 1;
                if sent.is_multiple_of(97) {
                    len = 2 * fw::MAX_ELEMENT_PAYLOAD + 1;
                }
                let start = sent as usize % fw::MAX_ELEMENT_PAYLOAD;
                if echo(gsp, bar, &payloads[start..start + len], &mut found).is_err() {
                    break;
                }
                sent += 1;
            }
            (booted, sent, found, sim.doorbell_count())
        })?;
        let stats = stats?;
        assert!(
            booted.is_ok(),
            "bring-up failed: {booted:?}; the GSP handled {} commands in {} elements, {} doorbells",
            stats.commands,
            stats.elements_in,
            doorbells
        );
        assert_eq!(sent, ECHOES);
        assert_eq!(found.bad_replies, 0);
        assert!(found.continuations >= u64::from(ECHOES / 97));
        // Bring-up: system info, registry, static info; then the echoes.
        assert_eq!(stats.commands, 3 + u64::from(ECHOES));
        assert_eq!(stats.malformed, 0);
        // The driver rang the doorbell once per element it published.
        assert_eq!(doorbells, stats.elements_in);
        assert!(stats.elements_in > stats.commands);
        assert!(found.slots >= u64::from(ECHOES));
        Ok(())
    }

    #[test]
    fn gsp_thread_stops_when_idle() -> Result {
        let (rung, stats) = with_gsp_thread(0, |_, _, sim| sim.doorbell_count())?;
        assert_eq!(rung, 0);
        assert_eq!(stats?.commands, 0);
        Ok(())
    }
}
