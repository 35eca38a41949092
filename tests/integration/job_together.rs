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
