//! The spans of a run, built from its events: the run is a span, each
//! attempt a child of it, and each delay, and each decision of a budget,
//! a breaker, a throttle or a lock, an event on the run's span. Pure: the
//! clock and the ids are given, and where the context goes next (the
//! `TRACEPARENT` of the next process started) is told to a callback.

use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::classify::{Outcome, Status};
use crate::event::{Event, Next, Report};
use crate::signal;
use crate::trace::context::{Parent, SpanId, TraceId};

/// The most attempt spans a run keeps: a run of more attempts
/// (`--forever`, `--until-failure`) gives the later ones no span of their
/// own (their commands see the run's span, so that none points at a span
/// that is not exported), and says how many in
/// `backoff.attempt_spans_dropped`. With `EVENTS_KEPT`, the request stays
/// within a few hundred kilobytes, and the memory a long run holds flat.
pub const MAX_ATTEMPT_SPANS: usize = 100;

/// The events the run's span keeps: its first this many and its last this
/// many (the ones that tell how it ended); those between are counted in
/// its dropped events.
pub const EVENTS_KEPT: usize = 100;

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Attr {
    /// A string.
    Str(String),
    /// An integer.
    Int(i64),
    /// A floating-point number.
    Double(f64),
    /// A boolean.
    Bool(bool),
}

/// Attributes, in order.
pub type Attrs = Vec<(String, Attr)>;

/// Something that happened at a point of a span.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanEvent {
    /// Its name (`backoff.delay`).
    pub name: String,
    /// When.
    pub at: SystemTime,
    /// What it says.
    pub attributes: Attrs,
}

/// One span, ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// Its id.
    pub id: SpanId,
    /// Its parent's, if it has one.
    pub parent: Option<SpanId>,
    /// Its name.
    pub name: String,
    /// When it started.
    pub start: SystemTime,
    /// When it ended.
    pub end: SystemTime,
    /// What it says.
    pub attributes: Attrs,
    /// What happened during it.
    pub events: Vec<SpanEvent>,
    /// Why it failed, when it did (the status Error), in a few words.
    pub error: Option<String>,
    /// Events left out past `MAX_EVENTS`.
    pub dropped_events: u32,
}

/// The spans of a run, all in one trace.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// The trace.
    pub trace: TraceId,
    /// The trace flags.
    pub flags: u8,
    /// The `TRACESTATE` the run was given, kept in each span.
    pub trace_state: String,
    /// The run's span first, then the attempts'.
    pub spans: Vec<Span>,
}

/// How the run ended, told by `Tracer::finish`.
#[derive(Debug, Clone, Copy)]
pub struct RunEnd<'a> {
    /// backoff's exit status, as a shell shows it.
    pub exit_code: i32,
    /// Attempts made.
    pub attempts: u64,
    /// Why it ended (`success`, `exhausted`, ...).
    pub reason: &'a str,
    /// Whether it succeeded.
    pub success: bool,
}

/// Builds the spans of a run from its events.
pub struct Tracer {
    trace: TraceId,
    flags: u8,
    trace_state: String,
    run: Span,
    attempt: Option<Span>,
    done: Vec<Span>,
    /// The run's latest events, once its first `EVENTS_KEPT` are kept.
    tail: VecDeque<SpanEvent>,
    /// Attempts that got no span of their own (past `MAX_ATTEMPT_SPANS`).
    unspanned: u64,
    delayed: Duration,
    clock: fn() -> SystemTime,
    random: Box<dyn FnMut() -> u128 + Send>,
    /// Told the `TRACEPARENT` each process started from now on sees.
    carry: Carry,
}

/// Where a variable of the trace context is told: its name, and the value
/// each process started from then on sees (`None`: none at all).
pub type Carry = Box<dyn FnMut(&'static str, Option<String>) + Send>;

/// How `Tracer::new` starts.
pub struct Start {
    /// The run span's name: `--name`, or the program's.
    pub name: String,
    /// The context the run joins (`TRACEPARENT`), if it was given one.
    pub parent: Option<Parent>,
    /// `TRACESTATE`, kept in the spans.
    pub trace_state: String,
    /// The policy and the like, as attributes of the run's span.
    pub attributes: Attrs,
}

impl Tracer {
    /// A tracer for a run that starts now; `carry` is told at once the
    /// context of the run's span, for the processes started before the
    /// first attempt (`--on-start`).
    pub fn new(
        start: Start,
        clock: fn() -> SystemTime,
        mut random: Box<dyn FnMut() -> u128 + Send>,
        carry: Carry,
    ) -> Tracer {
        let (trace, flags, parent) = match start.parent {
            Some(p) => (p.trace, p.flags, Some(p.span)),
            None => (
                TraceId::random(&mut random),
                crate::trace::context::SAMPLED,
                None,
            ),
        };
        let run = Span {
            id: SpanId::random(&mut random),
            parent,
            name: start.name,
            start: clock(),
            end: clock(),
            attributes: start.attributes,
            events: Vec::new(),
            error: None,
            dropped_events: 0,
        };
        let mut tracer = Tracer {
            trace,
            flags,
            trace_state: start.trace_state,
            run,
            attempt: None,
            done: Vec::new(),
            tail: VecDeque::new(),
            unspanned: 0,
            delayed: Duration::ZERO,
            clock,
            random,
            carry,
        };
        tracer.hand_on(tracer.run.id);
        tracer
    }

    /// Tells `carry` the context naming `span`.
    fn hand_on(&mut self, span: SpanId) {
        let header = Parent {
            trace: self.trace,
            span,
            flags: self.flags,
        }
        .header();
        (self.carry)(crate::trace::TRACEPARENT, Some(header));
    }

    /// Ends the open attempt's span with `outcome`; `failed` says whether
    /// it counts as a failure (its status Error).
    fn end_attempt(&mut self, outcome: Outcome, failed: bool, http_status: Option<u16>) {
        let Some(mut span) = self.attempt.take() else {
            return;
        };
        span.end = (self.clock)();
        span.attributes.extend(outcome_attributes(outcome));
        if let Some(code) = http_status {
            span.attributes
                .push(("http.response.status_code".into(), Attr::Int(code.into())));
        }
        if failed {
            span.attributes
                .push(("error.type".into(), Attr::Str(error_type(outcome))));
            span.error = Some(outcome.to_string());
        }
        self.done.push(span);
        let run = self.run.id;
        self.hand_on(run);
    }

    /// An event on the run's span.
    fn note(&mut self, name: &str, attributes: Attrs) {
        let event = SpanEvent {
            name: name.to_owned(),
            at: (self.clock)(),
            attributes,
        };
        if self.run.events.len() < EVENTS_KEPT {
            self.run.events.push(event);
            return;
        }
        self.tail.push_back(event);
        if self.tail.len() > EVENTS_KEPT {
            self.tail.pop_front();
            self.run.dropped_events = self.run.dropped_events.saturating_add(1);
        }
    }

    /// A `backoff.delay` event, when `next` is a retry after a delay.
    fn delay(&mut self, next: Next, hint: Option<crate::classify::Hint>) {
        let Next::Retry { delay, server } = next else {
            return;
        };
        self.delayed += delay.delay;
        let source = match (server, hint) {
            (true, Some(h)) => h.source.name(),
            (true, None) => "retry-after",
            (false, _) => "policy",
        };
        self.note(
            "backoff.delay",
            vec![
                (
                    "backoff.delay.seconds".into(),
                    Attr::Double(delay.delay.as_secs_f64()),
                ),
                (
                    "backoff.delay.bound_seconds".into(),
                    Attr::Double(delay.bound.as_secs_f64()),
                ),
                ("backoff.delay.source".into(), Attr::Str(source.into())),
            ],
        );
    }

    /// Ends the run's span: the spans of the run, its own first.
    pub fn finish(mut self, end: RunEnd<'_>) -> Trace {
        if let Some(open) = self.attempt.take() {
            // Ended by nothing that told how (cannot happen in a run that
            // tells its end): closed as it is.
            self.done.push(Span {
                end: (self.clock)(),
                ..open
            });
        }
        let mut run = self.run;
        run.events.extend(self.tail);
        run.end = (self.clock)();
        run.attributes.extend([
            ("backoff.attempts".into(), Attr::Int(clamp(end.attempts))),
            (
                "backoff.retries".into(),
                Attr::Int(clamp(end.attempts.saturating_sub(1))),
            ),
            ("backoff.reason".into(), Attr::Str(end.reason.into())),
            ("process.exit.code".into(), Attr::Int(end.exit_code.into())),
            (
                "backoff.delay.total_seconds".into(),
                Attr::Double(self.delayed.as_secs_f64()),
            ),
        ]);
        if self.unspanned > 0 {
            run.attributes.push((
                "backoff.attempt_spans_dropped".into(),
                Attr::Int(clamp(self.unspanned)),
            ));
        }
        if !end.success {
            run.attributes
                .push(("error.type".into(), Attr::Str(end.reason.into())));
            run.error = Some(format!("gave up: {}", end.reason));
        }
        let mut spans = vec![run];
        spans.extend(self.done);
        Trace {
            trace: self.trace,
            flags: self.flags,
            trace_state: self.trace_state,
            spans,
        }
    }
}

/// `n` as an attribute's integer.
fn clamp(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The attributes that say how an attempt ended.
fn outcome_attributes(outcome: Outcome) -> Attrs {
    let kind = match outcome {
        Outcome::Exited(_) => "exit",
        Outcome::Signaled(_) => "signal",
        Outcome::TimedOut(..) => "timeout",
        Outcome::NotFound => "not_found",
        Outcome::CannotRun => "cannot_run",
        Outcome::Unmet(_) => "unmet",
        Outcome::Unstarted(_) => "backoff_error",
        Outcome::Throttled => "throttled",
    };
    let mut out = vec![("backoff.outcome".into(), Attr::Str(kind.into()))];
    let status = match outcome {
        Outcome::Exited(c) | Outcome::Unmet(Status::Code(c)) => Some(Status::Code(c)),
        Outcome::Signaled(s) | Outcome::Unmet(Status::Signal(s)) => Some(Status::Signal(s)),
        _ => None,
    };
    match status {
        Some(Status::Code(c)) => {
            out.push(("process.exit.code".into(), Attr::Int(c.into())));
        }
        Some(Status::Signal(s)) => {
            out.push(("backoff.signal".into(), Attr::Str(signal::full_name(s))));
        }
        None => {}
    }
    out
}

/// `error.type` of a failed attempt: low in cardinality, as the
/// convention asks: the exit code, the signal, or the kind of outcome.
fn error_type(outcome: Outcome) -> String {
    match outcome {
        Outcome::Exited(c) => c.to_string(),
        Outcome::Signaled(s) => signal::full_name(s),
        Outcome::TimedOut(..) => "timeout".into(),
        Outcome::NotFound => "not_found".into(),
        Outcome::CannotRun => "cannot_run".into(),
        Outcome::Unmet(_) => "unmet".into(),
        Outcome::Unstarted(_) => "backoff_error".into(),
        Outcome::Throttled => "throttled".into(),
    }
}

/// The fields of a JSON event as attributes, `backoff.` and their path:
/// `{"holder": {"pid": 7}}` is `backoff.holder.pid = 7`.
fn flatten(prefix: &str, v: &Value, out: &mut Attrs) {
    match v {
        Value::Null => {}
        Value::Bool(b) => out.push((prefix.into(), Attr::Bool(*b))),
        Value::Number(n) => out.push((
            prefix.into(),
            n.as_i64()
                .map_or_else(|| Attr::Double(n.as_f64().unwrap_or(f64::MAX)), Attr::Int),
        )),
        Value::String(s) => out.push((prefix.into(), Attr::Str(s.clone()))),
        Value::Array(_) => out.push((prefix.into(), Attr::Str(v.to_string()))),
        Value::Object(map) => {
            for (k, v) in map {
                if k != "event" {
                    flatten(&format!("{prefix}.{k}"), v, out);
                }
            }
        }
    }
}

/// An event on the run's span for `event`, named after its JSON event and
/// with its fields.
fn decision(event: &Event<'_>) -> (String, Attrs) {
    let v = crate::report::json::event_json(event, false);
    let name = format!("backoff.{}", v["event"].as_str().unwrap_or("event"));
    let mut attributes = Vec::new();
    flatten("backoff", &v, &mut attributes);
    (name, attributes)
}

impl Report for Tracer {
    fn event(&mut self, event: &Event<'_>) {
        match *event {
            Event::AttemptStarted { .. } if self.done.len() >= MAX_ATTEMPT_SPANS => {
                self.unspanned += 1;
            }
            Event::AttemptStarted { attempt, .. } => {
                let id = SpanId::random(&mut self.random);
                self.attempt = Some(Span {
                    id,
                    parent: Some(self.run.id),
                    name: "attempt".into(),
                    start: (self.clock)(),
                    end: (self.clock)(),
                    attributes: vec![("backoff.attempt".into(), Attr::Int(clamp(attempt)))],
                    events: Vec::new(),
                    error: None,
                    dropped_events: 0,
                });
                self.hand_on(id);
            }
            Event::Failed {
                outcome,
                next,
                hint,
                http_status,
                ..
            } => {
                self.end_attempt(outcome, true, http_status);
                if next == Next::Budget {
                    self.note(
                        "backoff.budget",
                        vec![("backoff.budget.granted".into(), Attr::Bool(false))],
                    );
                }
                self.delay(next, hint);
            }
            Event::Passed {
                outcome,
                next,
                http_status,
                ..
            } => {
                self.end_attempt(outcome, false, http_status);
                self.delay(next, None);
            }
            Event::Succeeded {
                outcome,
                http_status,
                ..
            } => self.end_attempt(outcome, false, http_status),
            Event::NoFailure {
                last: Some((_, outcome, _)),
                ..
            } => self.end_attempt(outcome, false, None),
            Event::CannotStart { outcome, .. } => self.end_attempt(outcome, true, None),
            Event::Interrupted { during, .. } => {
                if let Some((_, outcome, _)) = during.attempt() {
                    self.end_attempt(outcome, true, None);
                }
                let (name, attributes) = decision(event);
                self.note(&name, attributes);
            }
            Event::Start {
                max_attempts,
                preset,
                ..
            } => {
                if let Some(m) = max_attempts {
                    self.run
                        .attributes
                        .push(("backoff.max_attempts".into(), Attr::Int(clamp(m))));
                }
                if let Some(p) = preset {
                    self.run
                        .attributes
                        .push(("backoff.preset".into(), Attr::Str(p.preset.name().into())));
                }
            }
            Event::Splay { .. }
            | Event::Reset { .. }
            | Event::Hook { .. }
            | Event::Breaker { .. }
            | Event::Lock { .. }
            | Event::Alert { .. }
            | Event::Once { .. }
            | Event::Throttle { .. }
            | Event::InterruptedHook { .. }
            | Event::Unstarted { .. } => {
                let (name, attributes) = decision(event);
                self.note(&name, attributes);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
