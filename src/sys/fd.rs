//! Descriptor operations std has no word for: non-blocking mode, the size of
//! a pipe, copying between pipes without reading (tee), how many bytes a
//! pipe holds, waiting for one descriptor, and opening a directory and a
//! file in it without following a symbolic link. Linux-only facilities have a fallback elsewhere.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::fs::{Mode, OFlags, fcntl_getfl, fcntl_setfl};

/// Makes reads and writes of `fd` (a descriptor backoff owns alone) return at
/// once instead of waiting.
///
/// # Errors
///
/// When `fcntl` fails.
pub fn set_nonblocking(fd: impl AsFd) -> io::Result<()> {
    let flags = fcntl_getfl(&fd)?;
    fcntl_setfl(&fd, flags | OFlags::NONBLOCK)?;
    Ok(())
}

/// Asks for a pipe of `size` bytes (Linux only). A pipe keeps its size when
/// that is refused, as it is beyond `/proc/sys/fs/pipe-max-size` or the
/// user's quota of pipe buffers.
pub fn enlarge_pipe(fd: impl AsFd, size: usize) {
    #[cfg(target_os = "linux")]
    let _ = rustix::pipe::fcntl_setpipe_size(fd, size);
    #[cfg(not(target_os = "linux"))]
    let _ = (fd, size);
}

/// Duplicates up to `len` bytes from the pipe `from` into the pipe `to`
/// without consuming them or waiting, with tee(2); returns how many.
///
/// # Errors
///
/// `WouldBlock` when `from` is empty or `to` full; `BrokenPipe` when `to`
/// has no reader; `Unsupported` where tee(2) does not exist.
pub fn tee(from: impl AsFd, to: impl AsFd, len: usize) -> io::Result<usize> {
    #[cfg(target_os = "linux")]
    {
        Ok(rustix::pipe::tee(
            from,
            to,
            len,
            rustix::pipe::SpliceFlags::NONBLOCK,
        )?)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (from, to, len);
        Err(io::ErrorKind::Unsupported.into())
    }
}

/// How many bytes the pipe `fd` holds (0 when that cannot be told).
pub fn pipe_bytes(fd: impl AsFd) -> usize {
    rustix::io::ioctl_fionread(fd).map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX))
}

/// Waits until `fd` can be read (an end of file or an error counts) or
/// `deadline` passes; without `fd`, until the deadline. Returns whether `fd`
/// is ready. A signal does not shorten the wait: this is for a process that
/// leaves signals their default action, which ends it.
pub fn wait_readable(fd: Option<BorrowedFd<'_>>, deadline: Instant) -> bool {
    loop {
        // One round waits a day at most, as `SignalWatch::wait_io` does.
        let left = deadline
            .saturating_duration_since(Instant::now())
            .min(Duration::from_hours(24));
        let timeout = Timespec {
            tv_sec: left.as_secs().try_into().unwrap_or(i64::MAX),
            tv_nsec: left.subsec_nanos().into(),
        };
        let mut fds: Vec<PollFd<'_>> = fd
            .iter()
            .map(|&f| PollFd::from_borrowed_fd(f, PollFlags::IN))
            .collect();
        let _ = poll(&mut fds, Some(&timeout));
        if fds.first().is_some_and(|p| !p.revents().is_empty()) {
            return true;
        }
        if left.is_zero() {
            return false;
        }
    }
}

/// Opens the directory `path` to look at it and to open files in it, without
/// following a symbolic link in its last component.
///
/// # Errors
///
/// As open(2): `ELOOP` or `ENOTDIR` when it is a symbolic link or not a
/// directory, `ENOENT` when it does not exist.
pub fn open_dir(path: &Path) -> io::Result<File> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd: OwnedFd = rustix::fs::open(path, flags, Mode::empty())?;
    Ok(File::from(fd))
}

/// Opens the file `name` of the directory `dir` for reading, and for writing
/// too with `write`, creating it (mode 0600) with `create`; never through a
/// symbolic link, and never waiting (a FIFO does not block the open).
///
/// # Errors
///
/// As openat(2): `ELOOP` when it is a symbolic link, `ENOENT` when it does
/// not exist and is not to be created.
pub fn open_in(dir: &File, name: &str, write: bool, create: bool) -> io::Result<File> {
    let mut flags = OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY;
    flags |= if write { OFlags::RDWR } else { OFlags::RDONLY };
    if create {
        flags |= OFlags::CREATE;
    }
    let fd: OwnedFd = rustix::fs::openat(dir, name, flags, Mode::from_raw_mode(0o600))?;
    Ok(File::from(fd))
}
