//! Policy options from the environment; flags win over it.

use crate::support::{TempDir, backoff};

fn attempts_with(env: &[(&str, &str)], args: &[&str]) -> usize {
    let dir = TempDir::new("env");
    let mut cmd = backoff(["--base", "1ms"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.args(args)
        .args(["--", "sh", "-c"])
        .arg(format!("echo x >> '{}'; exit 1", dir.join("log").display()))
        .assert()
        .code(1);
    dir.lines("log").len()
}

#[test]
fn max_retries_comes_from_the_environment_and_a_flag_wins() {
    assert_eq!(attempts_with(&[("BACKOFF_MAX_RETRIES", "1")], &[]), 2);
    assert_eq!(
        attempts_with(&[("BACKOFF_MAX_RETRIES", "1")], &["--max-retries", "2"]),
        3
    );
    assert_eq!(
        attempts_with(&[("BACKOFF_MAX_RETRIES", "1")], &["--attempts", "4"]),
        4
    );
}

#[test]
fn policy_variables_shape_the_delays() {
    backoff(["-v", "--max-retries", "2", "--", "false"])
        .env("BACKOFF_BASE", "2ms")
        .env("BACKOFF_CAP", "3ms")
        .env("BACKOFF_FACTOR", "1.5")
        .env("BACKOFF_JITTER", "none")
        .assert()
        .code(1)
        .stderr(predicates::str::contains("retrying in 2ms (bound 2ms)"))
        .stderr(predicates::str::contains("retrying in 3ms (bound 3ms)"));
}

#[test]
fn a_bad_environment_value_is_refused_like_a_bad_flag() {
    backoff(["--", "true"])
        .env("BACKOFF_BASE", "100")
        .assert()
        .code(125)
        .stderr(predicates::str::contains("'--base'"));
}
