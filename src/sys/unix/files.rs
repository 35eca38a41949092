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

/// Whether another open file holds the exclusive flock(2) of `file`, as
/// the kernel's table of locks (`/proc/locks`, Linux) tells without
/// taking a lock, which would keep out a run that tries the lock at that
/// instant; `None` where the table cannot tell (another system, no
/// `/proc`, a file system whose device the table names otherwise than
/// stat(2)).
///
/// # Errors
///
/// When the file cannot be looked at.
pub fn flock_held(file: &File) -> io::Result<Option<bool>> {
    // A table of many locks is read within bounds; past them it cannot
    // tell.
    const MOST: u64 = 8 << 20;
    let (dev, ino) = file_id(file)?;
    if !cfg!(target_os = "linux") {
        return Ok(None);
    }
    let Ok(table) = super::fd::read_regular(Path::new("/proc/locks"), MOST + 1) else {
        return Ok(None);
    };
    if table.len() as u64 > MOST {
        return Ok(None);
    }
    Ok(flock_in_table(&table, dev, ino))
}

/// Whether the lock table `table` (as `/proc/locks` writes it) holds an
/// exclusive flock of the file `ino` of the device `dev` (as stat(2) gives
/// it); `None` when it names that inode on another device only (a file
/// system, such as btrfs, whose device stat(2) tells otherwise).
fn flock_in_table(table: &[u8], dev: u64, ino: u64) -> Option<bool> {
    // Linux's encoding of a device number (glibc's gnu_dev_major and
    // gnu_dev_minor).
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let mut elsewhere = false;
    for line in table.split(|&b| b == b'\n') {
        let Ok(line) = std::str::from_utf8(line) else {
            continue;
        };
        // `1: FLOCK  ADVISORY  WRITE 4242 08:01:1234 0 EOF`; a waiter's
        // line has `->` after the number.
        let words: Vec<&str> = line.split_whitespace().collect();
        let [_, "FLOCK", _, "WRITE", _, id, ..] = words[..] else {
            continue;
        };
        let mut parts = id.split(':');
        let (Some(ma), Some(mi), Some(i), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let (Ok(ma), Ok(mi), Ok(i)) = (
            u64::from_str_radix(ma, 16),
            u64::from_str_radix(mi, 16),
            i.parse::<u64>(),
        ) else {
            continue;
        };
        if i == ino {
            if (ma, mi) == (major, minor) {
                return Some(true);
            }
            elsewhere = true;
        }
    }
    if elsewhere { None } else { Some(false) }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_table_tells_an_exclusive_flock_of_the_file_and_nothing_else() {
        // st_dev 0x801 (device 8:1).
        let table = b"1: POSIX  ADVISORY  WRITE 10 08:01:77 0 EOF\n\
2: FLOCK  ADVISORY  READ  11 08:01:77 0 EOF\n\
3: FLOCK  ADVISORY  WRITE 12 08:02:77 0 EOF\n\
3: -> FLOCK  ADVISORY  WRITE 13 08:01:77 0 EOF\n";
        // A shared lock, a waiter, a POSIX lock: not the exclusive flock.
        // The same inode on another device only: the table cannot tell.
        assert_eq!(flock_in_table(table, 0x801, 77), None);
        assert_eq!(flock_in_table(table, 0x801, 78), Some(false));
        let held = b"7: FLOCK  ADVISORY  WRITE 4242 08:01:77 0 EOF\n";
        assert_eq!(flock_in_table(held, 0x801, 77), Some(true));
        assert_eq!(flock_in_table(b"", 0x801, 77), Some(false));
        assert_eq!(flock_in_table(b"garbage\xff\n1: FLOCK", 1, 1), Some(false));
        // A large device number (major 259, minor 300).
        let dev = (0x12c & 0xff) | (0x103 << 8) | ((0x12c & !0xff) << 12);
        let nvme = b"1: FLOCK  ADVISORY  WRITE 1 103:12c:9 0 EOF\n";
        assert_eq!(flock_in_table(nvme, dev, 9), Some(true));
    }

    #[test]
    fn a_file_this_process_locks_is_held_in_the_table() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        let file = File::create(&path).unwrap();
        let other = File::open(&path).unwrap();
        if flock_held(&other).unwrap() == Some(false) {
            file.lock().unwrap();
            let told = flock_held(&other).unwrap();
            // Where the table names the device as stat(2) does.
            assert!(told.is_none() || told == Some(true), "{told:?}");
            file.unlock().unwrap();
            assert_eq!(flock_held(&other).unwrap(), Some(false));
        }
    }
}
