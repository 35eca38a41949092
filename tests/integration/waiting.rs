//! Success conditions and shapes of a run: `--until-output` against a real
//! HTTP server and a real redis-server, `--poll`, `--until-failure`,
//! `--consecutive`, `--delays` and `--reset-after`.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};

use crate::fleet::{Redis, free_port};
use crate::support::{PATIENCE, Running, TempDir, backoff, command};

/// `python3 -m http.server` serving `dir` on a free port of 127.0.0.1,
/// stopped when dropped.
struct Files {
    child: Child,
    port: u16,
}

impl Files {
    fn serve(dir: &TempDir) -> Files {
        let mut child = Command::new("python3")
            .args(["-u", "-m", "http.server", "0", "--bind", "127.0.0.1"])
            .current_dir(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs");
        // "Serving HTTP on 127.0.0.1 port 41235 (http://127.0.0.1:41235/) ..."
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("the server says where it listens");
        let port = line
            .split_whitespace()
            .skip_while(|w| *w != "port")
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {line:?}"));
        Files { child, port }
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// What each "retrying in" line of `err` says after those words.
fn delays(err: &str) -> Vec<&str> {
    err.lines()
        .filter_map(|l| l.split("retrying in ").nth(1))
        .collect()
}

/// Runs backoff named `name` with `args`, writing a run report and metrics;
/// returns its output, the report and the metrics.
fn summarised(name: &str, args: &[&str]) -> (std::process::Output, serde_json::Value, String) {
    let dir = TempDir::new("summaries");
    let report = dir.join("report.json");
    let metrics = dir.join("metrics.prom");
    let out = backoff(["--name", name, "--report"])
        .arg(&report)
        .arg("--metrics-file")
        .arg(&metrics)
        .args(args)
        .output()
        .unwrap();
    let doc = crate::support::report_at(&report);
    (out, doc, std::fs::read_to_string(&metrics).unwrap())
}

/// Runs backoff with `args`, checks that it exits with `code`, and returns
/// what it said on stderr.
fn exits(args: &[&str], code: i32) -> String {
    exits_with(&[], args, code)
}

/// The same, with the variables `env` set for backoff.
fn exits_with(env: &[(&str, &str)], args: &[&str], code: i32) -> String {
    let out = backoff(args).envs(env.iter().copied()).output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    err
}

#[test]
fn until_output_waits_for_a_health_body_that_changes() {
    let dir = TempDir::new("health");
    std::fs::write(dir.join("health"), "{\"status\":\"DOWN\"}\n").unwrap();
    let server = Files::serve(&dir);
    let url = format!("http://127.0.0.1:{}/health", server.port);
    // Each body passed on as it comes: the curl preset would hold it.
    let mut run = Running::start(command([
        "--poll",
        "100ms",
        "--max-time",
        "60s",
        "--until-output",
        "\"UP\"",
        "--stream-stdout",
        "--",
        "curl",
        "-fsS",
        &url,
    ]));
    // The condition is not met while the body says DOWN.
    let line = run.wait_for("condition not met");
    assert!(
        line.contains("exit 0, condition not met; retrying in 100ms"),
        "{line}"
    );
    std::fs::write(dir.join("health"), "{\"status\":\"UP\"}\n").unwrap();
    run.wait_for("condition met on attempt");
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(0), "{:?}", run.seen);
    // The output streamed: every body reached stdout.
    let bodies: Vec<&str> = run
        .seen
        .iter()
        .filter(|(s, _)| *s == crate::support::Stream::Out)
        .map(|(_, l)| l.as_str())
        .collect();
    assert!(bodies.contains(&"{\"status\":\"DOWN\"}"), "{bodies:?}");
    assert_eq!(bodies.last(), Some(&"{\"status\":\"UP\"}"), "{bodies:?}");
}

#[test]
fn poll_waits_for_a_redis_server_that_starts_later() {
    let port = free_port();
    let mut run = Running::start(command([
        "--poll",
        "100ms",
        "--max-time",
        "60s",
        "--",
        "redis-cli",
        "-p",
        &port.to_string(),
        "ping",
    ]));
    run.wait_for("attempt 1 failed");
    let _redis = Redis::start_on(port, None, false);
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(0), "{:?}", run.seen);
    assert!(run.seen.iter().any(|(_, l)| l == "PONG"), "{:?}", run.seen);
}

#[test]
fn until_output_reads_a_key_that_redis_gets_later() {
    let redis = Redis::start_on(free_port(), None, false);
    let port = redis.port().to_string();
    let cli = |args: &[&str]| {
        let out = Command::new("redis-cli")
            .args(["-p", &port])
            .args(args)
            .output()
            .expect("redis-cli runs");
        assert!(out.status.success());
    };
    let mut run = Running::start(command([
        "--poll",
        "50ms",
        "--max-time",
        "60s",
        "--until-output",
        "^ready$",
        "--",
        "redis-cli",
        "-p",
        &port,
        "get",
        "state",
    ]));
    run.wait_for("condition not met");
    cli(&["set", "state", "starting"]);
    run.wait_for_lines("condition not met", 3);
    cli(&["set", "state", "ready"]);
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(0), "{:?}", run.seen);
    assert!(run.stderr().iter().any(|l| l.contains("condition met")));
}

#[test]
fn an_unmet_condition_is_retried_and_ends_with_exit_1() {
    let out = backoff([
        "--delays",
        "1ms",
        "--jitter",
        "none",
        "--attempts",
        "3",
        "--until-output",
        "READY",
        "--",
        "echo",
        "waiting",
    ])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "waiting\n".repeat(3));
    let err = stderr(&out);
    assert!(
        err.contains("backoff: attempt 1/3 exit 0, condition not met; retrying in 1ms"),
        "{err}"
    );
    assert!(err.contains("giving up after 3 attempts in"), "{err}");
    // Any of several patterns meets it, on stdout or stderr.
    let out = backoff([
        "--until-output",
        "nope",
        "--until-output",
        "READY",
        "--",
        "sh",
        "-c",
        "echo READY >&2",
    ])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // A failing exit is a failure, not unmet.
    let err = exits(
        &[
            "--attempts",
            "1",
            "--until-output",
            "x",
            "--",
            "sh",
            "-c",
            "echo x; exit 3",
        ],
        3,
    );
    assert!(err.contains("failed (exit 3)"));
}

#[test]
fn unmet_is_a_word_of_the_rules() {
    let err = exits(
        &["--stop-on", "unmet", "--until-output", "x", "--", "true"],
        1,
    );
    assert!(
        err.contains("exit 0, condition not met; not retrying: unmet matches --stop-on"),
        "{err}"
    );
    // --retry-on retries only what it names.
    let err = exits(&["--retry-on", "7", "--until-output", "x", "--", "true"], 1);
    assert!(err.contains("is not in --retry-on"), "{}", err);
    let err = exits(
        &[
            "--retry-on",
            "7,unmet",
            "--attempts",
            "2",
            "--delays",
            "1ms",
            "--until-output",
            "x",
            "--",
            "true",
        ],
        1,
    );
    assert!(err.contains("giving up after 2 attempts"), "{}", err);
}

#[test]
fn unmet_shows_in_json_events_the_report_and_the_metrics() {
    let (out, doc, text) = summarised(
        "svc",
        &[
            "--log-format",
            "json",
            "--delays",
            "1ms",
            "--attempts",
            "3",
            "--until-output",
            "UP",
            "--",
            "sh",
            "-c",
            "[ \"$BACKOFF_ATTEMPT\" = 3 ] && echo UP || echo DOWN",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let events = crate::support::events(stderr(&out).as_bytes());
    let ends: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event"] == "attempt_end")
        .collect();
    assert_eq!(ends.len(), 2);
    assert_eq!(
        ends[0]["outcome"],
        serde_json::json!({"kind": "unmet", "code": 0})
    );
    let success = events.iter().find(|e| e["event"] == "success").unwrap();
    assert_eq!(success["condition_met"], true);
    assert_eq!(doc["attempts"][0]["outcome"]["kind"], "unmet");
    assert_eq!(doc["retry_count"], 2);
    assert!(
        text.contains("backoff_attempt_outcomes_total{name=\"svc\",outcome=\"unmet\"} 2\n"),
        "{text}"
    );
    assert!(
        text.contains("backoff_attempt_outcomes_total{name=\"svc\",outcome=\"success\"} 1\n"),
        "{text}"
    );
}

#[test]
fn poll_is_a_fixed_interval_without_a_limit_unless_one_is_given() {
    // --attempts limits it; every delay is the interval exactly.
    let err = exits(
        &["-v", "--poll", "20ms", "--attempts", "3", "--", "false"],
        1,
    );
    assert_eq!(
        err.matches("retrying in 20ms (bound 20ms)").count(),
        2,
        "{err}"
    );
    // Without a limit on the command line it polls until the deadline, even
    // with a retry limit in the environment. Attempts start at 0, 0.7 and
    // 1.4s; the next, at 2.1s, would pass the deadline, long after the last
    // one ended (a deadline that cut an attempt short would exit 124).
    let err = exits_with(
        &[("BACKOFF_MAX_RETRIES", "1")],
        &["--poll", "700ms", "--max-time", "2s", "--", "false"],
        1,
    );
    assert!(err.contains("attempt 3 failed"), "{err}");
    assert!(err.contains("would pass --max-time 2.00s"), "{err}");
    // A jitter given on the command line applies.
    let out = backoff([
        "-v",
        "--poll",
        "1s",
        "--jitter",
        "full",
        "--attempts",
        "2",
        "--seed",
        "1",
        "--",
        "false",
    ])
    .output()
    .unwrap();
    let err = stderr(&out);
    assert!(
        err.contains("(bound 1.00s)") && !err.contains("retrying in 1.00s"),
        "{err}"
    );
}

#[test]
fn until_failure_runs_until_the_first_failure_and_exits_with_it() {
    let err = exits(
        &[
            "--until-failure",
            "--delays",
            "1ms",
            "--",
            "sh",
            "-c",
            "[ \"$BACKOFF_ATTEMPT\" -lt 4 ] || exit 3",
        ],
        3,
    );
    assert!(
        err.contains("backoff: run 4 failed (exit 3) after 3 successes in "),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    // All N runs succeed: exit 0.
    let err = exits(
        &[
            "--until-failure",
            "5",
            "--delays",
            "1ms",
            "-v",
            "--",
            "true",
        ],
        0,
    );
    assert!(err.contains("run 4/5 succeeded after"), "{err}");
    assert!(err.contains("no failure: 5 runs succeeded in"), "{err}");
    // A timeout is a failure too.
    let err = exits(
        &["--until-failure", "--timeout", "200ms", "--", "sleep", "30"],
        124,
    );
    assert!(err.contains("run 1 failed (timeout) after 0 successes"));
}

#[test]
fn until_failure_counts_runs_in_the_report_and_metrics() {
    let (out, doc, text) = summarised(
        "flaky",
        &[
            "--until-failure",
            "--delays",
            "1ms",
            "--",
            "sh",
            "-c",
            "[ \"$BACKOFF_ATTEMPT\" -lt 6 ]",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(doc["reason"], "failure_found");
    assert_eq!(doc["success_count"], 5);
    assert_eq!(
        doc["retry_count"], 0,
        "runs after a success are not retries"
    );
    assert_eq!(doc["attempts"].as_array().unwrap().len(), 6);
    assert!(
        text.contains("backoff_last_successes{name=\"flaky\"} 5\n"),
        "{text}"
    );
    assert!(
        text.contains("backoff_last_attempts{name=\"flaky\"} 6\n"),
        "{text}"
    );
}

#[test]
fn until_failure_ends_at_the_deadline_without_a_finding() {
    // Runs at 0, 0.7 and 1.4s; the next, at 2.1s, would pass the deadline,
    // long after the last one ended.
    let out = backoff([
        "--until-failure",
        "--poll",
        "700ms",
        "--max-time",
        "2s",
        "--",
        "true",
    ])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the next would pass --max-time"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn until_failure_refuses_what_it_cannot_mean() {
    for args in [
        &["--until-failure", "--max-retries", "3", "--", "true"][..],
        &["--until-failure", "--attempts", "3", "--", "true"],
        &["--until-failure", "--forever", "--", "true"],
        &["--until-failure", "--consecutive", "2", "--", "true"],
        &["--until-failure", "0", "--", "true"],
        &["--until-failure", "make", "test"],
    ] {
        let err = exits(args, 125);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
    let out = backoff(["--until-failure", "make", "test"])
        .output()
        .unwrap();
    assert!(
        stderr(&out).contains("put '--' before the command"),
        "{}",
        stderr(&out)
    );
    // A fleet's retry limit in the environment does not stand in the way.
    exits_with(
        &[("BACKOFF_MAX_RETRIES", "3")],
        &["--until-failure", "2", "--", "true"],
        0,
    );
}

#[test]
fn consecutive_needs_a_streak_and_a_failure_resets_it() {
    let err = exits(
        &[
            "--consecutive",
            "3",
            "--delays",
            "1ms",
            "--",
            "sh",
            "-c",
            "[ \"$BACKOFF_ATTEMPT\" != 2 ]",
        ],
        0,
    );
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines[0].starts_with("backoff: attempt 1 succeeded (1 of 3 in a row); next in"),
        "{err}"
    );
    assert!(
        lines[1].starts_with("backoff: attempt 2 failed (exit 1)"),
        "{err}"
    );
    assert!(
        lines[2].starts_with("backoff: attempt 3 succeeded (1 of 3 in a row)"),
        "{err}"
    );
    assert!(
        lines[4].starts_with("backoff: 3 successes in a row on attempt 5; 5 attempts in"),
        "{err}"
    );
    // The deadline before the streak is complete: no success. Attempts at
    // 0, 0.7 and 1.4s; the next would start after the deadline.
    let err = exits(
        &[
            "--consecutive",
            "5",
            "--poll",
            "700ms",
            "--max-time",
            "2s",
            "--",
            "true",
        ],
        1,
    );
    assert!(err.contains("successes in a row"), "{}", err);
    assert!(err.contains("of 5 successes in a row"), "{}", err);
}

#[test]
fn explicit_delays_are_taken_in_order_and_the_last_repeats() {
    let out = backoff([
        "-v",
        "--delays",
        "10ms,30ms",
        "--jitter",
        "none",
        "--attempts",
        "4",
        "--",
        "false",
    ])
    .output()
    .unwrap();
    let err = stderr(&out);
    assert_eq!(
        delays(&err),
        [
            "10ms (bound 10ms)",
            "30ms (bound 30ms)",
            "30ms (bound 30ms)"
        ],
        "{err}"
    );
    // Jitter draws below each bound.
    let out = backoff(["schedule", "--delays", "1s,5s,30s", "--format", "csv"])
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&out.stdout);
    let bounds: Vec<&str> = csv
        .lines()
        .skip(1)
        .take(4)
        .map(|l| l.split(',').nth(1).unwrap())
        .collect();
    assert_eq!(bounds, ["1", "5", "30", "30"], "{csv}");
    let out = backoff(["schedule", "--delays", "1s,5s", "--format", "json"])
        .output()
        .unwrap();
    let doc = crate::support::json_of(crate::schema::Doc::Schedule, &out.stdout);
    assert_eq!(
        doc["policy"]["bounds_seconds"],
        serde_json::json!([1.0, 5.0])
    );
}

#[test]
fn delays_refuse_the_formulas_flags_and_bad_lists() {
    for args in [
        &["--delays", "1s", "--base", "1s", "--", "true"][..],
        &["--delays", "1s", "--cap", "1s", "--", "true"],
        &["--delays", "1s", "--factor", "3", "--", "true"],
        &["--delays", "1s", "--poll", "1s", "--", "true"],
        &["--delays", "1s", "--jitter", "decorrelated", "--", "true"],
        &["--delays", "1s,,2s", "--", "true"],
        &["--delays", "", "--", "true"],
        &["--delays", "1s,x", "--", "true"],
        &["--delays", "0s", "--", "true"],
        &["--poll", "1s", "--base", "1s", "--", "true"],
        &["--poll", "0s", "--jitter", "full", "--", "true"],
        &["--reset-after", "0s", "--", "true"],
        &["--consecutive", "0", "--", "true"],
    ] {
        let err = exits(args, 125);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // The environment's formula gives way to --delays.
    exits_with(
        &[("BACKOFF_BASE", "5s")],
        &["--delays", "1ms", "--attempts", "2", "--", "false"],
        1,
    );
}

#[test]
fn a_long_attempt_resets_the_retry_count_and_the_delays() {
    let err = exits(
        &[
            "--reset-after",
            "1s",
            "--max-retries",
            "2",
            "--jitter",
            "none",
            "--delays",
            "10ms,20ms",
            "-v",
            "--",
            "sh",
            "-c",
            "[ \"$BACKOFF_ATTEMPT\" = 3 ] && sleep 1.5; exit 1",
        ],
        1,
    );
    assert!(
        err.contains("backoff: attempt 3 ran ")
            && err.contains(
                " before failing, at least --reset-after 1.00s: the retry count and delays start over"
            ),
        "{err}"
    );
    // Two retries before the reset, two after it.
    assert!(err.contains("giving up after 5 attempts"), "{err}");
    assert_eq!(
        delays(&err),
        [
            "10ms (bound 10ms)",
            "20ms (bound 20ms)",
            "10ms (bound 10ms)",
            "20ms (bound 20ms)"
        ],
        "{err}"
    );
}

#[test]
fn every_run_of_a_hunt_is_recorded_the_last_one_too() {
    let (out, doc, text) = summarised(
        "all",
        &[
            "--log-format",
            "json",
            "--until-failure",
            "3",
            "--delays",
            "1ms",
            "--",
            "true",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let runs = doc["attempts"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    for run in runs {
        assert_eq!(run["outcome"]["kind"], "exit", "{doc}");
        assert!(run["duration_seconds"].is_number(), "{doc}");
    }
    assert_eq!(doc["success_count"], 3);
    assert!(
        text.contains("backoff_attempt_outcomes_total{name=\"all\",outcome=\"success\"} 3\n"),
        "{text}"
    );
    let events = crate::support::events(&out.stderr);
    let last = events.last().unwrap();
    assert_eq!(last["event"], "no_failure");
    assert_eq!(last["attempt"], 3);
    assert_eq!(last["outcome"]["kind"], "exit");
}

#[test]
fn a_hunt_cut_short_by_max_time_found_no_failure() {
    let err = exits(
        &[
            "--until-failure",
            "--delays",
            "1ms",
            "--max-time",
            "1s",
            "--",
            "sleep",
            "5",
        ],
        0,
    );
    assert!(err.contains("no failure: 0 runs succeeded"), "{err}");
    assert!(
        err.contains("no failure: ") && err.contains("--max-time cut run "),
        "{err}"
    );
    // A run that --timeout ends is a finding still.
    let err = exits(
        &[
            "--until-failure",
            "--timeout",
            "200ms",
            "--max-time",
            "30s",
            "--",
            "sleep",
            "5",
        ],
        124,
    );
    assert!(err.contains("run 1 failed (timeout)"), "{err}");
}

#[test]
fn whatever_counts_as_success_needs_the_line_too() {
    let err = exits(
        &[
            "--success-on",
            "sig:TERM",
            "--until-output",
            "READY",
            "--attempts",
            "1",
            "--",
            "sh",
            "-c",
            "kill $$",
        ],
        1,
    );
    assert!(
        err.contains("attempt 1/1 signal TERM, condition not met"),
        "{err}"
    );
    assert!(!err.contains("condition met"), "{err}");
}

#[test]
fn retry_if_output_leaves_an_unmet_condition_retried() {
    let err = exits(
        &[
            "--retry-if-output",
            "busy",
            "--until-output",
            "^READY$",
            "--delays",
            "1ms",
            "--",
            "sh",
            "-c",
            "[ \"$BACKOFF_ATTEMPT\" -ge 3 ] && echo READY; exit 0",
        ],
        0,
    );
    assert!(err.contains("condition met on attempt 3"), "{err}");
    // A failure that prints no such line stops, and the line says why.
    let err = exits(&["--retry-if-output", "busy", "--", "false"], 1);
    assert!(
        err.contains("exit 1, and no line matches --retry-if-output"),
        "{err}"
    );
}

#[test]
fn a_reset_is_told_only_when_a_retry_follows() {
    let err = exits(
        &[
            "--reset-after",
            "300ms",
            "--stop-on",
            "3",
            "--delays",
            "1ms",
            "--",
            "sh",
            "-c",
            "[ \"$BACKOFF_ATTEMPT\" = 2 ] && { sleep 0.5; exit 3; }; exit 1",
        ],
        3,
    );
    assert!(!err.contains("start over"), "{err}");
    assert!(err.contains("matches --stop-on"), "{err}");
}

#[test]
fn a_fleets_decorrelated_jitter_gives_way_to_explicit_delays() {
    exits_with(
        &[("BACKOFF_JITTER", "decorrelated")],
        &["--delays", "1ms", "--attempts", "2", "--", "false"],
        1,
    );
}
