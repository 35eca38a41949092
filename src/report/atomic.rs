//! Files backoff writes at exit (`--report`, `--metrics-file`), written so
//! that a reader never sees half of one, and so that nothing but a regular
//! file is ever replaced: a FIFO, a device, a socket, a directory or a
//! symbolic link at the path is refused and left as it is, before the run
//! and again at exit. `/dev/stdout` and `/dev/stderr` name backoff's own
//! streams, which are written through.

use std::fs::{File, FileType, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The most of a previous file that is read (a metrics file of backoff's
/// holds a few KiB): a larger one is not backoff's, and is left alone.
pub const MAX_PREVIOUS: u64 = 1 << 20;

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

    /// Writes `content` to the stream, as it is.
    fn write(self, content: &[u8]) -> io::Result<()> {
        match self {
            Stream::Stdout => {
                let mut out = io::stdout().lock();
                out.write_all(content)?;
                out.flush()
            }
            Stream::Stderr => io::stderr().lock().write_all(content),
        }
    }
}

/// What a file of this type is, for a refusal.
fn kind(t: FileType) -> &'static str {
    if t.is_symlink() {
        "a symbolic link"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
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
    use std::os::unix::fs::PermissionsExt;
    if let Some(stream) = Stream::named(path) {
        return stream.write(content);
    }
    let mut tmp = tempfile::Builder::new()
        .prefix(".backoff-")
        .tempfile_in(directory(path))?;
    tmp.write_all(content)?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    tmp.as_file().sync_all()?;
    // The path may have changed since the run began: look again, as late
    // as can be. (rename(2) would replace a FIFO or a device node.)
    if let Some(why) = refusal(path)? {
        return Err(refused(why));
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Reads what `path` holds now, if it is a regular file: `None` when there
/// is nothing there. It is opened without following a symbolic link and
/// without waiting (a FIFO would block an open), checked to be a regular
/// file once open, and read up to `MAX_PREVIOUS` bytes.
///
/// # Errors
///
/// When something other than a regular file is there, it holds more than
/// `MAX_PREVIOUS` bytes, or it cannot be read.
pub fn read_previous(path: &Path) -> io::Result<Option<String>> {
    // Not opened at all unless it looks like a regular file: opening a
    // device can act on it.
    if let Some(why) = refusal(path)? {
        return Err(refused(why));
    }
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(refused("a symbolic link"));
        }
        Err(e) => return Err(e),
    };
    read_bounded(&file).map(Some)
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
}
