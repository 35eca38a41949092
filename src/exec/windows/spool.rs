//! Data held in temporary files on Windows: backoff's stdin, read once and
//! given to every attempt from its start (`--replay-stdin`), and the stdout
//! of the attempt that ends the run (`--hold-stdout`), written out by the
//! run's deadline.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::exec::describe;
use crate::run::Released;
use crate::signal::is_terminating;
use crate::sys::fd::{self, Out};
use crate::sys::signals::SignalWatch;

/// backoff's stdin, kept in a temporary file that the system removes when
/// the last handle to it closes (backoff's, and its attempts'), however
/// backoff ends.
pub struct Replayed(File);

/// Reads all of backoff's stdin into a temporary file.
///
/// # Errors
///
/// When the file cannot be made or written, or stdin read.
pub fn spool_stdin() -> io::Result<Replayed> {
    let mut file = fd::temporary_file()?;
    io::copy(&mut io::stdin().lock(), &mut file)?;
    Ok(Replayed(file))
}

impl Replayed {
    /// The input for one attempt: the file opened anew (a position of its
    /// own), from its start.
    ///
    /// # Errors
    ///
    /// When it cannot be opened.
    pub(super) fn for_attempt(&self) -> io::Result<File> {
        crate::sys::files::reopen_read(&self.0)
    }
}

/// Empties the held stdout file for the next attempt.
///
/// # Errors
///
/// When the file cannot be truncated.
pub(super) fn clear(held: &mut File) -> io::Result<()> {
    held.set_len(0)?;
    held.seek(SeekFrom::Start(0))?;
    Ok(())
}

/// Writes what `held` holds to backoff's stdout, from a thread of its
/// own, while `watch` waits for it: a reader that quits ends the copy; a
/// terminating event, or `deadline` for a reader that does not keep up,
/// ends the wait, and what stdout has not taken then is dropped (the
/// thread, blocked in its write, is left behind). A held file that cannot
/// be read, or a stdout that fails otherwise (a full disk), is data lost.
pub(super) fn write_out(
    held: &mut File,
    watch: &mut SignalWatch,
    deadline: Option<Instant>,
) -> Released {
    let lost = |e: &io::Error| {
        Released::Lost(format!(
            "cannot write all of the held stdout: {}",
            describe(e)
        ))
    };
    let Ok(out) = Out::stdout() else {
        return Released::All;
    };
    let (size, mut file) = match held
        .seek(SeekFrom::End(0))
        .and_then(|size| Ok((size, held.try_clone()?)))
    {
        Ok(got) => got,
        Err(e) => return lost(&e),
    };
    if let Err(e) = file.seek(SeekFrom::Start(0)) {
        return lost(&e);
    }
    let written = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (done, ended) = std::sync::mpsc::channel();
    let waker = watch.waker().ok();
    let (counted, stopped) = (Arc::clone(&written), Arc::clone(&stop));
    let copying = std::thread::Builder::new()
        .name("held stdout".into())
        .spawn(move || {
            let _ = done.send(copy(&mut file, &out, &counted, &stopped));
            if let Some(waker) = waker {
                waker.wake();
            }
        });
    if let Err(e) = copying {
        return lost(&e);
    }
    loop {
        if let Ok(result) = ended.try_recv() {
            return match result {
                Ok(()) => Released::All,
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Released::All,
                Err(e) => lost(&e),
            };
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            // Nothing more is written once the write under way is done.
            stop.store(true, Ordering::SeqCst);
            return Released::Late(size.saturating_sub(written.load(Ordering::SeqCst)));
        }
        // The thread wakes the wait when it is done; a second is the
        // longest this looks again without it.
        let look_again = Instant::now().checked_add(Duration::from_secs(1));
        let got = watch.wait([deadline, look_again].into_iter().flatten().min());
        if let Some(sig) = got.into_iter().find(|&s| is_terminating(s)) {
            stop.store(true, Ordering::SeqCst);
            return Released::Interrupted(sig);
        }
    }
}

/// Copies `file` to `out`, counting the bytes written into `written`,
/// until the end or `stop`.
fn copy(file: &mut File, out: &Out, written: &AtomicU64, stop: &AtomicBool) -> io::Result<()> {
    let mut buffer = vec![0; 64 * 1024];
    while !stop.load(Ordering::SeqCst) {
        match file.read(&mut buffer) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                out.write_all_blocking(&buffer[..n])?;
                written.fetch_add(n as u64, Ordering::SeqCst);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
