//! Pipes and files on Windows: backoff's own lines written to its
//! standard streams, a pipe waited for, a regular file read.

use std::fs::File;
use std::io::{self, Write};
use std::os::windows::io::{AsHandle, AsRawHandle};
use std::time::{Duration, Instant};

use windows_sys::Win32::System::Pipes::PeekNamedPipe;

/// One of backoff's standard streams, written with blocking writes (an
/// anonymous pipe on Windows has no non-blocking mode).
#[derive(Debug)]
pub struct Out(File);

impl Out {
    /// backoff's stdout.
    ///
    /// # Errors
    ///
    /// When its handle cannot be duplicated.
    pub fn stdout() -> io::Result<Out> {
        Ok(Out(File::from(
            io::stdout().as_handle().try_clone_to_owned()?,
        )))
    }

    /// backoff's stderr.
    ///
    /// # Errors
    ///
    /// When its handle cannot be duplicated.
    pub fn stderr() -> io::Result<Out> {
        Ok(Out(File::from(
            io::stderr().as_handle().try_clone_to_owned()?,
        )))
    }

    /// A file written with ordinary blocking writes.
    pub fn blocking(file: File) -> Out {
        Out(file)
    }

    /// Whether writes may find no room (never here).
    pub fn nonblocking(&self) -> bool {
        false
    }

    /// Writes what there is room for now (all of it, here).
    ///
    /// # Errors
    ///
    /// As the write.
    pub fn write_now(&self, buf: &[u8]) -> io::Result<usize> {
        (&self.0).write(buf)
    }

    /// Writes all of `buf`.
    ///
    /// # Errors
    ///
    /// As the write.
    pub fn write_all_blocking(&self, buf: &[u8]) -> io::Result<()> {
        (&self.0).write_all(buf)
    }

    /// Whether this can be written to: always, with blocking writes.
    pub fn wait_writable(&self, _deadline: Instant) -> bool {
        true
    }
}

/// Whether backoff's stderr may be drawn on: a console has no background
/// jobs.
pub fn stderr_in_foreground() -> bool {
    true
}

/// The console of backoff's stderr, for the status line (written with
/// blocking writes, as backoff's own lines are here).
pub fn term_on_stderr<W>(_to: W) -> console::Term {
    console::Term::stderr()
}

/// Whether the pipe can be read now: bytes wait in it, or its writer is
/// gone (an end of file).
fn pipe_ready(pipe: &io::PipeReader) -> bool {
    let mut avail = 0u32;
    // SAFETY: the handle is open for the call; no buffer is read into,
    // and `avail` is ours.
    let ok = unsafe {
        PeekNamedPipe(
            pipe.as_raw_handle(),
            std::ptr::null_mut(),
            0,
            std::ptr::null_mut(),
            &raw mut avail,
            std::ptr::null_mut(),
        )
    };
    ok == 0 || avail > 0
}

/// Waits until `pipe` can be read (an end of file or an error counts) or
/// `deadline` passes; without `pipe`, until the deadline. An anonymous
/// pipe cannot be waited for on Windows: it is looked at again, less
/// often as the wait lasts (every 50 ms at most).
pub fn wait_readable(pipe: Option<&io::PipeReader>, deadline: Instant) -> bool {
    let mut step = Duration::from_millis(1);
    loop {
        if pipe.is_some_and(pipe_ready) {
            return true;
        }
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        std::thread::sleep(step.min(deadline - now));
        step = (step * 2).min(Duration::from_millis(50));
    }
}

/// Whether `pipe` is ready, for the executor's wait.
pub fn is_readable(pipe: &io::PipeReader) -> bool {
    pipe_ready(pipe)
}

/// Nothing to do: Windows' anonymous pipes have no non-blocking mode, and
/// are read here only once they are ready.
///
/// # Errors
///
/// Never.
pub fn set_nonblocking(_pipe: &io::PipeReader) -> io::Result<()> {
    Ok(())
}

/// Reserves no room ahead: Windows has no call that does so without
/// changing the file's size.
///
/// # Errors
///
/// Never.
pub fn reserve(_file: &File, _from: u64, _len: u64) -> io::Result<()> {
    Ok(())
}

/// The first `max` bytes of the regular file at `path`; anything else (a
/// device, a pipe, a directory) is refused before it is read.
///
/// # Errors
///
/// When it cannot be opened or read, or is not a regular file.
pub fn read_regular(path: &std::path::Path, max: u64) -> io::Result<Vec<u8>> {
    use std::io::Read as _;
    if !std::fs::metadata(path)?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    let mut data = Vec::new();
    File::open(path)?.take(max).read_to_end(&mut data)?;
    Ok(data)
}
