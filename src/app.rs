//! The wiring: command line → configuration → run → reports and exit status.
//! It makes no decision of its own: each step is done by the module that
//! owns it, and errors that cross this layer carry their context (anyhow)
//! until they become one line and exit 125.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use clap::{CommandFactory, FromArgMatches};

use crate::cli::{self, Cli, Format, SimFormat, Sub};
use crate::config::{self, Given, RunConfig, UsageError};
use crate::event::{Report, Reports};
use crate::exec::{self, RealExecutor};
use crate::exit::Exit;
use crate::fleet::breaker::Breaker;
use crate::fleet::bucket::{Bucket, show_tokens};
use crate::output::{self, Capture};
use crate::ping::Pings;
use crate::report::json::JsonReport;
use crate::report::run_report::Recorder;
use crate::report::text::TextReport;
use crate::report::{
    self, Labels, LogFormat, Std, Verbosity, Warnings, atomic, ci, metrics, say, state,
};
use crate::run::Executor as _;
use crate::simulate::{self, svg, table};
use crate::splay;
use crate::store::{Breakers, Refill, Throttles};
use crate::sys::signals::SignalWatch;
use crate::{run, schedule, trace};

/// Turns a clap error into backoff's one-line form (or help/version on
/// stdout), with the status it calls for.
fn clap_error(e: &clap::Error, args: &[OsString]) -> Exit {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            return match print(e.render().to_string().as_bytes()) {
                Ok(()) => Exit::SUCCESS,
                Err(e) => {
                    say(&format!("{e:#}"));
                    Exit::USAGE
                }
            };
        }
        _ => {}
    }
    // The usage line of the (sub)command the error is about.
    let usage = || {
        let text = e.render().to_string();
        text.lines()
            .find_map(|l| l.trim().strip_prefix("Usage: ").map(str::to_owned))
            .unwrap_or_else(|| "backoff --help".to_owned())
    };
    let ctx = |k| match e.get(k) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    // clap's "did you mean": a flag, a value or a subcommand like the one
    // given.
    let similar = match e.get(ContextKind::SuggestedArg) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => match e.get(ContextKind::SuggestedSubcommand) {
            Some(ContextValue::Strings(s)) => s.first().cloned(),
            _ => ctx(ContextKind::SuggestedValue),
        },
    }
    .map(|s| format!("; did you mean '{s}'?"))
    .unwrap_or_default();
    let message = match (
        e.kind(),
        ctx(ContextKind::InvalidArg),
        ctx(ContextKind::InvalidValue),
    ) {
        (ErrorKind::InvalidValue, Some(arg), Some(value)) if value.is_empty() => {
            let flag = arg.split(' ').next().unwrap_or(&arg).to_owned();
            format!("{flag} needs a value")
        }
        (ErrorKind::ValueValidation | ErrorKind::InvalidValue, Some(arg), Some(value)) => {
            let flag = arg.split(' ').next().unwrap_or(&arg).to_owned();
            let why = match e.kind() {
                ErrorKind::InvalidValue => match e.get(ContextKind::ValidValue) {
                    Some(ContextValue::Strings(v)) => {
                        format!("expected one of {}{similar}", v.join(", "))
                    }
                    _ => "not a valid value".to_owned(),
                },
                _ => std::error::Error::source(e)
                    .map_or_else(|| "not a valid value".to_owned(), ToString::to_string),
            };
            let from_environment = cli::value_from_environment(e, args);
            let source = cli::flag_source(&flag, |_| from_environment);
            format!(
                "invalid value '{}' for {source}: {why}",
                cli::quotable(&value)
            )
        }
        (ErrorKind::MissingRequiredArgument, _, _) => match e.get(ContextKind::InvalidArg) {
            Some(ContextValue::Strings(missing))
                if !missing.iter().any(|m| m.contains("COMMAND")) =>
            {
                format!("missing {} (usage: {})", missing.join(" "), usage())
            }
            _ => "no command given (usage: backoff [OPTIONS] [--] COMMAND [ARGS]...)".to_owned(),
        },
        (ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand, _, _) => {
            format!("a subcommand is missing (usage: {})", usage())
        }
        _ => {
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("bad usage");
            format!(
                "{}{similar} (see 'backoff --help')",
                first.trim_start_matches("error: ")
            )
        }
    };
    say(&message);
    Exit::USAGE
}

/// Parses the command line, runs what it asks for, and returns how to exit.
pub fn main_with_args(args: &[OsString]) -> Exit {
    let (cli, given, unknown) = match parse(args.to_vec()) {
        Ok(parsed) => parsed,
        Err(e) => return clap_error(&e, args),
    };
    if let Some(kind) = cli.generate {
        return generate_command(kind, &cli.command, &given).unwrap_or_else(|e| {
            say(&format!("{e:#}"));
            Exit::USAGE
        });
    }
    // A run tells of mistyped variables in its log format, once it is
    // known; a subcommand, now.
    if cli.subcommand.is_some() {
        for line in &unknown {
            Warnings::default().warn(line);
        }
    }
    let result = match cli.subcommand {
        Some(Sub::Schedule(ref args)) => schedule_command(args, &given),
        Some(Sub::Budget(ref command)) => budget_command(command, &given),
        Some(Sub::Breaker(ref command)) => breaker_command(command, &given),
        Some(Sub::Throttle(ref command)) => throttle_command(command, &given),
        Some(Sub::Lock(ref command)) => lock_command(command, &given),
        Some(Sub::Once(ref command)) => once_command(command, &given),
        Some(Sub::Simulate(ref args)) => simulate_command(args, &given),
        None => {
            // backoff's own words: those before the command (and its `--`).
            let before = args.len().saturating_sub(cli.command.len());
            let mut options = args.get(1..before).unwrap_or_default();
            let mut separated = false;
            if let Some((last, rest)) = options.split_last()
                && last == "--"
            {
                (options, separated) = (rest, true);
            }
            match cli::advice::split_duration(options, separated, &cli.command) {
                Some(why) => Err(UsageError(why).into()),
                None => run_command(cli, &given, options, &unknown),
            }
        }
    };
    result.unwrap_or_else(|e| {
        say(&format!("{e:#}"));
        Exit::USAGE
    })
}

/// Parses the command line, noting which flags the command line itself
/// gave, for the checks that need to know, and which ones the environment
/// gave, for the errors that name them; and what to tell of `BACKOFF_*`
/// variables of the environment that backoff does not know.
fn parse(args: Vec<OsString>) -> Result<(Cli, Given, Vec<String>), clap::Error> {
    let (mut command, outer_timeout) = timeout_from_outer(Cli::command());
    cli::values::parsing_afresh();
    let mut matches = command.try_get_matches_from_mut(args)?;
    let set: Vec<&str> = exec::variables_set().collect();
    let unknown = cli::advice::unknown_variables(
        &mut command,
        &matches,
        std::env::vars_os().map(|(name, _)| name),
        &set,
    );
    let given = match matches.subcommand() {
        _ if matches.value_source("generate") == Some(clap::parser::ValueSource::CommandLine) => {
            Given::generate(&matches)
        }
        // A --timeout read from BACKOFF_TIMEOUT's seconds came from the
        // environment, as errors about it say.
        None if outer_timeout.is_some()
            && matches.value_source("timeout") == Some(clap::parser::ValueSource::DefaultValue) =>
        {
            Given::run(&matches)
                .with_environment("timeout", outer_timeout.as_deref().unwrap_or_default())
        }
        None => Given::run(&matches),
        Some(("schedule", sub)) => Given::policy(sub),
        Some(_) => Given::other(&matches),
    };
    Ok((Cli::from_arg_matches_mut(&mut matches)?, given, unknown))
}

/// backoff tells the command its `--timeout` as `BACKOFF_TIMEOUT` in
/// seconds (`30`, `2.5`), which a backoff that the command runs reads as its
/// own `--timeout`: there, a bare number is seconds. Elsewhere a duration
/// needs its unit. Returns the command, and the variable's value when it
/// reads it so.
fn timeout_from_outer(command: clap::Command) -> (clap::Command, Option<String>) {
    let Some(seconds) = std::env::var("BACKOFF_TIMEOUT")
        .ok()
        .filter(|v| bare_seconds(v))
    else {
        return (command, None);
    };
    let command = command.mut_arg("timeout", |a| {
        a.env(None).default_value(format!("{seconds}s"))
    });
    (command, Some(seconds))
}

/// Whether `v` is a plain number of seconds (`30`, `2.5`) that makes a
/// valid duration.
fn bare_seconds(v: &str) -> bool {
    let (whole, fraction) = v.split_once('.').unwrap_or((v, "0"));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    digits(whole)
        && digits(fraction)
        && fraction.len() <= 9
        && cli::values::duration(&format!("{v}s")).is_ok()
}

/// Runs the command with retries; `options` are backoff's own words of the
/// command line, for advice that repeats them; `unknown` tells of mistyped
/// variables (not with `-q`). Once the configuration is known, what
/// backoff has to say, its errors included, is in the log format (a
/// `warning` event in json).
fn run_command(
    cli: Cli,
    given: &Given,
    options: &[OsString],
    unknown: &[String],
) -> anyhow::Result<Exit> {
    let cfg = config::run(cli, given)?;
    let mut capture = capture(&cfg);
    if cfg.verbosity != Verbosity::Quiet {
        for line in unknown {
            cfg.warnings.warn(line);
        }
    }
    let exit = run_configured(&cfg, options, capture.as_mut()).unwrap_or_else(|e| {
        cfg.warnings.warn(&format!("{e:#}"));
        Exit::USAGE
    });
    // Left to write only where the run could not be made: no deadline,
    // no signal to heed then.
    if let Some(capture) = &mut capture
        && let Some(sig) = release_output(&cfg, capture, (exit, false), &mut output::patiently)
    {
        return Ok(Exit::Signal(sig));
    }
    Ok(exit)
}

/// The run's output passes through backoff from now on: kept, with
/// `--output on-failure`; passed on as it comes, with its end kept for the
/// check-in that ends the run, with `--ping` (not at a terminal: a person
/// who watches keeps the command's own terminal, and the check-in carries
/// the summary line alone; nor with `--ping-body-limit 0`, which sends
/// that line alone). When that cannot be, it is passed on as it comes, and
/// said.
fn capture(cfg: &RunConfig) -> Option<Capture> {
    let at_terminal = std::io::stdout().is_terminal() || std::io::stderr().is_terminal();
    if cfg.keep_output.is_none() && (!cfg.pings.any() || at_terminal || cfg.ping_body_limit == 0) {
        return None;
    }
    Capture::start(cfg.keep_output, cfg.ping_body_limit)
        .map_err(|e| {
            let why = exec::describe(&e);
            cfg.warnings.warn(&match cfg.keep_output {
                Some(_) => format!(
                    "cannot keep the output for --output on-failure: {why}; it is passed on as it comes"
                ),
                None => format!(
                    "cannot read the output for the check-in ({why}): it carries the summary line alone"
                ),
            });
        })
        .ok()
}

/// Ends the capture of the output: backoff's stdout and stderr are its
/// own again, and the output kept is written out unless the run succeeded
/// or is a failure tolerated (`--alert-after`: `tolerated`), however late
/// its reader takes it: `room` waits while a reader is
/// behind, and says when to stop. What could not be written is said once.
/// Returns the terminating signal that ended the writing, if one did.
/// Once done, doing it again does nothing.
fn release_output(
    cfg: &RunConfig,
    capture: &mut Capture,
    (exit, tolerated): (Exit, bool),
    room: &mut dyn FnMut(&crate::sys::fd::Out) -> output::Room,
) -> Option<i32> {
    if exit == Exit::SUCCESS || tolerated {
        capture.discard();
        return None;
    }
    let delivery = capture.write_out(&|message| cfg.warnings.line(message), room);
    delivery.tell(&cfg.warnings);
    delivery.signal()
}

/// What the preset adds before the command's own arguments, and the curl
/// preset's own file for the response headers, when curl shows none: it
/// is added to curl's arguments, and read after each attempt.
fn preset_additions(
    cfg: &RunConfig,
) -> anyhow::Result<(Option<tempfile::NamedTempFile>, Vec<OsString>)> {
    let headers = if cfg.dump_headers {
        Some(
            tempfile::Builder::new()
                .prefix("backoff-headers-")
                .tempfile()
                .context("cannot make a file for curl's headers")?,
        )
    } else {
        None
    };
    let mut added = cfg.preset_arguments.clone();
    if let Some(file) = &headers {
        added.extend([
            OsString::from("--dump-header"),
            file.path().as_os_str().to_owned(),
        ]);
    }
    Ok((headers, added))
}

/// Runs the command as `cfg` says.
fn run_configured(
    cfg: &RunConfig,
    options: &[OsString],
    capture: Option<&mut Capture>,
) -> anyhow::Result<Exit> {
    // From here on every line backoff writes carries the time and the name.
    let labels = Labels {
        clock: cfg
            .timestamps
            .then_some(SystemTime::now as fn() -> SystemTime),
        name: cfg.name.clone(),
    };
    // A protection that cannot apply is said whatever the output mode.
    for notice in &cfg.notices {
        cfg.warnings.alert(notice);
    }
    // Before the signal handlers: until then Ctrl-C ends a long read at once.
    let stdin = if cfg.replay_stdin {
        Some(exec::spool_stdin().with_context(|| {
            format!(
                "cannot read stdin into the temporary directory '{}'",
                std::env::temp_dir().display()
            )
        })?)
    } else {
        None
    };
    let watch = SignalWatch::install().context("cannot watch signals")?;
    let misplaced = cli::advice::misplaced_option(&cfg.command);
    let label = config::run_label(cfg.name.as_ref(), &cfg.command);
    let mut log = log_report(cfg, labels, label.clone());
    let run_id = uuid::Builder::from_random_bytes(rand::random())
        .into_uuid()
        .to_string();
    let mut recorder = Recorder::new(label, run_id.clone(), SystemTime::now);
    let (headers, added) = preset_additions(cfg)?;
    let mut command = cfg.command.clone();
    command.splice(1..1, added.iter().cloned());
    let plan = plan(cfg, &run_id, &added, misplaced.as_deref());
    let carried = exec::Carried::default();
    let mut traces = traces(cfg, &carried);
    let mut executor = RealExecutor::new(
        command,
        exec::Options {
            foreground: cfg.foreground,
            timeout_signal: cfg.limits.signal,
            kill_after: cfg.limits.kill_after,
            hold_stdout: cfg.hold_stdout,
            timeout: cfg.limits.timeout,
            idle_timeout: cfg.limits.idle_timeout,
            // A terminal stays the command's (its colours, its progress
            // bars): a person reads it, not a CI runner that needs the
            // fold's marker to start a line.
            folded: matches!(cfg.log_format, LogFormat::Github | LogFormat::Gitlab)
                && cfg.verbosity != crate::report::Verbosity::Quiet
                && !std::io::stderr().is_terminal(),
            warnings: cfg.warnings.clone(),
            carried: carried.clone(),
        },
        cfg.output_rules.clone(),
        stdin,
        watch,
    )
    .context("cannot hold stdout")?
    .with_headers(headers)
    .with_advice(cli::advice::not_found(options, &cfg.command));
    // A lease not renewed in time, or a lock file removed, ends the
    // attempt and the run.
    if let Some(lock) = cfg.lock.as_ref() {
        lock.backend().alarm(executor.alarm());
    }
    let exit_by = exit_by(cfg);
    let mut pings = cfg.pings.any().then(|| {
        Pings::new(
            cfg.pings.clone(),
            cfg.ping_timeout,
            cfg.ping_body_limit,
            &run_id,
            capture.as_ref().map(|c| c.marker()),
            cfg.warnings.clone(),
            exit_by,
        )
    });
    let mut reports: Vec<&mut dyn Report> = vec![log.as_mut(), &mut recorder];
    if let Some(p) = pings.as_mut() {
        reports.push(p);
    }
    if let Some(t) = traces.as_mut() {
        reports.push(t);
    }
    let mut exit = run::run(&plan, &mut executor, &mut Reports(reports));
    // The run's files are written to backoff's own stdout and stderr. The
    // kept output is written by the time backoff must have exited; a
    // signal ends the writing, and backoff dies by it.
    if let Some(capture) = capture
        && let Some(sig) = release_output(cfg, capture, (exit, recorder.tolerated()), &mut |out| {
            executor.wait_writable(out, exit_by)
        })
    {
        exit = Exit::Signal(sig);
    }
    let ends = Ends::of(cfg, &recorder, exit, exit_by);
    // A signal that ended the wait for what goes out at the end ends
    // backoff as any signal does: the files say so, without waiting for a
    // lock, and backoff dies by it.
    if let Some(sig) = send_ends(pings, traces, ends, &mut executor, &cfg.warnings) {
        let cut = Exit::Signal(sig);
        write_summaries(cfg, &recorder, cut, exit_by, &mut |_| Some(sig));
        return Ok(cut);
    }
    // A signal that ended the wait for the metrics file's lock ends
    // backoff as any signal does: it dies by it.
    match write_summaries(cfg, &recorder, exit, exit_by, &mut |d| executor.pause(d)) {
        Some(sig) => Ok(Exit::Signal(sig)),
        None => Ok(exit),
    }
}

/// Marks a job done when dropped, and wakes the wait for the jobs.
struct Done(
    std::sync::Arc<std::sync::atomic::AtomicBool>,
    Option<crate::sys::signals::Waker>,
);

impl Drop for Done {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(w) = &self.1 {
            w.wake();
        }
    }
}

/// Something sent at the end of the run, in a thread of its own.
type Job = Box<dyn FnOnce() + Send>;

/// The metrics push (`--metrics-push`), given up at its next pause when
/// its `Cancel` is.
type Push = Box<dyn FnOnce(&crate::http::Cancel) + Send>;

/// How a run ended, for what goes out at its end.
struct Ends {
    exit: Exit,
    attempts: u64,
    reason: String,
    /// When backoff must have exited (`exit_by`).
    by: Option<Instant>,
    /// The metrics push, with `--metrics-push`.
    push: Option<Push>,
}

impl Ends {
    /// The end of the run `recorder` recorded, which exits with `exit`
    /// and must have exited by `by`.
    fn of(cfg: &RunConfig, recorder: &Recorder, exit: Exit, by: Option<Instant>) -> Ends {
        let push = cfg.metrics_push.clone().map(|push| -> Push {
            let body = metrics::pushed(recorder, exit).into_bytes();
            let job = recorder.name().to_owned();
            let success = recorder.succeeded();
            let warnings = cfg.warnings.clone();
            Box::new(move |cancel| push.send(&job, &body, success, by, cancel, &warnings))
        });
        Ends {
            exit,
            attempts: recorder.attempts(),
            reason: recorder.reason().to_owned(),
            by,
            push,
        }
    }
}

/// Sends what goes out when the run ends, the end check-in, the spans and
/// the metrics push, each in a thread of its own and bounded by its own
/// timeout and by `ends.by`, while backoff waits for them, or for a
/// terminating signal, which ends the wait: that signal is returned (the
/// sending is given up, each one still under way said so on one line, its
/// pauses between tries cut short, and backoff dies by it).
fn send_ends(
    pings: Option<Pings>,
    traces: Option<trace::Traces>,
    ends: Ends,
    executor: &mut RealExecutor,
    warnings: &Warnings,
) -> Option<i32> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let Ends {
        exit,
        attempts,
        reason,
        by,
        push,
    } = ends;
    let cancel = crate::http::Cancel::default();
    let mut jobs: Vec<(&str, Job)> = Vec::new();
    if let Some(mut p) = pings {
        let reason = reason.clone();
        let cancel = cancel.clone();
        jobs.push((
            "the end check-in",
            Box::new(move || p.finish(exit, attempts, &reason, by, &cancel)),
        ));
    }
    if let Some(t) = traces {
        let cancel = cancel.clone();
        jobs.push((
            "the trace",
            Box::new(move || {
                let end = trace::spans::RunEnd {
                    exit_code: exit.shell_code(),
                    attempts,
                    reason: &reason,
                    success: exit == Exit::SUCCESS,
                };
                t.finish(end, by, &cancel);
            }),
        ));
    }
    if let Some(push) = push {
        let cancel = cancel.clone();
        jobs.push(("the metrics push", Box::new(move || push(&cancel))));
    }
    let mut running = Vec::new();
    for (what, job) in jobs {
        let done = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&done);
        let waker = executor.waker();
        let spawned = std::thread::Builder::new()
            .name("at-end".into())
            .spawn(move || {
                // Marked done however the job ends, a panic included.
                let _done = Done(flag, waker);
                job();
            });
        match spawned {
            Ok(_) => running.push((what, done)),
            Err(e) => warnings.warn(&format!("{what} was not sent: {e}")),
        }
    }
    let sig = executor.wait_until(&|| running.iter().all(|(_, d)| d.load(Ordering::SeqCst)))?;
    cancel.cancel();
    for (what, done) in running {
        if !done.load(Ordering::SeqCst) {
            warnings.warn(&format!(
                "{what} was given up: backoff received {}",
                crate::signal::full_name(sig)
            ));
        }
    }
    Some(sig)
}

/// The run's traces, when the environment asks for them (`trace`):
/// `carried` hands their context on to each process started.
fn traces(cfg: &RunConfig, carried: &exec::Carried) -> Option<trace::Traces> {
    let carried = carried.clone();
    trace::Traces::from_env(
        // A value that is not UTF-8 is one that cannot be read: it is
        // said so, as a malformed one is.
        &|name| {
            let value = std::env::var_os(name)?;
            match value.into_string() {
                Ok(v) => Some(v),
                Err(_) if name == trace::TRACEPARENT => Some("\u{fffd}".into()),
                // Any other: as if unset (a TRACESTATE is then not
                // exported, and still passed on as it is).
                Err(_) => None,
            }
        },
        trace::RunInfo {
            name: config::job_name(cfg.name.as_ref(), &cfg.command),
            attributes: trace::policy_attributes(&cfg.policy.policy, cfg.policy.max_retries),
        },
        Box::new(move |name, value| carried.set(name, value)),
        &cfg.warnings,
    )
}

/// What the run needs to know, from `cfg`: the run's id, the words the
/// preset added and an option of backoff's own misplaced after the command.
fn plan<'a>(
    cfg: &'a RunConfig,
    run_id: &'a str,
    added: &'a [OsString],
    misplaced: Option<&'a str>,
) -> run::Plan<'a> {
    run::Plan {
        run_id,
        splay: splay_of(cfg),
        policy: cfg.policy.policy.clone(),
        max_retries: cfg.policy.max_retries,
        seed: cfg.policy.seed.unwrap_or_else(random_seed),
        rules: &cfg.rules,
        command: &cfg.command,
        timeout: cfg.limits.timeout,
        max_time: cfg.limits.max_time,
        kill_after: cfg.limits.kill_after,
        preserve_status: cfg.limits.preserve_status,
        budget: cfg.budget.as_ref().map(|b| b as &dyn run::RetryBudget),
        hints: cfg.hints,
        goal: cfg.goal,
        reset_after: cfg.reset_after,
        hooks: &cfg.hooks,
        breaker: cfg.breaker.as_ref().map(|b| b as &dyn run::CircuitBreaker),
        breaker_exit: cfg.breaker_exit,
        throttle: cfg
            .throttle
            .as_ref()
            .map(|t| t as &dyn run::AdaptiveThrottle),
        lock: cfg.lock.as_ref().map(|l| l as &dyn run::RunLock),
        alert: cfg
            .alert
            .as_ref()
            .map(|(s, n)| (s as &dyn run::FailureStreak, *n)),
        lock_wait: cfg.lock_wait,
        lock_exit: cfg.lock_exit,
        lock_token: None,
        lock_held: false,
        once: cfg.once.as_ref().map(|o| o as &dyn run::OncePer),
        once_exit: cfg.once_exit,
        misplaced,
        preset: cfg.preset,
        added,
    }
}

/// `--splay`: this host's and job's wait, and the window.
fn splay_of(cfg: &RunConfig) -> Option<(Duration, Duration)> {
    cfg.limits.splay.map(|window| {
        let source = match cfg.policy.seed {
            Some(seed) => splay::Source::Seed(seed),
            None => splay::Source::Machine {
                id: crate::sys::machine::id()
                    .unwrap_or_else(|why| {
                        cfg.warnings.warn(&format!(
                            "--splay: {why}: the host name alone places this host in the window (systemd-machine-id-setup writes a machine id; --seed N places it by N)"
                        ));
                        None
                    })
                    .unwrap_or_default(),
                host: crate::sys::machine::host_name().into_bytes(),
            },
        };
        let job = config::job_name(cfg.name.as_ref(), &cfg.command);
        (splay::offset(window, &source, &job), window)
    })
}

/// When backoff must have exited, the files it writes at the end
/// included: `--max-time` plus `--kill-after` from now, a moment before the
/// run's own start.
fn exit_by(cfg: &RunConfig) -> Option<Instant> {
    cfg.limits
        .max_time
        .and_then(|t| Instant::now().checked_add(t))
        .and_then(|d| d.checked_add(cfg.limits.kill_after))
}

/// The report of backoff's lines on stderr, in the format asked for.
fn log_report(cfg: &RunConfig, labels: Labels, label: String) -> Box<dyn Report> {
    match cfg.log_format {
        LogFormat::Json => Box::new(JsonReport::new(
            Std::Err,
            cfg.verbosity,
            label,
            SystemTime::now,
        )),
        LogFormat::Github => Box::new(live(
            TextReport::github(Std::Err, cfg.verbosity, labels),
            cfg.verbosity,
        )),
        LogFormat::Gitlab => Box::new(live(
            TextReport::gitlab(Std::Err, cfg.verbosity, labels),
            cfg.verbosity,
        )),
        LogFormat::Text => Box::new(live(
            TextReport::new(Std::Err, cfg.verbosity, labels),
            cfg.verbosity,
        )),
    }
}

/// The text reporter, with a countdown line during delays when stderr is a
/// terminal that can rewrite a line (not `TERM=dumb`) and backoff is not
/// quiet.
fn live<W: Write>(report: TextReport<W>, verbosity: Verbosity) -> TextReport<W> {
    let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
    if verbosity > Verbosity::Quiet && !dumb && std::io::stderr().is_terminal() {
        report.counting_down()
    } else {
        report
    }
}

/// Writes `--report` and `--metrics-file`, and what CI runners take from
/// the run (`write_ci`). A file that cannot be written is
/// reported, but the run's exit status stays the command's. `wait` pauses
/// while another process updates the metrics file, and returns the
/// terminating signal that cut the pause short; that signal gives the
/// update up (said like any other failure) and is returned. The update is
/// given up too at `exit_by`, when backoff's time is up.
fn write_summaries(
    cfg: &RunConfig,
    recorder: &Recorder,
    exit: Exit,
    exit_by: Option<Instant>,
    wait: &mut dyn FnMut(Duration) -> Option<i32>,
) -> Option<i32> {
    let mut cut = None;
    if let Some(path) = &cfg.report {
        // On the stream of JSON events (stderr, in the json log format) the
        // report is one line, as every event is; elsewhere it is indented.
        let on_events = cfg.log_format == LogFormat::Json
            && atomic::Stream::named(path) == Some(atomic::Stream::Stderr);
        let report = recorder.report(exit);
        let mut doc = if on_events {
            report.to_string()
        } else {
            format!("{report:#}")
        };
        doc.push('\n');
        if let Err(e) = atomic::write(path, doc.as_bytes()) {
            cfg.warnings
                .warn(&format!("cannot write --report '{}': {e}", path.display()));
        }
    }
    if let Some(path) = &cfg.metrics_file {
        let make = |previous: Option<&str>| metrics::metrics(recorder, exit, previous);
        // Counters carry over only in a file.
        let written = match atomic::Stream::named(path) {
            Some(_) => atomic::write(path, make(None).as_bytes()),
            None => atomic::update(path, |previous| make(Some(previous)), &mut |d| {
                let left = exit_by.map_or(d, |at| at.saturating_duration_since(Instant::now()));
                if left.is_zero() {
                    return Err("backoff's time (--max-time plus --kill-after) ran out".into());
                }
                cut = wait(d.min(left));
                cut.map_or(Ok(()), |_| Err("interrupted".into()))
            }),
        };
        if let Err(e) = written {
            cfg.warnings.warn(&format!(
                "cannot write --metrics-file '{}': {e}",
                path.display()
            ));
        }
    }
    write_ci(cfg, recorder, exit);
    cut
}

/// Under GitHub Actions, appends the step's outputs and summary; in the
/// gitlab format, ends the job log with the table of attempts (not with -q).
fn write_ci(cfg: &RunConfig, recorder: &Recorder, exit: Exit) {
    if let Some(step) = &cfg.github_step {
        step.write(
            recorder,
            exit,
            &ci::delimiter([random_seed(), random_seed()]),
            &cfg.warnings,
        );
    }
    if cfg.log_format == LogFormat::Gitlab && cfg.verbosity != crate::report::Verbosity::Quiet {
        let _ = Std::Err.write_all(ci::gitlab_table(recorder.rows()).as_bytes());
    }
}

/// `backoff schedule`.
fn schedule_command(args: &cli::ScheduleArgs, given: &Given) -> anyhow::Result<Exit> {
    let cfg = config::policy(&args.policy, given)?;
    let text = match args.format {
        Format::Table => schedule::table(&cfg),
        Format::Csv => schedule::csv(&cfg),
        Format::Json => schedule::json(&cfg),
    };
    print(text.as_bytes())?;
    Ok(Exit::SUCCESS)
}

/// `backoff --generate KIND`: the file on stdout. A reader that goes away
/// ends the writing quietly, as for any filter; another error is one line.
fn generate_command(
    kind: cli::Generate,
    command: &[OsString],
    given: &Given,
) -> anyhow::Result<Exit> {
    use crate::generate::{Item, Shell, generate};
    use clap::ValueEnum as _;
    let name = kind
        .to_possible_value()
        .map(|v| v.get_name().to_owned())
        .unwrap_or_default();
    config::generate_alone(&name, command, given)?;
    let item = match kind {
        cli::Generate::Man => Item::Page("backoff"),
        cli::Generate::ManSchedule => Item::Page("backoff-schedule"),
        cli::Generate::ManSimulate => Item::Page("backoff-simulate"),
        cli::Generate::ManBudget => Item::Page("backoff-budget"),
        cli::Generate::ManBreaker => Item::Page("backoff-breaker"),
        cli::Generate::ManThrottle => Item::Page("backoff-throttle"),
        cli::Generate::ManLock => Item::Page("backoff-lock"),
        cli::Generate::ManOnce => Item::Page("backoff-once"),
        cli::Generate::CompleteBash => Item::Completion(Shell::Bash),
        cli::Generate::CompleteZsh => Item::Completion(Shell::Zsh),
        cli::Generate::CompleteFish => Item::Completion(Shell::Fish),
        cli::Generate::CompletePowerShell => Item::Completion(Shell::PowerShell),
        cli::Generate::CompleteElvish => Item::Completion(Shell::Elvish),
    };
    let text = generate(&Cli::command(), item).context("cannot generate it")?;
    print(text.as_bytes())?;
    Ok(Exit::SUCCESS)
}

/// `backoff simulate`.
fn simulate_command(args: &cli::SimulateArgs, given: &Given) -> anyhow::Result<Exit> {
    let setup = match config::simulation(args, given, random_seed)? {
        config::Simulation::Contention(setup) => setup,
        config::Simulation::Cron(setup) => {
            let outcomes = simulate::cron::simulate(&setup);
            return print_model(
                args,
                [
                    &|| simulate::cron::table(&setup, &outcomes),
                    &|| simulate::cron::csv(&setup, &outcomes),
                    &|| simulate::cron::json(&setup, &outcomes),
                ],
                || svg::cron_svg(&setup, &outcomes),
            );
        }
        config::Simulation::Overload(setup) => {
            let outcomes = simulate::overload::simulate(&setup);
            return print_model(
                args,
                [
                    &|| table::overload_table(&setup, &outcomes),
                    &|| table::overload_csv(&outcomes),
                    &|| table::overload_json(&setup, &outcomes),
                ],
                || svg::overload_svg(&setup, &outcomes),
            );
        }
    };
    let cells = simulate::simulate(&setup);
    let text = match args.format {
        SimFormat::Table => {
            let mut t = table::table(&setup, &cells);
            t.push_str(&table::terminal_charts(&setup, &cells));
            t
        }
        SimFormat::Csv => table::csv(&cells),
        SimFormat::Json | SimFormat::Svg => table::json_doc(&setup, &cells),
    };
    print(text.as_bytes())?;
    if let Some(path) = &args.plot {
        plot(path, svg::svg(&setup, &cells))?;
    }
    Ok(Exit::SUCCESS)
}

/// Prints a model's table, CSV, JSON (`texts`, in that order) or chart as
/// `--format` asks, and writes the chart to `--plot`'s file.
fn print_model(
    args: &cli::SimulateArgs,
    texts: [&dyn Fn() -> String; 3],
    drawing: impl Fn() -> Result<String, String>,
) -> anyhow::Result<Exit> {
    let [table, csv, json] = texts;
    let text = match args.format {
        SimFormat::Table => table(),
        SimFormat::Csv => csv(),
        SimFormat::Json => json(),
        SimFormat::Svg => drawing().map_err(|e| UsageError(format!("cannot draw: {e}")))?,
    };
    print(text.as_bytes())?;
    if let Some(path) = &args.plot {
        plot(path, drawing())?;
    }
    Ok(Exit::SUCCESS)
}

/// Writes `--plot`'s chart, `drawn`, to `path`, as a run's report is
/// written: whole or not at all (a temporary file renamed over it, so that
/// a full disk leaves the chart that was there), and only over a regular
/// file.
fn plot(path: &std::path::Path, drawn: Result<String, String>) -> Result<(), UsageError> {
    atomic::check(path)
        .and(drawn)
        .and_then(|d| atomic::write(path, d.as_bytes()).map_err(|e| e.to_string()))
        .map_err(|e| UsageError(format!("cannot write --plot '{}': {e}", path.display())))
}

/// `backoff breaker show|reset KEY`.
fn breaker_command(command: &cli::BreakerCommand, given: &Given) -> anyhow::Result<Exit> {
    // Showing and closing a circuit needs none of its limits.
    let limits = Breaker {
        failures: 1,
        cooldown_ms: 1,
    };
    match command {
        cli::BreakerCommand::Show { key, store, format } => {
            let b =
                config::open_store::<Breakers>(key, store, limits, given, &Warnings::default())?;
            let (circuit, now) = b.show().map_err(|e| UsageError(b.error(&e)))?;
            let line = match format {
                cli::BudgetFormat::Text => format!(
                    "{key}: {} ({})\n",
                    report::text::circuit_text(circuit, now),
                    b.describe()
                ),
                cli::BudgetFormat::Json => {
                    let mut v = report::json::circuit_json(circuit, now);
                    v["key"] = serde_json::json!(key);
                    v["probe_until"] = report::json::unix_ms(circuit.probe_until_ms);
                    v["store"] = serde_json::json!(b.describe());
                    format!("{v}\n")
                }
            };
            print(line.as_bytes())?;
        }
        cli::BreakerCommand::Reset { key, store, format } => {
            let b =
                config::open_store::<Breakers>(key, store, limits, given, &Warnings::default())?;
            let (found, now) = b.reset().map_err(|e| UsageError(b.error(&e)))?;
            tell(
                &state::breaker_reset(key, &b.describe(), found, now),
                *format,
            )?;
        }
    }
    Ok(Exit::SUCCESS)
}

/// `backoff throttle show|reset KEY`.
fn throttle_command(command: &cli::ThrottleCommand, given: &Given) -> anyhow::Result<Exit> {
    use crate::fleet::throttle::SLOTS;
    match command {
        cli::ThrottleCommand::Show {
            key,
            store,
            limits,
            format,
        } => {
            let throttle = config::throttle_limits(limits);
            let t =
                config::open_store::<Throttles>(key, store, throttle, given, &Warnings::default())?;
            let (window, now) = t.show().map_err(|e| UsageError(t.error(&e)))?;
            let counts = window.counts(now);
            let probability = throttle.probability(counts);
            // The state's width while a slot of it counts (for a width of
            // its own of 0, `width_at` is 0 only when none does), else the
            // one the options give.
            let from_state = window.width_at(0, now) != 0;
            let width = window.width_at(throttle.width_ms(), now);
            let window_ms = width.saturating_mul(SLOTS as u64);
            let text = match format {
                cli::BudgetFormat::Text => format!(
                    "{key}: {}; the next attempt is skipped with probability {probability:.3} under K {} ({})\n",
                    state::counts_text(counts, window_ms),
                    show_k(throttle.k_milli),
                    t.describe()
                ),
                cli::BudgetFormat::Json => format!(
                    "{}\n",
                    serde_json::json!({
                        "key": key,
                        "requests": counts.requests,
                        "skips": counts.skips,
                        "accepts": counts.accepts,
                        "probability": probability,
                        "k": throttle.k(),
                        "window_seconds": Duration::from_millis(window_ms).as_secs_f64(),
                        "window_from": if from_state { "state" } else { "options" },
                        "store": t.describe(),
                    })
                ),
            };
            print(text.as_bytes())?;
        }
        cli::ThrottleCommand::Reset { key, store, format } => {
            // Emptying a window needs none of its limits.
            let limits = crate::fleet::throttle::Throttle {
                window_ms: crate::fleet::throttle::MIN_WINDOW_MS,
                k_milli: 1000,
            };
            let t =
                config::open_store::<Throttles>(key, store, limits, given, &Warnings::default())?;
            let (found, now) = t.reset().map_err(|e| UsageError(t.error(&e)))?;
            tell(
                &state::throttle_reset(key, &t.describe(), found, now),
                *format,
            )?;
        }
    }
    Ok(Exit::SUCCESS)
}

/// `backoff lock show|reset KEY`.
fn lock_command(command: &cli::LockCommand, given: &Given) -> anyhow::Result<Exit> {
    use crate::store::{LockLimits, Locks};
    // Showing and clearing a lock needs no lease, and is never run
    // without it.
    // The slots of --lock-limit are a store of their own, whatever their
    // number: a store opened for more than one slot finds all of them.
    let limits = |slots| LockLimits {
        lease: crate::fleet::lock::Lease {
            ttl: Duration::from_secs(1),
            kill_after: Duration::ZERO,
        },
        fail: crate::store::FailMode::Closed,
        replace: false,
        slots,
    };
    let open = |key: &str, store, slots| {
        config::open_store::<Locks>(key, store, limits(slots), given, &Warnings::default())
    };
    let every_slot = crate::fleet::lock::MAX_SLOTS;
    match command {
        cli::LockCommand::Show { key, store, format } => {
            let l = open(key, store, 1)?;
            let mut state = l.show().map_err(|e| UsageError(l.error(&e)))?;
            let s = open(key, store, every_slot)?;
            state.slots = s.show().map_err(|e| UsageError(s.error(&e)))?.slots;
            let told = state::lock_show(key, &l.describe(), &state);
            let text = match format {
                cli::BudgetFormat::Text => format!("{}\n", told.line),
                cli::BudgetFormat::Json => format!("{}\n", told.json),
            };
            print(text.as_bytes())?;
        }
        cli::LockCommand::Reset {
            key,
            force,
            store,
            format,
        } => {
            let l = open(key, store, 1)?;
            let s = open(key, store, every_slot)?;
            let slots = s.reset(*force).map_err(|e| UsageError(s.error(&e)))?.slots;
            let mut state = l.reset(*force).map_err(|e| UsageError(l.error(&e)))?;
            state.slots = slots;
            tell(&state::lock_reset(key, &l.describe(), &state), *format)?;
        }
    }
    Ok(Exit::SUCCESS)
}

/// The period a record's label names (`day:2026-12-06` is a day,
/// `window:2h` a window of 2h).
fn period_of(label: &str) -> Option<crate::fleet::once::Period> {
    let (kind, _) = label.split_once(':')?;
    match kind {
        "window" => cli::values::once_per(label.split_once(':')?.1).ok(),
        unit => crate::fleet::once::Period::unit(unit),
    }
}

/// `backoff once show|reset KEY`.
fn once_command(command: &cli::OnceCommand, given: &Given) -> anyhow::Result<Exit> {
    use crate::store::once::{OnceLimits, Onces, Stored};
    // The period only tells what is shown; a store that cannot be used is
    // an error here.
    let limits = |period: Option<crate::fleet::once::Period>| OnceLimits {
        period: period.unwrap_or(crate::fleet::once::Period::Day),
        fail: crate::store::FailMode::Closed,
    };
    match command {
        cli::OnceCommand::Show {
            key,
            once_per,
            store,
            format,
        } => {
            let o = config::open_store::<Onces>(
                key,
                store,
                limits(*once_per),
                given,
                &Warnings::default(),
            )?;
            let (stored, now_ms) = o.show().map_err(|e| UsageError(o.error(&e)))?;
            let period = once_per.or_else(|| match &stored {
                Stored::Record(s) => period_of(&s.period),
                _ => None,
            });
            let told = state::once_show(key, &o.describe(), &stored, period, now_ms);
            let text = match format {
                cli::BudgetFormat::Text => format!("{}\n", told.line),
                cli::BudgetFormat::Json => format!("{}\n", told.json),
            };
            print(text.as_bytes())?;
        }
        cli::OnceCommand::Reset { key, store, format } => {
            let o =
                config::open_store::<Onces>(key, store, limits(None), given, &Warnings::default())?;
            let (stored, _) = o.reset().map_err(|e| UsageError(o.error(&e)))?;
            tell(&state::once_reset(key, &o.describe(), &stored), *format)?;
        }
    }
    Ok(Exit::SUCCESS)
}

/// Tells what a reset did: a line on stderr, as backoff's other lines, or
/// one JSON object on stdout, as `show` gives its state.
fn tell(told: &state::Told, format: cli::BudgetFormat) -> anyhow::Result<()> {
    match format {
        cli::BudgetFormat::Text => {
            say(&told.line);
            Ok(())
        }
        cli::BudgetFormat::Json => print(format!("{}\n", told.json).as_bytes()),
    }
}

/// Writes `bytes` to stdout, whole, and flushes it.
///
/// # Errors
///
/// `cannot write to stdout` and why (a full disk, `/dev/full`), which ends
/// the command with 125, as `/bin/echo` fails; a reader that went away
/// (EPIPE: `| head`) is not one, as for the shell's own tools.
fn print(bytes: &[u8]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::anyhow!("cannot write to stdout: {e}"))
        }
        _ => Ok(()),
    }
}

/// K, in thousandths, as it was given: `2`, `1.5`, `1.125`.
fn show_k(k_milli: u64) -> String {
    let (whole, fraction) = (k_milli / 1000, k_milli % 1000);
    if fraction == 0 {
        return whole.to_string();
    }
    format!("{whole}.{fraction:03}")
        .trim_end_matches('0')
        .to_owned()
}

/// `backoff budget show|reset KEY`.
fn budget_command(command: &cli::BudgetCommand, given: &Given) -> anyhow::Result<Exit> {
    let tokens = |micros: u64| show_tokens(micros).parse::<f64>().unwrap_or(0.0);
    match command {
        cli::BudgetCommand::Show { key, store, format } => {
            let b = config::open_budget(key, store, given, &Warnings::default())?;
            let level = b.level().map_err(|e| UsageError(b.error(&e)))?;
            // The state's own bucket; the flags' where it records none (no
            // state yet, or one of an older version).
            let (made, source) = match level.made {
                Some(made) => (made, "state"),
                None => (
                    Bucket {
                        burst: store.budget_burst,
                        ratio: store.budget_ratio,
                    },
                    "options",
                ),
            };
            let line = match format {
                cli::BudgetFormat::Text => {
                    let from = if level.made.is_some() {
                        ""
                    } else {
                        "; burst and ratio from the options: the state records none"
                    };
                    format!(
                        "{key}: {} of {} tokens, {} a success ({}{from})\n",
                        show_tokens(level.micros),
                        show_tokens(made.burst),
                        show_tokens(made.ratio),
                        b.describe()
                    )
                }
                cli::BudgetFormat::Json => format!(
                    "{}\n",
                    serde_json::json!({
                        "key": key,
                        "tokens": tokens(level.micros),
                        "micro_tokens": level.micros,
                        "burst": tokens(made.burst),
                        "ratio": tokens(made.ratio),
                        "bucket_from": source,
                        "store": b.describe(),
                    })
                ),
            };
            print(line.as_bytes())?;
        }
        cli::BudgetCommand::Reset { key, store, format } => {
            let b = config::open_budget(key, store, given, &Warnings::default())?;
            let refill = if given.gave("--budget-burst") || given.gave("--budget-ratio") {
                Refill::Given
            } else {
                Refill::Recorded
            };
            let (found, bucket) = b.reset(refill).map_err(|e| UsageError(b.error(&e)))?;
            tell(
                &state::budget_reset(key, &b.describe(), found, bucket),
                *format,
            )?;
        }
    }
    Ok(Exit::SUCCESS)
}

/// A seed from the OS, or from the clock and pid if the OS has none to give.
fn random_seed() -> u64 {
    use rand::TryRng;
    rand::rngs::SysRng.try_next_u64().unwrap_or_else(|_| {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        #[allow(clippy::cast_possible_truncation)]
        let t = t as u64;
        t ^ u64::from(std::process::id()).rotate_left(32)
    })
}
