use std::sync::{Arc, Mutex};

use super::*;
use crate::classify::Outcome;
use crate::event::{During, Event, Next, Report};
use crate::policy::Delay;
use crate::trace::context;

fn at_epoch() -> SystemTime {
    SystemTime::UNIX_EPOCH
}

/// A tracer with ids 1, 2, 3... and what it handed on.
fn tracer(parent: Option<Parent>) -> (Tracer, Arc<Mutex<Vec<String>>>) {
    let carried = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&carried);
    let mut n = 0u128;
    let t = Tracer::new(
        Start {
            name: "job".into(),
            parent,
            trace_state: String::new(),
            attributes: Vec::new(),
        },
        at_epoch,
        Box::new(move || {
            n += 1;
            n
        }),
        Box::new(move |name, h: Option<String>| {
            assert_eq!(name, "TRACEPARENT");
            sink.lock().unwrap().push(h.unwrap());
        }),
    );
    (t, carried)
}

fn failed(attempt: u64, next: Next) -> Event<'static> {
    Event::Failed {
        attempt,
        max_attempts: Some(3),
        outcome: Outcome::Exited(1),
        elapsed: Duration::ZERO,
        next,
        hint: None,
        http_status: Some(503),
    }
}

#[test]
fn each_attempt_is_a_child_of_the_run_and_handed_on_while_it_runs() {
    let parent = context::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
    let (mut t, carried) = tracer(Some(parent));
    let retry = Next::Retry {
        delay: Delay {
            delay: Duration::from_millis(30),
            bound: Duration::from_millis(100),
        },
        server: false,
    };
    t.event(&Event::AttemptStarted {
        attempt: 1,
        max_attempts: Some(3),
    });
    t.event(&failed(1, retry));
    t.event(&Event::AttemptStarted {
        attempt: 2,
        max_attempts: Some(3),
    });
    t.event(&failed(2, Next::Exhausted));
    let trace = t.finish(RunEnd {
        exit_code: 1,
        attempts: 2,
        reason: "exhausted",
        success: false,
    });
    assert_eq!(trace.trace, parent.trace);
    let run = &trace.spans[0];
    assert_eq!(run.parent, Some(parent.span));
    assert_eq!(run.error.as_deref(), Some("gave up: exhausted"));
    assert_eq!(trace.spans.len(), 3);
    for a in &trace.spans[1..] {
        assert_eq!(a.parent, Some(run.id));
        assert!(
            a.attributes
                .contains(&("http.response.status_code".into(), Attr::Int(503)))
        );
        assert!(a.error.is_some());
    }
    let header = |id: SpanId| format!("00-4bf92f3577b34da6a3ce929d0e0e4736-{id}-01");
    // The run's span (for --on-start), each attempt's while it runs, the
    // run's again after it (for --on-retry).
    assert_eq!(
        *carried.lock().unwrap(),
        vec![
            header(run.id),
            header(trace.spans[1].id),
            header(run.id),
            header(trace.spans[2].id),
            header(run.id),
        ]
    );
    assert_eq!(run.events.len(), 1);
    assert_eq!(run.events[0].name, "backoff.delay");
    assert!(
        run.attributes
            .contains(&("backoff.delay.total_seconds".into(), Attr::Double(0.03)))
    );
}

#[test]
fn an_attempt_a_signal_ends_is_closed_with_its_outcome() {
    let (mut t, _) = tracer(None);
    t.event(&Event::AttemptStarted {
        attempt: 1,
        max_attempts: None,
    });
    t.event(&Event::Interrupted {
        signal: 15,
        during: During::Attempt(1, Outcome::Signaled(15), Duration::ZERO),
    });
    let trace = t.finish(RunEnd {
        exit_code: 143,
        attempts: 1,
        reason: "interrupted",
        success: false,
    });
    assert_eq!(trace.spans.len(), 2);
    assert!(trace.spans[1].attributes.contains(&(
        "backoff.signal".into(),
        Attr::Str(crate::signal::full_name(15))
    )));
    assert_eq!(trace.spans[0].events[0].name, "backoff.interrupted");
    assert_eq!(trace.spans[0].parent, None);
    assert_eq!(trace.flags, context::SAMPLED);
}

#[test]
fn a_json_event_becomes_attributes_by_its_path() {
    let mut out = Vec::new();
    flatten(
        "backoff",
        &serde_json::json!({"event": "lock", "key": "k", "holder": {"pid": 7, "host": null}, "ok": true, "x": 0.5}),
        &mut out,
    );
    assert_eq!(
        out,
        vec![
            ("backoff.holder.pid".to_owned(), Attr::Int(7)),
            ("backoff.key".to_owned(), Attr::Str("k".into())),
            ("backoff.ok".to_owned(), Attr::Bool(true)),
            ("backoff.x".to_owned(), Attr::Double(0.5)),
        ]
    );
}

#[test]
fn a_run_of_many_attempts_keeps_a_bounded_trace_that_points_only_at_exported_spans() {
    let (mut t, carried) = tracer(None);
    let retry = Next::Retry {
        delay: Delay {
            delay: Duration::ZERO,
            bound: Duration::ZERO,
        },
        server: false,
    };
    let n = MAX_ATTEMPT_SPANS as u64 + 5;
    for attempt in 1..=n {
        t.event(&Event::AttemptStarted {
            attempt,
            max_attempts: None,
        });
        t.event(&failed(attempt, retry));
        t.event(&Event::Reset {
            attempt,
            ran: Duration::ZERO,
            after: Duration::ZERO,
        });
    }
    let last_carried = carried.lock().unwrap().last().cloned().unwrap();
    let trace = t.finish(RunEnd {
        exit_code: 1,
        attempts: n,
        reason: "interrupted",
        success: false,
    });
    assert_eq!(trace.spans.len(), MAX_ATTEMPT_SPANS + 1);
    let run = &trace.spans[0];
    assert!(
        run.attributes
            .contains(&("backoff.attempt_spans_dropped".into(), Attr::Int(5)))
    );
    // The first events and the last ones, which tell how it ended.
    assert_eq!(run.events.len(), 2 * EVENTS_KEPT);
    assert_eq!(
        run.dropped_events,
        2 * u32::try_from(n).unwrap() - 2 * u32::try_from(EVENTS_KEPT).unwrap()
    );
    assert_eq!(run.events[0].name, "backoff.delay");
    assert_eq!(run.events.last().unwrap().name, "backoff.reset");
    // The attempts past the bound were handed the run's span.
    assert!(last_carried.contains(&run.id.to_string()));
    let spanned: Vec<String> = trace.spans.iter().map(|s| s.id.to_string()).collect();
    for header in carried.lock().unwrap().iter() {
        assert!(
            spanned.iter().any(|id| header.contains(id.as_str())),
            "{header}"
        );
    }
}
