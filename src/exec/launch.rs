//! Starting one attempt: its environment (backoff's own, with the attempt's
//! variables), its standard descriptors (backoff's own, the replayed stdin,
//! or pipes to backoff when output rules or `--idle-timeout` need to see the
//! output or stdout is held), and the process itself (`sys::process`).

use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use crate::classify::Outcome;
use crate::exec::copy::{PIPE_SIZE, Pipe};
use crate::exec::{Carried, RealExecutor, spool};
use crate::run::{AttemptSpec, HookRun, seconds};
use crate::sys::fd::{self, Out};
use crate::sys::guard::Guard;
use crate::sys::process::{self, Exec, env_entry};

/// The variables backoff sets for the command; inherited ones of the same
/// names are never passed on, not even when backoff leaves one unset.
///
/// `BACKOFF_DEADLINE` and `BACKOFF_TIMEOUT` tell the command the limits of
/// this run (`--max-time`, `--timeout`) and nothing else: an inherited
/// `BACKOFF_DEADLINE` may be stale (exported by a run long over, to a shell
/// that started this one) and a command could not tell whose deadline it
/// is, so a backoff without `--max-time` sets none, even when an outer
/// backoff runs it. `BACKOFF_TIMEOUT` is also how backoff itself is given
/// `--timeout`: an inherited one is this run's `--timeout` (unless the flag
/// is given too), so the command is told the run's own, in seconds (`2.5`),
/// which a backoff the command starts in turn reads back as its own
/// `--timeout` (see `app`).
const ATTEMPT_VARIABLES: [&str; 7] = [
    "BACKOFF_RUN_ID",
    "BACKOFF_LOCK_TOKEN",
    "BACKOFF_ATTEMPT",
    "BACKOFF_MAX_ATTEMPTS",
    "BACKOFF_LAST_STATUS",
    "BACKOFF_DEADLINE",
    "BACKOFF_TIMEOUT",
];

/// When `deadline` is on the system clock, as a Unix time in seconds with
/// milliseconds (`1764600000.250`), `now` being `wall` on that clock.
fn unix_time(deadline: Instant, now: Instant, wall: SystemTime) -> Option<String> {
    let at = wall.checked_add(deadline.saturating_duration_since(now))?;
    let since = at.duration_since(SystemTime::UNIX_EPOCH).ok()?;
    Some(format!("{}.{:03}", since.as_secs(), since.subsec_millis()))
}

/// backoff's own variables that may hold a secret (the store URL's
/// password, a check-in URL), never passed on to a command or a hook (a
/// backoff that one of them runs would take them for its own, and check
/// in for the outer run). The policy variables
/// (`BACKOFF_BASE`, ...) are passed on: they hold nothing secret, and a
/// backoff the command starts in turn follows them too.
const SECRET_VARIABLES: [&str; 2] = ["BACKOFF_BUDGET_STORE", "BACKOFF_PING"];

/// Backoff's own environment, as the standard library reads it, without
/// its secrets and inherited variables named in `strip` or `carried`, then
/// `vars` (those with a value) and `carried`'s.
fn environment_with<'a>(
    strip: &[&str],
    vars: impl IntoIterator<Item = (&'a str, Option<String>)>,
    carried: &Carried,
) -> io::Result<Vec<CString>> {
    let carried = carried.vars();
    let mut env: Vec<CString> = std::env::vars_os()
        .filter(|(name, _)| {
            !strip
                .iter()
                .chain(&SECRET_VARIABLES)
                .chain(carried.iter().map(|(n, _)| n))
                .any(|v| name == *v)
        })
        .map(|(name, value)| env_entry(&name, &value))
        .collect::<io::Result<_>>()?;
    let carried = carried.iter().map(|(n, v)| (*n, v.clone()));
    for (name, value) in vars.into_iter().chain(carried) {
        if let Some(value) = value {
            env.push(env_entry(OsStr::new(name), OsStr::new(&value))?);
        }
    }
    Ok(env)
}

/// The environment of an attempt: backoff's own without inherited attempt
/// variables, then the attempt's. `timeout` is `--timeout`.
fn environment(
    spec: &AttemptSpec<'_>,
    timeout: Option<Duration>,
    carried: &Carried,
) -> io::Result<Vec<CString>> {
    let values = [
        Some(spec.run_id.to_owned()),
        spec.lock_token.map(|t| t.to_string()),
        Some(spec.number.to_string()),
        Some(spec.max_attempts.map(|m| m.to_string()).unwrap_or_default()),
        spec.last.map(Outcome::env_value),
        spec.deadline
            .and_then(|d| unix_time(d, Instant::now(), SystemTime::now())),
        timeout.map(seconds),
    ];
    environment_with(
        &ATTEMPT_VARIABLES,
        ATTEMPT_VARIABLES.into_iter().zip(values),
        carried,
    )
}

/// Every variable backoff sets for a command or a hook: another backoff
/// that one of them runs sees them, and must not take them for mistakes.
pub fn variables_set() -> impl Iterator<Item = &'static str> {
    ATTEMPT_VARIABLES.into_iter().chain(HOOK_VARIABLES)
}

/// The variables backoff sets for a hook; inherited ones of the same names
/// (and of the attempt's) are not passed on.
const HOOK_VARIABLES: [&str; 7] = [
    "BACKOFF_RUN_ID",
    "BACKOFF_LOCK_TOKEN",
    "BACKOFF_ATTEMPT",
    "BACKOFF_MAX_ATTEMPTS",
    "BACKOFF_LAST_STATUS",
    "BACKOFF_NEXT_DELAY",
    "BACKOFF_REASON",
];

/// The environment of a hook: backoff's own without inherited hook or
/// attempt variables, then `vars`.
fn hook_environment(
    vars: &[(&'static str, String)],
    carried: &Carried,
) -> io::Result<Vec<CString>> {
    let strip: Vec<&str> = ATTEMPT_VARIABLES
        .iter()
        .chain(&HOOK_VARIABLES)
        .copied()
        .collect();
    environment_with(
        &strip,
        vars.iter()
            .map(|(name, value)| (*name, Some(value.clone()))),
        carried,
    )
}

/// A pipe for one of the command's streams: backoff's end (non-blocking)
/// and the command's.
fn captured() -> io::Result<(File, io::PipeWriter)> {
    let (from, end) = io::pipe()?;
    fd::set_nonblocking(&from)?;
    Ok((File::from(OwnedFd::from(from)), end))
}

/// Starts a hook: `sh -c COMMAND` in a process group of its own, with
/// no input (stdin belongs to the command), and its output on backoff's
/// stderr, so that the command's stdout stays the command's alone.
/// `announce` is the guard's pipe, if there is a guard.
pub(super) fn spawn_hook(
    hook: &HookRun<'_>,
    carried: &Carried,
    announce: Option<RawFd>,
) -> io::Result<Child> {
    let argv = [
        OsString::from("sh"),
        OsString::from("-c"),
        OsString::from(hook.command),
    ];
    let exec = Exec::new(&argv, hook_environment(&hook.env, carried)?)?;
    let mut command = Command::new("sh");
    command
        .args(&argv[1..])
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(io::stderr().as_fd().try_clone_to_owned()?);
    process::spawn(command, exec, announce)
}

/// Why an attempt of `program` could not start, as the OS said it, and
/// what to do about it where that is clear: a script with no `#!` line (an
/// exec format error for a file of text), or `not_found`, the advice for a
/// program not found, if there is any.
pub(super) fn spawn_error(e: &io::Error, program: &OsStr, not_found: Option<&str>) -> String {
    let why = super::describe(e);
    match e.raw_os_error() {
        Some(libc::ENOEXEC)
            if process::executable(program).is_some_and(|f| has_no_interpreter(&f)) =>
        {
            format!("{why}; it has no '#!' line: make '#!/bin/sh' its first line")
        }
        _ if e.kind() == io::ErrorKind::NotFound => match not_found {
            Some(advice) => format!("{why}; {advice}"),
            None => why,
        },
        _ => why,
    }
}

/// Whether `file` is a script without a `#!` line: text (no NUL byte in
/// its first 512 bytes, as there is in every binary format, that of another
/// machine's ELF included) that does not start with `#!`. An empty file is
/// one too: a shell runs it, the kernel does not.
fn has_no_interpreter(file: &std::path::Path) -> bool {
    use std::io::Read;
    let mut head = Vec::new();
    File::open(file)
        .and_then(|f| f.take(512).read_to_end(&mut head))
        .is_ok()
        && !head.starts_with(b"#!")
        && !head.starts_with(b"\x7fELF")
        && !head.contains(&0)
}

impl RealExecutor {
    /// Starts an attempt; returns the child and the pipes of its output, if
    /// output rules or `--idle-timeout` need to see it or stdout is held.
    pub(super) fn spawn(&mut self, spec: &AttemptSpec<'_>) -> io::Result<(Child, Vec<Pipe>)> {
        let exec = Exec::new(
            &self.command,
            environment(spec, self.options.timeout, &self.options.carried)?,
        )?;
        let mut command = Command::new(&self.command[0]);
        command.args(&self.command[1..]);
        if !self.options.foreground {
            command.process_group(0);
        }
        if let Some(input) = &mut self.stdin {
            command.stdin(Stdio::from(input.for_attempt()?));
        }
        if let Some(held) = &mut self.held {
            spool::clear(held)?;
            self.copier.lost = None;
        }
        let mut pipes = Vec::new();
        // Held stdout goes through backoff too, rules or not: a write that
        // finds no room in the held file fails for backoff, which must know
        // of it, and not for the command, which may ignore it.
        let rules = self.copier.rules.is_some();
        // `--idle-timeout` sees both streams, to know when output last came.
        let idle = self.options.idle_timeout.is_some();
        // In a CI fold, stderr goes through backoff, to end its last line.
        let folded = self.options.folded;
        // Both streams bound for one place (`2>&1`, a terminal) share one
        // pipe, so that their order there stays the command's.
        let shared = (rules || idle || folded)
            && self.held.is_none()
            && fd::same_file(io::stdout().as_fd(), io::stderr().as_fd());
        if rules || idle || self.held.is_some() || shared {
            let to = match &self.held {
                Some(held) => Out::blocking(held.try_clone()?),
                None => Out::new(io::stdout().as_fd())?,
            };
            let (from, end) = captured()?;
            fd::enlarge_pipe(&from, PIPE_SIZE);
            let stream = if shared { "output" } else { "stdout" };
            let pipe = Pipe::new(from, to, stream);
            pipes.push(if self.held.is_some() {
                pipe.holding()
            } else if shared && folded {
                pipe.ending_lines()
            } else {
                pipe
            });
            if shared {
                command.stderr(end.try_clone()?);
            }
            command.stdout(end);
        }
        if (rules || idle || folded) && !shared {
            let to = Out::new(io::stderr().as_fd())?;
            let (from, end) = captured()?;
            let pipe = Pipe::new(from, to, "stderr");
            pipes.push(if folded { pipe.ending_lines() } else { pipe });
            command.stderr(end);
        }
        // The write ends belong to the command alone: `command` is dropped
        // when it has started, so that the pipes end when the command (and
        // what it started) is done.
        let announce = self.guard.as_ref().map(Guard::pipe);
        let child = process::spawn(command, exec, announce)?;
        Ok((child, pipes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::values::duration;

    #[test]
    fn seconds_have_the_decimals_they_need_and_read_back() {
        for (d, text) in [
            (Duration::from_secs(30), "30"),
            (Duration::from_millis(2500), "2.5"),
            (Duration::from_millis(250), "0.25"),
            (Duration::from_nanos(1), "0.000000001"),
            (Duration::from_nanos(90_000_000_120), "90.00000012"),
            (Duration::from_hours(8_766_000), "31557600000"),
        ] {
            assert_eq!(seconds(d), text);
            // As a backoff inside reads BACKOFF_TIMEOUT.
            assert_eq!(duration(&format!("{text}s")), Ok(d), "{text}");
        }
    }

    #[test]
    fn a_deadline_is_a_unix_time_with_milliseconds() {
        let now = Instant::now();
        let wall = SystemTime::UNIX_EPOCH + Duration::from_millis(1_764_599_990_125);
        let in_10s = now + Duration::from_millis(10_125);
        assert_eq!(
            unix_time(in_10s, now, wall).as_deref(),
            Some("1764600000.250")
        );
        assert_eq!(unix_time(now, now, wall).as_deref(), Some("1764599990.125"));
        // A deadline already passed is now.
        let later = now + Duration::from_secs(1);
        assert_eq!(
            unix_time(now, later, wall).as_deref(),
            Some("1764599990.125")
        );
        let whole = SystemTime::UNIX_EPOCH + Duration::from_secs(5);
        assert_eq!(unix_time(now, now, whole).as_deref(), Some("5.000"));
    }
}
