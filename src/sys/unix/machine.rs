//! Which machine this is, for `--splay`: its id, as systemd keeps it in
//! `/etc/machine-id` (32 hex digits, set once at installation), and its
//! host name. What the file holds is trusted only as bytes to hash: it is
//! read only if it is a regular file (a FIFO there would hold `--splay`
//! up for good), at most `ID_MAX` bytes of it, never waiting, and anything
//! but one line of text is no id.

use std::io;
use std::path::Path;

/// Where the machine's id is.
const ID_FILE: &str = "/etc/machine-id";

/// The most of `/etc/machine-id` read: the id is 33 bytes with its
/// newline.
const ID_MAX: u64 = 256;

/// The machine's id: `None` when there is no `/etc/machine-id`.
///
/// # Errors
///
/// Why the file there cannot serve as one, in a few words.
pub fn id() -> Result<Option<Vec<u8>>, String> {
    read_id(Path::new(ID_FILE))
}

/// The one line of text at `path`, trimmed: `None` when there is no file.
fn read_id(path: &Path) -> Result<Option<Vec<u8>>, String> {
    let shown = path.display();
    match std::fs::metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(format!(
                "{shown} cannot be read ({})",
                crate::sys::describe(&e)
            ));
        }
        Ok(meta) if !meta.is_file() => {
            return Err(format!(
                "{shown} is not a regular file ({})",
                super::fd::kind_of(&meta)
            ));
        }
        Ok(_) => {}
    }
    let bytes = super::fd::read_regular(path, ID_MAX + 1)
        .map_err(|e| format!("{shown} cannot be read ({})", crate::sys::describe(&e)))?;
    let id = bytes.trim_ascii();
    let fits =
        bytes.len() as u64 <= ID_MAX && !id.is_empty() && id.iter().all(u8::is_ascii_graphic);
    if fits {
        Ok(Some(id.to_vec()))
    } else {
        Err(format!("{shown} does not hold one line of text"))
    }
}

/// This host's name, as uname(2) gives it (lossy UTF-8).
pub fn host_name() -> String {
    String::from_utf8_lossy(rustix::system::uname().nodename().to_bytes()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_one_line_of_text_in_a_regular_file_and_anything_else_is_said() {
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str, bytes: &[u8]| {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            read_id(&path)
        };
        let want = b"4f1c9a0d2b7e4c6a8e5f3d2c1b0a9f8e";
        assert_eq!(
            at("ok", b"4f1c9a0d2b7e4c6a8e5f3d2c1b0a9f8e\n"),
            Ok(Some(want.to_vec()))
        );
        for (name, bytes) in [
            ("empty", &b""[..]),
            ("blank", b" \n"),
            ("two", b"a\nb\n"),
            ("binary", b"\x00\xff"),
            ("long", &[b'a'; 4096]),
        ] {
            let e = at(name, bytes).unwrap_err();
            assert!(e.ends_with("does not hold one line of text"), "{e}");
        }
        assert_eq!(read_id(&dir.path().join("missing")), Ok(None));
        let fifo = dir.path().join("fifo");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::RUSR).unwrap();
        let e = read_id(&fifo).unwrap_err();
        assert!(e.ends_with("fifo is not a regular file (a FIFO)"), "{e}");
        let e = read_id(Path::new("/dev/zero")).unwrap_err();
        assert_eq!(e, "/dev/zero is not a regular file (a character device)");
    }
}
