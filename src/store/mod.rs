//! Where the retry budgets, circuit breakers, adaptive throttles and locks
//! shared by processes live (their rules are pure, in `fleet`): a file per
//! key for the processes of one machine (`file`), or Redis for a fleet
//! (`redis`, behind the cargo feature of that name, over a connection of
//! backoff's own that reads each reply within bounds). Each store keeps a
//! file per kind of record; this module holds what every kind shares: the
//! kinds (`Kind`), a state wherever it lives (`Shared<K>`), the errors and
//! the fail modes.

pub mod file;
pub mod once;
#[cfg(feature = "redis")]
pub mod redis;
pub mod secret;

pub use crate::fleet::Found;
pub use crate::fleet::bucket::Level;
pub use secret::redact;

use std::cell::Cell;
use std::io::PipeReader;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::event::{AlertNews, BreakerNews, LockNews, ThrottleNews};
use crate::fleet::breaker::{Admission, Breaker, Circuit, RunEnd};
use crate::fleet::bucket::Bucket;
use crate::fleet::lock::Holder;
pub use crate::fleet::lock::{Alarm, Forgotten, LockState, Settle};
use crate::fleet::throttle::{self, Throttle, Window};
use crate::report::Warnings;
use crate::run::{Decision, Wait, Waited};
use crate::store::file::{FileBreaker, FileBudget, FileThrottle, StateDir};

/// What to do when the budget store cannot be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailMode {
    /// Retry under the local policy alone, and say so once.
    Open,
    /// Do not retry.
    Closed,
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

/// The longest `--budget-store-timeout`: a decision is made before each
/// attempt or retry, so a run can wait for several in a row, and a store
/// that has not answered in a minute (a server frozen, a lock held by a
/// process that hangs) is better counted as unavailable, for the fail mode
/// to decide, than waited for longer. A wait that long also bounds how long
/// a server may take to send a reply, however slowly it sends it.
pub const MAX_STORE_TIMEOUT: Duration = Duration::from_mins(1);

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
    fn wait_ready(&mut self, pipe: Option<&PipeReader>, deadline: Instant) -> Waited {
        if crate::sys::fd::wait_readable(pipe, deadline) {
            Waited::Ready
        } else {
            Waited::TimedOut
        }
    }
}

/// The burst a reset fills a bucket to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refill {
    /// The burst the state records, else the one given.
    Recorded,
    /// The one given (`--budget-burst`), recorded from now on.
    Given,
}

/// What every store of a shared state tells of itself.
pub trait Backend: std::fmt::Debug {
    /// Where the state lives: a file, or a server and a key (without the
    /// server's secrets).
    fn describe(&self) -> String;
    /// The server, for messages about the state: `None` for a file, whose
    /// messages name it already.
    fn server(&self) -> Option<String>;
}

/// A store of retry budgets. Each call waits at most the store's timeout,
/// through `wait`, which a signal cuts short.
pub trait BudgetBackend: Backend {
    /// Takes a token for a retry; `Ok(false)` when there is none.
    ///
    /// # Errors
    ///
    /// When the store cannot be used, or a signal ends the wait.
    fn take(&self, wait: &mut dyn Wait) -> Result<bool, StoreError>;
    /// Deposits the ratio after a success.
    ///
    /// # Errors
    ///
    /// As `take`.
    fn deposit(&self, wait: &mut dyn Wait) -> Result<(), StoreError>;
    /// The current level, and the bucket the state records; a state that
    /// does not exist yet is a full bucket of the burst given, and records
    /// none. Creates nothing.
    ///
    /// # Errors
    ///
    /// As `take`, and when the state is corrupt.
    fn level(&self, wait: &mut dyn Wait) -> Result<Level, StoreError>;
    /// Fills the bucket to the burst `refill` says, repairing a corrupt
    /// state: what it found (its level at most the burst it records), and
    /// the bucket it was filled as. A budget without a state is left as it
    /// is: it is full.
    ///
    /// # Errors
    ///
    /// As `take`.
    fn reset(
        &self,
        refill: Refill,
        wait: &mut dyn Wait,
    ) -> Result<(Found<Level>, Bucket), StoreError>;
}

/// A store of circuit breakers, as `BudgetBackend` is of budgets.
pub trait BreakerBackend: Backend {
    /// Decides whether this run may start the command: the answer, the
    /// circuit as it was before, and the time of the decision (the
    /// server's, in Redis), in Unix milliseconds.
    ///
    /// # Errors
    ///
    /// When the store cannot be used, or a signal ends the wait.
    fn admit(&self, wait: &mut dyn Wait) -> Result<(Admission, Circuit, u64), StoreError>;
    /// Records how an admitted run ended (`probe`: its claim's end, when it
    /// was the probe): the circuit after, and the time.
    ///
    /// # Errors
    ///
    /// As `admit`.
    fn record(
        &self,
        end: RunEnd,
        probe: Option<u64>,
        wait: &mut dyn Wait,
    ) -> Result<(Circuit, u64), StoreError>;
    /// The circuit and the time now. Creates nothing.
    ///
    /// # Errors
    ///
    /// As `admit`, and when the state is corrupt.
    fn show(&self, wait: &mut dyn Wait) -> Result<(Circuit, u64), StoreError>;
    /// Closes the circuit, repairing a corrupt state: what it found, as
    /// stored, and the time. A circuit without a state is left as it is:
    /// it is closed.
    ///
    /// # Errors
    ///
    /// As `admit`.
    fn reset(&self, wait: &mut dyn Wait) -> Result<(Found<Circuit>, u64), StoreError>;
}

/// A store of adaptive throttles, as `BudgetBackend` is of budgets.
pub trait ThrottleBackend: Backend {
    /// Decides on an attempt, where `draw` is uniform in [0, 1), and counts
    /// it: the decision, and the window its counts cover, in milliseconds.
    ///
    /// # Errors
    ///
    /// When the store cannot be used, or a signal ends the wait.
    fn admit(
        &self,
        draw: f64,
        wait: &mut dyn Wait,
    ) -> Result<(throttle::Decision, u64), StoreError>;
    /// Counts an attempt the backend accepted.
    ///
    /// # Errors
    ///
    /// As `admit`.
    fn accept(&self, wait: &mut dyn Wait) -> Result<(), StoreError>;
    /// The window as stored, and the time now, in Unix milliseconds.
    /// Creates nothing.
    ///
    /// # Errors
    ///
    /// As `admit`, and when the state is corrupt.
    fn show(&self, wait: &mut dyn Wait) -> Result<(Window, u64), StoreError>;
    /// Empties the window, repairing a corrupt state: what it found, and
    /// the time. A window without a state is left as it is: it is empty.
    ///
    /// # Errors
    ///
    /// As `admit`.
    fn reset(&self, wait: &mut dyn Wait) -> Result<(Found<Window>, u64), StoreError>;
}

/// What a lock's store answered when asked for the lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquired {
    /// This run holds it, with the fencing token its acquisition took
    /// where the store gives one.
    Held {
        /// The token (`BACKOFF_LOCK_TOKEN`).
        token: Option<u64>,
        /// How long the run waits before it starts, and why: a lock the
        /// store had no trace of may have a holder that the store forgot
        /// (a file removed, a Redis that lost its data), which has not yet
        /// noticed and ended.
        settle: Option<Settle>,
    },
    /// Another run holds it (its record, when it could be read).
    Busy(Option<Holder>),
}

/// How a run's hold on its lock was lost, once it was, shared with the
/// thread that watches it (a lease's renewals, a lock file's path), which
/// wakes the run (`Alarm`).
#[derive(Clone, Default)]
struct Loss {
    why: Arc<Mutex<Option<String>>>,
    alarm: Arc<Mutex<Option<Alarm>>>,
    replaced: Arc<std::sync::atomic::AtomicBool>,
}

impl Loss {
    /// Marks the hold taken over by a run of `--lock-replace` (`why`
    /// names it) and wakes the run, once.
    fn replace(&self, why: String) {
        if self.why().is_none() {
            self.replaced
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        self.lose(why);
    }

    /// Whether the hold was lost to a run of `--lock-replace`.
    fn replaced(&self) -> bool {
        self.why().is_some() && self.replaced.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Marks the hold lost for `why` and wakes the run, once.
    fn lose(&self, why: String) {
        let mut was = self.why.lock().unwrap_or_else(PoisonError::into_inner);
        if was.is_some() {
            return;
        }
        *was = Some(why);
        drop(was);
        if let Some(wake) = self
            .alarm
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
        {
            wake();
        }
    }

    /// How the hold was lost, if it was.
    fn why(&self) -> Option<String> {
        self.why
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// What to call when the hold is lost.
    fn alarm(&self, alarm: Alarm) {
        *self.alarm.lock().unwrap_or_else(PoisonError::into_inner) = Some(alarm);
    }
}

/// A store of locks (`--lock`). Each call waits at most the store's
/// timeout (`acquire`: at most the patience given too), through `wait`.
pub trait LockBackend: Backend {
    /// Takes the lock for the run `me`, waiting in turn at most
    /// `patience` while another run holds it (told to `waiting` once, when
    /// the wait starts, with the holder's record if it can be read) or
    /// while the store does not answer, and by `by` (`--max-time`) at the
    /// latest.
    ///
    /// # Errors
    ///
    /// When the store cannot be used (still, at the end of the patience),
    /// or a signal ends the wait.
    fn acquire(
        &self,
        me: &Holder,
        patience: Duration,
        by: Option<Instant>,
        wait: &mut dyn Wait,
        waiting: &mut dyn FnMut(Option<&Holder>),
    ) -> Result<Acquired, StoreError>;
    /// Lets go of the lock this run holds, if it holds one, by `by` at the
    /// latest (a lease not let go runs out at the end of its term).
    ///
    /// # Errors
    ///
    /// When the store could not be told in time, or a signal cut that
    /// short.
    fn release(&self, wait: &mut dyn Wait, by: Option<Instant>) -> Result<(), StoreError>;
    /// Why this run's hold on the lock was lost, if it was (a lease that
    /// could not be renewed in time, a lock file removed).
    fn lost(&self) -> Option<String>;
    /// What to call when the run's hold is lost.
    fn alarm(&self, alarm: Alarm);
    /// Whether the hold was lost to a run of `--lock-replace`, which took
    /// the lock over.
    fn replaced(&self) -> bool {
        false
    }
    /// The lock as it is.
    ///
    /// # Errors
    ///
    /// When the store cannot be used.
    fn show(&self, wait: &mut dyn Wait) -> Result<LockState, StoreError>;
    /// Clears a free lock's record (and repairs a corrupt one); a held one
    /// is removed only with `force` (else an error that names the
    /// holder). What it found.
    ///
    /// # Errors
    ///
    /// When the store cannot be used, or the lock is held and `force` is
    /// not given.
    fn reset(&self, force: bool, wait: &mut dyn Wait) -> Result<LockState, StoreError>;
}

/// A store of counts of failed runs in a row (`--alert-after`), as
/// `BudgetBackend` is of budgets.
pub trait StreakBackend: Backend {
    /// Counts a run that `failed`, or starts the count again after a
    /// success, repairing a corrupt record (said): what it found and left.
    ///
    /// # Errors
    ///
    /// When the store cannot be used, or a signal ends the wait.
    fn tally(
        &self,
        failed: bool,
        wait: &mut dyn Wait,
    ) -> Result<crate::fleet::streak::Tally, StoreError>;
}

/// How a store is used, whatever it keeps.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The longest a call waits for the store (`--budget-store-timeout`).
    pub timeout: Duration,
    /// What a store that cannot be used, or a corrupt state, becomes
    /// (`--budget-store-fail`).
    pub fail: FailMode,
    /// Where what the store has to say goes.
    pub warnings: Warnings,
}

/// Where shared states live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A file per key in this directory.
    Dir(StateDir),
    /// A Redis server or cluster at this URL.
    Redis(String),
}

/// Why a store cannot be opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenError {
    /// The key cannot name a state: why.
    Key(String),
    /// The store's URL cannot be used: why.
    Store(String),
}

/// One kind of state that processes share and decide on (a retry budget, a
/// circuit breaker, an adaptive throttle): what its stores do, how it is
/// named, and how each store of it is opened. `Shared` serves every kind.
pub trait Kind {
    /// What a store of this kind does.
    type Backend: ?Sized + Backend;
    /// The limits a store of this kind decides with.
    type Limits;
    /// What it is called in messages: `circuit breaker`.
    const NOUN: &'static str;
    /// The option that names its key: `--breaker`.
    const FLAG: &'static str;
    /// How a warning names the state `key`: its noun and its key.
    fn subject(key: &str) -> String {
        format!("{} '{key}'", Self::NOUN)
    }
    /// What a store that cannot be used becomes for this kind, given
    /// `--budget-store-fail`'s mode: that mode, but for a lock, which has
    /// its own (`--lock-fail`).
    fn fail(_limits: &Self::Limits, given: FailMode) -> FailMode {
        given
    }
    /// The state `key`, in a file of `dir`.
    ///
    /// # Errors
    ///
    /// When the key cannot name a file.
    fn in_file(
        dir: StateDir,
        key: &str,
        limits: Self::Limits,
        settings: Settings,
    ) -> Result<Box<Self::Backend>, String>;
    /// The state `key`, in Redis at `url`.
    ///
    /// # Errors
    ///
    /// When the URL or the limits cannot be used.
    #[cfg(feature = "redis")]
    fn in_redis(
        url: &str,
        key: &str,
        limits: Self::Limits,
        settings: Settings,
    ) -> Result<Box<Self::Backend>, String>;
}

/// Retry budgets (`--budget`).
#[derive(Debug)]
pub enum Budgets {}

/// Circuit breakers (`--breaker`).
#[derive(Debug)]
pub enum Breakers {}

/// Adaptive throttles (`--throttle`).
#[derive(Debug)]
pub enum Throttles {}

impl Kind for Budgets {
    type Backend = dyn BudgetBackend;
    type Limits = Bucket;
    const NOUN: &'static str = "retry budget";
    const FLAG: &'static str = "--budget";
    // A run has one budget: its warnings name none.
    fn subject(_: &str) -> String {
        Self::NOUN.to_owned()
    }
    fn in_file(
        dir: StateDir,
        key: &str,
        bucket: Bucket,
        s: Settings,
    ) -> Result<Box<dyn BudgetBackend>, String> {
        let f = FileBudget::open(dir, key, bucket, s.timeout, s.fail, s.warnings)?;
        Ok(Box::new(f))
    }
    #[cfg(feature = "redis")]
    fn in_redis(
        url: &str,
        key: &str,
        bucket: Bucket,
        s: Settings,
    ) -> Result<Box<dyn BudgetBackend>, String> {
        let r = redis::RedisBudget::new(url, key, bucket, s.timeout, s.fail, s.warnings)?;
        Ok(Box::new(r))
    }
}

impl Kind for Breakers {
    type Backend = dyn BreakerBackend;
    type Limits = Breaker;
    const NOUN: &'static str = "circuit breaker";
    const FLAG: &'static str = "--breaker";
    fn in_file(
        dir: StateDir,
        key: &str,
        breaker: Breaker,
        s: Settings,
    ) -> Result<Box<dyn BreakerBackend>, String> {
        let f = FileBreaker::open(dir, key, breaker, s.timeout, s.fail, s.warnings)?;
        Ok(Box::new(f))
    }
    #[cfg(feature = "redis")]
    fn in_redis(
        url: &str,
        key: &str,
        breaker: Breaker,
        s: Settings,
    ) -> Result<Box<dyn BreakerBackend>, String> {
        let r = redis::RedisBreaker::new(url, key, breaker, s.timeout, s.fail, s.warnings)?;
        Ok(Box::new(r))
    }
}

impl Kind for Throttles {
    type Backend = dyn ThrottleBackend;
    type Limits = Throttle;
    const NOUN: &'static str = "adaptive throttle";
    const FLAG: &'static str = "--throttle";
    fn in_file(
        dir: StateDir,
        key: &str,
        throttle: Throttle,
        s: Settings,
    ) -> Result<Box<dyn ThrottleBackend>, String> {
        let f = FileThrottle::open(dir, key, throttle, s.timeout, s.fail, s.warnings)?;
        Ok(Box::new(f))
    }
    #[cfg(feature = "redis")]
    fn in_redis(
        url: &str,
        key: &str,
        throttle: Throttle,
        s: Settings,
    ) -> Result<Box<dyn ThrottleBackend>, String> {
        let r = redis::RedisThrottle::new(url, key, throttle, s.timeout, s.fail, s.warnings)?;
        Ok(Box::new(r))
    }
}

/// Locks (`--lock`).
#[derive(Debug)]
pub enum Locks {}

impl Kind for Locks {
    type Backend = dyn LockBackend;
    type Limits = LockLimits;
    const NOUN: &'static str = "lock";
    const FLAG: &'static str = "--lock";
    fn fail(limits: &LockLimits, _: FailMode) -> FailMode {
        limits.fail
    }
    fn in_file(
        dir: StateDir,
        key: &str,
        limits: LockLimits,
        s: Settings,
    ) -> Result<Box<dyn LockBackend>, String> {
        if limits.slots > 1 {
            let f = file::slots::Slots::in_files(&dir, key, limits.slots, s.timeout, &s.warnings)?;
            return Ok(Box::new(f));
        }
        let replace = limits
            .replace
            .then(|| file::replace::patience(limits.lease));
        let f = file::lock::FileLock::open(dir, key, "lock", s.timeout, s.warnings, replace)?;
        Ok(Box::new(f))
    }
    #[cfg(feature = "redis")]
    fn in_redis(
        url: &str,
        key: &str,
        limits: LockLimits,
        s: Settings,
    ) -> Result<Box<dyn LockBackend>, String> {
        if limits.slots > 1 {
            let r = redis::slots::RedisSlots::new(url, key, limits.slots, limits.lease, s.timeout)?;
            return Ok(Box::new(r));
        }
        let r = redis::lock::RedisLock::new(url, key, limits.lease, s.timeout, limits.replace)?;
        Ok(Box::new(r))
    }
}

// `--once-per`'s record: what every store of it holds and does (the
// kind, and the decision a run makes under its lock, are in `once`).

pub use crate::fleet::once::Stored;

/// A store of once-per records. Each call waits at most the store's
/// timeout, through `wait`.
pub trait OnceBackend: Backend {
    /// The period it decides on.
    fn period(&self) -> crate::fleet::once::Period;
    /// Whether the store's clock decides (Redis), not this host's.
    fn clocked(&self) -> bool;
    /// The record, and the deciding clock's time, in Unix milliseconds.
    ///
    /// # Errors
    ///
    /// When the store cannot be used, or a signal ends the wait.
    fn read(&self, wait: &mut dyn Wait) -> Result<(Stored, u64), StoreError>;
    /// Records `success`, its `done` the deciding clock's time now: the
    /// record written.
    ///
    /// # Errors
    ///
    /// As `read`.
    fn write(
        &self,
        success: &crate::fleet::once::Success,
        wait: &mut dyn Wait,
    ) -> Result<crate::fleet::once::Success, StoreError>;
    /// Removes the record: what it was, and the time.
    ///
    /// # Errors
    ///
    /// As `read`.
    fn reset(&self, wait: &mut dyn Wait) -> Result<(Stored, u64), StoreError>;
}

/// Counts of a job's failed runs in a row (`--alert-after`).
#[derive(Debug)]
pub enum Streaks {}

impl Kind for Streaks {
    type Backend = dyn StreakBackend;
    /// `--alert-after`.
    type Limits = u64;
    const NOUN: &'static str = "failure count";
    const FLAG: &'static str = "--alert-after";
    // A count that cannot be had alerts: never a failure swallowed.
    fn fail(_: &u64, _: FailMode) -> FailMode {
        FailMode::Closed
    }
    fn in_file(
        dir: StateDir,
        key: &str,
        alert_after: u64,
        s: Settings,
    ) -> Result<Box<dyn StreakBackend>, String> {
        let f = file::streak::FileStreak::open(dir, key, alert_after, s.timeout, s.warnings)?;
        Ok(Box::new(f))
    }
    #[cfg(feature = "redis")]
    fn in_redis(
        url: &str,
        key: &str,
        alert_after: u64,
        s: Settings,
    ) -> Result<Box<dyn StreakBackend>, String> {
        let r = redis::streak::RedisStreak::new(url, key, alert_after, s.timeout, s.warnings)?;
        Ok(Box::new(r))
    }
}

/// How a lock is held: the term of a lease in Redis (a file lock needs
/// none), and what a lock that cannot be had for certain becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockLimits {
    /// `--lock-ttl` (a lease in Redis expires this long after it was last
    /// renewed) and `--kill-after`.
    pub lease: crate::fleet::lock::Lease,
    /// `--lock-fail`: closed, the command does not run; open, it runs
    /// without the lock.
    pub fail: FailMode,
    /// `--lock-replace`: the run ends the holder and takes over.
    pub replace: bool,
    /// `--lock-limit`: how many runs hold the lock at once.
    pub slots: u32,
}

/// A shared state of kind `K`, wherever it lives, with what to do when its
/// store cannot be used: said once, then as the fail mode says.
pub struct Shared<K: Kind> {
    key: String,
    backend: Box<K::Backend>,
    fail: FailMode,
    warned: Cell<bool>,
    warnings: Warnings,
}

/// A retry budget, wherever it lives.
pub type Store = Shared<Budgets>;

/// A circuit breaker, wherever it lives.
pub type BreakerStore = Shared<Breakers>;

/// An adaptive throttle, wherever it lives.
pub type ThrottleStore = Shared<Throttles>;

/// A lock, wherever it lives.
pub type LockStore = Shared<Locks>;

/// A count of failed runs in a row, wherever it lives.
pub type StreakStore = Shared<Streaks>;

impl<K: Kind> std::fmt::Debug for Shared<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("kind", &K::NOUN)
            .field("key", &self.key)
            .field("backend", &self.backend)
            .field("fail", &self.fail)
            .finish_non_exhaustive()
    }
}

impl<K: Kind> Shared<K> {
    /// The state `key` of `limits` at `location`, used as `settings` say.
    /// Nothing is opened or connected until it is used.
    ///
    /// # Errors
    ///
    /// When the key cannot name a state, or the store's URL or the limits
    /// cannot be used there (a Redis URL in a build without Redis).
    pub fn open(
        key: &str,
        limits: K::Limits,
        location: Location,
        settings: Settings,
    ) -> Result<Shared<K>, OpenError> {
        let (fail, warnings) = (K::fail(&limits, settings.fail), settings.warnings.clone());
        let backend = match location {
            Location::Dir(dir) => K::in_file(dir, key, limits, settings).map_err(OpenError::Key)?,
            #[cfg(feature = "redis")]
            Location::Redis(url) => {
                K::in_redis(&url, key, limits, settings).map_err(OpenError::Store)?
            }
            #[cfg(not(feature = "redis"))]
            Location::Redis(_) => {
                return Err(OpenError::Store(
                    "this build of backoff has no Redis support (cargo feature \"redis\")".into(),
                ));
            }
        };
        Ok(Shared {
            key: key.to_owned(),
            backend,
            fail,
            warned: Cell::new(false),
            warnings,
        })
    }

    /// The state's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The store itself, whose calls return its errors as they are, where
    /// `Shared`'s follow the fail mode.
    pub fn backend(&self) -> &K::Backend {
        &self.backend
    }

    /// Where the state lives.
    pub fn describe(&self) -> String {
        self.backend.describe()
    }

    /// The server of the state, for messages about it: a file's messages
    /// name the file already.
    pub fn server(&self) -> Option<String> {
        self.backend.server()
    }

    /// The line of an error of the store: `circuit breaker 'api'
    /// (redis://host): why`.
    pub fn error(&self, e: &StoreError) -> String {
        match self.server() {
            Some(server) => format!("{} '{}' ({server}): {e}", K::NOUN, self.key),
            None => format!("{} '{}': {e}", K::NOUN, self.key),
        }
    }

    /// A store that cannot be used (`why`): says so once, with what
    /// happens instead as the fail mode says (`open`, `closed`), and
    /// returns whether the fail mode is open.
    fn fall_back(&self, why: &str, open: &str, closed: &str) -> bool {
        let opened = self.fail == FailMode::Open;
        if !self.warned.replace(true) {
            let store = self
                .server()
                .map(|s| format!(" store {s}"))
                .unwrap_or_default();
            let then = if opened { open } else { closed };
            // A protection asked for is off, or the command does not run:
            // no output mode hides it.
            self.warnings.alert(&format!(
                "{}{store} unavailable ({why}); {then}",
                K::subject(&self.key)
            ));
        }
        opened
    }

    /// What a call of the store that failed for any reason but a signal
    /// becomes, once said: `then` (the same in either fail mode).
    fn unanswered(&self, e: StoreError, then: &str) -> Option<i32> {
        match e {
            StoreError::Failed(why) => {
                self.fall_back(&why, then, then);
                None
            }
            StoreError::Interrupted(sig) => Some(sig),
        }
    }
}

impl Store {
    /// The current level, and the bucket the state records (see
    /// `BudgetBackend::level`).
    ///
    /// # Errors
    ///
    /// When the store cannot be used.
    pub fn level(&self) -> Result<Level, StoreError> {
        self.backend.level(&mut Unwatched)
    }

    /// Fills the bucket to the burst `refill` says, repairing a corrupt
    /// state: what it found, and the bucket it was filled as (see
    /// `BudgetBackend::reset`).
    ///
    /// # Errors
    ///
    /// When the store cannot be used.
    pub fn reset(&self, refill: Refill) -> Result<(Found<Level>, Bucket), StoreError> {
        self.backend.reset(refill, &mut Unwatched)
    }
}

/// What a budget's store does instead of a decision it cannot make.
const BUDGET_OPEN: &str = "retrying under the local policy";
const BUDGET_CLOSED: &str = "not retrying (--budget-store-fail closed)";

impl crate::run::RetryBudget for Store {
    fn take(&self, wait: &mut dyn Wait) -> Decision {
        match self.backend.take(wait) {
            Ok(true) => Decision::Granted,
            Ok(false) => Decision::Refused,
            Err(StoreError::Interrupted(sig)) => Decision::Interrupted(sig),
            Err(StoreError::Failed(why)) => {
                if self.fall_back(&why, BUDGET_OPEN, BUDGET_CLOSED) {
                    Decision::Granted
                } else {
                    Decision::Refused
                }
            }
        }
    }

    fn deposit(&self, wait: &mut dyn Wait) {
        if let Err(StoreError::Failed(why)) = self.backend.deposit(wait) {
            self.fall_back(&why, BUDGET_OPEN, BUDGET_CLOSED);
        }
    }
}

impl BreakerStore {
    /// The circuit and the time now (the server's, in Redis), in Unix
    /// milliseconds. Creates nothing.
    ///
    /// # Errors
    ///
    /// When the store cannot be used, or the state is corrupt.
    pub fn show(&self) -> Result<(Circuit, u64), StoreError> {
        self.backend.show(&mut Unwatched)
    }

    /// Closes the circuit, repairing a corrupt state: what it found, and
    /// the time.
    ///
    /// # Errors
    ///
    /// When the store cannot be used.
    pub fn reset(&self) -> Result<(Found<Circuit>, u64), StoreError> {
        self.backend.reset(&mut Unwatched)
    }
}

impl crate::run::CircuitBreaker for BreakerStore {
    fn key(&self) -> &str {
        &self.key
    }

    fn admit(&self, wait: &mut dyn Wait) -> Result<BreakerNews, i32> {
        match self.backend.admit(wait) {
            Ok((admission, before, now_ms)) => Ok(BreakerNews::Admitted {
                admission,
                before,
                now_ms,
            }),
            Err(StoreError::Interrupted(sig)) => Err(sig),
            Err(StoreError::Failed(why)) => {
                let run = self.fall_back(
                    &why,
                    "running the command",
                    "not running the command (--budget-store-fail closed)",
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
        match self.backend.record(end, probe, wait) {
            Ok(after) => Some(after),
            Err(e) => {
                self.unanswered(e, "how this run ended is not recorded");
                None
            }
        }
    }
}

impl ThrottleStore {
    /// The window as stored, and the time now, in Unix milliseconds.
    /// Creates nothing.
    ///
    /// # Errors
    ///
    /// When the store cannot be used, or the state is corrupt.
    pub fn show(&self) -> Result<(Window, u64), StoreError> {
        self.backend.show(&mut Unwatched)
    }

    /// Empties the window, repairing a corrupt state: what it found, and
    /// the time.
    ///
    /// # Errors
    ///
    /// When the store cannot be used.
    pub fn reset(&self) -> Result<(Found<Window>, u64), StoreError> {
        self.backend.reset(&mut Unwatched)
    }
}

impl crate::run::AdaptiveThrottle for ThrottleStore {
    fn key(&self) -> &str {
        &self.key
    }

    fn admit(&self, draw: f64, wait: &mut dyn Wait) -> Result<ThrottleNews, i32> {
        match self.backend.admit(draw, wait) {
            Ok((decision, window_ms)) => Ok(ThrottleNews::Decided {
                decision,
                window_ms,
            }),
            Err(StoreError::Interrupted(sig)) => Err(sig),
            Err(StoreError::Failed(why)) => {
                let send = self.fall_back(
                    &why,
                    "sending the attempt",
                    "skipping the attempt (--budget-store-fail closed)",
                );
                Ok(ThrottleNews::Unavailable { send })
            }
        }
    }

    fn accept(&self, wait: &mut dyn Wait) -> Option<i32> {
        self.backend
            .accept(wait)
            .err()
            .and_then(|e| self.unanswered(e, "the accept is not counted"))
    }
}

impl LockStore {
    /// The lock as it is (creates nothing).
    ///
    /// # Errors
    ///
    /// When the store cannot be used.
    pub fn show(&self) -> Result<LockState, StoreError> {
        self.backend.show(&mut Unwatched)
    }

    /// Clears the lock (see `LockBackend::reset`).
    ///
    /// # Errors
    ///
    /// When the store cannot be used, or the lock is held and `force` is
    /// not given.
    pub fn reset(&self, force: bool) -> Result<LockState, StoreError> {
        self.backend.reset(force, &mut Unwatched)
    }
}

impl crate::run::RunLock for Shared<Locks> {
    fn key(&self) -> &str {
        &self.key
    }

    fn acquire(
        &self,
        run_id: &str,
        patience: Duration,
        by: Option<Instant>,
        wait: &mut dyn Wait,
        waiting: &mut dyn FnMut(Option<&Holder>),
    ) -> Result<LockNews, i32> {
        let started = Instant::now();
        let me = Holder {
            pid: std::process::id(),
            since_ms: crate::store::file::now_ms(),
            token: None,
            run_id: run_id.to_owned(),
            host: crate::sys::machine::host_name(),
        };
        let mut waited = false;
        let mut told = |holder: Option<&Holder>| {
            waited = true;
            waiting(holder);
        };
        let acquired = self.backend.acquire(&me, patience, by, wait, &mut told);
        // How long the run waited, if it waited at all.
        let waited = waited.then(|| started.elapsed());
        match acquired {
            Ok(Acquired::Held { token, settle }) => Ok(LockNews::Held {
                token,
                waited,
                settle,
            }),
            Ok(Acquired::Busy(holder)) => Ok(LockNews::Busy { holder, waited }),
            Err(StoreError::Interrupted(sig)) => Err(sig),
            Err(StoreError::Failed(why)) => {
                let run = self.fall_back(
                    &why,
                    "running the command WITHOUT the lock (--lock-fail open)",
                    "not running the command: a run that cannot be sure it holds the lock does not run (--lock-fail open would run it without)",
                );
                Ok(LockNews::Unavailable { run, why })
            }
        }
    }

    fn release(&self, wait: &mut dyn Wait, by: Option<Instant>) -> Option<i32> {
        match self.backend.release(wait, by) {
            Ok(()) => None,
            Err(StoreError::Interrupted(sig)) => Some(sig),
            Err(StoreError::Failed(why)) => {
                self.warnings.warn(&format!(
                    "{}: this run could not let go of it ({why}): it keeps other runs out until its lease runs out",
                    Locks::subject(&self.key)
                ));
                None
            }
        }
    }

    fn lost(&self) -> Option<String> {
        self.backend.lost()
    }

    fn replaced(&self) -> bool {
        self.backend.replaced()
    }
}

impl crate::run::FailureStreak for StreakStore {
    fn key(&self) -> &str {
        &self.key
    }

    fn tally(&self, failed: bool, wait: &mut dyn Wait) -> Result<AlertNews, i32> {
        match self.backend.tally(failed, wait) {
            Ok(t) if failed => Ok(AlertNews::Failed { failures: t.after }),
            Ok(t) => Ok(AlertNews::Reset {
                was: match t.before {
                    Found::Nothing => Some(0),
                    Found::Held(n) => Some(n),
                    Found::Corrupt => None,
                },
            }),
            Err(StoreError::Interrupted(sig)) => Err(sig),
            Err(StoreError::Failed(why)) => {
                let then = if failed {
                    "this failure alerts, as without --alert-after"
                } else {
                    "the count is not started again, and the next failure may alert sooner"
                };
                self.fall_back(&why, then, then);
                Ok(AlertNews::Unavailable { failed })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::AdaptiveThrottle;

    fn throttle_in(dir: std::path::PathBuf, fail: FailMode) -> Result<ThrottleStore, String> {
        let limits = Throttle {
            window_ms: 120_000,
            k_milli: 2000,
        };
        let settings = Settings {
            timeout: Duration::from_secs(10),
            fail,
            warnings: Warnings::default(),
        };
        Shared::open("api", limits, Location::Dir(StateDir::Given(dir)), settings)
            .map_err(|e| format!("{e:?}"))
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
