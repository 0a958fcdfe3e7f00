// SPDX-License-Identifier: GPL-2.0

//! The `mbarrier-trace` runner: exact output for the committed traces, and the exit
//! status for a line it cannot parse and a file it cannot read.

mod common;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mbarrier");

fn run(trace: &str) -> std::process::Output {
    common::binary(env!("CARGO_BIN_EXE_mbarrier-trace"))
        .arg(format!("{DIR}/{trace}"))
        .output()
        .expect("mbarrier-trace runs")
}

#[test]
fn traces_give_the_expected_lines() {
    for name in ["issue-example", "phases"] {
        let out = run(&format!("{name}.trace"));
        assert!(out.status.success(), "{name}: {:?}", out.status);
        let want = std::fs::read_to_string(format!("{DIR}/{name}.out")).unwrap();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), want, "{name}");
    }
}

#[test]
fn a_phase_at_the_top_of_u64_is_out_of_range() {
    let out = run("huge-phase.trace");
    assert!(out.status.success(), "{:?}", out.status);
    let want = std::fs::read_to_string(format!("{DIR}/huge-phase.out")).unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), want);
}

#[test]
fn unparsable_line_fails_naming_it_after_the_lines_before() {
    let out = run("unparsable.trace");
    assert_eq!(out.status.code(), Some(2));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 2);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("unparsable.trace:3: unknown operation 'fly'"),
        "{stderr}"
    );
}

#[test]
fn unreadable_file_fails() {
    let out = run("no-such.trace");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("cannot read"));
}
