//! `--on-start`, `--on-retry`, `--on-give-up`, `--on-success` and
//! `--hook-timeout`, and `BACKOFF_RUN_ID`: real
//! hooks run by `sh -c`, that succeed, fail, hang or are interrupted.

use crate::support::{PATIENCE, Running, TempDir, backoff, command, events, gone};

/// Runs backoff with `args`; returns its exit code, stdout and stderr.
fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = backoff(args).timeout(PATIENCE).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn on_retry_runs_before_each_retry_with_the_attempts_variables() {
    let dir = TempDir::new("hooks");
    let log = dir.join("log");
    let log = log.to_str().unwrap();
    let on_retry = format!(
        "echo \"retry $BACKOFF_ATTEMPT/$BACKOFF_MAX_ATTEMPTS $BACKOFF_LAST_STATUS $BACKOFF_NEXT_DELAY\" >> {log}"
    );
    let (code, stdout, _) = run(&[
        "--delays",
        "10ms,20ms",
        "--jitter",
        "none",
        "--attempts",
        "3",
        "--on-retry",
        &on_retry,
        "--",
        "sh",
        "-c",
        "echo out; exit 7",
    ]);
    assert_eq!(code, Some(7));
    assert_eq!(stdout, "out\nout\nout\n", "hooks write nothing to stdout");
    assert_eq!(
        std::fs::read_to_string(dir.join("log")).unwrap(),
        "retry 1/3 7 0.01\nretry 2/3 7 0.02\n"
    );
}

#[test]
fn the_next_attempt_starts_when_the_hook_is_over() {
    let dir = TempDir::new("hooks");
    let mark = dir.join("cleaned");
    let mark = mark.to_str().unwrap();
    // The hook takes longer than the delay; the retry finds its work done.
    let (code, _, err) = run(&[
        "--delays",
        "1ms",
        "--attempts",
        "2",
        "--on-retry",
        &format!("sleep 0.3; touch {mark}"),
        "--",
        "test",
        "-e",
        mark,
    ]);
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn a_hook_that_fails_or_hangs_is_told_and_changes_no_exit_status() {
    let (code, stdout, err) = run(&[
        "--attempts",
        "1",
        "--on-give-up",
        "echo paged; exit 3",
        "--",
        "sh",
        "-c",
        "exit 5",
    ]);
    assert_eq!(code, Some(5));
    assert_eq!(stdout, "");
    assert!(err.contains("paged\n"), "its output goes to stderr: {err}");
    assert!(
        err.contains("backoff: --on-give-up hook failed (exit 3) after "),
        "{err}"
    );
    let (code, _, err) = run(&[
        "--hook-timeout",
        "300ms",
        "--on-success",
        "exec sleep 60",
        "--",
        "true",
    ]);
    assert_eq!(code, Some(0));
    assert!(
        err.contains("--on-success hook timed out after 300ms"),
        "{err}"
    );
    // Quiet says nothing of it.
    let (code, _, err) = run(&["-q", "--on-success", "exit 1", "--", "true"]);
    assert_eq!((code, err.as_str()), (Some(0), ""));
}

#[test]
fn on_give_up_is_told_why() {
    let dir = TempDir::new("hooks");
    let log = dir.join("why");
    let hook = format!(
        "echo \"$BACKOFF_REASON $BACKOFF_LAST_STATUS\" >> {}",
        log.display()
    );
    for (args, code) in [
        (&["--attempts", "1", "--", "false"][..], 1),
        (&["--stop-on", "1", "--", "false"], 1),
        (
            &[
                "--max-time",
                "1s",
                "--jitter",
                "none",
                "--base",
                "5s",
                "--cap",
                "5s",
                "--",
                "false",
            ],
            1,
        ),
        (&["--", "does-not-exist-anywhere"], 127),
        (&["--until-failure", "--", "false"], 1),
    ] {
        let mut all = vec!["--on-give-up", hook.as_str(), "--on-success", "echo no"];
        all.extend_from_slice(args);
        assert_eq!(run(&all).0, Some(code), "{args:?}");
    }
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "exhausted 1\nstopped 1\ndeadline 1\nstopped 127\nfailure_found 1\n"
    );
}

#[test]
fn a_signal_ends_a_hook_and_the_run_and_give_up_is_told() {
    let dir = TempDir::new("hooks");
    let log = dir.join("why");
    let mut run = Running::start(command([
        "--delays",
        "1ms",
        "--on-retry",
        "echo hook pid $$ >&2; exec sleep 60",
        "--on-give-up",
        &format!("echo \"$BACKOFF_REASON\" > {}", log.display()),
        "--",
        "false",
    ]));
    terminated_during_hook(&mut run, "hook pid ");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "interrupted\n");
}

#[test]
fn on_retry_is_bounded_by_max_time() {
    let start = std::time::Instant::now();
    let (code, _, err) = run(&[
        "--max-time",
        "1s",
        "--delays",
        "1ms",
        "--on-retry",
        "exec sleep 60",
        "--",
        "false",
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("--on-retry hook timed out"), "{err}");
    // Not the hook's 60s, nor its 30s --hook-timeout.
    assert!(start.elapsed() < PATIENCE, "{err}");
}

#[test]
fn hooks_are_in_the_json_events_and_the_report() {
    let dir = TempDir::new("hooks");
    let report = dir.join("r.json");
    let out = backoff([
        "--log-format",
        "json",
        "--delays",
        "1ms",
        "--attempts",
        "2",
        "--on-retry",
        "exit 4",
        "--on-give-up",
        "true",
        "--report",
        report.to_str().unwrap(),
        "--",
        "false",
    ])
    .timeout(PATIENCE)
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let hooks: Vec<serde_json::Value> = events(&out.stderr)
        .into_iter()
        .filter(|e| e["event"] == "hook")
        .collect();
    assert_eq!(hooks.len(), 2, "{hooks:?}");
    assert_eq!(hooks[0]["hook"], "on_retry");
    assert_eq!(hooks[0]["exit"], 4);
    assert_eq!(hooks[1]["hook"], "on_give_up");
    assert_eq!(hooks[1]["exit"], 0);
    assert!(hooks[1]["duration_seconds"].is_number());
    let doc = crate::support::report_at(&report);
    assert_eq!(doc["hooks"][0]["hook"], "on_retry");
    assert_eq!(doc["hooks"][0]["after_attempt"], 1);
    assert_eq!(doc["hooks"][0]["outcome"]["code"], 4);
    assert_eq!(doc["hooks"][1]["hook"], "on_give_up");
}

#[test]
fn a_zero_hook_timeout_is_refused() {
    let (code, _, err) = run(&["--hook-timeout", "0s", "--on-retry", "true", "--", "true"]);
    assert_eq!(code, Some(125));
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn a_signal_during_on_give_up_is_what_the_report_and_step_outputs_say() {
    let dir = TempDir::new("hooks");
    let mut cmd = command([
        "--max-retries",
        "0",
        "--report",
        &dir.join("report.json").display().to_string(),
        "--on-give-up",
        "echo give-up pid $$ >&2; exec sleep 60",
        "--",
        "false",
    ]);
    cmd.env("GITHUB_ACTIONS", "true")
        .env("GITHUB_OUTPUT", dir.join("output"));
    let mut run = Running::start(cmd);
    terminated_during_hook(&mut run, "give-up pid ");
    assert!(
        run.stderr()
            .iter()
            .any(|l| l.contains("interrupted by SIGTERM during the --on-give-up hook")),
        "{:?}",
        run.seen
    );
    // Before, they said `exhausted` and `failure` beside exit 143.
    let report: serde_json::Value = crate::support::report_at(&dir.join("report.json"));
    assert_eq!(report["reason"], "interrupted");
    assert_eq!(report["final_status"], 143);
    assert_eq!(report["final_signal"], "TERM");
    assert_eq!(
        crate::ci::outputs(&dir.join("output")),
        crate::ci::expected(1, 0, 143, "cancelled", "interrupted")
    );
}

#[cfg(target_os = "linux")]
#[test]
fn what_a_hook_starts_in_the_background_ends_with_it() {
    // One that ends on SIGTERM, one that ignores it and is killed after
    // --kill-after; neither may see the next attempt, nor outlive backoff.
    let dir = TempDir::new("hooks");
    let log = dir.join("seen");
    let mut cmd = command([
        "--base",
        "1ms",
        "--max-retries",
        "1",
        "--kill-after",
        "200ms",
        "--on-retry",
        &format!(
            "sleep 300 & echo hook pid $! >&2; \
             (trap '' TERM; echo > '{ready}'; exec sleep 301) & echo hook pid $! >&2; \
             i=0; while [ ! -e '{ready}' ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done",
            ready = dir.join("ready").display()
        ),
        "--",
        "sh",
        "-c",
    ]);
    cmd.arg(format!(
        "[ \"$BACKOFF_ATTEMPT\" = 1 ] && exit 1; ps -eo pid=,stat= > '{}'; echo second",
        log.display()
    ));
    let mut run = Running::start(cmd);
    let pids: Vec<i32> = run
        .wait_for_lines("hook pid ", 2)
        .iter()
        .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
        .collect();
    run.wait_for("second");
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(0), "{:?}", run.seen);
    let seen = std::fs::read_to_string(&log).unwrap();
    let alive: Vec<i32> = pids.iter().copied().filter(|&p| !gone(p)).collect();
    for &pid in &alive {
        crate::support::send(pid, libc::SIGKILL);
    }
    assert!(alive.is_empty(), "{alive:?} outlived backoff");
    for pid in pids {
        assert!(
            // A zombie (where no init reaps) has ended.
            !seen.lines().any(|l| {
                let mut f = l.split_whitespace();
                f.next() == Some(&pid.to_string()) && f.next().is_some_and(|s| !s.starts_with('Z'))
            }),
            "{pid} ran beside the next attempt:\n{seen}"
        );
    }
}

/// Starts backoff, whose `--on-retry` hook leaves a process that ignores
/// SIGTERM, and waits until the hook's shell is reaped: backoff then waits
/// `--kill-after` (60s) for what it left. Returns the run and that pid.
#[cfg(target_os = "linux")]
fn waiting_for_a_hooks_leftover(dir: &TempDir) -> (Running, i32) {
    let mut cmd = command([
        "--base",
        "30s",
        "--kill-after",
        "60s",
        "--on-retry",
        &format!(
            "(trap '' TERM; echo > '{ready}'; exec sleep 302) & echo left $! >&2; echo shell $$ >&2; \
             i=0; while [ ! -e '{ready}' ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done",
            ready = dir.join("ready").display()
        ),
        "--",
        "false",
    ]);
    cmd.env_remove("BACKOFF_MAX_RETRIES");
    let mut run = Running::start(cmd);
    let pid = |line: String| -> i32 { line.rsplit(' ').next().unwrap().parse().unwrap() };
    let left = pid(run.wait_for("left "));
    let shell = pid(run.wait_for("shell "));
    crate::support::reaped(shell);
    (run, left)
}

#[cfg(target_os = "linux")]
#[test]
fn sigkill_of_backoff_while_a_hooks_leftovers_are_ended_kills_them_too() {
    let dir = TempDir::new("hooks");
    // What the hook left ignores SIGTERM; the guard still watches the
    // group. (Before, the guard was told to watch nothing any more.)
    let (mut run, left) = waiting_for_a_hooks_leftover(&dir);
    run.signal(libc::SIGKILL);
    run.wait_exit(PATIENCE);
    crate::support::eventually("the hook's leftover to be killed by the guard", || {
        gone(left)
    });
}

/// How often the process `pid` has slept and woken (its main thread's
/// voluntary context switches).
#[cfg(target_os = "linux")]
fn wake_ups(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap()
}

#[cfg(target_os = "linux")]
#[test]
fn the_end_of_a_hooks_leftovers_is_waited_for_without_polling() {
    let dir = TempDir::new("hooks");
    let (mut run, left) = waiting_for_a_hooks_leftover(&dir);
    let before = wake_ups(run.pid());
    // Not a wait for anything: a window in which a poll would wake up some
    // twenty times (every 50 ms at most), and a wait for the end of the
    // leftover not at all.
    std::thread::sleep(std::time::Duration::from_secs(1));
    let woken = wake_ups(run.pid()) - before;
    assert!(!gone(left), "the leftover ended early");
    run.signal(libc::SIGKILL);
    run.wait_exit(PATIENCE);
    crate::support::eventually("the leftover to be killed by the guard", || gone(left));
    assert!(woken <= 3, "backoff woke up {woken} times in a second");
}

/// Sends SIGTERM to backoff once a hook has said `marker` (its pid last on
/// the line), and checks that backoff dies by it and that the hook is gone.
fn terminated_during_hook(run: &mut Running, marker: &str) {
    let line = run.wait_for(marker);
    let pid: i32 = line.rsplit(' ').next().unwrap().parse().unwrap();
    run.signal(libc::SIGTERM);
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGTERM),
        "{:?}",
        run.seen
    );
    crate::support::eventually("the hook to be gone", || gone(pid));
}

#[test]
fn on_start_runs_once_before_the_first_attempt_and_everything_sees_one_run_id() {
    let dir = TempDir::new("hooks");
    let log = dir.join("log");
    let log = log.to_str().unwrap();
    let report = dir.join("report.json");
    let out = backoff([
        "--log-format",
        "json",
        "--delays",
        "1ms",
        "--attempts",
        "3",
        "--report",
        report.to_str().unwrap(),
        "--on-start",
        &format!("echo \"start $BACKOFF_ATTEMPT $BACKOFF_RUN_ID\" >> {log}; exit 3"),
        "--on-retry",
        &format!("echo \"retry $BACKOFF_RUN_ID\" >> {log}"),
        "--on-give-up",
        &format!("echo \"give-up $BACKOFF_RUN_ID\" >> {log}"),
        "--",
        "sh",
        "-c",
        &format!("echo \"attempt $BACKOFF_ATTEMPT $BACKOFF_RUN_ID\" >> {log}; exit 7"),
    ])
    .env("BACKOFF_RUN_ID", "inherited")
    .timeout(PATIENCE)
    .output()
    .unwrap();
    // The hook's failure changes nothing: all three attempts ran.
    assert_eq!(out.status.code(), Some(7));
    let lines = std::fs::read_to_string(dir.join("log")).unwrap();
    let lines: Vec<(&str, &str)> = lines
        .lines()
        .map(|l| l.split_at(l.rfind(' ').unwrap() + 1))
        .collect();
    let what: Vec<&str> = lines.iter().map(|(w, _)| w.trim_end()).collect();
    assert_eq!(
        what,
        [
            "start 0",
            "attempt 1",
            "retry",
            "attempt 2",
            "retry",
            "attempt 3",
            "give-up"
        ]
    );
    let id = lines[0].1;
    assert!(lines.iter().all(|(_, i)| *i == id), "{lines:?}");
    assert_ne!(id, "inherited", "each run has an id of its own");
    let v4 =
        regex::Regex::new("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
            .unwrap();
    assert!(v4.is_match(id), "{id}");
    let events = events(&out.stderr);
    assert_eq!(events[0]["event"], "start");
    assert_eq!(events[0]["run_id"], id);
    let start_hook = events.iter().find(|e| e["event"] == "hook").unwrap();
    assert_eq!(start_hook["hook"], "on_start");
    assert_eq!(start_hook["exit"], 3);
    let doc = crate::support::report_at(&report);
    assert_eq!(doc["run_id"], id);
    assert_eq!(doc["hooks"][0]["hook"], "on_start");
    assert_eq!(doc["hooks"][0]["after_attempt"], 0);
    // A second run has another id.
    let again = backoff(["--on-start", "echo $BACKOFF_RUN_ID", "--", "true"])
        .timeout(PATIENCE)
        .output()
        .unwrap();
    let other = String::from_utf8_lossy(&again.stderr);
    assert!(v4.is_match(other.trim()), "{other}");
    assert_ne!(other.trim(), id);
}

#[test]
fn a_failed_on_start_is_told_on_one_line() {
    let (code, stdout, err) = run(&["--on-start", "exit 4", "--", "echo", "ran"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(stdout, "ran\n");
    assert!(err.contains("--on-start hook failed (exit 4)"), "{err}");
}

#[test]
fn a_signal_during_on_start_ends_the_run_before_any_attempt() {
    let dir = TempDir::new("hooks");
    let mark = dir.join("ran");
    let why = dir.join("why");
    let report = dir.join("report.json");
    let mut run = Running::start(command([
        "--report",
        report.to_str().unwrap(),
        "--on-start",
        "echo start pid $$ >&2; exec sleep 60",
        "--on-give-up",
        &format!(
            "echo \"$BACKOFF_REASON $BACKOFF_ATTEMPT\" > {}",
            why.display()
        ),
        "--",
        "touch",
        mark.to_str().unwrap(),
    ]));
    terminated_during_hook(&mut run, "start pid ");
    assert!(
        run.stderr()
            .iter()
            .any(|l| l
                .contains("interrupted by SIGTERM during the --on-start hook; no attempt follows")),
        "{:?}",
        run.seen
    );
    assert!(!mark.exists(), "the command never ran");
    assert_eq!(std::fs::read_to_string(&why).unwrap(), "interrupted 0\n");
    let doc = crate::support::report_at(&report);
    assert_eq!(doc["reason"], "interrupted");
    assert_eq!(doc["attempts"].as_array().map(Vec::len), Some(0));
}

#[test]
fn on_start_is_bounded_by_max_time_and_no_attempt_starts_after_it() {
    let dir = TempDir::new("hooks");
    let mark = dir.join("ran");
    let (code, _, err) = run(&[
        "--max-time",
        "500ms",
        "--on-start",
        "exec sleep 60",
        "--",
        "touch",
        mark.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(124), "{err}");
    assert!(err.contains("--on-start hook timed out"), "{err}");
    assert!(!mark.exists(), "no attempt after the deadline: {err}");
}
