//! The Unix side of the layer over the operating system: signals
//! (`signals`), starting
//! the command (`process`), backoff's own children and the reaping of
//! orphans (`children`), the guard that outlives a
//! killed backoff (`guard`), descriptors (`fd`), sealed files in memory
//! (`memfd`), which machine this is (`machine`) and the
//! local time zone's offset (`localtime`).
//! Every `unsafe` block of backoff is in this module, each with a
//! `// SAFETY:` comment, and every system call that std has no word for;
//! rustix makes most of them without `unsafe`. Nothing here decides
//! anything.

pub mod children;
pub mod fd;
pub mod files;
pub mod guard;
pub mod localtime;
pub mod machine;
pub mod memfd;
pub mod process;
pub mod signal_names;
pub mod signals;

/// The largest exit code a process can end with: its parent sees only
/// the low 8 bits of what it gave `exit`.
pub const MAX_EXIT_CODE: u32 = 255;

/// The status a shell reports for a process that died by `sig`.
pub fn signal_exit_code(sig: i32) -> i32 {
    128 + sig
}

/// The time since the system started, counting the time it spent asleep
/// (suspended), which `std::time::Instant` does not count on Linux: a
/// lease on a server runs while the host sleeps. `CLOCK_BOOTTIME` on
/// Linux and Android; `CLOCK_MONOTONIC` elsewhere, which on macOS counts
/// sleep too.
pub fn since_boot() -> std::time::Duration {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let clock = libc::CLOCK_BOOTTIME;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let clock = libc::CLOCK_MONOTONIC;
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid place for the reading; the clock is one the
    // system has.
    if unsafe { libc::clock_gettime(clock, &raw mut t) } != 0 {
        return std::time::Duration::ZERO;
    }
    std::time::Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

/// The effective user id of backoff.
pub fn effective_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Ends the process by `sig`: restores the signal's default disposition
/// and raises it; if the process survives that (the signal is one whose
/// default is to ignore or stop), it exits with `128 + N`.
pub fn die_by(sig: i32) -> ! {
    signals::die_by(sig);
    std::process::exit(signal_exit_code(sig))
}
