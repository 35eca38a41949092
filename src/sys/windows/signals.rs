//! The console's control events, watched as Unix's signals are: a handler
//! that Windows calls on a thread of its own queues the event and sets an
//! event object, which one wait watches beside the attempt's process and
//! a deadline (no polling loop, no sleep an event cannot cut short).

use std::io;
use std::os::windows::io::{AsRawHandle, BorrowedHandle, FromRawHandle, OwnedHandle};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use windows_sys::Win32::Foundation::{WAIT_OBJECT_0, WAIT_TIMEOUT};
use windows_sys::Win32::System::Console::{
    CTRL_BREAK_EVENT, CTRL_C_EVENT, CTRL_CLOSE_EVENT, CTRL_LOGOFF_EVENT, CTRL_SHUTDOWN_EVENT,
    GenerateConsoleCtrlEvent, SetConsoleCtrlHandler,
};
use windows_sys::Win32::System::Threading::{CreateEventW, SetEvent, WaitForMultipleObjects};
use windows_sys::core::BOOL;

use super::signal_names::{BREAK, CLOSE, INT, TERM};

/// What `Waker::wake` queues: no event, only a wake-up.
pub const WAKE: i32 = 0;

/// The events that came and were not yet taken, and the event object
/// set when one comes.
struct Queue {
    pending: Mutex<Vec<i32>>,
    event: OwnedHandle,
}

static QUEUE: OnceLock<Queue> = OnceLock::new();

/// Queues `sig` and wakes the wait.
fn push(queue: &Queue, sig: i32) {
    queue
        .pending
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(sig);
    // SAFETY: the event handle lives as long as the process (`QUEUE`).
    unsafe { SetEvent(queue.event.as_raw_handle()) };
}

/// The console's handler: queues the event and says it is handled, so
/// that backoff ends in its own time. Windows ends a process a few seconds
/// after its handler returns from the console closing or a shutdown: the
/// handler waits that long, so that backoff can end the attempt and write
/// its report first.
unsafe extern "system" fn handler(ctrl: u32) -> BOOL {
    let sig = match ctrl {
        CTRL_C_EVENT => INT,
        CTRL_BREAK_EVENT => BREAK,
        CTRL_CLOSE_EVENT => CLOSE,
        CTRL_SHUTDOWN_EVENT => TERM,
        // A service is told of every user's log-off, and not whose: it is
        // no reason to end a run. (A console's own user logging off closes
        // the console, which is.)
        CTRL_LOGOFF_EVENT => return 1,
        _ => return 0,
    };
    let Some(queue) = QUEUE.get() else {
        return 0;
    };
    push(queue, sig);
    if sig == CLOSE || sig == TERM {
        std::thread::sleep(Duration::from_secs(5));
    }
    1
}

/// Queues `sig` as if the console had sent it: for the tests of what
/// backoff does with one, which a console-less test run cannot receive.
#[cfg(test)]
pub fn raise(sig: i32) {
    if let Some(queue) = QUEUE.get() {
        push(queue, sig);
    }
}

/// Watches the console's control events.
pub struct SignalWatch(());

/// Wakes a `SignalWatch` waiting in another thread, as an event would.
#[derive(Clone)]
pub struct Waker;

impl Waker {
    /// Wakes the wait (`WAKE` comes out of it among the events).
    pub fn wake(&self) {
        if let Some(queue) = QUEUE.get() {
            push(queue, WAKE);
        }
    }
}

impl SignalWatch {
    /// Installs the console handler.
    ///
    /// # Errors
    ///
    /// When the event object cannot be made or the handler installed.
    pub fn install() -> io::Result<SignalWatch> {
        if QUEUE.get().is_none() {
            // SAFETY: an unnamed auto-reset event with no attributes; the
            // handle, if not null, is ours alone.
            let raw = unsafe { CreateEventW(std::ptr::null(), 0, 0, std::ptr::null()) };
            if raw.is_null() {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: `raw` is a new handle that nothing else owns.
            let event = unsafe { OwnedHandle::from_raw_handle(raw) };
            let _ = QUEUE.set(Queue {
                pending: Mutex::new(Vec::new()),
                event,
            });
        }
        // SAFETY: `handler` has the signature Windows calls, and touches
        // only `QUEUE`, which is set before it is installed.
        if unsafe { SetConsoleCtrlHandler(Some(handler), 1) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(SignalWatch(()))
    }

    /// What wakes this watch from another thread.
    ///
    /// # Errors
    ///
    /// Never here; the Unix side may fail to make one.
    pub fn waker(&self) -> io::Result<Waker> {
        Ok(Waker)
    }

    /// The events that arrived since the last call, in order.
    pub fn pending(&mut self) -> Vec<i32> {
        QUEUE.get().map_or_else(Vec::new, |q| {
            std::mem::take(&mut *q.pending.lock().unwrap_or_else(PoisonError::into_inner))
        })
    }

    /// Waits until an event arrives or `deadline` passes (forever without
    /// one), and returns the events that arrived (empty at the deadline).
    pub fn wait(&mut self, deadline: Option<Instant>) -> Vec<i32> {
        self.wait_for(deadline, &[]).0
    }

    /// Waits until an event arrives, one of `handles` is signalled (a
    /// process that ended), or `deadline` passes. Returns the events that
    /// arrived, and which handle was signalled, if one was.
    pub fn wait_for(
        &mut self,
        deadline: Option<Instant>,
        handles: &[BorrowedHandle<'_>],
    ) -> (Vec<i32>, Option<usize>) {
        let Some(queue) = QUEUE.get() else {
            return (Vec::new(), None);
        };
        let mut all = vec![queue.event.as_raw_handle()];
        all.extend(handles.iter().map(AsRawHandle::as_raw_handle));
        loop {
            let got = self.pending();
            if !got.is_empty() {
                return (got, None);
            }
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            // One round waits a day at most (INFINITE is u32::MAX ms).
            let ms = left.map_or(86_400_000, |l| {
                u32::try_from(l.as_millis().min(86_400_000)).unwrap_or(86_400_000)
            });
            // SAFETY: every handle in `all` is open for the length of the
            // call (the queue's event lives as long as the process, the
            // others are borrowed); at most 64 are waited for.
            let woke = unsafe {
                WaitForMultipleObjects(u32::try_from(all.len()).unwrap_or(0), all.as_ptr(), 0, ms)
            };
            if woke == WAIT_TIMEOUT {
                if left.is_some_and(|l| l.as_millis() <= u128::from(ms)) {
                    return (self.pending(), None);
                }
                continue;
            }
            let index = woke.wrapping_sub(WAIT_OBJECT_0) as usize;
            if index == 0 {
                continue;
            }
            if index < all.len() {
                return (self.pending(), Some(index - 1));
            }
            // WAIT_FAILED: a handle is unusable; do not spin on it.
            return (self.pending(), None);
        }
    }
}

/// Sends the control event `sig` (`CTRL_BREAK` or `CTRL_C`) to the
/// console process group `pgid`, the group of a process started with
/// `CREATE_NEW_PROCESS_GROUP`, whose id is that process's.
///
/// # Errors
///
/// When the event cannot be sent (no console, say).
pub fn signal_group(pgid: u32, sig: i32) -> io::Result<()> {
    let event = if sig == INT {
        CTRL_C_EVENT
    } else {
        CTRL_BREAK_EVENT
    };
    // SAFETY: plain values; the call touches no memory of ours.
    if unsafe { GenerateConsoleCtrlEvent(event, pgid) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether the process `pid` runs as another user than backoff: not told
/// on Windows, where `--lock-replace` signals nothing and a state
/// directory is one user's alone.
pub fn another_users(_pid: u32) -> bool {
    false
}

/// Whether the process `pid` is still running, as far as can be told: one
/// that cannot be opened for another reason than not existing (another
/// user's) counts as running.
pub fn process_exists(pid: u32) -> bool {
    use windows_sys::Win32::Foundation::{
        CloseHandle, ERROR_INVALID_PARAMETER, GetLastError, STILL_ACTIVE,
    };
    use windows_sys::Win32::System::Threading::{
        GetExitCodeProcess, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION,
    };
    // SAFETY: plain values; a null handle is checked before use.
    let handle = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if handle.is_null() {
        // SAFETY: reads the calling thread's last error.
        return unsafe { GetLastError() } != ERROR_INVALID_PARAMETER;
    }
    let mut code = 0u32;
    // SAFETY: the handle was opened above and is closed once; `code` is a
    // valid place for the exit code.
    let running = unsafe { GetExitCodeProcess(handle, &raw mut code) } == 0
        || code == STILL_ACTIVE.cast_unsigned();
    // SAFETY: as above.
    unsafe { CloseHandle(handle) };
    running
}
