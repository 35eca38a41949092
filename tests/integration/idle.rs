//! `--idle-timeout`, and the limits told to the command: `BACKOFF_DEADLINE`
//! and `BACKOFF_TIMEOUT`.

use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use crate::support::{PATIENCE, Running, Stream, TempDir, backoff, command, events};

/// `args`, then the shell `script` as the command.
fn then_sh<'a>(args: &[&'a str], script: &'a str) -> Vec<&'a str> {
    let mut all = args.to_vec();
    all.extend(["--", "sh", "-c", script]);
    all
}

/// The `attempt_end` events of a JSON run of `args`, and how the run
/// exited.
fn attempt_ends(args: &[&str]) -> (Vec<Value>, Option<i32>) {
    let mut all = vec!["--log-format", "json"];
    all.extend_from_slice(args);
    let out = backoff(all).timeout(PATIENCE).output().unwrap();
    let ends = events(&out.stderr)
        .into_iter()
        .filter(|e| e["event"] == "attempt_end")
        .collect();
    (ends, out.status.code())
}

/// The one `attempt_end` of `ends`, which ran past `limit`.
fn timed_out<'a>(ends: &'a [Value], limit: &str) -> &'a Value {
    assert_eq!(ends.len(), 1, "{ends:?}");
    assert_eq!(ends[0]["outcome"]["kind"], "timeout", "{ends:?}");
    assert_eq!(ends[0]["outcome"]["limit"], limit, "{ends:?}");
    &ends[0]
}

/// Runs `script` under `--idle-timeout 300ms --attempts 1` and `args`,
/// waiting for the lines `live` while it runs; checks that the idle timeout
/// ended it, not before 300ms and long before it would have ended, and
/// returns the run and how long it took.
fn idled_out(args: &[&str], script: &str, live: &[&str]) -> (Running, Duration) {
    let mut all = vec!["--idle-timeout", "300ms", "--attempts", "1"];
    all.extend_from_slice(args);
    let start = Instant::now();
    let mut run = Running::start(command(then_sh(&all, script)));
    for line in live {
        run.wait_for(line);
    }
    let (status, _) = run.wait_exit(PATIENCE);
    let took = start.elapsed();
    assert_eq!(status.code(), Some(124), "{:?}", run.seen);
    assert!(took >= Duration::from_millis(300), "ended early: {took:?}");
    assert!(took < PATIENCE, "not ended by the idle timeout: {took:?}");
    assert!(
        run.stderr().iter().any(|l| l.contains("(idle timeout)")),
        "{:?}",
        run.seen
    );
    (run, took)
}

#[test]
fn a_command_silent_after_its_first_lines_is_ended_by_the_idle_timeout() {
    // The output is passed on as it comes, before the attempt ends.
    let (run, _) = idled_out(
        &[],
        "echo 'first line, out'; echo 'first line, err' >&2; exec sleep 60",
        &["first line, out", "first line, err"],
    );
    let out: Vec<&str> = run
        .seen
        .iter()
        .filter(|(s, _)| *s == Stream::Out)
        .map(|(_, l)| l.as_str())
        .collect();
    assert_eq!(out, ["first line, out"]);
    let err = run.stderr();
    assert_eq!(err[0], "first line, err", "{err:?}");
}

#[test]
fn a_command_that_keeps_printing_on_either_stream_is_not_idle() {
    for stream in ["", ">&2"] {
        let script = format!(
            "i=0; while [ $i -lt 30 ]; do echo tick $i {stream}; i=$((i+1)); sleep 0.1; done"
        );
        let start = Instant::now();
        let out = backoff([
            "--idle-timeout",
            "2s",
            "--attempts",
            "1",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .timeout(PATIENCE)
        .output()
        .unwrap();
        let took = start.elapsed();
        let (ticks, other) = if stream.is_empty() {
            (&out.stdout, &out.stderr)
        } else {
            (&out.stderr, &out.stdout)
        };
        assert_eq!(
            out.status.code(),
            Some(0),
            "{stream}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let expected = (0..30)
            .map(|i| format!("tick {i}\n"))
            .collect::<Vec<_>>()
            .concat();
        assert_eq!(String::from_utf8_lossy(ticks), expected, "{stream}");
        assert!(other.is_empty(), "{stream}: {other:?}");
        // It ran past the idle timeout, printing all along (20 times as
        // often as the timeout asks, for a loaded machine).
        assert!(took >= Duration::from_secs(3), "{stream}: {took:?}");
    }
}

#[test]
fn an_idle_timeout_is_a_timeout_with_limit_idle_and_can_be_retried() {
    let (ends, code) = attempt_ends(&then_sh(
        &[
            "--idle-timeout",
            "300ms",
            "--retry-on",
            "timeout",
            "--attempts",
            "3",
            "--base",
            "1ms",
        ],
        "[ \"$BACKOFF_ATTEMPT\" -ge 2 ] && exit 0; echo working; exec sleep 60",
    ));
    assert_eq!(code, Some(0), "{ends:?}");
    assert_eq!(timed_out(&ends, "idle")["next"], "retry", "{ends:?}");
}

#[test]
fn the_limit_that_runs_out_first_ends_the_attempt() {
    for (timeout, idle, limit) in [("300ms", "60s", "time"), ("60s", "300ms", "idle")] {
        let (ends, code) = attempt_ends(&[
            "--timeout",
            timeout,
            "--idle-timeout",
            idle,
            "--attempts",
            "1",
            "--",
            "sleep",
            "60",
        ]);
        assert_eq!(code, Some(124), "{ends:?}");
        timed_out(&ends, limit);
    }
}

#[test]
fn large_output_is_passed_on_unchanged_to_a_pipe_and_to_a_file() {
    let dir = TempDir::new("idle-bytes");
    let data: Vec<u8> = (0..3_000_017u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13).to_le_bytes()[0])
        .collect();
    std::fs::write(dir.join("data"), &data).unwrap();
    let args = ["--idle-timeout", "10s", "--attempts", "1", "--", "cat"];
    let out = backoff(args)
        .arg(dir.join("data"))
        .timeout(PATIENCE)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        out.stdout == data,
        "{} bytes through a pipe",
        out.stdout.len()
    );
    let mut cmd = command(args);
    cmd.arg(dir.join("data"))
        .stdout(std::fs::File::create(dir.join("copy")).unwrap());
    assert!(run_to_end(cmd).success());
    let copied = std::fs::read(dir.join("copy")).unwrap();
    assert!(copied == data, "{} bytes into a file", copied.len());
}

#[test]
fn output_held_up_by_a_reader_that_does_not_read_is_not_silence() {
    // `yes` fills the pipe nobody reads, then waits to write: the time
    // limit ends it, not the idle timeout, for both ways of passing on.
    for rules in [&[][..], &["--until-output", "never printed"]] {
        let mut cmd = command(rules);
        cmd.args([
            "--idle-timeout",
            "300ms",
            "--timeout",
            "3s",
            "--attempts",
            "1",
            "--",
            "yes",
        ]);
        let (mut run, unread) = Running::start_with_stalled_stdout(cmd);
        let (status, _) = run.wait_exit(PATIENCE);
        assert_eq!(status.code(), Some(124), "{rules:?}: {:?}", run.seen);
        let said = run.stderr().join("\n");
        assert!(said.contains("failed (timeout)"), "{rules:?}: {said}");
        drop(unread);
    }
}

#[test]
fn a_silent_command_that_ignores_the_signal_is_killed_after_kill_after() {
    // TERM stays ignored in the sleep the shell starts.
    let (_, took) = idled_out(
        &["--kill-after", "700ms"],
        "trap '' TERM; echo ready; sleep 60",
        &["ready"],
    );
    assert!(
        took >= Duration::from_secs(1),
        "killed before --kill-after: {took:?}"
    );
}

#[test]
fn the_idle_timeout_sends_the_chosen_signal() {
    backoff([
        "--idle-timeout",
        "300ms",
        "--signal",
        "INT",
        "--preserve-status",
        "--attempts",
        "1",
        "--",
        "sh",
        "-c",
        "trap 'exit 5' INT; echo ready; while :; do sleep 0.05; done",
    ])
    .timeout(PATIENCE)
    .assert()
    .code(5);
}

/// What the command's stdout and stderr are (`readlink` of them), with
/// backoff's own going to files, when backoff runs with `args`.
fn command_streams(args: &[&str]) -> (String, Vec<String>) {
    let dir = TempDir::new("idle-streams");
    let out = dir.join("out");
    let mut cmd = command(args);
    cmd.args(["--attempts", "1", "--", "sh", "-c"])
        .arg(
            "o=$(readlink /proc/$$/fd/1); e=$(readlink /proc/$$/fd/2); \
             printf '%s\\n%s\\n' \"$o\" \"$e\" > \"$0\"",
        )
        .arg(dir.join("links"))
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(dir.join("err")).unwrap());
    run_to_end(cmd);
    (out.display().to_string(), dir.lines("links"))
}

/// Runs `cmd` to its end, within `PATIENCE`, with the streams it was given.
fn run_to_end(mut cmd: Command) -> ExitStatus {
    let mut child = cmd.stdin(Stdio::null()).spawn().unwrap();
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            panic!("backoff did not end within {PATIENCE:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn only_the_idle_timeout_pipes_the_output_through_backoff() {
    let (out, links) = command_streams(&[]);
    assert_eq!(links[0], out);
    assert!(links[1].ends_with("/err"), "{links:?}");
    let (_, links) = command_streams(&["--idle-timeout", "10s"]);
    assert_eq!(links.len(), 2, "{links:?}");
    for link in links {
        assert!(link.starts_with("pipe:"), "{link}");
    }
}

/// The Unix time `text` (seconds with a fraction).
fn unix_time(text: &str) -> f64 {
    text.parse()
        .unwrap_or_else(|e| panic!("not a Unix time: {text:?}: {e}"))
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

#[test]
fn the_command_is_told_the_deadline_and_the_timeout() {
    let before = now();
    let out = backoff(then_sh(
        &[
            "--max-time",
            "30s",
            "--timeout",
            "2500ms",
            "--attempts",
            "2",
            "--base",
            "1ms",
        ],
        "echo \"$BACKOFF_DEADLINE $BACKOFF_TIMEOUT\"; [ \"$BACKOFF_ATTEMPT\" -ge 2 ]",
    ))
    // An inherited deadline is not passed on when backoff sets its own.
    .env("BACKOFF_DEADLINE", "1.000")
    .timeout(PATIENCE)
    .output()
    .unwrap();
    let after = now();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<(&str, &str)> = stdout
        .lines()
        .map(|l| l.split_once(' ').unwrap_or((l, "")))
        .collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    let deadlines: Vec<f64> = lines.iter().map(|(d, _)| unix_time(d)).collect();
    // The run started between `before` and `after`; a second is allowed
    // for clocks and rounding.
    for d in &deadlines {
        assert!(
            (before + 29.0..after + 31.0).contains(d),
            "deadline {d} not 30s after the start ({before}..{after})"
        );
    }
    // Every attempt is told the run's one deadline.
    assert!((deadlines[0] - deadlines[1]).abs() < 0.05, "{deadlines:?}");
    for (_, timeout) in &lines {
        assert_eq!(*timeout, "2.5");
    }
}

#[test]
fn without_the_limits_the_command_is_told_none_and_inherits_none() {
    backoff([
        "--attempts",
        "1",
        "--",
        "sh",
        "-c",
        "echo \"${BACKOFF_DEADLINE-none} ${BACKOFF_TIMEOUT-none}\"",
    ])
    .env("BACKOFF_DEADLINE", "1764600000.250")
    .timeout(PATIENCE)
    .assert()
    .success()
    .stdout("none none\n");
}

#[test]
fn an_inherited_timeout_is_backoffs_own_and_a_nested_backoff_reads_it_back() {
    // BACKOFF_TIMEOUT in the environment is --timeout: the command is told
    // it as backoff took it, which a backoff it runs reads as its own.
    let inner = crate::support::bin();
    let inner = inner.to_str().unwrap();
    backoff([
        "--attempts",
        "1",
        "--",
        inner,
        "--attempts",
        "1",
        "--",
        "sh",
        "-c",
        "echo \"$BACKOFF_TIMEOUT ${BACKOFF_DEADLINE-none}\"",
    ])
    .env("BACKOFF_TIMEOUT", "1m")
    .timeout(PATIENCE)
    .assert()
    .success()
    .stdout("60 none\n");
}

#[test]
fn time_stopped_by_job_control_is_not_silence() {
    // The command prints every 100ms; stopped (Ctrl-Z) for longer than the
    // idle timeout and continued (fg), it goes on and ends well.
    let mut run = Running::start(command(then_sh(
        &["--idle-timeout", "1s", "--attempts", "1"],
        "i=0; while [ $i -lt 20 ]; do echo tick $i; i=$((i+1)); sleep 0.1; done",
    )));
    run.wait_for("tick 2");
    run.signal(libc::SIGTSTP);
    crate::support::eventually("backoff to stop", || {
        crate::support::state_of(run.pid()) == Some('T')
    });
    // Stopped for longer than the idle timeout: the scenario, not a wait
    // for something to happen.
    std::thread::sleep(Duration::from_millis(1500));
    run.signal(libc::SIGCONT);
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(0), "{:?}", run.seen);
    run.wait_for("tick 19");
}

#[test]
fn a_destination_that_fails_is_told_and_the_command_runs_on() {
    // /dev/full refuses every write with ENOSPC; without backoff the
    // command would get the error and go on.
    for flag in [&["--idle-timeout", "10s"][..], &["--until-output", "tick"]] {
        let mut args = flag.to_vec();
        args.extend(["--attempts", "1"]);
        let mut cmd = command(then_sh(
            &args,
            "for i in 1 2 3; do echo tick $i; done; echo done >&2",
        ));
        cmd.stdout(std::fs::File::create("/dev/full").unwrap());
        let mut run = Running::start_with_stderr(cmd);
        let (status, _) = run.wait_exit(PATIENCE);
        let err = run.stderr().join("\n");
        assert_eq!(status.code(), Some(0), "{flag:?}: {err}");
        assert_eq!(
            err.matches("cannot write the command's stdout: ").count(),
            1,
            "{flag:?}: {err}"
        );
        assert!(err.contains("done"), "{flag:?}: {err}");
    }
}

#[test]
fn stdout_and_stderr_bound_for_one_place_keep_their_order() {
    let dir = TempDir::new("order");
    let script = "i=0; while [ $i -lt 300 ]; do echo out $i; echo err $i >&2; i=$((i+1)); done";
    let expected: String = (0..300)
        .flat_map(|i| [format!("out {i}\n"), format!("err {i}\n")])
        .collect();
    let bin = crate::support::bin();
    for flag in ["--idle-timeout 10s", "--until-output 'out 299'"] {
        for (place, redirect) in [
            ("a file", "> \"$1\" 2>&1"),
            ("a pipe", "2>&1 | cat > \"$1\""),
        ] {
            let file = dir.join("out");
            let status = crate::support::plain(&mut Command::new("sh"))
                .arg("-c")
                .arg(format!("\"$0\" -q {flag} -- sh -c '{script}' {redirect}"))
                .arg(&bin)
                .arg(&file)
                .status()
                .unwrap();
            assert!(status.success(), "{flag}, {place}");
            assert_eq!(
                std::fs::read_to_string(&file).unwrap(),
                expected,
                "{flag}, {place}"
            );
        }
    }
}
