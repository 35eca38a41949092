//! The Windows executor: each attempt and each hook in a job object and a
//! console process group of their own (`sys::process::spawn`), waited for
//! with the console's control events and the time limits in one wait. A
//! timed-out attempt gets `CTRL_BREAK` (or `--signal CTRL_C`), then its
//! job is terminated after `--kill-after`; a control event sent to
//! backoff is passed on to the attempt's group, and its whole job ends.
//!
//! Output rules, `--idle-timeout`, `--hold-stdout` and `--replay-stdin`
//! need the command's output or input to pass through backoff, which this
//! executor does not do yet: `unavailable` names them, and backoff refuses
//! them before the run.

use std::ffi::OsString;
use std::io;
use std::os::windows::io::AsHandle;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::classify::{Limit, Observed, Outcome, Status};
use crate::exec::env::{environment, hook_environment};
use crate::exec::scan::OutputRules;
use crate::exec::{Options, describe};
use crate::run::{self, AttemptSpec, Ended, Executor, HookRun, Released, Wait};
use crate::signal::is_terminating;
use crate::sys::job::Job;
use crate::sys::signals::{self, SignalWatch};
use crate::sys::{fd, process};

/// `--replay-stdin`'s input; never made on Windows yet (`unavailable`).
pub struct Replayed(());

/// `--replay-stdin` is not available on Windows yet.
///
/// # Errors
///
/// Always.
pub fn spool_stdin() -> io::Result<Replayed> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "--replay-stdin is not available on Windows yet",
    ))
}

/// What the run asks for that this executor cannot do yet, named as the
/// user gave it.
pub fn unavailable(options: &Options, rules: bool, replay: bool) -> Option<&'static str> {
    if rules {
        Some(
            "output rules (--until-output, --retry-if-output, --stop-if-output, the curl and wget presets)",
        )
    } else if options.idle_timeout.is_some() {
        Some("--idle-timeout")
    } else if options.hold_stdout {
        Some("--hold-stdout")
    } else if replay {
        Some("--replay-stdin")
    } else {
        None
    }
}

/// Runs attempts of one command for real.
pub struct RealExecutor {
    command: Vec<OsString>,
    options: Options,
    watch: SignalWatch,
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

impl RealExecutor {
    /// An executor for `command`.
    ///
    /// # Errors
    ///
    /// When the run asks for what this executor cannot do yet
    /// (`unavailable`).
    #[allow(clippy::needless_pass_by_value)] // The Unix executor's signature.
    pub fn new(
        command: Vec<OsString>,
        options: Options,
        rules: Option<OutputRules>,
        stdin: Option<Replayed>,
        watch: SignalWatch,
    ) -> io::Result<Self> {
        if let Some(what) = unavailable(&options, rules.is_some(), stdin.is_some()) {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("{what} is not available on Windows yet"),
            ));
        }
        Ok(RealExecutor {
            command,
            options,
            watch,
            not_found: None,
            lease_lost: Arc::new(AtomicBool::new(false)),
            lingering: None,
            told_no_console: false,
        })
    }

    /// What a lock's store calls, from any thread, when the run's lease on
    /// the lock is lost.
    pub fn alarm(&self) -> crate::budget::Alarm {
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
            if let Some(sig) = got.into_iter().find(|&s| is_terminating(s)) {
                return Some(sig);
            }
        }
    }

    /// The curl preset's header file is read with output rules only,
    /// which this executor refuses.
    #[must_use]
    pub fn with_headers(self, _headers: Option<tempfile::NamedTempFile>) -> Self {
        self
    }

    /// Tells `advice` when the program is not found.
    #[must_use]
    pub fn with_advice(self, not_found: Option<String>) -> Self {
        RealExecutor { not_found, ..self }
    }

    /// Waits for the process of `child`, in `job`, to end: passes a control
    /// event sent to backoff on to its group, and at its time limit sends
    /// it `--signal`, then terminates its job `grace` later.
    fn wait(
        &mut self,
        child: &mut Child,
        job: &Job,
        limit: Option<Duration>,
        grace: Duration,
    ) -> Waited {
        let pid = child.id();
        let mut limit_at = limit.and_then(|l| Instant::now().checked_add(l));
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
            if limit_at.is_some_and(|l| now >= l) {
                limit_at = None;
                waited.timed_out = Some(Limit::Time);
                if let Err(e) = signals::signal_group(pid, self.options.timeout_signal) {
                    // No console to send it through (a service, a
                    // detached run): the job ends at once, as said once.
                    if !std::mem::replace(&mut self.told_no_console, true) {
                        self.options.warnings.warn(&format!(
                            "cannot send {} to the timed-out attempt ({}): its processes were ended at once",
                            crate::signal::short_name(self.options.timeout_signal),
                            describe(&e)
                        ));
                    }
                    job.terminate(1);
                } else {
                    kill_at = now.checked_add(grace);
                }
            }
            let wake = [limit_at, kill_at].into_iter().flatten().min();
            let handle = child.as_handle();
            let (got, _) = self.watch.wait_for(wake, &[handle]);
            if let Some(sig) = got.into_iter().find(|&s| is_terminating(s)) {
                // Passed on to the group (Ctrl-C reaches it from the
                // console too, where there is one), then the job ends: an
                // interrupted run leaves nothing behind.
                waited.interrupted = Some(sig);
                let _ = signals::signal_group(pid, signals_to_send(sig));
                job.terminate(crate::sys::INTERRUPTED);
                waited.status = child.wait().ok();
                return waited;
            }
        }
    }
}

/// The control event a console process group can be sent in place of
/// `sig`: Ctrl-C stays Ctrl-C, every other one is Ctrl-Break.
fn signals_to_send(sig: i32) -> i32 {
    if sig == crate::signal::INT {
        sig
    } else {
        crate::sys::signal_names::BREAK
    }
}

/// How an attempt that was waited for ended.
fn ended(waited: &Waited) -> Ended {
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
            seen: Observed::default(),
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
            if let Some(sig) = self
                .watch
                .pending()
                .into_iter()
                .find(|&s| is_terminating(s))
            {
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
            if let Some(sig) = got.into_iter().find(|&s| is_terminating(s)) {
                return run::Waited::Signal(sig);
            }
            step = (step * 2).min(Duration::from_millis(50));
        }
    }
}

impl Executor for RealExecutor {
    fn attempt(&mut self, spec: &AttemptSpec<'_>) -> Ended {
        if let Some(sig) = self
            .watch
            .pending()
            .into_iter()
            .find(|&s| is_terminating(s))
        {
            return Ended::Interrupted(sig, None);
        }
        let mut command = Command::new(&self.command[0]);
        command
            .args(&self.command[1..])
            .env_clear()
            .envs(environment(
                spec,
                self.options.timeout,
                &self.options.carried,
            ));
        let (mut child, job) = match process::spawn(&mut command) {
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
        let waited = self.wait(&mut child, &job, spec.limit, spec.grace);
        if waited.interrupted.is_some() || waited.timed_out.is_some() {
            job.terminate(1);
        } else if job.active() > 0 {
            // Processes the command started still run: ended before a
            // retry (or with backoff, when the job is dropped).
            self.lingering = Some(job);
        }
        ended(&waited)
    }

    fn hook(&mut self, hook: &HookRun<'_>) -> Ended {
        let mut command = Command::new("cmd.exe");
        command
            .arg("/C")
            .arg(hook.command)
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
        let waited = self.wait(&mut child, &job, Some(hook.limit), hook.grace);
        // Nothing of a hook outlives it: its job ends with it.
        job.terminate(1);
        ended(&waited)
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
            if let Some(sig) = got.iter().copied().find(|&s| is_terminating(s)) {
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

    fn finish(&mut self, _deadline: Option<Instant>) -> Released {
        Released::All
    }
}
