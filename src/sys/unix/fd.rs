//! Descriptor operations std has no word for: non-blocking mode, the size of
//! a pipe, copying between pipes without reading (tee), how many bytes a
//! pipe holds, descriptions of backoff's own of its stdout and stderr,
//! opening a descriptor's file anew read-only, waiting for one descriptor,
//! opening a directory and a file in it without following a symbolic
//! link, and reserving room at the end of a file. Linux-only facilities
//! have a fallback elsewhere.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::fs::{Mode, OFlags, fcntl_getfl, fcntl_setfl};

/// The variable that names the directory for temporary files: `TMPDIR`.
pub const TEMP_VARIABLE: &str = "TMPDIR";

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

/// Whether backoff's stderr is a terminal on which backoff's process
/// group is in the foreground, or not a terminal at all.
pub fn stderr_in_foreground() -> bool {
    in_foreground(io::stderr().as_fd())
}

/// The terminal of backoff's stderr, written through `to` (backoff's own
/// writer to its stderr), for the status line.
pub fn term_on_stderr<W>(to: W) -> console::Term
where
    W: io::Write + std::fmt::Debug + Send + 'static,
{
    console::Term::read_write_pair(io::stdin(), OnStderr(to))
}

/// A writer to backoff's stderr that says which descriptor it writes to,
/// for the terminal library, which asks the terminal its size.
#[derive(Debug)]
struct OnStderr<W>(W);

impl<W: io::Write> io::Write for OnStderr<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl<W> std::os::fd::AsRawFd for OnStderr<W> {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        libc::STDERR_FILENO
    }
}

/// Whether `fd` is a terminal whose foreground process group is
/// backoff's: false for a backoff in the background of an interactive
/// shell, which must not draw over the user's prompt.
pub fn in_foreground(fd: BorrowedFd<'_>) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: tcgetpgrp reads the terminal of a descriptor that `fd` keeps
    // open (a descriptor that is no terminal gives -1), and getpgrp cannot
    // fail.
    let (terminal, own) = unsafe { (libc::tcgetpgrp(fd.as_raw_fd()), libc::getpgrp()) };
    terminal == own
}

/// Whether `a` and `b` are the same file, pipe or terminal (their device
/// and inode agree); false when either cannot be asked.
pub fn same_file(a: impl AsFd, b: impl AsFd) -> bool {
    match (rustix::fs::fstat(a), rustix::fs::fstat(b)) {
        (Ok(x), Ok(y)) => x.st_dev == y.st_dev && x.st_ino == y.st_ino,
        _ => false,
    }
}

/// Moves up to `len` bytes from the pipe `from` to `to`, a file (at its
/// offset), a device or another pipe, without copying them through
/// backoff, with splice(2), without waiting for the pipes; returns how many
/// (0 at the end of `from`).
///
/// # Errors
///
/// `WouldBlock` when `from` is empty or the pipe `to` full; `BrokenPipe`
/// when the pipe `to` has no reader; the file's write errors (`ENOSPC`,
/// `EFBIG`); `EINVAL` where `to` cannot take it; `Unsupported` where
/// splice(2) does not exist.
pub fn splice(from: impl AsFd, to: impl AsFd, len: usize) -> io::Result<usize> {
    #[cfg(target_os = "linux")]
    {
        Ok(rustix::pipe::splice(
            from,
            None,
            to,
            None,
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

/// Reserves room on its file system for `len` bytes of `file` from offset
/// `from` on, without changing the file's size (fallocate(2) with
/// `FALLOC_FL_KEEP_SIZE`, Linux only): a write there then cannot run out
/// of room halfway.
///
/// # Errors
///
/// `StorageFull` (or the quota's `EDQUOT`) when the file system has not
/// that much room left. Where room cannot be reserved (a file system or a
/// system without the call) there is no error, and nothing is reserved.
pub fn reserve(file: &File, from: u64, len: u64) -> io::Result<()> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use rustix::fs::FallocateFlags;
        match rustix::fs::fallocate(file, FallocateFlags::KEEP_SIZE, from, len) {
            Err(e) if e == rustix::io::Errno::NOSPC || e == rustix::io::Errno::DQUOT => {
                Err(e.into())
            }
            _ => Ok(()),
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let _ = (file, from, len);
        Ok(())
    }
}

/// A destination backoff writes to (its stdout or stderr, or a file) in a
/// way that a reader who does not read cannot make it wait, where the
/// system allows: a pipe, a FIFO or a terminal is opened anew (Linux,
/// through `/proc/self/fd`: a description of backoff's own, whose writes
/// are made non-blocking without touching the caller's); where it cannot
/// be, backoff waits until `poll` says there is room and writes no more
/// than `PIPE_BUF` bytes at once, which a pipe then takes without waiting;
/// a socket is written with `MSG_DONTWAIT`. Anything else (a file, a
/// device) takes ordinary blocking writes.
pub struct Out {
    file: File,
    how: Writes,
}

/// How an `Out` is written without waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Writes {
    /// Ordinary blocking writes.
    Blocking,
    /// A pipe or FIFO of backoff's own, non-blocking.
    OwnPipe,
    /// A terminal of backoff's own, non-blocking.
    OwnOther,
    /// The caller's pipe or terminal: `poll`, then at most `PIPE_BUF`.
    Polled,
    /// A socket: `send` with `MSG_DONTWAIT`.
    Socket,
}

impl Out {
    /// `fd` (backoff's stdout or stderr) as a destination.
    ///
    /// # Errors
    ///
    /// When the descriptor cannot be duplicated.
    pub fn new(fd: BorrowedFd<'_>) -> io::Result<Out> {
        use std::os::unix::fs::FileTypeExt;
        let file = File::from(fd.try_clone_to_owned()?);
        let kind = file.metadata()?.file_type();
        let terminal = kind.is_char_device() && std::io::IsTerminal::is_terminal(&file);
        let how = if kind.is_socket() {
            Writes::Socket
        } else if kind.is_fifo() || terminal {
            match reopen_nonblocking(&file) {
                Some(own) => {
                    let how = if kind.is_fifo() {
                        Writes::OwnPipe
                    } else {
                        Writes::OwnOther
                    };
                    return Ok(Out { file: own, how });
                }
                None => Writes::Polled,
            }
        } else {
            Writes::Blocking
        };
        Ok(Out { file, how })
    }

    /// backoff's stdout, as `new` makes it.
    ///
    /// # Errors
    ///
    /// As `new`.
    pub fn stdout() -> io::Result<Out> {
        Out::new(io::stdout().as_fd())
    }

    /// backoff's stderr, as `new` makes it.
    ///
    /// # Errors
    ///
    /// As `new`.
    pub fn stderr() -> io::Result<Out> {
        Out::new(io::stderr().as_fd())
    }

    /// Waits until this can be written to (an error counts) or `deadline`
    /// passes; returns whether it can. A signal does not shorten the wait.
    pub fn wait_writable(&self, deadline: Instant) -> bool {
        wait_writable(self.as_fd(), deadline)
    }

    /// A file written with ordinary blocking writes.
    pub fn blocking(file: File) -> Out {
        Out {
            file,
            how: Writes::Blocking,
        }
    }

    /// Whether `write_now` never waits.
    pub fn nonblocking(&self) -> bool {
        self.how != Writes::Blocking
    }

    /// Whether it is a pipe of backoff's own, which tee(2) can fill.
    pub fn is_own_pipe(&self) -> bool {
        self.how == Writes::OwnPipe
    }

    /// Writes as much of `buf` as the destination takes now, or all of it
    /// with blocking writes; `WouldBlock` when it takes nothing now.
    ///
    /// # Errors
    ///
    /// As write(2); `WouldBlock` as said.
    pub fn write_now(&self, buf: &[u8]) -> io::Result<usize> {
        use std::io::Write;
        match self.how {
            Writes::Blocking | Writes::OwnPipe | Writes::OwnOther => (&self.file).write(buf),
            Writes::Polled => {
                let mut fds = [PollFd::new(&self.file, PollFlags::OUT)];
                let zero = Timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                if poll(&mut fds, Some(&zero))? == 0 {
                    return Err(io::ErrorKind::WouldBlock.into());
                }
                (&self.file).write(&buf[..buf.len().min(libc::PIPE_BUF)])
            }
            // SIGPIPE is ignored (std's start-up does that): a reader gone
            // is EPIPE.
            Writes::Socket => Ok(rustix::net::send(
                &self.file,
                buf,
                rustix::net::SendFlags::DONTWAIT,
            )?),
        }
    }

    /// Writes all of `buf` with blocking writes (the held stdout file).
    ///
    /// # Errors
    ///
    /// As write(2).
    pub fn write_all_blocking(&self, buf: &[u8]) -> io::Result<()> {
        use std::io::Write;
        (&self.file).write_all(buf)
    }
}

impl AsFd for Out {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}

/// `file` (a pipe, FIFO or terminal) opened anew with non-blocking writes,
/// as a description of backoff's own (Linux); `None` where it cannot be.
fn reopen_nonblocking(file: &File) -> Option<File> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY)
            .open(format!("/proc/self/fd/{}", file.as_raw_fd()))
            .ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = file;
        None
    }
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

/// Waits until `pipe` can be read (an end of file or an error counts) or
/// `deadline` passes; without `pipe`, until the deadline. Returns whether
/// `pipe` is ready. A signal does not shorten the wait: this is for a
/// process that leaves signals their default action, which ends it.
pub fn wait_readable(pipe: Option<&io::PipeReader>, deadline: Instant) -> bool {
    wait_for(pipe.map(AsFd::as_fd), PollFlags::IN, deadline)
}

/// Waits until `fd` can be written to (an error counts) or `deadline`
/// passes; returns whether it can. A signal does not shorten the wait.
pub fn wait_writable(fd: BorrowedFd<'_>, deadline: Instant) -> bool {
    wait_for(Some(fd), PollFlags::OUT, deadline)
}

/// Waits until `fd` has one of `events`, or `deadline` passes.
fn wait_for(fd: Option<BorrowedFd<'_>>, events: PollFlags, deadline: Instant) -> bool {
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
            .map(|&f| PollFd::from_borrowed_fd(f, events))
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

/// Opens the file `name` of the directory `dir` (at `_dir_path`, which
/// only systems without `openat` need) for reading, and for writing
/// too with `write`, creating it (mode 0600) with `create`; never through a
/// symbolic link, and never waiting (a FIFO does not block the open).
///
/// # Errors
///
/// As openat(2): `ELOOP` when it is a symbolic link, `ENOENT` when it does
/// not exist and is not to be created.
pub fn open_in(
    dir: &File,
    _dir_path: &Path,
    name: &str,
    write: bool,
    create: bool,
) -> io::Result<File> {
    let mut flags = OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY;
    flags |= if write { OFlags::RDWR } else { OFlags::RDONLY };
    if create {
        flags |= OFlags::CREATE;
    }
    let fd: OwnedFd = rustix::fs::openat(dir, name, flags, Mode::from_raw_mode(0o600))?;
    Ok(File::from(fd))
}

/// Makes `out` and `err` backoff's stdout and stderr (descriptors 1 and 2,
/// which the processes it starts inherit); the descriptors they were stay
/// open as long as others refer to them.
///
/// # Errors
///
/// As dup2(2).
pub fn redirect_std(out: impl AsFd, err: impl AsFd) -> io::Result<()> {
    rustix::stdio::dup2_stdout(out)?;
    rustix::stdio::dup2_stderr(err)?;
    Ok(())
}

/// Waits, with no time limit, until one of `files` can be read (an end
/// of file or an error counts); returns which can. A signal ends the wait
/// early, with none ready.
pub fn readable(files: &[&File]) -> Vec<bool> {
    let mut polled: Vec<PollFd<'_>> = files
        .iter()
        .map(|f| PollFd::new(*f, PollFlags::IN))
        .collect();
    if poll(&mut polled, None).is_err() {
        return vec![false; files.len()];
    }
    polled.iter().map(|p| !p.revents().is_empty()).collect()
}

/// Reads what `file` (non-blocking) holds now, into `buf`.
///
/// # Errors
///
/// `WouldBlock` when it holds nothing yet; as read(2).
pub fn read_now(mut file: &File, buf: &mut [u8]) -> io::Result<usize> {
    use std::io::Read as _;
    file.read(buf)
}

/// A pipe whose ends no process backoff starts inherits (close-on-exec):
/// its read end, then its write end.
///
/// # Errors
///
/// As pipe(2).
pub fn pipe() -> io::Result<(File, File)> {
    let (read, write) = io::pipe()?;
    Ok((
        File::from(OwnedFd::from(read)),
        File::from(OwnedFd::from(write)),
    ))
}

/// A descriptor of backoff's own stdout, as a file.
///
/// # Errors
///
/// As dup(2).
pub fn dup_stdout() -> io::Result<File> {
    Ok(File::from(io::stdout().as_fd().try_clone_to_owned()?))
}

/// A descriptor of backoff's own stderr, as a file.
///
/// # Errors
///
/// As dup(2).
pub fn dup_stderr() -> io::Result<File> {
    Ok(File::from(io::stderr().as_fd().try_clone_to_owned()?))
}

/// A connection to the Unix stream socket at `path`, made within
/// `limit`: a server whose queue of connections is full is waited for that
/// long at most (Linux bounds connect(2) on such a socket by the send
/// timeout).
///
/// # Errors
///
/// As socket(2) and connect(2); `TimedOut` (`WouldBlock` on some systems)
/// when the limit passed; `ConnectionRefused` that names what the path is
/// when it is not a socket.
pub fn connect_unix(
    path: &std::path::Path,
    limit: Option<std::time::Duration>,
) -> io::Result<std::os::unix::net::UnixStream> {
    use rustix::net::{AddressFamily, SocketAddrUnix, SocketType};
    #[cfg(not(target_vendor = "apple"))]
    let socket = rustix::net::socket_with(
        AddressFamily::UNIX,
        SocketType::STREAM,
        rustix::net::SocketFlags::CLOEXEC,
        None,
    )?;
    // macOS has no SOCK_CLOEXEC: the flag is set on the new descriptor at
    // once, as the standard library does there.
    #[cfg(target_vendor = "apple")]
    let socket = {
        let socket = rustix::net::socket(AddressFamily::UNIX, SocketType::STREAM, None)?;
        rustix::io::fcntl_setfd(&socket, rustix::io::FdFlags::CLOEXEC)?;
        socket
    };
    // At least a millisecond: a timeout of zero would be none.
    let limit = limit.map(|l| l.max(std::time::Duration::from_millis(1)));
    rustix::net::sockopt::set_socket_timeout(&socket, rustix::net::sockopt::Timeout::Send, limit)?;
    match rustix::net::connect(&socket, &SocketAddrUnix::new(path)?) {
        Ok(()) => Ok(std::os::unix::net::UnixStream::from(socket)),
        // What is there is no socket at all (a FIFO, a regular file), not
        // a server that is down: said so.
        Err(rustix::io::Errno::CONNREFUSED) => match std::fs::metadata(path) {
            Ok(meta) if !std::os::unix::fs::FileTypeExt::is_socket(&meta.file_type()) => {
                Err(io::Error::new(
                    io::ErrorKind::ConnectionRefused,
                    format!("the path is {}, not a socket", kind_of(&meta)),
                ))
            }
            _ => Err(rustix::io::Errno::CONNREFUSED.into()),
        },
        Err(e) => Err(e.into()),
    }
}

/// What a file that is not a regular file is, in a few words ("a FIFO").
pub fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    let ty = meta.file_type();
    if ty.is_file() {
        "a regular file"
    } else if ty.is_dir() {
        "a directory"
    } else if ty.is_fifo() {
        "a FIFO"
    } else if ty.is_char_device() {
        "a character device"
    } else if ty.is_block_device() {
        "a block device"
    } else if ty.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

/// The first `max` bytes of the regular file at `path`, read without ever
/// waiting: a FIFO, a device or a terminal (`/dev/stdin`, which is the
/// command's input) is refused before anything is read of it.
///
/// # Errors
///
/// When it cannot be opened or read, or is not a regular file.
pub fn read_regular(path: &std::path::Path, max: u64) -> io::Result<Vec<u8>> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt;
    // Looked at first: opening a FIFO would end a writer's wait for its
    // reader, and opening a device can act on it.
    if !std::fs::metadata(path)?.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    let mut out = Vec::new();
    file.take(max).read_to_end(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unix_socket_whose_queue_is_full_is_waited_for_no_longer_than_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        // A server that never accepts, with room for no waiting connection
        // beyond the one the first client takes.
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        rustix::net::listen(&listener, 0).unwrap();
        let _first = connect_unix(&path, None).unwrap();
        let limit = std::time::Duration::from_millis(200);
        let started = std::time::Instant::now();
        // On a thread of its own, so that a connect that waits on is a
        // failure of the test, not a test that never ends.
        let (tx, rx) = std::sync::mpsc::channel();
        let to = path.clone();
        std::thread::spawn(move || tx.send(connect_unix(&to, Some(limit))));
        let e = rx
            .recv_timeout(std::time::Duration::from_secs(5))
            .expect("the connect ends by its limit")
            .unwrap_err();
        let took = started.elapsed();
        assert!(
            matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ),
            "{e}"
        );
        assert!(
            took >= limit / 2 && took < std::time::Duration::from_secs(5),
            "{took:?}"
        );
        let gone = dir.path().join("gone.sock");
        assert_eq!(
            connect_unix(&gone, Some(limit)).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }
}
