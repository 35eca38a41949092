//! The notices of the third-party code in backoff's release binaries,
//! `dist/THIRD-PARTY-NOTICES`, made from `cargo metadata` (which crates
//! the release build links, by Cargo.lock) and the licence files those
//! crates ship. The test of generated files in docs.rs keeps it up to date.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The release builds' targets: Linux (the ARM release links the same
/// crates) and Windows.
const TARGETS: [&str; 2] = ["x86_64-unknown-linux-musl", "x86_64-pc-windows-gnu"];

const HEADER: &str = "\
Third-party notices for backoff's release binaries
==================================================

The binaries in backoff's release archives and Debian packages hold,
besides backoff's own code, the code of the Rust crates listed below
(those marked (Windows only) are in the Windows binary alone, those
marked (not on Windows) in the Linux ones alone), of the Rust standard
library (MIT OR Apache-2.0; its notices are at
https://github.com/rust-lang/rust/blob/master/COPYRIGHT), in the Linux
binaries of musl libc (MIT;
https://git.musl-libc.org/cgit/musl/tree/COPYRIGHT), and in the Windows
binary of the MinGW-w64 runtime (ZPL-2.1 and public domain;
https://github.com/mingw-w64/mingw-w64/blob/master/COPYING.MinGW-w64-runtime/COPYING.MinGW-w64-runtime.txt)
and GCC's runtime library (GPL-3.0 with the GCC Runtime Library
Exception, which asks no notice of a program it is linked into). Each
crate's licence files follow the list: a text that several crates ship
alike is given once, after the names of all of them.
";

struct Crate {
    name: String,
    version: String,
    license: String,
    dir: PathBuf,
    /// The release targets that link it.
    targets: Vec<&'static str>,
}

/// The crates a release binary is built from: backoff's normal
/// dependencies, with their own, for the release target and the default
/// features (build scripts' and tests' dependencies are left out).
fn shipped_crates(root: &Path) -> Vec<Crate> {
    let mut all: Vec<Crate> = Vec::new();
    for target in TARGETS {
        for c in crates_for(root, target) {
            match all
                .iter_mut()
                .find(|a| a.name == c.name && a.version == c.version)
            {
                Some(a) => a.targets.push(target),
                None => all.push(c),
            }
        }
    }
    all.sort_by(|a, b| (&a.name, &a.version).cmp(&(&b.name, &b.version)));
    all
}

/// The crates the release binary for `target` is built from.
fn crates_for(root: &Path, target: &'static str) -> Vec<Crate> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked"])
        .args(["--filter-platform", target])
        .current_dir(root)
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages: HashMap<&str, &Value> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p))
        .collect();
    let nodes: HashMap<&str, &Value> = meta["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["id"].as_str().unwrap(), n))
        .collect();
    let root_id = meta["resolve"]["root"].as_str().unwrap();

    let mut seen = vec![root_id];
    let mut next = vec![root_id];
    while let Some(id) = next.pop() {
        for dep in nodes[id]["deps"].as_array().unwrap() {
            let normal = dep["dep_kinds"]
                .as_array()
                .unwrap()
                .iter()
                .any(|k| k["kind"].is_null());
            let pkg = dep["pkg"].as_str().unwrap();
            if normal && !seen.contains(&pkg) {
                seen.push(pkg);
                next.push(pkg);
            }
        }
    }
    let mut crates: Vec<Crate> = seen
        .into_iter()
        .filter(|id| *id != root_id)
        .map(|id| {
            let p = packages[id];
            let manifest = Path::new(p["manifest_path"].as_str().unwrap());
            Crate {
                name: p["name"].as_str().unwrap().to_owned(),
                version: p["version"].as_str().unwrap().to_owned(),
                license: p["license"].as_str().unwrap_or("(none given)").to_owned(),
                dir: manifest.parent().unwrap().to_owned(),
                targets: vec![target],
            }
        })
        .collect();
    crates.sort_by(|a, b| (&a.name, &a.version).cmp(&(&b.name, &b.version)));
    crates
}

/// The licence files a crate ships in its top directory, by name.
fn licence_files(dir: &Path) -> Vec<(String, String)> {
    const STEMS: [&str; 6] = [
        "LICENSE",
        "LICENCE",
        "COPYING",
        "COPYRIGHT",
        "NOTICE",
        "UNLICENSE",
    ];
    let mut files: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file())
        .filter_map(|path| {
            let name = path.file_name()?.to_str()?.to_owned();
            let upper = name.to_uppercase();
            STEMS.iter().any(|s| upper.starts_with(s)).then(|| {
                let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
                (name, text)
            })
        })
        .collect();
    files.sort();
    files
}

/// The notices file: the list of crates, then each distinct licence text
/// once, headed by every crate file that holds it.
pub fn third_party_notices(root: &Path) -> Vec<u8> {
    let crates = shipped_crates(root);
    let mut out = String::from(HEADER);
    out.push_str("\nCrates\n------\n\n");
    // Texts that differ only in spacing are the same text.
    let mut texts: Vec<(String, Vec<String>, String)> = Vec::new();
    for c in &crates {
        let only = match c.targets.as_slice() {
            [t] if t.contains("windows") => " (Windows only)",
            [_] => " (not on Windows)",
            _ => "",
        };
        writeln!(out, "{} {} ({}){only}", c.name, c.version, c.license).unwrap();
        let mut files = licence_files(&c.dir);
        // A crate under Apache-2.0 alone that ships no licence file (the
        // OpenTelemetry crates) is given the licence's own text, which is
        // the same for every work under it.
        if files.is_empty() && c.license == "Apache-2.0" {
            let text = std::fs::read_to_string(root.join("LICENSE-APACHE")).unwrap();
            files.push((
                "the Apache-2.0 text (the crate ships none)".to_owned(),
                text,
            ));
        }
        assert!(!files.is_empty(), "{} ships no licence file", c.name);
        for (file, text) in files {
            let key = text.split_whitespace().collect::<Vec<_>>().join(" ");
            let holder = format!("{} {}: {file}", c.name, c.version);
            match texts.iter_mut().find(|(k, _, _)| *k == key) {
                Some((_, holders, _)) => holders.push(holder),
                None => texts.push((key, vec![holder], text)),
            }
        }
    }
    out.push_str("\nLicence texts\n-------------\n");
    for (_, holders, text) in texts {
        out.push('\n');
        out.push_str(&"=".repeat(72));
        out.push('\n');
        for holder in holders {
            out.push_str(&holder);
            out.push('\n');
        }
        out.push_str(&"=".repeat(72));
        out.push_str("\n\n");
        for line in text.trim_end().lines() {
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    out.into_bytes()
}
