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
