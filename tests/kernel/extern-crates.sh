#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# extern-crates.sh BUILD_DIR OUT_DIR
#
# Build the crates.io crates the driver uses (zerocopy + zerocopy-derive,
# bitfield-struct, static_assertions and the proc-macro2/quote/syn/unicode-ident
# stack behind the derives) without cargo, the way the Linux kernel builds its
# own `macros` and `kernel` crates, so they can be linked into a Rust object
# compiled by the (already built) kernel tree in BUILD_DIR.
#
# * Sources come from `cargo vendor` run on a scratch manifest; cargo is used
#   only to fetch sources and resolve features (`cargo metadata`), never to
#   compile.
# * Proc-macro crates and their dependencies are built for the host with the
#   rustc and -C flags found in BUILD_DIR/rust/.libmacros.so.cmd.
# * Target crates are built with the rustc and the codegen/target flags found
#   in BUILD_DIR/rust/.kernel.o.cmd (lint flags dropped, --cap-lints=allow),
#   plus `--cfg no_fp_fmt_parse` as the kernel uses for `core`.  They are bound
#   to the exact BUILD_DIR/rust/libcore.rmeta: rebuild when the tree changes.
# * build.rs scripts are compiled and run; `cargo:rustc-cfg=` lines become
#   `--cfg` flags, `cargo:rustc-env=` lines become environment variables.
#
# Outputs in OUT_DIR: lib<crate>.rlib (+ <crate>.o) for target crates,
# lib<crate>.so for proc macros, host/ for host-only rlibs.  The last line
# printed is the flag set a consumer needs.  The consumer must be compiled from
# BUILD_DIR (same relative --target path as the kernel) and needs
# -Anon_ascii_idents (zerocopy's KnownLayout derive emits non-ASCII idents).
#
# Environment:
#   EXTERN_CRATES_DEPS   dependency lines for the scratch Cargo.toml
#   VENDOR_DIR           reuse an existing vendored tree + Cargo.toml/Cargo.lock
#                        directory (a scratch dir made by a previous run)
#   CARGO                cargo binary used for vendoring/metadata (default cargo)

set -euo pipefail

START=$(date +%s)
log()  { printf '[extern-crates %4ds] %s\n' "$(( $(date +%s) - START ))" "$*" >&2; }
die()  { printf '[extern-crates %4ds] ERROR: %s\n' "$(( $(date +%s) - START ))" "$*" >&2; exit 1; }
trap 'printf "[extern-crates] ERROR: command failed (exit %d) at line %d: %s\n" "$?" "$LINENO" "$BASH_COMMAND" >&2' ERR

[ $# -eq 2 ] || die "usage: $0 BUILD_DIR OUT_DIR"
BUILD_DIR=$(cd "$1" 2>/dev/null && pwd) || die "BUILD_DIR '$1' does not exist"
mkdir -p "$2" || die "cannot create OUT_DIR '$2'"
OUT_DIR=$(cd "$2" && pwd)

KCMD="$BUILD_DIR/rust/.kernel.o.cmd"
MCMD="$BUILD_DIR/rust/.libmacros.so.cmd"
for f in "$KCMD" "$MCMD" "$BUILD_DIR/rust/libcore.rmeta"; do
    [ -f "$f" ] || die "missing $f (is BUILD_DIR a built CONFIG_RUST=y kernel tree?)"
done
command -v python3 >/dev/null || die "python3 is required"
CARGO=${CARGO:-cargo}
command -v "$CARGO" >/dev/null || die "cargo not found (needed for 'cargo vendor' only)"

DEPS=${EXTERN_CRATES_DEPS:-'zerocopy = "0.8"
zerocopy-derive = "0.8"
bitfield-struct = "0.13"
static_assertions = "1.1"'}

# ---------------------------------------------------------------------------
# 1. Flags from the kernel build.
# ---------------------------------------------------------------------------
# Prints: line 1 = rustc, following lines = one flag each.
extract_flags() { # $1 = .cmd file, $2 = mode (target|host)
    python3 - "$1" "$2" <<'PY'
import re, shlex, sys
path, mode = sys.argv[1], sys.argv[2]
line = next((l for l in open(path) if l.startswith("savedcmd_")), None)
if line is None:
    sys.exit(f"no savedcmd_ line in {path}")
cmd = line.split(":=", 1)[1].split(";", 1)[0]
toks = shlex.split(cmd)
while toks and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", toks[0]):
    toks.pop(0)                      # OBJTREE=... env assignments
if not toks:
    sys.exit(f"empty command in {path}")
rustc, rest, out = toks[0], toks[1:], []
skip_next = {"--extern", "--crate-type", "--crate-name", "-o", "--cfg"}
i = 0
while i < len(rest):
    t = rest[i]; i += 1
    if t in skip_next:
        i += 1; continue
    if t.endswith(".rs") or t.startswith(("--emit", "--edition", "--extern=",
                                          "--crate-type=", "--crate-name=")):
        continue
    if re.match(r"^-[WDAF]", t) or t.startswith(("--warn", "--deny", "--allow", "--forbid", "--cap-lints")):
        continue                     # lints: third-party code gets --cap-lints=allow
    if mode == "host" and not t.startswith("-C"):
        continue                     # host: keep codegen/linker flags only
    out.append(t)
print(rustc)
print("\n".join(out))
PY
}

mapfile -t KFLAGS < <(extract_flags "$KCMD" target) || die "cannot parse $KCMD"
mapfile -t HFLAGS < <(extract_flags "$MCMD" host)   || die "cannot parse $MCMD"
[ ${#KFLAGS[@]} -gt 1 ] || die "cannot parse $KCMD"
RUSTC_T=${KFLAGS[0]}; KFLAGS=("${KFLAGS[@]:1}")
RUSTC_H=${HFLAGS[0]}; HFLAGS=("${HFLAGS[@]:1}")
[ -x "$RUSTC_T" ] || die "rustc '$RUSTC_T' from $KCMD is not executable"
[ "$RUSTC_T" = "$RUSTC_H" ] || log "warning: target rustc $RUSTC_T != host rustc $RUSTC_H"
TARGET_FLAGS=("${KFLAGS[@]}" --cfg no_fp_fmt_parse --cap-lints=allow)
HOST_FLAGS=("${HFLAGS[@]}" --cap-lints=allow)
HOST_TRIPLE=$("$RUSTC_H" -vV | sed -n 's/^host: //p')
TARGET_NAME=$(printf '%s\n' "${KFLAGS[@]}" | sed -n 's/^--target=//p' | head -n1)
log "rustc: $("$RUSTC_T" --version) ($RUSTC_T), host $HOST_TRIPLE, target ${TARGET_NAME:-?}"
log "target flags: ${TARGET_FLAGS[*]}"
log "host flags:   ${HOST_FLAGS[*]:-(none)}"

# ---------------------------------------------------------------------------
# 2. Sources: cargo vendor on a scratch manifest, then resolve with metadata.
# ---------------------------------------------------------------------------
if [ -n "${VENDOR_DIR:-}" ]; then
    SCRATCH=$(cd "$VENDOR_DIR" && pwd) || die "VENDOR_DIR '$VENDOR_DIR' missing"
    log "reusing vendored sources in $SCRATCH"
else
    SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/extern-crates.XXXXXX")
    mkdir -p "$SCRATCH/src" "$SCRATCH/.cargo"
    : > "$SCRATCH/src/lib.rs"
    printf '[package]\nname = "extern-crates-scratch"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n\n[dependencies]\n%s\n' \
        "$DEPS" > "$SCRATCH/Cargo.toml"
    log "vendoring into $SCRATCH/vendor"
    (cd "$SCRATCH" && "$CARGO" vendor --versioned-dirs vendor > .cargo/config.toml 2> vendor.log) \
        || { cat "$SCRATCH/vendor.log" >&2; die "cargo vendor failed"; }
fi
[ -f "$SCRATCH/.cargo/config.toml" ] || die "no $SCRATCH/.cargo/config.toml"

# Plan, in dependency order, one tab-separated line per package:
# kind name version edition crate_name lib_src build_rs manifest_dir features deps
# kind: host (host rlib), proc (proc-macro .so), target (kernel rlib).
PLAN=$(cd "$SCRATCH" && "$CARGO" metadata --format-version 1 --offline --locked 2>"$SCRATCH/metadata.log" | python3 -c '
import json, sys
m = json.load(sys.stdin)
pk = {p["id"]: p for p in m["packages"]}
nodes = {n["id"]: n for n in m["resolve"]["nodes"]}
root = m["resolve"]["root"]
def lib(p):
    for t in p["targets"]:
        if any(k in ("lib", "rlib", "proc-macro") for k in t["kind"]):
            return t
def build(p):
    return next((t["src_path"] for t in p["targets"] if "custom-build" in t["kind"]), "")
def deps(i):   # normal deps only (no dev/build deps)
    return [(d["name"], d["pkg"]) for d in nodes[i]["deps"]
            if any(k["kind"] is None for k in d["dep_kinds"])]
kind = {}
def visit(i, host):
    p = pk[i]; is_proc = "proc-macro" in lib(p)["kind"]
    k = "proc" if is_proc else ("host" if host else "target")
    if kind.get(i, k) != k:
        sys.exit("package %s needed both for host and target; unsupported" % p["name"])
    if i in kind: return
    kind[i] = k
    for _, d in deps(i): visit(d, host or is_proc)
    order.append(i)
order = []
for _, d in deps(root): visit(d, False)
for i in order:
    p = pk[i]; t = lib(p)
    bs = build(p)
    if any(b["kind"] == "build" for d in nodes[i]["deps"] for b in d["dep_kinds"]):
        sys.exit("%s has build-dependencies; unsupported" % p["name"])
    print("\t".join([kind[i], p["name"], p["version"], t.get("edition", p["edition"]),
                     t["name"].replace("-", "_"), t["src_path"], bs or "-",
                     p["manifest_path"].rsplit("/", 1)[0],
                     ",".join(nodes[i]["features"]) or "-",
                     ",".join("%s=%s" % (n, pk[d]["name"]) for n, d in deps(i)) or "-"]))
') || { cat "$SCRATCH/metadata.log" >&2; die "cargo metadata / planning failed"; }

log "build plan:"
while IFS=$'\t' read -r kind name ver ed _rest; do
    log "  $kind $name $ver (edition $ed)"
done <<< "$PLAN"

# ---------------------------------------------------------------------------
# 3. Build.
# ---------------------------------------------------------------------------
mkdir -p "$OUT_DIR/host" "$OUT_DIR/build"
declare -A ARTIFACT   # package name -> path of its compiled library

while IFS=$'\t' read -r kind name ver ed cname src bs mdir feats deps; do
    t0=$(date +%s)
    featcfg=()
    if [ "$feats" != "-" ]; then
        IFS=, read -ra fl <<< "$feats"
        for f in "${fl[@]}"; do featcfg+=(--cfg "feature=\"$f\""); done
    fi
    externs=()
    if [ "$deps" != "-" ]; then
        IFS=, read -ra dl <<< "$deps"
        for d in "${dl[@]}"; do
            en=${d%%=*}; dp=${d#*=}
            [ -n "${ARTIFACT[$dp]:-}" ] || die "$name: dependency $dp not built yet"
            externs+=(--extern "$en=${ARTIFACT[$dp]}")
        done
    fi

    # build.rs emulation
    bcfg=(); benv=()
    if [ "$bs" != "-" ]; then
        bdir="$OUT_DIR/build/$name-$ver"; rm -rf "$bdir"; mkdir -p "$bdir/out"
        env -u RUSTC_BOOTSTRAP "$RUSTC_H" --edition="$ed" --crate-type bin --crate-name build_script_build \
            --cap-lints=allow "${featcfg[@]}" -o "$bdir/build-script" "$bs" \
            || die "$name: compiling build script $bs failed"
        fenv=()
        if [ "$feats" != "-" ]; then
            for f in "${fl[@]}"; do
                fu=$(printf '%s' "$f" | tr 'a-z-' 'A-Z_'); fenv+=("CARGO_FEATURE_$fu=1")
            done
        fi
        if [ "$kind" = target ]; then btarget=${TARGET_NAME##*/}; btarget=${btarget%.json}; else btarget=$HOST_TRIPLE; fi
        (cd "$mdir" && env -u RUSTC_BOOTSTRAP -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS \
            RUSTC="$RUSTC_H" OUT_DIR="$bdir/out" TARGET="$btarget" HOST="$HOST_TRIPLE" \
            CARGO_MANIFEST_DIR="$mdir" CARGO_PKG_NAME="$name" CARGO_PKG_VERSION="$ver" \
            CARGO_CFG_TARGET_ARCH="${HOST_TRIPLE%%-*}" PROFILE=release OPT_LEVEL=s DEBUG=false \
            NUM_JOBS=1 "${fenv[@]}" "$bdir/build-script" > "$bdir/output" 2> "$bdir/stderr") \
            || { cat "$bdir/stderr" >&2; die "$name: running build script failed"; }
        while IFS= read -r l; do
            l=${l/#cargo::/cargo:}
            case "$l" in
                cargo:rustc-cfg=*)       bcfg+=(--cfg "${l#cargo:rustc-cfg=}") ;;
                cargo:rustc-env=*)       benv+=("${l#cargo:rustc-env=}") ;;
                cargo:rustc-check-cfg=*|cargo:rerun-if-*|"") ;;
                cargo:warning=*)         log "$name build.rs warning: ${l#cargo:warning=}" ;;
                cargo:*)                 die "$name: unsupported build script directive: $l" ;;
                *)                       ;;
            esac
        done < "$bdir/output"
        [ ${#bcfg[@]} -eq 0 ] || log "$name: build.rs cfgs: ${bcfg[*]}"
    fi

    common=(--edition="$ed" --crate-name "$cname" "${featcfg[@]}" "${bcfg[@]}" "${externs[@]}")
    case "$kind" in
        target)
            out="$OUT_DIR/lib$cname.rlib"
            # Run from BUILD_DIR: the kernel's flags use paths relative to it.
            (cd "$BUILD_DIR" && env "${benv[@]}" RUSTC_BOOTSTRAP=1 CARGO_PKG_NAME="$name" CARGO_PKG_VERSION="$ver" \
                CARGO_MANIFEST_DIR="$mdir" \
                "$RUSTC_T" "${TARGET_FLAGS[@]}" "${common[@]}" --crate-type rlib \
                -L "dependency=$OUT_DIR" --emit=obj="$OUT_DIR/$cname.o" --emit=link="$out" "$src") \
                || die "$name: compiling target rlib failed" ;;
        proc)
            out="$OUT_DIR/lib$cname.so"
            env "${benv[@]}" CARGO_PKG_NAME="$name" CARGO_PKG_VERSION="$ver" CARGO_MANIFEST_DIR="$mdir" \
                "$RUSTC_H" "${HOST_FLAGS[@]}" "${common[@]}" --crate-type proc-macro --extern proc_macro \
                -L "dependency=$OUT_DIR/host" -o "$out" "$src" \
                || die "$name: compiling proc macro failed" ;;
        host)
            out="$OUT_DIR/host/lib$cname.rlib"
            env "${benv[@]}" CARGO_PKG_NAME="$name" CARGO_PKG_VERSION="$ver" CARGO_MANIFEST_DIR="$mdir" \
                "$RUSTC_H" "${HOST_FLAGS[@]}" "${common[@]}" --crate-type rlib --extern proc_macro \
                -L "dependency=$OUT_DIR/host" -o "$out" "$src" \
                || die "$name: compiling host rlib failed" ;;
    esac
    [ -f "$out" ] || die "$name: expected output $out not produced"
    ARTIFACT[$name]=$out
    log "built $kind $name $ver -> ${out#$OUT_DIR/} ($(( $(date +%s) - t0 ))s)"
done <<< "$PLAN"

# ---------------------------------------------------------------------------
# 4. Consumer flags: --extern for the direct dependencies of the manifest.
# ---------------------------------------------------------------------------
CONSUMER=()
for pkg in $(cd "$SCRATCH" && "$CARGO" metadata --format-version 1 --offline --locked 2>/dev/null | python3 -c '
import json, sys
m = json.load(sys.stdin); pk = {p["id"]: p["name"] for p in m["packages"]}
root = [n for n in m["resolve"]["nodes"] if n["id"] == m["resolve"]["root"]][0]
print(" ".join("%s=%s" % (d["name"], pk[d["pkg"]]) for d in root["deps"]))'); do
    CONSUMER+=(--extern "${pkg%%=*}=${ARTIFACT[${pkg#*=}]}")
done
CONSUMER+=(-L "dependency=$OUT_DIR")
printf '%s\n' "${CONSUMER[*]}" > "$OUT_DIR/consumer-flags"
log "done; consumer flags also in $OUT_DIR/consumer-flags (add -Anon_ascii_idents, compile from $BUILD_DIR)"
echo "${CONSUMER[*]}"
