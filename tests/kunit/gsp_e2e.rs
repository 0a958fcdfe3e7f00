// SPDX-License-Identifier: GPL-2.0

//! End to end: the virtual GSP on its own thread (the second CPU in a kernel), woken by
//! the doorbell; the driver boots it and pushes thousands of commands through the rings.

use kernel::prelude::*;
use nova_core::gsp::fw;
use nova_testbench::rpc::element_count_for_rpc;

/// Every how many echoes of [`mixed_sizes`] one is of [`SPLIT_LEN`] bytes.
pub const SPLIT_EVERY: u32 = 97;

/// The payload of the split echoes of [`mixed_sizes`]: one byte more than two elements
/// hold, so a head and two continuation records, the last of one slot.
pub const SPLIT_LEN: usize = 2 * fw::MAX_ELEMENT_PAYLOAD + 1;

/// Returns the payload lengths of the mixed-size echo workload (this suite's and
/// `nova_core_ivshmem`'s): from 1 byte to 16 KiB, so that elements of one to five slots
/// wrap the ring end, and every [`SPLIT_EVERY`]th, the first included, [`SPLIT_LEN`].
pub fn mixed_sizes() -> impl Iterator<Item = usize> {
    let mut len = 1usize;
    (0u32..).map(move |sent| {
        len = (len * 7 + 13) % (16 << 10) + 1;
        if sent.is_multiple_of(SPLIT_EVERY) {
            len = SPLIT_LEN;
        }
        len
    })
}

/// What RPCs take on one ring, by the layout of `fw`: each is cut into elements of
/// [`fw::MAX_ELEMENT_PAYLOAD`] payload bytes, the last one holding the rest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WireCost {
    /// RPCs sent as more than one element.
    pub split: u64,
    /// Elements: heads and continuation records.
    pub elements: u64,
    /// Continuation records.
    pub continuations: u64,
    /// Slots the elements occupy.
    pub slots: u64,
}

impl WireCost {
    /// Returns the cost of RPCs with the payload lengths `lens`.
    pub fn of(lens: impl IntoIterator<Item = usize>) -> Self {
        let mut cost = Self::default();
        for len in lens {
            let elements = element_count_for_rpc(len);
            let last = len - (elements - 1) * fw::MAX_ELEMENT_PAYLOAD;
            // CAST: at most `MAX_RPC_PAYLOAD / MAX_ELEMENT_PAYLOAD` elements, a few dozen.
            let (elements, full) = (elements as u64, (elements - 1) as u32);
            cost.split += u64::from(elements > 1);
            cost.elements += elements;
            cost.continuations += elements - 1;
            cost.slots += u64::from(
                full * fw::element::elem_count_for(fw::MAX_ELEMENT_PAYLOAD)
                    + fw::element::elem_count_for(last),
            );
        }
        cost
    }
}

/// The cases of the `nova_core_gsp_e2e` suite.
#[kunit_tests(nova_core_gsp_e2e)]
pub mod tests {
    use kernel::prelude::*;
    use nova_core::gsp::{
        cmdq::GspMessage,
        commands::{
            RmControl,
            RmControlHeader,
            UnloadingGuestDriver,
            UnloadingGuestDriverReply, //
        },
        fw::{
            self,
            MsgFunction, //
        },
    };
    use nova_core::{
        gsp::Gsp,
        num::FromSafeCast, //
    };
    use nova_testbench::{
        rpc::{
            element_count_for_rpc,
            Echo,
            EchoHeader,
            VGSP_ECHO, //
        },
        ReceiveAny,
    };

    use super::{
        mixed_sizes,
        WireCost,
        SPLIT_EVERY,
        SPLIT_LEN, //
    };
    use crate::{
        fixture::{
            Pair,
            SimBar0,
            LONG,
            REPLY, //
        },
        gsp_thread::with_gsp_thread,
    };

    /// Commands each of the typed-send cases sends.
    const ROUNDS: usize = 10;
    /// Echo commands the mixed-size case sends.
    const ECHOES: u32 = 3000;
    /// The GSP's `log_every` in the mixed-size case.
    const LOG_EVERY: u64 = 500;
    /// The commands of bring-up: system info, registry, the answer to the CPU sequence,
    /// static info, one element each.
    const BRING_UP_COMMANDS: u64 = 4;
    /// The unasked messages of bring-up: the CPU sequence, three log lines and
    /// `GSP_INIT_DONE`.
    const BRING_UP_EVENTS: u64 = 5;

    /// What the driver saw; checked after the GSP thread has been joined.
    #[derive(Default)]
    struct Findings {
        /// Replies whose function, sequence, result or payload differed from the command.
        bad_replies: u32,
        /// Slots the replies occupied, continuation records included.
        slots: u64,
        /// Replies that came as more than one element: more slots than a head fills.
        split: u64,
    }

    /// Sends an echo of `payload` and checks the reply, skipping unasked events.
    fn echo(
        gsp: &nova_core::gsp::Gsp,
        bar: &crate::fixture::SimBar0<'_>,
        payload: &[u8],
        found: &mut Findings,
    ) -> Result {
        let seq = gsp.cmdq().post(bar, &Echo(payload))?;
        let reply: GspMessage = loop {
            let msg = gsp.cmdq().receive_any(LONG)?;
            if msg.function() != MsgFunction::UCODE_LIBOS_PRINT {
                break msg;
            }
        };
        found.slots += u64::from(reply.elem_count);
        found.split += u64::from(reply.elem_count > fw::MAX_ELEMENT_PAGES);
        if reply.function() != VGSP_ECHO
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
        let ((booted, sent, found, doorbells), stats) =
            with_gsp_thread(LOG_EVERY, |gsp, bar, sim| {
                let mut found = Findings::default();
                let booted = gsp
                    .boot(bar, &vgsp::PCI_FUNCTION)
                    .map(|info| info.fb_length);
                let mut sent = 0u32;
                // No echo if bring-up failed.
                let echoes = if booted.is_ok() { ECHOES } else { 0 };
                for len in mixed_sizes().take(echoes as usize) {
                    let start = sent as usize % fw::MAX_ELEMENT_PAYLOAD;
                    if echo(gsp, bar, &payloads[start..start + len], &mut found).is_err() {
                        break;
                    }
                    sent += 1;
                }
                (booted, sent, found, sim.doorbell_count())
            })?;
        let stats = stats?;
        if booted.is_err() {
            pr_err!(
                "bring-up failed: {booted:?}; the GSP handled {} commands in {} elements, {} doorbells\n",
                stats.commands,
                stats.elements_in,
                doorbells
            );
        }
        // KUnit's assertions take a condition alone: what failed is printed above.
        assert!(booted.is_ok());
        assert_eq!(sent, ECHOES);
        assert_eq!(found.bad_replies, 0);
        assert_eq!(stats.commands, BRING_UP_COMMANDS + u64::from(ECHOES));
        assert_eq!(stats.malformed, 0);
        // Static info and the echoes are answered; the other two bring-up commands not.
        assert_eq!(stats.replies, 1 + u64::from(ECHOES));
        assert_eq!(stats.events, BRING_UP_EVENTS + stats.commands / LOG_EVERY);

        // An echo command carries the 8-byte echo header and the bytes, its reply the bytes
        // alone. Bring-up's commands and messages are one element each.
        let header = core::mem::size_of::<EchoHeader>();
        let sent = WireCost::of(mixed_sizes().take(ECHOES as usize).map(|len| header + len));
        let want = WireCost::of(mixed_sizes().take(ECHOES as usize));
        // The workload splits what it says it splits: every `SPLIT_EVERY`th echo, into
        // a head and two continuation records.
        assert_eq!(want.split, u64::from(ECHOES.div_ceil(SPLIT_EVERY)));
        assert_eq!(
            want.continuations,
            want.split * (element_count_for_rpc(SPLIT_LEN) as u64 - 1)
        );
        assert_eq!(stats.elements_in, BRING_UP_COMMANDS + sent.elements);
        assert_eq!(stats.continuations_in, sent.continuations);
        assert_eq!(stats.continuations_out, want.continuations);
        assert_eq!(found.split, want.split);
        assert_eq!(found.slots, want.slots);
        // The driver rang the doorbell once per element it published.
        assert_eq!(doorbells, stats.elements_in);
        Ok(())
    }

    #[test]
    fn gsp_thread_stops_when_idle() -> Result {
        let (rung, stats) = with_gsp_thread(0, |_, _, sim| sim.doorbell_count())?;
        assert_eq!(rung, 0);
        assert_eq!(stats?.commands, 0);
        Ok(())
    }

    #[test]
    fn send_command_returns_the_typed_reply() -> Result {
        // Three elements: the reply is reassembled before it is read.
        let payload = Pair::pattern(3 * fw::MAX_ELEMENT_PAYLOAD, 5)?;
        let ((echoed, unloaded), stats) = with_gsp_thread(0, |gsp, bar, _| {
            let echoed = gsp
                .cmdq()
                .submit(bar, &Echo(&payload))
                .and_then(|p| p.wait(REPLY))
                .map(|reply| reply.0[..] == payload[..]);
            let unloaded = gsp
                .cmdq()
                .submit(bar, &UnloadingGuestDriver::default())
                .and_then(|p| p.wait(REPLY));
            (echoed, unloaded)
        })?;
        assert_eq!(echoed, Ok(true));
        assert_eq!(unloaded, Ok(UnloadingGuestDriverReply));
        assert_eq!(stats?.replies, 2);
        Ok(())
    }

    #[test]
    fn rm_control_echo_of_200_kib_returns_its_params() -> Result {
        // A head and three continuation records each way.
        let params = Pair::pattern(200 << 10, 11)?;
        let wire = core::mem::size_of::<RmControlHeader>() + params.len();
        let (echoed, stats) = with_gsp_thread(0, |gsp, bar, _| {
            let control = RmControl {
                h_client: 0xc1d0_0001,
                h_object: 0x5c00_0002,
                cmd: vgsp::VGSP_CTRL_CMD_ECHO,
                params: &params,
            };
            gsp.cmdq()
                .submit(bar, &control)
                .and_then(|p| p.wait(REPLY))
                .map(|reply| (reply.status, reply.params[..] == params[..]))
        })?;
        assert_eq!(echoed, Ok((fw::NV_OK, true)));
        let stats = stats?;
        let continuations = u64::from_safe_cast(element_count_for_rpc(wire)) - 1;
        assert_eq!(continuations, 3);
        assert_eq!(stats.commands, 1);
        assert_eq!(stats.replies, 1);
        assert_eq!(stats.malformed, 0);
        assert_eq!(stats.continuations_in, continuations);
        assert_eq!(stats.continuations_out, continuations);
        Ok(())
    }

    /// Sends [`ROUNDS`] pings through `gsp`'s queue; returns how many came back whole.
    fn ping_rounds(gsp: &Gsp, bar: &SimBar0<'_>) -> usize {
        (0..ROUNDS)
            .filter(|_| {
                gsp.cmdq()
                    .submit(bar, &Echo(b"ping"))
                    .and_then(|p| p.wait(REPLY))
                    .is_ok_and(|reply| reply.0[..] == b"ping"[..])
            })
            .count()
    }

    #[test]
    fn send_command_consumes_other_messages_before_its_reply() -> Result {
        // A log line after every command: each wait but the first meets one.
        let (echoed, stats) = with_gsp_thread(1, |gsp, bar, _| ping_rounds(gsp, bar))?;
        assert_eq!(echoed, ROUNDS);
        assert_eq!(stats?.events, ROUNDS as u64);
        Ok(())
    }

    #[test]
    fn the_log_lines_met_before_a_reply_are_printed() -> Result {
        let ((echoed, log_lines), _) =
            with_gsp_thread(1, |gsp, bar, _| (ping_rounds(gsp, bar), gsp.log_lines()))?;
        assert_eq!(echoed, ROUNDS);
        // The line after the last reply may come after the last wait.
        assert!(log_lines + 1 >= ROUNDS as u64);
        Ok(())
    }
}
