//! Time limits and signals hold whatever the surroundings do: a stdout
//! nobody reads, a command that stops. Every wait has a deadline.

use std::os::unix::process::ExitStatusExt;

use crate::support::{PATIENCE, Running, command, eventually, gone, state_of};

#[test]
fn a_timeout_ends_the_run_though_nobody_reads_stdout_with_output_rules() {
    for rules in [
        &["--retry-if-output", "x"][..],
        &["--stop-if-output", "x"],
        &["--preset", "curl"],
        // Held output waits for a reader until --max-time (a pager may
        // stop reading for long, and its reader still wants the rest).
        &[
            "--hold-stdout",
            "--retry-if-output",
            "x",
            "--max-time",
            "3s",
        ],
    ] {
        let mut cmd = command(rules);
        cmd.args(["--timeout", "1s", "--max-retries", "0", "--", "yes"]);
        let (mut run, unread) = Running::start_with_stalled_stdout(cmd);
        let (status, _) = run.wait_exit(PATIENCE);
        assert_eq!(status.code(), Some(124), "{rules:?}: {:?}", run.seen);
        drop(unread);
    }
}

#[test]
fn held_stdout_nobody_reads_is_dropped_at_max_time_and_said() {
    let mut cmd = command([
        "--hold-stdout",
        "--max-time",
        "1s",
        "--max-retries",
        "0",
        "--",
        "head",
        "-c",
        "4000000",
        "/dev/zero",
    ]);
    cmd.arg("-q");
    let (mut run, unread) = Running::start_with_stalled_stdout(cmd);
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(124), "{:?}", run.seen);
    let said = run.stderr().join("\n");
    assert!(
        said.contains("stdout took no more before the time limit") && said.contains("bytes"),
        "{said}"
    );
    drop(unread);
}

#[test]
fn a_signal_ends_the_write_out_of_held_stdout_to_a_reader_that_stopped() {
    let mut cmd = command(["--hold-stdout", "--max-retries", "0", "--"]);
    cmd.args(["head", "-c", "4000000", "/dev/zero"]);
    let (mut run, mut unread) = Running::start_with_stalled_stdout(cmd);
    // The write-out has begun once the first bytes come.
    let mut first = [0u8; 1];
    std::io::Read::read_exact(&mut unread, &mut first).expect("held output begins");
    run.signal(libc::SIGTERM);
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{:?}", run.seen);
}

#[test]
fn a_signal_reaches_a_command_that_stopped_itself() {
    let mut run = Running::start(command([
        "--max-retries",
        "0",
        "--",
        "sh",
        "-c",
        "echo pid=$$; kill -STOP $$; sleep 300",
    ]));
    let line = run.wait_for("pid=");
    let pid: i32 = line.trim_start_matches("pid=").parse().unwrap();
    eventually("the command to stop", || state_of(pid) == Some('T'));
    run.signal(libc::SIGTERM);
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{:?}", run.seen);
    eventually("the command to be gone", || gone(pid));
}

/// Runs backoff on a terminal of its own (a pseudo-terminal, backoff in its
/// foreground process group) with `args`, waits until it prints `needle`,
/// sends it SIGINT, and returns what the terminal showed and how backoff
/// ended (`signal N` or `exit N`).
fn on_a_terminal(args: &[&str], needle: &str) -> (String, String) {
    let script = r#"
import os, pty, signal, sys
signal.alarm(int(sys.argv[1]))
needle = sys.argv[2].encode()
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[3], sys.argv[3:])
seen = b""
while needle not in seen:
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    seen += chunk
os.kill(pid, signal.SIGINT)
_, status = os.waitpid(pid, 0)
print(seen.decode(errors="replace"))
if os.WIFSIGNALED(status):
    print("signal", os.WTERMSIG(status))
else:
    print("exit", os.WEXITSTATUS(status))
"#;
    let out = crate::support::plain(&mut std::process::Command::new("python3"))
        .args(["-c", script])
        .arg(PATIENCE.as_secs().to_string())
        .arg(needle)
        .arg(crate::support::bin())
        .args(args)
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let ending = text.lines().last().unwrap_or_default().to_owned();
    (text, ending)
}

#[test]
fn a_command_stopped_for_reading_the_terminal_is_reported_and_ctrl_c_ends_it() {
    let (text, ending) = on_a_terminal(&["--max-retries", "0", "--", "cat"], "stopped by SIGTTIN");
    assert!(
        text.contains("backoff: the command is stopped by SIGTTIN: it read the terminal")
            && text.contains("--foreground"),
        "{text}"
    );
    assert_eq!(ending, format!("signal {}", libc::SIGINT), "{text}");
}

#[test]
fn backoffs_own_lines_never_wait_long_for_a_stderr_nobody_reads() {
    // The command fills the pipe backoff's stderr shares with it; backoff
    // then has lines to say about each attempt.
    let (unread, out) = std::io::pipe().expect("pipe");
    let mut cmd = command([
        "--timeout",
        "1s",
        "--max-retries",
        "1",
        "--base",
        "1ms",
        "--",
        "sh",
        "-c",
        "yes >&2",
    ]);
    cmd.stdin(std::process::Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out);
    let mut child = cmd.spawn().expect("spawn backoff");
    drop(cmd);
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > PATIENCE {
            let _ = child.kill();
            panic!("backoff waited for a stderr nobody reads");
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    assert_eq!(status.code(), Some(124));
    drop(unread);
}

/// Starts `cmd` with stdout one end of a socket pair that nobody reads,
/// and stderr captured.
fn start_with_stalled_socket(
    mut cmd: std::process::Command,
) -> (Running, std::os::unix::net::UnixStream) {
    let (unread, stdout) = std::os::unix::net::UnixStream::pair().expect("socketpair");
    cmd.stdout(std::process::Stdio::from(std::os::fd::OwnedFd::from(
        stdout,
    )));
    (Running::start_with_stderr(cmd), unread)
}

#[test]
fn time_limits_hold_when_stdout_is_a_socket_nobody_reads() {
    for args in [
        &[
            "--timeout",
            "1s",
            "--retry-if-output",
            "zzz",
            "--max-retries",
            "1",
            "--",
            "yes",
        ][..],
        &[
            "--max-time",
            "2s",
            "--hold-stdout",
            "--",
            "head",
            "-c",
            "10000000",
            "/dev/zero",
        ],
    ] {
        let (mut run, unread) = start_with_stalled_socket(command(args));
        let (status, _) = run.wait_exit(PATIENCE);
        assert_eq!(status.code(), Some(124), "{args:?}: {:?}", run.seen);
        drop(unread);
    }
}

#[test]
fn a_report_to_a_stdout_nobody_reads_does_not_hold_backoff_up() {
    let mut cmd = command([
        "--report",
        "/dev/stdout",
        "--",
        "head",
        "-c",
        "65536",
        "/dev/zero",
    ]);
    cmd.arg("-q");
    let (mut run, unread) = Running::start_with_stalled_stdout(cmd);
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(0), "{:?}", run.seen);
    assert!(
        run.stderr()
            .iter()
            .any(|l| l.contains("cannot write --report '/dev/stdout'")),
        "{:?}",
        run.seen
    );
    drop(unread);
}

#[test]
fn one_signal_ends_an_interrupted_run_and_its_held_stdout_is_not_written() {
    // The attempt's held stdout would not fit in the pipe nobody reads.
    let mut cmd = command(["--hold-stdout", "--"]);
    cmd.args([
        "sh",
        "-c",
        "head -c 1000000 /dev/zero; echo ready >&2; exec sleep 300",
    ]);
    let (mut run, unread) = Running::start_with_stalled_stdout(cmd);
    run.wait_for("ready");
    run.signal(libc::SIGTERM);
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{:?}", run.seen);
    drop(unread);
    // A reader that reads gets none of a partial body either.
    let mut cmd = command(["--hold-stdout", "--"]);
    cmd.args([
        "sh",
        "-c",
        "echo partial-body; echo ready >&2; exec sleep 300",
    ]);
    let mut run = Running::start(cmd);
    run.wait_for("ready");
    run.signal(libc::SIGTERM);
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(status.signal(), Some(libc::SIGTERM));
    assert!(
        !run.seen.iter().any(|(_, l)| l.contains("partial-body")),
        "{:?}",
        run.seen
    );
}
