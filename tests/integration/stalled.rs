//! Time limits and signals hold whatever the surroundings do: a stdout
//! nobody reads, a command that stops. Every wait has a deadline.

use std::os::unix::process::ExitStatusExt;

use crate::support::{PATIENCE, Running, command};

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
        said.contains("stdout took no more before --max-time") && said.contains("bytes"),
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
