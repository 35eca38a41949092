//! Files of backoff's own (its state, its reports), as Unix protects
//! them: who owns one and whether others may write it, whether a name
//! still names the file opened, what special file is in the way, and
//! opening without following a symbolic link or waiting for a FIFO.

use std::fs::{DirBuilder, File, FileType, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

pub use crate::sys::StateLock;

use super::effective_uid;

/// The file beside a file updated in place (`--metrics-file`) whose lock
/// orders the updates, if not the file's own: none here, where a file
/// that is open and locked can be renamed over.
pub const LOCK_BESIDE: Option<&str> = None;

/// Where a user's programs keep their own data, where the system says
/// it: nowhere here (the XDG base directories are looked up instead).
pub fn app_data() -> Option<std::path::PathBuf> {
    None
}

/// Makes the directory `path` (with the directories above it, when
/// `recursive`), which only its owner may enter (mode 0700).
///
/// # Errors
///
/// As mkdir(2).
pub fn create_private_dir(path: &Path, recursive: bool) -> io::Result<()> {
    DirBuilder::new()
        .recursive(recursive)
        .mode(0o700)
        .create(path)
}

/// Why the directory at `path` is not this user's to make directories
/// in: another user owns it.
///
/// # Errors
///
/// When it cannot be looked at.
pub fn not_own_dir(path: &Path) -> io::Result<Option<String>> {
    let owner = std::fs::metadata(path)?.uid();
    Ok((owner != effective_uid()).then(|| format!("belongs to another user (uid {owner})")))
}

/// Why `file` (state, or the directory of state) must not be trusted:
/// another user owns it, or others may write to it.
///
/// # Errors
///
/// When it cannot be looked at.
pub fn distrust(file: &File) -> io::Result<Option<&'static str>> {
    let meta = file.metadata()?;
    Ok(if meta.uid() != effective_uid() {
        Some("belongs to another user")
    } else if meta.permissions().mode() & 0o022 != 0 {
        Some("is writable by other users")
    } else {
        None
    })
}

/// How many names the file has (hard links).
///
/// # Errors
///
/// When it cannot be looked at.
pub fn links(file: &File) -> io::Result<u64> {
    Ok(file.metadata()?.nlink())
}

/// What identifies the file among all of the system's: its device and
/// inode.
///
/// # Errors
///
/// When it cannot be looked at.
pub fn file_id(file: &File) -> io::Result<(u64, u64)> {
    let meta = file.metadata()?;
    Ok((meta.dev(), meta.ino()))
}

/// Whether `path` still names `file` (a symbolic link there is not
/// followed); `None` when nothing is there.
///
/// # Errors
///
/// When either cannot be looked at.
pub fn names(path: &Path, file: &File) -> io::Result<Option<bool>> {
    match std::fs::symlink_metadata(path) {
        Ok(now) => Ok(Some((now.dev(), now.ino()) == file_id(file)?)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether an open without following (`no_follow`, `fd::open_in`) met a
/// symbolic link.
pub fn met_link(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

/// Whether opening a directory (`fd::open_dir`) met a symbolic link or
/// something that is not a directory.
pub fn met_non_dir(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR))
}

/// Whether an open without following met a symbolic link or a FIFO
/// without a reader, put there since it was looked at.
pub fn met_special(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENXIO))
}

/// What a special file of this type is (a FIFO, a device, a socket), for
/// a refusal; `None` for a file, a directory or a link.
pub fn special_kind(t: FileType) -> Option<&'static str> {
    if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        None
    }
}

/// Sets `options` to open without following a symbolic link, without
/// waiting for a FIFO's writer or reader, and closed on exec; a file it
/// creates gets `mode` (less the umask). With `create`, a file is created
/// even when `options` only read.
pub fn no_follow(options: &mut OpenOptions, mode: u32, create: bool) -> &mut OpenOptions {
    let create = if create { libc::O_CREAT } else { 0 };
    options
        .mode(mode)
        .custom_flags(create | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
}

/// `file`, to read its content while another thread waits for its lock:
/// a duplicate (a lock wait holds nothing else up here).
///
/// # Errors
///
/// As dup(2).
pub fn for_reading(file: &File) -> io::Result<File> {
    file.try_clone()
}

/// Lets everyone read `file` (mode 0644): a metrics collector usually
/// runs as another user.
///
/// # Errors
///
/// When the mode cannot be changed.
pub fn readable_by_all(file: &File) -> io::Result<()> {
    file.set_permissions(std::fs::Permissions::from_mode(0o644))
}

/// flock(2) on the whole file, as std takes it.
impl StateLock for File {
    fn state_lock(&self) -> io::Result<()> {
        self.lock()
    }

    fn state_lock_shared(&self) -> io::Result<()> {
        self.lock_shared()
    }

    fn try_state_lock(&self) -> Result<(), std::fs::TryLockError> {
        self.try_lock()
    }

    fn try_state_lock_shared(&self) -> Result<(), std::fs::TryLockError> {
        self.try_lock_shared()
    }

    fn state_unlock(&self) -> io::Result<()> {
        self.unlock()
    }
}
