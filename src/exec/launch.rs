//! Starting one attempt: its environment (backoff's own, with the attempt's
//! variables), its standard descriptors (backoff's own, the replayed stdin,
//! or pipes to backoff when output rules or `--idle-timeout` need to see the
//! output or stdout is held), and the process itself (`sys::process`).

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

use crate::classify::Outcome;
use crate::exec::copy::{PIPE_SIZE, Pipe};
use crate::exec::{RealExecutor, spool};
use crate::run::AttemptSpec;
use crate::sys::fd::{self, Out};
use crate::sys::process::{self, Exec, env_entry};

/// The variables backoff sets for the command; inherited ones of the same
/// names are not passed on.
const ATTEMPT_VARIABLES: [&str; 3] = [
    "BACKOFF_ATTEMPT",
    "BACKOFF_MAX_ATTEMPTS",
    "BACKOFF_LAST_STATUS",
];

/// The environment of an attempt: backoff's own, as the standard library
/// reads it, without inherited attempt variables, then the attempt's.
fn environment(spec: &AttemptSpec) -> io::Result<Vec<CString>> {
    let mut env: Vec<CString> = std::env::vars_os()
        .filter(|(name, _)| !ATTEMPT_VARIABLES.iter().any(|v| name == *v))
        .map(|(name, value)| env_entry(&name, &value))
        .collect::<io::Result<_>>()?;
    let values = [
        Some(spec.number.to_string()),
        Some(spec.max_attempts.map(|m| m.to_string()).unwrap_or_default()),
        spec.last.map(Outcome::env_value),
    ];
    for (name, value) in ATTEMPT_VARIABLES.iter().zip(values) {
        if let Some(value) = value {
            env.push(env_entry(OsStr::new(name), OsStr::new(&value))?);
        }
    }
    Ok(env)
}

/// A pipe for one of the command's streams: backoff's end (non-blocking)
/// and the command's.
fn captured() -> io::Result<(File, io::PipeWriter)> {
    let (from, end) = io::pipe()?;
    fd::set_nonblocking(&from)?;
    Ok((File::from(OwnedFd::from(from)), end))
}

impl RealExecutor {
    /// Starts an attempt; returns the child and the pipes of its output, if
    /// output rules or `--idle-timeout` need to see it or stdout is held.
    pub(super) fn spawn(&mut self, spec: &AttemptSpec) -> io::Result<(Child, Vec<Pipe>)> {
        let exec = Exec::new(&self.command, environment(spec)?)?;
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
        if rules || idle || self.held.is_some() {
            let to = match &self.held {
                Some(held) => Out::blocking(held.try_clone()?),
                None => Out::new(io::stdout().as_fd())?,
            };
            let (from, end) = captured()?;
            fd::enlarge_pipe(&from, PIPE_SIZE);
            let pipe = Pipe::new(from, to);
            pipes.push(if self.held.is_some() {
                pipe.holding()
            } else {
                pipe
            });
            command.stdout(end);
        }
        if rules || idle {
            let to = Out::new(io::stderr().as_fd())?;
            let (from, end) = captured()?;
            pipes.push(Pipe::new(from, to));
            command.stderr(end);
        }
        // The write ends belong to the command alone: `command` is dropped
        // when it has started, so that the pipes end when the command (and
        // what it started) is done.
        let child = process::spawn(command, exec)?;
        Ok((child, pipes))
    }
}
