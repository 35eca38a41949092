//! Data held in unlinked temporary files, so that its size never costs
//! memory: stdin read once for `--replay-stdin`, and the stdout of each
//! attempt for `--hold-stdout`, written out when the run ends.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::fd::AsFd;
use std::time::Instant;

use crate::exec::RealExecutor;
use crate::exec::copy::write_some;
use crate::run::Released;
use crate::sys::fd::destination;
use crate::sys::signals::SignalWatch;

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

/// Empties the held stdout file for the next attempt.
///
/// # Errors
///
/// When the file cannot be truncated.
pub fn clear(held: &mut File) -> io::Result<()> {
    held.set_len(0)?;
    held.seek(SeekFrom::Start(0))?;
    Ok(())
}

/// Writes what `held` holds to backoff's stdout, in blocks of `buffer`'s
/// size (a generic copy would use 8 KiB ones), as fast as the reader takes
/// it. A stdout that is gone ends the copy (as it would end `cat`'s); so
/// do a terminating signal and, for a reader that does not keep up,
/// `deadline`: what stdout has not taken by then is dropped.
pub fn write_out(
    held: &mut File,
    buffer: &mut [u8],
    watch: &mut SignalWatch,
    deadline: Option<Instant>,
) -> Released {
    let Ok((mut out, nonblocking)) = destination(io::stdout().as_fd()) else {
        return Released::All;
    };
    let (Ok(size), Ok(_)) = (
        held.metadata().map(|m| m.len()),
        held.seek(SeekFrom::Start(0)),
    ) else {
        return Released::All;
    };
    let mut written = 0u64;
    loop {
        let n = match held.read(buffer) {
            Ok(0) | Err(_) => return Released::All,
            Ok(n) => n,
        };
        let mut data = &buffer[..n];
        loop {
            let Some(took) = write_some(&mut out, nonblocking, data) else {
                return Released::All;
            };
            data = &data[took..];
            written += took as u64;
            if data.is_empty() {
                break;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Released::Late(size.saturating_sub(written));
            }
            // The reader is behind: wait for room, a signal or the deadline.
            let (signals, _) = watch.wait_io(deadline, &[(out.as_fd(), true)]);
            if let Some(sig) = RealExecutor::pending_termination(signals) {
                return Released::Interrupted(sig);
            }
        }
    }
}
