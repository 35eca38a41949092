//! `backoff simulate --model cron`: a fleet's cron firing one job at :00,
//! and what `--splay`, `--lock` and `--once-per` make of the herd: the
//! table's shape, the same output for the same seed, the splay cutting the
//! peak, one run a period under `--once-per`, and bad input refused.

use serde_json::Value;

use crate::simulation::{item, model_json, refused_in_one_line};
use crate::support::{TempDir, backoff};

/// The JSON document of a cron run, checked against its schema.
fn cron(args: &[&str]) -> Value {
    model_json("cron", args)
}

/// The row of the options `options`.
fn row<'a>(doc: &'a Value, options: &str) -> &'a Value {
    item(doc, "rows", "options", options)
}

fn count(row: &Value, key: &str) -> u64 {
    row[key].as_u64().unwrap_or_else(|| panic!("{key}: {row}"))
}

#[test]
fn the_table_has_a_line_of_parameters_and_a_row_per_way_of_running_the_job() {
    let out = backoff(["simulate", "--model", "cron", "--seed", "2015"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let table = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].starts_with("cron: 1000 hosts whose cron fires at :00 every hour; a job of 5s"),
        "{table}"
    );
    assert!(lines[0].ends_with("splay 2m; seed 2015"), "{table}");
    let header: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(
        header,
        [
            "options",
            "runs",
            "skipped",
            "service_peak/s",
            "store_peak/s",
            "longest_wait_s",
            "done_s"
        ]
    );
    let rows: Vec<&str> = lines[2..]
        .iter()
        .map(|l| l.split("  ").next().unwrap())
        .collect();
    assert_eq!(
        rows,
        [
            "(none)",
            "--splay 2m",
            "--lock",
            "--splay 2m --lock",
            "--once-per hour",
            "--splay 2m --once-per hour"
        ]
    );
    // Every row's numbers sit under their column's right edge.
    let right = lines[1].len();
    assert!(lines[2..].iter().all(|l| l.len() == right), "{table}");
    assert!(out.stderr.is_empty());
}

#[test]
fn the_same_seed_gives_the_same_output_and_another_seed_another() {
    let run = |seed: &str, format: &str| {
        let out = backoff([
            "simulate",
            "--model",
            "cron",
            "--clients",
            "300",
            "--seed",
            seed,
            "--format",
            format,
        ])
        .output()
        .unwrap();
        assert!(out.status.success(), "{out:?}");
        out.stdout
    };
    for format in ["table", "csv", "json", "svg"] {
        assert_eq!(run("7", format), run("7", format), "{format}");
    }
    assert_ne!(run("7", "json"), run("8", "json"));
}

#[test]
fn the_splay_cuts_the_peak_that_every_host_at_once_makes() {
    let doc = cron(&["--seed", "2015"]);
    let herd = row(&doc, "(none)");
    assert_eq!(count(herd, "runs"), 1000);
    assert_eq!(count(herd, "service_peak_per_second"), 1000);
    // 1000 requests at 100 a second: the last of them waits about 9 s.
    assert!(
        herd["longest_wait_seconds"].as_f64().unwrap() > 8.0,
        "{herd}"
    );
    let splay = row(&doc, "--splay 2m");
    assert_eq!(count(splay, "runs"), 1000);
    // 1000 hosts over 120 s: about 8 a second, the busiest under 30.
    let peak = count(splay, "service_peak_per_second");
    assert!((5..30).contains(&peak), "{splay}");
    assert!(
        splay["longest_wait_seconds"].as_f64().unwrap() < 1.0,
        "{splay}"
    );
    // The last host starts near the end of the window.
    let done = splay["done_seconds"].as_f64().unwrap();
    assert!((115.0..=126.0).contains(&done), "{splay}");
    // A wider window cuts it further.
    let wide = cron(&["--seed", "2015", "--splay", "10m"]);
    let wider = count(row(&wide, "--splay 10m"), "service_peak_per_second");
    assert!(wider < peak, "{wider} against {peak}");
    // Each second's requests add up to the runs.
    let per_s: f64 = herd["service_per_s"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .sum();
    assert!((per_s - 1000.0).abs() < 1e-9);
}

#[test]
fn once_per_runs_the_job_once_a_period_where_a_lock_under_splay_runs_it_again() {
    let doc = cron(&["--seed", "2015", "--clients", "500", "--job", "3s"]);
    for options in ["--once-per hour", "--splay 2m --once-per hour"] {
        let r = row(&doc, options);
        assert_eq!(count(r, "runs"), 1, "{r}");
        assert_eq!(count(r, "skipped"), 499, "{r}");
        // Every host's reads count: each asks the store at least once.
        assert!(count(r, "store_requests") >= 500, "{r}");
    }
    // Started together, the hosts all ask the store in the first second;
    // spread, a few a second do.
    let herd = count(row(&doc, "--once-per hour"), "store_peak_per_second");
    let spread = count(
        row(&doc, "--splay 2m --once-per hour"),
        "store_peak_per_second",
    );
    assert!(herd >= 500 && spread * 5 < herd, "{herd} {spread}");
    // A mutex is not enough: under the splay a short job is over before
    // the next host takes the free lock and runs it again.
    assert_eq!(count(row(&doc, "--lock"), "runs"), 1);
    let again = count(row(&doc, "--splay 2m --lock"), "runs");
    assert!(again > 10, "{again}");
    // Without a store, no request goes to one.
    assert_eq!(count(row(&doc, "--splay 2m"), "store_requests"), 0);
}

#[test]
fn the_chart_goes_to_stdout_or_to_the_plot_file() {
    let dir = TempDir::new("cron-plot");
    let file = dir.join("cron.svg");
    let out = backoff([
        "simulate", "--model", "cron", "--seed", "5", "--format", "svg", "--plot",
    ])
    .arg(&file)
    .output()
    .unwrap();
    assert!(out.status.success(), "{out:?}");
    let drawing = String::from_utf8(out.stdout).unwrap();
    assert!(drawing.starts_with("<svg"));
    for label in ["Service", "Store", "time (s)", "--splay 2m --once-per hour"] {
        assert!(drawing.contains(label), "the SVG lacks {label}");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), drawing);
}

#[test]
fn bad_cron_values_and_the_other_models_options_are_refused() {
    for args in [
        &["--clients", "10,20"][..],
        &["--clients", "0"],
        &["--capacity", "0"],
        &["--capacity", "NaN"],
        &["--job", "0s"],
        &["--job", "25h"],
        &["--job", "5"],
        &["--splay", "0s"],
        &["--splay", "25h"],
        &["--splay", "-1m"],
        &["--runs", "5"],
        &["--strategy", "full"],
        &["--base", "1s"],
        &["--factor", "3"],
        &["--queue", "5"],
        &["--scenario", "outage"],
    ] {
        refused_in_one_line("cron", args);
    }
    for model in ["contention", "overload"] {
        for args in [["--splay", "2m"], ["--job", "5s"]] {
            backoff(["simulate", "--model", model])
                .args(args)
                .assert()
                .code(125)
                .stderr(predicates::str::contains(format!(
                    "'{}' is an option of '--model cron', not of '--model {model}'",
                    args[0]
                )));
        }
    }
}
