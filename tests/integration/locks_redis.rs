//! `--lock KEY` as a lease in Redis and in a Redis Cluster: runs of two
//! "hosts" (two state directories, one store) never hold it at once, the
//! fencing tokens grow strictly, a store that stops answering loses the
//! lease within its time and ends the attempt, and both fail modes at
//! acquisition.

use std::process::{Child, Stdio};

use predicates::prelude::*;

use crate::cluster::Cluster;
use crate::fleet::{Redis, free_port, redis_cli};
use crate::schema::Doc;
use crate::support::{PATIENCE, Running, TempDir, backoff, command, json_of, output_within};

/// Every call must reach the store, however loaded the machine.
const LIVE: [&str; 2] = ["--budget-store-timeout", "10s"];

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
/// fencing token above the one before.
fn one_at_a_time_with_growing_tokens(url: &str) {
    let dir = TempDir::new("lock-redis-turns");
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
    assert_eq!(log.len(), 16, "{log:?}");
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

#[test]
fn runs_of_two_hosts_hold_a_lease_in_redis_one_at_a_time_with_growing_tokens() {
    let redis = Redis::start(None);
    one_at_a_time_with_growing_tokens(&redis.url());
    // Released by each: nobody holds it, and the counter stays.
    let fields = redis_cli(&redis, &["hgetall", "backoff:lock:job"]);
    assert!(fields.contains("fence\n8"), "{fields}");
    assert!(!fields.contains("token"), "{fields}");
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
    let mut holder = Running::start({
        let mut c = command(["--budget-store", &url, "--lock", "job"]);
        c.args(LIVE).args([
            "--",
            "sh",
            "-c",
            "echo \"holding $BACKOFF_LOCK_TOKEN\"; exec sleep 60",
        ]);
        c
    });
    let line = holder.wait_for("holding");
    assert_eq!(line, "holding 1");
    backoff(["--budget-store", &url, "--lock", "job"])
        .args(LIVE)
        .args(["--", "echo", "never"])
        .assert()
        .code(75)
        .stdout("")
        .stderr(predicates::str::contains(format!(
            "lock 'job' is held by pid {} on ",
            holder.pid()
        )));
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
    assert_eq!(v["holder"]["token"], 1);
    // Removed with --force only; the counter stays, so the next token is 2.
    backoff(["lock", "reset", "job", "--budget-store", &url])
        .args(LIVE)
        .assert()
        .code(125)
        .stderr(predicates::str::contains("--force removes it anyway"));
    backoff(["lock", "reset", "job", "--force", "--budget-store", &url])
        .args(LIVE)
        .assert()
        .success()
        .stderr(predicates::str::contains(
            "lock 'job' removed although held by pid",
        ))
        .stderr(predicates::str::contains(
            "ends at its next renewal if it is a lease in Redis",
        ));
    backoff(["--budget-store", &url, "--lock", "job"])
        .args(LIVE)
        .args(["--", "sh", "-c", "echo $BACKOFF_LOCK_TOKEN"])
        .assert()
        .success()
        .stdout("2\n");
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
        "--report",
        report.to_str().unwrap(),
        "--on-give-up",
        "echo \"gave up: $BACKOFF_REASON\"",
    ]);
    cmd.args(LIVE)
        .args(["--", "sh", "-c", "echo started; exec sleep 60"]);
    let mut run = Running::start(cmd);
    run.wait_for("started");
    // The server stops answering: no renewal reaches it.
    redis.freeze();
    run.wait_for(
        "lock 'job' was lost: its lease expired, or was removed, before it could be renewed",
    );
    run.wait_for("gave up: lock_lost");
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(75));
    let r = crate::support::report_at(&report);
    assert_eq!(r["reason"], "lock_lost");
    assert_eq!(r["lock"]["decision"], "lost");
    assert_eq!(r["attempts"][0]["outcome"]["kind"], "timeout");
}

#[test]
fn a_store_that_cannot_be_reached_follows_the_fail_mode_at_acquisition() {
    let url = format!("redis://127.0.0.1:{}", free_port());
    backoff(["--budget-store", &url, "--lock", "job", "--", "echo", "ran"])
        .assert()
        .success()
        .stdout("ran\n")
        .stderr(predicates::str::contains(
            "lock 'job' store redis://127.0.0.1:",
        ))
        .stderr(predicates::str::contains("running the command without it"));
    backoff([
        "--budget-store",
        &url,
        "--lock",
        "job",
        "--budget-store-fail",
        "closed",
        "--",
        "echo",
        "ran",
    ])
    .assert()
    .code(75)
    .stdout("")
    .stderr(predicates::str::contains(
        "not running the command (--budget-store-fail closed)",
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
        .success();
    // A live lease whose record is out of shape: its holder is unknown,
    // and nothing of the record is repeated.
    let far = "99999999999999";
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
