//! The Unix executor: the command in a process group of its own
//! (`launch`), one event-driven wait for it, signals and time limits
//! (`wait`), its output copied and scanned through pipes (`copy`), data
//! held or replayed in temporary files (`spool`), and the guard that ends
//! the group if backoff is killed.

mod copy;
mod launch;
mod spool;
mod wait;

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use crate::classify::{Observed, Outcome, Status};
use crate::exec::scan::{self, OutputRules};
use crate::exec::{Options, describe};
use crate::output::Room;
use crate::run::{self, AttemptSpec, Ended, Executor, Released, Wait};
use crate::sys::guard::Guard;
use crate::sys::signals::{self, SignalWatch};
use crate::sys::{children, fd, process};
use copy::Copier;
pub use spool::{Replayed, spool_stdin};

/// Runs attempts of one command for real.
pub struct RealExecutor {
    command: Vec<OsString>,
    options: Options,
    watch: SignalWatch,
    /// The process group of the last attempt, if processes of it outlived
    /// the command itself.
    lingering: Option<u32>,
    /// Copies and matches the output; the output is piped through backoff
    /// only when there are rules, stdout is held or `--idle-timeout` watches
    /// it.
    copier: Copier,
    /// `--replay-stdin`: every attempt reads this file from its start.
    stdin: Option<Replayed>,
    /// `--hold-stdout`: the current attempt's stdout.
    held: Option<File>,
    /// The file the curl preset has curl dump the response headers to,
    /// read after each attempt as if curl had printed them.
    headers: Option<tempfile::NamedTempFile>,
    /// Kills the running attempt's group if backoff is killed; none with
    /// `--foreground` (the command is in backoff's group) or if it could
    /// not be started.
    guard: Option<Guard>,
    /// What to tell of a program that was not found, if it looks like a
    /// mistake (`cli::advice::not_found`).
    not_found: Option<String>,
    /// Set when the run's lease on its lock was lost (`alarm`): the running
    /// attempt is ended as for a timeout, and a delay ends early.
    lease_lost: Arc<AtomicBool>,
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
        stdin: Option<Replayed>,
        watch: SignalWatch,
    ) -> io::Result<Self> {
        let held = if options.hold_stdout {
            Some(tempfile::tempfile()?)
        } else {
            None
        };
        let copier = Copier::new(rules, options.warnings.clone());
        let guard = if options.foreground {
            None
        } else {
            Guard::start()
                .map_err(|e| {
                    options.warnings.warn(&format!(
                        "cannot start the guard process ({}): if backoff is killed, processes the command started may outlive it",
                        describe(&e)
                    ));
                })
                .ok()
        };
        Ok(RealExecutor {
            command,
            options,
            watch,
            lingering: None,
            copier,
            stdin,
            held,
            headers: None,
            guard,
            not_found: None,
            lease_lost: Arc::new(AtomicBool::new(false)),
        })
    }

    /// What a lock's store calls, from any thread, when the run's lease on
    /// the lock is lost: the running attempt ends as for a timeout, a delay
    /// ends, and the run finds the lease lost.
    pub fn alarm(&self) -> crate::fleet::lock::Alarm {
        crate::exec::lease_alarm(&self.lease_lost, self.watch.waker().ok())
    }

    /// Something another thread calls to wake `wait_until`, if the
    /// signal watch can give one.
    pub fn waker(&self) -> Option<signals::Waker> {
        self.watch.waker().ok()
    }

    /// Waits until `done` says so (looked at each time the wait wakes: a
    /// `waker`'s call wakes it, and it wakes each second anyway) or a
    /// terminating signal comes, which it returns.
    pub fn wait_until(&mut self, done: &dyn Fn() -> bool) -> Option<i32> {
        loop {
            if done() {
                return None;
            }
            let got = self
                .watch
                .wait(Instant::now().checked_add(Duration::from_secs(1)));
            if got.contains(&libc::SIGCHLD) {
                self.keep_guard(0);
            }
            if let Some(sig) = Self::pending_termination(got) {
                return Some(sig);
            }
        }
    }

    /// Waits until `out` has room (an error counts), `deadline` passes
    /// (`Late`) or a terminating signal comes, for a writer whose reader
    /// is behind.
    pub fn wait_writable(&mut self, out: &fd::Out, deadline: Option<Instant>) -> Room {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Room::Late;
        }
        let (got, _) = self.watch.wait_io(deadline, &[(out.as_fd(), true)]);
        if got.contains(&libc::SIGCHLD) {
            self.keep_guard(0);
        }
        match Self::pending_termination(got) {
            Some(sig) => Room::Signal(sig),
            None => Room::Ready,
        }
    }

    /// Reads the response headers of each attempt from `headers` (the
    /// file curl dumps them to), if given.
    #[must_use]
    pub fn with_headers(self, headers: Option<tempfile::NamedTempFile>) -> Self {
        RealExecutor { headers, ..self }
    }

    /// Tells `advice` (`cli::advice::not_found`) when the program is not
    /// found.
    #[must_use]
    pub fn with_advice(self, not_found: Option<String>) -> Self {
        RealExecutor { not_found, ..self }
    }

    /// Matches the headers curl dumped for the last attempt
    /// (`scan::headers_file`).
    fn scan_headers(&mut self, seen: &mut Observed) {
        if let (Some(file), Some(rules)) = (&self.headers, &self.copier.rules) {
            scan::headers_file(file, rules, seen);
        }
    }
}

impl RealExecutor {
    /// Waits for `delay`, or until a terminating signal (returned) arrives;
    /// with `resize`, also until the terminal's size changes.
    fn paused(&mut self, delay: Duration, resize: bool) -> Option<i32> {
        let deadline = Instant::now().checked_add(delay);
        loop {
            // A lease lost (during a hook, say, which took its wake-up)
            // ends the delay; a signal that came with it still counts.
            let got = if self.lease_lost.load(Ordering::SeqCst) {
                self.watch.pending()
            } else {
                self.watch.wait(deadline)
            };
            let resized = got.contains(&libc::SIGWINCH);
            if got.contains(&libc::SIGCHLD) {
                self.keep_guard(0);
            }
            if let Some(sig) = Self::pending_termination(got.clone()) {
                return Some(sig);
            }
            if got.is_empty() || self.lease_lost.load(Ordering::SeqCst) {
                return None;
            }
            if resize && resized {
                return None;
            }
        }
    }

    /// Tells the guard which process group to kill if backoff is killed
    /// (0: none). A guard that is gone is replaced, as a supervisor
    /// restarts what it watches, and the new one is told instead: its death
    /// must cost no attempt, and protection is lost only if none can start.
    fn watch_group(&mut self, pgid: u32) {
        let Some(guard) = &mut self.guard else {
            return;
        };
        if guard.watch(pgid).is_ok() {
            return;
        }
        self.replace_guard(pgid);
    }

    /// On SIGCHLD: replaces a guard that has died at once, telling the new
    /// one `pgid`, rather than when it is next told a group. An attempt may
    /// run for days: it must not run unguarded that long, and as PID 1 the
    /// dead guard, a child of backoff's own not reaped, would hold up the
    /// reaping of every orphan behind it.
    fn keep_guard(&mut self, pgid: u32) {
        if self.guard.as_ref().is_some_and(Guard::has_ended) {
            self.replace_guard(pgid);
        }
    }

    /// Replaces the guard, which is gone, with a new one told `pgid`.
    fn replace_guard(&mut self, pgid: u32) {
        // Reaps the dead one.
        self.guard = None;
        self.guard = match Guard::start() {
            Ok(mut guard) => {
                self.options
                    .warnings
                    .warn("the guard process died; a new one was started");
                let _ = guard.watch(pgid);
                Some(guard)
            }
            Err(e) => {
                self.options.warnings.warn(&format!(
                    "the guard process died and cannot be started again ({}): if backoff is killed, processes the command started may outlive it",
                    describe(&e)
                ));
                None
            }
        };
    }
}

impl RealExecutor {
    /// Waits for what is left of the hook group `pgid` (its shell reaped,
    /// the rest sent SIGTERM) to end, as long as `--kill-after` at most,
    /// then kills it, as systemd ends a unit's processes; a terminating
    /// signal meanwhile kills it at once, and is returned.
    fn end_leftovers(&mut self, pgid: u32) -> Option<libc::c_int> {
        let deadline = Instant::now().checked_add(self.options.kill_after);
        // Where their ends cannot be waited for, the group is looked at
        // again, less often as it lasts.
        let mut step = Duration::from_millis(1);
        let mut got = None;
        loop {
            let alive = process::group_alive(pgid);
            let fds: &[OwnedFd] = match &alive {
                process::Alive::None => break,
                process::Alive::Watched(fds) => fds,
                process::Alive::Unwatched => &[],
            };
            let now = Instant::now();
            if got.is_some() || deadline.is_some_and(|d| now >= d) {
                let _ = signals::signal_group(pgid, libc::SIGKILL);
                break;
            }
            let wake = if fds.is_empty() {
                step = step.saturating_mul(2).min(Duration::from_millis(50));
                now.checked_add(step)
                    .map(|at| deadline.map_or(at, |d| at.min(d)))
                    .or(deadline)
            } else {
                deadline
            };
            // Until one of them ends (then the group is looked at again),
            // a signal, or the deadline.
            let watched: Vec<_> = fds.iter().map(|fd| (fd.as_fd(), false)).collect();
            let (signals, _) = self.watch.wait_io(wake, &watched);
            if signals.contains(&libc::SIGCHLD) {
                self.keep_guard(pgid);
            }
            got = Self::pending_termination(signals);
        }
        got
    }
}

/// How a child that was waited for ended.
fn ended(waited: wait::Waited) -> Ended {
    let st = status(waited.status);
    let outcome = match (waited.timed_out, st) {
        (Some(limit), st) => Outcome::TimedOut(st, limit),
        (None, Status::Code(c)) => Outcome::Exited(c),
        (None, Status::Signal(s)) => Outcome::Signaled(s),
    };
    match waited.interrupted {
        Some(sig) => Ended::Interrupted(sig, Some(outcome)),
        None => Ended::Done {
            outcome,
            seen: waited.seen,
            spawn_error: None,
        },
    }
}

/// Decodes a wait status.
fn status(status: ExitStatus) -> Status {
    if let Some(code) = status.code() {
        Status::Code(code.cast_unsigned() & 0xff)
    } else if let Some(sig) = status.signal() {
        Status::Signal(sig)
    } else {
        Status::Code(255)
    }
}

impl Wait for RealExecutor {
    fn wait_ready(&mut self, pipe: Option<&io::PipeReader>, deadline: Instant) -> run::Waited {
        let watched: Vec<(BorrowedFd<'_>, bool)> =
            pipe.into_iter().map(|p| (p.as_fd(), false)).collect();
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
    fn attempt(&mut self, spec: &AttemptSpec<'_>) -> Ended {
        // A signal that came between the delay and now: start nothing.
        if let Some(sig) = Self::pending_termination(self.watch.pending()) {
            return Ended::Interrupted(sig, None);
        }
        let (mut child, pipes) = match self.spawn(spec) {
            Ok(started) => started,
            Err(e) => {
                // A child that could not execute told the guard its pid
                // before it died: that id names nothing of ours any more.
                self.watch_group(0);
                let o = match e.raw_os_error() {
                    Some(errno) if process::is_resource_error(errno) => Outcome::Unstarted(errno),
                    _ if e.kind() == io::ErrorKind::NotFound => Outcome::NotFound,
                    _ => Outcome::CannotRun,
                };
                let why = launch::spawn_error(&e, &self.command[0], self.not_found.as_deref());
                return Ended::Done {
                    outcome: o,
                    seen: Observed::default(),
                    spawn_error: Some(why),
                };
            }
        };
        self.watch_group(child.id());
        let mut waited = self.wait(&child, pipes, spec.limit, spec.grace, true);
        self.scan_headers(&mut waited.seen);
        waited.seen.hint = scan::hint(&waited.seen, SystemTime::now());
        // The command has ended but is not reaped yet, so its pid still
        // names its process group alone.
        let pgid = child.id();
        let ended_by_backoff = waited.interrupted.is_some() || waited.timed_out.is_some();
        if !self.options.foreground && ended_by_backoff {
            // The attempt was ended by backoff: leave nothing of it.
            let _ = signals::signal_group(pgid, libc::SIGKILL);
        }
        // Once the command is reaped, its id may name another group as soon
        // as its own is empty: the guard must not kill by it any more.
        self.watch_group(0);
        let _ = children::reap(&mut child);
        self.lingering = None;
        if !self.options.foreground && !ended_by_backoff && signals::group_exists(pgid) {
            self.lingering = Some(pgid);
        }
        ended(waited)
    }

    fn hook(&mut self, hook: &run::HookRun<'_>) -> Ended {
        let announce = self.guard.as_ref().map(Guard::pipe);
        let mut child = match launch::spawn_hook(hook, &self.options.carried, announce) {
            Ok(child) => child,
            Err(e) => {
                self.watch_group(0);
                return Ended::Done {
                    outcome: Outcome::CannotRun,
                    seen: Observed::default(),
                    spawn_error: Some(describe(&e)),
                };
            }
        };
        self.watch_group(child.id());
        // A hook is waited for as an attempt is, in its own group always,
        // with no output to watch, and killed its grace after its signal.
        let own = self.options.clone();
        self.options.foreground = false;
        self.options.idle_timeout = None;
        self.options.kill_after = hook.grace;
        // A hook that runs under the lock ends when it is lost; one that
        // closes a run which lost it runs to its end.
        let mut waited = self.wait(
            &child,
            Vec::new(),
            Some(hook.limit),
            hook.grace,
            hook.leased,
        );
        let pgid = child.id();
        // Nothing of a hook outlives it (`sleep 300 &` would run beside the
        // next attempt, and past backoff's end): its shell is not reaped
        // yet, so the group's id is still the hook's alone.
        if waited.interrupted.is_some() || waited.timed_out.is_some() {
            let _ = signals::signal_group(pgid, libc::SIGKILL);
        } else {
            let _ = signals::signal_group(pgid, libc::SIGTERM);
            let _ = signals::signal_group(pgid, libc::SIGCONT);
        }
        let _ = children::reap(&mut child);
        // What is left holds the group's id: the guard keeps it meanwhile.
        // It has the hook's grace to end.
        let signal = self.end_leftovers(pgid);
        self.options = own;
        waited.interrupted = waited.interrupted.or(signal);
        self.watch_group(0);
        ended(waited)
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
        self.paused(delay, false)
    }

    fn pause_or_resize(&mut self, delay: Duration) -> Option<i32> {
        self.paused(delay, true)
    }

    fn now(&self) -> Instant {
        Instant::now()
    }

    fn finish(&mut self, deadline: Option<Instant>) -> Released {
        // The stdout of the attempt that ended the run, at last; none of it
        // if it could not be held whole.
        let Some(held) = self.held.as_mut() else {
            return Released::All;
        };
        if let Some(e) = self.copier.lost.take() {
            return Released::Lost(format!(
                "cannot hold all of the final attempt's stdout in the temporary directory '{}': {}; none of it was written",
                std::env::temp_dir().display(),
                describe(&e)
            ));
        }
        spool::write_out(held, self.copier.buffer(), &mut self.watch, deadline)
    }
}
