// SPDX-License-Identifier: GPL-2.0

//! The emulated GH100: its config header, its BAR0 registers, the FSP that starts the
//! GSP, and the GSP itself on a thread of its own.
//!
//! The GPU's life, as nova-core 7.3 drives it (7.2's differences after each step):
//!
//! 1. **Identity and setup.** `BOOT_0`/`BOOT_42` name a GH100; the driver registers its
//!    sysmem flush page and clears the GSP's SWGEN0 interrupt; the FSP reports its boot
//!    complete. 7.2 also reads the display fuse (disabled) to lay out the framebuffer.
//! 2. **Chain of trust.** The driver writes the COT message into the FSP's EMEM. The
//!    FSP checks it against the firmware the device made ([`crate::firmware`]): the FMC
//!    image at the address given and its signatures must be the files' bytes. It
//!    answers, puts the boot parameters' address in the GSP's mailboxes and keeps the
//!    GSP's registers locked while the FMC runs. 7.2 sends the same message, from its r570
//!    files, whose payloads are the same.
//! 3. **The FMC** ([`crate::fmc`]) follows the boot parameters to the queues, clears
//!    the mailboxes, releases the lockdown and starts the RISC-V core; a refusal leaves
//!    an error code in mailbox 0, which the driver reports. Whether the driver placed the
//!    framebuffer regions in the WPR metadata (7.2) or left them to the firmware (7.3) is
//!    said, from the record it wrote.
//! 4. **The GSP** is [`vgsp::Vgsp`] over the driver's queues, woken by the doorbell:
//!    every command it handles goes to the transcript, with its outcome.
//! 5. **Unload.** Once it has answered `UNLOADING_GUEST_DRIVER`, the GSP sets the
//!    suspended bit in mailbox 0, then halts the core (7.3 waits for the halted bit, 7.2
//!    for the active bit to clear: the one `RISCV_CPUCTL` value answers both).
//!
//! Every step is reported as a `gh100:` line on standard output (the transcript); a
//! register the model does not have is reported once per offset and direction, by
//! offset.

use std::{
    collections::BTreeSet,
    sync::{
        mpsc,
        Arc,
        Mutex, //
    },
    thread,
    time::{
        Duration,
        Instant, //
    },
};

use nova_core::gsp::fw::MsgFunction;
use vgsp::{
    Outcome,
    Progress, //
};
use zerocopy::{
    FromBytes,
    IntoBytes, //
};

use crate::{
    activity::Activity,
    device::{
        Bar,
        ConfigSpace,
        GuestRam,
        MappedRam,
        PciFunction,
        Region, //
    },
    fault::{
        function_name,
        Fault,
        Play, //
    },
    firmware,
    fmc,
    fsp::{
        self,
        CotMessage,
        Fsp,
        Response, //
    },
    latency::{
        Doorbells,
        Watch, //
    },
    pci::Header,
    regs, //
};

/// The frame buffer the GPU reports in `NV_USABLE_FB_SIZE_IN_MB`: the virtual GSP's.
// CAST: 256 MiB in MiB fits a `u32`.
const FB_MIB: u32 = (vgsp::FB_LENGTH >> 20) as u32;
/// The NVDM header's bits that must be NVIDIA's PCI vendor-defined message whatever its
/// type: the vendor id (23:8) and the message type (6:0).
const NVDM_FIXED_BITS: u32 = 0x00ff_ff7f;
/// How long the GSP sleeps between looks at the queues when no doorbell rings.
const GSP_IDLE: Duration = Duration::from_millis(2);
/// How long it waits for the driver to free reply slots.
const GSP_BLOCKED: Duration = Duration::from_micros(200);
/// The FMC's error code in mailbox 0 when it refuses the boot parameters.
pub const FMC_REFUSED: u32 = 0x0fc0_0001;
/// The FSP's COT error code when the firmware handed over is not what was loaded.
pub const COT_FIRMWARE_MISMATCH: u32 = 0x1;
/// The FSP's error code for a message it does not take.
pub const FSP_BAD_MESSAGE: u32 = 0x2;

/// Prints a line of the transcript.
pub fn say(line: std::fmt::Arguments<'_>) {
    println!("gh100: {line}");
}

macro_rules! say {
    ($($arg:tt)*) => { say(format_args!($($arg)*)) };
}

/// The GSP falcon's registers, shared by the BAR and the GSP's thread.
#[derive(Clone, Copy, Debug)]
struct Falcon {
    mailbox0: u32,
    mailbox1: u32,
    hwcfg2: u32,
    cpuctl: u32,
    os: u32,
}

impl Default for Falcon {
    fn default() -> Self {
        Self {
            mailbox0: 0,
            mailbox1: 0,
            // Out of reset, the FMC has not run: the GSP's registers are locked.
            hwcfg2: regs::PRIV_LOCKED,
            cpuctl: regs::CPUCTL_HALTED,
            os: 0,
        }
    }
}

/// What wakes the GSP's thread.
enum Wake {
    Doorbell,
    Stop,
}

/// BAR0.
struct Bar0 {
    ram: MappedRam,
    fsp: Fsp,
    /// The sysmem flush page as 7.3 registers it: `FBHUB_PCIE_FLUSH_SYSMEM_ADDR_{LO,HI}`.
    flush: [u32; 2],
    /// The sysmem flush page as 7.2 registers it: `NISO_FLUSH_SYSMEM_ADDR{,_HI}`.
    niso_flush: [u32; 2],
    falcon: Arc<Mutex<Falcon>>,
    gsp: Option<(mpsc::Sender<Wake>, thread::JoinHandle<()>)>,
    /// The offsets (and whether written) reported as not emulated.
    unknown: BTreeSet<(u64, bool)>,
    /// Whether the doorbell rang before the GSP ran.
    early_doorbell: bool,
    /// Whether the display fuse was read (said once).
    display_fuse_read: bool,
    /// How the GSP is to misbehave, if at all.
    fault: Option<Fault>,
    /// The doorbells rung, for the RPCs' latency ([`crate::latency`]).
    doorbells: Doorbells,
}

impl Bar0 {
    fn new(ram: MappedRam, fault: Option<Fault>, doorbells: Doorbells) -> Self {
        doorbells.clear();
        Self {
            fault,
            doorbells,
            ram,
            fsp: Fsp::default(),
            flush: [0; 2],
            niso_flush: [0; 2],
            falcon: Arc::new(Mutex::new(Falcon::default())),
            gsp: None,
            unknown: BTreeSet::new(),
            early_doorbell: false,
            display_fuse_read: false,
        }
    }

    fn falcon(&self) -> std::sync::MutexGuard<'_, Falcon> {
        // A thread that panicked holding the lock left the registers as they were.
        self.falcon.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn not_emulated(&mut self, offset: u64, write: Option<u64>) {
        if self.unknown.insert((offset, write.is_some())) {
            match write {
                Some(val) => say!("register {offset:#08x} written ({val:#x}): not emulated"),
                None => say!("register {offset:#08x} read: not emulated, returned 0"),
            }
        }
    }

    /// Takes the message the driver just announced to the FSP.
    fn fsp_message(&mut self, bytes: &[u8]) {
        let reply = |fsp: &mut Fsp, nvdm_type, code| {
            fsp.post(Response::to(nvdm_type, code).as_bytes());
        };
        let header = |i: usize| {
            bytes
                .get(4 * i..4 * i + 4)
                .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        };
        let (Some(mctp), Some(nvdm)) = (header(0), header(1)) else {
            say!(
                "fsp: refused a message of {} bytes: no MCTP and NVDM headers",
                bytes.len()
            );
            return reply(&mut self.fsp, 0, FSP_BAD_MESSAGE);
        };
        let nvdm_type = nvdm >> 24;
        if mctp & fsp::MCTP_SINGLE_PACKET != fsp::MCTP_SINGLE_PACKET
            || nvdm & NVDM_FIXED_BITS != fsp::nvdm_header(0)
        {
            say!(
                "fsp: refused a message: MCTP {mctp:#x}, NVDM {nvdm:#x} are not one NVIDIA packet"
            );
            return reply(&mut self.fsp, nvdm_type, FSP_BAD_MESSAGE);
        }
        if nvdm_type != fsp::NVDM_TYPE_COT {
            say!("fsp: refused NVDM type {nvdm_type:#x}: only the chain of trust is emulated");
            return reply(&mut self.fsp, nvdm_type, FSP_BAD_MESSAGE);
        }
        let Ok((cot, _)) = CotMessage::read_from_prefix(bytes) else {
            say!(
                "fsp: refused a COT message of {} bytes (it has {})",
                bytes.len(),
                core::mem::size_of::<CotMessage>()
            );
            return reply(&mut self.fsp, nvdm_type, FSP_BAD_MESSAGE);
        };
        if self.gsp_running() {
            say!("fsp: COT refused: the GSP already runs (unload it first)");
            return reply(&mut self.fsp, nvdm_type, FSP_BAD_MESSAGE);
        }
        if let Err(why) = self.check_cot(&cot) {
            say!("fsp: COT refused: {why}");
            return reply(&mut self.fsp, nvdm_type, COT_FIRMWARE_MISMATCH);
        }
        let boot_params = cot.gsp_boot_args_sysmem_offset;
        say!(
            "fsp: COT accepted: FMC image at {:#x} and its signatures are the FMC firmware's (fmc.tlv, fmc-570.144.bin); boot parameters at {boot_params:#x}",
            { cot.gsp_fmc_sysmem_offset }
        );
        reply(&mut self.fsp, nvdm_type, 0);
        {
            let mut falcon = self.falcon();
            // CAST: the address's two halves.
            falcon.mailbox0 = boot_params as u32;
            falcon.mailbox1 = (boot_params >> 32) as u32;
            falcon.hwcfg2 = regs::PRIV_LOCKED;
        }
        self.start_gsp(boot_params);
    }

    /// Checks the COT message against the firmware made for the driver.
    fn check_cot(&self, cot: &CotMessage) -> Result<(), String> {
        if cot.version != fsp::COT_VERSION_GH100 {
            return Err(format!(
                "version {} (GH100's is {})",
                { cot.version },
                fsp::COT_VERSION_GH100
            ));
        }
        if usize::from(cot.size) != fsp::COT_PAYLOAD_SIZE {
            return Err(format!(
                "payload size {} (it is {})",
                { cot.size },
                fsp::COT_PAYLOAD_SIZE
            ));
        }
        let image = firmware::fmc_image();
        let at = cot.gsp_fmc_sysmem_offset;
        let view = self
            .ram
            .view(at, image.len())
            .ok_or_else(|| format!("FMC image at {at:#x} outside RAM"))?;
        let mut seen = vec![0u8; image.len()];
        view.read_bytes(0, &mut seen)
            .map_err(|_| format!("FMC image at {at:#x} unreadable"))?;
        if seen != image {
            return Err(format!(
                "the FMC image at {at:#x} is not the FMC firmware's (fmc.tlv BLOB, fmc-570.144.bin image)"
            ));
        }
        let mut sigs = Vec::new();
        sigs.extend_from_slice(&cot.hash384);
        sigs.extend_from_slice(&cot.public_key);
        sigs.extend_from_slice(&cot.signature);
        if sigs != firmware::fmc_signatures() {
            return Err(
                "the signatures are not the FMC firmware's (fmc.tlv HASH, PKEY, SIGN; fmc-570.144.bin hash, publickey, signature)"
                    .into(),
            );
        }
        Ok(())
    }

    /// Returns whether the GSP's thread runs; reaps it if it has ended (the FMC refused,
    /// or the core halted after an unload), so that the driver may boot it again.
    fn gsp_running(&mut self) -> bool {
        if self
            .gsp
            .as_ref()
            .is_some_and(|(_, handle)| handle.is_finished())
        {
            self.stop();
        }
        self.gsp.is_some()
    }

    /// Runs the FMC, then the GSP, on a thread of their own.
    fn start_gsp(&mut self, boot_params: u64) {
        let (tx, rx) = mpsc::channel();
        let (ram, falcon, fault) = (self.ram.clone(), self.falcon.clone(), self.fault);
        // The vCPUs' clock opened now, not at the first doorbell, which it would delay.
        let _ = self.doorbells.cpu_now();
        let doorbells = self.doorbells.clone();
        let handle =
            thread::spawn(move || run_gsp(&ram, &falcon, boot_params, fault, &rx, doorbells));
        self.gsp = Some((tx, handle));
    }

    fn ring_doorbell(&mut self) {
        match &self.gsp {
            Some((tx, _)) => {
                let at = Instant::now();
                let _ = tx.send(Wake::Doorbell);
                self.doorbells.ring(at);
            }
            None if !self.early_doorbell => {
                self.early_doorbell = true;
                say!("doorbell rung before the GSP runs");
            }
            None => {}
        }
    }

    fn stop(&mut self) {
        if let Some((tx, handle)) = self.gsp.take() {
            let _ = tx.send(Wake::Stop);
            let _ = handle.join();
        }
    }
}

/// The FMC, then the GSP's loop, until the core halts or the device stops.
fn run_gsp(
    ram: &MappedRam,
    falcon: &Mutex<Falcon>,
    boot_params: u64,
    fault: Option<Fault>,
    rx: &mpsc::Receiver<Wake>,
    doorbells: Doorbells,
) {
    let lock = || falcon.lock().unwrap_or_else(|e| e.into_inner());
    // What the driver put in the WPR metadata's region offsets, said once the chain holds.
    let placement = std::cell::RefCell::new(None);
    let check = |raw: &[u8]| {
        *placement.borrow_mut() = Some(firmware::wpr_meta::placement(raw));
        firmware::check_wpr_meta(raw)
    };
    let found = fmc::locate(
        ram as &dyn GuestRam,
        boot_params,
        firmware::WPR_META_SIZE,
        &check,
    );
    if let Some(placement) = placement.take() {
        say!("fmc: WPR metadata: {placement}");
    }
    let queues = found.as_ref().ok().and_then(|found| {
        ram.view(
            found.shared,
            core::mem::size_of::<nova_core::gsp::fw::GspMem>(),
        )
    });
    let mut watch = queues.map(|mem| Watch::new(mem, doorbells));
    let mut gsp = match found {
        Ok(found) => {
            say!(
                "fmc: boot parameters at {boot_params:#x}: libos regions {}; RMARGS at {:#x}; queues at {:#x}",
                found.regions.join(", "),
                found.rmargs,
                found.shared
            );
            let mut f = lock();
            f.mailbox0 = 0;
            f.mailbox1 = 0;
            f.hwcfg2 = regs::HWCFG2_RELEASED;
            f.cpuctl = regs::CPUCTL_ACTIVE;
            found.gsp
        }
        Err(refused) => {
            say!("fmc: refused: {refused}; mailbox 0 = {FMC_REFUSED:#x}");
            let mut f = lock();
            f.mailbox0 = FMC_REFUSED;
            f.mailbox1 = 0;
            f.hwcfg2 = regs::HWCFG2_RELEASED;
            return;
        }
    };
    gsp.set_journal(true);
    say!("gsp: running");
    let mut play = fault.map(|f| {
        say!("fault {}: {}", f.name, f.what);
        Play::start(f, &mut gsp)
    });
    let mut wait = GSP_IDLE;
    let mut unloading = false;
    let (mut broken, mut dropped) = (None, 0);
    loop {
        match rx.recv_timeout(wait) {
            Ok(Wake::Stop) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                return say_rpcs(watch.as_mut().map(|w| w.close(&gsp, true)));
            }
            Ok(Wake::Doorbell) | Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        let mut progress = match &mut watch {
            Some(watch) => watch.serve(&mut gsp),
            None => gsp.run_until_idle(),
        };
        if let Some(playing) = &mut play {
            match playing.poll(&mut gsp) {
                Ok(Some(line)) => {
                    say!("{line}");
                    progress = match &mut watch {
                        Some(watch) => watch.serve(&mut gsp),
                        None => gsp.run_until_idle(),
                    };
                }
                Ok(None) => {}
                Err(e) => {
                    say!("fault: the GSP could not play it, and stops trying: {e}");
                    play = None;
                }
            }
        }
        for h in gsp.take_journal().iter() {
            let name = function_name(h.function);
            match h.outcome {
                Outcome::Served => say!("gsp: {name} (sequence {}): served", h.sequence),
                Outcome::NotSupported => {
                    say!(
                        "gsp: {name} (sequence {}): not supported, answered NV_ERR_NOT_SUPPORTED",
                        h.sequence
                    )
                }
                Outcome::Refused(why) => {
                    say!("gsp: {name} (sequence {}): refused: {why}", h.sequence)
                }
                Outcome::Sent => say!("gsp: {name} sent"),
            }
            unloading |= h.function == u32::from(MsgFunction::UNLOADING_GUEST_DRIVER)
                && h.outcome == Outcome::Served;
        }
        wait = match progress {
            Ok(Progress::Blocked) => GSP_BLOCKED,
            Ok(_) => GSP_IDLE,
            Err(e) => {
                // Said once per error, not at every look.
                if broken != Some(e) {
                    say!("gsp: the driver's queue is broken: {e:?}");
                }
                broken = Some(e);
                GSP_IDLE
            }
        };
        say_rpcs(watch.as_mut().map(|w| w.look(&gsp)));
        wait = watch.as_ref().map_or(wait, |w| w.wait(wait));
        if gsp.stats.journal_dropped != dropped {
            dropped = gsp.stats.journal_dropped;
            say!("gsp: {dropped} journal entries dropped so far (the journal was full)");
        }
        if unloading && gsp.outbox_empty() {
            // Suspended, then halted: the driver waits for the one, then the other.
            let mut f = lock();
            f.mailbox0 |= regs::MAILBOX0_SUSPENDED;
            say!("gsp: unloading: processor suspended (mailbox 0 bit 31)");
            f.cpuctl = regs::CPUCTL_HALTED;
            say!("gsp: unloading: core halted");
            drop(f);
            // The core is halted; the driver's read of the last reply is still watched.
            if let Some(watch) = &mut watch {
                while watch.watching() {
                    say_rpcs(Some(watch.look(&gsp)));
                    if let Ok(Wake::Stop) | Err(mpsc::RecvTimeoutError::Disconnected) =
                        rx.recv_timeout(watch.wait(GSP_IDLE))
                    {
                        break;
                    }
                }
                say_rpcs(Some(watch.close(&gsp, true)));
            }
            return;
        }
    }
}

/// Says the RPCs ended, if the latency is measured.
fn say_rpcs(rpcs: Option<Vec<crate::latency::Rpc>>) {
    for rpc in rpcs.unwrap_or_default() {
        say!("{}", rpc.line());
    }
}

impl Bar for Bar0 {
    fn read(&mut self, offset: u64, size: u32) -> u64 {
        if size != 4 {
            self.not_emulated(offset, None);
            return 0;
        }
        let value = match regs::named(offset) {
            Some(regs::NV_PMC_BOOT_0) => regs::BOOT_0_GH100,
            Some(regs::NV_PMC_BOOT_42) => regs::BOOT_42_GH100,
            Some(regs::NV_THERM_I2CS_SCRATCH) => regs::FSP_BOOT_COMPLETE,
            Some(regs::NV_FUSE_STATUS_OPT_DISPLAY) => {
                if !std::mem::replace(&mut self.display_fuse_read, true) {
                    say!(
                        "fuse: display read: disabled, the driver lays out the framebuffer itself"
                    );
                }
                regs::DISPLAY_DISABLED
            }
            Some(regs::NV_USABLE_FB_SIZE_IN_MB) => FB_MIB,
            Some(regs::NV_PFB_FBHUB_PCIE_FLUSH_SYSMEM_ADDR_LO) => self.flush[0],
            Some(regs::NV_PFB_FBHUB_PCIE_FLUSH_SYSMEM_ADDR_HI) => self.flush[1],
            Some(regs::NV_PFB_NISO_FLUSH_SYSMEM_ADDR) => self.niso_flush[0],
            Some(regs::NV_PFB_NISO_FLUSH_SYSMEM_ADDR_HI) => self.niso_flush[1],
            Some(regs::NV_PGSP_FALCON_MAILBOX0) => self.falcon().mailbox0,
            Some(regs::NV_PGSP_FALCON_MAILBOX1) => self.falcon().mailbox1,
            Some(regs::NV_PGSP_FALCON_OS) => self.falcon().os,
            Some(regs::NV_PGSP_FALCON_HWCFG2) => self.falcon().hwcfg2,
            Some(regs::NV_PRISCV_RISCV_CPUCTL) => self.falcon().cpuctl,
            Some(regs::NV_PFSP_FALCON_EMEMC) => self.fsp.control(),
            Some(regs::NV_PFSP_FALCON_EMEMD) => self.fsp.read_data().unwrap_or_else(|| {
                say!("fsp: EMEM read past its {} bytes", fsp::EMEM_SIZE);
                0
            }),
            Some(regs::NV_PFSP_QUEUE_HEAD) => self.fsp.queues()[0],
            Some(regs::NV_PFSP_QUEUE_TAIL) => self.fsp.queues()[1],
            Some(regs::NV_PFSP_MSGQ_HEAD) => self.fsp.queues()[2],
            Some(regs::NV_PFSP_MSGQ_TAIL) => self.fsp.queues()[3],
            // Write-only.
            Some(regs::NV_PGSP_FALCON_IRQSCLR) | Some(regs::NV_PGSP_QUEUE_HEAD) => 0,
            _ => {
                self.not_emulated(offset, None);
                0
            }
        };
        u64::from(value)
    }

    fn write(&mut self, offset: u64, size: u32, val: u64) {
        if size != 4 {
            self.not_emulated(offset, Some(val));
            return;
        }
        // CAST: a 4-byte access.
        let value = val as u32;
        match regs::named(offset) {
            Some(regs::NV_PFB_FBHUB_PCIE_FLUSH_SYSMEM_ADDR_LO) => {
                self.flush[0] = value;
                let page = u64::from(self.flush[1]) << 32 | u64::from(value & !0xff);
                say_flush(page, "FBHUB_PCIE_FLUSH_SYSMEM_ADDR_LO/HI");
            }
            Some(regs::NV_PFB_FBHUB_PCIE_FLUSH_SYSMEM_ADDR_HI) => self.flush[1] = value & 0xf_ffff,
            Some(regs::NV_PFB_NISO_FLUSH_SYSMEM_ADDR) => {
                self.niso_flush[0] = value;
                let page = u64::from(self.niso_flush[1]) << 40 | u64::from(value) << 8;
                say_flush(page, "NISO_FLUSH_SYSMEM_ADDR/_HI");
            }
            Some(regs::NV_PFB_NISO_FLUSH_SYSMEM_ADDR_HI) => {
                self.niso_flush[1] = value & regs::NISO_FLUSH_HI_MASK;
            }
            Some(regs::NV_PGSP_FALCON_IRQSCLR) => {}
            Some(regs::NV_PGSP_FALCON_MAILBOX0) => self.falcon().mailbox0 = value,
            Some(regs::NV_PGSP_FALCON_MAILBOX1) => self.falcon().mailbox1 = value,
            Some(regs::NV_PGSP_FALCON_OS) => {
                self.falcon().os = value;
                let expected = firmware::GSP_BOOTLOADER_APP_VERSION;
                match value == expected {
                    true => say!("gsp: OS register: application version {value:#x}, the bootloader's (gsp_bootloader.tlv APPV, bootloader-570.144.bin app_version)"),
                    false => say!(
                        "gsp: OS register: application version {value:#x}, not the bootloader's {expected:#x}"
                    ),
                }
            }
            Some(regs::NV_PGSP_QUEUE_HEAD) => self.ring_doorbell(),
            Some(regs::NV_PFSP_FALCON_EMEMC) => self.fsp.set_control(value),
            Some(regs::NV_PFSP_FALCON_EMEMD) => {
                if !self.fsp.write_data(value) {
                    say!("fsp: EMEM written past its {} bytes", fsp::EMEM_SIZE);
                }
            }
            Some(regs::NV_PFSP_QUEUE_TAIL) => self.fsp.set_queue_tail(value),
            Some(regs::NV_PFSP_QUEUE_HEAD) => match self.fsp.set_queue_head(value) {
                Some(message) => self.fsp_message(&message),
                None => say!("fsp: command queue head {value:#x} and tail beyond EMEM"),
            },
            Some(regs::NV_PFSP_MSGQ_HEAD) => self.fsp.set_msgq(Some(value), None),
            Some(regs::NV_PFSP_MSGQ_TAIL) => self.fsp.set_msgq(None, Some(value)),
            _ => self.not_emulated(offset, Some(val)),
        }
    }
}

/// Says where the driver put the sysmem flush page, and through which register pair: the
/// pair's low register is written last, so the address is whole then; 0 unregisters it.
fn say_flush(page: u64, pair: &str) {
    match page {
        0 => say!("flush: sysmem flush page cleared ({pair})"),
        page => say!("flush: sysmem flush page at {page:#x} ({pair})"),
    }
}

/// The emulated GH100.
pub struct Gh100 {
    header: Header,
    bar0: Bar0,
    ram: MappedRam,
    /// The regions and bytes of RAM last reported.
    ram_said: Option<(usize, u64)>,
    /// The driver's register accesses, counted ([`crate::activity`]).
    activity: Activity,
}

impl Default for Gh100 {
    fn default() -> Self {
        Self::new()
    }
}

impl Gh100 {
    /// A GH100 out of reset, its RAM not yet known.
    pub fn new() -> Self {
        Self::with_fault(None)
    }

    /// A GH100 whose GSP misbehaves as `fault` says.
    pub fn with_fault(fault: Option<Fault>) -> Self {
        let ram = MappedRam::new();
        Self {
            header: Header::new(),
            bar0: Bar0::new(ram.clone(), fault, Doorbells::default()),
            ram,
            ram_said: None,
            activity: Activity::default(),
        }
    }

    /// Counts the driver's register accesses in `activity` ([`crate::activity`]).
    pub fn count_activity(&mut self, activity: Activity) {
        self.activity = activity;
    }

    /// Measures the guest's CPU time during each RPC: QEMU's process is `pid`
    /// ([`crate::latency`]).
    pub fn measure_cpu(&mut self, pid: u32) {
        self.bar0.doorbells.measure(pid);
    }

    /// Stops the GSP's thread, if it runs.
    pub fn stop(&mut self) {
        self.bar0.stop();
    }
}

impl PciFunction for Gh100 {
    fn config(&mut self) -> &mut dyn ConfigSpace {
        &mut self.header
    }

    fn bar(&mut self, _index: usize) -> &mut dyn Bar {
        self.activity.note();
        &mut self.bar0
    }

    fn sync_ram(&mut self, regions: Vec<Region>) -> std::io::Result<()> {
        let n = regions.len();
        let total = regions
            .iter()
            .fold(0u64, |sum, r| sum.saturating_add(r.size));
        self.ram.sync(regions)?;
        // QEMU sends the regions at every change of the memory map: said when they change.
        if self.ram_said != Some((n, total)) {
            self.ram_said = Some((n, total));
            say!("ram: {n} regions, {} MiB", total >> 20);
        }
        Ok(())
    }

    fn reset(&mut self) {
        self.bar0.stop();
        self.header = Header::new();
        self.bar0 = Bar0::new(
            self.ram.clone(),
            self.bar0.fault,
            self.bar0.doorbells.clone(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `value` to the register `reg` of `gpu`'s BAR0 and returns what it reads back.
    fn write_read(gpu: &mut Gh100, reg: regs::Register, value: u32) -> u32 {
        let bar = gpu.bar(0);
        bar.write(reg.offset.into(), 4, value.into());
        // CAST: a 4-byte read.
        bar.read(reg.offset.into(), 4) as u32
    }

    #[test]
    fn niso_flush_page_registers_read_back_what_was_written() {
        let mut gpu = Gh100::new();
        assert_eq!(
            write_read(
                &mut gpu,
                regs::NV_PFB_NISO_FLUSH_SYSMEM_ADDR_HI,
                0xff12_3456
            ),
            0x0012_3456
        );
        assert_eq!(
            write_read(&mut gpu, regs::NV_PFB_NISO_FLUSH_SYSMEM_ADDR, 0x8765_4321),
            0x8765_4321
        );
        assert!(gpu.bar0.unknown.is_empty());
    }

    #[test]
    fn display_fuse_reads_display_disabled() {
        let mut gpu = Gh100::new();
        let bar = gpu.bar(0);
        let fuse = bar.read(regs::NV_FUSE_STATUS_OPT_DISPLAY.offset.into(), 4);
        assert_eq!(fuse, u64::from(regs::DISPLAY_DISABLED));
        assert!(gpu.bar0.unknown.is_empty());
    }
}
