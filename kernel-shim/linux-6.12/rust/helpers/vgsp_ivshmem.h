/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The interface of the ivshmem-doorbell PCI glue (vgsp_ivshmem.c) to Rust.
 *
 * Included by vgsp_ivshmem.c and by rust/bindings/bindings_helper.h, so that
 * bindgen generates `bindings::vgsp_ivshmem_*` from the same prototypes the C
 * side is compiled against. `kernel::ivshmem` wraps them.
 */

#ifndef _RUST_HELPERS_VGSP_IVSHMEM_H
#define _RUST_HELPERS_VGSP_IVSHMEM_H

#include <linux/compiler_types.h>
#include <linux/types.h>

/* Bytes of registers in BAR0 that the glue guarantees are mapped. */
#define VGSP_IVSHMEM_REGS_LEN 256

/* The probed device; opaque to Rust. */
struct vgsp_ivshmem;

struct vgsp_ivshmem *vgsp_ivshmem_device(void);
void __iomem *vgsp_ivshmem_regs(const struct vgsp_ivshmem *iv);
void *vgsp_ivshmem_shm(const struct vgsp_ivshmem *iv);
size_t vgsp_ivshmem_shm_len(const struct vgsp_ivshmem *iv);
bool vgsp_ivshmem_has_msix(const struct vgsp_ivshmem *iv);
u64 vgsp_ivshmem_irq_count(const struct vgsp_ivshmem *iv);
u64 vgsp_ivshmem_wait_irq(struct vgsp_ivshmem *iv, u64 seen, u64 timeout_ns);

#endif /* _RUST_HELPERS_VGSP_IVSHMEM_H */
