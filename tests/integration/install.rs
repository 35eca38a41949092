//! The lines that put backoff's man pages and shell completions in place
//! after `cargo install` (the README's Install, the guide's Shell
//! completions) run as written, in a home of their own where backoff is
//! where `cargo install` puts it; then `man` finds every page, and bash
//! (with bash-completion), zsh and fish complete backoff's options. The
//! lines that install a release run as written too, from a clone's top
//! directory where `target/dist/` holds its files. The documents' other
//! examples are run by examples.rs, which leaves these blocks to this
//! test.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use backoff_cli::cli::Cli;
use backoff_cli::generate::man;
use clap::CommandFactory;

use crate::examples::markdown_blocks;
use crate::support::{PATIENCE, TempDir, bin, checked_by, output_for};

/// Whether a code block installs what `backoff --generate` prints: one of
/// its lines writes it to a file.
pub fn installs(lines: &[String]) -> bool {
    lines
        .iter()
        .any(|l| l.trim_start().starts_with("backoff --generate ") && l.contains(" > "))
}

/// The blocks that install, in the README and the documents, with where
/// each starts.
fn install_blocks() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut blocks = Vec::new();
    for file in ["README.md", "docs/guide.md"] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        for (line, lines) in markdown_blocks(&text) {
            if installs(&lines) {
                blocks.push((format!("{file}:{line}"), lines.join("\n")));
            }
        }
    }
    blocks
}

/// A home where backoff is installed as `cargo install` installs it, in
/// `~/.cargo/bin`, which is on PATH.
struct Home {
    dir: TempDir,
}

impl Home {
    fn new() -> Home {
        let dir = TempDir::new("install");
        std::fs::create_dir_all(dir.join(".cargo/bin")).unwrap();
        std::os::unix::fs::symlink(bin(), dir.join(".cargo/bin/backoff")).unwrap();
        Home { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `program` as a user of this home runs it: in the home, with
    /// nothing of the tests' environment but a PATH of the system's
    /// directories after `~/.cargo/bin`.
    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .current_dir(self.path())
            .env("HOME", self.path())
            .env(
                "PATH",
                format!(
                    "{}:/usr/local/bin:/usr/bin:/bin",
                    self.dir.join(".cargo/bin").display()
                ),
            )
            .env("TERM", "dumb")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Runs `script` with `sh -e`; its output, once it succeeded.
    fn run(&self, place: &str, script: &str) {
        let child = self.command("sh").arg("-ec").arg(script).spawn().unwrap();
        let out = output_for(child, PATIENCE);
        assert!(
            out.status.success(),
            "{place}: {script}\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn the_install_lines_put_the_man_pages_and_completions_where_they_are_found() {
    let blocks = install_blocks();
    let places: Vec<&str> = blocks.iter().map(|(p, _)| p.as_str()).collect();
    assert!(
        places.len() == 2
            && places[0].starts_with("README.md")
            && places[1].starts_with("docs/guide.md"),
        "{places:?}"
    );
    let home = Home::new();
    for (place, script) in &blocks {
        home.run(place, script);
    }

    // man finds every page, from the PATH alone.
    for name in man::page_names(&Cli::command()) {
        let Some(out) = checked_by(
            "the_install_lines_put_the_man_pages_and_completions_where_they_are_found",
            "man-db",
            home.command("man").args(["-w", &name]),
        ) else {
            break;
        };
        let found = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        assert!(
            out.status.success() && found.starts_with(home.path()),
            "man -w {name}: {out:?}"
        );
        let child = home
            .command("man")
            .arg(&name)
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "80")
            .spawn()
            .unwrap();
        let page = String::from_utf8_lossy(&output_for(child, PATIENCE).stdout).into_owned();
        assert!(page.contains("SYNOPSIS"), "man {name}: {page}");
    }

    // bash, once bash-completion is loaded, loads backoff's.
    if Path::new("/usr/share/bash-completion/bash_completion").exists() {
        // bash-completion loaded as a user's ~/.bashrc loads it; the line
        // completed is then run with `echo '>' ` put before it, so that it
        // prints what the completion made of it.
        if let Some(out) = checked_by(
            "the_install_lines_put_the_man_pages_and_completions_where_they_are_found",
            "python3",
            home.command("python3").args([
                "-c",
                crate::completions::TYPE_IN_BASH,
                ". /usr/share/bash-completion/bash_completion",
                "backoff --jit\t\x01echo '>' \n",
                "> ",
            ]),
        ) {
            assert_eq!(
                String::from_utf8_lossy(&out.stdout).trim_end(),
                "> backoff --jitter",
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    } else {
        eprintln!("skipped bash's completion: bash-completion is not installed");
    }

    // zsh, with ~/.zfunc on its fpath, as the guide says.
    let zfunc = home.dir.join(".zfunc");
    if let Some(seen) = crate::completions::zsh_in(&zfunc, home.path(), "backoff --jit") {
        assert_eq!(seen, ["--jitter"]);
    }

    // fish, from its own directory of completions.
    if let Some(out) = checked_by(
        "the_install_lines_put_the_man_pages_and_completions_where_they_are_found",
        "fish",
        home.command("fish")
            .args(["-c", "complete -C 'backoff --jit'"]),
    ) {
        let seen = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            seen.lines()
                .map(|l| l.split('\t').next().unwrap())
                .collect::<Vec<_>>(),
            ["--jitter"],
            "{out:?}"
        );
    }
}

#[test]
fn help_on_generate_names_the_places_the_install_lines_use() {
    // `backoff --help` is all a user of a bare binary has: it must send
    // the pages and the completion where the README's lines do.
    let help = Cli::command().render_long_help().to_string();
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    for place in [
        "${CARGO_HOME:-~/.cargo}/share/man/man1",
        "~/.local/share/bash-completion/completions/backoff",
    ] {
        assert!(readme.contains(place), "README lacks {place}");
        // --help wraps its lines; the place is one word of them.
        let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains(place), "--help lacks {place}");
    }
}

/// The blocks of `file` that install a release (they check its checksum,
/// or install its Debian package), joined as the text runs them: one after
/// the other, in one shell.
fn release_lines(file: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join(file)).unwrap();
    let blocks: Vec<String> = markdown_blocks(&text)
        .into_iter()
        .filter(|(_, lines)| {
            lines
                .iter()
                .any(|l| l.starts_with("sha256sum -c ") || l.starts_with("sudo apt install "))
        })
        .map(|(_, lines)| lines.join("\n"))
        .collect();
    assert!(!blocks.is_empty(), "{file}: no release lines");
    blocks.join("\n")
}

#[test]
fn the_release_install_lines_run_as_written_from_the_top_directory() {
    let version = env!("CARGO_PKG_VERSION");
    let name = format!("backoff-{version}-x86_64-unknown-linux-musl");
    let deb = format!("backoff_{version}-1_amd64.deb");
    for file in ["README.md", "docs/guide.md"] {
        let lines = release_lines(file);
        // What dist/release.sh leaves in target/dist/ (the archive holds
        // the binary under test), in a clone's top directory.
        let place = TempDir::new("release");
        let top = place.join("clone");
        let dist = top.join("target/dist");
        std::fs::create_dir_all(dist.join(&name)).unwrap();
        std::fs::copy(bin(), dist.join(&name).join("backoff")).unwrap();
        let pack = format!(
            "tar -czf {name}.tar.gz {name} && rm -r {name} && sha256sum {name}.tar.gz > {name}.tar.gz.sha256 && echo package > {deb}"
        );
        let out = Command::new("sh")
            .args(["-ec", &pack])
            .current_dir(&dist)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        // sudo, install and apt stand in: /usr/local/bin is a directory of
        // the test's, and apt says what it was given.
        let stand_ins = place.join("bin");
        let local_bin = place.join("usr/local/bin");
        std::fs::create_dir_all(&local_bin).unwrap();
        std::fs::create_dir_all(&stand_ins).unwrap();
        for (program, body) in [
            ("sudo", "exec \"$@\"".to_owned()),
            (
                "install",
                format!(
                    "[ $# = 2 ] && [ \"$2\" = /usr/local/bin/ ] && cp \"$1\" '{}'",
                    local_bin.display()
                ),
            ),
            (
                "apt",
                format!(
                    "[ \"$1\" = install ] && [ -f \"$2\" ] && realpath \"$2\" > '{}'",
                    place.join("apt").display()
                ),
            ),
        ] {
            let path = stand_ins.join(program);
            std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
        }
        let out = Command::new("sh")
            .args(["-ec", &lines])
            .current_dir(&top)
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    stand_ins.display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            )
            .output()
            .unwrap();
        assert!(out.status.success(), "{file}: {lines}\n{out:?}");
        let installed = Command::new(local_bin.join("backoff"))
            .arg("--version")
            .output()
            .unwrap();
        assert!(installed.status.success(), "{file}: {installed:?}");
        assert_eq!(
            std::fs::read_to_string(place.join("apt")).unwrap().trim(),
            dist.join(&deb)
                .canonicalize()
                .unwrap()
                .display()
                .to_string(),
            "{file}"
        );
    }
}
