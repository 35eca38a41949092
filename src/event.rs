//! What a run tells as it goes: the events of the retry loop, and the
//! trait that receives them. Pure: the writers are in `report`.

use std::ffi::OsString;
use std::time::Duration;

use crate::classify::{Applied, Hint, Outcome, StopReason};
use crate::fleet::breaker::{Admission, Circuit, RunEnd};
use crate::fleet::lock::{Holder, Settle};
use crate::fleet::once::{Success, Verdict};
use crate::fleet::throttle;
use crate::policy::Delay;

/// Something that happened during a run, worth telling the user.
#[derive(Debug, Clone, PartialEq)]
pub enum Event<'a> {
    /// The run starts.
    Start {
        /// The run's id (`BACKOFF_RUN_ID`).
        run_id: &'a str,
        /// The command line.
        command: &'a [OsString],
        /// Attempts allowed in all; `None` without a limit.
        max_attempts: Option<u64>,
        /// The preset, and where it came from.
        preset: Option<Applied>,
        /// The words the preset added before the command's own arguments.
        added: &'a [OsString],
    },
    /// `--splay`: the wait before the first attempt starts.
    Splay {
        /// How long it is: this host's and job's place in the window, or
        /// what `--max-time` leaves of it.
        delay: Duration,
        /// `--splay`'s window.
        window: Duration,
    },
    /// An attempt starts.
    AttemptStarted {
        /// 1-based attempt number.
        attempt: u64,
        /// Attempts allowed in all; `None` without a limit.
        max_attempts: Option<u64>,
    },
    /// An attempt failed.
    Failed {
        /// 1-based attempt number.
        attempt: u64,
        /// Attempts allowed in all; `None` without a limit.
        max_attempts: Option<u64>,
        /// How it ended.
        outcome: Outcome,
        /// How long it ran.
        elapsed: Duration,
        /// What comes next.
        next: Next,
        /// The server's hint the attempt's output gave, if any (used or
        /// not).
        hint: Option<Hint>,
        /// The last HTTP status the attempt's output showed, when a preset
        /// or a rule could see it.
        http_status: Option<u16>,
    },
    /// An attempt succeeded, and the run goes on: a streak of
    /// `--consecutive` successes is not complete yet, or `--until-failure`
    /// runs the command again.
    Passed {
        /// 1-based attempt number.
        attempt: u64,
        /// Attempts allowed in all; `None` without a limit.
        max_attempts: Option<u64>,
        /// How it ended.
        outcome: Outcome,
        /// How long it ran.
        elapsed: Duration,
        /// Successful attempts in a row, this one included.
        streak: u64,
        /// `--consecutive`'s N; `None` with `--until-failure`.
        needed: Option<u64>,
        /// What comes next: a run after a delay, or the deadline.
        next: Next,
        /// The last HTTP status the attempt's output showed, when a preset
        /// or a rule could see it.
        http_status: Option<u16>,
    },
    /// An attempt that ran at least `--reset-after` before failing: the
    /// retry count and the delays start over.
    Reset {
        /// 1-based attempt number.
        attempt: u64,
        /// How long it ran.
        ran: Duration,
        /// `--reset-after`.
        after: Duration,
    },
    /// `--until-failure` found no failure: every run allowed succeeded, or
    /// `--max-time` ended the runs.
    NoFailure {
        /// Runs that succeeded.
        runs: u64,
        /// Time since the run started.
        total: Duration,
        /// Why the runs ended.
        reason: HuntEnd,
        /// The last run, when no event told of its end before: its number,
        /// outcome and duration.
        last: Option<(u64, Outcome, Duration)>,
    },
    /// A hook ran (or could not).
    Hook {
        /// Which.
        kind: HookKind,
        /// How it ended; `None` when a signal came before it could start.
        outcome: Option<Outcome>,
        /// How long it ran.
        elapsed: Duration,
        /// How long it could run.
        limit: Duration,
        /// Whether that limit was what `--max-time` left of the run (with
        /// `--kill-after`, for a hook that closes it), not `--hook-timeout`.
        bounded: bool,
        /// Why it could not start, when it could not.
        error: Option<&'a str>,
        /// Whether it ran under the lock and was ended because the run
        /// lost it.
        lock_lost: bool,
    },
    /// News of the circuit breaker (`--breaker`).
    Breaker {
        /// Its key.
        key: &'a str,
        /// What happened.
        news: BreakerNews,
    },
    /// How the run's end changed the count of its job's failed runs in a
    /// row (`--alert-after`), before the hook that closes it.
    Alert {
        /// The job's key.
        key: &'a str,
        /// `--alert-after`.
        alert_after: u64,
        /// What happened.
        news: AlertNews,
    },
    /// News of the lock (`--lock`).
    Lock {
        /// Its key.
        key: &'a str,
        /// What happened.
        news: &'a LockNews,
    },
    /// News of the once-per record (`--once-per`).
    Once {
        /// Its key.
        key: &'a str,
        /// What happened.
        news: &'a OnceNews,
    },
    /// The adaptive throttle (`--throttle`) decided on an attempt.
    Throttle {
        /// Its key.
        key: &'a str,
        /// The attempt's number.
        attempt: u64,
        /// What it decided.
        news: ThrottleNews,
        /// The decision came after `--max-time` passed: the attempt is not
        /// sent, whatever the decision says.
        late: bool,
    },
    /// A tick of the delay before the next attempt, for a report that
    /// counts it down (`Report::counts_down`): told when the delay starts
    /// (after `--on-retry`) and each time the whole seconds left change.
    Countdown {
        /// Time left before the next attempt.
        left: Duration,
    },
    /// The first attempt failed at once with a status programs give for
    /// bad usage, and one of its arguments is an option of backoff's own:
    /// most likely given after the command by mistake.
    MisplacedOption {
        /// The option, as `--max-retries`.
        option: &'a str,
        /// The program it was given to.
        program: &'a OsString,
    },
    /// The command could not be started.
    CannotStart {
        /// 1-based attempt number.
        attempt: u64,
        /// `NotFound` or `CannotRun`.
        outcome: Outcome,
        /// The program as given.
        program: &'a OsString,
        /// Why, as the OS said it.
        error: &'a str,
        /// Time since the run started.
        total: Duration,
    },
    /// An attempt succeeded.
    Succeeded {
        /// 1-based attempt number.
        attempt: u64,
        /// Attempts allowed in all.
        max_attempts: Option<u64>,
        /// How the attempt ended (an exit code `--success-on` accepts).
        outcome: Outcome,
        /// How long it ran.
        elapsed: Duration,
        /// Time since the run started.
        total: Duration,
        /// Successful attempts in a row it took (`--consecutive`; else 1).
        streak: u64,
        /// Whether it met an `--until-output` condition.
        condition: bool,
        /// The last HTTP status the attempt's output showed, when a preset
        /// or a rule could see it.
        http_status: Option<u16>,
    },
    /// The run ends without success.
    GaveUp {
        /// Attempts made.
        attempts: u64,
        /// Time since the run started.
        total: Duration,
        /// The last attempt's outcome.
        outcome: Outcome,
        /// Why no retry follows.
        reason: Ending,
        /// When the last attempt succeeded but the streak `--consecutive`
        /// asks for was not complete: its successes in a row, and N.
        short_of: Option<(u64, u64)>,
    },
    /// The held stdout of the attempt that ended the run was not all
    /// passed on: stdout took no more before `--max-time` (or at once, when
    /// that attempt timed out).
    Undelivered {
        /// The bytes dropped.
        bytes: u64,
    },
    /// The held stdout of the attempt that ended the run was lost: it could
    /// not be held whole (none of it was written), or stdout failed.
    OutputLost {
        /// Why, in a sentence.
        why: &'a str,
    },
    /// A signal ended the run while the held stdout of the attempt that
    /// ended it was being written out; the rest of it was dropped.
    InterruptedWriting {
        /// The signal backoff received.
        signal: i32,
    },
    /// A signal came while a hook that closes the run (`--on-give-up`,
    /// `--on-success`) ran: the run ends by it, whatever it was to end with.
    InterruptedHook {
        /// The signal backoff received.
        signal: i32,
        /// The hook it came during.
        kind: HookKind,
    },
    /// A signal ended the run.
    Interrupted {
        /// The signal backoff received.
        signal: i32,
        /// What it came during.
        during: During,
    },
    /// `--max-time` passed before the first attempt could start (a shared
    /// state's decision took the time): the command never ran.
    Unstarted {
        /// Time since the run started.
        total: Duration,
        /// `--max-time`.
        max_time: Duration,
    },
}

/// What a signal that ended a run came during.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum During {
    /// An attempt: its number, its outcome and how long it ran.
    Attempt(u64, Outcome, Duration),
    /// A delay between attempts.
    Delay,
    /// A decision of a shared state's store, before an attempt.
    Decision(Shared),
    /// `--on-start`, before the first attempt.
    Start,
    /// `--splay`'s wait before the first attempt.
    Splay,
}

impl During {
    /// The name used in JSON events.
    pub fn name(self) -> &'static str {
        match self {
            During::Attempt(..) => "attempt",
            During::Delay => "delay",
            During::Decision(shared) => shared.name(),
            During::Start => HookKind::Start.name(),
            During::Splay => "splay",
        }
    }

    /// The attempt, if it came during one.
    pub fn attempt(self) -> Option<(u64, Outcome, Duration)> {
        match self {
            During::Attempt(number, outcome, elapsed) => Some((number, outcome, elapsed)),
            _ => None,
        }
    }
}

/// A kind of state that processes share, and whose store decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shared {
    /// `--budget`.
    Budget,
    /// `--breaker`.
    Breaker,
    /// `--throttle`.
    Throttle,
    /// `--lock`.
    Lock,
    /// `--alert-after`'s count of failed runs in a row.
    Alert,
}

impl Shared {
    /// The name used in JSON events: `budget`, `breaker`, `throttle`.
    pub fn name(self) -> &'static str {
        match self {
            Shared::Budget => "budget",
            Shared::Breaker => "breaker",
            Shared::Throttle => "throttle",
            Shared::Lock => "lock",
            Shared::Alert => "alert",
        }
    }

    /// What lines call it: `retry budget`.
    pub fn noun(self) -> &'static str {
        match self {
            Shared::Budget => "retry budget",
            Shared::Breaker => "circuit breaker",
            Shared::Throttle => "adaptive throttle",
            Shared::Lock => "lock",
            Shared::Alert => "failure count",
        }
    }
}

/// Which hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookKind {
    /// `--on-start`: before the first attempt.
    Start,
    /// `--on-retry`: at the start of each delay before a retry.
    Retry,
    /// `--on-give-up`: when the run ends without success.
    GiveUp,
    /// `--on-success`: when the run succeeds.
    Success,
}

impl HookKind {
    /// The name used in JSON events and the run report.
    pub fn name(self) -> &'static str {
        match self {
            HookKind::Start => "on_start",
            HookKind::Retry => "on_retry",
            HookKind::GiveUp => "on_give_up",
            HookKind::Success => "on_success",
        }
    }

    /// Its option.
    pub fn flag(self) -> &'static str {
        match self {
            HookKind::Start => "--on-start",
            HookKind::Retry => "--on-retry",
            HookKind::GiveUp => "--on-give-up",
            HookKind::Success => "--on-success",
        }
    }
}

/// Why `--until-failure` ended without a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HuntEnd {
    /// Every run allowed succeeded.
    Runs,
    /// The next run would have started after `--max-time`.
    Deadline,
    /// `--max-time` cut the last run short: it is no finding.
    Cut,
}

impl HuntEnd {
    /// The name used in JSON events.
    pub fn name(self) -> &'static str {
        match self {
            HuntEnd::Runs => "runs",
            HuntEnd::Deadline => "deadline",
            HuntEnd::Cut => "cut",
        }
    }
}

/// What follows a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// A retry after this delay.
    Retry {
        /// The delay and its bound.
        delay: Delay,
        /// Whether a server's Retry-After set the delay.
        server: bool,
    },
    /// Nothing: it was the last attempt allowed.
    Exhausted,
    /// Nothing: the failure is not retried.
    Stop(StopReason),
    /// Nothing: the retry budget has no token left.
    Budget,
    /// Nothing: the server asks for a wait above `--retry-after-max`.
    HintTooLong {
        /// The wait the server asked for.
        hint: Duration,
        /// `--retry-after-max`.
        max: Duration,
    },
    /// Nothing: this is the failure `--until-failure` looks for.
    Found,
    /// Nothing: the run lost its lock (`--lock`), which ended the attempt.
    LockLost,
    /// Nothing: a run of `--lock-replace` took the lock over, which ended
    /// the attempt.
    Replaced,
    /// Nothing: the retry would start after `--max-time`.
    Deadline {
        /// The delay the retry would have needed.
        delay: Duration,
        /// The `--max-time` it would pass.
        max_time: Duration,
        /// Whether the deadline has passed already.
        passed: bool,
    },
}

/// Why a run ended without success.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// A signal interrupted it.
    Interrupted,
    /// No retries were left.
    Exhausted,
    /// The failure was not worth retrying.
    Stopped,
    /// `--max-time` passed, or would have before the next retry.
    Deadline,
    /// The retry budget had no token left.
    Budget,
    /// `--until-failure` found its failure.
    Found,
    /// The run lost its lock (`--lock`: a lease not renewed in time).
    LockLost,
    /// A run of `--lock-replace` took the run's lock over.
    Replaced,
}

impl Ending {
    /// The name used in reports and events.
    pub fn name(self) -> &'static str {
        match self {
            Ending::Interrupted => "interrupted",
            Ending::Exhausted => "exhausted",
            Ending::Stopped => "stopped",
            Ending::Deadline => "deadline",
            Ending::Budget => "budget",
            Ending::Found => "failure_found",
            Ending::LockLost => "lock_lost",
            Ending::Replaced => "replaced",
        }
    }
}

/// What the circuit breaker did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerNews {
    /// Its decision at the start of the run.
    Admitted {
        /// Whether the command runs, and how.
        admission: Admission,
        /// The circuit as it was.
        before: Circuit,
        /// The time of the decision, in Unix milliseconds.
        now_ms: u64,
    },
    /// Its store could not be used (said already): the command runs, or
    /// not, as the fail mode says.
    Unavailable {
        /// Whether it runs.
        run: bool,
    },
    /// How the run's end changed it.
    Recorded {
        /// Whether the run was the probe.
        probe: bool,
        /// How the run ended.
        end: RunEnd,
        /// The circuit after.
        after: Circuit,
        /// The time, in Unix milliseconds.
        now_ms: u64,
    },
}

/// What a run's end did to the count of its job's failed runs in a row
/// (`--alert-after`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlertNews {
    /// A failed run, counted: the runs failed in a row now, this one
    /// included.
    Failed {
        /// Failed runs in a row.
        failures: u64,
    },
    /// A success: the count starts again; what it had reached (`None`: a
    /// record out of shape, said already).
    Reset {
        /// The failed runs in a row before this success.
        was: Option<u64>,
    },
    /// Its store could not be used (said already): a failure alerts.
    Unavailable {
        /// Whether the run failed.
        failed: bool,
    },
}

impl AlertNews {
    /// Whether the run is a failure tolerated under `--alert-after`
    /// `alert_after`: no alert, and its failures in a row if so.
    pub fn tolerated(self, alert_after: u64) -> Option<u64> {
        match self {
            AlertNews::Failed { failures } if failures < alert_after => Some(failures),
            _ => None,
        }
    }

    /// Its decision as JSON names it: `tolerated`, `alert`, `reset` or
    /// `unavailable`.
    pub fn decision(self, alert_after: u64) -> &'static str {
        match self {
            AlertNews::Failed { failures } if failures < alert_after => "tolerated",
            AlertNews::Failed { .. } => "alert",
            AlertNews::Reset { .. } => "reset",
            AlertNews::Unavailable { .. } => "unavailable",
        }
    }
}

/// What became of the lock (`--lock`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockNews {
    /// The run holds it, for its whole length.
    Held {
        /// The fencing token the acquisition took, where the store gives
        /// one (`BACKOFF_LOCK_TOKEN`).
        token: Option<u64>,
        /// How long the run waited for it, if it was to wait
        /// (`--lock-wait`).
        waited: Option<Duration>,
        /// How long the run waits before it starts, and why: the store had
        /// no trace of the lock, and a holder it forgot may still run.
        settle: Option<Settle>,
    },
    /// Another run holds it, and this one waits in turn for it, at most
    /// `--lock-wait`.
    Waiting {
        /// Who holds it.
        holder: Option<Holder>,
        /// `--lock-wait`.
        patience: Duration,
    },
    /// Another run holds it (its record, if it could be read): the command
    /// does not run.
    Busy {
        /// Who holds it.
        holder: Option<Holder>,
        /// How long the run waited for it, if it was to wait
        /// (`--lock-wait`).
        waited: Option<Duration>,
    },
    /// Its store could not be used (said already): the command runs
    /// without the lock (`--lock-fail open`), or not.
    Unavailable {
        /// Whether it runs.
        run: bool,
        /// Why the store could not be used.
        why: String,
    },
    /// The run lost it (a lease not renewed in time, a lock file removed):
    /// the running attempt is ended and the run ends.
    Lost {
        /// How.
        why: String,
        /// Whether a run of `--lock-replace` took it over.
        replaced: bool,
        /// The fencing token the run held it with, where the store gives
        /// one.
        token: Option<u64>,
    },
}

/// What became of a job run once per period (`--once-per`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnceNews {
    /// The record of the last success was read, under the job's lock:
    /// the period is done (the run skips, reason `done`) or not (the job
    /// runs).
    Decided {
        /// The period now (`fleet::once::Period::label`).
        period: String,
        /// The deciding clock's time, in Unix milliseconds: the period
        /// the job runs for, if it runs.
        at_ms: u64,
        /// Whether it is done.
        verdict: Verdict,
        /// The last success, as recorded (none, or a record not believed).
        last: Option<Success>,
    },
    /// The job's lock is held by another run, which does the job (or
    /// waits to): the run skips, reason `running`.
    Running {
        /// Who holds it.
        holder: Option<Holder>,
    },
    /// The record's store could not be used (said already): the command
    /// runs (`--lock-fail open`), or not.
    Unavailable {
        /// Whether it runs.
        run: bool,
        /// Why.
        why: String,
    },
    /// The run succeeded, and its success is recorded.
    Recorded {
        /// The record.
        success: Success,
    },
    /// The run succeeded, but its success could not be recorded (said
    /// already).
    NotRecorded {
        /// Why.
        why: String,
    },
}

impl OnceNews {
    /// Whether the run skips the job because of it.
    pub fn skips(&self) -> bool {
        match self {
            OnceNews::Decided { verdict, .. } => !verdict.runs(),
            OnceNews::Running { .. } => true,
            _ => false,
        }
    }
}

/// What the adaptive throttle (`--throttle`) said of an attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ThrottleNews {
    /// Its decision, and the fleet's counts over the window it was made on.
    Decided {
        /// Sent or skipped, with what probability, on what counts.
        decision: throttle::Decision,
        /// The window the counts cover, in milliseconds.
        window_ms: u64,
    },
    /// Its store could not be used (said already): the attempt is sent, or
    /// skipped, as the fail mode says.
    Unavailable {
        /// Whether it is sent.
        send: bool,
    },
}

impl ThrottleNews {
    /// Whether the attempt is sent.
    pub fn send(self) -> bool {
        match self {
            ThrottleNews::Decided { decision, .. } => decision.send,
            ThrottleNews::Unavailable { send } => send,
        }
    }
}

/// Receives the events of a run.
pub trait Report {
    /// Tells about one event.
    fn event(&mut self, event: &Event<'_>);

    /// Whether it counts delays down (a live line on a terminal): only
    /// then is it told `Event::Countdown` during a delay.
    fn counts_down(&self) -> bool {
        false
    }
}

/// Sends every event to each of several reports.
pub struct Reports<'a>(pub Vec<&'a mut dyn Report>);

impl Report for Reports<'_> {
    fn event(&mut self, event: &Event<'_>) {
        for r in &mut self.0 {
            r.event(event);
        }
    }

    fn counts_down(&self) -> bool {
        self.0.iter().any(|r| r.counts_down())
    }
}
