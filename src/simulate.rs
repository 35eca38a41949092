//! `backoff simulate`: M. Brooker's "Exponential Backoff And Jitter"
//! experiment (AWS Architecture Blog, 2015), as a discrete-event simulation.
//!
//! One row under optimistic concurrency. Each of N clients reads the row's
//! version, then writes it back; the write succeeds only if the version is
//! unchanged since the read (then the version increments). Every one-way
//! message takes |Normal(10 ms, 2 ms)|. A client whose write failed
//! increments its retry counter (1 on the first failure), sleeps its
//! strategy's delay, then reads again. The simulation counts the write calls
//! the server handled and the time the last client succeeded. Events are
//! ordered by time, ties by insertion order; every run has its own generator
//! seeded from the seed, the client count, the strategy and the run number,
//! so the output does not depend on how runs are spread over threads.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, Normal};

use crate::jitter::{self, Jitter};
use crate::policy::Policy;

/// A backoff strategy of the experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
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

/// What one run measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunResult {
    /// Write calls the server handled.
    pub calls: u64,
    /// When the last client succeeded, in milliseconds.
    pub time_ms: f64,
}

/// What a message in flight will do when it arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arrival {
    /// A read request reaches the server.
    Read,
    /// The server's reply to a read reaches the client, with the version.
    ReadReply(u64),
    /// A write request, made against a version, reaches the server.
    Write(u64),
    /// The server's reply to a write reaches the client.
    WriteReply(bool),
}

/// An event: when (nanoseconds), the order of insertion to break ties, who.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Event {
    at: u64,
    seq: u64,
    client: u32,
    what: Arrival,
}

impl Ord for Event {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

fn nanos(ms: f64) -> u64 {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let ns = (ms * 1e6).round().max(0.0) as u64;
    ns
}

/// The sleep before the next read, in milliseconds, after the client's
/// `retries`-th failure. `sample` is uniform in [0, 1).
pub fn sleep_ms(strategy: Strategy, setup: &Setup, client: &mut ClientState, sample: f64) -> f64 {
    let base = setup.base.as_secs_f64() * 1e3;
    let cap = setup.cap.as_secs_f64() * 1e3;
    let exponent = i32::try_from(client.retries).unwrap_or(i32::MAX);
    let window = (base * 2f64.powi(exponent)).min(cap);
    match strategy {
        Strategy::None => 0.0,
        Strategy::Exponential => window,
        Strategy::Full => sample * window,
        Strategy::Equal => window / 2.0 + sample * window / 2.0,
        Strategy::Decorrelated => {
            let high = client.prev_ms * 3.0;
            let sleep = (base + sample * (high - base)).min(cap);
            client.prev_ms = sleep;
            sleep
        }
        Strategy::Policy => policy_sleep(&setup.policy, client, sample).as_secs_f64() * 1e3,
    }
}

/// backoff's own delay for the client's next retry: its first retry has
/// index 0, whose bound is base.
fn policy_sleep(policy: &Policy, client: &mut ClientState, sample: f64) -> Duration {
    match policy.jitter {
        Jitter::Decorrelated => {
            let prev = Duration::try_from_secs_f64(client.prev_ms / 1e3).unwrap_or(policy.base);
            let sleep = jitter::decorrelated(policy.base, policy.cap, prev, sample);
            client.prev_ms = sleep.as_secs_f64() * 1e3;
            sleep
        }
        Jitter::None => policy.upper(u64::from(client.retries.saturating_sub(1))),
        Jitter::Full => jitter::full(
            policy.upper(u64::from(client.retries.saturating_sub(1))),
            sample,
        ),
        Jitter::Equal => jitter::equal(
            policy.upper(u64::from(client.retries.saturating_sub(1))),
            sample,
        ),
    }
}

/// The strategy state of one client.
#[derive(Debug, Clone, Copy)]
pub struct ClientState {
    /// Failures so far; 1 after the first.
    pub retries: u32,
    /// The previous sleep, for decorrelated jitter; starts at base.
    pub prev_ms: f64,
}

/// One run of the experiment with `clients` clients.
///
/// # Panics
///
/// Never: the network's normal distribution has valid constant parameters.
pub fn run_once(setup: &Setup, strategy: Strategy, clients: u32, seed: u64) -> RunResult {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let net = Normal::new(10.0_f64, 2.0).expect("a valid normal distribution");
    let base_ms = setup.base.as_secs_f64() * 1e3;
    let mut state = vec![
        ClientState {
            retries: 0,
            prev_ms: base_ms,
        };
        clients as usize
    ];
    let mut queue: BinaryHeap<Reverse<Event>> = BinaryHeap::with_capacity(clients as usize);
    let mut seq = 0u64;
    let mut push = |queue: &mut BinaryHeap<Reverse<Event>>, at: u64, client: u32, what| {
        seq += 1;
        queue.push(Reverse(Event {
            at,
            seq,
            client,
            what,
        }));
    };
    for c in 0..clients {
        let d = nanos(net.sample(&mut rng).abs());
        push(&mut queue, d, c, Arrival::Read);
    }
    let mut version = 0u64;
    let mut calls = 0u64;
    let mut last_success = 0u64;
    while let Some(Reverse(ev)) = queue.pop() {
        let hop = nanos(net.sample(&mut rng).abs());
        let at = ev.at.saturating_add(hop);
        match ev.what {
            Arrival::Read => push(&mut queue, at, ev.client, Arrival::ReadReply(version)),
            Arrival::ReadReply(v) => push(&mut queue, at, ev.client, Arrival::Write(v)),
            Arrival::Write(v) => {
                calls += 1;
                let ok = v == version;
                if ok {
                    version += 1;
                }
                push(&mut queue, at, ev.client, Arrival::WriteReply(ok));
            }
            Arrival::WriteReply(true) => last_success = last_success.max(ev.at),
            Arrival::WriteReply(false) => {
                let client = &mut state[ev.client as usize];
                client.retries += 1;
                let u: f64 = rng.random();
                let sleep = nanos(sleep_ms(strategy, setup, client, u));
                // The read goes out when the sleep ends: `hop` is its flight.
                push(
                    &mut queue,
                    at.saturating_add(sleep),
                    ev.client,
                    Arrival::Read,
                );
            }
        }
    }
    #[allow(clippy::cast_precision_loss)]
    let time_ms = last_success as f64 / 1e6;
    RunResult { calls, time_ms }
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
mod tests {
    use super::*;
    fn setup() -> Setup {
        Setup {
            clients: vec![10],
            runs: 1,
            strategies: Strategy::BROOKER.to_vec(),
            base: Duration::from_millis(5),
            cap: Duration::from_secs(2),
            policy: Policy {
                base: Duration::from_millis(5),
                cap: Duration::from_secs(2),
                factor: 2.0,
                jitter: Jitter::Full,
            },
            seed: 1,
        }
    }

    /// The sleep after the first failure, for a sample `u`.
    fn first(strategy: Strategy, u: f64) -> f64 {
        let s = setup();
        let mut c = ClientState {
            retries: 1,
            prev_ms: 5.0,
        };
        sleep_ms(strategy, &s, &mut c, u)
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn first_retry_windows_follow_the_experiment() {
        assert!(close(first(Strategy::None, 0.5), 0.0));
        assert!(close(first(Strategy::Exponential, 0.0), 10.0));
        assert!(close(first(Strategy::Exponential, 0.99), 10.0));
        assert!(close(first(Strategy::Full, 0.0), 0.0));
        assert!(first(Strategy::Full, 0.999_999) < 10.0);
        assert!(close(first(Strategy::Equal, 0.0), 5.0));
        assert!(first(Strategy::Equal, 0.999_999) < 10.0);
        assert!(close(first(Strategy::Decorrelated, 0.0), 5.0));
        assert!(first(Strategy::Decorrelated, 0.999_999) < 15.0);
        // backoff's own policy starts at base: [0, 5) with full jitter.
        assert!(first(Strategy::Policy, 0.999_999) < 5.0);
    }

    #[test]
    fn no_sleep_exceeds_the_cap() {
        let s = setup();
        for strategy in [
            Strategy::Exponential,
            Strategy::Full,
            Strategy::Equal,
            Strategy::Decorrelated,
            Strategy::Policy,
        ] {
            let mut c = ClientState {
                retries: 0,
                prev_ms: 5.0,
            };
            for k in 0..80 {
                c.retries += 1;
                let u = f64::from(k % 10) / 10.0 + 0.099;
                assert!(sleep_ms(strategy, &s, &mut c, u) <= 2000.0, "{strategy:?}");
            }
        }
    }

    #[test]
    fn decorrelated_state_is_per_client() {
        let s = setup();
        let mut a = ClientState {
            retries: 1,
            prev_ms: 5.0,
        };
        let mut b = a;
        let grown = sleep_ms(Strategy::Decorrelated, &s, &mut a, 0.9);
        assert!(close(a.prev_ms, grown));
        assert!(close(b.prev_ms, 5.0), "another client's state is untouched");
        assert!(sleep_ms(Strategy::Decorrelated, &s, &mut b, 0.9) < 15.0);
    }

    #[test]
    fn only_writes_are_counted() {
        let s = setup();
        // Alone, a client reads once and writes once.
        let r = run_once(&s, Strategy::None, 1, 3);
        assert_eq!(r.calls, 1);
        assert!(
            r.time_ms > 20.0 && r.time_ms < 80.0,
            "four hops of ~10ms: {}",
            r.time_ms
        );
        // With contention every client writes at least once and exactly one
        // write per client succeeds.
        let r = run_once(&s, Strategy::Full, 20, 3);
        assert!(r.calls >= 20);
    }

    #[test]
    fn the_same_seed_gives_the_same_cells() {
        let mut s = setup();
        s.runs = 4;
        s.clients = vec![5, 15];
        assert_eq!(simulate(&s), simulate(&s));
    }
}
