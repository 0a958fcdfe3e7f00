// SPDX-License-Identifier: GPL-2.0

//! The driver against the GSP behind QEMU's `ivshmem-doorbell` device: a separate host
//! process with its own view of the memory, reached through BAR0's doorbell, BAR2's
//! shared memory and an MSI-X vector.
//!
//! Kernel only: it needs the PCI device that `kernel::ivshmem` probes, and the runner
//! (`vgsp-qemu`) that starts the ivshmem server and the GSP process beside QEMU. The
//! fault cases ask the runner, through a console line, to kill the GSP process and to
//! start a new one.

#![cfg(CONFIG_RUST)]

use kernel::prelude::*;

/// The cases of the `nova_core_ivshmem` suite, in the order they run.
#[kunit_tests(nova_core_ivshmem)]
pub mod tests {
    use kernel::{
        ivshmem,
        prelude::*,
        time::{
            Delta,
            Instant, //
        },
    };
    use nova_core::{
        gsp::{
            cmdq::{
                GspMessage,
                MsgqSignal, //
            },
            commands::{
                Echo,
                GspSetSystemInfo, //
            },
            fw::{
                self,
                function, //
            },
            Gsp,
        },
        ivshmem::{
            IvshmemGsp,
            PeerDoorbell, //
        },
    };

    use crate::fixture::Pair;

    /// How long a case waits for a GSP process to attach (a restarted one included).
    const ATTACH_TIMEOUT: Delta = Delta::from_secs(30);
    /// How long a case waits for each reply.
    const REPLY_TIMEOUT: Delta = Delta::from_secs(5);
    /// How long the kill case goes on echoing, waiting for the kill to land (ms).
    const KILL_DEADLINE_MS: i64 = 60_000;
    /// The `--log-every` the runner gives the GSP process.
    const LOG_EVERY: u32 = 100;

    /// The device's MSI-X vector as the queue's signal.
    struct Msix;

    impl MsgqSignal for Msix {
        fn count(&self) -> u64 {
            ivshmem::device().map_or(0, |dev| dev.interrupts())
        }

        fn wait(&self, seen: u64, timeout: Delta) {
            if let Ok(dev) = ivshmem::device() {
                dev.wait_interrupt(seen, timeout);
            }
        }
    }

    static MSIX: Msix = Msix;

    /// Runs `f` with the driver's side of the probed device.
    fn with_device<R>(f: impl FnOnce(&mut IvshmemGsp<'static>) -> Result<R>) -> Result<R> {
        let dev = ivshmem::device()?;
        let (shm, len) = dev.shared_memory();
        let signal: Option<&'static dyn MsgqSignal> = match dev.has_msix() {
            true => Some(&MSIX),
            false => None,
        };
        // SAFETY: BAR2 stays mapped while the device is bound, which it is for the life of
        // the kernel (`device()` returns it as `'static`); the cases run one at a time and
        // only through this value.
        let mut iv = unsafe { IvshmemGsp::new(dev.bar0(), shm, len, signal)? };
        f(&mut iv)
    }

    /// Attaches to a GSP (one other than generation `after`, if given) and boots it.
    fn attach_and_boot(iv: &mut IvshmemGsp<'static>, after: Option<u32>) -> Result<u32> {
        let generation = iv.attach(after, ATTACH_TIMEOUT)?;
        let (gsp, bell) = iv.gsp()?;
        let sysinfo = GspSetSystemInfo {
            gpu_phys_addr: 0xfd00_0000,
            nv_domain_bus_device_func: 0x0200,
            ..Default::default()
        };
        let info = gsp.boot(&bell, &sysinfo)?;
        if info.gpu_name() != vgsp::GPU_NAME || info.fb_length != vgsp::FB_LENGTH {
            return Err(EIO);
        }
        Ok(generation)
    }

    /// What the echoes found.
    #[derive(Default)]
    struct Echoes {
        /// Replies whose function, sequence, result or payload differed.
        bad: u32,
        /// Replies that came in more than one element.
        split: u32,
        /// Unasked log lines received in between.
        events: u32,
    }

    /// Sends an echo of `payload` and checks the reply, counting unasked events.
    fn echo(gsp: &mut Gsp, bell: &PeerDoorbell<'_>, payload: &[u8], found: &mut Echoes) -> Result {
        let seq = gsp.cmdq.send_command(bell, &Echo(payload))?;
        let reply: GspMessage = loop {
            let msg = gsp.cmdq.receive_msg(REPLY_TIMEOUT)?;
            if msg.function != function::UCODE_LIBOS_PRINT {
                break msg;
            }
            found.events += 1;
        };
        if reply.function != function::NOP
            || reply.sequence != seq
            || reply.rpc_result != 0
            || reply.payload[..] != *payload
        {
            found.bad += 1;
        }
        found.split += u32::from(reply.elem_count > 1);
        Ok(())
    }

    /// Sends `count` echoes of sizes from 1 byte to 16 KiB, every 97th split into a
    /// continuation record.
    fn echoes(iv: &mut IvshmemGsp<'static>, count: u32) -> Result<(u32, Echoes)> {
        let payloads = Pair::pattern(4 * fw::MAX_ELEMENT_PAYLOAD, 11)?;
        let (gsp, bell) = iv.gsp()?;
        let mut found = Echoes::default();
        let mut len = 1usize;
        for sent in 0..count {
            len = (len * 7 + 13) % (16 << 10) + 1;
            if sent % 97 == 0 {
                len = 2 * fw::MAX_ELEMENT_PAYLOAD + 1;
            }
            let start = sent as usize % fw::MAX_ELEMENT_PAYLOAD;
            if let Err(e) = echo(gsp, &bell, &payloads[start..start + len], &mut found) {
                pr_err!("echo {sent} of {len} bytes failed: {e:?}\n");
                return Ok((sent, found));
            }
        }
        Ok((count, found))
    }

    #[test]
    fn boots_through_the_device() -> Result {
        let dev = ivshmem::device()?;
        pr_info!(
            "ivshmem: BAR2 {} KiB, MSI-X {}\n",
            dev.shared_memory().1 >> 10,
            dev.has_msix()
        );
        let (generation, log_lines) = with_device(|iv| {
            let generation = attach_and_boot(iv, None)?;
            Ok((generation, iv.gsp()?.0.log_lines))
        })?;
        assert!(generation >= 1);
        // The boot log came as unasked events before GSP_INIT_DONE.
        assert!(log_lines > 0);
        Ok(())
    }

    #[test]
    fn echoes_a_thousand_commands_of_mixed_sizes() -> Result {
        let (sent, found) = with_device(|iv| {
            attach_and_boot(iv, None)?;
            echoes(iv, 1000)
        })?;
        assert_eq!(sent, 1000);
        assert_eq!(found.bad, 0);
        // Every 97th command and its reply are split: 11 of them.
        assert!(found.split >= 11);
        Ok(())
    }

    #[test]
    fn receives_an_unasked_event() -> Result {
        let (idle, events, line, after) = with_device(|iv| {
            attach_and_boot(iv, None)?;
            let (gsp, bell) = iv.gsp()?;
            // Nothing is pending after bring-up.
            let idle = gsp.cmdq.receive_msg(Delta::from_millis(100)).err();
            // The GSP logs after every `LOG_EVERY`th command; bring-up sent three.
            let mut found = Echoes::default();
            for _ in 3..LOG_EVERY {
                echo(gsp, &bell, b"ping", &mut found)?;
            }
            // The line follows the reply to the command that made it, unasked.
            let line = gsp.cmdq.receive_msg(REPLY_TIMEOUT)?;
            let after = gsp.cmdq.receive_msg(Delta::from_millis(100)).err();
            Ok((idle, found.events, line, after))
        })?;
        assert_eq!(idle, Some(ETIMEDOUT));
        assert_eq!(events, 0);
        assert_eq!(line.function, function::UCODE_LIBOS_PRINT);
        assert!(line.payload[..] == b"vgsp: 100 commands handled"[..]);
        assert_eq!(after, Some(ETIMEDOUT));
        Ok(())
    }

    #[test]
    fn carries_a_continuation_pair() -> Result {
        let (reply_elems, equal) = with_device(|iv| {
            attach_and_boot(iv, None)?;
            let (gsp, bell) = iv.gsp()?;
            // One byte more than an element holds: a head and one continuation record.
            let payload = Pair::pattern(fw::MAX_ELEMENT_PAYLOAD + 1, 3)?;
            let seq = gsp.cmdq.send_command(&bell, &Echo(&payload))?;
            let reply = gsp.cmdq.receive_msg(REPLY_TIMEOUT)?;
            let equal = reply.function == function::NOP
                && reply.sequence == seq
                && reply.payload[..] == payload[..];
            Ok((reply.elem_count, equal))
        })?;
        assert!(equal);
        // The head fills 16 slots, the continuation one more.
        assert_eq!(reply_elems, fw::MAX_ELEMENT_PAGES + 1);
        Ok(())
    }

    #[test]
    fn times_out_when_the_gsp_is_killed() -> Result {
        let (before, err, fault, waited) = with_device(|iv| {
            attach_and_boot(iv, None)?;
            let (before, _) = echoes(iv, 10)?;
            pr_info!("vgsp-ivshmem: request: kill-gsp\n");
            let (gsp, bell) = iv.gsp()?;
            let start = Instant::now();
            let mut found = Echoes::default();
            // Echoes go on until the kill lands; the first one after it must time out.
            let err = loop {
                match echo(gsp, &bell, b"still there?", &mut found) {
                    Ok(()) if start.elapsed().as_millis() < KILL_DEADLINE_MS => continue,
                    Ok(()) => break None,
                    Err(e) => break Some(e),
                }
            };
            let waited = start.elapsed().as_millis();
            Ok((before, err, gsp.cmdq.last_fault(), waited))
        })?;
        assert_eq!(before, 10);
        assert_eq!(err, Some(ETIMEDOUT));
        assert_eq!(fault, Some("nothing published in time"));
        assert!(waited < KILL_DEADLINE_MS);
        Ok(())
    }

    #[test]
    fn reattaches_after_the_gsp_restarts() -> Result {
        let (old, new, sent, bad) = with_device(|iv| {
            let old = iv.gsp_attach()?.generation();
            pr_info!("vgsp-ivshmem: request: start-gsp\n");
            let new = attach_and_boot(iv, Some(old))?;
            let (sent, found) = echoes(iv, 100)?;
            Ok((old, new, sent, found.bad))
        })?;
        assert_eq!(new, old + 1);
        assert_eq!(sent, 100);
        assert_eq!(bad, 0);
        Ok(())
    }
}
