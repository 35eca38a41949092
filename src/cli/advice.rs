//! Advice for common mistakes of a command line, found from the words as
//! given: backoff's own options put after the command (they are the
//! command's), a command given as one quoted word (`"curl -fsS URL"`, a
//! program of that name, which is not found), a duration of two words
//! unquoted (`--max-time 1h 30m`, whose `30m` would be the command), and
//! a mistyped `BACKOFF_*` variable of the environment.

use std::ffi::{OsStr, OsString};

use clap::CommandFactory;

use crate::report::text::quote_command;
use crate::sys::process;

use super::Cli;

/// The first of the command's arguments (`command`, the program first) that
/// is one of backoff's own long options (`--max-retries`, or
/// `--max-retries=3`), before a `--` of the command's own; `--help` and
/// `--version` aside, which nearly every program has too. Short options
/// (`-q`, `-v`) are not looked for: most programs have the same letters.
pub fn misplaced_option(command: &[OsString]) -> Option<String> {
    let mut names = command
        .iter()
        .skip(1)
        .map(|w| w.as_encoded_bytes())
        .take_while(|w| *w != b"--")
        .filter_map(|w| w.strip_prefix(b"--"))
        .filter_map(|w| std::str::from_utf8(w).ok())
        .map(|w| w.split_once('=').map_or(w, |(name, _)| name))
        .filter(|name| !matches!(*name, "help" | "version"))
        .peekable();
    // Most commands have no long option at all: backoff's own are not
    // built for them.
    names.peek()?;
    let cli = Cli::command();
    names
        .find(|name| cli.get_arguments().any(|a| a.get_long() == Some(name)))
        .map(|name| format!("--{name}"))
}

/// What to tell of a program that was not found, when it looks like a
/// mistake: `command` (the program first) given as one word that holds
/// spaces, with the command line that runs it split into words (or through
/// `sh -c`, when the word holds what only a shell understands), after
/// `options`, backoff's own words before the command; or `help`, backoff's
/// own help. Followed as written, the advice works.
pub fn not_found(options: &[OsString], command: &[OsString]) -> Option<String> {
    let (program, args) = command.split_first()?;
    if program == "help" {
        let topic = args
            .first()
            .filter(|a| Cli::command().find_subcommand(a).is_some());
        let mut words = vec![OsString::from("backoff")];
        words.extend(topic.cloned());
        words.push("--help".into());
        return Some(format!(
            "for backoff's own help, run {}",
            quote_command(&words)
        ));
    }
    if let Some(advice) = own_option(options, command) {
        return Some(advice);
    }
    let text = program.to_str()?;
    if !text.contains(char::is_whitespace) {
        return None;
    }
    let words: Vec<OsString> = text.split_whitespace().map(OsString::from).collect();
    let mut line = vec![OsString::from("backoff")];
    line.extend(options.iter().cloned());
    line.push("--".into());
    if words.iter().all(|w| plain(w)) {
        line.extend(words);
        line.extend(args.iter().cloned());
        return Some(format!(
            "did you mean to split it? {}",
            quote_command(&line)
        ));
    }
    // Quotes, variables, pipes, globs: words a shell reads, which it
    // alone can run. The command's other arguments would be the shell's
    // $0, $1...: no advice then.
    if !args.is_empty() {
        return None;
    }
    line.extend(process::SHELL.into_iter().chain([text]).map(OsString::from));
    Some(format!(
        "did you mean to run it with a shell? {}",
        quote_command(&line)
    ))
}

/// What to tell when the program not found (`command`'s first word) is
/// one of backoff's own options (`--max-retries`, `--max-retries=3`, `-q`),
/// given after `--`, which makes it the command: the command line with it
/// (and its value) among `options`, before `--`.
fn own_option(options: &[OsString], command: &[OsString]) -> Option<String> {
    let (program, rest) = command.split_first()?;
    let word = program.to_str()?;
    let (name, joined) = word
        .split_once('=')
        .map_or((word, false), |(n, _)| (n, true));
    // This runs before every run's first attempt: backoff's options are
    // built only for a program that could be one of them.
    if !name.starts_with('-') {
        return None;
    }
    let cli = Cli::command();
    // `--long`, or `-s`: one letter.
    let (long, mut letters) = (
        name.strip_prefix("--"),
        name.strip_prefix('-').unwrap_or_default().chars(),
    );
    let short = letters.next().filter(|_| letters.next().is_none());
    let arg = cli.get_arguments().find(|a| match long {
        Some(long) => a.get_long() == Some(long),
        None => short.is_some() && a.get_short() == short,
    })?;
    let takes_values = arg.get_action().takes_values();
    let taken = usize::from(!joined && takes_values);
    let mut said = format!("'{name}' is backoff's own option, which goes before '--'");
    // Given there once more, it would be refused.
    let repeats = matches!(
        arg.get_action(),
        clap::ArgAction::Append | clap::ArgAction::Count
    );
    if !repeats && given_already(options, arg.get_id()) {
        return Some(format!(
            "{said} and is given there already: take it out of the command"
        ));
    }
    // `--quiet=1`: a flag given a value, which it would refuse.
    let program = if joined && !takes_values {
        said.push_str(" and takes no value");
        OsString::from(name)
    } else {
        program.clone()
    };
    if rest.len() <= taken {
        return Some(said);
    }
    let (value, rest) = rest.split_at(taken);
    let mut line = vec![OsString::from("backoff")];
    line.extend(options.iter().cloned());
    line.push(program);
    line.extend(value.iter().cloned());
    line.push("--".into());
    line.extend(rest.iter().cloned());
    Some(format!("{said}: {}", quote_command(&line)))
}

/// Whether `options`, backoff's own words before the command, give the
/// option `id` on the command line (not from the environment).
fn given_already(options: &[OsString], id: &clap::Id) -> bool {
    let words = std::iter::once(OsString::from("backoff"))
        .chain(options.iter().cloned())
        .chain(["--".into(), "true".into()]);
    Cli::command()
        .try_get_matches_from(words)
        .is_ok_and(|m| m.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine))
}

/// What to refuse when the command's first words are the rest of a
/// duration: the last of backoff's own words, `options` (the command's
/// `--` left out, if any, when `separated`), is the value of an option
/// that takes a duration (`--max-time 1h`, or `--max-time=1h`), and the
/// command (`command`, the program first) starts with words that are
/// durations too (`30m`): the shell split `--max-time 1h 30m`. A program
/// named like a duration is run when a `--` comes before it.
pub fn split_duration(
    options: &[OsString],
    separated: bool,
    command: &[OsString],
) -> Option<String> {
    let durations = command
        .iter()
        .map_while(|w| w.to_str().filter(|w| super::values::duration(w).is_ok()))
        .collect::<Vec<_>>();
    if separated || durations.is_empty() {
        return None;
    }
    let last = options.last()?.to_str()?;
    let (flag, value, joined) = match last.split_once('=') {
        Some((flag, value)) if flag.starts_with("--") => (flag, value, "="),
        _ => (options.iter().nth_back(1)?.to_str()?, last, " "),
    };
    let takes_duration = Cli::command().get_arguments().any(|a| {
        a.get_long()
            .is_some_and(|l| flag.strip_prefix("--") == Some(l))
            && a.get_value_names()
                .is_some_and(|names| names.iter().any(|n| n == "DURATION"))
    });
    if !takes_duration || value.contains(char::is_whitespace) {
        return None;
    }
    let whole = std::iter::once(value)
        .chain(durations.iter().copied())
        .collect::<Vec<_>>()
        .join(" ");
    super::values::duration(&whole).ok()?;
    Some(format!(
        "'{}' is the rest of {flag}'s duration, not a command; quote it: {flag}{joined}'{whole}'",
        durations.join(" ")
    ))
}

/// What to tell of the `BACKOFF_*` variables among `names` (the
/// environment's) that backoff does not know, one line each, where the
/// (sub)command that `matches` of `command` found reads any `BACKOFF_*`
/// variable. Known are those that `command`'s options read (in any of
/// its subcommands) and `set_by_backoff`, those that backoff gives the
/// commands and hooks it runs, where another backoff may see them. A line
/// names the variable read that is nearest in spelling, when one is near
/// enough to be what was meant. Nothing is looked up (not even the
/// options) when no variable is unknown at a glance.
pub fn unknown_variables(
    command: &mut clap::Command,
    matches: &clap::ArgMatches,
    names: impl IntoIterator<Item = OsString>,
    set_by_backoff: &[&str],
) -> Vec<String> {
    let mut candidates: Vec<String> = names
        .into_iter()
        .filter_map(|n| n.into_string().ok())
        .filter(|n| n.starts_with("BACKOFF_") && !set_by_backoff.contains(&n.as_str()))
        .collect();
    candidates.sort();
    if candidates.is_empty() {
        return Vec::new();
    }
    // Every subcommand's options, not only those of the one at hand.
    command.build();
    let command = &*command;
    // The (sub)command at hand, and what it reads itself.
    let (mut at, mut m) = (command, matches);
    while let Some((name, sub)) = m.subcommand() {
        let Some(found) = at.find_subcommand(name) else {
            break;
        };
        (at, m) = (found, sub);
    }
    let mut here = Vec::new();
    read_in(at, &mut here);
    if here.is_empty() {
        return Vec::new();
    }
    let mut read = Vec::new();
    read_in(command, &mut read);
    read.sort();
    candidates
        .into_iter()
        .filter(|c| !read.contains(c))
        .map(|c| {
            let hint = nearest(&c, &read).map_or_else(
                || "backoff --help names those it reads".to_owned(),
                |n| format!("did you mean {n}?"),
            );
            format!("{c} is not a variable backoff reads; {hint}")
        })
        .collect()
}

/// Adds the `BACKOFF_*` variables that the options of `command` and its
/// subcommands read to `into`, each once.
fn read_in(command: &clap::Command, into: &mut Vec<String>) {
    for env in command.get_arguments().filter_map(clap::Arg::get_env) {
        let env = env.to_string_lossy().into_owned();
        if env.starts_with("BACKOFF_") && !into.contains(&env) {
            into.push(env);
        }
    }
    for sub in command.get_subcommands() {
        read_in(sub, into);
    }
}

/// The name among `known` nearest to `name` in spelling, compared without
/// the `BACKOFF_` they all start with: the one that shares the most pairs
/// of letters with it (Sørensen–Dice similarity), if at least half of them
/// (`STORE` is nearer `BUDGET_STORE` than `FACTOR` that way, although
/// fewer edits make it `FACTOR`).
fn nearest<'a>(name: &str, known: &'a [String]) -> Option<&'a str> {
    let tail = |n: &'a str| n.strip_prefix("BACKOFF_").unwrap_or(n);
    let name = name.strip_prefix("BACKOFF_").unwrap_or(name);
    known
        .iter()
        .map(|k| (strsim::sorensen_dice(name, tail(k)), k))
        .filter(|(score, _)| *score >= 0.5)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k.as_str())
}

/// Whether a word means the same to a shell as to backoff: nothing in it
/// that a shell would read as a quote, a variable, a glob, a redirection or
/// the end of a command.
fn plain(word: &OsStr) -> bool {
    word.as_encoded_bytes()
        .iter()
        .all(|&b| b.is_ascii_alphanumeric() || process::PLAIN.as_bytes().contains(&b) || b >= 0x80)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<OsString> {
        w.iter().map(OsString::from).collect()
    }

    #[test]
    fn backoffs_own_long_options_are_found_among_the_commands_arguments() {
        let found = |w: &[&str]| misplaced_option(&words(w));
        assert_eq!(
            found(&["curl", "URL", "--max-retries", "3"]).as_deref(),
            Some("--max-retries")
        );
        assert_eq!(
            found(&["curl", "--timeout=5s", "URL"]).as_deref(),
            Some("--timeout")
        );
        // The program itself, the command's own options, short options,
        // --help, and what follows the command's own `--` are not.
        for w in [
            &["--max-retries"][..],
            &["curl", "--connect-timeout", "5", "-q", "-v"],
            &["curl", "--help", "--version"],
            &["git", "log", "--", "--timeout"],
            &["ls", "--max-retriesx", "--"],
        ] {
            assert_eq!(found(w), None, "{w:?}");
        }
    }

    // sh's quoting (cmd's is tested under Wine: tests/integration/windows.rs).
    #[cfg(unix)]
    #[test]
    fn a_command_given_as_one_word_is_split_after_backoffs_own_options() {
        let advice = |o: &[&str], c: &[&str]| not_found(&words(o), &words(c));
        assert_eq!(
            advice(&["--timeout", "5s"], &["curl -fsS https://example.test/"]).as_deref(),
            Some(
                "did you mean to split it? backoff --timeout 5s -- curl -fsS https://example.test/"
            )
        );
        // A `?` is a shell's glob.
        assert_eq!(
            advice(
                &["--timeout", "5s"],
                &["curl -fsS https://example.test/x?a=1"]
            )
            .as_deref(),
            Some(
                "did you mean to run it with a shell? backoff --timeout 5s -- sh -c 'curl -fsS https://example.test/x?a=1'"
            )
        );
        assert_eq!(
            advice(&[], &["curl  -fsS\thttps://example.test/", "-o", "my file"]).as_deref(),
            Some(
                "did you mean to split it? backoff -- curl -fsS https://example.test/ -o 'my file'"
            )
        );
        assert_eq!(
            advice(&["-q"], &["ls *.txt | wc -l"]).as_deref(),
            Some("did you mean to run it with a shell? backoff -q -- sh -c 'ls *.txt | wc -l'")
        );
        assert_eq!(advice(&[], &["ls $HOME", "x"]), None);
        assert_eq!(advice(&[], &["curl"]), None);
        assert_eq!(advice(&[], &["./no-such-program", "a b"]), None);
    }

    #[test]
    fn the_rest_of_a_duration_taken_for_the_command_is_found() {
        let advice =
            |o: &[&str], separated, c: &[&str]| split_duration(&words(o), separated, &words(c));
        assert_eq!(
            advice(&["-q", "--max-time", "1h"], false, &["30m", "--", "curl"]).as_deref(),
            Some(
                "'30m' is the rest of --max-time's duration, not a command; quote it: --max-time '1h 30m'"
            )
        );
        assert_eq!(
            advice(&["--timeout=1m"], false, &["30s", "500ms", "curl", "10s"]).as_deref(),
            Some(
                "'30s 500ms' is the rest of --timeout's duration, not a command; quote it: --timeout='1m 30s 500ms'"
            )
        );
        // After `--`; after an option that takes no duration, or none; a
        // command that is no duration; a duration already whole, or one
        // that would not be one joined: the command runs.
        for (o, separated, c) in [
            (&["--max-time", "1h"][..], true, &["30m"][..]),
            (&["--attempts", "3"], false, &["30m"]),
            (&["--max-time", "1h", "-v"], false, &["30m"]),
            (&["-v", "--name=x"], false, &["30m"]),
            (&[], false, &["30m"]),
            (&["--max-time", "1h"], false, &["curl", "30m"]),
            (&["--max-time", "1h 30m"], false, &["10s"]),
            (&["--max-time", "1h"], false, &["99999999999999999999h"]),
        ] {
            assert_eq!(advice(o, separated, c), None, "{o:?} {c:?}");
        }
    }

    #[test]
    fn a_mistyped_variable_is_told_with_the_one_it_is_nearest_among_those_read() {
        let told = |args: &[&str], names: &[&str]| {
            let mut command = Cli::command();
            let matches = command.try_get_matches_from_mut(args).unwrap();
            unknown_variables(
                &mut command,
                &matches,
                names.iter().map(OsString::from),
                &["BACKOFF_ATTEMPT", "BACKOFF_REASON"],
            )
        };
        let run = ["backoff", "true"];
        assert_eq!(
            told(
                &run,
                &[
                    "PATH",
                    "BACKOFF_BASE",
                    "BACKOFF_REASON",
                    "BACKOFF_JITER",
                    "BACKOFF_ATTEMPTS"
                ]
            ),
            [
                "BACKOFF_ATTEMPTS is not a variable backoff reads; backoff --help names those it reads",
                "BACKOFF_JITER is not a variable backoff reads; did you mean BACKOFF_JITTER?",
            ]
        );
        // A subcommand's own variable counts for a run, and a run's for a
        // subcommand; one that reads none is told nothing.
        assert!(told(&run, &["BACKOFF_BUDGET_STORE"]).is_empty());
        assert_eq!(
            told(&["backoff", "budget", "show", "k"], &["BACKOFF_CAPS"]).len(),
            1
        );
        assert!(told(&["backoff", "simulate"], &["BACKOFF_CAPS"]).is_empty());
        let read: Vec<String> = Cli::command()
            .get_arguments()
            .filter_map(clap::Arg::get_env)
            .map(|e| e.to_string_lossy().into_owned())
            .collect();
        for (name, meant) in [
            ("BACKOFF_BASS", Some("BACKOFF_BASE")),
            ("BACKOFF_CAPS", Some("BACKOFF_CAP")),
            ("BACKOFF_MAXTIME", Some("BACKOFF_MAX_TIME")),
            ("BACKOFF_RETRIES", Some("BACKOFF_MAX_RETRIES")),
            ("BACKOFF_STORE", Some("BACKOFF_BUDGET_STORE")),
            ("BACKOFF_TIMESTAMP", Some("BACKOFF_TIMESTAMPS")),
            ("BACKOFF_FOO", None),
            ("BACKOFF_", None),
        ] {
            assert_eq!(nearest(name, &read), meant, "{name}");
        }
    }

    #[test]
    fn help_as_a_command_is_told_backoffs_own_help() {
        let advice = |c: &[&str]| not_found(&[], &words(c));
        assert_eq!(
            advice(&["help"]).as_deref(),
            Some("for backoff's own help, run backoff --help")
        );
        assert_eq!(
            advice(&["help", "schedule"]).as_deref(),
            Some("for backoff's own help, run backoff schedule --help")
        );
        assert_eq!(
            advice(&["help", "curl"]).as_deref(),
            Some("for backoff's own help, run backoff --help")
        );
    }
}
