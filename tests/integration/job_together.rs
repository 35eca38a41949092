//! How the job options meet: `--once-per` beside the overlap policies
//! (`--lock-limit`, `--lock-replace`), and its skips beside
//! `--alert-after` and the metrics.

use crate::support::{TempDir, backoff};

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
