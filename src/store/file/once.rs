//! `--once-per` on one host: the record of the job's last success in a
//! file `KEY.once` of the state directory, beside the job's lock file,
//! read and written by the run that holds that lock (so never by two runs
//! at once), on this host's clock.
//!
//! It is read as the other state files are (`file::StateFile`: never
//! through a symbolic link, never waiting on a FIFO, only a regular file
//! of this user's that others cannot write), and at most a record's
//! length and a byte more of it. Anything else in its place (a link, a
//! FIFO, a file of another user, a megabyte of garbage) is no record: the
//! job runs (see `once`). A success is written to a file of its own
//! beside it, then renamed over it, so that a reader never sees half a
//! record and whatever was in its place is replaced, not followed.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::fleet::bucket::check_key;
use crate::fleet::once::{MAX_RECORD, Period, Success};
use crate::run::Wait;
use crate::store::file::now_ms as host_ms;
use crate::store::file::{Access, StateDir, StateFile, failed, why};
use crate::store::{Backend, StoreError};
use crate::store::{OnceBackend, Stored};
use crate::sys::files;

/// A once-per record kept in a file.
#[derive(Debug)]
pub struct FileOnce {
    file: StateFile,
    /// The directory, where there is one, and the file's name in it.
    place: Option<(PathBuf, String)>,
    period: Period,
}

impl FileOnce {
    /// The record of `key` in `dir`, deciding on `period`; nothing is
    /// opened until it is used.
    ///
    /// # Errors
    ///
    /// When the key cannot name a file.
    pub fn open(
        dir: StateDir,
        key: &str,
        period: Period,
        timeout: Duration,
    ) -> Result<FileOnce, String> {
        check_key(key)?;
        let name = format!("{key}.once");
        let place = match &dir {
            StateDir::Given(d) | StateDir::InHome { dir: d, .. } => Some((d.clone(), name)),
            StateDir::Unknown(_) => None,
        };
        Ok(FileOnce {
            file: StateFile::new(dir, key, "once", timeout),
            place,
            period,
        })
    }

    /// What the file holds, read within bounds.
    fn stored(&self) -> Stored {
        let (mut file, path) = match self.file.open_file(Access::Look) {
            Ok(Some(opened)) => opened,
            Ok(None) => return Stored::Nothing,
            Err(e) => return Stored::Hostile(e.to_string()),
        };
        read_record(&mut file, &path)
    }
}

/// The record in `file`, read within bounds.
fn read_record(file: &mut File, path: &Path) -> Stored {
    let mut text = Vec::with_capacity(MAX_RECORD);
    if let Err(e) = file.take(MAX_RECORD as u64 + 1).read_to_end(&mut text) {
        return Stored::Hostile(format!("'{}' cannot be read ({})", path.display(), why(&e)));
    }
    if text.is_empty() {
        return Stored::Nothing;
    }
    Success::parse(&text).map_or_else(
        || {
            let what = if text.len() > MAX_RECORD {
                format!("more than {MAX_RECORD} bytes")
            } else {
                "no record".to_owned()
            };
            Stored::Hostile(format!("'{}' holds {what}", path.display()))
        },
        Stored::Record,
    )
}

/// Writes `text` to a new file `temp`, then renames it to `path`.
fn replace(temp: &Path, path: &Path, text: &str) -> io::Result<()> {
    // A file left by a run killed between the two is this host's own.
    let _ = std::fs::remove_file(temp);
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    let mut file = files::no_follow(&mut options, 0o600, true).open(temp)?;
    let written = file
        .write_all(text.as_bytes())
        .and_then(|()| std::fs::rename(temp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(temp);
    }
    written
}

impl Backend for FileOnce {
    fn describe(&self) -> String {
        self.file.describe()
    }

    fn server(&self) -> Option<String> {
        None
    }
}

impl OnceBackend for FileOnce {
    fn period(&self) -> Period {
        self.period
    }

    fn clocked(&self) -> bool {
        false
    }

    fn read(&self, _wait: &mut dyn Wait) -> Result<(Stored, u64), StoreError> {
        Ok((self.stored(), host_ms()))
    }

    fn write(&self, success: &Success, _wait: &mut dyn Wait) -> Result<Success, StoreError> {
        let Some((dir, name)) = &self.place else {
            return Err(StoreError::Failed("no state directory".into()));
        };
        let written = Success {
            done_ms: host_ms().max(success.at_ms),
            ..success.clone()
        };
        let path = dir.join(name);
        let temp = dir.join(format!(".{name}.{}", std::process::id()));
        replace(&temp, &path, &written.record()).map_err(|e| failed(&path, &e))?;
        Ok(written)
    }

    fn reset(&self, _wait: &mut dyn Wait) -> Result<(Stored, u64), StoreError> {
        let stored = self.stored();
        if let Some((dir, name)) = &self.place {
            let path = dir.join(name);
            match std::fs::remove_file(&path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(failed(&path, &e)),
                _ => {}
            }
        }
        Ok((stored, host_ms()))
    }
}
