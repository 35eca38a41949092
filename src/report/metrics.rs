//! Prometheus metrics of a run (`--metrics-file FILE`), in the text format of
//! the node exporter's textfile collector: gauges of the last run, and
//! counters carried over from the file's previous content.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::exit::Exit;
use crate::report::run_report::Recorder;

/// Prometheus text exposition for a run that exits with `exit`:
/// gauges for this run, and counters carried over from `previous`, the
/// file's former content.
#[allow(clippy::cast_precision_loss)] // counts far below 2^52
pub fn metrics(run: &Recorder, exit: Exit, previous: Option<&str>) -> String {
    let label = format!("{{name=\"{}\"}}", escape_label(run.name()));
    let now = unix_seconds(run.now());
    let before = |metric: &str| previous.and_then(|p| read_sample(p, metric, &label));
    let success = u8::from(run.succeeded());
    let (attempts, retries, slept) = (
        run.attempts() as f64,
        run.retry_count() as f64,
        run.backoff_seconds(),
    );
    let gauges: [(&str, &str, f64); 8] = [
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
            "backoff_last_successes",
            "Attempts of the last run that succeeded (runs with --until-failure, a streak with --consecutive).",
            run.successes() as f64,
        ),
        (
            "backoff_last_resets",
            "Times the last run's retry count and delays started over (--reset-after).",
            run.resets() as f64,
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
    outcomes(&mut out, run, previous);
    if let Some((state, skipped)) = run.breaker_state() {
        let skipped_metric = "backoff_breaker_skipped_total";
        let total = before(skipped_metric).unwrap_or(0.0) + f64::from(u8::from(skipped));
        let _ = write!(
            out,
            "# HELP backoff_breaker_state The circuit breaker's state as the last run left it: 0 closed, 1 open, 2 half-open.\n\
             # TYPE backoff_breaker_state gauge\nbackoff_breaker_state{label} {}\n\
             # HELP {skipped_metric} Runs the circuit breaker did not let start the command.\n\
             # TYPE {skipped_metric} counter\n{skipped_metric}{label} {total}\n",
            state.gauge()
        );
    }
    out
}

/// The counter of attempts by how they ended, one sample per outcome: this
/// run's, and every one the previous file had.
#[allow(clippy::cast_precision_loss)] // counts far below 2^52
fn outcomes(out: &mut String, run: &Recorder, previous: Option<&str>) {
    const METRIC: &str = "backoff_attempt_outcomes_total";
    const KINDS: [&str; 8] = [
        "backoff_error",
        "cannot_start",
        "exit",
        "idle_timeout",
        "signal",
        "success",
        "timeout",
        "unmet",
    ];
    let name = escape_label(run.name());
    let now = run.outcomes();
    let _ = write!(
        out,
        "# HELP {METRIC} Attempts by how they ended.\n# TYPE {METRIC} counter\n"
    );
    for kind in KINDS {
        let label = format!("{{name=\"{name}\",outcome=\"{kind}\"}}");
        let before = previous.and_then(|p| read_sample(p, METRIC, &label));
        let this = now.iter().find(|(k, _)| *k == kind).map(|(_, n)| *n);
        if before.is_none() && this.is_none() {
            continue;
        }
        let total = before.unwrap_or(0.0) + this.unwrap_or(0) as f64;
        let _ = writeln!(out, "{METRIC}{label} {total}");
    }
}

fn unix_seconds(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Event, Report};
    use std::time::Duration;

    fn epoch() -> SystemTime {
        UNIX_EPOCH + Duration::from_hours(500_000)
    }

    #[test]
    fn metrics_escape_the_label_and_add_to_previous_counters() {
        let mut r = Recorder::new("job \"x\"".to_owned(), epoch);
        r.event(&Event::AttemptStarted {
            attempt: 1,
            max_attempts: Some(1),
        });
        let first = metrics(&r, Exit::SUCCESS, None);
        assert!(
            first.contains("backoff_runs_total{name=\"job \\\"x\\\"\"} 1\n"),
            "{first}"
        );
        let second = metrics(&r, Exit::SUCCESS, Some(&first));
        assert!(
            second.contains("backoff_runs_total{name=\"job \\\"x\\\"\"} 2\n"),
            "{second}"
        );
        assert!(second.contains("backoff_attempts_total{name=\"job \\\"x\\\"\"} 2\n"));
        // A corrupt previous file starts the counters afresh.
        let third = metrics(
            &r,
            Exit::SUCCESS,
            Some("backoff_runs_total{name=\"job \\\"x\\\"\"} NaN"),
        );
        assert!(third.contains("backoff_runs_total{name=\"job \\\"x\\\"\"} 1\n"));
    }
}
