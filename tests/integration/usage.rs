//! Bad input: always exit 125 with one line that names the option and quotes
//! the value, and the command never runs.

use proptest::prelude::*;

use crate::support::{TempDir, backoff};

/// Runs backoff with `args` before a command that would leave a marker, and
/// checks the refusal.
fn refused(args: &[&str], names: &str) {
    let dir = TempDir::new("usage");
    let marker = dir.join("ran");
    let out = backoff(args)
        .args(["--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(125), "{args:?}: {stderr}");
    assert_eq!(
        stderr.lines().count(),
        1,
        "{args:?}: one line, got {stderr:?}"
    );
    assert!(stderr.starts_with("backoff: "), "{stderr}");
    assert!(
        stderr.contains(names),
        "{args:?}: {stderr:?} should name {names}"
    );
    assert!(!marker.exists(), "{args:?}: the command ran");
}

#[test]
fn the_documented_example_message_is_exact() {
    backoff(["--base", "100", "--", "true"])
        .assert()
        .code(125)
        .stderr("backoff: invalid value '100' for '--base': a duration needs a unit, like 100ms or 100s\n");
}

#[test]
fn bad_durations_are_refused() {
    for (flag, value) in [
        ("--base", ""),
        ("--base", "-5s"),
        ("--base", "100"),
        ("--cap", "1.5ns"),
        ("--cap", "NaN"),
        ("--cap", "inf"),
        ("--cap", "10000y"),
        ("--cap", "18446744073709551615s 1000ms"),
        ("--cap", "99999999999999999999999s"),
        ("--base", "5 parsecs"),
    ] {
        refused(&[flag, value], &format!("'{flag}'"));
        refused(&[flag, value], &format!("'{value}'"));
    }
}

#[test]
fn inconsistent_policies_are_refused() {
    refused(&["--base", "5s", "--cap", "1s"], "'--base'");
    refused(&["--base", "0s"], "'--base'");
    refused(&["--base", "0s", "--jitter", "none"], "'--base'");
    refused(&["--factor", "0.5"], "'--factor'");
    refused(&["--factor", "NaN"], "'--factor'");
    refused(&["--factor", "inf"], "'--factor'");
    refused(&["--factor", "1e400"], "'--factor'");
    refused(&["--max-retries", "3", "--attempts", "2"], "--attempts");
    refused(&["--forever", "--max-retries", "3"], "--forever");
}

#[test]
fn limits_and_stores_given_on_the_command_line_are_told_from_the_environment() {
    // Given twice on the command line: refused, for a run and for schedule.
    refused(&["--attempts", "2", "--forever"], "--attempts");
    backoff(["schedule", "--max-retries", "3", "--attempts", "2"])
        .assert()
        .code(125)
        .stderr(predicates::str::contains(
            "'--max-retries' cannot be used with '--attempts'",
        ));
    // From the environment, a default that a flag overrides.
    backoff([
        "schedule",
        "--attempts",
        "2",
        "--jitter",
        "none",
        "--format",
        "csv",
    ])
    .env("BACKOFF_MAX_RETRIES", "5")
    .assert()
    .success()
    .stdout(predicates::str::is_match("(?s)^[^\\n]*\\n1,[^\\n]*\\n$").unwrap());
    // A store on the command line needs a budget; one in the environment
    // is set once for every command, budgeted or not.
    refused(
        &["--budget-store", "redis://127.0.0.1:1"],
        "'--budget-store' needs",
    );
    backoff(["--", "true"])
        .env("BACKOFF_BUDGET_STORE", "redis://127.0.0.1:1")
        .assert()
        .success();
}

#[test]
fn a_zero_delay_is_allowed_when_asked_for_explicitly() {
    backoff([
        "--base",
        "0s",
        "--cap",
        "0s",
        "--jitter",
        "none",
        "--max-retries",
        "2",
        "--",
        "false",
    ])
    .assert()
    .code(1);
}

#[test]
fn bad_counts_are_refused() {
    for v in ["-1", "1.5", "x", "1000000001", "99999999999999999999999"] {
        refused(&["--max-retries", v], "'--max-retries'");
    }
    refused(&["--attempts", "0"], "'--attempts'");
    refused(&["--seed", "-3"], "'--seed'");
}

#[test]
fn bad_names_are_refused() {
    refused(&["--jitter", "fuzzy"], "'--jitter'");
    refused(&["--name", ""], "'--name'");
}

#[test]
fn bad_rules_are_refused() {
    for (flag, value) in [
        ("--retry-on", "5-1"),
        ("--retry-on", "256"),
        ("--stop-on", "0-300"),
        ("--success-on", "x"),
        ("--retry-on", "1,,2"),
        ("--retry-on", "sig:NOPE"),
        ("--stop-on", "sig:"),
        ("--retry-on", "-1"),
        ("--retry-on", "0x100"),
        ("--retry-on", "0x"),
        ("--stop-on", "0xg"),
    ] {
        refused(&[&format!("{flag}={value}")], &format!("'{flag}'"));
    }
}

#[test]
fn only_a_rule_that_can_never_match_is_refused_and_the_refusal_says_why() {
    for (args, message) in [
        (
            &["--retry-on", "3", "--stop-on", "1-5"][..],
            "invalid value '3' for '--retry-on': it can never match, as --stop-on 1-5 is checked before it and takes every outcome it names",
        ),
        (
            &["--retry-on", "sig:TERM", "--stop-on", "sig:15"],
            "invalid value 'sig:TERM' for '--retry-on': it can never match, as --stop-on sig:TERM is checked before it",
        ),
        (
            &["--retry-on", "0"],
            "invalid value '0' for '--retry-on': it can never match, as --success-on 0 (its default) is checked before it",
        ),
        (
            &[
                "--retry-on",
                "7,0-5",
                "--stop-on",
                "1-3",
                "--success-on",
                "0,4-5",
            ],
            "invalid value '0-5' for '--retry-on': it can never match, as --stop-on 1-3 and --success-on 0,4-5 are checked before it and take every outcome it names",
        ),
        (
            &["--success-on", "0,4", "--stop-on", "3-5"],
            "invalid value '4' for '--success-on': it can never match, as --stop-on 3-5 is checked before it",
        ),
        (
            &["--retry-on", "timeout", "--success-on", "0,timeout"],
            "invalid value 'timeout' for '--retry-on': it can never match, as --success-on timeout is checked before it",
        ),
    ] {
        refused(args, message);
    }
}

#[test]
fn no_command_and_unknown_options_are_refused() {
    let out = backoff(["--base", "1s"]).output().unwrap();
    assert_eq!(out.status.code(), Some(125));
    assert_eq!(String::from_utf8(out.stderr).unwrap().lines().count(), 1);
    refused(&["--no-such-flag"], "'--no-such-flag'");
}

#[test]
fn a_mistyped_flag_value_or_subcommand_is_told_the_one_it_resembles() {
    for (args, message) in [
        (
            &["--max-retry", "3", "--", "true"][..],
            "backoff: unexpected argument '--max-retry' found; did you mean '--max-retries'? (see 'backoff --help')\n",
        ),
        (
            &["schedule", "--bse", "1s"][..],
            "backoff: unexpected argument '--bse' found; did you mean '--base'? (see 'backoff --help')\n",
        ),
        (
            &["--jitter", "ful", "--", "true"][..],
            "backoff: invalid value 'ful' for '--jitter': expected one of none, full, equal, decorrelated; did you mean 'full'?\n",
        ),
        (
            &["budget", "shw", "k"][..],
            "backoff: unrecognized subcommand 'shw'; did you mean 'show'? (see 'backoff --help')\n",
        ),
    ] {
        let out = backoff(args).output().unwrap();
        assert_eq!(out.status.code(), Some(125), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), message, "{args:?}");
    }
    follow_advice(&[
        (
            &["--max-retry", "3", "--", "true"],
            &[],
            "did you mean '--max-retries'?",
            &["--max-retries", "3", "--", "true"],
        ),
        (
            &["--preset", "crul", "--", "true"],
            &[],
            "did you mean 'curl'?",
            &["--preset", "curl", "--", "true"],
        ),
    ]);
}

#[test]
fn help_and_version_exit_zero() {
    backoff(["--help"]).assert().success();
    backoff(["--version"]).assert().success();
    backoff(["schedule", "--help"]).assert().success();
}

/// What backoff prints on stdout for `args`, at a terminal `columns` wide
/// (or, with `None`, for a pipe, which clap wraps at 100 columns).
fn help_text(args: &[&str], columns: Option<&str>) -> String {
    let mut cmd = backoff(args);
    cmd.env_remove("COLUMNS");
    if let Some(c) = columns {
        cmd.env("COLUMNS", c);
    }
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{args:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The options of `cmd` as help names them: `--long`, or `-s` for an
/// option with no long name; hidden ones aside.
fn option_names(cmd: &clap::Command) -> Vec<String> {
    cmd.get_arguments()
        .filter(|a| !a.is_hide_set() && !a.is_positional())
        .map(|a| match (a.get_long(), a.get_short()) {
            (Some(long), _) => format!("--{long}"),
            (None, Some(short)) => format!("-{short}"),
            (None, None) => unreachable!("{:?}", a.get_id()),
        })
        .collect()
}

/// The options of the README's table of "the options most runs need", as
/// its first column names them (`--base`, `-q`).
fn readme_table_options() -> Vec<String> {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let table: Vec<&str> = readme
        .lines()
        .skip_while(|l| !l.contains("the options most runs need"))
        .skip(1)
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .collect();
    assert!(
        table.len() > 5,
        "no table of the options most runs need in the README"
    );
    let option = regex::Regex::new(r"`(--?[a-z][a-z-]*)").unwrap();
    table
        .iter()
        .flat_map(|row| {
            let first = row.split(" | ").next().unwrap_or_default();
            option
                .captures_iter(first)
                .map(|c| c[1].to_owned())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The options a help text lists, each as its names (`["-q",
/// "--quiet"]`), but for -h and -V.
fn listed_options(help: &str) -> Vec<Vec<String>> {
    let entry = regex::Regex::new(r"^ {2,6}(-[a-zA-Z], )?(--[a-z][a-z-]*)").unwrap();
    help.lines()
        .filter_map(|l| entry.captures(l))
        .map(|c| {
            c.iter()
                .skip(1)
                .flatten()
                .map(|m| m.as_str().trim_end_matches(", ").to_owned())
                .collect::<Vec<_>>()
        })
        .filter(|names| !names.iter().any(|n| n == "--help" || n == "--version"))
        .collect()
}

/// `backoff -h` as a terminal 100 columns wide shows it (a pseudo-terminal
/// that python3's pty module opens, COLUMNS unset), or `None` without
/// python3.
fn short_help_at_a_terminal() -> Option<String> {
    const AT_A_TERMINAL: &str = r#"
import fcntl, os, pty, struct, sys, termios
pid, fd = pty.fork()
if pid == 0:
    fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 100, 0, 0))
    os.environ.pop("COLUMNS", None)
    os.execv(sys.argv[1], [sys.argv[1], "-h"])
out = b""
while True:
    try:
        data = os.read(fd, 4096)
    except OSError:
        break
    if not data:
        break
    out += data
os.waitpid(pid, 0)
sys.stdout.write(out.decode().replace("\r\n", "\n"))
"#;
    let out = crate::support::checked_by(
        "short_help_is_the_readme_table_on_one_screen",
        "python3",
        std::process::Command::new("python3")
            .args(["-c", AT_A_TERMINAL])
            .arg(crate::support::bin()),
    )?;
    assert!(out.status.success(), "{out:?}");
    Some(String::from_utf8(out.stdout).unwrap())
}

#[test]
fn short_help_is_the_readme_table_on_one_screen() {
    let table = readme_table_options();
    let mut helps = vec![
        ("COLUMNS=100", help_text(&["-h"], Some("100"))),
        ("a pipe", help_text(&["-h"], None)),
    ];
    helps.extend(short_help_at_a_terminal().map(|h| ("a terminal of 100 columns", h)));
    for (at, help) in helps {
        let lines: Vec<&str> = help.lines().collect();
        assert!(lines.len() <= 60, "{at}: {} lines:\n{help}", lines.len());
        // Every option of the table, and no other.
        let listed = listed_options(&help);
        for option in &table {
            assert!(
                listed.iter().any(|names| names.contains(option)),
                "{at}: -h lacks {option} of the README's table:\n{help}"
            );
        }
        for names in &listed {
            assert!(
                names.iter().any(|n| table.contains(n)),
                "{at}: {names:?} is not in the README's table"
            );
        }
        for sub in [
            "schedule", "simulate", "budget", "breaker", "throttle", "lock",
        ] {
            assert!(crate::docs::usage_names(&help, sub), "{sub}:\n{help}");
        }
        let last = lines.last().unwrap();
        assert!(
            last.contains("'backoff --help'") && last.contains("'man backoff'"),
            "{last}"
        );
    }
    // The README says so.
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    assert!(readme.contains("`backoff -h` lists these on one screen"));
}

#[test]
fn the_short_helps_example_is_one_line_at_80_columns() {
    // A terminal's usual width: the example is copied whole from one line.
    let help = help_text(&["-h"], Some("80"));
    assert!(
        help.lines()
            .any(|l| l == "Options go before the command: backoff --max-retries 3 -- curl -fsS URL"),
        "{help}"
    );
}

#[test]
fn long_help_names_every_option_of_every_command() {
    use clap::CommandFactory;
    fn check(cmd: &clap::Command, path: &[&str]) {
        let args = [path, &["--help"]].concat();
        let help = help_text(&args, Some("80"));
        for flag in option_names(cmd) {
            let named = help.contains(&format!("{flag} ")) || help.contains(&format!("{flag}\n"));
            assert!(named, "{args:?} lacks {flag}");
        }
        for sub in cmd.get_subcommands() {
            assert!(
                help.contains(sub.get_name()),
                "{args:?} lacks {}",
                sub.get_name()
            );
            check(sub, &[path, &[sub.get_name()]].concat());
        }
    }
    let mut cmd = backoff_cli::cli::Cli::command();
    cmd.build();
    assert!(option_names(&cmd).len() > 50);
    check(&cmd, &[]);
    // The exit statuses are in --help, not in -h.
    assert!(help_text(&["--help"], None).contains("127 command not found"));
}

#[test]
fn help_names_each_variable_without_a_value() {
    // Even when one is set: a value (the store's URL) is never shown.
    let out = backoff(["--help"])
        .env("BACKOFF_BUDGET_STORE", "redis://:secret@127.0.0.1")
        .env("BACKOFF_RETRY_AFTER_MAX", "9m")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("[env: BACKOFF_RETRY_AFTER_MAX]"), "{help}");
    assert!(
        !help.contains("=]") && !help.contains("secret") && !help.contains("=9m"),
        "{help}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Whatever string reaches a value parser, backoff answers with a status,
    /// never a panic (exit 101) or a signal.
    #[test]
    fn no_value_makes_backoff_panic(
        flag in prop::sample::select(vec![
            "--base", "--cap", "--factor", "--jitter", "--max-retries", "--attempts",
            "--seed", "--retry-on", "--stop-on", "--success-on", "--name",
        ]),
        value in "\\PC{0,24}",
    ) {
        let out = backoff([&format!("{flag}={value}"), "--max-retries=0", "--", "true"])
            .output()
            .unwrap();
        let code = out.status.code();
        prop_assert!(code == Some(0) || code == Some(125), "{flag}={value:?}: {out:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// The same for the subcommands' values.
    #[test]
    fn no_subcommand_value_makes_backoff_panic(
        (sub, flag) in prop::sample::select(vec![
            ("schedule", "--format"), ("schedule", "--base"), ("schedule", "--max-retries"),
            ("simulate", "--runs"), ("simulate", "--base"), ("simulate", "--cap"),
            ("simulate", "--factor"), ("simulate", "--jitter"), ("simulate", "--seed"),
            ("simulate", "--strategy"), ("simulate", "--format"),
            ("budget show", "--budget-burst"), ("budget show", "--format"), ("budget show", "KEY"),
        ]),
        value in "\\PC{0,24}",
    ) {
        let dir = TempDir::new("prop-sub");
        let mut cmd = backoff(sub.split(' '));
        match (sub, flag) {
            ("budget show", "KEY") => {
                cmd.arg("--").arg(&value);
            }
            ("budget show", _) => {
                cmd.arg("k").arg(format!("{flag}={value}"));
            }
            _ => {
                cmd.arg(format!("{flag}={value}"));
            }
        }
        if sub == "simulate" {
            cmd.args(["--clients", "3", "--runs", "1"]);
        }
        if sub.starts_with("budget") {
            cmd.arg("--budget-dir").arg(dir.join("b"));
        }
        let out = cmd.output().unwrap();
        let code = out.status.code();
        prop_assert!(code == Some(0) || code == Some(125), "{sub} {flag}={value:?}: {out:?}");
    }
}

#[test]
fn control_characters_from_the_user_are_escaped_in_backoffs_lines() {
    let out = backoff(["--base", "1\u{1b}[2J\nx", "--", "true"])
        .assert()
        .code(125)
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        err,
        "backoff: invalid value '1\\u{1b}[2J\\nx' for '--base': invalid character at 1\n"
    );
    let out = backoff(["--", "no\rsuch\u{7}"])
        .assert()
        .code(127)
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("cannot run 'no\\rsuch\\u{7}'"), "{err}");
    assert!(!err.chars().any(|c| c.is_control() && c != '\n'), "{err:?}");
}

#[test]
fn durations_below_a_microsecond_are_shown_as_they_are_not_as_zero() {
    // 5 ns are up before the first attempt could start: none does, and
    // the limit is shown as it was given.
    backoff(["--max-time", "5ns", "--", "false"])
        .assert()
        .code(124)
        .stderr(predicates::str::contains(
            "--max-time 5ns passed before the first attempt could start",
        ));
    backoff([
        "schedule", "--base", "250ns", "--cap", "250ns", "--jitter", "none",
    ])
    .assert()
    .success()
    .stdout(predicates::str::contains("250ns"));
}

#[test]
fn a_missing_value_key_or_subcommand_is_named_on_one_line() {
    for (args, message) in [
        (&["--name"][..], "backoff: --name needs a value\n"),
        (&["--breaker"][..], "backoff: --breaker needs a value\n"),
        (
            &["breaker", "show"][..],
            "backoff: missing <KEY> (usage: backoff breaker show <KEY>)\n",
        ),
        (
            &["budget", "reset"][..],
            "backoff: missing <KEY> (usage: backoff budget reset <KEY>)\n",
        ),
        (
            &["breaker"][..],
            "backoff: a subcommand is missing (usage: backoff breaker <COMMAND>)\n",
        ),
    ] {
        let out = backoff(args).output().unwrap();
        assert_eq!(out.status.code(), Some(125), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), message, "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// backoff's stderr for `args` with the environment `env` (and none of the
/// caller's `BACKOFF_` variables), and its exit code.
fn run_with(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut cmd = backoff(args);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("BACKOFF_") {
            cmd.env_remove(k);
        }
    }
    cmd.envs(env.iter().copied());
    let out = cmd.output().unwrap();
    (out.status.code(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn refusals_quote_the_value_as_given_and_say_where_it_came_from() {
    for (args, env, line) in [
        (
            &["--base", "0ms"][..],
            &[][..],
            "invalid value '0ms' for '--base': must be above zero",
        ),
        (
            &["--cap", "50ms"],
            &[],
            "invalid value '100ms' for '--base' (its default): greater than --cap (50ms)",
        ),
        (
            &["--base", "1m30s", "--cap", "1m"],
            &[],
            "invalid value '1m30s' for '--base': greater than --cap (1m)",
        ),
        (
            &[],
            &[("BACKOFF_CAP", "1ms")],
            "invalid value '100ms' for '--base' (its default): greater than --cap (1ms, from BACKOFF_CAP)",
        ),
        (
            &[],
            &[("BACKOFF_BASE", "0s")],
            "invalid value '0s' for BACKOFF_BASE (from the environment, for '--base'): must be above zero",
        ),
        (
            &["--timeout", "0s"],
            &[],
            "invalid value '0s' for '--timeout': must be above zero",
        ),
        // No advice of a zero with a unit, which --timeout refuses too.
        (
            &["--timeout", "0"],
            &[],
            "invalid value '0' for '--timeout': a duration needs a unit (ms, s, m, h or d)",
        ),
        // A bare number of seconds, as an outer backoff passes it on.
        (
            &[],
            &[("BACKOFF_TIMEOUT", "0")],
            "invalid value '0' for BACKOFF_TIMEOUT (from the environment, for '--timeout'): must be above zero",
        ),
        (
            &["--delays", "0ms,1s"],
            &[],
            "invalid value '0ms,1s' for '--delays': a bound of zero needs --jitter none",
        ),
        (
            &["--poll", "0s", "--jitter", "full"],
            &[],
            "invalid value '0s' for '--poll': an interval of zero needs --jitter none",
        ),
        (
            &["--ping-timeout", "0s"],
            &[],
            "invalid value '0s' for '--ping-timeout': must be above zero",
        ),
        (
            &["--splay", "2m"],
            &[("BACKOFF_MAX_TIME", "1m")],
            "invalid value '2m' for '--splay': its wait before the first attempt can take all of --max-time (1m, from BACKOFF_MAX_TIME)",
        ),
    ] {
        let (code, stderr) = run_with(&[args, &["--", "true"]].concat(), env);
        assert_eq!(code, Some(125), "{args:?} {env:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with(&format!("backoff: {line}")),
            "{args:?} {env:?}: {stderr:?} is not {line:?}"
        );
    }
}

/// A command line, its environment, the advice its message gives, and the
/// command line that follows the advice.
type Advice<'a> = (
    &'a [&'a str],
    &'a [(&'a str, &'a str)],
    &'a str,
    &'a [&'a str],
);

/// Runs each command line of `cases`, which must give its advice, then the
/// one that follows it, which must be neither refused nor given it again.
fn follow_advice(cases: &[Advice]) {
    for &(bad, env, advice, fixed) in cases {
        let (_, stderr) = run_with(bad, env);
        assert!(
            stderr.contains(advice),
            "{bad:?}: {stderr:?} lacks {advice:?}"
        );
        let (code, stderr) = run_with(fixed, env);
        assert_ne!(code, Some(125), "{fixed:?}: {stderr}");
        assert!(!stderr.contains(advice), "{fixed:?}: {stderr}");
    }
}

#[test]
fn every_piece_of_advice_followed_literally_works() {
    let dir = TempDir::new("advice");
    let budget_dir = dir.path().to_str().unwrap().to_owned();
    std::fs::write(dir.join("k.budget"), "garbage").unwrap();
    let no_home = [("HOME", ""), ("XDG_STATE_HOME", "")];
    let plot = format!("{budget_dir}/plot.svg");
    // What is refused (or said), the advice in its message, and the
    // command line that follows it, which must be neither refused nor
    // given the same advice.
    let cases: &[Advice] = &[
        (
            &["--base", "0s", "--", "true"],
            &[],
            "add --cap 0s --jitter none",
            &[
                "--base", "0s", "--cap", "0s", "--jitter", "none", "--", "true",
            ],
        ),
        (
            &["--delays", "0s,1s", "--", "true"],
            &[],
            "needs --jitter none",
            &["--delays", "0s,1s", "--jitter", "none", "--", "true"],
        ),
        (
            &["--poll", "0s", "--jitter", "full", "--", "true"],
            &[],
            "needs --jitter none",
            &["--poll", "0s", "--jitter", "none", "--", "true"],
        ),
        (
            &["--delays", "1s", "--jitter", "decorrelated", "--", "true"],
            &[],
            "give --jitter full, equal or none",
            &["--delays", "1s", "--jitter", "full", "--", "true"],
        ),
        (
            &["--attempts", "99999999999", "--", "true"],
            &[],
            "use --forever for no limit",
            &["--forever", "--", "true"],
        ),
        (
            &["--budget", "j", "--", "true"],
            &no_home,
            "give --budget-dir DIR",
            &["--budget", "j", "--budget-dir", &budget_dir, "--", "true"],
        ),
        (
            &["budget", "show", "k", "--budget-dir", &budget_dir],
            &[],
            "'backoff budget reset k' with the same --budget-dir repairs it",
            &["budget", "reset", "k", "--budget-dir", &budget_dir],
        ),
        (
            &["--bogus", "--", "true"],
            &[],
            "(see 'backoff --help')",
            &["--help"],
        ),
        (
            &["simulate", "--format", "svg"],
            &[],
            "(use --plot FILE)",
            &["simulate", "--clients", "2", "--runs", "1", "--plot", &plot],
        ),
    ];
    follow_advice(cases);
    // The repaired budget is shown.
    let (code, stderr) = run_with(&["budget", "show", "k", "--budget-dir", &budget_dir], &[]);
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn more_advice_followed_literally_works() {
    let dir = TempDir::new("more-advice");
    let budget_dir = dir.path().to_str().unwrap().to_owned();
    std::fs::write(dir.join("c.breaker"), "garbage").unwrap();
    // No server listens on port 1: a store there is unavailable at once.
    let cluster = "redis+cluster://u:pw@127.0.0.1:1,u:pw@127.0.0.1:2";
    let cases: &[Advice] = &[
        (
            &["breaker", "show", "c", "--budget-dir", &budget_dir],
            &[],
            "'backoff breaker reset c' with the same --budget-dir repairs it",
            &["breaker", "reset", "c", "--budget-dir", &budget_dir],
        ),
        (
            &["--timeout", "5", "--", "true"],
            &[],
            "like 5ms or 5s",
            &["--timeout", "5s", "--", "true"],
        ),
        (
            &["--max-retries", "99999999999", "--", "true"],
            &[],
            "use --forever for no limit",
            &["--forever", "--", "true"],
        ),
        (
            &["--retry-after-pattern", "retry in [0-9]+", "--", "true"],
            &[],
            "like 'retry in ([0-9]+)'",
            &["--retry-after-pattern", "retry in ([0-9]+)", "--", "true"],
        ),
        (
            &["--until-failure", "false"],
            &[],
            "put '--' before the command",
            &["--until-failure", "--", "false"],
        ),
        (
            &["--budget-store", "redis://127.0.0.1:1", "--", "true"],
            &[],
            "needs '--budget KEY', '--breaker KEY', '--throttle KEY', '--lock KEY' or '--alert-after N'",
            &[
                "--budget-store",
                "redis://127.0.0.1:1",
                "--budget",
                "j",
                "--",
                "true",
            ],
        ),
        (
            &["--budget-store", cluster, "--budget", "j", "--", "true"],
            &[],
            "give the user and password once, before the first host",
            &[
                "--budget-store",
                "redis+cluster://u:pw@127.0.0.1:1,127.0.0.1:2",
                "--budget",
                "j",
                "--",
                "true",
            ],
        ),
        (
            &["--preset", "curl", "--", "curl", "-s", "file:///dev/null"],
            &[],
            "curl runs without -f (--fail), so an HTTP error exits 0 and is not retried; add -f",
            &[
                "--preset",
                "curl",
                "--",
                "curl",
                "-f",
                "-s",
                "file:///dev/null",
            ],
        ),
    ];
    follow_advice(cases);
}

#[test]
fn the_advice_of_what_a_preset_or_a_program_cannot_do_followed_literally_works() {
    // Each case as command lines of plain words: what is said, the advice,
    // and the command line that follows it.
    let cases = [
        (
            "--preset none --retry-after -- curl -fs file:///dev/null",
            "add -D /dev/stderr",
            "--preset none --retry-after -- curl -fs -D /dev/stderr file:///dev/null",
        ),
        (
            "-- curl -fs -D /dev/null file:///dev/null",
            "use -D /dev/stderr, or drop -D and the preset reads them",
            "-- curl -fs file:///dev/null",
        ),
        (
            "-- curl -fs --retry 2 file:///dev/null",
            "drop --retry, or give backoff --attempts 1",
            "-- curl -fs file:///dev/null",
        ),
        (
            "-- curl -fs --retry 2 file:///dev/null",
            "drop --retry, or give backoff --attempts 1",
            "--attempts 1 -- curl -fs --retry 2 file:///dev/null",
        ),
        (
            "--attempts 3 -- curl -fs --retry 2 file:///dev/null",
            "drop --retry, or make backoff's --attempts 1",
            "--attempts 1 -- curl -fs --retry 2 file:///dev/null",
        ),
        (
            "--max-retries 2 -- curl -fs --retry 2 file:///dev/null",
            "drop --retry, or make backoff's --max-retries 0",
            "--max-retries 0 -- curl -fs --retry 2 file:///dev/null",
        ),
        (
            "-- wget -q -S -t 3 nope://x",
            "give wget --tries=1, or give backoff --attempts 1",
            "-- wget -q -S -t 3 --tries=1 nope://x",
        ),
        (
            "--retry-after -- wget -nv nope://x",
            "add -S",
            "--retry-after -- wget -nv -S nope://x",
        ),
        (
            "--preset wget -- curl -fs file:///dev/null",
            "drop --preset wget, and curl's own preset applies",
            "-- curl -fs file:///dev/null",
        ),
        (
            "-- wget -q -O /dev/null nope://x",
            "use -nv instead of -q",
            "-- wget -nv -O /dev/null nope://x",
        ),
    ];
    let words = |line: &'static str| line.split_whitespace().collect::<Vec<_>>();
    let lines: Vec<_> = cases
        .iter()
        .map(|&(bad, advice, fixed)| (words(bad), advice, words(fixed)))
        .collect();
    let mut advice: Vec<Advice> = lines
        .iter()
        .map(|(bad, advice, fixed)| (&bad[..], &[][..], *advice, &fixed[..]))
        .collect();
    // A shell's one argument holds spaces.
    advice.push((
        &[
            "--preset",
            "curl",
            "--",
            "sh",
            "-c",
            "curl -fs file:///dev/null",
        ],
        &[],
        "run curl directly: backoff -- curl ARGS...",
        &["--", "curl", "-fs", "file:///dev/null"],
    ));
    follow_advice(&advice);
}

#[test]
fn an_oversized_set_of_output_patterns_is_refused_before_it_is_all_compiled() {
    let dir = TempDir::new("patterns");
    let peak = dir.join("peak");
    // Each of these takes some 5 to 8 MiB compiled (Unicode's \w, over a
    // hundred times): two fit, the third is past 16 MiB.
    let patterns: Vec<String> = (0..60).map(|i| format!(r"\w{{1{i:02}}}")).collect();
    let mut cmd = std::process::Command::new("/usr/bin/time");
    crate::support::plain(&mut cmd)
        .args(["-f", "%M", "-o"])
        .arg(&peak)
        .arg(crate::support::bin());
    cmd.args(["--attempts", "1"]);
    for p in &patterns {
        cmd.args(["--until-output", p]);
    }
    let out = cmd
        .args(["--", "true"])
        .output()
        .expect("GNU time at /usr/bin/time");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(r"backoff: invalid value '\w{102}' for '--until-output': the output patterns together take more than 16 MiB compiled (those before it 16 MiB); "),
        "{stderr}"
    );
    // GNU time says how the command exited first, then the peak in KiB.
    let said = std::fs::read_to_string(&peak).unwrap();
    let kib: u64 = said
        .lines()
        .last()
        .unwrap_or_default()
        .parse()
        .expect(&said);
    assert!(kib < 64 << 10, "peak {kib} KiB");
}

#[test]
fn ordinary_output_patterns_are_accepted_and_the_advice_on_one_too_large_works_as_written() {
    // Unicode's \w 64 times takes some 3 MiB compiled; both together too.
    let word = "w".repeat(200);
    backoff([
        "--attempts",
        "1",
        "--until-output",
        r"\w{64}",
        "--retry-if-output",
        r"\b\w{32,64}\b",
        "--",
        "echo",
        &word,
    ])
    .assert()
    .success();
    backoff(["--attempts", "1", "--until-output", r"\b\w{32,64}\b"])
        .args(["--", "echo", &format!("a {} b", &word[..40])])
        .assert()
        .success();
    // What is refused, the advice, and the command line that follows it:
    // a pattern too large on its own, and three that fit alone but not
    // together.
    let run = |patterns: &[String]| {
        let mut cmd = backoff(["--attempts", "1"]);
        for p in patterns {
            cmd.args(["--until-output", p]);
        }
        cmd.args(["--", "echo", &word]).output().unwrap()
    };
    let too_large = [r"\w{200}"];
    let together = [r"\w{100}", r"\w{100}", r"\w{100}"];
    for (patterns, advice) in [
        (
            &too_large[..],
            "it takes more than 8 MiB compiled, the most one pattern may take; with '(?-u)' at its start, for ASCII classes, it takes 32 KiB",
        ),
        (
            &together[..],
            "the output patterns together take more than 16 MiB compiled (those before it 16 MiB); with '(?-u)' at the start of each, for ASCII classes, they take 48 KiB",
        ),
    ] {
        let given: Vec<String> = patterns.iter().map(|p| (*p).to_owned()).collect();
        let out = run(&given);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{stderr}");
        assert!(stderr.ends_with(&format!("{advice}\n")), "{stderr}");
        let fixed: Vec<String> = given.iter().map(|p| format!("(?-u){p}")).collect();
        let out = run(&fixed);
        assert!(
            out.status.success(),
            "{fixed:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn a_set_of_long_output_patterns_is_refused_by_its_length_in_one_short_line() {
    // Each is small compiled (a comment, in verbose mode), but parsed anew
    // for each size it is tried in: 14 of them are past 64 KiB of text.
    let patterns: Vec<String> = (0..20)
        .map(|i| format!("(?x){i:02}#{}", "x".repeat(4993)))
        .collect();
    let mut args = vec!["--attempts", "1"];
    for p in &patterns {
        args.extend(["--until-output", p]);
    }
    args.extend(["--", "true"]);
    let (code, stderr) = run_with(&args, &[]);
    assert_eq!(code, Some(125), "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "backoff: invalid value '(?x)13#{}… (5000 bytes)' for '--until-output': the output patterns together are longer than 64 KiB\n",
            "x".repeat(53)
        )
    );
}

#[test]
fn output_patterns_before_a_bad_value_do_not_make_it_the_environment_s() {
    // Two patterns that fit the limit together, but not twice over: a
    // command line parsed again (to tell where a bad value came from)
    // starts afresh.
    let (code, stderr) = run_with(
        &[
            "--until-output",
            r"\w{100}",
            "--until-output",
            r"\w{100}",
            "--base",
            "xyz",
            "--",
            "true",
        ],
        &[],
    );
    assert_eq!(code, Some(125), "{stderr}");
    assert!(
        stderr.starts_with("backoff: invalid value 'xyz' for '--base': "),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn a_splay_as_long_as_max_time_and_lock_options_without_a_lock_are_refused() {
    refused(&["--splay", "2m", "--max-time", "1m"], "'--splay'");
    refused(&["--splay", "1m", "--max-time", "1m"], "--max-time (1m)");
    for flag in [
        &["--lock-wait", "5s"][..],
        &["--lock-ttl", "1m"],
        &["--lock-exit", "0"],
        &["--lock-fail", "open"],
    ] {
        refused(flag, &format!("{} applies to a lock", flag[0]));
        refused(flag, "add --lock KEY");
    }
    // A --splay shorter than --max-time runs; so do the lock's options
    // with a lock.
    let dir = TempDir::new("splay-lock");
    backoff([
        "--splay",
        "1ms",
        "--max-time",
        "1m",
        "--budget-dir",
        dir.path().to_str().unwrap(),
        "--lock",
        "job",
        "--lock-wait",
        "5s",
        "--lock-exit",
        "0",
        "--lock-fail",
        "open",
        "--",
        "true",
    ])
    .assert()
    .success();
}

#[test]
fn backoffs_own_option_after_the_separator_is_told_to_go_before_it() {
    follow_advice(&[
        (
            &["-q", "--", "--max-retries", "0", "sh", "-c", "exit 0"],
            &[],
            "'--max-retries' is backoff's own option, which goes before '--': backoff -q --max-retries 0 -- sh -c 'exit 0'",
            &["-q", "--max-retries", "0", "--", "sh", "-c", "exit 0"],
        ),
        (
            &["--", "--forever", "true"],
            &[],
            "'--forever' is backoff's own option, which goes before '--': backoff --forever -- true",
            &["--forever", "--", "true"],
        ),
        (
            &["--", "-q", "true"],
            &[],
            "'-q' is backoff's own option, which goes before '--': backoff -q -- true",
            &["-q", "--", "true"],
        ),
    ]);
    let (code, stderr) = run_with(&["--", "--max-retries=0"], &[]);
    assert_eq!(code, Some(127), "{stderr}");
    assert!(
        stderr.ends_with("; '--max-retries' is backoff's own option, which goes before '--'\n"),
        "{stderr}"
    );
    // A program named like no option of backoff's gets no such advice.
    let (code, stderr) = run_with(&["--", "--no-such-option"], &[]);
    assert_eq!(code, Some(127), "{stderr}");
    assert!(!stderr.contains("backoff's own option"), "{stderr}");
}

#[test]
fn backoffs_own_option_after_the_separator_and_before_it_too_is_told_to_be_taken_out() {
    // Put before '--' once more, it would be refused: the advice is to take
    // it out of the command, which then runs.
    follow_advice(&[
        (
            &["-q", "--", "--quiet", "true"],
            &[],
            "'--quiet' is backoff's own option, which goes before '--' and is given there already: take it out of the command",
            &["-q", "--", "true"],
        ),
        (
            &["--max-retries=2", "--", "--max-retries", "0", "true"],
            &[],
            "'--max-retries' is backoff's own option, which goes before '--' and is given there already: take it out of the command",
            &["--max-retries=2", "--", "true"],
        ),
    ]);
    // A flag given a value goes without it.
    follow_advice(&[(
        &["--", "--quiet=1", "true"],
        &[],
        "'--quiet' is backoff's own option, which goes before '--' and takes no value: backoff --quiet -- true",
        &["--quiet", "--", "true"],
    )]);
    // From the environment it is no repeat: the line moves it.
    follow_advice(&[(
        &["--", "--max-retries", "0", "true"],
        &[("BACKOFF_MAX_RETRIES", "2")],
        "'--max-retries' is backoff's own option, which goes before '--': backoff --max-retries 0 -- true",
        &["--max-retries", "0", "--", "true"],
    )]);
}

#[test]
fn the_short_help_shows_what_a_cron_job_needs_and_the_long_help_names_75_for_the_lock() {
    let short = help_text(&["-h"], Some("100"));
    let listed = listed_options(&short);
    for option in ["--splay", "--output", "--lock", "--ping"] {
        assert!(
            listed.iter().any(|names| names.iter().any(|n| n == option)),
            "-h lacks {option}:\n{short}"
        );
    }
    let long = help_text(&["--help"], Some("100")).replace('\n', " ");
    let status = long
        .split("Exit status: ")
        .nth(1)
        .and_then(|s| s.split("Traces:").next())
        .unwrap_or_default()
        .to_owned();
    let seventy_five = status.split("; 75 ").nth(1).unwrap_or_default();
    let seventy_five = seventy_five.split("; 124 ").next().unwrap_or_default();
    for named in ["--breaker", "--lock", "--throttle", "--lock-exit"] {
        assert!(
            seventy_five.contains(named),
            "75: {seventy_five:?} lacks {named}"
        );
    }
}
