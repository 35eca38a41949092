//! Unix's signals by number and name, for `crate::signal`: which end a
//! run, which are real-time, what each is called.

use libc::c_int;

/// Processes die by signals here: `sig:` rules and `--signal` take any.
pub const DEATH_BY_SIGNAL: bool = true;

/// What a signal's full name puts before its short one: `SIGTERM`.
pub const PREFIX: &str = "SIG";

/// The signal a timed-out attempt gets first by default (`--signal`).
pub const DEFAULT_TIMEOUT_SIGNAL: &str = "TERM";

/// The interrupt from the terminal (Ctrl-C).
pub const INT: c_int = libc::SIGINT;
/// The polite request to end.
pub const TERM: c_int = libc::SIGTERM;
/// A write to a pipe no one reads.
pub const PIPE: c_int = libc::SIGPIPE;

/// The signals `--signal` may name: all of them.
pub fn sendable(_: c_int) -> bool {
    true
}

/// The signals that end a run as SIGTERM does (during a delay at once,
/// during an attempt after passing them on to the command's group), apart
/// from the real-time ones: every signal whose default action ends a
/// process and that a process may catch, except those that report a fault
/// of backoff's own (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS,
/// SIGABRT), SIGXFSZ (then a write past the file size limit fails instead)
/// and SIGPIPE (ignored, so that a write to a closed pipe fails instead).
pub const TERMINATING: &[c_int] = &[
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
    libc::SIGVTALRM,
    libc::SIGPROF,
    libc::SIGXCPU,
    #[cfg(any(target_os = "linux", target_os = "android"))]
    libc::SIGPOLL,
    #[cfg(any(target_os = "linux", target_os = "android"))]
    libc::SIGPWR,
    #[cfg(any(target_os = "linux", target_os = "android"))]
    libc::SIGSTKFLT,
];

/// The real-time signals (all of them end a process by default), as the C
/// library leaves them to programs; none where there are none.
pub fn real_time() -> std::ops::RangeInclusive<c_int> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        libc::SIGRTMIN()..=libc::SIGRTMAX()
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        #[allow(clippy::reversed_empty_ranges)]
        {
            1..=0
        }
    }
}

/// The name of a signal that is not real-time, without `SIG`.
pub fn plain_name(sig: c_int) -> Option<&'static str> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    match sig {
        libc::SIGPWR => return Some("PWR"),
        libc::SIGSTKFLT => return Some("STKFLT"),
        _ => {}
    }
    signal_hook::low_level::signal_name(sig).map(|n| n.trim_start_matches("SIG"))
}

/// The highest signal number accepted on the command line.
pub fn max_signal() -> c_int {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        libc::SIGRTMAX()
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        31
    }
}
