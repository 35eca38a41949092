//! Retry budgets shared by processes: the token bucket (`bucket`, pure) and
//! where it lives: a file per key for the processes of one machine (`file`),
//! or Redis for a fleet (`redis`, behind the cargo feature of that name).

pub mod bucket;
pub mod file;
#[cfg(feature = "redis")]
pub mod redis;
pub mod secret;

pub use secret::redact;

use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};

use crate::budget::file::FileBudget;
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

/// A retry budget, wherever it lives.
#[derive(Debug)]
pub enum Store {
    /// A file per key in a directory.
    File(FileBudget),
    /// A key in Redis.
    #[cfg(feature = "redis")]
    Redis(Box<redis::RedisBudget>),
}

impl Store {
    /// The current level, in millionths of a token.
    ///
    /// # Errors
    ///
    /// When the store cannot be used.
    pub fn level(&self) -> Result<u64, String> {
        match self {
            Store::File(f) => f.level().map_err(|e| e.to_string()),
            #[cfg(feature = "redis")]
            Store::Redis(r) => r.level(&mut Unwatched).map_err(|e| e.to_string()),
        }
    }

    /// Fills the bucket again.
    ///
    /// # Errors
    ///
    /// When the store cannot be used.
    pub fn reset(&self) -> Result<(), String> {
        match self {
            Store::File(f) => f.reset().map_err(|e| e.to_string()),
            #[cfg(feature = "redis")]
            Store::Redis(r) => r.reset(&mut Unwatched).map_err(|e| e.to_string()),
        }
    }

    /// Where the budget lives.
    pub fn describe(&self) -> String {
        match self {
            Store::File(f) => f.path().display().to_string(),
            #[cfg(feature = "redis")]
            Store::Redis(r) => r.describe(),
        }
    }
}

impl crate::run::RetryBudget for Store {
    fn take(&self, wait: &mut dyn Wait) -> Decision {
        match self {
            Store::File(f) => match f.take() {
                Ok(true) => Decision::Granted,
                Ok(false) => Decision::Refused,
                Err(e) => {
                    crate::report::say(&format!("retry budget unusable, not retrying: {e}"));
                    Decision::Refused
                }
            },
            #[cfg(feature = "redis")]
            Store::Redis(r) => r.take(wait),
        }
    }

    fn deposit(&self, wait: &mut dyn Wait) {
        match self {
            Store::File(f) => {
                if let Err(e) = f.deposit() {
                    crate::report::say(&format!("retry budget unusable, nothing deposited: {e}"));
                }
            }
            #[cfg(feature = "redis")]
            Store::Redis(r) => r.deposit(wait),
        }
    }
}
