// SPDX-License-Identifier: GPL-2.0

//! The GSP behind QEMU's `ivshmem-doorbell` PCI device (1af4:1110).
//!
//! Here the GSP is a process on the host, a peer of the device, with its own view of the
//! memory:
//!
//! - BAR0 holds the device's registers; writing
//!   [`IVSHMEM_DOORBELL`](struct@IVSHMEM_DOORBELL) with the GSP's peer id interrupts it.
//!   That write is this device's [`Doorbell`] ([`PeerDoorbell`]), where a GPU has
//!   `NV_PGSP_QUEUE_HEAD`.
//! - BAR2 is the shared memory: [`GspMem`] at offset 0 (the GSP sees it at bus address
//!   0), and the attach mailbox in the last page.
//! - The GSP raises MSI-X vector 0 after posting a message; the driver sleeps on it
//!   ([`MsgqSignal`]) or, without MSI-X, polls.
//!
//! # Attaching
//!
//! The GSP process can die and be started again with a new peer id, so the two sides
//! meet through a mailbox of two words in BAR2, each stored by one side only:
//!
//! 1. the GSP stores [`GspAttach`] with its peer id and a generation one above the last
//!    one, then leaves the queues alone until the driver acknowledges that generation;
//! 2. the driver initialises the queues, stores [`DriverAttach`] with that generation, a
//!    new session number and its own peer id (whom the GSP interrupts), and rings the GSP;
//! 3. the GSP, seeing a new (generation, session), starts over on the fresh queues.
//!
//! The driver attaches anew only to a quiescent queue: at bring-up, or to a GSP that
//! restarted.

use core::ptr::NonNull;

use bitfield_struct::bitfield;
use kernel::{
    dma::Coherent,
    io::{
        register,
        register::Register,
        Io,
        Mmio,
        Region, //
    },
    prelude::*,
    sync::atomic::{
        Acquire,
        Atomic,
        Relaxed,
        Release, //
    },
    time::{
        delay::fsleep,
        Delta,
        Instant,
        Monotonic, //
    },
};

use crate::gsp::{
    cmdq::MsgqSignal,
    fw::{
        GspMem,
        GSP_PAGE_SIZE, //
    },
    regs::Doorbell,
    Gsp,
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
        // CAST: `peer` is a 16-bit field.
        Ok(self.peer() as u16)
    }
}

static_assertions::const_assert!(IVSHMEM_DOORBELL::OFFSET + 4 <= REGS_SIZE);
static_assertions::const_assert!(IVSHMEM_IV_POSITION::OFFSET + 4 <= REGS_SIZE);

/// The size of the shared memory (BAR2) the virtual GSP's device has: a power of two, as
/// a BAR.
pub const SHM_SIZE: usize = 1 << 20;
/// The offset of [`GspMem`] in the shared memory, and its bus address for the GSP.
pub const GSP_MEM_OFFSET: usize = 0;
/// The offset of the attach mailbox: the last page.
pub const MAILBOX_OFFSET: usize = SHM_SIZE - GSP_PAGE_SIZE;
/// The offset of [`GspAttach`], stored by the GSP.
pub const GSP_ATTACH_OFFSET: usize = MAILBOX_OFFSET;
/// The offset of [`DriverAttach`], stored by the driver: a cache line away from the GSP's
/// word.
pub const DRIVER_ATTACH_OFFSET: usize = MAILBOX_OFFSET + 64;

static_assertions::const_assert!(SHM_SIZE.is_power_of_two());
static_assertions::const_assert!(GSP_MEM_OFFSET + core::mem::size_of::<GspMem>() <= MAILBOX_OFFSET);
static_assertions::const_assert!(DRIVER_ATTACH_OFFSET + 8 <= SHM_SIZE);

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
                .with_vector(0u32),
        );
    }
}

/// How often the driver looks at the mailbox while waiting without a signal.
const ATTACH_POLL: Delta = Delta::from_millis(1);

/// The driver's side of the device: the registers, the shared memory, and the GSP
/// attached to it.
///
/// # Invariants
///
/// `shm` is valid for reads and writes of [`SHM_SIZE`] bytes for `'a` and shared only with
/// the device; `mailbox` is its last page; `gsp`, if any, holds the only
/// [`Coherent`] of the [`GspMem`] in it.
pub struct IvshmemGsp<'a> {
    regs: &'a IvshmemRegs<'a>,
    shm: NonNull<u8>,
    mailbox: Coherent<[u64]>,
    signal: Option<&'static dyn MsgqSignal>,
    gsp: Option<(Gsp, PeerDoorbell<'a>)>,
    generation: u32,
}

impl<'a> IvshmemGsp<'a> {
    /// Takes the device's registers and shared memory. `signal`, if any, is raised by the
    /// GSP's interrupt (MSI-X vector 0).
    ///
    /// # Errors
    ///
    /// - `EINVAL` if the shared memory is smaller than [`SHM_SIZE`] or not page-aligned.
    ///
    /// # Safety
    ///
    /// `shm` must be the device's shared memory, valid for reads and writes of `len` bytes
    /// for `'a`, and not accessed by the CPU other than through the returned value.
    pub unsafe fn new(
        regs: &'a IvshmemRegs<'a>,
        shm: NonNull<u8>,
        len: usize,
        signal: Option<&'static dyn MsgqSignal>,
    ) -> Result<Self> {
        if len < SHM_SIZE || !(shm.as_ptr() as usize).is_multiple_of(GSP_PAGE_SIZE) {
            return Err(EINVAL);
        }
        // SAFETY: `shm + MAILBOX_OFFSET` is page-aligned and valid for the page that
        // follows for `'a` (the caller's guarantee, `len >= SHM_SIZE`); the mailbox page
        // overlaps no other allocation made from `shm`.
        let mailbox = unsafe {
            Coherent::<[u64]>::from_device_memory(
                core::ptr::slice_from_raw_parts_mut(
                    shm.add(MAILBOX_OFFSET).cast::<u64>().as_ptr(),
                    GSP_PAGE_SIZE / 8,
                ),
                MAILBOX_OFFSET as u64,
            )?
        };
        // INVARIANT: checked above and guaranteed by the caller; nothing attached yet.
        Ok(Self {
            regs,
            shm,
            mailbox,
            signal,
            gsp: None,
            generation: 0,
        })
    }

    fn word(&self, offset: usize) -> Result<&Atomic<u64>> {
        self.mailbox.atomic_u64(offset - MAILBOX_OFFSET)
    }

    /// Returns the GSP's mailbox word, with acquire semantics.
    ///
    /// # Errors
    ///
    /// None in practice: the word is inside the mailbox.
    pub fn gsp_attach(&self) -> Result<GspAttach> {
        // ORDERING: LOAD->STORE. Acquire: orders this load of the GSP's attach before our
        // stores that initialise the queues for it. Pairs with the GSP's release store of
        // the word, after which it leaves the queues alone.
        Ok(GspAttach::from_bits(
            self.word(GSP_ATTACH_OFFSET)?.load(Acquire),
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

    /// Waits for a GSP to attach, initialises the queues for it and tells it so; returns
    /// its generation. With `after`, waits for a GSP other than generation `after` (one
    /// started after that one died). A GSP attached earlier, with its queues, is dropped.
    ///
    /// # Errors
    ///
    /// - `ETIMEDOUT` if no GSP attaches within `timeout`.
    /// - `ENODEV` if the device is not connected to a server.
    /// - `ENOMEM` if the queues' buffers cannot be had.
    pub fn attach(&mut self, after: Option<u32>, timeout: Delta) -> Result<u32> {
        let attach = self.wait_for_gsp(after, timeout)?;
        let own_peer = self.regs.read(IVSHMEM_IV_POSITION).peer_id()?;
        // The old queues go before the memory is taken again.
        self.gsp = None;
        // SAFETY: `shm` is valid and page-aligned for `SHM_SIZE` bytes for `'a` (type
        // invariant), which holds a `GspMem` at `GSP_MEM_OFFSET`; the previous allocation
        // of it was dropped just above, so this is the only one.
        let mem = unsafe {
            Coherent::<GspMem>::from_device_memory(
                self.shm.add(GSP_MEM_OFFSET).cast::<GspMem>().as_ptr(),
                GSP_MEM_OFFSET as u64,
            )?
        };
        let mut gsp = Gsp::new_in(mem)?;
        if let Some(signal) = self.signal {
            gsp.cmdq.set_signal(signal);
        }

        let word = self.word(DRIVER_ATTACH_OFFSET)?;
        // Only the driver stores this word: its own last value.
        let session = DriverAttach::from_bits(word.load(Relaxed))
            .session()
            .wrapping_add(1);
        let ack = DriverAttach::new()
            .with_generation(attach.generation())
            .with_session(session)
            .with_peer(own_peer);
        // ORDERING: STORE->STORE. Release: orders our stores that initialised the queues
        // (`Gsp::new_in` above) before this acknowledgement, which lets the GSP use them.
        // Pairs with the GSP's acquire load of the word.
        word.store(ack.into_bits(), Release);

        let doorbell = PeerDoorbell {
            regs: self.regs,
            peer: attach.peer(),
        };
        doorbell.ring();
        self.generation = attach.generation();
        // INVARIANT: the allocation of `GspMem` moved into `gsp` is the only one.
        self.gsp = Some((gsp, doorbell));
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
    pub fn gsp(&mut self) -> Result<(&mut Gsp, PeerDoorbell<'a>)> {
        let (gsp, doorbell) = self.gsp.as_mut().ok_or(ENODEV)?;
        Ok((gsp, *doorbell))
    }
}
