//! The real executor of attempts: starts the command (no shell, its own
//! process group: `launch`), waits for it, for signals and for its time
//! limits in one event-driven wait (`wait`), copies and scans its output
//! when output rules, held stdout or `--idle-timeout` need it (`copy`,
//! `scan`), holds or replays data in temporary files (`spool`), and decodes
//! how it ended. Policy decisions are not made here.

mod env;
pub mod scan;
#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::report::Warnings;
use crate::sys::signals::Waker;
pub use env::variables_set;
#[cfg(unix)]
pub use unix::{RealExecutor, Replayed, spool_stdin};
#[cfg(windows)]
pub use windows::{RealExecutor, Replayed, spool_stdin};

/// Variables that a receiver of the run's events hands on to the
/// processes started from then on, attempts and hooks (the trace context:
/// `TRACEPARENT`), in place of inherited ones of the same names, or that
/// it keeps from them (`None`). A clone shares them.
#[derive(Debug, Clone, Default)]
pub struct Carried(Arc<Mutex<Variables>>);

/// Variables by name: set to a value, or kept from processes (`None`).
type Variables = Vec<(&'static str, Option<String>)>;

impl Carried {
    /// From now on, processes see `name` set to `value`, or not at all
    /// with `None`.
    pub fn set(&self, name: &'static str, value: Option<String>) {
        let mut vars = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        vars.retain(|(n, _)| *n != name);
        vars.push((name, value));
    }

    /// The variables, as they are now.
    fn vars(&self) -> Variables {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// What a lock's store calls when the run's lease is lost: sets `lost`,
/// and wakes the executor's wait with `waker`. Without one, the loss is
/// seen when the wait next ends.
fn lease_alarm(lost: &Arc<AtomicBool>, waker: Option<Waker>) -> crate::fleet::lock::Alarm {
    let lost = Arc::clone(lost);
    Box::new(move || {
        lost.store(true, Ordering::SeqCst);
        if let Some(w) = &waker {
            w.wake();
        }
    })
}

/// How attempts are run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Keep the child in backoff's process group; signal only the child.
    pub foreground: bool,
    /// The signal a timed-out attempt gets first.
    pub timeout_signal: i32,
    /// How long after that signal the attempt is killed.
    pub kill_after: Duration,
    /// `--hold-stdout`.
    pub hold_stdout: bool,
    /// `--timeout`, told to the command as `BACKOFF_TIMEOUT`.
    pub timeout: Option<Duration>,
    /// `--idle-timeout`: an attempt that writes nothing to stdout or stderr
    /// for this long times out.
    pub idle_timeout: Option<Duration>,
    /// Each attempt is in a fold of a CI log (`--log-format github` or
    /// `gitlab`): its stderr goes through backoff, which ends a last line
    /// the attempt left unfinished, so that the marker that closes the fold
    /// starts a line of its own.
    pub folded: bool,
    /// Where backoff's own warnings go (a guard that cannot be started, a
    /// stopped command, output that cannot be passed on).
    pub warnings: Warnings,
    /// Variables handed on to every process started (`Carried`).
    pub carried: Carried,
}

/// An OS error without its ` (os error N)` tail.
pub(crate) use crate::classify::describe;
