//! The thin layer over the operating system, one side for each family:
//! `unix` (Linux, macOS and the BSDs) and `windows`. The rest of backoff calls
//! the functions re-exported here. Every `unsafe` block of backoff is in
//! this module, each with a `// SAFETY:` comment. Nothing here decides
//! anything.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::*;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::*;
