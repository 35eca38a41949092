//! `backoff simulate`: two models. The contention model is M. Brooker's
//! "Exponential Backoff And Jitter" experiment (AWS Architecture Blog,
//! 2015), run many times over client counts and strategies, spread over the
//! machine's cores; the model of one run is in `model`. The overload model
//! (`overload`) is a server past its capacity and the retries that keep it
//! there. The cron model (`cron`) is a fleet's cron firing one job at :00,
//! and what `--splay`, `--lock` and `--once-per` make of it. Their outputs
//! (tables, CSV, JSON, charts) are in `table` and `svg`; the cron model's
//! text outputs are beside it.

pub mod cron;
pub mod model;
pub mod overload;
pub mod svg;
pub mod table;

use std::cmp::Reverse;
use std::time::Duration;

use crate::policy::Policy;
use crate::simulate::model::{RunResult, run_once};

/// A backoff strategy of the contention experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// No delay: read again at once.
    None,
    /// e = min(cap, base · 2^n), no jitter.
    Exponential,
    /// Uniform in [0, e).
    Full,
    /// e/2 plus uniform in [0, e/2).
    Equal,
    /// min(cap, uniform in [base, 3 · previous sleep)), from base.
    Decorrelated,
    /// backoff's own policy, from --base, --cap, --factor and --jitter.
    Policy,
}

impl Strategy {
    /// The name used on the command line and in outputs.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::None => "none",
            Strategy::Exponential => "exponential",
            Strategy::Full => "full",
            Strategy::Equal => "equal",
            Strategy::Decorrelated => "decorrelated",
            Strategy::Policy => "policy",
        }
    }

    /// Brooker's five strategies, in his order.
    pub const BROOKER: [Strategy; 5] = [
        Strategy::None,
        Strategy::Exponential,
        Strategy::Full,
        Strategy::Equal,
        Strategy::Decorrelated,
    ];
}

/// The parameters of a simulation.
#[derive(Debug, Clone)]
pub struct Setup {
    /// Client counts, one cell per count and strategy.
    pub clients: Vec<u32>,
    /// Runs per cell.
    pub runs: u32,
    /// Strategies.
    pub strategies: Vec<Strategy>,
    /// Brooker's base and cap (5 ms and 2 s in the experiment); also the
    /// base and cap of the `policy` strategy.
    pub base: Duration,
    /// See `base`.
    pub cap: Duration,
    /// The `policy` strategy: backoff's own formulas.
    pub policy: Policy,
    /// Seed of everything random.
    pub seed: u64,
}

/// Mean and standard deviation over runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stat {
    /// The mean.
    pub mean: f64,
    /// The sample standard deviation (0 for one run).
    pub sd: f64,
}

impl Stat {
    fn of(xs: &[f64]) -> Stat {
        #[allow(clippy::cast_precision_loss)]
        let n = xs.len() as f64;
        if xs.is_empty() {
            return Stat { mean: 0.0, sd: 0.0 };
        }
        let mean = xs.iter().sum::<f64>() / n;
        let var = if xs.len() > 1 {
            xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        Stat {
            mean,
            sd: var.sqrt(),
        }
    }
}

/// The result of one cell: a client count and a strategy over all runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// Clients.
    pub clients: u32,
    /// Strategy.
    pub strategy: Strategy,
    /// Write calls the server handled.
    pub calls: Stat,
    /// When the last client succeeded, in milliseconds.
    pub time_ms: Stat,
}

/// A generator seed for one run, mixed from its coordinates (`SplitMix64`).
fn run_seed(seed: u64, clients: u32, strategy: Strategy, run: u32) -> u64 {
    let mut z = seed
        ^ (u64::from(clients) << 32)
        ^ ((strategy as u64) << 24)
        ^ u64::from(run).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Runs every cell, spread over the machine's cores.
pub fn simulate(setup: &Setup) -> Vec<Cell> {
    let cells: Vec<(u32, Strategy)> = setup
        .clients
        .iter()
        .flat_map(|&c| setup.strategies.iter().map(move |&s| (c, s)))
        .collect();
    // Work items are single runs, largest cells first, handed out through
    // an atomic counter so both cores stay busy to the end.
    let mut work: Vec<(usize, u32)> = (0..cells.len())
        .flat_map(|i| (0..setup.runs).map(move |r| (i, r)))
        .collect();
    work.sort_by_key(|&(i, _)| Reverse(cells[i].0));
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .min(work.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<Vec<(usize, u32, RunResult)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(&(i, run)) = work.get(k) else {
                            break;
                        };
                        let (clients, strategy) = cells[i];
                        let seed = run_seed(setup.seed, clients, strategy, run);
                        mine.push((i, run, run_once(setup, strategy, clients, seed)));
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut per_cell: Vec<Vec<(u32, RunResult)>> = vec![Vec::new(); cells.len()];
    for (i, run, r) in results.into_iter().flatten() {
        per_cell[i].push((run, r));
    }
    cells
        .iter()
        .zip(per_cell)
        .map(|(&(clients, strategy), mut runs)| {
            // Sum in run order, so the result is the same on any machine.
            runs.sort_by_key(|&(run, _)| run);
            #[allow(clippy::cast_precision_loss)]
            let writes: Vec<f64> = runs.iter().map(|(_, r)| r.calls as f64).collect();
            let times: Vec<f64> = runs.iter().map(|(_, r)| r.time_ms).collect();
            Cell {
                clients,
                strategy,
                calls: Stat::of(&writes),
                time_ms: Stat::of(&times),
            }
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::jitter::Jitter;

    pub(crate) fn setup() -> Setup {
        Setup {
            clients: vec![10],
            runs: 1,
            strategies: Strategy::BROOKER.to_vec(),
            base: Duration::from_millis(5),
            cap: Duration::from_secs(2),
            policy: Policy::formula(
                Duration::from_millis(5),
                Duration::from_secs(2),
                2.0,
                Jitter::Full,
            ),
            seed: 1,
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_cells() {
        let mut s = setup();
        s.runs = 4;
        s.clients = vec![5, 15];
        assert_eq!(simulate(&s), simulate(&s));
    }
}
