//! `--output on-failure`: a success prints nothing; a run that does not
//! succeed writes every attempt's output and backoff's lines, in order,
//! each on its stream; beyond `--output-limit`, the head and the tail.

use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;

use crate::support::{TempDir, backoff, command, output_within, record_peak_rss, send};

/// A command that writes to stdout and stderr, then exits with `code`.
fn both(code: u8) -> String {
    format!("echo \"out $BACKOFF_ATTEMPT\"; echo \"err $BACKOFF_ATTEMPT\" >&2; exit {code}")
}

#[test]
fn a_success_prints_nothing_at_all() {
    backoff([
        "--output",
        "on-failure",
        "-v",
        "--base",
        "1ms",
        "--",
        "sh",
        "-c",
        "[ \"$BACKOFF_ATTEMPT\" = 2 ] && { echo fine; exit 0; }; echo bad >&2; exit 1",
    ])
    .assert()
    .success()
    .stdout("")
    .stderr("");
}

#[test]
fn a_give_up_writes_each_stream_where_it_came() {
    let out = backoff([
        "--output",
        "on-failure",
        "--base",
        "1ms",
        "--max-retries",
        "1",
        "--",
        "sh",
        "-c",
        &both(3),
    ])
    .assert()
    .code(3)
    .get_output()
    .clone();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "out 1\nout 2\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines[0], "err 1", "{stderr}");
    assert!(
        lines[1].starts_with("backoff: attempt 1/2 failed (exit 3)"),
        "{stderr}"
    );
    assert_eq!(lines[2], "err 2", "{stderr}");
    assert!(
        lines[3].starts_with("backoff: attempt 2/2 failed"),
        "{stderr}"
    );
    assert!(
        lines[4].starts_with("backoff: giving up after 2 attempts"),
        "{stderr}"
    );
}

#[test]
fn one_destination_gets_every_line_in_the_order_it_came() {
    // cron's case: stdout and stderr are one pipe, read by its mailer.
    let mut cmd = command([
        "--output",
        "on-failure",
        "--base",
        "1ms",
        "--max-retries",
        "2",
        "--",
        "sh",
        "-c",
        &both(1),
    ]);
    let (reader, writer) = std::io::pipe().unwrap();
    cmd.stdout(writer.try_clone().unwrap()).stderr(writer);
    let mut child = cmd.spawn().unwrap();
    drop(cmd);
    let mut text = String::new();
    std::io::Read::read_to_string(&mut { reader }, &mut text).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(1));
    let lines: Vec<&str> = text.lines().collect();
    let shape: Vec<&str> = lines
        .iter()
        .map(|l| l.split(' ').take(2).last().unwrap_or(""))
        .collect();
    assert_eq!(
        shape,
        [
            "1", "1", "attempt", "2", "2", "attempt", "3", "3", "attempt", "giving"
        ],
        "{text}"
    );
}

#[test]
fn beyond_the_limit_the_head_and_the_tail_are_kept_and_the_cut_is_said() {
    let out = backoff([
        "--output",
        "on-failure",
        "--output-limit",
        "1KiB",
        "--attempts",
        "1",
        "--",
        "sh",
        "-c",
        "seq 1 100000; exit 4",
    ])
    .assert()
    .code(4)
    .get_output()
    .clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("1\n2\n3\n"), "{stdout}");
    assert!(stdout.ends_with("99999\n100000\n"), "{stdout}");
    assert!(stdout.len() <= 1024, "{}", stdout.len());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let cut = stderr
        .lines()
        .find(|l| l.contains("of output cut here"))
        .unwrap_or_else(|| panic!("no cut line: {stderr}"));
    assert!(
        cut.ends_with("--output-limit 1 KiB keeps the first and the last 512 bytes"),
        "{cut}"
    );
}

#[test]
fn an_attempt_writing_100_mib_keeps_memory_flat() {
    let dir = TempDir::new("kept-output-memory");
    let rss = dir.join("rss");
    let mut cmd = command([
        "--output",
        "on-failure",
        "--attempts",
        "1",
        "--",
        "sh",
        "-c",
        &format!(
            "head -c 104857600 /dev/zero; {}; exit 2",
            record_peak_rss(&rss)
        ),
    ]);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let out = output_within(cmd.spawn().unwrap());
    assert_eq!(out.status.code(), Some(2));
    // The head and the tail: 1 MiB in all of the 100 written, with
    // backoff's last lines on stderr.
    let kept = out.stdout.len() + out.stderr.len();
    assert!((1 << 20..(1 << 20) + 1024).contains(&kept), "{kept} bytes");
    let kib: u64 = std::fs::read_to_string(&rss)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(kib < 32 * 1024, "backoff's peak memory: {kib} KiB");
}

#[test]
fn a_signal_writes_the_output_out_before_backoff_dies_by_it() {
    let mut cmd = command([
        "--output",
        "on-failure",
        "--",
        "sh",
        "-c",
        "echo started; echo ready > \"$0\"; sleep 30",
    ]);
    let dir = TempDir::new("kept-output-signal");
    let ready = dir.join("ready");
    cmd.arg(&ready);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    crate::support::eventually("the attempt has started", || ready.exists());
    send(i32::try_from(child.id()).unwrap(), libc::SIGTERM);
    let out = output_within(child);
    assert_eq!(out.status.signal(), Some(libc::SIGTERM));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "started\n");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("interrupted"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_report_asked_for_on_stdout_is_written_after_a_success() {
    let out = backoff([
        "--output",
        "on-failure",
        "--report",
        "/dev/stdout",
        "--",
        "sh",
        "-c",
        "echo noise",
    ])
    .assert()
    .success()
    .get_output()
    .clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("noise"), "{stdout}");
    assert!(stdout.contains("\"attempts\""), "{stdout}");
}

#[test]
fn a_limit_without_kept_output_is_refused_with_the_fix() {
    backoff(["--output-limit", "2MiB", "--", "true"])
        .assert()
        .code(125)
        .stderr("backoff: --output-limit applies to kept output: add --output on-failure\n");
    backoff([
        "--output",
        "on-failure",
        "--output-limit",
        "2MiB",
        "--",
        "true",
    ])
    .assert()
    .success()
    .stderr("");
    for (bad, why) in [
        ("1", "at least 2 bytes"),
        ("2TiB", "not a unit of size"),
        ("2GiB", "at most 1GiB"),
        ("x", "not a unit of size"),
        ("1.5MiB", "not a unit of size"),
        ("99999999999G", "at most 1GiB"),
    ] {
        backoff([
            "--output",
            "on-failure",
            "--output-limit",
            bad,
            "--",
            "true",
        ])
        .assert()
        .code(125)
        .stderr(predicates::str::contains(why));
    }
}

#[test]
fn a_stdout_nobody_reads_does_not_hold_up_the_end_of_a_failed_run() {
    let (mut run, unread) = crate::support::Running::start_with_stalled_stdout(command([
        "--output",
        "on-failure",
        "--attempts",
        "1",
        "--",
        "sh",
        "-c",
        "head -c 300000 /dev/zero; exit 1",
    ]));
    // What the stalled stdout does not take is dropped after a while, as
    // for backoff's own lines.
    let (status, _) = run.wait_exit(crate::support::PATIENCE);
    assert_eq!(status.code(), Some(1), "{:?}", run.seen);
    drop(unread);
}

#[test]
fn a_stdout_whose_reader_went_away_leaves_stderr_its_part() {
    let out = command([
        "--output",
        "on-failure",
        "--attempts",
        "1",
        "--",
        "sh",
        "-c",
        "seq 200000; echo ERR >&2; exit 1",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // The reader takes nothing and goes away.
    let mut child = out;
    drop(child.stdout.take());
    let out = output_within(child);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("ERR\n"), "{stderr}");
    assert!(stderr.contains("giving up after 1 attempt"), "{stderr}");
}
