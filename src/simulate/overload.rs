//! The overload model of `backoff simulate --model overload`: what retries
//! do to a server that is past its capacity, with backoff's own delays,
//! retry budget, circuit breaker and adaptive throttle.
//!
//! Time runs in ticks of 10 ms. N clients each make a request every
//! 1/rate seconds, from a random phase (seeded; the same arrivals for every
//! strategy). Each request is one run of backoff: its attempts go to one
//! server, whose FIFO queue holds at most `queue` attempts; an attempt that
//! finds it full fails at once (rejected). The server takes `capacity`
//! attempts a second from the front of its queue (`brownout` of that during
//! the outage) and works on each, even on one whose client has already
//! given up on it: a client waits `timeout` for an answer, then counts the
//! attempt as failed. An attempt served in time succeeds. A failed attempt
//! is retried, at most `max_retries` times, after the strategy's delay
//! (drawn by backoff's own `Delays`), on the first tick after that delay.
//!
//! Behind the adaptive throttle (`full+throttle`, `full+budget+throttle`,
//! one window shared by all clients), every attempt, the first included,
//! is first put to the throttle: a skipped attempt sends nothing, fails at
//! once as "throttled", and is retried like any failed attempt, after its
//! delay. The throttle counts as accepted the attempts the server answered
//! in time; the model's only failures are the overload's (a full queue, an
//! answer too late), and none of them counts. Under the budget as well, a
//! retry takes a token only when the attempt before it reached the server:
//! the retry of a throttled attempt takes none.
//!
//! The work spent on attempts nobody waits for any more is what makes the
//! overload metastable: once the queue is longer than the server can work
//! through within the timeout, every attempt it serves is stale, every
//! attempt fails, and the retries keep the offered load above capacity
//! after the trigger has gone.

use std::collections::VecDeque;
use std::time::Duration;

use rand::RngExt;
use rand::SeedableRng;
use rand::rngs::Xoshiro256PlusPlus;

use crate::fleet::breaker::{Admission, Breaker, Circuit, RunEnd};
use crate::fleet::bucket::Bucket;
use crate::fleet::throttle::{Throttle, Window};
use crate::jitter::Jitter;
use crate::policy::{Delays, Policy};

/// The length of a tick, in milliseconds.
pub const TICK_MS: u64 = 10;

/// Ticks in a second.
pub const TICKS_PER_S: usize = 100;

/// Goodput is healthy when, over a second, requests that succeeded are at
/// least this share of the requests made.
pub const HEALTHY: f64 = 0.95;

/// How long goodput must stay healthy for the server to count as
/// recovered, in seconds.
pub const SUSTAINED_S: usize = 5;

/// How clients retry in the overload model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// No retry.
    None,
    /// Retries without a delay (on the next tick).
    Immediate,
    /// Exponential delays without jitter.
    Exponential,
    /// Full jitter.
    Full,
    /// Equal jitter.
    Equal,
    /// Decorrelated jitter.
    Decorrelated,
    /// Full jitter under a retry budget shared by all clients.
    FullBudget,
    /// Full jitter behind a circuit breaker shared by all clients.
    FullBreaker,
    /// Full jitter behind an adaptive throttle shared by all clients.
    FullThrottle,
    /// Full jitter under the shared retry budget, behind the shared
    /// adaptive throttle.
    FullBudgetThrottle,
}

impl Strategy {
    /// Every strategy, in the order of the outputs.
    pub const ALL: [Strategy; 10] = [
        Strategy::None,
        Strategy::Immediate,
        Strategy::Exponential,
        Strategy::Full,
        Strategy::Equal,
        Strategy::Decorrelated,
        Strategy::FullBudget,
        Strategy::FullBreaker,
        Strategy::FullThrottle,
        Strategy::FullBudgetThrottle,
    ];

    /// The name used on the command line and in outputs.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::None => "none",
            Strategy::Immediate => "immediate",
            Strategy::Exponential => "exponential",
            Strategy::Full => "full",
            Strategy::Equal => "equal",
            Strategy::Decorrelated => "decorrelated",
            Strategy::FullBudget => "full+budget",
            Strategy::FullBreaker => "full+breaker",
            Strategy::FullThrottle => "full+throttle",
            Strategy::FullBudgetThrottle => "full+budget+throttle",
        }
    }

    /// Whether its retries are under the shared budget.
    pub fn budgeted(self) -> bool {
        matches!(self, Strategy::FullBudget | Strategy::FullBudgetThrottle)
    }

    /// Whether its attempts are behind the shared throttle.
    pub fn throttled(self) -> bool {
        matches!(self, Strategy::FullThrottle | Strategy::FullBudgetThrottle)
    }

    /// The delays of its retries, as backoff's policy; `None` for no retry.
    fn policy(self, setup: &Setup) -> Option<Policy> {
        let jitter = match self {
            Strategy::None => return None,
            Strategy::Immediate => {
                return Some(Policy::formula(
                    Duration::ZERO,
                    Duration::ZERO,
                    1.0,
                    Jitter::None,
                ));
            }
            Strategy::Exponential => Jitter::None,
            Strategy::Full
            | Strategy::FullBudget
            | Strategy::FullBreaker
            | Strategy::FullThrottle
            | Strategy::FullBudgetThrottle => Jitter::Full,
            Strategy::Equal => Jitter::Equal,
            Strategy::Decorrelated => Jitter::Decorrelated,
        };
        Some(Policy::formula(setup.base, setup.cap, setup.factor, jitter))
    }
}

/// The parameters of the overload model, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Setup {
    /// The preset the values started from.
    pub scenario: &'static str,
    /// Clients.
    pub clients: u32,
    /// Requests a second each client makes.
    pub rate: f64,
    /// Attempts a second the server works through.
    pub capacity: f64,
    /// Most attempts waiting in the server's queue.
    pub queue: u32,
    /// How long a client waits for an attempt's answer.
    pub timeout: Duration,
    /// The share of the capacity left during the outage (0: none).
    pub brownout: f64,
    /// When the capacity drops.
    pub outage_start: Duration,
    /// For how long.
    pub outage_length: Duration,
    /// The end of the simulation.
    pub horizon: Duration,
    /// Retries after a request's first attempt.
    pub max_retries: u32,
    /// The delays' base.
    pub base: Duration,
    /// The delays' cap.
    pub cap: Duration,
    /// The delays' growth per retry.
    pub factor: f64,
    /// The retry budget of `full+budget`, shared by all clients.
    pub bucket: Bucket,
    /// The circuit breaker of `full+breaker`, shared by all clients.
    pub breaker: Breaker,
    /// The adaptive throttle of `full+throttle` and `full+budget+throttle`,
    /// one window shared by all clients.
    pub throttle: Throttle,
    /// Strategies, in output order.
    pub strategies: Vec<Strategy>,
    /// Seed of everything random.
    pub seed: u64,
}

impl Setup {
    /// The outage as ticks `[start, end)`, within the horizon.
    pub fn window(&self) -> (usize, usize) {
        let h = ticks(self.horizon);
        let start = ticks(self.outage_start).min(h);
        (
            start,
            ticks(self.outage_start + self.outage_length).clamp(start, h),
        )
    }
}

/// Whole ticks in `d`.
fn ticks(d: Duration) -> usize {
    usize::try_from(d.as_millis() / u128::from(TICK_MS)).unwrap_or(usize::MAX)
}

/// What one strategy's run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The strategy.
    pub strategy: Strategy,
    /// Requests made over the horizon.
    pub requests: u64,
    /// Requests that succeeded (on any attempt) within the horizon.
    pub succeeded: u64,
    /// Attempts sent over the horizon (not those the throttle skipped).
    pub attempts: u64,
    /// Requests the open circuit did not send.
    pub skipped: u64,
    /// Attempts the throttle did not send.
    pub throttled: u64,
    /// Attempts the server worked on after their client had given up.
    pub wasted: u64,
    /// Requests made during the outage.
    pub episode_requests: u64,
    /// Attempts sent during the outage.
    pub episode_attempts: u64,
    /// Seconds from the capacity's return to healthy goodput; `None`:
    /// never within the horizon.
    pub recovery_s: Option<f64>,
    /// Per tick: attempts sent.
    pub sent: Vec<u32>,
    /// Per tick: requests made.
    pub made: Vec<u32>,
    /// Per tick: requests that succeeded.
    pub good: Vec<u32>,
}

impl Outcome {
    /// Attempts sent during the outage ÷ requests made during it.
    pub fn amplification(&self) -> f64 {
        ratio(self.episode_attempts, self.episode_requests)
    }

    /// Requests that succeeded ÷ requests made, over the horizon.
    pub fn goodput(&self) -> f64 {
        ratio(self.succeeded, self.requests)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let r = if b == 0 { 0.0 } else { a as f64 / b as f64 };
    r
}

/// Requests made per tick: each client at a fixed interval from a random
/// phase.
pub fn arrivals(setup: &Setup) -> Vec<u32> {
    let horizon = ticks(setup.horizon);
    let mut per_tick = vec![0u32; horizon];
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(setup.seed);
    let period_ms = 1e3 / setup.rate;
    #[allow(clippy::cast_precision_loss)]
    let end_ms = (horizon as u64 * TICK_MS) as f64;
    for _ in 0..setup.clients {
        let mut at = rng.random::<f64>() * period_ms;
        while at < end_ms {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let tick = (at / 1e3 * 1e2) as usize;
            per_tick[tick.min(horizon - 1)] += 1;
            at += period_ms;
        }
    }
    per_tick
}

/// A request, one run of backoff.
#[derive(Debug, Clone)]
struct Request {
    /// Retries so far.
    retries: u32,
    /// The probe's claim, when the half-open circuit let it through.
    probe: Option<u64>,
    /// Its delays, from its first failure on.
    delays: Option<Delays>,
}

/// An attempt in the server's queue.
#[derive(Debug, Clone, Copy)]
struct Queued {
    /// The tick its client gives up on it.
    deadline: usize,
    /// Its request.
    request: u32,
}

/// The state of one run.
struct Sim<'a> {
    setup: &'a Setup,
    strategy: Strategy,
    policy: Option<Policy>,
    requests: Vec<Request>,
    queue: VecDeque<Queued>,
    /// Attempts at the queue's front whose client has given up.
    stale: usize,
    /// Work the server has left in this tick, in attempts.
    credit: f64,
    /// Retries due, per tick.
    timers: Vec<Vec<u32>>,
    /// The budget's level, in millionths of a token.
    level: u64,
    circuit: Circuit,
    /// The throttle's window, shared by all clients.
    shared: Window,
    /// The throttle's draws.
    draws: Xoshiro256PlusPlus,
    timeout: usize,
    window: (usize, usize),
    out: Outcome,
}

impl Sim<'_> {
    fn in_window(&self, t: usize) -> bool {
        (self.window.0..self.window.1).contains(&t)
    }

    /// One tick: retries due and new requests are sent, attempts whose
    /// client stops waiting fail, then the server works.
    fn tick(&mut self, t: usize, new: u32) {
        for r in std::mem::take(&mut self.timers[t]) {
            self.send(t, r);
        }
        for _ in 0..new {
            self.make(t);
        }
        self.expire(t);
        self.serve(t);
    }

    fn make(&mut self, t: usize) {
        let id = u32::try_from(self.requests.len()).unwrap_or(u32::MAX);
        self.requests.push(Request {
            retries: 0,
            probe: None,
            delays: None,
        });
        self.out.requests += 1;
        self.out.made[t] += 1;
        if self.in_window(t) {
            self.out.episode_requests += 1;
        }
        if self.strategy == Strategy::FullBreaker {
            let (admission, circuit) = self.setup.breaker.admit(self.circuit, ms(t));
            self.circuit = circuit;
            match admission {
                Admission::Run => {}
                Admission::Probe { until_ms } => self.requests[id as usize].probe = Some(until_ms),
                Admission::Skip { .. } => {
                    self.out.skipped += 1;
                    return;
                }
            }
        }
        self.send(t, id);
    }

    /// An attempt of request `r`: put to the throttle, if any, then sent.
    fn send(&mut self, t: usize, r: u32) {
        if self.strategy.throttled() {
            let draw = self.draws.random::<f64>();
            let (decision, window) = self.setup.throttle.admit(self.shared, ms(t), draw);
            self.shared = window;
            if !decision.send {
                self.out.throttled += 1;
                return self.fail(t, r, false);
            }
        }
        self.out.attempts += 1;
        self.out.sent[t] += 1;
        if self.in_window(t) {
            self.out.episode_attempts += 1;
        }
        if self.queue.len() < self.setup.queue as usize {
            self.queue.push_back(Queued {
                deadline: t + self.timeout,
                request: r,
            });
        } else {
            self.fail(t, r, true);
        }
    }

    /// The attempts whose client stops waiting now fail; they stay in the
    /// queue, and the server will still work on them.
    fn expire(&mut self, t: usize) {
        while let Some(&q) = self.queue.get(self.stale) {
            if q.deadline > t {
                break;
            }
            self.stale += 1;
            self.fail(t, q.request, true);
        }
    }

    fn serve(&mut self, t: usize) {
        let capacity = if self.in_window(t) {
            self.setup.capacity * self.setup.brownout
        } else {
            self.setup.capacity
        };
        #[allow(clippy::cast_precision_loss)]
        let tick_s = TICK_MS as f64 / 1e3;
        self.credit += capacity * tick_s;
        while self.credit >= 1.0 {
            let Some(q) = self.queue.pop_front() else {
                // An idle server saves no work for later.
                self.credit = self.credit.fract();
                break;
            };
            self.credit -= 1.0;
            if self.stale > 0 {
                self.stale -= 1;
                self.out.wasted += 1;
            } else {
                self.succeed(t, q.request);
            }
        }
    }

    /// An attempt of request `r` failed; `reached`: it reached the server
    /// (it was not throttled). Its retry, if any, is due after its delay.
    fn fail(&mut self, t: usize, r: u32, reached: bool) {
        let req = &self.requests[r as usize];
        let retry = self.policy.is_some()
            && req.probe.is_none()
            && req.retries < self.setup.max_retries
            && (!self.strategy.budgeted() || !reached || self.take_token());
        if !retry {
            return self.end(t, r, RunEnd::GaveUp);
        }
        let seed = self.setup.seed ^ ((self.strategy as u64) << 56) ^ u64::from(r);
        let (Some(policy), req) = (&self.policy, &mut self.requests[r as usize]) else {
            return;
        };
        let n = u64::from(req.retries);
        req.retries += 1;
        let delay = req
            .delays
            .get_or_insert_with(|| policy.delays(seed))
            .next(n)
            .delay;
        let wait = usize::try_from(delay.as_millis().div_ceil(u128::from(TICK_MS)))
            .unwrap_or(usize::MAX)
            .max(1);
        if let Some(timer) = self.timers.get_mut(t.saturating_add(wait)) {
            timer.push(r);
        }
    }

    /// Takes a token of the shared budget for a retry, if there is one.
    fn take_token(&mut self) -> bool {
        match self.setup.bucket.take(self.level) {
            Some(level) => {
                self.level = level;
                true
            }
            None => false,
        }
    }

    fn succeed(&mut self, t: usize, r: u32) {
        self.out.succeeded += 1;
        self.out.good[t] += 1;
        if self.strategy.budgeted() {
            self.level = self.setup.bucket.deposit(self.level);
        }
        if self.strategy.throttled() {
            self.shared = self.setup.throttle.accept(self.shared, ms(t));
        }
        self.end(t, r, RunEnd::Succeeded);
    }

    /// The run of request `r` ends: the breaker counts it.
    fn end(&mut self, t: usize, r: u32, end: RunEnd) {
        let req = &mut self.requests[r as usize];
        req.delays = None;
        if self.strategy == Strategy::FullBreaker {
            self.circuit = self
                .setup
                .breaker
                .record(self.circuit, ms(t), end, req.probe);
        }
    }
}

/// The simulated clock of tick `t`, in milliseconds.
fn ms(t: usize) -> u64 {
    u64::try_from(t).unwrap_or(u64::MAX) * TICK_MS
}

/// One run of the model with `strategy`, over the requests `arrivals`
/// makes per tick.
pub fn run(setup: &Setup, strategy: Strategy, arrivals: &[u32]) -> Outcome {
    let horizon = arrivals.len();
    let mut sim = Sim {
        setup,
        strategy,
        policy: strategy.policy(setup),
        requests: Vec::with_capacity(arrivals.iter().map(|&n| n as usize).sum()),
        queue: VecDeque::with_capacity(setup.queue as usize),
        stale: 0,
        credit: 0.0,
        timers: vec![Vec::new(); horizon],
        level: setup.bucket.burst,
        circuit: Circuit::default(),
        shared: Window::default(),
        draws: Xoshiro256PlusPlus::seed_from_u64(
            setup.seed ^ ((strategy as u64) << 56) ^ 0x7468_726f_7474_6c65,
        ),
        timeout: ticks(setup.timeout).max(1),
        window: setup.window(),
        out: Outcome {
            strategy,
            requests: 0,
            succeeded: 0,
            attempts: 0,
            skipped: 0,
            throttled: 0,
            wasted: 0,
            episode_requests: 0,
            episode_attempts: 0,
            recovery_s: None,
            sent: vec![0; horizon],
            made: vec![0; horizon],
            good: vec![0; horizon],
        },
    };
    for (t, &new) in arrivals.iter().enumerate() {
        sim.tick(t, new);
    }
    let mut out = sim.out;
    out.recovery_s = recovery(&out.made, &out.good, setup.window().1);
    out
}

/// Seconds from tick `from` to the start of the first second-long window
/// of healthy goodput that every window starting in the next
/// `SUSTAINED_S` seconds repeats; `None` if there is none within the
/// horizon.
pub fn recovery(made: &[u32], good: &[u32], from: usize) -> Option<f64> {
    let sum = |v: &[u32]| {
        let mut acc = vec![0u64; v.len() + 1];
        for (i, &x) in v.iter().enumerate() {
            acc[i + 1] = acc[i] + u64::from(x);
        }
        acc
    };
    let (made, good) = (sum(made), sum(good));
    let w = TICKS_PER_S;
    let sustain = SUSTAINED_S * TICKS_PER_S;
    let last = made.len().checked_sub(1 + w)?;
    let mut run = 0;
    for t in from..=last {
        #[allow(clippy::cast_precision_loss)]
        let healthy = (good[t + w] - good[t]) as f64 >= HEALTHY * (made[t + w] - made[t]) as f64;
        run = if healthy { run + 1 } else { 0 };
        if run > sustain {
            #[allow(clippy::cast_precision_loss)]
            return Some((t - sustain - from) as f64 / TICKS_PER_S as f64);
        }
    }
    None
}

/// Runs every strategy of the setup, spread over the machine's cores (one
/// run at a time on each), in output order.
pub fn simulate(setup: &Setup) -> Vec<Outcome> {
    let arrivals = &arrivals(setup);
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .min(setup.strategies.len().max(1));
    let next = &std::sync::atomic::AtomicUsize::new(0);
    let mut done: Vec<(usize, Outcome)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(move || {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(&s) = setup.strategies.get(i) else {
                            break mine;
                        };
                        mine.push((i, run(setup, s, arrivals)));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    done.sort_by_key(|&(i, _)| i);
    done.into_iter().map(|(_, o)| o).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::fleet::bucket::UNIT;

    /// A small fleet: 100 clients at 1/s, capacity 200/s, a queue of 100,
    /// a full outage from 5s for 5s, a horizon of 30s.
    pub(crate) fn small() -> Setup {
        Setup {
            scenario: "test",
            clients: 100,
            rate: 1.0,
            capacity: 200.0,
            queue: 100,
            timeout: Duration::from_secs(1),
            brownout: 0.0,
            outage_start: Duration::from_secs(5),
            outage_length: Duration::from_secs(5),
            horizon: Duration::from_secs(30),
            max_retries: 3,
            base: Duration::from_millis(100),
            cap: Duration::from_secs(30),
            factor: 2.0,
            bucket: Bucket {
                burst: 10 * UNIT,
                ratio: UNIT / 10,
            },
            breaker: Breaker {
                failures: 5,
                cooldown_ms: 2000,
            },
            throttle: Throttle {
                window_ms: 120_000,
                k_milli: 2000,
            },
            strategies: Strategy::ALL.to_vec(),
            seed: 7,
        }
    }

    fn outcome(setup: &Setup, s: Strategy) -> Outcome {
        run(setup, s, &arrivals(setup))
    }

    #[test]
    fn every_client_makes_one_request_per_interval() {
        let s = small();
        let a = arrivals(&s);
        assert_eq!(a.len(), 3000);
        assert_eq!(a.iter().sum::<u32>(), 100 * 30);
        for second in a.chunks(TICKS_PER_S) {
            assert_eq!(second.iter().sum::<u32>(), 100);
        }
    }

    #[test]
    fn without_an_outage_every_request_succeeds_at_its_first_attempt() {
        let mut s = small();
        s.outage_length = Duration::ZERO;
        let mut start = s.clone();
        start.horizon = Duration::from_secs(1);
        for strategy in Strategy::ALL {
            let o = outcome(&s, strategy);
            assert_eq!(o.succeeded, o.requests, "{strategy:?}");
            assert_eq!(o.attempts, o.requests, "{strategy:?}");
            assert_eq!((o.wasted, o.skipped), (0, 0));
            assert_eq!(o.recovery_s, Some(0.0));
            // A throttle skips only while its window is new: the first
            // attempts find requests counted and no accept yet. Their
            // retries succeed.
            assert_eq!(o.throttled, outcome(&start, strategy).throttled);
            assert!(o.throttled < 10, "{o:?}");
        }
    }

    #[test]
    fn a_full_outage_multiplies_attempts_by_the_retries_unless_a_budget_limits_them() {
        let s = small();
        let full = outcome(&s, Strategy::Full);
        assert_eq!(full.episode_requests, 500);
        assert!((3.5..=4.0).contains(&full.amplification()), "{full:?}");
        assert!(outcome(&s, Strategy::Immediate).amplification() > 3.9);
        assert!((outcome(&s, Strategy::None).amplification() - 1.0).abs() < 1e-9);
        let budget = outcome(&s, Strategy::FullBudget);
        // Retries are at most the burst plus a tenth of the successes.
        assert!(
            budget.amplification() <= 1.0 + 0.1 + 10.0 / 500.0,
            "{budget:?}"
        );
        // Over the whole horizon too: the bucket's arithmetic, exactly.
        let retries = budget.attempts - budget.requests;
        assert!(retries * 10 <= 100 + budget.succeeded, "{budget:?}");
    }

    #[test]
    fn the_open_breaker_skips_requests_and_sends_nothing_for_them() {
        let s = small();
        let o = outcome(&s, Strategy::FullBreaker);
        assert!(o.skipped > 0);
        // A request is sent or skipped, and a skipped one never succeeds.
        assert!(o.attempts + o.skipped >= o.requests);
        assert!(o.succeeded + o.skipped <= o.requests);
        assert!(o.amplification() < outcome(&s, Strategy::Full).amplification() / 2.0);
        assert!(o.recovery_s.is_some());
    }

    #[test]
    fn a_throttled_attempt_sends_nothing_and_is_retried_without_a_token() {
        let s = small();
        let full = outcome(&s, Strategy::Full);
        let throttle = outcome(&s, Strategy::FullThrottle);
        assert!(throttle.throttled > 0);
        // Every attempt wanted is sent or throttled; at most 1 + 3 a request.
        let wanted = throttle.attempts + throttle.throttled;
        assert!(wanted <= 4 * throttle.requests, "{throttle:?}");
        assert!(
            throttle.amplification() < full.amplification(),
            "{throttle:?}"
        );
        // With an empty budget, only the retries of throttled attempts are
        // made: a retry takes a token only after an attempt that was sent.
        let mut empty = small();
        empty.bucket = Bucket { burst: 0, ratio: 0 };
        let budget = outcome(&empty, Strategy::FullBudget);
        assert_eq!(budget.attempts, budget.requests);
        let both = outcome(&empty, Strategy::FullBudgetThrottle);
        let retries = both.attempts + both.throttled - both.requests;
        assert!(retries > 0 && retries <= both.throttled, "{both:?}");
    }

    #[test]
    fn a_queue_deeper_than_the_timeout_keeps_retrying_clients_overloaded() {
        let mut s = small();
        // Four seconds of work in the queue against a timeout of one.
        s.queue = 800;
        for strategy in [
            Strategy::Immediate,
            Strategy::Exponential,
            Strategy::Full,
            Strategy::Equal,
            Strategy::Decorrelated,
        ] {
            let o = outcome(&s, strategy);
            assert_eq!(o.recovery_s, None, "{strategy:?}");
            assert!(o.wasted > 0);
        }
        for strategy in [Strategy::None, Strategy::FullBudget, Strategy::FullBreaker] {
            let o = outcome(&s, strategy);
            assert!(
                o.recovery_s.is_some_and(|r| r < 10.0),
                "{strategy:?}: {o:?}"
            );
        }
    }

    #[test]
    fn recovery_needs_healthy_goodput_for_the_whole_sustained_window() {
        let n = 20 * TICKS_PER_S;
        let made = vec![10u32; n];
        let mut good = vec![10u32; n];
        assert_eq!(recovery(&made, &good, 0), Some(0.0));
        // Nothing succeeds for the first 3 s: healthy from 2.95 s on (a
        // second with 95% of its requests good).
        good[..3 * TICKS_PER_S].fill(0);
        assert_eq!(recovery(&made, &good, 0), Some(2.95));
        // A bad second at 6 s: the run from 2.95 s is too short, the next
        // starts at 6.95 s and lasts to the end.
        good[6 * TICKS_PER_S..7 * TICKS_PER_S].fill(0);
        assert_eq!(recovery(&made, &good, 0), Some(6.95));
        // And with no bad second but too little time left: never.
        assert_eq!(recovery(&made, &good, 15 * TICKS_PER_S), None);
    }

    #[test]
    fn the_same_seed_gives_the_same_outcomes() {
        let s = small();
        assert_eq!(simulate(&s), simulate(&s));
        let mut other = small();
        other.seed = 8;
        assert_ne!(arrivals(&s), arrivals(&other));
    }
}
