// SPDX-License-Identifier: GPL-2.0

//! Synchronisation primitives.

pub mod atomic;
pub mod barrier;
