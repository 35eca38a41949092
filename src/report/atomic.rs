//! Files backoff writes at exit (`--report`, `--metrics-file`), written so
//! that a reader never sees half of one, and so that nothing but a regular
//! file is ever replaced: a FIFO, a device, a socket, a directory or a
//! symbolic link at the path is refused and left as it is, before the run
//! and again at exit. `/dev/stdout` and
//! `/dev/stderr` name backoff's own streams, which are written through. A
//! file made from its previous content (the metrics) is updated under an
//! exclusive lock, so that concurrent runs lose no update. A file that is
//! appended to (a CI runner's step files) gets the whole of what is
//! appended or none of it.

use std::fs::{File, FileType, OpenOptions, TryLockError};
use std::io::{self, Read, Seek, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::sys::files::{self, StateLock};

/// The most of a previous file that is read (a metrics file of backoff's
/// holds a few KiB): a larger one is not backoff's, and is left alone.
pub const MAX_PREVIOUS: u64 = 1 << 20;

/// The longest backoff waits for the lock on a file it updates while one
/// other process holds it (runs hold it for a few milliseconds); past it,
/// the update is given up.
pub const LOCK_WAIT: Duration = Duration::from_secs(5);

/// The longest pause between two tries for the lock.
const LOCK_RETRY_MAX: Duration = Duration::from_millis(10);

/// backoff's own streams, by the names a user gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// `/dev/stdout`.
    Stdout,
    /// `/dev/stderr`.
    Stderr,
}

impl Stream {
    /// The stream `path` names, if it names one.
    pub fn named(path: &Path) -> Option<Stream> {
        match path.to_str() {
            Some("/dev/stdout") => Some(Stream::Stdout),
            Some("/dev/stderr") => Some(Stream::Stderr),
            _ => None,
        }
    }

    /// Writes `content` to the stream, as it is; a reader that does not
    /// take it within a moment does not hold backoff up (`report::Std`).
    fn write(self, content: &[u8]) -> io::Result<()> {
        match self {
            Stream::Stdout => super::Std::Out.write_all(content),
            Stream::Stderr => super::Std::Err.write_all(content),
        }
    }
}

/// What a file of this type is, for a refusal.
fn kind(t: FileType) -> &'static str {
    if t.is_symlink() {
        "a symbolic link"
    } else if t.is_dir() {
        "a directory"
    } else {
        files::special_kind(t).unwrap_or("not a regular file")
    }
}

/// Why what is at `path` must not be replaced: `None` when there is nothing
/// there, or a regular file. A symbolic link is not followed.
fn refusal(path: &Path) -> io::Result<Option<&'static str>> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() => Ok(None),
        Ok(m) => Ok(Some(kind(m.file_type()))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn refused(why: &str) -> io::Error {
    io::Error::other(format!("it is {why}, not a regular file (left as it is)"))
}

/// Appends `bytes` to `path` in one write (a CI runner's step file),
/// creating it if need be, whole or not at all (`append_whole`). Only what
/// is, or becomes, a regular file is opened: never through a symbolic
/// link, never a device (opening one can act on it), and never waiting for
/// a FIFO's reader.
///
/// # Errors
///
/// `not a regular file` for anything else; or the system's error, which
/// says whether the file was left as it was.
pub fn append(path: &Path, bytes: &[u8]) -> io::Result<()> {
    append_whole(&opened_to_append(path, false)?, bytes)
}

/// Appends what `make` makes of what the file at `path` holds already, in
/// one write, as `append` does: `make` is given the file to read from its
/// start (all of it, however large: it reads it a piece at a time).
///
/// # Errors
///
/// As `append`'s or `make`'s, or the system's error.
pub fn append_after(
    path: &Path,
    make: impl FnOnce(&mut dyn Read) -> io::Result<Vec<u8>>,
) -> io::Result<()> {
    let file = opened_to_append(path, true)?;
    let text = make(&mut &file)?;
    append_whole(&file, &text)
}

/// Appends `bytes` to `file` (opened to append) whole, or leaves it as it
/// was: a reader of a CI runner's step file must not find part of them (a
/// `NAME<<DELIMITER` without its delimiter fails the whole `$GITHUB_OUTPUT`,
/// a table cut in half ends the summary). Room for them is reserved first
/// where the file system can (a full disk then refuses them before any is
/// written); and what a write that failed halfway left (a full disk
/// without reservations, the file size limit) is cut off again, unless
/// another process has written after it meanwhile.
///
/// # Errors
///
/// The system's error, followed by what became of the file.
fn append_whole(file: &File, bytes: &[u8]) -> io::Result<()> {
    let len = file.metadata()?.len();
    if let Err(e) = crate::sys::fd::reserve(file, len, bytes.len() as u64) {
        return Err(with_fate(&e, "left as it was"));
    }
    // Where the bytes written so far start and end in the file (each write
    // goes to the end of the file as it is then), and whether they follow
    // each other there.
    let mut written: Option<(u64, u64)> = None;
    let mut contiguous = true;
    let mut rest = bytes;
    let error = loop {
        if rest.is_empty() {
            return Ok(());
        }
        match (&mut &*file).write(rest) {
            Ok(0) => break io::Error::from(io::ErrorKind::WriteZero),
            Ok(n) => {
                let end = match (&mut &*file).stream_position() {
                    Ok(end) => end,
                    Err(e) => break e,
                };
                let start = end - n as u64;
                written = match written {
                    None => Some((start, end)),
                    Some((first, last)) => {
                        contiguous &= start == last;
                        Some((first, end))
                    }
                };
                rest = &rest[n..];
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => break e,
        }
    };
    let Some((start, end)) = written else {
        return Err(with_fate(&error, "left as it was"));
    };
    let cut = end - start;
    let fate = match file.metadata() {
        Ok(m) if contiguous && m.len() == end => match file.set_len(start) {
            Ok(()) => "left as it was".to_owned(),
            Err(e) => format!("the {cut} bytes written could not be cut off: {e}"),
        },
        Ok(_) => {
            format!("{cut} bytes were written, and another process wrote after them (not cut off)")
        }
        Err(e) => format!("the {cut} bytes written could not be cut off: {e}"),
    };
    Err(with_fate(&error, &fate))
}

/// `e`, followed by what became of the file.
fn with_fate(e: &io::Error, fate: &str) -> io::Error {
    io::Error::new(e.kind(), format!("{e}; {fate}"))
}

/// The regular file `path` opened to append to (and to be read, with
/// `read`), created if need be: never through a symbolic link, never a
/// device (opening one can act on it), never waiting for a FIFO's reader.
fn opened_to_append(path: &Path, read: bool) -> io::Result<File> {
    let not_regular = || io::Error::other("not a regular file");
    if refusal(path)?.is_some() {
        return Err(not_regular());
    }
    let file = files::no_follow(OpenOptions::new().read(read).append(true), 0o666, true)
        .open(path)
        .map_err(|e| {
            // A symbolic link, or a FIFO without a reader, put there since.
            if files::met_special(&e) {
                not_regular()
            } else {
                e
            }
        })?;
    if !file.metadata()?.is_file() {
        return Err(not_regular());
    }
    Ok(file)
}

/// Checks, before anything runs, that `path` can be a file backoff writes
/// at exit: `/dev/stdout`, `/dev/stderr`, or a path in an existing
/// directory where there is nothing yet or a regular file.
///
/// # Errors
///
/// Why not, as the end of a one-line message.
pub fn check(path: &Path) -> Result<(), String> {
    if Stream::named(path).is_some() {
        return Ok(());
    }
    match refusal(path) {
        Ok(None) => Ok(()),
        Ok(Some(why)) => Err(format!(
            "is {why}; backoff writes only regular files, /dev/stdout and /dev/stderr"
        )),
        Err(e) => Err(format!("cannot be checked: {e}")),
    }
}

/// The directory a temporary file for `path` goes in.
fn directory(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Writes `content` to `path`: to backoff's stdout or stderr if it names
/// one, else atomically: into a temporary file in the same directory, then
/// renamed over `path`, so that a reader sees the old file or the new one,
/// never half of one. Only a regular file is replaced. The file is
/// readable by everyone (a metrics collector usually runs as another user).
///
/// # Errors
///
/// When the directory cannot be written, the rename fails, or something
/// other than a regular file is at `path`.
pub fn write(path: &Path, content: &[u8]) -> io::Result<()> {
    if let Some(stream) = Stream::named(path) {
        return stream.write(content);
    }
    // The temporary file's name is no part of an error: the user gave
    // `path`, and the file is removed when this returns.
    let tmp = tempfile::Builder::new()
        .prefix(".backoff-")
        .tempfile_in(directory(path))
        .map_err(without_path)?;
    tmp.as_file().write_all(content)?;
    files::readable_by_all(tmp.as_file())?;
    tmp.as_file().sync_all()?;
    // The path may have changed since the run began: look again, as late
    // as can be. (rename(2) would replace a FIFO or a device node.)
    if let Some(why) = refusal(path)? {
        return Err(refused(why));
    }
    // std's rename, not the temporary file's own: on Windows it replaces
    // a file that is open (the one an update holds locked, one a reader
    // has open) as rename(2) does, where MoveFileEx fails.
    let tmp = tmp.into_temp_path();
    std::fs::rename(&tmp, path)?;
    // Nothing is left at the temporary path to remove.
    let _ = tmp.keep();
    Ok(())
}

/// `e` without the path the tempfile crate adds to its errors (`… at
/// path "/dir/.backoff-DbExOZ"`): the system's error alone.
fn without_path(e: io::Error) -> io::Error {
    let code = e
        .get_ref()
        .and_then(std::error::Error::source)
        .and_then(|inner| inner.downcast_ref::<io::Error>())
        .and_then(io::Error::raw_os_error);
    match code {
        Some(code) => io::Error::from_raw_os_error(code),
        None => e,
    }
}

/// Replaces the regular file `path` with what `change` makes of its
/// previous content, under an exclusive lock on that file, so that
/// concurrent updates follow one another and none is lost: lock, read,
/// write a temporary file, rename it over the file, unlock. A file that is
/// not there yet is created empty to be locked. The previous content is
/// read up to `MAX_PREVIOUS` bytes.
///
/// `wait(d)` pauses up to `d` while another process holds the lock, and
/// returns why to stop waiting, when something does (a signal, the run's
/// time running out); the wait also ends when one process has held the
/// lock for `LOCK_WAIT`.
///
/// # Errors
///
/// When something other than a regular file is at `path`, the previous
/// content is too large, the lock was not had in time, or a write fails.
pub fn update(
    path: &Path,
    change: impl FnOnce(&str) -> String,
    wait: &mut dyn FnMut(Duration) -> Result<(), String>,
) -> io::Result<()> {
    let Some(suffix) = files::LOCK_BESIDE else {
        let locked = lock(path, wait)?;
        let previous = read_bounded(&locked)?;
        write(path, change(&previous).as_bytes())?;
        // The lock is released when `locked` is closed, after the rename.
        drop(locked);
        return Ok(());
    };
    // Where a file that is open cannot be replaced (Windows without
    // POSIX renames: Wine, FAT, network drives), the lock is on a file of
    // its own beside it, and the file is closed again before the rename.
    let mut beside = path.as_os_str().to_owned();
    beside.push(suffix);
    let locked = lock(Path::new(&beside), wait)?;
    if let Some(why) = refusal(path)? {
        return Err(refused(why));
    }
    let previous = match files::no_follow(OpenOptions::new().read(true), 0o644, false).open(path) {
        Ok(file) => read_bounded(&file)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    write(path, change(&previous).as_bytes())?;
    drop(locked);
    Ok(())
}

/// Opens the regular file `path` (created empty if need be), locked: the
/// file the path names once the lock is had, since a process that held
/// the lock before may have renamed another file over it meanwhile.
fn lock(path: &Path, wait: &mut dyn FnMut(Duration) -> Result<(), String>) -> io::Result<File> {
    // Reset whenever another run has finished its update: what is bounded
    // is how long one holder keeps the lock, not how long a queue of runs
    // takes (each holds it for a few milliseconds, but an fsync on a busy
    // disk can take much longer).
    let mut deadline = Instant::now() + LOCK_WAIT;
    let mut pause = Duration::from_millis(1);
    loop {
        // Not opened at all unless it looks like a regular file: opening a
        // device can act on it.
        if let Some(why) = refusal(path)? {
            return Err(refused(why));
        }
        // Read-only, as the file is only read and locked through this
        // descriptor (replacing it needs the directory, not the file, to
        // be writable); O_CREAT without write access is no std option.
        let file = files::no_follow(OpenOptions::new().read(true), 0o644, true)
            .open(path)
            .map_err(|e| {
                if files::met_link(&e) {
                    refused("a symbolic link")
                } else {
                    e
                }
            })?;
        let opened = file.metadata()?;
        if !opened.is_file() {
            return Err(refused(kind(opened.file_type())));
        }
        // flock(2) has no descriptor to wait on, and blocking in it would
        // hold off signals: try, and pause briefly between tries.
        loop {
            match file.try_state_lock() {
                Ok(()) => break,
                Err(TryLockError::WouldBlock) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(io::Error::other(format!(
                            "another process has held its lock for {}s (not updated)",
                            LOCK_WAIT.as_secs()
                        )));
                    }
                    if let Err(why) = wait(pause.min(left)) {
                        return Err(io::Error::other(format!(
                            "{why} while waiting for its lock (not updated)"
                        )));
                    }
                    pause = (pause * 2).min(LOCK_RETRY_MAX);
                }
                Err(TryLockError::Error(e)) => return Err(e),
            }
        }
        match files::names(path, &file) {
            Ok(Some(true)) => return Ok(file),
            Err(e) => return Err(e),
            // Replaced or removed meanwhile, by a run that has finished its
            // update: lock what is there now.
            _ => deadline = Instant::now() + LOCK_WAIT,
        }
    }
}

/// Reads `file`, which must be a regular file of at most `MAX_PREVIOUS`
/// bytes.
fn read_bounded(file: &File) -> io::Result<String> {
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(refused(kind(meta.file_type())));
    }
    let mut bytes = Vec::new();
    file.take(MAX_PREVIOUS + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_PREVIOUS {
        return Err(io::Error::other(format!(
            "it holds more than {} KiB, which no file of backoff's does (left as it is)",
            MAX_PREVIOUS >> 10
        )));
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_two_streams_are_named_by_their_paths() {
        assert_eq!(
            Stream::named(Path::new("/dev/stdout")),
            Some(Stream::Stdout)
        );
        assert_eq!(
            Stream::named(Path::new("/dev/stderr")),
            Some(Stream::Stderr)
        );
        for other in ["/dev/stdin", "/dev/fd/1", "stdout", "-", "/dev/stdout/"] {
            assert_eq!(Stream::named(Path::new(other)), None, "{other}");
        }
    }

    // The lock on the file itself (Windows locks a file beside it).
    #[cfg(unix)]
    #[test]
    fn an_update_that_waited_builds_on_the_file_the_lock_holder_renamed_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.prom");
        std::fs::write(&path, "old").unwrap();
        let holder = File::open(&path).unwrap();
        holder.state_lock().unwrap();
        // While the update waits, the holder renames a new file over the
        // path and lets go of the lock.
        let mut holder = Some(holder);
        let mut waits = 0;
        let mut wait = |_: Duration| {
            waits += 1;
            if let Some(holder) = holder.take() {
                let new = dir.path().join("new");
                std::fs::write(&new, "new").unwrap();
                std::fs::rename(&new, &path).unwrap();
                drop(holder);
            }
            Ok(())
        };
        update(&path, |previous| format!("{previous}+1"), &mut wait).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new+1");
        assert_eq!(waits, 1);
    }
}
