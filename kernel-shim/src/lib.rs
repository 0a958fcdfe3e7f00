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
pub mod sync;
pub mod time;
pub mod transmute;
#[cfg(feature = "host")]
pub mod vdev;

pub use macros;

pub use macros::kunit_tests;
