//! Descriptor operations std has no word for: non-blocking mode, the size of
//! a pipe, copying between pipes without reading (tee), and how many bytes a
//! pipe holds. Linux-only facilities have a fallback elsewhere.

use std::io;
use std::os::fd::AsFd;

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
