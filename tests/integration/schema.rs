//! The JSON Schemas of `docs/schema/`: every JSON line and document the
//! integration tests read from backoff is checked against them (through
//! `support`), and here a set of runs gives every kind of event, the run
//! report and each subcommand's JSON, and wrong shapes are refused.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::OnceLock;

use serde_json::{Value, json};

use crate::support::{PATIENCE, Running, TempDir, backoff, command, events, json_of, report_at};

/// What a JSON document of backoff's is, and so which schema it follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Doc {
    /// One line of `--log-format json`.
    Event,
    /// The `--report` file.
    Report,
    /// `backoff schedule --format json`.
    Schedule,
    /// `backoff simulate --format json`.
    Simulate,
    /// `backoff budget show KEY --format json`.
    BudgetShow,
    /// `backoff breaker show KEY --format json`.
    BreakerShow,
    /// `backoff throttle show KEY --format json`.
    ThrottleShow,
    /// `backoff budget reset KEY --format json`.
    BudgetReset,
    /// `backoff breaker reset KEY --format json`.
    BreakerReset,
    /// `backoff throttle reset KEY --format json`.
    ThrottleReset,
    /// `backoff lock show KEY --format json`.
    LockShow,
    /// `backoff lock reset KEY --format json`.
    LockReset,
    /// `backoff once show KEY --format json`.
    OnceShow,
    /// `backoff once reset KEY --format json`.
    OnceReset,
}

impl Doc {
    const ALL: [Doc; 14] = [
        Doc::Event,
        Doc::Report,
        Doc::Schedule,
        Doc::Simulate,
        Doc::BudgetShow,
        Doc::BreakerShow,
        Doc::ThrottleShow,
        Doc::BudgetReset,
        Doc::BreakerReset,
        Doc::ThrottleReset,
        Doc::LockShow,
        Doc::LockReset,
        Doc::OnceShow,
        Doc::OnceReset,
    ];

    fn file(self) -> &'static str {
        match self {
            Doc::Event => "events.json",
            Doc::Report => "report.json",
            Doc::Schedule => "schedule.json",
            Doc::Simulate => "simulate.json",
            Doc::BudgetShow => "budget-show.json",
            Doc::BreakerShow => "breaker-show.json",
            Doc::ThrottleShow => "throttle-show.json",
            Doc::BudgetReset => "budget-reset.json",
            Doc::BreakerReset => "breaker-reset.json",
            Doc::ThrottleReset => "throttle-reset.json",
            Doc::LockShow => "lock-show.json",
            Doc::LockReset => "lock-reset.json",
            Doc::OnceShow => "once-show.json",
            Doc::OnceReset => "once-reset.json",
        }
    }
}

/// The schemas' directory.
fn dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/schema"))
}

/// The `$id` of schema `file`: where docs.rs shows it in this release.
fn id_of(file: &str) -> String {
    format!(
        "https://docs.rs/crate/backoff-cli/{}/source/docs/schema/{file}",
        env!("CARGO_PKG_VERSION")
    )
}

/// The schemas, compiled once for the whole test binary (compiling checks
/// each against the draft 2020-12 meta-schema). Each is given by its
/// `$id`, as a validator given them all finds them: `defs.json` is found
/// where the others' references lead through their `$id`, not read from
/// beside them.
fn compiled() -> &'static (boon::Schemas, Vec<boon::SchemaIndex>) {
    static SCHEMAS: OnceLock<(boon::Schemas, Vec<boon::SchemaIndex>)> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        let mut schemas = boon::Schemas::new();
        let mut compiler = boon::Compiler::new();
        compiler.set_default_draft(boon::Draft::V2020_12);
        let files = Doc::ALL.iter().map(|d| d.file()).chain(["defs.json"]);
        for file in files {
            let text = std::fs::read_to_string(dir().join(file)).unwrap();
            let schema: Value = serde_json::from_str(&text).unwrap();
            compiler.add_resource(&id_of(file), schema).unwrap();
        }
        let index = Doc::ALL
            .iter()
            .map(|d| {
                compiler
                    .compile(&id_of(d.file()), &mut schemas)
                    .unwrap_or_else(|e| panic!("docs/schema/{}: {e:#}", d.file()))
            })
            .collect();
        (schemas, index)
    })
}

/// Whether `v` follows the schema of `doc`; the error says where not.
pub fn check(doc: Doc, v: &Value) -> Result<(), String> {
    let (schemas, index) = compiled();
    let i = Doc::ALL.iter().position(|&d| d == doc).unwrap();
    schemas.validate(v, index[i]).map_err(|e| format!("{e:#}"))
}

/// Panics unless `v` follows the schema of `doc`.
pub fn valid(doc: Doc, v: &Value) {
    if let Err(e) = check(doc, v) {
        panic!(
            "backoff's JSON does not follow docs/schema/{}: {v}\n{e}",
            doc.file()
        );
    }
}

#[test]
fn every_schema_is_a_draft_2020_12_schema_and_each_file_is_known() {
    let files: BTreeSet<String> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut known: BTreeSet<String> = Doc::ALL.iter().map(|d| d.file().to_owned()).collect();
    known.insert("defs.json".to_owned());
    assert_eq!(files, known, "every schema is tested");
    for file in &files {
        let text = std::fs::read_to_string(dir().join(file)).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            v["$schema"], "https://json-schema.org/draft/2020-12/schema",
            "{file}"
        );
        assert_eq!(v["$id"], id_of(file), "{file}");
    }
    compiled();
}

/// A `give_up` event as backoff writes it.
fn give_up() -> Value {
    json!({
        "schema": 1, "time": "2026-12-01T17:03:22.783Z", "name": "curl",
        "event": "give_up", "attempts": 3, "outcome": {"kind": "exit", "code": 22},
        "reason": "exhausted", "total_seconds": 1.25,
    })
}

/// `v` with `key` set to `value` (removed when `value` is null).
fn with(v: &Value, key: &str, value: Value) -> Value {
    let mut v = v.clone();
    if value.is_null() {
        v.as_object_mut().unwrap().remove(key);
    } else {
        v[key] = value;
    }
    v
}

#[test]
fn a_wrong_shape_is_refused() {
    let good = give_up();
    valid(Doc::Event, &good);
    let warning = json!({
        "schema": 1, "time": "+10000-01-01T00:00:00.000Z", "name": "sync",
        "event": "warning", "message": "retry budget 'k': the store cannot be used",
    });
    valid(Doc::Event, &warning);
    for (what, bad) in [
        ("a stray field", with(&good, "total_ms", json!(1250))),
        ("a missing field", with(&good, "reason", Value::Null)),
        (
            "a string for seconds",
            with(&good, "total_seconds", json!("1.25s")),
        ),
        (
            "a negative duration",
            with(&good, "total_seconds", json!(-1.0)),
        ),
        ("an unknown reason", with(&good, "reason", json!("tired"))),
        ("an unknown event", with(&good, "event", json!("gave_up"))),
        ("another schema version", with(&good, "schema", json!(2))),
        (
            "a time with its zone",
            with(&good, "time", json!("2026-12-01T18:03:22.783+01:00")),
        ),
        (
            "an outcome without its code",
            with(&good, "outcome", json!({"kind": "exit"})),
        ),
        (
            "an outcome with a stray field",
            with(
                &good,
                "outcome",
                json!({"kind": "timeout", "limit": "time", "code": 1}),
            ),
        ),
        (
            "a warning without its message",
            with(&warning, "message", Value::Null),
        ),
        (
            "a warning with a field of another event",
            with(&warning, "attempts", json!(1)),
        ),
        (
            "a line that is no object",
            json!("backoff: the store cannot be used"),
        ),
    ] {
        assert!(check(Doc::Event, &bad).is_err(), "{what} passes: {bad}");
    }
    // A retry without its delay, a delay without a retry.
    let retry = json!({
        "schema": 1, "time": "2026-12-01T17:03:22.783Z", "name": "curl",
        "event": "attempt_end", "attempt": 1, "outcome": {"kind": "exit", "code": 22},
        "duration_seconds": 0.0142, "next": "retry", "delay_seconds": 0.0631,
        "bound_seconds": 0.1, "delay_from_server": false,
    });
    valid(Doc::Event, &retry);
    assert!(check(Doc::Event, &with(&retry, "bound_seconds", Value::Null)).is_err());
    let exhausted = with(&retry, "next", json!("exhausted"));
    assert!(check(Doc::Event, &exhausted).is_err(), "{exhausted}");
    // The other documents.
    let schedule = json_of(
        Doc::Schedule,
        &backoff(["schedule", "--format", "json", "--max-retries", "2"])
            .output()
            .unwrap()
            .stdout,
    );
    let mut old = schedule.clone();
    old["retries"][0]["bound_ms"] = json!(100.0);
    assert!(check(Doc::Schedule, &old).is_err(), "{old}");
    assert!(check(Doc::Report, &schedule).is_err());
}

/// The events of a run with `args`, each checked; and its report, checked.
fn run(args: &[&str]) -> (Vec<Value>, Value) {
    let dir = TempDir::new("schema");
    let report = dir.join("report.json");
    let out = backoff(["--log-format", "json", "--report"])
        .arg(&report)
        .args(args)
        .timeout(PATIENCE)
        .output()
        .unwrap();
    (events(&out.stderr), report_at(&report))
}

/// The kinds of `events`, and of `next` in their `attempt_end`s.
fn kinds(events: &[Value]) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for e in events {
        seen.insert(e["event"].as_str().unwrap().to_owned());
        if let Some(next) = e["next"].as_str() {
            seen.insert(format!("next {next}"));
        }
    }
    seen
}

/// The kinds of event (and of `next`) the runs below must show between them.
const KINDS: [&str; 20] = [
    "attempt_end",
    "attempt_start",
    "breaker",
    "breaker_update",
    "give_up",
    "hook",
    "interrupted",
    "next again",
    "next budget",
    "next deadline",
    "next exhausted",
    "next failure_found",
    "next hint_too_long",
    "next retry",
    "next stopped",
    "no_failure",
    "reset",
    "start",
    "success",
    "undelivered",
];

/// The events and reports of runs that together show most kinds of event.
// A list of runs, one a few lines: long, not complex.
#[allow(clippy::too_many_lines)]
fn runs_of_most_kinds() -> (Vec<Value>, Vec<Value>) {
    let dir = TempDir::new("schema-runs");
    let store = dir.path().display().to_string();
    let fail_once = "test -e \"$0\" && exit 0; touch \"$0\"; exit 1";
    let once = dir.join("once").display().to_string();
    let reset = dir.join("reset").display().to_string();
    let runs: Vec<Vec<&str>> = vec![
        vec!["-v", "--attempts", "2", "--base", "1ms", "--", "false"],
        vec!["--stop-on", "3", "--", "sh", "-c", "exit 3"],
        vec!["--", "/no/such/program"],
        vec!["--consecutive", "2", "--base", "1ms", "--", "true"],
        vec!["--until-failure", "2", "--base", "1ms", "--", "true"],
        vec!["--until-failure", "--base", "1ms", "--", "false"],
        vec![
            "--until-output",
            "^up$",
            "--attempts",
            "2",
            "--base",
            "1ms",
            "--",
            "true",
        ],
        vec!["--max-time", "1s", "--base", "5s", "--", "false"],
        vec!["--timeout", "50ms", "--attempts", "1", "--", "sleep", "5"],
        vec!["--attempts", "1", "--", "sh", "-c", "kill -KILL $$"],
        vec![
            "--reset-after",
            "20ms",
            "--base",
            "1ms",
            "--",
            "sh",
            "-c",
            // Fails at once, then after a while (which resets), then succeeds.
            "n=$(cat \"$0\" 2>/dev/null || echo 0); echo $((n + 1)) > \"$0\"; \
             case $n in 0) exit 1;; 1) sleep 0.05; exit 1;; esac",
            &reset,
        ],
        vec![
            "--retry-after-pattern",
            "wait (\\d+)",
            "--retry-after-max",
            "1s",
            "--",
            "sh",
            "-c",
            "echo wait 60; exit 1",
        ],
        vec![
            "--retry-after-pattern",
            "wait (\\d+)",
            "--attempts",
            "2",
            "--base",
            "1ms",
            "--",
            "sh",
            "-c",
            "echo wait 0; exit 1",
        ],
        vec![
            "--on-retry",
            "true",
            "--on-give-up",
            "exit 3",
            "--on-success",
            "true",
            "--attempts",
            "2",
            "--base",
            "1ms",
            "--",
            "false",
        ],
        vec![
            "--on-success",
            "true",
            "--base",
            "1ms",
            "--",
            "sh",
            "-c",
            fail_once,
            &once,
        ],
        vec![
            "--budget",
            "b",
            "--budget-burst",
            "1",
            "--budget-dir",
            &store,
            "--base",
            "1ms",
            "--",
            "false",
        ],
        vec![
            "--breaker",
            "c",
            "--breaker-failures",
            "1",
            "--budget-dir",
            &store,
            "--attempts",
            "1",
            "--",
            "false",
        ],
        vec!["--breaker", "c", "--budget-dir", &store, "--", "true"],
    ];
    let mut all = (Vec::new(), Vec::new());
    for args in &runs {
        let (events, report) = run(args);
        assert!(!events.is_empty(), "{args:?}");
        assert_eq!(report["name"], events[0]["name"], "{args:?}");
        all.0.extend(events);
        all.1.push(report);
    }
    all
}

#[test]
fn the_events_and_reports_of_real_runs_follow_their_schemas() {
    let mut seen = kinds(&runs_of_most_kinds().0);
    // A signal in a delay, and held stdout that nobody reads.
    let mut delayed = Running::start(command([
        "--log-format",
        "json",
        "--base",
        "20s",
        "--",
        "false",
    ]));
    delayed.wait_for("\"attempt_end\"");
    delayed.signal(libc::SIGTERM);
    delayed.wait_exit(PATIENCE);
    let mut cmd = command(["--log-format", "json", "--hold-stdout", "--max-time", "1s"]);
    cmd.args([
        "--max-retries",
        "0",
        "--",
        "head",
        "-c",
        "4000000",
        "/dev/zero",
    ]);
    let (mut held, unread) = Running::start_with_stalled_stdout(cmd);
    held.wait_exit(PATIENCE);
    drop(unread);
    for run in [&delayed, &held] {
        let lines = run.stderr().join("\n");
        seen.extend(kinds(&events(lines.as_bytes())));
    }
    let missing: Vec<&str> = KINDS
        .iter()
        .copied()
        .filter(|k| !seen.contains(*k))
        .collect();
    assert!(missing.is_empty(), "no {missing:?} among {seen:?}");
}

#[test]
fn each_subcommands_json_follows_its_schema() {
    for args in [
        &["--max-retries", "3"][..],
        &["--forever", "--seed", "7", "--jitter", "decorrelated"],
        &["--delays", "1s,5s", "--max-retries", "200"],
        &["--poll", "2s"],
    ] {
        let out = backoff(["schedule", "--format", "json"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        json_of(Doc::Schedule, &out.stdout);
    }
    for args in [
        &["--clients", "5,10", "--runs", "2", "--seed", "1"][..],
        &["--clients", "3", "--runs", "1", "--strategy", "policy"],
        &[
            "--model",
            "overload",
            "--seed",
            "1",
            "--clients",
            "100",
            "--capacity",
            "200",
        ],
        &[
            "--model",
            "overload",
            "--scenario",
            "metastable",
            "--seed",
            "1",
            "--clients",
            "100",
        ],
    ] {
        let out = backoff(["simulate", "--format", "json"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        json_of(Doc::Simulate, &out.stdout);
    }
    let dir = TempDir::new("schema-stores");
    let store = dir.path().display().to_string();
    let budget = [
        "budget",
        "show",
        "k",
        "--format",
        "json",
        "--budget-dir",
        &store,
    ];
    let out = backoff(budget).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    json_of(Doc::BudgetShow, &out.stdout);
    for _ in 0..2 {
        backoff([
            "--breaker",
            "c",
            "--breaker-failures",
            "1",
            "--budget-dir",
            &store,
        ])
        .args(["--attempts", "1", "--", "false"])
        .output()
        .unwrap();
        let show = [
            "breaker",
            "show",
            "c",
            "--format",
            "json",
            "--budget-dir",
            &store,
        ];
        let out = backoff(show).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        json_of(Doc::BreakerShow, &out.stdout);
    }
}

#[test]
fn the_json_of_throttle_show_follows_its_schema() {
    let dir = TempDir::new("schema-throttle");
    let store = dir.path().display().to_string();
    // A fresh throttle, and one whose state counts.
    let throttle = [
        "throttle",
        "show",
        "t",
        "--format",
        "json",
        "--budget-dir",
        &store,
    ];
    let out = backoff(throttle).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let fresh = json_of(Doc::ThrottleShow, &out.stdout);
    assert_eq!(fresh["window_from"], "options", "{fresh}");
    std::fs::write(
        dir.join("t.throttle"),
        crate::throttle::record(10_000, &[(crate::throttle::now_ms() / 10_000, 9, 3, 1)]),
    )
    .unwrap();
    let out = backoff(throttle).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let counted = json_of(Doc::ThrottleShow, &out.stdout);
    assert_eq!(counted["window_from"], "state", "{counted}");
    let mut bad = counted.clone();
    bad["probability"] = json!(1.0);
    assert!(check(Doc::ThrottleShow, &bad).is_err(), "{bad}");
}

/// The lines of the guide that check a report with a second validator,
/// as written: ajv's and check-jsonschema's.
fn guide_commands() -> Vec<String> {
    let guide = std::fs::read_to_string(dir().join("../guide.md")).unwrap();
    let lines: Vec<String> = crate::examples::markdown_blocks(&guide)
        .into_iter()
        .flat_map(|(_, block)| block)
        .filter(|l| l.starts_with("ajv validate ") || l.starts_with("check-jsonschema "))
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    lines
}

/// Makes `bin` hold ajv and check-jsonschema where .ci/run installs them
/// (npm's `ajv-cli` and pip's `check-jsonschema`, in target/ci-tools), for
/// `sh` to find before PATH; the names of those found nowhere.
fn second_validators(bin: &Path) -> Vec<&'static str> {
    use std::os::unix::fs::PermissionsExt;
    let tools = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/ci-tools");
    std::fs::create_dir_all(bin).unwrap();
    let ajv = tools.join("npm/node_modules/.bin/ajv");
    if ajv.exists() {
        std::os::unix::fs::symlink(&ajv, bin.join("ajv")).unwrap();
    }
    if tools.join("py/check_jsonschema").is_dir() {
        let wrapper = bin.join("check-jsonschema");
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\nPYTHONPATH='{}' exec python3 -m check_jsonschema \"$@\"\n",
                tools.join("py").display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    ["ajv", "check-jsonschema"]
        .into_iter()
        .filter(|name| {
            !bin.join(name).exists()
                && !std::process::Command::new("sh")
                    .args(["-c", &format!("command -v {name}")])
                    .output()
                    .unwrap()
                    .status
                    .success()
        })
        .collect()
}

/// Documents of each kind as backoff writes them, in `dir` (the report of
/// a run in `report.json` too): the files of each kind, by the name of its
/// schema.
fn one_of_each(dir: &TempDir) -> Vec<(&'static str, Vec<String>)> {
    let store = dir.join("store");
    std::fs::create_dir(&store).unwrap();
    let store = store.display().to_string();
    let json = |args: &[&str]| {
        let out = backoff(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        out.stdout
    };
    // Every document of the runs, and a run that makes a state of each
    // kind for the subcommands.
    let (events, reports) = runs_of_most_kinds();
    let mut docs = Vec::new();
    for (schema, values) in [("events.json", events), ("report.json", reports)] {
        let names: Vec<String> = values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let name = format!("{}-{i}.json", schema.trim_end_matches(".json"));
                std::fs::write(dir.join(&name), v.to_string()).unwrap();
                name
            })
            .collect();
        docs.push((schema, names));
    }
    std::fs::copy(dir.join("report-0.json"), dir.join("report.json")).unwrap();
    backoff(["--budget", "k", "--breaker", "k", "--throttle", "k"])
        .args(["--budget-dir", &store])
        .args(["--attempts", "2", "--base", "1ms", "--", "false"])
        .assert()
        .code(1);
    let fleet = |kind: &'static str, what: &'static str| {
        vec![
            kind,
            what,
            "k",
            "--format",
            "json",
            "--budget-dir",
            store.as_str(),
        ]
    };
    let simulate = [
        "simulate",
        "--format",
        "json",
        "--clients",
        "3",
        "--runs",
        "1",
        "--seed",
        "1",
    ];
    // The states' shows, then their resets.
    for (schema, args) in [
        ("schedule.json", vec!["schedule", "--format", "json"]),
        ("simulate.json", simulate.to_vec()),
        ("budget-show.json", fleet("budget", "show")),
        ("breaker-show.json", fleet("breaker", "show")),
        ("throttle-show.json", fleet("throttle", "show")),
        ("budget-reset.json", fleet("budget", "reset")),
        ("breaker-reset.json", fleet("breaker", "reset")),
        ("throttle-reset.json", fleet("throttle", "reset")),
        ("lock-show.json", fleet("lock", "show")),
        ("lock-reset.json", fleet("lock", "reset")),
    ] {
        let name = format!("out-{schema}");
        std::fs::write(dir.join(&name), json(&args)).unwrap();
        docs.push((schema, vec![name]));
    }
    docs
}

#[test]
fn a_second_validator_run_as_the_guide_says_reads_the_schemas_and_agrees() {
    let place = TempDir::new("second-validators");
    let missing = second_validators(&place.join("bin"));
    for name in &missing {
        eprintln!(
            "skipped a_second_validator_run_as_the_guide_says_reads_the_schemas_and_agrees for {name}: not installed (.ci/run installs it in target/ci-tools)"
        );
    }
    std::fs::create_dir(place.join("docs")).unwrap();
    std::os::unix::fs::symlink(dir(), place.join("docs/schema")).unwrap();
    let docs = one_of_each(&place);
    let path = format!(
        "{}:{}",
        place.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let sh = |line: &str| {
        std::process::Command::new("sh")
            .args(["-c", line])
            .current_dir(place.path())
            .env("PATH", &path)
            .output()
            .unwrap()
    };
    for line in guide_commands() {
        let program = line.split_whitespace().next().unwrap();
        if missing.contains(&program) {
            continue;
        }
        // As written, on a report; then on each kind of document.
        let out = sh(&line);
        assert!(out.status.success(), "{line}: {out:?}");
        for (schema, files) in &docs {
            let data = if program == "ajv" {
                files.join(" -d ")
            } else {
                files.join(" ")
            };
            let line = line
                .replace("schema/report.json", &format!("schema/{schema}"))
                .replace(" report.json", &format!(" {data}"));
            let out = sh(&line);
            assert!(out.status.success(), "{line}: {out:?}");
        }
        // And what the schema refuses, the validator refuses.
        let report = std::fs::read_to_string(place.join("report.json")).unwrap();
        let mut wrong: Value = serde_json::from_str(&report).unwrap();
        wrong["schema"] = json!(2);
        std::fs::write(place.join("report.json"), wrong.to_string()).unwrap();
        let out = sh(&line);
        std::fs::write(place.join("report.json"), report).unwrap();
        assert!(!out.status.success(), "{line}: {out:?}");
    }
}
