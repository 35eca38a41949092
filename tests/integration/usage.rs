//! Bad input: always exit 125 with one line that names the option and quotes
//! the value, and the command never runs.

use proptest::prelude::*;

use crate::support::{TempDir, backoff};

/// Runs backoff with `args` before a command that would leave a marker, and
/// checks the refusal.
fn refused(args: &[&str], names: &str) {
    let dir = TempDir::new("usage");
    let marker = dir.join("ran");
    let out = backoff(args)
        .args(["--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(125), "{args:?}: {stderr}");
    assert_eq!(
        stderr.lines().count(),
        1,
        "{args:?}: one line, got {stderr:?}"
    );
    assert!(stderr.starts_with("backoff: "), "{stderr}");
    assert!(
        stderr.contains(names),
        "{args:?}: {stderr:?} should name {names}"
    );
    assert!(!marker.exists(), "{args:?}: the command ran");
}

#[test]
fn the_documented_example_message_is_exact() {
    backoff(["--base", "100", "--", "true"])
        .assert()
        .code(125)
        .stderr("backoff: invalid value '100' for '--base': a duration needs a unit, like 100ms or 100s\n");
}

#[test]
fn bad_durations_are_refused() {
    for (flag, value) in [
        ("--base", ""),
        ("--base", "-5s"),
        ("--base", "100"),
        ("--cap", "1.5ns"),
        ("--cap", "NaN"),
        ("--cap", "inf"),
        ("--cap", "10000y"),
        ("--cap", "18446744073709551615s 1000ms"),
        ("--cap", "99999999999999999999999s"),
        ("--base", "5 parsecs"),
    ] {
        refused(&[flag, value], &format!("'{flag}'"));
        refused(&[flag, value], &format!("'{value}'"));
    }
}

#[test]
fn inconsistent_policies_are_refused() {
    refused(&["--base", "5s", "--cap", "1s"], "'--base'");
    refused(&["--base", "0s"], "'--base'");
    refused(&["--base", "0s", "--jitter", "none"], "'--base'");
    refused(&["--factor", "0.5"], "'--factor'");
    refused(&["--factor", "NaN"], "'--factor'");
    refused(&["--factor", "inf"], "'--factor'");
    refused(&["--factor", "1e400"], "'--factor'");
    refused(&["--max-retries", "3", "--attempts", "2"], "--attempts");
    refused(&["--forever", "--max-retries", "3"], "--forever");
}

#[test]
fn limits_and_stores_given_on_the_command_line_are_told_from_the_environment() {
    // Given twice on the command line: refused, for a run and for schedule.
    refused(&["--attempts", "2", "--forever"], "--attempts");
    backoff(["schedule", "--max-retries", "3", "--attempts", "2"])
        .assert()
        .code(125)
        .stderr(predicates::str::contains(
            "'--max-retries' cannot be used with '--attempts'",
        ));
    // From the environment, a default that a flag overrides.
    backoff([
        "schedule",
        "--attempts",
        "2",
        "--jitter",
        "none",
        "--format",
        "csv",
    ])
    .env("BACKOFF_MAX_RETRIES", "5")
    .assert()
    .success()
    .stdout(predicates::str::is_match("(?s)^[^\\n]*\\n1,[^\\n]*\\n$").unwrap());
    // A store on the command line needs a budget; one in the environment
    // is set once for every command, budgeted or not.
    refused(
        &["--budget-store", "redis://127.0.0.1:1"],
        "'--budget-store' needs",
    );
    backoff(["--", "true"])
        .env("BACKOFF_BUDGET_STORE", "redis://127.0.0.1:1")
        .assert()
        .success();
}

#[test]
fn a_zero_delay_is_allowed_when_asked_for_explicitly() {
    backoff([
        "--base",
        "0s",
        "--cap",
        "0s",
        "--jitter",
        "none",
        "--max-retries",
        "2",
        "--",
        "false",
    ])
    .assert()
    .code(1);
}

#[test]
fn bad_counts_are_refused() {
    for v in ["-1", "1.5", "x", "1000000001", "99999999999999999999999"] {
        refused(&["--max-retries", v], "'--max-retries'");
    }
    refused(&["--attempts", "0"], "'--attempts'");
    refused(&["--seed", "-3"], "'--seed'");
}

#[test]
fn bad_names_are_refused() {
    refused(&["--jitter", "fuzzy"], "'--jitter'");
    refused(&["--name", ""], "'--name'");
}

#[test]
fn bad_rules_are_refused() {
    for (flag, value) in [
        ("--retry-on", "5-1"),
        ("--retry-on", "256"),
        ("--stop-on", "0-300"),
        ("--success-on", "x"),
        ("--retry-on", "1,,2"),
        ("--retry-on", "sig:NOPE"),
        ("--stop-on", "sig:"),
        ("--retry-on", "-1"),
    ] {
        refused(&[&format!("{flag}={value}")], &format!("'{flag}'"));
    }
    refused(&["--retry-on", "1-5", "--stop-on", "3"], "'--stop-on'");
    refused(
        &["--retry-on", "sig:TERM", "--stop-on", "sig:15"],
        "'--stop-on'",
    );
}

#[test]
fn no_command_and_unknown_options_are_refused() {
    let out = backoff(["--base", "1s"]).output().unwrap();
    assert_eq!(out.status.code(), Some(125));
    assert_eq!(String::from_utf8(out.stderr).unwrap().lines().count(), 1);
    refused(&["--no-such-flag"], "'--no-such-flag'");
}

#[test]
fn help_and_version_exit_zero() {
    backoff(["--help"]).assert().success();
    backoff(["--version"]).assert().success();
    backoff(["schedule", "--help"]).assert().success();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Whatever string reaches a value parser, backoff answers with a status,
    /// never a panic (exit 101) or a signal.
    #[test]
    fn no_value_makes_backoff_panic(
        flag in prop::sample::select(vec![
            "--base", "--cap", "--factor", "--jitter", "--max-retries", "--attempts",
            "--seed", "--retry-on", "--stop-on", "--success-on", "--name",
        ]),
        value in "\\PC{0,24}",
    ) {
        let out = backoff([&format!("{flag}={value}"), "--max-retries=0", "--", "true"])
            .output()
            .unwrap();
        let code = out.status.code();
        prop_assert!(code == Some(0) || code == Some(125), "{flag}={value:?}: {out:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// The same for the subcommands' values.
    #[test]
    fn no_subcommand_value_makes_backoff_panic(
        (sub, flag) in prop::sample::select(vec![
            ("schedule", "--format"), ("schedule", "--base"), ("schedule", "--max-retries"),
            ("simulate", "--runs"), ("simulate", "--base"), ("simulate", "--cap"),
            ("simulate", "--factor"), ("simulate", "--jitter"), ("simulate", "--seed"),
            ("simulate", "--strategy"), ("simulate", "--format"),
            ("budget show", "--budget-burst"), ("budget show", "--format"), ("budget show", "KEY"),
        ]),
        value in "\\PC{0,24}",
    ) {
        let dir = TempDir::new("prop-sub");
        let mut cmd = backoff(sub.split(' '));
        match (sub, flag) {
            ("budget show", "KEY") => {
                cmd.arg("--").arg(&value);
            }
            ("budget show", _) => {
                cmd.arg("k").arg(format!("{flag}={value}"));
            }
            _ => {
                cmd.arg(format!("{flag}={value}"));
            }
        }
        if sub == "simulate" {
            cmd.args(["--clients", "3", "--runs", "1"]);
        }
        if sub.starts_with("budget") {
            cmd.arg("--budget-dir").arg(dir.join("b"));
        }
        let out = cmd.output().unwrap();
        let code = out.status.code();
        prop_assert!(code == Some(0) || code == Some(125), "{sub} {flag}={value:?}: {out:?}");
    }
}

#[test]
fn control_characters_from_the_user_are_escaped_in_backoffs_lines() {
    let out = backoff(["--base", "1\u{1b}[2J\nx", "--", "true"])
        .assert()
        .code(125)
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        err,
        "backoff: invalid value '1\\u{1b}[2J\\nx' for '--base': invalid character at 1\n"
    );
    let out = backoff(["--", "no\rsuch\u{7}"])
        .assert()
        .code(127)
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("cannot run 'no\\rsuch\\u{7}'"), "{err}");
    assert!(!err.chars().any(|c| c.is_control() && c != '\n'), "{err:?}");
}

#[test]
fn durations_below_a_microsecond_are_shown_as_they_are_not_as_zero() {
    // Whether `false` exits before its 5 ns are up is a race: either way,
    // no retry follows and the limit is shown as it was given.
    backoff(["--max-time", "5ns", "--", "false"])
        .assert()
        .code(predicates::iter::in_iter([1, 124]))
        .stderr(predicates::str::contains("--max-time 5ns has passed"));
    backoff([
        "schedule", "--base", "250ns", "--cap", "250ns", "--jitter", "none",
    ])
    .assert()
    .success()
    .stdout(predicates::str::contains("250ns"));
}

#[test]
fn a_missing_value_key_or_subcommand_is_named_on_one_line() {
    for (args, message) in [
        (&["--name"][..], "backoff: --name needs a value\n"),
        (&["--breaker"][..], "backoff: --breaker needs a value\n"),
        (
            &["breaker", "show"][..],
            "backoff: missing <KEY> (usage: backoff breaker show <KEY>)\n",
        ),
        (
            &["budget", "reset"][..],
            "backoff: missing <KEY> (usage: backoff budget reset <KEY>)\n",
        ),
        (
            &["breaker"][..],
            "backoff: a subcommand is missing (usage: backoff breaker <COMMAND>)\n",
        ),
    ] {
        let out = backoff(args).output().unwrap();
        assert_eq!(out.status.code(), Some(125), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), message, "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}
