//! How the command is run: directly, with raw arguments, in its own process
//! group, with the documented environment.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use predicates::prelude::*;

use crate::support::backoff;

#[test]
fn everything_after_the_command_belongs_to_it_even_option_like_words() {
    backoff(["printf", "%s|", "-v", "--base", "x"])
        .assert()
        .success()
        .stdout("-v|--base|x|");
}

#[test]
fn a_program_named_like_a_subcommand_runs_after_double_dash() {
    backoff(["--max-retries", "0", "--", "schedule"])
        .assert()
        .code(127)
        .stderr(predicate::str::contains("cannot run 'schedule'"));
}

#[test]
fn arguments_pass_as_raw_bytes_without_a_shell() {
    let raw = OsStr::from_bytes(b"caf\xe9 $HOME;*");
    let out = backoff([OsStr::new("printf"), OsStr::new("%s"), raw])
        .output()
        .unwrap();
    assert_eq!(out.stdout, raw.as_bytes());
}

/// The process group id of a process, from `/proc/PID/stat` (field 5).
#[cfg(target_os = "linux")]
const PGRP_OF_SHELL_AND_PARENT: &str =
    "cut -d' ' -f5 /proc/$$/stat; cut -d' ' -f5 /proc/$PPID/stat";

#[cfg(target_os = "linux")]
#[test]
fn the_child_runs_in_its_own_process_group_unless_foreground() {
    let groups = |extra: &[&str]| {
        let out = backoff(
            extra
                .iter()
                .chain(&["--", "sh", "-c", PGRP_OF_SHELL_AND_PARENT]),
        )
        .output()
        .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        text.lines().map(str::to_owned).collect::<Vec<_>>()
    };
    let own = groups(&[]);
    assert_eq!(own.len(), 2);
    assert_ne!(own[0], own[1], "the child must lead its own group");
    let fg = groups(&["--foreground"]);
    assert_eq!(
        fg[0], fg[1],
        "--foreground keeps the child in backoff's group"
    );
}

#[test]
fn the_child_sees_its_attempt_number_limit_and_last_status() {
    let script = "echo \"$BACKOFF_ATTEMPT:$BACKOFF_MAX_ATTEMPTS:${BACKOFF_LAST_STATUS-unset}\"; \
                  case $BACKOFF_ATTEMPT in 1) exit 3;; 2) kill -TERM $$;; esac";
    backoff([
        "--base",
        "1ms",
        "--max-retries",
        "4",
        "--",
        "sh",
        "-c",
        script,
    ])
    .assert()
    .success()
    .stdout("1:5:unset\n2:5:3\n3:5:sig:TERM\n");
    backoff(["--base", "1ms", "--forever", "--", "sh", "-c", script])
        .assert()
        .success()
        .stdout("1::unset\n2::3\n3::sig:TERM\n");
}

#[test]
fn an_inherited_backoff_last_status_does_not_leak_into_the_first_attempt() {
    backoff(["--", "sh", "-c", "echo ${BACKOFF_LAST_STATUS-unset}"])
        .env("BACKOFF_LAST_STATUS", "99")
        .assert()
        .success()
        .stdout("unset\n");
}

#[test]
fn the_child_gets_backoffs_environment_with_only_the_attempt_variables_changed() {
    let out = backoff(["--base", "1ms", "--max-retries", "1", "--", "/usr/bin/env"])
        .env_clear()
        .env("KEEP", "a=b c")
        .env("EMPTY", "")
        .env("BACKOFF_ATTEMPTS_SEEN", "kept: not one of backoff's names")
        .env("BACKOFF_ATTEMPT", "9")
        .env("BACKOFF_LAST_STATUS", "99")
        .output()
        .unwrap();
    assert!(out.status.success());
    let mut lines: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    lines.sort_unstable();
    let id = lines
        .iter()
        .position(|l| l.starts_with("BACKOFF_RUN_ID="))
        .expect("the run's id");
    assert_eq!(lines.remove(id).len(), "BACKOFF_RUN_ID=".len() + 36);
    assert_eq!(
        lines,
        [
            "BACKOFF_ATTEMPT=1",
            "BACKOFF_ATTEMPTS_SEEN=kept: not one of backoff's names",
            "BACKOFF_MAX_ATTEMPTS=2",
            "EMPTY=",
            "KEEP=a=b c",
        ]
    );
}

/// Starts backoff with `environ` exactly as given (entries without `=`,
/// duplicates and bytes that are not UTF-8 included, which `Command::env`
/// cannot make), running a child that prints the environment it received
/// and fails at its first attempt.
#[test]
fn odd_environment_entries_pass_as_the_standard_library_reads_them() {
    const LAUNCH: &str = r#"
import ctypes, sys
env = [b"NOEQ", b"=A=b", b"DUP=1", b"DUP=2", b"BACKOFF_ATTEMPT=9", b"BACKOFF_ATTEMPT",
       b"N\xff=\x80", b"BACKOFF_LAST_STATUS=77", b"BACKOFF_ATTEMPTX=y", b"E="]
child = ("import sys; e = open('/proc/self/environ', 'rb').read(); "
         "sys.stdout.write(repr(e) + chr(10)); sys.exit(b'BACKOFF_ATTEMPT=1' in e.split(bytes(1)))")
args = [sys.argv[1].encode(), b"--base", b"1ms", b"--max-retries", b"1", b"-q", b"--",
        sys.executable.encode(), b"-c", child.encode()]
def array(items):
    a = (ctypes.c_char_p * (len(items) + 1))(*items)
    a[len(items)] = None
    return a
libc = ctypes.CDLL(None, use_errno=True)
libc.execve(args[0], array(args), array(env))
sys.exit("execve: %d" % ctypes.get_errno())
"#;
    let out = crate::support::plain(&mut std::process::Command::new("python3"))
        .args(["-c", LAUNCH])
        .arg(crate::support::bin())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // The run's id, the same in both attempts.
    let stdout = String::from_utf8(out.stdout).unwrap();
    let ids = regex::Regex::new("BACKOFF_RUN_ID=([0-9a-f-]{36})").unwrap();
    let seen: Vec<&str> = ids
        .captures_iter(&stdout)
        .map(|c| c.get(1).unwrap().as_str())
        .collect();
    assert!(seen.len() == 2 && seen[0] == seen[1], "{stdout}");
    let common = r"=A=b\x00DUP=1\x00DUP=2\x00N\xff=\x80\x00BACKOFF_ATTEMPTX=y\x00E=\x00";
    assert_eq!(
        ids.replace_all(&stdout, "BACKOFF_RUN_ID=ID"),
        format!(
            "b'{common}BACKOFF_RUN_ID=ID\\x00BACKOFF_ATTEMPT=1\\x00BACKOFF_MAX_ATTEMPTS=2\\x00'\n\
             b'{common}BACKOFF_RUN_ID=ID\\x00BACKOFF_ATTEMPT=2\\x00BACKOFF_MAX_ATTEMPTS=2\\x00BACKOFF_LAST_STATUS=1\\x00'\n"
        )
    );
}

#[test]
fn processes_a_failed_attempt_left_behind_are_ended_before_the_retry() {
    let dir = crate::support::TempDir::new("lingering");
    let pids = dir.join("pids");
    backoff(["--base", "1ms", "--max-retries", "1", "--", "sh", "-c"])
        .arg(format!(
            "sleep 300 >/dev/null 2>&1 & echo $! >> '{}'; exit 1",
            pids.display()
        ))
        .assert()
        .code(1);
    let lines = dir.lines("pids");
    // The first attempt's sleep was ended before the retry; the last
    // attempt's is left alone, as after a success.
    let first: i32 = lines[0].parse().unwrap();
    crate::support::eventually("the first attempt's sleep to end", || {
        crate::support::gone(first)
    });
    let last: i32 = lines[1].parse().unwrap();
    assert!(!crate::support::gone(last));
    crate::support::send(last, libc::SIGKILL);
}

/// In a new PID namespace backoff's process group has its leader outside
/// the namespace, and `getpgrp()` returns 0 there: backoff must still end
/// with the command's status.
#[cfg(target_os = "linux")]
#[test]
fn a_run_in_a_pid_namespace_keeps_the_commands_status() {
    let usable = std::process::Command::new("unshare")
        .args(["--pid", "--fork", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !usable {
        eprintln!(
            "skipped: unshare --pid is not permitted here (it needs root or user namespaces)"
        );
        return;
    }
    let out = crate::support::plain(&mut std::process::Command::new("unshare"))
        .args(["--pid", "--fork"])
        .arg(crate::support::bin())
        .args(["--max-retries", "0", "--", "sh", "-c", "exit 3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
}

/// `backoff ARGS` started with at most `files` open descriptors.
fn with_open_file_limit(files: u64, args: &[&str]) -> std::process::Output {
    let script = "import os, resource, sys\n\
                  n = int(sys.argv[1])\n\
                  resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))\n\
                  os.execv(sys.argv[2], sys.argv[2:])";
    crate::support::plain(&mut std::process::Command::new("python3"))
        .args(["-c", script])
        .arg(files.to_string())
        .arg(crate::support::bin())
        .args(args)
        .output()
        .expect("python3 runs")
}

#[test]
fn backoffs_own_lack_of_descriptors_is_retried_said_to_be_backoffs_and_ends_with_125() {
    // Enough for backoff to start, too few to start the command: how many
    // that is depends on the C library, and with the fewest not even a
    // descriptor for its own stderr is left, which must not silence it.
    for files in [5, 6, 7] {
        let out = with_open_file_limit(
            files,
            &["--max-retries", "2", "--base", "1ms", "--", "true"],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{files}: {err}");
        // The C library words EMFILE its own way ("Too many open files").
        assert_eq!(
            err.matches("failed (backoff could not start it: ").count(),
            3,
            "{files}: {err}"
        );
        assert!(err.contains("giving up after 3 attempts"), "{err}");
        assert!(
            !err.contains("cannot run"),
            "not blamed on the command: {err}"
        );
    }
}

#[test]
fn a_command_killed_by_sigpipe_when_its_reader_quits_ends_quietly_unless_verbose() {
    let bin = crate::support::bin();
    for (flags, lines) in [("", 0), ("-v", 3)] {
        let out = crate::support::plain(&mut std::process::Command::new("sh"))
            .arg("-c")
            .arg(format!("'{}' {flags} -- yes | head -1", bin.display()))
            .output()
            .expect("sh runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.stdout, b"y\n");
        assert_eq!(err.lines().count(), lines, "{flags:?}: {err}");
        if lines > 0 {
            assert!(err.contains("signal PIPE"), "{err}");
        }
    }
}

#[test]
fn a_failed_fork_is_backoffs_own_failure_retried_and_said_and_so_is_the_guards() {
    // Root is not held to a process limit: the run drops to "nobody", whose
    // limit of one process is backoff itself.
    let setpriv = std::path::Path::new("/usr/bin/setpriv");
    let python = std::path::Path::new("/usr/bin/python3");
    if !crate::support::is_root() || !setpriv.exists() || !python.exists() {
        eprintln!("skipped: needs root, /usr/bin/setpriv and /usr/bin/python3");
        return;
    }
    let script = "import os, resource, sys\n\
                  resource.setrlimit(resource.RLIMIT_NPROC, (1, 1))\n\
                  os.execv(sys.argv[1], sys.argv[1:])";
    let out = crate::support::plain(&mut std::process::Command::new(setpriv))
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(python)
        .args(["-c", script])
        .arg(crate::support::bin())
        .args(["--max-retries", "1", "--base", "1ms", "--", "true"])
        .output()
        .expect("setpriv runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{err}");
    assert!(err.contains("cannot start the guard process"), "{err}");
    assert_eq!(
        err.matches("failed (backoff could not start it: ").count(),
        2,
        "{err}"
    );
}

/// The pid of the guard process of the backoff `parent`: its child named
/// `backoff-guard`.
#[cfg(target_os = "linux")]
fn guard_of(parent: i32) -> Option<i32> {
    std::fs::read_dir("/proc").ok()?.find_map(|entry| {
        let pid: i32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let (head, tail) = stat.rsplit_once(')')?;
        let parent_of: i32 = tail.split_whitespace().nth(1)?.parse().ok()?;
        (head.ends_with("(backoff-guard") && parent_of == parent).then_some(pid)
    })
}

/// The guard of the backoff `parent` once it has one other than `old` (0
/// for any): a guard is named `backoff-guard` only once it has run a
/// little.
#[cfg(target_os = "linux")]
fn guard_other_than(parent: i32, old: i32) -> i32 {
    let mut found = 0;
    crate::support::eventually("a guard process", || {
        found = guard_of(parent).filter(|&g| g != old).unwrap_or(0);
        found != 0
    });
    found
}

#[cfg(target_os = "linux")]
#[test]
fn a_killed_guard_costs_no_attempt_and_a_new_one_watches_the_next() {
    use crate::support::{PATIENCE, Running, TempDir, command, eventually, gone, send};
    let dir = TempDir::new("guard-killed");
    // Attempt 1 fails once the guard is dead; attempt 2 waits to be killed
    // with backoff.
    let script = format!(
        "if [ \"$BACKOFF_ATTEMPT\" = 1 ]; then echo first; i=0; \
         while [ ! -e '{go}' ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done; exit 1; fi; \
         echo pid=$$; exec sleep 300",
        go = dir.join("go").display()
    );
    let mut cmd = command(["--base", "1ms", "--max-retries", "1", "--"]);
    cmd.args(["sh", "-c", &script]);
    let mut run = Running::start(cmd);
    run.wait_for("first");
    let guard = guard_other_than(run.pid(), 0);
    send(guard, libc::SIGKILL);
    eventually("the guard to die", || gone(guard));
    std::fs::write(dir.join("go"), "").unwrap();
    // The second attempt runs; before, it died by SIGPIPE before it could
    // execute anything, and backoff exited 141 without a word.
    let line = run.wait_for("pid=");
    let attempt: i32 = line.trim_start_matches("pid=").parse().unwrap();
    run.wait_for("the guard process died; a new one was started");
    // The new guard knows the attempt's group: SIGKILL of backoff ends it.
    guard_other_than(run.pid(), guard);
    run.signal(libc::SIGKILL);
    run.wait_exit(PATIENCE);
    eventually("the second attempt to be killed by the new guard", || {
        gone(attempt)
    });
}

#[cfg(target_os = "linux")]
#[test]
fn a_guard_killed_during_an_attempt_is_replaced_before_the_attempt_ends() {
    use crate::support::{PATIENCE, Running, command, eventually, gone, send};
    // One long attempt: the guard is killed while it runs.
    let mut cmd = command(["--max-retries", "0", "--", "sh", "-c"]);
    cmd.arg("echo pid=$$; exec sleep 300");
    let mut run = Running::start(cmd);
    let line = run.wait_for("pid=");
    let attempt: i32 = line.trim_start_matches("pid=").parse().unwrap();
    let guard = guard_other_than(run.pid(), 0);
    send(guard, libc::SIGKILL);
    // Before, the death was noticed only once the attempt had ended: the
    // attempt ran unguarded meanwhile (and, as PID 1, no orphan was reaped
    // behind the dead guard).
    run.wait_for("the guard process died; a new one was started");
    assert!(!gone(attempt), "the attempt ended: {:?}", run.seen);
    guard_other_than(run.pid(), guard);
    run.signal(libc::SIGKILL);
    run.wait_exit(PATIENCE);
    eventually("the attempt to be killed by the new guard", || {
        gone(attempt)
    });
}

/// backoff with `args` as PID 1 of a new PID namespace (as a container's
/// entrypoint without an init), with a /proc of its own; `None`, said on
/// one line, where `unshare` cannot make one.
#[cfg(target_os = "linux")]
fn as_pid_1(args: &[&str]) -> Option<assert_cmd::Command> {
    in_pid_namespace(&["--mount-proc"], args)
}

/// backoff with `args` as PID 1 of a new PID namespace, with `unshare`'s
/// `flags` too; `None`, said on one line, where `unshare` cannot make one.
#[cfg(target_os = "linux")]
fn in_pid_namespace(flags: &[&str], args: &[&str]) -> Option<assert_cmd::Command> {
    // --kill-child: a backoff left when unshare is killed at the deadline
    // is killed too.
    const UNSHARE: [&str; 3] = ["--pid", "--fork", "--kill-child"];
    let works = std::process::Command::new("unshare")
        .args(UNSHARE)
        .args(flags)
        .arg("true")
        .output()
        .is_ok_and(|o| o.status.success());
    if !works {
        eprintln!("skipped: unshare --pid --fork {flags:?} is unavailable or not permitted");
        return None;
    }
    let mut cmd = std::process::Command::new("unshare");
    crate::support::plain(&mut cmd)
        .args(UNSHARE)
        .args(flags)
        .arg(crate::support::bin())
        .args(args);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    // A backoff that hangs fails the test, within a deadline.
    let mut cmd = assert_cmd::Command::from_std(cmd);
    cmd.timeout(crate::support::PATIENCE);
    Some(cmd)
}

#[cfg(target_os = "linux")]
#[test]
fn in_a_pid_namespace_seen_through_the_hosts_proc_a_hooks_leftovers_are_ended() {
    // /proc is the host's: it does not show the namespace's process groups.
    // What the hook left ignores SIGTERM; it must be killed after
    // --kill-after, before the next attempt, which looks for it (bounded).
    let dir = crate::support::TempDir::new("pid-namespace");
    let left = dir.join("left");
    let hook = format!(
        "(trap '' TERM; echo > '{ready}'; exec sleep 300) & echo $! > '{left}'; \
         i=0; while [ ! -e '{ready}' ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done",
        left = left.display(),
        ready = dir.join("ready").display()
    );
    let attempt = format!(
        "[ \"$BACKOFF_ATTEMPT\" = 1 ] && exit 1; l=$(cat '{left}'); \
         i=0; while kill -0 \"$l\" 2>/dev/null && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done; \
         kill -0 \"$l\" 2>/dev/null && echo beside || echo ended",
        left = left.display()
    );
    let Some(mut cmd) = in_pid_namespace(
        &[],
        &[
            "--base",
            "1ms",
            "--max-retries",
            "1",
            "--kill-after",
            "200ms",
            "--on-retry",
            &hook,
            "--",
            "sh",
            "-c",
            &attempt,
        ],
    ) else {
        return;
    };
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    // Before, /proc showed no process of the group, and backoff went on at
    // once, the leftover running beside the next attempt: "beside".
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ended\n", "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
}

#[cfg(target_os = "linux")]
#[test]
fn as_pid_1_backoff_reaps_the_orphans_of_every_attempt() {
    // Each failed attempt leaves an orphan by a double fork; the last one
    // counts the zombies in the namespace until there are none (bounded).
    let script = "if [ \"$BACKOFF_ATTEMPT\" -lt 10 ]; then sh -c 'sleep 0 & exit 0'; exit 1; fi; \
                  i=0; while :; do z=$(cat /proc/[0-9]*/stat 2>/dev/null | grep -c ') Z '); \
                  [ \"$z\" -eq 0 ] || [ $i -ge 1000 ] && break; sleep 0.01; i=$((i+1)); done; \
                  echo \"zombies $z\"";
    let Some(mut cmd) = as_pid_1(&[
        "--base",
        "1ms",
        "--max-retries",
        "9",
        "--",
        "sh",
        "-c",
        script,
    ]) else {
        return;
    };
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    // Before, each attempt's orphan stayed a zombie: "zombies 9".
    assert_eq!(String::from_utf8_lossy(&out.stdout), "zombies 0\n", "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
}

#[cfg(target_os = "linux")]
#[test]
fn as_pid_1_backoff_reaps_orphans_during_an_attempt_after_its_guard_is_killed() {
    // The dead guard, backoff's own child, is the first that has ended: the
    // orphans that end behind it must be reaped all the same, while the
    // attempt still runs.
    // The guard is named only once it has run: it is waited for, killed,
    // and its successor waited for.
    let script = "echo start >&2; \
                  i=0; while ! pgrep -x backoff-guard >/dev/null && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done; \
                  pkill -KILL -x backoff-guard; \
                  i=0; while ! pgrep -r S -x backoff-guard >/dev/null && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done; \
                  for n in 1 2 3 4 5 6 7 8 9 10; do sh -c 'sleep 0 & exit 0'; done; \
                  i=0; while :; do z=$(cat /proc/[0-9]*/stat 2>/dev/null | grep -c ') Z '); \
                  [ \"$z\" -eq 0 ] || [ $i -ge 500 ] && break; sleep 0.01; i=$((i+1)); done; \
                  echo \"zombies $z\"";
    let Some(mut cmd) = as_pid_1(&["--max-retries", "0", "--", "sh", "-c", script]) else {
        return;
    };
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    // Before, the ten orphans (and the guard) stayed zombies until the
    // attempt ended: "zombies 11".
    assert_eq!(String::from_utf8_lossy(&out.stdout), "zombies 0\n", "{err}");
    assert!(
        err.contains("the guard process died; a new one was started"),
        "{err}"
    );
    assert_eq!(out.status.code(), Some(0), "{err}");
}

#[cfg(target_os = "linux")]
#[test]
fn as_pid_1_backoff_is_stopped_by_kill_1_and_passes_it_on() {
    // The kernel gives PID 1 only the signals it has a handler for.
    let handled = "trap 'echo got TERM; exit 7' TERM; kill -TERM 1; \
                   i=0; while [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done; exit 1";
    let Some(mut cmd) = as_pid_1(&["--base", "30s", "--", "sh", "-c", handled]) else {
        return;
    };
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "got TERM\n", "{err}");
    assert!(
        err.contains("interrupted by SIGTERM during the attempt"),
        "{err}"
    );
    assert_eq!(out.status.code(), Some(7), "{err}");
    // A command that dies by it: backoff cannot die by a signal as PID 1,
    // and exits 128 + N instead.
    let Some(mut cmd) = as_pid_1(&[
        "--base",
        "30s",
        "--",
        "sh",
        "-c",
        "kill -INT 1; exec sleep 20",
    ]) else {
        return;
    };
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("interrupted by SIGINT during the attempt"),
        "{err}"
    );
    assert_eq!(out.status.code(), Some(130), "{err}");
}
