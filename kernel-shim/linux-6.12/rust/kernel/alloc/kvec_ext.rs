// SPDX-License-Identifier: GPL-2.0

//! `Vec::truncate`, `Vec::clear` and `Vec::resize`, which later kernels have and 6.12's
//! `Vec` lacks; the driver's code uses them under their upstream names.

use super::{
    AllocError,
    Allocator,
    Flags,
    Vec, //
};

impl<T, A: Allocator> Vec<T, A> {
    /// Shortens the vector to `len` elements, dropping the rest; does nothing if it is
    /// not longer than that.
    pub fn truncate(&mut self, len: usize) {
        let old = self.len();
        if len >= old {
            return;
        }
        // SAFETY: `len < old`, so the new length covers only initialised elements, and the
        // ones past it are dropped below and never used again.
        unsafe { self.set_len(len) };
        // SAFETY: Elements `len..old` were initialised and are no longer part of the vector.
        unsafe {
            core::ptr::drop_in_place(core::ptr::slice_from_raw_parts_mut(
                self.as_mut_ptr().add(len),
                old - len,
            ))
        };
    }

    /// Drops every element.
    pub fn clear(&mut self) {
        self.truncate(0);
    }
}

impl<T: Clone, A: Allocator> Vec<T, A> {
    /// Resizes the vector to `new_len` elements, cloning `value` into new ones or
    /// dropping the excess.
    ///
    /// # Errors
    ///
    /// - [`AllocError`] if the memory cannot be had; the vector is left as it was.
    pub fn resize(&mut self, new_len: usize, value: T, flags: Flags) -> Result<(), AllocError> {
        match new_len.checked_sub(self.len()) {
            Some(n) => self.extend_with(n, value, flags),
            None => {
                self.truncate(new_len);
                Ok(())
            }
        }
    }
}
