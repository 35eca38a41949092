//! Turns the outcome of one attempt into success, retry or stop, by the rules
//! of `--stop-on`, `--success-on` and `--retry-on`. Pure: no processes here.

use std::fmt;

use crate::signals::signal_short_name;

/// How a process ended, as its parent saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Exited with this code.
    Code(u8),
    /// Killed by this signal.
    Signal(i32),
}

/// How one attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Exited with this code.
    Exited(u8),
    /// Killed by this signal (not by backoff's timeout).
    Signaled(i32),
    /// Ran past its time limit and was stopped by backoff; how the process
    /// itself ended then (for `--preserve-status`).
    TimedOut(Status),
    /// Could not be started: the program was not found.
    NotFound,
    /// Could not be started for another reason (permissions, format, ...).
    CannotRun,
}

impl fmt::Display for Outcome {
    /// The form used in reports and in `BACKOFF_LAST_STATUS`'s neighbours:
    /// `exit 3`, `signal TERM`, `timeout`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Outcome::Exited(c) => write!(f, "exit {c}"),
            Outcome::Signaled(s) => write!(f, "signal {}", signal_short_name(s)),
            Outcome::TimedOut(_) => f.write_str("timeout"),
            Outcome::NotFound => f.write_str("command not found"),
            Outcome::CannotRun => f.write_str("command cannot be run"),
        }
    }
}

impl Outcome {
    /// The value of `BACKOFF_LAST_STATUS` for the next attempt: the exit
    /// code, `sig:NAME`, or `timeout`.
    pub fn env_value(self) -> String {
        match self {
            Outcome::Exited(c) => c.to_string(),
            Outcome::Signaled(s) => format!("sig:{}", signal_short_name(s)),
            Outcome::TimedOut(_) => "timeout".to_owned(),
            Outcome::NotFound => "127".to_owned(),
            Outcome::CannotRun => "126".to_owned(),
        }
    }
}

/// One item of a rule list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Exit codes in this inclusive range.
    Codes(u8, u8),
    /// Death by this signal.
    Signal(i32),
    /// The attempt timed out.
    Timeout,
}

impl Rule {
    /// Whether this rule matches the outcome.
    pub fn matches(self, outcome: Outcome) -> bool {
        match (self, outcome) {
            (Rule::Codes(lo, hi), Outcome::Exited(c)) => (lo..=hi).contains(&c),
            (Rule::Signal(s), Outcome::Signaled(t)) => s == t,
            (Rule::Timeout, Outcome::TimedOut(_)) => true,
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
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Rule::Codes(lo, hi) if lo == hi => write!(f, "{lo}"),
            Rule::Codes(lo, hi) => write!(f, "{lo}-{hi}"),
            Rule::Signal(s) => write!(f, "sig:{}", signal_short_name(s)),
            Rule::Timeout => f.write_str("timeout"),
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
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            stop_on: Vec::new(),
            success_on: vec![Rule::Codes(0, 0)],
            retry_on: Vec::new(),
        }
    }
}

impl Rules {
    /// Classifies an outcome, in the order of the specification: could not
    /// start, stop rules, success rules, retry rules, otherwise stop.
    pub fn classify(&self, outcome: Outcome) -> Verdict {
        if matches!(outcome, Outcome::NotFound | Outcome::CannotRun) {
            return Verdict::Stop(StopReason::CannotStart);
        }
        let any = |rules: &[Rule]| rules.iter().any(|r| r.matches(outcome));
        if any(&self.stop_on) {
            return Verdict::Stop(StopReason::StopRule);
        }
        if any(&self.success_on) {
            return Verdict::Success;
        }
        if self.retry_on.is_empty() {
            return match outcome {
                Outcome::Signaled(libc::SIGINT | libc::SIGPIPE) => {
                    Verdict::Stop(StopReason::NeverRetried)
                }
                _ => Verdict::Retry,
            };
        }
        if any(&self.retry_on) {
            Verdict::Retry
        } else {
            Verdict::Stop(StopReason::NotInRetryOn)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Outcome::{CannotRun, Exited, NotFound, Signaled};
    const TIMED_OUT: Outcome = Outcome::TimedOut(Status::Signal(libc::SIGTERM));

    #[test]
    fn defaults_succeed_on_zero_and_retry_everything_else_but_int_and_pipe() {
        let r = Rules::default();
        assert_eq!(r.classify(Exited(0)), Verdict::Success);
        assert_eq!(r.classify(Exited(1)), Verdict::Retry);
        assert_eq!(r.classify(Exited(255)), Verdict::Retry);
        assert_eq!(r.classify(Signaled(libc::SIGTERM)), Verdict::Retry);
        assert_eq!(r.classify(Signaled(libc::SIGKILL)), Verdict::Retry);
        assert_eq!(r.classify(TIMED_OUT), Verdict::Retry);
        assert_eq!(
            r.classify(Signaled(libc::SIGINT)),
            Verdict::Stop(StopReason::NeverRetried)
        );
        assert_eq!(
            r.classify(Signaled(libc::SIGPIPE)),
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
            assert_eq!(r.classify(o), Verdict::Stop(StopReason::CannotStart));
        }
    }

    #[test]
    fn stop_beats_success_beats_retry() {
        let r = Rules {
            stop_on: vec![Rule::Codes(3, 3)],
            success_on: vec![Rule::Codes(0, 0), Rule::Codes(3, 4)],
            retry_on: vec![Rule::Codes(1, 10)],
        };
        assert_eq!(r.classify(Exited(3)), Verdict::Stop(StopReason::StopRule));
        assert_eq!(r.classify(Exited(4)), Verdict::Success);
        assert_eq!(r.classify(Exited(5)), Verdict::Retry);
        assert_eq!(
            r.classify(Exited(11)),
            Verdict::Stop(StopReason::NotInRetryOn)
        );
        assert_eq!(
            r.classify(TIMED_OUT),
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
        assert_eq!(r.classify(Signaled(libc::SIGTERM)), Verdict::Retry);
        assert_eq!(r.classify(TIMED_OUT), Verdict::Retry);
        assert_eq!(
            r.classify(Signaled(libc::SIGINT)),
            Verdict::Stop(StopReason::NotInRetryOn)
        );
        // An explicit rule may retry SIGINT deaths.
        let r = Rules {
            retry_on: vec![Rule::Signal(libc::SIGINT)],
            ..Rules::default()
        };
        assert_eq!(r.classify(Signaled(libc::SIGINT)), Verdict::Retry);
    }

    #[test]
    fn overlaps_finds_shared_codes() {
        assert!(Rule::Codes(1, 5).overlaps(Rule::Codes(5, 9)));
        assert!(!Rule::Codes(1, 4).overlaps(Rule::Codes(5, 9)));
        assert!(Rule::Timeout.overlaps(Rule::Timeout));
        assert!(!Rule::Timeout.overlaps(Rule::Codes(0, 255)));
    }
}
