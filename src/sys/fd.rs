//! Descriptor operations std has no word for: non-blocking mode, the size of
//! a pipe, copying between pipes without reading (tee), how many bytes a
//! pipe holds, and opening a descriptor's file anew. Linux-only facilities
//! have a fallback elsewhere.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};

use rustix::fs::{OFlags, fcntl_getfl, fcntl_setfl};

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

/// Opens the file behind `fd` anew, read-only (Linux, through
/// `/proc/self/fd`, which also reaches an unlinked file): a description of
/// its own, with its own offset, that cannot write even where `fd` can.
///
/// # Errors
///
/// When the open fails, or (elsewhere than on Linux) `Unsupported`.
pub fn reopen_read_only(fd: BorrowedFd<'_>) -> io::Result<File> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_CLOEXEC)
            .open(format!("/proc/self/fd/{}", fd.as_raw_fd()))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = fd;
        Err(io::ErrorKind::Unsupported.into())
    }
}
