//! Policy options from the environment; flags win over it.

use std::time::Duration;

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

/// Runs backoff with `args` and the variable `name` set to `value`, and
/// checks that it refuses in one line, naming the variable, saying `why`.
fn refused_naming_the_variable(name: &str, value: &str, args: &[&str], why: &str) {
    let flag = name
        .trim_start_matches("BACKOFF_")
        .to_lowercase()
        .replace('_', "-");
    let out = backoff(args)
        .env(name, value)
        .assert()
        .code(125)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(
        err.contains(&format!(
            "for {name} (from the environment, for '--{flag}')"
        )) && err.contains(why),
        "{args:?}: {err}"
    );
}

#[test]
fn a_bad_environment_value_is_refused_naming_the_variable_that_gave_it() {
    for (name, value, args, why) in [
        ("BACKOFF_BASE", "100", &[][..], "a duration needs a unit"),
        ("BACKOFF_MAX_RETRIES", "abc", &[], "must be a whole number"),
        ("BACKOFF_TIMEOUT", "0s", &[], "must be above zero"),
        ("BACKOFF_BASE", "2s", &["--cap", "1s"], "greater than --cap"),
    ] {
        let mut with_command = args.to_vec();
        with_command.extend(["--", "true"]);
        refused_naming_the_variable(name, value, &with_command, why);
    }
    // The flag that was given is named, not the variable it overrides.
    backoff(["--max-retries", "abc", "--", "true"])
        .env("BACKOFF_MAX_RETRIES", "abc")
        .assert()
        .code(125)
        .stderr(predicates::str::contains("for '--max-retries'"));
}

#[test]
fn a_bad_environment_value_is_blamed_on_its_variable_when_the_commands_arguments_hold_the_flag() {
    // The first word that is not an option starts the command: a word after
    // it that looks like backoff's flag is the command's, with or without
    // `--` before the command, for clap's own checks and for backoff's.
    for (name, value, args, why) in [
        (
            "BACKOFF_MAX_RETRIES",
            "abc",
            &["echo", "--max-retries"][..],
            "must be a whole number",
        ),
        (
            "BACKOFF_MAX_RETRIES",
            "abc",
            &["--", "echo", "--max-retries=3"],
            "must be a whole number",
        ),
        (
            "BACKOFF_BASE",
            "2s",
            &["--cap", "1s", "echo", "--base", "1ms"],
            "greater than --cap",
        ),
        (
            "BACKOFF_BASE",
            "2s",
            &["--cap", "1s", "--", "echo", "--base=1ms"],
            "greater than --cap",
        ),
        (
            "BACKOFF_TIMEOUT",
            "0s",
            &["sh", "-c", "exit 0", "--timeout", "1s"],
            "must be above zero",
        ),
        (
            "BACKOFF_BASE",
            "2s",
            &["schedule", "--cap", "1s"],
            "greater than --cap",
        ),
    ] {
        refused_naming_the_variable(name, value, args, why);
    }
    // A flag of backoff's own before the command is still named, with the
    // command's arguments holding it too.
    backoff(["--base", "3s", "--cap", "1s", "echo", "--base"])
        .env("BACKOFF_BASE", "2s")
        .assert()
        .code(125)
        .stderr(predicates::str::contains(
            "invalid value '3s' for '--base': greater than --cap",
        ));
}

#[test]
fn a_bare_number_in_backoff_timeout_is_seconds_as_backoff_tells_its_command() {
    // An outer backoff sets BACKOFF_TIMEOUT=1 for its command: a backoff
    // run by that command takes it as its own --timeout of 1s.
    let out = backoff(["--attempts", "1", "--", "sleep", "30"])
        .env("BACKOFF_TIMEOUT", "1")
        .timeout(crate::support::PATIENCE)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(124), "{out:?}");
    // A flag still wins; zero is refused, naming the variable.
    let out = backoff(["--timeout", "100ms", "--attempts", "1", "--", "sleep", "30"])
        .env("BACKOFF_TIMEOUT", "2.5")
        .timeout(crate::support::PATIENCE)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(124));
    // Ended by the flag's 100ms, not the variable's 2.5s.
    let text = String::from_utf8_lossy(&out.stderr);
    let after = text
        .split_once("failed (timeout) after ")
        .and_then(|(_, rest)| rest.split(|c: char| c == ';' || c.is_whitespace()).next())
        .unwrap_or_else(|| panic!("{text}"));
    let took = humantime::parse_duration(after).unwrap_or_else(|e| panic!("{after}: {e}"));
    assert!(took < Duration::from_millis(2500), "{text}");
    refused_naming_the_variable(
        "BACKOFF_TIMEOUT",
        "0",
        &["--", "true"],
        "must be above zero",
    );
    // Not a plain number: refused as any duration without its unit is,
    // quoting what was given.
    refused_naming_the_variable(
        "BACKOFF_TIMEOUT",
        "1.",
        &["--", "true"],
        "invalid value '1.' for",
    );
}

#[test]
fn the_store_url_never_reaches_the_command_or_a_hook_but_the_policy_does() {
    let dir = TempDir::new("env-secret");
    let seen = dir.join("seen");
    // No --budget or --breaker: the store is not used, and its URL, given
    // to a fleet's every run, is no error.
    let record = format!(
        "echo \"${{BACKOFF_BUDGET_STORE-unset}} ${{BACKOFF_CAP-unset}}\" >> '{}'",
        seen.display()
    );
    backoff(["--base", "1ms", "--max-retries", "1"])
        .env("BACKOFF_BUDGET_STORE", "redis://:s3cretpw@127.0.0.1:1/0")
        .env("BACKOFF_CAP", "2ms")
        .args(["--on-retry", &record, "--on-give-up", &record])
        .args(["--", "sh", "-c"])
        .arg(format!("{record}; exit 3"))
        .assert()
        .code(3);
    // Two attempts, the retry's hook and the give-up's.
    assert_eq!(dir.lines("seen"), vec!["unset 2ms"; 4]);
}
