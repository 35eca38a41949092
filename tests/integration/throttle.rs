//! `backoff throttle show|reset KEY` and the throttle's options: the state
//! file as a run leaves it and as anyone may have written it (counts,
//! stale and future slots, corrupt and hostile records, files and
//! directories that are not to be trusted), and bad values.

use std::fmt::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::schema::Doc;
use crate::support::{PATIENCE, TempDir, backoff, json_of};

/// Slots in a window.
const SLOTS: u64 = 12;

/// The largest count a slot holds.
const MAX_COUNT: u64 = 1_000_000_000_000_000;

/// A throttle record of slots `width_ms` wide, each slot (its interval
/// number, requests, skips, accepts) at its place in the ring.
pub fn record(width_ms: u64, slots: &[(u64, u64, u64, u64)]) -> String {
    let mut ring = [(0, 0, 0, 0); 12];
    for &slot in slots {
        ring[usize::try_from(slot.0 % SLOTS).unwrap()] = slot;
    }
    let mut text = format!("backoff-throttle v1 width {width_ms:020} slots");
    for (index, requests, skips, accepts) in ring {
        write!(
            text,
            " {index:020} {requests:020} {skips:020} {accepts:020}"
        )
        .unwrap();
    }
    text.push('\n');
    text
}

/// The time now, in Unix milliseconds.
pub fn now_ms() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// A directory for state files, as backoff makes it (mode 0700).
fn private_dir(dir: &TempDir) -> PathBuf {
    let store = dir.join("store");
    std::fs::create_dir(&store).unwrap();
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o700)).unwrap();
    store
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `backoff throttle CMD KEY --budget-dir DIR OPTIONS`, bounded.
fn throttle(cmd: &str, key: &str, dir: &Path, options: &[&str]) -> Output {
    backoff(["throttle", cmd, key, "--budget-dir"])
        .arg(dir)
        .args(options)
        .timeout(PATIENCE)
        .output()
        .unwrap()
}

/// The text line of `backoff throttle show`, which must succeed.
fn show_text(dir: &Path, key: &str, options: &[&str]) -> String {
    let out = throttle("show", key, dir, options);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// `backoff throttle show --format json`, checked against its schema.
fn show_json(dir: &Path, key: &str, options: &[&str]) -> serde_json::Value {
    let options = [&["--format", "json"][..], options].concat();
    let out = throttle("show", key, dir, &options);
    assert!(out.status.success(), "{}", stderr(&out));
    json_of(Doc::ThrottleShow, &out.stdout)
}

/// A refusal: exit 125 and one line on stderr that contains `why`.
fn refused(out: &Output, why: &str) {
    let text = stderr(out);
    assert_eq!(out.status.code(), Some(125), "{text}");
    assert!(out.stdout.is_empty(), "{out:?}");
    assert_eq!(text.lines().count(), 1, "one line: {text}");
    assert!(text.starts_with("backoff: "), "{text}");
    assert!(text.contains(why), "{why}: {text}");
}

#[test]
fn a_fresh_key_shows_nothing_counted_and_creates_nothing_and_reset_empties_a_window() {
    let dir = TempDir::new("throttle-fresh");
    let store = dir.join("not-yet");
    let file = store.join("api.throttle");
    assert_eq!(
        show_text(&store, "api", &[]),
        format!(
            "api: 0 requests in the last 2m (0 skipped), 0 accepted; the next attempt is skipped with probability 0.000 under K 2 ({})\n",
            file.display()
        )
    );
    let shown = show_json(
        &store,
        "api",
        &["--throttle-window", "1h", "--throttle-k", "1.5"],
    );
    assert_eq!(
        shown,
        serde_json::json!({
            "key": "api", "requests": 0, "skips": 0, "accepts": 0, "probability": 0.0,
            "k": 1.5, "window_seconds": 3600.0, "window_from": "options",
            "store": file.display().to_string(),
        })
    );
    assert!(!store.exists(), "show made the directory");
    // Nothing to reset: said, and nothing made.
    let out = throttle("reset", "api", &store, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(out.stdout.is_empty(), "{out:?}");
    assert_eq!(
        stderr(&out),
        "backoff: throttle 'api': no state to reset (a window without one is empty)\n"
    );
    assert!(!store.exists(), "reset made the directory");
    // A run counts its attempt; a reset empties the window, and says what
    // it held.
    let mut run = backoff(["--throttle", "api", "--budget-dir"]);
    run.arg(&store).args(["--", "true"]).assert().success();
    let out = throttle("reset", "api", &store, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "backoff: throttle 'api' reset to an empty window; it held 1 request in the last 2m (0 skipped), 1 accepted\n"
    );
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&store), 0o700);
    assert_eq!(mode(&file), 0o600);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), record(0, &[]));
    assert_eq!(show_json(&store, "api", &[])["requests"], 0);
}

/// The probability `backoff throttle show` computes, with the same
/// operations: max(0, (requests - K × accepts) / (requests + 1)).
fn probability(requests: u64, accepts: u64, k: f64) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let (r, a) = (requests as f64, accepts as f64);
    ((r - k * a) / (r + 1.0)).max(0.0)
}

#[test]
fn show_counts_the_live_slots_of_a_state_written_by_hand() {
    let dir = TempDir::new("throttle-hand");
    let store = private_dir(&dir);
    let file = store.join("api.throttle");
    // Slots of 10s, a window of 2m. The current slot and two older ones
    // count; a slot older than the window and one in the future (a clock
    // stepped back) do not. A slot boundary may pass while backoff runs:
    // then the test is done again.
    let deadline = Instant::now() + PATIENCE;
    let (text, json, fast) = loop {
        let n = now_ms() / 10_000;
        let slots = [
            (n, 50, 10, 5),
            (n - 3, 30, 0, 10),
            (n - 11, 7, 1, 0),
            (n - 13, 1000, 0, 0),
            (n + 2, 500, 500, 0),
        ];
        std::fs::write(&file, record(10_000, &slots)).unwrap();
        let text = show_text(&store, "api", &[]);
        let json = show_json(
            &store,
            "api",
            &["--throttle-k", "1.5", "--throttle-window", "1h"],
        );
        let fast = show_json(&store, "api", &["--throttle-k", "6"]);
        if now_ms() / 10_000 == n {
            break (text, json, fast);
        }
        assert!(Instant::now() < deadline, "a slot boundary every time");
    };
    // 87 requests, 11 of them skipped, 15 accepted: (87 - 2 × 15) / 88.
    assert_eq!(
        text,
        format!(
            "api: 87 requests in the last 2m (11 skipped), 15 accepted; the next attempt is skipped with probability 0.648 under K 2 ({})\n",
            file.display()
        )
    );
    assert_eq!(format!("{:.3}", probability(87, 15, 2.0)), "0.648");
    // The state's window stands while a slot of it counts, whatever
    // --throttle-window says.
    assert_eq!(
        (
            &json["requests"],
            &json["skips"],
            &json["accepts"],
            &json["window_seconds"],
            &json["window_from"],
        ),
        (
            &87.into(),
            &11.into(),
            &15.into(),
            &120.0.into(),
            &"state".into()
        ),
        "{json}"
    );
    assert_eq!(json["probability"], probability(87, 15, 1.5), "{json}");
    assert_eq!(json["k"], 1.5);
    // A backend that accepts more than one attempt in K: nothing skipped.
    assert_eq!(fast["probability"], 0.0, "{fast}");
    // show changed nothing.
    assert_eq!(
        std::fs::read_to_string(&file).unwrap().len(),
        record(0, &[]).len()
    );
}

#[test]
fn a_state_whose_slots_are_all_past_counts_nothing_in_the_window_of_the_options() {
    let dir = TempDir::new("throttle-stale");
    let store = private_dir(&dir);
    // Slots of a second, an hour ago; and slots far in the future.
    let n = now_ms() / 1000;
    let old = record(1000, &[(n - 3600, 40, 20, 1), (n - 3601, 40, 20, 1)]);
    std::fs::write(store.join("old.throttle"), old).unwrap();
    let shown = show_json(&store, "old", &["--throttle-window", "30s"]);
    assert_eq!(
        (
            &shown["requests"],
            &shown["window_seconds"],
            &shown["window_from"]
        ),
        (&0.into(), &30.0.into(), &"options".into()),
        "{shown}"
    );
    let future = record(1000, &[(n + 3600, 40, 20, 1)]);
    std::fs::write(store.join("old.throttle"), future).unwrap();
    let shown = show_json(&store, "old", &[]);
    assert_eq!(
        (
            &shown["requests"],
            &shown["probability"],
            &shown["window_from"]
        ),
        (&0.into(), &0.0.into(), &"options".into()),
        "{shown}"
    );
    // A window a twelfth of which is not whole: the width of its slots.
    let shown = show_json(&store, "old", &["--throttle-window", "1s"]);
    assert_eq!(shown["window_seconds"], 0.996, "{shown}");
}

#[test]
fn corrupt_and_hostile_records_are_refused_in_one_line_and_reset_repairs_them() {
    let dir = TempDir::new("throttle-corrupt");
    let store = private_dir(&dir);
    let file = store.join("k.throttle");
    let n = now_ms() / 10_000;
    let good = record(10_000, &[(n, 3, 1, 1), (n - 1, 2, 0, 0)]);
    let digit = good.find(" 000").unwrap() + 3;
    let bad: Vec<(&str, Vec<u8>)> = vec![
        ("a line that is no record", b"garbage\n".to_vec()),
        ("one byte", b"x".to_vec()),
        (
            "a record cut short",
            good.as_bytes()[..good.len() - 1].to_vec(),
        ),
        ("a record and more", format!("{good}x").into_bytes()),
        ("a huge file", vec![b'9'; 100_000]),
        ("a letter for a digit", {
            let mut b = good.clone().into_bytes();
            b[digit] = b'x';
            b
        }),
        ("a NUL for a digit", {
            let mut b = good.clone().into_bytes();
            b[digit] = 0;
            b
        }),
        ("another version", good.replace(" v1 ", " v9 ").into_bytes()),
        (
            "a slot out of its place in the ring",
            good.replacen(&format!(" {:020} ", n - 1), &format!(" {:020} ", n - 2), 1)
                .into_bytes(),
        ),
        (
            "a count past the largest",
            record(10_000, &[(n, MAX_COUNT + 1, 0, 0)]).into_bytes(),
        ),
        (
            "accepts past the largest",
            record(10_000, &[(n, 1, 0, MAX_COUNT + 1)]).into_bytes(),
        ),
        (
            "more skips than requests",
            record(10_000, &[(n, 3, 4, 0)]).into_bytes(),
        ),
        (
            "an interval number past the largest",
            record(10_000, &[(MAX_COUNT + SLOTS, 1, 0, 0)]).into_bytes(),
        ),
        (
            "a number past 64 bits",
            good.replacen(" 00000000000000000003 ", " 99999999999999999999 ", 1)
                .into_bytes(),
        ),
        ("slots of no width", record(0, &[(n, 1, 0, 0)]).into_bytes()),
        (
            "slots wider than a twelfth of 30 days",
            record(216_000_001, &[(1, 1, 0, 0)]).into_bytes(),
        ),
    ];
    for (what, bytes) in &bad {
        assert_ne!(bytes.as_slice(), good.as_bytes(), "{what}: nothing changed");
        std::fs::write(&file, bytes).unwrap();
        for format in ["text", "json"] {
            let out = throttle("show", "k", &store, &["--format", format]);
            refused(&out, "is corrupt");
            // A record's length is checked first.
            let why = match bytes.len() {
                1061 => "not a throttle state".to_owned(),
                1 => "1 byte, where a throttle state has 1061".to_owned(),
                n => format!("{n} bytes, where a throttle state has 1061"),
            };
            assert_eq!(
                stderr(&out),
                format!(
                    "backoff: adaptive throttle 'k': '{}' is corrupt ({why}); 'backoff throttle reset k' with the same --budget-dir repairs it\n",
                    file.display()
                ),
                "{what}"
            );
        }
        assert_eq!(&std::fs::read(&file).unwrap(), bytes, "{what}: show wrote");
        let out = throttle("reset", "k", &store, &[]);
        assert!(out.status.success(), "{what}: {}", stderr(&out));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), record(0, &[]));
        assert_eq!(show_json(&store, "k", &[])["requests"], 0, "{what}");
    }
    // The good record, for comparison, is read.
    std::fs::write(&file, &good).unwrap();
    assert_eq!(show_json(&store, "k", &[])["requests"], 5);
}

#[test]
fn a_symlink_a_fifo_or_a_file_others_may_write_is_refused_and_left_alone() {
    let dir = TempDir::new("throttle-hostile");
    let store = private_dir(&dir);
    // A symbolic link is never followed, even by reset.
    let target = dir.join("precious");
    std::fs::write(&target, "do not touch\n").unwrap();
    std::os::unix::fs::symlink(&target, store.join("link.throttle")).unwrap();
    for cmd in ["show", "reset"] {
        refused(&throttle(cmd, "link", &store, &[]), "is a symbolic link");
    }
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "do not touch\n");
    let link = std::fs::symlink_metadata(store.join("link.throttle")).unwrap();
    assert!(link.file_type().is_symlink());
    // A FIFO is neither waited on nor replaced.
    let fifo = store.join("fifo.throttle");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.unwrap().success());
    for cmd in ["show", "reset"] {
        refused(&throttle(cmd, "fifo", &store, &[]), "is not a regular file");
    }
    let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&kind));
    // A state others may write is no one's to trust, until its owner
    // fixes its mode.
    let shared = store.join("shared.throttle");
    let n = now_ms() / 10_000;
    std::fs::write(&shared, record(10_000, &[(n, 9, 0, 0)])).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o666)).unwrap();
    for cmd in ["show", "reset"] {
        refused(
            &throttle(cmd, "shared", &store, &[]),
            &format!("'{}' is writable by other users", shared.display()),
        );
    }
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(show_json(&store, "shared", &[])["window_from"], "state");
}

#[test]
fn a_directory_others_may_write_or_a_link_to_one_is_refused_and_nothing_is_made_there() {
    let dir = TempDir::new("throttle-dir");
    let open = dir.join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let link = dir.join("link");
    std::os::unix::fs::symlink(&open, &link).unwrap();
    for (store, why) in [
        (&open, "is writable by other users"),
        (&link, "is not a directory (symbolic links are refused)"),
    ] {
        for cmd in ["show", "reset"] {
            let out = throttle(cmd, "k", store, &[]);
            refused(&out, why);
            assert!(
                stderr(&out).starts_with("backoff: adaptive throttle 'k': '"),
                "{}",
                stderr(&out)
            );
        }
    }
    assert!(!open.join("k.throttle").exists(), "nothing written there");
}

#[test]
fn a_held_lock_makes_show_and_reset_wait_at_most_the_timeout() {
    let dir = TempDir::new("throttle-locked");
    let store = private_dir(&dir);
    let file = store.join("held.throttle");
    std::fs::write(&file, record(0, &[])).unwrap();
    let mut holder = crate::budget::hold_lock(&file);
    for cmd in ["show", "reset"] {
        let started = Instant::now();
        let out = throttle(cmd, "held", &store, &["--budget-store-timeout", "200ms"]);
        refused(&out, "is locked by another process: timed out after 200ms");
        assert!(started.elapsed() >= Duration::from_millis(200));
    }
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert_eq!(show_json(&store, "held", &[])["requests"], 0);
}

#[test]
fn bad_throttle_options_are_refused_in_one_line() {
    let dir = TempDir::new("throttle-options");
    let store = dir.path().display().to_string();
    for (args, message) in [
        (
            &["--throttle-k", "0.5"][..],
            "invalid value '0.5' for '--throttle-k': must be at least 1",
        ),
        (&["--throttle-k", "1.2345"], "at most three decimals"),
        (&["--throttle-k", "1001"], "'--throttle-k': at most 1000"),
        (&["--throttle-k", "2e1"], "must be a decimal number"),
        (&["--throttle-k", "-3"], "must be a decimal number"),
        (
            &["--throttle-window", "10ms"],
            "invalid value '10ms' for '--throttle-window': must be from 1s to 30d",
        ),
        (&["--throttle-window", "31d"], "must be from 1s to 30d"),
        (&["--throttle-window", "2"], "a duration needs a unit"),
        (&["--throttle", "../k"], "'--throttle'"),
        (&["--throttle", ""], "--throttle"),
        (&["--throttle"], "--throttle needs a value"),
    ] {
        let tail = ["--budget-dir", &store, "--", "true"];
        let mut runs = vec![];
        if args[0] == "--throttle" {
            runs.push([args, &tail].concat());
        } else {
            runs.push([&["--throttle", "k"][..], args, &tail].concat());
            // `throttle show` takes the throttle's limits too.
            runs.push([&["throttle", "show", "k"][..], args, &tail[..2]].concat());
        }
        for run in runs {
            let out = backoff(&run).timeout(PATIENCE).output().unwrap();
            refused(&out, message);
        }
    }
    for key in ["../k", ".hidden", "a b", "a/b"] {
        for cmd in ["show", "reset"] {
            let out = throttle(cmd, key, dir.path(), &[]);
            refused(&out, "invalid value");
        }
    }
    // --throttle-window and --throttle-k without --throttle change
    // nothing, as --breaker-failures without --breaker.
    let out = backoff(["--throttle-window", "5m", "--throttle-k", "3", "--", "true"])
        .timeout(PATIENCE)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
}

#[test]
fn a_throttle_in_redis_follows_the_fail_mode_when_the_server_is_down() {
    // No server listens on port 1.
    let url = "redis://127.0.0.1:1";
    for (fail, code, ran) in [("open", 0, "ran\n"), ("closed", 75, "")] {
        let out = backoff(["--throttle", "k", "--budget-store", url])
            .args([
                "--budget-store-fail",
                fail,
                "--max-retries",
                "1",
                "--base",
                "1ms",
            ])
            .args(["--", "echo", "ran"])
            .timeout(PATIENCE)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{fail}: {}", stderr(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout), ran, "{fail}");
        let text = stderr(&out);
        assert_eq!(
            text.matches("adaptive throttle 'k' store redis://127.0.0.1:1 unavailable (")
                .count(),
            1,
            "{fail}: said once: {text}"
        );
    }
    let out = backoff(["throttle", "show", "k", "--budget-store", url])
        .timeout(PATIENCE)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125), "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
}
