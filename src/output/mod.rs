//! What becomes of the run's output: `--output live` passes it on as it
//! comes (the command writes to backoff's own stdout and stderr);
//! `--output on-failure` keeps it (`kept`) and writes it out only when the
//! run does not succeed, as chronic does for cron; and a check-in
//! (`--ping`) that sends the end of the output has it pass through
//! backoff, which keeps its last bytes.
//!
//! Capturing makes pipes backoff's stdout and stderr (descriptors 1 and 2),
//! so that everything written there during the run, by the command, its
//! hooks and backoff itself, arrives on them in order; a thread reads them
//! as they fill. When backoff's stdout and stderr were one file (`2>&1`,
//! cron's mail), one pipe carries both and the kernel keeps their order;
//! else a pipe each, read in the order their bytes come. The descriptors
//! are given back before the run's files (`--report`, metrics) are written.

pub mod kept;

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Write};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use crate::sys::fd;
use kept::{Kept, Stream};

/// How long the end of the capture waits for output still being passed on
/// to a reader that does not take it (as `report::Std` waits).
const STALL: std::time::Duration = std::time::Duration::from_secs(2);

/// `--output`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Passed on as it comes.
    Live,
    /// Kept, and written out only when the run does not succeed.
    #[value(name = "on-failure")]
    OnFailure,
}

/// What passes through backoff while the output is captured.
struct Passing {
    /// `--output on-failure`: all of it, within its limit.
    kept: Option<Kept>,
    /// The last `tail` bytes since the last mark, for a check-in.
    last: VecDeque<u8>,
    /// How many bytes `last` keeps.
    tail: usize,
    /// How many bytes since the last mark `last` no longer holds.
    forgotten: u64,
    /// `--output live`: what is read and still to be passed on, which the
    /// reading thread writes out once it lets go of the lock (a reader that
    /// does not read holds up that thread alone, never a mark).
    live: Option<Vec<(Stream, Vec<u8>)>>,
}

impl Passing {
    fn take(&mut self, stream: Stream, data: &[u8]) {
        if let Some(kept) = &mut self.kept {
            kept.take(stream, data);
        }
        if let Some(backlog) = &mut self.live {
            backlog.push((stream, data.to_vec()));
        }
        self.remember(data);
    }

    /// Keeps `data` in the last `tail` bytes, for a check-in.
    fn remember(&mut self, data: &[u8]) {
        let drop = (self.last.len() + data.len()).saturating_sub(self.tail);
        self.last.drain(..drop.min(self.last.len()));
        let from = data.len().saturating_sub(self.tail);
        self.last.extend(&data[from..]);
        self.forgotten = self
            .forgotten
            .saturating_add(u64::try_from(drop).unwrap_or(u64::MAX));
    }
}

/// backoff's stdout and stderr as they were before the capture.
#[derive(Clone)]
struct Targets {
    out: Arc<File>,
    err: Arc<File>,
}

impl Targets {
    fn of(&self, stream: Stream) -> &File {
        match stream {
            Stream::Out => &self.out,
            Stream::Err => &self.err,
        }
    }
}

/// The run's output while it passes through backoff.
pub struct Capture {
    targets: Targets,
    passing: Arc<Mutex<Passing>>,
    /// The pipes' read ends, and the stream each carries.
    pipes: Arc<Vec<(File, Stream)>>,
    /// Written to by `stop` (`STOP`) and by a mark that left output to
    /// pass on (`WAKE`): the reading thread polls it beside the pipes.
    control: Arc<File>,
    /// The reading thread, and what tells that it has ended.
    reader: Option<(JoinHandle<()>, std::sync::mpsc::Receiver<()>)>,
}

impl Capture {
    /// Captures backoff's stdout and stderr: kept within `keep` bytes
    /// (`--output on-failure`), or passed on live (`None`), the last
    /// `tail` bytes kept for a check-in either way.
    ///
    /// # Errors
    ///
    /// When the pipes, the temporary files or the thread cannot be made;
    /// then nothing has changed.
    pub fn start(keep: Option<u64>, tail: usize) -> io::Result<Capture> {
        let targets = Targets {
            out: Arc::new(fd::dup_stdout()?),
            err: Arc::new(fd::dup_stderr()?),
        };
        let kept = keep.map(Kept::new).transpose()?;
        let one = fd::same_file(&targets.out, &targets.err);
        let (err_read, err_write) = fd::pipe()?;
        let mut reads = vec![(err_read, Stream::Err)];
        let out_write = if one {
            err_write.try_clone()?
        } else {
            let (out_read, out_write) = fd::pipe()?;
            reads.insert(0, (out_read, Stream::Out));
            out_write
        };
        for (read, _) in &reads {
            fd::set_nonblocking(read)?;
            fd::enlarge_pipe(read, 256 * 1024);
        }
        let (control_read, control_write) = fd::pipe()?;
        fd::set_nonblocking(&control_read)?;
        let control = Arc::new(control_write);
        let passing = Arc::new(Mutex::new(Passing {
            kept,
            last: VecDeque::new(),
            tail,
            forgotten: 0,
            live: keep.is_none().then(Vec::new),
        }));
        let shared = Arc::clone(&passing);
        let pipes = Arc::new(reads);
        let theirs = Arc::clone(&pipes);
        let live = keep.is_none().then(|| targets.clone());
        let (finished, ended) = std::sync::mpsc::channel::<()>();
        let reader = std::thread::Builder::new()
            .name("output".into())
            .spawn(move || {
                pump(&theirs, &control_read, &shared, live.as_ref());
                let _ = finished.send(());
            })?;
        if keep.is_some() {
            // What no output mode hides goes to stderr as it is now, and
            // into the end of the output a check-in sends.
            let tail = Arc::clone(&passing);
            crate::report::keep_alerts_on_stderr(Box::new(move |line| {
                tail.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remember(line);
            }));
        }
        if let Err(e) = fd::redirect_std(&out_write, &err_write) {
            // Back as they were, whichever was changed.
            let _ = fd::redirect_std(&targets.out, &targets.err);
            crate::report::alerts_follow_stderr();
            let _ = (&*control).write_all(STOP);
            let _ = reader.join();
            return Err(e);
        }
        crate::report::std_changed();
        Ok(Capture {
            targets,
            passing,
            pipes,
            control,
            reader: Some((reader, ended)),
        })
    }

    /// What marks where the output of an attempt starts, for its tail.
    pub fn marker(&self) -> Marker {
        Marker {
            passing: Arc::clone(&self.passing),
            pipes: Arc::clone(&self.pipes),
            control: Arc::clone(&self.control),
        }
    }

    /// Gives backoff its stdout and stderr back, and takes what was still
    /// on its way. What processes left running write later is not read.
    ///
    /// A reader of backoff's stdout or stderr that does not read holds up
    /// the thread that passes the output on live: it is waited for
    /// `STALL` at most, as backoff's own lines are, then left behind.
    pub fn stop(&mut self) {
        let Some((reader, ended)) = self.reader.take() else {
            return;
        };
        let _ = fd::redirect_std(&self.targets.out, &self.targets.err);
        crate::report::std_changed();
        crate::report::alerts_follow_stderr();
        let _ = (&*self.control).write_all(STOP);
        if ended.recv_timeout(STALL).is_ok() {
            let _ = reader.join();
        }
    }

    /// Stops the capture, and forgets the output kept.
    pub fn discard(&mut self) {
        self.stop();
        self.passing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .kept
            .take();
    }

    /// Writes the kept output out on backoff's stdout and stderr, each
    /// chunk where it came, however late its reader takes it: `room` is
    /// called to wait while a reader is behind, and says when to give up
    /// (a deadline, a signal). Where some output was left out, the line
    /// `line` makes of the cut's message goes to stderr at its place.
    /// Returns what could not be written, and why. Stops the capture
    /// first, if that is not done; the output is written once.
    pub fn write_out(
        &mut self,
        line: &dyn Fn(&str) -> String,
        room: &mut dyn FnMut(&fd::Out) -> Room,
    ) -> Delivery {
        self.stop();
        let Some(mut kept) = self
            .passing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .kept
            .take()
        else {
            return Delivery::default();
        };
        // Both the output and the lines of its cuts go through it.
        let writer = std::cell::RefCell::new(Writer {
            outs: [fd::Out::stdout().ok(), fd::Out::stderr().ok()],
            states: [State::Open, State::Open],
            room,
            ended: [true, true],
            given: 0,
            stop: None,
        });
        let _ = kept.replay(
            &mut |stream, data| {
                let mut writer = writer.borrow_mut();
                writer.given += data.len() as u64;
                writer.write(stream, data)
            },
            &mut |cut| writer.borrow_mut().say(line(&cut.message()).as_bytes()),
        );
        writer.into_inner().delivery(kept.kept())
    }
}

/// Whether a reader that is behind may still be waited for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Room {
    /// There may be room now: write again.
    Ready,
    /// The time to write is up.
    Late,
    /// A terminating signal came.
    Signal(i32),
}

/// What became of the kept output once written out.
#[derive(Debug, Default)]
pub struct Delivery {
    /// The terminating signal that ended the writing, and the bytes not
    /// written then.
    pub interrupted: Option<(i32, u64)>,
    /// The streams that took no more in time, and the bytes of them not
    /// written.
    pub late: Vec<(Stream, u64)>,
    /// A stream that failed (a full disk), why, and the bytes of it not
    /// written.
    pub failed: Vec<(Stream, io::Error, u64)>,
    /// Whether the last byte written to stderr left a line unfinished:
    /// the lines that follow start one of their own.
    pub unfinished: bool,
}

impl Delivery {
    /// The lines that say what could not be written, and why.
    pub fn messages(&self) -> Vec<String> {
        let name = |stream| match stream {
            Stream::Out => "stdout",
            Stream::Err => "stderr",
        };
        let mut lines: Vec<String> = self
            .failed
            .iter()
            .map(|(stream, why, bytes)| {
                format!(
                    "cannot write {} of the kept output to {}: {}",
                    crate::report::text::plural(*bytes, "byte"),
                    name(*stream),
                    crate::classify::describe(why)
                )
            })
            .collect();
        if !self.late.is_empty() {
            let names: Vec<&str> = self.late.iter().map(|(s, _)| name(*s)).collect();
            let bytes = self.late.iter().map(|(_, n)| n).sum();
            lines.push(format!(
                "{} took no more of the kept output before the time limit; the last {} of it were not written",
                names.join(" and "),
                crate::report::text::plural(bytes, "byte")
            ));
        }
        if let Some((sig, bytes)) = self.interrupted {
            lines.push(format!(
                "interrupted by {} while writing the kept output; the last {} of it were not written",
                crate::signal::full_name(sig),
                crate::report::text::plural(bytes, "byte")
            ));
        }
        lines
    }

    /// Says `messages` with `say`, the first on a line of its own.
    pub fn tell(&self, say: &crate::report::Warnings) {
        for (i, message) in self.messages().iter().enumerate() {
            if i == 0 && self.unfinished {
                say.warn_on_a_line_of_its_own(message);
            } else {
                say.warn(message);
            }
        }
    }

    /// The terminating signal that ended the writing, if one did.
    pub fn signal(&self) -> Option<i32> {
        self.interrupted.map(|(sig, _)| sig)
    }
}

/// What has become of a stream while the kept output is written.
enum State {
    Open,
    /// Its reader went away (`| head`): it takes no more, as the command's
    /// own writes would end there, and that is no error.
    Gone,
    /// A write failed: why, and the bytes not written since.
    Failed(io::Error, u64),
    /// Its reader took no more in time: the bytes not written since.
    Late(u64),
}

/// Writes the kept output to backoff's stdout and stderr.
struct Writer<'a> {
    /// Where each stream goes (`None`: closed, or no descriptor to spare).
    outs: [Option<fd::Out>; 2],
    states: [State; 2],
    room: &'a mut dyn FnMut(&fd::Out) -> Room,
    /// Whether the last byte written to each stream (stdout, stderr)
    /// ended a line: the line that tells of a cut starts one of its own on
    /// stderr, whatever stdout's last line was.
    ended: [bool; 2],
    /// Bytes of the output given to be written so far (not the lines
    /// that tell of a cut).
    given: u64,
    /// The terminating signal that stopped it, and the bytes given to it
    /// but not written then.
    stop: Option<(i32, u64)>,
}

impl Writer<'_> {
    /// Writes `data` to `stream`, waiting for room as `room` allows. An
    /// error ends the replay once the writing has stopped.
    fn write(&mut self, stream: Stream, data: &[u8]) -> io::Result<()> {
        if self.stop.is_some() {
            return Err(io::ErrorKind::Interrupted.into());
        }
        let i = usize::from(stream == Stream::Err);
        let state = &mut self.states[i];
        let Some(out) = self.outs[i].as_ref() else {
            return Ok(());
        };
        match state {
            State::Open => {}
            State::Gone => return Ok(()),
            State::Failed(_, lost) | State::Late(lost) => {
                *lost += data.len() as u64;
                return Ok(());
            }
        }
        let mut rest = data;
        while !rest.is_empty() {
            match out.write_now(rest) {
                Ok(0) => {
                    *state = State::Failed(io::ErrorKind::WriteZero.into(), rest.len() as u64);
                    return Ok(());
                }
                Ok(n) => {
                    self.ended[i] = rest[n - 1] == b'\n';
                    rest = &rest[n..];
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                    *state = State::Gone;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => match (self.room)(out) {
                    Room::Ready => {}
                    // The other stream may still take its part.
                    Room::Late => {
                        *state = State::Late(rest.len() as u64);
                        return Ok(());
                    }
                    Room::Signal(sig) => {
                        self.stop = Some((sig, rest.len() as u64));
                        return Err(io::ErrorKind::Interrupted.into());
                    }
                },
                Err(e) => {
                    *state = State::Failed(e, rest.len() as u64);
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Writes `line` to stderr, on a line of its own. It is not output of
    /// the run's: if the writing stops in it, no byte of it is counted.
    fn say(&mut self, line: &[u8]) -> io::Result<()> {
        if self.stop.is_some() {
            return Err(io::ErrorKind::Interrupted.into());
        }
        if !matches!(self.states[1], State::Open) {
            return Ok(());
        }
        let written = if self.ended[1] {
            self.write(Stream::Err, line)
        } else {
            self.write(Stream::Err, b"\n")
                .and_then(|()| self.write(Stream::Err, line))
        };
        if let Some((_, rest)) = &mut self.stop {
            *rest = 0;
        }
        if let State::Failed(_, lost) | State::Late(lost) = &mut self.states[1] {
            *lost = 0;
        }
        written
    }

    /// What became of the output, `kept` bytes in all.
    fn delivery(self, kept: u64) -> Delivery {
        let interrupted = self
            .stop
            .map(|(sig, rest)| (sig, rest + kept.saturating_sub(self.given)));
        let mut delivery = Delivery {
            interrupted,
            unfinished: !self.ended[1],
            ..Delivery::default()
        };
        for (stream, state) in [Stream::Out, Stream::Err].into_iter().zip(self.states) {
            match state {
                State::Failed(why, lost) => delivery.failed.push((stream, why, lost)),
                State::Late(lost) => delivery.late.push((stream, lost)),
                State::Open | State::Gone => {}
            }
        }
        delivery
    }
}

impl Drop for Capture {
    /// A capture dropped with its output still kept (a panic, an early
    /// return) writes it out, waiting `STALL` at most for a reader that
    /// is behind: nothing the run printed is lost.
    fn drop(&mut self) {
        let say = crate::report::Warnings::default();
        let delivery = self.write_out(&|message| say.line(message), &mut patiently);
        delivery.tell(&say);
    }
}

/// Waits `STALL` at most for room in `out`: for a writer that has no
/// deadline nor signals to heed.
pub fn patiently(out: &fd::Out) -> Room {
    if out.wait_writable(std::time::Instant::now() + STALL) {
        Room::Ready
    } else {
        Room::Late
    }
}

/// Marks where an attempt's output starts: the tail a check-in sends is
/// what came since the last mark.
#[derive(Clone)]
pub struct Marker {
    passing: Arc<Mutex<Passing>>,
    pipes: Arc<Vec<(File, Stream)>>,
    control: Arc<File>,
}

impl Marker {
    /// Takes what the pipes hold now (written before the mark), then
    /// forgets the tail kept so far.
    pub fn mark(&self) {
        let mut passing = self.passing.lock().unwrap_or_else(PoisonError::into_inner);
        let mut buffer = vec![0; 64 * 1024];
        for (read, stream) in self.pipes.iter() {
            drain(read, *stream, &mut buffer, &mut passing);
        }
        passing.last.clear();
        passing.forgotten = 0;
        // What it read is passed on by the reading thread.
        if passing.live.as_ref().is_some_and(|b| !b.is_empty()) {
            let _ = (&*self.control).write_all(WAKE);
        }
    }

    /// The output since the last mark, at most its last `tail` bytes, and
    /// how many bytes came before those.
    pub fn tail(&self) -> (Vec<u8>, u64) {
        let passing = self.passing.lock().unwrap_or_else(PoisonError::into_inner);
        (passing.last.iter().copied().collect(), passing.forgotten)
    }
}

/// What `Capture::stop` writes to the control pipe: the reading thread
/// takes what the pipes still hold, passes it on, and ends.
const STOP: &[u8] = b"x";

/// What a mark writes to the control pipe when it left output to pass on.
const WAKE: &[u8] = b"w";

/// Reads the pipes until `STOP` comes on `control`, then what they still
/// hold; with `live`, passes what it read on there, outside the lock.
fn pump(
    pipes: &[(File, Stream)],
    control: &File,
    passing: &Mutex<Passing>,
    live: Option<&Targets>,
) {
    let mut buffer = vec![0; 64 * 1024];
    let mut open: Vec<usize> = (0..pipes.len()).collect();
    loop {
        let mut files: Vec<&File> = open.iter().map(|&i| &pipes[i].0).collect();
        files.push(control);
        let ready = fd::readable(&files);
        let stopping = ready.last().copied().unwrap_or(false) && {
            let mut said = [0u8; 64];
            let mut stop = false;
            while let Ok(n @ 1..) = fd::read_now(control, &mut said) {
                stop |= said[..n].contains(&STOP[0]);
            }
            stop
        };
        let mut still = Vec::with_capacity(open.len());
        for (k, &i) in open.iter().enumerate() {
            let (read, stream) = &pipes[i];
            if !(stopping || ready[k]) || {
                let mut passing = passing.lock().unwrap_or_else(PoisonError::into_inner);
                drain(read, *stream, &mut buffer, &mut passing)
            } {
                still.push(i);
            }
        }
        open = still;
        if let Some(targets) = live {
            let backlog = passing
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .live
                .as_mut()
                .map(std::mem::take)
                .unwrap_or_default();
            for (stream, data) in backlog {
                // A reader gone or a full disk: the command runs on, as it
                // would with its output unread.
                let _ = targets.of(stream).write_all(&data);
            }
        }
        if stopping || open.is_empty() {
            return;
        }
    }
}

/// Reads `read` until it has nothing more for now, into `passing` (whose
/// lock the caller holds, so that a mark falls between two reads); returns
/// whether it is still open.
fn drain(read: &File, stream: Stream, buffer: &mut [u8], passing: &mut Passing) -> bool {
    loop {
        match fd::read_now(read, buffer) {
            Ok(0) => return false,
            Ok(n) => passing.take(stream, &buffer[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(_) => return false,
        }
    }
}
