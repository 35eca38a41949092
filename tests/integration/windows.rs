//! The Windows build, run under Wine: `.ci/run` builds `backoff.exe`, the
//! test helper (`tests/windows/helper.c`) and Wine's missing
//! `bcryptprimitives.dll` (`tests/windows/bcryptprimitives.c`) into one
//! directory, named by `WINE_BACKOFF_DIR`; without it each test is
//! skipped with a line. Wine passes on only the low 8 bits of an exit
//! code to the Linux process that started it: a 32-bit code is checked in
//! what backoff prints.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{PATIENCE, TempDir, eventually, output_for};

/// The directory of the Windows build, or `None` (said on one line).
fn windows_dir(test: &str) -> Option<PathBuf> {
    match std::env::var_os("WINE_BACKOFF_DIR") {
        Some(dir) if Path::new(&dir).join("backoff.exe").exists() => Some(PathBuf::from(dir)),
        _ => {
            eprintln!(
                "skipped {test}: no Windows build (WINE_BACKOFF_DIR, made by .ci/run with MinGW and Wine)"
            );
            None
        }
    }
}

/// `program` of the Windows build, run under Wine with `args`, from the
/// build's directory (where Windows looks for a program first).
fn wine(dir: &Path, program: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new("wine");
    cmd.arg(dir.join(program))
        .args(args)
        .current_dir(dir)
        .env("WINEDEBUG", "-all")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// How long a program under Wine may take: three times `PATIENCE`, since
/// each process start goes through the Wine server, which a loaded
/// machine slows down.
const WINE_PATIENCE: Duration = Duration::from_secs(3 * PATIENCE.as_secs());

/// The output of backoff.exe run with `args`, within `WINE_PATIENCE`.
fn run(dir: &Path, args: &[&str]) -> std::process::Output {
    output_for(
        wine(dir, "backoff.exe", args).spawn().expect("start wine"),
        WINE_PATIENCE,
    )
}

/// The Windows name of a Linux path (Wine's drive Z: is `/`).
fn windows_path(path: &Path) -> String {
    format!("Z:{}", path.display()).replace('/', "\\")
}

/// How many of the process ids in `pids` still run, as Windows sees them.
fn still_running(dir: &Path, pids: &Path) -> i32 {
    let out = output_for(
        wine(dir, "helper.exe", &["alive", &windows_path(pids)])
            .spawn()
            .expect("start wine"),
        WINE_PATIENCE,
    );
    out.status.code().expect("an exit code")
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn failures_are_retried_and_the_last_exit_code_kept() {
    let Some(dir) = windows_dir("failures_are_retried_and_the_last_exit_code_kept") else {
        return;
    };
    let out = run(
        &dir,
        &[
            "--base",
            "1ms",
            "--max-retries",
            "2",
            "--",
            "cmd",
            "/c",
            "exit 3",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("attempt 1/3 failed (exit 3)"), "{err}");
    assert!(err.contains("attempt 3/3 failed (exit 3)"), "{err}");
    assert!(err.contains("giving up after 3 attempts"), "{err}");
    let out = run(&dir, &["--base", "1ms", "--", "cmd", "/c", "exit 0"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
}

#[test]
fn a_32_bit_exit_code_is_matched_in_hex_and_printed_with_its_name() {
    let Some(dir) = windows_dir("a_32_bit_exit_code_is_matched_in_hex_and_printed_with_its_name")
    else {
        return;
    };
    let out = run(
        &dir,
        &[
            "--base",
            "1ms",
            "--max-retries",
            "5",
            "--stop-on",
            "0xC0000005",
            "--",
            "helper.exe",
            "exit",
            "0xC0000005",
        ],
    );
    let err = stderr(&out);
    assert!(
        err.contains("attempt 1/6 failed (exit 0xC0000005 (STATUS_ACCESS_VIOLATION))"),
        "{err}"
    );
    assert!(!err.contains("attempt 2/"), "the stop rule matched: {err}");
    // Wine hands Linux the code's low 8 bits.
    assert_eq!(out.status.code(), Some(0x05));
}

#[test]
fn signal_rules_and_unix_signals_are_refused_with_the_way_out() {
    let Some(dir) = windows_dir("signal_rules_and_unix_signals_are_refused_with_the_way_out")
    else {
        return;
    };
    let out = run(
        &dir,
        &["--retry-on", "sig:TERM", "--", "cmd", "/c", "exit 0"],
    );
    assert_eq!(out.status.code(), Some(125));
    assert!(
        stderr(&out).contains(
            "no process dies by a signal on Windows; one ended by Ctrl-C exits with 0xC000013A"
        ),
        "{}",
        stderr(&out)
    );
    let out = run(&dir, &["--signal", "TERM", "--", "cmd", "/c", "exit 0"]);
    assert_eq!(out.status.code(), Some(125));
    assert!(
        stderr(&out).contains("an attempt is sent CTRL_BREAK"),
        "{}",
        stderr(&out)
    );
    let out = run(&dir, &["--signal", "ctrl_c", "--", "cmd", "/c", "exit 0"]);
    assert_eq!(out.status.code(), Some(125));
    assert!(
        stderr(&out).contains("only CTRL_BREAK reaches an attempt on Windows"),
        "{}",
        stderr(&out)
    );
    let out = run(
        &dir,
        &["--signal", "ctrl_break", "--", "cmd", "/c", "exit 0"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn a_timeout_ends_the_whole_three_deep_tree() {
    let Some(dir) = windows_dir("a_timeout_ends_the_whole_three_deep_tree") else {
        return;
    };
    let tmp = TempDir::new("win-tree");
    let pids = tmp.join("pids");
    let started = Instant::now();
    let out = run(
        &dir,
        &[
            "--timeout",
            "2s",
            "--kill-after",
            "1s",
            "--max-retries",
            "0",
            "--",
            "helper.exe",
            "tree",
            "3",
            "60000",
            &windows_path(&pids),
        ],
    );
    assert_eq!(out.status.code(), Some(124), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("failed (timeout)"),
        "{}",
        stderr(&out)
    );
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(tmp.lines("pids").len(), 3, "the tree started");
    assert_eq!(still_running(&dir, &pids), 0, "nothing of the tree is left");
}

#[test]
fn a_command_that_ignores_ctrl_break_is_ended_by_its_job() {
    let Some(dir) = windows_dir("a_command_that_ignores_ctrl_break_is_ended_by_its_job") else {
        return;
    };
    let started = Instant::now();
    let out = run(
        &dir,
        &[
            "--timeout",
            "1s",
            "--kill-after",
            "3s",
            "--max-retries",
            "0",
            "--",
            "helper.exe",
            "deaf",
            "60000",
        ],
    );
    let took = started.elapsed();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(124), "{err}");
    assert!(took < Duration::from_secs(30));
    // Where Ctrl-Break could be sent, the command ignored it, and its job
    // was ended --kill-after later; where it could not (a headless Wine),
    // at once, as said once.
    let unsent = err
        .matches("cannot send CTRL_BREAK to the timed-out attempt")
        .count();
    assert!(
        unsent == 1 || took >= Duration::from_secs(4),
        "{took:?}: {err}"
    );
}

#[test]
fn nothing_of_the_tree_outlives_a_killed_backoff() {
    let Some(dir) = windows_dir("nothing_of_the_tree_outlives_a_killed_backoff") else {
        return;
    };
    let tmp = TempDir::new("win-killed");
    let pids = tmp.join("pids");
    let mut child = wine(
        &dir,
        "backoff.exe",
        &[
            "--",
            "helper.exe",
            "tree",
            "3",
            "60000",
            &windows_path(&pids),
        ],
    )
    .spawn()
    .expect("start wine");
    eventually("the tree of three started", || tmp.lines("pids").len() == 3);
    assert_eq!(still_running(&dir, &pids), 3, "the tree runs");
    // As TerminateProcess would: backoff gets no say.
    child.kill().expect("kill backoff");
    let _ = child.wait();
    eventually("the tree ended with backoff", || {
        still_running(&dir, &pids) == 0
    });
}

#[test]
fn the_deadline_ends_the_run_on_time() {
    let Some(dir) = windows_dir("the_deadline_ends_the_run_on_time") else {
        return;
    };
    let started = Instant::now();
    let out = run(
        &dir,
        &[
            "--base",
            "200ms",
            "--cap",
            "200ms",
            "--jitter",
            "none",
            "--max-time",
            "2s",
            "--max-retries",
            "100",
            "--",
            "cmd",
            "/c",
            "exit 1",
        ],
    );
    let took = started.elapsed();
    let err = stderr(&out);
    // Delays of 200 ms between attempts until the deadline: the run ends
    // before it, when the next retry would pass it (exit 1), or at it, by
    // ending the attempt then running (a timeout, 124).
    assert!(matches!(out.status.code(), Some(1 | 124)), "{err}");
    assert!(err.contains("retrying in 200ms"), "{err}");
    assert!(
        err.contains("--max-time") || err.contains("(timeout)"),
        "{err}"
    );
    assert!(took >= Duration::from_millis(1500), "{took:?}");
    assert!(took < PATIENCE, "{took:?}");
}

#[test]
fn a_program_not_found_exits_127_one_not_runnable_126_and_a_path_with_spaces_runs() {
    let Some(dir) = windows_dir(
        "a_program_not_found_exits_127_one_not_runnable_126_and_a_path_with_spaces_runs",
    ) else {
        return;
    };
    let out = run(&dir, &["--", "no-such-program.exe"]);
    assert_eq!(out.status.code(), Some(127), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot run 'no-such-program.exe'"),
        "{}",
        stderr(&out)
    );
    // A file that is no program: 126, as on Unix.
    let tmp = TempDir::new("win spaces");
    let text = tmp.join("notes.exe");
    std::fs::write(&text, "not a program").unwrap();
    let out = run(&dir, &["--", &windows_path(&text)]);
    assert_eq!(out.status.code(), Some(126), "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot run"), "{}", stderr(&out));
    let spaced = tmp.join("a dir").join("helper copy.exe");
    std::fs::create_dir_all(spaced.parent().unwrap()).unwrap();
    std::fs::copy(dir.join("helper.exe"), &spaced).unwrap();
    let out = run(&dir, &["--", &windows_path(&spaced), "exit", "7"]);
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
}

#[test]
fn hooks_run_under_cmd_with_the_run_s_variables_and_leave_nothing() {
    let Some(dir) = windows_dir("hooks_run_under_cmd_with_the_run_s_variables_and_leave_nothing")
    else {
        return;
    };
    let tmp = TempDir::new("win-hooks");
    let pids = tmp.join("pids");
    let hook = format!(
        "echo hook for attempt %BACKOFF_ATTEMPT% & helper.exe spawn 60000 {}",
        windows_path(&pids)
    );
    let out = run(
        &dir,
        &[
            "--base",
            "1ms",
            "--max-retries",
            "1",
            "--on-retry",
            &hook,
            "--",
            "cmd",
            "/c",
            "exit 4",
        ],
    );
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("hook for attempt 1"),
        "{}",
        stderr(&out)
    );
    assert_eq!(tmp.lines("pids").len(), 1, "the hook started its child");
    assert_eq!(still_running(&dir, &pids), 0, "the hook's child was ended");
}

#[test]
fn the_report_and_json_events_are_written() {
    let Some(dir) = windows_dir("the_report_and_json_events_are_written") else {
        return;
    };
    let tmp = TempDir::new("win-report");
    let report = tmp.join("report.json");
    let metrics = tmp.join("runs.prom");
    let out = run(
        &dir,
        &[
            "--base",
            "1ms",
            "--max-retries",
            "1",
            "--log-format",
            "json",
            "--report",
            &windows_path(&report),
            "--",
            "cmd",
            "/c",
            "exit 2",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let events: Vec<serde_json::Value> = stderr(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(events.first().unwrap()["event"], "start");
    assert_eq!(events.last().unwrap()["event"], "give_up");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report).expect("a report")).unwrap();
    assert_eq!(
        report["attempts"].as_array().map(Vec::len),
        Some(2),
        "{report}"
    );
    assert_eq!(report["final_status"], 2, "{report}");
    // The metrics file, updated by two runs.
    for _ in 0..2 {
        let out = run(
            &dir,
            &[
                "--metrics-file",
                &windows_path(&metrics),
                "--",
                "cmd",
                "/c",
                "exit 0",
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let text = std::fs::read_to_string(&metrics).unwrap();
    assert!(
        text.contains("backoff_runs_total{name=\"cmd\"} 2"),
        "{text}"
    );
}

#[test]
fn kept_output_is_written_out_when_the_run_fails() {
    let Some(dir) = windows_dir("kept_output_is_written_out_when_the_run_fails") else {
        return;
    };
    let out = run(
        &dir,
        &[
            "--output",
            "on-failure",
            "--base",
            "1ms",
            "--max-retries",
            "1",
            "--",
            "cmd",
            "/c",
            "echo out %BACKOFF_ATTEMPT% & exit 1",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("out 1") && stdout.contains("out 2"),
        "{stdout}"
    );
    assert!(
        stderr(&out).contains("giving up after 2 attempts"),
        "{}",
        stderr(&out)
    );
    let out = run(
        &dir,
        &["--output", "on-failure", "--", "cmd", "/c", "echo quiet"],
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn a_budget_file_is_shared_by_two_processes() {
    let Some(dir) = windows_dir("a_budget_file_is_shared_by_two_processes") else {
        return;
    };
    let tmp = TempDir::new("win-budget");
    let store = windows_path(tmp.path());
    // One token in all: the first run's retry takes it, the second run
    // finds none left and does not retry.
    let budgeted = |store: &str| {
        run(
            &dir,
            &[
                "--budget",
                "shared",
                "--budget-dir",
                store,
                "--budget-burst",
                "1",
                "--budget-ratio",
                "0.01",
                "--base",
                "1ms",
                "--max-retries",
                "1",
                "--",
                "cmd",
                "/c",
                "exit 1",
            ],
        )
    };
    let out = budgeted(&store);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("attempt 2/2 failed"),
        "the first run retried: {err}"
    );
    let out = budgeted(&store);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        !err.contains("attempt 2/2"),
        "the second run found the budget spent: {err}"
    );
    assert!(err.contains("budget"), "{err}");
    assert!(tmp.join("shared.budget").exists());

    // A directory backoff makes for the state is one it trusts after.
    let made = windows_path(&tmp.join("made").join("state"));
    for _ in 0..2 {
        let out = budgeted(&made);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(!err.contains("unavailable"), "{err}");
    }
    assert!(
        tmp.join("made")
            .join("state")
            .join("shared.budget")
            .exists()
    );

    // Two runs at once share three tokens: three retries in all.
    let store = windows_path(&tmp.join("both"));
    let start = |name: &str| {
        wine(
            &dir,
            "backoff.exe",
            &[
                "--budget",
                "both",
                "--budget-dir",
                &store,
                "--budget-burst",
                "3",
                "--budget-ratio",
                "0.01",
                "--base",
                "50ms",
                "--cap",
                "50ms",
                "--max-retries",
                "5",
                "--name",
                name,
                "--",
                "cmd",
                "/c",
                "exit 1",
            ],
        )
        .spawn()
        .expect("start wine")
    };
    let (a, b) = (start("a"), start("b"));
    let retries: usize = [output_for(a, WINE_PATIENCE), output_for(b, WINE_PATIENCE)]
        .iter()
        .map(|out| stderr(out).matches("; retrying in").count())
        .sum();
    assert_eq!(retries, 3, "three tokens, three retries in all");
}

#[test]
fn output_rules_see_the_output_which_still_passes_on() {
    let Some(dir) = windows_dir("output_rules_see_the_output_which_still_passes_on") else {
        return;
    };
    let out = run(
        &dir,
        &[
            "--base",
            "1ms",
            "--max-retries",
            "5",
            "--until-output",
            "ready 3",
            "--",
            "cmd",
            "/c",
            "echo ready %BACKOFF_ATTEMPT%",
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("condition met on attempt 3"), "{err}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.lines().map(str::trim_end).collect::<Vec<_>>(),
        ["ready 1", "ready 2", "ready 3"]
    );
    let out = run(
        &dir,
        &[
            "--base",
            "1ms",
            "--max-retries",
            "5",
            "--stop-if-output",
            "fatal",
            "--",
            "cmd",
            "/c",
            "echo fatal error 1>&2 & exit 1",
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("fatal error"), "stderr passes on: {err}");
    assert!(!err.contains("attempt 2/"), "{err}");
}

#[test]
fn an_attempt_silent_past_the_idle_timeout_is_ended() {
    let Some(dir) = windows_dir("an_attempt_silent_past_the_idle_timeout_is_ended") else {
        return;
    };
    let started = Instant::now();
    let out = run(
        &dir,
        &[
            "--idle-timeout",
            "1s",
            "--kill-after",
            "500ms",
            "--max-retries",
            "0",
            "--",
            "helper.exe",
            "sleep",
            "60000",
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(124), "{err}");
    assert!(err.contains("failed (idle timeout)"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn held_stdout_is_the_last_attempt_s_and_replayed_stdin_every_attempt_s() {
    let Some(dir) =
        windows_dir("held_stdout_is_the_last_attempt_s_and_replayed_stdin_every_attempt_s")
    else {
        return;
    };
    let out = run(
        &dir,
        &[
            "--hold-stdout",
            "--base",
            "1ms",
            "--max-retries",
            "2",
            "--",
            "cmd",
            "/c",
            "echo held %BACKOFF_ATTEMPT% & exit 1",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim_end(), "held 3");
    let mut child = wine(
        &dir,
        "backoff.exe",
        &[
            "--replay-stdin",
            "--base",
            "1ms",
            "--max-retries",
            "1",
            "--",
            "cmd",
            "/c",
            "helper.exe cat & exit 1",
        ],
    )
    .stdin(Stdio::piped())
    .spawn()
    .expect("start wine");
    {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"line one\nline two\n").unwrap();
    }
    let out = output_for(child, WINE_PATIENCE);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .collect::<Vec<_>>(),
        ["line one", "line two", "line one", "line two"]
    );
}

/// The words of a `cmd.exe` line: split at spaces outside double quotes,
/// the quotes kept off (Wine puts them back around a word with spaces
/// when it makes the Windows command line).
fn cmd_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ' ' if !quoted => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

#[test]
fn the_guide_s_windows_examples_run_under_cmd() {
    let Some(dir) = windows_dir("the_guide_s_windows_examples_run_under_cmd") else {
        return;
    };
    let guide =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/guide.md"))
            .unwrap();
    // The examples typed at a `cmd.exe` prompt (`> backoff …`).
    let examples: Vec<&str> = guide
        .lines()
        .filter_map(|l| l.trim().strip_prefix("> "))
        .filter(|l| l.starts_with("backoff "))
        .collect();
    assert!(examples.len() >= 2, "{examples:?}");
    for example in examples {
        let mut cmd = Command::new("wine");
        cmd.arg("cmd")
            .arg("/c")
            .args(cmd_words(example))
            .current_dir(&dir)
            .env("WINEDEBUG", "-all")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let out = output_for(cmd.spawn().expect("start wine"), WINE_PATIENCE);
        // The crash is not retried, and its status is backoff's (Wine
        // hands Linux its low 8 bits); every other example succeeds.
        let crash = example.contains("--stop-on 0xC0000005");
        assert_eq!(
            out.status.code(),
            Some(if crash { 0x05 } else { 0 }),
            "{example}\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            stderr(&out)
        );
        if crash {
            let err = stderr(&out);
            assert!(
                err.contains("attempt 1/7 failed (exit 0xC0000005 (STATUS_ACCESS_VIOLATION))")
                    && !err.contains("attempt 2/"),
                "{err}"
            );
        }
        if example.contains("--on-retry") {
            let shown = String::from_utf8_lossy(&out.stdout).into_owned() + &stderr(&out);
            assert!(shown.contains("retry after attempt 2"), "{shown}");
        }
    }
}

#[test]
fn a_hook_s_own_quotes_reach_cmd_and_a_one_word_command_is_told_cmd() {
    let Some(dir) = windows_dir("a_hook_s_own_quotes_reach_cmd_and_a_one_word_command_is_told_cmd")
    else {
        return;
    };
    let out = run(
        &dir,
        &[
            "--base",
            "1ms",
            "--max-retries",
            "1",
            "--on-retry",
            "echo \"hello world\" & echo done",
            "--",
            "cmd",
            "/c",
            "exit 1",
        ],
    );
    let err = stderr(&out);
    assert!(
        err.contains("\"hello world\" \r\ndone") || err.contains("\"hello world\" \ndone"),
        "{err}"
    );
    assert!(!err.contains("\\\""), "{err}");
    // A command line given as one word: the advice names cmd, and works.
    let out = run(&dir, &["--", "helper.exe exit 0 | more"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(127), "{err}");
    assert!(
        err.contains(
            "did you mean to run it with a shell? backoff -- cmd /c \"helper.exe exit 0 | more\""
        ),
        "{err}"
    );
    let advised = run(&dir, &["--", "cmd", "/c", "helper.exe exit 0 | more"]);
    assert_eq!(advised.status.code(), Some(0), "{}", stderr(&advised));
}

#[test]
fn held_stdout_that_no_one_reads_is_given_up_at_the_deadline() {
    let Some(dir) = windows_dir("held_stdout_that_no_one_reads_is_given_up_at_the_deadline") else {
        return;
    };
    let tmp = TempDir::new("win-stalled");
    // Far more than a pipe holds: 3 MB, from helper.exe's `cat` of a file.
    let big = tmp.join("big.txt");
    std::fs::write(&big, "x".repeat(99).repeat(30_000)).unwrap();
    let errors = tmp.join("stderr");
    let line = format!("helper.exe cat < {}", windows_path(&big));
    let mut child = wine(
        &dir,
        "backoff.exe",
        &[
            "--hold-stdout",
            "--max-time",
            "3s",
            "--",
            "cmd",
            "/c",
            &line,
        ],
    )
    .stderr(std::fs::File::create(&errors).unwrap())
    .spawn()
    .expect("start wine");
    // Its stdout is a pipe no one reads until backoff has ended.
    let _unread = child.stdout.take();
    let started = Instant::now();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait()));
    let status = rx
        .recv_timeout(WINE_PATIENCE)
        .expect("backoff ended")
        .unwrap();
    let err = std::fs::read_to_string(&errors).unwrap();
    assert_eq!(status.code(), Some(124), "{err}");
    assert!(started.elapsed() < WINE_PATIENCE);
    assert!(
        err.contains("stdout took no more before the time limit"),
        "{err}"
    );
}

#[test]
fn a_lock_held_by_one_run_keeps_another_out_and_names_its_holder() {
    let Some(dir) = windows_dir("a_lock_held_by_one_run_keeps_another_out_and_names_its_holder")
    else {
        return;
    };
    let tmp = TempDir::new("win-lock");
    let store = windows_path(tmp.path());
    let mut holder = wine(
        &dir,
        "backoff.exe",
        &[
            "--lock",
            "deploy",
            "--budget-dir",
            &store,
            "--",
            "helper.exe",
            "sleep",
            "60000",
        ],
    )
    .spawn()
    .expect("start wine");
    let show = || {
        stderr_and_out(&run(
            &dir,
            &["lock", "show", "deploy", "--budget-dir", &store],
        ))
    };
    eventually("the first run holds the lock", || {
        show().contains("held by pid")
    });
    let out = run(
        &dir,
        &[
            "--lock",
            "deploy",
            "--budget-dir",
            &store,
            "--",
            "cmd",
            "/c",
            "exit 0",
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(75), "{err}");
    assert!(err.contains("lock 'deploy' is held by pid"), "{err}");
    // The holder killed, its lock goes with it.
    holder.kill().expect("kill backoff");
    let _ = holder.wait();
    let out = run(
        &dir,
        &[
            "--lock",
            "deploy",
            "--budget-dir",
            &store,
            "--",
            "cmd",
            "/c",
            "exit 0",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

fn stderr_and_out(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &stderr(out)
}

#[test]
fn a_budget_in_redis_is_shared_from_windows() {
    let Some(dir) = windows_dir("a_budget_in_redis_is_shared_from_windows") else {
        return;
    };
    let redis = crate::fleet::Redis::start(None);
    let url = redis.url();
    // One token: the first run retries once, and the budget is spent.
    let out = run(
        &dir,
        &[
            "--budget",
            "win",
            "--budget-store",
            &url,
            "--budget-burst",
            "1",
            "--base",
            "1ms",
            "--max-retries",
            "2",
            "--",
            "cmd",
            "/c",
            "exit 1",
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("attempt 1/3 failed (exit 1)"), "{err}");
    assert!(
        err.contains("not retrying: retry budget exhausted"),
        "{err}"
    );
    let out = run(&dir, &["budget", "show", "win", "--budget-store", &url]);
    assert!(
        stderr_and_out(&out).contains("win: 0 of 1 tokens"),
        "{}",
        stderr_and_out(&out)
    );
}
