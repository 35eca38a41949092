//! The retry budget shared by processes: real concurrent processes, real
//! files and locks.

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use predicates::prelude::*;

use crate::support::{
    PATIENCE, Running, TempDir, backoff, command, eventually, past_first_attempt, record_peak_rss,
};

/// The record of 8 tokens left in a bucket of the default burst and ratio.
const RECORD_8_OF_10: &str = "backoff-budget v2 micro-tokens 00000000000008000000 burst 00000000000010000000 ratio 00000000000000100000\n";

/// What `budget show --format json` says of a bucket: its level in
/// millionths, its burst and ratio, and where they came from.
pub fn bucket(v: &serde_json::Value) -> (u64, f64, f64, &str) {
    let number = |field: &str| v[field].as_f64().unwrap_or(-1.0);
    (
        v["micro_tokens"].as_u64().unwrap_or(u64::MAX),
        number("burst"),
        number("ratio"),
        v["bucket_from"].as_str().unwrap_or("?"),
    )
}

/// `backoff budget show KEY` with `options` against the state files in
/// `dir`: its output.
fn show(dir: &Path, key: &str, options: &[&str]) -> String {
    let out = backoff(["budget", "show", key])
        .args(options)
        .arg("--budget-dir")
        .arg(dir)
        .args(["--budget-store-timeout", "10s"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The same with `--format json`.
fn show_json(dir: &Path, key: &str) -> serde_json::Value {
    crate::support::json_of(
        crate::schema::Doc::BudgetShow,
        show(dir, key, &["--format", "json"]).as_bytes(),
    )
}

/// `backoff budget reset KEY` with `options`.
fn reset(dir: &Path, key: &str, options: &[&str]) {
    backoff(["budget", "reset", key])
        .args(options)
        .arg("--budget-dir")
        .arg(dir)
        .assert()
        .success();
}

#[test]
fn budget_show_reports_the_burst_and_ratio_the_bucket_was_made_with() {
    let dir = TempDir::new("budget-made");
    let store = private_dir(&dir);
    // Two retries from a bucket of 3 that deposits half a token a success.
    let made = ["--budget-burst", "3", "--budget-ratio", "0.5"];
    budgeted(&store, "small", "exit 3", &made).assert().code(3);
    let file = store.join("small.budget");
    let line = format!("small: 1 of 3 tokens, 0.5 a success ({})\n", file.display());
    assert_eq!(show(&store, "small", &[]), line);
    // The state's bucket, whatever the options of show say.
    assert_eq!(show(&store, "small", &["--budget-burst", "7"]), line);
    let v = show_json(&store, "small");
    assert_eq!(bucket(&v), (1_000_000, 3.0, 0.5, "state"), "{v}");
    assert_eq!(v["tokens"], 1.0, "{v}");
    // A success deposits the ratio, up to the burst.
    budgeted(&store, "small", "exit 0", &made)
        .assert()
        .success();
    assert_eq!(bucket(&show_json(&store, "small")).0, 1_500_000);

    // Reset fills the bucket to the burst it records; with the options, to
    // theirs, which it records from then on.
    reset(&store, "small", &[]);
    assert_eq!(
        bucket(&show_json(&store, "small")),
        (3_000_000, 3.0, 0.5, "state")
    );
    reset(&store, "small", &["--budget-burst", "5"]);
    assert_eq!(
        bucket(&show_json(&store, "small")),
        (5_000_000, 5.0, 0.1, "state")
    );

    // No state yet: the options' bucket, and show says where it came from.
    let text = show(&store, "none", &[]);
    assert!(
        text.starts_with("none: 10 of 10 tokens, 0.1 a success (")
            && text.ends_with("; burst and ratio from the options: the state records none)\n"),
        "{text}"
    );
    assert_eq!(
        bucket(&show_json(&store, "none")),
        (10_000_000, 10.0, 0.1, "options")
    );
    // A ratio above the burst is refused, as for a run.
    backoff(["budget", "show", "none", "--budget-burst", "1"])
        .args(["--budget-ratio", "2", "--budget-dir"])
        .arg(&store)
        .assert()
        .code(125)
        .stderr(predicates::str::contains("greater than --budget-burst"));
}

#[test]
fn a_state_of_the_first_version_is_read_and_upgraded_at_its_next_change() {
    let dir = TempDir::new("budget-v1");
    let store = private_dir(&dir);
    let file = store.join("old.budget");
    let old = "backoff-budget v1 micro-tokens 00000000000003000000\n";
    std::fs::write(&file, old).unwrap();
    // It records no bucket: show takes the options', and says so.
    assert_eq!(
        bucket(&show_json(&store, "old")),
        (3_000_000, 10.0, 0.1, "options")
    );
    // Two retries take two of its three tokens, and record the bucket.
    let out = budgeted(&store, "old", "exit 3", &["--budget-burst", "4"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(!stderr.contains("corrupt"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "backoff-budget v2 micro-tokens 00000000000001000000 burst 00000000000004000000 ratio 00000000000000100000\n"
    );
    assert_eq!(
        bucket(&show_json(&store, "old")),
        (1_000_000, 4.0, 0.1, "state")
    );
}

fn show_micro(dir: &Path, key: &str, burst: &str) -> u64 {
    let shown = show(dir, key, &["--format", "json", "--budget-burst", burst]);
    let v = crate::support::json_of(crate::schema::Doc::BudgetShow, shown.as_bytes());
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
            // Every decision must reach the file, however loaded the machine.
            .args(["--budget-store-timeout", "10s"])
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
        let out = crate::support::output_within(child);
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

/// A budgeted run of `sh -c SCRIPT` with up to two quick retries.
fn budgeted(store: &Path, key: &str, script: &str, options: &[&str]) -> assert_cmd::Command {
    let mut c = backoff(["--budget", key, "--base", "1ms", "--max-retries", "2"]);
    c.arg("--budget-dir")
        .arg(store)
        .args(options)
        .args(["--", "sh", "-c", script])
        .timeout(PATIENCE);
    c
}

/// A directory for state files, as backoff makes it (mode 0700).
fn private_dir(dir: &TempDir) -> std::path::PathBuf {
    let store = dir.join("store");
    std::fs::create_dir(&store).unwrap();
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o700)).unwrap();
    store
}

/// Checks that the state file of `key` in `store` is not used, said once
/// (`why`), and that a run that fails is then retried twice, or, with
/// --budget-store-fail closed, not retried.
fn untrusted_then_as_the_fail_mode_says(dir: &TempDir, store: &Path, key: &str, why: &str) {
    let log = dir.join("attempts");
    let script = format!("echo x >> '{}'; exit 3", log.display());
    for (fail, attempts) in [("open", 3), ("closed", 1)] {
        let _ = std::fs::remove_file(&log);
        let out = budgeted(store, key, &script, &["--budget-store-fail", fail])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{stderr}");
        assert_eq!(stderr.matches(why).count(), 1, "said once: {stderr}");
        let then = if fail == "open" {
            "retrying under the local policy"
        } else {
            "not retrying (--budget-store-fail closed)"
        };
        assert!(stderr.contains(then), "{stderr}");
        assert_eq!(dir.lines("attempts").len(), attempts, "{stderr}");
    }
}

#[test]
fn a_symlinked_state_file_is_never_followed_and_never_stops_the_command() {
    let dir = TempDir::new("budget-link");
    let store = private_dir(&dir);
    let target = dir.join("precious");
    std::fs::write(&target, "do not touch\n").unwrap();
    symlink(&target, store.join("link.budget")).unwrap();
    untrusted_then_as_the_fail_mode_says(&dir, &store, "link", "is a symbolic link");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "do not touch\n");
    let kind = std::fs::symlink_metadata(store.join("link.budget")).unwrap();
    assert!(kind.file_type().is_symlink());
    backoff(["budget", "show", "link", "--budget-dir"])
        .arg(&store)
        .assert()
        .code(125)
        .stderr(predicates::str::contains("is a symbolic link"));

    // A FIFO is neither waited on nor replaced, even by reset.
    let fifo = store.join("fifo.budget");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.unwrap().success());
    budgeted(&store, "fifo", "exit 3", &[])
        .assert()
        .code(3)
        .stderr(predicates::str::contains("is not a regular file"));
    backoff(["budget", "reset", "fifo", "--budget-dir"])
        .arg(&store)
        .timeout(PATIENCE)
        .assert()
        .code(125)
        .stderr(predicates::str::contains("is not a regular file"));
    let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&kind));
}

#[test]
fn a_state_file_with_another_hard_link_is_never_written_through() {
    let dir = TempDir::new("budget-hardlink");
    let store = private_dir(&dir);
    // Two keys whose identical states a deduplicating tool linked.
    for key in ["a", "b"] {
        std::fs::write(store.join(format!("{key}.budget")), RECORD_8_OF_10).unwrap();
    }
    std::fs::remove_file(store.join("b.budget")).unwrap();
    std::fs::hard_link(store.join("a.budget"), store.join("b.budget")).unwrap();
    let why = format!(
        "'{}' has 2 hard links: another name shares its state (remove one)",
        store.join("a.budget").display()
    );
    untrusted_then_as_the_fail_mode_says(&dir, &store, "a", &why);
    // Neither name was written through, nor replaced, even by a reset.
    backoff(["budget", "reset", "b", "--budget-dir"])
        .arg(&store)
        .timeout(PATIENCE)
        .assert()
        .code(125)
        .stderr(predicates::str::contains("has 2 hard links"));
    for key in ["a", "b"] {
        let file = store.join(format!("{key}.budget"));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), RECORD_8_OF_10);
        assert_eq!(
            std::os::unix::fs::MetadataExt::nlink(&std::fs::metadata(&file).unwrap()),
            2
        );
    }
    // A breaker's and a throttle's state files are the same kind of file.
    for (flag, name) in [("--breaker", "c.breaker"), ("--throttle", "c.throttle")] {
        std::fs::write(store.join(name), "").unwrap();
        std::fs::hard_link(store.join(name), dir.join(name)).unwrap();
        let out = backoff([flag, "c", "--budget-dir"])
            .arg(&store)
            .args(["--", "true"])
            .timeout(PATIENCE)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert_eq!(stderr.matches("has 2 hard links").count(), 1, "{stderr}");
        assert_eq!(std::fs::read(store.join(name)).unwrap(), b"", "{flag}");
    }
    // Once the other name is gone, the state is used again.
    std::fs::remove_file(store.join("b.budget")).unwrap();
    assert_eq!(show_micro(&store, "a", "10"), 8_000_000);
}

#[test]
fn a_corrupt_truncated_or_huge_state_is_reported_once_and_becomes_a_fresh_bucket() {
    let dir = TempDir::new("budget-corrupt");
    let store = private_dir(&dir);
    let record = "backoff-budget v1 micro-tokens 00000000000003000000\n";
    // Records of the current form that no run writes: a level above the
    // burst, a burst of no token, one above the largest.
    let v2 = |level: u64, burst: u64| {
        format!(
            "backoff-budget v2 micro-tokens {level:020} burst {burst:020} ratio {:020}\n",
            0
        )
    };
    let (above, empty, vast) = (v2(4_000_000, 3_000_000), v2(0, 0), v2(0, 1_000_000_000_001));
    let cases: [(&str, &[u8]); 6] = [
        ("garbage", b"ten tokens, trust me\n"),
        ("truncated", &record.as_bytes()[..30]),
        ("huge", b""),
        ("above", above.as_bytes()),
        ("empty", empty.as_bytes()),
        ("vast", vast.as_bytes()),
    ];
    for (key, content) in cases {
        let file = store.join(format!("{key}.budget"));
        std::fs::write(&file, content).unwrap();
        if key == "huge" {
            // A GiB that takes no room on the disk.
            std::fs::File::options()
                .write(true)
                .open(&file)
                .unwrap()
                .set_len(1 << 30)
                .unwrap();
        }
        // The last attempt follows the last decision: it records backoff's
        // peak memory after every read of the state.
        let rss = dir.join("rss");
        let out = command(["--budget", key, "--base", "1ms", "--max-retries", "2"])
            .arg("--budget-dir")
            .arg(&store)
            .args(["--", "sh", "-c"])
            .arg(format!("{}; exit 3", record_peak_rss(&rss)))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(3), "{key}: {stderr}");
        let peak_kib: u64 = std::fs::read_to_string(&rss)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(
            stderr.matches("is corrupt").count(),
            1,
            "{key}: said once: {stderr}"
        );
        assert!(
            stderr.contains("starting a fresh bucket"),
            "{key}: {stderr}"
        );
        assert!(peak_kib < 64 * 1024, "{key}: {peak_kib} KiB read");
        assert_eq!(
            show_micro(&store, key, "10"),
            8_000_000,
            "{key}: two retries"
        );
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            RECORD_8_OF_10,
            "{key}: a record of the current version, cut after it"
        );
    }

    // Closed: reported, left alone, not retried; the command still runs.
    let file = store.join("closed.budget");
    std::fs::write(&file, "not a state\n").unwrap();
    budgeted(
        &store,
        "closed",
        "exit 3",
        &["--budget-store-fail", "closed"],
    )
    .assert()
    .code(3)
    .stderr(predicates::str::contains("is corrupt"))
    .stderr(predicates::str::contains("not retrying"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a state\n");
    // show says so and changes nothing; reset repairs.
    backoff(["budget", "show", "closed", "--budget-dir"])
        .arg(&store)
        .assert()
        .code(125)
        .stderr(predicates::str::contains(
            "'backoff budget reset closed' with the same --budget-dir repairs it",
        ));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a state\n");
    backoff(["budget", "reset", "closed", "--budget-dir"])
        .arg(&store)
        .assert()
        .success();
    assert_eq!(show_micro(&store, "closed", "10"), 10_000_000);
}

#[test]
fn budget_show_creates_nothing() {
    let dir = TempDir::new("budget-show");
    let store = dir.join("not-yet");
    backoff(["budget", "show", "k", "--budget-dir"])
        .arg(&store)
        .assert()
        .success()
        .stdout(predicates::str::contains("k: 10 of 10 tokens"));
    assert!(!store.exists(), "show made the directory");
    let store = private_dir(&dir);
    assert_eq!(show_micro(&store, "k", "10"), 10_000_000);
    assert!(!store.join("k.budget").exists(), "show made the state file");
}

#[test]
fn an_untrusted_directory_never_stops_the_command_but_a_bad_key_is_refused() {
    let dir = TempDir::new("budget-dir");
    let open = dir.join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let link = dir.join("link");
    symlink(&open, &link).unwrap();
    for (store, why) in [
        (&open, "writable by other users"),
        (&link, "symbolic links are refused"),
    ] {
        let out = budgeted(store, "k", "exit 4", &[]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{stderr}");
        assert_eq!(stderr.matches(why).count(), 1, "said once: {stderr}");
        assert_eq!(stderr.matches("failed (exit 4)").count(), 3, "{stderr}");
    }
    assert!(!open.join("k.budget").exists(), "nothing written there");
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
fn a_state_file_or_directory_of_another_user_is_not_trusted_and_never_stops_the_command() {
    if !crate::support::is_root() {
        eprintln!("skipped: only root can give a file to another user");
        return;
    }
    let dir = TempDir::new("budget-foreign");
    let store = dir.join("store");
    // A success makes the state, as a reset of none does not.
    budgeted(&store, "f", "true", &[]).assert().success();
    let file = store.join("f.budget");
    let before = std::fs::read(&file).unwrap();
    std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();
    budgeted(&store, "f", "exit 5", &[])
        .assert()
        .code(5)
        .stderr(predicates::str::contains("belongs to another user"));
    assert_eq!(std::fs::read(&file).unwrap(), before, "left alone");
    std::os::unix::fs::chown(&store, Some(65534), Some(65534)).unwrap();
    budgeted(&store, "g", "exit 5", &["--budget-store-fail", "closed"])
        .assert()
        .code(5)
        .stderr(predicates::str::contains("belongs to another user"));
    assert!(!store.join("g.budget").exists());
}

/// Holds the exclusive lock of `file` in another process until killed.
pub fn hold_lock(file: &Path) -> std::process::Child {
    let mut holder = std::process::Command::new("python3")
        .args([
            "-c",
            "import fcntl, sys, time\nf = open(sys.argv[1], 'r+')\nfcntl.flock(f, fcntl.LOCK_EX)\nprint('locked', flush=True)\ntime.sleep(300)",
        ])
        .arg(file)
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
    holder
}

#[test]
fn a_held_lock_costs_at_most_the_timeout_and_a_signal_ends_the_wait() {
    let dir = TempDir::new("budget-locked");
    let store = dir.join("store");
    // A success makes the state, as a reset of none does not.
    budgeted(&store, "held", "true", &[]).assert().success();
    let mut holder = hold_lock(&store.join("held.budget"));
    let log = dir.join("attempts");
    let script = format!("echo x >> '{}'; exit 3", log.display());
    let start = Instant::now();
    let out = budgeted(
        &store,
        "held",
        &script,
        &["--budget-store-timeout", "300ms"],
    )
    .output()
    .unwrap();
    let took = start.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert_eq!(
        stderr.matches("timed out after 300ms").count(),
        1,
        "{stderr}"
    );
    assert_eq!(dir.lines("attempts").len(), 3, "fail open: retried");
    assert!(
        took < Duration::from_secs(5),
        "two waits of 300ms took {took:?}"
    );

    let mut cmd = command(["--budget", "held", "--budget-store-timeout", "1m"]);
    cmd.arg("--budget-dir").arg(&store).args([
        "--base",
        "1ms",
        "--",
        "sh",
        "-c",
        "echo child $$; exit 3",
    ]);
    let mut run = past_first_attempt(cmd);
    eventually("backoff waiting in the lock's queue", || {
        waits_for_lock(run.pid())
    });
    run.dies_by_within_a_second(libc::SIGTERM);
    assert!(
        run.stderr().contains(
            &"backoff: interrupted by SIGTERM during the retry budget's decision; no attempt follows"
        ),
        "{:?}",
        run.seen
    );
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert_eq!(
        show_micro(&store, "held", "10"),
        10_000_000,
        "no token taken"
    );
}

/// Whether backoff (`pid`) waits for the lock of a state file: a thread of
/// its own waits in the kernel's queue of the file's waiters.
pub fn waits_for_lock(pid: i32) -> bool {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task"));
    tasks.into_iter().flatten().flatten().any(|task| {
        std::fs::read_to_string(task.path().join("comm"))
            .is_ok_and(|name| name.trim_end() == "state file lock")
    })
}

/// Another process that holds the exclusive lock of a state file, and lets
/// go of it or takes it again when told to, saying when it has.
struct Holder {
    child: std::process::Child,
    said: std::sync::mpsc::Receiver<String>,
}

impl Holder {
    /// Takes the lock of `file`, and returns once it holds it.
    fn lock(file: &Path) -> Holder {
        let script = "import fcntl, sys\n\
            f = open(sys.argv[1], 'r+')\n\
            fcntl.flock(f, fcntl.LOCK_EX)\n\
            print('locked', flush=True)\n\
            for line in sys.stdin:\n\
            \x20   fcntl.flock(f, fcntl.LOCK_UN if line.strip() == 'release' else fcntl.LOCK_EX)\n\
            \x20   print('released' if line.strip() == 'release' else 'locked', flush=True)\n";
        let mut child = std::process::Command::new("python3")
            .args(["-c", script])
            .arg(file)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, said) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufRead::lines(std::io::BufReader::new(out)) {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut holder = Holder { child, said };
        holder.says("locked");
        holder
    }

    /// Waits, at most `PATIENCE`, until the holder says `what`.
    fn says(&mut self, what: &str) {
        let line = self.said.recv_timeout(PATIENCE);
        assert_eq!(line.as_deref(), Ok(what), "within {PATIENCE:?}");
    }

    /// Tells the holder to `release` the lock or `lock` it again, and waits
    /// until it has.
    fn tell(&mut self, what: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        std::io::Write::write_all(stdin, format!("{what}\n").as_bytes()).unwrap();
        self.says(if what == "release" {
            "released"
        } else {
            "locked"
        });
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_lock_let_go_is_taken_at_once_and_a_wait_given_up_lets_go_of_it_when_it_comes() {
    let dir = TempDir::new("budget-queue");
    let store = dir.join("store");
    // A success makes the state, as a reset of none does not.
    budgeted(&store, "q", "true", &[]).assert().success();
    let mut holder = Holder::lock(&store.join("q.budget"));

    // Waiting in the queue, with a timeout that never comes in a test: the
    // lock is taken as soon as the holder lets go of it.
    let mut cmd = command(["--budget", "q", "--budget-store-timeout", "1m"]);
    cmd.arg("--budget-dir").arg(&store).args([
        "--base",
        "1ms",
        "--max-retries",
        "1",
        "--",
        "sh",
        "-c",
        "echo child $$; exit 3",
    ]);
    let mut run = past_first_attempt(cmd);
    eventually("backoff waiting in the lock's queue", || {
        waits_for_lock(run.pid())
    });
    holder.tell("release");
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(3), "{:?}", run.seen);
    assert_eq!(run.wait_for_lines("child ", 2).len(), 2);
    assert_eq!(show_micro(&store, "q", "10"), 9_000_000, "a token taken");

    // A lock that never comes: the usual message, and the fail mode.
    holder.tell("lock");
    let log = dir.join("attempts");
    let out = budgeted(
        &store,
        "q",
        &format!("echo x >> '{}'; exit 3", log.display()),
        &[
            "--budget-store-timeout",
            "300ms",
            "--budget-store-fail",
            "closed",
        ],
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("is locked by another process: timed out after 300ms); not retrying (--budget-store-fail closed)"),
        "{stderr}"
    );
    assert_eq!(dir.lines("attempts").len(), 1, "fail closed: not retried");

    // A wait given up, whose lock comes while backoff still runs: it is let
    // go at once, and the holder takes it again.
    let mut cmd = command(["--budget", "q", "--budget-store-timeout", "300ms"]);
    cmd.arg("--budget-dir").arg(&store).args([
        "--base",
        "1ms",
        "--max-retries",
        "1",
        "--",
        "sh",
        "-c",
    ]);
    cmd.arg(format!(
        "if [ -e '{0}' ]; then echo second; exec sleep 60; fi; : > '{0}'; exit 3",
        dir.join("seen").display()
    ));
    let mut run = Running::start(cmd);
    run.wait_for("timed out after 300ms");
    run.wait_for("second");
    assert!(
        waits_for_lock(run.pid()),
        "the given-up wait is still queued"
    );
    holder.tell("release");
    holder.tell("lock");
    assert!(
        run.child.try_wait().unwrap().is_none(),
        "backoff still runs"
    );
    run.signal(libc::SIGTERM);
    run.wait_exit(PATIENCE);
    holder.tell("release");
    assert_eq!(show_micro(&store, "q", "10"), 9_000_000, "no token taken");
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
    let mut holder = hold_lock(&file);
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

/// A run of the budget `k` that retries once.
const RETRY_ONCE: [&str; 6] = ["--budget", "k", "--base", "1ms", "--max-retries", "1"];

/// `backoff ARGS` as cron starts it: `HOME` and nothing of XDG, or, with
/// `terminal`, as a login session does, with `XDG_RUNTIME_DIR` too.
fn as_user(home: &Path, terminal: Option<&Path>, args: &[&str]) -> assert_cmd::Command {
    let mut cmd = backoff(args);
    // Nothing is written outside the test's directory, whatever the build.
    let tmp = home.parent().unwrap();
    cmd.env("HOME", home)
        .env("TMPDIR", tmp)
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_RUNTIME_DIR")
        .timeout(PATIENCE);
    if let Some(run) = terminal {
        cmd.env("XDG_RUNTIME_DIR", run);
    }
    cmd
}

#[test]
fn cron_and_a_terminal_share_the_default_budget_in_the_home() {
    let dir = TempDir::new("budget-home");
    let (home, run) = (dir.join("home"), dir.join("run"));
    std::fs::create_dir(&home).unwrap();
    std::fs::create_dir(&run).unwrap();
    let retry_once = [&RETRY_ONCE[..], &["--", "false"]].concat();
    as_user(&home, None, &retry_once).assert().code(1);
    let show = ["budget", "show", "k", "--format", "json"];
    let out = as_user(&home, Some(&run), &show).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let v = crate::support::json_of(crate::schema::Doc::BudgetShow, &out.stdout);
    let state = home.join(".local/state/backoff");
    assert_eq!(
        v["micro_tokens"], 9_000_000,
        "the terminal sees cron's retry"
    );
    assert_eq!(v["store"], state.join("k.budget").display().to_string());
    let mode = std::fs::metadata(&state).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    assert!(!run.join("backoff").exists());
    // XDG_STATE_HOME, when absolute, is the place; a relative one is not.
    let xdg = dir.join("xdg");
    as_user(&home, Some(&run), &retry_once)
        .env("XDG_STATE_HOME", &xdg)
        .assert()
        .code(1);
    assert!(xdg.join("backoff/k.budget").exists());
    as_user(&home, None, &retry_once)
        .env("XDG_STATE_HOME", "relative")
        .current_dir(dir.path())
        .assert()
        .code(1);
    assert!(!dir.join("relative").exists());
    assert_eq!(show_micro(&state, "k", "10"), 8_000_000);
}

#[test]
fn with_no_home_or_an_untrusted_default_directory_the_command_still_runs() {
    let dir = TempDir::new("budget-nohome");
    let log = dir.join("attempts");
    let script = format!("echo x >> '{}'; exit 6", log.display());
    let retry_once = RETRY_ONCE;
    let out = backoff(retry_once)
        .env("TMPDIR", dir.path())
        .env_remove("HOME")
        .env_remove("XDG_STATE_HOME")
        .args(["--", "sh", "-c", &script])
        .timeout(PATIENCE)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "{stderr}");
    assert_eq!(stderr.matches("no budget directory").count(), 1, "{stderr}");
    assert_eq!(
        dir.lines("attempts").len(),
        2,
        "retried under the local policy"
    );
    backoff(["budget", "show", "k"])
        .env("TMPDIR", dir.path())
        .env_remove("HOME")
        .env_remove("XDG_STATE_HOME")
        .assert()
        .code(125)
        .stderr(predicates::str::contains("give --budget-dir"));

    if !crate::support::is_root() {
        eprintln!("skipped: only root can give a directory to another user");
        return;
    }
    let home = dir.join("home");
    let state = home.join(".local/state/backoff");
    std::fs::create_dir_all(&state).unwrap();
    std::os::unix::fs::chown(&state, Some(65534), Some(65534)).unwrap();
    std::fs::remove_file(&log).unwrap();
    let out = as_user(&home, None, &retry_once)
        .args(["--", "sh", "-c", &script])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "{stderr}");
    assert_eq!(
        stderr.matches("belongs to another user").count(),
        1,
        "{stderr}"
    );
    assert_eq!(dir.lines("attempts").len(), 2, "{stderr}");
    assert!(!state.join("k.budget").exists());
}

#[test]
fn a_home_that_does_not_exist_is_never_made() {
    let dir = TempDir::new("budget-nowhere");
    let home = dir.join("nonexistent");
    let log = dir.join("attempts");
    let script = format!("echo x >> '{}'; exit 6", log.display());
    let args = RETRY_ONCE;
    let why = format!(
        "no budget directory: HOME '{}' does not exist, and is not made; give --budget-dir DIR or an absolute XDG_STATE_HOME",
        home.display()
    );
    for (fail, attempts) in [("open", 2), ("closed", 1)] {
        let _ = std::fs::remove_file(&log);
        let out = as_user(&home, None, &args)
            .args(["--budget-store-fail", fail, "--", "sh", "-c", &script])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(6), "{stderr}");
        assert_eq!(stderr.matches(why.as_str()).count(), 1, "{stderr}");
        assert_eq!(dir.lines("attempts").len(), attempts, "{stderr}");
    }
    as_user(&home, None, &["budget", "show", "k"])
        .assert()
        .code(125)
        .stderr(predicates::str::contains(why.as_str()));
    assert!(!home.exists(), "nothing made");
    // XDG_STATE_HOME, when absolute, is still the place, made as needed.
    let xdg = dir.join("state");
    as_user(&home, None, &args)
        .env("XDG_STATE_HOME", &xdg)
        .args(["--", "false"])
        .assert()
        .code(1);
    assert!(xdg.join("backoff/k.budget").exists());
    assert!(!home.exists(), "nothing made");
}

#[test]
fn a_relative_or_empty_home_is_said_to_be_ignored() {
    let dir = TempDir::new("budget-relative");
    let cases: [(Option<&str>, Option<&str>, &str); 5] = [
        (None, Some("home"), "HOME 'home' is relative, and ignored"),
        (None, Some(""), "HOME is empty, and ignored"),
        (
            Some("state"),
            None,
            "XDG_STATE_HOME 'state' is relative, and ignored; HOME is not set",
        ),
        (
            Some(""),
            Some("home"),
            "XDG_STATE_HOME is empty, and ignored; HOME 'home' is relative, and ignored",
        ),
        (None, None, "neither XDG_STATE_HOME nor HOME is set"),
    ];
    for (xdg, home, why) in cases {
        let mut cmd = backoff(RETRY_ONCE);
        cmd.args(["--", "false"])
            .current_dir(dir.path())
            .env("TMPDIR", dir.path())
            .env_remove("HOME")
            .env_remove("XDG_STATE_HOME")
            .timeout(PATIENCE);
        if let Some(xdg) = xdg {
            cmd.env("XDG_STATE_HOME", xdg);
        }
        if let Some(home) = home {
            cmd.env("HOME", home);
        }
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        let said = format!(
            "retry budget unavailable (no budget directory: {why}; give --budget-dir DIR or an absolute XDG_STATE_HOME); retrying under the local policy"
        );
        assert_eq!(
            stderr.matches(said.as_str()).count(),
            1,
            "{xdg:?} {home:?}: {stderr}"
        );
        assert!(
            !stderr.contains("not set") || why.contains("not set"),
            "{stderr}"
        );
    }
    let made: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(
        made.is_empty(),
        "nothing made where relative values point: {made:?}"
    );
}

#[test]
fn no_directory_is_ever_made_in_a_home_of_another_user() {
    let dir = TempDir::new("budget-their-home");
    // As root, a home given to another user; as anyone else, root's /usr.
    let home = if crate::support::is_root() {
        let home = dir.join("home");
        std::fs::create_dir(&home).unwrap();
        std::os::unix::fs::chown(&home, Some(65534), Some(65534)).unwrap();
        home
    } else {
        std::path::PathBuf::from("/usr")
    };
    let owner = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(&home).unwrap());
    let why = format!(
        "no budget directory: HOME '{}' belongs to another user (uid {owner}), and no directory is made in it; give --budget-dir DIR or an absolute XDG_STATE_HOME",
        home.display()
    );
    let log = dir.join("attempts");
    let script = format!("echo x >> '{}'; exit 6", log.display());
    let args = RETRY_ONCE;
    let out = as_user(&home, None, &args)
        .args(["--", "sh", "-c", &script])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "{stderr}");
    assert_eq!(stderr.matches(why.as_str()).count(), 1, "{stderr}");
    assert_eq!(
        dir.lines("attempts").len(),
        2,
        "retried under the local policy"
    );
    assert!(!home.join(".local").exists(), "nothing made in the home");
    as_user(&home, None, &["budget", "show", "k"])
        .assert()
        .code(125)
        .stderr(predicates::str::contains(why.as_str()));
    // The advice, followed, works.
    let state = dir.join("state");
    as_user(&home, None, &args)
        .env("XDG_STATE_HOME", &state)
        .args(["--", "false"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains("no budget directory").not());
    assert!(state.join("backoff/k.budget").exists());
    if !crate::support::is_root() {
        eprintln!("skipped the rest: only root can give a directory to another user");
        return;
    }
    // Their ~/.local, in a home of one's own: nothing is made in it either.
    let mine = dir.join("mine");
    std::fs::create_dir_all(mine.join(".local")).unwrap();
    std::os::unix::fs::chown(mine.join(".local"), Some(65534), Some(65534)).unwrap();
    as_user(&mine, None, &args)
        .args(["--", "false"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains(format!(
            "no budget directory: '{}' belongs to another user (uid 65534), and no directory is made in it",
            mine.join(".local").display()
        )));
    assert_eq!(std::fs::read_dir(mine.join(".local")).unwrap().count(), 0);
    // A state directory of one's own that exists in their home is used, as
    // it passes the checks of any state directory.
    let state = home.join(".local/state/backoff");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    for made in [home.join(".local"), home.join(".local/state")] {
        std::os::unix::fs::chown(&made, Some(65534), Some(65534)).unwrap();
    }
    as_user(&home, None, &args)
        .args(["--", "false"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains("unavailable").not());
    assert!(state.join("k.budget").exists());
}

#[test]
fn the_store_timeout_is_at_most_a_minute() {
    let dir = TempDir::new("budget-timeout");
    for (timeout, refused) in [("1m", false), ("61s", true), ("1h", true)] {
        let out = backoff([
            "--budget",
            "k",
            "--budget-store-timeout",
            timeout,
            "--budget-dir",
        ])
        .arg(dir.join("store"))
        .args(["--", "true"])
        .timeout(PATIENCE)
        .output()
        .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if refused {
            assert_eq!(out.status.code(), Some(125), "{timeout}: {stderr}");
            assert_eq!(
                stderr,
                format!(
                    "backoff: invalid value '{timeout}' for '--budget-store-timeout': must be at most 1m: a store that has not answered by then is unavailable, and --budget-store-fail decides\n"
                )
            );
        } else {
            assert_eq!(out.status.code(), Some(0), "{timeout}: {stderr}");
        }
    }
}

#[test]
fn a_state_file_others_may_write_is_not_trusted() {
    let dir = TempDir::new("budget-0666");
    let store = private_dir(&dir);
    // No token left, as anyone could have written it.
    let file = store.join("k.budget");
    std::fs::write(&file, format!("backoff-budget v1 micro-tokens {:020}\n", 0)).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = budgeted(&store, "k", "exit 4", &[]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    let why = format!("'{}' is writable by other users", file.display());
    assert_eq!(stderr.matches(&why).count(), 1, "said once: {stderr}");
    assert_eq!(stderr.matches("failed (exit 4)").count(), 3, "{stderr}");
    backoff(["budget", "show", "k", "--budget-dir"])
        .arg(&store)
        .assert()
        .code(125)
        .stderr(predicates::str::contains(why.as_str()));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        format!("backoff-budget v1 micro-tokens {:020}\n", 0),
        "left alone"
    );
}
