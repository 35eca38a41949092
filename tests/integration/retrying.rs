//! Retrying and classification, end to end.

use std::os::unix::process::ExitStatusExt;

use predicates::prelude::*;

use crate::support::{TempDir, backoff};

/// A shell script that logs `$BACKOFF_ATTEMPT` to `log` in `dir`, then runs
/// `then`.
fn logging(dir: &TempDir, then: &str) -> String {
    format!(
        "echo \"$BACKOFF_ATTEMPT\" >> '{}'; {then}",
        dir.join("log").display()
    )
}

#[test]
fn fails_twice_then_succeeds_in_three_attempts_with_two_report_lines() {
    let dir = TempDir::new("twice");
    let out = backoff(["--base", "1ms", "--", "sh", "-c"])
        .arg(logging(&dir, "[ \"$BACKOFF_ATTEMPT\" -ge 3 ] || exit 1"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(dir.lines("log"), ["1", "2", "3"]);
    let stderr = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(lines[0].starts_with("backoff: attempt 1/7 failed (exit 1) after "));
    assert!(lines[0].contains("; retrying in "));
    assert!(lines[1].starts_with("backoff: attempt 2/7 failed (exit 1) after "));
}

#[test]
fn rules_take_codes_in_hexadecimal() {
    let dir = TempDir::new("hex");
    backoff(["--base", "1ms", "--stop-on", "0x1A", "--", "sh", "-c"])
        .arg(logging(&dir, "exit $((25 + BACKOFF_ATTEMPT))"))
        .assert()
        .code(26);
    assert_eq!(dir.lines("log"), ["1"]);
    backoff(["--base", "1ms", "--retry-on", "0X1e-0x1F", "--", "sh", "-c"])
        .arg(logging(&dir, "exit $((29 + BACKOFF_ATTEMPT))"))
        .assert()
        .code(32);
    assert_eq!(dir.lines("log"), ["1", "1", "2", "3"]);
}

#[test]
fn exhausted_retries_exit_with_the_last_attempts_code() {
    let dir = TempDir::new("exhausted");
    backoff(["--max-retries", "2", "--base", "1ms", "--", "sh", "-c"])
        .arg(logging(&dir, "exit $((20 + BACKOFF_ATTEMPT))"))
        .assert()
        .code(23)
        .stderr(predicate::str::contains(
            "backoff: giving up after 3 attempts in ",
        ))
        .stderr(predicate::str::ends_with(": exit 23\n"));
    assert_eq!(dir.lines("log").len(), 3);
}

#[test]
fn a_last_attempt_killed_by_term_makes_backoff_die_by_term() {
    let out = backoff([
        "--max-retries",
        "1",
        "--base",
        "1ms",
        "--",
        "sh",
        "-c",
        "kill -TERM $$",
    ])
    .output()
    .unwrap();
    assert_eq!(out.status.signal(), Some(libc::SIGTERM), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("failed (signal TERM)"));
}

#[test]
fn attempts_counts_the_first_run_and_zero_retries_runs_once() {
    let dir = TempDir::new("attempts");
    backoff(["--attempts", "3", "--base", "1ms", "--", "sh", "-c"])
        .arg(logging(&dir, "exit 1"))
        .assert()
        .code(1);
    assert_eq!(dir.lines("log").len(), 3);
    let dir = TempDir::new("once");
    backoff(["--max-retries", "0", "--", "sh", "-c"])
        .arg(logging(&dir, "exit 4"))
        .assert()
        .code(4);
    assert_eq!(dir.lines("log"), ["1"]);
}

#[test]
fn stop_on_a_range_ends_at_once_with_that_code() {
    let dir = TempDir::new("stop");
    backoff(["--stop-on", "3-5", "--base", "1ms", "--", "sh", "-c"])
        .arg(logging(&dir, "exit 4"))
        .assert()
        .code(4)
        .stderr(predicate::str::contains(
            "not retrying: exit 4 matches --stop-on",
        ));
    assert_eq!(dir.lines("log").len(), 1);
}

#[test]
fn an_outcome_in_both_stop_on_and_retry_on_stops_the_run() {
    // --stop-on is checked first: 2 stops, the rest of --retry-on retries.
    let dir = TempDir::new("stop-beats-retry");
    backoff([
        "--stop-on",
        "2",
        "--retry-on",
        "1-255",
        "--base",
        "1ms",
        "--",
        "sh",
        "-c",
    ])
    .arg(logging(&dir, "exit $BACKOFF_ATTEMPT"))
    .assert()
    .code(2)
    .stderr(predicate::str::contains(
        "attempt 2/7 failed (exit 2) after",
    ))
    .stderr(predicate::str::contains(
        "not retrying: exit 2 matches --stop-on",
    ));
    assert_eq!(dir.lines("log"), ["1", "2"]);
}

#[test]
fn success_on_a_listed_code_counts_as_success() {
    let dir = TempDir::new("success");
    backoff(["--success-on", "0,10-12", "--base", "1ms", "--", "sh", "-c"])
        .arg(logging(&dir, "exit 11"))
        .assert()
        .code(0)
        .stderr("");
    assert_eq!(dir.lines("log").len(), 1);
}

#[test]
fn retry_on_retries_only_what_it_lists() {
    let dir = TempDir::new("retry-on");
    backoff(["--retry-on", "1-2", "--base", "1ms", "--", "sh", "-c"])
        .arg(logging(&dir, "exit $BACKOFF_ATTEMPT"))
        .assert()
        .code(3)
        .stderr(predicate::str::contains("exit 3 is not in --retry-on"));
    assert_eq!(dir.lines("log"), ["1", "2", "3"]);
}

#[test]
fn retry_on_and_stop_on_match_signals() {
    let dir = TempDir::new("sig");
    backoff(["--retry-on", "sig:TERM,sig:HUP", "--base", "1ms", "--", "sh", "-c"])
        .arg(logging(&dir, "[ $BACKOFF_ATTEMPT = 1 ] && kill -TERM $$; [ $BACKOFF_ATTEMPT = 2 ] && kill -HUP $$; exit 9"))
        .assert()
        .code(9);
    assert_eq!(dir.lines("log").len(), 3);

    let dir = TempDir::new("stop-sig");
    let out = backoff(["--stop-on", "sig:9", "--base", "1ms", "--", "sh", "-c"])
        .arg(logging(&dir, "kill -KILL $$"))
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(libc::SIGKILL));
    assert_eq!(dir.lines("log").len(), 1);
}

#[test]
fn death_by_sigint_or_sigpipe_is_never_retried_by_default() {
    for sig in ["INT", "PIPE"] {
        let dir = TempDir::new("int");
        // -v: a death by SIGPIPE is otherwise not reported.
        let out = backoff(["-v", "--base", "1ms", "--", "sh", "-c"])
            .arg(logging(&dir, &format!("kill -{sig} $$")))
            .output()
            .unwrap();
        assert!(out.status.signal().is_some(), "{sig}: {out:?}");
        assert_eq!(dir.lines("log").len(), 1, "{sig} was retried");
        assert!(String::from_utf8_lossy(&out.stderr).contains("never retried by default"));
    }
}

#[test]
fn a_command_not_found_exits_127_after_one_attempt() {
    backoff(["--base", "1ms", "--", "backoff-test-no-such-program"])
        .assert()
        .code(127)
        .stderr("backoff: cannot run 'backoff-test-no-such-program': No such file or directory\n");
}

#[test]
fn a_command_that_cannot_be_run_exits_126_after_one_attempt() {
    let dir = TempDir::new("noexec");
    let script = dir.join("script.sh");
    std::fs::write(&script, "#!/bin/sh\nexit 0\n").unwrap();
    backoff(["--base", "1ms", "--"])
        .arg(&script)
        .assert()
        .code(126)
        .stderr(predicate::str::contains("Permission denied"));
    backoff(["--base", "1ms", "--"])
        .arg(dir.path())
        .assert()
        .code(126);
}

#[test]
fn quiet_says_nothing_and_verbose_shows_the_command_and_success() {
    backoff(["-q", "--max-retries", "1", "--base", "1ms", "--", "false"])
        .assert()
        .code(1)
        .stderr("");
    let dir = TempDir::new("verbose");
    backoff(["-v", "--base", "1ms", "--jitter", "none", "--", "sh", "-c"])
        .arg(logging(&dir, "[ $BACKOFF_ATTEMPT = 2 ]"))
        .assert()
        .success()
        .stderr(predicate::str::starts_with("backoff: running sh -c '"))
        .stderr(predicate::str::contains("retrying in 1ms (bound 1ms)"))
        .stderr(predicate::str::contains(
            "attempt 2/7 succeeded; 2 attempts in ",
        ));
}

#[test]
fn reports_name_the_program_not_its_arguments_unless_verbose() {
    let out = backoff([
        "--max-retries",
        "0",
        "--",
        "sh",
        "-c",
        "exit 3 # secret-token",
    ])
    .output()
    .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!stderr.contains("secret-token"), "{stderr}");
    backoff(["--name", "fetch-deps", "--max-retries", "0", "--", "false"])
        .assert()
        .code(1)
        .stderr(predicate::str::starts_with(
            "backoff: fetch-deps: attempt 1/1 failed",
        ));
}

#[test]
fn forever_retries_until_success() {
    let dir = TempDir::new("forever");
    backoff([
        "--forever",
        "--base",
        "1ms",
        "--cap",
        "2ms",
        "--",
        "sh",
        "-c",
    ])
    .arg(logging(&dir, "[ $BACKOFF_ATTEMPT -ge 12 ]"))
    .assert()
    .success()
    .stderr(predicate::str::contains("attempt 11 failed"));
    assert_eq!(dir.lines("log").len(), 12);
}

#[test]
fn the_same_seed_draws_the_same_delays() {
    let delays = |seed: &str| {
        let out = backoff([
            "--seed",
            seed,
            "--base",
            "1ms",
            "--cap",
            "4ms",
            "--max-retries",
            "5",
            "--",
            "false",
        ])
        .output()
        .unwrap();
        String::from_utf8(out.stderr)
            .unwrap()
            .lines()
            .filter_map(|l| l.split_once("retrying in ").map(|(_, d)| d.to_owned()))
            .collect::<Vec<_>>()
    };
    let a = delays("42");
    assert_eq!(a.len(), 5);
    assert_eq!(a, delays("42"));
}

#[test]
fn a_file_in_no_executable_format_is_not_run_through_a_shell() {
    let dir = TempDir::new("noformat");
    let script = dir.join("script");
    std::fs::write(&script, "echo ran-by-a-shell\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    backoff(["--base", "1ms", "--"])
        .arg(&script)
        .assert()
        .code(126)
        .stdout("")
        .stderr(predicate::str::contains("cannot run"));
}

#[test]
fn path_lookup_skips_a_match_that_is_not_executable() {
    let (a, b) = (TempDir::new("path-a"), TempDir::new("path-b"));
    std::fs::write(a.join("backoff-test-cmd"), "#!/bin/sh\necho wrong\n").unwrap();
    std::fs::write(b.join("backoff-test-cmd"), "#!/bin/sh\necho right\n").unwrap();
    std::fs::set_permissions(
        b.join("backoff-test-cmd"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let path = format!("{}:{}", a.path().display(), b.path().display());
    backoff(["--", "backoff-test-cmd"])
        .env("PATH", &path)
        .assert()
        .success()
        .stdout("right\n");
    // Found only where it cannot be run: 126, not 127.
    backoff(["--", "backoff-test-cmd"])
        .env("PATH", a.path())
        .assert()
        .code(126);
}

#[test]
fn each_attempt_searches_path_afresh_as_execvp_does() {
    // PATH is A:B and the command is only in B at first. Attempt 1 puts a
    // command of the same name into A, which attempt 2 then runs.
    let dir = TempDir::new("path-search");
    let (a, b) = (dir.join("a"), dir.join("b"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    let log = dir.join("log");
    let executable = |path: &std::path::Path, text: String| {
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    };
    let staged = dir.join("staged");
    executable(
        &staged,
        format!(
            "#!/bin/sh\necho \"a $BACKOFF_ATTEMPT\" >> '{}'\n",
            log.display()
        ),
    );
    executable(
        &b.join("backoff-test-cmd"),
        format!(
            "#!/bin/sh
echo \"b $BACKOFF_ATTEMPT\" >> '{log}'
cp '{staged}' '{a}/backoff-test-cmd'
exit 1
",
            log = log.display(),
            staged = staged.display(),
            a = a.display(),
        ),
    );
    let path = format!("{}:{}:/usr/bin:/bin", a.display(), b.display());
    backoff([
        "--base",
        "1ms",
        "--max-retries",
        "3",
        "-q",
        "--",
        "backoff-test-cmd",
    ])
    .env("PATH", &path)
    .assert()
    .success();
    assert_eq!(dir.lines("log"), ["b 1", "a 2"]);
}
