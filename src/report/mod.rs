//! Every line and file backoff writes about a run: the text lines and
//! GitHub annotations (`text`), the CI runners' folds, step outputs and
//! tables (`ci`), the countdown on a terminal (`live`), the JSON events
//! (`json`), the run report
//! (`run_report`), the Prometheus metrics (`metrics`) and their push to a
//! Pushgateway (`push`), the atomic writes
//! of those files (`atomic`), and what a reset of a shared state says
//! (`state`). Nothing here decides what happens.

pub mod atomic;
pub mod ci;
pub mod fold;
pub mod json;
pub mod live;
pub mod metrics;
pub mod run_report;
pub mod state;
pub mod text;

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::sys::{fd, localtime};

/// How much backoff says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verbosity {
    /// Only backoff's own errors.
    Quiet,
    /// One line per failed attempt and one when giving up.
    Normal,
    /// Also the command line, delay bounds and the success line.
    Verbose,
}

/// Formats of backoff's own reports on stderr. The variants' comments are
/// the help texts of `--log-format`.
#[allow(clippy::doc_markdown)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Lines for people, each starting with 'backoff: '.
    Text,
    /// One JSON object per event, one per line.
    Json,
    /// Text, with each attempt in a ::group:: fold, ::warning:: on each
    /// retry and ::error:: when giving up.
    Github,
    /// Text, with each attempt in a collapsed section of the GitLab CI job
    /// log, and a table of the attempts at the end.
    Gitlab,
}

/// What each of backoff's text lines says after `backoff: `, before its
/// text: the local time (`--timestamps`), then the label (`--name`), as in
/// `backoff: 2026-12-01T17:03:22.783+01:00 sync: attempt 2/7 failed`.
#[derive(Debug, Clone, Default)]
pub struct Labels {
    /// The clock whose time starts each line, with `--timestamps`.
    pub clock: Option<fn() -> SystemTime>,
    /// `--name`.
    pub name: Option<String>,
}

impl Labels {
    /// `text` with the time and the label before it.
    pub fn apply(&self, text: &str) -> String {
        let mut line = String::new();
        if let Some(clock) = self.clock {
            line.push_str(&local_rfc3339(clock()));
            line.push(' ');
        }
        if let Some(name) = &self.name {
            line.push_str(name);
            line.push_str(": ");
        }
        line.push_str(text);
        line
    }
}

/// Writes `backoff: MESSAGE` to stderr in one write, ignoring a closed
/// stderr: backoff's errors before the configuration is known (bad flags,
/// bad values), which are plain lines whatever the log format. Control
/// characters in it (from a value the user gave, say) are escaped. Once
/// the configuration is known, what backoff has to say goes through the
/// run's `Warnings`.
pub fn say(message: &str) {
    Warnings::default().warn(message);
}

/// `2/7`, or `2` without a limit.
pub fn of(attempt: u64, max: Option<u64>) -> String {
    match max {
        Some(m) => format!("{attempt}/{m}"),
        None => attempt.to_string(),
    }
}

/// Where backoff's own warnings go once the configuration is known (a
/// store that cannot be used, a corrupt state, a file that cannot be
/// written): each part of backoff that may warn is given one. In the text
/// formats a warning is a line on stderr, `backoff: `, the labels (the
/// time, the name), then the message; in json, a `warning` event on the
/// same stream as the others. `Warnings::default()` writes a text line
/// without labels.
#[derive(Debug, Clone, Default)]
pub struct Warnings {
    form: Form,
}

#[derive(Debug, Clone)]
enum Form {
    Text(Labels),
    /// As GitHub Actions annotations (`::warning title=NAME::...`).
    Github(Labels),
    Json {
        name: String,
        clock: fn() -> SystemTime,
    },
}

impl Default for Form {
    fn default() -> Self {
        Form::Text(Labels::default())
    }
}

impl Warnings {
    /// Warnings as text lines, labelled with `labels`.
    pub fn text(labels: Labels) -> Warnings {
        Warnings {
            form: Form::Text(labels),
        }
    }

    /// Warnings as GitHub Actions annotations, labelled with `labels`,
    /// which the run's page shows.
    pub fn github(labels: Labels) -> Warnings {
        Warnings {
            form: Form::Github(labels),
        }
    }

    /// Warnings as JSON events of the run `name`, timed by `clock`.
    pub fn json(name: String, clock: fn() -> SystemTime) -> Warnings {
        Warnings {
            form: Form::Json { name, clock },
        }
    }

    /// Writes `message` in one write, ignoring a closed stderr. Control
    /// characters in it (from a value the user gave, say) are escaped.
    pub fn warn(&self, message: &str) {
        let _ = Std::Err.write_all(self.line(message).as_bytes());
    }

    /// Writes `message` as `warn` does, after a line of stderr left
    /// unfinished: a newline first, in the same write.
    pub fn warn_on_a_line_of_its_own(&self, message: &str) {
        let _ = Std::Err.write_all(format!("\n{}", self.line(message)).as_bytes());
    }

    /// Writes `message` as `warn` does, where no output mode hides it: a
    /// protection asked for that is off, or a command not run because of
    /// one. While the output is kept (`--output on-failure`), it goes to
    /// backoff's stderr as it was, at once, and into the end of the output
    /// a check-in sends (`keep_alerts_on_stderr`).
    pub fn alert(&self, message: &str) {
        let line = self.line(message);
        let _ = Std::Alert.write_all(line.as_bytes());
        if let Some(tail) = ALERT_TAIL
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
        {
            tail(line.as_bytes());
        }
    }

    /// The line that tells `message`.
    pub fn line(&self, message: &str) -> String {
        match &self.form {
            Form::Text(labels) => {
                format!("backoff: {}\n", escape_controls(&labels.apply(message)))
            }
            Form::Github(labels) => format!(
                "::warning title={}::{}\n",
                fold::escape_property(labels.name.as_deref().unwrap_or("backoff")),
                fold::escape_workflow(&labels.apply(message))
            ),
            Form::Json { name, clock } => json::warning_line(message, name, *clock),
        }
    }
}

/// `t` as an RFC 3339 local time with milliseconds and the zone's offset:
/// `2026-12-01T17:03:22.783+01:00` (`+00:00` where the local time is UTC),
/// or the UTC time (`…Z`) when the system cannot tell the offset. Any
/// clock value can be written (see `utc_rfc3339`).
pub fn local_rfc3339(t: SystemTime) -> String {
    match localtime::utc_offset(t) {
        Some(offset) => with_offset(t, offset),
        None => utc_rfc3339(t),
    }
}

/// `t` as an RFC 3339 UTC time with milliseconds:
/// `2026-12-01T16:03:22.783Z`. Every value of the clock can be written:
/// a time before 1970 as well, and a year outside 0000 to 9999, which RFC
/// 3339 has no word for, with its sign and all its digits, as ISO 8601's
/// expanded years (`+10000-01-01T00:00:00.000Z`).
pub fn utc_rfc3339(t: SystemTime) -> String {
    format!("{}Z", civil(unix_millis(t)))
}

/// `t` in Unix milliseconds, negative before 1970 (rounded down, as a
/// clock's reading is).
fn unix_millis(t: SystemTime) -> i128 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i128::try_from(d.as_millis()).unwrap_or(i128::MAX),
        Err(e) => {
            let before = e.duration().as_nanos().div_ceil(1_000_000);
            -i128::try_from(before).unwrap_or(i128::MAX)
        }
    }
}

/// Unix milliseconds as a calendar date and time, without a zone:
/// `2026-12-01T17:03:22.783`. Exact for any value a clock can hold (the
/// proleptic Gregorian calendar's day count of H. Hinnant's
/// `civil_from_days`); in `i128`, nothing overflows.
fn civil(ms: i128) -> String {
    const DAY: i128 = 86_400_000;
    let (days, of_day) = (ms.div_euclid(DAY), ms.rem_euclid(DAY));
    let (year, month, day) = crate::fleet::once::civil_from_days(days);
    let year = if (0..=9999).contains(&year) {
        format!("{year:04}")
    } else {
        format!("{year:+05}")
    };
    format!(
        "{year}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}",
        of_day / 3_600_000,
        of_day / 60_000 % 60,
        of_day / 1000 % 60,
        of_day % 1000
    )
}

/// `t` in the zone `offset` seconds east of UTC, as RFC 3339 with
/// milliseconds. An offset's seconds, which RFC 3339 cannot write, are
/// dropped from it, not from the time.
fn with_offset(t: SystemTime, offset: i64) -> String {
    let local = unix_millis(t).saturating_add(i128::from(offset) * 1000);
    let minutes = offset.unsigned_abs() / 60;
    format!(
        "{}{}{:02}:{:02}",
        civil(local),
        if offset < 0 { '-' } else { '+' },
        minutes / 60,
        minutes % 60
    )
}

/// How long one of backoff's own lines (or a report written to
/// `/dev/stdout` or `/dev/stderr`) waits for room in a pipe whose reader
/// does not keep up; after one was dropped, the next ones on the same
/// stream wait no more until one is taken again.
const STALL: Duration = Duration::from_secs(2);

/// backoff's own standard streams, for what it writes there itself: its
/// lines on stderr, and `--report /dev/stdout`. A reader that does not read
/// never holds backoff up (its time limits, its signals, its exit): what
/// the stream does not take within `STALL` is dropped, with an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Std {
    /// backoff's stdout.
    Out,
    /// backoff's stderr.
    Err,
    /// backoff's stderr as it was before the output was kept
    /// (`keep_alerts_on_stderr`), for what no output mode hides.
    Alert,
}

/// One of backoff's standard streams as a destination that does not wait
/// (`fd::Out`), made once; `None` while it cannot be made (no descriptor
/// left), and then the stream is written through as it is.
struct Stream {
    out: Mutex<Option<fd::Out>>,
    stalled: AtomicBool,
}

impl Stream {
    const fn new() -> Stream {
        Stream {
            out: Mutex::new(None),
            stalled: AtomicBool::new(false),
        }
    }

    /// Forgets the destination made, for a descriptor that now names
    /// another file (`output::Capture`).
    fn changed(&self) {
        *self.out.lock().unwrap_or_else(PoisonError::into_inner) = None;
        self.stalled.store(false, Ordering::Relaxed);
    }

    /// Writes all of `buf`, waiting at most `STALL` for a reader that does
    /// not keep up (none after a line was dropped).
    fn write_all(
        &self,
        std: &mut dyn Write,
        of: fn() -> io::Result<fd::Out>,
        buf: &[u8],
    ) -> io::Result<()> {
        let mut made = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        if made.is_none() {
            *made = of().ok();
        }
        let Some(out) = made.as_ref() else {
            // No descriptor to spare: the stream itself, as it is.
            return std.write_all(buf);
        };
        if !out.nonblocking() {
            return out.write_all_blocking(buf);
        }
        let patience = if self.stalled.load(Ordering::Relaxed) {
            Duration::ZERO
        } else {
            STALL
        };
        let deadline = Instant::now() + patience;
        let mut rest = buf;
        while !rest.is_empty() {
            match out.write_now(rest) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => rest = &rest[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if Instant::now() >= deadline || !out.wait_writable(deadline) {
                        self.stalled.store(true, Ordering::Relaxed);
                        return Err(io::ErrorKind::TimedOut.into());
                    }
                }
                Err(e) => return Err(e),
            }
        }
        self.stalled.store(false, Ordering::Relaxed);
        Ok(())
    }
}

static STDERR: Stream = Stream::new();
static STDOUT: Stream = Stream::new();
static ALERTS: Stream = Stream::new();

/// Whether alerts go to `ALERTS`, backoff's stderr as it was when the
/// output started to be kept.
static ALERTS_KEPT_APART: AtomicBool = AtomicBool::new(false);

/// What is told each alert while the output is kept: the end of the output
/// that a check-in sends.
type AlertTail = Box<dyn Fn(&[u8]) + Send>;
static ALERT_TAIL: Mutex<Option<AlertTail>> = Mutex::new(None);

/// Called before backoff's stderr is made a pipe whose output is kept
/// (`output::Capture`): alerts still go to the stderr it is now, and are
/// told to `tail`.
pub fn keep_alerts_on_stderr(tail: AlertTail) {
    *ALERTS.out.lock().unwrap_or_else(PoisonError::into_inner) = fd::Out::stderr().ok();
    ALERTS.stalled.store(false, Ordering::Relaxed);
    ALERTS_KEPT_APART.store(true, Ordering::SeqCst);
    *ALERT_TAIL.lock().unwrap_or_else(PoisonError::into_inner) = Some(tail);
}

/// Called once backoff's stderr is its own again: alerts go where the
/// other lines go.
pub fn alerts_follow_stderr() {
    ALERTS_KEPT_APART.store(false, Ordering::SeqCst);
    ALERTS.changed();
    *ALERT_TAIL.lock().unwrap_or_else(PoisonError::into_inner) = None;
}

/// Tells the writers of backoff's own lines that its stdout and stderr
/// (descriptors 1 and 2) now name other files.
pub fn std_changed() {
    STDOUT.changed();
    STDERR.changed();
}

impl Write for Std {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Std::Out => STDOUT.write_all(&mut io::stdout(), fd::Out::stdout, buf),
            Std::Alert if ALERTS_KEPT_APART.load(Ordering::SeqCst) => {
                ALERTS.write_all(&mut io::stderr(), fd::Out::stderr, buf)
            }
            Std::Err | Std::Alert => STDERR.write_all(&mut io::stderr(), fd::Out::stderr, buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `text` with its control characters escaped as Rust writes them (`\n`,
/// `\u{1b}`), so that one line stays one line and a terminal interprets
/// nothing in it.
pub fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return text.into();
    }
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_debug().to_string()
            } else {
                c.to_string()
            }
        })
        .collect::<String>()
        .into()
}

/// How `text`, from outside backoff (what a server said), is quoted in a
/// line: whole when it shows in at most `most` bytes, else the start that
/// does and how long it was, `… (1048576 bytes, cut)`. A control character
/// counts as long as its escape (`\u{1b}` is 6 bytes), so that the line
/// shows at most `most` bytes of it whatever it holds.
pub fn cut_quote(text: &str, most: usize) -> std::borrow::Cow<'_, str> {
    let shown = |c: char| {
        if c.is_control() {
            c.escape_debug().len()
        } else {
            c.len_utf8()
        }
    };
    let mut width = 0;
    for (at, c) in text.char_indices() {
        width += shown(c);
        if width > most {
            return format!("{}… ({} bytes, cut)", &text[..at], text.len()).into();
        }
    }
    text.into()
}

/// A number of bytes as a person reads it: `1 MiB`, `512 KiB`, `1.5 MiB`,
/// `300 bytes`.
pub fn bytes(n: u64) -> String {
    const UNITS: [(u32, &str); 3] = [(30, "GiB"), (20, "MiB"), (10, "KiB")];
    for (shift, unit) in UNITS {
        let size = 1u64 << shift;
        if n >= size {
            #[allow(clippy::cast_precision_loss)]
            let value = n as f64 / size as f64;
            let text = format!("{value:.1}");
            let text = text.strip_suffix(".0").unwrap_or(&text);
            return format!("{text} {unit}");
        }
    }
    if n == 1 {
        "1 byte".to_owned()
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_quote_is_cut_where_it_shows_its_limit() {
        assert_eq!(cut_quote("short", 5), "short");
        assert_eq!(cut_quote("longer", 5), "longe… (6 bytes, cut)");
        // Not inside a character.
        assert_eq!(cut_quote("ééé", 5), "éé… (6 bytes, cut)");
        // A control character takes the room of its escape.
        assert_eq!(cut_quote("a\u{1b}b", 7), "a\u{1b}… (3 bytes, cut)");
        assert_eq!(cut_quote("a\u{1b}b", 8), "a\u{1b}b");
        let long = "x\u{1b}".repeat(1 << 19);
        let cut = cut_quote(&long, 256);
        assert!(cut.ends_with("… (1048576 bytes, cut)"), "{cut}");
        assert!(escape_controls(&cut).len() <= 256 + "… (1048576 bytes, cut)".len());
    }

    #[test]
    fn local_times_carry_their_offset() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_796_144_602_783);
        assert_eq!(with_offset(t, 0), "2026-12-01T17:03:22.783+00:00");
        assert_eq!(with_offset(t, 3600), "2026-12-01T18:03:22.783+01:00");
        assert_eq!(
            with_offset(t, -(3 * 3600 + 1800)),
            "2026-12-01T13:33:22.783-03:30"
        );
        assert_eq!(with_offset(t, 20_700), "2026-12-01T22:48:22.783+05:45");
    }

    #[test]
    fn every_clock_value_has_a_time_and_the_calendar_is_exact() {
        let epoch = SystemTime::UNIX_EPOCH;
        let after = |ms| epoch + Duration::from_millis(ms);
        assert_eq!(utc_rfc3339(epoch), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            utc_rfc3339(after(1_796_144_602_783)),
            "2026-12-01T17:03:22.783Z"
        );
        // Just after the epoch, west of UTC: the evening before.
        assert_eq!(
            with_offset(after(1000), -5 * 3600),
            "1969-12-31T19:00:01.000-05:00"
        );
        // Before 1970, rounded down to the millisecond.
        let before = epoch - Duration::from_micros(1500);
        assert_eq!(utc_rfc3339(before), "1969-12-31T23:59:59.998Z");
        // Not times Windows' clock can hold (it starts in 1601).
        if let Some(year_0) = epoch.checked_sub(Duration::from_hours(17_268_672)) {
            assert_eq!(utc_rfc3339(year_0), "0000-01-01T00:00:00.000Z");
            assert_eq!(
                utc_rfc3339(year_0 - Duration::from_secs(1)),
                "-0001-12-31T23:59:59.000Z"
            );
        }
        assert_eq!(
            utc_rfc3339(after(951_782_400_000)),
            "2000-02-29T00:00:00.000Z"
        );
        assert_eq!(
            utc_rfc3339(after(253_402_300_799_999)),
            "9999-12-31T23:59:59.999Z"
        );
        assert_eq!(
            utc_rfc3339(after(253_402_300_800_000)),
            "+10000-01-01T00:00:00.000Z"
        );
        // The extremes a clock can hold.
        for t in [
            epoch.checked_add(Duration::from_millis(u64::MAX)),
            epoch.checked_add(Duration::from_secs(i64::MAX as u64)),
        ]
        .into_iter()
        .flatten()
        {
            assert!(utc_rfc3339(t).ends_with('Z'));
            let _ = local_rfc3339(t);
        }
    }

    proptest::proptest! {
        #[test]
        fn the_calendar_agrees_with_humantime_where_it_can_write(ms in 0u64..253_402_300_800_000) {
            let t = SystemTime::UNIX_EPOCH + Duration::from_millis(ms);
            proptest::prop_assert_eq!(
                utc_rfc3339(t),
                humantime::format_rfc3339_millis(t).to_string()
            );
        }
    }

    #[test]
    fn labels_come_in_order_time_then_name() {
        let name = Some("job".to_owned());
        let clock = Some((|| SystemTime::UNIX_EPOCH) as fn() -> SystemTime);
        assert_eq!(Labels::default().apply("x"), "x");
        assert_eq!(
            Labels {
                clock: None,
                name: name.clone()
            }
            .apply("x"),
            "job: x"
        );
        let both = Labels { clock, name }.apply("x");
        let (time, rest) = both.split_once(' ').unwrap();
        assert_eq!(rest, "job: x");
        assert_eq!(time, local_rfc3339(SystemTime::UNIX_EPOCH));
    }

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert_eq!(escape_controls("plain é"), "plain é");
        assert_eq!(
            escape_controls("a\nb\r\u{1b}[31mred\u{9b}"),
            "a\\nb\\r\\u{1b}[31mred\\u{9b}"
        );
    }
}
