//! Every line and file backoff writes about a run: the text lines and
//! GitHub annotations (`text`), the JSON events (`json`), the run report
//! (`run_report`), the Prometheus metrics (`metrics`), and the atomic writes
//! of those files (`atomic`). Nothing here decides what happens.

pub mod atomic;
pub mod json;
pub mod metrics;
pub mod run_report;
pub mod text;

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::sys::fd;

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
    /// "backoff: " lines for people.
    Text,
    /// One JSON object per event, one per line.
    Json,
    /// Text, with ::warning:: on each retry and ::error:: when giving up.
    Github,
}

/// Writes `backoff: MESSAGE` to stderr in one write, ignoring a closed
/// stderr. Control characters in it (from a value the user gave, say) are
/// escaped.
pub fn say(message: &str) {
    let line = format!("backoff: {}\n", escape_controls(message));
    let _ = Stderr.write_all(line.as_bytes());
}

/// How long one of backoff's own lines waits for room in a stderr pipe
/// whose reader does not keep up; after a line was dropped, the next ones
/// wait no more until one is taken again.
const STALL: Duration = Duration::from_secs(2);

/// backoff's stderr, for its own lines. When stderr is a pipe, a reader that
/// does not read never holds backoff up (its time limits, its signals, its
/// exit): a line stderr does not take within `STALL` is dropped, with an
/// error.
pub struct Stderr;

/// backoff's own description of its stderr, and whether its writes are
/// non-blocking.
fn own_stderr() -> Option<&'static (File, bool)> {
    static OWN: OnceLock<Option<(File, bool)>> = OnceLock::new();
    OWN.get_or_init(|| fd::destination(std::io::stderr().as_fd()).ok())
        .as_ref()
}

impl Write for Stderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        static STALLED: AtomicBool = AtomicBool::new(false);
        let Some((file, nonblocking)) = own_stderr() else {
            return Ok(());
        };
        let mut out = file;
        if !nonblocking {
            return out.write_all(buf);
        }
        let patience = if STALLED.load(Ordering::Relaxed) {
            Duration::ZERO
        } else {
            STALL
        };
        let deadline = Instant::now() + patience;
        let mut rest = buf;
        while !rest.is_empty() {
            match out.write(rest) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => rest = &rest[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if Instant::now() >= deadline || !fd::wait_writable(file.as_fd(), deadline) {
                        STALLED.store(true, Ordering::Relaxed);
                        return Err(io::ErrorKind::TimedOut.into());
                    }
                }
                Err(e) => return Err(e),
            }
        }
        STALLED.store(false, Ordering::Relaxed);
        Ok(())
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
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert_eq!(escape_controls("plain é"), "plain é");
        assert_eq!(
            escape_controls("a\nb\r\u{1b}[31mred\u{9b}"),
            "a\\nb\\r\\u{1b}[31mred\\u{9b}"
        );
    }
}
