//! The run report (`--report FILE`): a recorder that follows the events of
//! a run, and the JSON document it makes at exit. The recorder also feeds
//! `--metrics-file` (see `metrics`). What it keeps is bounded, however long
//! the run (`--forever`, `--until-failure`): the first and last `KEPT`
//! attempts and hooks, with counts for the rest.

use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::classify::{Applied, Hint, Limit, Outcome};
use crate::event::{
    AlertNews, BreakerNews, Ending, Event, HookKind, HuntEnd, LockNews, Next, OnceNews, Report,
    ThrottleNews,
};
use crate::exit::Exit;
use crate::fleet::breaker::{Admission, Circuit};
use crate::fleet::throttle::Decision;
use crate::report::json::{SCHEMA_VERSION, outcome_json, run_end_name};
use crate::report::utc_rfc3339;
use crate::signal;

/// How many of the first attempts (and hooks) the report lists, and how
/// many of the last: those between are counted, not listed.
pub const KEPT: usize = 100;

/// The first and last `KEPT` items of a sequence that grows, and how many
/// between were left out: memory that does not grow with the sequence.
#[derive(Debug, Clone)]
struct Kept<T> {
    first: Vec<T>,
    last: VecDeque<T>,
    left_out: u64,
}

impl<T> Kept<T> {
    fn new() -> Kept<T> {
        Kept {
            first: Vec::new(),
            last: VecDeque::new(),
            left_out: 0,
        }
    }

    /// Adds `item`; returns the one it leaves out, if any (never the newest
    /// one, which is the one still changing).
    fn push(&mut self, item: T) -> Option<T> {
        if self.first.len() < KEPT {
            self.first.push(item);
            return None;
        }
        let gone = if self.last.len() == KEPT {
            self.left_out += 1;
            self.last.pop_front()
        } else {
            None
        };
        self.last.push_back(item);
        gone
    }

    /// How many were pushed, kept or not.
    fn count(&self) -> u64 {
        (self.first.len() + self.last.len()) as u64 + self.left_out
    }

    /// The kept ones, in order.
    fn iter(&self) -> impl DoubleEndedIterator<Item = &T> {
        self.first.iter().chain(self.last.iter())
    }

    fn iter_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut T> {
        self.first.iter_mut().chain(self.last.iter_mut())
    }

    fn last_mut(&mut self) -> Option<&mut T> {
        self.iter_mut().next_back()
    }
}

/// What the attempts left out of the report add to its totals.
#[derive(Debug, Clone, Default)]
struct Tally {
    successes: u64,
    /// By the `outcome` label of the metrics.
    outcomes: Vec<(&'static str, u64)>,
    slept: Duration,
}

impl Tally {
    fn add(&mut self, a: &AttemptRecord) {
        self.successes += u64::from(a.passed);
        if a.outcome.is_some() {
            count(&mut self.outcomes, a.kind(), 1);
        }
        self.slept = self.slept.saturating_add(a.delay_after.unwrap_or_default());
    }
}

/// Adds `n` to the count of `kind` in `counts`.
fn count(counts: &mut Vec<(&'static str, u64)>, kind: &'static str, n: u64) {
    match counts.iter_mut().find(|(k, _)| *k == kind) {
        Some((_, c)) => *c += n,
        None => counts.push((kind, n)),
    }
}

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
    /// `timeout`, `idle_timeout`, `unmet`, `cannot_start`, `backoff_error`,
    /// `throttled`
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
            Some(Outcome::Throttled) => "throttled",
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
    /// The run's id (`BACKOFF_RUN_ID`).
    run_id: String,
    clock: fn() -> SystemTime,
    started: Option<SystemTime>,
    /// The preset the run used, and where it came from.
    preset: Option<Applied>,
    /// `--splay`'s wait before the first attempt, and its window.
    splay: Option<(Duration, Duration)>,
    attempts: Kept<AttemptRecord>,
    /// The attempts left out of `attempts`, counted.
    left_out: Tally,
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
    hooks: Kept<(HookKind, u64, Option<Outcome>, Duration)>,
    /// What the circuit breaker did, with `--breaker`.
    breaker: Option<BreakerRecord>,
    /// What the adaptive throttle did, with `--throttle`.
    throttle: Option<ThrottleRecord>,
    /// What became of the lock, with `--lock`: its key and the news.
    lock: Option<(String, LockNews)>,
    /// What the run's end did to the count of its job's failed runs in a
    /// row, with `--alert-after`: its key, N and the news.
    alert: Option<(String, u64, AlertNews)>,
    /// What became of the job, with `--once-per`: its key and the last
    /// news.
    once: Option<(String, OnceNews)>,
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

/// The adaptive throttle's part in a run.
#[derive(Debug, Clone, PartialEq)]
pub struct ThrottleRecord {
    /// Its key.
    pub key: String,
    /// Attempts it decided on.
    pub decisions: u64,
    /// Attempts it skipped (the store's fail mode's skips included).
    pub skipped: u64,
    /// Decisions its store could not make.
    pub unavailable: u64,
    /// Its last decision, when its store made one.
    pub last: Option<(Decision, u64)>,
    /// Whether its last decision came after `--max-time` passed: the
    /// attempt was not sent, whatever it said.
    pub late: bool,
}

impl BreakerRecord {
    /// The circuit's state as the run leaves it (as it found it, when the
    /// run did not change it).
    fn state(&self) -> Option<crate::fleet::breaker::State> {
        match (self.after, self.before) {
            (Some((c, _, now)), _) | (None, Some((c, now))) => Some(c.state(now)),
            (None, None) => None,
        }
    }
}

impl Recorder {
    /// A recorder for the run `run_id` of the command labelled `name`,
    /// reading wall-clock time from `clock`.
    pub fn new(name: String, run_id: String, clock: fn() -> SystemTime) -> Recorder {
        Recorder {
            name,
            run_id,
            clock,
            started: None,
            preset: None,
            splay: None,
            attempts: Kept::new(),
            left_out: Tally::default(),
            reason: "interrupted",
            undelivered: 0,
            retries: 0,
            last_failed: false,
            resets: 0,
            hooks: Kept::new(),
            breaker: None,
            throttle: None,
            lock: None,
            alert: None,
            once: None,
            ending: None,
        }
    }

    /// Follows what the run's end did to the count of its job's failed
    /// runs in a row (`Event::Alert`).
    fn alerted(&mut self, event: &Event<'_>) {
        if let Event::Alert {
            key,
            alert_after,
            news,
        } = *event
        {
            self.alert = Some((key.to_owned(), alert_after, news));
        }
    }

    /// Whether the run is a failure tolerated under `--alert-after`: no
    /// alert.
    pub fn tolerated(&self) -> bool {
        self.alert
            .as_ref()
            .is_some_and(|&(_, n, news)| news.tolerated(n).is_some())
    }

    /// Follows the lock's news.
    fn lock(&mut self, key: &str, news: &LockNews) {
        match news {
            LockNews::Busy { .. } => self.reason = "locked",
            LockNews::Unavailable { run: false, .. } => self.reason = "lock_unavailable",
            _ => {}
        }
        self.lock = Some((key.to_owned(), news.clone()));
    }

    /// Follows the news of `--once-per`: the decision, then the record
    /// (whose news a report keeps beside the decision's period).
    fn once(&mut self, key: &str, news: &OnceNews) {
        match news {
            OnceNews::Decided { verdict, .. } if !verdict.runs() => self.reason = "done",
            OnceNews::Running { .. } => self.reason = "running",
            OnceNews::Unavailable { run: false, .. } => self.reason = "once_unavailable",
            _ => {}
        }
        self.once = Some((key.to_owned(), news.clone()));
    }

    /// With `--once-per`: why the run skipped the job (`done`,
    /// `running`), if it did; for the metrics.
    pub fn once_outcome(&self) -> Option<Option<&'static str>> {
        let (_, news) = self.once.as_ref()?;
        Some(news.skips().then_some(self.reason))
    }

    /// With `--lock`: whether the lock kept the run out, and whether the
    /// run lost it; for the metrics.
    pub fn lock_outcome(&self) -> Option<(bool, bool)> {
        let (_, news) = self.lock.as_ref()?;
        Some((
            matches!(news, LockNews::Busy { .. }),
            matches!(news, LockNews::Lost { .. }),
        ))
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
    pub fn breaker_state(&self) -> Option<(crate::fleet::breaker::State, bool)> {
        let b = self.breaker.as_ref()?;
        Some((b.state()?, b.decision == "skip"))
    }

    /// Follows the adaptive throttle's news.
    fn throttle(&mut self, key: &str, news: ThrottleNews, late: bool) {
        let t = self.throttle.get_or_insert_with(|| ThrottleRecord {
            key: key.to_owned(),
            decisions: 0,
            skipped: 0,
            unavailable: 0,
            last: None,
            late: false,
        });
        t.decisions += 1;
        t.late = late;
        t.skipped += u64::from(!news.send());
        match news {
            ThrottleNews::Decided {
                decision,
                window_ms,
            } => t.last = Some((decision, window_ms)),
            ThrottleNews::Unavailable { .. } => t.unavailable += 1,
        }
    }

    /// What the adaptive throttle did; `None` without one.
    pub fn throttled(&self) -> Option<&ThrottleRecord> {
        self.throttle.as_ref()
    }

    /// The run report's `throttle` object.
    fn throttle_json(&self) -> Value {
        let Some(t) = &self.throttle else {
            return Value::Null;
        };
        let last = t.last.map(|(d, window_ms)| {
            let mut v = crate::report::json::decision_json(d, window_ms);
            if t.late {
                v["decision"] = json!("late");
            }
            v
        });
        json!({
            "key": t.key,
            "decisions": t.decisions,
            "skipped": t.skipped,
            "unavailable": t.unavailable,
            "last": last,
        })
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

    /// Attempt `number` started; the oldest of the last ones kept may go,
    /// into the counts.
    fn attempt_started(&mut self, number: u64) {
        if self.last_failed {
            self.retries += 1;
        }
        let gone = self.attempts.push(AttemptRecord {
            number,
            start: (self.clock)(),
            duration: None,
            outcome: None,
            delay_after: None,
            hint: None,
            passed: false,
        });
        if let Some(a) = gone {
            self.left_out.add(&a);
        }
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
        self.left_out.successes + self.attempts.iter().filter(|a| a.passed).count() as u64
    }

    /// `--reset-after` resets.
    pub fn resets(&self) -> u64 {
        self.resets
    }

    /// How many attempts ended each way, by the `outcome` label of the
    /// metrics, in a fixed order.
    pub fn outcomes(&self) -> Vec<(&'static str, u64)> {
        let mut counts = self.left_out.outcomes.clone();
        for a in self.attempts.iter().filter(|a| a.outcome.is_some()) {
            count(&mut counts, a.kind(), 1);
        }
        counts.sort_unstable();
        counts
    }

    /// Seconds slept between attempts (a delay cut short by a signal
    /// counts for the part that was slept).
    pub fn backoff_seconds(&self) -> f64 {
        let kept = self.attempts.iter().filter_map(|a| a.delay_after);
        kept.fold(self.left_out.slept, Duration::saturating_add)
            .as_secs_f64()
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
                    "start": utc_rfc3339(a.start),
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
            "run_id": self.run_id,
            "preset": self.preset.map(|p| p.preset.name()),
            "preset_from": self.preset.map(|p| p.from.name()),
            "splay_seconds": self.splay.map(|(d, _)| d.as_secs_f64()),
            "splay_window_seconds": self.splay.map(|(_, w)| w.as_secs_f64()),
            "start": utc_rfc3339(started),
            "end": utc_rfc3339(now),
            "duration_seconds": now.duration_since(started).unwrap_or_default().as_secs_f64(),
            "attempts": attempts,
            "attempts_omitted": self.attempts.left_out,
            "retry_count": self.retry_count(),
            "success_count": self.successes(),
            "reset_count": self.resets,
            "hooks": self.hooks.iter().map(|&(kind, attempt, outcome, elapsed)| json!({
                "hook": kind.name(),
                "after_attempt": attempt,
                "outcome": outcome.map(outcome_json),
                "duration_seconds": elapsed.as_secs_f64(),
            })).collect::<Vec<_>>(),
            "hooks_omitted": self.hooks.left_out,
            "breaker": self.breaker_json(),
            "throttle": self.throttle_json(),
            "lock": self.lock.as_ref().map(|(key, news)| crate::report::json::lock_json(key, news)),
            "alert": self.alert.as_ref().map(|(key, n, news)| crate::report::json::alert_json(key, *n, *news)),
            "once": self.once.as_ref().map(|(key, news)| crate::report::json::once_json(key, news)),
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

    /// The attempts the report lists (the first and last `KEPT`), one row
    /// each, in order.
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
        self.attempts.count()
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
        if let Some(line) = crate::report::text::ending(event) {
            self.ending = Some(line);
        }
        match *event {
            Event::Start { preset, .. } => {
                self.started = Some((self.clock)());
                self.preset = preset;
            }
            Event::Splay { delay, window } => self.splay = Some((delay, window)),
            Event::AttemptStarted { attempt, .. } => self.attempt_started(attempt),
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
            } => {
                let after = self.attempts.count();
                let _ = self.hooks.push((kind, after, outcome, elapsed));
            }
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
            Event::Lock { key, news } => self.lock(key, news),
            Event::Alert { .. } => self.alerted(event),
            Event::Once { key, news } => self.once(key, news),
            Event::Throttle {
                key, news, late, ..
            } => self.throttle(key, news, late),
            Event::OutputLost { .. } | Event::Countdown { .. } | Event::MisplacedOption { .. } => {}
            Event::InterruptedWriting { .. } | Event::InterruptedHook { .. } => {
                self.reason = Ending::Interrupted.name();
            }
            Event::Unstarted { .. } => self.reason = Ending::Deadline.name(),
            Event::Interrupted { during, .. } => {
                if let Some((number, outcome, elapsed)) = during.attempt() {
                    self.end_attempt(number, outcome, Some(elapsed));
                } else if let Some(a) = self.attempts.last_mut() {
                    // The delay after the last attempt was cut short.
                    // No clock value makes it panic: at the clock's end,
                    // nothing was slept.
                    let ended = a.start.checked_add(a.duration.unwrap_or_default());
                    let slept = ended
                        .and_then(|e| (self.clock)().duration_since(e).ok())
                        .unwrap_or_default();
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

    const RUN_ID: &str = "0b1e8b52-54c4-4f4e-9d4c-4a0c9b1e2f3a";

    fn epoch() -> SystemTime {
        UNIX_EPOCH + Duration::from_hours(500_000)
    }

    fn fed(events: &[Event<'_>]) -> Recorder {
        let mut r = Recorder::new("job \"x\"".to_owned(), RUN_ID.to_owned(), epoch);
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
            http_status: None,
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
        assert_eq!(doc["run_id"], RUN_ID);
        assert_eq!(doc["retry_count"], 2);
        assert_eq!(doc["backoff_seconds"], 0.3);
        assert_eq!(doc["reason"], "exhausted");
        assert_eq!(doc["final_status"], 9);
        assert_eq!(doc["attempts"][1]["delay_after_seconds"], 0.2);
    }

    #[test]
    fn the_first_and_last_are_kept_and_the_rest_counted() {
        let mut kept = Kept::new();
        let mut gone = Vec::new();
        for n in 0..KEPT as u64 * 3 + 5 {
            gone.extend(kept.push(n));
        }
        let listed: Vec<u64> = kept.iter().copied().collect();
        assert_eq!(listed.len(), 2 * KEPT);
        assert_eq!(listed[KEPT - 1], KEPT as u64 - 1);
        assert_eq!(listed[KEPT], KEPT as u64 * 2 + 5);
        assert_eq!(kept.last_mut().copied(), Some(KEPT as u64 * 3 + 4));
        assert_eq!(kept.count(), KEPT as u64 * 3 + 5);
        assert_eq!(kept.left_out, gone.len() as u64);
        assert_eq!(
            gone.first(),
            Some(&(KEPT as u64)),
            "oldest of the last first"
        );
    }
}
