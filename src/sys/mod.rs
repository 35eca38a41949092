//! The thin layer over the operating system: signals, process start-up,
//! descriptors. Every `unsafe` block of backoff is in this module, each with
//! a `// SAFETY:` comment; nothing here decides policy.

pub mod signals;
pub mod spawn;

/// The effective user id of backoff.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Ends the process as `exit` says. A signal exit restores the signal's
/// default disposition and raises it; if the process survives that (the
/// signal is one whose default is to ignore or stop), it exits with
/// `128 + N`.
pub fn exit(exit: crate::exit::Exit) -> ! {
    if let crate::exit::Exit::Signal(sig) = exit {
        signals::die_by(sig);
    }
    std::process::exit(exit.shell_code())
}
