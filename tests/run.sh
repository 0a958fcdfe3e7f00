#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The test command: the tiers of the top-level README, in order (style, host, KTAP,
# litmus, ordering, no_std, aarch64, fuzz, upstream patches, upstream, the emulated
# GH100's boots, ordering of the compiled code, kernel), failing loudly at the first
# problem: whatever fails prints `FAIL:` with the step's name and then the summary line
# `tests: N passed, 1 failed`.
#
# Options: --host-only stops after the KTAP step; --no-kernel skips the boots and the
# kernel tier.
# It installs the Debian packages it needs when run as root, and caches what
# it builds outside the checkout, under ${VGSP_CACHE:-~/.cache/vgsp}.

set -Eeuo pipefail
cd "$(dirname "$0")/.."

HOST_ONLY=0
KERNEL=1
for arg in "$@"; do
    case "$arg" in
    --host-only) HOST_ONLY=1 KERNEL=0 ;;
    --no-kernel) KERNEL=0 ;;
    *) echo "usage: tests/run.sh [--host-only] [--no-kernel]" >&2; exit 2 ;;
    esac
done

CACHE=${VGSP_CACHE:-$HOME/.cache/vgsp}
PASSED=0
# The KUnit suites every KTAP must report passing, from `vgsp-host --list-suites` (the
# KTAP step).
SUITES=()
# The step running, for the failure message; `step` sets it.
CURRENT_STEP="setup: packages, rustfmt and clippy, kunit.py"
# The last command that failed (the ERR trap), for a failure no `fail` reported.
FAILED_AT=""
# Set when `fail` reported the failure in this shell.
REPORTED=0

step() { CURRENT_STEP=$*; printf '\n==== [%4ds] %s\n' "$SECONDS" "$*"; }
pass() { PASSED=$((PASSED + 1)); printf '==== [%4ds] ok: %s\n' "$SECONDS" "$*"; }

# Fails the current step with a reason; the EXIT trap then prints the summary line. In a
# subshell (`$(...)`) it prints the reason and ends the subshell, and the command that
# ran the subshell then fails the step in the script's own shell.
fail() {
    printf '\nFAIL: %s (step: %s)\n' "$*" "$CURRENT_STEP" >&2
    [ "$BASHPID" != "$$" ] || REPORTED=1
    exit 1
}

# Prints the end of a failed step's log `$1` (`$2` lines, without its `[err]` lines), then
# its `boot FAIL` lines again: a CI's view of the output is its end.
show_log() {
    grep -v '^\[err\]' "$1" | tail -n "$2" || true
    grep -E '^boot FAIL' "$1" | cut -c1-400 | tail -n 5 || true
}

# Every way out of a failed run comes here: a `fail`, and just as well a command that
# fails outside any check (`set -e`), a pipeline (`pipefail`) or an unset variable. It
# names the step if `fail` did not, and prints the summary line, once.
finish() {
    local rc=$?
    ((rc != 0)) || return 0
    ((REPORTED)) ||
        printf '\nFAIL: %s (%sexit status %d)\n' "$CURRENT_STEP" "${FAILED_AT:+$FAILED_AT: }" "$rc" >&2
    printf 'tests: %d passed, 1 failed\n' "$PASSED"
}
trap 'FAILED_AT="line $LINENO: $BASH_COMMAND"' ERR
trap finish EXIT

# Runs a command with its whole output in a log, showing the lines a grep option and
# pattern choose: `-e PATTERN` the matching ones, `-v PATTERN` the others. Returns the
# command's exit status, after the end of the log if it failed.
#
# Not a bare `cmd | tee log | grep` under pipefail: there a grep that matches nothing
# ends the script on that line, as does a failing cmd, before any `fail`. Here the filter
# always succeeds and reads to the end (tee gets no SIGPIPE), so the pipeline's status is
# the command's.
logged() {
    local log=$1 opt=$2 pattern=$3 rc=0
    shift 3
    "$@" 2>&1 | tee "$log" | { grep --line-buffered -E "$opt" "$pattern" || true; } || rc=$?
    ((rc == 0)) || { echo "---- exit status $rc; the end of $log:"; tail -n 30 "$log"; }
    return "$rc"
}

# The programs and files this script runs or reads itself, beside what the xtask
# commands ensure for their own steps: every one is in xtask's table of tools
# (`cargo xtask tools list`), which installs a missing one when run as root and otherwise
# names its package. The first list is the host steps' (the ivshmem server's test runs
# QEMU); the second the other steps'.
RUN_TOOLS=(python3 xz cargo rustfmt cargo-clippy qemu-system-x86_64)
RUN_TOOLS_FULL=(/usr/bin/rustc /usr/bin/cargo /usr/lib/rustlib/src/rust/library/core ld.lld-22 llvm-objdump-22 qemu-aarch64 aarch64-linux-gnu-gcc /usr/aarch64-linux-gnu/include/stdio.h gcc perl cargo-fuzz c++)

ensure_tools() {
    local want=("${RUN_TOOLS[@]}")
    ((HOST_ONLY)) || want+=("${RUN_TOOLS_FULL[@]}")
    cargo xtask tools ensure "${want[@]}" || fail "the tools this script runs (cargo xtask tools ensure)"
}

# The kernel's KUnit parser: Linux 7.3's, from the tree `cargo xtask linux-7.3` fetches
# from Debian once and caches.
kunit_py() {
    local tree
    tree=$(VGSP_CACHE=$CACHE cargo xtask linux-7.3) || fail "cannot get the Linux 7.3 tree (cargo xtask linux-7.3)"
    [ -f "$tree/tools/testing/kunit/kunit.py" ] || fail "no tools/testing/kunit/kunit.py in $tree"
    echo "$tree/tools/testing/kunit/kunit.py"
}

# Checks a KTAP file with kunit.py: exit status, every suite present, nothing failed.
check_ktap() {
    local ktap=$1 what=$2 out
    out=$(python3 "$KUNIT_PY" parse "$(realpath "$ktap")" 2>&1) || { echo "$out" | tail -n 30; fail "kunit.py parse reports failures ($what)"; }
    local s
    for s in "${SUITES[@]}"; do
        grep -q "\[PASSED\] $s " <<<"$out" || { echo "$out" | tail -n 30; fail "suite $s missing or not passing ($what)"; }
    done
    grep -E 'Testing complete' <<<"$out" || fail "kunit.py printed no verdict ($what)"
    grep -qE 'failed|crashed|skipped' <<<"$(grep 'Testing complete' <<<"$out")" && fail "kunit.py: not all passed ($what)"
    return 0
}

ensure_tools
KUNIT_PY=$(kunit_py)
mkdir -p target

step "style: cargo fmt --check, cargo clippy -D warnings"
cargo fmt --all -- --check || fail "cargo fmt: run 'cargo fmt --all'"
cargo clippy --workspace --all-targets -- -D warnings || fail "clippy"
cargo clippy -p mbarrier -p nova-core -p nova-testbench -p vgsp -- -D warnings -D unreachable-pub ||
    fail "clippy (no_std driver alone; an unreachable pub item is pub(crate), as a kernel build says)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps -q || fail "cargo doc: a rustdoc warning (dead or private link)"
cargo xtask pub-audit ||
    fail "pub-audit: a pub item of the driver that no other crate uses is pub(crate) (cargo xtask pub-audit --list)"
pass "style"

step "host x86_64: cargo test --workspace"
cargo test --workspace || fail "host tests"
# The shim's barrier counters are a benchmark feature no other test turns on: with them,
# the backend test also checks that each `dma_mb` is counted by its flavour.
cargo test -p kernel-shim --features dma-mb-stats --test host_backend || fail "host tests (dma-mb-stats)"
pass "host tests"

step "cargo run --release: bring-up transcript, then KTAP through kunit.py"
cargo run --release >target/host.ktap || fail "cargo run --release exited non-zero"
# The program's own list of the suites it runs, so that a renamed suite cannot drop out
# of the check (a host test checks the list against tests/kunit).
suites=$(cargo run --release -q -- --list-suites) || fail "vgsp-host --list-suites"
[ -n "$suites" ] || fail "vgsp-host --list-suites lists no suite"
mapfile -t SUITES <<<"$suites"
check_ktap target/host.ktap "host x86_64"
pass "bring-up and KTAP (x86_64)"

if ((HOST_ONLY)); then
    printf '\ntests: %d passed, 0 failed (host only)\n' "$PASSED"
    exit 0
fi

step "ordering: loom scenarios + DMA contract checker, seed regression (--cfg loom)"
logged target/ordering.log -e 'loom executions|test result|FAILED|panicked' \
    env RUSTFLAGS="--cfg loom" cargo test -p vgsp-model --release --test ordering --target-dir target/model \
    -- --test-threads=1 --nocapture || fail "ordering scenarios (see target/ordering.log)"
pass "ordering scenarios"

step "ordering: the mbarrier with three agents under loom (--cfg loom)"
logged target/mbarrier-loom.log -e 'test result|FAILED|panicked' \
    env RUSTFLAGS="--cfg loom" cargo test -p vgsp-model --release --test mbarrier --target-dir target/model ||
    fail "mbarrier under loom (see target/mbarrier-loom.log)"
pass "mbarrier under loom"

step "ordering: the kernel's own litmus tests against the contract checker (cargo xtask litmus)"
# Read from the cached Linux 7.3 tree at run time; every test of the subset agrees with its
# `Result:` line or is listed, with its reason, as a deliberate difference.
logged target/litmus.log -e '^litmus:|DISAGREES|deliberate difference' \
    env VGSP_CACHE="$CACHE" cargo xtask litmus || fail "a litmus test disagrees with its Result: line (see target/litmus.log)"
grep -qE '^litmus: [0-9]+ run, [0-9]+ agree, [0-9]+ deliberately different, [0-9]+ skipped, 0 disagree$' \
    target/litmus.log || fail "cargo xtask litmus printed no verdict"
pass "kernel litmus tests"

step "ordering: barrier mutants (cargo xtask ordering-mutants)"
logged target/mutants.log -v '^ {10}by ' cargo xtask ordering-mutants ||
    fail "a barrier mutant survived, or the tool failed (see target/mutants.log)"
grep -qE '^ordering mutants: ([0-9]+) killed of \1$' target/mutants.log || fail "not every mutant was killed"
pass "ordering mutants"

# Debian's rustc-web has the std source that -Zbuild-std needs; rustup's does not.
DEB=(env PATH="/usr/bin:$PATH" RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1)
[ -x /usr/bin/rustc ] || fail "/usr/bin/rustc missing; install rustc-web"

step "no_std: nova-core and vgsp for aarch64-unknown-none (core + alloc only)"
"${DEB[@]}" cargo build --release --target aarch64-unknown-none -Zbuild-std=core,alloc \
    -p nova-core -p vgsp --target-dir target/none || fail "no_std build"
pass "no_std build"

step "aarch64: cross-build the tests (-Zbuild-std) and run them under qemu-aarch64"
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu"
# Tests that run the project's binaries run them the same way.
export VGSP_TEST_RUNNER=$CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER
# shellcheck disable=SC2054 # The commas are in -Zbuild-std's value.
A64=(--target aarch64-unknown-linux-gnu -Zbuild-std=std,panic_unwind --target-dir target/aarch64)
# Not vgsp-ivshmem: the ivshmem server, the GSP process and the runner are x86_64
# host tools beside QEMU; the arm64 kernel tier drives the driver through them.
A64+=(--workspace --exclude vgsp-ivshmem)
"${DEB[@]}" cargo test "${A64[@]}" --no-run || fail "aarch64 build"
"${DEB[@]}" cargo test "${A64[@]}" || fail "aarch64 tests under qemu-aarch64"
pass "aarch64 tests under qemu-aarch64"

step "aarch64: the dma barriers are the kernel's instructions"
bin=$(find target/aarch64/aarch64-unknown-linux-gnu/debug/deps -name 'e2e-*' -type f -executable -print -quit)
[ -n "$bin" ] || fail "no aarch64 e2e binary"
dis=$(llvm-objdump-22 -d "$bin") || fail "llvm-objdump-22 failed"
for insn in 'dmb[[:space:]]+osh$' 'dmb[[:space:]]+oshld$' 'dmb[[:space:]]+oshst$'; do
    grep -qE "$insn" <<<"$dis" || fail "no '$insn' in $bin"
done
grep -cE 'dmb[[:space:]]+osh' <<<"$dis" | sed 's/^/dmb osh* instructions: /'
pass "aarch64 barrier instructions"

step "aarch64: KTAP of the suites under qemu-aarch64 through kunit.py"
qemu-aarch64 -L /usr/aarch64-linux-gnu target/aarch64/aarch64-unknown-linux-gnu/debug/vgsp-host \
    >target/aarch64.ktap || fail "vgsp-host under qemu-aarch64 exited non-zero"
check_ktap target/aarch64.ktap "aarch64"
pass "bring-up and KTAP (aarch64)"

step "fuzz: cargo-fuzz targets, ${VGSP_FUZZ_SECONDS:-20} s each (nightly)"
cargo +nightly --version >/dev/null 2>&1 || fail "the nightly toolchain is missing (rustup toolchain install nightly)"
cargo +nightly fuzz build --fuzz-dir tests/fuzz >target/fuzz-build.log 2>&1 ||
    { tail -n 30 target/fuzz-build.log; fail "building the fuzz targets"; }
targets=$(cargo +nightly fuzz list --fuzz-dir tests/fuzz) || fail "cargo fuzz list"
[ -n "$targets" ] || fail "cargo fuzz list names no target"
for t in $targets; do
    corpus=target/fuzz-corpus/$t
    mkdir -p "$corpus"
    # A target without a seed corpus starts from an empty one.
    if [ -d tests/fuzz/corpus/"$t" ]; then
        cp -R tests/fuzz/corpus/"$t"/. "$corpus"/ || fail "copying the seed corpus of $t"
    fi
    cargo +nightly fuzz run --fuzz-dir tests/fuzz "$t" "$corpus" -- \
        -max_total_time="${VGSP_FUZZ_SECONDS:-20}" -max_len=70000 >target/fuzz-"$t".log 2>&1 ||
        { { grep -E 'panicked|ERROR|SUMMARY|Test unit written' -A3 target/fuzz-"$t".log || true; } | head -n 30
          fail "fuzz target $t found a crash (log: target/fuzz-$t.log; the input is in tests/fuzz/artifacts/$t)"; }
    sed -n "/^Done [0-9]* runs/s/^/$t: /p" target/fuzz-"$t".log
done
pass "fuzz targets"

step "upstream patches: both series apply to Linux 7.3 in order, clean, bisectable, their KUnit cases passing (cargo xtask check-patches)"
# With the kernel, every prefix of the series is built in the tree too (bisectable).
check_build=(); ((KERNEL)) || check_build=(--no-build)
VGSP_CACHE=$CACHE cargo xtask check-patches "${check_build[@]}" >target/check-patches.log 2>&1 ||
    { show_log target/check-patches.log 40; fail "the upstream series: a patch does not apply in order, is not checkpatch/rustfmt clean or does not build, or the cover letter is wrong"; }
grep -E '^upstream (patch|patches|series)' target/check-patches.log
grep -qE '^upstream patches: ([0-9]+) clean of \1, the cover letter right$' target/check-patches.log ||
    fail "cargo xtask check-patches' summary is not 'N clean of N, the cover letter right'"
pass "upstream patches"

step "upstream: Linux 7.3's own queue, unmodified, against the virtual GSP (cargo xtask upstream)"
VGSP_UPSTREAM_TREE=$(VGSP_CACHE=$CACHE cargo xtask linux-7.3) || fail "cannot get the Linux 7.3 tree"
VGSP_UPSTREAM_TREE=$VGSP_UPSTREAM_TREE CARGO_TARGET_DIR=target/upstream \
    cargo test -q --manifest-path tests/upstream/Cargo.toml >target/upstream-test.log 2>&1 ||
    { tail -n 30 target/upstream-test.log; fail "the upstream harness's own tests"; }
# Findings about the tree are printed, not failures; the step fails when the command
# could not run, when the echo fails, or when the hostile table is not whole: its count of
# classes is its rows', every class names the fault our table gives it, and the faults
# the GSP can cause that no class shows are named (our suites show them).
VGSP_CACHE=$CACHE cargo xtask upstream >target/upstream.log 2>&1 ||
    { show_log target/upstream.log 40; fail "cargo xtask upstream (the echo failed, or it could not run)"; }
grep -v '^\[err\]' target/upstream.log
grep -Eq '^upstream 7\.3\.[0-9]+: echo ok, hostile [0-9]+ of [0-9]+ classes mishandled, fuzz [0-9]+ execs [0-9]+ crashes$' target/upstream.log ||
    fail "cargo xtask upstream's summary line is not 'echo ok, hostile M of N classes mishandled, fuzz E execs C crashes'"
rows=$(grep -c '^hostile:     ours: ' target/upstream.log)
classes=$(sed -nE 's/^upstream 7\.3\.[0-9]+: .*hostile [0-9]+ of ([0-9]+) classes mishandled.*/\1/p' target/upstream.log)
[[ $rows -gt 0 && $rows == "$classes" ]] || fail "the hostile summary counts $classes classes, its table has $rows rows"
grep -q '^finding: hostile: .*: OURS ' target/upstream.log &&
    fail "our driver mishandles a hostile class, or names a fault other than its table's: $(grep '^finding: hostile: .*: OURS ' target/upstream.log)"
grep -E '^hostile: the classes show [0-9]+ of the [0-9]+ faults the GSP can cause' target/upstream.log ||
    fail "the hostile check did not say which faults its classes show"
# Our patch: it applies, builds into the harness, and keeps the echo.
# The allocation-failure walk (`nomem`) must lose no message through the series' receive.
VGSP_CACHE=$CACHE cargo xtask upstream --series echo hostile fuzz nomem \
    >target/upstream-patched.log 2>&1 ||
    { show_log target/upstream-patched.log 30; fail "cargo xtask upstream --series echo hostile fuzz nomem (an echo failed, or the walk lost a message)"; }
tail -n 1 target/upstream-patched.log
grep -qE "^upstream 7\.3\.[0-9]+ \+series: echo ok, hostile [0-9]+ of $classes classes mishandled, nomem walk: [1-9][0-9]* allocations failed in turn, 0 messages lost, fuzz [0-9]+ execs 0 crashes$" target/upstream-patched.log ||
    fail "the series' summary line is not 'echo ok, hostile M of $classes classes mishandled, nomem walk: N allocations failed in turn, 0 messages lost, fuzz E execs 0 crashes'"
# With the series no row is mishandled, and every split reply reaches the caller whole.
left=$(grep -E '^finding: hostile: .*: upstream ' target/upstream-patched.log || true)
[[ -z $left ]] || fail "the series mishandles a hostile row: $left"
grep -qE '^echo: +[0-9]+ B reply, split into continuation records: ok$' target/upstream-patched.log ||
    fail "with the series, no split reply was echoed"
grep -E '^echo: +[0-9]+ B reply, split into continuation records: ' target/upstream-patched.log |
    grep -vqE ': ok$' && fail "with the series, a split reply did not reach the caller whole"
# The tree's receive over a recorded gspq image prints the lines ours prints (`ok …`,
# `err …`, `end rptr=…`); what each makes of it is compared, not required equal.
cargo run -q --release -p vgsp-host --bin vgsp-tool -- record-gspq target/recorded.gspq ||
    fail "vgsp-tool record-gspq"
cargo run -q --release -p vgsp-host --bin vgsp-tool -- replay-gspq target/recorded.gspq >target/replay-ours.txt ||
    fail "vgsp-tool replay-gspq"
VGSP_CACHE=$CACHE cargo xtask upstream --series replay target/recorded.gspq >target/replay-upstream.txt 2>target/replay-upstream.log ||
    { tail -n 20 target/replay-upstream.log; fail "cargo xtask upstream --series replay"; }
grep -qvE '^(ok seq=[0-9]+ function=[0-9]+ len=[0-9]+ elems=[0-9]+|err E[A-Z0-9]+ .+|end rptr=[0-9]+)$' target/replay-upstream.txt &&
    fail "cargo xtask upstream replay printed a line vgsp-tool replay-gspq would not: $(cat target/replay-upstream.txt)"
tail -n 1 target/replay-upstream.txt | grep -qE '^end rptr=[0-9]+$' || fail "cargo xtask upstream replay ended without its end line"
paste -d '|' target/replay-ours.txt target/replay-upstream.txt | sed 's/^/  replay (ours|the series): /'
pass "upstream's queue against the virtual GSP"

if ((KERNEL)); then
    step "boot: upstream's whole driver in its own kernel against the emulated GH100 (cargo xtask upstream boot)"
    # With our patch: the tree's own build of nova-core (CONFIG_NOVA_CORE=y, no warning),
    # booted under qemu-system-x86_64 against the emulated GH100, unbound and unloaded.
    VGSP_CACHE=$CACHE cargo xtask upstream --series kernel boot --gsp-fault all \
        >target/upstream-boot-patched.log 2>&1 ||
        { show_log target/upstream-boot-patched.log 60; fail "the upstream series: the boot against the emulated GH100"; }
    grep -E '^(boot|gsp-fault)' target/upstream-boot-patched.log
    grep -qE '^upstream 7\.3\.[0-9]+ \+series: boot ok, gsp-fault [1-9][0-9]* run, [0-9]+ accepted$' target/upstream-boot-patched.log ||
        fail "the upstream series' boot summary is not 'boot ok, gsp-fault N run, A accepted'"
    # Pristine, and the table of what the driver does with each hostile GSP (findings).
    VGSP_CACHE=$CACHE cargo xtask upstream boot --gsp-fault all >target/upstream-boot.log 2>&1 ||
        { show_log target/upstream-boot.log 60; fail "upstream 7.3: the boot against the emulated GH100"; }
    grep -E '^(boot|gsp-fault)' target/upstream-boot.log
    tail -n 1 target/upstream-boot.log
    grep -qE '^upstream 7\.3\.[0-9]+: boot ok, gsp-fault [1-9][0-9]* run, [0-9]+ accepted$' target/upstream-boot.log ||
        fail "upstream 7.3's boot summary is not 'boot ok, gsp-fault N run, A accepted'"
    ! grep -qE '^gsp-fault [a-z-]+: unknown$' target/upstream-boot.log ||
        fail "a GSP fault's row is 'unknown': the boot's behaviour was not recognised"
    pass "boot: upstream's driver against the emulated GH100"

    step "boot arm64: upstream's driver in its own arm64 kernel, as on Grace, and the ordering of what the kernel compiled (cargo xtask upstream boot --arch arm64 --ordering)"
    # The same boots on a weakly ordered CPU (QEMU 11's virt machine, 2 vCPUs, the GPU over
    # vfio-user), traced: nova-core's accesses of the shared memory and its barriers,
    # decided by the contract and arm64 checkers at the kernel's own source lines.
    VGSP_CACHE=$CACHE cargo xtask upstream --series boot --arch arm64 --ordering --gsp-fault all \
        >target/upstream-boot-arm64-patched.log 2>&1 ||
        { show_log target/upstream-boot-arm64-patched.log 60; fail "the upstream series: the arm64 boot"; }
    grep -E '^(boot|gsp-fault|ordering)' target/upstream-boot-arm64-patched.log
    grep -qE '^upstream 7\.3\.[0-9]+ \+series: arm64 boot ok, gsp-fault [1-9][0-9]* run, [0-9]+ accepted, ordering \(arm64 kernel\): 0 defects \(contract\), 0 defects \(arm64\)$' target/upstream-boot-arm64-patched.log ||
        fail "the upstream series' arm64 boot summary is not 'arm64 boot ok, gsp-fault N run, A accepted, ordering (arm64 kernel): 0 defects (contract), 0 defects (arm64)'"
    VGSP_CACHE=$CACHE cargo xtask upstream boot --arch arm64 --ordering --gsp-fault all >target/upstream-boot-arm64.log 2>&1 ||
        { show_log target/upstream-boot-arm64.log 60; fail "upstream 7.3: the arm64 boot"; }
    grep -E '^(boot|gsp-fault|ordering)' target/upstream-boot-arm64.log | cut -c1-300
    tail -n 1 target/upstream-boot-arm64.log
    grep -qE '^upstream 7\.3\.[0-9]+: arm64 boot ok, gsp-fault [1-9][0-9]* run, [0-9]+ accepted, ordering \(arm64 kernel\): [1-9][0-9]* defects \(contract\), [0-9]+ defects \(arm64\)$' target/upstream-boot-arm64.log ||
        fail "upstream 7.3's arm64 boot summary is not 'arm64 boot ok, gsp-fault N run, A accepted, ordering (arm64 kernel): C defects (contract), A defects (arm64)'"
    ! grep -qE '^gsp-fault [a-z-]+: unknown$' target/upstream-boot-arm64.log ||
        fail "a GSP fault's row is 'unknown' on arm64: the boot's behaviour was not recognised"
    # 7.3's defects as its kernel compiled them (the review thread's, found in-kernel).
    cmdq='at drivers/gpu/nova-core/gsp/cmdq\.rs:[0-9]+'
    for defect in \
        "cpu load gspq\.tx\.writePtr -> load gspq slot: no load->load ordering" \
        "cpu store cpuq slot -> store cpuq\.tx\.writePtr: no store->store ordering; the .dmb ish. $cmdq comes after the pointer store" \
        "cpu load gspq slot -> store cpuq\.rx\.readPtr: no load->store ordering; the .dmb ish. $cmdq is a CPU barrier"; do
        grep -qE "^ordering defect \(contract\): $defect" target/upstream-boot-arm64.log ||
            fail "the in-kernel trace no longer finds 7.3's defect: $defect"
    done
    # The series without one of its barriers: that defect, at its line.
    VGSP_CACHE=$CACHE cargo xtask upstream --series --patch tools/trace/mutants/series-without-write-barrier.patch \
        boot --arch arm64 --ordering >target/upstream-boot-arm64-mutant.log 2>&1 ||
        { show_log target/upstream-boot-arm64-mutant.log 40; fail "the arm64 boot of the series without its write barrier"; }
    grep -qE "^ordering defect \(contract\): cpu store cpuq slot -> store cpuq\.tx\.writePtr: no store->store ordering.* at drivers/gpu/nova-core/gsp/cmdq\.rs:[0-9]+;" \
        target/upstream-boot-arm64-mutant.log ||
        fail "the in-kernel trace does not name the series' write barrier, removed"
    grep -E '^ordering: ' target/upstream-boot-arm64-mutant.log | tail -n 1
    pass "boot arm64: upstream's driver against the emulated GH100"
fi

step "ordering of the compiled code: arm64 traces under qemu-aarch64 (cargo xtask ordering-trace)"
# Our driver and GSP: no defect, and every barrier mutant caught by the trace check too.
logged target/ordering-trace.log -v '^ {8}by |^ +Compiling ' cargo xtask ordering-trace --mutants ||
    fail "cargo xtask ordering-trace --mutants (see target/ordering-trace.log)"
grep -qE '^ordering: 0 defects \(contract\), 0 defects \(arm64\), [0-9]+ events from [0-9]+ threads' \
    target/ordering-trace.log || fail "our compiled driver or GSP has an ordering defect"
grep -qE '^ordering-trace mutants: ([0-9]+) caught of \1$' target/ordering-trace.log ||
    fail "a barrier mutant escaped the trace check"
# Linux 7.3's queue: the review thread's four defects, each at upstream's line; findings
# about the tree, but the check must keep seeing them.
VGSP_CACHE=$CACHE cargo xtask upstream ordering >target/upstream-ordering.log 2>&1 ||
    { tail -n 30 target/upstream-ordering.log; fail "cargo xtask upstream ordering"; }
grep -E '^ordering' target/upstream-ordering.log
cmdq='at drivers/gpu/nova-core/gsp/cmdq\.rs:[0-9]+'
for defect in \
    "cpu load gspq\.tx\.writePtr -> load gspq slot: no load->load ordering .*$cmdq\$" \
    "cpu store cpuq slot -> store cpuq\.tx\.writePtr: no store->store ordering; the .dmb ish. $cmdq comes after the pointer store" \
    "cpu load gspq slot -> store cpuq\.rx\.readPtr: no load->store ordering; the .dmb ish. $cmdq is a CPU barrier" \
    "cpu load gspq\.rx\.readPtr -> store cpuq slot: no load->store ordering \(a control dependency is not honoured\).*$cmdq\$"; do
    grep -qE "^ordering defect \(contract\): $defect" target/upstream-ordering.log ||
        fail "the trace check no longer finds 7.3's defect: $defect"
done
# With our patch: nothing missing under either verdict.
VGSP_CACHE=$CACHE cargo xtask upstream --series ordering \
    >target/upstream-ordering-patched.log 2>&1 ||
    { tail -n 30 target/upstream-ordering-patched.log; fail "cargo xtask upstream --series ordering"; }
grep -E '^ordering' target/upstream-ordering-patched.log
grep -qE '^ordering: 0 defects \(contract\), 0 defects \(arm64\), ' target/upstream-ordering-patched.log ||
    fail "the upstream series leaves an ordering defect in the compiled queue"
pass "ordering of the compiled code (arm64 traces)"

if ((KERNEL)); then
    step "MAINTAINERS: Linux 7.3's get_maintainer.pl finds the entries"
    tree=$(VGSP_CACHE=$CACHE cargo xtask linux-7.3) || fail "cannot get the Linux 7.3 tree"
    for f in drivers/gpu/nova-core/gsp/cmdq.rs:'NOVA-CORE GSP COMMAND QUEUE' \
        drivers/gpu/vgsp/gsp/vgsp.rs:'VIRTUAL GSP' kernel-shim/src/dma.rs:'RUST KERNEL API SHIM'; do
        out=$("$tree/scripts/get_maintainer.pl" --no-tree --no-git --no-git-fallback --mpath MAINTAINERS \
            --roles -f "${f%%:*}" 2>&1) || fail "get_maintainer.pl -f ${f%%:*}: $out"
        grep -q "maintainer:${f#*:}" <<<"$out" || fail "get_maintainer.pl finds no '${f#*:}' entry for ${f%%:*}: $out"
        printf '  %s: %s\n' "${f%%:*}" "$(head -n1 <<<"$out")"
    done
    pass "MAINTAINERS"
    for arch in x86_64 arm64; do
        step "kernel tier: cargo xtask kernel-7.3 $arch"
        VGSP_CACHE=$CACHE cargo xtask kernel-7.3 "$arch" || fail "kernel tier ($arch)"
        pass "kernel tier ($arch)"
    done
fi

printf '\ntests: %d passed, 0 failed\n' "$PASSED"
