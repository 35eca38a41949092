//! How backoff ends: an exit code, or death by the same signal that ended
//! the last attempt (or backoff). The one function that ends the process
//! this way is `sys::exit`.

/// How backoff ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Exit with this code.
    Code(u8),
    /// Die by this signal, so that a calling shell sees a signal death.
    Signal(i32),
}

impl Exit {
    /// An attempt succeeded.
    pub const SUCCESS: Exit = Exit::Code(0);
    /// The last attempt timed out, or the deadline passed.
    pub const TIMEOUT: Exit = Exit::Code(124);
    /// backoff itself failed: bad usage, bad value, internal error.
    pub const USAGE: Exit = Exit::Code(125);
    /// The command exists but cannot be run.
    pub const CANNOT_RUN: Exit = Exit::Code(126);
    /// The command was not found.
    pub const NOT_FOUND: Exit = Exit::Code(127);
    /// No attempt ran: the adaptive throttle skipped them all
    /// (`EX_TEMPFAIL`).
    pub const TEMPFAIL: Exit = Exit::Code(75);

    /// The code a shell would report for this exit (`128 + N` for a signal).
    pub fn shell_code(self) -> i32 {
        match self {
            Exit::Code(c) => i32::from(c),
            Exit::Signal(s) => 128 + s,
        }
    }
}
