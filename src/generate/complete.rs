//! The shell completions. The scripts that `clap_complete` generates
//! complete backoff's own options and subcommands only: bash's and fish's
//! nothing at all where the command goes, zsh's a command name whose
//! completion calls backoff's own again. So each script gets a
//! hand-written part (below) that finds where the command starts, after
//! `--` or at the first word that is neither an option, an option's value
//! nor a subcommand, and from there completes the command as its own
//! completion would; and what the generated scripts get wrong is mended.

use std::fmt::Write as _;

use anyhow::ensure;
use clap::ValueHint;

/// The shells whose completion scripts backoff prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
    PowerShell,
    Elvish,
}

/// The words the parts below are made of: backoff's options that take a
/// value (`--base 1s`), those whose value is optional and then a number
/// (`--until-failure [N]`), and the subcommands.
struct Words {
    value: Vec<String>,
    optional: Vec<String>,
    subcommands: Vec<String>,
}

/// The words of `cmd`, built.
fn words(cmd: &clap::Command) -> Words {
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
                # bash splits `--base=1s` at the `=` (COMP_WORDBREAKS).
                if [[ ${COMP_WORDS[i + 1]} == = ]]; then
                    (( i += 3 ))
                else
                    (( i += 2 ))
                fi
                ;;
            @OPTIONAL@)
                if [[ ${COMP_WORDS[i + 1]} == = ]]; then
                    (( i += 3 ))
                elif [[ ${COMP_WORDS[i + 1]} =~ ^[0-9]+$ ]]; then
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
        # After `--jitter=` (split at the `=`), the value is completed as
        # after `--jitter `: the option is the word before the `=`.
        local prev=${COMP_WORDS[COMP_CWORD - 1]}
        if [[ $cur == = && $prev == -* ]]; then
            cur=
        elif [[ $prev == = && ${COMP_WORDS[COMP_CWORD - 2]} == -* ]]; then
            prev=${COMP_WORDS[COMP_CWORD - 2]}
        fi
        _backoff_options "${COMP_WORDS[0]}" "$cur" "$prev"
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

# backoff's own words are no file names, a budget's key included, but an
# option's value that its completion says is one (-F); the command's
# arguments are completed above.
complete -c backoff -f
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

/// Replaces the one `from` in `script` with `to`; an error when the
/// generated script holds it otherwise than once.
fn replace_once(script: &str, from: &str, to: &str) -> anyhow::Result<String> {
    ensure!(
        script.matches(from).count() == 1,
        "{from:?} is not once in the generated script"
    );
    Ok(script.replacen(from, to, 1))
}

/// bash: the generated script sets `COMPREPLY=( $(compgen ...) )`, which
/// splits compgen's lines at spaces too (shellcheck's SC2207), so that a file
/// `my report.json` would be offered as two words, and inserts file names
/// unquoted. Each such line calls `_backoff_compgen` (in [`BASH`]) instead,
/// which keeps one word a line and has file names quoted; `compgen -f` is
/// also given `--`, for a word that starts with a dash.
fn bash_one_word_a_line(script: &str) -> anyhow::Result<String> {
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
                let _ = writeln!(out, "{indent}_backoff_compgen {args}");
            }
            None => out.push_str(line),
        }
    }
    if let Some(other) = out.lines().find(|l| l.contains("$(compgen")) {
        anyhow::bail!("a compgen the generated bash script runs otherwise: {other}");
    }
    Ok(out)
}

/// fish: the generated guard of backoff's own options fails while the line
/// does not parse, as when its last word is an option that waits for its
/// value; fish then completes file names after `--jitter `, not the
/// option's values. The guard lets the options complete when the line does
/// not parse only because of that, its last word being one of `value`
/// (backoff's options that take a value; not those whose value is optional,
/// after which the command comes).
fn fish_values_after_a_space(script: &str, value: &[String]) -> anyhow::Result<String> {
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

/// zsh: the generated script takes the command (a positional argument
/// completed by a completion that calls backoff's own again, without end)
/// for the first word, and a subcommand for the second: `backoff simulate
/// --pl` is read as the command `simulate`, whose options are not
/// completed. The command and the subcommands are never on one line, and
/// `_backoff` completes the command before `_backoff_options` is reached: so
/// the command's argument goes, and the subcommand is the first word
/// (`$line[1]`).
fn zsh_subcommands_first(script: &str) -> anyhow::Result<String> {
    let command: Vec<&str> = script
        .lines()
        .filter(|l| l.ends_with(":_cmdambivalent' \\"))
        .collect();
    ensure!(
        command.len() == 1,
        "the command's argument is not once in the generated zsh script"
    );
    let script = replace_once(script, &format!("{}\n", command[0]), "")?;
    let top = ["words=($line[2] ", "-command-$line[2]:", "case $line[2] in"];
    top.iter().try_fold(script, |script, from| {
        replace_once(&script, from, &from.replace("$line[2]", "$line[1]"))
    })
}

/// `cmd` with every option's value of unknown kind marked as no file
/// name: a duration, a count, a key, a label, a pattern. `clap_complete`'s
/// scripts offer file names for such a value; only a value the definition
/// says is a path (from its type, or its hint) is completed as one.
fn values_are_no_files(cmd: clap::Command) -> clap::Command {
    cmd.mut_args(|arg| {
        if arg.get_action().takes_values() && arg.get_value_hint() == ValueHint::Unknown {
            arg.value_hint(ValueHint::Other)
        } else {
            arg
        }
    })
    .mut_subcommands(values_are_no_files)
}

/// The completion script of `shell` for `cmd` (backoff's command, as the
/// clap definition gives it): `clap_complete`'s, with the part that
/// completes the wrapped command.
pub fn script(cmd: &clap::Command, shell: Shell) -> anyhow::Result<String> {
    // The subcommands' options are built on demand: all of them first.
    let mut cmd = cmd.clone();
    cmd.build();
    let mut cmd = values_are_no_files(cmd);
    let name = cmd.get_name().to_owned();
    let mut out = Vec::new();
    let generator = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
        Shell::PowerShell => clap_complete::Shell::PowerShell,
        Shell::Elvish => clap_complete::Shell::Elvish,
    };
    clap_complete::generate(generator, &mut cmd, name, &mut out);
    let generated = String::from_utf8(out)?;
    // Built by `generate`.
    let words = words(&cmd);
    ensure!(
        !words.value.is_empty() && !words.optional.is_empty(),
        "no option that takes a value"
    );
    Ok(match shell {
        // The generated function completes options; ours decides first.
        Shell::Bash => {
            let options = replace_once(&generated, "_backoff() {\n", "_backoff_options() {\n")?;
            bash_one_word_a_line(&options)? + &fill(BASH, &words, "|")
        }
        Shell::Zsh => {
            let options = replace_once(&generated, "_backoff() {\n", "_backoff_options() {\n")?;
            let options = zsh_subcommands_first(&options)?;
            let last = "\nif [ \"$funcstack[1]\" = \"_backoff\" ]; then\n";
            replace_once(&options, last, &(fill(ZSH, &words, "|") + last))?
        }
        Shell::Fish => {
            fish_values_after_a_space(&generated, &words.value)? + &fill(FISH, &words, " ")
        }
        Shell::PowerShell | Shell::Elvish => generated,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generated_compgen_lines_keep_one_word_a_line() {
        let generated = "\
            COMPREPLY=( $(compgen -W \"${opts}\" -- \"${cur}\") )
                    COMPREPLY=($(compgen -f \"${cur}\"))
                    COMPREPLY=($(compgen -W \"text json\" -- \"${cur}\"))
                    COMPREPLY=()
";
        assert_eq!(
            bash_one_word_a_line(generated).unwrap(),
            "\
            _backoff_compgen -W \"${opts}\" -- \"${cur}\"
                    _backoff_compgen -f -- \"${cur}\"
                    _backoff_compgen -W \"text json\" -- \"${cur}\"
                    COMPREPLY=()
"
        );
    }

    #[test]
    fn a_compgen_of_another_form_is_not_left_as_it_is() {
        let e =
            bash_one_word_a_line("    words=($(compgen -W \"a b\" -- \"$cur\"))\n").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("a compgen the generated bash script runs otherwise"),
            "{e}"
        );
    }

    #[test]
    fn a_part_to_replace_is_found_once() {
        assert_eq!(replace_once("a b c", "b", "x").unwrap(), "a x c");
        assert!(replace_once("a b b", "b", "x").is_err());
        assert!(replace_once("a c", "b", "x").is_err());
    }
}
