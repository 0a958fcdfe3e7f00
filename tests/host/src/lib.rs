// SPDX-License-Identifier: GPL-2.0

//! The host tier: the driver on the calling thread, the virtual GSP on its own thread
//! behind a simulated BAR0 whose doorbell wakes it (shared with the KUnit end-to-end
//! suite, [`vgsp_kunit::gsp_thread`]).

pub use vgsp_kunit::gsp_thread::with_gsp_thread;
