// SPDX-License-Identifier: GPL-2.0

//! A driver and a virtual GSP sharing one `GspMem`, and a BAR0 to ring.

use kernel::{
    dma::Coherent,
    prelude::*,
    ptr::KnownSize,
    time::Delta, //
};
use nova_core::gsp::{
    cmdq::{
        BenchSeam,
        Cmdq,
        CommandToGsp, //
    },
    fw::GspMem,
    regs::BAR0_SIZE, //
};
use vdev::{
    BarIo,
    DmaView,
    SimBar, //
};
use vgsp::Vgsp;

/// The register view of a simulated BAR0: what the driver rings its doorbell through in
/// the suites.
pub type SimBar0<'a> = BarIo<'a, BAR0_SIZE>;

/// A short timeout for waits that are expected to fail.
pub const SHORT: Delta = Delta::from_millis(20);
/// A timeout for waits that are expected to succeed.
pub const LONG: Delta = Delta::from_secs(2);
/// How long a caller waits for the reply to its command: as long as the driver's own
/// sends wait (upstream's `send_command`).
pub const REPLY: Delta = Delta::from_secs(5);

/// A BAR0 backed by memory: doorbell writes land there and wake no one (the cases run
/// the GSP in turns).
pub struct TestBar(SimBar<BAR0_SIZE>);

impl TestBar {
    /// Allocates the BAR.
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if the memory cannot be had.
    pub fn new() -> Result<Self> {
        Ok(Self(SimBar::new(&[])?))
    }

    /// Returns the BAR.
    pub fn bar(&self) -> &SimBar0<'_> {
        self.0.io()
    }
}

/// Returns the payload `cmd` puts on the wire: its fixed part, then its variable payload.
///
/// # Errors
///
/// - `ENOMEM` if the bytes cannot be had.
pub fn wire_payload<C: CommandToGsp>(cmd: &C) -> Result<KVec<u8>> {
    let mut bytes = KVec::with_capacity(cmd.size(), GFP_KERNEL)?;
    bytes.extend_from_slice(zerocopy::IntoBytes::as_bytes(&cmd.init()), GFP_KERNEL)?;
    bytes.extend_from_slice(cmd.variable_payload(), GFP_KERNEL)?;
    Ok(bytes)
}

/// Returns the GSP's view of the driver's shared memory, unbounded by a borrow so the
/// driver can keep using its queue mutably.
///
/// # Safety
///
/// The returned view must not be used after `cmdq` is dropped.
pub unsafe fn gsp_view(cmdq: &Cmdq) -> DmaView<'static> {
    // SAFETY: The caller's contract: the queue owns the memory.
    unsafe { device_view(cmdq.gsp_mem()) }
}

/// Returns the device's view of `mem`, unbounded by a borrow.
///
/// # Safety
///
/// The returned view must not be used after `mem` is dropped.
pub unsafe fn device_view<T: KnownSize + ?Sized>(mem: &Coherent<T>) -> DmaView<'static> {
    // SAFETY: The allocation is `size()` bytes, page aligned, and stays where it is while
    // it lives (it is heap memory); the caller promises not to use the view longer.
    unsafe { DmaView::from_raw_parts(mem.as_mut_ptr().cast::<u8>(), mem.size()) }
}

/// A driver queue and a virtual GSP on the same memory.
///
/// Fields drop in order: the GSP (and its view) before the queue that owns the memory.
pub struct Pair {
    /// The virtual GSP.
    pub gsp: Vgsp<'static>,
    /// The driver's queue.
    pub cmdq: Pin<KBox<Cmdq>>,
    /// BAR0.
    pub bar: TestBar,
}

impl Pair {
    /// Creates the pair, both sides freshly reset.
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if memory cannot be had.
    pub fn new() -> Result<Self> {
        Self::with_cmdq(KBox::pin_init(Cmdq::new(vdev::device()?), GFP_KERNEL)?)
    }

    /// Creates the pair on `mem`, an allocation the caller prepared (with a read observer,
    /// say), both sides freshly reset.
    ///
    /// # Errors
    ///
    /// - `EOVERFLOW` if `mem` is smaller than a [`GspMem`].
    /// - `ENOMEM` if memory cannot be had.
    pub fn new_in(mem: Coherent<GspMem>) -> Result<Self> {
        Self::with_cmdq(KBox::pin_init(
            Cmdq::new_in(vdev::device()?, mem),
            GFP_KERNEL,
        )?)
    }

    /// Pairs `cmdq` with a virtual GSP on its memory, and a BAR0.
    fn with_cmdq(cmdq: Pin<KBox<Cmdq>>) -> Result<Self> {
        // SAFETY: `gsp` is dropped before `cmdq`: both live in the returned `Pair`, and
        // fields drop in declaration order.
        let gsp = Vgsp::new(unsafe { gsp_view(&cmdq) })?;
        Ok(Self {
            gsp,
            cmdq,
            bar: TestBar::new()?,
        })
    }

    /// Returns the GSP's (device) view of the shared memory.
    pub fn view(&self) -> DmaView<'_> {
        vdev::device_view(self.cmdq.gsp_mem())
    }

    /// Lets the GSP work until it has nothing left to do.
    ///
    /// # Errors
    ///
    /// Any error of the GSP.
    pub fn gsp_run(&mut self) -> Result<vgsp::Progress> {
        self.gsp.run_until_idle()
    }

    /// Returns a payload of `len` bytes that differs for every `seed`.
    ///
    /// # Errors
    ///
    /// - `ENOMEM` if memory cannot be had.
    pub fn pattern(len: usize, seed: u32) -> Result<KVec<u8>> {
        let mut v = KVec::with_capacity(len, GFP_KERNEL)?;
        let mut x = seed.wrapping_mul(0x9e37_79b9) | 1;
        for _ in 0..len {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            // CAST: keeps the low byte on purpose.
            v.push(x as u8, GFP_KERNEL)?;
        }
        Ok(v)
    }
}

/// Checks `$cond` in a helper of a suite: `Ok(())` if it holds, else `Err(EBADMSG)`
/// after logging the condition with its file and line.
///
/// A helper does not assert: `assert!` is KUnit's, which fails the case running, only
/// from a suite's first case to the end of its module; before that, and outside the
/// module, it is `core`'s, a kernel panic. A helper returns this `Err` instead, and its
/// case passes it on with `?`, which fails the case.
macro_rules! check {
    ($cond:expr) => {
        if $cond {
            Ok(())
        } else {
            ::kernel::pr_err!(
                "check failed at {}:{}: {}\n",
                ::core::file!(),
                ::core::line!(),
                ::core::stringify!($cond)
            );
            Err(::kernel::error::code::EBADMSG)
        }
    };
}
pub(crate) use check;
