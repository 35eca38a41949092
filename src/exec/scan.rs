//! What an attempt printed, as far as classification cares: output rules
//! (`--retry-if-output`, `--stop-if-output`), a server's `Retry-After` hint,
//! and the HTTP status curl reported. Pure: bytes in, observations out; the
//! copying itself happens in `copy`.

use std::time::{Duration, SystemTime};

use regex::bytes::{Regex, RegexSet, RegexSetBuilder};

use crate::classify::{Hint, HintSource, Observed, Preset};
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
/// The IETF `RateLimit:` field (`"default";r=0;t=30`).
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
    /// request is left.
    rate_limits: Option<[Regex; 3]>,
    http_status: bool,
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
    /// # Errors
    ///
    /// When the patterns together are too large to search at once.
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
    ) -> Result<Option<OutputRules>, String> {
        let http_status = preset.is_some();
        if retry.is_empty()
            && stop.is_empty()
            && until.is_empty()
            && retry_after.is_none()
            && !http_status
        {
            return Ok(None);
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
        let anchored = patterns
            .iter()
            .any(|p| p.contains(r"\A") || p.contains(r"\z") || turns_multi_line_off(p));
        let any = if anchored {
            None
        } else {
            Some(
                RegexSetBuilder::new(&patterns)
                    .multi_line(true)
                    .crlf(true)
                    .size_limit(64 << 20)
                    .build()
                    .map_err(|_| "the output patterns together are too large".to_owned())?,
            )
        };
        Ok(Some(OutputRules {
            retry,
            stop,
            until,
            retry_after,
            retry_after_pattern,
            rate_limits,
            http_status,
            git_lines,
            any,
            fail_line,
            status_line,
        }))
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
}

impl LineScanner {
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
            scan_block(rules, complete, seen);
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
                let start = scan_windows(rules, bytes, seen);
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
            scan_window(rules, &self.partial, self.context, end, seen);
            // The next window starts `STEP` later; the byte before it stays.
            self.partial.drain(..self.context + STEP - 1);
            self.context = 1;
        }
        self.partial.extend_from_slice(bytes);
    }

    /// Matches the line begun (its last window) and empties it, keeping its
    /// allocation for the next.
    fn scan_partial(&mut self, rules: &OutputRules, seen: &mut Observed) {
        scan_short(rules, &self.partial, self.context, seen);
        self.partial.clear();
        self.context = 0;
    }
}

/// Matches the windows of the long line `line` that more bytes follow;
/// returns where the last window, not matched yet, starts.
fn scan_windows(rules: &OutputRules, line: &[u8], seen: &mut Observed) -> usize {
    let mut start = 0;
    while line.len() - start > MAX_LINE {
        let before = usize::from(start > 0);
        scan_window(
            rules,
            &line[start - before..],
            before,
            before + MAX_LINE,
            seen,
        );
        start += STEP;
    }
    start
}

/// Matches the window `hay[from..end]` of a long line that goes on after
/// it. The byte before it (at `from - 1`, if `from` is 1) and the one after
/// it are context, so that `^`, `$` and `\b` see that the line goes on,
/// unless the byte after it is the newline that ends the line.
fn scan_window(rules: &OutputRules, hay: &[u8], from: usize, end: usize, seen: &mut Observed) {
    let end = if hay[end] == b'\n' { end } else { end + 1 };
    scan_line(rules, &hay[..end], from, seen);
}

/// Matches the lines of `block`, which ends at a line's end. A line longer
/// than `MAX_LINE` (with its newline) is matched in windows, as it is when
/// it comes in many reads.
fn scan_block(rules: &OutputRules, block: &[u8], seen: &mut Observed) {
    // Lines from `short` up to `at` fit in `MAX_LINE` bytes each.
    let mut short = 0;
    let mut at = 0;
    while block.len() - at > MAX_LINE {
        if let Some(last) = memchr::memrchr(b'\n', &block[at..at + MAX_LINE]) {
            at += last + 1;
            continue;
        }
        // The line starting at `at` is a long one.
        scan_short(rules, &block[short..at], 0, seen);
        let end = memchr::memchr(b'\n', &block[at + MAX_LINE..])
            .map_or(block.len(), |i| at + MAX_LINE + i + 1);
        let line = &block[at..end];
        let last = scan_windows(rules, line, seen);
        let before = usize::from(last > 0);
        scan_short(rules, &line[last - before..], before, seen);
        short = end;
        at = end;
    }
    scan_short(rules, &block[short..], 0, seen);
}

/// Matches the lines of `hay[from..]`, none of them longer than `MAX_LINE`;
/// the byte before `from`, if any, is the context of the first (the end of
/// a long line's previous window). A block where no pattern matches at all
/// is skipped in one search.
fn scan_short(rules: &OutputRules, hay: &[u8], from: usize, seen: &mut Observed) {
    if rules
        .any
        .as_ref()
        .is_some_and(|any| !any.is_match_at(hay, from))
    {
        return;
    }
    // Lines end at each newline; what follows the last one, if anything, is
    // a line too (a window of a long line, or the last line of the output).
    let mut start = from;
    let mut context = from;
    for end in memchr::memchr_iter(b'\n', &hay[from..])
        .map(|i| from + i)
        .chain(std::iter::once(hay.len()))
    {
        if start >= hay.len() && end == hay.len() {
            break;
        }
        let line = &hay[start - context..end];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        scan_line(rules, line, context, seen);
        start = end + 1;
        context = 0;
    }
}

/// Matches one line, `line[from..]`; the bytes before `from` are context.
fn scan_line(rules: &OutputRules, line: &[u8], from: usize, seen: &mut Observed) {
    if rules.stop.iter().any(|r| r.is_match_at(line, from)) {
        seen.stop_match = true;
    }
    if rules.retry.iter().any(|r| r.is_match_at(line, from)) {
        seen.retry_match = true;
    }
    if !seen.condition_met && rules.until.iter().any(|r| r.is_match_at(line, from)) {
        seen.condition_met = true;
    }
    if let Some(r) = &rules.retry_after
        && let Some(value) = r.captures_at(line, from).and_then(|c| c.get(1))
    {
        seen.retry_after = Some(String::from_utf8_lossy(value.as_bytes()).trim().to_owned());
        seen.retry_after_pattern = rules.retry_after_pattern;
    }
    if let Some([transient, permanent]) = &rules.git_lines {
        seen.transient |= transient.is_match_at(line, from);
        seen.permanent |= permanent.is_match_at(line, from);
    }
    if let Some([reset, remaining, field]) = &rules.rate_limits {
        scan_rate_limits(line, from, [reset, remaining, field], seen);
    }
    if rules.http_status {
        let status = rules
            .fail_line
            .captures_at(line, from)
            .or_else(|| rules.status_line.captures_at(line, from));
        if let Some(code) = status.and_then(|c| c.get(1).or_else(|| c.get(2))) {
            seen.http_status = std::str::from_utf8(code.as_bytes())
                .ok()
                .and_then(|s| s.parse().ok());
        }
    }
}

/// Reads the rate-limit fields of one line: a reset, a count of requests
/// left, or the IETF `RateLimit` field's `r=` and `t=` parameters.
fn scan_rate_limits(
    line: &[u8],
    from: usize,
    [reset, remaining, field]: [&Regex; 3],
    seen: &mut Observed,
) {
    let text = |c: regex::bytes::Captures<'_>| {
        c.get(1)
            .map(|m| String::from_utf8_lossy(m.as_bytes()).trim().to_owned())
    };
    if let Some(v) = reset.captures_at(line, from).and_then(text) {
        seen.rate_reset = Some(v);
    } else if let Some(v) = remaining.captures_at(line, from).and_then(text) {
        seen.rate_remaining = v.parse().ok();
    } else if let Some(v) = field.captures_at(line, from).and_then(text) {
        for param in v.split(';').map(str::trim) {
            if let Some(r) = param.strip_prefix("r=") {
                seen.rate_remaining = r.trim().parse().ok();
            } else if let Some(t) = param.strip_prefix("t=") {
                seen.rate_reset = Some(t.trim().to_owned());
            }
        }
    }
}

/// Values this large are Unix times in seconds rather than delays: above
/// 10⁹ seconds (31 years), a delay means nothing, and the time is past 2001.
const EPOCH_SECONDS: u64 = 1_000_000_000;

/// Values this large are Unix times in milliseconds (past 2001 too).
const EPOCH_MILLIS: u64 = 1_000_000_000_000;

/// The delay the server's hints in `seen` ask for, at `now`: its
/// `Retry-After` (or what `--retry-after-pattern` found), else, when no
/// request is left, the rate limit's reset. A time in the past asks for no
/// delay.
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
    if seen.rate_limited() {
        return seen
            .rate_reset
            .as_deref()
            .and_then(|v| retry_after_delay(v, now, true))
            .map(|wait| Hint {
                wait,
                source: HintSource::RateLimit,
            });
    }
    None
}

/// The delay a hint's value asks for, seen at `now`: delay-seconds or an
/// HTTP-date (RFC 9110 §10.2.3); with `epochs` (a rate limit's reset, or a
/// value `--retry-after-pattern` found) also a Unix time in seconds or
/// milliseconds, told apart by its size. A time in the past asks for no
/// delay. `None` when the value is none of these.
pub fn retry_after_delay(value: &str, now: SystemTime, epochs: bool) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        let n = value.parse::<u64>().unwrap_or(u64::MAX);
        let when = match n {
            _ if !epochs || n < EPOCH_SECONDS => {
                return Some(Duration::from_secs(n).min(MAX_DURATION));
            }
            _ if n < EPOCH_MILLIS => Duration::from_secs(n),
            _ => Duration::from_millis(n),
        };
        let when = SystemTime::UNIX_EPOCH.checked_add(when);
        return Some(when.map_or(MAX_DURATION, |w| {
            w.duration_since(now)
                .unwrap_or(Duration::ZERO)
                .min(MAX_DURATION)
        }));
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
        let seen = scan(&[b"< retry-after: Wed, 21 Oct 2015 07:28:00 GMT\n"]);
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
        .unwrap()
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

    #[test]
    fn a_reset_is_a_hint_only_when_no_request_is_left() {
        let r = rules();
        let now = SystemTime::UNIX_EPOCH + Duration::from_hours(490_000);
        let scan_at = |text: &str| {
            let mut s = LineScanner::default();
            let mut seen = Observed::default();
            s.feed(&r, text.as_bytes(), &mut seen);
            s.finish(&r, &mut seen);
            hint(&seen, now).map(|h| h.wait.as_secs())
        };
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

    fn scan_with(retry: &str, text: &[u8]) -> bool {
        let r = OutputRules::new(vec![Regex::new(retry).unwrap()], vec![], vec![], None, None)
            .unwrap()
            .unwrap();
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
