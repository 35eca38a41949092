//! The overlap policies under faults: a run of `--lock-replace` ended by a
//! signal while it waits for the holder to let go leaves nothing behind.

use std::os::unix::process::ExitStatusExt as _;
use std::time::Instant;

use crate::support::{PATIENCE, Running, TempDir, command};

#[test]
fn a_run_of_lock_replace_ended_while_it_waits_takes_its_request_back() {
    let dir = TempDir::new("lock-replace-interrupted");
    let store = dir.join("store");
    let store = store.to_str().unwrap();
    // A holder slow to end: its attempt ignores --signal until --kill-after.
    let mut holder = command([
        "--budget-dir",
        store,
        "--lock",
        "job",
        "--kill-after",
        "60s",
        "--",
        "sh",
        "-c",
        "trap '' TERM; echo holding; while [ ! -e release ]; do sleep 0.05; done",
    ]);
    holder.current_dir(dir.path());
    let mut holder = Running::start(holder);
    holder.wait_for("holding");
    let mut new = Running::start(command([
        "--budget-dir",
        store,
        "--lock",
        "job",
        "--lock-replace",
        "-v",
        "--",
        "echo",
        "never",
    ]));
    new.wait_for("it is asked to end");
    assert!(dir.join("store/job.lock.replace").exists());
    new.signal(libc::SIGTERM);
    let (status, _) = new.wait_exit(PATIENCE);
    // Ended by the signal, as a run interrupted is.
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{:?}", new.seen);
    assert!(
        !new.seen.iter().any(|(_, l)| l == "never"),
        "{:?}",
        new.seen
    );
    // Its request is gone with it; the lock is the holder's until it ends.
    assert!(
        !dir.join("store/job.lock.replace").exists(),
        "the request of the run that was ended is left behind"
    );
    std::fs::write(dir.join("release"), "").unwrap();
    let started = Instant::now();
    let (status, _) = holder.wait_exit(PATIENCE);
    assert!(status.code().is_some(), "{:?}", holder.seen);
    assert!(started.elapsed() < PATIENCE);
    crate::support::backoff(["lock", "show", "job", "--budget-dir", store])
        .assert()
        .success()
        .stdout(predicates::str::contains("free"));
}

/// Two runs of `--lock-limit 2` with `args` hold both slots; one is killed
/// (SIGKILL, nothing let go): a run that waits (`--lock-wait`) gets the
/// slot it held, and it is the only one to run beside the other holder.
fn a_killed_holders_slot_comes_free(args: &[&str], test: &str) {
    let dir = TempDir::new(test);
    let store = dir.join("store");
    let holder = |name: &str| {
        let mut cmd = command(["--budget-dir", store.to_str().unwrap()]);
        cmd.args(["--lock", "job", "--lock-limit", "2"])
            .args(args)
            .args(["--", "sh", "-c"])
            .arg(format!("echo {name}; exec sleep 60"));
        let mut run = Running::start(cmd);
        run.wait_for(name);
        run
    };
    let (mut first, mut second) = (holder("first"), holder("second"));
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    let mut next = command(["--budget-dir", store.to_str().unwrap()]);
    next.args(["--lock", "job", "--lock-limit", "2", "--lock-wait", "60s"])
        .args(args)
        .args(["--", "echo", "next"]);
    let started = Instant::now();
    let out = crate::support::output_within(
        next.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "next\n");
    assert!(started.elapsed() < PATIENCE);
    // The second holder ran on throughout.
    assert!(
        second.child.try_wait().unwrap().is_none(),
        "{:?}",
        second.seen
    );
    second.signal(libc::SIGTERM);
    second.wait_exit(PATIENCE);
}

#[test]
fn a_slot_of_lock_limit_held_by_a_killed_run_comes_free_in_files() {
    a_killed_holders_slot_comes_free(&[], "lock-limit-killed-file");
}

#[test]
fn a_slot_of_lock_limit_held_by_a_killed_run_comes_free_in_redis_after_its_lease() {
    let redis = crate::fleet::Redis::start(None);
    let url = redis.url();
    a_killed_holders_slot_comes_free(
        &crate::lock_overlap::leased(&url),
        "lock-limit-killed-redis",
    );
}
