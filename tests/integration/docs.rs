//! The man pages and shell completions are what `backoff --generate`
//! prints (src/generate/), the Debian package's copyright file is made from
//! the licence texts, and the release's third-party notices from the crates
//! the release is built from (notices.rs); all are checked in. These tests
//! fail when they are stale; to regenerate them, run:
//!
//!     BACKOFF_REGENERATE=1 cargo test --test integration generated
//!
//! A page's date is the day its text last changed: regenerating keeps the
//! date of a page whose text is the same, dates a changed page by the last
//! commit, and writes the dates into src/generate/dates.rs, where the
//! binary finds them (see `dated`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use backoff_cli::cli::Cli;
use backoff_cli::generate::{self, Shell, complete, man};
use clap::CommandFactory;

use crate::support::{PATIENCE, TempDir, backoff};

/// The completion scripts in `completions/`, with the kind of
/// `--generate` that prints each.
const COMPLETIONS: &[(&str, Shell, &str)] = &[
    ("backoff.bash", Shell::Bash, "complete-bash"),
    ("_backoff", Shell::Zsh, "complete-zsh"),
    ("backoff.fish", Shell::Fish, "complete-fish"),
    ("backoff.elv", Shell::Elvish, "complete-elvish"),
    ("backoff.ps1", Shell::PowerShell, "complete-powershell"),
];

/// The kind of `--generate` that prints page `name`: `man` for backoff(1),
/// `man-budget` for backoff-budget(1).
fn kind_of_page(name: &str) -> String {
    match name.strip_prefix("backoff-") {
        Some(sub) => format!("man-{sub}"),
        None => "man".to_owned(),
    }
}

/// The date in the `.TH` line of `page`, if it has one (YYYY-MM-DD).
fn date_of(page: &str) -> Option<&str> {
    let date = page
        .lines()
        .find_map(|l| l.strip_prefix(".TH "))?
        .split_whitespace()
        .nth(2)?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let parts: Vec<&str> = date.split('-').collect();
    (parts.len() == 3
        && parts[0].len() == 4
        && parts[1].len() == 2
        && parts[2].len() == 2
        && parts.iter().all(|p| digits(p)))
    .then_some(date)
}

/// The date of the last commit (YYYY-MM-DD), or today's outside a git
/// checkout.
fn last_commit_date(root: &Path) -> String {
    std::process::Command::new("git")
        .args(["log", "-1", "--format=%cs"])
        .current_dir(root)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|d| d.trim().to_owned())
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| {
            humantime::format_rfc3339(std::time::SystemTime::now()).to_string()[..10].to_owned()
        })
}

/// The date the page at `path` gets when regenerated, `render` making it
/// for a date: the date it has while nothing else of it changes, else that
/// of the last commit, so that the date says when the page last changed and
/// regenerating the same sources gives the same page.
fn dated(path: &Path, root: &Path, render: impl Fn(&str) -> String) -> String {
    let old = std::fs::read_to_string(path).unwrap_or_default();
    match date_of(&old) {
        Some(date) if render(date) == old => date.to_owned(),
        _ => last_commit_date(root),
    }
}

/// src/generate/dates.rs, holding `dates` (each page's name and date).
fn dates_file(dates: &[(String, String)]) -> String {
    let mut out = String::from(
        "//! The day each man page's text last changed, for its `.TH` line. Written\n\
         //! by the regeneration of the generated files (see docs/building.md), which\n\
         //! keeps a page's date while its text stays the same; not edited by hand.\n\
         \n\
         /// Each page's name and date (YYYY-MM-DD).\n\
         pub const DATES: &[(&str, &str)] = &[\n",
    );
    for (name, date) in dates {
        writeln!(out, "    ({name:?}, {date:?}),").unwrap();
    }
    out.push_str("];\n");
    out
}

/// The man pages (backoff(1) first) and src/generate/dates.rs, with their
/// expected content: each page dated as the binary dates it, or, to
/// regenerate them, as `dated` says.
fn man_page_files(root: &Path, regenerate: bool) -> Vec<(PathBuf, Vec<u8>)> {
    let cmd = Cli::command();
    let mut files = Vec::new();
    let mut dates = Vec::new();
    for name in man::page_names(&cmd) {
        let path = root.join(format!("man/{name}.1"));
        let render = |date: &str| man::page(&cmd, &name, date).unwrap();
        let date = if regenerate {
            dated(&path, root, render)
        } else {
            generate::date_of(&name).to_owned()
        };
        files.push((path, render(&date).into_bytes()));
        dates.push((name, date));
    }
    files.push((
        root.join("src/generate/dates.rs"),
        dates_file(&dates).into_bytes(),
    ));
    files
}

/// Every generated file with its expected content.
fn generated(regenerate: bool) -> Vec<(PathBuf, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = man_page_files(root, regenerate);
    for (file, shell, _) in COMPLETIONS {
        files.push((
            root.join("completions").join(file),
            complete::script(&Cli::command(), *shell)
                .unwrap()
                .into_bytes(),
        ));
    }
    files.push((root.join("dist/debian/copyright"), debian_copyright(root)));
    files.push((
        root.join("dist/THIRD-PARTY-NOTICES"),
        crate::notices::third_party_notices(root),
    ));
    files
}

/// The Debian package's copyright file, in Debian's machine-readable
/// format: who holds the copyright, the licence choice, and the full text
/// of both licences (each line indented by a space, an empty line as " .").
fn debian_copyright(root: &Path) -> Vec<u8> {
    let read = |name: &str| std::fs::read_to_string(root.join(name)).unwrap();
    let mit = read("LICENSE-MIT");
    let holder = mit
        .lines()
        .find_map(|line| line.strip_prefix("Copyright (c) "))
        .expect("LICENSE-MIT names the copyright holder");
    let mut out = format!(
        "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\
         Upstream-Name: backoff\n\
         Comment: The binary also holds the code of the crates, the Rust standard\n \
         library and the musl C library named, with their licences, in\n \
         /usr/share/doc/backoff/THIRD-PARTY-NOTICES.\n\
         \n\
         Files: *\n\
         Copyright: {holder}\n\
         License: Expat or Apache-2.0\n"
    );
    // Debian's name for the MIT licence is Expat.
    for (name, text) in [("Expat", mit), ("Apache-2.0", read("LICENSE-APACHE"))] {
        writeln!(out, "\nLicense: {name}").unwrap();
        for line in text.trim_end().lines() {
            let line = line.trim_end();
            if line.is_empty() {
                out.push_str(" .\n");
            } else {
                writeln!(out, " {line}").unwrap();
            }
        }
    }
    out.into_bytes()
}

fn regenerating() -> bool {
    std::env::var_os("BACKOFF_REGENERATE").is_some()
}

#[test]
fn generated_man_pages_and_completions_are_up_to_date() {
    let regenerate = regenerating();
    let mut stale = Vec::new();
    for (path, content) in generated(regenerate) {
        if regenerate {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &content).unwrap();
        } else if std::fs::read(&path).ok().as_deref() != Some(&content[..]) {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "stale generated files: {stale:?}; regenerate them with \
         `BACKOFF_REGENERATE=1 cargo test --test integration generated` and commit them"
    );
}

/// What `backoff --generate KIND` prints, checked to have said nothing on
/// stderr.
fn printed(kind: &str) -> Vec<u8> {
    let out = backoff(["--generate", kind])
        .timeout(PATIENCE)
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(out.stderr.is_empty(), "{kind}: {out:?}");
    out.stdout
}

#[test]
fn the_binary_prints_the_generated_files() {
    // The binary is built before the regeneration writes the pages' dates.
    if regenerating() {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<(PathBuf, String)> = man::page_names(&Cli::command())
        .iter()
        .map(|name| (root.join(format!("man/{name}.1")), kind_of_page(name)))
        .collect();
    for (file, _, kind) in COMPLETIONS {
        files.push((root.join("completions").join(file), (*kind).to_owned()));
    }
    for (path, kind) in files {
        // Whatever the environment: a terminal's width, backoff's
        // variables.
        let out = backoff(["--generate", &kind])
            .env("COLUMNS", "40")
            .env("BACKOFF_TIMEOUT", "30")
            .env("BACKOFF_BASE", "1s")
            .timeout(PATIENCE)
            .assert()
            .success()
            .get_output()
            .clone();
        assert!(
            out.stdout == std::fs::read(&path).unwrap(),
            "backoff --generate {kind} is not {}",
            path.display()
        );
    }
    // PowerShell's script completes backoff's options.
    let powershell = String::from_utf8(printed("complete-powershell")).unwrap();
    assert!(
        powershell.contains("Register-ArgumentCompleter") && powershell.contains("'--jitter'"),
        "{powershell}"
    );
}

#[test]
fn generate_runs_nothing_and_takes_nothing_else() {
    let dir = TempDir::new("generate-alone");
    let marker = dir.join("ran");
    let command = format!("touch '{}'", marker.display());
    for (args, said) in [
        (
            vec!["--generate", "man", "sh", "-c", &command],
            "backoff: --generate prints a file and runs nothing: it takes no command ('sh' given); run 'backoff --generate man'\n",
        ),
        (
            vec!["--generate", "complete-zsh", "--", "sh", "-c", &command],
            "backoff: --generate prints a file and runs nothing: it takes no command ('sh' given); run 'backoff --generate complete-zsh'\n",
        ),
        (
            vec!["--max-retries", "3", "--generate", "man"],
            "backoff: --generate prints a file and runs nothing: it takes no other option ('--max-retries' given); run 'backoff --generate man'\n",
        ),
        (
            vec!["-q", "--generate", "man"],
            "backoff: --generate prints a file and runs nothing: it takes no other option ('--quiet' given); run 'backoff --generate man'\n",
        ),
    ] {
        backoff(&args)
            .timeout(PATIENCE)
            .assert()
            .code(125)
            .stdout("")
            .stderr(said.to_owned());
        assert!(!marker.exists(), "{args:?}");
    }
    // An unknown kind gets the list of those there are.
    backoff(["--generate", "man-bogus"])
        .timeout(PATIENCE)
        .assert()
        .code(125)
        .stdout("")
        .stderr(predicates::str::contains(
            "invalid value 'man-bogus' for '--generate': expected one of man, man-schedule, \
             man-simulate, man-budget, man-breaker, man-throttle, man-lock, man-once, complete-bash, complete-zsh, \
             complete-fish, complete-powershell, complete-elvish",
        ));
    // The environment's settings are defaults, not options given.
    backoff(["--generate", "man"])
        .env("BACKOFF_MAX_RETRIES", "3")
        .env("BACKOFF_BUDGET_STORE", "redis://127.0.0.1:1")
        .timeout(PATIENCE)
        .assert()
        .success();
}

#[test]
fn generate_stops_quietly_when_its_reader_goes_away() {
    // `head -c 1` takes one byte of the page, larger than a pipe holds,
    // and exits: the rest meets a closed pipe, which ends the writing, not
    // in an error.
    assert!(printed("man").len() > 64 * 1024);
    let dir = TempDir::new("generate-pipe");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("{ \"$0\" --generate man; echo $? >\"$1\"; } | head -c 1 >/dev/null")
        .arg(crate::support::bin())
        .arg(dir.join("status"))
        .output()
        .unwrap();
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(dir.lines("status"), ["0"]);
    // A full disk is an error, said in one line.
    if Path::new("/dev/full").exists() {
        let out = std::process::Command::new(crate::support::bin())
            .args(["--generate", "man"])
            .stdout(std::fs::File::create("/dev/full").unwrap())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(125));
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            said.starts_with("backoff: cannot write to stdout: ") && said.lines().count() == 1,
            "{said}"
        );
    }
}

#[test]
fn the_man_page_has_its_hand_written_sections() {
    let page = man_pages().remove(0).1;
    for section in [
        ".SH \"EXIT STATUS\"",
        ".SH SIGNALS",
        ".SH EXAMPLES",
        ".SH PRESETS",
        ".SH SIMULATION",
        ".SH ENVIRONMENT",
        ".SH \"WHAT ENDS A RUN\"",
        ".SH HOOKS",
        ".SH \"CIRCUIT BREAKER\"",
        ".SH \"ADAPTIVE THROTTLE\"",
        ".SH \"CI LOGS\"",
        ".SH \"SEE ALSO\"",
    ] {
        assert!(page.contains(section), "missing {section}");
    }
}

/// Whether a usage line of `text` (after `Usage:`, or indented) names the
/// subcommand `sub`, alone or among others (`backoff budget|breaker ...`).
pub fn usage_names(text: &str, sub: &str) -> bool {
    text.lines().any(|l| {
        let mut words = l.trim().trim_start_matches("Usage:").split_whitespace();
        words.next() == Some("backoff")
            && words.next().is_some_and(|w| w.split('|').any(|n| n == sub))
    })
}

#[test]
fn the_usage_names_every_subcommand() {
    let page = man_pages().remove(0).1;
    for sub in Cli::command().get_subcommands() {
        assert!(
            usage_names(backoff_cli::cli::USAGE, sub.get_name()),
            "{}",
            sub.get_name()
        );
    }
    for flag in ["-h", "--help"] {
        let out = crate::support::backoff([flag])
            .timeout(crate::support::PATIENCE)
            .assert()
            .success()
            .get_output()
            .clone();
        let help = String::from_utf8(out.stdout).unwrap();
        let synopsis = synopsis_of(&page);
        for line in backoff_cli::cli::USAGE.lines() {
            assert!(help.contains(line), "{flag}: {line}");
            assert!(
                synopsis.contains(&line.trim().to_owned()),
                "man page: {line}"
            );
        }
    }
}

/// The man pages as `backoff --generate` prints them, by name
/// (`backoff-budget`), backoff(1) first.
fn man_pages() -> Vec<(String, String)> {
    man::page_names(&Cli::command())
        .into_iter()
        .map(|name| {
            let page = String::from_utf8(printed(&kind_of_page(&name))).unwrap();
            (name, page)
        })
        .collect()
}

/// Roff text as it reads: without font changes and the escapes that
/// print nothing, with dashes and backslashes as they print.
fn plain(roff: &str) -> String {
    ["\\fB", "\\fI", "\\fR", "\\%", "\\&"]
        .iter()
        .fold(roff.to_owned(), |text, escape| text.replace(escape, ""))
        .replace("\\-", "-")
        .replace("\\e", "\\")
}

/// The lines of a page's SYNOPSIS, as they read.
fn synopsis_of(page: &str) -> Vec<String> {
    page.lines()
        .skip_while(|l| *l != ".SH SYNOPSIS")
        .skip(1)
        .take_while(|l| !l.starts_with(".SH"))
        .filter(|l| *l != ".br")
        .map(plain)
        .collect()
}

#[test]
fn each_page_has_the_synopsis_of_the_commands_it_tells_of() {
    let expected = [
        (
            "backoff",
            &[
                "backoff [OPTIONS] [--] COMMAND [ARGS]...",
                "backoff schedule|simulate [OPTIONS]",
                "backoff budget|breaker|throttle|lock|once show|reset KEY [OPTIONS]",
            ][..],
        ),
        ("backoff-schedule", &["backoff schedule [OPTIONS]"]),
        ("backoff-simulate", &["backoff simulate [OPTIONS]"]),
        (
            "backoff-budget",
            &["backoff budget show|reset KEY [OPTIONS]"],
        ),
        (
            "backoff-breaker",
            &["backoff breaker show|reset KEY [OPTIONS]"],
        ),
        (
            "backoff-throttle",
            &["backoff throttle show|reset KEY [OPTIONS]"],
        ),
        ("backoff-lock", &["backoff lock show|reset KEY [OPTIONS]"]),
        ("backoff-once", &["backoff once show|reset KEY [OPTIONS]"]),
    ];
    let pages = man_pages();
    let names: Vec<&str> = pages.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, expected.map(|(name, _)| name));
    for ((name, page), (_, synopsis)) in pages.iter().zip(expected) {
        assert_eq!(synopsis_of(page), synopsis, "{name}");
        // The title names the page, with a date.
        let title = page.lines().find(|l| l.starts_with(".TH ")).unwrap();
        assert!(
            plain(title).starts_with(&format!(".TH {} 1 ", name.to_uppercase())),
            "{title}"
        );
        assert!(date_of(page).is_some(), "{title}");
    }
}

#[test]
fn a_subcommands_page_lists_its_commands_and_every_option() {
    let mut cmd = Cli::command();
    cmd.build();
    let pages = man_pages();
    for sub in cmd.get_subcommands() {
        let name = format!("backoff-{}", sub.get_name());
        let page = &pages.iter().find(|(n, _)| *n == name).unwrap().1;
        let options = page
            .split("\n.SH OPTIONS\n")
            .nth(1)
            .unwrap_or_else(|| panic!("{name}: no OPTIONS"));
        let commands: Vec<&clap::Command> = if sub.has_subcommands() {
            sub.get_subcommands().collect()
        } else {
            vec![sub]
        };
        for command in commands {
            if !std::ptr::eq(command, sub) {
                assert!(
                    page.contains(&format!(".TP\n\\fB{}\\fR\n", command.get_name())),
                    "{name}: {}",
                    command.get_name()
                );
            }
            for arg in command.get_arguments() {
                let shown = match arg.get_long() {
                    Some(long) => format!("\\fB\\-\\-{}\\fR", long.replace('-', "\\-")),
                    None => format!("\\fI{}\\fR", arg.get_value_names().unwrap()[0]),
                };
                assert!(options.contains(&shown), "{name}: {shown}");
            }
        }
    }
    let throttle = &pages
        .iter()
        .find(|(n, _)| n == "backoff-throttle")
        .unwrap()
        .1;
    assert!(
        throttle.contains("(from 1 to 1000, at most three decimals) (show only)"),
        "{throttle}"
    );
}

#[test]
fn the_man_pages_link_only_pages_that_exist() {
    let pages = man_pages();
    let names: Vec<&str> = pages.iter().map(|(name, _)| name.as_str()).collect();
    for (name, page) in &pages {
        let text = plain(page);
        let mut linked = Vec::new();
        for (at, _) in text.match_indices("backoff") {
            let rest = &text[at..];
            let end = rest
                .find(|c: char| !(c.is_ascii_lowercase() || c == '-'))
                .unwrap_or(rest.len());
            if rest[end..].starts_with("(1)") {
                linked.push(&rest[..end]);
            }
        }
        for link in &linked {
            assert!(names.contains(link), "{name} links {link}(1)");
        }
        // Each page sends the reader to the others.
        for other in names.iter().filter(|n| *n != name) {
            assert!(linked.contains(other), "{name} does not link {other}(1)");
        }
    }
    // The sections a subcommand's page sends the reader to are there.
    let main = &pages[0].1;
    for (_, section) in man::MORE_ABOUT {
        assert!(
            main.contains(&format!(".SH \"{section}\"\n"))
                || main.contains(&format!(".SH {section}\n")),
            "{section}"
        );
    }
}

#[test]
fn every_man_page_passes_mandoc_lint() {
    let dir = crate::support::TempDir::new("mandoc");
    for (name, page) in man_pages() {
        let path = dir.path().join(format!("{name}.1"));
        std::fs::write(&path, page).unwrap();
        let Some(out) = crate::support::checked_by(
            "every_man_page_passes_mandoc_lint",
            "mandoc",
            std::process::Command::new("mandoc")
                .args(["-T", "lint", "-W", "warning"])
                .arg(&path),
        ) else {
            return;
        };
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success() && said.is_empty(), "{name}.1: {said}");
    }
}

#[test]
fn every_man_page_passes_groffs_warnings() {
    let dir = crate::support::TempDir::new("groff");
    for (name, page) in man_pages() {
        let path = dir.path().join(format!("{name}.1"));
        std::fs::write(&path, page).unwrap();
        let Some(out) = crate::support::checked_by(
            "every_man_page_passes_groffs_warnings",
            "groff",
            std::process::Command::new("groff")
                .args(["-man", "-ww", "-z", "-Tutf8"])
                .arg(&path),
        ) else {
            return;
        };
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && said.is_empty(), "{name}.1: {said}");
    }
}

#[test]
fn a_page_keeps_its_date_until_it_changes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = TempDir::new("man-date");
    let path = dir.path().join("page.1");
    let render =
        |text: &'static str| move |date: &str| format!(".TH PAGE 1 {date} \"x\"\n{text}\n");
    // A page as it was regenerated on another day keeps that day.
    std::fs::write(&path, render("same")("2020-01-31")).unwrap();
    assert_eq!(dated(&path, root, render("same")), "2020-01-31");
    // A page that changes gets the date of the last commit.
    assert_eq!(
        dated(&path, root, render("changed")),
        last_commit_date(root)
    );
    // So does a page without a date, or without a file.
    std::fs::write(&path, ".TH PAGE 1  \"x\"\nsame\n").unwrap();
    assert_eq!(dated(&path, root, render("same")), last_commit_date(root));
    let none = dir.path().join("none.1");
    assert_eq!(dated(&none, root, render("same")), last_commit_date(root));
    // The binary dates each page as the file of dates says.
    for (name, page) in man_pages() {
        assert_eq!(date_of(&page), Some(generate::date_of(&name)), "{name}");
    }
}

/// The pages a text names as `NAME(1)`, backoff's only.
fn pages_named(text: &str) -> Vec<String> {
    let named = regex::Regex::new(r"\b(backoff(?:-[a-z]+)?)\(1\)").unwrap();
    let mut pages: Vec<String> = named.captures_iter(text).map(|c| c[1].to_owned()).collect();
    pages.sort();
    pages.dedup();
    pages
}

#[test]
fn the_guide_names_every_page() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = man::page_names(&Cli::command());
    pages.sort();
    let guide = std::fs::read_to_string(root.join("docs/guide.md")).unwrap();
    let section = guide
        .split("\n## Man pages\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("the guide's Man pages");
    assert_eq!(pages_named(section), pages, "the guide's Man pages");
    // Its opening lines, which send the reader to the pages.
    let opening = guide.split("\n## ").next().unwrap();
    assert!(opening.contains("`man backoff`"), "{opening}");
    assert_eq!(pages_named(opening), pages[1..], "the guide's opening");
    // And the README's list of where to learn more.
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let more = readme
        .lines()
        .skip_while(|l| !l.starts_with("- `man backoff`"))
        .take_while(|l| !l.starts_with("- ["))
        .collect::<Vec<_>>()
        .join(" ");
    for page in &pages[1..] {
        assert!(
            more.contains(&format!("`{page}`")),
            "README: {page}: {more}"
        );
    }
}

/// One option's entry of a page: a `.TP` whose tag is an option, in any
/// section. Its tag, the words of its description, and those of each of
/// the values it lists.
struct OptionEntry {
    tag: String,
    words: usize,
    values: Vec<usize>,
}

fn option_entries(page: &str) -> Vec<OptionEntry> {
    let words = |line: &str| plain(line).split_whitespace().count();
    let lines: Vec<&str> = page.lines().collect();
    let mut entries = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i] != ".TP" || !lines.get(i + 1).is_some_and(|t| t.starts_with("\\fB\\-")) {
            i += 1;
            continue;
        }
        let mut entry = OptionEntry {
            tag: plain(lines[i + 1]),
            words: 0,
            values: Vec::new(),
        };
        i += 2;
        let mut in_values = false;
        while i < lines.len() && ![".TP", ".PP"].contains(&lines[i]) && !lines[i].starts_with(".S")
        {
            let line = lines[i];
            if line.starts_with(".RS") {
                in_values = true;
            } else if line.starts_with(".IP") && in_values {
                entry.values.push(0);
            } else if line.starts_with(".RE") {
                in_values = false;
            } else if !line.starts_with('.') {
                match entry.values.last_mut() {
                    Some(value) if in_values => *value += words(line),
                    _ => entry.words += words(line),
                }
            }
            i += 1;
        }
        entries.push(entry);
    }
    entries
}

#[test]
fn each_options_entry_says_what_the_option_does_in_a_few_sentences() {
    let mut checked = 0;
    for (name, page) in man_pages() {
        for entry in option_entries(&page) {
            assert!(
                entry.words <= 80,
                "{name}: {} has {} words; its depth goes in a section of its own",
                entry.tag,
                entry.words
            );
            for value in entry.values {
                assert!(
                    value <= 30,
                    "{name}: a value of {} has {value} words",
                    entry.tag
                );
            }
            checked += 1;
        }
    }
    // Every option of every page, and the hand-written sections' entries.
    assert!(checked > 100, "{checked} entries");
    let jitter = option_entries(&man_pages()[0].1)
        .into_iter()
        .find(|e| e.tag.starts_with("--jitter"))
        .unwrap();
    assert!(
        jitter.words > 3 && jitter.values.len() == 4,
        "{}: {:?}",
        jitter.words,
        jitter.values
    );
}

/// The relative links of a Markdown text (`[text](target)`, `![alt](target)`
/// and `[name]: target`), outside code, without their `#fragment`: links
/// to a place in the same text and to other sites are left out.
fn relative_links(markdown: &str) -> Vec<String> {
    let inline = regex::Regex::new(r"\]\(\s*<?([^)\s>]+)").unwrap();
    let reference = regex::Regex::new(r"^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)").unwrap();
    let code_span = regex::Regex::new(r"`[^`]*`").unwrap();
    let mut fenced = false;
    // Whether the line before is blank or indented code: a line indented
    // by four spaces after one is code (as the guide writes its examples),
    // after a line of text it goes on with that text.
    let mut code_may_start = true;
    let mut links = Vec::new();
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        let indented_code = code_may_start && line.starts_with("    ");
        code_may_start = trimmed.is_empty() || indented_code;
        if fenced || indented_code {
            continue;
        }
        let line = code_span.replace_all(line, "");
        let targets = inline
            .captures_iter(&line)
            .chain(reference.captures_iter(&line))
            .map(|c| c[1].to_owned());
        for target in targets {
            let path = target.split('#').next().unwrap_or_default();
            if !path.is_empty() && !path.contains(':') {
                links.push(path.to_owned());
            }
        }
    }
    links
}

/// `link`, relative to the document at `doc`, as a path from the root:
/// `docs/../bench/README.md` is `bench/README.md`. `None` when it leads
/// out of the root.
fn resolved(doc: &str, link: &str) -> Option<String> {
    let mut parts: Vec<&str> = doc.split('/').collect();
    parts.pop();
    for part in link.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

#[test]
fn relative_links_are_found_outside_code_and_resolved_from_their_document() {
    let text = [
        "See [the guide](docs/guide.md#install) and ![a chart](simulate.svg).",
        "[ref]: ../bench/README.md",
        "[site](https://example.test/x.md), [here](#install), `[no](code.md)`",
        "    [going on](on.md)",
        "",
        "    backoff [x](indented.md)",
        "```",
        "[no](fenced.md)",
        "```",
    ]
    .join("\n");
    assert_eq!(
        relative_links(&text),
        [
            "docs/guide.md",
            "simulate.svg",
            "../bench/README.md",
            "on.md"
        ]
    );
    assert_eq!(
        resolved("docs/guide.md", "../bench/README.md").as_deref(),
        Some("bench/README.md")
    );
    assert_eq!(
        resolved("README.md", "docs/simulate.svg").as_deref(),
        Some("docs/simulate.svg")
    );
    assert_eq!(resolved("README.md", "../x.md"), None);
}

#[test]
fn every_relative_link_of_the_packaged_documents_is_packaged() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["package", "--list", "--locked", "--allow-dirty"])
        .current_dir(root)
        .output()
        .expect("cargo package runs");
    assert!(
        out.status.success(),
        "cargo package --list: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let mut checked = Vec::new();
    let markdown = |f: &&String| Path::new(f).extension().is_some_and(|e| e == "md");
    for doc in files.iter().filter(markdown) {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        for link in relative_links(&text) {
            let target = resolved(doc, &link);
            assert!(
                target.as_ref().is_some_and(|t| files.contains(t)),
                "{doc} links {link}, which the crate's package does not hold (the include list of Cargo.toml)"
            );
            checked.push(target.unwrap());
        }
    }
    // The README's chart and documents, and the guide's, among them.
    for file in [
        "docs/simulate.svg",
        "docs/overload.svg",
        "docs/building.md",
        "docs/architecture.md",
        "bench/README.md",
    ] {
        assert!(checked.iter().any(|c| c == file), "{file}: {checked:?}");
    }
}

#[test]
fn the_guide_lists_the_sections_of_backoff_1_as_the_page_has_them() {
    let (_, page) = &man_pages()[0];
    let headings: Vec<String> = page
        .lines()
        .filter_map(|l| l.strip_prefix(".SH "))
        .map(|h| plain(h).trim_matches('"').to_owned())
        .collect();
    let position = |name: &str| {
        headings
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no {name} in {headings:?}"))
    };
    let after_options = &headings[position("OPTIONS") + 1..position("SEE ALSO")];
    let guide =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/guide.md"))
            .unwrap();
    let section = guide
        .split_once("\n## Man pages\n")
        .and_then(|(_, rest)| rest.split("\n## ").next())
        .expect("the guide's Man pages");
    // The list's items: a section's name, then what it holds.
    let listed: Vec<&str> = section
        .lines()
        .filter_map(|l| l.strip_prefix("- "))
        .map(|l| l.split_once(": ").map_or(l, |(name, _)| name).trim())
        .collect();
    assert_eq!(listed, after_options, "{section}");
}
