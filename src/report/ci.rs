//! What backoff writes for CI runners after a run (the folds of the log
//! are in `fold`): the step's outputs and summary under GitHub Actions
//! (`$GITHUB_OUTPUT`, `$GITHUB_STEP_SUMMARY`), and the table of attempts at
//! the end of a GitLab CI job log. The formatting is pure; `append` is the
//! one place that touches a file, and it only ever appends to a regular
//! file.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::duration::human;
use crate::exit::Exit;
use crate::report::run_report::{AttemptRow, Recorder};
use crate::report::{Warnings, atomic, escape_controls};

/// The files of a GitHub Actions step that backoff appends to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepFiles {
    /// `$GITHUB_OUTPUT`: the step's outputs.
    pub output: Option<PathBuf>,
    /// `$GITHUB_STEP_SUMMARY`: the step's Markdown summary.
    pub summary: Option<PathBuf>,
}

impl StepFiles {
    /// The step's files, from the environment `var` reads, when backoff
    /// runs under GitHub Actions (`GITHUB_ACTIONS=true`); empty variables
    /// name none.
    pub fn from_env(var: impl Fn(&str) -> Option<OsString>) -> Option<StepFiles> {
        if var("GITHUB_ACTIONS").is_none_or(|v| v != "true") {
            return None;
        }
        let path = |name| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        Some(StepFiles {
            output: path("GITHUB_OUTPUT"),
            summary: path("GITHUB_STEP_SUMMARY"),
        })
    }

    /// Appends the run's outputs and its summary. A file that cannot be
    /// written is told to `warnings`, and nothing else changes.
    /// `delimiter` ends each output's value (see `outputs`).
    pub fn write(&self, recorder: &Recorder, exit: Exit, delimiter: &str, warnings: &Warnings) {
        if let Some(path) = &self.output {
            let ours = outputs(recorder, exit, delimiter);
            let written = atomic::append_after(path, |file| {
                let mut previous = OutputFile::default();
                std::io::copy(file, &mut previous)?;
                let mut text = previous.reopened();
                text.extend_from_slice(ours.as_bytes());
                Ok(text)
            });
            if let Err(e) = written {
                cannot_write("GITHUB_OUTPUT", path, &e, warnings);
            }
        }
        if let Some(path) = &self.summary {
            let rows = SummaryRows::of(recorder.rows());
            let doc = summary(recorder.name(), recorder.ending(), &rows, recorder.reason());
            append("GITHUB_STEP_SUMMARY", path, &doc, warnings);
        }
    }
}

/// A delimiter for the values of `$GITHUB_OUTPUT` that no value and no
/// line the command wrote holds, made of the random `bits`.
pub fn delimiter(bits: [u64; 2]) -> String {
    format!("ghadelimiter_{:016x}{:016x}", bits[0], bits[1])
}

/// The longest line of `$GITHUB_OUTPUT` kept while the file is read: a
/// `NAME<<DELIMITER` line is known by its start, and a delimiter is short.
const OUTPUT_LINE_MAX: usize = 64 << 10;

/// `$GITHUB_OUTPUT` as the runner reads it, fed a piece at a time (it is
/// written to), in bounded memory: line by line, split at `\n` alone (on
/// Linux and macOS the runner keeps a `\r` in the line), empty lines
/// skipped, `NAME=VALUE` when `=` comes before any `<<`, else
/// `NAME<<DELIMITER` and the value's lines up to one that is `DELIMITER`;
/// any other line fails the whole file.
#[derive(Debug, Default)]
struct OutputFile {
    /// The line being read, up to `OUTPUT_LINE_MAX` bytes of it.
    line: Vec<u8>,
    /// The line being read is longer than what is kept of it.
    long: bool,
    /// The delimiter of the `NAME<<DELIMITER` value being read.
    open: Option<Vec<u8>>,
    /// A `NAME<<DELIMITER` line longer than `OUTPUT_LINE_MAX`: where its
    /// value ends is not known (nor is anything after it).
    lost: bool,
}

/// What a line of `$GITHUB_OUTPUT` is, outside a value.
#[derive(Debug, PartialEq, Eq)]
enum OutputLine<'a> {
    Empty,
    Value,
    Opens(&'a [u8]),
    Invalid,
}

fn output_line(line: &[u8]) -> OutputLine<'_> {
    if line.is_empty() {
        return OutputLine::Empty;
    }
    let equals = find(line, b"=");
    match find(line, b"<<") {
        Some(h) if equals.is_none_or(|e| h < e) => {
            if h > 0 && h + 2 < line.len() {
                OutputLine::Opens(&line[h + 2..])
            } else {
                OutputLine::Invalid
            }
        }
        _ if equals.is_some() => OutputLine::Value,
        _ => OutputLine::Invalid,
    }
}

impl std::io::Write for OutputFile {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        for piece in data.split_inclusive(|&b| b == b'\n') {
            let (text, ended) = match piece.strip_suffix(b"\n") {
                Some(text) => (text, true),
                None => (piece, false),
            };
            let room = OUTPUT_LINE_MAX - self.line.len();
            self.long |= text.len() > room;
            self.line.extend_from_slice(&text[..text.len().min(room)]);
            if ended {
                let line = std::mem::take(&mut self.line);
                let long = std::mem::replace(&mut self.long, false);
                self.read(&line, long);
            }
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl OutputFile {
    /// Reads one line (`long`: only its start was kept).
    fn read(&mut self, line: &[u8], long: bool) {
        if self.lost {
            return;
        }
        if let Some(delimiter) = &self.open {
            if !long && line == delimiter.as_slice() {
                self.open = None;
            }
            return;
        }
        match output_line(line) {
            OutputLine::Opens(_) | OutputLine::Invalid if long => self.lost = true,
            OutputLine::Opens(delimiter) => self.open = Some(delimiter.to_vec()),
            _ => {}
        }
    }

    /// What the file needs after what it holds for backoff's outputs to be
    /// read as backoff wrote them, whatever an attempt killed while writing
    /// it left: `=` after a name left without one (an empty value, not a
    /// line that fails the file), a newline after a line left unfinished,
    /// and the delimiter of a `NAME<<DELIMITER` value left open.
    fn reopened(mut self) -> Vec<u8> {
        let mut text = Vec::new();
        if !self.line.is_empty() || self.long {
            let mut line = std::mem::take(&mut self.line);
            let long = self.long;
            if self.open.is_none()
                && !self.lost
                && !long
                && output_line(&line) == OutputLine::Invalid
            {
                line.push(b'=');
                text.push(b'=');
            }
            self.read(&line, long);
            text.push(b'\n');
        }
        if let Some(delimiter) = self.open.filter(|_| !self.lost) {
            text.extend_from_slice(&delimiter);
            text.push(b'\n');
        }
        text
    }
}

/// Where `needle` first starts in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The step's outcome in GitHub's own words: `success`, `failure`, or
/// `cancelled` when a signal interrupted the run, `skipped` when the
/// circuit breaker or the lock did not let the command run.
fn outcome(recorder: &Recorder, exit: Exit) -> &'static str {
    if recorder.reason() == "interrupted" {
        "cancelled"
    } else if recorder.reason().starts_with("breaker_")
        || ["locked", "done", "running", "once_unavailable"].contains(&recorder.reason())
    {
        "skipped"
    } else if exit == Exit::SUCCESS {
        "success"
    } else {
        "failure"
    }
}

/// The step's outputs, each as `key<<DELIMITER`, its value, and
/// `DELIMITER`: a form that a line left unfinished before cannot run into.
fn outputs(recorder: &Recorder, exit: Exit, delimiter: &str) -> String {
    let mut text = String::new();
    for (key, value) in [
        ("attempts", recorder.attempts().to_string()),
        ("retries", recorder.retry_count().to_string()),
        ("exit_code", exit.shell_code().to_string()),
        ("outcome", outcome(recorder, exit).to_owned()),
        ("reason", recorder.reason().to_owned()),
    ]
    .into_iter()
    // With --throttle only.
    .chain(
        recorder
            .throttled()
            .map(|t| ("throttled", t.skipped.to_string())),
    ) {
        let _ = write!(text, "{key}<<{delimiter}\n{value}\n{delimiter}\n");
    }
    text
}

/// A duration as backoff's lines write it, or `–` where there is none.
fn or_dash(d: Option<Duration>) -> String {
    d.map_or_else(|| "–".to_owned(), human)
}

/// A Markdown table cell: `|` escaped, control characters too, so that
/// the cell stays one cell on one line.
fn cell(s: &str) -> String {
    escape_controls(s).replace('|', "\\|")
}

/// `s` as literal Markdown text inside a line (a heading's, or one that
/// starts with a word): control characters escaped, and every character
/// Markdown or HTML could read as markup there behind a backslash.
fn markdown_text(s: &str) -> String {
    escape_controls(s)
        .chars()
        .flat_map(|c| {
            let markup = "\\`*_[]<>|~&!".contains(c);
            markup.then_some('\\').into_iter().chain([c])
        })
        .collect()
}

/// How many of the first attempts, and of the last, the step summary
/// shows: with the line that tells how many were left out between them,
/// the summary stays under `SUMMARY_MAX` (GitHub takes up to 1 MiB).
const SUMMARY_HEAD: usize = 100;
const SUMMARY_TAIL: usize = 100;

/// The most the step summary holds (a row is under 100 bytes; the name and
/// the ending are cut at `SUMMARY_TEXT` characters each).
pub const SUMMARY_MAX: usize = 64 << 10;

/// The most characters of the name, or of the ending, the summary shows.
const SUMMARY_TEXT: usize = 1000;

/// The rows the step summary and the GitLab table show: the first and the
/// last attempts, and how many were left out between them; only those are
/// kept, however many attempts there were. The rows given may already
/// leave attempts out (the run's recorder keeps the first and last ones):
/// what is left out is told by the attempts' numbers.
#[derive(Debug, Default)]
struct SummaryRows {
    head: Vec<AttemptRow>,
    tail: std::collections::VecDeque<AttemptRow>,
    left_out: u64,
}

impl SummaryRows {
    fn of(rows: impl Iterator<Item = AttemptRow>) -> SummaryRows {
        let mut kept = SummaryRows::default();
        for row in rows {
            if kept.head.len() < SUMMARY_HEAD {
                kept.head.push(row);
                continue;
            }
            if kept.tail.len() == SUMMARY_TAIL {
                kept.tail.pop_front();
            }
            kept.tail.push_back(row);
        }
        if let (Some(last), Some(next)) = (kept.head.last(), kept.tail.front()) {
            kept.left_out = next.number.saturating_sub(last.number).saturating_sub(1);
        }
        kept
    }

    /// Each row shown, after the count of attempts left out just before it
    /// (0 for none).
    fn shown(&self) -> impl Iterator<Item = (u64, &AttemptRow)> {
        let gap = |i: usize| if i == 0 { self.left_out } else { 0 };
        let tail = self.tail.iter().enumerate().map(move |(i, r)| (gap(i), r));
        self.head.iter().map(|r| (0, r)).chain(tail)
    }
}

/// `s` cut to `SUMMARY_TEXT` characters, with `…` where it was cut.
fn shortened(s: &str) -> std::borrow::Cow<'_, str> {
    match s.char_indices().nth(SUMMARY_TEXT) {
        Some((at, _)) => format!("{}…", &s[..at]).into(),
        None => s.into(),
    }
}

/// Why a run made no attempt, from the run report's `reason`.
fn not_run(reason: &str) -> &'static str {
    match reason {
        "breaker_open" => "the circuit breaker is open",
        "breaker_unavailable" => "the circuit breaker's store could not be used",
        "locked" => "another run holds the lock",
        "lock_unavailable" => "the lock's store could not be used",
        "done" => "the period's run is done (--once-per)",
        "running" => "the job runs in another run (--once-per)",
        "once_unavailable" => "the once-per record's store could not be used",
        "deadline" => "--max-time passed before the first attempt",
        "interrupted" => "a signal came before the first attempt",
        _ => "no attempt started",
    }
}

/// The step summary: a heading naming the command, how the run ended, and
/// a table of its attempts (the first and the last, with a row that says
/// how many were left out between them); a run that made none (`reason`
/// tells why) says it was not run, and has no table.
fn summary(name: &str, ending: Option<&str>, rows: &SummaryRows, reason: &str) -> String {
    let mut doc = format!("### backoff: {}\n\n", markdown_text(&shortened(name)));
    if let Some(ending) = ending {
        let _ = write!(doc, "{}\n\n", markdown_text(&shortened(ending)));
    }
    if rows.head.is_empty() {
        let _ = write!(doc, "Not run: {}.\n\n", markdown_text(not_run(reason)));
        return doc;
    }
    doc.push_str("| Attempt | Outcome | Duration | Delay after |\n| ---: | --- | ---: | ---: |\n");
    let row = |doc: &mut String, r: &AttemptRow| {
        let _ = writeln!(
            doc,
            "| {} | {} | {} | {} |",
            r.number,
            cell(&shortened(&r.outcome)),
            or_dash(r.duration),
            or_dash(r.delay_after)
        );
    };
    for (left_out, r) in rows.shown() {
        if left_out > 0 {
            let _ = writeln!(doc, "| … | {left_out} attempts left out | | |");
        }
        row(&mut doc, r);
    }
    doc.push('\n');
    doc
}

/// The table of attempts at the end of a GitLab CI job log: aligned
/// columns, each line starting `backoff: `; the first and last attempts,
/// with a row that says how many were left out between them. Nothing for
/// a run that made no attempt (its last line says why).
pub fn gitlab_table(rows: impl Iterator<Item = AttemptRow>) -> String {
    let rows = SummaryRows::of(rows);
    if rows.head.is_empty() {
        return String::new();
    }
    let mut table: Vec<[String; 4]> = vec![[
        "attempt".to_owned(),
        "outcome".to_owned(),
        "duration".to_owned(),
        "delay after".to_owned(),
    ]];
    for (left_out, r) in rows.shown() {
        if left_out > 0 {
            table.push([
                "…".to_owned(),
                format!("{left_out} attempts left out"),
                String::new(),
                String::new(),
            ]);
        }
        table.push([
            r.number.to_string(),
            escape_controls(&r.outcome).into_owned(),
            or_dash(r.duration),
            or_dash(r.delay_after),
        ]);
    }
    let mut widths = [0; 4];
    for row in &table {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for row in &table {
        let mut line = String::from("backoff: ");
        for (i, (w, c)) in widths.iter().zip(row).enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            let _ = write!(line, "{c}{}", " ".repeat(w - c.chars().count()));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Appends `text` to the file at `path` (named by the variable `var`) in
/// one write, creating it if need be, and says on one line why not when
/// it cannot.
fn append(var: &str, path: &Path, text: &str, warnings: &Warnings) {
    if let Err(e) = atomic::append(path, text.as_bytes()) {
        cannot_write(var, path, &e, warnings);
    }
}

/// Says on one line that the file at `path`, named by `var`, was not
/// written, and why.
fn cannot_write(var: &str, path: &Path, e: &std::io::Error, warnings: &Warnings) {
    warnings.warn(&format!("cannot write ${var} '{}': {e}", path.display()));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<AttemptRow> {
        vec![
            AttemptRow {
                number: 1,
                outcome: "exit 1".to_owned(),
                duration: Some(Duration::from_millis(12)),
                delay_after: Some(Duration::from_millis(312)),
            },
            AttemptRow {
                number: 2,
                outcome: "a|b\n".to_owned(),
                duration: None,
                delay_after: None,
            },
        ]
    }

    #[test]
    fn the_summary_heading_shows_a_name_as_it_is() {
        let doc = summary(
            "a|b *x* <b>hi</b> [l](u) `c`",
            None,
            &SummaryRows::default(),
            "breaker_open",
        );
        assert!(
            doc.starts_with("### backoff: a\\|b \\*x\\* \\<b\\>hi\\</b\\> \\[l\\](u) \\`c\\`\n"),
            "{doc}"
        );
    }

    #[test]
    fn the_summary_has_a_heading_the_ending_and_a_row_per_attempt() {
        let doc = summary(
            "job",
            Some("giving up after 2 attempts in 1.20s: exit 1"),
            &SummaryRows::of(rows().into_iter()),
            "exhausted",
        );
        assert_eq!(
            doc,
            "### backoff: job\n\n\
             giving up after 2 attempts in 1.20s: exit 1\n\n\
             | Attempt | Outcome | Duration | Delay after |\n\
             | ---: | --- | ---: | ---: |\n\
             | 1 | exit 1 | 12ms | 312ms |\n\
             | 2 | a\\|b\\n | – | – |\n\n"
        );
    }

    #[test]
    fn a_run_that_made_no_attempt_says_why_without_a_table() {
        let doc = summary(
            "job",
            Some("circuit 'k' is open; not running the command"),
            &SummaryRows::default(),
            "breaker_open",
        );
        assert_eq!(
            doc,
            "### backoff: job\n\n\
             circuit 'k' is open; not running the command\n\n\
             Not run: the circuit breaker is open.\n\n"
        );
        let doc = summary("job", None, &SummaryRows::default(), "deadline");
        assert_eq!(
            doc,
            "### backoff: job\n\nNot run: --max-time passed before the first attempt.\n\n"
        );
        assert_eq!(gitlab_table(std::iter::empty()), "");
    }

    #[test]
    fn a_long_run_s_summary_keeps_the_first_and_last_rows_under_its_cap() {
        let many = (1..=50_000).map(|number| AttemptRow {
            number,
            outcome: "signal TERM, condition not met".to_owned(),
            duration: Some(Duration::from_millis(1234)),
            delay_after: Some(Duration::from_secs(86_399)),
        });
        let rows = SummaryRows::of(many);
        assert_eq!(rows.head.len() + rows.tail.len(), 200);
        let long = "n".repeat(100_000);
        let doc = summary(&long, Some(&long), &rows, "exhausted");
        assert!(doc.len() < SUMMARY_MAX, "{}", doc.len());
        assert!(doc.contains("\n| 100 | signal TERM"), "{doc}");
        assert!(doc.contains("\n| … | 49800 attempts left out | | |\n| 49901 | "));
        assert!(doc.contains("\n| 50000 | "));
    }

    #[test]
    fn attempts_the_recorder_left_out_are_counted_by_their_numbers() {
        let row = |number| AttemptRow {
            number,
            outcome: "exit 1".to_owned(),
            duration: None,
            delay_after: None,
        };
        let rows = SummaryRows::of((1..=100).chain(151..=250).map(row));
        assert_eq!(rows.left_out, 50);
        let gaps: Vec<u64> = rows
            .shown()
            .map(|(gap, _)| gap)
            .filter(|&g| g > 0)
            .collect();
        assert_eq!(gaps, [50]);
        assert_eq!(SummaryRows::of((1..=3).map(row)).left_out, 0);
        let table = gitlab_table((1..=100).chain(151..=250).map(row));
        assert!(
            table.contains("\nbackoff: …        50 attempts left out\nbackoff: 151 "),
            "{table}"
        );
    }

    /// What `reopened` adds after `previous`, fed in pieces of `piece` bytes.
    fn reopened_after(previous: &[u8], piece: usize) -> Vec<u8> {
        let mut file = OutputFile::default();
        for chunk in previous.chunks(piece.max(1)) {
            std::io::Write::write_all(&mut file, chunk).unwrap();
        }
        file.reopened()
    }

    #[test]
    fn what_github_output_needs_before_backoff_s_outputs() {
        let cases: [(&str, &str); 17] = [
            ("", ""),
            ("a=1\n", ""),
            ("a=1", "\n"),
            ("a<<EOF\nx\nEOF\n", ""),
            ("a<<EOF\nx\nEOF", "\n"),
            ("a<<EOF\nx\n", "EOF\n"),
            // The runner on Linux and macOS keeps the `\r`.
            ("a<<EOF\r\nx", "\nEOF\r\n"),
            ("a<<EOF\r\nx\nEOF\n", "EOF\r\n"),
            ("a=1\r", "\n"),
            ("a<<E", "\nE\n"),
            // `=` first: a plain value, whatever follows.
            ("a=b<<EOF\n", ""),
            ("a<<X=Y\n", "X=Y\n"),
            ("b<<EOF\n\nc<<D\n", "EOF\n"),
            // A name left without `=` gets an empty value.
            ("a", "=\n"),
            ("a<", "=\n"),
            ("a<<", "=\n=\n"),
            ("x=1\nab", "=\n"),
        ];
        for (previous, want) in cases {
            for piece in [1, 2, 3, 1000] {
                let got = reopened_after(previous.as_bytes(), piece);
                assert_eq!(
                    String::from_utf8_lossy(&got),
                    want,
                    "{previous:?} by {piece}"
                );
            }
        }
    }

    #[test]
    fn a_large_github_output_is_read_whole_in_bounded_memory() {
        let mut previous = b"a<<EOF\n".to_vec();
        for _ in 0..40_000 {
            previous.extend_from_slice(&[b'x'; 100]);
            previous.push(b'\n');
        }
        previous.extend_from_slice(&vec![b'y'; 3 * OUTPUT_LINE_MAX]);
        assert_eq!(reopened_after(&previous, 8192), b"\nEOF\n");
        // A delimiter longer than what is kept of a line: where the value
        // ends is not known, and nothing is guessed.
        let mut long = b"a<<".to_vec();
        long.extend_from_slice(&vec![b'D'; 2 * OUTPUT_LINE_MAX]);
        long.extend_from_slice(b"\nvalue");
        assert_eq!(reopened_after(&long, 8192), b"\n");
        let mut file = OutputFile::default();
        std::io::Write::write_all(&mut file, &previous).unwrap();
        assert!(file.line.capacity() <= 2 * OUTPUT_LINE_MAX);
    }

    #[test]
    fn the_gitlab_table_is_aligned() {
        assert_eq!(
            gitlab_table(rows().into_iter()),
            "backoff: attempt  outcome  duration  delay after\n\
             backoff: 1        exit 1   12ms      312ms\n\
             backoff: 2        a|b\\n    –         –\n"
        );
    }

    #[test]
    fn step_files_only_under_github_actions_and_only_when_named() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        assert_eq!(StepFiles::from_env(env(&[("GITHUB_OUTPUT", "/o")])), None);
        assert_eq!(
            StepFiles::from_env(env(&[
                ("GITHUB_ACTIONS", "true"),
                ("GITHUB_OUTPUT", "/o"),
                ("GITHUB_STEP_SUMMARY", "")
            ])),
            Some(StepFiles {
                output: Some(PathBuf::from("/o")),
                summary: None
            })
        );
    }
}
