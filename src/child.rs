//! The real executor: spawns the command (no shell, its own process group),
//! waits for it and for signals in one event-driven wait, passes signals on,
//! and decodes how it ended. Policy decisions are not made here.

use std::ffi::OsString;
use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use libc::c_int;

use crate::classify::Outcome;
use crate::run::{AttemptSpec, Ended, Executor};
use crate::signals::{self, SignalWatch, TERMINATING};

/// Runs attempts of one command for real.
pub struct RealExecutor {
    command: Vec<OsString>,
    foreground: bool,
    watch: SignalWatch,
    /// The process group of the last attempt, if processes of it outlived
    /// the command itself.
    lingering: Option<u32>,
}

impl RealExecutor {
    /// An executor for `command`; `foreground` keeps the child in backoff's
    /// process group.
    pub fn new(command: Vec<OsString>, foreground: bool, watch: SignalWatch) -> Self {
        RealExecutor {
            command,
            foreground,
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
        if !self.foreground {
            cmd.process_group(0);
        }
        cmd.spawn()
    }

    /// Sends `sig` to the running child: to its whole process group, or to
    /// the child alone with `--foreground`. Only called before the child is
    /// reaped, so its pid cannot have been reused.
    fn forward(&self, pid: u32, sig: c_int) {
        let _ = if self.foreground {
            signals::signal_process(pid, sig)
        } else {
            signals::signal_group(pid, sig)
        };
    }

    /// Waits for the child to end, passing signals on meanwhile.
    fn wait(&mut self, child: &mut Child) -> (ExitStatus, Option<c_int>) {
        let pid = child.id();
        let mut interrupted: Option<c_int> = None;
        loop {
            match child.try_wait() {
                Ok(Some(status)) => return (status, interrupted),
                Ok(None) => {}
                // ECHILD cannot happen (SIGCHLD is handled, not ignored); if
                // it did, waiting longer would never end.
                Err(_) => return (ExitStatus::from_raw(127 << 8), interrupted),
            }
            for sig in self.watch.wait(None) {
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
fn outcome(status: ExitStatus) -> Outcome {
    if let Some(code) = status.code() {
        Outcome::Exited(u8::try_from(code & 0xff).unwrap_or(u8::MAX))
    } else if let Some(sig) = status.signal() {
        Outcome::Signaled(sig)
    } else {
        Outcome::Exited(u8::MAX)
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
        let pending = self.watch.pending();
        if let Some(sig) = Self::pending_termination(pending) {
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
        let (status, interrupted) = self.wait(&mut child);
        self.lingering = None;
        if !self.foreground && signals::group_exists(pid) {
            if interrupted.is_some() {
                // The run is over: leave nothing of the command behind.
                let _ = signals::signal_group(pid, libc::SIGKILL);
            } else {
                self.lingering = Some(pid);
            }
        }
        let o = outcome(status);
        match interrupted {
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
