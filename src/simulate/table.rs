//! The text outputs of `backoff simulate`: tables, CSV, JSON and a terminal
//! chart of the contention model; the table, CSV and JSON of the overload
//! model.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::json;

use crate::fleet::bucket::show_tokens;
use crate::simulate::overload::{self, Outcome};
use crate::simulate::{Cell, Setup, Strategy};

/// The cells of one strategy, in client order.
pub(crate) fn series(cells: &[Cell], s: Strategy) -> Vec<&Cell> {
    cells.iter().filter(|c| c.strategy == s).collect()
}

/// Two wide tables: write calls, then completion time, one column per
/// strategy, as `mean ±sd`.
pub fn table(setup: &Setup, cells: &[Cell]) -> String {
    let mut out = String::new();
    for (title, value) in [
        (
            "write calls (mean ±sd)",
            (|c: &Cell| (c.calls.mean, c.calls.sd)) as fn(&Cell) -> (f64, f64),
        ),
        ("completion time in ms (mean ±sd)", |c: &Cell| {
            (c.time_ms.mean, c.time_ms.sd)
        }),
    ] {
        let mut rows = vec![
            std::iter::once("clients".to_owned())
                .chain(setup.strategies.iter().map(|s| s.name().to_owned()))
                .collect::<Vec<_>>(),
        ];
        for &n in &setup.clients {
            let mut row = vec![n.to_string()];
            for &s in &setup.strategies {
                let cell = cells.iter().find(|c| c.clients == n && c.strategy == s);
                row.push(cell.map_or_else(String::new, |c| {
                    let (mean, sd) = value(c);
                    format!("{mean:.0} ±{sd:.0}")
                }));
            }
            rows.push(row);
        }
        let widths: Vec<usize> = (0..rows[0].len())
            .map(|i| rows.iter().map(|r| r[i].len()).max().unwrap_or(0))
            .collect();
        let _ = writeln!(out, "{title}, {} runs each", setup.runs);
        for row in &rows {
            let line: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(cell, w)| format!("{cell:>w$}"))
                .collect();
            let _ = writeln!(out, "{}", line.join("  "));
        }
        out.push('\n');
    }
    out
}

/// CSV with the original simulator's columns: `clients,time,calls,Algorithm`
/// (time in milliseconds; means over the runs).
pub fn csv(cells: &[Cell]) -> String {
    let mut out = String::from("clients,time,calls,Algorithm\n");
    for c in cells {
        let _ = writeln!(
            out,
            "{},{:.3},{:.3},{}",
            c.clients,
            c.time_ms.mean,
            c.calls.mean,
            c.strategy.name()
        );
    }
    out
}

/// One JSON document: the setup and every cell.
pub fn json_doc(setup: &Setup, cells: &[Cell]) -> String {
    let doc = json!({
        "model": "brooker-2015",
        "runs": setup.runs,
        "base_seconds": setup.base.as_secs_f64(),
        "cap_seconds": setup.cap.as_secs_f64(),
        "seed": setup.seed,
        "cells": cells.iter().map(|c| json!({
            "clients": c.clients,
            "strategy": c.strategy.name(),
            "calls_mean": c.calls.mean,
            "calls_sd": c.calls.sd,
            "time_mean_seconds": c.time_ms.mean / 1e3,
            "time_sd_seconds": c.time_ms.sd / 1e3,
        })).collect::<Vec<_>>(),
    });
    format!("{doc:#}\n")
}

/// The letter that marks a strategy in the terminal chart.
fn mark(s: Strategy) -> char {
    match s {
        Strategy::None => 'n',
        Strategy::Exponential => 'x',
        Strategy::Full => 'f',
        Strategy::Equal => 'e',
        Strategy::Decorrelated => 'd',
        Strategy::Policy => 'p',
    }
}

/// A compact chart of one measure against the client count, in text.
fn text_chart(title: &str, setup: &Setup, cells: &[Cell], value: fn(&Cell) -> f64) -> String {
    const W: usize = 60;
    const H: usize = 12;
    let max_y = cells.iter().map(value).fold(0.0_f64, f64::max).max(1e-9);
    let (min_x, max_x) = (
        setup.clients.iter().copied().min().unwrap_or(0),
        setup.clients.iter().copied().max().unwrap_or(1),
    );
    let span = f64::from(max_x.saturating_sub(min_x).max(1));
    let mut grid = vec![vec![' '; W]; H];
    for &s in &setup.strategies {
        for c in series(cells, s) {
            // Small grid sizes: the casts lose nothing.
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                clippy::cast_precision_loss
            )]
            let (x, y) = (
                ((f64::from(c.clients - min_x) / span) * (W - 1) as f64).round() as usize,
                ((value(c) / max_y) * (H - 1) as f64).round() as usize,
            );
            let cell = &mut grid[H - 1 - y.min(H - 1)][x.min(W - 1)];
            *cell = if *cell == ' ' || *cell == mark(s) {
                mark(s)
            } else {
                '*'
            };
        }
    }
    let mut out = format!("{title}\n");
    for (i, row) in grid.iter().enumerate() {
        let label = if i == 0 {
            format!("{max_y:>9.0}")
        } else if i == H - 1 {
            format!("{:>9}", 0)
        } else {
            " ".repeat(9)
        };
        let _ = writeln!(
            out,
            "{label} |{}",
            row.iter().collect::<String>().trim_end()
        );
    }
    let _ = writeln!(out, "{} +{}", " ".repeat(9), "-".repeat(W));
    let _ = writeln!(
        out,
        "{}  {min_x:<w$}{max_x}  clients",
        " ".repeat(9),
        w = W - max_x.to_string().len()
    );
    out
}

/// The terminal charts of calls and completion time, with a legend.
pub fn terminal_charts(setup: &Setup, cells: &[Cell]) -> String {
    let mut out = text_chart("write calls", setup, cells, |c| c.calls.mean);
    out.push('\n');
    out.push_str(&text_chart("completion time (ms)", setup, cells, |c| {
        c.time_ms.mean
    }));
    let legend: Vec<String> = setup
        .strategies
        .iter()
        .map(|&s| format!("{} {}", mark(s), s.name()))
        .collect();
    let _ = writeln!(
        out,
        "{}  ({}; * where marks overlap)",
        " ".repeat(9),
        legend.join(", ")
    );
    out
}

/// `recovery_s` as text: seconds, or `never`.
fn recovery(o: &Outcome) -> String {
    o.recovery_s
        .map_or_else(|| "never".to_owned(), |s| format!("{s:.2}"))
}

/// The overload model's parameters, in one line.
fn overload_line(s: &overload::Setup) -> String {
    let show = |d: std::time::Duration| humantime::format_duration(d).to_string();
    let outage = if s.brownout == 0.0 {
        "full outage".to_owned()
    } else {
        format!("brownout to {}", s.brownout)
    };
    format!(
        "overload ({}): {} clients at {}/s, capacity {}/s, queue {}, timeout {}; {outage} \
         from {} for {}; horizon {}; at most {} retries; seed {}",
        s.scenario,
        s.clients,
        s.rate,
        s.capacity,
        s.queue,
        show(s.timeout),
        show(s.outage_start),
        show(s.outage_length),
        show(s.horizon),
        s.max_retries,
        s.seed
    )
}

/// The overload model's table: a row per strategy.
pub fn overload_table(setup: &overload::Setup, outcomes: &[Outcome]) -> String {
    let mut rows = vec![
        [
            "strategy",
            "amplification",
            "goodput",
            "recovery_s",
            "skipped",
            "throttled",
            "wasted",
        ]
        .map(str::to_owned)
        .to_vec(),
    ];
    for o in outcomes {
        rows.push(vec![
            o.strategy.name().to_owned(),
            format!("{:.2}", o.amplification()),
            format!("{:.3}", o.goodput()),
            recovery(o),
            o.skipped.to_string(),
            o.throttled.to_string(),
            o.wasted.to_string(),
        ]);
    }
    let mut out = overload_line(setup);
    out.push('\n');
    out.push_str(&aligned(&rows));
    out
}

/// Rows of cells in columns two spaces apart, the first column's cells on
/// the left, the others' on the right, a line each.
pub(crate) fn aligned(rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..rows.first().map_or(0, Vec::len))
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (cell, w))| {
                if i == 0 {
                    format!("{cell:<w$}")
                } else {
                    format!("{cell:>w$}")
                }
            })
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
    out
}

/// The overload model's CSV: a row per strategy.
pub fn overload_csv(outcomes: &[Outcome]) -> String {
    let mut out = String::from(
        "strategy,amplification,goodput,recovery_seconds,skipped,throttled,wasted,requests,attempts,succeeded\n",
    );
    for o in outcomes {
        let _ = writeln!(
            out,
            "{},{:.4},{:.4},{},{},{},{},{},{},{}",
            o.strategy.name(),
            o.amplification(),
            o.goodput(),
            recovery(o),
            o.skipped,
            o.throttled,
            o.wasted,
            o.requests,
            o.attempts,
            o.succeeded
        );
    }
    out
}

/// Sums `v` over bins of `n` ticks, as a rate per second.
pub(crate) fn per_second(v: &[u32], n: usize) -> Vec<f64> {
    #[allow(clippy::cast_precision_loss)]
    let scale = overload::TICKS_PER_S as f64 / n as f64;
    v.chunks(n)
        .map(|c| f64::from(c.iter().sum::<u32>()) * scale)
        .collect()
}

/// The overload model's JSON: its parameters, and per strategy the
/// measures and the offered load and goodput of every second.
pub fn overload_json(s: &overload::Setup, outcomes: &[Outcome]) -> String {
    let seconds = |d: std::time::Duration| d.as_secs_f64();
    let doc = json!({
        "model": "overload",
        "scenario": s.scenario,
        "clients": s.clients,
        "rate": s.rate,
        "capacity": s.capacity,
        "queue": s.queue,
        "timeout_seconds": seconds(s.timeout),
        "brownout": s.brownout,
        "outage_start_seconds": seconds(s.outage_start),
        "outage_length_seconds": seconds(s.outage_length),
        "horizon_seconds": seconds(s.horizon),
        "max_retries": s.max_retries,
        "base_seconds": seconds(s.base),
        "cap_seconds": seconds(s.cap),
        "factor": s.factor,
        "budget_ratio": show_tokens(s.bucket.ratio).parse::<f64>().unwrap_or(0.0),
        "budget_burst": show_tokens(s.bucket.burst).parse::<f64>().unwrap_or(0.0),
        "breaker_failures": s.breaker.failures,
        "breaker_cooldown_seconds": Duration::from_millis(s.breaker.cooldown_ms).as_secs_f64(),
        "throttle_window_seconds": Duration::from_millis(s.throttle.window_ms).as_secs_f64(),
        "throttle_k": s.throttle.k(),
        "seed": s.seed,
        "strategies": outcomes.iter().map(|o| json!({
            "strategy": o.strategy.name(),
            "amplification": o.amplification(),
            "goodput": o.goodput(),
            "recovery_seconds": o.recovery_s,
            "skipped": o.skipped,
            "throttled": o.throttled,
            "wasted": o.wasted,
            "requests": o.requests,
            "attempts": o.attempts,
            "succeeded": o.succeeded,
            "episode_requests": o.episode_requests,
            "episode_attempts": o.episode_attempts,
            "offered_per_s": per_second(&o.sent, overload::TICKS_PER_S),
            "goodput_per_s": per_second(&o.good, overload::TICKS_PER_S),
        })).collect::<Vec<_>>(),
    });
    format!("{doc:#}\n")
}
