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

/// The variable that names the directory for temporary files: `TMP` (read before `TEMP`).
pub const TEMP_VARIABLE: &str = "TMP";

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

/// What a pipe holds now: `Ok(n)` bytes, or `Err` with the system's
/// error code (`ERROR_BROKEN_PIPE` once its writers are all gone).
fn peek(handle: std::os::windows::io::RawHandle) -> Result<u32, u32> {
    use windows_sys::Win32::Foundation::GetLastError;
    let mut avail = 0u32;
    // SAFETY: the handle is open for the call; no buffer is read into,
    // and `avail` is ours.
    let ok = unsafe {
        PeekNamedPipe(
            handle,
            std::ptr::null_mut(),
            0,
            std::ptr::null_mut(),
            &raw mut avail,
            std::ptr::null_mut(),
        )
    };
    if ok != 0 {
        return Ok(avail);
    }
    // SAFETY: reads this thread's last error, set by the call above.
    Err(unsafe { GetLastError() })
}

/// Whether the pipe can be read now: bytes wait in it, or its writer is
/// gone (an end of file), or it cannot be asked (the read will say why).
fn pipe_ready(pipe: &io::PipeReader) -> bool {
    peek(pipe.as_raw_handle()).map_or(true, |n| n > 0)
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
/// are read here only once they are ready (`read_now`).
///
/// # Errors
///
/// Never.
pub fn set_nonblocking<T>(_pipe: T) -> io::Result<()> {
    Ok(())
}

/// Nothing to do: an anonymous pipe's buffer is set when it is made.
pub fn enlarge_pipe<T>(_pipe: T, _size: usize) {}

/// A pipe no process backoff starts inherits unless handed to it: its
/// read end, then its write end.
///
/// # Errors
///
/// As `CreatePipe`.
pub fn pipe() -> io::Result<(File, File)> {
    use std::os::windows::io::OwnedHandle;
    let (read, write) = io::pipe()?;
    Ok((
        File::from(OwnedHandle::from(read)),
        File::from(OwnedHandle::from(write)),
    ))
}

/// A handle of backoff's own stdout, as a file.
///
/// # Errors
///
/// When it cannot be duplicated.
pub fn dup_stdout() -> io::Result<File> {
    Ok(File::from(io::stdout().as_handle().try_clone_to_owned()?))
}

/// A handle of backoff's own stderr, as a file.
///
/// # Errors
///
/// When it cannot be duplicated.
pub fn dup_stderr() -> io::Result<File> {
    Ok(File::from(io::stderr().as_handle().try_clone_to_owned()?))
}

/// Whether `a` and `b` are one file (the same volume and index); false
/// for pipes and consoles, or when either cannot be asked.
pub fn same_file(a: &File, b: &File) -> bool {
    match (super::files::file_id(a), super::files::file_id(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// The handles `redirect_std` made backoff's stdout and stderr, kept open
/// for the rest of the process's life: a thread may still write to a
/// handle value it read from the std slot before it was replaced, and a
/// closed value could name another file by then. (Two pairs per run.)
static INSTALLED: std::sync::Mutex<Vec<File>> = std::sync::Mutex::new(Vec::new());

/// Makes copies of `out` and `err` backoff's stdout and stderr, which the
/// processes it starts from then on are given.
///
/// # Errors
///
/// When a handle cannot be copied, or as `SetStdHandle` (then the std
/// handles may be half changed; the caller sets them back).
pub fn redirect_std(out: &File, err: &File) -> io::Result<()> {
    use windows_sys::Win32::System::Console::{STD_ERROR_HANDLE, STD_OUTPUT_HANDLE, SetStdHandle};
    let (out, err) = (out.try_clone()?, err.try_clone()?);
    let (out_handle, err_handle) = (out.as_raw_handle(), err.as_raw_handle());
    // Kept before they are installed: never closed after.
    INSTALLED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .extend([out, err]);
    // SAFETY: both handles are open, and stay open for the rest of the
    // process's life (`INSTALLED`).
    unsafe {
        if SetStdHandle(STD_OUTPUT_HANDLE, out_handle) == 0
            || SetStdHandle(STD_ERROR_HANDLE, err_handle) == 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// What the pipe `file` holds now: `Some(0)` at its end (its writers all
/// gone), `None` when that cannot be told.
fn available(file: &File) -> Option<u32> {
    use windows_sys::Win32::Foundation::ERROR_BROKEN_PIPE;
    match peek(file.as_raw_handle()) {
        Ok(n) => Some(n),
        Err(ERROR_BROKEN_PIPE) => Some(0),
        Err(_) => None,
    }
}

/// Waits, with no time limit, until one of the pipes `files` can be read
/// (bytes wait, or its end came); returns which can. An anonymous pipe
/// cannot be waited for on Windows: they are looked at again, less often
/// as the wait lasts (every 20 ms at most).
pub fn readable(files: &[&File]) -> Vec<bool> {
    let mut step = Duration::from_millis(1);
    loop {
        let ready: Vec<bool> = files
            .iter()
            .map(|f| available(f).is_none_or(|n| n > 0) || at_end(f))
            .collect();
        if ready.contains(&true) {
            return ready;
        }
        std::thread::sleep(step);
        step = (step * 2).min(Duration::from_millis(20));
    }
}

/// Whether the pipe's writers are all gone.
fn at_end(file: &File) -> bool {
    use windows_sys::Win32::Foundation::ERROR_BROKEN_PIPE;
    peek(file.as_raw_handle()) == Err(ERROR_BROKEN_PIPE)
}

/// Reads what the pipe `file` holds now into `buf`, without waiting.
///
/// # Errors
///
/// `WouldBlock` when it holds nothing yet; as the read.
pub fn read_now(mut file: &File, buf: &mut [u8]) -> io::Result<usize> {
    use std::io::Read as _;
    match available(file) {
        Some(0) if !at_end(file) => Err(io::ErrorKind::WouldBlock.into()),
        Some(0) => Ok(0),
        Some(n) => {
            let n = buf.len().min(usize::try_from(n).unwrap_or(usize::MAX));
            file.read(&mut buf[..n])
        }
        None => file.read(buf),
    }
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

/// What a file that is not a regular file is, in a few words.
pub fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    if meta.is_file() {
        "a regular file"
    } else if meta.is_dir() {
        "a directory"
    } else {
        "a special file"
    }
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

/// Opens the directory `path` to look at it and to open files in it; a
/// reparse point (a symbolic link, a junction) is opened as itself, and
/// refused.
///
/// # Errors
///
/// As the open; `files::met_non_dir`'s error for a reparse point or
/// something that is not a directory.
pub fn open_dir(path: &std::path::Path) -> io::Result<File> {
    use std::os::windows::fs::{MetadataExt, OpenOptionsExt};
    use windows_sys::Win32::Foundation::ERROR_DIRECTORY;
    use windows_sys::Win32::Storage::FileSystem::{
        FILE_ATTRIBUTE_REPARSE_POINT, FILE_FLAG_BACKUP_SEMANTICS, FILE_FLAG_OPEN_REPARSE_POINT,
    };
    use windows_sys::Win32::Storage::FileSystem::{FILE_SHARE_READ, FILE_SHARE_WRITE};
    // Not shared for deletion: while it is open, it cannot be renamed or
    // removed (and a junction put in its place), nor can the directories
    // above it, so `open_in`'s path still leads into it.
    let dir = std::fs::OpenOptions::new()
        .read(true)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE)
        .custom_flags(FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT)
        .open(path)?;
    let meta = dir.metadata()?;
    if !meta.is_dir() || meta.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
        return Err(io::Error::from_raw_os_error(ERROR_DIRECTORY.cast_signed()));
    }
    Ok(dir)
}

/// Opens the file `name` of the directory at `dir_path` (Windows has no
/// `openat`: the directory opened, `_dir`, held open by `open_dir` without
/// sharing it for deletion, keeps the path leading into it) for reading, and for writing too with `write`,
/// creating it with `create`; a reparse point is opened as itself, which
/// its type then refuses.
///
/// # Errors
///
/// As the open: `NotFound` when it does not exist and is not to be
/// created.
pub fn open_in(
    _dir: &File,
    dir_path: &std::path::Path,
    name: &str,
    write: bool,
    create: bool,
) -> io::Result<File> {
    use std::os::windows::fs::OpenOptionsExt;
    use windows_sys::Win32::Storage::FileSystem::FILE_FLAG_OPEN_REPARSE_POINT;
    std::fs::OpenOptions::new()
        .read(true)
        .write(write || create)
        .create(create)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
        .open(dir_path.join(name))
}

/// A new temporary file, removed by the system when the last handle to it
/// is closed (`FILE_FLAG_DELETE_ON_CLOSE`), which `reopen_read` can open
/// again.
///
/// # Errors
///
/// When no file can be made in the temporary directory.
pub fn temporary_file() -> io::Result<File> {
    use std::os::windows::fs::OpenOptionsExt;
    use windows_sys::Win32::Storage::FileSystem::{
        FILE_ATTRIBUTE_TEMPORARY, FILE_FLAG_DELETE_ON_CLOSE, FILE_SHARE_DELETE, FILE_SHARE_READ,
        FILE_SHARE_WRITE,
    };
    let mut tries = 0;
    loop {
        let name = format!(".backoff-{:016x}", rand::random::<u64>());
        let made = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE)
            .custom_flags(FILE_ATTRIBUTE_TEMPORARY | FILE_FLAG_DELETE_ON_CLOSE)
            .open(std::env::temp_dir().join(name));
        match made {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries < 10 => tries += 1,
            other => return other,
        }
    }
}
