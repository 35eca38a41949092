//! Prometheus metrics of a run (`--metrics-file FILE`), in the text format of
//! the node exporter's textfile collector: gauges of the last run, and
//! counters carried over from the file's previous content. Each `--name`
//! has its own series in a file that several share: a run replaces the
//! series of its own name and keeps every other sample of the file, of
//! backoff's metrics or any others, each metric's samples together under
//! one HELP and one TYPE. A line of the previous content that is not valid
//! exposition text is dropped, so that what is written always is.
//!
//! `backoff_last_success_timestamp_seconds` is the time of the last run
//! that succeeded: a run that fails keeps the previous file's (when it is
//! a time: finite, not negative), and a name that never succeeded has no
//! such series. `pushed` gives the same gauges for a Pushgateway
//! (`--metrics-push`).

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::exit::Exit;
use crate::report::run_report::Recorder;

/// Prometheus text exposition for a run that exits with `exit`: gauges
/// for this run, counters carried over from `previous` (the file's former
/// content), and every sample of `previous` of another series.
#[allow(clippy::cast_precision_loss)] // counts far below 2^52
pub fn metrics(run: &Recorder, exit: Exit, previous: Option<&str>) -> String {
    let mut file = Exposition::parse(previous.unwrap_or(""));
    let name = run.name();
    let now = unix_seconds(run.now());
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
    for (metric, help, value) in gauges {
        file.declare(metric, help, "gauge");
        file.set(Series::of(metric, name, None), value);
    }
    file.declare(LAST_SUCCESS, LAST_SUCCESS_HELP, "gauge");
    let last = Series::of(LAST_SUCCESS, name, None);
    if run.succeeded() {
        file.set(last, now);
    } else {
        file.keep_if(&last, |v| v.is_finite() && v >= 0.0);
    }
    for (metric, help, value) in counters {
        file.declare(metric, help, "counter");
        file.add(Series::of(metric, name, None), value);
    }
    let outcomes = "backoff_attempt_outcomes_total";
    file.declare(outcomes, "Attempts by how they ended.", "counter");
    for (kind, count) in run.outcomes() {
        file.add(Series::of(outcomes, name, Some(kind)), count as f64);
    }
    fleet(&mut file, run, name);
    file.render()
}

/// The metric of the time of the last success.
pub const LAST_SUCCESS: &str = "backoff_last_success_timestamp_seconds";

const LAST_SUCCESS_HELP: &str = "When the last run that succeeded ended, in seconds since the Unix epoch (failed runs keep it).";

/// The metrics pushed to a Pushgateway for a run that exits with `exit`
/// (`--metrics-push`): the gauges of `metrics`, the time of the last
/// success only when this run succeeded (a failed run's push leaves the
/// group's own), and no counter, for a Pushgateway keeps what one run
/// pushed, not a count that grows.
pub fn pushed(run: &Recorder, exit: Exit) -> String {
    let mut all = Exposition::parse(&metrics(run, exit, None));
    all.families
        .retain(|_, f| f.kind.as_deref().is_some_and(|k| k.ends_with(" gauge")));
    all.render()
}

/// The series of the circuit breaker, the lock and the adaptive throttle,
/// for a run that had them.
// A count of skips is far below 2^53: exact.
#[allow(clippy::cast_precision_loss)]
fn fleet(file: &mut Exposition, run: &Recorder, name: &str) {
    if let Some((state, skipped)) = run.breaker_state() {
        let (gauge, counter) = ("backoff_breaker_state", "backoff_breaker_skipped_total");
        file.declare(
            gauge,
            "The circuit breaker's state as the last run left it: 0 closed, 1 open, 2 half-open.",
            "gauge",
        );
        file.set(Series::of(gauge, name, None), f64::from(state.gauge()));
        file.declare(
            counter,
            "Runs the circuit breaker did not let start the command.",
            "counter",
        );
        file.add(
            Series::of(counter, name, None),
            f64::from(u8::from(skipped)),
        );
    }
    if let Some((skipped, lost)) = run.lock_outcome() {
        for (counter, help, happened) in [
            (
                "backoff_lock_skipped_total",
                "Runs that found the lock (--lock) held and did not start the command.",
                skipped,
            ),
            (
                "backoff_lock_lost_total",
                "Runs that lost their lease on the lock (--lock) and were ended.",
                lost,
            ),
        ] {
            file.declare(counter, help, "counter");
            file.add(
                Series::of(counter, name, None),
                f64::from(u8::from(happened)),
            );
        }
    }
    if let Some(skipped) = run.once_outcome() {
        let counter = "backoff_once_skipped_total";
        file.declare(
            counter,
            "Runs that --once-per skipped: the period was done (reason done), or the job was running in another run (reason running).",
            "counter",
        );
        for reason in ["done", "running"] {
            let mut series = Series::of(counter, name, None);
            series.labels.push(("reason".to_owned(), reason.to_owned()));
            file.add(series, f64::from(u8::from(skipped == Some(reason))));
        }
    }
    if let Some(t) = run.throttled() {
        let (gauge, counter) = (
            "backoff_throttle_reject_probability",
            "backoff_throttled_total",
        );
        file.declare(
            gauge,
            "The probability with which the adaptive throttle skipped (or would have skipped) the last run's last attempt.",
            "gauge",
        );
        if let Some((decision, _)) = t.last {
            file.set(Series::of(gauge, name, None), decision.probability);
        }
        file.declare(
            counter,
            "Attempts the adaptive throttle skipped.",
            "counter",
        );
        file.add(Series::of(counter, name, None), t.skipped as f64);
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

/// One series: a metric's name and its labels, sorted by name, with their
/// values as they read (unescaped).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Series {
    metric: String,
    labels: Vec<(String, String)>,
}

impl Series {
    /// The series of `metric` for the run `name`, and `outcome`.
    fn of(metric: &str, name: &str, outcome: Option<&str>) -> Series {
        let mut labels = vec![("name".to_owned(), name.to_owned())];
        if let Some(o) = outcome {
            labels.push(("outcome".to_owned(), o.to_owned()));
        }
        Series {
            metric: metric.to_owned(),
            labels,
        }
    }

    /// The value of its label `name`.
    fn name(&self) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == "name")
            .map(|(_, v)| v.as_str())
    }

    /// The sample line of this series with `value`.
    fn line(&self, value: f64) -> String {
        let mut line = self.metric.clone();
        if !self.labels.is_empty() {
            let labels: Vec<String> = self
                .labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
                .collect();
            let _ = write!(line, "{{{}}}", labels.join(","));
        }
        let _ = write!(line, " {value}");
        line
    }
}

/// A sample: its series, its value, and its line as it is written.
#[derive(Debug)]
struct Sample {
    series: Series,
    value: f64,
    line: String,
}

/// A metric family: its HELP and TYPE lines, and its samples in order.
#[derive(Debug, Default)]
struct Family {
    help: Option<String>,
    kind: Option<String>,
    samples: Vec<Sample>,
}

/// An exposition text, by family, in order.
#[derive(Debug, Default)]
struct Exposition {
    /// The families' names, in the order they are written.
    order: Vec<String>,
    families: HashMap<String, Family>,
    /// How many of `order` this run declared: they come first.
    declared: usize,
}

/// The metric kinds of the format.
const KINDS: [&str; 5] = ["counter", "gauge", "histogram", "summary", "untyped"];

impl Exposition {
    /// Reads an exposition text. A line that is not valid exposition text
    /// is dropped, as are other comments, a second HELP or TYPE of one
    /// family, and a second sample of one series.
    fn parse(text: &str) -> Exposition {
        let mut file = Exposition::default();
        // First the families the comments declare, with their kind, so that
        // a histogram's or a summary's samples go to theirs.
        for line in text.lines() {
            let Some((word, name, rest)) = comment(line) else {
                continue;
            };
            let family = file.family(name);
            match word {
                "HELP" if family.help.is_none() && help_text(rest) => {
                    family.help = Some(format!("# HELP {name} {rest}"));
                }
                "TYPE" if family.kind.is_none() && KINDS.contains(&rest.trim()) => {
                    family.kind = Some(format!("# TYPE {name} {}", rest.trim()));
                }
                _ => {}
            }
        }
        let mut seen = HashSet::new();
        for line in text.lines() {
            let Some((series, value)) = sample(line) else {
                continue;
            };
            if !seen.insert(series.clone()) {
                continue;
            }
            let name = file.family_of(&series.metric).to_owned();
            file.family(&name).samples.push(Sample {
                series,
                value,
                line: line.trim_matches([' ', '\t']).to_owned(),
            });
        }
        file
    }

    /// The family `name`, made if need be (last in order).
    fn family(&mut self, name: &str) -> &mut Family {
        if !self.families.contains_key(name) {
            self.order.push(name.to_owned());
        }
        self.families.entry(name.to_owned()).or_default()
    }

    /// The family a sample of `metric` belongs to: its own, or the
    /// histogram or summary its suffix names.
    fn family_of<'a>(&self, metric: &'a str) -> &'a str {
        if self.families.contains_key(metric) {
            return metric;
        }
        for suffix in ["_bucket", "_count", "_sum"] {
            if let Some(base) = metric.strip_suffix(suffix)
                && let Some(f) = self.families.get(base)
                && f.kind
                    .as_deref()
                    .is_some_and(|k| k.ends_with(" histogram") || k.ends_with(" summary"))
            {
                return base;
            }
        }
        metric
    }

    /// Declares the family `metric` of this run, of `kind`: written with
    /// this HELP and TYPE, before every family this run does not declare.
    fn declare(&mut self, metric: &str, help: &str, kind: &str) {
        let family = self.family(metric);
        family.help = Some(format!("# HELP {metric} {help}"));
        family.kind = Some(format!("# TYPE {metric} {kind}"));
        // A gauge's or a counter's samples are of its own name only.
        family.samples.retain(|s| s.series.metric == metric);
        if let Some(at) = self.order.iter().position(|n| n == metric)
            && at >= self.declared
        {
            let name = self.order.remove(at);
            self.order.insert(self.declared, name);
            self.declared += 1;
        }
    }

    /// Sets `series` to `value`, where it was, else after the family's last
    /// sample of the same name (or its last sample).
    fn set(&mut self, series: Series, value: f64) {
        let line = series.line(value);
        let family = self.family(&series.metric);
        if let Some(s) = family.samples.iter_mut().find(|s| s.series == series) {
            s.value = value;
            s.line = line;
            return;
        }
        let ours = series.name();
        let at = family
            .samples
            .iter()
            .rposition(|s| ours.is_some() && s.series.name() == ours)
            .map_or(family.samples.len(), |i| i + 1);
        family.samples.insert(
            at,
            Sample {
                series,
                value,
                line,
            },
        );
    }

    /// Drops the sample of `series` unless its value is `good`.
    fn keep_if(&mut self, series: &Series, good: impl Fn(f64) -> bool) {
        if let Some(f) = self.families.get_mut(&series.metric) {
            f.samples.retain(|s| s.series != *series || good(s.value));
        }
    }

    /// Adds `value` to the counter `series`: to what it held, when that was
    /// a count (finite, not negative), else to nothing.
    fn add(&mut self, series: Series, value: f64) {
        let before = self
            .families
            .get(&series.metric)
            .and_then(|f| f.samples.iter().find(|s| s.series == series))
            .map(|s| s.value)
            .filter(|v| v.is_finite() && *v >= 0.0)
            .unwrap_or(0.0);
        self.set(series, before + value);
    }

    /// The text: each family that has samples, under its HELP and TYPE.
    fn render(&self) -> String {
        let mut out = String::new();
        for name in &self.order {
            let Some(family) = self.families.get(name) else {
                continue;
            };
            if family.samples.is_empty() {
                continue;
            }
            for line in [&family.help, &family.kind].into_iter().flatten() {
                out.push_str(line);
                out.push('\n');
            }
            for s in &family.samples {
                out.push_str(&s.line);
                out.push('\n');
            }
        }
        out
    }
}

/// A `# HELP NAME TEXT` or `# TYPE NAME KIND` line: the word, the metric
/// name and the rest.
fn comment(line: &str) -> Option<(&str, &str, &str)> {
    let rest = line.strip_prefix('#')?.trim_start_matches([' ', '\t']);
    let (word, rest) = rest.split_once([' ', '\t'])?;
    if word != "HELP" && word != "TYPE" {
        return None;
    }
    let rest = rest.trim_start_matches([' ', '\t']);
    let (name, text) = rest.split_once([' ', '\t']).unwrap_or((rest, ""));
    metric_name(name).then_some((word, name, text))
}

/// Whether `s` is the text of a HELP line: a backslash only in `\\` or
/// `\n`.
fn help_text(s: &str) -> bool {
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' && !matches!(chars.next(), Some('\\' | 'n')) {
            return false;
        }
    }
    true
}

/// Whether `s` is a metric name: `[a-zA-Z_:][a-zA-Z0-9_:]*`.
fn metric_name(s: &str) -> bool {
    let mut bytes = s.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_' || b == b':')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':')
}

/// Whether `s` is a label name: `[a-zA-Z_][a-zA-Z0-9_]*`.
fn label_name(s: &str) -> bool {
    let mut bytes = s.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A sample line, `metric{label="value",...} value [timestamp]`: its
/// series and value; `None` if the line is not one.
fn sample(line: &str) -> Option<(Series, f64)> {
    let blank = [' ', '\t'];
    let line = line.trim_matches(blank);
    if line.starts_with('#') {
        return None;
    }
    let end = line.find(|c: char| c == '{' || blank.contains(&c))?;
    let (metric, mut rest) = line.split_at(end);
    if !metric_name(metric) {
        return None;
    }
    let mut labels = Vec::new();
    if let Some(inner) = rest.strip_prefix('{') {
        let (read, after) = label_set(inner)?;
        labels = read;
        rest = after;
    }
    let mut fields = rest.split(blank).filter(|f| !f.is_empty());
    let value = fields.next()?.parse::<f64>().ok()?;
    if let Some(t) = fields.next() {
        t.parse::<i64>().ok()?;
    }
    if fields.next().is_some() {
        return None;
    }
    labels.sort();
    if labels.windows(2).any(|w| w[0].0 == w[1].0) {
        return None;
    }
    let series = Series {
        metric: metric.to_owned(),
        labels,
    };
    Some((series, value))
}

/// The labels of a sample, after its `{`: the labels, and what follows the
/// closing `}`.
fn label_set(mut text: &str) -> Option<(Vec<(String, String)>, &str)> {
    let blank = [' ', '\t'];
    let mut labels = Vec::new();
    loop {
        text = text.trim_start_matches(blank);
        if let Some(after) = text.strip_prefix('}') {
            return Some((labels, after));
        }
        let (name, rest) = text.split_once('=')?;
        let name = name.trim_matches(blank);
        if !label_name(name) {
            return None;
        }
        let rest = rest.trim_start_matches(blank).strip_prefix('"')?;
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let end = loop {
            match chars.next()? {
                (i, '"') => break i,
                (_, '\\') => match chars.next()?.1 {
                    '\\' => value.push('\\'),
                    '"' => value.push('"'),
                    'n' => value.push('\n'),
                    _ => return None,
                },
                (_, '\n') => return None,
                (_, c) => value.push(c),
            }
        };
        labels.push((name.to_owned(), value));
        text = rest[end + 1..].trim_start_matches(blank);
        if let Some(after) = text.strip_prefix(',') {
            text = after;
        } else if !text.starts_with('}') {
            return None;
        }
    }
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
        let mut r = Recorder::new("job \"x\"".to_owned(), String::new(), epoch);
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

    /// A run of `name` that made one attempt, which succeeded.
    fn run(name: &str) -> Recorder {
        let mut r = Recorder::new(name.to_owned(), String::new(), epoch);
        r.event(&Event::AttemptStarted {
            attempt: 1,
            max_attempts: Some(1),
        });
        r.event(&Event::Succeeded {
            attempt: 1,
            max_attempts: Some(1),
            outcome: crate::classify::Outcome::Exited(0),
            elapsed: Duration::from_millis(5),
            total: Duration::from_millis(5),
            streak: 1,
            condition: false,
            http_status: None,
        });
        r
    }

    /// A run of `name` that made one attempt, which failed with 3, at
    /// `at` hours past the epoch.
    fn failed_run(name: &str) -> Recorder {
        let mut r = Recorder::new(name.to_owned(), String::new(), || {
            epoch() + Duration::from_hours(1)
        });
        r.event(&Event::AttemptStarted {
            attempt: 1,
            max_attempts: Some(1),
        });
        r.event(&Event::GaveUp {
            attempts: 1,
            total: Duration::from_millis(5),
            outcome: crate::classify::Outcome::Exited(3),
            reason: crate::event::Ending::Exhausted,
            short_of: None,
        });
        r
    }

    /// The value of `metric`'s series of `name` in `text`.
    fn value_of(text: &str, metric: &str, name: &str) -> Option<f64> {
        let series = Series::of(metric, name, None);
        text.lines()
            .filter_map(sample)
            .find(|(s, _)| *s == series)
            .map(|(_, v)| v)
    }

    #[test]
    fn the_last_success_is_kept_across_failures_and_absent_until_one() {
        let at = |text: &str| value_of(text, LAST_SUCCESS, "a");
        let success = unix_seconds(epoch());
        // Never succeeded: no series, and no HELP or TYPE without one.
        let failed = metrics(&failed_run("a"), Exit::Code(3), None);
        assert_eq!(at(&failed), None);
        assert!(!failed.contains(LAST_SUCCESS), "{failed}");
        let ok = metrics(&run("a"), Exit::SUCCESS, Some(&failed));
        assert_eq!(at(&ok), Some(success));
        assert_eq!(
            value_of(&ok, "backoff_last_run_timestamp_seconds", "a"),
            Some(success)
        );
        // A failure an hour later keeps it, and another name's too.
        let b = metrics(&run("b"), Exit::SUCCESS, Some(&ok));
        let later = metrics(&failed_run("a"), Exit::Code(3), Some(&b));
        assert_eq!(at(&later), Some(success));
        assert_eq!(value_of(&later, LAST_SUCCESS, "b"), Some(success));
        assert_eq!(
            value_of(&later, "backoff_last_run_timestamp_seconds", "a"),
            Some(success + 3600.0)
        );
        check(&later);
        // A value that is not a time is not kept.
        for hostile in ["NaN", "-1", "+Inf", "-Inf"] {
            let previous = format!("{LAST_SUCCESS}{{name=\"a\"}} {hostile}\n");
            let text = metrics(&failed_run("a"), Exit::Code(3), Some(&previous));
            assert_eq!(at(&text), None, "{hostile}: {text}");
            check(&text);
        }
    }

    #[test]
    fn a_push_holds_the_gauges_and_the_last_success_only_after_one() {
        let ok = pushed(&run("a"), Exit::SUCCESS);
        check(&ok);
        assert!(!ok.contains("_total"), "{ok}");
        assert!(!ok.contains(" counter\n"), "{ok}");
        assert_eq!(
            value_of(&ok, LAST_SUCCESS, "a"),
            Some(unix_seconds(epoch()))
        );
        assert_eq!(value_of(&ok, "backoff_last_attempts", "a"), Some(1.0));
        let failed = pushed(&failed_run("a"), Exit::Code(3));
        assert!(!failed.contains(LAST_SUCCESS), "{failed}");
        assert_eq!(
            value_of(&failed, "backoff_last_exit_status", "a"),
            Some(3.0)
        );
    }

    /// The families of a text, each with its HELP and TYPE lines counted,
    /// checking that its samples follow them, together.
    fn check(text: &str) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        let mut current = String::new();
        for line in text.lines() {
            if let Some((word, name, _)) = comment(line) {
                assert!(word == "HELP" || word == "TYPE", "{line}");
                if name != current {
                    assert!(!names.contains(&name.to_owned()), "{name} twice in {text}");
                    names.push(name.to_owned());
                    current = name.to_owned();
                }
                continue;
            }
            let (series, _) = sample(line).unwrap_or_else(|| panic!("{line:?} in {text}"));
            let family = series.metric.clone();
            let ours = family == current
                || ["_bucket", "_count", "_sum"]
                    .iter()
                    .any(|s| family.strip_suffix(s) == Some(current.as_str()));
            if !ours {
                assert!(!names.contains(&family), "{family} apart in {text}");
                names.push(family.clone());
                current = family;
            }
        }
        names
    }

    #[test]
    fn each_name_keeps_its_series_under_one_help_and_type_per_metric() {
        let a = metrics(&run("a"), Exit::SUCCESS, None);
        let ab = metrics(&run("b"), Exit::SUCCESS, Some(&a));
        let aba = metrics(&run("a"), Exit::SUCCESS, Some(&ab));
        for text in [&a, &ab, &aba] {
            check(text);
            assert_eq!(
                text.matches("# TYPE backoff_runs_total counter\n").count(),
                1
            );
        }
        assert!(aba.contains("backoff_runs_total{name=\"a\"} 2\n"), "{aba}");
        assert!(aba.contains("backoff_runs_total{name=\"b\"} 1\n"), "{aba}");
        let outcomes = "# TYPE backoff_attempt_outcomes_total counter\n\
            backoff_attempt_outcomes_total{name=\"a\",outcome=\"success\"} 2\n\
            backoff_attempt_outcomes_total{name=\"b\",outcome=\"success\"} 1\n";
        assert!(aba.contains(outcomes), "{aba}");
        // A series new to a name goes with that name's others.
        let mut file = Exposition::parse(&aba);
        file.add(
            Series::of("backoff_attempt_outcomes_total", "a", Some("exit")),
            1.0,
        );
        assert!(file.render().contains("\"a\",outcome=\"success\"} 2\nbackoff_attempt_outcomes_total{name=\"a\",outcome=\"exit\"} 1\n"));
        // The series keep their places: a's, then b's.
        let at = |s: &str| aba.find(s).unwrap_or_else(|| panic!("{s} in {aba}"));
        assert!(at("backoff_last_attempts{name=\"a\"}") < at("backoff_last_attempts{name=\"b\"}"));
        // Written again as it reads.
        assert_eq!(Exposition::parse(&aba).render(), aba);
    }

    #[test]
    fn other_metrics_are_kept_and_lines_that_are_not_exposition_text_dropped() {
        let previous = "\
# HELP node_thing Another exporter's.
# TYPE node_thing gauge
node_thing{a=\"x\",b=\"y\\\"z\"} 3 1700000000000
# TYPE rpc histogram
rpc_bucket{le=\"+Inf\"} 2
rpc_sum 0.5
# a comment of someone's
not a sample
bad{l=\"\\q\"} 1
bad{l=\"v\",l=\"w\"} 1
bad{1l=\"v\"} 1
bad 1 2 3
bad NaNa
# TYPE node_thing counter
# HELP rpc bad \\escape
node_thing{b=\"y\\\"z\",a=\"x\"} 4
backoff_runs_total{name=\"other\"} 7
rpc_count 2
# TYPE backoff_last_attempts histogram
backoff_last_attempts_bucket{le=\"1\"} 1
";
        let text = metrics(&run("a"), Exit::SUCCESS, Some(previous));
        let families = check(&text);
        assert_eq!(
            &families[families.len() - 2..],
            ["node_thing", "rpc"],
            "{text}"
        );
        for kept in [
            "# HELP node_thing Another exporter's.\n# TYPE node_thing gauge\nnode_thing{a=\"x\",b=\"y\\\"z\"} 3 1700000000000\n",
            "# TYPE rpc histogram\nrpc_bucket{le=\"+Inf\"} 2\nrpc_sum 0.5\nrpc_count 2\n",
            "backoff_runs_total{name=\"other\"} 7\nbackoff_runs_total{name=\"a\"} 1\n",
        ] {
            assert!(text.contains(kept), "{kept} in {text}");
        }
        for dropped in [
            "comment",
            "not a",
            "bad",
            "escape",
            "} 4",
            "_bucket{le=\"1\"}",
        ] {
            assert!(!text.contains(dropped), "{dropped} in {text}");
        }
        assert_eq!(
            text.matches("# TYPE backoff_last_attempts gauge\n").count(),
            1
        );
        assert!(!text.contains("histogram\nbackoff"), "{text}");
    }

    proptest::proptest! {
        #[test]
        fn any_previous_content_gives_exposition_text_that_reads_back_the_same(
            lines in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::prelude::any::<String>(),
                    "(# (HELP|TYPE) )?[a-z_]{1,8}( [a-z]{0,8})?",
                    r#"[a-z_]{1,8}(\{[a-z]{1,3}="[a-z\\"]{0,4}"(,[a-z]{1,3}="[a-z\\n]{0,3}")?\})? (-?[0-9.]{1,5}|NaN|\+Inf)( [0-9]{1,4})?"#,
                    r#"backoff_runs_total\{name="[ab]"\} [0-9.e+-]{1,6}"#,
                ],
                0..12,
            ),
            name in "[ab\"\\\\]{1,3}",
        ) {
            let previous = lines.join("\n");
            let text = metrics(&run(&name), Exit::SUCCESS, Some(&previous));
            check(&text);
            proptest::prop_assert_eq!(Exposition::parse(&text).render(), text.clone());
            let series = Series::of("backoff_runs_total", &name, None);
            let again = Exposition::parse(&text);
            let runs = again.families["backoff_runs_total"].samples.iter().find(|s| s.series == series).map(|s| s.value);
            proptest::prop_assert!(runs.is_some_and(|v| v >= 1.0), "{}", text);
        }
    }
}
