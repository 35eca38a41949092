//! Every line and file backoff writes about a run: the text lines and
//! GitHub annotations (`text`), the JSON events (`json`), the run report
//! (`run_report`), the Prometheus metrics (`metrics`), and the atomic writes
//! of those files (`atomic`). Nothing here decides what happens.

pub mod atomic;
pub mod json;
pub mod metrics;
pub mod run_report;
pub mod text;

use std::io::Write;

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

/// Writes `backoff: MESSAGE` to stderr in one write, ignoring a closed stderr.
pub fn say(message: &str) {
    let line = format!("backoff: {message}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}
