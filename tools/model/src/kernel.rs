// SPDX-License-Identifier: GPL-2.0

//! The driver's trace from the system-mode plugin: nova-core built into an arm64 kernel
//! and booted under QEMU (`cargo xtask upstream boot --arch arm64 --ordering`).
//!
//! `tools/trace/plugin/vgsp-ktrace.c` records what the vCPUs did while they ran nova-core
//! (its text, and the code that works on its behalf: the `kernel` crate, the C helpers,
//! `memcpy` and its kin), in the format of [`Record`], with three differences from the
//! user-mode plugin's:
//!
//! - `tid` is the vCPU's index. The driver is one task at a time (its probe, then its
//!   unbind), which the scheduler may move from one vCPU to the other: every record is
//!   the driver's, one agent, in the order of the file (see [`driver_trace`]).
//! - Every load and store is recorded (but those relative to the stack pointer and those
//!   of MMIO), with its *physical* address and the value it loaded or stored: where the
//!   shared memory is, the plugin cannot know while the kernel boots. `info` holds the
//!   instruction's ordering bits ([`ACQUIRE`], [`RELEASE`], [`READS`], [`WRITES`]).
//! - There are no marks: the region of the shared memory comes from the emulated
//!   device, which reads its bus address from the driver's boot arguments, and the
//!   pointer values from the loads themselves.
//!
//! [`driver_trace`] turns those records into the trace [`check_driver`] decides: the
//! region first, the accesses of the shared memory with a [`Kind::Value`] after each
//! pointer load, the acquire and release accesses elsewhere as [`Kind::OrderedOther`],
//! the barriers and the branches; every other access is left out.
//!
//! [`check_driver`]: crate::compiled::check_driver

use std::{
    collections::BTreeSet,
    string::String,
    vec::Vec, //
};

use nova_core::gsp::fw::GspMem;

use crate::compiled::{
    Class,
    Kind,
    Record,
    ACQUIRE,
    READS,
    RELEASE,
    WRITES, //
};

/// The thread id the driver's records get in [`DriverTrace::records`].
pub const DRIVER: u32 = 1;

/// The driver's trace, ready for [`crate::compiled::check_driver`], and what it was made
/// of.
#[derive(Debug, Default)]
pub struct DriverTrace {
    /// The records to decide.
    pub records: Vec<Record>,
    /// The plugin's records it was made from.
    pub recorded: usize,
    /// Of those, the accesses of the shared memory.
    pub shared: usize,
    /// The vCPUs the driver ran on.
    pub vcpus: usize,
    /// How many times the next record came from another vCPU than the one before: the
    /// driver's task moved (or the boot ran another of its tasks there).
    pub vcpu_changes: usize,
}

/// Returns the bytes of `GspMem`, the shared memory's size.
fn shared_size() -> u64 {
    // CAST: a structure's size fits in `u64`.
    core::mem::size_of::<GspMem>() as u64
}

/// Makes the driver's trace from the system-mode plugin's records `raw`, the shared
/// memory being at physical address `base` (see the module documentation and
/// [`DriverTraceBuilder`]).
///
/// # Errors
///
/// As [`DriverTraceBuilder::push`] and [`DriverTraceBuilder::finish`].
pub fn driver_trace(raw: &[Record], base: u64) -> Result<DriverTrace, String> {
    let mut builder = DriverTraceBuilder::new(base);
    for r in raw {
        builder.push(r)?;
    }
    builder.finish()
}

/// Makes the driver's trace one record at a time, so that a long trace need not be held
/// whole: only what the checker needs is kept.
///
/// The records of every vCPU are one agent, in the file's order: the plugin appends
/// them under one lock as the callbacks run, and a task that moves from one vCPU to
/// another stops on the first (its last callback returned) before the scheduler starts
/// it on the second, so the file's order is its program order. Two tasks of the driver
/// running at once would interleave: the plugin counts that (its summary's `overlaps`),
/// and the caller refuses such a trace.
#[derive(Debug)]
pub struct DriverTraceBuilder {
    base: u64,
    end: u64,
    out: DriverTrace,
    vcpus: BTreeSet<u32>,
    last_vcpu: Option<u32>,
}

impl DriverTraceBuilder {
    /// Starts the trace of the shared memory at physical address `base`: its region
    /// record first.
    pub fn new(base: u64) -> Self {
        let size = shared_size();
        let mut out = DriverTrace::default();
        out.records.push(Record {
            tid: DRIVER,
            kind: Kind::Region,
            size: 0,
            info: 0,
            pc: 0,
            addr: base,
            value: size,
        });
        Self {
            base,
            end: base.saturating_add(size),
            out,
            vcpus: BTreeSet::new(),
            last_vcpu: None,
        }
    }

    /// Takes the plugin's next record.
    ///
    /// # Errors
    ///
    /// - A record of a kind the system-mode plugin does not write.
    /// - A load that reads only part of a ring pointer (its value is not whole).
    pub fn push(&mut self, r: &Record) -> Result<(), String> {
        let out = &mut self.out;
        let i = out.recorded;
        out.recorded += 1;
        if self.last_vcpu.is_some_and(|v| v != r.tid) {
            out.vcpu_changes += 1;
        }
        self.last_vcpu = Some(r.tid);
        self.vcpus.insert(r.tid);
        let mine = Record { tid: DRIVER, ..*r };
        match r.kind {
            Kind::Load | Kind::Store if (self.base..self.end).contains(&r.addr) => {
                out.shared += 1;
                out.records.push(mine);
                if r.kind == Kind::Load {
                    let offset = r.addr - self.base;
                    if let Some(value) = pointer_loaded(offset, r.size, r.value, r.pc)? {
                        out.records.push(Record {
                            kind: Kind::Value,
                            size: 0,
                            info: 0,
                            value,
                            ..mine
                        });
                    }
                }
            }
            Kind::Load | Kind::Store if r.info & (ACQUIRE | RELEASE) != 0 => {
                let info = r.info
                    | match r.kind {
                        Kind::Load => READS,
                        _ => WRITES,
                    };
                // One record per spin on a lock word, as the user-mode plugin keeps it.
                let repeated = out
                    .records
                    .last()
                    .is_some_and(|l| l.kind == Kind::OrderedOther && l.info == info);
                if !repeated {
                    out.records.push(Record {
                        kind: Kind::OrderedOther,
                        info,
                        ..mine
                    });
                }
            }
            Kind::Load | Kind::Store => {}
            Kind::Barrier => out.records.push(mine),
            Kind::Branch => {
                // A branch before a left-out access and one after it are one branch.
                if out.records.last().is_none_or(|l| l.kind != Kind::Branch) {
                    out.records.push(mine);
                }
            }
            other => {
                return Err(format!(
                    "record {i} is a {other:?} record, which the system-mode plugin does not write: is this a trace of vgsp-ktrace?"
                ))
            }
        }
        Ok(())
    }

    /// Ends the trace.
    ///
    /// # Errors
    ///
    /// - No record at all: nothing of the driver ran while the plugin watched.
    /// - No access of the shared memory: the trace is not of the queues at `base`.
    pub fn finish(self) -> Result<DriverTrace, String> {
        let Self {
            base,
            end,
            mut out,
            vcpus,
            ..
        } = self;
        if out.recorded == 0 {
            return Err(
                "the trace holds no record of nova-core's execution: the driver never ran while the plugin watched (is nova-core built in, and its text where System.map says?)"
                    .into(),
            );
        }
        if out.shared == 0 {
            return Err(format!(
                "nova-core ran ({} records) but never accessed the shared memory at {base:#x}..{end:#x}: the trace holds none of the queues' accesses (is that the address of the driver's GspMem?)",
                out.recorded
            ));
        }
        out.vcpus = vcpus.len();
        Ok(out)
    }
}

/// The ring pointer a load of `size` bytes at `offset` into the shared memory returned,
/// if it loads one.
///
/// # Errors
///
/// The load covers only part of the pointer's word.
fn pointer_loaded(offset: u64, size: u8, value: u64, pc: u64) -> Result<Option<u64>, String> {
    let class = Class::of(offset, size);
    if !matches!(class, Class::WritePtr(_) | Class::ReadPtr(_)) {
        return Ok(None);
    }
    class.stored(offset, size, value).map(Some).ok_or_else(|| {
        format!(
            "the load at pc {pc:#x} ({size} bytes at offset {offset:#x}) reads only part of the ring pointer {class:?}: its value is not known"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use nova_core::gsp::fw::{
        slot_offset,
        CPUQ_OFFSET,
        GSPQ_OFFSET,
        MSGQ_WRITE_PTR_OFFSET, //
    };

    const BASE: u64 = 0x4800_0000;

    fn record(tid: u32, kind: Kind, size: u8, info: u16, addr: u64, value: u64) -> Record {
        Record {
            tid,
            kind,
            size,
            info,
            pc: 0xffff_8000_8010_0000,
            addr,
            value,
        }
    }

    fn gspq_wptr() -> u64 {
        BASE + (GSPQ_OFFSET + MSGQ_WRITE_PTR_OFFSET) as u64
    }

    #[test]
    fn the_region_comes_first_with_gsp_mem_s_size() {
        let raw = [record(0, Kind::Store, 4, 0, BASE + 8, 1)];
        let t = driver_trace(&raw, BASE).unwrap();
        assert_eq!(
            (t.records[0].kind, t.records[0].addr, t.records[0].value),
            (Kind::Region, BASE, shared_size())
        );
    }

    #[test]
    fn a_pointer_load_is_followed_by_the_value_it_loaded() {
        let raw = [record(0, Kind::Load, 4, 0, gspq_wptr(), 7)];
        let t = driver_trace(&raw, BASE).unwrap();
        let value = &t.records[2];
        assert_eq!(
            (value.kind, value.addr, value.value),
            (Kind::Value, gspq_wptr(), 7)
        );
    }

    #[test]
    fn a_wide_load_s_pointer_value_is_taken_from_its_bytes() {
        // 8 bytes from 4 below the write pointer: the pointer is the upper half.
        let raw = [record(
            0,
            Kind::Load,
            8,
            0,
            gspq_wptr() - 4,
            9 << 32 | 0x1234,
        )];
        let t = driver_trace(&raw, BASE).unwrap();
        assert_eq!(t.records[2].value, 9);
    }

    #[test]
    fn a_load_of_part_of_a_pointer_is_an_error() {
        // 4 bytes from 2 below the write pointer: its lower half only.
        let raw = [record(0, Kind::Load, 4, 0, gspq_wptr() - 2, 0)];
        let e = driver_trace(&raw, BASE).unwrap_err();
        assert!(e.contains("only part of the ring pointer"), "{e}");
    }

    #[test]
    fn a_slot_load_gets_no_value() {
        let slot = BASE + (CPUQ_OFFSET + slot_offset(0)) as u64;
        let raw = [record(0, Kind::Load, 8, 0, slot, 5)];
        let t = driver_trace(&raw, BASE).unwrap();
        assert_eq!(t.records.len(), 2);
    }

    #[test]
    fn plain_accesses_elsewhere_are_left_out() {
        let raw = [
            record(0, Kind::Load, 8, 0, 0x1000, 5),
            record(0, Kind::Store, 4, 0, BASE + 8, 1),
        ];
        let t = driver_trace(&raw, BASE).unwrap();
        let kinds: Vec<Kind> = t.records.iter().map(|r| r.kind).collect();
        assert_eq!(kinds, [Kind::Region, Kind::Store]);
    }

    #[test]
    fn an_acquire_elsewhere_is_one_ordered_record_per_spin() {
        let raw = [
            record(0, Kind::Load, 4, ACQUIRE, 0x1000, 0),
            record(0, Kind::Load, 4, ACQUIRE, 0x1000, 0),
            record(0, Kind::Store, 4, 0, BASE + 8, 1),
        ];
        let t = driver_trace(&raw, BASE).unwrap();
        let ordered: Vec<u16> = t
            .records
            .iter()
            .filter(|r| r.kind == Kind::OrderedOther)
            .map(|r| r.info)
            .collect();
        assert_eq!(ordered, [ACQUIRE | READS]);
    }

    #[test]
    fn branches_around_left_out_accesses_are_one() {
        let raw = [
            record(0, Kind::Branch, 0, 0, 0, 0),
            record(0, Kind::Load, 8, 0, 0x1000, 5),
            record(0, Kind::Branch, 0, 0, 0, 0),
            record(0, Kind::Store, 4, 0, BASE + 8, 1),
        ];
        let t = driver_trace(&raw, BASE).unwrap();
        let kinds: Vec<Kind> = t.records.iter().map(|r| r.kind).collect();
        assert_eq!(kinds, [Kind::Region, Kind::Branch, Kind::Store]);
    }

    #[test]
    fn every_vcpu_s_records_are_the_driver_s_in_file_order() {
        let raw = [
            record(0, Kind::Store, 4, 0, BASE + 8, 1),
            record(1, Kind::Store, 4, 0, BASE + 16, 2),
            record(0, Kind::Store, 4, 0, BASE + 24, 3),
        ];
        let t = driver_trace(&raw, BASE).unwrap();
        let values: Vec<(u32, u64)> = t.records[1..].iter().map(|r| (r.tid, r.value)).collect();
        assert_eq!(values, [(DRIVER, 1), (DRIVER, 2), (DRIVER, 3)]);
        assert_eq!((t.vcpus, t.vcpu_changes), (2, 2));
    }

    #[test]
    fn a_trace_without_the_shared_memory_s_accesses_says_so() {
        let raw = [record(0, Kind::Load, 8, 0, 0x1000, 5)];
        let e = driver_trace(&raw, BASE).unwrap_err();
        assert!(e.contains("never accessed the shared memory"), "{e}");
    }

    #[test]
    fn an_empty_trace_refuses_to_be_decided() {
        let e = driver_trace(&[], BASE).unwrap_err();
        assert!(e.contains("no record of nova-core's execution"), "{e}");
    }

    #[test]
    fn a_mark_record_is_not_the_system_mode_plugin_s() {
        let raw = [record(0, Kind::Image, 0, 0, 0, 0)];
        let e = driver_trace(&raw, BASE).unwrap_err();
        assert!(e.contains("does not write"), "{e}");
    }
}
