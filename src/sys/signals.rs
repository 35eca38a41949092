//! Signals at the OS level: watching them through a self-pipe, waiting for
//! them with a deadline, sending them to a child's process group, and dying
//! by one.

use std::io::{self, PipeReader, Read};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, IntoRawFd};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use libc::c_int;

/// Whether `sig` was inherited as ignored (as `nohup` and background jobs
/// leave SIGINT, SIGQUIT and SIGHUP): such signals stay ignored.
pub fn is_ignored(sig: c_int) -> bool {
    // SAFETY: querying the disposition with a null new action changes nothing;
    // `old` is a plain C struct that sigaction fills in.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &raw mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
    }
}

/// The signals `SignalWatch::install` found ignored and left so, as a bit
/// mask (bit n for signal n).
static LEFT_IGNORED: OnceLock<u64> = OnceLock::new();

/// Whether `sig` is ignored because backoff inherited it so. Known without a
/// system call once `SignalWatch::install` has run.
pub fn left_ignored(sig: c_int) -> bool {
    match LEFT_IGNORED.get() {
        Some(mask) => u32::try_from(sig).is_ok_and(|n| n < 64 && mask & (1 << n) != 0),
        None => is_ignored(sig),
    }
}

/// Watches signals through a self-pipe so that one `poll` can wait for a
/// signal, the command's output and a deadline at once (no polling loop, and
/// no sleep a signal cannot cut short). Each handler writes its signal's
/// number into the pipe, so signals arrive in order and none is merged with
/// another.
pub struct SignalWatch {
    wake: PipeReader,
}

impl SignalWatch {
    /// Installs handlers for the terminating signals, SIGTSTP, SIGCONT and
    /// SIGCHLD. A terminating or job-control signal inherited as ignored is
    /// left ignored. Installing a SIGCHLD handler also undoes an inherited
    /// `SIG_IGN` for SIGCHLD, which would make the child's status unreadable.
    ///
    /// It also empties backoff's signal mask: a mask inherited from the
    /// caller would hold back the signals watched here, and children inherit
    /// it (the standard library does not reset it when it spawns).
    pub fn install() -> io::Result<SignalWatch> {
        unblock_all();
        let (wake, notify) = io::pipe()?;
        // Neither end ever blocks: a full pipe drops a signal's byte (the
        // reader is behind anyway, and will look at the child then).
        crate::sys::spawn::set_nonblocking(wake.as_fd())?;
        crate::sys::spawn::set_nonblocking(notify.as_fd())?;
        // The handlers write to this end for the rest of the process's life.
        let notify = notify.into_raw_fd();
        let watched =
            crate::signal::TERMINATING
                .iter()
                .chain(&[libc::SIGTSTP, libc::SIGCONT, libc::SIGCHLD]);
        let mut ignored = 0u64;
        for &sig in watched {
            if sig != libc::SIGCHLD && is_ignored(sig) {
                ignored |= 1 << sig;
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
        }
        let _ = LEFT_IGNORED.set(ignored);
        Ok(SignalWatch { wake })
    }

    /// The signals that arrived since the last call, in order.
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
        let mut fds: Vec<libc::pollfd> = std::iter::once(libc::pollfd {
            fd: self.wake.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .chain(watched.iter().map(|(fd, write)| libc::pollfd {
            fd: fd.as_raw_fd(),
            events: if *write { libc::POLLOUT } else { libc::POLLIN },
            revents: 0,
        }))
        .collect();
        loop {
            // Signals already in the pipe make it readable: poll sees them.
            // At the deadline the readers are still looked at once, so that
            // data already there is never passed over.
            let (timeout_ms, last) = match deadline {
                None => (-1, false),
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    (poll_timeout_ms(left), left.is_zero())
                }
            };
            let count = libc::nfds_t::try_from(fds.len()).unwrap_or(libc::nfds_t::MAX);
            // SAFETY: `fds` is a valid array of `count` pollfd structs that
            // outlives the call; poll only writes their `revents`.
            let _ = unsafe { libc::poll(fds.as_mut_ptr(), count, timeout_ms) };
            let got = if fds[0].revents == 0 {
                Vec::new()
            } else {
                self.pending()
            };
            let ready: Vec<bool> = fds[1..].iter().map(|p| p.revents != 0).collect();
            if last || !got.is_empty() || ready.iter().any(|&r| r) {
                return (got, ready);
            }
        }
    }
}

/// Empties this thread's signal mask.
fn unblock_all() {
    // SAFETY: `set` is initialised by sigemptyset before use; the call only
    // changes this thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        libc::pthread_sigmask(libc::SIG_SETMASK, &raw const set, std::ptr::null_mut());
    }
}

/// A poll timeout in whole milliseconds, rounded up so that a wait never
/// ends before its deadline.
fn poll_timeout_ms(left: Duration) -> c_int {
    let ms = left.as_nanos().div_ceil(1_000_000);
    c_int::try_from(ms).unwrap_or(c_int::MAX)
}

/// Sends `sig` to the process group `pgid`. Refuses groups that are not a
/// child's: pgid 0 or 1, or backoff's own group.
pub fn signal_group(pgid: u32, sig: c_int) -> io::Result<()> {
    // backoff never changes its own group, so it is read once.
    static OWN: std::sync::OnceLock<libc::pid_t> = std::sync::OnceLock::new();
    let pgid = libc::pid_t::try_from(pgid).map_err(|_| io::ErrorKind::InvalidInput)?;
    // SAFETY: getpgrp has no preconditions.
    let own = *OWN.get_or_init(|| unsafe { libc::getpgrp() });
    if pgid <= 1 || pgid == own {
        return Err(io::ErrorKind::InvalidInput.into());
    }
    // SAFETY: kill with a negative pid signals a group; pgid > 1 was checked.
    if unsafe { libc::kill(-pgid, sig) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sends `sig` to the process `pid`, never to pid 0 or 1.
pub fn signal_process(pid: u32, sig: c_int) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| io::ErrorKind::InvalidInput)?;
    if pid <= 1 {
        return Err(io::ErrorKind::InvalidInput.into());
    }
    // SAFETY: kill on a positive pid greater than 1 only sends a signal.
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

/// Stops backoff itself, as SIGTSTP would have without a handler.
pub fn stop_self() {
    // SAFETY: raise has no preconditions; SIGSTOP cannot be caught.
    unsafe {
        libc::raise(libc::SIGSTOP);
    }
}

/// Dies by `sig`: no core dump, default disposition, unblocked, raised. If
/// the signal's default action does not end the process, returns so that the
/// caller can exit with `128 + sig`.
pub fn die_by(sig: c_int) {
    // SAFETY: plain libc calls on valid, initialised arguments; they change
    // only this process's own limits, disposition and mask before it ends.
    unsafe {
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &raw const no_core);
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(sig, &raw const action, std::ptr::null_mut());
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        libc::sigaddset(&raw mut set, sig);
        libc::sigprocmask(libc::SIG_UNBLOCK, &raw const set, std::ptr::null_mut());
        libc::raise(sig);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poll_timeouts_round_up() {
        assert_eq!(poll_timeout_ms(Duration::from_nanos(1)), 1);
        assert_eq!(poll_timeout_ms(Duration::from_millis(5)), 5);
        assert_eq!(poll_timeout_ms(Duration::from_secs(u64::MAX)), c_int::MAX);
    }

    #[test]
    fn never_signals_init_or_everyone() {
        assert!(signal_group(0, 0).is_err());
        assert!(signal_group(1, 0).is_err());
        assert!(signal_process(1, 0).is_err());
        assert!(signal_process(0, 0).is_err());
    }
}
