//! `backoff budget|breaker|throttle reset KEY` says what it reset and what
//! was there (nothing, a state, a corrupt one), in text on stderr and with
//! `--format json` on stdout, the same against the file store and Redis;
//! a reset that finds nothing makes nothing.

use std::path::PathBuf;
use std::process::Output;

use serde_json::Value;

use crate::fleet::{Redis, redis_cli};
use crate::schema::Doc;
use crate::support::{TempDir, backoff, json_of};

/// Where the states of a test live.
enum Place {
    /// A `--budget-dir`.
    Dir(PathBuf),
    /// A `--budget-store`.
    Redis(String),
}

impl Place {
    /// The options that name it.
    fn args(&self) -> Vec<String> {
        match self {
            Place::Dir(d) => vec!["--budget-dir".into(), d.display().to_string()],
            Place::Redis(url) => vec!["--budget-store".into(), url.clone()],
        }
    }
}

/// What a test does to the store beside backoff.
trait Store {
    fn place(&self) -> Place;
    /// Whether the state of `kind` for `key` exists.
    fn exists(&self, kind: &str, key: &str) -> bool;
    /// Puts a value that is no state of `kind` there.
    fn corrupt(&self, kind: &str, key: &str);
}

struct Files(TempDir);

impl Store for Files {
    fn place(&self) -> Place {
        Place::Dir(self.0.join("store"))
    }
    fn exists(&self, kind: &str, key: &str) -> bool {
        self.0.join("store").join(format!("{key}.{kind}")).exists()
    }
    fn corrupt(&self, kind: &str, key: &str) {
        std::fs::write(self.0.join("store").join(format!("{key}.{kind}")), "junk\n").unwrap();
    }
}

impl Store for Redis {
    fn place(&self) -> Place {
        Place::Redis(self.url())
    }
    fn exists(&self, kind: &str, key: &str) -> bool {
        redis_cli(self, &["EXISTS", &format!("backoff:{kind}:{key}")]) == "1"
    }
    fn corrupt(&self, kind: &str, key: &str) {
        redis_cli(self, &["SET", &format!("backoff:{kind}:{key}"), "junk"]);
    }
}

/// `backoff KIND reset KEY` in `store`, with `options`; it must succeed.
fn reset(kind: &str, key: &str, store: &dyn Store, options: &[&str]) -> Output {
    let out = backoff([kind, "reset", key])
        .args(store.place().args())
        .args(options)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    out
}

/// The line a text reset says, checked to be its only output.
fn said(kind: &str, key: &str, store: &dyn Store) -> String {
    let out = reset(kind, key, store, &[]);
    assert!(out.stdout.is_empty(), "{out:?}");
    let text = String::from_utf8(out.stderr).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    text.trim_end().to_owned()
}

/// What a JSON reset prints, checked against its schema; nothing on stderr.
fn told(kind: &str, key: &str, store: &dyn Store, doc: Doc) -> serde_json::Value {
    let out = reset(kind, key, store, &["--format", "json"]);
    assert!(out.stderr.is_empty(), "{out:?}");
    json_of(doc, &out.stdout)
}

/// Runs backoff with `options` on `sh -c 'exit CODE'` in `store`.
fn run(store: &dyn Store, options: &[&str], code: i32) {
    backoff(options)
        .args(store.place().args())
        .args(["--base", "1ms", "--", "sh", "-c", &format!("exit {code}")])
        .assert()
        .code(code);
}

/// A reset of `kind` that finds no state says so, and what that means,
/// and makes none; the same in JSON.
fn nothing(kind: &str, store: &dyn Store) {
    let (doc, without) = match kind {
        "budget" => (Doc::BudgetReset, "a budget without one is full"),
        "breaker" => (Doc::BreakerReset, "a circuit without one is closed"),
        _ => (Doc::ThrottleReset, "a window without one is empty"),
    };
    assert_eq!(
        said(kind, "api", store),
        format!("backoff: {kind} 'api': no state to reset ({without})")
    );
    assert!(!store.exists(kind, "api"), "a reset of nothing made it");
    let v = told(kind, "api", store, doc);
    assert_eq!(v["found"], "nothing");
    assert_eq!((&v["before"], &v["after"]), (&Value::Null, &Value::Null));
    assert!(!store.exists(kind, "api"), "a reset of nothing made it");
}

/// A reset of `kind` over a corrupt state says so, in text and in JSON.
fn corrupt(kind: &str, store: &dyn Store, doc: Doc, reset_to: &str) {
    store.corrupt(kind, "api");
    assert_eq!(
        said(kind, "api", store),
        format!("backoff: {kind} 'api' reset to {reset_to}; it held a corrupt state")
    );
    store.corrupt(kind, "api");
    let v = told(kind, "api", store, doc);
    assert_eq!(
        (&v["found"], &v["before"]),
        (&"corrupt".into(), &Value::Null)
    );
    assert!(v["after"].is_object(), "{v}");
}

/// Runs backoff once for each of `runs` (its options, and the exit code
/// of its command), then resets `kind` in text: the line it says.
fn said_after(kind: &str, store: &dyn Store, runs: &[(&[&str], i32)]) -> String {
    for (options, code) in runs {
        run(store, options, *code);
    }
    said(kind, "api", store)
}

/// The same, reset in JSON: the object it prints, with `found` checked.
fn told_after(kind: &str, store: &dyn Store, runs: &[(&[&str], i32)], doc: Doc) -> Value {
    for (options, code) in runs {
        run(store, options, *code);
    }
    let v = told(kind, "api", store, doc);
    assert_eq!(v["found"], "state", "{v}");
    v
}

fn budgets(store: &dyn Store) {
    nothing("budget", store);
    // Two retries take two tokens of ten.
    assert_eq!(
        said_after(
            "budget",
            store,
            &[(&["--budget", "api", "--attempts", "3"], 1)]
        ),
        "backoff: budget 'api' reset to 10 tokens; it held 8"
    );
    let v = told_after(
        "budget",
        store,
        &[(&["--budget", "api", "--attempts", "2"], 1)],
        Doc::BudgetReset,
    );
    assert_eq!(v["before"]["tokens"], 9.0);
    assert_eq!(v["before"]["burst"], 10.0);
    assert_eq!(v["after"]["micro_tokens"], 10_000_000);
    // A bucket of another size, and its ratio, are said where they change.
    let options = ["--budget-burst", "4", "--budget-ratio", "0.5"];
    let out = reset("budget", "api", store, &options);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "backoff: budget 'api' reset to 4 tokens, 0.5 a success; it held 10 of 10, 0.1 a success\n"
    );
    corrupt("budget", store, Doc::BudgetReset, "10 tokens");
}

fn breakers(store: &dyn Store) {
    nothing("breaker", store);
    let open = [
        "--breaker",
        "api",
        "--breaker-failures",
        "1",
        "--attempts",
        "1",
    ];
    let line = said_after("breaker", store, &[(&open, 1)]);
    assert!(
        line.starts_with("backoff: breaker 'api' reset to closed; it was open since ")
            && line.ends_with(" (1 run gave up)"),
        "{line}"
    );
    // Closed now: the next run starts the command.
    let v = told_after(
        "breaker",
        store,
        &[(&["--breaker", "api", "--attempts", "1"], 3)],
        Doc::BreakerReset,
    );
    assert_eq!(v["before"]["state"], "closed");
    assert_eq!(v["before"]["failures"], 1);
    assert_eq!(v["after"]["failures"], 0);
    corrupt("breaker", store, Doc::BreakerReset, "closed");
}

fn throttles(store: &dyn Store) {
    nothing("throttle", store);
    // One attempt that the backend accepted, then one that failed (never
    // skipped: with an accept for each request, the probability is 0).
    let once: &[&str] = &["--throttle", "api", "--attempts", "1"];
    assert_eq!(
        said_after("throttle", store, &[(once, 0), (once, 1)]),
        "backoff: throttle 'api' reset to an empty window; it held 2 requests in the last 2m (0 skipped), 1 accepted"
    );
    let v = told_after("throttle", store, &[(once, 0)], Doc::ThrottleReset);
    assert_eq!(v["before"]["requests"], 1);
    assert_eq!(v["before"]["accepts"], 1);
    assert_eq!(v["before"]["window_seconds"], 120.0);
    assert_eq!(v["after"]["requests"], 0);
    // Emptied: a window that counts nothing is said so.
    assert_eq!(
        said("throttle", "api", store),
        "backoff: throttle 'api' reset to an empty window; it held nothing that still counts"
    );
    corrupt("throttle", store, Doc::ThrottleReset, "an empty window");
}

#[test]
fn every_reset_says_what_it_found_in_the_file_store() {
    let files = Files(TempDir::new("resets"));
    budgets(&files);
    breakers(&files);
    throttles(&files);
}

#[test]
fn every_reset_says_what_it_found_in_redis() {
    let redis = Redis::start(None);
    budgets(&redis);
    breakers(&redis);
    throttles(&redis);
}
