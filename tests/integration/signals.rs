//! The signal contract: interruptible delays, forwarding to the child's
//! group, dying by the same signal, a second signal, job control, inherited
//! dispositions. Every test synchronises on printed lines, with deadlines.

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use crate::support::{PATIENCE, Running, TempDir, command, eventually, gone, send, state_of};

/// A command that fails at once and then waits 30 s before its retry.
fn failing_with_long_delay(dir: &TempDir) -> std::process::Command {
    let mut cmd = command([
        "--base", "30s", "--cap", "30s", "--jitter", "none", "--", "sh", "-c",
    ]);
    cmd.arg(format!(
        "echo \"$BACKOFF_ATTEMPT\" >> '{}'; exit 1",
        dir.join("log").display()
    ));
    cmd
}

fn signal_during_delay_ends_backoff_at_once(sig: i32) {
    let dir = TempDir::new("delay-signal");
    let mut run = Running::start(failing_with_long_delay(&dir));
    run.wait_for("retrying in 30.0s");
    run.signal(sig);
    let (status, took) = run.wait_exit(PATIENCE);
    assert_eq!(status.signal(), Some(sig), "{:?}", run.seen);
    assert!(
        took < Duration::from_secs(1),
        "took {took:?} to end the delay"
    );
    assert_eq!(dir.lines("log"), ["1"], "no second attempt may start");
    said_interrupted(&run, sig);
}

/// Asserts that backoff said it was interrupted by `sig`.
fn said_interrupted(run: &Running, sig: i32) {
    let name = format!("interrupted by SIG{}", signal_name(sig));
    assert!(
        run.stderr().iter().any(|l| l.contains(&name)),
        "{name}: {:?}",
        run.seen
    );
}

/// The name backoff gives a signal (for a real-time one, its start: the C
/// library backoff is built with decides where the real-time signals
/// begin).
fn signal_name(sig: i32) -> String {
    #[cfg(target_os = "linux")]
    if sig >= libc::SIGRTMIN() {
        return "RTMIN".to_owned();
    }
    let names = [
        (libc::SIGTERM, "TERM"),
        (libc::SIGINT, "INT"),
        (libc::SIGHUP, "HUP"),
        (libc::SIGQUIT, "QUIT"),
        (libc::SIGUSR1, "USR1"),
        (libc::SIGUSR2, "USR2"),
        (libc::SIGALRM, "ALRM"),
        (libc::SIGVTALRM, "VTALRM"),
        #[cfg(target_os = "linux")]
        (libc::SIGPWR, "PWR"),
    ];
    names
        .iter()
        .find(|(n, _)| *n == sig)
        .map_or_else(|| sig.to_string(), |(_, name)| (*name).to_owned())
}

#[test]
fn sigterm_during_a_delay_ends_backoff_within_a_second_by_sigterm() {
    signal_during_delay_ends_backoff_at_once(libc::SIGTERM);
}

#[test]
fn sigint_during_a_delay_ends_backoff_within_a_second_by_sigint() {
    signal_during_delay_ends_backoff_at_once(libc::SIGINT);
}

#[test]
fn sighup_and_sigquit_during_a_delay_end_backoff_by_that_signal() {
    signal_during_delay_ends_backoff_at_once(libc::SIGHUP);
    signal_during_delay_ends_backoff_at_once(libc::SIGQUIT);
}

#[test]
fn every_catchable_terminating_signal_ends_a_delay_as_sigterm_does() {
    let mut signals = vec![libc::SIGUSR1, libc::SIGUSR2, libc::SIGALRM, libc::SIGVTALRM];
    #[cfg(target_os = "linux")]
    signals.extend([libc::SIGPWR, libc::SIGRTMIN() + 3, libc::SIGRTMAX()]);
    for sig in signals {
        signal_during_delay_ends_backoff_at_once(sig);
    }
}

#[test]
fn sigusr1_and_sigalrm_during_an_attempt_reach_the_whole_tree_as_sigterm_does() {
    for sig in [libc::SIGUSR1, libc::SIGALRM] {
        let dir = TempDir::new("tree-usr1");
        let pids = dir.join("pids");
        let mut cmd = command(["--base", "1ms", "--", "sh", "-c"]);
        cmd.arg(format!(
            "sleep 300 & echo $! >> '{p}'; echo ready; wait",
            p = pids.display()
        ));
        let mut run = Running::start(cmd);
        run.wait_for("ready");
        let grandchild: i32 = dir.lines("pids")[0].parse().unwrap();
        run.signal(sig);
        let (status, _) = run.wait_exit(PATIENCE);
        assert_eq!(status.signal(), Some(sig), "{:?}", run.seen);
        eventually("the grandchild to be gone", || gone(grandchild));
        said_interrupted(&run, sig);
    }
}

#[test]
fn sigterm_during_an_attempt_reaches_the_child_and_its_exit_code_is_kept() {
    let dir = TempDir::new("trap");
    let mut cmd = command(["--base", "1ms", "--", "sh", "-c"]);
    cmd.arg(format!(
        "echo \"$BACKOFF_ATTEMPT\" >> '{}'; trap 'exit 7' TERM; echo ready; \
         while :; do sleep 0.05; done",
        dir.join("log").display()
    ));
    let mut run = Running::start(cmd);
    run.wait_for("ready");
    run.signal(libc::SIGTERM);
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(7), "{:?}", run.seen);
    assert_eq!(dir.lines("log"), ["1"], "no retry after an interruption");
}

#[test]
fn a_child_that_does_not_handle_the_signal_makes_backoff_die_by_it() {
    let cmd = command([
        "--base",
        "1ms",
        "--",
        "sh",
        "-c",
        "echo ready; exec sleep 60",
    ]);
    let mut run = Running::start(cmd);
    run.wait_for("ready");
    run.signal(libc::SIGTERM);
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(status.signal(), Some(libc::SIGTERM));
}

#[test]
fn after_an_interruption_no_process_of_the_commands_tree_survives() {
    let dir = TempDir::new("tree");
    let pids = dir.join("pids");
    let mut cmd = command(["--base", "1ms", "--", "sh", "-c"]);
    // One grandchild dies by the forwarded TERM, one ignores it.
    cmd.arg(format!(
        "sleep 300 & echo $! >> '{p}'; (trap '' TERM; exec sleep 301) & echo $! >> '{p}'; \
         echo ready; wait",
        p = pids.display()
    ));
    let mut run = Running::start(cmd);
    run.wait_for("ready");
    let grandchildren: Vec<i32> = dir
        .lines("pids")
        .iter()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(grandchildren.len(), 2);
    run.signal(libc::SIGTERM);
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(status.signal(), Some(libc::SIGTERM));
    for pid in grandchildren {
        eventually(&format!("grandchild {pid} to be gone"), || gone(pid));
    }
}

#[test]
fn a_second_signal_kills_the_childs_group_at_once() {
    let mut cmd = command(["--base", "1ms", "--", "sh", "-c"]);
    cmd.arg("trap 'echo got-term' TERM; echo ready; while :; do sleep 0.05; done");
    let mut run = Running::start(cmd);
    run.wait_for("ready");
    run.signal(libc::SIGTERM);
    run.wait_for("got-term");
    run.signal(libc::SIGTERM);
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{:?}", run.seen);
}

#[test]
fn sigtstp_and_sigcont_are_passed_on_to_the_child() {
    let mut cmd = command(["--base", "1ms", "--", "sh", "-c"]);
    // No fork in the child: a shell stopped mid-vfork would show as `D`.
    cmd.arg("echo pid=$$; exec sleep 300");
    let mut run = Running::start(cmd);
    let line = run.wait_for("pid=");
    let child: i32 = line.trim_start_matches("pid=").parse().unwrap();
    run.signal(libc::SIGTSTP);
    eventually(
        &format!("backoff {} and its child {child} to stop", run.pid()),
        || state_of(run.pid()) == Some('T') && state_of(child) == Some('T'),
    );
    run.signal(libc::SIGCONT);
    eventually("backoff and its child to continue", || {
        state_of(run.pid()).is_some_and(|s| s != 'T') && state_of(child).is_some_and(|s| s != 'T')
    });
    run.signal(libc::SIGTERM);
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(status.signal(), Some(libc::SIGTERM));
}

/// Starts backoff through a small Python launcher that sets up dispositions
/// and the signal mask first, as a shell, `nohup` or a service manager might.
fn launched(setup: &str, args: &[&str]) -> std::process::Command {
    let mut cmd = std::process::Command::new("python3");
    crate::support::plain(&mut cmd)
        .arg("-c")
        .arg(format!(
            "import os, signal, sys\n{setup}\nos.execv(sys.argv[1], sys.argv[1:])"
        ))
        .arg(crate::support::bin())
        .args(args);
    cmd
}

#[test]
fn an_inherited_ignored_sigint_stays_ignored() {
    let dir = TempDir::new("ignored");
    let mut cmd = launched(
        "signal.signal(signal.SIGINT, signal.SIG_IGN)",
        &[
            "--base", "30s", "--cap", "30s", "--jitter", "none", "--", "sh", "-c",
        ],
    );
    cmd.arg(format!("echo x >> '{}'; exit 1", dir.join("log").display()));
    let mut run = Running::start(cmd);
    run.wait_for("retrying in 30.0s");
    run.signal(libc::SIGINT);
    // Still delaying: a TERM afterwards is what ends it, by TERM.
    run.signal(libc::SIGTERM);
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{:?}", run.seen);
}

#[test]
fn the_child_gets_an_empty_signal_mask_and_default_dispositions() {
    let out = launched(
        "signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1, signal.SIGTERM])",
        &["--", "cat", "/proc/self/status"],
    )
    .output()
    .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("SigBlk:\t0000000000000000"), "{text}");
    assert!(text.contains("SigCgt:\t0000000000000000"), "{text}");
}

#[test]
fn the_child_keeps_only_the_ignored_signals_backoff_inherited_as_ignored() {
    // Ignored when backoff starts: SIGINT (kept ignored, as nohup wants),
    // SIGPIPE (ignored by the Rust runtime too; the child gets the default
    // back) and SIGCHLD (which backoff must handle to read exit statuses;
    // the child gets the default back).
    let out = launched(
        "signal.signal(signal.SIGXFSZ, signal.SIG_DFL)\n\
         signal.signal(signal.SIGINT, signal.SIG_IGN)\n\
         signal.signal(signal.SIGPIPE, signal.SIG_IGN)\n\
         signal.signal(signal.SIGCHLD, signal.SIG_IGN)",
        &["--", "cat", "/proc/self/status"],
    )
    .output()
    .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let ignored = text
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:\t"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .unwrap_or_else(|| panic!("no SigIgn in {text}"));
    let bit = |sig: i32| ignored & (1u64 << (sig - 1)) != 0;
    assert!(bit(libc::SIGINT), "SIGINT ignored: {ignored:x}");
    assert!(!bit(libc::SIGPIPE), "SIGPIPE default: {ignored:x}");
    assert!(!bit(libc::SIGCHLD), "SIGCHLD default: {ignored:x}");
}

#[test]
fn an_inherited_ignored_sigchld_does_not_lose_the_exit_status() {
    launched_status("signal.signal(signal.SIGCHLD, signal.SIG_IGN)", 3);
}

fn launched_status(setup: &str, code: i32) {
    let out = launched(
        setup,
        &[
            "--max-retries",
            "0",
            "--",
            "sh",
            "-c",
            &format!("exit {code}"),
        ],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(code), "{out:?}");
}

#[test]
fn a_closed_stderr_never_crashes_backoff() {
    let mut cmd = command([
        "--max-retries",
        "2",
        "--base",
        "1ms",
        "--",
        "sh",
        "-c",
        "exit 5",
    ]);
    cmd.stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    drop(child.stderr.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(5));
    // And with stderr closed outright.
    let out = crate::support::plain(&mut std::process::Command::new("sh"))
        .arg("-c")
        .arg("\"$0\" --max-retries 1 --base 1ms -- sh -c 'exit 6' 2>&-")
        .arg(crate::support::bin())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(6));
}

#[test]
fn a_signal_sent_straight_to_a_foreground_child_is_handled_like_its_own_death() {
    // With --foreground the child shares backoff's group; backoff forwards to
    // the child alone.
    let dir = TempDir::new("fg");
    let mut cmd = command(["--foreground", "--base", "1ms", "--", "sh", "-c"]);
    cmd.arg(format!(
        "echo \"$BACKOFF_ATTEMPT\" >> '{}'; trap 'exit 8' TERM; echo ready; while :; do sleep 0.05; done",
        dir.join("log").display()
    ));
    let mut run = Running::start(cmd);
    run.wait_for("ready");
    send(run.pid(), libc::SIGTERM);
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(8));
    assert_eq!(dir.lines("log"), ["1"]);
}

/// Starts `script` under backoff, waits for its line `ready` and its
/// `count` lines `pid=N` (processes to watch), kills backoff with SIGKILL, and
/// returns the processes named.
fn kill_backoff_during(script: &str, count: usize) -> Vec<i32> {
    let mut cmd = command(["--base", "30s", "--cap", "30s", "--jitter", "none", "--"]);
    cmd.args(["sh", "-c", script]);
    let mut run = Running::start(cmd);
    run.wait_for("ready");
    let pids: Vec<i32> = run
        .wait_for_lines("pid=", count)
        .iter()
        .map(|l| l.trim_start_matches("pid=").parse().unwrap())
        .collect();
    run.signal(libc::SIGKILL);
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    pids
}

#[test]
fn sigkill_of_backoff_kills_every_process_of_the_running_attempts_group() {
    // One grandchild in the background, one that ignores every signal it
    // can, and the command itself.
    let pids = kill_backoff_during(
        "sleep 300 & echo pid=$!; (trap '' TERM INT HUP; exec sleep 301) & echo pid=$!; \
         echo pid=$$; echo ready; wait",
        3,
    );
    assert_eq!(pids.len(), 3);
    for pid in pids {
        eventually(&format!("process {pid} to be gone"), || gone(pid));
    }
}

#[test]
fn sigkill_of_backoff_does_not_reach_a_process_that_left_the_group_with_setsid() {
    // The documented limit: a process in a session of its own is found by
    // no process group. The command itself (the first pid) is in the group:
    // once it is gone, the guard has killed the group, and only then does
    // the survival of the other process (the second pid) tell anything.
    let pids = kill_backoff_during(
        "echo pid=$$; setsid sh -c 'echo pid=$$; exec sleep 303' & echo ready; sleep 300",
        2,
    );
    assert_eq!(pids.len(), 2);
    let (in_group, left) = (pids[0], pids[1]);
    eventually(&format!("the command {in_group} to be killed"), || {
        gone(in_group)
    });
    let survived = !gone(left);
    send(left, libc::SIGKILL);
    assert!(survived, "a process in its own session is out of reach");
}
