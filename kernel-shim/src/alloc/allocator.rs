// SPDX-License-Identifier: GPL-2.0

//! The kernel's three allocators, as the `A` of [`Vec<T, A>`](super::Vec) and
//! [`Box<T, A>`](super::Box).
//!
//! Here they are names only: the memory of every container comes from the environment's
//! global allocator, whichever of them its type names (see [`super`]). In a kernel they are
//! `krealloc`, `vrealloc` and `kvrealloc`.

/// `kmalloc`: physically contiguous memory, meant for small allocations.
///
/// Host: the global allocator.
pub struct Kmalloc;

/// `vmalloc`: virtually contiguous memory, for large allocations.
///
/// Host: the global allocator.
pub struct Vmalloc;

/// `kvmalloc`: `kmalloc` first, `vmalloc` when that fails, for allocations whose size may
/// be beyond `kmalloc`'s.
///
/// Host: the global allocator.
pub struct KVmalloc;
