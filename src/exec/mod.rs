//! The real executor of attempts: starts the command (no shell, its own
//! process group: `launch`), waits for it, for signals and for its time
//! limit in one event-driven wait (`wait`), copies and scans its output when
//! output rules need it (`copy`, `scan`), holds or replays data in
//! temporary files (`spool`), and decodes how it ended. Policy decisions are
//! not made here.

mod copy;
mod launch;
pub mod scan;
mod spool;
mod wait;

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::fd::BorrowedFd;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::{Duration, Instant, SystemTime};

use libc::c_int;

use crate::classify::{Observed, Outcome, Status};
use crate::run::{self, AttemptSpec, Ended, Executor, Wait};
use crate::sys::signals::{self, SignalWatch};
use copy::Copier;
use scan::{OutputRules, retry_after_delay};
pub use spool::spool_stdin;

/// How attempts are run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Keep the child in backoff's process group; signal only the child.
    pub foreground: bool,
    /// The signal a timed-out attempt gets first.
    pub timeout_signal: c_int,
    /// How long after that signal the attempt is killed.
    pub kill_after: Duration,
    /// `--hold-stdout`.
    pub hold_stdout: bool,
}

/// Runs attempts of one command for real.
pub struct RealExecutor {
    command: Vec<OsString>,
    options: Options,
    watch: SignalWatch,
    /// The process group of the last attempt, if processes of it outlived
    /// the command itself.
    lingering: Option<u32>,
    /// Copies and matches the output; the output is piped through backoff
    /// only when there are rules.
    copier: Copier,
    /// `--replay-stdin`: every attempt reads this file from its start.
    stdin: Option<File>,
    /// `--hold-stdout`: the current attempt's stdout.
    held: Option<File>,
}

impl RealExecutor {
    /// An executor for `command`. `rules` say what to look for in the
    /// output; `stdin` is the replayed input, if any.
    ///
    /// # Errors
    ///
    /// When the temporary file for `--hold-stdout` cannot be created.
    pub fn new(
        command: Vec<OsString>,
        options: Options,
        rules: Option<OutputRules>,
        stdin: Option<File>,
        watch: SignalWatch,
    ) -> io::Result<Self> {
        let held = if options.hold_stdout {
            Some(tempfile::tempfile()?)
        } else {
            None
        };
        Ok(RealExecutor {
            command,
            options,
            watch,
            lingering: None,
            copier: Copier::new(rules),
            stdin,
            held,
        })
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

impl Wait for RealExecutor {
    fn wait_ready(&mut self, fd: Option<BorrowedFd<'_>>, deadline: Instant) -> run::Waited {
        let watched: Vec<(BorrowedFd<'_>, bool)> = fd.into_iter().map(|f| (f, false)).collect();
        loop {
            let (got, ready) = self.watch.wait_io(Some(deadline), &watched);
            if let Some(sig) = Self::pending_termination(got) {
                return run::Waited::Signal(sig);
            }
            if ready.contains(&true) {
                return run::Waited::Ready;
            }
            if Instant::now() >= deadline {
                return run::Waited::TimedOut;
            }
        }
    }
}

impl Executor for RealExecutor {
    fn attempt(&mut self, spec: &AttemptSpec) -> Ended {
        // A signal that came between the delay and now: start nothing.
        if let Some(sig) = Self::pending_termination(self.watch.pending()) {
            return Ended::Interrupted(sig, None);
        }
        let (mut child, pipes) = match self.spawn(spec) {
            Ok(started) => started,
            Err(e) => {
                let o = if e.kind() == io::ErrorKind::NotFound {
                    Outcome::NotFound
                } else {
                    Outcome::CannotRun
                };
                return Ended::Done {
                    outcome: o,
                    seen: Observed::default(),
                    spawn_error: Some(describe(&e)),
                };
            }
        };
        let mut waited = self.wait(&mut child, pipes, spec.limit);
        waited.seen.hint = waited
            .seen
            .retry_after
            .as_deref()
            .and_then(|v| retry_after_delay(v, SystemTime::now()));
        // The child is reaped; its pid is still the id of its process group
        // while a process of the group lives.
        let pgid = child.id();
        self.lingering = None;
        if !self.options.foreground && signals::group_exists(pgid) {
            if waited.interrupted.is_some() || waited.timed_out {
                // The attempt was ended by backoff: leave nothing of it.
                let _ = signals::signal_group(pgid, libc::SIGKILL);
            } else {
                self.lingering = Some(pgid);
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
            None => Ended::Done {
                outcome: o,
                seen: waited.seen,
                spawn_error: None,
            },
        }
    }

    fn before_retry(&mut self) {
        // A retry may follow: processes the last attempt left in its group
        // would race it (a port held, a lock taken), so they get SIGTERM
        // now, right after the attempt ended, before its group id could be
        // reused by another group.
        if let Some(pgid) = self.lingering.take()
            && signals::group_exists(pgid)
        {
            let _ = signals::signal_group(pgid, libc::SIGTERM);
        }
    }

    fn pause(&mut self, delay: Duration) -> Option<i32> {
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

    fn finish(&mut self) {
        // The stdout of the attempt that ended the run, at last.
        if let Some(held) = &mut self.held {
            spool::write_out(held, self.copier.buffer());
        }
    }
}
