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
//! Measured 2026-12-01: the driver crate (`nova-core`), compiled for x86_64 against the
//! `rust/` of a pristine Linux 7.3.4 build (its unmodified `kernel`, `pin_init` and in-tree
//! zerocopy, with bitfield-struct and static_assertions beside), stops at 8 errors, each
//! an item below: `Coherent::atomic_u64` (2) and `Coherent::from_device_memory` (2), ours;
//! `sync::barrier::DMA_MB_ALL_FULL`, ours (since then the driver names its barrier variant
//! from its own feature: 7 errors; `cargo xtask api-7.3` measures it); the `register!` fields, which 7.3 types
//! `num::Bounded` (2: a cast, and a `with_` given a `u32`); and `zeroed()` of a register,
//! which 7.3 takes from `pin_init::Zeroable` in the prelude.
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
//! | `device::{Device<Ctx = Normal>, DeviceContext, Normal, Bound}` | the same | differs | 7.3's context parameter: DMA constructors take `&Device<Bound>`, which derefs to `&Device`. Ours is a name (`const fn Device::<Bound>::new(&'static str)`, `name() -> &'static str`): on the host there is no `struct device` to wrap; 7.3's wraps one, `name()` gives `&CStr`, and has `Core`/`CoreInternal` too. The 6.12 patch gives 6.12's `Device` the same parameter (and `unsafe Device::<Bound>::as_bound`, ours, for the suites' root device). |
//! | `dma::{Coherent<T>, CoherentBox<T>, CoherentView<'a, T>, DmaAddress}` | the same | differs | 7.3's names and methods: `Coherent::<T>::zeroed`, `Coherent::<T>::zeroed_slice` (a `Coherent<[T]>`), `CoherentBox::<[T]>::zeroed_slice`, `size`, `len`, `as_ptr`, `as_mut_ptr`, `dma_address`, unsafe `as_ref`/`as_mut`; `CoherentBox` derefs to `T` and turns `into()` a `Coherent`; `&Coherent<T>` and `CoherentView` are I/O views whose `io_read!`/`io_write!` are single volatile accesses and whose byte views `copy_from_slice`/`copy_to_slice`. The constructors take `&Device<Bound>` as 7.3's do, but no attributes (no `*_with_attrs`); the memory is zeroed pages from the environment's allocator (the page allocator in the 6.12 flavour) whose bus address is the CPU address: the GSP is simulated and no `dma_alloc_coherent` is behind it. Under the model backend every 32-bit access and byte copy is a recorded loom access. |
//! | — | `dma::Coherent::from_device_memory` | not in 7.3 | Driver code (`nova-core`'s ivshmem): the shared-memory BAR of the emulated device, RAM on the far side, gets the coherent-memory accessors because its protocol is coherent memory's; 7.3 would map it as a PCI BAR. |
//! | — | `Coherent::atomic_u64`, `DmaView::atomic_u64` | not in 7.3 | Driver and virtual GSP: a `&Atomic<u64>` in shared memory (`Atomic::from_ptr` of the word; `EOPNOTSUPP` under loom), the copy engine's mbarrier word. |
//! | — | `dma::DmaView<'a>`, `Coherent::device_view` | not in 7.3 | The device's side of coherent memory, every access bounds-checked: the virtual GSP, the fuzz targets, the model and the test benches use it. A real device is not Rust code, so 7.3 has no such view. |
//! | — | `dma::DmaReadObserver`, `Coherent::set_read_observer` | not in 7.3 | Test bench only: a hostile device rewrites the memory between two of the driver's byte copies (`nova_core_gsp_cmdq_errors`). |
//! | `io::{io_project!, io_read!, io_write!}` | the same | same | `io_project!(io, .a.b[try: i])` narrows any `IoBase` (a view, a `&Coherent<T>`); `io_read!`/`io_write!` read and write through it with one access. Our own text over 7.3's syntax and expansion (`ProjectHelper`, `IoBase::as_view`, `ptr::project!`). |
//! | `ptr::{project!, KnownSize, Alignment, Alignable, const_align_up}`, `ptr::projection::{OutOfBound, ProjectIndex, ProjectField}` | the same | differs | Same names, signatures and projections (`.field`, `[try: i]` giving `ERANGE`, `[panic: i]`, `[build: i]`, `usize` and range indices, types with `Deref` and packed fields refused). `[build: i]` panics when it runs where 7.3 fails the build (no `build_error` here). |
//! | `io::{Io<'a>, IoBase<'a>, IoBackend, IoCapable<T>, IoCopyable, IoLoc<Base, T>}` | the same | differs | 7.3's traits and methods (`read32(offset)`, `write32(value, offset)`, their `try_` forms, `read`/`write`/`update`/`try_update` at an `IoLoc`, `read_val`/`write_val`, `copy_read`/`copy_write`, `copy_from_slice`/`copy_to_slice`, `try_cast`, `size`, `len`), `Io` implemented for every `IoBase`. Offsets that 7.3 checks at build time (`read32`, `write32`, ...) panic at run time here; `copy_read`/`copy_write` take this crate's `transmute` traits where 7.3 takes zerocopy's. |
//! | `io::{Mmio<'a, T>, RelaxedMmio<'a, T>, MmioRaw<T>, Region<SIZE>, ResourceSize}` | the same | same | `Mmio` accesses are `readl`/`writel`-ordered (the same barriers), `Mmio::relaxed()` gives the unordered ones; `MmioRaw::new`, `new_region`, `addr`, `size`, `unsafe Mmio::from_raw`. 7.3's `SysMem`, `IoSysMap` are not here. |
//! | — | `io::MmioWriteObserver`, `MmioRaw::{from_ptr, with_observer}` | not in 7.3 | Test bench: a region backed by memory keeps its allocation's provenance (`from_ptr`) and tells the simulated device of every 32-bit register write (the doorbells of `vdev::SimBar`). |
//! | `io::register!`, `io::register::{Register, FixedRegister, FixedRegisterLoc, LocatedRegister}`, `Io::{write_reg, try_write_reg}` | the same | differs | A subset: fixed-offset registers only (no relative, array or alias registers, no `=>`/`?=>` fields). 7.3's fields are `num::Bounded`, which we lack: our getters return the storage integer, `with_field` takes `Into<storage>` and panics on a value too wide for the field (7.3's cannot be given one), `try_with_field` and `with_const_field` match; `zeroed()` is an inherent `const fn`, not `Zeroable`'s. A register beyond the region panics at the access, where 7.3 fails the build. The driver's `NV_PGSP_QUEUE_HEAD` and ivshmem registers use it. |
//! | `macros::paste!` | the same | same | Host only (ours, in `macros`); in the 6.12 flavour the tree's own. What `register!` names its accessors with. |
//! | `io::poll::read_poll_timeout` | the same | same | Same signature and loop; ours has no `might_sleep()` check and no `#[track_caller]`. |
//! | `sync::atomic::{Atomic<T>, Relaxed, Acquire, Release, Full}` | the same | same | `Atomic<T>` for `i32`/`u32`/`i64`/`u64`/`isize`/`usize` with 7.3's `new`, `from_ptr`, `as_ptr`, `get_mut`, `load`, `store`, `xchg`, `cmpxchg`, `add`, `fetch_add`, `fetch_sub`, and the sealed `ordering::{Ordering, AcquireOrRelaxed, ReleaseOrRelaxed}`; backed by `core`'s atomics (loom's under the model), `Full` as `SeqCst`. 7.3 also has `bool`/`i8`/`i16`/pointers, `AtomicFlag` and free functions; under loom ours has no `from_ptr`/`as_ptr`/`get_mut` and a non-`const` `new` (a loom atomic is not memory). |
//! | `sync::barrier::{dma_mb, Full, Read, Write}` | the same | same | Same calls and instructions (arm64 `dmb osh`/`oshld`/`oshst`; x86-64 `mfence` or a compiler barrier); ours has `smp_mb`, `mb` too. `Full` is the atomics' `ordering::Full`, re-exported through `sync::barrier::ordering` as in 7.3. Under loom `dma_mb` is a fence. |
//! | — | `sync::barrier::DMA_MB_ALL_FULL` | not in 7.3 | Benchmark switch (feature `dma-mb-all-full`); the benchmark checks at build time that `nova_core::BARRIER_ALL_FULL` (the driver's own feature) agrees with it. |
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
