//! `backoff schedule`: the delays a policy produces.

use predicates::prelude::*;

use crate::support::backoff;

#[test]
fn schedule_without_jitter_prints_the_doubling_table_capped_at_the_cap() {
    let out = backoff([
        "schedule",
        "--jitter",
        "none",
        "--base",
        "100ms",
        "--cap",
        "30s",
        "--max-retries",
        "11",
    ])
    .output()
    .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let bounds: Vec<&str> = text
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().nth(1).unwrap())
        .collect();
    assert_eq!(
        bounds,
        [
            "100ms", "200ms", "400ms", "800ms", "1.60s", "3.20s", "6.40s", "12.8s", "25.6s",
            "30.0s", "30.0s"
        ]
    );
}

#[test]
fn schedule_json_gives_ranges_means_and_totals() {
    let out = backoff([
        "schedule", "--format", "json", "--jitter", "equal", "--base", "1s",
    ])
    .output()
    .unwrap();
    let doc = crate::support::json_of(crate::schema::Doc::Schedule, &out.stdout);
    let rows = doc["retries"].as_array().unwrap();
    assert_eq!(rows.len(), 6, "default max-retries");
    assert_eq!(rows[0]["min_seconds"], 0.5);
    assert_eq!(rows[0]["max_seconds"], 1.0);
    assert_eq!(rows[0]["mean_seconds"], 0.75);
    assert_eq!(rows[1]["total_max_seconds"], 3.0);
    assert_eq!(doc["policy"]["jitter"], "equal");
}

#[test]
fn schedule_with_a_seed_draws_delays_inside_their_ranges_and_repeats_them() {
    for jitter in ["full", "equal", "decorrelated", "none"] {
        let run = || {
            backoff([
                "schedule",
                "--format",
                "json",
                "--seed",
                "7",
                "--jitter",
                jitter,
                "--cap",
                "5s",
                "--max-retries",
                "20",
            ])
            .output()
            .unwrap()
            .stdout
        };
        let first = run();
        assert_eq!(first, run(), "same seed, same output");
        let doc = crate::support::json_of(crate::schema::Doc::Schedule, &first);
        for row in doc["retries"].as_array().unwrap() {
            let d = row["drawn_seconds"].as_f64().unwrap();
            let (lo, hi) = (
                row["min_seconds"].as_f64().unwrap(),
                row["max_seconds"].as_f64().unwrap(),
            );
            assert!(d >= lo && d <= hi, "{jitter}: {row}");
            assert!(d <= 5.0, "never above the cap");
        }
    }
}

#[test]
fn schedule_forever_stops_once_the_range_settles() {
    backoff(["schedule", "--forever", "--cap", "1s"])
        .assert()
        .success()
        .stdout(predicate::str::contains("and so on for every later retry"));
}

#[test]
fn schedule_csv_has_a_header_and_a_row_per_retry() {
    let out = backoff(["schedule", "--format", "csv", "--max-retries", "3"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 4);
    assert!(text.starts_with("retry,bound_seconds,"));
}

#[test]
fn schedule_refuses_bad_policies_like_a_run() {
    backoff(["schedule", "--base", "2s", "--cap", "1s"])
        .assert()
        .code(125)
        .stderr(predicate::str::contains("'--base'"));
}
