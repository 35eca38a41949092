//! backoff's own children not yet reaped, and the reaping of every other
//! child: the orphans the system hands to a PID 1 are reaped without taking
//! the status of one of backoff's own (`reap_orphans`).

use std::io;
use std::process::Child;
use std::sync::{Mutex, PoisonError};

/// backoff's own children not yet reaped (the attempt, a hook, the
/// guard): the reaper of orphans leaves them to be waited for, by pid, by
/// what started them.
static OURS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

fn ours() -> std::sync::MutexGuard<'static, Vec<u32>> {
    OURS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Counts `pid` among backoff's own children, until it is forgotten.
pub fn adopt(pid: u32) {
    ours().push(pid);
}

/// `pid`, one of backoff's own children, has been reaped.
pub fn forget(pid: u32) {
    ours().retain(|&p| p != pid);
}

/// Waits for `child`, one of backoff's own, reaps it, and then the orphans
/// that may have ended behind it.
///
/// # Errors
///
/// As `Child::wait`.
pub fn reap(child: &mut Child) -> io::Result<std::process::ExitStatus> {
    let status = child.wait();
    forget(child.id());
    reap_orphans();
    status
}

/// Reaps every child that has ended and is not one of backoff's own: as
/// PID 1 (a container's entrypoint, `unshare --pid --fork`) backoff is
/// given every orphan of its PID namespace, the processes that a command's
/// double fork left, and each would stay a zombie, as `tini` and
/// `docker --init` know. Called on SIGCHLD, and after one of backoff's own
/// is reaped (an orphan that ended behind it is found only then). Elsewhere
/// there is nothing to reap: without a subreaper, orphans go to PID 1.
pub fn reap_orphans() {
    let ours = ours();
    loop {
        // SAFETY: a zeroed siginfo_t is a valid place for waitid to fill
        // in; WNOWAIT leaves the child as it is, to be reaped below only if
        // it is not backoff's own; si_pid is read from what waitid filled.
        let pid = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let options = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
            if libc::waitid(libc::P_ALL, 0, &raw mut info, options) != 0 {
                // ECHILD: no child at all.
                return;
            }
            info.si_pid()
        };
        // 0: none has ended. One of backoff's own first: it is waited for
        // by its owner, who calls this again then.
        let Ok(orphan) = u32::try_from(pid) else {
            return;
        };
        if orphan == 0 || ours.contains(&orphan) {
            return;
        }
        // SAFETY: `pid` is a child that has ended and is no one's to wait
        // for: reaping it takes no status from backoff.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
    }
}
