//! The one event-driven wait of an attempt: for the command to end, for
//! signals, for its time limits, and for its output, all in one `poll` with
//! the nearest deadline. Signals are passed on to the command's process
//! group as they come; a time limit (`--timeout`, or `--idle-timeout` when
//! no output came for that long) sends `--signal`, then KILL.

use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use libc::c_int;

use super::RealExecutor;
use super::copy::Pipe;
use crate::classify::{Limit, Observed};
use crate::signal::is_terminating;
use crate::sys::{process, signals};

/// How long backoff keeps reading the command's output after the command
/// exited while no more comes: a process it left behind may hold the pipe
/// open forever.
const DRAIN: Duration = Duration::from_millis(500);

/// The longest backoff reads output after the command exited, however much
/// keeps coming.
const DRAIN_MAX: Duration = Duration::from_secs(10);

/// What happened while waiting for a child.
pub(super) struct Waited {
    pub(super) status: ExitStatus,
    /// The first terminating signal backoff received meanwhile.
    pub(super) interrupted: Option<c_int>,
    /// The time limit the attempt ran past, if it did.
    pub(super) timed_out: Option<Limit>,
    /// What its output showed.
    pub(super) seen: Observed,
}

/// The time limits of a running attempt, and where it stands with them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Clock {
    /// When `--timeout` (or the time left before `--max-time`) runs out.
    time_at: Option<Instant>,
    /// `--idle-timeout`.
    idle: Option<Duration>,
    /// When output last came from the command, or the attempt started.
    last_output: Instant,
    /// When the timed-out attempt is killed, if `--signal` did not end it.
    kill_at: Option<Instant>,
    /// How long after `--signal` that is: `--kill-after`, or less when a
    /// hook that closes the run must have time after it.
    grace: Duration,
    /// The limit it ran past.
    timed_out: Option<Limit>,
}

impl Clock {
    /// The clock of an attempt that starts at `start`.
    fn new(start: Instant, limit: Option<Duration>, idle: Option<Duration>) -> Clock {
        Clock {
            time_at: limit.and_then(|l| start.checked_add(l)),
            idle,
            last_output: start,
            kill_at: None,
            grace: Duration::ZERO,
            timed_out: None,
        }
    }

    /// When the attempt runs past `--idle-timeout` unless output comes.
    fn idle_at(&self) -> Option<Instant> {
        self.idle.and_then(|i| self.last_output.checked_add(i))
    }

    /// The limits still to watch for, with when they run out.
    fn limits(&self) -> impl Iterator<Item = (Instant, Limit)> {
        let watched = self.timed_out.is_none();
        [(self.time_at, Limit::Time), (self.idle_at(), Limit::Idle)]
            .into_iter()
            .filter_map(move |(at, limit)| at.filter(|_| watched).map(|at| (at, limit)))
    }

    /// The limit that has run out by `now`, if any: the one that ran out
    /// first, when both have.
    fn due(&self, now: Instant) -> Option<Limit> {
        self.limits()
            .filter(|(at, _)| now >= *at)
            .min_by_key(|(at, _)| *at)
            .map(|(_, limit)| limit)
    }

    /// When a running command's wait must end next, for its limits.
    fn wake(&self) -> Option<Instant> {
        self.limits().map(|(at, _)| at).chain(self.kill_at).min()
    }
}

impl RealExecutor {
    /// Sends `sig` to the running child: to its whole process group, or to
    /// the child alone with `--foreground`. Only called before the child is
    /// reaped, so its pid cannot have been reused.
    fn forward(&self, pid: u32, sig: c_int) {
        let _ = if self.options.foreground {
            signals::signal_process(pid, sig)
        } else {
            signals::signal_group(pid, sig)
        };
    }

    /// Waits for the child to end (it is left for the caller to reap),
    /// passing signals on, copying and matching its output, and enforcing
    /// its time limits meanwhile; with `leased` (an attempt, not a hook),
    /// a lock the run lost ends it as its time limit would.
    pub(super) fn wait(
        &mut self,
        child: &Child,
        mut pipes: Vec<Pipe>,
        limit: Option<Duration>,
        grace: Duration,
        leased: bool,
    ) -> Waited {
        let pid = child.id();
        let mut interrupted: Option<c_int> = None;
        let mut clock = Clock {
            grace,
            ..Clock::new(Instant::now(), limit, self.options.idle_timeout)
        };
        // The attempt's time limit: for the command, then for passing on
        // what it printed.
        let limit_at = clock.time_at;
        let mut seen = Observed::default();
        let mut exited: Option<ExitStatus> = None;
        // After the exit: when reading stops (no data for DRAIN), and when
        // it stops whatever comes.
        let mut drain_until = None;
        let mut drain_end = None;
        let mut reading = true;
        // The child's end is looked for at first and after each signal
        // (SIGCHLD among them), not after every read of its output.
        let mut check = true;
        // Whether the user was told that the command stopped at the
        // terminal.
        let mut told_stop = false;
        loop {
            if exited.is_none() && std::mem::take(&mut check) {
                // Not reaped yet: until the attempt is cleaned up, the
                // group's id stays the command's.
                let status = match process::ended(pid) {
                    Ok(status) => status,
                    // ECHILD cannot happen (SIGCHLD is handled, not
                    // ignored); if it did, waiting longer would never end.
                    Err(_) => Some(ExitStatus::from_raw(127 << 8)),
                };
                if let Some(status) = status {
                    let now = Instant::now();
                    exited = Some(status);
                    drain_until = now.checked_add(DRAIN);
                    drain_end = now.checked_add(DRAIN_MAX);
                }
            }
            if let Some(status) = exited {
                // An attempt that a signal or its time limit ended waits for
                // no more output.
                let cut = interrupted.is_some() || clock.timed_out.is_some();
                if reading
                    && (pipes.is_empty() || cut || drain_until.is_some_and(|d| Instant::now() >= d))
                {
                    reading = false;
                    self.copier.sweep(&mut pipes, &mut seen);
                }
                // Done when everything read is written; a reader that does
                // not take it is not waited for past the attempt's end or
                // its time limit: what it has not taken then is dropped.
                if !reading
                    && (pipes.is_empty() || cut || limit_at.is_some_and(|l| Instant::now() >= l))
                {
                    return Waited {
                        status,
                        interrupted,
                        timed_out: clock.timed_out,
                        seen,
                    };
                }
            }
            let running = exited.is_none();
            // Time limits apply to a running command only.
            let wake = if running {
                clock.wake()
            } else if reading {
                drain_until
            } else {
                limit_at
            };
            // A pipe with bytes to write waits for its destination, and is
            // not read meanwhile.
            let watched: Vec<(BorrowedFd<'_>, bool)> = pipes
                .iter()
                .map(|p| {
                    // After reading stopped, every pipe left waits for its
                    // destination.
                    if p.waiting() || !reading {
                        (p.to.as_fd(), true)
                    } else {
                        (p.from.as_fd(), false)
                    }
                })
                .collect();
            let (signals, ready) = self.watch.wait_io(wake, &watched);
            drop(watched);
            // Any signal, not only SIGCHLD: a signal that found the
            // self-pipe full is lost, but then others were read here.
            check = !signals.is_empty();
            if signals.contains(&libc::SIGCHLD) {
                self.keep_guard(pid);
            }
            if running && !told_stop && signals.contains(&libc::SIGCHLD) {
                told_stop = self.tell_terminal_stop(pid);
            }
            // Time spent stopped by job control (Ctrl-Z, then fg) is not
            // silence of the command's.
            let resumed = signals
                .iter()
                .any(|&s| s == libc::SIGTSTP || s == libc::SIGCONT);
            self.on_signals(pid, running, signals, &mut interrupted);
            if resumed {
                clock.last_output = Instant::now();
            }
            let flowing = self.copier.service(&mut pipes, &ready, reading, &mut seen);
            if flowing && !running && reading {
                // Output still flows: keep reading, up to DRAIN_MAX.
                drain_until = Instant::now().checked_add(DRAIN).min(drain_end);
            }
            if running {
                // Output that waits for its reader was written: the
                // command is not silent, only held up.
                if flowing || pipes.iter().any(Pipe::waiting) {
                    clock.last_output = Instant::now();
                }
                // A lease on the run's lock that was lost ends the
                // attempt as its time limit would.
                if leased
                    && clock.timed_out.is_none()
                    && self.lease_lost.load(std::sync::atomic::Ordering::SeqCst)
                {
                    clock.time_at = Some(Instant::now());
                }
                self.enforce(pid, &mut clock);
            }
        }
    }

    /// Ends a running attempt that ran past a time limit: `--signal`
    /// first, and KILL `--kill-after` later if it is still running.
    fn enforce(&self, pid: u32, clock: &mut Clock) {
        let now = Instant::now();
        if let Some(limit) = clock.due(now) {
            clock.timed_out = Some(limit);
            let sig = self.options.timeout_signal;
            self.forward(pid, sig);
            if sig != libc::SIGKILL {
                // A stopped command could not act on the signal.
                if sig != libc::SIGCONT {
                    self.forward(pid, libc::SIGCONT);
                }
                clock.kill_at = Some(now.checked_add(clock.grace).unwrap_or(now));
            }
        }
        if clock.kill_at.is_some_and(|k| now >= k) {
            clock.kill_at = None;
            self.forward(pid, libc::SIGKILL);
        }
    }

    /// Acts on signals received during an attempt: the first terminating
    /// one is passed on, a second kills the group; job control is passed on.
    /// Once the child is reaped its pid may be reused: then nothing is sent.
    fn on_signals(
        &self,
        pid: u32,
        running: bool,
        signals: Vec<c_int>,
        interrupted: &mut Option<c_int>,
    ) {
        for sig in signals {
            match sig {
                s if is_terminating(s) => {
                    let send = if interrupted.is_some() {
                        // A second signal: no more patience.
                        libc::SIGKILL
                    } else {
                        *interrupted = Some(s);
                        s
                    };
                    if running {
                        self.forward(pid, send);
                        // A stopped command could not act on the signal.
                        if send != libc::SIGKILL {
                            self.forward(pid, libc::SIGCONT);
                        }
                    }
                }
                libc::SIGTSTP => {
                    if running {
                        self.forward(pid, libc::SIGTSTP);
                    }
                    signals::stop_self();
                }
                libc::SIGCONT if running => self.forward(pid, libc::SIGCONT),
                _ => {}
            }
        }
    }

    /// If the command has stopped because it used the terminal from outside
    /// the terminal's foreground process group, says so (it would wait
    /// silently, maybe for ever) and returns true.
    fn tell_terminal_stop(&self, pid: u32) -> bool {
        let (sig, what) = match process::stopped_by(pid) {
            Some(libc::SIGTTIN) => ("SIGTTIN", "read the terminal"),
            Some(libc::SIGTTOU) => ("SIGTTOU", "wrote to the terminal or changed its settings"),
            _ => return false,
        };
        let hint = if self.options.foreground {
            "backoff runs in the background"
        } else {
            "it runs in a process group of its own (--foreground gives it the terminal)"
        };
        self.options.warnings.warn(&format!(
            "the command is stopped by {sig}: it {what}, which it may not do as {hint}; Ctrl-C or kill ends it"
        ));
        true
    }

    /// The first terminating signal among those pending; job-control signals
    /// are acted on meanwhile.
    pub(super) fn pending_termination(pending: Vec<c_int>) -> Option<c_int> {
        let mut found = None;
        for sig in pending {
            match sig {
                s if is_terminating(s) => {
                    found = found.or(Some(s));
                }
                libc::SIGTSTP => signals::stop_self(),
                _ => {}
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn without_limits_nothing_is_due_and_nothing_wakes() {
        let start = Instant::now();
        let clock = Clock::new(start, None, None);
        assert_eq!(clock.due(start + 1000 * MS), None);
        assert_eq!(clock.wake(), None);
    }

    #[test]
    fn the_idle_limit_runs_from_the_last_output() {
        let start = Instant::now();
        let mut clock = Clock::new(start, None, Some(300 * MS));
        assert_eq!(clock.wake(), Some(start + 300 * MS));
        assert_eq!(clock.due(start + 299 * MS), None);
        clock.last_output = start + 200 * MS;
        assert_eq!(clock.wake(), Some(start + 500 * MS));
        assert_eq!(clock.due(start + 400 * MS), None);
        assert_eq!(clock.due(start + 500 * MS), Some(Limit::Idle));
    }

    #[test]
    fn the_limit_that_ran_out_first_wins() {
        let start = Instant::now();
        let clock = Clock::new(start, Some(100 * MS), Some(300 * MS));
        assert_eq!(clock.wake(), Some(start + 100 * MS));
        assert_eq!(clock.due(start + 400 * MS), Some(Limit::Time));
        let clock = Clock::new(start, Some(300 * MS), Some(100 * MS));
        assert_eq!(clock.wake(), Some(start + 100 * MS));
        assert_eq!(clock.due(start + 400 * MS), Some(Limit::Idle));
    }

    #[test]
    fn after_a_timeout_only_the_kill_is_waited_for() {
        let start = Instant::now();
        let mut clock = Clock::new(start, Some(100 * MS), Some(100 * MS));
        clock.timed_out = Some(Limit::Time);
        assert_eq!(clock.due(start + 1000 * MS), None);
        assert_eq!(clock.wake(), None);
        clock.kill_at = Some(start + 600 * MS);
        assert_eq!(clock.wake(), Some(start + 600 * MS));
    }
}
