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

use super::copy::{PIPE_SIZE, Pipe};
use super::{RealExecutor, spool};
use crate::exec::Carried;
use crate::exec::env::{environment, hook_environment};
use crate::run::{AttemptSpec, HookRun};
use crate::sys::fd::{self, Out};
use crate::sys::guard::Guard;
use crate::sys::process::{self, Exec, env_entry};

/// The environment as `execve` takes it.
fn entries(env: &[(OsString, OsString)]) -> io::Result<Vec<CString>> {
    env.iter()
        .map(|(name, value)| env_entry(name, value))
        .collect()
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
    let exec = Exec::new(&argv, entries(&hook_environment(&hook.env, carried))?)?;
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
            entries(&environment(
                spec,
                self.options.timeout,
                &self.options.carried,
            ))?,
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
