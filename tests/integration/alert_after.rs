//! `--alert-after N`: a failed run is tolerated while fewer than N runs of
//! the job have failed in a row. A local monitor sees its end check-in as
//! a log entry (`URL/log`), then the Nth failure as `URL/N`, then a
//! success; two "hosts" (two state directories) share the count through a
//! real Redis and a Redis Cluster, and runs that end at once lose no count;
//! a run a signal ends is not counted; a tolerated failure keeps `--output on-failure` silent and
//! calls neither `--on-give-up` nor `--ping-fail`; bad input, a record out
//! of shape and a store that is down all alert.

use std::os::unix::process::ExitStatusExt;
use std::process::Output;

use crate::cluster::Cluster;
use crate::fleet::{Redis, free_port, redis_cli};
use crate::pings::Monitor;
use crate::schema::Doc;
use crate::support::{
    PATIENCE, Running, TempDir, backoff, command, events, json_of, make_fifo, output_within,
    report_at,
};

const UUID: &str = "0c5a7d2e-4b1f-4e8a-9c3d-2f6e8a1b5c7d";

/// The words of a run of the job `nightly` under `--alert-after 2` in the
/// state directory `host` of `dir`, with `extra` options, whose command is
/// the shell's `script`.
fn job(dir: &TempDir, host: &str, extra: &[&str], script: &str) -> Vec<String> {
    let mut args: Vec<String> = [
        "--budget-dir",
        dir.join(host).to_str().unwrap(),
        "--name",
        "nightly",
        "--alert-after",
        "2",
        "--max-retries",
        "0",
        "--budget-store-timeout",
        "10s",
    ]
    .iter()
    .chain(extra)
    .map(|&a| a.to_owned())
    .collect();
    args.extend(["--", "sh", "-c", script].map(str::to_owned));
    args
}

/// A run of `job` whose command exits `status` after a line of output.
fn run(dir: &TempDir, host: &str, extra: &[&str], status: u8) -> Output {
    let script = format!("echo output of the job; exit {status}");
    backoff(job(dir, host, extra, &script))
        .current_dir(dir.path())
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The end check-in of the run whose start was request `start`: its path
/// and its body.
fn end_check_in(m: &Monitor, start: usize) -> String {
    let got = m.requests(start + 2);
    assert!(got[start].starts_with("GET /"), "{got:?}");
    got[start + 1].clone()
}

#[test]
fn a_first_failure_is_logged_the_second_alerts_and_a_success_starts_the_count_again() {
    let dir = TempDir::new("alert-after-file");
    let m = Monitor::start("ok");
    let url = m.url(UUID);
    let ping = ["--ping", url.as_str()];

    let first = run(&dir, "host", &ping, 3);
    assert_eq!(first.status.code(), Some(3), "{}", stderr(&first));
    let end = end_check_in(&m, 0);
    assert!(end.starts_with(&format!("POST /{UUID}/log?rid=")), "{end}");
    assert!(
        end.contains("tolerated (1 of 2): a failed run, logged without an alert (--alert-after 2)"),
        "{end}"
    );
    assert!(
        stderr(&first).contains("job 'nightly': tolerated (1 of 2)"),
        "{}",
        stderr(&first)
    );

    let second = run(&dir, "host", &ping, 3);
    assert_eq!(second.status.code(), Some(3));
    let end = end_check_in(&m, 2);
    assert!(end.starts_with(&format!("POST /{UUID}/3?rid=")), "{end}");
    assert!(end.contains("alerting (2 of 2)"), "{end}");

    let success = run(&dir, "host", &["--ping", &url, "-v"], 0);
    assert!(success.status.success(), "{}", stderr(&success));
    let end = end_check_in(&m, 4);
    assert!(end.starts_with(&format!("POST /{UUID}?rid=")), "{end}");
    assert!(
        stderr(&success).contains("its count of failed runs in a row starts again (it was 2)"),
        "{}",
        stderr(&success)
    );

    // The count started again: the next failure is tolerated.
    let report = dir.join("report.json");
    let again = run(
        &dir,
        "host",
        &[
            "--ping",
            &url,
            "--log-format",
            "json",
            "--report",
            report.to_str().unwrap(),
        ],
        3,
    );
    assert_eq!(again.status.code(), Some(3));
    assert!(end_check_in(&m, 6).starts_with(&format!("POST /{UUID}/log?rid=")));
    let alert = events(&again.stderr)
        .into_iter()
        .find(|e| e["event"] == "alert")
        .expect("an alert event");
    assert_eq!(alert["decision"], "tolerated");
    assert_eq!(alert["text"], "tolerated (1 of 2)");
    assert_eq!(alert["failures"], 1);
    let report = report_at(&report);
    assert_eq!(report["alert"]["text"], "tolerated (1 of 2)");
    assert_eq!(report["reason"], "exhausted");
}

/// Two "hosts" (two state directories) on the store at `store`: a
/// failure on each is the first and the second in a row, a success on
/// either starts the count again for both; `count` reads the key, if it
/// can.
fn two_hosts_share_the_count(store: &str, count: &dyn Fn() -> Option<String>) {
    let dir = TempDir::new("alert-after-hosts");
    let m = Monitor::start("ok");
    let url = m.url(UUID);
    let on = |host: &str, status: u8| {
        run(
            &dir,
            host,
            &["--ping", &url, "--budget-store", store, "-q"],
            status,
        )
    };
    assert_eq!(on("a", 1).status.code(), Some(1));
    assert!(end_check_in(&m, 0).starts_with(&format!("POST /{UUID}/log?rid=")));
    assert!(count().is_none_or(|c| c == "1"));
    // The other host's failure is the second in a row: it alerts.
    assert_eq!(on("b", 1).status.code(), Some(1));
    assert!(end_check_in(&m, 2).starts_with(&format!("POST /{UUID}/1?rid=")));
    assert!(count().is_none_or(|c| c == "2"));
    // A success on either host starts it again, for both.
    assert!(on("a", 0).status.success());
    assert!(count().is_none_or(|c| c.is_empty()));
    assert_eq!(on("b", 1).status.code(), Some(1));
    assert!(end_check_in(&m, 6).starts_with(&format!("POST /{UUID}/log?rid=")));
    // Neither host kept a count of its own.
    assert!(!dir.join("a").join("nightly.streak").exists());
    assert!(!dir.join("b").join("nightly.streak").exists());
}

#[test]
fn two_hosts_share_the_count_through_redis() {
    let redis = Redis::start(None);
    two_hosts_share_the_count(&redis.url(), &|| {
        Some(
            redis_cli(&redis, &["GET", "backoff:streak:nightly"])
                .trim()
                .to_owned(),
        )
    });
}

#[test]
fn two_hosts_share_the_count_through_a_redis_cluster() {
    let cluster = Cluster::start();
    two_hosts_share_the_count(&cluster.url(), &|| None);
}

#[test]
fn a_run_a_signal_ends_is_not_counted_and_alerts() {
    let dir = TempDir::new("alert-after-signal");
    let m = Monitor::start("ok");
    let url = m.url(UUID);
    assert_eq!(
        run(&dir, "host", &["--ping", &url], 1).status.code(),
        Some(1)
    );
    assert!(end_check_in(&m, 0).starts_with(&format!("POST /{UUID}/log?rid=")));
    let mut cmd = command(job(
        &dir,
        "host",
        &["--ping", &url],
        "echo started; sleep 30",
    ));
    cmd.current_dir(dir.path());
    let mut running = Running::start(cmd);
    running.wait_for("started");
    running.signal(libc::SIGTERM);
    let (status, _) = running.wait_exit(PATIENCE);
    assert_eq!(status.signal(), Some(libc::SIGTERM));
    assert!(end_check_in(&m, 2).starts_with(&format!("POST /{UUID}/143?rid=")));
    // Still one failure in a row: the next is the second, and alerts.
    assert_eq!(
        run(&dir, "host", &["--ping", &url], 1).status.code(),
        Some(1)
    );
    assert!(end_check_in(&m, 4).starts_with(&format!("POST /{UUID}/1?rid=")));
}

#[test]
fn a_tolerated_failure_keeps_kept_output_hooks_and_ping_fail_silent_and_the_next_does_not() {
    let dir = TempDir::new("alert-after-silent");
    let m = Monitor::start("ok");
    let url = m.url(UUID);
    let fail_url = m.url("fail-here");
    let hook = format!("echo gave up >> {}", dir.join("hook.log").display());
    let options = [
        "--output",
        "on-failure",
        "--ping",
        &url,
        "--ping-fail",
        &fail_url,
        "--on-give-up",
        &hook,
    ];
    let first = run(&dir, "host", &options, 4);
    assert_eq!(first.status.code(), Some(4));
    assert!(first.stdout.is_empty(), "{first:?}");
    assert!(first.stderr.is_empty(), "{}", stderr(&first));
    assert!(dir.lines("hook.log").is_empty());
    assert!(end_check_in(&m, 0).starts_with(&format!("POST /{UUID}/log?rid=")));

    let second = run(&dir, "host", &options, 4);
    assert_eq!(second.status.code(), Some(4));
    assert_eq!(
        String::from_utf8_lossy(&second.stdout),
        "output of the job\n"
    );
    assert!(
        stderr(&second).contains("giving up after 1 attempt")
            && stderr(&second).contains("alerting (2 of 2)"),
        "{}",
        stderr(&second)
    );
    assert_eq!(dir.lines("hook.log"), ["gave up"]);
    assert!(end_check_in(&m, 2).starts_with("POST /fail-here"));
}

#[test]
fn bad_values_and_a_job_without_a_name_are_refused_with_one_line() {
    for (args, env, says) in [
        (
            vec!["--alert-after", "0", "--name", "j"],
            None,
            "invalid value '0' for '--alert-after': must be at least 1",
        ),
        (
            vec!["--alert-after", "-1", "--name", "j"],
            None,
            "must be a whole number from 1 to 1000000",
        ),
        (
            vec!["--alert-after", "1000001", "--name", "j"],
            None,
            "must be a whole number from 1 to 1000000",
        ),
        (
            vec!["--alert-after", "two", "--name", "j"],
            None,
            "must be a whole number from 1 to 1000000",
        ),
        (vec!["--name", "j"], Some("0"), "BACKOFF_ALERT_AFTER"),
        (
            vec![],
            Some("2"),
            "--alert-after (from BACKOFF_ALERT_AFTER) counts the failed runs of a job",
        ),
        (
            vec!["--alert-after", "2"],
            None,
            "--alert-after counts the failed runs of a job, and this one has no name: add --name NAME",
        ),
        (
            vec!["--alert-after", "2", "--name", "my job"],
            None,
            "'my job' cannot name it",
        ),
    ] {
        let mut cmd = backoff(args.iter().chain(&["--", "true"]));
        if let Some(v) = env {
            cmd.env("BACKOFF_ALERT_AFTER", v);
        }
        let out = cmd.output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(125), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // The lock's key names a job that has no --name.
    let dir = TempDir::new("alert-after-lock-key");
    let out = backoff([
        "--budget-dir",
        dir.path().to_str().unwrap(),
        "--lock",
        "backup",
        "--alert-after",
        "3",
        "--max-retries",
        "0",
        "--",
        "false",
    ])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("job 'backup': tolerated (1 of 3)"));
    assert!(dir.join("backup.streak").exists());
}

#[test]
fn a_record_out_of_shape_is_said_once_and_the_failure_alerts() {
    let dir = TempDir::new("alert-after-hostile");
    let m = Monitor::start("ok");
    let url = m.url(UUID);
    std::fs::create_dir(dir.join("host")).unwrap();
    let record = dir.join("host").join("nightly.streak");
    // Garbage of a record's length, then a count too large to be one.
    for (n, garbage) in [
        "backoff-streak v1 failures -0000000000000000001\n".to_owned(),
        format!("backoff-streak v1 failures {:020}\n", u64::MAX),
        "x".repeat(1 << 20),
    ]
    .into_iter()
    .enumerate()
    {
        std::fs::write(&record, garbage).unwrap();
        let out = run(&dir, "host", &["--ping", &url], 1);
        assert_eq!(out.status.code(), Some(1));
        let err = stderr(&out);
        assert_eq!(err.matches("is corrupt").count(), 1, "{err}");
        assert!(err.contains("this failure alerts"), "{err}");
        assert!(
            end_check_in(&m, 2 * n).starts_with(&format!("POST /{UUID}/1?rid=")),
            "{:?}",
            m.dir_lines()
        );
        // Written anew as N failed runs in a row.
        assert_eq!(
            std::fs::read_to_string(&record).unwrap(),
            format!("backoff-streak v1 failures {:020}\n", 2)
        );
    }
    // A FIFO or a symbolic link in its place: the store cannot be used,
    // which is said even with -q, and the failure alerts, at once.
    std::fs::remove_file(&record).unwrap();
    make_fifo(&record);
    let out = run(&dir, "host", &["--ping", &url, "-q"], 1);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("is not a regular file") && err.contains("this failure alerts"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(end_check_in(&m, 6).starts_with(&format!("POST /{UUID}/1?rid=")));
    std::fs::remove_file(&record).unwrap();
    std::os::unix::fs::symlink(dir.join("elsewhere"), &record).unwrap();
    let out = run(&dir, "host", &["--ping", &url], 1);
    assert!(
        stderr(&out).contains("is a symbolic link"),
        "{}",
        stderr(&out)
    );
    assert!(end_check_in(&m, 8).starts_with(&format!("POST /{UUID}/1?rid=")));
    assert!(!dir.join("elsewhere").exists());
}

#[test]
fn a_redis_key_out_of_shape_is_said_once_and_replaced_and_the_failure_alerts() {
    let redis = Redis::start(None);
    let dir = TempDir::new("alert-after-hostile-redis");
    let store = redis.url();
    for setup in [
        vec!["RPUSH", "backoff:streak:nightly", "1"],
        vec!["SET", "backoff:streak:nightly", "-1"],
        // 1 MiB of garbage.
        vec![
            "EVAL",
            "return redis.call('SET', KEYS[1], string.rep('x', 1048576))",
            "1",
            "backoff:streak:nightly",
        ],
    ] {
        redis_cli(&redis, &["DEL", "backoff:streak:nightly"]);
        redis_cli(&redis, &setup);
        let out = run(&dir, "host", &["--budget-store", &store], 1);
        assert_eq!(out.status.code(), Some(1));
        let err = stderr(&out);
        assert_eq!(err.matches("holds").count(), 1, "{err}");
        assert!(err.contains("alerting (2 of 2)"), "{err}");
        assert_eq!(
            redis_cli(&redis, &["GET", "backoff:streak:nightly"]).trim(),
            "2"
        );
    }
}

#[test]
fn a_store_that_is_down_is_said_even_when_quiet_and_the_failure_alerts() {
    let dir = TempDir::new("alert-after-down");
    let m = Monitor::start("ok");
    let url = m.url(UUID);
    let down = format!("redis://127.0.0.1:{}", free_port());
    let out = run(
        &dir,
        "host",
        &[
            "--ping",
            &url,
            "--budget-store",
            &down,
            "-q",
            "--output",
            "on-failure",
        ],
        5,
    );
    assert_eq!(out.status.code(), Some(5));
    let err = stderr(&out);
    assert_eq!(
        err.matches("failure count 'nightly' store redis://127.0.0.1")
            .count(),
        1,
        "{err}"
    );
    assert!(
        err.contains("this failure alerts, as without --alert-after"),
        "{err}"
    );
    assert!(end_check_in(&m, 0).starts_with(&format!("POST /{UUID}/5?rid=")));
    // A report says so too.
    let report = dir.join("r.json");
    let out = run(
        &dir,
        "host",
        &[
            "--budget-store",
            &down,
            "--report",
            report.to_str().unwrap(),
        ],
        5,
    );
    assert_eq!(out.status.code(), Some(5));
    let report = json_of(Doc::Report, &std::fs::read(&report).unwrap());
    assert_eq!(report["alert"]["decision"], "unavailable");
}

#[test]
fn failures_that_end_at_once_are_all_counted_in_a_file_and_in_redis() {
    let redis = Redis::start(None);
    let dir = TempDir::new("alert-after-together");
    let store = redis.url();
    for extra in [vec![], vec!["--budget-store", store.as_str(), "-q"]] {
        let runs: Vec<std::process::Child> = (0..10)
            .map(|_| {
                let mut cmd = command(job(&dir, "host", &extra, "exit 1"));
                cmd.current_dir(dir.path())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null());
                cmd.spawn().unwrap()
            })
            .collect();
        for child in runs {
            assert_eq!(output_within(child).status.code(), Some(1));
        }
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("host").join("nightly.streak")).unwrap(),
        format!("backoff-streak v1 failures {:020}\n", 10)
    );
    assert_eq!(
        redis_cli(&redis, &["GET", "backoff:streak:nightly"]).trim(),
        "10"
    );
}
