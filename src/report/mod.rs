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

/// Writes `backoff: MESSAGE` to stderr in one write, ignoring a closed
/// stderr. Control characters in it (from a value the user gave, say) are
/// escaped.
pub fn say(message: &str) {
    let line = format!("backoff: {}\n", escape_controls(message));
    let _ = std::io::stderr().write_all(line.as_bytes());
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
