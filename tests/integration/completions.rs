//! The shell completions of the wrapped command. The scripts that
//! `clap_complete` generates complete backoff's own options and subcommands
//! only: bash's and fish's nothing at all where the command goes, zsh's a
//! command name whose completion calls backoff's own again. So each script
//! gets a hand-written part (below) that finds where the command starts,
//! after `--` or at the first word that is neither an option, an option's
//! value nor a subcommand, and from there completes the command as its own
//! completion would. The tests run the real shells on the checked-in
//! scripts.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use backoff_cli::cli::Cli;
use clap::CommandFactory;
use clap_complete::Shell;

use crate::support::TempDir;

/// The words the parts below are made of: backoff's options that take a
/// value (`--base 1s`), those whose value is optional and then a number
/// (`--until-failure [N]`), and the subcommands.
struct Words {
    value: Vec<String>,
    optional: Vec<String>,
    subcommands: Vec<String>,
}

fn words() -> Words {
    let mut cmd = Cli::command();
    cmd.build();
    let mut words = Words {
        value: Vec::new(),
        optional: Vec::new(),
        subcommands: cmd
            .get_subcommands()
            .map(|s| s.get_name().to_owned())
            .collect(),
    };
    for arg in cmd
        .get_arguments()
        .filter(|a| !a.is_positional() && a.get_action().takes_values())
    {
        let names = arg
            .get_long()
            .map(|l| format!("--{l}"))
            .into_iter()
            .chain(arg.get_short().map(|s| format!("-{s}")));
        if arg.get_num_args().is_some_and(|n| n.min_values() == 0) {
            words.optional.extend(names);
        } else {
            words.value.extend(names);
        }
    }
    assert!(!words.value.is_empty() && !words.optional.is_empty());
    words
}

const BASH: &str = r#"
# The command backoff runs, and its arguments: after `--`, or from the first
# word that is neither an option, an option's value nor a subcommand, they
# are completed as the command's own completion would (bash-completion's
# _command_offset), or as command names and then file names without it.

# Prints the index in COMP_WORDS where the command starts, if the cursor is
# in it.
_backoff_command_start() {
    local i=1
    while (( i < COMP_CWORD )); do
        case ${COMP_WORDS[i]} in
            --)
                echo $(( i + 1 ))
                return
                ;;
            @VALUE@)
                (( i += 2 ))
                ;;
            @OPTIONAL@)
                if [[ ${COMP_WORDS[i + 1]} =~ ^[0-9]+$ ]]; then
                    (( i += 2 ))
                else
                    (( i += 1 ))
                fi
                ;;
            -*)
                (( i += 1 ))
                ;;
            *)
                if (( i == 1 )); then
                    case ${COMP_WORDS[i]} in
                        @SUBCOMMANDS@) return ;;
                    esac
                fi
                echo "$i"
                return
                ;;
        esac
    done
    if (( i == COMP_CWORD )) && [[ ${COMP_WORDS[COMP_CWORD]} != -* ]]; then
        echo "$i"
    fi
}

_backoff() {
    local cur=${COMP_WORDS[COMP_CWORD]} start
    start=$(_backoff_command_start)
    if [[ -z $start ]]; then
        _backoff_options "${COMP_WORDS[0]}" "$cur" "${COMP_WORDS[COMP_CWORD - 1]}"
        return
    fi
    local -a subcommands=()
    if (( start == 1 )); then
        _backoff_compgen -W "@SUBCOMMAND_LIST@" -- "$cur"
        subcommands=("${COMPREPLY[@]}")
    fi
    COMPREPLY=()
    if declare -F _command_offset >/dev/null; then
        _command_offset "$start"
    elif (( start == COMP_CWORD )); then
        _backoff_compgen -c -- "$cur"
    else
        _backoff_compgen -f -- "$cur"
    fi
    COMPREPLY=("${subcommands[@]}" "${COMPREPLY[@]}")
}

# Sets COMPREPLY to the words `compgen "$@"` prints, one a line, so that a
# file name with spaces stays one word; file names (-f) are quoted when
# bash inserts them, and a directory gets its slash.
_backoff_compgen() {
    COMPREPLY=()
    local word
    while IFS= read -r word; do
        COMPREPLY+=("$word")
    done < <(compgen "$@")
    if [[ $1 == -f ]]; then
        compopt -o filenames 2>/dev/null
    fi
    return 0
}
"#;

const ZSH: &str = r#"
# The command backoff runs, and its arguments: after `--`, or from the first
# word that is neither an option, an option's value nor a subcommand, they
# are completed as the command's own completion would.

# Sets REPLY to the index in $words where the command starts, if the cursor
# is in it.
(( $+functions[_backoff_command_start] )) ||
_backoff_command_start() {
    local -i i=2
    while (( i < CURRENT )); do
        case $words[i] in
            (--) REPLY=$(( i + 1 )); return 0 ;;
            (@VALUE@) (( i += 2 )) ;;
            (@OPTIONAL@)
                if [[ $words[i+1] == <-> ]]; then (( i += 2 )); else (( i += 1 )); fi ;;
            (-*) (( i += 1 )) ;;
            (*)
                (( i == 2 )) && [[ $words[i] == (@SUBCOMMANDS@) ]] && return 1
                REPLY=$i
                return 0 ;;
        esac
    done
    (( i == CURRENT )) && [[ $words[CURRENT] != -* ]] || return 1
    REPLY=$i
}

_backoff() {
    local REPLY
    if ! _backoff_command_start; then
        _backoff_options "$@"
        return
    fi
    local -i start=$REPLY ret=1
    if (( start == 2 && CURRENT == 2 )); then
        _backoff_commands && ret=0
    fi
    words=("${(@)words[start,-1]}")
    (( CURRENT -= start - 1 ))
    _normal && ret=0
    return ret
}

"#;

const FISH: &str = r#"
# The command backoff runs, and its arguments: after `--`, or from the first
# word that is neither an option, an option's value nor a subcommand, they
# are completed as the command's own completion would.

# Prints the command's words before the cursor, and succeeds, if the cursor
# is in the command.
function __fish_backoff_command
    set -l words (commandline -opc)
    set -l n (count $words)
    set -l i 2
    while test $i -le $n
        switch $words[$i]
            case --
                set -l rest $words[$i..-1]
                set -e rest[1]
                printf '%s\n' $rest
                return 0
            case @VALUE@
                set i (math $i + 2)
            case @OPTIONAL@
                set -l next (math $i + 1)
                if string match -qr '^[0-9]+$' -- "$words[$next]"
                    set i (math $i + 2)
                else
                    set i (math $i + 1)
                end
            case '-*'
                set i (math $i + 1)
            case '*'
                if test $i -eq 2; and contains -- $words[$i] @SUBCOMMAND_LIST@
                    return 1
                end
                printf '%s\n' $words[$i..-1]
                return 0
        end
    end
    test $i -eq (math $n + 1); and not string match -q -- '-*' (commandline -ct)
end

function __fish_backoff_complete_command
    __fish_complete_subcommand --commandline (__fish_backoff_command) (commandline -ct)
end

complete -c backoff -n "__fish_backoff_command >/dev/null" -x -a "(__fish_backoff_complete_command)"
"#;

/// `template` with the words filled in, each list as `case` patterns
/// (`--base|--cap`), or separated by spaces (`@SUBCOMMAND_LIST@`).
fn fill(template: &str, words: &Words, separator: &str) -> String {
    template
        .replace("@VALUE@", &words.value.join(separator))
        .replace("@OPTIONAL@", &words.optional.join(separator))
        .replace("@SUBCOMMANDS@", &words.subcommands.join(separator))
        .replace("@SUBCOMMAND_LIST@", &words.subcommands.join(" "))
}

/// Replaces the one `from` in `script` with `to`.
fn replace_once(script: &str, from: &str, to: &str) -> String {
    assert_eq!(
        script.matches(from).count(),
        1,
        "{from:?} in the generated script"
    );
    script.replacen(from, to, 1)
}

/// bash: the generated script sets `COMPREPLY=( $(compgen ...) )`, which
/// splits compgen's lines at spaces too (shellcheck's SC2207), so that a file
/// `my report.json` would be offered as two words, and inserts file names
/// unquoted. Each such line calls `_backoff_compgen` (in [`BASH`]) instead,
/// which keeps one word a line and has file names quoted; `compgen -f` is
/// also given `--`, for a word that starts with a dash.
fn bash_one_word_a_line(script: &str) -> String {
    let mut out = String::with_capacity(script.len());
    for line in script.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        let indent = &body[..body.len() - body.trim_start().len()];
        let args = body
            .trim_start()
            .strip_prefix("COMPREPLY=( $(compgen ")
            .and_then(|rest| rest.strip_suffix(") )"))
            .or_else(|| {
                body.trim_start()
                    .strip_prefix("COMPREPLY=($(compgen ")
                    .and_then(|rest| rest.strip_suffix("))"))
            });
        match args {
            Some(args) => {
                let args = args.replace("-f \"${cur}\"", "-f -- \"${cur}\"");
                writeln!(out, "{indent}_backoff_compgen {args}").unwrap();
            }
            None => out.push_str(line),
        }
    }
    assert!(
        !out.contains("$(compgen"),
        "a compgen the generated bash script runs otherwise: {}",
        out.lines()
            .find(|l| l.contains("$(compgen"))
            .unwrap_or_default()
    );
    out
}

/// fish: the generated guard of backoff's own options fails while the line
/// does not parse, as when its last word is an option that waits for its
/// value; fish then completes file names after `--jitter `, not the
/// option's values. The guard lets the options complete when the line does
/// not parse only because of that, its last word being one of `value`
/// (backoff's options that take a value; not those whose value is optional,
/// after which the command comes).
fn fish_values_after_a_space(script: &str, value: &[String]) -> String {
    replace_once(
        script,
        "    argparse -s (__fish_backoff_global_optspecs) -- $cmd 2>/dev/null\n    or return\n",
        &format!(
            "    argparse -s (__fish_backoff_global_optspecs) -- $cmd 2>/dev/null\n    \
             or begin\n        \
             # Not parsed yet: an option waits for its value, which is completed.\n        \
             contains -- \"$cmd[-1]\" {}\n        \
             return\n    \
             end\n",
            value.join(" ")
        ),
    )
}

/// The checked-in completion script of `shell`: `clap_complete`'s, with the
/// part that completes the wrapped command.
pub fn script(shell: Shell) -> Vec<u8> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "backoff", &mut out);
    let generated = String::from_utf8(out).unwrap();
    let words = words();
    let script = match shell {
        // The generated function completes options; ours decides first.
        Shell::Bash => {
            let options = replace_once(&generated, "_backoff() {\n", "_backoff_options() {\n");
            bash_one_word_a_line(&options) + &fill(BASH, &words, "|")
        }
        Shell::Zsh => {
            let options = replace_once(&generated, "_backoff() {\n", "_backoff_options() {\n");
            // What the generated script completes a command with calls
            // backoff's completion again, without end; _backoff completes
            // the command before it is reached.
            let options = replace_once(
                &options,
                ":_cmdambivalent' \\\n",
                ":_command_names -e' \\\n",
            );
            let last = "\nif [ \"$funcstack[1]\" = \"_backoff\" ]; then\n";
            replace_once(&options, last, &(fill(ZSH, &words, "|") + last))
        }
        Shell::Fish => {
            fish_values_after_a_space(&generated, &words.value) + &fill(FISH, &words, " ")
        }
        _ => generated,
    };
    script.into_bytes()
}

/// The directory of the checked-in completion scripts.
fn completions_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("completions")
}

/// Runs `shell` with `args` in the completions directory, at most
/// `PATIENCE` long; `None` when the shell is not installed.
fn run(shell: &str, args: &[&str]) -> Option<Output> {
    run_in(&completions_dir(), shell, args)
}

/// Runs `shell` with `args` in `dir`, at most `PATIENCE` long; `None` when
/// the shell is not installed.
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
    let deadline = Instant::now() + crate::support::PATIENCE;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!(
                "{shell} {args:?} did not end within {:?}",
                crate::support::PATIENCE
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Some(child.wait_with_output().unwrap())
}

/// What bash's completion offers for `line` (its last word is completed;
/// a line that ends with a space completes an empty word).
fn bash(line: &str) -> Vec<String> {
    bash_in(&completions_dir(), line).0
}

/// What bash's completion offers for `line` in `dir`, and the options it
/// asked `compopt` for (`-o filenames`: the words are file names, which
/// bash quotes as it inserts them).
fn bash_in(dir: &Path, line: &str) -> (Vec<String>, Vec<String>) {
    let words: Vec<String> = line.split(' ').map(|w| format!("'{w}'")).collect();
    let script = format!(
        "source '{}/backoff.bash'; compopt() {{ printf '<compopt> %s\\n' \"$*\"; }}; \
         COMP_WORDS=({}); COMP_CWORD={}; _backoff; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        completions_dir().display(),
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
/// returns `None` when the shell is not installed.
fn completes_the_command(complete: &dyn Fn(&str) -> Option<Vec<String>>) {
    // `sh` is a command wherever the tests run; a file of the completions
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

#[test]
fn bash_completes_the_command_and_its_arguments() {
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

/// What zsh's completion offers for `line` (a pseudo-terminal runs an
/// interactive zsh that completes it), or `None` without zsh.
fn zsh(line: &str) -> Option<Vec<String>> {
    const DRIVER: &str = r#"
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "PS1='%% '; fpath=($PWD \$fpath); autoload -U compinit; compinit -u -D"
zpty -w z 'compadd () { if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return $?; fi; local -a hits; builtin compadd -A hits "$@"; local h; for h in $hits; do print -r -- "<M>$h"; done; builtin compadd "$@"; }'
zpty -w z "bindkey '^I' list-choices; print -r -- '<READY>'"
local got
typeset -F SECONDS
float until=$(( SECONDS + 9 ))
while (( SECONDS < until )); do
  if zpty -rt z got; then [[ $got == *'<READY>'* && $got != *print* ]] && break; else sleep 0.01; fi
done
zpty -n -w z "$1"$'\t'
zpty -w z $'\C-u'"print -r -- '<END>'"
until=$(( SECONDS + 9 ))
local ended=
while (( SECONDS < until )); do
  if zpty -rt z got; then
    [[ $got == *'<END>'* && $got != *print* ]] && { ended=1; break }
    [[ $got == *'<M>'* ]] && print -r -- "${${got##*<M>}%%$'\r'*}"
  else sleep 0.01; fi
done
[[ -n $ended ]] || print -u2 "no end of the completion within 9s"
zpty -d z
"#;
    let out = run("zsh", &["-f", "-c", DRIVER, "zsh", line])?;
    Some(matches(line, &out))
}

#[test]
fn zsh_completes_the_command_and_its_arguments() {
    completes_the_command(&zsh);
}

/// What fish's completion offers for `line`, or `None` without fish.
fn fish(line: &str) -> Option<Vec<String>> {
    fish_in(&completions_dir(), line)
}

/// What fish's completion offers for `line` in `dir`, or `None` without
/// fish.
fn fish_in(dir: &Path, line: &str) -> Option<Vec<String>> {
    let script = format!(
        "source '{}/backoff.fish'; complete -C '{line}'",
        completions_dir().display()
    );
    let out = run_in(dir, "fish", &["--no-config", "-c", &script])?;
    Some(matches(line, &out))
}

#[test]
fn fish_completes_the_command_and_its_arguments() {
    completes_the_command(&fish);
}

/// A directory holding one file whose name has a space, `my report.json`.
fn a_file_with_a_space() -> TempDir {
    let dir = TempDir::new("completion");
    std::fs::write(dir.path().join("my report.json"), "").unwrap();
    dir
}

#[test]
fn bash_completes_a_file_name_with_spaces_as_one_word() {
    let dir = a_file_with_a_space();
    for line in [
        "backoff --report my",
        "backoff --metrics-file my",
        "backoff simulate --plot my",
        "backoff -- cat my",
    ] {
        let (words, compopt) = bash_in(dir.path(), line);
        assert_eq!(words, ["my report.json"], "{line:?}");
        assert!(
            compopt.iter().any(|o| o == "-o filenames"),
            "{line:?}: {compopt:?}"
        );
    }
    // Values are words, not file names.
    let (words, compopt) = bash_in(dir.path(), "backoff --jitter ");
    assert!(offers(&words, "full") && !offers(&words, "my report.json"));
    assert!(!compopt.iter().any(|o| o == "-o filenames"), "{compopt:?}");
}

/// Types `line` and a Tab into an interactive bash (in a pseudo-terminal
/// that python3's pty module opens) whose `backoff` is a function printing
/// each of its arguments in `<>`, then Enter: what it prints is what the
/// completion put on the line, word by word, as bash parsed it.
const TYPE_IN_BASH: &str = r#"
import os, pty, select, sys, time

line, script = sys.argv[1], sys.argv[2]
pid, fd = pty.fork()
if pid == 0:
    os.environ.update(TERM="dumb", INPUTRC="/dev/null", PS1="$ ")
    os.execvp("bash", ["bash", "--norc", "--noprofile", "-i"])

def read_until(marker, seconds=9):
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

os.write(fd, ("source '%s'; backoff() { printf '<%%s>' \"$@\"; echo; }; echo RE''ADY\n" % script).encode())
read_until(b"READY\r\n")
os.write(fd, line.encode() + b"\t\n")
os.write(fd, b"echo DO''NE\n")
seen = read_until(b"DONE\r\n")
os.write(fd, b"exit\n")
os.waitpid(pid, 0)
for got in seen.decode(errors="replace").splitlines():
    if got.startswith("<"):
        print(got)
"#;

/// The words bash runs after `line` and a Tab in `dir`, or `None` without
/// python3.
fn bash_typed(dir: &Path, line: &str) -> Option<Vec<String>> {
    let script = completions_dir().join("backoff.bash");
    let out = run_in(
        dir,
        "python3",
        &["-c", TYPE_IN_BASH, line, &script.display().to_string()],
    )?;
    Some(matches(line, &out))
}

#[test]
fn bash_inserts_a_file_name_with_spaces_as_one_word() {
    let dir = a_file_with_a_space();
    let Some(typed) = bash_typed(dir.path(), "backoff --report my") else {
        return;
    };
    assert_eq!(typed, ["<--report><my report.json>"]);
    let typed = bash_typed(dir.path(), "backoff -- cat my").unwrap();
    assert_eq!(typed, ["<--><cat><my report.json>"]);
}

#[test]
fn fish_completes_values_after_a_space() {
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
        // No file names: the completions directory holds backoff.fish.
        assert!(!offers(&seen, "backoff.fish"), "{line:?}: {seen:?}");
    }
    // With `=`, as before.
    assert!(offers(&fish("backoff --jitter=").unwrap(), "--jitter=full"));
}

#[test]
fn fish_completes_a_file_name_with_spaces_as_one_word() {
    let dir = a_file_with_a_space();
    for line in ["backoff --report my", "backoff -- cat my"] {
        let Some(seen) = fish_in(dir.path(), line) else {
            return;
        };
        assert_eq!(seen, ["my report.json"], "{line:?}");
    }
}

#[test]
fn the_bash_completion_passes_shellcheck() {
    crate::support::pass_shellcheck(
        "the_bash_completion_passes_shellcheck",
        &[completions_dir().join("backoff.bash")],
    );
}

#[test]
fn the_generated_compgen_lines_keep_one_word_a_line() {
    let generated = "\
            COMPREPLY=( $(compgen -W \"${opts}\" -- \"${cur}\") )
                    COMPREPLY=($(compgen -f \"${cur}\"))
                    COMPREPLY=($(compgen -W \"text json\" -- \"${cur}\"))
                    COMPREPLY=()
";
    assert_eq!(
        bash_one_word_a_line(generated),
        "\
            _backoff_compgen -W \"${opts}\" -- \"${cur}\"
                    _backoff_compgen -f -- \"${cur}\"
                    _backoff_compgen -W \"text json\" -- \"${cur}\"
                    COMPREPLY=()
"
    );
}

#[test]
#[should_panic(expected = "a compgen the generated bash script runs otherwise")]
fn a_compgen_of_another_form_is_not_left_as_it_is() {
    bash_one_word_a_line("    words=($(compgen -W \"a b\" -- \"$cur\"))\n");
}
