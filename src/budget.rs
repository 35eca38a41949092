//! A retry budget shared by every backoff process that names the same key: a
//! token bucket (adaptive retries, gRPC retry throttling) kept in one small
//! file per key, updated under an exclusive lock. Each retry takes a token,
//! each success deposits `ratio` of one, and the bucket holds at most
//! `burst`. Tokens are counted in millionths, so that no rounding loses or
//! creates a token however many processes update the file.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Millionths of a token in one token.
pub const UNIT: u64 = 1_000_000;

/// The largest burst accepted, in tokens.
pub const MAX_BURST: u64 = 1_000_000;

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

/// The arithmetic of a bucket, in millionths of a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    /// Most tokens the bucket holds (and starts with).
    pub burst: u64,
    /// Tokens a success deposits.
    pub ratio: u64,
}

impl Bucket {
    /// Takes one token if there is one: the new level, or `None`.
    pub fn take(self, level: u64) -> Option<u64> {
        level.min(self.burst).checked_sub(UNIT)
    }

    /// Deposits `ratio`, up to `burst`.
    pub fn deposit(self, level: u64) -> u64 {
        level
            .min(self.burst)
            .saturating_add(self.ratio)
            .min(self.burst)
    }
}

/// Shows a level of millionths as tokens: `9.5`, `10`, `0.000001`.
pub fn show_tokens(micros: u64) -> String {
    let whole = micros / UNIT;
    let frac = micros % UNIT;
    if frac == 0 {
        whole.to_string()
    } else {
        format!("{whole}.{frac:06}")
            .trim_end_matches('0')
            .to_owned()
    }
}

/// Parses a token amount with at most six decimals into millionths.
pub fn parse_tokens(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (whole, frac) = t.split_once('.').unwrap_or((t, ""));
    let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() && frac.is_empty() || !digits(whole) || !digits(frac) {
        return Err("must be a number like 10 or 0.1".into());
    }
    if frac.len() > 6 {
        return Err("at most six decimals".into());
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| "too large".to_owned())?
    };
    let frac: u64 = format!("{frac:0<6}").parse().unwrap_or(0);
    whole
        .checked_mul(UNIT)
        .and_then(|w| w.checked_add(frac))
        .ok_or_else(|| "too large".to_owned())
}

/// Checks a budget key: 1 to 128 of `A-Z a-z 0-9 . _ -`, not starting with
/// a dot, so that it names one file in the budget directory and no other.
pub fn check_key(key: &str) -> Result<(), String> {
    let ok = !key.is_empty()
        && key.len() <= 128
        && !key.starts_with('.')
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err("a key is 1 to 128 letters, digits, '.', '_' or '-', not starting with '.'".into())
    }
}

/// The default budget directory: `$XDG_RUNTIME_DIR/backoff`, else
/// `backoff-UID` in the temporary directory.
pub fn default_dir() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d).join("backoff"),
        _ => std::env::temp_dir().join(format!("backoff-{}", effective_uid())),
    }
}

fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
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

    const B: Bucket = Bucket {
        burst: 10 * UNIT,
        ratio: UNIT / 10,
    };

    #[test]
    fn a_retry_takes_a_whole_token_and_a_success_deposits_the_ratio() {
        assert_eq!(B.take(10 * UNIT), Some(9 * UNIT));
        assert_eq!(B.take(UNIT), Some(0));
        assert_eq!(B.take(UNIT - 1), None, "less than one token: no retry");
        assert_eq!(B.deposit(0), UNIT / 10);
        assert_eq!(B.deposit(10 * UNIT), 10 * UNIT, "never above the burst");
        let mut level = 0;
        for _ in 0..30 {
            level = B.deposit(level);
        }
        assert_eq!(
            level,
            3 * UNIT,
            "thirty deposits of 0.1 are exactly 3 tokens"
        );
    }

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

    #[test]
    fn token_amounts_parse_exactly() {
        assert_eq!(parse_tokens("10"), Ok(10 * UNIT));
        assert_eq!(parse_tokens("0.1"), Ok(UNIT / 10));
        assert_eq!(parse_tokens(".5"), Ok(UNIT / 2));
        assert_eq!(parse_tokens("0.000001"), Ok(1));
        for bad in [
            "",
            ".",
            "-1",
            "1e3",
            "0.0000001",
            "x",
            "99999999999999999999",
        ] {
            assert!(parse_tokens(bad).is_err(), "{bad:?}");
        }
        assert_eq!(show_tokens(9 * UNIT + UNIT / 2), "9.5");
        assert_eq!(show_tokens(10 * UNIT), "10");
        assert_eq!(show_tokens(1), "0.000001");
    }

    #[test]
    fn keys_name_one_file_and_no_other() {
        assert!(check_key("nightly-sync_1.a").is_ok());
        for bad in ["", ".hidden", "a/b", "..", "a b", &"x".repeat(129), "ключ"] {
            assert!(check_key(bad).is_err(), "{bad:?}");
        }
    }
}
