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

/// `faketime` (libfaketime), which sets the clock of a dynamically linked
/// program; `None`, said in one line, where it cannot: it is not installed,
/// or the binary under test is static.
pub fn faketime(test: &str) -> Option<std::path::PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("faketime"))
            .find(|p| p.is_file())
    });
    let Some(found) = found else {
        eprintln!("skipped {test}: faketime is not installed");
        return None;
    };
    if !has_interpreter(&crate::support::bin()) {
        eprintln!("skipped {test}: the binary is static, faketime cannot set its clock");
        return None;
    }
    Some(found)
}

/// Whether the ELF file at `path` names a program interpreter (is linked
/// dynamically): a `PT_INTERP` among its 64-bit program headers.
fn has_interpreter(path: &std::path::Path) -> bool {
    let elf = std::fs::read(path).unwrap();
    let word = |at: usize, len: usize| {
        let mut bytes = [0u8; 8];
        bytes[..len].copy_from_slice(&elf[at..at + len]);
        usize::try_from(u64::from_le_bytes(bytes)).unwrap()
    };
    assert_eq!(&elf[..5], b"\x7fELF\x02", "a 64-bit ELF file");
    let (phoff, phentsize, phnum) = (word(0x20, 8), word(0x36, 2), word(0x38, 2));
    (0..phnum).any(|i| word(phoff + i * phentsize, 4) == 3)
}

/// backoff under `faketime` at Unix time `at`, with `env` and `args`.
fn at_time(
    faketime: &std::path::Path,
    at: &str,
    env: &[(&str, &str)],
    args: &[&str],
) -> std::process::Output {
    let mut cmd = std::process::Command::new(faketime);
    crate::support::plain(&mut cmd)
        .arg(format!("@{at}"))
        .arg(crate::support::bin())
        .args(args);
    for key in ["FAKETIME", "TZ"] {
        cmd.env_remove(key);
    }
    cmd.envs(env.iter().copied());
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    out
}

#[test]
fn just_after_the_epoch_west_of_utc_the_lines_show_the_evening_before() {
    let Some(faketime) = faketime("the epoch test") else {
        return;
    };
    let out = at_time(
        &faketime,
        "1",
        &[("TZ", "EST5")],
        &["--timestamps", "--attempts", "1", "--", "false"],
    );
    let err = String::from_utf8(out.stderr).unwrap();
    all_match(&err, r"^backoff: 1969-12-31T19:00:0\d\.\d{3}-05:00 ");
}

#[test]
fn before_1970_json_events_and_the_report_show_the_time() {
    let Some(faketime) = faketime("the 1969 test") else {
        return;
    };
    let out = at_time(
        &faketime,
        "-86400",
        &[],
        &[
            "--log-format",
            "json",
            "--report",
            "/dev/stdout",
            "--attempts",
            "1",
            "--",
            "false",
        ],
    );
    let day = "1969-12-31T00:0";
    let all = events(&out.stderr);
    assert!(!all.is_empty());
    for e in &all {
        assert!(e["time"].as_str().unwrap().starts_with(day), "{e}");
    }
    let report = crate::support::json_of(crate::schema::Doc::Report, &out.stdout);
    for t in [
        &report["start"],
        &report["end"],
        &report["attempts"][0]["start"],
    ] {
        assert!(t.as_str().unwrap().starts_with(day), "{report}");
    }
}
