//! Descriptor operations std has no word for: non-blocking mode, the size of
//! a pipe, copying between pipes without reading (tee), how many bytes a
//! pipe holds, descriptions of backoff's own of its stdout and stderr,
//! opening a descriptor's file anew read-only, and waiting until a
//! descriptor takes more. Linux-only facilities have a fallback elsewhere.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec, poll};
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

/// A description of backoff's stdout or stderr to write to. A pipe or FIFO is
/// opened anew (a description of backoff's own) so that its writes can be
/// made non-blocking without touching the caller's; anything else is
/// written as it is. Returns whether the writes are non-blocking.
///
/// # Errors
///
/// When the descriptor cannot be duplicated.
pub fn destination(fd: BorrowedFd<'_>) -> io::Result<(File, bool)> {
    let file = File::from(fd.try_clone_to_owned()?);
    #[cfg(target_os = "linux")]
    if std::os::unix::fs::FileTypeExt::is_fifo(&file.metadata()?.file_type()) {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::OpenOptionsExt;
        let path = format!("/proc/self/fd/{}", file.as_raw_fd());
        if let Ok(own) = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
        {
            return Ok((own, true));
        }
    }
    Ok((file, false))
}

/// Waits until `fd` can be written to, at most `timeout`; false if it
/// still cannot then.
pub fn wait_writable(fd: impl AsFd, timeout: Duration) -> bool {
    let timeout = Timespec {
        tv_sec: timeout.as_secs().try_into().unwrap_or(i64::MAX),
        tv_nsec: timeout.subsec_nanos().into(),
    };
    let mut fds = [PollFd::new(&fd, PollFlags::OUT)];
    poll(&mut fds, Some(&timeout)).is_ok_and(|n| n > 0)
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
