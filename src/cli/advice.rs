//! Advice for two common mistakes of a command line, found from the words
//! as given: backoff's own options put after the command (they are the
//! command's), and a command given as one quoted word (`"curl -fsS URL"`,
//! a program of that name, which is not found).

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

use clap::CommandFactory;

use crate::report::text::quote_command;

use super::Cli;

/// The first of the command's arguments (`command`, the program first) that
/// is one of backoff's own long options (`--max-retries`, or
/// `--max-retries=3`), before a `--` of the command's own; `--help` and
/// `--version` aside, which nearly every program has too. Short options
/// (`-q`, `-v`) are not looked for: most programs have the same letters.
pub fn misplaced_option(command: &[OsString]) -> Option<String> {
    let cli = Cli::command();
    let own = |name: &str| {
        !matches!(name, "help" | "version")
            && cli.get_arguments().any(|a| a.get_long() == Some(name))
    };
    command
        .iter()
        .skip(1)
        .map(|w| w.as_bytes())
        .take_while(|w| *w != b"--")
        .filter_map(|w| w.strip_prefix(b"--"))
        .filter_map(|w| std::str::from_utf8(w).ok())
        .map(|w| w.split_once('=').map_or(w, |(name, _)| name))
        .find(|name| own(name))
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
    line.extend(["sh", "-c", text].map(OsString::from));
    Some(format!(
        "did you mean to run it with a shell? {}",
        quote_command(&line)
    ))
}

/// Whether a word means the same to a shell as to backoff: nothing in it
/// that a shell would read as a quote, a variable, a glob, a redirection or
/// the end of a command.
fn plain(word: &OsStr) -> bool {
    word.as_bytes()
        .iter()
        .all(|&b| b.is_ascii_alphanumeric() || b"_-./:=,@%+".contains(&b) || b >= 0x80)
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
