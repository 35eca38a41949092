//! Starting one attempt: its environment (backoff's own, with the attempt's
//! variables), its standard descriptors (backoff's own, the replayed stdin,
//! the held stdout file, or pipes to backoff when output rules need to see
//! the output), and the process itself (`sys::process`).

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

use crate::classify::Outcome;
use crate::exec::copy::{PIPE_SIZE, Pipe, destination};
use crate::exec::{RealExecutor, spool};
use crate::run::AttemptSpec;
use crate::sys::fd;
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

impl RealExecutor {
    /// Starts an attempt; returns the child and the pipes of its output, if
    /// output rules need to see it.
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
        }
        let mut pipes = Vec::new();
        if self.copier.rules.is_some() {
            let to_stdout = match &self.held {
                Some(held) => (held.try_clone()?, false),
                None => destination(io::stdout().as_fd())?,
            };
            let to_stderr = destination(io::stderr().as_fd())?;
            let (out_from, out_end) = io::pipe()?;
            let (err_from, err_end) = io::pipe()?;
            fd::set_nonblocking(&out_from)?;
            fd::set_nonblocking(&err_from)?;
            fd::enlarge_pipe(&out_from, PIPE_SIZE);
            for (from, (to, to_nonblocking)) in [(out_from, to_stdout), (err_from, to_stderr)] {
                pipes.push(Pipe::new(
                    File::from(OwnedFd::from(from)),
                    to,
                    to_nonblocking,
                ));
            }
            command.stdout(out_end).stderr(err_end);
        } else if let Some(held) = &self.held {
            // Nothing to match: the command writes straight into the file.
            command.stdout(held.try_clone()?);
        }
        // The write ends belong to the command alone: `command` is dropped
        // when it has started, so that the pipes end when the command (and
        // what it started) is done.
        let child = process::spawn(command, exec)?;
        Ok((child, pipes))
    }
}
