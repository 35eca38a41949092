//! What an attempt printed, as far as classification cares: output rules
//! (`--retry-if-output`, `--stop-if-output`), a server's hints
//! (`Retry-After`, rate limits) in the last response's headers, and the
//! HTTP status curl reported. Pure: bytes in, observations out; the
//! copying itself happens in `copy`.

use std::time::{Duration, SystemTime};

use regex::bytes::{Regex, RegexSet, RegexSetBuilder};

use crate::classify::{Hint, HintSource, Observed, Preset, Reset};
use crate::duration::MAX_DURATION;

/// Lines up to this long (with their newline) are matched whole. A longer
/// one is matched in windows of this size, so that one endless line cannot
/// grow backoff's memory; consecutive windows share `OVERLAP` bytes.
pub const MAX_LINE: usize = 1024 * 1024;

/// How much consecutive windows of a long line share: a match of up to
/// this many bytes is found wherever it lies in the line.
pub const OVERLAP: usize = 64 * 1024;

/// Where each window of a long line starts, after the previous one.
const STEP: usize = MAX_LINE - OVERLAP;

/// The `Retry-After:` header line, as curl prints it with `-i` or `-D`.
const RETRY_AFTER_HEADER: &str = r"(?i)^\s*(?:<\s*)?retry-after:\s*([^\r\n]*?)\s*$";
/// `X-RateLimit-Reset:` or `RateLimit-Reset:`, seconds or a Unix time.
const RATE_RESET_HEADER: &str = r"(?i)^\s*(?:<\s*)?(?:x-)?ratelimit-reset:\s*([0-9]+)\s*$";
/// `X-RateLimit-Remaining:` or `RateLimit-Remaining:`.
const RATE_REMAINING_HEADER: &str = r"(?i)^\s*(?:<\s*)?(?:x-)?ratelimit-remaining:\s*([0-9]+)\s*$";
/// The `RateLimit:` field: a list of policies (`"a";r=0;t=30, "b";r=5;t=60`),
/// or an earlier draft's dictionary (`limit=10, remaining=0, reset=30`).
const RATE_FIELD: &str = r"(?i)^\s*(?:<\s*)?ratelimit:\s*(.*?)\s*$";
/// curl's `--fail` message (`… returned error: 503`), or wget's error line
/// (`2026-12-01 15:03:26 ERROR 503: Service Unavailable.`).
const CURL_FAIL_LINE: &str = r"returned error: ([0-9]{3})|ERROR ([0-9]{3}): ";
/// An HTTP status line: `HTTP/1.1 503 Service Unavailable`, `HTTP/2 429`,
/// curl's `< HTTP/2 429` with `-v`, wget's `  HTTP/1.1 503` with `-S`.
const HTTP_STATUS_LINE: &str = r"^\s*(?:<\s*)?HTTP/[0-9.]+ ([0-9]{3})\b";

/// git's words for failures that may heal: the network, the server, a
/// connection cut short.
const GIT_TRANSIENT: &str = r"(?i)could not resolve host|connection refused|connection timed out|timed out|rpc failed|early eof|the remote end hung up unexpectedly|connection reset|unable to access .*: (?:recv|send) failure|temporary failure in name resolution|could not read from remote repository";

/// git's words for failures that do not heal: no such repository, no
/// access, a conflict.
const GIT_PERMANENT: &str = r"(?i)repository .* not found|repository not exported|does not appear to be a git repository|authentication failed|permission denied|conflict \(|automatic merge failed|not a git repository|could not find remote branch|couldn't find remote ref";

/// A value kept longer than this (a `Retry-After`, a reset) is no value:
/// none that means something is anywhere near as long, and one line of
/// output can be a MiB.
const MAX_VALUE: usize = 256;

/// Where header lines in the command's output count as a response's
/// headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Headers {
    /// Any line (`--retry-after` without a preset: the command may print a
    /// header line of its own).
    Anywhere,
    /// Only in a response's head: from its status line (`HTTP/1.1 503`) to
    /// the empty line after it, so that a body's lines are not read as
    /// headers (curl's `-i` and `-v`, wget's `-S`).
    InHeads,
    /// As `InHeads`, on this stream (`"stdout"`, `"stderr"`) alone: on the
    /// other, curl writes only the body or only its own messages.
    InHeadsOn(&'static str),
    /// Nowhere: the preset has the headers written to a file of its own
    /// and reads them there.
    Elsewhere,
}

impl Headers {
    /// Where heads count when they are on curl's `[stdout, stderr]`.
    pub fn on_streams(streams: [bool; 2]) -> Headers {
        match streams {
            [true, true] => Headers::InHeads,
            [true, false] => Headers::InHeadsOn("stdout"),
            [false, true] => Headers::InHeadsOn("stderr"),
            [false, false] => Headers::Elsewhere,
        }
    }
}

/// The most the patterns searched together over a block of lines may take
/// compiled (the output patterns and the built-in ones): more, and each line
/// is matched on its own.
const SET_MAX: usize = 2 << 20;

/// Matches the headers curl dumped for the last attempt into `file`, as
/// if it had printed them: all of them, read a chunk at a time (curl
/// allows a response 300 KB of headers, and follows redirects), of which
/// only what the last response says is kept. The file is emptied for the
/// next attempt.
pub fn headers_file(file: &tempfile::NamedTempFile, rules: &OutputRules, seen: &mut Observed) {
    let mut scanner = LineScanner::headers_file();
    if let Ok(mut f) = file.reopen() {
        let mut chunk = vec![0; 64 * 1024];
        loop {
            match std::io::Read::read(&mut f, &mut chunk) {
                Ok(0) => break,
                Ok(n) => scanner.feed(rules, &chunk[..n], seen),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    }
    scanner.finish(rules, seen);
    let _ = file.as_file().set_len(0);
}

/// The patterns that classify attempts by what they print.
#[derive(Debug, Clone)]
pub struct OutputRules {
    retry: Vec<Regex>,
    stop: Vec<Regex>,
    /// `--until-output`: a line matching one of them meets the condition.
    until: Vec<Regex>,
    retry_after: Option<Regex>,
    /// Whether `retry_after` is a pattern of the user's.
    retry_after_pattern: bool,
    /// With `retry_after`: rate-limit fields, whose reset is a hint when no
    /// request is left (or, on a 429 or 503, when they do not say).
    rate_limits: Option<[Regex; 3]>,
    http_status: bool,
    /// Where header lines in the output count.
    headers: Headers,
    /// `--preset git`: its words for failures that heal, and for those that
    /// do not.
    git_lines: Option<[Regex; 2]>,
    /// Every pattern at once, over many lines, to skip blocks with no match
    /// (`None` when a pattern's anchors make that unsafe).
    any: Option<RegexSet>,
    /// Compiled once: curl's `--fail` line and HTTP status lines.
    fail_line: Regex,
    status_line: Regex,
}

/// The regex behind `--retry-after` without a pattern of its own.
///
/// # Panics
///
/// Never: the pattern is a constant that compiles.
pub fn retry_after_header() -> Regex {
    Regex::new(RETRY_AFTER_HEADER).expect("a valid built-in regex")
}

impl OutputRules {
    /// Rules from `--retry-if-output`, `--stop-if-output`, `--until-output`, the `Retry-After`
    /// pattern (`None` without `--retry-after`), and whether to read HTTP
    /// status codes (the curl preset). `Ok(None)` when nothing needs to see
    /// the output.
    ///
    /// # Panics
    ///
    /// Never: the built-in patterns are constants that compile.
    pub fn new(
        retry: Vec<Regex>,
        stop: Vec<Regex>,
        until: Vec<Regex>,
        retry_after: Option<Regex>,
        preset: Option<Preset>,
    ) -> Option<OutputRules> {
        let http_status = preset.is_some();
        if retry.is_empty()
            && stop.is_empty()
            && until.is_empty()
            && retry_after.is_none()
            && !http_status
        {
            return None;
        }
        let fail_line = Regex::new(CURL_FAIL_LINE).expect("a valid built-in regex");
        let status_line = Regex::new(HTTP_STATUS_LINE).expect("a valid built-in regex");
        let mut patterns: Vec<&str> = retry
            .iter()
            .chain(&stop)
            .chain(&until)
            .map(Regex::as_str)
            .collect();
        if let Some(r) = &retry_after {
            patterns.push(r.as_str());
            patterns.extend([RATE_RESET_HEADER, RATE_REMAINING_HEADER, RATE_FIELD]);
        }
        let retry_after_pattern = retry_after
            .as_ref()
            .is_some_and(|r| r.as_str() != RETRY_AFTER_HEADER);
        let rate_limits = retry_after.as_ref().map(|_| {
            [RATE_RESET_HEADER, RATE_REMAINING_HEADER, RATE_FIELD]
                .map(|p| Regex::new(p).expect("a valid built-in regex"))
        });
        if http_status {
            patterns.push(CURL_FAIL_LINE);
        }
        // A status line starts a new response: its hints replace the last.
        if http_status || retry_after.is_some() {
            patterns.push(HTTP_STATUS_LINE);
        }
        let git = preset == Some(Preset::Git);
        if git {
            patterns.extend([GIT_TRANSIENT, GIT_PERMANENT]);
        }
        let git_lines = git.then(|| {
            [GIT_TRANSIENT, GIT_PERMANENT].map(|p| Regex::new(p).expect("a valid built-in regex"))
        });
        // The block search must find every block in which some line would
        // match on its own. Multi-line mode makes ^ and $ match at each line
        // (CRLF mode before a \r\n too, as lines are matched without their
        // \r), but \A, \z and turning multi-line mode off would anchor to
        // the block: with such a pattern every line is matched on its own.
        // So is every line when the patterns are large: the set would hold
        // them all a second time, and its compilation stops at its limit.
        let anchored = patterns
            .iter()
            .any(|p| p.contains(r"\A") || p.contains(r"\z") || turns_multi_line_off(p));
        let any = if anchored {
            None
        } else {
            RegexSetBuilder::new(&patterns)
                .multi_line(true)
                .crlf(true)
                .size_limit(SET_MAX)
                .build()
                .ok()
        };
        Some(OutputRules {
            retry,
            stop,
            until,
            retry_after,
            retry_after_pattern,
            rate_limits,
            http_status,
            headers: if preset.is_some() {
                Headers::InHeads
            } else {
                Headers::Anywhere
            },
            git_lines,
            any,
            fail_line,
            status_line,
        })
    }
}

impl OutputRules {
    /// These rules, reading header lines of the command's output only as
    /// `headers` says.
    #[must_use]
    pub fn with_headers(self, headers: Headers) -> OutputRules {
        OutputRules { headers, ..self }
    }

    /// Whether status lines and header lines are read at all.
    fn reads_heads(&self) -> bool {
        self.http_status || self.retry_after.is_some()
    }
}

/// Whether a pattern turns multi-line mode off with a flag group, as in
/// `(?-m)` or `(?s-m:...)`.
fn turns_multi_line_off(pattern: &str) -> bool {
    pattern.match_indices("(?").any(|(i, _)| {
        let flags = pattern[i + 2..]
            .split([')', ':'])
            .next()
            .unwrap_or_default();
        flags
            .split_once('-')
            .is_some_and(|(_, off)| off.contains('m'))
    })
}

/// Splits one stream into lines and matches them, however the bytes arrive.
#[derive(Debug, Default)]
pub struct LineScanner {
    /// The line begun, from the window being filled on; after its first
    /// window, with the byte before that window in front.
    partial: Vec<u8>,
    /// How many bytes at the front of `partial` are that context (0 or 1).
    context: usize,
    /// Where the stream is in the responses it shows.
    head: Head,
}

/// Where a stream is in the responses it shows.
#[derive(Debug, Default, Clone, Copy)]
struct Head {
    /// The stream is a file of headers alone: they count in every
    /// response's head, whatever the rules say of the output.
    file: bool,
    /// Between a status line and the empty line that ends the head.
    open: bool,
    /// The command's stream scanned (`"stdout"`, `"stderr"`, or `"output"`
    /// when one pipe carries both); empty when not told.
    stream: &'static str,
}

impl Head {
    /// Where header lines count on this stream.
    fn headers(self, rules: &OutputRules) -> Headers {
        match rules.headers {
            _ if self.file => Headers::InHeads,
            // One pipe carrying both streams (a terminal, `2>&1`) is named
            // "output": the heads are on it, whichever stream wrote them.
            Headers::InHeadsOn(stream)
                if self.stream.is_empty() || self.stream == "output" || stream == self.stream =>
            {
                Headers::InHeads
            }
            Headers::InHeadsOn(_) => Headers::Elsewhere,
            headers => headers,
        }
    }

    /// Whether a header line here is one of a response's headers.
    fn counts(self, rules: &OutputRules) -> bool {
        match self.headers(rules) {
            Headers::Anywhere => true,
            Headers::InHeads => self.open,
            Headers::InHeadsOn(_) | Headers::Elsewhere => false,
        }
    }
}

impl LineScanner {
    /// A scanner of a file that holds response headers alone (what curl's
    /// `--dump-header` writes).
    pub fn headers_file() -> LineScanner {
        LineScanner {
            head: Head {
                file: true,
                ..Head::default()
            },
            ..LineScanner::default()
        }
    }

    /// A scanner of the command's `stream` (`"stdout"`, `"stderr"`).
    pub fn of_stream(stream: &'static str) -> LineScanner {
        LineScanner {
            head: Head {
                stream,
                ..Head::default()
            },
            ..LineScanner::default()
        }
    }

    /// Feeds bytes as they were read.
    pub fn feed(&mut self, rules: &OutputRules, chunk: &[u8], seen: &mut Observed) {
        let Some(last) = memchr::memrchr(b'\n', chunk) else {
            self.push_partial(rules, chunk, seen);
            return;
        };
        let (mut complete, rest) = chunk.split_at(last + 1);
        if !self.partial.is_empty() {
            // The first line of this chunk ends the line begun before.
            let first = memchr::memchr(b'\n', complete).unwrap_or(last);
            let (head, tail) = complete.split_at(first + 1);
            self.push_partial(rules, head, seen);
            self.scan_partial(rules, seen);
            complete = tail;
        }
        if !complete.is_empty() {
            scan_block(rules, complete, seen, &mut self.head);
        }
        self.push_partial(rules, rest, seen);
    }

    /// Matches what is left: a last line without a newline.
    pub fn finish(&mut self, rules: &OutputRules, seen: &mut Observed) {
        if !self.partial.is_empty() {
            self.scan_partial(rules, seen);
        }
    }

    /// Adds bytes to the line begun. Each window of `MAX_LINE` bytes that
    /// more bytes follow is matched (with the byte before it and the one
    /// after it as context), and the next one starts `STEP` bytes after it;
    /// windows that lie whole in `bytes` are matched where they are, not
    /// copied.
    fn push_partial(&mut self, rules: &OutputRules, mut bytes: &[u8], seen: &mut Observed) {
        while self.partial.len() - self.context + bytes.len() > MAX_LINE {
            if self.partial.is_empty() {
                let start = scan_windows(rules, bytes, seen, &mut self.head);
                let before = usize::from(start > 0);
                self.partial.extend_from_slice(&bytes[start - before..]);
                self.context = before;
                return;
            }
            // The window, and the byte after it.
            let room = self.context + MAX_LINE + 1 - self.partial.len();
            self.partial.extend_from_slice(&bytes[..room]);
            bytes = &bytes[room..];
            let end = self.context + MAX_LINE;
            scan_window(
                rules,
                &self.partial,
                self.context,
                end,
                seen,
                &mut self.head,
            );
            // The next window starts `STEP` later; the byte before it stays.
            self.partial.drain(..self.context + STEP - 1);
            self.context = 1;
        }
        self.partial.extend_from_slice(bytes);
    }

    /// Matches the line begun (its last window) and empties it, keeping its
    /// allocation for the next.
    fn scan_partial(&mut self, rules: &OutputRules, seen: &mut Observed) {
        scan_short(rules, &self.partial, self.context, seen, &mut self.head);
        self.partial.clear();
        self.context = 0;
    }
}

/// Matches the windows of the long line `line` that more bytes follow;
/// returns where the last window, not matched yet, starts.
fn scan_windows(rules: &OutputRules, line: &[u8], seen: &mut Observed, head: &mut Head) -> usize {
    let mut start = 0;
    while line.len() - start > MAX_LINE {
        let before = usize::from(start > 0);
        scan_window(
            rules,
            &line[start - before..],
            before,
            before + MAX_LINE,
            seen,
            head,
        );
        start += STEP;
    }
    start
}

/// Matches the window `hay[from..end]` of a long line that goes on after
/// it. The byte before it (at `from - 1`, if `from` is 1) and the one after
/// it are context, so that `^`, `$` and `\b` see that the line goes on,
/// unless the byte after it is the newline that ends the line.
fn scan_window(
    rules: &OutputRules,
    hay: &[u8],
    from: usize,
    end: usize,
    seen: &mut Observed,
    head: &mut Head,
) {
    let end = if hay[end] == b'\n' { end } else { end + 1 };
    scan_line(rules, &hay[..end], from, seen, head);
}

/// Matches the lines of `block`, which ends at a line's end. A line longer
/// than `MAX_LINE` (with its newline) is matched in windows, as it is when
/// it comes in many reads.
fn scan_block(rules: &OutputRules, block: &[u8], seen: &mut Observed, head: &mut Head) {
    // Lines from `short` up to `at` fit in `MAX_LINE` bytes each.
    let mut short = 0;
    let mut at = 0;
    while block.len() - at > MAX_LINE {
        if let Some(last) = memchr::memrchr(b'\n', &block[at..at + MAX_LINE]) {
            at += last + 1;
            continue;
        }
        // The line starting at `at` is a long one.
        scan_short(rules, &block[short..at], 0, seen, head);
        let end = memchr::memchr(b'\n', &block[at + MAX_LINE..])
            .map_or(block.len(), |i| at + MAX_LINE + i + 1);
        let line = &block[at..end];
        let last = scan_windows(rules, line, seen, head);
        let before = usize::from(last > 0);
        scan_short(rules, &line[last - before..], before, seen, head);
        short = end;
        at = end;
    }
    scan_short(rules, &block[short..], 0, seen, head);
}

/// Matches the lines of `hay[from..]`, none of them longer than `MAX_LINE`;
/// the byte before `from`, if any, is the context of the first (the end of
/// a long line's previous window). A block where no pattern matches at all
/// is skipped in one search (but for the empty line that may end a
/// response's head in it).
fn scan_short(rules: &OutputRules, hay: &[u8], from: usize, seen: &mut Observed, head: &mut Head) {
    if rules
        .any
        .as_ref()
        .is_some_and(|any| !any.is_match_at(hay, from))
    {
        if head.open && lines(hay, from).any(|(line, at)| ends_head(&line[at..])) {
            head.open = false;
        }
        return;
    }
    for (line, context) in lines(hay, from) {
        scan_line(rules, line, context, seen, head);
    }
}

/// The lines of `hay[from..]`, without their `\r\n` or `\n`, each with
/// how many bytes before it are context: the first has the byte before
/// `from`, if any. Lines end at each newline; what follows the last one,
/// if anything, is a line too (a window of a long line, or the last line
/// of the output).
fn lines(hay: &[u8], from: usize) -> impl Iterator<Item = (&[u8], usize)> {
    let mut start = from;
    let mut context = from;
    memchr::memchr_iter(b'\n', &hay[from..])
        .map(move |i| from + i)
        .chain(std::iter::once(hay.len()))
        .map_while(move |end| {
            if start >= hay.len() && end == hay.len() {
                return None;
            }
            let line = &hay[start - context..end];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let at = context;
            start = end + 1;
            context = 0;
            Some((line, at))
        })
}

/// Whether a line ends a response's head: an empty line, or curl's `<`
/// alone with `-v`.
fn ends_head(line: &[u8]) -> bool {
    let blank = |b: &u8| *b == b' ' || *b == b'\t';
    let rest = &line[line.iter().position(|b| !blank(b)).unwrap_or(line.len())..];
    let rest = rest.strip_prefix(b"<").unwrap_or(rest);
    rest.iter().all(blank)
}

/// Matches one line, `line[from..]`; the bytes before `from` are context.
fn scan_line(rules: &OutputRules, line: &[u8], from: usize, seen: &mut Observed, head: &mut Head) {
    if rules.stop.iter().any(|r| r.is_match_at(line, from)) {
        seen.stop_match = true;
    }
    if rules.retry.iter().any(|r| r.is_match_at(line, from)) {
        seen.retry_match = true;
    }
    if !seen.condition_met && rules.until.iter().any(|r| r.is_match_at(line, from)) {
        seen.condition_met = true;
    }
    if let Some([transient, permanent]) = &rules.git_lines {
        seen.transient |= transient.is_match_at(line, from);
        seen.permanent |= permanent.is_match_at(line, from);
    }
    if rules.http_status
        && let Some(code) = rules
            .fail_line
            .captures_at(line, from)
            .and_then(|c| c.get(1).or_else(|| c.get(2)))
    {
        seen.http_status = std::str::from_utf8(code.as_bytes())
            .ok()
            .and_then(|s| s.parse().ok());
    }
    // The user's own pattern finds its hint on any line; a header only in
    // a response's head.
    if rules.retry_after_pattern {
        scan_retry_after(rules, line, from, seen);
    }
    if !rules.reads_heads() || head.headers(rules) == Headers::Elsewhere {
        return;
    }
    // A status line starts a new response, whose headers alone count.
    if let Some(code) = rules
        .status_line
        .captures_at(line, from)
        .and_then(|c| c.get(1))
    {
        seen.new_response();
        seen.http_status = std::str::from_utf8(code.as_bytes())
            .ok()
            .and_then(|s| s.parse().ok());
        head.open = true;
        return;
    }
    if head.open && ends_head(&line[from..]) {
        head.open = false;
    }
    if !head.counts(rules) {
        return;
    }
    if !rules.retry_after_pattern {
        scan_retry_after(rules, line, from, seen);
    }
    if let Some([reset, remaining, field]) = &rules.rate_limits {
        scan_rate_limits(line, from, [reset, remaining, field], seen);
    }
}

/// Reads a `Retry-After` value (or what `--retry-after-pattern` finds) from
/// one line.
fn scan_retry_after(rules: &OutputRules, line: &[u8], from: usize, seen: &mut Observed) {
    if let Some(r) = &rules.retry_after
        && let Some(value) = r.captures_at(line, from).and_then(|c| c.get(1))
    {
        seen.retry_after = value_of(value.as_bytes());
        seen.retry_after_pattern = rules.retry_after_pattern;
    }
}

/// A value as printed, trimmed; `None` if it is too long to mean anything.
fn value_of(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    (text.len() <= MAX_VALUE).then(|| text.to_owned())
}

/// Reads the rate-limit fields of one line: a reset, a count of requests
/// left, or the policies of a `RateLimit` field.
fn scan_rate_limits(
    line: &[u8],
    from: usize,
    [reset, remaining, field]: [&Regex; 3],
    seen: &mut Observed,
) {
    let text = |c: regex::bytes::Captures<'_>| c.get(1).and_then(|m| value_of(m.as_bytes()));
    if let Some(v) = reset.captures_at(line, from).and_then(text) {
        seen.rate_reset = reset_of(&v);
    } else if let Some(v) = remaining.captures_at(line, from).and_then(text) {
        seen.rate_remaining = v.parse().ok();
    } else if let Some(v) = field.captures_at(line, from).and_then(text) {
        scan_rate_field(&v, seen);
    }
}

/// Reads the policies of a `RateLimit` field: a list of items, each with
/// its requests left (`r=`) and the seconds to its reset (`t=`), as in
/// `"minute";r=0;t=30, "day";r=0;t=3600`; or the dictionary of an earlier
/// draft, one policy: `limit=10, remaining=0, reset=30`. Several field
/// lines of one response add to the list.
fn scan_rate_field(value: &str, seen: &mut Observed) {
    let mut dictionary = (None, None, false);
    for member in list_members(value) {
        let mut parts = member.split(';').map(str::trim);
        let item = parts.next().unwrap_or_default();
        if let Some((key, v)) = item.split_once('=')
            && !item.starts_with('"')
        {
            match key.trim().to_ascii_lowercase().as_str() {
                "remaining" => dictionary.0 = v.trim().parse::<u64>().ok(),
                "reset" => dictionary.1 = reset_of(v),
                _ => {}
            }
            dictionary.2 = true;
            continue;
        }
        let (mut left, mut reset) = (None, None);
        for param in parts {
            if let Some(r) = param.strip_prefix("r=") {
                left = r.trim().parse::<u64>().ok();
            } else if let Some(t) = param.strip_prefix("t=") {
                reset = reset_of(t);
            }
        }
        add_policy(left, reset, seen);
    }
    if dictionary.2 {
        add_policy(dictionary.0, dictionary.1, seen);
    }
}

/// Notes one policy's reset: among those with no request left, or those
/// that do not say.
fn add_policy(left: Option<u64>, reset: Option<Reset>, seen: &mut Observed) {
    match (left, reset) {
        (Some(0), Some(reset)) => seen.policies_spent.add(reset),
        (None, Some(reset)) => seen.policies_unsaid.add(reset),
        _ => {}
    }
}

/// The members of a structured-field list, split at the commas outside
/// quoted strings.
fn list_members(value: &str) -> impl Iterator<Item = &str> {
    let mut quoted = false;
    let mut escaped = false;
    value
        .split(move |c| {
            match c {
                _ if escaped => escaped = false,
                '\\' if quoted => escaped = true,
                '"' => quoted = !quoted,
                ',' if !quoted => return true,
                _ => {}
            }
            false
        })
        .map(str::trim)
        .filter(|m| !m.is_empty())
}

/// Values this large are Unix times in seconds rather than delays: above
/// 10⁹ seconds (31 years), a delay means nothing, and the time is past 2001.
const EPOCH_SECONDS: u64 = 1_000_000_000;

/// Values this large are Unix times in milliseconds (past 2001 too); as
/// seconds they would be past the year 33000.
const EPOCH_MILLIS: u64 = 1_000_000_000_000;

/// Values this large are Unix times in microseconds.
const EPOCH_MICROS: u64 = 1_000_000_000_000_000;

/// Values this large are Unix times in nanoseconds.
const EPOCH_NANOS: u64 = 1_000_000_000_000_000_000;

/// The delay the server's hints in `seen` ask for, at `now`: its
/// `Retry-After` (or what `--retry-after-pattern` found), else the rate
/// limit's reset of the policy with the longest wait among those with no
/// request left (and, on a 429 or 503, those that do not say). A time in
/// the past asks for no delay.
pub fn hint(seen: &Observed, now: SystemTime) -> Option<Hint> {
    if let Some(wait) = seen
        .retry_after
        .as_deref()
        .and_then(|v| retry_after_delay(v, now, seen.retry_after_pattern))
    {
        let source = if seen.retry_after_pattern {
            HintSource::Pattern
        } else {
            HintSource::RetryAfter
        };
        return Some(Hint { wait, source });
    }
    seen.rate_limit_wait(now).map(|wait| Hint {
        wait,
        source: HintSource::RateLimit,
    })
}

/// A rate limit's reset as printed: delay-seconds, or a Unix time in
/// seconds, milliseconds, microseconds or nanoseconds, told apart by its
/// size. `None` when it is no number.
fn reset_of(value: &str) -> Option<Reset> {
    let value = value.trim();
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Too many digits for any of these: a time too far away to wait for.
    let n = value.parse::<u64>().unwrap_or(u64::MAX);
    Some(match n {
        _ if n < EPOCH_SECONDS => Reset::After(Duration::from_secs(n)),
        _ if n < EPOCH_MILLIS => Reset::At(Duration::from_secs(n)),
        _ if n < EPOCH_MICROS => Reset::At(Duration::from_millis(n)),
        _ if n < EPOCH_NANOS => Reset::At(Duration::from_micros(n)),
        _ => Reset::At(Duration::from_nanos(n)),
    })
}

/// The delay a hint's value asks for, seen at `now`: delay-seconds or an
/// HTTP-date (RFC 9110 §10.2.3); with `epochs` (a value
/// `--retry-after-pattern` found) also a Unix time, as a rate limit's
/// reset may be. A time in the past asks for no delay. `None` when the
/// value is none of these.
pub fn retry_after_delay(value: &str, now: SystemTime, epochs: bool) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        if epochs {
            return reset_of(value).map(|r| r.wait(now));
        }
        let n = value.parse::<u64>().unwrap_or(u64::MAX);
        return Some(Duration::from_secs(n).min(MAX_DURATION));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(now)
            .unwrap_or(Duration::ZERO)
            .min(MAX_DURATION),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> OutputRules {
        OutputRules::new(
            vec![Regex::new("try again").unwrap()],
            vec![Regex::new("^fatal").unwrap()],
            vec![],
            Some(retry_after_header()),
            Some(Preset::Curl),
        )
        .unwrap()
    }

    fn scan(pieces: &[&[u8]]) -> Observed {
        let r = rules();
        let mut s = LineScanner::default();
        let mut seen = Observed::default();
        for p in pieces {
            s.feed(&r, p, &mut seen);
        }
        s.finish(&r, &mut seen);
        seen
    }

    #[test]
    fn lines_match_however_the_bytes_are_split() {
        let whole: &[u8] = b"ok\nplease try again later\nfatal: no\n";
        let one = scan(&[whole]);
        assert!(one.retry_match && one.stop_match);
        for cut in 0..whole.len() {
            let (a, b) = whole.split_at(cut);
            assert_eq!(scan(&[a, b]), one, "cut at {cut}");
        }
    }

    #[test]
    fn anchors_apply_per_line_and_a_last_line_without_newline_counts() {
        assert!(!scan(&[b"not fatal\n"]).stop_match);
        assert!(scan(&[b"x\nfatal"]).stop_match);
        assert!(!scan(&[b"nothing here\n"]).retry_match);
    }

    #[test]
    fn retry_after_headers_and_http_statuses_are_read() {
        let seen = scan(&[b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 7\r\n\r\n"]);
        assert_eq!(seen.retry_after.as_deref(), Some("7"));
        assert_eq!(seen.http_status, Some(503));
        let seen = scan(&[b"curl: (22) The requested URL returned error: 404\n"]);
        assert_eq!(seen.http_status, Some(404));
        let seen = scan(&[b"< HTTP/2 429\n< retry-after: Wed, 21 Oct 2015 07:28:00 GMT\n"]);
        assert_eq!(
            seen.retry_after.as_deref(),
            Some("Wed, 21 Oct 2015 07:28:00 GMT")
        );
    }

    #[test]
    fn endless_lines_are_matched_in_bounded_pieces() {
        let mut long = vec![b'x'; 3 * MAX_LINE];
        long.extend_from_slice(b"try again\n");
        let r = rules();
        let mut s = LineScanner::default();
        let mut seen = Observed::default();
        for piece in long.chunks(1000) {
            s.feed(&r, piece, &mut seen);
            assert!(s.partial.len() <= MAX_LINE);
        }
        assert!(seen.retry_match);
    }

    #[test]
    fn a_match_across_the_windows_of_a_long_line_is_found_however_the_bytes_arrive() {
        // "try again" straddles the end of the first window, and curl's
        // error line the end of the second.
        let mut long = vec![b'x'; MAX_LINE - 4];
        long.extend_from_slice(b"try again");
        long.resize(STEP + MAX_LINE - 8, b'y');
        long.extend_from_slice(b"returned error: 503");
        long.resize(3 * MAX_LINE + 5, b'z');
        long.extend_from_slice(b"\nlast\n");
        // The same line after short ones: windows count from its start.
        let mut after_short = b"one\ntwo\n".to_vec();
        after_short.extend_from_slice(&long);
        for data in [long, after_short] {
            let whole = scan(&[&data]);
            assert!(whole.retry_match && whole.http_status == Some(503));
            for size in [
                13,
                4096,
                OVERLAP,
                STEP,
                MAX_LINE,
                MAX_LINE + 1,
                3 * MAX_LINE,
            ] {
                let pieces: Vec<&[u8]> = data.chunks(size).collect();
                assert_eq!(scan(&pieces), whole, "chunks of {size}");
            }
        }
    }

    #[test]
    fn a_window_of_a_long_line_is_no_line_start_and_its_end_no_line_end() {
        // "fatal" begins the second window, and "again" ends the first, of
        // a line that goes on: neither `^fatal` nor `again$` may match.
        let r = OutputRules::new(
            vec![Regex::new("again$").unwrap()],
            vec![Regex::new("^fatal").unwrap()],
            vec![Regex::new("UP").unwrap()],
            None,
            None,
        )
        .unwrap();
        let mut line = vec![b'x'; MAX_LINE - 5];
        line.extend_from_slice(b"again");
        line.resize(STEP, b'y');
        line.extend_from_slice(b"fatal");
        line.resize(3 * MAX_LINE, b'z');
        line.push(b'\n');
        for size in [7_919, OVERLAP, MAX_LINE + 1, line.len()] {
            let mut s = LineScanner::default();
            let mut seen = Observed::default();
            for piece in line.chunks(size) {
                s.feed(&r, piece, &mut seen);
            }
            s.finish(&r, &mut seen);
            assert!(!seen.stop_match && !seen.retry_match, "chunks of {size}");
        }
        // At the line's true start and end they do.
        let mut whole = b"fatal".to_vec();
        whole.resize(2 * MAX_LINE, b'x');
        whole.extend_from_slice(b"again\n");
        let mut s = LineScanner::default();
        let mut seen = Observed::default();
        s.feed(&r, &whole, &mut seen);
        assert!(seen.stop_match && seen.retry_match);
    }

    #[test]
    fn lines_up_to_the_window_are_matched_whole() {
        let mut line = vec![b'x'; MAX_LINE - 20];
        line.extend_from_slice(b"try again\n");
        let mut pieces: Vec<&[u8]> = line.chunks(OVERLAP - 1).collect();
        assert!(scan(&pieces).retry_match);
        let mut fatal = b"fatal".to_vec();
        fatal.resize(MAX_LINE - 1, b'x');
        fatal.push(b'\n');
        pieces = fatal.chunks(777).collect();
        assert!(scan(&pieces).stop_match);
        // Mid-line, "fatal" is no line start.
        let mut late = vec![b'x'; 100 * 1024];
        late.extend_from_slice(b"fatal\n");
        assert!(!scan(&[&late]).stop_match);
    }

    #[test]
    fn retry_after_values_are_seconds_or_http_dates() {
        let now = httpdate::parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT").unwrap();
        assert_eq!(
            retry_after_delay("120", now, false),
            Some(Duration::from_mins(2))
        );
        assert_eq!(
            retry_after_delay("Wed, 21 Oct 2015 07:28:30 GMT", now, false),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            retry_after_delay("Wed, 21 Oct 2015 07:27:00 GMT", now, false),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after_delay("soon", now, false), None);
        assert_eq!(retry_after_delay("-5", now, false), None);
        assert_eq!(
            retry_after_delay("99999999999999999999999", now, false),
            Some(MAX_DURATION)
        );
    }

    #[test]
    fn rate_limit_resets_are_seconds_or_unix_times_in_seconds_or_milliseconds() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_hours(490_000);
        let secs = |d: Option<Duration>| d.map(|d| d.as_secs());
        assert_eq!(secs(retry_after_delay("30", now, true)), Some(30));
        assert_eq!(secs(retry_after_delay("1764000060", now, true)), Some(60));
        assert_eq!(
            secs(retry_after_delay("1764000060000", now, true)),
            Some(60)
        );
        // A time past is now; Retry-After itself stays delay-seconds.
        assert_eq!(secs(retry_after_delay("1763999000", now, true)), Some(0));
        assert_eq!(
            secs(retry_after_delay("1764000060", now, false)),
            Some(1_764_000_060)
        );
    }

    /// The wait the hints of `text` ask for, in seconds, at a fixed now.
    fn wait_of(r: &OutputRules, text: &str) -> Option<u64> {
        let now = SystemTime::UNIX_EPOCH + Duration::from_hours(490_000);
        let mut s = LineScanner::default();
        let mut seen = Observed::default();
        s.feed(r, text.as_bytes(), &mut seen);
        s.finish(r, &mut seen);
        hint(&seen, now).map(|h| h.wait.as_secs())
    }

    #[test]
    fn a_reset_is_a_hint_only_when_no_request_is_left() {
        let r = OutputRules::new(vec![], vec![], vec![], Some(retry_after_header()), None).unwrap();
        let scan_at = |text: &str| wait_of(&r, text);
        assert_eq!(
            scan_at("x-ratelimit-remaining: 0\r\nx-ratelimit-reset: 1764000042\r\n"),
            Some(42)
        );
        assert_eq!(
            scan_at("X-RateLimit-Remaining: 12\nX-RateLimit-Reset: 1764000042\n"),
            None
        );
        assert_eq!(
            scan_at("RateLimit-Remaining: 0\nRateLimit-Reset: 7\n"),
            Some(7)
        );
        assert_eq!(scan_at("RateLimit: \"default\";r=0;t=30\n"), Some(30));
        assert_eq!(scan_at("RateLimit: \"default\";r=5;t=30\n"), None);
        // Retry-After comes first.
        assert_eq!(
            scan_at("Retry-After: 3\nRateLimit: \"default\";r=0;t=30\n"),
            Some(3)
        );
    }

    #[test]
    fn the_policy_with_the_longest_wait_counts_in_any_form() {
        let r = OutputRules::new(vec![], vec![], vec![], Some(retry_after_header()), None).unwrap();
        let scan_at = |text: &str| wait_of(&r, text);
        assert_eq!(
            scan_at("RateLimit: \"a\";r=0;t=5, \"b\";r=0;t=60\n"),
            Some(60)
        );
        // A policy with requests left asks for nothing, whatever its reset.
        assert_eq!(
            scan_at("RateLimit: \"a\";r=0;t=5, \"b\";r=9;t=60\n"),
            Some(5)
        );
        assert_eq!(
            scan_at("RateLimit: \"a\";r=1;t=5\nRateLimit: \"b,c\";r=0;t=8\n"),
            Some(8)
        );
        // A Unix time in seconds, milliseconds, microseconds, nanoseconds.
        for t in [
            "1764000042",
            "1764000042000",
            "1764000042000000",
            "1764000042000000000",
        ] {
            assert_eq!(
                scan_at(&format!("RateLimit: \"a\";r=0;t={t}\n")),
                Some(42),
                "{t}"
            );
        }
        // A delay and a time: the later.
        assert_eq!(
            scan_at("RateLimit: \"a\";r=0;t=1764000042, \"b\";r=0;t=50\n"),
            Some(50)
        );
        // An earlier draft's dictionary, and its separate fields.
        assert_eq!(
            scan_at("RateLimit: limit=10, remaining=0, reset=7\n"),
            Some(7)
        );
        assert_eq!(scan_at("RateLimit: limit=10, remaining=3, reset=7\n"), None);
        assert_eq!(
            scan_at(
                "RateLimit-Limit: 10\nRateLimit-Remaining: 0\nRateLimit-Reset: 7\nRateLimit-Policy: 10;w=60\n"
            ),
            Some(7)
        );
        // A 429 or 503 with a reset and no count is a hint; a 403 is not.
        assert_eq!(scan_at("HTTP/1.1 429 x\nX-RateLimit-Reset: 9\n"), Some(9));
        assert_eq!(scan_at("HTTP/1.1 503 x\nRateLimit: \"a\";t=9\n"), Some(9));
        assert_eq!(scan_at("HTTP/1.1 403 x\nX-RateLimit-Reset: 9\n"), None);
        assert_eq!(
            scan_at("HTTP/1.1 429 x\nX-RateLimit-Remaining: 4\nX-RateLimit-Reset: 9\n"),
            None
        );
    }

    #[test]
    fn only_the_last_responses_headers_count() {
        let r = rules();
        let redirected = "HTTP/1.1 302 Found\r\nRetry-After: 30\r\nX-RateLimit-Remaining: 0\r\n\
                          X-RateLimit-Reset: 40\r\n\r\nHTTP/1.1 503 x\r\n\r\n";
        assert_eq!(wait_of(&r, redirected), None);
        // The same with curl -v and wget -S.
        assert_eq!(
            wait_of(
                &r,
                "< HTTP/1.1 302 Found\n< Retry-After: 30\n< \n< HTTP/1.1 200 OK\n< \n"
            ),
            None
        );
        assert_eq!(
            wait_of(
                &r,
                "  HTTP/1.1 302 Found\n  Retry-After: 30\n  HTTP/1.1 503 x\n  Retry-After: 4\n"
            ),
            Some(4)
        );
    }

    #[test]
    fn a_header_file_of_many_large_responses_is_read_whole_in_bounded_memory() {
        // Fifty redirects of 300 KB of headers each, then the last response.
        let mut file = Vec::new();
        let filler = format!("X-Filler: {}\r\n", "f".repeat(10_000));
        for n in 0..51 {
            let status = if n < 50 { "302 Found" } else { "503 Busy" };
            file.extend_from_slice(format!("HTTP/1.1 {status}\r\n").as_bytes());
            file.extend_from_slice(filler.repeat(29).as_bytes());
            if n % 2 == 0 {
                file.extend_from_slice(format!("Retry-After: {n}\r\n\r\n").as_bytes());
            }
        }
        let r = rules().with_headers(Headers::Elsewhere);
        let mut s = LineScanner::headers_file();
        let mut seen = Observed::default();
        for piece in file.chunks(64 * 1024) {
            s.feed(&r, piece, &mut seen);
            assert!(s.partial.len() <= MAX_LINE);
        }
        s.finish(&r, &mut seen);
        assert_eq!(seen.retry_after.as_deref(), Some("50"));
        assert_eq!(seen.http_status, Some(503));
    }

    proptest::proptest! {
        /// Whatever a server puts in its rate-limit and Retry-After fields,
        /// and whatever the clock says, a hint is found or not, without a
        /// panic, and never above the longest wait there is.
        #[test]
        fn any_hint_field_and_any_clock_give_a_bounded_wait_or_none(
            name in proptest::sample::select(vec![
                "RateLimit", "RateLimit-Reset", "X-RateLimit-Reset",
                "RateLimit-Remaining", "Retry-After", "RateLimit-Policy",
            ]),
            value in "[0-9a-z\"=;, .\\\\-]{0,60}",
            status in proptest::sample::select(vec![200u16, 403, 429, 503]),
            now_secs in proptest::num::u64::ANY,
        ) {
            let r = rules();
            let text = format!("HTTP/1.1 {status} x\r\n{name}: {value}\r\nRateLimit-Reset: {value}\r\n");
            let mut s = LineScanner::default();
            let mut seen = Observed::default();
            s.feed(&r, text.as_bytes(), &mut seen);
            s.finish(&r, &mut seen);
            let now = SystemTime::UNIX_EPOCH
                .checked_add(Duration::from_secs(now_secs))
                .unwrap_or(SystemTime::UNIX_EPOCH);
            if let Some(h) = hint(&seen, now) {
                proptest::prop_assert!(h.wait <= MAX_DURATION);
            }
        }
    }

    #[test]
    fn a_body_is_not_read_as_headers() {
        let r = rules();
        let body = "HTTP/1.1 503 x\r\nContent-Type: text/plain\r\n\r\nRetry-After: 30\r\n";
        assert_eq!(wait_of(&r, body), None);
        assert_eq!(wait_of(&r, "Retry-After: 30\n"), None);
        // However the bytes come: the empty line may lie in a block with
        // nothing else to match.
        let mut s = LineScanner::default();
        let mut seen = Observed::default();
        for piece in [
            "HTTP/1.1 503 x\r\n",
            "Server: y\r\n\r\nbody\n",
            "Retry-After: 30\n",
        ] {
            s.feed(&r, piece.as_bytes(), &mut seen);
        }
        assert_eq!(seen.retry_after, None);
        // Where the preset reads headers from a file of its own, none count
        // in the output; curl's error line does.
        let r = rules().with_headers(Headers::Elsewhere);
        let mut seen = Observed::default();
        LineScanner::default().feed(
            &r,
            b"HTTP/1.1 200 x\nRetry-After: 30\ncurl: (22) The requested URL returned error: 503\n",
            &mut seen,
        );
        assert_eq!((seen.retry_after, seen.http_status), (None, Some(503)));
        let mut seen = Observed::default();
        LineScanner::headers_file().feed(
            &r,
            b"HTTP/1.1 503 x\r\nRetry-After: 3\r\n\r\n",
            &mut seen,
        );
        assert_eq!(seen.retry_after.as_deref(), Some("3"));
    }

    #[test]
    fn heads_on_one_stream_count_on_a_pipe_that_carries_both() {
        let r = rules().with_headers(Headers::InHeadsOn("stderr"));
        let head = b"HTTP/1.1 503 x\r\nRetry-After: 3\r\n\r\n";
        let seen_on = |stream| {
            let mut seen = Observed::default();
            LineScanner::of_stream(stream).feed(&r, head, &mut seen);
            seen.retry_after
        };
        assert_eq!(seen_on("stderr").as_deref(), Some("3"));
        assert_eq!(seen_on("output").as_deref(), Some("3"));
        assert_eq!(seen_on("stdout"), None);
    }

    fn scan_with(retry: &str, text: &[u8]) -> bool {
        let r =
            OutputRules::new(vec![Regex::new(retry).unwrap()], vec![], vec![], None, None).unwrap();
        let mut s = LineScanner::default();
        let mut seen = Observed::default();
        s.feed(&r, text, &mut seen);
        s.finish(&r, &mut seen);
        seen.retry_match
    }

    #[test]
    fn no_phantom_empty_line_follows_the_last_newline() {
        assert!(!scan_with("^$", b"a\nb\n"));
        assert!(scan_with("^$", b"a\n\nb\n"));
    }

    #[test]
    fn only_flag_groups_turn_multi_line_off() {
        assert!(turns_multi_line_off("(?-m)^x$"));
        assert!(turns_multi_line_off("a(?s-m:b)"));
        assert!(!turns_multi_line_off("never-matches-zq"));
        assert!(!turns_multi_line_off("(?m)x"));
        assert!(!turns_multi_line_off("(?i)x-m"));
    }

    #[test]
    fn crlf_lines_and_block_anchors_match_as_single_lines_do() {
        assert!(scan_with("oops$", b"oops\r\n"));
        assert!(scan_with(r"\Aoops", b"first\noops\n"));
        assert!(scan_with(r"oops\z", b"oops\nlast\n"));
        assert!(!scan_with(r"\Aoops", b"first\nnot oops\n"));
    }
}
