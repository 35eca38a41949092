//! The retry budget in Redis, against a real redis-server on 127.0.0.1 that
//! each test starts on a free port and stops.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{PATIENCE, TempDir, backoff, command, eventually, past_first_attempt, send};

/// A redis-server of the test's own, stopped when dropped.
pub struct Redis {
    child: Child,
    port: u16,
    dir: TempDir,
    /// The Unix socket it listens on instead of a port, if it does.
    socket: Option<std::path::PathBuf>,
}

impl Redis {
    pub fn start(password: Option<&str>) -> Redis {
        Redis::start_with(password, false)
    }

    /// With `tls`, the server listens with TLS only, with a certificate for
    /// 127.0.0.1 made for the test (`cert.pem` in its directory).
    fn start_with(password: Option<&str>, tls: bool) -> Redis {
        // A port found free may be taken by another test's server before
        // this one binds it: then another port.
        for _ in 0..5 {
            if let Some(redis) = Redis::try_start_on(free_port(), password, tls) {
                return redis;
            }
        }
        panic!("redis-server could not listen on any of 5 free ports");
    }

    /// A server on `port`, ready when this returns.
    pub fn start_on(port: u16, password: Option<&str>, tls: bool) -> Redis {
        Redis::try_start_on(port, password, tls)
            .unwrap_or_else(|| panic!("redis-server could not listen on port {port}"))
    }

    /// A server on `port`, ready; `None` when it ended at once (the port
    /// was taken).
    fn try_start_on(port: u16, password: Option<&str>, tls: bool) -> Option<Redis> {
        let dir = TempDir::new("redis");
        let mut cmd = Command::new("redis-server");
        cmd.args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if tls {
            crate::support::make_certificates(dir.path());
            cmd.args(["--port", "0", "--tls-port", &port.to_string()])
                .args(["--tls-auth-clients", "no"])
                .arg("--tls-cert-file")
                .arg(dir.join("cert.pem"))
                .arg("--tls-key-file")
                .arg(dir.join("key.pem"))
                .arg("--tls-ca-cert-file")
                .arg(dir.join("ca.pem"));
        } else {
            cmd.args(["--port", &port.to_string()]);
        }
        if let Some(p) = password {
            cmd.args(["--requirepass", p]);
        }
        let mut child = cmd
            .spawn()
            .expect("redis-server is needed for these tests (.ci/run installs it)");
        // Ready when it answers as a Redis does (what listens on the port
        // may be another test's server, which took it first), or gone.
        let deadline = Instant::now() + PATIENCE;
        loop {
            if child.try_wait().ok().flatten().is_some() {
                return None;
            }
            if tls {
                if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    break;
                }
            } else if answers_ping(port) {
                break;
            }
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(10));
        }
        Some(Redis {
            child,
            port,
            dir,
            socket: None,
        })
    }

    /// A server that listens on a Unix socket of its directory alone (no
    /// TCP port), with `password` when given; ready when this returns.
    pub fn start_unix(password: Option<&str>) -> Redis {
        let dir = TempDir::new("redis-unix");
        let socket = dir.join("redis.sock");
        let mut cmd = Command::new("redis-server");
        cmd.args(["--port", "0", "--unixsocketperm", "700"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--unixsocket")
            .arg(&socket)
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
        eventually("redis-server listens on its Unix socket", || {
            std::os::unix::net::UnixStream::connect(&socket).is_ok()
        });
        Redis {
            child,
            port: 0,
            dir,
            socket: Some(socket),
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn url(&self) -> String {
        match &self.socket {
            Some(socket) => format!("redis+unix://{}", socket.display()),
            None => format!("redis://127.0.0.1:{}", self.port),
        }
    }

    /// Stops the server (SIGSTOP): the kernel still accepts connections
    /// for it, but nothing answers.
    pub fn freeze(&self) {
        send(i32::try_from(self.child.id()).unwrap(), libc::SIGSTOP);
    }

    /// Lets a frozen server go on.
    pub fn thaw(&self) {
        send(i32::try_from(self.child.id()).unwrap(), libc::SIGCONT);
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether what listens on `port` answers `PING` as a Redis does (`+PONG`,
/// or `-NOAUTH` for one with a password).
pub fn answers_ping(port: u16) -> bool {
    use std::io::{Read as _, Write as _};
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let mut reply = [0u8; 7];
    s.write_all(b"PING\r\n").is_ok()
        && s.read_exact(&mut reply).is_ok()
        && (reply.starts_with(b"+PONG") || reply.starts_with(b"-NOAUTH"))
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A store timeout for the tests that count tokens against a live server:
/// every decision there must reach it, however loaded the machine (a TLS
/// handshake of a debug build can take longer than the default 250ms).
const LIVE: [&str; 2] = ["--budget-store-timeout", "10s"];

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
    .args(LIVE)
    .output()
    .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v = crate::support::json_of(crate::schema::Doc::BudgetShow, &out.stdout);
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
            .args(LIVE)
            .args(["--budget-store", &redis.url(), "--", "sh", "-c"])
            .arg(format!("echo x >> '{}'; exit 4", log.display()))
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    for child in children {
        let out = crate::support::output_within(child);
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
        .args(LIVE)
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
        .args(LIVE)
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
        .args(LIVE)
        .env("BACKOFF_BUDGET_STORE", &good)
        .assert()
        .success()
        .stdout(predicates::str::contains(
            "pw: 9 of 10 tokens, 0.1 a success (redis://:***@",
        ));
}

#[test]
fn bad_store_urls_are_refused() {
    for url in ["http://h", "redis://:pw@[bad", "rediss://:pw@[bad"] {
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

#[test]
fn a_budget_lives_in_a_redis_reached_over_its_unix_socket() {
    let redis = Redis::start_unix(Some("sockpw"));
    let url = format!("{}?db=3&pass=sockpw", redis.url());
    let out = backoff(["--budget", "local", "--budget-store", &url])
        .args(["--base", "1ms", "--max-retries", "2"])
        .args(LIVE)
        .args(["--", "false"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("backoff: retry budget"),
        "{out:?}"
    );
    // unix:// is the same; the password shows as ***.
    let socket = redis.socket.as_ref().unwrap().display().to_string();
    let shown = backoff(["budget", "show", "local", "--budget-store"])
        .arg(format!("unix://{socket}?db=3&pass=sockpw"))
        .args(LIVE)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.status.success(), "{shown:?}");
    assert!(
        text.contains(&format!("local: 8 of 10 tokens, 0.1 a success (unix://{socket}?db=3&pass=*** key backoff:budget:local)")),
        "{text}"
    );
    assert_eq!(
        redis_cli(
            &redis,
            &["-a", "sockpw", "--no-auth-warning", "-n", "3", "keys", "*"]
        ),
        "backoff:budget:local"
    );
    // A socket that is not there is a store error, which names no password.
    let out = backoff(["budget", "show", "local", "--budget-store"])
        .arg(format!("redis+unix://{socket}.gone?pass=sockpw"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() == Some(125) && err.contains(".gone?pass=***") && !err.contains("sockpw"),
        "{err}"
    );
}

#[test]
fn a_redis_url_that_asks_for_what_it_would_not_get_is_refused_at_once() {
    let redis = Redis::start_unix(Some("sockpw"));
    let socket = redis.socket.as_ref().unwrap().display().to_string();
    // Each would have reached the server: a misspelt parameter (database
    // 0 used, with others' keys), a database no server has, a database in
    // the query of a TCP URL.
    for (url, says) in [
        (
            format!("redis+unix://{socket}?database=3&pass=sockpw"),
            "a Unix socket's URL takes db, user, pass and protocol, not 'database'",
        ),
        (
            format!("unix://{socket}?db=-1&pass=sockpw"),
            "the database is a number from 0",
        ),
        (
            "redis://127.0.0.1:1/?db=3".to_owned(),
            "a redis:// URL names its database in its path, not in ?db= (redis://host:port/N)",
        ),
        (
            format!("redis+unix://{socket}?db=abc&pass=sockpw"),
            "the database is a number from 0 (a Redis has 16, 0 to 15, unless its `databases` says more), in ?db=",
        ),
    ] {
        let err = locked_run_says(&url, 125, says);
        assert!(
            !err.contains("sockpw") && !err.contains("InvalidClientConfig"),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

#[test]
fn a_unix_socket_path_that_is_no_socket_is_said_so() {
    let dir = TempDir::new("no-socket");
    let fifo = dir.join("redis.sock");
    crate::support::make_fifo(&fifo);
    let file = dir.join("redis.file");
    std::fs::write(&file, "").unwrap();
    for (path, what) in [(&fifo, "a FIFO"), (&file, "a regular file")] {
        let url = format!("redis+unix://{}", path.display());
        locked_run_says(
            &url,
            75,
            &format!("unavailable (the path is {what}, not a socket)"),
        );
    }
}

/// What a run of `true` under `--lock` kept in the store `url` said, once
/// it is checked to have exited with `code` and said `says`.
fn locked_run_says(url: &str, code: i32, says: &str) -> String {
    let out = backoff(["--lock", "job", "--budget-store", url, "--", "true"])
        .timeout(PATIENCE)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{url}: {err}");
    assert!(err.contains(says), "{url}: {err}");
    err
}

#[test]
fn rediss_urls_reach_a_redis_that_speaks_only_tls() {
    let redis = Redis::start_with(Some("tlspw"), true);
    let url = format!("rediss://:tlspw@127.0.0.1:{}", redis.port);
    let cert = redis.dir.join("ca.pem");
    backoff([
        "--budget",
        "tls",
        "--budget-store",
        &url,
        "--base",
        "1ms",
        "--max-retries",
        "2",
    ])
    .env("SSL_CERT_FILE", &cert)
    .args(LIVE)
    .args(["--", "false"])
    .assert()
    .code(1);
    let out = backoff([
        "budget",
        "show",
        "tls",
        "--format",
        "json",
        "--budget-store",
        &url,
    ])
    .args(LIVE)
    .env("SSL_CERT_FILE", &cert)
    .output()
    .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v = crate::support::json_of(crate::schema::Doc::BudgetShow, &out.stdout);
    assert_eq!(
        v["micro_tokens"], 8_000_000,
        "two retries took two tokens over TLS"
    );
    // A server whose certificate is not trusted is not used.
    let out = backoff(["budget", "show", "tls", "--budget-store", &url])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("tlspw"));
    // Nor is one when SSL_CERT_FILE names a FIFO, which is not opened:
    // the store error says so at once.
    let fifo = redis.dir.join("fifo");
    crate::support::make_fifo(&fifo);
    let out = backoff(["budget", "show", "tls", "--budget-store", &url])
        .env("SSL_CERT_FILE", &fifo)
        .timeout(PATIENCE)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() == Some(125)
            && err.contains(&format!(
                "SSL_CERT_FILE '{}' is not a regular file (a FIFO)",
                fifo.display()
            )),
        "{err}"
    );
}

#[test]
fn no_form_of_a_password_shows_not_even_with_a_slash_or_in_a_unix_url() {
    let redis = Redis::start(Some("top/secret"));
    let dir = TempDir::new("fleet-slash");
    let report = dir.join("report.json");
    let metrics = dir.join("m.prom");
    let port = redis.port;
    let forms = [
        "top/secret",
        "top%2Fsecret",
        "top%2fsecret",
        "wr/ong",
        "wr%2Fong",
        "hunter2",
    ];
    let urls = [
        // Unencoded: not a URL that parses, refused, and hidden all the same.
        format!("redis://:top/secret@127.0.0.1:{port}/0"),
        format!("redis://:top%2Fsecret@127.0.0.1:{port}/0"),
        format!("redis://:wr%2Fong@127.0.0.1:{port}/0"),
        "redis+unix:///nowhere/redis.sock?db=0&pass=hunter2".to_owned(),
        "unix:///nowhere/redis.sock?pass=hunter2".to_owned(),
    ];
    for url in &urls {
        let _ = std::fs::remove_file(&report);
        let _ = std::fs::remove_file(&metrics);
        let run = backoff(["-v", "--budget", "pw", "--budget-store", url])
            .args(LIVE)
            .args(["--base", "1ms", "--max-retries", "1", "--report"])
            .arg(&report)
            .arg("--metrics-file")
            .arg(&metrics)
            .args(["--", "false"])
            .timeout(PATIENCE)
            .output()
            .unwrap();
        let show = backoff(["budget", "show", "pw", "--budget-store", url])
            .timeout(PATIENCE)
            .output()
            .unwrap();
        let all = format!(
            "{}{}{}{}{}{}",
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr),
            String::from_utf8_lossy(&show.stdout),
            String::from_utf8_lossy(&show.stderr),
            std::fs::read_to_string(&report).unwrap_or_default(),
            std::fs::read_to_string(&metrics).unwrap_or_default(),
        );
        for form in forms {
            assert!(!all.contains(form), "{url}: {form} shows in {all}");
        }
        assert!(
            all.contains("***"),
            "{url}: the secret is named as hidden: {all}"
        );
    }
    // The encoded form is the usable one: it reached the server.
    backoff(["budget", "show", "pw", "--budget-store", &urls[1]])
        .args(LIVE)
        .timeout(PATIENCE)
        .assert()
        .success()
        .stdout(predicates::str::contains(
            "pw: 9 of 10 tokens, 0.1 a success (redis://:***@",
        ));
    // The unencoded form says how to write it.
    backoff(["budget", "show", "pw", "--budget-store", &urls[0]])
        .timeout(PATIENCE)
        .assert()
        .code(125)
        .stderr(predicates::str::contains("%2F"));
}

#[test]
fn a_frozen_store_costs_one_timeout_per_decision_and_no_attempt_follows_the_deadline() {
    let redis = Redis::start(None);
    redis.freeze();
    // One decision alone: the timeout, not two or three of them.
    let start = Instant::now();
    backoff(["budget", "show", "k", "--budget-store", &redis.url()])
        .args(["--budget-store-timeout", "2s"])
        .timeout(PATIENCE)
        .assert()
        .code(125)
        .stderr(predicates::str::contains("timed out after 2.00s"));
    let took = start.elapsed();
    assert!(
        took < Duration::from_millis(3500),
        "one decision took {took:?}"
    );

    // Under --max-time, the deadline is checked after each decision: the
    // second decision ends after it, so no third attempt starts, and the
    // run exits with the command's status, not 124.
    let dir = TempDir::new("fleet-frozen");
    let log = dir.join("attempts");
    let start = Instant::now();
    let out = backoff(["--budget", "k", "--budget-store", &redis.url()])
        .args([
            "--budget-store-timeout",
            "600ms",
            "--max-time",
            "1s",
            "--forever",
        ])
        .args(["--base", "1ms", "--cap", "1ms", "--jitter", "none"])
        .args(["--", "sh", "-c"])
        .arg(format!("echo x >> '{}'; exit 3", log.display()))
        .timeout(PATIENCE)
        .output()
        .unwrap();
    let took = start.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert_eq!(
        stderr.matches("timed out").count(),
        1,
        "said once: {stderr}"
    );
    let attempts = std::fs::read_to_string(&log).unwrap().lines().count();
    assert!(attempts <= 2, "{attempts} attempts: {stderr}");
    assert!(took < Duration::from_secs(3), "the run took {took:?}");
}

#[test]
fn a_signal_ends_a_decision_of_a_frozen_store_at_once() {
    let redis = Redis::start(None);
    redis.freeze();
    let mut cmd = command(["--budget", "k", "--budget-store", &redis.url()]);
    cmd.args(["--budget-store-timeout", "1m", "--base", "1ms"])
        .args(["--", "sh", "-c", "echo child $$; exit 3"]);
    past_first_attempt(cmd).dies_by_within_a_second(libc::SIGTERM);
}

/// Runs `redis-cli ARGS` against the test's server; returns its output.
pub fn redis_cli(redis: &Redis, args: &[&str]) -> String {
    let mut cli = Command::new("redis-cli");
    match &redis.socket {
        Some(socket) => cli.arg("-s").arg(socket),
        None => cli.args(["-h", "127.0.0.1", "-p", &redis.port.to_string()]),
    };
    let out = cli
        .args(args)
        .output()
        .expect("redis-cli comes with redis-server");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn a_corrupt_state_in_redis_becomes_a_fresh_bucket_and_reset_repairs_any() {
    let redis = Redis::start(None);
    let run = |key: &str, fail: &str| {
        backoff(["--budget", key, "--budget-store", &redis.url()])
            .args(LIVE)
            .args([
                "--budget-store-fail",
                fail,
                "--base",
                "1ms",
                "--max-retries",
                "2",
            ])
            .args(["--", "sh", "-c", "exit 3"])
            .timeout(PATIENCE)
            .output()
            .unwrap()
    };
    redis_cli(&redis, &["SET", "backoff:budget:c", "ten, trust me"]);
    let out = run("c", "open");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert_eq!(stderr.matches("corrupt").count(), 1, "said once: {stderr}");
    assert!(stderr.contains("starting a fresh bucket"), "{stderr}");
    assert_eq!(
        level(&redis.url(), "c"),
        8_000_000,
        "two retries from a full bucket"
    );

    // Closed: reported, left alone, not retried; show says so; reset repairs.
    redis_cli(&redis, &["SET", "backoff:budget:c", "ten, trust me"]);
    let out = run("c", "closed");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("corrupt") && stderr.contains("not retrying"),
        "{stderr}"
    );
    assert_eq!(stderr.matches("failed (exit 3)").count(), 1, "{stderr}");
    assert_eq!(
        redis_cli(&redis, &["GET", "backoff:budget:c"]),
        "ten, trust me"
    );
    backoff(["budget", "show", "c", "--budget-store", &redis.url()])
        .args(LIVE)
        .assert()
        .code(125)
        .stderr(predicates::str::contains("corrupt"));
    // A value of another type too.
    redis_cli(&redis, &["HSET", "backoff:budget:h", "f", "v"]);
    for key in ["c", "h"] {
        backoff(["budget", "reset", key, "--budget-store", &redis.url()])
            .args(LIVE)
            .assert()
            .success();
        assert_eq!(level(&redis.url(), key), 10_000_000, "{key}");
    }
}

/// What only a hand could have written into a budget key: backoff writes a
/// level as digits alone.
const NOT_A_LEVEL: [&str; 8] = [
    "inf",
    "1e999",
    "0x10",
    " 5000000",
    "5000000\n",
    "-0",
    "",
    "123456789012345678901",
];

#[test]
fn a_budget_key_that_is_not_digits_alone_is_corrupt() {
    let redis = Redis::start(None);
    for value in NOT_A_LEVEL {
        redis_cli(&redis, &["SET", "backoff:budget:n", value]);
        // Closed: said once, left alone, not retried.
        corrupt_when_closed(&redis.url(), "n", &format!("{value:?}"));
        assert_eq!(
            redis_cli(&redis, &["GET", "backoff:budget:n"]),
            value.trim(),
            "left alone"
        );
    }
}

#[test]
fn a_decision_given_up_on_a_frozen_store_takes_no_token_when_the_store_thaws() {
    let redis = Redis::start(None);
    let pid = i32::try_from(redis.child.id()).unwrap();
    // The first retry takes a token (4 of 5 left); the second attempt
    // freezes the server, so the second retry's decision is sent but not
    // answered, and backoff gives up on it (closed: no retry) and exits.
    let out = backoff(["--budget", "late", "--budget-burst", "5"])
        .args([
            "--budget-store",
            &redis.url(),
            "--budget-store-timeout",
            "2s",
        ])
        .args(["--budget-store-fail", "closed", "--base", "1ms"])
        .args(["--max-retries", "5", "--", "sh", "-c"])
        .arg(format!(
            "[ \"$BACKOFF_ATTEMPT\" = 2 ] && kill -STOP {pid}; exit 3"
        ))
        .timeout(PATIENCE)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("timed out after 2.00s"), "{stderr}");
    // The server thaws and reads the decision backoff gave up on; it has
    // dealt with it once backoff's connection is gone.
    send(pid, libc::SIGCONT);
    eventually("the abandoned connection closed", || {
        redis_cli(&redis, &["info", "clients"]).contains("connected_clients:1\r")
    });
    assert_eq!(level(&redis.url(), "late"), 4_000_000, "{stderr}");
}

/// `backoff budget show KEY --format json` against the store, with no
/// option of a bucket: what it says of the bucket.
fn shown(url: &str, key: &str) -> (u64, f64, f64, String) {
    let out = backoff(["budget", "show", key, "--format", "json"])
        .args(["--budget-store", url])
        .args(LIVE)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let (micros, burst, ratio, from) = crate::budget::bucket(&v);
    (micros, burst, ratio, from.to_owned())
}

/// A budgeted run against the store of `sh -c SCRIPT`, with up to two
/// quick retries and `options`.
fn run(url: &str, key: &str, script: &str, options: &[&str]) -> std::process::Output {
    backoff(["--budget", key, "--budget-store", url])
        .args(LIVE)
        .args(["--base", "1ms", "--max-retries", "2"])
        .args(options)
        .args(["--", "sh", "-c", script])
        .timeout(PATIENCE)
        .output()
        .unwrap()
}

#[test]
fn budget_show_reports_the_burst_and_ratio_a_bucket_in_redis_was_made_with() {
    let redis = Redis::start(None);
    let url = redis.url();
    let made = ["--budget-burst", "3", "--budget-ratio", "0.5"];
    assert_eq!(run(&url, "small", "exit 3", &made).status.code(), Some(3));
    let out = backoff(["budget", "show", "small", "--budget-store", &url])
        .args(LIVE)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("small: 1 of 3 tokens, 0.5 a success ({url} key backoff:budget:small)\n"),
        "{out:?}"
    );
    let state = |micros, burst, ratio| (micros, burst, ratio, "state".to_owned());
    assert_eq!(shown(&url, "small"), state(1_000_000, 3.0, 0.5));
    assert_eq!(
        redis_cli(&redis, &["HGETALL", "backoff:budget:small"]),
        "level\n1000000\nburst\n3000000\nratio\n500000"
    );
    let ttl: u64 = redis_cli(&redis, &["TTL", "backoff:budget:small"])
        .parse()
        .unwrap();
    assert!(ttl > 600_000, "{ttl}");
    assert!(run(&url, "small", "exit 0", &made).status.success());
    assert_eq!(shown(&url, "small"), state(1_500_000, 3.0, 0.5));

    // Reset fills the bucket to the burst it records; with the options, to
    // theirs.
    let reset = |options: &[&str]| {
        backoff(["budget", "reset", "small", "--budget-store", &url])
            .args(LIVE)
            .args(options)
            .assert()
            .success();
    };
    reset(&[]);
    assert_eq!(shown(&url, "small"), state(3_000_000, 3.0, 0.5));
    reset(&["--budget-burst", "5"]);
    assert_eq!(shown(&url, "small"), state(5_000_000, 5.0, 0.1));
    // No key yet: the options' bucket, said to be theirs.
    let options = |micros| (micros, 10.0, 0.1, "options".to_owned());
    assert_eq!(shown(&url, "none"), options(10_000_000));

    // A level alone, as an older backoff wrote it: read, then a hash.
    redis_cli(&redis, &["SET", "backoff:budget:old", "3000000"]);
    assert_eq!(shown(&url, "old"), options(3_000_000));
    let out = run(&url, "old", "exit 3", &["--budget-burst", "4"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() == Some(3) && !stderr.contains("corrupt"),
        "{stderr}"
    );
    assert_eq!(shown(&url, "old"), state(1_000_000, 4.0, 0.1));
}

/// A run against the store with `--budget-store-fail closed` finds the
/// state of `key` corrupt: it says so once and does not retry, and `budget
/// show` says so too (`what` names the state, for the messages).
fn corrupt_when_closed(url: &str, key: &str, what: &str) {
    let out = backoff(["--budget", key, "--budget-store", url])
        .args(LIVE)
        .args(["--budget-store-fail", "closed", "--base", "1ms"])
        .args(["--max-retries", "2", "--", "sh", "-c", "exit 3"])
        .timeout(PATIENCE)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{what}: {stderr}");
    assert_eq!(stderr.matches("corrupt").count(), 1, "{what}: {stderr}");
    assert_eq!(
        stderr.matches("failed (exit 3)").count(),
        1,
        "{what}: {stderr}"
    );
    backoff(["budget", "show", key, "--budget-store", url])
        .args(LIVE)
        .assert()
        .code(125)
        .stderr(predicates::str::contains("corrupt"));
}

#[test]
fn a_budget_hash_that_no_run_writes_is_corrupt() {
    let redis = Redis::start(None);
    let url = redis.url();
    let hashes: [&[&str]; 7] = [
        &["level", "1000000", "burst", "3000000"],
        &[
            "level", "1000000", "burst", "3000000", "ratio", "0", "more", "1",
        ],
        &["level", "1e6", "burst", "3000000", "ratio", "0"],
        &["level", "4000000", "burst", "3000000", "ratio", "0"],
        &["level", "0", "burst", "0", "ratio", "0"],
        &["level", "0", "burst", "1000000000001", "ratio", "0"],
        &["level", "0", "burst", "1000000", "ratio", "2000000"],
    ];
    for fields in hashes {
        redis_cli(&redis, &["DEL", "backoff:budget:h"]);
        let mut args = vec!["HSET", "backoff:budget:h"];
        args.extend_from_slice(fields);
        redis_cli(&redis, &args);
        // Closed: said once, left alone, not retried.
        corrupt_when_closed(&url, "h", &format!("{fields:?}"));
        assert_eq!(
            redis_cli(&redis, &["HLEN", "backoff:budget:h"]),
            (fields.len() / 2).to_string(),
            "left alone"
        );
        // Open: a fresh bucket of the run's own.
        let out = run(&url, "h", "exit 3", &["--budget-burst", "2"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("starting a fresh bucket"),
            "{fields:?}: {stderr}"
        );
        assert_eq!(
            shown(&url, "h"),
            (0, 2.0, 0.1, "state".to_owned()),
            "{fields:?}"
        );
    }
}

/// How many times the server ran `command` since its statistics were
/// reset, and how many of those failed, from `INFO commandstats`.
fn command_calls(redis: &Redis, command: &str) -> (u64, u64) {
    let stats = redis_cli(redis, &["INFO", "commandstats"]);
    let Some(line) = stats
        .lines()
        .find_map(|l| l.trim().strip_prefix(&format!("cmdstat_{command}:")))
    else {
        return (0, 0);
    };
    let field = |name: &str| {
        line.split(',')
            .find_map(|f| f.strip_prefix(&format!("{name}=")))
            .map_or(0, |n| n.parse().unwrap())
    };
    (field("calls"), field("failed_calls"))
}

/// How many connections the server accepted since its statistics were
/// reset, counting the one that asks.
fn connections(redis: &Redis) -> u64 {
    let stats = redis_cli(redis, &["INFO", "stats"]);
    stats
        .lines()
        .find_map(|l| l.trim().strip_prefix("total_connections_received:"))
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn a_run_makes_one_connection_and_sends_each_script_once() {
    let redis = Redis::start(None);
    let url = redis.url();
    let run = || {
        assert_eq!(redis_cli(&redis, &["CONFIG", "RESETSTAT"]), "OK");
        let out = backoff([
            "--budget",
            "one",
            "--breaker",
            "one",
            "--budget-store",
            &url,
        ])
        .args(LIVE)
        .args(["--base", "1ms", "--max-retries", "4"])
        .args(["--breaker-failures", "100"])
        .args(["--", "sh", "-c", "exit 3"])
        .timeout(PATIENCE)
        .output()
        .unwrap();
        assert_eq!(out.status.code(), Some(3), "{out:?}");
        (
            connections(&redis),
            command_calls(&redis, "evalsha"),
            command_calls(&redis, "script|load"),
            command_calls(&redis, "eval"),
        )
    };
    // The calls: the server's clock, the breaker's admission, four tokens,
    // how the run ended. The budget and the breaker share the connection,
    // and each of the three scripts is sent whole once: its first EVALSHA
    // fails (NOSCRIPT), SCRIPT LOAD, EVALSHA again.
    let first = run();
    assert_eq!(first, (1 + 1, (7 + 3, 3), (3, 0), (0, 0)));
    // The server keeps the scripts: the next run sends none.
    let next = run();
    assert_eq!(next, (1 + 1, (7, 0), (0, 0), (0, 0)));
}
