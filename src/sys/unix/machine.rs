//! Which machine this is, for `--splay`: its id, as systemd keeps it in
//! `/etc/machine-id` (32 hex digits, set once at installation), or else
//! its host name. What the file holds is trusted only as bytes to hash:
//! at most `ID_MAX` of them are read, and anything but one line of text
//! falls back to the host name.

use std::io::Read;
use std::path::Path;

/// The most of `/etc/machine-id` read: the id is 33 bytes with its
/// newline.
const ID_MAX: u64 = 256;

/// The machine's id, or else its host name.
pub fn id() -> Vec<u8> {
    read_id(Path::new("/etc/machine-id"))
        .unwrap_or_else(|| rustix::system::uname().nodename().to_bytes().to_vec())
}

/// The one line of text at `path`, trimmed, if it is that.
fn read_id(path: &Path) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(ID_MAX + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    let id = bytes.trim_ascii();
    let fits =
        bytes.len() as u64 <= ID_MAX && !id.is_empty() && id.iter().all(u8::is_ascii_graphic);
    fits.then(|| id.to_vec())
}

/// This host's name, as uname(2) gives it (lossy UTF-8).
pub fn host_name() -> String {
    String::from_utf8_lossy(rustix::system::uname().nodename().to_bytes()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_one_line_of_text_and_anything_else_is_no_id() {
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str, bytes: &[u8]| {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            read_id(&path)
        };
        let want = b"4f1c9a0d2b7e4c6a8e5f3d2c1b0a9f8e";
        assert_eq!(
            at("ok", b"4f1c9a0d2b7e4c6a8e5f3d2c1b0a9f8e\n").as_deref(),
            Some(&want[..])
        );
        assert_eq!(at("empty", b""), None);
        assert_eq!(at("blank", b" \n"), None);
        assert_eq!(at("two", b"a\nb\n"), None);
        assert_eq!(at("binary", b"\x00\xff"), None);
        assert_eq!(at("long", &[b'a'; 4096]), None);
        assert_eq!(read_id(&dir.path().join("missing")), None);
        assert!(!super::id().is_empty());
    }
}
