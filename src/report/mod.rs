//! Every line and file backoff writes about a run: the text lines and
//! GitHub annotations (`text`), the CI runners' folds, step outputs and
//! tables (`ci`), the countdown on a terminal (`live`), the JSON events
//! (`json`), the run report
//! (`run_report`), the Prometheus metrics (`metrics`), and the atomic writes
//! of those files (`atomic`). Nothing here decides what happens.

pub mod atomic;
pub mod ci;
pub mod json;
pub mod live;
pub mod metrics;
pub mod run_report;
pub mod text;

use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

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

/// The labels of every line `say` writes, once the configuration is known.
static LABELS: OnceLock<Labels> = OnceLock::new();

/// Labels every line `say` writes from now on (the first call wins).
pub fn label_lines(labels: Labels) {
    let _ = LABELS.set(labels);
}

/// Writes `backoff: MESSAGE` to stderr in one write, ignoring a closed
/// stderr, with the time and the label of `label_lines`. Control characters
/// in it (from a value the user gave, say) are escaped.
pub fn say(message: &str) {
    let text = match LABELS.get() {
        Some(labels) => labels.apply(message),
        None => message.to_owned(),
    };
    let line = format!("backoff: {}\n", escape_controls(&text));
    let _ = Std::Err.write_all(line.as_bytes());
}

/// `t` as an RFC 3339 local time with milliseconds and the zone's offset:
/// `2026-12-01T17:03:22.783+01:00` (`+00:00` where the local time is UTC),
/// or the UTC time (`…Z`) when the system cannot tell the offset.
pub fn local_rfc3339(t: SystemTime) -> String {
    match localtime::utc_offset(t) {
        Some(offset) => with_offset(t, offset),
        None => humantime::format_rfc3339_millis(t).to_string(),
    }
}

/// `t` in the zone `offset` seconds east of UTC, as RFC 3339 with
/// milliseconds. An offset's seconds, which RFC 3339 cannot write, are
/// dropped from it, not from the time.
fn with_offset(t: SystemTime, offset: i64) -> String {
    let shift = Duration::from_secs(offset.unsigned_abs());
    let local = if offset >= 0 {
        t.checked_add(shift)
    } else {
        t.checked_sub(shift)
    };
    let Some(local) = local else {
        return humantime::format_rfc3339_millis(t).to_string();
    };
    let utc = humantime::format_rfc3339_millis(local).to_string();
    let minutes = offset.unsigned_abs() / 60;
    format!(
        "{}{}{:02}:{:02}",
        utc.trim_end_matches('Z'),
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
}

/// One of backoff's standard streams as a destination that does not wait
/// (`fd::Out`), made once; `None` while it cannot be made (no descriptor
/// left), and then the stream is written through as it is.
struct Stream {
    out: OnceLock<fd::Out>,
    stalled: AtomicBool,
}

impl Stream {
    const fn new() -> Stream {
        Stream {
            out: OnceLock::new(),
            stalled: AtomicBool::new(false),
        }
    }

    fn out(&self, of: BorrowedFd<'_>) -> Option<&fd::Out> {
        if let Some(out) = self.out.get() {
            return Some(out);
        }
        let out = fd::Out::new(of).ok()?;
        Some(self.out.get_or_init(|| out))
    }

    /// Writes all of `buf`, waiting at most `STALL` for a reader that does
    /// not keep up (none after a line was dropped).
    fn write_all(&self, std: &mut dyn Write, of: BorrowedFd<'_>, buf: &[u8]) -> io::Result<()> {
        let Some(out) = self.out(of) else {
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
                    if Instant::now() >= deadline || !fd::wait_writable(out.as_fd(), deadline) {
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

impl std::os::fd::AsRawFd for Std {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        match self {
            Std::Out => libc::STDOUT_FILENO,
            Std::Err => libc::STDERR_FILENO,
        }
    }
}

impl Write for Std {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Std::Out => STDOUT.write_all(&mut io::stdout(), io::stdout().as_fd(), buf),
            Std::Err => STDERR.write_all(&mut io::stderr(), io::stderr().as_fd(), buf),
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

#[cfg(test)]
mod tests {
    use super::*;

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
