//! Data held in temporary files on Windows: backoff's stdin, read once and
//! given to every attempt from its start (`--replay-stdin`), and the stdout
//! of the attempt that ends the run (`--hold-stdout`).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};

use crate::exec::describe;
use crate::run::Released;
use crate::sys::fd::{self, Out};

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
        fd::reopen_read(&self.0)
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

/// Writes what `held` holds to backoff's stdout. A reader that quits ends
/// the copy; a held file that cannot be read, or a stdout that fails
/// otherwise (a full disk), is data lost.
pub(super) fn write_out(held: &mut File) -> Released {
    let lost = |e: &io::Error| {
        Released::Lost(format!(
            "cannot write all of the held stdout: {}",
            describe(e)
        ))
    };
    let Ok(out) = Out::stdout() else {
        return Released::All;
    };
    if let Err(e) = held.seek(SeekFrom::Start(0)) {
        return lost(&e);
    }
    let mut buffer = vec![0; 64 * 1024];
    loop {
        match held.read(&mut buffer) {
            Ok(0) => return Released::All,
            Ok(n) => match out.write_all_blocking(&buffer[..n]) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Released::All,
                Err(e) => return lost(&e),
            },
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return lost(&e),
        }
    }
}
