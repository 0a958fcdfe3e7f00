// SPDX-License-Identifier: GPL-2.0

//! `vgsp-tool replay-gspq`: the driver's receive path over recorded `gspq` regions made
//! by the virtual GSP, good and damaged.

mod common;

use kernel::prelude::*;
use nova_core::gsp::fw::{
    MsgFunction,
    GSPQ_OFFSET,
    MSGQ_WRITE_PTR_OFFSET, //
};
use nova_testbench::{
    rpc::Echo,
    ReceiveAny, //
};
use vgsp_kunit::{
    cmdq_split::{
        r570_message,
        R570_CHUNK, //
    },
    fixture::{
        Pair,
        LONG, //
    },
};

const GSPQ_BYTES: usize = 0x40000;

/// A `gspq` holding two log lines, the 100 KiB echo reply (a head and continuation
/// records) and a third log line, none consumed.
fn recorded() -> Vec<u8> {
    let mut pair = Pair::new().unwrap();
    pair.gsp.log(b"first").unwrap();
    pair.gsp.log(b"second").unwrap();
    let payload = Pair::pattern(100 << 10, 9).unwrap();
    pair.cmdq.post(pair.bar.bar(), &Echo(&payload)).unwrap();
    pair.gsp_run().unwrap();
    pair.gsp.log(b"third").unwrap();
    pair.gsp_run().unwrap();
    let mut region = vec![0u8; GSPQ_BYTES];
    pair.view().read_bytes(GSPQ_OFFSET, &mut region).unwrap();
    region
}

fn replay(region: &[u8], extra: &[&str]) -> (Option<i32>, String, String) {
    let dir = std::env::temp_dir().join(format!("vgsp-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let file = dir.join(format!("gspq-{n}.bin"));
    std::fs::write(&file, region).unwrap();
    let out = common::binary(env!("CARGO_BIN_EXE_vgsp-tool"))
        .arg("replay-gspq")
        .arg(&file)
        .args(extra)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&file);
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn replays_every_message_including_a_continuation_pair() {
    let (code, out, _) = replay(&recorded(), &[]);
    assert_eq!(code, Some(0));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 5, "{out}");
    assert_eq!(lines[0], "ok seq=0 function=4108 len=5 elems=1");
    assert_eq!(lines[1], "ok seq=1 function=4108 len=6 elems=1");
    assert!(
        lines[2].starts_with("ok seq=2 function=3842 len=102400 elems="),
        "{}",
        lines[2]
    );
    assert!(lines[3].starts_with("ok seq=") && lines[3].ends_with("function=4108 len=5 elems=1"));
    let total: u32 = 3 + lines[2].rsplit('=').next().unwrap().parse::<u32>().unwrap();
    assert_eq!(lines[4], format!("end rptr={total}"));
}

/// Replays `payload` posted as r570 splits a message of `function` and RPC sequence
/// `sequence`; returns the replay's exit code and output.
fn replay_r570(function: u32, sequence: u32, payload: &[u8]) -> (Option<i32>, String) {
    let mut pair = Pair::new().unwrap();
    for (el, slots) in r570_message(0, function, sequence, payload).unwrap().iter() {
        pair.gsp.post_raw(el, *slots).unwrap();
    }
    let mut region = vec![0u8; GSPQ_BYTES];
    pair.view().read_bytes(GSPQ_OFFSET, &mut region).unwrap();
    let (code, out, _) = replay(&region, &[]);
    (code, out)
}

/// The witness's split message (written byte by byte from r570's rule, not by the
/// virtual GSP) replays as one message with its whole length.
#[test]
fn replays_an_r570_split_message_as_one() {
    let payload = Pair::pattern(2 * R570_CHUNK + 1000, 7).unwrap();
    let function = u32::from(MsgFunction::NOP);
    let (code, out) = replay_r570(function, 12, &payload);
    assert_eq!(code, Some(0));
    assert_eq!(
        out,
        format!(
            "ok seq=0 function={function} len={} elems=33\nend rptr=33\n",
            payload.len()
        )
    );
}

/// A message of one element exactly full with nothing published after it is whole: the
/// replay's receives have a zero timeout, and the grace after a full element ends it.
#[test]
fn replays_one_full_element_as_a_whole_message() {
    let payload = Pair::pattern(R570_CHUNK, 5).unwrap();
    let function = u32::from(MsgFunction::NOP);
    let (code, out) = replay_r570(function, 3, &payload);
    assert_eq!(code, Some(0));
    assert_eq!(
        out,
        format!("ok seq=0 function={function} len=65456 elems=16\nend rptr=16\n")
    );
}

#[test]
fn damaged_element_is_reported_and_the_next_one_still_arrives() {
    let mut region = recorded();
    // A payload byte of the second line, in slot 1.
    region[0x1000 + 0x1000 + 80] ^= 0x20;
    let (code, out, _) = replay(&region, &[]);
    assert_eq!(code, Some(0));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "ok seq=0 function=4108 len=5 elems=1");
    assert_eq!(lines[1], "err EIO bad checksum");
    assert!(
        lines[2].starts_with("ok seq=2 function=3842 len=102400"),
        "{out}"
    );
}

#[test]
fn starts_at_the_given_read_pointer() {
    let (code, out, _) = replay(&recorded(), &["--rptr", "1"]);
    assert_eq!(code, Some(0));
    assert_eq!(
        out.lines().next(),
        Some("ok seq=1 function=4108 len=6 elems=1")
    );
}

#[test]
fn write_pointer_outside_the_ring_stops_without_progress() {
    let mut region = recorded();
    region[MSGQ_WRITE_PTR_OFFSET..MSGQ_WRITE_PTR_OFFSET + 4].copy_from_slice(&70u32.to_le_bytes());
    let (code, out, _) = replay(&region, &[]);
    assert_eq!(code, Some(0));
    assert_eq!(out, "err EIO write pointer outside the ring\nend rptr=0\n");
}

#[test]
fn wrong_size_or_bad_argument_fails_with_a_message() {
    let (code, _, err) = replay(&[0u8; 4096], &[]);
    assert_eq!(code, Some(2));
    assert!(err.contains("exactly 262144"), "{err}");
    let (code, _, err) = replay(&recorded(), &["--rptr", "63"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("--rptr"), "{err}");
}

/// The tool and the queue agree on what a region of the real driver holds.
#[test]
fn the_driver_reads_the_same_region() -> Result {
    let mut pair = Pair::new()?;
    pair.gsp.log(b"x")?;
    pair.gsp_run()?;
    let msg = pair.cmdq.receive_any(LONG)?;
    assert_eq!(msg.payload[..], *b"x");
    Ok(())
}

/// Writes the committed seed corpus of the fuzz targets from real traffic:
/// `cargo test -p vgsp-host --test replay -- --ignored write_fuzz_seeds`.
#[test]
#[ignore = "regenerates tests/fuzz/corpus"]
fn write_fuzz_seeds() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
    let region = recorded();
    let wptr = &region[MSGQ_WRITE_PTR_OFFSET..MSGQ_WRITE_PTR_OFFSET + 4];
    // gspq_receive: read pointer, write pointer, ring bytes.
    let dir = root.join("gspq_receive");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, slots) in [("three-lines", 2), ("continuation", 20)] {
        let mut seed = vec![0u8];
        seed.extend_from_slice(wptr);
        seed.extend_from_slice(&region[0x1000..0x1000 + slots * 0x1000]);
        std::fs::write(dir.join(name), seed).unwrap();
    }
    // cpuq_parse: write pointer, then the cpuq ring of a driver that sent an echo and
    // the bring-up commands.
    let dir = root.join("cpuq_parse");
    std::fs::create_dir_all(&dir).unwrap();
    let pair = Pair::new().unwrap();
    pair.cmdq.post(pair.bar.bar(), &Echo(b"fuzz me")).unwrap();
    let info = nova_core::gsp::commands::GspSetSystemInfo::new(&vgsp::PCI_FUNCTION);
    pair.cmdq.post(pair.bar.bar(), &info).unwrap();
    let mut cpuq = vec![0u8; 3 * 0x1000];
    pair.view()
        .read_bytes(nova_core::gsp::fw::CPUQ_OFFSET + 0x1000, &mut cpuq)
        .unwrap();
    let mut seed = vec![2u8];
    seed.extend_from_slice(&cpuq);
    std::fs::write(dir.join("echo-and-sysinfo"), seed).unwrap();
    // gspq_scribble: log lines, then a few edits of the first slot and the pointers.
    let dir = root.join("gspq_scribble");
    std::fs::create_dir_all(&dir).unwrap();
    let mut seed = vec![5u8];
    for (off, byte) in [
        (0x1000u16 + 80, 0x55u8),
        (0x10, 3),
        (0x1000 + 12, 0xff),
        (0x2000, 0),
    ] {
        seed.extend_from_slice(&off.to_le_bytes());
        seed.push(byte);
    }
    std::fs::write(dir.join("lines-and-edits"), seed).unwrap();
}

/// `record-gspq` writes the image `replay-gspq` (and `cargo xtask upstream replay`) read:
/// the four messages of `recorded()`, the echo reply reassembled.
#[test]
fn a_recorded_image_replays_message_by_message() {
    let dir = std::env::temp_dir().join(format!("vgsp-record-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("recorded.gspq");
    let status = common::binary(env!("CARGO_BIN_EXE_vgsp-tool"))
        .arg("record-gspq")
        .arg(&file)
        .status()
        .unwrap();
    assert!(status.success());
    let region = std::fs::read(&file).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(region, recorded());
    let (code, out, _) = replay(&region, &[]);
    assert_eq!(code, Some(0));
    assert_eq!(out.lines().count(), 5, "{out}");
}
