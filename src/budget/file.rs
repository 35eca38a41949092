//! Retry budgets, circuit breakers and adaptive throttles kept in one small
//! file per key,
//! shared by the processes of one machine, updated under an exclusive lock.
//! Nothing is opened until the budget is used; the directory and the file
//! are opened without following a symbolic link, and neither is trusted
//! when it belongs to another user or others may write to it. A lock that
//! another process holds is waited for in the kernel's queue of the file's
//! waiters, by a thread of its own, at most the store's timeout; a signal
//! ends the wait at once, and a lock that comes after the wait was given up
//! is let go at once. At most a record's size of the file is read, and a
//! file that does not hold a valid state is replaced by a fresh bucket or
//! left alone, as the fail mode says, and never stops the command.

use std::ffi::OsString;
use std::fs::{File, TryLockError};
use std::io::{self, PipeReader, PipeWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, mpsc};
use std::time::Duration;

use crate::budget::{
    Backend, BreakerBackend, BudgetBackend, FailMode, Found, Level, Refill, StoreError,
    ThrottleBackend, deadline_after,
};
use crate::duration::human;
use crate::fleet::breaker::{Admission, Breaker, Circuit, RunEnd};
use crate::fleet::bucket::{Bucket, MAX_BURST, UNIT, check_key};
use crate::fleet::throttle::{self, SLOTS, Slot, Throttle, Window};
use crate::report::Warnings;
use crate::run::{Wait, Waited};
use crate::sys::fd::{open_dir, open_in};
use crate::sys::files::{self, StateLock};

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

/// Twenty digits exactly, as a record writes a number.
fn number(digits: &[u8]) -> Option<u64> {
    if digits.len() != 20 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

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

/// Where the state files are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateDir {
    /// A directory given (`--budget-dir`, `$XDG_STATE_HOME/backoff`): made,
    /// with its parents, where it is missing.
    Given(PathBuf),
    /// The default `dir` in the home `home`, `~/.local/state/backoff`: the
    /// home is never made, and a directory in it only inside one of the
    /// running user's own, so that no other user's home gets a directory
    /// they cannot enter. `xdg` says why a `XDG_STATE_HOME` set gave no
    /// place.
    InHome {
        home: PathBuf,
        dir: PathBuf,
        xdg: Option<String>,
    },
    /// No directory: why.
    Unknown(String),
}

/// The default directory's path in the home.
const IN_HOME: [&str; 3] = [".local", "state", "backoff"];

/// The advice of a message about the default directory.
const GIVE_A_DIR: &str = "give --budget-dir DIR or an absolute XDG_STATE_HOME";

/// Why a variable gives no directory, or the absolute path it gives.
fn absolute_path(name: &str, value: Option<OsString>) -> Result<PathBuf, String> {
    match value {
        None => Err(format!("{name} is not set")),
        Some(v) if v.is_empty() => Err(format!("{name} is empty, and ignored")),
        Some(v) => {
            let path = PathBuf::from(v);
            if path.is_absolute() {
                Ok(path)
            } else {
                let shown = crate::report::cut_quote(&path.to_string_lossy(), 100).into_owned();
                Err(format!("{name} '{shown}' is relative, and ignored"))
            }
        }
    }
}

/// The default directory of the state files, the same for a user's cron
/// jobs and terminals, and in their home where no other user can create
/// it: `$XDG_STATE_HOME/backoff`, else `~/.local/state/backoff`. Relative
/// and empty values are ignored, as the XDG base directory specification
/// says, and said to be when no directory is left. On Windows it is
/// `%LOCALAPPDATA%\backoff` (`sys::files::app_data`).
pub fn default_dir() -> StateDir {
    if let Some(dir) = files::app_data() {
        return StateDir::Given(dir.join("backoff"));
    }
    default_dir_of(std::env::var_os("XDG_STATE_HOME"), std::env::var_os("HOME"))
}

/// The default directory, given the values of `XDG_STATE_HOME` and `HOME`.
fn default_dir_of(xdg: Option<OsString>, home: Option<OsString>) -> StateDir {
    let (xdg_set, home_set) = (xdg.is_some(), home.is_some());
    // Why a XDG_STATE_HOME that is set gives no place (one not set is the
    // usual case, and goes without saying).
    let xdg = match absolute_path("XDG_STATE_HOME", xdg) {
        Ok(state) => return StateDir::Given(state.join("backoff")),
        Err(why) => xdg_set.then_some(why),
    };
    match absolute_path("HOME", home) {
        Ok(home) => StateDir::InHome {
            dir: home.join(IN_HOME.iter().collect::<PathBuf>()),
            home,
            xdg,
        },
        Err(_) if !xdg_set && !home_set => StateDir::Unknown(format!(
            "no budget directory: neither XDG_STATE_HOME nor HOME is set; {GIVE_A_DIR}"
        )),
        Err(home) => StateDir::Unknown(no_default_dir(xdg.as_deref(), &home)),
    }
}

/// The message of no default directory: why `XDG_STATE_HOME` gave none
/// (when it is set), and why the home gives none.
fn no_default_dir(xdg: Option<&str>, home: &str) -> String {
    let xdg = xdg.map(|x| format!("{x}; ")).unwrap_or_default();
    format!("no budget directory: {xdg}{home}; {GIVE_A_DIR}")
}

/// Looks for the default directory in `home`, and makes what is missing
/// of it when `make`, each directory inside one of the running user's own
/// (mode 0700): whether it exists now. The home itself is never made.
/// `xdg` says why `XDG_STATE_HOME` gave no place.
///
/// # Errors
///
/// When the home does not exist or cannot be used, or a directory would
/// have to be made inside another user's: the fail mode decides.
fn find_in_home(home: &Path, xdg: Option<&str>, make: bool) -> Result<bool, StoreError> {
    let no_dir = |why: String| StoreError::Failed(no_default_dir(xdg, &why));
    let named = |p: &Path| {
        if p == home {
            format!("HOME '{}'", p.display())
        } else {
            format!("'{}'", p.display())
        }
    };
    let mut at = home.to_owned();
    match std::fs::metadata(&at) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(no_dir(format!("{} is not a directory", named(&at)))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(no_dir(format!(
                "{} does not exist, and is not made",
                named(&at)
            )));
        }
        Err(e) => {
            return Err(no_dir(format!(
                "{} cannot be used: {}",
                named(&at),
                why(&e)
            )));
        }
    }
    for part in IN_HOME {
        let next = at.join(part);
        match std::fs::metadata(&next) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(no_dir(format!("{} is not a directory", named(&next)))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let other = files::not_own_dir(&at)
                    .map_err(|e| no_dir(format!("{} cannot be used: {}", named(&at), why(&e))))?;
                if let Some(other) = other {
                    return Err(no_dir(format!(
                        "{} {other}, and no directory is made in it",
                        named(&at)
                    )));
                }
                if !make {
                    return Ok(false);
                }
                match files::create_private_dir(&next, false) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(failed(&next, &e)),
                }
            }
            Err(e) => return Err(failed(&next, &e)),
        }
        at = next;
    }
    Ok(true)
}

/// What a state file held.
pub(super) enum State<T> {
    /// Nothing yet: a fresh state.
    Fresh,
    /// A valid state.
    Held(T),
    /// Not a state: why.
    Corrupt(String),
}

/// The record of one kind of state file: its name's suffix, its fixed
/// length, and how it is read and written.
pub(super) trait Record: Copy + PartialEq {
    /// `budget`, `breaker` or `throttle`: the file name's suffix, and the
    /// words of its messages.
    const KIND: &'static str;
    /// The length of a record: no state file is read further.
    const LEN: usize;
    /// The lengths of the records read: `LEN`, and those of older versions.
    const READ: &'static [usize] = &[Self::LEN];
    /// The record's text, `LEN` bytes.
    fn write(self) -> String;
    /// The state a record holds; `None` if the text is not one.
    fn read(text: &[u8]) -> Option<Self>;
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

/// How a state file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Access {
    /// To look: nothing is created, the lock is shared.
    Look,
    /// To change: the directory and the file are created if need be.
    Change,
    /// To change a state that exists (a reset): nothing is created, the
    /// lock is exclusive.
    Rewrite,
}

impl Access {
    /// Whether the state may be written.
    fn writes(self) -> bool {
        self != Access::Look
    }
}

/// What a reset found in a state file.
pub(super) fn found<T>(state: State<T>) -> Found<T> {
    match state {
        State::Fresh => Found::Nothing,
        State::Held(t) => Found::Held(t),
        State::Corrupt(_) => Found::Corrupt,
    }
}

/// A state file of a key: opened, checked, locked, read and written.
#[derive(Debug, Clone)]
pub(super) struct StateFile {
    /// The directory.
    dir: StateDir,
    /// The file's name in it.
    name: String,
    /// How long the lock is waited for.
    timeout: Duration,
    /// The wait for the lock that the last call gave up, while its thread
    /// still waits in the kernel's queue: the next call of the same access
    /// to the same file takes it over rather than start another.
    pending: Arc<Mutex<Option<LockWait>>>,
}

/// A decision to make under the lock, on the thread that holds it: reads
/// the state, changes it and sends the answer to the call that asked.
type Job = Box<dyn FnOnce(&mut File) + Send>;

/// A wait for the lock of a state file in the kernel's queue of its
/// waiters, by a thread of its own, which makes the decision of the call
/// that still wants it, or else lets go of the lock at once.
#[derive(Debug)]
struct LockWait {
    /// What the thread and the calls agree on.
    handoff: Arc<Mutex<Handoff>>,
    /// Ends (readable) when the thread is done: the decision made, the lock
    /// let go, or the lock not to be had.
    done: PipeReader,
    /// The file's device and inode.
    file_id: (u64, u64),
    /// Which lock is waited for.
    access: Access,
}

/// Where a wait for the lock stands. Each change is made under the mutex,
/// so that exactly one of two things happens to a lock that comes: the
/// thread makes the decision of the call that still wants it, or, when no
/// call does, lets go of it.
enum Handoff {
    /// The thread waits, with the decision of the call that waits for it,
    /// if one does.
    Waiting(Option<Job>),
    /// The thread holds the lock and makes the decision.
    Deciding,
    /// The decision is made, or the lock came when no call wanted it; the
    /// lock is let go.
    Done,
    /// The lock could not be waited for: why.
    Failed(io::Error),
}

impl std::fmt::Debug for Handoff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Handoff::Waiting(job) => write!(f, "Waiting(wanted: {})", job.is_some()),
            Handoff::Deciding => f.write_str("Deciding"),
            Handoff::Done => f.write_str("Done"),
            Handoff::Failed(e) => write!(f, "Failed({e})"),
        }
    }
}

/// The mutex's value, even if a thread panicked while it held it (every
/// change to it is one assignment).
fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Takes the lock `access` needs on `file`, waiting for it: shared to
/// look, exclusive to change (flock(2) on Unix, `LockFileEx` on Windows,
/// whole-file either way).
fn take_lock(file: &File, access: Access) -> io::Result<()> {
    match access {
        Access::Look => file.state_lock_shared(),
        Access::Change | Access::Rewrite => file.state_lock(),
    }
}

/// The body of a lock wait's thread: waits in the kernel's queue for the
/// lock of `file`, makes the decision of the call that still wants it,
/// lets go of the lock, and ends, which closes `done`. The decision is
/// made here rather than handed back, so that the lock passes from one
/// process to the next with one wake-up.
fn wait_in_queue(mut file: File, access: Access, handoff: &Mutex<Handoff>, done: PipeWriter) {
    let got = loop {
        match take_lock(&file, access) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            other => break other,
        }
    };
    let job = {
        let mut state = locked(handoff);
        match (got, std::mem::replace(&mut *state, Handoff::Done)) {
            (Err(e), _) => {
                *state = Handoff::Failed(e);
                None
            }
            (Ok(()), Handoff::Waiting(Some(job))) => {
                *state = Handoff::Deciding;
                Some(job)
            }
            (Ok(()), _) => None,
        }
    };
    if let Some(job) = job {
        job(&mut file);
        *locked(handoff) = Handoff::Done;
    }
    let _ = file.state_unlock();
    drop(file);
    drop(done);
}

impl LockWait {
    /// Starts a thread that waits for the lock of `file`, to make `job`.
    fn start(file: &File, file_id: (u64, u64), access: Access, job: Job) -> io::Result<LockWait> {
        // A duplicate shares the file's open description, and so its lock;
        // it is closed on exec, so that no command inherits the lock.
        let theirs = file.try_clone()?;
        let (done, end) = std::io::pipe()?;
        let handoff = Arc::new(Mutex::new(Handoff::Waiting(Some(job))));
        let shared = Arc::clone(&handoff);
        std::thread::Builder::new()
            .name("state file lock".into())
            .stack_size(64 * 1024)
            .spawn(move || wait_in_queue(theirs, access, &shared, end))?;
        Ok(LockWait {
            handoff,
            done,
            file_id,
            access,
        })
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

pub(super) fn refuse(path: &Path, why: &str) -> StoreError {
    StoreError::Failed(format!("'{}' {why}", path.display()))
}

/// An error of the system, as a message says it: `permission denied`.
pub(super) fn why(e: &io::Error) -> String {
    let why = e.to_string();
    let why = why.find(" (os error").map_or(why.as_str(), |i| &why[..i]);
    why.to_lowercase()
}

pub(super) fn failed(path: &Path, e: &io::Error) -> StoreError {
    refuse(path, &format!("cannot be used: {}", why(e)))
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

/// The breaker file's only line, fixed in length like the budget's.
fn breaker_record(c: Circuit) -> String {
    format!(
        "backoff-breaker v1 failures {:010} opened {:020} until {:020} probe {:020}\n",
        c.failures, c.opened_ms, c.until_ms, c.probe_until_ms
    )
}

/// Parses a breaker record; `None` if it is not exactly one of a circuit a
/// store may hold (`Circuit::checked`).
fn parse_breaker(text: &[u8]) -> Option<Circuit> {
    let text = std::str::from_utf8(text).ok()?;
    let rest = text
        .strip_prefix("backoff-breaker v1 ")?
        .strip_suffix('\n')?;
    let fields: Vec<&str> = rest.split(' ').collect();
    let [
        "failures",
        failures,
        "opened",
        opened,
        "until",
        until,
        "probe",
        probe,
    ] = fields[..]
    else {
        return None;
    };
    let number = |digits: &str, len: usize| {
        (digits.len() == len && digits.bytes().all(|b| b.is_ascii_digit()))
            .then(|| digits.parse::<u64>().ok())
            .flatten()
    };
    Circuit {
        failures: u32::try_from(number(failures, 10)?).ok()?,
        opened_ms: number(opened, 20)?,
        until_ms: number(until, 20)?,
        probe_until_ms: number(probe, 20)?,
    }
    .checked()
}

/// The length of a breaker record.
const BREAKER_LEN: usize = 121;

impl Record for Circuit {
    const KIND: &'static str = "breaker";
    const LEN: usize = BREAKER_LEN;
    fn write(self) -> String {
        breaker_record(self)
    }
    fn read(text: &[u8]) -> Option<Circuit> {
        parse_breaker(text)
    }
}

/// The time now, in Unix milliseconds, as the file store's decisions use it.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A circuit breaker kept in a file, shared by processes.
#[derive(Debug, Clone)]
pub struct FileBreaker {
    file: StateFile,
    key: String,
    breaker: Breaker,
    fail: FailMode,
    warnings: Warnings,
}

impl Backend for FileBreaker {
    fn describe(&self) -> String {
        self.file.describe()
    }

    fn server(&self) -> Option<String> {
        None
    }
}

impl FileBreaker {
    /// The breaker `key` in `dir`, as `FileBudget::open` opens a budget: a
    /// corrupt state becomes a closed circuit (open), or is left alone and
    /// the store counts as unavailable (closed).
    ///
    /// # Errors
    ///
    /// When the key cannot name a file.
    pub fn open(
        dir: StateDir,
        key: &str,
        breaker: Breaker,
        timeout: Duration,
        fail: FailMode,
        warnings: Warnings,
    ) -> Result<FileBreaker, String> {
        check_key(key)?;
        Ok(FileBreaker {
            file: StateFile::new(dir, key, Circuit::KIND, timeout),
            key: key.to_owned(),
            breaker,
            fail,
            warnings,
        })
    }

    fn circuit_of(&self, state: State<Circuit>) -> Result<Circuit, StoreError> {
        match state {
            State::Fresh => Ok(Circuit::default()),
            State::Held(c) => Ok(c),
            State::Corrupt(why) if self.fail == FailMode::Open => {
                self.warnings
                    .warn(&format!("circuit breaker {why}; starting closed"));
                Ok(Circuit::default())
            }
            State::Corrupt(why) => Err(StoreError::Failed(why)),
        }
    }
}

impl BreakerBackend for FileBreaker {
    /// Decides whether this run may start the command: the answer, the
    /// circuit as it was before, and the time of the decision.
    ///
    /// # Errors
    ///
    /// When the state file cannot be used, or a signal ends the wait.
    fn admit(&self, wait: &mut dyn Wait) -> Result<(Admission, Circuit, u64), StoreError> {
        let this = self.clone();
        self.file.with_state(Access::Change, wait, move |state| {
            let now = now_ms();
            // The circuit as this run trusts it, as its lines tell it.
            let before = this
                .circuit_of(state)?
                .clamped(now, this.breaker.cooldown_ms);
            let (admission, after) = this.breaker.admit(before, now);
            Ok((Some(after), (admission, before, now)))
        })
    }

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
    ) -> Result<(Circuit, u64), StoreError> {
        let this = self.clone();
        self.file.with_state(Access::Change, wait, move |state| {
            let before = this.circuit_of(state)?;
            let now = now_ms();
            let after = this.breaker.record(before, now, end, probe);
            Ok((Some(after), (after, now)))
        })
    }

    /// The circuit and the time now. Creates nothing.
    ///
    /// # Errors
    ///
    /// When the state file cannot be used or is corrupt.
    fn show(&self, wait: &mut dyn Wait) -> Result<(Circuit, u64), StoreError> {
        let this = self.clone();
        self.file.with_state(
            Access::Look,
            wait,
            move |state: State<Circuit>| match state {
                State::Fresh => Ok((None, (Circuit::default(), now_ms()))),
                State::Held(c) => Ok((None, (c, now_ms()))),
                State::Corrupt(why) => Err(StoreError::Failed(format!(
                    "{why}; 'backoff breaker reset {}' with the same --budget-dir repairs it",
                    this.key
                ))),
            },
        )
    }

    /// Closes the circuit, whatever the state file held (a corrupt state
    /// included): what it found, and the time. No state file is left as it
    /// is (none is made: a circuit without a state is closed).
    ///
    /// # Errors
    ///
    /// When the state file cannot be used.
    fn reset(&self, wait: &mut dyn Wait) -> Result<(Found<Circuit>, u64), StoreError> {
        self.file
            .with_state(Access::Rewrite, wait, |state: State<Circuit>| {
                let found = found(state);
                let closed = (found != Found::Nothing).then(Circuit::default);
                Ok((closed, (found, now_ms())))
            })
    }
}

/// The throttle file's only line, fixed in length like the budget's: the
/// width of a slot, then each slot's interval number, requests, skips and
/// accepts, in the ring's order.
fn throttle_record(w: &Window) -> String {
    use std::fmt::Write as _;
    let mut text = String::with_capacity(THROTTLE_LEN);
    let _ = write!(text, "backoff-throttle v1 width {:020} slots", w.width_ms);
    for s in w.slots {
        let _ = write!(
            text,
            " {:020} {:020} {:020} {:020}",
            s.index, s.requests, s.skips, s.accepts
        );
    }
    text.push('\n');
    text
}

/// The length of a throttle record: a header of 52 bytes, 84 a slot, and
/// the newline.
const THROTTLE_LEN: usize = 52 + SLOTS * 84 + 1;

/// Parses a throttle record; `None` if it is not exactly one of a window a
/// store may hold (`Window::checked`).
fn parse_throttle(text: &[u8]) -> Option<Window> {
    let rest = text
        .strip_prefix(b"backoff-throttle v1 width ")?
        .strip_suffix(b"\n")?;
    let (width, rest) = rest.split_at_checked(20)?;
    let mut rest = rest.strip_prefix(b" slots")?;
    let mut field = || -> Option<u64> {
        let (digits, after) = rest.strip_prefix(b" ")?.split_at_checked(20)?;
        rest = after;
        number(digits)
    };
    let mut slots = [Slot::default(); SLOTS];
    for slot in &mut slots {
        *slot = Slot {
            index: field()?,
            requests: field()?,
            skips: field()?,
            accepts: field()?,
        };
    }
    if !rest.is_empty() {
        return None;
    }
    Window {
        width_ms: number(width)?,
        slots,
    }
    .checked()
}

impl Record for Window {
    const KIND: &'static str = "throttle";
    const LEN: usize = THROTTLE_LEN;
    fn write(self) -> String {
        throttle_record(&self)
    }
    fn read(text: &[u8]) -> Option<Window> {
        parse_throttle(text)
    }
}

/// An adaptive throttle kept in a file, shared by processes.
#[derive(Debug, Clone)]
pub struct FileThrottle {
    file: StateFile,
    key: String,
    throttle: Throttle,
    fail: FailMode,
    warnings: Warnings,
}

impl Backend for FileThrottle {
    fn describe(&self) -> String {
        self.file.describe()
    }

    fn server(&self) -> Option<String> {
        None
    }
}

impl FileThrottle {
    /// The throttle `key` in `dir`, as `FileBudget::open` opens a budget: a
    /// corrupt state becomes a fresh window (open), or is left alone and
    /// the store counts as unavailable (closed).
    ///
    /// # Errors
    ///
    /// When the key cannot name a file.
    pub fn open(
        dir: StateDir,
        key: &str,
        throttle: Throttle,
        timeout: Duration,
        fail: FailMode,
        warnings: Warnings,
    ) -> Result<FileThrottle, String> {
        check_key(key)?;
        Ok(FileThrottle {
            file: StateFile::new(dir, key, Window::KIND, timeout),
            key: key.to_owned(),
            throttle,
            fail,
            warnings,
        })
    }

    fn window_of(&self, state: State<Window>) -> Result<Window, StoreError> {
        match state {
            State::Fresh => Ok(Window::default()),
            State::Held(w) => Ok(w),
            State::Corrupt(why) if self.fail == FailMode::Open => {
                self.warnings
                    .warn(&format!("adaptive throttle {why}; starting a fresh window"));
                Ok(Window::default())
            }
            State::Corrupt(why) => Err(StoreError::Failed(why)),
        }
    }
}

impl ThrottleBackend for FileThrottle {
    /// Decides on an attempt, where `draw` is uniform in [0, 1), and counts
    /// it: the decision, and the window its counts cover, in milliseconds.
    ///
    /// # Errors
    ///
    /// When the state file cannot be used, or a signal ends the wait.
    fn admit(
        &self,
        draw: f64,
        wait: &mut dyn Wait,
    ) -> Result<(throttle::Decision, u64), StoreError> {
        let this = self.clone();
        self.file.with_state(Access::Change, wait, move |state| {
            let before = this.window_of(state)?;
            let (decision, after) = this.throttle.admit(before, now_ms(), draw);
            let window_ms = this.throttle.window_of(after.width_ms);
            Ok((Some(after), (decision, window_ms)))
        })
    }

    /// Counts an attempt the backend accepted.
    ///
    /// # Errors
    ///
    /// As `admit`.
    fn accept(&self, wait: &mut dyn Wait) -> Result<(), StoreError> {
        let this = self.clone();
        self.file.with_state(Access::Change, wait, move |state| {
            let before = this.window_of(state)?;
            Ok((Some(this.throttle.accept(before, now_ms())), ()))
        })
    }

    /// The window as stored, and the time now. Creates nothing.
    ///
    /// # Errors
    ///
    /// When the state file cannot be used or is corrupt.
    fn show(&self, wait: &mut dyn Wait) -> Result<(Window, u64), StoreError> {
        let this = self.clone();
        self.file.with_state(
            Access::Look,
            wait,
            move |state: State<Window>| match state {
                State::Fresh => Ok((None, (Window::default(), now_ms()))),
                State::Held(w) => Ok((None, (w, now_ms()))),
                State::Corrupt(why) => Err(StoreError::Failed(format!(
                    "{why}; 'backoff throttle reset {}' with the same --budget-dir repairs it",
                    this.key
                ))),
            },
        )
    }

    /// Empties the window, whatever the state file held (a corrupt state
    /// included): what it found, and the time. No state file is left as it
    /// is (none is made: a window without a state is empty).
    ///
    /// # Errors
    ///
    /// When the state file cannot be used.
    fn reset(&self, wait: &mut dyn Wait) -> Result<(Found<Window>, u64), StoreError> {
        self.file
            .with_state(Access::Rewrite, wait, |state: State<Window>| {
                let found = found(state);
                let empty = (found != Found::Nothing).then(Window::default);
                Ok((empty, (found, now_ms())))
            })
    }
}

impl StateFile {
    /// The state file of `key` in `dir`, named `KEY.KIND`.
    pub(super) fn new(dir: StateDir, key: &str, kind: &str, timeout: Duration) -> StateFile {
        StateFile {
            dir,
            name: format!("{key}.{kind}"),
            timeout,
            pending: Arc::default(),
        }
    }

    /// Where the state file is, or would be.
    pub(super) fn describe(&self) -> String {
        match &self.dir {
            StateDir::Given(d) | StateDir::InHome { dir: d, .. } => {
                d.join(&self.name).display().to_string()
            }
            StateDir::Unknown(_) => "no budget directory".to_owned(),
        }
    }

    /// Opens the directory, creating it (mode 0700) if asked to (the
    /// default one only where `find_in_home` allows), and checks that it is
    /// a directory of this user's that others cannot write to. `Ok(None)`:
    /// it does not exist, and was not to be created.
    fn open_dir(&self, access: Access) -> Result<Option<(File, &Path)>, StoreError> {
        let make = access == Access::Change;
        let (dir, in_home) = match &self.dir {
            StateDir::Unknown(why) => return Err(StoreError::Failed(why.clone())),
            StateDir::Given(dir) => (dir.as_path(), None),
            StateDir::InHome { home, dir, xdg } => (dir.as_path(), Some((home, xdg))),
        };
        let opened = match (open_dir(dir), in_home) {
            (Err(e), None) if e.kind() == io::ErrorKind::NotFound && make => {
                files::create_private_dir(dir, true).map_err(|e| failed(dir, &e))?;
                open_dir(dir)
            }
            (Err(e), Some((home, xdg))) if e.kind() == io::ErrorKind::NotFound => {
                if find_in_home(home, xdg.as_deref(), make)? {
                    open_dir(dir)
                } else {
                    Err(e)
                }
            }
            (other, _) => other,
        };
        let handle = match opened {
            Ok(h) => h,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) if files::met_non_dir(&e) => {
                return Err(refuse(
                    dir,
                    "is not a directory (symbolic links are refused)",
                ));
            }
            Err(e) => return Err(failed(dir, &e)),
        };
        if let Some(why) = files::distrust(&handle).map_err(|e| failed(dir, &e))? {
            return Err(refuse(dir, why));
        }
        Ok(Some((handle, dir)))
    }

    /// Opens the state file without following a symbolic link and checks
    /// that it is a regular file of this user's that others cannot write
    /// to. `Ok(None)`: there is none, and none was to be created.
    pub(super) fn open_file(&self, access: Access) -> Result<Option<(File, PathBuf)>, StoreError> {
        let Some((dir, dir_path)) = self.open_dir(access)? else {
            return Ok(None);
        };
        let path = dir_path.join(&self.name);
        let (change, create) = (access.writes(), access == Access::Change);
        let file = match open_in(&dir, dir_path, &self.name, change, create) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) if files::met_link(&e) => {
                return Err(refuse(&path, "is a symbolic link"));
            }
            Err(e) => return Err(failed(&path, &e)),
        };
        let meta = file.metadata().map_err(|e| failed(&path, &e))?;
        if !meta.is_file() {
            return Err(refuse(&path, "is not a regular file"));
        }
        // Another name of the same file (a hard link that a deduplicating
        // tool made between two keys' identical states, a `cp -al`
        // snapshot) would share its state, as a symbolic link would.
        let links = files::links(&file).map_err(|e| failed(&path, &e))?;
        if links > 1 {
            return Err(refuse(
                &path,
                &format!("has {links} hard links: another name shares its state (remove one)"),
            ));
        }
        // As the directory: a state others may write is no one's to trust.
        if let Some(why) = files::distrust(&file).map_err(|e| failed(&path, &e))? {
            return Err(refuse(&path, why));
        }
        Ok(Some((file, path)))
    }

    /// A wait in the kernel's queue for the lock of `file`, to make `job`:
    /// the one an earlier call gave up, when it still waits for the same
    /// lock of the same file, else a new one.
    fn queue(&self, file: &File, access: Access, job: Job) -> io::Result<LockWait> {
        let file_id = files::file_id(file)?;
        let given_up = locked(&self.pending).take();
        if let Some(queued) = given_up.filter(|q| q.file_id == file_id && q.access == access) {
            let mut state = locked(&queued.handoff);
            if let Handoff::Waiting(wanted @ None) = &mut *state {
                *wanted = Some(job);
                drop(state);
                return Ok(queued);
            }
        }
        LockWait::start(file, file_id, access, job)
    }

    /// Gives up a wait for the lock: its thread lets go of the lock when it
    /// comes, unless a later call takes the wait over. A decision already
    /// under way is made all the same, as a store call that timed out may
    /// have been applied.
    fn give_up(&self, queued: LockWait) {
        let mut state = locked(&queued.handoff);
        if let Handoff::Waiting(wanted) = &mut *state {
            *wanted = None;
            drop(state);
            *locked(&self.pending) = Some(queued);
        }
    }

    /// Reads at most a record's size of the state.
    fn read<R: Record>(file: &mut File, path: &Path) -> Result<State<R>, StoreError> {
        let len = file.metadata().map_err(|e| failed(path, &e))?.len();
        if len == 0 {
            return Ok(State::Fresh);
        }
        let corrupt =
            |why: String| State::Corrupt(format!("'{}' is corrupt ({why})", path.display()));
        if !R::READ.iter().any(|&l| l as u64 == len) {
            return Ok(corrupt(format!(
                "{}, where a {} state has {}",
                crate::report::text::plural(len, "byte"),
                R::KIND,
                R::LEN
            )));
        }
        let mut text = Vec::with_capacity(R::LEN);
        file.take(len)
            .read_to_end(&mut text)
            .map_err(|e| failed(path, &e))?;
        Ok(R::read(&text).map_or_else(|| corrupt(format!("not a {} state", R::KIND)), State::Held))
    }

    /// Opens and locks the state file and gives its state to `change`,
    /// which returns the state to write (`None`: nothing to write) and the
    /// answer. To look, nothing is created: no file is a fresh state. The
    /// lock is taken at once when no other process holds one that
    /// conflicts; else `change` is made by a thread that waits for it in the
    /// kernel's queue, while the call waits at most the timeout, and a
    /// signal ends its wait at once.
    pub(super) fn with_state<R, T>(
        &self,
        access: Access,
        wait: &mut dyn Wait,
        change: impl FnOnce(State<R>) -> Result<(Option<R>, T), StoreError> + Send + 'static,
    ) -> Result<T, StoreError>
    where
        R: Record + Send + 'static,
        T: Send + 'static,
    {
        let Some((mut file, path)) = self.open_file(access)? else {
            return change(State::Fresh).map(|(_, answer)| answer);
        };
        // The lock is released when the file is closed, even if the process
        // is killed, so no stale lock can outlive its holder.
        let tried = match access {
            Access::Look => file.try_state_lock_shared(),
            Access::Change | Access::Rewrite => file.try_state_lock(),
        };
        match tried {
            Ok(()) => return decide(&mut file, &path, access, change),
            Err(TryLockError::Error(e)) => return Err(failed(&path, &e)),
            Err(TryLockError::WouldBlock) => {}
        }
        let deadline = deadline_after(self.timeout);
        let (answer, answered) = mpsc::sync_channel(1);
        let theirs = path.clone();
        let job: Job = Box::new(move |file: &mut File| {
            let _ = answer.send(decide(file, &theirs, access, change));
        });
        let queued = self
            .queue(&file, access, job)
            .map_err(|e| failed(&path, &e))?;
        // The thread's duplicate keeps the file open while it waits.
        drop(file);
        let waited = wait.wait_ready(Some(&queued.done), deadline);
        if let Waited::Signal(sig) = waited {
            self.give_up(queued);
            return Err(StoreError::Interrupted(sig));
        }
        if let Ok(answer) = answered.try_recv() {
            return answer;
        }
        if let Handoff::Failed(e) = &*locked(&queued.handoff) {
            return Err(failed(&path, e));
        }
        if waited == Waited::Ready {
            // The thread ended without an answer.
            return Err(refuse(&path, "could not be locked"));
        }
        self.give_up(queued);
        Err(refuse(
            &path,
            &format!(
                "is locked by another process: timed out after {}",
                human(self.timeout)
            ),
        ))
    }
}

/// Reads the state of `file`, whose lock is held, gives it to `change`, and
/// writes the state it returns.
fn decide<R: Record, T>(
    file: &mut File,
    path: &Path,
    access: Access,
    change: impl FnOnce(State<R>) -> Result<(Option<R>, T), StoreError>,
) -> Result<T, StoreError> {
    let state = StateFile::read::<R>(file, path)?;
    let old = match state {
        State::Held(r) => Some(r),
        _ => None,
    };
    let (new, answer) = change(state)?;
    if let Some(new) = new.filter(|&n| access.writes() && old != Some(n)) {
        let write = |file: &mut File| -> io::Result<()> {
            let text = new.write();
            file.seek(SeekFrom::Start(0))?;
            file.write_all(text.as_bytes())?;
            // Only a corrupt state was longer, or one of an older version of
            // another length: it is cut after the record.
            if file.metadata()?.len() != text.len() as u64 {
                file.set_len(text.len() as u64)?;
            }
            Ok(())
        };
        write(file).map_err(|e| failed(path, &e))?;
    }
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::bucket::UNIT;
    use std::time::Instant;

    // Unix paths: Windows takes %LOCALAPPDATA% instead.
    #[cfg(unix)]
    #[test]
    fn the_default_directory_is_xdgs_else_in_an_absolute_home_else_none_and_why() {
        let of = |xdg: Option<&str>, home: Option<&str>| {
            default_dir_of(xdg.map(OsString::from), home.map(OsString::from))
        };
        assert_eq!(
            of(Some("/s"), Some("/h")),
            StateDir::Given("/s/backoff".into())
        );
        assert_eq!(
            of(None, Some("/h")),
            StateDir::InHome {
                home: "/h".into(),
                dir: "/h/.local/state/backoff".into(),
                xdg: None
            }
        );
        assert_eq!(
            of(Some("s"), Some("/h")),
            StateDir::InHome {
                home: "/h".into(),
                dir: "/h/.local/state/backoff".into(),
                xdg: Some("XDG_STATE_HOME 's' is relative, and ignored".into())
            }
        );
        let advice = "; give --budget-dir DIR or an absolute XDG_STATE_HOME";
        for (xdg, home, why) in [
            (None, None, "neither XDG_STATE_HOME nor HOME is set"),
            (None, Some(""), "HOME is empty, and ignored"),
            (None, Some("h"), "HOME 'h' is relative, and ignored"),
            (
                Some(""),
                None,
                "XDG_STATE_HOME is empty, and ignored; HOME is not set",
            ),
            (
                Some("s"),
                Some("~/h"),
                "XDG_STATE_HOME 's' is relative, and ignored; HOME '~/h' is relative, and ignored",
            ),
        ] {
            assert_eq!(
                of(xdg, home),
                StateDir::Unknown(format!("no budget directory: {why}{advice}"))
            );
        }
    }

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
            .deposit(&mut crate::budget::Unwatched)
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
                .take(&mut crate::budget::Unwatched)
                .map_err(|e| e.to_string())?
        );
        assert_eq!(
            budget
                .level(&mut crate::budget::Unwatched)
                .map_err(|e| e.to_string())?
                .micros,
            9 * UNIT
        );
        Ok(())
    }

    #[test]
    fn breaker_records_round_trip_and_anything_else_is_corrupt() {
        for c in [
            Circuit::default(),
            Circuit {
                failures: u32::MAX,
                opened_ms: crate::fleet::breaker::LATEST_MS,
                until_ms: 1,
                probe_until_ms: 1_796_144_602_783,
            },
        ] {
            assert_eq!(breaker_record(c).len(), BREAKER_LEN);
            assert_eq!(parse_breaker(breaker_record(c).as_bytes()), Some(c));
        }
        let good = breaker_record(Circuit::default());
        for bad in [
            good.replace("failures 0", "failures x"),
            good.replace(" probe ", " probes "),
            good.replace("until 0", "until  "),
            good.trim_end().to_owned(),
            good.replace("failures 0000000000", "failures 9999999999"),
            // Past year 9999.
            good.replace("until 00000000000000000000", "until 00000253402300800000"),
            good.replace(
                "opened 00000000000000000000",
                &format!("opened {}", u64::MAX),
            ),
        ] {
            assert_eq!(parse_breaker(bad.as_bytes()), None, "{bad:?}");
        }
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

    /// A window of every kind of slot: counts at their limits, one of each
    /// count, an empty one.
    fn full_window() -> Window {
        let mut w = Window {
            width_ms: throttle::MAX_WINDOW_MS / SLOTS as u64,
            ..Window::default()
        };
        let max = throttle::MAX_COUNT;
        w.slots[0] = Slot {
            index: max / SLOTS as u64 * SLOTS as u64,
            requests: max,
            skips: max,
            accepts: max,
        };
        w.slots[5] = Slot {
            index: 17,
            requests: 1,
            skips: 0,
            accepts: 0,
        };
        w.slots[11] = Slot {
            index: 11,
            requests: 3,
            skips: 2,
            accepts: 1,
        };
        w
    }

    #[test]
    fn throttle_records_round_trip_and_anything_else_is_corrupt() {
        let t = Throttle {
            window_ms: 120_000,
            k_milli: 2000,
        };
        let (_, made) = t.admit(Window::default(), 1_796_144_602_783, 0.5);
        for w in [
            Window::default(),
            full_window(),
            t.accept(made, 1_796_144_602_784),
        ] {
            let text = throttle_record(&w);
            assert_eq!(text.len(), THROTTLE_LEN);
            assert_eq!(text.lines().count(), 1);
            assert_eq!(parse_throttle(text.as_bytes()), Some(w));
            assert_eq!(w.write(), text);
        }
        let good = throttle_record(&full_window());
        let zeros = "0".repeat(20);
        // The fields of slot 11: the last 4 × 21 bytes before the newline.
        let last = THROTTLE_LEN - 1 - 4 * 21;
        let in_slot_11 = |field: usize, value: &str| {
            let at = last + field * 21 + 1;
            format!("{}{value}{}", &good[..at], &good[at + 20..])
        };
        for bad in [
            String::new(),
            good.replace("v1", "v2"),
            good.replace(" slots ", " slots  "),
            good.trim_end().to_owned(),
            format!("{good}\n"),
            good.replacen(" 0", " x", 1),
            good.replacen(" 0", " -", 1),
            good.replacen(" 0", " +", 1),
            good.replacen(" 0", "  ", 1),
            // A width of no window, or of one past the longest.
            good.replace("width 00000000000216000000", &format!("width {zeros}")),
            good.replace("width 00000000000216000000", "width 00000000000216000001"),
            // A slot out of its place in the ring.
            in_slot_11(0, "00000000000000000012"),
            // Counts past the largest, more skips than requests, an index
            // past the largest, a number past 64 bits.
            in_slot_11(1, "00001000000000000001"),
            in_slot_11(3, "00001000000000000001"),
            in_slot_11(2, "00000000000000000004"),
            in_slot_11(0, "01000000000000000007"),
            in_slot_11(1, "99999999999999999999"),
            in_slot_11(1, &u64::MAX.to_string()),
        ] {
            assert_eq!(parse_throttle(bad.as_bytes()), None, "{bad:?}");
        }
        // Of the right length, so that only the parse refuses them.
        assert_eq!(in_slot_11(2, "00000000000000000004").len(), THROTTLE_LEN);
    }

    /// A throttle of a 2m window and K 2 in a fresh directory, with its
    /// fail mode.
    fn file_throttle(dir: &Path, fail: FailMode) -> Result<FileThrottle, String> {
        let t = Throttle {
            window_ms: 120_000,
            k_milli: 2000,
        };
        let timeout = Duration::from_secs(10);
        FileThrottle::open(
            StateDir::Given(dir.into()),
            "t",
            t,
            timeout,
            fail,
            Warnings::default(),
        )
    }

    /// A result whose error is told as text, for a test that returns it.
    trait Said<T> {
        fn said(self) -> Result<T, String>;
    }

    impl<T, E: std::fmt::Display> Said<T> for Result<T, E> {
        fn said(self) -> Result<T, String> {
            self.map_err(|e| e.to_string())
        }
    }

    #[test]
    fn a_file_throttle_counts_requests_skips_and_accepts() -> Result<(), String> {
        let dir = tempfile::tempdir().said()?;
        let store = dir.path().join("store");
        let t = file_throttle(&store, FailMode::Open)?;
        let wait = &mut crate::budget::Unwatched;
        let (shown, _) = t.show(wait).said()?;
        assert_eq!(shown, Window::default());
        assert!(!store.exists(), "show creates nothing");
        // Skipped with (requests - 2 × accepts) / (requests + 1): 0, 1/2,
        // then 2/3, which a draw of a half falls below.
        let mut sent = Vec::new();
        for _ in 0..3 {
            let (d, window_ms) = t.admit(0.5, wait).said()?;
            assert_eq!(window_ms, 120_000);
            sent.push((d.send, d.counts.requests));
        }
        assert_eq!(sent, [(true, 0), (true, 1), (false, 2)]);
        t.accept(wait).said()?;
        let (w, now) = t.show(wait).said()?;
        let c = w.counts(now);
        assert_eq!((c.requests, c.skips, c.accepts), (3, 1, 1));
        assert_eq!(w.width_ms, 10_000);
        let text = std::fs::read(store.join("t.throttle")).said()?;
        assert_eq!(parse_throttle(&text), Some(w));
        t.reset(wait).said()?;
        assert_eq!(t.show(wait).said()?.0, Window::default());
        Ok(())
    }

    #[test]
    fn a_corrupt_throttle_file_is_a_fresh_window_or_left_alone() -> Result<(), String> {
        let dir = tempfile::tempdir().said()?;
        let file = dir.path().join("t.throttle");
        let wait = &mut crate::budget::Unwatched;
        std::fs::write(&file, "garbage\n").said()?;
        let closed = file_throttle(dir.path(), FailMode::Closed)?;
        let refused = closed.admit(0.5, wait).err().ok_or("no error")?;
        assert!(
            matches!(&refused, StoreError::Failed(why) if why.contains("is corrupt (8 bytes, where a throttle state has 1061)")),
            "{refused}"
        );
        assert!(closed.accept(wait).is_err());
        assert_eq!(std::fs::read(&file).said()?, b"garbage\n", "left alone");
        let shown = closed.show(wait).err().ok_or("no error")?.to_string();
        assert!(
            shown.ends_with("; 'backoff throttle reset t' with the same --budget-dir repairs it"),
            "{shown}"
        );
        let open = file_throttle(dir.path(), FailMode::Open)?;
        let (d, _) = open.admit(0.5, wait).said()?;
        assert!(d.send);
        assert_eq!(d.counts.requests, 0, "a fresh window");
        let (w, now) = open.show(wait).said()?;
        assert_eq!(w.counts(now).requests, 1);
        std::fs::write(&file, "garbage\n").said()?;
        closed.reset(wait).said()?;
        assert_eq!(closed.show(wait).said()?.0, Window::default());
        Ok(())
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_are_a_state_or_corrupt(text in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..130)) {
            if let Some(level) = parse(&text) {
                proptest::prop_assert_eq!(level.write().into_bytes(), text.clone());
            }
            if let Some(c) = parse_breaker(&text) {
                proptest::prop_assert_eq!(c.checked(), Some(c));
                proptest::prop_assert_eq!(breaker_record(c).into_bytes(), text);
            }
        }

        #[test]
        fn any_bytes_in_a_throttle_record_make_a_state_or_corrupt(
            changes in proptest::collection::vec(
                (0..THROTTLE_LEN, proptest::prelude::any::<u8>()),
                1..8,
            ),
        ) {
            let mut text = throttle_record(&full_window()).into_bytes();
            for (at, byte) in changes {
                text[at] = byte;
            }
            if let Some(w) = parse_throttle(&text) {
                proptest::prop_assert_eq!(w.checked(), Some(w));
                proptest::prop_assert_eq!(throttle_record(&w).into_bytes(), text);
            }
        }

        #[test]
        fn any_throttle_record_is_read_back_only_when_a_store_may_hold_it(
            width in proptest::prop_oneof![
                proptest::prelude::any::<u64>(),
                0..=throttle::MAX_WINDOW_MS / SLOTS as u64 + 1,
            ],
            slots in proptest::collection::vec(
                proptest::array::uniform4(proptest::prop_oneof![
                    proptest::prelude::any::<u64>(),
                    0..=throttle::MAX_COUNT + 1,
                    0..30u64,
                ]),
                SLOTS,
            ),
        ) {
            let mut text = format!("backoff-throttle v1 width {width:020} slots");
            let mut w = Window { width_ms: width, ..Window::default() };
            for (i, [index, requests, skips, accepts]) in slots.into_iter().enumerate() {
                let _ = std::fmt::Write::write_fmt(
                    &mut text,
                    format_args!(" {index:020} {requests:020} {skips:020} {accepts:020}"),
                );
                w.slots[i] = Slot { index, requests, skips, accepts };
            }
            text.push('\n');
            proptest::prop_assert_eq!(parse_throttle(text.as_bytes()), w.checked(), "{}", text);
        }

        #[test]
        fn any_breaker_record_is_read_back_only_when_a_store_may_hold_it(
            failures in proptest::prelude::any::<u64>(),
            times in proptest::array::uniform3(proptest::prop_oneof![
                proptest::prelude::any::<u64>(),
                0..=crate::fleet::breaker::LATEST_MS + 1,
            ]),
        ) {
            let [opened, until, probe] = times;
            let text = format!(
                "backoff-breaker v1 failures {failures:010} opened {opened:020} until {until:020} probe {probe:020}\n"
            );
            let valid = u32::try_from(failures).is_ok()
                && times.iter().all(|&t| t <= crate::fleet::breaker::LATEST_MS);
            proptest::prop_assert_eq!(parse_breaker(text.as_bytes()).is_some(), valid, "{}", text);
        }
    }
}
