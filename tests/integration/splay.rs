//! `--splay`: the wait before the first attempt, the same for a host and
//! job, spread over the window across jobs, cut by signals and by
//! `--max-time`.

// The same place in the window is the same number, to the nanosecond.
#![allow(clippy::float_cmp)]

use std::process::ExitStatus;
use std::time::Duration;

use crate::schema::Doc;
use crate::support::{PATIENCE, Running, TempDir, backoff, command, json_of};

/// Starts `backoff --log-format json --splay 1h ARGS -- true`, reads its
/// `splay` event, then ends it with SIGTERM: the wait it drew, in seconds,
/// and how backoff ended.
fn drawn(args: &[&str]) -> Running {
    let mut cmd = command(["--log-format", "json", "--splay", "1h"]);
    cmd.args(args).args(["--", "true"]);
    Running::start(cmd)
}

fn delay_of(run: &mut Running) -> f64 {
    let line = run.wait_for("\"splay\"");
    let event = json_of(Doc::Event, line.as_bytes());
    assert_eq!(event["window_seconds"], 3600.0);
    event["delay_seconds"].as_f64().unwrap()
}

fn terminated(run: &mut Running) -> ExitStatus {
    run.signal(libc::SIGTERM);
    run.wait_exit(PATIENCE).0
}

#[test]
fn a_host_and_job_wait_the_same_every_run_and_jobs_spread_over_the_window() {
    let mut runs: Vec<Running> = (0..50)
        .map(|n| drawn(&["--name", &format!("job{n}")]))
        .collect();
    let delays: Vec<f64> = runs.iter_mut().map(delay_of).collect();
    for run in &mut runs {
        let status = terminated(run);
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(libc::SIGTERM)
        );
    }
    assert!(
        delays.iter().all(|d| (0.0..3600.0).contains(d)),
        "{delays:?}"
    );
    // 50 places drawn evenly: one in the first fifth and one in the last
    // but for a chance of 2 in 10^5.
    let min = delays.iter().copied().fold(f64::MAX, f64::min);
    let max = delays.iter().copied().fold(0.0, f64::max);
    assert!(min < 720.0 && max > 2880.0, "{delays:?}");
    // The same job again: the same place; the program's name is the job's
    // when --name is not given.
    let mut again = drawn(&["--name", "job7"]);
    assert_eq!(delay_of(&mut again), delays[7]);
    terminated(&mut again);
    let mut by_program = drawn(&[]);
    let mut by_name = drawn(&["--name", "true"]);
    assert_eq!(delay_of(&mut by_program), delay_of(&mut by_name));
    terminated(&mut by_program);
    terminated(&mut by_name);
    // --seed takes the machine's place.
    let seeded: Vec<f64> = ["5", "5", "6"]
        .iter()
        .map(|seed| {
            let mut run = drawn(&["--seed", seed, "--name", "job7"]);
            let d = delay_of(&mut run);
            terminated(&mut run);
            d
        })
        .collect();
    assert_eq!(seeded[0], seeded[1]);
    assert_ne!(seeded[0], seeded[2]);
}

#[test]
fn a_signal_during_the_splay_ends_the_run_at_once_and_nothing_runs() {
    let dir = TempDir::new("splay");
    let mark = dir.join("ran");
    let report = dir.join("report.json");
    let mut cmd = command(["--splay", "1h", "--report", report.to_str().unwrap()]);
    cmd.arg("--on-start")
        .arg(format!("touch '{}'", mark.display()));
    cmd.args(["-v", "--", "touch"]).arg(&mark);
    let mut run = Running::start(cmd);
    run.wait_for("before the first attempt (--splay ");
    let status = terminated(&mut run);
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGTERM)
    );
    assert!(
        run.stderr()
            .iter()
            .any(|l| l.contains("interrupted by SIGTERM during --splay's wait; no attempt follows")),
        "{:?}",
        run.seen
    );
    assert!(!mark.exists(), "neither the hook nor the command ran");
    let doc = crate::support::report_at(&report);
    assert_eq!(doc["reason"], "interrupted");
    assert!(doc["splay_seconds"].as_f64().unwrap() < 3600.0);
    assert_eq!(doc["splay_window_seconds"], 3600.0);
}

#[test]
fn the_splay_counts_against_max_time() {
    // --seed 36 puts the job `sleep` at 9.08s of a 10s window: the attempt
    // has what is left of --max-time, some 1.4s, and the run ends by it.
    let started = std::time::Instant::now();
    let out = backoff([
        "--seed",
        "36",
        "--splay",
        "10s",
        "--max-time",
        "10500ms",
        "--",
        "sleep",
        "30",
    ])
    .timeout(PATIENCE)
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(124), "{err}");
    assert!(err.contains("giving up after 1 attempt"), "{err}");
    let took = started.elapsed();
    assert!(
        (Duration::from_secs(9)..Duration::from_secs(15)).contains(&took),
        "{took:?}"
    );
}

#[test]
fn a_splay_beyond_a_day_is_refused() {
    let out = backoff(["--splay", "25h", "--", "true"]).output().unwrap();
    assert_eq!(out.status.code(), Some(125));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("'25h' for '--splay': must be at most 24h"),
        "{err}"
    );
}

/// `backoff --log-format json --splay 1h --name sync -- true` started by
/// `sh` in mount and UTS namespaces of its own, after the shell commands
/// `setup` (which may bind a file over /etc/machine-id or set the host
/// name without touching the machine's); `None` where namespaces cannot
/// be made (not root) or there is no /etc/machine-id, said on one line
/// naming `test`.
fn drawn_in_namespaces(test: &str, setup: &str) -> Option<Running> {
    let probe = std::process::Command::new("unshare")
        .args(["--mount", "--uts", "true"])
        .stderr(std::process::Stdio::null())
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        eprintln!("skipped {test}: unshare --mount --uts fails here (it needs root)");
        return None;
    }
    if !std::path::Path::new("/etc/machine-id").exists() {
        eprintln!("skipped {test}: this system has no /etc/machine-id to bind a file over");
        return None;
    }
    let mut cmd = std::process::Command::new("unshare");
    crate::support::plain(&mut cmd);
    cmd.args(["--mount", "--uts", "--propagation", "private", "sh", "-c"])
        .arg(format!("set -e\n{setup}\nexec \"$0\" \"$@\""))
        .arg(crate::support::bin())
        .args(["--log-format", "json", "--splay", "1h", "--name", "sync"])
        .args(["--", "true"]);
    Some(Running::start(cmd))
}

/// The wait a run in namespaces drew after `setup`, and the lines it
/// wrote before; the run is ended.
fn drawn_after(test: &str, setup: &str) -> Option<(f64, Vec<String>)> {
    let mut run = drawn_in_namespaces(test, setup)?;
    let delay = delay_of(&mut run);
    let lines = run.stderr().iter().map(|l| (*l).to_owned()).collect();
    terminated(&mut run);
    Some((delay, lines))
}

#[test]
fn hosts_cloned_from_one_image_wait_apart_by_their_host_names() {
    let test = "hosts_cloned_from_one_image_wait_apart_by_their_host_names";
    let dir = TempDir::new("cloned");
    let id = dir.join("machine-id");
    std::fs::write(&id, "4f1c9a0d2b7e4c6a8e5f3d2c1b0a9f8e\n").unwrap();
    let clone = |host: &str| {
        format!(
            "mount --bind '{}' /etc/machine-id\nhostname {host}",
            id.display()
        )
    };
    let Some((web1, said)) = drawn_after(test, &clone("web1")) else {
        return;
    };
    assert_eq!(said.len(), 1, "only the splay event: {said:?}");
    let (again, _) = drawn_after(test, &clone("web1")).unwrap();
    let (web2, _) = drawn_after(test, &clone("web2")).unwrap();
    assert_eq!(web1, again, "one host, one place");
    assert_ne!(web1, web2, "two clones, two places");
}

#[test]
fn a_machine_id_that_is_a_fifo_holds_up_nothing_and_is_said_once() {
    let test = "a_machine_id_that_is_a_fifo_holds_up_nothing_and_is_said_once";
    let dir = TempDir::new("machine-id-fifo");
    let fifo = dir.join("fifo");
    crate::support::make_fifo(&fifo);
    let setup = format!(
        "mount --bind '{}' /etc/machine-id\nhostname web1",
        fifo.display()
    );
    let Some((delay, said)) = drawn_after(test, &setup) else {
        return;
    };
    assert!((0.0..3600.0).contains(&delay), "{delay}");
    let warnings: Vec<&String> = said.iter().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{said:?}");
    assert!(
        warnings[0].contains(
            "--splay: /etc/machine-id is not a regular file (a FIFO): the host name alone places this host in the window"
        ),
        "{said:?}"
    );
    // The same place as any host of that name without a machine id.
    let (none, _) = drawn_after(
        test,
        "mount --bind /dev/null /etc/machine-id\nhostname web1",
    )
    .unwrap();
    assert_eq!(delay, none);
}
