// SPDX-License-Identifier: GPL-2.0

//! The ordering proof of the command queue.
//!
//! - [`contract`]: an axiomatic checker of the Linux DMA barrier contract (what loom,
//!   which explores C11, cannot see), with its own litmus tests; its preserved program
//!   order is [`ppo`]'s.
//! - [`compiled`]: the same question asked of a compiled binary: the ordering a trace of
//!   its arm64 instructions (recorded by the project's QEMU plugin, `tools/trace`) shows
//!   between the accesses the ring protocol needs ordered, under Linux's DMA contract and
//!   under arm64's architecture.
//! - [`kernel`]: the driver's trace from the system-mode plugin (nova-core built into the
//!   arm64 kernel), made into the trace [`compiled::check_driver`] decides.
//! - `scenarios` (under `--cfg loom`): the unchanged driver and virtual GSP as two loom
//!   threads over the model backend of the `kernel` shim, each execution's trace then
//!   decided by the contract checker.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p vgsp-model --release`; the mutation
//! tool (`cargo xtask ordering-mutants`) runs the same scenarios once per barrier
//! mutant.

pub mod compiled;
pub mod contract;
pub mod kernel;
pub mod litmus;
pub mod ppo;
#[cfg(loom)]
pub mod scenarios;
