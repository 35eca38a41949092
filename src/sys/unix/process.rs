//! Starting the command: `std::process::Command` does the fork, the standard
//! descriptors and the process group; a `pre_exec` hook does what std has no
//! word for, in the child:
//!
//! - it gives backoff's signal handlers their default dispositions back and
//!   empties the signal mask (std leaves both as they are);
//! - on Linux it sets the parent-death signal, so that the command dies
//!   with backoff even when backoff is killed with SIGKILL;
//! - it executes the command itself, searching PATH as `execvp` does, but
//!   without `execvp`'s fallback of handing a file of no executable format
//!   to `/bin/sh` (glibc's `execvp`, which std calls, has that fallback):
//!   the command is never run through a shell.
//!
//! Everything the child uses is prepared by the parent: after a fork the
//! child may not allocate.
//!
//! It also tells whether anything of a process group is still running
//! (`group_alive`); the children it starts are counted as backoff's own
//! (`children`).

use std::ffi::{CString, OsStr, OsString, c_char};
use std::io;
use std::os::fd::{OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

use crate::sys::children::adopt;
use crate::sys::signals;

/// A command line ready to be executed in a child: the paths to try, as
/// `execvp` would, and the arguments and environment as C strings, with the
/// arrays of pointers to them that `execve` takes.
pub struct Exec {
    paths: Vec<CString>,
    /// Owns the strings `argv` points to.
    _words: Vec<CString>,
    /// Owns the strings `envp` points to.
    _env: Vec<CString>,
    argv: Vec<*const c_char>,
    envp: Vec<*const c_char>,
}

// SAFETY: the pointers point into the strings the same value owns, which
// are never changed or moved (a `CString`'s bytes live on the heap); they
// are only read, by execve.
unsafe impl Send for Exec {}
// SAFETY: as above; nothing is written through a shared reference.
unsafe impl Sync for Exec {}

impl Exec {
    /// The command line `command` (program first) with `env` as its
    /// environment (`NAME=value` entries, in order).
    ///
    /// # Errors
    ///
    /// `NotFound` for an empty program name; `InvalidInput` when a word
    /// contains a NUL byte.
    pub fn new(command: &[OsString], env: Vec<CString>) -> io::Result<Exec> {
        let program = command.first().map_or(OsStr::new(""), OsString::as_os_str);
        let paths = candidates(program)?;
        let words: Vec<CString> = command
            .iter()
            .map(|w| c_string(w))
            .collect::<Result<_, _>>()?;
        let argv = words
            .iter()
            .map(|w| w.as_ptr())
            .chain([std::ptr::null()])
            .collect();
        let envp = env
            .iter()
            .map(|e| e.as_ptr())
            .chain([std::ptr::null()])
            .collect();
        Ok(Exec {
            paths,
            _words: words,
            _env: env,
            argv,
            envp,
        })
    }

    /// In the child: executes the first candidate that can be executed, as
    /// `execvp` does: a candidate that does not exist lets the next one try,
    /// one found but not executable is remembered, any other failure ends
    /// the search. Returns only on failure, with its reason.
    fn execute(&self) -> io::Error {
        let mut denied = false;
        let mut last = libc::ENOENT;
        for path in &self.paths {
            // SAFETY: `path` and the strings of `argv` and `envp` are
            // NUL-terminated and live as long as `self`; both arrays end
            // with a null pointer. execve returns only on failure.
            unsafe {
                libc::execve(path.as_ptr(), self.argv.as_ptr(), self.envp.as_ptr());
            }
            last = io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::ENOENT);
            match last {
                libc::EACCES => denied = true,
                libc::ENOENT | libc::ENOTDIR | libc::ENAMETOOLONG | libc::ELOOP => {}
                _ => break,
            }
        }
        if denied && matches!(last, libc::ENOENT | libc::ENOTDIR) {
            last = libc::EACCES;
        }
        io::Error::from_raw_os_error(last)
    }
}

/// Starts `command` (with its descriptors and process group set) as a
/// child that executes `exec`. With `announce` (the guard's pipe), the
/// child writes its own pid there before it executes anything, so that the
/// guard knows its group before the command can start a process of its
/// own.
///
/// # Errors
///
/// Why the command could not start: not found, not executable, and the like.
pub fn spawn(mut command: Command, exec: Exec, announce: Option<RawFd>) -> io::Result<Child> {
    let parent = rustix::process::getpid();
    let hook = move || -> io::Result<()> {
        signals::prepare_exec();
        #[cfg(target_os = "linux")]
        {
            // Die with backoff; if backoff died already, nothing would send
            // the signal: then do not start at all.
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
            if rustix::process::getppid() != Some(parent) {
                return Err(io::ErrorKind::BrokenPipe.into());
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = parent;
        if let Some(fd) = announce {
            let pid = u32::try_from(rustix::process::getpid().as_raw_nonzero().get())
                .unwrap_or(0)
                .to_ne_bytes();
            // std has given SIGPIPE its default disposition back by now: a
            // guard that was killed must not kill the command before it
            // starts, so the write fails with EPIPE instead.
            signals::without_sigpipe(|| {
                // SAFETY: `fd` is the guard's pipe, open in the child until
                // it executes; a write of 4 bytes to a pipe is whole or
                // nothing, and one lost (a full pipe, a dead guard) is made
                // good by the parent's own.
                unsafe { libc::write(fd, pid.as_ptr().cast(), pid.len()) };
            });
        }
        Err(exec.execute())
    };
    // SAFETY: the hook only makes system calls (sigaction, sigprocmask,
    // prctl, getppid, getpid, write, execve) on values prepared before the
    // fork; it does not allocate, lock or touch backoff's state.
    unsafe { command.pre_exec(hook) };
    // No handler of backoff's may run in the child before the hook has
    // reset them: the child starts with every signal blocked.
    let _blocked = signals::block_all();
    let child = command.spawn()?;
    adopt(child.id());
    Ok(child)
}

/// How the child `pid` ended, if it has, without reaping it: until it is
/// reaped (`Child::wait`), its id, which is also that of its process
/// group, names no other process or group, so the group can be signalled
/// without a race.
///
/// # Errors
///
/// As waitid(2).
pub fn ended(pid: u32) -> io::Result<Option<std::process::ExitStatus>> {
    use rustix::process::{Pid, WaitId, WaitIdOptions, waitid};
    use std::os::unix::process::ExitStatusExt;
    let pid = i32::try_from(pid)
        .ok()
        .and_then(Pid::from_raw)
        .ok_or(io::ErrorKind::InvalidInput)?;
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    Ok(waitid(WaitId::Pid(pid), options)?.map(|status| {
        // The wait status that waitpid(2) would have given.
        let raw = match (status.exit_status(), status.terminating_signal()) {
            (Some(code), _) => (code & 0xff) << 8,
            (None, Some(sig)) if status.dumped() => sig | 0x80,
            (None, Some(sig)) => sig,
            (None, None) => 0,
        };
        std::process::ExitStatus::from_raw(raw)
    }))
}

/// The signal that stopped the child `pid`, if it has stopped since this
/// was last asked (the report is taken; an exit is left to be waited for).
pub fn stopped_by(pid: u32) -> Option<libc::c_int> {
    use rustix::process::{Pid, WaitId, WaitIdOptions, waitid};
    let pid = Pid::from_raw(i32::try_from(pid).ok()?)?;
    let status = waitid(
        WaitId::Pid(pid),
        WaitIdOptions::STOPPED | WaitIdOptions::NOHANG,
    )
    .ok()
    .flatten()?;
    status.stopping_signal()
}

/// What is alive of a process group: not only zombies that nobody has
/// reaped yet (where no init reaps, such zombies stay).
pub enum Alive {
    /// Nothing.
    None,
    /// These processes, each a descriptor (a pidfd) that becomes readable
    /// when it ends, so that their end is waited for, not polled.
    Watched(Vec<OwnedFd>),
    /// Something, that cannot be watched (no `/proc`, no pidfd): only
    /// looking again tells when it ends.
    Unwatched,
}

/// What is alive of the group `pgid`. (The group is looked for in `/proc`
/// only when it exists at all.)
pub fn group_alive(pgid: u32) -> Alive {
    if !signals::group_exists(pgid) {
        return Alive::None;
    }
    #[cfg(target_os = "linux")]
    if let Ok(dir) = std::fs::read_dir("/proc") {
        use rustix::process::{Pid, PidfdFlags, pidfd_open};
        let mut fds = Vec::new();
        // Whether /proc shows any process of the group, a zombie included.
        let mut members = false;
        for entry in dir.flatten() {
            let Some(number) = entry
                .file_name()
                .to_str()
                .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|n| n.parse::<i32>().ok())
            else {
                continue;
            };
            let Some(alive) = std::fs::read_to_string(format!("/proc/{number}/stat"))
                .ok()
                .and_then(|stat| member_of(&stat, pgid))
            else {
                continue;
            };
            members = true;
            if !alive {
                continue;
            }
            match Pid::from_raw(number).map(|p| pidfd_open(p, PidfdFlags::empty())) {
                Some(Ok(fd)) => fds.push(fd),
                // It has ended since.
                Some(Err(rustix::io::Errno::SRCH)) => {}
                // A kernel without pidfds (before 5.3).
                _ => return Alive::Unwatched,
            }
        }
        return match (fds.is_empty(), members) {
            (false, _) => Alive::Watched(fds),
            (true, true) => Alive::None,
            // The group exists, but not in this /proc: that of another PID
            // namespace (`unshare --pid` without a /proc of its own).
            (true, false) => Alive::Unwatched,
        };
    }
    Alive::Unwatched
}

/// Whether a failure to start is backoff's own lack of a resource
/// rather than the command's: a process slot (`EAGAIN`), memory,
/// descriptors of its own or of the system, buffers.
pub fn is_resource_error(errno: i32) -> bool {
    matches!(
        errno,
        libc::EAGAIN | libc::ENOMEM | libc::EMFILE | libc::ENFILE | libc::ENOBUFS
    )
}

/// The shell that runs a command line, as the advice for a command given
/// as one word names it.
pub const SHELL: [&str; 2] = ["sh", "-c"];

/// The characters besides letters and digits that a word may hold and
/// mean the same to the shell, unquoted.
pub const PLAIN: &str = "_-./:=,@%+";

/// `word` quoted for the shell: in single quotes, a single quote in it
/// written `'\''`.
pub fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// Whether the environment variable `name` is the one called `variable`
/// (names are case-sensitive here).
pub fn same_variable(name: &OsStr, variable: &str) -> bool {
    name == variable
}

/// Whether the `/proc/PID/stat` line `stat` is of a process of the group
/// `pgid`: `Some(true)` for one that is alive, `Some(false)` for a zombie.
/// The name, in parentheses, may hold any character: the fields are read
/// after its last `)`.
#[cfg(target_os = "linux")]
fn member_of(stat: &str, pgid: u32) -> Option<bool> {
    let (_, fields) = stat.rsplit_once(')')?;
    // State, parent, group.
    let mut fields = fields.split_whitespace();
    let state = fields.next()?;
    let group = fields.nth(1).and_then(|g| g.parse::<u32>().ok());
    (group == Some(pgid)).then(|| state != "Z" && state != "X")
}

fn c_string(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "an argument contains a NUL byte",
        )
    })
}

/// A `NAME=value` environment entry.
///
/// # Errors
///
/// `InvalidInput` when it contains a NUL byte.
pub fn env_entry(name: &OsStr, value: &OsStr) -> io::Result<CString> {
    let mut entry = name.as_bytes().to_vec();
    entry.push(b'=');
    entry.extend_from_slice(value.as_bytes());
    c_string(OsStr::from_bytes(&entry))
}

/// The file an attempt executes for `program`, as far as the parent can
/// tell: the first of its candidates that is a regular file backoff may
/// execute (for an error message: the file may change before the attempt).
pub fn executable(program: &OsStr) -> Option<std::path::PathBuf> {
    candidates(program)
        .ok()?
        .into_iter()
        .map(|c| std::path::PathBuf::from(OsStr::from_bytes(c.as_bytes())))
        .find(|p| {
            p.metadata().is_ok_and(|m| m.is_file())
                && rustix::fs::access(p, rustix::fs::Access::EXEC_OK).is_ok()
        })
}

/// The paths to try for `program`, in order, as `execvp` would: the program
/// itself if it has a slash, else each directory of `PATH` (an empty one
/// being the current directory).
fn candidates(program: &OsStr) -> io::Result<Vec<CString>> {
    if program.is_empty() {
        return Err(io::ErrorKind::NotFound.into());
    }
    if program.as_bytes().contains(&b'/') {
        return Ok(vec![c_string(program)?]);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/bin:/usr/bin"));
    path.as_bytes()
        .split(|&b| b == b':')
        .map(|dir| {
            let mut full = if dir.is_empty() {
                b".".to_vec()
            } else {
                dir.to_vec()
            };
            full.push(b'/');
            full.extend_from_slice(program.as_bytes());
            c_string(OsStr::from_bytes(&full))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_with_a_slash_is_its_only_candidate() {
        let c = candidates(OsStr::new("./x")).unwrap();
        assert_eq!(c, [CString::new("./x").unwrap()]);
        assert_eq!(
            candidates(OsStr::new("")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }

    #[test]
    fn a_group_member_is_read_after_the_last_parenthesis_and_zombies_do_not_count() {
        assert_eq!(member_of("42 (sleep) S 1 40 40 0 -1", 40), Some(true));
        assert_eq!(member_of("42 (sleep) S 1 41 41 0 -1", 40), None);
        assert_eq!(member_of("42 (sleep) Z 1 40 40 0 -1", 40), Some(false));
        assert_eq!(member_of("42 (a) b (c) R 1 40 40", 40), Some(true));
        assert_eq!(member_of("42 (cut", 40), None);
        assert_eq!(member_of("", 40), None);
    }

    #[test]
    fn a_nul_byte_is_refused_not_cut() {
        let e = Exec::new(&[OsString::from("sh"), OsString::from("a\0b")], Vec::new());
        assert_eq!(e.err().unwrap().kind(), io::ErrorKind::InvalidInput);
    }
}
