// SPDX-License-Identifier: GPL-2.0

//! Atomics for memory shared with other agents: `core`'s, or loom's under the model
//! backend so the model checker sees every access.
//!
//! This file is shared: the kernel-tree tier adds it unchanged to the tree's `kernel`
//! crate as `sync/atomic.rs`.

#[cfg(not(loom))]
pub use core::sync::atomic::{
    AtomicU64,
    Ordering, //
};
#[cfg(loom)]
pub use loom::sync::atomic::{
    AtomicU64,
    Ordering, //
};
