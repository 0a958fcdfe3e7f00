// SPDX-License-Identifier: GPL-2.0

//! Project tooling.
//!
//! `cargo xtask ordering-mutants [--jobs N] [--list]`: every ordering point of the driver
//! and the virtual GSP deleted, weakened and moved, one at a time, and the seed's pre-fix
//! shape, each run under the loom scenarios and the DMA contract checker; the last line is
//! `ordering mutants: K killed of N` (see [`mutants`]).
//!
//! `cargo xtask ordering-trace [--mutants]`: the driver and the virtual GSP compiled for
//! aarch64, traced instruction by instruction under `qemu-aarch64` with the project's
//! plugin, and the trace decided under Linux's DMA contract and arm64's architecture;
//! with `--mutants`, every mutant above too (see [`ordering`]).
//!
//! `cargo xtask variant-tree NAME DIR`: a copy of the sources with the barriers of one of
//! the benchmark's variants, made from the same points and mutations (see [`variant`]).
//!
//! `cargo xtask litmus [--check] [FILE|DIR]...`: C litmus tests in LKMM's format decided
//! by the contract checker; with no path, Linux 7.3's own, checked against their `Result:`
//! lines (see [`litmus`]).
//!
//! `cargo xtask linux-7.3` and `cargo xtask linux RELEASE`: the Linux 7.3 tree, and any
//! release Debian serves (7.2, 7.3~rc7, ...) (see [`linux`]).
//!
//! `cargo xtask check-patches [--tree DIR]`: the patches of `upstream/` against the tree
//! (see [`patches`]).
//!
//! `cargo xtask qemu [aarch64|x86_64]`: QEMU 11 from Debian's sid in a
//! private root in the cache, its version and the command that starts it (see [`qemu`]).
//!
//! `cargo xtask tools list|ensure`: the programs the commands run and where each comes
//! from (see [`tools`]).
//!
//! `cargo xtask fresh-machine [--full | -- RUN_ARGS...]`: the tools' probe and `tests/run.sh` in a
//! Debian root that has only what a new machine has (see [`fresh`]).
//!
//! `cargo xtask pub-audit [--list]`: which of the driver's `pub` items another crate needs,
//! and which none does (see [`pub_audit`]).
//!
//! `cargo xtask api-7.3 [--tree DIR]`: the errors of nova-core compiled against the
//! pristine Linux 7.3 `kernel` crate (see [`api`]).
//!
//! `cargo xtask kernel-7.3 [--without-project] [x86_64|arm64]...`: the kernel tier on
//! Linux 7.3, the project built into the tree and booted under QEMU (see [`kernel`]).
//!
//! `cargo xtask upstream [--tree DIR] [--patch FILE]... [--arch ARCH] [--ordering] [--gsp-fault NAME|all]... [WHAT...]`: a tree's own
//! nova-core queue, unmodified, against the virtual GSP (see [`upstream`]).

// The modules in layers, each importing only from the layers before it, so that no module
// imports one that imports it; this file only dispatches to the commands' entry points.
//
// 0. `util`, the helpers all share: its leaves `process`, `stamp` and `debian`; `tools` (on
//    `process`); `aarch64` (on `tools`).
// 1. On `util` alone: `fresh`, `kbuild` (the Linux 7.3 builds), `linux`, `mutants` (the
//    mutant engine), `qemu`.
// 2. `api`, `kernel` (on `kbuild`, `linux`); `pub_audit` (`linux`); `boot` (`kbuild`, `qemu`); `kunit_boot`, `tools`
//    (`qemu`); `litmus` (`linux`); `ordering`, `variant` (`mutants`).
// 3. `kernel_trace` (`boot`).
// 4. `upstream` (`api`, `boot`, `kbuild`, `kernel_trace`, `linux`, `ordering`).
// 5. `patches` (`kbuild`, `kunit_boot`, `linux`, `upstream`).
mod util;

mod fresh;
mod kbuild;
mod linux;
mod mutants;
mod qemu;

mod api;
mod boot;
mod kernel;
mod kunit_boot;
mod latency;
mod litmus;
mod ordering;
mod pub_audit;
mod tools;
mod variant;

mod kernel_trace;

mod upstream;

mod patches;

use std::{
    env,
    process::ExitCode, //
};

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ordering-mutants") => mutants::ordering_mutants(&args[1..]),
        Some("ordering-trace") => ordering::ordering_trace(&args[1..]),
        Some("litmus") => litmus::litmus(&args[1..]),
        Some("linux-7.3") => linux::linux_7_3_command(&args[1..]),
        Some("linux") => linux::linux_command(&args[1..]),
        Some("check-patches") => patches::check_patches(&args[1..]),
        Some("api-7.3") => api::api_7_3(&args[1..]),
        Some("pub-audit") => pub_audit::pub_audit(&args[1..]),
        Some("kernel-7.3") => kernel::kernel_7_3(&args[1..]),
        Some("upstream") => upstream::upstream(&args[1..]),
        Some("qemu") => qemu::qemu_command(&args[1..]),
        Some("tools") => tools::tools_command(&args[1..]),
        Some("fresh-machine") => fresh::fresh_machine(&args[1..]),
        Some("variant-tree") => variant::variant_tree(&args[1..]),
        _ => Err("usage: cargo xtask ordering-mutants [--jobs N] [--list] | \
                  ordering-trace [--mutants] | variant-tree NAME DIR | litmus [--check] [FILE|DIR]... | linux-7.3 | \
                  linux RELEASE | \
                  check-patches [--tree DIR] | api-7.3 [--tree DIR] | pub-audit [--list] | \
                  kernel-7.3 [--without-project] [x86_64|arm64]... | \
                  upstream [--tree DIR] [--patch FILE]... [--arch ARCH] [--ordering] [--gsp-fault NAME|all]... [WHAT...] | \
                  qemu [aarch64|x86_64] | \
                  tools list | tools ensure [--all] [--probe] [TOOL...] | \
                  fresh-machine [--full | -- RUN_ARGS...]"
            .into()),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::from(2)
        }
    }
}
