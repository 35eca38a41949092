//! How the job options meet: `--once-per` beside the overlap policies
//! (`--lock-limit`, `--lock-replace`), and its skips beside
//! `--alert-after` and the metrics.

use std::time::Duration;

use crate::pings::Monitor;
use crate::support::{Running, TempDir, backoff, command};

#[test]
fn once_per_with_a_lock_limit_above_1_is_refused_with_the_fix() {
    let dir = TempDir::new("once-limit");
    let store = dir.path().to_str().unwrap();
    for limit in ["2", "1000"] {
        let out = backoff(["--once-per", "day", "--lock", "j", "--lock-limit", limit])
            .args(["--budget-dir", store, "--", "sh", "-c", "echo ran >> log"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("leave --lock-limit out"), "{err}");
    }
    assert!(!dir.join("log").exists());
    // --lock-limit 1 is the plain lock --once-per takes anyway.
    backoff(["--once-per", "day", "--lock", "j", "--lock-limit", "1"])
        .args(["--budget-dir", store, "--", "sh", "-c", "echo ran >> log"])
        .current_dir(dir.path())
        .assert()
        .success();
    assert_eq!(dir.lines("log"), ["ran"]);
}

/// Today's date in UTC, as `date -u` gives it.
fn utc_day() -> String {
    let out = std::process::Command::new("date")
        .args(["-u", "+%F"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[test]
fn a_tz_that_names_no_zone_decides_days_in_utc_and_never_panics() {
    let long = "A".repeat(10 * 1024);
    for (i, tz) in [":/etc/passwd", "Nowhere/Land", long.as_str()]
        .into_iter()
        .enumerate()
    {
        let dir = TempDir::new("once-tz");
        let store = dir.path().to_str().unwrap();
        let key = format!("tz{i}");
        let before = utc_day();
        for _ in 0..2 {
            backoff(["--once-per", "day", "--lock", &key, "--budget-dir", store])
                .args(["--", "sh", "-c", "echo ran >> log"])
                .env("TZ", tz)
                .current_dir(dir.path())
                .assert()
                .success();
        }
        assert_eq!(dir.lines("log"), ["ran"], "TZ={tz:.20}");
        let out = backoff(["once", "show", &key, "--budget-dir", store])
            .args(["--format", "json"])
            .env("TZ", tz)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "TZ={tz:.20}");
        let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let period = shown["last"]["period"].as_str().unwrap().to_owned();
        let days = [format!("day:{before}"), format!("day:{}", utc_day())];
        assert!(days.contains(&period), "TZ={tz:.20}: {period}");
    }
}

const UUID: &str = "3b9e2f4a-7c1d-4e8f-9a2b-5c6d7e8f9a0b";

/// The value of `backoff_last_success_timestamp_seconds` in the metrics
/// file `path`.
fn last_success(path: &std::path::Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .find(|l| l.starts_with("backoff_last_success_timestamp_seconds{"))
        .unwrap_or_else(|| panic!("no last success in {text}"))
        .to_owned()
}

#[test]
fn a_once_per_skip_neither_counts_nor_resets_alert_after_checks_in_or_moves_the_last_success() {
    let dir = TempDir::new("once-alert");
    let store = dir.path().to_str().unwrap();
    let metrics = dir.join("job.prom");
    let m = Monitor::start("ok");
    let url = m.url(UUID);
    let run = |once: bool, status: u8| {
        let mut cmd = backoff(["--name", "nightly", "--alert-after", "2", "--ping", &url]);
        cmd.args(["--budget-dir", store, "--max-retries", "0"])
            .args(["--metrics-file", metrics.to_str().unwrap()]);
        if once {
            cmd.args(["--once-per", "1h"]);
        }
        let script = format!("echo ran >> log; exit {status}");
        let out = cmd
            .args(["--", "sh", "-c", &script])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(i32::from(status)), "{out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    // The job done for the window, then a failure outside it: 1 of 2.
    run(true, 0);
    let done = last_success(&metrics);
    let err = run(false, 3);
    assert!(err.contains("tolerated (1 of 2)"), "{err}");
    assert_eq!(m.requests(4).len(), 4);
    // The skip: silent, no check-in, the last success where it was.
    let err = run(true, 0);
    assert_eq!(err, "");
    assert_eq!(dir.lines("log").len(), 2);
    assert_eq!(last_success(&metrics), done);
    // The count went on from 1: this failure is the second in a row.
    let err = run(false, 3);
    assert!(err.contains("alerting (2 of 2)"), "{err}");
    let got = m.requests(6);
    assert_eq!(got.len(), 6, "{got:?}");
    assert!(got[4].starts_with(&format!("GET /{UUID}/start")), "{got:?}");
    assert!(got[5].starts_with(&format!("POST /{UUID}/3?")), "{got:?}");
}

#[test]
fn a_run_lock_replace_ends_is_not_counted_by_alert_after() {
    let dir = TempDir::new("replace-alert");
    let store = dir.path().to_str().unwrap();
    let m = Monitor::start("ok");
    let url = m.url(UUID);
    let job = |extra: &[&str], script: &str| {
        let mut cmd = command(["--name", "rp", "--lock", "rp", "--alert-after", "2"]);
        cmd.args(["--ping", &url, "--budget-dir", store, "--max-retries", "0"])
            .args(["--kill-after", "1s"])
            .args(extra)
            .args(["--", "sh", "-c", script])
            .current_dir(dir.path());
        cmd
    };
    let mut holder = Running::start(job(&[], "echo started; exec sleep 60"));
    holder.wait_for("started");
    let out = job(&["--lock-replace"], "exit 3").output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    // The replaced run did not count: this failure is the first.
    assert!(err.contains("tolerated (1 of 2)"), "{err}");
    let (status, _) = holder.wait_exit(Duration::from_secs(30));
    assert_eq!(status.code(), Some(75));
    assert!(holder.stderr().iter().any(|l| l.contains("(replaced)")));
    assert!(
        !holder.stderr().iter().any(|l| l.contains("tolerated")),
        "{:?}",
        holder.stderr()
    );
}

#[test]
fn a_run_lock_replace_ends_checks_in_as_a_log_entry_not_a_failure() {
    let dir = TempDir::new("replace-ping");
    let store = dir.path().to_str().unwrap();
    let m = Monitor::start("ok");
    let url = m.url(UUID);
    let mut holder = Running::start({
        let mut cmd = command(["--lock", "rq", "--budget-dir", store, "--kill-after", "1s"]);
        cmd.args([
            "--ping",
            &url,
            "--",
            "sh",
            "-c",
            "echo started; exec sleep 60",
        ]);
        cmd
    });
    holder.wait_for("started");
    backoff([
        "--lock",
        "rq",
        "--lock-replace",
        "--budget-dir",
        store,
        "--",
        "true",
    ])
    .assert()
    .success();
    let (status, _) = holder.wait_exit(Duration::from_secs(30));
    assert_eq!(status.code(), Some(75));
    // The holder's start, then its end: a log entry that says why, where
    // a failure's status (/75) would alert.
    let got = m.requests(2);
    assert!(
        got[0].starts_with(&format!("GET /{UUID}/start?rid=")),
        "{got:?}"
    );
    assert!(
        got[1].starts_with(&format!("POST /{UUID}/log?rid=")),
        "{got:?}"
    );
    assert!(
        got[1].contains("a run of --lock-replace took the lock over"),
        "{got:?}"
    );
}

#[test]
fn a_splay_as_long_as_the_once_per_period_is_refused_with_the_fix() {
    let dir = TempDir::new("once-splay");
    let store = dir.path().to_str().unwrap();
    for (period, splay, shorter) in [
        ("hour", "2h", "1h"),
        ("hour", "1h", "1h"),
        ("10m", "10m", "10m"),
    ] {
        let out = backoff(["--once-per", period, "--splay", splay, "--lock", "j"])
            .args(["--budget-dir", store, "--", "sh", "-c", "echo ran >> log"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(&format!("give a --splay shorter than {shorter}")),
            "{err}"
        );
    }
    assert!(!dir.join("log").exists());
    // A splay shorter than the period is the recipe's.
    backoff(["--once-per", "hour", "--splay", "1s", "--lock", "j"])
        .args(["--budget-dir", store, "--", "sh", "-c", "echo ran >> log"])
        .current_dir(dir.path())
        .assert()
        .success();
    assert_eq!(dir.lines("log"), ["ran"]);
}
