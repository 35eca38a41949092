//! Files backoff writes at exit (`--report`, `--metrics-file`), written so
//! that a reader never sees half of one.

use std::io::Write;
use std::path::Path;

/// Writes `content` to `path` atomically: into a temporary file in the same
/// directory, then renamed over `path`, so that a reader sees the old file
/// or the new one, never half of one. The file is readable by everyone
/// (a metrics collector usually runs as another user).
///
/// # Errors
///
/// When the directory cannot be written or the rename fails.
pub fn write_atomically(path: &Path, content: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".backoff-")
        .tempfile_in(dir)?;
    tmp.write_all(content)?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
