//! The real cron daemon (Debian's `cron`) runs a crontab entry whose job
//! outlasts its minute: the next minute's run finds the lock held and is
//! skipped, and the monitor hears the first run's start and end, nothing of
//! the skipped one. It needs root (to write /etc/cron.d and run cron);
//! elsewhere it is skipped with a line.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::pings::Monitor;
use crate::support::{TempDir, bin, is_root};

/// Longer than two minutes of cron and a job of 70 s.
const CRON_PATIENCE: Duration = Duration::from_mins(4);

/// Waits until `cond` holds, within `CRON_PATIENCE`.
fn within_minutes(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + CRON_PATIENCE;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The crontab entry, removed (and the daemon the test started, stopped)
/// when dropped.
struct Crontab {
    path: std::path::PathBuf,
    daemon: Option<Child>,
}

impl Drop for Crontab {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        if let Some(mut d) = self.daemon.take() {
            let _ = d.kill();
            let _ = d.wait();
        }
    }
}

/// Whether a cron daemon runs already (it then reads the entry too).
fn cron_running() -> bool {
    Command::new("pgrep")
        .args(["-x", "cron"])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn the_cron_daemon_skips_the_run_that_would_overlap_and_the_monitor_hears_one_run() {
    let cron = ["/usr/sbin/cron", "/usr/bin/cron", "/sbin/cron"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists());
    let (true, Some(cron)) = (is_root(), cron) else {
        eprintln!(
            "skipped the_cron_daemon_skips_the_run_that_would_overlap_and_the_monitor_hears_one_run: it needs root and Debian's cron (.ci/run installs it)"
        );
        return;
    };
    let m = Monitor::start("ok");
    let dir = TempDir::new("cron");
    let (ran, log, store) = (dir.join("ran"), dir.join("job.log"), dir.join("store"));
    // The job outlasts its minute.
    let entry = format!(
        "* * * * * root {} --lock cronjob --budget-dir {} --ping {} --name cronjob -- sh -c 'echo ran >> {}; sleep 70' >> {} 2>&1\n",
        bin().display(),
        store.display(),
        m.url("cron-uuid"),
        ran.display(),
        log.display()
    );
    let path = std::path::PathBuf::from(format!("/etc/cron.d/backoff-test-{}", std::process::id()));
    std::fs::write(&path, entry).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let daemon = (!cron_running()).then(|| {
        Command::new(cron)
            .arg("-f")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    });
    let mut crontab = Crontab { path, daemon };
    // The next minute's run finds the lock held by the first.
    within_minutes("the second run is kept out", || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("lock 'cronjob' is held by pid")
    });
    // No third run.
    let _ = std::fs::remove_file(&crontab.path);
    if let Some(mut d) = crontab.daemon.take() {
        let _ = d.kill();
        let _ = d.wait();
    }
    assert_eq!(dir.lines("ran").len(), 1, "the job ran once");
    let skipped = std::fs::read_to_string(&log).unwrap();
    assert!(
        skipped.contains("cronjob: lock 'cronjob' is held by pid"),
        "{skipped}"
    );
    // The first run ends: its start and end check-ins, none of the skip.
    within_minutes("the first run's end check-in", || m.dir_lines().len() >= 2);
    let got = m.dir_lines();
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got[0].starts_with("GET /cron-uuid/start?rid="), "{got:?}");
    assert!(
        got[1].starts_with("POST /cron-uuid?rid=")
            && got[1].contains("backoff: 1 attempt, reason success, exit status 0"),
        "{got:?}"
    );
}
