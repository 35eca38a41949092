//! Presets that apply themselves, and protections that cannot apply said
//! at the start: real curl, wget and git against a local HTTP server that
//! counts the requests it gets.

use std::process::Output;

use serde_json::Value;

use crate::http::{Reply, Server};
use crate::schema::Doc;
use crate::support::{TempDir, command, events, json_of, report_at};

/// Runs backoff with `args`; its output.
fn run(args: &[&str]) -> Output {
    command(args).output().unwrap()
}

/// Runs backoff with its `options` (words split at spaces), then `--` and
/// `program`; its output.
fn run_on(options: &str, program: &[&str]) -> Output {
    command(options.split_whitespace())
        .arg("--")
        .args(program)
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The lines of `err` that say `needle`.
fn saying<'a>(err: &'a str, needle: &str) -> Vec<&'a str> {
    err.lines().filter(|l| l.contains(needle)).collect()
}

#[test]
fn a_bare_curl_runs_under_its_preset_however_the_program_is_given() {
    let dir = TempDir::new("bare-curl");
    let real = which("curl");
    std::os::unix::fs::symlink(&real, dir.join("curl")).unwrap();
    for program in ["curl", real.as_str(), "./curl"] {
        // A 404 is not retried: one request, curl's exit 22.
        let server = Server::start(vec![Reply::new(404, "no\n")]);
        let out = command(["--base", "1ms", "--", program, "-fsS", &server.url])
            .current_dir(dir.path())
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(22), "{program}: {err}");
        assert_eq!(server.requests().len(), 1, "{program}: {err}");
        assert!(err.contains("HTTP 404 is not worth retrying"), "{err}");
        // A 503 is, and only the last body reaches stdout.
        let server = Server::start(vec![
            Reply::new(503, "busy\n"),
            Reply::new(503, "busy\n"),
            Reply::new(200, "the body\n"),
        ]);
        let out = command(["--base", "1ms", "--", program, "-sS", "-f", &server.url])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{program}: {}", stderr(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "the body\n");
        assert_eq!(server.requests().len(), 3);
    }
}

/// The path of `program` on PATH.
fn which(program: &str) -> String {
    let out = std::process::Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[test]
fn preset_none_retries_the_404_as_any_failure() {
    let server = Server::start(vec![Reply::new(404, "no\n")]);
    let out = run_on(
        "--preset none --attempts 3 --base 1ms",
        &["curl", "-fsS", &server.url],
    );
    assert_eq!(out.status.code(), Some(22), "{}", stderr(&out));
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn a_bare_git_stops_on_what_does_not_heal() {
    let dir = TempDir::new("bare-git");
    let server = Server::start(vec![Reply::new(404, "no\n")]);
    let out = command(["--base", "1ms", "--", "git", "clone", "-q", &server.url])
        .arg(dir.join("c"))
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(128), "{err}");
    assert!(err.contains("not transient for --preset git"), "{err}");
    assert_eq!(server.requests().len(), 1, "{err}");
}

#[test]
fn curls_own_retries_multiply_backoffs_and_the_warning_gives_the_product() {
    let server = Server::start(vec![Reply::new(503, "busy\n")]);
    let out = run_on(
        "--attempts 2 --base 1ms",
        &["curl", "-fsS", "--retry", "1", &server.url],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(22), "{err}");
    let warned = saying(&err, "curl's own retries");
    assert_eq!(
        warned,
        [
            "backoff: curl's own retries run inside backoff's: up to 4 requests: 2 attempts × curl's 2 (--retry 1); drop --retry, or make backoff's --attempts 1"
        ],
        "{err}"
    );
    assert_eq!(server.requests().len(), 4, "{err}");
    // Written as curl refuses it, it is no retry of curl's.
    let out = run_on("--attempts 2 --base 1ms", &["curl", "-fsS", "--retry=1"]);
    assert!(saying(&stderr(&out), "own retries").is_empty());
    // --until-failure retries no failure: curl's retries multiply nothing.
    let server = Server::start(vec![Reply::new(200, "ok\n"), Reply::new(503, "busy\n")]);
    let out = run_on(
        "--until-failure 2 --base 1ms",
        &[
            "curl",
            "-fsS",
            "--retry",
            "1",
            "--retry-delay",
            "0",
            &server.url,
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(22), "{err}");
    assert!(saying(&err, "own retries").is_empty(), "{err}");
    assert_eq!(server.requests().len(), 3, "{err}");
}

#[test]
fn the_wget_preset_makes_one_request_an_attempt_and_keeps_tries_it_is_given() {
    let server = Server::start(vec![Reply::dropped()]);
    let wget = ["wget", "-q", "-O", "/dev/null"];
    let out = command(["-v", "--attempts", "3", "--base", "1ms", "--"])
        .args(wget)
        .arg(&server.url)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert_eq!(server.requests().len(), 3, "{err}");
    assert!(
        err.contains("backoff: preset wget (from the program's name; --preset none turns it off); wget gets --tries=1 before its own arguments"),
        "{err}"
    );
    assert!(saying(&err, "own retries").is_empty(), "{err}");
    // The user's own number is kept, and said with its product.
    let server = Server::start(vec![Reply::dropped()]);
    let out = command(["--attempts", "2", "--base", "1ms", "--"])
        .args(wget)
        .args(["--tries=3", "--waitretry=0"])
        .arg(&server.url)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert_eq!(
        saying(&err, "own retries"),
        [
            "backoff: wget's own retries run inside backoff's: up to 6 requests: 2 attempts × wget's 3 (--tries=3); give wget --tries=1, or make backoff's --attempts 1"
        ],
        "{err}"
    );
    assert_eq!(server.requests().len(), 6, "{err}");
    // Without the preset, wget's own default of 20 is said.
    let out = command(["--preset", "none", "--attempts", "2", "--"])
        .args(["wget", "-q", "-S", "-O", "/dev/null", "nope://x"])
        .output()
        .unwrap();
    assert!(
        stderr(&out).contains("up to 40 requests: 2 attempts × wget's 20 (its default --tries=20)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_quiet_wget_is_told_it_hides_the_status_and_nv_shows_it() {
    // wget exits 8 for a 404 and a 503 alike; -q hides the line that
    // tells them apart, so a 404 is retried, and said to be.
    let server = Server::start(vec![Reply::new(404, "no\n")]);
    let out = command(["--attempts", "2", "--base", "1ms", "--"])
        .args(["wget", "-q", "-O", "/dev/null", &server.url])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(8), "{err}");
    assert_eq!(saying(&err, "use -nv instead of -q").len(), 1, "{err}");
    assert_eq!(server.requests().len(), 2, "{err}");
    // With -nv, wget's "ERROR 404" line stops the run at once.
    let server = Server::start(vec![Reply::new(404, "no\n")]);
    let out = command(["--attempts", "2", "--base", "1ms", "--"])
        .args(["wget", "-nv", "-O", "/dev/null", &server.url])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(8), "{err}");
    assert!(saying(&err, "instead of -q").is_empty(), "{err}");
    assert_eq!(server.requests().len(), 1, "{err}");
}

#[test]
fn a_preset_given_through_a_shell_says_what_it_cannot_do_and_does_not() {
    // Through a shell, the guard of a POST is off: it is sent again after
    // an ambiguous 500, as the warning says.
    let server = Server::start(vec![Reply::new(500, "oops\n")]);
    let script = format!("curl -fsS -d x=1 {}", server.url);
    let out = run_on(
        "--preset curl --attempts 2 --base 1ms",
        &["sh", "-c", &script],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(22), "{err}");
    assert_eq!(
        saying(&err, "cannot read"),
        [
            "backoff: --preset curl cannot read the arguments of 'sh', only curl's: its rules on exit codes and HTTP statuses apply, but it cannot guard against sending a POST again, read the response headers curl prints only when asked (Retry-After, rate limits), nor hold the body back; run curl directly: backoff -- curl ARGS..."
        ],
        "{err}"
    );
    assert_eq!(server.requests().len(), 2, "{err}");
    // Its exit-code rules still apply: a 404 stops at once.
    let server = Server::start(vec![Reply::new(404, "no\n")]);
    let script = format!("curl -fsS {}", server.url);
    let out = run_on("--preset curl --base 1ms", &["sh", "-c", &script]);
    assert_eq!(out.status.code(), Some(22));
    assert_eq!(server.requests().len(), 1);
    // Run directly, the guard holds: nothing is said, and the POST is not
    // sent again.
    let server = Server::start(vec![Reply::new(500, "oops\n")]);
    let out = run_on(
        "--preset curl --attempts 2 --base 1ms",
        &["curl", "-fsS", "-d", "x=1", &server.url],
    );
    assert!(saying(&stderr(&out), "cannot read").is_empty());
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn retry_after_with_a_curl_that_prints_no_headers_is_said_and_the_fix_works() {
    let script = || {
        vec![
            Reply::new(503, "busy\n").header("Retry-After", "1"),
            Reply::new(200, "ok\n"),
        ]
    };
    let server = Server::start(script());
    let out = run_on(
        "--preset none --retry-after --base 1ms",
        &["curl", "-fsS", &server.url],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(
        saying(&err, "--retry-after:"),
        [
            "backoff: --retry-after: curl prints no response headers without -i, -v or -D, so a server's Retry-After and rate limits go unseen; add -D /dev/stderr"
        ],
        "{err}"
    );
    // Unseen indeed: the retry came after the policy's delay.
    assert!(!err.contains("Retry-After from the server"), "{err}");
    // Followed literally, the hint is seen.
    let server = Server::start(script());
    let out = run_on(
        "--preset none --retry-after --base 1ms",
        &["curl", "-fsS", "-D", "/dev/stderr", &server.url],
    );
    let err = stderr(&out);
    assert!(saying(&err, "--retry-after:").is_empty(), "{err}");
    assert!(err.contains("(Retry-After from the server)"), "{err}");
}

#[test]
fn the_warnings_are_said_once_even_with_q_and_are_json_warning_events() {
    let server = Server::start(vec![Reply::new(503, "busy\n")]);
    let args = [
        "--attempts",
        "2",
        "--base",
        "1ms",
        "--retry-after",
        "--",
        "wget",
        "-q",
        "-O",
        "/dev/null",
        "--tries=2",
        "--waitretry=0",
        &server.url,
    ];
    let ours = |l: &&str| l.contains("without -S") || l.contains("own retries");
    let text = stderr(&run(&args));
    let lines: Vec<&str> = text.lines().filter(ours).collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].contains("--retry-after: wget prints no response headers without -S"),
        "{text}"
    );
    assert!(
        lines[1].contains("wget's own retries run inside backoff's: up to 4 requests"),
        "{text}"
    );
    // Unasked for a server's hint, the preset that applied itself says
    // nothing of the headers wget does not print.
    let unasked: Vec<&str> = args
        .iter()
        .copied()
        .filter(|a| *a != "--retry-after")
        .collect();
    let text = stderr(&run(&unasked));
    assert_eq!(text.lines().filter(ours).count(), 1, "{text}");
    assert!(!text.contains("without -S"), "{text}");
    // No output mode hides a protection that cannot apply.
    let quiet = stderr(&run(&[&["-q"][..], &args].concat()));
    assert_eq!(quiet.lines().filter(ours).count(), 2, "{quiet}");
    let out = run(&[&["--log-format", "json"][..], &args].concat());
    let events = events(&out.stderr);
    let said: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "warning")
        .filter_map(|e| e["message"].as_str())
        .filter(ours)
        .collect();
    let plain: Vec<&str> = lines
        .iter()
        .map(|l| l.strip_prefix("backoff: ").unwrap())
        .collect();
    assert_eq!(said, plain);
    // Before the run starts.
    let first_start = events.iter().position(|e| e["event"] == "start");
    let last_warning = events.iter().rposition(|e| e["event"] == "warning");
    assert!(last_warning < first_start, "{events:?}");
}

#[test]
fn verbose_the_start_event_and_the_report_name_the_preset_and_where_it_came_from() {
    let dir = TempDir::new("preset-report");
    let server = Server::start(vec![Reply::new(200, "ok\n")]);
    let cases: [(&[&str], &str, Value, Value); 4] = [
        (
            &["curl", "-fsS", "-D", "/dev/stderr"],
            "backoff: preset curl (from the program's name; --preset none turns it off)",
            "curl".into(),
            "program".into(),
        ),
        (
            &[
                "--preset",
                "curl",
                "--",
                "curl",
                "-fsS",
                "-D",
                "/dev/stderr",
            ],
            "backoff: preset curl (from --preset)",
            "curl".into(),
            "option".into(),
        ),
        (
            &["--preset", "none", "--", "curl", "-fsS"],
            "",
            Value::Null,
            Value::Null,
        ),
        (
            &["sh", "-c", "curl -fsS \"$0\""],
            "",
            Value::Null,
            Value::Null,
        ),
    ];
    for (words, line, preset, from) in cases {
        let report = dir.join("report.json");
        let mut args = vec!["-v", "--report", report.to_str().unwrap()];
        if words[0] != "--preset" {
            args.push("--");
        }
        args.extend_from_slice(words);
        args.push(&server.url);
        let err = stderr(&run(&args));
        let said = saying(&err, "backoff: preset");
        if line.is_empty() {
            assert!(said.is_empty(), "{words:?}: {err}");
        } else {
            assert_eq!(said, [line], "{words:?}: {err}");
        }
        let doc = report_at(&report);
        assert_eq!((&doc["preset"], &doc["preset_from"]), (&preset, &from));
        args.splice(0..1, ["--log-format", "json"]);
        let out = run(&args);
        // curl's headers on stderr (-D /dev/stderr) are no events.
        let start = stderr(&out)
            .lines()
            .filter(|l| l.starts_with('{'))
            .map(|l| json_of(Doc::Event, l.as_bytes()))
            .find(|e| e["event"] == "start")
            .unwrap();
        assert_eq!((&start["preset"], &start["preset_from"]), (&preset, &from));
    }
}

#[test]
fn under_github_actions_the_start_warnings_are_annotations() {
    let out = command(["--log-format", "github", "--attempts", "2", "--base", "1ms"])
        .args(["--name", "fetch: eu", "--"])
        .args(["curl", "-sS", "--retry", "1", "file:///nonexistent"])
        .output()
        .unwrap();
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines[0].starts_with("::warning title=fetch%3A eu::fetch: eu: preset curl (from the program's name): curl runs without -f")
            && lines[1].starts_with("::warning title=fetch%3A eu::fetch: eu: curl's own retries run inside backoff's"),
        "{err}"
    );
}
