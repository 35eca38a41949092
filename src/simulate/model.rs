//! One run of the experiment, as a discrete-event simulation.
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
use crate::simulate::{Setup, Strategy};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate::tests::setup;

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
}
