//! The circuit breaker shared by processes: real concurrent processes on
//! one key, in the file store and in a real redis-server on loopback.

use std::path::Path;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::fleet::{Redis, redis_cli};
use crate::support::{PATIENCE, Running, TempDir, backoff, command, events};

/// Every decision must reach the store, however loaded the machine.
const LIVE: [&str; 2] = ["--budget-store-timeout", "10s"];

/// Where a test's breakers live: a directory, or a Redis server.
enum Store<'a> {
    Dir(&'a Path),
    Redis(&'a Redis),
}

impl Store<'_> {
    fn args(&self) -> Vec<String> {
        match self {
            Store::Dir(d) => vec!["--budget-dir".into(), d.display().to_string()],
            Store::Redis(r) => vec!["--budget-store".into(), r.url()],
        }
    }

    /// Sets the circuit `key` to one that opened after `failures` runs and
    /// whose cooldown ended a minute ago: the next run probes it.
    fn half_open(&self, key: &str, failures: u32) {
        self.set(key, failures, now_ms() - 120_000, now_ms() - 60_000);
    }

    /// Stores the circuit `key` as opened at `opened` (Unix milliseconds)
    /// after `failures` runs, to reopen at `until`, with no probe.
    fn set(&self, key: &str, failures: u32, opened: u64, until: u64) {
        match self {
            Store::Dir(d) => {
                std::fs::create_dir_all(d).unwrap();
                std::fs::write(
                    d.join(format!("{key}.breaker")),
                    format!(
                        "backoff-breaker v1 failures {failures:010} opened {opened:020} until {until:020} probe {:020}\n",
                        0
                    ),
                )
                .unwrap();
            }
            Store::Redis(r) => {
                let value = format!("v1 {failures} {opened} {until} 0");
                assert_eq!(
                    redis_cli(r, &["set", &format!("backoff:breaker:{key}"), &value]),
                    "OK"
                );
            }
        }
    }

    /// Writes something that is no breaker state as the state of `key`.
    fn corrupt(&self, key: &str) {
        match self {
            Store::Dir(d) => {
                std::fs::create_dir_all(d).unwrap();
                std::fs::write(d.join(format!("{key}.breaker")), "not a state\n").unwrap();
            }
            Store::Redis(r) => {
                redis_cli(r, &["set", &format!("backoff:breaker:{key}"), "garbage"]);
            }
        }
    }

    /// `backoff breaker show KEY --format json`.
    fn show(&self, key: &str) -> serde_json::Value {
        let out = backoff(["breaker", "show", key, "--format", "json"])
            .args(self.args())
            .args(LIVE)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        crate::support::json_of(crate::schema::Doc::BreakerShow, &out.stdout)
    }

    /// A run of `script` (by `sh -c`) with the breaker `key`.
    fn run(&self, key: &str, options: &[&str], script: &str) -> Output {
        backoff(["--breaker", key])
            .args(self.args())
            .args(LIVE)
            .args(options)
            .args(["--", "sh", "-c", script])
            .output()
            .unwrap()
    }
}

fn now_ms() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Waits for `child` to exit, within `PATIENCE`.
fn wait_exit(child: &mut Child) -> i32 {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().expect("exited");
        }
        assert!(Instant::now() < deadline, "a process did not exit");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Failures open the circuit, an open circuit skips runs, and a probe
/// closes it: the whole cycle in `store`.
fn the_cycle(store: &Store<'_>) {
    let key = "cycle";
    let limits = [
        "--breaker-failures",
        "2",
        "--attempts",
        "2",
        "--base",
        "1ms",
    ];
    assert_eq!(store.show(key)["failures"], 0, "nothing yet");
    let out = store.run(key, &limits, "exit 3");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(!stderr(&out).contains("circuit"), "{}", stderr(&out));
    assert_eq!(store.show(key)["failures"], 1);
    let out = store.run(key, &limits, "exit 3");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let text = stderr(&out);
    assert!(
        text.contains(&format!("backoff: circuit '{key}' is open until "))
            && text.ends_with(": 2 runs in a row gave up\n"),
        "{text}"
    );
    let shown = store.show(key);
    assert_eq!(shown["state"], "open", "{shown}");
    assert_eq!(shown["failures"], 2);
    // Open: the command does not run, and the run says until when.
    let out = store.run(key, &limits, "echo ran; exit 0");
    assert_eq!(out.status.code(), Some(75), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    let text = stderr(&out);
    assert!(
        text.starts_with(&format!("backoff: circuit '{key}' is open since "))
            && text.contains(" until ")
            && text.ends_with("(2 runs in a row gave up); not running the command\n"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 1, "one line: {text}");
    let out = store.run(key, &["--breaker-exit", "3"], "exit 0");
    assert_eq!(out.status.code(), Some(3), "--breaker-exit");
    // Half-open: one probe of one attempt; its success closes the circuit.
    store.half_open(key, 2);
    let out = store.run(key, &["--attempts", "5"], "echo probed; exit 0");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "probed\n");
    let text = stderr(&out);
    assert!(
        text.contains("this run probes it, without retries"),
        "{text}"
    );
    assert!(
        text.contains(&format!("the probe succeeded: circuit '{key}' is closed")),
        "{text}"
    );
    let shown = store.show(key);
    assert_eq!(
        (&shown["state"], &shown["failures"]),
        (&"closed".into(), &0.into())
    );
    // A failed probe, of one attempt however many are allowed, reopens it.
    store.half_open(key, 2);
    let out = store.run(
        key,
        &["--attempts", "5", "--base", "1ms"],
        "echo try; exit 4",
    );
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "try\n", "one attempt");
    assert!(stderr(&out).contains("the probe failed: circuit 'cycle' is open again until "));
    let shown = store.show(key);
    assert_eq!(
        (&shown["state"], &shown["failures"]),
        (&"open".into(), &3.into())
    );
    // reset closes it.
    let out = backoff(["breaker", "reset", key])
        .args(store.args())
        .args(LIVE)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(store.show(key)["state"], "closed");
}

#[test]
fn failures_open_the_circuit_an_open_one_skips_and_a_probe_closes_it_in_a_file() {
    let dir = TempDir::new("breaker-cycle");
    the_cycle(&Store::Dir(&dir.join("store")));
}

#[test]
fn failures_open_the_circuit_an_open_one_skips_and_a_probe_closes_it_in_redis() {
    let redis = Redis::start(None);
    the_cycle(&Store::Redis(&redis));
}

/// Twenty processes at once on a half-open circuit: exactly one runs the
/// command, the others skip. The probe's command holds until the others
/// have exited, then fails, and the circuit is open again.
fn twenty_at_once(store: &Store<'_>, dir: &TempDir) {
    let key = "twenty";
    store.half_open(key, 5);
    let log = dir.join("ran");
    let go = dir.join("go");
    let script = format!(
        "echo $$ >> '{}'; while [ ! -e '{}' ]; do sleep 0.01; done; exit 1",
        log.display(),
        go.display()
    );
    let mut children: Vec<Child> = (0..20)
        .map(|_| {
            command(["--breaker", key, "--breaker-cooldown", "1h"])
                .args(store.args())
                .args(LIVE)
                .args(["--", "sh", "-c", &script])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    // The nineteen that skip end by themselves; the probe waits.
    let deadline = Instant::now() + PATIENCE;
    let mut skipped = 0;
    while skipped < 19 {
        skipped = 0;
        for c in &mut children {
            if let Some(status) = c.try_wait().unwrap() {
                assert_eq!(status.code(), Some(75), "only the probe runs the command");
                skipped += 1;
            }
        }
        assert!(Instant::now() < deadline, "{skipped} of 19 skipped");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        std::fs::read_to_string(&log).unwrap().lines().count(),
        1,
        "exactly one probe"
    );
    std::fs::write(&go, "").unwrap();
    let codes: Vec<i32> = children.iter_mut().map(wait_exit).collect();
    assert_eq!(codes.iter().filter(|&&c| c == 1).count(), 1, "{codes:?}");
    let shown = store.show(key);
    assert_eq!(
        (&shown["state"], &shown["failures"]),
        (&"open".into(), &6.into())
    );
}

#[test]
fn twenty_processes_on_a_half_open_circuit_send_exactly_one_probe_through_a_file() {
    let dir = TempDir::new("breaker-20");
    twenty_at_once(&Store::Dir(&dir.join("store")), &dir);
}

#[test]
fn twenty_processes_on_a_half_open_circuit_send_exactly_one_probe_through_redis() {
    let dir = TempDir::new("breaker-20-redis");
    let redis = Redis::start(None);
    twenty_at_once(&Store::Redis(&redis), &dir);
}

/// A corrupt state: fail open starts closed (and says so), fail closed
/// skips the run; `show` refuses it and `reset` repairs it.
fn corrupt_state(store: &Store<'_>) {
    let key = "broken";
    store.corrupt(key);
    let out = store.run(key, &[], "echo ran");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ran\n");
    assert!(stderr(&out).contains("starting closed"), "{}", stderr(&out));
    store.corrupt(key);
    let out = store.run(key, &["--budget-store-fail", "closed"], "echo ran");
    assert_eq!(out.status.code(), Some(75), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    assert!(
        stderr(&out).contains("not running the command (--budget-store-fail closed)"),
        "{}",
        stderr(&out)
    );
    let out = backoff(["breaker", "show", key])
        .args(store.args())
        .args(LIVE)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    assert!(
        stderr(&out).contains(&format!("'backoff breaker reset {key}'"))
            && stderr(&out).contains("repairs it"),
        "{}",
        stderr(&out)
    );
    let reset = backoff(["breaker", "reset", key])
        .args(store.args())
        .args(LIVE)
        .output()
        .unwrap();
    assert!(reset.status.success(), "{reset:?}");
    assert_eq!(store.show(key)["state"], "closed");
}

#[test]
fn a_corrupt_breaker_file_follows_the_fail_mode_and_reset_repairs_it() {
    let dir = TempDir::new("breaker-corrupt");
    corrupt_state(&Store::Dir(&dir.join("store")));
}

#[test]
fn a_corrupt_breaker_key_follows_the_fail_mode_and_reset_repairs_it() {
    let redis = Redis::start(None);
    corrupt_state(&Store::Redis(&redis));
}

#[test]
fn with_the_store_down_the_command_runs_or_not_as_the_fail_mode_says() {
    let redis = Redis::start(None);
    let url = redis.url();
    drop(redis);
    let run = |fail: &str| {
        backoff(["--breaker", "down", "--budget-store", &url])
            .args(["--budget-store-fail", fail])
            .args(["--", "sh", "-c", "echo ran"])
            .output()
            .unwrap()
    };
    let open = run("open");
    assert_eq!(open.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&open.stdout), "ran\n");
    let text = stderr(&open);
    assert!(
        text.contains("circuit breaker 'down' store redis://127.0.0.1:")
            && text.contains("unavailable (")
            && text.contains("); running the command"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 1, "said once: {text}");
    let closed = run("closed");
    assert_eq!(closed.status.code(), Some(75));
    assert!(closed.stdout.is_empty());
}

#[test]
fn an_interrupted_probe_lets_the_next_run_probe_at_once() {
    let dir = TempDir::new("breaker-int");
    let store = Store::Dir(&dir.join("store"));
    store.half_open("int", 5);
    let mut probe = Running::start_with_stderr({
        let mut cmd = command(["--breaker", "int", "--breaker-cooldown", "1h"]);
        cmd.args(store.args())
            .args(["--", "sh", "-c", "echo probing >&2; sleep 30"]);
        cmd
    });
    probe.wait_for("probing");
    assert!(store.show("int")["probe_until"].is_string());
    probe.signal(libc::SIGTERM);
    let _ = probe.wait_exit(PATIENCE);
    assert!(
        store.show("int")["probe_until"].is_null(),
        "the claim is gone"
    );
    let out = store.run("int", &["--breaker-cooldown", "1h"], "exit 0");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("this run probes it"));
}

#[test]
fn the_breaker_shows_in_the_events_the_report_and_the_metrics() {
    let dir = TempDir::new("breaker-report");
    let store = Store::Dir(&dir.join("store"));
    let report = dir.join("report.json");
    let metrics = dir.join("metrics.prom");
    let files = |extra: &[&str]| {
        let mut v = vec![
            "--log-format".to_owned(),
            "json".into(),
            "--report".into(),
            report.display().to_string(),
            "--metrics-file".into(),
            metrics.display().to_string(),
            "--breaker-failures".into(),
            "1".into(),
            "--attempts".into(),
            "1".into(),
        ];
        v.extend(extra.iter().map(|s| (*s).to_owned()));
        v
    };
    let args = files(&[]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = store.run("rep", &args, "exit 2");
    assert_eq!(out.status.code(), Some(2));
    let ev = events(&out.stderr);
    let decision = ev.iter().find(|e| e["event"] == "breaker").unwrap();
    assert_eq!(
        (&decision["decision"], &decision["state"]),
        (&"run".into(), &"closed".into())
    );
    let update = ev.iter().find(|e| e["event"] == "breaker_update").unwrap();
    assert_eq!(
        (&update["state"], &update["failures"], &update["run"]),
        (&"open".into(), &1.into(), &"gave_up".into())
    );
    let doc: serde_json::Value = crate::support::report_at(&report);
    assert_eq!(doc["breaker"]["state_after"], "open", "{doc}");
    let prom = std::fs::read_to_string(&metrics).unwrap();
    assert!(
        prom.contains("backoff_breaker_state{name=\"sh\"} 1\n"),
        "{prom}"
    );
    assert!(
        prom.contains("backoff_breaker_skipped_total{name=\"sh\"} 0\n"),
        "{prom}"
    );
    // A skipped run: no attempt, reason breaker_open, one more skip.
    let out = store.run("rep", &args, "exit 0");
    assert_eq!(out.status.code(), Some(75));
    let ev = events(&out.stderr);
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert_eq!(
        (&ev[0]["decision"], &ev[0]["state"]),
        (&"skip".into(), &"open".into())
    );
    assert!(ev[0]["until"].is_string());
    let doc: serde_json::Value = crate::support::report_at(&report);
    assert_eq!(doc["reason"], "breaker_open");
    assert_eq!(doc["attempts"].as_array().unwrap().len(), 0);
    let prom = std::fs::read_to_string(&metrics).unwrap();
    assert!(
        prom.contains("backoff_breaker_skipped_total{name=\"sh\"} 1\n"),
        "{prom}"
    );
}

#[test]
fn bad_breaker_options_are_refused() {
    for (args, message) in [
        (
            &["--breaker", "k", "--until-failure", "3"][..],
            "'--breaker' cannot be used with '--until-failure'",
        ),
        (
            &["--breaker", "k", "--breaker-failures", "0"][..],
            "--breaker-failures",
        ),
        (
            &["--breaker", "k", "--breaker-cooldown", "0s"][..],
            "--breaker-cooldown",
        ),
        (&["--breaker", "../k"][..], "--breaker"),
        (
            &["--breaker", "k", "--breaker-exit", "256"][..],
            "--breaker-exit",
        ),
    ] {
        let out = backoff(args).args(["--", "true"]).output().unwrap();
        assert_eq!(out.status.code(), Some(125), "{args:?}");
        let text = stderr(&out);
        assert!(text.contains(message), "{args:?}: {text}");
        assert_eq!(text.lines().count(), 1, "{args:?}: {text}");
    }
}

/// A probe that outlives its claim: another run probes and closes the
/// circuit, and the first probe's failure then counts as any run's, and
/// does not reopen it.
fn a_late_probe(store: &Store<'_>, dir: &TempDir) {
    let key = "late";
    let opts = ["--breaker-failures", "3", "--breaker-cooldown", "1s"];
    store.half_open(key, 3);
    let go = dir.join("go");
    let mut first = Running::start_with_stderr({
        let mut cmd = command(["--breaker", key]);
        cmd.args(store.args())
            .args(LIVE)
            .args(opts)
            .args(["--", "sh", "-c"])
            .arg(format!(
                "echo first probe >&2; while [ ! -e '{}' ]; do sleep 0.01; done; exit 1",
                go.display()
            ));
        cmd
    });
    first.wait_for("first probe");
    // Its claim runs out a cooldown after it began.
    let claim = store.show(key)["probe_until"].as_str().unwrap().to_owned();
    let claim = humantime::parse_rfc3339(&claim).unwrap();
    let deadline = Instant::now() + PATIENCE;
    while SystemTime::now() <= claim {
        assert!(Instant::now() < deadline, "the claim did not run out");
        std::thread::sleep(Duration::from_millis(10));
    }
    let second = store.run(key, &opts, "exit 0");
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    assert!(
        stderr(&second).contains("the probe succeeded"),
        "{}",
        stderr(&second)
    );
    std::fs::write(&go, "").unwrap();
    let (status, _) = first.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(1));
    assert!(
        !first.stderr().join("\n").contains("open again"),
        "{:?}",
        first.stderr()
    );
    let shown = store.show(key);
    assert_eq!(
        (&shown["state"], &shown["failures"]),
        (&"closed".into(), &1.into()),
        "{shown}"
    );
}

#[test]
fn a_probe_that_outlived_its_claim_does_not_reopen_a_closed_circuit_in_a_file() {
    let dir = TempDir::new("breaker-late");
    a_late_probe(&Store::Dir(&dir.join("store")), &dir);
}

#[test]
fn a_probe_that_outlived_its_claim_does_not_reopen_a_closed_circuit_in_redis() {
    let dir = TempDir::new("breaker-late-redis");
    let redis = Redis::start(None);
    a_late_probe(&Store::Redis(&redis), &dir);
}

#[test]
fn a_skipped_run_is_skipped_in_the_github_step_and_says_why_in_its_summary() {
    let dir = TempDir::new("breaker-gh");
    let store = Store::Dir(&dir.join("store"));
    let output = dir.join("output");
    let summary = dir.join("summary");
    let run = || {
        backoff([
            "--breaker",
            "gh",
            "--breaker-failures",
            "1",
            "--attempts",
            "1",
        ])
        .args(store.args())
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_OUTPUT", &output)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .args(["--", "false"])
        .output()
        .unwrap()
    };
    assert_eq!(run().status.code(), Some(1));
    std::fs::remove_file(&output).unwrap();
    std::fs::remove_file(&summary).unwrap();
    let out = run();
    assert_eq!(out.status.code(), Some(75));
    let text = stderr(&out);
    assert!(
        text.starts_with("::warning title=backoff::circuit 'gh' is open since "),
        "{text}"
    );
    assert_eq!(
        crate::ci::outputs(&output),
        crate::ci::expected(0, 0, 75, "skipped", "breaker_open")
    );
    let doc = std::fs::read_to_string(&summary).unwrap();
    assert!(
        doc.contains("circuit 'gh' is open since ") && doc.contains("not running the command"),
        "{doc}"
    );
}

/// A state past year 9999 is corrupt, as any other: said once, the fail
/// mode applies, `show` refuses it in one line; nothing panics.
fn past_year_9999(store: &Store<'_>) {
    let key = "far";
    // Year 11476.
    let far = 300_000_000_000_000;
    store.set(key, 3, far, far);
    let out = store.run(key, &[], "echo ran");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ran\n");
    let text = stderr(&out);
    let said: Vec<&str> = text.lines().collect();
    assert_eq!(said.len(), 1, "said once: {said:?}");
    assert!(
        said[0].contains("corrupt") && said[0].contains("starting closed"),
        "{said:?}"
    );
    store.set(key, 3, far, far);
    let out = store.run(key, &["--budget-store-fail", "closed"], "echo ran");
    assert_eq!(out.status.code(), Some(75), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    for format in ["text", "json"] {
        let out = backoff(["breaker", "show", key, "--format", format])
            .args(store.args())
            .args(LIVE)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(125), "{}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
        assert!(stderr(&out).contains("corrupt"), "{}", stderr(&out));
    }
}

#[test]
fn a_breaker_file_past_year_9999_is_corrupt() {
    let dir = TempDir::new("breaker-far");
    past_year_9999(&Store::Dir(&dir.join("store")));
}

#[test]
fn a_breaker_key_past_year_9999_is_corrupt() {
    let redis = Redis::start(None);
    past_year_9999(&Store::Redis(&redis));
}

/// A circuit stored by a clock 30 days ahead (the same as this clock
/// stepped back 30 days) reopens one cooldown from now at most.
fn stored_by_a_clock_ahead(store: &Store<'_>) {
    let key = "ahead";
    let month = 30 * 24 * 3600 * 1000;
    store.set(key, 3, now_ms() + month, now_ms() + month + 2000);
    let cooldown = ["--breaker-cooldown", "2s"];
    let started = Instant::now();
    let out = store.run(key, &cooldown, "echo ran");
    assert_eq!(
        out.status.code(),
        Some(75),
        "open for now: {}",
        stderr(&out)
    );
    // The run stored the reopening it trusted: one cooldown away.
    let shown = store.show(key);
    assert_eq!(shown["state"], "open", "{shown}");
    let until = humantime::parse_rfc3339(shown["until"].as_str().unwrap()).unwrap();
    assert!(
        until <= SystemTime::now() + Duration::from_secs(2),
        "{shown}"
    );
    // Probed once the cooldown has passed, not in a month.
    let deadline = started + PATIENCE;
    loop {
        let out = store.run(key, &cooldown, "echo ran");
        if out.status.code() == Some(0) {
            assert_eq!(String::from_utf8_lossy(&out.stdout), "ran\n");
            assert!(
                stderr(&out).contains("this run probes it"),
                "{}",
                stderr(&out)
            );
            break;
        }
        assert_eq!(out.status.code(), Some(75), "{}", stderr(&out));
        assert!(
            Instant::now() < deadline,
            "still open after {PATIENCE:?}: {}",
            stderr(&out)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(store.show(key)["state"], "closed");
}

#[test]
fn a_breaker_file_from_a_clock_30_days_ahead_waits_one_cooldown_at_most() {
    let dir = TempDir::new("breaker-ahead");
    stored_by_a_clock_ahead(&Store::Dir(&dir.join("store")));
}

#[test]
fn a_breaker_key_from_a_clock_30_days_ahead_waits_one_cooldown_at_most() {
    let redis = Redis::start(None);
    stored_by_a_clock_ahead(&Store::Redis(&redis));
}

#[test]
fn a_breaker_file_others_may_write_is_not_trusted() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("breaker-0666");
    let store_dir = dir.join("store");
    let store = Store::Dir(&store_dir);
    // Open for an hour, by whoever could write it.
    store.set("shared", 3, now_ms(), now_ms() + 3_600_000);
    let file = store_dir.join("shared.breaker");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = store.run("shared", &[], "echo ran");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ran\n");
    let text = stderr(&out);
    assert!(
        text.contains(&format!("'{}' is writable by other users", file.display()))
            && text.contains("running the command"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 1, "{text}");
    let out = store.run("shared", &["--budget-store-fail", "closed"], "echo ran");
    assert_eq!(out.status.code(), Some(75), "{}", stderr(&out));
    for cmd in ["show", "reset"] {
        let out = backoff(["breaker", cmd, "shared"])
            .args(store.args())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(125), "{cmd}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("is writable by other users"),
            "{}",
            stderr(&out)
        );
    }
    // The mode an owner fixes is trusted again.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(store.show("shared")["state"], "open");
}

#[test]
fn a_signal_during_the_breakers_decision_ends_the_run_by_it_and_says_so() {
    let dir = TempDir::new("breaker-signal");
    let store = dir.join("store");
    // A run makes the state.
    backoff(["--breaker", "held", "--budget-dir"])
        .arg(&store)
        .args(["--", "true"])
        .assert()
        .success();
    let mut holder = crate::budget::hold_lock(&store.join("held.breaker"));
    let marker = dir.join("ran");
    let mut cmd = command([
        "--breaker",
        "held",
        "--budget-store-timeout",
        "1m",
        "--budget-dir",
    ]);
    cmd.arg(&store).args(["--", "touch"]).arg(&marker);
    let mut run = Running::start(cmd);
    crate::support::eventually("backoff waiting in the lock's queue", || {
        crate::budget::waits_for_lock(run.pid())
    });
    run.dies_by_within_a_second(libc::SIGTERM);
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert!(!marker.exists(), "the command never ran");
    assert_eq!(
        run.stderr(),
        [
            "backoff: interrupted by SIGTERM during the circuit breaker's decision; no attempt follows"
        ]
    );
}
