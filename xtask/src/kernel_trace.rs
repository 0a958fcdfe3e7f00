// SPDX-License-Identifier: GPL-2.0

//! The in-kernel ordering trace: `cargo xtask upstream [--tree DIR] [--patch FILE|--series]...
//! boot --arch arm64 --ordering` records what nova-core, built into the arm64 kernel,
//! does to the GSP's shared memory while it boots the emulated GH100, and decides it
//! with the checkers of the out-of-kernel trace (`tools/model`'s `vgsp_model::compiled`,
//! the contract and arm64 verdicts).
//!
//! # What is recorded
//!
//! A QEMU TCG plugin in system mode, `tools/trace/plugin/vgsp-ktrace.c`, built with gcc
//! against the plugin header of the QEMU 11 that boots the guest ([`crate::qemu`]). It is
//! told ([`prepare`], a map file) where three things are in the kernel, which is booted
//! `nokaslr` so that `System.map`'s addresses are the run's:
//!
//! - **nova-core's text**: the text sections of `drivers/gpu/nova-core/nova_core.o` as
//!   linked. The kernel builds Rust with `-Zfunction-sections=n` (unless
//!   `CONFIG_LD_DEAD_CODE_DATA_ELIMINATION`), so the object has one `.text` (and maybe a
//!   `.text.unlikely.`) that the linker places whole; each is placed by its function
//!   symbols (`llvm-objdump-22 -t`) whose names `System.map` holds once ([`place`]),
//!   all of which must agree. The code generic over nova-core's types (the `kernel`
//!   crate's, `core`'s) is instantiated there too.
//! - **the code that works on its behalf** ("followed"): the `kernel` crate's own text
//!   (`rust/kernel.o`), `core`'s (`rust/core.o`: `copy_from_slice`, which upstream's
//!   `SBuffer` copies commands and messages with, is an instance there that calls
//!   `memcpy`), the C helpers the Rust code calls for what bindgen cannot reach
//!   (`rust/helpers/helpers.o`: `rust_helper_dma_mb`, `rust_helper_readl`, ...: the DMA
//!   barriers are there, out of nova-core's text), and the string functions (`memcpy`,
//!   `memmove`, `memset`, `memcmp`, their `__` names; each up to the next symbol of
//!   `System.map`). Not followed: the rest of the kernel (allocators, locks' slow paths,
//!   `printk`, the scheduler, interrupts), whose barriers are not the driver's.
//! - the kernel's image (`_text`..`_end`): accesses there (static data, the firmware
//!   built into `.rodata`) are never the shared memory, and are not recorded.
//!
//! Per vCPU the plugin keeps an "in nova" flag: set when a translation block of nova's
//! text starts, kept through blocks of the followed code, cleared by any other block (a
//! conditional callback on the transitions only, so the rest of the boot pays one
//! compare per block). While it is set, it records in program order, as 32-byte records
//! of `vgsp_model::compiled::Record`'s format: every load and store but those addressed
//! from the stack pointer and those of MMIO, with the *physical* address and the value
//! loaded or stored (`qemu_plugin_get_hwaddr`, `qemu_plugin_mem_get_value`), the
//! instruction's acquire/release bits in `info`; every `dmb`/`dsb` with its domain and
//! type; that a conditional branch ran. An interrupt taken inside followed code, and a call
//! from followed code to other code (the link register holding a return address in
//! followed code), keep the flag for when execution comes back: the pc it comes back to
//! and the stack pointer are remembered, and a block of followed code starting there on
//! that stack sets the flag again, on whichever vCPU (the task may be preempted and go on
//! on the other). One that could not be remembered refuses the trace.
//! `tid` is the vCPU's index. At its exit the plugin writes a summary beside the trace
//! (`<trace>.summary`): how often nova's text was entered, the records, whether two
//! vCPUs were ever in nova's code at once, the `memcpy` instructions it cannot see.
//!
//! The emulated GH100 states where the driver's shared memory is: its FMC follows the boot
//! arguments to `GspArgumentsCached` and prints `fmc: boot parameters at …; queues at
//! ADDR` with `sharedMemPhysAddr`, the bus address of the one coherent allocation of
//! `GspMem` (PTE page, `cpuq`, `gspq`). The `virt` machine's PCIe host maps bus addresses
//! to physical ones 1:1 and the guest has no IOMMU, so it is the physical address the
//! trace's accesses carry ([`queues_address`]).
//!
//! # What is decided
//!
//! `vgsp-ordering --kernel-shared ADDR` (`tools/model`): the records of every vCPU are the
//! driver's one agent, in the file's order (the plugin appends under one lock; a task
//! that moves from one vCPU to the other stops on the first before it starts on the
//! second, so the file's order is its program order; a boot in which two vCPUs ran the
//! driver's code at once is refused). Accesses inside `GspMem` are kept, each pointer
//! load followed by the value it returned; the acquire/release accesses elsewhere become
//! the checker's "ordered other" records; a region record of `GspMem` is put first
//! (`vgsp_model::kernel::driver_trace`). The driver's side alone is decided
//! (`compiled::check_driver`), under the same rules as the two-agent check: the GSP is
//! our emulated device, in another process, whose own ordering `cargo xtask
//! ordering-trace` decides. Each pc is mapped to its line through `vmlinux`'s DWARF
//! (`llvm-addr2line`, relative to the tree's source), which the arm64 configuration
//! builds in (`CONFIG_DEBUG_INFO_DWARF5`, [`boot::boot_fragment`]).
//!
//! The result: one line per defect, its two accesses with their lines and the barrier
//! that would order them, and `ordering (arm64 kernel): C defects (contract), A defects
//! (arm64)` as the boot's figures.
//!
//! What a boot exercises is what is decided: the boot sends a handful of commands, so
//! `cpuq` never wraps and no command slot is reused after the GSP's read pointer showed
//! it free (pristine 7.3.4's `cmdq.rs:416` defect needs that: found out of the kernel,
//! not exercised here). A pc is reported at the line its own inlined frames give: in the
//! kernel build `MsgqTxHeader::write_ptr` stays out of line, so the GSP write-pointer
//! load is `gsp/fw.rs:729` here where the out-of-kernel build says `cmdq.rs:407`.
//!
//! # What cannot be seen, and refusals
//!
//! - `memcpy` as MOPS instructions (`cpyp`/`cpym`/`cpye`, which the `max` CPU has and the
//!   kernel patches in): QEMU copies with the host's `memmove`, no memory callback. The
//!   arm64 boot runs with `arm64.nomops` on the kernel's command line ([`boot`];
//!   Grace's Neoverse V2 has no MOPS either), and the plugin counts MOPS instructions run
//!   in the driver's code: any is an error. `dc zva` (the generic `memset` zeroes large blocks with it)
//!   has no memory callback either: the plugin reads its `Xt` (register reads, QEMU
//!   11's API) and records the block's stores itself, the block's size being what the
//!   guest read from `DCZID_EL0` (QEMU does not expose that register to plugins; the
//!   guest's own `mrs` before its `dc zva` does). One it cannot record is counted and
//!   said.
//! - A trace in which nova's text never ran refuses to say "0 defects"; so does one with
//!   no access of the shared memory, one whose plugin wrote no summary (QEMU did not end
//!   normally) or a boot whose transcript names no queues.
//!
//! # Cost
//!
//! Only the blocks of nova's text and of the followed code get memory callbacks; records
//! are binary, buffered, written under one lock, and the checker reads them a chunk at a
//! time. The boot's figure `boot: N s from QEMU's start to its end` with and without
//! `--ordering` is the measure: 1.0 s and 0.9 to 1.3 s on 7.3.4, 58 000 records
//! (tools/trace/README.md).

use std::{
    collections::BTreeMap,
    ffi::OsString,
    fs,
    path::{
        Path,
        PathBuf, //
    },
    process::Command,
};

use crate::{
    boot,
    util::tools, //
};

/// The string functions the driver's code calls, followed by the plugin: arm64's
/// (`arch/arm64/lib`), whose `memcpy` and `memset` branch to their generic bodies when
/// the CPU has no MOPS (`arm64.nomops`).
const STRING_FUNCTIONS: &[&str] = &[
    "memcpy",
    "__memcpy",
    "__pi_memcpy",
    "__pi_memcpy_generic",
    "memmove",
    "__memmove",
    "__pi_memmove",
    "memset",
    "__memset",
    "__pi_memset",
    "__pi_memset_generic",
    "memcmp",
    "__pi_memcmp",
    "bcmp",
];

/// The objects whose text is followed, relative to the build directory; those the build
/// does not have are left out.
const FOLLOWED_OBJECTS: &[&str] = &["rust/kernel.o", "rust/core.o", "rust/helpers/helpers.o"];

/// The driver's object, relative to the build directory.
const NOVA_OBJECT: &str = "drivers/gpu/nova-core/nova_core.o";

/// The source paths a defect's line is not reported in when a frame of the driver's
/// own files is there, least preferred last (see `vgsp-ordering --skip`): upstream's
/// accessor helpers, the `kernel` crate, the C helpers, the headers and the arch code.
const SKIP: &[&str] = &[
    "gsp/fw.rs",
    "rust/kernel/",
    "rust/helpers/",
    "include/",
    "arch/arm64/",
];

/// A range of guest virtual addresses, `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Span {
    start: u64,
    end: u64,
}

/// What the traced boot needs: the plugin and its map, where the trace goes, what decides
/// it.
pub(crate) struct Trace {
    plugin: PathBuf,
    map: PathBuf,
    out: PathBuf,
    vmlinux: PathBuf,
    source: PathBuf,
    checker: PathBuf,
    nova: Vec<Span>,
}

/// One entry of `System.map`: address, type letter, name.
#[derive(Clone, Debug, PartialEq, Eq)]
struct MapEntry {
    addr: u64,
    kind: char,
    name: String,
}

/// Parses `System.map` (`ffff800080010000 T _text`); lines that are not entries are
/// skipped.
fn system_map(text: &str) -> Vec<MapEntry> {
    text.lines()
        .filter_map(|l| {
            let mut parts = l.split_whitespace();
            let addr = u64::from_str_radix(parts.next()?, 16).ok()?;
            let kind = parts.next()?.chars().next()?;
            let name = parts.next()?.to_string();
            Some(MapEntry { addr, kind, name })
        })
        .collect()
}

/// The names of `System.map` that it holds once, and their address.
fn unique_names(map: &[MapEntry]) -> BTreeMap<&str, Option<u64>> {
    let mut names: BTreeMap<&str, Option<u64>> = BTreeMap::new();
    for e in map {
        names
            .entry(e.name.as_str())
            .and_modify(|a| *a = None)
            .or_insert(Some(e.addr));
    }
    names
}

/// A text section of an object: its name, size and function symbols (offset, name).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Section {
    name: String,
    size: u64,
    symbols: Vec<(u64, String)>,
}

/// The text sections of an object from `llvm-objdump -h` (`  2 .text  00007af4
/// 0000000000000000 TEXT`) and its function symbols from `llvm-objdump -t`
/// (`0000000000001264 l     F .text<TAB>0000000000000084 name`).
fn text_sections(headers: &str, symbols: &str) -> Vec<Section> {
    let mut sections: Vec<Section> = headers
        .lines()
        .filter_map(|l| {
            let parts: Vec<&str> = l.split_whitespace().collect();
            match parts.as_slice() {
                [_, name, size, _, kind, ..] if kind.contains("TEXT") => Some(Section {
                    name: name.to_string(),
                    size: u64::from_str_radix(size, 16).ok()?,
                    symbols: Vec::new(),
                }),
                _ => None,
            }
        })
        .collect();
    for l in symbols.lines() {
        let Some((left, right)) = l.split_once('\t') else {
            continue;
        };
        // The value, the flags, the section.
        let left: Vec<&str> = left.split_whitespace().collect();
        let [value, flags @ .., section] = left.as_slice() else {
            continue;
        };
        // A function symbol: `F` among the flags.
        if !flags.contains(&"F") {
            continue;
        }
        let Some(name) = right.split_whitespace().nth(1) else {
            continue;
        };
        let (Ok(value), Some(s)) = (
            u64::from_str_radix(value, 16),
            sections.iter_mut().find(|s| s.name == *section),
        ) else {
            continue;
        };
        s.symbols.push((value, name.to_string()));
    }
    sections
}

/// Places the text sections of `object` (named for messages) in the kernel by their
/// function symbols that `map` holds once: every such symbol must give the same start.
/// A section other than `.text` none of whose symbols `map` holds once (a cold
/// `.text.unlikely.` of a few local functions, say) is left out and named in the
/// returned notes.
///
/// # Errors
///
/// - `.text` has code but no symbol that `System.map` holds once.
/// - Two symbols of a section give different starts: the object is not what was linked.
fn place(
    object: &str,
    sections: &[Section],
    map: &[MapEntry],
) -> Result<(Vec<Span>, Vec<String>), String> {
    let unique = unique_names(map);
    let (mut spans, mut notes) = (Vec::new(), Vec::new());
    for s in sections.iter().filter(|s| s.size > 0) {
        let mut starts: BTreeMap<u64, &str> = BTreeMap::new();
        for (offset, name) in &s.symbols {
            if let Some(Some(addr)) = unique.get(name.as_str()) {
                starts
                    .entry(addr.wrapping_sub(*offset))
                    .or_insert(name.as_str());
            }
        }
        let mut found = starts.iter();
        match (found.next(), found.next()) {
            (Some((&start, _)), None) => spans.push(Span {
                start,
                end: start.saturating_add(s.size),
            }),
            (None, _) if s.name != ".text" => notes.push(format!(
                "{object}: its {} ({} bytes) is not traced: no function of it is in System.map once",
                s.name, s.size
            )),
            (None, _) => {
                return Err(format!(
                    "{object}: no function of its {} is in System.map: is it the object the kernel was linked from?",
                    s.name
                ))
            }
            (Some((a, name_a)), Some((b, name_b))) => {
                return Err(format!(
                    "{object}: its {} would start at {a:#x} by {name_a} and at {b:#x} by {name_b}: the object is not the one linked into vmlinux",
                    s.name
                ))
            }
        }
    }
    if spans.is_empty() {
        return Err(format!("{object} has no text"));
    }
    Ok((spans, notes))
}

/// The spans of the named functions of `map`: each from its address to the next higher
/// address of the map.
fn function_spans(map: &[MapEntry], names: &[&str]) -> Vec<Span> {
    let mut addrs: Vec<u64> = map.iter().map(|e| e.addr).collect();
    addrs.sort_unstable();
    addrs.dedup();
    let mut spans: Vec<Span> = map
        .iter()
        .filter(|e| names.contains(&e.name.as_str()))
        .filter_map(|e| {
            let i = addrs.partition_point(|&a| a <= e.addr);
            addrs.get(i).map(|&end| Span { start: e.addr, end })
        })
        .collect();
    spans.sort_unstable();
    spans.dedup();
    spans
}

/// The kernel image's span, `_text` to `_end`, if `map` names both.
fn image_span(map: &[MapEntry]) -> Option<Span> {
    let at = |name: &str| map.iter().find(|e| e.name == name).map(|e| e.addr);
    Some(Span {
        start: at("_text")?,
        end: at("_end")?,
    })
}

/// The plugin's map file: one `KIND START END` line per span (`nova`, `follow`, `image`).
fn map_file(nova: &[Span], follow: &[Span], image: Option<Span>) -> String {
    let mut text =
        String::from("# vgsp-ktrace map: KIND START END (guest virtual, end exclusive)\n");
    let lines = nova
        .iter()
        .map(|s| ("nova", s))
        .chain(follow.iter().map(|s| ("follow", s)))
        .chain(image.iter().map(|s| ("image", s)));
    for (kind, s) in lines {
        text += &format!("{kind} {:#x} {:#x}\n", s.start, s.end);
    }
    text
}

/// Returns the physical address of the driver's shared memory, from the emulated device's
/// transcript (`gh100: fmc: boot parameters at …; queues at 0x…`).
///
/// # Errors
///
/// - No such line: the FMC never reached the queues.
/// - Two different addresses: the checker decides one queue.
fn queues_address(transcript: &str) -> Result<u64, String> {
    let mut found: Vec<u64> = Vec::new();
    for line in transcript.lines() {
        let Some(rest) = line
            .strip_prefix("gh100: fmc: boot parameters at ")
            .and_then(|l| l.split_once("; queues at ").map(|(_, a)| a))
        else {
            continue;
        };
        let hex = rest.trim().trim_start_matches("0x");
        let hex = hex
            .split(|c: char| !c.is_ascii_hexdigit())
            .next()
            .unwrap_or("");
        let addr = u64::from_str_radix(hex, 16)
            .map_err(|e| format!("the transcript's queues address {rest:?}: {e}"))?;
        if !found.contains(&addr) {
            found.push(addr);
        }
    }
    match found.as_slice() {
        [addr] => Ok(*addr),
        [] => Err(
            "the device's transcript names no queues (`fmc: boot parameters at …; queues at …`): \
             the FMC never reached the driver's shared memory, so there is nothing to decide"
                .into(),
        ),
        more => Err(format!(
            "the device's transcript names {} queue addresses ({}): the checker decides one queue",
            more.len(),
            more.iter()
                .map(|a| format!("{a:#x}"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// What the plugin wrote in its summary (`KEY VALUE` lines).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Summary {
    /// Times a vCPU entered nova's text from other code.
    entries: u64,
    /// Records written.
    records: u64,
    /// Entries while another vCPU was in the driver's code.
    overlaps: u64,
    /// MOPS instructions run in the driver's code.
    mops: u64,
    /// `dc zva` instructions run in the driver's code whose zeroing is not recorded.
    zva: u64,
    /// `dc zva` instructions whose block's stores the plugin recorded.
    zva_recorded: u64,
    /// Records lost to a failed write.
    lost: u64,
    /// Interrupts and exceptions taken in the driver's code.
    interrupted: u64,
    /// Returns into followed code after them, or after a call out of it.
    restored: u64,
    /// Interrupts in followed code, or calls from it to other code, whose return the
    /// plugin could not watch for.
    unresumable: u64,
    /// Calls from followed code to other code whose return the plugin watched for.
    calls_out: u64,
    /// Discontinuities whose arguments are not QEMU 11.1's: the plugin's declarations and
    /// the QEMU running it disagree.
    odd_discon: u64,
}

/// Parses the plugin's summary.
///
/// # Errors
///
/// A line that is not `KEY NUMBER`, or a key missing.
fn summary(text: &str) -> Result<Summary, String> {
    let mut values: BTreeMap<&str, u64> = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        let (key, value) = line
            .split_once(' ')
            .ok_or_else(|| format!("the plugin's summary line {line:?} is not KEY VALUE"))?;
        let value = value
            .trim()
            .parse()
            .map_err(|e| format!("the plugin's summary line {line:?}: {e}"))?;
        values.insert(key, value);
    }
    let get = |key: &str| {
        values
            .get(key)
            .copied()
            .ok_or_else(|| format!("the plugin's summary has no {key}"))
    };
    Ok(Summary {
        entries: get("nova_entries")?,
        records: get("records")?,
        overlaps: get("overlaps")?,
        mops: get("mops")?,
        zva: get("zva")?,
        zva_recorded: get("zva_recorded")?,
        lost: get("lost")?,
        interrupted: get("interrupted")?,
        restored: get("restored")?,
        unresumable: get("unresumable")?,
        calls_out: get("calls_out")?,
        odd_discon: get("odd_discon")?,
    })
}

/// Refuses a trace that cannot be decided, by the plugin's summary; returns what to say
/// about it otherwise.
///
/// # Errors
///
/// Nothing of nova's text ran, two vCPUs ran the driver's code at once, `memcpy` ran as
/// MOPS instructions, records were lost, the rest of a followed function after an
/// interrupt or a call could not be followed, a `dc zva` went unrecorded, or QEMU called
/// the plugin with arguments its API does not give: a trace missing accesses could show
/// no defect where there is one.
fn vet(s: &Summary, nova: &[Span]) -> Result<Vec<String>, String> {
    let text = nova
        .iter()
        .map(|s| format!("{:#x}..{:#x}", s.start, s.end))
        .collect::<Vec<_>>()
        .join(", ");
    if s.entries == 0 {
        return Err(format!(
            "no instruction of nova-core's text ({text}) ran in the traced boot: refusing to decide code the trace never saw (is the driver built in, and the kernel booted nokaslr?)"
        ));
    }
    if s.overlaps > 0 {
        return Err(format!(
            "two vCPUs ran the driver's code at once ({} times): its records are not one task's program order",
            s.overlaps
        ));
    }
    if s.mops > 0 {
        return Err(format!(
            "the driver's code ran {} MOPS instructions (memcpy as cpyp/cpym/cpye), whose accesses QEMU's plugins cannot see: boot with arm64.nomops",
            s.mops
        ));
    }
    if s.lost > 0 {
        return Err(format!(
            "the plugin could not write {} records: the trace is incomplete",
            s.lost
        ));
    }
    if s.unresumable > 0 {
        return Err(format!(
            "{} interrupts in followed code, or calls from it, could not be followed back: \
             the rest of those functions' accesses are missing from the trace",
            s.unresumable
        ));
    }
    if s.zva > 0 {
        return Err(format!(
            "the driver's code ran `dc zva` {} times before the plugin knew the block's size: \
             what those zeroed is missing from the trace",
            s.zva
        ));
    }
    if s.odd_discon > 0 {
        return Err(format!(
            "QEMU reported {} interrupts with arguments its plugin API (version 7) does not \
             give: tools/trace/plugin/qemu-11/qemu-plugin.h and this QEMU disagree",
            s.odd_discon
        ));
    }
    Ok(vec![format!(
        "ordering: the trace: nova-core's text ({text}) entered {} times, {} records; {} interrupts \
         and exceptions in the driver's code, {} calls out of followed code, {} returns into \
         followed code; {} `dc zva` blocks recorded",
        s.entries, s.records, s.interrupted, s.calls_out, s.restored, s.zva_recorded
    )])
}

/// Where the plugin writes its summary of the trace at `trace`.
fn summary_path(trace: &Path) -> PathBuf {
    let mut name = trace.as_os_str().to_owned();
    name.push(".summary");
    PathBuf::from(name)
}

/// Runs `cmd`, returns its standard output.
fn output(cmd: &mut Command, what: &str) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{what}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{what} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The text sections of `object`, through `llvm-objdump-22`.
fn object_sections(object: &Path) -> Result<Vec<Section>, String> {
    let headers = output(
        tools::command("llvm-objdump-22")?.arg("-h").arg(object),
        &format!("llvm-objdump-22 -h {}", object.display()),
    )?;
    let symbols = output(
        tools::command("llvm-objdump-22")?.arg("-t").arg(object),
        &format!("llvm-objdump-22 -t {}", object.display()),
    )?;
    Ok(text_sections(&headers, &symbols))
}

/// The project's declarations of QEMU 11.1's plugin API and the part of glib it names,
/// relative to the repository (see the header's comment for why not QEMU's own).
const PLUGIN_INCLUDE: &str = "tools/trace/plugin/qemu-11";

/// Builds the plugin against QEMU 11.1's plugin API; returns the shared object.
fn build_plugin(repo: &Path) -> Result<PathBuf, String> {
    let include = repo.join(PLUGIN_INCLUDE);
    let out_dir = repo.join("target/trace");
    fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    let so = out_dir.join("libvgsp-ktrace.so");
    let out = tools::command("gcc")?
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC"])
        .args(["-fvisibility=hidden", "-pthread"])
        .arg("-I")
        .arg(&include)
        .arg("-o")
        .arg(&so)
        .arg(repo.join("tools/trace/plugin/vgsp-ktrace.c"))
        .output()
        .map_err(|e| format!("gcc: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "the system-mode plugin does not build against {}:\n{}",
            include.display(),
            String::from_utf8_lossy(&out.stderr).trim_end()
        ));
    }
    Ok(so)
}

/// Builds the checker `vgsp-ordering`; returns the program.
fn build_checker(repo: &Path) -> Result<PathBuf, String> {
    let status = Command::new(env!("CARGO"))
        .args(["build", "--release", "-q", "-p", "vgsp-model"])
        .args(["--bin", "vgsp-ordering"])
        .current_dir(repo)
        .status()
        .map_err(|e| format!("cargo: {e}"))?;
    if !status.success() {
        return Err("the checker vgsp-ordering does not build".into());
    }
    Ok(repo.join("target/release/vgsp-ordering"))
}

/// Prepares the traced boot of the kernel built in `build` (`vmlinux`, `System.map`,
/// nova-core's object): finds nova's text and the followed code, writes the plugin's map
/// into `dir` (the boot's log directory), builds the plugin and the checker.
///
/// # Errors
///
/// - A file of the build is missing, or `vmlinux` has no DWARF line tables.
/// - nova-core's text cannot be placed in `System.map`.
/// - The plugin or the checker does not build.
pub(crate) fn prepare(repo: &Path, build: &Path, dir: &Path) -> Result<Trace, String> {
    let vmlinux = build.join("vmlinux");
    let map_path = build.join("System.map");
    let nova_object = build.join(NOVA_OBJECT);
    for f in [&vmlinux, &map_path, &nova_object] {
        if !f.is_file() {
            return Err(format!(
                "{} is missing: the in-kernel trace needs the kernel's build with nova-core built in",
                f.display()
            ));
        }
    }
    let sections = output(
        tools::command("llvm-objdump-22")?.arg("-h").arg(&vmlinux),
        "llvm-objdump-22 -h vmlinux",
    )?;
    if !sections.lines().any(|l| l.contains(" .debug_line ")) {
        return Err(format!(
            "{} has no DWARF line tables (.debug_line): the arm64 configuration needs CONFIG_DEBUG_INFO_DWARF5=y (boot::boot_fragment)",
            vmlinux.display()
        ));
    }
    let text = fs::read_to_string(&map_path).map_err(|e| format!("{}: {e}", map_path.display()))?;
    let map = system_map(&text);
    let (nova, mut notes) = place(NOVA_OBJECT, &object_sections(&nova_object)?, &map)?;
    let mut follow = function_spans(&map, STRING_FUNCTIONS);
    for object in FOLLOWED_OBJECTS {
        let path = build.join(object);
        if path.is_file() {
            let (spans, more) = place(object, &object_sections(&path)?, &map)?;
            follow.extend(spans);
            notes.extend(more);
        }
    }
    for note in &notes {
        println!("ordering: {note}");
    }
    fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let map_out = dir.join("ktrace.map");
    fs::write(&map_out, map_file(&nova, &follow, image_span(&map)))
        .map_err(|e| format!("{}: {e}", map_out.display()))?;
    // The source the DWARF names: the build directory's `source` link (kbuild's O=).
    let source = fs::canonicalize(build.join("source"))
        .or_else(|_| fs::canonicalize(build.join("../src")))
        .map_err(|e| format!("{}: no source link ({e})", build.display()))?;
    let plugin = build_plugin(repo)?;
    let checker = build_checker(repo)?;
    println!(
        "ordering: tracing nova-core's text {} and {} followed spans (map: {})",
        nova.iter()
            .map(|s| format!("{:#x}..{:#x}", s.start, s.end))
            .collect::<Vec<_>>()
            .join(", "),
        follow.len(),
        map_out.display()
    );
    // A trace or summary of an earlier boot must not pass for this one's.
    let out = dir.join("ktrace.bin");
    for stale in [out.clone(), summary_path(&out)] {
        match fs::remove_file(&stale) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(format!("{}: {e}", stale.display()))
            }
            _ => {}
        }
    }
    Ok(Trace {
        plugin,
        map: map_out,
        out,
        vmlinux,
        source,
        checker,
        nova,
    })
}

impl Trace {
    /// QEMU's arguments for the traced boot: the plugin.
    pub(crate) fn qemu_args(&self) -> Vec<OsString> {
        let mut plugin = OsString::from(self.plugin.as_os_str());
        plugin.push(",out=");
        plugin.push(self.out.as_os_str());
        plugin.push(",map=");
        plugin.push(self.map.as_os_str());
        vec!["-plugin".into(), plugin]
    }

    /// Decides the trace of the boot `run` ended: prints the defect lines and returns the
    /// figures, `ordering (arm64 kernel): C defects (contract), A defects (arm64)`.
    ///
    /// # Errors
    ///
    /// - The transcript names no queues (or several).
    /// - The plugin wrote no summary, or one that refuses the trace ([`vet`]).
    /// - The checker cannot decide the trace (no access of the shared memory, say).
    pub(crate) fn decide(&self, run: &boot::Run) -> Result<String, String> {
        println!("== ordering (arm64 kernel)");
        let base = queues_address(&run.transcript)?;
        let summary_path = summary_path(&self.out);
        let text = fs::read_to_string(&summary_path).map_err(|e| {
            format!(
                "{}: {e}: the plugin wrote no summary (did QEMU end normally?)",
                summary_path.display()
            )
        })?;
        for line in vet(&summary(&text)?, &self.nova)? {
            println!("{line}");
        }
        let size = fs::metadata(&self.out).map_or(0, |m| m.len());
        // CAST: a size in megabytes, for reading.
        println!(
            "ordering: the driver's shared memory at {base:#x} (the device's transcript); trace {} ({:.1} MB)",
            self.out.display(),
            size as f64 / 1e6
        );
        let mut cmd = Command::new(&self.checker);
        cmd.arg("--trace")
            .arg(&self.out)
            .arg("--binary")
            .arg(&self.vmlinux)
            .arg("--kernel-shared")
            .arg(format!("{base:#x}"))
            .arg("--root")
            .arg(&self.source);
        for s in SKIP {
            cmd.args(["--skip", s]);
        }
        let out = cmd.output().map_err(|e| format!("vgsp-ordering: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "vgsp-ordering could not decide {}: {}",
                self.out.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let mut lines: Vec<&str> = text.lines().collect();
        let last = lines.pop().unwrap_or_default();
        for line in lines {
            println!("{line}");
        }
        println!("{last}");
        figures(last)
    }
}

/// The boot's figures from the checker's summary line (`ordering: C defects (contract), A
/// defects (arm64), …`).
///
/// # Errors
///
/// The line is not the checker's summary.
fn figures(summary: &str) -> Result<String, String> {
    let parts: Vec<&str> = summary
        .strip_prefix("ordering: ")
        .map(|s| s.split(", ").take(2).collect())
        .unwrap_or_default();
    match parts.as_slice() {
        [c, a] if c.ends_with("(contract)") && a.ends_with("(arm64)") => {
            Ok(format!("ordering (arm64 kernel): {c}, {a}"))
        }
        _ => Err(format!("vgsp-ordering printed no summary: {summary:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAP: &str = "\
ffff800080000000 T _text
ffff800080010000 T _stext
ffff800080200000 t nova_a
ffff800080200040 t nova_b
ffff800080200080 T shared_name
ffff800080300000 T shared_name
ffff80008025831c T __memcpy
ffff80008025831c W memcpy
ffff800080258340 t __pi_memset_generic
ffff800081000000 B _end
";

    fn section(name: &str, size: u64, symbols: &[(u64, &str)]) -> Section {
        Section {
            name: name.into(),
            size,
            symbols: symbols.iter().map(|(o, n)| (*o, n.to_string())).collect(),
        }
    }

    #[test]
    fn system_map_entries_are_address_type_and_name() {
        let map = system_map("ffff800080000000 T _text\nnot a line\n");
        assert_eq!(
            map,
            [MapEntry {
                addr: 0xffff_8000_8000_0000,
                kind: 'T',
                name: "_text".into()
            }]
        );
    }

    #[test]
    fn text_sections_hold_their_function_symbols() {
        let headers = "\
Sections:
Idx Name            Size     VMA              Type
  0                 00000000 0000000000000000 
  2 .text           00007af4 0000000000000000 TEXT
  5 .rodata         00000db8 0000000000000000 DATA
";
        let symbols = "\
SYMBOL TABLE:
0000000000000000 l    d  .text\t0000000000000000 .text
0000000000000000 l       .text\t0000000000000000 $x
0000000000001264 l     F .text\t0000000000000084 nova_a
0000000000000010 g     F .text\t0000000000000020 nova_b
0000000000000000 l     O .rodata\t0000000000000010 table
";
        assert_eq!(
            text_sections(headers, symbols),
            [section(
                ".text",
                0x7af4,
                &[(0x1264, "nova_a"), (0x10, "nova_b")]
            )]
        );
    }

    #[test]
    fn a_section_is_placed_by_its_symbols_system_map_holds_once() {
        let map = system_map(MAP);
        let s = section(
            ".text",
            0x100,
            &[(0, "nova_a"), (0x40, "nova_b"), (0x80, "shared_name")],
        );
        assert_eq!(
            place("nova_core.o", &[s], &map),
            Ok((
                vec![Span {
                    start: 0xffff_8000_8020_0000,
                    end: 0xffff_8000_8020_0100
                }],
                Vec::new()
            ))
        );
    }

    #[test]
    fn symbols_that_disagree_on_the_start_are_an_error() {
        let map = system_map(MAP);
        let s = section(".text", 0x100, &[(0, "nova_a"), (0x10, "nova_b")]);
        let e = place("nova_core.o", &[s], &map).unwrap_err();
        assert!(e.contains("not the one linked"), "{e}");
    }

    #[test]
    fn a_section_with_no_known_symbol_is_an_error() {
        let map = system_map(MAP);
        let s = section(".text", 0x100, &[(0, "elsewhere")]);
        let e = place("nova_core.o", &[s], &map).unwrap_err();
        assert!(e.contains("no function of its .text"), "{e}");
    }

    #[test]
    fn a_cold_section_with_no_known_symbol_is_left_out_with_a_note() {
        let map = system_map(MAP);
        let text = section(".text", 0x100, &[(0, "nova_a")]);
        let cold = section(".text.unlikely.", 0x10, &[(0, "elsewhere")]);
        let (spans, notes) = place("nova_core.o", &[text, cold], &map).unwrap();
        assert_eq!(spans.len(), 1);
        assert!(
            notes[0].contains(".text.unlikely. (16 bytes) is not traced"),
            "{notes:?}"
        );
    }

    #[test]
    fn a_string_function_spans_to_the_next_symbol() {
        let map = system_map(MAP);
        assert_eq!(
            function_spans(&map, &["memcpy", "__memcpy"]),
            [Span {
                start: 0xffff_8000_8025_831c,
                end: 0xffff_8000_8025_8340
            }]
        );
    }

    #[test]
    fn the_map_file_names_each_span_by_its_kind() {
        let nova = [Span {
            start: 0x10,
            end: 0x20,
        }];
        let follow = [Span {
            start: 0x30,
            end: 0x40,
        }];
        let image = image_span(&system_map(MAP));
        let text = map_file(&nova, &follow, image);
        let lines: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(
            lines,
            [
                "nova 0x10 0x20",
                "follow 0x30 0x40",
                "image 0xffff800080000000 0xffff800081000000"
            ]
        );
    }

    #[test]
    fn the_queues_address_comes_from_the_fmc_line() {
        let t = "gh100: fsp: COT accepted\n\
                 gh100: fmc: boot parameters at 0x4a000000: libos regions LOGINIT, LOGINTR; RMARGS at 0x4a100000; queues at 0x4b200000\n";
        assert_eq!(queues_address(t), Ok(0x4b20_0000));
    }

    #[test]
    fn a_transcript_without_the_queues_is_an_error() {
        let e = queues_address("gh100: fmc: refused: bad (at 0x0)\n").unwrap_err();
        assert!(e.contains("names no queues"), "{e}");
    }

    #[test]
    fn two_queue_addresses_are_an_error() {
        let t = "gh100: fmc: boot parameters at 0x1: x; queues at 0x2000\n\
                 gh100: fmc: boot parameters at 0x1: x; queues at 0x3000\n";
        let e = queues_address(t).unwrap_err();
        assert!(e.contains("0x2000, 0x3000"), "{e}");
    }

    fn plugin_summary(entries: u64, mops: u64) -> String {
        format!(
            "# vgsp-ktrace summary\nnova_entries {entries}\nrecords 10\noverlaps 0\nmops {mops}\nzva 0\nzva_recorded 0\nlost 0\ninterrupted 0\nrestored 0\nunresumable 0\ncalls_out 0\nodd_discon 0\n"
        )
    }

    #[test]
    fn a_summary_is_parsed_by_its_keys() {
        let s = summary(&plugin_summary(3, 0)).unwrap();
        assert_eq!((s.entries, s.records, s.mops), (3, 10, 0));
    }

    #[test]
    fn a_summary_missing_a_key_is_an_error() {
        let e = summary("nova_entries 1\n").unwrap_err();
        assert!(e.contains("no records"), "{e}");
    }

    #[test]
    fn a_trace_in_which_nova_never_ran_is_refused() {
        let s = summary(&plugin_summary(0, 0)).unwrap();
        let e = vet(
            &s,
            &[Span {
                start: 0x10,
                end: 0x20,
            }],
        )
        .unwrap_err();
        assert!(
            e.contains("refusing to decide code the trace never saw"),
            "{e}"
        );
        assert!(e.contains("0x10..0x20"), "{e}");
    }

    #[test]
    fn memcpy_as_mops_instructions_is_refused() {
        let s = summary(&plugin_summary(5, 2)).unwrap();
        let e = vet(&s, &[]).unwrap_err();
        assert!(e.contains("arm64.nomops"), "{e}");
    }

    #[test]
    fn the_figures_are_the_checker_s_first_two() {
        assert_eq!(
            figures("ordering: 4 defects (contract), 3 defects (arm64), 10 events of nova-core on 2 vCPUs"),
            Ok("ordering (arm64 kernel): 4 defects (contract), 3 defects (arm64)".into())
        );
        assert!(figures("vgsp-ordering: oops").is_err());
    }
}
