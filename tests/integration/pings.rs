//! `--ping`: the check-ins a real local HTTP server (and an HTTPS one with
//! a certificate authority made by the test, trusted through
//! `SSL_CERT_FILE`) receives, in order, with the run's id; the end one
//! with the final attempt's output; none for a run that never started; a
//! server that hangs or fails costs at most `--ping-timeout` and one line
//! that names only its host.

use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

use crate::support::{
    PATIENCE, PY_SERVE, PyServer, Running, TempDir, backoff, command, eventually, send,
};

/// A check-in server: each request is a line `METHOD PATH BODY` (the body
/// as a Python bytes literal) in `log`; `mode` is `ok`, `fail` (500),
/// `hang` (never answers), or `limit=N`, which answers as a self-hosted
/// Healthchecks does, with `Ping-Body-Limit: N`, and keeps the first 10,000
/// bytes of a POST's body (its default `PING_BODY_LIMIT`) in `kept`, and
/// its length in `sent`; with `tls`, HTTPS with `cert.pem`/`key.pem` of its
/// directory.
const SERVER: &str = r#"
import http.server, os, socketserver, ssl, sys, time
port_file, log, mode, tls = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "tls"
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def answer(self, method):
        n = int(self.headers.get("Content-Length", 0))
        body = self.rfile.read(n) if n else b""
        limit = mode.startswith("limit=")
        if limit and method == "POST":
            with open("kept", "wb") as f:
                f.write(body[:10000])
            with open("sent", "w") as f:
                f.write(str(len(body)))
        with open(log, "a") as f:
            f.write("%s %s %r\n" % (method, self.path, body))
        if mode == "hang":
            time.sleep(60)
        self.send_response(500 if mode == "fail" else 200)
        if limit:
            self.send_header("Ping-Body-Limit", mode[len("limit="):])
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"OK")
    def do_GET(self): self.answer("GET")
    def do_POST(self): self.answer("POST")
    def do_CONNECT(self):
        # As a proxy: tell what was asked, and refuse it.
        with open(log, "a") as f:
            f.write("CONNECT %s b''\n" % self.path)
        self.send_response(502)
        self.send_header("Content-Length", "0")
        self.end_headers()
"#;

/// A check-in server of the test's own, stopped when dropped.
pub struct Monitor {
    server: PyServer,
}

impl Monitor {
    pub fn start(mode: &str) -> Monitor {
        Monitor::start_with(mode, false)
    }

    fn start_with(mode: &str, tls: bool) -> Monitor {
        Monitor {
            server: PyServer::start(&format!("{SERVER}{PY_SERVE}"), mode, tls, None),
        }
    }

    /// The check-in URL of the job `uuid`.
    pub fn url(&self, uuid: &str) -> String {
        format!("{}/{uuid}", self.server.origin())
    }

    /// The requests it received so far.
    pub fn dir_lines(&self) -> Vec<String> {
        self.server.dir.lines("log")
    }

    /// The requests it received, waiting until there are `count`.
    pub fn requests(&self, count: usize) -> Vec<String> {
        eventually(&format!("{count} check-ins"), || {
            self.dir_lines().len() >= count
        });
        self.dir_lines()
    }
}

const UUID: &str = "5f2b8c1e-9d3a-4e7b-a1c2-d3e4f5a6b7c8";

#[test]
fn a_success_checks_in_at_the_start_and_the_end_with_the_runs_id() {
    let m = Monitor::start("ok");
    let out = backoff([
        "--ping",
        &m.url(UUID),
        "--",
        "sh",
        "-c",
        "echo \"id $BACKOFF_RUN_ID\"",
    ])
    .assert()
    .success()
    .get_output()
    .clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let rid = stdout.trim().strip_prefix("id ").unwrap().to_owned();
    let got = m.requests(2);
    assert_eq!(got[0], format!("GET /{UUID}/start?rid={rid} b''"));
    assert!(
        got[1].starts_with(&format!(
            "POST /{UUID}?rid={rid} b'backoff: 1 attempt, reason success, exit status 0\\nid {rid}\\n'"
        )),
        "{got:?}"
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_give_up_checks_in_its_status_with_the_final_attempts_output() {
    let m = Monitor::start("ok");
    backoff([
        "--ping",
        &m.url(UUID),
        "--base",
        "1ms",
        "--max-retries",
        "2",
        "--",
        "sh",
        "-c",
        "echo \"output of attempt $BACKOFF_ATTEMPT\"; exit 22",
    ])
    .assert()
    .code(22);
    let got = m.requests(2);
    let end = &got[1];
    assert!(end.starts_with(&format!("POST /{UUID}/22?rid=")), "{end}");
    assert!(
        end.contains(
            "b'backoff: 3 attempts, reason exhausted, exit status 22\\noutput of attempt 3\\n"
        ),
        "{end}"
    );
    assert!(
        !end.contains("attempt 2\\n"),
        "only the final attempt's: {end}"
    );
    assert!(end.contains("giving up after 3 attempts"), "{end}");
}

#[test]
fn a_timeout_and_a_signal_check_in_their_statuses() {
    let m = Monitor::start("ok");
    backoff([
        "--ping",
        &m.url(UUID),
        "--timeout",
        "200ms",
        "--max-retries",
        "0",
        "--",
        "sleep",
        "30",
    ])
    .assert()
    .code(124);
    assert!(m.requests(2)[1].starts_with(&format!("POST /{UUID}/124?rid=")));
    let mut run = Running::start(command([
        "--ping",
        &m.url(UUID),
        "--",
        "sh",
        "-c",
        "echo started; exec sleep 30",
    ]));
    run.wait_for("started");
    run.signal(libc::SIGTERM);
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(status.signal(), Some(libc::SIGTERM));
    let got = m.requests(4);
    assert!(
        got[3].starts_with(&format!("POST /{UUID}/143?rid=")),
        "{got:?}"
    );
    assert!(got[3].contains("reason interrupted"), "{got:?}");
}

#[test]
fn a_run_kept_out_by_the_lock_checks_in_nothing() {
    let m = Monitor::start("ok");
    let dir = TempDir::new("ping-lock");
    let store = dir.join("store");
    let store = store.to_str().unwrap();
    let holder = crate::locks::holding(store);
    backoff([
        "--budget-dir",
        store,
        "--lock",
        "job",
        "--ping",
        &m.url(UUID),
        "--",
        "true",
    ])
    .assert()
    .code(75);
    // A check-in of another run after it shows that none of it came.
    backoff(["--ping", &m.url("other"), "--", "true"])
        .assert()
        .success();
    let got = m.requests(2);
    assert!(got.iter().all(|r| r.contains("/other")), "{got:?}");
    send(holder.pid(), libc::SIGKILL);
}

#[test]
fn a_hanging_or_failing_monitor_costs_at_most_the_timeout_and_one_line_without_the_url() {
    let m = Monitor::start("hang");
    let started = Instant::now();
    let out = backoff(["--ping", &m.url(UUID), "--ping-timeout", "1s", "--", "true"])
        .timeout(PATIENCE)
        .assert()
        .success()
        .get_output()
        .clone();
    // The start check-in went on while the job ran; the end one had the
    // timeout left: about 1 s in all, far below the default 10 s.
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("check-in failed: 127.0.0.1:"), "{stderr}");
    assert!(!stderr.contains(UUID), "{stderr}");
    let m = Monitor::start("fail");
    let out = backoff(["--ping", &m.url(UUID), "--ping-timeout", "2s", "--", "true"])
        .timeout(PATIENCE)
        .assert()
        .success()
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the start and end check-ins failed: 127.0.0.1:"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("answered 500"), "{stderr}");
    assert!(!stderr.contains(UUID), "{stderr}");
    // Retried within the time: more than one request for each check-in.
    assert!(m.dir_lines().len() > 2, "{:?}", m.dir_lines());
}

#[test]
fn https_trusts_the_authorities_ssl_cert_file_names() {
    let m = Monitor::start_with("ok", true);
    let ca = m.server.dir.join("ca.pem");
    backoff(["--ping", &m.url(UUID), "--", "true"])
        .env("SSL_CERT_FILE", &ca)
        .assert()
        .success()
        .stderr("");
    assert_eq!(m.requests(2).len(), 2);
    // Without it, the system's authorities do not trust the test's: one
    // line (or, on a machine with none, one line saying so), the job's
    // status unchanged.
    // (The check-ins share --ping-timeout: ample, so that on a loaded
    // machine a slow refusal of the first leaves time for the second.)
    let out = backoff([
        "--ping",
        &m.url(UUID),
        "--ping-timeout",
        "20s",
        "--",
        "true",
    ])
    .env_remove("SSL_CERT_FILE")
    .env_remove("SSL_CERT_DIR")
    .assert()
    .success()
    .get_output()
    .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("the start and end check-ins failed: 127.0.0.1:")
            && stderr.contains("(SSL_CERT_FILE names the authorities to trust)")
            || stderr.contains("cannot load the certificate authorities"),
        "{stderr}"
    );
    // A file that is not there is said so, and fails the check-ins at
    // once: trying again cannot help.
    let started = Instant::now();
    let out = backoff(["--ping", &m.url(UUID), "--", "true"])
        .env("SSL_CERT_FILE", "/nonexistent/ca.pem")
        .env("SSL_CERT_DIR", "/nonexistent")
        .assert()
        .success()
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(
            "the start and end check-ins failed: 127.0.0.1:"
        ) && stderr.contains(
            ": SSL_CERT_FILE '/nonexistent/ca.pem' cannot be read (No such file or directory): name a PEM file of certificate authorities, or unset SSL_CERT_FILE to trust the system's"
        ),
        "{stderr}"
    );
    crate::support::took_less_than(started, Duration::from_secs(5));
}

/// Runs `backoff --ping URL -- true` with `SSL_CERT_FILE` set to `file`,
/// its stdin a pipe the test holds open and never writes to, and its
/// address space limited to 1 GiB (a file read without end fails there
/// rather than taking the machine's memory); its output, once it exited,
/// within `PATIENCE`.
fn checked_in_with_certificate_file(url: &str, file: &std::path::Path) -> std::process::Output {
    let mut cmd = crate::support::command_after("ulimit -v 1048576", ["--ping", url, "--", "true"]);
    cmd.env("SSL_CERT_FILE", file)
        .env_remove("SSL_CERT_DIR")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("spawn backoff");
    let held = child.stdin.take();
    let out = crate::support::output_within(child);
    drop(held);
    out
}

#[test]
fn a_certificate_file_that_is_not_a_regular_file_holds_up_no_check_in() {
    let dir = TempDir::new("cert-fifo");
    let fifo = dir.join("fifo");
    crate::support::make_fifo(&fifo);
    let files = [fifo.clone(), "/dev/stdin".into(), "/dev/zero".into()];
    // http:// needs no certificate authority: nothing is read, the
    // check-ins arrive, nothing is said.
    let m = Monitor::start("ok");
    for (n, file) in files.iter().enumerate() {
        let started = Instant::now();
        let out = checked_in_with_certificate_file(&m.url(UUID), file);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{}: {stderr}", file.display());
        assert_eq!(stderr, "", "{}", file.display());
        assert_eq!(m.requests(2 * (n + 1)).len(), 2 * (n + 1));
        crate::support::took_less_than(started, Duration::from_secs(10));
    }
    // https:// does: one line says what the file is and what to do, at
    // once (no try again), and the job's status is its own.
    let m = Monitor::start_with("ok", true);
    for (file, is) in files.iter().zip(["a FIFO", "a FIFO", "a character device"]) {
        let started = Instant::now();
        let out = checked_in_with_certificate_file(&m.url(UUID), file);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{}: {stderr}", file.display());
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains(&format!(
                "the start and end check-ins failed: 127.0.0.1:{}: SSL_CERT_FILE '{}' is not a regular file ({is}): name a PEM file of certificate authorities, or unset SSL_CERT_FILE to trust the system's",
                m.server.port,
                file.display()
            )),
            "{stderr}"
        );
        crate::support::took_less_than(started, Duration::from_secs(5));
    }
    assert!(m.dir_lines().is_empty(), "{:?}", m.dir_lines());
}

#[test]
fn other_monitors_get_their_own_urls_as_given_and_bad_urls_are_refused_unquoted() {
    let m = Monitor::start("ok");
    backoff([
        "--ping-start",
        &m.url("begin?key=1"),
        "--ping-fail",
        &m.url("failed"),
        "--",
        "false",
    ])
    .assert()
    .code(1);
    let got = m.requests(2);
    assert_eq!(got[0], "GET /begin?key=1 b''");
    assert!(got[1].starts_with("POST /failed b'backoff: "), "{got:?}");
    for (url, why) in [
        (
            "ftp://host/secret",
            "invalid --ping URL: 'ftp://' is not http:// or https://",
        ),
        (
            "hc-ping.com/secret",
            "invalid --ping URL: expected an http:// or https:// URL",
        ),
    ] {
        backoff(["--ping", url, "--", "true"])
            .assert()
            .code(125)
            .stderr(format!("backoff: {why}\n"));
    }
    backoff([
        "--ping",
        "http://u:pw@127.0.0.1:9/x",
        "--ping-timeout",
        "1s",
        "--",
        "true",
    ])
    .assert()
    .success()
    .stderr(predicates::str::contains(
        "--ping sends a user name and password in clear over http:// to 127.0.0.1:9: use https://",
    ));
}

#[test]
fn a_proxy_from_the_environment_is_used_and_no_proxy_bypasses_it() {
    let m = Monitor::start("ok");
    let proxy = Monitor::start("ok");
    let proxy_url = format!("http://127.0.0.1:{}", proxy.server.port);
    let out = backoff(["--ping", &m.url(UUID), "--ping-timeout", "2s", "--", "true"])
        .env("HTTPS_PROXY", &proxy_url)
        .env("HTTP_PROXY", &proxy_url)
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .assert()
        .success()
        .get_output()
        .clone();
    let asked = proxy.requests(1);
    assert!(
        asked[0].starts_with(&format!("CONNECT 127.0.0.1:{} ", m.server.port)),
        "{asked:?}"
    );
    assert!(m.dir_lines().is_empty(), "nothing went around the proxy");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("check-ins failed: 127.0.0.1:"), "{stderr}");
    assert!(!stderr.contains(UUID), "{stderr}");
    // NO_PROXY names the monitor's host: straight to it.
    backoff(["--ping", &m.url(UUID), "--", "true"])
        .env("HTTP_PROXY", &proxy_url)
        .env("NO_PROXY", "127.0.0.1")
        .assert()
        .success()
        .stderr("");
    assert_eq!(m.requests(2).len(), 2);
}

#[test]
fn a_stdout_nobody_reads_holds_up_the_command_as_it_would_not_backoff() {
    let m = Monitor::start("ok");
    let (mut run, unread) = Running::start_with_stalled_stdout(command([
        "--ping",
        &m.url(UUID),
        "--base",
        "1ms",
        "--max-retries",
        "2",
        "--",
        "sh",
        "-c",
        "head -c 100000 /dev/zero; exit 1",
    ]));
    // Three attempts, each 100 kB more than the stalled stdout takes: the
    // runs go on, and the run ends and checks in.
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(1), "{:?}", run.seen);
    let got = m.requests(2);
    assert!(
        got[1].starts_with(&format!("POST /{UUID}/1?rid=")),
        "{got:?}"
    );
    assert!(
        got[1].contains("backoff: 3 attempts, reason exhausted"),
        "{got:?}"
    );
    drop(unread);
}

#[test]
fn the_check_in_url_is_kept_from_the_command_and_a_lock_wait_ends_by_max_time() {
    let m = Monitor::start("ok");
    backoff(["--", "sh", "-c", "echo \"${BACKOFF_PING-unset}\""])
        .env("BACKOFF_PING", m.url(UUID))
        .assert()
        .success()
        .stdout("unset\n");
    let dir = TempDir::new("ping-lock-wait");
    let store = dir.join("store");
    let store = store.to_str().unwrap();
    let holder = crate::locks::holding(store);
    let started = Instant::now();
    backoff([
        "--budget-dir",
        store,
        "--lock",
        "job",
        "--lock-wait",
        "60s",
        "--max-time",
        "1s",
        "--",
        "true",
    ])
    .timeout(PATIENCE)
    .assert()
    .code(75);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    send(holder.pid(), libc::SIGKILL);
}

#[test]
fn a_signal_while_the_end_check_in_waits_ends_backoff_by_it() {
    let m = Monitor::start("hang");
    let url = m.url(UUID);
    let dir = TempDir::new("ping-cut");
    let report = dir.join("report.json");
    let mut run = Running::start(command([
        "--report",
        report.to_str().unwrap(),
        "--log-format",
        "json",
        "--ping",
        &url,
        "--ping-timeout",
        "10m",
        "--",
        "true",
    ]));
    // The run is over (its last event told), and the monitor has the start
    // check-in, which it never answers: backoff waits for the check-ins.
    run.wait_for("\"event\":\"success\"");
    eventually("the start check-in", || !m.dir_lines().is_empty());
    send(run.pid(), libc::SIGTERM);
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(status.signal(), Some(libc::SIGTERM));
    // The report says how backoff ended: by the signal.
    let written = crate::support::report_at(&report);
    assert_eq!(written["final_status"], 143, "{written}");
}

#[test]
fn the_check_ins_end_by_backoffs_own_deadline() {
    let m = Monitor::start("hang");
    let started = Instant::now();
    backoff([
        "--ping",
        &m.url(UUID),
        "--ping-timeout",
        "1m",
        "--max-time",
        "2s",
        "--kill-after",
        "1s",
        "--",
        "true",
    ])
    .timeout(Duration::from_mins(2))
    .assert()
    .success();
    // By --max-time plus --kill-after (3 s), far from the check-ins' minute.
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

/// A job that prints some 60 kB, then its error, and fails.
const LONG_FAILURE: &str =
    "seq -f 'progress line %g' 3000; echo 'error: the disk is full' >&2; exit 1";

/// Runs `LONG_FAILURE` once with the check-ins of a stand-in Healthchecks
/// that answers `Ping-Body-Limit: header`, with `args` besides; the end
/// check-in's body as sent (its length) and as the monitor kept it.
fn end_body_kept(header: &str, args: &[&str]) -> (usize, String) {
    let m = Monitor::start(&format!("limit={header}"));
    backoff(["--ping", &m.url(UUID), "--max-retries", "0"])
        .args(args)
        .args(["--", "sh", "-c", LONG_FAILURE])
        .env_remove("BACKOFF_PING_BODY_LIMIT")
        .assert()
        .code(1);
    let got = m.requests(2);
    assert!(got[0].starts_with(&format!("GET /{UUID}/start")), "{got:?}");
    assert!(
        got[1].starts_with(&format!("POST /{UUID}/1?rid=")),
        "{got:?}"
    );
    let dir = &m.server.dir;
    let sent = std::fs::read_to_string(dir.join("sent")).unwrap();
    let kept = std::fs::read(dir.join("kept")).unwrap();
    (sent.parse().unwrap(), String::from_utf8(kept).unwrap())
}

/// The checks of a body cut to fit `limit`, which `source` set: the summary
/// line first, then a line that says what was cut, and the end of the
/// output, the command's error and backoff's closing line, kept whole.
fn cut_to_fit(sent: usize, kept: &str, limit: usize, source: &str) {
    assert!(sent <= limit, "{sent} bytes sent: {kept}");
    assert!(sent > limit - 200, "{sent} bytes sent, room for {limit}");
    assert_eq!(kept.len(), sent, "the monitor kept it all");
    let lines: Vec<&str> = kept.lines().collect();
    assert_eq!(
        lines[0], "backoff: 1 attempt, reason exhausted, exit status 1",
        "{kept}"
    );
    assert!(
        lines[1].starts_with("backoff: ")
            && lines[1].ends_with(&format!(
                " bytes of output cut here: the check-in carries at most {limit} bytes ({source})"
            )),
        "{}",
        lines[1]
    );
    let end = &lines[lines.len() - 3..];
    assert_eq!(end[0], "error: the disk is full", "{kept}");
    assert!(end[1].starts_with("backoff: attempt 1/1 failed"), "{kept}");
    assert!(
        end[2].starts_with("backoff: giving up after 1 attempt"),
        "{kept}"
    );
    assert!(lines[3].starts_with("progress line "), "{kept}");
}

#[test]
fn the_end_check_in_fits_what_healthchecks_keeps_with_the_output_s_end_whole() {
    // Healthchecks' default: 10,000 bytes, and its header says so.
    let (sent, kept) = end_body_kept("10000", &[]);
    cut_to_fit(sent, &kept, 10_000, "--ping-body-limit");
    // A header that is no number of bytes is ignored.
    let (sent, kept) = end_body_kept("lots", &[]);
    cut_to_fit(sent, &kept, 10_000, "--ping-body-limit");
}

#[test]
fn a_smaller_ping_body_limit_from_the_monitor_or_the_option_cuts_more() {
    let (sent, kept) = end_body_kept("3000", &[]);
    cut_to_fit(sent, &kept, 3000, "the monitor's Ping-Body-Limit");
    // The header never raises the option's limit.
    let (sent, kept) = end_body_kept("100000", &["--ping-body-limit", "2KB"]);
    cut_to_fit(sent, &kept, 2000, "--ping-body-limit");
    // 0: the summary line alone.
    let (sent, kept) = end_body_kept("10000", &["--ping-body-limit", "0"]);
    assert_eq!(
        kept,
        "backoff: 1 attempt, reason exhausted, exit status 1\n"
    );
    assert_eq!(sent, kept.len());
}

#[test]
fn a_ping_timeout_without_a_check_in_is_refused() {
    backoff(["--ping-timeout", "5s", "--", "true"])
        .assert()
        .code(125)
        .stderr("backoff: --ping-timeout applies to the check-ins, and there are none: add --ping URL\n");
    // With a check-in from the environment, it applies.
    let m = Monitor::start("ok");
    backoff(["--ping-timeout=5s", "--", "true"])
        .env("BACKOFF_PING", m.url("uuid"))
        .assert()
        .success()
        .stderr("");
    assert_eq!(m.requests(2).len(), 2);
}

#[test]
fn a_ping_body_limit_without_a_check_in_is_refused_unless_the_environment_gave_it() {
    backoff(["--ping-body-limit", "5000", "--", "true"])
        .assert()
        .code(125)
        .stderr(
            "backoff: --ping-body-limit applies to the end check-in, and there is none: add --ping URL\n",
        );
    backoff(["--", "true"])
        .env("BACKOFF_PING_BODY_LIMIT", "5000")
        .assert()
        .success()
        .stderr("");
    backoff(["--ping-body-limit", "11MB", "--", "true"])
        .assert()
        .code(125)
        .stderr(predicates::str::contains(
            "invalid value '11MB' for '--ping-body-limit': at most 10MB",
        ));
    // A negative size is said so, for --output-limit too (it was
    // "unexpected argument '-1'").
    for option in ["--ping-body-limit", "--output-limit"] {
        backoff([option, "-1", "--", "true"])
            .assert()
            .code(125)
            .stderr(predicates::str::contains(format!(
                "invalid value '-1' for '{option}': a size cannot be negative\n"
            )));
    }
}
