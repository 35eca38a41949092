//! Observability: JSON events, GitHub annotations, the run report and
//! Prometheus metrics.

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;

use serde_json::Value;

use crate::support::{
    PATIENCE, Running, TempDir, backoff, command, command_after, events, record_peak_rss,
};

#[test]
fn every_event_of_a_three_attempt_run_is_a_json_line_that_agrees_with_the_run() {
    let out = backoff([
        "--log-format",
        "json",
        "--seed",
        "5",
        "--base",
        "2ms",
        "--jitter",
        "none",
        "--",
        "sh",
        "-c",
        "exit $((BACKOFF_ATTEMPT == 3 ? 0 : 10 + BACKOFF_ATTEMPT))",
    ])
    .output()
    .unwrap();
    assert!(out.status.success());
    let ev = events(&out.stderr);
    let kinds: Vec<&str> = ev.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "start",
            "attempt_start",
            "attempt_end",
            "attempt_start",
            "attempt_end",
            "attempt_start",
            "success"
        ]
    );
    for e in &ev {
        assert_eq!(e["schema"], 1);
        assert_eq!(e["name"], "sh");
        assert!(e["time"].as_str().unwrap().ends_with('Z'));
    }
    assert_eq!(ev[2]["outcome"]["code"], 11);
    assert_eq!(ev[4]["outcome"]["code"], 12);
    assert_eq!(ev[2]["delay_seconds"], 0.002);
    assert_eq!(ev[4]["delay_seconds"], 0.004);
    assert_eq!(ev[4]["bound_seconds"], 0.004);
    assert_eq!(ev[2]["next"], "retry");
    assert_eq!(ev[6]["attempt"], 3);
}

#[test]
fn json_events_name_the_give_up_reason() {
    let out = backoff([
        "--log-format",
        "json",
        "--stop-on",
        "4",
        "--",
        "sh",
        "-c",
        "exit 4",
    ])
    .output()
    .unwrap();
    let ev = events(&out.stderr);
    let last = ev.last().unwrap();
    assert_eq!(last["event"], "give_up");
    assert_eq!(last["reason"], "stopped");
}

#[test]
fn github_actions_get_warning_and_error_annotations_without_a_flag() {
    let out = backoff(["--max-retries", "1", "--base", "1ms", "--", "false"])
        .env("GITHUB_ACTIONS", "true")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stderr).unwrap();
    // Each attempt is folded (see ci.rs); the lines stay outside the folds.
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with("::group::") && *l != "::endgroup::")
        .collect();
    assert!(
        lines[0].starts_with("::warning title=backoff::attempt 1/2 failed (exit 1)"),
        "{text}"
    );
    assert!(
        lines[1].starts_with("backoff: attempt 2/2 failed"),
        "{text}"
    );
    assert!(
        lines[2].starts_with("::error title=backoff::giving up after 2 attempts"),
        "{text}"
    );
    // An explicit format wins.
    let out = backoff(["--log-format", "text", "--max-retries", "0", "--", "false"])
        .env("GITHUB_ACTIONS", "true")
        .output()
        .unwrap();
    assert!(!String::from_utf8(out.stderr).unwrap().contains("::"));
}

fn report(path: &Path) -> Value {
    crate::support::report_at(path)
}

#[test]
fn the_report_is_written_on_success_exhaustion_stop_and_deadline() {
    let dir = TempDir::new("report");
    let file = dir.join("report.json");
    let file_arg = file.to_str().unwrap();

    backoff([
        "--report", file_arg, "--base", "1ms", "--jitter", "none", "--name", "job", "--", "sh",
        "-c",
    ])
    .arg("[ $BACKOFF_ATTEMPT = 3 ]")
    .assert()
    .success();
    let r = report(&file);
    assert_eq!(r["reason"], "success");
    assert_eq!(r["name"], "job");
    assert_eq!(r["retry_count"], 2);
    assert_eq!(r["final_status"], 0);
    assert_eq!(r["attempts"].as_array().unwrap().len(), 3);
    assert_eq!(r["backoff_seconds"], 0.003, "1ms + 2ms without jitter");
    assert_eq!(r["attempts"][0]["delay_after_seconds"], 0.001);
    assert_eq!(r["attempts"][2]["delay_after_seconds"], Value::Null);

    backoff([
        "--report",
        file_arg,
        "--base",
        "1ms",
        "--max-retries",
        "1",
        "--",
        "sh",
        "-c",
        "exit 7",
    ])
    .assert()
    .code(7);
    let r = report(&file);
    assert_eq!(r["reason"], "exhausted");
    assert_eq!(r["final_status"], 7);
    assert_eq!(r["retry_count"], 1);

    backoff([
        "--report",
        file_arg,
        "--stop-on",
        "7",
        "--",
        "sh",
        "-c",
        "exit 7",
    ])
    .assert()
    .code(7);
    assert_eq!(report(&file)["reason"], "stopped");

    backoff([
        "--report",
        file_arg,
        "--max-time",
        "1s",
        "--base",
        "10s",
        "--jitter",
        "none",
        "--",
        "sh",
        "-c",
        "exit 2",
    ])
    .assert()
    .code(2);
    let r = report(&file);
    assert_eq!(r["reason"], "deadline");
    assert_eq!(r["backoff_seconds"], 0.0);

    backoff(["--report", file_arg, "--", "backoff-test-no-such-program"])
        .assert()
        .code(127);
    let r = report(&file);
    assert_eq!(r["reason"], "stopped");
    assert_eq!(r["attempts"][0]["outcome"]["kind"], "not_found");
}

#[test]
fn the_report_is_written_after_sigterm_during_a_delay() {
    let dir = TempDir::new("report-signal");
    let file = dir.join("report.json");
    let mut cmd = command([
        "--report",
        file.to_str().unwrap(),
        "--base",
        "30s",
        "--jitter",
        "none",
        "--",
        "sh",
        "-c",
        "exit 1",
    ]);
    cmd.env("LC_ALL", "C");
    let mut run = Running::start(cmd);
    run.wait_for("retrying in 30.0s");
    run.signal(libc::SIGTERM);
    let (status, _) = run.wait_exit(PATIENCE);
    assert_eq!(status.signal(), Some(libc::SIGTERM));
    let r = report(&file);
    assert_eq!(r["reason"], "interrupted");
    assert_eq!(r["final_status"], 143);
    assert_eq!(r["final_signal"], "TERM");
    assert_eq!(r["retry_count"], 0);
    let slept = r["backoff_seconds"].as_f64().unwrap();
    assert!(
        slept < 30.0,
        "only the part of the delay that was slept: {slept}"
    );
}

/// A small parser of the Prometheus text exposition format: every sample
/// with its labels, checking each line's syntax and that every sample's
/// metric has a TYPE.
fn parse_exposition(text: &str) -> BTreeMap<String, f64> {
    let mut types = BTreeMap::new();
    let mut helps = std::collections::BTreeSet::new();
    let mut samples = BTreeMap::new();
    // The families in the order their lines come: each once, its lines
    // together.
    let mut families: Vec<String> = Vec::new();
    let mut enter = |name: &str| {
        if families.last().map(String::as_str) != Some(name) {
            assert!(
                !families.iter().any(|f| f == name),
                "the lines of {name} are apart"
            );
            families.push(name.to_owned());
        }
    };
    assert!(text.ends_with('\n'), "the text must end with a newline");
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("TYPE name kind");
            assert!(["counter", "gauge"].contains(&kind), "{line}");
            assert!(
                types.insert(name.to_owned(), kind.to_owned()).is_none(),
                "TYPE twice: {line}"
            );
            enter(name);
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().unwrap_or_default();
            assert!(helps.insert(name.to_owned()), "HELP twice: {line}");
            enter(name);
            continue;
        }
        assert!(
            !line.starts_with('#') && !line.is_empty(),
            "stray line {line:?}"
        );
        let (series, value) = line.rsplit_once(' ').expect("series value");
        let name = series.split('{').next().unwrap();
        assert!(
            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit()),
            "metric name {name:?}"
        );
        if let Some(labels) = series.strip_prefix(name)
            && !labels.is_empty()
        {
            assert!(
                labels.starts_with('{') && labels.ends_with('}'),
                "labels {labels:?}"
            );
            let (k, v) = labels[1..labels.len() - 1].split_once('=').unwrap();
            assert!(k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
            assert!(v.starts_with('"') && v.ends_with('"'), "label value {v:?}");
        }
        assert!(types.contains_key(name), "no TYPE for {name}");
        enter(name);
        if types[name] == "counter" {
            assert!(
                name.ends_with("_total"),
                "counter {name} must end in _total"
            );
        }
        let v: f64 = value.parse().unwrap_or_else(|_| panic!("value {value:?}"));
        samples.insert(series.to_owned(), v);
    }
    samples
}

#[test]
#[allow(clippy::float_cmp)] // small whole numbers, exact in f64
fn the_metrics_file_parses_and_counters_add_up_across_runs() {
    let dir = TempDir::new("metrics");
    let file = dir.join("backoff.prom");
    let arg = file.to_str().unwrap();
    for _ in 0..2 {
        backoff([
            "--metrics-file",
            arg,
            "--name",
            "sync \"a\"",
            "--base",
            "1ms",
            "--max-retries",
            "2",
            "--",
            "false",
        ])
        .assert()
        .code(1);
    }
    let m = parse_exposition(&std::fs::read_to_string(&file).unwrap());
    let l = r#"{name="sync \"a\""}"#;
    assert_eq!(m[&format!("backoff_last_attempts{l}")], 3.0);
    assert_eq!(m[&format!("backoff_last_retries{l}")], 2.0);
    assert_eq!(m[&format!("backoff_last_success{l}")], 0.0);
    assert_eq!(m[&format!("backoff_last_exit_status{l}")], 1.0);
    assert_eq!(m[&format!("backoff_runs_total{l}")], 2.0);
    assert_eq!(m[&format!("backoff_attempts_total{l}")], 6.0);
    assert_eq!(m[&format!("backoff_retries_total{l}")], 4.0);
    assert!(m[&format!("backoff_last_run_timestamp_seconds{l}")] > 1.7e9);
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&file).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o644);
}

/// Checks a metrics file with `promtool check metrics`, when Prometheus's
/// promtool is installed.
fn promtool_accepts(file: &Path) {
    let run = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(file).unwrap())
        .output();
    match run {
        Ok(out) => assert!(out.status.success(), "promtool: {out:?}"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            println!(
                "promtool is not installed (Debian package prometheus): the metrics file is checked by the test's parser alone"
            );
        }
        Err(e) => panic!("promtool: {e}"),
    }
}

#[test]
#[allow(clippy::float_cmp)] // small whole numbers, exact in f64
fn runs_of_two_names_sharing_a_metrics_file_keep_each_others_series() {
    let dir = TempDir::new("metrics-names");
    let file = dir.join("shared.prom");
    // Another exporter's metric is there first, and a line that is not one.
    std::fs::write(
        &file,
        "# HELP node_thing Another exporter's.\n# TYPE node_thing gauge\nnode_thing{a=\"x\"} 3\nnot a sample\n",
    )
    .unwrap();
    let run = |name: &str, script: &str, code: i32| {
        backoff(["--metrics-file", file.to_str().unwrap(), "--name", name])
            .args(["--base", "1ms", "--jitter", "none", "--max-retries", "1"])
            .args(["-q", "--", "sh", "-c", script])
            .timeout(PATIENCE)
            .assert()
            .code(code);
    };
    run("nightly", "exit 1", 1);
    run("hourly \"h\"", "exit 0", 0);
    run("nightly", "exit 0", 0);
    run("nightly", "exit 1", 1);
    let text = std::fs::read_to_string(&file).unwrap();
    let m = parse_exposition(&text);
    promtool_accepts(&file);
    let (n, h) = (r#"name="nightly""#, r#"name="hourly \"h\"""#);
    let expected: [(&str, &str, f64); 22] = [
        ("backoff_last_attempts", n, 2.0),
        ("backoff_last_retries", n, 1.0),
        ("backoff_last_successes", n, 0.0),
        ("backoff_last_resets", n, 0.0),
        ("backoff_last_exit_status", n, 1.0),
        ("backoff_last_success", n, 0.0),
        ("backoff_runs_total", n, 3.0),
        ("backoff_attempts_total", n, 5.0),
        ("backoff_retries_total", n, 2.0),
        (
            "backoff_attempt_outcomes_total",
            &format!("{n},outcome=\"exit\""),
            4.0,
        ),
        (
            "backoff_attempt_outcomes_total",
            &format!("{n},outcome=\"success\""),
            1.0,
        ),
        ("backoff_last_attempts", h, 1.0),
        ("backoff_last_retries", h, 0.0),
        ("backoff_last_successes", h, 1.0),
        ("backoff_last_resets", h, 0.0),
        ("backoff_last_exit_status", h, 0.0),
        ("backoff_last_success", h, 1.0),
        ("backoff_runs_total", h, 1.0),
        ("backoff_attempts_total", h, 1.0),
        ("backoff_retries_total", h, 0.0),
        ("backoff_backoff_seconds_total", h, 0.0),
        (
            "backoff_attempt_outcomes_total",
            &format!("{h},outcome=\"success\""),
            1.0,
        ),
    ];
    for (metric, labels, value) in expected {
        let series = format!("{metric}{{{labels}}}");
        assert_eq!(m.get(&series), Some(&value), "{series} in {text}");
    }
    let series = |metric: &str, labels: &str| m[&format!("{metric}{{{labels}}}")];
    assert!(series("backoff_backoff_seconds_total", n) > 0.0, "{text}");
    assert!(series("backoff_last_backoff_seconds", n) > 0.0, "{text}");
    let ran = |labels| series("backoff_last_run_timestamp_seconds", labels);
    assert!(ran(h) > 1.7e9 && ran(n) >= ran(h), "{text}");
    // Nothing else of backoff's, the other exporter's metric as it was, and
    // the line that is not one gone.
    // Both runs succeeded, so each name has the time of its last success.
    let succeeded = |labels| series("backoff_last_success_timestamp_seconds", labels);
    assert!(
        succeeded(h) > 1.7e9 && succeeded(n) >= succeeded(h),
        "{text}"
    );
    let ours = m.keys().filter(|k| k.starts_with("backoff_")).count();
    assert_eq!(ours, 2 * 13 + 3, "{text}");
    assert!(
        text.ends_with("# HELP node_thing Another exporter's.\n# TYPE node_thing gauge\nnode_thing{a=\"x\"} 3\n"),
        "{text}"
    );
    assert!(!text.contains("not a sample"), "{text}");
}

#[test]
fn the_metrics_file_is_replaced_atomically_for_a_concurrent_reader() {
    let dir = TempDir::new("metrics-atomic");
    let file = dir.join("m.prom");
    let arg = file.to_str().unwrap().to_owned();
    backoff(["--metrics-file", &arg, "--", "true"])
        .assert()
        .success();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (file, done) = (file.clone(), std::sync::Arc::clone(&done));
        std::thread::spawn(move || {
            let mut reads = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let text = std::fs::read_to_string(&file).expect("the file never disappears");
                parse_exposition(&text);
                reads += 1;
            }
            reads
        })
    };
    for _ in 0..40 {
        backoff(["--metrics-file", &arg, "--", "true"])
            .assert()
            .success();
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(reader.join().expect("every read parsed") > 0);
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "no temporary file is left behind");
}

#[test]
fn bad_report_paths_are_refused_before_anything_runs() {
    for flag in ["--report", "--metrics-file"] {
        backoff([flag, "/no/such/dir/r.json", "--", "true"])
            .assert()
            .code(125)
            .stderr(predicates::str::contains(format!("'{flag}'")));
        backoff([flag, "/tmp", "--", "true"]).assert().code(125);
    }
    backoff(["--log-format", "yaml", "--", "true"])
        .assert()
        .code(125);
}

/// What can stand at a report's or metrics file's path that backoff must
/// neither replace nor read: a FIFO, a symbolic link to `/dev/zero`, and
/// (where the test may make one) a device node like `/dev/null`. Each
/// comes with a shell line that makes it at the path `$0`.
fn special_files() -> Vec<(&'static str, &'static str)> {
    let mut kinds = vec![
        ("a FIFO", r#"mkfifo "$0""#),
        ("a symbolic link", r#"ln -s /dev/zero "$0""#),
    ];
    let probe = TempDir::new("mknod");
    let device = ("a character device", r#"mknod "$0" c 1 3 2>/dev/null"#);
    if make_special(device.1, &probe.join("null")) {
        kinds.push(device);
    }
    kinds
}

/// Runs a shell line of `special_files` for `path`; whether it made it.
fn make_special(line: &str, path: &Path) -> bool {
    std::process::Command::new("sh")
        .args(["-c", line])
        .arg(path)
        .status()
        .is_ok_and(|s| s.success())
}

/// The type of what is at `path`, without following a symbolic link.
fn file_type(path: &Path) -> std::fs::FileType {
    std::fs::symlink_metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .file_type()
}

/// A backoff command whose memory is bounded (1 GiB of address space), so
/// that reading an endless file fails at once instead of taking the
/// machine's memory.
fn with_bounded_memory(args: &[&str]) -> std::process::Command {
    command_after("ulimit -v 1048576", args)
}

#[test]
fn fifos_devices_and_links_are_refused_as_report_or_metrics_files_before_anything_runs() {
    for flag in ["--report", "--metrics-file"] {
        for (what, maker) in special_files() {
            let dir = TempDir::new("special-refused");
            let (path, ran) = (dir.join("summary"), dir.join("ran"));
            assert!(make_special(maker, &path), "{what}");
            let before = file_type(&path);
            let mut run = Running::start(with_bounded_memory(&[
                flag,
                path.to_str().unwrap(),
                "--",
                "touch",
                ran.to_str().unwrap(),
            ]));
            let (status, _) = run.wait_exit(PATIENCE);
            let said = run.stderr().join("\n");
            assert_eq!(status.code(), Some(125), "{flag} {what}: {said}");
            assert!(
                said.contains(&format!("'{flag}': is {what}")) && !said.contains('\n'),
                "{flag} {what}: {said}"
            );
            assert!(!ran.exists(), "{flag} {what}: the command ran");
            assert_eq!(file_type(&path), before, "{flag} {what}: replaced");
        }
    }
}

#[test]
fn a_fifo_device_or_link_that_appears_during_the_run_is_neither_read_nor_replaced_at_exit() {
    for flag in ["--report", "--metrics-file"] {
        for (what, maker) in special_files() {
            let dir = TempDir::new("special-at-exit");
            let path = dir.join("summary");
            let mut run = Running::start(with_bounded_memory(&[
                flag,
                path.to_str().unwrap(),
                "--",
                "sh",
                "-c",
                maker,
                path.to_str().unwrap(),
            ]));
            let (status, _) = run.wait_exit(PATIENCE);
            let said = run.stderr().join("\n");
            assert_eq!(status.code(), Some(0), "{flag} {what}: {said}");
            assert!(
                said.contains(&format!(
                    "cannot write {flag} '{}': it is {what}",
                    path.display()
                )),
                "{flag} {what}: {said}"
            );
            assert!(!file_type(&path).is_file(), "{flag} {what}: replaced");
            let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
            assert_eq!(left.len(), 1, "{flag} {what}: a temporary file is left");
        }
    }
}

#[test]
#[allow(clippy::float_cmp)] // a small whole number, exact in f64
fn report_and_metrics_named_dev_stdout_or_dev_stderr_are_written_through() {
    let out = backoff([
        "-q",
        "--report",
        "/dev/stdout",
        "--metrics-file",
        "/dev/stderr",
        "--",
        "true",
    ])
    .output()
    .unwrap();
    assert!(out.status.success());
    let doc = crate::support::json_of(crate::schema::Doc::Report, &out.stdout);
    assert_eq!(doc["reason"], "success");
    let m = parse_exposition(&String::from_utf8(out.stderr).unwrap());
    assert_eq!(m[r#"backoff_runs_total{name="true"}"#], 1.0);
    assert!(file_type(Path::new("/dev/stdout")).is_symlink());
}

#[test]
fn a_previous_metrics_file_of_more_than_1_mib_is_not_backoffs_and_is_left_alone() {
    let dir = TempDir::new("metrics-large");
    let file = dir.join("m.prom");
    let content = "# not metrics\n".repeat(80_000);
    std::fs::write(&file, &content).unwrap();
    let out = backoff(["--metrics-file", file.to_str().unwrap(), "--", "true"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("holds more than 1024 KiB"), "{said}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), content);
}

#[test]
#[allow(clippy::float_cmp)] // small whole numbers, exact in f64
fn fifty_concurrent_runs_updating_one_metrics_file_lose_no_update() {
    const RUNS: usize = 50;
    let dir = TempDir::new("metrics-concurrent");
    let file = dir.join("m.prom");
    let arg = file.to_str().unwrap();
    // Each run makes two attempts: the first fails, the second succeeds.
    let runs: Vec<std::process::Child> = (0..RUNS)
        .map(|_| {
            command([
                "-q",
                "--metrics-file",
                arg,
                "--base",
                "1ms",
                "--jitter",
                "none",
                "--",
                "sh",
                "-c",
                "[ $BACKOFF_ATTEMPT = 2 ]",
            ])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn backoff")
        })
        .collect();
    let deadline = std::time::Instant::now() + PATIENCE;
    for mut run in runs {
        let status = loop {
            if let Some(status) = run.try_wait().unwrap() {
                break status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "a run did not end in time"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        let mut said = String::new();
        std::io::Read::read_to_string(&mut run.stderr.take().unwrap(), &mut said).unwrap();
        assert!(status.success() && said.is_empty(), "{status:?}: {said}");
    }
    let m = parse_exposition(&std::fs::read_to_string(&file).unwrap());
    let l = r#"{name="sh"}"#;
    assert_eq!(m[&format!("backoff_runs_total{l}")], 50.0);
    assert_eq!(m[&format!("backoff_attempts_total{l}")], 100.0);
    assert_eq!(m[&format!("backoff_retries_total{l}")], 50.0);
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "no temporary or lock file is left behind");
}

/// Holds the lock that backoff takes to update the metrics file `path`.
fn hold_metrics_lock(path: &Path) -> std::fs::File {
    std::fs::write(path, "").unwrap();
    let file = std::fs::File::open(path).unwrap();
    file.lock().unwrap();
    file
}

/// Waits for a run whose metrics update was given up because of `why`:
/// it exits 0, says so, and leaves the file (held empty) as it was.
/// Returns how long it took.
/// Waits for the run to end, as `status` says (a signal's number, or an
/// exit code), having given up the metrics file's update for `why`.
fn given_up(run: &mut Running, file: &Path, why: &str, status: Ended) -> std::time::Duration {
    let (ended, took) = run.wait_exit(PATIENCE);
    match status {
        Ended::Code(code) => assert_eq!(ended.code(), Some(code), "{:?}", run.stderr()),
        Ended::Signal(sig) => assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&ended),
            Some(sig),
            "{ended:?} {:?}",
            run.stderr()
        ),
    }
    let said = run.stderr().join("\n");
    assert!(said.contains(&format!("{why} (not updated)")), "{said}");
    assert_eq!(std::fs::read_to_string(file).unwrap(), "");
    took
}

/// How a run ended.
#[derive(Debug, Clone, Copy)]
enum Ended {
    Code(i32),
    Signal(i32),
}

#[test]
fn a_signal_ends_the_wait_for_a_metrics_files_lock_the_update_is_given_up_and_backoff_dies_by_it() {
    let dir = TempDir::new("metrics-lock-signal");
    let file = dir.join("m.prom");
    let _held = hold_metrics_lock(&file);
    let mut cmd = command(["-v", "--metrics-file", file.to_str().unwrap(), "--", "true"]);
    cmd.env("LC_ALL", "C");
    let mut run = Running::start(cmd);
    // The success line comes just before the metrics are written.
    run.wait_for("succeeded");
    run.signal(libc::SIGTERM);
    given_up(
        &mut run,
        &file,
        "interrupted while waiting for its lock",
        Ended::Signal(libc::SIGTERM),
    );
}

#[test]
fn the_wait_for_a_metrics_files_lock_is_bounded() {
    let dir = TempDir::new("metrics-lock-bounded");
    let file = dir.join("m.prom");
    let _held = hold_metrics_lock(&file);
    let mut run = Running::start(command([
        "--metrics-file",
        file.to_str().unwrap(),
        "--",
        "true",
    ]));
    let took = given_up(
        &mut run,
        &file,
        "another process has held its lock for 5s",
        Ended::Code(0),
    );
    assert!(took >= std::time::Duration::from_secs(5), "{took:?}");
}

/// backoff's high-water mark (KiB) at attempt 200 and at attempt 2,500 of
/// a run with `args` whose command fails at attempt 2,500 and only then
/// (`fail_until`: fails before it and succeeds then instead), no delay
/// between attempts.
fn peaks(dir: &TempDir, args: &[&str], fail_until: bool) -> (u64, u64) {
    let (early, late) = (dir.join("early"), dir.join("late"));
    let (before, at_last) = if fail_until { (1, 0) } else { (0, 1) };
    let script = format!(
        "case $BACKOFF_ATTEMPT in 200) {};; 2500) {}; exit {at_last};; esac; exit {before}",
        record_peak_rss(&early),
        record_peak_rss(&late)
    );
    let out = command(["-q", "--jitter", "none", "--base", "1ns", "--cap", "1ns"])
        .args(args)
        .args(["--", "sh", "-c", &script])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(at_last), "{out:?}");
    let read = |f: &Path| -> u64 { std::fs::read_to_string(f).unwrap().trim().parse().unwrap() };
    (read(&early), read(&late))
}

#[test]
fn forever_and_until_failure_runs_keep_what_they_know_of_each_attempt_bounded() {
    let dir = TempDir::new("memory");
    let report = dir.join("report.json");
    let runs = [
        peaks(&dir, &["--forever"], true),
        peaks(
            &dir,
            &["--until-failure", "--report", &report.display().to_string()],
            false,
        ),
    ];
    // 2,300 attempts more, which took some 100 bytes each.
    for (early, late) in runs {
        assert!(
            late <= early + 128,
            "{early} KiB at attempt 200, {late} KiB at attempt 2500"
        );
    }
    let doc = crate::support::report_at(&report);
    let listed = doc["attempts"].as_array().unwrap();
    assert_eq!(listed.len(), 200);
    assert_eq!(doc["attempts_omitted"], 2300);
    assert_eq!(
        (
            listed[99]["attempt"].as_u64(),
            listed[100]["attempt"].as_u64()
        ),
        (Some(100), Some(2401)),
        "the first 100 and the last 100"
    );
    assert_eq!(doc["success_count"], 2499, "the totals count every attempt");
    assert_eq!(doc["retry_count"], 0);
}

#[test]
fn a_report_on_the_stream_of_json_events_is_one_line_of_it() {
    let out = backoff([
        "--log-format",
        "json",
        "--report",
        "/dev/stderr",
        "--attempts",
        "2",
        "--base",
        "1ms",
        "--",
        "false",
    ])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let (report, events) = lines.split_last().unwrap();
    // Every line is one JSON object: the events, then the report.
    let kinds: Vec<String> = crate::support::events(events.join("\n").as_bytes())
        .iter()
        .map(|e| e["event"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds.last().map(String::as_str), Some("give_up"), "{text}");
    let report = crate::support::json_of(crate::schema::Doc::Report, report.as_bytes());
    assert_eq!(report["reason"], "exhausted");
    assert!(report.get("event").is_none(), "{report}");
    // In text, the report keeps its indented form.
    let out = backoff(["--report", "/dev/stderr", "--attempts", "1", "--", "false"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stderr).unwrap();
    assert!(text.contains("\n  \"attempts\": ["), "{text}");
}
