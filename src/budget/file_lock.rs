//! `--lock` on one host: a file `KEY.lock` in the state directory, behind
//! the same checks as the other state files (`file::StateFile`), held with
//! an exclusive flock(2) on a descriptor no command inherits, for the whole
//! run. The kernel releases it however backoff ends, SIGKILL included: no
//! stale lock outlives its holder. The holder writes its record
//! (`fleet::lock::Holder`) into the file for the runs it keeps out, and
//! empties it when it lets go.
//!
//! A run that waits (`--lock-wait`) waits in the kernel's queue of the
//! lock's waiters, on a thread of its own, while the run's wait watches
//! its signals: a signal or the end of the wait gives the queue up, and a
//! lock that comes after that is let go at once.

use std::fs::{File, TryLockError};
use std::io::{self, PipeReader, PipeWriter, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::budget::file::{Access, StateDir, StateFile, failed, refuse};
use crate::budget::{Acquired, Backend, LockBackend, LockState, StoreError, deadline_after};
use crate::fleet::bucket::check_key;
use crate::fleet::lock::{Holder, MAX_RECORD};
use crate::run::{Wait, Waited};
use crate::sys::files::StateLock;

/// A lock kept in a file, held by one process of the host at a time.
#[derive(Debug)]
pub struct FileLock {
    file: StateFile,
    /// The lock file while this run holds it.
    held: Mutex<Option<File>>,
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
    /// The lock `key` in `dir`; nothing is opened until it is used.
    ///
    /// # Errors
    ///
    /// When the key cannot name a file.
    pub fn open(dir: StateDir, key: &str, timeout: Duration) -> Result<FileLock, String> {
        check_key(key)?;
        Ok(FileLock {
            file: StateFile::new(dir, key, "lock", timeout),
            held: Mutex::new(None),
        })
    }

    /// Writes this run's record into the file it now holds, and keeps the
    /// file (and so the lock) until the run lets go.
    fn hold(&self, mut file: File, path: &std::path::Path, me: &Holder) -> Result<(), StoreError> {
        let record = me.record();
        let write = |file: &mut File| -> io::Result<()> {
            file.seek(SeekFrom::Start(0))?;
            file.write_all(record.as_bytes())?;
            file.set_len(record.len() as u64)
        };
        write(&mut file).map_err(|e| failed(path, &e))?;
        *self.held.lock().unwrap_or_else(PoisonError::into_inner) = Some(file);
        Ok(())
    }
}

/// The record a lock file holds, read within bounds; `None` when it holds
/// none (the lock is free, or its holder is writing it).
fn holder_in(file: &mut File) -> Option<Holder> {
    // Through a reading of its own: on Windows, the queue's thread may be
    // waiting for the lock through a duplicate of `file`, which holds up
    // every other call on it meanwhile.
    let mut file = crate::sys::files::for_reading(file).ok()?;
    let mut text = Vec::with_capacity(MAX_RECORD);
    file.seek(SeekFrom::Start(0)).ok()?;
    file.take(MAX_RECORD as u64 + 1)
        .read_to_end(&mut text)
        .ok()?;
    Holder::parse(&text)
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
        wait: &mut dyn Wait,
    ) -> Result<Acquired, StoreError> {
        let Some((mut file, path)) = self.file.open_file(Access::Change)? else {
            return Err(StoreError::Failed("the lock file cannot be made".into()));
        };
        match file.try_state_lock() {
            Ok(()) => {
                self.hold(file, &path, me)?;
                return Ok(Acquired::Held { token: None });
            }
            Err(TryLockError::Error(e)) => return Err(failed(&path, &e)),
            Err(TryLockError::WouldBlock) if patience.is_zero() => {
                return Ok(Acquired::Busy(holder_in(&mut file)));
            }
            Err(TryLockError::WouldBlock) => {}
        }
        let (queue, done) = queue_for(&file).map_err(|e| failed(&path, &e))?;
        let waited = wait.wait_ready(Some(&done), deadline_after(patience));
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
                self.hold(file, &path, me)?;
                Ok(Acquired::Held { token: None })
            }
            Queue::Failed => Err(refuse(&path, "could not be locked")),
            Queue::Waiting | Queue::GivenUp => {
                *state = Queue::GivenUp;
                drop(state);
                match waited {
                    Waited::Signal(sig) => Err(StoreError::Interrupted(sig)),
                    _ => Ok(Acquired::Busy(holder_in(&mut file))),
                }
            }
        }
    }

    fn release(&self) {
        let held = self
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(file) = held {
            // The record goes first, while the lock is still held.
            let _ = file.set_len(0);
            let _ = file.state_unlock();
        }
    }

    fn show(&self, _wait: &mut dyn Wait) -> Result<LockState, StoreError> {
        let Some((mut file, path)) = self.file.open_file(Access::Look)? else {
            return Ok(LockState {
                held: false,
                holder: None,
            });
        };
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
            holder: holder_in(&mut file),
        })
    }

    fn reset(&self, force: bool, _wait: &mut dyn Wait) -> Result<LockState, StoreError> {
        let Some((mut file, path)) = self.file.open_file(Access::Rewrite)? else {
            return Ok(LockState {
                held: false,
                holder: None,
            });
        };
        let holder = holder_in(&mut file);
        match file.try_state_lock() {
            Ok(()) => {
                // Free: what its last holder left is cleared.
                let _ = file.set_len(0);
                let _ = file.state_unlock();
                Ok(LockState {
                    held: false,
                    holder,
                })
            }
            Err(TryLockError::WouldBlock) if force => {
                // The holder keeps the lock of the file it opened; the next
                // run makes a new one.
                std::fs::remove_file(&path).map_err(|e| failed(&path, &e))?;
                Ok(LockState { held: true, holder })
            }
            Err(TryLockError::WouldBlock) => Err(StoreError::Failed(held_line(&path, holder))),
            Err(TryLockError::Error(e)) => Err(failed(&path, &e)),
        }
    }
}

/// Why a reset without `--force` leaves a held lock alone.
fn held_line(path: &std::path::Path, holder: Option<Holder>) -> String {
    let by = holder.map_or_else(String::new, |h| format!(" by pid {} on {}", h.pid, h.host));
    format!(
        "'{}' is held{by}, a live process: --force removes it anyway (the holder runs on)",
        PathBuf::from(path).display()
    )
}
