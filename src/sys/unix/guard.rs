//! The guard: a small process, forked from backoff before the first
//! attempt starts, that kills the running attempt's process group if
//! backoff dies without saying goodbye, even by SIGKILL. The parent-death
//! signal kills only the command itself; the processes it started would
//! live on.
//!
//! backoff tells the guard each attempt's process group (four bytes, its
//! number) when the attempt starts, and 0 when nothing of it needs killing
//! any more. The kernel closes backoff's end of the pipe however backoff
//! dies: the guard then reads the end of the pipe, kills the group it was
//! told last, if any, and exits. When backoff ends on its own it kills the
//! guard with SIGKILL and reaps it, so a normal end leaves alone what the
//! contract leaves alone.
//!
//! A guard that is killed (by hand, by the OOM killer) is noticed on the
//! SIGCHLD of its death, or the next time it is told a group (the write
//! fails with EPIPE): the executor starts a new one (`exec`), so that its
//! death costs no attempt and leaves the running one guarded again.
//!
//! The forked guard does nothing but system calls that are safe after a
//! fork (dup2, close, read, kill, _exit): it allocates nothing and touches
//! none of backoff's state. Every signal it can block stays blocked, as it
//! was forked, so that Ctrl-C at the terminal, job control or a SIGTERM
//! sent to backoff's process group do not end it before backoff.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd};

use crate::sys::fd::set_nonblocking;
use crate::sys::{children, process, signals};

/// backoff's end of the pipe to its guard.
pub struct Guard {
    tell: File,
    pid: libc::pid_t,
}

impl Guard {
    /// Forks the guard.
    ///
    /// # Errors
    ///
    /// When the pipe or the fork fails.
    pub fn start() -> io::Result<Guard> {
        let (listen, tell) = io::pipe()?;
        let listen = OwnedFd::from(listen);
        let raw = listen.as_raw_fd();
        // No handler of backoff's may run in the guard (it would write to
        // backoff's self-pipe): it starts with every signal blocked.
        let blocked = signals::block_all();
        // SAFETY: in the child, only async-signal-safe system calls run on
        // values made before the fork (`raw`), then `_exit`; nothing
        // allocates, locks or returns into Rust code of the parent's.
        let pid = unsafe { libc::fork() };
        match pid {
            -1 => Err(io::Error::last_os_error()),
            // SAFETY: as above.
            0 => unsafe { keep_watch(raw) },
            _ => {
                drop(blocked);
                drop(listen);
                // A guard that stopped reading never holds backoff up.
                set_nonblocking(&tell)?;
                children::adopt(u32::try_from(pid).unwrap_or(0));
                Ok(Guard {
                    tell: File::from(OwnedFd::from(tell)),
                    pid,
                })
            }
        }
    }

    /// The pipe the guard is told groups through, for a child to tell it
    /// its own (see `process::spawn`).
    pub fn pipe(&self) -> std::os::fd::RawFd {
        self.tell.as_raw_fd()
    }

    /// Whether the guard has died (killed by hand or by the OOM killer):
    /// it is not reaped, so its pid names it still.
    pub fn has_ended(&self) -> bool {
        u32::try_from(self.pid).is_ok_and(|pid| matches!(process::ended(pid), Ok(Some(_))))
    }

    /// The process group to kill if backoff dies now; 0 for none.
    ///
    /// # Errors
    ///
    /// `BrokenPipe` when the guard is gone (killed by hand or by the OOM
    /// killer): it watches nothing any more.
    pub fn watch(&mut self, pgid: u32) -> io::Result<()> {
        // Four bytes are written at once or not at all (less than
        // PIPE_BUF); a full pipe (a guard stopped, not reading) loses them,
        // but the guard is still there.
        match self.tell.write(&pgid.to_ne_bytes()) {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Err(e),
            _ => Ok(()),
        }
    }
}

impl Drop for Guard {
    /// backoff ends on its own: the guard is not needed any more. SIGKILL
    /// ends it at once, without its killing anything, and backoff reaps it.
    fn drop(&mut self) {
        // SAFETY: `pid` is backoff's own child, not yet reaped, so it
        // cannot name another process; waitpid only reaps it.
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            libc::waitpid(self.pid, std::ptr::null_mut(), 0);
        }
        children::forget(u32::try_from(self.pid).unwrap_or(0));
    }
}

/// The guard's life: reads process groups until the pipe ends, then kills
/// the last one it was told, and exits.
///
/// # Safety
///
/// Only to be called in a freshly forked child, with `listen` the read end
/// of the guard's pipe.
unsafe fn keep_watch(listen: libc::c_int) -> ! {
    // SAFETY: every call below is an async-signal-safe system call on
    // plain values; the buffers live on this stack.
    unsafe {
        // Hold no descriptor of backoff's (a pipe's reader downstream
        // would wait for the guard, a lock would stay taken): keep the
        // pipe as descriptor 0 and close the others.
        libc::dup2(listen, 0);
        close_from(1);
        #[cfg(target_os = "linux")]
        libc::prctl(libc::PR_SET_NAME, c"backoff-guard".as_ptr());
        let mut pgid: u32 = 0;
        let mut buf = [0u8; 4];
        loop {
            let n = libc::read(0, buf.as_mut_ptr().cast(), buf.len());
            if n == 4 {
                pgid = u32::from_ne_bytes(buf);
            } else if n >= 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break;
            }
        }
        if let Ok(group) = libc::pid_t::try_from(pgid)
            && group > 1
        {
            libc::kill(-group, libc::SIGKILL);
        }
        libc::_exit(0)
    }
}

/// Closes every descriptor from `first` on.
///
/// # Safety
///
/// Only in the guard: nothing else may be using those descriptors.
unsafe fn close_from(first: libc::c_int) {
    // SAFETY: closing descriptors has no other effect on this process.
    unsafe {
        #[cfg(target_os = "linux")]
        if libc::syscall(libc::SYS_close_range, first, libc::c_uint::MAX, 0) == 0 {
            return;
        }
        let max = libc::sysconf(libc::_SC_OPEN_MAX).clamp(256, 65_536);
        for fd in first..libc::c_int::try_from(max).unwrap_or(256) {
            libc::close(fd);
        }
    }
}
