//! `--once-per PERIOD`: at most one successful run of a job per period,
//! across "hosts" (separate state directories, distinct `--seed`s) that
//! share a store: state files on one host (decided by its clock, which
//! `faketime` moves), a real Redis and a 3-node Redis Cluster (decided by
//! the server's clock). A skip is silent and exits 0; a failure records
//! nothing; what cannot be believed is said once and the job runs; the
//! real cron daemon fires two hosts' entries and the job runs once.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::cluster::Cluster;
use crate::fleet::{Redis, redis_cli};
use crate::schema::Doc;
use crate::support::{
    Running, TempDir, backoff, command, events, json_of, make_fifo, output_within, report_at,
};

/// Every call must reach the store, however loaded the machine; a lease
/// short enough that the first use of a lock (which waits a term) is short.
const FLEET: [&str; 6] = [
    "--budget-store-timeout",
    "10s",
    "--lock-ttl",
    "1s",
    "--kill-after",
    "0.1s",
];

/// The options of host `host` (its state directory in `dir`), on `store`
/// (a Redis URL, or none: the host's own files) for the job `job`.
fn host_args(dir: &TempDir, store: Option<&str>, host: usize, period: &str) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "--budget-dir".into(),
        dir.join(&format!("host{host}")).display().to_string(),
        "--seed".into(),
        (1000 + host).to_string(),
        "--once-per".into(),
        period.into(),
        "--lock".into(),
        "job".into(),
        "--report".into(),
        dir.join(&format!("report{host}.json"))
            .display()
            .to_string(),
    ];
    if let Some(url) = store {
        args.push("--budget-store".into());
        args.push(url.into());
        args.extend(FLEET.map(String::from));
    }
    args
}

/// Host `host`'s run of a job that logs `ran` and ends as `script` does.
fn job(dir: &TempDir, store: Option<&str>, host: usize, extra: &[&str], script: &str) -> Child {
    let mut cmd = command(host_args(dir, store, host, "day"));
    cmd.args(extra)
        .args(["--", "sh", "-c"])
        .arg(format!("echo ran{host} >> log; {script}"))
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.spawn().unwrap()
}

/// Five hosts at once, each `--once-per day --splay 2s` on a job of 0.3 s:
/// exactly one runs it, the others skip (done, or running elsewhere),
/// silently, with 0.
fn five_hosts_run_the_job_once(store: &str) {
    let dir = TempDir::new("once-five");
    let runs: Vec<Child> = (0..5)
        .map(|h| job(&dir, Some(store), h, &["--splay", "2s"], "sleep 0.3"))
        .collect();
    for child in runs {
        let out = output_within(child);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        // Silent without -v: the first use of the lock says its wait.
        assert!(
            err.lines()
                .all(|l| l.contains("the store had no trace of it")),
            "{err}"
        );
    }
    assert_eq!(dir.lines("log").len(), 1, "{:?}", dir.lines("log"));
    let reasons: Vec<String> = (0..5)
        .map(|h| {
            report_at(&dir.join(&format!("report{h}.json")))["reason"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        reasons.iter().filter(|r| *r == "success").count(),
        1,
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .all(|r| ["success", "done", "running"].contains(&r.as_str())),
        "{reasons:?}"
    );
}

#[test]
fn five_hosts_on_one_redis_started_together_run_a_daily_job_once() {
    five_hosts_run_the_job_once(&Redis::start(None).url());
}

#[test]
fn five_hosts_on_a_redis_cluster_started_together_run_a_daily_job_once() {
    let cluster = Cluster::start();
    five_hosts_run_the_job_once(&cluster.url());
}

/// `backoff once WHAT job --format json` on the store at `url`, checked
/// against the schema of `doc`.
fn once_json(what: &str, url: &str, doc: Doc) -> serde_json::Value {
    let out = backoff([
        "once",
        what,
        "job",
        "--budget-store",
        url,
        "--format",
        "json",
    ])
    .output()
    .unwrap();
    json_of(doc, &out.stdout)
}

#[test]
fn a_failed_run_records_nothing_and_the_next_hosts_run_does_the_job() {
    let redis = Redis::start(None);
    let dir = TempDir::new("once-failover");
    let url = redis.url();
    let first = output_within(job(&dir, Some(&url), 0, &["--attempts", "1"], "exit 3"));
    assert_eq!(first.status.code(), Some(3));
    assert_eq!(
        redis_cli(&redis, &["exists", "backoff:once:job"]).trim(),
        "0"
    );
    let second = output_within(job(&dir, Some(&url), 1, &[], "true"));
    assert!(second.status.success());
    let third = output_within(job(&dir, Some(&url), 2, &["-v"], "true"));
    assert!(third.status.success());
    assert!(
        String::from_utf8_lossy(&third.stderr).contains("is done: not running the command"),
        "{}",
        String::from_utf8_lossy(&third.stderr)
    );
    assert_eq!(dir.lines("log"), ["ran0", "ran1"]);
    let record = redis_cli(&redis, &["get", "backoff:once:job"]);
    assert!(record.starts_with("backoff-once v1 at "), "{record}");
    assert!(record.contains(" period day:"), "{record}");
    // once show tells it, decided by the server's clock; reset clears it.
    let v = once_json("show", &url, Doc::OnceShow);
    assert_eq!(v["done"], true, "{v}");
    assert_eq!(v["last"]["period"], v["period"], "{v}");
    let reset = once_json("reset", &url, Doc::OnceReset);
    assert_eq!(reset["found"], "record");
    let again = output_within(job(&dir, Some(&url), 3, &[], "true"));
    assert!(again.status.success());
    assert_eq!(dir.lines("log"), ["ran0", "ran1", "ran3"]);
}

#[test]
fn a_skip_is_silent_exits_0_and_is_told_by_events_the_report_and_the_metrics() {
    let dir = TempDir::new("once-skip");
    let metrics = dir.join("metrics.prom");
    let m = metrics.to_str().unwrap();
    // A monitor that refuses connections: a check-in tried would be said.
    let ping = ["--ping", "http://127.0.0.1:9/check"];
    let first = output_within(job(&dir, None, 0, &["--metrics-file", m], "true"));
    assert!(first.status.success());
    let second = output_within(job(&dir, None, 0, &ping, "true"));
    assert!(second.status.success());
    assert_eq!(String::from_utf8_lossy(&second.stderr), "");
    assert_eq!(report_at(&dir.join("report0.json"))["reason"], "done");
    let json = output_within(job(
        &dir,
        None,
        0,
        &["--log-format", "json", "--metrics-file", m],
        "true",
    ));
    assert!(json.status.success());
    let once: Vec<_> = events(&json.stderr)
        .into_iter()
        .filter(|e| e["event"] == "once")
        .collect();
    assert_eq!(once.len(), 1, "{once:?}");
    assert_eq!(once[0]["decision"], "done");
    assert!(once[0]["last"]["host"].is_string(), "{once:?}");
    let text = std::fs::read_to_string(&metrics).unwrap();
    assert!(
        text.contains("backoff_once_skipped_total{name=\"sh\",reason=\"done\"} 1"),
        "{text}"
    );
    assert_eq!(dir.lines("log"), ["ran0"]);
    let show = backoff(["once", "show", "job", "--budget-dir"])
        .arg(dir.join("host0"))
        .output()
        .unwrap();
    let line = String::from_utf8_lossy(&show.stdout);
    assert!(line.contains("is done: a run now skips"), "{line}");
}

#[test]
fn a_job_running_elsewhere_is_skipped_as_running_or_waited_for_with_lock_wait() {
    let dir = TempDir::new("once-running");
    let mut holder = Running::start({
        let mut cmd = command(host_args(&dir, None, 0, "day"));
        cmd.args(["--", "sh", "-c"])
            .arg("echo ran0 >> log; echo started; while [ ! -e go ]; do sleep 0.05; done")
            .current_dir(dir.path());
        cmd
    });
    holder.wait_for("started");
    // The same host's next tick (the same state directory): the lock is
    // held, the job runs there.
    let skipped = output_within(job(&dir, None, 0, &[], "true"));
    assert!(skipped.status.success());
    assert_eq!(String::from_utf8_lossy(&skipped.stderr), "");
    assert_eq!(report_at(&dir.join("report0.json"))["reason"], "running");
    let told = output_within(job(&dir, None, 0, &["--lock-exit", "75", "-v"], "true"));
    assert_eq!(told.status.code(), Some(75));
    assert!(
        String::from_utf8_lossy(&told.stderr).contains("the job is running in another run"),
        "{}",
        String::from_utf8_lossy(&told.stderr)
    );
    // With --lock-wait, the run waits, then decides from the record.
    let waiting = job(&dir, None, 0, &["--lock-wait", "30s", "-v"], "true");
    std::fs::write(dir.join("go"), "").unwrap();
    holder.wait_exit(crate::support::PATIENCE);
    let waited = output_within(waiting);
    assert!(waited.status.success());
    assert!(
        String::from_utf8_lossy(&waited.stderr).contains("is done: not running the command"),
        "{}",
        String::from_utf8_lossy(&waited.stderr)
    );
    assert_eq!(dir.lines("log"), ["ran0"]);
}

/// What a run on `store` says (with `-q`) and does when the record is
/// replaced by something no record is: one line that no output mode hides,
/// and the job runs; its success replaces the record.
fn not_believed(dir: &TempDir, store: Option<&str>, host: usize, said: &str) {
    let out = output_within(job(dir, store, host, &["-q"], "true"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("not believed")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains(said), "{err}");
    assert_eq!(dir.lines("log").last().unwrap(), &format!("ran{host}"));
}

#[test]
fn a_hostile_record_file_is_said_once_and_the_job_runs() {
    let dir = TempDir::new("once-hostile-file");
    let record = dir.join("host0").join("job.once");
    let first = output_within(job(&dir, None, 0, &[], "true"));
    assert!(first.status.success());
    // A symbolic link to another file is never followed, nor written
    // through.
    let target = dir.join("target");
    std::fs::write(&target, "keep").unwrap();
    std::fs::remove_file(&record).unwrap();
    std::os::unix::fs::symlink(&target, &record).unwrap();
    not_believed(&dir, None, 0, "is a symbolic link");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    // A FIFO is never waited on.
    std::fs::remove_file(&record).unwrap();
    make_fifo(&record);
    not_believed(&dir, None, 0, "is not a regular file");
    // A megabyte of garbage is read no further than a record.
    std::fs::write(&record, vec![b'x'; 1 << 20]).unwrap();
    not_believed(&dir, None, 0, "holds more than 512 bytes");
    // A record from the far future.
    let good = std::fs::read_to_string(&record).unwrap();
    let at: u64 = good.split(' ').nth(3).unwrap().parse().unwrap();
    let future = good.replace(&format!("at {at} "), "at 4102444800000 ");
    let done = future.split(' ').nth(5).unwrap().to_owned();
    std::fs::write(
        &record,
        future.replace(&format!("done {done} "), "done 4102444800000 "),
    )
    .unwrap();
    not_believed(&dir, None, 0, "ahead of the deciding clock");
    // Its success replaced whatever was there.
    let show = backoff(["once", "show", "job", "--format", "json", "--budget-dir"])
        .arg(dir.join("host0"))
        .output()
        .unwrap();
    assert_eq!(json_of(Doc::OnceShow, &show.stdout)["done"], true);
}

#[test]
fn a_hostile_redis_key_is_said_once_and_the_job_runs() {
    let redis = Redis::start(None);
    let url = redis.url();
    let dir = TempDir::new("once-hostile-redis");
    redis_cli(&redis, &["rpush", "backoff:once:job", "a"]);
    not_believed(&dir, Some(&url), 0, "is a list, not a string");
    let garbage = "\u{1b}[2J".repeat(8);
    redis_cli(&redis, &["set", "backoff:once:job", &garbage]);
    not_believed(&dir, Some(&url), 1, "holds bytes that no record has");
    redis_cli(
        &redis,
        &["setrange", "backoff:once:job", &(1 << 20).to_string(), "x"],
    );
    not_believed(&dir, Some(&url), 2, "more than 512");
    let record = redis_cli(&redis, &["get", "backoff:once:job"]);
    assert!(record.starts_with("backoff-once v1 "), "{record}");
}

#[test]
fn a_store_that_cannot_be_reached_does_not_run_the_job_and_says_so_under_q() {
    let dir = TempDir::new("once-down");
    let port = crate::fleet::free_port();
    let url = format!("redis://127.0.0.1:{port}");
    let out = output_within(job(&dir, Some(&url), 0, &["-q"], "true"));
    assert_eq!(out.status.code(), Some(75));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("not running the command"), "{err}");
    assert!(!dir.join("log").exists());
}

#[test]
fn bad_once_per_input_is_one_line_and_125() {
    for (args, said) in [
        (
            &["--once-per", "fortnight", "--lock", "j"][..],
            "expected hour, day",
        ),
        (&["--once-per", "30s", "--lock", "j"], "from 1m to a year"),
        (&["--once-per", "366d", "--lock", "j"], "from 1m to a year"),
        (&["--once-per", "", "--lock", "j"], "expected hour, day"),
        (&["--once-per", "-1h", "--lock", "j"], "expected hour, day"),
        (&["--once-per", "day"], "give --lock KEY"),
        (&["--once-per", "day", "--name", "a b"], "give --lock KEY"),
        (
            &["--once-per", "day", "--lock", "j", "--until-failure"],
            "cannot be used with '--until-failure'",
        ),
    ] {
        let out = backoff(args).args(["--", "true"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(said), "{args:?}: {err}");
    }
    let out = backoff(["--lock", "j", "--", "true"])
        .env("BACKOFF_ONCE_PER", "yearly")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&out.stderr).contains("BACKOFF_ONCE_PER"));
    // --name gives the key when there is no --lock.
    let dir = TempDir::new("once-name");
    let store = dir.path().to_str().unwrap();
    for _ in 0..2 {
        backoff([
            "--once-per",
            "1h",
            "--name",
            "nightly",
            "--budget-dir",
            store,
        ])
        .args(["--", "sh", "-c", "echo ran >> log"])
        .current_dir(dir.path())
        .assert()
        .success();
    }
    assert_eq!(dir.lines("log"), ["ran"]);
    assert!(dir.join("nightly.once").exists());
}

/// `faketime`, or `None` (said) where it cannot set backoff's clock.
fn faketime(test: &str) -> Option<std::path::PathBuf> {
    crate::timestamps::faketime(test)
}

/// 2026-12-06T00:00:00Z, in Unix seconds.
const DEC_6: u64 = 1_796_515_200;

/// Hours, minutes and seconds, in seconds.
const fn hms(h: u64, m: u64, s: u64) -> u64 {
    h * 3600 + m * 60 + s
}

/// A run of the job on its own files at the fake time `secs` (Unix
/// seconds, then running), in zone `tz`, deciding on `period`: what it
/// said. The job logs `secs`.
fn at(faketime: &Path, dir: &TempDir, secs: u64, tz: &str, period: &str) -> String {
    let mut cmd = Command::new(faketime);
    crate::support::plain(&mut cmd)
        .arg(format!("@{secs}"))
        .arg(crate::support::bin())
        .args(host_args(dir, None, 0, period))
        .args(["--", "sh", "-c"])
        .arg(format!("echo {secs} >> log"))
        .env("TZ", tz)
        .env_remove("FAKETIME")
        .current_dir(dir.path());
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{secs}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// The times (as `at` logged them) at which the job ran.
fn ran(dir: &TempDir) -> Vec<u64> {
    dir.lines("log")
        .iter()
        .map(|l| l.parse().unwrap())
        .collect()
}

#[test]
fn a_host_down_at_the_slot_catches_up_once_when_it_starts_an_hour_later() {
    let Some(ft) = faketime("the catch-up test") else {
        return;
    };
    let dir = TempDir::new("once-catch-up");
    // Hourly ticks with --once-per day: the 09:00 tick runs it.
    let ticks = [
        DEC_6 + hms(9, 0, 5),
        DEC_6 + hms(10, 0, 5),
        // Down over midnight, started an hour late: the day's job runs,
        // once.
        DEC_6 + hms(25, 0, 5),
        DEC_6 + hms(26, 0, 5),
    ];
    for t in ticks {
        at(&ft, &dir, t, "UTC", "day");
    }
    assert_eq!(ran(&dir), [ticks[0], ticks[2]]);
}

#[test]
fn a_window_on_one_host_in_a_loop_gives_at_most_one_success_per_window() {
    let Some(ft) = faketime("the window test") else {
        return;
    };
    let dir = TempDir::new("once-window");
    let start = DEC_6 + hms(10, 0, 0);
    for t in [0, 20, 40, 61, 90, 119, 125] {
        at(&ft, &dir, start + t, "UTC", "1m");
    }
    assert_eq!(ran(&dir), [start, start + 61, start + 125]);
}

#[test]
fn clock_jumps_and_a_repeated_hour_never_give_two_successes_in_a_period() {
    let Some(ft) = faketime("the clock jump test") else {
        return;
    };
    let dir = TempDir::new("once-jumps");
    let t = DEC_6 + hms(10, 30, 0);
    at(&ft, &dir, t, "UTC", "hour");
    // Put back an hour: the record is ahead, said, and the period counts
    // as done.
    let err = at(&ft, &dir, t - hms(0, 45, 0), "UTC", "hour");
    assert!(err.contains("went back since"), "{err}");
    // Put back a day: the same.
    at(&ft, &dir, t - hms(24, 0, 0), "UTC", "hour");
    // Forward a day: a new period.
    at(&ft, &dir, t + hms(24, 0, 0), "UTC", "hour");
    assert_eq!(ran(&dir), [t, t + hms(24, 0, 0)]);
    // New York's clocks go back at 06:00 UTC on 2026-11-01: 01:00-02:00
    // local comes twice, and is one hour.
    let change = 1_793_512_800;
    let dir = TempDir::new("once-fall-back");
    let ny = "America/New_York";
    for t in [change - 1800, change + 1800, change + 3610] {
        at(&ft, &dir, t, ny, "hour");
    }
    assert_eq!(ran(&dir), [change - 1800, change + 3610]);
}

#[test]
fn a_host_whose_clock_disagrees_with_redis_says_so_and_the_store_decides() {
    let Some(ft) = faketime("the clock disagreement test") else {
        return;
    };
    let redis = Redis::start(None);
    let url = redis.url();
    let dir = TempDir::new("once-skew");
    let first = output_within(job(&dir, Some(&url), 0, &[], "true"));
    assert!(first.status.success());
    // This host's clock is three hours ahead: in another hour, but the
    // server's hour, day and record decide.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mut cmd = Command::new(&ft);
    crate::support::plain(&mut cmd)
        .args(["-f", "+3h"])
        .arg(crate::support::bin())
        .args(host_args(&dir, Some(&url), 1, "day"))
        .args(["-q", "--", "sh", "-c", "echo ran1 >> log"])
        .env("TZ", "UTC")
        .env_remove("FAKETIME")
        .current_dir(dir.path());
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // A day boundary within the three hours would make it another day.
    if now % 86_400 < 86_400 - 3 * 3600 - 60 {
        assert_eq!(dir.lines("log"), ["ran0"]);
    }
    assert!(
        err.contains("this host's clock is") && err.contains("ahead of the store's"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn the_cron_daemon_fires_two_hosts_entries_and_the_job_runs_once_an_hour() {
    use crate::cron::{Crontab, within_minutes};
    let cron = ["/usr/sbin/cron", "/usr/bin/cron", "/sbin/cron"]
        .into_iter()
        .find(|p| Path::new(p).exists());
    let (true, Some(cron)) = (crate::support::is_root(), cron) else {
        eprintln!(
            "skipped the_cron_daemon_fires_two_hosts_entries_and_the_job_runs_once_an_hour: it needs root and Debian's cron (.ci/run installs it)"
        );
        return;
    };
    let redis = Redis::start(None);
    let dir = TempDir::new("once-cron");
    // Two entries stand for two hosts: their own state directories, one
    // Redis. Each tick logs that it fired; the job logs the hour it ran in.
    let entry = |host: usize| {
        format!(
            "* * * * * root echo {host} >> {fired}; {bin} --budget-dir {dir}/host{host} --seed {host} --budget-store {url} --once-per hour --lock oncecronjob -- sh -c 'date -u +\\%Y\\%m\\%d\\%H >> {log}'\n",
            fired = dir.join("fired").display(),
            bin = crate::support::bin().display(),
            dir = dir.path().display(),
            url = redis.url(),
            log = dir.join("log").display(),
        )
    };
    let mut crontab = Crontab::install(
        "backoff-once-test",
        &format!("{}{}", entry(0), entry(1)),
        cron,
    );
    // Two ticks of both entries: about two minutes of cron. The daemon of
    // another test may end meanwhile: one of this test's own then.
    within_minutes("two ticks of both entries", || {
        crontab.keep_daemon(cron);
        dir.lines("fired").len() >= 4
    });
    drop(crontab);
    // The last tick's runs end.
    within_minutes("the runs end", || {
        !Command::new("pgrep")
            .args(["-f", "--", "--lock oncecronjob"])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    let hours = dir.lines("log");
    assert!(!hours.is_empty(), "the job never ran");
    // Once an hour between them (two ticks may straddle an hour).
    let mut distinct = hours.clone();
    distinct.dedup();
    assert_eq!(distinct, hours, "twice in an hour: {hours:?}");
}

#[test]
fn a_record_made_in_another_zone_is_said_once_and_this_hosts_zone_decides() {
    let dir = TempDir::new("once-zones");
    let run = |tz: &str, args: &[&str]| {
        let mut cmd = command(host_args(&dir, None, 0, "week"));
        cmd.args(args)
            .args(["--", "sh", "-c", "echo ran >> log"])
            .env("TZ", tz)
            .current_dir(dir.path());
        cmd.output().unwrap()
    };
    assert!(run("UTC", &[]).status.success());
    let out = run("Asia/Tokyo", &["-q"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("in UTC+00:00, where this host's zone (TZ) is UTC+09:00"),
        "{err}"
    );
    // A week is a week in either zone but for a few hours of Sunday.
    assert!(dir.lines("log").len() <= 2);
}
