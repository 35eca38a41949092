//! Starting the command. On Linux backoff starts it the way `posix_spawn`
//! does (a `vfork`-style clone that shares backoff's memory until `execve`,
//! so no page table is copied), and in the same step sets the parent-death
//! signal that `posix_spawn` cannot set. Elsewhere the standard library
//! spawns it. Also the few descriptor operations std has no call for
//! (pipe sizes, tee, closed standard descriptors). With `signals`, this is
//! the only module of the library with `unsafe` (main.rs has its own, to
//! read `argv` in its C `main`).

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

/// A command to start, again and again: what can be prepared once (the
/// candidate paths, the arguments, backoff's environment) is kept.
pub struct Program {
    command: Vec<OsString>,
    prepared: Option<Prepared>,
}

/// How one attempt is started.
pub struct Launch<'a> {
    /// Environment changes: set a variable, or remove it with `None`. Every
    /// launch of a program must name the same variables.
    pub env: &'a [(&'a str, Option<String>)],
    /// Start it in a process group of its own.
    pub own_group: bool,
    /// Descriptors for its stdin, stdout and stderr (`None`: backoff's own).
    pub stdio: [Option<BorrowedFd<'a>>; 3],
}

/// The parts of a command that do not change between attempts.
struct Prepared {
    paths: Vec<CString>,
    /// The candidate that ran last time, tried first from then on: the
    /// PATH search is made once, as a shell remembers where it found a
    /// command (and made again if that file goes away).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    first: std::cell::Cell<usize>,
    words: Vec<CString>,
    #[cfg(target_os = "linux")]
    base_env: Environment,
}

/// backoff's environment without the variables a launch sets or removes:
/// the `NAME=value` strings, each with its NUL, one after another in one
/// buffer (made once, with two allocations instead of several per
/// variable). Elsewhere the standard library passes the environment on.
#[cfg(target_os = "linux")]
struct Environment {
    bytes: Vec<u8>,
    starts: Vec<usize>,
}

#[cfg(target_os = "linux")]
impl Environment {
    /// Pointers to the strings, for `execve`.
    fn pointers(&self) -> impl Iterator<Item = *const std::ffi::c_char> {
        self.starts
            .iter()
            .map(|&i| self.bytes[i..].as_ptr().cast::<std::ffi::c_char>())
    }
}

impl Program {
    /// A program from its command line (program first).
    pub fn new(command: Vec<OsString>) -> Program {
        Program {
            command,
            prepared: None,
        }
    }

    /// Starts the command and returns its pid.
    ///
    /// # Errors
    ///
    /// The reason it could not start: not found, not executable, an
    /// argument with a NUL byte, and the like.
    pub fn launch(&mut self, l: &Launch<'_>) -> io::Result<u32> {
        if self.prepared.is_none() {
            let program = self.command[0].as_os_str();
            self.prepared = Some(Prepared {
                paths: candidates(program)?,
                first: std::cell::Cell::new(0),
                words: self
                    .command
                    .iter()
                    .map(|w| c_string(w))
                    .collect::<io::Result<_>>()?,
                #[cfg(target_os = "linux")]
                base_env: environment(l.env),
            });
        }
        let prepared = self.prepared.as_ref().unwrap_or_else(|| unreachable!());
        imp::launch(&self.command, prepared, l)
    }
}

/// The status of the child `pid` if it has ended (reaping it), without
/// waiting.
///
/// # Errors
///
/// When `pid` is not a child of backoff's.
pub fn try_wait(pid: u32) -> io::Result<Option<ExitStatus>> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| io::ErrorKind::InvalidInput)?;
    let mut status = 0;
    loop {
        // SAFETY: waitpid writes only to `status`, a valid c_int.
        let rc = unsafe { libc::waitpid(pid, &raw mut status, libc::WNOHANG) };
        match rc {
            0 => return Ok(None),
            r if r == pid => return Ok(Some(ExitStatus::from_raw(status))),
            _ => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
}

/// Makes reads of `fd` (a pipe end backoff owns alone) return at once when
/// there is nothing to read.
///
/// # Errors
///
/// When `fcntl` fails.
pub fn set_nonblocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: fcntl on a valid descriptor, changing only its status flags.
    unsafe {
        let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Asks for a pipe of `size` bytes (Linux only). A pipe keeps its size
/// when that is refused, as it is beyond `/proc/sys/fs/pipe-max-size` or
/// the user's quota of pipe buffers.
pub fn enlarge_pipe(fd: BorrowedFd<'_>, size: usize) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let size = libc::c_int::try_from(size).unwrap_or(libc::c_int::MAX);
        // SAFETY: fcntl on a valid descriptor, changing only the capacity
        // of its pipe.
        unsafe {
            libc::fcntl(fd.as_raw_fd(), libc::F_SETPIPE_SZ, size);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (fd, size);
}

/// Duplicates up to `len` bytes from the pipe `from` into the pipe `to`
/// without consuming them or waiting, with tee(2); returns how many.
///
/// # Errors
///
/// `WouldBlock` when `from` is empty or `to` full; `BrokenPipe` when `to`
/// has no reader; `Unsupported` where tee(2) does not exist.
pub fn tee(from: BorrowedFd<'_>, to: BorrowedFd<'_>, len: usize) -> io::Result<usize> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: tee on two valid descriptors; it touches no memory of ours.
        let n = unsafe {
            libc::tee(
                from.as_raw_fd(),
                to.as_raw_fd(),
                len,
                libc::SPLICE_F_NONBLOCK,
            )
        };
        usize::try_from(n).map_err(|_| io::Error::last_os_error())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (from, to, len);
        Err(io::ErrorKind::Unsupported.into())
    }
}

/// How many bytes the pipe `fd` holds (0 when that cannot be told).
pub fn pipe_bytes(fd: BorrowedFd<'_>) -> usize {
    use std::os::fd::AsRawFd;
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD on a valid descriptor writes one c_int, `n`.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::FIONREAD, &raw mut n) };
    if r < 0 {
        0
    } else {
        usize::try_from(n).unwrap_or(0)
    }
}

/// backoff's environment without the variables `changes` name. Entries
/// are read as `std::env::vars_os` reads them: the name ends at the first
/// `=` after its first byte, and an entry with no such `=` is left out.
#[cfg(target_os = "linux")]
fn environment(changes: &[(&str, Option<String>)]) -> Environment {
    unsafe extern "C" {
        // `mut`: setenv and the like replace it (backoff never calls them).
        static mut environ: *const *const std::ffi::c_char;
    }
    let mut kept: Vec<&[u8]> = Vec::new();
    // SAFETY: `environ` is the process's environment, a null-terminated
    // array of NUL-terminated strings. Nothing changes it while it is
    // read: nothing in backoff sets, removes or clears a variable (the
    // calls that do are `unsafe` and appear nowhere in it), and readers
    // elsewhere do not change it.
    let mut entry = unsafe { environ };
    while !entry.is_null() {
        // SAFETY: see above; `entry` points into the array before its null.
        let s = unsafe { *entry };
        if s.is_null() {
            break;
        }
        // SAFETY: a NUL-terminated string of the environment.
        let kv = unsafe { std::ffi::CStr::from_ptr(s) }.to_bytes_with_nul();
        let named = kv
            .iter()
            .skip(1)
            .position(|&b| b == b'=')
            .map(|i| &kv[..=i]);
        if let Some(name) = named
            && !changes.iter().any(|(c, _)| c.as_bytes() == name)
        {
            kept.push(kv);
        }
        // SAFETY: the array goes on at least to its null entry.
        entry = unsafe { entry.add(1) };
    }
    let mut env = Environment {
        bytes: Vec::with_capacity(kept.iter().map(|kv| kv.len()).sum()),
        starts: Vec::with_capacity(kept.len()),
    };
    for kv in kept {
        env.starts.push(env.bytes.len());
        env.bytes.extend_from_slice(kv);
    }
    env
}

/// `changes` that set a variable, as `NAME=value` strings.
fn settings(changes: &[(&str, Option<String>)]) -> Vec<CString> {
    changes
        .iter()
        .filter_map(|(k, v)| {
            v.as_ref()
                .and_then(|v| CString::new(format!("{k}={v}")).ok())
        })
        .collect()
}

fn c_string(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "an argument contains a NUL byte",
        )
    })
}

/// The paths to try for `program`, in order, as `execvp` would: the program
/// itself if it has a slash, else each directory of `PATH`.
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

#[cfg(target_os = "linux")]
mod imp {
    use super::{Launch, Prepared, settings};
    use std::ffi::{CString, OsString, c_char, c_int, c_void};
    use std::io;
    use std::os::fd::AsRawFd;
    use std::ptr;

    /// Signals whose disposition the child must not inherit: backoff's
    /// handlers (they live in memory the child shares until it executes the
    /// command) and SIGPIPE, which the Rust runtime ignores.
    const RESET: [c_int; 8] = [
        libc::SIGINT,
        libc::SIGTERM,
        libc::SIGHUP,
        libc::SIGQUIT,
        libc::SIGTSTP,
        libc::SIGCONT,
        libc::SIGCHLD,
        libc::SIGPIPE,
    ];

    /// The child's stack, in the parent's frame as musl's `posix_spawn`
    /// has it: the parent is suspended until the child executes the command
    /// or exits. The child makes a few system calls and needs well under a
    /// page; this is more than musl gives a child that does more.
    const STACK: usize = 8 * 1024;

    /// Which of `RESET` to reset: signals inherited as ignored stay
    /// ignored, except SIGPIPE, which the runtime ignores, not the caller.
    /// (backoff's own handlers replaced any other ignored signal.) The
    /// signal watch recorded which those are, so no system call is made.
    fn resets() -> [bool; RESET.len()] {
        RESET.map(|s| s == libc::SIGPIPE || !crate::sys::signals::left_ignored(s))
    }

    /// Everything the child needs, prepared by the parent: the child may not
    /// allocate.
    struct Plan<'a> {
        paths: &'a [CString],
        /// The candidate to try first.
        first: usize,
        /// The candidate the child tried last: after a successful start, the
        /// one that runs.
        tried: usize,
        argv: Vec<*const c_char>,
        envp: Vec<*const c_char>,
        own_group: bool,
        stdio: [c_int; 3],
        parent: libc::pid_t,
        reset: [bool; RESET.len()],
        /// Set by the child when it cannot execute the command.
        error: c_int,
    }

    pub fn launch(_: &[OsString], p: &Prepared, l: &Launch<'_>) -> io::Result<u32> {
        let set = settings(l.env);
        let argv = p
            .words
            .iter()
            .map(|a| a.as_ptr())
            .chain([ptr::null()])
            .collect();
        let envp = p
            .base_env
            .pointers()
            .chain(set.iter().map(|e| e.as_ptr()))
            .chain([ptr::null()])
            .collect();
        let mut plan = Plan {
            paths: &p.paths,
            first: p.first.get(),
            tried: 0,
            argv,
            envp,
            own_group: l.own_group,
            stdio: [0, 1, 2]
                .map(|n| l.stdio[usize::try_from(n).unwrap_or(0)].map_or(-1, |fd| fd.as_raw_fd())),
            parent: std::process::id().cast_signed(),
            reset: resets(),
            error: 0,
        };
        // The child's stack: no allocation, no mapping, and its pages are
        // most likely touched already.
        let mut stack = std::mem::MaybeUninit::<[u8; STACK]>::uninit();
        // SAFETY: one past the end of the array, rounded down to 16 bytes as
        // the ABI wants; the stack grows down from there, and its contents
        // need no initialisation.
        let top = unsafe { stack.as_mut_ptr().cast::<u8>().add(STACK) };
        let top = (top as usize & !15) as *mut c_void;

        // Block every signal so that no handler of backoff's runs in the
        // child while it shares backoff's memory; the child unblocks them
        // after resetting the dispositions.
        // SAFETY: plain signal-mask calls on initialised sets.
        let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
        let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
        unsafe {
            libc::sigfillset(&raw mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &raw const all, &raw mut old);
        }
        // SAFETY: CLONE_VM | CLONE_VFORK suspends this thread until the child
        // executes the command or exits, so `plan` and `stack` outlive every
        // use the child makes of them; the child only makes system calls.
        let pid = unsafe {
            libc::clone(
                child,
                top,
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                (&raw mut plan).cast::<c_void>(),
            )
        };
        let spawn_error = io::Error::last_os_error();
        // SAFETY: restores the mask saved above.
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &raw const old, ptr::null_mut());
        }
        if pid < 0 {
            return Err(spawn_error);
        }
        if plan.error == 0 {
            p.first.set(plan.tried);
        } else {
            // The child exited without executing anything: reap it.
            let mut status = 0;
            // SAFETY: waits for our own child, writing only `status`.
            unsafe { libc::waitpid(pid, &raw mut status, 0) };
            return Err(io::Error::from_raw_os_error(plan.error));
        }
        u32::try_from(pid).map_err(|_| io::ErrorKind::InvalidData.into())
    }

    /// The child's side: set up, then execute the first candidate that
    /// works. Runs in backoff's memory with every signal blocked; only
    /// async-signal-safe system calls, no allocation, no panic.
    extern "C" fn child(arg: *mut c_void) -> c_int {
        // SAFETY: `arg` is the parent's `Plan`, alive until this child
        // executes or exits (CLONE_VFORK).
        let plan = unsafe { &mut *arg.cast::<Plan<'_>>() };
        // SAFETY: every call below is a system call on values prepared by
        // the parent; failures are reported through `plan.error`.
        unsafe {
            let mut dfl: libc::sigaction = std::mem::zeroed();
            dfl.sa_sigaction = libc::SIG_DFL;
            for (sig, reset) in RESET.iter().zip(plan.reset) {
                if reset {
                    libc::sigaction(*sig, &raw const dfl, ptr::null_mut());
                }
            }
            if plan.own_group && libc::setpgid(0, 0) != 0 {
                return fail(plan);
            }
            // Die with backoff, even if backoff is killed with SIGKILL; if
            // it died already, nothing would send the signal.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return fail(plan);
            }
            if libc::getppid() != plan.parent {
                libc::_exit(128 + libc::SIGKILL);
            }
            for (target, &fd) in (0..).zip(&plan.stdio) {
                if fd < 0 {
                    continue;
                }
                let ok = if fd == target {
                    libc::fcntl(fd, libc::F_SETFD, 0) == 0
                } else {
                    libc::dup2(fd, target) == target
                };
                if !ok {
                    return fail(plan);
                }
            }
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&raw mut none);
            libc::pthread_sigmask(libc::SIG_SETMASK, &raw const none, ptr::null_mut());
            // As execvp: a missing candidate lets the next one try; a
            // candidate found but not executable is remembered.
            let mut denied = false;
            let mut last = libc::ENOENT;
            // `first`, then the others in PATH order.
            let first = plan.first;
            for k in 0..plan.paths.len() {
                let i = match k {
                    0 => first,
                    k if k <= first => k - 1,
                    k => k,
                };
                let Some(path) = plan.paths.get(i) else {
                    continue;
                };
                plan.tried = i;
                libc::execve(path.as_ptr(), plan.argv.as_ptr(), plan.envp.as_ptr());
                last = *libc::__errno_location();
                match last {
                    libc::EACCES => denied = true,
                    libc::ENOENT | libc::ENOTDIR | libc::ENAMETOOLONG | libc::ELOOP => {}
                    _ => break,
                }
            }
            plan.error = if denied && matches!(last, libc::ENOENT | libc::ENOTDIR) {
                libc::EACCES
            } else {
                last
            };
            libc::_exit(127)
        }
    }

    /// Reports the current error to the parent and exits.
    fn fail(plan: &mut Plan<'_>) -> c_int {
        // SAFETY: reads errno and exits, both async-signal-safe.
        unsafe {
            plan.error = *libc::__errno_location();
            if plan.error == 0 {
                plan.error = libc::EINVAL;
            }
            libc::_exit(127)
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::{Launch, Prepared};
    use std::ffi::OsString;
    use std::io;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    /// Where Linux's clone is not available: the standard library spawns,
    /// without a parent-death signal.
    pub fn launch(command: &[OsString], _: &Prepared, l: &Launch<'_>) -> io::Result<u32> {
        let mut cmd = Command::new(&command[0]);
        cmd.args(&command[1..]);
        for (k, v) in l.env {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        if l.own_group {
            cmd.process_group(0);
        }
        let stdio = |fd: Option<std::os::fd::BorrowedFd<'_>>| -> io::Result<Stdio> {
            Ok(match fd {
                Some(fd) => Stdio::from(fd.try_clone_to_owned()?),
                None => Stdio::inherit(),
            })
        };
        cmd.stdin(stdio(l.stdio[0])?)
            .stdout(stdio(l.stdio[1])?)
            .stderr(stdio(l.stdio[2])?);
        // The pid is all backoff keeps: it waits with waitpid itself.
        cmd.spawn().map(|c| c.id())
    }
}
