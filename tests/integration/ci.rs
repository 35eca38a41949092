//! CI logs: GitHub Actions folds, step outputs and summary, GitLab CI
//! sections and the end table, and the composite action of `action.yml`,
//! whose steps run here as a runner would run them.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::http::{Reply, Server};
use crate::support::{PATIENCE, Running, TempDir, command, events};

/// `backoff ARGS` as a step of GitHub Actions would run it, with the step's
/// output and summary files in `dir`.
fn in_github_step(dir: &TempDir, args: &[&str]) -> Command {
    let mut cmd = command(args);
    cmd.env("GITHUB_ACTIONS", "true")
        .env("GITHUB_OUTPUT", dir.join("output"))
        .env("GITHUB_STEP_SUMMARY", dir.join("summary"));
    cmd
}

/// Runs `cmd` to its end (within `PATIENCE`), with stdin on /dev/null.
fn finished(cmd: Command) -> Output {
    let out = assert_cmd::Command::from_std(cmd)
        .timeout(PATIENCE)
        .output()
        .expect("run backoff");
    assert!(out.status.code().is_some(), "killed: {out:?}");
    out
}

pub(crate) fn stderr_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The outputs of a `$GITHUB_OUTPUT` file, each key once, read as the
/// runner reads the file on Linux: line by line (split at `\n` alone),
/// empty lines skipped, `NAME=VALUE` when `=` comes before any `<<`, else
/// `NAME<<DELIMITER` and the lines of the value up to one that is
/// `DELIMITER`; anything else fails the step, and fails here.
pub(crate) fn outputs(path: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(path).expect("read GITHUB_OUTPUT");
    let mut map = BTreeMap::new();
    let mut lines = text.split('\n');
    while let Some(line) = lines.next() {
        if line.is_empty() {
            continue;
        }
        let equals = line.find('=');
        let (k, v) = match line.find("<<") {
            Some(h) if equals.is_none_or(|e| h < e) => {
                let (k, delimiter) = (&line[..h], &line[h + 2..]);
                assert!(
                    !k.is_empty() && !delimiter.is_empty(),
                    "invalid {line:?} in {text:?}"
                );
                let mut value = Vec::new();
                loop {
                    let l = lines
                        .next()
                        .unwrap_or_else(|| panic!("no delimiter {delimiter:?} in {text:?}"));
                    if l == delimiter {
                        break;
                    }
                    value.push(l);
                }
                (k, value.join("\n"))
            }
            _ => {
                let (k, v) = line
                    .split_once('=')
                    .unwrap_or_else(|| panic!("invalid {line:?} in {text:?}"));
                (k, v.to_owned())
            }
        };
        assert!(map.insert(k.to_owned(), v).is_none(), "{k} twice: {text:?}");
    }
    map
}

/// The expected outputs, as a map.
pub(crate) fn expected(
    attempts: u64,
    retries: u64,
    code: i32,
    outcome: &str,
    reason: &str,
) -> BTreeMap<String, String> {
    [
        ("attempts", attempts.to_string()),
        ("retries", retries.to_string()),
        ("exit_code", code.to_string()),
        ("outcome", outcome.to_owned()),
        ("reason", reason.to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// The rows of the summary's table of attempts, as cells, after its header
/// and alignment rows; checks the header.
fn summary_rows(summary: &str) -> Vec<Vec<String>> {
    let mut lines = summary.lines().skip_while(|l| !l.starts_with('|'));
    assert_eq!(
        lines.next(),
        Some("| Attempt | Outcome | Duration | Delay after |"),
        "{summary}"
    );
    assert!(
        lines.next().is_some_and(|l| l.starts_with("| -")),
        "{summary}"
    );
    lines
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_owned())
                .collect()
        })
        .collect()
}

/// Whether `cell` is a duration as backoff writes them (`914us`, `12ms`,
/// `1.20s`).
fn is_duration(cell: &str) -> bool {
    // A fast attempt takes under a millisecond.
    ["ns", "us", "ms", "s"].iter().any(|unit| {
        cell.strip_suffix(unit)
            .is_some_and(|n| n.parse::<f64>().is_ok())
    })
}

/// `OPTIONS -- sh -c SCRIPT`, the options split at spaces.
fn sh<'a>(options: &'a str, script: &'a str) -> Vec<&'a str> {
    options
        .split_whitespace()
        .chain(["--", "sh", "-c", script])
        .collect()
}

/// Options for retries that follow at once (1ms).
const NO_DELAY: &str = "--base 1ms --cap 1ms --jitter none";

/// A command that writes `output N` on stderr and fails until attempt 3.
const THIRD_TIME_LUCKY: &str =
    r#"echo "output $BACKOFF_ATTEMPT" >&2; [ "$BACKOFF_ATTEMPT" -ge 3 ]"#;

#[test]
fn github_folds_hold_each_attempts_output_and_the_warning_follows_the_fold() {
    let dir = TempDir::new("gh-folds");
    let out = finished(in_github_step(&dir, &sh(NO_DELAY, THIRD_TIME_LUCKY)));
    assert_eq!(out.status.code(), Some(0));
    let lines = stderr_lines(&out);
    let warning = |n| format!("::warning title=backoff::attempt {n}/7 failed (exit 1) after ");
    let mut want: Vec<String> = Vec::new();
    for n in 1..=3 {
        want.push(format!("::group::attempt {n}/7"));
        want.push(format!("output {n}"));
        want.push("::endgroup::".to_owned());
        if n < 3 {
            want.push(warning(n));
        }
    }
    assert_eq!(lines.len(), want.len(), "{lines:#?}");
    for (line, want) in lines.iter().zip(&want) {
        assert!(
            line.starts_with(want.as_str()),
            "{line:?} is not {want:?}: {lines:#?}"
        );
    }
    assert_eq!(
        outputs(&dir.join("output")),
        expected(3, 2, 0, "success", "success")
    );
    let summary = std::fs::read_to_string(dir.join("summary")).unwrap();
    assert!(
        summary.starts_with("### backoff: sh\n\nattempt 3/7 succeeded; 3 attempts in "),
        "{summary}"
    );
    let rows = summary_rows(&summary);
    assert_eq!(rows.len(), 3, "{summary}");
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row[0], (i + 1).to_string(), "{summary}");
        assert_eq!(
            row[1],
            if i < 2 { "exit 1" } else { "success" },
            "{summary}"
        );
        assert!(is_duration(&row[2]), "{summary}");
        assert_eq!(row[3], if i < 2 { "1ms" } else { "–" }, "{summary}");
    }
}

#[test]
fn giving_up_in_a_github_step_sets_the_outputs_and_names_the_command_in_titles() {
    let dir = TempDir::new("gh-give-up");
    // A summary already there from an earlier step is appended to.
    std::fs::write(dir.join("summary"), "earlier\n").unwrap();
    let out = finished(in_github_step(
        &dir,
        &[
            &["--name", "db: eu,1"][..],
            &sh("--attempts 2 --base 1ms", "exit 3"),
        ]
        .concat(),
    ));
    assert_eq!(out.status.code(), Some(3));
    let lines = stderr_lines(&out);
    assert!(
        lines.iter().any(|l| l
            .starts_with("::warning title=db%3A eu%2C1::db: eu,1: attempt 1/2 failed (exit 3)")),
        "{lines:#?}"
    );
    assert!(
        lines.iter().any(|l| l
            .starts_with("::error title=db%3A eu%2C1::db: eu,1: giving up after 2 attempts in ")),
        "{lines:#?}"
    );
    assert_eq!(lines[0], "::group::db: eu,1: attempt 1/2", "{lines:#?}");
    assert_eq!(
        outputs(&dir.join("output")),
        expected(2, 1, 3, "failure", "exhausted")
    );
    let summary = std::fs::read_to_string(dir.join("summary")).unwrap();
    let ours = summary.strip_prefix("earlier\n").expect("appended");
    assert!(
        ours.starts_with("### backoff: db: eu,1\n\ngiving up after 2 attempts in "),
        "{summary}"
    );
    assert!(ours.contains(": exit 3\n"), "{summary}");
    let rows = summary_rows(ours);
    assert_eq!(
        rows.iter().map(|r| r[1].as_str()).collect::<Vec<_>>(),
        ["exit 3", "exit 3"]
    );
    assert_eq!(rows[1][3], "–");
}

#[test]
fn a_step_interrupted_by_sigterm_is_cancelled_in_its_outputs() {
    let dir = TempDir::new("gh-cancelled");
    let mut run = Running::start(in_github_step(
        &dir,
        &["--", "sh", "-c", "echo started >&2; exec sleep 60"],
    ));
    run.wait_for("started");
    run.signal(libc::SIGTERM);
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGTERM)
    );
    let err = run.stderr();
    let end = err
        .iter()
        .position(|l| *l == "::endgroup::")
        .expect("fold closed");
    assert!(
        err[end + 1].starts_with("backoff: interrupted by SIGTERM during the attempt"),
        "{err:#?}"
    );
    assert_eq!(
        outputs(&dir.join("output")),
        expected(1, 0, 128 + libc::SIGTERM, "cancelled", "interrupted")
    );
    let summary = std::fs::read_to_string(dir.join("summary")).unwrap();
    assert!(
        summary.contains("\ninterrupted by SIGTERM during the attempt; not retrying\n"),
        "{summary}"
    );
    let rows = summary_rows(&summary);
    assert_eq!(rows.len(), 1, "{summary}");
    assert_eq!(rows[0][1], "signal TERM", "{summary}");
}

#[test]
fn the_outputs_are_read_whatever_an_attempt_left_unfinished_in_github_output() {
    // What the first attempt, killed while writing its own output, leaves,
    // and the value the runner then reads for it.
    let line = "x".repeat(100);
    // A value of 3 MB left open, read to its end.
    let large = format!("mine<<EOF\n$(for i in $(seq 30000); do echo {line}; done)\n{line}");
    let large_value = vec![line.as_str(); 30_001].join("\n");
    for (left, value) in [
        ("mine=half", "half"),
        ("mine=one\r", "one\r"),
        ("mine<<EOF\nfirst\nsecond", "first\nsecond"),
        ("mine<<EOF\nfirst\n", "first"),
        ("mine<<EOF\r\nfirst", "first"),
        ("mine<<EO", ""),
        ("mine<<EOF\nEOF", ""),
        ("mine", ""),
        ("mine<<", ""),
        (&large, &large_value),
    ] {
        let dir = TempDir::new("gh-unfinished");
        let script = format!(
            "[ \"$BACKOFF_ATTEMPT\" = 1 ] && printf '%s' \"{left}\" >> \"$GITHUB_OUTPUT\"; exit 4"
        );
        let out = finished(in_github_step(
            &dir,
            &sh("-q --attempts 2 --base 1ms", &script),
        ));
        assert_eq!(out.status.code(), Some(4), "{left:.40?}");
        let mut want = expected(2, 1, 4, "failure", "exhausted");
        want.insert("mine".to_owned(), value.to_owned());
        let got = outputs(&dir.join("output"));
        assert!(got == want, "{left:.40?}: {got:.400?}");
    }
}

#[test]
fn a_long_run_s_step_summary_shows_its_first_and_last_attempts() {
    let dir = TempDir::new("gh-long");
    let out = finished(in_github_step(
        &dir,
        &sh(&format!("-q --attempts 250 {NO_DELAY}"), "exit 1"),
    ));
    assert_eq!(out.status.code(), Some(1));
    let summary = std::fs::read_to_string(dir.join("summary")).unwrap();
    let rows = summary_rows(&summary);
    let numbers: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    let want: Vec<String> = (1..=100)
        .map(|n| n.to_string())
        .chain(["…".to_owned()])
        .chain((151..=250).map(|n| n.to_string()))
        .collect();
    assert_eq!(numbers, want, "{summary}");
    assert_eq!(rows[100][1], "50 attempts left out", "{summary}");
    assert_eq!(rows[101][1], "exit 1", "{summary}");
}

#[test]
fn a_long_run_s_gitlab_table_shows_its_first_and_last_attempts() {
    let mut cmd = in_gitlab_job(&sh(&format!("--attempts 250 {NO_DELAY}"), "exit 1"));
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let lines = stderr_lines(&out);
    let header = lines
        .iter()
        .rposition(|l| l.starts_with("backoff: attempt  outcome"))
        .unwrap_or_else(|| panic!("no table: {lines:#?}"));
    let first: Vec<&str> = lines[header + 1..]
        .iter()
        .map(|l| {
            l.strip_prefix("backoff: ")
                .unwrap()
                .split_whitespace()
                .next()
                .unwrap()
        })
        .collect();
    let want: Vec<String> = (1..=100)
        .map(|n| n.to_string())
        .chain(["…".to_owned()])
        .chain((151..=250).map(|n| n.to_string()))
        .collect();
    assert_eq!(first, want);
    assert!(
        lines[header + 101].contains("50 attempts left out"),
        "{}",
        lines[header + 101]
    );
}

#[test]
fn a_symlink_or_a_fifo_as_a_step_file_is_refused_and_left_alone() {
    let dir = TempDir::new("gh-refused");
    let target = dir.join("target");
    std::fs::write(&target, "precious\n").unwrap();
    std::os::unix::fs::symlink(&target, dir.join("output")).unwrap();
    let fifo = dir.join("summary");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads a valid, NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    // -q: the outputs are written all the same, and a refusal is said, as
    // an annotation on the run's page.
    let out = finished(in_github_step(&dir, &["-q", "--", "true"]));
    assert_eq!(out.status.code(), Some(0));
    let lines = stderr_lines(&out);
    assert_eq!(
        lines,
        [
            format!(
                "::warning title=backoff::cannot write $GITHUB_OUTPUT '{}': not a regular file",
                dir.join("output").display()
            ),
            format!(
                "::warning title=backoff::cannot write $GITHUB_STEP_SUMMARY '{}': not a regular file",
                fifo.display()
            ),
        ]
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious\n");
    assert!(
        std::fs::symlink_metadata(dir.join("output"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn quiet_and_json_have_no_folds_but_the_step_outputs_are_written() {
    let dir = TempDir::new("gh-json");
    let out = finished(in_github_step(
        &dir,
        &sh("--log-format json --attempts 2 --base 1ms", "exit 1"),
    ));
    assert_eq!(out.status.code(), Some(1));
    // Every line is a JSON event.
    assert!(!events(&out.stderr).is_empty());
    assert_eq!(
        outputs(&dir.join("output")),
        expected(2, 1, 1, "failure", "exhausted")
    );
    let quiet = sh("-q --attempts 2 --base 1ms", "exit 1");
    let out = finished(in_github_step(&TempDir::new("gh-quiet"), &quiet));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        out.stderr.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `backoff ARGS` in a GitLab CI job.
fn in_gitlab_job(args: &[&str]) -> Command {
    let mut cmd = command(args);
    cmd.env("GITLAB_CI", "true");
    cmd
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[test]
fn gitlab_puts_each_attempt_in_a_section_and_ends_with_a_table() {
    let before = unix_now();
    let mut cmd = in_gitlab_job(&sh(NO_DELAY, THIRD_TIME_LUCKY));
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let after = unix_now();
    assert_eq!(out.status.code(), Some(0));
    let lines = stderr_lines(&out);
    let time_of = |line: &str, marker: &str, name: &str| -> u64 {
        let rest = line
            .strip_prefix(&format!("\x1b[0K{marker}:"))
            .unwrap_or_else(|| panic!("not a {marker}: {line:?}"));
        let (time, rest) = rest.split_once(':').unwrap();
        assert!(rest.starts_with(name), "{line:?}");
        let time: u64 = time.parse().unwrap();
        assert!(
            (before..=after).contains(&time),
            "{time} not in {before}..={after}"
        );
        time
    };
    for n in 1..=3 {
        let name = format!("backoff_{pid}_attempt_{n}");
        let at = lines
            .iter()
            .position(|l| l.contains("section_start:") && l.contains(&name))
            .unwrap_or_else(|| panic!("no section {name}: {lines:#?}"));
        let start = time_of(&lines[at], "section_start", &name);
        assert!(
            lines[at].ends_with(&format!(
                "{name}[collapsed=true]\r\x1b[0Kbackoff: attempt {n}/7"
            )),
            "{:?}",
            lines[at]
        );
        assert_eq!(lines[at + 1], format!("output {n}"));
        let end = time_of(&lines[at + 2], "section_end", &name);
        assert!(end >= start);
        assert_eq!(
            lines[at + 2],
            format!("\x1b[0Ksection_end:{end}:{name}\r\x1b[0K")
        );
        if n < 3 {
            assert!(
                lines[at + 3].starts_with(&format!("backoff: attempt {n}/7 failed (exit 1)")),
                "{lines:#?}"
            );
        }
    }
    let table: Vec<&String> = lines.iter().rev().take(4).rev().collect();
    assert_eq!(
        table[0], "backoff: attempt  outcome  duration  delay after",
        "{lines:#?}"
    );
    for (i, row) in table[1..].iter().enumerate() {
        let cells: Vec<&str> = row
            .strip_prefix("backoff: ")
            .unwrap()
            .split_whitespace()
            .collect();
        let last = if i < 2 {
            ["exit", "1"].as_slice()
        } else {
            ["success"].as_slice()
        };
        assert_eq!(cells[0], (i + 1).to_string(), "{row}");
        assert_eq!(&cells[1..=last.len()], last, "{row}");
        assert!(is_duration(cells[last.len() + 1]), "{row}");
        assert_eq!(
            cells[last.len() + 2],
            if i < 2 { "1ms" } else { "–" },
            "{row}"
        );
    }
    // The columns line up: each column starts where its header does.
    let at = table[0].find("duration").unwrap();
    assert!(
        table.iter().all(|r| r[at - 2..at].trim().is_empty()),
        "{table:#?}"
    );
}

#[test]
fn github_actions_wins_over_gitlab_ci_and_json_has_no_sections() {
    let mut both = in_gitlab_job(&["--attempts", "1", "--", "false"]);
    both.env("GITHUB_ACTIONS", "true");
    let lines = stderr_lines(&finished(both));
    assert_eq!(lines[0], "::group::attempt 1/1", "{lines:#?}");
    let out = finished(in_gitlab_job(&sh(
        "--log-format json --attempts 2 --base 1ms",
        "false",
    )));
    assert_eq!(events(&out.stderr).len(), 6);
    let quiet = finished(in_gitlab_job(&sh("-q --attempts 2 --base 1ms", "false")));
    assert!(quiet.stderr.is_empty(), "{quiet:?}");
}

#[test]
fn a_run_the_breaker_skipped_says_not_run_without_an_empty_table() {
    let dir = TempDir::new("gh-breaker");
    let state = dir.join("state");
    let options = [
        "--breaker",
        "k",
        "--breaker-failures",
        "1",
        "--attempts",
        "1",
    ];
    let with_state = |cmd: &mut Command| {
        cmd.args(["--budget-dir"]).arg(&state);
    };
    let run = |gitlab: bool| {
        let mut cmd = if gitlab {
            in_gitlab_job(&options)
        } else {
            in_github_step(&dir, &options)
        };
        with_state(&mut cmd);
        cmd.args(["--", "false"]);
        finished(cmd)
    };
    std::fs::create_dir(&state).unwrap();
    // The first run opens the circuit; the second is skipped.
    assert_eq!(run(false).status.code(), Some(1));
    std::fs::remove_file(dir.join("output")).unwrap();
    assert_eq!(run(false).status.code(), Some(75));
    let summary = std::fs::read_to_string(dir.join("summary")).unwrap();
    let (first, skipped) = summary
        .split_once("\n### backoff: false\n")
        .unwrap_or_else(|| panic!("{summary}"));
    assert_eq!(summary_rows(first).len(), 1, "{summary}");
    let skipped: Vec<&str> = skipped.lines().collect();
    assert_eq!(skipped.len(), 5, "{summary}");
    assert!(
        skipped[1].starts_with("circuit 'k' is open since ")
            && skipped[1].ends_with("; not running the command"),
        "{summary}"
    );
    assert_eq!(
        (skipped[0], skipped[2], skipped[3], skipped[4]),
        ("", "", "Not run: the circuit breaker is open.", ""),
        "{summary}"
    );
    assert_eq!(outputs(&dir.join("output"))["outcome"], "skipped");
    // The GitLab job log ends with the line that says why, and no table.
    let out = run(true);
    assert_eq!(out.status.code(), Some(75));
    let lines = stderr_lines(&out);
    assert!(
        lines.last().is_some_and(|l| l.contains("is open since")),
        "{lines:#?}"
    );
    assert!(!lines.iter().any(|l| l.contains("outcome")), "{lines:#?}");
}

/// `action.yml`, read by python3's YAML parser, as JSON.
fn action() -> serde_json::Value {
    yaml("action.yml")
}

/// The YAML file at `path` in the repository, read by python3's YAML
/// parser, as JSON.
fn yaml(path: &str) -> serde_json::Value {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("python3")
        .args([
            "-c",
            "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
        ])
        .arg(Path::new(root).join(path))
        .output()
        .expect("python3 with yaml (python3-yaml)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A runner's cache, shared by the jobs of a test: a directory per key,
/// as `actions/cache/save` keeps it and `actions/cache/restore` gives it
/// back.
struct Cache(TempDir);

/// A job that runs the action's steps, in a directory of its own: each
/// step gets its own output, summary and path files, as on GitHub. A
/// step that uses another action is simulated (the cache's restore and
/// save, against `cache`); the shell steps run as written.
struct StepRunner<'a> {
    dir: TempDir,
    /// Where the action's files are (`GITHUB_ACTION_PATH`).
    action_path: std::path::PathBuf,
    /// The action's inputs: the test's, and the defaults.
    inputs: BTreeMap<String, String>,
    /// `PATH`, with what the steps so far added to `GITHUB_PATH` first.
    path: std::ffi::OsString,
    cache: &'a Cache,
    /// The outputs of the steps so far, by the step's id.
    outputs: BTreeMap<String, BTreeMap<String, String>>,
    /// `RUNNER_OS`.
    os: &'static str,
}

impl<'a> StepRunner<'a> {
    fn new(action: &serde_json::Value, given: &[(&str, &str)], cache: &'a Cache) -> Self {
        StepRunner {
            dir: TempDir::new("action-job"),
            action_path: Path::new(env!("CARGO_MANIFEST_DIR")).to_owned(),
            inputs: inputs(action, given),
            path: std::env::var_os("PATH").unwrap_or_default(),
            cache,
            outputs: BTreeMap::new(),
            os: "Linux",
        }
    }

    fn files(&self, name: &str, step: usize) -> std::path::PathBuf {
        self.dir.join(&format!("{name}-{step}"))
    }

    fn workspace(&self) -> std::path::PathBuf {
        self.dir.join("workspace")
    }

    fn runner_temp(&self) -> std::path::PathBuf {
        self.dir.join("runner-temp")
    }

    /// The value of the expression in `${{ EXPR }}`: an input, the
    /// runner's temporary directory, or an output of an earlier step.
    fn value(&self, expr: &str) -> String {
        if let Some(name) = expr.strip_prefix("inputs.") {
            return self.inputs[name].clone();
        }
        if expr == "runner.temp" {
            return self.runner_temp().display().to_string();
        }
        let (id, name) = expr
            .strip_prefix("steps.")
            .and_then(|e| e.split_once(".outputs."))
            .unwrap_or_else(|| panic!("not an input, runner.temp or a step's output: {expr}"));
        self.outputs
            .get(id)
            .and_then(|o| o.get(name))
            .cloned()
            .unwrap_or_default()
    }

    /// `text` with each `${{ EXPR }}` replaced by its value.
    fn substitute(&self, text: &str) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(at) = rest.find("${{") {
            out.push_str(&rest[..at]);
            let end = rest[at..].find("}}").expect("closed expression") + at;
            out.push_str(&self.value(rest[at + 3..end].trim()));
            rest = &rest[end + 2..];
        }
        out.push_str(rest);
        out
    }

    /// Whether a step runs: it has no `if`, or its `if` (of the form
    /// `EXPR == 'VALUE'` or `EXPR != 'VALUE'`) holds.
    fn applies(&self, step: &serde_json::Value) -> bool {
        let Some(cond) = step["if"].as_str() else {
            return true;
        };
        let (expr, equal, value) = if let Some((e, v)) = cond.split_once("!=") {
            (e, false, v)
        } else if let Some((e, v)) = cond.split_once("==") {
            (e, true, v)
        } else {
            panic!("an if this test cannot read: {cond}")
        };
        let value = value.trim().trim_matches('\'');
        (self.value(expr.trim()) == value) == equal
    }

    /// Runs every step of `action` in order; the output of each shell step
    /// that ran.
    fn job(&mut self, action: &serde_json::Value) -> Vec<Option<Output>> {
        let steps = action["runs"]["steps"].as_array().unwrap();
        (0..steps.len())
            .map(|i| {
                let step = &steps[i];
                if !self.applies(step) {
                    None
                } else if step["uses"].is_string() {
                    self.uses(step);
                    None
                } else {
                    Some(self.run(i, step))
                }
            })
            .collect()
    }

    /// Does what a step that uses the cache's action does: restore the
    /// directory saved under its key (with the output `cache-hit`), or
    /// save it.
    fn uses(&mut self, step: &serde_json::Value) {
        let with = |k: &str| self.substitute(step["with"][k].as_str().unwrap_or_default());
        let (path, key) = (with("path"), with("key"));
        assert!(!key.is_empty() && !path.is_empty(), "{step}");
        let saved = self.cache.0.join(&key);
        let uses = step["uses"].as_str().unwrap();
        let copy = |from: &Path, to: &Path| {
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            let status = Command::new("cp")
                .arg("-a")
                .arg(from)
                .arg(to)
                .status()
                .unwrap();
            assert!(status.success());
        };
        if uses.starts_with("actions/cache/restore@v") {
            let hit = saved.exists();
            if hit {
                copy(&saved, Path::new(&path));
            }
            let id = step["id"].as_str().expect("the restore step has an id");
            self.outputs.insert(
                id.to_owned(),
                BTreeMap::from([("cache-hit".to_owned(), hit.to_string())]),
            );
        } else if uses.starts_with("actions/cache/save@v") {
            assert!(Path::new(&path).is_dir(), "nothing to save at {path}");
            // A key is saved once; a second save of it fails (with a
            // warning, not the step).
            if !saved.exists() {
                copy(Path::new(&path), &saved);
            }
        } else {
            panic!("a step this test cannot simulate: {step}");
        }
    }

    /// Runs step `i` as `step_output` does, and checks that it succeeded.
    fn run(&mut self, i: usize, step: &serde_json::Value) -> Output {
        let out = self.step_output(i, step);
        assert!(
            out.status.success(),
            "step {i} failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Runs step `i` as a runner runs a composite step's `shell: bash`
    /// (niced, so that the install step's build leaves the timed tests
    /// beside it their CPU), and returns its output, whether it succeeded
    /// or not.
    fn step_output(&mut self, i: usize, step: &serde_json::Value) -> Output {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        assert_eq!(step["shell"], "bash", "{step}");
        let file = self.files("step", i);
        std::fs::write(&file, step["run"].as_str().unwrap()).unwrap();
        std::fs::create_dir_all(self.runner_temp()).unwrap();
        std::fs::create_dir_all(self.workspace()).unwrap();
        let arch = match std::env::consts::ARCH {
            "x86_64" => "X64",
            "aarch64" => "ARM64",
            other => other,
        };
        let mut cmd = Command::new("nice");
        cmd.args([
            "-n",
            "19",
            "bash",
            "--noprofile",
            "--norc",
            "-eo",
            "pipefail",
        ])
        .arg(&file)
        .current_dir(self.workspace())
        .stdin(Stdio::null());
        crate::support::plain(&mut cmd)
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_OUTPUT", self.files("output", i))
            .env("GITHUB_STEP_SUMMARY", self.files("summary", i))
            .env("GITHUB_PATH", self.files("path", i))
            .env("GITHUB_ACTION_PATH", &self.action_path)
            .env("GITHUB_WORKSPACE", self.workspace())
            .env("RUNNER_TEMP", self.runner_temp())
            .env("RUNNER_OS", self.os)
            .env("RUNNER_ARCH", arch)
            .env("PATH", &self.path)
            // The build is kept, so that the suite's next run reuses it,
            // and made without the release profile's optimisation, which
            // takes most of its time: the step runs as written, only the
            // compiler works less.
            .env("CARGO_TARGET_DIR", root.join("target/action-test"))
            .env("CARGO_PROFILE_RELEASE_LTO", "false")
            .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0")
            .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16");
        if let Some(env) = step["env"].as_object() {
            for (k, v) in env {
                cmd.env(k, self.substitute(v.as_str().unwrap()));
            }
        }
        let started = std::time::Instant::now();
        let out = cmd.output().unwrap();
        say_took(i, started.elapsed());
        if let Some(id) = step["id"].as_str() {
            self.outputs
                .insert(id.to_owned(), outputs(&self.files("output", i)));
        }
        // What the step added to GITHUB_PATH comes first in the next one's.
        let added: Vec<std::path::PathBuf> = std::fs::read_to_string(self.files("path", i))
            .unwrap_or_default()
            .lines()
            .map(Into::into)
            .collect();
        let old: Vec<std::path::PathBuf> = std::env::split_paths(&self.path).collect();
        self.path = std::env::join_paths(added.into_iter().rev().chain(old)).unwrap();
        out
    }
}

/// The action's inputs with their defaults, then `given`, each of which
/// must be one of them.
fn inputs(action: &serde_json::Value, given: &[(&str, &str)]) -> BTreeMap<String, String> {
    let declared = action["inputs"].as_object().expect("inputs");
    assert_eq!(declared["run"]["required"], true);
    let mut inputs: BTreeMap<String, String> = declared
        .iter()
        .map(|(k, v)| (k.clone(), v["default"].as_str().unwrap_or("").to_owned()))
        .collect();
    for (k, v) in given {
        assert!(
            inputs.insert((*k).to_owned(), (*v).to_owned()).is_some(),
            "no input {k}"
        );
    }
    inputs
}

/// The position of the step with id `id`.
fn step_of(action: &serde_json::Value, id: &str) -> usize {
    action["runs"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .position(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("a step with id {id}"))
}

#[test]
fn the_composite_action_installs_backoff_and_retries_the_script_until_it_passes() {
    let action = action();
    assert_eq!(action["runs"]["using"], "composite");
    let dir = TempDir::new("action");
    // Fails twice, then passes; the pipe fails only under pipefail.
    let script = format!(
        "n=$(( $(cat '{0}' 2>/dev/null || echo 0) + 1 ))\necho $n > '{0}'\necho \"try $n\"\n[ \"$n\" -ge 3 ] | cat\n",
        dir.join("count").display()
    );
    let given = [
        ("run", script.as_str()),
        ("attempts", "5"),
        ("base", "10ms"),
        ("cap", "20ms"),
        ("jitter", "none"),
        // Not run: inputs reach the script as variables, not as its text.
        ("name", "flaky $(touch pwned)"),
        ("args", "--seed 7\n-v"),
    ];
    // The cache is empty: the job builds backoff, and saves it.
    let cache = Cache(TempDir::new("action-cache"));
    let mut runner = StepRunner::new(&action, &given, &cache);
    let i = step_of(&action, "run");
    let mut outs = runner.job(&action);
    let key = &runner.outputs["build"]["key"];
    assert!(key.starts_with("backoff-Linux-"), "{key}");
    assert!(cache.0.join(key).join("bin/backoff").is_file(), "{key}");
    let out = outs.swap_remove(i).expect("the run step ran");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        ["try 1", "try 2", "try 3"],
        "{stderr}"
    );
    assert!(
        stderr.contains("::group::flaky $(touch pwned): attempt 3/5\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("::warning title=flaky $(touch pwned)::"),
        "{stderr}"
    );
    // -v from `args`.
    assert!(
        stderr.contains("backoff: flaky $(touch pwned): running bash -eo pipefail -c"),
        "{stderr}"
    );
    assert!(!runner.workspace().join("pwned").exists());
    let got = outputs(&runner.files("output", i));
    assert_eq!(got, expected(3, 2, 0, "success", "success"));
    // The action's outputs are the run step's, key by key.
    let declared = action["outputs"].as_object().unwrap();
    assert_eq!(
        declared.keys().collect::<Vec<_>>(),
        got.keys().collect::<Vec<_>>()
    );
    for (k, v) in declared {
        assert_eq!(
            v["value"],
            format!("${{{{ steps.run.outputs.{k} }}}}"),
            "{k}"
        );
    }
    let summary = std::fs::read_to_string(runner.files("summary", i)).unwrap();
    assert!(
        summary.starts_with(
            "### backoff: flaky $(touch pwned)\n\nattempt 3/5 succeeded; 3 attempts in "
        ),
        "{summary}"
    );
    let rows = summary_rows(&summary);
    assert_eq!(
        rows.iter().map(|r| r[3].as_str()).collect::<Vec<_>>(),
        ["10ms", "20ms", "–"],
        "{summary}"
    );

    next_job_finds_the_build_in(&cache, &action, key);
}

/// Runs the action in a job after one that saved its build in `cache`
/// under `key`: cargo is not run (here it would fail), and the saved
/// binary runs the script.
fn next_job_finds_the_build_in(cache: &Cache, action: &serde_json::Value, key: &str) {
    let i = step_of(action, "run");
    let mut next = StepRunner::new(action, &[("run", "echo from the cache")], cache);
    let no_cargo = next.dir.join("no-cargo");
    std::fs::create_dir_all(&no_cargo).unwrap();
    let cargo = no_cargo.join("cargo");
    std::fs::write(
        &cargo,
        "#!/bin/sh\necho cargo ran on a cache hit >&2\nexit 99\n",
    )
    .unwrap();
    std::fs::set_permissions(&cargo, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    next.path =
        std::env::join_paths(std::iter::once(no_cargo).chain(std::env::split_paths(&next.path)))
            .unwrap();
    let outs = next.job(action);
    assert_eq!(next.outputs["build"]["key"], key);
    assert_eq!(next.outputs["restore"]["cache-hit"], "true");
    let install = action["runs"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .position(|s| {
            s["run"]
                .as_str()
                .is_some_and(|r| r.contains("cargo install"))
        })
        .expect("a step that installs backoff");
    let said = String::from_utf8_lossy(&outs[install].as_ref().unwrap().stdout).into_owned();
    assert!(said.contains("from the cache"), "{said}");
    let out = outs[i].as_ref().expect("the run step ran");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "from the cache\n");
    assert_eq!(outputs(&next.files("output", i))["outcome"], "success");
}

#[test]
fn the_composite_actions_build_is_named_by_every_file_it_is_built_from() {
    let action = action();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // What the build reads: the crate's package (Cargo.toml's include
    // list), and the action's own file.
    let list = crate::install::manifest_list("include");
    let mut sources: Vec<String> = list
        .lines()
        .map(|l| l.trim().trim_end_matches(',').trim_matches('"'))
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.trim_start_matches('/').trim_end_matches("/**").to_owned())
        .collect();
    assert!(sources.contains(&"src".to_owned()), "{sources:?}");
    sources.push("action.yml".to_owned());
    // A copy of them, elsewhere, with files that are not among them.
    let copy = TempDir::new("action-sources");
    for source in &sources {
        let to = copy.join(source);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        let status = Command::new("cp")
            .arg("-a")
            .arg(root.join(source))
            .arg(&to)
            .status()
            .unwrap();
        assert!(status.success(), "{source}");
    }
    let cache = Cache(TempDir::new("action-cache"));
    let step = &action["runs"]["steps"][step_of(&action, "build")];
    let key_at = |path: &Path| {
        let mut runner = StepRunner::new(&action, &[("run", "true")], &cache);
        runner.action_path = path.to_owned();
        runner.run(0, step);
        runner.outputs["build"]["key"].clone()
    };
    let key = key_at(root);
    assert_eq!(key_at(copy.path()), key, "the same files, elsewhere");
    for other in [
        "target/release/backoff",
        "tests/new.rs",
        ".git/HEAD",
        "notes",
    ] {
        let path = copy.join(other);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "not built from").unwrap();
    }
    assert_eq!(key_at(copy.path()), key, "files it is not built from");
    // A change to any of them is another build.
    for source in &sources {
        let file = first_file(&copy.join(source)).unwrap_or_else(|| panic!("no file in {source}"));
        let was = std::fs::read(&file).unwrap();
        std::fs::write(&file, [&was[..], b" "].concat()).unwrap();
        assert_ne!(key_at(copy.path()), key, "{}", file.display());
        std::fs::write(&file, &was).unwrap();
    }
    let added = copy.join("src/new.rs");
    std::fs::write(&added, "").unwrap();
    assert_ne!(key_at(copy.path()), key, "a file added");
}

#[test]
fn the_example_workflow_gives_the_action_its_inputs_and_reads_its_outputs() {
    // What actionlint cannot check of a local action without reading it.
    let action = action();
    let workflow = yaml("docs/action-example.yml");
    let declared = action["inputs"].as_object().unwrap();
    let outputs = action["outputs"].as_object().unwrap();
    let mut used = 0;
    for job in workflow["jobs"].as_object().unwrap().values() {
        let steps = job["steps"].as_array().unwrap();
        for (i, step) in steps.iter().enumerate() {
            if step["uses"] != "./" {
                continue;
            }
            used += 1;
            let with = step["with"].as_object().expect("inputs given");
            for name in with.keys() {
                assert!(declared.contains_key(name), "no input {name}");
            }
            for (name, input) in declared {
                if input["required"] == true {
                    assert!(with.contains_key(name), "required input {name} missing");
                }
            }
            // Each output read later is one the action has.
            let read = format!("steps.{}.outputs.", step["id"].as_str().unwrap());
            for later in &steps[i + 1..] {
                let text = later.to_string();
                for (at, _) in text.match_indices(&read) {
                    let name: String = text[at + read.len()..]
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '-')
                        .collect();
                    assert!(outputs.contains_key(&name), "no output {name}");
                }
            }
        }
    }
    assert_eq!(used, 1, "one step uses the action");
}

#[test]
fn the_composite_actions_shell_steps_pass_shellcheck() {
    let action = action();
    let dir = TempDir::new("action-shellcheck");
    let mut scripts = Vec::new();
    for (i, step) in action["runs"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        if let Some(run) = step["run"].as_str() {
            assert_eq!(step["shell"], "bash", "{step}");
            // The runner puts an expression's value into the script's text:
            // a script must get values through `env` instead.
            assert!(!run.contains("${{"), "an expression in step {i}'s script");
            let path = dir.join(&format!("step-{i}.sh"));
            std::fs::write(&path, run).unwrap();
            scripts.push(path);
        }
    }
    crate::support::pass_shellcheck(
        "the_composite_actions_shell_steps_pass_shellcheck",
        &scripts,
    );
}

/// `path` if it is a file, else the first file under it, in the order of
/// names.
fn first_file(path: &Path) -> Option<std::path::PathBuf> {
    if !path.is_dir() {
        return Some(path.to_owned());
    }
    let mut entries: Vec<_> = std::fs::read_dir(path)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    entries.iter().find_map(|e| first_file(e))
}

/// Says how long a step of the action took (seen with --nocapture), for
/// whoever watches the suite's time: the install step builds backoff.
fn say_took(step: usize, took: Duration) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "action step {step} took {took:.1?}");
}

#[test]
fn a_fold_closes_on_a_line_of_its_own_after_an_unfinished_last_line() {
    for (format, end) in [
        ("github", "::endgroup::"),
        ("gitlab", "\x1b[0Ksection_end:"),
    ] {
        let mut cmd = in_gitlab_job(&sh(
            &format!("--log-format {format} --attempts 2 {NO_DELAY}"),
            "printf 'half a line' >&2; exit 1",
        ));
        cmd.env("GITHUB_ACTIONS", "true");
        let out = finished(cmd);
        assert_eq!(out.status.code(), Some(1));
        let lines = stderr_lines(&out);
        let halves: Vec<usize> = (0..lines.len())
            .filter(|&i| lines[i] == "half a line")
            .collect();
        assert_eq!(halves.len(), 2, "{format}: {lines:#?}");
        for i in halves {
            assert!(lines[i + 1].starts_with(end), "{format}: {lines:#?}");
        }
    }
}

/// The action's run step, run with `given` inputs and the binary under
/// test on PATH (as the install step leaves it): its output and outputs.
fn run_step_alone(given: &[(&str, &str)]) -> (Output, BTreeMap<String, String>) {
    run_step_on("Linux", None, given)
}

/// The action's run step on a runner of `os` (`RUNNER_OS`), with `more` on
/// PATH after backoff, run with `given` inputs.
fn run_step_on(
    os: &'static str,
    more: Option<&Path>,
    given: &[(&str, &str)],
) -> (Output, BTreeMap<String, String>) {
    let action = action();
    let cache = Cache(TempDir::new("action-cache"));
    let mut runner = StepRunner::new(&action, given, &cache);
    runner.os = os;
    let bin_dir = runner.dir.join("bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    std::os::unix::fs::symlink(crate::support::bin(), bin_dir.join("backoff")).unwrap();
    let first = std::iter::once(bin_dir).chain(more.map(Path::to_owned));
    runner.path = std::env::join_paths(first.chain(std::env::split_paths(&runner.path))).unwrap();
    let i = step_of(&action, "run");
    let out = runner.step_output(i, &action["runs"]["steps"][i]);
    let got = outputs(&runner.files("output", i));
    (out, got)
}

#[test]
fn the_composite_action_runs_a_simple_command_directly_so_that_its_preset_applies() {
    // A 404 does not heal: curl's preset tries it once.
    let server = Server::start(vec![Reply::new(404, "no\n")]);
    let simple = format!("curl -fsS {}\n", server.url);
    let (out, got) = run_step_alone(&[("run", &simple), ("base", "1ms"), ("args", "-v")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(22), "{stderr}");
    assert_eq!(server.requests().len(), 1, "{stderr}");
    assert_eq!(got, expected(1, 0, 22, "failure", "stopped"), "{stderr}");
    assert!(
        stderr.contains(&format!("running curl -fsS {}\n", server.url)),
        "{stderr}"
    );
    assert!(
        !stderr.contains("::warning title=backoff::the run input"),
        "{stderr}"
    );

    // Behind shell syntax curl is bash's: each 404 is retried, which the
    // action says once, with the fix.
    let server = Server::cycling(vec![Reply::new(404, "no\n")]);
    let piped = format!("curl -fsS {} | cat", server.url);
    let (out, got) = run_step_alone(&[("run", &piped), ("base", "1ms"), ("attempts", "3")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(server.requests().len(), 3, "{stderr}");
    assert_eq!(got["reason"], "exhausted", "{stderr}");
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("::warning title=backoff::the run input"))
        .collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(
        said[0].contains("bash runs it and curl's preset does not apply")
            && said[0].contains("add --preset curl to args"),
        "{stderr}"
    );

    // The fix: the preset asked for applies to what bash prints, and
    // backoff says what of it cannot.
    let server = Server::cycling(vec![Reply::new(404, "no\n")]);
    let piped = format!("curl -fsS {} | cat", server.url);
    let (out, got) = run_step_alone(&[
        ("run", &piped),
        ("base", "1ms"),
        ("attempts", "3"),
        ("args", "--preset curl"),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(server.requests().len(), 1, "{stderr}");
    assert_eq!(got["reason"], "stopped", "{stderr}");
    assert!(
        !stderr.contains("::warning title=backoff::the run input"),
        "{stderr}"
    );
    assert!(
        stderr.contains("--preset curl cannot read the arguments of 'bash'"),
        "{stderr}"
    );
}

#[test]
fn a_run_input_that_execs_a_simple_command_runs_it_directly() {
    // `run` (URL in it the server's, which answers 404) run with `given`
    // and -v: the requests made, what was said, and the reason.
    let request = |run: &str, given: &[(&str, &str)]| {
        let server = Server::cycling(vec![Reply::new(404, "no\n")]);
        let run = run.replace("URL", &server.url);
        let mut inputs = vec![("run", run.as_str()), ("base", "1ms"), ("args", "-v")];
        inputs.extend_from_slice(given);
        let (out, got) = run_step_alone(&inputs);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let said = format!("{run:?}: {stderr}");
        (
            server.requests().len(),
            stderr.replace(&server.url, "URL"),
            got["reason"].clone(),
            said,
        )
    };
    // `exec` is what bash would do with it: curl's preset still applies,
    // with spaces or a tab after the word.
    for run in ["exec curl -fsS URL", "  exec\tcurl -fsS URL\n"] {
        let (requests, stderr, reason, said) = request(run, &[]);
        assert_eq!((requests, reason.as_str()), (1, "stopped"), "{said}");
        assert!(stderr.contains("running curl -fsS URL\n"), "{said}");
    }
    // Behind shell syntax, the warning names curl, not exec, nor the
    // assignments before it.
    for run in ["exec curl -fsS URL | cat", "A=1 B=2\tcurl -fsS URL"] {
        let (requests, stderr, _, said) = request(run, &[("attempts", "2")]);
        assert_eq!(requests, 2, "{said}");
        assert!(
            stderr.contains("bash runs it and curl's preset does not apply"),
            "{said}"
        );
    }
}

#[test]
fn on_windows_a_simple_command_runs_directly_only_when_it_is_an_exe() {
    // Git Bash finds scripts and npm's shell script beside npm.cmd, which
    // Windows' backoff cannot start: those stay bash's. Here `tool` has a
    // `tool.exe` beside it, as Git Bash's programs have; `npm` has none.
    let dir = TempDir::new("action-windows");
    for (name, body) in [
        ("tool", "#!/bin/sh\necho tool ran\n"),
        ("tool.exe", ""),
        ("npm", "#!/bin/sh\necho npm ran\n"),
    ] {
        std::fs::write(dir.join(name), body).unwrap();
        std::fs::set_permissions(
            dir.join(name),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
    }
    for (os, run, how) in [
        ("Windows", "tool x", "running tool x\n"),
        (
            "Windows",
            "npm ci",
            "running bash -eo pipefail -c 'npm ci'\n",
        ),
        ("Linux", "npm ci", "running npm ci\n"),
    ] {
        let (out, got) = run_step_on(os, Some(dir.path()), &[("run", run), ("args", "-v")]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(got["reason"], "success", "{os}, {run}: {stderr}");
        assert!(stderr.contains(how), "{os}, {run}: {stderr}");
    }
}

#[test]
fn a_run_input_with_shell_syntax_or_a_builtin_runs_with_bash() {
    let dir = TempDir::new("action-shell");
    let file = dir.join("said");
    for (run, said) in [
        // A variable, a redirection, an assignment, a builtin, two lines.
        ("echo \"$GITHUB_ACTIONS\" > said", "true"),
        ("X=1 sh -c 'echo $X' > said", "1"),
        ("cd . && echo here > said", "here"),
        ("echo one > said\necho two >> said", "one\ntwo"),
    ] {
        let run = run.replace("said", &file.display().to_string());
        let (out, got) = run_step_alone(&[("run", &run)]);
        assert!(out.status.success(), "{run}: {out:?}");
        assert_eq!(got["reason"], "success", "{run}");
        assert_eq!(
            std::fs::read_to_string(&file).unwrap().trim_end(),
            said,
            "{run}"
        );
    }
    // Plain words run directly: no shell reads them.
    let (out, _) = run_step_alone(&[("run", "echo a=b,c:d@e%f+g"), ("args", "-v")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "a=b,c:d@e%f+g\n");
    assert!(stderr.contains("running echo a=b,c:d@e%f+g\n"), "{stderr}");
}

#[test]
fn the_composite_actions_reason_names_every_reason_of_the_run_report() {
    let action = action();
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/schema/report.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let reasons = schema["properties"]["reason"]["enum"]
        .as_array()
        .expect("the report's reasons");
    let described = action["outputs"]["reason"]["description"].as_str().unwrap();
    let words: Vec<&str> = described
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .collect();
    for reason in reasons {
        let reason = reason.as_str().unwrap();
        assert!(words.contains(&reason), "{reason} not in: {described}");
    }
    // And the outcomes: the breaker's and the lock's skips.
    let outcome = action["outputs"]["outcome"]["description"]
        .as_str()
        .unwrap();
    for word in [
        "success",
        "failure",
        "cancelled",
        "skipped",
        "breaker",
        "lock",
    ] {
        assert!(outcome.contains(word), "{word} not in: {outcome}");
    }
}
