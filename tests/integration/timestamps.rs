//! `--timestamps` and `--name` on every text line backoff writes.

use std::time::{Duration, SystemTime};

use regex::Regex;

use crate::support::{PATIENCE, backoff, command_after, events};

/// RFC 3339 with milliseconds and an offset.
const STAMP: &str = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}[+-]\d{2}:\d{2}";

/// The words of `line`, split at spaces.
fn words(line: &str) -> Vec<&str> {
    line.split(' ').collect()
}

fn stderr_of(cmd: &mut assert_cmd::Command, code: i32) -> String {
    let out = cmd
        .timeout(PATIENCE)
        .assert()
        .code(code)
        .get_output()
        .clone();
    String::from_utf8(out.stderr).unwrap()
}

/// Every line of `err` matches `pattern`; returns the lines.
fn all_match<'a>(err: &'a str, pattern: &str) -> Vec<&'a str> {
    let re = Regex::new(pattern).unwrap();
    let lines: Vec<&str> = err.lines().collect();
    assert!(!lines.is_empty(), "no line");
    for line in &lines {
        assert!(
            re.is_match(line),
            "{line:?} does not match {pattern}: {err}"
        );
    }
    lines
}

#[test]
fn every_line_starts_with_the_time_then_the_name() {
    // stdout is /dev/full: backoff says once per attempt that it cannot
    // write there, through its one-off lines.
    let mut cmd = assert_cmd::Command::from_std(command_after(
        "exec > /dev/full",
        words("-v --timestamps --name job --until-output tick --attempts 2 --base 1ms -- sh -c")
            .into_iter()
            .chain(["echo tick; exit 1"]),
    ));
    let err = stderr_of(&mut cmd, 1);
    let lines = all_match(&err, &format!("^backoff: {STAMP} job: "));
    for part in [
        "running sh -c",
        "cannot write the command's stdout",
        "attempt 1/2 failed (exit 1)",
        "giving up after 2 attempts",
    ] {
        assert!(lines.iter().any(|l| l.contains(part)), "{part}: {err}");
    }
}

#[test]
fn annotations_carry_the_time_and_the_name_too() {
    let err = stderr_of(
        &mut backoff(words(
            "--log-format github --timestamps --name job --attempts 2 --base 1ms -- false",
        )),
        1,
    );
    // The last attempt's failure is no annotation, just a line; the folds'
    // titles carry both too, and their ends nothing.
    let err = err
        .lines()
        .filter(|l| *l != "::endgroup::")
        .collect::<Vec<_>>()
        .join("\n");
    let lines = all_match(
        &err,
        &format!("^(::(warning|error) title=job::|::group::|backoff: ){STAMP} job: "),
    );
    assert_eq!(lines.len(), 5, "{err}");
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.starts_with("::warning") || l.starts_with("::error"))
            .count(),
        2,
        "{err}"
    );
}

/// The time of the first line of `err`, with its offset.
fn first_stamp(err: &str) -> (SystemTime, String) {
    let re = Regex::new(&format!("^backoff: ({STAMP}) ")).unwrap();
    let stamp = &re.captures(err).unwrap_or_else(|| panic!("{err}"))[1];
    let (local, offset) = stamp.split_at(stamp.len() - 6);
    let local = humantime::parse_rfc3339_weak(local).unwrap();
    let sign = if offset.starts_with('-') { -1 } else { 1 };
    let seconds = sign
        * (offset[1..3].parse::<i64>().unwrap() * 3600 + offset[4..].parse::<i64>().unwrap() * 60);
    let shift = Duration::from_secs(seconds.unsigned_abs());
    let utc = if seconds >= 0 {
        local - shift
    } else {
        local + shift
    };
    (utc, offset.to_owned())
}

#[test]
fn the_time_is_local_with_the_zone_s_offset() {
    // A zone by its POSIX rule needs no time zone database; UTC is written
    // +00:00, as every local time is, not Z.
    for (tz, offset) in [
        ("UTC", "+00:00"),
        ("<+0545>-5:45", "+05:45"),
        ("<-0330>3:30", "-03:30"),
    ] {
        let before = SystemTime::now() - Duration::from_millis(1);
        let err = stderr_of(
            backoff(["--timestamps", "--attempts", "1", "--", "false"]).env("TZ", tz),
            1,
        );
        let after = SystemTime::now() + Duration::from_millis(1);
        let (utc, seen) = first_stamp(&err);
        assert_eq!(seen, offset, "TZ={tz}: {err}");
        assert!(before <= utc && utc <= after, "TZ={tz}: {err}");
    }
}

#[test]
fn backoff_timestamps_turns_them_on_and_0_or_empty_off() {
    let stamped = format!("^backoff: {STAMP} (attempt|giving up)");
    let plain = "^backoff: (attempt|giving up)";
    for (value, pattern) in [
        (Some("1"), stamped.as_str()),
        (Some("true"), &stamped),
        (Some("yes"), &stamped),
        (Some("0"), plain),
        (Some("false"), plain),
        (Some("off"), plain),
        (Some(""), plain),
        (None, plain),
    ] {
        let mut cmd = backoff(["--attempts", "1", "--", "false"]);
        if let Some(v) = value {
            cmd.env("BACKOFF_TIMESTAMPS", v);
        }
        all_match(&stderr_of(&mut cmd, 1), pattern);
    }
    // The flag wins over a variable that says off.
    let mut cmd = backoff(["--timestamps", "--attempts", "1", "--", "false"]);
    all_match(&stderr_of(cmd.env("BACKOFF_TIMESTAMPS", "0"), 1), &stamped);
}

#[test]
fn json_events_are_unchanged() {
    let keys = |timestamps: bool| {
        let mut cmd = backoff(words(
            "--log-format json --name job --attempts 2 --base 1ms",
        ));
        if timestamps {
            cmd.arg("--timestamps");
        }
        let err = stderr_of(cmd.args(["--", "false"]), 1);
        assert!(err.lines().all(|l| l.starts_with('{')), "{err}");
        events(err.as_bytes())
            .iter()
            .map(|e| {
                assert_eq!(e["name"], "job");
                let mut keys: Vec<String> = e.as_object().unwrap().keys().cloned().collect();
                keys.sort();
                keys
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(keys(true), keys(false));
}
