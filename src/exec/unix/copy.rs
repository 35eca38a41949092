//! Copying the command's output through backoff, for output rules, held
//! stdout and `--idle-timeout`: each captured stream is read as it comes,
//! matched line by line (`scan`), and passed on unchanged, in order; without
//! rules the kernel moves it where it can, and backoff never reads it. A destination that does not
//! take more (a full pipe nobody reads) holds up the reading of that stream,
//! never backoff's clock.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::AsFd;

use crate::classify::Observed;
use crate::exec::describe;
use crate::exec::scan::{LineScanner, OutputRules};
use crate::report::Warnings;
use crate::sys::fd::{self, Out};

/// Bytes read from the command's output at a time: enough to make few
/// reads, few enough to stay in the CPU's cache while they are matched and
/// written.
pub(super) const CHUNK: usize = 256 * 1024;

/// The capacity asked for the pipe that carries the command's stdout (four
/// times Linux's default): the larger the pipe, the fewer times the command
/// and backoff wait for each other. Every page of it counts against the
/// user's quota of pipe buffers, used or not, so it stays modest, and
/// stderr keeps the default.
pub(super) const PIPE_SIZE: usize = 256 * 1024;

/// Where one captured stream of the command goes.
// Its flags are independent facts about one pipe, not a state in disguise.
#[allow(clippy::struct_excessive_bools)]
pub(super) struct Pipe {
    pub(super) from: File,
    pub(super) to: Out,
    /// Bytes read but not yet written: while there are some, the pipe is
    /// not read, so a slow reader downstream slows the command down as it
    /// would without backoff, but never backoff's own clock.
    pending: Vec<u8>,
    /// Whether output is passed on with tee(2) (Linux, `to` a pipe): the
    /// kernel puts it into `to` without copying it, and only then is it
    /// read, to be matched; with nothing to match, it is moved with
    /// splice(2) instead, and never read.
    tee: bool,
    /// With `tee`: output waits in `from` for room in `to`.
    blocked: bool,
    /// Once reading has stopped: how many of the bytes that were in `from`
    /// then are still to be passed on. They are taken only as `to` takes
    /// them; what comes later is not waited for.
    left: Option<usize>,
    scanner: LineScanner,
    /// Whether `to` is the held stdout file (`--hold-stdout`): what cannot
    /// be written there is lost, so the first failure is kept
    /// (`Copier::lost`), and the rest of the attempt's output is read and
    /// dropped, so that the command runs on as if it had been written.
    holds: bool,
    /// With no rules and `to` taking blocking writes (a file, such as the
    /// held stdout file, or a device): output is moved there with
    /// splice(2), without being copied through backoff.
    splice: bool,
    /// Which of the command's streams it carries (`stdout`, `stderr`), for
    /// the line that tells of a destination that failed.
    stream: &'static str,
    /// `to` failed (a full disk, an I/O error): the rest of the attempt's
    /// output is read, matched and dropped, so that the command runs on as
    /// if it had been written.
    dropping: bool,
    /// In a CI fold: the output is read (never moved unread), and a last
    /// line it leaves unfinished is ended when the pipe is done.
    ends_lines: bool,
    /// With `ends_lines`: whether the last byte passed on ended a line
    /// (true before any).
    at_line_start: bool,
}

impl Pipe {
    /// Whether the pipe waits for room in its destination.
    pub(super) fn waiting(&self) -> bool {
        self.blocked || !self.pending.is_empty()
    }

    /// Whether everything read, and everything left to read after reading
    /// stopped, has been passed on.
    pub(super) fn emptied(&self) -> bool {
        !self.waiting() && self.left.unwrap_or(0) == 0
    }
}

impl Pipe {
    /// A pipe that carries the command's `stream` from `from` (its read
    /// end, non-blocking) to `to`.
    pub(super) fn new(from: File, to: Out, stream: &'static str) -> Pipe {
        Pipe {
            from,
            // Only a pipe opened anew can take tee's non-blocking writes.
            tee: to.is_own_pipe() && cfg!(target_os = "linux"),
            pending: Vec::new(),
            blocked: false,
            left: None,
            scanner: LineScanner::of_stream(stream),
            holds: false,
            splice: !to.nonblocking() && cfg!(target_os = "linux"),
            to,
            stream,
            dropping: false,
            ends_lines: false,
            at_line_start: true,
        }
    }

    /// This pipe, in a CI fold: see `ends_lines`.
    pub(super) fn ending_lines(self) -> Pipe {
        Pipe {
            ends_lines: true,
            ..self
        }
    }

    /// Notes the bytes passed on, for `ends_lines`.
    fn passed(&mut self, data: &[u8]) {
        if let Some(&last) = data.last() {
            self.at_line_start = last == b'\n';
        }
    }

    /// The pipe is done: ends the line its output left unfinished, if it
    /// ends lines (on backoff's stderr, where the fold's markers go, as
    /// backoff writes its own lines).
    fn done(&mut self) {
        if self.ends_lines && !self.at_line_start && !self.dropping {
            let _ = std::io::Write::write_all(&mut crate::report::Std::Err, b"\n");
            self.at_line_start = true;
        }
    }

    /// This pipe, whose destination is the held stdout file.
    pub(super) fn holding(self) -> Pipe {
        Pipe {
            holds: true,
            ..self
        }
    }
}

/// What one read of a pipe did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Copied {
    /// Copied some bytes.
    Data,
    /// Nothing there for now.
    Nothing,
    /// The pipe is done: at its end, or its destination is gone.
    Done,
}

/// Copies and matches the captured streams of one run's attempts, with one
/// buffer for them all.
pub(super) struct Copier {
    /// What to look for in the output.
    pub(super) rules: Option<OutputRules>,
    buffer: Vec<u8>,
    /// The first write into the held stdout file that failed (the disk or
    /// a quota full), since the held file was last emptied.
    pub(super) lost: Option<io::Error>,
    /// Where a stream that cannot be written is told.
    warnings: Warnings,
}

impl Copier {
    /// A copier matching `rules`, telling `warnings` of a stream it cannot
    /// write.
    pub(super) fn new(rules: Option<OutputRules>, warnings: Warnings) -> Copier {
        Copier {
            warnings,
            rules,
            buffer: Vec::new(),
            lost: None,
        }
    }

    /// The copy buffer, at least `CHUNK` bytes long (also used to write
    /// held output).
    pub(super) fn buffer(&mut self) -> &mut [u8] {
        if self.buffer.len() < CHUNK {
            self.buffer.resize(CHUNK, 0);
        }
        &mut self.buffer
    }

    /// Copies what one pipe has to offer (its read end never blocks).
    pub(super) fn copy(&mut self, pipe: &mut Pipe, seen: &mut Observed) -> Copied {
        if self.buffer.len() < CHUNK {
            self.buffer.resize(CHUNK, 0);
        }
        // Nothing to match: the kernel moves the output, unread (unless the
        // end of its last line must be seen).
        let unread = self.rules.is_none() && !pipe.ends_lines;
        if pipe.tee && !pipe.dropping {
            let passed = if unread {
                fd::splice(pipe.from.as_fd(), pipe.to.as_fd(), CHUNK)
            } else {
                fd::tee(pipe.from.as_fd(), pipe.to.as_fd(), CHUNK)
            };
            match passed {
                // The end, or (when other writers share the destination) a
                // destination found full too late to say so.
                Ok(0) => {
                    if fd::pipe_bytes(pipe.from.as_fd()) == 0 {
                        return Copied::Done;
                    }
                    pipe.blocked = true;
                    return Copied::Nothing;
                }
                Ok(_) if unread => return Copied::Data,
                Ok(n) => return self.take_teed(pipe, n, seen),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    // Either nothing came, or the destination is full.
                    pipe.blocked = fd::pipe_bytes(pipe.from.as_fd()) > 0;
                    return Copied::Nothing;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => return Copied::Nothing,
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Copied::Done,
                // Not possible here after all: read and write instead.
                Err(_) => pipe.tee = false,
            }
        }
        let limit = pipe.left.map_or(CHUNK, |left| left.min(CHUNK));
        if limit == 0 {
            return Copied::Done;
        }
        if pipe.splice && unread && self.lost.is_none() && !pipe.dropping {
            match fd::splice(pipe.from.as_fd(), pipe.to.as_fd(), limit) {
                Ok(0) => return Copied::Done,
                Ok(n) => {
                    if let Some(left) = &mut pipe.left {
                        *left -= n.min(*left);
                    }
                    return Copied::Data;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if pipe.left.is_some() {
                        pipe.left = Some(0);
                    }
                    return Copied::Nothing;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => return Copied::Nothing,
                // Not possible here after all: read and write instead.
                Err(e)
                    if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS))
                        || e.kind() == io::ErrorKind::Unsupported =>
                {
                    pipe.splice = false;
                }
                // The held file takes no more: the rest is read and dropped.
                Err(e) if pipe.holds => self.lost = Some(e),
                Err(e) => return unwritable(pipe, &e, &self.warnings),
            }
        }
        match pipe.from.read(&mut self.buffer[..limit]) {
            Ok(0) => Copied::Done,
            Ok(n) => {
                if let Some(left) = &mut pipe.left {
                    *left -= n.min(*left);
                }
                let data = &self.buffer[..n];
                if let Some(rules) = &self.rules {
                    pipe.scanner.feed(rules, data, seen);
                }
                pipe.passed(data);
                if pipe.dropping {
                    return Copied::Data;
                }
                if pipe.holds {
                    // After a failure nothing more is written: the file
                    // keeps no gap, and the loss is told at the end.
                    if self.lost.is_none()
                        && let Err(e) = pipe.to.write_all_blocking(data)
                    {
                        self.lost = Some(e);
                    }
                    return Copied::Data;
                }
                match write_some(&pipe.to, data) {
                    Ok(written) => {
                        pipe.pending.extend_from_slice(&data[written..]);
                        Copied::Data
                    }
                    Err(e) => unwritable(pipe, &e, &self.warnings),
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Copied::Nothing,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if pipe.left.is_some() {
                    // Nothing more there after all.
                    pipe.left = Some(0);
                }
                Copied::Nothing
            }
            Err(_) => Copied::Done,
        }
    }

    /// Reads the `n` bytes that tee(2) has just passed on, and matches them.
    fn take_teed(&mut self, pipe: &mut Pipe, n: usize, seen: &mut Observed) -> Copied {
        let mut got = 0;
        while got < n {
            match pipe.from.read(&mut self.buffer[got..n]) {
                Ok(0) => break,
                Ok(k) => got += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        if let Some(rules) = &self.rules {
            pipe.scanner.feed(rules, &self.buffer[..got], seen);
        }
        pipe.passed(&self.buffer[..got]);
        Copied::Data
    }

    /// Stops reading: copies what the pipes hold as far as their
    /// destinations take it now, and notes what they still hold, to be
    /// passed on as the destinations take it (without waiting for more).
    /// A pipe with nothing left to pass on is done.
    pub(super) fn sweep(&mut self, pipes: &mut Vec<Pipe>, seen: &mut Observed) {
        pipes.retain_mut(|pipe| {
            // From now on, bytes are read before they are passed on.
            pipe.tee = false;
            pipe.blocked = false;
            // Bounded: a writer faster than backoff would keep it here.
            let mut last = Copied::Data;
            for _ in 0..256 {
                if !pipe.pending.is_empty() {
                    break;
                }
                last = self.copy(pipe, seen);
                if last != Copied::Data {
                    break;
                }
            }
            if last != Copied::Done {
                pipe.left = Some(fd::pipe_bytes(pipe.from.as_fd()));
                if !pipe.emptied() {
                    return true;
                }
            }
            if let Some(rules) = &self.rules {
                pipe.scanner.finish(rules, seen);
            }
            pipe.done();
            false
        });
    }

    /// Reads or flushes the pipes `ready` says can go on, removes those
    /// that are done (and, after the last read, those with nothing left to
    /// write); returns whether output flowed.
    pub(super) fn service(
        &mut self,
        pipes: &mut Vec<Pipe>,
        ready: &[bool],
        reading: bool,
        seen: &mut Observed,
    ) -> bool {
        let mut flowing = false;
        let mut i = pipes.len();
        while i > 0 {
            i -= 1;
            let copied = if !ready[i] {
                Copied::Nothing
            } else if !pipes[i].pending.is_empty() {
                match flush(&mut pipes[i]) {
                    Ok(()) => Copied::Data,
                    Err(e) => unwritable(&mut pipes[i], &e, &self.warnings),
                }
            } else if reading || !pipes[i].emptied() {
                pipes[i].blocked = false;
                self.copy(&mut pipes[i], seen)
            } else {
                Copied::Nothing
            };
            flowing |= copied == Copied::Data;
            if copied == Copied::Done || (!reading && pipes[i].emptied()) {
                if let Some(rules) = &self.rules {
                    pipes[i].scanner.finish(rules, seen);
                }
                pipes[i].done();
                pipes.remove(i);
            }
        }
        flowing
    }
}

/// Writes what `pipe` has pending, as far as its destination takes it
/// without waiting.
fn flush(pipe: &mut Pipe) -> io::Result<()> {
    let written = write_some(&pipe.to, &pipe.pending)?;
    pipe.pending.drain(..written);
    Ok(())
}

/// What becomes of a pipe whose destination failed with `e`. One that is
/// gone (no reader) is closed: that gives the command the SIGPIPE it would
/// have had without backoff. Any other failure (a full disk, an I/O error)
/// is told once, and the rest of the attempt's output on that stream is
/// dropped: the command cannot be given the error, and runs on.
fn unwritable(pipe: &mut Pipe, e: &io::Error, warnings: &Warnings) -> Copied {
    pipe.pending.clear();
    if e.kind() == io::ErrorKind::BrokenPipe {
        return Copied::Done;
    }
    if !pipe.dropping {
        pipe.dropping = true;
        warnings.warn(&format!(
            "cannot write the command's {}: {}; the rest of this attempt's {} is dropped",
            pipe.stream,
            describe(e),
            pipe.stream
        ));
    }
    Copied::Data
}

/// Writes `data` to `to`: all of it, or with a non-blocking `to` as much
/// as it takes without waiting. Returns how many bytes were written.
fn write_some(to: &Out, data: &[u8]) -> io::Result<usize> {
    if !to.nonblocking() {
        return to.write_all_blocking(data).map(|()| data.len());
    }
    let mut written = 0;
    while written < data.len() {
        match to.write_now(&data[written..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => written += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) => return Err(e),
        }
    }
    Ok(written)
}
