//! Files in memory that can be sealed against every change (Linux
//! memfds): a seal binds every process, root included, and every
//! descriptor, however the file is opened anew. Elsewhere there are none.

use std::fs::File;
use std::io;

/// A new, empty file in memory that can be sealed, not inherited by the
/// command (close-on-exec). Its pages are memory (shared memory, like
/// tmpfs) but not backoff's resident memory, since backoff never maps it.
///
/// # Errors
///
/// When the system refuses one, or (elsewhere than on Linux)
/// `Unsupported`.
pub fn create(name: &str) -> io::Result<File> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use rustix::fs::{MemfdFlags, memfd_create};
        let fd = memfd_create(name, MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING)?;
        Ok(File::from(fd))
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let _ = name;
        Err(io::ErrorKind::Unsupported.into())
    }
}

/// Seals a file of [`create`] for good: no process may write to it, shrink
/// it, grow it, or take the seals off.
///
/// # Errors
///
/// When the seals cannot be added, or (elsewhere than on Linux)
/// `Unsupported`.
pub fn seal(file: &File) -> io::Result<()> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use rustix::fs::{SealFlags, fcntl_add_seals};
        fcntl_add_seals(
            file,
            SealFlags::WRITE | SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL,
        )?;
        Ok(())
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let _ = file;
        Err(io::ErrorKind::Unsupported.into())
    }
}
