//! Overlap policies beyond skip and wait: `--lock-replace` ends the holder
//! and takes over (on one host, and across two "hosts" on Redis), never
//! beside it; `--lock-limit N` lets at most N runs hold a KEY at once
//! (files, Redis and a Redis Cluster). Every attempt appends its start and
//! end, on a clock of nanoseconds, to a shared log, from which the overlap
//! is read.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::fleet::Redis;
use crate::support::{PATIENCE, Running, TempDir, backoff, command, is_root, output_within};

/// Every call must reach the store, however loaded the machine.
const LIVE: [&str; 2] = ["--budget-store-timeout", "10s"];

/// A short lease, and a short --kill-after.
const SHORT: [&str; 4] = ["--lock-ttl", "2s", "--kill-after", "0.5s"];

/// The options of a short lease in the Redis at `url`.
pub(crate) fn leased(url: &str) -> Vec<&str> {
    let mut args = vec!["--budget-store", url];
    args.extend(SHORT);
    args.extend(LIVE);
    args
}

/// The script of an attempt named `name` that logs its start (with its
/// fencing token) and its end, then runs `then`, ending (and logging its
/// end) at SIGTERM.
fn logged(name: &str, then: &str) -> String {
    format!(
        "trap 'echo \"end {name} $(date +%s%N)\" >> log; exit 1' TERM; \
         echo \"start {name} $(date +%s%N) $BACKOFF_LOCK_TOKEN\" >> log; \
         {then}; echo \"end {name} $(date +%s%N)\" >> log"
    )
}

/// Waits for the run `child` to end, which must succeed.
fn succeeds(child: Child) {
    let out = output_within(child);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
}

/// One attempt in the log: its name, start and end (in nanoseconds), and
/// its fencing token.
#[derive(Debug)]
struct Span {
    name: String,
    start: u128,
    end: u128,
    token: Option<u64>,
}

/// The attempts the log in `dir` holds, each started and ended.
fn spans(dir: &TempDir) -> Vec<Span> {
    let lines = dir.lines("log");
    let mut spans: Vec<Span> = Vec::new();
    for line in &lines {
        let words: Vec<&str> = line.split(' ').collect();
        match words[..] {
            ["start", name, at, ref token @ ..] => spans.push(Span {
                name: name.to_owned(),
                start: at.parse().unwrap(),
                end: 0,
                token: token.first().and_then(|t| t.parse().ok()),
            }),
            ["end", name, at] => {
                let span = spans
                    .iter_mut()
                    .find(|s| s.name == name && s.end == 0)
                    .unwrap_or_else(|| panic!("an end without a start: {lines:?}"));
                span.end = at.parse().unwrap();
            }
            _ => panic!("not a line of the log: {line:?}"),
        }
    }
    assert!(spans.iter().all(|s| s.end >= s.start), "{spans:?}");
    spans
}

/// The most attempts that ran at once.
fn most_at_once(spans: &[Span]) -> usize {
    let mut edges: Vec<(u128, i32)> = spans
        .iter()
        .flat_map(|s| [(s.start, 1), (s.end, -1)])
        .collect();
    // An end at the same instant as a start comes first.
    edges.sort_unstable();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, step) in edges {
        now += step;
        most = most.max(now);
    }
    usize::try_from(most).unwrap()
}

/// A run of backoff in `dir`, of "host" `host` (its own state directory),
/// on the lock `job`, with `args` and the attempt `script`.
fn run_of(dir: &TempDir, host: &str, args: &[&str], script: &str) -> Command {
    let store = dir.join(host);
    let mut cmd = command(["--budget-dir", store.to_str().unwrap(), "--lock", "job"]);
    cmd.args(args)
        .args(["--", "sh", "-c", script])
        .current_dir(dir.path());
    cmd
}

/// The holder of `job`, `old`, once its attempt has started; then a run of
/// `--lock-replace`, `new`, from `host`: the old run ends with reason
/// replaced and status 75, the new one starts after it has ended, with a
/// larger fencing token where the store gives one.
fn replaced(dir: &TempDir, args: &[&str], host: &str) {
    let report = dir.join("old.json");
    let mut old_args = args.to_vec();
    old_args.extend(["--report", report.to_str().unwrap()]);
    let mut old = Running::start(run_of(
        dir,
        "host0",
        &old_args,
        &logged("old", "echo holding; sleep 60 & wait"),
    ));
    old.wait_for("holding");
    let mut new_args = args.to_vec();
    new_args.push("--lock-replace");
    let mut new = run_of(dir, host, &new_args, &logged("new", "true"));
    new.stdout(Stdio::piped()).stderr(Stdio::piped());
    succeeds(new.spawn().unwrap());
    let (status, _) = old.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(75), "{:?}", old.seen);
    assert!(
        old.stderr()
            .iter()
            .any(|l| l.contains("was taken over") && l.contains("(replaced)")),
        "{:?}",
        old.seen
    );
    let r = crate::support::report_at(&report);
    assert_eq!(r["reason"], "replaced");
    assert_eq!(r["lock"]["decision"], "replaced");
    let spans = spans(dir);
    let [first, second] = &spans[..] else {
        panic!("{spans:?}")
    };
    assert_eq!((first.name.as_str(), second.name.as_str()), ("old", "new"));
    assert!(
        second.start >= first.end,
        "the new run started before the old one ended: {spans:?}"
    );
    assert!(first.token <= second.token, "{spans:?}");
    if first.token.is_some() {
        assert!(first.token < second.token, "{spans:?}");
    }
}

#[test]
fn a_run_with_lock_replace_ends_the_holder_on_this_host_and_starts_after_it() {
    let dir = TempDir::new("lock-replace-file");
    replaced(&dir, &["--kill-after", "0.5s"], "host0");
    // The request was for the old run: nothing is left of it.
    assert!(!dir.join("host0/job.lock.replace").exists());
}

/// A holder of `job` (with `args`) whose attempt ignores `--signal`, and
/// a run of `--lock-replace` from `host`: the new attempt starts once the
/// old one is gone, killed after `--kill-after`.
fn killed_first(dir: &TempDir, args: &[&str], host: &str) {
    let mut old = Running::start(run_of(
        dir,
        "host0",
        args,
        "trap '' TERM; echo $$ > old; echo holding; while :; do sleep 0.05; done",
    ));
    old.wait_for("holding");
    let asked = Instant::now();
    // The new attempt looks for the old one as it starts.
    let script = "if kill -0 \"$(cat old)\" 2>/dev/null; then echo beside; else echo alone; fi";
    let mut new_args = args.to_vec();
    new_args.push("--lock-replace");
    let mut new = run_of(dir, host, &new_args, script);
    new.stdout(Stdio::piped()).stderr(Stdio::piped());
    let out = output_within(new.spawn().unwrap());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "alone\n");
    // It waited for --kill-after, the old attempt's SIGKILL.
    assert!(asked.elapsed() >= Duration::from_millis(500));
    let (status, _) = old.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(75), "{:?}", old.seen);
}

#[test]
fn a_holder_that_ignores_the_signal_is_killed_before_the_run_that_replaces_it_starts() {
    let dir = TempDir::new("lock-replace-kill");
    killed_first(&dir, &["--kill-after", "0.5s"], "host0");
}

#[test]
fn a_lease_holder_that_ignores_the_signal_is_killed_before_the_run_that_takes_it_over_starts() {
    let redis = Redis::start(None);
    let url = redis.url();
    let dir = TempDir::new("lock-replace-kill-redis");
    killed_first(&dir, &leased(&url), "host1");
}

#[test]
fn a_run_of_another_host_with_lock_replace_takes_the_lease_over_in_redis() {
    let redis = Redis::start(None);
    let url = redis.url();
    let dir = TempDir::new("lock-replace-redis");
    replaced(&dir, &leased(&url), "host1");
}

/// `args` run as the user nobody, by setpriv(1).
fn as_nobody(args: &[&str]) -> Command {
    let mut cmd = Command::new("setpriv");
    cmd.args([
        "--reuid",
        "nobody",
        "--regid",
        "nogroup",
        "--clear-groups",
        "--",
    ])
    .args(args);
    cmd
}

#[test]
fn a_run_with_lock_replace_does_not_end_another_users_holder() {
    let test = "a_run_with_lock_replace_does_not_end_another_users_holder";
    if !is_root() {
        eprintln!("skipped {test}: it needs root, to run the holder as nobody");
        return;
    }
    let dir = TempDir::new("lock-replace-users");
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let (bin, store) = (crate::support::bin(), dir.join("store"));
    let (bin, store) = (bin.to_str().unwrap(), store.to_str().unwrap());
    // A state directory of nobody's, if nobody can reach backoff.
    std::fs::create_dir(store).unwrap();
    let made = as_nobody(&["test", "-x", bin])
        .status()
        .is_ok_and(|s| s.success())
        && Command::new("chown")
            .args(["nobody:nogroup", store])
            .status()
            .is_ok_and(|s| s.success());
    if !made {
        eprintln!("skipped {test}: setpriv cannot run backoff as nobody here");
        return;
    }
    let mut holder = as_nobody(&[bin, "--budget-dir", store, "--lock", "job"]);
    holder.args(["--", "sh", "-c", "echo holding; exec sleep 60"]);
    let mut holder = Running::start(holder);
    holder.wait_for("holding");
    let out = backoff([
        "--budget-dir",
        store,
        "--lock",
        "job",
        "--lock-replace",
        "--",
        "echo",
        "never",
    ])
    .assert()
    .code(75)
    .get_output()
    .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("another user"), "{stderr}");
    assert!(out.stdout.is_empty());
    // The holder runs on, and holds the lock.
    assert!(
        holder.child.try_wait().unwrap().is_none(),
        "{:?}",
        holder.seen
    );
    assert!(!dir.join("store/job.lock.replace").exists());
}

/// Ten runs of `job` with `--lock-limit 2` and `args`, each on "host" `i %
/// hosts`, started together, each an attempt that runs `then`.
fn ten(dir: &TempDir, hosts: usize, args: &[&str], then: &str) -> Vec<Child> {
    (0..10)
        .map(|i| {
            let mut all = vec!["--lock-limit", "2"];
            all.extend(args);
            let mut cmd = run_of(
                dir,
                &format!("host{}", i % hosts),
                &all,
                &logged(&format!("r{i}"), then),
            );
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
            cmd.spawn().unwrap()
        })
        .collect()
}

/// `--lock-limit 2` in the store `args` name, shared by `hosts` "hosts":
/// of ten runs started together, two run and eight skip with --lock-exit;
/// with --lock-wait all ten run, never more than two at once, each with a
/// fencing token of its own where the store gives one.
/// `lock show` (the store named by `place`) names both holders.
fn at_most_two(dir: &TempDir, hosts: usize, args: &[&str], place: &[&str]) {
    // Two hold a slot until every other run has ended.
    let mut runs = ten(
        dir,
        hosts,
        args,
        "while [ ! -e release ]; do sleep 0.01; done",
    );
    // The eight that skip end while the two hold their slots.
    let deadline = Instant::now() + PATIENCE;
    let mut skipped = 0;
    while skipped < 8 {
        assert!(Instant::now() < deadline, "not eight skipped: {skipped}");
        let mut still = Vec::new();
        for mut child in runs {
            if child.try_wait().unwrap().is_none() {
                still.push(child);
                continue;
            }
            let out = child.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(75), "{stderr}");
            assert!(stderr.contains("not running the command"), "{stderr}");
            skipped += 1;
        }
        runs = still;
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(runs.len(), 2);
    let out = backoff(
        ["lock", "show", "job", "--format", "json"]
            .iter()
            .chain(place),
    )
    .assert()
    .success()
    .get_output()
    .clone();
    let v = crate::support::json_of(crate::schema::Doc::LockShow, &out.stdout);
    let slots = v["slots"].as_array().unwrap();
    assert_eq!(slots.len(), 2, "{v}");
    let pids: Vec<u32> = runs.iter().map(Child::id).collect();
    for slot in slots {
        assert_eq!(slot["held"], true, "{v}");
        let pid = u32::try_from(slot["holder"]["pid"].as_u64().unwrap()).unwrap();
        assert!(pids.contains(&pid), "{v}");
    }
    std::fs::write(dir.join("release"), "").unwrap();
    for child in runs {
        succeeds(child);
    }
    assert_eq!(spans(dir).len(), 2);
    std::fs::remove_file(dir.join("log")).unwrap();

    // All ten wait their turn: never more than two at once.
    let mut waiting = args.to_vec();
    waiting.extend(["--lock-wait", "60s"]);
    for child in ten(dir, hosts, &waiting, "sleep 0.1") {
        succeeds(child);
    }
    let spans = spans(dir);
    assert_eq!(spans.len(), 10, "{spans:?}");
    assert!(
        most_at_once(&spans) <= 2,
        "more than two at once: {spans:?}"
    );
    let mut tokens: Vec<u64> = spans.iter().filter_map(|s| s.token).collect();
    tokens.sort_unstable();
    tokens.dedup();
    assert!(tokens.is_empty() || tokens.len() == 10, "{spans:?}");
}

#[test]
fn at_most_two_runs_hold_a_lock_limit_2_in_files() {
    let dir = TempDir::new("lock-limit-file");
    let store = dir.join("host0");
    at_most_two(&dir, 1, &[], &["--budget-dir", store.to_str().unwrap()]);
}

/// `at_most_two` across two "hosts" in the store at `url`, with a lease
/// of a second (the semaphore's first use waits one).
fn at_most_two_in(url: &str, test: &str) {
    let dir = TempDir::new(test);
    let mut args = vec![
        "--budget-store",
        url,
        "--lock-ttl",
        "1s",
        "--kill-after",
        "0.1s",
    ];
    args.extend(LIVE);
    at_most_two(&dir, 2, &args, &["--budget-store", url]);
}

#[test]
fn at_most_two_runs_hold_a_lock_limit_2_in_redis() {
    let redis = Redis::start(None);
    at_most_two_in(&redis.url(), "lock-limit-redis");
}

#[test]
fn at_most_two_runs_hold_a_lock_limit_2_in_a_cluster() {
    let cluster = crate::cluster::Cluster::start();
    at_most_two_in(&cluster.url(), "lock-limit-cluster");
}

#[test]
fn a_lock_limit_of_0_or_beside_lock_replace_or_without_lock_is_refused() {
    for (args, says) in [
        (&["--lock", "job", "--lock-limit", "0"][..], "--lock-limit"),
        (
            &["--lock", "job", "--lock-limit", "1001"][..],
            "at most 1000",
        ),
        (
            &["--lock", "job", "--lock-limit", "2", "--lock-replace"][..],
            "--lock-replace cannot be used with --lock-limit",
        ),
        (&["--lock-limit", "2"][..], "add --lock KEY"),
        (&["--lock-replace"][..], "add --lock KEY"),
    ] {
        let out = backoff(args.iter().chain(&["--", "true"]))
            .assert()
            .code(125)
            .get_output()
            .clone();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}
