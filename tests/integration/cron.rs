//! The real cron daemon (Debian's `cron`) runs a crontab entry whose job
//! outlasts its minute: the next minute's run finds the lock held and is
//! skipped, and the monitor hears the first run's start and end, nothing of
//! the skipped one. It needs root (to write /etc/cron.d and run cron);
//! elsewhere it is skipped with a line.
//!
//! The README's cron line runs as written, as cron runs it: `/bin/sh -c`
//! in cron's environment, with backoff where the README installs it
//! (root only: the binary is copied to /usr/local/bin for the test).

use std::os::unix::fs::OpenOptionsExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use regex::Regex;

use crate::examples::markdown_blocks;
use crate::pings::Monitor;
use crate::support::{PATIENCE, Running, TempDir, bin, is_root, output_for};

/// Longer than two minutes of cron and a job of 70 s.
pub const CRON_PATIENCE: Duration = Duration::from_mins(4);

/// Waits until `cond` holds, within `CRON_PATIENCE`.
pub fn within_minutes(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + CRON_PATIENCE;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The crontab entry, removed (and the daemon the test started, stopped)
/// when dropped.
pub struct Crontab {
    path: std::path::PathBuf,
    daemon: Option<Child>,
}

impl Crontab {
    /// Writes `entries` to `/etc/cron.d/NAME-PID`, and starts the daemon
    /// `cron` unless one runs already.
    pub fn install(name: &str, entries: &str, cron: &str) -> Crontab {
        let path = std::path::PathBuf::from(format!("/etc/cron.d/{name}-{}", std::process::id()));
        std::fs::write(&path, entries).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o644))
            .unwrap();
        let mut crontab = Crontab { path, daemon: None };
        crontab.keep_daemon(cron);
        crontab
    }

    /// Starts the daemon `cron` unless one runs (another test's may have
    /// ended since; a `cron` process left is taken for a daemon, and the
    /// next call looks again).
    pub fn keep_daemon(&mut self, cron: &str) {
        if self.daemon.is_none() && !cron_running() {
            self.daemon = Some(
                Command::new(cron)
                    .arg("-f")
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap(),
            );
        }
    }
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
    let mut crontab = Crontab::install("backoff-test", &entry, cron);
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

/// Where the README installs backoff for cron, and its cron line names it.
const SYSTEM_BACKOFF: &str = "/usr/local/bin/backoff";

/// The README's crontab line in its "In cron" recipe: the schedule's five
/// fields, then the command.
fn readme_cron_line() -> String {
    let readme =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
            .unwrap();
    let recipe = readme
        .split_once("### In cron\n")
        .expect("the README's In cron recipe")
        .1;
    let (_, lines) = markdown_blocks(recipe)
        .into_iter()
        .next()
        .expect("a crontab line");
    assert_eq!(lines.len(), 1, "{lines:?}");
    lines[0].clone()
}

/// backoff at `SYSTEM_BACKOFF`, removed when dropped.
struct Installed;

impl Installed {
    /// Copies the binary under test to `SYSTEM_BACKOFF`, unless something
    /// is there already (then it is left alone, and `None`).
    fn new() -> Option<Installed> {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o755)
            .open(SYSTEM_BACKOFF)
            .ok()?;
        let installed = Installed;
        std::io::copy(&mut std::fs::File::open(bin()).unwrap(), &mut file).unwrap();
        Some(installed)
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(SYSTEM_BACKOFF);
    }
}

/// `line` run as cron runs a job: `/bin/sh -c` with cron's environment
/// alone (Debian's cron sets these four), root's but for its home.
fn as_cron_runs(line: &str, home: &std::path::Path) -> Command {
    let mut cmd = Command::new("env");
    cmd.arg("-i")
        .arg("PATH=/usr/bin:/bin")
        .arg("SHELL=/bin/sh")
        .arg(format!("HOME={}", home.display()))
        .arg("LOGNAME=root")
        .args(["/bin/sh", "-c", line])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

#[test]
fn the_readmes_cron_line_runs_under_cron_and_mails_only_a_failure() {
    let line = readme_cron_line();
    let schedule = Regex::new(r"^(?:[0-9*/,-]+\s+){5}(.*)$").unwrap();
    let command = schedule
        .captures(&line)
        .unwrap_or_else(|| panic!("not a crontab line: {line}"))[1]
        .to_owned();
    // Cron ends a command at a `%` and gives the rest to it as stdin.
    assert!(!command.contains('%'), "{command}");
    // Cron's PATH has no /usr/local/bin, nor ~/.cargo/bin.
    assert!(
        command.starts_with(&format!("{SYSTEM_BACKOFF} ")),
        "{command}"
    );
    let test = "the_readmes_cron_line_runs_under_cron_and_mails_only_a_failure";
    if !is_root() {
        eprintln!("skipped {test}: it needs root, to put backoff in {SYSTEM_BACKOFF}");
        return;
    }
    let Some(_installed) = Installed::new() else {
        eprintln!("skipped {test}: {SYSTEM_BACKOFF} exists already, and is left alone");
        return;
    };
    let m = Monitor::start("ok");
    let dir = TempDir::new("cron-readme");
    let home = dir.join("home");
    std::fs::create_dir(&home).unwrap();
    // The job: it succeeds, or fails saying so where a file says.
    let (job, fails) = (dir.join("sync"), dir.join("fails"));
    std::fs::write(
        &job,
        format!(
            "#!/bin/sh\nif [ -e '{0}' ]; then echo 'sync: the server is away' >&2; exit 3; fi\n",
            fails.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&job, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    // The monitor and the job are the test's; the splay's window is a
    // second, as in every example.
    let splay = Regex::new(r"--splay [0-9a-z]+").unwrap();
    let command = splay
        .replace(&command, "--splay 1s")
        .replace("https://hc-ping.com/UUID", &m.url("uuid"))
        .replace("/usr/local/bin/sync", &job.display().to_string());
    let run = |command: &str| output_for(as_cron_runs(command, &home).spawn().unwrap(), PATIENCE);

    // A success: nothing to mail, and the monitor hears its start and end.
    let out = run(&command);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
    let got = m.requests(2);
    assert!(got[0].starts_with("GET /uuid/start?rid="), "{got:?}");
    assert!(got[1].starts_with("POST /uuid?rid="), "{got:?}");

    // A run the one before keeps out: nothing to mail either, and no
    // check-in.
    let mut holder = Command::new(SYSTEM_BACKOFF);
    holder
        .args(["--lock", "sync", "--", "sh", "-c", "echo holding; sleep 60"])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", &home);
    let mut holder = Running::start(holder);
    holder.wait_for("holding");
    let out = run(&command);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
    drop(holder);
    assert_eq!(m.dir_lines().len(), 2, "{:?}", m.dir_lines());

    // A failure is mailed: the job's own line and backoff's, under the
    // recipe's options with delays of a millisecond in place of its policy's
    // minutes.
    std::fs::write(&fails, "").unwrap();
    let fast = command.replace("--base 30s --cap 5m", "--base 1ms --cap 1ms");
    assert_ne!(fast, command, "the recipe's policy");
    let out = run(&fast);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let mail = String::from_utf8_lossy(&out.stderr);
    assert!(mail.contains("sync: the server is away"), "{mail}");
    assert!(mail.contains("sync: giving up after 7 attempts"), "{mail}");
    let got = m.requests(4);
    assert!(got[3].starts_with("POST /uuid/3?rid="), "{got:?}");
}

#[test]
fn the_readmes_cron_line_as_a_user_without_a_home_says_so_and_runs_with_budget_dir() {
    let test = "the_readmes_cron_line_as_a_user_without_a_home_says_so_and_runs_with_budget_dir";
    if !is_root() {
        eprintln!("skipped {test}: it needs root, to run the line as nobody");
        return;
    }
    // SAFETY: a C string of the test's, and the entry read at once.
    let nobody =
        unsafe { libc::getpwnam(c"nobody".as_ptr()).as_ref() }.map(|p| (p.pw_uid, p.pw_gid));
    let Some((uid, gid)) = nobody else {
        eprintln!("skipped {test}: there is no user nobody");
        return;
    };
    // backoff installed for the whole system, as Install says, here in a
    // directory of the test's that every user can read.
    let dir = TempDir::new("cron-nobody");
    let closed = dir.path().ancestors().skip(1).find(|p| {
        std::fs::metadata(p)
            .is_ok_and(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o001 == 0)
    });
    if let Some(closed) = closed {
        eprintln!("skipped {test}: nobody cannot enter {}", closed.display());
        return;
    }
    let open = |path: &std::path::Path, mode| {
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap();
    };
    open(dir.path(), 0o755);
    let installed = dir.join("backoff");
    std::fs::copy(bin(), &installed).unwrap();
    open(&installed, 0o755);
    let m = Monitor::start("ok");
    let splay = Regex::new(r"--splay [0-9a-z]+").unwrap();
    let line = readme_cron_line();
    let command = splay
        .replace(&line, "--splay 1s")
        .replace("https://hc-ping.com/UUID", &m.url("uuid"))
        .replace("/usr/local/bin/sync", "/bin/true");
    let command = &command[command.find(SYSTEM_BACKOFF).expect("backoff's path")..];
    let run = |command: &str| {
        let mut cmd = as_cron_runs(command, std::path::Path::new("/nonexistent"));
        std::os::unix::process::CommandExt::uid(&mut cmd, uid);
        std::os::unix::process::CommandExt::gid(&mut cmd, gid);
        output_for(cmd.spawn().unwrap(), PATIENCE)
    };

    // No home: the lock cannot be had, which is said with the fix.
    let as_written = command.replacen(SYSTEM_BACKOFF, &installed.display().to_string(), 1);
    let out = run(&as_written);
    let mail = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(75), "{mail}");
    assert!(
        mail.contains(
            "lock 'sync' unavailable (no budget directory: HOME '/nonexistent' does not exist"
        ) && mail.contains("give --budget-dir DIR"),
        "{mail}"
    );

    // The guide's fix: a directory of the user's.
    let state = dir.join("state");
    std::fs::create_dir(&state).unwrap();
    std::os::unix::fs::chown(&state, Some(uid), Some(gid)).unwrap();
    let fixed = command.replacen(
        SYSTEM_BACKOFF,
        &format!("{} --budget-dir {}", installed.display(), state.display()),
        1,
    );
    let out = run(&fixed);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
    assert!(state.join("sync.lock").exists());
    let guide = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/guide.md"))
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        guide.contains("`--lock` then runs nothing and exits 75")
            && guide.contains("`--budget-dir /var/lib/sync`"),
        "the guide's In cron says it"
    );
}
