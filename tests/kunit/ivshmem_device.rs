// SPDX-License-Identifier: GPL-2.0

//! The driver against the GSP behind QEMU's `ivshmem-doorbell` device: a separate host
//! process that reaches the driver's coherent allocation in guest RAM by its bus
//! address, told of it through BAR2's mailbox, rung through BAR0's doorbell, ringing
//! back through an MSI-X vector.
//!
//! Kernel only: it needs the PCI device that `vdev::ivshmem` probes, and the runner
//! (`vgsp-qemu`) that starts the ivshmem server and the GSP process beside QEMU. The
//! fault case asks the runner, through a console line, to kill the GSP process and then
//! to start a new one.
//!
//! Every case stands alone: it attaches to the GSP process that is running (a new
//! session, on fresh queues) and boots it, and leaves a GSP process running; the kill
//! and the restart are one case, so no case depends on another having run before it.

#![cfg(CONFIG_VGSP_IVSHMEM)]

use kernel::prelude::*;

/// The cases of the `nova_core_ivshmem` suite, each of them standalone.
#[kunit_tests(nova_core_ivshmem)]
pub mod tests {
    use kernel::{
        prelude::*,
        time::{
            Delta,
            Instant,
            Monotonic, //
        },
    };
    use nova_core::gsp::{
        cmdq::{
            BenchSeam,
            GspMessage,
            MsgqSignal, //
        },
        fault::Fault,
        fw, Gsp,
    };
    use nova_testbench::{
        ivshmem::{
            IvshmemGsp,
            PeerDoorbell, //
        },
        rpc::{
            Echo,
            VGSP_ECHO, //
        },
        ReceiveAny,
    };

    use vdev::ivshmem;

    use crate::{
        fixture::Pair,
        gsp_e2e::{
            mixed_sizes,
            WireCost,
            SPLIT_EVERY, //
        },
    };

    /// How long a case waits for a GSP process to attach (a restarted one included).
    const ATTACH_TIMEOUT: Delta = Delta::from_secs(30);
    /// How long a case waits for each reply.
    const REPLY_TIMEOUT: Delta = Delta::from_secs(5);
    /// How long the kill case goes on echoing, waiting for the kill to land (ms).
    const KILL_DEADLINE_MS: i64 = 60_000;
    /// The `--log-every` the runner gives the GSP process.
    const LOG_EVERY: u32 = 100;
    /// The lines of the virtual GSP's boot log, sent before `GSP_INIT_DONE`.
    const BOOT_LOG_LINES: u64 = 3;

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
        let signal: Option<&'static dyn MsgqSignal> = match dev.has_msix() {
            true => Some(&MSIX),
            false => None,
        };
        let mut iv = IvshmemGsp::new(dev.bar0(), dev.mailbox(), dev.dev(), signal);
        f(&mut iv)
    }

    /// Attaches to a GSP (one other than generation `after`, if given) and boots it.
    fn attach_and_boot(iv: &mut IvshmemGsp<'static>, after: Option<u32>) -> Result<u32> {
        let generation = iv.attach(after, ATTACH_TIMEOUT)?;
        let (gsp, bell) = iv.gsp()?;
        let info = gsp.boot(&bell, &vgsp::PCI_FUNCTION)?;
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
        /// Replies that came in more than one element: more slots than a head fills.
        split: u64,
        /// Slots the replies occupied, continuation records included.
        slots: u64,
    }

    /// Sends an echo of `payload` and checks the reply (the GSP's log lines go to its
    /// log's handler on the way).
    fn echo(gsp: &Gsp, bell: &PeerDoorbell<'_>, payload: &[u8], found: &mut Echoes) -> Result {
        let seq = gsp.cmdq().post(bell, &Echo(payload))?;
        let reply: GspMessage = gsp.cmdq().receive_any(REPLY_TIMEOUT)?;
        if reply.function() != VGSP_ECHO
            || reply.sequence != seq
            || reply.rpc_result != 0
            || reply.payload[..] != *payload
        {
            found.bad += 1;
        }
        found.split += u64::from(reply.elem_count > fw::MAX_ELEMENT_PAGES);
        found.slots += u64::from(reply.elem_count);
        Ok(())
    }

    /// Sends the first `count` echoes of the mixed-size workload ([`mixed_sizes`]: 1 byte
    /// to 16 KiB, every 97th split into continuation records).
    fn echoes(iv: &mut IvshmemGsp<'static>, count: u32) -> Result<(u32, Echoes)> {
        let payloads = Pair::pattern(4 * fw::MAX_ELEMENT_PAYLOAD, 11)?;
        let (gsp, bell) = iv.gsp()?;
        let mut found = Echoes::default();
        for (sent, len) in (0..count).zip(mixed_sizes()) {
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
            "ivshmem: mailbox (BAR2) {} KiB, MSI-X {}\n",
            ivshmem::MAILBOX_SIZE >> 10,
            dev.has_msix()
        );
        let (generation, log_lines) = with_device(|iv| {
            let generation = attach_and_boot(iv, None)?;
            Ok((generation, iv.gsp()?.0.log_lines()))
        })?;
        // 1 for the GSP process the runner started first; more if the fault case, which
        // restarts it, ran before.
        assert!(generation >= 1);
        // The boot log came whole, as unasked events before GSP_INIT_DONE.
        assert_eq!(log_lines, BOOT_LOG_LINES);
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
        // Every 97th reply is split, and each takes the slots its length needs.
        let want = WireCost::of(mixed_sizes().take(1000));
        assert_eq!(want.split, u64::from(1000u32.div_ceil(SPLIT_EVERY)));
        assert_eq!(found.split, want.split);
        assert_eq!(found.slots, want.slots);
        Ok(())
    }

    #[test]
    fn receives_an_unasked_event() -> Result {
        let (idle, before, after, lines) = with_device(|iv| {
            attach_and_boot(iv, None)?;
            let (gsp, bell) = iv.gsp()?;
            // Nothing is pending after bring-up.
            let idle = gsp.cmdq().receive_any(Delta::from_millis(100)).err();
            let booted = gsp.log_lines();
            // The GSP logs after every `LOG_EVERY`th command; bring-up sent three.
            let mut found = Echoes::default();
            for _ in 3..LOG_EVERY {
                echo(gsp, &bell, b"ping", &mut found)?;
            }
            let before = gsp.log_lines() - booted;
            // The line follows the reply to the command that made it, unasked: the next
            // receive hands it to the log's handler, and finds nothing else. The GSP, a
            // process of its own, may be run late on a busy machine: a second for it.
            let after = gsp.cmdq().receive_any(Delta::from_millis(1000)).err();
            Ok((idle, before, after, gsp.log_lines() - booted))
        })?;
        assert_eq!(idle, Some(ETIMEDOUT));
        assert_eq!(before, 0);
        assert_eq!(after, Some(ETIMEDOUT));
        assert_eq!(lines, 1);
        Ok(())
    }

    #[test]
    fn carries_a_continuation_pair() -> Result {
        let (reply_elems, equal) = with_device(|iv| {
            attach_and_boot(iv, None)?;
            let (gsp, bell) = iv.gsp()?;
            // One byte more than an element holds: a head and one continuation record.
            let payload = Pair::pattern(fw::MAX_ELEMENT_PAYLOAD + 1, 3)?;
            let seq = gsp.cmdq().post(&bell, &Echo(&payload))?;
            let reply = gsp.cmdq().receive_any(REPLY_TIMEOUT)?;
            let equal = reply.function() == VGSP_ECHO
                && reply.sequence == seq
                && reply.payload[..] == payload[..];
            Ok((reply.elem_count, equal))
        })?;
        assert!(equal);
        // The head fills 16 slots, the continuation one more.
        assert_eq!(reply_elems, fw::MAX_ELEMENT_PAGES + 1);
        Ok(())
    }

    /// What the fault case saw between the kill and the restart.
    struct Killed {
        /// The first echo's error after the kill (`None` if none failed in time).
        err: Option<Error>,
        /// The queue's fault for it.
        fault: Option<Fault>,
        /// How long the echoes went on, in milliseconds.
        waited: i64,
    }

    /// Echoes until the kill the runner was asked for lands, or [`KILL_DEADLINE_MS`].
    fn echo_until_killed(iv: &mut IvshmemGsp<'static>) -> Result<Killed> {
        let (gsp, bell) = iv.gsp()?;
        let start = Instant::<Monotonic>::now();
        let mut found = Echoes::default();
        // Echoes go on until the kill lands; the first one after it must time out.
        let err = loop {
            match echo(gsp, &bell, b"still there?", &mut found) {
                Ok(()) if start.elapsed().as_millis() < KILL_DEADLINE_MS => continue,
                Ok(()) => break None,
                Err(e) => break Some(e),
            }
        };
        Ok(Killed {
            err,
            fault: gsp.cmdq().last_fault(),
            waited: start.elapsed().as_millis(),
        })
    }

    /// The kill and the restart are one case: a case that killed the GSP and left none
    /// would fail every case after it.
    #[test]
    fn times_out_when_the_gsp_is_killed_and_reattaches_after_a_restart() -> Result {
        let (old, before, killed, new, sent, bad) = with_device(|iv| {
            let old = attach_and_boot(iv, None)?;
            let (before, _) = echoes(iv, 10)?;
            pr_info!("vgsp-ivshmem: request: kill-gsp\n");
            let killed = echo_until_killed(iv);
            // Whatever the echoes saw, a GSP process is started again for what follows.
            pr_info!("vgsp-ivshmem: request: start-gsp\n");
            let killed = killed?;
            let new = attach_and_boot(iv, Some(old))?;
            let (sent, found) = echoes(iv, 100)?;
            Ok((old, before, killed, new, sent, found.bad))
        })?;
        assert_eq!(before, 10);
        assert_eq!(killed.err, Some(ETIMEDOUT));
        assert_eq!(killed.fault, Some(Fault::NothingPublished));
        assert!(killed.waited < KILL_DEADLINE_MS);
        assert_eq!(new, old + 1);
        assert_eq!(sent, 100);
        assert_eq!(bad, 0);
        Ok(())
    }
}
