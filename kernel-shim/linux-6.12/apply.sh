#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# apply.sh TREE
#
# Drops this project into the Linux 6.12 source tree TREE:
#
# 1. the in-kernel flavour of the shim: the shim's environment-independent modules,
#    copied unchanged into rust/kernel and rust/macros, the modules only a kernel has
#    (kernel-shim/linux-6.12/rust/kernel), the C glue for the ivshmem-doorbell PCI device
#    (kernel-shim/linux-6.12/rust/helpers), and rust-kernel-6.12.patch, which declares them;
# 2. the project itself at drivers/vgsp (a symbolic link to this checkout), hooked
#    into drivers/Makefile and drivers/Kconfig, so Kbuild reads the repository's
#    top-level Kbuild and Kconfig.
#
# Idempotent: files are copied only when they differ (so make rebuilds only what
# changed), and a changed patch is reverted and applied anew.

set -euo pipefail

fail() { printf 'apply.sh: %s\n' "$*" >&2; exit 1; }

[ $# -eq 1 ] || fail "usage: $0 <linux-6.12 tree>"
TREE=$(cd "$1" 2>/dev/null && pwd) || fail "no such directory: $1"
HERE=$(cd "$(dirname "$0")" && pwd)
SHIM=$(dirname "$HERE")
REPO=$(dirname "$SHIM")
[ -f "$TREE/rust/kernel/lib.rs" ] || fail "$TREE is not a kernel tree with Rust support"
grep -q '^VERSION = 6$' "$TREE/Makefile" && grep -q '^PATCHLEVEL = 12$' "$TREE/Makefile" ||
    fail "$TREE is not Linux 6.12 (the overlay is written against 6.12's rust/kernel)"
command -v patch >/dev/null || fail "patch is required (apt-get install patch)"

copy() { # copy SRC DST-in-tree, only when different
    local dst=$TREE/$2
    mkdir -p "$(dirname "$dst")"
    cmp -s "$1" "$dst" || cp "$1" "$dst"
}

# Shared with the host flavour, unchanged.
copy "$SHIM/src/dma.rs" rust/kernel/dma.rs
copy "$SHIM/src/io.rs" rust/kernel/io.rs
copy "$SHIM/src/io/poll.rs" rust/kernel/io/poll.rs
copy "$SHIM/src/io/register.rs" rust/kernel/io/register.rs
copy "$SHIM/src/sync/atomic.rs" rust/kernel/sync/atomic.rs
copy "$SHIM/src/sync/barrier.rs" rust/kernel/sync/barrier.rs
copy "$SHIM/src/time.rs" rust/kernel/time/delta.rs
copy "$SHIM/src/transmute.rs" rust/kernel/transmute.rs
copy "$SHIM/src/ptr.rs" rust/kernel/ptr.rs
copy "$SHIM/src/ptr/projection.rs" rust/kernel/ptr/projection.rs
copy "$SHIM/src/kunit.rs" rust/kernel/kunit/suite.rs
copy "$SHIM/macros/src/kunit.rs" rust/macros/kunit.rs
# Only in a kernel.
for f in env.rs ivshmem.rs vdev.rs kunit/register.rs alloc/kvec_ext.rs; do
    copy "$HERE/rust/kernel/$f" "rust/kernel/$f"
done
# The ivshmem-doorbell PCI glue, built with the C helpers (6.12 has no kernel::pci).
for f in vgsp_ivshmem.c vgsp_ivshmem.h; do
    copy "$HERE/rust/helpers/$f" "rust/helpers/$f"
done

PATCH=$HERE/rust-kernel-6.12.patch
APPLIED=$TREE/.vgsp-rust-kernel.patch
if [ -f "$APPLIED" ] && ! cmp -s "$APPLIED" "$PATCH"; then
    patch -d "$TREE" -p1 -R -s <"$APPLIED" || fail "cannot revert the previous overlay patch"
    rm -f "$APPLIED"
fi
if [ ! -f "$APPLIED" ]; then
    patch -d "$TREE" -p1 -N -s --dry-run <"$PATCH" >/dev/null ||
        fail "rust-kernel-6.12.patch does not apply to $TREE (a modified or different tree?)"
    patch -d "$TREE" -p1 -N -s <"$PATCH"
    cp "$PATCH" "$APPLIED"
fi

# The project at drivers/vgsp.
if [ -e "$TREE/drivers/vgsp" ] && [ ! -L "$TREE/drivers/vgsp" ]; then
    fail "$TREE/drivers/vgsp exists and is not this overlay's link"
fi
ln -sfn "$REPO" "$TREE/drivers/vgsp"
grep -qx 'obj-$(CONFIG_NOVA_CORE_VGSP)	+= vgsp/' "$TREE/drivers/Makefile" ||
    printf 'obj-$(CONFIG_NOVA_CORE_VGSP)\t+= vgsp/\n' >>"$TREE/drivers/Makefile"
if ! grep -q '^source "drivers/vgsp/Kconfig"' "$TREE/drivers/Kconfig"; then
    sed -i 's#^endmenu$#source "drivers/vgsp/Kconfig"\n\nendmenu#' "$TREE/drivers/Kconfig"
    grep -q '^source "drivers/vgsp/Kconfig"' "$TREE/drivers/Kconfig" || fail "cannot hook drivers/Kconfig"
fi
