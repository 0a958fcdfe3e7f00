// SPDX-License-Identifier: GPL-2.0

//! The command side: consuming `cpuq` elements, validating them, reassembling split
//! commands from their continuation records, and acting on each whole command.

use kernel::prelude::*;
use nova_core::gsp::{
    commands::{
        FbRegion,
        GspSetSystemInfo,
        GspStaticConfigInfo,
        PackedRegistryEntry,
        PackedRegistryTable,
        RegistryEntryType,
        RmControlHeader, //
    },
    fw::{
        self,
        element::{
            check_elem_count,
            is_continuation,
            validate_header,
            verify_checksum,
            Delimiter,
            Next, //
        },
        GspMsgElement,
        MsgFunction,
        ELEMENT_HEADER_SIZE, //
    },
    sequencer::SequencerDone,
};
use nova_core::num::FromSafeCast;
use nova_testbench::rpc::{
    params_digest,
    EchoHeader,
    MmuFault,
    VGSP_CE_COPY,
    VGSP_ECHO,
    VGSP_SINK, //
};
use zerocopy::{
    FromBytes,
    IntoBytes, //
};

use crate::{
    ce::Refusal,
    msgq::read_cpuq,
    outbox::LogLine,
    Outcome,
    Vgsp,
    FB_LENGTH,
    GPU_NAME,
    GPU_SHORT_NAME,
    PCI_FUNCTION, //
};

/// `VGSP_CTRL_CMD_ECHO`: the virtual GSP's one RM control (`GSP_RM_CONTROL`), answered
/// with status `NV_OK` and its parameters sent back byte for byte: traffic of any size for
/// tests that a driver knowing only r570's functions can send (upstream's knows no
/// `VGSP_ECHO`). The client and object handles are not looked at: the virtual GSP has no
/// objects.
///
/// Any other control is answered too, with its header and parameters echoed and
/// `NV_ERR_NOT_SUPPORTED` in the header's `status`, the reply's `rpc_result` `NV_OK`: a
/// failed control reported where nouveau's r535 code looks for it (it refuses a reply
/// whose `rpc_result` is not `NV_OK`, then turns a non-zero `status` into an errno), not as
/// a failed RPC. That is our choice, not a measured behaviour of r570's firmware.
///
/// An NVIDIA control number is `class << 16 | category << 8 | index`, the class being that
/// of the object addressed (`0x0000` a client, `0x0080` a device, `0x2080` a subdevice,
/// ...). This one's class, `0x0f00`, is no NVIDIA class: NVIDIA's class headers
/// (`src/common/sdk/nvidia/inc/class/` of its open GPU kernel modules) number none between
/// `0x0101` and `0x2080`, so no control of theirs carries it, and it is the block of the
/// virtual GSP's own function numbers (`VGSP_*`, `0x0f01`..).
pub const VGSP_CTRL_CMD_ECHO: u32 = 0x0f00_0001;

/// `VGSP_CTRL_CMD_DIGEST`: the virtual GSP's RM control answered with status `NV_OK` and,
/// as its parameters, the [`ParamsDigest`](nova_testbench::rpc::ParamsDigest) of the parameters sent (their length and
/// FNV-1a hash): a reply of one element whatever the control's size, for a driver whose
/// receive path does not reassemble continuation records. Numbered as
/// [`VGSP_CTRL_CMD_ECHO`], the next index.
pub const VGSP_CTRL_CMD_DIGEST: u32 = 0x0f00_0002;

/// A split command being reassembled in `rx_buf`.
pub(crate) struct Assembly {
    function: u32,
    sequence: u32,
    /// Payload bytes of the whole command.
    total: usize,
    /// Where the command ends ([`Delimiter`]); its length is the bytes received so
    /// far, at the start of `rx_buf`.
    delimiter: Delimiter,
}

impl Vgsp<'_> {
    /// Consumes the command element at our read pointer and acts on it, delimiting
    /// commands by [`Delimiter`], the rule of the driver's receive: a split command
    /// goes on while the next element is a continuation record of it (numbered as its head,
    /// or as the element before it plus one); any other element ends it (refused, shorter
    /// than its own fields say) and is taken at the next step. A
    /// valid continuation record while no command is open is skipped and counted
    /// ([`Stats::stray`](crate::Stats::stray)), not refused.
    pub(crate) fn consume_element(&mut self, available: u32) -> Result {
        let mut raw = GspMsgElement::default();
        self.read_cmd_bytes(0, raw.as_mut_bytes())?;
        if let Some(asm) = self.assembly.take() {
            if asm.delimiter.next(&raw) == Next::Ends {
                // The element stays on the ring for the next step.
                return self.reject(
                    asm.function,
                    asm.sequence,
                    "split command ended before its length",
                );
            }
            self.assembly = Some(asm);
        }
        let elem_count = raw.elem_count;
        if check_elem_count(elem_count, available).is_err() {
            // Cannot be delimited: drop what is published and complain.
            self.advance_gsp_read_ptr(available)?;
            self.assembly = None;
            return self.reject(
                raw.rpc.function,
                raw.rpc.sequence,
                "element cannot be delimited",
            );
        }

        let checked = self.copy_and_check(&raw);
        self.advance_gsp_read_ptr(elem_count)?;
        self.stats.elements_in += 1;
        let (header, chunk_len) = match checked {
            Ok(ok) => ok,
            Err(_) => {
                self.assembly = None;
                return self.reject(
                    raw.rpc.function,
                    raw.rpc.sequence,
                    "element header, checksum or sequence number refused",
                );
            }
        };

        if is_continuation(&header) {
            self.stats.continuations_in += 1;
            let Some(mut asm) = self.assembly.take() else {
                // A stray record: skipped, as the driver skips one.
                self.stats.stray += 1;
                return Ok(());
            };
            // `Delimiter::next` let through only a record of this command.
            if asm.delimiter.len() + chunk_len > asm.total {
                return self.reject(
                    asm.function,
                    asm.sequence,
                    "continuation record beyond its command",
                );
            }
            // `copy_and_check` put the chunk right after what came before.
            asm.delimiter.append(&header, chunk_len);
            if asm.delimiter.len() == asm.total {
                return self.handle_received(asm.function, asm.sequence, asm.total);
            }
            if asm.delimiter.is_whole() {
                return self.reject(
                    asm.function,
                    asm.sequence,
                    "split command ended before its length",
                );
            }
            self.assembly = Some(asm);
            return Ok(());
        }

        // A command's `rpc.length` covers its own chunk only, the head's too (`validate_header`
        // refuses more); where a split command ends, the command itself says.
        let total = match command_payload_len(header.rpc.function, &self.rx_buf[..chunk_len]) {
            Ok(Some(total)) if total >= chunk_len && total <= fw::MAX_RPC_PAYLOAD => total,
            Ok(None) => chunk_len,
            Ok(Some(_)) | Err(_) => {
                return self.reject(
                    header.rpc.function,
                    header.rpc.sequence,
                    "command length refused",
                )
            }
        };
        let delimiter = Delimiter::head(&header, chunk_len, Some(total));
        if delimiter.is_whole() {
            if total > chunk_len {
                // Only a full head is followed by continuation records.
                return self.reject(
                    header.rpc.function,
                    header.rpc.sequence,
                    "split command whose head is not full",
                );
            }
            return self.handle_received(header.rpc.function, header.rpc.sequence, chunk_len);
        }
        if self.rx_buf.len() < total {
            self.rx_buf.resize(total, 0, GFP_KERNEL)?;
        }
        self.assembly = Some(Assembly {
            function: header.rpc.function,
            sequence: header.rpc.sequence,
            total,
            delimiter,
        });
        Ok(())
    }

    /// Validates `raw`, the header of the command element at our read pointer, copied out
    /// of `cpuq`, then copies just the payload bytes it announces into `rx_buf` and
    /// verifies the checksum there; returns the header and the payload length.
    ///
    /// A head goes to the start of `rx_buf`, which grows to hold its whole command; a
    /// continuation record right after the bytes of the command being reassembled (or,
    /// if it does not belong there, to the start: the command is lost anyway).
    fn copy_and_check(&mut self, raw: &GspMsgElement) -> Result<(GspMsgElement, usize)> {
        let (header, chunk_len) = validate_header(raw.as_bytes(), raw.elem_count)?;
        let at = match &self.assembly {
            Some(asm)
                if asm.delimiter.next(&header) == Next::Append
                    && asm.delimiter.len() + chunk_len <= asm.total =>
            {
                asm.delimiter.len()
            }
            _ => 0,
        };
        // A head's whole command is reserved once it is known to be split (below, in
        // `consume_element`); the buffer only grows.
        let need = at + chunk_len;
        if self.rx_buf.len() < need {
            self.rx_buf.resize(need, 0, GFP_KERNEL)?;
        }
        let chunk = &mut self.rx_buf[at..at + chunk_len];
        read_cpuq(self.mem, &self.rx, ELEMENT_HEADER_SIZE, chunk)?;
        verify_checksum(&header, chunk)?;
        // The next number exactly, as r570's receive demands of the driver, which never
        // drops a slot it published. The driver's receive allows forward jumps instead,
        // as it drops the slots of an element it cannot delimit (`cmdq/receive.rs`).
        if let Some(expected) = self.rx_seq {
            if header.seq_num != expected {
                return Err(EIO);
            }
        }
        self.rx_seq = Some(header.seq_num.wrapping_add(1));
        Ok((header, chunk_len))
    }

    /// Acts on the whole command of `len` payload bytes at the start of `rx_buf`.
    fn handle_received(&mut self, function: u32, sequence: u32, len: usize) -> Result {
        let buf = core::mem::take(&mut self.rx_buf);
        let result = self.handle_command(function, sequence, &buf[..len]);
        self.rx_buf = buf;
        result
    }

    /// Answers a malformed command with an error reply; `reason` goes to the journal.
    fn reject(&mut self, function: u32, sequence: u32, reason: &'static str) -> Result {
        self.stats.malformed += 1;
        self.note(function, sequence, Outcome::Refused(reason));
        self.queue(function, sequence, fw::NV_ERR_INVALID_ARGUMENT, KVec::new())
    }

    /// Acts on a whole command; a function it does not serve, known or not, gets an
    /// `NV_ERR_NOT_SUPPORTED` reply. An RM control is answered with its header and
    /// parameters: echoed with status `NV_OK` for [`VGSP_CTRL_CMD_ECHO`], echoed with
    /// status `NV_ERR_NOT_SUPPORTED` for any other control.
    fn handle_command(&mut self, function: u32, sequence: u32, payload: &[u8]) -> Result {
        self.stats.commands += 1;
        match MsgFunction(function) {
            MsgFunction::NOP => {
                let mut echo = KVec::with_capacity(payload.len(), GFP_KERNEL)?;
                echo.extend_from_slice(payload, GFP_KERNEL)?;
                self.reply(function, sequence, echo)?;
            }
            VGSP_ECHO => {
                // `consume_element` checked that the header's length is the payload's.
                let bytes = &payload[core::mem::size_of::<EchoHeader>()..];
                let mut echo = core::mem::take(&mut self.spare);
                echo.clear();
                echo.extend_from_slice(bytes, GFP_KERNEL)?;
                self.reply(function, sequence, echo)?;
            }
            VGSP_SINK => self.reply(function, sequence, KVec::new())?,
            MsgFunction::GSP_SET_SYSTEM_INFO => match GspSetSystemInfo::read_from_bytes(payload) {
                Ok(info) => self.system_info = Some(info),
                Err(_) => {
                    return self.reject(function, sequence, "system information of another size")
                }
            },
            MsgFunction::SET_REGISTRY => match parse_registry(payload) {
                Some(n) => {
                    self.registry_entries = Some(n);
                    self.boot_done()?;
                }
                None => return self.reject(function, sequence, "registry table unreadable"),
            },
            MsgFunction::GET_GSP_STATIC_INFO => {
                let info = static_info(payload);
                let mut out = KVec::new();
                out.extend_from_slice(info.as_bytes(), GFP_KERNEL)?;
                self.reply(function, sequence, out)?;
            }
            MsgFunction::GSP_RM_CONTROL => {
                // `consume_element` delimited the command by its `params_size`; checked
                // again here, as the other commands' layouts are, on the bytes acted on.
                let Some((mut control, params)) = parse_rm_control(payload) else {
                    return self.reject(function, sequence, "RM control unreadable");
                };
                // A control the GSP does not have is answered, not refused: the reply's
                // `rpc_result` says the RPC was carried out, the header's `status` that the
                // control failed (our choice; it is the field nouveau's r535 turns into an
                // errno once the reply's `rpc_result` has passed).
                let digest;
                let params = match control.cmd {
                    VGSP_CTRL_CMD_ECHO => {
                        control.status = fw::NV_OK;
                        params
                    }
                    VGSP_CTRL_CMD_DIGEST => {
                        digest = params_digest(params)?;
                        control.status = fw::NV_OK;
                        // 16 bytes: always fits.
                        control.params_size =
                            u32::try_from(digest.as_bytes().len()).map_err(|_| EMSGSIZE)?;
                        digest.as_bytes()
                    }
                    _ => {
                        control.status = fw::NV_ERR_NOT_SUPPORTED;
                        params
                    }
                };
                let mut answer = KVec::with_capacity(payload.len(), GFP_KERNEL)?;
                answer.extend_from_slice(control.as_bytes(), GFP_KERNEL)?;
                answer.extend_from_slice(params, GFP_KERNEL)?;
                self.reply(function, sequence, answer)?;
            }
            // The driver's answer to a CPU sequence (the project's convention, see
            // `nova_core::gsp::sequencer`): recorded, not answered.
            MsgFunction::GSP_RUN_CPU_SEQUENCER => match SequencerDone::read_from_bytes(payload) {
                Ok(done) => self.stats.sequence_done = Some(done),
                Err(_) => return self.reject(function, sequence, "sequencer answer unreadable"),
            },
            MsgFunction::UNLOADING_GUEST_DRIVER => self.reply(function, sequence, KVec::new())?,
            VGSP_CE_COPY => match self.accept_copy(payload, sequence) {
                Ok(job) => {
                    // Acknowledge first: the bytes land in the steps after the reply.
                    self.reply(function, sequence, KVec::new())?;
                    self.copy = Some(job);
                }
                Err(Refusal::Fault(bus)) => {
                    // As RM does for an MMU fault: the fault for the fault handler, and a
                    // line of its error log (an Xid 31) for the system log.
                    self.post_event(MsgFunction::MMU_FAULT_QUEUED, MmuFault { bus }.as_bytes())?;
                    let text = LogLine::mmu_fault(bus);
                    self.post_event(MsgFunction::OS_ERROR_LOG, text.as_bytes())?;
                    return self.reject(function, sequence, "copy outside the mapped windows");
                }
                Err(Refusal::Invalid) => {
                    return self.reject(function, sequence, "copy request unreadable")
                }
            },
            _ => {
                self.note(function, sequence, Outcome::NotSupported);
                self.queue(function, sequence, fw::NV_ERR_NOT_SUPPORTED, KVec::new())?;
                self.stats.replies += 1;
                return self.log_line();
            }
        }
        self.note(function, sequence, Outcome::Served);
        self.log_line()
    }

    /// Sends the periodic log line, when it is due.
    fn log_line(&mut self) -> Result {
        if self.log_every != 0 && self.stats.commands.is_multiple_of(self.log_every) {
            let mut line = KVec::new();
            let text = LogLine::commands(self.stats.commands);
            line.extend_from_slice(text.as_bytes(), GFP_KERNEL)?;
            self.event(MsgFunction::UCODE_LIBOS_PRINT, line)?;
        }
        Ok(())
    }
}

/// Returns the static configuration of the virtual GPU, filled into `request` (the
/// driver's zeroed structure) where that has the right size, into zeroes otherwise: its
/// names, [`FB_LENGTH`] of frame buffer as one usable region, and the subsystem ids of
/// [`PCI_FUNCTION`] as the VBIOS's.
fn static_info(request: &[u8]) -> GspStaticConfigInfo {
    let mut info = GspStaticConfigInfo::read_from_bytes(request).unwrap_or_default();
    info.name = [0; 64];
    // PANIC: both names are shorter than their fields (asserted beside them).
    info.name[..GPU_NAME.len()].copy_from_slice(GPU_NAME.as_bytes());
    info.name_utf16 = [0; 64];
    for (unit, byte) in info.name_utf16.iter_mut().zip(GPU_NAME.bytes()) {
        *unit = u16::from(byte);
    }
    info.short_name = [0; 64];
    info.short_name[..GPU_SHORT_NAME.len()].copy_from_slice(GPU_SHORT_NAME.as_bytes());
    info.fb_length = FB_LENGTH;
    info.fb_regions.count = 1;
    info.fb_regions.regions[0] = FbRegion {
        base: 0,
        limit: FB_LENGTH - 1,
        support_compressed: 1,
        support_iso: 1,
        ..FbRegion::default()
    };
    info.vbios_valid = 1;
    info.vbios_sub_vendor = u32::from(PCI_FUNCTION.subsystem_vendor_id);
    info.vbios_sub_device = u32::from(PCI_FUNCTION.subsystem_id);
    info
}

/// Splits an RM control into its header and its parameters, if the header's
/// `params_size` is the number of bytes after it.
fn parse_rm_control(payload: &[u8]) -> Option<(RmControlHeader, &[u8])> {
    let (control, params) = RmControlHeader::read_from_prefix(payload).ok()?;
    (usize::from_safe_cast(control.params_size) == params.len()).then_some((control, params))
}

/// Checks a packed registry table as r570 lays it out; returns its number of entries.
///
/// The table's `size` must be the payload's length, and every entry must lie inside it
/// with a NUL-terminated key and a known type: a number with `length` 0 (as upstream
/// sends it) or 4 (as nouveau does), or a blob or string whose `length` bytes at offset
/// `data` lie inside the table (a string's last one its NUL).
fn parse_registry(payload: &[u8]) -> Option<u32> {
    let (table, rest) = PackedRegistryTable::read_from_prefix(payload).ok()?;
    if usize::try_from(table.size).ok()? != payload.len() {
        return None;
    }
    let mut entries = rest;
    for _ in 0..table.num_entries {
        let (entry, next) = PackedRegistryEntry::read_from_prefix(entries).ok()?;
        let name = payload.get(usize::try_from(entry.name_offset).ok()?..)?;
        name.iter().position(|&b| b == 0)?;
        let length = usize::try_from(entry.length).ok()?;
        match RegistryEntryType::try_from(entry.type_).ok()? {
            RegistryEntryType::Dword if length == 0 || length == 4 => {}
            RegistryEntryType::Dword => return None,
            kind => {
                let start = usize::try_from(entry.data).ok()?;
                let value = payload.get(start..start.checked_add(length)?)?;
                if kind == RegistryEntryType::String && value.last() != Some(&0) {
                    return None;
                }
            }
        }
        entries = next;
    }
    Some(table.num_entries)
}

/// Returns the payload length of the whole command that a head element starting with
/// `head` begins, read from the command's own fields as the firmware reads them, or
/// `None` for a function whose commands never span more than one element.
///
/// A split command's head carries only its own chunk in `rpc.length` (upstream's and
/// nouveau's `rpc.length`: header plus chunk); the GSP learns where the command ends
/// from the command itself: the registry table's `size`, an echo's `length`, an RM
/// control's `params_size`.
///
/// # Errors
///
/// - `EIO` if `head` is too short to hold the field.
pub fn command_payload_len(function: u32, head: &[u8]) -> Result<Option<usize>> {
    match MsgFunction(function) {
        MsgFunction::SET_REGISTRY => {
            let (table, _) = PackedRegistryTable::read_from_prefix(head).map_err(|_| EIO)?;
            Ok(Some(usize::from_safe_cast(table.size)))
        }
        VGSP_ECHO | VGSP_SINK => {
            let (echo, _) = EchoHeader::read_from_prefix(head).map_err(|_| EIO)?;
            // The sum cannot overflow a 64-bit `usize`.
            Ok(Some(
                core::mem::size_of::<EchoHeader>() + usize::from_safe_cast(echo.length),
            ))
        }
        MsgFunction::GSP_RM_CONTROL => {
            let (control, _) = RmControlHeader::read_from_prefix(head).map_err(|_| EIO)?;
            // As for the echo, the sum cannot overflow.
            Ok(Some(
                core::mem::size_of::<RmControlHeader>()
                    + usize::from_safe_cast(control.params_size),
            ))
        }
        _ => Ok(None),
    }
}
