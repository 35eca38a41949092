//! Signals at the OS level: watching them through a self-pipe, waiting for
//! them (with descriptors and a deadline) in one `poll`, the signal mask
//! around and inside a starting child, sending signals to a child's process
//! group, and dying by a signal.

use std::io::{self, PipeReader, Read};
use std::os::fd::{AsFd, BorrowedFd, IntoRawFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use std::time::Instant;

use libc::c_int;
use rustix::event::{PollFd, PollFlags, Timespec, poll};

use crate::sys::fd::set_nonblocking;
use crate::sys::signal_names::{TERMINATING, real_time};

/// The signals backoff watches: those that end a run, job control, the
/// end of a child, and a change of the terminal's size (which redraws the
/// countdown).
fn watched() -> impl Iterator<Item = c_int> {
    TERMINATING.iter().copied().chain(real_time()).chain([
        libc::SIGTSTP,
        libc::SIGCONT,
        libc::SIGCHLD,
        libc::SIGWINCH,
    ])
}

/// The longest one `poll` waits; a longer wait takes several rounds.
const LONGEST_POLL: Duration = Duration::from_hours(24);

/// The signals that have backoff's handler, as a bit mask (bit n - 1 for
/// signal n): a starting child resets them before it unblocks signals.
static HANDLED: AtomicU64 = AtomicU64::new(0);

/// The signals a bit of `HANDLED` can stand for.
const BITS: std::ops::RangeInclusive<c_int> = 1..=64;

fn bit(sig: c_int) -> u64 {
    if BITS.contains(&sig) {
        1 << (sig - 1)
    } else {
        0
    }
}

/// Whether `sig` was inherited as ignored (as `nohup` and background jobs
/// leave SIGINT, SIGQUIT and SIGHUP): such signals stay ignored.
pub fn is_ignored(sig: c_int) -> bool {
    // SAFETY: querying the disposition with a null new action changes
    // nothing; `old` is a plain C struct that sigaction fills in.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &raw mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
    }
}

/// Watches signals through a self-pipe so that one `poll` can wait for a
/// signal, the command's output and a deadline at once (no polling loop, and
/// no sleep a signal cannot cut short). Each handler writes its signal's
/// number into the pipe, so signals arrive in order and none is merged with
/// another.
pub struct SignalWatch {
    wake: PipeReader,
    /// The handlers' end, open for the rest of the process's life.
    notify: RawFd,
}

/// The byte a `Waker` writes into the self-pipe: 0 names no signal, and
/// only wakes the wait, which then looks at the run's state again.
pub const WAKE: c_int = 0;

/// Wakes a `SignalWatch` waiting in another thread, as a signal would.
#[derive(Clone)]
pub struct Waker(Arc<io::PipeWriter>);

impl Waker {
    /// Wakes the wait (`WAKE` comes out of it among the signals).
    pub fn wake(&self) {
        use std::io::Write as _;
        // A full pipe wakes the wait already.
        let _ = (&*self.0).write(&[0]);
    }
}

impl SignalWatch {
    /// Installs handlers for the terminating signals, SIGTSTP, SIGCONT and
    /// SIGCHLD. A terminating or job-control signal inherited as ignored is
    /// left ignored. Installing a SIGCHLD handler also undoes an inherited
    /// `SIG_IGN` for SIGCHLD, which would make the child's status unreadable.
    ///
    /// It also empties backoff's signal mask: a mask inherited from the
    /// caller would hold back the signals watched here, and children inherit
    /// it.
    ///
    /// # Errors
    ///
    /// When the pipe cannot be made or a handler cannot be installed.
    pub fn install() -> io::Result<SignalWatch> {
        set_mask(libc::SIG_SETMASK, &empty_set());
        let (wake, notify) = io::pipe()?;
        // Neither end ever blocks: a full pipe drops a signal's byte (the
        // reader is behind anyway, and will look at the child then).
        set_nonblocking(wake.as_fd())?;
        set_nonblocking(notify.as_fd())?;
        // The handlers write to this end for the rest of the process's life.
        let notify = notify.into_raw_fd();
        for sig in watched() {
            if sig != libc::SIGCHLD && is_ignored(sig) {
                continue;
            }
            let byte = u8::try_from(sig).unwrap_or(u8::MAX);
            let action = move || {
                // SAFETY: write(2) on a non-blocking descriptor that is never
                // closed, from a byte on the stack, is async-signal-safe.
                unsafe {
                    libc::write(notify, (&raw const byte).cast::<libc::c_void>(), 1);
                }
            };
            // SAFETY: the action only calls write(2), which is
            // async-signal-safe, and touches no lock or allocation; the
            // signals registered here are not ones signal-hook forbids.
            unsafe { signal_hook::low_level::register(sig, action)? };
            HANDLED.fetch_or(bit(sig), Ordering::Relaxed);
        }
        Ok(SignalWatch { wake, notify })
    }

    /// What wakes this watch from another thread: a descriptor of its own
    /// of the handlers' end of the pipe.
    ///
    /// # Errors
    ///
    /// When the descriptor cannot be duplicated.
    pub fn waker(&self) -> io::Result<Waker> {
        // SAFETY: `notify` is the handlers' end of the pipe, which is never
        // closed (see `install`): it names that pipe as long as the
        // process lives.
        let notify = unsafe { BorrowedFd::borrow_raw(self.notify) };
        Ok(Waker(Arc::new(io::PipeWriter::from(
            notify.try_clone_to_owned()?,
        ))))
    }

    /// The signals that arrived since the last call, in order. On SIGCHLD,
    /// orphans that ended are reaped (see `children::reap_orphans`).
    pub fn pending(&mut self) -> Vec<c_int> {
        let mut got = Vec::new();
        let mut buf = [0u8; 64];
        while let Ok(n @ 1..) = self.wake.read(&mut buf) {
            got.extend(buf[..n].iter().map(|&b| c_int::from(b)));
            if n < buf.len() {
                // A short read emptied the pipe.
                break;
            }
        }
        if got.contains(&libc::SIGCHLD) {
            crate::sys::children::reap_orphans();
        }
        got
    }

    /// Waits until a signal arrives or `deadline` passes (forever without
    /// one), and returns the signals that arrived (empty at the deadline).
    pub fn wait(&mut self, deadline: Option<Instant>) -> Vec<c_int> {
        self.wait_io(deadline, &[]).0
    }

    /// Waits until a signal arrives, one of `watched` is ready (to be read,
    /// or written when its flag is set; an end of file or an error counts),
    /// or `deadline` passes. Returns the signals that arrived and, for each
    /// watched descriptor, whether it is ready.
    pub fn wait_io(
        &mut self,
        deadline: Option<Instant>,
        watched: &[(BorrowedFd<'_>, bool)],
    ) -> (Vec<c_int>, Vec<bool>) {
        loop {
            // Signals already in the pipe make it readable: poll sees them.
            // At the deadline the descriptors are still looked at once, so
            // that data already there is never passed over.
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            // One round waits a day at most: where poll takes milliseconds
            // in an int (no ppoll), a longer wait would be refused.
            let timeout = left.map(|l| l.min(LONGEST_POLL)).map(|l| Timespec {
                tv_sec: l.as_secs().try_into().unwrap_or(i64::MAX),
                tv_nsec: l.subsec_nanos().into(),
            });
            let (signalled, ready) = {
                let mut fds: Vec<PollFd<'_>> =
                    std::iter::once(PollFd::new(&self.wake, PollFlags::IN))
                        .chain(watched.iter().map(|&(fd, write)| {
                            let events = if write { PollFlags::OUT } else { PollFlags::IN };
                            PollFd::from_borrowed_fd(fd, events)
                        }))
                        .collect();
                // EINTR (a signal) shows in the pipe on the next round.
                let _ = poll(&mut fds, timeout.as_ref());
                let ready: Vec<bool> = fds[1..].iter().map(|p| !p.revents().is_empty()).collect();
                (!fds[0].revents().is_empty(), ready)
            };
            let got = if signalled {
                self.pending()
            } else {
                Vec::new()
            };
            if left.is_some_and(|l| l.is_zero()) || !got.is_empty() || ready.iter().any(|&r| r) {
                return (got, ready);
            }
        }
    }
}

fn empty_set() -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the zeroed set it is given.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        set
    }
}

/// Changes this thread's signal mask; returns the mask before.
fn set_mask(how: c_int, set: &libc::sigset_t) -> libc::sigset_t {
    // SAFETY: `set` is an initialised set and `old` a place for one;
    // pthread_sigmask changes only this thread's mask, and is
    // async-signal-safe in practice (it is a system call).
    unsafe {
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(how, set, &raw mut old);
        old
    }
}

/// Every signal blocked for as long as this lives; the mask before is
/// restored when it is dropped.
pub struct Blocked {
    before: libc::sigset_t,
}

/// Blocks every signal until the returned guard is dropped: while a child
/// starts, none of backoff's handlers may run in it (they would write to
/// backoff's self-pipe); the child resets them before it unblocks signals
/// (`prepare_exec`).
pub fn block_all() -> Blocked {
    // SAFETY: sigfillset initialises the zeroed set it is given.
    let all = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&raw mut set);
        set
    };
    Blocked {
        before: set_mask(libc::SIG_SETMASK, &all),
    }
}

impl Drop for Blocked {
    fn drop(&mut self) {
        set_mask(libc::SIG_SETMASK, &self.before);
    }
}

/// In a starting child, between fork and exec, with every signal blocked
/// (`block_all`): gives each signal that has backoff's handler its default
/// disposition back, then empties the mask, so that the command starts
/// with default dispositions (those inherited as ignored stay ignored) and
/// an empty mask, and a signal that came meanwhile acts on the child as it
/// would on the command. Async-signal-safe: no allocation, no lock.
pub fn prepare_exec() {
    let handled = HANDLED.load(Ordering::Relaxed);
    for sig in BITS {
        if handled & bit(sig) != 0 {
            // SAFETY: a default disposition installs no handler; `dfl` is a
            // zeroed C struct with SIG_DFL set.
            unsafe {
                let mut dfl: libc::sigaction = std::mem::zeroed();
                dfl.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(sig, &raw const dfl, std::ptr::null_mut());
            }
        }
    }
    set_mask(libc::SIG_SETMASK, &empty_set());
}

/// Runs `f` with SIGPIPE ignored, then gives SIGPIPE its default
/// disposition: in a starting child, where std has made it the default
/// already, a write to a pipe whose reader is gone then fails with `EPIPE`
/// instead of killing the child. Async-signal-safe: no allocation, no lock.
pub fn without_sigpipe<T>(f: impl FnOnce() -> T) -> T {
    let set = |disposition| {
        // SAFETY: a disposition of SIG_IGN or SIG_DFL installs no handler;
        // `action` is a zeroed C struct with it set.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = disposition;
            libc::sigaction(libc::SIGPIPE, &raw const action, std::ptr::null_mut());
        }
    };
    set(libc::SIG_IGN);
    let done = f();
    set(libc::SIG_DFL);
    done
}

/// Sends `sig` to the process group `pgid`. Refuses groups that are not a
/// child's: pgid 0 or 1, or backoff's own group.
///
/// # Errors
///
/// As kill(2): `ESRCH` when the group is gone, `EPERM` when it may not be
/// signalled; `InvalidInput` for a group backoff must not signal.
pub fn signal_group(pgid: u32, sig: c_int) -> io::Result<()> {
    // backoff never changes its own group, so it is read once.
    static OWN: OnceLock<libc::pid_t> = OnceLock::new();
    // SAFETY: getpgrp has no preconditions and cannot fail. (rustix's
    // getpgrp takes the result for a positive id, but it is 0 when the
    // group's leader is in a parent PID namespace.)
    let own = *OWN.get_or_init(|| unsafe { libc::getpgrp() });
    let pgid = libc::pid_t::try_from(pgid).map_err(|_| io::ErrorKind::InvalidInput)?;
    if pgid <= 1 || pgid == own {
        return Err(io::ErrorKind::InvalidInput.into());
    }
    kill(-pgid, sig)
}

/// Sends `sig` to the process `pid`, never to pid 0 or 1.
///
/// # Errors
///
/// As `signal_group`.
pub fn signal_process(pid: u32, sig: c_int) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| io::ErrorKind::InvalidInput)?;
    if pid <= 1 {
        return Err(io::ErrorKind::InvalidInput.into());
    }
    kill(pid, sig)
}

/// kill(2) for any signal number, real-time signals included (which the
/// typed wrappers of rustix and nix do not take). Callers check `pid`.
fn kill(pid: libc::pid_t, sig: c_int) -> io::Result<()> {
    // SAFETY: kill only sends a signal; the callers refuse pids 0, 1 and
    // -1 and groups 0 and 1.
    if unsafe { libc::kill(pid, sig) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether any process of the group `pgid` is still alive (or a zombie).
pub fn group_exists(pgid: u32) -> bool {
    match signal_group(pgid, 0) {
        Ok(()) => true,
        Err(e) => e.raw_os_error() == Some(libc::EPERM),
    }
}

/// Whether the process `pid` of this host is still alive (or a zombie),
/// as far as can be told: a pid of 0 or 1, and one that cannot be
/// signalled, count as alive.
pub fn process_exists(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    if pid <= 1 {
        return true;
    }
    // SAFETY: signal 0 sends nothing; it only checks the pid, which is
    // above 1.
    if unsafe { libc::kill(pid, 0) } == 0 {
        return true;
    }
    io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Whether the process `pid` of this host runs as another user than
/// backoff (its real user, on Linux the owner of `/proc/PID`; elsewhere, a
/// process that backoff may not signal). A process gone, or one that
/// cannot be looked at, does not.
pub fn another_users(pid: u32) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(id) = i32::try_from(pid) else {
        return false;
    };
    if id <= 0 {
        return false;
    }
    if let Ok(meta) = std::fs::metadata(format!("/proc/{pid}")) {
        return meta.uid() != rustix::process::getuid().as_raw();
    }
    // SAFETY: signal 0 sends nothing; it only checks the pid, which is
    // above 0.
    let refused = unsafe { libc::kill(id, 0) } != 0;
    refused && io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Stops backoff itself, as SIGTSTP would have without a handler.
pub fn stop_self() {
    let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::STOP);
}

/// Dies by `sig`: no core dump, default disposition, unblocked, raised. If
/// the signal's default action does not end the process, returns so that the
/// caller can exit with `128 + sig`. (signal-hook's
/// `emulate_default_handler` would abort instead, and knows no real-time
/// signal.)
pub fn die_by(sig: c_int) {
    let no_core = rustix::process::Rlimit {
        current: Some(0),
        maximum: Some(0),
    };
    let _ = rustix::process::setrlimit(rustix::process::Resource::Core, no_core);
    // SAFETY: a default disposition installs no handler; the set is
    // initialised by sigemptyset before use; raise has no preconditions.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(sig, &raw const action, std::ptr::null_mut());
        let mut set = empty_set();
        libc::sigaddset(&raw mut set, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &raw const set, std::ptr::null_mut());
        libc::raise(sig);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_signals_init_or_everyone() {
        assert!(signal_group(0, 0).is_err());
        assert!(signal_group(1, 0).is_err());
        assert!(signal_process(1, 0).is_err());
        assert!(signal_process(0, 0).is_err());
    }

    #[test]
    fn every_signal_number_up_to_64_has_a_bit() {
        assert_eq!(bit(libc::SIGINT), 1 << (libc::SIGINT - 1));
        assert_eq!(bit(64), 1 << 63);
        assert_eq!(bit(65), 0);
        assert_eq!(bit(0), 0);
        assert_eq!(bit(-1), 0);
    }
}
