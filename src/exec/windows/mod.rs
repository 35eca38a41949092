//! The Windows executor: each attempt and each hook in a job object and a
//! console process group of their own (`sys::process::spawn`), waited for
//! with the console's control events and the time limits in one wait. A
//! timed-out attempt gets `CTRL_BREAK` (or `--signal CTRL_C`), then its
//! job is terminated after `--kill-after`; a control event sent to
//! backoff is passed on to the attempt's group, and its whole job ends.
//!
//! Output rules, `--idle-timeout`, held stdout and CI folds have the
//! command's output pass through backoff (`copy`, a thread for each
//! stream); `--replay-stdin` and `--hold-stdout` keep data in temporary
//! files (`spool`).

mod copy;
mod spool;

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::windows::io::AsHandle;
use std::os::windows::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use crate::classify::{Limit, Observed, Outcome, Status};
use crate::exec::env::{environment, hook_environment};
use crate::exec::scan::{self, OutputRules};
use crate::exec::{Options, describe};
use crate::run::{self, AttemptSpec, Ended, Executor, HookRun, Released, Wait};
use crate::signal::is_terminating;
use crate::sys::job::Job;
use crate::sys::signals::{self, SignalWatch};
use crate::sys::{fd, process, signal_names};
use copy::{Shared, To};
pub use spool::{Replayed, spool_stdin};

/// How long backoff keeps reading the command's output after the command
/// exited while no more comes: a process it left behind may hold the pipe
/// open.
const DRAIN: Duration = Duration::from_millis(500);

/// The longest backoff reads output after the command exited.
const DRAIN_MAX: Duration = Duration::from_secs(10);

/// Runs attempts of one command for real.
pub struct RealExecutor {
    command: Vec<OsString>,
    options: Options,
    watch: SignalWatch,
    /// What to look for in the output.
    rules: Option<Arc<OutputRules>>,
    /// `--replay-stdin`: every attempt reads this file from its start.
    stdin: Option<Replayed>,
    /// `--hold-stdout`: the current attempt's stdout.
    held: Option<File>,
    /// The first write into the held stdout file that failed.
    held_lost: Option<io::Error>,
    /// The file the curl preset has curl dump the response headers to.
    headers: Option<tempfile::NamedTempFile>,
    /// What to tell of a program that was not found.
    not_found: Option<String>,
    /// Set when the run's lease on its lock was lost.
    lease_lost: Arc<AtomicBool>,
    /// The job of the last attempt, while processes of it outlive the
    /// command itself; ended before a retry.
    lingering: Option<Job>,
    /// Whether the user was told that a control event could not be sent.
    told_no_console: bool,
}

/// How a child that was waited for ended.
struct Waited {
    status: Option<ExitStatus>,
    interrupted: Option<i32>,
    timed_out: Option<Limit>,
}

/// The output of a running attempt passing through backoff.
struct Captured {
    shared: Shared,
    threads: Vec<JoinHandle<()>>,
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
        if let Err(e) = Job::enclose_self() {
            options.warnings.warn(&format!(
                "cannot put backoff in a job of its own ({}): a process started in the instant backoff is killed may outlive it",
                describe(&e)
            ));
        }
        if options.foreground {
            options.warnings.warn(
                "--foreground changes nothing on Windows: an attempt in a console process group of its own still reads the console, and Ctrl-C reaches it through backoff, as Ctrl-Break",
            );
        }
        Ok(RealExecutor {
            command,
            options,
            watch,
            rules: rules.map(Arc::new),
            stdin,
            held,
            held_lost: None,
            headers: None,
            not_found: None,
            lease_lost: Arc::new(AtomicBool::new(false)),
            lingering: None,
            told_no_console: false,
        })
    }

    /// What a lock's store calls, from any thread, when the run's lease on
    /// the lock is lost.
    pub fn alarm(&self) -> crate::fleet::lock::Alarm {
        crate::exec::lease_alarm(&self.lease_lost, self.watch.waker().ok())
    }

    /// Something another thread calls to wake `wait_until`.
    pub fn waker(&self) -> Option<signals::Waker> {
        self.watch.waker().ok()
    }

    /// Waits until `done` says so or a terminating event comes, which it
    /// returns.
    pub fn wait_until(&mut self, done: &dyn Fn() -> bool) -> Option<i32> {
        loop {
            if done() {
                return None;
            }
            let got = self
                .watch
                .wait(Instant::now().checked_add(Duration::from_secs(1)));
            if let Some(sig) = terminating(got) {
                return Some(sig);
            }
        }
    }

    /// For a writer whose reader is behind: never, here, where backoff's
    /// streams are written with blocking writes.
    pub fn wait_writable(
        &mut self,
        _out: &crate::sys::fd::Out,
        _deadline: Option<Instant>,
    ) -> crate::output::Room {
        crate::output::Room::Ready
    }

    /// Reads the response headers of each attempt from `headers` (the
    /// file curl dumps them to), if given.
    #[must_use]
    pub fn with_headers(self, headers: Option<tempfile::NamedTempFile>) -> Self {
        RealExecutor { headers, ..self }
    }

    /// Tells `advice` when the program is not found.
    #[must_use]
    pub fn with_advice(self, not_found: Option<String>) -> Self {
        RealExecutor { not_found, ..self }
    }

    /// Sends the timed-out attempt `pid` its `--signal`; where it cannot
    /// be sent (no console), its job ends at once, as said once. Returns
    /// whether it was sent.
    fn ask_to_end(&mut self, pid: u32, job: &Job) -> bool {
        match signals::signal_group(pid, self.options.timeout_signal) {
            Ok(()) => true,
            Err(e) => {
                if !std::mem::replace(&mut self.told_no_console, true) {
                    self.options.warnings.warn(&format!(
                        "cannot send {} to the timed-out attempt ({}): its processes were ended at once",
                        crate::signal::short_name(self.options.timeout_signal),
                        describe(&e)
                    ));
                }
                job.terminate(1);
                false
            }
        }
    }

    /// Waits for the process of `child`, in `job`, to end: passes a control
    /// event sent to backoff on to its group, and at its time limit (or
    /// its idle limit, with `output`) sends it `--signal`, then terminates
    /// its job `grace` later; with `leased` (an attempt, not a hook), a
    /// lock the run lost ends it as its time limit would.
    fn wait(
        &mut self,
        child: &mut Child,
        job: &Job,
        limits: (Option<Duration>, Duration),
        output: Option<&Shared>,
        leased: bool,
    ) -> Waited {
        let (limit, grace) = limits;
        let pid = child.id();
        let mut limit_at = limit.and_then(|l| Instant::now().checked_add(l));
        let idle = self.options.idle_timeout.filter(|_| output.is_some());
        let mut kill_at: Option<Instant> = None;
        let mut waited = Waited {
            status: None,
            interrupted: None,
            timed_out: None,
        };
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                waited.status = Some(status);
                return waited;
            }
            let now = Instant::now();
            if kill_at.is_some_and(|k| now >= k) {
                job.terminate(1);
                kill_at = None;
            }
            let idle_at = match (idle, output) {
                (Some(idle), Some(shared)) if waited.timed_out.is_none() => {
                    // Output waiting for a reader who does not read counts
                    // as output, as on Unix.
                    let last = if shared.writing.load(Ordering::SeqCst) > 0 {
                        now
                    } else {
                        *shared
                            .last_output
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                    };
                    last.checked_add(idle)
                }
                _ => None,
            };
            // A lease lost ends the attempt as its time limit would.
            let lost =
                leased && self.lease_lost.load(Ordering::SeqCst) && waited.timed_out.is_none();
            let due = if lost || limit_at.is_some_and(|l| now >= l) {
                Some(Limit::Time)
            } else if idle_at.is_some_and(|i| now >= i) {
                Some(Limit::Idle)
            } else {
                None
            };
            if let Some(which) = due {
                limit_at = None;
                waited.timed_out = Some(which);
                if self.ask_to_end(pid, job) {
                    kill_at = now.checked_add(grace);
                }
            }
            let wake = [limit_at, kill_at, idle_at.filter(|_| due.is_none())]
                .into_iter()
                .flatten()
                .min();
            let handle = child.as_handle();
            let (got, _) = self.watch.wait_for(wake, &[handle]);
            if let Some(sig) = terminating(got) {
                // Passed on to the group as Ctrl-Break (Windows does not
                // deliver Ctrl-C to a process group of its own), which has
                // `grace` to end; a second event, or one that cannot be
                // sent, ends the job at once: an interrupted run leaves
                // nothing behind.
                let again = waited.interrupted.replace(sig).is_some();
                if again || signals::signal_group(pid, signal_names::BREAK).is_err() {
                    job.terminate(crate::sys::INTERRUPTED);
                } else {
                    let at = Instant::now().checked_add(grace);
                    kill_at = match (kill_at, at) {
                        (Some(k), Some(a)) => Some(k.min(a)),
                        (k, a) => k.or(a),
                    };
                }
            }
        }
    }

    /// Sets up the pipes through which the attempt's output passes, on
    /// `command`, when output rules, `--idle-timeout`, held stdout or a CI
    /// fold need it.
    fn pipes(&mut self, command: &mut Command) -> io::Result<Vec<copy::Stream>> {
        let rules = self.rules.is_some();
        let idle = self.options.idle_timeout.is_some();
        let folded = self.options.folded;
        let mut streams = Vec::new();
        if rules || idle || folded || self.held.is_some() {
            let to = match &self.held {
                Some(held) => To::Held(held.try_clone()?),
                None => To::Std(fd::Out::stdout()?),
            };
            let (from, end) = fd::pipe()?;
            command.stdout(end);
            streams.push(copy::Stream {
                from,
                to,
                name: "stdout",
                ends_lines: false,
            });
        }
        if rules || idle || folded {
            let (from, end) = fd::pipe()?;
            command.stderr(end);
            streams.push(copy::Stream {
                from,
                to: To::Std(fd::Out::stderr()?),
                name: "stderr",
                ends_lines: folded,
            });
        }
        Ok(streams)
    }

    /// Starts the attempt: its command, environment and input, in a job
    /// of its own, with its output captured where needed.
    fn spawn(&mut self, spec: &AttemptSpec<'_>) -> io::Result<(Child, Job, Option<Captured>)> {
        let mut command = Command::new(&self.command[0]);
        command
            .args(&self.command[1..])
            .env_clear()
            .envs(environment(
                spec,
                self.options.timeout,
                &self.options.carried,
            ));
        if let Some(input) = &self.stdin {
            command.stdin(input.for_attempt()?);
        }
        if let Some(held) = &mut self.held {
            spool::clear(held)?;
            self.held_lost = None;
        }
        let streams = self.pipes(&mut command)?;
        let (child, job) = process::spawn(&mut command)?;
        // The write ends belong to the command alone, so that the pipes
        // end when the command (and what it started) is done.
        drop(command);
        if streams.is_empty() {
            return Ok((child, job, None));
        }
        let shared = Shared::new();
        let mut threads = Vec::new();
        for stream in streams {
            let waker = self.watch.waker()?;
            threads.push(copy::start(
                stream,
                self.rules.clone(),
                shared.clone(),
                self.options.warnings.clone(),
                waker,
            )?);
        }
        Ok((child, job, Some(Captured { shared, threads })))
    }

    /// Waits for the threads copying the output to reach its end (they
    /// are not joined: one that a process left behind keeps reading runs
    /// on, dropping what it reads, until that process ends): not
    /// past `DRAIN` without output, nor `DRAIN_MAX` in all, nor at all
    /// after a signal or a time limit ended the attempt. Returns what the
    /// output showed, and a terminating event that came meanwhile.
    fn drain(&mut self, captured: Captured, cut: bool) -> (Observed, Option<i32>) {
        let Captured { shared, threads } = captured;
        let exited = Instant::now();
        let end = exited.checked_add(DRAIN_MAX);
        let mut got = None;
        while !cut && got.is_none() && shared.ended.load(Ordering::SeqCst) < threads.len() {
            let last = *shared
                .last_output
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            // Quiet since the exit, or since the last output after it.
            let quiet = last.max(exited).checked_add(DRAIN);
            let wake = [quiet, end].into_iter().flatten().min();
            if wake.is_some_and(|w| Instant::now() >= w) {
                break;
            }
            got = terminating(self.watch.wait_for(wake, &[]).0);
        }
        // What comes later (from processes the command left behind) is
        // read and dropped, until they end.
        shared.cut.store(true, Ordering::SeqCst);
        if let Some(e) = shared
            .lost
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            self.held_lost.get_or_insert(e);
        }
        let seen = std::mem::take(&mut *shared.seen.lock().unwrap_or_else(PoisonError::into_inner));
        (seen, got)
    }
}

/// The first of `got` that ends a run, if any.
fn terminating(got: Vec<i32>) -> Option<i32> {
    got.into_iter().find(|&s| is_terminating(s))
}

/// How an attempt that was waited for ended.
fn ended(waited: &Waited, seen: Observed) -> Ended {
    let st = Status::Code(waited.status.map_or(u32::MAX, process::exit_code));
    let outcome = match (waited.timed_out, st) {
        (Some(limit), st) => Outcome::TimedOut(st, limit),
        (None, Status::Code(c)) => Outcome::Exited(c),
        (None, Status::Signal(s)) => Outcome::Signaled(s),
    };
    match waited.interrupted {
        Some(sig) => Ended::Interrupted(sig, Some(outcome)),
        None => Ended::Done {
            outcome,
            seen,
            spawn_error: None,
        },
    }
}

impl Wait for RealExecutor {
    fn wait_ready(&mut self, pipe: Option<&io::PipeReader>, deadline: Instant) -> run::Waited {
        // An anonymous pipe cannot be waited for beside the console's
        // events: both are looked at again, less often as the wait lasts.
        let mut step = Duration::from_millis(1);
        loop {
            if let Some(sig) = terminating(self.watch.pending()) {
                return run::Waited::Signal(sig);
            }
            if pipe.is_some_and(fd::is_readable) {
                return run::Waited::Ready;
            }
            let now = Instant::now();
            if now >= deadline {
                return run::Waited::TimedOut;
            }
            let got = self.watch.wait(now.checked_add(step.min(deadline - now)));
            if let Some(sig) = terminating(got) {
                return run::Waited::Signal(sig);
            }
            step = (step * 2).min(Duration::from_millis(50));
        }
    }
}

impl Executor for RealExecutor {
    fn attempt(&mut self, spec: &AttemptSpec<'_>) -> Ended {
        if let Some(sig) = terminating(self.watch.pending()) {
            return Ended::Interrupted(sig, None);
        }
        let (mut child, job, captured) = match self.spawn(spec) {
            Ok(started) => started,
            Err(e) => {
                let outcome = match e.raw_os_error() {
                    Some(code) if process::is_resource_error(code) => Outcome::Unstarted(code),
                    _ if e.kind() == io::ErrorKind::NotFound => Outcome::NotFound,
                    _ => Outcome::CannotRun,
                };
                let why = describe(&e);
                let why = match (&self.not_found, outcome) {
                    (Some(advice), Outcome::NotFound) => format!("{why}; {advice}"),
                    _ => why,
                };
                return Ended::Done {
                    outcome,
                    seen: Observed::default(),
                    spawn_error: Some(why),
                };
            }
        };
        let limits = (spec.limit, spec.grace);
        let mut waited = self.wait(
            &mut child,
            &job,
            limits,
            captured.as_ref().map(|c| &c.shared),
            true,
        );
        let cut = waited.interrupted.is_some() || waited.timed_out.is_some();
        if cut {
            job.terminate(1);
        }
        let (mut seen, got) = match captured {
            Some(captured) => self.drain(captured, cut),
            None => (Observed::default(), None),
        };
        waited.interrupted = waited.interrupted.or(got);
        if let (Some(file), Some(rules)) = (&self.headers, &self.rules) {
            scan::headers_file(file, rules, &mut seen);
        }
        seen.hint = scan::hint(&seen, SystemTime::now());
        if !cut && job.active() > 0 {
            // Processes the command started still run: ended before a
            // retry (or with backoff, when the job is dropped).
            self.lingering = Some(job);
        }
        ended(&waited, seen)
    }

    fn hook(&mut self, hook: &HookRun<'_>) -> Ended {
        let mut command = Command::new("cmd.exe");
        // As cmd.exe takes a command line: `/s` strips the outer quotes
        // alone, so the hook's own quotes reach cmd as written; `/d` runs
        // no AutoRun command of the registry first.
        command
            .raw_arg(format!("/d /s /c \"{}\"", hook.command))
            .env_clear()
            .envs(hook_environment(&hook.env, &self.options.carried))
            .stdin(Stdio::null());
        if let Ok(err) = io::stderr().as_handle().try_clone_to_owned() {
            command.stdout(err);
        }
        let (mut child, job) = match process::spawn(&mut command) {
            Ok(started) => started,
            Err(e) => {
                return Ended::Done {
                    outcome: Outcome::CannotRun,
                    seen: Observed::default(),
                    spawn_error: Some(describe(&e)),
                };
            }
        };
        // A hook is waited for as an attempt is, with no output to watch
        // and its own limits.
        let own = self.options.idle_timeout.take();
        // A hook that runs under the lock ends when it is lost; one that
        // closes a run which lost it runs to its end.
        let waited = self.wait(
            &mut child,
            &job,
            (Some(hook.limit), hook.grace),
            None,
            hook.leased,
        );
        self.options.idle_timeout = own;
        // Nothing of a hook outlives it: its job ends with it.
        job.terminate(1);
        ended(&waited, Observed::default())
    }

    fn before_retry(&mut self) {
        if let Some(job) = self.lingering.take() {
            job.terminate(1);
        }
    }

    fn pause(&mut self, delay: Duration) -> Option<i32> {
        let deadline = Instant::now().checked_add(delay);
        loop {
            let got = if self.lease_lost.load(Ordering::SeqCst) {
                self.watch.pending()
            } else {
                self.watch.wait(deadline)
            };
            if let Some(sig) = terminating(got.clone()) {
                return Some(sig);
            }
            if got.is_empty() || self.lease_lost.load(Ordering::SeqCst) {
                return None;
            }
        }
    }

    fn now(&self) -> Instant {
        Instant::now()
    }

    fn finish(&mut self, deadline: Option<Instant>) -> Released {
        let Some(held) = self.held.as_mut() else {
            return Released::All;
        };
        if let Some(e) = self.held_lost.take() {
            return Released::Lost(format!(
                "cannot hold all of the final attempt's stdout in the temporary directory '{}': {}; none of it was written",
                std::env::temp_dir().display(),
                describe(&e)
            ));
        }
        spool::write_out(held, &mut self.watch, deadline)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Warnings;

    fn executor(command: &[&str]) -> RealExecutor {
        let options = Options {
            foreground: false,
            timeout_signal: signal_names::BREAK,
            kill_after: Duration::from_secs(5),
            hold_stdout: false,
            timeout: None,
            idle_timeout: None,
            folded: false,
            warnings: Warnings::default(),
            carried: crate::exec::Carried::default(),
        };
        let command = command.iter().map(OsString::from).collect();
        let watch = SignalWatch::install().expect("a console handler");
        RealExecutor::new(command, options, None, None, watch).expect("an executor")
    }

    fn spec(limit: Option<Duration>) -> AttemptSpec<'static> {
        AttemptSpec {
            run_id: "r",
            lock_token: None,
            number: 1,
            max_attempts: Some(1),
            last: None,
            limit,
            deadline: None,
            grace: Duration::from_millis(500),
        }
    }

    // One test, not several: the console's events are the process's.
    #[test]
    fn control_events_end_a_delay_and_an_attempt_and_a_time_limit_ends_its_job() {
        // A minute-long command (ping waits a second between echoes).
        let long = ["cmd", "/c", "ping -n 60 127.0.0.1 > NUL"];
        let mut ex = executor(&long);

        // A delay ends at once, and says which event.
        signals::raise(signal_names::INT);
        let started = Instant::now();
        assert_eq!(ex.pause(Duration::from_mins(1)), Some(signal_names::INT));
        assert!(started.elapsed() < Duration::from_secs(20));

        // An attempt running (or about to start) ends with the event, its
        // job with it.
        std::thread::spawn(|| {
            std::thread::sleep(Duration::from_millis(300));
            signals::raise(signal_names::CLOSE);
        });
        let started = Instant::now();
        let ended = ex.attempt(&spec(None));
        assert!(
            matches!(ended, Ended::Interrupted(sig, _) if sig == signal_names::CLOSE),
            "{ended:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(20));

        // A log-off is no reason to end anything.
        assert!(!is_terminating(signal_names::LOGOFF));

        // A time limit ends the attempt and everything in its job.
        let started = Instant::now();
        let ended = ex.attempt(&spec(Some(Duration::from_millis(300))));
        assert!(
            matches!(
                ended,
                Ended::Done {
                    outcome: Outcome::TimedOut(_, Limit::Time),
                    ..
                }
            ),
            "{ended:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(20));
    }
}
