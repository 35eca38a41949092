//! JSON event lines (`--log-format json`): one object per event, each on its
//! own line, written with one call. Also the JSON forms of outcomes and
//! times that the run report shares.

use std::io::Write;
use std::time::SystemTime;

use serde_json::{Value, json};

use crate::classify::{Outcome, Status, os_error};
use crate::event::{
    AlertNews, BreakerNews, Ending, Event, LockNews, Next, OnceNews, Report, ThrottleNews,
};
use crate::fleet::breaker::{Admission, Circuit, RunEnd};
use crate::report::{Verbosity, utc_rfc3339};
use crate::signal;

/// The version of the event and report schemas, bumped on any change that
/// is not a new field.
pub const SCHEMA_VERSION: u32 = 1;

/// An outcome as JSON: `{"kind": "exit", "code": 22}`, `{"kind": "unmet",
/// "code": 0}` (`--until-output` found no line), `{"kind": "signal",
/// "signal": "TERM", "number": 15}`, `{"kind": "timeout", "limit": "time"}`
/// (or `"idle"`), `{"kind":
/// "not_found"}`, `{"kind": "cannot_run"}`, `{"kind": "backoff_error",
/// "error": "Too many open files"}` when backoff itself could not start it,
/// or `{"kind": "throttled"}` when the adaptive throttle skipped it.
pub fn outcome_json(o: Outcome) -> Value {
    match o {
        Outcome::Exited(c) => json!({"kind": "exit", "code": c}),
        Outcome::Unmet(Status::Code(c)) => json!({"kind": "unmet", "code": c}),
        Outcome::Unmet(Status::Signal(s)) => {
            json!({"kind": "unmet", "signal": signal::short_name(s), "number": s})
        }
        Outcome::Signaled(s) => {
            json!({"kind": "signal", "signal": signal::short_name(s), "number": s})
        }
        Outcome::TimedOut(_, limit) => json!({"kind": "timeout", "limit": limit.name()}),
        Outcome::NotFound => json!({"kind": "not_found"}),
        Outcome::CannotRun => json!({"kind": "cannot_run"}),
        Outcome::Unstarted(e) => json!({"kind": "backoff_error", "error": os_error(e)}),
        Outcome::Throttled => json!({"kind": "throttled"}),
    }
}

/// Writes one JSON object per event, each on its own line, in one write.
pub struct JsonReport<W: Write> {
    out: W,
    verbosity: Verbosity,
    name: String,
    clock: fn() -> SystemTime,
}

impl<W: Write> JsonReport<W> {
    /// A JSON event writer; `name` labels every event. With `Quiet`, only
    /// the events of backoff's own errors are written.
    pub fn new(out: W, verbosity: Verbosity, name: String, clock: fn() -> SystemTime) -> Self {
        JsonReport {
            out,
            verbosity,
            name,
            clock,
        }
    }
}

/// The fields of an `attempt_end` event that say what follows it.
fn next_json(v: &mut Value, next: Next) {
    match next {
        Next::Retry { delay, server } => {
            v["next"] = json!("retry");
            v["delay_seconds"] = json!(delay.delay.as_secs_f64());
            v["bound_seconds"] = json!(delay.bound.as_secs_f64());
            v["delay_from_server"] = json!(server);
        }
        Next::Exhausted => v["next"] = json!("exhausted"),
        Next::Found => v["next"] = json!("failure_found"),
        Next::LockLost => v["next"] = json!("lock_lost"),
        Next::Replaced => v["next"] = json!("replaced"),
        Next::Budget => v["next"] = json!("budget"),
        Next::HintTooLong { hint, max } => {
            v["next"] = json!("hint_too_long");
            v["hint_seconds"] = json!(hint.as_secs_f64());
            v["retry_after_max_seconds"] = json!(max.as_secs_f64());
        }
        Next::Stop(why) => {
            v["next"] = json!("stopped");
            v["stop_reason"] = json!(why.name());
        }
        Next::Deadline { delay, .. } => {
            v["next"] = json!("deadline");
            v["delay_seconds"] = json!(delay.as_secs_f64());
        }
    }
}

/// An `attempt_end` event.
fn attempt_end(attempt: u64, outcome: Outcome, elapsed: std::time::Duration, next: Next) -> Value {
    let mut v = json!({
        "event": "attempt_end",
        "attempt": attempt,
        "outcome": outcome_json(outcome),
        "duration_seconds": elapsed.as_secs_f64(),
    });
    next_json(&mut v, next);
    v
}

/// The JSON object for an event of `--consecutive`, `--until-failure` or
/// `--reset-after`.
fn goal_json(event: &Event<'_>) -> Value {
    match *event {
        Event::Passed {
            attempt,
            outcome,
            elapsed,
            streak,
            needed,
            next,
            ..
        } => {
            let mut v = attempt_end(attempt, outcome, elapsed, next);
            v["passed"] = json!(true);
            v["streak"] = json!(streak);
            v["needed"] = json!(needed);
            // Not a retry: the command runs again after a success.
            if let Next::Retry { .. } = next {
                v["next"] = json!("again");
            }
            v
        }
        Event::Reset {
            attempt,
            ran,
            after,
        } => json!({
            "event": "reset",
            "attempt": attempt,
            "ran_seconds": ran.as_secs_f64(),
            "reset_after_seconds": after.as_secs_f64(),
        }),
        Event::NoFailure {
            runs,
            total,
            reason,
            last,
        } => {
            let mut v = json!({
                "event": "no_failure",
                "runs": runs,
                "total_seconds": total.as_secs_f64(),
                "reason": reason.name(),
            });
            if let Some((attempt, outcome, elapsed)) = last {
                v["attempt"] = json!(attempt);
                v["outcome"] = outcome_json(outcome);
                v["duration_seconds"] = json!(elapsed.as_secs_f64());
            }
            v
        }
        _ => Value::Null,
    }
}

/// The JSON object of a run that gives up; a command that cannot start
/// gives up too, after its `attempt_end`.
fn give_up_json(event: &Event<'_>) -> Value {
    match *event {
        Event::CannotStart {
            attempt,
            outcome,
            total,
            ..
        } => json!({
            "event": "give_up",
            "attempts": attempt,
            "outcome": outcome_json(outcome),
            "reason": Ending::Stopped.name(),
            "total_seconds": total.as_secs_f64(),
        }),
        Event::GaveUp {
            attempts,
            total,
            outcome,
            reason,
            short_of,
        } => {
            // A lock lost before any attempt has no outcome to tell.
            let lost = matches!(reason, Ending::LockLost | Ending::Replaced);
            let outcome = if attempts == 0 && lost {
                Value::Null
            } else {
                outcome_json(outcome)
            };
            let mut v = json!({
                "event": "give_up",
                "attempts": attempts,
                "outcome": outcome,
                "reason": reason.name(),
                "total_seconds": total.as_secs_f64(),
            });
            if let Some((streak, needed)) = short_of {
                v["streak"] = json!(streak);
                v["needed"] = json!(needed);
            }
            v
        }
        Event::Unstarted { total, .. } => json!({
            "event": "give_up",
            "attempts": 0,
            "outcome": null,
            "reason": Ending::Deadline.name(),
            "total_seconds": total.as_secs_f64(),
        }),
        _ => Value::Null,
    }
}

/// A Unix time in milliseconds as RFC 3339 (UTC, milliseconds); null for 0.
pub(crate) fn unix_ms(ms: u64) -> Value {
    if ms == 0 {
        return Value::Null;
    }
    json!(utc_rfc3339(
        SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(ms)
    ))
}

/// How a run ended, as the breaker counts it.
pub(crate) fn run_end_name(end: RunEnd) -> &'static str {
    match end {
        RunEnd::Succeeded => "succeeded",
        RunEnd::GaveUp => "gave_up",
        RunEnd::Interrupted => "interrupted",
    }
}

/// The circuit's fields at `now_ms`: its state, the runs in a row that
/// gave up, when it opened and when it reopens.
pub(crate) fn circuit_json(c: Circuit, now_ms: u64) -> Value {
    json!({
        "state": c.state(now_ms).name(),
        "failures": c.failures,
        "opened": unix_ms(c.opened_ms),
        "until": unix_ms(c.until_ms),
    })
}

/// A lock's holder in JSON (null for none).
pub fn holder_json(h: Option<&crate::fleet::lock::Holder>) -> Value {
    h.map_or(Value::Null, |h| {
        json!({
            "pid": h.pid,
            "host": h.host,
            "since": unix_ms(h.since_ms),
            "run_id": h.run_id,
            "token": h.token,
        })
    })
}

/// What a run's end did to the count of its job's failed runs in a row
/// (`--alert-after` `alert_after`), as the `alert` event and the run
/// report's `alert` object tell it: `decision` tolerated, alert, reset or
/// unavailable, the failed runs in a row after the run (`null` when the
/// store could not be used), and before it for a reset (`null` for a
/// record out of shape), and `text`, as `-v` says it.
pub fn alert_json(key: &str, alert_after: u64, news: AlertNews) -> Value {
    let (failures, before, failed) = match news {
        AlertNews::Failed { failures } => (Some(failures), None, true),
        AlertNews::Reset { was } => (Some(0), was, false),
        AlertNews::Unavailable { failed } => (None, None, failed),
    };
    json!({
        "key": key,
        "alert_after": alert_after,
        "decision": news.decision(alert_after),
        "tolerated": news.tolerated(alert_after).is_some(),
        "run_failed": failed,
        "failures": failures,
        "failures_before": before,
        "text": crate::report::text::alert_words(alert_after, news),
    })
}

/// What became of the lock, as the `lock` event and the run report's
/// `lock` object tell it: `decision` held, busy, unavailable or lost, how
/// long the run waited, the fencing token, and the holder that kept the run
/// out.
pub fn lock_json(key: &str, news: &LockNews) -> Value {
    let (decision, waited, token, holder) = match news {
        LockNews::Held { token, waited, .. } => ("held", *waited, *token, None),
        LockNews::Busy { holder, waited } => ("busy", *waited, None, holder.as_ref()),
        LockNews::Waiting { holder, .. } => ("waiting", None, None, holder.as_ref()),
        LockNews::Unavailable { .. } => ("unavailable", None, None, None),
        LockNews::Lost {
            token, replaced, ..
        } => (
            if *replaced { "replaced" } else { "lost" },
            None,
            *token,
            None,
        ),
    };
    let mut v = json!({
        "key": key,
        "decision": decision,
        "waited_seconds": waited.map(|w| w.as_secs_f64()),
        "token": token,
        "holder": holder_json(holder),
    });
    match news {
        LockNews::Unavailable { run, why } => {
            v["run"] = json!(run);
            v["why"] = json!(why);
        }
        LockNews::Lost { why, .. } => v["why"] = json!(why),
        LockNews::Held {
            settle: Some(settle),
            ..
        } => v["settle_seconds"] = json!(settle.wait.as_secs_f64()),
        LockNews::Waiting { patience, .. } => {
            v["lock_wait_seconds"] = json!(patience.as_secs_f64());
        }
        _ => {}
    }
    v
}

/// A once-per record's last success in JSON (null for none).
pub fn success_json(s: Option<&crate::fleet::once::Success>) -> Value {
    s.map_or(Value::Null, |s| {
        json!({
            "period": s.period,
            "decided_at": unix_ms(s.at_ms),
            "done_at": unix_ms(s.done_ms),
            "utc_offset_seconds": s.offset,
            "host": s.host,
            "run_id": s.run_id,
        })
    })
}

/// What became of a job run once per period, as the `once` event and the
/// run report's `once` object tell it: `decision` due, done, running,
/// unavailable, recorded or `not_recorded`, the period now, and the last
/// success as recorded.
pub fn once_json(key: &str, news: &OnceNews) -> Value {
    use crate::fleet::once::Verdict;
    let mut v = json!({"key": key});
    match news {
        OnceNews::Decided {
            period,
            verdict,
            last,
            ..
        } => {
            v["decision"] = json!(if verdict.runs() { "due" } else { "done" });
            v["period"] = json!(period);
            v["last"] = success_json(last.as_ref());
            if let Verdict::Ahead(by) | Verdict::Future(by) = verdict {
                v["ahead_seconds"] = json!(by.as_secs_f64());
            }
        }
        OnceNews::Running { holder } => {
            v["decision"] = json!("running");
            v["holder"] = holder_json(holder.as_ref());
        }
        OnceNews::Unavailable { run, why } => {
            v["decision"] = json!("unavailable");
            v["run"] = json!(run);
            v["why"] = json!(why);
        }
        OnceNews::Recorded { success } => {
            v["decision"] = json!("recorded");
            v["period"] = json!(success.period);
            v["last"] = success_json(Some(success));
        }
        OnceNews::NotRecorded { why } => {
            v["decision"] = json!("not_recorded");
            v["why"] = json!(why);
        }
    }
    v
}

/// The `breaker` (decision) and `breaker_update` (after the run) events.
fn breaker_json(key: &str, news: BreakerNews) -> Value {
    match news {
        BreakerNews::Admitted {
            admission,
            before,
            now_ms,
        } => {
            let mut v = circuit_json(before, now_ms);
            v["event"] = json!("breaker");
            v["key"] = json!(key);
            v["decision"] = json!(admission.name());
            if let Admission::Skip {
                until_ms, probing, ..
            } = admission
            {
                v["until"] = unix_ms(until_ms);
                v["probing"] = json!(probing);
            }
            v
        }
        BreakerNews::Unavailable { run } => json!({
            "event": "breaker",
            "key": key,
            "decision": "unavailable",
            "run": run,
        }),
        BreakerNews::Recorded {
            probe,
            end,
            after,
            now_ms,
        } => {
            let mut v = circuit_json(after, now_ms);
            v["event"] = json!("breaker_update");
            v["key"] = json!(key);
            v["probe"] = json!(probe);
            v["run"] = json!(run_end_name(end));
            v
        }
    }
}

/// A decision of the adaptive throttle, sent or skipped, with the
/// probability and the counts of the window it was made on, as the events
/// and the run report tell it.
pub fn decision_json(decision: crate::fleet::throttle::Decision, window_ms: u64) -> Value {
    json!({
        "decision": if decision.send { "send" } else { "skip" },
        "probability": decision.probability,
        "requests": decision.counts.requests,
        "skips": decision.counts.skips,
        "accepts": decision.counts.accepts,
        "window_seconds": std::time::Duration::from_millis(window_ms).as_secs_f64(),
    })
}

/// The event of the adaptive throttle's decision on `attempt`; `late`:
/// made after `--max-time` passed, so that the attempt is not sent.
fn throttle_json(key: &str, attempt: u64, news: ThrottleNews, late: bool) -> Value {
    let mut v = throttle_news_json(key, attempt, news);
    if late {
        v["decision"] = json!("late");
    }
    v
}

/// The event of the adaptive throttle's decision on `attempt`, as it was
/// made.
fn throttle_news_json(key: &str, attempt: u64, news: ThrottleNews) -> Value {
    match news {
        ThrottleNews::Decided {
            decision,
            window_ms,
        } => {
            let mut v = decision_json(decision, window_ms);
            v["event"] = json!("throttle");
            v["key"] = json!(key);
            v["attempt"] = json!(attempt);
            v
        }
        ThrottleNews::Unavailable { send } => json!({
            "event": "throttle",
            "key": key,
            "attempt": attempt,
            "decision": "unavailable",
            "send": send,
        }),
    }
}

/// The event of a signal that ended the run `during` what.
fn interrupted(signal: i32, during: &str) -> Value {
    json!({
        "event": "interrupted",
        "signal": signal::short_name(signal),
        "during": during,
    })
}

/// A `note` event: advice on a likely mistake, with the text line's words
/// as its `message`.
fn note_json(event: &Event<'_>) -> Value {
    match *event {
        Event::MisplacedOption { option, program } => json!({
            "event": "note",
            "note": "misplaced_option",
            "option": option,
            "program": program.to_string_lossy(),
            "message": crate::report::text::misplaced_text(event),
        }),
        _ => Value::Null,
    }
}

/// The JSON object of `event` (with `verbose`, the command's arguments
/// too), without the fields every line has.
// One arm per event.
#[allow(clippy::too_many_lines)]
pub fn event_json(event: &Event<'_>, verbose: bool) -> Value {
    match *event {
        Event::Start {
            run_id,
            command,
            max_attempts,
            preset,
            ..
        } => {
            let mut v = json!({
                "event": "start",
                "run_id": run_id,
                "program": command[0].to_string_lossy(),
                "max_attempts": max_attempts,
                "preset": preset.map(|p| p.preset.name()),
                "preset_from": preset.map(|p| p.from.name()),
            });
            if verbose {
                v["argv"] = command.iter().map(|a| a.to_string_lossy()).collect();
            }
            v
        }
        Event::Splay { delay, window } => json!({
            "event": "splay",
            "delay_seconds": delay.as_secs_f64(),
            "window_seconds": window.as_secs_f64(),
        }),
        Event::AttemptStarted {
            attempt,
            max_attempts,
        } => json!({"event": "attempt_start", "attempt": attempt, "max_attempts": max_attempts}),
        Event::Failed {
            attempt,
            outcome,
            elapsed,
            next,
            hint,
            ..
        } => {
            let mut v = attempt_end(attempt, outcome, elapsed, next);
            if let Some(h) = hint {
                v["hint_seconds"] = json!(h.wait.as_secs_f64());
                v["hint_source"] = json!(h.source.name());
            }
            v
        }
        Event::Passed { .. } | Event::Reset { .. } | Event::NoFailure { .. } => goal_json(event),
        Event::MisplacedOption { .. } => note_json(event),
        Event::CannotStart {
            attempt,
            outcome,
            error,
            ..
        } => json!({
            "event": "attempt_end",
            "attempt": attempt,
            "outcome": outcome_json(outcome),
            "error": error,
            "next": "stopped",
        }),
        Event::Succeeded {
            attempt,
            outcome,
            elapsed,
            total,
            streak,
            condition,
            ..
        } => json!({
            "event": "success",
            "attempt": attempt,
            "outcome": outcome_json(outcome),
            "duration_seconds": elapsed.as_secs_f64(),
            "total_seconds": total.as_secs_f64(),
            "streak": streak,
            "condition_met": condition,
        }),
        Event::GaveUp { .. } | Event::Unstarted { .. } => give_up_json(event),
        Event::Hook {
            kind,
            outcome,
            elapsed,
            bounded,
            error,
            lock_lost,
            ..
        } => json!({
            "event": "hook",
            "hook": kind.name(),
            "outcome": outcome.map(outcome_json),
            "exit": match outcome {
                Some(Outcome::Exited(c)) => Some(c),
                _ => None,
            },
            "duration_seconds": elapsed.as_secs_f64(),
            "error": error,
            "bounded_by_max_time": bounded,
            "lock_lost": lock_lost,
        }),
        Event::Undelivered { bytes } => json!({"event": "undelivered", "bytes": bytes}),
        Event::OutputLost { why } => json!({"event": "output_lost", "error": why}),
        Event::InterruptedWriting { signal } => interrupted(signal, "output"),
        Event::Breaker { key, news } => breaker_json(key, news),
        Event::Lock { key, news } => {
            let mut v = lock_json(key, news);
            v["event"] = json!("lock");
            v
        }
        Event::Alert {
            key,
            alert_after,
            news,
        } => {
            let mut v = alert_json(key, alert_after, news);
            v["event"] = json!("alert");
            v
        }
        Event::Once { key, news } => {
            let mut v = once_json(key, news);
            v["event"] = json!("once");
            v
        }
        Event::Throttle {
            key,
            attempt,
            news,
            late,
        } => throttle_json(key, attempt, news, late),
        // Told only to a report that counts down, which JSON does not.
        Event::Countdown { left } => {
            json!({"event": "countdown", "left_seconds": left.as_secs_f64()})
        }
        Event::InterruptedHook { signal, kind } => interrupted(signal, kind.name()),
        Event::Interrupted { signal, during } => interrupted(signal, during.name()),
    }
}

/// The line of the event `v`, with the fields every event has: the
/// schema's version, the time, the run's name.
fn stamped(mut v: Value, name: &str, clock: fn() -> SystemTime) -> String {
    v["schema"] = json!(SCHEMA_VERSION);
    v["time"] = json!(utc_rfc3339(clock()));
    v["name"] = json!(name);
    let mut line = v.to_string();
    line.push('\n');
    line
}

/// The line of one of backoff's own warnings (a store that cannot be used,
/// a file that cannot be written): `{"event": "warning", "message": …}`,
/// with the fields every event has.
pub fn warning_line(message: &str, name: &str, clock: fn() -> SystemTime) -> String {
    stamped(json!({"event": "warning", "message": message}), name, clock)
}

impl<W: Write> Report for JsonReport<W> {
    fn event(&mut self, event: &Event<'_>) {
        if self.verbosity == Verbosity::Quiet
            && !matches!(
                event,
                Event::CannotStart { .. } | Event::Undelivered { .. } | Event::OutputLost { .. }
            )
        {
            return;
        }
        let mut line = stamped(
            event_json(event, self.verbosity == Verbosity::Verbose),
            &self.name,
            self.clock,
        );
        // Like any other end of a run, one whose command cannot start ends
        // the stream with `give_up` (but for `-q`, which tells no end).
        if self.verbosity > Verbosity::Quiet && matches!(event, Event::CannotStart { .. }) {
            line.push_str(&stamped(give_up_json(event), &self.name, self.clock));
        }
        let _ = self.out.write_all(line.as_bytes());
        let _ = self.out.flush();
    }
}
