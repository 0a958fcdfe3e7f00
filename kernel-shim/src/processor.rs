// SPDX-License-Identifier: GPL-2.0

//! Processor related primitives, as Linux 7.3's `kernel::processor`.

/// Tells the CPU it is in a busy-wait loop, as C's `cpu_relax()`.
///
/// Ours is [`core::hint::spin_loop`]: the same hint (`pause`, `yield`) without the kernel.
#[inline]
pub fn cpu_relax() {
    core::hint::spin_loop();
}
