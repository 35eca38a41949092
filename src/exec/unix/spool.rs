//! Data held outside backoff's memory, so that its size never costs
//! backoff's resident memory: stdin read once for `--replay-stdin`, and
//! the stdout of each attempt for `--hold-stdout`, written out when the
//! run ends. Replayed stdin up to `IN_MEMORY` is a sealed file in memory
//! where the system has them (Linux); more, or elsewhere, is an unlinked
//! temporary file, as held stdout always is. Both need room in the
//! temporary directory then: all of stdin for the whole run, the whole
//! stdout of one attempt at a time.

use std::fs::{File, FileTimes};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::fd::AsFd;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::time::{Instant, SystemTime};

use super::RealExecutor;
use crate::exec::describe;
use crate::run::Released;
use crate::sys::fd;
use crate::sys::memfd;
use crate::sys::signals::SignalWatch;

/// The most replayed stdin kept in a sealed file in memory: memory that is
/// not backoff's own (it is never mapped), but memory all the same, so
/// more spills to a temporary file.
const IN_MEMORY: u64 = 4 << 20;

/// Why an attempt is not run when an earlier one changed the replayed
/// input.
const CHANGED: &str = "the input replayed by --replay-stdin was changed by an earlier attempt";

/// Stdin, read once for `--replay-stdin`, in a file that attempts can only
/// read.
pub struct Replayed {
    /// A sealed file in memory, or a read-only description of an unlinked
    /// temporary file whose mode is 0400.
    file: File,
    /// For a temporary file, which its owner can make writable again and
    /// root can write anyway: its size and times once it was written, which
    /// any change of it changes. None for a sealed file, which nothing can
    /// change.
    written: Option<Stamp>,
}

/// What tells that a file was changed: a write changes its modification
/// time (set by backoff to a fixed past time, so that a write within the
/// clock's tick is told too), a change of its mode its change time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    size: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

impl Stamp {
    fn of(file: &File) -> io::Result<Stamp> {
        let m = file.metadata()?;
        Ok(Stamp {
            size: m.size(),
            modified: (m.mtime(), m.mtime_nsec()),
            changed: (m.ctime(), m.ctime_nsec()),
        })
    }
}

/// Copies `from` to its end into `to`; a closed stdin (EBADF) is an empty
/// one.
fn read_into(from: &mut impl Read, to: &mut File) -> io::Result<()> {
    match io::copy(from, to) {
        Err(e) if e.raw_os_error() != Some(libc::EBADF) => Err(e),
        _ => Ok(()),
    }
}

/// Reads all of stdin, for `--replay-stdin`: into a sealed file in memory
/// when it fits in `IN_MEMORY` and the system has them, else into an
/// unlinked temporary file.
///
/// # Errors
///
/// When the file cannot be created or written, or stdin cannot be read.
pub fn spool_stdin() -> io::Result<Replayed> {
    let mut stdin = io::stdin().lock();
    let mut head = None;
    if let Ok(mut memory) = memfd::create("backoff-stdin") {
        read_into(&mut (&mut stdin).take(IN_MEMORY + 1), &mut memory)?;
        if memory.metadata()?.len() <= IN_MEMORY && memfd::seal(&memory).is_ok() {
            return Ok(Replayed {
                file: memory,
                written: None,
            });
        }
        memory.seek(SeekFrom::Start(0))?;
        head = Some(memory);
    }
    // The file is named only until a read-only description of it is open:
    // that description, not the one that writes, is what attempts get.
    let (mut writer, path) = tempfile::NamedTempFile::new()?.into_parts();
    let file = File::open(&path)?;
    drop(path);
    if let Some(mut head) = head {
        io::copy(&mut head, &mut writer)?;
    }
    read_into(&mut stdin, &mut writer)?;
    // A time no write can give it; and read-only for its owner too, so that
    // an attempt cannot open it anew for writing either (through
    // /proc/self/fd/0) without changing its mode first. A file system
    // without times or modes leaves that to the read-only descriptors.
    let _ = writer.set_times(FileTimes::new().set_modified(SystemTime::UNIX_EPOCH));
    let _ = file.set_permissions(std::fs::Permissions::from_mode(0o400));
    let written = Some(Stamp::of(&file)?);
    Ok(Replayed { file, written })
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
    /// When the input is not what was read any more (`CHANGED`: an
    /// earlier attempt changed the temporary file), or the file cannot be
    /// opened or set back to its start.
    pub fn for_attempt(&mut self) -> io::Result<File> {
        if let Some(written) = self.written
            && Stamp::of(&self.file)? != written
        {
            return Err(io::Error::other(CHANGED));
        }
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
