#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel tier: Debian's Linux 6.12 with Rust, the project dropped in
# (kernel-shim/linux-6.12/apply.sh: the in-kernel shim and drivers/vgsp), built from
# tinyconfig plus tests/kernel/<arch>.config, booted under QEMU with two CPUs and a
# timeout. Every KUnit suite (the project's and the kernel's Rust doctests) must pass,
# as read by the tree's kunit.py.
#
# QEMU runs under the project's runner (tests/ivshmem, `vgsp-qemu`), which starts the
# ivshmem server and the host GSP process first and gives the guest an
# ivshmem-doorbell device: the nova_core_ivshmem suite drives the driver through it,
# and asks the runner (by console lines) to kill the GSP process and start a new one.
# The runner removes every process and file it made; the tier fails if it cannot.
#
# Usage: tests/kernel.sh [x86_64|arm64]...   (default: both)
# Caches (outside the checkout): ${VGSP_CACHE:-~/.cache/vgsp}/
#   bindgen/        bindgen-cli, built once
#   linux-6.12/     the unpacked source with the overlay applied
#   build-<arch>/   the build directory (vgsp-crates/: the crates.io crates for it)

set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
CACHE=${VGSP_CACHE:-$HOME/.cache/vgsp}
TREE=$CACHE/linux-6.12
START=$SECONDS
ARCHES=("$@")
[ ${#ARCHES[@]} -gt 0 ] || ARCHES=(x86_64 arm64)

# What the tier is doing (`say`), and whether `fail` reported the failure in this shell.
DOING="starting"
REPORTED=0

say() { DOING=$*; printf '==== [%4ds] %s\n' "$((SECONDS - START))" "$*"; }
fail() {
    printf 'FAIL: %s\n' "$*" >&2
    [ "$BASHPID" != "$$" ] || REPORTED=1
    exit 1
}

# A failure that no `fail` reported (a command failing outside any check, under `set -e`
# or `pipefail`) still says where the tier stopped.
finish() {
    local rc=$?
    ((rc == 0 || REPORTED)) || printf 'FAIL: kernel tier: exit status %d after "%s"\n' "$rc" "$DOING" >&2
}
trap finish EXIT

# Prints the compiler warnings and errors (objtool's excepted) of the build logs "$@",
# with their context, and returns 0 if there is one; returns 1 if there is none.
#
# No `grep | head -n 5 | grep -q .` here: under pipefail, head's early exit kills the
# grep before it by SIGPIPE, the pipeline fails, and a build with more than a few
# warnings would read as clean.
has_build_warnings() {
    local found rc=0 context
    found=$(grep -HE '^(warning|error)(\[|:)' "$@") || rc=$?
    ((rc <= 1)) || fail "cannot read the build logs $*"
    [ -n "$found" ] || return 1
    found=$(grep -v objtool <<<"$found") || return 1
    printf '%d compiler warnings or errors:\n' "$(wc -l <<<"$found")"
    context=$(grep -HE -A8 '^(warning|error)(\[|:)' "$@") || true
    sed -n '1,60p' <<<"$context"
    return 0
}

# Runs "$@" with output to LOG, printing what it is doing every 30 s.
run_logged() {
    local log=$1 what=$2 t=$SECONDS
    shift 2
    "$@" >"$log" 2>&1 &
    local pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null && sleep 1; done
        kill -0 "$pid" 2>/dev/null &&
            say "  $what, $((SECONDS - t)) s: $(grep -E '^  [A-Z]' "$log" | tail -n1 | sed 's/^ *//')"
    done
    wait "$pid"
}

for a in "${ARCHES[@]}"; do
    case "$a" in x86_64 | arm64) ;; *) fail "unknown architecture $a (x86_64, arm64)" ;; esac
done

need=()
for p in rustc-web rust-web-src clang lld llvm libclang-dev bc flex bison libelf-dev \
    libssl-dev cpio python3 xz-utils patch linux-source-6.12 qemu-system-x86 qemu-system-arm; do
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
say "dropping the project into the tree (kernel-shim/linux-6.12/apply.sh)"
kernel-shim/linux-6.12/apply.sh "$TREE" || fail "overlay"

say "MAINTAINERS: the tree's get_maintainer.pl must find the entries"
for f in drivers/gpu/nova-core/gsp/cmdq.rs:'NOVA-CORE GSP COMMAND QUEUE' \
    drivers/gpu/vgsp/vgsp.rs:'NOVA-CORE GSP COMMAND QUEUE' kernel-shim/src/dma.rs:'RUST KERNEL API SHIM'; do
    out=$("$TREE/scripts/get_maintainer.pl" --no-tree --no-git --no-git-fallback --mpath MAINTAINERS \
        --roles -f "${f%%:*}" 2>&1) || fail "get_maintainer.pl -f ${f%%:*}: $out"
    grep -q "maintainer:${f#*:}" <<<"$out" || fail "get_maintainer.pl finds no '${f#*:}' entry for ${f%%:*}: $out"
    printf '  %s: %s\n' "${f%%:*}" "$(head -n1 <<<"$out")"
done

# The runner, the ivshmem server and the host GSP process; and vgsp-host, for the list
# of the suites.
say "building the ivshmem server, the host GSP process, the runner and vgsp-host"
cargo build --release -q -p vgsp-ivshmem -p vgsp-host --bins || fail "cargo build -p vgsp-ivshmem -p vgsp-host"
RUNNER=$REPO/target/release/vgsp-qemu

# The suites the boot must report: the project's as its code lists them, the kernel-only
# ones included (a host test checks the list against tests/kunit, so a renamed suite
# cannot drop out), and the kernel's Rust doctests.
suites=$("$REPO/target/release/vgsp-host" --list-suites --kernel) || fail "vgsp-host --list-suites --kernel"
[ -n "$suites" ] || fail "vgsp-host --list-suites --kernel lists no suite"
mapfile -t SUITES <<<"$suites"
SUITES+=(rust_doctests_kernel)

tier() {
    local arch=$1 build=$CACHE/build-$1 qemu image makearch qemu_args console
    case "$arch" in
    x86_64)
        qemu=qemu-system-x86_64 image=arch/x86/boot/bzImage makearch=(ARCH=x86_64)
        qemu_args=() console=ttyS0
        ;;
    arm64)
        qemu=qemu-system-aarch64 image=arch/arm64/boot/Image makearch=(ARCH=arm64 LLVM=1)
        qemu_args=(-M virt -cpu cortex-a72 -nic none) console=ttyAMA0
        ;;
    esac
    # bindgen's libclang must be the `clang` the build uses: given a newer libclang
    # (clang-22, for the Linux 7.3 patch check), bindgen picks it and refuses the flags
    # the kernel passes for clang 14 ("unknown argument: -enable-trivial-auto-var-init-
    # zero-knowing-it-will-be-removed-from-clang").
    local libclang
    libclang=$(dirname "$(readlink -f "$(command -v clang)")")/../lib
    [ -d "$libclang" ] || fail "no libclang beside $(command -v clang)"
    export LIBCLANG_PATH=${VGSP_LIBCLANG_PATH:-$(cd "$libclang" && pwd)}
    # rustup's rustc comes first in PATH; the tree must use Debian's, for the target
    # crates and the host proc macros alike.
    local kmake=(make -C "$TREE" O="$build" "${makearch[@]}" RUSTC=/usr/bin/rustc
        RUSTDOC=/usr/bin/rustdoc HOSTRUSTC=/usr/bin/rustc BINDGEN="$BINDGEN" -j"$(nproc)")

    mkdir -p "$build"
    local fragment=$REPO/tests/kernel/$arch.config
    if [ ! -f "$build/.config" ] || [ "$fragment" -nt "$build/.config" ]; then
        say "$arch: configuring: tinyconfig + tests/kernel/$arch.config"
        "${kmake[@]}" tinyconfig >/dev/null || fail "$arch: make tinyconfig"
        (cd "$build" && "$TREE/scripts/kconfig/merge_config.sh" -m .config "$fragment" >/dev/null) ||
            fail "$arch: merge_config"
        "${kmake[@]}" olddefconfig >/dev/null || fail "$arch: make olddefconfig"
        for opt in $(grep -E '^CONFIG_[A-Z0-9_]+=y' "$fragment" | cut -d= -f1); do
            grep -q "^$opt=y" "$build/.config" || fail "$arch: $opt did not stick (make rustavailable?)"
        done
    fi

    local t=$SECONDS t0=$SECONDS
    say "$arch: building the tree's Rust crates (rust/; cold: a few minutes)"
    run_logged "$build/build-rust.log" "$arch rust/" "${kmake[@]}" rust/ ||
        { tail -n 30 "$build/build-rust.log"; fail "$arch: building rust/ (log: $build/build-rust.log)"; }
    # The crates are rebuilt when the tree's core changed, or the script that builds them
    # (its list of crates) did: by content, as modification times of a fresh clone say
    # nothing.
    local crates_stamp
    crates_stamp=$(sha256sum tests/kernel/extern-crates.sh | cut -d' ' -f1)
    if [ ! -f "$build/vgsp-crates/consumer-flags" ] ||
        [ "$build/rust/libcore.rmeta" -nt "$build/vgsp-crates/consumer-flags" ] ||
        [ "$(cat "$build/vgsp-crates/script.sha256" 2>/dev/null)" != "$crates_stamp" ]; then
        say "$arch: building zerocopy, bitfield-struct and static_assertions for the tree (about a minute)"
        tests/kernel/extern-crates.sh "$build" "$build/vgsp-crates" >"$build/extern-crates.log" 2>&1 ||
            { tail -n 20 "$build/extern-crates.log"; fail "$arch: extern crates (log: $build/extern-crates.log)"; }
        printf '%s\n' "$crates_stamp" >"$build/vgsp-crates/script.sha256"
    fi
    # make goes by modification times, and the tree reaches the project through a link to
    # whichever checkout ran last: one whose files are older than the objects (another
    # clone, an older commit checked out) would pass as built, and the boot would test
    # stale code. So the project's objects go whenever its sources differ from the last
    # build's.
    local sources stamp=$build/vgsp-sources.sha256
    sources=$(cd "$REPO" && find Kbuild Kconfig drivers tests/kunit kernel-shim -type f -print0 |
        sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1) ||
        fail "$arch: cannot hash the project's sources"
    if [ "$(cat "$stamp" 2>/dev/null)" != "$sources" ]; then
        rm -rf "$build/drivers/vgsp" "$stamp"
    fi
    say "$arch: building $image with the driver, the virtual GSP and the suites (cold: about 6 minutes)"
    run_logged "$build/build.log" "$arch $(basename "$image")" "${kmake[@]}" "$(basename "$image")" ||
        { { grep -E 'error|warning' -A5 "$build/build.log" || true; } | head -n 60
          fail "$arch: kernel build (log: $build/build.log)"; }
    if has_build_warnings "$build/build-rust.log" "$build/build.log"; then
        fail "$arch: the Rust build printed warnings (logs: $build/build-rust.log, $build/build.log)"
    fi
    printf '%s\n' "$sources" >"$stamp"
    say "$arch: built in $((SECONDS - t)) s"

    say "$arch: booting under $qemu -smp 2, with the ivshmem server and the GSP process"
    t=$SECONDS
    "$RUNNER" --log "$build/boot.log" --timeout 300 --gsp-arg --log-every --gsp-arg 100 -- \
        "$qemu" "${qemu_args[@]}" -kernel "$build/$image" -nographic -no-reboot -m 512 -smp 2 \
        -append "console=$console panic=-1" 2>"$build/runner.log" ||
        { tail -n 20 "$build/runner.log"; fail "$arch: the runner failed (log: $build/runner.log)"; }
    say "$arch: boot finished in $((SECONDS - t)) s ($(grep -c '^\[gsp\] vgsp-gsp: peer [0-9]* attached' "$build/runner.log") GSP processes)"
    grep -q 'KTAP version 1' "$build/boot.log" || { tail -n 20 "$build/boot.log"; fail "$arch: no KTAP in the boot log"; }

    local kunit_py=$TREE/tools/testing/kunit/kunit.py out
    out=$(python3 "$kunit_py" parse "$build/boot.log" 2>&1) ||
        { echo "$out" | tail -n 40; fail "$arch: kunit.py reports failures (log: $build/boot.log)"; }
    sed -nE '/^\[.*\] (=+ \[(PASSED|FAILED|SKIPPED)\] .* =+|Testing complete)/s/^\[[^]]*\] /  /p' <<<"$out"
    for s in "${SUITES[@]}"; do
        grep -qP "(?<!not )\bok [0-9]+ $s\b" "$build/boot.log" || fail "$arch: suite $s did not pass (log: $build/boot.log)"
    done
    if grep -q 'Kernel panic' "$build/boot.log" &&
        ! grep -q 'VFS: Unable to mount root fs\|No working init found' "$build/boot.log"; then
        fail "$arch: kernel panic before the end of the tests (log: $build/boot.log)"
    fi
    grep -qE '^\[ *[0-9.]+\] (BUG|WARNING|Oops|Call Trace)' "$build/boot.log" &&
        fail "$arch: the kernel reported a BUG or WARNING (log: $build/boot.log)"
    say "kernel tier ($arch): ok, ${#SUITES[@]} suites, $((SECONDS - t0)) s for build and boot"
}

for a in "${ARCHES[@]}"; do
    tier "$a"
done
say "kernel tier: ok (${ARCHES[*]})"
