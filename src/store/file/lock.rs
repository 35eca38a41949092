//! `--lock` on one host: a file `KEY.lock` in the state directory, behind
//! the same checks as the other state files (`file::StateFile`), held with
//! an exclusive flock(2) on a descriptor no command inherits, for the whole
//! run. The kernel releases it however backoff ends, SIGKILL included: no
//! stale lock outlives its holder. The holder writes its record
//! (`fleet::lock::Holder`) into the file for the runs it keeps out, and
//! writes `FREE` over it when it lets go; a record it cannot write (a full disk) is
//! said once, and the lock is held all the same.
//!
//! A run that waits (`--lock-wait`) waits in the kernel's queue of the
//! lock's waiters, on a thread of its own, while the run's wait watches
//! its signals: a signal or the end of the wait gives the queue up, and a
//! lock that comes after that is let go at once.
//!
//! A lock is a lock of the file its path names. A file removed (`backoff
//! lock reset --force`, a cleaner of the directory) or replaced leaves its
//! holder and its waiters with a lock nobody else looks at, while new runs
//! lock the new file:
//!
//! - a run that got the lock checks that its path still names the file it
//!   locked (device and inode), and starts again with the file there if
//!   not;
//! - the holder looks at its path every `WATCH`, and when it names another
//!   file or none, the lock is lost: the run ends its attempt and gives up
//!   (`LockBackend::lost`, `alarm`), as for a lease;
//! - a run that takes the lock of a file that no run has used yet (made
//!   anew, by this run or another, or put in place of the old one) waits
//!   `SETTLE` before it starts, by which time a holder of a removed or
//!   replaced file has seen it and started ending its attempt. A file a
//!   run has used holds a record, or `FREE` once it was let go: only a
//!   file that holds neither is taken for new.
//!
//! Looking at a lock (`show`) takes a shared lock for an instant, which a
//! held lock refuses (the kernel's own table of locks, `/proc/locks`,
//! leaves out the locks of processes in another PID namespace, such as a
//! container's, and cannot be trusted to say a lock is free). So that a
//! look, or a `reset`, never keeps out a run that tries the lock at that
//! instant, a run that finds the lock taken and no live holder named in
//! the file (a look, a reset, a holder between its lock and its record)
//! waits in the queue up to `UNCLAIMED` before it believes it.

use std::fs::{File, TryLockError};
use std::io::{self, PipeReader, PipeWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::{Duration, Instant};

use crate::fleet::bucket::check_key;
use crate::fleet::lock::{Forgotten, Holder, MAX_RECORD, Settle};
use crate::report::Warnings;
use crate::run::{Wait, Waited};
use crate::store::file::replace::Replace;
use crate::store::file::{Access, StateDir, StateFile, failed, refuse, why};
use crate::store::{
    Acquired, Alarm, Backend, LockBackend, LockState, Loss, StoreError, deadline_after,
};
use crate::sys::files::{self, StateLock};

/// How often the holder looks at its lock file's path.
pub const WATCH: Duration = Duration::from_millis(200);

/// How long a run that takes the lock of a new file waits before it
/// starts: twice `WATCH`, time for a holder of a removed or replaced file
/// to look and be told.
pub const SETTLE: Duration = Duration::from_millis(400);

/// What a lock file holds once its holder let go (or a reset cleared it):
/// no holder, but a file runs have used.
const FREE: &str = "backoff-lock v1 free\n";

/// How long a run that finds the lock taken, with no live holder named in
/// the file, waits in the queue before it believes it.
const UNCLAIMED: Duration = Duration::from_secs(1);

/// How many times a run starts again when the file it locked is no longer
/// the one its path names (removed or replaced meanwhile, each time).
const AGAIN: usize = 20;

/// A lock kept in a file, held by one process of the host at a time.
pub struct FileLock {
    file: StateFile,
    warnings: Warnings,
    /// The lock file while this run holds it, and what stops the watch of
    /// its path.
    held: Mutex<Option<(File, mpsc::Sender<()>)>>,
    /// How the lock was lost, once it was.
    loss: Loss,
    /// With `--lock-replace`: how this run asks a holder to end.
    replace: Option<Replace>,
    /// The requests that may end this run, when it holds the lock: from a
    /// run of `--lock-replace`.
    requests: Replace,
}

impl std::fmt::Debug for FileLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileLock")
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

/// Where a wait in the kernel's queue stands; each change is made under
/// its mutex, so that a lock that comes is either taken over by the run or
/// let go, never both and never neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Queue {
    /// The thread waits; the run still wants the lock.
    Waiting,
    /// The thread has the lock, for the run to take.
    Got,
    /// The run gave the wait up: a lock that comes is let go.
    GivenUp,
    /// The lock could not be waited for.
    Failed,
}

impl FileLock {
    /// The lock `key` in `dir`, in the file `KEY.NAME`; nothing is opened
    /// until it is used. What it has to say goes to `warnings`. With
    /// `replace` (`--lock-replace`), a holder is asked to end, and waited
    /// for that long at least.
    ///
    /// # Errors
    ///
    /// When the key cannot name a file.
    pub fn open(
        dir: StateDir,
        key: &str,
        name: &str,
        timeout: Duration,
        warnings: Warnings,
        replace: Option<Duration>,
    ) -> Result<FileLock, String> {
        check_key(key)?;
        let requests = Replace::new(
            StateFile::new(dir.clone(), key, &format!("{name}.replace"), timeout),
            replace.unwrap_or_default(),
            warnings.clone(),
        );
        Ok(FileLock {
            file: StateFile::new(dir, key, name, timeout),
            warnings,
            held: Mutex::new(None),
            loss: Loss::default(),
            replace: replace.map(|_| requests.clone()),
            requests,
        })
    }

    /// Opens the lock file, making it where it is missing.
    fn open_file(&self) -> Result<(File, PathBuf), StoreError> {
        if let Some(opened) = self.file.open_file(Access::Rewrite)? {
            return Ok(opened);
        }
        self.file
            .open_file(Access::Change)?
            .ok_or_else(|| StoreError::Failed("the lock file cannot be made".into()))
    }

    /// Writes this run's record into the file it now holds, keeps the file
    /// (and so the lock) until the run lets go, and starts watching its
    /// path. A record that cannot be written (a full disk) is said once:
    /// the lock is held all the same.
    ///
    /// Returns whether a run had used the file before (it held a record,
    /// or `FREE`).
    fn hold(&self, mut file: File, path: &Path, me: &Holder) -> Result<bool, StoreError> {
        let used = contents(&file)
            .is_some_and(|text| text == FREE.as_bytes() || Holder::parse(&text).is_some());
        let record = me.record();
        let write = |file: &mut File| -> io::Result<()> {
            file.seek(SeekFrom::Start(0))?;
            file.write_all(record.as_bytes())?;
            file.set_len(record.len() as u64)
        };
        if let Err(e) = write(&mut file) {
            // Half a record is no record: `show` says it cannot read one.
            let _ = file.set_len(0);
            self.warnings.warn(&format!(
                "cannot write this run's record into the lock file '{}' ({}): the lock is held all the same, but backoff lock show cannot name its holder",
                path.display(),
                why(&e)
            ));
        }
        let stop = self
            .watch(&file, path, &me.run_id)
            .map_err(|e| failed(path, &e))?;
        *self.held.lock().unwrap_or_else(PoisonError::into_inner) = Some((file, stop));
        Ok(used)
    }

    /// Starts looking at `path` every `WATCH`: once it no longer names
    /// `file` (removed or replaced), the lock is lost; once a run of
    /// `--lock-replace` asks the run `run_id` to end, it is taken over.
    fn watch(&self, file: &File, path: &Path, run_id: &str) -> io::Result<mpsc::Sender<()>> {
        let (stop, stopped) = mpsc::channel::<()>();
        let mine = file.try_clone()?;
        let path = path.to_owned();
        let loss = self.loss.clone();
        let (requests, run_id) = (self.requests.clone(), run_id.to_owned());
        std::thread::Builder::new()
            .name("lock watch".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                let why = loop {
                    match stopped.recv_timeout(WATCH) {
                        Err(mpsc::RecvTimeoutError::Timeout) => {}
                        _ => return,
                    }
                    if let Some(by) = requests.asked(&run_id) {
                        loss.replace(by);
                        return;
                    }
                    // A path that cannot be looked at for now (a
                    // directory made unreadable) is looked at again.
                    match files::names(&path, &mine) {
                        Ok(Some(false)) => break "was replaced by another file",
                        Ok(None) => break "was removed",
                        Ok(Some(true)) | Err(_) => {}
                    }
                };
                loss.lose(format!(
                    "its file '{}' {why} (backoff lock reset --force, or a cleaner of the directory), and another run may take the lock there",
                    path.display()
                ));
            })?;
        Ok(stop)
    }
}

/// Writes `FREE` over what the lock file `file`, still locked, holds (or,
/// when that cannot be written, leaves it empty).
fn mark_free(file: &mut File) {
    let written = file
        .seek(SeekFrom::Start(0))
        .and_then(|_| file.write_all(FREE.as_bytes()))
        .and_then(|()| file.set_len(FREE.len() as u64));
    if written.is_err() {
        let _ = file.set_len(0);
    }
}

/// What a lock file holds, at most a record's length and one byte more;
/// `None` when it cannot be read.
fn contents(file: &File) -> Option<Vec<u8>> {
    // Through a reading of its own: on Windows, the queue's thread may be
    // waiting for the lock through a duplicate of `file`, which holds up
    // every other call on it meanwhile.
    let mut file = files::for_reading(file).ok()?;
    let mut text = Vec::with_capacity(MAX_RECORD);
    file.seek(SeekFrom::Start(0)).ok()?;
    file.take(MAX_RECORD as u64 + 1)
        .read_to_end(&mut text)
        .ok()?;
    Some(text)
}

/// The record a lock file holds, read within bounds; `None` when it holds
/// none (the lock is free, or its holder is writing it).
fn holder_in(file: &File) -> Option<Holder> {
    Holder::parse(&contents(file)?)
}

/// The holder a lock file names, if it names one that still runs on this
/// host (a record left by a holder that was killed names none).
fn live_holder_in(file: &File) -> Option<Holder> {
    holder_in(file).filter(|h| {
        h.host != crate::sys::machine::host_name() || crate::sys::signals::process_exists(h.pid)
    })
}

/// Waits in the kernel's queue for the lock of `file` (a duplicate of the
/// run's, sharing its lock), then hands it over or lets it go as `queue`
/// says; ends by closing `done`.
fn wait_in_queue(file: File, queue: &Mutex<Queue>, done: PipeWriter) {
    let got = file.state_lock();
    let mut state = queue.lock().unwrap_or_else(PoisonError::into_inner);
    *state = match (got, *state) {
        (Err(_), _) => Queue::Failed,
        (Ok(()), Queue::Waiting) => Queue::Got,
        (Ok(()), _) => {
            let _ = file.state_unlock();
            Queue::GivenUp
        }
    };
    drop(state);
    drop(file);
    drop(done);
}

/// Starts the wait in the queue for the lock of `file`.
fn queue_for(file: &File) -> io::Result<(Arc<Mutex<Queue>>, PipeReader)> {
    let theirs = file.try_clone()?;
    let (done, end) = std::io::pipe()?;
    let queue = Arc::new(Mutex::new(Queue::Waiting));
    let shared = Arc::clone(&queue);
    std::thread::Builder::new()
        .name("lock queue".into())
        .stack_size(64 * 1024)
        .spawn(move || wait_in_queue(theirs, &shared, end))?;
    Ok((queue, done))
}

/// Waits in the queue for the lock of `file`, until `deadline`: whether
/// it got the lock.
///
/// # Errors
///
/// When the lock cannot be waited for, or a signal ends the wait.
fn wait_for(
    file: &File,
    path: &Path,
    deadline: Instant,
    wait: &mut dyn Wait,
) -> Result<bool, StoreError> {
    let (queue, done) = queue_for(file).map_err(|e| failed(path, &e))?;
    let waited = wait.wait_ready(Some(&done), deadline);
    let mut state = queue.lock().unwrap_or_else(PoisonError::into_inner);
    match *state {
        Queue::Got => {
            drop(state);
            // The lock came as a signal did: the run ends by the signal,
            // and the lock goes to the next in the queue.
            if let Waited::Signal(sig) = waited {
                let _ = file.state_unlock();
                return Err(StoreError::Interrupted(sig));
            }
            Ok(true)
        }
        Queue::Failed => Err(refuse(path, "could not be locked")),
        Queue::Waiting | Queue::GivenUp => {
            *state = Queue::GivenUp;
            drop(state);
            match waited {
                Waited::Signal(sig) => Err(StoreError::Interrupted(sig)),
                _ => Ok(false),
            }
        }
    }
}

impl Backend for FileLock {
    fn describe(&self) -> String {
        self.file.describe()
    }

    fn server(&self) -> Option<String> {
        None
    }
}

impl LockBackend for FileLock {
    fn acquire(
        &self,
        me: &Holder,
        patience: Duration,
        by: Option<Instant>,
        wait: &mut dyn Wait,
        waiting: &mut dyn FnMut(Option<&Holder>),
    ) -> Result<Acquired, StoreError> {
        let mut give_up = deadline_after(patience);
        let mut told = false;
        // With --lock-replace: the run whose holder was asked to end.
        let mut asked: Option<String> = None;
        for _ in 0..AGAIN {
            let (file, path) = self.open_file()?;
            let got = match file.try_state_lock() {
                Ok(()) => true,
                Err(TryLockError::Error(e)) => return Err(failed(&path, &e)),
                Err(TryLockError::WouldBlock) => {
                    let holder = live_holder_in(&file);
                    if let (Some(replace), Some(h), None) = (&self.replace, &holder, &asked) {
                        if !replace.ask(h, me)? {
                            return Ok(Acquired::Busy(holder));
                        }
                        asked = Some(h.run_id.clone());
                        let most = deadline_after(replace.patience);
                        give_up = give_up.max(by.map_or(most, |by| by.min(most)));
                    }
                    // Nobody named who still runs: a look at the lock, or
                    // a holder about to write its record, holds it for an
                    // instant.
                    let believe_at = if holder.is_some() {
                        Instant::now()
                    } else {
                        let grace = deadline_after(UNCLAIMED);
                        by.map_or(grace, |by| by.min(grace))
                    };
                    if (!patience.is_zero() || asked.is_some()) && !told {
                        told = true;
                        waiting(holder.as_ref());
                    }
                    let deadline = give_up.max(believe_at);
                    let waited = if deadline > Instant::now() {
                        wait_for(&file, &path, deadline, wait)
                    } else {
                        Ok(false)
                    };
                    if let (Err(_), Some(run_id)) = (&waited, &asked) {
                        self.requests.withdraw(run_id, me);
                    }
                    waited?
                }
            };
            if !got {
                return Ok(Acquired::Busy(holder_in(&file)));
            }
            // Locked: but is it the file its path names now?
            if files::names(&path, &file).map_err(|e| failed(&path, &e))? != Some(true) {
                let _ = file.state_unlock();
                continue;
            }
            let used = self.hold(file, &path, me)?;
            if let Some(run_id) = &asked {
                self.requests.done(run_id);
            }
            let settle = (!used).then_some(Settle {
                wait: SETTLE,
                why: Forgotten::File,
            });
            return Ok(Acquired::Held {
                token: None,
                settle,
            });
        }
        Err(StoreError::Failed(format!(
            "the lock file '{}' was removed or replaced {AGAIN} times while this run took it",
            self.file.describe()
        )))
    }

    fn release(&self, _wait: &mut dyn Wait, _by: Option<Instant>) -> Result<(), StoreError> {
        let held = self
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some((mut file, stop)) = held {
            drop(stop);
            // The record goes first, while the lock is still held.
            mark_free(&mut file);
            let _ = file.state_unlock();
        }
        Ok(())
    }

    fn lost(&self) -> Option<String> {
        self.loss.why()
    }

    fn alarm(&self, alarm: Alarm) {
        self.loss.alarm(alarm);
    }

    fn replaced(&self) -> bool {
        self.loss.replaced()
    }

    fn show(&self, _wait: &mut dyn Wait) -> Result<LockState, StoreError> {
        let Some((file, path)) = self.file.open_file(Access::Look)? else {
            return Ok(LockState {
                held: false,
                holder: None,
                lease_left: None,
                corrupt: None,
                slots: Vec::new(),
            });
        };
        // A shared lock for an instant, which a held lock refuses: a run
        // that meets it waits it out (see `UNCLAIMED`).
        let held = match file.try_state_lock_shared() {
            Ok(()) => {
                let _ = file.state_unlock();
                false
            }
            Err(TryLockError::WouldBlock) => true,
            Err(TryLockError::Error(e)) => return Err(failed(&path, &e)),
        };
        Ok(LockState {
            held,
            holder: holder_in(&file),
            lease_left: None,
            corrupt: None,
            slots: Vec::new(),
        })
    }

    fn reset(&self, force: bool, _wait: &mut dyn Wait) -> Result<LockState, StoreError> {
        let nothing = LockState {
            held: false,
            holder: None,
            lease_left: None,
            corrupt: None,
            slots: Vec::new(),
        };
        let Some((mut file, path)) = self.file.open_file(Access::Rewrite)? else {
            return Ok(nothing);
        };
        let holder = holder_in(&file);
        match file.try_state_lock() {
            Ok(()) => {
                // Free: what its last holder left is cleared.
                mark_free(&mut file);
                let _ = file.state_unlock();
                Ok(LockState { holder, ..nothing })
            }
            Err(TryLockError::WouldBlock) if force => {
                // The holder sees its file gone within `WATCH` and ends;
                // its waiters go to the file the next run makes.
                std::fs::remove_file(&path).map_err(|e| failed(&path, &e))?;
                Ok(LockState {
                    held: true,
                    holder,
                    ..nothing
                })
            }
            Err(TryLockError::WouldBlock) => Err(StoreError::Failed(held_line(&path, holder))),
            Err(TryLockError::Error(e)) => Err(failed(&path, &e)),
        }
    }
}

/// Why a reset without `--force` leaves a held lock alone.
fn held_line(path: &Path, holder: Option<Holder>) -> String {
    let by = holder.map_or_else(String::new, |h| format!(" by pid {} on {}", h.pid, h.host));
    format!(
        "'{}' is held{by}, a live process: --force removes it anyway (the holder then ends within a second, lock_lost)",
        path.display()
    )
}
