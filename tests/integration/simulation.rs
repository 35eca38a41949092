//! `backoff simulate`: the experiment's conclusions hold, and the outputs
//! are what they claim to be.

use serde_json::Value;

use crate::support::{TempDir, backoff};

fn cells(args: &[&str]) -> Vec<Value> {
    let out = backoff(["simulate", "--format", "json"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["cells"].as_array().unwrap().clone()
}

fn get(cells: &[Value], strategy: &str, key: &str) -> f64 {
    cells
        .iter()
        .find(|c| c["strategy"] == strategy)
        .unwrap_or_else(|| panic!("no {strategy}"))[key]
        .as_f64()
        .unwrap()
}

#[test]
fn at_100_clients_full_jitter_does_the_least_work_and_exponential_takes_longest() {
    let c = cells(&["--clients", "100", "--runs", "100", "--seed", "2015"]);
    let calls = |s| get(&c, s, "calls_mean");
    assert!(calls("full") < calls("equal"), "full < equal");
    assert!(
        calls("equal") < calls("decorrelated"),
        "equal < decorrelated"
    );
    assert!(
        calls("decorrelated") < calls("exponential"),
        "decorrelated < exponential"
    );
    assert!(calls("exponential") < calls("none"), "exponential < none");
    assert!(
        calls("full") < calls("exponential") / 2.0,
        "full < half of exponential"
    );
    let time = |s| get(&c, s, "time_ms_mean");
    assert!(
        time("exponential") > 5.0 * time("full"),
        "exponential takes many times longer"
    );
}

#[test]
fn the_same_seed_gives_the_same_output() {
    let run = || {
        backoff([
            "simulate",
            "--clients",
            "5,20",
            "--runs",
            "7",
            "--seed",
            "9",
        ])
        .output()
        .unwrap()
        .stdout
    };
    assert_eq!(run(), run());
}

#[test]
fn csv_has_the_original_columns_and_a_row_per_cell() {
    let out = backoff([
        "simulate",
        "--format",
        "csv",
        "--clients",
        "10-30/10",
        "--runs",
        "3",
        "--seed",
        "1",
        "--strategy",
        "full,policy",
    ])
    .output()
    .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "clients,time,calls,Algorithm");
    assert_eq!(lines.len(), 1 + 3 * 2);
    assert!(lines[1].starts_with("10,") && lines[1].ends_with(",full"));
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("30,") && l.ends_with(",policy"))
    );
}

#[test]
fn the_table_is_followed_by_a_terminal_chart_and_plot_writes_an_svg() {
    let dir = TempDir::new("plot");
    let svg = dir.join("sim.svg");
    let out = backoff([
        "simulate",
        "--clients",
        "10,40",
        "--runs",
        "3",
        "--seed",
        "4",
        "--plot",
    ])
    .arg(&svg)
    .output()
    .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("write calls (mean ±sd), 3 runs each"));
    assert!(text.contains("completion time (ms)"));
    assert!(text.contains("f full"), "legend: {text}");
    let drawing = std::fs::read_to_string(&svg).unwrap();
    assert!(drawing.starts_with("<svg"));
    for label in [
        "Work: write calls",
        "Completion time",
        "clients",
        "exponential",
        "decorrelated",
    ] {
        assert!(drawing.contains(label), "the SVG lacks {label}");
    }
}

#[test]
fn bad_simulation_input_is_refused() {
    for args in [
        ["--clients", "0"],
        ["--clients", "50-10"],
        ["--clients", "x"],
        ["--runs", "0"],
        ["--base", "0s"],
        ["--strategy", "magic"],
    ] {
        backoff(["simulate"])
            .args(args)
            .assert()
            .code(125)
            .stderr(predicates::str::contains(format!("'{}'", args[0])));
    }
    backoff(["simulate", "--base", "3s", "--cap", "1s"])
        .assert()
        .code(125);
}
