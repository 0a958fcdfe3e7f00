// SPDX-License-Identifier: GPL-2.0

//! A kernel tree's nova-core message queue (`gsp/cmdq.rs` with `gsp/cmdq/continuation.rs`,
//! `gsp/fw.rs` with `gsp/fw/commands.rs` and the r570 bindings, `sbuffer.rs`, `num.rs`),
//! compiled unmodified from the tree's files by path (see `build.rs`) against the
//! project's `kernel` shim on the host, and the checks `cargo xtask upstream` runs on it
//! against the virtual GSP.
//!
//! What those files need from `crate::` beyond each other comes from our adapters
//! (`src/adapters/`), each standing in for one upstream module with only what the files
//! use. Ours besides: [`bench`], the machine the queue runs on, [`checks`] (`echo`),
//! [`hostile`], [`nomem`] (the allocation-failure walk), [`fuzz`] (the cargo-fuzz target's
//! body) and [`replay`] (the tree's receive over a `gspq` image).

#![no_std]
// `pinned-init`'s `init!` munches one field per recursion step (7.3's is a proc macro):
// `GspFwWprMeta` has more fields than the default limit allows.
#![recursion_limit = "512"]
#![expect(
    dead_code,
    reason = "only the queue of the driver is here: what the rest would call is dead"
)]

// The bench and the checks use `std` (the driver's files do not).
extern crate std;

include!(concat!(env!("OUT_DIR"), "/upstream.rs"));

#[path = "adapters/driver.rs"]
pub(crate) mod driver;
#[path = "adapters/fb.rs"]
pub(crate) mod fb;
#[path = "adapters/firmware.rs"]
pub(crate) mod firmware;
#[path = "adapters/gpu.rs"]
pub(crate) mod gpu;
#[path = "adapters/vgpu.rs"]
pub(crate) mod vgpu;

mod bench;
pub mod checks;
pub mod fuzz;
pub mod hostile;
pub mod nomem;
pub mod perf;
pub mod replay;
#[cfg(test)]
mod smoke;
