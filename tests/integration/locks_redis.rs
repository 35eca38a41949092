//! `--lock KEY` as a lease in Redis and in a Redis Cluster: runs of two
//! "hosts" (two state directories, one store) never hold it at once, the
//! fencing tokens grow strictly, a store that stops answering loses the
//! lease within its time and ends the attempt, and both fail modes at
//! acquisition. (What holds under each fault is in `lock_faults`.)

use std::process::{Child, Stdio};

use predicates::prelude::*;

use crate::cluster::Cluster;
use crate::fleet::{Redis, free_port, redis_cli};
use crate::schema::Doc;
use crate::support::{PATIENCE, Running, TempDir, backoff, command, json_of, output_within};

/// Every call must reach the store, however loaded the machine.
const LIVE: [&str; 2] = ["--budget-store-timeout", "10s"];

/// A short lease, for tests that wait for one to run out.
const SHORT: [&str; 4] = ["--lock-ttl", "3s", "--kill-after", "0.5s"];

/// A run of "host" `host` (its own state directory) on the lock `job` in
/// the store at `url`, that waits its turn and logs its start, its token
/// and its end.
fn turn(dir: &TempDir, url: &str, host: usize) -> Child {
    let mut cmd = command([
        "--budget-dir",
        dir.join(&format!("host{host}")).to_str().unwrap(),
        "--budget-store",
        url,
        "--lock",
        "job",
        "--lock-wait",
        "60s",
        "--lock-ttl",
        "1s",
        "--kill-after",
        "0.1s",
    ]);
    cmd.args(LIVE)
        .args([
            "--",
            "sh",
            "-c",
            "echo \"start $BACKOFF_LOCK_TOKEN\" >> log; sleep 0.05; echo end >> log",
        ])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.spawn().unwrap()
}

/// Eight runs of two hosts on `url`: all run, one at a time, each with a
/// fencing token above the one before. The first waits a term first (the
/// store has no trace of the lock: its first use), a short one.
fn one_at_a_time_with_growing_tokens(url: &str) {
    let dir = TempDir::new("lock-redis-turns");
    // The first use of the lock, alone, which waits its term.
    let out = output_within(turn(&dir, url, 0));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the store had no trace of it"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let runs: Vec<Child> = (0..8).map(|i| turn(&dir, url, i % 2)).collect();
    for child in runs {
        let out = output_within(child);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let log = dir.lines("log");
    assert_eq!(log.len(), 18, "{log:?}");
    let mut last = 0;
    for pair in log.chunks(2) {
        let token: u64 = pair[0]
            .strip_prefix("start ")
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("no token: {log:?}"));
        assert!(token > last, "tokens must grow: {log:?}");
        last = token;
        assert_eq!(pair[1], "end", "overlap: {log:?}");
    }
}

/// `one_at_a_time_with_growing_tokens` on `redis`, which keeps the last
/// token with nobody holding the lock once all are done.
fn one_at_a_time_and_released(redis: &Redis) {
    one_at_a_time_with_growing_tokens(&redis.url());
    let fields = redis_cli(redis, &["hgetall", "backoff:lock:job"]);
    assert!(fields.contains("fence\n1"), "{fields}");
    assert!(!fields.contains("token"), "{fields}");
}

#[test]
fn runs_of_two_hosts_hold_a_lease_in_redis_one_at_a_time_with_growing_tokens() {
    one_at_a_time_and_released(&Redis::start(None));
}

#[test]
fn runs_hold_a_lease_in_a_redis_reached_over_its_unix_socket_one_at_a_time() {
    one_at_a_time_and_released(&Redis::start_unix(None));
}

#[test]
fn runs_hold_a_lease_in_a_cluster_one_at_a_time_with_growing_tokens() {
    let cluster = Cluster::start();
    one_at_a_time_with_growing_tokens(&cluster.url());
}

#[test]
fn a_held_lease_keeps_others_out_and_show_names_its_holder_and_token() {
    let redis = Redis::start(None);
    let url = redis.url();
    // A lock the store knows, whose last token was 41: the next is one more
    // (the server's clock in microseconds is far above).
    redis_cli(&redis, &["hset", "backoff:lock:job", "fence", "41"]);
    let mut holder = Running::start({
        let mut c = command(["--budget-store", &url, "--lock", "job"]);
        c.args(SHORT).args(LIVE).args([
            "--",
            "sh",
            "-c",
            "echo \"holding $BACKOFF_LOCK_TOKEN\"; exec sleep 60",
        ]);
        c
    });
    let line = holder.wait_for("holding");
    let first: u64 = line.strip_prefix("holding ").unwrap().parse().unwrap();
    assert!(first > 1_700_000_000_000_000, "{line}");
    backoff(["--budget-store", &url, "--lock", "job"])
        .args(LIVE)
        .args(["--", "echo", "never"])
        .assert()
        .code(75)
        .stdout("")
        .stderr(predicates::str::contains(format!(
            "lock 'job' is held by pid {} on ",
            holder.pid()
        )))
        // It did not wait: it does not say it did.
        .stderr(predicates::str::contains("after waiting").not());
    let shown = backoff([
        "lock",
        "show",
        "job",
        "--budget-store",
        &url,
        "--format",
        "json",
    ])
    .args(LIVE)
    .assert()
    .success()
    .get_output()
    .stdout
    .clone();
    let v = json_of(Doc::LockShow, &shown);
    assert_eq!(v["held"], true);
    assert_eq!(v["holder"]["pid"], holder.pid());
    assert_eq!(v["holder"]["token"], first);
    // Its liveness is its lease's, whatever host it runs on.
    let left = v["lease_left_seconds"].as_f64().unwrap();
    assert!(left > 0.0 && left <= 3.0, "{v}");
    // Removed with --force only; the token stays, so the next is larger.
    backoff(["lock", "reset", "job", "--budget-store", &url])
        .args(LIVE)
        .assert()
        .code(125)
        .stderr(predicates::str::contains("is held by a live lease of pid"))
        .stderr(predicates::str::contains(
            "unless renewed: --force removes it anyway (its holder ends at its next renewal)",
        ));
    backoff(["lock", "reset", "job", "--force", "--budget-store", &url])
        .args(LIVE)
        .assert()
        .success()
        .stderr(predicates::str::contains(
            "lock 'job' removed although held by pid",
        ))
        .stderr(predicates::str::contains(
            "at its next renewal for a lease in Redis; the next run takes the lock",
        ));
    // The next run takes the lock once the lease removed would have run
    // out, by which time its holder has seen it gone and ended.
    let out = backoff(["--budget-store", &url, "--lock", "job"])
        .args(SHORT)
        .args(LIVE)
        .args(["--", "sh", "-c", "echo $BACKOFF_LOCK_TOKEN"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let next: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert!(next > first, "{next} after {first}");
    holder.wait_for("lock 'job' was lost: ");
    assert!(
        holder
            .stderr()
            .iter()
            .any(|l| l.contains("was removed (backoff lock reset --force)")),
        "{:?}",
        holder.stderr()
    );
    let (status, _) = holder.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(75));
}

#[test]
fn a_lease_that_cannot_be_renewed_is_lost_within_its_time_and_ends_the_attempt() {
    let redis = Redis::start(None);
    let dir = TempDir::new("lock-lost");
    let report = dir.join("report.json");
    let mut cmd = command([
        "--budget-store",
        &redis.url(),
        "--lock",
        "job",
        "--lock-ttl",
        "1s",
        "--kill-after",
        "0.1s",
        "--report",
        report.to_str().unwrap(),
        "--on-give-up",
        "sleep 0.5; echo \"gave up: $BACKOFF_REASON\"",
    ]);
    cmd.args(LIVE)
        .args(["--", "sh", "-c", "echo started; exec sleep 60"]);
    let mut run = Running::start(cmd);
    run.wait_for("started");
    // The server stops answering: no renewal reaches it.
    redis.freeze();
    run.wait_for("lock 'job' was lost: it could not be renewed: the store did not answer for");
    // The hook that closes the run runs to its end.
    run.wait_for("gave up: lock_lost");
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(75));
    let r = crate::support::report_at(&report);
    assert_eq!(r["reason"], "lock_lost");
    assert_eq!(r["lock"]["decision"], "lost");
    // The token the run held it with is told.
    assert!(r["lock"]["token"].as_u64().is_some(), "{}", r["lock"]);
    assert_eq!(r["attempts"][0]["outcome"]["kind"], "timeout");
    assert_eq!(r["hooks"][0]["outcome"]["kind"], "exit", "{}", r["hooks"]);
    assert!(
        !run.stderr().iter().any(|l| l.contains("timed out")),
        "{:?}",
        run.stderr()
    );
}

#[test]
fn a_store_that_cannot_be_reached_follows_the_locks_fail_mode_at_acquisition() {
    let url = format!("redis://127.0.0.1:{}", free_port());
    backoff(["--budget-store", &url, "--lock", "job", "--", "echo", "ran"])
        .assert()
        .code(75)
        .stdout("")
        .stderr(predicates::str::contains(
            "lock 'job' store redis://127.0.0.1:",
        ))
        .stderr(predicates::str::contains(
            "not running the command: a run that cannot be sure it holds the lock does not run",
        ));
    backoff([
        "--budget-store",
        &url,
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
}

#[test]
fn a_hostile_lock_key_is_bounded_and_reset_removes_it() {
    let redis = Redis::start(None);
    let url = redis.url();
    // Not a hash: refused, and the fail mode decides.
    redis_cli(&redis, &["set", "backoff:lock:job", "junk"]);
    backoff([
        "--budget-store",
        &url,
        "--lock",
        "job",
        "--budget-store-fail",
        "closed",
    ])
    .args(LIVE)
    .args(["--", "echo", "ran"])
    .assert()
    .code(75)
    .stderr(predicates::str::contains(
        "the lock key holds a string, not a hash",
    ));
    backoff(["lock", "reset", "job", "--budget-store", &url])
        .args(LIVE)
        .assert()
        .success()
        .stderr(predicates::str::contains("lock 'job' was corrupt"));
    // A lease said to end in the year 5138 is trusted no more than a day.
    redis_cli(
        &redis,
        &[
            "hset",
            "backoff:lock:job",
            "token",
            "x",
            "expires",
            "99999999999999",
        ],
    );
    backoff(["--budget-store", &url, "--lock", "job"])
        .args(LIVE)
        .args(["--", "echo", "ran"])
        .assert()
        .code(75)
        .stderr(predicates::str::contains(
            "the lock key has a lease that ends too far ahead",
        ));
    redis_cli(&redis, &["del", "backoff:lock:job"]);
    // A live lease whose record is out of shape: its holder is unknown,
    // and nothing of the record is repeated.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let far = (now_ms + 3_600_000).to_string();
    let far = far.as_str();
    redis_cli(
        &redis,
        &[
            "hset",
            "backoff:lock:job",
            "token",
            "x",
            "expires",
            far,
            "record",
            "backoff-lock v1 pid 1 since 1 token - run r host \u{1b}[31mevil",
        ],
    );
    backoff(["--budget-store", &url, "--lock", "job"])
        .args(LIVE)
        .args(["--", "echo", "ran"])
        .assert()
        .code(75)
        .stderr(predicates::str::contains(
            "lock 'job' is held by another run (its record cannot be read)",
        ))
        .stderr(predicates::str::contains("\u{1b}").not());
    redis_cli(
        &redis,
        &["hset", "backoff:lock:job", "record", &"x".repeat(100_000)],
    );
    backoff(["lock", "show", "job", "--budget-store", &url])
        .args(LIVE)
        .assert()
        .success()
        .stdout(predicates::str::starts_with(
            "job: held, by a run whose record cannot be read",
        ));
}
