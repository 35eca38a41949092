//! `--lock KEY` in the file store: at most one run at a time, the others
//! told who holds it; runs that wait are served in turn; a holder killed
//! lets the next one in; `backoff lock show|reset`.

use std::process::{Child, Stdio};

use crate::schema::Doc;
use crate::support::{
    PATIENCE, Running, TempDir, backoff, command, eventually, json_of, output_within, send,
};

/// `backoff --budget-dir DIR --lock KEY ARGS... -- sh -c SCRIPT`, started
/// with its output captured.
fn locked(dir: &TempDir, args: &[&str], script: &str) -> Child {
    let store = dir.join("store");
    let mut cmd = command(["--budget-dir", store.to_str().unwrap(), "--lock", "job"]);
    cmd.args(args).args(["--", "sh", "-c", script]);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.current_dir(dir.path());
    cmd.spawn().unwrap()
}

/// A run that holds the lock `job` in `store` for a minute, once it says
/// so.
pub fn holding(store: &str) -> Running {
    let mut run = Running::start(command([
        "--budget-dir",
        store,
        "--lock",
        "job",
        "--",
        "sh",
        "-c",
        "echo holding; exec sleep 60",
    ]));
    run.wait_for("holding");
    run
}

#[test]
fn of_twenty_runs_started_together_one_runs_and_the_others_name_it_and_exit_75() {
    let dir = TempDir::new("lock-twenty");
    // The winner holds the lock until every other run has ended.
    let script = "echo \"$$\" >> ran; while [ ! -e release ]; do sleep 0.01; done";
    let runs: Vec<Child> = (0..20).map(|_| locked(&dir, &[], script)).collect();
    eventually("one run started its command", || {
        !dir.lines("ran").is_empty()
    });
    // The holder's record names it.
    let record = std::fs::read_to_string(dir.join("store/job.lock")).unwrap();
    let holder: u32 = record
        .split(' ')
        .skip_while(|w| *w != "pid")
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no holder in {record:?}"));
    // Every run but the holder ends while the holder still holds the lock.
    let mut winner = None;
    let mut ended = Vec::new();
    for child in runs {
        if child.id() == holder {
            winner = Some(child);
        } else {
            ended.push((child.id(), output_within(child)));
        }
    }
    let winner = winner.expect("the holder is one of the runs");
    assert_eq!(ended.len(), 19);
    for (pid, out) in &ended {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(75), "run {pid}: {stderr}");
        assert!(
            stderr.contains(&format!("lock 'job' is held by pid {holder} on ")),
            "run {pid}: {stderr}"
        );
        assert!(stderr.ends_with("; not running the command\n"), "{stderr}");
    }
    std::fs::write(dir.join("release"), "").unwrap();
    let out = output_within(winner);
    assert!(out.status.success());
    assert_eq!(dir.lines("ran").len(), 1, "exactly one command ran");
}

#[test]
fn runs_that_wait_all_run_in_turn_never_two_at_once() {
    let dir = TempDir::new("lock-wait");
    let script = "echo start >> log; sleep 0.05; echo end >> log";
    let runs: Vec<Child> = (0..8)
        .map(|_| locked(&dir, &["--lock-wait", "60s"], script))
        .collect();
    for child in runs {
        let out = output_within(child);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let log = dir.lines("log");
    assert_eq!(log.len(), 16, "{log:?}");
    for pair in log.chunks(2) {
        assert_eq!(pair, ["start", "end"], "overlap: {log:?}");
    }
}

#[test]
fn a_holder_killed_lets_a_waiting_run_in_and_leaves_its_record_for_show() {
    let dir = TempDir::new("lock-killed");
    let store = dir.join("store");
    let store = store.to_str().unwrap();
    let holder = holding(store);
    let mut waiter = Running::start(command([
        "--budget-dir",
        store,
        "--lock",
        "job",
        "--lock-wait",
        "60s",
        "-v",
        "--",
        "echo",
        "my turn",
    ]));
    // It waits in the queue: its command has not run.
    waiter.wait_for("waiting up to 1m for it");
    assert!(!waiter.seen.iter().any(|(_, l)| l == "my turn"));
    send(holder.pid(), libc::SIGKILL);
    waiter.wait_for("my turn");
    let (status, _) = waiter.wait_exit(PATIENCE);
    assert!(status.success());
    // The waiter let go as it ended: the lock is free, without a record.
    backoff(["lock", "show", "job", "--budget-dir", store])
        .assert()
        .success()
        .stdout(predicates::str::starts_with("job: free ("));
}

#[test]
fn show_says_who_holds_it_and_reset_refuses_without_force() {
    let dir = TempDir::new("lock-show");
    let store = dir.join("store");
    let store = store.to_str().unwrap();
    let holder = holding(store);
    let pid = holder.pid();
    let shown = backoff([
        "lock",
        "show",
        "job",
        "--budget-dir",
        store,
        "--format",
        "json",
    ])
    .assert()
    .success()
    .get_output()
    .stdout
    .clone();
    let v = json_of(Doc::LockShow, &shown);
    assert_eq!(v["held"], true);
    assert_eq!(v["holder"]["pid"], pid);
    assert_eq!(v["holder"]["token"], serde_json::Value::Null);
    backoff(["lock", "reset", "job", "--budget-dir", store])
        .assert()
        .code(125)
        .stderr(predicates::str::contains(format!(
            "is held by pid {pid} on "
        )))
        .stderr(predicates::str::contains(
            "a live process: --force removes it anyway (the holder then ends within a second, lock_lost)",
        ));
    // The advice, followed.
    let told = backoff([
        "lock",
        "reset",
        "job",
        "--force",
        "--budget-dir",
        store,
        "--format",
        "json",
    ])
    .assert()
    .success()
    .get_output()
    .stdout
    .clone();
    let v = json_of(Doc::LockReset, &told);
    assert_eq!(v["found"], "held");
    // The holder sees its file gone and ends; the next run takes the lock.
    let mut holder = holder;
    holder.wait_for("lock 'job' was lost: its file");
    let (status, _) = holder.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(75));
    backoff(["--budget-dir", store, "--lock", "job", "--", "true"])
        .assert()
        .success();
    // A holder killed leaves its record: show tells it, reset clears it.
    let mut killed = holding(store);
    let pid = killed.pid();
    send(pid, libc::SIGKILL);
    let _ = killed.wait_exit(PATIENCE);
    backoff(["lock", "show", "job", "--budget-dir", store])
        .assert()
        .success()
        .stdout(predicates::str::contains(format!(
            "job: free; last held by pid {pid} on "
        )));
    backoff(["lock", "reset", "job", "--budget-dir", store])
        .assert()
        .success()
        .stderr(predicates::str::contains(format!(
            "lock 'job' was free; the record its last holder left (pid {pid} on "
        )));
    backoff(["lock", "reset", "job", "--budget-dir", store])
        .assert()
        .success()
        .stderr("backoff: lock 'job' was free; nothing to reset\n");
}

#[test]
fn a_run_kept_out_reports_locked_everywhere() {
    let dir = TempDir::new("lock-reported");
    let store = dir.join("store");
    let store = store.to_str().unwrap();
    let holder = holding(store);
    let report = dir.join("report.json");
    let metrics = dir.join("metrics.prom");
    let out = backoff([
        "--budget-dir",
        store,
        "--lock",
        "job",
        "--lock-exit",
        "0",
        "--log-format",
        "json",
        "--report",
        report.to_str().unwrap(),
        "--metrics-file",
        metrics.to_str().unwrap(),
        "--",
        "echo",
        "never",
    ])
    .assert()
    .success()
    .get_output()
    .clone();
    assert!(out.stdout.is_empty());
    let events = crate::support::events(&out.stderr);
    let lock = events.iter().find(|e| e["event"] == "lock").unwrap();
    assert_eq!(lock["decision"], "busy");
    assert_eq!(lock["holder"]["pid"], holder.pid());
    let r = crate::support::report_at(&report);
    assert_eq!(r["reason"], "locked");
    assert_eq!(r["lock"]["decision"], "busy");
    assert_eq!(r["attempts"].as_array().unwrap().len(), 0);
    let m = std::fs::read_to_string(&metrics).unwrap();
    assert!(
        m.contains("backoff_lock_skipped_total{name=\"echo\"} 1\n"),
        "{m}"
    );
    // A GitHub Actions step kept out is skipped, for the reason locked.
    let output = dir.join("output");
    backoff([
        "--budget-dir",
        store,
        "--lock",
        "job",
        "--",
        "echo",
        "never",
    ])
    .env("GITHUB_ACTIONS", "true")
    .env("GITHUB_OUTPUT", &output)
    .env("GITHUB_STEP_SUMMARY", dir.join("summary"))
    .assert()
    .code(75);
    let outputs = crate::ci::outputs(&output);
    assert_eq!(outputs["outcome"], "skipped");
    assert_eq!(outputs["reason"], "locked");
    let summary = std::fs::read_to_string(dir.join("summary")).unwrap();
    assert!(
        summary.contains("Not run: another run holds the lock"),
        "{summary}"
    );
}

#[test]
fn a_lock_file_that_cannot_be_trusted_runs_nothing_unless_told_to_run_without_it() {
    let dir = TempDir::new("lock-untrusted");
    let store = dir.join("store");
    std::fs::create_dir(&store).unwrap();
    std::fs::set_permissions(&store, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", store.join("job.lock")).unwrap();
    let store = store.to_str().unwrap();
    backoff(["--budget-dir", store, "--lock", "job", "--", "echo", "ran"])
        .assert()
        .code(75)
        .stdout("")
        .stderr(predicates::str::contains("is a symbolic link"))
        .stderr(predicates::str::contains(
            "not running the command: a run that cannot be sure it holds the lock does not run (--lock-fail open would run it without)",
        ));
    // The advice, followed.
    backoff([
        "--budget-dir",
        store,
        "--lock",
        "job",
        "--lock-fail",
        "open",
        "--",
        "echo",
        "ran",
    ])
    .assert()
    .success()
    .stdout("ran\n")
    .stderr(predicates::str::contains(
        "running the command WITHOUT the lock (--lock-fail open)",
    ));
    for bad in ["../x", "a/b", ""] {
        backoff(["--lock", bad, "--", "true"]).assert().code(125);
    }
    backoff(["--lock", "job", "--lock-ttl", "500ms", "--", "true"])
        .assert()
        .code(125)
        .stderr(predicates::str::contains("must be from 1s to 24h"));
}
