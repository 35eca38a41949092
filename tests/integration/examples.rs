//! Every example that runs backoff in README.md, docs/*.md and the man
//! pages is run here, as a reader would paste it, so that none can rot.
//!
//! What an example names is stood in for locally: `api.example.test` and
//! `127.0.0.1:8080` by an HTTP server of the test's own, the collector at
//! `localhost:4318` and the Pushgateway at `pushgateway:9091` by another
//! that takes every export and push, `budget.internal`
//! and the Redis of the wait-for recipe by a redis-server of its own, the
//! paths of a crontab by a temporary directory, a `--splay` window by one
//! of a second, `/usr/local/bin/` (where a crontab names backoff and its
//! job) by the stand-ins' directory on PATH, and the programs an
//! example wraps (`./deploy.sh`, `pg_isready`, `kubectl`, `cargo`, …) by
//! scripts that succeed. Each example must exit 0 there; one shown with
//! its output (`$ backoff …`) must print the same lines, durations aside
//! (`...` stands for rows left out). Code blocks that do not run backoff
//! (installing, building, diagrams, sample output) are not run: CI runs the
//! builds itself; the blocks that put the man pages and completions in
//! place, and those that install a release, are run whole by install.rs. An example that runs curl against a
//! stand-in runs twice more, as under the curl preset it says: against a
//! server that answers 404, which gets one request, and one that answers
//! 503 then 200, which gets two and a run that succeeds.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use regex::Regex;

use crate::fleet::Redis;
use crate::http::{Reply, Server};
use crate::support::{TempDir, bin, output_for};

/// One example: where it is, the shell text, and the output it shows.
#[derive(Debug)]
struct Example {
    place: String,
    script: String,
    shown: Option<Vec<String>>,
}

/// The code blocks of a Markdown text (indented by four spaces or more
/// after a blank line, or fenced), each with the number of its first line
/// and its lines without the block's indentation.
pub fn markdown_blocks(text: &str) -> Vec<(usize, Vec<String>)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks = Vec::new();
    let mut i = 0;
    let mut after_blank = true;
    while i < lines.len() {
        let line = lines[i];
        let indent = line.len() - line.trim_start().len();
        if line.trim_start().starts_with("```") {
            let start = i + 1;
            let mut body = Vec::new();
            i += 1;
            while i < lines.len() && !lines[i].trim_start().starts_with("```") {
                body.push(lines[i].get(indent..).unwrap_or("").to_owned());
                i += 1;
            }
            blocks.push((start + 1, body));
            i += 1;
            after_blank = false;
            continue;
        }
        if after_blank && indent >= 4 && !line.trim().is_empty() {
            let start = i;
            let mut body = Vec::new();
            while i < lines.len() {
                let l = lines[i];
                let ind = l.len() - l.trim_start().len();
                if !l.trim().is_empty() && ind < indent {
                    break;
                }
                body.push(l.get(indent..).unwrap_or("").to_owned());
                i += 1;
            }
            while body.last().is_some_and(|l| l.trim().is_empty()) {
                body.pop();
            }
            blocks.push((start + 1, body));
            after_blank = true;
            continue;
        }
        after_blank = line.trim().is_empty();
        i += 1;
    }
    blocks
}

/// The command of a line that runs backoff, if it is one: a shell line
/// (`backoff …`, `exec backoff …`), a step of a CI file (`run: backoff …`)
/// or a crontab entry (`*/10 * * * * backoff …`).
fn command_of(line: &str) -> Option<String> {
    let cron = Regex::new(r"^(?:[0-9*/,-]+\s+){5}(.*)$").unwrap();
    let mut l = line.trim();
    l = l.strip_prefix("- ").unwrap_or(l);
    l = l.strip_prefix("run: ").unwrap_or(l);
    let l = match cron.captures(l) {
        Some(c) => c.get(1).unwrap().as_str().to_owned(),
        None => l.to_owned(),
    };
    let bare = l.strip_prefix("exec ").unwrap_or(&l);
    // A crontab names backoff by its absolute path.
    let bare = bare.strip_prefix("/usr/local/bin/").unwrap_or(bare);
    // A synopsis (`backoff [OPTIONS] …`, `backoff budget show|reset KEY`)
    // shows the form of a command, not one to run.
    let synopsis = Regex::new(r"\[[A-Z]|\|reset\b").unwrap();
    (bare.starts_with("backoff ") && !synopsis.is_match(bare)).then_some(l)
}

/// The examples of one block: `$ ` lines with the output below them, `if`
/// statements through their `fi`, and lines that run backoff (continued
/// by a trailing `\`), each after the block's `export` lines before it.
fn block_examples(file: &str, first: usize, lines: &[String]) -> Vec<Example> {
    let mut out = Vec::new();
    let mut exports = String::new();
    let mut j = 0;
    while j < lines.len() {
        let place = format!("{file}:{}", first + j);
        let line = lines[j].trim_end();
        // A command and the lines that follow it, up to a line that
        // ends without a backslash.
        let continued = |j: &mut usize, head: &str| {
            let mut text = head.to_owned();
            while text.ends_with('\\') && *j + 1 < lines.len() {
                *j += 1;
                text.push('\n');
                text.push_str(lines[*j].trim_end());
            }
            text
        };
        if let Some(cmd) = line.strip_prefix("$ ") {
            let script = continued(&mut j, cmd);
            let mut shown = Vec::new();
            while j + 1 < lines.len() && !lines[j + 1].starts_with("$ ") {
                j += 1;
                shown.push(lines[j].trim_end().to_owned());
            }
            while shown.last().is_some_and(String::is_empty) {
                shown.pop();
            }
            if command_of(&script).is_some() {
                out.push(Example {
                    place,
                    script: format!("{exports}{script}"),
                    shown: Some(shown),
                });
            }
        } else if line.starts_with("export ") {
            exports.push_str(line);
            exports.push('\n');
        } else if line.starts_with("if ") {
            let mut script = String::new();
            while j < lines.len() {
                script.push_str(lines[j].trim_end());
                script.push('\n');
                if lines[j].trim() == "fi" {
                    break;
                }
                j += 1;
            }
            if script.contains("backoff ") {
                out.push(Example {
                    place,
                    script: format!("{exports}{script}"),
                    shown: None,
                });
            }
        } else if let Some(cmd) = command_of(line) {
            out.push(Example {
                place,
                script: format!("{exports}{}", continued(&mut j, &cmd)),
                shown: None,
            });
        }
        j += 1;
    }
    out
}

/// The commands of a man page's EXAMPLES section (the bold line after
/// each `.TP`), with roff's escapes undone.
fn man_examples(file: &str, text: &str) -> Vec<Example> {
    let mut out = Vec::new();
    let mut in_examples = false;
    let mut after_tp = false;
    for (n, line) in text.lines().enumerate() {
        if line.starts_with(".SH") {
            in_examples = line.trim() == ".SH EXAMPLES";
            continue;
        }
        if !in_examples {
            continue;
        }
        if line.starts_with(".TP") {
            after_tp = true;
            continue;
        }
        if after_tp {
            after_tp = false;
            let plain = unroff(line);
            if let Some(cmd) = command_of(&plain) {
                out.push(Example {
                    place: format!("{file}:{}", n + 1),
                    script: cmd,
                    shown: None,
                });
            }
        }
    }
    out
}

/// A line of roff as a reader sees it.
fn unroff(line: &str) -> String {
    line.replace("\\fB", "")
        .replace("\\fR", "")
        .replace("\\fI", "")
        .replace("\\fP", "")
        .replace("\\%", "")
        .replace("\\-", "-")
        .replace("\\(aq", "'")
        .replace("\\*(Aq", "'")
        .replace("\\(dq", "\"")
        .replace("\\e", "\\")
}

/// Every example of the README, the documents and the man pages.
fn all_examples() -> Vec<Example> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let mut out = Vec::new();
    for path in &files {
        let name = path.strip_prefix(root).unwrap().display().to_string();
        let text = fs::read_to_string(path).unwrap();
        for (first, lines) in markdown_blocks(&text) {
            // The lines that install the man pages and completions run
            // whole, in a home of their own (install.rs).
            if !crate::install::installs(&lines) {
                out.extend(block_examples(&name, first, &lines));
            }
        }
    }
    let mut pages: Vec<PathBuf> = fs::read_dir(root.join("man"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    pages.sort();
    for path in &pages {
        let name = path.strip_prefix(root).unwrap().display().to_string();
        out.extend(man_examples(&name, &fs::read_to_string(path).unwrap()));
    }
    out
}

/// A line as compared: each duration (`3ms`, `1.20s`, `1m 21s`) one
/// placeholder, runs of spaces one space.
fn normalized(line: &str) -> String {
    let duration =
        Regex::new(r"\b\d+(?:\.\d+)?(?:ns|µs|us|ms|s|m|h|d)(?:\s+\d+(?:\.\d+)?(?:ms|s|m|h))*\b")
            .unwrap();
    let spaced = duration.replace_all(line, "<duration>");
    spaced.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether `printed` matches the lines shown, where `...` stands for any
/// number of lines.
fn matches_shown(shown: &[String], printed: &[&str]) -> bool {
    match shown.split_first() {
        None => printed.is_empty(),
        Some((first, rest)) if first.trim() == "..." => {
            (0..=printed.len()).any(|skip| matches_shown(rest, &printed[skip..]))
        }
        Some((first, rest)) => printed.split_first().is_some_and(|(p, more)| {
            normalized(first) == normalized(p) && matches_shown(rest, more)
        }),
    }
}

fn script(path: &Path, body: &str) {
    fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

/// The place the examples run in: a working directory with the scripts
/// they name, a directory of stand-in programs first on PATH (with
/// backoff itself), and a home of its own.
struct Stage {
    dir: TempDir,
    http: Server,
    /// The OpenTelemetry collector's stand-in: it takes every export.
    otlp: Server,
    redis: Redis,
}

impl Stage {
    fn new() -> Stage {
        let dir = TempDir::new("examples");
        for sub in ["work/docs", "bin", "home", "textfile", "log"] {
            fs::create_dir_all(dir.join(sub)).unwrap();
        }
        let bin_dir = dir.join("bin");
        std::os::unix::fs::symlink(bin(), bin_dir.join("backoff")).unwrap();
        let ok = "exit 0";
        for name in ["docker", "notify-team", "sync", "nightly.sh"] {
            script(&bin_dir.join(name), ok);
        }
        script(
            &bin_dir.join("pg_isready"),
            "echo '127.0.0.1:5432 - accepting connections'",
        );
        script(
            &bin_dir.join("kubectl"),
            "case \"$*\" in *'get pod'*) printf Running ;; \
             *) echo 'deployment \"web\" successfully rolled out' ;; esac",
        );
        script(&bin_dir.join("cargo"), "echo \"cargo $*: ok\"");
        if Command::new("jq")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_err()
        {
            script(&bin_dir.join("jq"), "exec python3 -m json.tool");
        }
        for name in [
            "fetch-artifacts",
            "deploy.sh",
            "worker",
            "sync",
            "integration-tests",
            "nightly.sh",
            "hourly.sh",
        ] {
            script(&dir.join("work").join(name), ok);
        }
        Stage {
            dir,
            http: Server::start(vec![Reply::new(
                200,
                "{\"status\": \"UP\", \"items\": []}\n",
            )]),
            otlp: Server::start(vec![Reply::new(200, "")]),
            redis: Redis::start(Some("secret")),
        }
    }

    /// The example's text with the local stand-ins in place of remote
    /// hosts and system paths, `url` the HTTP server's.
    fn localize(&self, text: &str, url: &str) -> String {
        let http = url.trim_end_matches("/resource");
        let redis = format!("127.0.0.1:{}", self.redis.port());
        let tmp = self.dir.path().display().to_string();
        // A cron job's --splay of minutes is this host's place in a window
        // of a second here: the place is what it shows, not the wait.
        let splay = Regex::new(r"--splay [0-9a-z]+").unwrap();
        let text = splay.replace_all(text, "--splay 1s");
        let otlp = self.otlp.url.trim_end_matches("/resource");
        text.replace("https://api.example.test", http)
            .replace("http://localhost:4318", otlp)
            .replace("http://pushgateway:9091", otlp)
            .replace("https://hc-ping.com", http)
            .replace("http://127.0.0.1:8080", http)
            .replace("http://localhost:8080", http)
            .replace("budget.internal:6379", &redis)
            .replace(
                "redis-cli -h 127.0.0.1",
                &format!("redis-cli -h 127.0.0.1 -p {}", self.redis.port()),
            )
            .replace(
                "/var/lib/node_exporter/textfile/",
                &format!("{tmp}/textfile/"),
            )
            .replace("/var/lib/node_exporter/", &format!("{tmp}/textfile/"))
            .replace("/var/log/", &format!("{tmp}/log/"))
            .replace("/usr/local/bin/", "")
    }

    /// Runs one example in `sh -e`, its stderr merged into its stdout as
    /// a terminal shows them; the output and whether it exited 0.
    fn run(&self, example: &Example) -> (String, bool) {
        self.run_with(example, &self.http.url, &self.dir.join("home"))
    }

    /// The same, against the HTTP server at `url`, in the home `home`.
    fn run_with(&self, example: &Example, url: &str, home: &Path) -> (String, bool) {
        let path = format!(
            "{}:{}",
            self.dir.join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut cmd = Command::new("sh");
        crate::support::plain(&mut cmd)
            .arg("-ec")
            .arg(format!(
                "exec 2>&1\n{}",
                self.localize(&example.script, url)
            ))
            .current_dir(self.dir.join("work"))
            .env("PATH", path)
            .env("HOME", home)
            .env("REDISCLI_AUTH", "secret")
            .env_remove("XDG_STATE_HOME")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let out = output_for(cmd.spawn().unwrap(), Duration::from_mins(2));
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            out.status.success(),
        )
    }
}

#[test]
fn the_examples_are_found_where_a_reader_sees_them() {
    let examples = all_examples();
    let places: Vec<&str> = examples.iter().map(|e| e.place.as_str()).collect();
    // One of each kind: a shown run, a script, a CI step, a crontab line,
    // a continued command, and the man page's list.
    for (what, found) in [
        (
            "the first example",
            examples
                .iter()
                .any(|e| e.place.starts_with("README.md") && e.shown.is_some()),
        ),
        (
            "the script",
            examples.iter().any(|e| e.script.starts_with("if backoff ")),
        ),
        (
            "a CI step",
            examples
                .iter()
                .any(|e| e.script.starts_with("exec backoff ")),
        ),
        (
            "a crontab entry",
            examples
                .iter()
                .any(|e| e.script.contains("--metrics-file /var/lib/node_exporter")),
        ),
        (
            "a continued command",
            examples.iter().any(|e| e.script.contains("\\\n")),
        ),
        (
            "an export",
            examples
                .iter()
                .any(|e| e.script.starts_with("export BACKOFF_BUDGET_STORE=")),
        ),
        (
            "the man page's examples",
            places
                .iter()
                .filter(|p| p.starts_with("man/backoff.1"))
                .count()
                >= 10,
        ),
        (
            "the guide's examples",
            places
                .iter()
                .filter(|p| p.starts_with("docs/guide.md"))
                .count()
                >= 20,
        ),
    ] {
        assert!(found, "{what} not among the examples: {examples:#?}");
    }
    // Output and synopses are not commands.
    assert!(
        examples
            .iter()
            .all(|e| !e.script.starts_with("backoff:") && !e.script.contains("[OPTIONS]")),
        "{examples:#?}"
    );
}

#[test]
fn shown_output_is_compared_line_by_line_durations_aside() {
    let shown: Vec<String> = ["retry  bound", "1      100ms", "...", "10     30.0s"]
        .map(str::to_owned)
        .to_vec();
    assert!(matches_shown(
        &shown,
        &["retry bound", "1  250ms", "2 x", "3 y", "10 1m 21s"]
    ));
    assert!(!matches_shown(&shown, &["retry bound", "1 100ms"]));
    assert!(!matches_shown(
        &shown,
        &["retry bound", "2 100ms", "10 30.0s"]
    ));
}

#[test]
fn every_example_runs_as_written() {
    let stage = Stage::new();
    let mut failures = Vec::new();
    for example in all_examples() {
        let (output, ok) = stage.run(&example);
        let lines: Vec<&str> = output.lines().collect();
        let as_shown = example
            .shown
            .as_ref()
            .is_none_or(|shown| matches_shown(shown, &lines));
        if !ok || !as_shown {
            failures.push(format!(
                "{}: {}\n{}{}",
                example.place,
                example.script,
                if ok { "" } else { "(failed)\n" },
                output
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n---\n"));
}

/// Whether an example runs curl against the stand-in of its URL.
fn runs_curl(script: &str) -> bool {
    script.contains("curl ")
        && [
            "https://api.example.test",
            "http://127.0.0.1:8080",
            "http://localhost:8080",
        ]
        .iter()
        .any(|url| script.contains(url))
}

#[test]
fn every_curl_example_stops_on_a_404_and_retries_a_503() {
    let stage = Stage::new();
    let body = "{\"status\": \"UP\", \"items\": []}\n";
    let examples: Vec<Example> = all_examples()
        .into_iter()
        .filter(|e| runs_curl(&e.script))
        .collect();
    // The README's, the guide's and the man page's.
    for file in ["README.md", "docs/guide.md", "man/backoff.1"] {
        assert!(
            examples.iter().any(|e| e.place.starts_with(file)),
            "no curl example in {file}: {examples:#?}"
        );
    }
    let mut failures = Vec::new();
    for example in &examples {
        // A 404 does not heal: one request. Budgets, breakers and
        // throttles start afresh in a home of the run's own.
        let server = Server::start(vec![Reply::new(404, "no\n")]);
        let home = TempDir::new("examples-404");
        let (output, _) = stage.run_with(example, &server.url, home.path());
        let requests = server.requests().len();
        if requests != 1 {
            failures.push(format!(
                "{}: {}\n404 got {requests} requests\n{output}",
                example.place, example.script
            ));
        }
        // A 503 does: two requests, and the run succeeds.
        let home = TempDir::new("examples-503");
        // A throttle skips the retries of a client it has seen no success
        // of (with probability 1/2 after one failure, as the SRE book's
        // formula says): the example's client has had two before.
        if example.script.contains("--throttle") {
            for _ in 0..2 {
                let server = Server::start(vec![Reply::new(200, body)]);
                stage.run_with(example, &server.url, home.path());
            }
        }
        let server = Server::start(vec![Reply::new(503, "busy\n"), Reply::new(200, body)]);
        let (output, ok) = stage.run_with(example, &server.url, home.path());
        let requests = server.requests().len();
        if requests != 2 || !ok {
            failures.push(format!(
                "{}: {}\n503 then 200 got {requests} requests{}\n{output}",
                example.place,
                example.script,
                if ok { "" } else { " (failed)" }
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n---\n"));
}

/// The texts of the README, the documents and the man pages (without
/// their roff), each with its name.
fn document_texts() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = vec![root.join("README.md")];
    for dir in ["docs", "man"] {
        let mut more: Vec<PathBuf> = fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "md" || e == "1"))
            .collect();
        more.sort();
        paths.extend(more);
    }
    paths
        .iter()
        .map(|path| {
            let name = path.strip_prefix(root).unwrap().display().to_string();
            let text = fs::read_to_string(path).unwrap();
            let text = if name.starts_with("man/") {
                text.lines().map(unroff).collect::<Vec<_>>().join("\n")
            } else {
                text
            };
            (name, text)
        })
        .collect()
}

#[test]
fn the_durations_of_backoffs_lines_in_the_documents_are_written_as_backoff_writes_them() {
    // Where backoff's lines give a duration it measured or drew: each is
    // written as `duration::human` writes it (`312ms`, `2.00s`, `12.0s`).
    let said = Regex::new(
        r"(?:retrying in|failed \([^)]*\) after|on attempt \d+ after|attempts? in) (\d+(?:\.\d+)?(?:ns|us|ms|s))\b",
    )
    .unwrap();
    let mut checked = 0;
    for (name, text) in document_texts() {
        for (n, line) in text.lines().enumerate() {
            for c in said.captures_iter(line) {
                let shown = &c[1];
                let d = humantime::parse_duration(shown).unwrap();
                assert_eq!(
                    backoff_cli::duration::human(d),
                    shown,
                    "{name}:{}: {line}",
                    n + 1
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 20, "{checked} durations");
}

#[test]
fn the_budget_examples_comments_show_what_its_lines_print() {
    // The guide's lines that run with a budget, then show and reset it,
    // each with what it prints in its comment: run in a home of their
    // own, against a server that answers 503 once, then 200.
    let guide =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/guide.md")).unwrap();
    let (first, lines) = markdown_blocks(&guide)
        .into_iter()
        .find(|(_, lines)| {
            lines
                .iter()
                .any(|l| l.starts_with("backoff budget show api"))
        })
        .expect("the guide's budget example");
    let stage = Stage::new();
    let home = TempDir::new("examples-budget");
    let server = Server::start(vec![
        Reply::new(503, "busy\n"),
        Reply::new(200, "{\"status\": \"UP\"}\n"),
    ]);
    let example = Example {
        place: format!("docs/guide.md:{first}"),
        script: lines.join("\n"),
        shown: None,
    };
    let (output, ok) = stage.run_with(&example, &server.url, home.path());
    assert!(ok, "{}: {output}", example.place);
    let mut said = 0;
    for line in &lines {
        let Some((_, comment)) = line.split_once("  # ") else {
            continue;
        };
        let expected = comment
            .trim()
            .replace("/home/me", &home.path().display().to_string());
        assert!(
            output.lines().any(|l| l == expected),
            "{}: {line}\nprints:\n{output}",
            example.place
        );
        said += 1;
    }
    assert_eq!(said, 2, "{lines:?}");
}
