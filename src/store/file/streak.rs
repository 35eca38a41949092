//! `--alert-after` on one host: the count of a job's failed runs in a row
//! in the file `KEY.streak` of the state directory, behind the same checks
//! and the same exclusive lock as the other state files (`file::StateFile`),
//! so that runs that end at once never lose a count. A success rewrites a
//! file that exists and makes none.

use std::time::Duration;

use crate::fleet::Found;
use crate::fleet::bucket::check_key;
use crate::fleet::streak::{self, Failures, RECORD_LEN, Tally};
use crate::report::Warnings;
use crate::run::Wait;
use crate::store::file::{Access, Record, State, StateDir, StateFile, found};
use crate::store::{Backend, StoreError, StreakBackend};

impl Record for Failures {
    const KIND: &'static str = "streak";
    const LEN: usize = RECORD_LEN;
    fn write(self) -> String {
        streak::record(self)
    }
    fn read(text: &[u8]) -> Option<Failures> {
        streak::parse_record(text)
    }
}

/// A count of failed runs kept in a file, shared by the processes of a
/// host.
#[derive(Debug, Clone)]
pub struct FileStreak {
    file: StateFile,
    alert_after: u64,
    warnings: Warnings,
}

impl FileStreak {
    /// The count `key` in `dir`; nothing is opened until it is used.
    ///
    /// # Errors
    ///
    /// When the key cannot name a file.
    pub fn open(
        dir: StateDir,
        key: &str,
        alert_after: u64,
        timeout: Duration,
        warnings: Warnings,
    ) -> Result<FileStreak, String> {
        check_key(key)?;
        Ok(FileStreak {
            file: StateFile::new(dir, key, Failures::KIND, timeout),
            alert_after,
            warnings,
        })
    }
}

impl Backend for FileStreak {
    fn describe(&self) -> String {
        self.file.describe()
    }

    fn server(&self) -> Option<String> {
        None
    }
}

impl StreakBackend for FileStreak {
    fn tally(&self, failed: bool, wait: &mut dyn Wait) -> Result<Tally, StoreError> {
        let (alert_after, warnings) = (self.alert_after, self.warnings.clone());
        // A success changes a count that exists, and makes no file.
        let access = if failed {
            Access::Change
        } else {
            Access::Rewrite
        };
        self.file
            .with_state(access, wait, move |state: State<Failures>| {
                if let State::Corrupt(why) = &state {
                    warnings.alert(&corrupt_line(why, failed));
                }
                let held = found(state).map(|f| f.0);
                let tally = streak::tally(held, failed, alert_after);
                let write = (failed || held != Found::Nothing).then_some(Failures(tally.after));
                Ok((write, tally))
            })
    }
}

/// What a run says of a record out of shape: once, and what it becomes.
pub(in crate::store) fn corrupt_line(why: &str, failed: bool) -> String {
    if failed {
        format!(
            "failure count {why}: taken as --alert-after failed runs in a row, so this failure alerts; the count is written anew"
        )
    } else {
        format!("failure count {why}: the run succeeded, and the count starts again")
    }
}
