//! Turns the outcome of one attempt into success, retry or stop, by the rules
//! of `--stop-on`, `--success-on` and `--retry-on`, what its output showed,
//! and the preset. Pure: no processes here.

use std::ffi::OsString;
use std::fmt;
use std::time::{Duration, SystemTime};

use crate::duration::MAX_DURATION;
use crate::exit::code_text;
use crate::signal;

/// How an error reads in a line (kept beside the OS layer it reads).
pub use crate::sys::{describe, os_error};

/// How a process ended, as its parent saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Exited with this code.
    Code(u32),
    /// Killed by this signal.
    Signal(i32),
}

/// How one attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Exited with this code.
    Exited(u32),
    /// Killed by this signal (not by backoff's timeout).
    Signaled(i32),
    /// Ran past a time limit and was stopped by backoff: how the process
    /// itself ended then (for `--preserve-status`), and which limit.
    TimedOut(Status, Limit),
    /// Could not be started: the program was not found.
    NotFound,
    /// Could not be started for another reason (permissions, format, ...).
    CannotRun,
    /// Ended in a way that counts as success (mostly an exit code), without
    /// printing a line that `--until-output` asks for: the condition is not
    /// met. How the process ended.
    Unmet(Status),
    /// Could not be started because backoff itself lacked a resource (a
    /// process slot, a descriptor, memory): this OS error number. Not the
    /// command's failure, and worth retrying.
    Unstarted(i32),
    /// Not started: the adaptive throttle (`--throttle`) skipped it. A
    /// failure worth retrying.
    Throttled,
}

impl fmt::Display for Outcome {
    /// The form used in reports and in `BACKOFF_LAST_STATUS`'s neighbours:
    /// `exit 3`, `signal TERM`, `timeout`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Outcome::Exited(c) => write!(f, "exit {}", code_text(c)),
            Outcome::Unmet(Status::Code(c)) => {
                write!(f, "exit {}, condition not met", code_text(c))
            }
            Outcome::Unmet(Status::Signal(s)) => {
                write!(f, "signal {}, condition not met", signal::short_name(s))
            }
            Outcome::Signaled(s) => write!(f, "signal {}", signal::short_name(s)),
            Outcome::TimedOut(_, Limit::Time) => f.write_str("timeout"),
            Outcome::TimedOut(_, Limit::Idle) => f.write_str("idle timeout"),
            Outcome::NotFound => f.write_str("command not found"),
            Outcome::CannotRun => f.write_str("command cannot be run"),
            Outcome::Unstarted(e) => write!(f, "backoff could not start it: {}", os_error(e)),
            Outcome::Throttled => f.write_str("throttled"),
        }
    }
}

impl Outcome {
    /// The value of `BACKOFF_LAST_STATUS` for the next attempt: the exit
    /// code, `sig:NAME`, or `timeout`.
    pub fn env_value(self) -> String {
        match self {
            Outcome::Exited(c) => c.to_string(),
            Outcome::Unmet(_) => "unmet".to_owned(),
            Outcome::Signaled(s) => format!("sig:{}", signal::short_name(s)),
            Outcome::TimedOut(..) => "timeout".to_owned(),
            Outcome::NotFound => "127".to_owned(),
            Outcome::CannotRun => "126".to_owned(),
            Outcome::Unstarted(_) => "125".to_owned(),
            Outcome::Throttled => "throttled".to_owned(),
        }
    }
}

/// Which time limit an attempt ran past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// `--timeout`, or the time left before `--max-time`.
    Time,
    /// `--idle-timeout`: it wrote nothing to stdout or stderr for that long.
    Idle,
}

impl Limit {
    /// The name used in JSON events and the run report.
    pub fn name(self) -> &'static str {
        match self {
            Limit::Time => "time",
            Limit::Idle => "idle",
        }
    }
}

/// What the output of one attempt showed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
// Each flag is a fact of its own about the output, not a state in disguise.
#[allow(clippy::struct_excessive_bools)]
pub struct Observed {
    /// A `--retry-if-output` pattern matched a line.
    pub retry_match: bool,
    /// A `--stop-if-output` pattern matched a line.
    pub stop_match: bool,
    /// The last `Retry-After` value seen, as printed.
    pub retry_after: Option<String>,
    /// The last HTTP status seen (curl's `--fail` line or a status line).
    pub http_status: Option<u16>,
    /// Whether `retry_after` came from `--retry-after-pattern`, whose value
    /// may also be a Unix time.
    pub retry_after_pattern: bool,
    /// The last response's rate-limit reset field (`X-RateLimit-Reset`,
    /// `RateLimit-Reset`).
    pub rate_reset: Option<Reset>,
    /// The last response's count of requests left (`X-RateLimit-Remaining`,
    /// `RateLimit-Remaining`).
    pub rate_remaining: Option<u64>,
    /// The resets of the policies of the last response's `RateLimit` field
    /// with no request left: the longest of them.
    pub policies_spent: Longest,
    /// The resets of its policies that say nothing of the requests left.
    pub policies_unsaid: Longest,
    /// The delay the server's hints ask for, as of the attempt's end.
    pub hint: Option<Hint>,
    /// An `--until-output` pattern matched a line.
    pub condition_met: bool,
    /// `--preset git`: a line told of a failure that may heal.
    pub transient: bool,
    /// `--preset git`: a line told of a failure that does not heal.
    pub permanent: bool,
}

/// A server's hint: the wait it asks for, and where it was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hint {
    /// The wait asked for (before jitter).
    pub wait: Duration,
    /// Where it was found.
    pub source: HintSource,
}

/// Where a server's hint was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HintSource {
    /// A `Retry-After:` header.
    RetryAfter,
    /// What `--retry-after-pattern` found.
    Pattern,
    /// A rate limit's reset, with no request left.
    RateLimit,
}

impl HintSource {
    /// The name used in JSON events and the run report.
    pub fn name(self) -> &'static str {
        match self {
            HintSource::RetryAfter => "retry-after",
            HintSource::Pattern => "pattern",
            HintSource::RateLimit => "rate-limit",
        }
    }
}

impl Observed {
    /// Whether the server said that no request is left until the reset.
    pub fn rate_limited(&self) -> bool {
        self.rate_remaining == Some(0) || self.policies_spent.is_some()
    }

    /// Forgets what the headers of a response said: a new response began
    /// (a redirect was followed, or a `100 Continue` came first), and only
    /// the last response's headers count. What `--retry-after-pattern`
    /// found is no header, and stays.
    pub fn new_response(&mut self) {
        if !self.retry_after_pattern {
            self.retry_after = None;
        }
        self.rate_reset = None;
        self.rate_remaining = None;
        self.policies_spent = Longest::default();
        self.policies_unsaid = Longest::default();
    }

    /// The wait the rate-limit fields ask for: the reset of the policy with
    /// the longest wait among those with no request left, and, on a 429 or
    /// 503, among those that do not say how many are left.
    pub fn rate_limit_wait(&self, now: SystemTime) -> Option<Duration> {
        let refused = matches!(self.http_status, Some(429 | 503));
        let mut longest = self.policies_spent;
        if refused {
            longest.merge(self.policies_unsaid);
        }
        if let Some(reset) = self.rate_reset
            && (self.rate_remaining == Some(0) || (refused && self.rate_remaining.is_none()))
        {
            longest.add(reset);
        }
        longest.wait(now)
    }
}

/// When a rate limit resets, as the server said it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reset {
    /// After this long.
    After(Duration),
    /// At this Unix time.
    At(Duration),
}

impl Reset {
    /// The wait until the reset, seen at `now`; a time past asks for none.
    pub fn wait(self, now: SystemTime) -> Duration {
        match self {
            Reset::After(d) => d,
            Reset::At(at) => {
                let now = now
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .unwrap_or_default();
                at.saturating_sub(now)
            }
        }
        .min(MAX_DURATION)
    }
}

/// The latest of some resets, in bounded memory however many there are: a
/// delay and a Unix time are compared only once the time is known.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Longest {
    after: Option<Duration>,
    at: Option<Duration>,
}

impl Longest {
    /// Adds a reset.
    pub fn add(&mut self, reset: Reset) {
        let (slot, d) = match reset {
            Reset::After(d) => (&mut self.after, d),
            Reset::At(d) => (&mut self.at, d),
        };
        *slot = Some(slot.map_or(d, |old| old.max(d)));
    }

    /// Adds the resets of `other`.
    pub fn merge(&mut self, other: Longest) {
        other
            .after
            .map(Reset::After)
            .into_iter()
            .chain(other.at.map(Reset::At))
            .for_each(|r| self.add(r));
    }

    /// Whether any reset was added.
    pub fn is_some(&self) -> bool {
        self.after.is_some() || self.at.is_some()
    }

    /// The longest wait of the resets, seen at `now`.
    pub fn wait(&self, now: SystemTime) -> Option<Duration> {
        let after = self.after.map(|d| Reset::After(d).wait(now));
        let at = self.at.map(|d| Reset::At(d).wait(now));
        after.max(at)
    }
}

/// One item of a rule list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Exit codes in this inclusive range.
    Codes(u32, u32),
    /// Death by this signal.
    Signal(i32),
    /// The attempt timed out.
    Timeout,
    /// The attempt's exit counted as success, but `--until-output` found
    /// no line it asks for.
    Unmet,
}

impl Rule {
    /// Whether this rule matches the outcome.
    pub fn matches(self, outcome: Outcome) -> bool {
        match (self, outcome) {
            (Rule::Codes(lo, hi), Outcome::Exited(c)) => (lo..=hi).contains(&c),
            (Rule::Signal(s), Outcome::Signaled(t)) => s == t,
            (Rule::Timeout, Outcome::TimedOut(..)) | (Rule::Unmet, Outcome::Unmet(_)) => true,
            _ => false,
        }
    }

    /// Whether two rules can match the same outcome.
    pub fn overlaps(self, other: Rule) -> bool {
        match (self, other) {
            (Rule::Codes(a, b), Rule::Codes(c, d)) => a <= d && c <= b,
            (x, y) => x == y,
        }
    }

    /// Whether every outcome this rule matches is matched by one of
    /// `rules`: then, were `rules` checked first, it could never match.
    pub fn covered_by(self, rules: &[Rule]) -> bool {
        match self {
            Rule::Codes(lo, hi) => (lo..=hi).all(|c| {
                rules
                    .iter()
                    .any(|r| matches!(*r, Rule::Codes(a, b) if (a..=b).contains(&c)))
            }),
            rule => rules.contains(&rule),
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Rule::Codes(lo, hi) if lo == hi => write!(f, "{lo}"),
            Rule::Codes(lo, hi) => write!(f, "{lo}-{hi}"),
            Rule::Signal(s) => write!(f, "sig:{}", signal::short_name(s)),
            Rule::Timeout => f.write_str("timeout"),
            Rule::Unmet => f.write_str("unmet"),
        }
    }
}

/// What to do after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The attempt succeeded: stop with status 0.
    Success,
    /// The attempt failed in a way worth retrying.
    Retry,
    /// The attempt failed in a way not worth retrying; the reason says why.
    Stop(StopReason),
}

/// Why a failed attempt is not retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The command could not be started.
    CannotStart,
    /// A `--stop-on` rule matched.
    StopRule,
    /// Death by SIGINT or SIGPIPE, never retried by default.
    NeverRetried,
    /// `--retry-on` was given and did not match.
    NotInRetryOn,
    /// `--retry-if-output` was given (and no `--retry-on`), and no line
    /// matched it.
    NoRetryOutput,
    /// A `--stop-if-output` pattern matched.
    StopOutput,
    /// The preset knows this failure is not transient.
    Preset(Preset),
    /// The preset knows this HTTP status is not worth retrying.
    HttpStatus(u16),
    /// The request is not idempotent (a POST or PATCH without an
    /// `Idempotency-Key`), and the failure leaves it unknown whether the
    /// server acted on it: it is not sent again.
    NotIdempotent,
}

impl StopReason {
    /// The name used in JSON events.
    pub fn name(self) -> &'static str {
        match self {
            StopReason::CannotStart => "cannot_start",
            StopReason::StopRule => "stop_on",
            StopReason::NeverRetried => "never_retried",
            StopReason::NotInRetryOn => "not_in_retry_on",
            StopReason::NoRetryOutput => "no_retry_output_match",
            StopReason::StopOutput => "stop_if_output",
            StopReason::Preset(_) => "preset",
            StopReason::HttpStatus(_) => "http_status",
            StopReason::NotIdempotent => "not_idempotent",
        }
    }
}

/// Rules for a well-known command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// HTTP retry semantics for curl: transient transport failures and
    /// HTTP 408, 425, 429 and 5xx are retried, other 4xx are not.
    Curl,
    /// The same for wget: network failures (exit 4), protocol errors (7),
    /// and server errors (8) of HTTP 408, 425, 429 and 5xx are retried.
    Wget,
    /// git's transient failures (the network, the server, a connection cut
    /// short, HTTP 429 and 5xx) are retried; a missing repository, failed
    /// authentication or a conflict is not.
    Git,
}

/// Where the preset of a run came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `--preset NAME`.
    Option,
    /// The program's name: the command is curl, wget or git.
    Program,
}

impl Source {
    /// The name used in JSON events and the run report.
    pub fn name(self) -> &'static str {
        match self {
            Source::Option => "option",
            Source::Program => "program",
        }
    }
}

/// The preset a run uses, and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Applied {
    /// The preset.
    pub preset: Preset,
    /// Where it came from.
    pub from: Source,
}

/// curl exit codes of transient failures: proxy (5), resolve (6), connect
/// (7), HTTP/2 framing (16), partial file (18), operation timeout (28), TLS
/// connect (35), empty reply (52), send (55), receive (56), HTTP/2 stream
/// (92), HTTP/3 (95).
pub const CURL_TRANSIENT: [u32; 12] = [5, 6, 7, 16, 18, 28, 35, 52, 55, 56, 92, 95];

/// curl exit codes of failures before the request was sent: proxy (5) and
/// host not resolved (6), no connection (7), TLS handshake failed (35).
pub const CURL_UNSENT: [u32; 4] = [5, 6, 7, 35];

/// Whether `program` is the program `name` (`/usr/bin/wget`: `wget`).
pub fn is_program(program: &OsString, name: &str) -> bool {
    std::path::Path::new(program)
        .file_name()
        .is_some_and(|n| n == name)
}

/// HTTP statuses worth retrying: request timeout, too early, too many
/// requests, and every server error.
pub fn http_retryable(status: u16) -> bool {
    matches!(status, 408 | 425 | 429 | 500..=599)
}

impl Preset {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Curl => "curl",
            Preset::Wget => "wget",
            Preset::Git => "git",
        }
    }

    /// The preset of the program `program`, by its file name however it
    /// is given (`curl`, `/usr/bin/curl`, `./wget`), if it has one.
    pub fn of_program(program: &OsString) -> Option<Preset> {
        [Preset::Curl, Preset::Wget, Preset::Git]
            .into_iter()
            .find(|p| is_program(program, p.name()))
    }

    /// The preset's verdict on an outcome, if it has one. With `guard` (a
    /// request not to be repeated), only failures where the request surely
    /// was not processed are retried.
    fn verdict(self, outcome: Outcome, seen: &Observed, guard: bool) -> Option<Verdict> {
        if guard {
            let safe = match outcome {
                Outcome::Exited(22) => {
                    matches!(seen.http_status, Some(425 | 429 | 503))
                        || seen
                            .http_status
                            .is_some_and(|s| !http_retryable(s) && s != 403)
                        || (seen.http_status == Some(403) && seen.rate_limited())
                }
                Outcome::Exited(c) => CURL_UNSENT.contains(&c) || !CURL_TRANSIENT.contains(&c),
                Outcome::TimedOut(..) => false,
                _ => true,
            };
            if !safe {
                return Some(Verdict::Stop(StopReason::NotIdempotent));
            }
        }
        match (self, outcome) {
            // An HTTP error: curl's exit 22 with --fail, wget's 8 (the server
            // answered with an error). The status decides; with none
            // visible (curl -f without -S), retry.
            (Preset::Curl, Outcome::Exited(22)) | (Preset::Wget, Outcome::Exited(8)) => {
                Some(http_verdict(seen))
            }
            (Preset::Curl, Outcome::Exited(c)) if CURL_TRANSIENT.contains(&c) => {
                Some(Verdict::Retry)
            }
            // wget's network failure and protocol error.
            (Preset::Wget, Outcome::Exited(4 | 7)) => Some(Verdict::Retry),
            // git says what failed: words that do not heal stop, an HTTP
            // error goes by its status, words that may heal are retried.
            (Preset::Git, Outcome::Exited(c)) if c != 0 => Some(if seen.permanent {
                Verdict::Stop(StopReason::Preset(self))
            } else if seen.http_status.is_some() {
                http_verdict(seen)
            } else if seen.transient {
                Verdict::Retry
            } else {
                Verdict::Stop(StopReason::Preset(self))
            }),
            (_, Outcome::Exited(_)) => Some(Verdict::Stop(StopReason::Preset(self))),
            _ => None,
        }
    }
}

/// The verdict on an HTTP error by its status: 408, 425, 429 and 5xx are
/// retried, and so is a 403 with no request left (GitHub's rule for a rate
/// limit, retried at the reset); any other 4xx stops.
fn http_verdict(seen: &Observed) -> Verdict {
    match seen.http_status {
        Some(403) if seen.rate_limited() => Verdict::Retry,
        Some(s) if (400..500).contains(&s) && !http_retryable(s) => {
            Verdict::Stop(StopReason::HttpStatus(s))
        }
        _ => Verdict::Retry,
    }
}

/// The classification rules of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    /// `--stop-on`.
    pub stop_on: Vec<Rule>,
    /// `--success-on`; empty means exit code 0.
    pub success_on: Vec<Rule>,
    /// `--retry-on`; empty means the default: every other outcome except death
    /// by SIGINT or SIGPIPE.
    pub retry_on: Vec<Rule>,
    /// Whether `--retry-if-output` patterns were given (they, like
    /// `--retry-on`, turn the default of retrying everything off).
    pub retry_output: bool,
    /// `--preset`.
    pub preset: Option<Preset>,
    /// The preset's request must not be repeated blindly (a POST without an
    /// `Idempotency-Key`, and no `--idempotent`).
    pub not_idempotent: bool,
    /// `--until-output` was given: an exit that counts as success must also
    /// have printed a line it asks for.
    pub until_output: bool,
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            stop_on: Vec::new(),
            success_on: vec![Rule::Codes(0, 0)],
            retry_on: Vec::new(),
            retry_output: false,
            preset: None,
            not_idempotent: false,
            until_output: false,
        }
    }
}

impl Rules {
    /// The outcome of an attempt as the rules see it: one that counts as
    /// success without the line `--until-output` asks for is `Unmet`.
    pub fn judged(&self, outcome: Outcome, seen: &Observed) -> Outcome {
        if !self.until_output
            || seen.condition_met
            || !self.success_on.iter().any(|r| r.matches(outcome))
        {
            return outcome;
        }
        match outcome {
            Outcome::Exited(c) => Outcome::Unmet(Status::Code(c)),
            Outcome::Signaled(s) => Outcome::Unmet(Status::Signal(s)),
            Outcome::TimedOut(st, _) => Outcome::Unmet(st),
            o => o,
        }
    }

    /// Classifies an outcome with what its output showed, in the order of
    /// the specification: could not start, stop rules, success rules, retry
    /// rules, the preset, otherwise the default.
    pub fn classify(&self, outcome: Outcome, seen: &Observed) -> Verdict {
        if matches!(outcome, Outcome::NotFound | Outcome::CannotRun) {
            return Verdict::Stop(StopReason::CannotStart);
        }
        // backoff's own trouble says nothing of the command: the rules,
        // which are about the command, do not apply.
        if let Outcome::Unstarted(_) = outcome {
            return Verdict::Retry;
        }
        let any = |rules: &[Rule]| rules.iter().any(|r| r.matches(outcome));
        if any(&self.stop_on) {
            return Verdict::Stop(StopReason::StopRule);
        }
        if seen.stop_match {
            return Verdict::Stop(StopReason::StopOutput);
        }
        if any(&self.success_on) {
            return Verdict::Success;
        }
        if any(&self.retry_on) || seen.retry_match {
            return Verdict::Retry;
        }
        if let Some(v) = self
            .preset
            .and_then(|p| p.verdict(outcome, seen, self.not_idempotent))
        {
            return v;
        }
        if !self.retry_on.is_empty() {
            return Verdict::Stop(StopReason::NotInRetryOn);
        }
        // `--retry-if-output` is about failures; an unmet condition is
        // retried as without it.
        if self.retry_output && !matches!(outcome, Outcome::Unmet(_)) {
            return Verdict::Stop(StopReason::NoRetryOutput);
        }
        match outcome {
            Outcome::Signaled(signal::INT | signal::PIPE) => {
                Verdict::Stop(StopReason::NeverRetried)
            }
            _ => Verdict::Retry,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Outcome::{CannotRun, Exited, NotFound, Signaled};
    const TIMED_OUT: Outcome = Outcome::TimedOut(Status::Signal(libc::SIGTERM), Limit::Time);

    #[test]
    fn a_success_without_the_wanted_line_is_unmet_and_classified_on() {
        let rules = Rules {
            until_output: true,
            ..Rules::default()
        };
        let none = Observed::default();
        let met = Observed {
            condition_met: true,
            ..Observed::default()
        };
        assert_eq!(
            rules.judged(Exited(0), &none),
            Outcome::Unmet(Status::Code(0))
        );
        assert_eq!(rules.judged(Exited(0), &met), Exited(0));
        assert_eq!(
            rules.judged(Exited(2), &none),
            Exited(2),
            "a failure stays one"
        );
        assert_eq!(Rules::default().judged(Exited(0), &none), Exited(0));
        assert_eq!(
            rules.classify(Outcome::Unmet(Status::Code(0)), &none),
            Verdict::Retry
        );
        let stop = Rules {
            stop_on: vec![Rule::Unmet],
            ..rules.clone()
        };
        assert_eq!(
            stop.classify(Outcome::Unmet(Status::Code(0)), &none),
            Verdict::Stop(StopReason::StopRule)
        );
        let output = Rules {
            retry_output: true,
            ..rules.clone()
        };
        assert_eq!(
            output.classify(Outcome::Unmet(Status::Code(0)), &none),
            Verdict::Retry
        );
        assert_eq!(
            output.classify(Exited(1), &none),
            Verdict::Stop(StopReason::NoRetryOutput)
        );
        let only = Rules {
            retry_on: vec![Rule::Codes(7, 7)],
            ..rules
        };
        assert_eq!(
            only.classify(Outcome::Unmet(Status::Code(0)), &none),
            Verdict::Stop(StopReason::NotInRetryOn)
        );
        assert_eq!(Outcome::Unmet(Status::Code(0)).env_value(), "unmet");
    }

    #[test]
    fn a_request_not_to_repeat_is_retried_only_where_it_surely_was_not_processed() {
        let rules = Rules {
            preset: Some(Preset::Curl),
            not_idempotent: true,
            ..Rules::default()
        };
        let status = |s| Observed {
            http_status: Some(s),
            ..Observed::default()
        };
        let none = Observed::default();
        for (outcome, seen) in [
            (Exited(7), &none),
            (Exited(6), &none),
            (Exited(35), &none),
            (Exited(22), &status(503)),
            (Exited(22), &status(429)),
        ] {
            assert_eq!(rules.classify(outcome, seen), Verdict::Retry, "{outcome:?}");
        }
        for (outcome, seen) in [
            (Exited(28), &none),
            (Exited(52), &none),
            (Exited(56), &none),
            (Exited(22), &status(500)),
            (Exited(22), &status(502)),
            (Exited(22), &none),
            (TIMED_OUT, &none),
        ] {
            assert_eq!(
                rules.classify(outcome, seen),
                Verdict::Stop(StopReason::NotIdempotent),
                "{outcome:?}"
            );
        }
        assert_eq!(
            rules.classify(Exited(22), &status(404)),
            Verdict::Stop(StopReason::HttpStatus(404))
        );
    }

    #[test]
    fn backoffs_own_failure_to_start_is_retried_whatever_the_rules() {
        let strict = Rules {
            retry_on: vec![Rule::Codes(3, 3)],
            stop_on: vec![Rule::Codes(0, 255)],
            ..Rules::default()
        };
        for rules in [Rules::default(), strict] {
            assert_eq!(
                rules.classify(Outcome::Unstarted(libc::EMFILE), &Observed::default()),
                Verdict::Retry
            );
        }
    }

    #[test]
    fn defaults_succeed_on_zero_and_retry_everything_else_but_int_and_pipe() {
        let r = Rules::default();
        assert_eq!(
            r.classify(Exited(0), &Observed::default()),
            Verdict::Success
        );
        assert_eq!(r.classify(Exited(1), &Observed::default()), Verdict::Retry);
        assert_eq!(
            r.classify(Exited(255), &Observed::default()),
            Verdict::Retry
        );
        assert_eq!(
            r.classify(Signaled(libc::SIGTERM), &Observed::default()),
            Verdict::Retry
        );
        assert_eq!(
            r.classify(Signaled(9), &Observed::default()),
            Verdict::Retry
        );
        assert_eq!(r.classify(TIMED_OUT, &Observed::default()), Verdict::Retry);
        assert_eq!(
            r.classify(Signaled(libc::SIGINT), &Observed::default()),
            Verdict::Stop(StopReason::NeverRetried)
        );
        assert_eq!(
            r.classify(Signaled(signal::PIPE), &Observed::default()),
            Verdict::Stop(StopReason::NeverRetried)
        );
    }

    #[test]
    fn spawn_failures_are_never_retried_whatever_the_rules() {
        let r = Rules {
            retry_on: vec![Rule::Codes(0, 255)],
            success_on: vec![Rule::Codes(0, 255)],
            ..Rules::default()
        };
        for o in [NotFound, CannotRun] {
            assert_eq!(
                r.classify(o, &Observed::default()),
                Verdict::Stop(StopReason::CannotStart)
            );
        }
    }

    #[test]
    fn stop_beats_success_beats_retry() {
        let r = Rules {
            stop_on: vec![Rule::Codes(3, 3)],
            success_on: vec![Rule::Codes(0, 0), Rule::Codes(3, 4)],
            retry_on: vec![Rule::Codes(1, 10)],
            ..Rules::default()
        };
        assert_eq!(
            r.classify(Exited(3), &Observed::default()),
            Verdict::Stop(StopReason::StopRule)
        );
        assert_eq!(
            r.classify(Exited(4), &Observed::default()),
            Verdict::Success
        );
        assert_eq!(r.classify(Exited(5), &Observed::default()), Verdict::Retry);
        assert_eq!(
            r.classify(Exited(11), &Observed::default()),
            Verdict::Stop(StopReason::NotInRetryOn)
        );
        assert_eq!(
            r.classify(TIMED_OUT, &Observed::default()),
            Verdict::Stop(StopReason::NotInRetryOn)
        );
    }

    #[test]
    fn every_item_of_a_list_counts_not_only_the_first() {
        let r = Rules {
            retry_on: vec![
                Rule::Codes(1, 1),
                Rule::Signal(libc::SIGTERM),
                Rule::Timeout,
            ],
            ..Rules::default()
        };
        assert_eq!(
            r.classify(Signaled(libc::SIGTERM), &Observed::default()),
            Verdict::Retry
        );
        assert_eq!(r.classify(TIMED_OUT, &Observed::default()), Verdict::Retry);
        assert_eq!(
            r.classify(Signaled(libc::SIGINT), &Observed::default()),
            Verdict::Stop(StopReason::NotInRetryOn)
        );
        // An explicit rule may retry SIGINT deaths.
        let r = Rules {
            retry_on: vec![Rule::Signal(libc::SIGINT)],
            ..Rules::default()
        };
        assert_eq!(
            r.classify(Signaled(libc::SIGINT), &Observed::default()),
            Verdict::Retry
        );
    }

    #[test]
    fn overlaps_finds_shared_codes() {
        assert!(Rule::Codes(1, 5).overlaps(Rule::Codes(5, 9)));
        assert!(!Rule::Codes(1, 4).overlaps(Rule::Codes(5, 9)));
        assert!(Rule::Timeout.overlaps(Rule::Timeout));
        assert!(!Rule::Timeout.overlaps(Rule::Codes(0, 255)));
    }

    #[test]
    fn a_rule_is_covered_only_when_every_outcome_it_matches_is() {
        let codes = [Rule::Codes(1, 3), Rule::Codes(4, 4), Rule::Codes(9, 200)];
        assert!(Rule::Codes(1, 4).covered_by(&codes));
        assert!(Rule::Codes(2, 2).covered_by(&codes));
        assert!(Rule::Codes(9, 200).covered_by(&codes));
        assert!(!Rule::Codes(1, 5).covered_by(&codes));
        assert!(!Rule::Codes(0, 0).covered_by(&codes));
        assert!(!Rule::Codes(8, 9).covered_by(&codes));
        assert!(!Rule::Codes(200, 201).covered_by(&codes));
        assert!(Rule::Codes(0, 255).covered_by(&[Rule::Codes(0, 100), Rule::Codes(101, 255)]));
        let term = Rule::Signal(libc::SIGTERM);
        assert!(term.covered_by(&[Rule::Timeout, term]));
        assert!(!term.covered_by(&[Rule::Signal(1), Rule::Codes(0, 255)]));
        assert!(Rule::Timeout.covered_by(&[Rule::Timeout]));
        assert!(!Rule::Timeout.covered_by(&[Rule::Unmet, Rule::Codes(0, 255)]));
        assert!(Rule::Unmet.covered_by(&[Rule::Unmet]));
        assert!(!Rule::Unmet.covered_by(&[]));
        assert!(!Rule::Codes(0, 0).covered_by(&[]));
    }

    #[test]
    fn output_rules_stop_before_success_and_retry_like_retry_on() {
        let r = Rules {
            retry_output: true,
            ..Rules::default()
        };
        let stop = Observed {
            stop_match: true,
            retry_match: true,
            ..Observed::default()
        };
        assert_eq!(
            r.classify(Exited(0), &stop),
            Verdict::Stop(StopReason::StopOutput)
        );
        let retry = Observed {
            retry_match: true,
            ..Observed::default()
        };
        assert_eq!(r.classify(Exited(1), &retry), Verdict::Retry);
        assert_eq!(
            r.classify(Exited(1), &Observed::default()),
            Verdict::Stop(StopReason::NoRetryOutput)
        );
    }

    #[test]
    fn the_curl_preset_retries_transient_failures_and_some_http_statuses() {
        let r = Rules {
            preset: Some(Preset::Curl),
            ..Rules::default()
        };
        let http = |s| Observed {
            http_status: Some(s),
            ..Observed::default()
        };
        for code in CURL_TRANSIENT {
            assert_eq!(
                r.classify(Exited(code), &Observed::default()),
                Verdict::Retry
            );
        }
        for s in [408, 425, 429, 500, 502, 503, 504, 599] {
            assert_eq!(r.classify(Exited(22), &http(s)), Verdict::Retry, "{s}");
        }
        for s in [400, 401, 403, 404, 409, 410, 422, 451] {
            assert_eq!(
                r.classify(Exited(22), &http(s)),
                Verdict::Stop(StopReason::HttpStatus(s)),
                "{s}"
            );
        }
        assert_eq!(r.classify(Exited(22), &Observed::default()), Verdict::Retry);
        assert_eq!(
            r.classify(Exited(3), &Observed::default()),
            Verdict::Stop(StopReason::Preset(Preset::Curl))
        );
        assert_eq!(r.classify(Exited(0), &http(503)), Verdict::Success);
        // The user's own rules add to the preset's.
        let r = Rules {
            retry_on: vec![Rule::Codes(3, 3)],
            preset: Some(Preset::Curl),
            ..Rules::default()
        };
        assert_eq!(r.classify(Exited(3), &Observed::default()), Verdict::Retry);
    }
}
