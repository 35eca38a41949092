//! Data held in unlinked temporary files, so that its size never costs
//! memory: stdin read once for `--replay-stdin`, and the stdout of each
//! attempt for `--hold-stdout`, written out when the run ends.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::fd::AsFd;

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
/// size (a generic copy would use 8 KiB ones). A stdout that stops taking
/// it ends the copy.
pub fn write_out(held: &mut File, buffer: &mut [u8]) {
    let Ok(mut out) = io::stdout().as_fd().try_clone_to_owned().map(File::from) else {
        return;
    };
    if held.seek(SeekFrom::Start(0)).is_err() {
        return;
    }
    loop {
        match held.read(buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if out.write_all(&buffer[..n]).is_err() {
                    break;
                }
            }
        }
    }
}
