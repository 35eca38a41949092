//! The adaptive throttle in real runs: a fleet of processes sharing one
//! against a real server that rejects most requests, what a run tells of
//! its skips, a store that cannot be used, a corrupt state, and a signal
//! during a decision.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::http::{Reply, Server};
use crate::schema::Doc;
use crate::support::{Running, TempDir, backoff, command, events, json_of};

/// `backoff throttle show KEY --format json` for the store in `dir`.
fn show(dir: &Path, key: &str) -> serde_json::Value {
    let dir = dir.to_str().unwrap();
    show_in(&["--budget-dir", dir], key)
}

/// `backoff throttle show KEY --format json` for the store `store` names.
pub fn show_in(store: &[&str], key: &str) -> serde_json::Value {
    let out = backoff(["throttle", "show", key, "--format", "json"])
        .args(store)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_of(Doc::ThrottleShow, &out.stdout)
}

#[test]
fn fifty_processes_sharing_a_throttle_send_about_k_times_what_the_backend_accepts() {
    let dir = TempDir::new("throttle-50");
    let store = dir.join("store");
    fifty_against_a_server_that_rejects_four_in_five(&["--budget-dir", store.to_str().unwrap()]);
}

/// Fifty processes sharing the throttle `fleet` in `store` keep asking a
/// server that rejects four requests in five, whatever the load, for 8 s:
/// once its counts have settled, the fleet sends about K × what the server
/// accepts, plus about one request a window; the store counts far more
/// requests wanted than sent.
pub fn fifty_against_a_server_that_rejects_four_in_five(store: &[&str]) {
    let mut script = vec![Reply::new(503, "busy"); 4];
    script.push(Reply::new(200, "ok"));
    let server = Server::cycling(script);
    let window = Duration::from_secs(2);
    // Each process keeps asking: a success is followed by another run
    // (a streak that never completes), a failure by a retry.
    let children: Vec<_> = (0..50)
        .map(|_| {
            command([
                "-q",
                "--throttle",
                "fleet",
                "--throttle-window",
                "2s",
                "--consecutive",
                "1000000",
                "--max-retries",
                "1000000",
                "--max-time",
                "8s",
                "--base",
                "20ms",
                "--cap",
                "100ms",
                "--budget-store-timeout",
                "10s",
            ])
            .args(store)
            .args(["--", "curl", "-fsS", "-o", "/dev/null", "--max-time", "5"])
            .arg(&server.url)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    // What the processes said (with -q, only what went wrong), and how
    // they ended.
    let mut said = std::collections::BTreeMap::new();
    for child in children {
        let out = crate::support::output_within(child);
        let text = String::from_utf8_lossy(&out.stderr).into_owned();
        *said.entry((out.status.code(), text)).or_insert(0) += 1;
    }
    let shown = show_in(store, "fleet");
    let requests = server.requests();
    let sent = requests.len() as u64;
    // Every fifth request is accepted, in the order they came.
    let accepted = |from: usize| (from..requests.len()).filter(|i| i % 5 == 4).count() as u64;
    // Two windows after the first request (the fleet starts over a while
    // on a loaded machine), its counts have settled.
    let first = *requests.first().expect("no request reached the server");
    let settled = requests
        .iter()
        .position(|t| t.duration_since(first) >= 2 * window)
        .unwrap_or(requests.len());
    let (sent_after, accepts_after) = ((requests.len() - settled) as u64, accepted(settled));
    let span = requests
        .last()
        .map_or(Duration::ZERO, |t| t.duration_since(first))
        .saturating_sub(2 * window);
    let windows = span.as_secs() / window.as_secs() + 1;
    // K × accepts, and about one request a window that probes the backend
    // (that one is left to chance: it may not come in a few windows).
    assert!(
        sent_after <= 2 * accepts_after + 3 * windows + 4,
        "after two windows the fleet sent {sent_after} requests for {accepts_after} accepts in {windows} windows: {said:?}"
    );
    // The store counted every attempt wanted: far more than were sent.
    let wanted = shown["requests"].as_u64().unwrap();
    let skipped = shown["skips"].as_u64().unwrap();
    let accepts = shown["accepts"].as_u64().unwrap();
    assert!(
        wanted >= 20 * (wanted - skipped).max(1),
        "the last window: {shown}; the server saw {sent} requests in all"
    );
    // Over the last window too, what was sent is about K × accepts (+1).
    assert!(
        wanted - skipped <= 2 * accepts + 5,
        "the last window: {shown}"
    );
}

/// A run that fails fast and often enough for the throttle to skip most of
/// its attempts, with everything it tells of them.
#[test]
fn a_run_tells_of_every_skip_in_its_events_report_metrics_and_outputs() {
    let dir = TempDir::new("throttle-tells");
    let store = dir.join("store");
    let report = dir.join("report.json");
    let metrics = dir.join("metrics.prom");
    let outputs = dir.join("github-output");
    std::fs::write(&outputs, "").unwrap();
    let log = dir.join("attempts");
    let out = backoff([
        "--log-format",
        "json",
        "--throttle",
        "tells",
        "--max-retries",
        "30",
        "--base",
        "1ms",
        "--cap",
        "1ms",
        "--budget-dir",
    ])
    .arg(&store)
    .arg("--report")
    .arg(&report)
    .arg("--metrics-file")
    .arg(&metrics)
    .env("GITHUB_ACTIONS", "true")
    .env("GITHUB_OUTPUT", &outputs)
    .args(["--", "sh", "-c"])
    .arg(format!("echo x >> '{}'; exit 3", log.display()))
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let evs = events(&out.stderr);
    let decisions: Vec<_> = evs.iter().filter(|e| e["event"] == "throttle").collect();
    assert_eq!(decisions.len(), 31, "one decision per attempt: {stderr}");
    let skips = decisions.iter().filter(|e| e["decision"] == "skip").count();
    let sends = decisions.iter().filter(|e| e["decision"] == "send").count();
    assert_eq!(sends, dir.lines("attempts").len(), "{stderr}");
    // Nothing accepted: each request makes the next skip likelier.
    assert!(skips >= 15, "{skips} skips: {stderr}");
    assert_eq!(decisions[0]["probability"], 0.0);
    for (i, d) in (0u32..).zip(&decisions) {
        assert_eq!(d["requests"], i, "every decision counts the earlier ones");
        assert_eq!(d["accepts"], 0);
        let (r, p) = (f64::from(i), d["probability"].as_f64().unwrap());
        assert!((p - r / (r + 1.0)).abs() < 1e-12, "{d}");
    }
    let throttled = evs
        .iter()
        .filter(|e| e["event"] == "attempt_end" && e["outcome"]["kind"] == "throttled")
        .count();
    assert_eq!(throttled, skips, "{stderr}");
    // The last attempt ran and failed with 3, or was skipped: then the run
    // exits as the last attempt that ran.
    assert_eq!(out.status.code(), Some(3), "{stderr}");

    let report = crate::support::report_at(&report);
    assert_eq!(report["throttle"]["skipped"], skips as u64);
    assert_eq!(report["throttle"]["decisions"], 31);
    let metrics = std::fs::read_to_string(&metrics).unwrap();
    assert!(
        metrics.contains(&format!("backoff_throttled_total{{name=\"sh\"}} {skips}")),
        "{metrics}"
    );
    assert!(
        metrics.contains("backoff_throttle_reject_probability{name=\"sh\"} 0.9"),
        "{metrics}"
    );
    let outputs = std::fs::read_to_string(&outputs).unwrap();
    let value = outputs
        .split("throttled<<")
        .nth(1)
        .and_then(|rest| rest.lines().nth(1))
        .unwrap_or_default();
    assert_eq!(value, skips.to_string(), "{outputs}");
}

#[test]
fn a_store_that_cannot_be_used_sends_or_skips_as_the_fail_mode_says() {
    let dir = TempDir::new("throttle-down");
    // A file where the store's directory should be.
    let not_a_dir = dir.join("file");
    std::fs::write(&not_a_dir, "x").unwrap();
    let log = dir.join("attempts");
    let script = format!("echo x >> '{}'; exit 3", log.display());
    let run = |fail: &str| {
        backoff(["--throttle", "down", "--max-retries", "2", "--base", "1ms"])
            .arg("--budget-dir")
            .arg(&not_a_dir)
            .args(["--budget-store-fail", fail, "--", "sh", "-c", &script])
            .output()
            .unwrap()
    };
    let open = run("open");
    let stderr = String::from_utf8_lossy(&open.stderr);
    assert_eq!(open.status.code(), Some(3), "{stderr}");
    assert_eq!(dir.lines("attempts").len(), 3, "{stderr}");
    assert_eq!(
        stderr.matches("unavailable").count(),
        1,
        "said once: {stderr}"
    );
    assert!(stderr.contains("sending the attempt"), "{stderr}");

    std::fs::remove_file(&log).unwrap();
    let closed = run("closed");
    let stderr = String::from_utf8_lossy(&closed.stderr);
    assert_eq!(closed.status.code(), Some(75), "nothing ran: {stderr}");
    assert!(!log.exists(), "{stderr}");
    assert_eq!(
        stderr.matches("unavailable").count(),
        1,
        "said once: {stderr}"
    );
    assert!(stderr.contains("skipping the attempt"), "{stderr}");
}

#[test]
fn a_corrupt_state_becomes_a_fresh_window_or_is_left_alone() {
    let dir = TempDir::new("throttle-corrupt");
    let store = dir.join("store");
    // A state made by a run, then damaged.
    backoff(["--throttle", "bad", "--budget-dir"])
        .arg(&store)
        .args(["--", "true"])
        .assert()
        .success();
    let file = store.join("bad.throttle");
    let good = std::fs::read(&file).unwrap();
    let mut damaged = good.clone();
    let at = damaged.len() / 2;
    damaged[at] = b'x';
    for bad in [
        damaged,
        b"backoff-throttle v1\n".to_vec(),
        vec![b'9'; 100_000],
    ] {
        std::fs::write(&file, &bad).unwrap();
        let closed = backoff([
            "--throttle",
            "bad",
            "--budget-store-fail",
            "closed",
            "--max-retries",
            "0",
            "--budget-dir",
        ])
        .arg(&store)
        .args(["--", "true"])
        .output()
        .unwrap();
        let stderr = String::from_utf8_lossy(&closed.stderr);
        assert_eq!(closed.status.code(), Some(75), "{stderr}");
        assert!(stderr.contains("corrupt"), "{stderr}");
        assert_eq!(std::fs::read(&file).unwrap(), bad, "left alone");
        let open = backoff(["--throttle", "bad", "--budget-dir"])
            .arg(&store)
            .args(["--", "true"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&open.stderr);
        assert!(open.status.success(), "{stderr}");
        assert_eq!(stderr.matches("is corrupt").count(), 1, "{stderr}");
        assert_eq!(show(&store, "bad")["requests"], 1, "a fresh window");
    }
}

#[test]
fn a_signal_during_a_decision_ends_the_run_by_it_and_nothing_runs() {
    let dir = TempDir::new("throttle-signal");
    let store = dir.join("store");
    // A run makes the state: one request, accepted.
    backoff(["--throttle", "held", "--budget-dir"])
        .arg(&store)
        .args(["--", "true"])
        .assert()
        .success();
    let mut holder = crate::budget::hold_lock(&store.join("held.throttle"));
    let log = dir.join("attempts");
    let mut cmd = command([
        "-v",
        "--throttle",
        "held",
        "--budget-store-timeout",
        "1m",
        "--budget-dir",
    ]);
    cmd.arg(&store)
        .args(["--", "sh", "-c"])
        .arg(format!("echo x >> '{}'", log.display()));
    let mut running = Running::start(cmd);
    // Told before the first decision, which waits for the lock.
    running.wait_for("running");
    running.dies_by_within_a_second(libc::SIGTERM);
    assert!(!log.exists(), "the command never ran");
    assert!(
        running.stderr().contains(
            &"backoff: interrupted by SIGTERM during the adaptive throttle's decision; no attempt follows"
        ),
        "{:?}",
        running.seen
    );
    holder.kill().unwrap();
    holder.wait().unwrap();
    // The store is as it was: no request counted.
    assert_eq!(show(&store, "held")["requests"], 1);
}

#[test]
fn a_breakers_probe_is_never_skipped_and_a_run_of_skips_does_not_count_against_it() {
    let dir = TempDir::new("throttle-breaker");
    let store = dir.join("store");
    let store_args = ["--budget-dir", store.to_str().unwrap()];
    // A window in which every request was rejected: nearly every attempt is
    // skipped.
    let rejecting = || {
        backoff([
            "--throttle",
            "api",
            "--max-retries",
            "40",
            "--base",
            "1ms",
            "--cap",
            "1ms",
        ])
        .args(store_args)
        .args(["--", "false"])
        .output()
        .unwrap();
        assert!(show(&store, "api")["probability"].as_f64().unwrap() > 0.9);
    };
    rejecting();
    // Runs whose attempts were all skipped leave the circuit closed, its
    // count at 0.
    let mut all_skipped = 0;
    for _ in 0..5 {
        let out = backoff([
            "--breaker",
            "api",
            "--breaker-failures",
            "1",
            "--throttle",
            "api",
        ])
        .args(["--max-retries", "0", "-v"])
        .args(store_args)
        .args(["--", "true"])
        .output()
        .unwrap();
        if out.status.code() == Some(75) {
            all_skipped += 1;
        }
    }
    assert!(all_skipped >= 1, "no run was skipped");
    let breaker = backoff(["breaker", "show", "api", "--format", "json"])
        .args(store_args)
        .output()
        .unwrap();
    let breaker: serde_json::Value = serde_json::from_slice(&breaker.stdout).unwrap();
    assert_eq!(breaker["state"], "closed", "{breaker}");
    // Open the circuit; after the cooldown the probe runs, skip or not.
    backoff([
        "--breaker",
        "api",
        "--breaker-failures",
        "1",
        "--breaker-cooldown",
        "1s",
    ])
    .args(["--max-retries", "0"])
    .args(store_args)
    .args(["--", "false"])
    .assert()
    .code(1);
    rejecting();
    let deadline = Instant::now() + crate::support::PATIENCE;
    loop {
        let out = backoff([
            "--breaker",
            "api",
            "--breaker-cooldown",
            "1s",
            "--throttle",
            "api",
        ])
        .args(store_args)
        .args(["--", "echo", "probed"])
        .output()
        .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.success() {
            assert_eq!(String::from_utf8_lossy(&out.stdout), "probed\n");
            assert!(stderr.contains("this run probes it"), "{stderr}");
            break;
        }
        assert_eq!(out.status.code(), Some(75), "{stderr}");
        assert!(
            stderr.contains("circuit 'api' is open"),
            "not yet half-open: {stderr}"
        );
        assert!(Instant::now() < deadline, "never probed: {stderr}");
    }
}

#[test]
fn a_throttle_with_until_failure_is_refused() {
    let out = backoff(["--throttle", "api", "--until-failure", "3", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("'--throttle' cannot be used with '--until-failure'"),
        "{stderr}"
    );
}

#[test]
fn a_decision_to_send_that_ends_past_max_time_starts_no_attempt_and_says_so() {
    let dir = TempDir::new("throttle-late");
    let store = dir.join("store");
    // A run makes the state: with an accept for its request, the next
    // decision sends.
    backoff(["--throttle", "late", "--budget-dir"])
        .arg(&store)
        .args(["--", "true"])
        .assert()
        .success();
    let mut holder = crate::budget::hold_lock(&store.join("late.throttle"));
    let marker = dir.join("ran");
    let mut cmd = command([
        "--log-format",
        "json",
        "--throttle",
        "late",
        "--max-time",
        "1s",
        "--budget-store-timeout",
        "1m",
        "--budget-dir",
    ]);
    cmd.arg(&store).args(["--", "touch"]).arg(&marker);
    let mut running = Running::start(cmd);
    // The run starts before it says so: its deadline is at most 1s after
    // its start event is seen. The first decision waits for the lock until
    // then, and is made after it.
    running.wait_for("\"event\":\"start\"");
    let past_deadline = Instant::now() + Duration::from_millis(1100);
    std::thread::sleep(past_deadline.saturating_duration_since(Instant::now()));
    holder.kill().unwrap();
    holder.wait().unwrap();
    let (status, _) = running.wait_exit(crate::support::PATIENCE);
    let lines = running.stderr().join("\n");
    assert_eq!(status.code(), Some(124), "{lines}");
    assert!(!marker.exists(), "an attempt started after the deadline");
    let events = events(lines.as_bytes());
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["start", "throttle", "give_up"], "{lines}");
    assert_eq!(events[1]["decision"], "late");
    assert_eq!(events[1]["probability"], 0.0);
    assert_eq!(events[2]["attempts"], 0);
    assert_eq!(events[2]["outcome"], serde_json::Value::Null);
    assert_eq!(events[2]["reason"], "deadline");
}
