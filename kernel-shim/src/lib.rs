// SPDX-License-Identifier: GPL-2.0

//! The subset of the Rust-for-Linux `kernel` crate that the nova-core driver and the
//! virtual GSP use, under upstream's paths and names: the host's stand-in for Linux 7.3's
//! `kernel` crate.
//!
//! The driver is written against these paths only. In a kernel it builds against 7.3's
//! own, unmodified `kernel` crate, and nothing of this crate goes into the tree; here it
//! runs on the host, under loom, or freestanding (`no_std`). What differs between those
//! lives here, chosen by the build and never by the driver:
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
//! port and not here yet. The "ours" column describes this crate. The kernel tier
//! (`cargo xtask kernel-7.3`) builds against 7.3's own crate, so a difference below is one
//! only the host tests live with, while the kernel tier proves the driver against the real
//! thing. Each step of the port updates the rows it touches, so the table stays true until
//! every row is **same** or **not in 7.3**.
//!
//! Measured 2026-12-01: `nova-core`, `vgsp` and the KUnit suites build against the `rust/`
//! of a pristine Linux 7.3.4 (its unmodified `kernel`, `pin_init` and in-tree zerocopy,
//! with bitfield-struct and static_assertions beside): 0 errors. `cargo xtask api-7.3`
//! measures `nova-core`; the kernel tier builds all of them.
//!
//! | 7.3 path | ours | status | difference and why |
//! |---|---|---|---|
//! | `prelude::*` | `prelude::*` | differs | Ours is a subset (`Pin`, `flags::*`, `KBox`, `KVec`, `KVVec`, `code::*`, `Error`, `Result`, `Zeroable`, `kunit_tests`, `pr_{debug,info,warn,err}!`). 7.3's also brings `Vec`, `Box`, `size_of`, zerocopy's `FromBytes`/`IntoBytes`, `dev_*!`, `fmt!` and more: once ours does, its `Vec` and `Box` shadow std's in the five host files that glob it and use std's. |
//! | `alloc::KVec<T>` | `alloc::KVec<T>` | same | The methods used (`new`, `with_capacity`, `push`, `extend_from_slice`, `resize`, `reserve`, `truncate`, `clear`) take 7.3's arguments, the fallible ones returning `Result<_, AllocError>`. Ours is a newtype over `alloc`'s `Vec`, not 7.3's `Vec<T, Kmalloc>`, and ignores the flags: the host has one allocator. |
//! | `alloc::KVVec<T>` | `alloc::KVVec<T>` | differs | Ours is an alias of `KVec<T>`; 7.3's is a type of its own (`Vec<T, KVmalloc>`), so code mixing the two builds here and not there. |
//! | `alloc::flags::{GFP_KERNEL, __GFP_ZERO}` | the same | same | Our values are placeholders: `KVec` ignores them and coherent memory is zeroed whatever they say. |
//! | `error::Result<T = (), E = Error>` | the same | same | |
//! | `error::Error` | `error::Error` | differs | `name()` gives `Option<&'static str>`, 7.3's `Option<&'static CStr>`; `from_errno`/`to_errno` match. Ours adds `Display`, which nothing uses. |
//! | `error::code::{EIO, EINVAL, ETIMEDOUT, EMSGSIZE, ERANGE, ENOMEM, ENODEV, ENOSPC, EOVERFLOW}` | the same | same | The codes used. Ours declares 20 of 7.3's. |
//! | `pr_info!`, `pr_err!` | the same, with `pr_warn!`, `pr_debug!` | same | Both want the caller's `__LOG_PREFIX` (`module!` makes it in 7.3; our crates write it by hand). Ours format with `core::format_args!`, 7.3's with `fmt!`, whose `{}` needs `kernel::fmt::Display` (which the integers, `bool` and `str` printed today have). |
//! | `dev_dbg!`, `dev_err!` | — | 7.3 has, we lack | They print through a 7.3-shaped `Device`. |
//! | `device::{Device<Ctx = Normal>, DeviceContext, Normal, Bound}` | the same | differs | 7.3's context parameter: DMA constructors take `&Device<Bound>`, which derefs to `&Device`. Ours is a name (`const fn Device::<Bound>::new(&'static str)`, `name() -> &'static str`) and, in host builds, an optional DMA pool (see `host::DmaPool`): on the host there is no `struct device` to wrap; 7.3's wraps one, `name()` gives `&CStr`, and has `Core`/`CoreInternal` too. |
//! | `dma::{Coherent<T>, CoherentBox<T>, CoherentView<'a, T>, DmaAddress}` | the same | differs | 7.3's names and methods: `Coherent::<T>::zeroed`, `Coherent::<T>::zeroed_slice` (a `Coherent<[T]>`), `CoherentBox::<[T]>::zeroed_slice`, `size`, `len`, `as_ptr`, `as_mut_ptr`, `dma_address`, unsafe `as_ref`/`as_mut`; `CoherentBox` derefs to `T` and turns `into()` a `Coherent`; `&Coherent<T>` and `CoherentView` are I/O views whose `io_read!`/`io_write!` are single volatile accesses and whose byte views `copy_from_slice`/`copy_to_slice`. The constructors take `&Device<Bound>` as 7.3's do, but no attributes (no `*_with_attrs`); the memory is zeroed pages from the environment's allocator whose bus address is the CPU address: the GSP is simulated and no `dma_alloc_coherent` is behind it; or, for a host device made with `Device::with_dma_pool`, pages of its pool at the pool's bus addresses. Under the model backend every 32-bit access and byte copy is a recorded loom access. |
//! | — | `DmaView::atomic_u64` | not in 7.3 | Virtual GSP and the ivshmem GSP process: a `&Atomic<u64>` in shared memory (`Atomic::from_ptr` of the word; `EOPNOTSUPP` under loom), the copy engine's mbarrier word. The driver's side of that word is 7.3's own `Atomic::from_ptr`. |
//! | — | `dma::DmaView<'a>`, `Coherent::device_view` | not in 7.3 | The device's side of coherent memory, every access bounds-checked: the virtual GSP, the fuzz targets, the model and the test benches use it. A real device is not Rust code, so 7.3 has no such view. The suites reach it as crate `vdev` (`vdev::{DmaView, device_view}`): `kernel-shim/vdev` on the host, which re-exports these, `kernel-shim/linux-7.3/vdev` in a kernel. |
//! | — | `dma::DmaReadObserver`, `Coherent::set_read_observer` | not in 7.3 | Test bench only: a hostile device rewrites the memory between two of the driver's byte copies (`nova_core_gsp_cmdq_errors`). |
//! | `io::{io_project!, io_read!, io_write!}` | the same | same | `io_project!(io, .a.b[try: i])` narrows any `IoBase` (a view, a `&Coherent<T>`); `io_read!`/`io_write!` read and write through it with one access. Our own text over 7.3's syntax and expansion (`ProjectHelper`, `IoBase::as_view`, `ptr::project!`). |
//! | `ptr::{project!, KnownSize, Alignment, Alignable, const_align_up}`, `ptr::projection::{OutOfBound, ProjectIndex, ProjectField}` | the same | differs | Same names, signatures and projections (`.field`, `[try: i]` giving `ERANGE`, `[panic: i]`, `[build: i]`, `usize` and range indices, types with `Deref` and packed fields refused). `[build: i]` panics when it runs where 7.3 fails the build (no `build_error` here). |
//! | `io::{Io<'a>, IoBase<'a>, IoBackend, IoCapable<T>, IoCopyable, IoLoc<Base, T>}` | the same | differs | 7.3's traits and methods (`read32(offset)`, `write32(value, offset)`, their `try_` forms, `read`/`write`/`update`/`try_update` at an `IoLoc`, `read_val`/`write_val`, `copy_read`/`copy_write`, `copy_from_slice`/`copy_to_slice`, `try_cast`, `size`, `len`), `Io` implemented for every `IoBase`. Offsets that 7.3 checks at build time (`read32`, `write32`, ...) panic at run time here; alignment is checked at build time as in 7.3, so a 64-bit fixed-offset access to a `Region` (only known to be 4-byte aligned) does not build, and the driver's ivshmem mailbox uses `try_read64`/`try_write64`; `copy_read`/`copy_write` take this crate's `transmute` traits where 7.3 takes zerocopy's. |
//! | `io::{Mmio<'a, T>, RelaxedMmio<'a, T>, MmioRaw<T>, Region<SIZE>, ResourceSize}` | the same | same | `Mmio` accesses are `readl`/`writel`-ordered (the same barriers), `Mmio::relaxed()` gives the unordered ones; `MmioRaw::new`, `new_region`, `addr`, `size`, `unsafe Mmio::from_raw`. 7.3's `SysMem`, `IoSysMap` are not here. |
//! | — | `io::MmioWriteObserver`, `MmioRaw::{from_ptr, with_observer}` | not in 7.3 | Test bench: a region backed by memory keeps its allocation's provenance (`from_ptr`) and tells the simulated device of every 32-bit register write (the doorbells of the host's `vdev::SimBar`; the kernel's is an `Io` backend of its own, since 7.3's `Mmio` tells no one). |
//! | `io::register!`, `io::register::{Register, FixedRegister, FixedRegisterLoc, LocatedRegister}`, `Io::{write_reg, try_write_reg}` | the same | differs | A subset: fixed-offset registers only (no relative, array or alias registers, no `=>`/`?=>` fields). The fields are typed as 7.3 types them: `field()` returns `num::Bounded<STORAGE, WIDTH>`, `with_field` takes any `Into<Bounded<STORAGE, WIDTH>>` (so a type too wide for the field does not build), `with_const_field::<V>()` is a `const fn`, `try_with_field` takes any `TryIntoBounded` and returns `EOVERFLOW`; `from_raw`/`into_raw` and `From` both ways; `zeroed()` is `Zeroable`'s (the prelude's), the register types implementing it. Ours alone: `Default`, and a `Debug` showing the fields in hex. A register beyond the region panics at the access, where 7.3 fails the build. The driver's `NV_PGSP_QUEUE_HEAD` and ivshmem registers use it. |
//! | `num::{Bounded<T, N>, TryIntoBounded, Integer, Signed, Unsigned}` | the same | same | 7.3's constructors and conversions (`new::<V>()` checked at build time, `try_new`, `from_expr`, `get`, `extend`, `try_shrink`, `cast`, `shr`, `shr_exact`, `shl`, `into_bool`; `From` each primitive into the `Bounded`s of its signedness with room for all its values and `bool` into any unsigned one, `From` a `Bounded` into each primitive wide enough for its bits and one unsigned bit into `bool`), `Deref` to `T`, comparisons and operators with a `Bounded` or a `T`, the formatting traits (`Debug` derived). `from_expr` checks its value when it runs (a panic) where 7.3 proves it at build time (`build_assert!`); `Deref` gives the optimiser no range hint. 7.3's `num::casts` is not here. |
//! | `prelude::Zeroable` (7.3: `pin_init::Zeroable`) | `init::Zeroable`, in the prelude | differs | The unsafe trait with the provided `zeroed()`, for the integers, `bool`, `char`, `()`, arrays and every `register!` type. 7.3's also has `init_zeroed()`, a derive macro and the `const fn pin_init::zeroed()`, which ours lacks, and 7.3's `kernel::init` has no `Zeroable`: name it through the prelude. |
//! | `macros::paste!` | the same | same | Host only (ours, in `macros`); in a kernel, `register!` and `paste!` are 7.3's. What our `register!` names its accessors with. |
//! | `io::poll::read_poll_timeout` | the same | same | Same signature and loop; ours has no `might_sleep()` check and no `#[track_caller]`. |
//! | `sync::atomic::{Atomic<T>, Relaxed, Acquire, Release, Full}` | the same | same | `Atomic<T>` for `i32`/`u32`/`i64`/`u64`/`isize`/`usize` with 7.3's `new`, `from_ptr`, `as_ptr`, `get_mut`, `load`, `store`, `xchg`, `cmpxchg`, `add`, `fetch_add`, `fetch_sub`, and the sealed `ordering::{Ordering, AcquireOrRelaxed, ReleaseOrRelaxed}`; backed by `core`'s atomics (loom's under the model), `Full` as `SeqCst`. 7.3 also has `bool`/`i8`/`i16`/pointers, `AtomicFlag` and free functions; under loom ours has no `as_ptr`/`get_mut`, a `from_ptr` that panics (the copy engine's call builds; no model scenario reaches it) and a non-`const` `new` (a loom atomic is not memory). |
//! | `sync::barrier::{dma_mb, Full, Read, Write}` | the same | same | Same calls and instructions (arm64 `dmb osh`/`oshld`/`oshst`; x86-64 `mfence` or a compiler barrier); ours has `smp_mb`, `mb` too. `Full` is the atomics' `ordering::Full`, re-exported through `sync::barrier::ordering` as in 7.3. Under loom `dma_mb` is a fence. |
//! | — | `sync::barrier::DMA_MB_ALL_FULL` | not in 7.3 | Benchmark switch (feature `dma-mb-all-full`); the benchmark checks at build time that `nova_core::BARRIER_ALL_FULL` (the driver's own feature) agrees with it. |
//! | — | `sync::barrier::{FLAVOURS, DMA_INSTRUCTIONS, stats}` | not in 7.3 | Benchmark only (`vgsp-barriers`, feature `dma-mb-stats`). |
//! | `sync::{Mutex, new_mutex!}` | — | 7.3 has, we lack | |
//! | `time::Delta` (`Delta<U: TimeUnit = Nsec>`) | `time::Delta` | differs | Ours has no unit parameter, no `+`, `-`, `*`, `/`, `as_millis_ceil` or `rem_nanos`; it adds `Default` and makes `is_zero`, `is_negative`, `as_micros_ceil`, `as_millis` `const`. `as_micros_ceil` of a span below −1 µs differs: −1.5 µs gives 0 here, −1 in 7.3. The parts used (`ZERO`, `from_nanos`/`micros`/`millis`/`secs`, `as_nanos`, `as_millis`, `is_zero`) match. |
//! | `time::{Instant<C: ClockSource>, Monotonic, ClockSource}` | the same | same | Ours has only `Monotonic` (7.3 also `RealTime`, `BootTime`, `Tai`) and adds `Debug`. |
//! | `time::delay::fsleep` | the same | differs | Same signature, other edges: ours returns at once for a negative span and has no upper bound; 7.3's clamps to `0..=i32::MAX` µs, so a negative span sleeps the maximum, about 36 minutes. Both spin below 10 µs, as C's `fsleep` does. |
//! | `#[kunit_tests(name)]` (`macros`, in the prelude) | the same name | differs | The kernel tier uses 7.3's own. 7.3's compiles the module only under `CONFIG_KUNIT`, makes each `#[test]` an `extern "C"` case of a `kunit_case` array for `kunit_unsafe_test_suite!` (a `#[cfg]` on a case applies to its entry too), redirects `assert!`/`assert_eq!` only inside each case's own body (by shadowing them there: a helper function's `assert!` stays `core`'s, a panic), takes no message in them, and accepts `()` or any `Result`. Ours keeps each case a host `#[test]`, declares a `KUNIT_SUITE: kunit::Suite` through `__kunit_suite!` for the host runner, lists every case whatever its `#[cfg]` (so a case configured out does not build), rewrites every `assert!`, `assert_eq!` and `assert_ne!` of the module, helpers' included, into `core`'s, messages allowed, and accepts `()` or `error::Result`. The suites write no assertion message, so they build under both. |
//! | — | `kunit::{Suite, Case}` | not in 7.3 | Host only in use: what our `#[kunit_tests]` declares and `vgsp_kunit::SUITES` lists, for the host's KTAP runner. 7.3's attribute registers each suite itself and makes nothing to list. |
//! | — | `host::kunit::{run, Totals}` | not in 7.3 | Host only: the KTAP runner of `vgsp-host`. |
//! | — | `host::device()` | not in 7.3 | Host only: the simulated device that tools and fuzz targets bind to. |
//! | — | `host::DmaPool`, `device::Device::<Bound>::with_dma_pool`, `Device::dma_pool` | not in 7.3 | Ours, test bench (host only): a device whose coherent allocations (`Coherent::zeroed`, `zeroed_slice`, `CoherentBox::zeroed`) are carved from a mapping the caller shares with another process, page-aligned bump allocation (a freed block leaks within the pool), bus address = the caller's bus base + the offset. The ivshmem host test plays QEMU with it: the GSP process reaches the driver's `GspMem` in "guest RAM" by bus address, as it does under QEMU. 7.3's `Device` has a `struct device` and the real DMA API behind it. |
//! | — | `vdev::{device, SimBar, run_beside}` | not in 7.3 | Test bench: the suites' device, a memory-backed BAR whose doorbells wake a waiter, a device model on a thread of its own. The suites reach them as crate `vdev`: `kernel-shim/vdev` on the host, which re-exports these, `kernel-shim/linux-7.3/vdev` in a kernel (a faux device, a BAR that is an `Io` backend of its own, a kthread), written on 7.3's crate. |
//! | — | `model::*` | not in 7.3 | The loom backend (`--cfg loom`), tests only: agents, the access trace, barrier mutations, `ModelBar`. |

#![no_std]

extern crate alloc as alloc_crate;
#[cfg(any(feature = "host", loom))]
extern crate std;

pub mod alloc;
#[cfg(doctest)]
mod compile_fail;
pub mod device;
pub mod dma;
mod env;
pub mod error;
#[cfg(feature = "host")]
pub mod host;
pub mod init;
pub mod io;
pub mod kunit;
#[cfg(loom)]
pub mod model;
pub mod num;
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
