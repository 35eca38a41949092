//! Data held in unlinked temporary files, so that its size never costs
//! memory: stdin read once for `--replay-stdin`, and the stdout of each
//! attempt for `--hold-stdout`, written out when the run ends. Both need
//! room in the temporary directory: all of stdin for the whole run, the
//! whole stdout of one attempt at a time.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::fd::AsFd;
use std::os::unix::fs::PermissionsExt;
use std::time::Instant;

use crate::exec::{RealExecutor, describe};
use crate::run::Released;
use crate::sys::fd;
use crate::sys::signals::SignalWatch;

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
/// size (a generic copy would use 8 KiB ones), as fast as the reader takes
/// it. A reader that quits (EPIPE) ends the copy, as it would end the
/// command; so do a terminating signal and, for a reader that does not
/// keep up, `deadline`: what stdout has not taken by then is dropped. A
/// held file that cannot be read, or a stdout that fails otherwise (a full
/// disk), is data lost.
pub fn write_out(
    held: &mut File,
    buffer: &mut [u8],
    watch: &mut SignalWatch,
    deadline: Option<Instant>,
) -> Released {
    let lost = |e: &io::Error| {
        Released::Lost(format!(
            "cannot write all of the held stdout: {}",
            describe(e)
        ))
    };
    let Ok(out) = fd::Out::new(io::stdout().as_fd()) else {
        return Released::All;
    };
    let size = match held.seek(SeekFrom::End(0)).and_then(|end| {
        held.seek(SeekFrom::Start(0))?;
        Ok(end)
    }) {
        Ok(size) => size,
        Err(e) => return lost(&e),
    };
    let mut written = 0u64;
    loop {
        let n = match held.read(buffer) {
            Ok(0) => return Released::All,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return lost(&e),
        };
        let mut data = &buffer[..n];
        while !data.is_empty() {
            match out.write_now(data) {
                Ok(0) => return lost(&io::ErrorKind::WriteZero.into()),
                Ok(took) => {
                    data = &data[took..];
                    written += took as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Released::All,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return Released::Late(size.saturating_sub(written));
                    }
                    // The reader is behind: wait for room, a signal or the
                    // deadline.
                    let (signals, _) = watch.wait_io(deadline, &[(out.as_fd(), true)]);
                    if let Some(sig) = RealExecutor::pending_termination(signals) {
                        return Released::Interrupted(sig);
                    }
                }
                Err(e) => return lost(&e),
            }
        }
    }
}
