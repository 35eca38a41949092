//! A retry budget kept in a file (`KEY.budget`): its fixed-length record,
//! and the token bucket's decisions made on it under the file's lock.

use std::time::Duration;

use crate::fleet::bucket::{Bucket, MAX_BURST, UNIT, check_key};
use crate::report::Warnings;
use crate::run::Wait;
use crate::store::file::{Access, Record, State, StateDir, StateFile, found, number};
use crate::store::{Backend, BudgetBackend, FailMode, Found, Level, Refill, StoreError};

/// The state file's only line, fixed in length so that an update is one
/// write of the same size at offset 0: a process killed at any moment
/// leaves the old state or the new one, never a mix. It records the level
/// and the bucket of the run that wrote it.
fn record(level: u64, made: Bucket) -> String {
    format!(
        "backoff-budget v2 micro-tokens {level:020} burst {:020} ratio {:020}\n",
        made.burst, made.ratio
    )
}

/// The length of a record.
const RECORD_LEN: usize = 106;

/// The length of a record of the first version, which holds the level
/// alone: still read, and replaced by a record of the current one at the
/// next change.
const RECORD_V1_LEN: usize = 52;

/// Parses the state file; `None` if it is not exactly a record of either
/// version, or records a bucket no run can be given (a burst below one
/// token or above the largest, a ratio above the burst, a level above it).
fn parse(text: &[u8]) -> Option<Level> {
    if let Some(digits) = text
        .strip_prefix(b"backoff-budget v1 micro-tokens ")
        .and_then(|t| t.strip_suffix(b"\n"))
    {
        return Some(Level {
            micros: number(digits)?,
            made: None,
        });
    }
    let rest = text
        .strip_prefix(b"backoff-budget v2 micro-tokens ")?
        .strip_suffix(b"\n")?;
    let (level, rest) = rest.split_at_checked(20)?;
    let (burst, ratio) = rest.strip_prefix(b" burst ")?.split_at_checked(20)?;
    let ratio = ratio.strip_prefix(b" ratio ")?;
    let (micros, burst, ratio) = (number(level)?, number(burst)?, number(ratio)?);
    let valid = (UNIT..=MAX_BURST * UNIT).contains(&burst) && ratio <= burst && micros <= burst;
    valid.then_some(Level {
        micros,
        made: Some(Bucket { burst, ratio }),
    })
}

impl Record for Level {
    const KIND: &'static str = "budget";
    const LEN: usize = RECORD_LEN;
    const READ: &'static [usize] = &[RECORD_LEN, RECORD_V1_LEN];
    fn write(self) -> String {
        match self.made {
            Some(made) => record(self.micros, made),
            // Never written so: every change records its bucket.
            None => format!("backoff-budget v1 micro-tokens {:020}\n", self.micros),
        }
    }
    fn read(text: &[u8]) -> Option<Level> {
        parse(text)
    }
}

/// A budget kept in a file, shared by processes.
#[derive(Debug, Clone)]
pub struct FileBudget {
    file: StateFile,
    key: String,
    bucket: Bucket,
    fail: FailMode,
    warnings: Warnings,
}

impl Backend for FileBudget {
    fn describe(&self) -> String {
        self.file.describe()
    }

    fn server(&self) -> Option<String> {
        None
    }
}

impl FileBudget {
    /// The budget `key` in `dir` (`None`: there is no default directory).
    /// Nothing is opened or created until the budget is used. `timeout`
    /// bounds the wait for the lock; `fail` says what a corrupt state file
    /// becomes: a fresh bucket (open), or nothing (closed: left alone).
    ///
    /// # Errors
    ///
    /// When the key cannot name a file.
    pub fn open(
        dir: StateDir,
        key: &str,
        bucket: Bucket,
        timeout: Duration,
        fail: FailMode,
        warnings: Warnings,
    ) -> Result<FileBudget, String> {
        check_key(key)?;
        Ok(FileBudget {
            file: StateFile::new(dir, key, Level::KIND, timeout),
            key: key.to_owned(),
            bucket,
            fail,
            warnings,
        })
    }

    /// The level a retry or a deposit starts from: a corrupt state is
    /// reported and becomes a fresh bucket (fail mode open), or is left
    /// alone and the budget is not used (closed).
    fn level_of(&self, state: State<Level>) -> Result<u64, StoreError> {
        match state {
            State::Fresh => Ok(self.bucket.burst),
            State::Held(level) => Ok(level.micros.min(self.bucket.burst)),
            State::Corrupt(why) if self.fail == FailMode::Open => {
                self.warnings
                    .warn(&format!("retry budget {why}; starting a fresh bucket"));
                Ok(self.bucket.burst)
            }
            State::Corrupt(why) => Err(StoreError::Failed(why)),
        }
    }

    /// A state as it counts: its level at most the burst it records, else
    /// the one given.
    fn capped(&self, level: Level) -> Level {
        let limit = level.made.map_or(self.bucket.burst, |b| b.burst);
        Level {
            micros: level.micros.min(limit),
            ..level
        }
    }

    /// A state of `micros` tokens, made with this budget's bucket.
    fn made(&self, micros: u64) -> Level {
        Level {
            micros,
            made: Some(self.bucket),
        }
    }
}

impl BudgetBackend for FileBudget {
    /// Takes a token for a retry; `Ok(false)` when there is none.
    ///
    /// # Errors
    ///
    /// When the state file cannot be used, or a signal ends the wait.
    fn take(&self, wait: &mut dyn Wait) -> Result<bool, StoreError> {
        let this = self.clone();
        self.file.with_state(Access::Change, wait, move |state| {
            let level = this.level_of(state)?;
            Ok(match this.bucket.take(level) {
                Some(new) => (Some(this.made(new)), true),
                None => (Some(this.made(level)), false),
            })
        })
    }

    /// Deposits `ratio` after a success.
    ///
    /// # Errors
    ///
    /// As `take`.
    fn deposit(&self, wait: &mut dyn Wait) -> Result<(), StoreError> {
        let this = self.clone();
        self.file.with_state(Access::Change, wait, move |state| {
            let level = this.level_of(state)?;
            Ok((Some(this.made(this.bucket.deposit(level))), ()))
        })
    }

    /// The current level, and the bucket the state records. Creates
    /// nothing; no state yet is a full bucket of the burst given.
    ///
    /// # Errors
    ///
    /// When the state file cannot be used or is corrupt.
    fn level(&self, wait: &mut dyn Wait) -> Result<Level, StoreError> {
        let burst = self.bucket.burst;
        let this = self.clone();
        self.file
            .with_state(Access::Look, wait, move |state: State<Level>| match state {
                State::Fresh => Ok((
                    None,
                    Level {
                        micros: burst,
                        made: None,
                    },
                )),
                State::Held(level) => Ok((None, this.capped(level))),
                State::Corrupt(why) => Err(StoreError::Failed(format!(
                    "{why}; 'backoff budget reset {}' with the same --budget-dir repairs it",
                    this.key
                ))),
            })
    }

    /// Fills the bucket to its burst again, whatever the state file held
    /// (a corrupt state included): the burst it records
    /// (`Refill::Recorded`, when it records one), else the one given. What
    /// it found, and the bucket it was filled as; no state file is left
    /// as it is (none is made: a bucket without a state is full).
    ///
    /// # Errors
    ///
    /// When the state file cannot be used.
    fn reset(
        &self,
        refill: Refill,
        wait: &mut dyn Wait,
    ) -> Result<(Found<Level>, Bucket), StoreError> {
        let this = self.clone();
        self.file
            .with_state(Access::Rewrite, wait, move |state: State<Level>| {
                let found = found(state).map(|level| this.capped(level));
                let bucket = match found {
                    Found::Held(Level {
                        made: Some(made), ..
                    }) if refill == Refill::Recorded => made,
                    _ => this.bucket,
                };
                let full = Level {
                    micros: bucket.burst,
                    made: Some(bucket),
                };
                Ok(((found != Found::Nothing).then_some(full), (found, bucket)))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::Waited;
    use crate::store::file::{Handoff, locked};
    use crate::sys::files::StateLock;
    use std::fs::File;
    use std::sync::Arc;
    use std::time::Instant;

    /// A wait that ends at once, as a timeout that has passed.
    struct Expired;

    impl Wait for Expired {
        fn wait_ready(&mut self, _: Option<&std::io::PipeReader>, _: Instant) -> Waited {
            Waited::TimedOut
        }
    }

    // flock(2)'s queue: Windows' locks (LockFileEx) are handed over by
    // other rules, and tests/integration/windows.rs shares a budget
    // between processes there.
    #[cfg(unix)]
    #[test]
    fn a_wait_given_up_is_taken_over_by_the_next_call_and_lets_go_of_a_lock_that_comes_late()
    -> Result<(), Box<dyn std::error::Error>> {
        // Only its owner may enter it (mode 0700 on Unix).
        let dir = tempfile::tempdir()?;
        let bucket = Bucket {
            burst: 10 * UNIT,
            ratio: UNIT / 10,
        };
        let budget = FileBudget::open(
            StateDir::Given(dir.path().to_owned()),
            "late",
            bucket,
            Duration::from_secs(20),
            FailMode::Closed,
            Warnings::default(),
        )?;
        budget
            .deposit(&mut crate::store::Unwatched)
            .map_err(|e| e.to_string())?;
        // Another open description of the file: its lock conflicts as
        // another process's would.
        let holder = File::open(dir.path().join("late.budget"))?;
        holder.state_lock()?;

        let given_up = |budget: &FileBudget| {
            let error = budget.take(&mut Expired).err().map(|e| e.to_string());
            let error = error.unwrap_or_default();
            assert!(error.contains("timed out after 20.0s"), "{error}");
            let pending = locked(&budget.file.pending);
            let queued = pending.as_ref().map(|q| Arc::clone(&q.handoff));
            assert!(queued.is_some(), "a wait given up");
            queued.inspect(|h| assert!(matches!(*locked(h), Handoff::Waiting(None))))
        };
        let first = given_up(&budget).ok_or("no wait given up")?;
        let second = given_up(&budget).ok_or("no wait given up")?;
        assert!(Arc::ptr_eq(&first, &second), "taken over, not started anew");

        // The lock comes to the wait that no call wants: it is let go, and
        // another takes it.
        holder.state_unlock()?;
        let (tx, rx) = std::sync::mpsc::channel();
        let other = File::open(dir.path().join("late.budget"))?;
        std::thread::spawn(move || tx.send(other.state_lock().map(|()| other)));
        let other = rx.recv_timeout(Duration::from_secs(20))??;
        // The kernel may have given it to the other first: once that one
        // lets go, the wait's thread has it, and lets go of it at once.
        drop(other);
        let deadline = Instant::now() + Duration::from_secs(20);
        while !matches!(*locked(&first), Handoff::Done) {
            assert!(Instant::now() < deadline, "the late lock was never let go");
            std::thread::yield_now();
        }
        // A wait let go of is not taken over; the level is untouched.
        assert!(
            budget
                .take(&mut crate::store::Unwatched)
                .map_err(|e| e.to_string())?
        );
        assert_eq!(
            budget
                .level(&mut crate::store::Unwatched)
                .map_err(|e| e.to_string())?
                .micros,
            9 * UNIT
        );
        Ok(())
    }

    #[test]
    fn records_round_trip_and_anything_else_is_corrupt() {
        let made = |burst, ratio| Bucket { burst, ratio };
        for (v, bucket) in [
            (0, made(UNIT, 0)),
            (1, made(3 * UNIT, UNIT / 10)),
            (10 * UNIT, made(10 * UNIT, UNIT / 10)),
            (MAX_BURST * UNIT, made(MAX_BURST * UNIT, MAX_BURST * UNIT)),
        ] {
            let text = record(v, bucket);
            assert_eq!(text.len(), RECORD_LEN);
            let level = Level {
                micros: v,
                made: Some(bucket),
            };
            assert_eq!(parse(text.as_bytes()), Some(level));
            assert_eq!(level.write(), text);
        }
        // The first version's records are still read: a level alone.
        for v in [0, 1, 10 * UNIT, u64::MAX] {
            let old = format!("backoff-budget v1 micro-tokens {v:020}\n");
            assert_eq!(old.len(), RECORD_V1_LEN);
            let level = Level {
                micros: v,
                made: None,
            };
            assert_eq!(parse(old.as_bytes()), Some(level));
            assert_eq!(level.write(), old);
        }
        let good = record(2 * UNIT, made(3 * UNIT, UNIT / 10));
        for bad in [
            String::new(),
            "10\n".to_owned(),
            "backoff-budget v1 micro-tokens 12\n".to_owned(),
            "backoff-budget v1 micro-tokens 0000000000000000000x\n".to_owned(),
            good.trim_end().to_owned(),
            good.replace(" burst ", " burst  "),
            good.replace("v2", "v3"),
            good.replace("ratio 0", "ratio x"),
            // No run is given a burst below one token or above the largest,
            // a ratio above its burst, or a level above it.
            record(0, made(0, 0)),
            record(0, made(UNIT - 1, 0)),
            record(0, made(MAX_BURST * UNIT + 1, 0)),
            record(0, made(UNIT, UNIT + 1)),
            record(UNIT + 1, made(UNIT, 0)),
            record(u64::MAX, made(u64::MAX, u64::MAX)),
        ] {
            assert_eq!(parse(bad.as_bytes()), None, "{bad:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_are_a_state_or_corrupt(text in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..130)) {
            if let Some(level) = parse(&text) {
                proptest::prop_assert_eq!(level.write().into_bytes(), text);
            }
        }
    }
}
