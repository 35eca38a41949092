//! Policy options from the environment; flags win over it; a mistyped
//! `BACKOFF_*` variable is told of.

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
    // So does a subcommand's, whose options are built when it is named.
    refused_naming_the_variable("BACKOFF_BASE", "x", &["schedule"], "expected number");
    refused_naming_the_variable("BACKOFF_JITTER", "some", &["simulate"], "expected one of");
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

/// backoff's stderr for `args` with the variables `env`.
fn said_with(env: &[(&str, &str)], args: &[&str]) -> (Option<i32>, String) {
    let mut cmd = backoff(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.timeout(crate::support::PATIENCE).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_mistyped_variable_is_told_once_at_the_start_with_the_one_meant() {
    let warning =
        "backoff: BACKOFF_BASS is not a variable backoff reads; did you mean BACKOFF_BASE?\n";
    let args = [
        "-v",
        "--jitter",
        "none",
        "--max-retries",
        "1",
        "--",
        "false",
    ];
    let (code, err) = said_with(&[("BACKOFF_BASS", "2ms")], &args);
    assert_eq!(code, Some(1));
    assert!(err.starts_with(warning), "{err}");
    assert_eq!(err.matches("BACKOFF_BASS").count(), 1, "{err}");
    assert!(err.contains("(bound 100ms)"), "the default base: {err}");
    // Followed, the advice works.
    let (_, err) = said_with(&[("BACKOFF_BASE", "2ms")], &args);
    assert!(!err.contains("not a variable"), "{err}");
    assert!(err.contains("retrying in 2ms (bound 2ms)"), "{err}");
    // In json, a warning event first; with -q, nothing.
    let (_, err) = said_with(
        &[("BACKOFF_BASS", "2ms")],
        &["--log-format", "json", "--", "true"],
    );
    let events = crate::support::events(err.as_bytes());
    assert_eq!(events[0]["event"], "warning", "{err}");
    assert_eq!(
        events[0]["message"],
        warning.trim_end().trim_start_matches("backoff: ")
    );
    assert_eq!(events.iter().filter(|e| e["event"] == "warning").count(), 1);
    let (code, err) = said_with(&[("BACKOFF_BASS", "2ms")], &["-q", "--", "true"]);
    assert_eq!((code, err.as_str()), (Some(0), ""));
    // Several: one line each, in the order of their names; one far from
    // every name backoff reads is pointed to the list of them.
    let (_, err) = said_with(
        &[
            ("BACKOFF_TIMOUT", "1s"),
            ("BACKOFF_STORE", "x"),
            ("BACKOFF_ZZZ", "1"),
        ],
        &["--", "true"],
    );
    assert_eq!(
        err,
        "backoff: BACKOFF_STORE is not a variable backoff reads; did you mean BACKOFF_BUDGET_STORE?\n\
         backoff: BACKOFF_TIMOUT is not a variable backoff reads; did you mean BACKOFF_TIMEOUT?\n\
         backoff: BACKOFF_ZZZ is not a variable backoff reads; backoff --help names those it reads\n"
    );
}

#[test]
fn backoff_help_names_every_variable_backoff_reads() {
    // Where a mistyped variable is near none of them, the warning points
    // to `backoff --help`.
    let out = backoff(["--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for name in [
        "BASE",
        "CAP",
        "FACTOR",
        "JITTER",
        "MAX_RETRIES",
        "TIMEOUT",
        "MAX_TIME",
        "RETRY_AFTER_MAX",
        "BUDGET_STORE",
        "TIMESTAMPS",
    ] {
        assert!(help.contains(&format!("BACKOFF_{name}")), "BACKOFF_{name}");
        // And none of them is taken for a mistake.
        let (_, err) = said_with(&[(&format!("BACKOFF_{name}"), "")], &["--", "true"]);
        assert!(!err.contains("not a variable"), "{err}");
    }
}

#[test]
fn subcommands_that_read_variables_tell_of_a_mistyped_one_too() {
    let env = [("BACKOFF_BASS", "1s")];
    let warning =
        "backoff: BACKOFF_BASS is not a variable backoff reads; did you mean BACKOFF_BASE?\n";
    let dir = TempDir::new("env-sub");
    let budget_dir = dir.path().to_str().unwrap();
    for args in [
        &["schedule", "--max-retries", "1"][..],
        &["budget", "show", "k", "--budget-dir", budget_dir],
    ] {
        let (code, err) = said_with(&env, args);
        assert_eq!((code, err.as_str()), (Some(0), warning), "{args:?}");
    }
    // The simulator reads none.
    let (code, err) = said_with(&env, &["simulate", "--clients", "2", "--runs", "1"]);
    assert_eq!((code, err.as_str()), (Some(0), ""));
}

#[test]
fn a_backoff_run_by_a_command_or_a_hook_takes_no_variable_it_was_given_for_a_mistake() {
    // Every variable backoff sets for a command or a hook reaches a
    // backoff they run.
    let dir = TempDir::new("env-nested");
    let path = crate::support::path_with_backoff(&dir);
    let inner = "backoff --attempts 1 -- true";
    let out = backoff(["--base", "1ms", "--attempts", "2", "--timeout", "1m"])
        .args([
            "--max-time",
            "1m",
            "--on-retry",
            inner,
            "--on-give-up",
            inner,
        ])
        .args(["--", "sh", "-c"])
        .arg(format!("{inner} && exit 3"))
        .env("PATH", path)
        .timeout(crate::support::PATIENCE)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("giving up after 2 attempts"), "{err}");
    assert!(!err.contains("not a variable"), "{err}");
}
