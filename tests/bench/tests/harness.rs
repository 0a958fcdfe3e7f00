// SPDX-License-Identifier: GPL-2.0

//! The harness in its quickest mode (`--smoke`), so that it cannot rot unnoticed: every
//! figure and every ratio is in the JSON file, positive and finite. Nothing is timed:
//! the figures of a smoke run mean nothing, and speed goals are printed, never asserted.

use std::{
    process::Command,
    sync::OnceLock, //
};

use serde_json::Value;
use vgsp_bench::{
    Config,
    Mode,
    FIGURES,
    PENDING,
    RATIOS, //
};

/// Returns the JSON report of one smoke run, shared by the tests.
fn smoke_json() -> &'static Value {
    static JSON: OnceLock<Value> = OnceLock::new();
    JSON.get_or_init(|| {
        let report = vgsp_bench::run(Config::new(Mode::Smoke), &mut |_| {}).expect("smoke run");
        serde_json::from_str(&report.json()).expect("the report is valid JSON")
    })
}

/// Asserts that `v` is a positive, finite number; `what` names it.
fn assert_positive(v: &Value, what: &str) {
    let x = v
        .as_f64()
        .unwrap_or_else(|| panic!("{what}: not a number: {v}"));
    assert!(x.is_finite() && x > 0.0, "{what}: {x}");
}

/// Returns a command that runs the binary at `path`: through `VGSP_TEST_RUNNER` when it
/// is set (a cross build's binaries run under `qemu-aarch64`), else directly.
fn binary(path: &str) -> Command {
    match std::env::var("VGSP_TEST_RUNNER") {
        Ok(runner) if !runner.trim().is_empty() => {
            let mut words = runner.split_whitespace();
            // PANIC: not empty, checked above.
            let mut cmd = Command::new(words.next().unwrap());
            cmd.args(words).arg(path);
            cmd
        }
        _ => Command::new(path),
    }
}

#[test]
fn smoke_run_reports_every_figure_positive_and_finite() {
    let json = smoke_json();
    let reps = json["config"]["repetitions"].as_u64().expect("repetitions");
    for spec in FIGURES {
        let f = &json["figures"][spec.key];
        assert_positive(&f["median"], spec.key);
        let samples = f["samples"].as_array().expect("samples");
        assert_eq!(samples.len() as u64, reps, "{}", spec.key);
        for s in samples {
            assert_positive(s, spec.key);
        }
        if spec.has_p99() {
            assert_positive(&f["p99"], spec.key);
        }
        if spec.msg_bytes().is_some() {
            assert_positive(&f["msgs_per_s"], spec.key);
        }
    }
}

#[test]
fn smoke_run_reports_every_ratio_positive_and_finite() {
    let json = smoke_json();
    for spec in RATIOS {
        let r = &json["ratios"][spec.key];
        assert_positive(&r["value"], spec.key);
        assert_positive(&r["of_medians"], spec.key);
        assert_eq!(r["met"].is_boolean(), spec.goal.is_some(), "{}", spec.key);
    }
    for (key, ..) in PENDING {
        assert!(json["pending"][key]["why"].is_string(), "{key}");
    }
}

#[test]
fn smoke_run_names_the_machine_and_the_variant() {
    let json = smoke_json();
    assert!(json["machine"]["nproc"].as_u64().is_some_and(|n| n > 0));
    assert!(json["machine"]["cpu_model"].is_string());
    assert!(json["date"].as_str().is_some_and(|d| d.ends_with('Z')));
    assert_eq!(
        json["figures"]["cmd_4k_mbps"]["variant"],
        vgsp_bench::VARIANT
    );
}

#[test]
fn cli_writes_the_json_file_where_told() {
    let path = std::env::temp_dir().join(format!("vgsp-bench-{}.json", std::process::id()));
    let out = binary(env!("CARGO_BIN_EXE_vgsp-bench"))
        .args([
            "--smoke",
            "--only",
            "pingpong_rt_ns,echo8_rt_busy_ns",
            "--json",
        ])
        .arg(&path)
        .output()
        .expect("run vgsp-bench");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&path).expect("the JSON file");
    let _ = std::fs::remove_file(&path);
    let json: Value = serde_json::from_str(&text).expect("valid JSON");
    assert_positive(
        &json["ratios"]["rt_busy_over_pingpong"]["value"],
        "rt_busy_over_pingpong",
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("echo round trip (GSP busy) / ping-pong"),
        "{table}"
    );
}

#[test]
fn cli_rejects_an_unknown_figure() {
    let out = binary(env!("CARGO_BIN_EXE_vgsp-bench"))
        .args(["--only", "warp_speed"])
        .output()
        .expect("run vgsp-bench");
    assert_eq!(out.status.code(), Some(2));
}
