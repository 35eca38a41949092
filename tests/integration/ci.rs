//! CI logs: GitHub Actions folds, step outputs and summary, and GitLab CI
//! sections and the end table.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

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

fn stderr_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The `key=value` lines of a `$GITHUB_OUTPUT` file, each key once.
fn outputs(path: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(path).expect("read GITHUB_OUTPUT");
    let mut map = BTreeMap::new();
    for line in text.lines() {
        let (k, v) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("not key=value: {line:?} in {text:?}"));
        assert!(
            map.insert(k.to_owned(), v.to_owned()).is_none(),
            "{k} twice: {text:?}"
        );
    }
    map
}

/// The expected outputs, as a map.
fn expected(
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

/// Whether `cell` is a duration as backoff writes them (`12ms`, `1.20s`).
fn is_duration(cell: &str) -> bool {
    cell.ends_with("ms") || (cell.ends_with('s') && cell[..cell.len() - 1].parse::<f64>().is_ok())
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
fn a_symlink_or_a_fifo_as_a_step_file_is_refused_and_left_alone() {
    let dir = TempDir::new("gh-refused");
    let target = dir.join("target");
    std::fs::write(&target, "precious\n").unwrap();
    std::os::unix::fs::symlink(&target, dir.join("output")).unwrap();
    let fifo = dir.join("summary");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads a valid, NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    // -q: the outputs are written all the same, and a refusal is said.
    let out = finished(in_github_step(&dir, &["-q", "--", "true"]));
    assert_eq!(out.status.code(), Some(0));
    let lines = stderr_lines(&out);
    assert_eq!(
        lines,
        [
            format!(
                "backoff: cannot write $GITHUB_OUTPUT '{}': not a regular file",
                dir.join("output").display()
            ),
            format!(
                "backoff: cannot write $GITHUB_STEP_SUMMARY '{}': not a regular file",
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
