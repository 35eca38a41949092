//! The run report (`--report FILE`): a recorder that follows the events of
//! a run, and the JSON document it makes at exit. The recorder also feeds
//! `--metrics-file` (see `metrics`).

use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::budget::breaker::{Admission, Circuit};
use crate::classify::{Hint, Limit, Outcome};
use crate::event::{BreakerNews, Ending, Event, HookKind, HuntEnd, Next, Report};
use crate::exit::Exit;
use crate::report::json::{SCHEMA_VERSION, outcome_json, rfc3339, run_end_name};
use crate::signal;

/// One attempt, as the report shows it.
#[derive(Debug, Clone, PartialEq)]
struct AttemptRecord {
    number: u64,
    start: SystemTime,
    duration: Option<Duration>,
    outcome: Option<Outcome>,
    delay_after: Option<Duration>,
    /// The server's hint its output gave.
    hint: Option<Hint>,
    /// Whether it succeeded.
    passed: bool,
}

impl AttemptRecord {
    /// The `outcome` label of the metrics: `success`, `exit`, `signal`,
    /// `timeout`, `idle_timeout`, `unmet`, `cannot_start`, `backoff_error`
    /// (and `interrupted` for an attempt without an outcome, which the
    /// metrics leave out).
    pub fn kind(&self) -> &'static str {
        match self.outcome {
            _ if self.passed => "success",
            Some(Outcome::Exited(_)) => "exit",
            Some(Outcome::Unmet(_)) => "unmet",
            Some(Outcome::Signaled(_)) => "signal",
            Some(Outcome::TimedOut(_, Limit::Time)) => "timeout",
            Some(Outcome::TimedOut(_, Limit::Idle)) => "idle_timeout",
            Some(Outcome::NotFound | Outcome::CannotRun) => "cannot_start",
            Some(Outcome::Unstarted(_)) => "backoff_error",
            None => "interrupted",
        }
    }
}

/// One attempt as a row of the CI logs' tables: its number, how it ended
/// in the words of backoff's lines (`success`, `exit 1`, `signal TERM`,
/// `timeout`, or `interrupted` when it had no outcome), how long it ran and
/// the delay slept after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRow {
    /// 1-based attempt number.
    pub number: u64,
    /// How it ended.
    pub outcome: String,
    /// How long it ran, when known.
    pub duration: Option<Duration>,
    /// The delay after it, if one was slept.
    pub delay_after: Option<Duration>,
}

/// Collects what a run did, for `--report` and `--metrics-file`.
pub struct Recorder {
    name: String,
    clock: fn() -> SystemTime,
    started: Option<SystemTime>,
    attempts: Vec<AttemptRecord>,
    reason: &'static str,
    /// Bytes of held stdout dropped at the deadline.
    undelivered: u64,
    /// Retries made: attempts that followed a failure.
    retries: u64,
    /// Whether the last attempt ended failed.
    last_failed: bool,
    /// `--reset-after` resets.
    resets: u64,
    /// The hooks that ran: which, after which attempt, how, how long.
    hooks: Vec<(HookKind, u64, Option<Outcome>, Duration)>,
    /// What the circuit breaker did, with `--breaker`.
    breaker: Option<BreakerRecord>,
    /// How the run ended, in the words of its last line.
    ending: Option<String>,
}

/// The circuit breaker's part in a run.
#[derive(Debug, Clone, PartialEq, Eq)]
struct BreakerRecord {
    key: String,
    /// `run`, `probe`, `skip` or `unavailable`.
    decision: &'static str,
    /// The circuit before the run and the time then; `None` when the
    /// store could not be used.
    before: Option<(Circuit, u64)>,
    /// The circuit after the run, how the run ended, and the time then.
    after: Option<(Circuit, &'static str, u64)>,
}

impl BreakerRecord {
    /// The circuit's state as the run leaves it (as it found it, when the
    /// run did not change it).
    fn state(&self) -> Option<crate::budget::breaker::State> {
        match (self.after, self.before) {
            (Some((c, _, now)), _) | (None, Some((c, now))) => Some(c.state(now)),
            (None, None) => None,
        }
    }
}

impl Recorder {
    /// A recorder for the command labelled `name`, reading wall-clock time
    /// from `clock`.
    pub fn new(name: String, clock: fn() -> SystemTime) -> Recorder {
        Recorder {
            name,
            clock,
            started: None,
            attempts: Vec::new(),
            reason: "interrupted",
            undelivered: 0,
            retries: 0,
            last_failed: false,
            resets: 0,
            hooks: Vec::new(),
            breaker: None,
            ending: None,
        }
    }

    /// Follows the circuit breaker's news.
    fn breaker(&mut self, key: &str, news: BreakerNews) {
        match news {
            BreakerNews::Admitted {
                admission,
                before,
                now_ms,
            } => {
                if let Admission::Skip { .. } = admission {
                    self.reason = "breaker_open";
                }
                self.breaker = Some(BreakerRecord {
                    key: key.to_owned(),
                    decision: admission.name(),
                    before: Some((before, now_ms)),
                    after: None,
                });
            }
            BreakerNews::Unavailable { run } => {
                if !run {
                    self.reason = "breaker_unavailable";
                }
                self.breaker = Some(BreakerRecord {
                    key: key.to_owned(),
                    decision: "unavailable",
                    before: None,
                    after: None,
                });
            }
            BreakerNews::Recorded {
                end, after, now_ms, ..
            } => {
                if let Some(b) = self.breaker.as_mut() {
                    b.after = Some((after, run_end_name(end), now_ms));
                }
            }
        }
    }

    /// The circuit's state as the run leaves it, and whether the run was
    /// skipped: for the metrics; `None` without a breaker (or without an
    /// answer from its store).
    pub fn breaker_state(&self) -> Option<(crate::budget::breaker::State, bool)> {
        let b = self.breaker.as_ref()?;
        Some((b.state()?, b.decision == "skip"))
    }

    /// The run report's `breaker` object.
    fn breaker_json(&self) -> Value {
        let Some(b) = &self.breaker else {
            return Value::Null;
        };
        json!({
            "key": b.key,
            "decision": b.decision,
            "state_before": b.before.map(|(c, now)| c.state(now).name()),
            "state_after": b.after.map(|(c, _, now)| c.state(now).name()),
            "failures_after": b.after.map(|(c, _, _)| c.failures),
            "run": b.after.map(|(_, end, _)| end),
        })
    }

    fn end_attempt(&mut self, number: u64, outcome: Outcome, duration: Option<Duration>) {
        if let Some(a) = self.attempts.iter_mut().rev().find(|a| a.number == number) {
            a.outcome = Some(outcome);
            a.duration = duration;
        }
    }

    /// The run succeeded (unless its held output came too late), and with
    /// `last_passed` its last attempt too.
    fn mark_success(&mut self, last_passed: bool) {
        if let Some(a) = self.attempts.last_mut() {
            a.passed |= last_passed;
        }
        self.reason = if self.undelivered > 0 {
            Ending::Deadline.name()
        } else {
            "success"
        };
    }

    /// A successful attempt after which the command runs again.
    fn passed(&mut self, attempt: u64, outcome: Outcome, elapsed: Duration, next: Next) {
        self.end_attempt(attempt, outcome, Some(elapsed));
        self.last_failed = false;
        if let Some(a) = self.attempts.last_mut() {
            a.passed = true;
            if let Next::Retry { delay, .. } = next {
                a.delay_after = Some(delay.delay);
            }
        }
    }

    /// Retries made: attempts that followed a failed one (not those that
    /// followed a success, with `--consecutive` or `--until-failure`).
    pub fn retry_count(&self) -> u64 {
        self.retries
    }

    /// Attempts that succeeded.
    pub fn successes(&self) -> u64 {
        self.attempts.iter().filter(|a| a.passed).count() as u64
    }

    /// `--reset-after` resets.
    pub fn resets(&self) -> u64 {
        self.resets
    }

    /// How many attempts ended each way, by the `outcome` label of the
    /// metrics, in a fixed order.
    pub fn outcomes(&self) -> Vec<(&'static str, u64)> {
        let mut counts: Vec<(&'static str, u64)> = Vec::new();
        for a in self.attempts.iter().filter(|a| a.outcome.is_some()) {
            match counts.iter_mut().find(|(k, _)| *k == a.kind()) {
                Some((_, n)) => *n += 1,
                None => counts.push((a.kind(), 1)),
            }
        }
        counts.sort_unstable();
        counts
    }

    /// Seconds slept between attempts (a delay cut short by a signal
    /// counts for the part that was slept).
    pub fn backoff_seconds(&self) -> f64 {
        let slept: Duration = self.attempts.iter().filter_map(|a| a.delay_after).sum();
        slept.as_secs_f64()
    }

    /// The `--report` document for a run that exits with `exit`.
    pub fn report(&self, exit: Exit) -> Value {
        let now = (self.clock)();
        let attempts: Vec<Value> = self
            .attempts
            .iter()
            .map(|a| {
                json!({
                    "attempt": a.number,
                    "start": rfc3339(a.start),
                    "duration_seconds": a.duration.map(|d| d.as_secs_f64()),
                    "outcome": a.outcome.map(outcome_json),
                    "delay_after_seconds": a.delay_after.map(|d| d.as_secs_f64()),
                    "hint_seconds": a.hint.map(|h| h.wait.as_secs_f64()),
                    "hint_source": a.hint.map(|h| h.source.name()),
                })
            })
            .collect();
        let started = self.started.unwrap_or(now);
        json!({
            "schema": SCHEMA_VERSION,
            "name": self.name,
            "start": rfc3339(started),
            "end": rfc3339(now),
            "duration_seconds": now.duration_since(started).unwrap_or_default().as_secs_f64(),
            "attempts": attempts,
            "retry_count": self.retry_count(),
            "success_count": self.successes(),
            "reset_count": self.resets,
            "hooks": self.hooks.iter().map(|&(kind, attempt, outcome, elapsed)| json!({
                "hook": kind.name(),
                "after_attempt": attempt,
                "outcome": outcome.map(outcome_json),
                "duration_seconds": elapsed.as_secs_f64(),
            })).collect::<Vec<_>>(),
            "breaker": self.breaker_json(),
            "backoff_seconds": self.backoff_seconds(),
            "final_status": exit.shell_code(),
            "final_signal": match exit {
                Exit::Signal(s) => Some(signal::short_name(s)),
                Exit::Code(_) => None,
            },
            "reason": self.reason,
            "undelivered_bytes": self.undelivered,
        })
    }

    /// The attempts, one row each, in order.
    pub fn rows(&self) -> impl Iterator<Item = AttemptRow> + '_ {
        self.attempts.iter().map(|a| AttemptRow {
            number: a.number,
            outcome: match a.outcome {
                _ if a.passed => "success".to_owned(),
                Some(o) => o.to_string(),
                None => Ending::Interrupted.name().to_owned(),
            },
            duration: a.duration,
            delay_after: a.delay_after,
        })
    }

    /// Why the run ended, as the report's `reason` says it.
    pub fn reason(&self) -> &'static str {
        self.reason
    }

    /// How the run ended, in the words of its last line, also when that
    /// line was not written (`giving up after 3 attempts in 1.20s: exit 1`).
    pub fn ending(&self) -> Option<&str> {
        self.ending.as_deref()
    }

    /// The label of the command.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Attempts made.
    pub fn attempts(&self) -> u64 {
        self.attempts.len() as u64
    }

    /// Whether the run succeeded.
    pub fn succeeded(&self) -> bool {
        self.reason == "success"
    }

    /// The wall-clock time now, as the recorder reads it.
    pub fn now(&self) -> SystemTime {
        (self.clock)()
    }
}

impl Report for Recorder {
    fn event(&mut self, event: &Event<'_>) {
        if let Some(line) = crate::report::ci::ending(event) {
            self.ending = Some(line);
        }
        match *event {
            Event::Start { .. } => self.started = Some((self.clock)()),
            Event::AttemptStarted { attempt, .. } => {
                if self.last_failed {
                    self.retries += 1;
                }
                self.attempts.push(AttemptRecord {
                    number: attempt,
                    start: (self.clock)(),
                    duration: None,
                    outcome: None,
                    delay_after: None,
                    hint: None,
                    passed: false,
                });
            }
            Event::Passed {
                attempt,
                outcome,
                elapsed,
                next,
                ..
            } => self.passed(attempt, outcome, elapsed, next),
            Event::Reset { .. } => self.resets += 1,
            Event::Hook {
                kind,
                outcome,
                elapsed,
                ..
            } => self
                .hooks
                .push((kind, self.attempts.len() as u64, outcome, elapsed)),
            Event::NoFailure { reason, last, .. } => {
                if let Some((number, outcome, elapsed)) = last {
                    self.end_attempt(number, outcome, Some(elapsed));
                }
                // A run cut short is no success, and no failure.
                self.mark_success(reason != HuntEnd::Cut);
            }
            Event::Failed {
                attempt,
                outcome,
                elapsed,
                next,
                hint,
                ..
            } => {
                self.end_attempt(attempt, outcome, Some(elapsed));
                self.last_failed = true;
                if let Some(a) = self.attempts.last_mut() {
                    a.hint = hint;
                }
                if let Next::Retry { delay, .. } = next
                    && let Some(a) = self.attempts.last_mut()
                {
                    a.delay_after = Some(delay.delay);
                }
            }
            Event::CannotStart {
                attempt, outcome, ..
            } => {
                self.end_attempt(attempt, outcome, None);
                self.reason = Ending::Stopped.name();
            }
            Event::Succeeded {
                attempt,
                outcome,
                elapsed,
                ..
            } => {
                self.end_attempt(attempt, outcome, Some(elapsed));
                self.mark_success(true);
            }
            Event::GaveUp { reason, .. } => {
                self.reason = if self.undelivered > 0 {
                    Ending::Deadline.name()
                } else {
                    reason.name()
                };
            }
            Event::Undelivered { bytes } => self.undelivered = bytes,
            Event::Breaker { key, news } => self.breaker(key, news),
            Event::OutputLost { .. } | Event::Countdown { .. } => {}
            Event::InterruptedWriting { .. } | Event::InterruptedHook { .. } => {
                self.reason = Ending::Interrupted.name();
            }
            Event::Interrupted { attempt, .. } => {
                if let Some((number, outcome, elapsed)) = attempt {
                    self.end_attempt(number, outcome, Some(elapsed));
                } else if let Some(a) = self.attempts.last_mut() {
                    // The delay after the last attempt was cut short.
                    let ended = a.start + a.duration.unwrap_or_default();
                    let slept = (self.clock)().duration_since(ended).unwrap_or_default();
                    a.delay_after = a.delay_after.map(|d| d.min(slept));
                }
                self.reason = Ending::Interrupted.name();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Delay;
    use std::time::UNIX_EPOCH;

    fn epoch() -> SystemTime {
        UNIX_EPOCH + Duration::from_hours(500_000)
    }

    fn fed(events: &[Event<'_>]) -> Recorder {
        let mut r = Recorder::new("job \"x\"".to_owned(), epoch);
        for e in events {
            r.event(e);
        }
        r
    }

    fn failed(attempt: u64, delay_ms: u64) -> Event<'static> {
        Event::Failed {
            attempt,
            max_attempts: Some(3),
            outcome: Outcome::Exited(9),
            elapsed: Duration::from_millis(5),
            next: Next::Retry {
                delay: Delay {
                    delay: Duration::from_millis(delay_ms),
                    bound: Duration::from_millis(delay_ms),
                },
                server: false,
            },
            hint: None,
        }
    }

    #[test]
    fn a_report_counts_retries_and_sleep_and_names_the_reason() {
        let r = fed(&[
            Event::AttemptStarted {
                attempt: 1,
                max_attempts: Some(3),
            },
            failed(1, 100),
            Event::AttemptStarted {
                attempt: 2,
                max_attempts: Some(3),
            },
            failed(2, 200),
            Event::AttemptStarted {
                attempt: 3,
                max_attempts: Some(3),
            },
            Event::GaveUp {
                attempts: 3,
                total: Duration::from_millis(320),
                outcome: Outcome::Exited(9),
                reason: Ending::Exhausted,
                short_of: None,
            },
        ]);
        let doc = r.report(Exit::Code(9));
        assert_eq!(doc["retry_count"], 2);
        assert_eq!(doc["backoff_seconds"], 0.3);
        assert_eq!(doc["reason"], "exhausted");
        assert_eq!(doc["final_status"], 9);
        assert_eq!(doc["attempts"][1]["delay_after_seconds"], 0.2);
    }
}
