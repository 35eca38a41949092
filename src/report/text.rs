//! The text lines backoff writes about a run (`--log-format text`;
//! `github`, which adds GitHub Actions annotations and folds, and `gitlab`,
//! which adds GitLab CI sections: see `ci`), to an injected writer.
//! Each line is built first and written with one call; a write error (a
//! closed stderr) is ignored, never a crash.

use std::ffi::OsString;
use std::io::Write;

use crate::classify::{Applied, HintSource, Outcome, Source, StopReason};
use crate::duration::human;
use crate::event::{
    AlertNews, BreakerNews, During, Ending, Event, HookKind, HuntEnd, LockNews, Next, OnceNews,
    Report, ThrottleNews,
};
use crate::fleet::breaker::{Admission, Circuit, RunEnd, State};
use crate::fleet::lock::Forgotten;
use crate::report::fold::{self, Folds, Runner};
use crate::report::live::{self, Live};
use crate::report::{Labels, Verbosity, escape_controls, of};
use crate::signal;
use crate::sys::process;

/// Writes events as `backoff: ` text lines, or as GitHub Actions
/// annotations for retries and giving up, with each attempt in a CI fold.
pub struct TextReport<W: Write> {
    out: W,
    verbosity: Verbosity,
    labels: Labels,
    github: bool,
    /// The status line that counts delays down, on a terminal.
    live: Option<Live>,
    /// What the status line says before the time left: what comes next
    /// (`next attempt 3/7`).
    status: Option<String>,
    /// The CI runner's folds around each attempt (github, gitlab).
    folds: Option<Folds>,
}

impl<W: Write> TextReport<W> {
    /// A text reporter; `labels` (the time, the name) start every line.
    pub fn new(out: W, verbosity: Verbosity, labels: Labels) -> Self {
        TextReport {
            out,
            verbosity,
            labels,
            github: false,
            live: None,
            status: None,
            folds: None,
        }
    }

    /// The same reporter, with a status line that counts each delay of a
    /// second or more down (for stderr on a terminal).
    #[must_use]
    pub fn counting_down(self) -> Self {
        TextReport {
            live: Some(Live::default()),
            ..self
        }
    }

    /// The same lines, with `::warning::` for each retry and `::error::`
    /// when giving up, as GitHub Actions shows them on the run's page, and
    /// each attempt in a `::group::` fold (not with -q).
    pub fn github(out: W, verbosity: Verbosity, labels: Labels) -> Self {
        TextReport {
            github: true,
            ..TextReport::new(out, verbosity, labels).folded(Runner::Github)
        }
    }

    /// The same lines, with each attempt in a collapsed section of the
    /// GitLab CI job log (not with -q).
    pub fn gitlab(out: W, verbosity: Verbosity, labels: Labels) -> Self {
        TextReport::new(out, verbosity, labels).folded(Runner::Gitlab)
    }

    fn folded(self, runner: Runner) -> Self {
        let folds = (self.verbosity > Verbosity::Quiet).then(|| {
            Folds::new(
                runner,
                self.labels.clone(),
                std::process::id(),
                std::time::SystemTime::now,
            )
        });
        TextReport { folds, ..self }
    }

    fn line(&mut self, marks: &str, level: Option<&str>, text: &str) {
        let text = self.labels.apply(text);
        let title = fold::escape_property(self.labels.name.as_deref().unwrap_or("backoff"));
        let buf = match level.filter(|_| self.github) {
            Some(level) => format!(
                "{marks}::{level} title={title}::{}\n",
                fold::escape_workflow(&text)
            ),
            None => format!("{marks}backoff: {}\n", escape_controls(&text)),
        };
        let _ = self.out.write_all(buf.as_bytes());
        let _ = self.out.flush();
    }
}

/// What `-v` says of the preset: which, where it came from, and what it
/// added before the command's own arguments.
pub fn preset_text(applied: Applied, added: &[OsString]) -> String {
    let name = applied.preset.name();
    let from = match applied.from {
        Source::Program => "from the program's name; --preset none turns it off",
        Source::Option => "from --preset",
    };
    if added.is_empty() {
        format!("preset {name} ({from})")
    } else {
        format!(
            "preset {name} ({from}); {name} gets {} before its own arguments",
            quote_command(added)
        )
    }
}

/// `1 success`, `36 successes`.
fn successes(n: u64) -> String {
    if n == 1 {
        "1 success".to_owned()
    } else {
        format!("{n} successes")
    }
}

/// `n` and `word`, with an `s` unless `n` is 1.
pub fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

impl<W: Write> Report for TextReport<W> {
    fn event(&mut self, event: &Event<'_>) {
        if let Some(live) = self.live.as_mut() {
            if let (Event::Countdown { left }, Some(head)) = (event, &self.status) {
                let head = format!("backoff: {}", escape_controls(&self.labels.apply(head)));
                live.show(&head, &format!(" in {}", live::seconds_left(*left)));
                return;
            }
            // Nothing else is written over it.
            live.clear();
            if let Event::Hook {
                kind: HookKind::Retry,
                ..
            } = event
            {
                live.new_line();
            }
            // The countdown tells of the last attempt, also after the lines
            // of a hook or a reset that came between.
            if let Some(status) = status(event) {
                self.status = Some(status);
            }
        }
        // A fold's markers go before the event's line, in the same write.
        let marks = self
            .folds
            .as_mut()
            .map(|f| f.event(event))
            .unwrap_or_default();
        let Some(text) = text(event, self.verbosity) else {
            if !marks.is_empty() {
                let _ = self.out.write_all(marks.as_bytes());
                let _ = self.out.flush();
            }
            return;
        };
        let level = match event {
            // A retry, and a run an open circuit skipped.
            Event::Failed {
                next: Next::Retry { .. },
                ..
            }
            | Event::Breaker {
                news:
                    BreakerNews::Admitted {
                        admission: Admission::Skip { .. },
                        ..
                    },
                ..
            }
            | Event::Lock {
                news: LockNews::Busy { .. },
                ..
            } => Some("warning"),
            Event::Lock {
                news: LockNews::Lost { .. },
                ..
            }
            | Event::GaveUp { .. }
            | Event::Unstarted { .. }
            | Event::CannotStart { .. }
            | Event::Undelivered { .. }
            | Event::OutputLost { .. } => Some("error"),
            Event::MisplacedOption { .. } => Some("notice"),
            _ => None,
        };
        self.line(&marks, level, &text);
        // With -v, the run's first line is followed by its preset's.
        if let Event::Start {
            preset: Some(applied),
            added,
            ..
        } = *event
        {
            self.line("", None, &preset_text(applied, added));
        }
    }

    fn counts_down(&self) -> bool {
        self.live.is_some()
    }
}

/// What the countdown after this event says before the time left, if a
/// delay follows it: what the delay is waiting for (`next attempt 3/7`,
/// `next run 4` of `--until-failure`), so that it never reads as a second
/// line of the failure above it.
fn status(event: &Event<'_>) -> Option<String> {
    match *event {
        Event::Splay { .. } => Some("first attempt".to_owned()),
        Event::Failed {
            attempt,
            max_attempts,
            next: Next::Retry { .. },
            ..
        } => Some(format!(
            "next attempt {}",
            of(attempt.saturating_add(1), max_attempts)
        )),
        Event::Passed {
            attempt,
            max_attempts,
            needed,
            next: Next::Retry { .. },
            ..
        } => Some(format!(
            "next {} {}",
            if needed.is_some() { "attempt" } else { "run" },
            of(attempt.saturating_add(1), max_attempts)
        )),
        _ => None,
    }
}

/// The line for what became of the held stdout (lost output is said even
/// with -q).
fn held_text(event: &Event<'_>) -> Option<String> {
    Some(match *event {
        Event::OutputLost { why } => why.to_owned(),
        Event::Undelivered { bytes } => format!(
            "stdout took no more before the time limit; the last {} of the command's output were dropped",
            plural(bytes, "byte")
        ),
        Event::InterruptedWriting { signal } => format!(
            "interrupted by {} while writing the held stdout; the rest of it was dropped",
            signal::full_name(signal)
        ),
        _ => return None,
    })
}

/// Whether the event tells of a command that died by SIGPIPE, not retried,
/// because its reader went away: that ends quietly, as the shell's own
/// tools do (`backoff -- yes | head -1`).
fn reader_left(event: &Event<'_>) -> bool {
    matches!(
        *event,
        Event::Failed {
            outcome: Outcome::Signaled(signal::PIPE),
            next: Next::Stop(_),
            ..
        } | Event::GaveUp {
            outcome: Outcome::Signaled(signal::PIPE),
            reason: Ending::Stopped,
            ..
        }
    )
}

/// The text line for an event at this verbosity, if it has one.
pub fn text(event: &Event<'_>, verbosity: Verbosity) -> Option<String> {
    let verbose = verbosity >= Verbosity::Verbose;
    let normal = verbosity >= Verbosity::Normal && (verbose || !reader_left(event));
    let text = match *event {
        Event::Start { command, .. } if verbose => {
            format!("running {}", quote_command(command))
        }
        Event::Splay { delay, window } if verbose => format!(
            "waiting {} before the first attempt (--splay {}: this host's and job's place in it)",
            human(delay),
            human(window)
        ),
        Event::Failed {
            next: Next::Found, ..
        } => return None,
        Event::Failed {
            attempt,
            max_attempts,
            outcome,
            elapsed,
            next,
            hint,
            ..
        } if normal => failed_text(
            &of(attempt, max_attempts),
            outcome,
            elapsed,
            next,
            hint.map(|h| h.source),
            verbose,
        ),
        Event::Passed {
            attempt,
            max_attempts,
            elapsed,
            streak,
            needed,
            next,
            ..
        } if needed.is_some() && normal || verbose => {
            passed_text(&of(attempt, max_attempts), elapsed, streak, needed, next)
        }
        Event::Reset {
            attempt,
            ran,
            after,
        } if normal => format!(
            "attempt {attempt} ran {} before failing, at least --reset-after {}: the retry count and delays start over",
            human(ran),
            human(after)
        ),
        Event::Hook { .. } => return hook_text(event, verbosity),
        Event::Breaker { key, news } if normal => return breaker_text(key, news, verbose),
        Event::Lock { key, news } if normal => return lock_text(key, news, verbose),
        Event::Alert {
            key,
            alert_after,
            news,
        } if normal => return alert_text(key, alert_after, news, verbose),
        Event::Once { key, news } if verbose => return once_text(key, news),
        Event::Throttle {
            key,
            attempt,
            news:
                ThrottleNews::Decided {
                    decision,
                    window_ms,
                },
            late,
        } if normal && !decision.send || verbose => format!(
            "throttle '{key}': {} attempt {attempt} (skip probability {:.2}: {} requests, {} skipped, {} accepted in the last {})",
            match (decision.send, late) {
                (true, false) => "sending",
                (true, true) => "not sending, as --max-time passed during the decision,",
                (false, _) => "skipping",
            },
            decision.probability,
            decision.counts.requests,
            decision.counts.skips,
            decision.counts.accepts,
            human(std::time::Duration::from_millis(window_ms)),
        ),
        Event::CannotStart { program, error, .. } => {
            format!("cannot run '{}': {error}", program.to_string_lossy())
        }
        Event::MisplacedOption { .. } if normal => misplaced_text(event)?,
        Event::Succeeded { .. } | Event::GaveUp { .. } | Event::NoFailure { .. } if normal => {
            return end_text(event, verbose);
        }
        Event::OutputLost { .. } | Event::Undelivered { .. } => return held_text(event),
        Event::InterruptedWriting { .. } if normal => return held_text(event),
        Event::InterruptedHook { signal, kind } if normal => format!(
            "interrupted by {} during the {} hook",
            signal::full_name(signal),
            kind.flag()
        ),
        Event::Interrupted { .. } | Event::Unstarted { .. } if normal => cut_text(event)?,
        _ => return None,
    };
    Some(text)
}

/// The line that ends a run that succeeded or gave up, if it has one at
/// normal verbosity (`verbose` or not).
fn end_text(event: &Event<'_>, verbose: bool) -> Option<String> {
    let text = match *event {
        Event::NoFailure {
            runs,
            total,
            reason,
            last,
        } => {
            let head = format!(
                "no failure: {} succeeded in {}",
                plural(runs, "run"),
                human(total)
            );
            match (reason, last) {
                (HuntEnd::Deadline, _) => format!("{head}; the next would pass --max-time"),
                (HuntEnd::Cut, Some((run, ..))) => {
                    format!("{head}; --max-time cut run {run} short")
                }
                _ => head,
            }
        }
        Event::Succeeded {
            attempt,
            total,
            condition: true,
            ..
        } => format!("condition met on attempt {attempt} after {}", human(total)),
        Event::Succeeded {
            attempt,
            max_attempts,
            total,
            streak,
            ..
        } if streak > 1 => format!(
            "{streak} successes in a row on attempt {}; {} in {}",
            of(attempt, max_attempts),
            plural(attempt, "attempt"),
            human(total)
        ),
        Event::Succeeded {
            attempt,
            max_attempts,
            total,
            ..
        } if verbose => format!(
            "attempt {} succeeded; {} in {}",
            of(attempt, max_attempts),
            plural(attempt, "attempt"),
            human(total)
        ),
        Event::GaveUp {
            attempts,
            total,
            outcome,
            reason: Ending::Found,
            ..
        } => format!(
            "run {attempts} failed ({outcome}) after {} in {}",
            successes(attempts - 1),
            human(total)
        ),
        Event::GaveUp {
            attempts,
            total,
            short_of: Some((streak, needed)),
            ..
        } => format!(
            "giving up after {} in {}: {streak} of {needed} successes in a row",
            plural(attempts, "attempt"),
            human(total)
        ),
        // Lost before any attempt (during --on-start, or the wait after
        // a lock the store had no trace of): no outcome to tell.
        Event::GaveUp {
            attempts: 0,
            total,
            reason: reason @ (Ending::LockLost | Ending::Replaced),
            ..
        } => format!(
            "giving up after 0 attempts in {}: {}",
            human(total),
            if reason == Ending::Replaced {
                "another run took the lock over"
            } else {
                "the lock was lost"
            }
        ),
        Event::GaveUp {
            attempts,
            total,
            outcome,
            ..
        } => format!(
            "giving up after {} in {}: {outcome}",
            plural(attempts, "attempt"),
            human(total)
        ),
        _ => return None,
    };
    Some(text)
}

/// A Unix time in milliseconds as a local RFC 3339 time.
fn local_ms(ms: u64) -> String {
    crate::report::local_rfc3339(
        std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(ms),
    )
}

/// `5 runs in a row gave up`.
fn gave_up_in_a_row(failures: u32) -> String {
    match failures {
        1 => "1 run gave up".to_owned(),
        n => format!("{n} runs in a row gave up"),
    }
}

/// A circuit's state at `now_ms`, as `breaker show` and the lines say it:
/// `open since T until T (5 runs in a row gave up)`.
pub fn circuit_text(c: Circuit, now_ms: u64) -> String {
    match c.state(now_ms) {
        State::Closed if c.failures == 0 => "closed".to_owned(),
        State::Closed => format!("closed ({})", gave_up_in_a_row(c.failures)),
        State::Open { since_ms, until_ms } => format!(
            "open since {} until {} ({})",
            local_ms(since_ms),
            local_ms(until_ms),
            gave_up_in_a_row(c.failures)
        ),
        State::HalfOpen {
            since_ms,
            probe_until_ms: Some(until),
        } => format!(
            "half-open (open since {}): a probe is running, until {} at most",
            local_ms(since_ms),
            local_ms(until)
        ),
        State::HalfOpen { since_ms, .. } => format!(
            "half-open (open since {}): the next run probes it",
            local_ms(since_ms)
        ),
    }
}

/// A lock's holder as lines say it: `pid 4242 on web-3 since
/// 2026-12-04T02:10:00.000+01:00`.
pub fn holder_text(h: &crate::fleet::lock::Holder) -> String {
    format!(
        "pid {} on {} since {}",
        h.pid,
        h.host,
        crate::report::local_rfc3339(
            std::time::UNIX_EPOCH + std::time::Duration::from_millis(h.since_ms)
        )
    )
}

/// A once-per record's last success, for people.
pub fn success_text(s: &crate::fleet::once::Success) -> String {
    format!(
        "at {} on {}, run {}",
        crate::report::local_rfc3339(
            std::time::UNIX_EPOCH + std::time::Duration::from_millis(s.done_ms)
        ),
        s.host,
        s.run_id
    )
}

/// The line of `--once-per`'s news, with `-v` (a skip is silent without:
/// it is what the job's schedule asks for; what cannot be believed, and a
/// store that cannot be used, are said where they happen).
fn once_text(key: &str, news: &OnceNews) -> Option<String> {
    Some(match news {
        OnceNews::Decided {
            period,
            verdict,
            last,
            ..
        } => {
            let last = last.as_ref().map_or_else(
                || "no success recorded".to_owned(),
                |s| format!("last success {}", success_text(s)),
            );
            let then = if verdict.runs() {
                "not done yet: running the command"
            } else {
                "done: not running the command"
            };
            format!("once-per '{key}': {period} is {then} ({last})")
        }
        OnceNews::Running { holder } => format!(
            "once-per '{key}': the job is running in another run ({}), which records it if it succeeds; not running the command",
            holder
                .as_ref()
                .map_or_else(|| "its record cannot be read".to_owned(), holder_text)
        ),
        OnceNews::Recorded { success } => format!(
            "once-per '{key}': this run's success is recorded for {}",
            success.period
        ),
        OnceNews::Unavailable { .. } | OnceNews::NotRecorded { .. } => return None,
    })
}

/// The line of the lock's news, if it has one (the store's own failures
/// are said where they happen).
fn lock_text(key: &str, news: &LockNews, verbose: bool) -> Option<String> {
    let waited = |w: &Option<std::time::Duration>| match w {
        Some(w) => format!(" after waiting {}", human(*w)),
        None => String::new(),
    };
    Some(match news {
        LockNews::Busy { holder, waited: w } => {
            let by = holder.as_ref().map_or_else(
                || "by another run (its record cannot be read)".to_owned(),
                |h| format!("by {}", holder_text(h)),
            );
            format!(
                "lock '{key}' is held {by}{}; not running the command",
                waited(w)
            )
        }
        LockNews::Waiting { holder, patience } if verbose => {
            let by = holder.as_ref().map_or_else(
                || "by another run".to_owned(),
                |h| format!("by {}", holder_text(h)),
            );
            // Only a run of --lock-replace waits with no --lock-wait.
            if patience.is_zero() {
                format!(
                    "lock '{key}' is held {by}; it is asked to end, and this run waits until it has let go (--lock-replace)"
                )
            } else {
                format!(
                    "lock '{key}' is held {by}; waiting up to {} for it",
                    human(*patience)
                )
            }
        }
        // A wait the user feels is said; the short one after a lock file
        // was made anew only with -v.
        LockNews::Held {
            token,
            waited: w,
            settle,
        } if verbose || settle.is_some_and(|s| s.why != Forgotten::File) => {
            let held = format!(
                "lock '{key}' is held by this run{}{}",
                token.map_or_else(String::new, |t| format!(", token {t}")),
                waited(w)
            );
            match settle {
                Some(s) if s.why == Forgotten::Lease => format!(
                    "{held}; the store had no trace of it (its first use, or the store lost its data): waiting {} (--lock-ttl) before the first attempt, by which time a holder the store forgot has ended",
                    human(s.wait)
                ),
                Some(s) if s.why == Forgotten::Pending => format!(
                    "{held}; its last holder may still run (its lease was removed by backoff lock reset --force, or a run ended during this wait): waiting {} before the first attempt, by which time it has ended",
                    human(s.wait)
                ),
                Some(s) => format!(
                    "{held}; its file is new: waiting {} before the first attempt, by which time a holder of a removed or replaced file has seen it and started to end",
                    human(s.wait)
                ),
                None => held,
            }
        }
        LockNews::Lost {
            why,
            replaced: true,
            ..
        } => format!("lock '{key}' was taken over: {why}; the run gives up (replaced)"),
        LockNews::Lost { why, .. } => {
            format!("lock '{key}' was lost: {why}; the run gives up")
        }
        _ => return None,
    })
}

/// What a run's end did to the count of its job's failed runs in a row,
/// in a few words: `tolerated (1 of 2)`, `alerting (2 of 2)`, `alerting
/// (3 in a row)`, `reset (was 2)`, `unavailable`.
pub fn alert_words(alert_after: u64, news: AlertNews) -> String {
    match news {
        AlertNews::Failed { failures } if failures < alert_after => {
            format!("tolerated ({failures} of {alert_after})")
        }
        AlertNews::Failed { failures } if failures == alert_after => {
            format!("alerting ({failures} of {alert_after})")
        }
        AlertNews::Failed { failures } => format!("alerting ({failures} in a row)"),
        AlertNews::Reset { was: Some(was) } => format!("reset (was {was})"),
        AlertNews::Reset { was: None } => "reset (was out of shape)".to_owned(),
        AlertNews::Unavailable { .. } => "unavailable".to_owned(),
    }
}

/// The line of what a run's end did to the count of its job's failed runs
/// in a row (`--alert-after`), if it has one: a failed run's always, a
/// reset's with -v (a store that cannot be used is said where it happens).
fn alert_text(key: &str, alert_after: u64, news: AlertNews, verbose: bool) -> Option<String> {
    let words = alert_words(alert_after, news);
    Some(match news {
        AlertNews::Failed { failures } if failures < alert_after => format!(
            "job '{key}': {words}: no alert until {} in a row have failed (--alert-after)",
            plural(alert_after, "run")
        ),
        AlertNews::Failed { failures } if failures == alert_after => format!(
            "job '{key}': {words}: {} in a row have failed (--alert-after)",
            plural(failures, "run")
        ),
        AlertNews::Failed { failures } => format!(
            "job '{key}': alerting: {} in a row have failed (--alert-after {alert_after})",
            plural(failures, "run")
        ),
        AlertNews::Reset { was } if verbose => format!(
            "job '{key}': the run succeeded: its count of failed runs in a row starts again ({})",
            was.map_or_else(
                || "it was out of shape".to_owned(),
                |n| format!("it was {n}")
            )
        ),
        _ => return None,
    })
}

/// The line of the circuit breaker's news, if it has one (the store's
/// own failures are said where they happen).
fn breaker_text(key: &str, news: BreakerNews, verbose: bool) -> Option<String> {
    Some(match news {
        BreakerNews::Admitted {
            admission: Admission::Skip { .. },
            before,
            now_ms,
        } => format!(
            "circuit '{key}' is {}; not running the command",
            circuit_text(before, now_ms)
        ),
        BreakerNews::Admitted {
            admission: Admission::Probe { .. },
            before,
            ..
        } => format!(
            "circuit '{key}' has been open since {}: this run probes it, without retries",
            local_ms(before.opened_ms)
        ),
        BreakerNews::Admitted { before, now_ms, .. } if verbose => {
            format!("circuit '{key}' is {}", circuit_text(before, now_ms))
        }
        BreakerNews::Recorded {
            probe: true,
            end: RunEnd::Succeeded,
            ..
        } => format!("the probe succeeded: circuit '{key}' is closed"),
        BreakerNews::Recorded {
            probe: true,
            end: RunEnd::GaveUp,
            after,
            now_ms,
        } if after.opened_ms == now_ms.max(1) => format!(
            "the probe failed: circuit '{key}' is open again until {}",
            local_ms(after.until_ms)
        ),
        BreakerNews::Recorded {
            probe: false,
            end: RunEnd::GaveUp,
            after,
            now_ms,
        } if after.opened_ms == now_ms.max(1) => format!(
            "circuit '{key}' is open until {}: {}",
            local_ms(after.until_ms),
            gave_up_in_a_row(after.failures)
        ),
        _ => return None,
    })
}

/// The line of a hook: when it failed (not with -q), and with -v when it
/// went well.
fn hook_text(event: &Event<'_>, verbosity: Verbosity) -> Option<String> {
    if verbosity == Verbosity::Quiet {
        return None;
    }
    let Event::Hook {
        kind,
        outcome,
        elapsed,
        limit,
        bounded,
        error,
        lock_lost,
    } = *event
    else {
        return None;
    };
    let hook = kind.flag();
    Some(match (outcome, error) {
        (_, Some(why)) => format!("cannot run the {hook} hook: {why}"),
        (Some(Outcome::TimedOut(..)), _) if lock_lost => format!(
            "{hook} hook was ended after {}: the run lost its lock",
            human(elapsed)
        ),
        (Some(Outcome::Exited(0)), _) if verbosity >= Verbosity::Verbose => {
            format!("{hook} hook exited 0 after {}", human(elapsed))
        }
        (Some(Outcome::Exited(0)) | None, _) => return None,
        (Some(Outcome::TimedOut(..)), _) if bounded && kind == HookKind::Retry => format!(
            "{hook} hook timed out at --max-time after {} and was ended",
            human(elapsed)
        ),
        (Some(Outcome::TimedOut(..)), _) if bounded => format!(
            "{hook} hook timed out after {} and was ended: backoff exits by --max-time plus --kill-after",
            human(elapsed)
        ),
        (Some(Outcome::TimedOut(..)), _) => format!(
            "{hook} hook timed out after {} and was ended",
            human(limit.min(elapsed))
        ),
        (Some(o), _) => format!("{hook} hook failed ({o}) after {}", human(elapsed)),
    })
}

/// The line of a run that a signal ended, or that `--max-time` ended
/// before its first attempt could start.
fn cut_text(event: &Event<'_>) -> Option<String> {
    Some(match *event {
        Event::Interrupted { signal, during } => format!(
            "interrupted by {} {}",
            signal::full_name(signal),
            match during {
                During::Attempt(..) => "during the attempt; not retrying".to_owned(),
                During::Delay => "during the delay; not retrying".to_owned(),
                During::Start => "during the --on-start hook; no attempt follows".to_owned(),
                During::Splay => "during --splay's wait; no attempt follows".to_owned(),
                During::Decision(shared) => {
                    format!(
                        "during the {}'s decision; no attempt follows",
                        shared.noun()
                    )
                }
            }
        ),
        Event::Unstarted { total, max_time } => format!(
            "giving up after 0 attempts in {}: --max-time {} passed before the first attempt could start",
            human(total),
            human(max_time)
        ),
        _ => return None,
    })
}

/// The line of a failed attempt (`attempt` is `2/7` or `2`); `source` is
/// where the server's hint was found, if one was.
fn failed_text(
    attempt: &str,
    outcome: Outcome,
    elapsed: std::time::Duration,
    next: Next,
    source: Option<HintSource>,
    verbose: bool,
) -> String {
    let head = match outcome {
        Outcome::Unmet(_) => format!("attempt {attempt} {outcome}"),
        Outcome::Throttled => format!("attempt {attempt} skipped (throttled)"),
        _ => format!(
            "attempt {attempt} failed ({outcome}) after {}",
            human(elapsed)
        ),
    };
    match next {
        Next::Retry {
            delay,
            server: true,
        } => format!(
            "{head}; retrying in {} ({})",
            human(delay.delay),
            match source {
                Some(HintSource::RateLimit) => "the server's rate-limit reset",
                Some(HintSource::Pattern) => "the wait --retry-after-pattern found",
                Some(HintSource::RetryAfter) | None => "Retry-After from the server",
            }
        ),
        Next::Retry { delay, .. } if verbose => format!(
            "{head}; retrying in {} (bound {})",
            human(delay.delay),
            human(delay.bound)
        ),
        Next::Retry { delay, .. } => {
            format!("{head}; retrying in {}", human(delay.delay))
        }
        Next::Budget => format!("{head}; not retrying: retry budget exhausted"),
        Next::LockLost => format!("{head}; not retrying: the lock was lost"),
        Next::Replaced => format!("{head}; not retrying: another run took the lock over"),
        Next::HintTooLong { hint, max } => format!(
            "{head}; not retrying: the server asks to wait {}, more than --retry-after-max {}",
            human(hint),
            human(max)
        ),
        Next::Exhausted | Next::Found => head,
        Next::Stop(why) => {
            format!("{head}; not retrying: {}", stop_reason(why, outcome))
        }
        Next::Deadline {
            max_time,
            passed: true,
            ..
        } => format!(
            "{head}; not retrying: --max-time {} has passed",
            human(max_time)
        ),
        Next::Deadline {
            delay, max_time, ..
        } => format!(
            "{head}; not retrying: the next retry in {} would pass --max-time {}",
            human(delay),
            human(max_time)
        ),
    }
}

/// The line of a successful attempt after which the command runs again.
fn passed_text(
    attempt: &str,
    elapsed: std::time::Duration,
    streak: u64,
    needed: Option<u64>,
    next: Next,
) -> String {
    let head = match needed {
        Some(n) => format!("attempt {attempt} succeeded ({streak} of {n} in a row)"),
        None => format!("run {attempt} succeeded after {}", human(elapsed)),
    };
    match next {
        Next::Retry { delay, .. } => format!("{head}; next in {}", human(delay.delay)),
        Next::Deadline {
            delay, max_time, ..
        } => format!(
            "{head}; not going on: the next run in {} would pass --max-time {}",
            human(delay),
            human(max_time)
        ),
        _ => head,
    }
}

/// The outcome as the rules name it: `unmet`, or as it is printed.
fn rule_word(outcome: Outcome) -> String {
    match outcome {
        Outcome::Unmet(_) => "unmet".to_owned(),
        o => o.to_string(),
    }
}

fn stop_reason(why: StopReason, outcome: Outcome) -> String {
    match why {
        StopReason::StopRule => format!("{} matches --stop-on", rule_word(outcome)),
        StopReason::NotInRetryOn => format!("{} is not in --retry-on", rule_word(outcome)),
        StopReason::NoRetryOutput => {
            format!("{outcome}, and no line matches --retry-if-output")
        }
        StopReason::NeverRetried => format!("{outcome} is never retried by default"),
        StopReason::CannotStart => "the command cannot be started".to_owned(),
        StopReason::StopOutput => "its output matches --stop-if-output".to_owned(),
        StopReason::Preset(p) => format!("{outcome} is not transient for --preset {}", p.name()),
        StopReason::HttpStatus(s) => format!("HTTP {s} is not worth retrying"),
        StopReason::NotIdempotent => format!(
            "after {outcome} the server may have acted on the request, and a POST or PATCH without an Idempotency-Key is not sent again (--idempotent allows it)"
        ),
    }
}

/// The note on an option of backoff's own given after the command.
pub fn misplaced_text(event: &Event<'_>) -> Option<String> {
    match *event {
        Event::MisplacedOption { option, program } => Some(format!(
            "note: '{option}' after the command is passed to {}, not to backoff; put backoff's options before the command",
            program.to_string_lossy()
        )),
        _ => None,
    }
}

/// The command line as the system's shell would need it typed (sh's
/// quoting; cmd.exe's on Windows).
pub fn quote_command(command: &[OsString]) -> String {
    let words: Vec<String> = command
        .iter()
        .map(|w| {
            let w = w.to_string_lossy();
            let plain = !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || process::PLAIN.contains(c));
            if plain {
                w.into_owned()
            } else {
                process::quote(&w)
            }
        })
        .collect();
    words.join(" ")
}

/// For an event that ends a run, the sentence that tells how, as its last
/// line says it (`giving up after 3 attempts in 1.2s: exit 1`), also when
/// that line is not written (a success without `-v`, or `-q`).
pub fn ending(event: &Event<'_>) -> Option<String> {
    match event {
        Event::Succeeded { .. }
        | Event::GaveUp { .. }
        | Event::Unstarted { .. }
        | Event::NoFailure { .. }
        | Event::CannotStart { .. }
        | Event::Interrupted { .. }
        | Event::InterruptedWriting { .. }
        | Event::InterruptedHook { .. }
        | Event::Breaker {
            news:
                BreakerNews::Admitted {
                    admission: Admission::Skip { .. },
                    ..
                },
            ..
        }
        | Event::Lock {
            news: LockNews::Busy { .. },
            ..
        } => text(event, Verbosity::Verbose),
        Event::Once { news, .. } if news.skips() => text(event, Verbosity::Verbose),
        Event::Once {
            key,
            news: OnceNews::Unavailable { run: false, why },
        } => Some(format!(
            "once-per record '{key}' unavailable ({why}): the command was not run"
        )),
        Event::Lock {
            key,
            news: LockNews::Unavailable { run: false, why },
        } => Some(format!(
            "lock '{key}' unavailable ({why}): the command was not run"
        )),
        Event::Breaker {
            key,
            news: BreakerNews::Unavailable { run: false },
        } => Some(format!(
            "circuit breaker '{key}' unavailable: the command was not run (--budget-store-fail closed)"
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Delay;
    use std::time::Duration;

    fn lines(v: Verbosity, events: &[Event<'_>]) -> String {
        let mut out = Vec::new();
        let mut r = TextReport::new(&mut out, v, Labels::default());
        for e in events {
            r.event(e);
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn failed_attempts_and_giving_up_read_as_documented() {
        let events = [
            Event::Failed {
                attempt: 2,
                max_attempts: Some(7),
                outcome: Outcome::Exited(22),
                elapsed: Duration::from_millis(1200),
                next: Next::Retry {
                    delay: Delay {
                        delay: Duration::from_millis(312),
                        bound: Duration::from_millis(400),
                    },
                    server: false,
                },
                hint: None,
                http_status: None,
            },
            Event::GaveUp {
                attempts: 7,
                total: Duration::from_millis(41_200),
                outcome: Outcome::Exited(22),
                reason: Ending::Exhausted,
                short_of: None,
            },
        ];
        assert_eq!(
            lines(Verbosity::Normal, &events),
            "backoff: attempt 2/7 failed (exit 22) after 1.20s; retrying in 312ms\n\
             backoff: giving up after 7 attempts in 41.2s: exit 22\n"
        );
        assert!(lines(Verbosity::Verbose, &events).contains("(bound 400ms)"));
        assert_eq!(lines(Verbosity::Quiet, &events), "");
    }

    #[test]
    fn a_command_whose_reader_went_away_ends_quietly_unless_verbose() {
        let events = [
            Event::Failed {
                attempt: 1,
                max_attempts: Some(7),
                outcome: Outcome::Signaled(signal::PIPE),
                elapsed: Duration::from_millis(3),
                next: Next::Stop(StopReason::NeverRetried),
                hint: None,
                http_status: None,
            },
            Event::GaveUp {
                attempts: 1,
                total: Duration::from_millis(3),
                outcome: Outcome::Signaled(signal::PIPE),
                reason: Ending::Stopped,
                short_of: None,
            },
        ];
        assert_eq!(lines(Verbosity::Normal, &events), "");
        assert_eq!(lines(Verbosity::Verbose, &events).lines().count(), 2);
    }

    /// The first attempt of `program` was not found.
    fn not_found(program: &OsString) -> Event<'_> {
        Event::CannotStart {
            attempt: 1,
            outcome: Outcome::NotFound,
            program,
            error: "No such file or directory",
            total: std::time::Duration::ZERO,
        }
    }

    #[test]
    fn quiet_still_tells_why_the_command_cannot_start() {
        let program = OsString::from("nope");
        let e = not_found(&program);
        assert_eq!(
            lines(Verbosity::Quiet, &[e]),
            "backoff: cannot run 'nope': No such file or directory\n"
        );
    }

    #[test]
    fn the_time_and_the_name_start_lines_and_annotations() {
        let labels = Labels {
            clock: Some(|| std::time::SystemTime::UNIX_EPOCH),
            name: Some("job".to_owned()),
        };
        let time = crate::report::local_rfc3339(std::time::SystemTime::UNIX_EPOCH);
        let program = OsString::from("nope");
        let e = not_found(&program);
        let mut out = Vec::new();
        TextReport::new(&mut out, Verbosity::Normal, labels.clone()).event(&e);
        TextReport::github(&mut out, Verbosity::Normal, labels).event(&e);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!(
                "backoff: {time} job: cannot run 'nope': No such file or directory\n\
                 ::error title=job::{time} job: cannot run 'nope': No such file or directory\n"
            )
        );
    }

    #[test]
    fn the_countdown_follows_a_retry_or_a_run_that_goes_on_only() {
        let retry = Next::Retry {
            delay: Delay {
                delay: Duration::from_secs(12),
                bound: Duration::from_secs(20),
            },
            server: false,
        };
        let failed = |next| Event::Failed {
            attempt: 2,
            max_attempts: Some(7),
            outcome: Outcome::Exited(1),
            elapsed: Duration::from_millis(1200),
            next,
            hint: None,
            http_status: None,
        };
        assert_eq!(status(&failed(retry)), Some("next attempt 3/7".to_owned()));
        assert_eq!(status(&failed(Next::Exhausted)), None);
        let passed = Event::Passed {
            attempt: 2,
            max_attempts: None,
            outcome: Outcome::Exited(0),
            elapsed: Duration::from_millis(5),
            streak: 2,
            needed: Some(3),
            next: retry,
            http_status: None,
        };
        assert_eq!(status(&passed), Some("next attempt 3".to_owned()));
    }

    #[test]
    fn an_attempt_is_folded_and_its_annotation_follows_the_fold() {
        let events = [
            Event::AttemptStarted {
                attempt: 1,
                max_attempts: Some(3),
            },
            Event::Failed {
                attempt: 1,
                max_attempts: Some(3),
                outcome: Outcome::Exited(1),
                elapsed: Duration::from_millis(5),
                next: Next::Retry {
                    delay: Delay {
                        delay: Duration::from_millis(80),
                        bound: Duration::from_millis(100),
                    },
                    server: false,
                },
                hint: None,
                http_status: None,
            },
        ];
        let folded = |v| {
            let mut out = Vec::new();
            let mut r = TextReport::github(&mut out, v, Labels::default());
            for e in &events {
                r.event(e);
            }
            String::from_utf8(out).unwrap()
        };
        assert_eq!(
            folded(Verbosity::Normal),
            "::group::attempt 1/3\n::endgroup::\n\
             ::warning title=backoff::attempt 1/3 failed (exit 1) after 5ms; retrying in 80ms\n"
        );
        assert_eq!(folded(Verbosity::Quiet), "");
        assert!(!lines(Verbosity::Normal, &events).contains("::"));
    }

    // sh's quoting (cmd's is tested under Wine: tests/integration/windows.rs).
    #[cfg(unix)]
    #[test]
    fn quoting_keeps_plain_words_and_quotes_the_rest() {
        let cmd: Vec<OsString> = ["curl", "-fsS", "a b", "it's"].map(OsString::from).to_vec();
        assert_eq!(quote_command(&cmd), r"curl -fsS 'a b' 'it'\''s'");
    }
}
