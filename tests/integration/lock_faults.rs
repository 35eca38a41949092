//! `--lock` when things fail: never two holders of one key, whatever the
//! state of the store, the disk or the network, and a run that cannot be
//! sure it holds the lock does not run.
//!
//! One harness serves every fault: each run's command writes `enter` and
//! `leave` lines with nanosecond times, its fencing token and its run id
//! into a ledger (`Ledger`), and `Ledger::check` finds that no two runs
//! held the lock at once for longer than a tolerance (the `--kill-after`
//! of the run that lost it), and that the tokens grew in the order the
//! runs entered. The faults are real: a Redis server that is stopped,
//! frozen, flushed or restarted without persistence, a TCP proxy of the
//! test's own between backoff and Redis that stalls or cuts the reply to
//! an acquisition (`Proxy`), a full tmpfs, a lock file removed while runs
//! wait for it.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::{Duration, Instant};

use crate::cluster::Cluster;
use crate::fleet::{Redis, free_port, redis_cli};
use crate::pings::Monitor;
use crate::schema::Doc;
use crate::support::{
    PATIENCE, Running, TempDir, Tmpfs, backoff, command, eventually, json_of, output_for,
    output_within, report_at,
};

/// A ledger of who held the lock when.
struct Ledger {
    dir: TempDir,
}

/// One run's time with the lock, as its command wrote it.
#[derive(Debug, Clone)]
struct Held {
    run: String,
    enter: u128,
    leave: u128,
    token: Option<u64>,
}

impl Ledger {
    fn new(name: &str) -> Ledger {
        Ledger {
            dir: TempDir::new(name),
        }
    }

    /// The command of a run: writes `enter`, holds the lock `hold`
    /// seconds (or, with `None`, until the file `release` appears), then
    /// writes `leave`; told to end (SIGTERM, as a lock lost sends), it
    /// writes `leave` first.
    fn command(&self, hold: Option<f64>) -> Vec<String> {
        let ledger = self.dir.join("ledger");
        let ledger = ledger.to_str().unwrap();
        let release = self.dir.join("release");
        let wait = match hold {
            Some(secs) => format!("sleep {secs} & wait $!"),
            None => format!(
                "while [ ! -e '{}' ]; do sleep 0.02; done",
                release.display()
            ),
        };
        let script = format!(
            "l='{ledger}'\n\
             echo \"enter $(date +%s%N) ${{BACKOFF_LOCK_TOKEN:--}} $BACKOFF_RUN_ID\" >> \"$l\"\n\
             trap 'echo \"leave $(date +%s%N) - $BACKOFF_RUN_ID\" >> \"$l\"; exit 143' TERM\n\
             {wait}\n\
             echo \"leave $(date +%s%N) - $BACKOFF_RUN_ID\" >> \"$l\"\n"
        );
        vec!["sh".into(), "-c".into(), script]
    }

    /// A run on the lock `job` with `args`, whose command holds the lock
    /// until `release`, once it holds it.
    fn holding(&self, args: &[&str]) -> Running {
        let before = self.entered();
        let mut cmd = command(["--lock", "job"]);
        cmd.args(args).arg("--").args(self.command(None));
        let run = Running::start(cmd);
        eventually("the holder holds the lock", || self.entered() > before);
        run
    }

    /// Lets every run that holds until told (`command(None)`) go.
    fn release(&self) {
        std::fs::write(self.dir.join("release"), "").unwrap();
    }

    /// The runs that entered so far.
    fn entered(&self) -> usize {
        self.lines()
            .iter()
            .filter(|l| l.starts_with("enter "))
            .count()
    }

    fn lines(&self) -> Vec<String> {
        self.dir.lines("ledger")
    }

    /// Every run's time with the lock, in the order they entered; checks
    /// that each entered once and left, that no two overlap by more than
    /// `tolerance`, and that the fencing tokens grew in the order of entry.
    fn check(&self, tolerance: Duration) -> Vec<Held> {
        let lines = self.lines();
        let mut runs: HashMap<String, Held> = HashMap::new();
        for line in &lines {
            let words: Vec<&str> = line.split(' ').collect();
            let [what, ns, token, run] = words[..] else {
                panic!("a ledger line out of shape: {line:?}\n{lines:#?}");
            };
            let ns: u128 = ns.parse().unwrap();
            match what {
                "enter" => {
                    let held = Held {
                        run: run.to_owned(),
                        enter: ns,
                        leave: u128::MAX,
                        token: token.parse().ok(),
                    };
                    assert!(
                        runs.insert(run.to_owned(), held).is_none(),
                        "run {run} entered twice\n{lines:#?}"
                    );
                }
                "leave" => {
                    let held = runs
                        .get_mut(run)
                        .unwrap_or_else(|| panic!("run {run} left unentered\n{lines:#?}"));
                    assert_eq!(held.leave, u128::MAX, "run {run} left twice\n{lines:#?}");
                    held.leave = ns;
                }
                _ => panic!("a ledger line out of shape: {line:?}"),
            }
        }
        let mut held: Vec<Held> = runs.into_values().collect();
        held.sort_by_key(|h| h.enter);
        for h in &held {
            assert_ne!(h.leave, u128::MAX, "run {} never left\n{lines:#?}", h.run);
        }
        for (i, a) in held.iter().enumerate() {
            for b in &held[i + 1..] {
                let overlap = a.leave.min(b.leave).saturating_sub(a.enter.max(b.enter));
                assert!(
                    overlap <= tolerance.as_nanos(),
                    "two holders at once for {:?} (tolerance {tolerance:?}): {a:?} and {b:?}\n{lines:#?}",
                    Duration::from_nanos(u64::try_from(overlap).unwrap_or(u64::MAX))
                );
            }
        }
        let tokens: Vec<u64> = held.iter().filter_map(|h| h.token).collect();
        assert!(
            tokens.windows(2).all(|w| w[0] < w[1]),
            "fencing tokens must grow in the order of entry: {tokens:?}\n{lines:#?}"
        );
        held
    }
}

/// What the proxy does with the bytes it carries.
const PASS: u8 = 0;
/// Holds every byte, both ways, until set back to `PASS`: a network that
/// stalls, or a frozen proxy.
const STALL: u8 = 1;
/// Passes the next request that asks for a lock to the server, then cuts
/// the connection instead of passing the server's reply on, and goes
/// back to `PASS`: a reply lost after the lease was granted.
const DROP_ACQUIRE_REPLY: u8 = 2;

/// A TCP proxy of the test's own in front of a server on loopback.
struct Proxy {
    port: u16,
    mode: Arc<AtomicU8>,
    stop: Arc<AtomicBool>,
    /// Replies cut so far.
    cut: Arc<AtomicU8>,
}

impl Proxy {
    fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let mode = Arc::new(AtomicU8::new(PASS));
        let stop = Arc::new(AtomicBool::new(false));
        let cut = Arc::new(AtomicU8::new(0));
        let (m, s, c) = (Arc::clone(&mode), Arc::clone(&stop), Arc::clone(&cut));
        std::thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((client, _)) => {
                        let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                            continue;
                        };
                        connect(&client, &server, &m, &s, &c);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Proxy {
            port,
            mode,
            stop,
            cut,
        }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn set(&self, mode: u8) {
        self.mode.store(mode, Ordering::SeqCst);
    }

    fn cut(&self) -> u8 {
        self.cut.load(Ordering::SeqCst)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// How a request for a lock starts its argument, as Redis' protocol
/// writes it (a bulk string): never so in a script's text.
const ACQUIRE: &[u8] = b"$7\r\nacquire\r\n";

/// Carries the bytes of one connection both ways, as `mode` says.
fn connect(
    client: &TcpStream,
    server: &TcpStream,
    mode: &Arc<AtomicU8>,
    stop: &Arc<AtomicBool>,
    cut: &Arc<AtomicU8>,
) {
    // Set when a request for a lock went by, in `DROP_ACQUIRE_REPLY`.
    let armed = Arc::new(AtomicBool::new(false));
    let both = || [client.try_clone().unwrap(), server.try_clone().unwrap()];
    for asking in [true, false] {
        let [c, s] = both();
        let (from, to) = if asking { (c, s) } else { (s, c) };
        let ends = both();
        let (mode, stop, cut, armed) = (
            Arc::clone(mode),
            Arc::clone(stop),
            Arc::clone(cut),
            Arc::clone(&armed),
        );
        std::thread::spawn(move || {
            let (mut from, mut to) = (from, to);
            from.set_read_timeout(Some(Duration::from_millis(10)))
                .unwrap();
            let mut buf = vec![0u8; 65536];
            while !stop.load(Ordering::SeqCst) {
                if mode.load(Ordering::SeqCst) == STALL {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                }
                let n = match from.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) =>
                    {
                        continue;
                    }
                    Err(_) => break,
                };
                let data = &buf[..n];
                if asking
                    && mode.load(Ordering::SeqCst) == DROP_ACQUIRE_REPLY
                    && data.windows(ACQUIRE.len()).any(|w| w == ACQUIRE)
                {
                    armed.store(true, Ordering::SeqCst);
                }
                if !asking && armed.load(Ordering::SeqCst) {
                    // The reply is not passed on: the connection is cut.
                    mode.store(PASS, Ordering::SeqCst);
                    cut.fetch_add(1, Ordering::SeqCst);
                    break;
                }
                if to.write_all(data).is_err() {
                    break;
                }
            }
            for end in &ends {
                let _ = end.shutdown(Shutdown::Both);
            }
        });
    }
}

/// Every call must reach a store that answers, however loaded the machine.
const LIVE: [&str; 2] = ["--budget-store-timeout", "5s"];

/// A run of the harness on the lock `job` with `args`, its command
/// `ledger.command(hold)`, started with its output captured.
fn run(ledger: &Ledger, args: &[&str], hold: Option<f64>) -> Child {
    let mut cmd = command(["--lock", "job"]);
    cmd.args(args)
        .arg("--")
        .args(ledger.command(hold))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.spawn().unwrap()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Checks that `out` exited with `code`, telling its stderr if not.
fn exited(out: &std::process::Output, code: i32) {
    assert_eq!(out.status.code(), Some(code), "{}", stderr(out));
}

/// Checks that `out`'s stderr says `text`, telling it if not.
fn said(out: &std::process::Output, text: &str) {
    assert!(stderr(out).contains(text), "{}", stderr(out));
}

#[test]
fn a_store_that_is_down_runs_nothing_and_says_so_whatever_the_output_mode() {
    let ledger = Ledger::new("lock-down");
    let url = format!("redis://127.0.0.1:{}", free_port());
    let monitor = Monitor::start("ok");
    let report = ledger.dir.join("report.json");
    let runs: Vec<Child> = (0..4)
        .map(|_| run(&ledger, &["--budget-store", &url], Some(0.2)))
        .collect();
    for child in runs {
        let out = output_within(child);
        exited(&out, 75);
        said(
            &out,
            "not running the command: a run that cannot be sure it holds the lock does not run",
        );
    }
    assert_eq!(ledger.entered(), 0, "{:?}", ledger.lines());
    // The cron recipe: kept output, quiet, a check-in. The line shows,
    // and the monitor hears of the failure and why.
    let out = output_within(run(
        &ledger,
        &[
            "--budget-store",
            &url,
            "--output",
            "on-failure",
            "-q",
            "--ping",
            &monitor.url("job"),
            "--report",
            report.to_str().unwrap(),
        ],
        Some(0.2),
    ));
    assert_eq!(out.status.code(), Some(75));
    let text = stderr(&out);
    assert_eq!(
        text.matches("lock 'job' store redis://127.0.0.1:").count(),
        1,
        "{text}"
    );
    let pings = monitor.requests(1);
    assert_eq!(pings.len(), 1, "no start check-in, one end: {pings:?}");
    assert!(pings[0].starts_with("POST /job/75?rid="), "{pings:?}");
    assert!(
        pings[0].contains("reason lock_unavailable, exit status 75")
            && pings[0].contains("lock 'job' store redis://")
            && pings[0].contains("unavailable (Connection refused"),
        "{pings:?}"
    );
    // Told once, not twice.
    assert_eq!(
        pings[0].matches("Connection refused").count(),
        1,
        "{pings:?}"
    );
    let r = report_at(&report);
    assert_eq!(r["reason"], "lock_unavailable");
    assert_eq!(r["lock"]["decision"], "unavailable");
    assert_eq!(r["lock"]["run"], false);
    assert!(
        r["lock"]["why"]
            .as_str()
            .unwrap()
            .contains("Connection refused")
    );
    // Running without the lock is a choice made explicitly, and said even
    // when the run succeeds and its output is not kept.
    let out = output_within(run(
        &ledger,
        &[
            "--budget-store",
            &url,
            "--lock-fail",
            "open",
            "--output",
            "on-failure",
        ],
        Some(0.01),
    ));
    exited(&out, 0);
    said(
        &out,
        "running the command WITHOUT the lock (--lock-fail open)",
    );
    assert_eq!(ledger.entered(), 1);
    // --budget-store-fail is the budget's: it no longer opens the lock.
    let out = output_within(run(
        &ledger,
        &["--budget-store", &url, "--budget-store-fail", "open"],
        Some(0.01),
    ));
    exited(&out, 75);
}

#[test]
fn a_user_without_a_state_directory_gets_no_lock_and_no_run_but_the_fix() {
    let ledger = Ledger::new("lock-nohome");
    // Without a home, with the state directory the advice names.
    let homeless = |args: &[&str]| {
        let mut cmd = command(["--lock", "job"]);
        cmd.args(args)
            .arg("--")
            .args(ledger.command(Some(0.01)))
            .env_remove("HOME")
            .env_remove("XDG_STATE_HOME")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        output_within(cmd.spawn().unwrap())
    };
    let out = homeless(&[]);
    exited(&out, 75);
    said(
        &out,
        "neither XDG_STATE_HOME nor HOME is set; give --budget-dir DIR",
    );
    assert_eq!(ledger.entered(), 0);
    // Followed, the advice gives the lock.
    let store = ledger.dir.join("state");
    let out = homeless(&["--budget-dir", store.to_str().unwrap()]);
    exited(&out, 0);
    assert_eq!(ledger.entered(), 1);
}

#[test]
fn a_store_that_stalls_while_a_run_waits_is_asked_again_and_never_lets_it_in_beside_the_holder() {
    let redis = Redis::start(None);
    let proxy = Proxy::start(redis.port());
    let ledger = Ledger::new("lock-stall");
    // The holder reaches the store directly; the waiter through the proxy.
    let holder = run(
        &ledger,
        &[
            "--budget-store",
            &redis.url(),
            "--lock-ttl",
            "3s",
            "--kill-after",
            "0.5s",
        ],
        None,
    );
    eventually("the holder holds the lock", || ledger.entered() == 1);
    let mut waiter = Running::start({
        let mut c = command([
            "--lock",
            "job",
            "--budget-store",
            &proxy.url(),
            "--budget-store-timeout",
            "250ms",
            "--lock-wait",
            "60s",
            "-v",
            "--",
        ]);
        c.args(ledger.command(Some(0.05)));
        c
    });
    waiter.wait_for("waiting up to 1m for it");
    // The store stalls for a second: many of the waiter's calls time out.
    proxy.set(STALL);
    std::thread::sleep(Duration::from_secs(1));
    proxy.set(PASS);
    // Still the holder's: the waiter has not entered.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(ledger.entered(), 1, "{:?}", ledger.lines());
    ledger.release();
    let out = output_within(holder);
    exited(&out, 0);
    let (status, _) = waiter.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(0), "{:?}", waiter.stderr());
    let held = ledger.check(Duration::ZERO);
    assert_eq!(held.len(), 2);
    // Without --lock-wait, one stall is one run not made.
    proxy.set(STALL);
    let out = output_within(run(
        &ledger,
        &[
            "--budget-store",
            &proxy.url(),
            "--budget-store-timeout",
            "250ms",
        ],
        Some(0.01),
    ));
    proxy.set(PASS);
    exited(&out, 75);
    said(&out, "timed out after 250ms");
    assert_eq!(ledger.entered(), 2);
}

#[test]
fn a_full_disk_keeps_the_file_lock_and_says_the_record_is_missing() {
    let Some(tmpfs) = Tmpfs::mount("a_full_disk_keeps_the_file_lock", 64) else {
        return;
    };
    let ledger = Ledger::new("lock-full");
    let store = tmpfs.join("state");
    let store = store.to_str().unwrap();
    // The lock file exists, empty (no page of the disk is its yet), then
    // the disk fills.
    let out = output_within(run(&ledger, &["--budget-dir", store], Some(0.01)));
    exited(&out, 0);
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(format!("{store}/job.lock"))
        .unwrap();
    tmpfs.fill("filler");
    let holder = run(&ledger, &["--budget-dir", store], None);
    eventually("the holder holds the lock", || ledger.entered() == 2);
    let others: Vec<Child> = (0..5)
        .map(|_| run(&ledger, &["--budget-dir", store], Some(0.01)))
        .collect();
    for child in others {
        let out = output_within(child);
        exited(&out, 75);
        said(
            &out,
            "lock 'job' is held by another run (its record cannot be read)",
        );
    }
    assert_eq!(ledger.entered(), 2, "{:?}", ledger.lines());
    backoff(["lock", "show", "job", "--budget-dir", store])
        .assert()
        .success()
        .stdout(predicates::str::starts_with(
            "job: held, by a run whose record cannot be read",
        ));
    ledger.release();
    let out = output_within(holder);
    exited(&out, 0);
    let text = stderr(&out);
    assert_eq!(
        text.matches("cannot write this run's record into the lock file")
            .count(),
        1,
        "{text}"
    );
    assert!(text.contains("no space left on device"), "{text}");
    ledger.check(Duration::ZERO);
}

#[test]
fn a_lock_file_removed_while_runs_wait_does_not_split_the_lock() {
    let ledger = Ledger::new("lock-removed");
    let store = ledger.dir.join("state");
    let store = store.to_str().unwrap();
    let wait = [
        "--budget-dir",
        store,
        "--lock-wait",
        "60s",
        "--kill-after",
        "1s",
    ];
    let mut holder = ledger.holding(&["--budget-dir", store, "--kill-after", "1s"]);
    // Six runs wait in the kernel's queue of the file...
    let queued: Vec<Child> = (0..6).map(|_| run(&ledger, &wait, Some(0.05))).collect();
    std::thread::sleep(Duration::from_millis(300));
    // ...which a cleaner removes; five more runs come after it.
    std::fs::remove_file(format!("{store}/job.lock")).unwrap();
    let later: Vec<Child> = (0..5).map(|_| run(&ledger, &wait, Some(0.05))).collect();
    // The holder sees its file gone, ends its attempt and gives up.
    holder.wait_for("lock 'job' was lost: its file");
    let (status, _) = holder.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(75));
    for child in queued.into_iter().chain(later) {
        let out = output_within(child);
        exited(&out, 0);
    }
    let held = ledger.check(Duration::from_secs(1));
    assert_eq!(held.len(), 12, "{:?}", ledger.lines());
}

#[test]
fn a_file_lock_reset_with_force_ends_its_holder_before_the_next_run_starts() {
    let ledger = Ledger::new("lock-force");
    let store = ledger.dir.join("state");
    let store = store.to_str().unwrap();
    let report = ledger.dir.join("report.json");
    let mut holder = ledger.holding(&[
        "--budget-dir",
        store,
        "--kill-after",
        "1s",
        "--report",
        report.to_str().unwrap(),
        "--on-give-up",
        "sleep 0.3; echo \"gave up: $BACKOFF_REASON\"",
    ]);
    backoff(["lock", "reset", "job", "--force", "--budget-dir", store])
        .assert()
        .success()
        .stderr(predicates::str::contains(
            "the holder ends its attempt and gives up (lock_lost) once it sees it gone",
        ));
    let next = run(
        &ledger,
        &["--budget-dir", store, "--lock-wait", "30s"],
        Some(0.05),
    );
    holder.wait_for("gave up: lock_lost");
    let (status, _) = holder.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(75));
    let out = output_within(next);
    exited(&out, 0);
    ledger.check(Duration::from_secs(1));
    // The hook ran to its end, and the report says so.
    let r = report_at(&report);
    assert_eq!(r["reason"], "lock_lost");
    assert_eq!(r["lock"]["decision"], "lost");
    // Removed, or already replaced by the next run's file.
    let why = r["lock"]["why"].as_str().unwrap();
    assert!(
        why.contains("(backoff lock reset --force, or a cleaner of the directory)"),
        "{why}"
    );
    assert!(
        why.contains("was removed") || why.contains("was replaced"),
        "{why}"
    );
    let hooks = r["hooks"].as_array().unwrap();
    assert_eq!(hooks.len(), 1, "{hooks:?}");
    assert_eq!(hooks[0]["outcome"]["kind"], "exit", "{hooks:?}");
}

#[test]
fn a_look_at_the_lock_never_keeps_a_run_out() {
    let dir = TempDir::new("lock-look");
    let store = dir.join("state");
    let store = store.to_str().unwrap();
    backoff(["--lock", "job", "--budget-dir", store, "--", "true"])
        .assert()
        .success();
    // A look that holds a shared lock of the file for a while (as one does
    // where the kernel has no table of locks to read, paused by a loaded
    // machine): a run that tries the lock then waits it out.
    let file = std::fs::File::open(format!("{store}/job.lock")).unwrap();
    file.lock_shared().unwrap();
    let started = Instant::now();
    let child = command(["--lock", "job", "--budget-dir", store, "--", "echo", "ran"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    file.unlock().unwrap();
    let out = output_within(child);
    exited(&out, 0);
    assert_eq!(out.stdout, b"ran\n");
    assert!(started.elapsed() >= Duration::from_millis(300));
    // Looks and runs at once, many times: every run gets the lock.
    let stop = Arc::new(AtomicBool::new(false));
    let looking = {
        let (stop, store) = (Arc::clone(&stop), store.to_owned());
        std::thread::spawn(move || {
            let mut looks = 0;
            while !stop.load(Ordering::SeqCst) {
                backoff(["lock", "show", "job", "--budget-dir", &store])
                    .assert()
                    .success();
                looks += 1;
            }
            looks
        })
    };
    for _ in 0..40 {
        backoff(["--lock", "job", "--budget-dir", store, "--", "true"])
            .assert()
            .success();
    }
    stop.store(true, Ordering::SeqCst);
    assert!(looking.join().unwrap() > 0);
}

#[test]
fn a_lease_granted_to_a_request_whose_reply_was_lost_is_given_back() {
    let redis = Redis::start(None);
    let proxy = Proxy::start(redis.port());
    let ledger = Ledger::new("lock-lost-reply");
    // A lock the store knows: no run waits a term first.
    redis_cli(&redis, &["hset", "backoff:lock:job", "fence", "41"]);
    // The server knows the lock's script (a look loads it), so that the
    // request whose reply is cut is the one that grants the lease.
    backoff(["lock", "show", "job", "--budget-store", &proxy.url()])
        .args(LIVE)
        .assert()
        .success();
    proxy.set(DROP_ACQUIRE_REPLY);
    let out = output_within(run(
        &ledger,
        &[
            "--budget-store",
            &proxy.url(),
            "--budget-store-timeout",
            "1s",
        ],
        Some(0.01),
    ));
    assert_eq!(proxy.cut(), 1);
    exited(&out, 75);
    assert_eq!(ledger.entered(), 0);
    // The lease it was granted was given back: the lock is free, and the
    // next run takes it at once.
    backoff(["lock", "show", "job", "--budget-store", &redis.url()])
        .args(LIVE)
        .assert()
        .success()
        .stdout(predicates::str::starts_with("job: free"));
    let out = output_within(run(&ledger, &["--budget-store", &redis.url()], Some(0.01)));
    exited(&out, 0);
    // Within --lock-wait, the same request is made again, and the lease
    // granted unheard of is this run's.
    proxy.set(DROP_ACQUIRE_REPLY);
    let out = output_within(run(
        &ledger,
        &[
            "--budget-store",
            &proxy.url(),
            "--budget-store-timeout",
            "1s",
            "--lock-wait",
            "20s",
        ],
        Some(0.01),
    ));
    assert_eq!(proxy.cut(), 2);
    exited(&out, 0);
    ledger.check(Duration::ZERO);
    assert_eq!(ledger.entered(), 2);
}

/// A holder that reaches the store through `proxy`, on a lease of `ttl`
/// with `--kill-after 0.5s`; three waiters on the store directly; the
/// proxy frozen once the holder holds: a waiter enters only once the
/// holder has left.
fn cut_off_holder(ttl: &str) {
    let redis = Redis::start(None);
    let proxy = Proxy::start(redis.port());
    let ledger = Ledger::new("lock-cut-off");
    let report = ledger.dir.join("report.json");
    // A lock the store knows: its first holder does not wait a term first.
    redis_cli(&redis, &["hset", "backoff:lock:job", "fence", "41"]);
    let mut holder = Running::start({
        let mut c = command([
            "--lock",
            "job",
            "--budget-store",
            &proxy.url(),
            "--lock-ttl",
            ttl,
            "--kill-after",
            "0.5s",
            "--report",
            report.to_str().unwrap(),
            "-v",
        ]);
        c.args(LIVE).arg("--").args(ledger.command(None));
        c
    });
    holder.wait_for("running sh");
    eventually("the holder holds the lock", || ledger.entered() == 1);
    let waiters: Vec<Child> = (0..3)
        .map(|_| {
            run(
                &ledger,
                &["--budget-store", &redis.url(), "--lock-wait", "2m"],
                Some(0.05),
            )
        })
        .collect();
    proxy.set(STALL);
    // A term, and time to spare on a loaded machine.
    let lost = holder.wait_for_within("lock 'job' was lost: ", PATIENCE + Duration::from_secs(30));
    let (status, _) = holder.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(75));
    for waiter in waiters {
        let out = output_for(waiter, Duration::from_secs(90));
        exited(&out, 0);
    }
    let held = ledger.check(Duration::ZERO);
    assert_eq!(held.len(), 4);
    assert!(
        lost.contains("it could not be renewed: the store did not answer for"),
        "{lost}"
    );
    let r = report_at(&report);
    assert_eq!(r["lock"]["decision"], "lost");
    assert_eq!(r["lock"]["token"], held[0].token.unwrap());
}

#[test]
fn a_holder_cut_off_from_the_store_is_gone_before_another_run_takes_the_lease() {
    cut_off_holder("2s");
}

#[test]
fn a_holder_cut_off_on_the_default_lease_is_gone_before_another_run_takes_it() {
    cut_off_holder("30s");
}

#[test]
fn a_store_that_loses_its_data_hands_out_larger_tokens_and_no_one_runs_beside_the_holder() {
    let mut redis = Redis::start(None);
    let port = redis.port();
    let ledger = Ledger::new("lock-data-loss");
    let args = [
        "--budget-store",
        &redis.url(),
        "--lock-ttl",
        "2s",
        "--kill-after",
        "0.5s",
        "--lock-wait",
        "1m",
        "--budget-store-timeout",
        "5s",
    ];
    for fault in ["flushall", "restart"] {
        let holder = run(&ledger, &args, None);
        let before = ledger.entered();
        eventually("the holder holds the lock", || {
            ledger.entered() == before + 1
        });
        let waiter = run(&ledger, &args, Some(0.05));
        std::thread::sleep(Duration::from_millis(200));
        if fault == "flushall" {
            redis_cli(&redis, &["flushall"]);
        } else {
            // A restart without persistence: everything is lost.
            drop(redis);
            redis = Redis::start_on(port, None, false);
        }
        // The waiter takes the lock the store forgot only once the holder
        // has seen the loss (its next renewal) and ended.
        let out = output_within(holder);
        exited(&out, 75);
        // Told by its next renewal, or by the run that took the lock
        // the store forgot.
        said(&out, "lock 'job' was lost: ");
        let out = output_within(waiter);
        exited(&out, 0);
        said(&out, "the store had no trace of it");
    }
    let held = ledger.check(Duration::ZERO);
    assert_eq!(held.len(), 4);
}

#[test]
fn a_fencing_token_out_of_bounds_is_corrupt_shown_so_and_repaired_by_reset() {
    let redis = Redis::start(None);
    let url = redis.url();
    redis_cli(
        &redis,
        &["hset", "backoff:lock:job", "fence", "9223372036854775807"],
    );
    let out = backoff(["--lock", "job", "--budget-store", &url])
        .args(LIVE)
        .args(["--", "echo", "ran"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(75));
    assert!(out.stdout.is_empty());
    said(
        &out,
        "the lock key has a fencing token out of bounds; backoff lock reset repairs it",
    );
    let shown = backoff([
        "lock",
        "show",
        "job",
        "--budget-store",
        &url,
        "--format",
        "json",
    ])
    .args(LIVE)
    .assert()
    .success()
    .get_output()
    .stdout
    .clone();
    let v = json_of(Doc::LockShow, &shown);
    assert_eq!(v["held"], false);
    assert_eq!(v["corrupt"], "has a fencing token out of bounds");
    backoff(["lock", "reset", "job", "--budget-store", &url])
        .args(LIVE)
        .assert()
        .success()
        .stderr(predicates::str::contains(
            "lock 'job' was corrupt (the lock key has a fencing token out of bounds): it is removed",
        ));
    // A key that is not a hash: the same.
    redis_cli(&redis, &["set", "backoff:lock:other", "junk"]);
    backoff(["lock", "reset", "other", "--budget-store", &url])
        .args(LIVE)
        .assert()
        .success()
        .stderr(predicates::str::contains(
            "lock 'other' was corrupt (the lock key holds a string, not a hash)",
        ));
    let out = backoff([
        "--lock",
        "job",
        "--lock-ttl",
        "1s",
        "--kill-after",
        "0.1s",
        "--budget-store",
        &url,
    ])
    .args(LIVE)
    .args(["--", "sh", "-c", "echo $BACKOFF_LOCK_TOKEN"])
    .output()
    .unwrap();
    exited(&out, 0);
    let token: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    // The store's clock in microseconds: above any token it handed out.
    assert!(token > 1_700_000_000_000_000, "{token}");
}

#[test]
fn a_cluster_that_loses_its_data_hands_out_larger_tokens_and_no_one_runs_beside_the_holder() {
    let cluster = Cluster::start();
    let url = cluster.url();
    let ledger = Ledger::new("lock-cluster-loss");
    let args = [
        "--budget-store",
        &url,
        "--lock-ttl",
        "2s",
        "--kill-after",
        "0.5s",
        "--lock-wait",
        "1m",
        "--budget-store-timeout",
        "5s",
    ];
    let holder = run(&ledger, &args, None);
    eventually("the holder holds the lock", || ledger.entered() == 1);
    let waiters: Vec<Child> = (0..2).map(|_| run(&ledger, &args, Some(0.05))).collect();
    std::thread::sleep(Duration::from_millis(200));
    cluster.flush_all();
    let out = output_within(holder);
    exited(&out, 75);
    for waiter in waiters {
        let out = output_within(waiter);
        exited(&out, 0);
    }
    let held = ledger.check(Duration::ZERO);
    assert_eq!(held.len(), 3);
}

#[test]
fn a_protection_that_is_off_is_said_past_the_kept_output_and_with_q() {
    // A retry budget whose store is down: the run retries under its local
    // policy, succeeds, and prints nothing of its own, but that line.
    let url = format!("redis://127.0.0.1:{}", free_port());
    let out = backoff([
        "--budget",
        "api",
        "--budget-store",
        &url,
        "--output",
        "on-failure",
        "-q",
        "--base",
        "1ms",
        "--",
        "sh",
        "-c",
        "echo out; [ -e done ] || { touch done; exit 1; }",
    ])
    .current_dir(TempDir::new("lock-said").path())
    .output()
    .unwrap();
    exited(&out, 0);
    assert!(out.stdout.is_empty());
    let text = stderr(&out);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(
        text.contains("retry budget store redis://127.0.0.1:")
            && text.contains("; retrying under the local policy"),
        "{text}"
    );
}

#[test]
fn a_run_that_ends_during_its_wait_after_a_loss_of_data_leaves_the_rest_of_it_to_the_next() {
    let redis = Redis::start(None);
    let ledger = Ledger::new("lock-settle-kept");
    let args = [
        "--budget-store",
        &redis.url(),
        "--lock-ttl",
        "3s",
        "--kill-after",
        "0.5s",
        "--budget-store-timeout",
        "5s",
    ];
    redis_cli(&redis, &["hset", "backoff:lock:job", "fence", "41"]);
    let holder = run(&ledger, &args, None);
    eventually("the holder holds the lock", || ledger.entered() == 1);
    redis_cli(&redis, &["flushall"]);
    // A run takes the lock the store forgot, and is told to wait a term;
    // a signal ends it during that wait.
    let mut first = Running::start({
        let mut c = command(["--lock", "job"]);
        c.args(args).arg("--").args(ledger.command(Some(0.05)));
        c
    });
    first.wait_for("the store had no trace of it");
    first.signal(libc::SIGINT);
    first.dies_by_within_a_second(libc::SIGINT);
    // The next run waits the rest of that term: by then the holder the
    // store forgot has seen the loss and ended.
    let next = run(
        &ledger,
        &[&args[..], &["--lock-wait", "30s"]].concat(),
        Some(0.05),
    );
    let out = output_within(holder);
    exited(&out, 75);
    let out = output_within(next);
    exited(&out, 0);
    said(&out, "its last holder may still run");
    let held = ledger.check(Duration::ZERO);
    assert_eq!(held.len(), 2);
}

#[test]
fn a_lease_reset_with_force_is_taken_again_only_once_its_holder_has_ended() {
    let redis = Redis::start(None);
    let url = redis.url();
    let ledger = Ledger::new("lock-lease-force");
    redis_cli(&redis, &["hset", "backoff:lock:job", "fence", "41"]);
    let args = [
        "--budget-store",
        &url,
        "--lock-ttl",
        "3s",
        "--kill-after",
        "0.5s",
        "--budget-store-timeout",
        "5s",
    ];
    let holder = run(&ledger, &args, None);
    eventually("the holder holds the lock", || ledger.entered() == 1);
    backoff(["lock", "reset", "job", "--force", "--budget-store", &url])
        .args(LIVE)
        .assert()
        .success();
    let next = run(
        &ledger,
        &[&args[..], &["--lock-wait", "30s"]].concat(),
        Some(0.05),
    );
    let out = output_within(holder);
    exited(&out, 75);
    // Told by its next renewal: removed, or already taken by the run
    // that waits out the lease removed.
    said(&out, "was removed (backoff lock reset --force)");
    let out = output_within(next);
    exited(&out, 0);
    ledger.check(Duration::ZERO);
}

#[test]
fn a_hook_that_runs_under_a_lock_that_is_lost_is_ended_with_the_run() {
    let ledger = Ledger::new("lock-hook");
    let store = ledger.dir.join("state");
    let store = store.to_str().unwrap();
    // The hook holds the lock's work: it writes to the ledger as a
    // command would.
    let hook = ledger.command(None)[2].clone();
    let mut holder = Running::start(command([
        "--lock",
        "job",
        "--budget-dir",
        store,
        "--kill-after",
        "1s",
        "--on-start",
        &hook,
        "--",
        "true",
    ]));
    eventually("the hook holds the lock", || ledger.entered() == 1);
    std::fs::remove_file(format!("{store}/job.lock")).unwrap();
    let next = run(
        &ledger,
        &["--budget-dir", store, "--lock-wait", "30s"],
        Some(0.05),
    );
    holder.wait_for("--on-start hook was ended after");
    holder.wait_for("giving up after 0 attempts in");
    let (status, _) = holder.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(75));
    assert!(
        holder
            .stderr()
            .iter()
            .any(|l| l.ends_with(": the lock was lost")),
        "{:?}",
        holder.stderr()
    );
    let out = output_within(next);
    exited(&out, 0);
    ledger.check(Duration::from_secs(1));
}

#[test]
fn a_frozen_store_holds_the_run_no_longer_than_max_time_nor_past_a_signal() {
    let redis = Redis::start(None);
    let url = redis.url();
    redis_cli(&redis, &["hset", "backoff:lock:job", "fence", "41"]);
    // Asking a store that answers nothing ends by --max-time, not by a
    // longer --budget-store-timeout.
    let mut cmd = command([
        "--lock",
        "job",
        "--budget-store",
        &url,
        "--budget-store-timeout",
        "30s",
        "--max-time",
        "1s",
        "--",
        "echo",
        "ran",
    ]);
    redis.freeze();
    let started = Instant::now();
    let out = output_for(
        cmd.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
        Duration::from_secs(15),
    );
    exited(&out, 75);
    assert!(out.stdout.is_empty());
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    redis.thaw();
    // Letting go of the lock at the end, when the store stops answering,
    // is cut short by a signal: backoff dies by it.
    let ledger = Ledger::new("lock-release-cut");
    let mut holder = Running::start({
        let mut c = command([
            "--lock",
            "job",
            "--budget-store",
            &url,
            "--budget-store-timeout",
            "30s",
            "-v",
            "--",
        ]);
        c.args(ledger.command(None));
        c
    });
    eventually("the run holds the lock", || ledger.entered() == 1);
    redis.freeze();
    ledger.release();
    holder.wait_for("attempt 1/7 succeeded");
    holder.signal(libc::SIGTERM);
    holder.dies_by_within_a_second(libc::SIGTERM);
    redis.thaw();
    // Letting go that --max-time and --kill-after cut short is said: the
    // lease keeps other runs out until it runs out.
    let ledger = Ledger::new("lock-release-late");
    let mut holder = Running::start({
        let mut c = command([
            "--lock",
            "job",
            "--budget-store",
            &url,
            "--budget-store-timeout",
            "30s",
            "--max-time",
            "3s",
            "--kill-after",
            "0.5s",
            "--",
        ]);
        c.args(ledger.command(None));
        c
    });
    eventually("the run holds the lock", || ledger.entered() == 1);
    redis.freeze();
    ledger.release();
    holder.wait_for("this run could not let go of it");
    let (status, _) = holder.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(0));
    redis.thaw();
}

#[test]
fn a_lock_file_replaced_makes_the_run_that_takes_it_wait_for_the_old_holder() {
    let ledger = Ledger::new("lock-replaced");
    let store = ledger.dir.join("state");
    let store = store.to_str().unwrap();
    let mut holder = ledger.holding(&["--budget-dir", store, "--kill-after", "1s"]);
    // Another file put in the lock file's place (as a restore, or a tool
    // that writes files by renaming, would).
    let new = format!("{store}/job.new");
    std::fs::write(&new, "").unwrap();
    std::fs::set_permissions(&new, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    std::fs::rename(&new, format!("{store}/job.lock")).unwrap();
    // The next run did not make the file, but no run has used it: it
    // waits for a holder of the file it replaced to see it and end.
    let out = output_within(run(&ledger, &["--budget-dir", store, "-v"], Some(0.05)));
    exited(&out, 0);
    said(&out, "its file is new: waiting 400ms");
    holder.wait_for("lock 'job' was lost: its file");
    let (status, _) = holder.wait_exit(PATIENCE);
    assert_eq!(status.code(), Some(75));
    ledger.check(Duration::from_secs(1));
    // A file that runs have used is no new file: the next run waits for
    // nothing.
    let out = output_within(run(&ledger, &["--budget-dir", store, "-v"], Some(0.01)));
    exited(&out, 0);
    assert!(!stderr(&out).contains("waiting"), "{}", stderr(&out));
}
