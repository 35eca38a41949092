//! The lines that put backoff's man pages and shell completions in place
//! after `cargo install` (the README's Install, the guide's Shell
//! completions) run as written, in a home of their own where backoff is
//! where `cargo install` puts it; then `man` finds every page, and bash
//! (with bash-completion), zsh and fish complete backoff's options. The
//! documents' other examples are run by examples.rs, which leaves these
//! blocks to this test.

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
