//! The real executor: spawns the command (no shell, its own process group),
//! waits for it, for signals and for its time limit in one event-driven wait,
//! passes signals on, and decodes how it ended. Policy decisions are not made
//! here.

use std::ffi::OsString;
use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use libc::c_int;

use crate::classify::{Outcome, Status};
use crate::run::{AttemptSpec, Ended, Executor};
use crate::signals::{self, SignalWatch, TERMINATING};

/// How attempts are run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Keep the child in backoff's process group; signal only the child.
    pub foreground: bool,
    /// The signal a timed-out attempt gets first.
    pub timeout_signal: c_int,
    /// How long after that signal the attempt is killed.
    pub kill_after: Duration,
}

/// Runs attempts of one command for real.
pub struct RealExecutor {
    command: Vec<OsString>,
    options: Options,
    watch: SignalWatch,
    /// The process group of the last attempt, if processes of it outlived
    /// the command itself.
    lingering: Option<u32>,
}

/// What happened while waiting for a child.
struct Waited {
    status: ExitStatus,
    /// The first terminating signal backoff received meanwhile.
    interrupted: Option<c_int>,
    /// Whether the attempt ran past its limit.
    timed_out: bool,
}

impl RealExecutor {
    /// An executor for `command`.
    pub fn new(command: Vec<OsString>, options: Options, watch: SignalWatch) -> Self {
        RealExecutor {
            command,
            options,
            watch,
            lingering: None,
        }
    }

    fn spawn(&self, spec: &AttemptSpec) -> io::Result<Child> {
        let mut cmd = Command::new(&self.command[0]);
        cmd.args(&self.command[1..]);
        cmd.env("BACKOFF_ATTEMPT", spec.number.to_string());
        cmd.env(
            "BACKOFF_MAX_ATTEMPTS",
            spec.max_attempts.map(|m| m.to_string()).unwrap_or_default(),
        );
        match spec.last {
            Some(o) => cmd.env("BACKOFF_LAST_STATUS", o.env_value()),
            None => cmd.env_remove("BACKOFF_LAST_STATUS"),
        };
        if !self.options.foreground {
            cmd.process_group(0);
        }
        signals::kill_child_with_parent(&mut cmd);
        cmd.spawn()
    }

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

    /// Waits for the child to end, passing signals on and enforcing its time
    /// limit meanwhile.
    fn wait(&mut self, child: &mut Child, limit: Option<Duration>) -> Waited {
        let pid = child.id();
        let mut interrupted: Option<c_int> = None;
        let mut timeout_at = limit.and_then(|l| Instant::now().checked_add(l));
        let mut kill_at: Option<Instant> = None;
        let mut timed_out = false;
        loop {
            match child.try_wait() {
                Ok(Some(status)) => {
                    return Waited {
                        status,
                        interrupted,
                        timed_out,
                    };
                }
                Ok(None) => {}
                // ECHILD cannot happen (SIGCHLD is handled, not ignored); if
                // it did, waiting longer would never end.
                Err(_) => {
                    return Waited {
                        status: ExitStatus::from_raw(127 << 8),
                        interrupted,
                        timed_out,
                    };
                }
            }
            let wake = match (timeout_at, kill_at) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            for sig in self.watch.wait(wake) {
                match sig {
                    s if TERMINATING.contains(&s) => {
                        if interrupted.is_some() {
                            // A second signal: no more patience.
                            self.forward(pid, libc::SIGKILL);
                        } else {
                            interrupted = Some(s);
                            self.forward(pid, s);
                        }
                    }
                    libc::SIGTSTP => {
                        self.forward(pid, libc::SIGTSTP);
                        signals::stop_self();
                    }
                    libc::SIGCONT => self.forward(pid, libc::SIGCONT),
                    _ => {}
                }
            }
            let now = Instant::now();
            if timeout_at.is_some_and(|t| now >= t) {
                timeout_at = None;
                timed_out = true;
                let sig = self.options.timeout_signal;
                self.forward(pid, sig);
                if sig != libc::SIGKILL {
                    // A stopped command could not act on the signal.
                    if sig != libc::SIGCONT {
                        self.forward(pid, libc::SIGCONT);
                    }
                    kill_at = Some(now.checked_add(self.options.kill_after).unwrap_or(now));
                }
            }
            if kill_at.is_some_and(|k| now >= k) {
                kill_at = None;
                self.forward(pid, libc::SIGKILL);
            }
        }
    }

    /// The first terminating signal among those pending; job-control signals
    /// are acted on meanwhile.
    fn pending_termination(pending: Vec<c_int>) -> Option<c_int> {
        let mut found = None;
        for sig in pending {
            match sig {
                s if TERMINATING.contains(&s) => {
                    found = found.or(Some(s));
                }
                libc::SIGTSTP => signals::stop_self(),
                _ => {}
            }
        }
        found
    }
}

/// Decodes a wait status.
fn status(status: ExitStatus) -> Status {
    if let Some(code) = status.code() {
        Status::Code(u8::try_from(code & 0xff).unwrap_or(u8::MAX))
    } else if let Some(sig) = status.signal() {
        Status::Signal(sig)
    } else {
        Status::Code(u8::MAX)
    }
}

/// An OS error without its ` (os error N)` tail.
fn describe(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_owned(),
        None => s,
    }
}

impl Executor for RealExecutor {
    fn attempt(&mut self, spec: &AttemptSpec) -> Ended {
        // A signal that came between the delay and now: start nothing.
        if let Some(sig) = Self::pending_termination(self.watch.pending()) {
            return Ended::Interrupted(sig, None);
        }
        let mut child = match self.spawn(spec) {
            Ok(c) => c,
            Err(e) => {
                let o = if e.kind() == io::ErrorKind::NotFound {
                    Outcome::NotFound
                } else {
                    Outcome::CannotRun
                };
                return Ended::Done(o, Some(describe(&e)));
            }
        };
        let pid = child.id();
        let waited = self.wait(&mut child, spec.limit);
        self.lingering = None;
        if !self.options.foreground && signals::group_exists(pid) {
            if waited.interrupted.is_some() || waited.timed_out {
                // The attempt was ended by backoff: leave nothing of it.
                let _ = signals::signal_group(pid, libc::SIGKILL);
            } else {
                self.lingering = Some(pid);
            }
        }
        let st = status(waited.status);
        let o = if waited.timed_out {
            Outcome::TimedOut(st)
        } else {
            match st {
                Status::Code(c) => Outcome::Exited(c),
                Status::Signal(s) => Outcome::Signaled(s),
            }
        };
        match waited.interrupted {
            Some(sig) => Ended::Interrupted(sig, Some(o)),
            None => Ended::Done(o, None),
        }
    }

    fn pause(&mut self, delay: Duration) -> Option<i32> {
        // A retry follows: processes the last attempt left in its group would
        // race it (a port held, a lock taken), so they get SIGTERM now, right
        // after the attempt ended and before its group id can be reused.
        if let Some(pgid) = self.lingering.take() {
            if signals::group_exists(pgid) {
                let _ = signals::signal_group(pgid, libc::SIGTERM);
            }
        }
        let deadline = Instant::now().checked_add(delay);
        loop {
            let got = self.watch.wait(deadline);
            if got.is_empty() {
                return None;
            }
            if let Some(sig) = Self::pending_termination(got) {
                return Some(sig);
            }
        }
    }

    fn now(&self) -> Instant {
        Instant::now()
    }
}
