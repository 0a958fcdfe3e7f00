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
    figure,
    instructions,
    machine::Machine,
    variants,
    Config,
    Mode,
    Report,
    Sample,
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

#[test]
fn cli_measures_one_figure_for_the_variants() {
    let out = binary(env!("CARGO_BIN_EXE_vgsp-bench"))
        .args(["--smoke", "--measure-one", "echo8_rt_busy_ns"])
        .output()
        .expect("run vgsp-bench");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let spec = figure("echo8_rt_busy_ns").unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let (variant, sample) = stdout
        .lines()
        .find_map(|l| variants::parse_sample(l, spec))
        .unwrap_or_else(|| panic!("no sample line: {stdout}"));
    assert_eq!(variant, vgsp_bench::VARIANT);
    assert!(sample.value > 0.0 && sample.p99.is_some_and(|p| p > 0.0));
}

/// A report of two queue figures, this build's and an all-Full build's, both made up.
fn report_with_all_full() -> Report {
    let (rt, cmd) = (
        figure("echo8_rt_busy_ns").unwrap(),
        figure("cmd_4k_mbps").unwrap(),
    );
    let ns = |v: f64| Sample {
        value: v,
        p99: Some(2.0 * v),
    };
    let ours = vec![
        (rt, vec![ns(100.0), ns(300.0)]),
        (cmd, vec![Sample::rate(900.0), Sample::rate(1000.0)]),
    ];
    let theirs = vec![
        (rt, vec![ns(200.0), ns(400.0)]),
        (cmd, vec![Sample::rate(1000.0), Sample::rate(800.0)]),
    ];
    Report::new(Machine::probe(), Config::new(Mode::Smoke), ours)
        .with_variants(vec![("all-full", theirs)])
}

#[test]
fn variant_ratios_are_this_build_over_the_variant_per_repetition() {
    let json: Value = serde_json::from_str(&report_with_all_full().json()).unwrap();
    let ratios = &json["variant_ratios"]["acq_rel_over_all_full"];
    // Round trip: median of 100/200 and 300/400; lower is better.
    assert_eq!(ratios["echo8_rt_busy_ns"]["value"], 0.625);
    assert_eq!(ratios["echo8_rt_busy_ns"]["goal"], "<= 1");
    assert_eq!(ratios["echo8_rt_busy_ns"]["met"], true);
    // Throughput: median of 900/1000 and 1000/800; higher is better.
    assert_eq!(ratios["cmd_4k_mbps"]["value"], 1.075);
    assert_eq!(ratios["cmd_4k_mbps"]["goal"], ">= 1");
    assert_eq!(
        json["variants"]["all-full"]["figures"]["cmd_4k_mbps"]["median"],
        900.0
    );
}

#[test]
fn a_run_with_the_all_full_variant_has_nothing_pending() {
    let report = report_with_all_full();
    assert!(report.pending().is_empty());
    let json: Value = serde_json::from_str(&report.json()).unwrap();
    assert_eq!(json["pending"], serde_json::json!({}));
    assert!(report.table().contains("acq-rel/all-full"));
}

/// A report of the round trip and the ping-pong whose one repetition makes the ratio
/// `rt_busy_over_pingpong` equal `ratio`.
fn report_with_round_trip_ratio(ratio: f64) -> Report {
    let (rt, ping) = (
        figure("echo8_rt_busy_ns").unwrap(),
        figure("pingpong_rt_ns").unwrap(),
    );
    let ns = |v: f64| Sample {
        value: v,
        p99: Some(2.0 * v),
    };
    let measured = vec![(ping, vec![ns(100.0)]), (rt, vec![ns(100.0 * ratio)])];
    Report::new(Machine::probe(), Config::new(Mode::Smoke), measured)
}

#[test]
fn runs_give_each_ratio_its_median_and_range() {
    let earlier = [
        report_with_round_trip_ratio(3.0),
        report_with_round_trip_ratio(5.0),
    ];
    let report = report_with_round_trip_ratio(4.5).with_runs(&earlier);
    // The last run's own ratio stays as one run reports it.
    assert_eq!(report.ratios[0].value, 4.5);
    let json: Value = serde_json::from_str(&report.json()).unwrap();
    let runs = &json["runs"]["rt_busy_over_pingpong"];
    let values: Vec<f64> = runs["values"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_f64)
        .collect();
    assert_eq!(values, [3.0, 5.0, 4.5]);
    assert_eq!(runs["median"].as_f64(), Some(4.5));
    assert_eq!(runs["min"].as_f64(), Some(3.0));
    assert_eq!(runs["max"].as_f64(), Some(5.0));
    assert_eq!(runs["met"], false);
    assert!(report.table().contains("ratio over 3 runs"));
}

#[test]
fn callgrind_counts_each_side_of_both_workloads() {
    let runner = std::env::var("VGSP_TEST_RUNNER").unwrap_or_default();
    let has_valgrind = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !runner.trim().is_empty() || !has_valgrind {
        eprintln!("skipped: no valgrind here, or a cross build's runner");
        return;
    }
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_vgsp-bench"));
    let counted = instructions::measure(exe, &mut |_| {}).expect("callgrind counts");
    assert_eq!(counted.len(), instructions::WORKLOADS.len());
    for c in &counted {
        // Hundreds to thousands a side: not zero (nothing collected), not the whole
        // program (the toggles ignored).
        for (side, n) in [("driver", c.driver), ("gsp", c.gsp)] {
            assert!(
                (100.0..20_000.0).contains(&n),
                "{}: {side} {n}",
                c.workload.key
            );
        }
    }
    // A 4 KiB command costs both sides more than an 8-byte echo.
    assert!(counted[1].driver > counted[0].driver && counted[1].gsp > counted[0].gsp);
    let report = report_with_round_trip_ratio(2.0).with_instructions(counted);
    let json: Value = serde_json::from_str(&report.json()).unwrap();
    assert_positive(&json["instructions"]["instr_echo8"]["total"], "instr_echo8");
    assert_eq!(json["instructions"]["instr_echo8"]["goal"], "<= 2000");
}
