// SPDX-License-Identifier: GPL-2.0

//! The CPU sequencer: register sequences the GSP asks the driver to run for it.
//!
//! During bring-up the firmware sends `GSP_RUN_CPU_SEQUENCER` ([`RunCpuSequencerHeader`]):
//! a header, then a buffer of 32-bit words holding commands, each an opcode word and its
//! payload ([`SeqCmd`], r570's `GSP_SEQUENCER_BUFFER_CMD`). The driver runs them in order
//! against BAR0: register writes, read-modify-writes, polls, stores into the header's
//! register save area, delays, and operations on the GSP's core.
//!
//! # What the sequencer refuses
//!
//! A sequence runs up to its first bad command, which it refuses:
//!
//! - `EINVAL`: an unknown opcode; a `REG_STORE` index outside the save area; a delay or
//!   poll timeout above [`MAX_WAIT_US`].
//! - `ERANGE`: a register offset outside BAR0, or not 4-byte aligned.
//! - `EMSGSIZE`: a buffer shorter than `bufferSizeDWord`, or a command cut off by its end.
//! - `ETIMEDOUT`: a poll that timed out, or a core that never halted.
//! - `ENODEV`: no BAR0 (a device reached through a doorbell only).
//!
//! # The reply
//!
//! r570 firmware expects no answer: it watches its own core, which the sequence
//! restarts. The virtual GSP has no core to watch, so the driver answers with a
//! `GSP_RUN_CPU_SEQUENCER` command of its own ([`SequencerDone`]), a project convention
//! numbered with the firmware's function so nothing else could mistake it.
//!
//! # The GSP's core
//!
//! On a GPU the core operations are nova-core's falcon reset and SEC2 restart. The
//! virtual GPU has no falcon: they act on the GSP falcon's registers in BAR0
//! ([`FALCON_CPUCTL`], [`FALCON_ENGINE`]), which a test bench observes and drives (a core
//! halts when something sets `CPUCTL.HALTED`).

use kernel::{
    io::poll::read_poll_timeout,
    prelude::*,
    time::{
        delay::fsleep,
        Delta, //
    },
};
// The derives: see `fw`.
use zerocopy_derive::{
    FromBytes,
    Immutable,
    IntoBytes,
    KnownLayout, //
};

use crate::{
    gsp::{
        cmdq::{
            CommandToGsp,
            MessageFromGsp,
            NoReply, //
        },
        fw::{
            assert_layout,
            MsgFunction, //
        },
        regs::{
            Bar0Registers,
            BAR0_SIZE, //
        },
    },
    num::u32_as_usize,
};

/// Words in the header's register save area (`regSaveArea`).
pub const REG_SAVE_AREA: usize = 8;

/// The longest delay or poll a command may ask for: 4 s, the firmware's default.
pub const MAX_WAIT_US: u32 = 4_000_000;

/// How long `CORE_WAIT_FOR_HALT` waits for the core to halt.
pub(crate) const HALT_TIMEOUT: Delta = Delta::from_secs(2);

/// The GSP falcon's `CPUCTL` register in BAR0 (`NV_PGSP_FALCON_CPUCTL`).
pub const FALCON_CPUCTL: usize = 0x0011_0100;
/// `CPUCTL.STARTCPU`: starts (or resumes) the core.
pub const CPUCTL_STARTCPU: u32 = 1 << 1;
/// `CPUCTL.HALTED`: the core has halted.
pub const CPUCTL_HALTED: u32 = 1 << 4;
/// The GSP falcon's engine control register in BAR0 (`NV_PGSP_FALCON_ENGINE`).
pub const FALCON_ENGINE: usize = 0x0011_03c0;
/// `ENGINE.RESET`: holds the falcon in reset while set.
pub(crate) const ENGINE_RESET: u32 = 1;

/// The fixed part of `GSP_RUN_CPU_SEQUENCER` (r570's `rpc_run_cpu_sequencer_v17_00`).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct RunCpuSequencerHeader {
    /// The command buffer's length in 32-bit words (`bufferSizeDWord`).
    pub buffer_size_dwords: u32,
    /// The number of commands in it (`cmdIndex`), as the firmware counted them.
    pub cmd_index: u32,
    /// Where `REG_STORE` commands save register values (`regSaveArea`).
    pub reg_save_area: [u32; REG_SAVE_AREA],
}

assert_layout!(RunCpuSequencerHeader, size 0x28, {
    buffer_size_dwords: 0x0,
    cmd_index: 0x4,
    reg_save_area: 0x8,
});

/// One command of a sequence (r570's `GSP_SEQUENCER_BUFFER_CMD`), by opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeqCmd {
    /// `REG_WRITE` (0): writes `val` at `addr`.
    RegWrite {
        /// The register's offset in BAR0.
        addr: u32,
        /// The value.
        val: u32,
    },
    /// `REG_MODIFY` (1): clears `mask`'s bits at `addr`, then sets `val`'s.
    RegModify {
        /// The register's offset in BAR0.
        addr: u32,
        /// The bits to clear.
        mask: u32,
        /// The bits to set.
        val: u32,
    },
    /// `REG_POLL` (2): waits until the bits `mask` of `addr` equal `val`.
    RegPoll {
        /// The register's offset in BAR0.
        addr: u32,
        /// The bits compared.
        mask: u32,
        /// What they must become.
        val: u32,
        /// How long to wait, in microseconds; 0 for [`MAX_WAIT_US`].
        timeout_us: u32,
        /// The firmware's status code for a poll that timed out (reported back).
        error: u32,
    },
    /// `DELAY_US` (3): waits this many microseconds.
    DelayUs(u32),
    /// `REG_STORE` (4): saves the value at `addr` in the save area's word `index`.
    RegStore {
        /// The register's offset in BAR0.
        addr: u32,
        /// The save area's word.
        index: u32,
    },
    /// `CORE_RESET` (5): resets the GSP's core.
    CoreReset,
    /// `CORE_START` (6): starts the GSP's core.
    CoreStart,
    /// `CORE_WAIT_FOR_HALT` (7): waits until the GSP's core halts.
    CoreWaitForHalt,
    /// `CORE_RESUME` (8): resumes the halted core.
    CoreResume,
}

impl SeqCmd {
    /// The opcode (`GSP_SEQ_BUF_OPCODE`).
    pub(crate) const fn opcode(&self) -> u32 {
        match self {
            Self::RegWrite { .. } => 0,
            Self::RegModify { .. } => 1,
            Self::RegPoll { .. } => 2,
            Self::DelayUs(_) => 3,
            Self::RegStore { .. } => 4,
            Self::CoreReset => 5,
            Self::CoreStart => 6,
            Self::CoreWaitForHalt => 7,
            Self::CoreResume => 8,
        }
    }

    /// Decodes the command at the start of `words`; returns it and its length in words.
    ///
    /// # Errors
    ///
    /// - `EINVAL` for an unknown opcode.
    /// - `EMSGSIZE` if `words` ends inside the command.
    pub(crate) fn decode(words: &[u32]) -> Result<(Self, usize)> {
        let (&opcode, payload) = words.split_first().ok_or(EMSGSIZE)?;
        let want = match opcode {
            0 | 4 => 2,
            1 => 3,
            2 => 5,
            3 => 1,
            5..=8 => 0,
            _ => return Err(EINVAL),
        };
        let p = payload.get(..want).ok_or(EMSGSIZE)?;
        let cmd = match opcode {
            0 => Self::RegWrite {
                addr: p[0],
                val: p[1],
            },
            1 => Self::RegModify {
                addr: p[0],
                mask: p[1],
                val: p[2],
            },
            2 => Self::RegPoll {
                addr: p[0],
                mask: p[1],
                val: p[2],
                timeout_us: p[3],
                error: p[4],
            },
            3 => Self::DelayUs(p[0]),
            4 => Self::RegStore {
                addr: p[0],
                index: p[1],
            },
            5 => Self::CoreReset,
            6 => Self::CoreStart,
            7 => Self::CoreWaitForHalt,
            _ => Self::CoreResume,
        };
        Ok((cmd, 1 + want))
    }

    /// Appends the command's words to `out`.
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if `out` cannot grow.
    pub fn encode(&self, out: &mut KVec<u32>) -> Result {
        let words: &[u32] = match *self {
            Self::RegWrite { addr, val } => &[addr, val],
            Self::RegModify { addr, mask, val } => &[addr, mask, val],
            Self::RegPoll {
                addr,
                mask,
                val,
                timeout_us,
                error,
            } => &[addr, mask, val, timeout_us, error],
            Self::DelayUs(us) => &[us],
            Self::RegStore { addr, index } => &[addr, index],
            Self::CoreReset | Self::CoreStart | Self::CoreWaitForHalt | Self::CoreResume => &[],
        };
        out.push(self.opcode(), GFP_KERNEL)?;
        out.extend_from_slice(words, GFP_KERNEL)?;
        Ok(())
    }
}

/// A sequence the GSP asked for, as received (checked when run, so a bad one gets a reply).
pub struct RunCpuSequencer {
    /// The header.
    pub header: RunCpuSequencerHeader,
    /// The words after the header, as many as the message carries.
    pub words: KVec<u32>,
    /// The message had a partial word at its end.
    pub ragged: bool,
}

impl MessageFromGsp for RunCpuSequencer {
    const FUNCTION: MsgFunction = MsgFunction::GSP_RUN_CPU_SEQUENCER;
    type Message = RunCpuSequencerHeader;

    /// Keeps the words after the header as they came; [`run`] checks them, so a bad
    /// buffer gets an answer rather than failing the receive.
    fn read(header: &RunCpuSequencerHeader, rest: &[u8]) -> Result<Self> {
        let mut words = KVec::with_capacity(rest.len() / 4, GFP_KERNEL)?;
        for w in rest.chunks_exact(4) {
            words.push(u32::from_le_bytes([w[0], w[1], w[2], w[3]]), GFP_KERNEL)?;
        }
        Ok(Self {
            header: *header,
            words,
            ragged: !rest.len().is_multiple_of(4),
        })
    }
}

/// What running a sequence did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeqOutcome {
    /// `Ok`, or why the command at `failed_at` was refused.
    pub result: Result,
    /// Commands that ran to completion.
    pub executed: u32,
    /// The index of the refused command, if one was.
    pub failed_at: Option<u32>,
    /// The register save area after the sequence.
    pub reg_save_area: [u32; REG_SAVE_AREA],
}

/// Checks that `addr` is a register of BAR0.
fn register(addr: u32) -> Result<usize> {
    let addr = u32_as_usize(addr);
    if !addr.is_multiple_of(4) || addr > BAR0_SIZE - 4 {
        return Err(ERANGE);
    }
    Ok(addr)
}

/// Checks a delay or timeout against [`MAX_WAIT_US`].
fn wait(us: u32) -> Result<Delta> {
    if us > MAX_WAIT_US {
        return Err(EINVAL);
    }
    Ok(Delta::from_micros(i64::from(us)))
}

/// Polls `addr` until `done` holds of its value, for up to `timeout`.
fn poll(
    bar: &impl Bar0Registers,
    addr: usize,
    timeout: Delta,
    done: impl Fn(u32) -> bool,
) -> Result {
    read_poll_timeout(
        || bar.read32(addr),
        |v| done(*v),
        Delta::from_micros(10),
        timeout,
    )
    .map(|_| ())
}

impl SeqCmd {
    /// Runs the command against `bar`, saving into `save`.
    fn run(&self, bar: &impl Bar0Registers, save: &mut [u32; REG_SAVE_AREA]) -> Result {
        match *self {
            Self::RegWrite { addr, val } => bar.write32(register(addr)?, val),
            Self::RegModify { addr, mask, val } => {
                let addr = register(addr)?;
                let old = bar.read32(addr)?;
                bar.write32(addr, (old & !mask) | val)
            }
            Self::RegPoll {
                addr,
                mask,
                val,
                timeout_us,
                ..
            } => {
                let addr = register(addr)?;
                let timeout = wait(if timeout_us == 0 {
                    MAX_WAIT_US
                } else {
                    timeout_us
                })?;
                poll(bar, addr, timeout, |v| v & mask == val)
            }
            Self::DelayUs(us) => {
                fsleep(wait(us)?);
                Ok(())
            }
            Self::RegStore { addr, index } => {
                let addr = register(addr)?;
                let slot = save.get_mut(u32_as_usize(index)).ok_or(EINVAL)?;
                *slot = bar.read32(addr)?;
                Ok(())
            }
            Self::CoreReset => {
                bar.write32(FALCON_ENGINE, ENGINE_RESET)?;
                bar.write32(FALCON_ENGINE, 0)
            }
            Self::CoreStart | Self::CoreResume => bar.write32(FALCON_CPUCTL, CPUCTL_STARTCPU),
            Self::CoreWaitForHalt => {
                poll(bar, FALCON_CPUCTL, HALT_TIMEOUT, |v| v & CPUCTL_HALTED != 0)
            }
        }
    }
}

/// Runs `seq` against `bar`, up to its first bad command.
pub fn run(bar: &impl Bar0Registers, seq: &RunCpuSequencer) -> SeqOutcome {
    let mut out = SeqOutcome {
        result: Ok(()),
        executed: 0,
        failed_at: None,
        reg_save_area: seq.header.reg_save_area,
    };
    let len = u32_as_usize(seq.header.buffer_size_dwords);
    let Some(mut words) = seq.words.get(..len) else {
        out.result = Err(EMSGSIZE);
        out.failed_at = Some(0);
        return out;
    };
    while !words.is_empty() {
        let ran = SeqCmd::decode(words).and_then(|(cmd, n)| {
            cmd.run(bar, &mut out.reg_save_area)?;
            Ok(n)
        });
        match ran {
            Ok(n) => {
                words = &words[n..];
                out.executed += 1;
            }
            Err(e) => {
                out.result = Err(e);
                out.failed_at = Some(out.executed);
                return out;
            }
        }
    }
    // The firmware sends whole words: refuse a partial one, after the commands ran.
    if seq.ragged && len == seq.words.len() {
        out.result = Err(EMSGSIZE);
        out.failed_at = Some(out.executed);
    }
    out
}

/// The driver's answer to `GSP_RUN_CPU_SEQUENCER` (ours, see the module documentation).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct SequencerDone {
    /// 0, or the negative errno the sequence was refused with.
    pub errno: i32,
    /// Commands that ran to completion.
    pub executed: u32,
    /// The index of the refused command, or `u32::MAX`.
    pub failed_at: u32,
    /// Reserved, 0.
    pub pad: u32,
    /// The register save area after the sequence.
    pub reg_save_area: [u32; REG_SAVE_AREA],
}

assert_layout!(SequencerDone, size 0x30, {
    errno: 0x0,
    executed: 0x4,
    failed_at: 0x8,
    pad: 0xc,
    reg_save_area: 0x10,
});

impl From<&SeqOutcome> for SequencerDone {
    fn from(o: &SeqOutcome) -> Self {
        Self {
            errno: o.result.err().map_or(0, |e| e.to_errno()),
            executed: o.executed,
            failed_at: o.failed_at.unwrap_or(u32::MAX),
            pad: 0,
            reg_save_area: o.reg_save_area,
        }
    }
}

impl CommandToGsp for SequencerDone {
    const FUNCTION: MsgFunction = MsgFunction::GSP_RUN_CPU_SEQUENCER;
    type Command = Self;
    type Reply = NoReply;

    fn init(&self) -> Self {
        *self
    }
}
