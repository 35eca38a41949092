//! Retries that understand servers: `--preset curl` against a real curl and
//! a real HTTP server, `Retry-After`, output rules.

use std::os::unix::process::CommandExt;
use std::time::{Duration, SystemTime};

use predicates::prelude::*;

use crate::http::{Reply, Server, refused_url};
use crate::support::{PATIENCE, Running, backoff, command};

fn curl(url: &str) -> Vec<String> {
    ["curl", "-fsS", "-D", "/dev/stderr", url]
        .map(str::to_owned)
        .to_vec()
}

#[test]
fn retry_after_503_twice_then_200_makes_three_requests_and_prints_the_body_once() {
    let server = Server::start(vec![
        Reply::new(503, "busy\n").header("Retry-After", "1"),
        Reply::new(503, "busy\n").header("Retry-After", "1"),
        Reply::new(200, "the body\n"),
    ]);
    let out = backoff(["--preset", "curl", "--"])
        .args(curl(&server.url))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "the body\n");
    let times = server.requests();
    assert_eq!(times.len(), 3);
    for pair in times.windows(2) {
        assert!(
            pair[1] - pair[0] >= Duration::from_secs(1),
            "a retry came early"
        );
    }
    // The hint is jittered upwards, by at most 20% (0.2 s of 1 s).
    let waits: Vec<&str> = stderr
        .lines()
        .filter(|l| l.ends_with("(Retry-After from the server)"))
        .filter_map(|l| l.split("retrying in ").nth(1))
        .collect();
    assert_eq!(waits.len(), 2, "{stderr}");
    for w in waits {
        let secs: f64 = w.split('s').next().unwrap().parse().unwrap();
        assert!((1.0..=1.2).contains(&secs), "{stderr}");
    }
}

#[test]
fn a_404_is_not_retried_and_exits_22() {
    let server = Server::start(vec![Reply::new(404, "no\n")]);
    backoff(["--preset", "curl", "--base", "1ms", "--"])
        .args(curl(&server.url))
        .assert()
        .code(22)
        .stderr(predicate::str::contains("HTTP 404 is not worth retrying"));
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn the_404_is_read_from_curls_fail_line_without_headers() {
    let server = Server::start(vec![Reply::new(404, "no\n")]);
    backoff(["--preset", "curl", "--base", "1ms", "--", "curl", "-fsS"])
        .arg(&server.url)
        .assert()
        .code(22);
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_429_and_a_500_are_retried() {
    let server = Server::start(vec![
        Reply::new(429, ""),
        Reply::new(500, ""),
        Reply::new(200, "ok\n"),
    ]);
    backoff(["--preset", "curl", "--base", "1ms", "--", "curl", "-fsS"])
        .arg(&server.url)
        .assert()
        .success()
        .stdout("ok\n");
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn a_refused_connection_is_retried() {
    backoff([
        "--preset",
        "curl",
        "--base",
        "1ms",
        "--max-retries",
        "2",
        "--",
        "curl",
        "-fsS",
    ])
    .arg(refused_url())
    .assert()
    .code(7)
    .stderr(predicate::str::contains("attempt 3/3 failed (exit 7)"));
}

#[test]
fn an_unusable_url_is_not_retried() {
    backoff([
        "--preset", "curl", "--base", "1ms", "--", "curl", "-fsS", "nope://x",
    ])
    .assert()
    .code(1)
    .stderr(predicate::str::contains("not transient for --preset curl"));
}

#[test]
fn retry_after_as_an_http_date_is_honoured() {
    // HTTP dates have whole seconds: 3 s ahead is at least 2 s once rounded.
    let when = SystemTime::now() + Duration::from_secs(3);
    let server = Server::start(vec![
        Reply::new(503, "").header("Retry-After", &httpdate::fmt_http_date(when)),
        Reply::new(200, "ok\n"),
    ]);
    backoff(["--preset", "curl", "--"])
        .args(curl(&server.url))
        .assert()
        .success();
    let times = server.requests();
    assert_eq!(times.len(), 2);
    // The date has a resolution of one second.
    assert!(times[1] - times[0] >= Duration::from_secs(1));
}

#[test]
fn a_retry_after_beyond_max_time_gives_up_at_once() {
    let server = Server::start(vec![Reply::new(503, "").header("Retry-After", "60")]);
    let mut cmd = command(["--preset", "curl", "--max-time", "10s", "--"]);
    cmd.args(curl(&server.url));
    let mut run = Running::start(cmd);
    let (status, took) = run.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(22));
    assert!(took < Duration::from_secs(10), "waited: {took:?}");
    assert!(
        run.stderr().iter().any(
            |l| l.contains("the next retry in 1m") && l.contains("would pass --max-time 10.0s")
        ),
        "{:?}",
        run.seen
    );
}

#[test]
fn a_retry_after_pattern_finds_the_hint_elsewhere() {
    backoff([
        "--retry-after-pattern",
        "come back in ([0-9]+) s",
        "--retry-after-jitter",
        "0",
        "--base",
        "1ms",
        "--max-retries",
        "1",
        "--",
        "sh",
        "-c",
        "echo 'come back in 1 s'; exit 1",
    ])
    .assert()
    .code(1)
    .stderr(predicate::str::contains(
        "retrying in 1.00s (the wait --retry-after-pattern found)",
    ));
    backoff(["--retry-after-pattern", "no group", "--", "true"])
        .assert()
        .code(125)
        .stderr(predicate::str::contains("'--retry-after-pattern'"));
}

#[test]
fn output_rules_stop_beats_retry_and_both_see_stdout_and_stderr() {
    backoff([
        "--retry-if-output",
        "transient",
        "--stop-if-output",
        "^fatal",
        "--base",
        "1ms",
        "--",
        "sh",
        "-c",
        "echo transient; echo 'fatal: disk' >&2; exit 1",
    ])
    .assert()
    .code(1)
    .stdout("transient\n")
    .stderr(predicate::str::contains("fatal: disk"))
    .stderr(predicate::str::contains(
        "its output matches --stop-if-output",
    ));
    backoff([
        "--retry-if-output",
        "transient",
        "--base",
        "1ms",
        "--max-retries",
        "2",
        "--",
        "sh",
        "-c",
        "echo transient >&2; exit 1",
    ])
    .assert()
    .code(1)
    .stderr(predicate::str::contains("attempt 3/3 failed"));
    // Without a match, --retry-if-output alone does not retry.
    backoff([
        "--retry-if-output",
        "transient",
        "--base",
        "1ms",
        "--",
        "sh",
        "-c",
        "exit 1",
    ])
    .assert()
    .code(1)
    .stderr(predicate::str::contains("attempt 1/7 failed"));
    backoff(["--retry-if-output", "(", "--", "true"])
        .assert()
        .code(125)
        .stderr(predicate::str::contains("'--retry-if-output'"));
}

#[test]
fn output_reaches_the_user_live_while_rules_watch_it() {
    let cmd = command([
        "--retry-if-output",
        "never",
        "--",
        "sh",
        "-c",
        "echo first-line; exec sleep 30",
    ]);
    let mut run = Running::start(cmd);
    run.wait_for("first-line");
    run.signal(libc::SIGTERM);
    run.wait_exit(PATIENCE);
}

#[test]
fn binary_output_and_a_last_line_without_newline_pass_unchanged() {
    let out = backoff([
        "--retry-if-output",
        "zzz",
        "--",
        "printf",
        "a\\000b\\377\\nno-newline",
    ])
    .output()
    .unwrap();
    assert_eq!(out.stdout, b"a\0b\xff\nno-newline");
}

#[test]
fn output_rules_see_crlf_lines_and_block_anchors_like_single_lines() {
    backoff([
        "--retry-if-output",
        "oops$",
        "--max-retries",
        "1",
        "--base",
        "1ms",
        "--",
        "sh",
        "-c",
        "printf 'oops\\r\\n'; exit 1",
    ])
    .assert()
    .code(1)
    .stderr(predicate::str::contains("attempt 2/2 failed"));
    backoff([
        "--retry-if-output",
        "\\Aoops",
        "--max-retries",
        "1",
        "--base",
        "1ms",
        "--",
        "sh",
        "-c",
        "printf 'first\\noops\\n'; exit 1",
    ])
    .assert()
    .code(1)
    .stderr(predicate::str::contains("attempt 2/2 failed"));
}

#[test]
fn output_written_just_after_the_command_exits_still_arrives_after_a_timeout_passed() {
    backoff([
        "--timeout",
        "150ms",
        "--stop-if-output",
        "zzz",
        "--max-retries",
        "0",
        "--",
        "sh",
        "-c",
        "(sleep 0.2; echo late) & exit 1",
    ])
    .assert()
    .code(1)
    .stdout("late\n");
}

#[test]
fn output_rules_too_large_to_search_together_are_matched_line_by_line() {
    // Together some 10 MiB compiled, past what is searched over many
    // lines at once: each line is matched on its own.
    let mut cmd = backoff(["--retry-if-output", "boom", "--base", "1ms"]);
    for n in [100, 120] {
        cmd.args(["--stop-if-output", &format!(r"^\w{{{n}}}$")]);
    }
    let long = "é".repeat(120);
    cmd.args(["--", "sh", "-c", &format!("echo boom; echo {long}; exit 3")])
        .assert()
        .code(3)
        .stderr(predicate::str::contains(
            "its output matches --stop-if-output",
        ));
}

#[test]
fn a_reader_that_stops_reading_does_not_hold_up_signals() {
    use std::io::BufRead;
    use std::os::fd::AsRawFd;
    use std::os::unix::process::ExitStatusExt;
    let mut child = command([
        "--retry-if-output",
        "zzz",
        "--",
        "sh",
        "-c",
        "echo started >&2; exec yes",
    ])
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert_eq!(line, "started\n");
    // Wait until the pipe to this test, which never reads it, is full.
    let deadline = std::time::Instant::now() + crate::support::PATIENCE;
    loop {
        let mut unread: libc::c_int = 0;
        // SAFETY: FIONREAD writes the count of unread bytes into `unread`.
        unsafe { libc::ioctl(stdout.as_raw_fd(), libc::FIONREAD, &raw mut unread) };
        if unread >= 65536 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the pipe never filled"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let pid = i32::try_from(child.id()).unwrap();
    crate::support::send(pid, libc::SIGTERM);
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert_eq!(status.signal(), Some(libc::SIGTERM));
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "backoff is stuck writing"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(stdout);
}

#[test]
fn a_stop_rule_matches_across_the_old_64_kib_piece_boundary_of_a_long_line() {
    // "FATAL" straddles byte 65536 of a 200 KiB line, and again the 1 MiB
    // window's end of a 3 MiB one.
    for (before, total) in [(65_533, 200 * 1024), (1024 * 1024 - 2, 3 * 1024 * 1024)] {
        let script = format!(
            "head -c {before} /dev/zero | tr '\\0' x; printf FATAL; \
             head -c {} /dev/zero | tr '\\0' y; echo; exit 1",
            total - before - 5
        );
        backoff([
            "--stop-if-output",
            "FATAL",
            "--max-retries",
            "3",
            "--base",
            "1ms",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("attempt 1/4 failed (exit 1)"))
        .stderr(predicate::str::contains(
            "its output matches --stop-if-output",
        ));
    }
}

#[test]
fn a_hint_above_retry_after_max_ends_the_run_at_once_with_the_commands_status() {
    let server = Server::start(vec![Reply::new(503, "").header("Retry-After", "99999999")]);
    let mut cmd = command(["--preset", "curl", "--"]);
    cmd.args(curl(&server.url));
    let mut run = Running::start(cmd);
    let (status, took) = run.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(22), "{:?}", run.seen);
    assert!(took < Duration::from_secs(10), "waited: {took:?}");
    assert_eq!(server.requests().len(), 1);
    assert!(
        run.stderr()
            .iter()
            .any(|l| l.contains("the server asks to wait 3years")
                && l.contains("more than --retry-after-max 5m")),
        "{:?}",
        run.seen
    );
    // The ceiling comes from the environment too, and a hint below it is
    // obeyed.
    let server = Server::start(vec![
        Reply::new(503, "").header("Retry-After", "2"),
        Reply::new(200, "ok\n"),
    ]);
    backoff(["--preset", "curl", "--"])
        .args(curl(&server.url))
        .env("BACKOFF_RETRY_AFTER_MAX", "1s")
        .assert()
        .code(22)
        .stderr(predicate::str::contains(
            "more than --retry-after-max 1.00s",
        ));
    backoff(["--preset", "curl", "--retry-after-max", "3s", "--"])
        .args(curl(&server.url))
        .assert()
        .success();
}

#[test]
fn a_hundred_clients_told_the_same_retry_after_spread_over_its_jitter_window() {
    // Each run gives up before sleeping (the wait would pass --max-time)
    // and says the wait it drew; 100 seeds stand for 100 clients.
    let waits: Vec<f64> = (0..100)
        .map(|seed| {
            let out = backoff(["--retry-after", "--max-time", "200ms", "--seed"])
                .arg(seed.to_string())
                .args(["--", "sh", "-c", "echo 'Retry-After: 10'; exit 1"])
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr).into_owned();
            let at = err.find("the next retry in ").expect("the wait is said") + 18;
            let secs = err[at..].split('s').next().unwrap();
            secs.parse().unwrap_or_else(|_| panic!("{err}"))
        })
        .collect();
    let (lo, hi) = waits
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), &w| (lo.min(w), hi.max(w)));
    // Shown to 0.1 s: a wait just under 12 s reads 12.0.
    assert!(
        lo >= 10.0 && hi <= 12.0,
        "every wait in [10s, 12s): {waits:?}"
    );
    // Spread over the window, not one second: shown to 0.1 s, the 100
    // clients come back at many different moments.
    let mut moments: Vec<String> = waits.iter().map(|w| format!("{w:.1}")).collect();
    moments.sort();
    moments.dedup();
    assert!(hi - lo > 1.5 && moments.len() >= 15, "{waits:?}");
    // Without jitter, all at once.
    let out = backoff([
        "--retry-after",
        "--retry-after-jitter",
        "0",
        "--max-time",
        "200ms",
    ])
    .args(["--", "sh", "-c", "echo 'Retry-After: 10'; exit 1"])
    .output()
    .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("the next retry in 10.0s"));
}

/// The Unix time `secs` seconds from now, in whole seconds.
fn epoch_in(secs: u64) -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + secs
}

#[test]
fn a_403_with_no_request_left_is_retried_at_the_reset_and_any_other_403_stops() {
    // GitHub's rule, with the reset as a Unix time: far enough ahead that
    // the first attempt ends before it on a loaded machine.
    let reset = epoch_in(4);
    // The reset on the monotonic clock of the server's request times.
    let (wall, mono) = (SystemTime::now(), std::time::Instant::now());
    let reset_at = mono
        + (SystemTime::UNIX_EPOCH + Duration::from_secs(reset))
            .duration_since(wall)
            .unwrap_or_default();
    let server = Server::start(vec![
        Reply::new(403, "rate limited\n")
            .header("x-ratelimit-remaining", "0")
            .header("x-ratelimit-reset", &reset.to_string()),
        Reply::new(200, "ok\n"),
    ]);
    let out = backoff(["--preset", "curl", "--"])
        .args(curl(&server.url))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("(the server's rate-limit reset)"), "{err}");
    let times = server.requests();
    assert_eq!(times.len(), 2);
    // Not before the reset (the clocks are read a few microseconds apart).
    assert!(
        times[1] + Duration::from_millis(20) >= reset_at,
        "came {:?} early",
        reset_at - times[1]
    );
    // Requests left: a 403 is refused access, not a rate limit.
    let server = Server::start(vec![
        Reply::new(403, "no\n")
            .header("x-ratelimit-remaining", "12")
            .header("x-ratelimit-reset", &epoch_in(2).to_string()),
    ]);
    backoff(["--preset", "curl", "--"])
        .args(curl(&server.url))
        .assert()
        .code(22)
        .stderr(predicate::str::contains("HTTP 403 is not worth retrying"));
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn the_ietf_ratelimit_field_gives_the_wait_of_a_429() {
    let server = Server::start(vec![
        Reply::new(429, "slow down\n").header("RateLimit", "\"default\";r=0;t=1"),
        Reply::new(200, "ok\n"),
    ]);
    backoff(["--preset", "curl", "--"])
        .args(curl(&server.url))
        .assert()
        .success()
        .stdout("ok\n");
    let times = server.requests();
    assert_eq!(times.len(), 2);
    assert!(times[1] - times[0] >= Duration::from_secs(1), "came early");
}

#[test]
fn a_unix_time_found_by_a_pattern_is_a_time_not_a_56_year_wait() {
    for value in [epoch_in(1), epoch_in(1) * 1000] {
        backoff([
            "--retry-after-pattern",
            "reset=([0-9]+)",
            "--max-time",
            "1m",
            "--max-retries",
            "1",
            "--",
            "sh",
            "-c",
        ])
        .arg(format!("echo reset={value}; exit 1"))
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("(the wait --retry-after-pattern found)").or(
                // A reset already passed asks for no wait beyond the policy's.
                predicate::str::contains("attempt 2/2 failed"),
            ),
        )
        .stderr(predicate::str::contains("--retry-after-max").not());
    }
}

#[test]
fn a_post_is_not_sent_again_after_an_ambiguous_failure_unless_it_may_be() {
    let post = |url: &str| -> Vec<String> {
        ["curl", "-fsS", "-D", "/dev/stderr", "-d", "order=1", url]
            .map(str::to_owned)
            .to_vec()
    };
    // A 500 may have come after the order was made: stop, and say why.
    let server = Server::start(vec![Reply::new(500, "oops\n"), Reply::new(200, "ok\n")]);
    backoff(["--preset", "curl", "--base", "1ms", "--"])
        .args(post(&server.url))
        .assert()
        .code(22)
        .stderr(predicate::str::contains(
            "is not sent again (--idempotent allows it)",
        ));
    assert_eq!(server.requests().len(), 1);
    // A 503 says the server did not act on it: retried.
    let server = Server::start(vec![Reply::new(503, "busy\n"), Reply::new(200, "ok\n")]);
    backoff(["--preset", "curl", "--base", "1ms", "--"])
        .args(post(&server.url))
        .assert()
        .success()
        .stdout("ok\n");
    assert_eq!(server.requests().len(), 2);
    // So does a refused connection.
    backoff([
        "--preset",
        "curl",
        "--base",
        "1ms",
        "--max-retries",
        "1",
        "--",
    ])
    .args(post(&refused_url()))
    .assert()
    .code(7)
    .stderr(predicate::str::contains("attempt 2/2 failed"));
    // --idempotent, or an Idempotency-Key, allows the retry after a 500.
    for (flags, header) in [
        (&["--idempotent"][..], None),
        (&[][..], Some("Idempotency-Key: 42")),
    ] {
        let server = Server::start(vec![Reply::new(500, "oops\n"), Reply::new(200, "ok\n")]);
        let mut args = post(&server.url);
        if let Some(h) = header {
            args.splice(1..1, ["-H".to_owned(), h.to_owned()]);
        }
        backoff(["--preset", "curl", "--base", "1ms"])
            .args(flags)
            .arg("--")
            .args(args)
            .assert()
            .success()
            .stdout("ok\n");
        assert_eq!(server.requests().len(), 2);
    }
}

#[test]
fn the_curl_preset_puts_exactly_one_complete_body_on_stdout() {
    let script = || {
        vec![
            Reply::new(200, "a body cut short\n").cut(6),
            Reply::new(200, "the whole body\n"),
        ]
    };
    let server = Server::start(script());
    backoff(["--preset", "curl", "--base", "1ms", "--"])
        .args(curl(&server.url))
        .assert()
        .success()
        .stdout("the whole body\n");
    assert_eq!(server.requests().len(), 2);
    // --stream-stdout passes each attempt's body on as it comes.
    let server = Server::start(script());
    backoff(["--preset", "curl", "--stream-stdout", "--base", "1ms", "--"])
        .args(curl(&server.url))
        .assert()
        .success()
        .stdout("a bodythe whole body\n");
}

#[test]
fn the_curl_preset_warns_once_when_curl_runs_without_fail() {
    let server = Server::start(vec![Reply::new(503, "busy\n")]);
    let warning =
        "curl runs without -f (--fail), so an HTTP error exits 0 and is not retried; add -f";
    // Without -f, the 503 "succeeds": the warning says why nothing is retried.
    backoff(["--preset", "curl", "--", "curl", "-sS"])
        .arg(&server.url)
        .assert()
        .success()
        .stderr(predicate::function(|e: &str| {
            e.matches(warning).count() == 1
        }));
    backoff([
        "--preset",
        "curl",
        "--max-retries",
        "0",
        "--",
        "curl",
        "-sSf",
    ])
    .arg(&server.url)
    .assert()
    .code(22)
    .stderr(predicate::str::contains(warning).not());
}

#[test]
fn the_curl_preset_sees_headers_curl_was_not_asked_to_show() {
    let server = Server::start(vec![
        Reply::new(503, "busy\n").header("Retry-After", "1"),
        Reply::new(200, "the body\n"),
    ]);
    let out = backoff(["--preset", "curl", "--", "curl", "-fsS"])
        .arg(&server.url)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "the body\n");
    assert!(err.contains("(Retry-After from the server)"), "{err}");
    // The headers went to backoff's own file, not to the user's streams.
    assert!(!err.contains("Retry-After: 1"), "{err}");
    let times = server.requests();
    assert_eq!(times.len(), 2);
    assert!(times[1] - times[0] >= Duration::from_secs(1), "came early");
}

#[test]
fn hints_and_the_guard_are_in_the_json_events_and_the_run_report() {
    let dir = crate::support::TempDir::new("hint-json");
    let report = dir.join("report.json");
    let server = Server::start(vec![
        Reply::new(503, "busy\n").header("Retry-After", "1"),
        Reply::new(500, "oops\n"),
    ]);
    let out = backoff(["--preset", "curl", "--log-format", "json", "--report"])
        .arg(&report)
        .args(["--", "curl", "-fsS", "-d", "x=1"])
        .arg(&server.url)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(22));
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .inspect(|e| crate::schema::valid(crate::schema::Doc::Event, e))
        .collect();
    let ends: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event"] == "attempt_end")
        .collect();
    assert_eq!(ends.len(), 2, "{events:?}");
    assert_eq!(ends[0]["hint_seconds"], 1.0);
    assert_eq!(ends[0]["hint_source"], "retry-after");
    assert_eq!(ends[0]["delay_from_server"], true);
    assert_eq!(ends[1]["next"], "stopped");
    assert_eq!(ends[1]["stop_reason"], "not_idempotent");
    let doc: serde_json::Value = crate::support::report_at(&report);
    assert_eq!(doc["attempts"][0]["hint_seconds"], 1.0);
    assert_eq!(doc["attempts"][0]["hint_source"], "retry-after");
    assert!(doc["attempts"][1]["hint_seconds"].is_null());
}

#[test]
fn the_wget_preset_retries_what_is_transient_with_the_servers_hint_and_stops_on_the_rest() {
    let wget = |url: &str| -> Vec<String> {
        ["wget", "--tries=1", "-nv", "-S", "-O", "-", url]
            .map(str::to_owned)
            .to_vec()
    };
    let server = Server::start(vec![
        Reply::new(503, "busy\n").header("Retry-After", "1"),
        Reply::new(200, "ok\n"),
    ]);
    let out = backoff(["--preset", "wget", "--"])
        .args(wget(&server.url))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n");
    assert!(err.contains("(Retry-After from the server)"), "{err}");
    let times = server.requests();
    assert_eq!(times.len(), 2);
    assert!(times[1] - times[0] >= Duration::from_secs(1), "came early");
    // A 404 stops at once, seen with or without -S.
    for show in [true, false] {
        let server = Server::start(vec![Reply::new(404, "no\n")]);
        let mut args = wget(&server.url);
        if !show {
            args.retain(|a| a != "-S");
        }
        backoff(["--preset", "wget", "--base", "1ms", "--"])
            .args(args)
            .assert()
            .code(8)
            .stderr(predicate::str::contains("HTTP 404 is not worth retrying"));
        assert_eq!(server.requests().len(), 1);
    }
    // A network failure (exit 4) is retried; a bad option (exit 2) is not.
    backoff([
        "--preset",
        "wget",
        "--base",
        "1ms",
        "--max-retries",
        "1",
        "--",
    ])
    .args(wget(&refused_url()))
    .assert()
    .code(4)
    .stderr(predicate::str::contains("attempt 2/2 failed"));
    backoff([
        "--preset",
        "wget",
        "--base",
        "1ms",
        "--",
        "wget",
        "--no-such-option",
    ])
    .assert()
    .code(2)
    .stderr(predicate::str::contains("not transient for --preset wget"));
}

#[test]
fn the_git_preset_retries_what_may_heal_and_stops_on_what_does_not() {
    let dir = crate::support::TempDir::new("git-preset");
    let clone = |url: &str, into: &str, retries: &str| {
        let mut cmd = backoff(["--preset", "git", "--base", "1ms", "--max-retries", retries]);
        cmd.args(["--", "git", "clone", "-q", url])
            .arg(dir.join(into))
            .env("GIT_TERMINAL_PROMPT", "0");
        cmd
    };
    // No server: the connection is refused, which may heal.
    let port = refused_url()
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches('/')
        .to_owned();
    clone(&format!("git://127.0.0.1:{port}/x.git"), "a", "1")
        .assert()
        .code(128)
        .stderr(predicate::str::contains("attempt 2/2 failed"));
    // A smart-HTTP server that answers 503: retried.
    let server = Server::start(vec![Reply::new(503, "busy\n")]);
    clone(&server.url, "b", "1")
        .assert()
        .code(128)
        .stderr(predicate::str::contains("attempt 2/2 failed"));
    assert_eq!(server.requests().len(), 2);
    // No such repository: stops at once.
    let server = Server::start(vec![Reply::new(404, "no\n")]);
    clone(&server.url, "c", "6")
        .assert()
        .code(128)
        .stderr(predicate::str::contains("not transient for --preset git"));
    assert_eq!(server.requests().len(), 1);
    // And a clone that works is a success.
    let origin = dir.join("origin");
    let init = std::process::Command::new("git")
        .args(["init", "-q", "--bare"])
        .arg(&origin)
        .status()
        .unwrap();
    assert!(init.success());
    clone(&format!("file://{}", origin.display()), "d", "0")
        .assert()
        .success();
}

#[test]
fn the_git_preset_against_git_daemon_clones_what_exists_and_stops_on_what_does_not() {
    let dir = crate::support::TempDir::new("git-daemon");
    let base = dir.join("repos");
    std::fs::create_dir_all(&base).unwrap();
    let init = std::process::Command::new("git")
        .args(["init", "-q", "--bare"])
        .arg(base.join("there.git"))
        .status()
        .unwrap();
    assert!(init.success());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut daemon = std::process::Command::new("git")
        .args([
            "daemon",
            "--reuseaddr",
            "--export-all",
            "--listen=127.0.0.1",
        ])
        .arg(format!("--port={port}"))
        .arg(format!("--base-path={}", base.display()))
        .arg(&base)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        // `git daemon` runs git-daemon as a child: the group goes at the end.
        .process_group(0)
        .spawn()
        .expect("git daemon starts");
    crate::support::eventually("git daemon to listen", || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let clone = |repo: &str, into: &str| {
        let mut cmd = backoff(["--preset", "git", "--base", "1ms", "--"]);
        cmd.args(["git", "clone", "-q"])
            .arg(format!("git://127.0.0.1:{port}/{repo}"))
            .arg(dir.join(into))
            .env("GIT_TERMINAL_PROMPT", "0");
        cmd
    };
    clone("there.git", "a").assert().success();
    clone("missing.git", "b")
        .assert()
        .code(128)
        .stderr(predicate::str::contains("not transient for --preset git"))
        .stderr(predicate::str::contains("attempt 2/").not());
    crate::support::send(-i32::try_from(daemon.id()).unwrap(), libc::SIGKILL);
    let _ = daemon.wait();
}

/// Runs `backoff --preset curl` (or wget) with `flags` and hints taken
/// whole (no jitter), 20 s to run in and one retry at most, on `program`
/// and its `args` then the server's URL; returns the exit code, what
/// backoff said, and how many requests the server got.
fn run_against(script: Vec<Reply>, preset: &str, program: &[&str]) -> (Option<i32>, String, usize) {
    let server = Server::start(script);
    let out = backoff([
        "--preset",
        preset,
        "--retry-after-jitter",
        "0",
        "--max-time",
        "20s",
        "--max-retries",
        "1",
        "--base",
        "1ms",
        "--",
    ])
    .args(program)
    .arg(&server.url)
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), err, server.requests().len())
}

#[test]
fn a_retry_after_on_a_redirect_hop_does_not_apply_to_the_final_response() {
    // A 302 that asks for 60 s, to a 503 that asks for nothing: the policy's
    // delay, not the redirect's, comes before the retry that gets the 200.
    let script = || {
        vec![
            Reply::new(302, "")
                .header("Location", "/again")
                .header("Retry-After", "60")
                .header("X-RateLimit-Remaining", "0")
                .header("X-RateLimit-Reset", "60"),
            Reply::new(503, "busy\n"),
            Reply::new(200, "ok\n"),
        ]
    };
    for program in [
        &["curl", "-fsSL"][..],
        &["curl", "-fsSL", "-D", "/dev/stderr"],
        &["curl", "-fsSLi"],
        &["curl", "-fsSLv"],
    ] {
        let (code, err, requests) = run_against(script(), "curl", program);
        assert_eq!(code, Some(0), "{program:?}: {err}");
        assert!(!err.contains("from the server"), "{program:?}: {err}");
        assert_eq!(requests, 3, "{program:?}");
    }
    let (code, err, requests) = run_against(
        script(),
        "wget",
        &["wget", "--tries=1", "-nv", "-S", "-O", "-"],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("from the server"), "{err}");
    assert_eq!(requests, 3);
}

#[test]
fn a_body_that_curl_prints_with_fail_with_body_is_not_read_as_headers() {
    let script = || {
        vec![
            Reply::new(503, "Retry-After: 3600\nRateLimit: \"a\";r=0;t=3600\n"),
            Reply::new(200, "ok\n"),
        ]
    };
    for program in [
        &["curl", "-sS", "--fail-with-body"][..],
        &["curl", "-sS", "--fail-with-body", "-D", "/dev/stderr"],
        &["curl", "-sSi", "--fail-with-body"],
    ] {
        let (code, err, requests) = run_against(script(), "curl", program);
        assert_eq!(code, Some(0), "{program:?}: {err}");
        assert!(!err.contains("from the server"), "{program:?}: {err}");
        assert_eq!(requests, 2, "{program:?}");
    }
}

#[test]
fn a_retry_after_behind_more_than_256_kib_of_headers_is_read() {
    // 280 KB of headers (curl takes up to 300 KB), then the hint.
    let mut busy = Reply::new(503, "busy\n");
    for n in 0..28 {
        busy = busy.header(&format!("X-Filler-{n}"), &"f".repeat(10_000));
    }
    let busy = busy.header("Retry-After", "1");
    for program in [&["curl", "-fsS"][..], &["curl", "-fsSL"]] {
        let (code, err, requests) =
            run_against(vec![busy.clone(), Reply::new(200, "ok\n")], "curl", program);
        assert_eq!(code, Some(0), "{program:?}: {err}");
        assert!(
            err.contains("retrying in 1.00s (Retry-After from the server)"),
            "{program:?}: {err}"
        );
        assert_eq!(requests, 2, "{program:?}");
    }
}

#[test]
fn rate_limits_in_every_form_ask_for_the_longest_wait_of_a_policy_with_nothing_left() {
    let micros = epoch_in(90) * 1_000_000;
    let cases: Vec<(u16, Vec<(&str, String)>)> = vec![
        // Two policies: the one with nothing left, not the last.
        (
            429,
            vec![("RateLimit", "\"a\";r=0;t=60, \"b\";r=5;t=1".to_owned())],
        ),
        (
            429,
            vec![("RateLimit", "\"a\";r=0;t=60, \"b\";r=0;t=2".to_owned())],
        ),
        (
            429,
            vec![
                ("RateLimit-Policy", "\"a\";q=10;w=60".to_owned()),
                ("RateLimit", "\"a\";r=0;t=60".to_owned()),
            ],
        ),
        // A Unix time in microseconds is a time, not 1000 years.
        (
            429,
            vec![
                ("RateLimit-Remaining", "0".to_owned()),
                ("RateLimit-Reset", micros.to_string()),
            ],
        ),
        // An earlier draft's forms: separate fields, and one dictionary.
        (
            429,
            vec![
                ("RateLimit-Limit", "10".to_owned()),
                ("RateLimit-Remaining", "0".to_owned()),
                ("RateLimit-Reset", "60".to_owned()),
                ("RateLimit-Policy", "10;w=60".to_owned()),
            ],
        ),
        (
            429,
            vec![("RateLimit", "limit=10, remaining=0, reset=60".to_owned())],
        ),
        // A 429 or a 503 with a reset and no count of requests left.
        (429, vec![("X-RateLimit-Reset", epoch_in(90).to_string())]),
        (503, vec![("RateLimit-Reset", "60".to_owned())]),
    ];
    for (status, headers) in cases {
        let mut reply = Reply::new(status, "");
        for (name, value) in &headers {
            reply = reply.header(name, value);
        }
        let (code, err, requests) = run_against(
            vec![reply, Reply::new(200, "ok\n")],
            "curl",
            &["curl", "-fsS"],
        );
        // The wait (about a minute) would pass --max-time: backoff gives up
        // at once, and says how long the server asked for.
        assert_eq!(code, Some(22), "{headers:?}: {err}");
        assert_eq!(requests, 1, "{headers:?}: {err}");
        // 60 s, or a Unix time 90 s ahead less the time taken.
        let wait = err
            .split("the next retry in ")
            .nth(1)
            .and_then(|w| w.split(' ').next())
            .unwrap_or_default();
        assert!(
            err.contains("would pass --max-time 20.0s") && wait.starts_with("1m"),
            "{headers:?}: {err}"
        );
    }
    // A 403 with a reset but no word of the requests left is no rate limit.
    let (code, err, requests) = run_against(
        vec![Reply::new(403, "").header("X-RateLimit-Reset", "60")],
        "curl",
        &["curl", "-fsS"],
    );
    assert_eq!(code, Some(22), "{err}");
    assert!(err.contains("HTTP 403 is not worth retrying"), "{err}");
    assert_eq!(requests, 1);
}

#[test]
fn a_body_that_looks_like_a_response_is_not_read_as_headers_when_they_go_to_stderr() {
    // curl's -v or -D /dev/stderr puts the headers on stderr: what comes on
    // stdout is the body alone, even a line that looks like a status line.
    let script = || {
        vec![
            Reply::new(503, "HTTP/1.1 429 Too Many Requests\nRetry-After: 3600\n\n"),
            Reply::new(200, "ok\n"),
        ]
    };
    for program in [
        &["curl", "-sSv", "--fail-with-body"][..],
        &["curl", "-sS", "--fail-with-body", "-D", "/dev/stderr"],
    ] {
        let (code, err, requests) = run_against(script(), "curl", program);
        assert_eq!(code, Some(0), "{program:?}: {err}");
        assert!(!err.contains("from the server"), "{program:?}: {err}");
        assert_eq!(requests, 2, "{program:?}");
    }
    // wget -S shows them in its log, on stderr, and -O - the body on stdout.
    let (code, err, requests) = run_against(
        script(),
        "wget",
        &[
            "wget",
            "--tries=1",
            "-nv",
            "-S",
            "--content-on-error",
            "-O",
            "-",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("from the server"), "{err}");
    assert_eq!(requests, 2);
}

#[test]
fn heads_on_stderr_are_read_when_stdout_and_stderr_are_one_pipe() {
    // With 2>&1 (or a terminal) the command's two streams reach backoff on
    // one pipe: curl -v's and wget -S's heads are read there all the same.
    for program in [
        &["curl", "-sSv", "-f", "-o", "/dev/null"][..],
        &["curl", "-sSf", "-o", "/dev/null", "-D", "/dev/stderr"],
        &["wget", "-nv", "-S", "-O", "/dev/null"],
    ] {
        let server = Server::start(vec![
            Reply::new(503, "busy\n").header("Retry-After", "1"),
            Reply::new(200, "the body\n"),
        ]);
        let both = tempfile::tempfile().unwrap();
        let status = std::process::Command::new(crate::support::bin())
            .args(["--retry-after", "--retry-after-jitter", "0", "--max-time"])
            .args(["20s", "--max-retries", "1", "--base", "1ms", "--"])
            .args(program)
            .arg(&server.url)
            .stdout(both.try_clone().unwrap())
            .stderr(both.try_clone().unwrap())
            .status()
            .unwrap();
        let mut output = String::new();
        let mut both = both;
        std::io::Seek::rewind(&mut both).unwrap();
        std::io::Read::read_to_string(&mut both, &mut output).unwrap();
        assert_eq!(status.code(), Some(0), "{program:?}: {output}");
        assert!(
            output.contains("(Retry-After from the server)"),
            "{program:?}: {output}"
        );
        let times = server.requests();
        assert_eq!(times.len(), 2, "{program:?}");
        assert!(times[1] - times[0] >= Duration::from_secs(1), "{program:?}");
    }
}
