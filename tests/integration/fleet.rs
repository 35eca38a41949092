//! The retry budget in Redis, against a real redis-server on 127.0.0.1 that
//! each test starts on a free port and stops.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{PATIENCE, TempDir, backoff, command};

/// A redis-server of the test's own, stopped when dropped.
struct Redis {
    child: Child,
    port: u16,
    _dir: TempDir,
}

impl Redis {
    fn start(password: Option<&str>) -> Redis {
        let dir = TempDir::new("redis");
        let port = free_port();
        let mut cmd = Command::new("redis-server");
        cmd.args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .arg("--dir")
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        if let Some(p) = password {
            cmd.args(["--requirepass", p]);
        }
        let child = cmd
            .spawn()
            .expect("redis-server is needed for these tests (.ci/run installs it)");
        let deadline = Instant::now() + PATIENCE;
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(10));
        }
        Redis {
            child,
            port,
            _dir: dir,
        }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn level(url: &str, key: &str) -> u64 {
    let out = backoff([
        "budget",
        "show",
        key,
        "--format",
        "json",
        "--budget-store",
        url,
    ])
    .output()
    .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["micro_tokens"].as_u64().unwrap()
}

#[test]
fn fifty_processes_share_exactly_the_burst_through_redis() {
    let redis = Redis::start(None);
    let dir = TempDir::new("fleet-50");
    let log = dir.join("attempts");
    let children: Vec<_> = (0..50)
        .map(|_| {
            command([
                "--budget",
                "fleet",
                "--budget-burst",
                "5",
                "--base",
                "1ms",
                "--cap",
                "5ms",
            ])
            .args(["--budget-store", &redis.url(), "--", "sh", "-c"])
            .arg(format!("echo x >> '{}'; exit 4", log.display()))
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(4));
    }
    let attempts = std::fs::read_to_string(&log).unwrap().lines().count();
    assert_eq!(
        attempts,
        50 + 5,
        "first attempts plus exactly the burst of retries"
    );
    assert_eq!(level(&redis.url(), "fleet"), 0);
}

#[test]
fn successes_deposit_exactly_the_ratio_in_redis() {
    let redis = Redis::start(None);
    let run = |args: &[&str]| {
        backoff([
            "--budget",
            "dep",
            "--budget-ratio",
            "0.3",
            "--base",
            "1ms",
            "--cap",
            "2ms",
        ])
        .args(["--budget-store", &redis.url()])
        .args(args)
        .assert()
    };
    run(&["--max-retries", "10", "--", "false"]).code(1);
    assert_eq!(level(&redis.url(), "dep"), 0);
    for _ in 0..7 {
        run(&["--", "true"]).success();
    }
    assert_eq!(
        level(&redis.url(), "dep"),
        2_100_000,
        "7 x 0.3 = 2.1 exactly"
    );
    backoff(["budget", "reset", "dep", "--budget-store", &redis.url()])
        .assert()
        .success();
    assert_eq!(level(&redis.url(), "dep"), 10_000_000);
}

#[test]
fn with_redis_down_first_attempts_run_and_retries_follow_the_fail_mode() {
    let url = format!("redis://127.0.0.1:{}", free_port());
    let dir = TempDir::new("fleet-down");
    let log = dir.join("attempts");
    let script = format!("echo x >> '{}'; exit 2", log.display());
    let out = backoff([
        "--budget",
        "k",
        "--budget-store",
        &url,
        "--base",
        "1ms",
        "--max-retries",
        "3",
    ])
    .args(["--", "sh", "-c", &script])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        stderr.matches("unavailable").count(),
        1,
        "said once: {stderr}"
    );
    assert!(stderr.contains("retrying under the local policy"));
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 4);

    std::fs::remove_file(&log).unwrap();
    backoff([
        "--budget",
        "k",
        "--budget-store",
        &url,
        "--budget-store-fail",
        "closed",
    ])
    .args(["--", "sh", "-c", &script])
    .assert()
    .code(2);
    assert_eq!(
        std::fs::read_to_string(&log).unwrap().lines().count(),
        1,
        "no retry"
    );
}

#[test]
fn a_store_that_never_answers_costs_at_most_the_timeout_per_attempt() {
    // Connections complete in the kernel's backlog, but nothing ever answers.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("redis://127.0.0.1:{}", silent.local_addr().unwrap().port());
    let start = Instant::now();
    let out = backoff([
        "--budget",
        "k",
        "--budget-store",
        &url,
        "--budget-store-timeout",
        "200ms",
    ])
    .args(["--base", "1ms", "--max-retries", "3", "--", "false"])
    .timeout(PATIENCE)
    .output()
    .unwrap();
    let took = start.elapsed();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        took < Duration::from_secs(5),
        "three retries under a 200ms timeout took {took:?}"
    );
    drop(silent);
}

#[test]
fn a_password_in_the_url_never_shows() {
    let redis = Redis::start(Some("s3cretpw"));
    let dir = TempDir::new("fleet-secret");
    let report = dir.join("report.json");
    let metrics = dir.join("m.prom");
    let good = format!("redis://:s3cretpw@127.0.0.1:{}", redis.port);
    let bad = format!("redis://:wr0ngpw@127.0.0.1:{}", redis.port);
    for url in [&good, &bad] {
        let out = backoff([
            "-v",
            "--budget",
            "pw",
            "--budget-store",
            url,
            "--base",
            "1ms",
            "--max-retries",
            "1",
        ])
        .arg("--report")
        .arg(&report)
        .arg("--metrics-file")
        .arg(&metrics)
        .args(["--log-format", "json", "--", "false"])
        .output()
        .unwrap();
        let all = format!(
            "{}{}{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(&report).unwrap(),
            std::fs::read_to_string(&metrics).unwrap()
        );
        assert!(
            !all.contains("s3cretpw") && !all.contains("wr0ngpw"),
            "{all}"
        );
    }
    // The wrong password was reported, without itself.
    let out = backoff(["budget", "show", "pw", "--budget-store", &bad])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    let text = String::from_utf8(out.stderr).unwrap();
    assert!(text.contains("redis://:***@"), "{text}");
    assert!(!text.contains("wr0ngpw"));
    // And in the environment it is as good as a flag.
    backoff(["budget", "show", "pw"])
        .env("BACKOFF_BUDGET_STORE", &good)
        .assert()
        .success()
        .stdout(predicates::str::contains(
            "pw: 9 of 10 tokens (redis://:***@",
        ));
}

#[test]
fn bad_store_urls_are_refused() {
    for url in ["rediss://h:6379", "http://h", "redis://:pw@[bad"] {
        let out = backoff(["--budget", "k", "--budget-store", url, "--", "true"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(125), "{url}");
        let text = String::from_utf8(out.stderr).unwrap();
        assert!(text.contains("'--budget-store'"), "{text}");
        assert!(!text.contains(":pw@"), "{text}");
    }
    backoff(["--budget-store", "redis://h", "--", "true"])
        .assert()
        .code(125);
}
