//! Common mistakes get a hint that, followed as written, works: backoff's
//! own options after the command, a command given as one quoted word, a
//! script without a `#!` line, `help` as a command, a duration of two
//! words unquoted; an empty command is refused.

use std::os::unix::fs::PermissionsExt;
use std::process::Output;

use crate::support::{PATIENCE, TempDir, backoff, events};

/// backoff's output for `args`, bounded by PATIENCE.
fn run<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    backoff(args).timeout(PATIENCE).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs the command line that `advice` ends with (after `marker`), as a
/// person would paste it into a shell: `sh -c`, with `backoff` on PATH.
fn follow(advice: &str, marker: &str) -> Output {
    let (_, line) = advice
        .split_once(marker)
        .unwrap_or_else(|| panic!("{advice:?} lacks {marker:?}"));
    shell(line.lines().next().unwrap())
}

/// Runs the command line `line` as a person would paste it into a shell:
/// `sh -c`, with `backoff` on PATH.
fn shell(line: &str) -> Output {
    assert!(line.starts_with("backoff "), "{line}");
    let dir = TempDir::new("follow");
    let path = crate::support::path_with_backoff(&dir);
    let mut sh = std::process::Command::new("sh");
    crate::support::plain(&mut sh)
        .args(["-c", line])
        .env("PATH", path);
    assert_cmd::Command::from_std(sh)
        .timeout(PATIENCE)
        .output()
        .unwrap()
}

/// Makes the file at `path`, holding `text`, executable.
fn executable(path: &std::path::Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// backoff's arguments that retry `sh` `retries` times, which exits at once
/// with `status` and is given `args` (`$1`...).
fn sh_exiting(retries: &str, status: &str, args: &[&str]) -> Vec<String> {
    let head = ["--base", "1ms", "--max-retries", retries, "--", "sh", "-c"];
    let script = format!("exit {status}");
    let words = head.iter().copied().chain([script.as_str(), "sh"]);
    words
        .chain(args.iter().copied())
        .map(str::to_owned)
        .collect()
}

#[test]
fn backoffs_own_option_after_the_command_is_noted_when_the_command_fails_as_on_bad_usage() {
    let note = "backoff: note: '--max-retries' after the command is passed to sh, not to backoff; put backoff's options before the command\n";
    // sh exits 2, as a program does that refuses an option it does not know.
    let args = sh_exiting("1", "2", &["--max-retries", "3"]);
    let with = |before: &[&str]| {
        let all: Vec<&str> = before
            .iter()
            .copied()
            .chain(args.iter().map(String::as_str))
            .collect();
        run(&all)
    };
    let out = with(&[]);
    let text = stderr(&out);
    assert_eq!(text.matches(note).count(), 1, "{text}");
    assert!(text.starts_with(note), "before the attempt's line: {text}");
    // The rules still decide: the attempt is retried as any exit 2 is.
    assert_eq!(out.status.code(), Some(2));
    assert!(text.contains("attempt 2/2 failed (exit 2)"), "{text}");
    // In JSON, a note event; with -q, nothing.
    let json = with(&["--log-format", "json"]);
    let notes: Vec<_> = events(&json.stderr)
        .into_iter()
        .filter(|e| e["event"] == "note")
        .collect();
    assert_eq!(notes.len(), 1, "{}", stderr(&json));
    assert_eq!(notes[0]["note"], "misplaced_option");
    assert_eq!(notes[0]["option"], "--max-retries");
    assert_eq!(notes[0]["program"], "sh");
    let message = note.trim_end().trim_start_matches("backoff: ");
    assert_eq!(notes[0]["message"], message);
    let quiet = with(&["-q"]);
    assert!(stderr(&quiet).is_empty(), "{}", stderr(&quiet));
    // Another status, or an option that is not backoff's: no note.
    for args in [
        sh_exiting("0", "1", &["--max-retries", "3"]),
        sh_exiting("0", "2", &["--max-retry", "3"]),
        sh_exiting("0", "64", &["-v"]),
    ] {
        let out = run(&args);
        assert!(
            !stderr(&out).contains("note:"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    // Followed, the note's advice gives the option to backoff.
    let out = run(&sh_exiting("3", "2", &[]));
    let text = stderr(&out);
    assert!(
        !text.contains("note:") && text.contains("attempt 4/4"),
        "{text}"
    );
}

#[test]
fn a_command_given_as_one_word_is_told_how_to_split_it() {
    let out = run(&["--max-retries", "0", "sh -c true"]);
    assert_eq!(out.status.code(), Some(127));
    assert_eq!(
        stderr(&out),
        "backoff: cannot run 'sh -c true': No such file or directory; did you mean to split it? backoff --max-retries 0 -- sh -c true\n"
    );
    let followed = follow(&stderr(&out), "did you mean to split it? ");
    assert_eq!(followed.status.code(), Some(0), "{}", stderr(&followed));
    assert!(followed.stderr.is_empty(), "{}", stderr(&followed));

    // What only a shell understands is run by one.
    let out = run(&["--max-retries", "0", "--", "test -d / && exit 3"]);
    assert_eq!(out.status.code(), Some(127));
    let text = stderr(&out);
    assert!(
        text.ends_with(
            "did you mean to run it with a shell? backoff --max-retries 0 -- sh -c 'test -d / && exit 3'\n"
        ),
        "{text}"
    );
    let followed = follow(&text, "with a shell? ");
    assert_eq!(followed.status.code(), Some(3), "{}", stderr(&followed));
    assert!(
        stderr(&followed).contains("attempt 1/1 failed (exit 3)"),
        "{}",
        stderr(&followed)
    );

    // The advice goes with the error in JSON too; a program of one word
    // is not advised.
    let json = run(&["--log-format", "json", "sh -c true"]);
    let end = events(&json.stderr)
        .into_iter()
        .find(|e| e["event"] == "attempt_end")
        .unwrap();
    assert_eq!(
        end["error"],
        "No such file or directory; did you mean to split it? backoff --log-format json -- sh -c true"
    );
    let out = run(&["--", "no-such-program-of-backoffs"]);
    assert_eq!(
        stderr(&out),
        "backoff: cannot run 'no-such-program-of-backoffs': No such file or directory\n"
    );
}

#[test]
fn help_as_a_command_is_told_backoffs_own_help() {
    let out = run(&["help"]);
    assert_eq!(out.status.code(), Some(127));
    let text = stderr(&out);
    assert_eq!(
        text,
        "backoff: cannot run 'help': No such file or directory; for backoff's own help, run backoff --help\n"
    );
    let followed = follow(&text, "own help, run ");
    assert_eq!(followed.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&followed.stdout).contains("Usage: backoff"));
    let text = stderr(&run(&["help", "schedule"]));
    assert!(text.ends_with("run backoff schedule --help\n"), "{text}");
}

#[test]
fn a_script_without_an_interpreter_line_is_told_to_add_one() {
    let dir = TempDir::new("no-shebang");
    let script = dir.join("script.sh");
    executable(&script, "echo ran\n");
    let path = script.to_str().unwrap();
    let out = run(&["--", path]);
    assert_eq!(out.status.code(), Some(126));
    assert_eq!(
        stderr(&out),
        format!(
            "backoff: cannot run '{path}': Exec format error; it has no '#!' line: make '#!/bin/sh' its first line\n"
        )
    );
    // Followed, the advice works.
    std::fs::write(&script, "#!/bin/sh\necho ran\n").unwrap();
    let out = run(&["--", path]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, b"ran\n");

    // The header of an ELF program for a machine that does not exist: no
    // script, the plain error.
    let foreign = dir.join("foreign");
    let mut elf = vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 0];
    elf.resize(16, 0);
    elf.extend_from_slice(&[2, 0, 0x34, 0x12]);
    elf.resize(64, 0);
    std::fs::write(&foreign, elf).unwrap();
    std::fs::set_permissions(&foreign, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = foreign.to_str().unwrap();
    let out = run(&["--", path]);
    assert_eq!(out.status.code(), Some(126));
    assert_eq!(
        stderr(&out),
        format!("backoff: cannot run '{path}': Exec format error\n")
    );
}

#[test]
fn a_duration_of_two_words_unquoted_is_refused_before_anything_runs_and_told_to_quote_it() {
    for (line, mistake, advice) in [
        (
            "backoff --max-time 1h 30m -- sh -c 'echo ran'",
            "--max-time 1h 30m",
            "'30m' is the rest of --max-time's duration, not a command; quote it: --max-time '1h 30m'",
        ),
        (
            "backoff --jitter none --base=1s 500ms 2ms sh -c 'echo ran'",
            "--base=1s 500ms 2ms",
            "'500ms 2ms' is the rest of --base's duration, not a command; quote it: --base='1s 500ms 2ms'",
        ),
    ] {
        let out = shell(line);
        assert_eq!(out.status.code(), Some(125), "{line}: {}", stderr(&out));
        assert_eq!(stderr(&out), format!("backoff: {advice}\n"), "{line}");
        assert!(out.stdout.is_empty(), "nothing ran: {line}");
        // Followed: the words of the duration quoted as one.
        let (_, quoted) = advice.split_once("quote it: ").unwrap();
        let followed = shell(&line.replace(mistake, quoted));
        assert_eq!(followed.status.code(), Some(0), "{}", stderr(&followed));
        assert_eq!(followed.stdout, b"ran\n");
    }
}

#[test]
fn a_program_named_like_a_duration_runs_after_double_dash_or_another_option() {
    let dir = TempDir::new("named-30m");
    executable(&dir.join("30m"), "#!/bin/sh\necho ran\n");
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for args in [
        &["--max-time", "1h", "--", "30m"][..],
        &["--attempts", "1", "30m"],
        &["--max-time", "1h", "-v", "30m"],
    ] {
        let out = backoff(args)
            .env("PATH", &path)
            .timeout(PATIENCE)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert_eq!(out.stdout, b"ran\n", "{args:?}");
    }
}

#[test]
fn an_empty_command_is_refused_before_anything_runs() {
    let dir = TempDir::new("empty-command");
    let hook = format!("touch '{}'", dir.join("hook").display());
    for (args, said) in [
        (&[""][..], "the command is empty"),
        (&["--", ""], "the command is empty"),
        (&["--", "", ""], "the command is empty"),
        (&["", "x"], "the command's program is an empty word"),
    ] {
        let out = run(&[&["--attempts", "2", "--on-give-up", &hook][..], args].concat());
        assert_eq!(out.status.code(), Some(125), "{args:?}");
        assert_eq!(stderr(&out), format!("backoff: {said}\n"), "{args:?}");
    }
    assert!(!dir.join("hook").exists(), "nothing ran");
}
