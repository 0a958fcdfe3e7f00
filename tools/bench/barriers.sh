#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# tools/bench/barriers.sh [--aarch64] [COUNT]
#
# The DMA barriers one small command executes, per side, for the three barrier variants
# of the driver (acq-rel, the design; all-full; seed, the pre-fix placement): makes each
# variant's copy of the source (`cargo xtask variant-tree`), builds `vgsp-barriers` (the
# shim's counters on) there, runs each for COUNT (default 1000) 8-byte Echo commands in
# turns on one thread, and compares the full barriers per command.
#
# --aarch64: the same cross-built for aarch64-unknown-linux-gnu as tests/run.sh's aarch64
# step builds (Debian's rustc, -Zbuild-std; the first build takes minutes), but not
# position-independent (below), and run under qemu-aarch64, for instruction counts, not
# time. It then also
#   - disassembles each binary (llvm-objdump-22): the all-full one must have no
#     `dmb oshld`/`dmb oshst` in the driver or the virtual GSP (`writel`'s `dmb oshst`
#     in the doorbell is the architecture's and stays), the seed one a `dmb osh` and no
#     `dmb oshst` in `advance_cpu_write_ptr`;
#   - counts the `dmb` instructions each binary really executes under qemu-aarch64
#     (every `dmb` of the binary its own translation block, `-singlestep -d exec,nochain
#     -dfilter`), for COUNT and COUNT+100 commands: the difference over 100 is per
#     command, whatever the setup executed.
set -euo pipefail
cd "$(dirname "$0")/../.."

ARCH=x86_64
COUNT=1000
for arg in "$@"; do
    case $arg in
    --aarch64) ARCH=aarch64 ;;
    [0-9]*) COUNT=$arg ;;
    *)
        echo "usage: tools/bench/barriers.sh [--aarch64] [COUNT]" >&2
        exit 2
        ;;
    esac
done

VARIANTS=(acq-rel all-full seed)

if [ "$ARCH" = aarch64 ]; then
    # As tests/run.sh: Debian's rustc-web has the std source that -Zbuild-std needs.
    # Non-PIE (`-C relocation-model=static`, which links with `-no-pie`): the addresses
    # of the `dmb` instructions in the disassembly are then the ones qemu-aarch64 executes,
    # with no load base to guess (qemu-user puts a PIE wherever its version chooses). The
    # count below checks the binary is ET_EXEC. The relocation model changes how
    # addresses are formed, not which barriers a command executes.
    # shellcheck disable=SC2054 # The commas are in -Zbuild-std's value.
    BUILD=(env PATH="/usr/bin:$PATH" RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1
        CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
        CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C relocation-model=static"
        cargo build --release --target aarch64-unknown-linux-gnu -Zbuild-std=std,panic_unwind)
    DIR=target/bench-barriers-aarch64
    OUT=$DIR/target/aarch64-unknown-linux-gnu/release/vgsp-barriers
    RUN=(qemu-aarch64 -L /usr/aarch64-linux-gnu)
else
    BUILD=(cargo build --release)
    DIR=target/bench-barriers
    OUT=$DIR/target/release/vgsp-barriers
    RUN=()
fi

ROOT=$PWD
for v in "${VARIANTS[@]}"; do
    echo "building vgsp-barriers ($v, $ARCH)" >&2
    cargo xtask variant-tree "$v" "$DIR/$v" >&2
    (cd "$DIR/$v" && VGSP_BENCH_VARIANT=$v "${BUILD[@]}" --quiet -p vgsp-bench --bin vgsp-barriers \
        --features barrier-stats --target-dir "$ROOT/$DIR/target")
    # Every variant's build leaves its binary at the same path: keep a copy per variant.
    cp "$OUT" "$DIR/vgsp-barriers-$v"
done

summaries=()
for v in "${VARIANTS[@]}"; do
    echo
    out=$("${RUN[@]}" "$DIR/vgsp-barriers-$v" "$COUNT")
    grep -v '^summary ' <<<"$out"
    summaries+=("$(grep '^summary ' <<<"$out")")
done

echo
echo "full barriers per command ($ARCH; Full instructions):"
for s in "${summaries[@]}"; do
    # summary variant=V arch=A commands=N driver_full=D gsp_full=G total_full=T ...
    declare -A f=()
    for kv in $s; do
        [[ $kv == *=* ]] && f[${kv%%=*}]=${kv#*=}
    done
    printf '  %-9s %5s  (driver %s, GSP %s)\n' "${f[variant]}" "${f[total_full]}" "${f[driver_full]}" "${f[gsp_full]}"
    unset f
done

[ "$ARCH" = aarch64 ] || exit 0

echo
echo "llvm-objdump-22: the dma barriers of the driver and the virtual GSP in each binary"
for v in "${VARIANTS[@]}"; do
    dis=$(llvm-objdump-22 -d -C --no-show-raw-insn "$DIR/vgsp-barriers-$v")
    # One line per barrier instruction: the instruction, then the function it is in.
    mine=$(awk '/>:$/ { sym = $0 } /\tdmb\t/ { print "dmb " $3 "\t" sym }' <<<"$dis" |
        grep -E 'nova_core|vgsp|Doorbell' | sed -E 's/^([^\t]*)\t[0-9a-f]+ <(.*)>:$/\1\t\2/')
    echo "  $v:"
    sort <<<"$mine" | uniq -c | sed 's/^/    /'
    case $v in
    all-full)
        if grep -vF 'Doorbell>::ring' <<<"$mine" | grep -qE 'dmb osh(ld|st)'; then
            echo "FAIL: the all-full binary has a dmb oshld/oshst in the driver or the GSP" >&2
            exit 1
        fi
        ;;
    seed)
        grep -qE $'^dmb osh\t.*advance_cpu_write_ptr' <<<"$mine" ||
            { echo "FAIL: no dmb osh after the store in the seed's advance_cpu_write_ptr" >&2; exit 1; }
        if grep -qE $'^dmb oshst\t.*advance_cpu_write_ptr' <<<"$mine"; then
            echo "FAIL: the seed's advance_cpu_write_ptr still has its dmb oshst" >&2
            exit 1
        fi
        ;;
    esac
done

echo
echo "dmb instructions executed under qemu-aarch64, per command (($COUNT+100 commands) - ($COUNT commands)) / 100:"
for v in "${VARIANTS[@]}"; do
    echo "  $v:"
    python3 - "$DIR/vgsp-barriers-$v" "$COUNT" <<'EOF'
import collections, re, subprocess, sys, tempfile

binary, count = sys.argv[1], int(sys.argv[2])
# The addresses in the disassembly are the run's only in a non-PIE binary (ET_EXEC, 2),
# which the build above asks for: a PIE would be loaded at a base of qemu's choosing.
with open(binary, "rb") as f:
    e_type = int.from_bytes(f.read(18)[16:18], "little")
if e_type != 2:
    sys.exit(f"FAIL: {binary} is not a non-PIE executable (ELF type {e_type}, not ET_EXEC)")
dis = subprocess.run(["llvm-objdump-22", "-d", "-C", "--no-show-raw-insn", binary],
                     capture_output=True, text=True, check=True).stdout
dmb, sym = {}, None
for line in dis.splitlines():
    m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
    if m:
        sym = m.group(1)
        continue
    m = re.match(r"^\s*([0-9a-f]+):\s+dmb\s+(\S+)", line)
    if m:
        dmb[int(m.group(1), 16)] = (m.group(2), sym)


def executed(n):
    """Runs the binary for n commands; returns how often each dmb executed."""
    with tempfile.NamedTemporaryFile(suffix=".log") as log:
        subprocess.run(["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", "-singlestep",
                        "-d", "exec,nochain", "-dfilter", ",".join(f"0x{a:x}+4" for a in dmb),
                        "-D", log.name, binary, str(n)], check=True, stdout=subprocess.DEVNULL)
        hits = collections.Counter()
        for line in open(log.name):
            m = re.search(r"/([0-9a-f]{16})/", line)
            if m and int(m.group(1), 16) in dmb:
                hits[dmb[int(m.group(1), 16)]] += 1
        return hits


a, b = executed(count), executed(count + 100)
if not a:
    sys.exit(f"FAIL: no dmb of {binary} executed: the -dfilter addresses are not the run's")
per = collections.Counter()
for key in sorted(set(a) | set(b), key=lambda k: (k[1], k[0])):
    d = (b[key] - a[key]) / 100
    if d:
        kind, sym = key
        per[kind] += d
        print(f"    {d:5.2f}  dmb {kind:<6} {sym}")
print("    total: " + ", ".join(f"dmb {k} {v:.2f}" for k, v in sorted(per.items())))
EOF
done
