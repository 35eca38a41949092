//! `--output on-failure`: a success prints nothing; a run that does not
//! succeed writes every attempt's output and backoff's lines, in order,
//! each on its stream; beyond `--output-limit`, the head and the tail.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::{
    PATIENCE, TempDir, Tmpfs, backoff, command, file_size_limit, output_within, record_peak_rss,
    send,
};

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

/// What the command of the slow readers' tests writes: 1,000,011 bytes
/// on stdout, the error last; then it fails.
const A_MILLION: &str = "head -c 1000000 /dev/zero | tr '\\0' x; echo; echo the error; exit 3";

/// backoff's words for a run of `sh -c script` whose output is kept,
/// with `options` too.
fn kept<'a>(options: &[&'a str], script: &'a str) -> Vec<&'a str> {
    let mut args = vec!["--output", "on-failure"];
    args.extend_from_slice(options);
    args.extend(["--", "sh", "-c", script]);
    args
}

/// A FIFO in `dir` whose reader is the test: its read end (reads wait for
/// data), and its write end, for backoff's stdout.
fn fifo(dir: &TempDir) -> (File, File) {
    let path = dir.join("fifo");
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo reads a valid, NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    // The read end first, which then does not wait for a writer.
    let reader = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&path)
        .unwrap();
    let writer = OpenOptions::new().write(true).open(&path).unwrap();
    // SAFETY: F_SETFL on a descriptor the test owns; reads wait again.
    assert_eq!(
        unsafe { libc::fcntl(reader.as_raw_fd(), libc::F_SETFL, 0) },
        0
    );
    (reader, writer)
}

/// Waits until bytes wait unread in `reader`'s FIFO: backoff writes the
/// kept output out (during the run it goes to backoff alone).
fn until_written_to(reader: &File) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let mut unread: libc::c_int = 0;
        // SAFETY: FIONREAD writes the count of unread bytes into `unread`.
        unsafe { libc::ioctl(reader.as_raw_fd(), libc::FIONREAD, &raw mut unread) };
        if unread > 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "nothing written within {PATIENCE:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Starts backoff with `args`, stdout `writer` and stderr captured.
fn with_stdout(args: &[&str], writer: File) -> std::process::Child {
    let mut cmd = command(args);
    cmd.stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped());
    cmd.spawn().unwrap()
}

/// Everything `reader` gets until backoff, which holds its FIFO's only
/// write end, has exited; read in a thread so that a reader that would
/// wait forever fails the test instead.
fn read_all(reader: File) -> std::sync::mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut got = Vec::new();
        let _ = { reader }.read_to_end(&mut got);
        let _ = tx.send(got);
    });
    rx
}

#[test]
fn a_reader_that_pauses_gets_all_of_the_kept_output() {
    let dir = TempDir::new("kept-slow-reader");
    let (reader, writer) = fifo(&dir);
    let args = kept(&["--attempts", "1", "--max-time", "60s"], A_MILLION);
    let child = with_stdout(&args, writer);
    until_written_to(&reader);
    // The reader is slow: it takes nothing for a while (longer than
    // backoff waits for its own lines), then everything.
    std::thread::sleep(Duration::from_secs(3));
    let got = read_all(reader);
    let out = output_within(child);
    let got = got.recv_timeout(PATIENCE).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert_eq!(got.len(), 1_000_011, "{stderr}");
    assert!(got.ends_with(b"x\nthe error\n"));
    assert!(
        stderr.ends_with("giving up after 1 attempt in ")
            || stderr
                .lines()
                .last()
                .unwrap_or("")
                .contains("giving up after 1 attempt"),
        "{stderr}"
    );
    assert!(!stderr.contains("not written"), "{stderr}");
}

#[test]
fn a_reader_slower_than_max_time_is_told_how_much_was_not_written() {
    let dir = TempDir::new("kept-late-reader");
    let (reader, writer) = fifo(&dir);
    let options = ["--attempts", "1", "--max-time", "1s", "--kill-after", "1s"];
    let args = kept(&options, A_MILLION);
    let child = with_stdout(&args, writer);
    // The reader takes nothing until backoff has exited, by its deadline.
    let out = output_within(child);
    let got = read_all(reader).recv_timeout(PATIENCE).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(got.len() < 1_000_011, "{}", got.len());
    // backoff's own lines, on a stderr that takes them, are all there.
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(lines[1].contains("giving up after 1 attempt"), "{stderr}");
    assert_eq!(
        lines[2..],
        [format!(
            "backoff: stdout took no more of the kept output before the time limit; the last {} bytes of it were not written",
            1_000_011 - got.len()
        )],
        "{stderr}"
    );
}

#[test]
fn a_signal_ends_the_writing_for_a_slow_reader_and_says_what_was_not_written() {
    let dir = TempDir::new("kept-reader-signal");
    let (reader, writer) = fifo(&dir);
    let args = kept(&["--attempts", "1"], A_MILLION);
    let child = with_stdout(&args, writer);
    until_written_to(&reader);
    send(i32::try_from(child.id()).unwrap(), libc::SIGTERM);
    let out = output_within(child);
    let got = read_all(reader).recv_timeout(PATIENCE).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.signal(), Some(libc::SIGTERM), "{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.starts_with("backoff: interrupted by SIGTERM while writing the kept output"))
        .unwrap_or_else(|| panic!("{stderr}"));
    // What stdout did not take, and backoff's two closing lines that
    // would have followed on stderr.
    let count: usize = line
        .strip_prefix("backoff: interrupted by SIGTERM while writing the kept output; the last ")
        .and_then(|l| l.strip_suffix(" bytes of it were not written"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    let missing = 1_000_011 - got.len();
    assert!(
        (missing + 60..missing + 200).contains(&count),
        "{line}: {missing}"
    );
}

#[test]
fn kept_output_on_a_full_disk_is_said_with_what_was_not_written() {
    let test = "kept_output_on_a_full_disk_is_said_with_what_was_not_written";
    let Some(disk) = Tmpfs::mount(test, 64) else {
        return;
    };
    let path = disk.join("out");
    let args = kept(
        &["--attempts", "1"],
        "seq 1 20000; echo the error >&2; exit 3",
    );
    let out = output_within(with_stdout(&args, File::create(&path).unwrap()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    // seq's 108,894 bytes did not fit.
    let written = std::fs::metadata(&path).unwrap().len();
    assert!(written < 108_894, "{written}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines[0], "the error", "{stderr}");
    assert!(lines[2].contains("giving up after 1 attempt"), "{stderr}");
    assert_eq!(
        lines[3..],
        [format!(
            "backoff: cannot write {} bytes of the kept output to stdout: No space left on device",
            108_894 - written
        )],
        "{stderr}"
    );
}

#[test]
fn a_full_temporary_directory_keeps_the_end_and_names_the_cause() {
    let test = "a_full_temporary_directory_keeps_the_end_and_names_the_cause";
    let Some(disk) = Tmpfs::mount(test, 64) else {
        return;
    };
    let tmpdir = disk.join("");
    let tmpdir = tmpdir.to_str().unwrap().trim_end_matches('/');
    let rss = TempDir::new("kept-full-tmpdir");
    let run = |script: &str| {
        let mut cmd = command(kept(&["--attempts", "2", "--base", "1ms"], script));
        cmd.env("TMPDIR", tmpdir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        output_within(cmd.spawn().unwrap())
    };
    // The temporary directory fills during the run: 1.2 MB in each
    // attempt, far more than it holds (and than --output-limit keeps).
    let out = run(&format!(
        "echo start; seq 1 200000; head -c 1000000 /dev/zero >&2; {}; echo \"the error $BACKOFF_ATTEMPT\" >&2; exit 3",
        record_peak_rss(&rss.join("rss"))
    ));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stdout.starts_with("start\n1\n2\n"), "{stdout:.20}");
    assert!(!stderr.contains("--output-limit"), "{stderr}");
    let cut = stderr
        .lines()
        .find(|l| l.contains("of output cut here"))
        .unwrap_or_else(|| panic!("no cut line"));
    assert!(
        cut.ends_with(&format!(
            "of output cut here: the temporary directory '{tmpdir}' is full (No space left on device); what follows is the end of the output"
        )),
        "{cut}"
    );
    // The end: the error, then backoff's closing lines.
    let end: Vec<&str> = stderr.lines().rev().take(3).collect();
    assert!(
        end[0].starts_with("backoff: giving up after 2 attempts"),
        "{end:?}"
    );
    assert!(
        end[1].starts_with("backoff: attempt 2/2 failed (exit 3)"),
        "{end:?}"
    );
    assert!(end[2].ends_with("the error 2"), "{end:?}");
    let kib: u64 = std::fs::read_to_string(rss.join("rss"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(kib < 16 * 1024, "backoff's peak memory: {kib} KiB");

    // Full from the start: all of a short output, no cut at all.
    disk.fill("filler");
    let out = run("echo hello; echo \"the error $BACKOFF_ATTEMPT\" >&2; exit 3");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello\nhello\n");
    assert!(!stderr.contains("cut here"), "{stderr}");
    assert!(stderr.starts_with("the error 1\n"), "{stderr}");
    assert!(stderr.contains("\nthe error 2\n"), "{stderr}");
    assert!(
        stderr
            .lines()
            .last()
            .unwrap()
            .starts_with("backoff: giving up after 2 attempts"),
        "{stderr}"
    );
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

#[test]
fn temporary_files_past_the_file_size_limit_keep_what_fit_and_the_end() {
    // No privilege needed: each temporary file takes 10,000 bytes at most,
    // and the first chunk backoff reads is larger (one write of 228,894).
    let dir = TempDir::new("kept-fsize");
    let lines = dir.join("lines");
    let all: String = (1..=40_000).map(|i: u32| i.to_string() + "\n").collect();
    std::fs::write(&lines, &all).unwrap();
    let script = format!(
        "dd if='{}' bs=300000 count=1 2>/dev/null; echo the error >&2; exit 3",
        lines.display()
    );
    let mut cmd = command(kept(&["--attempts", "1"], &script));
    cmd.env("TMPDIR", dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    file_size_limit(&mut cmd, 10_000);
    let out = output_within(cmd.spawn().unwrap());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    // What fit of the chunk the file filled in, and the end.
    assert!(stdout.starts_with(&all[..9000]), "{stdout:.40}");
    assert!(stdout.ends_with("39999\n40000\n"), "{stderr}");
    // The head ends in the middle of a line of stdout, which is no line of
    // stderr's: the cut line is stderr's first, with no empty line above.
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(stderr.starts_with("backoff: "), "{stderr}");
    assert_eq!(lines.len(), 4, "{stderr}");
    assert!(
        lines[0].ends_with(&format!(
            "of output cut here: the temporary directory '{}' can take no more (File too large); what follows is the end of the output",
            dir.path().display()
        )),
        "{stderr}"
    );
    assert_eq!(lines[1], "the error");
    assert!(
        lines[3].starts_with("backoff: giving up after 1 attempt"),
        "{stderr}"
    );
}

/// A command that writes `partial` to stderr with no newline, waits until
/// backoff has read it (its pipe is empty again), then writes 100 lines
/// on stdout and exits 3: stderr's last line is unfinished when stdout's
/// ends.
const STDERR_UNFINISHED: &str = r#"
import fcntl, os, struct, sys, termios, time
os.write(2, b"partial")
deadline = time.monotonic() + 60
while struct.unpack("i", fcntl.ioctl(2, termios.FIONREAD, b"\0\0\0\0"))[0] > 0:
    if time.monotonic() > deadline:
        sys.exit(99)
    time.sleep(0.01)
os.write(1, b"o\n" * 100)
sys.exit(3)
"#;

#[test]
fn the_cut_line_starts_a_line_of_stderr_after_an_unfinished_one() {
    let test = "the_cut_line_starts_a_line_of_stderr_after_an_unfinished_one";
    if crate::support::checked_by(
        test,
        "python3",
        std::process::Command::new("python3").arg("--version"),
    )
    .is_none()
    {
        return;
    }
    // The head is "partial" on stderr and "o\n" on stdout, which ends a
    // line of stdout, not of stderr.
    let out = backoff([
        "--output",
        "on-failure",
        "--output-limit",
        "18",
        "--attempts",
        "1",
        "--",
        "python3",
        "-c",
        STDERR_UNFINISHED,
    ])
    .assert()
    .code(3)
    .get_output()
    .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines[0], "partial", "{stderr}");
    assert!(
        lines[1].starts_with("backoff: ") && lines[1].contains(" of output cut here: "),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("o\n"));
}

#[test]
fn a_temporary_directory_that_cannot_be_used_is_named_at_the_start() {
    let dir = TempDir::new("kept-tmpdir");
    let fifo = dir.join("fifo");
    crate::support::make_fifo(&fifo);
    for tmpdir in [dir.join("gone"), fifo] {
        let out = backoff(kept(&["--attempts", "1"], "echo out; exit 3"))
            .env("TMPDIR", &tmpdir)
            .assert()
            .code(3)
            .get_output()
            .clone();
        // Passed on as it comes, and said first, with the directory.
        assert_eq!(String::from_utf8_lossy(&out.stdout), "out\n");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let first = stderr.lines().next().unwrap_or_default();
        assert!(
            first.starts_with(&format!(
                "backoff: cannot keep the output for --output on-failure: cannot make a temporary file in '{}' (TMPDIR): ",
                tmpdir.display()
            )) && first.ends_with(
                "; set TMPDIR to a directory backoff can write to; it is passed on as it comes"
            ),
            "{stderr}"
        );
    }
}

#[test]
fn what_could_not_be_written_is_said_on_a_line_of_its_own_after_an_unfinished_one() {
    let test = "what_could_not_be_written_is_said_on_a_line_of_its_own_after_an_unfinished_one";
    if !std::path::Path::new("/dev/full").exists() {
        eprintln!("skipped {test}: there is no /dev/full");
        return;
    }
    // -q: the command's stderr, unfinished, is the last of the output;
    // stdout refuses every write.
    let mut cmd = command(kept(
        &["-q", "--attempts", "1"],
        "echo out; printf partial >&2; exit 3",
    ));
    cmd.stdin(Stdio::null())
        .stdout(File::create("/dev/full").unwrap())
        .stderr(Stdio::piped());
    let out = output_within(cmd.spawn().unwrap());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert_eq!(
        stderr,
        "partial\nbackoff: cannot write 4 bytes of the kept output to stdout: No space left on device\n"
    );
}
