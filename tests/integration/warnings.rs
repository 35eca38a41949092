//! With `--log-format json`, everything backoff writes on stderr once its
//! configuration is known is a JSON object, its own warnings included
//! (`{"event": "warning", "message": …}`), and a command that cannot start
//! ends the stream with `give_up`. Errors before that (bad flags) stay
//! plain lines.

use std::os::unix::fs::PermissionsExt;

use serde_json::Value;

use crate::fleet::free_port;
use crate::support::{TempDir, command, events};

/// The events of a json run of `args`, each line of stderr parsed (a line
/// that is not JSON fails the test).
fn json_run(args: &[&str]) -> (Option<i32>, Vec<Value>) {
    let out = command(["--log-format", "json", "--name", "job"])
        .args(args)
        .output()
        .unwrap();
    (out.status.code(), events(&out.stderr))
}

/// The messages of the warning events, each with the fields every event
/// has.
fn warnings(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["event"] == "warning")
        .map(|e| {
            assert_eq!(e["schema"], 1, "{e}");
            assert_eq!(e["name"], "job", "{e}");
            assert!(e["time"].as_str().is_some_and(|t| t.ends_with('Z')), "{e}");
            e["message"].as_str().unwrap().to_owned()
        })
        .collect()
}

#[test]
fn a_store_that_is_down_is_a_warning_event() {
    let url = format!("redis://127.0.0.1:{}", free_port());
    let (code, events) = json_run(&[
        "--budget",
        "k",
        "--budget-store",
        &url,
        "--base",
        "1ms",
        "--max-retries",
        "1",
        "--",
        "false",
    ]);
    assert_eq!(code, Some(1));
    let said = warnings(&events);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].starts_with(&format!("retry budget store {url} unavailable (")),
        "{said:?}"
    );
    assert_eq!(events.last().unwrap()["event"], "give_up");
}

#[test]
fn a_corrupt_state_file_is_a_warning_event() {
    let dir = TempDir::new("warning-corrupt");
    let store = dir.join("store");
    std::fs::create_dir(&store).unwrap();
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(store.join("k.budget"), "ten tokens, trust me\n").unwrap();
    let (code, events) = json_run(&[
        "--budget",
        "k",
        "--budget-dir",
        store.to_str().unwrap(),
        "--base",
        "1ms",
        "--max-retries",
        "1",
        "--",
        "false",
    ]);
    assert_eq!(code, Some(1));
    let said = warnings(&events);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains("is corrupt") && said[0].ends_with("; starting a fresh bucket"),
        "{said:?}"
    );
}

#[test]
fn an_unwritable_metrics_file_is_a_warning_event() {
    // No file can be made in /proc, not even by root.
    let path = std::path::Path::new("/proc/backoff-test-metrics.prom");
    let (code, events) = json_run(&["--metrics-file", path.to_str().unwrap(), "--", "true"]);
    assert_eq!(code, Some(0));
    let said = warnings(&events);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].starts_with(&format!(
            "cannot write --metrics-file '{}': ",
            path.display()
        )),
        "{said:?}"
    );
}

#[test]
fn a_command_that_cannot_start_ends_the_stream_with_give_up() {
    let (code, events) = json_run(&["--", "/nonexistent/backoff-test-program"]);
    assert_eq!(code, Some(127));
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["start", "attempt_start", "attempt_end", "give_up"],
        "{events:?}"
    );
    let end = events.last().unwrap();
    assert_eq!(end["reason"], "stopped");
    assert_eq!(end["attempts"], 1);
    assert_eq!(end["outcome"]["kind"], "not_found");
    assert!(end["total_seconds"].as_f64().is_some(), "{end}");
}

#[test]
fn a_bad_flag_is_a_plain_line_even_in_json() {
    let out = command(["--log-format", "json", "--jitter", "bogus", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("backoff: invalid value 'bogus' for '--jitter'"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}
