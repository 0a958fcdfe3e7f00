// SPDX-License-Identifier: GPL-2.0

//! Adapter standing in for upstream's `vgpu.rs`: the vGPU state `gsp/commands.rs`'s
//! `SetRegistry::new` takes, to decide whether to add the SR-IOV registry key. The
//! harness's GPU has no vGPU, so it is always [`VgpuState::Disabled`]; upstream detects
//! it from the device's SR-IOV capability.

use core::num::NonZero;

/// Whether the GPU booted with vGPU, as upstream's.
#[derive(Debug, Clone, Copy)]
pub(crate) enum VgpuState {
    /// No vGPU.
    Disabled,
    /// vGPU, with the device's number of SR-IOV virtual functions.
    Enabled {
        /// The virtual functions.
        total_vfs: NonZero<u16>,
    },
}
