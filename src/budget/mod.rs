//! Where the retry budgets, circuit breakers and adaptive throttles shared
//! by processes live (their rules are pure, in `fleet`): a file per key for
//! the processes of
//! one machine (`file`), or Redis for a fleet (`redis`, behind the cargo
//! feature of that name).

pub mod file;
#[cfg(feature = "redis")]
pub mod redis;
pub mod secret;

pub use secret::redact;

use std::cell::Cell;
use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};

use crate::budget::file::{FileBreaker, FileBudget, FileThrottle};
use crate::event::{BreakerNews, ThrottleNews};
use crate::fleet::breaker::{Circuit, RunEnd};
use crate::fleet::bucket::Bucket;
use crate::fleet::throttle::Window;
use crate::report::Warnings;
use crate::run::{Decision, Wait, Waited};

/// What to do when the budget store cannot be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailMode {
    /// Retry under the local policy alone, and say so once.
    Open,
    /// Do not retry.
    Closed,
}

impl FailMode {
    /// The answer to a retry when the store cannot be used.
    pub fn decision(self) -> Decision {
        match self {
            FailMode::Open => Decision::Granted,
            FailMode::Closed => Decision::Refused,
        }
    }
}

/// Why a store call gave no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// The store cannot be used (or did not answer in time): why.
    Failed(String),
    /// This terminating signal ended the wait.
    Interrupted(i32),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Failed(why) => f.write_str(why),
            StoreError::Interrupted(sig) => write!(f, "interrupted by signal {sig}"),
        }
    }
}

/// The deadline of a store call that may take `timeout` from now (a
/// timeout too long to represent is a year).
pub fn deadline_after(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout)
        .or_else(|| now.checked_add(Duration::from_hours(8766)))
        .unwrap_or(now)
}

/// Waiting for a store where backoff watches no signal (`backoff budget`):
/// a signal keeps its default action, which ends the process.
pub struct Unwatched;

impl Wait for Unwatched {
    fn wait_ready(&mut self, fd: Option<BorrowedFd<'_>>, deadline: Instant) -> Waited {
        if crate::sys::fd::wait_readable(fd, deadline) {
            Waited::Ready
        } else {
            Waited::TimedOut
        }
    }
}

/// A bucket's state as a store holds it: its level, in millionths of a
/// token, and the burst and ratio of the run that last changed it (`None`
/// in a state written by a version of backoff that did not record them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Level {
    /// Tokens left, in millionths.
    pub micros: u64,
    /// The bucket the state was made with.
    pub made: Option<Bucket>,
}

/// The burst a reset fills a bucket to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refill {
    /// The burst the state records, else the one given.
    Recorded,
    /// The one given (`--budget-burst`), recorded from now on.
    Given,
}

/// Where a retry budget lives.
#[derive(Debug)]
pub enum Place {
    /// A file per key in a directory.
    File(FileBudget),
    /// A key in Redis.
    #[cfg(feature = "redis")]
    Redis(Box<redis::RedisBudget>),
}

/// A retry budget, wherever it lives, with what to do when its store
/// cannot be used: said once, then as the fail mode says.
#[derive(Debug)]
pub struct Store {
    place: Place,
    fail: FailMode,
    warned: Cell<bool>,
    warnings: Warnings,
}

impl Store {
    /// A budget in `place`, following `fail` when the store cannot be used,
    /// which it tells to `warnings`.
    pub fn new(place: Place, fail: FailMode, warnings: Warnings) -> Store {
        Store {
            place,
            fail,
            warned: Cell::new(false),
            warnings,
        }
    }

    /// Takes a token for a retry: `Ok(false)` when there is none, and the
    /// store's error as it is, where `take` follows the fail mode.
    ///
    /// # Errors
    ///
    /// When the store cannot be used, or a signal ends the wait.
    pub fn take_token(&self, wait: &mut dyn Wait) -> Result<bool, StoreError> {
        match &self.place {
            Place::File(f) => f.take(wait),
            #[cfg(feature = "redis")]
            Place::Redis(r) => r.take(wait),
        }
    }

    /// The current level, and the bucket the state records; a state that
    /// does not exist yet is a full bucket of the burst given, and records
    /// none. Creates nothing.
    ///
    /// # Errors
    ///
    /// When the store cannot be used.
    pub fn level(&self) -> Result<Level, StoreError> {
        match &self.place {
            Place::File(f) => f.level(&mut Unwatched),
            #[cfg(feature = "redis")]
            Place::Redis(r) => r.level(&mut Unwatched),
        }
    }

    /// Fills the bucket to the burst `refill` says, repairing a corrupt
    /// state: the bucket it was filled as.
    ///
    /// # Errors
    ///
    /// When the store cannot be used.
    pub fn reset(&self, refill: Refill) -> Result<Bucket, StoreError> {
        match &self.place {
            Place::File(f) => f.reset(refill, &mut Unwatched),
            #[cfg(feature = "redis")]
            Place::Redis(r) => r.reset(refill, &mut Unwatched),
        }
    }

    /// Where the budget lives.
    pub fn describe(&self) -> String {
        match &self.place {
            Place::File(f) => f.describe(),
            #[cfg(feature = "redis")]
            Place::Redis(r) => r.describe(),
        }
    }

    /// The server of a budget, for messages about it: a file's messages
    /// name the file already.
    pub fn server(&self) -> Option<String> {
        match &self.place {
            Place::File(_) => None,
            #[cfg(feature = "redis")]
            Place::Redis(r) => Some(r.url()),
        }
    }

    /// Says once that the store cannot be used, and what happens instead.
    fn warn(&self, error: &str) {
        if !self.warned.replace(true) {
            let then = match self.fail {
                FailMode::Open => "retrying under the local policy",
                FailMode::Closed => "not retrying (--budget-store-fail closed)",
            };
            let store = self
                .server()
                .map(|s| format!(" store {s}"))
                .unwrap_or_default();
            self.warnings.warn(&format!(
                "retry budget{store} unavailable ({error}); {then}"
            ));
        }
    }
}

impl crate::run::RetryBudget for Store {
    fn take(&self, wait: &mut dyn Wait) -> Decision {
        match self.take_token(wait) {
            Ok(true) => Decision::Granted,
            Ok(false) => Decision::Refused,
            Err(StoreError::Interrupted(sig)) => Decision::Interrupted(sig),
            Err(StoreError::Failed(why)) => {
                self.warn(&why);
                self.fail.decision()
            }
        }
    }

    fn deposit(&self, wait: &mut dyn Wait) {
        let deposited = match &self.place {
            Place::File(f) => f.deposit(wait),
            #[cfg(feature = "redis")]
            Place::Redis(r) => r.deposit(wait),
        };
        if let Err(StoreError::Failed(why)) = deposited {
            self.warn(&why);
        }
    }
}

/// Where a circuit breaker lives.
#[derive(Debug)]
pub enum BreakerPlace {
    /// A file per key in a directory.
    File(FileBreaker),
    /// A key in Redis.
    #[cfg(feature = "redis")]
    Redis(Box<redis::RedisBreaker>),
}

/// A circuit breaker, wherever it lives, with what to do when its store
/// cannot be used: said once, then as the fail mode says (open: run the
/// command; closed: do not).
#[derive(Debug)]
pub struct BreakerStore {
    key: String,
    place: BreakerPlace,
    fail: FailMode,
    warned: Cell<bool>,
    warnings: Warnings,
}

impl BreakerStore {
    /// The breaker `key` in `place`, following `fail` when the store cannot
    /// be used, which it tells to `warnings`.
    pub fn new(key: &str, place: BreakerPlace, fail: FailMode, warnings: Warnings) -> BreakerStore {
        BreakerStore {
            key: key.to_owned(),
            place,
            fail,
            warned: Cell::new(false),
            warnings,
        }
    }

    /// The circuit and the time now (the server's, in Redis), in Unix
    /// milliseconds. Creates nothing.
    ///
    /// # Errors
    ///
    /// When the store cannot be used, or the state is corrupt.
    pub fn show(&self) -> Result<(Circuit, u64), StoreError> {
        match &self.place {
            BreakerPlace::File(f) => f.show(&mut Unwatched),
            #[cfg(feature = "redis")]
            BreakerPlace::Redis(r) => r.show(&mut Unwatched),
        }
    }

    /// Closes the circuit, repairing a corrupt state.
    ///
    /// # Errors
    ///
    /// When the store cannot be used.
    pub fn reset(&self) -> Result<(), StoreError> {
        match &self.place {
            BreakerPlace::File(f) => f.reset(&mut Unwatched),
            #[cfg(feature = "redis")]
            BreakerPlace::Redis(r) => r.reset(&mut Unwatched),
        }
    }

    /// Where the breaker lives.
    pub fn describe(&self) -> String {
        match &self.place {
            BreakerPlace::File(f) => f.describe(),
            #[cfg(feature = "redis")]
            BreakerPlace::Redis(r) => r.describe(),
        }
    }

    /// The server of a breaker, for messages about it.
    pub fn server(&self) -> Option<String> {
        match &self.place {
            BreakerPlace::File(_) => None,
            #[cfg(feature = "redis")]
            BreakerPlace::Redis(r) => Some(r.url()),
        }
    }

    /// Says once that the store cannot be used, and `then` what happens.
    fn warn(&self, error: &str, then: &str) {
        if !self.warned.replace(true) {
            let store = self
                .server()
                .map(|s| format!(" store {s}"))
                .unwrap_or_default();
            self.warnings.warn(&format!(
                "circuit breaker '{}'{store} unavailable ({error}); {then}",
                self.key
            ));
        }
    }
}

impl crate::run::CircuitBreaker for BreakerStore {
    fn key(&self) -> &str {
        &self.key
    }

    fn admit(&self, wait: &mut dyn Wait) -> Result<BreakerNews, i32> {
        let admitted = match &self.place {
            BreakerPlace::File(f) => f.admit(wait),
            #[cfg(feature = "redis")]
            BreakerPlace::Redis(r) => r.admit(wait),
        };
        match admitted {
            Ok((admission, before, now_ms)) => Ok(BreakerNews::Admitted {
                admission,
                before,
                now_ms,
            }),
            Err(StoreError::Interrupted(sig)) => Err(sig),
            Err(StoreError::Failed(why)) => {
                let run = self.fail == FailMode::Open;
                self.warn(
                    &why,
                    if run {
                        "running the command"
                    } else {
                        "not running the command (--budget-store-fail closed)"
                    },
                );
                Ok(BreakerNews::Unavailable { run })
            }
        }
    }

    fn record(
        &self,
        end: RunEnd,
        probe: Option<u64>,
        wait: &mut dyn Wait,
    ) -> Option<(Circuit, u64)> {
        let recorded = match &self.place {
            BreakerPlace::File(f) => f.record(end, probe, wait),
            #[cfg(feature = "redis")]
            BreakerPlace::Redis(r) => r.record(end, probe, wait),
        };
        match recorded {
            Ok(after) => Some(after),
            Err(StoreError::Failed(why)) => {
                self.warn(&why, "how this run ended is not recorded");
                None
            }
            Err(StoreError::Interrupted(_)) => None,
        }
    }
}

/// Where an adaptive throttle lives.
#[derive(Debug)]
pub enum ThrottlePlace {
    /// A file per key in a directory.
    File(FileThrottle),
}

/// An adaptive throttle, wherever it lives, with what to do when its store
/// cannot be used: said once, then as the fail mode says (open: send the
/// attempt; closed: skip it).
#[derive(Debug)]
pub struct ThrottleStore {
    key: String,
    place: ThrottlePlace,
    fail: FailMode,
    warned: Cell<bool>,
    warnings: Warnings,
}

impl ThrottleStore {
    /// The throttle `key` in `place`, following `fail` when the store
    /// cannot be used, which it tells to `warnings`.
    pub fn new(
        key: &str,
        place: ThrottlePlace,
        fail: FailMode,
        warnings: Warnings,
    ) -> ThrottleStore {
        ThrottleStore {
            key: key.to_owned(),
            place,
            fail,
            warned: Cell::new(false),
            warnings,
        }
    }

    /// The window as stored, and the time now, in Unix milliseconds.
    /// Creates nothing.
    ///
    /// # Errors
    ///
    /// When the store cannot be used, or the state is corrupt.
    pub fn show(&self) -> Result<(Window, u64), StoreError> {
        match &self.place {
            ThrottlePlace::File(f) => f.show(&mut Unwatched),
        }
    }

    /// Empties the window, repairing a corrupt state.
    ///
    /// # Errors
    ///
    /// When the store cannot be used.
    pub fn reset(&self) -> Result<(), StoreError> {
        match &self.place {
            ThrottlePlace::File(f) => f.reset(&mut Unwatched),
        }
    }

    /// Where the throttle lives.
    pub fn describe(&self) -> String {
        match &self.place {
            ThrottlePlace::File(f) => f.describe(),
        }
    }

    /// The server of a throttle, for messages about it: a file's messages
    /// name the file already.
    pub fn server(&self) -> Option<String> {
        match &self.place {
            ThrottlePlace::File(_) => None,
        }
    }

    /// Says once that the store cannot be used, and `then` what happens.
    fn warn(&self, error: &str, then: &str) {
        if !self.warned.replace(true) {
            let store = self
                .server()
                .map(|s| format!(" store {s}"))
                .unwrap_or_default();
            self.warnings.warn(&format!(
                "adaptive throttle '{}'{store} unavailable ({error}); {then}",
                self.key
            ));
        }
    }
}

impl crate::run::AdaptiveThrottle for ThrottleStore {
    fn key(&self) -> &str {
        &self.key
    }

    fn admit(&self, draw: f64, wait: &mut dyn Wait) -> Result<ThrottleNews, i32> {
        let admitted = match &self.place {
            ThrottlePlace::File(f) => f.admit(draw, wait),
        };
        match admitted {
            Ok((decision, window_ms)) => Ok(ThrottleNews::Decided {
                decision,
                window_ms,
            }),
            Err(StoreError::Interrupted(sig)) => Err(sig),
            Err(StoreError::Failed(why)) => {
                let send = self.fail == FailMode::Open;
                self.warn(
                    &why,
                    if send {
                        "sending the attempt"
                    } else {
                        "skipping the attempt (--budget-store-fail closed)"
                    },
                );
                Ok(ThrottleNews::Unavailable { send })
            }
        }
    }

    fn accept(&self, wait: &mut dyn Wait) {
        let accepted = match &self.place {
            ThrottlePlace::File(f) => f.accept(wait),
        };
        if let Err(StoreError::Failed(why)) = accepted {
            self.warn(&why, "the accept is not counted");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::throttle::Throttle;
    use crate::run::AdaptiveThrottle;

    fn throttle_in(dir: std::path::PathBuf, fail: FailMode) -> Result<ThrottleStore, String> {
        let limits = Throttle {
            window_ms: 120_000,
            k_milli: 2000,
        };
        let timeout = Duration::from_secs(10);
        let warnings = Warnings::default();
        let file = FileThrottle::open(Some(dir), "api", limits, timeout, fail, warnings.clone())?;
        Ok(ThrottleStore::new(
            "api",
            ThrottlePlace::File(file),
            fail,
            warnings,
        ))
    }

    #[test]
    fn a_throttle_store_decides_or_follows_its_fail_mode() -> Result<(), String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let t = throttle_in(dir.path().join("store"), FailMode::Open)?;
        assert_eq!(t.key(), "api");
        assert_eq!(t.server(), None);
        let news = t.admit(0.5, &mut Unwatched);
        assert!(
            matches!(news, Ok(ThrottleNews::Decided { decision, window_ms: 120_000 }) if decision.send),
            "{news:?}"
        );
        t.accept(&mut Unwatched);
        let (w, now) = t.show().map_err(|e| e.to_string())?;
        assert_eq!((w.counts(now).requests, w.counts(now).accepts), (1, 1));
        // A regular file where the directory should be: the store cannot
        // be used.
        let not_a_dir = dir.path().join("file");
        std::fs::write(&not_a_dir, "").map_err(|e| e.to_string())?;
        for (fail, send) in [(FailMode::Open, true), (FailMode::Closed, false)] {
            let t = throttle_in(not_a_dir.clone(), fail)?;
            for _ in 0..2 {
                assert_eq!(
                    t.admit(0.5, &mut Unwatched),
                    Ok(ThrottleNews::Unavailable { send })
                );
                t.accept(&mut Unwatched);
            }
            assert!(t.warned.get());
            assert!(t.reset().is_err());
        }
        Ok(())
    }
}
