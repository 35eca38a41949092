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
//!
//! This module holds what every kind of state file shares: the state
//! directory, and a state file opened, checked, locked, read and written.
//! Each kind's record and decisions are in a file of its own: `budget`,
//! `breaker`, `throttle`, and `lock` (held for a whole run).

mod breaker;
mod budget;
pub(super) mod lock;
pub(super) mod once;
pub(super) mod replace;
pub(super) mod slots;
pub(super) mod streak;
mod throttle;

pub use breaker::FileBreaker;
pub use budget::FileBudget;
pub use throttle::FileThrottle;

use std::ffi::OsString;
use std::fs::{File, TryLockError};
use std::io::{self, PipeReader, PipeWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, mpsc};
use std::time::Duration;

use crate::duration::human;
use crate::run::{Wait, Waited};
use crate::store::{Found, StoreError, deadline_after};
use crate::sys::fd::{open_dir, open_in};
use crate::sys::files::{self, StateLock};

/// Twenty digits exactly, as a record writes a number.
fn number(digits: &[u8]) -> Option<u64> {
    if digits.len() != 20 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
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

/// The time now, in Unix milliseconds, as the file store's decisions use it.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
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
}
