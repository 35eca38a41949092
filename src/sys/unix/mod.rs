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
