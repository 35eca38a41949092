//! The retry budget shared by processes: real concurrent processes, real
//! files and locks.

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::process::Stdio;

use crate::support::{PATIENCE, Running, TempDir, backoff, command};

fn show_micro(dir: &Path, key: &str, burst: &str) -> u64 {
    let out = backoff([
        "budget",
        "show",
        key,
        "--format",
        "json",
        "--budget-burst",
        burst,
    ])
    .arg("--budget-dir")
    .arg(dir)
    .output()
    .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["micro_tokens"].as_u64().unwrap()
}

#[test]
fn fifty_processes_at_once_share_exactly_the_burst_of_retries() {
    let dir = TempDir::new("budget-50");
    let store = dir.join("store");
    let log = dir.join("attempts");
    let children: Vec<_> = (0..50)
        .map(|_| {
            command([
                "--budget",
                "fleet",
                "--base",
                "1ms",
                "--cap",
                "5ms",
                "--budget-dir",
            ])
            .arg(&store)
            .args(["--", "sh", "-c"])
            .arg(format!("echo x >> '{}'; exit 3", log.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    let mut refused = 0;
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(3),
            "every one exits with the child's status"
        );
        let text = String::from_utf8(out.stderr).unwrap();
        if text.contains("retry budget exhausted") {
            refused += 1;
        } else {
            assert!(
                text.contains("attempt 7/7 failed"),
                "neither refused nor exhausted: {text}"
            );
        }
    }
    let attempts = std::fs::read_to_string(&log).unwrap().lines().count();
    assert_eq!(
        attempts,
        50 + 10,
        "first attempts plus exactly the burst of retries"
    );
    assert!(refused >= 48, "only {refused} were refused");
    assert_eq!(show_micro(&store, "fleet", "10"), 0);
}

#[test]
fn successes_deposit_exactly_the_ratio_up_to_the_burst() {
    let dir = TempDir::new("budget-deposit");
    let store = dir.join("store");
    let with = |args: &[&str]| {
        let mut c = backoff([
            "--budget",
            "dep",
            "--budget-ratio",
            "0.3",
            "--base",
            "1ms",
            "--cap",
            "2ms",
        ]);
        c.arg("--budget-dir").arg(&store).args(args);
        c
    };
    // Spend the ten tokens.
    with(&["--max-retries", "10", "--", "false"])
        .assert()
        .code(1);
    assert_eq!(show_micro(&store, "dep", "10"), 0);
    for _ in 0..7 {
        with(&["--", "true"]).assert().success();
    }
    assert_eq!(
        show_micro(&store, "dep", "10"),
        2_100_000,
        "7 x 0.3 = 2.1 exactly"
    );
    for _ in 0..30 {
        with(&["--", "true"]).assert().success();
    }
    assert_eq!(
        show_micro(&store, "dep", "10"),
        10_000_000,
        "never above the burst"
    );
    backoff(["budget", "reset", "dep", "--budget-dir"])
        .arg(&store)
        .assert()
        .success();
}

#[test]
fn a_symlinked_or_corrupt_state_file_is_refused_and_left_untouched() {
    let dir = TempDir::new("budget-bad");
    let store = dir.join("store");
    std::fs::create_dir(&store).unwrap();
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o700)).unwrap();
    let target = dir.join("precious");
    std::fs::write(&target, "do not touch\n").unwrap();
    symlink(&target, store.join("link.budget")).unwrap();
    std::fs::write(store.join("bad.budget"), "ten tokens, trust me\n").unwrap();
    for key in ["link", "bad"] {
        let marker = dir.join(&format!("ran-{key}"));
        backoff(["--budget", key, "--budget-dir"])
            .arg(&store)
            .arg("--")
            .arg("touch")
            .arg(&marker)
            .assert()
            .code(125)
            .stderr(predicates::str::contains("cannot use retry budget"));
        assert!(!marker.exists(), "{key}: the command ran");
    }
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "do not touch\n");
    assert!(
        std::fs::symlink_metadata(store.join("link.budget"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        std::fs::read_to_string(store.join("bad.budget")).unwrap(),
        "ten tokens, trust me\n"
    );
}

#[test]
fn an_unsafe_directory_or_key_is_refused() {
    let dir = TempDir::new("budget-dir");
    let open = dir.join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    backoff(["--budget", "k", "--budget-dir"])
        .arg(&open)
        .args(["--", "true"])
        .assert()
        .code(125)
        .stderr(predicates::str::contains("writable by other users"));
    let link = dir.join("link");
    symlink(dir.path(), &link).unwrap();
    backoff(["--budget", "k", "--budget-dir"])
        .arg(&link)
        .args(["--", "true"])
        .assert()
        .code(125);
    for key in ["../escape", ".hidden", "a b", ""] {
        backoff(["--budget", key, "--", "true"])
            .assert()
            .code(125)
            .stderr(predicates::str::contains("'--budget'"));
    }
    backoff(["--budget", "k", "--budget-burst", "0", "--", "true"])
        .assert()
        .code(125);
    backoff(["--budget", "k", "--budget-ratio", "20", "--budget-dir"])
        .arg(dir.join("fresh"))
        .args(["--", "true"])
        .assert()
        .code(125)
        .stderr(predicates::str::contains("'--budget-ratio'"));
}

#[test]
fn a_state_file_owned_by_another_user_is_refused() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: only root can give a file to another user");
        return;
    }
    let dir = TempDir::new("budget-foreign");
    let store = dir.join("store");
    backoff(["budget", "reset", "f", "--budget-dir"])
        .arg(&store)
        .assert()
        .success();
    std::os::unix::fs::chown(store.join("f.budget"), Some(65534), Some(65534)).unwrap();
    backoff(["--budget", "f", "--budget-dir"])
        .arg(&store)
        .args(["--", "true"])
        .assert()
        .code(125)
        .stderr(predicates::str::contains("belongs to another user"));
}

#[test]
fn the_state_survives_backoff_killed_mid_run_and_no_stale_lock_remains() {
    let dir = TempDir::new("budget-kill");
    let store = dir.join("store");
    let mut cmd = command([
        "--budget",
        "kill",
        "--base",
        "30s",
        "--cap",
        "30s",
        "--jitter",
        "none",
        "--budget-dir",
    ]);
    cmd.arg(&store).args(["--", "false"]);
    let mut run = Running::start(cmd);
    run.wait_for("retrying in 30.0s");
    run.signal(libc::SIGKILL);
    run.wait_exit(PATIENCE);
    assert_eq!(
        show_micro(&store, "kill", "10"),
        9_000_000,
        "the retry's token was taken"
    );

    // A process killed while it holds the lock: the kernel releases it.
    let file = store.join("kill.budget");
    let mut holder = std::process::Command::new("python3")
        .args([
            "-c",
            "import fcntl, sys, time\nf = open(sys.argv[1], 'r+')\nfcntl.flock(f, fcntl.LOCK_EX)\nprint('locked', flush=True)\ntime.sleep(300)",
        ])
        .arg(&file)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "locked");
    holder.kill().unwrap();
    holder.wait().unwrap();
    backoff([
        "--budget",
        "kill",
        "--base",
        "1ms",
        "--max-retries",
        "1",
        "--budget-dir",
    ])
    .arg(&store)
    .args(["--", "false"])
    .timeout(PATIENCE)
    .assert()
    .code(1);
    assert_eq!(show_micro(&store, "kill", "10"), 8_000_000);
}
