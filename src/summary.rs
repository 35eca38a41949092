//! Machine-readable accounts of a run: JSON event lines (`--log-format
//! json`), the run report (`--report`) and Prometheus metrics
//! (`--metrics-file`). Building them is pure; `write_atomically` is the one
//! function here that touches the file system.

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::classify::Outcome;
use crate::config::Verbosity;
use crate::exit::Exit;
use crate::report::{Ending, Event, Next, Report};
use crate::signals::signal_short_name;

/// The version of the event and report schemas, bumped on any change that
/// is not a new field.
pub const SCHEMA_VERSION: u32 = 1;

/// An outcome as JSON: `{"kind": "exit", "code": 22}`, `{"kind": "signal",
/// "signal": "TERM", "number": 15}`, `{"kind": "timeout"}`, `{"kind":
/// "not_found"}` or `{"kind": "cannot_run"}`.
pub fn outcome_json(o: Outcome) -> Value {
    match o {
        Outcome::Exited(c) => json!({"kind": "exit", "code": c}),
        Outcome::Signaled(s) => {
            json!({"kind": "signal", "signal": signal_short_name(s), "number": s})
        }
        Outcome::TimedOut(_) => json!({"kind": "timeout"}),
        Outcome::NotFound => json!({"kind": "not_found"}),
        Outcome::CannotRun => json!({"kind": "cannot_run"}),
    }
}

fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

fn unix_seconds(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
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

/// The JSON object for an event (without the common fields).
fn event_json(event: &Event<'_>, verbose: bool) -> Value {
    match *event {
        Event::Start {
            command,
            max_attempts,
        } => {
            let mut v = json!({
                "event": "start",
                "program": command[0].to_string_lossy(),
                "max_attempts": max_attempts,
            });
            if verbose {
                v["argv"] = command.iter().map(|a| a.to_string_lossy()).collect();
            }
            v
        }
        Event::AttemptStarted {
            attempt,
            max_attempts,
        } => json!({"event": "attempt_start", "attempt": attempt, "max_attempts": max_attempts}),
        Event::Failed {
            attempt,
            outcome,
            elapsed,
            next,
            ..
        } => {
            let mut v = json!({
                "event": "attempt_end",
                "attempt": attempt,
                "outcome": outcome_json(outcome),
                "duration_seconds": elapsed.as_secs_f64(),
            });
            match next {
                Next::Retry { delay, server } => {
                    v["next"] = json!("retry");
                    v["delay_seconds"] = json!(delay.delay.as_secs_f64());
                    v["bound_seconds"] = json!(delay.bound.as_secs_f64());
                    v["delay_from_server"] = json!(server);
                }
                Next::Exhausted => v["next"] = json!("exhausted"),
                Next::Budget => v["next"] = json!("budget"),
                Next::Stop(_) => v["next"] = json!("stopped"),
                Next::Deadline { delay, .. } => {
                    v["next"] = json!("deadline");
                    v["delay_seconds"] = json!(delay.as_secs_f64());
                }
            }
            v
        }
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
            ..
        } => json!({
            "event": "success",
            "attempt": attempt,
            "outcome": outcome_json(outcome),
            "duration_seconds": elapsed.as_secs_f64(),
            "total_seconds": total.as_secs_f64(),
        }),
        Event::GaveUp {
            attempts,
            total,
            outcome,
            reason,
        } => json!({
            "event": "give_up",
            "attempts": attempts,
            "outcome": outcome_json(outcome),
            "reason": reason.name(),
            "total_seconds": total.as_secs_f64(),
        }),
        Event::Interrupted { signal, attempt } => json!({
            "event": "interrupted",
            "signal": signal_short_name(signal),
            "during": if attempt.is_some() { "attempt" } else { "delay" },
        }),
    }
}

impl<W: Write> Report for JsonReport<W> {
    fn event(&mut self, event: &Event<'_>) {
        if self.verbosity == Verbosity::Quiet && !matches!(event, Event::CannotStart { .. }) {
            return;
        }
        let mut v = event_json(event, self.verbosity == Verbosity::Verbose);
        v["schema"] = json!(SCHEMA_VERSION);
        v["time"] = json!(rfc3339((self.clock)()));
        v["name"] = json!(self.name);
        let mut line = v.to_string();
        line.push('\n');
        let _ = self.out.write_all(line.as_bytes());
        let _ = self.out.flush();
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
}

/// Collects what a run did, for `--report` and `--metrics-file`.
pub struct Recorder {
    name: String,
    clock: fn() -> SystemTime,
    started: Option<SystemTime>,
    attempts: Vec<AttemptRecord>,
    reason: &'static str,
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
        }
    }

    fn end_attempt(&mut self, number: u64, outcome: Outcome, duration: Option<Duration>) {
        if let Some(a) = self.attempts.iter_mut().rev().find(|a| a.number == number) {
            a.outcome = Some(outcome);
            a.duration = duration;
        }
    }

    /// Retries made: attempts after the first.
    fn retry_count(&self) -> u64 {
        self.attempts.len().saturating_sub(1) as u64
    }

    /// Seconds slept between attempts (a delay cut short by a signal
    /// counts for the part that was slept).
    fn backoff_seconds(&self) -> f64 {
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
            "backoff_seconds": self.backoff_seconds(),
            "final_status": exit.shell_code(),
            "final_signal": match exit {
                Exit::Signal(s) => Some(signal_short_name(s)),
                Exit::Code(_) => None,
            },
            "reason": self.reason,
        })
    }

    /// Prometheus text exposition for a run that exits with `exit`:
    /// gauges for this run, and counters carried over from `previous`, the
    /// file's former content.
    #[allow(clippy::cast_precision_loss)] // counts far below 2^52
    pub fn metrics(&self, exit: Exit, previous: Option<&str>) -> String {
        let label = format!("{{name=\"{}\"}}", escape_label(&self.name));
        let now = unix_seconds((self.clock)());
        let before = |metric: &str| previous.and_then(|p| read_sample(p, metric, &label));
        let success = u8::from(self.reason == "success");
        let (attempts, retries, slept) = (
            self.attempts.len() as f64,
            self.retry_count() as f64,
            self.backoff_seconds(),
        );
        let gauges: [(&str, &str, f64); 6] = [
            (
                "backoff_last_attempts",
                "Attempts made by the last run.",
                attempts,
            ),
            (
                "backoff_last_retries",
                "Retries made by the last run.",
                retries,
            ),
            (
                "backoff_last_backoff_seconds",
                "Seconds the last run waited between attempts.",
                slept,
            ),
            (
                "backoff_last_exit_status",
                "Exit status of the last run (128+N for a signal).",
                f64::from(exit.shell_code()),
            ),
            (
                "backoff_last_success",
                "1 if the last run succeeded, else 0.",
                f64::from(success),
            ),
            (
                "backoff_last_run_timestamp_seconds",
                "When the last run ended, in seconds since the Unix epoch.",
                now,
            ),
        ];
        let counters: [(&str, &str, f64); 4] = [
            ("backoff_runs_total", "Runs.", 1.0),
            ("backoff_attempts_total", "Attempts.", attempts),
            ("backoff_retries_total", "Retries.", retries),
            (
                "backoff_backoff_seconds_total",
                "Seconds spent waiting between attempts.",
                slept,
            ),
        ];
        let mut out = String::new();
        for (metric, help, value) in gauges {
            let _ = write!(
                out,
                "# HELP {metric} {help}\n# TYPE {metric} gauge\n{metric}{label} {value}\n"
            );
        }
        for (metric, help, value) in counters {
            let total = before(metric).unwrap_or(0.0) + value;
            let _ = write!(
                out,
                "# HELP {metric} {help}\n# TYPE {metric} counter\n{metric}{label} {total}\n"
            );
        }
        out
    }
}

/// Escapes a label value for the exposition format.
fn escape_label(s: &str) -> String {
    s.replace('\\', r"\\")
        .replace('"', "\\\"")
        .replace('\n', r"\n")
}

/// The value of `metric` with exactly `label` in an exposition text.
fn read_sample(text: &str, metric: &str, label: &str) -> Option<f64> {
    text.lines()
        .filter_map(|l| l.strip_prefix(metric))
        .filter_map(|l| l.strip_prefix(label))
        .filter_map(|v| v.trim().parse::<f64>().ok())
        .find(|v| v.is_finite() && *v >= 0.0)
}

impl Report for Recorder {
    fn event(&mut self, event: &Event<'_>) {
        match *event {
            Event::Start { .. } => self.started = Some((self.clock)()),
            Event::AttemptStarted { attempt, .. } => self.attempts.push(AttemptRecord {
                number: attempt,
                start: (self.clock)(),
                duration: None,
                outcome: None,
                delay_after: None,
            }),
            Event::Failed {
                attempt,
                outcome,
                elapsed,
                next,
                ..
            } => {
                self.end_attempt(attempt, outcome, Some(elapsed));
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
                self.reason = "success";
            }
            Event::GaveUp { reason, .. } => self.reason = reason.name(),
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

/// Sends every event to each of several reports.
pub struct Reports<'a>(pub Vec<&'a mut dyn Report>);

impl Report for Reports<'_> {
    fn event(&mut self, event: &Event<'_>) {
        for r in &mut self.0 {
            r.event(event);
        }
    }
}

/// Writes `content` to `path` atomically: into a temporary file in the same
/// directory, then renamed over `path`, so that a reader sees the old file
/// or the new one, never half of one. The file is readable by everyone
/// (a metrics collector usually runs as another user).
///
/// # Errors
///
/// When the directory cannot be written or the rename fails.
pub fn write_atomically(path: &Path, content: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".backoff-")
        .tempfile_in(dir)?;
    tmp.write_all(content)?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Delay;

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
            },
        ]);
        let doc = r.report(Exit::Code(9));
        assert_eq!(doc["retry_count"], 2);
        assert_eq!(doc["backoff_seconds"], 0.3);
        assert_eq!(doc["reason"], "exhausted");
        assert_eq!(doc["final_status"], 9);
        assert_eq!(doc["attempts"][1]["delay_after_seconds"], 0.2);
    }

    #[test]
    fn metrics_escape_the_label_and_add_to_previous_counters() {
        let r = fed(&[Event::AttemptStarted {
            attempt: 1,
            max_attempts: Some(1),
        }]);
        let first = r.metrics(Exit::SUCCESS, None);
        assert!(
            first.contains("backoff_runs_total{name=\"job \\\"x\\\"\"} 1\n"),
            "{first}"
        );
        let second = r.metrics(Exit::SUCCESS, Some(&first));
        assert!(
            second.contains("backoff_runs_total{name=\"job \\\"x\\\"\"} 2\n"),
            "{second}"
        );
        assert!(second.contains("backoff_attempts_total{name=\"job \\\"x\\\"\"} 2\n"));
        // A corrupt previous file starts the counters afresh.
        let third = r.metrics(
            Exit::SUCCESS,
            Some("backoff_runs_total{name=\"job \\\"x\\\"\"} NaN"),
        );
        assert!(third.contains("backoff_runs_total{name=\"job \\\"x\\\"\"} 1\n"));
    }
}
