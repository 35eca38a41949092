//! The real executor: spawns the command (no shell, its own process group),
//! waits for it, for signals and for its time limit in one event-driven wait,
//! passes signals on, and decodes how it ended. Policy decisions are not made
//! here.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::{Duration, Instant, SystemTime};

use libc::c_int;

pub mod scan;

use crate::classify::{Observed, Outcome, Status};
use crate::run::{AttemptSpec, Ended, Executor};
use crate::signal::TERMINATING;
use crate::sys::signals::{self, SignalWatch};
use crate::sys::spawn::{self, Launch, Program};
use scan::{LineScanner, OutputRules, retry_after_delay};

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

/// How long backoff keeps reading the command's output after the command
/// exited while no more comes: a process it left behind may hold the pipe
/// open forever.
const DRAIN: Duration = Duration::from_millis(500);

/// The longest backoff reads output after the command exited, however much
/// keeps coming.
const DRAIN_MAX: Duration = Duration::from_secs(10);

/// Bytes read from the command's output at a time: enough to make few
/// reads, few enough to stay in the CPU's cache while they are matched and
/// written.
const CHUNK: usize = 256 * 1024;

/// The capacity asked for the pipe that carries the command's stdout (four
/// times Linux's default): the larger the pipe, the fewer times the command
/// and backoff wait for each other. Every page of it counts against the
/// user's quota of pipe buffers, used or not, so it stays modest, and
/// stderr keeps the default.
const PIPE_SIZE: usize = 256 * 1024;

/// Where one captured stream of the command goes.
struct Pipe {
    from: File,
    to: File,
    /// Whether writes to `to` return at once when it is full.
    to_nonblocking: bool,
    /// Bytes read but not yet written: while there are some, the pipe is
    /// not read, so a slow reader downstream slows the command down as it
    /// would without backoff, but never backoff's own clock.
    pending: Vec<u8>,
    /// Whether output is passed on with tee(2) (Linux, `to` a pipe): the
    /// kernel puts it into `to` without copying it, and only then is it
    /// read, to be matched.
    tee: bool,
    /// With `tee`: output waits in `from` for room in `to`.
    blocked: bool,
    /// Once reading has stopped: how many of the bytes that were in `from`
    /// then are still to be passed on. They are taken only as `to` takes
    /// them; what comes later is not waited for.
    left: Option<usize>,
    scanner: LineScanner,
}

impl Pipe {
    /// Whether the pipe waits for room in its destination.
    fn waiting(&self) -> bool {
        self.blocked || !self.pending.is_empty()
    }

    /// Whether everything read, and everything left to read after reading
    /// stopped, has been passed on.
    fn emptied(&self) -> bool {
        !self.waiting() && self.left.unwrap_or(0) == 0
    }
}

/// Where copied output goes: backoff's stdout or stderr. A pipe or FIFO is
/// opened anew (a description of backoff's own) so that its writes can be
/// made non-blocking without touching the caller's; anything else is
/// written as it is.
fn destination(fd: BorrowedFd<'_>) -> io::Result<(File, bool)> {
    let file = File::from(fd.try_clone_to_owned()?);
    #[cfg(target_os = "linux")]
    if std::os::unix::fs::FileTypeExt::is_fifo(&file.metadata()?.file_type()) {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::OpenOptionsExt;
        let path = format!("/proc/self/fd/{}", file.as_raw_fd());
        if let Ok(own) = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
        {
            return Ok((own, true));
        }
    }
    Ok((file, false))
}

/// Runs attempts of one command for real.
pub struct RealExecutor {
    program: Program,
    options: Options,
    watch: SignalWatch,
    /// The process group of the last attempt, if processes of it outlived
    /// the command itself.
    lingering: Option<u32>,
    /// What to look for in the output; the output is piped through backoff
    /// only when this is set.
    rules: Option<OutputRules>,
    /// `--replay-stdin`: every attempt reads this file from its start.
    stdin: Option<File>,
    /// `--hold-stdout`: the current attempt's stdout.
    held: Option<File>,
    buffer: Vec<u8>,
}

/// What one read of a pipe did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Copied {
    /// Copied some bytes.
    Data,
    /// Nothing there for now.
    Nothing,
    /// The pipe is done: at its end, or its destination is gone.
    Done,
}

/// What happened while waiting for a child.
struct Waited {
    status: ExitStatus,
    /// The first terminating signal backoff received meanwhile.
    interrupted: Option<c_int>,
    /// Whether the attempt ran past its limit.
    timed_out: bool,
    /// What its output showed.
    seen: Observed,
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
            program: Program::new(command),
            options,
            watch,
            lingering: None,
            rules,
            stdin,
            held,
            buffer: Vec::new(),
        })
    }

    /// Starts an attempt; returns its pid and the pipes of its output, if
    /// output rules need to see it.
    fn spawn(&mut self, spec: &AttemptSpec) -> io::Result<(u32, Vec<Pipe>)> {
        let env = [
            ("BACKOFF_ATTEMPT", Some(spec.number.to_string())),
            (
                "BACKOFF_MAX_ATTEMPTS",
                Some(spec.max_attempts.map(|m| m.to_string()).unwrap_or_default()),
            ),
            ("BACKOFF_LAST_STATUS", spec.last.map(Outcome::env_value)),
        ];
        if let Some(input) = &mut self.stdin {
            input.seek(SeekFrom::Start(0))?;
        }
        if let Some(held) = &mut self.held {
            held.set_len(0)?;
            held.seek(SeekFrom::Start(0))?;
        }
        let mut pipes = Vec::new();
        let mut ends = Vec::new();
        if self.rules.is_some() {
            let to_stdout = match &self.held {
                Some(held) => (held.try_clone()?, false),
                None => destination(io::stdout().as_fd())?,
            };
            let to_stderr = destination(io::stderr().as_fd())?;
            for (stream, (to, to_nonblocking)) in [to_stdout, to_stderr].into_iter().enumerate() {
                let (from, end) = io::pipe()?;
                let from = OwnedFd::from(from);
                spawn::set_nonblocking(from.as_fd())?;
                if stream == 0 {
                    spawn::enlarge_pipe(from.as_fd(), PIPE_SIZE);
                }
                pipes.push(Pipe {
                    from: File::from(from),
                    to,
                    to_nonblocking,
                    pending: Vec::new(),
                    // Only a pipe opened anew can take tee's non-blocking
                    // writes.
                    tee: to_nonblocking && cfg!(target_os = "linux"),
                    blocked: false,
                    left: None,
                    scanner: LineScanner::default(),
                });
                ends.push(OwnedFd::from(end));
            }
        }
        let stdout = match (ends.first(), &self.held) {
            (Some(end), _) => Some(end.as_fd()),
            // Nothing to match: the command writes straight into the file.
            (None, Some(held)) => Some(held.as_fd()),
            (None, None) => None,
        };
        let pid = self.program.launch(&Launch {
            env: &env,
            own_group: !self.options.foreground,
            stdio: [
                self.stdin.as_ref().map(AsFd::as_fd),
                stdout,
                ends.get(1).map(AsFd::as_fd),
            ],
        })?;
        // The write ends now belong to the command alone: dropping them
        // here lets the pipes end when it (and what it started) is done.
        drop(ends);
        Ok((pid, pipes))
    }

    /// Copies what one pipe has to offer (its read end never blocks).
    fn copy(&mut self, pipe: &mut Pipe, seen: &mut Observed) -> Copied {
        if self.buffer.len() < CHUNK {
            self.buffer.resize(CHUNK, 0);
        }
        if pipe.tee {
            match spawn::tee(pipe.from.as_fd(), pipe.to.as_fd(), CHUNK) {
                // The end, or (when other writers share the destination) a
                // destination found full too late to say so.
                Ok(0) => {
                    if spawn::pipe_bytes(pipe.from.as_fd()) == 0 {
                        return Copied::Done;
                    }
                    pipe.blocked = true;
                    return Copied::Nothing;
                }
                Ok(n) => return self.take_teed(pipe, n, seen),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    // Either nothing came, or the destination is full.
                    pipe.blocked = spawn::pipe_bytes(pipe.from.as_fd()) > 0;
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
                match write_some(&mut pipe.to, pipe.to_nonblocking, data) {
                    Some(written) => {
                        pipe.pending.extend_from_slice(&data[written..]);
                        Copied::Data
                    }
                    // The destination is gone: closing the pipe gives the
                    // command the SIGPIPE it would have had without backoff.
                    None => Copied::Done,
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
        Copied::Data
    }

    /// Stops reading: copies what the pipes hold as far as their
    /// destinations take it now, and notes what they still hold, to be
    /// passed on as the destinations take it (without waiting for more).
    /// A pipe with nothing left to pass on is done.
    fn sweep(&mut self, pipes: &mut Vec<Pipe>, seen: &mut Observed) {
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
                pipe.left = Some(spawn::pipe_bytes(pipe.from.as_fd()));
                if !pipe.emptied() {
                    return true;
                }
            }
            if let Some(rules) = &self.rules {
                pipe.scanner.finish(rules, seen);
            }
            false
        });
    }

    /// Sends `sig` to the running child: to its whole process group, or to
    /// the child alone with `--foreground`. Only called before the child is
    /// reaped, so its pid cannot have been reused.
    fn forward(&self, pid: u32, sig: c_int) {
        let _ = if self.options.foreground {
            signals::signal_process(pid, sig)
        } else {
            signals::signal_group(pid, sig)
        };
    }

    /// Waits for the child to end, passing signals on, copying and matching
    /// its output, and enforcing its time limit meanwhile.
    fn wait(&mut self, pid: u32, mut pipes: Vec<Pipe>, limit: Option<Duration>) -> Waited {
        let mut interrupted: Option<c_int> = None;
        let mut timeout_at = limit.and_then(|l| Instant::now().checked_add(l));
        let mut kill_at: Option<Instant> = None;
        let mut timed_out = false;
        let mut seen = Observed::default();
        let mut exited: Option<ExitStatus> = None;
        // After the exit: when reading stops (no data for DRAIN), and when
        // it stops whatever comes.
        let mut drain_until = None;
        let mut drain_end = None;
        let mut reading = true;
        // The child's end is looked for at first and after each signal
        // (SIGCHLD among them), not after every read of its output.
        let mut check = true;
        loop {
            if exited.is_none() && std::mem::take(&mut check) {
                let status = match spawn::try_wait(pid) {
                    Ok(status) => status,
                    // ECHILD cannot happen (SIGCHLD is handled, not
                    // ignored); if it did, waiting longer would never end.
                    Err(_) => Some(ExitStatus::from_raw(127 << 8)),
                };
                if let Some(status) = status {
                    let now = Instant::now();
                    exited = Some(status);
                    drain_until = now.checked_add(DRAIN);
                    drain_end = now.checked_add(DRAIN_MAX);
                }
            }
            if let Some(status) = exited {
                // A signal that interrupted the run does not wait for more.
                if reading
                    && (pipes.is_empty()
                        || interrupted.is_some()
                        || drain_until.is_some_and(|d| Instant::now() >= d))
                {
                    reading = false;
                    self.sweep(&mut pipes, &mut seen);
                }
                // Done when everything read is written, or when a signal
                // says not to wait for a reader that does not read.
                if !reading && (pipes.is_empty() || interrupted.is_some()) {
                    return Waited {
                        status,
                        interrupted,
                        timed_out,
                        seen,
                    };
                }
            }
            let running = exited.is_none();
            // Time limits apply to a running command only.
            let wake = if running {
                [timeout_at, kill_at].into_iter().flatten().min()
            } else if reading {
                drain_until
            } else {
                None
            };
            // A pipe with bytes to write waits for its destination, and is
            // not read meanwhile.
            let watched: Vec<(BorrowedFd<'_>, bool)> = pipes
                .iter()
                .map(|p| {
                    // After reading stopped, every pipe left waits for its
                    // destination.
                    if p.waiting() || !reading {
                        (p.to.as_fd(), true)
                    } else {
                        (p.from.as_fd(), false)
                    }
                })
                .collect();
            let (signals, ready) = self.watch.wait_io(wake, &watched);
            drop(watched);
            // Any signal, not only SIGCHLD: a signal that found the
            // self-pipe full is lost, but then others were read here.
            check = !signals.is_empty();
            self.on_signals(pid, running, signals, &mut interrupted);
            let flowing = self.service(&mut pipes, &ready, reading, &mut seen);
            if flowing && !running && reading {
                // Output still flows: keep reading, up to DRAIN_MAX.
                drain_until = Instant::now().checked_add(DRAIN).min(drain_end);
            }
            let now = Instant::now();
            if running && timeout_at.is_some_and(|t| now >= t) {
                timeout_at = None;
                timed_out = true;
                let sig = self.options.timeout_signal;
                self.forward(pid, sig);
                if sig != libc::SIGKILL {
                    // A stopped command could not act on the signal.
                    if sig != libc::SIGCONT {
                        self.forward(pid, libc::SIGCONT);
                    }
                    kill_at = Some(now.checked_add(self.options.kill_after).unwrap_or(now));
                }
            }
            if running && kill_at.is_some_and(|k| now >= k) {
                kill_at = None;
                self.forward(pid, libc::SIGKILL);
            }
        }
    }

    /// Acts on signals received during an attempt: the first terminating
    /// one is passed on, a second kills the group; job control is passed on.
    /// Once the child is reaped its pid may be reused: then nothing is sent.
    fn on_signals(
        &self,
        pid: u32,
        running: bool,
        signals: Vec<c_int>,
        interrupted: &mut Option<c_int>,
    ) {
        for sig in signals {
            match sig {
                s if TERMINATING.contains(&s) => {
                    let send = if interrupted.is_some() {
                        // A second signal: no more patience.
                        libc::SIGKILL
                    } else {
                        *interrupted = Some(s);
                        s
                    };
                    if running {
                        self.forward(pid, send);
                    }
                }
                libc::SIGTSTP => {
                    if running {
                        self.forward(pid, libc::SIGTSTP);
                    }
                    signals::stop_self();
                }
                libc::SIGCONT if running => self.forward(pid, libc::SIGCONT),
                _ => {}
            }
        }
    }

    /// Reads or flushes the pipes `ready` says can go on, removes those
    /// that are done (and, after the last read, those with nothing left to
    /// write); returns whether output flowed.
    fn service(
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
                if flush(&mut pipes[i]) {
                    Copied::Data
                } else {
                    Copied::Done
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
                pipes.remove(i);
            }
        }
        flowing
    }

    /// The first terminating signal among those pending; job-control signals
    /// are acted on meanwhile.
    fn pending_termination(pending: Vec<c_int>) -> Option<c_int> {
        let mut found = None;
        for sig in pending {
            match sig {
                s if TERMINATING.contains(&s) => {
                    found = found.or(Some(s));
                }
                libc::SIGTSTP => signals::stop_self(),
                _ => {}
            }
        }
        found
    }
}

/// Writes what `pipe` has pending, as far as its destination takes it
/// without waiting; false when the destination is gone.
fn flush(pipe: &mut Pipe) -> bool {
    if let Some(written) = write_some(&mut pipe.to, pipe.to_nonblocking, &pipe.pending) {
        pipe.pending.drain(..written);
        true
    } else {
        pipe.pending.clear();
        false
    }
}

/// Writes `data` to `to`: all of it, or with a non-blocking `to` as much
/// as it takes without waiting. Returns how many bytes were written, or
/// None when the destination is gone.
fn write_some(to: &mut File, nonblocking: bool, data: &[u8]) -> Option<usize> {
    if !nonblocking {
        return to.write_all(data).is_ok().then_some(data.len());
    }
    let mut written = 0;
    while written < data.len() {
        match to.write(&data[written..]) {
            Ok(0) => return None,
            Ok(n) => written += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(_) => return None,
        }
    }
    Some(written)
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

impl Executor for RealExecutor {
    fn attempt(&mut self, spec: &AttemptSpec) -> Ended {
        // A signal that came between the delay and now: start nothing.
        if let Some(sig) = Self::pending_termination(self.watch.pending()) {
            return Ended::Interrupted(sig, None);
        }
        let (pid, pipes) = match self.spawn(spec) {
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
        let mut waited = self.wait(pid, pipes, spec.limit);
        waited.seen.hint = waited
            .seen
            .retry_after
            .as_deref()
            .and_then(|v| retry_after_delay(v, SystemTime::now()));
        self.lingering = None;
        if !self.options.foreground && signals::group_exists(pid) {
            if waited.interrupted.is_some() || waited.timed_out {
                // The attempt was ended by backoff: leave nothing of it.
                let _ = signals::signal_group(pid, libc::SIGKILL);
            } else {
                self.lingering = Some(pid);
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
        // The stdout of the attempt that ended the run, at last, in large
        // blocks (a generic copy would use 8 KiB ones).
        let Some(held) = &mut self.held else {
            return;
        };
        let Ok(mut out) = io::stdout().as_fd().try_clone_to_owned().map(File::from) else {
            return;
        };
        if held.seek(SeekFrom::Start(0)).is_err() {
            return;
        }
        self.buffer.resize(CHUNK.max(self.buffer.len()), 0);
        loop {
            match held.read(&mut self.buffer) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if out.write_all(&self.buffer[..n]).is_err() {
                        break;
                    }
                }
            }
        }
    }
}

/// Reads all of stdin into an unlinked temporary file, for `--replay-stdin`.
///
/// # Errors
///
/// When the file cannot be created or written, or stdin cannot be read.
pub fn spool_stdin() -> io::Result<File> {
    let mut file = tempfile::tempfile()?;
    let mut stdin = io::stdin().lock();
    match io::copy(&mut stdin, &mut file) {
        Ok(_) => Ok(file),
        // A closed stdin is an empty one.
        Err(e) if e.raw_os_error() == Some(libc::EBADF) => Ok(file),
        Err(e) => Err(e),
    }
}
