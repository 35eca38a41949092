//! The retry loop: attempt, classify, delay, again. It touches no OS facility
//! itself; attempts, waiting and the clock come through the `Executor` trait,
//! so unit tests run the whole loop with a fake in microseconds.

use std::ffi::OsString;
use std::io::PipeReader;
use std::time::{Duration, Instant};

use crate::classify::{Applied, Limit, Observed, Outcome, Rules, Status, StopReason, Verdict};
use crate::duration::human;
pub use crate::event::HookKind;
use crate::event::{
    AlertNews, BreakerNews, During, Ending, Event, HuntEnd, LockNews, Next, OnceNews, Report,
    Shared, ThrottleNews,
};
use crate::exit::Exit;
pub use crate::fleet::breaker::{Admission, Circuit, RunEnd};
use crate::policy::{Delay, Delays, Policy};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

/// The shortest delay a report that counts down is told about.
pub const COUNTDOWN_FROM: Duration = Duration::from_secs(1);

/// What an attempt is told about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptSpec<'a> {
    /// The run's id (`BACKOFF_RUN_ID`).
    pub run_id: &'a str,
    /// The fencing token of the lock the run holds, where its store gives
    /// one (`BACKOFF_LOCK_TOKEN`).
    pub lock_token: Option<u64>,
    /// 1-based attempt number.
    pub number: u64,
    /// Attempts allowed in all; `None` without a limit.
    pub max_attempts: Option<u64>,
    /// The previous attempt's outcome.
    pub last: Option<Outcome>,
    /// How long this attempt may run: `--timeout`, or the time left before
    /// `--max-time` if that is shorter.
    pub limit: Option<Duration>,
    /// The deadline of the whole run (`--max-time`), if any.
    pub deadline: Option<Instant>,
    /// How long after `--signal` a timed-out attempt is killed.
    pub grace: Duration,
}

/// How an attempt ended, as the executor saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// The attempt ended with this outcome.
    Done {
        /// How it ended.
        outcome: Outcome,
        /// What its output showed.
        seen: Observed,
        /// Why it could not start, when it could not.
        spawn_error: Option<String>,
    },
    /// backoff received this terminating signal (and passed it on); the
    /// attempt's outcome, unless the signal came before it could start.
    Interrupted(i32, Option<Outcome>),
}

/// How the output held back until the end of a run was passed on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Released {
    /// All of it (or there was none).
    All,
    /// Not all: the deadline passed while stdout took no more; this many
    /// bytes were dropped.
    Late(u64),
    /// Not all, or none: it could not be held whole, or stdout failed
    /// (a full disk); why.
    Lost(String),
    /// A terminating signal came while stdout took it.
    Interrupted(i32),
}

/// How a wait on behalf of a retry budget ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// The descriptor waited for is ready.
    Ready,
    /// The deadline passed.
    TimedOut,
    /// backoff received this terminating signal.
    Signal(i32),
}

/// Waiting on behalf of a retry budget, whose store may be slow: a store
/// call waits through this, so that a terminating signal ends it at once.
pub trait Wait {
    /// Waits until `pipe` can be read (an end of file or an error counts),
    /// or, without one, only for time to pass, until `deadline`.
    fn wait_ready(&mut self, pipe: Option<&PipeReader>, deadline: Instant) -> Waited;
}

/// The side effects of a run.
pub trait Executor: Wait {
    /// Runs one attempt to its end.
    fn attempt(&mut self, spec: &AttemptSpec<'_>) -> Ended;
    /// Waits for `delay`; returns the terminating signal that cut it short.
    fn pause(&mut self, delay: Duration) -> Option<i32>;
    /// Waits as `pause` does, and also returns (with `None`) early when the
    /// terminal's size changes, so that the countdown is drawn again at once.
    fn pause_or_resize(&mut self, delay: Duration) -> Option<i32> {
        self.pause(delay)
    }
    /// The monotonic clock.
    fn now(&self) -> Instant;
    /// The last attempt failed and retries remain: clean up after it now,
    /// before anything else (a budget, a delay) takes time.
    fn before_retry(&mut self) {}
    /// The run is over: release what was held back (`--hold-stdout`), but
    /// not past `deadline` for a reader that does not keep up.
    fn finish(&mut self, _deadline: Option<Instant>) -> Released {
        Released::All
    }
    /// Runs a hook to its end, within its limit.
    fn hook(&mut self, _hook: &HookRun<'_>) -> Ended {
        Ended::Done {
            outcome: Outcome::Exited(0),
            seen: Observed::default(),
            spawn_error: None,
        }
    }
}

/// The hooks of a run: shell commands, run with `sh -c`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hooks {
    /// `--on-start`.
    pub on_start: Option<String>,
    /// `--on-retry`.
    pub on_retry: Option<String>,
    /// `--on-give-up`.
    pub on_give_up: Option<String>,
    /// `--on-success`.
    pub on_success: Option<String>,
    /// `--hook-timeout`.
    pub timeout: Duration,
}

impl Hooks {
    fn command(&self, kind: HookKind) -> Option<&str> {
        match kind {
            HookKind::Start => self.on_start.as_deref(),
            HookKind::Retry => self.on_retry.as_deref(),
            HookKind::GiveUp => self.on_give_up.as_deref(),
            HookKind::Success => self.on_success.as_deref(),
        }
    }
}

/// One run of a hook, as the executor is asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookRun<'a> {
    /// Which hook.
    pub kind: HookKind,
    /// The shell command.
    pub command: &'a str,
    /// Its variables, beside backoff's own environment.
    pub env: Vec<(&'static str, String)>,
    /// How long it may run before it gets `--signal`.
    pub limit: Duration,
    /// How long after that signal it is killed, and how long what is left
    /// of its group once its shell has ended is waited for.
    pub grace: Duration,
    /// Whether it runs under the run's lock: a lock lost ends it as its
    /// time limit would (not a hook that closes a run which lost it).
    pub leased: bool,
}

/// What ends a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Goal {
    /// Success, this many attempts in a row (1 without `--consecutive`).
    Success {
        /// Successful attempts needed in a row.
        in_a_row: u64,
    },
    /// `--until-failure`: the first failure, within this many runs (`None`:
    /// no limit).
    Failure {
        /// Runs at most.
        runs: Option<u64>,
    },
}

impl Default for Goal {
    fn default() -> Self {
        Goal::Success { in_a_row: 1 }
    }
}

/// What a run needs to know.
#[derive(Debug, Clone)]
pub struct Plan<'a> {
    /// The run's id: a random UUID, `BACKOFF_RUN_ID` to the command and
    /// the hooks.
    pub run_id: &'a str,
    /// `--splay`: the wait before the first attempt, and its window.
    pub splay: Option<(Duration, Duration)>,
    /// The delay policy.
    pub policy: Policy,
    /// Retries after the first attempt; `None` without a limit.
    pub max_retries: Option<u64>,
    /// The jitter seed.
    pub seed: u64,
    /// Classification rules.
    pub rules: &'a Rules,
    /// The command line, for reports.
    pub command: &'a [OsString],
    /// `--timeout`: the limit of each attempt.
    pub timeout: Option<Duration>,
    /// `--max-time`: the deadline of the whole run, from its start.
    pub max_time: Option<Duration>,
    /// `--kill-after`: how long a timed-out attempt or hook may take to
    /// end after `--signal`. With `--max-time`, backoff exits by the
    /// deadline plus this, the hooks that close the run included.
    pub kill_after: Duration,
    /// `--preserve-status`: after a timeout, exit as the command did.
    pub preserve_status: bool,
    /// `--budget`: the retry budget shared with other processes.
    pub budget: Option<&'a dyn RetryBudget>,
    /// How a server's hint is obeyed.
    pub hints: Hints,
    /// What ends the run.
    pub goal: Goal,
    /// `--reset-after`: an attempt that ran this long before failing starts
    /// the retry count and the delays over.
    pub reset_after: Option<Duration>,
    /// `--on-retry`, `--on-give-up`, `--on-success`.
    pub hooks: &'a Hooks,
    /// `--breaker`: the circuit breaker shared with other processes.
    pub breaker: Option<&'a dyn CircuitBreaker>,
    /// `--breaker-exit`: the exit status of a run the breaker skips.
    pub breaker_exit: u8,
    /// `--throttle`: the adaptive throttle shared with other processes.
    pub throttle: Option<&'a dyn AdaptiveThrottle>,
    /// `--lock`: the lock the whole run holds.
    pub lock: Option<&'a dyn RunLock>,
    /// `--alert-after`: the count of the job's failed runs in a row, and N.
    pub alert: Option<(&'a dyn FailureStreak, u64)>,
    /// `--lock-wait`: how long the run waits in turn for a held lock.
    pub lock_wait: Duration,
    /// `--lock-exit`: the exit status of a run that finds the lock held.
    pub lock_exit: u8,
    /// The fencing token of the lock, once held, where the store gives one.
    pub lock_token: Option<u64>,
    /// Whether the run holds the lock (it may lose it).
    pub lock_held: bool,
    /// `--once-per`: the record of the job's last success, read and
    /// written under the lock.
    pub once: Option<&'a dyn OncePer>,
    /// The exit status of a run that `--once-per` skips because the job
    /// runs elsewhere (its lock held): 0, or `--lock-exit` when given. A
    /// period done exits 0.
    pub once_exit: u8,
    /// An option of backoff's own among the command's arguments, if any
    /// (`cli::advice::misplaced_option`): told when the first attempt fails
    /// as on bad usage.
    pub misplaced: Option<&'a str>,
    /// The preset, and where it came from, for reports.
    pub preset: Option<Applied>,
    /// The words the preset added before the command's own arguments, for
    /// reports.
    pub added: &'a [OsString],
}

/// A circuit breaker shared by processes: asked once when a run starts,
/// told once when it ends. Each call waits at most the store's timeout,
/// through `wait`.
pub trait CircuitBreaker: std::fmt::Debug {
    /// Its key, for reports.
    fn key(&self) -> &str;
    /// Whether this run may start the command: its decision (`Admitted`)
    /// or that its store cannot be used (`Unavailable`, said already); or
    /// the terminating signal that ended the decision.
    fn admit(&self, wait: &mut dyn Wait) -> Result<BreakerNews, i32>;
    /// Records how the run ended (`probe`: its claim, when it was the
    /// probe); the circuit after, and the time, when the store answered.
    fn record(
        &self,
        end: RunEnd,
        probe: Option<u64>,
        wait: &mut dyn Wait,
    ) -> Option<(Circuit, u64)>;
}

/// An adaptive throttle shared by processes (`--throttle`): asked before
/// each attempt, told of each attempt the backend accepted. Each call waits
/// at most the store's timeout, through `wait`.
pub trait AdaptiveThrottle: std::fmt::Debug {
    /// Its key, for reports.
    fn key(&self) -> &str;
    /// Whether the next attempt is sent, where `draw` is uniform in [0, 1)
    /// (the attempt is skipped when it falls below the probability): the
    /// decision, or that the store cannot be used (said already); or the
    /// terminating signal that ended the decision.
    fn admit(&self, draw: f64, wait: &mut dyn Wait) -> Result<ThrottleNews, i32>;
    /// Counts an attempt the backend accepted; a store that cannot be used
    /// is said once. The terminating signal that ended the call, if one
    /// did: the run ends by it once the attempt is told.
    fn accept(&self, wait: &mut dyn Wait) -> Option<i32>;
}

/// A lock held for a whole run (`--lock`): asked for once, after the
/// splay and before anything else, let go when the run ends. Each call
/// waits at most the store's timeout, through `wait`.
pub trait RunLock: std::fmt::Debug {
    /// Its key, for reports.
    fn key(&self) -> &str;
    /// Takes the lock for the run `run_id`, waiting in turn at most
    /// `patience` while another run holds it (told to `waiting`, once, as
    /// the wait starts, with the holder's record if it can be read) or
    /// while its store does not answer, and by `by` (`--max-time`) at the
    /// latest: the news, or the terminating signal that ended the wait.
    fn acquire(
        &self,
        run_id: &str,
        patience: Duration,
        by: Option<Instant>,
        wait: &mut dyn Wait,
        waiting: &mut dyn FnMut(Option<&crate::fleet::lock::Holder>),
    ) -> Result<LockNews, i32>;
    /// Lets go of the lock, if the run holds it, by `by` at the latest: the
    /// terminating signal that cut that short, if one did.
    fn release(&self, wait: &mut dyn Wait, by: Option<Instant>) -> Option<i32>;
    /// How the run's hold was lost, if it was (a lease not renewed in
    /// time, a lock file removed).
    fn lost(&self) -> Option<String>;
    /// Whether the hold was lost to a run of `--lock-replace`.
    fn replaced(&self) -> bool {
        false
    }
}

/// The count of a job's failed runs in a row, shared by processes
/// (`--alert-after`): told once when a run ends, before the hook that
/// closes it. Each call waits at most the store's timeout, through `wait`.
pub trait FailureStreak: std::fmt::Debug {
    /// The job's key, for reports.
    fn key(&self) -> &str;
    /// Counts a run that `failed`, or starts the count again after a
    /// success: the news (a store that cannot be used is said already), or
    /// the terminating signal that ended the call.
    fn tally(&self, failed: bool, wait: &mut dyn Wait) -> Result<AlertNews, i32>;
}

/// The record of a job run at most once per period (`--once-per`): read
/// once the run holds the job's lock, written after a success before the
/// lock is let go. Each call waits at most the store's timeout, through
/// `wait`.
pub trait OncePer: std::fmt::Debug {
    /// Its key, for reports.
    fn key(&self) -> &str;
    /// Whether the period is done (`OnceNews::Decided`), or that the
    /// store cannot be used (`Unavailable`, said already); or the
    /// terminating signal that ended the call.
    fn decide(&self, wait: &mut dyn Wait) -> Result<OnceNews, i32>;
    /// Records the success of the run `run_id`, which decided to run at
    /// `at_ms` (`Recorded`, or `NotRecorded`, said already); or the
    /// terminating signal that ended the call.
    fn record(&self, run_id: &str, at_ms: u64, wait: &mut dyn Wait) -> Result<OnceNews, i32>;
}

/// What a retry budget answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// A token was taken (or the store is unusable and its fail mode says
    /// retry): the retry may start.
    Granted,
    /// No token (or the store is unusable and its fail mode says no retry).
    Refused,
    /// This terminating signal ended the decision.
    Interrupted(i32),
}

/// How a server's hint (`Retry-After` and the like) is obeyed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hints {
    /// `--retry-after-max`: a hint above it is not obeyed, and the run ends.
    pub max: Duration,
    /// `--retry-after-jitter`: the wait is hint × U[1, 1 + jitter), at most
    /// `max`, so that clients told the same time do not all come back at
    /// once.
    pub jitter: f64,
}

impl Default for Hints {
    fn default() -> Self {
        Hints {
            max: Duration::from_mins(5),
            jitter: 0.2,
        }
    }
}

/// A retry budget: every retry must take a token from it. Each call waits
/// at most the store's timeout, through `wait`.
pub trait RetryBudget: std::fmt::Debug {
    /// Takes a token for a retry.
    fn take(&self, wait: &mut dyn Wait) -> Decision;
    /// Deposits after a success; a signal ends it, and the run still ends
    /// with its success.
    fn deposit(&self, wait: &mut dyn Wait);
}

/// The exit status for a run whose last attempt ended with `outcome`;
/// `preserve_status` makes a timed-out attempt exit as the command did. An
/// unmet condition exits 1, as grep does when no line matches.
pub fn exit_for(outcome: Outcome, preserve_status: bool) -> Exit {
    let status = match outcome {
        Outcome::Exited(c) => Status::Code(c),
        Outcome::Unmet(_) => Status::Code(1),
        Outcome::Signaled(s) => Status::Signal(s),
        Outcome::TimedOut(s, _) if preserve_status => s,
        Outcome::TimedOut(..) => return Exit::TIMEOUT,
        Outcome::NotFound => return Exit::NOT_FOUND,
        Outcome::CannotRun => return Exit::CANNOT_RUN,
        Outcome::Unstarted(_) => return Exit::USAGE,
        Outcome::Throttled => return Exit::TEMPFAIL,
    };
    match status {
        Status::Code(c) => Exit::Code(c),
        Status::Signal(s) => Exit::Signal(s),
    }
}

/// Whether an attempt ended as programs do on bad usage: at once (within a
/// second), with exit 2 (getopt's programs, curl, Python's argparse) or 64
/// (`EX_USAGE`).
fn bad_usage(outcome: Outcome, elapsed: Duration) -> bool {
    matches!(outcome, Outcome::Exited(2 | 64)) && elapsed < Duration::from_secs(1)
}

/// Where a run stands between attempts.
#[derive(Debug, Default)]
struct Count {
    /// Attempts made.
    attempts: u64,
    /// Retries since the start or the last reset: what `--max-retries`
    /// limits.
    retries: u64,
    /// Failures since the last success or reset: the index of the next
    /// delay, so that the curve starts over after a success.
    failures: u64,
    /// Successful attempts in a row.
    streak: u64,
}

/// What follows an attempt.
enum Step {
    /// Another attempt, after this delay; `retry` when it retries a
    /// failure.
    Again {
        /// The delay.
        delay: Duration,
        /// Whether the attempt failed (and `--on-retry` runs).
        retry: bool,
    },
    /// The run ends: backoff exits so.
    Done(Exit),
}

/// One run of the retry loop: its plan, its side effects, and where it
/// stands.
struct Loop<'r, 'p> {
    plan: &'r Plan<'p>,
    exec: &'r mut dyn Executor,
    report: &'r mut dyn Report,
    start: Instant,
    deadline: Option<Instant>,
    /// The deadline plus `--kill-after`: backoff exits by then.
    exit_by: Option<Instant>,
    max_attempts: Option<u64>,
    waits: Waits,
    count: Count,
    /// The last attempt that ended, and how: for the hooks.
    last: Option<Outcome>,
    /// The last attempt that ran (that the throttle did not skip): the
    /// status of a run whose last attempt was skipped.
    ran: Option<Outcome>,
    /// A terminating signal that ended a store call after an attempt (the
    /// throttle's accept): the run ends by it before the next attempt.
    pending: Option<i32>,
    /// Why the run ends without success, once it does: for `--on-give-up`.
    reason: Option<Ending>,
    /// The circuit breaker, told how the run ended, and the claim of this
    /// run's probe, if it is one.
    breaker: Option<(&'r dyn CircuitBreaker, Option<u64>)>,
}

/// An attempt that ended, as the loop judges it.
struct Judged {
    number: u64,
    outcome: Outcome,
    elapsed: Duration,
    seen: Observed,
    /// Whether `--max-time` (not `--timeout`) cut it short.
    cut: bool,
}

/// Runs the retry loop to its end and returns how backoff should exit. With
/// a circuit breaker, it first asks whether the command may run at all (an
/// open circuit ends the run at once, with `--breaker-exit`; a half-open
/// one makes this run its probe, of one attempt), and when the run ends
/// (before the hook that closes it) tells it how.
pub fn run(plan: &Plan<'_>, exec: &mut dyn Executor, report: &mut dyn Report) -> Exit {
    let start = exec.now();
    if let Some(signal) = splay(plan, exec, report) {
        let during = During::Splay;
        report.event(&Event::Interrupted { signal, during });
        return Exit::Signal(signal);
    }
    let Some(lock) = plan.lock else {
        return admitted(plan, exec, report, start);
    };
    // The lock is taken once the splay is over: it is held while the job
    // works, not while it waits its turn in the fleet's window. The wait
    // ends by --max-time, as any wait of the run does.
    let key = lock.key();
    let patience = plan.max_time.map_or(plan.lock_wait, |t| {
        plan.lock_wait
            .min(t.saturating_sub(exec.now().saturating_duration_since(start)))
    });
    let deadline = plan.max_time.and_then(|t| start.checked_add(t));
    let asked = {
        // A run that waits says whom for, as the wait starts.
        let mut waiting = |holder: Option<&crate::fleet::lock::Holder>| {
            let news = LockNews::Waiting {
                holder: holder.cloned(),
                patience,
            };
            report.event(&Event::Lock { key, news: &news });
        };
        lock.acquire(plan.run_id, patience, deadline, exec, &mut waiting)
    };
    let news = match asked {
        Ok(news) => news,
        Err(signal) => {
            let during = During::Decision(Shared::Lock);
            report.event(&Event::Interrupted { signal, during });
            return Exit::Signal(signal);
        }
    };
    // With --once-per, a lock held elsewhere is the job running there: a
    // skip, not a refusal.
    if let (Some(once), LockNews::Busy { holder, .. }) = (plan.once, &news) {
        let news = OnceNews::Running {
            holder: holder.clone(),
        };
        report.event(&Event::Once {
            key: once.key(),
            news: &news,
        });
        return Exit::Code(plan.once_exit.into());
    }
    report.event(&Event::Lock { key, news: &news });
    let (token, settle) = match news {
        LockNews::Held { token, settle, .. } => (Some(token), settle),
        LockNews::Busy { .. } => return Exit::Code(plan.lock_exit.into()),
        LockNews::Unavailable { run: false, .. } => return Exit::TEMPFAIL,
        LockNews::Unavailable { run: true, .. }
        | LockNews::Lost { .. }
        | LockNews::Waiting { .. } => (None, None),
    };
    let held = Plan {
        lock_token: token.flatten(),
        lock_held: token.is_some(),
        ..plan.clone()
    };
    // backoff exits by the deadline plus --kill-after: so does the letting
    // go, which a signal cuts short (the lease then runs out).
    let letting_go_by = deadline.and_then(|d| d.checked_add(plan.kill_after));
    if let Some(settle) = settle
        && let Some(signal) = settle_wait(plan, exec, report, start, settle)
    {
        lock.release(exec, letting_go_by);
        let during = During::Decision(Shared::Lock);
        report.event(&Event::Interrupted { signal, during });
        return Exit::Signal(signal);
    }
    let exit = match plan.once {
        Some(once) => once_per(once, &held, exec, report, start),
        None => admitted(&held, exec, report, start),
    };
    match lock.release(exec, letting_go_by) {
        // The run told how it ended; a signal that came while the lock was
        // let go ends backoff by it, as during the end check-in.
        Some(signal) => Exit::Signal(signal),
        None => exit,
    }
}

/// A run of a job done at most once per period, under its lock: the
/// record of the last success decides whether it runs; a success is
/// recorded before the lock is let go. A period done exits 0, a store
/// that cannot be used follows `--lock-fail`.
fn once_per(
    once: &dyn OncePer,
    plan: &Plan<'_>,
    exec: &mut dyn Executor,
    report: &mut dyn Report,
    start: Instant,
) -> Exit {
    let key = once.key();
    let news = match once.decide(exec) {
        Ok(news) => news,
        Err(signal) => return interrupted(report, signal, During::Decision(Shared::Lock)),
    };
    report.event(&Event::Once { key, news: &news });
    let at_ms = match news {
        OnceNews::Decided { verdict, .. } if !verdict.runs() => return Exit::SUCCESS,
        OnceNews::Decided { at_ms, .. } => Some(at_ms),
        OnceNews::Unavailable { run: false, .. } => return Exit::TEMPFAIL,
        _ => None,
    };
    let exit = admitted(plan, exec, report, start);
    if exit == Exit::SUCCESS
        && let Some(at_ms) = at_ms
    {
        match once.record(plan.run_id, at_ms, exec) {
            Ok(news) => report.event(&Event::Once { key, news: &news }),
            // The run succeeded: a signal now ends backoff by it.
            Err(signal) => return Exit::Signal(signal),
        }
    }
    exit
}

/// Waits before the first attempt after taking a lock that its store had
/// no trace of: a holder the store forgot may still run until it notices
/// (within --max-time; the attempt that would follow is then not made).
/// Returns the terminating signal that ended the wait. After a new lock
/// file, the wait is waited out even when a signal comes (it is short), so
/// that the next run cannot start beside a holder of the removed or
/// replaced file; a lease's store keeps the wait for the next run itself.
fn settle_wait(
    plan: &Plan<'_>,
    exec: &mut dyn Executor,
    report: &mut dyn Report,
    start: Instant,
    settle: crate::fleet::lock::Settle,
) -> Option<i32> {
    let left = plan.max_time.map_or(settle.wait, |t| {
        settle
            .wait
            .min(t.saturating_sub(exec.now().saturating_duration_since(start)))
    });
    let end = exec.now() + left;
    let signal = pause(exec, report, left, plan.lock)?;
    if settle.why == crate::fleet::lock::Forgotten::File {
        // Until then, or until the lock is lost (which ends every wait at
        // once).
        while let Some(rest) = end
            .checked_duration_since(exec.now())
            .filter(|r| !r.is_zero())
            .filter(|_| plan.lock.and_then(RunLock::lost).is_none())
        {
            let _ = exec.pause(rest);
        }
    }
    Some(signal)
}

/// A run that the lock, if any, let through: the circuit breaker's
/// decision, then the attempts.
fn admitted(
    plan: &Plan<'_>,
    exec: &mut dyn Executor,
    report: &mut dyn Report,
    start: Instant,
) -> Exit {
    let Some(breaker) = plan.breaker else {
        return run_loop(plan, exec, report, start, None);
    };
    let key = breaker.key();
    let news = match breaker.admit(exec) {
        Ok(news) => news,
        Err(signal) => return interrupted(report, signal, During::Decision(Shared::Breaker)),
    };
    report.event(&Event::Breaker { key, news });
    let claim = match news {
        BreakerNews::Unavailable { run: false }
        | BreakerNews::Admitted {
            admission: Admission::Skip { .. },
            ..
        } => return Exit::Code(plan.breaker_exit.into()),
        BreakerNews::Admitted {
            admission: Admission::Probe { until_ms },
            ..
        } => Some(until_ms),
        _ => None,
    };
    // The probe is one attempt: its outcome alone decides, and the
    // throttle does not skip it.
    let probe_plan;
    let plan = if claim.is_some() {
        probe_plan = Plan {
            max_retries: Some(0),
            throttle: None,
            ..plan.clone()
        };
        &probe_plan
    } else {
        plan
    };
    run_loop(plan, exec, report, start, Some((breaker, claim)))
}

/// Waits `--splay`'s time before the first attempt, but no longer than
/// `--max-time`; returns the terminating signal that cut it short. It comes
/// before anything else a run does: a breaker's probe claim, a budget's or
/// a lock's store, a hook and the command are all reached at this host's
/// time, not at the moment the whole fleet started.
fn splay(plan: &Plan<'_>, exec: &mut dyn Executor, report: &mut dyn Report) -> Option<i32> {
    let (offset, window) = plan.splay?;
    let delay = plan.max_time.map_or(offset, |t| offset.min(t));
    report.event(&Event::Splay { delay, window });
    pause(exec, report, delay, None)
}

/// Waits `left`, counted down (see `Loop::pause`); returns the terminating
/// signal that cut the wait short.
fn pause(
    exec: &mut dyn Executor,
    report: &mut dyn Report,
    left: Duration,
    lock: Option<&dyn RunLock>,
) -> Option<i32> {
    if left < COUNTDOWN_FROM || !report.counts_down() {
        return exec.pause(left);
    }
    let end = exec.now() + left;
    loop {
        let left = end.saturating_duration_since(exec.now());
        // A lock lost ends the wait at once (the executor's waits all end
        // then): the countdown is not drawn on.
        if left.is_zero() || lock.is_some_and(|l| l.lost().is_some()) {
            return None;
        }
        report.event(&Event::Countdown { left });
        // Until the figure shown, the seconds left rounded up, changes.
        let shown = left.as_secs() + u64::from(left.subsec_nanos() > 0);
        let step = left.saturating_sub(Duration::from_secs(shown - 1));
        if let Some(signal) = exec.pause_or_resize(step) {
            return Some(signal);
        }
    }
}

/// Attempts in all, when the retry limit fixes them: `--until-failure N`'s
/// runs, or the retries after the first attempt and it; `None` without a
/// fixed number (`--forever`, `--consecutive`, `--reset-after`).
pub fn max_attempts(
    goal: Goal,
    max_retries: Option<u64>,
    reset_after: Option<Duration>,
) -> Option<u64> {
    match goal {
        Goal::Failure { runs } => runs,
        Goal::Success { in_a_row: 1 } if reset_after.is_none() => {
            max_retries.map(|r| r.saturating_add(1))
        }
        Goal::Success { .. } => None,
    }
}

/// The retry loop of `run`, started at `start`: how backoff should exit.
/// `breaker`, with the claim of a probe, is told how the run ended.
fn run_loop(
    plan: &Plan<'_>,
    exec: &mut dyn Executor,
    report: &mut dyn Report,
    start: Instant,
    breaker: Option<(&dyn CircuitBreaker, Option<u64>)>,
) -> Exit {
    let max_attempts = max_attempts(plan.goal, plan.max_retries, plan.reset_after);
    // A deadline too far to represent is no deadline at all.
    let deadline = plan.max_time.and_then(|t| start.checked_add(t));
    let mut run = Loop {
        plan,
        exec,
        report,
        start,
        deadline,
        exit_by: deadline.and_then(|d| d.checked_add(plan.kill_after)),
        max_attempts,
        waits: Waits::new(plan),
        count: Count::default(),
        last: None,
        ran: None,
        pending: None,
        reason: None,
        breaker,
    };
    run.report.event(&Event::Start {
        run_id: plan.run_id,
        command: plan.command,
        max_attempts,
        preset: plan.preset,
        added: plan.added,
    });
    run.go()
}

impl Loop<'_, '_> {
    /// Attempts and delays, until the run ends.
    fn go(&mut self) -> Exit {
        let plan = self.plan;
        // --on-start runs once, before the first attempt (and any decision
        // of a shared state's store): its failure is told and changes
        // nothing; a signal during it ends the run before any attempt.
        if let Err(signal) = self.hook(HookKind::Start, None) {
            return self.interrupted(signal, During::Start);
        }
        loop {
            match self.attempt() {
                Step::Done(exit) => return exit,
                Step::Again { delay, retry } => {
                    if let Some(signal) = self.pending {
                        let during = During::Decision(Shared::Throttle);
                        return self.interrupted(signal, during);
                    }
                    // --on-retry runs at the start of the delay, and its time
                    // counts against it.
                    let began = self.exec.now();
                    if retry && let Err(signal) = self.hook(HookKind::Retry, Some(delay)) {
                        return self.interrupted(signal, During::Delay);
                    }
                    let now = self.exec.now();
                    // The hook may have taken the time left: then no attempt
                    // starts, as after a budget's decision.
                    if retry
                        && plan.hooks.on_retry.is_some()
                        && self.deadline.is_some_and(|d| now >= d)
                    {
                        return self.too_late(self.count.attempts.saturating_add(1));
                    }
                    let spent = now.saturating_duration_since(began);
                    if let Some(signal) = self.pause(delay.saturating_sub(spent)) {
                        return self.interrupted(signal, During::Delay);
                    }
                }
            }
        }
    }

    /// Waits `left` before the next attempt. A report that counts down is
    /// told the time left when the wait starts and each time its whole
    /// seconds change (so a 10 s delay wakes ten times); waits under a
    /// second are not counted down. Returns the terminating signal that cut
    /// the wait short.
    fn pause(&mut self, left: Duration) -> Option<i32> {
        let lock = self.plan.lock.filter(|_| self.plan.lock_held);
        pause(self.exec, self.report, left, lock)
    }

    /// Runs the next attempt and decides what follows.
    fn attempt(&mut self) -> Step {
        let plan = self.plan;
        let last = self.last;
        if let Some(why) = self.lock_lost() {
            return Step::Done(self.lost_lock(why));
        }
        self.count.attempts = self.count.attempts.saturating_add(1);
        let number = self.count.attempts;
        if let Some(step) = self.throttled(number) {
            return step;
        }
        // A decision (or a delay that overslept) took the time: no attempt
        // starts after the deadline.
        if self.deadline.is_some_and(|d| self.exec.now() >= d) {
            return Step::Done(self.too_late(number));
        }
        let left = self
            .deadline
            .map(|d| d.saturating_duration_since(self.exec.now()));
        let spec = AttemptSpec {
            run_id: plan.run_id,
            lock_token: plan.lock_token,
            number,
            max_attempts: self.max_attempts,
            last,
            limit: min_some(plan.timeout, left),
            deadline: self.deadline,
            grace: self.grace(left),
        };
        self.report.event(&Event::AttemptStarted {
            attempt: number,
            max_attempts: self.max_attempts,
        });
        let began = self.exec.now();
        let ended = self.exec.attempt(&spec);
        let elapsed = self.exec.now().saturating_duration_since(began);
        let (outcome, seen, spawn_error) = match ended {
            Ended::Done {
                outcome,
                seen,
                spawn_error,
            } => (plan.rules.judged(outcome, &seen), seen, spawn_error),
            Ended::Interrupted(signal, outcome) => {
                self.last = outcome.or(self.last);
                // Without an outcome, the signal came before it could start.
                let during = outcome.map_or(During::Delay, |o| During::Attempt(number, o, elapsed));
                return Step::Done(self.interrupted(signal, during));
            }
        };
        self.last = Some(outcome);
        self.ran = Some(outcome);
        if let Some(why) = self.lock_lost() {
            self.report.event(&Event::Failed {
                attempt: number,
                max_attempts: self.max_attempts,
                outcome,
                elapsed,
                next: self.lost_next(),
                hint: seen.hint,
                http_status: seen.http_status,
            });
            return Step::Done(self.lost_lock(why));
        }
        let verdict = plan.rules.classify(outcome, &seen);
        if let Some(t) = plan.throttle
            && accepted(outcome, verdict)
        {
            self.pending = self.pending.or(t.accept(self.exec));
        }
        let cut = matches!(outcome, Outcome::TimedOut(_, Limit::Time))
            && left.is_some_and(|l| plan.timeout.is_none_or(|t| l < t));
        let judged = Judged {
            number,
            outcome,
            elapsed,
            seen,
            cut,
        };
        if let Some(option) = plan.misplaced
            && verdict != Verdict::Success
            && number == 1
            && bad_usage(outcome, elapsed)
        {
            self.report.event(&Event::MisplacedOption {
                option,
                program: &plan.command[0],
            });
        }
        match verdict {
            Verdict::Success => self.passed(&judged),
            Verdict::Stop(StopReason::CannotStart) => {
                self.report.event(&Event::CannotStart {
                    attempt: number,
                    outcome,
                    program: &plan.command[0],
                    error: spawn_error.as_deref().unwrap_or("cannot start"),
                    total: self.exec.now().saturating_duration_since(self.start),
                });
                let exit = exit_for(outcome, plan.preserve_status);
                Step::Done(self.closing(HookKind::GiveUp, Some(Ending::Stopped), exit))
            }
            _ => self.failed(&judged, verdict),
        }
    }

    /// Asks the adaptive throttle, if there is one, whether attempt `number`
    /// is sent: `None` when it is (the deadline, which the decision may
    /// have passed, is checked next); else what follows the skipped
    /// attempt, a failure of its own outcome that the policy retries (or
    /// the end of the run, when a signal ended the decision).
    fn throttled(&mut self, number: u64) -> Option<Step> {
        let throttle = self.plan.throttle?;
        let draw = self.waits.throttle_rng.random::<f64>();
        let news = match throttle.admit(draw, self.exec) {
            Ok(news) => news,
            Err(signal) => {
                // No attempt started.
                self.count.attempts = number - 1;
                let during = During::Decision(Shared::Throttle);
                return Some(Step::Done(self.interrupted(signal, during)));
            }
        };
        // The decision took time: an attempt it sends after the deadline is
        // not sent, and the event says so.
        let late = news.send() && self.deadline.is_some_and(|d| self.exec.now() >= d);
        self.report.event(&Event::Throttle {
            key: throttle.key(),
            attempt: number,
            news,
            late,
        });
        if news.send() {
            return None;
        }
        self.last = Some(Outcome::Throttled);
        self.report.event(&Event::AttemptStarted {
            attempt: number,
            max_attempts: self.max_attempts,
        });
        let judged = Judged {
            number,
            outcome: Outcome::Throttled,
            elapsed: Duration::ZERO,
            seen: Observed::default(),
            cut: false,
        };
        Some(self.failed(&judged, Verdict::Retry))
    }

    /// The exit status of a run that ends after an attempt that ended with
    /// `outcome`: a skipped attempt has none, and the run exits with that
    /// of the last attempt that ran (`EX_TEMPFAIL`, 75, when none did).
    fn exit_for(&self, outcome: Outcome) -> Exit {
        let outcome = match outcome {
            Outcome::Throttled => self.ran.unwrap_or(Outcome::Throttled),
            o => o,
        };
        exit_for(outcome, self.plan.preserve_status)
    }

    /// After a successful attempt: the end of the run, or another run after
    /// a delay (a streak not complete, `--until-failure`).
    fn passed(&mut self, a: &Judged) -> Step {
        let plan = self.plan;
        self.count.streak = self.count.streak.saturating_add(1);
        self.count.failures = 0;
        if let Some(b) = plan.budget {
            b.deposit(self.exec);
        }
        let total = self.exec.now().saturating_duration_since(self.start);
        let (done, needed) = match plan.goal {
            Goal::Success { in_a_row } => (self.count.streak >= in_a_row, Some(in_a_row)),
            Goal::Failure { runs } => (runs.is_some_and(|r| a.number >= r), None),
        };
        if done {
            let event = match plan.goal {
                Goal::Failure { .. } => Event::NoFailure {
                    runs: a.number,
                    total,
                    reason: HuntEnd::Runs,
                    last: Some((a.number, a.outcome, a.elapsed)),
                },
                Goal::Success { .. } => Event::Succeeded {
                    attempt: a.number,
                    max_attempts: self.max_attempts,
                    outcome: a.outcome,
                    elapsed: a.elapsed,
                    total,
                    streak: self.count.streak,
                    condition: plan.rules.until_output,
                    http_status: a.seen.http_status,
                },
            };
            return Step::Done(self.end(&event, Exit::SUCCESS));
        }
        // Another run: the delay curve starts over after a success.
        self.exec.before_retry();
        let next = retry_before(
            self.waits.delays.next(0),
            false,
            self.exec.now(),
            self.deadline,
            plan.max_time,
        );
        self.report.event(&Event::Passed {
            attempt: a.number,
            max_attempts: self.max_attempts,
            outcome: a.outcome,
            elapsed: a.elapsed,
            streak: self.count.streak,
            needed,
            next,
            http_status: a.seen.http_status,
        });
        if let Next::Retry { delay, .. } = next {
            return Step::Again {
                delay: delay.delay,
                retry: false,
            };
        }
        Step::Done(self.too_late(a.number.saturating_add(1)))
    }

    /// Ends a run whose attempt `number` cannot start before the deadline
    /// (a delay would pass it, or a decision or `--on-retry` took the time
    /// left), as the goal says: with the last attempt's status, or 1 for a
    /// streak of `--consecutive` not complete, or 0 for `--until-failure`,
    /// which found no failure (even in no run); else 124 when no attempt
    /// could start at all.
    fn too_late(&mut self, number: u64) -> Exit {
        self.count.attempts = number - 1;
        let total = self.exec.now().saturating_duration_since(self.start);
        let (event, exit) = match (self.plan.goal, self.last) {
            // No failure found before the deadline: that is the finding.
            (Goal::Failure { .. }, _) => (
                Event::NoFailure {
                    runs: number - 1,
                    total,
                    reason: HuntEnd::Deadline,
                    last: None,
                },
                Exit::SUCCESS,
            ),
            (Goal::Success { .. }, None) => {
                let event = Event::Unstarted {
                    total,
                    max_time: self.plan.max_time.unwrap_or_default(),
                };
                self.report.event(&event);
                return self.closing(HookKind::GiveUp, Some(Ending::Deadline), Exit::TIMEOUT);
            }
            // The streak was not complete: no success.
            (Goal::Success { in_a_row }, Some(last)) if self.count.streak > 0 => (
                Event::GaveUp {
                    attempts: number - 1,
                    total,
                    outcome: last,
                    reason: Ending::Deadline,
                    short_of: Some((self.count.streak, in_a_row)),
                },
                Exit::Code(1),
            ),
            (Goal::Success { .. }, Some(last)) => (
                Event::GaveUp {
                    attempts: number - 1,
                    total,
                    outcome: last,
                    reason: Ending::Deadline,
                    short_of: None,
                },
                self.exit_for(last),
            ),
        };
        self.end(&event, exit)
    }

    /// After a failed attempt: a retry after a delay, or the end of the
    /// run.
    fn failed(&mut self, a: &Judged, verdict: Verdict) -> Step {
        let plan = self.plan;
        self.count.streak = 0;
        if let Goal::Failure { .. } = plan.goal
            && a.cut
        {
            // The deadline of a hunt is not a failure of the command.
            let event = Event::NoFailure {
                runs: a.number - 1,
                total: self.exec.now().saturating_duration_since(self.start),
                reason: HuntEnd::Cut,
                last: Some((a.number, a.outcome, a.elapsed)),
            };
            return Step::Done(self.end(&event, Exit::SUCCESS));
        }
        // A failure that ran long enough starts the retries over, if a
        // retry follows at all.
        let reset = verdict == Verdict::Retry
            && plan.reset_after.is_some_and(|after| a.elapsed >= after)
            && (self.count.retries > 0 || self.count.failures > 0);
        if reset {
            self.count.retries = 0;
            self.count.failures = 0;
        }
        // `cut`: a terminating signal that ended the budget's decision.
        let (next, cut) = match verdict {
            _ if matches!(plan.goal, Goal::Failure { .. }) => (Next::Found, None),
            Verdict::Stop(why) => (Next::Stop(why), None),
            Verdict::Retry if plan.max_retries.is_some_and(|m| self.count.retries >= m) => {
                (Next::Exhausted, None)
            }
            Verdict::Retry | Verdict::Success => {
                self.exec.before_retry();
                let next = retry_next(
                    plan,
                    &mut self.waits,
                    self.count.failures,
                    &a.seen,
                    self.exec.now(),
                    self.deadline,
                );
                // A retry after a skipped attempt sends the request it
                // did not send: it takes no token.
                if a.outcome == Outcome::Throttled {
                    (next, None)
                } else {
                    budgeted(plan, next, self.exec, self.deadline)
                }
            }
        };
        if let (true, Some(after), Next::Retry { .. }) = (reset, plan.reset_after, next) {
            self.report.event(&Event::Reset {
                attempt: a.number,
                ran: a.elapsed,
                after,
            });
        }
        self.report.event(&Event::Failed {
            attempt: a.number,
            max_attempts: self.max_attempts,
            outcome: a.outcome,
            elapsed: a.elapsed,
            next,
            hint: a.seen.hint,
            http_status: a.seen.http_status,
        });
        if let Some(signal) = cut {
            let during = During::Decision(Shared::Budget);
            return Step::Done(self.interrupted(signal, during));
        }
        let Next::Retry { delay, .. } = next else {
            let event = Event::GaveUp {
                attempts: a.number,
                total: self.exec.now().saturating_duration_since(self.start),
                outcome: a.outcome,
                reason: ending(next),
                short_of: None,
            };
            let exit = self.exit_for(a.outcome);
            return Step::Done(self.end(&event, exit));
        };
        self.count.retries = self.count.retries.saturating_add(1);
        self.count.failures = self.count.failures.saturating_add(1);
        Step::Again {
            delay: delay.delay,
            retry: true,
        }
    }

    /// Ends the run with `event` and `exit` (see `end`), then runs the
    /// hook of its ending.
    fn end(&mut self, event: &Event<'_>, exit: Exit) -> Exit {
        let exit = end(self.exec, self.report, self.deadline, event, exit);
        match (event, exit) {
            (Event::GaveUp { reason, .. }, _) => {
                self.closing(HookKind::GiveUp, Some(*reason), exit)
            }
            (_, Exit::SUCCESS) => self.closing(HookKind::Success, None, exit),
            // A success whose held stdout could not all be written out: a
            // signal came meanwhile, the deadline passed, or it was lost.
            (_, Exit::Signal(_)) => self.closing(HookKind::GiveUp, Some(Ending::Interrupted), exit),
            (_, Exit::TIMEOUT) => self.closing(HookKind::GiveUp, Some(Ending::Deadline), exit),
            _ => self.closing(HookKind::GiveUp, Some(Ending::Stopped), exit),
        }
    }

    /// How the run lost the lock it held, if it did.
    fn lock_lost(&self) -> Option<String> {
        if !self.plan.lock_held {
            return None;
        }
        self.plan.lock.and_then(RunLock::lost)
    }

    /// What follows an attempt ended by a lock lost: nothing, told as a
    /// lock lost or taken over.
    fn lost_next(&self) -> Next {
        if self.lock_replaced() {
            Next::Replaced
        } else {
            Next::LockLost
        }
    }

    /// Whether the lock the run held was taken over by a run of
    /// `--lock-replace`.
    fn lock_replaced(&self) -> bool {
        self.plan.lock_held && self.plan.lock.is_some_and(RunLock::replaced)
    }

    /// Ends a run that lost its lock (a lease not renewed in time, a lock
    /// file removed, a run of `--lock-replace` that took it over) for
    /// `why`, with the last attempt, if one ran, ended as for a timeout:
    /// says so, and gives up with reason `lock_lost` (or `replaced`) and
    /// `EX_TEMPFAIL`, then runs `--on-give-up`.
    fn lost_lock(&mut self, why: String) -> Exit {
        let replaced = self.lock_replaced();
        let reason = if replaced {
            Ending::Replaced
        } else {
            Ending::LockLost
        };
        if let Some(lock) = self.plan.lock {
            let news = LockNews::Lost {
                why,
                replaced,
                token: self.plan.lock_token,
            };
            self.report.event(&Event::Lock {
                key: lock.key(),
                news: &news,
            });
        }
        let event = Event::GaveUp {
            attempts: self.count.attempts,
            total: self.exec.now().saturating_duration_since(self.start),
            outcome: self.last.unwrap_or(Outcome::Throttled),
            reason,
            short_of: None,
        };
        self.report.event(&event);
        self.closing(HookKind::GiveUp, Some(reason), Exit::TEMPFAIL)
    }

    /// Ends a run that `signal` interrupted (see `interrupted`), then runs
    /// `--on-give-up`.
    fn interrupted(&mut self, signal: i32, during: During) -> Exit {
        let exit = interrupted(self.report, signal, during);
        self.closing(HookKind::GiveUp, Some(Ending::Interrupted), exit)
    }

    /// Runs the hook `kind` that closes a run ending with `exit` (for
    /// `--on-give-up`, for `reason`). Its failure leaves `exit` as it is; a
    /// terminating signal during it ends backoff by that signal, and the
    /// reports are told, so that what they say agrees with the exit status.
    fn closing(&mut self, kind: HookKind, reason: Option<Ending>, exit: Exit) -> Exit {
        self.reason = reason;
        self.record(reason);
        // A failure tolerated under --alert-after alerts no one: its
        // --on-give-up, the hook that alerts, does not run.
        match self.alert(reason, exit) {
            Err(signal) => {
                let during = During::Decision(Shared::Alert);
                self.report.event(&Event::Interrupted { signal, during });
                return Exit::Signal(signal);
            }
            Ok(true) if kind == HookKind::GiveUp => return exit,
            Ok(_) => {}
        }
        match self.hook(kind, None) {
            Ok(()) => exit,
            Err(signal) => {
                self.report.event(&Event::InterruptedHook { signal, kind });
                Exit::Signal(signal)
            }
        }
    }

    /// Tells the circuit breaker, if there is one, how the run ended (why,
    /// when it did not succeed), and reports the circuit after.
    fn record(&mut self, reason: Option<Ending>) {
        let Some((breaker, claim)) = self.breaker else {
            return;
        };
        let end = match reason {
            None => RunEnd::Succeeded,
            // A run whose attempts the throttle all skipped tells nothing
            // of the command either.
            Some(Ending::Interrupted) => RunEnd::Interrupted,
            Some(_) if self.ran.is_none() => RunEnd::Interrupted,
            Some(_) => RunEnd::GaveUp,
        };
        if let Some((after, now_ms)) = breaker.record(end, claim, self.exec) {
            self.report.event(&Event::Breaker {
                key: breaker.key(),
                news: BreakerNews::Recorded {
                    probe: claim.is_some(),
                    end,
                    after,
                    now_ms,
                },
            });
        }
    }

    /// Tells the count of the job's failed runs in a row, if there is one
    /// (`--alert-after`), how the run ended, and reports it: whether the
    /// run is a failure tolerated, or the terminating signal that ended
    /// the call (the run then ends by it, as a signal during any decision
    /// does). A run that a signal or `--lock-replace` ended tells nothing
    /// of the job: the count is left as it is, and the run alerts as
    /// without `--alert-after`.
    fn alert(&mut self, reason: Option<Ending>, exit: Exit) -> Result<bool, i32> {
        let Some((streak, alert_after)) = self.plan.alert else {
            return Ok(false);
        };
        let failed = match reason {
            // Nor does one whose command never ran (the throttle skipped
            // every attempt, the lock was lost or --max-time passed first),
            // nor one that --lock-replace ended: it did not fail, another
            // run took its place.
            Some(Ending::Interrupted | Ending::Replaced) => return Ok(false),
            Some(_) if self.ran.is_none() => return Ok(false),
            Some(_) => true,
            None => exit != Exit::SUCCESS,
        };
        let news = streak.tally(failed, self.exec)?;
        self.report.event(&Event::Alert {
            key: streak.key(),
            alert_after,
            news,
        });
        Ok(news.tolerated(alert_after).is_some())
    }

    /// Runs the hook `kind`, if there is one, with the variables of where
    /// the run stands (`delay`: the next delay, for `--on-retry`), and
    /// tells how it ended; returns the terminating signal that ended it.
    /// Its time is bounded as `hook_time` says; a closing hook with no time
    /// left is not run, and that is told.
    fn hook(&mut self, kind: HookKind, delay: Option<Duration>) -> Result<(), i32> {
        let plan = self.plan;
        let Some(command) = plan.hooks.command(kind) else {
            return Ok(());
        };
        let Some((limit, grace, bounded)) = self.hook_time(kind, self.exec.now()) else {
            let why = format!(
                "no time left: backoff exits by --max-time ({}) plus --kill-after ({})",
                human(plan.max_time.unwrap_or_default()),
                human(plan.kill_after)
            );
            self.report.event(&Event::Hook {
                kind,
                outcome: None,
                elapsed: Duration::ZERO,
                limit: Duration::ZERO,
                bounded: true,
                error: Some(&why),
                lock_lost: false,
            });
            return Ok(());
        };
        let mut env = vec![
            ("BACKOFF_RUN_ID", plan.run_id.to_owned()),
            ("BACKOFF_ATTEMPT", self.count.attempts.to_string()),
            (
                "BACKOFF_MAX_ATTEMPTS",
                self.max_attempts.map(|m| m.to_string()).unwrap_or_default(),
            ),
            (
                "BACKOFF_LAST_STATUS",
                self.last.map(Outcome::env_value).unwrap_or_default(),
            ),
        ];
        if let Some(d) = delay {
            env.push(("BACKOFF_NEXT_DELAY", seconds(d)));
        }
        if let Some(token) = plan.lock_token {
            env.push(("BACKOFF_LOCK_TOKEN", token.to_string()));
        }
        if let Some(reason) = self.reason {
            env.push(("BACKOFF_REASON", reason.name().to_owned()));
        }
        let began = self.exec.now();
        let leased = plan.lock_held && self.lock_lost().is_none();
        let ended = self.exec.hook(&HookRun {
            kind,
            command,
            env,
            limit,
            grace,
            leased,
        });
        let elapsed = self.exec.now().saturating_duration_since(began);
        let (outcome, signal, error) = match ended {
            Ended::Done {
                outcome,
                spawn_error,
                ..
            } => (Some(outcome), None, spawn_error),
            Ended::Interrupted(signal, outcome) => (outcome, Some(signal), None),
        };
        let lock_lost =
            leased && matches!(outcome, Some(Outcome::TimedOut(..))) && self.lock_lost().is_some();
        self.report.event(&Event::Hook {
            kind,
            outcome,
            elapsed,
            limit,
            bounded,
            error: error.as_deref(),
            lock_lost,
        });
        signal.map_or(Ok(()), Err)
    }

    /// How long after `--signal` an attempt with `left` before the
    /// deadline is killed: `--kill-after`, but no more than half the time
    /// from its `--signal` to backoff's exit when a hook closes the run.
    /// backoff exits `--kill-after` after the deadline at the latest, and a
    /// command that ignores `--signal` would otherwise leave that hook
    /// little time or none: `--on-give-up` would never tell of a hung
    /// command. An attempt the deadline ends gets half of `--kill-after`;
    /// one `--timeout` ends well before the deadline, all of it.
    fn grace(&self, left: Option<Duration>) -> Duration {
        let plan = self.plan;
        let closing = plan.hooks.on_give_up.is_some() || plan.hooks.on_success.is_some();
        match left {
            Some(left) if closing => {
                let signal_in = plan.timeout.map_or(left, |t| t.min(left));
                let after_signal = left
                    .saturating_sub(signal_in)
                    .saturating_add(plan.kill_after);
                plan.kill_after.min(after_signal / 2)
            }
            _ => plan.kill_after,
        }
    }

    /// How long the hook `kind`, started at `now`, may run before it gets
    /// `--signal`, how long after that it is killed, and whether
    /// `--max-time` rather than `--hook-timeout` set the first; `None` when
    /// no time is left for it. Without `--max-time`, `--hook-timeout` and
    /// `--kill-after`. `--on-retry` gets `--signal` by the deadline, as an
    /// attempt does. A hook that closes the run ends by the deadline plus
    /// `--kill-after`, when backoff exits: it gets `--signal` at the
    /// deadline, or, started after it, halfway through the time left (so
    /// that it has time to run and time to end), and SIGKILL `--kill-after`
    /// later, or at that end.
    fn hook_time(&self, kind: HookKind, now: Instant) -> Option<(Duration, Duration, bool)> {
        let (own, grace) = (self.plan.hooks.timeout, self.plan.kill_after);
        let Some(deadline) = self.deadline else {
            return Some((own, grace, false));
        };
        let to_deadline = deadline.saturating_duration_since(now);
        if matches!(kind, HookKind::Start | HookKind::Retry) {
            return Some((own.min(to_deadline), grace, to_deadline < own));
        }
        let Some(exit_by) = self.exit_by else {
            return Some((own, grace, false));
        };
        let left = exit_by.saturating_duration_since(now);
        if left.is_zero() {
            return None;
        }
        let until_signal = to_deadline.max(left / 2);
        let limit = own.min(until_signal);
        Some((
            limit,
            grace.min(left.saturating_sub(limit)),
            until_signal < own,
        ))
    }
}

/// Whether an attempt judged `verdict` counts as one the backend
/// accepted, for the adaptive throttle: a success, or a failure that is not
/// the backend's (a stop rule, an HTTP status not worth retrying, a 4xx),
/// or a command that could not start (nothing reached the backend). A
/// failure worth retrying is the backend's, and so are an interrupted one
/// and a request not idempotent whose fate is unknown.
fn accepted(outcome: Outcome, verdict: Verdict) -> bool {
    match verdict {
        // Nothing reached the backend: the request it counted is offset,
        // so that a host that cannot start the command does not throttle
        // the fleet.
        _ if matches!(
            outcome,
            Outcome::NotFound | Outcome::CannotRun | Outcome::Unstarted(_)
        ) =>
        {
            true
        }
        Verdict::Success => true,
        Verdict::Retry => false,
        Verdict::Stop(why) => !matches!(why, StopReason::NeverRetried | StopReason::NotIdempotent),
    }
}

/// Why a run that does not retry ends.
fn ending(next: Next) -> Ending {
    match next {
        Next::Stop(_) | Next::HintTooLong { .. } => Ending::Stopped,
        Next::Deadline { .. } => Ending::Deadline,
        Next::Budget => Ending::Budget,
        Next::Found => Ending::Found,
        Next::LockLost => Ending::LockLost,
        Next::Replaced => Ending::Replaced,
        _ => Ending::Exhausted,
    }
}

/// Ends a run that `signal` interrupted. A child that handled the signal and
/// exited normally gives its status; otherwise backoff dies by the signal.
fn interrupted(report: &mut dyn Report, signal: i32, during: During) -> Exit {
    // The held stdout of an interrupted attempt is not written: it would be
    // a partial body, and the user asked backoff to stop.
    report.event(&Event::Interrupted { signal, during });
    match during {
        During::Attempt(_, Outcome::Exited(c), _) => Exit::Code(c),
        _ => Exit::Signal(signal),
    }
}

/// Ends a run that succeeded or gave up: writes out what was held back,
/// then reports `event` and exits with `exit`. A terminating signal during
/// the writing ends the run by that signal instead; output dropped at the
/// deadline is reported, and the run ends as one that passed `--max-time`;
/// output lost is reported, and a success becomes backoff's failure (125).
fn end(
    exec: &mut dyn Executor,
    report: &mut dyn Report,
    deadline: Option<Instant>,
    event: &Event<'_>,
    exit: Exit,
) -> Exit {
    // A timed-out attempt's output waits for no reader: its time is up.
    let timed_out = matches!(
        event,
        Event::GaveUp {
            outcome: Outcome::TimedOut(..),
            ..
        } | Event::Succeeded {
            outcome: Outcome::TimedOut(..),
            ..
        }
    );
    let until = if timed_out {
        Some(exec.now())
    } else {
        deadline
    };
    match exec.finish(until) {
        Released::All => {
            report.event(event);
            exit
        }
        Released::Late(bytes) => {
            report.event(&Event::Undelivered { bytes });
            report.event(event);
            Exit::TIMEOUT
        }
        // Output lost is a failure of backoff's, never a success.
        Released::Lost(why) => {
            report.event(&Event::OutputLost { why: &why });
            report.event(event);
            if exit == Exit::SUCCESS {
                Exit::USAGE
            } else {
                exit
            }
        }
        Released::Interrupted(signal) => {
            report.event(&Event::InterruptedWriting { signal });
            Exit::Signal(signal)
        }
    }
}

/// What follows a failure worth retrying: a retry after the policy's delay
/// with this `index` (or the server's, if longer), unless the deadline
/// forbids.
fn retry_next(
    plan: &Plan<'_>,
    waits: &mut Waits,
    index: u64,
    seen: &Observed,
    now: Instant,
    deadline: Option<Instant>,
) -> Next {
    let mut delay = waits.delays.next(index);
    if let Some(hint) = seen.hint.map(|h| h.wait) {
        if hint > plan.hints.max {
            return Next::HintTooLong {
                hint,
                max: plan.hints.max,
            };
        }
        // The server's hint is a floor, above the cap if need be, jittered
        // upwards within the ceiling.
        let wait = jittered_hint(hint, plan.hints, &mut waits.hint_rng);
        if wait > delay.delay {
            delay.delay = wait;
            return retry_before(delay, true, now, deadline, plan.max_time);
        }
    }
    retry_before(delay, false, now, deadline, plan.max_time)
}

/// Where a run's waits come from: the policy's delays, and the jitter on
/// servers' hints, drawn from a generator of its own so that a hint leaves
/// the policy's delays as they were.
struct Waits {
    delays: Delays,
    hint_rng: Xoshiro256PlusPlus,
    /// The draws of the adaptive throttle's decisions.
    throttle_rng: Xoshiro256PlusPlus,
}

impl Waits {
    fn new(plan: &Plan<'_>) -> Waits {
        Waits {
            delays: plan.policy.delays(plan.seed),
            hint_rng: Xoshiro256PlusPlus::seed_from_u64(plan.seed ^ HINT_SEED),
            throttle_rng: Xoshiro256PlusPlus::seed_from_u64(plan.seed ^ THROTTLE_SEED),
        }
    }
}

/// Mixed into the seed of the generator of hints' jitter.
const HINT_SEED: u64 = 0x9e37_79b9_7f4a_7c15;

/// Mixed into the seed of the generator of the throttle's draws.
const THROTTLE_SEED: u64 = 0xd1b5_4a32_d192_ed03;

/// The wait a hint asks for: hint × U[1, 1 + jitter), at most the ceiling.
fn jittered_hint(hint: Duration, hints: Hints, rng: &mut Xoshiro256PlusPlus) -> Duration {
    if hints.jitter <= 0.0 || hint.is_zero() {
        return hint;
    }
    let factor = 1.0 + rng.random_range(0.0..hints.jitter);
    // A product past the ceiling (or past what a Duration holds) is the
    // ceiling.
    Duration::try_from_secs_f64(hint.as_secs_f64() * factor)
        .map_or(hints.max, |d| d.min(hints.max))
        .max(hint)
}

/// A retry `next` asks the budget for a token, if there is a budget. Its
/// decision takes time: the deadline is checked again after it, so that no
/// attempt starts after the deadline. A terminating signal that ends the
/// decision comes back beside the retry it cut short (which is reported as
/// planned, and then interrupted, as a delay is).
fn budgeted(
    plan: &Plan<'_>,
    next: Next,
    exec: &mut dyn Executor,
    deadline: Option<Instant>,
) -> (Next, Option<i32>) {
    let (Next::Retry { delay, server }, Some(budget)) = (next, plan.budget) else {
        return (next, None);
    };
    match budget.take(exec) {
        Decision::Granted => (
            retry_before(delay, server, exec.now(), deadline, plan.max_time),
            None,
        ),
        Decision::Refused => (Next::Budget, None),
        Decision::Interrupted(signal) => (next, Some(signal)),
    }
}

/// A retry after `delay`, unless it could not start before the deadline:
/// then it is not waited for, and the run gives up now, saying why.
fn retry_before(
    delay: Delay,
    server: bool,
    now: Instant,
    deadline: Option<Instant>,
    max_time: Option<Duration>,
) -> Next {
    match (deadline, max_time) {
        (Some(d), Some(max_time)) if now.checked_add(delay.delay).is_none_or(|t| t >= d) => {
            Next::Deadline {
                delay: delay.delay,
                max_time,
                passed: now >= d,
            }
        }
        _ => Next::Retry { delay, server },
    }
}

/// `d` in seconds, with as many decimals as it needs: `30`, `2.5`.
pub fn seconds(d: Duration) -> String {
    let fraction = format!("{:09}", d.subsec_nanos());
    let fraction = fraction.trim_end_matches('0');
    if fraction.is_empty() {
        d.as_secs().to_string()
    } else {
        format!("{}.{fraction}", d.as_secs())
    }
}

/// The smaller of two optional limits.
fn min_some(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jitter::Jitter;
    use std::cell::Cell;

    /// Replays scripted outcomes; time advances only when it sleeps.
    struct Fake {
        outcomes: Vec<Outcome>,
        seen: Vec<AttemptSpec<'static>>,
        slept: Vec<Duration>,
        now: Cell<Instant>,
        interrupt_pause: Option<i32>,
        /// How long a budget's wait takes, and how it ends.
        store: (Duration, Waited),
        /// How long each attempt runs, in order (none: no time).
        runs: Vec<Duration>,
        /// The hooks run, with their variables.
        hooks_run: Vec<(HookKind, Vec<(&'static str, String)>)>,
        /// Their limits: until `--signal`, then until SIGKILL.
        hook_limits: Vec<(Duration, Duration)>,
    }

    impl Fake {
        fn new(outcomes: &[Outcome]) -> Self {
            Fake {
                outcomes: outcomes.iter().rev().copied().collect(),
                seen: Vec::new(),
                slept: Vec::new(),
                now: Cell::new(Instant::now()),
                interrupt_pause: None,
                store: (Duration::ZERO, Waited::Ready),
                runs: Vec::new(),
                hooks_run: Vec::new(),
                hook_limits: Vec::new(),
            }
        }
    }

    impl Wait for Fake {
        fn wait_ready(&mut self, _: Option<&PipeReader>, _: Instant) -> Waited {
            self.now.set(self.now.get() + self.store.0);
            self.store.1
        }
    }

    impl Executor for Fake {
        fn attempt(&mut self, spec: &AttemptSpec<'_>) -> Ended {
            assert_eq!(spec.run_id, RUN_ID);
            self.seen.push(AttemptSpec {
                run_id: RUN_ID,
                ..*spec
            });
            let outcome = self.outcomes.pop().expect("more attempts than scripted");
            let ran = self.seen.len() - 1;
            if let Some(d) = self.runs.get(ran) {
                self.now.set(self.now.get() + *d);
            }
            Ended::Done {
                outcome,
                seen: Observed::default(),
                spawn_error: None,
            }
        }
        fn pause(&mut self, d: Duration) -> Option<i32> {
            self.slept.push(d);
            self.now.set(self.now.get() + d);
            self.interrupt_pause
        }
        fn now(&self) -> Instant {
            self.now.get()
        }
        fn hook(&mut self, hook: &HookRun<'_>) -> Ended {
            self.hooks_run.push((hook.kind, hook.env.clone()));
            self.hook_limits.push((hook.limit, hook.grace));
            Ended::Done {
                outcome: Outcome::Exited(0),
                seen: Observed::default(),
                spawn_error: None,
            }
        }
    }

    /// A budget whose store answers through one wait: granted when the
    /// wait is ready, else as the store's fail mode `open` says.
    #[derive(Debug)]
    struct SlowBudget {
        open: bool,
    }

    impl RetryBudget for SlowBudget {
        fn take(&self, wait: &mut dyn Wait) -> Decision {
            match wait.wait_ready(None, Instant::now()) {
                Waited::Ready => Decision::Granted,
                Waited::Signal(s) => Decision::Interrupted(s),
                Waited::TimedOut if self.open => Decision::Granted,
                Waited::TimedOut => Decision::Refused,
            }
        }
        fn deposit(&self, wait: &mut dyn Wait) {
            let _ = wait.wait_ready(None, Instant::now());
        }
    }

    #[derive(Default)]
    struct Events(Vec<String>);
    impl Report for Events {
        fn event(&mut self, e: &Event<'_>) {
            self.0.push(format!("{e:?}"));
        }
    }

    fn go(outcomes: &[Outcome], max_retries: Option<u64>, rules: &Rules) -> (Exit, Fake) {
        let mut fake = Fake::new(outcomes);
        let command = [OsString::from("cmd")];
        let plan = Plan {
            run_id: RUN_ID,
            splay: None,
            policy: Policy::formula(
                Duration::from_millis(100),
                Duration::from_secs(1),
                2.0,
                Jitter::None,
            ),
            max_retries,
            seed: 1,
            rules,
            command: &command,
            timeout: None,
            max_time: None,
            kill_after: Duration::from_secs(5),
            preserve_status: false,
            budget: None,
            hints: Hints::default(),
            goal: Goal::default(),
            reset_after: None,
            hooks: &NO_HOOKS,
            breaker: None,
            breaker_exit: 75,
            throttle: None,
            lock: None,
            alert: None,
            lock_wait: Duration::ZERO,
            lock_exit: 75,
            lock_token: None,
            lock_held: false,
            once: None,
            once_exit: 0,
            misplaced: None,
            preset: None,
            added: &[],
        };
        let exit = run(&plan, &mut fake, &mut Events::default());
        (exit, fake)
    }

    /// Runs `plan` (with `goal` and `reset_after`) against scripted
    /// outcomes, each attempt taking the time `runs` says.
    fn shaped(
        outcomes: &[Outcome],
        runs: &[Duration],
        goal: Goal,
        reset_after: Option<Duration>,
        max_retries: Option<u64>,
    ) -> (Exit, Fake, Vec<String>) {
        let mut fake = Fake::new(outcomes);
        fake.runs = runs.to_vec();
        let rules = Rules::default();
        let command = [OsString::from("cmd")];
        let plan = Plan {
            policy: Policy::formula(
                Duration::from_millis(100),
                Duration::from_secs(10),
                2.0,
                Jitter::None,
            ),
            max_retries,
            goal,
            reset_after,
            ..constant(Duration::ZERO, &rules, &command)
        };
        let mut events = Events::default();
        let exit = run(&plan, &mut fake, &mut events);
        (exit, fake, events.0)
    }

    const OK: Outcome = Outcome::Exited(0);
    const BAD: Outcome = Outcome::Exited(1);

    #[test]
    fn a_streak_restarts_after_a_failure_and_successes_use_no_retries() {
        let (exit, fake, _) = shaped(
            &[OK, BAD, OK, BAD, OK, OK],
            &[],
            Goal::Success { in_a_row: 2 },
            None,
            Some(2),
        );
        assert_eq!(exit, Exit::SUCCESS);
        assert_eq!(fake.seen.len(), 6);
        // After each success the curve starts over: 100ms every time.
        let ms: Vec<u128> = fake.slept.iter().map(Duration::as_millis).collect();
        assert_eq!(ms, [100, 100, 100, 100, 100]);
        assert_eq!(fake.seen[0].max_attempts, None);
    }

    #[test]
    fn the_hunt_ends_at_the_first_failure_with_its_status() {
        let (exit, fake, events) = shaped(
            &[OK, OK, Outcome::Exited(3)],
            &[],
            Goal::Failure { runs: Some(10) },
            None,
            None,
        );
        assert_eq!(exit, Exit::Code(3));
        assert_eq!(fake.seen.len(), 3);
        assert_eq!(fake.seen[0].max_attempts, Some(10));
        assert!(events.last().unwrap().contains("Found"), "{events:?}");
        let (exit, fake, _) = shaped(&[OK; 3], &[], Goal::Failure { runs: Some(3) }, None, None);
        assert_eq!((exit, fake.seen.len()), (Exit::SUCCESS, 3));
    }

    #[test]
    fn a_long_failed_attempt_resets_retries_and_delays() {
        let s = Duration::from_secs;
        let (exit, fake, events) = shaped(
            &[BAD; 5],
            &[s(0), s(0), s(60), s(0), s(0)],
            Goal::default(),
            Some(s(30)),
            Some(2),
        );
        assert_eq!(exit, Exit::Code(1));
        assert_eq!(fake.seen.len(), 5, "two retries, a reset, two more");
        let ms: Vec<u128> = fake.slept.iter().map(Duration::as_millis).collect();
        assert_eq!(ms, [100, 200, 100, 200]);
        assert_eq!(events.iter().filter(|e| e.starts_with("Reset")).count(), 1);
        // A long first failure resets nothing.
        let (_, _, events) = shaped(&[BAD], &[s(60)], Goal::default(), Some(s(30)), Some(0));
        assert!(!events.iter().any(|e| e.starts_with("Reset")));
    }

    /// A count of failed runs in a row that counts in memory, or answers
    /// with a signal.
    #[derive(Debug, Default)]
    struct Streak {
        failures: Cell<u64>,
        signal: Option<i32>,
        told: Cell<u64>,
    }

    impl FailureStreak for Streak {
        fn key(&self) -> &'static str {
            "job"
        }
        fn tally(&self, failed: bool, _: &mut dyn Wait) -> Result<AlertNews, i32> {
            self.told.set(self.told.get() + 1);
            if let Some(sig) = self.signal {
                return Err(sig);
            }
            let was = self
                .failures
                .replace(if failed { self.failures.get() + 1 } else { 0 });
            Ok(if failed {
                AlertNews::Failed { failures: was + 1 }
            } else {
                AlertNews::Reset { was: Some(was) }
            })
        }
    }

    #[test]
    fn a_tolerated_failure_runs_no_give_up_hook_the_nth_does_and_a_run_that_ran_nothing_is_not_counted()
     {
        let rules = Rules::default();
        let command = [OsString::from("cmd")];
        let hooks = Hooks {
            on_give_up: Some("g".into()),
            on_success: Some("s".into()),
            ..Hooks::default()
        };
        let streak = Streak::default();
        let plan = Plan {
            max_retries: Some(0),
            hooks: &hooks,
            alert: Some((&streak, 2)),
            ..constant(Duration::from_millis(1), &rules, &command)
        };
        let hooks_of = |outcome: Outcome| {
            let mut fake = Fake::new(&[outcome]);
            let exit = run(&plan, &mut fake, &mut Events::default());
            let kinds: Vec<HookKind> = fake.hooks_run.iter().map(|(k, _)| *k).collect();
            (exit, kinds)
        };
        // Tolerated: the command's status, and no hook.
        assert_eq!(hooks_of(BAD), (Exit::Code(1), vec![]));
        assert_eq!(hooks_of(BAD), (Exit::Code(1), vec![HookKind::GiveUp]));
        assert_eq!(
            hooks_of(Outcome::Exited(0)),
            (Exit::SUCCESS, vec![HookKind::Success])
        );
        assert_eq!(streak.failures.get(), 0);
        // A run whose command never ran (every attempt skipped) is not
        // counted, and alerts.
        let mut skipping = LocalThrottle::having(0, 0);
        skipping.down = Some(false);
        let skipped = Plan {
            throttle: Some(&skipping),
            ..plan.clone()
        };
        let mut fake = Fake::new(&[]);
        assert_eq!(
            run(&skipped, &mut fake, &mut Events::default()),
            Exit::TEMPFAIL
        );
        assert_eq!(streak.told.get(), 3);
        assert_eq!(fake.hooks_run.len(), 1);
        // A signal during the count ends the run by it, before the hook.
        let interrupted = Streak {
            signal: Some(15),
            ..Streak::default()
        };
        let plan = Plan {
            alert: Some((&interrupted, 2)),
            ..plan.clone()
        };
        let mut fake2 = Fake::new(&[BAD]);
        let mut events = Events::default();
        assert_eq!(run(&plan, &mut fake2, &mut events), Exit::Signal(15));
        assert!(fake2.hooks_run.is_empty());
        assert!(
            events.0.iter().any(|e| e.contains("Decision(Alert)")),
            "{:?}",
            events.0
        );
    }

    #[test]
    fn hooks_run_before_each_retry_and_at_the_end_with_their_variables() {
        let mut fake = Fake::new(&[BAD, BAD]);
        let rules = Rules::default();
        let command = [OsString::from("cmd")];
        let hooks = Hooks {
            on_start: Some("o".into()),
            on_retry: Some("r".into()),
            on_give_up: Some("g".into()),
            on_success: Some("s".into()),
            timeout: Duration::from_secs(30),
        };
        let plan = Plan {
            max_retries: Some(1),
            hooks: &hooks,
            ..constant(Duration::from_millis(250), &rules, &command)
        };
        let exit = run(&plan, &mut fake, &mut Events::default());
        assert_eq!(exit, Exit::Code(1));
        let kinds: Vec<HookKind> = fake.hooks_run.iter().map(|(k, _)| *k).collect();
        assert_eq!(kinds, [HookKind::Start, HookKind::Retry, HookKind::GiveUp]);
        let var = |i: usize, name: &str| {
            fake.hooks_run[i]
                .1
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.clone())
        };
        for i in 0..3 {
            assert_eq!(var(i, "BACKOFF_RUN_ID").as_deref(), Some(RUN_ID));
        }
        assert_eq!(var(0, "BACKOFF_ATTEMPT").as_deref(), Some("0"));
        assert_eq!(var(0, "BACKOFF_LAST_STATUS").as_deref(), Some(""));
        assert_eq!(var(1, "BACKOFF_NEXT_DELAY").as_deref(), Some("0.25"));
        assert_eq!(var(1, "BACKOFF_ATTEMPT").as_deref(), Some("1"));
        assert_eq!(var(2, "BACKOFF_REASON").as_deref(), Some("exhausted"));
        assert_eq!(var(2, "BACKOFF_ATTEMPT").as_deref(), Some("2"));
        // The hook's time counts against the delay (here none).
        assert_eq!(fake.slept, [Duration::from_millis(250)]);
    }

    #[test]
    fn an_unmet_condition_exits_1() {
        assert_eq!(
            exit_for(Outcome::Unmet(Status::Code(0)), false),
            Exit::Code(1)
        );
    }

    #[test]
    fn a_hint_is_jittered_upwards_within_its_window_and_the_ceiling() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let hints = Hints::default();
        let hint = Duration::from_mins(1);
        for _ in 0..1000 {
            let w = jittered_hint(hint, hints, &mut rng);
            assert!(w >= hint && w < Duration::from_secs(72), "{w:?}");
        }
        // Never above the ceiling, never below the hint.
        let near = Duration::from_secs(290);
        for _ in 0..1000 {
            let w = jittered_hint(near, hints, &mut rng);
            assert!(w >= near && w <= hints.max, "{w:?}");
        }
        let exact = Hints {
            jitter: 0.0,
            ..hints
        };
        assert_eq!(jittered_hint(hint, exact, &mut rng), hint);
    }

    #[test]
    fn retries_until_success_with_doubling_delays() {
        let (exit, fake) = go(
            &[Outcome::Exited(1), Outcome::Exited(1), Outcome::Exited(0)],
            Some(6),
            &Rules::default(),
        );
        assert_eq!(exit, Exit::SUCCESS);
        assert_eq!(
            fake.slept,
            [Duration::from_millis(100), Duration::from_millis(200)]
        );
        let numbers: Vec<u64> = fake.seen.iter().map(|s| s.number).collect();
        assert_eq!(numbers, [1, 2, 3]);
        assert_eq!(fake.seen[2].last, Some(Outcome::Exited(1)));
        assert_eq!(fake.seen[0].max_attempts, Some(7));
    }

    #[test]
    fn no_delay_after_the_last_attempt_and_its_status_is_kept() {
        let (exit, fake) = go(&[Outcome::Exited(3); 3], Some(2), &Rules::default());
        assert_eq!(exit, Exit::Code(3));
        assert_eq!(fake.seen.len(), 3);
        assert_eq!(fake.slept.len(), 2);
    }

    #[test]
    fn zero_retries_runs_once() {
        let (exit, fake) = go(
            &[Outcome::Signaled(libc::SIGTERM)],
            Some(0),
            &Rules::default(),
        );
        assert_eq!(exit, Exit::Signal(libc::SIGTERM));
        assert!(fake.slept.is_empty());
    }

    #[test]
    fn stop_verdicts_end_at_once() {
        for o in [
            Outcome::NotFound,
            Outcome::CannotRun,
            Outcome::Signaled(libc::SIGINT),
        ] {
            let (exit, fake) = go(&[o], Some(6), &Rules::default());
            assert_eq!(exit, exit_for(o, false));
            assert_eq!(fake.seen.len(), 1);
        }
    }

    #[test]
    fn a_signal_during_a_delay_ends_the_run_by_that_signal() {
        let mut fake = Fake::new(&[Outcome::Exited(1)]);
        fake.interrupt_pause = Some(libc::SIGTERM);
        let rules = Rules::default();
        let command = [OsString::from("cmd")];
        let plan = constant(Duration::from_secs(30), &rules, &command);
        let exit = run(&plan, &mut fake, &mut Events::default());
        assert_eq!(exit, Exit::Signal(libc::SIGTERM));
        assert_eq!(fake.seen.len(), 1, "no attempt after the signal");
    }

    #[test]
    fn an_own_option_among_the_commands_is_told_once_after_a_first_attempt_failed_as_on_bad_usage()
    {
        let rules = Rules::default();
        let command = [OsString::from("curl")];
        let plan = Plan {
            max_retries: Some(1),
            misplaced: Some("--max-retries"),
            ..constant(Duration::ZERO, &rules, &command)
        };
        let told = |outcomes: &[Outcome], runs: &[Duration]| {
            let mut fake = Fake::new(outcomes);
            fake.runs = runs.to_vec();
            let mut events = Events::default();
            run(&plan, &mut fake, &mut events);
            let notes = events.0.iter().filter(|e| e.starts_with("MisplacedOption"));
            notes.count()
        };
        let quick = Duration::from_millis(5);
        let e = Outcome::Exited;
        assert_eq!(
            told(&[e(2), e(2)], &[quick, quick]),
            1,
            "once, not per attempt"
        );
        assert_eq!(told(&[e(64), e(0)], &[quick, quick]), 1);
        // Another status, a first attempt that took its time, success, or a
        // second attempt: no note.
        assert_eq!(told(&[e(1), e(2)], &[quick, quick]), 0);
        assert_eq!(told(&[e(2), e(2)], &[Duration::from_secs(2), quick]), 0);
        assert_eq!(told(&[e(0)], &[quick]), 0);
        // The retries go on as the rules say.
        let mut fake = Fake::new(&[e(2), e(2)]);
        assert_eq!(run(&plan, &mut fake, &mut Events::default()), Exit::Code(2));
        assert_eq!(fake.seen.len(), 2);
        let plan = Plan {
            misplaced: None,
            ..plan
        };
        let mut events = Events::default();
        run(&plan, &mut Fake::new(&[e(2), e(2)]), &mut events);
        assert!(!events.0.iter().any(|e| e.starts_with("MisplacedOption")));
    }

    /// A plan that retries forever after a constant `delay`.
    fn constant<'a>(delay: Duration, rules: &'a Rules, command: &'a [OsString]) -> Plan<'a> {
        Plan {
            run_id: RUN_ID,
            splay: None,
            policy: Policy::formula(delay, delay, 2.0, Jitter::None),
            max_retries: None,
            seed: 0,
            rules,
            command,
            timeout: None,
            max_time: None,
            kill_after: Duration::from_secs(5),
            preserve_status: false,
            budget: None,
            hints: Hints::default(),
            goal: Goal::default(),
            reset_after: None,
            hooks: &NO_HOOKS,
            breaker: None,
            breaker_exit: 75,
            throttle: None,
            lock: None,
            alert: None,
            lock_wait: Duration::ZERO,
            lock_exit: 75,
            lock_token: None,
            lock_held: false,
            once: None,
            once_exit: 0,
            misplaced: None,
            preset: None,
            added: &[],
        }
    }

    const RUN_ID: &str = "6f1c2b0e-3d4a-4e5f-8a9b-0c1d2e3f4a5b";

    static NO_HOOKS: Hooks = Hooks {
        on_start: None,
        on_retry: None,
        on_give_up: None,
        on_success: None,
        timeout: Duration::from_secs(30),
    };

    fn with_budget(fake: &mut Fake, budget: &SlowBudget, max_time: Duration) -> (Exit, Events) {
        let rules = Rules::default();
        let command = [OsString::from("cmd")];
        let plan = Plan {
            max_time: Some(max_time),
            budget: Some(budget),
            ..constant(Duration::from_millis(10), &rules, &command)
        };
        let mut events = Events::default();
        (run(&plan, fake, &mut events), events)
    }

    #[test]
    fn a_deadline_passed_while_the_budget_decides_starts_no_attempt() {
        // Each decision takes 600ms and times out; the store fails open.
        let mut fake = Fake::new(&[Outcome::Exited(3); 3]);
        fake.store = (Duration::from_millis(600), Waited::TimedOut);
        let (exit, _) = with_budget(
            &mut fake,
            &SlowBudget { open: true },
            Duration::from_secs(1),
        );
        assert_eq!(fake.seen.len(), 2, "the second decision ended after 1s");
        assert_eq!(exit, Exit::Code(3), "the last attempt's status, not 124");
    }

    #[test]
    fn a_signal_during_the_budget_decision_ends_the_run_by_it() {
        let mut fake = Fake::new(&[Outcome::Exited(3)]);
        fake.store = (Duration::ZERO, Waited::Signal(libc::SIGTERM));
        let (exit, events) = with_budget(
            &mut fake,
            &SlowBudget { open: true },
            Duration::from_secs(9),
        );
        assert_eq!(exit, Exit::Signal(libc::SIGTERM));
        assert_eq!(fake.seen.len(), 1);
        let told: Vec<&str> = events
            .0
            .iter()
            .map(|e| e.split([' ', '{']).next().unwrap())
            .collect();
        assert_eq!(
            told[told.len() - 2..],
            ["Failed", "Interrupted"],
            "the attempt's failure is told before the interruption"
        );
        assert!(
            events.0[events.0.len() - 1].contains("during: Decision(Budget)"),
            "{:?}",
            events.0
        );
        assert!(fake.slept.is_empty(), "no delay after the signal");
    }

    /// Runs one attempt, which fails after `ran`, with `--max-time`
    /// `max_time`, `--kill-after` 1s and `--on-give-up`: the hook's limits
    /// and the events.
    fn closing_after(ran: Duration, max_time: Option<Duration>) -> (Fake, Vec<String>) {
        let mut fake = Fake::new(&[BAD]);
        fake.runs = vec![ran];
        let rules = Rules::default();
        let command = [OsString::from("cmd")];
        let hooks = Hooks {
            on_give_up: Some("g".into()),
            ..NO_HOOKS.clone()
        };
        let plan = Plan {
            max_retries: Some(0),
            max_time,
            kill_after: Duration::from_secs(1),
            hooks: &hooks,
            ..constant(Duration::ZERO, &rules, &command)
        };
        let mut events = Events::default();
        run(&plan, &mut fake, &mut events);
        (fake, events.0)
    }

    #[test]
    fn a_closing_hook_ends_by_the_deadline_plus_kill_after() {
        let ms = Duration::from_millis;
        // Without --max-time: --hook-timeout, then --kill-after.
        let (fake, _) = closing_after(ms(100), None);
        assert_eq!(fake.hook_limits, [(ms(30_000), ms(1000))]);
        // Started well before the deadline: --signal at the deadline, and
        // --kill-after after it.
        let (fake, events) = closing_after(ms(100), Some(ms(10_000)));
        assert_eq!(fake.hook_limits, [(ms(9_900), ms(1000))]);
        assert!(
            events.last().unwrap().contains("bounded: true"),
            "{events:?}"
        );
        // --hook-timeout first.
        let (fake, events) = closing_after(ms(100), Some(ms(100_000)));
        assert_eq!(fake.hook_limits, [(ms(30_000), ms(1000))]);
        assert!(
            events.last().unwrap().contains("bounded: false"),
            "{events:?}"
        );
        // Started 500ms before the deadline, 1.5s before backoff's end:
        // --signal halfway through, SIGKILL at the end.
        let (fake, _) = closing_after(ms(1500), Some(ms(2000)));
        assert_eq!(fake.hook_limits, [(ms(750), ms(750))]);
        // Started after the deadline.
        let (fake, _) = closing_after(ms(2600), Some(ms(2000)));
        assert_eq!(fake.hook_limits, [(ms(200), ms(200))]);
        // No time left: not run, and told.
        let (fake, events) = closing_after(ms(3000), Some(ms(2000)));
        assert!(fake.hooks_run.is_empty());
        let told = events.last().unwrap();
        assert!(
            told.starts_with("Hook { kind: GiveUp, outcome: None")
                && told.contains(
                    "no time left: backoff exits by --max-time (2.00s) plus --kill-after (1.00s)"
                ),
            "{events:?}"
        );
    }

    #[test]
    fn an_attempt_ended_near_the_deadline_leaves_half_the_time_to_a_closing_hook() {
        let ms = Duration::from_millis;
        // With --on-give-up and --max-time bounding the attempt: half.
        let (fake, _) = closing_after(ms(100), Some(ms(2000)));
        assert_eq!(fake.seen[0].grace, ms(500));
        // Without --max-time: all of --kill-after.
        let (fake, _) = closing_after(ms(100), None);
        assert_eq!(fake.seen[0].grace, ms(1000));
        // Without a closing hook: all of it.
        let mut fake = Fake::new(&[BAD]);
        let rules = Rules::default();
        let command = [OsString::from("cmd")];
        let plan = Plan {
            max_retries: Some(0),
            max_time: Some(ms(2000)),
            kill_after: ms(1000),
            ..constant(Duration::ZERO, &rules, &command)
        };
        run(&plan, &mut fake, &mut Events::default());
        assert_eq!(fake.seen[0].grace, ms(1000));
        // --timeout ends the attempt before the deadline would: all of it.
        let hooks = Hooks {
            on_give_up: Some("g".into()),
            ..NO_HOOKS.clone()
        };
        let mut fake = Fake::new(&[BAD]);
        let plan = Plan {
            timeout: Some(ms(500)),
            hooks: &hooks,
            ..plan
        };
        run(&plan, &mut fake, &mut Events::default());
        assert_eq!(fake.seen[0].grace, ms(1000));
        // --timeout ends it just before the deadline: half of what is then
        // left until backoff's exit (100ms to the deadline, 1s after it).
        let mut fake = Fake::new(&[BAD]);
        let plan = Plan {
            timeout: Some(ms(1900)),
            ..plan
        };
        run(&plan, &mut fake, &mut Events::default());
        assert_eq!(fake.seen[0].grace, ms(550));
    }

    #[test]
    fn a_decision_to_send_made_past_the_deadline_starts_no_first_attempt() {
        let t = LocalThrottle::having(0, 0);
        let mut fake = Fake::new(&[Outcome::Exited(0)]);
        // The decision takes 2s, past the deadline of 1s.
        fake.store = (Duration::from_secs(2), Waited::Ready);
        let rules = Rules::default();
        let command = [OsString::from("cmd")];
        let plan = Plan {
            max_time: Some(Duration::from_secs(1)),
            throttle: Some(&t),
            ..constant(Duration::from_millis(10), &rules, &command)
        };
        let mut events = Events::default();
        let exit = run(&plan, &mut fake, &mut events);
        assert_eq!(exit, Exit::TIMEOUT, "{:?}", events.0);
        assert!(fake.seen.is_empty(), "no attempt started");
        let told: Vec<&str> = events
            .0
            .iter()
            .map(|e| e.split([' ', '{']).next().unwrap())
            .collect();
        assert_eq!(told, ["Start", "Throttle", "Unstarted"]);
        assert!(events.0[1].contains("late: true"), "{:?}", events.0);
    }

    #[test]
    fn a_store_that_times_out_follows_its_fail_mode() {
        let mut fake = Fake::new(&[Outcome::Exited(3)]);
        fake.store = (Duration::ZERO, Waited::TimedOut);
        let (exit, _) = with_budget(
            &mut fake,
            &SlowBudget { open: false },
            Duration::from_secs(9),
        );
        assert_eq!(exit, Exit::Code(3), "closed: no retry");
        assert_eq!(fake.seen.len(), 1);
    }

    /// Records the countdown's ticks; counts down when `live`.
    struct Ticks {
        live: bool,
        left: Vec<Duration>,
    }
    impl Report for Ticks {
        fn event(&mut self, e: &Event<'_>) {
            if let Event::Countdown { left } = *e {
                self.left.push(left);
            }
        }
        fn counts_down(&self) -> bool {
            self.live
        }
    }

    #[test]
    fn a_delay_is_counted_down_each_whole_second_only_for_a_report_that_asks() {
        let ms = Duration::from_millis;
        let command = [OsString::from("cmd")];
        let rules = Rules::default();
        let plan = Plan {
            policy: Policy::explicit(vec![ms(2500), ms(900)], Jitter::None),
            max_retries: Some(2),
            ..constant(Duration::ZERO, &rules, &command)
        };
        let outcomes = [Outcome::Exited(1), Outcome::Exited(1), Outcome::Exited(0)];
        let mut live = Ticks {
            live: true,
            left: Vec::new(),
        };
        let mut fake = Fake::new(&outcomes);
        assert_eq!(run(&plan, &mut fake, &mut live), Exit::SUCCESS);
        // 2.5 s shows 3, 2 and 1 seconds left; the 900 ms delay none.
        assert_eq!(live.left, [ms(2500), ms(2000), ms(1000)]);
        assert_eq!(fake.slept, [ms(500), ms(1000), ms(1000), ms(900)]);
        let mut quiet = Ticks {
            live: false,
            left: Vec::new(),
        };
        let mut fake = Fake::new(&outcomes);
        assert_eq!(run(&plan, &mut fake, &mut quiet), Exit::SUCCESS);
        assert!(quiet.left.is_empty());
        assert_eq!(fake.slept, [ms(2500), ms(900)], "one wait per delay");
    }

    /// A throttle of backoff's own rules on a window kept here, at a clock
    /// that does not move; `down` makes its store unusable (and says
    /// whether the attempt is sent then).
    #[derive(Debug)]
    struct LocalThrottle {
        window: std::cell::RefCell<crate::fleet::throttle::Window>,
        down: Option<bool>,
        budget_takes: Cell<u64>,
    }

    impl LocalThrottle {
        const RULE: crate::fleet::throttle::Throttle = crate::fleet::throttle::Throttle {
            window_ms: 120_000,
            k_milli: 2000,
        };

        /// A window that has seen `requests` and `accepts` (`skips` none).
        fn having(requests: u64, accepts: u64) -> LocalThrottle {
            let mut w = crate::fleet::throttle::Window {
                width_ms: Self::RULE.width_ms(),
                ..Default::default()
            };
            w.slots[0].requests = requests;
            w.slots[0].accepts = accepts;
            LocalThrottle {
                window: std::cell::RefCell::new(w),
                down: None,
                budget_takes: Cell::new(0),
            }
        }

        fn counts(&self) -> crate::fleet::throttle::Counts {
            self.window.borrow().counts(1)
        }
    }

    impl AdaptiveThrottle for LocalThrottle {
        fn key(&self) -> &'static str {
            "api"
        }
        fn admit(&self, draw: f64, wait: &mut dyn Wait) -> Result<ThrottleNews, i32> {
            if let Waited::Signal(s) = wait.wait_ready(None, Instant::now()) {
                return Err(s);
            }
            if let Some(send) = self.down {
                return Ok(ThrottleNews::Unavailable { send });
            }
            let (decision, after) = Self::RULE.admit(*self.window.borrow(), 1, draw);
            self.window.replace(after);
            Ok(ThrottleNews::Decided {
                decision,
                window_ms: Self::RULE.window_ms,
            })
        }
        fn accept(&self, _: &mut dyn Wait) -> Option<i32> {
            let after = Self::RULE.accept(*self.window.borrow(), 1);
            self.window.replace(after);
            None
        }
    }

    impl RetryBudget for LocalThrottle {
        fn take(&self, _: &mut dyn Wait) -> Decision {
            self.budget_takes.set(self.budget_takes.get() + 1);
            Decision::Granted
        }
        fn deposit(&self, _: &mut dyn Wait) {}
    }

    fn throttled(
        fake: &mut Fake,
        t: &LocalThrottle,
        rules: &Rules,
        retries: u64,
    ) -> (Exit, Events) {
        let command = [OsString::from("cmd")];
        let plan = Plan {
            max_retries: Some(retries),
            throttle: Some(t),
            budget: Some(t),
            ..constant(Duration::from_millis(10), rules, &command)
        };
        let mut events = Events::default();
        (run(&plan, fake, &mut events), events)
    }

    #[test]
    fn a_skipped_attempt_runs_nothing_is_retried_after_its_delay_and_takes_no_token() {
        // Every request of the window rejected: nearly every attempt is
        // skipped.
        let t = LocalThrottle::having(crate::fleet::throttle::MAX_COUNT, 0);
        let mut fake = Fake::new(&[Outcome::Exited(0)]);
        let (exit, events) = throttled(&mut fake, &t, &Rules::default(), 3);
        assert_eq!(exit, Exit::TEMPFAIL, "no attempt ran: {:?}", events.0);
        assert!(fake.seen.is_empty());
        assert_eq!(fake.slept, vec![Duration::from_millis(10); 3]);
        assert_eq!(t.budget_takes.get(), 0);
        let skipped =
            (events.0.iter()).filter(|e| e.starts_with("Failed") && e.contains("Throttled"));
        assert_eq!(skipped.count(), 4, "{:?}", events.0);
        assert_eq!(t.counts().skips, 4);
    }

    #[test]
    fn a_run_whose_last_attempt_was_skipped_exits_as_the_last_that_ran() {
        // Nothing rejected yet: the first attempt is sent; its failure and
        // the window's rejections make the next ones skipped.
        let t = LocalThrottle::having(0, 0);
        let mut fake = Fake::new(&[Outcome::Exited(7)]);
        let (exit, events) = {
            let rules = Rules::default();
            let command = [OsString::from("cmd")];
            let plan = Plan {
                max_retries: Some(2),
                throttle: Some(&t),
                ..constant(Duration::from_millis(10), &rules, &command)
            };
            let mut events = Events::default();
            // The first decision is made on an empty window; then the
            // window fills with rejections.
            let first = run_with_window_filled_after_first(&plan, &mut fake, &mut events, &t);
            (first, events)
        };
        assert_eq!(fake.seen.len(), 1, "{:?}", events.0);
        assert_eq!(exit, Exit::Code(7), "{:?}", events.0);
    }

    /// Runs `plan` with `t` empty for the first decision and full of
    /// rejections for the others.
    fn run_with_window_filled_after_first(
        plan: &Plan<'_>,
        fake: &mut Fake,
        events: &mut Events,
        t: &LocalThrottle,
    ) -> Exit {
        #[derive(Debug)]
        struct Then<'a>(&'a LocalThrottle, Cell<bool>);
        impl AdaptiveThrottle for Then<'_> {
            fn key(&self) -> &'static str {
                "api"
            }
            fn admit(&self, draw: f64, wait: &mut dyn Wait) -> Result<ThrottleNews, i32> {
                if self.1.replace(true) {
                    self.0.window.borrow_mut().slots[0].requests =
                        crate::fleet::throttle::MAX_COUNT;
                }
                self.0.admit(draw, wait)
            }
            fn accept(&self, wait: &mut dyn Wait) -> Option<i32> {
                self.0.accept(wait)
            }
        }
        let then = Then(t, Cell::new(false));
        let plan = Plan {
            throttle: Some(&then),
            ..plan.clone()
        };
        run(&plan, fake, events)
    }

    #[test]
    fn successes_and_failures_not_the_backends_are_accepts_and_retried_failures_are_not() {
        let rules = Rules {
            stop_on: vec![crate::classify::Rule::Codes(4, 4)],
            ..Rules::default()
        };
        let cases: [(&[Outcome], u64); 3] = [
            (&[Outcome::Exited(1), Outcome::Exited(0)], 1),
            (&[Outcome::Exited(4)], 1),
            (&[Outcome::Exited(1), Outcome::Exited(1)], 0),
        ];
        for (outcomes, accepts) in cases {
            let t = LocalThrottle::having(0, 0);
            let mut fake = Fake::new(outcomes);
            throttled(&mut fake, &t, &rules, 1);
            assert_eq!(t.counts().accepts, accepts, "{outcomes:?}");
            assert_eq!(t.counts().requests, outcomes.len() as u64);
        }
    }

    #[test]
    fn a_store_down_sends_or_skips_as_its_fail_mode_says_and_a_signal_ends_the_run() {
        let mut t = LocalThrottle::having(0, 0);
        t.down = Some(false);
        let mut fake = Fake::new(&[Outcome::Exited(0)]);
        assert_eq!(
            throttled(&mut fake, &t, &Rules::default(), 1).0,
            Exit::TEMPFAIL
        );
        assert!(fake.seen.is_empty());
        t.down = Some(true);
        let mut fake = Fake::new(&[Outcome::Exited(0)]);
        assert_eq!(
            throttled(&mut fake, &t, &Rules::default(), 1).0,
            Exit::SUCCESS
        );
        t.down = None;
        let mut fake = Fake::new(&[Outcome::Exited(0)]);
        fake.store = (Duration::ZERO, Waited::Signal(libc::SIGTERM));
        let (exit, _) = throttled(&mut fake, &t, &Rules::default(), 1);
        assert_eq!(exit, Exit::Signal(libc::SIGTERM));
        assert!(fake.seen.is_empty());
    }

    #[test]
    fn a_signal_during_an_accept_ends_the_run_before_the_next_attempt() {
        #[derive(Debug)]
        struct Cut(LocalThrottle);
        impl AdaptiveThrottle for Cut {
            fn key(&self) -> &'static str {
                "api"
            }
            fn admit(&self, draw: f64, wait: &mut dyn Wait) -> Result<ThrottleNews, i32> {
                self.0.admit(draw, wait)
            }
            fn accept(&self, _: &mut dyn Wait) -> Option<i32> {
                Some(libc::SIGTERM)
            }
        }
        let cut = Cut(LocalThrottle::having(0, 0));
        let rules = Rules::default();
        let command = [OsString::from("cmd")];
        let plan = Plan {
            goal: Goal::Success { in_a_row: 3 },
            throttle: Some(&cut),
            ..constant(Duration::from_millis(10), &rules, &command)
        };
        let mut fake = Fake::new(&[Outcome::Exited(0); 3]);
        let mut events = Events::default();
        let exit = run(&plan, &mut fake, &mut events);
        assert_eq!(exit, Exit::Signal(libc::SIGTERM), "{:?}", events.0);
        assert_eq!(fake.seen.len(), 1, "no attempt after the signal");
        assert!(fake.slept.is_empty(), "no delay after the signal");
    }
}
