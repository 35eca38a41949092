//! Retry budgets shared by processes: the token bucket (`bucket`, pure) and
//! where it lives: a file per key for the processes of one machine (`file`),
//! or Redis for a fleet (`redis`, behind the cargo feature of that name).

pub mod bucket;
pub mod file;
#[cfg(feature = "redis")]
pub mod redis;
pub mod secret;

pub use secret::redact;

use crate::budget::file::FileBudget;

/// What to do when the budget store cannot be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailMode {
    /// Retry under the local policy alone, and say so once.
    Open,
    /// Do not retry.
    Closed,
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
            Store::Redis(r) => r.level(),
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
            Store::Redis(r) => r.reset(),
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
    fn take(&self) -> bool {
        match self {
            Store::File(f) => f.take().unwrap_or_else(|e| {
                crate::report::say(&format!("retry budget unusable, not retrying: {e}"));
                false
            }),
            #[cfg(feature = "redis")]
            Store::Redis(r) => r.take(),
        }
    }

    fn deposit(&self) {
        match self {
            Store::File(f) => {
                if let Err(e) = f.deposit() {
                    crate::report::say(&format!("retry budget unusable, nothing deposited: {e}"));
                }
            }
            #[cfg(feature = "redis")]
            Store::Redis(r) => r.deposit(),
        }
    }
}
