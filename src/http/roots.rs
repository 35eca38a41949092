//! The certificate authorities backoff's TLS trusts (HTTPS and
//! `rediss://`), loaded once, when the first TLS connection needs them:
//! an `http://` check-in or a `redis://` store never reads them.
//!
//! `SSL_CERT_FILE` (a PEM file) and `SSL_CERT_DIR` (directories, separated
//! by ':' as `PATH` is) take the system's place, as for OpenSSL; with
//! neither set (or both empty), the system's own store is used. What the
//! variables name may be anything (a FIFO, `/dev/stdin`, `/dev/zero`, a
//! file of gigabytes): only regular files are opened, never waiting
//! (`sys::fd::read_regular`), and at most `MAX_BYTES` are read in all. A
//! variable that names something unusable is an error that says what and
//! how to fix it, and no connection trusts anything else instead: trusting
//! the system's authorities where the user named others would be more than
//! they asked.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;

/// The most read of what `SSL_CERT_FILE` and `SSL_CERT_DIR` name, in all:
/// a system's whole bundle is under 1 MiB.
pub const MAX_BYTES: u64 = 16 * 1024 * 1024;

/// The most entries of a directory looked at: a system's hashed directory
/// holds a few hundred.
pub const MAX_ENTRIES: usize = 10_000;

/// The authorities to trust, loaded on the first call.
///
/// # Errors
///
/// Why none can be trusted, in one line that says how to fix it.
pub fn system() -> Result<&'static [CertificateDer<'static>], String> {
    static ROOTS: OnceLock<Result<Vec<CertificateDer<'static>>, String>> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
            let file = var("SSL_CERT_FILE").map(PathBuf::from);
            let dirs: Vec<PathBuf> = var("SSL_CERT_DIR")
                .map(|v| std::env::split_paths(&v).collect())
                .unwrap_or_default();
            if file.is_none() && dirs.is_empty() {
                platform()
            } else {
                named(file.as_deref(), &dirs)
            }
        })
        .as_deref()
        .map_err(Clone::clone)
}

/// The platform's store (on Linux, the files OpenSSL's build looks in).
fn platform() -> Result<Vec<CertificateDer<'static>>, String> {
    let found = rustls_native_certs::load_native_certs();
    match found.errors.first() {
        Some(e) if found.certs.is_empty() => {
            Err(format!("cannot load the certificate authorities: {e}"))
        }
        _ => Ok(found.certs),
    }
}

/// The authorities in the PEM file `file` and the directories `dirs`.
fn named(file: Option<&Path>, dirs: &[PathBuf]) -> Result<Vec<CertificateDer<'static>>, String> {
    let mut left = MAX_BYTES;
    let mut certs = Vec::new();
    if let Some(path) = file {
        let pem = read(path, "SSL_CERT_FILE", &mut left)?.ok_or_else(|| {
            let why = format!("is not a regular file ({})", kind(path));
            unusable("SSL_CERT_FILE", path, &why)
        })?;
        let before = certs.len();
        certs.extend(parse(&pem));
        if certs.len() == before {
            return Err(unusable("SSL_CERT_FILE", path, "holds no PEM certificate"));
        }
    }
    for dir in dirs.iter().filter(|d| !d.as_os_str().is_empty()) {
        let before = certs.len();
        for path in entries(dir)? {
            // A link that leads nowhere (a hashed name left behind) is
            // passed over, as something that is not a regular file is.
            if !std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
                continue;
            }
            if let Some(pem) = read(&path, "SSL_CERT_DIR", &mut left)? {
                certs.extend(parse(&pem));
            }
        }
        if certs.len() == before {
            return Err(unusable("SSL_CERT_DIR", dir, "holds no PEM certificate"));
        }
    }
    certs.sort_unstable_by(|a, b| a.as_ref().cmp(b.as_ref()));
    certs.dedup();
    Ok(certs)
}

/// The regular file at `path`, which `var` names, taking its size from
/// `left`; `None` when it is something else (a FIFO, a device).
fn read(path: &Path, var: &str, left: &mut u64) -> Result<Option<Vec<u8>>, String> {
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => return Ok(None),
        Ok(_) => {}
        Err(e) => {
            let why = format!("cannot be read ({})", crate::classify::describe(&e));
            return Err(unusable(var, path, &why));
        }
    }
    // One byte more than is left tells a file too large from one that fits.
    let bytes = crate::sys::fd::read_regular(path, *left + 1).map_err(|e| {
        let why = format!("cannot be read ({})", crate::classify::describe(&e));
        unusable(var, path, &why)
    })?;
    let read = bytes.len() as u64;
    if read > *left {
        return Err(format!(
            "{var} names more than {} of certificate authorities in all ('{}' is past it): name a smaller bundle",
            crate::report::bytes(MAX_BYTES),
            path.display()
        ));
    }
    *left -= read;
    Ok(Some(bytes))
}

/// What the path that is not a regular file is, in a few words.
fn kind(path: &Path) -> &'static str {
    std::fs::metadata(path).map_or("gone", |meta| crate::sys::fd::kind_of(&meta))
}

/// The paths of the directory `dir`'s entries, at most `MAX_ENTRIES`, in
/// order.
fn entries(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let listing = std::fs::read_dir(dir).map_err(|e| {
        let why = format!(
            "cannot be read as a directory ({})",
            crate::classify::describe(&e)
        );
        unusable("SSL_CERT_DIR", dir, &why)
    })?;
    let mut paths: Vec<PathBuf> = listing
        .take(MAX_ENTRIES)
        .filter_map(|entry| Some(entry.ok()?.path()))
        .collect();
    paths.sort();
    Ok(paths)
}

/// The certificates of `pem`; what is not one is passed over.
fn parse(pem: &[u8]) -> impl Iterator<Item = CertificateDer<'static>> + '_ {
    CertificateDer::pem_slice_iter(pem).filter_map(Result::ok)
}

/// The line for `var`, which names `path`, that is unusable `why`.
fn unusable(var: &str, path: &Path, why: &str) -> String {
    let what = if var == "SSL_CERT_DIR" {
        "directories of PEM files"
    } else {
        "a PEM file"
    };
    format!(
        "{var} '{}' {why}: name {what} of certificate authorities, or unset {var} to trust the system's",
        path.display()
    )
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// A certificate, as PEM (a self-signed one made for these tests).
    const CERT: &str = "-----BEGIN CERTIFICATE-----
MIIBdzCCAR2gAwIBAgIUW0M2u5n3j9j3Y2w9Yk8r1m9bKxQwCgYIKoZIzj0EAwIw
ETEPMA0GA1UEAwwGdGVzdGNhMB4XDTI2MDEwMTAwMDAwMFoXDTM2MDEwMTAwMDAw
MFowETEPMA0GA1UEAwwGdGVzdGNhMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE
-----END CERTIFICATE-----
";

    #[test]
    fn only_regular_files_are_read_and_each_problem_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, CERT).unwrap();
        assert_eq!(named(Some(&ca), &[]).unwrap().len(), 1);

        let fifo = dir.path().join("fifo");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::RUSR).unwrap();
        for (path, says) in [
            (fifo.as_path(), "is not a regular file (a FIFO)"),
            (
                Path::new("/dev/zero"),
                "is not a regular file (a character device)",
            ),
            (
                Path::new("/nonexistent/ca.pem"),
                "cannot be read (No such file or directory)",
            ),
            (dir.path(), "is not a regular file (a directory)"),
        ] {
            let e = named(Some(path), &[]).unwrap_err();
            assert!(e.starts_with("SSL_CERT_FILE '"), "{e}");
            assert!(e.contains(says), "{e}");
            assert!(
                e.ends_with("or unset SSL_CERT_FILE to trust the system's"),
                "{e}"
            );
        }
        let text = dir.path().join("text");
        std::fs::write(&text, "not a certificate\n").unwrap();
        let e = named(Some(&text), &[]).unwrap_err();
        assert!(e.contains("holds no PEM certificate"), "{e}");
    }

    #[test]
    fn a_directory_skips_what_is_not_a_regular_file_and_the_whole_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.pem"), CERT).unwrap();
        std::os::unix::fs::symlink(dir.path().join("a.pem"), dir.path().join("abcd.0")).unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::RUSR).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("zero")).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("gone.pem"), dir.path().join("ffff.0")).unwrap();
        let dirs = [dir.path().to_owned()];
        // The link to the same file adds nothing.
        assert_eq!(named(None, &dirs).unwrap().len(), 1);

        let empty = tempfile::tempdir().unwrap();
        let e = named(None, &[empty.path().to_owned()]).unwrap_err();
        assert!(e.starts_with("SSL_CERT_DIR '"), "{e}");
        assert!(e.contains("holds no PEM certificate"), "{e}");
        let e = named(None, &[PathBuf::from("/nonexistent")]).unwrap_err();
        assert!(e.contains("cannot be read as a directory"), "{e}");

        let big = dir.path().join("big.pem");
        let file = std::fs::File::create(&big).unwrap();
        file.set_len(MAX_BYTES + 1).unwrap();
        let e = named(Some(&big), &[]).unwrap_err();
        assert!(e.contains("more than 16 MiB"), "{e}");
    }
}
