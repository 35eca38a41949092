//! Data held in unlinked temporary files, so that its size never costs
//! memory: stdin read once for `--replay-stdin`, and the stdout of each
//! attempt for `--hold-stdout`, written out when the run ends. Both need
//! room in the temporary directory: all of stdin for the whole run, the
//! whole stdout of one attempt at a time.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::PermissionsExt;

use crate::sys::fd;

/// Stdin, read once for `--replay-stdin`, in an unlinked temporary file
/// that attempts can only read.
pub struct Replayed {
    /// A read-only description of the file, whose mode is 0400.
    file: File,
}

/// Reads all of stdin into an unlinked temporary file, for `--replay-stdin`.
///
/// # Errors
///
/// When the file cannot be created or written, or stdin cannot be read.
pub fn spool_stdin() -> io::Result<Replayed> {
    // The file is named only until a read-only description of it is open:
    // that description, not the one that writes, is what attempts get.
    let (mut writer, path) = tempfile::NamedTempFile::new()?.into_parts();
    let file = File::open(&path)?;
    drop(path);
    let mut stdin = io::stdin().lock();
    match io::copy(&mut stdin, &mut writer) {
        Ok(_) => {}
        // A closed stdin is an empty one.
        Err(e) if e.raw_os_error() == Some(libc::EBADF) => {}
        Err(e) => return Err(e),
    }
    // Read-only for its owner too, so that an attempt cannot open it anew
    // for writing either (through /proc/self/fd/0); a file system without
    // modes leaves that to the read-only descriptors alone.
    let _ = file.set_permissions(std::fs::Permissions::from_mode(0o400));
    Ok(Replayed { file })
}

impl Replayed {
    /// The stdin of one attempt: the whole input, read-only (a write to it
    /// fails with EBADF). On Linux it is a description of its own, opened
    /// anew, so that what an earlier attempt (or a process it left behind)
    /// reads does not move this one's offset; elsewhere, the read-only
    /// description, set back to the start.
    ///
    /// # Errors
    ///
    /// When the file cannot be opened or set back to its start.
    pub fn for_attempt(&mut self) -> io::Result<File> {
        if let Ok(own) = fd::reopen_read_only(self.file.as_fd()) {
            return Ok(own);
        }
        self.file.seek(SeekFrom::Start(0))?;
        self.file.try_clone()
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
/// size (a generic copy would use 8 KiB ones). A closed stdout takes
/// nothing, and a reader that quits (EPIPE) ends the copy, as it would end
/// the command.
///
/// # Errors
///
/// When the held file cannot be read or stdout fails otherwise (a full
/// disk): then not all of it was written.
pub fn write_out(held: &mut File, buffer: &mut [u8]) -> io::Result<()> {
    let Ok(mut out) = io::stdout().as_fd().try_clone_to_owned().map(File::from) else {
        return Ok(());
    };
    held.seek(SeekFrom::Start(0))?;
    loop {
        let n = match held.read(buffer) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        match out.write_all(&buffer[..n]) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}
