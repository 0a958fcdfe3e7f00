#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel tier, first stage: builds Debian's Linux 6.12 with Rust from
# tinyconfig plus tests/kernel/<arch>.config, boots it under QEMU with a
# timeout, and checks the KUnit results (the kernel's own Rust doctests for
# now) with the tree's kunit.py. The project's crates are not dropped into the
# tree yet; this stage proves the toolchain, the build and the boot.
#
# Usage: tests/kernel.sh [x86_64]
# Caches (outside the checkout): ${VGSP_CACHE:-~/.cache/vgsp}/{bindgen,linux-6.12,build-<arch>}.

set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
ARCH=${1:-x86_64}
CACHE=${VGSP_CACHE:-$HOME/.cache/vgsp}
TREE=$CACHE/linux-6.12
BUILD=$CACHE/build-$ARCH
START=$SECONDS

say() { printf '==== [%4ds] %s\n' "$((SECONDS - START))" "$*"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

case "$ARCH" in
x86_64) QEMU=qemu-system-x86_64; IMAGE=arch/x86/boot/bzImage; MAKEARCH=(ARCH=x86_64) ;;
*) fail "architecture $ARCH is not supported yet (x86_64 is)" ;;
esac

need=()
for p in rustc-web rust-web-src clang lld llvm libclang-dev bc flex bison libelf-dev \
    libssl-dev cpio python3 xz-utils linux-source-6.12 qemu-system-x86; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
done
if ((${#need[@]})); then
    [ "$(id -u)" = 0 ] || fail "missing Debian packages: ${need[*]} (sudo apt-get install ${need[*]})"
    say "installing ${need[*]}"
    apt-get update -qq || fail "apt-get update failed"
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null 2>&1; then
        # apt sometimes cannot resolve the whole set at once; one by one it can.
        for p in "${need[@]}"; do
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$p" >/dev/null || fail "apt-get install $p failed"
        done
    fi
fi

BINDGEN=$CACHE/bindgen/bin/bindgen
if [ ! -x "$BINDGEN" ]; then
    say "building bindgen-cli (once, about 2 minutes)"
    cargo install bindgen-cli --locked --root "$CACHE/bindgen" >/dev/null || fail "cargo install bindgen-cli failed"
fi

if [ ! -f "$TREE/Makefile" ]; then
    say "unpacking /usr/src/linux-source-6.12.tar.xz into $TREE (once)"
    rm -rf "$TREE.tmp" && mkdir -p "$TREE.tmp"
    tar -xJf /usr/src/linux-source-6.12.tar.xz -C "$TREE.tmp" --strip-components=1 || fail "cannot unpack the kernel source"
    mv "$TREE.tmp" "$TREE"
fi

# rustup's rustc comes first in PATH; the tree must use Debian's, for the target
# crates and the host proc macros alike.
KMAKE=(make -C "$TREE" O="$BUILD" "${MAKEARCH[@]}" RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc
    HOSTRUSTC=/usr/bin/rustc BINDGEN="$BINDGEN" -j"$(nproc)")

mkdir -p "$BUILD"
FRAGMENT=$REPO/tests/kernel/$ARCH.config
if [ ! -f "$BUILD/.config" ] || [ "$FRAGMENT" -nt "$BUILD/.config" ]; then
    say "configuring: tinyconfig + tests/kernel/$ARCH.config"
    "${KMAKE[@]}" tinyconfig >/dev/null || fail "make tinyconfig"
    (cd "$BUILD" && "$TREE/scripts/kconfig/merge_config.sh" -m .config "$FRAGMENT" >/dev/null) || fail "merge_config"
    "${KMAKE[@]}" olddefconfig >/dev/null || fail "make olddefconfig"
    for opt in $(grep -E '^CONFIG_[A-Z0-9_]+=y' "$FRAGMENT" | cut -d= -f1); do
        grep -q "^$opt=y" "$BUILD/.config" || fail "$opt did not stick (make rustavailable?)"
    done
fi

say "building $IMAGE (cold: about 6 minutes; warm: seconds)"
T=$SECONDS
"${KMAKE[@]}" "$(basename "$IMAGE")" >"$BUILD/build.log" 2>&1 || { tail -n 30 "$BUILD/build.log"; fail "kernel build (log: $BUILD/build.log)"; }
say "built in $((SECONDS - T)) s"

say "booting under $QEMU"
T=$SECONDS
timeout 300 "$QEMU" -kernel "$BUILD/$IMAGE" -nographic -no-reboot -m 512 -smp 2 \
    -append 'console=ttyS0 panic=-1' >"$BUILD/boot.log" 2>&1 </dev/null || true
say "boot finished in $((SECONDS - T)) s"
grep -q 'KTAP version 1' "$BUILD/boot.log" || { tail -n 20 "$BUILD/boot.log"; fail "no KTAP in the boot log (hang or crash)"; }

KUNIT_PY=$TREE/tools/testing/kunit/kunit.py
out=$(python3 "$KUNIT_PY" parse "$BUILD/boot.log" 2>&1) || { echo "$out" | tail -n 30; fail "kunit.py reports failures"; }
echo "$out" | grep -E 'Testing complete'
if grep -qE 'Kernel panic' "$BUILD/boot.log" && ! grep -q 'VFS: Unable to mount root fs\|No working init found' "$BUILD/boot.log"; then
    fail "kernel panic before the end of the tests"
fi
say "kernel tier ($ARCH): ok"
