// SPDX-License-Identifier: GPL-2.0

//! QEMU's `ivshmem-doorbell` PCI device (1af4:1110), driven with 7.3's `kernel::pci` and
//! `kernel::irq`: the device a virtual GSP process sits behind.
//!
//! The driver registers at boot (an initcall, made by the crate's `module!`) and drives the
//! first such device it is offered; [`device()`] hands it out:
//!
//! - [`Ivshmem::bar0`]: BAR0, the device's [`REGS_SIZE`] bytes of registers;
//! - [`Ivshmem::mailbox`]: BAR2, the shared memory, at least [`MAILBOX_SIZE`] bytes mapped as
//!   I/O memory (as `pci::Bar` maps any BAR): the attach mailbox, no queues;
//! - [`Ivshmem::dev`]: the PCI device's `struct device`, set up for 64-bit DMA (or 32-bit),
//!   for the coherent allocations that hold the queues, which the peer reaches in guest
//!   RAM by bus address;
//! - [`Ivshmem::interrupts`] and [`Ivshmem::wait_interrupt`]: the interrupts of MSI-X
//!   vector 0, counted, for a thread to sleep on. Without MSI-X ([`Ivshmem::has_msix`]
//!   `false`) nothing counts them, and the driver polls.
//!
//! # For the life of the kernel
//!
//! The suites keep what [`device()`] returns as `&'static`, so once handed out the device
//! must stay bound, its BARs mapped and its interrupt registered, until the kernel stops.
//! A binding ends only in the driver's `unbind` (PCI `remove`) callback, which runs before
//! the driver data and the device's resources are released, and which comes from one of:
//!
//! - the driver's `unbind` file in sysfs: there is none, the driver is registered with
//!   `suppress_bind_attrs` (7.3's `pci::Adapter` sets no such flag, so the registration goes
//!   through an adapter of this module's, which sets it and then registers as `pci::Adapter`
//!   does);
//! - unregistering the driver: never, the registration lives in the crate's `module!`
//!   state, which a built-in crate never drops;
//! - removing the PCI device itself: the device's `remove` file in sysfs, or a hot unplug.
//!   Nothing can refuse that, so once the device has been handed out the callback does not
//!   return: it logs an error and sleeps forever, the device stays bound, and everything
//!   handed out stays valid. The removing task hangs (it sleeps as `TASK_IDLE`, so the
//!   hung-task detector does not report it) with the device's lock held, and with the PCI
//!   rescan/remove lock when it came through sysfs or hotplug, so PCI rescans and removals
//!   hang after it too. A device not handed out yet is released as usual, and [`device()`]
//!   then fails with `ENODEV`.
//!
//! `Devres` and its `try_access` are no way out here: a `Devres` access is an RCU read-side
//! critical section, which may not sleep, whereas the driver keeps the registers, the
//! mailbox and the device for as long as a GSP is attached, sleeping on the interrupt in
//! between; and `Devres::access` needs the very `&Device<Bound>` that only a bound scope
//! gives.

use core::{
    marker::PhantomPinned,
    ptr::{
        null_mut,
        NonNull, //
    },
};

use kernel::{
    bindings,
    device::{
        Bound,
        Core,
        Device,
        DeviceContext, //
    },
    dma::{
        Device as _,
        DmaMask, //
    },
    driver,
    io::{
        Io,
        IoBackend,
        IoBase,
        Mmio,
        MmioBackend,
        MmioRaw,
        Region, //
    },
    irq::{
        self,
        IrqReturn, //
    },
    pci::{
        self,
        IrqType,
        IrqTypes,
        IrqVectorRegistration, //
    },
    prelude::*,
    ptr::KnownSize,
    static_lock_class,
    sync::{
        atomic::{
            Acquire,
            Atomic,
            Full,
            Relaxed,
            Release, //
        },
        Arc, //
    },
    task::MAX_SCHEDULE_TIMEOUT,
    time::{
        msecs_to_jiffies,
        Delta, //
    },
    types::Opaque,
    ThisModule, //
};

/// The size of BAR0, the device's registers.
pub const REGS_SIZE: usize = 0x100;

/// The least size of BAR2, the attach mailbox: the device is refused if its BAR2 is smaller.
///
/// A page, the smallest shared memory QEMU maps on a 4 KiB-page host; a larger BAR2 (a larger
/// power of two) is mapped whole, and [`Ivshmem::mailbox`] is checked against this size.
pub const MAILBOX_SIZE: usize = 0x1000;

/// The PCI device id of `ivshmem` (Red Hat, Inc., formerly Qumranet, is the vendor).
const DEVICE_ID: u32 = 0x1110;

/// The BAR of the registers.
const REGS_BAR: u32 = 0;

/// The BAR of the shared memory.
const MAILBOX_BAR: u32 = 2;

/// The offset of `IVPosition`, this peer's id, in BAR0.
const IV_POSITION: usize = 0x08;

/// The name of the driver, of its BAR regions and of its interrupt.
const DRIVER_NAME: &CStr = c"vgsp-ivshmem";

/// [`STATE`]: no device published, and no probe in progress.
const EMPTY: u32 = 0;
/// [`STATE`]: a probe or a release is in progress; nothing is published.
const BUSY: u32 = 1;
/// [`STATE`]: [`PROBED`] is the bound device, not handed out yet.
const PUBLISHED: u32 = 2;
/// [`STATE`]: [`PROBED`] is the bound device, handed out; final.
const TAKEN: u32 = 3;

/// Where the driven device is: [`EMPTY`], [`BUSY`], [`PUBLISHED`] or [`TAKEN`].
///
/// # Invariants
///
/// - `EMPTY` -> `BUSY` only by [`Claim::take`], for a probe, which is the only one in
///   progress while it is not `EMPTY` again;
/// - `BUSY` -> `PUBLISHED` only at the end of a successful probe's initialisation, once
///   [`PROBED`] points to its driver data;
/// - `PUBLISHED` -> `TAKEN` only by [`device()`]; `PUBLISHED` -> `BUSY` only by the driver's
///   `unbind`, before the driver data is dropped;
/// - `BUSY` -> `EMPTY` only when the [`Claim`] is dropped: the probe failed, or the driver
///   data is being dropped;
/// - nothing leaves `TAKEN`: the driver's `unbind` never returns once it sees it.
static STATE: Atomic<u32> = Atomic::new(EMPTY);

/// The driver data of the bound device, while [`STATE`] is [`PUBLISHED`] or [`TAKEN`].
static PROBED: Atomic<*mut Ivshmem> = Atomic::new(null_mut());

/// Returns the probed ivshmem device, from now on for the life of the kernel.
///
/// The first call that succeeds hands the device out for good: from then on it cannot be
/// released (see the [module documentation](self)), and every call returns it.
///
/// # Errors
///
/// - `ENODEV` if no device is bound: none was probed (yet), the probe failed, or the device
///   was removed before anything asked for it.
pub fn device() -> Result<&'static Ivshmem> {
    // ORDERING: `Acquire` pairs with the `Release` store of `PUBLISHED` in `publish` (or with
    // the fully ordered `cmpxchg` to `TAKEN` below, in an earlier caller, itself ordered after
    // that store): the driver data is seen initialised.
    let mut state = STATE.load(Acquire);
    loop {
        match state {
            TAKEN => break,
            // ORDERING: fully ordered: as the `Acquire` load above for this caller, and, as a
            // release, for a later caller's `Acquire` load of `TAKEN`.
            PUBLISHED => match STATE.cmpxchg(PUBLISHED, TAKEN, Full) {
                Ok(_) => break,
                // ORDERING: a failed `cmpxchg` orders nothing; the next turn looks again,
                // with `Acquire`, as above.
                Err(_) => state = STATE.load(Acquire),
            },
            _ => return Err(ENODEV),
        }
    }
    // ORDERING: `Relaxed`: `publish` stores `PROBED` before its `Release` store of
    // `PUBLISHED`, which the loads above are ordered after.
    let ivshmem = PROBED.load(Relaxed);
    // SAFETY: `STATE` is `TAKEN`, so by its invariants `PROBED` points to the driver data of
    // the bound device, which stays bound, its driver data in place and alive, for the life of
    // the kernel: its `unbind` never returns, and nothing else releases it (module
    // documentation). `Ivshmem` is a transparent wrapper of that driver data (`Probed`) with
    // the lifetime of the binding made `'static`, which it is from now on.
    Ok(unsafe { &*ivshmem })
}

/// The probed ivshmem-doorbell device, as [`device()`] hands it out.
///
/// # Invariants
///
/// A reference to an `Ivshmem` points to the driver data of a device that stays bound, for
/// the life of the kernel, to this crate's driver: its `'static` lifetimes are real.
#[repr(transparent)]
pub struct Ivshmem(Probed<'static>);

impl Ivshmem {
    /// Returns the PCI device's `struct device`, bound to the driver (by the type invariant):
    /// the device to allocate the queues' coherent memory for.
    ///
    /// Its DMA masks (streaming and coherent) are 64-bit, or 32-bit if the platform refuses
    /// 64; the peer reaches the allocations by their bus address.
    #[inline]
    pub fn dev(&self) -> &Device<Bound> {
        self.0.pdev.as_ref()
    }

    /// Returns BAR0, the device's registers: `IntrMask` (0x00), `IntrStatus` (0x04),
    /// `IVPosition` (0x08, this peer's id) and `Doorbell` (0x0c, `peer << 16 | vector`).
    #[inline]
    pub fn bar0(&self) -> &Mmio<'_, Region<REGS_SIZE>> {
        self.0.bar0.view()
    }

    /// Returns BAR2, the shared memory, mapped as I/O memory: the attach mailbox, at least
    /// [`MAILBOX_SIZE`] bytes (all of the BAR: `Io::size` tells how much).
    #[inline]
    pub fn mailbox(&self) -> &Mmio<'_, Region<MAILBOX_SIZE>> {
        self.0.mailbox.view()
    }

    /// Returns whether MSI-X vector 0 interrupts the driver; if not, nothing counts the
    /// peer's interrupts and the driver polls.
    #[inline]
    pub fn has_msix(&self) -> bool {
        self.0.msix.is_some()
    }

    /// Returns how many interrupts MSI-X vector 0 has taken so far (`Acquire`).
    ///
    /// What the peer wrote before it sent an interrupt that this count includes is seen by
    /// the caller's later reads.
    #[inline]
    pub fn interrupts(&self) -> u64 {
        self.0.events.count()
    }

    /// Sleeps until the interrupt count differs from `seen` or `timeout` passes, and returns
    /// the count (read as [`Ivshmem::interrupts`] reads it).
    ///
    /// A `timeout` of zero or less reads the count without sleeping. The sleep is killable:
    /// a task being killed returns early, as on a timeout; kernel threads and KUnit cases are
    /// not killed. It sleeps: call it from process context, holding no spinlock.
    pub fn wait_interrupt(&self, seen: u64, timeout: Delta) -> u64 {
        self.0.events.wait(seen, timeout)
    }
}

/// Marks `probed` as the bound device, to be handed out by [`device()`].
///
/// # Safety
///
/// - `probed` must be the driver data of the bound device, fully initialised, pinned in place
///   until the driver's `unbind` has run and then until it is dropped;
/// - `STATE` must be [`BUSY`], claimed by the probe of that device.
unsafe fn publish(probed: NonNull<Probed<'_>>) {
    // ORDERING: `Relaxed`: ordered before the `Release` store below.
    PROBED.store(probed.as_ptr().cast::<Ivshmem>(), Relaxed);
    // ORDERING: `Release`: the initialisation of the driver data, and the store above, come
    // before this; pairs with the `Acquire` loads (and the fully ordered `cmpxchg`) in
    // `device()`.
    // INVARIANT: the probe holds `BUSY` (the caller's guarantee), and `PROBED` is its data.
    STATE.store(PUBLISHED, Release);
}

/// The claim of a probe on [`STATE`]: only one device is driven at a time.
///
/// # Invariants
///
/// While a `Claim` lives, `STATE` is not [`EMPTY`], and no other probe holds a `Claim`.
struct Claim;

impl Claim {
    /// Claims [`STATE`] for a probe.
    ///
    /// # Errors
    ///
    /// - `EBUSY` if another device is being probed, is bound or is being released.
    fn take() -> Result<Self> {
        // ORDERING: `Acquire` pairs with the `Release` store in `drop`: the release of an
        // earlier device, and its last use of `PROBED`, come before this probe.
        match STATE.cmpxchg(EMPTY, BUSY, Acquire) {
            // INVARIANT: `STATE` was `EMPTY`, so no `Claim` lived; it is `BUSY` now.
            Ok(_) => Ok(Self),
            Err(_) => Err(EBUSY),
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        // A `Claim` is dropped with the driver data (after `unbind` moved `STATE` from
        // `PUBLISHED` back to `BUSY`), or when the probe fails before it publishes, so `STATE`
        // is `BUSY` here and nothing is handed out.
        // ORDERING: `Release` pairs with the `Acquire` of the next `Claim::take`.
        STATE.store(EMPTY, Release);
    }
}

/// Returns the C `struct pci_dev` of `pdev`.
///
/// 7.3's `pci::Device::as_raw` is not public; `pci::Device` is a transparent wrapper of
/// `Opaque<bindings::pci_dev>`, itself a transparent wrapper of the C `struct pci_dev`, so the
/// pointer to one is a pointer to the other.
fn raw_pci_dev<Ctx: DeviceContext>(pdev: &pci::Device<Ctx>) -> *mut bindings::pci_dev {
    core::ptr::from_ref(pdev).cast::<bindings::pci_dev>().cast_mut()
}

/// A PCI device enabled for memory space and bus mastering, set up for DMA, holding the
/// driver's [`Claim`]: disabled again (and the claim released) when dropped.
///
/// # Invariants
///
/// - `pdev` was enabled (`pci_enable_device_mem`) by [`Enabled::new`], and is bound to the
///   driver while `Self` lives;
/// - `Self` is dropped after everything else of the device that the driver set up (in
///   [`Probed`], it is the last field).
struct Enabled<'bound> {
    pdev: &'bound pci::Device<Bound>,
    /// Dropped after `Enabled::drop` has disabled the device.
    _claim: Claim,
}

impl<'bound> Enabled<'bound> {
    /// Claims the driver for `pdev`, enables it for memory space and bus mastering (MSI-X
    /// messages are writes by the device), and sets its DMA masks to 64 bits or, failing
    /// that, 32.
    ///
    /// # Errors
    ///
    /// - `EBUSY` if another device is driven ([`Claim::take`]).
    /// - The error of `pci_enable_device_mem`.
    /// - `EIO` if not even 32-bit DMA masks are accepted.
    fn new(pdev: &'bound pci::Device<Core<'_>>) -> Result<Self> {
        let claim = Claim::take().inspect_err(|_| {
            dev_err!(pdev, "another ivshmem device is driven; only one is supported\n");
        })?;
        pdev.enable_device_mem()?;
        // INVARIANT: `pdev` was just enabled, and is bound for `'bound`; a failure from here
        // on drops `this`, which disables it again.
        let this = Self {
            pdev,
            _claim: claim,
        };
        pdev.set_master();
        // SAFETY: No DMA allocation or mapping is made for `pdev` concurrently: the driver is
        // probing it, and hands it out (to anybody who could allocate) only once probed.
        unsafe { pdev.dma_set_mask_and_coherent(DmaMask::new::<64>()) }
            // SAFETY: As above.
            .or_else(|_| unsafe { pdev.dma_set_mask_and_coherent(DmaMask::new::<32>()) })
            .inspect_err(|_| dev_err!(pdev, "neither a 64- nor a 32-bit DMA mask\n"))?;
        Ok(this)
    }
}

impl Drop for Enabled<'_> {
    fn drop(&mut self) {
        let raw = raw_pci_dev(self.pdev);
        // SAFETY: `raw` is the bound `struct pci_dev` that `new` enabled (type invariant); its
        // interrupt, vectors and BARs, which the driver set up after enabling it, are released
        // already (the type invariant too), so disabling it is what remains, as `pcim_*`
        // management does at unbind.
        unsafe {
            bindings::pci_clear_master(raw);
            bindings::pci_disable_device(raw);
        }
    }
}

/// A BAR, requested and mapped whole, with the view of it that the driver data hands out.
///
/// # Invariants
///
/// `view` is the mapping `_bar` owns, at least `SIZE` bytes: valid while `self` lives, though
/// its type says `'bound`. [`MappedBar::view`] lends it out only for as long as `self` is
/// borrowed.
struct MappedBar<'bound, const SIZE: usize> {
    view: Mmio<'bound, Region<SIZE>>,
    _bar: pci::Bar<'bound, SIZE>,
}

impl<'bound, const SIZE: usize> MappedBar<'bound, SIZE> {
    /// Requests and maps BAR `index` of `pdev`.
    ///
    /// # Errors
    ///
    /// - `ENODEV` if the BAR is not memory space or is smaller than `SIZE` bytes.
    /// - `EBUSY` if the region is taken, `ENOMEM` if it cannot be mapped.
    fn new(pdev: &'bound pci::Device<Bound>, index: u32) -> Result<Self> {
        // CAST: `IORESOURCE_MEM` is one bit of the resource flags, which are a `c_ulong`.
        const IORESOURCE_MEM: c_ulong = bindings::IORESOURCE_MEM as c_ulong;

        let len = pdev.resource_len(index)?;
        let slot = usize::try_from(index)?;
        // SAFETY: `raw_pci_dev(pdev)` is a valid `struct pci_dev`. Its `resource` array is
        // written by the PCI core when it assigns the BARs, which it does not do to a device
        // bound to a driver, as `pdev` is.
        let flags = unsafe { (*raw_pci_dev(pdev)).resource.get(slot).map(|r| r.flags) };
        let flags = flags.ok_or(EINVAL)?;
        let memory = flags & IORESOURCE_MEM != 0;
        if !memory || usize::try_from(len).map_or(true, |len| len < SIZE) {
            dev_err!(
                pdev,
                "BAR{index} is not {SIZE} bytes of memory space (flags {flags:#x}, {len} bytes)\n"
            );
            return Err(ENODEV);
        }
        let bar = pdev.iomap_region_sized::<SIZE>(index, DRIVER_NAME)?;
        let whole = MmioBackend::as_ptr((&bar).as_view());
        let raw = MmioRaw::new_region(whole.addr(), KnownSize::size(whole))?;
        // SAFETY: `raw` is `bar`'s mapping, aligned and at least `SIZE` bytes (as `bar`'s own
        // view is), which stays mapped while `bar` lives: while the `MappedBar` made of both
        // does, as the type invariant asks.
        let view = unsafe { Mmio::from_raw(raw) };
        // INVARIANT: `view` is `bar`'s mapping, as shown above.
        Ok(Self { view, _bar: bar })
    }

    /// Returns the view of the BAR, for as long as `self` is borrowed.
    #[inline]
    fn view(&self) -> &Mmio<'_, Region<SIZE>> {
        &self.view
    }
}

/// The interrupt count and the threads that sleep on it.
///
/// The wait is the kernel's `wait_event` pattern: a waiter puts itself on `queue`, under the
/// queue's lock, before it reads `count`; an interrupt increments `count` before it takes that
/// lock to wake the queue. So either the waker finds the waiter on the queue and wakes it, or
/// the waiter, queued after the waker let go of the lock, sees the new count and does not
/// sleep.
///
/// # Invariants
///
/// `queue` is an initialised `wait_queue_head`.
#[pin_data]
struct Events {
    /// The interrupts taken so far.
    count: Atomic<u64>,
    /// Where [`Events::wait`] sleeps.
    #[pin]
    queue: Opaque<bindings::wait_queue_head>,
}

// SAFETY: `count` is an atomic, and `queue` is used only through the C wait-queue functions,
// which take the queue's own spinlock (with interrupts saved), from any thread or interrupt.
unsafe impl Send for Events {}

// SAFETY: As for `Send`: every use is through `&self` and safe concurrently.
unsafe impl Sync for Events {}

impl Events {
    /// Creates an interrupt count of zero with an empty wait queue.
    fn new() -> impl PinInit<Self> {
        // INVARIANT: `__init_waitqueue_head` initialises `queue`.
        pin_init!(Self {
            count: Atomic::new(0),
            // SAFETY: `slot` is valid for writes while the closure runs; the name and the lock
            // class key are `'static`.
            queue <- Opaque::ffi_init(|slot| unsafe {
                bindings::__init_waitqueue_head(
                    slot,
                    c"vdev::ivshmem::Events::queue".as_char_ptr(),
                    static_lock_class!().as_ptr(),
                )
            }),
        })
    }

    /// Counts an interrupt and wakes every waiter. Called by the interrupt handler.
    fn interrupt(&self) {
        // ORDERING: `Release`: the handler runs after the peer wrote the memory and sent the
        // interrupt; this publishes what this CPU sees of those writes to the `Acquire` loads of
        // the count (`Events::count`) that see the increment. The increment also comes before
        // the wake-up below takes the queue's lock (see the type documentation).
        self.count.fetch_add(1, Release);
        // SAFETY: `queue` is initialised (type invariant); `__wake_up` may be called from any
        // context, hard interrupts included.
        unsafe { bindings::__wake_up(self.queue.get(), bindings::TASK_NORMAL, 0, null_mut()) };
    }

    /// Returns the interrupt count.
    fn count(&self) -> u64 {
        // ORDERING: `Acquire` pairs with the `Release` increment in `Events::interrupt`: the
        // caller's later reads of the shared memory come after this read of the count.
        self.count.load(Acquire)
    }

    /// See [`Ivshmem::wait_interrupt`].
    fn wait(&self, seen: u64, timeout: Delta) -> u64 {
        /// The state a waiter sleeps in: woken by a wake-up, a timeout or a fatal signal.
        // CAST: `TASK_KILLABLE` is a few low bits, well within a `c_int`.
        const KILLABLE: c_int = bindings::TASK_KILLABLE as c_int;

        let mut left = timeout_jiffies(timeout);
        if left == 0 || self.count() != seen {
            return self.count();
        }
        let entry = Opaque::<bindings::wait_queue_entry>::uninit();
        // SAFETY: `entry` is valid for writes; `init_wait_entry` makes it wake the current task.
        unsafe { bindings::init_wait_entry(entry.get(), 0) };
        loop {
            // SAFETY: `queue` is initialised (type invariant) and `entry` too; `entry` stays
            // where it is, on this stack, until `finish_wait` below takes it off the queue.
            let killed = unsafe {
                bindings::prepare_to_wait_event(self.queue.get(), entry.get(), KILLABLE)
            };
            // The count is read after `entry` is on the queue (type documentation).
            if self.count() != seen || killed != 0 {
                break;
            }
            // SAFETY: Process context (the caller's contract): this may sleep; `left` is a
            // number of jiffies below `MAX_SCHEDULE_TIMEOUT`.
            left = unsafe { bindings::schedule_timeout(left) };
            if left == 0 {
                break;
            }
        }
        // SAFETY: As for `prepare_to_wait_event`; this takes `entry` off the queue if a wake-up
        // has not already.
        unsafe { bindings::finish_wait(self.queue.get(), entry.get()) };
        self.count()
    }
}

/// Returns `timeout` in jiffies for `schedule_timeout`: rounded up, one more for the jiffy
/// that is under way, 0 for a `timeout` of zero or less, and short of forever.
fn timeout_jiffies(timeout: Delta) -> c_long {
    if timeout.as_nanos() <= 0 {
        return 0;
    }
    let millis = u32::try_from(timeout.as_millis_ceil()).unwrap_or(u32::MAX);
    let jiffies = msecs_to_jiffies(millis).saturating_add(1);
    c_long::try_from(jiffies).map_or(MAX_SCHEDULE_TIMEOUT - 1, |j| {
        j.min(MAX_SCHEDULE_TIMEOUT - 1)
    })
}

/// The interrupt handler of MSI-X vector 0.
struct Interrupts(Arc<Events>);

impl irq::Handler for Interrupts {
    fn handle(&self) -> IrqReturn {
        // The vector is the device's alone (MSI-X), and its only cause is a peer's doorbell.
        self.0.interrupt();
        IrqReturn::Handled
    }
}

/// MSI-X vector 0 and its handler.
///
/// # Invariants
///
/// `irq` was requested on a vector of `vectors`, which it borrows with the lifetime
/// `'bound`: `vectors` lives, in place, for as long as `irq` (`Self` is pinned, and drops
/// `irq` first, as it is declared first).
#[pin_data]
struct Msix<'bound> {
    /// The handler's registration: freed (waiting for a running handler) before `vectors`.
    #[pin]
    irq: irq::Registration<'bound, Interrupts>,
    /// The vectors (one, MSI-X), freed once the handler is.
    vectors: IrqVectorRegistration<'bound>,
}

impl<'bound> Msix<'bound> {
    /// Takes MSI-X vector 0 of `pdev` and counts its interrupts in `events`.
    ///
    /// # Errors
    ///
    /// - The error of `pci_alloc_irq_vectors` (the device or platform has no MSI-X) or of
    ///   `request_irq`.
    /// - `ENOMEM` if the registration cannot be allocated.
    fn new(pdev: &'bound pci::Device<Bound>, events: &Arc<Events>) -> Result<Pin<KBox<Self>>> {
        let handler = Interrupts(events.clone());
        KBox::pin_init(
            try_pin_init!(&this in Self {
                vectors: pdev.alloc_irq_vectors(1, 1, IrqTypes::default().with(IrqType::MsiX))?,
                irq <- {
                    // SAFETY: `vectors` is initialised (the line above, initialisers run in
                    // order), and stays alive and in place as long as `irq`, as the type
                    // invariant says: `Self` is pinned, and drops `irq` first.
                    let vectors: &'bound IrqVectorRegistration<'bound> =
                        unsafe { &(*this.as_ptr()).vectors };
                    let request = vectors.index(0)?.into();
                    // SAFETY: The registration is a field of `Self`, in a `KBox`, dropped with
                    // the driver data, or (once the device is handed out) never: then its
                    // memory is never freed either, so the handler's cookie stays valid. It is
                    // not forgotten with its memory reused.
                    unsafe {
                        irq::Registration::new(
                            request,
                            irq::Flags::TRIGGER_NONE,
                            DRIVER_NAME,
                            Ok::<_, Error>(handler),
                        )
                    }
                },
            }? Error),
            GFP_KERNEL,
        )
    }
}

/// The driver data of the driven device: what the probe set up.
///
/// The fields are dropped in their order: the interrupt, then the vectors (both in `msix`),
/// the BARs, and last the device's enablement and the driver's claim.
///
/// # Invariants
///
/// - `bar0`, `mailbox` and `msix` (if any) are `pdev`'s;
/// - once published (see [`STATE`]), `Self` is pinned at the address in [`PROBED`] until it
///   is dropped, which, once [`STATE`] is [`TAKEN`], it never is.
#[pin_data]
struct Probed<'bound> {
    /// MSI-X vector 0 and its handler; `None` without MSI-X.
    msix: Option<Pin<KBox<Msix<'bound>>>>,
    /// The interrupt count, shared with the handler.
    events: Arc<Events>,
    /// BAR0.
    bar0: MappedBar<'bound, REGS_SIZE>,
    /// BAR2.
    mailbox: MappedBar<'bound, MAILBOX_SIZE>,
    /// The device.
    pdev: &'bound pci::Device<Bound>,
    /// Disables the device, then releases the claim, after all of the above is released.
    _enabled: Enabled<'bound>,
    /// Its address is published.
    #[pin]
    _pin: PhantomPinned,
}

impl<'bound> Probed<'bound> {
    /// Sets up `pdev`, enabled by `enabled`, and publishes it for [`device()`].
    fn new(
        pdev: &'bound pci::Device<Bound>,
        enabled: Result<Enabled<'bound>>,
    ) -> impl PinInit<Self, Error> + 'bound {
        try_pin_init!(&this in Self {
            _enabled: enabled?,
            bar0: MappedBar::new(pdev, REGS_BAR)?,
            mailbox: MappedBar::new(pdev, MAILBOX_BAR)?,
            events: Arc::pin_init(Events::new(), GFP_KERNEL)?,
            msix: Msix::new(pdev, events)
                .inspect_err(|e| dev_warn!(pdev, "no MSI-X vector ({e:?}): the driver polls\n"))
                .ok(),
            _: {
                dev_info!(
                    pdev,
                    "ivshmem-doorbell: BAR2 {} KiB, IVPosition {:#x}, MSI-X {}\n",
                    mailbox.view().size() / 1024,
                    bar0.view().read32(IV_POSITION),
                    if msix.is_some() { "yes" } else { "no (the driver polls)" },
                );
            },
            pdev,
            _pin: PhantomPinned,
            // Last: nothing fails after this, the probe succeeds with this data.
            _: {
                // SAFETY: Every field is initialised, in the `KBox` that the PCI adapter keeps
                // as the driver data, pinned and in place until dropped after `unbind`; the
                // probe holds `BUSY` (`_enabled` holds the claim).
                unsafe { publish(this) };
            },
        }? Error)
    }
}

/// The PCI driver.
struct Driver;

kernel::pci_device_table!(
    PCI_TABLE,
    <Driver as pci::Driver>::IdInfo,
    [(pci::DeviceId::from_id(pci::Vendor::REDHAT_QUMRANET, DEVICE_ID), ())]
);

impl pci::Driver for Driver {
    type IdInfo = ();
    type Data<'bound> = Probed<'bound>;

    const ID_TABLE: pci::IdTable<Self::IdInfo> = &PCI_TABLE;

    fn probe<'bound>(
        pdev: &'bound pci::Device<Core<'_>>,
        _id_info: Option<&'bound Self::IdInfo>,
    ) -> impl PinInit<Self::Data<'bound>, Error> + 'bound {
        let enabled = Enabled::new(pdev);
        Probed::new(pdev, enabled)
    }

    fn unbind<'bound>(pdev: &'bound pci::Device<Core<'_>>, _this: Pin<&Self::Data<'bound>>) {
        // ORDERING: `Relaxed`: only the outcome matters. On success no `device()` can take the
        // device any more (it needs `PUBLISHED`); on `TAKEN` nothing is released.
        // INVARIANT: `PUBLISHED` -> `BUSY`, by `unbind`, before the driver data is dropped.
        if let Err(TAKEN) = STATE.cmpxchg(PUBLISHED, BUSY, Relaxed) {
            hold_forever(pdev);
        }
    }
}

/// Keeps a device that has been handed out bound: never returns (module documentation).
fn hold_forever(pdev: &pci::Device<Core<'_>>) -> ! {
    dev_err!(
        pdev,
        "removed after vdev::ivshmem::device() handed it out: it stays bound, and this task \
         sleeps forever\n"
    );
    loop {
        // SAFETY: Process context (a `remove` callback), where sleeping is allowed; the sleep
        // is `TASK_IDLE`, not counted as load or by the hung-task detector, and ignores signals.
        unsafe { bindings::schedule_timeout_idle(MAX_SCHEDULE_TIMEOUT) };
    }
}

/// The registration of [`Driver`]: `pci::Adapter`'s, with `suppress_bind_attrs` set, so that
/// sysfs has no `bind` and `unbind` files for it.
struct Adapter;

// SAFETY: As for `pci::Adapter<Driver>`, whose layout this is: `struct pci_driver` is a
// `repr(C)` type, it embeds a `struct device_driver` at `DEVICE_DRIVER_OFFSET`, and the
// driver data is `Driver`'s, which `pci::Adapter<Driver>` (which `register` registers) stores.
unsafe impl driver::DriverLayout for Adapter {
    type DriverType = bindings::pci_driver;
    type DriverData<'bound> = <Driver as pci::Driver>::Data<'bound>;
    const DEVICE_DRIVER_OFFSET: usize = core::mem::offset_of!(bindings::pci_driver, driver);
}

// SAFETY: `unregister` is `pci::Adapter<Driver>`'s, valid after its `register`, which
// `register` calls and succeeds only if it does.
unsafe impl driver::RegistrationOps for Adapter {
    unsafe fn register(
        reg: &Opaque<bindings::pci_driver>,
        name: &'static CStr,
        module: &'static ThisModule,
    ) -> Result {
        // SAFETY: `reg` is a valid `struct pci_driver`, not registered yet (the caller's
        // contract), so its fields are ours to set.
        unsafe { (*reg.get()).driver.suppress_bind_attrs = true };
        // SAFETY: The caller's contract, passed on: `reg` stays pinned and valid until the
        // matching `unregister`.
        unsafe { <pci::Adapter<Driver> as driver::RegistrationOps>::register(reg, name, module) }
    }

    unsafe fn unregister(reg: &Opaque<bindings::pci_driver>) {
        // SAFETY: The caller's contract: `register`, hence `pci::Adapter<Driver>`'s, succeeded
        // on `reg`.
        unsafe { <pci::Adapter<Driver> as driver::RegistrationOps>::unregister(reg) }
    }
}

/// The crate's `module!` state: the driver's registration, made by the initcall of a built-in
/// crate and never dropped.
#[pin_data]
pub(crate) struct DriverModule {
    #[pin]
    _driver: driver::Registration<Adapter>,
}

impl kernel::InPlaceModule for DriverModule {
    fn init(module: &'static ThisModule) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            _driver <- driver::Registration::new(DRIVER_NAME, module),
        })
    }
}
