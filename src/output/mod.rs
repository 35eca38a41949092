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
    /// chunk where it came; `cut` is told the bytes left out between the
    /// head and the tail, at their place. Returns the error that stopped the
    /// temporary files from keeping the rest, if one did. Stops the
    /// capture first, if that is not done; the output is written once.
    pub fn write_out(&mut self, cut: &mut dyn FnMut(u64)) -> Option<String> {
        self.stop();
        let mut kept = self
            .passing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .kept
            .take()?;
        // backoff's own stdout and stderr again, written as its own lines
        // are: a reader that does not read holds it up `STALL` at most.
        let std_of = |stream| match stream {
            Stream::Out => crate::report::Std::Out,
            Stream::Err => crate::report::Std::Err,
        };
        // Whether the last byte written ended a line: the line that tells
        // of a cut starts one of its own.
        let ended = std::cell::Cell::new(true);
        // A stream whose reader has gone (`| head`) takes no more; the
        // other one still gets its part.
        let gone = std::cell::Cell::new((false, false));
        let _ = kept.replay(
            &mut |stream, data| {
                let (out_gone, err_gone) = gone.get();
                if (stream == Stream::Out && out_gone) || (stream == Stream::Err && err_gone) {
                    return Ok(());
                }
                ended.set(data.last().is_none_or(|&b| b == b'\n'));
                if let Err(e) = std_of(stream).write_all(data)
                    && e.kind() == io::ErrorKind::BrokenPipe
                {
                    gone.set(match stream {
                        Stream::Out => (true, err_gone),
                        Stream::Err => (out_gone, true),
                    });
                }
                Ok(())
            },
            &mut |n| {
                if !ended.get() {
                    let _ = crate::report::Std::Err.write_all(b"\n");
                }
                cut(n);
                Ok(())
            },
        );
        kept.failure().map(ToString::to_string)
    }
}

impl Drop for Capture {
    /// A capture dropped with its output still kept (a panic, an early
    /// return) writes it out: nothing the run printed is lost.
    fn drop(&mut self) {
        self.write_out(&mut |cut| {
            crate::report::say(&format!("{} of output cut here", crate::report::bytes(cut)));
        });
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
