//! Traces over OTLP/HTTP: what a local receiver gets, decoded with the
//! OpenTelemetry project's own Python definitions (`opentelemetry-proto`,
//! installed by .ci/run in target/ci-tools/otlp): protobuf parsed as an
//! `ExportTraceServiceRequest`, OTLP/JSON by `json_format.Parse` in strict
//! mode. The tree of spans, the `TRACEPARENT` each attempt's command sees,
//! delays as events; gzip and headers; a receiver that is down, hangs,
//! answers 503 then 200, or 400; no endpoint, `OTEL_SDK_DISABLED`, a
//! malformed or unsampled `TRACEPARENT`.

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::http::{Reply, Server, refused_url};
use crate::support::{
    PATIENCE, PY_SERVE, PyServer, Running, TempDir, backoff, command, eventually, send,
};

/// The receiver: each request is one JSON line in `log` (its path, the
/// headers that matter, and the spans decoded, or why decoding failed);
/// `mode` is `ok`, `503` (503 with `Retry-After: 0` once, then 200),
/// `400`, `302` (to `/elsewhere`), `hang`, or `plain` (200, nothing
/// decoded: it needs no decoder); with `tls`, HTTPS with `cert.pem`/`key.pem` of its
/// directory.
const RECEIVER: &str = r#"
import base64, gzip, http.server, json, os, socketserver, ssl, sys, time
try:
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
except ImportError:
    ExportTraceServiceRequest = None
port_file, log, mode, tls = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "tls"
count = [0]
def value(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None
def attrs(kvs):
    return {kv.key: value(kv.value) for kv in kvs}
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        with open(log, "a") as f:
            f.write(json.dumps({"path": self.path, "method": "GET"}) + "\n")
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        body = self.rfile.read(n)
        count[0] += 1
        entry = {"method": "POST", "path": self.path, "content_type": self.headers.get("Content-Type"),
                 "encoding": self.headers.get("Content-Encoding"),
                 "token": self.headers.get("x-token"), "agent": self.headers.get("User-Agent")}
        try:
            if mode == "plain":
                raise StopIteration
            if entry["encoding"] == "gzip":
                body = gzip.decompress(body)
            req = ExportTraceServiceRequest()
            if entry["content_type"] == "application/json":
                # OTLP/JSON has its ids in hex where protobuf's JSON mapping
                # has bytes in base64: as a receiver does, turn them back.
                doc = json.loads(body)
                def ids(v):
                    if isinstance(v, dict):
                        for k in list(v):
                            if k in ("traceId", "spanId", "parentSpanId") and isinstance(v[k], str):
                                v[k] = base64.b64encode(bytes.fromhex(v[k])).decode()
                            else:
                                ids(v[k])
                    elif isinstance(v, list):
                        for x in v:
                            ids(x)
                ids(doc)
                json_format.Parse(json.dumps(doc), req, ignore_unknown_fields=False)
            else:
                req.ParseFromString(body)
            spans = []
            for rs in req.resource_spans:
                entry["resource"] = attrs(rs.resource.attributes)
                for ss in rs.scope_spans:
                    entry["scope"] = ss.scope.name
                    for s in ss.spans:
                        spans.append({"trace": s.trace_id.hex(), "span": s.span_id.hex(),
                            "parent": s.parent_span_id.hex(), "name": s.name,
                            "flags": s.flags, "trace_state": s.trace_state,
                            "start": s.start_time_unix_nano, "end": s.end_time_unix_nano,
                            "attributes": attrs(s.attributes),
                            "events": [{"name": e.name, "attributes": attrs(e.attributes)} for e in s.events],
                            "status": {"code": s.status.code, "message": s.status.message}})
            entry["spans"] = spans
        except StopIteration:
            pass
        except Exception as e:
            entry["error"] = repr(e)
        with open(log, "a") as f:
            f.write(json.dumps(entry) + "\n")
        if mode == "hang":
            time.sleep(60)
        status = 200
        if mode == "400" or "error" in entry:
            status = 400
        elif mode == "503" and count[0] == 1:
            status = 503
        elif mode == "302":
            status = 302
        self.send_response(status)
        if status == 302:
            self.send_header("Location", "/elsewhere")
        if status == 503:
            self.send_header("Retry-After", "0")
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()
"#;

/// Where .ci/run installs the OpenTelemetry project's Python definitions.
fn definitions() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/ci-tools/otlp")
}

/// Whether the decoder can run; if not, says the test is skipped.
fn decoder(test: &str) -> bool {
    let ok = Command::new("python3")
        .args([
            "-c",
            "from opentelemetry.proto.collector.trace.v1 import trace_service_pb2",
        ])
        .env("PYTHONPATH", definitions())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!(
            "skipped {test}: the opentelemetry-proto Python package is not in target/ci-tools/otlp (.ci/run installs it)"
        );
    }
    ok
}

/// A local OTLP/HTTP receiver, stopped when dropped.
struct Receiver {
    server: PyServer,
    port: u16,
}

impl Receiver {
    fn start(mode: &str) -> Receiver {
        Receiver::start_with(mode, false)
    }

    fn start_with(mode: &str, tls: bool) -> Receiver {
        let script = format!("{RECEIVER}{PY_SERVE}");
        let server = PyServer::start(&script, mode, tls, Some(&definitions()));
        Receiver {
            port: server.port,
            server,
        }
    }

    /// `OTEL_EXPORTER_OTLP_ENDPOINT` for it.
    fn endpoint(&self) -> String {
        self.server.origin()
    }

    /// The requests it got so far.
    fn got(&self) -> Vec<Value> {
        self.server
            .dir
            .lines("log")
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The requests it got, once there are `count`.
    fn requests(&self, count: usize) -> Vec<Value> {
        eventually(&format!("{count} export requests"), || {
            self.got().len() >= count
        });
        let got = self.got();
        for r in &got {
            assert!(r.get("error").is_none(), "the decoder refused it: {r}");
        }
        got
    }
}

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// What `cmd` wrote, once it has exited 0.
fn succeeds(cmd: &mut assert_cmd::Command) -> std::process::Output {
    cmd.assert().success().get_output().clone()
}

/// `backoff ARGS` exporting to `endpoint`.
fn traced(endpoint: &str, args: &[&str]) -> assert_cmd::Command {
    let mut cmd = backoff(args);
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint);
    cmd
}

/// A command that prints the trace variables it sees, then fails until
/// its third attempt.
const THIRD_TIME: &str =
    r#"echo "tp=$TRACEPARENT ts=$TRACESTATE bg=$BAGGAGE"; [ "$BACKOFF_ATTEMPT" -ge 3 ]"#;

fn by_name<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["name"] == name).collect()
}

#[test]
fn a_run_is_a_span_of_the_given_trace_and_each_attempt_a_child_the_command_joins() {
    if !decoder("a_run_is_a_span_of_the_given_trace") {
        return;
    }
    let r = Receiver::start("ok");
    let out = succeeds(
        traced(
            &r.endpoint(),
            &[
                "--name",
                "deploy",
                "--base",
                "10ms",
                "--on-retry",
                "echo \"hook=$TRACEPARENT\"",
                "--",
                "sh",
                "-c",
                THIRD_TIME,
            ],
        )
        .env("TRACEPARENT", PARENT)
        .env("TRACESTATE", "vendor=opaque")
        .env("BAGGAGE", "team=infra"),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let got = r.requests(1);
    assert_eq!(got.len(), 1, "one request");
    let req = &got[0];
    assert_eq!(req["path"], "/v1/traces");
    assert_eq!(req["content_type"], "application/x-protobuf");
    assert_eq!(req["scope"], "backoff");
    assert_eq!(req["resource"]["service.name"], "backoff");
    let spans = req["spans"].as_array().unwrap();
    assert_eq!(spans.len(), 4, "{spans:?}");
    for s in spans {
        assert_eq!(s["trace"], "4bf92f3577b34da6a3ce929d0e0e4736", "one trace");
        assert_eq!(s["trace_state"], "vendor=opaque");
    }
    let run = by_name(spans, "deploy")[0];
    assert_eq!(
        run["parent"], "00f067aa0ba902b7",
        "the given span is the run's parent"
    );
    assert_eq!(run["attributes"]["backoff.attempts"], 3);
    assert_eq!(run["attributes"]["backoff.retries"], 2);
    assert_eq!(run["attributes"]["backoff.reason"], "success");
    assert_eq!(run["attributes"]["process.exit.code"], 0);
    assert_eq!(run["attributes"]["backoff.policy.jitter"], "full");
    assert_eq!(run["attributes"]["backoff.policy.base_seconds"], 0.01);
    assert_eq!(run["status"]["code"], 0, "unset: it succeeded");
    let attempts = by_name(spans, "attempt");
    assert_eq!(attempts.len(), 3);
    // Each attempt's command saw TRACEPARENT naming its own span, sampled,
    // and TRACESTATE and BAGGAGE as they came.
    let seen: Vec<&str> = stdout.lines().filter(|l| l.starts_with("tp=")).collect();
    assert_eq!(seen.len(), 3, "{stdout}");
    for (i, (a, line)) in attempts.iter().zip(&seen).enumerate() {
        assert_eq!(a["parent"], run["span"]);
        assert_eq!(a["attributes"]["backoff.attempt"], i + 1);
        let want = format!(
            "tp=00-4bf92f3577b34da6a3ce929d0e0e4736-{}-01 ts=vendor=opaque bg=team=infra",
            a["span"].as_str().unwrap()
        );
        assert_eq!(*line, want);
        assert_eq!(a["attributes"]["backoff.outcome"], "exit");
        let failed = i < 2;
        assert_eq!(a["attributes"]["process.exit.code"], i64::from(failed));
        assert_eq!(a["status"]["code"], if failed { 2 } else { 0 });
        if failed {
            assert_eq!(a["attributes"]["error.type"], "1");
        }
        assert!(a["start"].as_u64() <= a["end"].as_u64());
    }
    // The hook is part of the run: it sees the run's span.
    let hooks: Vec<&str> = stderr.lines().filter(|l| l.starts_with("hook=")).collect();
    let want = format!(
        "hook=00-4bf92f3577b34da6a3ce929d0e0e4736-{}-01",
        run["span"].as_str().unwrap()
    );
    assert_eq!(hooks, [want.as_str(), want.as_str()], "{stderr}");
    let delays: Vec<&Value> = run["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "backoff.delay")
        .collect();
    assert_eq!(delays.len(), 2);
    for d in delays {
        assert_eq!(d["attributes"]["backoff.delay.source"], "policy");
        let drawn = d["attributes"]["backoff.delay.seconds"].as_f64().unwrap();
        let bound = d["attributes"]["backoff.delay.bound_seconds"]
            .as_f64()
            .unwrap();
        assert!(drawn <= bound && bound <= 0.04, "{d}");
    }
    assert!(!stderr.contains("trace"), "no line about traces: {stderr}");
}

#[test]
fn a_give_up_sent_as_gzipped_json_with_headers_is_an_error_with_its_status() {
    if !decoder("a_give_up_sent_as_gzipped_json_with_headers") {
        return;
    }
    let r = Receiver::start("ok");
    let out = traced(
        &r.endpoint(),
        &[
            "--base",
            "1ms",
            "--max-retries",
            "1",
            "--",
            "sh",
            "-c",
            "exit 7 # an-argument",
        ],
    )
    .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
    .env("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
    .env(
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        "x-token=s3cret%20value",
    )
    .env("OTEL_SERVICE_NAME", "nightly")
    .env("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=ci")
    .assert()
    .code(7)
    .get_output()
    .clone();
    let got = r.requests(1);
    let req = &got[0];
    assert_eq!(req["content_type"], "application/json");
    assert_eq!(req["encoding"], "gzip");
    assert_eq!(req["token"], "s3cret value");
    assert_eq!(req["resource"]["service.name"], "nightly");
    assert_eq!(req["resource"]["deployment.environment.name"], "ci");
    let spans = req["spans"].as_array().unwrap();
    // No --name: the run's span is named after the program.
    let run = by_name(spans, "sh")[0];
    assert_eq!(run["parent"], "", "no TRACEPARENT: a trace of its own");
    assert_eq!(run["status"]["code"], 2);
    assert_eq!(run["status"]["message"], "gave up: exhausted");
    assert_eq!(run["attributes"]["process.exit.code"], 7);
    assert_eq!(run["attributes"]["error.type"], "exhausted");
    let attempts = by_name(spans, "attempt");
    assert_eq!(attempts.len(), 2);
    for a in attempts {
        assert_eq!(a["attributes"]["error.type"], "7");
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("s3cret"), "{stderr}");
    // The command's arguments are never exported.
    let raw = std::fs::read_to_string(r.server.dir.join("log")).unwrap();
    assert!(!raw.contains("an-argument"), "{raw}");
}

#[test]
fn a_servers_retry_after_and_http_status_are_in_the_trace() {
    if !decoder("a_servers_retry_after_and_http_status_are_in_the_trace") {
        return;
    }
    let r = Receiver::start("ok");
    let server = Server::start(vec![
        Reply::new(503, "busy\n").header("Retry-After", "1"),
        Reply::new(200, "the body\n"),
    ]);
    traced(
        &r.endpoint(),
        &[
            "--preset",
            "curl",
            "--",
            "curl",
            "-fsS",
            "-D",
            "/dev/stderr",
            &server.url,
        ],
    )
    .assert()
    .success();
    let got = r.requests(1);
    let spans = got[0]["spans"].as_array().unwrap();
    let attempts = by_name(spans, "attempt");
    assert_eq!(attempts[0]["attributes"]["http.response.status_code"], 503);
    assert_eq!(attempts[1]["attributes"]["http.response.status_code"], 200);
    assert_eq!(attempts[0]["attributes"]["process.exit.code"], 22);
    let run = by_name(spans, "curl")[0];
    let delay = run["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "backoff.delay")
        .unwrap();
    assert_eq!(delay["attributes"]["backoff.delay.source"], "retry-after");
    assert!(
        delay["attributes"]["backoff.delay.seconds"]
            .as_f64()
            .unwrap()
            >= 1.0
    );
}

#[test]
fn decisions_of_shared_state_are_events_of_the_run() {
    if !decoder("decisions_of_shared_state_are_events_of_the_run") {
        return;
    }
    let r = Receiver::start("ok");
    let dir = TempDir::new("trace-lock");
    let store = dir.join("store");
    traced(
        &r.endpoint(),
        &[
            "--budget-dir",
            store.to_str().unwrap(),
            "--lock",
            "nightly",
            "--breaker",
            "nightly",
            "--",
            "true",
        ],
    )
    .assert()
    .success();
    let got = r.requests(1);
    let run = &got[0]["spans"][0];
    let names: Vec<&str> = run["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"backoff.lock"), "{names:?}");
    assert!(names.contains(&"backoff.breaker"), "{names:?}");
    let lock = run["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "backoff.lock")
        .unwrap();
    assert_eq!(lock["attributes"]["backoff.key"], "nightly", "{lock}");
}

#[test]
fn a_signal_exports_the_spans_before_backoff_dies_by_it() {
    if !decoder("a_signal_exports_the_spans_before_backoff_dies_by_it") {
        return;
    }
    let r = Receiver::start("ok");
    let mut cmd = command(["--", "sh", "-c", "echo started; exec sleep 60"]);
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", r.endpoint());
    let mut run = Running::start(cmd);
    run.wait_for("started");
    send(run.pid(), libc::SIGTERM);
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(status.signal(), Some(libc::SIGTERM));
    let got = r.requests(1);
    let spans = got[0]["spans"].as_array().unwrap();
    let run_span = &spans[0];
    assert_eq!(run_span["attributes"]["backoff.reason"], "interrupted");
    assert_eq!(run_span["attributes"]["process.exit.code"], 143);
    let attempt = by_name(spans, "attempt")[0];
    assert_eq!(attempt["attributes"]["backoff.signal"], "SIGTERM");
}

#[test]
fn a_collector_that_fails_first_is_sent_again_and_one_that_refuses_is_one_warning() {
    if !decoder("a_collector_that_fails_first_is_sent_again") {
        return;
    }
    let r = Receiver::start("503");
    let out = traced(&r.endpoint(), &["--", "sh", "-c", "exit 3"])
        .assert()
        .code(3)
        .get_output()
        .clone();
    assert_eq!(r.requests(2).len(), 2, "sent again after the 503");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("trace"), "{stderr}");

    let r = Receiver::start("400");
    let out = succeeds(&mut traced(&r.endpoint(), &["--", "true"]));
    assert_eq!(r.requests(1).len(), 1, "a 400 is not sent again");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr,
        format!(
            "backoff: the trace was not exported: 127.0.0.1:{}: answered 400\n",
            r.port
        )
    );
}

#[test]
fn a_collector_down_or_hanging_costs_at_most_the_timeout_and_one_warning() {
    // Down: nothing listens.
    let down = refused_url();
    let out = traced(&down, &["--max-retries", "0", "--", "sh", "-c", "exit 4"])
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "1000")
        .assert()
        .code(4)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let about: Vec<&str> = stderr.lines().filter(|l| l.contains("trace")).collect();
    assert_eq!(about.len(), 1, "{stderr}");
    assert!(
        about[0].starts_with("backoff: the trace was not exported: 127.0.0.1:"),
        "{stderr}"
    );
    // Hanging: it reads the request and never answers.
    if !decoder("a_collector_hanging_costs_at_most_the_timeout") {
        return;
    }
    let r = Receiver::start("hang");
    let began = Instant::now();
    let out = succeeds(
        traced(&r.endpoint(), &["--", "true"])
            .env("OTEL_EXPORTER_OTLP_TIMEOUT", "1000")
            .timeout(PATIENCE),
    );
    let took = began.elapsed();
    assert!(took >= Duration::from_secs(1), "{took:?}");
    assert!(
        took < Duration::from_secs(10),
        "bounded by the timeout: {took:?}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr,
        format!(
            "backoff: the trace was not exported: 127.0.0.1:{}: no answer within 1000 ms (OTEL_EXPORTER_OTLP_TIMEOUT)\n",
            r.port
        )
    );
}

/// What the command saw as TRACEPARENT, and what backoff said.
fn seen_traceparent(env: &[(&str, &str)]) -> (String, String) {
    let mut cmd = backoff(["--", "sh", "-c", "echo \"$TRACEPARENT\""]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.assert().success().get_output().clone();
    (
        String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn without_an_export_traceparent_is_passed_on_untouched_and_nothing_is_sent() {
    let r = Receiver::start("plain");
    let endpoint = r.endpoint();
    for env in [
        vec![("TRACEPARENT", PARENT)],
        vec![
            ("TRACEPARENT", PARENT),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_SDK_DISABLED", "true"),
        ],
        vec![
            ("TRACEPARENT", PARENT),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_TRACES_EXPORTER", "none"),
        ],
        // A trace not sampled records nothing: its TRACEPARENT goes on.
        vec![
            ("TRACEPARENT", &PARENT.replace("-01", "-00")),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
        ],
    ] {
        let (seen, stderr) = seen_traceparent(&env);
        assert_eq!(seen, env[0].1, "{env:?}");
        assert_eq!(stderr, "", "{env:?}");
    }
    // grpc: one line with the fix, and no export.
    let (seen, stderr) = seen_traceparent(&[
        ("TRACEPARENT", PARENT),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
    ]);
    assert_eq!(seen, PARENT);
    assert_eq!(
        stderr,
        "backoff: OTEL_EXPORTER_OTLP_PROTOCOL=grpc: backoff sends traces over OTLP/HTTP only; set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf and the collector's OTLP/HTTP port (4318) in the endpoint: no trace is exported\n"
    );
    // Given time, none of these sent anything.
    std::thread::sleep(Duration::from_millis(100));
    assert!(r.got().is_empty(), "{:?}", r.got());
}

#[test]
fn a_malformed_traceparent_is_one_warning_and_a_new_trace() {
    if !decoder("a_malformed_traceparent_is_one_warning_and_a_new_trace") {
        return;
    }
    let r = Receiver::start("ok");
    let bad = "00-00000000000000000000000000000000-00f067aa0ba902b7-01";
    let endpoint = r.endpoint();
    let (seen, stderr) = seen_traceparent(&[
        ("TRACEPARENT", bad),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
    ]);
    assert_eq!(
        stderr,
        "backoff: TRACEPARENT is not a W3C trace context (its trace id is all zeros): the run starts a new trace\n"
    );
    let got = r.requests(1);
    let spans = got[0]["spans"].as_array().unwrap();
    let attempt = by_name(spans, "attempt")[0];
    assert_eq!(spans[0]["parent"], "");
    assert_eq!(
        seen,
        format!(
            "00-{}-{}-01",
            attempt["trace"].as_str().unwrap(),
            attempt["span"].as_str().unwrap()
        )
    );
}

#[test]
fn an_https_collector_is_trusted_through_the_certificate_variable() {
    if !decoder("an_https_collector_is_trusted_through_the_certificate_variable") {
        return;
    }
    let r = Receiver::start_with("ok", true);
    traced(&r.endpoint(), &["--", "true"])
        .env(
            "OTEL_EXPORTER_OTLP_CERTIFICATE",
            r.server.dir.join("ca.pem"),
        )
        .assert()
        .success()
        .stderr("");
    let got = r.requests(1);
    assert_eq!(got[0]["spans"].as_array().unwrap().len(), 2);
    // Without it, the test's authority is not trusted: one warning.
    let out = succeeds(traced(&r.endpoint(), &["--", "true"]).env("SSL_CERT_FILE", "/dev/null"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the trace was not exported"), "{stderr}");
    // A FIFO named there is not opened for reading: said at once, in one
    // line, however long the export may take.
    let fifo = r.server.dir.join("fifo");
    crate::support::make_fifo(&fifo);
    let started = Instant::now();
    let out = succeeds(
        traced(&r.endpoint(), &["--", "true"])
            .env("SSL_CERT_FILE", &fifo)
            .env("OTEL_EXPORTER_OTLP_TIMEOUT", "30000")
            .timeout(crate::support::PATIENCE),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("the trace was not exported")
            && stderr.contains(&format!(
                "SSL_CERT_FILE '{}' is not a regular file (a FIFO)",
                fifo.display()
            )),
        "{stderr}"
    );
    crate::support::took_less_than(started, Duration::from_secs(10));
}

/// The collector, stopped however the test ends.
struct Stopped(std::process::Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_opentelemetry_collector_takes_the_spans_when_it_is_installed() {
    let Some(collector) = ["otelcol-contrib", "otelcol"].into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }) else {
        eprintln!(
            "skipped the_opentelemetry_collector_takes_the_spans: no otelcol or otelcol-contrib on PATH (no package registry here has it)"
        );
        return;
    };
    let dir = TempDir::new("otelcol");
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let config = format!(
        "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:{port}\nexporters:\n  debug:\n    verbosity: detailed\nservice:\n  pipelines:\n    traces:\n      receivers: [otlp]\n      exporters: [debug]\n"
    );
    std::fs::write(dir.join("config.yaml"), config).unwrap();
    let log = std::fs::File::create(dir.join("log")).unwrap();
    let _collector = Stopped(
        Command::new(collector)
            .arg("--config")
            .arg(dir.join("config.yaml"))
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap(),
    );
    // Its own word that it listens (the port might have been taken by
    // another process since it was found free).
    eventually("the collector is ready", || {
        std::fs::read_to_string(dir.join("log")).is_ok_and(|l| l.contains("Everything is ready"))
    });
    traced(
        &format!("http://127.0.0.1:{port}"),
        &["--name", "collected", "--", "true"],
    )
    .assert()
    .success()
    .stderr("");
    eventually("the collector shows the run's span", || {
        std::fs::read_to_string(dir.join("log")).is_ok_and(|l| l.contains("collected"))
    });
}

#[test]
fn a_redirecting_collector_is_not_followed_and_is_one_warning() {
    let r = Receiver::start("302");
    let out = succeeds(
        traced(&r.endpoint(), &["--", "true"]).env("OTEL_EXPORTER_OTLP_HEADERS", "api-key=s3cret"),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr,
        format!(
            "backoff: the trace was not exported: 127.0.0.1:{}: answered 302 (a redirect, which is not followed: give the URL it names as OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)\n",
            r.port
        )
    );
    // One POST, and no GET of where it pointed (with the headers).
    let got = r.got();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["method"], "POST");
}

#[test]
fn a_certificate_that_is_not_a_regular_file_is_refused_without_waiting_or_reading_input() {
    let dir = TempDir::new("trace-fifo");
    let fifo = dir.join("ca.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    for cert in [fifo.to_str().unwrap(), "/dev/stdin"] {
        let out = succeeds(
            traced(
                "http://127.0.0.1:9",
                &["--", "sh", "-c", "echo \"read: $(cat)\""],
            )
            .env("OTEL_EXPORTER_OTLP_CERTIFICATE", cert)
            .write_stdin("the command's input\n")
            .timeout(PATIENCE),
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "read: the command's input\n"
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            stderr,
            format!(
                "backoff: no trace will be exported: cannot read the certificate file '{cert}' (OTEL_EXPORTER_OTLP_CERTIFICATE): not a regular file\n"
            )
        );
    }
}

#[test]
fn a_signal_during_the_export_ends_it_and_backoff_dies_by_it() {
    let r = Receiver::start("hang");
    let mut cmd = command(["--", "true"]);
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", r.endpoint())
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "600000");
    let mut run = Running::start(cmd);
    // The receiver has the request: backoff waits for its answer.
    eventually("the export reaches the receiver", || !r.got().is_empty());
    send(run.pid(), libc::SIGTERM);
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(status.signal(), Some(libc::SIGTERM));
}

#[test]
fn the_export_ends_by_the_runs_own_deadline() {
    let r = Receiver::start("hang");
    let began = Instant::now();
    let out = succeeds(
        traced(
            &r.endpoint(),
            &["--max-time", "1s", "--kill-after", "1s", "--", "true"],
        )
        .timeout(PATIENCE),
    );
    let took = began.elapsed();
    // The export's own timeout (10 s) would have taken longer.
    assert!(took < Duration::from_secs(8), "{took:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr,
        format!(
            "backoff: the trace was not exported: 127.0.0.1:{}: no answer before backoff's time (--max-time plus --kill-after) ran out\n",
            r.port
        )
    );
}

#[test]
fn a_new_trace_hands_on_no_tracestate_and_an_unreadable_traceparent_is_malformed() {
    if !decoder("a_new_trace_hands_on_no_tracestate") {
        return;
    }
    let r = Receiver::start("ok");
    for parent in [
        std::ffi::OsStr::new("garbage"),
        std::os::unix::ffi::OsStrExt::from_bytes(b"00-\xff"),
    ] {
        let out = succeeds(
            traced(
                &r.endpoint(),
                &[
                    "--",
                    "sh",
                    "-c",
                    "echo \"tp=$TRACEPARENT ts=${TRACESTATE-unset}\"",
                ],
            )
            .env("TRACEPARENT", parent)
            .env("TRACESTATE", "foo=bar"),
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.ends_with(" ts=unset\n"), "{stdout}");
        assert!(!stdout.contains("garbage"), "{stdout}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with("backoff: TRACEPARENT is not a W3C trace context ("),
            "{stderr}"
        );
    }
    for req in r.requests(2) {
        for s in req["spans"].as_array().unwrap() {
            assert_eq!(s["trace_state"], "", "{s}");
        }
    }
}
