//! `backoff simulate`: the experiment's conclusions hold, the overload model
//! shows the retry storm and what a budget, a breaker and an adaptive
//! throttle do, and the outputs are what they claim to be.

use serde_json::Value;

use crate::support::{TempDir, backoff};

fn cells(args: &[&str]) -> Vec<Value> {
    let out = backoff(["simulate", "--format", "json"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let doc = crate::support::json_of(crate::schema::Doc::Simulate, &out.stdout);
    doc["cells"].as_array().unwrap().clone()
}

fn get(cells: &[Value], strategy: &str, key: &str) -> f64 {
    cells
        .iter()
        .find(|c| c["strategy"] == strategy)
        .unwrap_or_else(|| panic!("no {strategy}"))[key]
        .as_f64()
        .unwrap()
}

#[test]
fn at_100_clients_full_jitter_does_the_least_work_and_exponential_takes_longest() {
    let c = cells(&["--clients", "100", "--runs", "100", "--seed", "2015"]);
    let calls = |s| get(&c, s, "calls_mean");
    assert!(calls("full") < calls("equal"), "full < equal");
    assert!(
        calls("equal") < calls("decorrelated"),
        "equal < decorrelated"
    );
    assert!(
        calls("decorrelated") < calls("exponential"),
        "decorrelated < exponential"
    );
    assert!(calls("exponential") < calls("none"), "exponential < none");
    assert!(
        calls("full") < calls("exponential") / 2.0,
        "full < half of exponential"
    );
    let time = |s| get(&c, s, "time_mean_seconds");
    assert!(
        time("exponential") > 5.0 * time("full"),
        "exponential takes many times longer"
    );
}

#[test]
fn the_same_seed_gives_the_same_output() {
    let run = || {
        backoff([
            "simulate",
            "--clients",
            "5,20",
            "--runs",
            "7",
            "--seed",
            "9",
        ])
        .output()
        .unwrap()
        .stdout
    };
    assert_eq!(run(), run());
}

#[test]
fn csv_has_the_original_columns_and_a_row_per_cell() {
    let out = backoff([
        "simulate",
        "--format",
        "csv",
        "--clients",
        "10-30/10",
        "--runs",
        "3",
        "--seed",
        "1",
        "--strategy",
        "full,policy",
    ])
    .output()
    .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "clients,time,calls,Algorithm");
    assert_eq!(lines.len(), 1 + 3 * 2);
    assert!(lines[1].starts_with("10,") && lines[1].ends_with(",full"));
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("30,") && l.ends_with(",policy"))
    );
}

#[test]
fn the_table_is_followed_by_a_terminal_chart_and_plot_writes_an_svg() {
    let dir = TempDir::new("plot");
    let svg = dir.join("sim.svg");
    let out = backoff([
        "simulate",
        "--clients",
        "10,40",
        "--runs",
        "3",
        "--seed",
        "4",
        "--plot",
    ])
    .arg(&svg)
    .output()
    .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("write calls (mean ±sd), 3 runs each"));
    assert!(text.contains("completion time (ms)"));
    assert!(text.contains("f full"), "legend: {text}");
    let drawing = std::fs::read_to_string(&svg).unwrap();
    assert!(drawing.starts_with("<svg"));
    for label in [
        "Work: write calls",
        "Completion time",
        "clients",
        "exponential",
        "decorrelated",
    ] {
        assert!(drawing.contains(label), "the SVG lacks {label}");
    }
}

#[test]
fn bad_simulation_input_is_refused() {
    for args in [
        ["--clients", "0"],
        ["--clients", "50-10"],
        ["--clients", "x"],
        ["--runs", "0"],
        ["--base", "0s"],
        ["--strategy", "magic"],
    ] {
        backoff(["simulate"])
            .args(args)
            .assert()
            .code(125)
            .stderr(predicates::str::contains(format!("'{}'", args[0])));
    }
    backoff(["simulate", "--base", "3s", "--cap", "1s"])
        .assert()
        .code(125);
}

/// The JSON document of a run of `model`, checked against its schema.
pub(crate) fn model_json(model: &str, args: &[&str]) -> Value {
    let out = backoff(["simulate", "--model", model, "--format", "json"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    crate::support::json_of(crate::schema::Doc::Simulate, &out.stdout)
}

/// The JSON document of an overload run.
fn overload(args: &[&str]) -> Value {
    model_json("overload", args)
}

/// The item of the list `list` of `doc` whose `key` is `name`.
pub(crate) fn item<'a>(doc: &'a Value, list: &str, key: &str, name: &str) -> &'a Value {
    doc[list]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s[key] == name)
        .unwrap_or_else(|| panic!("no {name}"))
}

fn strategy<'a>(doc: &'a Value, name: &str) -> &'a Value {
    item(doc, "strategies", "strategy", name)
}

const RETRYING_WITHOUT_A_LIMIT: [&str; 5] =
    ["immediate", "exponential", "full", "equal", "decorrelated"];

#[test]
fn a_full_outage_makes_four_attempts_of_each_request_and_a_shared_budget_about_one() {
    let doc = overload(&["--seed", "2015"]);
    assert_eq!(doc["brownout"], 0.0);
    assert_eq!(doc["max_retries"], 3);
    for name in RETRYING_WITHOUT_A_LIMIT {
        let a = strategy(&doc, name)["amplification"].as_f64().unwrap();
        assert!((3.5..=4.0).contains(&a), "{name}: {a}");
    }
    assert_eq!(strategy(&doc, "none")["amplification"], 1.0);
    // The budget: at most a retry per token of the burst, plus a tenth of
    // a retry per request (a success deposits 0.1).
    let budget = strategy(&doc, "full+budget");
    let requests = budget["episode_requests"].as_f64().unwrap();
    let bound = 1.0 + 0.1 + 10.0 / requests;
    let a = budget["amplification"].as_f64().unwrap();
    assert!(a <= bound, "full+budget: {a} > {bound}");
    // The open breaker sends nothing for the requests it skips.
    let breaker = strategy(&doc, "full+breaker");
    assert!(breaker["skipped"].as_u64().unwrap() > 0);
    assert!(breaker["amplification"].as_f64().unwrap() < 1.0);
}

#[test]
fn in_the_metastable_scenario_only_a_budget_or_a_breaker_lets_retrying_clients_recover() {
    let doc = overload(&["--scenario", "metastable", "--seed", "2015"]);
    for name in RETRYING_WITHOUT_A_LIMIT {
        let s = strategy(&doc, name);
        assert!(s["recovery_seconds"].is_null(), "{name} recovered: {s}");
        // Past the outage the server stays busy with attempts nobody waits for.
        let goodput = s["goodput_per_s"].as_array().unwrap();
        assert!(goodput[55].as_f64() == Some(0.0), "{name}: {goodput:?}");
    }
    for name in ["none", "full+budget", "full+breaker"] {
        let r = strategy(&doc, name)["recovery_seconds"].as_f64();
        assert!(r.is_some_and(|r| r < 10.0), "{name}: {r:?}");
    }
}

const THROTTLED: [&str; 2] = ["full+throttle", "full+budget+throttle"];

/// The budget and the two throttled strategies, with the default window
/// (2m) and K (2).
fn with_throttles(args: &[&str]) -> Value {
    let strategies = [
        "--strategy",
        "full+budget,full+throttle,full+budget+throttle",
    ];
    overload(&[args, &strategies, &["--seed", "2015"]].concat())
}

#[test]
fn the_adaptive_throttle_lets_retrying_clients_recover_from_the_metastable_overload() {
    let doc = with_throttles(&["--scenario", "metastable"]);
    assert_eq!(doc["throttle_window_seconds"], 120.0);
    assert_eq!(doc["throttle_k"], 2.0);
    let budget = strategy(&doc, "full+budget")["recovery_seconds"]
        .as_f64()
        .unwrap();
    for name in THROTTLED {
        let s = strategy(&doc, name);
        assert!(s["throttled"].as_u64().unwrap() > 0, "{name}: {s}");
        let r = s["recovery_seconds"].as_f64();
        assert!(r.is_some_and(|r| r < 40.0), "{name}: {r:?}");
    }
    // Alone, the throttle lets the queue drain only once the fleet's
    // requests in its window pass twice its accepts, and keeps skipping
    // after it has: it recovers, later than the budget.
    let alone = strategy(&doc, "full+throttle")["recovery_seconds"]
        .as_f64()
        .unwrap();
    assert!(alone > budget, "{alone} <= {budget}");
    // Under the budget as well, the budget's limit keeps the queue short.
    let both = strategy(&doc, "full+budget+throttle")["recovery_seconds"]
        .as_f64()
        .unwrap();
    assert!(both <= budget + 1.0, "{both} vs {budget}");
}

#[test]
fn during_a_brownout_a_throttle_serves_as_many_requests_as_the_budget() {
    let doc = with_throttles(&["--brownout", "0.25"]);
    // Successes during the brownout (10s to 20s), the same arrivals for
    // every strategy.
    let during = |name| -> f64 {
        strategy(&doc, name)["goodput_per_s"].as_array().unwrap()[10..20]
            .iter()
            .map(|v| v.as_f64().unwrap())
            .sum()
    };
    let goodput = |name| strategy(&doc, name)["goodput"].as_f64().unwrap();
    for name in THROTTLED {
        assert!(during(name) >= during("full+budget"), "{name}");
    }
    assert!(goodput("full+budget+throttle") >= goodput("full+budget"));
    // Over the whole run the throttle alone falls short of the budget: its
    // window still counts the brownout's failures when the capacity
    // returns, and it skips attempts to a server that would serve them.
    let alone = strategy(&doc, "full+throttle");
    assert!(alone["recovery_seconds"].as_f64().unwrap() > 0.0, "{alone}");
    assert_eq!(strategy(&doc, "full+budget")["recovery_seconds"], 0.0);
}

#[test]
fn the_overload_model_gives_the_same_output_for_the_same_seed() {
    let run = |format| {
        backoff([
            "simulate", "--model", "overload", "--seed", "11", "--format", format,
        ])
        .args(["--clients", "300", "--capacity", "600", "--queue", "1200"])
        .output()
        .unwrap()
        .stdout
    };
    for format in ["table", "csv", "json", "svg"] {
        assert_eq!(run(format), run(format), "{format}");
    }
    let other = backoff([
        "simulate", "--model", "overload", "--seed", "12", "--format", "json",
    ])
    .args(["--clients", "300", "--capacity", "600", "--queue", "1200"])
    .output()
    .unwrap()
    .stdout;
    assert_ne!(run("json"), other);
}

#[test]
fn overload_csv_and_table_have_a_row_per_strategy_and_say_never() {
    let out = backoff([
        "simulate",
        "--model",
        "overload",
        "--scenario",
        "metastable",
        "--seed",
        "3",
        "--format",
        "csv",
        "--strategy",
        "full,full+budget",
    ])
    .output()
    .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("strategy,amplification,goodput,recovery_seconds,skipped"));
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines[1].starts_with("full,") && lines[1].contains(",never,"),
        "{text}"
    );
    assert!(lines[2].starts_with("full+budget,") && !lines[2].contains("never"));
    let table = backoff(["simulate", "--model", "overload", "--seed", "3"])
        .output()
        .unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(
        table.starts_with("overload (outage): 1000 clients"),
        "{table}"
    );
    assert!(table.contains(
        "strategy              amplification  goodput  recovery_s  skipped  throttled  wasted"
    ));
    assert_eq!(table.lines().count(), 2 + 10);
}

#[test]
fn overload_svg_goes_to_stdout_or_to_the_plot_file() {
    let dir = TempDir::new("overload-plot");
    let file = dir.join("overload.svg");
    let out = backoff([
        "simulate", "--model", "overload", "--seed", "5", "--format", "svg",
    ])
    .args([
        "--clients",
        "200",
        "--capacity",
        "400",
        "--queue",
        "200",
        "--plot",
    ])
    .arg(&file)
    .output()
    .unwrap();
    assert!(out.status.success(), "{out:?}");
    let drawing = String::from_utf8(out.stdout).unwrap();
    assert!(drawing.starts_with("<svg"));
    for label in [
        "Offered load",
        "Goodput",
        "time (s)",
        "full+budget",
        "full+breaker",
        "full+throttle",
        "full+budget+throttle",
    ] {
        assert!(drawing.contains(label), "the SVG lacks {label}");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), drawing);
}

#[test]
fn bad_overload_values_and_the_other_models_options_are_refused() {
    for args in [
        ["--capacity", "0"],
        ["--capacity", "-5"],
        ["--rate", "NaN"],
        ["--brownout", "1.5"],
        ["--brownout", "-0.1"],
        ["--queue", "-1"],
        ["--max-retries", "-1"],
        ["--horizon", "0s"],
        ["--outage-length", "2m"],
        ["--timeout", "0s"],
        ["--breaker-failures", "0"],
        ["--budget-burst", "0"],
        ["--throttle-window", "500ms"],
        ["--throttle-window", "31days"],
        ["--throttle-k", "0.5"],
        ["--throttle-k", "NaN"],
        ["--throttle-k", "1001"],
        ["--clients", "10,20"],
        ["--strategy", "policy"],
        ["--runs", "5"],
        ["--jitter", "equal"],
    ] {
        refused_in_one_line("overload", &args);
    }
    for args in [
        &["--capacity", "10"][..],
        &["--scenario", "metastable"],
        &["--max-retries", "3"],
        &["--format", "svg"],
        &["--strategy", "full+budget"],
        &["--strategy", "full+throttle"],
        &["--throttle-k", "3"],
        &["--throttle-window", "1m"],
    ] {
        backoff(["simulate"])
            .args(args)
            .assert()
            .code(125)
            .stderr(predicates::str::contains("'--model overload'"));
    }
}

/// `backoff simulate --model MODEL ARGS` exits 125 with one line that
/// names the option, `args[0]`, and prints nothing else.
pub(crate) fn refused_in_one_line(model: &str, args: &[&str]) {
    let out = backoff(["simulate", "--model", model])
        .args(args)
        .assert()
        .code(125)
        .stderr(predicates::str::contains(format!("'{}'", args[0])))
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    assert!(out.stdout.is_empty());
}
