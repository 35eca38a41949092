//! Value parsers for the command line: durations, factors, counts, rule lists.
//! Each takes any string and returns a value or a one-line, lowercase reason;
//! none may panic, whatever the input (a property test feeds them garbage).

use std::time::Duration;

use crate::classify::Rule;
use crate::duration::MAX_DURATION;
use crate::signal;

/// The largest retry count accepted; `--forever` is the way to ask for more.
pub const MAX_RETRIES: u64 = 1_000_000_000;

/// Parses a humantime duration (`250ms`, `1.5s`, `1h 30m`), refusing bare
/// numbers, negative, overflowing and absurd values.
pub fn duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err("a duration cannot be empty".into());
    }
    if t.starts_with('-') {
        return Err("a duration cannot be negative".into());
    }
    if t.chars().all(|c| c.is_ascii_digit() || c == '.') {
        // Zero with a unit is refused where a duration must be above zero:
        // it is not offered as advice.
        if t.chars().all(|c| c == '0' || c == '.') {
            return Err("a duration needs a unit (ms, s, m, h or d)".into());
        }
        return Err(format!("a duration needs a unit, like {t}ms or {t}s"));
    }
    // humantime 2.4 panics when the sum of the parts overflows (its issue
    // #66). Numbers this long are far past MAX_DURATION in any unit, so
    // refusing them first keeps the parser away from that path.
    let longest_number = t
        .split(|c: char| !c.is_ascii_digit())
        .map(str::len)
        .max()
        .unwrap_or(0);
    if t.len() > 100 || longest_number > 15 {
        return Err(too_large());
    }
    let d = guarded_humantime(t)?;
    if d > MAX_DURATION {
        return Err(too_large());
    }
    Ok(d)
}

fn too_large() -> String {
    "too large (at most 1000y)".into()
}

/// Calls humantime with the panic of its issue #66 caught, as a last line of
/// defence behind the length checks above; the panic message is not shown.
fn guarded_humantime(t: &str) -> Result<Duration, String> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let parsed = std::panic::catch_unwind(|| humantime::parse_duration(t));
    std::panic::set_hook(hook);
    match parsed {
        Ok(Ok(d)) => Ok(d),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(too_large()),
    }
}

/// Parses the growth factor: a finite number of at least 1.
pub fn factor(s: &str) -> Result<f64, String> {
    let f: f64 = s.trim().parse().map_err(|_| "not a number".to_owned())?;
    if !f.is_finite() {
        return Err("must be a finite number".into());
    }
    if f < 1.0 {
        return Err("must be at least 1 (1 keeps delays constant)".into());
    }
    Ok(f)
}

/// Parses `--retry-after-jitter`: a finite fraction from 0 to 10.
pub fn hint_jitter(s: &str) -> Result<f64, String> {
    let j: f64 = s.trim().parse().map_err(|_| "not a number".to_owned())?;
    if !j.is_finite() || !(0.0..=10.0).contains(&j) {
        return Err(
            "must be a number from 0 to 10 (0.2 waits up to 20% more than the hint)".into(),
        );
    }
    Ok(j)
}

/// Parses a whole number, refusing signs, fractions and other noise.
fn whole(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err("must not be negative".into());
    }
    if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || c == '.') && t.contains('.') {
        return Err("must be a whole number".into());
    }
    if t.is_empty() || !t.chars().all(|c| c.is_ascii_digit()) {
        return Err("must be a whole number".into());
    }
    t.parse().map_err(|_| "too large".to_owned())
}

/// Parses `--max-retries`: 0 to `MAX_RETRIES`.
pub fn retries(s: &str) -> Result<u64, String> {
    let n = whole(s)?;
    if n > MAX_RETRIES {
        return Err(format!("at most {MAX_RETRIES}; use --forever for no limit"));
    }
    Ok(n)
}

/// Parses `--attempts`: 1 to `MAX_RETRIES + 1`.
pub fn attempts(s: &str) -> Result<u64, String> {
    let n = whole(s)?;
    if n == 0 {
        return Err("must be at least 1".into());
    }
    if n > MAX_RETRIES + 1 {
        return Err(format!(
            "at most {}; use --forever for no limit",
            MAX_RETRIES + 1
        ));
    }
    Ok(n)
}

/// Parses `--seed`: any unsigned 64-bit number.
pub fn seed(s: &str) -> Result<u64, String> {
    whole(s).map_err(|e| {
        if e == "too large" {
            "must fit in 64 bits".to_owned()
        } else {
            e
        }
    })
}

/// Parses a signal: `TERM`, `SIGTERM`, `term` or `15`; on Windows, the
/// control event a console process group can be sent: `CTRL_BREAK`.
pub fn signal(s: &str) -> Result<i32, String> {
    match signal::parse(s.trim()) {
        Some(sig) if signal::sendable(sig) => Ok(sig),
        Some(_) => {
            Err("only CTRL_BREAK reaches an attempt on Windows, whose processes ignore Ctrl-C in their own console process group".to_owned())
        }
        None if !signal::DEATH_BY_SIGNAL => {
            Err("unknown signal: on Windows, an attempt is sent CTRL_BREAK".to_owned())
        }
        None => Err("unknown signal".to_owned()),
    }
}

/// The most one output pattern (`--until-output`, `--retry-if-output`,
/// `--stop-if-output`) may take compiled, as the `regex` crate counts it:
/// room for Unicode's `\w` repeated some 180 times (`\w{64}` takes some
/// 3 MiB, `(?-u:\w){64}` 6 KiB).
pub const PATTERN_MAX: usize = 8 << 20;

/// The most the output patterns of a run may take compiled, all together.
/// Each pattern is compiled within what the ones before it left (and at
/// most `PATTERN_MAX`), so that a set too large is refused at the pattern
/// that passes the limit, before the rest is compiled, in a fraction of a
/// second and some 50 MB at most.
pub const PATTERNS_MAX: usize = 16 << 20;

/// The most text the output patterns of a run may hold, all together: a
/// pattern is parsed anew for each size it is tried in, so that a set of
/// long patterns is refused by its length before any is parsed.
pub const PATTERNS_TEXT_MAX: usize = 64 << 10;

/// What the `regex` crate allows a pattern's lazy DFA to hold by default.
/// A pattern larger than that is given as much as it takes compiled: with
/// less, the lazy DFA of `\w{64}` keeps filling its cache and gives way to
/// a search some thirty times slower.
const DFA_MIN: usize = 2 << 20;

/// The output patterns of a command line parsed so far: what they left of
/// `PATTERNS_MAX` and of `PATTERNS_TEXT_MAX`, and their text.
struct Patterns {
    left: usize,
    text_left: usize,
    before: Vec<String>,
}

impl Patterns {
    const fn new() -> Patterns {
        Patterns {
            left: PATTERNS_MAX,
            text_left: PATTERNS_TEXT_MAX,
            before: Vec::new(),
        }
    }

    /// `s` compiled and charged to what is left, if it fits.
    fn take(&mut self, s: &str) -> Result<Option<regex::bytes::Regex>, String> {
        if s.len() > self.text_left {
            return Err(format!(
                "the output patterns together are longer than {} KiB",
                PATTERNS_TEXT_MAX >> 10
            ));
        }
        let Some((r, size)) = sized_regex(s, self.limit())? else {
            return Ok(None);
        };
        self.left -= size.min(self.left);
        self.text_left -= s.len();
        self.before.push(s.to_owned());
        Ok(Some(r))
    }

    /// The most the next pattern may take compiled.
    fn limit(&self) -> usize {
        self.left.min(PATTERN_MAX)
    }
}

thread_local! {
    /// The output patterns parsed so far. (clap calls a value parser with
    /// the value alone: this is the one state the parsers share.) Each
    /// parse of a command line starts afresh (`parsing_afresh`): backoff
    /// parses one again to tell whether a bad value came from the
    /// environment, and the patterns it holds must not be charged twice.
    static PATTERNS: std::cell::RefCell<Patterns> = const { std::cell::RefCell::new(Patterns::new()) };
}

/// Forgets the output patterns parsed before: called as a parse of a whole
/// command line starts.
pub fn parsing_afresh() {
    PATTERNS.replace(Patterns::new());
}

/// Parses an output pattern: a regular expression, as `regex` does, that
/// fits in `PATTERN_MAX` and in what the patterns before it left of
/// `PATTERNS_TEXT_MAX` and of `PATTERNS_MAX`.
pub fn output_regex(s: &str) -> Result<regex::bytes::Regex, String> {
    PATTERNS.with_borrow_mut(|patterns| patterns.take(s)?.ok_or_else(|| too_big(s, patterns)))
}

/// Why `s` is refused when it takes more than `patterns` leave, and how it
/// would fit. Unicode's classes are large (`\w` alone takes some 45 KiB),
/// ASCII's a few hundred bytes, so that `(?-u)` at the start of a pattern
/// often takes it down to a few KiB: that is advised where the pattern so
/// changed fits, or else where all of them so changed do.
fn too_big(s: &str, patterns: &Patterns) -> String {
    let why = if patterns.limit() == PATTERN_MAX {
        format!(
            "it takes more than {} MiB compiled, the most one pattern may take",
            PATTERN_MAX >> 20
        )
    } else {
        format!(
            "the output patterns together take more than {} MiB compiled (those before it {})",
            PATTERNS_MAX >> 20,
            in_units(PATTERNS_MAX - patterns.left)
        )
    };
    let ascii = |p: &str| format!("(?-u){p}");
    if let Ok(Some((_, size))) = sized_regex(&ascii(s), patterns.limit()) {
        return format!(
            "{why}; with '(?-u)' at its start, for ASCII classes, it takes {}",
            in_units(size)
        );
    }
    let mut all = Patterns::new();
    let all_fit = !patterns.before.is_empty()
        && patterns
            .before
            .iter()
            .map(String::as_str)
            .chain([s])
            .all(|p| matches!(all.take(&ascii(p)), Ok(Some(_))));
    if all_fit {
        return format!(
            "{why}; with '(?-u)' at the start of each, for ASCII classes, they take {}",
            in_units(PATTERNS_MAX - all.left)
        );
    }
    format!("{why}; fewer repetitions (x{{n}} holds n copies of x) or narrower classes take less")
}

/// A size charged to patterns, in KiB or MiB.
fn in_units(size: usize) -> String {
    if size >= 1 << 20 {
        format!("{} MiB", size >> 20)
    } else {
        format!("{} KiB", size >> 10)
    }
}

/// `s` compiled within a size limit of at most `limit` bytes, and that
/// limit: the smallest of 4 KiB, 8 KiB, ... in which it fits, starting from
/// its length (a pattern takes at least as many bytes compiled as it has
/// characters, comments aside). `None` when it needs more than `limit`,
/// found in one try at `limit` (a compilation past its limit stops there),
/// so that a pattern too large costs one compilation; one that fits is
/// then tried in each size up to its own, which costs at most twice that
/// one, and only one compiled pattern is held at a time.
fn sized_regex(s: &str, limit: usize) -> Result<Option<(regex::bytes::Regex, usize)>, String> {
    match compiled(s, limit) {
        Ok(_) => {}
        Err(regex::Error::CompiledTooBig(_)) => return Ok(None),
        Err(e) => return Err(regex_error(&e)),
    }
    let mut tier: usize = s.len().max(4 << 10).next_power_of_two();
    loop {
        let size = tier.min(limit);
        match compiled(s, size) {
            Ok(r) => return Ok(Some((r, size))),
            Err(regex::Error::CompiledTooBig(_)) if size < limit => {
                tier = tier.saturating_mul(2);
            }
            Err(regex::Error::CompiledTooBig(_)) => return Ok(None),
            Err(e) => return Err(regex_error(&e)),
        }
    }
}

/// `s` compiled within `size_limit`, its lazy DFA given as much room (and
/// at least what the `regex` crate gives by default).
fn compiled(s: &str, size_limit: usize) -> Result<regex::bytes::Regex, regex::Error> {
    regex::bytes::RegexBuilder::new(s)
        .size_limit(size_limit)
        .dfa_size_limit(size_limit.max(DFA_MIN))
        .build()
}

/// Parses a regular expression (the `regex` crate's syntax), matched
/// against the bytes of one line.
pub fn regex(s: &str) -> Result<regex::bytes::Regex, String> {
    regex::bytes::RegexBuilder::new(s)
        .size_limit(16 << 20)
        .build()
        .map_err(|e| regex_error(&e))
}

/// The last line of the `regex` crate's message, which says what is wrong.
fn regex_error(e: &regex::Error) -> String {
    // The crate's message spans several lines; keep the last, which
    // says what is wrong.
    let text = e.to_string();
    let why = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("invalid regex")
        .trim()
        .trim_start_matches("error: ")
        .to_owned();
    format!("invalid regex: {why}")
}

/// Parses a regular expression that has a capture group for the value.
pub fn capturing_regex(s: &str) -> Result<regex::bytes::Regex, String> {
    let r = regex(s)?;
    if r.captures_len() < 2 {
        return Err("needs a capture group, like 'retry in ([0-9]+)'".into());
    }
    Ok(r)
}

/// Parses a file to write at exit: a path whose directory exists.
pub fn output_file(s: &str) -> Result<std::path::PathBuf, String> {
    if s.is_empty() {
        return Err("cannot be empty".into());
    }
    let path = std::path::PathBuf::from(s);
    if path.is_dir() {
        return Err("is a directory".into());
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    if !dir.is_dir() {
        return Err(format!("no such directory '{}'", dir.display()));
    }
    Ok(path)
}

/// Parses `--report` and `--metrics-file`: `/dev/stdout`, `/dev/stderr`, or
/// a file to write at exit whose directory exists, where there is nothing
/// yet or a regular file (never a FIFO, a device or a symbolic link).
pub fn summary_file(s: &str) -> Result<std::path::PathBuf, String> {
    let path = output_file(s)?;
    crate::report::atomic::check(&path)?;
    Ok(path)
}

/// The client counts of `--clients`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCounts(pub Vec<u32>);

/// Parses `--clients`: `10,50,100`, `10-190/10` or `10-190` (step 10), each
/// count from 1 to 10000, at most 1000 of them.
pub fn client_counts(s: &str) -> Result<ClientCounts, String> {
    let count = |t: &str| -> Result<u32, String> {
        match t.trim().parse::<u32>() {
            Ok(n) if (1..=10_000).contains(&n) => Ok(n),
            _ => Err(format!("'{t}' is not a client count from 1 to 10000")),
        }
    };
    let mut out = Vec::new();
    for item in s.split(',') {
        if let Some((range, step)) = item
            .split_once('/')
            .map_or_else(|| item.split_once('-').map(|_| (item, "10")), Some)
        {
            let (lo, hi) = range
                .split_once('-')
                .ok_or_else(|| format!("'{item}' is not a range like 10-190/10"))?;
            let (lo, hi, step) = (count(lo)?, count(hi)?, count(step)?);
            if lo > hi {
                return Err(format!("reversed range '{item}'"));
            }
            out.extend((lo..=hi).step_by(step as usize));
        } else {
            out.push(count(item)?);
        }
        if out.len() > 1000 {
            return Err("at most 1000 client counts".into());
        }
    }
    Ok(ClientCounts(out))
}

/// Parses `--runs`: 1 to 100000.
pub fn runs(s: &str) -> Result<u32, String> {
    let n = whole(s)?;
    u32::try_from(n)
        .ok()
        .filter(|n| (1..=100_000).contains(n))
        .ok_or_else(|| "must be from 1 to 100000".to_owned())
}

/// Parses a budget key.
pub fn budget_key(s: &str) -> Result<String, String> {
    crate::fleet::bucket::check_key(s).map(|()| s.to_owned())
}

/// Parses `--alert-after`: 1 to a million runs in a row.
pub fn alert_after(s: &str) -> Result<u64, String> {
    let most = crate::fleet::streak::MAX_ALERT_AFTER;
    match s.trim().parse::<u64>() {
        Ok(0) => Err(
            "must be at least 1: 0 would never alert (1 alerts on every failed run, as without --alert-after)"
                .into(),
        ),
        Ok(n) if n <= most => Ok(n),
        _ => Err(format!("must be a whole number from 1 to {most}")),
    }
}

/// Parses `--lock-ttl`: a duration from 1s (a lease renewed every third
/// of it needs some time for each renewal) to a day.
pub fn lock_ttl(s: &str) -> Result<Duration, String> {
    let d = duration(s)?;
    if d < Duration::from_secs(1) || d > Duration::from_hours(24) {
        return Err("must be from 1s to 24h".into());
    }
    Ok(d)
}

/// Parses `--once-per`: `hour`, `day`, `week`, `month`, or a DURATION
/// from 1m to a year.
pub fn once_per(s: &str) -> Result<crate::fleet::once::Period, String> {
    use crate::fleet::once::{LONGEST, Period, SHORTEST};
    let t = s.trim();
    if let Some(unit) = Period::unit(&t.to_ascii_lowercase()) {
        return Ok(unit);
    }
    let d = duration(t)
        .map_err(|_| "expected hour, day, week, month or a DURATION such as 6h".to_owned())?;
    if d < SHORTEST || d > LONGEST {
        return Err(
            "a DURATION must be from 1m to a year (365d): a job run more often than once a minute needs no --once-per".into(),
        );
    }
    Ok(Period::Window(d))
}

/// Parses `--breaker-failures`: 1 to a million runs.
pub fn breaker_failures(s: &str) -> Result<u32, String> {
    s.trim()
        .parse::<u32>()
        .ok()
        .filter(|n| (1..=1_000_000).contains(n))
        .ok_or_else(|| "must be a whole number from 1 to 1000000".to_owned())
}

/// Parses `--throttle-window`: a duration from `MIN_WINDOW_MS` to
/// `MAX_WINDOW_MS` (1s to 30d).
pub fn throttle_window(s: &str) -> Result<Duration, String> {
    use crate::fleet::throttle::{MAX_WINDOW_MS, MIN_WINDOW_MS};
    let d = duration(s)?;
    if d < Duration::from_millis(MIN_WINDOW_MS) || d > Duration::from_millis(MAX_WINDOW_MS) {
        return Err("must be from 1s to 30d".into());
    }
    Ok(d)
}

/// Parses `--throttle-k`: a decimal number from 1 to 1000 with at most
/// three decimals, in thousandths.
pub fn throttle_k(s: &str) -> Result<u64, String> {
    use crate::fleet::throttle::MAX_K_MILLI;
    let t = s.trim();
    let (whole, fraction) = t.split_once('.').unwrap_or((t, ""));
    let digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) || t.ends_with('.') {
        return Err("must be a decimal number, like 2 or 1.5".into());
    }
    if fraction.len() > 3 {
        return Err("at most three decimals".into());
    }
    // Past seven digits it is far above the largest: no need to read it.
    let whole = whole.trim_start_matches('0');
    if whole.len() > 7 {
        return Err("at most 1000".into());
    }
    let milli = whole.parse::<u64>().unwrap_or(0) * 1000
        + format!("{fraction:0<3}").parse::<u64>().unwrap_or(0);
    if milli < 1000 {
        return Err(
            "must be at least 1 (below 1, attempts that the backend would accept are skipped)"
                .into(),
        );
    }
    if milli > MAX_K_MILLI {
        return Err("at most 1000".into());
    }
    Ok(milli)
}

/// Parses `--budget-burst`: 1 to a million tokens, in millionths.
pub fn burst(s: &str) -> Result<u64, String> {
    use crate::fleet::bucket::{MAX_BURST, UNIT, parse_tokens};
    let t = parse_tokens(s)?;
    if t < UNIT {
        return Err("must be at least 1".into());
    }
    if t > MAX_BURST * UNIT {
        return Err(format!("at most {MAX_BURST}"));
    }
    Ok(t)
}

/// Parses `--budget-ratio`: 0 to a million tokens, in millionths.
pub fn ratio(s: &str) -> Result<u64, String> {
    use crate::fleet::bucket::{MAX_BURST, UNIT, parse_tokens};
    let t = parse_tokens(s)?;
    if t > MAX_BURST * UNIT {
        return Err(format!("at most {MAX_BURST}"));
    }
    Ok(t)
}

/// Parses `--name`: one non-empty line.
pub fn label(s: &str) -> Result<String, String> {
    if s.trim().is_empty() {
        return Err("cannot be empty".into());
    }
    if s.chars().any(char::is_control) {
        return Err("must be one line without control characters".into());
    }
    Ok(s.to_owned())
}

/// A comma-separated rule list, as given to one `--retry-on`, `--stop-on` or
/// `--success-on`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleList(pub Vec<Rule>);

/// Parses a rule list: `3`, `1-5`, `sig:TERM`, `sig:15`, `timeout`, `unmet`,
/// joined by commas.
pub fn rules(s: &str) -> Result<RuleList, String> {
    s.split(',')
        .map(|item| rule(item.trim()))
        .collect::<Result<_, _>>()
        .map(RuleList)
}

fn rule(item: &str) -> Result<Rule, String> {
    if item.is_empty() {
        return Err("empty item in the list".into());
    }
    if item.eq_ignore_ascii_case("timeout") {
        return Ok(Rule::Timeout);
    }
    if item.eq_ignore_ascii_case("unmet") {
        return Ok(Rule::Unmet);
    }
    if let Some((prefix, name)) = item.split_once(':') {
        if !prefix.eq_ignore_ascii_case("sig") {
            return Err(format!(
                "unknown rule '{item}' (expected a code, a range, sig:NAME, timeout or unmet)"
            ));
        }
        if !signal::DEATH_BY_SIGNAL {
            return Err(format!(
                "'{item}': no process dies by a signal on Windows; one ended by Ctrl-C exits with 0xC000013A, which a rule names as a code"
            ));
        }
        return signal::parse(name.trim())
            .map(Rule::Signal)
            .ok_or_else(|| format!("unknown signal '{name}'"));
    }
    if let Some((lo, hi)) = item.split_once('-') {
        let (lo, hi) = (code(lo.trim(), item)?, code(hi.trim(), item)?);
        if lo > hi {
            return Err(format!("reversed range '{item}'"));
        }
        return Ok(Rule::Codes(lo, hi));
    }
    code(item, item).map(|c| Rule::Codes(c, c))
}

/// The bounds of `--delays`, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelayList(pub Vec<Duration>);

/// Parses `--delays`: durations joined by commas (`1s,5s,30s`), at least
/// one, in any order.
pub fn delay_list(s: &str) -> Result<DelayList, String> {
    s.split(',')
        .map(|item| {
            let item = item.trim();
            if item.is_empty() {
                return Err("empty item in the list".to_owned());
            }
            duration(item).map_err(|why| format!("'{item}': {why}"))
        })
        .collect::<Result<_, _>>()
        .map(DelayList)
}

/// Parses the N of `--until-failure N` and `--consecutive N`: a whole
/// number of runs, at least 1. A word that is not a number is most likely
/// the command, taken for the optional value of `--until-failure`.
pub fn run_count(s: &str) -> Result<u64, String> {
    if !s.is_empty() && !s.chars().all(|c| c.is_ascii_digit()) {
        return Err("expected a number of runs (to give none, put '--' before the command)".into());
    }
    let n = whole(s)?;
    if n == 0 {
        return Err("must be at least 1".into());
    }
    if n > MAX_RETRIES {
        return Err(format!("at most {MAX_RETRIES}"));
    }
    Ok(n)
}

/// Parses an exit code of a rule: decimal, or hexadecimal after `0x`
/// (as Windows writes an NTSTATUS: `0xC0000005`), up to the largest code
/// a process of this system can exit with (`sys::MAX_EXIT_CODE`).
fn code(s: &str, item: &str) -> Result<u32, String> {
    let (digits, radix) = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => (hex, 16),
        None => (s, 10),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err(format!(
            "malformed rule '{item}' (expected a code, a range, sig:NAME, timeout or unmet)"
        ));
    }
    let max = crate::sys::MAX_EXIT_CODE;
    u32::from_str_radix(digits, radix)
        .ok()
        .filter(|&c| c <= max)
        .ok_or_else(|| format!("exit code out of range in '{item}' (codes are 0 to {max})"))
}

/// The largest `--output-limit`: output kept beyond it is no longer
/// something to read in a mail.
pub const MAX_OUTPUT_LIMIT: u64 = 1 << 30;

/// Parses a size in bytes: a whole number with an optional unit (see
/// `bytes`), from 2 bytes to 1 GiB (`--output-limit`).
pub fn size(s: &str) -> Result<u64, String> {
    match bytes(s)? {
        Some(bytes) if (2..=MAX_OUTPUT_LIMIT).contains(&bytes) => Ok(bytes),
        Some(bytes) if bytes < 2 => Err("at least 2 bytes: the head and the tail".into()),
        _ => Err("at most 1GiB".into()),
    }
}

/// The largest `--ping-body-limit`: the most a monitor is known to keep of
/// a check-in's body is far less.
pub const MAX_PING_BODY_LIMIT: u64 = 10_000_000;

/// Parses `--ping-body-limit`: a size (as `size` reads it) from 0 to
/// `MAX_PING_BODY_LIMIT`.
pub fn ping_body_limit(s: &str) -> Result<u64, String> {
    match bytes(s)? {
        Some(bytes) if bytes <= MAX_PING_BODY_LIMIT => Ok(bytes),
        _ => Err("at most 10MB (10000000 bytes)".into()),
    }
}

/// A whole number of bytes, or of KB, KiB, MB, MiB, GB or GiB (K, M and G
/// alone are KiB, MiB and GiB); `None` when it overflows.
fn bytes(s: &str) -> Result<Option<u64>, String> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err("a size cannot be negative".into());
    }
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = t.split_at(digits);
    let unit: u64 = match unit.trim() {
        "" | "B" => 1,
        "KB" | "kB" => 1000,
        "K" | "KiB" | "k" => 1 << 10,
        "MB" => 1_000_000,
        "M" | "MiB" => 1 << 20,
        "GB" => 1_000_000_000,
        "G" | "GiB" => 1 << 30,
        other => {
            return Err(format!(
                "'{}' is not a unit of size: use B, KB, KiB, MB, MiB, GB or GiB, as in 512KiB",
                crate::cli::quotable(other)
            ));
        }
    };
    match number.parse::<u64>() {
        Ok(n) => Ok(n.checked_mul(unit)),
        // Digits past u64: too large, as an overflow of the unit is.
        Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => Ok(None),
        Err(_) => Err(
            "a size is a whole number of bytes, KB, KiB, MB, MiB, GB or GiB, as in 512KiB".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_count_kb_in_thousands_and_kib_in_1024s() {
        assert_eq!(size("10KB"), Ok(10_000));
        assert_eq!(size("10KiB"), Ok(10_240));
        assert_eq!(size("2MB"), Ok(2_000_000));
        assert_eq!(ping_body_limit("10000"), Ok(10_000));
        assert_eq!(ping_body_limit("0"), Ok(0));
        assert_eq!(ping_body_limit("10MB"), Ok(MAX_PING_BODY_LIMIT));
        assert!(ping_body_limit("10MiB").is_err());
        assert_eq!(
            ping_body_limit("99999999999999999999"),
            Err("at most 10MB (10000000 bytes)".into())
        );
        assert_eq!(size("99999999999999999999KB"), Err("at most 1GiB".into()));
        assert_eq!(size("-1KB"), Err("a size cannot be negative".into()));
        assert!(
            ping_body_limit("5 parsecs")
                .unwrap_err()
                .contains("not a unit of size")
        );
    }

    #[test]
    fn a_pattern_is_charged_the_smallest_limit_it_fits_in() {
        let (r, size) = sized_regex("ab+c", 1 << 20).unwrap().unwrap();
        assert!(r.is_match(b"xabbbc"));
        assert_eq!(size, 4 << 10);
        let (_, size) = sized_regex(r"\w{10}", 16 << 20).unwrap().unwrap();
        assert!((8 << 10..=4 << 20).contains(&size), "{size}");
        assert!(sized_regex(r"\w{500}", PATTERN_MAX).unwrap().is_none());
        // \w 64 times: some 3 MiB.
        let (_, size) = sized_regex(r"\w{64}", PATTERN_MAX).unwrap().unwrap();
        assert_eq!(size, 4 << 20);
        assert!(
            sized_regex("(", PATTERNS_MAX)
                .unwrap_err()
                .starts_with("invalid regex: ")
        );
    }
    #[test]
    fn a_pattern_too_large_even_with_ascii_classes_is_told_what_takes_room() {
        parsing_afresh();
        assert_eq!(
            output_regex(r"\pL{1000}").unwrap_err(),
            "it takes more than 8 MiB compiled, the most one pattern may take; \
             fewer repetitions (x{n} holds n copies of x) or narrower classes take less"
        );
        parsing_afresh();
    }

    #[test]
    fn output_patterns_are_charged_their_length_too() {
        parsing_afresh();
        let long = format!("(?x)a#{}", "x".repeat(PATTERNS_TEXT_MAX / 2 - 6));
        assert!(output_regex(&long).is_ok());
        assert!(output_regex(&long).is_ok());
        assert_eq!(
            output_regex("x").unwrap_err(),
            "the output patterns together are longer than 64 KiB"
        );
        parsing_afresh();
        assert!(output_regex("x").is_ok());
    }

    use proptest::prelude::*;

    #[test]
    fn durations_need_units_and_sane_sizes() {
        assert_eq!(duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(duration("1h 30m"), Ok(Duration::from_mins(90)));
        assert_eq!(duration("0s"), Ok(Duration::ZERO));
        assert!(duration("100y").is_ok());
        assert_eq!(
            duration("100").unwrap_err(),
            "a duration needs a unit, like 100ms or 100s"
        );
        assert_eq!(
            duration("0.0").unwrap_err(),
            "a duration needs a unit (ms, s, m, h or d)"
        );
        for bad in [
            "",
            " ",
            "-5s",
            "NaN",
            "inf",
            "1e3s",
            "10000y",
            "1.5ns",
            "0.5ns",
            "5 parsecs",
            "18446744073709551615s 1000ms",
            "18446744073709551615s",
            "9999999999999y",
        ] {
            assert!(duration(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn factors_are_finite_and_at_least_one() {
        assert_eq!(factor("2"), Ok(2.0));
        assert_eq!(factor("1"), Ok(1.0));
        assert_eq!(factor("1.5"), Ok(1.5));
        for bad in ["0.5", "NaN", "inf", "-inf", "1e400", "", "two", "-2"] {
            assert!(factor(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn counts_are_whole_and_bounded() {
        assert_eq!(retries("0"), Ok(0));
        assert_eq!(retries("6"), Ok(6));
        assert_eq!(attempts("1"), Ok(1));
        for bad in [
            "-1",
            "1.5",
            "",
            "x",
            "1e3",
            "99999999999999999999",
            "1000000001",
        ] {
            assert!(retries(bad).is_err(), "{bad:?}");
        }
        assert!(attempts("0").is_err());
    }

    // Windows refuses `sig:` rules (tests/integration/windows.rs).
    #[cfg(unix)]
    #[test]
    fn rule_lists_parse_every_item() {
        assert_eq!(
            rules("1, 3-5,sig:TERM,sig:9,SIG:sigint,timeout,Unmet"),
            Ok(RuleList(vec![
                Rule::Codes(1, 1),
                Rule::Codes(3, 5),
                Rule::Signal(libc::SIGTERM),
                Rule::Signal(libc::SIGKILL),
                Rule::Signal(libc::SIGINT),
                Rule::Timeout,
                Rule::Unmet,
            ]))
        );
        for bad in [
            "", "1,", "5-1", "256", "0-300", "-1", "sig:FOO", "sig:", "foo", "1-", "x:1", "1.5",
        ] {
            assert!(rules(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn throttle_options_are_bounded() {
        assert_eq!(throttle_window("2m"), Ok(Duration::from_mins(2)));
        assert_eq!(throttle_window("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(throttle_window("30d"), Ok(Duration::from_hours(720)));
        for bad in ["10ms", "999ms", "30d 1ms", "31d", "0s", "2", ""] {
            assert!(throttle_window(bad).is_err(), "{bad:?}");
        }
        assert_eq!(throttle_k("2"), Ok(2000));
        assert_eq!(throttle_k("1"), Ok(1000));
        assert_eq!(throttle_k("1.5"), Ok(1500));
        assert_eq!(throttle_k("1.125"), Ok(1125));
        assert_eq!(throttle_k(" 002.50 "), Ok(2500));
        assert_eq!(throttle_k("1000"), Ok(1_000_000));
        assert_eq!(throttle_k("1000.000"), Ok(1_000_000));
        for (bad, why) in [
            ("0.5", "at least 1"),
            ("0.999", "at least 1"),
            ("0", "at least 1"),
            ("1000.001", "at most 1000"),
            ("99999999999999999999999", "at most 1000"),
            ("1.2345", "three decimals"),
            ("", "decimal number"),
            (".5", "decimal number"),
            ("2.", "decimal number"),
            ("-2", "decimal number"),
            ("+2", "decimal number"),
            ("1e3", "decimal number"),
            ("NaN", "decimal number"),
            ("inf", "decimal number"),
            ("1.5.1", "decimal number"),
            ("٣", "decimal number"),
        ] {
            let refused = throttle_k(bad).unwrap_err();
            assert!(refused.contains(why), "{bad:?}: {refused}");
        }
    }

    proptest! {
        #[test]
        fn no_value_parser_panics(s in "\\PC{0,40}") {
            let _ = duration(&s);
            let _ = factor(&s);
            let _ = retries(&s);
            let _ = attempts(&s);
            let _ = seed(&s);
            let _ = label(&s);
            let _ = rules(&s);
            let _ = signal(&s);
            let _ = regex(&s);
            let _ = capturing_regex(&s);
            let _ = output_file(&s);
            let _ = summary_file(&s);
            let _ = budget_key(&s);
            let _ = throttle_window(&s);
            let _ = throttle_k(&s);
            let _ = client_counts(&s);
            let _ = runs(&s);
            let _ = burst(&s);
            let _ = ratio(&s);
            let _ = delay_list(&s);
            let _ = run_count(&s);
        }

        #[test]
        fn no_duration_made_of_numbers_and_units_panics(
            parts in proptest::collection::vec((0u64..=u64::MAX, "(ns|us|ms|s|m|h|d|w|M|y)"), 1..4)
        ) {
            let s: Vec<String> = parts.iter().map(|(n, u)| format!("{n}{u}")).collect();
            let _ = duration(&s.join(" "));
        }
    }
}
