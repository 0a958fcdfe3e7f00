// SPDX-License-Identifier: GPL-2.0

//! The CPU sequencer: the register sequences the GSP asks the driver to run at bring-up
//! (`GSP_RUN_CPU_SEQUENCER`), run against the bench's BAR0, whose registers the cases
//! set and read; every refusal, with its errno, and nothing run after it; and the
//! bring-up, where the virtual GSP asks for a sequence and records the driver's answer.

use kernel::prelude::*;
use nova_core::gsp::sequencer::{
    RunCpuSequencer,
    RunCpuSequencerHeader,
    SeqCmd,
    REG_SAVE_AREA, //
};

/// The sequence of `cmds`, as the GSP would send it.
///
/// # Errors
///
/// - `ENOMEM` if the words cannot be had.
pub fn sequence(cmds: &[SeqCmd]) -> Result<RunCpuSequencer> {
    let mut words = KVec::new();
    for cmd in cmds {
        cmd.encode(&mut words)?;
    }
    let len = u32::try_from(words.len()).map_err(|_| EINVAL)?;
    raw(&words, len)
}

/// A sequence of the words `words` whose header says `buffer_size_dwords`, however
/// wrong.
///
/// # Errors
///
/// - `ENOMEM` if the words cannot be had.
pub fn raw(words: &[u32], buffer_size_dwords: u32) -> Result<RunCpuSequencer> {
    let mut v = KVec::with_capacity(words.len(), GFP_KERNEL)?;
    v.extend_from_slice(words, GFP_KERNEL)?;
    Ok(RunCpuSequencer {
        header: RunCpuSequencerHeader {
            buffer_size_dwords,
            cmd_index: 0,
            reg_save_area: [0; REG_SAVE_AREA],
        },
        words: v,
        ragged: false,
    })
}

/// The cases of the `nova_core_gsp_sequencer` suite.
#[kunit_tests(nova_core_gsp_sequencer)]
pub mod tests {
    use kernel::prelude::*;
    use nova_core::gsp::{
        regs::{
            Bar0Registers,
            BAR0_SIZE, //
        },
        sequencer::{
            self,
            SeqCmd,
            CPUCTL_HALTED,
            CPUCTL_STARTCPU,
            FALCON_CPUCTL,
            FALCON_ENGINE,
            MAX_WAIT_US, //
        },
    };
    use vgsp::{
        BOOT_SEQUENCE,
        FALCON_MAILBOX0,
        FALCON_MAILBOX1, //
    };

    use super::{
        raw,
        sequence, //
    };
    use crate::{
        fixture::{check, TestBar},
        gsp_thread::{
            with_gsp_thread,
            with_gsp_thread_and, //
        },
    };

    /// A poll for bit 0 of the first mailbox, for up to `timeout_us`.
    fn poll_mailbox0(timeout_us: u32) -> SeqCmd {
        SeqCmd::RegPoll {
            addr: FALCON_MAILBOX0,
            mask: 1,
            val: 1,
            timeout_us,
            error: 0,
        }
    }

    /// `FALCON_MAILBOX0` as a BAR0 offset.
    const MB0: usize = FALCON_MAILBOX0 as usize;
    /// `FALCON_MAILBOX1` as a BAR0 offset.
    const MB1: usize = FALCON_MAILBOX1 as usize;

    #[test]
    fn the_boot_sequence_runs_against_bar0() -> Result {
        let bench = TestBar::new()?;
        let bar = bench.bar();
        let out = sequencer::run(bar, &sequence(BOOT_SEQUENCE)?);
        check!(out.result == Ok(()))?;
        check!(out.executed == 7 && out.failed_at.is_none())?;
        check!(Bar0Registers::read32(bar, MB0)? == 1)?;
        check!(Bar0Registers::read32(bar, MB1)? == 0x1200)?;
        check!(Bar0Registers::read32(bar, FALCON_ENGINE)? == 0)?;
        check!(Bar0Registers::read32(bar, FALCON_CPUCTL)? == CPUCTL_STARTCPU)?;
        check!(out.reg_save_area[0] == 1)
    }

    #[test]
    fn a_modify_keeps_the_bits_outside_its_mask() -> Result {
        let bench = TestBar::new()?;
        let bar = bench.bar();
        Bar0Registers::write32(bar, MB1, 0xdead_ffef)?;
        let cmd = SeqCmd::RegModify {
            addr: FALCON_MAILBOX1,
            mask: 0xff00,
            val: 0x1200,
        };
        check!(sequencer::run(bar, &sequence(&[cmd])?).result == Ok(()))?;
        check!(Bar0Registers::read32(bar, MB1)? == 0xdead_12ef)
    }

    #[test]
    fn an_unknown_opcode_is_refused_and_nothing_after_it_runs() -> Result {
        let bench = TestBar::new()?;
        let bar = bench.bar();
        let words = [0, FALCON_MAILBOX0, 1, 9, 0, FALCON_MAILBOX1, 2];
        let out = sequencer::run(bar, &raw(&words, 7)?);
        check!(out.result == Err(EINVAL))?;
        check!(out.executed == 1 && out.failed_at == Some(1))?;
        check!(Bar0Registers::read32(bar, MB0)? == 1)?;
        check!(Bar0Registers::read32(bar, MB1)? == 0)
    }

    #[test]
    fn an_offset_outside_bar0_is_refused() -> Result {
        let bench = TestBar::new()?;
        let addr = u32::try_from(BAR0_SIZE).map_err(|_| EINVAL)?;
        let out = sequencer::run(
            bench.bar(),
            &sequence(&[SeqCmd::RegWrite { addr, val: 1 }])?,
        );
        check!(out.result == Err(ERANGE) && out.failed_at == Some(0))
    }

    #[test]
    fn an_unaligned_offset_is_refused() -> Result {
        let bench = TestBar::new()?;
        let bar = bench.bar();
        let cmd = SeqCmd::RegWrite {
            addr: FALCON_MAILBOX0 + 1,
            val: 1,
        };
        check!(sequencer::run(bar, &sequence(&[cmd])?).result == Err(ERANGE))?;
        check!(Bar0Registers::read32(bar, MB0)? == 0)
    }

    #[test]
    fn a_command_cut_off_by_the_buffer_end_is_refused() -> Result {
        let bench = TestBar::new()?;
        // A `REG_WRITE` without its value.
        let out = sequencer::run(bench.bar(), &raw(&[0, FALCON_MAILBOX0], 2)?);
        check!(out.result == Err(EMSGSIZE) && out.executed == 0)
    }

    #[test]
    fn a_buffer_shorter_than_its_header_says_is_refused() -> Result {
        let bench = TestBar::new()?;
        let bar = bench.bar();
        let out = sequencer::run(bar, &raw(&[0, FALCON_MAILBOX0, 1], 4)?);
        check!(out.result == Err(EMSGSIZE) && out.failed_at == Some(0))?;
        // Nothing ran: the buffer was refused whole.
        check!(Bar0Registers::read32(bar, MB0)? == 0)
    }

    #[test]
    fn a_poll_that_never_succeeds_times_out() -> Result {
        let bench = TestBar::new()?;
        let cmd = poll_mailbox0(2000);
        check!(sequencer::run(bench.bar(), &sequence(&[cmd])?).result == Err(ETIMEDOUT))
    }

    #[test]
    fn a_poll_succeeds_once_the_bench_sets_the_register() -> Result {
        let bench = TestBar::new()?;
        let bar = bench.bar();
        Bar0Registers::write32(bar, MB0, 0x8001)?;
        let cmd = poll_mailbox0(2000);
        check!(sequencer::run(bar, &sequence(&[cmd])?).result == Ok(()))
    }

    #[test]
    fn a_save_index_outside_the_area_is_refused() -> Result {
        let bench = TestBar::new()?;
        let cmd = SeqCmd::RegStore {
            addr: FALCON_MAILBOX0,
            index: 8,
        };
        check!(sequencer::run(bench.bar(), &sequence(&[cmd])?).result == Err(EINVAL))
    }

    #[test]
    fn a_wait_longer_than_the_firmware_default_is_refused() -> Result {
        let bench = TestBar::new()?;
        let delay = SeqCmd::DelayUs(MAX_WAIT_US + 1);
        check!(sequencer::run(bench.bar(), &sequence(&[delay])?).result == Err(EINVAL))?;
        let poll = poll_mailbox0(MAX_WAIT_US + 1);
        check!(sequencer::run(bench.bar(), &sequence(&[poll])?).result == Err(EINVAL))
    }

    #[test]
    fn waiting_for_a_halt_ends_when_the_core_has_halted() -> Result {
        let bench = TestBar::new()?;
        let bar = bench.bar();
        Bar0Registers::write32(bar, FALCON_CPUCTL, CPUCTL_HALTED)?;
        let out = sequencer::run(
            bar,
            &sequence(&[SeqCmd::CoreWaitForHalt, SeqCmd::CoreResume])?,
        );
        check!(out.result == Ok(()) && out.executed == 2)?;
        check!(Bar0Registers::read32(bar, FALCON_CPUCTL)? == CPUCTL_STARTCPU)
    }

    #[test]
    fn the_bring_up_runs_the_gsps_sequence_and_answers_it() -> Result {
        let (booted, stats) = with_gsp_thread(0, |gsp, bar, _| {
            let booted = gsp.boot(bar, &vgsp::PCI_FUNCTION).map(|_| ());
            (booted, Bar0Registers::read32(bar, MB0))
        })?;
        let stats = stats?;
        check!(booted.0 == Ok(()) && booted.1 == Ok(1))?;
        check!(stats.sequences == 1)?;
        let done = stats.sequence_done.ok_or(EBADMSG)?;
        check!(done.errno == 0 && done.executed == 7 && done.failed_at == u32::MAX)?;
        check!(done.reg_save_area[0] == 1)
    }

    #[test]
    fn a_refused_sequence_is_answered_with_its_errno() -> Result {
        // Aligned, far past BAR0.
        let bad = [SeqCmd::RegWrite {
            addr: 0xffff_fffc,
            val: 1,
        }];
        let (booted, stats) = with_gsp_thread_and(
            0,
            |fw| fw.set_cpu_sequence(&bad),
            |gsp, bar, _| gsp.boot(bar, &vgsp::PCI_FUNCTION).map(|_| ()),
        )?;
        let stats = stats?;
        // The bring-up goes on: whether a refused sequence is fatal is the GSP's call.
        check!(booted == Ok(()))?;
        let done = stats.sequence_done.ok_or(EBADMSG)?;
        check!(done.errno == ERANGE.to_errno() && done.executed == 0 && done.failed_at == 0)
    }
}
