//! The thin layer over the operating system, one side for each family:
//! `unix` (Linux, macOS and the BSDs) and `windows`. The rest of backoff calls
//! the functions re-exported here. Every `unsafe` block of backoff is in
//! this module, each with a `// SAFETY:` comment. Nothing here decides
//! anything, and nothing here imports anything above it: the rest of
//! backoff is built on this layer, never the other way (`crate::signal`
//! names signals from `signal_names`, and `signals` reads that list here).

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::*;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::*;

/// An error's message, an OS error's without its ` (os error N)` tail.
pub fn describe(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(errno) => os_error(errno),
        None => e.to_string(),
    }
}

/// An OS error's message without its ` (os error N)` tail.
pub fn os_error(errno: i32) -> String {
    let s = std::io::Error::from_raw_os_error(errno).to_string();
    let s = match s.find(" (os error") {
        Some(i) => &s[..i],
        None => &s,
    };
    // Windows' messages are sentences, which a line of backoff's quotes
    // inside its own.
    s.trim_end_matches(['.', ' ', '\r', '\n']).to_owned()
}

/// The locks that order the processes sharing a state file (a budget, a
/// lock, a metrics file): flock(2) on Unix; on Windows `LockFileEx` on one
/// byte past every record (`sys::files`).
pub trait StateLock {
    /// Takes the exclusive lock, waiting for it.
    ///
    /// # Errors
    ///
    /// As the system's lock call.
    fn state_lock(&self) -> std::io::Result<()>;
    /// Takes a shared lock, waiting for it.
    ///
    /// # Errors
    ///
    /// As the system's lock call.
    fn state_lock_shared(&self) -> std::io::Result<()>;
    /// Takes the exclusive lock if no one holds a lock.
    ///
    /// # Errors
    ///
    /// `WouldBlock` when another holds one.
    fn try_state_lock(&self) -> Result<(), std::fs::TryLockError>;
    /// Takes a shared lock if no one holds the exclusive one.
    ///
    /// # Errors
    ///
    /// `WouldBlock` when another holds it.
    fn try_state_lock_shared(&self) -> Result<(), std::fs::TryLockError>;
    /// Lets go of the lock held.
    ///
    /// # Errors
    ///
    /// As the system's unlock call.
    fn state_unlock(&self) -> std::io::Result<()>;
}
