//! Time limits: `--timeout`, `--signal`, `--kill-after`, `--max-time`,
//! `--preserve-status`, and no process left behind.

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use predicates::prelude::*;

use crate::support::{PATIENCE, Running, TempDir, backoff, command, eventually, gone};

/// The durations in `after X` of the report lines, in milliseconds.
fn attempt_durations(lines: &[&str]) -> Vec<f64> {
    lines
        .iter()
        .filter_map(|l| l.split_once(" after ").map(|(_, rest)| rest))
        .filter_map(|rest| rest.split(';').next())
        .filter_map(|d| {
            d.strip_suffix("ms")
                .and_then(|v| v.parse::<f64>().ok())
                .or_else(|| {
                    d.strip_suffix('s')
                        .and_then(|v| v.parse::<f64>().ok())
                        .map(|s| s * 1000.0)
                })
        })
        .collect()
}

#[test]
fn a_timeout_ends_every_attempt_and_leaves_no_process_of_its_tree() {
    let dir = TempDir::new("timeout-tree");
    let pids = dir.join("pids");
    // Long enough for the shell to record both pids even on a loaded machine.
    let mut cmd = command([
        "--timeout",
        "1s",
        "--max-retries",
        "1",
        "--base",
        "1ms",
        "--",
        "sh",
        "-c",
    ]);
    cmd.arg(format!(
        "sleep 5 & echo $! >> '{p}'; echo $$ >> '{p}'; exec sleep 5",
        p = pids.display()
    ));
    let mut run = Running::start(cmd);
    let (status, took) = run.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(124), "{:?}", run.seen);
    assert!(took < Duration::from_secs(5), "took {took:?}");
    let durations = attempt_durations(&run.stderr());
    assert_eq!(durations.len(), 2, "{:?}", run.seen);
    for ms in durations {
        assert!((1000.0..3000.0).contains(&ms), "an attempt took {ms} ms");
    }
    let sleeps = dir.lines("pids");
    assert_eq!(sleeps.len(), 4);
    for pid in sleeps {
        let pid: i32 = pid.parse().unwrap();
        eventually(&format!("sleep {pid} to be gone"), || gone(pid));
    }
}

#[test]
fn a_command_that_ignores_the_timeout_signal_is_killed_after_kill_after() {
    // The timeout leaves the shell ample time to ignore TERM first.
    let mut cmd = command([
        "--timeout",
        "1s",
        "--kill-after",
        "300ms",
        "--max-retries",
        "0",
        "--",
        "sh",
        "-c",
        "trap '' TERM; echo ready; sleep 30",
    ]);
    cmd.env("LC_ALL", "C");
    let mut run = Running::start(cmd);
    let (status, took) = run.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(124), "{:?}", run.seen);
    assert!(
        took >= Duration::from_millis(1300),
        "killed too early: {took:?}"
    );
    assert!(took < Duration::from_secs(10), "not killed: {took:?}");
}

#[test]
fn the_timeout_signal_can_be_chosen_and_preserve_status_keeps_the_commands_status() {
    backoff([
        "--timeout",
        "1s",
        "--signal",
        "INT",
        "--preserve-status",
        "--max-retries",
        "0",
        "--",
        "sh",
        "-c",
        "trap 'exit 5' INT; while :; do sleep 0.02; done",
    ])
    .assert()
    .code(5);
    let out = backoff([
        "--timeout",
        "100ms",
        "--preserve-status",
        "--max-retries",
        "0",
        "--",
        "sleep",
        "5",
    ])
    .output()
    .unwrap();
    assert_eq!(out.status.signal(), Some(libc::SIGTERM));
    backoff([
        "--timeout",
        "100ms",
        "--signal",
        "9",
        "--max-retries",
        "0",
        "--",
        "sleep",
        "5",
    ])
    .assert()
    .code(124);
}

#[test]
fn timeouts_are_retried_by_default_and_stopped_by_stop_on_timeout() {
    let count = |extra: &[&str]| {
        let dir = TempDir::new("timeout-retry");
        backoff(["--timeout", "500ms", "--max-retries", "2", "--base", "1ms"])
            .args(extra)
            .args(["--", "sh", "-c"])
            .arg(format!(
                "echo x >> '{}'; exec sleep 5",
                dir.join("log").display()
            ))
            .assert()
            .code(124)
            .stderr(predicate::str::contains("failed (timeout)"));
        dir.lines("log").len()
    };
    assert_eq!(count(&[]), 3);
    assert_eq!(count(&["--stop-on", "timeout"]), 1);
    assert_eq!(count(&["--retry-on", "1"]), 1);
}

#[test]
fn a_delay_that_would_pass_max_time_is_not_slept() {
    let mut cmd = command([
        "--max-time",
        "1s",
        "--base",
        "10s",
        "--cap",
        "10s",
        "--jitter",
        "none",
        "--",
        "sh",
        "-c",
        "exit 3",
    ]);
    cmd.env("LC_ALL", "C");
    let mut run = Running::start(cmd);
    let (status, took) = run.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(3), "the command's own status");
    assert!(took < Duration::from_secs(5), "slept: {took:?}");
    assert!(
        run.stderr()
            .iter()
            .any(|l| l.contains("the next retry in 10.0s would pass --max-time 1.00s")),
        "{:?}",
        run.seen
    );
}

#[test]
fn max_time_ends_a_long_attempt_with_124() {
    let mut run = Running::start(command(["--max-time", "500ms", "--", "sleep", "30"]));
    let (status, took) = run.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(124), "{:?}", run.seen);
    assert!(took >= Duration::from_millis(500));
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert!(
        run.stderr()
            .iter()
            .any(|l| l.contains("--max-time 500ms has passed"))
    );
}

#[test]
fn a_huge_max_time_works_and_an_absurd_one_is_refused() {
    backoff(["--max-time", "100y", "--timeout", "100y", "--", "true"])
        .assert()
        .success();
    backoff([
        "--max-time",
        "100y",
        "--max-retries",
        "1",
        "--base",
        "1ms",
        "--",
        "false",
    ])
    .assert()
    .code(1);
    for v in ["10000y", "0s", "100"] {
        backoff(["--max-time", v, "--", "true"])
            .assert()
            .code(125)
            .stderr(predicate::str::contains("'--max-time'"));
    }
    backoff(["--timeout", "0s", "--", "true"])
        .assert()
        .code(125);
    backoff(["--signal", "NOPE", "--", "true"])
        .assert()
        .code(125)
        .stderr(predicate::str::contains("'--signal'"));
}

#[test]
fn timeouts_come_from_the_environment() {
    backoff(["--max-retries", "0", "--", "sleep", "5"])
        .env("BACKOFF_TIMEOUT", "100ms")
        .assert()
        .code(124);
    backoff(["--", "sleep", "5"])
        .env("BACKOFF_MAX_TIME", "200ms")
        .assert()
        .code(124);
}

#[test]
fn with_foreground_a_timeout_still_ends_the_attempt() {
    let dir = TempDir::new("fg-timeout");
    backoff([
        "--foreground",
        "--timeout",
        "1s",
        "--max-retries",
        "0",
        "--",
        "sh",
        "-c",
    ])
    .arg(format!(
        "sleep 30 >/dev/null 2>&1 & echo $! > '{}'; exec sleep 30",
        dir.join("pid").display()
    ))
    .assert()
    .code(124);
    // The documented caveat: only the command itself was signalled.
    let pid: i32 = dir.lines("pid")[0].parse().unwrap();
    let survived = !gone(pid);
    crate::support::send(pid, libc::SIGKILL);
    assert!(
        survived,
        "with --foreground the background sleep is not signalled"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn the_command_dies_when_backoff_is_killed_with_sigkill() {
    let mut run = Running::start(command(["--", "sh", "-c", "echo pid=$$; exec sleep 300"]));
    let line = run.wait_for("pid=");
    let child: i32 = line.trim_start_matches("pid=").parse().unwrap();
    run.signal(libc::SIGKILL);
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    eventually("the command to die with backoff", || gone(child));
}

/// The pid a line `child PID` of `run`'s output gives.
fn child_pid(run: &mut Running, prefix: &str) -> i32 {
    let line = run.wait_for(prefix);
    line.trim()
        .rsplit(' ')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("not a pid line: {line:?}"))
}

/// backoff exits at the latest --kill-after after the --max-time deadline:
/// here at 6s, where a command that ignores SIGTERM would run 30s, and its
/// --on-give-up another 10s after it. The bound checked has slack for a
/// loaded machine, and is still well below what a run without it takes.
#[test]
fn backoff_exits_by_max_time_plus_kill_after_whatever_the_command_and_the_closing_hook_do() {
    let dir = TempDir::new("max-time-bound");
    let marker = dir.join("hook-ran");
    let mut cmd = command([
        "--max-time",
        "2s",
        "--kill-after",
        "4s",
        "--on-give-up",
        &format!("touch '{}'; sleep 10", marker.display()),
        "--",
        "sh",
        "-c",
        // The shell and its sleep both ignore TERM: the group's KILL ends
        // them.
        "trap '' TERM; sleep 30 & echo child $!; wait",
    ]);
    cmd.env("LC_ALL", "C");
    let mut run = Running::start(cmd);
    let sleep = child_pid(&mut run, "child ");
    let (status, took) = run.wait_exit(PATIENCE);
    let err = run.stderr().join("\n");
    assert_eq!(status.code(), Some(124), "{err}");
    // By 6s, and 3s of slack for a loaded machine: without the bound, 16s.
    assert!(
        took < Duration::from_secs(9),
        "exited after {took:?}: {err}"
    );
    eventually("the command's sleep killed", || gone(sleep));
    // The attempt that ignores TERM is killed halfway through --kill-after
    // (2s after the deadline), so that the hook has the other half: it
    // runs, and is ended when backoff's time is up.
    assert!(marker.exists(), "{err}");
    assert!(
        err.contains("--on-give-up hook timed out after")
            && err.contains("and was ended: backoff exits by --max-time plus --kill-after"),
        "{err}"
    );
    assert!(!err.contains("no time left"), "{err}");
}

#[test]
fn a_closing_hook_that_ignores_sigterm_is_killed_when_backoffs_time_is_up() {
    let mut cmd = command([
        "--max-time",
        "2s",
        "--kill-after",
        "2s",
        "--on-give-up",
        "trap '' TERM; sleep 60 & echo hook child $! >&2; wait",
        "--",
        "sleep",
        "30",
    ]);
    cmd.env("LC_ALL", "C");
    let mut run = Running::start(cmd);
    let sleep = child_pid(&mut run, "hook child ");
    let (status, took) = run.wait_exit(PATIENCE);
    let err = run.stderr().join("\n");
    assert_eq!(status.code(), Some(124), "{err}");
    // By 4s, and 3s of slack: the hook's own --hook-timeout (30s) would
    // end it after 32s.
    assert!(
        took < Duration::from_secs(7),
        "exited after {took:?}: {err}"
    );
    assert!(
        err.contains("--on-give-up hook timed out after ")
            && err.contains("and was ended: backoff exits by --max-time plus --kill-after"),
        "{err}"
    );
    eventually("the hook's sleep killed", || gone(sleep));
}

/// An attempt --timeout ends just before the deadline leaves the closing
/// hook half of the time then left (1.05s here), not the 100ms that
/// --kill-after after its --signal would leave.
#[test]
fn an_attempt_timed_out_just_before_the_deadline_leaves_a_closing_hook_half_the_time() {
    let mut cmd = command([
        "--max-time",
        "3s",
        "--timeout",
        "2900ms",
        "--kill-after",
        "2s",
        "--on-give-up",
        "echo hook ran >&2; sleep 10",
        "--",
        "sh",
        "-c",
        "trap '' TERM; sleep 30 & echo child $!; wait",
    ]);
    cmd.env("LC_ALL", "C");
    let mut run = Running::start(cmd);
    let sleep = child_pid(&mut run, "child ");
    let (status, took) = run.wait_exit(PATIENCE);
    let err = run.stderr().join("\n");
    assert_eq!(status.code(), Some(124), "{err}");
    assert!(
        took < Duration::from_secs(8),
        "exited after {took:?}: {err}"
    );
    eventually("the command's sleep killed", || gone(sleep));
    assert!(err.contains("hook ran"), "{err}");
    // The hook gets --signal halfway through its 1.05s: some 525ms.
    let ran = err
        .lines()
        .find_map(|l| l.split("--on-give-up hook timed out after ").nth(1))
        .and_then(|rest| rest.split(' ').next())
        .and_then(|d| humantime::parse_duration(d).ok())
        .unwrap_or_else(|| panic!("no hook timeout line: {err}"));
    assert!(ran >= Duration::from_millis(400), "{ran:?}: {err}");
}

#[test]
fn the_wait_for_the_metrics_files_lock_ends_when_backoffs_time_is_up() {
    let dir = TempDir::new("max-time-metrics");
    let metrics = dir.join("m.prom");
    std::fs::write(&metrics, "").unwrap();
    let mut holder = crate::budget::hold_lock(&metrics);
    // The lock is held for longer than backoff may wait for it (5s): the
    // wait ends at --max-time plus --kill-after.
    let out = backoff(["--max-time", "1s", "--kill-after", "1s", "--metrics-file"])
        .arg(&metrics)
        .args(["--", "true"])
        .timeout(PATIENCE)
        .output()
        .unwrap();
    holder.kill().unwrap();
    holder.wait().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "cannot write --metrics-file '{}': backoff's time (--max-time plus --kill-after) ran out while waiting for its lock (not updated)",
            metrics.display()
        )),
        "{err}"
    );
}
