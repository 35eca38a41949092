//! backoff's man pages: backoff(1), and a page for each subcommand whose
//! synopsis is its line of the usage and which lists every option of the
//! subcommand. `clap_mangen` renders the name, the description and the
//! options from the clap definition; the hand-written sections
//! (`sections`) tell the rest.

use std::fmt::Write as _;

use anyhow::Context;

use super::sections::{
    ALERTS, BREAKER, BUDGET, CHECK_INS, CI_LOGS, CLASSIFICATION, CRON, ENVIRONMENT, EXAMPLES,
    EXIT_STATUS, GOALS, HOOKS, LOCKS, ONCE_PER, OUTPUT, PRESETS, PROCESSES, REPORTING, SIGNALS,
    SIMULATION, THROTTLE, TRACES, WINDOWS,
};

/// The hand-written sections of backoff(1), in their order after the
/// options and the subcommands.
const SECTIONS: &[&str] = &[
    CLASSIFICATION,
    GOALS,
    HOOKS,
    CRON,
    CHECK_INS,
    ALERTS,
    OUTPUT,
    PRESETS,
    REPORTING,
    TRACES,
    CI_LOGS,
    BUDGET,
    BREAKER,
    THROTTLE,
    LOCKS,
    ONCE_PER,
    SIMULATION,
    ENVIRONMENT,
    PROCESSES,
    SIGNALS,
    WINDOWS,
    EXIT_STATUS,
    EXAMPLES,
];

/// The section of backoff(1) that tells more about each subcommand.
pub const MORE_ABOUT: &[(&str, &str)] = &[
    ("schedule", "CLASSIFYING ATTEMPTS"),
    ("simulate", "SIMULATION"),
    ("budget", "RETRY BUDGET"),
    ("breaker", "CIRCUIT BREAKER"),
    ("throttle", "ADAPTIVE THROTTLE"),
    ("lock", "LOCKS"),
    ("once", "ONCE PER PERIOD"),
];

/// The pages of `cmd`: `backoff` and one for each subcommand
/// (`backoff-budget`).
pub fn page_names(cmd: &clap::Command) -> Vec<String> {
    std::iter::once(cmd.get_name().to_owned())
        .chain(
            cmd.get_subcommands()
                .map(|s| format!("{}-{}", cmd.get_name(), s.get_name())),
        )
        .collect()
}

/// The page `name` of `cmd` (backoff's command, as the clap definition
/// gives it), dated `date` (YYYY-MM-DD).
pub fn page(cmd: &clap::Command, name: &str, date: &str) -> anyhow::Result<String> {
    // Built, the subcommands have the settings they inherit (no `help`
    // subcommand).
    let mut cmd = cmd.clone();
    cmd.build();
    if name == cmd.get_name() {
        return main_page(&cmd, date);
    }
    let sub = cmd
        .get_subcommands()
        .find(|s| format!("{}-{}", cmd.get_name(), s.get_name()) == name)
        .with_context(|| format!("no man page '{name}'"))?;
    subcommand_page(&cmd, sub, date)
}

/// `text` as roff text: a backslash and a dash escaped, and a line that
/// would start with a control character kept text.
fn roff_escape(text: &str) -> String {
    let text = text.replace('\\', "\\e").replace('-', "\\-");
    if text.starts_with(['.', '\'']) {
        format!("\\&{text}")
    } else {
        text
    }
}

/// One usage line in roff: the words typed as they are (`backoff`,
/// `budget`, `--`) in bold, the words that stand for something (`KEY`,
/// `OPTIONS`) in italics, brackets, bars and dots as they are.
fn usage_line(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.trim().chars().peekable();
    let in_word = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    while let Some(&c) = chars.peek() {
        if in_word(c) {
            let mut word = String::new();
            while let Some(&c) = chars.peek() {
                if !in_word(c) {
                    break;
                }
                word.push(c);
                chars.next();
            }
            let font = if word.chars().any(|c| c.is_ascii_lowercase()) || word == "--" {
                'B'
            } else {
                'I'
            };
            let _ = write!(out, "\\f{font}{}\\fR", roff_escape(&word));
        } else {
            out.push(c);
            chars.next();
        }
    }
    out
}

/// The SYNOPSIS section: `lines`, one usage each.
fn synopsis(lines: &[String]) -> String {
    let lines: Vec<String> = lines.iter().map(|l| usage_line(l)).collect();
    format!(".SH SYNOPSIS\n{}\n", lines.join("\n.br\n"))
}

/// The lines of `cmd`'s usage, as `-h` shows them after "Usage: ".
fn usage_lines(cmd: &clap::Command) -> Vec<String> {
    let usage = cmd.clone().render_usage().to_string();
    usage
        .lines()
        .map(|l| l.trim().trim_start_matches("Usage:").trim().to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

/// The usage lines of the subcommand `name` of `cmd`: those of `cmd`
/// that name it, alone or among others (`backoff budget|breaker show|reset
/// KEY`), with its name alone.
fn usage_of(cmd: &clap::Command, name: &str) -> anyhow::Result<Vec<String>> {
    let lines: Vec<String> = usage_lines(cmd)
        .into_iter()
        .filter_map(|l| {
            let mut words = l.splitn(3, ' ');
            let (program, names, rest) = (words.next()?, words.next()?, words.next()?);
            (program == cmd.get_name() && names.split('|').any(|n| n == name))
                .then(|| format!("{program} {name} {rest}"))
        })
        .collect();
    anyhow::ensure!(!lines.is_empty(), "no usage line of {name}");
    Ok(lines)
}

/// The SEE ALSO section: the other pages, then `others`.
fn see_also(cmd: &clap::Command, page: &str, others: &[&str]) -> String {
    let pages: Vec<String> = page_names(cmd)
        .iter()
        .filter(|p| *p != page)
        .map(|p| format!("\\fB\\%{}\\fR(1)", roff_escape(p)))
        .chain(others.iter().map(|o| format!("\\fB\\%{o}\\fR(1)")))
        .collect();
    format!(".SH \"SEE ALSO\"\n{}\n", pages.join(", "))
}

/// The `.TH` line of page `name`, dated `date` (YYYY-MM-DD).
fn title(cmd: &clap::Command, name: &str, date: &str) -> String {
    format!(
        ".TH {} 1 {date} \"{} {}\"\n",
        roff_escape(&name.to_uppercase()),
        cmd.get_name(),
        cmd.get_version().unwrap_or_default()
    )
}

/// What `clap_mangen` renders, tidied for `mandoc -T lint`: the roff
/// package's preamble (which defines `\*(Aq`) once, not before each
/// section; no blank line between two `.br` (before the list of possible
/// values), which is a paragraph break that both `.br` undo, but one
/// `.sp`; no space at the end of a line.
fn tidy(page: &str) -> String {
    const PREAMBLE: &str = ".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n";
    let body = page.replace(PREAMBLE, "").replace(".br\n\n.br\n", ".sp\n");
    let mut out = String::from(PREAMBLE);
    for line in body.lines() {
        out.push_str(&ascii(line.trim_end()));
        out.push('\n');
    }
    out
}

/// `line` in ASCII, as roff reads its input: each other character as the
/// glyph that names it (`×` as `\(mu`, `·` as `\(pc`, any other as
/// `\[u2026]`), where groff would read its UTF-8 bytes as Latin-1
/// characters and warn of some.
fn ascii(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for c in line.chars() {
        match c {
            '×' => out.push_str("\\(mu"),
            '·' => out.push_str("\\(pc"),
            c if c.is_ascii() => out.push(c),
            c => {
                let _ = write!(out, "\\[u{:04X}]", u32::from(c));
            }
        }
    }
    out
}

/// The options of a subcommand's subcommands (`budget show` and `budget
/// reset`), each once, in the order they come; one that not all of them
/// take says which do. `sub` is built, as part of backoff's command.
fn options_of_commands(sub: &clap::Command) -> clap::Command {
    let commands: Vec<&clap::Command> = sub.get_subcommands().collect();
    let mut union = clap::Command::new("options")
        .disable_help_flag(true)
        .disable_version_flag(true);
    let mut seen = Vec::new();
    for command in &commands {
        for arg in command.get_arguments() {
            if seen.contains(arg.get_id()) {
                continue;
            }
            seen.push(arg.get_id().clone());
            let takers: Vec<&str> = commands
                .iter()
                .filter(|c| c.get_arguments().any(|a| a.get_id() == arg.get_id()))
                .map(|c| c.get_name())
                .collect();
            let mut arg = arg.clone().display_order(seen.len());
            if takers.len() < commands.len() {
                let only = format!(" ({} only)", takers.join(", "));
                arg = match (arg.get_long_help(), arg.get_help()) {
                    (Some(long), _) => {
                        let long = format!("{long}{only}");
                        arg.long_help(long)
                    }
                    (None, Some(help)) => {
                        let help = format!("{help}{only}");
                        arg.help(help)
                    }
                    (None, None) => arg.help(only.trim().to_owned()),
                };
            }
            union = union.arg(arg);
        }
    }
    union
}

/// A section of `command`'s page as `clap_mangen` renders it.
fn rendered(
    command: clap::Command,
    render: fn(&clap_mangen::Man, &mut dyn std::io::Write) -> std::io::Result<()>,
) -> anyhow::Result<String> {
    let mut out = Vec::new();
    render(&clap_mangen::Man::new(command), &mut out)?;
    Ok(String::from_utf8(out)?)
}

/// The OPTIONS section of `command`'s page: `clap_mangen` renders a
/// section of each help heading (POLICY, TIME LIMITS); they are
/// subsections of OPTIONS here, under the heading's own words, so that the
/// page's sections are its hand-written ones.
fn options_section(command: clap::Command) -> anyhow::Result<String> {
    let headings: Vec<String> = command
        .get_arguments()
        .filter_map(clap::Arg::get_help_heading)
        .map(str::to_owned)
        .collect();
    let rendered = rendered(command, clap_mangen::Man::render_options_section)?;
    let mut out = String::from(".SH OPTIONS\n");
    for line in rendered.lines() {
        match line.strip_prefix(".SH ") {
            Some("OPTIONS") => {}
            Some(title) => {
                let title = title.trim_matches('"');
                let heading = headings
                    .iter()
                    .find(|h| h.to_uppercase() == title)
                    .with_context(|| format!("no heading {title}"))?;
                let _ = writeln!(out, ".SS \"{}\"", roff_escape(heading));
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    Ok(out)
}

/// The page of subcommand `sub` of `cmd`, dated `date`.
fn subcommand_page(cmd: &clap::Command, sub: &clap::Command, date: &str) -> anyhow::Result<String> {
    let name = format!("{}-{}", cmd.get_name(), sub.get_name());
    let about = sub.get_about().map(ToString::to_string).unwrap_or_default();
    let mut page = title(cmd, &name, date);
    let _ = write!(
        page,
        ".SH NAME\n{} \\- {}\n",
        roff_escape(&name),
        roff_escape(&about)
    );
    page.push_str(&synopsis(&usage_of(cmd, sub.get_name())?));
    page.push_str(&rendered(
        sub.clone(),
        clap_mangen::Man::render_description_section,
    )?);
    if let Some((_, section)) = MORE_ABOUT.iter().find(|(s, _)| *s == sub.get_name()) {
        let _ = write!(page, ".PP\nSee \\fB{section}\\fR in \\fBbackoff\\fR(1).\n");
    }
    if sub.has_subcommands() {
        page.push_str(".SH COMMANDS\n");
        for command in sub.get_subcommands() {
            let about = command
                .get_about()
                .map(ToString::to_string)
                .unwrap_or_default();
            let _ = write!(
                page,
                ".TP\n\\fB{}\\fR\n{}\n",
                roff_escape(command.get_name()),
                roff_escape(&about)
            );
        }
    }
    let options = if sub.has_subcommands() {
        options_of_commands(sub)
    } else {
        sub.clone()
    };
    page.push_str(&options_section(options)?);
    page.push_str(&see_also(cmd, &name, &[]));
    Ok(tidy(&page))
}

/// backoff(1), dated `date`.
fn main_page(cmd: &clap::Command, date: &str) -> anyhow::Result<String> {
    let man = clap_mangen::Man::new(cmd.clone());
    let mut page = title(cmd, cmd.get_name(), date).into_bytes();
    man.render_name_section(&mut page)?;
    page.extend_from_slice(synopsis(&usage_lines(cmd)).as_bytes());
    man.render_description_section(&mut page)?;
    page.extend_from_slice(options_section(cmd.clone())?.as_bytes());
    // Its title in capitals, as every other section's.
    let subcommands = rendered(cmd.clone(), clap_mangen::Man::render_subcommands_section)?;
    for line in subcommands.lines() {
        let line = match line.strip_prefix(".SH ") {
            Some(title) => format!(".SH {}", title.to_uppercase()),
            None => line.to_owned(),
        };
        page.extend_from_slice(format!("{line}\n").as_bytes());
    }
    for section in SECTIONS {
        page.extend_from_slice(section.as_bytes());
    }
    page.extend_from_slice(see_also(cmd, cmd.get_name(), &["timeout", "curl"]).as_bytes());
    man.render_version_section(&mut page)?;
    Ok(tidy(&String::from_utf8(page)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_roff_of_the_pages_is_tidied() {
        let preamble = ".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n";
        let page = format!(
            ".TH A 1 2026-01-01 \"a\" \n{preamble}.SH NAME\n{preamble}.TP\nhelp\n.br\n\n.br\n\\fIPossible values:\\fR\n"
        );
        assert_eq!(
            tidy(&page),
            format!(
                "{preamble}.TH A 1 2026-01-01 \"a\"\n.SH NAME\n.TP\nhelp\n.sp\n\\fIPossible values:\\fR\n"
            )
        );
        assert_eq!(
            usage_line("backoff budget show|reset KEY [OPTIONS]"),
            "\\fBbackoff\\fR \\fBbudget\\fR \\fBshow\\fR|\\fBreset\\fR \\fIKEY\\fR [\\fIOPTIONS\\fR]"
        );
        assert_eq!(
            usage_line("  backoff [OPTIONS] [--] COMMAND [ARGS]..."),
            "\\fBbackoff\\fR [\\fIOPTIONS\\fR] [\\fB\\-\\-\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]..."
        );
        assert_eq!(roff_escape(".x-y\\"), "\\&.x\\-y\\e");
    }

    #[test]
    fn the_option_groups_are_subsections_of_options() {
        let cmd = clap::Command::new("tool")
            .arg(clap::Arg::new("plain").long("plain").help("No group"))
            .arg(
                clap::Arg::new("base")
                    .long("base")
                    .help("A bound")
                    .help_heading("Time limits"),
            );
        let section = options_section(cmd).unwrap();
        let titles: Vec<&str> = section.lines().filter(|l| l.starts_with(".S")).collect();
        assert_eq!(titles, [".SH OPTIONS", ".SS \"Time limits\""], "{section}");
        assert!(section.contains("\\fB\\-\\-plain\\fR") && section.contains("A bound"));
    }

    #[test]
    fn the_synopsis_is_the_usage_of_the_command() {
        let cmd = clap::Command::new("tool")
            .override_usage("tool [OPTIONS] FILE\n       tool show KEY [OPTIONS]")
            .subcommand(clap::Command::new("show"));
        assert_eq!(
            usage_lines(&cmd),
            ["tool [OPTIONS] FILE", "tool show KEY [OPTIONS]"]
        );
        assert_eq!(usage_of(&cmd, "show").unwrap(), ["tool show KEY [OPTIONS]"]);
        assert!(usage_of(&cmd, "other").is_err());
    }
}
