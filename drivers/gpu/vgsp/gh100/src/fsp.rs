// SPDX-License-Identifier: GPL-2.0

//! The FSP, as far as nova-core talks to it: its EMEM channel, its command and message
//! queues, and the chain-of-trust message (COT) that starts the GSP.
//!
//! A message to the FSP is written word by word into EMEM through the auto-incrementing
//! data port, then announced by the command queue's tail (its last word's offset) and
//! head (written last). The reply goes back the same way: into EMEM, announced by the
//! message queue's head and tail, which the driver polls and then clears.
//!
//! Every message is one MCTP packet (start and end of message) carrying an NVDM header
//! (PCI vendor-defined type 0x7e, NVIDIA's vendor id, the NVDM type); a reply is type
//! `FSP_RESPONSE` with the task id, the type it answers and an error code.

use zerocopy_derive::{
    FromBytes,
    Immutable,
    IntoBytes,
    KnownLayout, //
};

use static_assertions::const_assert_eq;

/// The EMEM channel's size: messages and replies fit in 1 KiB.
pub const EMEM_SIZE: usize = 1024;
/// MCTP: start of message (bit 31) and end of message (bit 30).
pub const MCTP_SINGLE_PACKET: u32 = (1 << 31) | (1 << 30);
/// NVDM message type: PCI vendor-defined.
pub const NVDM_MSG_TYPE_VENDOR_PCI: u32 = 0x7e;
/// NVDM type of the chain-of-trust message.
pub const NVDM_TYPE_COT: u32 = 0x14;
/// NVDM type of a reply.
pub const NVDM_TYPE_FSP_RESPONSE: u32 = 0x15;
/// NVIDIA's PCI vendor id, as NVDM headers carry it.
pub const NVDM_VENDOR_NVIDIA: u32 = 0x10de;
/// The COT payload's version for GH100.
pub const COT_VERSION_GH100: u16 = 1;

/// Returns the NVDM header of `nvdm_type`.
pub const fn nvdm_header(nvdm_type: u32) -> u32 {
    (nvdm_type << 24) | (NVDM_VENDOR_NVIDIA << 8) | NVDM_MSG_TYPE_VENDOR_PCI
}

/// The chain-of-trust message as it sits in EMEM: the MCTP and NVDM headers, then the
/// packed COT payload.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C, packed)]
pub struct CotMessage {
    /// MCTP header.
    pub mctp: u32,
    /// NVDM header.
    pub nvdm: u32,
    /// Payload version.
    pub version: u16,
    /// Payload size in bytes.
    pub size: u16,
    /// The FMC image's bus address.
    pub gsp_fmc_sysmem_offset: u64,
    /// FRTS in system memory (unused by GH100).
    pub frts_sysmem_offset: u64,
    /// Its size.
    pub frts_sysmem_size: u32,
    /// FRTS's offset in the frame buffer.
    pub frts_vidmem_offset: u64,
    /// Its size.
    pub frts_vidmem_size: u32,
    /// The FMC's SHA-384 hash.
    pub hash384: [u8; 48],
    /// The FMC's public key.
    pub public_key: [u8; 384],
    /// The FMC's signature.
    pub signature: [u8; 384],
    /// `GSP_FMC_BOOT_PARAMS`' bus address.
    pub gsp_boot_args_sysmem_offset: u64,
}

/// The COT payload's size: the message less its two headers.
pub const COT_PAYLOAD_SIZE: usize = core::mem::size_of::<CotMessage>() - 8;
const_assert_eq!(core::mem::size_of::<CotMessage>(), 868);

/// The FSP's reply: the two headers, then the task id, the NVDM type answered and the
/// error code (0: success).
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C, packed)]
pub struct Response {
    /// MCTP header.
    pub mctp: u32,
    /// NVDM header, type `FSP_RESPONSE`.
    pub nvdm: u32,
    /// The task that answered (0).
    pub task_id: u32,
    /// The NVDM type of the message answered.
    pub command_nvdm_type: u32,
    /// 0 on success.
    pub error_code: u32,
}

impl Response {
    /// The reply to a message of `nvdm_type`, with `error_code`.
    pub fn to(nvdm_type: u32, error_code: u32) -> Self {
        Self {
            mctp: MCTP_SINGLE_PACKET,
            nvdm: nvdm_header(NVDM_TYPE_FSP_RESPONSE),
            task_id: 0,
            command_nvdm_type: nvdm_type,
            error_code,
        }
    }
}

/// The FSP's EMEM channel and queues.
pub struct Fsp {
    emem: [u8; EMEM_SIZE],
    /// The byte EMEMD reaches next.
    cursor: usize,
    auto_write: bool,
    auto_read: bool,
    queue_head: u32,
    queue_tail: u32,
    msgq_head: u32,
    msgq_tail: u32,
}

impl Default for Fsp {
    fn default() -> Self {
        Self {
            emem: [0; EMEM_SIZE],
            cursor: 0,
            auto_write: false,
            auto_read: false,
            queue_head: 0,
            queue_tail: 0,
            msgq_head: 0,
            msgq_tail: 0,
        }
    }
}

impl Fsp {
    /// `EMEMC` written: the offset (bits 7:2 words, 15:8 blocks of 256 bytes) and the
    /// auto-increments.
    pub fn set_control(&mut self, value: u32) {
        // CAST: at most 255 blocks of 256 bytes.
        self.cursor = (((value >> 8) & 0xff) * 256 + ((value >> 2) & 0x3f) * 4) as usize;
        self.auto_write = value & crate::regs::EMEMC_AINCW != 0;
        self.auto_read = value & crate::regs::EMEMC_AINCR != 0;
    }

    /// `EMEMC` read back.
    pub fn control(&self) -> u32 {
        // The cursor's block and word, as the register's fields hold them (an
        // auto-increment may have run past EMEM: the block field keeps its low bits).
        let (blk, offs) = ((self.cursor / 256) & 0xff, (self.cursor % 256) / 4);
        // CAST: both fit their fields, 8 and 6 bits.
        ((blk as u32) << 8)
            | ((offs as u32) << 2)
            | if self.auto_write {
                crate::regs::EMEMC_AINCW
            } else {
                0
            }
            | if self.auto_read {
                crate::regs::EMEMC_AINCR
            } else {
                0
            }
    }

    /// `EMEMD` written; returns `false` if the cursor was past EMEM (the word is lost).
    pub fn write_data(&mut self, value: u32) -> bool {
        let inside = match self.emem.get_mut(self.cursor..self.cursor + 4) {
            Some(word) => {
                word.copy_from_slice(&value.to_le_bytes());
                true
            }
            None => false,
        };
        if self.auto_write {
            self.cursor = self.cursor.saturating_add(4);
        }
        inside
    }

    /// `EMEMD` read; `None` if the cursor was past EMEM.
    pub fn read_data(&mut self) -> Option<u32> {
        let value = self
            .emem
            .get(self.cursor..self.cursor + 4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        if self.auto_read {
            self.cursor = self.cursor.saturating_add(4);
        }
        value
    }

    /// The command queue's tail written.
    pub fn set_queue_tail(&mut self, value: u32) {
        self.queue_tail = value;
    }

    /// The command queue's head written: returns the command it announces, the EMEM
    /// bytes from the head to the tail's word.
    pub fn set_queue_head(&mut self, value: u32) -> Option<Vec<u8>> {
        self.queue_head = value;
        let start = usize::try_from(value).ok()?;
        let end = usize::try_from(self.queue_tail).ok()?.checked_add(4)?;
        self.emem.get(start..end).map(<[u8]>::to_vec)
    }

    /// The queue registers' values: command head, command tail, message head, message
    /// tail.
    pub fn queues(&self) -> [u32; 4] {
        [
            self.queue_head,
            self.queue_tail,
            self.msgq_head,
            self.msgq_tail,
        ]
    }

    /// The message queue's head or tail written by the driver (clearing them once the
    /// reply is read).
    pub fn set_msgq(&mut self, head: Option<u32>, tail: Option<u32>) {
        if let Some(head) = head {
            self.msgq_head = head;
        }
        if let Some(tail) = tail {
            self.msgq_tail = tail;
        }
    }

    /// Posts `reply` at EMEM's start and announces it.
    pub fn post(&mut self, reply: &[u8]) {
        let len = reply.len().min(EMEM_SIZE) & !3;
        self.emem[..len].copy_from_slice(&reply[..len]);
        self.msgq_head = 0;
        // CAST: at most EMEM's 1 KiB.
        self.msgq_tail = len.saturating_sub(4) as u32;
    }
}

#[cfg(test)]
mod tests {
    use zerocopy::IntoBytes as _;

    use super::*;

    #[test]
    fn emem_auto_increments_on_write_and_read() {
        let mut fsp = Fsp::default();
        fsp.set_control(crate::regs::EMEMC_AINCW);
        fsp.write_data(0x1111_1111);
        fsp.write_data(0x2222_2222);
        fsp.set_control(crate::regs::EMEMC_AINCR | (1 << 2));
        assert_eq!(fsp.read_data(), Some(0x2222_2222));
    }

    #[test]
    fn a_word_past_emem_is_reported_not_written() {
        let mut fsp = Fsp::default();
        // Block 3, word 63: EMEM's last word.
        fsp.set_control(crate::regs::EMEMC_AINCW | (3 << 8) | (0x3f << 2));
        assert!(fsp.write_data(1));
        assert!(!fsp.write_data(2));
        assert_eq!(fsp.read_data(), None);
    }

    #[test]
    fn head_write_takes_the_words_up_to_the_tail() {
        let mut fsp = Fsp::default();
        fsp.set_control(crate::regs::EMEMC_AINCW);
        for w in 1..=3u32 {
            fsp.write_data(w);
        }
        fsp.set_queue_tail(8);
        let cmd = fsp.set_queue_head(0).unwrap();
        assert_eq!(cmd.len(), 12);
        assert_eq!(&cmd[8..], &3u32.to_le_bytes());
    }

    #[test]
    fn a_reply_is_announced_by_head_and_tail() {
        let mut fsp = Fsp::default();
        fsp.post(Response::to(NVDM_TYPE_COT, 0).as_bytes());
        let [_, _, head, tail] = fsp.queues();
        assert_eq!(tail - head + 4, 20);
    }
}
