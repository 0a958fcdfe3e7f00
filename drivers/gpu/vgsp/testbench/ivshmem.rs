// SPDX-License-Identifier: GPL-2.0

//! The GSP behind QEMU's `ivshmem-doorbell` PCI device (1af4:1110).
//!
//! Here the GSP is a process on the host, a peer of the device, which maps the guest's RAM
//! and reaches the driver's coherent allocations by bus address, as firmware does:
//!
//! - BAR0 holds the device's registers; writing
//!   [`IVSHMEM_DOORBELL`](struct@IVSHMEM_DOORBELL) with the GSP's peer id interrupts it.
//!   That write is this device's [`Doorbell`] ([`PeerDoorbell`]), where a GPU has
//!   `NV_PGSP_QUEUE_HEAD`.
//! - BAR2 is the shared memory of the device, [`SHM_SIZE`] bytes: the attach mailbox
//!   alone, mapped as I/O memory ([`IvshmemMailbox`]) and accessed with `readq`/`writeq`.
//! - The queues ([`GspMem`]) and the boot arguments that name them (r570's
//!   `GSP_ARGUMENTS_CACHED`) are the driver's own coherent allocations ([`Gsp::new`] for
//!   the device given to [`IvshmemGsp::new`]), in guest RAM; the driver tells the GSP the
//!   arguments' bus address in the mailbox ([`DRIVER_GSP_ARGS_OFFSET`]), as a GPU's driver
//!   hands the firmware its arguments, and the GSP finds the queues from them. Under QEMU
//!   without an IOMMU the bus address is the guest-physical address, which the GSP process
//!   finds in the guest RAM it maps (see `vgsp-qemu`).
//! - The GSP raises MSI-X vector 0 after posting a message; the driver sleeps on it
//!   ([`MsgqSignal`]) or, without MSI-X, polls.
//!
//! # The mailbox
//!
//! | offset | word | stored by |
//! |---|---|---|
//! | [`GSP_ATTACH_OFFSET`] (0x00) | [`GspAttach`]: generation, peer id, magic | the GSP |
//! | [`DRIVER_ATTACH_OFFSET`] (0x40) | [`DriverAttach`]: generation acknowledged, session, peer id | the driver |
//! | [`DRIVER_GSP_ARGS_OFFSET`] (0x48) | the bus address of the driver's boot arguments | the driver |
//!
//! The GSP's word and the driver's words are a cache line apart. Each word is stored by one
//! side only, the driver's with `writeq`, read by the driver with `readq`; the GSP
//! process, which sees the BAR as the memory it is, uses atomics.
//!
//! # Attaching
//!
//! The GSP process can die and be started again with a new peer id, so the two sides
//! meet through the mailbox:
//!
//! 1. the GSP stores [`GspAttach`] with its peer id and a generation one above the last
//!    one; it knows of no queues until the driver acknowledges that generation;
//! 2. the driver allocates and initialises fresh queues and their boot arguments, stores
//!    the arguments' bus address in `DRIVER_GSP_ARGS`, then [`DriverAttach`] with that
//!    generation, a new session number and its own peer id (whom the GSP interrupts), and
//!    rings the GSP;
//! 3. the GSP, seeing a new (generation, session), reads `DRIVER_GSP_ARGS`, reads the
//!    arguments from the RAM it maps, locates the queues from them alone (inside that RAM,
//!    checked through their PTE page: `vgsp::Vgsp::locate`), and starts over on the fresh
//!    queues; it refuses (and logs, with the reason) arguments that do not hold, and waits
//!    for the next acknowledgement.
//!
//! The driver attaches anew only to a quiescent queue: at bring-up, or to a GSP that
//! restarted.
//!
//! # The queues are never freed
//!
//! The protocol has no detach: nothing tells the driver that the GSP has let go of the
//! queues of an earlier session, and a GSP still running on them (it reads them when it
//! wakes, and answers what it finds there) would write to memory that is no longer
//! theirs if they were freed. So queues the GSP was told of are leaked, not freed: on a
//! new attach ([`IvshmemGsp::attach`]) and when [`IvshmemGsp`] is dropped. Each attach
//! costs one `GspMem` (0x81000 bytes, a 1 MiB block) for the life of the kernel; a
//! release handshake in the mailbox would let the driver free them.
//!
//! [`GspMem`]: nova_core::gsp::fw::GspMem

// A kernel build warns of missing docs (`-Wmissing_docs`), and Linux 7.3's `register!`
// generates an undocumented constant per field (`<FIELD>_RANGE`, `_MASK`, `_SHIFT`).
#![cfg_attr(
    CONFIG_RUST,
    expect(missing_docs, reason = "the constants 7.3's register! generates")
)]

use bitfield_struct::bitfield;
use kernel::{
    device::{
        Bound,
        Device, //
    },
    io::{
        register,
        register::Register,
        Io,
        Mmio,
        Region, //
    },
    prelude::*,
    time::{
        delay::fsleep,
        Delta,
        Instant,
        Monotonic, //
    },
};

use nova_core::gsp::{
    cmdq::{
        BenchSeam,
        MsgqSignal, //
    },
    regs::{
        Bar0Registers,
        Doorbell, //
    },
    Gsp, //
};

/// The PCI vendor id of the device (Red Hat, Inc., formerly Qumranet).
pub const PCI_VENDOR_ID: u16 = 0x1af4;
/// The PCI device id of `ivshmem` (`-plain` and `-doorbell`).
pub const PCI_DEVICE_ID: u16 = 0x1110;

/// The size of the register BAR (BAR0).
pub const REGS_SIZE: usize = 0x100;
/// BAR0 of the device.
pub type IvshmemRegs<'a> = Mmio<'a, Region<REGS_SIZE>>;

/// `IntrMask`: unused with MSI-X.
pub const IVSHMEM_INTR_MASK_OFFSET: usize = 0x00;
/// `IntrStatus`: unused with MSI-X.
pub const IVSHMEM_INTR_STATUS_OFFSET: usize = 0x04;

register! {
    /// `IVPosition`: our own peer id, read-only.
    pub IVSHMEM_IV_POSITION(u32) @ 0x08 {
        /// Set when the device has no peer id (not connected): the register reads -1.
        31:16 invalid;
        /// The peer id the server gave this device.
        15:0 peer;
    }

    /// `Doorbell`: writing it interrupts vector `vector` of peer `peer`.
    pub IVSHMEM_DOORBELL(u32) @ 0x0c {
        /// The peer to interrupt.
        31:16 peer;
        /// The vector of the peer to interrupt.
        15:0 vector;
    }
}

impl IVSHMEM_IV_POSITION {
    /// Returns our peer id.
    ///
    /// # Errors
    ///
    /// - `ENODEV` if the device has no peer id (it is not connected to a server).
    pub fn peer_id(self) -> Result<u16> {
        if self.invalid() != 0 {
            return Err(ENODEV);
        }
        Ok(u16::from(self.peer()))
    }
}

static_assertions::const_assert!(IVSHMEM_DOORBELL::OFFSET + 4 <= REGS_SIZE);
static_assertions::const_assert!(IVSHMEM_IV_POSITION::OFFSET + 4 <= REGS_SIZE);

/// The size of the shared memory (BAR2) of the virtual GSP's device: the mailbox alone.
///
/// The smallest that works: QEMU maps the server's shared-memory file as guest RAM in whole
/// host pages and refuses a file smaller than one ("backing store size ... does not match
/// 'size' option 0x1000" with 2 KiB on a 4 KiB-page host), and a BAR is a power of two,
/// which is all `ivshmem-server` asks. A host with larger pages needs a larger BAR.
pub const SHM_SIZE: usize = 0x1000;
/// BAR2 of the device, mapped as I/O memory: the mailbox.
pub type IvshmemMailbox<'a> = Mmio<'a, Region<SHM_SIZE>>;
/// The offset of [`GspAttach`], stored by the GSP.
pub const GSP_ATTACH_OFFSET: usize = 0x00;
/// The offset of [`DriverAttach`], stored by the driver: a cache line away from the GSP's
/// word.
pub const DRIVER_ATTACH_OFFSET: usize = 0x40;
/// The offset of the bus address of the driver's boot arguments
/// ([`GspArgumentsCached`](nova_core::gsp::fw::GspArgumentsCached)), stored by the driver
/// before [`DriverAttach`].
pub const DRIVER_GSP_ARGS_OFFSET: usize = 0x48;

static_assertions::const_assert!(SHM_SIZE.is_power_of_two());
static_assertions::const_assert!(GSP_ATTACH_OFFSET + 8 <= DRIVER_ATTACH_OFFSET);
static_assertions::const_assert!(
    DRIVER_ATTACH_OFFSET.is_multiple_of(8) && DRIVER_GSP_ARGS_OFFSET.is_multiple_of(8)
);
static_assertions::const_assert!(DRIVER_ATTACH_OFFSET + 8 <= DRIVER_GSP_ARGS_OFFSET);
static_assertions::const_assert!(DRIVER_GSP_ARGS_OFFSET + 8 <= SHM_SIZE);

/// The GSP's mailbox word.
#[bitfield(u64)]
#[derive(PartialEq, Eq)]
pub struct GspAttach {
    /// How many times a GSP attached to this memory; 0 before the first.
    pub generation: u32,
    /// The GSP's peer id: whom the driver's doorbell interrupts.
    pub peer: u16,
    /// [`GspAttach::MAGIC`] once a GSP has attached.
    pub magic: u16,
}

impl GspAttach {
    /// The value of `magic` once a GSP has attached.
    pub const MAGIC: u16 = 0x4753;

    /// Returns whether a GSP has attached.
    pub fn is_attached(self) -> bool {
        self.magic() == Self::MAGIC && self.generation() != 0
    }
}

/// The driver's mailbox word.
#[bitfield(u64)]
#[derive(PartialEq, Eq)]
pub struct DriverAttach {
    /// The GSP generation whose attach this acknowledges.
    pub generation: u32,
    /// How many times the driver initialised the queues; the GSP starts over when it
    /// changes.
    pub session: u16,
    /// The driver's peer id: whom the GSP interrupts.
    pub peer: u16,
}

/// The doorbell of the GSP behind an ivshmem device:
/// [`IVSHMEM_DOORBELL`](struct@IVSHMEM_DOORBELL) with the GSP's peer id and vector 0.
#[derive(Clone, Copy)]
pub struct PeerDoorbell<'a> {
    regs: &'a IvshmemRegs<'a>,
    peer: u16,
}

impl Doorbell for PeerDoorbell<'_> {
    fn ring(&self) {
        // `Io::write_reg` is `writel`: ordered after the caller's earlier writes to the
        // shared memory.
        self.regs.write_reg(
            IVSHMEM_DOORBELL::zeroed()
                .with_peer(self.peer)
                .with_const_vector::<0>(),
        );
    }
}

/// Behind an ivshmem device the driver has the device's registers, not the GPU's BAR0: a
/// CPU sequence the GSP asks for is refused with `ENODEV`.
impl Bar0Registers for PeerDoorbell<'_> {
    fn read32(&self, _: usize) -> Result<u32> {
        Err(ENODEV)
    }

    fn write32(&self, _: usize, _: u32) -> Result {
        Err(ENODEV)
    }
}

/// How often the driver looks at the mailbox while waiting without a signal.
const ATTACH_POLL: Delta = Delta::from_millis(1);

/// The driver's side of the device: the registers, the mailbox, the device the queues are
/// allocated for, and the GSP attached.
pub struct IvshmemGsp<'a> {
    regs: &'a IvshmemRegs<'a>,
    mailbox: &'a IvshmemMailbox<'a>,
    dev: &'a Device<Bound>,
    signal: Option<&'static dyn MsgqSignal>,
    gsp: Option<(Pin<KBox<Gsp>>, PeerDoorbell<'a>)>,
    generation: u32,
}

impl<'a> IvshmemGsp<'a> {
    /// Takes the device's registers (BAR0), its mailbox (BAR2), and the device whose
    /// coherent allocations hold the queues (the PCI device: the GSP reaches them by bus
    /// address). `signal`, if any, is raised by the GSP's interrupt (MSI-X vector 0).
    pub fn new(
        regs: &'a IvshmemRegs<'a>,
        mailbox: &'a IvshmemMailbox<'a>,
        dev: &'a Device<Bound>,
        signal: Option<&'static dyn MsgqSignal>,
    ) -> Self {
        Self {
            regs,
            mailbox,
            dev,
            signal,
            gsp: None,
            generation: 0,
        }
    }

    /// Returns the GSP's mailbox word.
    ///
    /// The mailbox accesses check their offset when they run (`try_read64`): a 64-bit
    /// access to a `Region`, 4-byte aligned by type, cannot be proven aligned at build time.
    ///
    /// # Errors
    ///
    /// None in practice: the word is aligned and inside the mailbox.
    pub fn gsp_attach(&self) -> Result<GspAttach> {
        // ORDERING: LOAD->LOAD, LOAD->STORE. `readq`: this read of the GSP's word is ordered
        // before our later accesses, among them the queues' initialisation and the
        // acknowledgement that names this generation (`attach`). Pairs with the GSP's
        // release store of the word.
        Ok(GspAttach::from_bits(
            self.mailbox.try_read64(GSP_ATTACH_OFFSET)?,
        ))
    }

    /// Returns the driver's own mailbox word: what it last acknowledged.
    ///
    /// # Errors
    ///
    /// None in practice: the word is aligned and inside the mailbox.
    pub fn driver_attach(&self) -> Result<DriverAttach> {
        // ORDERING: LOAD->STORE. `readq`: ordered before our later accesses, but no partner:
        // only the driver stores this word, so this reads back our own last `writeq` of it
        // (in `attach`), whose order the protocol relies on; this read needs none.
        Ok(DriverAttach::from_bits(
            self.mailbox.try_read64(DRIVER_ATTACH_OFFSET)?,
        ))
    }

    /// Waits up to `timeout` for a GSP to attach whose generation is not `after`, sleeping
    /// on the signal (a GSP rings the driver when it attaches) or polling.
    fn wait_for_gsp(&self, after: Option<u32>, timeout: Delta) -> Result<GspAttach> {
        let start = Instant::<Monotonic>::now();
        loop {
            let seen = self.signal.map(|s| s.count());
            let attach = self.gsp_attach()?;
            if attach.is_attached() && Some(attach.generation()) != after {
                return Ok(attach);
            }
            let left = timeout.as_nanos() - start.elapsed().as_nanos();
            if left <= 0 {
                return Err(ETIMEDOUT);
            }
            let nap = Delta::from_nanos(left.min(ATTACH_POLL.as_nanos()));
            match (self.signal, seen) {
                (Some(signal), Some(seen)) => signal.wait(seen, nap),
                _ => fsleep(nap),
            }
        }
    }

    /// Waits for a GSP to attach, allocates and initialises fresh queues for it and tells it
    /// where they are; returns its generation. With `after`, waits for a GSP other than
    /// generation `after` (one started after that one died). The queues of an earlier
    /// attach are leaked (see "The queues are never freed" in the module documentation).
    ///
    /// # Errors
    ///
    /// - `ETIMEDOUT` if no GSP attaches within `timeout`.
    /// - `ENODEV` if the device is not connected to a server.
    /// - `ENOMEM` if the queues' memory cannot be had.
    pub fn attach(&mut self, after: Option<u32>, timeout: Delta) -> Result<u32> {
        let attach = self.wait_for_gsp(after, timeout)?;
        let own_peer = self.regs.read(IVSHMEM_IV_POSITION).peer_id()?;
        let gsp = KBox::pin_init(Gsp::new(self.dev), GFP_KERNEL)?;
        if let Some(signal) = self.signal {
            gsp.cmdq().set_signal(signal);
        }
        let args = gsp.args().dma_address();

        let session = self.driver_attach()?.session().wrapping_add(1);
        let ack = DriverAttach::new()
            .with_generation(attach.generation())
            .with_session(session)
            .with_peer(own_peer);
        // ORDERING: STORE->STORE. `writeq`: orders our earlier stores to coherent memory
        // (the queues' and the arguments' initialisation in `Gsp::new`) before this store of
        // the arguments' address. The GSP relies on the acknowledgement's `writeq` below,
        // which orders this store too.
        self.mailbox.try_write64(args, DRIVER_GSP_ARGS_OFFSET)?;
        // ORDERING: STORE->STORE. `writeq`: orders our earlier stores, to coherent memory
        // (the queues' and the arguments' initialisation in `Gsp::new`) and to the mailbox
        // (`DRIVER_GSP_ARGS` just above), before this acknowledgement, which lets the GSP
        // use them. Pairs with the GSP's acquire load of the word, after which it reads
        // `DRIVER_GSP_ARGS`, the arguments and the queues.
        self.mailbox
            .try_write64(ack.into_bits(), DRIVER_ATTACH_OFFSET)?;

        let doorbell = PeerDoorbell {
            regs: self.regs,
            peer: attach.peer(),
        };
        doorbell.ring();
        self.generation = attach.generation();
        if let Some((earlier, _)) = self.gsp.replace((gsp, doorbell)) {
            // A GSP may still run on them: never freed (the module documentation).
            core::mem::forget(earlier);
        }
        Ok(self.generation)
    }

    /// Returns the generation of the GSP last attached, 0 if none.
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// Returns the attached GSP and its doorbell.
    ///
    /// # Errors
    ///
    /// - `ENODEV` if no GSP is attached.
    pub fn gsp(&self) -> Result<(&Gsp, PeerDoorbell<'a>)> {
        let (gsp, doorbell) = self.gsp.as_ref().ok_or(ENODEV)?;
        Ok((gsp, *doorbell))
    }
}

impl Drop for IvshmemGsp<'_> {
    fn drop(&mut self) {
        if let Some((gsp, _)) = self.gsp.take() {
            // The GSP was told of these queues and may still run on them: never freed
            // (the module documentation).
            core::mem::forget(gsp);
        }
    }
}
