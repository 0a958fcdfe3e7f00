// SPDX-License-Identifier: GPL-2.0

//! Devices.

/// A device bound to its driver.
///
/// On the host this stands for the simulated GPU; it carries only its name.
#[derive(Debug)]
pub struct Device {
    name: &'static str,
}

impl Device {
    /// Creates the description of a device called `name`.
    pub const fn new(name: &'static str) -> Self {
        Self { name }
    }

    /// Returns the name of the device.
    pub fn name(&self) -> &'static str {
        self.name
    }
}
