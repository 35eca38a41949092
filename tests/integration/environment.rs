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
fn a_bad_environment_value_is_refused_naming_the_variable_that_gave_it() {
    for (name, value, args, why) in [
        ("BACKOFF_BASE", "100", &[][..], "a duration needs a unit"),
        ("BACKOFF_MAX_RETRIES", "abc", &[], "must be a whole number"),
        ("BACKOFF_TIMEOUT", "0s", &[], "must be above zero"),
        ("BACKOFF_BASE", "2s", &["--cap", "1s"], "greater than --cap"),
    ] {
        let flag = name
            .trim_start_matches("BACKOFF_")
            .to_lowercase()
            .replace('_', "-");
        let out = backoff(args)
            .args(["--", "true"])
            .env(name, value)
            .assert()
            .code(125)
            .get_output()
            .clone();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(&format!("{name} (from the environment, for '--{flag}')"))
                && err.contains(why),
            "{err}"
        );
    }
    // The flag that was given is named, not the variable it overrides.
    backoff(["--max-retries", "abc", "--", "true"])
        .env("BACKOFF_MAX_RETRIES", "abc")
        .assert()
        .code(125)
        .stderr(predicates::str::contains("for '--max-retries'"));
}
