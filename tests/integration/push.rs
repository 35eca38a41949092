//! Metrics pushed for batch jobs (`--metrics-push`), against Debian's real
//! Prometheus Pushgateway (started by the test, with no persistence file;
//! skipped with a line where it is not installed): the group read back
//! from its `/metrics`, checked by `promtool check metrics`, the guide's
//! alert rule tested with `promtool test rules` on what was pushed after
//! a success then a failure; a Pushgateway that hangs, refuses or answers
//! 500 costs a bounded time and one warning; bad values are refused; and
//! `backoff_last_success_timestamp_seconds` in `--metrics-file`.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::examples::markdown_blocks;
use crate::fleet::free_port;
use crate::http::{Reply, Server, refused_url};
use crate::support::{PATIENCE, Running, TempDir, backoff, command, eventually, output_within};

const LAST_SUCCESS: &str = "backoff_last_success_timestamp_seconds";

/// A real Pushgateway of the test's own, stopped when dropped.
struct Pushgateway {
    child: Child,
    port: u16,
    /// The `Authorization` it asks of every request, if any.
    auth: Option<&'static str>,
    _dir: TempDir,
}

/// The one user of a Pushgateway that asks for basic authentication, her
/// password, her bcrypt hash (cost 4, quick to check) and her header.
const USER: &str = "ci";
const PASSWORD: &str = "s3cret";
const PASSWORD_HASH: &str = "$2b$04$oYgA29vFWm9px9u4LVm.iemvEiYpEnuEYEk/w7ypXq.ChfJWy5.Ny";
const BASIC_AUTH: &str = "Basic Y2k6czNjcmV0";

impl Pushgateway {
    /// Started on a free port, asking for `USER`'s basic authentication
    /// when `auth`; `None`, said on one line naming `test`, where it is
    /// not installed.
    fn start(test: &str, auth: bool) -> Option<Pushgateway> {
        let port = free_port();
        let dir = TempDir::new("pushgateway-web");
        let web = dir.join("web.yml");
        let users = if auth {
            format!("basic_auth_users:\n  {USER}: {PASSWORD_HASH}\n")
        } else {
            String::new()
        };
        std::fs::write(&web, users).unwrap();
        let spawned = Command::new("prometheus-pushgateway")
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg(format!("--web.config.file={}", web.display()))
            // Nothing kept on disk: what it holds is what was pushed.
            .arg("--persistence.file=")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let child = match spawned {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                eprintln!(
                    "skipped {test}: prometheus-pushgateway is not installed (apt-get install prometheus-pushgateway)"
                );
                return None;
            }
            Err(e) => panic!("prometheus-pushgateway: {e}"),
        };
        let gateway = Pushgateway {
            child,
            port,
            auth: auth.then_some(BASIC_AUTH),
            _dir: dir,
        };
        eventually("the Pushgateway answers", || {
            get(port, "/-/ready", gateway.auth).is_some_and(|r| r.starts_with("HTTP/1.0 200"))
        });
        Some(gateway)
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Its `/metrics`: the exposition text of every group.
    fn metrics(&self) -> String {
        let answer = get(self.port, "/metrics", self.auth).expect("the Pushgateway's /metrics");
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.0 200"), "{head}");
        body.to_owned()
    }
}

impl Drop for Pushgateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The whole answer to a GET of `path` on 127.0.0.1:`port` (HTTP/1.0, so
/// that the server closes the connection), with `auth` as its
/// `Authorization`, or `None` if none came.
fn get(port: u16, path: &str, auth: Option<&str>) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(PATIENCE)).ok()?;
    let auth = auth
        .map(|a| format!("Authorization: {a}\r\n"))
        .unwrap_or_default();
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n{auth}\r\n").ok()?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).ok()?;
    Some(answer)
}

/// This host's name, as backoff sends it as the group's `instance`.
fn host_name() -> String {
    let out = Command::new("uname").arg("-n").output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The value of the sample of `metric` in `text` whose labels are
/// exactly `labels` (as written, sorted), if there is one.
fn value(text: &str, metric: &str, labels: &str) -> Option<f64> {
    let head = format!("{metric}{{{labels}}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&head))
        .map(|v| v.parse().unwrap())
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Runs `promtool` with `args` (its stdin from `stdin` when given) in
/// `dir`; `None`, said on one line naming `test`, where it is not
/// installed.
fn promtool(
    test: &str,
    dir: &Path,
    args: &[&str],
    stdin: Option<&Path>,
) -> Option<std::process::Output> {
    let mut cmd = Command::new("promtool");
    cmd.args(args)
        .current_dir(dir)
        .stdin(stdin.map_or_else(Stdio::null, |p| std::fs::File::open(p).unwrap().into()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match cmd.spawn() {
        Ok(child) => Some(output_within(child)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!(
                "skipped {test}'s promtool checks: promtool is not installed (apt-get install prometheus)"
            );
            None
        }
        Err(e) => panic!("promtool: {e}"),
    }
}

/// The guide's alert rule on the last success: its YAML block.
fn guide_rule() -> String {
    let guide =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/guide.md"))
            .unwrap();
    markdown_blocks(&guide)
        .into_iter()
        .map(|(_, lines)| lines.join("\n") + "\n")
        .find(|b| b.starts_with("groups:") && b.contains(LAST_SUCCESS))
        .expect("the guide's alert rule on backoff_last_success_timestamp_seconds")
}

#[test]
fn a_pushed_group_reads_back_keeps_its_last_success_after_a_failure_and_fires_the_guides_alert() {
    let test = "a_pushed_group_reads_back_keeps_its_last_success_after_a_failure_and_fires_the_guides_alert";
    let Some(gateway) = Pushgateway::start(test, false) else {
        return;
    };
    let push = ["--name", "nightly", "--metrics-push", &gateway.url()];
    let labels = format!(
        "instance=\"{}\",job=\"nightly\",name=\"nightly\"",
        host_name()
    );
    let before = now();
    let out = backoff(push).args(["--", "true"]).assert().success();
    assert!(out.get_output().stderr.is_empty(), "{out:?}");
    let after_success = gateway.metrics();
    let success = value(&after_success, LAST_SUCCESS, &labels)
        .unwrap_or_else(|| panic!("{labels} in {after_success}"));
    assert!(
        success >= before - 1.0 && success <= now() + 1.0,
        "{success}"
    );
    assert_eq!(
        value(&after_success, "backoff_last_success", &labels),
        Some(1.0)
    );
    // The gauges alone: a counter of one run would never grow.
    assert!(
        !after_success.contains("backoff_runs_total"),
        "{after_success}"
    );

    // A failure: its gauges replace the success's, and the time of the
    // last success stays.
    let out = backoff(push).args(exiting(3)).assert().code(3);
    assert!(
        !String::from_utf8_lossy(&out.get_output().stderr).contains("pushed"),
        "{out:?}"
    );
    let after_failure = gateway.metrics();
    assert_eq!(value(&after_failure, LAST_SUCCESS, &labels), Some(success));
    assert_eq!(
        value(&after_failure, "backoff_last_success", &labels),
        Some(0.0)
    );
    assert_eq!(
        value(&after_failure, "backoff_last_exit_status", &labels),
        Some(3.0)
    );
    let ran = value(
        &after_failure,
        "backoff_last_run_timestamp_seconds",
        &labels,
    )
    .unwrap();
    assert!(ran > success, "{ran} after {success}");

    check_with_promtool(test, &after_failure, &labels, success);
}

/// Checks `pushed` (the Pushgateway's `/metrics` after a success at
/// `success` then a failure of the group `labels`) with `promtool check
/// metrics`, and tests the guide's alert rule on it with `promtool test
/// rules`; skipped, said on one line naming `test`, without promtool.
fn check_with_promtool(test: &str, pushed: &str, labels: &str, success: f64) {
    let dir = TempDir::new("pushgateway");
    std::fs::write(dir.join("metrics.txt"), pushed).unwrap();
    let Some(checked) = promtool(
        test,
        dir.path(),
        &["check", "metrics"],
        Some(&dir.join("metrics.txt")),
    ) else {
        return;
    };
    assert!(
        checked.status.success(),
        "promtool check metrics: {checked:?}"
    );

    // The guide's rule, on the series as pushed: a sample a minute, the
    // first one as the Pushgateway held it after the success, the rest as
    // after the failure, their times shifted so that the success is at
    // the test's time 0 (promtool's clock starts at the epoch).
    std::fs::write(dir.join("rules.yml"), guide_rule()).unwrap();
    let kept = value(pushed, LAST_SUCCESS, labels).unwrap() - success;
    let tests = format!(
        r"rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: '{LAST_SUCCESS}{{{labels}}}'
        values: '0 {kept}+0x1500'
    alert_rule_test:
      - eval_time: 23h
        alertname: NightlyJobNotSucceeding
        exp_alerts: []
      - eval_time: 24h5m
        alertname: NightlyJobNotSucceeding
        exp_alerts: []
      - eval_time: 24h15m
        alertname: NightlyJobNotSucceeding
        exp_alerts:
          - exp_labels:
              name: nightly
              severity: page
            exp_annotations:
              summary: nightly has not succeeded for a day
"
    );
    std::fs::write(dir.join("tests.yml"), tests).unwrap();
    let tested = promtool(test, dir.path(), &["test", "rules", "tests.yml"], None).unwrap();
    assert!(tested.status.success(), "promtool test rules: {tested:?}");
}

#[test]
fn a_success_replaces_the_group_and_any_other_end_adds_to_it() {
    let test = "a_success_replaces_the_group_and_any_other_end_adds_to_it";
    let Some(gateway) = Pushgateway::start(test, false) else {
        return;
    };
    let dir = TempDir::new("push-breaker");
    let push = ["--name", "grouped", "--metrics-push", &gateway.url()];
    let breaker = "backoff_breaker_state{";
    let in_group = |text: &str| {
        text.lines()
            .any(|l| l.starts_with(breaker) && l.contains("job=\"grouped\""))
    };
    backoff(push)
        .args(["--breaker", "db", "--budget-dir"])
        .arg(dir.path())
        .args(["--", "true"])
        .assert()
        .success();
    assert!(in_group(&gateway.metrics()), "{}", gateway.metrics());
    // A failure without the breaker adds to the group: its series stays.
    backoff(push).args(exiting(5)).assert().code(5);
    assert!(in_group(&gateway.metrics()), "{}", gateway.metrics());
    // A success without it replaces the group: its series goes.
    backoff(push).args(["--", "true"]).assert().success();
    let held = gateway.metrics();
    assert!(!in_group(&held), "{held}");
    assert!(held.contains("backoff_last_success{instance="), "{held}");
}

#[test]
fn a_pushgateway_that_asks_for_a_password_takes_the_one_in_the_url_and_refuses_a_wrong_one() {
    let test =
        "a_pushgateway_that_asks_for_a_password_takes_the_one_in_the_url_and_refuses_a_wrong_one";
    let Some(gateway) = Pushgateway::start(test, true) else {
        return;
    };
    let port = gateway.port;
    let notice = format!(
        "backoff: secured: --metrics-push sends a user name and password in clear over http:// to 127.0.0.1:{port}: use https://\n"
    );
    let with = |password: &str| {
        let url = format!("http://{USER}:{password}@127.0.0.1:{port}");
        let out = backoff(["--name", "secured", "--metrics-push", &url, "--", "true"])
            .assert()
            .success()
            .get_output()
            .clone();
        String::from_utf8(out.stderr).unwrap()
    };
    let stderr = with("wrong");
    assert_eq!(
        stderr,
        format!(
            "{notice}backoff: secured: the metrics were not pushed: 127.0.0.1:{port}: answered 401\n"
        )
    );
    assert!(!gateway.metrics().contains("job=\"secured\""));
    assert_eq!(with(PASSWORD), notice);
    let held = gateway.metrics();
    assert!(
        held.contains(&format!("{LAST_SUCCESS}{{instance=")) && held.contains("job=\"secured\""),
        "{held}"
    );
}

/// A listener that takes connections and never answers; each accepted
/// connection is told on the channel.
fn hanging() -> (String, mpsc::Receiver<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            let Ok(stream) = stream else { break };
            held.push(stream);
            let _ = tx.send(());
        }
    });
    (url, rx)
}

/// The arguments of one attempt of a command that exits `code`.
fn exiting(code: i32) -> Vec<String> {
    let mut args: Vec<String> = "--max-retries 0 -- sh -c"
        .split(' ')
        .map(str::to_owned)
        .collect();
    args.push(format!("exit {code}"));
    args
}

/// Runs `backoff -q --metrics-push URL --metrics-push-timeout 1s` on a
/// command that exits `code`: its one stderr line, checked to be the
/// push's warning, and how long the run took.
fn pushed_to(url: &str, code: i32) -> (String, Duration) {
    let began = Instant::now();
    let out = backoff(["-q", "--metrics-push", url, "--metrics-push-timeout", "1s"])
        .args(exiting(code))
        .timeout(PATIENCE)
        .assert()
        .code(code)
        .get_output()
        .clone();
    let took = began.elapsed();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    (stderr, took)
}

#[test]
fn a_pushgateway_that_hangs_refuses_or_fails_costs_a_bounded_time_and_one_warning() {
    let (url, accepted) = hanging();
    let host = url.trim_start_matches("http://");
    let (line, took) = pushed_to(&url, 0);
    assert_eq!(
        line,
        format!(
            "backoff: the metrics were not pushed: {host}: no answer within 1.00s (--metrics-push-timeout)\n"
        )
    );
    assert!(accepted.try_recv().is_ok(), "the push reached the listener");
    assert!(took >= Duration::from_secs(1), "{took:?}");
    assert!(
        took < Duration::from_secs(8),
        "bounded by the timeout: {took:?}"
    );

    let refused = refused_url();
    let host = refused.trim_start_matches("http://").trim_end_matches('/');
    let (line, took) = pushed_to(&refused, 4);
    assert_eq!(
        line,
        format!(
            "backoff: the metrics were not pushed: {host}: connection refused 3 times (nothing listens there)\n"
        )
    );
    assert!(
        took < Duration::from_secs(5),
        "a refusal is quick: {took:?}"
    );

    let failing = Server::start(vec![Reply::new(500, "")]);
    let origin = failing.url.trim_end_matches("/resource");
    let (line, took) = pushed_to(origin, 0);
    assert_eq!(
        line,
        format!(
            "backoff: the metrics were not pushed: {}: answered 500\n",
            origin.trim_start_matches("http://")
        )
    );
    assert!(failing.requests().len() >= 2, "a 500 is tried again");
    assert!(
        took < Duration::from_secs(8),
        "bounded by the timeout: {took:?}"
    );
}

#[test]
fn a_push_that_waits_ends_when_backoffs_time_is_up() {
    let (url, _accepted) = hanging();
    let began = Instant::now();
    let out = backoff(["-q", "--metrics-push", &url, "--metrics-push-timeout", "1m"])
        .args(["--max-time", "1s", "--kill-after", "1s", "--", "true"])
        .timeout(PATIENCE)
        .assert()
        .success()
        .get_output()
        .clone();
    let took = began.elapsed();
    assert!(
        took < Duration::from_secs(8),
        "bounded by --max-time: {took:?}"
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "backoff: the metrics were not pushed: {}: no answer before backoff's time (--max-time plus --kill-after) ran out\n",
            url.trim_start_matches("http://")
        )
    );
}

#[test]
fn a_signal_gives_up_a_push_that_waits_and_backoff_dies_by_it() {
    let (url, accepted) = hanging();
    let mut run = Running::start(command([
        "--metrics-push",
        &url,
        "--metrics-push-timeout",
        "1m",
        "--",
        "true",
    ]));
    accepted
        .recv_timeout(PATIENCE)
        .expect("the push reaches the listener");
    run.dies_by_within_a_second(libc::SIGTERM);
    let stderr = run.stderr().join("\n");
    assert!(
        stderr.contains("backoff: the metrics push was given up: backoff received SIGTERM"),
        "{stderr}"
    );
}

#[test]
fn a_push_url_that_is_not_http_or_a_timeout_without_a_push_is_refused_in_one_line() {
    for (args, env, said) in [
        (
            vec!["--metrics-push", "ftp://gateway:21/x"],
            None,
            "backoff: invalid --metrics-push URL: 'ftp://' is not http:// or https://\n",
        ),
        (
            vec![],
            Some("gateway:9091"),
            "backoff: invalid --metrics-push URL: expected an http:// or https:// URL\n",
        ),
        (
            vec![
                "--metrics-push",
                "http://127.0.0.1:9",
                "--metrics-push-timeout",
                "0s",
            ],
            None,
            "backoff: invalid value '0s' for '--metrics-push-timeout': must be above zero\n",
        ),
        (
            vec!["--metrics-push-timeout", "1s"],
            None,
            "backoff: --metrics-push-timeout applies to the metrics push, and there is none: add --metrics-push URL\n",
        ),
    ] {
        let mut cmd = backoff(&args);
        if let Some(v) = env {
            cmd.env("BACKOFF_METRICS_PUSH", v);
        }
        let out = cmd
            .args(["--", "true"])
            .assert()
            .code(125)
            .get_output()
            .clone();
        assert_eq!(String::from_utf8_lossy(&out.stderr), said, "{args:?}");
    }
    // A password over http:// is said once, and never shown.
    let gateway = Server::start(vec![Reply::new(200, "")]);
    let origin = gateway.url.trim_end_matches("/resource");
    let with_password = origin.replace("http://", "http://ci:s3cret@");
    let out = backoff(["--metrics-push", &with_password, "--", "true"])
        .assert()
        .success()
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr,
        format!(
            "backoff: --metrics-push sends a user name and password in clear over http:// to {}: use https://\n",
            origin.trim_start_matches("http://")
        )
    );
    assert_eq!(gateway.requests().len(), 1);
    // The URL is a credential, which the command is not given: a backoff
    // it runs does not push for this run.
    let out = backoff(["--", "sh", "-c", "echo \"${BACKOFF_METRICS_PUSH-unset}\""])
        .env("BACKOFF_METRICS_PUSH", origin)
        .assert()
        .success()
        .get_output()
        .clone();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "unset\n");
    assert_eq!(gateway.requests().len(), 2);
}

#[test]
fn the_metrics_file_keeps_the_last_success_through_failures_and_drops_a_value_that_is_not_a_time() {
    let dir = TempDir::new("last-success");
    let file = dir.join("m.prom");
    let run = |code: i32| {
        backoff(["--name", "job", "--metrics-file"])
            .arg(&file)
            .args(exiting(code))
            .assert()
            .code(code);
        std::fs::read_to_string(&file).unwrap()
    };
    let at = |text: &str| value(text, LAST_SUCCESS, "name=\"job\"");
    // Never succeeded: no series.
    assert_eq!(at(&run(2)), None);
    let before = now();
    let success = at(&run(0)).unwrap();
    assert!(
        success >= before - 1.0 && success <= now() + 1.0,
        "{success}"
    );
    assert_eq!(at(&run(2)), Some(success));
    assert_eq!(at(&run(2)), Some(success));
    // A value written by someone else that is not a time goes.
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace(&success.to_string(), "NaN")).unwrap();
    let text = run(2);
    assert_eq!(at(&text), None, "{text}");
    assert!(!text.contains(LAST_SUCCESS), "{text}");
}
