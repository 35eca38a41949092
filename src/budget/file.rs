//! A retry budget kept in one small file per key, shared by the processes of
//! one machine, updated under an exclusive lock. The file is never followed
//! through a symbolic link and never trusted when it belongs to another user
//! or does not hold a valid state.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::budget::bucket::{Bucket, check_key};
use crate::sys::effective_uid;

/// The state file's only line, fixed in length so that an update is one
/// write of the same size at offset 0: a process killed at any moment
/// leaves the old state or the new one, never a mix.
fn record(micros: u64) -> String {
    format!("backoff-budget v1 micro-tokens {micros:020}\n")
}

/// Parses the state file; `None` if it is not exactly a record.
fn parse(text: &str) -> Option<u64> {
    let digits = text
        .strip_prefix("backoff-budget v1 micro-tokens ")?
        .strip_suffix('\n')?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The default budget directory: `$XDG_RUNTIME_DIR/backoff`, else
/// `backoff-UID` in the temporary directory.
pub fn default_dir() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d).join("backoff"),
        _ => std::env::temp_dir().join(format!("backoff-{}", effective_uid())),
    }
}

/// A budget kept in a file, shared by processes.
#[derive(Debug, Clone)]
pub struct FileBudget {
    path: PathBuf,
    bucket: Bucket,
}

fn refuse(path: &Path, why: &str) -> io::Error {
    io::Error::other(format!("'{}' {why}", path.display()))
}

impl FileBudget {
    /// The budget `key` in `dir`: creates the directory (mode 0700) if
    /// needed, and checks the directory and the state file: neither may be a
    /// symbolic link or belong to another user, and the file must hold a
    /// valid state. Nothing is changed.
    ///
    /// # Errors
    ///
    /// When the directory or the file cannot be used, or the file is corrupt.
    pub fn open(dir: &Path, key: &str, bucket: Bucket) -> io::Result<FileBudget> {
        check_key(key).map_err(io::Error::other)?;
        match std::fs::symlink_metadata(dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(dir)?;
            }
            Err(e) => return Err(e),
            Ok(_) => {}
        }
        let meta = std::fs::symlink_metadata(dir)?;
        if meta.file_type().is_symlink() || !meta.is_dir() {
            return Err(refuse(
                dir,
                "is not a directory (symbolic links are refused)",
            ));
        }
        if meta.uid() != effective_uid() {
            return Err(refuse(dir, "belongs to another user"));
        }
        if meta.permissions().mode() & 0o022 != 0 {
            return Err(refuse(dir, "is writable by other users"));
        }
        let budget = FileBudget {
            path: dir.join(format!("{key}.budget")),
            bucket,
        };
        budget.update(|level| (level, ()))?;
        Ok(budget)
    }

    /// The path of the state file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the state file without following a symbolic link and checks
    /// that it is a regular file of this user's.
    fn open_file(&self) -> io::Result<File> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&self.path)
            .map_err(|e| {
                if e.raw_os_error() == Some(libc::ELOOP) {
                    refuse(&self.path, "is a symbolic link")
                } else {
                    e
                }
            })?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(refuse(&self.path, "is not a regular file"));
        }
        if meta.uid() != effective_uid() {
            return Err(refuse(&self.path, "belongs to another user"));
        }
        Ok(file)
    }

    /// Applies `change` to the level under an exclusive lock; writes the
    /// new level back only if it differs. A new, empty file holds `burst`.
    fn update<T>(&self, change: impl FnOnce(u64) -> (u64, T)) -> io::Result<T> {
        let mut file = self.open_file()?;
        // The lock is released when the file is closed, even if the process
        // is killed, so no stale lock can outlive its holder.
        file.lock()?;
        let mut text = String::new();
        file.read_to_string(&mut text)
            .map_err(|_| refuse(&self.path, "is corrupt"))?;
        let level = if text.is_empty() {
            self.bucket.burst
        } else {
            parse(&text).ok_or_else(|| refuse(&self.path, "is corrupt"))?
        };
        let (new, answer) = change(level);
        if new != level || text.is_empty() {
            file.seek(SeekFrom::Start(0))?;
            file.write_all(record(new).as_bytes())?;
        }
        Ok(answer)
    }

    /// Takes a token for a retry; `Ok(false)` when there is none.
    ///
    /// # Errors
    ///
    /// When the state file cannot be used.
    pub fn take(&self) -> io::Result<bool> {
        let bucket = self.bucket;
        self.update(|level| match bucket.take(level) {
            Some(new) => (new, true),
            None => (level.min(bucket.burst), false),
        })
    }

    /// Deposits `ratio` after a success.
    ///
    /// # Errors
    ///
    /// When the state file cannot be used.
    pub fn deposit(&self) -> io::Result<()> {
        let bucket = self.bucket;
        self.update(|level| (bucket.deposit(level), ()))
    }

    /// The current level, in millionths of a token.
    ///
    /// # Errors
    ///
    /// When the state file cannot be used.
    pub fn level(&self) -> io::Result<u64> {
        let burst = self.bucket.burst;
        self.update(|level| (level, level.min(burst)))
    }

    /// Fills the bucket to `burst` again.
    ///
    /// # Errors
    ///
    /// When the state file cannot be used.
    pub fn reset(&self) -> io::Result<()> {
        let burst = self.bucket.burst;
        self.update(|_| (burst, ()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::bucket::UNIT;

    #[test]
    fn records_round_trip_and_anything_else_is_corrupt() {
        for v in [0, 1, UNIT / 10, 10 * UNIT, u64::MAX] {
            assert_eq!(parse(&record(v)), Some(v));
        }
        for bad in [
            "",
            "10\n",
            "backoff-budget v1 micro-tokens 12\n",
            "backoff-budget v1 micro-tokens 0000000000000000000x\n",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }
}
