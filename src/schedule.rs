//! `backoff schedule`: the delays a policy produces, as a table, JSON or CSV.
//! Runs nothing and writes nothing: pure, text in the caller's hands.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::json;

use crate::duration::human;
use crate::jitter::Jitter;
use crate::policy::{Policy, PolicyConfig};

/// Rows shown in full; a longer (or unlimited) schedule is cut once its range
/// has settled at the cap.
const FULL_ROWS: u64 = 100;

/// One retry of the schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// 1-based retry number.
    pub retry: u64,
    /// `upper(n)`: the exponential bound.
    pub bound: Duration,
    /// The smallest possible delay.
    pub min: Duration,
    /// The largest possible delay.
    pub max: Duration,
    /// Whether `max` itself can be drawn.
    pub max_inclusive: bool,
    /// The mean delay.
    pub mean: Duration,
    /// Sum of `max` up to this retry.
    pub total_max: Duration,
    /// Sum of `mean` up to this retry.
    pub total_mean: Duration,
    /// With a seed: the delay one run would draw.
    pub drawn: Option<Duration>,
}

/// Retries a schedule leaves out after its last row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum More {
    /// None: every retry is shown.
    Nothing,
    /// This many, all with the last row's range.
    Count(u64),
    /// Unlimited (`--forever`), all with the last row's range.
    Unlimited,
}

/// The rows of a schedule, and how many further retries were left out.
pub fn rows(cfg: &PolicyConfig) -> (Vec<Row>, More) {
    let p = &cfg.policy;
    let limit = cfg.max_retries;
    let cut_short = limit.is_none_or(|l| l > FULL_ROWS);
    let means = means(p, limit.unwrap_or(u64::MAX).min(FULL_ROWS));
    let mut drawn = cfg.seed.map(|s| p.delays(s));
    let mut out = Vec::new();
    let (mut total_max, mut total_mean) = (Duration::ZERO, Duration::ZERO);
    let mut n = 0u64;
    while limit.is_none_or(|l| n < l) {
        let (min, max, max_inclusive) = p.range(n);
        let settled = n > 0 && p.range(n - 1) == (min, max, max_inclusive) && max == p.cap;
        if cut_short && (settled || n >= FULL_ROWS) {
            break;
        }
        let mean = means
            .get(usize::try_from(n).unwrap_or(usize::MAX))
            .copied()
            .unwrap_or(max);
        total_max = total_max.saturating_add(max);
        total_mean = total_mean.saturating_add(mean);
        out.push(Row {
            retry: n + 1,
            bound: p.upper(n),
            min,
            max,
            max_inclusive,
            mean,
            total_max,
            total_mean,
            drawn: drawn.as_mut().map(|d| d.next(n).delay),
        });
        n += 1;
    }
    let more = match limit {
        None => More::Unlimited,
        Some(l) if l > n => More::Count(l - n),
        Some(_) => More::Nothing,
    };
    (out, more)
}

/// Mean delay of each of the first `count` retries. Closed forms for
/// none, full and equal jitter; decorrelated jitter depends on the previous
/// delay through a clamp, so its means are averaged over 20 000 seeded runs.
fn means(p: &Policy, count: u64) -> Vec<Duration> {
    match p.jitter {
        Jitter::None => (0..count).map(|n| p.upper(n)).collect(),
        Jitter::Full => (0..count).map(|n| p.upper(n) / 2).collect(),
        Jitter::Equal => (0..count).map(|n| p.upper(n) / 4 * 3).collect(),
        Jitter::Decorrelated => {
            const RUNS: u32 = 20_000;
            let count = usize::try_from(count.min(200)).unwrap_or(200);
            let mut sums = vec![0u128; count];
            for run in 0..RUNS {
                let mut d = p.delays(u64::from(run));
                for (n, sum) in (0u64..).zip(sums.iter_mut()) {
                    *sum += d.next(n).delay.as_nanos();
                }
            }
            sums.into_iter()
                .map(|s| crate::jitter::nanos(s / u128::from(RUNS)))
                .collect()
        }
    }
}

/// A duration in seconds, to the microsecond, for CSV and JSON.
fn seconds(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e6
}

fn range_text(r: &Row) -> String {
    if r.min == r.max {
        human(r.min)
    } else {
        let close = if r.max_inclusive { ']' } else { ')' };
        format!("[{}, {}{close}", human(r.min), human(r.max))
    }
}

/// The schedule as a table for people, with a last line for the retries
/// left out.
pub fn table(cfg: &PolicyConfig) -> String {
    let (rows, more) = rows(cfg);
    table_of(&rows, more, cfg.seed.is_some())
}

/// The schedule as comma-separated values with a header line.
pub fn csv(cfg: &PolicyConfig) -> String {
    csv_of(&rows(cfg).0)
}

/// The schedule as one JSON document.
pub fn json(cfg: &PolicyConfig) -> String {
    let (rows, more) = rows(cfg);
    json_of(cfg, &rows, more)
}

fn table_of(rows: &[Row], more: More, seeded: bool) -> String {
    let mut s = String::new();
    let mut table = vec![vec![
        "retry".to_owned(),
        "bound".to_owned(),
        "delay range".to_owned(),
        "mean".to_owned(),
        "worst total".to_owned(),
        "mean total".to_owned(),
    ]];
    if seeded {
        table[0].push("drawn".to_owned());
    }
    for r in rows {
        let mut line = vec![
            r.retry.to_string(),
            human(r.bound),
            range_text(r),
            human(r.mean),
            human(r.total_max),
            human(r.total_mean),
        ];
        if let Some(d) = r.drawn {
            line.push(human(d));
        }
        table.push(line);
    }
    let widths: Vec<usize> = (0..table[0].len())
        .map(|c| table.iter().map(|l| l[c].len()).max().unwrap_or(0))
        .collect();
    for line in &table {
        let cells: Vec<String> = line
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        let _ = writeln!(s, "{}", cells.join("  ").trim_end());
    }
    match more {
        More::Unlimited => {
            let _ = writeln!(s, "... and so on for every later retry (--forever)");
        }
        More::Count(n) => {
            let _ = writeln!(s, "... and {n} more retries like the last");
        }
        More::Nothing => {}
    }
    s
}

fn csv_of(rows: &[Row]) -> String {
    let mut s = String::from(
        "retry,bound_seconds,min_seconds,max_seconds,mean_seconds,total_max_seconds,total_mean_seconds,drawn_seconds\n",
    );
    for r in rows {
        let drawn = r.drawn.map(|d| seconds(d).to_string()).unwrap_or_default();
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{drawn}",
            r.retry,
            seconds(r.bound),
            seconds(r.min),
            seconds(r.max),
            seconds(r.mean),
            seconds(r.total_max),
            seconds(r.total_mean)
        );
    }
    s
}

fn json_of(cfg: &PolicyConfig, rows: &[Row], more: More) -> String {
    let p = &cfg.policy;
    let retries: Vec<_> = rows
        .iter()
        .map(|r| {
            json!({
                "retry": r.retry,
                "bound_seconds": seconds(r.bound),
                "min_seconds": seconds(r.min),
                "max_seconds": seconds(r.max),
                "max_inclusive": r.max_inclusive,
                "mean_seconds": seconds(r.mean),
                "total_max_seconds": seconds(r.total_max),
                "total_mean_seconds": seconds(r.total_mean),
                "drawn_seconds": r.drawn.map(seconds),
            })
        })
        .collect();
    let doc = json!({
        "policy": {
            "base_seconds": seconds(p.base),
            "cap_seconds": seconds(p.cap),
            "factor": p.factor,
            "bounds_seconds": (!p.bounds.is_empty())
                .then(|| p.bounds.iter().map(|&b| seconds(b)).collect::<Vec<_>>()),
            "jitter": p.jitter.name(),
            "max_retries": cfg.max_retries,
            "seed": cfg.seed,
        },
        "retries": retries,
        "more_retries": match more {
            More::Unlimited => json!("unlimited"),
            More::Count(n) => json!(n),
            More::Nothing => json!(0),
        },
    });
    format!("{doc:#}\n")
}
