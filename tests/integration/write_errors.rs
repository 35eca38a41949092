//! What backoff writes that cannot be written whole: the step files of
//! GitHub Actions, on a disk that is full (a small tmpfs of the test's
//! own, where the test may mount one) and past the file size limit
//! (`RLIMIT_FSIZE`, which needs no privilege).

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::ci::{outputs, stderr_lines};
use crate::support::{TempDir, Tmpfs, command, file_size_limit, output_within};

/// What the step had written to `$GITHUB_OUTPUT` before backoff ran: an
/// output of about 4 KB.
fn earlier_outputs() -> String {
    format!("earlier<<EOF\n{}\nEOF\n", "x".repeat(3980))
}

/// What the step had written to its summary before backoff ran: about
/// 4 KB of Markdown.
fn earlier_summary() -> String {
    let mut doc = String::from("# Earlier\n\n");
    while doc.len() < 3990 {
        doc.push_str("- a line of the summary\n");
    }
    doc
}

/// `backoff ARGS` in a GitHub Actions step whose files are `output` and
/// `summary`.
fn in_step(output: &Path, summary: &Path, args: &[&str]) -> Command {
    let mut cmd = command(args);
    cmd.env("GITHUB_ACTIONS", "true")
        .env("GITHUB_OUTPUT", output)
        .env("GITHUB_STEP_SUMMARY", summary)
        .stdout(Stdio::null());
    cmd
}

/// Runs `cmd` to its end (within `PATIENCE`), with stdin on /dev/null,
/// stderr captured, and stdout as `cmd` sets it.
fn finished(mut cmd: Command) -> Output {
    let child = cmd
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run backoff");
    let out = output_within(child);
    assert!(out.status.code().is_some(), "killed: {out:?}");
    out
}

/// The run of the report: two attempts of `false`, quiet.
const FAILING: &[&str] = &["-q", "--attempts", "2", "--base", "1ms", "--", "false"];

/// Checks that a run that could not append to its step files left each as
/// it was, said so once for each in a warning that names `error`, and
/// kept the command's exit status.
fn left_as_they_were(out: &Output, output: &Path, summary: &Path, error: &str) {
    let lines = stderr_lines(out);
    assert_eq!(out.status.code(), Some(1), "{lines:?}");
    assert_eq!(lines.len(), 2, "{lines:?}");
    for (line, (var, path)) in lines
        .iter()
        .zip([("GITHUB_OUTPUT", output), ("GITHUB_STEP_SUMMARY", summary)])
    {
        let start = format!(
            "::warning title=backoff::cannot write ${var} '{}': {error}",
            path.display()
        );
        assert!(
            line.starts_with(&start) && line.ends_with("; left as it was"),
            "{line}"
        );
    }
    assert_eq!(std::fs::read_to_string(output).unwrap(), earlier_outputs());
    assert_eq!(std::fs::read_to_string(summary).unwrap(), earlier_summary());
    // The runner still reads the step's earlier outputs.
    assert_eq!(outputs(output).len(), 1);
}

#[test]
fn step_files_on_a_full_disk_are_left_as_they_were() {
    let test = "step_files_on_a_full_disk_are_left_as_they_were";
    let Some(disk) = Tmpfs::mount(test, 64) else {
        return;
    };
    let (output, summary) = (disk.join("output"), disk.join("summary"));
    std::fs::write(&output, earlier_outputs()).unwrap();
    std::fs::write(&summary, earlier_summary()).unwrap();
    // What is left: the ends of the files' last pages, a few bytes of
    // what backoff appends.
    disk.fill("filler");
    let out = finished(in_step(&output, &summary, FAILING));
    left_as_they_were(&out, &output, &summary, "No space left on device");

    // With room again, the same run appends its outputs after the earlier
    // ones, as the runner reads them.
    std::fs::remove_file(disk.join("filler")).unwrap();
    let out = finished(in_step(&output, &summary, FAILING));
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stderr.is_empty(), "{:?}", stderr_lines(&out));
    let read = outputs(&output);
    assert_eq!(read["earlier"], "x".repeat(3980));
    assert_eq!(read["attempts"], "2");
    let doc = std::fs::read_to_string(&summary).unwrap();
    assert!(
        doc.starts_with(&earlier_summary()) && doc.contains("\n| 2 | exit 1 | "),
        "{doc}"
    );
}

#[test]
fn step_files_past_the_file_size_limit_are_cut_back_to_what_they_were() {
    let dir = TempDir::new("step-fsize");
    let (output, summary) = (dir.join("output"), dir.join("summary"));
    std::fs::write(&output, earlier_outputs()).unwrap();
    std::fs::write(&summary, earlier_summary()).unwrap();
    // The first few bytes of each append fit, then the write fails.
    let mut cmd = in_step(&output, &summary, FAILING);
    file_size_limit(&mut cmd, 4010);
    let out = finished(cmd);
    left_as_they_were(&out, &output, &summary, "File too large");
}

#[test]
fn a_chart_is_replaced_whole_or_left_as_it_was() {
    let test = "a_chart_is_replaced_whole_or_left_as_it_was";
    let Some(disk) = Tmpfs::mount(test, 64) else {
        return;
    };
    let chart = disk.join("chart.svg");
    let plot = |path: &Path| {
        crate::support::backoff(["simulate", "--clients", "20", "--runs", "2", "--plot"])
            .arg(path)
            .output()
            .unwrap()
    };
    let first = plot(&chart);
    assert!(first.status.success(), "{first:?}");
    let drawn = std::fs::read(&chart).unwrap();
    assert!(drawn.ends_with(b"</svg>\n"), "a whole chart");
    // A full disk: the new chart cannot be written, and the old one stays
    // whole.
    disk.fill("filler");
    let out = plot(&chart);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{err}");
    // The line names the file given and the cause, not the temporary
    // file that was removed.
    assert_eq!(
        err,
        format!(
            "backoff: cannot write --plot '{}': No space left on device (os error 28)\n",
            chart.display()
        )
    );
    assert_eq!(std::fs::read(&chart).unwrap(), drawn);
    let left: Vec<_> = std::fs::read_dir(disk.join(""))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 2, "no temporary file left: {left:?}");
    // A FIFO is not written through, nor waited for.
    std::fs::remove_file(disk.join("filler")).unwrap();
    let fifo = disk.join("fifo.svg");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let out = plot(&fifo);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{err}");
    assert!(
        err.contains("is a FIFO; backoff writes only regular files"),
        "{err}"
    );
}

#[test]
fn what_a_subcommand_help_or_version_cannot_write_to_stdout_is_one_line_and_125() {
    let dir = TempDir::new("stdout-full");
    let budgets = dir.path().to_str().unwrap();
    let mut commands: Vec<Vec<&str>> = vec![
        vec!["--version"],
        vec!["--help"],
        vec!["-h"],
        vec!["schedule", "--format", "json"],
        vec![
            "simulate",
            "--runs",
            "2",
            "--clients",
            "5",
            "--format",
            "json",
        ],
        vec!["--generate", "man"],
    ];
    for state in ["budget", "breaker", "throttle"] {
        commands.push(vec![
            state,
            "show",
            "k",
            "--budget-dir",
            budgets,
            "--format",
            "json",
        ]);
    }
    commands.push(vec![
        "budget",
        "reset",
        "k",
        "--budget-dir",
        budgets,
        "--format",
        "json",
    ]);
    for args in &commands {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = finished({
            let mut cmd = command(args);
            cmd.stdout(full);
            cmd
        });
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains("cannot write to stdout: No space left on device"),
            "{args:?}: {err}"
        );
        // A reader that goes away is no error: `| head` stays quiet.
        let mut cmd = command(args);
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = output_within(child);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
        assert!(out.stderr.is_empty(), "{args:?}: {out:?}");
    }
}
