// SPDX-License-Identifier: GPL-2.0

//! The subset of the Rust-for-Linux `kernel` crate that the nova-core driver and the
//! virtual GSP use, under upstream's paths and names.
//!
//! The driver is written against these paths only. What differs between the places the
//! driver runs lives here, chosen by the build and never by the driver:
//!
//! - the barrier instructions, per architecture ([`sync::barrier`]);
//! - the environment (time, sleeping, the simulated BAR0, the KTAP runner): the `host`
//!   feature selects the host backend built on `std` ([`host`]); without it the crate is
//!   `no_std` and the environment functions are provided by the embedding
//!   ([`env`]), as the kernel provides them to its own `kernel` crate;
//! - under `--cfg loom`, the model backend ([`model`]): loom atomics, fences and cells
//!   for the shared memory, a virtual clock, and a trace of every shared access for the
//!   DMA contract checker.
//!
//! # Against Linux 7.3's `kernel` crate
//!
//! Every `kernel::` item the project uses, beside its counterpart in Linux 7.3's
//! `rust/kernel` (paths are relative to `kernel::`). **same**: path and signature match
//! 7.3's; **differs**: 7.3 has a counterpart, but its path, signature or behaviour is not
//! ours; **not in 7.3**: ours alone, with the reason; **7.3 has, we lack**: needed by the
//! port and not here yet. The "ours" column describes this crate. In the 6.12 flavour the
//! `dma`, `io`, `sync`, `time`, `transmute` and `kunit` rows are these same files, while
//! `alloc`, `error`, `print`, `device` and the prelude are 6.12's own, with the overlay
//! patch's additions. Each step of the port updates the rows it touches, so the table stays
//! true until every row is **same** or **not in 7.3**.
//!
//! | 7.3 path | ours | status | difference and why |
//! |---|---|---|---|
//! | `prelude::*` | `prelude::*` | differs | Ours is a subset (`Pin`, `flags::*`, `KBox`, `KVec`, `KVVec`, `code::*`, `Error`, `Result`, `kunit_tests`, `pr_{debug,info,warn,err}!`). 7.3's also brings `Vec`, `Box`, `size_of`, zerocopy's `FromBytes`/`IntoBytes`, `dev_*!`, `fmt!` and more: once ours does, its `Vec` and `Box` shadow std's in the five host files that glob it and use std's. |
//! | `alloc::KVec<T>` | `alloc::KVec<T>` | same | The methods used (`new`, `with_capacity`, `push`, `extend_from_slice`, `resize`, `reserve`, `truncate`, `clear`) take 7.3's arguments, the fallible ones returning `Result<_, AllocError>`. Ours is a newtype over `alloc`'s `Vec`, not 7.3's `Vec<T, Kmalloc>`, and ignores the flags: the host has one allocator. |
//! | `alloc::KVVec<T>` | `alloc::KVVec<T>` | differs | Ours is an alias of `KVec<T>`; 7.3's is a type of its own (`Vec<T, KVmalloc>`), so code mixing the two builds here and not there. |
//! | `alloc::flags::{GFP_KERNEL, __GFP_ZERO}` | the same | same | Our values are placeholders: `KVec` ignores them and coherent memory is zeroed whatever they say. |
//! | `error::Result<T = (), E = Error>` | the same | same | |
//! | `error::Error` | `error::Error` | differs | `name()` gives `Option<&'static str>`, 7.3's `Option<&'static CStr>`; `from_errno`/`to_errno` match. Ours adds `Display`, which nothing uses. |
//! | `error::code::{EIO, EINVAL, ETIMEDOUT, EMSGSIZE, ERANGE, ENOMEM, ENODEV, ENOSPC, EOVERFLOW}` | the same | same | The codes used. Ours declares 20 of 7.3's; the 6.12 patch adds those 6.12 lacks. |
//! | `pr_info!`, `pr_err!` | the same, with `pr_warn!`, `pr_debug!` | same | Both want the caller's `__LOG_PREFIX` (`module!` makes it in 7.3; our crates write it by hand). Ours format with `core::format_args!`, 7.3's with `fmt!`, whose `{}` needs `kernel::fmt::Display` (which the integers, `bool` and `str` printed today have). |
//! | `dev_dbg!`, `dev_err!` | — | 7.3 has, we lack | They print through a 7.3-shaped `Device`. |
//! | `device::Device<Ctx = Normal>` | `device::Device` | differs | Ours is a name (`const fn new(&'static str)`, `name() -> &'static str`) without device contexts: on the host there is no `struct device` to wrap. 7.3's wraps one, `name()` gives `&CStr`, and its DMA wants `&Device<Bound>`. |
//! | `dma::Coherent<T>` | `dma::CoherentAllocation<T>` | differs | 7.3 has no `CoherentAllocation`: `Coherent<T>` comes from `zeroed(&Device<Bound>, gfp)` (`Coherent<[T]>` from `zeroed_slice`), with `dma_address()`, `as_ptr()`, `len()`. Ours comes from `alloc_coherent(&Device, count, gfp)`, with `dma_handle()`, `start_ptr()`, `count()`, `size()` and the byte copies `read_raw`/`write_raw`; `alloc_coherent` takes zeroed memory from the allocator (the page allocator in the 6.12 flavour), and its bus address is its CPU address: the GSP is simulated and no `dma_alloc_coherent` is behind it. |
//! | `dma::CoherentBox<T>` | — | 7.3 has, we lack | 7.3's CPU-only stage of a `Coherent`, filled before the device sees it. |
//! | — | `dma::CoherentAllocation::from_device_memory` | not in 7.3 | Driver code (`nova-core`'s ivshmem): the shared-memory BAR of the emulated device, RAM on the far side, gets the coherent-memory accessors because its protocol is coherent memory's; 7.3 would map it as a PCI BAR. |
//! | — | `CoherentAllocation::atomic_u64`, `DmaView::atomic_u64` | not in 7.3 | Driver and virtual GSP: a `&Atomic<u64>` in shared memory (`Atomic::from_ptr` of the word; `EOPNOTSUPP` under loom), the copy engine's mbarrier word. |
//! | — | `dma::DmaView<'a>`, `CoherentAllocation::device_view` | not in 7.3 | The device's side of coherent memory, every access bounds-checked: the virtual GSP, the fuzz targets, the model and the test benches use it. A real device is not Rust code, so 7.3 has no such view. |
//! | — | `dma::DmaReadObserver`, `CoherentAllocation::set_read_observer` | not in 7.3 | Test bench only: a hostile device rewrites the memory between two of the driver's reads (`nova_core_gsp_cmdq_errors`). |
//! | `io::io_read!`, `io::io_write!` | `dma_read!`, `dma_write!` | differs | Ours work on a `CoherentAllocation` only: `dma_read!(mem[i].a.b)` gives `Result<F>`, `dma_write!(mem[i].a = v)` gives `Result`. 7.3's work on any `Io` (a `&Coherent<T>` too) with projections, e.g. `io_read!(mem, [try: i].a.b)` (the `?` inside) and `io_write!(mem, [try: i].a, v)`. |
//! | `io::io_project!` | — | 7.3 has, we lack | |
//! | `transmute::{AsBytes, FromBytes}` | the same | same | Moved here from `dma`: 7.3's methods (`from_bytes*`, `as_bytes*`) and impls (integers, `()`, `PhantomData`, arrays, slices; `bool`, `char`, `str` for `AsBytes`). |
//! | `io::Io<'a>` (trait), `io::Mmio<'a, T>` | `io::Io<const SIZE: usize>` (struct) | differs | Ours is the older struct: `&self` accessors whose offsets are checked at run time (a bad one panics). 7.3's is a trait on `Copy` views whose `read32`/`write32` are bounds-checked at build time, and `Mmio::relaxed()` gives the relaxed accessors that ours names `read32_relaxed`/`write32_relaxed`. `read32(offset)`, `write32(value, offset)`, their `try_` forms and the `readl`/`writel` barriers match. |
//! | `io::MmioRaw<T>` | `io::IoRaw<const SIZE: usize>` | differs | 7.3: `MmioRaw::new_region(addr, size)`, then `unsafe Mmio::from_raw(raw)`. Ours: `unsafe IoRaw::new(addr, maxsize)`, then `Io::from_raw(&raw)`. |
//! | — | `io::MmioWriteObserver`, `IoRaw::with_observer` | not in 7.3 | Test bench: a region backed by memory tells the simulated device of every register write (the doorbells of `vdev::SimBar`). |
//! | `io::register!` | — | 7.3 has, we lack | The driver declares `NV_PGSP_QUEUE_HEAD` with `bitfield_struct` and writes its `read`/`write` by hand. |
//! | `io::poll::read_poll_timeout` | the same | same | Same signature and loop; ours has no `might_sleep()` check and no `#[track_caller]`. |
//! | `sync::atomic::{Atomic<T>, Relaxed, Acquire, Release, Full}` | the same | same | `Atomic<T>` for `i32`/`u32`/`i64`/`u64`/`isize`/`usize` with 7.3's `new`, `from_ptr`, `as_ptr`, `get_mut`, `load`, `store`, `xchg`, `cmpxchg`, `add`, `fetch_add`, `fetch_sub`, and the sealed `ordering::{Ordering, AcquireOrRelaxed, ReleaseOrRelaxed}`; backed by `core`'s atomics (loom's under the model), `Full` as `SeqCst`. 7.3 also has `bool`/`i8`/`i16`/pointers, `AtomicFlag` and free functions; under loom ours has no `from_ptr`/`as_ptr`/`get_mut` and a non-`const` `new` (a loom atomic is not memory). |
//! | `sync::barrier::{dma_mb, Full, Read, Write}` | the same | same | Same calls and instructions (arm64 `dmb osh`/`oshld`/`oshst`; x86-64 `mfence` or a compiler barrier); ours has `smp_mb`, `mb` too. `Full` is the atomics' `ordering::Full`, re-exported through `sync::barrier::ordering` as in 7.3. Under loom `dma_mb` is a fence. |
//! | — | `sync::barrier::DMA_MB_ALL_FULL` | not in 7.3 | Benchmark switch (feature `dma-mb-all-full`), read by `nova_core.rs` to name the barrier variant it was built with. |
//! | — | `sync::barrier::{FLAVOURS, DMA_INSTRUCTIONS, stats}` | not in 7.3 | Benchmark only (`vgsp-barriers`, feature `dma-mb-stats`). |
//! | `sync::{Mutex, new_mutex!}` | — | 7.3 has, we lack | |
//! | `time::Delta` (`Delta<U: TimeUnit = Nsec>`) | `time::Delta` | differs | Ours has no unit parameter, no `+`, `-`, `*`, `/`, `as_millis_ceil` or `rem_nanos`; it adds `Default` and makes `is_zero`, `is_negative`, `as_micros_ceil`, `as_millis` `const`. `as_micros_ceil` of a span below −1 µs differs: −1.5 µs gives 0 here, −1 in 7.3. The parts used (`ZERO`, `from_nanos`/`micros`/`millis`/`secs`, `as_nanos`, `as_millis`, `is_zero`) match. |
//! | `time::{Instant<C: ClockSource>, Monotonic, ClockSource}` | the same | same | Ours has only `Monotonic` (7.3 also `RealTime`, `BootTime`, `Tai`) and adds `Debug`. |
//! | `time::delay::fsleep` | the same | differs | Same signature, other edges: ours returns at once for a negative span and has no upper bound; 7.3's clamps to `0..=i32::MAX` µs, so a negative span sleeps the maximum, about 36 minutes. Both spin below 10 µs, as C's `fsleep` does. |
//! | `#[kunit_tests(name)]` (`macros`, in the prelude) | the same name | differs | 7.3 compiles the module only under `CONFIG_KUNIT`, makes each `#[test]` an `extern "C"` case of a `kunit_case` array for `kunit_unsafe_test_suite!`, redirects `assert!`/`assert_eq!` only inside each case's own body (by shadowing them there: a helper function's `assert!` stays `core`'s, a panic), and accepts `()` or any `Result`. Ours keeps each case a host `#[test]`, declares a `KUNIT_SUITE: kunit::Suite` through `__kunit_suite!` (the host runner's, or a registered `kunit_suite` in the 6.12 flavour), redirects `assert_ne!` too and rewrites every assertion of the module, helpers' included (the suites' helper functions assert, so they must change before 7.3's expansion runs them), and accepts `()` or `error::Result`. |
//! | — | `kunit::{Suite, Case}` | not in 7.3 | What `#[kunit_tests]` declares and `vgsp_kunit::SUITES` lists: one description for the host's KTAP runner and the 6.12 registration. |
//! | — | `host::kunit::{run, Totals}` | not in 7.3 | Host only: the KTAP runner of `vgsp-host`. |
//! | — | `host::device()` | not in 7.3 | Host only: the simulated device that tools and fuzz targets bind to. |
//! | — | `vdev::{device, SimBar, run_beside}` | not in 7.3 | Test bench, both flavours: the suites' device, a memory-backed BAR whose doorbells wake a waiter, a device model on a thread of its own. |
//! | — | `model::*` | not in 7.3 | The loom backend (`--cfg loom`), tests only: agents, the access trace, barrier mutations, `ModelBar`. |
//! | — | `ivshmem::{device, Device}` | not in 7.3 | 6.12 flavour only (`linux-6.12/rust/kernel/ivshmem.rs`): the glue for QEMU's ivshmem-doorbell PCI device, used by the `nova_core_ivshmem` suite; 7.3 would use `kernel::pci`. |

#![no_std]

extern crate alloc as alloc_crate;
#[cfg(any(feature = "host", loom))]
extern crate std;

pub mod alloc;
pub mod device;
pub mod dma;
mod env;
pub mod error;
#[cfg(feature = "host")]
pub mod host;
pub mod io;
pub mod kunit;
#[cfg(loom)]
pub mod model;
pub mod prelude;
pub mod print;
pub mod ptr;
pub mod sync;
pub mod time;
pub mod transmute;
#[cfg(feature = "host")]
pub mod vdev;

pub use macros;

pub use macros::kunit_tests;
