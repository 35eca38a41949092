//! Traces: a receiver of the run's events that makes the run a span, each
//! attempt a child span and each delay and decision an event, hands the
//! trace on to the command through `TRACEPARENT`, and exports the spans
//! over OTLP/HTTP when the run ends, configured by the environment as
//! every OpenTelemetry SDK is (`OTEL_EXPORTER_OTLP_ENDPOINT`, ...).
//!
//! Without an endpoint nothing here runs and backoff changes no trace
//! variable: a child must never point at a span that is not exported. The
//! export never changes the run's exit status, and never takes more than
//! its timeout (`OTEL_EXPORTER_OTLP_TIMEOUT`, 10 s): a collector that
//! cannot take the spans is one warning.

pub mod config;
pub mod context;
pub mod otlp;
pub mod spans;

use std::io::Write as _;
use std::time::{Duration, Instant, SystemTime};

use crate::event::{Event, Report};
use crate::http::{Cancel, Client, Method, Request};
use crate::report::Warnings;
use config::Exporting;
use spans::{Attr, Attrs, RunEnd, Tracer};

/// The variable that carries the trace context into a process.
pub const TRACEPARENT: &str = "TRACEPARENT";

/// How near the deadline a failure is one of time.
const SLACK: Duration = Duration::from_millis(50);

/// The largest certificate file read (`OTEL_EXPORTER_OTLP_CERTIFICATE`).
const MAX_CERTIFICATE: u64 = 1024 * 1024;

/// What the run's span says of the run before it starts: its name and
/// policy.
pub struct RunInfo {
    /// `--name`, or the program's.
    pub name: String,
    /// The policy and the like (`backoff.policy.base_seconds`, ...).
    pub attributes: Attrs,
}

/// The traces of one run: a receiver of its events.
pub struct Traces {
    tracer: Tracer,
    exporting: Exporting,
    client: Client,
    warnings: Warnings,
}

/// Statuses after which OTLP says to send again (with `Retry-After`).
fn retryable(status: u16) -> bool {
    matches!(status, 429 | 502 | 503 | 504)
}

impl Traces {
    /// The traces of a run, when the environment (`env`) configures an
    /// export; `carry` is told the `TRACEPARENT` of each process started
    /// from then on. What cannot be used is said once, here.
    pub fn from_env(
        env: &dyn Fn(&str) -> Option<String>,
        run: RunInfo,
        mut carry: spans::Carry,
        warnings: &Warnings,
    ) -> Option<Traces> {
        let mut notices = Vec::new();
        let exporting = config::from_env(env, &mut notices);
        for n in &notices {
            warnings.warn(n);
        }
        let exporting = exporting?;
        let parent = env(TRACEPARENT).and_then(|v| match context::parse(&v) {
            Ok(p) => Some(p),
            Err(why) => {
                warnings.warn(&format!(
                    "TRACEPARENT is not a W3C trace context ({why}): the run starts a new trace"
                ));
                None
            }
        });
        // The parent's decision is kept, as OpenTelemetry's default sampler
        // does: a trace not sampled records nothing, and TRACEPARENT is
        // passed on as it came.
        if parent.is_some_and(|p| !p.sampled()) {
            return None;
        }
        let client = match client(&exporting) {
            Ok(c) => c,
            Err(why) => {
                warnings.warn(&format!("no trace will be exported: {why}"));
                return None;
            }
        };
        // TRACESTATE belongs to the trace TRACEPARENT names: a new trace
        // starts without it, and the processes started do not see it.
        let trace_state = if parent.is_some() {
            env("TRACESTATE")
                .filter(|s| s.len() <= context::MAX_TRACESTATE)
                .unwrap_or_default()
        } else {
            carry("TRACESTATE", None);
            String::new()
        };
        let start = spans::Start {
            name: run.name,
            parent,
            trace_state,
            attributes: run.attributes,
        };
        let random = Box::new(rand::random::<u128>);
        Some(Traces {
            tracer: Tracer::new(start, SystemTime::now, random, carry),
            exporting,
            client,
            warnings: warnings.clone(),
        })
    }

    /// Ends the run's span and sends the spans, within the timeout and by
    /// `by` (when backoff must have exited) if that comes first: one
    /// request, retried as OTLP says, until `cancel` gives it up (then
    /// the caller says so). What went wrong is one warning.
    pub fn finish(self, end: RunEnd<'_>, by: Option<Instant>, cancel: &Cancel) {
        let timeout = Instant::now() + self.exporting.timeout;
        let deadline = by.map_or(timeout, |by| by.min(timeout));
        let trace = self.tracer.finish(end);
        let resource = resource(&self.exporting);
        let req = otlp::request(&trace, &resource);
        let (body, kind) = otlp::encode(&req, self.exporting.protocol);
        let mut headers = self.exporting.headers.clone();
        headers.push(("Content-Type".into(), kind.into()));
        let body = if self.exporting.gzip {
            headers.push(("Content-Encoding".into(), "gzip".into()));
            gzip(&body)
        } else {
            body
        };
        let req = Request {
            method: Method::Post,
            target: &self.exporting.endpoint,
            headers: &headers,
            body: &body,
        };
        let why = match self
            .client
            .send_with_retries(&req, deadline, retryable, cancel)
        {
            Ok(r) if (200..300).contains(&r.status) => return,
            Err(_) if cancel.cancelled() => return,
            Ok(r) if (300..400).contains(&r.status) => format!(
                "{}: answered {} (a redirect, which is not followed: give the URL it names as OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)",
                self.exporting.endpoint.host(),
                r.status
            ),
            Ok(r) => format!("{}: answered {}", self.exporting.endpoint.host(), r.status),
            // Out of time: the limit the user can change, by its name.
            Err(f) if f.status.is_none() && Instant::now() + SLACK >= deadline => {
                if deadline < timeout {
                    format!(
                        "{}: no answer before backoff's time (--max-time plus --kill-after) ran out",
                        self.exporting.endpoint.host()
                    )
                } else {
                    format!(
                        "{}: no answer within {} ms (OTEL_EXPORTER_OTLP_TIMEOUT)",
                        self.exporting.endpoint.host(),
                        self.exporting.timeout.as_millis()
                    )
                }
            }
            Err(f) => f.to_string(),
        };
        self.warnings
            .warn(&format!("the trace was not exported: {why}"));
    }
}

/// The resource: the configured attributes, then the process's own.
fn resource(exporting: &Exporting) -> Attrs {
    let mut out: Attrs = exporting
        .resource
        .iter()
        .map(|(k, v)| (k.clone(), Attr::Str(v.clone())))
        .collect();
    let own = [
        (
            "service.version",
            Attr::Str(env!("CARGO_PKG_VERSION").into()),
        ),
        ("telemetry.sdk.name", Attr::Str("backoff".into())),
        ("telemetry.sdk.language", Attr::Str("rust".into())),
        (
            "telemetry.sdk.version",
            Attr::Str(env!("CARGO_PKG_VERSION").into()),
        ),
        ("host.name", Attr::Str(crate::sys::machine::host_name())),
        ("process.pid", Attr::Int(std::process::id().into())),
        ("os.type", Attr::Str(std::env::consts::OS.into())),
    ];
    for (k, v) in own {
        if !out.iter().any(|(have, _)| have == k) {
            out.push((k.to_owned(), v));
        }
    }
    out
}

/// The client for `exporting`: the system's authorities, and those of
/// `OTEL_EXPORTER_OTLP_CERTIFICATE`.
fn client(exporting: &Exporting) -> Result<Client, String> {
    let pem = match &exporting.certificate {
        None => None,
        Some(path) => {
            let read = crate::sys::fd::read_regular(path, MAX_CERTIFICATE);
            Some(read.map_err(|e| {
                format!(
                    "cannot read the certificate file '{}' (OTEL_EXPORTER_OTLP_CERTIFICATE): {}",
                    path.display(),
                    crate::exec::describe(&e)
                )
            })?)
        }
    };
    // A collector is reached where it is configured: no redirect is
    // followed (the spans would go as a GET without them, and the headers,
    // which hold credentials, to another host).
    Client::with_redirects(pem.as_deref(), 0)
        .map_err(|why| format!("{} ({})", why, exporting.endpoint.host()))
}

/// `body`, gzipped.
fn gzip(body: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    // Writing to memory cannot fail.
    let _ = enc.write_all(body);
    enc.finish().unwrap_or_default()
}

impl Report for Traces {
    fn event(&mut self, event: &Event<'_>) {
        self.tracer.event(event);
    }
}

/// The attributes of the run's span that say its policy.
pub fn policy_attributes(policy: &crate::policy::Policy, max_retries: Option<u64>) -> Attrs {
    let seconds = |d: Duration| Attr::Double(d.as_secs_f64());
    let mut out = vec![
        (
            "backoff.policy.base_seconds".to_owned(),
            seconds(policy.base),
        ),
        ("backoff.policy.cap_seconds".to_owned(), seconds(policy.cap)),
        (
            "backoff.policy.factor".to_owned(),
            Attr::Double(policy.factor),
        ),
        (
            "backoff.policy.jitter".to_owned(),
            Attr::Str(policy.jitter.name().into()),
        ),
    ];
    if let Some(m) = max_retries {
        out.push((
            "backoff.policy.max_retries".to_owned(),
            Attr::Int(i64::try_from(m).unwrap_or(i64::MAX)),
        ));
    }
    out
}
