//! The shell completions that `backoff --generate complete-SHELL` prints
//! (src/generate/complete.rs), run in the real shells: backoff's options
//! and their values, and the wrapped command, completed as its own
//! completion would.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::{PATIENCE, TempDir, backoff};

/// A directory holding the scripts backoff prints, under the names they
/// are installed as: `backoff.bash`, `_backoff` (zsh), `backoff.fish`.
fn scripts() -> TempDir {
    let dir = TempDir::new("completions");
    for (kind, file) in [
        ("complete-bash", "backoff.bash"),
        ("complete-zsh", "_backoff"),
        ("complete-fish", "backoff.fish"),
    ] {
        let out = backoff(["--generate", kind])
            .timeout(PATIENCE)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        std::fs::write(dir.join(file), out).unwrap();
    }
    dir
}

/// Runs `shell` with `args` in `dir`, at most three times `PATIENCE` (a
/// zsh driver waits up to `PATIENCE` for the prompt, then as long for the
/// completion, and says which it gave up on: the bound here must leave it
/// the time to say so); `None` when the shell is not installed.
fn run_in(dir: &Path, shell: &str, args: &[&str]) -> Option<Output> {
    let mut child = match Command::new(shell)
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            println!("{shell} is not installed: its completion is not tested");
            return None;
        }
        Err(e) => panic!("{shell}: {e}"),
    };
    let deadline = Instant::now() + 3 * PATIENCE;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{shell} {args:?} did not end within {:?}", 3 * PATIENCE);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Some(child.wait_with_output().unwrap())
}

/// What bash's completion offers for `line` (its last word is completed;
/// a line that ends with a space completes an empty word).
fn bash(scripts: &Path, line: &str) -> Vec<String> {
    bash_in(scripts, scripts, line).0
}

/// What bash's completion in `scripts` offers for `line` in `dir`, and the options it
/// asked `compopt` for (`-o filenames`: the words are file names, which
/// bash quotes as it inserts them).
fn bash_in(scripts: &Path, dir: &Path, line: &str) -> (Vec<String>, Vec<String>) {
    let words: Vec<String> = line.split(' ').map(|w| format!("'{w}'")).collect();
    let script = format!(
        "source '{}/backoff.bash'; compopt() {{ printf '<compopt> %s\\n' \"$*\"; }}; \
         COMP_WORDS=({}); COMP_CWORD={}; _backoff; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        scripts.display(),
        words.join(" "),
        words.len() - 1
    );
    let out = run_in(dir, "bash", &["--norc", "--noprofile", "-c", &script]).expect("bash");
    let (compopt, words): (Vec<String>, Vec<String>) = matches(line, &out)
        .into_iter()
        .partition(|w| w.starts_with("<compopt> "));
    let compopt = compopt
        .iter()
        .map(|w| w["<compopt> ".len()..].to_owned())
        .collect();
    (words, compopt)
}

/// The matches a shell printed for `line`, one a line (fish adds a tab and
/// a description), once it ended well and said nothing on stderr.
fn matches(line: &str, out: &Output) -> Vec<String> {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && err.is_empty(), "{line:?}: {err}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split('\t').next().unwrap_or_default().to_owned())
        .collect()
}

fn offers(seen: &[String], word: &str) -> bool {
    seen.iter().any(|s| s == word)
}

/// Checks what every shell's completion offers, through `complete`, which
/// returns `None` when the shell is not installed; it runs in the scripts'
/// directory.
fn completes_the_command(complete: &dyn Fn(&str) -> Option<Vec<String>>) {
    // `sh` is a command wherever the tests run; a file of the scripts'
    // directory stands for the arguments of `cat`, whose own completion
    // offers files.
    for line in [
        "backoff -- s",
        "backoff s",
        "backoff -q --base 1s s",
        "backoff --base=1s --until-failure 3 s",
        "backoff --until-failure s",
    ] {
        let Some(seen) = complete(line) else { return };
        assert!(offers(&seen, "sh"), "{line:?}: {seen:?}");
        assert!(!offers(&seen, "--base"), "{line:?}: {seen:?}");
    }
    for line in ["backoff -- cat backoff.b", "backoff -v cat -n backoff.b"] {
        let seen = complete(line).unwrap();
        assert!(offers(&seen, "backoff.bash"), "{line:?}: {seen:?}");
    }
    // backoff's own options and their values, as before.
    assert!(offers(&complete("backoff --ti").unwrap(), "--timestamps"));
    assert!(!offers(&complete("backoff --jitter ").unwrap(), "sh"));
}

/// Checks that `complete` completes the subcommands' own options and
/// their values (`--plot` is simulate's alone, `--format`'s values are
/// budget show's).
fn completes_the_subcommands(complete: &dyn Fn(&str) -> Option<Vec<String>>) {
    let Some(seen) = complete("backoff simulate --pl") else {
        return;
    };
    assert_eq!(seen, ["--plot"]);
    let seen = complete("backoff budget show --format ").unwrap();
    assert!(offers(&seen, "json") && offers(&seen, "text"), "{seen:?}");
    assert!(offers(&complete("backoff budget s").unwrap(), "show"));
    let seen = complete("backoff throttle reset api --budget-d").unwrap();
    assert_eq!(seen, ["--budget-dir"]);
    // A subcommand's own words after a space, not backoff's again.
    let seen = complete("backoff budget ").unwrap();
    assert!(offers(&seen, "show") && offers(&seen, "reset"), "{seen:?}");
    assert!(!offers(&seen, "simulate"), "{seen:?}");
    assert!(offers(
        &complete("backoff simulate --cli").unwrap(),
        "--clients"
    ));
    let seen = complete("backoff budget show --").unwrap();
    assert!(
        offers(&seen, "--format") && offers(&seen, "--budget-dir"),
        "{seen:?}"
    );
}

#[test]
fn every_shell_completes_the_subcommands_options() {
    let scripts = scripts();
    let s = scripts.path();
    completes_the_subcommands(&|line| Some(bash(s, line)));
    completes_the_subcommands(&|line| zsh_in(s, s, line));
    completes_the_subcommands(&|line| fish_in(s, s, line));
}

#[test]
fn bash_completes_the_command_and_its_arguments() {
    let scripts = scripts();
    let bash = |line: &str| bash(scripts.path(), line);
    completes_the_command(&|line| Some(bash(line)));
    // At the first word, a subcommand or a command; after --, a command.
    assert!(offers(&bash("backoff s"), "schedule"));
    assert!(!offers(&bash("backoff -- s"), "schedule"));
    // Without bash-completion, the command's arguments are file names.
    assert_eq!(bash("backoff -- schedule backoff.b"), ["backoff.bash"]);
    assert!(offers(&bash("backoff --jitter "), "full"));
    assert!(offers(&bash("backoff schedule --ji"), "--jitter"));
    assert!(!offers(&bash("backoff schedule s"), "sh"));
}

/// Drives an interactive zsh in a pseudo-terminal: `$1` is the line, `$2`
/// the directory of `_backoff`, `$3` `list` (the matches the completion
/// offers, one a line) or `type` (Tab, then Enter, with a `backoff`
/// function that prints each of its arguments in `<>`: what the completion
/// put on the line, word by word, as zsh parsed it).
const ZSH_DRIVER: &str = r#"
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "PS1='%% '; fpath=(${(q)2} \$fpath); autoload -U compinit; compinit -u -D"
if [[ $3 == list ]]; then
  zpty -w z 'compadd () { if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return $?; fi; local -a hits; builtin compadd -A hits "$@"; local h; for h in $hits; do print -r -- "<M>$h"; done; builtin compadd "$@"; }'
  zpty -w z "bindkey '^I' list-choices"
else
  zpty -w z 'backoff () { print -r -- "<T>${(j:><:)@}>" }'
fi
zpty -w z "print -r -- '<READY>'"
local got
typeset -F SECONDS
float until=$(( SECONDS + 20 ))
while (( SECONDS < until )); do
  if zpty -rt z got; then [[ $got == *'<READY>'* && $got != *print* ]] && break; else sleep 0.01; fi
done
if [[ $3 == list ]]; then
  zpty -n -w z "$1"$'\t'
  zpty -w z $'\C-u'"print -r -- '<END>'"
else
  zpty -n -w z "$1"$'\t\n'
  zpty -w z "print -r -- '<END>'"
fi
until=$(( SECONDS + 20 ))
local ended=
while (( SECONDS < until )); do
  if zpty -rt z got; then
    [[ $got == *'<END>'* && $got != *print* ]] && { ended=1; break }
    [[ $got == *'<M>'* ]] && print -r -- "${${got##*<M>}%%$'\r'*}"
    [[ $got == *'<T>'* && $got != *print* ]] && print -r -- "<${${got##*<T>}%%$'\r'*}"
  else sleep 0.01; fi
done
[[ -n $ended ]] || print -u2 "no end of the completion within 20s"
zpty -d z
"#;

/// What zsh's completion in `scripts` offers for `line` in `dir`, or
/// `None` without zsh.
pub fn zsh_in(scripts: &Path, dir: &Path, line: &str) -> Option<Vec<String>> {
    zsh_driven(scripts, dir, line, "list")
}

/// The words zsh runs after `line`, a Tab and Enter in `dir`, or `None`
/// without zsh.
fn zsh_typed(scripts: &Path, dir: &Path, line: &str) -> Option<Vec<String>> {
    zsh_driven(scripts, dir, line, "type")
}

/// What [`ZSH_DRIVER`] prints in `mode` for `line` in `dir`, with the
/// completion of `scripts`.
fn zsh_driven(scripts: &Path, dir: &Path, line: &str, mode: &str) -> Option<Vec<String>> {
    let scripts = scripts.display().to_string();
    let args = ["-f", "-c", ZSH_DRIVER, "zsh", line, &scripts, mode];
    let out = run_in(dir, "zsh", &args)?;
    Some(matches(line, &out))
}

#[test]
fn zsh_completes_the_command_and_its_arguments() {
    let scripts = scripts();
    completes_the_command(&|line| zsh_in(scripts.path(), scripts.path(), line));
}

/// What fish's completion in `scripts` offers for `line` in `dir`, or
/// `None` without fish.
fn fish_in(scripts: &Path, dir: &Path, line: &str) -> Option<Vec<String>> {
    let script = format!(
        "source '{}/backoff.fish'; complete -C '{line}'",
        scripts.display()
    );
    let out = run_in(dir, "fish", &["--no-config", "-c", &script])?;
    Some(matches(line, &out))
}

#[test]
fn fish_completes_the_command_and_its_arguments() {
    let scripts = scripts();
    completes_the_command(&|line| fish_in(scripts.path(), scripts.path(), line));
}

/// A directory holding one file whose name has a space, `my report.json`.
fn a_file_with_a_space() -> TempDir {
    let dir = TempDir::new("completion");
    std::fs::write(dir.path().join("my report.json"), "").unwrap();
    dir
}

#[test]
fn bash_completes_a_file_name_with_spaces_as_one_word() {
    let scripts = scripts();
    let dir = a_file_with_a_space();
    for line in [
        "backoff --report my",
        "backoff --metrics-file my",
        "backoff simulate --plot my",
        "backoff -- cat my",
    ] {
        let (words, compopt) = bash_in(scripts.path(), dir.path(), line);
        assert_eq!(words, ["my report.json"], "{line:?}");
        assert!(
            compopt.iter().any(|o| o == "-o filenames"),
            "{line:?}: {compopt:?}"
        );
    }
    // Values are words, not file names.
    let (words, compopt) = bash_in(scripts.path(), dir.path(), "backoff --jitter ");
    assert!(offers(&words, "full") && !offers(&words, "my report.json"));
    assert!(!compopt.iter().any(|o| o == "-o filenames"), "{compopt:?}");
}

/// Runs an interactive bash in a pseudo-terminal that python3's pty module
/// opens: runs `$1` (a setup), types `$2` (keys: a line and a Tab, then
/// Enter), and prints what bash then printed on the lines that start with
/// `$3`.
pub const TYPE_IN_BASH: &str = r#"
import os, pty, select, sys, time

setup, keys, prefix = sys.argv[1], sys.argv[2], sys.argv[3]
pid, fd = pty.fork()
if pid == 0:
    os.environ.update(TERM="dumb", INPUTRC="/dev/null", PS1="$ ")
    os.execvp("bash", ["bash", "--norc", "--noprofile", "-i"])

def read_until(marker, seconds=20):
    seen, end = b"", time.monotonic() + seconds
    while time.monotonic() < end:
        if select.select([fd], [], [], 0.05)[0]:
            try:
                data = os.read(fd, 4096)
            except OSError:
                break
            seen += data
            if marker in seen:
                return seen
    sys.exit("no %r within %ss: %r" % (marker, seconds, seen))

os.write(fd, (setup + "; echo RE''ADY\n").encode())
read_until(b"READY\r\n")
os.write(fd, keys.encode())
os.write(fd, b"echo DO''NE\n")
seen = read_until(b"DONE\r\n")
os.write(fd, b"exit\n")
os.waitpid(pid, 0)
for got in seen.decode(errors="replace").splitlines():
    if got.startswith(prefix):
        print(got)
"#;

/// The words bash runs after `line` and a Tab in `dir`, with the
/// completion of `scripts` and a `backoff` function that prints each of
/// its arguments in `<>`: what the completion put on the line, word by
/// word, as bash parsed it; `None` without python3.
fn bash_typed(scripts: &Path, dir: &Path, line: &str) -> Option<Vec<String>> {
    let setup = format!(
        "source '{}'; backoff() {{ printf '<%s>' \"$@\"; echo; }}",
        scripts.join("backoff.bash").display()
    );
    let keys = format!("{line}\t\n");
    let out = run_in(dir, "python3", &["-c", TYPE_IN_BASH, &setup, &keys, "<"])?;
    Some(matches(line, &out))
}

#[test]
fn bash_inserts_a_file_name_with_spaces_as_one_word() {
    let scripts = scripts();
    let dir = a_file_with_a_space();
    let Some(typed) = bash_typed(scripts.path(), dir.path(), "backoff --report my") else {
        return;
    };
    assert_eq!(typed, ["<--report><my report.json>"]);
    let typed = bash_typed(scripts.path(), dir.path(), "backoff -- cat my").unwrap();
    assert_eq!(typed, ["<--><cat><my report.json>"]);
}

#[test]
fn zsh_completes_and_inserts_a_file_name_with_spaces_as_one_word() {
    let scripts = scripts();
    let dir = a_file_with_a_space();
    for (line, typed) in [
        ("backoff --report my", "<--report><my report.json>"),
        (
            "backoff --metrics-file my",
            "<--metrics-file><my report.json>",
        ),
        (
            "backoff simulate --plot my",
            "<simulate><--plot><my report.json>",
        ),
        ("backoff -- cat my", "<--><cat><my report.json>"),
    ] {
        let Some(seen) = zsh_in(scripts.path(), dir.path(), line) else {
            return;
        };
        // As zsh inserts it.
        assert_eq!(seen, ["my\\ report.json"], "{line:?}");
        let seen = zsh_typed(scripts.path(), dir.path(), line).unwrap();
        assert_eq!(seen, [typed], "{line:?}");
    }
}

#[test]
fn fish_completes_values_after_a_space() {
    let scripts = scripts();
    let fish = |line: &str| fish_in(scripts.path(), scripts.path(), line);
    for (line, values) in [
        (
            "backoff --jitter ",
            &["none", "full", "equal", "decorrelated"][..],
        ),
        ("backoff -q --jitter ", &["full"]),
        ("backoff --preset ", &["curl", "wget", "git", "none"]),
        ("backoff --budget-store-fail ", &["open", "closed"]),
        ("backoff --log-format ", &["json"]),
        ("backoff schedule --jitter ", &["full"]),
        ("backoff budget show --format ", &["json", "text"]),
    ] {
        let Some(seen) = fish(line) else { return };
        for value in values {
            assert!(offers(&seen, value), "{line:?}: {seen:?}");
        }
        // No file names: the scripts' directory holds backoff.fish.
        assert!(!offers(&seen, "backoff.fish"), "{line:?}: {seen:?}");
    }
    // With `=`, as before.
    assert!(offers(&fish("backoff --jitter=").unwrap(), "--jitter=full"));
}

#[test]
fn fish_completes_a_file_name_with_spaces_as_one_word() {
    let scripts = scripts();
    let dir = a_file_with_a_space();
    for line in ["backoff --report my", "backoff -- cat my"] {
        let Some(seen) = fish_in(scripts.path(), dir.path(), line) else {
            return;
        };
        assert_eq!(seen, ["my report.json"], "{line:?}");
    }
}

/// Lines that end where an option's value goes, a value that is no file:
/// a duration, a count, a key, a label, a pattern, a URL.
const NOT_FILES: &[&str] = &[
    "backoff --base ",
    "backoff --max-time ",
    "backoff -q --timeout ",
    "backoff --attempts ",
    "backoff --budget ",
    "backoff --name ",
    "backoff --retry-if-output ",
    "backoff --budget-store ",
    "backoff schedule --cap ",
    "backoff simulate --clients ",
    "backoff budget show ",
    "backoff breaker reset api --budget-store-timeout ",
];

/// Checks that no shell offers file names where an option's value is no
/// file, and that it does where it is one; `complete` completes a line in
/// a directory that holds `my report.json`, or returns `None` without its
/// shell. With `commands`, a hook's value, a shell command, starts with a
/// command's name (bash's generated script has no such completion: it
/// offers file names, such as a script's).
fn no_file_names_for_values(complete: &dyn Fn(&str) -> Option<Vec<String>>, commands: bool) {
    // The file, as a shell offers it (zsh as it would insert it).
    let file = |seen: &[String]| offers(seen, "my report.json") || offers(seen, "my\\ report.json");
    let Some(seen) = complete("backoff --report ") else {
        return;
    };
    assert!(file(&seen), "--report: {seen:?}");
    for line in NOT_FILES {
        let seen = complete(line).unwrap();
        assert!(!file(&seen), "{line:?}: {seen:?}");
    }
    if commands {
        let seen = complete("backoff --on-retry s").unwrap();
        assert!(offers(&seen, "sh"), "--on-retry: {seen:?}");
    }
}

#[test]
fn no_shell_offers_file_names_for_a_value_that_is_no_file() {
    let scripts = scripts();
    let dir = a_file_with_a_space();
    let (s, d) = (scripts.path(), dir.path());
    no_file_names_for_values(&|line| fish_in(s, d, line), true);
    no_file_names_for_values(&|line| zsh_in(s, d, line), true);
    no_file_names_for_values(&|line| Some(bash_in(s, d, line).0), false);
}

#[test]
fn the_bash_completion_passes_shellcheck() {
    let scripts = scripts();
    crate::support::pass_shellcheck(
        "the_bash_completion_passes_shellcheck",
        &[scripts.join("backoff.bash")],
    );
}

#[test]
fn bash_completes_an_options_value_after_its_equals_sign() {
    let scripts = scripts();
    let s = scripts.path();
    let Some(typed) = bash_typed(s, s, "backoff --jitter=fu") else {
        return;
    };
    assert_eq!(typed, ["<--jitter=full>"]);
    // The value given after `=` is the option's, not the command.
    let typed = bash_typed(s, s, "backoff --base=1s --jitter=eq").unwrap();
    assert_eq!(typed, ["<--base=1s><--jitter=equal>"]);
    let typed = bash_typed(s, s, "backoff --base=1s -- ech").unwrap();
    assert_eq!(typed, ["<--base=1s><--><echo>"]);
    let typed = bash_typed(s, s, "backoff simulate --format=cs").unwrap();
    assert_eq!(typed, ["<simulate><--format=csv>"]);
}
